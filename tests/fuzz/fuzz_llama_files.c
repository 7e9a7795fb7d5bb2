/*
 * fuzz_llama_files.c - the llama backend's two file parsers on arbitrary
 * bytes: model_bind (a llama2.c checkpoint image) and tokenizer_load (a
 * tokenizer.bin image), then the tokenizer's encoder and decoder on the
 * input itself when it parsed.
 *
 * Properties, each checked with abort():
 *  - neither parser reads outside the image (the driver gives an
 *    allocation of exactly its size; the sanitizer build catches it) or
 *    crashes; a refusal comes with a non-empty message;
 *  - a bound checkpoint has exactly the size its header implies, and its
 *    weight pointers lie inside the image;
 *  - the tokenizer loads with the number of complete records as its
 *    vocabulary size when that is 259 or more and the records are sane,
 *    and then: encode gives BOS first, ids below the vocabulary size, at
 *    most len + 2 ids, the same ids twice; every id decodes within the
 *    bounds of the tokenizer's text.
 */
#include <string.h>

#include "fuzz.h"
#include "model/model.h"
#include "model/tokenizer.h"

/* Complete (score, len, piece) records after max_token_length, and
 * whether the image ends exactly after the last one. */
static uint32_t
records(const uint8_t *p, size_t n, int *exact)
{
	size_t off = 4;
	uint32_t count = 0;
	int32_t len;

	*exact = 0;
	if (n < 4)
		return 0;
	while (n - off >= 8) {
		memcpy(&len, p + off + 4, 4);
		if (len <= 0 || (size_t)len > n - off - 8)
			return count;
		off += 8 + (size_t)len;
		count++;
	}
	*exact = off == n;
	return count;
}

static void
check_checkpoint(const uint8_t *data, size_t size)
{
	struct model m;
	char err[512];
	float *img = malloc(size ? size : 1);  /* float-aligned copy */
	enum ts_err rc;

	memcpy(img, data, size);
	err[0] = '\0';
	rc = model_bind(&m, img, size, err, sizeof(err));
	if (rc != TS_OK) {
		FUZZ_CHECK(err[0] != '\0');
	} else {
		const char *lo = (const char *)img, *hi = lo + size;
		const char *cls = (const char *)m.w.wcls.data +
		    (size_t)m.cfg.vocab_size * m.w.wcls.row_bytes;

		FUZZ_CHECK(model_file_bytes(&m.cfg) == size);
		FUZZ_CHECK((const char *)m.w.token_embedding.data > lo);
		FUZZ_CHECK(cls <= hi);
		FUZZ_CHECK((const char *)(m.w.rms_final + m.cfg.dim) <= hi);
		model_unbind(&m);
	}
	free(img);
}

static void
check_tokenizer(const uint8_t *data, size_t size)
{
	struct tokenizer *t = NULL;
	uint32_t *a, *b, id;
	size_t na, nb, i, len;
	char err[512];
	int exact;
	uint32_t n = records(data, size, &exact);
	const char *s;

	err[0] = '\0';
	if (tokenizer_load(&t, data, size, 300, err, sizeof(err)) != TS_OK)
		FUZZ_CHECK(err[0] != '\0' && t == NULL);
	else
		tokenizer_free(t);
	if (n < TOKENIZER_MIN_VOCAB || !exact)
		return;
	err[0] = '\0';
	if (tokenizer_load(&t, data, size, n, err, sizeof(err)) != TS_OK) {
		FUZZ_CHECK(err[0] != '\0' && t == NULL);
		return;
	}
	FUZZ_CHECK(tokenizer_encode(t, (const char *)data, size, 1, 0, &a,
	    &na) == TS_OK);
	FUZZ_CHECK(tokenizer_encode(t, (const char *)data, size, 1, 0, &b,
	    &nb) == TS_OK);
	FUZZ_CHECK(na >= 1 && na <= size + 2 && a[0] == MODEL_TOKEN_BOS);
	FUZZ_CHECK(na == nb && memcmp(a, b, na * sizeof(*a)) == 0);
	for (i = 0; i < na; i++)
		FUZZ_CHECK(a[i] < n);
	for (id = 0; id < n; id++) {
		s = tokenizer_decode(t, id ? id - 1 : MODEL_TOKEN_BOS, id,
		    &len);
		FUZZ_CHECK(s != NULL && len <= TOKENIZER_MAX_TOKEN_LENGTH);
		if (len > 0)
			FUZZ_CHECK(memchr(s, s[len - 1], len) != NULL);
	}
	free(a);
	free(b);
	tokenizer_free(t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_checkpoint(data, size);
	check_tokenizer(data, size);
	return 0;
}
