/*
 * openai/responses.c - the OpenAI Responses API's response object and
 * streaming events, text output only (OpenAI API reference, "Responses").
 * See responses.h. No I/O.
 */
#include "openai/responses.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sse.h"

/* Statuses of a response and of its message item. */
#define ST_IN_PROGRESS "in_progress"
#define ST_COMPLETED "completed"
#define ST_INCOMPLETE "incomplete"

/* openai_json_set (encode.h), short: the objects here are deep */
#define put openai_json_set

static void
ids(const struct openai_resp_meta *m, char *resp, char *msg, size_t cap)
{
	const char *pre = m->id_prefix ? m->id_prefix : "";

	snprintf(resp, cap, "resp_%s%llu", pre, (unsigned long long)m->id);
	snprintf(msg, cap, "msg_%s%llu", pre, (unsigned long long)m->id);
}

static const char *
final_status(enum openai_finish f)
{
	return f == OPENAI_FINISH_LENGTH ? ST_INCOMPLETE : ST_COMPLETED;
}

/* {"type":"output_text","text","annotations":[],"logprobs":[]} */
static json_t *
text_part(const char *text, size_t len)
{
	return json_pack("{s:s,s:s%,s:[],s:[]}", "type", "output_text",
	    "text", text, len, "annotations", "logprobs");
}

/* The message item; `part` (taken) its one content part, or NULL for
 * none yet. */
static json_t *
message_item(const struct openai_resp_meta *m, const char *status,
    json_t *part, int with_part)
{
	char resp[40], msg[40];
	json_t *content = json_array();

	ids(m, resp, msg, sizeof(msg));
	if (with_part && (part == NULL || content == NULL)) {
		json_decref(part);
		json_decref(content);
		return NULL;
	}
	/* json_array_append_new drops part when it fails */
	if (with_part && json_array_append_new(content, part) != 0) {
		json_decref(content);
		return NULL;
	}
	return put(json_pack("{s:s,s:s,s:s,s:s}", "type", "message", "id",
	    msg, "status", status, "role", "assistant"), "content", content);
}

static json_t *
usage_json(const struct openai_usage *u)
{
	return json_pack("{s:I,s:{s:I,s:i},s:I,s:{s:I},s:I}", "input_tokens",
	    (json_int_t)u->prompt_tokens, "input_tokens_details",
	    "cached_tokens", (json_int_t)u->cached_tokens,
	    "cache_write_tokens", 0, "output_tokens",
	    (json_int_t)u->completion_tokens, "output_tokens_details",
	    "reasoning_tokens", (json_int_t)u->reasoning_tokens, "total_tokens",
	    (json_int_t)u->prompt_tokens + (json_int_t)u->completion_tokens);
}

/*
 * The response object with `status`; `output` (taken) its output array,
 * `usage` (taken) its usage or NULL for null, `incomplete` 1 for
 * incomplete_details {"reason":"max_output_tokens"}.
 */
static json_t *
response_json(const struct openai_resp_meta *m, const char *status,
    json_t *output, json_t *usage, int incomplete)
{
	char resp[40], msg[40];
	json_t *o;

	ids(m, resp, msg, sizeof(resp));
	o = json_pack("{s:s,s:s,s:I,s:s,s:n}", "id", resp, "object",
	    "response", "created_at", (json_int_t)m->created_at, "status",
	    status, "error");
	o = put(o, "incomplete_details", incomplete ? json_pack("{s:s}",
	    "reason", "max_output_tokens") : json_null());
	o = put(o, "instructions", m->instructions != NULL ?
	    json_stringn(m->instructions, m->instructions_len) : json_null());
	o = put(o, "max_output_tokens", m->has_max_output ?
	    json_integer((json_int_t)m->max_output_tokens) : json_null());
	o = put(o, "model", json_stringn(m->model, m->model_len));
	o = put(o, "output", output);
	output = NULL;
	o = put(o, "parallel_tool_calls", json_boolean(m->parallel_tool_calls));
	o = put(o, "previous_response_id", json_null());
	o = put(o, "reasoning", json_pack("{s:s?,s:s?}", "effort", m->effort,
	    "summary", m->summary));
	o = put(o, "store", json_false());
	o = put(o, "temperature", json_real(m->temperature));
	o = put(o, "text", json_pack("{s:{s:s}}", "format", "type", "text"));
	o = put(o, "tool_choice", m->tool_choice != NULL ?
	    json_deep_copy(m->tool_choice) : json_string("auto"));
	o = put(o, "tools", m->tools != NULL ? json_deep_copy(m->tools) :
	    json_array());
	o = put(o, "top_p", json_real(m->top_p));
	o = put(o, "truncation", json_string("disabled"));
	o = put(o, "usage", usage != NULL ? usage : json_null());
	usage = NULL;
	o = put(o, "metadata", json_object());
	json_decref(output);
	json_decref(usage);
	return o;
}

/* The output index of the message: after the reasoning item. */
static int
msg_index(const struct openai_resp_meta *m)
{
	return m->reasoning ? 1 : 0;
}

/* The reasoning item (responses.h), its whole (text, len) (NULL: none
 * yet, summary and content empty) with `status`. */
static json_t *
reasoning_item(const struct openai_resp_meta *m, const char *status,
    const char *text, size_t len)
{
	const char *pre = m->id_prefix ? m->id_prefix : "";
	char id[48];
	json_t *part = NULL, *o;

	snprintf(id, sizeof(id), "rs_%s%llu", pre, (unsigned long long)m->id);
	if (text != NULL)
		part = json_pack("{s:s,s:s%}", "type", m->summary != NULL ?
		    "summary_text" : "reasoning_text", "text", text, len);
	if (text != NULL && part == NULL)
		return NULL;
	o = json_pack("{s:s,s:s}", "id", id, "type", "reasoning");
	if (m->summary != NULL) {
		o = put(o, "summary", part != NULL ? json_pack("[o]", part) :
		    json_array());
	} else {
		o = put(o, "summary", json_array());
		o = put(o, "content", part != NULL ? json_pack("[o]", part) :
		    json_array());
	}
	return put(o, "status", json_string(status));
}

/* The finished response's output: the reasoning item (meta.reasoning),
 * then the message with its whole text. */
static json_t *
final_output(const struct openai_resp_meta *m, const char *text, size_t len,
    enum openai_finish f)
{
	json_t *item = message_item(m, final_status(f), text_part(text, len),
	    1);

	if (item != NULL && m->reasoning)
		return json_pack("[o,o]", reasoning_item(m, ST_COMPLETED,
		    m->reasoning_text != NULL ? m->reasoning_text : "",
		    m->reasoning_len), item);
	return item != NULL ? json_pack("[o]", item) : NULL;
}

/* Appends o (taken) compact, as an SSE event of o's "type" when `type`
 * is not NULL, else bare. NULL o is TS_EINVAL. */
static enum ts_err
emit(struct ts_buf *b, json_t *o, const char *type)
{
	enum ts_err rc;
	char *s;

	if (o == NULL)
		return TS_EINVAL;
	s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
	json_decref(o);
	if (s == NULL)
		return TS_ENOMEM;
	rc = type != NULL ? sse_encode_event(b, type, s, strlen(s)) :
	    ts_buf_append(b, s, strlen(s));
	free(s);
	return rc;
}

enum ts_err
openai_resp_encode(struct ts_buf *b, const struct openai_resp_meta *m,
    const char *text, size_t len, enum openai_finish finish,
    const struct openai_usage *u)
{
	return emit(b, response_json(m, final_status(finish),
	    final_output(m, text, len, finish), usage_json(u),
	    finish == OPENAI_FINISH_LENGTH), NULL);
}

void
openai_resp_stream_init(struct openai_resp_stream *s,
    const struct openai_resp_meta *m)
{
	s->meta = *m;
	s->seq = 0;
}

/* An event {"type":type,"sequence_number":N, ...fields (taken)}: the
 * next sequence number is used only when it was appended. */
static enum ts_err
event(struct ts_buf *b, struct openai_resp_stream *s, const char *type,
    json_t *fields)
{
	json_t *o = json_pack("{s:s,s:I}", "type", type, "sequence_number",
	    (json_int_t)s->seq);
	enum ts_err rc;

	if (o == NULL || fields == NULL || json_object_update(o, fields) != 0) {
		json_decref(o);
		json_decref(fields);
		return TS_EINVAL;
	}
	json_decref(fields);
	rc = emit(b, o, type);
	if (rc == TS_OK)
		s->seq++;
	return rc;
}

/* {"item_id","output_index":0,"content_index":0} and more */
static json_t *
at_part(const struct openai_resp_stream *s)
{
	char resp[40], msg[40];

	ids(&s->meta, resp, msg, sizeof(msg));
	return json_pack("{s:s,s:i,s:i}", "item_id", msg, "output_index",
	    msg_index(&s->meta), "content_index", 0);
}

enum ts_err
openai_resp_encode_start_calls(struct ts_buf *b,
    struct openai_resp_stream *s)
{
	size_t start = b->len;
	uint64_t seq = s->seq;
	enum ts_err rc;

	if ((rc = event(b, s, "response.created", put(json_object(),
	    "response", response_json(&s->meta, ST_IN_PROGRESS, json_array(),
	    NULL, 0)))) != TS_OK ||
	    (rc = event(b, s, "response.in_progress", put(json_object(),
	    "response", response_json(&s->meta, ST_IN_PROGRESS, json_array(),
	    NULL, 0)))) != TS_OK) {
		b->len = start;
		s->seq = seq;
	}
	return rc;
}

static enum ts_err msg_added(struct ts_buf *b, struct openai_resp_stream *s);

enum ts_err
openai_resp_encode_start(struct ts_buf *b, struct openai_resp_stream *s)
{
	size_t start = b->len;
	uint64_t seq = s->seq;
	enum ts_err rc;

	if ((rc = openai_resp_encode_start_calls(b, s)) != TS_OK ||
	    (rc = msg_added(b, s)) != TS_OK) {
		b->len = start;
		s->seq = seq;
	}
	return rc;
}

/* The message's response.output_item.added and
 * response.content_part.added. */
static enum ts_err
msg_added(struct ts_buf *b, struct openai_resp_stream *s)
{
	size_t start = b->len;
	uint64_t seq = s->seq;
	enum ts_err rc;

	if ((rc = event(b, s, "response.output_item.added", put(json_pack(
	    "{s:i}", "output_index", msg_index(&s->meta)), "item",
	    message_item(&s->meta, ST_IN_PROGRESS, NULL, 0)))) != TS_OK ||
	    (rc = event(b, s, "response.content_part.added", put(at_part(s),
	    "part", text_part("", 0)))) != TS_OK) {
		b->len = start;
		s->seq = seq;
	}
	return rc;
}

/* {"item_id":"rs_<id>","output_index":0} and, with a summary,
 * "summary_index":0, else "content_index":0 */
static json_t *
at_reasoning(const struct openai_resp_stream *s)
{
	const char *pre = s->meta.id_prefix ? s->meta.id_prefix : "";
	char id[48];

	snprintf(id, sizeof(id), "rs_%s%llu", pre,
	    (unsigned long long)s->meta.id);
	return json_pack("{s:s,s:i,s:i}", "item_id", id, "output_index", 0,
	    s->meta.summary != NULL ? "summary_index" : "content_index", 0);
}

enum ts_err
openai_resp_encode_start_reasoning(struct ts_buf *b,
    struct openai_resp_stream *s)
{
	size_t start = b->len;
	uint64_t seq = s->seq;
	enum ts_err rc;

	if ((rc = openai_resp_encode_start_calls(b, s)) != TS_OK ||
	    (rc = event(b, s, "response.output_item.added", put(json_pack(
	    "{s:i}", "output_index", 0), "item", reasoning_item(&s->meta,
	    ST_IN_PROGRESS, NULL, 0)))) != TS_OK ||
	    (s->meta.summary != NULL && (rc = event(b, s,
	    "response.reasoning_summary_part.added", put(at_reasoning(s),
	    "part", json_pack("{s:s,s:s}", "type", "summary_text", "text",
	    "")))) != TS_OK)) {
		b->len = start;
		s->seq = seq;
	}
	return rc;
}

enum ts_err
openai_resp_encode_reasoning_delta(struct ts_buf *b,
    struct openai_resp_stream *s, const char *text, size_t len)
{
	return event(b, s, s->meta.summary != NULL ?
	    "response.reasoning_summary_text.delta" :
	    "response.reasoning_text.delta", put(at_reasoning(s), "delta",
	    json_stringn(text, len)));
}

enum ts_err
openai_resp_encode_reasoning_done(struct ts_buf *b,
    struct openai_resp_stream *s, const char *text, size_t len)
{
	size_t start = b->len;
	uint64_t seq = s->seq;
	enum ts_err rc;

	if (s->meta.summary != NULL)
		rc = event(b, s, "response.reasoning_summary_text.done",
		    put(at_reasoning(s), "text", json_stringn(text, len)));
	else
		rc = event(b, s, "response.reasoning_text.done",
		    put(at_reasoning(s), "text", json_stringn(text, len)));
	if (rc == TS_OK && s->meta.summary != NULL)
		rc = event(b, s, "response.reasoning_summary_part.done",
		    put(at_reasoning(s), "part", json_pack("{s:s,s:s%}",
		    "type", "summary_text", "text", text, len)));
	if (rc == TS_OK)
		rc = event(b, s, "response.output_item.done", put(json_pack(
		    "{s:i}", "output_index", 0), "item", reasoning_item(
		    &s->meta, ST_COMPLETED, text, len)));
	if (rc == TS_OK)
		rc = msg_added(b, s);
	if (rc != TS_OK) {
		b->len = start;
		s->seq = seq;
	}
	return rc;
}

enum ts_err
openai_resp_encode_delta(struct ts_buf *b, struct openai_resp_stream *s,
    const char *text, size_t len)
{
	json_t *f = put(at_part(s), "delta", json_stringn(text, len));

	return event(b, s, "response.output_text.delta", put(f, "logprobs",
	    json_array()));
}

enum ts_err
openai_resp_encode_end(struct ts_buf *b, struct openai_resp_stream *s,
    const char *text, size_t len, enum openai_finish finish,
    const struct openai_usage *u)
{
	const struct openai_resp_meta *m = &s->meta;
	size_t start = b->len;
	uint64_t seq = s->seq;
	enum ts_err rc;

	if ((rc = event(b, s, "response.output_text.done", put(put(at_part(s),
	    "text", json_stringn(text, len)), "logprobs", json_array()))) !=
	    TS_OK ||
	    (rc = event(b, s, "response.content_part.done", put(at_part(s),
	    "part", text_part(text, len)))) != TS_OK ||
	    (rc = event(b, s, "response.output_item.done", put(json_pack(
	    "{s:i}", "output_index", msg_index(m)), "item", message_item(m,
	    final_status(finish), text_part(text, len), 1)))) != TS_OK ||
	    (rc = event(b, s, finish == OPENAI_FINISH_LENGTH ?
	    "response.incomplete" : "response.completed", put(json_object(),
	    "response", response_json(m, final_status(finish),
	    final_output(m, text, len, finish), usage_json(u),
	    finish == OPENAI_FINISH_LENGTH)))) != TS_OK) {
		b->len = start;
		s->seq = seq;
	}
	return rc;
}

enum ts_err
openai_resp_encode_error(struct ts_buf *b, struct openai_resp_stream *s,
    const struct http_error *err, const char *text, size_t len,
    const struct openai_usage *u)
{
	const char *msg = err->message;
	size_t start = b->len;
	uint64_t seq = s->seq;
	json_t *f, *resp, *item;
	enum ts_err rc;

	f = json_pack("{s:s?,s:s}", "code", err->code, "message", msg);
	if (f == NULL) {      /* the message quoted input that is not UTF-8 */
		msg = "the generation failed";
		f = json_pack("{s:s?,s:s}", "code", err->code, "message", msg);
	}
	rc = event(b, s, "error", put(f, "param", err->param[0] != '\0' ?
	    json_string(err->param) : json_null()));
	if (rc != TS_OK)
		return rc;
	item = message_item(&s->meta, ST_INCOMPLETE, text_part(text, len), 1);
	resp = response_json(&s->meta, "failed", item ? json_pack("[o]",
	    item) : NULL, usage_json(u), 0);
	/* the response's error code is one of OpenAI's ResponseErrorCode
	 * values: ours are server errors; the error event above has the
	 * precise code */
	resp = put(resp, "error", json_pack("{s:s,s:s}", "code",
	    "server_error", "message", msg));
	if ((rc = event(b, s, "response.failed", put(json_object(),
	    "response", resp))) != TS_OK) {
		b->len = start;
		s->seq = seq;
	}
	return rc;
}

/* ---- function calls ---------------------------------------------------- */

/* {"type":"function_call","id":"fc_<id>_<i>","call_id","name",
 * "arguments","status"} */
static json_t *
call_item(const struct openai_resp_meta *m, uint32_t i,
    const struct openai_tool_call *c, const char *args, size_t len,
    const char *status)
{
	char id[48];

	snprintf(id, sizeof(id), "fc_%s%llu_%u", m->id_prefix ? m->id_prefix :
	    "", (unsigned long long)m->id, i);
	return json_pack("{s:s,s:s,s:s,s:s,s:s%,s:s}", "type",
	    "function_call", "id", id, "call_id", c->id, "name", c->name,
	    "arguments", args, len, "status", status);
}

static json_t *
calls_output(const struct openai_resp_meta *m,
    const struct openai_tool_call *c, size_t n, enum openai_finish f)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n && a != NULL; i++) {
		json_t *it = call_item(m, (uint32_t)i, &c[i], c[i].args,
		    c[i].args_len, final_status(f));

		if (it == NULL || json_array_append_new(a, it) != 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

enum ts_err
openai_resp_encode_calls(struct ts_buf *b, const struct openai_resp_meta *m,
    const struct openai_tool_call *calls, size_t n,
    enum openai_finish finish, const struct openai_usage *u)
{
	return emit(b, response_json(m, final_status(finish),
	    calls_output(m, calls, n, finish), usage_json(u),
	    finish == OPENAI_FINISH_LENGTH), NULL);
}

/* {"item_id":"fc_<id>_<i>","output_index":i} */
static json_t *
at_call(const struct openai_resp_stream *s, uint32_t i)
{
	char id[48];

	snprintf(id, sizeof(id), "fc_%s%llu_%u", s->meta.id_prefix ?
	    s->meta.id_prefix : "", (unsigned long long)s->meta.id,
	    i);
	return json_pack("{s:s,s:i}", "item_id", id, "output_index", (int)i);
}

enum ts_err
openai_resp_encode_call_added(struct ts_buf *b, struct openai_resp_stream *s,
    uint32_t i, const struct openai_tool_call *c)
{
	return event(b, s, "response.output_item.added", put(json_pack(
	    "{s:i}", "output_index", (int)i), "item", call_item(&s->meta, i, c,
	    "", 0, ST_IN_PROGRESS)));
}

enum ts_err
openai_resp_encode_call_delta(struct ts_buf *b, struct openai_resp_stream *s,
    uint32_t i, const char *frag, size_t len)
{
	return event(b, s, "response.function_call_arguments.delta",
	    put(at_call(s, i), "delta", json_stringn(frag, len)));
}

enum ts_err
openai_resp_encode_call_done(struct ts_buf *b, struct openai_resp_stream *s,
    uint32_t i, const struct openai_tool_call *c, enum openai_finish f)
{
	size_t start = b->len;
	uint64_t seq = s->seq;
	enum ts_err rc;

	if ((rc = event(b, s, "response.function_call_arguments.done",
	    put(at_call(s, i), "arguments", json_stringn(c->args,
	    c->args_len)))) != TS_OK ||
	    (rc = event(b, s, "response.output_item.done", put(json_pack(
	    "{s:i}", "output_index", (int)i), "item", call_item(&s->meta, i, c,
	    c->args, c->args_len, final_status(f))))) != TS_OK) {
		b->len = start;
		s->seq = seq;
	}
	return rc;
}

enum ts_err
openai_resp_encode_end_calls(struct ts_buf *b, struct openai_resp_stream *s,
    const struct openai_tool_call *calls, size_t n,
    enum openai_finish finish, const struct openai_usage *u)
{
	const struct openai_resp_meta *m = &s->meta;

	return event(b, s, finish == OPENAI_FINISH_LENGTH ?
	    "response.incomplete" : "response.completed", put(json_object(),
	    "response", response_json(m, final_status(finish),
	    calls_output(m, calls, n, finish), usage_json(u),
	    finish == OPENAI_FINISH_LENGTH)));
}
