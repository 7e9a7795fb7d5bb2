/*
 * test_tokenizer.c - the llama2.c tokenizer (src/model/tokenizer.c):
 * encode/decode round trips of ASCII, UTF-8 and arbitrary bytes through
 * byte fallback, the dummy prefix and the space dropped after BOS,
 * agreement with run.c's quadratic merge loop (model_ref.c) on many
 * strings, and the file's validation errors.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "model/model_synth.h"
#include "model/tokenizer.h"
#include "model_ref.h"

#define S(s) (s), (sizeof(s) - 1)
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static char dir[256], mpath[300], tpath[300];
static struct tokenizer *tok;
static struct model_ref *ref;

static int
setup(void **unused)
{
	struct model_synth s;
	char err[256];

	snprintf(dir, sizeof(dir), "/tmp/ts-tok-test.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(mpath, sizeof(mpath), "%s/m.bin", dir);
	snprintf(tpath, sizeof(tpath), "%s/t.bin", dir);
	model_synth_defaults(&s);
	s.cfg.dim = 8;
	s.cfg.hidden_dim = 8;
	s.cfg.n_layers = 1;
	s.cfg.n_heads = 2;
	s.cfg.n_kv_heads = 2;
	s.cfg.seq_len = 8;
	if (model_synth_write_checkpoint(&s, mpath, err, sizeof(err)) !=
	    TS_OK || model_synth_write_tokenizer(&s, tpath, err,
	    sizeof(err)) != TS_OK)
		return -1;
	if (tokenizer_open(&tok, tpath, 512, err, sizeof(err)) != TS_OK) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	ref = model_ref_load(mpath, tpath);
	return ref == NULL ? -1 : 0;
}

static int
teardown(void **unused)
{
	char p[300];

	tokenizer_free(tok);
	model_ref_free(ref);
	unlink(mpath);
	unlink(tpath);
	snprintf(p, sizeof(p), "%s/bad", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

/* The id of piece s, which must exist. */
static uint32_t
id_of(const char *s)
{
	uint32_t *ids, id;
	size_t n;

	/* a piece with a leading space encodes alone as itself */
	assert_int_equal(tokenizer_encode(tok, s + 1, strlen(s) - 1, 0, 0,
	    &ids, &n), TS_OK);
	assert_int_equal(n, 1);
	id = ids[0];
	free(ids);
	return id;
}

/* decode(encode(text)) == text, reading each token after the one before
 * (the first after BOS). */
static void
round_trip(const char *text, size_t len)
{
	uint32_t *ids;
	size_t n, i, tl, at = 0;
	char *out = malloc(len + 1);

	assert_int_equal(tokenizer_encode(tok, text, len, 1, 0, &ids, &n),
	    TS_OK);
	assert_true(n >= 1 && n <= len + 2);
	assert_int_equal(ids[0], MODEL_TOKEN_BOS);
	for (i = 1; i < n; i++) {
		const char *t = tokenizer_decode(tok, ids[i - 1], ids[i], &tl);

		assert_true(at + tl <= len);
		memcpy(out + at, t, tl);
		at += tl;
	}
	assert_int_equal(at, len);
	assert_memory_equal(out, text, len);
	free(ids);
	free(out);
}

static void
test_round_trip(void **unused)
{
	static const struct {
		const char *s;
		size_t len;
	} texts[] = {
		{ S("") },
		{ S("hello") },
		{ S("Once upon a time, there was a little girl named Lily.") },
		{ S(" leading space and  two  spaces ") },
		{ S("line one\nline two\r\n\ttab") },
		{ S("caf\xc3\xa9 \xe2\x80\x99s") },        /* café ’s */
		{ S("\xe4\xbd\xa0\xe5\xa5\xbd") },                 /* 你好 */
		{ S("\xf0\x9f\x98\x80 emoji") },                   /* 😀 */
		{ S("nul\0byte") },
		{ S("\x80\x80\x80\x80\x80 stray continuations") },
		{ S("\xff\xfe invalid \xc3") },
		{ S("data: [DONE]\n\n") },
	};
	size_t i;

	for (i = 0; i < NELEM(texts); i++)
		round_trip(texts[i].s, texts[i].len);
}

static void
test_pieces(void **unused)
{
	uint32_t *ids, the = id_of(" the");
	const char *t;
	size_t n, len;

	/* the dummy prefix: "the" is the piece " the" */
	assert_int_equal(tokenizer_encode(tok, S("the"), 1, 1, &ids, &n),
	    TS_OK);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], MODEL_TOKEN_BOS);
	assert_int_equal(ids[1], the);
	assert_int_equal(ids[2], MODEL_TOKEN_EOS);
	free(ids);

	/* 你 has no piece: " " then its three byte tokens */
	assert_int_equal(tokenizer_encode(tok, S("\xe4\xbd\xa0"), 0, 0,
	    &ids, &n), TS_OK);
	assert_int_equal(n, 4);
	assert_int_equal(ids[1], 3 + 0xe4);
	assert_int_equal(ids[2], 3 + 0xbd);
	assert_int_equal(ids[3], 3 + 0xa0);
	t = tokenizer_piece(tok, ids[1], &len);
	assert_int_equal(len, 6);
	assert_memory_equal(t, "<0xE4>", 6);
	t = tokenizer_decode(tok, 5, ids[1], &len);
	assert_int_equal(len, 1);
	assert_int_equal((unsigned char)t[0], 0xe4);
	free(ids);

	/* é has a piece (a whole UTF-8 character), " café" too */
	assert_int_equal(tokenizer_encode(tok, S("caf\xc3\xa9"), 0, 0, &ids,
	    &n), TS_OK);
	assert_int_equal(n, 1);
	t = tokenizer_decode(tok, 5, ids[0], &len);
	assert_int_equal(len, 6);
	assert_memory_equal(t, " caf\xc3\xa9", 6);
	free(ids);

	/* newline is the byte token <0x0A> */
	t = tokenizer_decode(tok, 5, 3 + '\n', &len);
	assert_int_equal(len, 1);
	assert_int_equal(t[0], '\n');

	/* the leading space goes after BOS only */
	t = tokenizer_decode(tok, MODEL_TOKEN_BOS, the, &len);
	assert_int_equal(len, 3);
	assert_memory_equal(t, "the", 3);
	t = tokenizer_decode(tok, UINT32_MAX, the, &len);
	assert_int_equal(len, 4);
	assert_memory_equal(t, " the", 4);

	/* specials are empty text; ids out of range too */
	assert_string_equal(tokenizer_decode(tok, 5, MODEL_TOKEN_UNK, &len),
	    "");
	assert_string_equal(tokenizer_decode(tok, 5, MODEL_TOKEN_BOS, &len),
	    "");
	assert_string_equal(tokenizer_decode(tok, 5, 512, &len), "");
	assert_int_equal(len, 0);
	assert_null(tokenizer_piece(tok, 512, &len));
	t = tokenizer_piece(tok, MODEL_TOKEN_EOS, &len);
	assert_memory_equal(t, "</s>", 4);
	assert_int_equal(tokenizer_vocab_size(tok), 512);
}

/* The heap-based merges give run.c's tokens on many strings. */
static void
test_matches_reference(void **unused)
{
	static const char *const atoms[] = { "the", " ", "a", "e", "th",
		"he", " of", "and", "x", "\xc3\xa9", "\xe4\xbd\xa0", "\x80",
		"\xff", "Q", ".", "  ", "ing", "o", "\n", "caf" };
	uint64_t st = 12345;
	size_t k;

	for (k = 0; k < 150; k++) {
		char text[128];
		uint32_t want[130], *got;
		size_t len = 0, nw, ng, j, atoms_n;

		st = st * 6364136223846793005ULL + 1442695040888963407ULL;
		atoms_n = (st >> 33) % 16;
		for (j = 0; j < atoms_n; j++) {
			const char *a;

			st = st * 6364136223846793005ULL +
			    1442695040888963407ULL;
			a = atoms[(st >> 33) % NELEM(atoms)];
			memcpy(text + len, a, strlen(a));
			len += strlen(a);
		}
		nw = model_ref_encode(ref, text, len, 1, want);
		assert_int_equal(tokenizer_encode(tok, text, len, 1, 0, &got,
		    &ng), TS_OK);
		assert_int_equal(ng, nw);
		assert_memory_equal(got, want, nw * sizeof(uint32_t));
		free(got);
	}
}

/* A long prompt encodes quickly (no quadratic merge loop). */
static void
test_long_prompt(void **unused)
{
	size_t len = 20 * 50000, i, n;
	char *text = malloc(len);
	uint32_t *ids;

	for (i = 0; i < len; i++)
		text[i] = "the of and to in is "[i % 20];
	assert_int_equal(tokenizer_encode(tok, text, len, 1, 0, &ids, &n),
	    TS_OK);
	/* BOS, six words a repetition, the last space alone */
	assert_int_equal(n, 1 + 50000 * 6 + 1);
	free(ids);
	free(text);
}

/* ---- validation --------------------------------------------------------- */

/* A tokenizer image: max_token_length, then tokens "<unk>", "<s>",
 * "</s>", the byte tokens, then "a", "b", ... up to `count`. */
static size_t
image(unsigned char *buf, int32_t maxlen, uint32_t count)
{
	size_t at = 0;
	uint32_t i;

	memcpy(buf, &maxlen, 4);
	at = 4;
	for (i = 0; i < count; i++) {
		char piece[16];
		float score = -(float)i;
		int32_t len;

		if (i == 0)
			strcpy(piece, "<unk>");
		else if (i == 1)
			strcpy(piece, "<s>");
		else if (i == 2)
			strcpy(piece, "</s>");
		else if (i < 259)
			snprintf(piece, sizeof(piece), "<0x%02X>", i - 3);
		else
			snprintf(piece, sizeof(piece), "%c%c",
			    'a' + (i - 259) % 26, 'a' + (i - 259) / 26);
		len = (int32_t)strlen(piece);
		memcpy(buf + at, &score, 4);
		memcpy(buf + at + 4, &len, 4);
		memcpy(buf + at + 8, piece, (size_t)len);
		at += 8 + (size_t)len;
	}
	return at;
}

static void
expect_error(const unsigned char *buf, size_t len, uint32_t vocab,
    const char *text)
{
	struct tokenizer *t = (struct tokenizer *)1;
	char err[512];
	unsigned char *copy = malloc(len ? len : 1);

	/* an exact-size copy: a read past the end is a sanitizer report */
	memcpy(copy, buf, len);
	assert_int_equal(tokenizer_load(&t, copy, len, vocab, err,
	    sizeof(err)), TS_EFORMAT);
	assert_null(t);
	if (strstr(err, text) == NULL)
		fail_msg("error \"%s\" lacks \"%s\"", err, text);
	free(copy);
}

static void
test_validation(void **unused)
{
	unsigned char *buf = malloc(1 << 16);
	struct tokenizer *t;
	size_t len, cut;
	int32_t v;
	float nan = NAN;
	char err[512], path[300];
	FILE *f;

	len = image(buf, 6, 300);
	assert_int_equal(tokenizer_load(&t, buf, len, 300, err, sizeof(err)),
	    TS_OK);
	tokenizer_free(t);
	tokenizer_free(NULL);

	expect_error(buf, 0, 300, "truncated: 0 bytes");
	expect_error(buf, 3, 300, "truncated: 3 bytes");
	/* every cut inside a token's record */
	for (cut = 4; cut < len; cut++) {
		struct tokenizer *tt;

		assert_int_equal(tokenizer_load(&tt, buf, cut, 300, err,
		    sizeof(err)), TS_EFORMAT);
		assert_true(strstr(err, "truncated in token") != NULL ||
		    strstr(err, "tokenizer has") != NULL);
	}
	expect_error(buf, len - 1, 300, "truncated in token 299 at offset");
	expect_error(buf, len - 9, 300, "truncated in token 299 at offset");
	expect_error(buf, len, 301, "tokenizer has 300 tokens but the "
	    "checkpoint's vocab_size is 301");
	expect_error(buf, len, 299, "tokenizer has 300 tokens but the "
	    "checkpoint's vocab_size is 299");
	expect_error(buf, len, 100, "vocab_size 100 is outside 259..");

	v = 0;
	memcpy(buf, &v, 4);
	expect_error(buf, len, 300, "max_token_length 0 is outside");
	v = -5;
	memcpy(buf, &v, 4);
	expect_error(buf, len, 300, "max_token_length -5 is outside");
	v = 5;                          /* "<unk>" fits, "<0x00>" does not */
	memcpy(buf, &v, 4);
	expect_error(buf, len, 300, "token 3 at offset");
	expect_error(buf, len, 300, "length 6 is outside 1..5");
	v = 6;
	memcpy(buf, &v, 4);

	/* token 0's length: 0, negative */
	v = 0;
	memcpy(buf + 8, &v, 4);
	expect_error(buf, len, 300, "token 0 at offset 4: length 0 is outside"
	    " 1..6");
	v = -1;
	memcpy(buf + 8, &v, 4);
	expect_error(buf, len, 300, "length -1 is outside");
	v = 5;
	memcpy(buf + 8, &v, 4);

	/* a piece that is not valid UTF-8: token 259 is "aa" */
	{
		size_t at = 4, k;

		for (k = 0; k < 259; k++) {
			int32_t l;

			memcpy(&l, buf + at + 4, 4);
			at += 8 + (size_t)l;
		}
		buf[at + 8] = 0xc3;     /* a lead byte, then 'a' */
		expect_error(buf, len, 300, "token 259 at offset");
		expect_error(buf, len, 300, "piece is not valid UTF-8");
		buf[at + 8] = 'a';
	}

	/* a NaN score */
	memcpy(buf + 4, &nan, 4);
	expect_error(buf, len, 300, "token 0 at offset 4: score is not a "
	    "finite number");
	memcpy(buf + 4, &v, 4);

	/* a byte token out of place: token 3 + 0x41 says "<0x42>" */
	buf[4 + 13 + 11 + 12 + 14 * 0x41 + 8 + 4] = '2';
	expect_error(buf, len, 300, "token 68 is \"<0x42>\", not the byte "
	    "token <0x41>");

	/* through a file: the path leads the message */
	snprintf(path, sizeof(path), "%s/bad", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, 10, f), 10);
	fclose(f);
	assert_int_equal(tokenizer_open(&t, path, 300, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "truncated in token 0"));
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(tokenizer_open(&t, path, 300, err, sizeof(err)),
	    TS_ESYS);
	assert_non_null(strstr(err, "cannot open"));
	free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_matches_reference),
		cmocka_unit_test(test_long_prompt),
		cmocka_unit_test(test_validation),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
