/*
 * fuzz_trace.c - the trace reader (src/trace/trace.h, trace_load_mem())
 * on arbitrary bytes, as a trace file a server's replay or the fit is
 * given.
 *
 * Properties, each checked with abort():
 *  - the result is TS_OK, TS_EFORMAT (a line number within the input's
 *    lines and a text) or TS_ELIMIT (only under a bound below the size);
 *  - a bound one byte below the size is TS_ELIMIT, whatever the bytes;
 *  - a trace that loads, written back with the encoders, loads again to
 *    the same counts, and writing that back gives the same bytes (the
 *    encoders and the reader are each other's inverse after one pass:
 *    unknown keys and lines are dropped by the first).
 */
#include <string.h>

#include "trace/trace.h"
#include "fuzz.h"

#define FUZZ_TRACE_MAX (1u << 24)

/* All of t in the encoders' form into a new buffer. */
static void
encode_all(const struct trace *t, struct ts_buf *b)
{
	size_t i;

	ts_buf_init(b, FUZZ_TRACE_MAX * 16);
	FUZZ_CHECK(trace_encode_header(t, b) == TS_OK);
	for (i = 0; i < t->nrequests; i++)
		FUZZ_CHECK(trace_encode_request(&t->requests[i], b) == TS_OK);
	if (t->has_concurrency)
		FUZZ_CHECK(trace_encode_concurrency(t->samples, t->nsamples,
		    b) == TS_OK);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct trace t, t2, t3;
	struct trace_error err;
	struct ts_buf b1, b2;
	enum ts_err rc;
	long lines = 1;
	size_t i;

	if (size > FUZZ_TRACE_MAX)
		return 0;
	for (i = 0; i < size; i++)
		lines += s[i] == '\n';
	if (size > 0) {
		FUZZ_CHECK(trace_load_mem(s, size, size - 1, &t, &err) ==
		    TS_ELIMIT);
		trace_free(&t);
	}
	rc = trace_load_mem(s, size, size, &t, &err);
	FUZZ_CHECK(rc == TS_OK || rc == TS_EFORMAT);
	if (rc != TS_OK) {
		FUZZ_CHECK(err.line >= 0 && err.line <= lines);
		FUZZ_CHECK(err.text[0] != '\0');
		trace_free(&t);
		return 0;
	}
	FUZZ_CHECK(t.version == TRACE_VERSION);
	encode_all(&t, &b1);
	FUZZ_CHECK(trace_load_mem(b1.p, b1.len, b1.len, &t2, &err) == TS_OK);
	FUZZ_CHECK(t2.nrequests == t.nrequests);
	FUZZ_CHECK(t2.nsamples == t.nsamples);
	FUZZ_CHECK(t2.has_concurrency == t.has_concurrency);
	encode_all(&t2, &b2);
	FUZZ_CHECK(b2.len == b1.len && memcmp(b1.p, b2.p, b1.len) == 0);
	/* and the second form reads back as itself */
	FUZZ_CHECK(trace_load_mem(b2.p, b2.len, b2.len, &t3, &err) == TS_OK);
	FUZZ_CHECK(t3.nrequests == t.nrequests);
	ts_buf_free(&b1);
	ts_buf_free(&b2);
	trace_free(&t);
	trace_free(&t2);
	trace_free(&t3);
	return 0;
}
