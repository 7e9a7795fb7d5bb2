/*
 * fuzz_gguf.c - the GGUF reader (src/model/gguf.c) on arbitrary bytes,
 * then every getter on every key and tensor of what it accepted.
 *
 * Properties, each checked with abort():
 *  - gguf_parse never reads outside the image (the driver gives an
 *    allocation of exactly its size; the sanitizer build catches it),
 *    never crashes or hangs; a refusal is TS_EFORMAT with a non-empty
 *    message and no result;
 *  - an accepted file is version 2 or 3 with a power-of-two alignment;
 *    its data section starts aligned; every tensor has 1..4 dims, a
 *    known type, rows a multiple of its block, bytes = rows x row bytes,
 *    an aligned offset, data inside the image, and is what
 *    gguf_tensor_find gives for its name;
 *  - every key is found by its name, and its typed getter agrees with
 *    the type gguf_kv_at reports: strings and string arrays lie inside
 *    the image, every element of an array is read without error by the
 *    getter for its type.
 */
#include <string.h>

#include "fuzz.h"
#include "model/dtype.h"
#include "model/gguf.h"

static int
inside(const uint8_t *lo, size_t len, const void *p, uint64_t n)
{
	const uint8_t *q = p;

	return q >= lo && q <= lo + len && n <= (uint64_t)(lo + len - q);
}

/* A NUL-terminated copy of (s, len) when it has no NUL inside. */
static char *
cstr(const char *s, size_t len)
{
	char *c;

	if (memchr(s, '\0', len) != NULL)
		return NULL;
	c = malloc(len + 1);
	FUZZ_CHECK(c != NULL);
	memcpy(c, s, len);
	c[len] = '\0';
	return c;
}

static void
check_array(const struct gguf *g, const uint8_t *img, size_t len,
    const char *key, const struct gguf_kv_info *kv)
{
	uint32_t et;
	uint64_t n, i;
	char err[512];

	FUZZ_CHECK(gguf_get_arr(g, key, &et, &n, err, sizeof(err)) == TS_OK);
	FUZZ_CHECK(et == kv->arr_type && n == kv->arr_n);
	if (n > 4096)
		n = 4096;       /* bounded work per input */
	if (et == GGUF_TYPE_STR) {
		const char **s = malloc((kv->arr_n + 1) * sizeof(*s));
		size_t *l = malloc((kv->arr_n + 1) * sizeof(*l));

		FUZZ_CHECK(s != NULL && l != NULL);
		FUZZ_CHECK(gguf_arr_str_fill(g, key, s, l, kv->arr_n, err,
		    sizeof(err)) == TS_OK);
		for (i = 0; i < n; i++) {
			const char *one;
			size_t one_len;

			FUZZ_CHECK(inside(img, len, s[i], l[i]));
			if (i < 8) {
				FUZZ_CHECK(gguf_arr_str(g, key, i, &one,
				    &one_len, err, sizeof(err)) == TS_OK);
				FUZZ_CHECK(one == s[i] && one_len == l[i]);
			}
		}
		free(s);
		free(l);
	} else if (et == GGUF_TYPE_F32 || et == GGUF_TYPE_F64) {
		float v;

		for (i = 0; i < n; i++) {
			enum ts_err rc = gguf_arr_f32(g, key, i, &v, err,
			    sizeof(err));

			FUZZ_CHECK(rc == TS_OK || et == GGUF_TYPE_F64);
		}
	} else if (et != GGUF_TYPE_BOOL && et != GGUF_TYPE_ARR) {
		int32_t v;

		for (i = 0; i < n; i++) {
			enum ts_err rc = gguf_arr_i32(g, key, i, &v, err,
			    sizeof(err));

			FUZZ_CHECK(rc == TS_OK || (rc == TS_EFORMAT &&
			    err[0] != '\0'));
		}
	}
	FUZZ_CHECK(gguf_arr_str(g, key, kv->arr_n, NULL, NULL, err,
	    sizeof(err)) != TS_OK);
}

static void
check_kv(const struct gguf *g, const uint8_t *img, size_t len, uint64_t i)
{
	struct gguf_kv_info kv;
	char err[512], *key;
	const char *s;
	size_t sl;
	uint32_t u32;
	uint64_t u64;
	float f;
	int b;
	enum ts_err rc;

	FUZZ_CHECK(gguf_kv_at(g, i, &kv) == TS_OK);
	FUZZ_CHECK(kv.key_len > 0 && inside(img, len, kv.key, kv.key_len));
	FUZZ_CHECK(kv.type < GGUF_TYPE_COUNT);
	key = cstr(kv.key, kv.key_len);
	if (key == NULL)
		return;
	rc = gguf_get_str(g, key, &s, &sl, err, sizeof(err));
	FUZZ_CHECK((rc == TS_OK) == (kv.type == GGUF_TYPE_STR));
	if (rc == TS_OK)
		FUZZ_CHECK(inside(img, len, s, sl));
	rc = gguf_get_bool(g, key, &b, err, sizeof(err));
	FUZZ_CHECK((rc == TS_OK) == (kv.type == GGUF_TYPE_BOOL));
	FUZZ_CHECK(rc == TS_OK ? b == 0 || b == 1 : err[0] != '\0');
	rc = gguf_get_u64(g, key, &u64, err, sizeof(err));
	if (kv.type == GGUF_TYPE_U8 || kv.type == GGUF_TYPE_U16 ||
	    kv.type == GGUF_TYPE_U32 || kv.type == GGUF_TYPE_U64)
		FUZZ_CHECK(rc == TS_OK);
	rc = gguf_get_u32(g, key, &u32, err, sizeof(err));
	FUZZ_CHECK(rc == TS_OK || (rc == TS_EFORMAT && err[0] != '\0'));
	rc = gguf_get_f32(g, key, &f, err, sizeof(err));
	if (kv.type == GGUF_TYPE_F32)
		FUZZ_CHECK(rc == TS_OK);
	if (kv.type == GGUF_TYPE_ARR)
		check_array(g, img, len, key, &kv);
	free(key);
}

static void
check_tensor(const struct gguf *g, const uint8_t *img, size_t len,
    uint64_t i)
{
	const struct gguf_tensor *t = gguf_tensor_at(g, i);
	const struct model_dtype_info *info;
	uint64_t rows = 1;
	uint32_t d;
	char *name;

	FUZZ_CHECK(t != NULL);
	FUZZ_CHECK(t->n_dims >= 1 && t->n_dims <= 4);
	info = model_dtype_info(t->type);
	FUZZ_CHECK(info != NULL);
	FUZZ_CHECK(t->dims[0] % info->block == 0);
	for (d = 1; d < 4; d++)
		rows *= t->dims[d];
	if (t->dims[0] != 0)
		FUZZ_CHECK(t->bytes == rows * (t->dims[0] / info->block *
		    info->size));
	else
		FUZZ_CHECK(t->bytes == 0);
	FUZZ_CHECK(t->offset % gguf_alignment(g) == 0);
	FUZZ_CHECK((const uint8_t *)t->data == img + gguf_data_offset(g) +
	    t->offset);
	FUZZ_CHECK(inside(img, len, t->data, t->bytes));
	name = cstr(t->name, t->name_len);
	if (name != NULL)
		FUZZ_CHECK(gguf_tensor_find(g, name) == t);
	free(name);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gguf *g = NULL;
	char err[512];
	uint64_t i;
	uint32_t a;
	enum ts_err rc;

	err[0] = '\0';
	rc = gguf_parse(&g, data, size, err, sizeof(err));
	if (rc != TS_OK) {
		FUZZ_CHECK(rc == TS_EFORMAT && g == NULL && err[0] != '\0');
		return 0;
	}
	FUZZ_CHECK(gguf_version(g) == 2 || gguf_version(g) == 3);
	a = gguf_alignment(g);
	FUZZ_CHECK(a != 0 && (a & (a - 1)) == 0);
	FUZZ_CHECK(gguf_data_offset(g) % a == 0);
	for (i = 0; i < gguf_kv_count(g); i++)
		check_kv(g, data, size, i);
	for (i = 0; i < gguf_tensor_count(g); i++)
		check_tensor(g, data, size, i);
	FUZZ_CHECK(gguf_tensor_at(g, gguf_tensor_count(g)) == NULL);
	gguf_close(g);
	return 0;
}
