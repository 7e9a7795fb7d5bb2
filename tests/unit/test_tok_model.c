/*
 * test_tok_model.c - the model tokenizers (src/model/tok_vocab.c,
 * tok_encode.c, tok_json.c): vocabularies as GGUF describes them
 * (SentencePiece with scores, byte-level BPE with merges and named
 * pre-tokenizers), special and user-defined tokens in the text, the
 * accessors, what is refused (unknown pre-tokenizer, merges of unknown
 * pieces, bad tokenizer.json files), and text that is not UTF-8.
 * tokenizers.bats compares these tokenizers with Hugging Face's.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rng.h"
#include "model/model_synth.h"
#include "model/tokenizer.h"

#define WS "\xE2\x96\x81"     /* U+2581 */
#define NONE TOKENIZER_NONE
#define S_(s) (s), (sizeof(s) - 1)

/* ---- helpers ------------------------------------------------------------ */

/* Encodes text, checks the ids against want[nwant]. */
static void
expect(const struct tokenizer *t, const char *text, int bos,
    const uint32_t *want, size_t nwant)
{
	uint32_t *ids;
	size_t n, i;

	assert_int_equal(tokenizer_encode(t, text, strlen(text), bos, 0, &ids,
	    &n), TS_OK);
	for (i = 0; i < n && i < nwant; i++)
		if (ids[i] != want[i])
			fprintf(stderr, "%s: id %zu is %u, want %u\n", text,
			    i, ids[i], want[i]);
	assert_int_equal(n, nwant);
	assert_memory_equal(ids, want, n * sizeof(*ids));
	free(ids);
}

/* The concatenated stream decode of ids[0..n). */
static size_t
decode_all(const struct tokenizer *t, const uint32_t *ids, size_t n,
    char *out, size_t cap)
{
	size_t i, at = 0, len;
	uint32_t prev = NONE;

	for (i = 0; i < n; i++) {
		const char *p = tokenizer_decode(t, prev, ids[i], &len);

		assert_true(at + len <= cap);
		memcpy(out + at, p, len);
		at += len;
		prev = ids[i];
	}
	return at;
}

/* ---- a SentencePiece vocabulary with scores (GGUF "llama") -------------- */

static const char *spm_extra[] = {
	WS, "h", "e", "l", "o", "a", "b", WS "h", WS "he", "ll", WS "hell",
	WS "hello", WS "a", "ab", WS "ab", "<|user|>", "</s>", "<s>",
	"<unk>",
};
static const float spm_extra_score[] = {
	-1, -2, -2, -2, -2, -2, -2, -3, -4, -3, -5,
	-6, -9, -0.5f, -7, 0, 0, 0, 0,
};
static const int32_t spm_extra_type[] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, TOKENIZER_TYPE_USER_DEFINED, TOKENIZER_TYPE_CONTROL,
	TOKENIZER_TYPE_CONTROL, TOKENIZER_TYPE_UNKNOWN,
};
#define SPM_N (256 + sizeof(spm_extra) / sizeof(spm_extra[0]))
#define SPM_ID(k) (256u + (k))       /* id of spm_extra[k] */

static char spm_bytes[256][8];
static const char *spm_piece[SPM_N];
static size_t spm_len[SPM_N];
static float spm_score[SPM_N];
static int32_t spm_type[SPM_N];

/* ids 0..255 <0xHH>, then spm_extra */
static void
spm_vocab(struct tokenizer_vocab *v)
{
	uint32_t i;

	for (i = 0; i < 256; i++) {
		snprintf(spm_bytes[i], sizeof(spm_bytes[i]), "<0x%02X>", i);
		spm_piece[i] = spm_bytes[i];
		spm_score[i] = 0;
		spm_type[i] = TOKENIZER_TYPE_BYTE;
	}
	for (i = 256; i < SPM_N; i++) {
		spm_piece[i] = spm_extra[i - 256];
		spm_score[i] = spm_extra_score[i - 256];
		spm_type[i] = spm_extra_type[i - 256];
	}
	for (i = 0; i < SPM_N; i++)
		spm_len[i] = strlen(spm_piece[i]);
	memset(v, 0, sizeof(*v));
	v->kind = TOKENIZER_SPM;
	v->n = SPM_N;
	v->piece = spm_piece;
	v->piece_len = spm_len;
	v->score = spm_score;
	v->type = spm_type;
	v->bos = SPM_ID(17);
	v->eos = SPM_ID(16);
	v->unk = SPM_ID(18);
	v->pad = NONE;
	v->add_bos = 1;
	v->add_space_prefix = 1;
}

static void
test_spm_scores(void **unused)
{
	struct tokenizer_vocab v;
	struct tokenizer *t;
	char err[256];

	(void)unused;
	spm_vocab(&v);
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_OK);
	assert_int_equal(tokenizer_kind(t), TOKENIZER_SPM);
	assert_int_equal(tokenizer_bos(t), SPM_ID(17));
	assert_int_equal(tokenizer_eos(t), SPM_ID(16));
	assert_int_equal(tokenizer_add_bos(t), 1);
	assert_int_equal(tokenizer_vocab_size(t), SPM_N);
	{
		/* the space prefix, then the best-scoring merges */
		const uint32_t w[] = { SPM_ID(17), SPM_ID(11) };

		expect(t, "hello", 1, w, 2);
	}
	{
		/* "ab" (-0.5) merges before "▁a" (-9): ▁ + ab -> ▁ab, not
		 * ▁a + b; merge by rank would differ */
		const uint32_t w[] = { SPM_ID(14) };

		expect(t, "ab", 0, w, 1);
	}
	{
		/* a character without a piece: its bytes (byte fallback);
		 * spaces are ▁ */
		const uint32_t w[] = { SPM_ID(11), SPM_ID(0), 0xE4, 0xB8,
		    0x96 };

		expect(t, "hello \xE4\xB8\x96", 0, w, 5);
	}
	{
		/* control and user-defined text is its token; each text
		 * segment gets the space prefix (llama.cpp SPM) */
		const uint32_t w[] = { SPM_ID(17), SPM_ID(15), SPM_ID(11),
		    SPM_ID(16), SPM_ID(0), SPM_ID(6) };

		expect(t, "<|user|>hello</s>b", 1, w, 6);
	}
	{
		/* the stream decode: ▁ a space, dropped after BOS; control
		 * tokens "", user-defined ones their text, bytes bytes */
		uint32_t *ids;
		size_t n, len;
		char out[64];

		assert_int_equal(tokenizer_encode(t, S_("<|user|>hi \xE4\xB8"
		    "\x96</s>"), 1, 0, &ids, &n), TS_OK);
		len = decode_all(t, ids, n, out, sizeof(out));
		assert_int_equal(len, strlen("<|user|> hi \xE4\xB8\x96"));
		assert_memory_equal(out, "<|user|> hi \xE4\xB8\x96", len);
		free(ids);
		assert_memory_equal(tokenizer_decode(t, SPM_ID(17),
		    SPM_ID(11), &len), "hello", 5);
		assert_int_equal(len, 5);
		assert_memory_equal(tokenizer_decode(t, NONE, SPM_ID(11),
		    &len), " hello", 6);
		assert_int_equal(len, 6);
		tokenizer_decode(t, NONE, SPM_ID(16), &len);
		assert_int_equal(len, 0);
	}
	tokenizer_free(t);

	/* without a BOS, no previous token is not "after BOS" */
	v.bos = NONE;
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_OK);
	{
		size_t len;

		assert_memory_equal(tokenizer_decode(t, NONE, SPM_ID(11),
		    &len), " hello", 6);
		assert_int_equal(len, 6);
	}
	assert_int_equal(tokenizer_token_id(t, S_("</s>")), SPM_ID(16));
	assert_int_equal(tokenizer_token_id(t, S_("<|nope|>")), NONE);
	assert_int_equal(tokenizer_token_type(t, SPM_ID(15)),
	    TOKENIZER_TYPE_USER_DEFINED);
	tokenizer_free(t);
}

/* ---- a byte-level BPE vocabulary with merges (GGUF "gpt2") ------------- */

/* GPT-2's bytes_to_unicode as UTF-8 into p (at least 3 bytes). */
static size_t
byte_char(unsigned b, char *p)
{
	unsigned c, k = 0, i;

	if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) {
		c = b;
	} else {
		for (i = 0; i < b; i++)
			if (!((i >= 33 && i <= 126) ||
			    (i >= 161 && i <= 172) || i >= 174))
				k++;
		c = 256 + k;
	}
	if (c < 0x80) {
		p[0] = (char)c;
		return 1;
	}
	p[0] = (char)(0xC0 | (c >> 6));
	p[1] = (char)(0x80 | (c & 0x3F));
	return 2;
}

static const char *bpe_extra[] = {
	"\xC4\xA0h", "el", "\xC4\xA0he", "ll", "\xC4\xA0hell", "lo",
	"\xC4\xA0hello", "<|eot_id|>", "\xC4\xA0word",
};
static const char *bpe_merges[] = {
	"\xC4\xA0 h", "\xC4\xA0h e", "l l", "\xC4\xA0he ll",
	"\xC4\xA0hell o", "e l", "l o",
};
#define BPE_N (256 + sizeof(bpe_extra) / sizeof(bpe_extra[0]))
#define BPE_ID(k) (256u + (k))
#define NMERGES (sizeof(bpe_merges) / sizeof(bpe_merges[0]))

static char bpe_bytes[256][4];
static const char *bpe_piece[BPE_N];
static size_t bpe_len[BPE_N];
static int32_t bpe_type[BPE_N];
static size_t bpe_merge_len[NMERGES];

/* ids 0..255: byte b's character; then bpe_extra */
static void
bpe_vocab(struct tokenizer_vocab *v, const char *pre)
{
	uint32_t i;

	for (i = 0; i < 256; i++) {
		bpe_len[i] = byte_char(i, bpe_bytes[i]);
		bpe_piece[i] = bpe_bytes[i];
		bpe_type[i] = TOKENIZER_TYPE_NORMAL;
	}
	for (i = 256; i < BPE_N; i++) {
		bpe_piece[i] = bpe_extra[i - 256];
		bpe_len[i] = strlen(bpe_piece[i]);
		bpe_type[i] = TOKENIZER_TYPE_NORMAL;
	}
	bpe_type[BPE_ID(7)] = TOKENIZER_TYPE_CONTROL;
	for (i = 0; i < NMERGES; i++)
		bpe_merge_len[i] = strlen(bpe_merges[i]);
	memset(v, 0, sizeof(*v));
	v->kind = TOKENIZER_BPE;
	v->n = BPE_N;
	v->piece = bpe_piece;
	v->piece_len = bpe_len;
	v->type = bpe_type;
	v->merge = bpe_merges;
	v->merge_len = bpe_merge_len;
	v->n_merges = NMERGES;
	v->pre = pre;
	v->bos = NONE;
	v->eos = BPE_ID(7);
	v->unk = v->pad = NONE;
}

static void
test_bpe_merges(void **unused)
{
	struct tokenizer_vocab v;
	struct tokenizer *t;
	char err[256];

	(void)unused;
	bpe_vocab(&v, "gpt2");
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_OK);
	assert_int_equal(tokenizer_kind(t), TOKENIZER_BPE);
	assert_int_equal(tokenizer_bos(t), NONE);
	{
		/* by rank: "hello" takes "l l" (2) before "e l" (5) and
		 * "l o" (6); " hello" goes Ġh, Ġhe, ll, Ġhell, Ġhello */
		const uint32_t w[] = { 'h', 'e', BPE_ID(3), 'o',
		    BPE_ID(6) };

		expect(t, "hello hello", 0, w, 5);
	}
	{
		/* no BOS token: bos asks for nothing; eos is <|eot_id|>,
		 * and its text in the input is that token */
		const uint32_t w[] = { BPE_ID(6), BPE_ID(7), 'x', BPE_ID(7) };
		uint32_t *ids;
		size_t n;

		assert_int_equal(tokenizer_encode(t, S_(" hello<|eot_id|>x"),
		    1, 1, &ids, &n), TS_OK);
		assert_int_equal(n, 4);
		assert_memory_equal(ids, w, sizeof(w));
		free(ids);
	}
	{
		/* " word" is a token no merge makes: gpt2 merges bytes */
		const uint32_t w[] = { ' ', 'w', 'o', 'r', 'd' };
		uint32_t *ids;
		size_t n;

		assert_int_equal(tokenizer_encode(t, S_(" word"), 0, 0, &ids,
		    &n), TS_OK);
		assert_int_equal(n, 5);     /* Ġ w o r d */
		assert_memory_equal(ids, w, sizeof(w));
		free(ids);
	}
	tokenizer_free(t);

	/* llama-bpe ignores merges for a word in the vocabulary */
	bpe_vocab(&v, "llama-bpe");
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_OK);
	{
		const uint32_t w[] = { BPE_ID(8), BPE_ID(6) };

		expect(t, " word hello", 0, w, 2);
	}
	{
		/* Llama 3's digits: at most three together; byte-level
		 * decode gives the bytes back */
		uint32_t *ids;
		size_t n, len;
		char out[64];

		assert_int_equal(tokenizer_encode(t, S_("1234567 \xF0\x9F\x98"
		    "\x80"), 0, 0, &ids, &n), TS_OK);
		assert_int_equal(n, 12);
		len = decode_all(t, ids, n, out, sizeof(out));
		assert_int_equal(len, 12);
		assert_memory_equal(out, "1234567 \xF0\x9F\x98\x80", 12);
		free(ids);
	}
	tokenizer_free(t);
}

/* ---- what is refused ---------------------------------------------------- */

static void
test_vocab_errors(void **unused)
{
	struct tokenizer_vocab v;
	struct tokenizer *t = NULL;
	char err[256];
	const char *bad_merge[] = { "\xC4\xA0 h", "q zz" };
	const char *no_result[] = { "h e" };
	const char *no_space[] = { "he" };
	size_t ml[2];
	const float *scores;

	(void)unused;
	bpe_vocab(&v, "llama-4-nonesuch");
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_EFORMAT);
	assert_null(t);
	assert_non_null(strstr(err, "unknown pre-tokenizer "
	    "\"llama-4-nonesuch\""));

	bpe_vocab(&v, "gpt2");
	ml[0] = strlen(bad_merge[0]);
	ml[1] = strlen(bad_merge[1]);
	v.merge = bad_merge;
	v.merge_len = ml;
	v.n_merges = 2;
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "merge 1 names \"zz\", which is not in "
	    "the vocabulary"));

	ml[0] = strlen(no_result[0]);
	v.merge = no_result;
	v.n_merges = 1;
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "merged piece is not in the vocabulary"));

	ml[0] = strlen(no_space[0]);
	v.merge = no_space;
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "merge 0 is not two pieces"));

	/* a byte-level vocabulary needs all 256 byte characters */
	bpe_vocab(&v, "gpt2");
	v.piece = bpe_piece + 1;
	v.piece_len = bpe_len + 1;
	v.type = bpe_type + 1;
	v.n = BPE_N - 1;
	v.eos = NONE;
	v.n_merges = 0;
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "no token for byte 0x00"));

	spm_vocab(&v);
	v.bos = SPM_N;
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "bos id"));
	spm_vocab(&v);
	scores = v.score;
	v.score = NULL;
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "needs scores"));
	v.score = scores;
	v.kind = 7;
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_EFORMAT);
	spm_vocab(&v);
	spm_len[SPM_ID(1)] = 0;
	spm_piece[SPM_ID(1)] = NULL;
	spm_len[SPM_ID(2)] = 1;
	spm_piece[SPM_ID(2)] = "\xFF";
	assert_int_equal(tokenizer_from_vocab(&t, &v, err, sizeof(err)),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "not valid UTF-8"));
	assert_null(t);
}

static char tmpdir[64];

static const char *
write_tmp(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static const char *
data_file(const char *name)
{
	static char path[512];
	const char *src = getenv("TS_SRCDIR");

	snprintf(path, sizeof(path), "%s/tests/data/tokenizers/%s",
	    src != NULL ? src : ".", name);
	return path;
}

/* Loads json (a tokenizer.json's text), expects TS_EFORMAT and `want`
 * in the message. */
static void
refused(const char *json, const char *want)
{
	struct tokenizer *t = NULL;
	char err[512];

	assert_int_equal(tokenizer_from_json(&t, write_tmp("t.json", json),
	    -1, err, sizeof(err)), TS_EFORMAT);
	assert_null(t);
	if (strstr(err, want) == NULL)
		fprintf(stderr, "error \"%s\" lacks \"%s\"\n", err, want);
	assert_non_null(strstr(err, want));
}

static void
test_json_errors(void **unused)
{
	struct tokenizer *t = NULL;
	char err[512];

	(void)unused;
	refused("{\"model\": ", "line 1");
	refused("[]", "not a JSON object");
	refused("{}", "no model object");
	refused("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}",
	    "model type \"WordPiece\" is not supported");
	refused("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}",
	    "model type \"Unigram\" is not supported");
	refused("{\"normalizer\": {\"type\": \"NFC\"}, \"model\": {\"type\": "
	    "\"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
	    "normalizer \"NFC\" is not supported");
	refused("{\"pre_tokenizer\": {\"type\": \"Whitespace\"}, \"model\": "
	    "{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
	    "pre_tokenizer \"Whitespace\" is not supported");
	refused("{\"pre_tokenizer\": {\"type\": \"Metaspace\", "
	    "\"replacement\": \"\xE2\x96\x81\"}, \"model\": {\"type\": \"BPE\", "
	    "\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a c\"]}}",
	    "merge 0 names \"c\", which is not in the vocabulary");
	refused("{\"pre_tokenizer\": {\"type\": \"Metaspace\", "
	    "\"replacement\": \"\xE2\x96\x81\"}, \"model\": {\"type\": \"BPE\", "
	    "\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [[\"a\"]]}}",
	    "merge 0 is neither");
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
	    "\"merges\": []}}", "neither a ByteLevel pre_tokenizer");
	refused("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
	    "{\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}, "
	    "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
	    "neither a ByteLevel");
	refused("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
	    "{\"Regex\": \"a\"}, \"behavior\": \"Removed\"}, "
	    "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
	    "Split other than Isolated");
	refused("{\"added_tokens\": [{\"id\": 5, \"content\": \"x\", "
	    "\"single_word\": true}], \"model\": {\"type\": \"BPE\", "
	    "\"vocab\": {}}}", "single_word is not supported");
	refused("{\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, "
	    "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
	    "no token for byte 0x00");
	refused("{\"post_processor\": {\"type\": \"BertProcessing\"}, "
	    "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
	    "post_processor \"BertProcessing\" is not supported");
	refused("{\"decoder\": {\"type\": \"WordPiece\"}, "
	    "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
	    "decoder \"WordPiece\" is not supported");
	refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 9999999}}}",
	    "no valid id");
	assert_int_equal(tokenizer_from_json(&t, "/nonexistent/t.json", -1,
	    err, sizeof(err)), TS_ESYS);
	assert_non_null(strstr(err, "/nonexistent/t.json"));
}

/* A bad regex in a Split pattern is refused with PCRE2's message; one
 * that matches empty strings splits at them. */
static void
test_json_bad_regex(void **unused)
{
	struct tokenizer *t = NULL;
	char err[512];
	json_error_t je;
	json_t *j = json_load_file(data_file("llama3-bpe.json"), 0, &je);
	json_t *split;
	const char *path;

	(void)unused;
	assert_non_null(j);
	split = json_array_get(json_object_get(json_object_get(j,
	    "pre_tokenizer"), "pretokenizers"), 0);
	json_object_set_new(json_object_get(split, "pattern"), "Regex",
	    json_string("(\\p{L}"));
	path = write_tmp("r.json", "");
	assert_int_equal(json_dump_file(j, path, 0), 0);
	assert_int_equal(tokenizer_from_json(&t, path, -1, err, sizeof(err)),
	    TS_EFORMAT);
	assert_null(t);
	assert_non_null(strstr(err, "pre-tokenizer regex 0: missing closing "
	    "parenthesis"));

	/* a regex's empty matches split the text there, as in tokenizers
	 * (each character its own piece here: no merges) */
	json_object_set_new(json_object_get(split, "pattern"), "Regex",
	    json_string("x|"));
	assert_int_equal(json_dump_file(j, path, 0), 0);
	assert_int_equal(tokenizer_from_json(&t, path, 0, err, sizeof(err)),
	    TS_OK);
	{
		const uint32_t w[] = { 'h', 'e', 'l', 'l', 'o', 'x' };

		expect(t, "hellox", 0, w, 6);
	}
	tokenizer_free(t);
	json_decref(j);
}

/* lstrip/rstrip added tokens take the spaces beside them; add_bos from
 * the caller overrides the template. */
static void
test_json_strip_and_bos(void **unused)
{
	struct tokenizer *t;
	char err[512];
	json_error_t je;
	json_t *j = json_load_file(data_file("llama3-bpe.json"), 0, &je);
	json_t *added;
	uint32_t *ids, eot, bot;
	size_t n, i, len;
	const char *path;

	(void)unused;
	assert_non_null(j);
	path = write_tmp("s.json", "");
	assert_int_equal(json_dump_file(j, path, 0), 0);
	assert_int_equal(tokenizer_from_json(&t, path, -1, err, sizeof(err)),
	    TS_OK);
	eot = tokenizer_token_id(t, S_("<|eot_id|>"));
	bot = tokenizer_token_id(t, S_("<|begin_of_text|>"));
	assert_int_not_equal(eot, NONE);
	assert_int_equal(tokenizer_bos(t), bot);
	assert_int_equal(tokenizer_add_bos(t), 1);
	assert_int_equal(tokenizer_eos(t),
	    tokenizer_token_id(t, S_("<|end_of_text|>")));
	assert_int_equal(tokenizer_token_type(t, eot), TOKENIZER_TYPE_CONTROL);
	assert_int_equal(tokenizer_encode(t, S_("a <|eot_id|> b"), 0, 0,
	    &ids, &n), TS_OK);
	assert_int_equal(n, 4);             /* a, Ġ, eot, Ġb */
	assert_int_equal(ids[2], eot);
	tokenizer_decode(t, ids[1], eot, &len);
	assert_int_equal(len, 0);           /* a control token: "" */
	assert_memory_equal(tokenizer_decode(t, eot, ids[3], &len), " b", 2);
	assert_int_equal(len, 2);
	free(ids);
	tokenizer_free(t);

	added = json_object_get(j, "added_tokens");
	for (i = 0; i < json_array_size(added); i++) {
		json_t *a = json_array_get(added, i);

		if (strcmp(json_string_value(json_object_get(a, "content")),
		    "<|eot_id|>") == 0) {
			json_object_set_new(a, "lstrip", json_true());
			json_object_set_new(a, "rstrip", json_true());
		}
	}
	assert_int_equal(json_dump_file(j, path, 0), 0);
	assert_int_equal(tokenizer_from_json(&t, path, 0, err, sizeof(err)),
	    TS_OK);
	assert_int_equal(tokenizer_add_bos(t), 0);
	assert_int_equal(tokenizer_encode(t, S_("a <|eot_id|> b"), 0, 0,
	    &ids, &n), TS_OK);
	assert_int_equal(n, 3);             /* a, eot, b */
	assert_int_equal(ids[1], eot);
	free(ids);
	tokenizer_free(t);
	json_decref(j);
}

/* Without byte tokens an unknown character is <unk>, a run of them one
 * with fuse_unk (models/bpe/model.rs; tokenizers.js agrees). */
static void
test_json_fuse_unk(void **unused)
{
	static const char json[] = "{\"added_tokens\": [{\"id\": 0, "
	    "\"content\": \"<unk>\", \"special\": true}], \"normalizer\": "
	    "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": "
	    "\"Prepend\", \"prepend\": \"" WS "\"}, {\"type\": \"Replace\", "
	    "\"pattern\": {\"String\": \" \"}, \"content\": \"" WS "\"}]}, "
	    "\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", "
	    "\"fuse_unk\": %s, \"vocab\": {\"<unk>\": 0, \"" WS "\": 1, "
	    "\"a\": 2, \"b\": 3, \"" WS "a\": 4}, \"merges\": [\"" WS
	    " a\"]}}";
	char text[sizeof(json) + 8], err[512];
	struct tokenizer *t;
	const uint32_t fused[] = { 4, 0, 3 }, apart[] = { 4, 0, 0, 3 };

	(void)unused;
	snprintf(text, sizeof(text), json, "true");
	assert_int_equal(tokenizer_from_json(&t, write_tmp("t.json", text),
	    -1, err, sizeof(err)), TS_OK);
	expect(t, "a\xE4\xB8\x96\xE7\x95\x8C" "b", 0, fused, 3);
	tokenizer_free(t);
	snprintf(text, sizeof(text), json, "false");
	assert_int_equal(tokenizer_from_json(&t, write_tmp("t.json", text),
	    -1, err, sizeof(err)), TS_OK);
	expect(t, "a\xE4\xB8\x96\xE7\x95\x8C" "b", 0, apart, 4);
	tokenizer_free(t);
}

/* tokenizer.bin answers the accessors as llama2.c's fixed ids. */
static void
test_bin_accessors(void **unused)
{
	struct model_synth m;
	struct tokenizer *t;
	char err[256], path[128];
	size_t len;

	(void)unused;
	model_synth_defaults(&m);
	snprintf(path, sizeof(path), "%s/t.bin", tmpdir);
	assert_int_equal(model_synth_write_tokenizer(&m, path, err,
	    sizeof(err)), TS_OK);
	assert_int_equal(tokenizer_open(&t, path, m.cfg.vocab_size, err,
	    sizeof(err)), TS_OK);
	unlink(path);
	assert_int_equal(tokenizer_kind(t), TOKENIZER_SPM);
	assert_int_equal(tokenizer_bos(t), 1);
	assert_int_equal(tokenizer_eos(t), 2);
	assert_int_equal(tokenizer_add_bos(t), 1);
	assert_int_equal(tokenizer_add_eos(t), 0);
	assert_int_equal(tokenizer_token_type(t, 2), TOKENIZER_TYPE_CONTROL);
	assert_int_equal(tokenizer_token_type(t, 3 + 'A'),
	    TOKENIZER_TYPE_BYTE);
	assert_int_equal(tokenizer_token_id(t, S_("<0x41>")), 3 + 'A');
	tokenizer_decode(t, 1, 2, &len);
	assert_int_equal(len, 0);
	tokenizer_free(t);
}

/*
 * The GGUF SentencePiece path is llama2.c's: the same vocabulary as a
 * GGUF file holds it (U+2581 for a space, scores, types) encodes every
 * valid UTF-8 text to the same ids as tokenizer.bin's run.c encode
 * (itself held to run.c's loop by test_tokenizer.c).
 */
static void
test_spm_matches_bin(void **unused)
{
	static const char *const atoms[] = { "the", " ", "a", "e", "th",
		"he", " of", "and", "x", "\xc3\xa9", "\xe4\xbd\xa0", "Q", ".",
		"  ", "ing", "o", "\n", "caf", "\xf0\x9f\x98\x80" };
	struct model_synth m;
	struct tokenizer *bin, *spm;
	struct tokenizer_vocab v;
	char err[256], path[128];
	unsigned char *file;
	const char **piece;
	size_t *plen, off = 4, flen, k;
	float *score;
	int32_t *type;
	uint32_t i, n;
	uint64_t st = 99;
	FILE *f;

	(void)unused;
	model_synth_defaults(&m);
	n = m.cfg.vocab_size;
	snprintf(path, sizeof(path), "%s/t.bin", tmpdir);
	assert_int_equal(model_synth_write_tokenizer(&m, path, err,
	    sizeof(err)), TS_OK);
	assert_int_equal(tokenizer_open(&bin, path, n, err, sizeof(err)),
	    TS_OK);
	f = fopen(path, "rb");
	assert_non_null(f);
	file = malloc(1 << 20);
	flen = fread(file, 1, 1 << 20, f);
	fclose(f);
	unlink(path);
	piece = calloc(n, sizeof(*piece));
	plen = calloc(n, sizeof(*plen));
	score = calloc(n, sizeof(*score));
	type = calloc(n, sizeof(*type));
	for (i = 0; i < n; i++) {
		int32_t len;
		char *p;
		size_t j, q = 0;

		assert_true(off + 8 <= flen);
		memcpy(&score[i], file + off, 4);
		memcpy(&len, file + off + 4, 4);
		p = malloc(3 * (size_t)len + 1);
		for (j = 0; j < (size_t)len; j++) {
			if (file[off + 8 + j] == ' ') {
				memcpy(p + q, WS, 3);
				q += 3;
			} else {
				p[q++] = (char)file[off + 8 + j];
			}
		}
		piece[i] = p;
		plen[i] = q;
		type[i] = i == 0 ? TOKENIZER_TYPE_UNKNOWN : i <= 2 ?
		    TOKENIZER_TYPE_CONTROL : i <= 258 ? TOKENIZER_TYPE_BYTE :
		    TOKENIZER_TYPE_NORMAL;
		off += 8 + (size_t)len;
	}
	memset(&v, 0, sizeof(v));
	v.kind = TOKENIZER_SPM;
	v.n = n;
	v.piece = piece;
	v.piece_len = plen;
	v.score = score;
	v.type = type;
	v.bos = 1;
	v.eos = 2;
	v.unk = 0;
	v.pad = NONE;
	v.add_bos = 1;
	v.add_space_prefix = 1;
	assert_int_equal(tokenizer_from_vocab(&spm, &v, err, sizeof(err)),
	    TS_OK);
	for (k = 0; k < 300; k++) {
		char text[256];
		uint32_t *a, *b;
		size_t len = 0, na, nb, j, natoms;

		st = st * 6364136223846793005ULL + 1442695040888963407ULL;
		natoms = (st >> 33) % 24;
		for (j = 0; j < natoms; j++) {
			const char *at;

			st = st * 6364136223846793005ULL +
			    1442695040888963407ULL;
			at = atoms[(st >> 33) % (sizeof(atoms) /
			    sizeof(atoms[0]))];
			memcpy(text + len, at, strlen(at));
			len += strlen(at);
		}
		assert_int_equal(tokenizer_encode(bin, text, len, 1, 0, &a,
		    &na), TS_OK);
		assert_int_equal(tokenizer_encode(spm, text, len, 1, 0, &b,
		    &nb), TS_OK);
		assert_int_equal(na, nb);
		assert_memory_equal(a, b, na * sizeof(*a));
		for (j = 1; j < na; j++) {
			size_t l1, l2;
			const char *d1 = tokenizer_decode(bin, a[j - 1], a[j],
			    &l1);
			const char *d2 = tokenizer_decode(spm, b[j - 1], b[j],
			    &l2);

			assert_int_equal(l1, l2);
			assert_memory_equal(d1, d2, l1);
		}
		free(a);
		free(b);
	}
	for (i = 0; i < n; i++)
		free((char *)piece[i]);
	free(piece);
	free(plen);
	free(score);
	free(type);
	free(file);
	tokenizer_free(bin);
	tokenizer_free(spm);
}

/* Random bytes (mostly not UTF-8) through every test tokenizer: no
 * crash, and byte-level decode gives exactly the bytes back. */
static void
test_invalid_utf8(void **unused)
{
	static const char *files[] = { "llama3-bpe.json", "gpt2-bpe.json",
	    "spm-bpe.json", "spm-meta.json" };
	struct rng rng;
	size_t f, round;

	(void)unused;
	rng_seed(&rng, 42);
	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct tokenizer *t;
		char err[512];

		assert_int_equal(tokenizer_from_json(&t, data_file(files[f]),
		    -1, err, sizeof(err)), TS_OK);
		for (round = 0; round < 200; round++) {
			char in[64], out[64 * 4];
			uint32_t *ids;
			size_t n, i, len = rng_next(&rng) % sizeof(in);

			for (i = 0; i < len; i++) {
				uint64_t r = rng_next(&rng);

				/* bytes, spaces, and lead bytes of
				 * truncated sequences */
				in[i] = (char)(r % 3 == 0 ? ' ' : r % 3 == 1 ?
				    0xE2 + (r >> 8) % 20 : (r >> 8));
			}
			assert_int_equal(tokenizer_encode(t, in, len, 0, 0,
			    &ids, &n), TS_OK);
			if (tokenizer_kind(t) == TOKENIZER_BPE) {
				assert_true(n <= len);
				assert_int_equal(decode_all(t, ids, n, out,
				    sizeof(out)), len);
				assert_memory_equal(out, in, len);
			}
			for (i = 0; i < n; i++)
				assert_true(ids[i] < tokenizer_vocab_size(t));
			free(ids);
		}
		tokenizer_free(t);
	}
}

static int
setup(void **unused)
{
	(void)unused;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ts-tokm.XXXXXX");
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
teardown(void **unused)
{
	char p[128];

	(void)unused;
	snprintf(p, sizeof(p), "%s/t.json", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/r.json", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/s.json", tmpdir);
	unlink(p);
	rmdir(tmpdir);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spm_scores),
		cmocka_unit_test(test_bpe_merges),
		cmocka_unit_test(test_vocab_errors),
		cmocka_unit_test(test_json_errors),
		cmocka_unit_test(test_json_bad_regex),
		cmocka_unit_test(test_json_strip_and_bos),
		cmocka_unit_test(test_json_fuse_unk),
		cmocka_unit_test(test_bin_accessors),
		cmocka_unit_test(test_spm_matches_bin),
		cmocka_unit_test(test_invalid_utf8),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
