/*
 * test_handlers_v1.c - the /v1 handlers through route() over the fake
 * connection (handlers_fake.h): chat and text completions and the
 * Responses API, streamed and whole (each answer parsed and checked
 * against OpenAI's shapes), stop strings, injected errors, a client that
 * leaves before the end, refused requests, an error after the 200 was
 * committed, and /v1/models.
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

/* ---- what a /v1 answer said --------------------------------------------- */

/* What a /v1 answer said, streamed or not. */
struct v1_result {
	uint64_t id;                 /* X-Request-Id */
	struct ts_buf text;          /* the content, concatenated */
	size_t nchunks;              /* content chunks (streamed) */
	size_t chunk_end[MAX_EVENTS];  /* text offset after each chunk */
	char finish[16];
	long completion_tokens;      /* -1: no usage */
	long prompt_tokens;
	size_t keepalives;
};

static void
v1_result_free(struct v1_result *res)
{
	ts_buf_free(&res->text);
}

/* A whole Responses API response object's text, finish ("stop" for
 * status completed, "length" for incomplete) and usage into res, its
 * fields checked (OpenAI API reference, the response object). */
static void
responses_object(json_t *o, uint64_t id, struct v1_result *res)
{
	char want[48];
	json_t *out, *item, *part, *usage;
	const char *status = jstr(o, "status");

	snprintf(want, sizeof(want), "resp_%llu", (unsigned long long)id);
	assert_string_equal(jstr(o, "id"), want);
	assert_string_equal(jstr(o, "object"), "response");
	assert_string_equal(jstr(o, "model"), "tokstream-sim");
	assert_true(json_is_integer(json_object_get(o, "created_at")));
	assert_true(json_is_null(json_object_get(o, "error")));
	out = json_object_get(o, "output");
	assert_int_equal(json_array_size(out), 1);
	item = json_array_get(out, 0);
	snprintf(want, sizeof(want), "msg_%llu", (unsigned long long)id);
	assert_string_equal(jstr(item, "id"), want);
	assert_string_equal(jstr(item, "type"), "message");
	assert_string_equal(jstr(item, "role"), "assistant");
	assert_string_equal(jstr(item, "status"), status);
	assert_int_equal(json_array_size(json_object_get(item, "content")),
	    1);
	part = json_array_get(json_object_get(item, "content"), 0);
	assert_string_equal(jstr(part, "type"), "output_text");
	assert_int_equal(json_array_size(json_object_get(part,
	    "annotations")), 0);
	ts_buf_append(&res->text, jstr(part, "text"),
	    strlen(jstr(part, "text")));
	if (strcmp(status, "completed") == 0) {
		assert_true(json_is_null(json_object_get(o,
		    "incomplete_details")));
		snprintf(res->finish, sizeof(res->finish), "stop");
	} else {
		assert_string_equal(status, "incomplete");
		assert_string_equal(jstr(o, "incomplete_details.reason"),
		    "max_output_tokens");
		snprintf(res->finish, sizeof(res->finish), "length");
	}
	usage = json_object_get(o, "usage");
	res->completion_tokens = (long)json_integer_value(json_object_get(
	    usage, "output_tokens"));
	res->prompt_tokens = (long)json_integer_value(json_object_get(usage,
	    "input_tokens"));
	assert_int_equal(json_integer_value(json_object_get(usage,
	    "total_tokens")), res->completion_tokens + res->prompt_tokens);
}

/* A streamed Responses API answer: named events in OpenAI's order
 * (created, in_progress, output_item.added, content_part.added, the
 * deltas, output_text.done, content_part.done, output_item.done,
 * completed or incomplete), sequence numbers 0, 1, ..., the event name
 * equal to the data's "type", the done events repeating the text, no
 * [DONE]. */
static void
responses_parse_stream(const struct response *r, struct v1_result *res)
{
	static const char *const before[] = { "response.created",
	    "response.in_progress", "response.output_item.added",
	    "response.content_part.added" };
	static const char *const after[] = { "response.output_text.done",
	    "response.content_part.done", "response.output_item.done" };
	struct sse *s = sse_parse(r->body, r->body_len);
	size_t i, seq = 0, nb = 0, na = 0;
	int last = 0;

	for (i = 0; i < s->n; i++) {
		const struct sse_event *e = &s->ev[i];
		json_t *o;

		if (e->kind == EV_COMMENT) {
			assert_int_equal(seq, 0);
			res->keepalives++;
			continue;
		}
		assert_int_equal(e->kind, EV_DATA);
		assert_false(last);
		assert_false(e->has_id);
		o = json_loadb(e->data, e->data_len, 0, NULL);
		if (o == NULL)
			fail_msg("event is not JSON: %s", e->data);
		assert_string_equal(e->type, jstr(o, "type"));
		assert_int_equal(json_integer_value(json_object_get(o,
		    "sequence_number")), seq++);
		if (nb < NELEM(before)) {
			assert_string_equal(e->type, before[nb++]);
			if (nb <= 2) {
				assert_string_equal(jstr(o, "response.status"),
				    "in_progress");
				assert_true(json_is_null(json_object_get(
				    json_object_get(o, "response"), "usage")));
			}
		} else if (strcmp(e->type, "response.output_text.delta") ==
		    0) {
			assert_int_equal(na, 0);
			assert_int_equal(json_integer_value(json_object_get(o,
			    "output_index")), 0);
			assert_true(strlen(jstr(o, "delta")) > 0);
			ts_buf_append(&res->text, jstr(o, "delta"),
			    strlen(jstr(o, "delta")));
			assert_true(res->nchunks < MAX_EVENTS);
			res->chunk_end[res->nchunks++] = res->text.len;
		} else if (na < NELEM(after)) {
			const char *t = na == 0 ? jstr(o, "text") : na == 1 ?
			    jstr(o, "part.text") : NULL;

			assert_string_equal(e->type, after[na++]);
			if (t != NULL) {
				assert_int_equal(strlen(t), res->text.len);
				assert_memory_equal(t, res->text.p,
				    res->text.len);
			}
		} else {
			struct v1_result whole;

			assert_true(strcmp(e->type, "response.completed") ==
			    0 || strcmp(e->type, "response.incomplete") == 0);
			memset(&whole, 0, sizeof(whole));
			ts_buf_init(&whole.text, 1u << 20);
			responses_object(json_object_get(o, "response"),
			    res->id, &whole);
			assert_int_equal(whole.text.len, res->text.len);
			assert_memory_equal(whole.text.p, res->text.p,
			    res->text.len);
			assert_string_equal(e->type, strcmp(whole.finish,
			    "stop") == 0 ? "response.completed" :
			    "response.incomplete");
			memcpy(res->finish, whole.finish, sizeof(res->finish));
			res->completion_tokens = whole.completion_tokens;
			res->prompt_tokens = whole.prompt_tokens;
			ts_buf_free(&whole.text);
			last = 1;
		}
		json_decref(o);
	}
	assert_true(last);
	sse_free(s);
}

/* A streamed /v1 answer's events (OpenAI API reference, the chunk
 * object): content chunks, the first with role assistant (chat), one
 * finish chunk, the usage chunk when asked for, then [DONE] last. */
static void
v1_parse_stream(const struct v1_req *q, const struct response *r,
    struct v1_result *res)
{
	struct sse *s;
	const char *object = q->kind == OPENAI_CHAT ?
	    "chat.completion.chunk" : "text_completion";
	char want_id[48];
	size_t i, data_events = 0;
	int finished = 0, usage_seen = 0, done = 0;

	if (q->kind == OPENAI_RESPONSES) {
		responses_parse_stream(r, res);
		return;
	}
	s = sse_parse(r->body, r->body_len);

	snprintf(want_id, sizeof(want_id), "%s-%llu", q->kind == OPENAI_CHAT ?
	    "chatcmpl" : "cmpl", (unsigned long long)res->id);
	for (i = 0; i < s->n; i++) {
		const struct sse_event *e = &s->ev[i];
		json_t *o, *choices, *c, *fr, *usage;
		json_error_t jerr;

		if (e->kind == EV_COMMENT) {
			assert_int_equal(data_events, 0);
			res->keepalives++;
			continue;
		}
		assert_int_equal(e->kind, EV_DATA);
		assert_false(e->has_id);
		assert_false(done);
		data_events++;
		if (strcmp(e->data, "[DONE]") == 0) {
			done = 1;
			continue;
		}
		o = json_loadb(e->data, e->data_len, 0, &jerr);
		if (o == NULL)
			fail_msg("chunk is not JSON: %s", e->data);
		assert_string_equal(jstr(o, "object"), object);
		assert_string_equal(jstr(o, "id"), want_id);
		assert_string_equal(jstr(o, "model"), "tokstream-sim");
		usage = json_object_get(o, "usage");
		choices = json_object_get(o, "choices");
		assert_true(json_is_array(choices));
		if (json_array_size(choices) == 0) {
			/* the usage chunk: after the finish chunk */
			assert_true(q->include_usage);
			assert_true(finished);
			assert_false(usage_seen);
			usage_seen = 1;
			res->completion_tokens = (long)json_integer_value(
			    json_object_get(usage, "completion_tokens"));
			res->prompt_tokens = (long)json_integer_value(
			    json_object_get(usage, "prompt_tokens"));
			assert_int_equal(json_integer_value(json_object_get(
			    usage, "total_tokens")), res->completion_tokens +
			    res->prompt_tokens);
			json_decref(o);
			continue;
		}
		/* every other chunk: usage null with include_usage, else
		 * no usage member at all */
		if (q->include_usage)
			assert_true(json_is_null(usage));
		else
			assert_null(usage);
		assert_int_equal(json_array_size(choices), 1);
		assert_false(finished);
		c = json_array_get(choices, 0);
		fr = json_object_get(c, "finish_reason");
		if (q->kind == OPENAI_CHAT) {
			json_t *d = json_object_get(c, "delta");
			json_t *role = json_object_get(d, "role");
			json_t *content = json_object_get(d, "content");

			assert_true(json_is_object(d));
			/* the role comes with the stream's first chunk only */
			if (i == res->keepalives)
				assert_string_equal(json_string_value(role),
				    "assistant");
			else
				assert_null(role);
			if (content != NULL)
				ts_buf_append(&res->text,
				    json_string_value(content),
				    json_string_length(content));
		} else {
			json_t *t = json_object_get(c, "text");

			ts_buf_append(&res->text, json_string_value(t),
			    json_string_length(t));
		}
		if (json_is_string(fr)) {
			finished = 1;
			snprintf(res->finish, sizeof(res->finish), "%s",
			    json_string_value(fr));
		} else {
			assert_true(json_is_null(fr));
			assert_true(res->nchunks < MAX_EVENTS);
			res->chunk_end[res->nchunks++] = res->text.len;
		}
		json_decref(o);
	}
	assert_true(finished);
	assert_int_equal(usage_seen, q->include_usage);
	assert_true(done);
	sse_free(s);
}

/* A whole /v1 answer: one chat.completion or text_completion object. */
static void
v1_parse_answer(const struct v1_req *q, const struct response *r,
    struct v1_result *res)
{
	json_t *o = body_json(r), *c, *usage;
	const char *text;
	char want_id[48];

	if (q->kind == OPENAI_RESPONSES) {
		responses_object(o, res->id, res);
		json_decref(o);
		return;
	}

	snprintf(want_id, sizeof(want_id), "%s-%llu", q->kind == OPENAI_CHAT ?
	    "chatcmpl" : "cmpl", (unsigned long long)res->id);
	assert_string_equal(jstr(o, "id"), want_id);
	assert_string_equal(jstr(o, "object"), q->kind == OPENAI_CHAT ?
	    "chat.completion" : "text_completion");
	assert_int_equal(json_array_size(json_object_get(o, "choices")), 1);
	c = json_array_get(json_object_get(o, "choices"), 0);
	if (q->kind == OPENAI_CHAT) {
		json_t *m = json_object_get(c, "message");

		assert_string_equal(jstr(c, "message.role"), "assistant");
		/* required by OpenAI's schema, null unless refused */
		assert_non_null(json_object_get(m, "refusal"));
		assert_true(json_is_null(json_object_get(m, "refusal")));
		text = jstr(c, "message.content");
	} else {
		text = jstr(c, "text");
	}
	ts_buf_append(&res->text, text, strlen(text));
	snprintf(res->finish, sizeof(res->finish), "%s",
	    jstr(c, "finish_reason"));
	usage = json_object_get(o, "usage");
	res->completion_tokens = (long)json_integer_value(json_object_get(
	    usage, "completion_tokens"));
	res->prompt_tokens = (long)json_integer_value(json_object_get(usage,
	    "prompt_tokens"));
	json_decref(o);
}

/* Runs the /v1 request q on a fresh server and parses its answer. */
static void
v1_run(const struct v1_req *q, struct v1_result *res,
    struct state_record *rec)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	char *body = v1_body(q);

	memset(res, 0, sizeof(*res));
	ts_buf_init(&res->text, 1u << 20);
	res->completion_tokens = -1;
	server_up(&fs);
	fake_open(&fc, &fs, "POST", v1_uri(q->kind), body);
	exchange(&fs, &fc, &r);
	if (r.status != 200)
		fail_msg("%d: %.*s", r.status, (int)r.body_len, r.body);
	res->id = request_id(&r);
	assert_true(res->id > 0);
	if (q->stream) {
		assert_header(&r, "Content-Type",
		    "text/event-stream; charset=utf-8");
		v1_parse_stream(q, &r, res);
	} else {
		assert_header(&r, "Content-Type", "application/json");
		v1_parse_answer(q, &r, res);
	}
	assert_int_equal(state_lookup(fs.srv.state, res->id, rec), TS_OK);
	fake_close(&fc);
	server_down(&fs);
	free(body);
}

/* ---- /v1 ---------------------------------------------------------------- */

/* A streamed chat completion: chat.completion.chunk events, the first
 * with role assistant, then finish_reason and [DONE]; with
 * stream_options.include_usage a usage chunk whose completion_tokens is
 * what the engine generated. */
static void
test_chat_stream_chunks(void **unused)
{
	static const struct v1_req cases[] = {
		{ OPENAI_CHAT, "Tell me a story", 12, 1, 0, { NULL }, 0, -1 },
		{ OPENAI_CHAT, "Tell me a story", 12, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_CHAT, "one", 1, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_COMPLETIONS, "Once upon", 9, 1, 1, { NULL }, 0, -1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_result res;
		struct state_record rec;

		v1_run(&cases[k], &res, &rec);
		assert_string_equal(res.finish, "length");
		assert_true(res.nchunks >= 1);
		assert_true(res.text.len > 0);
		assert_int_equal(rec.kind, STATE_KIND_STREAM);
		assert_int_equal(rec.status, STATE_DONE);
		assert_int_equal(rec.generated, cases[k].max_tokens);
		if (cases[k].include_usage) {
			assert_int_equal(res.completion_tokens, rec.generated);
			assert_int_equal(res.prompt_tokens, rec.prompt_tokens);
		} else {
			assert_int_equal(res.completion_tokens, -1);
		}
		v1_result_free(&res);
	}
}

/* Not streamed: one object whose content is the streamed deltas
 * concatenated, with the same finish reason and token count. */
static void
test_v1_answer_matches_stream(void **unused)
{
	static const struct v1_req cases[] = {
		{ OPENAI_CHAT, "Tell me a story", 12, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_CHAT, "Write a poem about the sea", 80, 1, 1,
		    { NULL }, 0, -1 },
		{ OPENAI_COMPLETIONS, "Once upon", 30, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_COMPLETIONS, "x", 1, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_RESPONSES, "Tell me a story", 12, 1, 0, { NULL }, 0,
		    -1 },
		{ OPENAI_RESPONSES, "x", 1, 1, 0, { NULL }, 0, -1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_req q = cases[k];
		struct v1_result st, an;
		struct state_record rs, ra;

		v1_run(&q, &st, &rs);
		q.stream = 0;
		q.include_usage = 0;
		v1_run(&q, &an, &ra);
		assert_true(st.text.len > 0);
		assert_int_equal(an.text.len, st.text.len);
		assert_memory_equal(an.text.p, st.text.p, st.text.len);
		assert_string_equal(an.finish, st.finish);
		assert_int_equal(an.completion_tokens, st.completion_tokens);
		assert_int_equal(an.completion_tokens, q.max_tokens);
		assert_int_equal(ra.kind, STATE_KIND_GENERATE);
		v1_result_free(&st);
		v1_result_free(&an);
	}
}

/* The first chunk boundary from `from` on around which both chunks have
 * at least `side` ASCII bytes (no multi-byte character to split). */
static size_t
ascii_boundary(const struct v1_result *res, size_t from, size_t side)
{
	size_t i, j;

	for (i = from; i + 1 < res->nchunks; i++) {
		size_t start = i > 0 ? res->chunk_end[i - 1] : 0;
		size_t end = res->chunk_end[i + 1];
		int ok = res->chunk_end[i] - start >= side &&
		    end - res->chunk_end[i] >= side;

		for (j = res->chunk_end[i] - side; ok && j < res->chunk_end[i] +
		    side; j++)
			ok = (unsigned char)res->text.p[j] < 0x80;
		if (ok)
			return i;
	}
	fail_msg("no chunk boundary with ASCII around it");
	return 0;
}

/* A stop string (into stop, 5 bytes) taken from a streamed text past
 * its first chunks, whose first occurrence is where it was taken from:
 * the 4 ASCII bytes around a chunk boundary (spanning), or the first 3
 * of a chunk. Returns its offset in the text. */
static size_t
pick_stop(const struct v1_result *full, int spanning, char *stop)
{
	size_t b, off, len = spanning ? 4 : 3;

	for (b = 3;; b++) {
		b = ascii_boundary(full, b, spanning ? 2 : 3);
		off = spanning ? full->chunk_end[b] - 2 : full->chunk_end[b];
		memcpy(stop, full->text.p + off, len);
		stop[len] = '\0';
		if (strstr(full->text.p, stop) == full->text.p + off)
			return off;
	}
}

/*
 * Stop strings cut the text: the stopped text is the unstopped text's
 * prefix before the stop string's first occurrence, and finish_reason is
 * "stop". The stop string lies inside one chunk, spans two chunks, or is
 * the second of two stop strings (the first never occurs); streamed and
 * not.
 */
static void
test_v1_stop_strings(void **unused)
{
	enum where { INSIDE, SPANNING, SECOND_OF_TWO };
	static const struct {
		enum openai_kind kind;
		int stream;
		enum where where;
	} cases[] = {
		{ OPENAI_CHAT, 1, INSIDE },
		{ OPENAI_CHAT, 0, INSIDE },
		{ OPENAI_CHAT, 1, SPANNING },
		{ OPENAI_CHAT, 0, SPANNING },
		{ OPENAI_COMPLETIONS, 1, SPANNING },
		{ OPENAI_COMPLETIONS, 0, SECOND_OF_TWO },
		{ OPENAI_CHAT, 1, SECOND_OF_TWO },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_req q = { cases[k].kind, "Tell me about the weather "
		    "in the mountains", 60, 1, 1, { NULL }, 0, -1 };
		struct v1_result full, cut;
		struct state_record rec;
		char stop[16];
		const char *at;
		size_t off;

		v1_run(&q, &full, &rec);
		assert_string_equal(full.finish, "length");
		off = pick_stop(&full, cases[k].where == SPANNING, stop);
		at = full.text.p + off;
		q.stream = cases[k].stream;
		q.include_usage = cases[k].stream;
		q.stop[0] = stop;
		q.nstop = 1;
		if (cases[k].where == SECOND_OF_TWO) {
			q.stop[0] = "\x01never\x02";
			q.stop[1] = stop;
			q.nstop = 2;
		}
		v1_run(&q, &cut, &rec);
		assert_string_equal(cut.finish, "stop");
		assert_int_equal(cut.text.len, (size_t)(at - full.text.p));
		assert_memory_equal(cut.text.p, full.text.p, cut.text.len);
		assert_null(strstr(cut.text.p != NULL ? cut.text.p : "",
		    stop));
		/* generated up to the token that completed the stop */
		assert_true(cut.completion_tokens < full.completion_tokens);
		assert_int_equal(rec.generated, cut.completion_tokens);
		if (cases[k].stream)
			assert_true(cut.nchunks < full.nchunks);
		v1_result_free(&full);
		v1_result_free(&cut);
	}
}

/* An injected error on /v1 (the lab knob error_after): streamed, the
 * chunks before it, an error event in the OpenAI shape and [DONE];
 * not streamed, a 500 in the OpenAI shape. */
static void
test_v1_injected_error(void **unused)
{
	static const struct {
		enum openai_kind kind;
		int stream;
		int error_after;
	} cases[] = {
		{ OPENAI_CHAT, 1, 3 },
		{ OPENAI_COMPLETIONS, 1, 0 },
		{ OPENAI_CHAT, 0, 3 },
		{ OPENAI_COMPLETIONS, 0, 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_req q = { cases[k].kind, "fail", 10,
		    cases[k].stream, 0, { NULL }, 0, -1 };
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct state_record rec;
		char *body = v1_body(&q);
		json_t *o;

		o = json_loads(body, 0, NULL);
		json_object_set_new(o, "error_after",
		    json_integer(cases[k].error_after));
		free(body);
		body = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		server_up(&fs);
		fake_open(&fc, &fs, "POST", v1_uri(q.kind), body);
		exchange(&fs, &fc, &r);
		if (cases[k].stream) {
			struct sse *s = sse_parse(r.body, r.body_len);
			size_t i, chunks = 0;

			assert_int_equal(r.status, 200);
			assert_true(s->n >= 2);
			for (i = 0; i + 2 < s->n; i++) {
				o = json_loads(s->ev[i].data, 0, NULL);
				assert_non_null(json_object_get(o, "choices"));
				json_decref(o);
				chunks++;
			}
			/* one chunk per token (the sim's text is ASCII
			 * here or held: at most one per token) */
			assert_true(chunks <= (size_t)cases[k].error_after);
			o = json_loads(s->ev[s->n - 2].data, 0, NULL);
			assert_non_null(o);
			assert_string_equal(jstr(o, "error.code"),
			    "injected_error");
			assert_string_equal(jstr(o, "error.type"),
			    "server_error");
			assert_true(json_is_null(json_object_get(
			    json_object_get(o, "error"), "param")));
			json_decref(o);
			assert_string_equal(s->ev[s->n - 1].data, "[DONE]");
			sse_free(s);
		} else {
			assert_error(&r, 500, "server_error", "injected_error",
			    1);
		}
		assert_int_equal(state_lookup(fs.srv.state, request_id(&r),
		    &rec), TS_OK);
		assert_int_equal(rec.status, STATE_ERROR);
		assert_int_equal(rec.generated, cases[k].error_after);
		fake_close(&fc);
		server_down(&fs);
		free(body);
	}
}

/* Runs `method uri` with body on a fresh server whose client's writes
 * fail past fail_after bytes (SIZE_MAX: never). Returns the bytes that
 * reached the client; *rec is the request's record, status and reason
 * what /_debug/generated says of it. */
static size_t
run_until_gone(const char *method, const char *uri, const char *body,
    size_t fail_after, struct state_record *rec, char *status,
    char *reason)
{
	struct fake_server fs;
	struct fake_conn fc, dc;
	struct response r;
	char dbg[64];
	size_t len;
	json_t *o;

	server_up(&fs);
	fake_open(&fc, &fs, method, uri, body);
	fc.fail_after = fail_after;
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	len = fc.out.len;
	assert_int_equal(state_lookup(fs.srv.state, request_id(&r), rec),
	    TS_OK);
	snprintf(dbg, sizeof(dbg), "/_debug/generated?id=%llu",
	    (unsigned long long)request_id(&r));
	fake_open(&dc, &fs, "GET", dbg, NULL);
	exchange(&fs, &dc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	snprintf(status, 16, "%s", jstr(o, "status"));
	snprintf(reason, 16, "%s", jstr(o, "finish_reason"));
	json_decref(o);
	fake_close(&dc);
	fake_close(&fc);
	server_down(&fs);
	return len;
}

/*
 * A client that leaves after its last token but before the end ([DONE]
 * or the finish chunk) reached it: the end's write fails. The request
 * was cancelled (docs/API.md "Streaming format": "A client that leaves is
 * noticed as on /stream and its sequence is cancelled (cancelled,
 * finish_reason abort)"; engine.h struct engine_outcome: "CANCELLED also
 * for a client that left after its last token, before [DONE]"), however
 * the sequence ended: by max_tokens or by a stop string.
 */
static void
test_client_gone_before_done(void **unused)
{
	enum ep { STREAM, V1_LENGTH, V1_STOP };
	static const struct {
		enum ep ep;
		enum openai_kind kind;
	} cases[] = {
		{ STREAM, 0 },
		{ V1_LENGTH, OPENAI_CHAT },
		{ V1_LENGTH, OPENAI_COMPLETIONS },
		{ V1_STOP, OPENAI_CHAT },
		{ V1_STOP, OPENAI_COMPLETIONS },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_req q = { cases[k].kind, "Tell me about the weather "
		    "in the mountains", 30, 1, 1, { NULL }, 0, -1 };
		struct state_record rec;
		char status[16], reason[16], stop[16];
		const char *method = "POST", *uri = v1_uri(q.kind);
		char *body = NULL;
		size_t whole, got;

		if (cases[k].ep == STREAM) {
			method = "GET";
			uri = "/stream?prompt=gone&max_tokens=5";
		} else if (cases[k].ep == V1_STOP) {
			struct v1_result full;

			v1_run(&q, &full, &rec);
			pick_stop(&full, 0, stop);
			q.stop[0] = stop;
			q.nstop = 1;
			v1_result_free(&full);
		}
		if (cases[k].ep != STREAM)
			body = v1_body(&q);
		/* the whole answer, as it ends */
		whole = run_until_gone(method, uri, body, SIZE_MAX, &rec,
		    status, reason);
		assert_string_equal(status, "done");
		assert_string_equal(reason, cases[k].ep == V1_STOP ? "stop" :
		    "length");
		/* the same, but the client is gone before its last 3 bytes */
		got = run_until_gone(method, uri, body, whole - 3, &rec,
		    status, reason);
		assert_int_equal(got, whole - 3);
		assert_int_equal(rec.status, STATE_CANCELLED);
		assert_string_equal(status, "cancelled");
		assert_string_equal(reason, "abort");
		free(body);
	}
}

/* A /v1 request the parser refuses: a 400 (404 for another model) in
 * the OpenAI shape, naming the field at fault in "param". */
static void
test_v1_bad_requests(void **unused)
{
	static const struct {
		const char *uri;
		const char *body;
		int status;
		const char *code;
		const char *param;       /* NULL: null */
	} cases[] = {
		{ "/v1/completions", "{\"prompt\":\"x\"}", 400,
		    "missing_required_parameter", "model" },
		{ "/v1/completions", "{\"model\":\"gpt-4\",\"prompt\":\"x\"}",
		    404, "model_not_found", NULL },     /* as OpenAI's */
		{ "/v1/completions", "{\"model\":", 400, "invalid_json",
		    NULL },
		{ "/v1/chat/completions", "{\"model\":\"tokstream-sim\","
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		    "\"stream_options\":{\"include_usage\":true}}", 400,
		    "invalid_value", "stream_options" },
		{ "/v1/chat/completions", "{\"model\":\"tokstream-sim\","
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		    "\"n\":17}", 400, "integer_above_max_value", "n" },
		{ "/v1/chat/completions", "{\"model\":\"tokstream-sim\","
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		    "\"stop\":[\"\"]}", 400, "invalid_value", "stop[0]" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		json_t *o, *param;

		server_up(&fs);
		fake_open(&fc, &fs, "POST", cases[k].uri, cases[k].body);
		exchange(&fs, &fc, &r);
		assert_error(&r, cases[k].status, "invalid_request_error",
		    cases[k].code, 1);
		o = body_json(&r);
		param = json_object_get(json_object_get(o, "error"), "param");
		if (cases[k].param != NULL && !json_is_string(param))
			fail_msg("%s %s: param is not \"%s\"", cases[k].uri,
			    cases[k].body, cases[k].param);
		if (cases[k].param != NULL)
			assert_string_equal(json_string_value(param),
			    cases[k].param);
		else
			assert_true(json_is_null(param));
		json_decref(o);
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* A whole answer that took longer than a keep-alive interval committed
 * its 200 (with X-Request-Id) and newlines; an error after that is the
 * body of the 200, in the endpoint's shape. */
static void
test_error_after_commit(void **unused)
{
	static const struct {
		const char *uri;
		int openai;
		size_t newlines;         /* keep-alives before the error */
	} cases[] = {
		/* prefill 100 ms, the error after 60 tokens: 1300 ms */
		{ "/generate", 0, 1 },
		{ "/v1/completions", 1, 1 },
		{ "/v1/chat/completions", 1, 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct state_record rec;
		json_t *o;
		char *body;

		if (cases[k].openai) {
			o = json_pack("{s:s,s:i,s:b,s:i,s:i}", "model",
			    "tokstream-sim", "max_tokens", 80, "ignore_eos", 1,
			    "error_after", 60, "prefill_ms", 100);
			if (strstr(cases[k].uri, "chat") != NULL)
				json_object_set_new(o, "messages", json_pack(
				    "[{s:s,s:s}]", "role", "user", "content",
				    "x"));
			else
				json_object_set_new(o, "prompt",
				    json_string("x"));
		} else {
			o = json_pack("{s:s,s:i,s:i,s:i}", "prompt", "x",
			    "max_tokens", 80, "error_after", 60, "prefill_ms",
			    100);
		}
		body = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		server_up(&fs);
		fake_open(&fc, &fs, "POST", cases[k].uri, body);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_true(request_id(&r) > 0);
		assert_int_equal(strspn(r.body, "\n"), cases[k].newlines);
		o = body_json(&r);
		assert_string_equal(jstr(o, "error.code"), "injected_error");
		assert_int_equal(json_object_get(json_object_get(o, "error"),
		    "param") != NULL, cases[k].openai);
		assert_null(json_object_get(o, "text"));
		assert_null(json_object_get(o, "choices"));
		json_decref(o);
		assert_int_equal(state_lookup(fs.srv.state, request_id(&r),
		    &rec), TS_OK);
		assert_int_equal(rec.status, STATE_ERROR);
		assert_int_equal(rec.generated, 60);
		fake_close(&fc);
		server_down(&fs);
		free(body);
	}
}

/* GET /v1/models lists the one served model. */
static void
test_v1_models(void **unused)
{
	static const struct {
		const char *served;      /* --served-model-name, or NULL */
		const char *id;
	} cases[] = {
		{ NULL, "tokstream-sim" },
		{ "my-model", "my-model" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		json_t *o, *data, *m;

		server_defaults(&fs);
		fs.opt.n_served_models = cases[k].served != NULL;
		fs.opt.served_models[0] = cases[k].served;
		server_start(&fs);
		fake_open(&fc, &fs, "GET", "/v1/models", NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_header(&r, "Content-Type", "application/json");
		o = body_json(&r);
		assert_string_equal(jstr(o, "object"), "list");
		data = json_object_get(o, "data");
		assert_int_equal(json_array_size(data), 1);
		m = json_array_get(data, 0);
		assert_string_equal(jstr(m, "id"), cases[k].id);
		assert_string_equal(jstr(m, "object"), "model");
		assert_string_equal(jstr(m, "tokstream.backend"), "sim");
		assert_int_equal(json_integer_value(json_object_get(m,
		    "created")), 1700000000);
		json_decref(o);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* GET /v1/models/{model}: each served name (percent-decoded, '+' kept)
 * gives the model object; any other 404 model_not_found. With several
 * --served-model-name, /v1/models lists all, a request may name any, and
 * every response carries the first (as vLLM). */
static void
test_v1_model_names(void **unused)
{
	static const struct {
		const char *uri;
		int status;
		const char *id;
	} cases[] = {
		{ "/v1/models/first", 200, "first" },
		{ "/v1/models/org/second", 200, "org/second" },
		{ "/v1/models/org%2Fsecond", 200, "org/second" },
		{ "/v1/models/org%2fsecond", 200, "org/second" },
		{ "/v1/models/a+b", 200, "a+b" },
		{ "/v1/models/a%20b", 404, NULL },
		{ "/v1/models/First", 404, NULL },
		{ "/v1/models/first/", 404, NULL },
		{ "/v1/models/%zz", 404, NULL },
		{ "/v1/models/first%", 404, NULL },
		{ "/v1/models/tokstream-sim", 404, NULL },
	};
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	json_t *o, *data;
	size_t k;

	(void)unused;
	server_defaults(&fs);
	fs.opt.served_models[0] = "first";
	fs.opt.served_models[1] = "org/second";
	fs.opt.served_models[2] = "a+b";
	fs.opt.n_served_models = 3;
	server_start(&fs);
	fake_open(&fc, &fs, "GET", "/v1/models", NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	data = json_object_get(o, "data");
	assert_int_equal(json_array_size(data), 3);
	assert_string_equal(jstr(json_array_get(data, 0), "id"), "first");
	assert_string_equal(jstr(json_array_get(data, 1), "id"),
	    "org/second");
	assert_string_equal(jstr(json_array_get(data, 2), "id"), "a+b");
	json_decref(o);
	fake_close(&fc);
	for (k = 0; k < NELEM(cases); k++) {
		fake_open(&fc, &fs, "GET", cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		if (cases[k].status == 200) {
			assert_int_equal(r.status, 200);
			o = body_json(&r);
			assert_string_equal(jstr(o, "id"), cases[k].id);
			assert_string_equal(jstr(o, "object"), "model");
			assert_string_equal(jstr(o, "owned_by"), "tokstream");
			assert_true(json_is_integer(json_object_get(o,
			    "created")));
			json_decref(o);
		} else {
			assert_error(&r, 404, "invalid_request_error",
			    "model_not_found", 1);
		}
		fake_close(&fc);
	}
	/* a request naming the second name: served, answered as "first" */
	fake_open(&fc, &fs, "POST", "/v1/chat/completions",
	    "{\"model\":\"org/second\",\"max_tokens\":2,\"messages\":[{"
	    "\"role\":\"user\",\"content\":\"hi\"}]}");
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_string_equal(jstr(o, "model"), "first");
	json_decref(o);
	fake_close(&fc);
	fake_open(&fc, &fs, "POST", "/v1/chat/completions",
	    "{\"model\":\"tokstream-sim\",\"max_tokens\":2,\"messages\":[{"
	    "\"role\":\"user\",\"content\":\"hi\"}]}");
	exchange(&fs, &fc, &r);
	assert_error(&r, 404, "invalid_request_error", "model_not_found", 1);
	o = body_json(&r);
	assert_non_null(strstr(jstr(o, "error.message"),
	    "`first`, `org/second`, `a+b`"));
	json_decref(o);
	fake_close(&fc);
	server_down(&fs);
}

/* /v1/responses runs the chat template over instructions (a system
 * message) and input (a string: one user message; or message items with
 * input_text parts): the same prompt as the chat request with those
 * messages gives the same text. The response echoes instructions and
 * max_output_tokens (null when not given). */
static void
test_responses_as_chat(void **unused)
{
	static const char *const bodies[] = {
		"{\"model\":\"tokstream-sim\",\"instructions\":\"be brief\","
		"\"input\":\"hello there\",\"max_output_tokens\":9,"
		"\"ignore_eos\":true}",
		"{\"model\":\"tokstream-sim\",\"instructions\":\"be brief\","
		"\"input\":[{\"role\":\"user\",\"content\":[{\"type\":"
		"\"input_text\",\"text\":\"hello there\"}]}],"
		"\"max_output_tokens\":9,\"ignore_eos\":true}",
		"{\"model\":\"tokstream-sim\",\"input\":[{\"type\":\"message\","
		"\"role\":\"system\",\"content\":\"be brief\"},{\"role\":"
		"\"user\",\"content\":\"hello there\"}],"
		"\"max_output_tokens\":9,\"ignore_eos\":true}",
	};
	static const char chat[] = "{\"model\":\"tokstream-sim\","
	    "\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
	    "{\"role\":\"user\",\"content\":\"hello there\"}],"
	    "\"max_tokens\":9,\"ignore_eos\":true}";
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	json_t *o;
	char want[4096];
	size_t k;

	(void)unused;
	server_up(&fs);
	fake_open(&fc, &fs, "POST", "/v1/chat/completions", chat);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	snprintf(want, sizeof(want), "%s",
	    jstr(json_array_get(json_object_get(o, "choices"), 0),
	    "message.content"));
	json_decref(o);
	fake_close(&fc);
	for (k = 0; k < NELEM(bodies); k++) {
		json_t *part;

		fake_open(&fc, &fs, "POST", "/v1/responses", bodies[k]);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		o = body_json(&r);
		part = json_array_get(json_object_get(json_array_get(
		    json_object_get(o, "output"), 0), "content"), 0);
		assert_string_equal(jstr(part, "text"), want);
		assert_string_equal(jstr(o, "status"), "incomplete");
		assert_int_equal(json_integer_value(json_object_get(o,
		    "max_output_tokens")), 9);
		if (k < 2)
			assert_string_equal(jstr(o, "instructions"),
			    "be brief");
		else
			assert_true(json_is_null(json_object_get(o,
			    "instructions")));
		assert_int_equal(json_integer_value(json_object_get(
		    json_object_get(o, "usage"), "output_tokens")), 9);
		json_decref(o);
		fake_close(&fc);
	}
	/* not given: null; EOS ends it: status completed */
	fake_open(&fc, &fs, "POST", "/v1/responses",
	    "{\"model\":\"tokstream-sim\",\"input\":\"hi\"}");
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_true(json_is_null(json_object_get(o, "max_output_tokens")));
	if (json_integer_value(json_object_get(json_object_get(o, "usage"),
	    "output_tokens")) < 256)
		assert_string_equal(jstr(o, "status"), "completed");
	json_decref(o);
	fake_close(&fc);
	server_down(&fs);
}

/* /v1/responses refuses what it cannot do with OpenAI's error shape and
 * codes, naming the field. */
static void
test_responses_bad_requests(void **unused)
{
	static const struct {
		const char *body;
		const char *code;
		const char *param;
	} cases[] = {
		{ "{\"model\":\"tokstream-sim\"}", "missing_required_parameter",
		    "input" },
		{ "{\"model\":\"tokstream-sim\",\"input\":7}", "invalid_type",
		    "input" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[]}", "empty_array",
		    "input" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[{\"type\":"
		  "\"file_search_call\",\"id\":\"c\"}]}", "unsupported_value",
		  "input[0].type" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[{\"type\":"
		  "\"function_call_output\",\"output\":\"x\"}]}",
		  "missing_required_parameter", "input[0].call_id" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[{\"role\":\"user\","
		  "\"content\":[{\"type\":\"input_image\",\"image_url\":"
		  "\"x\"}]}]}", "invalid_value", "input[0].content[0].type" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[{\"role\":\"tool\","
		  "\"content\":\"x\"}]}", "invalid_value", "input[0].role" },
		{ "{\"model\":\"tokstream-sim\",\"input\":\"x\","
		  "\"instructions\":5}", "invalid_type", "instructions" },
		{ "{\"model\":\"tokstream-sim\",\"input\":\"x\","
		  "\"max_output_tokens\":0}", "integer_below_min_value",
		  "max_output_tokens" },
		{ "{\"model\":\"tokstream-sim\",\"input\":\"x\","
		  "\"max_output_tokens\":8193}", "integer_above_max_value",
		  "max_output_tokens" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		json_t *o;

		server_up(&fs);
		fake_open(&fc, &fs, "POST", "/v1/responses", cases[k].body);
		exchange(&fs, &fc, &r);
		assert_error(&r, 400, "invalid_request_error", cases[k].code,
		    1);
		o = body_json(&r);
		assert_string_equal(jstr(o, "error.param"), cases[k].param);
		json_decref(o);
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* X-Tokstream-Failure: refused (400 failure_header_disabled, OpenAI's
 * shape, nothing generated) unless --allow-failure-header, whatever its
 * value; an empty header is no header; the seeded draw
 * (--failure-injection-rate) needs no option. */
static void
test_v1_failure_header(void **unused)
{
	static const struct {
		const char *header;      /* NULL: none */
		int allow;               /* --allow-failure-header */
		double rate;             /* --failure-injection-rate / 100 */
		int status;
		const char *type, *code; /* NULL: a 200 */
	} cases[] = {
		{ "rate_limit", 0, 0.0, 400, "invalid_request_error",
		    "failure_header_disabled" },
		{ "none", 0, 0.0, 400, "invalid_request_error",
		    "failure_header_disabled" },
		{ "sometimes", 0, 0.0, 400, "invalid_request_error",
		    "failure_header_disabled" },
		{ "none", 0, 1.0, 400, "invalid_request_error",
		    "failure_header_disabled" },
		{ "", 0, 0.0, 200, NULL, NULL },
		{ NULL, 0, 1.0, 503, "server_error", "overloaded" },
		{ "rate_limit", 1, 0.0, 429, "requests",
		    "rate_limit_exceeded" },
		{ "none", 1, 1.0, 200, NULL, NULL },
		{ "sometimes", 1, 0.0, 400, "invalid_request_error",
		    "invalid_value" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_req q = { OPENAI_CHAT, "hi", 3, 0, 0, { NULL }, 0,
		    -1 };
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char *body = v1_body(&q);

		server_defaults(&fs);
		inject_config_defaults(&fs.opt.inject);
		fs.opt.inject.rate = cases[k].rate;
		fs.opt.inject.types = INJECT_BIT(INJECT_OVERLOADED);
		fs.opt.allow_failure_header = cases[k].allow;
		server_start(&fs);
		fake_open(&fc, &fs, "POST", v1_uri(q.kind), body);
		if (cases[k].header != NULL)
			fake_set(&fc, INJECT_HEADER_PARAM, cases[k].header);
		exchange(&fs, &fc, &r);
		if (cases[k].code != NULL) {
			assert_error(&r, cases[k].status, cases[k].type,
			    cases[k].code, 1);
			assert_int_equal(state_total_streams(fs.srv.state), 0);
		} else {
			assert_int_equal(r.status, 200);
			assert_int_equal(state_total_streams(fs.srv.state), 1);
		}
		if (strcmp(cases[k].code != NULL ? cases[k].code : "",
		    "failure_header_disabled") == 0) {
			json_t *o = body_json(&r);

			assert_non_null(strstr(jstr(o, "error.message"),
			    "--allow-failure-header"));
			json_decref(o);
		}
		fake_close(&fc);
		server_down(&fs);
		free(body);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_gone_before_done),
		cmocka_unit_test(test_chat_stream_chunks),
		cmocka_unit_test(test_v1_answer_matches_stream),
		cmocka_unit_test(test_v1_stop_strings),
		cmocka_unit_test(test_v1_injected_error),
		cmocka_unit_test(test_v1_failure_header),
		cmocka_unit_test(test_v1_bad_requests),
		cmocka_unit_test(test_error_after_commit),
		cmocka_unit_test(test_v1_models),
		cmocka_unit_test(test_v1_model_names),
		cmocka_unit_test(test_responses_as_chat),
		cmocka_unit_test(test_responses_bad_requests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
