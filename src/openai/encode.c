/*
 * openai/encode.c - the OpenAI-compatible API's response encoders (OpenAI
 * API reference: the completion, chat completion and chunk objects,
 * stream_options.include_usage, the model list). See encode.h. No I/O.
 */
#include "openai/encode.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sse.h"

#define CONST_STR_LEN(s) (s), (sizeof(s) - 1)

/* ---- encoders ----------------------------------------------------------- */

const char *
openai_finish_reason(enum openai_finish f)
{
	return f == OPENAI_FINISH_LENGTH ? "length" :
	    f == OPENAI_FINISH_TOOL_CALLS ? "tool_calls" : "stop";
}

/*
 * The fields every object of a response starts with:
 * {"id","object","created","model"}. NULL when the model name is not
 * UTF-8 (or jansson cannot allocate).
 */
static json_t *
head(const struct openai_meta *m, const char *object)
{
	char id[40];

	snprintf(id, sizeof(id), "%s-%s%llu",
	    m->kind == OPENAI_CHAT ? "chatcmpl" : "cmpl",
	    m->id_prefix ? m->id_prefix : "", (unsigned long long)m->id);
	return json_pack("{s:s,s:s,s:I,s:s%}", "id", id, "object", object,
	    "created", (json_int_t)m->created, "model", m->model,
	    m->model_len);
}

static json_t *
usage_json(const struct openai_usage *u)
{
	return json_pack("{s:I,s:I,s:I,s:{s:I}}", "prompt_tokens",
	    (json_int_t)u->prompt_tokens, "completion_tokens",
	    (json_int_t)u->completion_tokens, "total_tokens",
	    (json_int_t)u->prompt_tokens + (json_int_t)u->completion_tokens,
	    "prompt_tokens_details", "cached_tokens",
	    (json_int_t)u->cached_tokens);
}

/* encode.h; responses.c uses it too */
json_t *
openai_json_set(json_t *o, const char *key, json_t *v)
{
	if (o == NULL || v == NULL || json_object_set_new(o, key, v) != 0) {
		json_decref(o);
		json_decref(v);
		return NULL;
	}
	return o;
}

/*
 * Dumps o compactly (taking its reference) and appends it: as one SSE
 * event when `event`, else bare. JSON_COMPACT escapes every control
 * character, so an event is a single data line. NULL o is TS_EINVAL
 * (a string that was not UTF-8).
 */
static enum ts_err
emit(struct ts_buf *b, json_t *o, int event)
{
	enum ts_err rc;
	char *s;

	if (o == NULL)
		return TS_EINVAL;
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (s == NULL)
		return TS_ENOMEM;
	rc = event ? sse_encode_data(b, s, strlen(s)) :
	    ts_buf_append(b, s, strlen(s));
	free(s);
	return rc;
}

/* A JSON string of a token's text; OpenAI's "bytes:\\xNN..." form for
 * bytes that are not UTF-8. */
static json_t *
token_string(const char *p, size_t len)
{
	json_t *j = json_stringn(p, len);
	char buf[4 * 64 + 8];
	size_t i, at;

	if (j != NULL)
		return j;
	at = (size_t)snprintf(buf, sizeof(buf), "bytes:");
	for (i = 0; i < len && at + 5 < sizeof(buf); i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "\\x%02x",
		    (unsigned char)p[i]);
	return json_stringn(buf, at);
}

static json_t *
bytes_array(const char *p, size_t len)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < len && a != NULL; i++)
		if (json_array_append_new(a, json_integer(
		    (unsigned char)p[i])) != 0) {
			json_decref(a);
			a = NULL;
		}
	return a;
}

static json_t *
lp_entry(const struct openai_lp_entry *e)
{
	json_t *o = json_object();

	o = openai_json_set(o, "token", token_string(e->text, e->len));
	o = openai_json_set(o, "logprob", json_real(e->logprob));
	return openai_json_set(o, "bytes", bytes_array(e->text, e->len));
}

json_t *
openai_logprobs_json(enum openai_kind kind, const struct openai_lp_token *t,
    size_t n)
{
	size_t i, j;

	if (kind == OPENAI_CHAT) {
		json_t *content = json_array(), *o;

		for (i = 0; i < n && content != NULL; i++) {
			json_t *top = json_array();

			for (j = 0; j < t[i].ntop && top != NULL; j++)
				if (json_array_append_new(top,
				    lp_entry(&t[i].top[j])) != 0) {
					json_decref(top);
					top = NULL;
				}
			o = openai_json_set(lp_entry(&t[i].tok),
			    "top_logprobs", top);
			if (o == NULL || json_array_append_new(content, o) !=
			    0) {
				json_decref(content);
				content = NULL;
			}
		}
		o = openai_json_set(json_object(), "content", content);
		return openai_json_set(o, "refusal", json_null());
	} else {
		json_t *toks = json_array(), *lps = json_array();
		json_t *tops = json_array(), *offs = json_array(), *o;

		for (i = 0; i < n; i++) {
			json_t *top = json_object();

			for (j = 0; j < t[i].ntop && top != NULL; j++) {
				json_t *k = token_string(t[i].top[j].text,
				    t[i].top[j].len);

				if (k == NULL || json_object_set_new(top,
				    json_string_value(k), json_real(
				    t[i].top[j].logprob)) != 0) {
					json_decref(top);
					top = NULL;
				}
				json_decref(k);
			}
			if (json_array_append_new(toks, token_string(
			    t[i].tok.text, t[i].tok.len)) != 0 ||
			    json_array_append_new(lps, json_real(
			    t[i].tok.logprob)) != 0 ||
			    json_array_append_new(tops, top) != 0 ||
			    json_array_append_new(offs, json_integer(
			    (json_int_t)t[i].text_offset)) != 0) {
				json_decref(toks);
				toks = NULL;
				break;
			}
		}
		o = openai_json_set(json_object(), "tokens", toks);
		if (toks == NULL) {
			json_decref(lps);
			json_decref(tops);
			json_decref(offs);
			json_decref(o);
			return NULL;
		}
		o = openai_json_set(o, "token_logprobs", lps);
		o = openai_json_set(o, "top_logprobs", tops);
		return openai_json_set(o, "text_offset", offs);
	}
}

/* The tool_calls array of a whole answer. */
static json_t *
calls_json(const struct openai_tool_call *c, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n && a != NULL; i++) {
		json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s%}}", "id", c[i].id,
		    "type", "function", "function", "name", c[i].name,
		    "arguments", c[i].args, c[i].args_len);

		if (o == NULL || json_array_append_new(a, o) != 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

/* One choice object of a whole answer; logprobs borrowed (NULL: null). */
static json_t *
choice_json(enum openai_kind kind, uint32_t index, const char *text,
    size_t len, enum openai_finish finish, const struct openai_extra *x)
{
	const char *fr = openai_finish_reason(finish);
	json_t *lp = x != NULL && x->logprobs != NULL ?
	    json_incref(x->logprobs) : json_null();

	if (kind == OPENAI_CHAT && x != NULL && x->ncalls > 0)
		return json_pack("{s:i,s:{s:s,s:n,s:o,s:n},s:o,s:s}",
		    "index", (int)index, "message", "role", "assistant",
		    "content", "tool_calls", calls_json(x->calls, x->ncalls),
		    "refusal", "logprobs", lp, "finish_reason", fr);
	if (kind == OPENAI_CHAT)
		/* "refusal" is required by OpenAI's schema, and OpenAI
		 * sends null when the model did not refuse */
		return json_pack("{s:i,s:{s:s,s:s%,s:n},s:o,s:s}", "index",
		    (int)index, "message", "role", "assistant", "content",
		    text, len, "refusal", "logprobs", lp, "finish_reason", fr);
	return json_pack("{s:i,s:s%,s:o,s:s}", "index", (int)index, "text",
	    text, len, "logprobs", lp, "finish_reason", fr);
}

enum ts_err
openai_encode_response_n(struct ts_buf *b, const struct openai_meta *m,
    const struct openai_choice *c, size_t n, const struct openai_usage *u)
{
	json_t *o = head(m, m->kind == OPENAI_CHAT ? "chat.completion" :
	    "text_completion");
	json_t *choices = json_array();
	size_t i;

	for (i = 0; i < n && choices != NULL; i++) {
		json_t *ch = choice_json(m->kind, (uint32_t)i, c[i].text,
		    c[i].len, c[i].finish, &c[i].x);

		if (ch == NULL || json_array_append_new(choices, ch) != 0) {
			json_decref(choices);
			choices = NULL;
		}
	}
	o = openai_json_set(o, "choices", choices);
	o = openai_json_set(o, "usage", usage_json(u));
	return emit(b, o, 0);
}

enum ts_err
openai_encode_response_x(struct ts_buf *b, const struct openai_meta *m,
    const char *text, size_t len, enum openai_finish finish,
    const struct openai_usage *u, struct openai_extra *x)
{
	struct openai_choice c;
	enum ts_err rc;

	memset(&c, 0, sizeof(c));
	c.text = text;
	c.len = len;
	c.finish = finish;
	if (x != NULL)
		c.x = *x;
	rc = openai_encode_response_n(b, m, &c, 1, u);
	if (x != NULL) {
		json_decref(x->logprobs);
		x->logprobs = NULL;
	}
	return rc;
}

enum ts_err
openai_encode_response(struct ts_buf *b, const struct openai_meta *m,
    const char *text, size_t len, enum openai_finish finish,
    const struct openai_usage *u)
{
	return openai_encode_response_x(b, m, text, len, finish, u, NULL);
}

void
openai_stream_init(struct openai_stream *s, const struct openai_meta *m,
    int include_usage)
{
	s->meta = *m;
	s->include_usage = include_usage != 0;
	s->role_sent = 0;
	s->index = 0;
}

/*
 * A chunk whose one choice is `choice` (taken), with "usage":null when
 * the stream includes usage. NULL on failure.
 */
static json_t *
chunk(const struct openai_stream *s, json_t *choice)
{
	json_t *o = head(&s->meta, s->meta.kind == OPENAI_CHAT ?
	    "chat.completion.chunk" : "text_completion");

	o = openai_json_set(o, "choices", choice ? json_pack("[o]", choice) :
	    NULL);
	if (s->include_usage)
		o = openai_json_set(o, "usage", json_null());
	return o;
}

enum ts_err
openai_encode_chunk_lp(struct ts_buf *b, struct openai_stream *s,
    const char *text, size_t len, json_t *logprobs)
{
	json_t *choice, *lp = logprobs != NULL ? logprobs : json_null();
	enum ts_err rc;

	if (s->meta.kind != OPENAI_CHAT)
		choice = json_pack("{s:i,s:s%,s:o,s:n}", "index", (int)s->index, "text",
		    text, len, "logprobs", lp, "finish_reason");
	else if (!s->role_sent)
		choice = json_pack("{s:i,s:{s:s,s:s%},s:o,s:n}", "index", (int)s->index,
		    "delta", "role", "assistant", "content", text, len,
		    "logprobs", lp, "finish_reason");
	else
		choice = json_pack("{s:i,s:{s:s%},s:o,s:n}", "index", (int)s->index,
		    "delta", "content", text, len, "logprobs", lp,
		    "finish_reason");
	rc = emit(b, chunk(s, choice), 1);
	if (rc == TS_OK && s->meta.kind == OPENAI_CHAT)
		s->role_sent = 1;
	return rc;
}

enum ts_err
openai_encode_chunk(struct ts_buf *b, struct openai_stream *s,
    const char *text, size_t len)
{
	return openai_encode_chunk_lp(b, s, text, len, NULL);
}

enum ts_err
openai_encode_tool_delta(struct ts_buf *b, struct openai_stream *s,
    uint32_t index, const char *id, const char *name, const char *frag,
    size_t frag_len, json_t *logprobs)
{
	json_t *call, *delta, *lp = logprobs != NULL ? logprobs : json_null();
	size_t start = b->len;
	enum ts_err rc;

	if (id != NULL) {
		/* the call's head, as OpenAI sends it: arguments "" */
		call = json_pack("{s:i,s:s,s:s,s:{s:s,s:s}}", "index",
		    (int)index, "id", id, "type", "function", "function",
		    "name", name, "arguments", "");
		delta = s->role_sent ? json_object() : json_pack("{s:s,s:n}",
		    "role", "assistant", "content");
		delta = openai_json_set(delta, "tool_calls", call ?
		    json_pack("[o]", call) : NULL);
		rc = emit(b, chunk(s, json_pack("{s:i,s:o,s:n,s:n}", "index",
		    (int)s->index, "delta", delta, "logprobs", "finish_reason")), 1);
		if (rc != TS_OK) {
			json_decref(lp);
			return rc;
		}
		s->role_sent = 1;
		if (frag_len == 0 && logprobs == NULL) {
			json_decref(lp);
			return TS_OK;
		}
	}
	call = json_pack("{s:i,s:{s:s%}}", "index", (int)index, "function",
	    "arguments", frag, frag_len);
	delta = call ? json_pack("{s:[o]}", "tool_calls", call) : NULL;
	rc = emit(b, chunk(s, delta ? json_pack("{s:i,s:o,s:o,s:n}", "index",
	    (int)s->index, "delta", delta, "logprobs", lp, "finish_reason") :
	    NULL), 1);
	if (rc != TS_OK)
		b->len = start;
	return rc;
}

enum ts_err
openai_encode_finish(struct ts_buf *b, struct openai_stream *s,
    enum openai_finish finish)
{
	const char *fr = openai_finish_reason(finish);
	json_t *choice;
	enum ts_err rc;

	if (s->meta.kind != OPENAI_CHAT)
		choice = json_pack("{s:i,s:s,s:n,s:s}", "index", (int)s->index, "text", "",
		    "logprobs", "finish_reason", fr);
	else if (!s->role_sent)
		choice = json_pack("{s:i,s:{s:s,s:s},s:n,s:s}", "index", (int)s->index,
		    "delta", "role", "assistant", "content", "", "logprobs",
		    "finish_reason", fr);
	else
		choice = json_pack("{s:i,s:{},s:n,s:s}", "index", (int)s->index, "delta",
		    "logprobs", "finish_reason", fr);
	rc = emit(b, chunk(s, choice), 1);
	if (rc == TS_OK && s->meta.kind == OPENAI_CHAT)
		s->role_sent = 1;
	return rc;
}

enum ts_err
openai_encode_usage(struct ts_buf *b, const struct openai_stream *s,
    const struct openai_usage *u)
{
	json_t *o;

	if (!s->include_usage)
		return TS_OK;
	o = head(&s->meta, s->meta.kind == OPENAI_CHAT ?
	    "chat.completion.chunk" : "text_completion");
	o = openai_json_set(o, "choices", json_array());
	o = openai_json_set(o, "usage", usage_json(u));
	return emit(b, o, 1);
}

enum ts_err
openai_encode_end(struct ts_buf *b, struct openai_stream *s,
    enum openai_finish finish, const struct openai_usage *u)
{
	size_t start = b->len;
	int role_sent = s->role_sent;
	enum ts_err rc;

	if ((rc = openai_encode_finish(b, s, finish)) != TS_OK ||
	    (rc = openai_encode_usage(b, s, u)) != TS_OK ||
	    (rc = sse_encode_done(b)) != TS_OK) {
		b->len = start;
		s->role_sent = role_sent;
	}
	return rc;
}

enum ts_err
openai_encode_stream_error(struct ts_buf *b, const struct http_error *err)
{
	struct ts_buf e;
	size_t start = b->len;
	enum ts_err rc;

	/* The error body is bounded by http_error's fixed-size fields. */
	ts_buf_init(&e, 4096);
	rc = http_error_json_openai(err, &e);
	if (rc == TS_OK)
		rc = sse_encode_data(b, e.p, e.len);
	if (rc == TS_OK)
		rc = sse_encode_done(b);
	if (rc != TS_OK)
		b->len = start;
	ts_buf_free(&e);
	return rc;
}

/* The model object of m; NULL when a string is not UTF-8. */
static json_t *
model_json(const struct openai_model_info *m)
{
	json_t *model, *ext = NULL;

	model = json_pack("{s:s%,s:s,s:I,s:s}", "id", m->id, m->id_len,
	    "object", "model", "created", (json_int_t)m->created, "owned_by",
	    "tokstream");
	if (m->max_model_len > 0)
		model = openai_json_set(model, "max_model_len",
		    json_integer((json_int_t)m->max_model_len));
	if (m->backend != NULL || m->chat_template != NULL) {
		ext = json_object();
		if (m->backend != NULL)
			ext = openai_json_set(ext, "backend",
			    json_string(m->backend));
		if (m->chat_template != NULL)
			ext = openai_json_set(ext, "chat_template",
			    json_string(m->chat_template));
		model = openai_json_set(model, "tokstream", ext);
	}
	return model;
}

enum ts_err
openai_encode_models(struct ts_buf *b, const struct openai_model_info *m,
    const char *const *names, size_t n)
{
	struct openai_model_info one = *m;
	json_t *data = json_array();
	size_t k;

	for (k = 0; k < n && data != NULL; k++) {
		json_t *o;

		one.id = names[k];
		one.id_len = strlen(names[k]);
		o = model_json(&one);
		if (o == NULL || json_array_append_new(data, o) != 0) {
			json_decref(data);
			data = NULL;
		}
	}
	return emit(b, data ? json_pack("{s:s,s:o}", "object", "list",
	    "data", data) : NULL, 0);
}

enum ts_err
openai_encode_model(struct ts_buf *b, const struct openai_model_info *m)
{
	return emit(b, model_json(m), 0);
}
