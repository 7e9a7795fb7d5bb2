/*
 * test_sim_vocab.c - unit tests of the deterministic lab generator
 * (src/sim/lab.c) and its vocabulary (src/sim/vocab.c, vocab_table.c): the
 * vocabulary's shape, the tokenizer,
 * the seed, determinism, the prefix property and canonical output, a
 * golden vector, and that generation exercises every class of stress
 * token.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/lab.h"
#include "sim/vocab_table.h"

/* A string literal as (ptr, len): may hold NUL bytes. */
#define S(s) (s), (sizeof(s) - 1)

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Prompts used by the table-driven generation tests. */
static const struct {
	const char *p;
	size_t len;
} prompts[] = {
	{ S("hello") },
	{ S("") },
	{ S("The quick brown fox jumps over the lazy dog.") },
	{ S("\xe4\xbd\xa0\xe5\xa5\xbd") },     /* 你好 */
	{ S("data: [DONE]\n\n") },
	{ S("a\0b") },
};

/*
 * Whether (s, len) is valid UTF-8 per RFC 3629 / Unicode table 3-7: no
 * overlong forms, no surrogates, nothing above U+10FFFF.
 */
static int
utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0, n, k;
	unsigned char lo, hi;

	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		lo = 0x80;
		hi = 0xbf;
		if (s[i] >= 0xc2 && s[i] <= 0xdf)
			n = 1;
		else if (s[i] >= 0xe0 && s[i] <= 0xef) {
			n = 2;
			if (s[i] == 0xe0)
				lo = 0xa0;
			else if (s[i] == 0xed)
				hi = 0x9f;
		} else if (s[i] >= 0xf0 && s[i] <= 0xf4) {
			n = 3;
			if (s[i] == 0xf0)
				lo = 0x90;
			else if (s[i] == 0xf4)
				hi = 0x8f;
		} else
			return 0;
		if (len - i - 1 < n)
			return 0;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return 0;
		for (k = 2; k <= n; k++)
			if (s[i + k] < 0x80 || s[i + k] > 0xbf)
				return 0;
		i += n + 1;
	}
	return 1;
}

/* The classes of stress token that generation must exercise. */
enum stress {
	ST_QUOTE = 1 << 0,
	ST_BACKSLASH = 1 << 1,
	ST_NEWLINE = 1 << 2,
	ST_TAB = 1 << 3,
	ST_UTF8_2 = 1 << 4,     /* a 2-byte sequence: é */
	ST_CJK = 1 << 5,        /* a 3-byte sequence in U+3000..U+9FFF */
	ST_EMOJI = 1 << 6,      /* a 4-byte sequence */
	ST_ALL = (1 << 7) - 1
};

static const char *const stress_names[] = {
	"quote", "backslash", "newline", "tab", "2-byte UTF-8", "3-byte CJK",
	"4-byte emoji"
};

/* The stress classes found in (s, len), which must be valid UTF-8. */
static unsigned
stress_of(const unsigned char *s, size_t len)
{
	unsigned m = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (s[i] == '"')
			m |= ST_QUOTE;
		else if (s[i] == '\\')
			m |= ST_BACKSLASH;
		else if (s[i] == '\n')
			m |= ST_NEWLINE;
		else if (s[i] == '\t')
			m |= ST_TAB;
		else if (s[i] >= 0xc2 && s[i] <= 0xdf)
			m |= ST_UTF8_2;
		else if (s[i] >= 0xe3 && s[i] <= 0xe9)
			m |= ST_CJK;
		else if (s[i] >= 0xf0 && s[i] <= 0xf4)
			m |= ST_EMOJI;
	}
	return m;
}

/* Fills ids[0..n) from a fresh stream for (p, len). */
static void
generate(const char *p, size_t len, uint32_t *ids, size_t n)
{
	struct sim_lab g;
	size_t i;

	sim_lab_init(&g, p, len);
	for (i = 0; i < n; i++)
		ids[i] = sim_lab_next(&g);
}

static void
test_vocab_size(void **state)
{
	(void)state;
	assert_true(sim_vocab_size() > 1256);
}

static void
test_byte_tokens(void **state)
{
	const char *t;
	size_t len;
	uint32_t id;

	(void)state;
	for (id = 0; id < SIM_FIRST_TEXT_ID; id++) {
		t = sim_token_text(id, &len);
		assert_non_null(t);
		assert_int_equal(len, 1);
		assert_int_equal((unsigned char)t[0], id);
	}
}

static void
test_text_tokens(void **state)
{
	const char *t;
	size_t len;
	uint32_t id;

	(void)state;
	for (id = SIM_FIRST_TEXT_ID; id < sim_vocab_size(); id++) {
		t = sim_token_text(id, &len);
		assert_non_null(t);
		if (len < 1 || len > SIM_TOKEN_MAX_BYTES)
			fail_msg("token %u: %zu bytes", (unsigned)id, len);
		if (memchr(t, '\0', len) != NULL ||
		    memchr(t, '\r', len) != NULL)
			fail_msg("token %u holds NUL or CR", (unsigned)id);
		if (!utf8_valid((const unsigned char *)t, len))
			fail_msg("token %u is not UTF-8", (unsigned)id);
	}
}

static void
test_out_of_range(void **state)
{
	size_t len = 99;

	(void)state;
	assert_null(sim_token_text(sim_vocab_size(), &len));
	assert_int_equal(len, 0);
	assert_null(sim_token_text(UINT32_MAX, &len));
}

/* Each text token's own text tokenizes to that one token: texts are
 * unique and the longest match covers the whole text. */
static void
test_tokenize_each_token(void **state)
{
	const char *t;
	size_t len, n;
	uint32_t id, got[2];

	(void)state;
	for (id = SIM_FIRST_TEXT_ID; id < sim_vocab_size(); id++) {
		t = sim_token_text(id, &len);
		n = sim_tokenize(t, len, got, NELEM(got));
		if (n != 1 || got[0] != id)
			fail_msg("token %u (\"%.*s\") tokenizes to %zu "
			    "tokens, first %u", (unsigned)id, (int)len, t, n,
			    (unsigned)got[0]);
	}
}

static void
test_tokenize_table(void **state)
{
	static const struct {
		const char *name;
		const char *in;
		size_t len;
		const char *const want[8];  /* token texts, NULL-ended */
	} cases[] = {
		{ "empty", S(""), { NULL } },
		{ "word", S(" the"), { " the", NULL } },
		{ "longest", S(" tokens"), { " tokens", NULL } },
		{ "longer", S(" tokenizer"), { " tokenizer", NULL } },
		{ "pieces", S("The model streams tokens."),
		    { "The", " model", " stream", "s", " tokens", ".",
		    NULL } },
		{ "CJK", S("\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c"),
		    { "\xe4\xbd\xa0\xe5\xa5\xbd", "\xe4\xb8\x96\xe7\x95\x8c",
		    NULL } },
		{ "SSE look-alike", S("data: [DONE]"),
		    { "data:", " [DONE]", NULL } },
		{ "escapes", S("\\n\\t\\"), { "\\n", "\\t", "\\", NULL } },
		{ "emoji", S(" \xf0\x9f\x99\x82\xf0\x9f\x9a\x80"),
		    { " \xf0\x9f\x99\x82", "\xf0\x9f\x9a\x80", NULL } },
		{ "newlines", S("\n\n\n"), { "\n\n", "\n", NULL } },
		{ "U+2028", S("\xe2\x80\xa8"), { "\xe2\x80\xa8", NULL } },
		{ "accent", S(" caf\xc3\xa9!"),
		    { " caf\xc3\xa9", "!", NULL } },
		{ "fallback", S("hello\xff~"),
		    { "hello", "\xff", "~", NULL } },
		{ "cut UTF-8", S("\xe4\xbd"), { "\xe4", "\xbd", NULL } },
	};
	uint32_t ids[16];
	const char *t;
	size_t i, k, n, want, len;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		for (want = 0; cases[i].want[want] != NULL; want++)
			;
		n = sim_tokenize(cases[i].in, cases[i].len, ids,
		    NELEM(ids));
		if (n != want)
			fail_msg("%s: %zu tokens, want %zu", cases[i].name, n,
			    want);
		for (k = 0; k < n; k++) {
			t = sim_token_text(ids[k], &len);
			if (len != strlen(cases[i].want[k]) ||
			    memcmp(t, cases[i].want[k], len) != 0)
				fail_msg("%s: token %zu is \"%.*s\", want "
				    "\"%s\"", cases[i].name, k, (int)len, t,
				    cases[i].want[k]);
		}
	}
}

/* Bytes that start no text token become byte tokens with their value. */
static void
test_tokenize_fallback(void **state)
{
	uint32_t ids[4];

	(void)state;
	assert_int_equal(sim_tokenize(S("\xff"), ids, NELEM(ids)), 1);
	assert_int_equal(ids[0], 0xff);
	assert_int_equal(sim_tokenize(S("\x01\x7f"), ids, NELEM(ids)), 2);
	assert_int_equal(ids[0], 0x01);
	assert_int_equal(ids[1], 0x7f);
}

/* NUL bytes are ordinary bytes: counted, and each one a byte token. */
static void
test_tokenize_nul(void **state)
{
	uint32_t ids[4];

	(void)state;
	assert_int_equal(sim_tokenize(S("a\0b"), ids, NELEM(ids)), 3);
	assert_int_equal(ids[1], 0);
	assert_int_equal(sim_tokenize(S("\0\0\0"), ids, NELEM(ids)), 3);
	assert_int_equal(ids[0], 0);
	assert_int_equal(ids[2], 0);
	assert_int_equal(sim_tokenize(S(" the\0"), NULL, 0), 2);
}

/* Past `cap` nothing is written, and the total is still returned. */
static void
test_tokenize_cap(void **state)
{
	uint32_t ids[8];
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(ids); i++)
		ids[i] = 0xdeadbeef;
	assert_int_equal(sim_tokenize(S(" the model and the token"), ids, 2),
	    5);
	assert_int_not_equal(ids[1], 0xdeadbeef);
	for (i = 2; i < NELEM(ids); i++)
		assert_int_equal(ids[i], 0xdeadbeef);
	assert_int_equal(sim_tokenize(S(" the model and the token"), NULL, 0),
	    5);
	assert_int_equal(sim_tokenize(NULL, 0, NULL, 0), 0);
}

/*
 * Tokenizing then concatenating the tokens' texts gives back the input,
 * for a mix of random bytes and vocabulary texts (a fixed LCG, so the
 * test is reproducible).
 */
static void
test_tokenize_roundtrip(void **state)
{
	enum { LEN = 1 << 16 };
	char *in = malloc(LEN + SIM_TOKEN_MAX_BYTES), *out = malloc(LEN);
	uint32_t *ids = malloc(LEN * sizeof(*ids));
	uint32_t x = 12345, id;
	size_t len = 0, olen = 0, n, i, tl;
	const char *t;

	(void)state;
	assert_non_null(in);
	assert_non_null(out);
	assert_non_null(ids);
	while (len < LEN - SIM_TOKEN_MAX_BYTES) {
		x = x * 1103515245u + 12345u;           /* glibc's LCG */
		if ((x >> 16) % 4 == 0) {
			in[len++] = (char)(x >> 24);
			continue;
		}
		id = SIM_FIRST_TEXT_ID + (x >> 8) % (sim_vocab_size() -
		    SIM_FIRST_TEXT_ID);
		t = sim_token_text(id, &tl);
		memcpy(in + len, t, tl);
		len += tl;
	}
	n = sim_tokenize(in, len, ids, LEN);
	assert_true(n <= len);
	for (i = 0; i < n; i++) {
		t = sim_token_text(ids[i], &tl);
		assert_non_null(t);
		assert_true(olen + tl <= len);
		memcpy(out + olen, t, tl);
		olen += tl;
	}
	assert_int_equal(olen, len);
	assert_memory_equal(in, out, len);
	free(in);
	free(out);
	free(ids);
}

/* SplitMix64's finaliser, written out again to check rng_seed_of's recipe. */
static uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* rng_seed_of is FNV-1a 64 then the mixer: published FNV-1a test vectors. */
static void
test_seed(void **state)
{
	static const struct {
		const char *in;
		size_t len;
		uint64_t fnv;
	} cases[] = {
		{ S(""), UINT64_C(0xcbf29ce484222325) },
		{ S("a"), UINT64_C(0xaf63dc4c8601ec8c) },
		{ S("foobar"), UINT64_C(0x85944171f73967e8) },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++)
		assert_int_equal(rng_seed_of(cases[i].in, cases[i].len),
		    mix64(cases[i].fnv));
	assert_int_not_equal(rng_seed_of(S("a\0")), rng_seed_of(S("a")));
}

/* Two streams of one prompt agree, also when interleaved with another. */
static void
test_determinism(void **state)
{
	enum { N = 1000 };
	struct sim_lab a, b, other;
	uint32_t ids[N];
	size_t i, k;

	(void)state;
	for (i = 0; i < NELEM(prompts); i++) {
		generate(prompts[i].p, prompts[i].len, ids, N);
		sim_lab_init(&a, prompts[i].p, prompts[i].len);
		sim_lab_init(&b, prompts[i].p, prompts[i].len);
		sim_lab_init(&other, S("another prompt"));
		for (k = 0; k < N; k++) {
			(void)sim_lab_next(&other);
			assert_int_equal(sim_lab_next(&a), ids[k]);
			assert_int_equal(sim_lab_next(&b), ids[k]);
		}
	}
}

/*
 * The first 20 ids for "hello", and a digest of its first 10,000 (FNV-1a 64
 * over each id's four bytes, least significant first), which also catches
 * a small change of weights. If this fails, the vocabulary, the seed, the
 * PRNG or the sampler changed, and with it every stream any client has
 * seen. Update the numbers only on purpose.
 */
static void
test_golden(void **state)
{
	static const uint32_t want[20] = {
		276, 754, 599, 667, 456, 954, 546, 550, 502, 452, 355,
		526, 569, 615, 752, 577, 759, 570, 456, 598,
	};
	enum { N = 10000 };
	static uint32_t ids[N];
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	size_t i, k;

	(void)state;
	generate(S("hello"), ids, N);
	for (i = 0; i < NELEM(want); i++)
		if (ids[i] != want[i])
			fail_msg("id %zu is %u, want %u", i, (unsigned)ids[i],
			    (unsigned)want[i]);
	for (i = 0; i < N; i++)
		for (k = 0; k < 4; k++) {
			h ^= (ids[i] >> (8 * k)) & 0xff;
			h *= UINT64_C(0x100000001b3);
		}
	assert_int_equal(h, UINT64_C(0x728fec916ad8a387));
}

/* The first k ids of a stream do not depend on how many follow. */
static void
test_prefix(void **state)
{
	enum { N = 64 };
	uint32_t full[N], part[N];
	size_t i, k;

	(void)state;
	for (i = 0; i < NELEM(prompts); i++) {
		generate(prompts[i].p, prompts[i].len, full, N);
		for (k = 0; k <= N; k++) {
			memset(part, 0, sizeof(part));
			generate(prompts[i].p, prompts[i].len, part, k);
			assert_memory_equal(part, full, k * sizeof(*part));
		}
	}
}

/* Different prompts, even by one byte, give different streams. */
static void
test_prompts_differ(void **state)
{
	static const struct {
		const char *p;
		size_t len;
	} ps[] = {
		{ S("") }, { S("\0") }, { S("hello") }, { S("hello ") },
		{ S("Hello") }, { S("a") }, { S("b") }, { S("a\0b") },
	};
	enum { N = 32 };
	uint32_t ids[NELEM(ps)][N];
	size_t i, j;

	(void)state;
	for (i = 0; i < NELEM(ps); i++)
		generate(ps[i].p, ps[i].len, ids[i], N);
	for (i = 0; i < NELEM(ps); i++)
		for (j = i + 1; j < NELEM(ps); j++)
			if (memcmp(ids[i], ids[j], sizeof(ids[i])) == 0)
				fail_msg("prompts %zu and %zu agree", i, j);
}

/* sim_lab_next returns text tokens only; a stream starts with a capital. */
static void
test_next_range(void **state)
{
	enum { N = 10000 };
	struct sim_lab g;
	const char *t;
	size_t i, k, len;
	uint32_t id;

	(void)state;
	for (i = 0; i < NELEM(prompts); i++) {
		sim_lab_init(&g, prompts[i].p, prompts[i].len);
		for (k = 0; k < N; k++) {
			id = sim_lab_next(&g);
			assert_in_range(id, SIM_FIRST_TEXT_ID,
			    sim_vocab_size() - 1);
			if (k == 0) {
				t = sim_token_text(id, &len);
				assert_in_range(t[0], 'A', 'Z');
			}
		}
	}
}

/* Within 2,000 tokens every prompt's stream shows every stress class. */
static void
test_stress_classes(void **state)
{
	enum { N = 2000 };
	struct sim_lab g;
	const char *t;
	size_t i, k, len;
	unsigned seen, c;

	(void)state;
	for (i = 0; i < NELEM(prompts); i++) {
		sim_lab_init(&g, prompts[i].p, prompts[i].len);
		seen = 0;
		for (k = 0; k < N; k++) {
			t = sim_token_text(sim_lab_next(&g), &len);
			seen |= stress_of((const unsigned char *)t, len);
		}
		for (c = 0; c < NELEM(stress_names); c++)
			if ((seen & (1u << c)) == 0)
				fail_msg("prompt %zu: no %s token in %d", i,
				    stress_names[c], N);
	}
	assert_int_equal(ST_ALL, (1u << NELEM(stress_names)) - 1);
}

/*
 * ~100 tokens almost always hold a stress token: at least 95 of 100
 * prompts ("prompt 0".."prompt 99") do within 100 tokens.
 */
static void
test_stress_share(void **state)
{
	struct sim_lab g;
	char p[32];
	const char *t;
	size_t len;
	int i, k, plen, hit = 0;
	unsigned seen;

	(void)state;
	for (i = 0; i < 100; i++) {
		plen = snprintf(p, sizeof(p), "prompt %d", i);
		sim_lab_init(&g, p, (size_t)plen);
		seen = 0;
		for (k = 0; k < 100; k++) {
			t = sim_token_text(sim_lab_next(&g), &len);
			seen |= stress_of((const unsigned char *)t, len);
		}
		hit += seen != 0;
	}
	assert_true(hit >= 95);
}

/*
 * Canonical output: the text of a stream tokenizes back to the very ids
 * generated, hence to no more tokens than were generated. Greedy matching
 * alone does not promise that (" the" + "ness" reads back as " then",
 * "es", "s"); sim_lab_next redraws such tokens.
 */
static void
test_retokenize(void **state)
{
	enum { N = 2000, NPROMPTS = 50 };
	static char text[N * SIM_TOKEN_MAX_BYTES];
	static uint32_t ids[N], back[N + 1];
	char p[32];
	const char *t;
	size_t i, k, len, tl, n;
	int plen;

	(void)state;
	for (i = 0; i < NELEM(prompts) + NPROMPTS; i++) {
		if (i < NELEM(prompts))
			generate(prompts[i].p, prompts[i].len, ids, N);
		else {
			plen = snprintf(p, sizeof(p), "retokenize %zu", i);
			generate(p, (size_t)plen, ids, N);
		}
		for (len = k = 0; k < N; k++) {
			t = sim_token_text(ids[k], &tl);
			memcpy(text + len, t, tl);
			len += tl;
		}
		n = sim_tokenize(text, len, back, NELEM(back));
		assert_true(n <= N);
		assert_int_equal(n, N);
		assert_memory_equal(back, ids, sizeof(ids));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vocab_size),
		cmocka_unit_test(test_byte_tokens),
		cmocka_unit_test(test_text_tokens),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_tokenize_each_token),
		cmocka_unit_test(test_tokenize_table),
		cmocka_unit_test(test_tokenize_fallback),
		cmocka_unit_test(test_tokenize_nul),
		cmocka_unit_test(test_tokenize_cap),
		cmocka_unit_test(test_tokenize_roundtrip),
		cmocka_unit_test(test_seed),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_prompts_differ),
		cmocka_unit_test(test_next_range),
		cmocka_unit_test(test_stress_classes),
		cmocka_unit_test(test_stress_share),
		cmocka_unit_test(test_retokenize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
