/*
 * test_handlers_debug.c - the operator's endpoints through route() over
 * the fake connection (handlers_fake.h): /metrics after streams, the
 * X-Request-Id and its state record, /_debug/generated (local only, its
 * queries) and a named instance (--instance) on /_debug, /health and
 * /metrics.
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

#include "stores/state.h"

#include "handlers_fake.h"

/* ---- /metrics, /_debug, /health ----------------------------------------- */

/* The metrics the hooks and the relay count for streams: tokens, TTFT
 * once per stream, ITL between tokens, E2E, finish reasons. */
#define M "{model_name=\"tokstream-sim\"}"
static void
test_metrics_after_streams(void **unused)
{
	static const struct {
		const char *line;        /* a whole line of /metrics */
	} want[] = {
		/* every series carries model_name, as vLLM's (#24) */
		{ "tokstream:generation_tokens_total" M " 9" },
		{ "tokstream:time_to_first_token_seconds_count" M " 2" },
		{ "tokstream:inter_token_latency_seconds_count" M " 7" },
		{ "tokstream:e2e_request_latency_seconds_count" M " 2" },
		{ "tokstream:request_success_total{model_name="
		    "\"tokstream-sim\",finished_reason=\"length\"} 2" },
		{ "tokstream:num_requests_running" M " 0" },
	};
	struct fake_server fs;
	struct fake_conn a, b, m;
	struct response r;
	char *text;
	size_t k;

	(void)unused;
	server_up(&fs);
	fake_open(&a, &fs, "GET", "/stream?prompt=m&max_tokens=5", NULL);
	exchange(&fs, &a, &r);
	assert_int_equal(r.status, 200);
	fake_open(&b, &fs, "GET", "/stream?prompt=n&max_tokens=4", NULL);
	exchange(&fs, &b, &r);
	assert_int_equal(r.status, 200);
	fake_open(&m, &fs, "GET", "/metrics", NULL);
	exchange(&fs, &m, &r);
	assert_int_equal(r.status, 200);
	text = calloc(1, r.body_len + 2);
	assert_non_null(text);
	text[0] = '\n';
	memcpy(text + 1, r.body, r.body_len);
	for (k = 0; k < NELEM(want); k++) {
		char line[256];

		snprintf(line, sizeof(line), "\n%s\n", want[k].line);
		if (strstr(text, line) == NULL)
			fail_msg("no line '%s' in /metrics", want[k].line);
	}
	free(text);
	fake_close(&m);
	fake_close(&b);
	fake_close(&a);
	server_down(&fs);
}

/* The X-Request-Id of the head names the request's record in the state
 * file, of the right kind, with what it asked for and generated. */
static void
test_request_id_matches_record(void **unused)
{
	enum ep { STREAM, GENERATE, V1 };
	static const struct {
		enum ep ep;
		struct v1_req q;
		enum state_kind kind;
	} cases[] = {
		{ STREAM, { 0, "id", 4, 1, 0, { NULL }, 0, -1 },
		    STATE_KIND_STREAM },
		{ GENERATE, { 0, "id", 4, 0, 0, { NULL }, 0, -1 },
		    STATE_KIND_GENERATE },
		{ V1, { OPENAI_COMPLETIONS, "id", 4, 1, 0, { NULL }, 0, -1 },
		    STATE_KIND_STREAM },
		{ V1, { OPENAI_COMPLETIONS, "id", 4, 0, 0, { NULL }, 0, -1 },
		    STATE_KIND_GENERATE },
		{ V1, { OPENAI_CHAT, "id", 4, 0, 0, { NULL }, 0, -1 },
		    STATE_KIND_GENERATE },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc[3];
		struct response r;
		struct state_record rec;
		char uri[256], *body = NULL;
		uint64_t id;
		size_t j;

		server_up(&fs);
		/* two requests before, so the id is not simply 1 */
		for (j = 0; j < 3; j++) {
			const struct v1_req *q = &cases[k].q;

			free(body);
			body = NULL;
			if (cases[k].ep == STREAM) {
				stream_uri(uri, sizeof(uri), q->prompt,
				    q->max_tokens, NULL);
				fake_open(&fc[j], &fs, "GET", uri, NULL);
			} else if (cases[k].ep == GENERATE) {
				body = generate_body(q->prompt, q->max_tokens,
				    -1);
				fake_open(&fc[j], &fs, "POST", "/generate",
				    body);
			} else {
				body = v1_body(q);
				fake_open(&fc[j], &fs, "POST", v1_uri(q->kind),
				    body);
			}
			exchange(&fs, &fc[j], &r);
			assert_int_equal(r.status, 200);
		}
		id = request_id(&r);
		assert_int_equal(id, 3);
		assert_int_equal(state_lookup(fs.srv.state, 0, &rec), TS_OK);
		assert_int_equal(rec.id, id);
		assert_int_equal(rec.kind, cases[k].kind);
		assert_int_equal(rec.requested, cases[k].q.max_tokens);
		assert_int_equal(rec.generated, cases[k].q.max_tokens);
		assert_int_equal(rec.status, STATE_DONE);
		assert_true(rec.prompt_tokens > 0);
		for (j = 0; j < 3; j++)
			fake_close(&fc[j]);
		server_down(&fs);
		free(body);
	}
}

/* /_debug/generated answers only local requests that no proxy
 * forwarded, for a loopback Host (no DNS rebinding). */
static void
test_debug_generated_local_only(void **unused)
{
	static const struct {
		const char *addr;
		const char *hdr;         /* a forwarding header, or NULL */
		int status;
		const char *host;        /* Host; NULL: fake_open's localhost */
	} cases[] = {
		{ "127.0.0.1", NULL, 200, NULL },
		{ "::1", NULL, 200, NULL },
		{ "10.1.2.3", NULL, 403, NULL },
		{ "127.0.0.1", "HTTP_X_FORWARDED_FOR", 403, NULL },
		{ "127.0.0.1", "HTTP_FORWARDED", 403, NULL },
		{ "127.0.0.1", "HTTP_X_REAL_IP", 403, NULL },
		/* DNS rebinding: loopback, but the page's own name */
		{ "127.0.0.1", NULL, 403, "rebind.attacker.example" },
		{ "127.0.0.1", NULL, 403, "rebind.attacker.example:8170" },
		{ "127.0.0.1", NULL, 403, "127.0.0.1.attacker.example" },
		{ "127.0.0.1", NULL, 403, "localhost.attacker.example" },
		{ "127.0.0.1", NULL, 403, "[::2]:8170" },
		{ "127.0.0.1", NULL, 200, "localhost:8170" },
		{ "127.0.0.1", NULL, 200, "LOCALHOST." },
		{ "127.0.0.1", NULL, 200, "ui.localhost:3000" },
		{ "127.0.0.1", NULL, 200, "127.0.0.1:8170" },
		{ "127.0.0.1", NULL, 200, "127.9.8.7" },
		{ "::1", NULL, 200, "[::1]:8170" },
		{ "127.0.0.1", NULL, 200, "" },   /* HTTP/1.0: no Host */
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc, dc;
		struct response r;

		server_up(&fs);
		fake_open(&fc, &fs, "GET", "/stream?prompt=d&max_tokens=2",
		    NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		fake_open(&dc, &fs, "GET", "/_debug/generated?id=1", NULL);
		fake_set(&dc, "REMOTE_ADDR", cases[k].addr);
		if (cases[k].hdr != NULL)
			fake_set(&dc, cases[k].hdr, "127.0.0.1");
		if (cases[k].host != NULL)
			fake_set(&dc, "HTTP_HOST", cases[k].host);
		exchange(&fs, &dc, &r);
		if (cases[k].status == 200) {
			json_t *o = body_json(&r);

			assert_int_equal(r.status, 200);
			assert_string_equal(jstr(o, "id"), "1");
			assert_string_equal(jstr(o, "status"), "done");
			assert_string_equal(jstr(o, "finish_reason"),
			    "length");
			json_decref(o);
		} else {
			assert_error(&r, 403, "permission_error",
			    "loopback_only", 0);
		}
		fake_close(&dc);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* GET /_debug/generated: the newest record without an id, the named one
 * with one; a malformed query is a 400, an unknown id a 404. */
static void
test_debug_generated_queries(void **unused)
{
	static const struct {
		const char *qs;
		int status;
		const char *code;        /* an error's */
		const char *id;          /* a 200's */
	} cases[] = {
		{ "", 200, NULL, "2" },
		{ "id=1", 200, NULL, "1" },
		{ "id=2", 200, NULL, "2" },
		{ "id=3", 404, "unknown_stream", NULL },
		{ "id=0", 400, "invalid_id", NULL },
		{ "id=abc", 400, "invalid_id", NULL },
		{ "id=1x", 400, "invalid_id", NULL },
		{ "id=-1", 400, "invalid_id", NULL },
		{ "stream=1", 400, "invalid_query", NULL },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn a, b, dc;
		struct response r;
		char uri[128];

		server_up(&fs);
		fake_open(&a, &fs, "GET", "/stream?prompt=a&max_tokens=3",
		    NULL);
		exchange(&fs, &a, &r);
		fake_open(&b, &fs, "POST", "/generate",
		    "{\"prompt\":\"b\",\"max_tokens\":2}");
		exchange(&fs, &b, &r);
		snprintf(uri, sizeof(uri), "/_debug/generated%s%s",
		    *cases[k].qs != '\0' ? "?" : "", cases[k].qs);
		fake_open(&dc, &fs, "GET", uri, NULL);
		exchange(&fs, &dc, &r);
		if (cases[k].status == 200) {
			json_t *o = body_json(&r);
			int first = strcmp(cases[k].id, "1") == 0;

			assert_int_equal(r.status, 200);
			assert_string_equal(jstr(o, "id"), cases[k].id);
			assert_string_equal(jstr(o, "kind"), first ? "stream" :
			    "generate");
			assert_int_equal(json_integer_value(json_object_get(o,
			    "generated")), first ? 3 : 2);
			assert_int_equal(json_integer_value(json_object_get(o,
			    "total_generated")), 5);
			assert_int_equal(json_integer_value(json_object_get(o,
			    "total_streams")), 2);
			json_decref(o);
		} else {
			assert_error(&r, cases[k].status, cases[k].status ==
			    404 ? "not_found_error" : "invalid_request_error",
			    cases[k].code, 0);
		}
		fake_close(&dc);
		fake_close(&b);
		fake_close(&a);
		server_down(&fs);
	}
}

/*
 * A named server (--instance b1; docs/OPERATIONS.md "Several hosts"):
 * its request, event and /v1 ids start with the name; /_debug/generated
 * answers only its own ids (421 for another instance's, 400 for a bare
 * number); /health and /metrics check ?instance=; a Last-Event-ID that
 * another instance sent resumes here and links to it as other_instance.
 */
static void
test_named_instance(void **unused)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct resume_id rid = { 9, 0, 2, 0 };
	char uri[512], idbuf[RESUME_ID_MAX + 1], hdr[64];
	struct sse *sp;
	json_t *o;

	(void)unused;
	server_defaults(&fs);
	assert_int_equal(resume_instance_parse("b1", 2, &fs.opt.instance),
	    TS_OK);
	fs.opt.instance_name = "b1";
	snprintf(fs.opt.id_prefix, sizeof(fs.opt.id_prefix), "b1-");
	server_start(&fs);
	stream_uri(uri, sizeof(uri), "named", 3, NULL);
	fake_open(&fc, &fs, "GET", uri, NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	assert_header(&r, "X-Request-Id", "b1-1");
	sp = sse_parse(r.body, r.body_len);
	assert_true(sp->n >= 2);
	assert_int_equal(strncmp(sp->ev[0].id, "b1-1-", 5), 0);
	sse_free(sp);
	fake_close(&fc);
	/* its own id, then another instance's, then a bare number */
	fake_open(&fc, &fs, "GET", "/_debug/generated?id=b1-1", NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_string_equal(jstr(o, "id"), "b1-1");
	json_decref(o);
	fake_close(&fc);
	fake_open(&fc, &fs, "GET", "/_debug/generated?id=b2-1", NULL);
	exchange(&fs, &fc, &r);
	assert_error(&r, 421, "invalid_request_error", "misdirected_request",
	    0);
	fake_close(&fc);
	fake_open(&fc, &fs, "GET", "/_debug/generated?id=1", NULL);
	exchange(&fs, &fc, &r);
	assert_error(&r, 400, "invalid_request_error", "invalid_id", 0);
	fake_close(&fc);
	fake_open(&fc, &fs, "GET", "/health?instance=b2", NULL);
	exchange(&fs, &fc, &r);
	assert_error(&r, 421, "invalid_request_error", "misdirected_request",
	    0);
	fake_close(&fc);
	fake_open(&fc, &fs, "GET", "/health?instance=b1", NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_string_equal(jstr(o, "instance"), "b1");
	json_decref(o);
	fake_close(&fc);
	/* b2's event for token 2 of the same request: resumed here */
	assert_int_equal(resume_instance_parse("b2", 2, &rid.instance),
	    TS_OK);
	rid.key = resume_key("named", 5, 3, -1);
	assert_true(resume_id_format(idbuf, sizeof(idbuf), &rid) > 0);
	stream_uri(uri, sizeof(uri), "named", 3, NULL);
	fake_open(&fc, &fs, "GET", uri, NULL);
	fake_set(&fc, "HTTP_LAST_EVENT_ID", idbuf);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 204);   /* token 2 was the last of 3 */
	fake_close(&fc);
	rid.index = 0;
	assert_true(resume_id_format(idbuf, sizeof(idbuf), &rid) > 0);
	fake_open(&fc, &fs, "GET", uri, NULL);
	fake_set(&fc, "HTTP_LAST_EVENT_ID", idbuf);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	assert_header(&r, "X-Request-Id", "b1-2");
	fake_close(&fc);
	snprintf(hdr, sizeof(hdr), "/_debug/generated?id=b1-2");
	fake_open(&fc, &fs, "GET", hdr, NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_string_equal(jstr(o, "resumed_from"), "b2-9");
	assert_string_equal(jstr(o, "resumed_from_record"), "other_instance");
	json_decref(o);
	fake_close(&fc);
	server_down(&fs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_after_streams),
		cmocka_unit_test(test_request_id_matches_record),
		cmocka_unit_test(test_debug_generated_local_only),
		cmocka_unit_test(test_debug_generated_queries),
		cmocka_unit_test(test_named_instance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
