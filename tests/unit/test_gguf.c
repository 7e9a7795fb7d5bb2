/*
 * test_gguf.c - GGUF files (src/model/gguf.c): the writer and the reader
 * in a round trip of every value type and several tensor types (offsets,
 * alignment, data); a file built here byte by byte, independently of the
 * writer, read back; and the reader's refusals, each with its message
 * and never a crash: wrong magic, versions 1, 4 and big-endian, every
 * prefix of a small file, tensor data out of bounds, unaligned offsets,
 * unknown types, n_dims 0 and 5, counts and lengths far beyond a tiny
 * file, duplicates, type mismatches in the getters.
 *
 * Spec: ggml docs/gguf.md "File Structure".
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/dtype.h"
#include "model/gguf.h"

static char dir[256];

static void
tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* ---- a byte builder, independent of the writer ----------------------- */

struct img {
	uint8_t b[8192];
	size_t len;
};

static void
b_bytes(struct img *m, const void *p, size_t n)
{
	assert_true(m->len + n <= sizeof(m->b));
	memcpy(m->b + m->len, p, n);
	m->len += n;
}

static void
b_u8(struct img *m, uint8_t v)
{
	b_bytes(m, &v, 1);
}

static void
b_u32(struct img *m, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		b_u8(m, (uint8_t)(v >> (8 * i)));
}

static void
b_u64(struct img *m, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		b_u8(m, (uint8_t)(v >> (8 * i)));
}

static void
b_str(struct img *m, const char *s)
{
	b_u64(m, strlen(s));
	b_bytes(m, s, strlen(s));
}

static void
b_f32(struct img *m, float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	b_u32(m, u);
}

static void
b_pad(struct img *m, size_t align)
{
	while (m->len % align != 0)
		b_u8(m, 0);
}

static void
b_header(struct img *m, uint32_t version, uint64_t n_t, uint64_t n_kv)
{
	m->len = 0;
	b_bytes(m, "GGUF", 4);
	b_u32(m, version);
	b_u64(m, n_t);
	b_u64(m, n_kv);
}

/* one tensor info: name, n_dims, dims, type, offset */
static void
b_tensor(struct img *m, const char *name, uint32_t n_dims,
    const uint64_t *dims, uint32_t type, uint64_t offset)
{
	uint32_t d;

	b_str(m, name);
	b_u32(m, n_dims);
	for (d = 0; d < n_dims; d++)
		b_u64(m, dims[d]);
	b_u32(m, type);
	b_u64(m, offset);
}

/*
 * The hand-built file: version `version`, 4 keys (a string,
 * general.alignment 16, an array of arrays, a bool) and 2 tensors: "a"
 * f32 [2, 3] at 0 (24 bytes) and "b" q8_0 [32] at 32 (34 bytes).
 */
static void
hand_built(struct img *m, uint32_t version)
{
	static const uint64_t da[] = { 2, 3 }, db[] = { 32 };
	int i;

	b_header(m, version, 2, 4);
	b_str(m, "general.architecture");
	b_u32(m, GGUF_TYPE_STR);
	b_str(m, "llama");
	b_str(m, "general.alignment");
	b_u32(m, GGUF_TYPE_U32);
	b_u32(m, 16);
	b_str(m, "x.nested");           /* [[1, 2], ["hi"]] */
	b_u32(m, GGUF_TYPE_ARR);
	b_u32(m, GGUF_TYPE_ARR);
	b_u64(m, 2);
	b_u32(m, GGUF_TYPE_U8);
	b_u64(m, 2);
	b_u8(m, 1);
	b_u8(m, 2);
	b_u32(m, GGUF_TYPE_STR);
	b_u64(m, 1);
	b_str(m, "hi");
	b_str(m, "x.flag");
	b_u32(m, GGUF_TYPE_BOOL);
	b_u8(m, 1);
	b_tensor(m, "a", 2, da, MODEL_DTYPE_F32, 0);
	b_tensor(m, "b", 1, db, MODEL_DTYPE_Q8_0, 32);
	b_pad(m, 16);
	for (i = 0; i < 6; i++)
		b_f32(m, (float)i);
	b_pad(m, 16);
	for (i = 0; i < 34; i++)
		b_u8(m, (uint8_t)(0x40 + i));
}

/* Parses (p, len) from an allocation of exactly len bytes, so that an
 * address sanitizer sees any read past the end. */
static enum ts_err
parse_exact(struct gguf **g, const void *p, size_t len, char *err,
    size_t errlen)
{
	void *copy = malloc(len ? len : 1);
	enum ts_err rc;

	assert_non_null(copy);
	memcpy(copy, p, len);
	rc = gguf_parse(g, copy, len, err, errlen);
	if (rc == TS_OK) {
		/* the result borrows the image: keep it for the caller's
		 * checks by parsing the caller's copy instead */
		gguf_close(*g);
		rc = gguf_parse(g, p, len, err, errlen);
		assert_int_equal(rc, TS_OK);
	}
	free(copy);
	return rc;
}

/* Expects the image refused with TS_EFORMAT and a message containing
 * `want`. */
static void
expect_refused(const struct img *m, const char *want)
{
	struct gguf *g = (struct gguf *)1;
	char err[512] = "";
	enum ts_err rc = parse_exact(&g, m->b, m->len, err, sizeof(err));

	if (rc != TS_EFORMAT || strstr(err, want) == NULL)
		fail_msg("want TS_EFORMAT with \"%s\", got %d: \"%s\"", want,
		    (int)rc, err);
	assert_null(g);
}

static int
setup(void **unused)
{
	(void)unused;
	snprintf(dir, sizeof(dir), "/tmp/ts-gguf-test.XXXXXX");
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int
teardown(void **unused)
{
	static const char *const names[] = { "all.gguf", "a64.gguf",
		"empty.gguf", "vocab.gguf", "hand.gguf" };
	char p[300];
	size_t i;

	(void)unused;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		tmp_path(p, sizeof(p), names[i]);
		unlink(p);
	}
	rmdir(dir);
	return 0;
}

/* ---- the round trip ---------------------------------------------------- */

static float f32_data[12];
static uint8_t q8_data[2 * 34];
static uint16_t f16_data[5];
static uint8_t q4k_data[2 * 144];

static void
fill_data(void)
{
	size_t i;

	for (i = 0; i < 12; i++)
		f32_data[i] = (float)i * 0.25f - 1.0f;
	for (i = 0; i < sizeof(q8_data); i++)
		q8_data[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < 5; i++)
		f16_data[i] = (uint16_t)(0x3c00 + i);
	for (i = 0; i < sizeof(q4k_data); i++)
		q4k_data[i] = (uint8_t)(255 - i);
}

/* Every value type, and five tensors of four types. */
static struct gguf_writer *
all_types_writer(uint32_t alignment)
{
	static const char *const strs[] = { "", "x", "yz" };
	static const float fa[] = { 0.5f, -1.0f };
	static const int32_t ia[] = { -1, 7 };
	static const uint32_t ua[] = { 1, 2, 3 };
	static const uint8_t u8a[] = { 0, 255 };
	static const int8_t i8a[] = { -128, 127 };
	static const uint16_t u16a[] = { 65535 };
	static const int16_t i16a[] = { -32768 };
	static const uint64_t u64a[] = { 1ull << 40, 5 };
	static const int64_t i64a[] = { -5, 1ll << 50 };
	static const double f64a[] = { 0.125, 1e300 };
	static const uint8_t ba[] = { 1, 0, 1 };
	static const uint64_t d_f32[] = { 4, 3 }, d_q8[] = { 32, 2 },
	    d_f16[] = { 5 }, d_q4k[] = { 256, 1, 1, 2 }, d_empty[] = { 0, 7 };
	struct img nested;
	struct gguf_writer *w = gguf_writer_new(alignment);

	assert_non_null(w);
	fill_data();
	assert_int_equal(gguf_writer_set_u8(w, "t.u8", 200), TS_OK);
	assert_int_equal(gguf_writer_set_i8(w, "t.i8", -100), TS_OK);
	assert_int_equal(gguf_writer_set_u16(w, "t.u16", 60000), TS_OK);
	assert_int_equal(gguf_writer_set_i16(w, "t.i16", -30000), TS_OK);
	assert_int_equal(gguf_writer_set_u32(w, "t.u32", 4000000000u), TS_OK);
	assert_int_equal(gguf_writer_set_i32(w, "t.i32", -2000000000),
	    TS_OK);
	assert_int_equal(gguf_writer_set_u64(w, "t.u64", (1ull << 40) + 3),
	    TS_OK);
	assert_int_equal(gguf_writer_set_i64(w, "t.i64", -(1ll << 40)),
	    TS_OK);
	assert_int_equal(gguf_writer_set_f32(w, "t.f32", 1.5f), TS_OK);
	assert_int_equal(gguf_writer_set_f64(w, "t.f64", 2.25), TS_OK);
	assert_int_equal(gguf_writer_set_bool(w, "t.bool", 1), TS_OK);
	assert_int_equal(gguf_writer_set_str(w, "t.str", "hello"), TS_OK);
	assert_int_equal(gguf_writer_set_strn(w, "t.strn", "a\0b", 3), TS_OK);
	assert_int_equal(gguf_writer_set_arr_str(w, "t.arr_str", strs, NULL,
	    3), TS_OK);
	assert_int_equal(gguf_writer_set_arr_f32(w, "t.arr_f32", fa, 2),
	    TS_OK);
	assert_int_equal(gguf_writer_set_arr_i32(w, "t.arr_i32", ia, 2),
	    TS_OK);
	assert_int_equal(gguf_writer_set_arr_u32(w, "t.arr_u32", ua, 3),
	    TS_OK);
	assert_int_equal(gguf_writer_set_arr(w, "t.arr_u8", GGUF_TYPE_U8,
	    u8a, 2), TS_OK);
	assert_int_equal(gguf_writer_set_arr(w, "t.arr_i8", GGUF_TYPE_I8,
	    i8a, 2), TS_OK);
	assert_int_equal(gguf_writer_set_arr(w, "t.arr_u16", GGUF_TYPE_U16,
	    u16a, 1), TS_OK);
	assert_int_equal(gguf_writer_set_arr(w, "t.arr_i16", GGUF_TYPE_I16,
	    i16a, 1), TS_OK);
	assert_int_equal(gguf_writer_set_arr(w, "t.arr_u64", GGUF_TYPE_U64,
	    u64a, 2), TS_OK);
	assert_int_equal(gguf_writer_set_arr(w, "t.arr_i64", GGUF_TYPE_I64,
	    i64a, 2), TS_OK);
	assert_int_equal(gguf_writer_set_arr(w, "t.arr_f64", GGUF_TYPE_F64,
	    f64a, 2), TS_OK);
	assert_int_equal(gguf_writer_set_arr(w, "t.arr_bool", GGUF_TYPE_BOOL,
	    ba, 3), TS_OK);
	assert_int_equal(gguf_writer_set_arr_str(w, "t.arr_empty", NULL, NULL,
	    0), TS_OK);
	/* an array of arrays, encoded by hand: [[7], []] of u32 */
	nested.len = 0;
	b_u32(&nested, GGUF_TYPE_ARR);
	b_u64(&nested, 2);
	b_u32(&nested, GGUF_TYPE_U32);
	b_u64(&nested, 1);
	b_u32(&nested, 7);
	b_u32(&nested, GGUF_TYPE_U32);
	b_u64(&nested, 0);
	assert_int_equal(gguf_writer_set_raw(w, "t.nested", GGUF_TYPE_ARR,
	    nested.b, nested.len), TS_OK);
	assert_int_equal(gguf_writer_add_tensor(w, "tok_embd.weight",
	    MODEL_DTYPE_F32, 2, d_f32, f32_data), TS_OK);
	assert_int_equal(gguf_writer_add_tensor(w, "blk.0.attn_q.weight",
	    MODEL_DTYPE_Q8_0, 2, d_q8, q8_data), TS_OK);
	assert_int_equal(gguf_writer_add_tensor(w, "blk.0.attn_norm.weight",
	    MODEL_DTYPE_F16, 1, d_f16, f16_data), TS_OK);
	assert_int_equal(gguf_writer_add_tensor(w, "blk.0.ffn_down.weight",
	    MODEL_DTYPE_Q4_K, 4, d_q4k, q4k_data), TS_OK);
	assert_int_equal(gguf_writer_add_tensor(w, "empty", MODEL_DTYPE_F32,
	    2, d_empty, NULL), TS_OK);
	return w;
}

/* The keys in insertion order, with their types. */
static const struct {
	const char *key;
	uint32_t type, arr_type;
	uint64_t arr_n;
} all_keys[] = {
	{ "t.u8", GGUF_TYPE_U8, 0, 0 },
	{ "t.i8", GGUF_TYPE_I8, 0, 0 },
	{ "t.u16", GGUF_TYPE_U16, 0, 0 },
	{ "t.i16", GGUF_TYPE_I16, 0, 0 },
	{ "t.u32", GGUF_TYPE_U32, 0, 0 },
	{ "t.i32", GGUF_TYPE_I32, 0, 0 },
	{ "t.u64", GGUF_TYPE_U64, 0, 0 },
	{ "t.i64", GGUF_TYPE_I64, 0, 0 },
	{ "t.f32", GGUF_TYPE_F32, 0, 0 },
	{ "t.f64", GGUF_TYPE_F64, 0, 0 },
	{ "t.bool", GGUF_TYPE_BOOL, 0, 0 },
	{ "t.str", GGUF_TYPE_STR, 0, 0 },
	{ "t.strn", GGUF_TYPE_STR, 0, 0 },
	{ "t.arr_str", GGUF_TYPE_ARR, GGUF_TYPE_STR, 3 },
	{ "t.arr_f32", GGUF_TYPE_ARR, GGUF_TYPE_F32, 2 },
	{ "t.arr_i32", GGUF_TYPE_ARR, GGUF_TYPE_I32, 2 },
	{ "t.arr_u32", GGUF_TYPE_ARR, GGUF_TYPE_U32, 3 },
	{ "t.arr_u8", GGUF_TYPE_ARR, GGUF_TYPE_U8, 2 },
	{ "t.arr_i8", GGUF_TYPE_ARR, GGUF_TYPE_I8, 2 },
	{ "t.arr_u16", GGUF_TYPE_ARR, GGUF_TYPE_U16, 1 },
	{ "t.arr_i16", GGUF_TYPE_ARR, GGUF_TYPE_I16, 1 },
	{ "t.arr_u64", GGUF_TYPE_ARR, GGUF_TYPE_U64, 2 },
	{ "t.arr_i64", GGUF_TYPE_ARR, GGUF_TYPE_I64, 2 },
	{ "t.arr_f64", GGUF_TYPE_ARR, GGUF_TYPE_F64, 2 },
	{ "t.arr_bool", GGUF_TYPE_ARR, GGUF_TYPE_BOOL, 3 },
	{ "t.arr_empty", GGUF_TYPE_ARR, GGUF_TYPE_STR, 0 },
	{ "t.nested", GGUF_TYPE_ARR, GGUF_TYPE_ARR, 2 },
};
#define N_ALL_KEYS (sizeof(all_keys) / sizeof(all_keys[0]))

/* Checks the five tensors of all_types_writer at the given alignment:
 * each at the next aligned offset after the one before, with its data. */
static void
check_all_tensors(const struct gguf *g, uint32_t align)
{
	static const struct {
		const char *name;
		uint32_t type, n_dims;
		uint64_t dims[4], bytes;
	} want[] = {
		{ "tok_embd.weight", MODEL_DTYPE_F32, 2, { 4, 3, 1, 1 }, 48 },
		{ "blk.0.attn_q.weight", MODEL_DTYPE_Q8_0, 2, { 32, 2, 1, 1 },
		    68 },
		{ "blk.0.attn_norm.weight", MODEL_DTYPE_F16, 1, { 5, 1, 1, 1 },
		    10 },
		{ "blk.0.ffn_down.weight", MODEL_DTYPE_Q4_K, 4,
		    { 256, 1, 1, 2 }, 288 },
		{ "empty", MODEL_DTYPE_F32, 2, { 0, 7, 1, 1 }, 0 },
	};
	const void *datas[] = { f32_data, q8_data, f16_data, q4k_data };
	const uint8_t *base;
	size_t len, i;
	uint64_t off = 0;

	base = gguf_image(g, &len);
	assert_int_equal(gguf_tensor_count(g), 5);
	assert_int_equal(gguf_data_offset(g) % align, 0);
	for (i = 0; i < 5; i++) {
		const struct gguf_tensor *t = gguf_tensor_at(g, i);

		assert_non_null(t);
		assert_ptr_equal(gguf_tensor_find(g, want[i].name), t);
		assert_int_equal(t->name_len, strlen(want[i].name));
		assert_memory_equal(t->name, want[i].name, t->name_len);
		assert_int_equal(t->type, want[i].type);
		assert_int_equal(t->n_dims, want[i].n_dims);
		assert_memory_equal(t->dims, want[i].dims, sizeof(t->dims));
		assert_int_equal(t->bytes, want[i].bytes);
		assert_int_equal(t->offset, off);
		assert_int_equal(t->offset % align, 0);
		assert_ptr_equal(t->data, base + gguf_data_offset(g) +
		    t->offset);
		assert_int_equal(((const uint8_t *)t->data - base) % align, 0);
		if (i < 4)
			assert_memory_equal(t->data, datas[i], t->bytes);
		off += (t->bytes + align - 1) / align * align;
	}
	/* the file ends after the last tensor's padded data */
	assert_int_equal(len, gguf_data_offset(g) + off);
	assert_null(gguf_tensor_at(g, 5));
	assert_null(gguf_tensor_find(g, "missing"));
	assert_null(gguf_tensor_find(g, "tok_embd"));
}

static void
test_round_trip_values(void **unused)
{
	struct gguf_writer *w = all_types_writer(0);
	struct gguf *g;
	struct gguf_kv_info kv;
	char path[300], err[512];
	const char *s, *ss[3];
	size_t len, ls[3], i;
	uint32_t u32, et;
	uint64_t u64, n;
	int32_t i32, ia[2];
	int64_t i64;
	float f, fa[2];
	int b;

	(void)unused;
	tmp_path(path, sizeof(path), "all.gguf");
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)), TS_OK);
	gguf_writer_free(w);
	if (gguf_open(&g, path, err, sizeof(err)) != TS_OK)
		fail_msg("%s", err);
	assert_int_equal(gguf_version(g), 3);
	assert_int_equal(gguf_alignment(g), 32);

	/* every key, in the order set, no general.alignment at 32 */
	assert_int_equal(gguf_kv_count(g), N_ALL_KEYS);
	for (i = 0; i < N_ALL_KEYS; i++) {
		assert_int_equal(gguf_kv_at(g, i, &kv), TS_OK);
		assert_int_equal(kv.key_len, strlen(all_keys[i].key));
		assert_memory_equal(kv.key, all_keys[i].key, kv.key_len);
		assert_int_equal(kv.type, all_keys[i].type);
		assert_int_equal(kv.arr_type, all_keys[i].arr_type);
		assert_int_equal(kv.arr_n, all_keys[i].arr_n);
	}
	assert_int_equal(gguf_kv_at(g, N_ALL_KEYS, &kv), TS_EINVAL);

	/* scalars, through every getter that takes them */
	assert_int_equal(gguf_get_u32(g, "t.u8", &u32, err, 512), TS_OK);
	assert_int_equal(u32, 200);
	assert_int_equal(gguf_get_i32(g, "t.i8", &i32, err, 512), TS_OK);
	assert_int_equal(i32, -100);
	assert_int_equal(gguf_get_i32(g, "t.u16", &i32, err, 512), TS_OK);
	assert_int_equal(i32, 60000);
	assert_int_equal(gguf_get_i64(g, "t.i16", &i64, err, 512), TS_OK);
	assert_int_equal(i64, -30000);
	assert_int_equal(gguf_get_u32(g, "t.u32", &u32, err, 512), TS_OK);
	assert_int_equal(u32, 4000000000u);
	assert_int_equal(gguf_get_i32(g, "t.i32", &i32, err, 512), TS_OK);
	assert_int_equal(i32, -2000000000);
	assert_int_equal(gguf_get_u64(g, "t.u64", &u64, err, 512), TS_OK);
	assert_int_equal(u64, (1ull << 40) + 3);
	assert_int_equal(gguf_get_i64(g, "t.u64", &i64, err, 512), TS_OK);
	assert_int_equal(i64, (1ll << 40) + 3);
	assert_int_equal(gguf_get_i64(g, "t.i64", &i64, err, 512), TS_OK);
	assert_int_equal(i64, -(1ll << 40));
	assert_int_equal(gguf_get_f32(g, "t.f32", &f, err, 512), TS_OK);
	assert_true(f == 1.5f);
	assert_int_equal(gguf_get_f32(g, "t.f64", &f, err, 512), TS_OK);
	assert_true(f == 2.25f);
	assert_int_equal(gguf_get_bool(g, "t.bool", &b, err, 512), TS_OK);
	assert_int_equal(b, 1);
	assert_int_equal(gguf_get_str(g, "t.str", &s, &len, err, 512), TS_OK);
	assert_int_equal(len, 5);
	assert_memory_equal(s, "hello", 5);
	assert_int_equal(gguf_get_str(g, "t.strn", &s, &len, err, 512),
	    TS_OK);
	assert_int_equal(len, 3);
	assert_memory_equal(s, "a\0b", 3);

	/* arrays: by index and in one pass */
	assert_int_equal(gguf_get_arr(g, "t.arr_str", &et, &n, err, 512),
	    TS_OK);
	assert_int_equal(et, GGUF_TYPE_STR);
	assert_int_equal(n, 3);
	assert_int_equal(gguf_arr_str(g, "t.arr_str", 2, &s, &len, err, 512),
	    TS_OK);
	assert_int_equal(len, 2);
	assert_memory_equal(s, "yz", 2);
	assert_int_equal(gguf_arr_str_fill(g, "t.arr_str", ss, ls, 3, err,
	    512), TS_OK);
	assert_int_equal(ls[0], 0);
	assert_int_equal(ls[1], 1);
	assert_memory_equal(ss[1], "x", 1);
	assert_ptr_equal(ss[2], s);
	assert_int_equal(gguf_arr_f32_fill(g, "t.arr_f32", fa, 2, err, 512),
	    TS_OK);
	assert_true(fa[0] == 0.5f && fa[1] == -1.0f);
	assert_int_equal(gguf_arr_f32(g, "t.arr_f64", 0, &f, err, 512), TS_OK);
	assert_true(f == 0.125f);
	assert_int_equal(gguf_arr_i32_fill(g, "t.arr_i32", ia, 2, err, 512),
	    TS_OK);
	assert_true(ia[0] == -1 && ia[1] == 7);
	assert_int_equal(gguf_arr_i32(g, "t.arr_u32", 2, &i32, err, 512),
	    TS_OK);
	assert_int_equal(i32, 3);
	assert_int_equal(gguf_arr_i32(g, "t.arr_u8", 1, &i32, err, 512),
	    TS_OK);
	assert_int_equal(i32, 255);
	assert_int_equal(gguf_arr_i32(g, "t.arr_i8", 0, &i32, err, 512),
	    TS_OK);
	assert_int_equal(i32, -128);
	assert_int_equal(gguf_arr_i32(g, "t.arr_u16", 0, &i32, err, 512),
	    TS_OK);
	assert_int_equal(i32, 65535);
	assert_int_equal(gguf_arr_i32(g, "t.arr_i16", 0, &i32, err, 512),
	    TS_OK);
	assert_int_equal(i32, -32768);
	assert_int_equal(gguf_arr_i32(g, "t.arr_u64", 1, &i32, err, 512),
	    TS_OK);
	assert_int_equal(i32, 5);
	assert_int_equal(gguf_arr_i32(g, "t.arr_i64", 0, &i32, err, 512),
	    TS_OK);
	assert_int_equal(i32, -5);
	assert_int_equal(gguf_get_arr(g, "t.arr_bool", &et, &n, err, 512),
	    TS_OK);
	assert_int_equal(et, GGUF_TYPE_BOOL);
	assert_int_equal(n, 3);
	assert_int_equal(gguf_get_arr(g, "t.arr_empty", &et, &n, err, 512),
	    TS_OK);
	assert_int_equal(n, 0);
	assert_int_equal(gguf_arr_str_fill(g, "t.arr_empty", ss, ls, 0, err,
	    512), TS_OK);
	assert_int_equal(gguf_get_arr(g, "t.nested", &et, &n, err, 512),
	    TS_OK);
	assert_int_equal(et, GGUF_TYPE_ARR);
	assert_int_equal(n, 2);

	check_all_tensors(g, 32);
	gguf_close(g);
}

/* The in-memory image is the file, byte for byte. */
static void
test_bytes_equal_file(void **unused)
{
	struct gguf_writer *w = all_types_writer(0);
	char path[300], err[512];
	void *img;
	size_t len;
	FILE *f;
	uint8_t *file;

	(void)unused;
	tmp_path(path, sizeof(path), "all.gguf");
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)), TS_OK);
	assert_int_equal(gguf_writer_bytes(w, &img, &len, err, sizeof(err)),
	    TS_OK);
	gguf_writer_free(w);
	file = malloc(len + 1);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(file, 1, len + 1, f), len);
	fclose(f);
	assert_memory_equal(file, img, len);
	free(file);
	free(img);
}

/* An alignment of 64: general.alignment is written (first, as u32) and
 * every offset is a multiple of 64. */
static void
test_alignment_64(void **unused)
{
	struct gguf_writer *w = all_types_writer(64);
	struct gguf *g;
	struct gguf_kv_info kv;
	char path[300], err[512];
	uint32_t a;

	(void)unused;
	assert_int_equal(gguf_writer_set_u32(w, GGUF_KEY_ALIGNMENT, 128),
	    TS_EINVAL);
	/* refused, so the writer refuses to write */
	tmp_path(path, sizeof(path), "a64.gguf");
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)),
	    TS_EINVAL);
	assert_non_null(strstr(err, "general.alignment is the writer's"));
	gguf_writer_free(w);

	w = all_types_writer(64);
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)), TS_OK);
	gguf_writer_free(w);
	if (gguf_open(&g, path, err, sizeof(err)) != TS_OK)
		fail_msg("%s", err);
	assert_int_equal(gguf_alignment(g), 64);
	assert_int_equal(gguf_kv_count(g), N_ALL_KEYS + 1);
	assert_int_equal(gguf_kv_at(g, 0, &kv), TS_OK);
	assert_int_equal(kv.type, GGUF_TYPE_U32);
	assert_memory_equal(kv.key, GGUF_KEY_ALIGNMENT, kv.key_len);
	assert_int_equal(gguf_get_u32(g, GGUF_KEY_ALIGNMENT, &a, err, 512),
	    TS_OK);
	assert_int_equal(a, 64);
	check_all_tensors(g, 64);
	gguf_close(g);

	assert_null(gguf_writer_new(48));
	assert_null(gguf_writer_new(GGUF_MAX_ALIGNMENT * 2));
}

/* The file built byte by byte above, as version 3 and version 2. */
static void
test_hand_built(void **unused)
{
	struct img m;
	struct gguf *g;
	char err[512];
	const char *s;
	size_t len;
	uint32_t u32, et, v;
	uint64_t n;
	int b;
	const struct gguf_tensor *t;
	float f;

	(void)unused;
	for (v = 2; v <= 3; v++) {
		hand_built(&m, v);
		if (parse_exact(&g, m.b, m.len, err, sizeof(err)) != TS_OK)
			fail_msg("version %u: %s", v, err);
		assert_int_equal(gguf_version(g), v);
		assert_int_equal(gguf_alignment(g), 16);
		assert_int_equal(gguf_kv_count(g), 4);
		assert_int_equal(gguf_get_str(g, "general.architecture", &s,
		    &len, err, 512), TS_OK);
		assert_int_equal(len, 5);
		assert_memory_equal(s, "llama", 5);
		assert_int_equal(gguf_get_u32(g, "general.alignment", &u32,
		    err, 512), TS_OK);
		assert_int_equal(u32, 16);
		assert_int_equal(gguf_get_arr(g, "x.nested", &et, &n, err,
		    512), TS_OK);
		assert_int_equal(et, GGUF_TYPE_ARR);
		assert_int_equal(n, 2);
		assert_int_equal(gguf_get_bool(g, "x.flag", &b, err, 512),
		    TS_OK);
		assert_int_equal(b, 1);
		assert_int_equal(gguf_data_offset(g) % 16, 0);
		assert_int_equal(gguf_tensor_count(g), 2);
		t = gguf_tensor_find(g, "a");
		assert_non_null(t);
		assert_int_equal(t->type, MODEL_DTYPE_F32);
		assert_int_equal(t->n_dims, 2);
		assert_int_equal(t->dims[0], 2);
		assert_int_equal(t->dims[1], 3);
		assert_int_equal(t->dims[2], 1);
		assert_int_equal(t->bytes, 24);
		assert_ptr_equal(t->data, m.b + gguf_data_offset(g));
		memcpy(&f, (const uint8_t *)t->data + 5 * 4, 4);
		assert_true(f == 5.0f);
		t = gguf_tensor_find(g, "b");
		assert_non_null(t);
		assert_ptr_equal(t, gguf_tensor_at(g, 1));
		assert_int_equal(t->type, MODEL_DTYPE_Q8_0);
		assert_int_equal(t->bytes, 34);
		assert_int_equal(t->offset, 32);
		assert_int_equal(((const uint8_t *)t->data)[33], 0x40 + 33);
		/* the last byte of the image is the last byte of "b" */
		assert_ptr_equal((const uint8_t *)t->data + 34, m.b + m.len);
		gguf_close(g);
	}
}

/* Magic, versions, byte order. */
static void
test_header_refusals(void **unused)
{
	struct gguf *g;
	struct img m;

	(void)unused;
	hand_built(&m, 3);
	memcpy(m.b, "GGML", 4);
	expect_refused(&m, "not a GGUF file (magic 'GGML')");
	memcpy(m.b, "\x7f" "ELF", 4);
	expect_refused(&m, "not a GGUF file (magic '\\x7fELF')");
	hand_built(&m, 1);
	expect_refused(&m, "GGUF version 1 is not supported");
	hand_built(&m, 4);
	expect_refused(&m, "GGUF version 4 is not supported");
	hand_built(&m, 0);
	expect_refused(&m, "GGUF version 0 is not supported");
	/* a big-endian file: version 3 stored as 00 00 00 03 */
	hand_built(&m, 0x03000000u);
	expect_refused(&m, "is version 3 byte-swapped: a big-endian file");
	m.len = 0;
	expect_refused(&m, "truncated at byte 0 reading the magic");
	/* no message buffer */
	hand_built(&m, 1);
	g = (struct gguf *)1;
	assert_int_equal(gguf_parse(&g, m.b, m.len, NULL, 0), TS_EFORMAT);
	assert_null(g);
}

/*
 * Every prefix of a small valid file is refused cleanly, up to the end
 * of its last tensor's data; from there (only trailing padding missing)
 * it is read.
 */
static void
test_every_prefix(void **unused)
{
	static const char *const toks[] = { "<s>", "</s>", "hello" };
	static const float scores[] = { 0, -1, -2.5f };
	static const uint64_t d1[] = { 3 }, d2[] = { 32, 1 };
	static const float t1[3] = { 1, 2, 3 };
	uint8_t t2[34];
	struct gguf_writer *w = gguf_writer_new(0);
	struct gguf *g;
	struct img nested;
	char err[512];
	void *img;
	size_t len, p, need, refused = 0;

	(void)unused;
	memset(t2, 0x11, sizeof(t2));
	nested.len = 0;
	b_u32(&nested, GGUF_TYPE_ARR);
	b_u64(&nested, 1);
	b_u32(&nested, GGUF_TYPE_STR);
	b_u64(&nested, 1);
	b_str(&nested, "in");
	gguf_writer_set_str(w, "general.architecture", "llama");
	gguf_writer_set_u32(w, "llama.block_count", 2);
	gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 3);
	gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores", scores, 3);
	gguf_writer_set_raw(w, "x.nested", GGUF_TYPE_ARR, nested.b,
	    nested.len);
	gguf_writer_add_tensor(w, "t1", MODEL_DTYPE_F32, 1, d1, t1);
	gguf_writer_add_tensor(w, "t2", MODEL_DTYPE_Q8_0, 2, d2, t2);
	assert_int_equal(gguf_writer_bytes(w, &img, &len, err, sizeof(err)),
	    TS_OK);
	gguf_writer_free(w);
	assert_int_equal(gguf_parse(&g, img, len, err, sizeof(err)), TS_OK);
	need = (size_t)(gguf_data_offset(g) + gguf_tensor_at(g, 1)->offset +
	    34);
	gguf_close(g);
	assert_true(need < len);        /* 34 bytes: 30 of padding follow */

	for (p = 0; p < len; p++) {
		enum ts_err rc;

		err[0] = '\0';
		g = (struct gguf *)1;
		rc = parse_exact(&g, img, p, err, sizeof(err));
		if (p < need) {
			if (rc != TS_EFORMAT || err[0] == '\0' ||
			    (strstr(err, "truncated at byte") == NULL &&
			    strstr(err, "cannot fit in the") == NULL &&
			    strstr(err, "ends past the end") == NULL))
				fail_msg("prefix %zu: rc %d: %s", p, (int)rc,
				    err);
			assert_null(g);
			refused++;
		} else {
			assert_int_equal(rc, TS_OK);
			gguf_close(g);
		}
	}
	assert_int_equal(refused, need);
	free(img);
}

/* A message that names the key whose value was cut. */
static void
test_truncated_names_key(void **unused)
{
	struct img m;

	(void)unused;
	b_header(&m, 3, 0, 1);
	b_str(&m, "tokenizer.ggml.tokens");
	b_u32(&m, GGUF_TYPE_ARR);
	b_u32(&m, GGUF_TYPE_STR);
	b_u64(&m, 2);
	b_str(&m, "ab");
	b_u64(&m, 5);
	b_bytes(&m, "cd", 2);
	expect_refused(&m, "truncated at byte 87 reading a string in the "
	    "value of key 'tokenizer.ggml.tokens' (needs 5 bytes, 2 left)");
}

/* Tensor infos: bounds, alignment, types, dims, duplicates. */
static void
test_tensor_refusals(void **unused)
{
	static const uint64_t d[] = { 4, 2 }, big[] = { 1ull << 62, 4 },
	    neg[] = { 1ull << 63 }, q[] = { 33 };
	struct img m;

	(void)unused;
	/* data of 32 bytes at offset 32 in a data section of 32 */
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "t", 2, d, MODEL_DTYPE_F32, 32);
	b_pad(&m, 32);
	b_bytes(&m, "0123456789abcdef0123456789abcdef", 32);
	expect_refused(&m, "tensor 't' data (32 bytes at offset 32) ends "
	    "past the end of the file");
	/* the same data one byte short */
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "t", 2, d, MODEL_DTYPE_F32, 0);
	b_pad(&m, 32);
	b_bytes(&m, "0123456789abcdef0123456789abcde", 31);
	expect_refused(&m, "tensor 't' data (32 bytes at offset 0) ends past");
	/* an offset near 2^64: no overflow in offset + bytes */
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "t", 2, d, MODEL_DTYPE_F32, UINT64_MAX - 31);
	b_pad(&m, 32);
	b_bytes(&m, "0123456789abcdef0123456789abcdef", 32);
	expect_refused(&m, "ends past the end of the file");
	/* an offset that is not a multiple of 32 */
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "t", 2, d, MODEL_DTYPE_F32, 8);
	expect_refused(&m, "tensor 't' has offset 8, not a multiple of the "
	    "alignment 32");
	/* unknown type numbers: past the table, and a removed one */
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "blk.0.attn_q.weight", 2, d, 99, 0);
	expect_refused(&m, "tensor 'blk.0.attn_q.weight' has unknown type 99");
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "t", 2, d, 4, 0);
	expect_refused(&m, "tensor 't' has unknown type 4");
	/* n_dims 0 and 5 */
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "t", 0, d, MODEL_DTYPE_F32, 0);
	b_pad(&m, 64);  /* past the tensor count's check of the size */
	expect_refused(&m, "tensor 't' has 0 dimensions");
	b_header(&m, 3, 1, 0);
	b_str(&m, "t");
	b_u32(&m, 5);
	b_pad(&m, 64);
	expect_refused(&m, "tensor 't' has 5 dimensions");
	/* rows not a multiple of the block */
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "t", 1, q, MODEL_DTYPE_Q8_0, 0);
	expect_refused(&m, "tensor 't' of type q8_0 has rows of 33 elements, "
	    "not a multiple of its block of 32");
	/* element counts past 2^63 - 1 */
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "t", 2, big, MODEL_DTYPE_F32, 0);
	expect_refused(&m, "tensor 't' has more than 2^63-1 elements");
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "t", 1, neg, MODEL_DTYPE_F32, 0);
	expect_refused(&m, "tensor 't' dim 0 is 9223372036854775808");
	/* the same name twice */
	b_header(&m, 3, 2, 0);
	b_tensor(&m, "w", 2, d, MODEL_DTYPE_F32, 0);
	b_tensor(&m, "w", 2, d, MODEL_DTYPE_F32, 32);
	b_pad(&m, 32);
	b_bytes(&m, "0123456789abcdef0123456789abcdef", 32);
	b_bytes(&m, "0123456789abcdef0123456789abcdef", 32);
	expect_refused(&m, "tensor 'w' appears twice (tensors 0 and 1)");
	/* a name longer than the spec's 64 bytes */
	b_header(&m, 3, 1, 0);
	b_tensor(&m, "a234567890123456789012345678901234567890123456789012"
	    "345678901234x", 2, d, MODEL_DTYPE_F32, 0);
	expect_refused(&m, "tensor name 0 at byte 24 is 65 bytes long (at "
	    "most 64)");
}

/* Counts and lengths far beyond a tiny file, refused before any
 * allocation they would size (one of 2^40 entries would abort). */
static void
test_huge_counts(void **unused)
{
	struct img m;

	(void)unused;
	b_header(&m, 3, 0, 1ull << 40);
	b_bytes(&m, "tiny", 4);
	expect_refused(&m, "kv count 1099511627776 cannot fit in the 4 bytes "
	    "after the header");
	b_header(&m, 3, UINT64_MAX, 0);
	expect_refused(&m, "tensor count 18446744073709551615 cannot fit");
	/* a string value of 2^62 bytes */
	b_header(&m, 3, 0, 1);
	b_str(&m, "k");
	b_u32(&m, GGUF_TYPE_STR);
	b_u64(&m, 1ull << 62);
	b_bytes(&m, "abc", 3);
	expect_refused(&m, "reading a string in the value of key 'k' (needs "
	    "4611686018427387904 bytes, 3 left)");
	/* a key of 2^62 bytes */
	b_header(&m, 3, 0, 1);
	b_u64(&m, 1ull << 62);
	b_bytes(&m, "abcdefgh", 8);
	expect_refused(&m, "key 0 at byte 24 is 4611686018427387904 bytes long "
	    "(at most 65535)");
	/* arrays of 2^60 u32, of 2^60 strings, of 2^60 arrays */
	b_header(&m, 3, 0, 1);
	b_str(&m, "k");
	b_u32(&m, GGUF_TYPE_ARR);
	b_u32(&m, GGUF_TYPE_U32);
	b_u64(&m, 1ull << 60);
	b_bytes(&m, "abcdefgh", 8);
	expect_refused(&m, "reading the 1152921504606846976 u32 elements of "
	    "key 'k' (needs 4611686018427387904 bytes, 8 left)");
	m.b[37] = GGUF_TYPE_STR;
	expect_refused(&m, "reading the 1152921504606846976 str elements");
	m.b[37] = GGUF_TYPE_ARR;
	expect_refused(&m, "reading the 1152921504606846976 arr elements");
}

/* Keys and values: duplicates, empty keys, unknown value types, bools,
 * the alignment, nesting. */
static void
test_kv_refusals(void **unused)
{
	struct img m;
	int i;

	(void)unused;
	b_header(&m, 3, 0, 2);
	b_str(&m, "a.b");
	b_u32(&m, GGUF_TYPE_U8);
	b_u8(&m, 1);
	b_str(&m, "a.b");
	b_u32(&m, GGUF_TYPE_U8);
	b_u8(&m, 2);
	expect_refused(&m, "key 'a.b' appears twice (kvs 0 and 1)");
	b_header(&m, 3, 0, 1);
	b_str(&m, "");
	b_u32(&m, GGUF_TYPE_U8);
	b_u8(&m, 1);
	b_u8(&m, 0);    /* past the kv count's check of the size */
	expect_refused(&m, "key 0 at byte 24 is empty");
	b_header(&m, 3, 0, 1);
	b_str(&m, "k");
	b_u32(&m, 13);
	b_u8(&m, 1);
	expect_refused(&m, "key 'k' has unknown value type 13 at byte 33");
	b_header(&m, 3, 0, 1);
	b_str(&m, "k");
	b_u32(&m, GGUF_TYPE_ARR);
	b_u32(&m, 77);
	b_u64(&m, 0);
	expect_refused(&m, "key 'k' has an array of unknown value type 77");
	b_header(&m, 3, 0, 1);
	b_str(&m, "k");
	b_u32(&m, GGUF_TYPE_BOOL);
	b_u8(&m, 2);
	expect_refused(&m, "key 'k' has a bool of 2 at byte 37 (a bool is 0 "
	    "or 1)");
	/* arrays nested 17 deep */
	b_header(&m, 3, 0, 1);
	b_str(&m, "k");
	b_u32(&m, GGUF_TYPE_ARR);
	for (i = 0; i < 17; i++) {
		b_u32(&m, GGUF_TYPE_ARR);
		b_u64(&m, 1);
	}
	b_u32(&m, GGUF_TYPE_U8);
	b_u64(&m, 0);
	expect_refused(&m, "key 'k' has arrays nested deeper than 16");
	/* alignment: 48, 0, a string */
	b_header(&m, 3, 0, 1);
	b_str(&m, "general.alignment");
	b_u32(&m, GGUF_TYPE_U32);
	b_u32(&m, 48);
	expect_refused(&m, "general.alignment is 48: not a power of two");
	m.b[m.len - 4] = 0;
	expect_refused(&m, "general.alignment is 0: not a power of two");
	b_header(&m, 3, 0, 1);
	b_str(&m, "general.alignment");
	b_u32(&m, GGUF_TYPE_STR);
	b_str(&m, "32");
	expect_refused(&m, "key 'general.alignment' is str, wanted u32");
	/* a key shown with its odd bytes escaped */
	b_header(&m, 3, 0, 2);
	b_str(&m, "k'\n");
	b_u32(&m, GGUF_TYPE_U8);
	b_u8(&m, 1);
	b_str(&m, "k'\n");
	b_pad(&m, 64);
	expect_refused(&m, "key 'k\\'\\x0a' appears twice");
}

/* Getters: absent keys, type mismatches, values that do not fit. */
static void
test_getter_errors(void **unused)
{
	struct gguf_writer *w = all_types_writer(0);
	struct gguf *g;
	char err[512];
	void *img;
	size_t len;
	const char *s, *ss[2];
	size_t ls[2];
	uint32_t u32 = 12345;
	uint64_t u64;
	int32_t i32;
	float f;
	int b;

	(void)unused;
	assert_int_equal(gguf_writer_set_f64(w, "t.f64big", 1e300), TS_OK);
	assert_int_equal(gguf_writer_bytes(w, &img, &len, err, sizeof(err)),
	    TS_OK);
	gguf_writer_free(w);
	assert_int_equal(gguf_parse(&g, img, len, err, sizeof(err)), TS_OK);

	assert_int_equal(gguf_get_u32(g, "no.such", &u32, err, 512),
	    TS_ENOENT);
	assert_string_equal(err, "no key 'no.such'");
	assert_int_equal(u32, 12345);
	assert_int_equal(gguf_get_str(g, "t.u32", &s, &len, err, 512),
	    TS_EFORMAT);
	assert_string_equal(err, "key 't.u32' is u32, wanted str");
	assert_int_equal(gguf_get_u32(g, "t.str", &u32, err, 512),
	    TS_EFORMAT);
	assert_string_equal(err, "key 't.str' is str, wanted u32");
	assert_int_equal(gguf_get_u32(g, "t.arr_str", &u32, err, 512),
	    TS_EFORMAT);
	assert_string_equal(err, "key 't.arr_str' is arr of str, wanted u32");
	assert_int_equal(gguf_get_u32(g, "t.i8", &u32, err, 512), TS_EFORMAT);
	assert_string_equal(err, "key 't.i8' is i8 -100, which does not fit "
	    "u32");
	assert_int_equal(gguf_get_u32(g, "t.u64", &u32, err, 512), TS_EFORMAT);
	assert_string_equal(err, "key 't.u64' is u64 1099511627779, which "
	    "does not fit u32");
	assert_int_equal(gguf_get_i32(g, "t.u32", &i32, err, 512), TS_EFORMAT);
	assert_int_equal(gguf_get_u64(g, "t.i64", &u64, err, 512), TS_EFORMAT);
	assert_int_equal(gguf_get_f32(g, "t.u32", &f, err, 512), TS_EFORMAT);
	assert_string_equal(err, "key 't.u32' is u32, wanted f32");
	assert_int_equal(gguf_get_f32(g, "t.f64big", &f, err, 512),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "which does not fit f32"));
	assert_int_equal(gguf_get_bool(g, "t.u8", &b, err, 512), TS_EFORMAT);
	assert_string_equal(err, "key 't.u8' is u8, wanted bool");
	assert_int_equal(gguf_get_arr(g, "t.str", &u32, &u64, err, 512),
	    TS_EFORMAT);
	assert_string_equal(err, "key 't.str' is str, wanted arr");
	assert_int_equal(gguf_arr_str(g, "t.arr_f32", 0, &s, &len, err, 512),
	    TS_EFORMAT);
	assert_string_equal(err, "key 't.arr_f32' is arr of f32, wanted arr "
	    "of str");
	assert_int_equal(gguf_arr_f32(g, "t.arr_i32", 0, &f, err, 512),
	    TS_EFORMAT);
	assert_int_equal(gguf_arr_i32(g, "t.arr_f32", 0, &i32, err, 512),
	    TS_EFORMAT);
	assert_int_equal(gguf_arr_i32(g, "t.arr_str", 0, &i32, err, 512),
	    TS_EFORMAT);
	assert_int_equal(gguf_arr_i32(g, "t.arr_u64", 0, &i32, err, 512),
	    TS_EFORMAT);
	assert_string_equal(err, "key 't.arr_u64' element 0 is u64 "
	    "1099511627776, which does not fit i32");
	assert_int_equal(gguf_arr_f32(g, "t.arr_f64", 1, &f, err, 512),
	    TS_EFORMAT);
	assert_int_equal(gguf_arr_str(g, "t.arr_str", 3, &s, &len, err, 512),
	    TS_EFORMAT);
	assert_string_equal(err, "key 't.arr_str' has 3 elements, no element "
	    "3");
	assert_int_equal(gguf_arr_str_fill(g, "t.arr_str", ss, ls, 2, err,
	    512), TS_EINVAL);
	assert_string_equal(err, "key 't.arr_str' has 3 elements, not 2");
	assert_int_equal(gguf_arr_str(g, "missing", 0, &s, &len, err, 512),
	    TS_ENOENT);
	assert_int_equal(gguf_arr_str(g, "t.nested", 0, &s, &len, err, 512),
	    TS_EFORMAT);
	assert_string_equal(err, "key 't.nested' is arr of arr, wanted arr "
	    "of str");
	/* a NULL err is allowed */
	assert_int_equal(gguf_get_u32(g, "missing", &u32, NULL, 0), TS_ENOENT);
	gguf_close(g);
	free(img);
}

/* A vocabulary-sized string array, read in one pass. */
static void
test_vocabulary(void **unused)
{
	enum { N = 20000 };
	struct gguf_writer *w = gguf_writer_new(0);
	struct gguf *g;
	char path[300], err[512], (*text)[16];
	const char **s = malloc(N * sizeof(*s)), **toks = malloc(N *
	    sizeof(*toks));
	size_t *len = malloc(N * sizeof(*len));
	float *scores = malloc(N * sizeof(*scores)), *back = malloc(N *
	    sizeof(*back));
	int32_t *types = malloc(N * sizeof(*types)), *tback = malloc(N *
	    sizeof(*tback));
	uint32_t et;
	uint64_t n;
	size_t i;

	(void)unused;
	text = malloc(N * sizeof(*text));
	for (i = 0; i < N; i++) {
		snprintf(text[i], sizeof(text[i]), "tok%zu", i * 7919);
		toks[i] = text[i];
		scores[i] = -(float)i;
		types[i] = (int32_t)(i % 6);
	}
	assert_int_equal(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens",
	    toks, NULL, N), TS_OK);
	assert_int_equal(gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores",
	    scores, N), TS_OK);
	assert_int_equal(gguf_writer_set_arr_i32(w,
	    "tokenizer.ggml.token_type", types, N), TS_OK);
	tmp_path(path, sizeof(path), "vocab.gguf");
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)), TS_OK);
	gguf_writer_free(w);
	if (gguf_open(&g, path, err, sizeof(err)) != TS_OK)
		fail_msg("%s", err);
	assert_int_equal(gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n,
	    err, 512), TS_OK);
	assert_int_equal(n, N);
	assert_int_equal(gguf_arr_str_fill(g, "tokenizer.ggml.tokens", s, len,
	    n, err, 512), TS_OK);
	assert_int_equal(gguf_arr_f32_fill(g, "tokenizer.ggml.scores", back,
	    N, err, 512), TS_OK);
	assert_int_equal(gguf_arr_i32_fill(g, "tokenizer.ggml.token_type",
	    tback, N, err, 512), TS_OK);
	for (i = 0; i < N; i++) {
		assert_int_equal(len[i], strlen(text[i]));
		assert_memory_equal(s[i], text[i], len[i]);
		assert_true(back[i] == scores[i]);
		assert_int_equal(tback[i], types[i]);
	}
	gguf_close(g);
	free(s);
	free(toks);
	free(len);
	free(scores);
	free(back);
	free(types);
	free(tback);
	free(text);
}

/* gguf_open: missing, empty, a directory; the path starts the message. */
static void
test_open_errors(void **unused)
{
	struct gguf *g;
	char path[300], err[512];
	FILE *f;

	(void)unused;
	tmp_path(path, sizeof(path), "missing.gguf");
	assert_int_equal(gguf_open(&g, path, err, sizeof(err)), TS_ESYS);
	assert_null(g);
	assert_int_equal(strncmp(err, path, strlen(path)), 0);
	assert_non_null(strstr(err, "cannot open"));
	tmp_path(path, sizeof(path), "empty.gguf");
	f = fopen(path, "wb");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(gguf_open(&g, path, err, sizeof(err)), TS_EFORMAT);
	assert_int_equal(strncmp(err, path, strlen(path)), 0);
	assert_non_null(strstr(err, ": truncated at byte 0 reading the magic"));
	assert_int_equal(gguf_open(&g, dir, err, sizeof(err)), TS_EFORMAT);
	assert_non_null(strstr(err, "not a regular file"));
	gguf_close(NULL);
}

/* The writer's refusals: the first is kept and reported by write. */
static void
test_writer_refusals(void **unused)
{
	static const uint64_t d33[] = { 33 }, d32[] = { 32 };
	static const float x[32];
	struct gguf_writer *w = gguf_writer_new(0);
	char path[300], err[512], name[80];
	void *img;
	size_t len;
	struct stat sb;

	(void)unused;
	assert_int_equal(gguf_writer_set_u32(w, "a", 1), TS_OK);
	assert_int_equal(gguf_writer_set_u32(w, "a", 2), TS_EINVAL);
	assert_int_equal(gguf_writer_set_str(w, "", "x"), TS_EINVAL);
	assert_int_equal(gguf_writer_add_tensor(w, "t", MODEL_DTYPE_Q8_0, 1,
	    d33, x), TS_EINVAL);
	assert_int_equal(gguf_writer_add_tensor(w, "t", 99, 1, d32, x),
	    TS_EINVAL);
	assert_int_equal(gguf_writer_add_tensor(w, "t", MODEL_DTYPE_F32, 0,
	    d32, x), TS_EINVAL);
	assert_int_equal(gguf_writer_add_tensor(w, "t", MODEL_DTYPE_F32, 5,
	    d32, x), TS_EINVAL);
	assert_int_equal(gguf_writer_add_tensor(w, "t", MODEL_DTYPE_F32, 1,
	    d32, NULL), TS_EINVAL);
	memset(name, 'n', 64);
	name[64] = '\0';
	assert_int_equal(gguf_writer_add_tensor(w, name, MODEL_DTYPE_F32, 1,
	    d32, x), TS_EINVAL);
	name[63] = '\0';
	assert_int_equal(gguf_writer_add_tensor(w, name, MODEL_DTYPE_F32, 1,
	    d32, x), TS_OK);
	assert_int_equal(gguf_writer_add_tensor(w, name, MODEL_DTYPE_F32, 1,
	    d32, x), TS_EINVAL);
	assert_int_equal(gguf_writer_set_raw(w, "r", GGUF_TYPE_U32, "abc", 3),
	    TS_EINVAL);
	assert_int_equal(gguf_writer_set_raw(w, "r", GGUF_TYPE_U8, "ab", 2),
	    TS_EINVAL);
	assert_int_equal(gguf_writer_set_arr(w, "r", GGUF_TYPE_STR, x, 1),
	    TS_EINVAL);
	assert_int_equal(gguf_writer_bytes(w, &img, &len, err, sizeof(err)),
	    TS_EINVAL);
	assert_null(img);
	assert_string_equal(err, "gguf writer: key 'a' set twice");
	tmp_path(path, sizeof(path), "refused.gguf");
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)),
	    TS_EINVAL);
	assert_string_equal(err, "gguf writer: key 'a' set twice");
	assert_int_equal(stat(path, &sb), -1);
	gguf_writer_free(w);
	gguf_writer_free(NULL);

	/* a file that cannot be created */
	w = gguf_writer_new(0);
	snprintf(path, sizeof(path), "%s/no/such/dir.gguf", dir);
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)),
	    TS_ESYS);
	assert_int_equal(strncmp(err, path, strlen(path)), 0);
	gguf_writer_free(w);
}

/*
 * Writing over a file another reader has mapped: the reader keeps the
 * old file whole (it was renamed over, not truncated), a new open sees
 * the new one, and no temporary file is left.
 */
static void
test_write_replaces(void **unused)
{
	static const uint64_t d[] = { 1024 };
	static float big[1024];
	struct gguf_writer *w = gguf_writer_new(0);
	struct gguf *old, *now;
	const struct gguf_tensor *t;
	char path[300], tmp[340], err[512];
	uint32_t v;
	struct stat sb;

	(void)unused;
	big[1023] = 7.0f;
	tmp_path(path, sizeof(path), "hand.gguf");
	gguf_writer_set_u32(w, "v", 1);
	gguf_writer_add_tensor(w, "big", MODEL_DTYPE_F32, 1, d, big);
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)), TS_OK);
	gguf_writer_free(w);
	if (gguf_open(&old, path, err, sizeof(err)) != TS_OK)
		fail_msg("%s", err);

	w = gguf_writer_new(0);
	gguf_writer_set_u32(w, "v", 2);
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)), TS_OK);
	gguf_writer_free(w);
	/* the old mapping: its key and the last byte of its tensor */
	assert_int_equal(gguf_get_u32(old, "v", &v, err, 512), TS_OK);
	assert_int_equal(v, 1);
	t = gguf_tensor_find(old, "big");
	assert_non_null(t);
	assert_memory_equal((const float *)t->data + 1023, &big[1023], 4);
	if (gguf_open(&now, path, err, sizeof(err)) != TS_OK)
		fail_msg("%s", err);
	assert_int_equal(gguf_get_u32(now, "v", &v, err, 512), TS_OK);
	assert_int_equal(v, 2);
	assert_int_equal(gguf_tensor_count(now), 0);
	gguf_close(now);
	gguf_close(old);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	assert_int_equal(stat(tmp, &sb), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_values),
		cmocka_unit_test(test_bytes_equal_file),
		cmocka_unit_test(test_alignment_64),
		cmocka_unit_test(test_hand_built),
		cmocka_unit_test(test_header_refusals),
		cmocka_unit_test(test_every_prefix),
		cmocka_unit_test(test_truncated_names_key),
		cmocka_unit_test(test_tensor_refusals),
		cmocka_unit_test(test_huge_counts),
		cmocka_unit_test(test_kv_refusals),
		cmocka_unit_test(test_getter_errors),
		cmocka_unit_test(test_vocabulary),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_writer_refusals),
		cmocka_unit_test(test_write_replaces),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
