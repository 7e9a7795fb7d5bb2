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

#include "server/sse.h"

#define CONST_STR_LEN(s) (s), (sizeof(s) - 1)

/* ---- encoders ----------------------------------------------------------- */

const char *
openai_finish_reason(enum openai_finish f)
{
	return f == OPENAI_FINISH_LENGTH ? "length" : "stop";
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

	snprintf(id, sizeof(id), "%s-%llu",
	    m->kind == OPENAI_CHAT ? "chatcmpl" : "cmpl",
	    (unsigned long long)m->id);
	return json_pack("{s:s,s:s,s:I,s:s%}", "id", id, "object", object,
	    "created", (json_int_t)m->created, "model", m->model,
	    m->model_len);
}

static json_t *
usage_json(const struct openai_usage *u)
{
	return json_pack("{s:I,s:I,s:I}", "prompt_tokens",
	    (json_int_t)u->prompt_tokens, "completion_tokens",
	    (json_int_t)u->completion_tokens, "total_tokens",
	    (json_int_t)u->prompt_tokens + (json_int_t)u->completion_tokens);
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

enum ts_err
openai_encode_response(struct ts_buf *b, const struct openai_meta *m,
    const char *text, size_t len, enum openai_finish finish,
    const struct openai_usage *u)
{
	const char *fr = openai_finish_reason(finish);
	json_t *o, *choice;

	if (m->kind == OPENAI_CHAT) {
		o = head(m, "chat.completion");
		/* "refusal" is required by OpenAI's schema, and OpenAI sends
		 * null when the model did not refuse */
		choice = json_pack("{s:i,s:{s:s,s:s%,s:n},s:n,s:s}", "index",
		    0, "message", "role", "assistant", "content", text, len,
		    "refusal", "logprobs", "finish_reason", fr);
	} else {
		o = head(m, "text_completion");
		choice = json_pack("{s:i,s:s%,s:n,s:s}", "index", 0, "text",
		    text, len, "logprobs", "finish_reason", fr);
	}
	o = openai_json_set(o, "choices", choice ? json_pack("[o]", choice) :
	    NULL);
	o = openai_json_set(o, "usage", usage_json(u));
	return emit(b, o, 0);
}

void
openai_stream_init(struct openai_stream *s, const struct openai_meta *m,
    int include_usage)
{
	s->meta = *m;
	s->include_usage = include_usage != 0;
	s->role_sent = 0;
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
openai_encode_chunk(struct ts_buf *b, struct openai_stream *s,
    const char *text, size_t len)
{
	json_t *choice;
	enum ts_err rc;

	if (s->meta.kind != OPENAI_CHAT)
		choice = json_pack("{s:i,s:s%,s:n,s:n}", "index", 0, "text",
		    text, len, "logprobs", "finish_reason");
	else if (!s->role_sent)
		choice = json_pack("{s:i,s:{s:s,s:s%},s:n,s:n}", "index", 0,
		    "delta", "role", "assistant", "content", text, len,
		    "logprobs", "finish_reason");
	else
		choice = json_pack("{s:i,s:{s:s%},s:n,s:n}", "index", 0,
		    "delta", "content", text, len, "logprobs",
		    "finish_reason");
	rc = emit(b, chunk(s, choice), 1);
	if (rc == TS_OK && s->meta.kind == OPENAI_CHAT)
		s->role_sent = 1;
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
		choice = json_pack("{s:i,s:s,s:n,s:s}", "index", 0, "text", "",
		    "logprobs", "finish_reason", fr);
	else if (!s->role_sent)
		choice = json_pack("{s:i,s:{s:s,s:s},s:n,s:s}", "index", 0,
		    "delta", "role", "assistant", "content", "", "logprobs",
		    "finish_reason", fr);
	else
		choice = json_pack("{s:i,s:{},s:n,s:s}", "index", 0, "delta",
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
