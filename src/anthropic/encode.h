/*
 * anthropic/encode.h - Anthropic Messages API answers, written straight
 * into a caller's buffer (no I/O): the Message object, the stream's
 * named SSE events (message_start, content_block_start,
 * content_block_delta, content_block_stop, message_delta, message_stop,
 * ping, error), count_tokens' answer and the error body. Shapes after
 * @anthropic-ai/sdk's types (resources/messages/messages.d.ts: Message,
 * Usage, TextBlock, ThinkingBlock, ToolUseBlock, RawMessageStreamEvent,
 * RawContentBlockDelta, MessageDeltaUsage, MessageTokensCount;
 * core/error.d.ts and the API's ErrorResponse for errors).
 *
 * Every function appends and returns TS_OK, TS_ELIMIT when b's limit is
 * reached, or TS_EINVAL for a text that is not UTF-8; on error nothing
 * is appended.
 */
#ifndef TS_ANTHROPIC_ENCODE_H
#define TS_ANTHROPIC_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ts.h"
#include "proto/http_error.h"

/* The error type of an HTTP status, as Anthropic names them ("Errors"):
 * 400 invalid_request_error, 401 authentication_error, 403
 * permission_error, 404 not_found_error, 413 request_too_large, 429
 * rate_limit_error, 503 and 529 overloaded_error, other 5xx api_error,
 * other 4xx invalid_request_error. */
const char *anthropic_error_type(int status);

/* {"type":"error","error":{"type":T,"message":M},"request_id":null}
 * (shared.d.ts ErrorResponse): T of err->status. */
enum ts_err anthropic_encode_error(struct ts_buf *b,
    const struct http_error *err);

/* The same as an SSE event "event: error" (an error after the 200). */
enum ts_err anthropic_encode_error_event(struct ts_buf *b,
    const struct http_error *err);

/* stop_reason (StopReason). */
enum anthropic_stop {
	ANTHROPIC_STOP_END_TURN,
	ANTHROPIC_STOP_MAX_TOKENS,
	ANTHROPIC_STOP_SEQUENCE,
	ANTHROPIC_STOP_TOOL_USE
};

/* "end_turn", "max_tokens", "stop_sequence", "tool_use". */
const char *anthropic_stop_name(enum anthropic_stop s);

/* usage (Usage). */
struct anthropic_usage {
	uint32_t input_tokens;          /* the prompt's uncached tokens */
	uint32_t cache_read_input_tokens; /* found in the prefix cache */
	uint32_t cache_creation_input_tokens; /* 0: tokstream's cache has
				       * no writes to bill */
	uint32_t output_tokens;         /* every generated token, thinking
				       * included */
	uint32_t thinking_tokens;       /* of them, the thinking's
				       * (output_tokens_details) */
};

/* What a Message carries apart from its content. */
struct anthropic_meta {
	const char *id;                 /* "msg_..." */
	const char *model;
	size_t model_len;
};

enum anthropic_block_kind {
	ANTHROPIC_BLOCK_TEXT,
	ANTHROPIC_BLOCK_THINKING,
	ANTHROPIC_BLOCK_TOOL_USE
};

/* One content block. text: the text, the thinking, or a tool_use's
 * input (a JSON text; an empty one is {}). */
struct anthropic_block {
	enum anthropic_block_kind kind;
	const char *text;
	size_t len;
	const char *signature;          /* THINKING */
	const char *id;                 /* TOOL_USE: "toolu_..." */
	const char *name;               /* TOOL_USE */
};

/*
 * The Message object: {"id","type":"message","role":"assistant",
 * "model","content":[blocks],"stop_reason","stop_sequence",
 * "stop_details":null,"container":null,"diagnostics":null,"usage"}, the
 * fields messages.d.ts declares non-optional all present (null where
 * tokstream has none); usage with cache_creation zeros,
 * output_tokens_details {thinking_tokens}, server_tool_use null,
 * service_tier "standard", inference_geo and speed null. A text block
 * has no citations field, a tool_use block caller {"type":"direct"}.
 * stop_seq (NULL: null) is the stop sequence that matched. A tool_use
 * block's input is its text when that is one whole JSON value, else {}
 * (a streamed input_json_delta sequence cut by max_tokens).
 */
enum ts_err anthropic_encode_message(struct ts_buf *b,
    const struct anthropic_meta *m, const struct anthropic_block *blocks,
    size_t n, enum anthropic_stop stop, const char *stop_seq,
    size_t stop_seq_len, const struct anthropic_usage *u);

/* event message_start: the Message with no content, stop_reason null,
 * usage with output_tokens 0. */
enum ts_err anthropic_encode_message_start(struct ts_buf *b,
    const struct anthropic_meta *m, const struct anthropic_usage *u);

/* event content_block_start: index, the block empty (text "", thinking
 * "" with signature "", tool_use with input {}). */
enum ts_err anthropic_encode_block_start(struct ts_buf *b, uint32_t index,
    const struct anthropic_block *blk);

/* event content_block_delta of a block of kind k: text_delta {text},
 * thinking_delta {thinking}, input_json_delta {partial_json}. */
enum ts_err anthropic_encode_delta(struct ts_buf *b, uint32_t index,
    enum anthropic_block_kind k, const char *text, size_t len);

/* event content_block_delta with a signature_delta. */
enum ts_err anthropic_encode_signature(struct ts_buf *b, uint32_t index,
    const char *sig);

/* event content_block_stop. */
enum ts_err anthropic_encode_block_stop(struct ts_buf *b, uint32_t index);

/* event message_delta {stop_reason, stop_sequence, stop_details null,
 * container null} with usage (MessageDeltaUsage: the cumulative counts),
 * then event message_stop, with the SSE id line "id: STOP_ID" when
 * stop_id is not NULL (it holds no CR or LF: proto/resume.h's ids). */
enum ts_err anthropic_encode_end(struct ts_buf *b, enum anthropic_stop stop,
    const char *stop_seq, size_t stop_seq_len,
    const struct anthropic_usage *u, const char *stop_id);

/* event ping {"type":"ping"}: the stream's keep-alive. */
enum ts_err anthropic_encode_ping(struct ts_buf *b);

/* count_tokens' answer {"input_tokens":N}. */
enum ts_err anthropic_encode_count(struct ts_buf *b, uint64_t n);

/*
 * An id of Anthropic's form: prefix ("msg_", "toolu_") and 24 characters
 * of [A-Za-z0-9] drawn from seed (digits: of [0-9] only, which the
 * documentation's examples compare as one number); out holds cap bytes,
 * at least the prefix + 25 (else it gets "").
 */
void anthropic_id(const char *prefix, uint64_t seed, int digits, char *out,
    size_t cap);

/* A thinking block's signature, a deterministic hash of its text
 * (FNV-1a 64 mixed into 48 bytes, base64: 64 characters); out holds at
 * least 65 bytes. Not Anthropic's cryptographic signature: it only
 * identifies the text. */
void anthropic_signature(const char *text, size_t len, char *out);

#endif /* TS_ANTHROPIC_ENCODE_H */
