/*
 * test_handlers_messages.c - Anthropic's Messages API handler
 * (src/handlers/messages.c) through route() over the fake connection
 * (handlers_fake.h), on the synthetic clock: a Message and the same
 * request streamed (the events' order, the text joined, the usage), the
 * thinking block before the text with min_tokens keeping EOS out of it,
 * ping events while a prefill keeps the stream silent, count_tokens
 * against usage, errors in Anthropic's shape, an injected error after
 * the 200, and a client that leaves mid-stream.
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

#include "proto/resume.h"

#include "handlers_fake.h"

/* A body of one user message `text`, max_tokens, and the JSON members
 * `extra` (",..." or ""); caller frees. */
static char *
msg_body(const char *text, int max_tokens, const char *extra)
{
	char *b = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&b, &n);

	fprintf(f, "{\"model\":\"tokstream-sim\",\"max_tokens\":%d,"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]%s}",
	    max_tokens, text, extra);
	fclose(f);
	return b;
}

/* POSTs body to path on fs and fills r (fc must be closed). */
static void
post(struct fake_server *fs, struct fake_conn *fc, const char *path,
    const char *body, struct response *r)
{
	fake_open(fc, fs, "POST", path, body);
	exchange(fs, fc, r);
}

/* Fails unless r is an Anthropic error of `status` and `type`. */
static void
assert_anthropic_error(const struct response *r, int status,
    const char *type)
{
	json_t *o;

	if (r->status != status)
		fail_msg("%d (wanted %d): %.*s", r->status, status,
		    (int)r->body_len, r->body);
	o = body_json(r);
	assert_string_equal(jstr(o, "type"), "error");
	assert_string_equal(jstr(o, "error.type"), type);
	assert_true(strlen(jstr(o, "error.message")) > 0);
	assert_true(json_is_null(json_object_get(o, "request_id")));
	json_decref(o);
}

/* The events of a stream: their types in order into types (a space
 * after each), the text and thinking deltas joined. */
struct streamed {
	char types[8192];
	struct ts_buf text, thinking;
	char signature[80];
	char stop_reason[32];
	long output_tokens, thinking_tokens;
	size_t pings;
	size_t ids;                   /* events with an SSE id */
};

/* Fails unless an event with an SSE id is a token's delta (text,
 * thinking or input_json, never signature_delta) or message_stop, and
 * its id is a resume id of a token or the "end" one. */
static void
assert_id_placed(const struct sse_event *e, json_t *o)
{
	struct resume_id rid;
	const char *why;

	assert_int_equal(resume_id_parse(e->id, strlen(e->id), &rid, &why),
	    TS_OK);
	if (strcmp(jstr(o, "type"), "message_stop") == 0) {
		assert_true(rid.index == RESUME_INDEX_END);
		return;
	}
	assert_string_equal(jstr(o, "type"), "content_block_delta");
	assert_string_not_equal(jstr(o, "delta.type"), "signature_delta");
	assert_true(rid.index != RESUME_INDEX_END);
}

static void
streamed_parse(const struct response *r, struct streamed *s)
{
	struct sse *ev = sse_parse(r->body, r->body_len);
	size_t i;

	memset(s, 0, sizeof(*s));
	ts_buf_init(&s->text, 1u << 20);
	ts_buf_init(&s->thinking, 1u << 20);
	for (i = 0; i < ev->n; i++) {
		json_t *o, *d;
		const char *t;

		assert_int_equal(ev->ev[i].kind, EV_DATA);
		o = json_loads(ev->ev[i].data, 0, NULL);
		assert_non_null(o);
		if (ev->ev[i].has_id) {
			assert_id_placed(&ev->ev[i], o);
			s->ids++;
		}
		t = jstr(o, "type");
		/* each event's name is its data's type */
		assert_string_equal(ev->ev[i].type, t);
		if (strcmp(t, "ping") == 0) {
			s->pings++;
			json_decref(o);
			continue;
		}
		strcat(s->types, t);
		strcat(s->types, " ");
		d = json_object_get(o, "delta");
		if (strcmp(t, "content_block_delta") == 0) {
			const char *dt = jstr(o, "delta.type");

			if (strcmp(dt, "text_delta") == 0)
				ts_buf_append(&s->text, jstr(o, "delta.text"),
				    strlen(jstr(o, "delta.text")));
			else if (strcmp(dt, "thinking_delta") == 0)
				ts_buf_append(&s->thinking,
				    jstr(o, "delta.thinking"),
				    strlen(jstr(o, "delta.thinking")));
			else if (strcmp(dt, "signature_delta") == 0)
				snprintf(s->signature, sizeof(s->signature),
				    "%s", jstr(o, "delta.signature"));
		} else if (strcmp(t, "message_delta") == 0) {
			snprintf(s->stop_reason, sizeof(s->stop_reason), "%s",
			    json_string_value(json_object_get(d,
			    "stop_reason")));
			s->output_tokens = (long)json_integer_value(
			    json_object_get(json_object_get(o, "usage"),
			    "output_tokens"));
			s->thinking_tokens = (long)json_integer_value(
			    json_object_get(json_object_get(json_object_get(o,
			    "usage"), "output_tokens_details"),
			    "thinking_tokens"));
		}
		json_decref(o);
	}
	sse_free(ev);
}

static void
streamed_free(struct streamed *s)
{
	ts_buf_free(&s->text);
	ts_buf_free(&s->thinking);
}

/* A Message, then the same request streamed: one text block, the same
 * text, the same stop_reason and usage; the state record's tokens. */
static void
test_message_and_stream(void **state)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct streamed s;
	struct state_record rec;
	char *body = msg_body("hello", 24, "");
	char *sbody = msg_body("hello", 24, ",\"stream\":true");
	char text[4096];
	json_t *o;
	long out;

	(void)state;
	server_up(&fs);
	post(&fs, &fc, "/v1/messages", body, &r);
	assert_int_equal(r.status, 200);
	assert_header(&r, "Content-Type", "application/json");
	o = body_json(&r);
	assert_string_equal(jstr(o, "type"), "message");
	assert_string_equal(jstr(o, "role"), "assistant");
	assert_true(strncmp(jstr(o, "id"), "msg_", 4) == 0);
	assert_int_equal(json_array_size(json_object_get(o, "content")), 1);
	assert_string_equal(jstr(json_array_get(json_object_get(o, "content"),
	    0), "type"), "text");
	snprintf(text, sizeof(text), "%s", jstr(json_array_get(
	    json_object_get(o, "content"), 0), "text"));
	out = (long)json_integer_value(json_object_get(json_object_get(o,
	    "usage"), "output_tokens"));
	assert_true(out > 0 && out <= 24);
	assert_string_equal(jstr(o, "stop_reason"), out == 24 ? "max_tokens" :
	    "end_turn");
	assert_int_equal(state_lookup(fs.srv.state, request_id(&r), &rec),
	    TS_OK);
	assert_int_equal(rec.generated, out);
	json_decref(o);
	fake_close(&fc);

	post(&fs, &fc, "/v1/messages", sbody, &r);
	assert_int_equal(r.status, 200);
	assert_header(&r, "Content-Type", "text/event-stream; charset=utf-8");
	streamed_parse(&r, &s);
	assert_true(strncmp(s.types, "message_start content_block_start "
	    "content_block_delta ", 54) == 0);
	assert_non_null(strstr(s.types, "content_block_stop message_delta "
	    "message_stop "));
	assert_string_equal(s.text.p, text);
	assert_int_equal(s.output_tokens, out);
	assert_string_equal(s.stop_reason, out == 24 ? "max_tokens" :
	    "end_turn");
	streamed_free(&s);
	fake_close(&fc);
	server_down(&fs);
	free(body);
	free(sbody);
}

/* Thinking: budget_tokens of the first tokens are a thinking block, its
 * signature last, then the text; min_tokens keeps EOS out of them, for
 * every prompt; stream and not agree. */
static void
test_thinking(void **state)
{
	static const char *const prompts[] = { "a", "b.", "hi", "why?",
	    "ok", "tell me" };
	size_t k;

	(void)state;
	for (k = 0; k < NELEM(prompts); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct streamed s;
		const char *think = ",\"thinking\":{\"type\":\"enabled\","
		    "\"budget_tokens\":40}";
		char extra[128];
		char *body = msg_body(prompts[k], 48, think), *sbody;
		json_t *o, *c;

		snprintf(extra, sizeof(extra), "%s,\"stream\":true", think);
		sbody = msg_body(prompts[k], 48, extra);
		server_up(&fs);
		post(&fs, &fc, "/v1/messages", body, &r);
		assert_int_equal(r.status, 200);
		o = body_json(&r);
		c = json_object_get(o, "content");
		assert_int_equal(json_array_size(c), 2);
		assert_string_equal(jstr(json_array_get(c, 0), "type"),
		    "thinking");
		assert_int_equal(strlen(jstr(json_array_get(c, 0),
		    "signature")), 64);
		assert_string_equal(jstr(json_array_get(c, 1), "type"), "text");
		/* 40 thinking tokens, then at least one of text */
		assert_true(json_integer_value(json_object_get(json_object_get(
		    o, "usage"), "output_tokens")) > 40);
		fake_close(&fc);

		post(&fs, &fc, "/v1/messages", sbody, &r);
		streamed_parse(&r, &s);
		assert_true(strncmp(s.types, "message_start "
		    "content_block_start content_block_delta ", 54) == 0);
		assert_string_equal(s.thinking.p, jstr(json_array_get(c, 0),
		    "thinking"));
		assert_string_equal(s.signature, jstr(json_array_get(c, 0),
		    "signature"));
		assert_string_equal(s.text.p, jstr(json_array_get(c, 1),
		    "text"));
		assert_int_equal(s.thinking_tokens, 40);
		streamed_free(&s);
		json_decref(o);
		fake_close(&fc);
		server_down(&fs);
		free(body);
		free(sbody);
	}
}

/* A prefill of 3.5 s with the default 1 s keep-alive: ping events before
 * the first block (the synthetic clock: exactly 3). */
static void
test_pings(void **state)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct streamed s;
	char *body = msg_body("hi", 2, ",\"stream\":true,\"prefill_ms\":3500");

	(void)state;
	server_up(&fs);
	post(&fs, &fc, "/v1/messages", body, &r);
	assert_int_equal(r.status, 200);
	streamed_parse(&r, &s);
	assert_int_equal(s.pings, 3);
	assert_true(strncmp(s.types, "message_start content_block_start ",
	    34) == 0);
	streamed_free(&s);
	fake_close(&fc);
	server_down(&fs);
	free(body);
}

/* count_tokens gives what usage counts for the same request. */
static void
test_count_tokens(void **state)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	char *body = msg_body("count me", 3, ",\"system\":\"brief\"");
	const char *count = "{\"model\":\"tokstream-sim\",\"system\":\"brief\","
	    "\"messages\":[{\"role\":\"user\",\"content\":\"count me\"}]}";
	json_int_t n;
	json_t *o, *u;

	(void)state;
	server_up(&fs);
	post(&fs, &fc, "/v1/messages/count_tokens", count, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_int_equal(json_object_size(o), 1);
	n = json_integer_value(json_object_get(o, "input_tokens"));
	assert_true(n > 0);
	json_decref(o);
	fake_close(&fc);
	post(&fs, &fc, "/v1/messages", body, &r);
	o = body_json(&r);
	u = json_object_get(o, "usage");
	assert_int_equal(json_integer_value(json_object_get(u,
	    "input_tokens")) + json_integer_value(json_object_get(u,
	    "cache_read_input_tokens")), n);
	json_decref(o);
	fake_close(&fc);
	server_down(&fs);
	free(body);
}

/* Errors in Anthropic's shape, the router's too; an injected failure
 * before the 200 and one after it. */
static void
test_errors(void **state)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct streamed s;
	char *ok = msg_body("hi", 8, ",\"stream\":true");
	char *nomax = strdup("{\"model\":\"tokstream-sim\",\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}]}");
	char retry[16];
	char *other = strdup("{\"model\":\"claude\",\"max_tokens\":3,"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");

	(void)state;
	server_defaults(&fs);
	fs.opt.allow_failure_header = 1;
	server_start(&fs);
	post(&fs, &fc, "/v1/messages", nomax, &r);
	assert_anthropic_error(&r, 400, "invalid_request_error");
	fake_close(&fc);
	post(&fs, &fc, "/v1/messages", other, &r);
	assert_anthropic_error(&r, 404, "not_found_error");
	fake_close(&fc);
	fake_open(&fc, &fs, "GET", "/v1/messages", NULL);
	exchange(&fs, &fc, &r);
	assert_anthropic_error(&r, 405, "invalid_request_error");
	fake_close(&fc);
	fake_open(&fc, &fs, "POST", "/v1/messages/nope", "{}");
	exchange(&fs, &fc, &r);
	assert_anthropic_error(&r, 404, "not_found_error");
	fake_close(&fc);

	fake_open(&fc, &fs, "POST", "/v1/messages", ok);
	fake_set(&fc, "HTTP_X_TOKSTREAM_FAILURE", "overloaded");
	exchange(&fs, &fc, &r);
	assert_anthropic_error(&r, 529, "overloaded_error");
	fake_close(&fc);
	fake_open(&fc, &fs, "POST", "/v1/messages", ok);
	fake_set(&fc, "HTTP_X_TOKSTREAM_FAILURE", "rate_limit");
	exchange(&fs, &fc, &r);
	assert_anthropic_error(&r, 429, "rate_limit_error");
	assert_true(header(&r, "Retry-After", retry, sizeof(retry)));
	assert_int_equal(atoi(retry), (int)fs.opt.inject.retry_after_s);
	fake_close(&fc);

	/* after the 200: an error event, no message_stop */
	fake_open(&fc, &fs, "POST", "/v1/messages", ok);
	fake_set(&fc, "HTTP_X_TOKSTREAM_FAILURE", "midstream_error; after=2");
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	streamed_parse(&r, &s);
	assert_string_equal(s.types, "message_start content_block_start "
	    "content_block_delta content_block_delta error ");
	streamed_free(&s);
	fake_close(&fc);
	server_down(&fs);
	free(ok);
	free(nomax);
	free(other);
}

/* The key: x-api-key or Bearer; neither is a 401 authentication_error. */
static void
test_api_key(void **state)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	char *body = msg_body("hi", 2, "");

	(void)state;
	server_defaults(&fs);
	fs.opt.api_key = "sekret";
	server_start(&fs);
	post(&fs, &fc, "/v1/messages", body, &r);
	assert_anthropic_error(&r, 401, "authentication_error");
	fake_close(&fc);
	fake_open(&fc, &fs, "POST", "/v1/messages", body);
	fake_set(&fc, "HTTP_X_API_KEY", "wrong");
	exchange(&fs, &fc, &r);
	assert_anthropic_error(&r, 401, "authentication_error");
	fake_close(&fc);
	fake_open(&fc, &fs, "POST", "/v1/messages", body);
	fake_set(&fc, "HTTP_X_API_KEY", "sekret");
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	fake_close(&fc);
	fake_open(&fc, &fs, "POST", "/v1/messages", body);
	fake_set(&fc, "HTTP_AUTHORIZATION", "Bearer sekret");
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	fake_close(&fc);
	server_down(&fs);
	free(body);
}

/* A client that leaves mid-stream: its sequence is cancelled, not run
 * to max_tokens. */
static void
test_client_leaves(void **state)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct state_record rec;
	char *body = msg_body("leave", 2000, ",\"stream\":true,\"prefill_ms\":0,"
	    "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1999}");

	(void)state;
	server_up(&fs);
	fake_open(&fc, &fs, "POST", "/v1/messages", body);
	fc.hup_at = clock_ns + 200 * MS;
	exchange(&fs, &fc, &r);
	assert_int_equal(state_lookup(fs.srv.state, request_id(&r), &rec),
	    TS_OK);
	assert_int_equal(rec.status, STATE_CANCELLED);
	assert_true(rec.generated < 100);
	fake_close(&fc);
	server_down(&fs);
	free(body);
}

/* Resume (docs/API.md "Resuming an Anthropic stream"): the same body
 * POSTed with the id of any delta streams exactly the events that
 * followed it (thinking, the signature, the text block, the end; after
 * the last token only the end's), with no message_start; an "end" id is
 * a 204; an id of another body, one whose index was changed and a
 * malformed one a 400. */
static void
test_resume(void **state)
{
	static const char *const extras[] = {
		",\"stream\":true,\"thinking\":{\"type\":\"enabled\","
		    "\"budget_tokens\":6}",
		",\"stream\":true,\"stop_sequences\":[\"the\"]",
		",\"stream\":true",
	};
	size_t k;

	(void)state;
	for (k = 0; k < NELEM(extras); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct sse *whole;
		char *body = msg_body("tell me", 12, extras[k]);
		char *other = msg_body("tell me", 13, extras[k]);
		size_t i, resumed = 0;
		struct streamed st;

		server_up(&fs);
		post(&fs, &fc, "/v1/messages", body, &r);
		assert_int_equal(r.status, 200);
		streamed_parse(&r, &st);
		assert_true(st.ids >= 3);
		streamed_free(&st);
		whole = sse_parse(r.body, r.body_len);
		fake_close(&fc);
		for (i = 0; i < whole->n; i++) {
			const struct sse_event *e = &whole->ev[i];
			struct resume_id rid;
			const char *why;
			struct sse *rest;
			size_t j;

			if (!e->has_id)
				continue;
			assert_int_equal(resume_id_parse(e->id, strlen(e->id),
			    &rid, &why), TS_OK);
			fake_open(&fc, &fs, "POST", "/v1/messages", body);
			fake_set(&fc, "HTTP_LAST_EVENT_ID", e->id);
			exchange(&fs, &fc, &r);
			if (rid.index == RESUME_INDEX_END) {
				assert_int_equal(r.status, 204);
				assert_int_equal(r.body_len, 0);
				fake_close(&fc);
				continue;
			}
			assert_int_equal(r.status, 200);
			rest = sse_parse(r.body, r.body_len);
			/* the events after e, byte for byte but the ids'
			 * stream part; pings aside */
			for (j = 0; j < rest->n && strcmp(rest->ev[j].type,
			    "ping") == 0; j++)
				;
			assert_int_equal(rest->n - j, whole->n - i - 1);
			for (; j < rest->n; j++) {
				const struct sse_event *a = &whole->ev[i + 1 +
				    (j - (rest->n - (whole->n - i - 1)))];
				const struct sse_event *b = &rest->ev[j];

				assert_string_equal(a->type, b->type);
				if (strcmp(a->type, "message_delta") != 0)
					assert_string_equal(a->data, b->data);
				assert_int_equal(a->has_id, b->has_id);
				if (a->has_id)
					assert_string_equal(strchr(a->id, '-'),
					    strchr(b->id, '-'));
			}
			/* usage counts the whole message's tokens (the
			 * input's split by the prefix cache may differ) */
			{
				json_t *u0 = json_loads(whole->ev[whole->n -
				    2].data, 0, NULL);
				json_t *u1 = json_loads(rest->ev[rest->n -
				    2].data, 0, NULL);

				assert_string_equal(jstr(u0,
				    "delta.stop_reason"), jstr(u1,
				    "delta.stop_reason"));
				assert_int_equal(json_integer_value(
				    json_object_get(json_object_get(u0,
				    "usage"), "output_tokens")),
				    json_integer_value(json_object_get(
				    json_object_get(u1, "usage"),
				    "output_tokens")));
				json_decref(u0);
				json_decref(u1);
			}
			sse_free(rest);
			resumed++;
			fake_close(&fc);
		}
		assert_true(resumed >= 2);
		/* another body's id, and one that is no id */
		for (i = 0; i < whole->n && !whole->ev[i].has_id; i++)
			;
		fake_open(&fc, &fs, "POST", "/v1/messages", other);
		fake_set(&fc, "HTTP_LAST_EVENT_ID", whole->ev[i].id);
		exchange(&fs, &fc, &r);
		assert_anthropic_error(&r, 400, "invalid_request_error");
		fake_close(&fc);
		fake_open(&fc, &fs, "POST", "/v1/messages", body);
		fake_set(&fc, "HTTP_LAST_EVENT_ID", "1-2-3");
		exchange(&fs, &fc, &r);
		assert_anthropic_error(&r, 400, "invalid_request_error");
		fake_close(&fc);
		/* an id the stream sent with its index changed (the next
		 * token, or one past the answer's end) is not this stream's */
		{
			struct resume_id rid;
			const char *why;
			char forged[RESUME_ID_MAX + 1];
			static const uint64_t moved[] = { 1, 40 };
			size_t m;

			assert_int_equal(resume_id_parse(whole->ev[i].id,
			    strlen(whole->ev[i].id), &rid, &why), TS_OK);
			for (m = 0; m < NELEM(moved); m++) {
				struct resume_id f = rid;

				f.index = rid.index + moved[m];
				assert_true(resume_id_format(forged,
				    sizeof(forged), &f) > 0);
				fake_open(&fc, &fs, "POST", "/v1/messages",
				    body);
				fake_set(&fc, "HTTP_LAST_EVENT_ID", forged);
				exchange(&fs, &fc, &r);
				assert_anthropic_error(&r, 400,
				    "invalid_request_error");
				fake_close(&fc);
			}
		}
		sse_free(whole);
		server_down(&fs);
		free(body);
		free(other);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_message_and_stream),
		cmocka_unit_test(test_thinking),
		cmocka_unit_test(test_pings),
		cmocka_unit_test(test_count_tokens),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_api_key),
		cmocka_unit_test(test_client_leaves),
		cmocka_unit_test(test_resume),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
