/*
 * test_handlers_lab.c - the lab endpoints through route() over the fake
 * connection (handlers_fake.h): GET /stream (events, resuming, timing on
 * the synthetic clock, injected errors), POST /generate (bodies read in
 * pieces, limits), a client that leaves or a server that stops mid
 * request, keep-alives during a prefill and a request that waits for a
 * slot.
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

#include "handlers/routes.h"
#include "stores/state.h"
#include "sim/lab.h"

#include "handlers_fake.h"

/* The lab generator's text for a prompt (sim/lab.h): what /stream and
 * /generate must send. */
static void
lab_text(const char *prompt, uint32_t n, struct ts_buf *out)
{
	struct sim_lab g;
	uint32_t i;

	sim_lab_init(&g, prompt, strlen(prompt));
	for (i = 0; i < n; i++) {
		size_t len;
		const char *t = sim_token_text(sim_lab_next(&g), &len);

		ts_buf_append(out, t, len);
	}
}

/* ---- GET /stream -------------------------------------------------------- */

/* The lab stream's events (docs/API.md): one event per token with the id
 * <stream>-<key>-<index>, the first with the retry field, then the "end"
 * id with [DONE]; max_tokens absent is 16. */
static void
test_stream_events(void **unused)
{
	static const struct {
		const char *prompt;
		int max_tokens;          /* -1: not given */
		uint32_t events;
	} cases[] = {
		{ "hello", 1, 1 },
		{ "hello", 2, 2 },
		{ "two words", 5, 5 },
		{ "no max_tokens", -1, HTTP_DEFAULT_MAX_TOKENS },
		{ "hello", 0, 0 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct sse *s;
		struct state_record rec;
		char uri[2048], want[RESUME_ID_MAX + 1];
		struct resume_id rid = { 0, 0, 0, 0 };
		uint64_t id;
		uint32_t i;

		server_up(&fs);
		stream_uri(uri, sizeof(uri), cases[k].prompt,
		    cases[k].max_tokens, NULL);
		fake_open(&fc, &fs, "GET", uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_header(&r, "Content-Type",
		    "text/event-stream; charset=utf-8");
		assert_header(&r, "Cache-Control", "no-cache");
		assert_header(&r, "Access-Control-Allow-Origin", "*");
		id = request_id(&r);
		assert_true(id > 0);
		s = sse_parse(r.body, r.body_len);
		/* the tokens (the first with retry), the end */
		assert_int_equal(s->n, cases[k].events + 1);
		assert_int_equal(s->ev[0].kind, EV_DATA);
		assert_true(s->ev[0].has_retry);
		assert_int_equal(s->ev[0].retry, OPTIONS_DEFAULT_RETRY_MS);
		rid.stream = id;
		rid.key = resume_key(cases[k].prompt, strlen(cases[k].prompt),
		    cases[k].max_tokens < 0 ? HTTP_DEFAULT_MAX_TOKENS :
		    (uint32_t)cases[k].max_tokens, -1);
		for (i = 0; i < cases[k].events; i++) {
			const struct sse_event *e = &s->ev[i];
			struct ts_buf t;

			rid.index = i;
			resume_id_format(want, sizeof(want), &rid);
			assert_int_equal(e->kind, EV_DATA);
			assert_true(e->has_id);
			assert_string_equal(e->id, want);
			ts_buf_init(&t, 4096);
			lab_token_text(e, &t);
			assert_true(t.len > 0);
			ts_buf_free(&t);
		}
		rid.index = RESUME_INDEX_END;
		resume_id_format(want, sizeof(want), &rid);
		assert_true(s->ev[s->n - 1].has_id);
		assert_string_equal(s->ev[s->n - 1].id, want);
		assert_string_equal(s->ev[s->n - 1].data, "[DONE]");
		assert_int_equal(count_keepalives(s), 0);
		/* the record the hooks wrote */
		assert_int_equal(state_lookup(fs.srv.state, id, &rec), TS_OK);
		assert_int_equal(rec.kind, STATE_KIND_STREAM);
		assert_int_equal(rec.status, STATE_DONE);
		assert_int_equal(rec.generated, cases[k].events);
		sse_free(s);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* The tokens of GET /stream, concatenated, are the text of POST
 * /generate for the same prompt, and both are the lab generator's. */
static void
test_stream_text_matches_generate(void **unused)
{
	static const struct {
		const char *prompt;
		int max_tokens;
	} cases[] = {
		{ "hello", 1 },
		{ "hello", 24 },
		{ "a&b=c d+e", 12 },
		{ "\xc3\xbcnic\xc3\xb8" "de \xe2\x82\xac", 40 },
		{ "", 7 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct sse *s;
		struct ts_buf streamed, want;
		json_t *o;
		char uri[2048], *body;
		size_t i;

		ts_buf_init(&streamed, 1u << 20);
		ts_buf_init(&want, 1u << 20);
		lab_text(cases[k].prompt, (uint32_t)cases[k].max_tokens,
		    &want);
		server_up(&fs);
		stream_uri(uri, sizeof(uri), cases[k].prompt,
		    cases[k].max_tokens, NULL);
		fake_open(&fc, &fs, "GET", uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		s = sse_parse(r.body, r.body_len);
		for (i = 0; i < s->n; i++)
			if (s->ev[i].kind == EV_DATA &&
			    strcmp(s->ev[i].data, "[DONE]") != 0)
				lab_token_text(&s->ev[i], &streamed);
		sse_free(s);
		fake_close(&fc);

		body = generate_body(cases[k].prompt, cases[k].max_tokens, -1);
		fake_open(&fc, &fs, "POST", "/generate", body);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_header(&r, "Content-Type", "application/json");
		o = body_json(&r);
		assert_int_equal(streamed.len, want.len);
		assert_memory_equal(streamed.p, want.p, want.len);
		assert_string_equal(jstr(o, "text"), want.p);
		assert_int_equal(json_integer_value(json_object_get(
		    json_object_get(o, "usage"), "completion_tokens")),
		    cases[k].max_tokens);
		json_decref(o);
		fake_close(&fc);
		free(body);
		server_down(&fs);
		ts_buf_free(&streamed);
		ts_buf_free(&want);
	}
}

/* A malformed query is a 400 in the lab's error shape, before any
 * sequence starts. */
static void
test_stream_bad_query(void **unused)
{
	static const struct {
		const char *uri;
		const char *code;
	} cases[] = {
		{ "/stream", "missing_prompt" },
		{ "/stream?max_tokens=3", "missing_prompt" },
		{ "/stream?prompt=%zz", "invalid_percent_encoding" },
		{ "/stream?prompt=x&max_tokens=abc", "invalid_max_tokens" },
		{ "/stream?prompt=x&max_tokens=99999", "invalid_max_tokens" },
		{ "/stream?prompt=x&max_tokens=-1", "invalid_max_tokens" },
		{ "/stream?prompt=x&prompt=y", "duplicate_param" },
		{ "/stream?prompt=x&prefill_ms=600000",
		    "invalid_prefill_ms" },
		{ "/stream?prompt=x&last_event_id=nonsense",
		    "invalid_last_event_id" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;

		server_up(&fs);
		fake_open(&fc, &fs, "GET", cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		assert_error(&r, 400, "invalid_request_error", cases[k].code,
		    0);
		assert_int_equal(request_id(&r), 0);
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* An injected error: the tokens before it, an error event, then the end
 * id and [DONE]; the record says error. */
static void
test_stream_injected_error(void **unused)
{
	static const struct {
		int error_after;
		uint32_t tokens;
	} cases[] = {
		{ 0, 0 },
		{ 3, 3 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct sse *s;
		struct state_record rec;
		char uri[256], extra[64];
		json_t *o;
		uint32_t i;

		server_up(&fs);
		snprintf(extra, sizeof(extra), "&error_after=%d",
		    cases[k].error_after);
		stream_uri(uri, sizeof(uri), "boom", 10, extra);
		fake_open(&fc, &fs, "GET", uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		s = sse_parse(r.body, r.body_len);
		/* tokens, the error, [DONE] */
		assert_int_equal(s->n, cases[k].tokens + 2);
		for (i = 0; i < cases[k].tokens; i++)
			assert_true(s->ev[i].has_id);
		o = json_loads(s->ev[s->n - 2].data, 0, NULL);
		assert_non_null(o);
		assert_string_equal(jstr(o, "error.code"), "injected_error");
		json_decref(o);
		assert_false(s->ev[s->n - 2].has_id);
		assert_string_equal(s->ev[s->n - 1].data, "[DONE]");
		assert_int_equal(state_lookup(fs.srv.state, request_id(&r),
		    &rec), TS_OK);
		assert_int_equal(rec.status, STATE_ERROR);
		assert_int_equal(rec.generated, cases[k].tokens);
		sse_free(s);
		fake_close(&fc);
		server_down(&fs);
	}
}

/*
 * Resuming a stream (docs/API.md "Resuming a stream"): from the
 * Last-Event-ID header or the last_event_id parameter the stream goes on
 * after the named token, with the same text the whole stream has there,
 * and its record names the stream resumed; an id of the last token or
 * the end is a 204; one of other parameters or past the end a 400.
 */
static void
test_stream_resume(void **unused)
{
	enum via { HEADER, QUERY };
	static const struct {
		enum via via;
		int max_tokens;          /* of the id; the request asks 5 */
		uint64_t stream;         /* of the id; 0: the first stream */
		uint64_t index;          /* of the id */
		int status;
		const char *code;        /* a 400's */
		uint64_t resumed_from;   /* 0: the first stream's; 9: none */
	} cases[] = {
		{ HEADER, 5, 0, 1, 200, NULL, 0 },
		{ QUERY, 5, 0, 2, 200, NULL, 0 },
		{ HEADER, 5, 0, 0, 200, NULL, 0 },
		/* a stream the state file does not hold: resumed anyway */
		{ HEADER, 5, 77, 2, 200, NULL, 9 },
		{ HEADER, 5, 0, 4, 204, NULL, 0 },
		{ HEADER, 5, 0, RESUME_INDEX_END, 204, NULL, 0 },
		{ HEADER, 6, 0, 1, 400, "foreign_last_event_id", 0 },
		{ QUERY, 5, 0, 7, 400, "invalid_last_event_id", 0 },
	};
	const char *prompt = "resume me";
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc, rc;
		struct response r;
		struct resume_id rid = { 0, 0, 0, 0 };
		struct ts_buf want, got;
		char uri[512], extra[128], idbuf[RESUME_ID_MAX + 1];
		uint64_t first;

		ts_buf_init(&want, 1u << 20);
		ts_buf_init(&got, 1u << 20);
		server_up(&fs);
		/* the stream that is resumed */
		stream_uri(uri, sizeof(uri), prompt, 5, NULL);
		fake_open(&fc, &fs, "GET", uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		first = request_id(&r);
		rid.stream = cases[k].stream != 0 ? cases[k].stream : first;
		rid.key = resume_key(prompt, strlen(prompt),
		    (uint32_t)cases[k].max_tokens, -1);
		rid.index = cases[k].index;
		assert_true(resume_id_format(idbuf, sizeof(idbuf), &rid) > 0);
		if (cases[k].via == QUERY) {
			snprintf(extra, sizeof(extra), "&last_event_id=%s",
			    idbuf);
			stream_uri(uri, sizeof(uri), prompt, 5, extra);
		}
		fake_open(&rc, &fs, "GET", uri, NULL);
		if (cases[k].via == HEADER)
			fake_set(&rc, "HTTP_LAST_EVENT_ID", idbuf);
		exchange(&fs, &rc, &r);
		if (cases[k].status == 400) {
			assert_error(&r, 400, "invalid_request_error",
			    cases[k].code, 0);
			assert_int_equal(state_total_streams(fs.srv.state), 1);
		} else if (cases[k].status == 204) {
			assert_int_equal(r.status, 204);
			assert_int_equal(r.body_len, 0);
			assert_int_equal(state_total_streams(fs.srv.state), 1);
		} else {
			struct sse *s;
			struct state_record rec;
			struct sim_lab g;
			uint32_t i, start = (uint32_t)cases[k].index + 1;
			size_t j;

			assert_int_equal(r.status, 200);
			s = sse_parse(r.body, r.body_len);
			/* tokens start..4, the end */
			assert_int_equal(s->n, 5 - start + 1);
			rid.stream = request_id(&r);
			rid.key = resume_key(prompt, strlen(prompt), 5, -1);
			for (j = 0; j + 1 < s->n; j++) {
				rid.index = start + j;
				resume_id_format(idbuf, sizeof(idbuf), &rid);
				assert_string_equal(s->ev[j].id, idbuf);
				lab_token_text(&s->ev[j], &got);
			}
			/* the same text the whole stream has from there */
			sim_lab_init(&g, prompt, strlen(prompt));
			for (i = 0; i < 5; i++) {
				size_t len;
				const char *t = sim_token_text(sim_lab_next(&g),
				    &len);

				if (i >= start)
					ts_buf_append(&want, t, len);
			}
			assert_int_equal(got.len, want.len);
			assert_memory_equal(got.p, want.p, want.len);
			sse_free(s);
			assert_int_equal(state_lookup(fs.srv.state, rid.stream,
			    &rec), TS_OK);
			assert_int_equal(rec.resume_index, start);
			assert_int_equal(rec.generated, 5 - start);
			assert_int_equal(rec.resumed_from,
			    cases[k].resumed_from == 9 ? 0 : first);
		}
		fake_close(&rc);
		fake_close(&fc);
		server_down(&fs);
		ts_buf_free(&want);
		ts_buf_free(&got);
	}
}

/*
 * When the bytes go out, on the synthetic clock: the head at arrival,
 * the first token after the prefill (the request's prefill_ms, or the
 * latency model's over the prompt's tokens, plus the tokens a resumed
 * stream recomputes), then one per TPOT (the request's tpot_ms, or the
 * server's). A JSON answer is one write at the end.
 */
static void
test_stream_timing(void **unused)
{
	static const struct {
		const char *method;
		const char *uri;
		const char *body;
		const char *prompt;      /* for the latency model's prefill */
		int64_t resume_index;    /* Last-Event-ID's, or -1 */
		double prefill_ms;       /* < 0: the latency model's */
		double tpot_ms;
		size_t tokens;           /* token writes; 0: one answer */
		size_t max_tokens;
	} cases[] = {
		{ "GET", "/stream?prompt=t&max_tokens=4&prefill_ms=200&"
		    "tpot_ms=50", NULL, "t", -1, 200, 50, 4, 4 },
		{ "GET", "/stream?prompt=t&max_tokens=3", NULL, "t", -1, -1,
		    20, 3, 3 },
		{ "GET", "/stream?prompt=hello+world+and+more&max_tokens=3&"
		    "tpot_ms=5", NULL, "hello world and more", -1, -1, 5, 3,
		    3 },
		{ "GET", "/stream?prompt=t&max_tokens=6", NULL, "t", 2, -1,
		    20, 3, 6 },
		{ "POST", "/generate", "{\"prompt\":\"t\",\"max_tokens\":4,"
		    "\"prefill_ms\":100,\"tpot_ms\":30}", "t", -1, 100, 30, 0,
		    4 },
		{ "POST", "/generate", "{\"prompt\":\"t\",\"max_tokens\":4}",
		    "t", -1, -1, 20, 0, 4 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char idbuf[RESUME_ID_MAX + 1];
		int64_t t0, prefill, tpot;
		size_t i;

		server_up(&fs);
		t0 = clock_ns;
		prefill = cases[k].prefill_ms >= 0 ?
		    ts_ms_to_ns(cases[k].prefill_ms) :
		    ts_ms_to_ns(engine_prefill_ms(&fs.opt.engine.lat,
		    sim_tokenize(cases[k].prompt, strlen(cases[k].prompt),
		    NULL, 0) + (uint64_t)(cases[k].resume_index + 1)));
		tpot = ts_ms_to_ns(cases[k].tpot_ms);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri,
		    cases[k].body);
		if (cases[k].resume_index >= 0) {
			struct resume_id rid = { 77, resume_key(
			    cases[k].prompt, strlen(cases[k].prompt),
			    (uint32_t)cases[k].max_tokens, -1),
			    (uint64_t)cases[k].resume_index, 0 };

			resume_id_format(idbuf, sizeof(idbuf), &rid);
			fake_set(&fc, "HTTP_LAST_EVENT_ID", idbuf);
		}
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		if (cases[k].tokens == 0) {
			assert_int_equal(fc.nwrites, 1);
			assert_int_equal(fc.write_at[0], t0 + prefill +
			    (int64_t)(cases[k].max_tokens - 1) * tpot);
		} else {
			/* the head (and retry), then each token */
			assert_int_equal(fc.nwrites, 1 + cases[k].tokens);
			assert_int_equal(fc.write_at[0], t0);
			for (i = 0; i < cases[k].tokens; i++)
				assert_int_equal(fc.write_at[1 + i], t0 +
				    prefill + (int64_t)i * tpot);
		}
		fake_close(&fc);
		server_down(&fs);
	}
}

/* ---- POST /generate --------------------------------------------------- */

/* A body read in small pieces is whole (case C05); a body shorter than
 * its Content-Length is a 400. */
static void
test_generate_body_reads(void **unused)
{
	static const struct {
		size_t piece;            /* 0: whatever read() is asked */
		int cl_extra;            /* Content-Length - body length */
		int status;
	} cases[] = {
		{ 7, 0, 200 },
		{ 1, 0, 200 },
		{ 0, 0, 200 },
		{ 7, 5, 400 },
	};
	const char *prompt = "a prompt long enough to need many reads of "
	    "seven bytes";
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct ts_buf want;
		char *body = generate_body(prompt, 9, -1);
		char cl[32];

		ts_buf_init(&want, 1u << 20);
		lab_text(prompt, 9, &want);
		server_up(&fs);
		fake_open(&fc, &fs, "POST", "/generate", body);
		fc.piece = cases[k].piece;
		snprintf(cl, sizeof(cl), "%zu", fc.body_len +
		    (size_t)cases[k].cl_extra);
		fake_set(&fc, "CONTENT_LENGTH", cl);
		exchange(&fs, &fc, &r);
		if (cases[k].status == 200) {
			json_t *o;

			assert_int_equal(r.status, 200);
			o = body_json(&r);
			assert_string_equal(jstr(o, "text"), want.p);
			json_decref(o);
			assert_true(request_id(&r) > 0);
		} else {
			assert_error(&r, 400, "invalid_request_error",
			    "incomplete_body", 0);
			assert_int_equal(state_total_streams(fs.srv.state), 0);
		}
		assert_int_equal(fc.body_off, fc.body_len);
		if (cases[k].piece > 0)
			assert_true(fc.reads >= (fc.body_len +
			    cases[k].piece - 1) / cases[k].piece);
		fake_close(&fc);
		server_down(&fs);
		free(body);
		ts_buf_free(&want);
	}
}

/* A body over the limit is a 413 after it was drained (so lighttpd can
 * deliver the answer); a Content-Length that is not a number, or no
 * body at all, a 400. The same on /v1, in the OpenAI shape. */
static void
test_body_limits(void **unused)
{
	static const struct {
		const char *uri;
		const char *cl;          /* CONTENT_LENGTH; NULL: absent */
		size_t body_len;         /* bytes served */
		int status;
		const char *code;
		int openai;
	} cases[] = {
		{ "/generate", "1048577", 1048577, 413, "body_too_large", 0 },
		{ "/generate", "abc", 0, 400, "invalid_content_length", 0 },
		{ "/generate", "-1", 0, 400, "invalid_content_length", 0 },
		{ "/generate", NULL, 0, 400, "empty_body", 0 },
		{ "/v1/completions", "1048577", 1048577, 413,
		    "body_too_large", 1 },
		{ "/v1/chat/completions", "12x", 0, 400,
		    "invalid_content_length", 1 },
		{ "/v1/chat/completions", NULL, 0, 400, "empty_body", 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char *body = calloc(1, cases[k].body_len + 1);

		assert_non_null(body);
		memset(body, ' ', cases[k].body_len);
		server_up(&fs);
		fake_open(&fc, &fs, "POST", cases[k].uri, NULL);
		fc.body = body;
		fc.body_len = cases[k].body_len;
		fc.piece = 1000;
		if (cases[k].cl != NULL)
			fake_set(&fc, "CONTENT_LENGTH", cases[k].cl);
		exchange(&fs, &fc, &r);
		assert_error(&r, cases[k].status, "invalid_request_error",
		    cases[k].code, cases[k].openai);
		/* drained: every byte was read */
		assert_int_equal(fc.body_off, fc.body_len);
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
		free(body);
	}
}

/* ---- a client that leaves ----------------------------------------------- */

/* The offset just after the n-th token event (one with an id) of a
 * whole /stream answer, head included. */
static size_t
after_event(const char *out, size_t len, uint32_t n)
{
	const char *body = NULL;
	size_t pos, i;
	uint32_t seen = 0;

	for (i = 0; i + 4 <= len && body == NULL; i++)
		if (memcmp(out + i, "\r\n\r\n", 4) == 0)
			body = out + i + 4;
	assert_non_null(body);
	pos = (size_t)(body - out);
	while (seen < n) {
		size_t start = pos;

		/* the event's end: its empty line */
		for (i = pos; i + 2 <= len; i++)
			if (memcmp(out + i, "\n\n", 2) == 0)
				break;
		assert_true(i + 2 <= len);
		pos = i + 2;
		seen += memcmp(out + start, "id: ", 4) == 0;
	}
	return pos;
}

/*
 * A client that leaves after 3 token events, by a failed write (part of
 * the 4th went out), by a hang-up that wait() reports between the 3rd
 * and 4th tokens: the sequence is cancelled with fewer tokens generated
 * than asked, the client got exactly 3 tokens and no [DONE], and
 * /_debug/generated says so. (A client that stops reading is the I/O
 * threads' to time out: test_io.c.)
 */
static void
test_client_gone(void **unused)
{
	enum how { WRITE_FAILS, HANG_UP };
	static const struct {
		enum how how;
		uint64_t generated;      /* when the sequence left */
		uint64_t wasted;         /* generated, never delivered */
		const char *cause;
	} cases[] = {
		/* the 4th token was made; its write failed */
		{ WRITE_FAILS, 4, 1, "client_gone" },
		/* gone between the 3rd and the 4th: the step in flight is
		 * dropped at its boundary */
		{ HANG_UP, 3, 0, "client_gone" },
	};
	const uint32_t asked = 50;
	size_t k, cut;
	char uri[256];
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;

	(void)unused;
	stream_uri(uri, sizeof(uri), "leave early", (int)asked,
	    "&prefill_ms=100");
	/* where the 3rd event ends in a complete answer */
	server_up(&fs);
	fake_open(&fc, &fs, "GET", uri, NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	cut = after_event(fc.out.p, fc.out.len, 3);
	fake_close(&fc);
	server_down(&fs);

	for (k = 0; k < NELEM(cases); k++) {
		struct sse *s;
		struct state_record rec;
		char dbg[64];
		struct fake_conn dc;
		struct response dr;
		json_t *o;
		size_t i, tokens = 0;
		uint64_t id;

		server_defaults(&fs);
		server_start(&fs);
		fake_open(&fc, &fs, "GET", uri, NULL);
		if (cases[k].how == HANG_UP) {
			/* tokens at t0 + 100, 120, 140 ms; gone at 150 */
			fc.hup_at = clock_ns + 150 * MS;
		} else {
			fc.fail_after = cut + 5;
		}
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		id = request_id(&r);
		/* the body up to the cut: 3 whole events and no more */
		s = sse_parse(r.body, cut - (size_t)(r.body - fc.out.p));
		for (i = 0; i < s->n; i++) {
			assert_true(s->ev[i].kind != EV_DATA ||
			    strcmp(s->ev[i].data, "[DONE]") != 0);
			tokens += s->ev[i].has_id;
		}
		assert_int_equal(tokens, 3);
		sse_free(s);
		assert_int_equal(fc.out.len, cases[k].how == HANG_UP ? cut :
		    cut + 5);
		assert_int_equal(state_lookup(fs.srv.state, id, &rec), TS_OK);
		assert_int_equal(rec.status, STATE_CANCELLED);
		assert_true(rec.generated < asked);
		assert_int_equal(rec.generated, cases[k].generated);
		assert_int_equal(rec.wasted, cases[k].wasted);

		snprintf(dbg, sizeof(dbg), "/_debug/generated?id=%llu",
		    (unsigned long long)id);
		fake_open(&dc, &fs, "GET", dbg, NULL);
		exchange(&fs, &dc, &dr);
		assert_int_equal(dr.status, 200);
		o = body_json(&dr);
		assert_string_equal(jstr(o, "status"), "cancelled");
		assert_string_equal(jstr(o, "finish_reason"), "abort");
		assert_string_equal(jstr(o, "cancel_cause"), cases[k].cause);
		assert_int_equal(json_integer_value(json_object_get(o,
		    "generated")), cases[k].generated);
		assert_int_equal(json_integer_value(json_object_get(o,
		    "requested")), asked);
		json_decref(o);
		fake_close(&dc);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* A whole answer whose client left is noticed at its first keep-alive
 * (the write fails) and its sequence cancelled long before max_tokens;
 * nothing reached the client. */
static void
test_answer_client_gone(void **unused)
{
	static const struct {
		const char *uri;
		const char *body;
	} cases[] = {
		{ "/generate", "{\"prompt\":\"x\",\"max_tokens\":200,"
		    "\"prefill_ms\":100}" },
		{ "/v1/completions", "{\"model\":\"tokstream-sim\","
		    "\"prompt\":\"x\",\"max_tokens\":200,\"ignore_eos\":true,"
		    "\"prefill_ms\":100}" },
		{ "/v1/chat/completions", "{\"model\":\"tokstream-sim\","
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		    "\"max_tokens\":200,\"ignore_eos\":true,"
		    "\"prefill_ms\":100}" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct state_record rec;

		server_up(&fs);
		fake_open(&fc, &fs, "POST", cases[k].uri, cases[k].body);
		fc.fail_after = 0;
		route(&fs.srv, &fc.c, clock_ns);
		engine_drain(fs.srv.engine);
		assert_int_equal(fc.out.len, 0);
		assert_true(fc.write_failed);
		assert_int_equal(state_lookup(fs.srv.state, 0, &rec), TS_OK);
		assert_int_equal(rec.status, STATE_CANCELLED);
		assert_int_equal(rec.cause, STATE_CAUSE_CLIENT_GONE);
		/* tokens at 100, 120, ... 1000 ms; the step of 1020 is
		 * dropped */
		assert_int_equal(rec.generated, 46);
		assert_int_equal(rec.wasted, 46);
		fake_close(&fc);
		server_down(&fs);
	}
}

/*
 * The server stops while a request runs: a stream gets an error event
 * (503 shutdown) and [DONE] - on /stream without the "end" id, so that
 * EventSource reconnects and resumes on the restarted server - and a
 * whole answer is a 503. The record says error.
 */
static void
test_shutdown_mid_request(void **unused)
{
	enum shape { LAB_SSE, V1_SSE, JSON };
	static const struct {
		const char *method, *uri, *body;
		enum shape shape;
		int openai;
	} cases[] = {
		{ "GET", "/stream?prompt=s&max_tokens=20&prefill_ms=100",
		    NULL, LAB_SSE, 0 },
		{ "POST", "/v1/chat/completions", "{\"model\":"
		    "\"tokstream-sim\",\"messages\":[{\"role\":\"user\","
		    "\"content\":\"s\"}],\"max_tokens\":20,\"stream\":true,"
		    "\"ignore_eos\":true,\"prefill_ms\":100}", V1_SSE, 1 },
		{ "POST", "/generate", "{\"prompt\":\"s\",\"max_tokens\":20,"
		    "\"prefill_ms\":100}", JSON, 0 },
		{ "POST", "/v1/completions", "{\"model\":\"tokstream-sim\","
		    "\"prompt\":\"s\",\"max_tokens\":20,\"ignore_eos\":true,"
		    "\"prefill_ms\":100}", JSON, 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct state_record rec;

		server_up(&fs);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri,
		    cases[k].body);
		/* tokens at 100, 120, 140; stopped at 150 */
		fc.shutdown_at = clock_ns + 150 * MS;
		exchange(&fs, &fc, &r);
		if (cases[k].shape == JSON) {
			assert_error(&r, 503, "server_error", "shutdown",
			    cases[k].openai);
			assert_true(request_id(&r) > 0);
		} else {
			struct sse *s = sse_parse(r.body, r.body_len);
			json_t *o;
			size_t i, ids = 0;

			assert_int_equal(r.status, 200);
			assert_true(s->n >= 2);
			for (i = 0; i < s->n; i++)
				ids += s->ev[i].has_id;
			/* the tokens' ids only: no "end" */
			if (cases[k].shape == LAB_SSE)
				assert_int_equal(ids, 3);
			else
				assert_int_equal(ids, 0);
			o = json_loads(s->ev[s->n - 2].data, 0, NULL);
			assert_non_null(o);
			assert_string_equal(jstr(o, "error.code"), "shutdown");
			json_decref(o);
			assert_false(s->ev[s->n - 1].has_id);
			assert_string_equal(s->ev[s->n - 1].data, "[DONE]");
			sse_free(s);
		}
		assert_int_equal(state_lookup(fs.srv.state, 0, &rec), TS_OK);
		assert_int_equal(rec.status, STATE_ERROR);
		assert_int_equal(rec.cause, STATE_CAUSE_SHUTDOWN);
		assert_int_equal(rec.generated, 3);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* ---- keep-alives and the queue ------------------------------------------ */

/* Keep-alives (": keep-alive") during a long prefill, before the first
 * token: one per keepalive_ms of silence; none when off or when the
 * prefill is shorter. POST /generate commits to 200 and sends newlines,
 * which a JSON parser skips. */
static void
test_keepalive_during_prefill(void **unused)
{
	enum ep { STREAM, CHAT, GENERATE };
	static const struct {
		enum ep ep;
		int prefill_ms;
		double keepalive_ms;
		size_t keepalives;
	} cases[] = {
		{ STREAM, 3000, 1000, 2 },
		{ STREAM, 3500, 1000, 3 },
		{ STREAM, 3000, 0, 0 },
		{ STREAM, 500, 1000, 0 },
		{ CHAT, 3000, 1000, 2 },
		{ GENERATE, 2500, 1000, 2 },
		/* the first token (at 3000) writes nothing to a JSON answer:
		 * the silence has lasted 1000 ms then, so a third newline */
		{ GENERATE, 3000, 1000, 3 },
		{ GENERATE, 500, 1000, 0 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct ts_buf want;
		char uri[256], extra[64], *body = NULL;
		struct v1_req q = { OPENAI_CHAT, "wait", 3, 1, 0, { NULL }, 0,
		    -1 };

		ts_buf_init(&want, 1u << 20);
		server_defaults(&fs);
		fs.opt.keepalive_ms = cases[k].keepalive_ms;
		server_start(&fs);
		if (cases[k].ep == STREAM) {
			snprintf(extra, sizeof(extra), "&prefill_ms=%d",
			    cases[k].prefill_ms);
			stream_uri(uri, sizeof(uri), "wait", 3, extra);
			fake_open(&fc, &fs, "GET", uri, NULL);
		} else if (cases[k].ep == CHAT) {
			q.prefill_ms = cases[k].prefill_ms;
			body = v1_body(&q);
			fake_open(&fc, &fs, "POST", v1_uri(q.kind), body);
		} else {
			body = generate_body("wait", 3, cases[k].prefill_ms);
			fake_open(&fc, &fs, "POST", "/generate", body);
		}
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_true(request_id(&r) > 0);
		if (cases[k].ep == GENERATE) {
			size_t nl = strspn(r.body, "\n");
			json_t *o;

			assert_int_equal(nl, cases[k].keepalives);
			o = body_json(&r);
			lab_text("wait", 3, &want);
			assert_string_equal(jstr(o, "text"), want.p);
			json_decref(o);
		} else {
			struct sse *s = sse_parse(r.body, r.body_len);
			size_t i, first = s->n;

			for (i = 0; i < s->n && first == s->n; i++)
				if (s->ev[i].kind == EV_DATA)
					first = i;
			assert_true(first < s->n);
			assert_int_equal(count_keepalives(s),
			    cases[k].keepalives);
			/* all of them before the first token */
			for (i = first; i < s->n; i++)
				assert_int_not_equal(s->ev[i].kind,
				    EV_COMMENT);
			sse_free(s);
		}
		fake_close(&fc);
		server_down(&fs);
		free(body);
		ts_buf_free(&want);
	}
}

/* A request that waits for the only slot gets keep-alives while it
 * waits, starts when the slot frees, and its record has the time it
 * waited (queue_ms). */
static void
test_queued_request(void **unused)
{
	static const struct {
		double busy_ms;          /* the slot holder's prefill */
		size_t keepalives;
	} cases[] = {
		{ 2500, 2 },
		{ 500, 0 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc, dc;
		struct response r;
		struct engine_request job;
		struct engine_seq *busy;
		struct state_record rec;
		struct sse *s;
		json_t *o;
		uint64_t id;
		char dbg[64];
		size_t i, tokens = 0;

		server_defaults(&fs);
		fs.opt.engine.max_num_seqs = 1;
		fs.opt.engine.max_waiting = 4;
		server_start(&fs);
		memset(&job, 0, sizeof(job));
		job.prompt = "busy";
		job.prompt_len = 4;
		job.model = fs.be.lab_model;
		engine_sampling_greedy(&job.sampling);
		job.max_tokens = 1;
		job.prefill_ms = cases[k].busy_ms;
		job.tpot_ms = -1;
		job.error_after = -1;
		job.t0_ns = clock_ns;
		assert_int_equal(engine_submit(fs.srv.engine, &job, &busy),
		    TS_OK);
		engine_advance(fs.srv.engine, clock_ns);  /* takes the slot */
		fake_open(&fc, &fs, "GET",
		    "/stream?prompt=q&max_tokens=2&prefill_ms=100", NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		id = request_id(&r);
		s = sse_parse(r.body, r.body_len);
		assert_int_equal(count_keepalives(s), cases[k].keepalives);
		for (i = 0; i < s->n; i++)
			tokens += s->ev[i].has_id;
		assert_int_equal(tokens, 3);         /* 2 tokens and the end */
		sse_free(s);
		assert_int_equal(state_lookup(fs.srv.state, id, &rec), TS_OK);
		assert_int_equal(rec.queue_us,
		    (uint64_t)(cases[k].busy_ms * 1000));
		snprintf(dbg, sizeof(dbg), "/_debug/generated?id=%llu",
		    (unsigned long long)id);
		fake_open(&dc, &fs, "GET", dbg, NULL);
		exchange(&fs, &dc, &r);
		o = body_json(&r);
		assert_true(json_real_value(json_object_get(o, "queue_ms")) ==
		    cases[k].busy_ms);
		json_decref(o);
		engine_release(fs.srv.engine, busy);
		fake_close(&dc);
		fake_close(&fc);
		server_down(&fs);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_events),
		cmocka_unit_test(test_stream_text_matches_generate),
		cmocka_unit_test(test_stream_bad_query),
		cmocka_unit_test(test_stream_injected_error),
		cmocka_unit_test(test_stream_resume),
		cmocka_unit_test(test_stream_timing),
		cmocka_unit_test(test_generate_body_reads),
		cmocka_unit_test(test_body_limits),
		cmocka_unit_test(test_client_gone),
		cmocka_unit_test(test_answer_client_gone),
		cmocka_unit_test(test_shutdown_mid_request),
		cmocka_unit_test(test_keepalive_during_prefill),
		cmocka_unit_test(test_queued_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
