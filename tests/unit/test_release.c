/*
 * test_gen_release.c - unit tests of the stop-string matcher
 * (src/text/stop.c), the UTF-8 holdback (src/text/utf8.c) and the
 * per-sequence detokenizer that combines them (src/text/release.c).
 *
 * Table-driven; every case is fed at every split point into two and into
 * three pieces, and the released text must not depend on the split.
 * A property test runs the language model (sim/lm.h) over fixed seeds
 * and checks that the chunks of a stream are valid UTF-8 and add up to
 * the non-stream text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/vocab.h"
#include "sim/lm.h"
#include "common/buf.h"
#include "text/release.h"
#include "text/stop.h"
#include "text/utf8.h"

/* A string literal as (ptr, len): may hold NUL bytes. */
#define S(s) (s), (sizeof(s) - 1)

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define FFFD "\xef\xbf\xbd"

/* Longest text in the tables. */
#define MAX_TEXT 256

/* ---- UTF-8 holdback ----------------------------------------------------- */

static const struct {
	const char *name;
	const char *in;
	size_t in_len;
	const char *want;
	size_t want_len;
} utf8_cases[] = {
	{ "empty", S(""), S("") },
	{ "ASCII", S("abc"), S("abc") },
	{ "NUL is ASCII", S("a\0b"), S("a\0b") },
	{ "2-byte", S("caf\xc3\xa9"), S("caf\xc3\xa9") },
	{ "3-byte", S("\xe4\xbd\xa0\xe5\xa5\xbd"),
	    S("\xe4\xbd\xa0\xe5\xa5\xbd") },
	{ "4-byte", S("\xf0\x9f\x9a\x80!"), S("\xf0\x9f\x9a\x80!") },
	{ "max", S("\xf4\x8f\xbf\xbf"), S("\xf4\x8f\xbf\xbf") },
	{ "lone FF", S("\xff"), S(FFFD) },
	{ "lone continuation", S("a\x80z"), S("a" FFFD "z") },
	{ "broken 2-byte", S("\xc3" "A"), S(FFFD "A") },
	{ "maximal subpart", S("\xe4\xbd" "A"), S(FFFD "A") },
	{ "cut at the end", S("ab\xe4\xbd"), S("ab" FFFD) },
	{ "cut 4-byte", S("\xf0\x9f\x98"), S(FFFD) },
	{ "two cut", S("\xe4\xbd\xe4\xbd"), S(FFFD FFFD) },
	{ "surrogate", S("\xed\xa0\x80"), S(FFFD FFFD FFFD) },
	{ "overlong", S("\xc0\xaf"), S(FFFD FFFD) },
	{ "overlong 3", S("\xe0\x80\xaf"), S(FFFD FFFD FFFD) },
	{ "above U+10FFFF", S("\xf4\x90\x80\x80"),
	    S(FFFD FFFD FFFD FFFD) },
	{ "F5", S("\xf5\x80"), S(FFFD FFFD) },
	{ "lead then lead", S("\xc3\xc3\xa9"), S(FFFD "\xc3\xa9") },
};

/* Decodes (in, len) cut at i and j (i <= j <= len) into out; checks that
 * every piece is valid UTF-8. Returns the output length. */
static size_t
utf8_split(const char *in, size_t len, size_t i, size_t j, char *out)
{
	struct utf8_repair u;
	size_t n = 0, k;
	const size_t cut[4] = { 0, i, j, len };

	utf8_repair_init(&u);
	for (k = 0; k < 3; k++) {
		size_t got = utf8_repair_feed(&u, in + cut[k], cut[k + 1] -
		    cut[k], out + n);

		assert_true(got <= UTF8_OUT_MAX(cut[k + 1] - cut[k]));
		assert_true(utf8_valid(out + n, got));
		n += got;
	}
	n += utf8_repair_finish(&u, out + n);
	return n;
}

static void
test_utf8_table(void **state)
{
	char out[3 * MAX_TEXT + 3];
	size_t c, i, j, n;

	(void)state;
	for (c = 0; c < NELEM(utf8_cases); c++)
		for (i = 0; i <= utf8_cases[c].in_len; i++)
			for (j = i; j <= utf8_cases[c].in_len; j++) {
				n = utf8_split(utf8_cases[c].in,
				    utf8_cases[c].in_len, i, j, out);
				if (n != utf8_cases[c].want_len ||
				    memcmp(out, utf8_cases[c].want, n) != 0)
					fail_msg("%s: split %zu/%zu gives %zu "
					    "bytes", utf8_cases[c].name, i, j,
					    n);
			}
}

/* Holdback: an incomplete character comes out with its last byte. */
static void
test_utf8_holdback(void **state)
{
	struct utf8_repair u;
	char out[16];

	(void)state;
	utf8_repair_init(&u);
	assert_int_equal(utf8_repair_feed(&u, S("a\xf0"), out), 1);
	assert_int_equal(utf8_repair_feed(&u, S("\x9f"), out), 0);
	assert_int_equal(utf8_repair_feed(&u, S("\x9a"), out), 0);
	assert_int_equal(utf8_repair_feed(&u, S("\x80"), out), 4);
	assert_memory_equal(out, "\xf0\x9f\x9a\x80", 4);
	assert_int_equal(utf8_repair_finish(&u, out), 0);
	assert_int_equal(utf8_repair_feed(&u, NULL, 0, out), 0);
}

static void
test_utf8_valid(void **state)
{
	(void)state;
	assert_true(utf8_valid(S("")));
	assert_true(utf8_valid(NULL, 0));
	assert_true(utf8_valid(S("caf\xc3\xa9 \xf0\x9f\x99\x82")));
	assert_false(utf8_valid(S("\xc3")));
	assert_false(utf8_valid(S("\xed\xa0\x80")));
	assert_false(utf8_valid(S("\xc1\xbf")));
	assert_false(utf8_valid(S("\xf4\x90\x80\x80")));
	assert_false(utf8_valid(S("\x80")));
}

/* ---- stop strings ------------------------------------------------------- */

/* One stop-string case: the stops, the text, what is released, and which
 * stop matched (1-based, 0 none). */
struct stop_case {
	const char *name;
	size_t nstops;
	const char *stops[STOP_MAX];
	const char *text;
	const char *want;
	int match;
};

static const struct stop_case stop_cases[] = {
	{ "no stops", 0, { NULL }, "hello world", "hello world", 0 },
	{ "no match", 1, { "xyz" }, "hello world", "hello world", 0 },
	{ "one word", 1, { "world" }, "hello world!", "hello ", 1 },
	{ "at the end", 1, { "world" }, "hello world", "hello ", 1 },
	{ "at the start", 1, { "he" }, "hello", "", 1 },
	{ "whole text", 1, { "stop" }, "stop", "", 1 },
	{ "one byte", 1, { "o" }, "hello", "hell", 1 },
	{ "overlapping prefix", 1, { "aab" }, "aaab", "a", 1 },
	{ "overlap, no match", 1, { "aab" }, "aaac", "aaac", 0 },
	{ "KMP fallback", 1, { "abab" }, "abaabab", "aba", 1 },
	{ "KMP fallback 2", 1, { "aabaab" }, "aabaabaab", "", 1 },
	{ "self-overlap", 1, { "aaa" }, "aaaa", "", 1 },
	{ "prefix at the end", 1, { "hello!" }, "say hello", "say hello",
	    0 },
	{ "earliest wins", 2, { "world", "lo w" }, "hello world", "hel",
	    2 },
	{ "earliest wins 2", 2, { "lo w", "world" }, "hello world", "hel",
	    1 },
	{ "ends first", 2, { "abcd", "bc" }, "abcd", "a", 2 },
	{ "same end, longest", 2, { "b", "ab" }, "xab", "x", 2 },
	{ "same end, longest 2", 2, { "ab", "b" }, "xab", "x", 1 },
	{ "duplicates", 2, { "lo", "lo" }, "hello", "hel", 1 },
	{ "newlines", 2, { "\n\n", "\n" }, "a\n\nb", "a", 2 },
	{ "four", 4, { "x1", "x2", "x3", "x4" }, "ax3x1", "a", 3 },
	{ "UTF-8", 1, { "\xe4\xb8\x96" },
	    "\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c",
	    "\xe4\xbd\xa0\xe5\xa5\xbd", 1 },
	{ "SSE look-alike", 1, { "\n\ndata:" }, "a\n\ndata: [DONE]", "a",
	    1 },
	{ "64 bytes", 1,
	    { "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abc"
	      "def" },
	    "xx0123456789abcdef0123456789abcdef0123456789abcdef0123456789abc"
	    "defyy", "xx", 1 },
	{ "64 bytes, one short", 1,
	    { "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abc"
	      "def" },
	    "xx0123456789abcdef0123456789abcdef0123456789abcdef0123456789abc"
	    "deyy",
	    "xx0123456789abcdef0123456789abcdef0123456789abcdef0123456789abc"
	    "deyy", 0 },
};

/* The stops of a case as (ptr, len) arrays. */
static void
stop_arrays(const struct stop_case *c, size_t lens[STOP_MAX])
{
	size_t i;

	for (i = 0; i < c->nstops; i++)
		lens[i] = strlen(c->stops[i]);
}

/* Feeds (text, len) cut at i and j to a sim_stop; returns the released
 * length (the text is released in order, so its prefix) and the match. */
static size_t
stop_split(const struct stop_case *c, const char *text, size_t len,
    size_t i, size_t j, int *match)
{
	struct stop_matcher st;
	size_t lens[STOP_MAX], out = 0, k;
	const size_t cut[4] = { 0, i, j, len };
	int m = 0, prev = 0;

	stop_arrays(c, lens);
	assert_int_equal(stop_init(&st, c->stops, lens, c->nstops),
	    TS_OK);
	for (k = 0; k < 3; k++) {
		out += stop_feed(&st, text + cut[k], cut[k + 1] - cut[k],
		    &m);
		if (prev != 0)
			assert_int_equal(m, prev);
		prev = m;
	}
	if (m == 0)
		out += stop_flush(&st);
	assert_int_equal(stop_flush(&st), 0);
	*match = m;
	return out;
}

/* The same through sim_release (bytes); returns the released text. */
static size_t
release_split(const struct stop_case *c, const char *text, size_t len,
    size_t i, size_t j, char *out, int *match)
{
	struct release r;
	struct release_chunk ch;
	size_t lens[STOP_MAX], n = 0, k;
	const size_t cut[4] = { 0, i, j, len };
	int m = 0;

	stop_arrays(c, lens);
	assert_int_equal(release_init(&r, c->stops, lens, c->nstops),
	    TS_OK);
	for (k = 0; k < 3; k++) {
		assert_int_equal(release_bytes(&r, text + cut[k],
		    cut[k + 1] - cut[k], &ch, &m), TS_OK);
		memcpy(out + n, ch.p, ch.len);
		n += ch.len;
	}
	release_finish(&r, &ch);
	memcpy(out + n, ch.p, ch.len);
	n += ch.len;
	*match = m;
	return n;
}

static void
test_stop_table(void **state)
{
	const struct stop_case *c;
	char out[MAX_TEXT];
	size_t k, i, j, len, want, n;
	int m;

	(void)state;
	for (k = 0; k < NELEM(stop_cases); k++) {
		c = &stop_cases[k];
		len = strlen(c->text);
		want = strlen(c->want);
		assert_true(len <= RELEASE_FEED_MAX * 2);
		assert_memory_equal(c->text, c->want, want);
		for (i = 0; i <= len; i++)
			for (j = i; j <= len; j++) {
				n = stop_split(c, c->text, len, i, j, &m);
				if (n != want || m != c->match)
					fail_msg("%s: sim_stop split %zu/%zu: "
					    "%zu bytes, stop %d", c->name, i,
					    j, n, m);
				if (j - i > RELEASE_FEED_MAX ||
				    i > RELEASE_FEED_MAX ||
				    len - j > RELEASE_FEED_MAX)
					continue;
				n = release_split(c, c->text, len, i, j, out,
				    &m);
				if (n != want || m != c->match ||
				    memcmp(out, c->want, n) != 0)
					fail_msg("%s: sim_release split "
					    "%zu/%zu: \"%.*s\", stop %d",
					    c->name, i, j, (int)n, out, m);
			}
	}
}

/* Text is held only while it may still begin a stop string. */
static void
test_stop_holdback(void **state)
{
	static const char *const stops[] = { "abc", "xyz" };
	static const size_t lens[] = { 3, 3 };
	static const struct {
		const char *in;
		size_t released;
		int match;
	} steps[] = {
		{ "12", 2, 0 },         /* nothing can start a stop */
		{ "a", 0, 0 },          /* "a" may begin "abc" */
		{ "b", 0, 0 },          /* "ab" */
		{ "d", 3, 0 },          /* "abd": no more */
		{ "xa", 1, 0 },         /* "x" goes, "a" may begin "abc" */
		{ "x", 1, 0 },          /* "a" goes, "x" is held */
		{ "xy", 1, 0 },         /* one "x" goes, "xy" held */
		{ "z!", 0, 2 },         /* "xyz": stop */
		{ "more", 0, 2 },       /* nothing after a stop */
	};
	struct stop_matcher st;
	size_t i;
	int m;

	(void)state;
	assert_int_equal(stop_init(&st, stops, lens, 2), TS_OK);
	for (i = 0; i < NELEM(steps); i++) {
		assert_int_equal(stop_feed(&st, steps[i].in,
		    strlen(steps[i].in), &m), steps[i].released);
		assert_int_equal(m, steps[i].match);
	}
	assert_int_equal(stop_flush(&st), 0);

	/* At the end, what is held goes out. */
	assert_int_equal(stop_init(&st, stops, lens, 2), TS_OK);
	assert_int_equal(stop_feed(&st, S("hi ab"), NULL), 3);
	assert_int_equal(stop_flush(&st), 2);
	assert_int_equal(stop_flush(&st), 0);
}

static void
test_stop_init(void **state)
{
	static const char long_stop[STOP_MAX_BYTES + 1] = { 'x' };
	const char *strs[STOP_MAX + 1] = { "a", "b", "c", "d", "e" };
	size_t lens[STOP_MAX + 1] = { 1, 1, 1, 1, 1 };
	struct stop_matcher st;
	struct release r;
	const char *bad[1];
	size_t bad_len[1];
	int m;

	(void)state;
	assert_int_equal(stop_init(&st, NULL, NULL, 0), TS_OK);
	assert_int_equal(stop_init(&st, strs, lens, STOP_MAX),
	    TS_OK);
	assert_int_equal(stop_init(&st, strs, lens, STOP_MAX + 1),
	    TS_ELIMIT);
	/* a refused set leaves a matcher without stops */
	assert_int_equal(stop_feed(&st, S("abc"), &m), 3);
	assert_int_equal(m, 0);

	bad[0] = long_stop;
	bad_len[0] = STOP_MAX_BYTES;
	assert_int_equal(stop_init(&st, bad, bad_len, 1), TS_OK);
	bad_len[0] = STOP_MAX_BYTES + 1;
	assert_int_equal(stop_init(&st, bad, bad_len, 1), TS_ELIMIT);
	bad_len[0] = 0;
	assert_int_equal(stop_init(&st, bad, bad_len, 1), TS_EINVAL);
	bad[0] = NULL;
	bad_len[0] = 1;
	assert_int_equal(stop_init(&st, bad, bad_len, 1), TS_EINVAL);

	/* Any bytes for sim_stop; valid UTF-8 only for sim_release. */
	bad[0] = "\xe4\xbd";
	bad_len[0] = 2;
	assert_int_equal(stop_init(&st, bad, bad_len, 1), TS_OK);
	assert_int_equal(release_init(&r, bad, bad_len, 1), TS_EINVAL);
	assert_int_equal(release_init(&r, strs, lens, STOP_MAX + 1),
	    TS_ELIMIT);
	assert_int_equal(release_init(&r, NULL, NULL, 0), TS_OK);
}

/* ---- the detokenizer ---------------------------------------------------- */

/* Token ids: EOS releases nothing, unknown ids and feeds after finish are
 * refused, oversized feeds too, and a character split over byte tokens
 * comes out whole. */
static void
test_release_tokens(void **state)
{
	static const char *const stops[] = { "\xe4\xb8\x96" };   /* 世 */
	static const size_t lens[] = { 3 };
	char big[RELEASE_FEED_MAX + 1];
	struct release r;
	struct release_chunk c;
	uint32_t ids[4];
	int m;

	(void)state;
	assert_int_equal(release_init(&r, NULL, NULL, 0), TS_OK);
	assert_int_equal(sim_tokenize(S(" the"), ids, 1), 1);
	assert_int_equal(sim_release_token(&r, ids[0], &c, &m), TS_OK);
	assert_int_equal(c.len, 4);
	assert_memory_equal(c.p, " the", 4);
	assert_int_equal(m, 0);
	/* 你 spelt in byte tokens */
	assert_int_equal(sim_release_token(&r, 0xe4, &c, &m), TS_OK);
	assert_int_equal(c.len, 0);
	assert_int_equal(sim_release_token(&r, 0xbd, &c, &m), TS_OK);
	assert_int_equal(c.len, 0);
	assert_int_equal(sim_release_token(&r, 0xa0, &c, &m), TS_OK);
	assert_int_equal(c.len, 3);
	assert_memory_equal(c.p, "\xe4\xbd\xa0", 3);
	assert_int_equal(sim_release_token(&r, SIM_EOS_ID, &c, &m), TS_OK);
	assert_int_equal(c.len, 0);
	assert_int_equal(sim_release_token(&r, SIM_EOS_ID + 1, &c, &m),
	    TS_EINVAL);
	assert_int_equal(c.len, 0);
	memset(big, 'a', sizeof(big));
	assert_int_equal(release_bytes(&r, big, sizeof(big), &c, &m),
	    TS_ELIMIT);
	assert_int_equal(c.len, 0);
	/* max_tokens cut a character short: U+FFFD at the end */
	assert_int_equal(sim_release_token(&r, 0xe4, &c, &m), TS_OK);
	release_finish(&r, &c);
	assert_int_equal(c.len, 3);
	assert_memory_equal(c.p, FFFD, 3);
	assert_int_equal(sim_release_token(&r, ids[0], &c, &m), TS_EINVAL);
	assert_int_equal(c.len, 0);
	release_finish(&r, &c);
	assert_int_equal(c.len, 0);

	/* A stop string spelt across byte tokens. */
	assert_int_equal(release_init(&r, stops, lens, 1), TS_OK);
	assert_int_equal(release_bytes(&r, S("ab"), &c, &m), TS_OK);
	assert_int_equal(c.len, 2);
	assert_int_equal(sim_release_token(&r, 0xe4, &c, &m), TS_OK);
	assert_int_equal(sim_release_token(&r, 0xb8, &c, &m), TS_OK);
	assert_int_equal(c.len + m, 0);
	assert_int_equal(sim_release_token(&r, 0x96, &c, &m), TS_OK);
	assert_int_equal(c.len, 0);
	assert_int_equal(m, 1);
	assert_int_equal(release_bytes(&r, S("cd"), &c, &m), TS_OK);
	assert_int_equal(c.len, 0);
	assert_int_equal(m, 1);
	release_finish(&r, &c);
	assert_int_equal(c.len, 0);
}

/*
 * The reference for the property test: the whole text, repaired as
 * sim_utf8 does, cut before the stop string whose end comes first (the
 * longest of those ending at the same byte): a direct O(n x stops)
 * search. Returns the length written to out.
 */
static size_t
reference(const char *text, size_t len, const char *const *stops,
    const size_t *lens, size_t nstops, char *out)
{
	struct utf8_repair u;
	size_t n, e, i, best;

	utf8_repair_init(&u);
	n = utf8_repair_feed(&u, text, len, out);
	n += utf8_repair_finish(&u, out + n);
	for (e = 1; e <= n; e++) {
		best = 0;
		for (i = 0; i < nstops; i++)
			if (lens[i] <= e && lens[i] > best &&
			    memcmp(out + e - lens[i], stops[i], lens[i]) == 0)
				best = lens[i];
		if (best > 0)
			return e - best;
	}
	return n;
}

/*
 * Property test over fixed seeds: sequences from the language model at
 * temperature 1.5 (more byte tokens), some with stop strings taken from
 * their own text (so they match, often across tokens), some cut at
 * max_tokens. The streamed chunks (one feed per token) are valid UTF-8
 * and equal, concatenated, the non-stream text (one releaser fed the
 * whole text in large pieces) and the reference.
 */
static void
test_release_property(void **state)
{
	enum { SEEDS = 96, MAX_TOKENS = 160 };
	static char raw[MAX_TOKENS * SIM_TOKEN_MAX_BYTES];
	static char streamed[3 * sizeof(raw) + 3], whole[sizeof(streamed)];
	static char ref[sizeof(streamed)];
	static uint32_t ids[MAX_TOKENS];
	struct engine_sampling p;
	struct sim_lm lm;
	struct release r;
	struct release_chunk c;
	const char *stops[3];
	size_t lens[3], nstops, len, n, nw, nr, k, pos, at;
	size_t with_bytes = 0, held_utf8 = 0, stopped = 0, cut_short = 0;
	uint64_t seed;
	int m, had_bytes;
	struct ts_buf text;

	(void)state;
	ts_buf_init(&text, sizeof(streamed));
	for (seed = 0; seed < SEEDS; seed++) {
		engine_sampling_defaults(&p);
		p.temperature = 1.5;
		p.seed = seed;
		p.has_seed = 1;
		sim_lm_init(&lm, S("property"), &p);
		len = 0;
		had_bytes = 0;
		for (k = 0; k < MAX_TOKENS; k++) {
			const char *t;
			size_t tl;

			ids[k] = sim_lm_next(&lm);
			if (ids[k] == SIM_EOS_ID)
				break;
			had_bytes |= ids[k] < SIM_FIRST_TEXT_ID;
			t = sim_token_text(ids[k], &tl);
			memcpy(raw + len, t, tl);
			len += tl;
		}
		sim_lm_free(&lm);
		n = k;
		with_bytes += had_bytes;
		cut_short += n == MAX_TOKENS;

		/* Stop strings from the text itself: a piece of 1..12
		 * bytes from a seed-chosen place (whole characters), and
		 * one that never occurs. */
		nstops = 0;
		if (seed % 3 != 0 && len > 0) {
			at = (size_t)(seed * 7919) % len;
			while (at > 0 && ((unsigned char)raw[at] & 0xc0) ==
			    0x80)
				at--;
			for (pos = at + 1 + seed % 12; pos < len &&
			    ((unsigned char)raw[pos] & 0xc0) == 0x80; pos++)
				;
			if (pos > len)
				pos = len;
			if (pos - at <= STOP_MAX_BYTES &&
			    utf8_valid(raw + at, pos - at)) {
				stops[nstops] = raw + at;
				lens[nstops++] = pos - at;
			}
		}
		stops[nstops] = "never\x01";
		lens[nstops++] = 6;

		/* Streamed: one feed per token. */
		assert_int_equal(release_init(&r, stops, lens, nstops),
		    TS_OK);
		nr = 0;
		m = 0;
		for (k = 0; k < n && m == 0; k++) {
			assert_int_equal(sim_release_token(&r, ids[k], &c,
			    &m), TS_OK);
			assert_true(utf8_valid(c.p, c.len));
			if (ids[k] < SIM_FIRST_TEXT_ID && c.len == 0)
				held_utf8++;
			memcpy(streamed + nr, c.p, c.len);
			nr += c.len;
		}
		stopped += m != 0;
		release_finish(&r, &c);
		assert_true(utf8_valid(c.p, c.len));
		memcpy(streamed + nr, c.p, c.len);
		nr += c.len;

		/* Non-stream: the whole text in 64-byte pieces. */
		assert_int_equal(release_init(&r, stops, lens, nstops),
		    TS_OK);
		nw = 0;
		for (pos = 0; pos < len; pos += RELEASE_FEED_MAX) {
			size_t piece = len - pos < RELEASE_FEED_MAX ?
			    len - pos : RELEASE_FEED_MAX;

			assert_int_equal(release_bytes(&r, raw + pos,
			    piece, &c, &m), TS_OK);
			memcpy(whole + nw, c.p, c.len);
			nw += c.len;
		}
		release_finish(&r, &c);
		memcpy(whole + nw, c.p, c.len);
		nw += c.len;

		/* The same text through release_text, in one call. */
		assert_int_equal(release_init(&r, stops, lens, nstops),
		    TS_OK);
		ts_buf_reset(&text);
		assert_int_equal(release_text(&r, raw, len, &text, &m), TS_OK);
		release_finish(&r, &c);
		assert_int_equal(ts_buf_append_part(&text, c.p, c.len), TS_OK);
		assert_int_equal(text.len, nw);
		assert_memory_equal(text.p, whole, nw);

		assert_int_equal(nr, nw);
		assert_memory_equal(streamed, whole, nr);
		assert_int_equal(reference(raw, len, stops, lens, nstops,
		    ref), nr);
		assert_memory_equal(streamed, ref, nr);
		assert_true(utf8_valid(streamed, nr));
	}
	/* The seeds exercise what they are meant to. */
	assert_true(with_bytes >= 5);
	assert_true(held_utf8 >= 5);
	assert_true(stopped >= SEEDS / 3);
	ts_buf_free(&text);
}

/* release_at_boundary: 1 only where nothing is held; a new releaser
 * started there releases the rest exactly as the first does. */
static void
test_release_boundary(void **state)
{
	static const char *const stops[] = { "END" };
	static const size_t lens[] = { 3 };
	/* tokens: plain, the start of a stop string, its end broken, half
	 * of a 2-byte character, its other half, the stop string */
	static const char *const toks[] = { "ab", "E", "Nx", "\xc3", "\xa9",
	    "END", "zz" };
	static const int boundary[] = { 1, 0, 1, 0, 1, 0 };
	struct release r, r2;
	struct release_chunk c;
	struct ts_buf a, b2;
	size_t i, j;
	int st;

	(void)state;
	assert_int_equal(release_init(&r, stops, lens, 1), TS_OK);
	assert_int_equal(release_at_boundary(&r), 1);
	for (i = 0; i < 6; i++) {
		assert_int_equal(release_bytes(&r, toks[i], strlen(toks[i]), &c,
		    &st), TS_OK);
		assert_int_equal(release_at_boundary(&r), boundary[i]);
	}
	assert_true(st != 0);           /* "END" matched: no more resume */
	release_finish(&r, &c);
	assert_int_equal(release_at_boundary(&r), 0);

	/* from each boundary, a fresh releaser gives the same rest */
	for (i = 0; i < 6; i++) {
		if (!boundary[i])
			continue;
		ts_buf_init(&a, 256);
		ts_buf_init(&b2, 256);
		assert_int_equal(release_init(&r, stops, lens, 1), TS_OK);
		assert_int_equal(release_init(&r2, stops, lens, 1), TS_OK);
		for (j = 0; j < 7; j++) {
			assert_int_equal(release_text(&r, toks[j],
			    strlen(toks[j]), j > i ? &a : NULL, &st), TS_OK);
			if (j > i)
				assert_int_equal(release_text(&r2, toks[j],
				    strlen(toks[j]), &b2, &st), TS_OK);
			if (st)
				break;
		}
		assert_int_equal(a.len, b2.len);
		assert_memory_equal(a.p ? a.p : "", b2.p ? b2.p : "", a.len);
		ts_buf_free(&a);
		ts_buf_free(&b2);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_table),
		cmocka_unit_test(test_utf8_holdback),
		cmocka_unit_test(test_utf8_valid),
		cmocka_unit_test(test_stop_table),
		cmocka_unit_test(test_stop_holdback),
		cmocka_unit_test(test_stop_init),
		cmocka_unit_test(test_release_tokens),
		cmocka_unit_test(test_release_property),
		cmocka_unit_test(test_release_boundary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
