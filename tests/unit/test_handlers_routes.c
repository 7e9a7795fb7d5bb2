/*
 * test_handlers_routes.c - routing through route() over the fake
 * connection (handlers_fake.h): unknown paths and methods, HEAD and
 * OPTIONS, CORS preflights and --cors-origin, --api-key, a stopping
 * server's 503 and a full engine's 429.
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

#include "handlers/auth.h"
#include "stores/state.h"

#include "handlers_fake.h"

/* ---- routing ------------------------------------------------------------ */

/* An unknown path is 404, a known path with another method 405 with
 * Allow (GET takes HEAD, and every path OPTIONS); /v1 errors in the
 * OpenAI shape (with "param"). */
static void
test_unknown_path_and_method(void **unused)
{
#define G "GET, HEAD, OPTIONS"
#define P "POST, OPTIONS"
	static const struct {
		const char *method, *uri;
		int status;
		const char *code;
		const char *allow;       /* NULL: no Allow header */
		int openai;
	} cases[] = {
		{ "GET", "/nope", 404, "unknown_path", NULL, 0 },
		{ "GET", "/streams?prompt=x", 404, "unknown_path", NULL, 0 },
		{ "GET", "/v1/nope", 404, "unknown_url", NULL, 1 },
		{ "POST", "/stream?prompt=x", 405, "method_not_allowed",
		    G, 0 },
		{ "GET", "/generate", 405, "method_not_allowed", P, 0 },
		{ "PUT", "/generate", 405, "method_not_allowed", P, 0 },
		{ "HEAD", "/generate", 405, "method_not_allowed", P, 0 },
		{ "GET", "/v1/chat/completions", 405, "method_not_allowed",
		    P, 1 },
		{ "GET", "/v1/completions", 405, "method_not_allowed", P, 1 },
		{ "GET", "/v1/responses", 405, "method_not_allowed", P, 1 },
		{ "DELETE", "/v1/models", 405, "method_not_allowed", G, 1 },
		{ "POST", "/v1/models/tokstream-sim", 405,
		    "method_not_allowed", G, 1 },
		{ "POST", "/_debug/generated", 405, "method_not_allowed",
		    G, 0 },
		{ "POST", "/health", 405, "method_not_allowed", G, 0 },
		{ "CONNECT", "/health", 405, "method_not_allowed", G, 0 },
		{ "POST", "/metrics", 405, "method_not_allowed", G, 0 },
		/* the demo page: lighttpd serves its GET and HEAD */
		{ "POST", "/", 405, "method_not_allowed", G, 0 },
		{ "DELETE", "/index.html", 405, "method_not_allowed", G, 0 },
		{ "OPTIONS", "/nope", 404, "unknown_path", NULL, 0 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char v[64];

		server_up(&fs);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		assert_error(&r, cases[k].status, cases[k].status == 404 &&
		    !cases[k].openai ? "not_found_error" :
		    "invalid_request_error", cases[k].code, cases[k].openai);
		if (cases[k].allow != NULL)
			assert_header(&r, "Allow", cases[k].allow);
		else
			assert_false(header(&r, "Allow", v, sizeof(v)));
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
#undef G
#undef P
}

/* A CORS preflight of a public endpoint is a 204 with the methods and
 * the headers asked for (a plain list) or tokstream's own; while the
 * server stops every request is a 503. */
static void
test_preflight_and_stopping(void **unused)
{
	static const struct {
		const char *method, *uri;
		const char *asked;       /* Access-Control-Request-Headers */
		int stopping;
		int status;
		const char *allow_headers;
		const char *methods;     /* Allow and ...-Allow-Methods */
	} cases[] = {
		{ "OPTIONS", "/stream", "last-event-id", 0, 204,
		    "last-event-id", "GET, HEAD, OPTIONS" },
		{ "OPTIONS", "/v1/chat/completions",
		    "authorization, x-stainless-os", 0, 204,
		    "authorization, x-stainless-os", "POST, OPTIONS" },
		{ "OPTIONS", "/generate", "bad\"header", 0, 204,
		    "Content-Type, Last-Event-ID, Authorization",
		    "POST, OPTIONS" },
		{ "OPTIONS", "/v1/responses", "content-type", 0, 204,
		    "content-type", "POST, OPTIONS" },
		{ "OPTIONS", "/v1/models/tokstream-sim", "authorization", 0,
		    204, "authorization", "GET, HEAD, OPTIONS" },
		/* a preflight while stopping is still answered */
		{ "OPTIONS", "/stream", "last-event-id", 1, 204,
		    "last-event-id", "GET, HEAD, OPTIONS" },
		{ "GET", "/stream?prompt=x", NULL, 1, 503, NULL, NULL },
		{ "GET", "/v1/models", NULL, 1, 503, NULL, NULL },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;

		server_up(&fs);
		atomic_store(&fs.srv.stopping, cases[k].stopping);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri, NULL);
		if (cases[k].asked != NULL) {
			fake_set(&fc, "HTTP_ACCESS_CONTROL_REQUEST_HEADERS",
			    cases[k].asked);
			fake_set(&fc, "HTTP_ACCESS_CONTROL_REQUEST_METHOD",
			    "POST");
		}
		exchange(&fs, &fc, &r);
		if (cases[k].status == 204) {
			assert_int_equal(r.status, 204);
			assert_int_equal(r.body_len, 0);
			assert_header(&r, "Access-Control-Allow-Origin", "*");
			assert_header(&r, "Access-Control-Allow-Methods",
			    cases[k].methods);
			assert_header(&r, "Allow", cases[k].methods);
			assert_header(&r, "Access-Control-Allow-Headers",
			    cases[k].allow_headers);
		} else {
			/* /v1 in the OpenAI shape */
			assert_error(&r, 503, "server_error", "shutdown",
			    strncmp(cases[k].uri, "/v1/", 4) == 0);
			assert_header(&r, "Retry-After", "1");
		}
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* --cors-origin: the public endpoints' answers carry it (errors too);
 * the operator's never do; "" turns CORS off, and then a preflight is
 * just a method /stream does not allow. */
static void
test_cors_origin(void **unused)
{
	static const struct {
		const char *cors;
		const char *method, *uri;
		int status;
		const char *origin;      /* NULL: no CORS headers */
	} cases[] = {
		{ "https://a.example", "GET", "/stream?prompt=c&max_tokens=1",
		    200, "https://a.example" },
		{ "https://a.example", "GET", "/stream", 400,
		    "https://a.example" },
		{ "https://a.example", "GET", "/v1/models", 200,
		    "https://a.example" },
		{ "https://a.example", "GET", "/health", 200,
		    "https://a.example" },
		{ "https://a.example", "GET", "/_debug/generated", 404, NULL },
		{ "https://a.example", "GET", "/metrics", 200, NULL },
		/* errors too: a page sees the JSON, not "Failed to fetch" */
		{ "https://a.example", "GET", "/v1/nope", 404,
		    "https://a.example" },
		{ "https://a.example", "GET", "/nope", 404,
		    "https://a.example" },
		{ "https://a.example", "GET", "/generate", 405,
		    "https://a.example" },
		{ "https://a.example", "GET", "/v1/models/nope", 404,
		    "https://a.example" },
		{ "https://a.example", "POST", "/metrics", 405, NULL },
		{ "", "GET", "/stream?prompt=c&max_tokens=1", 200, NULL },
		{ "", "OPTIONS", "/stream", 204, NULL },
		{ "", "GET", "/v1/nope", 404, NULL },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char v[256];

		server_defaults(&fs);
		fs.opt.cors_origin = cases[k].cors;
		server_start(&fs);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, cases[k].status);
		if (cases[k].origin != NULL) {
			assert_header(&r, "Access-Control-Allow-Origin",
			    cases[k].origin);
			assert_header(&r, "Access-Control-Expose-Headers",
			    "X-Request-Id");
		} else {
			assert_false(header(&r, "Access-Control-Allow-Origin",
			    v, sizeof(v)));
		}
		fake_close(&fc);
		server_down(&fs);
	}
}

/* A full engine (1 slot, no queue, the slot taken by a sequence
 * submitted directly) answers 429 queue_full with Retry-After. */
static void
test_queue_full_429(void **unused)
{
	static const struct {
		const char *method, *uri;
		int openai;
	} cases[] = {
		{ "POST", "/generate", 0 },
		{ "GET", "/stream?prompt=x", 0 },
		{ "POST", "/v1/completions", 1 },
		{ "POST", "/v1/chat/completions", 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct engine_request job;
		struct engine_seq *busy;
		struct v1_req q = { OPENAI_COMPLETIONS, "x", 4, 0, 0, { NULL },
		    0, -1 };
		char *body = NULL;

		server_defaults(&fs);
		fs.opt.engine.max_num_seqs = 1;
		fs.opt.engine.max_waiting = 0;
		server_start(&fs);
		memset(&job, 0, sizeof(job));
		job.prompt = "busy";
		job.prompt_len = 4;
		job.model = fs.be.lab_model;
		engine_sampling_greedy(&job.sampling);
		job.max_tokens = 5;
		job.prefill_ms = 40;
		job.tpot_ms = -1;
		job.error_after = -1;
		job.t0_ns = clock_ns;
		assert_int_equal(engine_submit(fs.srv.engine, &job, &busy),
		    TS_OK);
		if (strcmp(cases[k].uri, "/generate") == 0) {
			body = generate_body("x", 4, -1);
		} else if (cases[k].openai) {
			q.kind = strcmp(cases[k].uri, "/v1/completions") == 0 ?
			    OPENAI_COMPLETIONS : OPENAI_CHAT;
			body = v1_body(&q);
		}
		fake_open(&fc, &fs, cases[k].method, cases[k].uri, body);
		exchange(&fs, &fc, &r);
		assert_error(&r, 429, "rate_limit_error", "queue_full",
		    cases[k].openai);
		assert_header(&r, "Retry-After", "1");
		/* only the direct sequence has a record */
		assert_int_equal(state_total_streams(fs.srv.state), 1);
		engine_cancel(fs.srv.engine, busy, clock_ns,
		    ENGINE_CAUSE_CLIENT_GONE);
		engine_release(fs.srv.engine, busy);
		fake_close(&fc);
		server_down(&fs);
		free(body);
	}
}

/* --api-key: every request that generates needs "Authorization: Bearer
 * KEY" (401 invalid_api_key with WWW-Authenticate otherwise: on /v1 in
 * OpenAI's shape, on /stream and /generate in the lab's), any method but
 * OPTIONS, before 404 and 405; --open-lab-endpoints opens the lab
 * endpoints only; /health and a preflight need none. */
static void
test_api_key(void **unused)
{
	static const struct {
		const char *method, *uri;
		const char *auth;        /* Authorization, or NULL */
		int open_lab;            /* --open-lab-endpoints */
		int status;
		int streams;             /* state records it makes */
	} cases[] = {
		{ "GET", "/v1/models", NULL, 0, 401, 0 },
		{ "GET", "/v1/models", "Bearer sk-right", 0, 200, 0 },
		{ "GET", "/v1/models", "bearer   sk-right", 0, 200, 0 },
		{ "GET", "/v1/models", "Bearer sk-wrong", 0, 401, 0 },
		{ "GET", "/v1/models", "Bearer sk-righ", 0, 401, 0 },
		{ "GET", "/v1/models", "Bearer sk-rightt", 0, 401, 0 },
		{ "GET", "/v1/models", "Basic c2stcmlnaHQ=", 0, 401, 0 },
		{ "GET", "/v1/models", "sk-right", 0, 401, 0 },
		{ "GET", "/v1/models", "Bearer ", 0, 401, 0 },
		{ "GET", "/v1/models/tokstream-sim", NULL, 0, 401, 0 },
		{ "GET", "/v1/nope", NULL, 0, 401, 0 },
		{ "POST", "/v1/chat/completions", NULL, 0, 401, 0 },
		{ "POST", "/v1/chat/completions", NULL, 1, 401, 0 },
		{ "OPTIONS", "/v1/chat/completions", NULL, 0, 204, 0 },
		{ "GET", "/health", NULL, 0, 200, 0 },
		{ "GET", "/stream?prompt=k&max_tokens=1", NULL, 0, 401, 0 },
		{ "HEAD", "/stream?prompt=k&max_tokens=1", NULL, 0, 401, 0 },
		{ "GET", "/stream?prompt=k&max_tokens=1", "Bearer sk-wrong", 0,
		    401, 0 },
		{ "GET", "/stream?prompt=k&max_tokens=1", "Bearer sk-right", 0,
		    200, 1 },
		{ "GET", "/stream?prompt=k&max_tokens=1", NULL, 1, 200, 1 },
		{ "POST", "/generate", NULL, 0, 401, 0 },
		{ "GET", "/generate", NULL, 0, 401, 0 },
		{ "POST", "/generate", "Bearer sk-right", 0, 200, 1 },
		{ "POST", "/generate", NULL, 1, 200, 1 },
		{ "OPTIONS", "/stream", NULL, 0, 204, 0 },
		{ "OPTIONS", "/generate", NULL, 0, 204, 0 },
		{ "GET", "/nope", NULL, 0, 404, 0 },
	};
	static const char *const gen = "{\"prompt\":\"k\",\"max_tokens\":1}";
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		int v1 = strncmp(cases[k].uri, "/v1/", 4) == 0;

		server_defaults(&fs);
		fs.opt.api_key = "sk-right";
		fs.opt.open_lab = cases[k].open_lab;
		server_start(&fs);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri,
		    strcmp(cases[k].method, "POST") == 0 ? gen : NULL);
		if (cases[k].auth != NULL)
			fake_set(&fc, "HTTP_AUTHORIZATION", cases[k].auth);
		exchange(&fs, &fc, &r);
		if (cases[k].status == 401) {
			assert_int_equal(r.status, 401);
			if (strcmp(cases[k].method, "HEAD") != 0)
				assert_error(&r, 401, "invalid_request_error",
				    "invalid_api_key", v1);
			assert_header(&r, "WWW-Authenticate", "Bearer");
			assert_header(&r, "Access-Control-Allow-Origin", "*");
		} else {
			assert_int_equal(r.status, cases[k].status);
		}
		assert_int_equal(state_total_streams(fs.srv.state),
		    cases[k].streams);
		fake_close(&fc);
		server_down(&fs);
	}
	/* the comparison itself */
	assert_true(auth_bearer_ok("Bearer k", "k"));
	assert_false(auth_bearer_ok(NULL, "k"));
	assert_false(auth_bearer_ok("", "k"));
	assert_false(auth_bearer_ok("Bearerk", "k"));
	assert_false(auth_bearer_ok("Bearer k ", "k"));
	assert_int_equal(auth_key_valid("sk-1", 4), 0);
	assert_int_equal(auth_key_valid("", 0), -1);
	assert_int_equal(auth_key_valid("a b", 3), -1);
	assert_int_equal(auth_key_valid("a\x01", 2), -1);
}

/* HEAD is GET without the body (RFC 9110 section 9.3.2): the same
 * status and headers; HEAD /stream starts no generation. */
static void
test_head_requests(void **unused)
{
	static const struct {
		const char *uri;
		int status;
		const char *ctype;
	} cases[] = {
		{ "/health", 200, "application/json" },
		{ "/v1/models", 200, "application/json" },
		{ "/v1/models/tokstream-sim", 200, "application/json" },
		{ "/v1/models/nope", 404, "application/json" },
		{ "/metrics", 200, "text/plain; version=0.0.4; charset=utf-8" },
		{ "/stream?prompt=hi&max_tokens=5", 200,
		    "text/event-stream; charset=utf-8" },
		{ "/stream", 400, "application/json" },
		{ "/stream?prompt=hi&max_tokens=99999", 400,
		    "application/json" },
		{ "/_debug/generated?id=7", 404, "application/json" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char v[8];

		server_up(&fs);
		fake_open(&fc, &fs, "HEAD", cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, cases[k].status);
		assert_header(&r, "Content-Type", cases[k].ctype);
		assert_int_equal(r.body_len, 0);
		if (strncmp(cases[k].uri, "/stream", 7) == 0)
			assert_false(header(&r, "X-Request-Id", v,
			    sizeof(v)));
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		{
			struct engine_stats st;

			engine_stats(fs.srv.engine, &st);
			assert_int_equal(st.generated, 0);
			assert_int_equal(st.held, 0);
		}
		fake_close(&fc);
		server_down(&fs);
	}
}

/* OPTIONS on every path tokstream serves: 204 with Allow, also with
 * CORS off; the demo page's path too (HAProxy's default check); with
 * CORS on, the public paths add the preflight's answer. */
static void
test_options_allow(void **unused)
{
	static const struct {
		const char *uri;
		const char *allow;
	} cases[] = {
		{ "/", "GET, HEAD, OPTIONS" },
		{ "/index.html", "GET, HEAD, OPTIONS" },
		{ "/stream", "GET, HEAD, OPTIONS" },
		{ "/health", "GET, HEAD, OPTIONS" },
		{ "/metrics", "GET, HEAD, OPTIONS" },
		{ "/_debug/generated", "GET, HEAD, OPTIONS" },
		{ "/v1/models", "GET, HEAD, OPTIONS" },
		{ "/v1/models/any", "GET, HEAD, OPTIONS" },
		{ "/generate", "POST, OPTIONS" },
		{ "/v1/completions", "POST, OPTIONS" },
		{ "/v1/chat/completions", "POST, OPTIONS" },
		{ "/v1/responses", "POST, OPTIONS" },
	};
	size_t k, off;

	(void)unused;
	for (off = 0; off < 2; off++) {
		for (k = 0; k < NELEM(cases); k++) {
			struct fake_server fs;
			struct fake_conn fc;
			struct response r;
			char v[64];

			server_defaults(&fs);
			if (off)
				fs.opt.cors_origin = "";
			server_start(&fs);
			fake_open(&fc, &fs, "OPTIONS", cases[k].uri, NULL);
			exchange(&fs, &fc, &r);
			assert_int_equal(r.status, 204);
			assert_int_equal(r.body_len, 0);
			assert_header(&r, "Allow", cases[k].allow);
			/* CORS on: the preflight's answer too (the
			 * debug paths never have CORS) */
			if (off || strncmp(cases[k].uri, "/_debug", 7) == 0 ||
			    strcmp(cases[k].uri, "/metrics") == 0)
				assert_false(header(&r,
				    "Access-Control-Allow-Methods", v,
				    sizeof(v)));
			else
				assert_header(&r,
				    "Access-Control-Allow-Methods",
				    cases[k].allow);
			fake_close(&fc);
			server_down(&fs);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_requests),
		cmocka_unit_test(test_api_key),
		cmocka_unit_test(test_options_allow),
		cmocka_unit_test(test_unknown_path_and_method),
		cmocka_unit_test(test_preflight_and_stopping),
		cmocka_unit_test(test_cors_origin),
		cmocka_unit_test(test_queue_full_429),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
