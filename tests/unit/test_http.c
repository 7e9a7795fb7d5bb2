/*
 * test_http.c - query decoding (C06), JSON request parsing and its errors
 * (C08, C09), table-driven.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "proto/http.h"

#define T(s) s, sizeof(s) - 1

static void
test_form_decode(void **unused)
{
	static const struct { const char *in; size_t len; const char *out;
	    size_t out_len; } ok[] = {
		{ T("1%2B1%3D2"), "1+1=2", 5 },
		{ T("a+b"), "a b", 3 },
		{ T("%E4%BD%A0%E5%A5%BD"), "\xe4\xbd\xa0\xe5\xa5\xbd", 6 },
		{ T("%7e%7E"), "~~", 2 },
		{ T("a%00b"), "a\0b", 3 },
		{ T(""), "", 0 },
	};
	static const struct { const char *in; size_t len; size_t at; }
	    bad[] = {
		{ T("%"), 0 }, { T("%4"), 0 }, { T("%G1"), 0 },
		{ T("ab%zz"), 2 }, { T("a%4"), 1 },
	};
	char out[64];
	size_t i, n, at;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(http_form_decode(ok[i].in, ok[i].len, out, &n,
		    &at), TS_OK);
		assert_int_equal(n, ok[i].out_len);
		assert_memory_equal(out, ok[i].out, n);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(http_form_decode(bad[i].in, bad[i].len, out,
		    &n, &at), TS_EINVAL);
		assert_int_equal(at, bad[i].at);
	}
}

static void
test_query_ok(void **unused)
{
	struct http_gen_request r;
	struct http_error err;
	static const char qs[] =
	    "x=1&prompt=a+b%21&max_tokens=20&tpot_ms=5&prefill_ms=0&&z";

	assert_int_equal(http_parse_query(qs, sizeof(qs) - 1, &r, &err),
	    TS_OK);
	assert_int_equal(r.prompt_len, 4);
	assert_memory_equal(r.prompt, "a b!", 4);
	assert_int_equal(r.max_tokens, 20);
	assert_int_equal(r.knobs.tpot_ms, 5);
	assert_int_equal(r.knobs.prefill_ms, 0);
	assert_int_equal(r.knobs.error_after, -1);
	http_gen_request_free(&r);
	assert_int_equal(http_parse_query(T("prompt="), &r, &err), TS_OK);
	assert_int_equal(r.prompt_len, 0);
	assert_int_equal(r.max_tokens, HTTP_DEFAULT_MAX_TOKENS);
	http_gen_request_free(&r);
}

static void
test_query_errors(void **unused)
{
	static const struct { const char *qs; const char *code; } cases[] = {
		{ "", "missing_prompt" },
		{ "max_tokens=3", "missing_prompt" },
		{ "prompt=a&max_tokens=-1", "invalid_max_tokens" },
		{ "prompt=a&max_tokens=3.5", "invalid_max_tokens" },
		{ "prompt=a&max_tokens=", "invalid_max_tokens" },
		{ "prompt=a&max_tokens=8193", "invalid_max_tokens" },
		{ "prompt=a&max_tokens=99999999999999999999999",
		  "invalid_max_tokens" },
		{ "prompt=a&max_tokens=%2D1", "invalid_max_tokens" },
		{ "prompt=%", "invalid_percent_encoding" },
		{ "prompt=%G1", "invalid_percent_encoding" },
		{ "prompt=a&prompt=b", "duplicate_param" },
		{ "prompt=a&tpot_ms=1&tpot_ms=1", "duplicate_param" },
		{ "prompt=a&tpot_ms=10001", "invalid_tpot_ms" },
		{ "prompt=a&prefill_ms=60001", "invalid_prefill_ms" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_gen_request r;
		struct http_error err;

		assert_int_equal(http_parse_query(cases[i].qs,
		    strlen(cases[i].qs), &r, &err), TS_EINVAL);
		assert_int_equal(err.status, 400);
		assert_string_equal(err.code, cases[i].code);
		assert_true(strlen(err.message) > 10);
		assert_null(r.prompt);
	}
}

static void
test_json(void **unused)
{
	static const struct { const char *body; const char *code; } bad[] = {
		{ "", "empty_body" },
		{ "not json", "invalid_json" },
		{ "{", "invalid_json" },
		{ "[1]", "invalid_json" },
		{ "{\"prompt\":\"a\"} x", "invalid_json" },
		{ "{\"prompt\":\"a\",\"prompt\":\"b\"}", "invalid_json" },
		{ "{\"prompt\":123}", "invalid_prompt" },
		{ "{}", "missing_prompt" },
		{ "{\"prompt\":null}", "missing_prompt" },
		{ "{\"prompt\":\"a\",\"max_tokens\":-1}", "invalid_max_tokens" },
		{ "{\"prompt\":\"a\",\"max_tokens\":3.5}", "invalid_max_tokens" },
		{ "{\"prompt\":\"a\",\"max_tokens\":\"5\"}",
		  "invalid_max_tokens" },
		{ "{\"prompt\":\"a\",\"max_tokens\":1e9}", "invalid_max_tokens" },
		{ "{\"prompt\":\"a\",\"max_tokens\":2147483648}",
		  "invalid_max_tokens" },
		{ "{\"prompt\":\"\xff\"}", "invalid_json" },
	};
	struct http_gen_request r;
	struct http_error err;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(http_parse_json(bad[i].body,
		    strlen(bad[i].body), &r, &err), TS_EINVAL);
		assert_int_equal(err.status, 400);
		assert_string_equal(err.code, bad[i].code);
	}
	assert_int_equal(http_parse_json(T("{\"prompt\":\"a\\u0000b\","
	    "\"max_tokens\":null,\"extra\":[1]}"), &r, &err), TS_OK);
	assert_int_equal(r.prompt_len, 3);
	assert_memory_equal(r.prompt, "a\0b", 3);
	assert_int_equal(r.max_tokens, HTTP_DEFAULT_MAX_TOKENS);
	http_gen_request_free(&r);
	assert_int_equal(http_parse_json(T("{\"prompt\":\"hi\",\"max_tokens\":"
	    "0,\"error_after\":2}"), &r, &err), TS_OK);
	assert_int_equal(r.max_tokens, 0);
	assert_int_equal(r.knobs.error_after, 2);
	http_gen_request_free(&r);
}

static void
test_error_json(void **unused)
{
	struct http_error err;
	struct ts_buf b;

	http_error_set(&err, 400, "invalid_request_error", "x_code",
	    "bad \"%s\"", "thing");
	ts_buf_init(&b, 1024);
	assert_int_equal(http_error_json(&err, &b), TS_OK);
	assert_string_equal(b.p, "{\"error\":{\"message\":\"bad \\\"thing\\\""
	    "\",\"type\":\"invalid_request_error\",\"code\":\"x_code\"}}");
	ts_buf_free(&b);
	assert_string_equal(http_reason(413), "Payload Too Large");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_form_decode),
		cmocka_unit_test(test_query_ok),
		cmocka_unit_test(test_query_errors),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_error_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
