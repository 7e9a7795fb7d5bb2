/*
 * test_client.c - the pure parts of tokbench's shared libcurl client
 * (client.h): sorting header lines as a libcurl header callback gets
 * them, and recognising text/event-stream; and the capped copy both
 * write callbacks keep of a non-200 body (ts_buf_append_part, ts.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "bench/client.h"
#include "common/buf.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void
test_header_line_table(void **state)
{
	static const struct {
		const char *line;
		size_t id_max;
		enum client_header want;
		const char *val;        /* for CLIENT_HEADER_ID */
	} t[] = {
		{"HTTP/1.1 200 OK\r\n", 8, CLIENT_HEADER_STATUS, NULL},
		{"HTTP/", 8, CLIENT_HEADER_STATUS, NULL},
		{"HTTP", 8, CLIENT_HEADER_OTHER, NULL},
		{"\r\n", 8, CLIENT_HEADER_OTHER, NULL},
		{"Content-Type: text/event-stream\r\n", 8,
		    CLIENT_HEADER_OTHER, NULL},
		{"X-Request-I", 8, CLIENT_HEADER_OTHER, NULL},
		{"X-Request-Id: 42\r\n", 8, CLIENT_HEADER_ID, "42"},
		{"x-request-id:42", 8, CLIENT_HEADER_ID, "42"},
		{"X-REQUEST-ID: \t 7 \t\r\n", 8, CLIENT_HEADER_ID, "7"},
		{"X-Request-Id: 12345678\r\n", 8, CLIENT_HEADER_ID,
		    "12345678"},
		{"X-Request-Id: 123456789\r\n", 8, CLIENT_HEADER_ID_BAD, NULL},
		{"X-Request-Id:\r\n", 8, CLIENT_HEADER_ID_BAD, NULL},
		{"X-Request-Id:  \r\n", 8, CLIENT_HEADER_ID_BAD, NULL},
		{"X-Request-Id: a b\r\n", 8, CLIENT_HEADER_ID_BAD, NULL},
		{"X-Request-Id: a\x7f\r\n", 8, CLIENT_HEADER_ID_BAD, NULL},
		{"X-Request-Id: a\x01\r\n", 8, CLIENT_HEADER_ID_BAD, NULL},
		/* bytes over 0x7f are the caller's call */
		{"X-Request-Id: \xc3\xa9\r\n", 8, CLIENT_HEADER_ID,
		    "\xc3\xa9"},
		{"X-Request-Idx: 1\r\n", 8, CLIENT_HEADER_OTHER, NULL},
	};
	const char *val;
	size_t i, len;

	(void)state;
	for (i = 0; i < NELEM(t); i++) {
		val = NULL;
		len = 0;
		if (client_header_line(t[i].line, strlen(t[i].line),
		    t[i].id_max, &val, &len) != t[i].want)
			fail_msg("case %zu (%s): wrong kind", i, t[i].line);
		if (t[i].want != CLIENT_HEADER_ID) {
			assert_null(val);
			continue;
		}
		assert_non_null(val);
		if (len != strlen(t[i].val) ||
		    memcmp(val, t[i].val, len) != 0)
			fail_msg("case %zu: value '%.*s', want '%s'", i,
			    (int)len, val, t[i].val);
	}
}

/* The line is not NUL-terminated: nothing past n may be read. */
static void
test_header_line_not_terminated(void **state)
{
	static const char buf[] = "X-Request-Id: 99XXXX";
	const char *val = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(client_header_line(buf, 16, 8, &val, &len),
	    CLIENT_HEADER_ID);
	assert_int_equal(len, 2);
	assert_memory_equal(val, "99", 2);
}

static void
test_is_sse_type(void **state)
{
	static const struct {
		const char *ct;
		int want;
	} t[] = {
		{"text/event-stream", 1},
		{"TEXT/Event-Stream", 1},
		{"text/event-stream; charset=utf-8", 1},
		{"text/event-stream;charset=utf-8", 1},
		{"text/event-stream ", 1},
		{"text/event-stream\t", 1},
		{"text/event-streams", 0},
		{"text/event-strea", 0},
		{"text/plain", 0},
		{"application/json", 0},
		{"", 0},
	};
	size_t i;

	(void)state;
	assert_false(client_is_sse_type(NULL));
	for (i = 0; i < NELEM(t); i++)
		if (client_is_sse_type(t[i].ct) != t[i].want)
			fail_msg("'%s': want %d", t[i].ct, t[i].want);
}

/* Chunks of a body into a 10-byte cap, split at every point. */
static void
test_body_capture(void **state)
{
	static const char body[] = "0123456789abcdef";
	struct ts_buf b;
	size_t cut, total;
	enum ts_err rc, last;

	(void)state;
	for (total = 0; total <= 16; total++)
		for (cut = 0; cut <= total; cut++) {
			ts_buf_init(&b, 10);
			rc = ts_buf_append_part(&b, body, cut);
			last = ts_buf_append_part(&b, body + cut,
			    total - cut);
			assert_int_equal(rc, cut <= 10 ? TS_OK : TS_ELIMIT);
			/* nothing left to drop after a full first part */
			assert_int_equal(last, total <= 10 || cut == total ?
			    TS_OK : TS_ELIMIT);
			assert_int_equal(b.len, total <= 10 ? total : 10);
			if (b.len > 0)
				assert_memory_equal(b.p, body, b.len);
			ts_buf_free(&b);
		}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_line_table),
		cmocka_unit_test(test_header_line_not_terminated),
		cmocka_unit_test(test_is_sse_type),
		cmocka_unit_test(test_body_capture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
