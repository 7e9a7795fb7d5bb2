/*
 * test_sse.c - the SSE encoder: exact bytes, one data line per token,
 * escaping of every character that could break framing (cases C11, C12).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "proto/sse.h"

struct enc_case {
	const char *token;
	size_t len;
	const char *want;
};

#define T(s) s, sizeof(s) - 1

/* C11: quote, backslash, LF, LF LF, CR, tab, a control character. */
static const struct enc_case token_cases[] = {
	{ T("hello"), "data: {\"token\":\"hello\"}\n\n" },
	{ T(" \"quoted\""), "data: {\"token\":\" \\\"quoted\\\"\"}\n\n" },
	{ T("\\"), "data: {\"token\":\"\\\\\"}\n\n" },
	{ T("\n"), "data: {\"token\":\"\\n\"}\n\n" },
	{ T("\n\n"), "data: {\"token\":\"\\n\\n\"}\n\n" },
	{ T("\r"), "data: {\"token\":\"\\r\"}\n\n" },
	{ T("\t"), "data: {\"token\":\"\\t\"}\n\n" },
	{ T("\x1b[0m"), "data: {\"token\":\"\\u001B[0m\"}\n\n" },
	{ T("data: [DONE]"), "data: {\"token\":\"data: [DONE]\"}\n\n" },
	{ T("\xe4\xbd\xa0\xe5\xa5\xbd"),
	  "data: {\"token\":\"\xe4\xbd\xa0\xe5\xa5\xbd\"}\n\n" },
	{ T("\xf0\x9f\x9a\x80"), "data: {\"token\":\"\xf0\x9f\x9a\x80\"}\n\n" },
	{ T("\xe2\x80\xa8"), "data: {\"token\":\"\xe2\x80\xa8\"}\n\n" },
};

static void
test_token_events(void **unused)
{
	size_t i;

	for (i = 0; i < sizeof(token_cases) / sizeof(token_cases[0]); i++) {
		struct ts_buf b;
		const char *nl;

		ts_buf_init(&b, 4096);
		assert_int_equal(sse_encode_token(&b, token_cases[i].token,
		    token_cases[i].len), TS_OK);
		assert_int_equal(b.len, strlen(token_cases[i].want));
		assert_memory_equal(b.p, token_cases[i].want, b.len);
		/* exactly one line break inside: the data line's end */
		nl = memchr(b.p, '\n', b.len);
		assert_non_null(nl);
		assert_int_equal((size_t)(nl - b.p), b.len - 2);
		assert_null(memchr(b.p, '\r', b.len));
		ts_buf_free(&b);
	}
}

/* A token longer than the encoder's stack buffer takes jansson's general
 * path: the same bytes as a short one. */
static void
test_long_token_event(void **unused)
{
	static const char head[] = "data: {\"token\":\"";
	char tok[1500], want[1600];
	size_t i, n = sizeof(head) - 1;
	struct ts_buf b;

	(void)unused;
	for (i = 0; i < sizeof(tok); i++)
		tok[i] = i % 100 == 99 ? '"' : 'a';
	memcpy(want, head, n);
	for (i = 0; i < sizeof(tok); i++) {
		if (tok[i] == '"')
			want[n++] = '\\';
		want[n++] = tok[i];
	}
	memcpy(want + n, "\"}\n\n", 4);
	n += 4;
	ts_buf_init(&b, 8192);
	assert_int_equal(sse_encode_token(&b, tok, sizeof(tok)), TS_OK);
	assert_int_equal(b.len, n);
	assert_memory_equal(b.p, want, n);
	ts_buf_free(&b);
}

static void
test_invalid_utf8_refused(void **unused)
{
	struct ts_buf b;

	ts_buf_init(&b, 4096);
	assert_int_equal(sse_encode_token(&b, "\xe4\xbd", 2), TS_EINVAL);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
}

static void
test_done_comment_error(void **unused)
{
	struct ts_buf b;
	static const char want[] = ": keep-alive\n\ndata: [DONE]\n\n";

	ts_buf_init(&b, 4096);
	assert_int_equal(sse_encode_comment(&b, "keep-alive", 10), TS_OK);
	assert_int_equal(sse_encode_done(&b), TS_OK);
	assert_int_equal(b.len, sizeof(want) - 1);
	assert_memory_equal(b.p, want, b.len);
	assert_int_equal(sse_encode_comment(&b, "a\nb", 3), TS_EINVAL);
	ts_buf_reset(&b);
	assert_int_equal(sse_encode_error(&b, "boom \"x\"", "server_error",
	    "injected_error"), TS_OK);
	assert_string_equal(b.p, "data: {\"error\":{\"message\":\"boom "
	    "\\\"x\\\"\",\"type\":\"server_error\",\"code\":"
	    "\"injected_error\"}}\n\n");
	ts_buf_free(&b);
}

/* Multi-line data: one data line per line, any of CR, LF, CRLF. */
static void
test_multiline_data(void **unused)
{
	static const struct { const char *in; size_t len; const char *want; }
	    cases[] = {
		{ T(""), "data: \n\n" },
		{ T("a\nb"), "data: a\ndata: b\n\n" },
		{ T("a\r\nb"), "data: a\ndata: b\n\n" },
		{ T("a\rb"), "data: a\ndata: b\n\n" },
		{ T("a\n"), "data: a\ndata: \n\n" },
		{ T("\n\n"), "data: \ndata: \ndata: \n\n" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ts_buf b;

		ts_buf_init(&b, 4096);
		assert_int_equal(sse_encode_data(&b, cases[i].in,
		    cases[i].len), TS_OK);
		assert_string_equal(b.p, cases[i].want);
		ts_buf_free(&b);
	}
}

/* id and retry fields (WHATWG 9.2.6): an id line starts the event. */
static void
test_id_and_retry(void **unused)
{
	struct ts_buf b;

	ts_buf_init(&b, 4096);
	assert_int_equal(sse_encode_id(&b, "7-00ff-3", 8), TS_OK);
	assert_int_equal(sse_encode_retry(&b, 1000), TS_OK);
	assert_int_equal(sse_encode_token(&b, "x", 1), TS_OK);
	/* retry is a field of the event, not a block of its own */
	assert_string_equal(b.p, "id: 7-00ff-3\nretry: 1000\n"
	    "data: {\"token\":\"x\"}\n\n");
	assert_int_equal(sse_encode_id(&b, "a\nb", 3), TS_EINVAL);
	assert_int_equal(sse_encode_id(&b, "a\rb", 3), TS_EINVAL);
	assert_int_equal(sse_encode_id(&b, "a\0b", 3), TS_EINVAL);
	ts_buf_free(&b);
}

/* A named event (the Responses API's): the event line, then the data
 * lines as sse_encode_data makes them; a bad name or a full buffer
 * appends nothing. */
static void
test_named_event(void **unused)
{
	struct ts_buf b;

	ts_buf_init(&b, 4096);
	assert_int_equal(sse_encode_event(&b, "response.created",
	    "{\"a\":1}", 7), TS_OK);
	assert_int_equal(sse_encode_event(&b, "x", "l1\nl2", 5), TS_OK);
	assert_string_equal(b.p, "event: response.created\n"
	    "data: {\"a\":1}\n\nevent: x\ndata: l1\ndata: l2\n\n");
	assert_int_equal(sse_encode_event(&b, "", "d", 1), TS_EINVAL);
	assert_int_equal(sse_encode_event(&b, "a\nb", "d", 1), TS_EINVAL);
	assert_int_equal(sse_encode_event(&b, "a\rb", "d", 1), TS_EINVAL);
	ts_buf_free(&b);
	ts_buf_init(&b, 16);
	assert_int_equal(sse_encode_event(&b, "name", "0123456789", 10),
	    TS_ELIMIT);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
}

static void
test_limit_leaves_buffer_unchanged(void **unused)
{
	struct ts_buf b;

	ts_buf_init(&b, 20);
	assert_int_equal(sse_encode_data(&b, "0123456789", 10), TS_OK);
	assert_int_equal(b.len, 18);
	assert_int_equal(sse_encode_token(&b, "x", 1), TS_ELIMIT);
	assert_int_equal(b.len, 18);
	ts_buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_events),
		cmocka_unit_test(test_long_token_event),
		cmocka_unit_test(test_invalid_utf8_refused),
		cmocka_unit_test(test_done_comment_error),
		cmocka_unit_test(test_multiline_data),
		cmocka_unit_test(test_id_and_retry),
		cmocka_unit_test(test_named_event),
		cmocka_unit_test(test_limit_leaves_buffer_unchanged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
