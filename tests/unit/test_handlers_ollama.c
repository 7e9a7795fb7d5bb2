/*
 * test_handlers_ollama.c - Ollama's handlers (handlers/ollama.c) through
 * route() over the fake connection (handlers_fake.h), on the synthetic
 * clock: an NDJSON stream written a line per token at each token's time,
 * the final object's durations equal to the engine's queue, prefill and
 * decode, the whole answer equal to the stream, an error after the 200
 * as the last line, a client that leaves, and the refusals in Ollama's
 * shape.
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

/* The lines of an NDJSON body, each parsed (at most 64); returns how
 * many. Every line must be one JSON object. */
static size_t
lines(const struct response *r, json_t **out, size_t cap)
{
	size_t n = 0, at = 0;

	while (at < r->body_len) {
		const char *nl = memchr(r->body + at, '\n', r->body_len - at);

		assert_non_null(nl);
		assert_true(n < cap);
		out[n] = json_loadb(r->body + at, (size_t)(nl - r->body) - at,
		    0, NULL);
		assert_true(json_is_object(out[n]));
		n++;
		at = (size_t)(nl - r->body) + 1;
	}
	return n;
}

static long long
jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	assert_true(json_is_integer(v));
	return (long long)json_integer_value(v);
}

/* A stream of 5 tokens after a 100 ms prefill at 20 ms a step: a line a
 * token, each written when its token was made, and the final object's
 * durations the engine's (no queue: load 0; prefill 100 ms; decode from
 * the first token to the last, 4 steps). */
static void
test_stream_lines_and_durations(void **unused)
{
	static const char body[] = "{\"model\":\"tokstream-sim\",\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"prefill_ms\":100,"
	    "\"options\":{\"num_predict\":5,\"seed\":1}}";
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	json_t *l[64];
	int64_t t0;
	size_t n, i, w;

	(void)unused;
	server_up(&fs);
	fake_open(&fc, &fs, "POST", "/api/chat", body);
	t0 = clock_ns;
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	assert_header(&r, "Content-Type", "application/x-ndjson");
	n = lines(&r, l, 64);
	assert_int_equal(n, 6);
	for (i = 0; i < 5; i++) {
		assert_true(json_is_false(json_object_get(l[i], "done")));
		assert_string_equal(jstr(l[i], "message.role"), "assistant");
		assert_true(strlen(jstr(l[i], "message.content")) > 0);
		assert_string_equal(jstr(l[i], "model"), "tokstream-sim");
	}
	assert_true(json_is_true(json_object_get(l[5], "done")));
	assert_string_equal(jstr(l[5], "done_reason"), "length");
	assert_int_equal(jint(l[5], "load_duration"), 0);
	assert_int_equal(jint(l[5], "prompt_eval_duration"), 100 * MS);
	assert_int_equal(jint(l[5], "eval_duration"), 80 * MS);
	assert_int_equal(jint(l[5], "total_duration"), 180 * MS);
	assert_int_equal(jint(l[5], "eval_count"), 5);
	assert_true(jint(l[5], "prompt_eval_count") > 0);
	/* one write per token, at its time: the head and nothing more
	 * first, then the token lines 20 ms apart (the last with the
	 * final object) */
	assert_true(fc.nwrites >= 6);
	w = fc.nwrites - 5;
	for (i = 0; i < 5; i++)
		assert_int_equal(fc.write_at[w + i] - t0,
		    (100 + 20 * (int64_t)i) * MS);
	for (i = 0; i < n; i++)
		json_decref(l[i]);
	fake_close(&fc);
	server_down(&fs);
}

/* "stream": false: one object, its text the stream's, its metrics the
 * same. */
static void
test_answer_matches_stream(void **unused)
{
	static const char *const bodies[] = {
		"{\"model\":\"tokstream-sim\",\"prompt\":\"the sea\","
		    "\"options\":{\"num_predict\":9,\"seed\":4}}",
		"{\"model\":\"tokstream-sim\",\"prompt\":\"the sea\","
		    "\"stream\":false,\"options\":{\"num_predict\":9,"
		    "\"seed\":4}}",
	};
	struct ts_buf text;
	json_t *l[64], *a;
	size_t n, i;

	(void)unused;
	ts_buf_init(&text, 1 << 16);
	for (i = 0; i < 2; i++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		size_t k;

		server_up(&fs);
		fake_open(&fc, &fs, "POST", "/api/generate", bodies[i]);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		if (i == 0) {
			n = lines(&r, l, 64);
			assert_int_equal(n, 10);
			for (k = 0; k + 1 < n; k++) {
				ts_buf_append(&text, jstr(l[k], "response"),
				    strlen(jstr(l[k], "response")));
				json_decref(l[k]);
			}
			assert_string_equal(jstr(l[n - 1], "response"), "");
			assert_int_equal(jint(l[n - 1], "eval_count"), 9);
			json_decref(l[n - 1]);
		} else {
			assert_header(&r, "Content-Type", "application/json");
			a = body_json(&r);
			assert_string_equal(jstr(a, "response"), text.p);
			assert_int_equal(jint(a, "eval_count"), 9);
			assert_true(json_is_true(json_object_get(a, "done")));
			json_decref(a);
		}
		fake_close(&fc);
		server_down(&fs);
	}
	ts_buf_free(&text);
}

/* An error after 2 tokens: a 200 whose last line is {"error"}; the
 * record an error with 2 tokens. */
static void
test_error_after_commit(void **unused)
{
	static const char body[] = "{\"model\":\"tokstream-sim\",\"prompt\":"
	    "\"x\",\"error_after\":2,\"options\":{\"num_predict\":9}}";
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct state_record rec;
	json_t *l[64];
	size_t n, i;

	(void)unused;
	server_up(&fs);
	fake_open(&fc, &fs, "POST", "/api/generate", body);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	n = lines(&r, l, 64);
	assert_int_equal(n, 3);
	assert_int_equal(json_object_size(l[2]), 1);
	assert_string_equal(jstr(l[2], "error"),
	    "injected error after 2 tokens (error_after)");
	for (i = 0; i < n; i++)
		json_decref(l[i]);
	assert_int_equal(state_lookup(fs.srv.state, request_id(&r), &rec),
	    TS_OK);
	assert_int_equal(rec.status, STATE_ERROR);
	assert_int_equal(rec.generated, 2);
	fake_close(&fc);
	server_down(&fs);
}

/* A client that hangs up after 2 tokens: its generation is cancelled. */
static void
test_client_gone(void **unused)
{
	static const char body[] = "{\"model\":\"tokstream-sim\",\"prompt\":"
	    "\"x\",\"prefill_ms\":100,\"options\":{\"num_predict\":50}}";
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct state_record rec;

	(void)unused;
	server_up(&fs);
	fake_open(&fc, &fs, "POST", "/api/generate", body);
	fc.hup_at = clock_ns + 125 * MS;
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(state_lookup(fs.srv.state, request_id(&r), &rec),
	    TS_OK);
	assert_int_equal(rec.status, STATE_CANCELLED);
	assert_true(rec.generated <= 4);
	fake_close(&fc);
	server_down(&fs);
}

/* Refusals in Ollama's shape, {"error"} alone, with Ollama's words. */
static void
test_refusals(void **unused)
{
	static const struct {
		const char *method, *uri, *body;
		int status;
		const char *error;   /* the whole message, or a prefix */
	} cases[] = {
		{ "POST", "/api/chat", "{\"model\":\"llama3.2\"}", 404,
		    "model \"llama3.2\" not found, try pulling it first" },
		{ "POST", "/api/generate", "{\"prompt\":\"x\"}", 400,
		    "model is required" },
		{ "POST", "/api/chat", "{", 400, "invalid JSON" },
		{ "POST", "/api/show", "{\"model\":\"x\"}", 404,
		    "model \"x\" not found" },
		{ "GET", "/api/chat", NULL, 405, "GET /api/chat is not "
		    "allowed" },
		{ "GET", "/api/embed", NULL, 404, "no endpoint at /api/embed" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		json_t *o;

		server_up(&fs);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri,
		    cases[k].body);
		exchange(&fs, &fc, &r);
		if (r.status != cases[k].status)
			fail_msg("case %zu: status %d", k, r.status);
		o = body_json(&r);
		assert_int_equal(json_object_size(o), 1);
		if (strncmp(jstr(o, "error"), cases[k].error,
		    strlen(cases[k].error)) != 0)
			fail_msg("case %zu: %s", k, jstr(o, "error"));
		json_decref(o);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* The model endpoints: the served name with ":latest". */
static void
test_models(void **unused)
{
	static const char *const uris[] = { "/api/tags", "/api/ps",
	    "/api/version" };
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(uris); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		json_t *o;

		server_up(&fs);
		fake_open(&fc, &fs, "GET", uris[k], NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		o = body_json(&r);
		if (k < 2)
			assert_string_equal(jstr(json_array_get(
			    json_object_get(o, "models"), 0), "name"),
			    "tokstream-sim:latest");
		else
			assert_true(strlen(jstr(o, "version")) > 0);
		json_decref(o);
		fake_close(&fc);
		server_down(&fs);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_lines_and_durations),
		cmocka_unit_test(test_answer_matches_stream),
		cmocka_unit_test(test_error_after_commit),
		cmocka_unit_test(test_client_gone),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_models),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
