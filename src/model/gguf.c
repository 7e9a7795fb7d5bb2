/*
 * model/gguf.c - GGUF files (see gguf.h): the reader, which checks a
 * whole image once and indexes its keys and tensors, and the writer.
 *
 * Spec: ggml docs/gguf.md "File Structure" (the types, the header, the
 * kv pairs, the tensor infos, align_offset(), the padding). Where the
 * spec leaves a choice, ggml's own reader (ggml/src/gguf.cpp,
 * gguf_init_from_reader) decides: the big-endian test on the version,
 * alignment a power of two up to 1 MiB, dims non-negative as int64 with
 * a representable product, ne[0] a multiple of the block. We accept
 * more than it in three places, each allowed by the spec: nested arrays,
 * tensors at any aligned offset (ggml wants them packed in order), and
 * alignment given by any integer type.
 *
 * Every multi-byte number is read and written a byte at a time,
 * little-endian, so nothing here depends on the host's byte order or
 * on the image's alignment.
 */
#define _POSIX_C_SOURCE 200809L

#include "model/gguf.h"
#include "model/model_map.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/rng.h"
#include "model/dtype.h"

/* The fewest bytes a kv pair can take (u64 key length, a 1-byte key, u32
 * type, a 1-byte value) and a tensor info (u64 name length, u32 n_dims,
 * one u64 dim, u32 type, u64 offset): the counts are checked against
 * the bytes left with these before anything is allocated. */
#define MIN_KV_BYTES 14u
#define MIN_TENSOR_BYTES 32u
/* an array's header: u32 element type, u64 count */
#define ARR_HEADER_BYTES 12u

/* Bytes of a fixed-size value type; 0 for str, arr and unknown types. */
static unsigned
type_size(uint32_t t)
{
	switch (t) {
	case GGUF_TYPE_U8: case GGUF_TYPE_I8: case GGUF_TYPE_BOOL:
		return 1;
	case GGUF_TYPE_U16: case GGUF_TYPE_I16:
		return 2;
	case GGUF_TYPE_U32: case GGUF_TYPE_I32: case GGUF_TYPE_F32:
		return 4;
	case GGUF_TYPE_U64: case GGUF_TYPE_I64: case GGUF_TYPE_F64:
		return 8;
	}
	return 0;
}

static int
type_is_int(uint32_t t)
{
	return t <= GGUF_TYPE_I32 || t == GGUF_TYPE_U64 ||
	    t == GGUF_TYPE_I64;
}

const char *
gguf_type_name(uint32_t t)
{
	static const char *const names[GGUF_TYPE_COUNT] = {
		"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str",
		"arr", "u64", "i64", "f64"
	};

	return t < GGUF_TYPE_COUNT ? names[t] : "unknown";
}

static uint16_t
le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* a * b into *r; -1 when it overflows 64 bits */
static int
mul64(uint64_t a, uint64_t b, uint64_t *r)
{
	if (a != 0 && b > UINT64_MAX / a)
		return -1;
	*r = a * b;
	return 0;
}

/* a * b, or UINT64_MAX when that overflows: a byte count for messages */
static uint64_t
sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return mul64(a, b, &r) == 0 ? r : UINT64_MAX;
}

/*
 * (s, len) as a message may show it, NUL-terminated in buf: printable
 * ASCII as is (but ' and \ escaped), other bytes as \xNN, cut with
 * "..." when it does not fit. Returns buf.
 */
static const char *
quote(char *buf, size_t size, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[4];
		size_t n;

		if (c == '\'' || c == '\\') {
			e[0] = '\\';
			e[1] = (char)c;
			n = 2;
		} else if (c >= 0x20 && c < 0x7f) {
			e[0] = (char)c;
			n = 1;
		} else {
			e[0] = '\\';
			e[1] = 'x';
			e[2] = hex[c >> 4];
			e[3] = hex[c & 15];
			n = 4;
		}
		if (o + n + 4 > size) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, e, n);
		o += n;
	}
	buf[o] = '\0';
	return buf;
}

/* a quoted name's buffer: 80 shown characters and "..." */
#define QBUF 96

/* ---- the index -------------------------------------------------------- */

struct gguf_kv {
	const char *key;
	size_t key_len;
	uint32_t type;
	uint32_t arr_type;      /* arrays only */
	uint64_t arr_n;         /* arrays only */
	const uint8_t *val;     /* the value; an array's first element */
};

/* An open-addressing hash set of indexes (i + 1; 0 is empty) into the
 * kv or tensor array, keyed by their names. */
struct hidx {
	uint64_t *slot;
	uint64_t mask;
};

struct gguf {
	const uint8_t *img;
	size_t len;
	void *map;              /* gguf_open's mapping, else NULL */
	size_t map_len;
	uint32_t version;
	uint32_t alignment;
	uint64_t data_off;
	uint64_t n_kv;
	uint64_t n_tensors;
	struct gguf_kv *kv;
	struct gguf_tensor *tensors;
	struct hidx kv_idx;
	struct hidx t_idx;
};

static void
hidx_init(struct hidx *h, uint64_t n)
{
	uint64_t size = 8;

	while (size < 2 * n)
		size *= 2;
	h->slot = xcalloc((size_t)size, sizeof(*h->slot));
	h->mask = size - 1;
}

static const char *
kv_name(const struct gguf *g, uint64_t i, size_t *len)
{
	*len = g->kv[i].key_len;
	return g->kv[i].key;
}

static const char *
tensor_name(const struct gguf *g, uint64_t i, size_t *len)
{
	*len = g->tensors[i].name_len;
	return g->tensors[i].name;
}

/*
 * The slot of name (s, len) in h: the one holding it, or the empty one
 * where it would go. The table is at most half full, so one is found.
 */
static uint64_t *
hidx_slot(const struct gguf *g, const struct hidx *h,
    const char *(*name)(const struct gguf *, uint64_t, size_t *),
    const char *s, size_t len)
{
	uint64_t i = rng_fnv1a(RNG_FNV1A_INIT, s, len) & h->mask;

	for (;; i = (i + 1) & h->mask) {
		uint64_t *slot = &h->slot[i];
		const char *n;
		size_t nlen;

		if (*slot == 0)
			return slot;
		n = name(g, *slot - 1, &nlen);
		if (nlen == len && memcmp(n, s, len) == 0)
			return slot;
	}
}

/* ---- parsing ---------------------------------------------------------- */

/* The parser's cursor over the image, and where errors go. */
struct rd {
	const uint8_t *p;
	size_t len;
	size_t pos;
	char *err;
	size_t errlen;
};

static int truncated(struct rd *r, uint64_t need, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct rd *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* On a failed read: the message names where, what, and the shortfall. */
static int
truncated(struct rd *r, uint64_t need, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "truncated at byte %zu reading %s "
	    "(needs %" PRIu64 " bytes, %zu left)", r->pos, what, need,
	    r->len - r->pos);
	return -1;
}

static int
fail(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

#define LEFT(r) ((uint64_t)((r)->len - (r)->pos))

/* What the value walker says a value is: "the value of key 'x'". */
struct what {
	const char *kind;       /* "key" or "tensor" */
	const char *name;       /* quoted */
};

/*
 * Checks the value of the given type at the cursor and steps over it:
 * fixed-size values by their size, bools 0 or 1, strings by their
 * length, arrays (docs/gguf.md gguf_metadata_value_t.array) by their
 * element type and count, nested up to GGUF_MAX_DEPTH. Every step
 * consumes at least one byte of the image per element scanned (a fixed
 * array is skipped in one step), so the walk is O(image).
 */
static int
skip_value(struct rd *r, uint32_t type, unsigned depth,
    const struct what *w)
{
	unsigned size = type_size(type);
	uint64_t n, i;
	uint32_t et;

	if (size != 0) {
		if (LEFT(r) < size)
			return truncated(r, size, "the value of %s '%s'",
			    w->kind, w->name);
		if (type == GGUF_TYPE_BOOL && r->p[r->pos] > 1)
			return fail(r, "%s '%s' has a bool of %u at byte %zu "
			    "(a bool is 0 or 1)", w->kind, w->name,
			    r->p[r->pos], r->pos);
		r->pos += size;
		return 0;
	}
	if (type == GGUF_TYPE_STR) {
		if (LEFT(r) < 8)
			return truncated(r, 8, "a string length in the "
			    "value of %s '%s'", w->kind, w->name);
		n = le64(r->p + r->pos);
		r->pos += 8;
		if (LEFT(r) < n)
			return truncated(r, n, "a string in the value of "
			    "%s '%s'", w->kind, w->name);
		r->pos += (size_t)n;
		return 0;
	}
	if (type != GGUF_TYPE_ARR)
		return fail(r, "%s '%s' has unknown value type %" PRIu32
		    " at byte %zu", w->kind, w->name, type, r->pos - 4);
	if (depth >= GGUF_MAX_DEPTH)
		return fail(r, "%s '%s' has arrays nested deeper than %u "
		    "at byte %zu", w->kind, w->name, GGUF_MAX_DEPTH, r->pos);
	if (LEFT(r) < ARR_HEADER_BYTES)
		return truncated(r, ARR_HEADER_BYTES, "the array header in "
		    "the value of %s '%s'", w->kind, w->name);
	et = le32(r->p + r->pos);
	n = le64(r->p + r->pos + 4);
	if (et >= GGUF_TYPE_COUNT)
		return fail(r, "%s '%s' has an array of unknown value type "
		    "%" PRIu32 " at byte %zu", w->kind, w->name, et, r->pos);
	r->pos += ARR_HEADER_BYTES;
	size = type_size(et);
	if (size != 0) {
		if (n > LEFT(r) / size)
			return truncated(r, sat_mul(n, size), "the %" PRIu64
			    " %s elements of %s '%s'", n, gguf_type_name(et),
			    w->kind, w->name);
		if (et == GGUF_TYPE_BOOL)
			for (i = 0; i < n; i++)
				if (r->p[r->pos + i] > 1)
					return fail(r, "%s '%s' has a bool "
					    "of %u at byte %zu (a bool is 0 "
					    "or 1)", w->kind, w->name,
					    r->p[r->pos + i],
					    r->pos + (size_t)i);
		r->pos += (size_t)(n * size);
		return 0;
	}
	/* strings take 8 bytes or more each, arrays 12: a count that
	 * cannot fit is refused before walking it */
	size = et == GGUF_TYPE_STR ? 8 : ARR_HEADER_BYTES;
	if (n > LEFT(r) / size)
		return truncated(r, sat_mul(n, size), "the %" PRIu64 " %s "
		    "elements of %s '%s'", n, gguf_type_name(et), w->kind,
		    w->name);
	for (i = 0; i < n; i++)
		if (skip_value(r, et, depth + 1, w) != 0)
			return -1;
	return 0;
}

/* A u64-length-prefixed string at the cursor, at most max bytes. */
static int
read_str(struct rd *r, uint64_t max, const char **s, size_t *len,
    const char *what, uint64_t index)
{
	uint64_t n;

	if (LEFT(r) < 8)
		return truncated(r, 8, "the length of %s %" PRIu64, what,
		    index);
	n = le64(r->p + r->pos);
	if (n > max)
		return fail(r, "%s %" PRIu64 " at byte %zu is %" PRIu64
		    " bytes long (at most %" PRIu64 ")", what, index, r->pos,
		    n, max);
	r->pos += 8;
	if (LEFT(r) < n)
		return truncated(r, n, "%s %" PRIu64, what, index);
	*s = (const char *)r->p + r->pos;
	*len = (size_t)n;
	r->pos += (size_t)n;
	return 0;
}

/* The header: magic, version, counts (checked against what is left). */
static int
parse_header(struct rd *r, struct gguf *g)
{
	char q[QBUF];
	uint32_t v;

	if (r->len < 4)
		return truncated(r, 4, "the magic");
	if (memcmp(r->p, GGUF_MAGIC, 4) != 0)
		return fail(r, "not a GGUF file (magic '%s')",
		    quote(q, sizeof(q), (const char *)r->p, 4));
	r->pos = 4;
	if (LEFT(r) < 4)
		return truncated(r, 4, "the version");
	v = le32(r->p + 4);
	/* A big-endian file's version 3 reads as 0x03000000 here:
	 * ggml's gguf_init_from_reader tests the low 16 bits the same way. */
	if (v != 0 && (v & 0xffffu) == 0)
		return fail(r, "GGUF version 0x%08" PRIx32 " is version %"
		    PRIu32 " byte-swapped: a big-endian file (only "
		    "little-endian GGUF files are read)", v,
		    (v >> 24) | ((v >> 8) & 0xff00u));
	if (v != 2 && v != 3)
		return fail(r, "GGUF version %" PRIu32 " is not supported "
		    "(versions 2 and 3 are)", v);
	g->version = v;
	r->pos = 8;
	if (LEFT(r) < 16)
		return truncated(r, 16, "the tensor and kv counts");
	g->n_tensors = le64(r->p + 8);
	g->n_kv = le64(r->p + 16);
	r->pos = 24;
	if (g->n_kv > LEFT(r) / MIN_KV_BYTES)
		return fail(r, "kv count %" PRIu64 " cannot fit in the %"
		    PRIu64 " bytes after the header (a kv takes at least %u)",
		    g->n_kv, LEFT(r), MIN_KV_BYTES);
	if (g->n_tensors > (LEFT(r) - g->n_kv * MIN_KV_BYTES) /
	    MIN_TENSOR_BYTES)
		return fail(r, "tensor count %" PRIu64 " cannot fit in the %"
		    PRIu64 " bytes after the header and %" PRIu64 " kvs (a "
		    "tensor info takes at least %u)", g->n_tensors, LEFT(r),
		    g->n_kv, MIN_TENSOR_BYTES);
	return 0;
}

static int
parse_kvs(struct rd *r, struct gguf *g)
{
	uint64_t i;

	for (i = 0; i < g->n_kv; i++) {
		struct gguf_kv *kv = &g->kv[i];
		char q[QBUF];
		struct what w = { "key", q };
		uint64_t *slot;

		if (read_str(r, GGUF_MAX_KEY_LEN, &kv->key, &kv->key_len,
		    "key", i) != 0)
			return -1;
		quote(q, sizeof(q), kv->key, kv->key_len);
		if (kv->key_len == 0)
			return fail(r, "key %" PRIu64 " at byte %zu is empty",
			    i, r->pos - 8);
		slot = hidx_slot(g, &g->kv_idx, kv_name, kv->key,
		    kv->key_len);
		if (*slot != 0)
			return fail(r, "key '%s' appears twice (kvs %" PRIu64
			    " and %" PRIu64 ")", q, *slot - 1, i);
		if (LEFT(r) < 4)
			return truncated(r, 4, "the value type of key '%s'",
			    q);
		kv->type = le32(r->p + r->pos);
		r->pos += 4;
		kv->val = r->p + r->pos;
		if (kv->type == GGUF_TYPE_ARR && LEFT(r) >= ARR_HEADER_BYTES) {
			kv->arr_type = le32(kv->val);
			kv->arr_n = le64(kv->val + 4);
			kv->val += ARR_HEADER_BYTES;
		}
		if (skip_value(r, kv->type, 0, &w) != 0)
			return -1;
		*slot = i + 1;
	}
	return 0;
}

/* Integer value at p of type t as sign and magnitude; -1 when t is not
 * an integer type. */
static int
int_of(const uint8_t *p, uint32_t t, int *neg, uint64_t *mag)
{
	int64_t s;

	switch (t) {
	case GGUF_TYPE_U8: *neg = 0; *mag = p[0]; return 0;
	case GGUF_TYPE_U16: *neg = 0; *mag = le16(p); return 0;
	case GGUF_TYPE_U32: *neg = 0; *mag = le32(p); return 0;
	case GGUF_TYPE_U64: *neg = 0; *mag = le64(p); return 0;
	case GGUF_TYPE_I8: s = (int8_t)p[0]; break;
	case GGUF_TYPE_I16: s = (int16_t)le16(p); break;
	case GGUF_TYPE_I32: s = (int32_t)le32(p); break;
	case GGUF_TYPE_I64: s = (int64_t)le64(p); break;
	default: return -1;
	}
	*neg = s < 0;
	*mag = s < 0 ? (uint64_t)(-(s + 1)) + 1 : (uint64_t)s;
	return 0;
}

static int
parse_alignment(struct rd *r, struct gguf *g)
{
	uint64_t *slot = hidx_slot(g, &g->kv_idx, kv_name,
	    GGUF_KEY_ALIGNMENT, strlen(GGUF_KEY_ALIGNMENT));
	const struct gguf_kv *kv = NULL;
	uint64_t mag;
	int neg;

	g->alignment = GGUF_DEFAULT_ALIGNMENT;
	if (*slot == 0)
		return 0;
	kv = &g->kv[*slot - 1];
	if (int_of(kv->val, kv->type, &neg, &mag) != 0)
		return fail(r, "key '" GGUF_KEY_ALIGNMENT "' is %s, wanted "
		    "u32", gguf_type_name(kv->type));
	if (neg || mag == 0 || (mag & (mag - 1)) != 0 ||
	    mag > GGUF_MAX_ALIGNMENT)
		return fail(r, GGUF_KEY_ALIGNMENT " is %s%" PRIu64 ": not "
		    "a power of two up to %u", neg ? "-" : "", mag,
		    GGUF_MAX_ALIGNMENT);
	g->alignment = (uint32_t)mag;
	return 0;
}

/* One tensor info (docs/gguf.md gguf_tensor_info_t): name, shape, type,
 * offset. Its bytes are checked here, its place in parse_data. */
static int
parse_tensor(struct rd *r, struct gguf *g, uint64_t i)
{
	struct gguf_tensor *t = &g->tensors[i];
	const struct model_dtype_info *info;
	uint64_t n = 1, rows, row_bytes, *slot;
	uint32_t d;
	char q[QBUF];

	if (read_str(r, GGUF_MAX_NAME_LEN, &t->name, &t->name_len,
	    "tensor name", i) != 0)
		return -1;
	quote(q, sizeof(q), t->name, t->name_len);
	slot = hidx_slot(g, &g->t_idx, tensor_name, t->name, t->name_len);
	if (*slot != 0)
		return fail(r, "tensor '%s' appears twice (tensors %" PRIu64
		    " and %" PRIu64 ")", q, *slot - 1, i);
	if (LEFT(r) < 4)
		return truncated(r, 4, "n_dims of tensor '%s'", q);
	t->n_dims = le32(r->p + r->pos);
	if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
		return fail(r, "tensor '%s' has %" PRIu32 " dimensions at "
		    "byte %zu (1 to %u)", q, t->n_dims, r->pos,
		    GGUF_MAX_DIMS);
	r->pos += 4;
	if (LEFT(r) < 8u * t->n_dims)
		return truncated(r, 8u * t->n_dims, "the dims of tensor "
		    "'%s'", q);
	for (d = 0; d < 4; d++) {
		t->dims[d] = 1;
		if (d >= t->n_dims)
			continue;
		t->dims[d] = le64(r->p + r->pos + 8u * d);
		/* ggml reads dims as int64 and refuses negatives, and a
		 * product past INT64_MAX */
		if (t->dims[d] > INT64_MAX)
			return fail(r, "tensor '%s' dim %" PRIu32 " is %"
			    PRIu64 " (at most 2^63-1)", q, d, t->dims[d]);
		if (mul64(n, t->dims[d], &n) != 0 || n > INT64_MAX)
			return fail(r, "tensor '%s' has more than 2^63-1 "
			    "elements", q);
	}
	rows = t->dims[0] != 0 ? n / t->dims[0] : 0;
	r->pos += 8u * t->n_dims;
	if (LEFT(r) < 12)
		return truncated(r, 12, "the type and offset of tensor '%s'",
		    q);
	t->type = le32(r->p + r->pos);
	t->offset = le64(r->p + r->pos + 4);
	info = model_dtype_info(t->type);
	if (info == NULL)
		return fail(r, "tensor '%s' has unknown type %" PRIu32, q,
		    t->type);
	if (t->dims[0] % info->block != 0)
		return fail(r, "tensor '%s' of type %s has rows of %" PRIu64
		    " elements, not a multiple of its block of %" PRIu32, q,
		    info->name, t->dims[0], info->block);
	row_bytes = t->dims[0] / info->block * info->size;
	if (mul64(row_bytes, rows, &t->bytes) != 0)
		return fail(r, "tensor '%s' is more than 2^64 bytes", q);
	if (t->offset % g->alignment != 0)
		return fail(r, "tensor '%s' has offset %" PRIu64 ", not a "
		    "multiple of the alignment %" PRIu32, q, t->offset,
		    g->alignment);
	r->pos += 12;
	*slot = i + 1;
	return 0;
}

/* The data section: its aligned start (docs/gguf.md: align_offset of
 * the end of the tensor infos), and every tensor's bytes inside it. */
static int
parse_data(struct rd *r, struct gguf *g)
{
	uint64_t pad = (g->alignment - r->pos % g->alignment) % g->alignment;
	uint64_t i, size;
	char q[QBUF];

	g->data_off = r->pos + pad;
	if (g->n_tensors == 0)
		return 0;
	if (LEFT(r) < pad)
		return truncated(r, pad, "the padding before the tensor "
		    "data");
	size = r->len - g->data_off;
	for (i = 0; i < g->n_tensors; i++) {
		struct gguf_tensor *t = &g->tensors[i];

		if (t->offset > size || t->bytes > size - t->offset)
			return fail(r, "tensor '%s' data (%" PRIu64 " bytes at "
			    "offset %" PRIu64 ") ends past the end of the file "
			    "(the data section has %" PRIu64 " bytes, from "
			    "byte %" PRIu64 ")", quote(q, sizeof(q), t->name,
			    t->name_len), t->bytes, t->offset, size,
			    g->data_off);
		t->data = r->p + g->data_off + t->offset;
	}
	return 0;
}

enum ts_err
gguf_parse(struct gguf **out, const void *data, size_t len, char *err,
    size_t errlen)
{
	struct gguf *g = xcalloc(1, sizeof(*g));
	struct rd r = { data, len, 0, err, errlen };
	uint64_t i;

	*out = NULL;
	g->img = data;
	g->len = len;
	if (parse_header(&r, g) != 0)
		goto bad;
	g->kv = xcalloc((size_t)g->n_kv + 1, sizeof(*g->kv));
	g->tensors = xcalloc((size_t)g->n_tensors + 1, sizeof(*g->tensors));
	hidx_init(&g->kv_idx, g->n_kv);
	hidx_init(&g->t_idx, g->n_tensors);
	if (parse_kvs(&r, g) != 0 || parse_alignment(&r, g) != 0)
		goto bad;
	for (i = 0; i < g->n_tensors; i++)
		if (parse_tensor(&r, g, i) != 0)
			goto bad;
	if (parse_data(&r, g) != 0)
		goto bad;
	*out = g;
	return TS_OK;
bad:
	gguf_close(g);
	return TS_EFORMAT;
}

enum ts_err
gguf_open(struct gguf **out, const char *path, char *err, size_t errlen)
{
	static const char empty[1];
	struct gguf *g = NULL;
	void *map;
	size_t len;
	char why[512];
	enum ts_err rc;

	*out = NULL;
	rc = model_map_file(path, &map, &len, err, errlen);
	if (rc != TS_OK)
		return rc;
	rc = gguf_parse(&g, map != NULL ? map : empty, len, why,
	    sizeof(why));
	if (rc != TS_OK) {
		snprintf(err, errlen, "%s: %s", path, why);
		model_unmap_file(map, len);
		return rc;
	}
	g->map = map;
	g->map_len = len;
	*out = g;
	return TS_OK;
}

void
gguf_close(struct gguf *g)
{
	if (g == NULL)
		return;
	model_unmap_file(g->map, g->map_len);
	free(g->kv);
	free(g->tensors);
	free(g->kv_idx.slot);
	free(g->t_idx.slot);
	free(g);
}

uint32_t
gguf_version(const struct gguf *g)
{
	return g->version;
}

uint32_t
gguf_alignment(const struct gguf *g)
{
	return g->alignment;
}

const void *
gguf_image(const struct gguf *g, size_t *len)
{
	*len = g->len;
	return g->img;
}

uint64_t
gguf_data_offset(const struct gguf *g)
{
	return g->data_off;
}

/* ---- metadata --------------------------------------------------------- */

uint64_t
gguf_kv_count(const struct gguf *g)
{
	return g->n_kv;
}

enum ts_err
gguf_kv_at(const struct gguf *g, uint64_t i, struct gguf_kv_info *out)
{
	const struct gguf_kv *kv = NULL;

	if (i >= g->n_kv)
		return TS_EINVAL;
	kv = &g->kv[i];
	out->key = kv->key;
	out->key_len = kv->key_len;
	out->type = kv->type;
	out->arr_type = kv->type == GGUF_TYPE_ARR ? kv->arr_type : 0;
	out->arr_n = kv->type == GGUF_TYPE_ARR ? kv->arr_n : 0;
	return TS_OK;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The kv of key, or TS_ENOENT with "no key 'x'". */
static enum ts_err
find_kv(const struct gguf *g, const char *key, const struct gguf_kv **kv,
    char *err, size_t errlen)
{
	size_t len = strlen(key);
	uint64_t *slot = hidx_slot(g, &g->kv_idx, kv_name, key, len);
	char q[QBUF];

	if (*slot == 0) {
		set_err(err, errlen, "no key '%s'", quote(q, sizeof(q), key,
		    len));
		return TS_ENOENT;
	}
	*kv = &g->kv[*slot - 1];
	return TS_OK;
}

/* "key 'x' is str, wanted u32" (arrays: "arr of str") */
static enum ts_err
mismatch(const struct gguf_kv *kv, const char *wanted, char *err,
    size_t errlen)
{
	char q[QBUF];

	quote(q, sizeof(q), kv->key, kv->key_len);
	if (kv->type == GGUF_TYPE_ARR)
		set_err(err, errlen, "key '%s' is arr of %s, wanted %s", q,
		    gguf_type_name(kv->arr_type), wanted);
	else
		set_err(err, errlen, "key '%s' is %s, wanted %s", q,
		    gguf_type_name(kv->type), wanted);
	return TS_EFORMAT;
}

/*
 * The integer at p (of type t, of key kv; elem >= 0 names an element)
 * if it lies in [-neg_max, pos_max] (neg_max as a magnitude).
 */
static enum ts_err
int_in(const struct gguf_kv *kv, const uint8_t *p, uint32_t t,
    int64_t elem, uint64_t neg_max, uint64_t pos_max, const char *wanted,
    int *neg, uint64_t *mag, char *err, size_t errlen)
{
	char q[QBUF], where[48] = "";

	if (int_of(p, t, neg, mag) != 0)
		return mismatch(kv, wanted, err, errlen);
	if (*neg ? *mag <= neg_max : *mag <= pos_max)
		return TS_OK;
	if (elem >= 0)
		snprintf(where, sizeof(where), " element %" PRId64, elem);
	set_err(err, errlen, "key '%s'%s is %s %s%" PRIu64 ", which does "
	    "not fit %s", quote(q, sizeof(q), kv->key, kv->key_len), where,
	    gguf_type_name(t), *neg ? "-" : "", *mag, wanted);
	return TS_EFORMAT;
}

static int64_t
signed_of(int neg, uint64_t mag)
{
	return neg ? -(int64_t)(mag - 1) - 1 : (int64_t)mag;
}

enum ts_err
gguf_get_u32(const struct gguf *g, const char *key, uint32_t *v, char *err,
    size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	uint64_t mag;
	int neg;
	enum ts_err rc = find_kv(g, key, &kv, err, errlen);

	if (rc == TS_OK)
		rc = int_in(kv, kv->val, kv->type, -1, 0, UINT32_MAX, "u32",
		    &neg, &mag, err, errlen);
	if (rc == TS_OK)
		*v = (uint32_t)mag;
	return rc;
}

enum ts_err
gguf_get_u64(const struct gguf *g, const char *key, uint64_t *v, char *err,
    size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	uint64_t mag;
	int neg;
	enum ts_err rc = find_kv(g, key, &kv, err, errlen);

	if (rc == TS_OK)
		rc = int_in(kv, kv->val, kv->type, -1, 0, UINT64_MAX, "u64",
		    &neg, &mag, err, errlen);
	if (rc == TS_OK)
		*v = mag;
	return rc;
}

enum ts_err
gguf_get_i32(const struct gguf *g, const char *key, int32_t *v, char *err,
    size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	uint64_t mag;
	int neg;
	enum ts_err rc = find_kv(g, key, &kv, err, errlen);

	if (rc == TS_OK)
		rc = int_in(kv, kv->val, kv->type, -1, 1ull << 31, INT32_MAX,
		    "i32", &neg, &mag, err, errlen);
	if (rc == TS_OK)
		*v = (int32_t)signed_of(neg, mag);
	return rc;
}

enum ts_err
gguf_get_i64(const struct gguf *g, const char *key, int64_t *v, char *err,
    size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	uint64_t mag;
	int neg;
	enum ts_err rc = find_kv(g, key, &kv, err, errlen);

	if (rc == TS_OK)
		rc = int_in(kv, kv->val, kv->type, -1, 1ull << 63, INT64_MAX,
		    "i64", &neg, &mag, err, errlen);
	if (rc == TS_OK)
		*v = signed_of(neg, mag);
	return rc;
}

/* The f32 or f64 at p as a float; TS_EFORMAT for a finite f64 beyond
 * the range of float. */
static enum ts_err
float_at(const struct gguf_kv *kv, const uint8_t *p, uint32_t t,
    float *v, char *err, size_t errlen)
{
	uint64_t b64;
	uint32_t b32;
	double d;
	char q[QBUF];

	if (t == GGUF_TYPE_F32) {
		b32 = le32(p);
		memcpy(v, &b32, 4);
		return TS_OK;
	}
	if (t != GGUF_TYPE_F64)
		return mismatch(kv, "f32", err, errlen);
	b64 = le64(p);
	memcpy(&d, &b64, 8);
	*v = (float)d;
	if (isfinite(d) && !isfinite(*v)) {
		set_err(err, errlen, "key '%s' is f64 %g, which does not fit "
		    "f32", quote(q, sizeof(q), kv->key, kv->key_len), d);
		return TS_EFORMAT;
	}
	return TS_OK;
}

enum ts_err
gguf_get_f32(const struct gguf *g, const char *key, float *v, char *err,
    size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	float f;
	enum ts_err rc = find_kv(g, key, &kv, err, errlen);

	if (rc == TS_OK)
		rc = float_at(kv, kv->val, kv->type, &f, err, errlen);
	if (rc == TS_OK)
		*v = f;
	return rc;
}

enum ts_err
gguf_get_bool(const struct gguf *g, const char *key, int *v, char *err,
    size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	enum ts_err rc = find_kv(g, key, &kv, err, errlen);

	if (rc != TS_OK)
		return rc;
	if (kv->type != GGUF_TYPE_BOOL)
		return mismatch(kv, "bool", err, errlen);
	*v = kv->val[0];
	return TS_OK;
}

enum ts_err
gguf_get_str(const struct gguf *g, const char *key, const char **s,
    size_t *len, char *err, size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	enum ts_err rc = find_kv(g, key, &kv, err, errlen);

	if (rc != TS_OK)
		return rc;
	if (kv->type != GGUF_TYPE_STR)
		return mismatch(kv, "str", err, errlen);
	*len = (size_t)le64(kv->val);
	*s = (const char *)kv->val + 8;
	return TS_OK;
}

enum ts_err
gguf_get_arr(const struct gguf *g, const char *key, uint32_t *elem_type,
    uint64_t *n, char *err, size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	enum ts_err rc = find_kv(g, key, &kv, err, errlen);

	if (rc != TS_OK)
		return rc;
	if (kv->type != GGUF_TYPE_ARR)
		return mismatch(kv, "arr", err, errlen);
	*elem_type = kv->arr_type;
	*n = kv->arr_n;
	return TS_OK;
}

/* The array kv of key whose elements are of a type `ok` accepts, with
 * element i < its count (i = 0 with n_want: exactly n_want elements). */
static enum ts_err
find_arr(const struct gguf *g, const char *key, int (*ok)(uint32_t),
    const char *wanted, uint64_t i, int fill, uint64_t n_want,
    const struct gguf_kv **out, char *err, size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	char q[QBUF];
	enum ts_err rc = find_kv(g, key, &kv, err, errlen);

	if (rc != TS_OK)
		return rc;
	if (kv->type != GGUF_TYPE_ARR || !ok(kv->arr_type))
		return mismatch(kv, wanted, err, errlen);
	quote(q, sizeof(q), kv->key, kv->key_len);
	if (fill && n_want != kv->arr_n) {
		set_err(err, errlen, "key '%s' has %" PRIu64 " elements, not "
		    "%" PRIu64, q, kv->arr_n, n_want);
		return TS_EINVAL;
	}
	if (!fill && i >= kv->arr_n) {
		set_err(err, errlen, "key '%s' has %" PRIu64 " elements, no "
		    "element %" PRIu64, q, kv->arr_n, i);
		return TS_EFORMAT;
	}
	*out = kv;
	return TS_OK;
}

static int
is_str(uint32_t t)
{
	return t == GGUF_TYPE_STR;
}

static int
is_float(uint32_t t)
{
	return t == GGUF_TYPE_F32 || t == GGUF_TYPE_F64;
}

enum ts_err
gguf_arr_str(const struct gguf *g, const char *key, uint64_t i,
    const char **s, size_t *len, char *err, size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	const uint8_t *p;
	uint64_t k;
	enum ts_err rc = find_arr(g, key, is_str, "arr of str", i, 0, 0, &kv,
	    err, errlen);

	if (rc != TS_OK)
		return rc;
	/* the parse checked every length: the walk stays in the image */
	for (p = kv->val, k = 0; k < i; k++)
		p += 8 + le64(p);
	*len = (size_t)le64(p);
	*s = (const char *)p + 8;
	return TS_OK;
}

enum ts_err
gguf_arr_f32(const struct gguf *g, const char *key, uint64_t i, float *v,
    char *err, size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	enum ts_err rc = find_arr(g, key, is_float, "arr of f32", i, 0, 0,
	    &kv, err, errlen);

	if (rc != TS_OK)
		return rc;
	return float_at(kv, kv->val + i * type_size(kv->arr_type),
	    kv->arr_type, v, err, errlen);
}

static enum ts_err
i32_elem(const struct gguf_kv *kv, uint64_t i, int32_t *v, char *err,
    size_t errlen)
{
	uint64_t mag;
	int neg;
	enum ts_err rc = int_in(kv, kv->val + i * type_size(kv->arr_type),
	    kv->arr_type, (int64_t)i, 1ull << 31, INT32_MAX, "i32", &neg,
	    &mag, err, errlen);

	if (rc == TS_OK)
		*v = (int32_t)signed_of(neg, mag);
	return rc;
}

enum ts_err
gguf_arr_i32(const struct gguf *g, const char *key, uint64_t i, int32_t *v,
    char *err, size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	enum ts_err rc = find_arr(g, key, type_is_int, "arr of i32", i, 0, 0,
	    &kv, err, errlen);

	if (rc != TS_OK)
		return rc;
	return i32_elem(kv, i, v, err, errlen);
}

enum ts_err
gguf_arr_str_fill(const struct gguf *g, const char *key, const char **s,
    size_t *len, uint64_t n, char *err, size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	const uint8_t *p;
	uint64_t k;
	enum ts_err rc = find_arr(g, key, is_str, "arr of str", 0, 1, n, &kv,
	    err, errlen);

	if (rc != TS_OK)
		return rc;
	for (p = kv->val, k = 0; k < n; k++) {
		len[k] = (size_t)le64(p);
		s[k] = (const char *)p + 8;
		p += 8 + len[k];
	}
	return TS_OK;
}

enum ts_err
gguf_arr_f32_fill(const struct gguf *g, const char *key, float *v,
    uint64_t n, char *err, size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	unsigned size;
	uint64_t k;
	enum ts_err rc = find_arr(g, key, is_float, "arr of f32", 0, 1, n,
	    &kv, err, errlen);

	if (rc != TS_OK)
		return rc;
	size = type_size(kv->arr_type);
	for (k = 0; k < n && rc == TS_OK; k++)
		rc = float_at(kv, kv->val + k * size, kv->arr_type, &v[k],
		    err, errlen);
	return rc;
}

enum ts_err
gguf_arr_i32_fill(const struct gguf *g, const char *key, int32_t *v,
    uint64_t n, char *err, size_t errlen)
{
	const struct gguf_kv *kv = NULL;
	uint64_t k;
	enum ts_err rc = find_arr(g, key, type_is_int, "arr of i32", 0, 1, n,
	    &kv, err, errlen);

	for (k = 0; k < n && rc == TS_OK; k++)
		rc = i32_elem(kv, k, &v[k], err, errlen);
	return rc;
}

/* ---- tensors ---------------------------------------------------------- */

const struct gguf_tensor *
gguf_tensor_find(const struct gguf *g, const char *name)
{
	uint64_t *slot = hidx_slot(g, &g->t_idx, tensor_name, name,
	    strlen(name));

	return *slot != 0 ? &g->tensors[*slot - 1] : NULL;
}

uint64_t
gguf_tensor_count(const struct gguf *g)
{
	return g->n_tensors;
}

const struct gguf_tensor *
gguf_tensor_at(const struct gguf *g, uint64_t i)
{
	return i < g->n_tensors ? &g->tensors[i] : NULL;
}

/* ---- writing ---------------------------------------------------------- */

struct wtensor {
	char *name;
	size_t name_len;
	uint32_t type;
	uint32_t n_dims;
	uint64_t dims[4];
	const void *data;       /* borrowed */
	uint64_t bytes;
	uint64_t offset;        /* from the data section */
};

struct gguf_writer {
	uint32_t alignment;
	struct ts_buf kv;       /* the encoded kv pairs, in order */
	uint64_t n_kv;
	char **keys;            /* copies, for the duplicate check */
	size_t *key_lens;
	struct wtensor *t;
	uint64_t n_t;
	uint64_t cap_t;
	uint64_t data_bytes;    /* the data section so far, padded */
	enum ts_err rc;         /* the first refusal */
	char msg[256];
};

static void
put_bytes(struct ts_buf *b, const void *p, size_t n)
{
	/* the buffer's cap is SIZE_MAX: only memory can stop it, and
	 * xrealloc aborts then */
	(void)ts_buf_append(b, p, n);
}

static void
put_u32(struct ts_buf *b, uint32_t v)
{
	uint8_t e[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
		(uint8_t)(v >> 24) };

	put_bytes(b, e, 4);
}

static void
put_u64(struct ts_buf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void
put_str(struct ts_buf *b, const char *s, size_t len)
{
	put_u64(b, len);
	put_bytes(b, s, len);
}

static enum ts_err refuse(struct gguf_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records a refusal (the first one's message is kept); TS_EINVAL. */
static enum ts_err
refuse(struct gguf_writer *w, const char *fmt, ...)
{
	va_list ap;

	if (w->rc == TS_OK) {
		w->rc = TS_EINVAL;
		va_start(ap, fmt);
		vsnprintf(w->msg, sizeof(w->msg), fmt, ap);
		va_end(ap);
	}
	return TS_EINVAL;
}

struct gguf_writer *
gguf_writer_new(uint32_t alignment)
{
	struct gguf_writer *w;

	if (alignment == 0)
		alignment = GGUF_DEFAULT_ALIGNMENT;
	if ((alignment & (alignment - 1)) != 0 ||
	    alignment > GGUF_MAX_ALIGNMENT)
		return NULL;
	w = xcalloc(1, sizeof(*w));
	w->alignment = alignment;
	ts_buf_init(&w->kv, SIZE_MAX);
	if (alignment != GGUF_DEFAULT_ALIGNMENT) {
		/* the spec's type for it: u32 (docs/gguf.md "General") */
		w->keys = xmalloc(sizeof(*w->keys));
		w->key_lens = xmalloc(sizeof(*w->key_lens));
		w->keys[0] = xstrndup(GGUF_KEY_ALIGNMENT,
		    strlen(GGUF_KEY_ALIGNMENT));
		w->key_lens[0] = strlen(GGUF_KEY_ALIGNMENT);
		w->n_kv = 1;
		put_str(&w->kv, GGUF_KEY_ALIGNMENT,
		    strlen(GGUF_KEY_ALIGNMENT));
		put_u32(&w->kv, GGUF_TYPE_U32);
		put_u32(&w->kv, alignment);
	}
	return w;
}

void
gguf_writer_free(struct gguf_writer *w)
{
	uint64_t i;

	if (w == NULL)
		return;
	for (i = 0; i < w->n_kv; i++)
		free(w->keys[i]);
	free(w->keys);
	free(w->key_lens);
	for (i = 0; i < w->n_t; i++)
		free(w->t[i].name);
	free(w->t);
	ts_buf_free(&w->kv);
	free(w);
}

/*
 * Checks key (new, not empty, not too long, not general.alignment) and
 * appends it and the value type. Linear in the keys set so far: a file
 * has tens of keys (a vocabulary is one array).
 */
static enum ts_err
begin_kv(struct gguf_writer *w, const char *key, uint32_t type)
{
	size_t len = key != NULL ? strlen(key) : 0;
	char q[QBUF];
	uint64_t i;

	if (len == 0)
		return refuse(w, "gguf writer: an empty key");
	quote(q, sizeof(q), key, len);
	if (len > GGUF_MAX_KEY_LEN)
		return refuse(w, "gguf writer: key '%s' is %zu bytes long "
		    "(at most %u)", q, len, GGUF_MAX_KEY_LEN);
	if (strcmp(key, GGUF_KEY_ALIGNMENT) == 0)
		return refuse(w, "gguf writer: " GGUF_KEY_ALIGNMENT " is "
		    "the writer's (gguf_writer_new)");
	for (i = 0; i < w->n_kv; i++)
		if (w->key_lens[i] == len && memcmp(w->keys[i], key, len) == 0)
			return refuse(w, "gguf writer: key '%s' set twice",
			    q);
	if ((w->n_kv & (w->n_kv - 1)) == 0) {
		size_t cap = w->n_kv ? (size_t)w->n_kv * 2 : 1;

		w->keys = xrealloc(w->keys, cap * sizeof(*w->keys));
		w->key_lens = xrealloc(w->key_lens,
		    cap * sizeof(*w->key_lens));
	}
	w->keys[w->n_kv] = xstrndup(key, len);
	w->key_lens[w->n_kv] = len;
	w->n_kv++;
	put_str(&w->kv, key, len);
	put_u32(&w->kv, type);
	return TS_OK;
}

/* A fixed-size scalar: size bytes of v, little-endian. */
static enum ts_err
set_fixed(struct gguf_writer *w, const char *key, uint32_t type,
    uint64_t v)
{
	unsigned k, size = type_size(type);
	uint8_t e[8];

	if (begin_kv(w, key, type) != TS_OK)
		return TS_EINVAL;
	for (k = 0; k < size; k++)
		e[k] = (uint8_t)(v >> (8 * k));
	put_bytes(&w->kv, e, size);
	return TS_OK;
}

enum ts_err
gguf_writer_set_u8(struct gguf_writer *w, const char *key, uint8_t v)
{
	return set_fixed(w, key, GGUF_TYPE_U8, v);
}

enum ts_err
gguf_writer_set_i8(struct gguf_writer *w, const char *key, int8_t v)
{
	return set_fixed(w, key, GGUF_TYPE_I8, (uint8_t)v);
}

enum ts_err
gguf_writer_set_u16(struct gguf_writer *w, const char *key, uint16_t v)
{
	return set_fixed(w, key, GGUF_TYPE_U16, v);
}

enum ts_err
gguf_writer_set_i16(struct gguf_writer *w, const char *key, int16_t v)
{
	return set_fixed(w, key, GGUF_TYPE_I16, (uint16_t)v);
}

enum ts_err
gguf_writer_set_u32(struct gguf_writer *w, const char *key, uint32_t v)
{
	return set_fixed(w, key, GGUF_TYPE_U32, v);
}

enum ts_err
gguf_writer_set_i32(struct gguf_writer *w, const char *key, int32_t v)
{
	return set_fixed(w, key, GGUF_TYPE_I32, (uint32_t)v);
}

enum ts_err
gguf_writer_set_u64(struct gguf_writer *w, const char *key, uint64_t v)
{
	return set_fixed(w, key, GGUF_TYPE_U64, v);
}

enum ts_err
gguf_writer_set_i64(struct gguf_writer *w, const char *key, int64_t v)
{
	return set_fixed(w, key, GGUF_TYPE_I64, (uint64_t)v);
}

enum ts_err
gguf_writer_set_f32(struct gguf_writer *w, const char *key, float v)
{
	uint32_t b;

	memcpy(&b, &v, 4);
	return set_fixed(w, key, GGUF_TYPE_F32, b);
}

enum ts_err
gguf_writer_set_f64(struct gguf_writer *w, const char *key, double v)
{
	uint64_t b;

	memcpy(&b, &v, 8);
	return set_fixed(w, key, GGUF_TYPE_F64, b);
}

enum ts_err
gguf_writer_set_bool(struct gguf_writer *w, const char *key, int v)
{
	return set_fixed(w, key, GGUF_TYPE_BOOL, v != 0);
}

enum ts_err
gguf_writer_set_strn(struct gguf_writer *w, const char *key, const char *s,
    size_t len)
{
	if (s == NULL && len > 0)
		return refuse(w, "gguf writer: a NULL string");
	if (begin_kv(w, key, GGUF_TYPE_STR) != TS_OK)
		return TS_EINVAL;
	put_str(&w->kv, s, len);
	return TS_OK;
}

enum ts_err
gguf_writer_set_str(struct gguf_writer *w, const char *key, const char *s)
{
	return gguf_writer_set_strn(w, key, s, s != NULL ? strlen(s) : 0);
}

enum ts_err
gguf_writer_set_arr_str(struct gguf_writer *w, const char *key,
    const char *const *s, const size_t *len, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == NULL && (len == NULL || len[i] > 0))
			return refuse(w, "gguf writer: string %zu of an "
			    "array is NULL", i);
	if (begin_kv(w, key, GGUF_TYPE_ARR) != TS_OK)
		return TS_EINVAL;
	put_u32(&w->kv, GGUF_TYPE_STR);
	put_u64(&w->kv, n);
	for (i = 0; i < n; i++)
		put_str(&w->kv, s[i], len != NULL ? len[i] : strlen(s[i]));
	return TS_OK;
}

enum ts_err
gguf_writer_set_arr(struct gguf_writer *w, const char *key,
    uint32_t elem_type, const void *v, size_t n)
{
	unsigned size = type_size(elem_type), k;
	const uint8_t *p = v;
	size_t i;

	if (size == 0)
		return refuse(w, "gguf writer: gguf_writer_set_arr takes "
		    "fixed-size elements, not %s", gguf_type_name(elem_type));
	if (v == NULL && n > 0)
		return refuse(w, "gguf writer: NULL array elements");
	if (elem_type == GGUF_TYPE_BOOL)
		for (i = 0; i < n; i++)
			if (p[i] > 1)
				return refuse(w, "gguf writer: bool %zu is "
				    "%u (0 or 1)", i, p[i]);
	if (begin_kv(w, key, GGUF_TYPE_ARR) != TS_OK)
		return TS_EINVAL;
	put_u32(&w->kv, elem_type);
	put_u64(&w->kv, n);
	for (i = 0; i < n; i++, p += size) {
		uint64_t x = 0;
		uint8_t e[8];

		/* host order in, little-endian out */
		switch (size) {
		case 1: x = p[0]; break;
		case 2: { uint16_t y; memcpy(&y, p, 2); x = y; break; }
		case 4: { uint32_t y; memcpy(&y, p, 4); x = y; break; }
		default: memcpy(&x, p, 8); break;
		}
		for (k = 0; k < size; k++)
			e[k] = (uint8_t)(x >> (8 * k));
		put_bytes(&w->kv, e, size);
	}
	return TS_OK;
}

enum ts_err
gguf_writer_set_arr_f32(struct gguf_writer *w, const char *key,
    const float *v, size_t n)
{
	return gguf_writer_set_arr(w, key, GGUF_TYPE_F32, v, n);
}

enum ts_err
gguf_writer_set_arr_i32(struct gguf_writer *w, const char *key,
    const int32_t *v, size_t n)
{
	return gguf_writer_set_arr(w, key, GGUF_TYPE_I32, v, n);
}

enum ts_err
gguf_writer_set_arr_u32(struct gguf_writer *w, const char *key,
    const uint32_t *v, size_t n)
{
	return gguf_writer_set_arr(w, key, GGUF_TYPE_U32, v, n);
}

enum ts_err
gguf_writer_set_raw(struct gguf_writer *w, const char *key, uint32_t type,
    const void *value, size_t len)
{
	char why[256], q[QBUF];
	struct rd r = { value, len, 0, why, sizeof(why) };
	struct what wh = { "key", q };

	quote(q, sizeof(q), key != NULL ? key : "", key != NULL ?
	    strlen(key) : 0);
	if (type >= GGUF_TYPE_COUNT)
		return refuse(w, "gguf writer: key '%s': unknown value type %"
		    PRIu32, q, type);
	if (value == NULL && len > 0)
		return refuse(w, "gguf writer: key '%s': a NULL value", q);
	if (skip_value(&r, type, 0, &wh) != 0)
		return refuse(w, "gguf writer: %s", why);
	if (r.pos != len)
		return refuse(w, "gguf writer: key '%s': %zu bytes after its "
		    "%s value", q, len - r.pos, gguf_type_name(type));
	if (begin_kv(w, key, type) != TS_OK)
		return TS_EINVAL;
	put_bytes(&w->kv, value, len);
	return TS_OK;
}

enum ts_err
gguf_writer_add_tensor(struct gguf_writer *w, const char *name,
    uint32_t type, uint32_t n_dims, const uint64_t *dims, const void *data)
{
	const struct model_dtype_info *info = model_dtype_info(type);
	size_t len = name != NULL ? strlen(name) : 0;
	uint64_t n = 1, bytes, i;
	struct wtensor *t;
	char q[QBUF];
	uint32_t d;

	/* ggml keeps a name in char[GGML_MAX_NAME = 64] with its NUL */
	if (len == 0 || len >= GGUF_MAX_NAME_LEN)
		return refuse(w, "gguf writer: a tensor name of %zu bytes "
		    "(1 to %u)", len, GGUF_MAX_NAME_LEN - 1);
	quote(q, sizeof(q), name, len);
	for (i = 0; i < w->n_t; i++)
		if (w->t[i].name_len == len &&
		    memcmp(w->t[i].name, name, len) == 0)
			return refuse(w, "gguf writer: tensor '%s' added "
			    "twice", q);
	if (info == NULL)
		return refuse(w, "gguf writer: tensor '%s' has unknown type "
		    "%" PRIu32, q, type);
	if (n_dims < 1 || n_dims > GGUF_MAX_DIMS || dims == NULL)
		return refuse(w, "gguf writer: tensor '%s' has %" PRIu32
		    " dimensions (1 to %u)", q, n_dims, GGUF_MAX_DIMS);
	for (d = 0; d < n_dims; d++)
		if (dims[d] > INT64_MAX || mul64(n, dims[d], &n) != 0 ||
		    n > INT64_MAX)
			return refuse(w, "gguf writer: tensor '%s' has more "
			    "than 2^63-1 elements", q);
	if (dims[0] % info->block != 0)
		return refuse(w, "gguf writer: tensor '%s' of type %s has "
		    "rows of %" PRIu64 " elements, not a multiple of %" PRIu32,
		    q, info->name, dims[0], info->block);
	if (mul64(n / info->block, info->size, &bytes) != 0 ||
	    bytes > SIZE_MAX - w->alignment ||
	    w->data_bytes > UINT64_MAX - bytes - w->alignment)
		return refuse(w, "gguf writer: tensor '%s' is too large", q);
	if (data == NULL && bytes > 0)
		return refuse(w, "gguf writer: tensor '%s' has no data", q);
	if (w->n_t == w->cap_t) {
		w->cap_t = w->cap_t ? w->cap_t * 2 : 8;
		w->t = xrealloc(w->t, (size_t)w->cap_t * sizeof(*w->t));
	}
	t = &w->t[w->n_t++];
	memset(t, 0, sizeof(*t));
	t->name = xstrndup(name, len);
	t->name_len = len;
	t->type = type;
	t->n_dims = n_dims;
	memcpy(t->dims, dims, n_dims * sizeof(*dims));
	t->data = data;
	t->bytes = bytes;
	t->offset = w->data_bytes;
	w->data_bytes += bytes + (w->alignment - bytes % w->alignment) %
	    w->alignment;
	return TS_OK;
}

/* The file up to its data section: header, kvs, tensor infos, padding
 * (docs/gguf.md gguf_file_t). */
static void
write_meta(const struct gguf_writer *w, struct ts_buf *b)
{
	static const uint8_t zeros[64];
	uint64_t i;
	uint32_t d;

	put_bytes(b, GGUF_MAGIC, 4);
	put_u32(b, GGUF_VERSION);
	put_u64(b, w->n_t);
	put_u64(b, w->n_kv);
	put_bytes(b, w->kv.p, w->kv.len);
	for (i = 0; i < w->n_t; i++) {
		const struct wtensor *t = &w->t[i];

		put_str(b, t->name, t->name_len);
		put_u32(b, t->n_dims);
		for (d = 0; d < t->n_dims; d++)
			put_u64(b, t->dims[d]);
		put_u32(b, t->type);
		put_u64(b, t->offset);
	}
	while (b->len % w->alignment != 0) {
		size_t n = w->alignment - b->len % w->alignment;

		put_bytes(b, zeros, n < sizeof(zeros) ? n : sizeof(zeros));
	}
}

enum ts_err
gguf_writer_bytes(struct gguf_writer *w, void **out, size_t *len,
    char *err, size_t errlen)
{
	struct ts_buf b;
	uint64_t i;

	*out = NULL;
	*len = 0;
	if (w->rc != TS_OK) {
		set_err(err, errlen, "%s", w->msg);
		return w->rc;
	}
	ts_buf_init(&b, SIZE_MAX);
	write_meta(w, &b);
	for (i = 0; i < w->n_t; i++) {
		const struct wtensor *t = &w->t[i];

		if (t->bytes > 0)
			put_bytes(&b, t->data, (size_t)t->bytes);
		while (b.len % w->alignment != 0)
			put_bytes(&b, "", 1);
	}
	*out = b.p;
	*len = b.len;
	return TS_OK;
}

enum ts_err
gguf_writer_write(struct gguf_writer *w, const char *path, char *err,
    size_t errlen)
{
	struct ts_buf b;
	uint8_t *zeros = NULL;
	char *tmp;
	size_t tlen;
	FILE *f;
	uint64_t i;
	int ok, saved;

	if (w->rc != TS_OK) {
		set_err(err, errlen, "%s", w->msg);
		return w->rc;
	}
	/* written beside path, then renamed over it: a process that has
	 * the old file mapped keeps reading the old file, never a
	 * truncated one (a shrunk mapping faults with SIGBUS) */
	tlen = strlen(path) + 32;
	tmp = xmalloc(tlen);
	snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
	f = fopen(tmp, "wb");
	if (f == NULL) {
		saved = errno;
		set_err(err, errlen, "%s: cannot create: %s", path,
		    strerror(saved));
		free(tmp);
		errno = saved;
		return TS_ESYS;
	}
	ts_buf_init(&b, SIZE_MAX);
	write_meta(w, &b);
	ok = fwrite(b.p, 1, b.len, f) == b.len;
	ts_buf_free(&b);
	zeros = xcalloc(w->alignment, 1);
	for (i = 0; ok && i < w->n_t; i++) {
		const struct wtensor *t = &w->t[i];
		size_t pad = (size_t)((w->alignment - t->bytes %
		    w->alignment) % w->alignment);

		ok = (t->bytes == 0 ||
		    fwrite(t->data, 1, (size_t)t->bytes, f) == t->bytes) &&
		    fwrite(zeros, 1, pad, f) == pad;
	}
	free(zeros);
	saved = ok ? 0 : errno;
	if (fclose(f) != 0 && ok) {
		ok = 0;
		saved = errno;
	}
	if (ok && rename(tmp, path) != 0) {
		ok = 0;
		saved = errno;
	}
	if (!ok) {
		set_err(err, errlen, "%s: cannot write: %s", path,
		    strerror(saved));
		unlink(tmp);
		free(tmp);
		errno = saved;
		return TS_ESYS;
	}
	free(tmp);
	return TS_OK;
}
