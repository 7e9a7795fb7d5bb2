/*
 * model/safetensors.c - safetensors files (see safetensors.h): the
 * header's validation, the mapping, sets of shards, and the writer.
 */
#define _POSIX_C_SOURCE 200809L
#include "model/safetensors.h"
#include "model/model_map.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

struct safetensors {
	void *map;                    /* NULL for safetensors_parse */
	size_t map_len;
	struct st_tensor *t;          /* n, by data offset */
	size_t n;
	const struct st_tensor **by_name;
	json_t *meta;                 /* __metadata__ or NULL */
};

struct safetensors_set {
	struct safetensors **files;
	size_t n_files;
	const struct st_tensor **by_name;
	size_t n;
};

/* ---- element types ------------------------------------------------- */

/* Bytes of one element, 0 for a type a checkpoint may not use here. */
static uint32_t
st_elem_size(enum model_dtype d)
{
	switch (d) {
	case MODEL_DTYPE_F32:
		return 4;
	case MODEL_DTYPE_F16:
	case MODEL_DTYPE_BF16:
		return 2;
	default:
		return 0;
	}
}

static const char *
st_dtype_string(enum model_dtype d)
{
	switch (d) {
	case MODEL_DTYPE_F32:
		return "F32";
	case MODEL_DTYPE_F16:
		return "F16";
	case MODEL_DTYPE_BF16:
		return "BF16";
	default:
		return NULL;
	}
}

static int
st_dtype_parse(const char *s, enum model_dtype *d)
{
	if (strcmp(s, "F32") == 0)
		*d = MODEL_DTYPE_F32;
	else if (strcmp(s, "F16") == 0)
		*d = MODEL_DTYPE_F16;
	else if (strcmp(s, "BF16") == 0)
		*d = MODEL_DTYPE_BF16;
	else
		return -1;
	return 0;
}

uint64_t
st_tensor_bytes(enum model_dtype dtype, uint32_t n_dims,
    const uint64_t *shape)
{
	uint64_t n = st_elem_size(dtype);
	uint32_t i;

	if (n == 0 || n_dims > ST_MAX_DIMS)
		return 0;
	for (i = 0; i < n_dims; i++) {
		if (shape[i] != 0 && n > UINT64_MAX / shape[i])
			return 0;
		n *= shape[i];
	}
	return n;
}

/* Round to nearest even; see the header. */
uint16_t
st_f32_to_f16(float f)
{
	uint32_t x, sign, exp, man, h, rem, half, shift;
	int32_t e;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000u;
	exp = (x >> 23) & 0xffu;
	man = x & 0x7fffffu;
	if (exp == 0xffu)      /* inf stays inf; NaN keeps its top bits */
		return (uint16_t)(sign | 0x7c00u |
		    (man != 0 ? 0x200u | (man >> 13) : 0));
	e = (int32_t)exp - 127 + 15;
	if (e >= 0x1f)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {
		/* subnormal: value = M 2^(exp-150), units of 2^-24, so
		 * h = M >> (14 - e); below 2^-25 it rounds to zero */
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		shift = (uint32_t)(14 - e);
		h = man >> shift;
		rem = man & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1u)))
			h++;        /* may carry into the smallest normal */
		return (uint16_t)(sign | h);
	}
	h = ((uint32_t)e << 10) | (man >> 13);
	rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
		h++;                /* a carry may reach infinity: right */
	return (uint16_t)(sign | h);
}

float
st_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, x;
	float f;

	if (exp == 0x1fu) {
		x = sign | 0x7f800000u | (man << 13);
	} else if (exp != 0) {
		x = sign | ((exp + 112u) << 23) | (man << 13);
	} else if (man == 0) {
		x = sign;
	} else {
		/* subnormal: normalize */
		exp = 113;
		while ((man & 0x400u) == 0) {
			man <<= 1;
			exp--;
		}
		x = sign | (exp << 23) | ((man & 0x3ffu) << 13);
	}
	memcpy(&f, &x, sizeof(f));
	return f;
}

uint16_t
st_f32_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof(x));
	if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0)
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}

float
st_bf16_to_f32(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;

	memcpy(&f, &x, sizeof(f));
	return f;
}

void
st_to_f32(enum model_dtype dtype, const void *src, uint64_t n, float *out)
{
	const unsigned char *p = src;
	uint64_t i;

	for (i = 0; i < n; i++) {
		if (dtype == MODEL_DTYPE_F32) {
			uint32_t x = (uint32_t)p[4 * i] |
			    (uint32_t)p[4 * i + 1] << 8 |
			    (uint32_t)p[4 * i + 2] << 16 |
			    (uint32_t)p[4 * i + 3] << 24;

			memcpy(&out[i], &x, sizeof(x));
		} else {
			uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);

			out[i] = dtype == MODEL_DTYPE_F16 ? st_f16_to_f32(h)
			    : st_bf16_to_f32(h);
		}
	}
}

/* ---- reading ------------------------------------------------------- */

static int
st_cmp_name(const void *a, const void *b)
{
	const struct st_tensor *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

static int
st_cmp_offset(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;
	uint64_t xb = x->offset, yb = y->offset;

	if (xb != yb)
		return xb < yb ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return 0;
}

static void
st_shape_string(char *s, size_t len, const struct st_tensor *t)
{
	size_t at = 0;
	uint32_t i;

	at += (size_t)snprintf(s, len, "[");
	for (i = 0; i < t->n_dims && at < len; i++)
		at += (size_t)snprintf(s + at, len - at, "%s%" PRIu64,
		    i > 0 ? ", " : "", t->shape[i]);
	if (at < len)
		snprintf(s + at, len - at, "]");
}

/* A JSON integer in [0, 2^63), or -1. */
static int
st_json_u64(const json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* Fills t from the header's entry `v` for `name`; the offsets are
 * relative to the buffer (made absolute by the caller). */
static enum ts_err
st_parse_entry(struct st_tensor *t, const char *name, json_t *v,
    uint64_t buf_len, char *err, size_t errlen)
{
	json_t *dt = json_object_get(v, "dtype");
	json_t *shape = json_object_get(v, "shape");
	json_t *off = json_object_get(v, "data_offsets");
	uint64_t begin, end;
	char s[200];
	size_t i;

	if (!json_is_object(v)) {
		snprintf(err, errlen, "tensor '%.200s': not a JSON object",
		    name);
		return TS_EFORMAT;
	}
	if (!json_is_string(dt) || !json_is_array(shape) ||
	    !json_is_array(off)) {
		snprintf(err, errlen, "tensor '%.200s': needs a string "
		    "dtype, an array shape and an array data_offsets", name);
		return TS_EFORMAT;
	}
	if (st_dtype_parse(json_string_value(dt), &t->dtype) != 0) {
		snprintf(err, errlen, "tensor '%.200s': dtype %.40s is not "
		    "supported (F32, F16 and BF16 only)", name,
		    json_string_value(dt));
		return TS_EFORMAT;
	}
	if (json_array_size(shape) > ST_MAX_DIMS) {
		snprintf(err, errlen, "tensor '%.200s': %zu dimensions, over "
		    "the limit %u", name, json_array_size(shape),
		    ST_MAX_DIMS);
		return TS_ELIMIT;
	}
	t->n_dims = (uint32_t)json_array_size(shape);
	t->n_elems = 1;
	for (i = 0; i < t->n_dims; i++) {
		if (st_json_u64(json_array_get(shape, i), &t->shape[i]) !=
		    0) {
			snprintf(err, errlen, "tensor '%.200s': shape[%zu] is "
			    "not a non-negative integer", name, i);
			return TS_EFORMAT;
		}
	}
	t->bytes = st_tensor_bytes(t->dtype, t->n_dims, t->shape);
	if (t->bytes == 0) {
		for (i = 0; i < t->n_dims && t->shape[i] != 0; i++)
			;
		if (i == t->n_dims) {
			snprintf(err, errlen, "tensor '%.200s': shape too "
			    "large", name);
			return TS_ELIMIT;
		}
	}
	t->n_elems = t->bytes / st_elem_size(t->dtype);
	if (json_array_size(off) != 2 ||
	    st_json_u64(json_array_get(off, 0), &begin) != 0 ||
	    st_json_u64(json_array_get(off, 1), &end) != 0 || end < begin) {
		snprintf(err, errlen, "tensor '%.200s': data_offsets must be "
		    "[BEGIN, END] with 0 <= BEGIN <= END", name);
		return TS_EFORMAT;
	}
	st_shape_string(s, sizeof(s), t);
	if (end - begin != t->bytes) {
		snprintf(err, errlen, "tensor '%.200s': shape %s of %s is "
		    "%" PRIu64 " bytes but data_offsets [%" PRIu64 ", %"
		    PRIu64 "] span %" PRIu64, name, s,
		    st_dtype_string(t->dtype), t->bytes, begin, end,
		    end - begin);
		return TS_EFORMAT;
	}
	if (end > buf_len) {
		snprintf(err, errlen, "tensor '%.200s': data_offsets [%"
		    PRIu64 ", %" PRIu64 "] are past the end of the %" PRIu64
		    "-byte buffer", name, begin, end, buf_len);
		return TS_EFORMAT;
	}
	t->offset = begin;
	return TS_OK;
}

/* __metadata__: an object of strings. */
static enum ts_err
st_parse_meta(json_t *v, char *err, size_t errlen)
{
	const char *k;
	json_t *x;

	if (!json_is_object(v)) {
		snprintf(err, errlen, "__metadata__ is not a JSON object");
		return TS_EFORMAT;
	}
	json_object_foreach(v, k, x) {
		if (!json_is_string(x)) {
			snprintf(err, errlen, "__metadata__ '%.200s' is not "
			    "a string", k);
			return TS_EFORMAT;
		}
	}
	return TS_OK;
}

/*
 * Checks that the tensors, sorted by offset, tile the buffer [0, len)
 * exactly: no overlap, no hole, nothing after the last (README "Format":
 * "entirely indexed, and cannot contain holes"; tensor.rs validate()).
 */
static enum ts_err
st_check_tiling(const struct st_tensor *t, size_t n, uint64_t len,
    char *err, size_t errlen)
{
	uint64_t pos = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (t[i].offset < pos) {
			snprintf(err, errlen, "tensors '%.200s' and '%.200s' "
			    "overlap", t[i - 1].name, t[i].name);
			return TS_EFORMAT;
		}
		if (t[i].offset > pos) {
			snprintf(err, errlen, "bytes [%" PRIu64 ", %" PRIu64
			    ") of the buffer belong to no tensor (a hole "
			    "before '%.200s')", pos, t[i].offset, t[i].name);
			return TS_EFORMAT;
		}
		pos = t[i].offset + t[i].bytes;
	}
	if (pos != len) {
		snprintf(err, errlen, "bytes [%" PRIu64 ", %" PRIu64 ") at "
		    "the end of the buffer belong to no tensor", pos, len);
		return TS_EFORMAT;
	}
	return TS_OK;
}

void
safetensors_close(struct safetensors *st)
{
	size_t i;

	if (st == NULL)
		return;
	for (i = 0; i < st->n; i++)
		free((char *)st->t[i].name);
	free(st->t);
	free(st->by_name);
	json_decref(st->meta);
	model_unmap_file(st->map, st->map_len);
	free(st);
}

enum ts_err
safetensors_parse(struct safetensors **out, const void *image, size_t len,
    char *err, size_t errlen)
{
	const unsigned char *buf = image;
	struct safetensors *st = NULL;
	json_t *root = NULL, *v;
	json_error_t jerr;
	uint64_t hlen = 0, blen;
	enum ts_err rc = TS_EFORMAT;
	const char *key;
	size_t i, n;

	*out = NULL;
	if (len < 8) {
		snprintf(err, errlen, "file is %zu bytes, shorter than the "
		    "8-byte header size", len);
		return TS_EFORMAT;
	}
	for (i = 0; i < 8; i++)
		hlen |= (uint64_t)buf[i] << (8 * i);
	if (hlen > ST_MAX_HEADER_BYTES) {
		snprintf(err, errlen, "header size %" PRIu64 " is over the "
		    "limit %u", hlen, ST_MAX_HEADER_BYTES);
		return TS_ELIMIT;
	}
	if (hlen > len - 8) {
		snprintf(err, errlen, "header size %" PRIu64 " is past the "
		    "end of the %zu-byte file", hlen, len);
		return TS_EFORMAT;
	}
	if (hlen == 0 || buf[8] != '{') {
		snprintf(err, errlen, "header does not begin with '{'");
		return TS_EFORMAT;
	}
	blen = len - 8 - hlen;
	root = json_loadb((const char *)buf + 8, (size_t)hlen,
	    JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "header is not valid JSON: %s (line %d "
		    "column %d)", jerr.text, jerr.line, jerr.column);
		return TS_EFORMAT;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "header is not a JSON object");
		goto out;
	}
	n = json_object_size(root);
	if (json_object_get(root, "__metadata__") != NULL)
		n--;
	if (n > ST_MAX_TENSORS) {
		snprintf(err, errlen, "%zu tensors, over the limit %u", n,
		    ST_MAX_TENSORS);
		rc = TS_ELIMIT;
		goto out;
	}
	st = xcalloc(1, sizeof(*st));
	st->t = xcalloc(n > 0 ? n : 1, sizeof(*st->t));
	json_object_foreach(root, key, v) {
		struct st_tensor *t;

		if (strcmp(key, "__metadata__") == 0) {
			rc = st_parse_meta(v, err, errlen);
			if (rc != TS_OK)
				goto out;
			st->meta = json_incref(v);
			continue;
		}
		if (strlen(key) > ST_MAX_NAME) {
			snprintf(err, errlen, "a tensor name of %zu bytes, "
			    "over the limit %u", strlen(key), ST_MAX_NAME);
			rc = TS_ELIMIT;
			goto out;
		}
		t = &st->t[st->n];
		rc = st_parse_entry(t, key, v, blen, err, errlen);
		if (rc != TS_OK)
			goto out;
		t->name = xstrndup(key, strlen(key));
		st->n++;
	}
	qsort(st->t, st->n, sizeof(*st->t), st_cmp_offset);
	rc = st_check_tiling(st->t, st->n, blen, err, errlen);
	if (rc != TS_OK)
		goto out;
	st->by_name = xcalloc(st->n > 0 ? st->n : 1, sizeof(*st->by_name));
	for (i = 0; i < st->n; i++) {
		st->t[i].offset += 8 + hlen;
		st->t[i].data = buf + st->t[i].offset;
		st->by_name[i] = &st->t[i];
	}
	qsort(st->by_name, st->n, sizeof(*st->by_name), st_cmp_name);
	for (i = 1; i < st->n; i++) {
		/* JSON_REJECT_DUPLICATES already refused these */
		if (strcmp(st->by_name[i - 1]->name, st->by_name[i]->name) ==
		    0) {
			snprintf(err, errlen, "tensor '%.200s' appears twice",
			    st->by_name[i]->name);
			rc = TS_EFORMAT;
			goto out;
		}
	}
	*out = st;
	st = NULL;
	rc = TS_OK;
out:
	json_decref(root);
	safetensors_close(st);
	return rc;
}

enum ts_err
safetensors_open(struct safetensors **out, const char *path, char *err,
    size_t errlen)
{
	struct safetensors *st = NULL;
	void *map;
	size_t len;
	char why[512];
	enum ts_err rc;

	*out = NULL;
	rc = model_map_file(path, &map, &len, err, errlen);
	if (rc != TS_OK)
		return rc;
	rc = safetensors_parse(&st, map != NULL ? map : "", len, why,
	    sizeof(why));
	if (rc != TS_OK) {
		snprintf(err, errlen, "%s: %s", path, why);
		model_unmap_file(map, len);
		return rc;
	}
	st->map = map;
	st->map_len = len;
	*out = st;
	return TS_OK;
}

static const struct st_tensor *
st_bsearch(const struct st_tensor *const *v, size_t n, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, v[mid]->name);

		if (c == 0)
			return v[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const struct st_tensor *
safetensors_find(const struct safetensors *st, const char *name)
{
	return st_bsearch(st->by_name, st->n, name);
}

size_t
safetensors_count(const struct safetensors *st)
{
	return st->n;
}

const struct st_tensor *
safetensors_at(const struct safetensors *st, size_t i)
{
	return i < st->n ? &st->t[i] : NULL;
}

const char *
safetensors_metadata(const struct safetensors *st, const char *key)
{
	return st->meta != NULL ?
	    json_string_value(json_object_get(st->meta, key)) : NULL;
}

/* ---- reading small files ------------------------------------------- */

enum ts_err
st_read_file(const char *path, size_t max, char **buf, size_t *len,
    char *err, size_t errlen)
{
	struct stat sb;
	size_t got = 0;
	char *b;
	int fd, saved;

	*buf = NULL;
	*len = 0;
	errno = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		snprintf(err, errlen, "%s: cannot open: %s", path,
		    strerror(saved));
		errno = saved;
		return TS_ESYS;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		saved = errno != 0 ? errno : EINVAL;
		snprintf(err, errlen, "%s: not a readable regular file",
		    path);
		close(fd);
		errno = saved;
		return TS_ESYS;
	}
	if ((uint64_t)sb.st_size > max) {
		snprintf(err, errlen, "%s: %lld bytes, over the limit %zu",
		    path, (long long)sb.st_size, max);
		close(fd);
		return TS_ELIMIT;
	}
	b = xmalloc((size_t)sb.st_size + 1);
	while (got < (size_t)sb.st_size) {
		ssize_t r = read(fd, b + got, (size_t)sb.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			saved = r < 0 ? errno : EIO;
			snprintf(err, errlen, "%s: cannot read: %s", path,
			    r < 0 ? strerror(saved) : "file shrank");
			free(b);
			close(fd);
			errno = saved;
			return TS_ESYS;
		}
		got += (size_t)r;
	}
	close(fd);
	b[got] = '\0';
	*buf = b;
	*len = got;
	return TS_OK;
}

/* ---- sets of shards ------------------------------------------------ */

void
safetensors_set_close(struct safetensors_set *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n_files; i++)
		safetensors_close(s->files[i]);
	free(s->files);
	free(s->by_name);
	free(s);
}

enum ts_err
safetensors_set_open_file(struct safetensors_set **out, const char *path,
    char *err, size_t errlen)
{
	struct safetensors *st;
	struct safetensors_set *s;
	enum ts_err rc;
	size_t i;

	*out = NULL;
	rc = safetensors_open(&st, path, err, errlen);
	if (rc != TS_OK)
		return rc;
	s = xcalloc(1, sizeof(*s));
	s->files = xmalloc(sizeof(*s->files));
	s->files[0] = st;
	s->n_files = 1;
	s->n = st->n;
	s->by_name = xcalloc(st->n > 0 ? st->n : 1, sizeof(*s->by_name));
	for (i = 0; i < st->n; i++)
		s->by_name[i] = st->by_name[i];
	*out = s;
	return TS_OK;
}

/* A shard's name must be a file of the folder itself. */
static int
st_plain_name(const char *s, size_t len)
{
	return len > 0 && len <= 255 && strlen(s) == len && s[0] != '.' &&
	    strchr(s, '/') == NULL && strchr(s, '\\') == NULL;
}

static int
st_cmp_str(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;

	return strcmp(*x, *y);
}

struct st_entry {
	const char *tensor;
	const char *file;
};

/* Opens DIR/index (already read, text) and the shards it names. */
static enum ts_err
st_set_open_index(struct safetensors_set **out, const char *dir,
    const char *ipath, const char *text, size_t tlen, char *err,
    size_t errlen)
{
	struct safetensors_set *s = NULL;
	struct st_entry *e = NULL;
	const char **names = NULL;
	json_t *root, *map, *v;
	json_error_t jerr;
	enum ts_err rc = TS_EFORMAT;
	size_t i, n = 0, n_names = 0;
	const char *key;

	*out = NULL;
	root = json_loadb(text, tlen, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "%s: not valid JSON: %s (line %d "
		    "column %d)", ipath, jerr.text, jerr.line, jerr.column);
		return TS_EFORMAT;
	}
	map = json_object_get(root, "weight_map");
	if (!json_is_object(root) || !json_is_object(map)) {
		snprintf(err, errlen, "%s: no \"weight_map\" object", ipath);
		goto out;
	}
	if (json_object_size(map) > ST_MAX_TENSORS) {
		snprintf(err, errlen, "%s: %zu tensors, over the limit %u",
		    ipath, json_object_size(map), ST_MAX_TENSORS);
		rc = TS_ELIMIT;
		goto out;
	}
	e = xcalloc(json_object_size(map) + 1, sizeof(*e));
	names = xcalloc(json_object_size(map) + 1, sizeof(*names));
	json_object_foreach(map, key, v) {
		if (!json_is_string(v) ||
		    !st_plain_name(json_string_value(v),
		    json_string_length(v))) {
			snprintf(err, errlen, "%s: weight_map puts '%.200s' "
			    "in %s%.200s%s, which is not a plain file name in "
			    "the folder", ipath, key, json_is_string(v) ?
			    "'" : "", json_is_string(v) ?
			    json_string_value(v) : "a non-string",
			    json_is_string(v) ? "'" : "");
			goto out;
		}
		e[n].tensor = key;
		e[n].file = json_string_value(v);
		names[n] = e[n].file;
		n++;
	}
	/* the distinct files */
	qsort(names, n, sizeof(*names), st_cmp_str);
	for (i = 0; i < n; i++)
		if (n_names == 0 || strcmp(names[n_names - 1], names[i]) != 0)
			names[n_names++] = names[i];
	if (n_names > ST_MAX_SHARDS) {
		snprintf(err, errlen, "%s: %zu shard files, over the limit %u",
		    ipath, n_names, ST_MAX_SHARDS);
		rc = TS_ELIMIT;
		goto out;
	}
	s = xcalloc(1, sizeof(*s));
	s->files = xcalloc(n_names + 1, sizeof(*s->files));
	for (i = 0; i < n_names; i++) {
		size_t plen = strlen(dir) + strlen(names[i]) + 2;
		char *path = xmalloc(plen);

		snprintf(path, plen, "%s/%s", dir, names[i]);
		rc = safetensors_open(&s->files[i], path, err, errlen);
		free(path);
		if (rc != TS_OK)
			goto out;
		s->n_files++;
	}
	s->by_name = xcalloc(n + 1, sizeof(*s->by_name));
	for (i = 0; i < n; i++) {
		const char **f = bsearch(&e[i].file, names, n_names,
		    sizeof(*names), st_cmp_str);
		const struct st_tensor *t;

		t = safetensors_find(s->files[f - names], e[i].tensor);
		if (t == NULL) {
			snprintf(err, errlen, "%s: tensor '%.200s' is not in "
			    "%.200s, where weight_map puts it", ipath,
			    e[i].tensor, e[i].file);
			rc = TS_EFORMAT;
			goto out;
		}
		s->by_name[i] = t;
	}
	s->n = n;
	qsort(s->by_name, n, sizeof(*s->by_name), st_cmp_name);
	*out = s;
	s = NULL;
	rc = TS_OK;
out:
	safetensors_set_close(s);
	free(names);
	free(e);
	json_decref(root);
	return rc;
}

enum ts_err
safetensors_set_open_dir(struct safetensors_set **out, const char *dir,
    char *err, size_t errlen)
{
	size_t plen = strlen(dir) + 64, tlen;
	char *path = xmalloc(plen), *text = NULL;
	enum ts_err rc;
	int saved;

	*out = NULL;
	snprintf(path, plen, "%s/model.safetensors.index.json", dir);
	rc = st_read_file(path, ST_MAX_INDEX_BYTES, &text, &tlen, err,
	    errlen);
	if (rc == TS_OK) {
		rc = st_set_open_index(out, dir, path, text, tlen, err,
		    errlen);
	} else if (rc == TS_ESYS && errno == ENOENT) {
		snprintf(path, plen, "%s/model.safetensors", dir);
		rc = safetensors_set_open_file(out, path, err, errlen);
		if (rc == TS_ESYS && errno == ENOENT) {
			saved = errno;
			snprintf(err, errlen, "%s: no model.safetensors or "
			    "model.safetensors.index.json (only safetensors "
			    "weights are read, not pytorch_model.bin)", dir);
			errno = saved;
		}
	}
	free(text);
	free(path);
	return rc;
}

const struct st_tensor *
safetensors_set_find(const struct safetensors_set *s, const char *name)
{
	return st_bsearch(s->by_name, s->n, name);
}

size_t
safetensors_set_count(const struct safetensors_set *s)
{
	return s->n;
}

const struct st_tensor *
safetensors_set_at(const struct safetensors_set *s, size_t i)
{
	return i < s->n ? s->by_name[i] : NULL;
}

size_t
safetensors_set_files(const struct safetensors_set *s)
{
	return s->n_files;
}

/* ---- writing ------------------------------------------------------- */

/* Writer order: element size descending, then name (tensor.rs). */
static int
st_cmp_write(const void *a, const void *b)
{
	const struct st_write_tensor *const *x = a, *const *y = b;
	uint32_t xs = st_elem_size((*x)->dtype), ys = st_elem_size((*y)->dtype);

	if (xs != ys)
		return xs > ys ? -1 : 1;
	return strcmp((*x)->name, (*y)->name);
}

static int
st_cmp_write_name(const void *a, const void *b)
{
	const struct st_write_tensor *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

static int
st_write_all(FILE *f, const void *p, size_t n)
{
	return n == 0 || fwrite(p, 1, n, f) == n ? 0 : -1;
}

enum ts_err
safetensors_write(const char *path, const struct st_write_tensor *t,
    size_t n, const char *const *meta, size_t n_meta, char *err,
    size_t errlen)
{
	const struct st_write_tensor **order = NULL;
	json_t *root = json_object(), *m;
	unsigned char size8[8];
	enum ts_err rc = TS_EINVAL;
	uint64_t at = 0, hlen;
	char *header = NULL;
	FILE *f = NULL;
	size_t i, len;
	int saved;

	order = xcalloc(n + 1, sizeof(*order));
	for (i = 0; i < n; i++) {
		if (st_elem_size(t[i].dtype) == 0 ||
		    t[i].n_dims > ST_MAX_DIMS || t[i].name == NULL ||
		    t[i].name[0] == '\0' || strlen(t[i].name) > ST_MAX_NAME ||
		    strcmp(t[i].name, "__metadata__") == 0 ||
		    (t[i].data == NULL &&
		    st_tensor_bytes(t[i].dtype, t[i].n_dims, t[i].shape) >
		    0)) {
			snprintf(err, errlen, "%s: tensor %zu ('%.200s'): "
			    "needs a name, dtype F32, F16 or BF16, at most %u "
			    "dimensions and data", path, i,
			    t[i].name != NULL ? t[i].name : "", ST_MAX_DIMS);
			goto out;
		}
		order[i] = &t[i];
	}
	qsort(order, n, sizeof(*order), st_cmp_write_name);
	for (i = 1; i < n; i++) {
		if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
			snprintf(err, errlen, "%s: tensor '%.200s' twice",
			    path, order[i]->name);
			goto out;
		}
	}
	qsort(order, n, sizeof(*order), st_cmp_write);
	if (n_meta > 0) {
		m = json_object();
		for (i = 0; i < n_meta; i++)
			json_object_set_new(m, meta[2 * i],
			    json_string(meta[2 * i + 1]));
		json_object_set_new(root, "__metadata__", m);
	}
	for (i = 0; i < n; i++) {
		const struct st_write_tensor *w = order[i];
		uint64_t bytes = st_tensor_bytes(w->dtype, w->n_dims,
		    w->shape);
		json_t *e = json_object(), *shape = json_array();
		uint32_t d;

		for (d = 0; d < w->n_dims; d++)
			json_array_append_new(shape,
			    json_integer((json_int_t)w->shape[d]));
		json_object_set_new(e, "dtype",
		    json_string(st_dtype_string(w->dtype)));
		json_object_set_new(e, "shape", shape);
		json_object_set_new(e, "data_offsets", json_pack("[II]",
		    (json_int_t)at, (json_int_t)(at + bytes)));
		json_object_set_new(root, w->name, e);
		at += bytes;
	}
	header = json_dumps(root, JSON_COMPACT);
	if (header == NULL) {
		snprintf(err, errlen, "%s: cannot encode the header", path);
		goto out;
	}
	len = strlen(header);
	hlen = (len + 7) / 8 * 8;
	for (i = 0; i < 8; i++)
		size8[i] = (unsigned char)(hlen >> (8 * i));
	rc = TS_ESYS;
	f = fopen(path, "wb");
	if (f == NULL) {
		saved = errno;
		snprintf(err, errlen, "%s: cannot create: %s", path,
		    strerror(saved));
		errno = saved;
		goto out;
	}
	if (st_write_all(f, size8, 8) != 0 ||
	    st_write_all(f, header, len) != 0 ||
	    st_write_all(f, "       ", (size_t)(hlen - len)) != 0)
		goto werr;
	for (i = 0; i < n; i++)
		if (st_write_all(f, order[i]->data,
		    (size_t)st_tensor_bytes(order[i]->dtype,
		    order[i]->n_dims, order[i]->shape)) != 0)
			goto werr;
	if (fclose(f) != 0) {
		f = NULL;
		goto werr;
	}
	f = NULL;
	rc = TS_OK;
	goto out;
werr:
	saved = errno;
	snprintf(err, errlen, "%s: cannot write: %s", path, strerror(saved));
	if (f != NULL)
		fclose(f);
	f = NULL;
	unlink(path);
	errno = saved;
out:
	free(header);
	json_decref(root);
	free(order);
	return rc;
}
