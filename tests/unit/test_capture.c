/*
 * test_capture.c - what tokbench record keeps of a request while it runs
 * (src/bench/capture.h): header lines as libcurl hands them over (a new
 * status line drops an interim answer's headers, values trimmed, the
 * blank line skipped), every body read with its time, and the one budget
 * all requests of a run share: past it nothing more is kept, every
 * capture says it was cut, and freeing gives every byte back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "bench/capture.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Feeds one header line (a C string) to c. */
static enum ts_err
hdr(struct capture *c, const char *line)
{
	return capture_header_line(c, line, strlen(line));
}

static void
test_headers(void **state)
{
	struct capture_budget b = {0, 1 << 20, 0};
	struct capture *c = capture_new(&b, 7);

	(void)state;
	assert_int_equal(c->seq, 7);
	/* an interim answer, then the real one (libcurl hands both over) */
	assert_int_equal(hdr(c, "HTTP/1.1 100 Continue\r\n"), TS_OK);
	assert_int_equal(hdr(c, "X-Interim: 1\r\n"), TS_OK);
	assert_int_equal(hdr(c, "\r\n"), TS_OK);
	assert_int_equal(c->nheaders, 1);
	assert_int_equal(hdr(c, "HTTP/1.1 200 OK\r\n"), TS_OK);
	assert_int_equal(c->nheaders, 0);
	assert_int_equal(hdr(c, "Content-Type: \t text/event-stream \r\n"),
	    TS_OK);
	assert_int_equal(hdr(c, "X-Empty:\r\n"), TS_OK);
	assert_int_equal(hdr(c, "x-odd: a:b\n"), TS_OK);
	assert_int_equal(hdr(c, "no colon here\r\n"), TS_OK);
	assert_int_equal(hdr(c, "\r\n"), TS_OK);
	assert_int_equal(c->nheaders, 3);
	assert_string_equal(c->headers[0].name, "Content-Type");
	assert_string_equal(c->headers[0].value, "text/event-stream");
	assert_int_equal(c->headers[0].value_len, 17);
	assert_string_equal(c->headers[1].name, "X-Empty");
	assert_string_equal(c->headers[1].value, "");
	assert_string_equal(c->headers[2].name, "x-odd");
	assert_string_equal(c->headers[2].value, "a:b");
	assert_true(b.used > 0);
	capture_free(c);
	assert_int_equal(b.used, 0);
	assert_false(b.over);
	capture_free(NULL);
}

static void
test_chunks(void **state)
{
	static const char bin[] = {'\xff', '\0', 'a'};
	struct capture_budget b = {0, 1 << 20, 0};
	struct capture *c = capture_new(&b, 0);
	size_t i;

	(void)state;
	assert_int_equal(capture_chunk(c, 10, "data: a\n\n", 9), TS_OK);
	assert_int_equal(capture_chunk(c, 10, "", 0), TS_OK);
	assert_int_equal(capture_chunk(c, 25, bin, sizeof(bin)), TS_OK);
	/* more than the first allocation of slots */
	for (i = 0; i < 100; i++)
		assert_int_equal(capture_chunk(c, 30 + (int64_t)i, "x", 1),
		    TS_OK);
	assert_int_equal(c->nchunks, 103);
	assert_int_equal(c->chunks[0].t_us, 10);
	assert_int_equal(c->chunks[0].len, 9);
	assert_memory_equal(c->chunks[0].bytes, "data: a\n\n", 9);
	assert_int_equal(c->chunks[1].len, 0);
	assert_int_equal(c->chunks[2].len, 3);
	assert_memory_equal(c->chunks[2].bytes, bin, 3);
	assert_int_equal(c->chunks[102].t_us, 129);
	assert_false(c->cut);
	capture_free(c);
	assert_int_equal(b.used, 0);
}

/* Two requests share a budget of 4 KiB: the one that passes it is cut,
 * and so is the other at its next read; freeing both gives all back. */
static void
test_budget(void **state)
{
	struct capture_budget b = {0, 4096, 0};
	struct capture *c1 = capture_new(&b, 0), *c2 = capture_new(&b, 1);
	char big[3000];

	(void)state;
	memset(big, 'a', sizeof(big));
	assert_int_equal(capture_chunk(c1, 1, big, 1000), TS_OK);
	assert_int_equal(capture_chunk(c2, 1, big, 1000), TS_OK);
	assert_false(b.over);
	assert_int_equal(capture_chunk(c1, 2, big, sizeof(big)), TS_ELIMIT);
	assert_true(b.over);
	assert_true(c1->cut);
	assert_int_equal(c1->nchunks, 1);
	assert_false(c2->cut);
	/* even a byte that would fit: the run is over its bound */
	assert_int_equal(capture_chunk(c2, 3, "x", 1), TS_ELIMIT);
	assert_true(c2->cut);
	assert_int_equal(hdr(c2, "X-A: b\r\n"), TS_ELIMIT);
	assert_true(b.used <= b.max);
	capture_free(c1);
	capture_free(c2);
	assert_int_equal(b.used, 0);
	/* the budget's own arithmetic: no wrap-around near SIZE_MAX */
	b.over = 0;
	assert_int_equal(capture_budget_take(&b, SIZE_MAX), TS_ELIMIT);
	assert_int_equal(b.used, 0);
	assert_int_equal(capture_budget_take(&b, 4096), TS_OK);
	assert_int_equal(capture_budget_take(&b, 1), TS_ELIMIT);
	capture_budget_give(&b, 5000);
	assert_int_equal(b.used, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_chunks),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
