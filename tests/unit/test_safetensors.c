/*
 * test_safetensors.c - safetensors files (src/model/safetensors.c): a
 * hand-built image read independently of the writer, the writer's round
 * trip (layout as the reference writer's), every validation error (each
 * prefix of a file, header size, JSON, overlap, hole, bounds, dtype,
 * shape, duplicates), sets of shards with an index (found across files;
 * a missing shard, a tensor in the wrong shard, names outside the
 * folder), and the F16 / BF16 conversions' rounding.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/safetensors.h"

static char dir[256];
static char err[512];

static int
setup(void **unused)
{
	(void)unused;
	snprintf(dir, sizeof(dir), "%s/tokstream-st-XXXXXX",
	    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

/* Empties dir (flat) between tests. */
static void
clean_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
}

static int
teardown(void **unused)
{
	(void)unused;
	clean_dir();
	rmdir(dir);
	return 0;
}

static int
per_test_clean(void **unused)
{
	(void)unused;
	clean_dir();
	return 0;
}

/* An image: 8-byte size, the header text, data_len bytes 0, 1, 2, ... */
static size_t
image(unsigned char *buf, size_t cap, const char *header, size_t data_len)
{
	size_t h = strlen(header), i;

	assert_true(8 + h + data_len <= cap);
	for (i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
	memcpy(buf + 8, header, h);
	for (i = 0; i < data_len; i++)
		buf[8 + h + i] = (unsigned char)i;
	return 8 + h + data_len;
}

static void
write_file(const char *name, const void *buf, size_t len)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Parses header + data and expects rc with `want` in the message. */
static void
expect_error(const char *header, size_t data_len, enum ts_err rc,
    const char *want)
{
	unsigned char buf[4096];
	struct safetensors *st = (struct safetensors *)&st;
	size_t len = image(buf, sizeof(buf), header, data_len);

	err[0] = '\0';
	assert_int_equal(safetensors_parse(&st, buf, len, err, sizeof(err)),
	    rc);
	assert_null(st);
	if (strstr(err, want) == NULL)
		fail_msg("error '%s' does not contain '%s'", err, want);
}

/* A file built byte by byte, without the writer: two tensors, F16 then
 * F32, in an order different from the header's; plus metadata. */
static void
test_hand_built_image(void **unused)
{
	static const char hdr[] =
	    "{\"__metadata__\":{\"format\":\"pt\"},"
	    "\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],"
	    "\"data_offsets\":[4,12]},"
	    "\"b\":{\"dtype\":\"F16\",\"shape\":[2],"
	    "\"data_offsets\":[0,4]}}    ";
	/* F16 1.0, -2.0; F32 0.5, 3.0 (little-endian) */
	static const unsigned char data[] = {
		0x00, 0x3c, 0x00, 0xc0,
		0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x40, 0x40,
	};
	unsigned char buf[512];
	struct safetensors *st;
	const struct st_tensor *t;
	size_t len = image(buf, sizeof(buf), hdr, 0);
	float f[2];

	(void)unused;
	memcpy(buf + len, data, sizeof(data));
	len += sizeof(data);
	assert_int_equal(safetensors_parse(&st, buf, len, err, sizeof(err)),
	    TS_OK);
	assert_int_equal(safetensors_count(st), 2);
	/* in data order */
	assert_string_equal(safetensors_at(st, 0)->name, "b");
	assert_string_equal(safetensors_at(st, 1)->name, "w");
	assert_null(safetensors_at(st, 2));
	t = safetensors_find(st, "w");
	assert_non_null(t);
	assert_int_equal(t->dtype, MODEL_DTYPE_F32);
	assert_int_equal(t->n_dims, 2);
	assert_int_equal(t->shape[0], 1);
	assert_int_equal(t->shape[1], 2);
	assert_int_equal(t->n_elems, 2);
	assert_int_equal(t->bytes, 8);
	assert_int_equal(t->offset, 8 + strlen(hdr) + 4);
	assert_ptr_equal(t->data, buf + t->offset);
	st_to_f32(t->dtype, t->data, 2, f);
	assert_true(f[0] == 0.5f && f[1] == 3.0f);
	t = safetensors_find(st, "b");
	assert_int_equal(t->dtype, MODEL_DTYPE_F16);
	st_to_f32(t->dtype, t->data, 2, f);
	assert_true(f[0] == 1.0f && f[1] == -2.0f);
	assert_null(safetensors_find(st, "c"));
	assert_null(safetensors_find(st, "__metadata__"));
	assert_string_equal(safetensors_metadata(st, "format"), "pt");
	assert_null(safetensors_metadata(st, "other"));
	safetensors_close(st);
	safetensors_close(NULL);
}

/* BF16, a scalar, an empty tensor and an empty file of tensors. */
static void
test_shapes_accepted(void **unused)
{
	unsigned char buf[512];
	struct safetensors *st;
	const struct st_tensor *t;
	size_t len;

	(void)unused;
	len = image(buf, sizeof(buf),
	    "{\"s\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[0,2]},"
	    "\"e\":{\"dtype\":\"F32\",\"shape\":[3,0],"
	    "\"data_offsets\":[2,2]}}", 2);
	assert_int_equal(safetensors_parse(&st, buf, len, err, sizeof(err)),
	    TS_OK);
	t = safetensors_find(st, "s");
	assert_int_equal(t->dtype, MODEL_DTYPE_BF16);
	assert_int_equal(t->n_dims, 0);
	assert_int_equal(t->n_elems, 1);
	t = safetensors_find(st, "e");
	assert_int_equal(t->n_elems, 0);
	assert_int_equal(t->bytes, 0);
	safetensors_close(st);

	len = image(buf, sizeof(buf), "{}", 0);
	assert_int_equal(safetensors_parse(&st, buf, len, err, sizeof(err)),
	    TS_OK);
	assert_int_equal(safetensors_count(st), 0);
	safetensors_close(st);
}

static void
test_write_round_trip(void **unused)
{
	static const float a[6] = { 1, 2, 3, 4, 5, 6 };
	static const uint16_t h[3] = { 0x3c00, 0x4000, 0xbc00 };
	static const uint16_t bf[1] = { 0x3f80 };
	const char *meta[] = { "format", "pt", "note", "x" };
	struct st_write_tensor w[] = {
		{ "z.half", MODEL_DTYPE_F16, 1, { 3 }, h },
		{ "a.bf", MODEL_DTYPE_BF16, 0, { 0 }, bf },
		{ "m.full", MODEL_DTYPE_F32, 2, { 2, 3 }, a },
		{ "empty", MODEL_DTYPE_F32, 1, { 0 }, NULL },
	};
	struct safetensors *st;
	const struct st_tensor *t;
	char path[512];
	size_t i;

	(void)unused;
	snprintf(path, sizeof(path), "%s/x.safetensors", dir);
	assert_int_equal(safetensors_write(path, w, 4, meta, 2, err,
	    sizeof(err)), TS_OK);
	assert_int_equal(safetensors_open(&st, path, err, sizeof(err)),
	    TS_OK);
	assert_int_equal(safetensors_count(st), 4);
	/* the reference writer's order: F32 first, then by name */
	assert_string_equal(safetensors_at(st, 0)->name, "empty");
	assert_string_equal(safetensors_at(st, 1)->name, "m.full");
	assert_string_equal(safetensors_at(st, 2)->name, "a.bf");
	assert_string_equal(safetensors_at(st, 3)->name, "z.half");
	for (i = 0; i < 4; i++) {
		t = safetensors_find(st, w[i].name);
		assert_non_null(t);
		assert_int_equal(t->dtype, w[i].dtype);
		assert_int_equal(t->n_dims, w[i].n_dims);
		if (t->bytes > 0)
			assert_memory_equal(t->data, w[i].data, t->bytes);
		/* header padded to 8, so each tensor is aligned to its
		 * element size */
		assert_int_equal(t->offset % (t->dtype == MODEL_DTYPE_F32 ?
		    4 : 2), 0);
	}
	assert_int_equal(safetensors_at(st, 0)->offset % 8, 0);
	assert_string_equal(safetensors_metadata(st, "note"), "x");
	safetensors_close(st);

	/* bad tensors */
	w[1].name = "z.half";
	assert_int_equal(safetensors_write(path, w, 2, NULL, 0, err,
	    sizeof(err)), TS_EINVAL);
	assert_non_null(strstr(err, "twice"));
	w[1].name = "a.bf";
	w[1].dtype = MODEL_DTYPE_F64;
	assert_int_equal(safetensors_write(path, w, 2, NULL, 0, err,
	    sizeof(err)), TS_EINVAL);
}

/* The writer's bytes, spelled out: the size, the compact header with
 * __metadata__ first, spaces to a multiple of 8, the data. */
static void
test_write_exact_bytes(void **unused)
{
	static const char hdr[] = "{\"__metadata__\":{\"format\":\"pt\"},"
	    "\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[0,4]}}";
	static const float one = 1.0f;
	const char *meta[] = { "format", "pt" };
	struct st_write_tensor w = { "a", MODEL_DTYPE_F32, 1, { 1 }, &one };
	unsigned char want[256], got[256];
	size_t n = strlen(hdr), pad = (8 - n % 8) % 8, len;
	char path[512];
	FILE *f;

	(void)unused;
	assert_true(pad > 0);        /* the case exercises the padding */
	memset(want, 0, sizeof(want));
	want[0] = (unsigned char)(n + pad);
	memcpy(want + 8, hdr, n);
	memset(want + 8 + n, ' ', pad);
	memcpy(want + 8 + n + pad, "\x00\x00\x80\x3f", 4);
	snprintf(path, sizeof(path), "%s/one.safetensors", dir);
	assert_int_equal(safetensors_write(path, &w, 1, meta, 1, err,
	    sizeof(err)), TS_OK);
	f = fopen(path, "rb");
	assert_non_null(f);
	len = fread(got, 1, sizeof(got), f);
	fclose(f);
	assert_int_equal(len, 8 + n + pad + 4);
	assert_memory_equal(got, want, len);
}

/* Every prefix of a valid file is refused, cleanly, from memory and
 * from a file. */
static void
test_every_prefix(void **unused)
{
	unsigned char buf[512];
	struct safetensors *st;
	size_t len, cut;
	char path[512];

	(void)unused;
	len = image(buf, sizeof(buf),
	    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	    "\"b\":{\"dtype\":\"F16\",\"shape\":[1],"
	    "\"data_offsets\":[8,10]}}", 10);
	assert_int_equal(safetensors_parse(&st, buf, len, err, sizeof(err)),
	    TS_OK);
	safetensors_close(st);
	for (cut = 0; cut < len; cut++) {
		st = (struct safetensors *)&st;
		assert_int_not_equal(safetensors_parse(&st, buf, cut, err,
		    sizeof(err)), TS_OK);
		assert_null(st);
		assert_true(strlen(err) > 0);
	}
	snprintf(path, sizeof(path), "%s/cut.safetensors", dir);
	for (cut = 0; cut < len; cut++) {
		write_file("cut.safetensors", buf, cut);
		assert_int_equal(safetensors_open(&st, path, err,
		    sizeof(err)), TS_EFORMAT);
		assert_int_equal(strncmp(err, path, strlen(path)), 0);
	}
	/* and the file whole */
	write_file("cut.safetensors", buf, len);
	assert_int_equal(safetensors_open(&st, path, err, sizeof(err)),
	    TS_OK);
	safetensors_close(st);
	snprintf(path, sizeof(path), "%s/absent.safetensors", dir);
	assert_int_equal(safetensors_open(&st, path, err, sizeof(err)),
	    TS_ESYS);
	assert_int_equal(errno, ENOENT);
}

static void
test_header_size(void **unused)
{
	unsigned char buf[64];
	struct safetensors *st;
	size_t len;

	(void)unused;
	len = image(buf, sizeof(buf), "{}", 0);
	/* N past the end of the file */
	buf[0] = 3;
	assert_int_equal(safetensors_parse(&st, buf, len, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "past the end"));
	/* N over the limit: 2^40 */
	buf[0] = 2;
	buf[5] = 1;
	assert_int_equal(safetensors_parse(&st, buf, len, err, sizeof(err)),
	    TS_ELIMIT);
	assert_non_null(strstr(err, "over the limit"));
	/* N = 2^64 - 1 */
	memset(buf, 0xff, 8);
	assert_int_equal(safetensors_parse(&st, buf, len, err, sizeof(err)),
	    TS_ELIMIT);
}

static void
test_header_json(void **unused)
{
	(void)unused;
	expect_error("{\"a\":", 0, TS_EFORMAT, "not valid JSON");
	expect_error("{} x", 0, TS_EFORMAT, "not valid JSON");
	expect_error(" {}", 0, TS_EFORMAT, "begin with '{'");
	expect_error("[1]", 0, TS_EFORMAT, "begin with '{'");
	expect_error("{\"a\":1}", 0, TS_EFORMAT, "not a JSON object");
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
	    TS_EFORMAT, "data_offsets");
	expect_error("{\"__metadata__\":{\"k\":1}}", 0, TS_EFORMAT,
	    "__metadata__ 'k' is not a string");
	expect_error("{\"__metadata__\":[]}", 0, TS_EFORMAT,
	    "__metadata__ is not");
	/* duplicate names (README: "Duplicate keys are disallowed") */
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[4,8]}}", 8, TS_EFORMAT, "duplicate");
}

static void
test_offsets(void **unused)
{
	(void)unused;
	/* overlap */
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
	    "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[4,8]}}", 8, TS_EFORMAT, "overlap");
	/* the same range twice */
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[0,4]}}", 4, TS_EFORMAT, "overlap");
	/* a hole between tensors */
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[8,12]}}", 12, TS_EFORMAT,
	    "bytes [4, 8) of the buffer belong to no tensor");
	/* a hole at the start */
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[4,8]}}", 8, TS_EFORMAT, "hole before 'a'");
	/* bytes after the last tensor */
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[0,4]}}", 5, TS_EFORMAT, "at the end");
	/* past the buffer */
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
	    "\"data_offsets\":[0,8]}}", 4, TS_EFORMAT, "past the end of the "
	    "4-byte buffer");
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[4,0]}}", 4, TS_EFORMAT, "BEGIN <= END");
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[-4,0]}}", 4, TS_EFORMAT, "BEGIN <= END");
	expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
	    "\"data_offsets\":[0,4,8]}}", 4, TS_EFORMAT, "BEGIN <= END");
}

static void
test_dtype_and_shape(void **unused)
{
	(void)unused;
	expect_error("{\"w\":{\"dtype\":\"F64\",\"shape\":[1],"
	    "\"data_offsets\":[0,8]}}", 8, TS_EFORMAT,
	    "tensor 'w': dtype F64 is not supported");
	expect_error("{\"q\":{\"dtype\":\"I8\",\"shape\":[1],"
	    "\"data_offsets\":[0,1]}}", 1, TS_EFORMAT, "dtype I8");
	expect_error("{\"q\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],"
	    "\"data_offsets\":[0,1]}}", 1, TS_EFORMAT, "dtype F8_E4M3");
	expect_error("{\"q\":{\"dtype\":\"BOOL\",\"shape\":[1],"
	    "\"data_offsets\":[0,1]}}", 1, TS_EFORMAT, "dtype BOOL");
	expect_error("{\"q\":{\"dtype\":\"f32\",\"shape\":[1],"
	    "\"data_offsets\":[0,4]}}", 4, TS_EFORMAT, "dtype f32");
	expect_error("{\"w\":{\"dtype\":\"F16\",\"shape\":[2,3],"
	    "\"data_offsets\":[0,8]}}", 8, TS_EFORMAT,
	    "shape [2, 3] of F16 is 12 bytes but data_offsets [0, 8] span 8");
	expect_error("{\"w\":{\"dtype\":\"F16\",\"shape\":[-1],"
	    "\"data_offsets\":[0,0]}}", 0, TS_EFORMAT, "shape[0]");
	expect_error("{\"w\":{\"dtype\":\"F16\",\"shape\":[1.5],"
	    "\"data_offsets\":[0,0]}}", 0, TS_EFORMAT, "shape[0]");
	expect_error("{\"w\":{\"dtype\":\"F32\",\"shape\":"
	    "[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0,
	    TS_ELIMIT, "too large");
	expect_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
	    "\"data_offsets\":[0,4]}}", 4, TS_ELIMIT, "9 dimensions");
	expect_error("{\"w\":{\"dtype\":3,\"shape\":[1],"
	    "\"data_offsets\":[0,4]}}", 4, TS_EFORMAT, "string dtype");
}

/* Writes a shard of one F32 tensor `name` = {v}. */
static void
write_shard(const char *file, const char *name, float v)
{
	struct st_write_tensor w = { name, MODEL_DTYPE_F32, 1, { 1 }, &v };
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	assert_int_equal(safetensors_write(p, &w, 1, NULL, 0, err,
	    sizeof(err)), TS_OK);
}

static void
write_index(const char *weight_map)
{
	char text[1024];

	snprintf(text, sizeof(text), "{\"metadata\":{\"total_size\":8},"
	    "\"weight_map\":%s}", weight_map);
	write_file("model.safetensors.index.json", text, strlen(text));
}

static void
test_set_with_index(void **unused)
{
	struct safetensors_set *s;
	const struct st_tensor *t;
	float v;

	(void)unused;
	write_shard("model-00001-of-00002.safetensors", "a", 1.0f);
	write_shard("model-00002-of-00002.safetensors", "b", 2.0f);
	write_index("{\"b\":\"model-00002-of-00002.safetensors\","
	    "\"a\":\"model-00001-of-00002.safetensors\"}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_OK);
	assert_int_equal(safetensors_set_files(s), 2);
	assert_int_equal(safetensors_set_count(s), 2);
	assert_string_equal(safetensors_set_at(s, 0)->name, "a");
	assert_string_equal(safetensors_set_at(s, 1)->name, "b");
	t = safetensors_set_find(s, "b");
	assert_non_null(t);
	st_to_f32(t->dtype, t->data, 1, &v);
	assert_true(v == 2.0f);
	t = safetensors_set_find(s, "a");
	st_to_f32(t->dtype, t->data, 1, &v);
	assert_true(v == 1.0f);
	assert_null(safetensors_set_find(s, "c"));
	safetensors_set_close(s);
	safetensors_set_close(NULL);

	/* a tensor in a shard but not in the map is not in the set */
	write_index("{\"a\":\"model-00001-of-00002.safetensors\"}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_OK);
	assert_int_equal(safetensors_set_files(s), 1);
	assert_null(safetensors_set_find(s, "b"));
	safetensors_set_close(s);
}

static void
test_set_errors(void **unused)
{
	struct safetensors_set *s = (struct safetensors_set *)&s;

	(void)unused;
	/* nothing at all */
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_ESYS);
	assert_null(s);
	assert_non_null(strstr(err, "no model.safetensors or "
	    "model.safetensors.index.json"));

	write_shard("model-00001-of-00002.safetensors", "a", 1.0f);
	write_shard("model-00002-of-00002.safetensors", "b", 2.0f);
	/* a missing shard */
	write_index("{\"a\":\"model-00001-of-00002.safetensors\","
	    "\"c\":\"model-00003-of-00003.safetensors\"}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_ESYS);
	assert_non_null(strstr(err, "model-00003-of-00003.safetensors: "
	    "cannot open"));
	/* a tensor not where the map puts it */
	write_index("{\"a\":\"model-00002-of-00002.safetensors\","
	    "\"b\":\"model-00002-of-00002.safetensors\"}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "tensor 'a' is not in "
	    "model-00002-of-00002.safetensors"));
	/* names outside the folder */
	write_index("{\"a\":\"../x.safetensors\"}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "'../x.safetensors', which is not a "
	    "plain file name"));
	write_index("{\"a\":\"/etc/passwd\"}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_EFORMAT);
	write_index("{\"a\":\"..\"}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "'..', which is not a plain file name"));
	write_index("{\"a\":\".hidden\"}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "not a plain file name"));
	write_index("{\"a\":\"sub\\\\x\"}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_EFORMAT);
	write_index("{\"a\":\"x\\u0000y\"}");
	assert_int_not_equal(safetensors_set_open_dir(&s, dir, err,
	    sizeof(err)), TS_OK);
	write_index("{\"a\":7}");
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "a non-string"));
	/* no weight_map; not JSON */
	write_file("model.safetensors.index.json", "{}", 2);
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "weight_map"));
	write_file("model.safetensors.index.json", "{", 1);
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "not valid JSON"));
	assert_null(s);
}

static void
test_single_file_set(void **unused)
{
	struct safetensors_set *s;

	(void)unused;
	write_shard("model.safetensors", "only", 5.0f);
	assert_int_equal(safetensors_set_open_dir(&s, dir, err, sizeof(err)),
	    TS_OK);
	assert_int_equal(safetensors_set_files(s), 1);
	assert_non_null(safetensors_set_find(s, "only"));
	safetensors_set_close(s);
}

static float
from_bits(uint32_t x)
{
	float f;

	memcpy(&f, &x, sizeof(f));
	return f;
}

static void
test_f16_rounding(void **unused)
{
	uint32_t h;

	(void)unused;
	assert_int_equal(st_f32_to_f16(1.0f), 0x3c00);
	assert_int_equal(st_f32_to_f16(-2.0f), 0xc000);
	assert_int_equal(st_f32_to_f16(0.0f), 0x0000);
	assert_int_equal(st_f32_to_f16(-0.0f), 0x8000);
	assert_int_equal(st_f32_to_f16(65504.0f), 0x7bff);
	assert_int_equal(st_f32_to_f16(65519.0f), 0x7bff);
	assert_int_equal(st_f32_to_f16(65520.0f), 0x7c00);  /* tie: up */
	assert_int_equal(st_f32_to_f16(1e10f), 0x7c00);
	assert_int_equal(st_f32_to_f16(-INFINITY), 0xfc00);
	/* ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 */
	assert_int_equal(st_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
	assert_int_equal(st_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
	assert_int_equal(st_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
	/* subnormals */
	assert_int_equal(st_f32_to_f16(0x1p-24f), 0x0001);
	assert_int_equal(st_f32_to_f16(0x1p-25f), 0x0000);    /* tie: even */
	assert_int_equal(st_f32_to_f16(3 * 0x1p-26f), 0x0001);
	assert_int_equal(st_f32_to_f16(3 * 0x1p-25f), 0x0002); /* tie: even */
	assert_int_equal(st_f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400);
	assert_int_equal(st_f32_to_f16(1e-30f), 0x0000);
	assert_true(isnan(st_f16_to_f32(st_f32_to_f16(NAN))));
	/* every half survives f16 -> f32 -> f16 */
	for (h = 0; h < 0x10000u; h++) {
		float f = st_f16_to_f32((uint16_t)h);

		if (isnan(f))
			continue;
		if (st_f32_to_f16(f) != h)
			fail_msg("f16 0x%04x -> %g -> 0x%04x", h, f,
			    st_f32_to_f16(f));
	}
	assert_true(st_f16_to_f32(0x0001) == 0x1p-24f);
	assert_true(st_f16_to_f32(0x7bff) == 65504.0f);
	assert_true(isinf(st_f16_to_f32(0x7c00)));
}

static void
test_bf16_rounding(void **unused)
{
	uint32_t h;

	(void)unused;
	assert_int_equal(st_f32_to_bf16(1.0f), 0x3f80);
	assert_int_equal(st_f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);
	assert_int_equal(st_f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);
	assert_int_equal(st_f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);
	assert_int_equal(st_f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);
	assert_true(isnan(st_bf16_to_f32(st_f32_to_bf16(NAN))));
	for (h = 0; h < 0x10000u; h++) {
		float f = st_bf16_to_f32((uint16_t)h);

		if (!isnan(f) && st_f32_to_bf16(f) != h)
			fail_msg("bf16 0x%04x does not survive", h);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_hand_built_image, per_test_clean),
		cmocka_unit_test_setup(test_shapes_accepted, per_test_clean),
		cmocka_unit_test_setup(test_write_round_trip, per_test_clean),
		cmocka_unit_test_setup(test_write_exact_bytes, per_test_clean),
		cmocka_unit_test_setup(test_every_prefix, per_test_clean),
		cmocka_unit_test_setup(test_header_size, per_test_clean),
		cmocka_unit_test_setup(test_header_json, per_test_clean),
		cmocka_unit_test_setup(test_offsets, per_test_clean),
		cmocka_unit_test_setup(test_dtype_and_shape, per_test_clean),
		cmocka_unit_test_setup(test_set_with_index, per_test_clean),
		cmocka_unit_test_setup(test_set_errors, per_test_clean),
		cmocka_unit_test_setup(test_single_file_set, per_test_clean),
		cmocka_unit_test(test_f16_rounding),
		cmocka_unit_test(test_bf16_rounding),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
