/*
 * test_resume.c - SSE event ids for resumable streams (resume.h): the
 * format/parse round trip at the edges of every part, hostile ids from a
 * client's Last-Event-ID header (each refused with a reason), and the
 * parameters' key.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "proto/resume.h"

#define T(s) s, sizeof(s) - 1
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The key of prompt "hello", max_tokens 4, no error_after. */
#define KEY "c9ea902ef39fb35e"
#define KEY_VAL 0xc9ea902ef39fb35eULL

struct round_case {
	uint64_t stream;
	uint64_t key;
	uint64_t index;
	const char *want;
};

static const struct round_case round_cases[] = {
	{ 1, 0, 0, "1-0000000000000000-0" },
	{ 24, KEY_VAL, 0, "24-" KEY "-0" },
	{ 24, KEY_VAL, 3, "24-" KEY "-3" },
	{ 24, KEY_VAL, RESUME_INDEX_END, "24-" KEY "-end" },
	{ 7, 0x00000000000000a1ULL, 8191, "7-00000000000000a1-8191" },
	{ 1, KEY_VAL, UINT64_MAX - 1, "1-" KEY "-18446744073709551614" },
	/* the longest id: every part at its maximum */
	{ UINT64_MAX, UINT64_MAX, UINT64_MAX - 1,
	  "18446744073709551615-ffffffffffffffff-18446744073709551614" },
	{ UINT64_MAX, UINT64_MAX, RESUME_INDEX_END,
	  "18446744073709551615-ffffffffffffffff-end" },
};

/* format gives the exact bytes; parse gives back the same three parts. */
static void
test_round_trip(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(round_cases); i++) {
		const struct round_case *c = &round_cases[i];
		struct resume_id in = { c->stream, c->key, c->index, 0 };
		struct resume_id out = { 0, 0, 0, 0 };
		char buf[RESUME_ID_MAX + 1];
		const char *why = NULL;
		size_t n;

		n = resume_id_format(buf, sizeof(buf), &in);
		assert_int_equal(n, strlen(c->want));
		assert_true(n <= RESUME_ID_MAX);
		assert_string_equal(buf, c->want);
		assert_int_equal(resume_id_parse(buf, n, &out, &why), TS_OK);
		assert_true(out.stream == c->stream);
		assert_true(out.key == c->key);
		assert_true(out.index == c->index);
		assert_true(out.instance == 0);
	}
}

/* A buffer one byte too small (no room for the NUL) gives 0. */
static void
test_format_small_buffer(void **state)
{
	struct resume_id id = { 24, KEY_VAL, 3, 0 };
	char buf[RESUME_ID_MAX + 1];
	size_t n = strlen("24-" KEY "-3");

	(void)state;
	assert_int_equal(resume_id_format(buf, n, &id), 0);
	assert_int_equal(resume_id_format(buf, 1, &id), 0);
	assert_int_equal(resume_id_format(buf, n + 1, &id), n);
	assert_string_equal(buf, "24-" KEY "-3");
}

/* The parser reads exactly len bytes: no strlen, no NUL needed. */
static void
test_parse_by_length(void **state)
{
	static const char s[] = "5-" KEY "-123" "garbage";
	char unterminated[sizeof("5-" KEY "-end") - 1];
	struct resume_id id;
	const char *why = NULL;

	(void)state;
	assert_int_equal(resume_id_parse(s, strlen("5-" KEY "-12"), &id,
	    &why), TS_OK);
	assert_true(id.stream == 5 && id.key == KEY_VAL && id.index == 12);
	memcpy(unterminated, "5-" KEY "-end", sizeof(unterminated));
	assert_int_equal(resume_id_parse(unterminated, sizeof(unterminated),
	    &id, &why), TS_OK);
	assert_true(id.index == RESUME_INDEX_END);
}

struct bad_case {
	const char *s;
	size_t len;
	const char *what;
};

/* Every one of these must be refused: a client sends any bytes. */
static const struct bad_case bad_cases[] = {
	{ T(""), "empty" },
	{ T("-"), "a lone separator" },
	{ T("--"), "empty parts" },
	/* non-numeric stream or index */
	{ T("x-" KEY "-1"), "stream not a number" },
	{ T("1a-" KEY "-1"), "stream with a letter" },
	{ T("1-" KEY "-x"), "index not a number" },
	{ T("1-" KEY "-1a"), "index with a letter" },
	{ T("1-" KEY "-0x1"), "index in hex" },
	{ T("1.0-" KEY "-1"), "stream with a dot" },
	{ T("1-" KEY "-1.5"), "index with a dot" },
	/* signs */
	{ T("-1-" KEY "-1"), "negative stream" },
	{ T("1-" KEY "--1"), "negative index" },
	{ T("+1-" KEY "-1"), "plus sign on the stream" },
	{ T("1-" KEY "-+1"), "plus sign on the index" },
	{ T("1-+" KEY "-1"), "plus sign on the key" },
	/* leading zeros */
	{ T("01-" KEY "-1"), "stream with a leading zero" },
	{ T("00-" KEY "-1"), "stream 00" },
	{ T("1-" KEY "-01"), "index with a leading zero" },
	{ T("1-" KEY "-00"), "index 00" },
	{ T("1-" KEY "-0end"), "index 0end" },
	/* stream 0 is never a stream id */
	{ T("0-" KEY "-1"), "stream 0" },
	/* overflow */
	{ T("18446744073709551616-" KEY "-1"), "stream UINT64_MAX + 1" },
	{ T("99999999999999999999-" KEY "-1"), "stream 20 nines" },
	{ T("100000000000000000000-" KEY "-1"), "stream of 21 digits" },
	{ T("1-" KEY "-18446744073709551616"), "index UINT64_MAX + 1" },
	{ T("1-" KEY "-99999999999999999999"), "index 20 nines" },
	{ T("1-" KEY "-100000000000000000000"), "index of 21 digits" },
	/* UINT64_MAX is the [DONE] event's index, spelled "end" */
	{ T("1-" KEY "-18446744073709551615"), "index UINT64_MAX" },
	/* the key: exactly 16 lowercase hex digits */
	{ T("1-c9ea902ef39fb35-1"), "key of 15 hex digits" },
	{ T("1-c9ea902ef39fb35e0-1"), "key of 17 hex digits" },
	{ T("1--1"), "empty key" },
	{ T("1-C9EA902EF39FB35E-1"), "uppercase key" },
	{ T("1-c9ea902ef39fb35E-1"), "one uppercase hex digit" },
	{ T("1-c9ea902ef39fb35g-1"), "key with a g" },
	{ T("1-0xc9ea902ef39fb3-1"), "key with a 0x prefix" },
	{ T("1- c9ea902ef39fb35-1"), "key with a space" },
	/* spaces and line breaks */
	{ T(" 1-" KEY "-1"), "leading space" },
	{ T("1-" KEY "-1 "), "trailing space" },
	{ T("1 -" KEY "-1"), "space before a separator" },
	{ T("1-" KEY "- 1"), "space after a separator" },
	{ T("1-" KEY "-1\n"), "trailing LF" },
	{ T("1-" KEY "-1\r"), "trailing CR" },
	{ T("1-" KEY "-\t1"), "tab" },
	/* the wrong number of parts */
	{ T("1-" KEY "-1-2"), "four parts" },
	{ T("1-" KEY "-end-1"), "four parts, end inside" },
	{ T("1-" KEY "-1-"), "a trailing separator" },
	{ T("1-2-" KEY "-1"), "an extra part before the key" },
	{ T("1-" KEY), "no index" },
	{ T("1-" KEY "-"), "empty index" },
	{ T("-" KEY "-1"), "empty stream" },
	{ T("1"), "one part" },
	{ T(KEY), "a key alone" },
	{ T("1_" KEY "_1"), "underscores" },
	{ T("1:" KEY ":1"), "colons" },
	/* a NUL byte inside the id */
	{ T("1-" KEY "-1\0"), "trailing NUL" },
	{ T("1\0-" KEY "-1"), "NUL in the stream" },
	{ T("1-" KEY "-\0" "1"), "NUL before the index" },
	{ T("1-c9ea902ef39f\0" "35e-1"), "NUL in the key" },
	{ T("1-" KEY "-end\0"), "NUL after end" },
	/* end, exactly */
	{ T("1-" KEY "-END"), "END in uppercase" },
	{ T("1-" KEY "-End"), "End" },
	{ T("1-" KEY "-en"), "en" },
	{ T("1-" KEY "-endd"), "endd" },
	{ T("1-" KEY "-done"), "done" },
	{ T("end-" KEY "-end"), "stream end" },
};

static void
assert_refused(const char *s, size_t len, const char *what)
{
	struct resume_id id;
	const char *why = NULL;
	enum ts_err rc;

	rc = resume_id_parse(s, len, &id, &why);
	if (rc != TS_EINVAL || why == NULL || *why == '\0')
		fail_msg("%s: %.*s (len %zu) gave %d, reason %s", what,
		    (int)(len > 80 ? 80 : len), s, len, (int)rc,
		    why ? why : "(null)");
}

static void
test_hostile_ids(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bad_cases); i++)
		assert_refused(bad_cases[i].s, bad_cases[i].len,
		    bad_cases[i].what);
}

/* A negative index has one dash too many, so the first part reads as an
 * instance name: the reason says how the id was read (four parts) and what
 * an instance name is, not just "not an instance name". */
static void
test_negative_index_reason(void **state)
{
	struct resume_id id;
	const char *why = NULL;

	(void)state;
	assert_int_equal(resume_id_parse(T("3-" KEY "--1"), &id, &why),
	    TS_EINVAL);
	assert_non_null(why);
	assert_non_null(strstr(why, "four parts"));
	assert_non_null(strstr(why, "a letter first"));
}

/* Over RESUME_ID_MAX bytes is refused before anything else is looked at,
 * whatever the bytes. */
static void
test_too_long(void **state)
{
	static const char prefix[] = "1-" KEY "-";
	char big[8192];
	size_t n;

	(void)state;
	/* "1-KEY-" then digits: RESUME_ID_MAX + 1 (81) bytes */
	memcpy(big, prefix, sizeof(prefix) - 1);
	memset(big + sizeof(prefix) - 1, '1', sizeof(big) - sizeof(prefix));
	assert_refused(big, RESUME_ID_MAX + 1, "81 bytes");
	assert_refused(big, sizeof(big) - 1, "8191 bytes");
	/* 81 bytes of junk, and of separators */
	memset(big, 'a', sizeof(big));
	assert_refused(big, RESUME_ID_MAX + 1, "81 letters");
	memset(big, '-', sizeof(big));
	assert_refused(big, RESUME_ID_MAX + 1, "81 separators");
	/* a valid id padded with zeros after the index to 81 bytes */
	n = strlen("1-" KEY "-1");
	memcpy(big, "1-" KEY "-1", n);
	memset(big + n, '0', RESUME_ID_MAX + 1 - n);
	assert_refused(big, RESUME_ID_MAX + 1, "index padded to 81 bytes");
	/* the longest valid id fits: an 8-byte instance, every part at
	 * its maximum */
	{
		struct resume_id id = { UINT64_MAX, UINT64_MAX, UINT64_MAX - 1,
		    0 };
		char buf[RESUME_ID_MAX + 1];

		assert_int_equal(resume_instance_parse("zzzzzzzz", 8,
		    &id.instance), TS_OK);
		n = resume_id_format(buf, sizeof(buf), &id);
		assert_true(n > 0 && n <= RESUME_ID_MAX);
	}
}

/* The three parts are parsed as documented at their exact limits. */
static void
test_limits_accepted(void **state)
{
	static const struct {
		const char *s;
		uint64_t stream, index;
	} ok[] = {
		{ "18446744073709551615-" KEY "-0", UINT64_MAX, 0 },
		{ "1-" KEY "-18446744073709551614", 1, UINT64_MAX - 1 },
		{ "1-" KEY "-end", 1, RESUME_INDEX_END },
		{ "10-" KEY "-10", 10, 10 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(ok); i++) {
		struct resume_id id;
		const char *why = NULL;

		assert_int_equal(resume_id_parse(ok[i].s, strlen(ok[i].s),
		    &id, &why), TS_OK);
		assert_true(id.stream == ok[i].stream);
		assert_true(id.key == KEY_VAL);
		assert_true(id.index == ok[i].index);
	}
}

struct key_case {
	const char *prompt;
	size_t len;
	uint32_t max_tokens;
	int32_t error_after;
};

/* Pairwise different generation parameters: every key must differ. */
static const struct key_case key_cases[] = {
	{ T("hello"), 4, -1 },
	{ T("hello"), 5, -1 },          /* max_tokens */
	{ T("hello"), 0, -1 },
	{ T("hello"), 8192, -1 },
	{ T("hello"), 4, 0 },           /* error_after */
	{ T("hello"), 4, 3 },
	{ T("hello"), 4, 4 },
	{ T("hellp"), 4, -1 },          /* one byte of the prompt */
	{ T("hell"), 4, -1 },           /* a prefix */
	{ T("hello "), 4, -1 },
	{ T("Hello"), 4, -1 },
	{ T(""), 4, -1 },
	{ T("a\0b"), 4, -1 },           /* NUL bytes count */
	{ T("a\0c"), 4, -1 },
	{ T("a"), 4, -1 },
	{ T("a\0"), 4, -1 },
	{ T("\0"), 4, -1 },
	{ T("\0\0"), 4, -1 },
};

static uint64_t
key_of(const struct key_case *c)
{
	return resume_key(c->prompt, c->len, c->max_tokens, c->error_after);
}

static void
test_key_distinct(void **state)
{
	size_t i, j;

	(void)state;
	for (i = 0; i < NELEM(key_cases); i++)
		for (j = i + 1; j < NELEM(key_cases); j++)
			if (key_of(&key_cases[i]) == key_of(&key_cases[j]))
				fail_msg("key cases %zu and %zu collide", i,
				    j);
}

/* Same parameters, other buffers: the same key; bytes past len are not
 * read; the keys are pinned (the README's example uses max_tokens 5). */
static void
test_key_stable(void **state)
{
	char a[] = "a\0b tail one";
	char b[] = "a\0b tail two";
	char *heap;

	(void)state;
	assert_true(resume_key("hello", 5, 4, -1) == KEY_VAL);
	assert_true(resume_key("hello", 5, 5, -1) == 0x502325e84dc53f9fULL);
	assert_true(resume_key(a, 3, 20, -1) == resume_key(b, 3, 20, -1));
	assert_true(resume_key(a, 3, 20, 7) == resume_key(b, 3, 20, 7));
	assert_true(resume_key("abc", 2, 20, -1) ==
	    resume_key("abd", 2, 20, -1));
	assert_true(resume_key(a, 9, 20, -1) != resume_key(a, 3, 20, -1));
	heap = malloc(5);
	assert_non_null(heap);
	memcpy(heap, "hello", 5);         /* no NUL: the key reads 5 bytes */
	assert_true(resume_key(heap, 5, 4, -1) == KEY_VAL);
	free(heap);
}

/* Instance names (--instance): what is a name, packed and unpacked. */
static void
test_instance_names(void **state)
{
	static const char *const good[] = { "a", "b1", "host07", "zzzzzzzz",
	    "a0000000" };
	static const char *const bad[] = { "", "1", "1b", "B1", "b-1", "b_1",
	    "abcdefghi", "b1 ", " b1", "b\xc3\xa9", "-" };
	char name[RESUME_INSTANCE_MAX + 1];
	uint64_t v, w;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(good); i++) {
		v = 0;
		assert_int_equal(resume_instance_parse(good[i],
		    strlen(good[i]), &v), TS_OK);
		assert_true(v != 0);
		assert_int_equal(resume_instance_name(v, name),
		    strlen(good[i]));
		assert_string_equal(name, good[i]);
	}
	for (i = 0; i < NELEM(bad); i++) {
		v = 7;
		if (resume_instance_parse(bad[i], strlen(bad[i]), &v) != TS_EINVAL)
			fail_msg("instance '%s' was accepted", bad[i]);
	}
	/* distinct names, distinct values; no name, no bytes */
	assert_int_equal(resume_instance_parse("b1", 2, &v), TS_OK);
	assert_int_equal(resume_instance_parse("b10", 3, &w), TS_OK);
	assert_true(v != w);
	assert_int_equal(resume_instance_name(0, name), 0);
	assert_string_equal(name, "");
}

/* Event ids of a named server: four parts, the instance first; the
 * three-part form is an unnamed server's (instance 0). */
static void
test_instance_event_ids(void **state)
{
	static const char *const bad[] = {
	    "B1-24-" KEY "-3", "1b-24-" KEY "-3", "abcdefghi-24-" KEY "-3",
	    "-24-" KEY "-3", "b1--" KEY "-3", "b1-0-" KEY "-3",
	    "b1-24-" KEY "-3-4", "b1-b2-24-" KEY "-3", "b1-24-" KEY "--3",
	    "b1_24-" KEY "-3",
	};
	struct resume_id id = { 24, KEY_VAL, 3, 0 }, out;
	char buf[RESUME_ID_MAX + 1];
	const char *why;
	size_t i, n;

	(void)state;
	assert_int_equal(resume_instance_parse("b1", 2, &id.instance), TS_OK);
	n = resume_id_format(buf, sizeof(buf), &id);
	assert_string_equal(buf, "b1-24-" KEY "-3");
	assert_int_equal(resume_id_parse(buf, n, &out, &why), TS_OK);
	assert_true(out.instance == id.instance && out.stream == 24 &&
	    out.key == KEY_VAL && out.index == 3);
	id.index = RESUME_INDEX_END;
	n = resume_id_format(buf, sizeof(buf), &id);
	assert_string_equal(buf, "b1-24-" KEY "-end");
	assert_int_equal(resume_id_parse(buf, n, &out, &why), TS_OK);
	assert_true(out.index == RESUME_INDEX_END);
	for (i = 0; i < NELEM(bad); i++)
		assert_refused(bad[i], strlen(bad[i]), bad[i]);
}

/* Request ids (X-Request-Id): "N" or "NAME-N", both ways. */
static void
test_request_ids(void **state)
{
	static const char *const bad[] = { "", "0", "01", "-1", "b1-",
	    "b1-0", "b1-01", "B1-1", "1b-1", "b1-1-2", "b1--1", "b1-x",
	    "abcdefghi-1", "b1-18446744073709551616", " 1", "1 ", "b1 -1" };
	char buf[RESUME_REQUEST_ID_MAX + 1];
	uint64_t inst, stream, b1;
	const char *why;
	size_t i;

	(void)state;
	assert_int_equal(resume_request_id_format(buf, sizeof(buf), 0, 42),
	    2);
	assert_string_equal(buf, "42");
	assert_int_equal(resume_instance_parse("b1", 2, &b1), TS_OK);
	assert_int_equal(resume_request_id_format(buf, sizeof(buf), b1, 42),
	    5);
	assert_string_equal(buf, "b1-42");
	assert_int_equal(resume_request_id_format(buf, 5, b1, 42), 0);
	assert_int_equal(resume_request_id_parse(T("b1-42"), &inst, &stream,
	    &why), TS_OK);
	assert_true(inst == b1 && stream == 42);
	assert_int_equal(resume_request_id_parse(T("42"), &inst, &stream,
	    &why), TS_OK);
	assert_true(inst == 0 && stream == 42);
	assert_int_equal(resume_request_id_parse(
	    T("zzzzzzzz-18446744073709551615"), &inst, &stream, &why), TS_OK);
	assert_true(stream == UINT64_MAX);
	for (i = 0; i < NELEM(bad); i++) {
		why = NULL;
		if (resume_request_id_parse(bad[i], strlen(bad[i]), &inst,
		    &stream, &why) != TS_EINVAL || why == NULL)
			fail_msg("request id '%s' was accepted", bad[i]);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_format_small_buffer),
		cmocka_unit_test(test_parse_by_length),
		cmocka_unit_test(test_hostile_ids),
		cmocka_unit_test(test_negative_index_reason),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_limits_accepted),
		cmocka_unit_test(test_instance_names),
		cmocka_unit_test(test_instance_event_ids),
		cmocka_unit_test(test_request_ids),
		cmocka_unit_test(test_key_distinct),
		cmocka_unit_test(test_key_stable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
