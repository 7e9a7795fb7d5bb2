/*
 * test_trace.c - trace files, version 1 (src/trace/trace.h): what the
 * encoders write reads back the same through trace_load(), bytes that are
 * not UTF-8 included; and the files the reader refuses, each with the
 * line and the reason.
 */
#define _GNU_SOURCE     /* memmem */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/trace.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define MAX (1u << 20)

/* A file of the test's own, removed at the end. */
static char *
tmp_path(void)
{
	char *p = strdup("/tmp/test_trace.XXXXXX");
	int fd = mkstemp(p);

	assert_true(fd >= 0);
	close(fd);
	return p;
}

/* Writes (s, n) to a new temporary file; caller unlinks and frees. */
static char *
tmp_file(const char *s, size_t n)
{
	char *p = tmp_path();
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(s, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return p;
}

/* The chunks of the round trip: UTF-8 text, a character split across two
 * reads (each half alone is not UTF-8), bytes that are never UTF-8 of
 * each base64 padding (1, 2, 3 bytes), a NUL, an empty read. */
static const struct {
	const char *p;
	size_t n;
} chunks[] = {
#define C(s) {s, sizeof(s) - 1}
	C("data: {\"token\":\"h\xc3\xa9\"}\n\n"),
	C("data: \xe2\x82"),
	C("\xac\n\n"),
	C("\xff"),
	C("\xff\xfe"),
	C("\xff\xfe\xfd"),
	C("a\0b"),
	C(""),
	C("data: [DONE]\n\n"),
#undef C
};

/* Fills r as request i of the round trip; `bad_body` gives it a body that
 * is not UTF-8. Everything points at static data (not freed). */
static void
make_request(struct trace_request *r, long i, int bad_body,
    struct trace_chunk *ch, struct trace_hdr *h,
    struct trace_token_event *te)
{
	static char n0[] = "Content-Type", v0[] = "text/event-stream";
	static char n1[] = "X-Odd", v1[] = "caf\xe9";   /* Latin-1 */
	static char body[] = "{\"model\":\"m\",\"prompt\":\"h\xc3\xa9\"}";
	static char badbody[] = "{\"prompt\":\"\xc0\xaf\"}";
	size_t k;

	memset(r, 0, sizeof(*r));
	r->i = i;
	r->start_us = 1000 * i + 7;
	r->end_us = 123456 + i;
	r->method = (char *)"POST";
	r->path = (char *)"/v1/completions";
	r->body = (unsigned char *)(bad_body ? badbody : body);
	r->body_len = strlen(bad_body ? badbody : body);
	r->status = i == 2 ? 400 : 200;
	h[0].name = n0;
	h[0].name_len = strlen(n0);
	h[0].value = v0;
	h[0].value_len = strlen(v0);
	h[1].name = n1;
	h[1].name_len = strlen(n1);
	h[1].value = v1;
	h[1].value_len = strlen(v1);
	r->headers = h;
	r->nheaders = 2;
	for (k = 0; k < NELEM(chunks); k++) {
		ch[k].t_us = (int64_t)(100 * k);
		ch[k].bytes = (unsigned char *)chunks[k].p;
		ch[k].len = chunks[k].n;
	}
	r->chunks = ch;
	r->nchunks = NELEM(chunks);
	te[0].t_us = 0;
	te[0].n = 1;
	te[1].t_us = 200;
	te[1].n = 3;
	r->token_events = te;
	r->ntoken_events = 2;
	r->prompt_tokens = i == 1 ? -1 : 12;
	r->output_tokens = 4;
	r->cached_tokens = i == 0 ? 8 : -1;
	r->warmup = i == 0;
	r->error = i == 2 ? (char *)"HTTP 400: bad \xff" : NULL;
}

/* Checks that got is want, field by field. */
static void
check_request(const struct trace_request *got,
    const struct trace_request *want)
{
	size_t k;

	assert_int_equal(got->i, want->i);
	assert_int_equal(got->start_us, want->start_us);
	assert_int_equal(got->end_us, want->end_us);
	assert_string_equal(got->method, want->method);
	assert_string_equal(got->path, want->path);
	assert_int_equal(got->body_len, want->body_len);
	assert_memory_equal(got->body, want->body, want->body_len);
	assert_int_equal(got->body[got->body_len], '\0');
	assert_int_equal(got->status, want->status);
	assert_int_equal(got->nheaders, want->nheaders);
	for (k = 0; k < want->nheaders; k++) {
		assert_int_equal(got->headers[k].name_len,
		    want->headers[k].name_len);
		assert_memory_equal(got->headers[k].name,
		    want->headers[k].name, want->headers[k].name_len);
		assert_int_equal(got->headers[k].value_len,
		    want->headers[k].value_len);
		assert_memory_equal(got->headers[k].value,
		    want->headers[k].value, want->headers[k].value_len);
	}
	assert_int_equal(got->nchunks, want->nchunks);
	for (k = 0; k < want->nchunks; k++) {
		assert_int_equal(got->chunks[k].t_us, want->chunks[k].t_us);
		assert_int_equal(got->chunks[k].len, want->chunks[k].len);
		if (want->chunks[k].len > 0)
			assert_memory_equal(got->chunks[k].bytes,
			    want->chunks[k].bytes, want->chunks[k].len);
	}
	assert_int_equal(got->ntoken_events, want->ntoken_events);
	for (k = 0; k < want->ntoken_events; k++) {
		assert_int_equal(got->token_events[k].t_us,
		    want->token_events[k].t_us);
		assert_int_equal(got->token_events[k].n,
		    want->token_events[k].n);
	}
	assert_int_equal(got->prompt_tokens, want->prompt_tokens);
	assert_int_equal(got->output_tokens, want->output_tokens);
	assert_int_equal(got->cached_tokens, want->cached_tokens);
	assert_int_equal(got->warmup, want->warmup);
	if (want->error == NULL)
		assert_null(got->error);
	else
		assert_string_equal(got->error, want->error);
}

/* Writes three requests (one with a body that is not UTF-8), the header
 * and the concurrency through the writer; reads them back with
 * trace_load(). */
static void
test_round_trip(void **state)
{
	struct trace h, got;
	struct trace_request r[3];
	struct trace_chunk ch[3][NELEM(chunks)];
	struct trace_hdr hd[3][2];
	struct trace_token_event te[3][2];
	struct trace_sample s[] = {{7, 1}, {1007, 2}, {2007, 3},
	    {123463, 2}, {124463, 1}, {125465, 0}};
	struct trace_writer w;
	struct trace_error err;
	struct ts_buf b;
	char *path = tmp_path();
	const char *want;
	size_t i, k;

	(void)state;
	memset(&h, 0, sizeof(h));
	h.tool = (char *)"tokbench record";
	h.created = (char *)"2026-12-06T11:00:00Z";
	h.target = (char *)"http://127.0.0.1:8170";
	h.endpoint = (char *)"/v1/completions";
	h.options = json_pack("{s:i,s:s}", "concurrency", 2, "dataset",
	    "random");
	for (i = 0; i < 3; i++)
		make_request(&r[i], (long)i, i == 1, ch[i], hd[i], te[i]);

	ts_buf_init(&b, MAX);
	assert_int_equal(trace_writer_open(&w, path), TS_OK);
	assert_int_equal(trace_encode_header(&h, &b), TS_OK);
	for (i = 0; i < 3; i++)
		assert_int_equal(trace_encode_request(&r[i], &b), TS_OK);
	assert_int_equal(trace_encode_concurrency(s, NELEM(s), &b), TS_OK);
	assert_int_equal(trace_writer_put(&w, b.p, b.len), TS_OK);
	assert_int_equal(trace_writer_close(&w), TS_OK);
	/* the shapes on the wire: a line each, a UTF-8 chunk as a string,
	 * the others as {"b64"}, the bad body as body_b64 */
	for (i = 0, k = 0; i < b.len; i++)
		k += b.p[i] == '\n';
	assert_int_equal(k, 5);
	assert_non_null(memmem(b.p, b.len, "\"tokstream_trace\":1", 19));
	want = "[0,\"data: {\\\"token\\\":\\\"h\xc3\xa9\\\"}\\n\\n\"]";
	assert_non_null(memmem(b.p, b.len, want, strlen(want)));
	assert_non_null(memmem(b.p, b.len, "[300,{\"b64\":\"/w==\"}]", 20));
	assert_non_null(memmem(b.p, b.len, "[400,{\"b64\":\"//4=\"}]", 20));
	assert_non_null(memmem(b.p, b.len, "[500,{\"b64\":\"//79\"}]", 20));
	assert_non_null(memmem(b.p, b.len, "\"body_b64\":", 11));
	assert_non_null(memmem(b.p, b.len, "\"cached_tokens\":null", 20));

	assert_int_equal(trace_load(path, MAX, &got, &err), TS_OK);
	assert_int_equal(got.version, 1);
	assert_string_equal(got.tool, "tokbench record");
	assert_string_equal(got.created, "2026-12-06T11:00:00Z");
	assert_string_equal(got.target, "http://127.0.0.1:8170");
	assert_string_equal(got.endpoint, "/v1/completions");
	assert_true(json_equal(got.options, h.options));
	assert_int_equal(got.nrequests, 3);
	for (i = 0; i < 3; i++)
		check_request(&got.requests[i], &r[i]);
	assert_true(got.has_concurrency);
	assert_int_equal(got.nsamples, NELEM(s));
	for (i = 0; i < NELEM(s); i++) {
		assert_int_equal(got.samples[i].t_us, s[i].t_us);
		assert_int_equal(got.samples[i].n, s[i].n);
	}
	trace_free(&got);
	trace_free(&got);       /* a zeroed trace is fine */
	json_decref(h.options);
	ts_buf_free(&b);
	unlink(path);
	free(path);
}

/* Lines of a later minor version: unknown keys and line types are
 * skipped; a missing concurrency line leaves none; blank lines pass. */
static void
test_forward_compatible(void **state)
{
	static const char f[] =
	    "{\"type\":\"header\",\"tokstream_trace\":1,\"new\":[1]}\n"
	    "\n"
	    "{\"type\":\"annotation\",\"text\":\"x\"}\n"
	    "{\"type\":\"request\",\"i\":0,\"start_us\":0,\"end_us\":5,"
	    "\"method\":\"GET\",\"path\":\"/stream?prompt=a\",\"status\":0,"
	    "\"chunks\":[],\"later\":{\"a\":1}}\n";
	struct trace t;
	struct trace_error err;

	(void)state;
	assert_int_equal(trace_load_mem(f, strlen(f), MAX, &t, &err), TS_OK);
	assert_int_equal(t.nrequests, 1);
	assert_string_equal(t.requests[0].path, "/stream?prompt=a");
	assert_int_equal(t.requests[0].body_len, 0);
	assert_int_equal(t.requests[0].status, 0);
	assert_int_equal(t.requests[0].prompt_tokens, -1);
	assert_int_equal(t.requests[0].cached_tokens, -1);
	assert_null(t.requests[0].error);
	assert_false(t.has_concurrency);
	assert_int_equal(t.nsamples, 0);
	assert_string_equal(t.tool, "");
	assert_true(json_is_object(t.options));
	trace_free(&t);
}

/* One refused file: its bytes, the result, the line and a piece of the
 * text the error must have. */
struct refusal {
	const char *name;
	const char *file;
	enum ts_err rc;
	long line;
	const char *text;
};

#define HDR "{\"type\":\"header\",\"tokstream_trace\":1}\n"
#define REQ "{\"type\":\"request\",\"i\":0,\"start_us\":0,\"end_us\":5," \
	"\"method\":\"GET\",\"path\":\"/\",\"status\":200,\"chunks\":[]}\n"

static void
test_refusals(void **state)
{
	static const struct refusal t[] = {
		{"empty", "", TS_EFORMAT, 0, "no trace header"},
		{"blank", "\n\n", TS_EFORMAT, 0, "no trace header"},
		{"no header", REQ, TS_EFORMAT, 1, "not a trace header"},
		{"version 2", "{\"type\":\"header\",\"tokstream_trace\":2}\n"
		    REQ, TS_EFORMAT, 1, "version 2"},
		{"version string", "{\"type\":\"header\","
		    "\"tokstream_trace\":\"1\"}\n", TS_EFORMAT, 1,
		    "tokstream_trace"},
		{"malformed line", HDR REQ "{\"type\":\"request\",\n" REQ,
		    TS_EFORMAT, 3, "not JSON"},
		{"not an object", HDR "[1,2]\n", TS_EFORMAT, 2,
		    "not a JSON object"},
		{"no type", HDR "{\"i\":0}\n", TS_EFORMAT, 2, "\"type\""},
		{"second header", HDR HDR, TS_EFORMAT, 2, "second header"},
		{"no chunks", HDR "{\"type\":\"request\",\"i\":0,"
		    "\"start_us\":0,\"end_us\":5,\"method\":\"GET\","
		    "\"path\":\"/\",\"status\":200}\n", TS_EFORMAT, 2,
		    "\"chunks\""},
		{"negative t_us", HDR "{\"type\":\"request\",\"i\":0,"
		    "\"start_us\":0,\"end_us\":5,\"method\":\"GET\","
		    "\"path\":\"/\",\"status\":200,\"chunks\":[[-1,\"x\"]]}\n",
		    TS_EFORMAT, 2, "chunks[0]"},
		{"bad base64", HDR "{\"type\":\"request\",\"i\":0,"
		    "\"start_us\":0,\"end_us\":5,\"method\":\"GET\","
		    "\"path\":\"/\",\"status\":200,\"chunks\":[[1,"
		    "{\"b64\":\"a=bc\"}]]}\n", TS_EFORMAT, 2, "chunks[0]"},
		{"bad body_b64", HDR "{\"type\":\"request\",\"i\":0,"
		    "\"start_us\":0,\"end_us\":5,\"method\":\"GET\","
		    "\"path\":\"/\",\"body_b64\":\"abc\",\"status\":200,"
		    "\"chunks\":[]}\n", TS_EFORMAT, 2, "body_b64"},
		{"status string", HDR "{\"type\":\"request\",\"i\":0,"
		    "\"start_us\":0,\"end_us\":5,\"method\":\"GET\","
		    "\"path\":\"/\",\"status\":\"200\",\"chunks\":[]}\n",
		    TS_EFORMAT, 2, "\"status\""},
		{"bad sample", HDR REQ "{\"type\":\"concurrency\","
		    "\"samples\":[[0,-1]]}\n", TS_EFORMAT, 3, "samples[0]"},
	};
	struct trace tr;
	struct trace_error err;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(t); i++) {
		enum ts_err rc = trace_load_mem(t[i].file, strlen(t[i].file),
		    MAX, &tr, &err);

		if (rc != t[i].rc || err.line != t[i].line ||
		    strstr(err.text, t[i].text) == NULL)
			fail_msg("%s: got %d at line %ld \"%s\", want %d at "
			    "line %ld with \"%s\"", t[i].name, (int)rc,
			    err.line, err.text, (int)t[i].rc, t[i].line,
			    t[i].text);
		trace_free(&tr);
	}
}

/* The size bound, in memory and from a file; a file that is missing. */
static void
test_size_bound(void **state)
{
	static const char f[] = HDR REQ;
	struct trace t;
	struct trace_error err;
	char *path = tmp_file(f, strlen(f));

	(void)state;
	assert_int_equal(trace_load_mem(f, strlen(f), strlen(f) - 1, &t,
	    &err), TS_ELIMIT);
	assert_non_null(strstr(err.text, "limit"));
	trace_free(&t);
	assert_int_equal(trace_load(path, strlen(f) - 1, &t, &err),
	    TS_ELIMIT);
	assert_non_null(strstr(err.text, "limit"));
	trace_free(&t);
	/* exactly at the bound: taken */
	assert_int_equal(trace_load(path, strlen(f), &t, &err), TS_OK);
	assert_int_equal(t.nrequests, 1);
	trace_free(&t);
	unlink(path);
	assert_int_equal(trace_load(path, MAX, &t, &err), TS_ESYS);
	assert_non_null(strstr(err.text, "cannot open"));
	trace_free(&t);
	free(path);
}

/* An encoder whose line does not fit leaves the buffer as it was. */
static void
test_encode_limit(void **state)
{
	struct trace_sample s[64];
	struct ts_buf b;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(s); i++) {
		s[i].t_us = (int64_t)i * 1000;
		s[i].n = (long)i;
	}
	ts_buf_init(&b, 64);
	assert_int_equal(ts_buf_append(&b, "x", 1), TS_OK);
	assert_int_equal(trace_encode_concurrency(s, NELEM(s), &b),
	    TS_ELIMIT);
	assert_int_equal(b.len, 1);
	ts_buf_free(&b);
}

/*
 * A trace tokbench record wrote (tests/data/trace/chat-v1.jsonl: four
 * /v1/chat/completions requests of 4 tokens, the first a warm-up, 2 at a
 * time, against tokstream): it loads, each stream's chunks join into a
 * whole SSE stream, and the encoders write the file back byte for byte.
 */
static void
test_recorded_sample(void **state)
{
	const char *dir = getenv("TS_SRCDIR");
	char path[4096];
	struct trace t;
	struct trace_error err;
	struct ts_buf b, joined;
	const struct trace_request *r;
	FILE *f;
	char *file;
	long len;
	size_t i, k;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/trace/chat-v1.jsonl",
	    dir != NULL ? dir : ".");
	if (trace_load(path, MAX, &t, &err) != TS_OK)
		fail_msg("%s:%ld: %s", path, err.line, err.text);
	assert_string_equal(t.tool, "tokbench record");
	assert_string_equal(t.endpoint, "/v1/chat/completions");
	assert_int_equal(t.nrequests, 4);
	ts_buf_init(&joined, MAX);
	for (i = 0; i < t.nrequests; i++) {
		r = &t.requests[i];
		assert_int_equal(r->i, (long)i);
		assert_int_equal(r->warmup, i == 0);
		assert_int_equal(r->status, 200);
		assert_null(r->error);
		assert_int_equal(r->ntoken_events, 4);
		assert_int_equal(r->output_tokens, 4);
		ts_buf_reset(&joined);
		for (k = 0; k < r->nchunks; k++)
			assert_int_equal(ts_buf_append(&joined,
			    r->chunks[k].bytes, r->chunks[k].len), TS_OK);
		assert_true(joined.len > 14);
		assert_memory_equal(joined.p + joined.len - 14,
		    "data: [DONE]\n\n", 14);
	}
	assert_true(t.has_concurrency);
	assert_int_equal(t.samples[t.nsamples - 1].n, 0);

	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	file = malloc((size_t)len);
	assert_int_equal(fread(file, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	ts_buf_init(&b, MAX);
	assert_int_equal(trace_encode_header(&t, &b), TS_OK);
	for (i = 0; i < t.nrequests; i++)
		assert_int_equal(trace_encode_request(&t.requests[i], &b),
		    TS_OK);
	assert_int_equal(trace_encode_concurrency(t.samples, t.nsamples, &b),
	    TS_OK);
	assert_int_equal(b.len, (size_t)len);
	assert_memory_equal(b.p, file, b.len);
	free(file);
	ts_buf_free(&b);
	ts_buf_free(&joined);
	trace_free(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_forward_compatible),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_size_bound),
		cmocka_unit_test(test_encode_limit),
		cmocka_unit_test(test_recorded_sample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
