/*
 * openai/responses.h - the OpenAI Responses API's wire format for text
 * output (OpenAI API reference, "Responses": the response object, and
 * the streaming events response.created, response.in_progress,
 * response.output_item.added, response.content_part.added,
 * response.output_text.delta ... response.output_text.done,
 * response.content_part.done, response.output_item.done, then
 * response.completed or response.incomplete; for a failure mid-stream
 * "error" then response.failed). Every streamed event is an SSE event with an `event:` line
 * naming its type and a `sequence_number` counting from 0; the stream
 * ends with the final event, without `data: [DONE]` (as OpenAI's).
 * Parsing is parse.h's (OPENAI_RESPONSES). No I/O.
 */
#ifndef TS_OPENAI_RESPONSES_H
#define TS_OPENAI_RESPONSES_H

#include "openai/encode.h"
#include "openai/openai.h"

/* What a response echoes of its request, and its ids. */
struct openai_resp_meta {
	uint64_t id;             /* the request id: "resp_<id>", "msg_<id>" */
	const char *id_prefix;   /* before the id: "NAME-" on a named
				  * server (--instance), NULL or "" */
	int64_t created_at;      /* unix time in seconds */
	const char *model;       /* the served model's name (borrowed) */
	size_t model_len;
	const char *instructions; /* borrowed; NULL: null */
	size_t instructions_len;
	uint32_t max_output_tokens; /* tokens; echoed when has_max_output */
	int has_max_output;
	double temperature;
	double top_p;
	const json_t *tools;     /* the request's tools (borrowed); NULL: [] */
	const json_t *tool_choice; /* borrowed; NULL: "auto" */
	int parallel_tool_calls; /* echoed */
	/* reasoning (text/think.h): the request's effort and summary, echoed
	 * in "reasoning" ({"effort","summary"}: the SDK's Shared.Reasoning;
	 * NULL: null) */
	const char *effort;
	const char *summary;
	/* the answer thinks: a reasoning item {"id":"rs_<id>","type":
	 * "reasoning","summary":[],"content":[{"type":"reasoning_text",
	 * "text"}],"status"} (with summary: "summary":[{"type":
	 * "summary_text","text"}] and no content; the openai SDK's
	 * ResponseReasoningItem, openai 6.49.0 resources/responses/
	 * responses.d.ts) is output 0, the message output 1 */
	int reasoning;
	const char *reasoning_text; /* its whole text at the end (the caller
				  * sets it before the last encode) */
	size_t reasoning_len;
};

/* A streamed response's state. */
struct openai_resp_stream {
	struct openai_resp_meta meta;
	uint64_t seq;            /* sequence_number of the next event */
};

/*
 * The whole (stream false) response object for generated (text, len):
 * {"id":"resp_<id>","object":"response","created_at","status":
 * "completed" (finish stop) or "incomplete" (finish length, with
 * "incomplete_details":{"reason":"max_output_tokens"}),"error":null,
 * "instructions","max_output_tokens","model","output":[{"type":
 * "message","id":"msg_<id>","status","role":"assistant","content":[{
 * "type":"output_text","text","annotations":[],"logprobs":[]}]}],
 * "parallel_tool_calls":true,"previous_response_id":null,"reasoning":{
 * "effort":null,"summary":null},"store":false,"temperature","text":{
 * "format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p",
 * "truncation":"disabled","usage":{"input_tokens","input_tokens_details":
 * {"cached_tokens":0,"cache_write_tokens":0},"output_tokens",
 * "output_tokens_details":{
 * "reasoning_tokens":0},"total_tokens"},"metadata":{}}, usage from u
 * (prompt_tokens are input_tokens). No trailing newline. TS_EINVAL when
 * a string is not UTF-8; nothing is appended on error.
 */
enum ts_err openai_resp_encode(struct ts_buf *b,
    const struct openai_resp_meta *m, const char *text, size_t len,
    enum openai_finish finish, const struct openai_usage *u);

/* Starts a stream's state at sequence number 0. */
void openai_resp_stream_init(struct openai_resp_stream *s,
    const struct openai_resp_meta *m);

/*
 * The events before the first token: response.created and
 * response.in_progress (the response, status "in_progress", no output,
 * usage null), response.output_item.added (the message, status
 * "in_progress", no content) and response.content_part.added (an empty
 * output_text). Nothing is appended on error.
 */
enum ts_err openai_resp_encode_start(struct ts_buf *b,
    struct openai_resp_stream *s);

/* One response.output_text.delta event of (text, len), len > 0. */
enum ts_err openai_resp_encode_delta(struct ts_buf *b,
    struct openai_resp_stream *s, const char *text, size_t len);

/*
 * The events after the last token, (text, len) the whole text streamed:
 * response.output_text.done, response.content_part.done,
 * response.output_item.done, then response.completed or
 * response.incomplete (the whole response, as openai_resp_encode).
 * Nothing is appended (and the sequence is unchanged) on error.
 */
enum ts_err openai_resp_encode_end(struct ts_buf *b,
    struct openai_resp_stream *s, const char *text, size_t len,
    enum openai_finish finish, const struct openai_usage *u);

/*
 * A thinking answer's stream (meta.reasoning): openai_resp_encode_start_
 * reasoning (response.created, response.in_progress, then
 * response.output_item.added of the reasoning item at output_index 0,
 * and with a summary response.reasoning_summary_part.added of an empty
 * summary_text), one openai_resp_encode_reasoning_delta per thinking
 * token (response.reasoning_summary_text.delta with a summary, else
 * response.reasoning_text.delta; ResponseReasoningSummaryTextDeltaEvent,
 * ResponseReasoningTextDeltaEvent in the SDK's responses.d.ts), then
 * openai_resp_encode_reasoning_done with the whole thinking
 * (response.reasoning_summary_text.done and
 * response.reasoning_summary_part.done, or response.reasoning_text.done;
 * response.output_item.done of the completed reasoning item; then the
 * message's response.output_item.added and response.content_part.added at
 * output_index 1), and the message's events as without thinking. Nothing
 * is appended on error.
 */
enum ts_err openai_resp_encode_start_reasoning(struct ts_buf *b,
    struct openai_resp_stream *s);
enum ts_err openai_resp_encode_reasoning_delta(struct ts_buf *b,
    struct openai_resp_stream *s, const char *text, size_t len);
enum ts_err openai_resp_encode_reasoning_done(struct ts_buf *b,
    struct openai_resp_stream *s, const char *text, size_t len);

/*
 * A failure after the stream started, (text, len) what was streamed: an
 * "error" event ({"type":"error","code","message","param",
 * "sequence_number"}), then response.failed (the response with status
 * "failed", "error":{"code":"server_error","message"} (the code one of
 * OpenAI's ResponseErrorCode values), the message item "incomplete"
 * with the text so far, usage from u). The stream ends after it. All or
 * nothing.
 */
enum ts_err openai_resp_encode_error(struct ts_buf *b,
    struct openai_resp_stream *s, const struct http_error *err,
    const char *text, size_t len, const struct openai_usage *u);

/*
 * Function calls (OpenAI API reference, Responses, function calling): an
 * answer of tool calls has one output item per call, {"type":
 * "function_call","id":"fc_<id>_<i>","call_id","name","arguments",
 * "status"}, instead of the message. Whole: openai_resp_encode_calls
 * (status and incomplete_details as openai_resp_encode). Streamed:
 * openai_resp_encode_start_calls (response.created and .in_progress),
 * then per call openai_resp_encode_call_added
 * (response.output_item.added, arguments ""), its
 * response.function_call_arguments.delta events, and
 * openai_resp_encode_call_done (response.function_call_arguments.done
 * and response.output_item.done), then openai_resp_encode_end_calls
 * (response.completed or .incomplete with every call). Nothing is
 * appended on error.
 */
enum ts_err openai_resp_encode_calls(struct ts_buf *b,
    const struct openai_resp_meta *m, const struct openai_tool_call *calls,
    size_t n, enum openai_finish finish, const struct openai_usage *u);
enum ts_err openai_resp_encode_start_calls(struct ts_buf *b,
    struct openai_resp_stream *s);
enum ts_err openai_resp_encode_call_added(struct ts_buf *b,
    struct openai_resp_stream *s, uint32_t i,
    const struct openai_tool_call *c);
enum ts_err openai_resp_encode_call_delta(struct ts_buf *b,
    struct openai_resp_stream *s, uint32_t i, const char *frag, size_t len);
enum ts_err openai_resp_encode_call_done(struct ts_buf *b,
    struct openai_resp_stream *s, uint32_t i,
    const struct openai_tool_call *c, enum openai_finish f);
enum ts_err openai_resp_encode_end_calls(struct ts_buf *b,
    struct openai_resp_stream *s, const struct openai_tool_call *calls,
    size_t n, enum openai_finish finish, const struct openai_usage *u);

#endif /* TS_OPENAI_RESPONSES_H */
