/*
 * openai.h - tokstream's OpenAI-compatible API, as a pure module: parsing
 * the bodies of POST /v1/completions and POST /v1/chat/completions, and
 * encoding their answers (whole responses, SSE stream chunks, the
 * [DONE] marker, errors) and GET /v1/models into a caller's ts_buf. No
 * sockets, no libfcgi, no engine: fcgi_main.c does the I/O and the engine
 * the generation.
 *
 * Wire format: the OpenAI API reference, "Completions" (legacy), "Chat
 * Completions" (create, the chat completion object, the chunk object,
 * stream_options.include_usage) and "Models" (list); vLLM's OpenAI
 * server for the extension ignore_eos, max_completion_tokens beating
 * max_tokens, and model-not-found being a 404. Errors are the OpenAI
 * shape {"error":{"message","type","param","code"}}
 * (http_error_json_openai), with OpenAI's codes: missing_required_parameter,
 * invalid_type, invalid_value, unsupported_value, empty_array,
 * array_above_max_length, string_above_max_length,
 * integer_below_min_value, integer_above_max_value,
 * decimal_below_min_value, decimal_above_max_value, model_not_found; and
 * tokstream's empty_body and invalid_json for a body that is no JSON
 * object.
 */
#ifndef OPENAI_H
#define OPENAI_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "ts.h"

/* Documented limits and defaults (README "OpenAI-compatible API"). */
#define OPENAI_MAX_TOKENS_CAP HTTP_MAX_TOKENS_CAP   /* max_tokens: 8192 */
#define OPENAI_COMPLETIONS_DEFAULT_MAX_TOKENS 16    /* as OpenAI's */
#define OPENAI_CHAT_DEFAULT_MAX_TOKENS 256          /* tokstream's choice */
#define OPENAI_MAX_MESSAGES 256            /* chat messages per request */
#define OPENAI_MAX_CONTENT_PARTS 256       /* text parts per message */
#define OPENAI_MAX_CONTENT_BYTES (1u << 20) /* prompt, or all content */
#define OPENAI_MAX_STOP 4                  /* stop sequences, as OpenAI */
#define OPENAI_MAX_STOP_BYTES 64           /* bytes per stop sequence */

/* Which endpoint a body was sent to. */
enum openai_kind {
	OPENAI_COMPLETIONS,      /* POST /v1/completions */
	OPENAI_CHAT              /* POST /v1/chat/completions */
};

/* A chat message's author. "developer" is parsed as OPENAI_ROLE_SYSTEM
 * (OpenAI's newer name for system instructions). */
enum openai_role {
	OPENAI_ROLE_SYSTEM,
	OPENAI_ROLE_USER,
	OPENAI_ROLE_ASSISTANT
};

/* Why generation ended: "stop" (EOS or a stop sequence), "length"
 * (max_tokens reached). */
enum openai_finish {
	OPENAI_FINISH_STOP,
	OPENAI_FINISH_LENGTH
};

/* One chat message. `content` is the string, or the text parts joined
 * with "\n" (as vLLM joins them); owned by the request. */
struct openai_message {
	enum openai_role role;
	char *content;           /* NUL-terminated; may hold NUL bytes */
	size_t content_len;      /* bytes */
};

/* One stop sequence, 1..OPENAI_MAX_STOP_BYTES bytes; owned. */
struct openai_stop {
	char *s;                 /* NUL-terminated; may hold NUL bytes */
	size_t len;              /* bytes */
};

/*
 * A parsed /v1 request. Owns every pointer in it (free with
 * openai_request_free). After a failed parse every pointer is NULL.
 */
struct openai_request {
	enum openai_kind kind;
	char *model;             /* the served model's name, copied */
	size_t model_len;
	/* OPENAI_COMPLETIONS: the prompt; NULL for chat */
	char *prompt;            /* NUL-terminated; may hold NUL bytes */
	size_t prompt_len;       /* bytes, <= OPENAI_MAX_CONTENT_BYTES */
	/* OPENAI_CHAT: 1..OPENAI_MAX_MESSAGES messages; NULL otherwise */
	struct openai_message *messages;
	size_t n_messages;
	uint32_t max_tokens;     /* tokens: completions 0..8192 (default
				  * 16), chat 1..8192 (default 256) */
	double temperature;      /* [0, 2], default 1 */
	double top_p;            /* (0, 1], default 1 */
	int stream;              /* 1: answer with SSE chunks */
	int include_usage;       /* 1: stream_options.include_usage (only
				  * ever 1 with stream) */
	struct openai_stop stop[OPENAI_MAX_STOP];
	size_t n_stop;           /* 0..OPENAI_MAX_STOP */
	int has_seed;            /* 1: `seed` was given */
	int64_t seed;            /* any int64; 0 without has_seed */
	int ignore_eos;          /* vLLM: 1 = generate max_tokens tokens */
	int32_t prefill_ms;      /* lab knobs as in http.h: -1, or the */
	int32_t tpot_ms;         /* override in ms / the token index of */
	int32_t error_after;     /* an injected error */
};

/* Frees what *r owns and leaves it empty (pointers NULL). Accepts NULL. */
void openai_request_free(struct openai_request *r);

/*
 * Parses the JSON body (body, len) of a request to endpoint `kind`.
 * (model, model_len) is the served model's name (borrowed for the call):
 * "model" must be a string equal to it byte for byte.
 *
 * Fields (null means "not given"; unknown fields are ignored, duplicate
 * keys are an error): model (required), prompt (completions, required: a
 * string or an array of exactly one string), messages (chat, required:
 * 1..256 objects {role: "system"|"developer"|"user"|"assistant",
 * content: string or non-empty array of {"type":"text","text":string}}),
 * max_tokens, max_completion_tokens (chat; wins over max_tokens),
 * temperature, top_p, n (only 1), stream, stream_options
 * ({include_usage}: only with stream true), stop (a string or an array
 * of up to 4; each 1..64 bytes), seed, ignore_eos, and the lab knobs
 * prefill_ms, tpot_ms, error_after with http.h's caps.
 *
 * Checks run in that order, the first failure wins; the model's existence
 * is checked last, so a malformed request is a 400 before it is a 404.
 *
 * Returns TS_OK with *req filled; else *err is filled (answer with
 * err->status and http_error_json_openai) and *req owns nothing:
 * TS_EINVAL for a malformed request (400) or an unknown model (404
 * model_not_found), TS_ELIMIT for a request over one of tokstream's
 * limits (400: OPENAI_MAX_MESSAGES, OPENAI_MAX_CONTENT_PARTS,
 * OPENAI_MAX_CONTENT_BYTES). The caller enforces HTTP_MAX_BODY_BYTES.
 */
enum ts_err openai_parse_request(enum openai_kind kind, const char *body,
    size_t len, const char *model, size_t model_len,
    struct openai_request *req, struct http_error *err);

/*
 * Appends the prompt of a chat request rendered with tokstream's chat
 * template (gen_chat.h, GEN_CHAT_TEMPLATE): for each message
 * "<|ROLE|>\nCONTENT\n" (ROLE system, user or assistant), then the
 * generation prompt "<|assistant|>\n" to start the answer.
 * TS_EINVAL for a request that is not chat; TS_ELIMIT if the buffer's
 * limit would be exceeded (nothing is appended then).
 */
enum ts_err openai_chat_prompt(const struct openai_request *req,
    struct ts_buf *b);

/* What every response and chunk of one request carries. */
struct openai_meta {
	enum openai_kind kind;
	uint64_t id;             /* the request id (X-Request-Id): the
				  * response id is "cmpl-<id>" or
				  * "chatcmpl-<id>", decimal */
	int64_t created;         /* unix time in seconds */
	const char *model;       /* borrowed for each call; UTF-8 */
	size_t model_len;
};

/* Token counts; total_tokens is their sum. */
struct openai_usage {
	uint32_t prompt_tokens;
	uint32_t completion_tokens;
};

/* "stop" or "length". */
const char *openai_finish_reason(enum openai_finish f);

/*
 * Encoders. Each appends compact JSON built by jansson to *b and returns
 * TS_OK; TS_EINVAL for text or a model name that is not UTF-8; TS_ELIMIT
 * when b's limit would be exceeded; TS_ENOMEM if jansson cannot allocate.
 * On any error nothing is appended.
 */

/*
 * The whole (stream false) answer for generated (text, len):
 * completions {"id","object":"text_completion","created","model",
 * "choices":[{"index":0,"text","logprobs":null,"finish_reason"}],
 * "usage":{"prompt_tokens","completion_tokens","total_tokens"}}; chat
 * {"id","object":"chat.completion","created","model","choices":[{"index":
 * 0,"message":{"role":"assistant","content"},"logprobs":null,
 * "finish_reason"}],"usage":{...}}. No trailing newline.
 */
enum ts_err openai_encode_response(struct ts_buf *b,
    const struct openai_meta *m, const char *text, size_t len,
    enum openai_finish finish, const struct openai_usage *u);

/*
 * A stream's state between chunks. Event order: openai_encode_chunk per
 * token, then openai_encode_end (finish chunk, usage chunk when
 * include_usage, [DONE]); or, after an error, openai_encode_stream_error.
 * `meta.model` is borrowed until the stream's last encode.
 */
struct openai_stream {
	struct openai_meta meta;
	int include_usage;       /* every chunk has "usage":null, and a
				  * usage chunk precedes [DONE] */
	int role_sent;           /* chat: the first chunk (with the role)
				  * has been encoded */
};

void openai_stream_init(struct openai_stream *s, const struct openai_meta *m,
    int include_usage);

/*
 * One token's chunk, an SSE event `data: <json>\n\n`. Completions
 * {"id","object":"text_completion","created","model","choices":[{"index":
 * 0,"text","logprobs":null,"finish_reason":null}]}; chat {...,"object":
 * "chat.completion.chunk",...,"choices":[{"index":0,"delta":{"content"},
 * "logprobs":null,"finish_reason":null}]} where the stream's first delta
 * also has "role":"assistant" (before "content"; there is never a
 * role-only chunk). With include_usage, "usage":null follows "choices".
 */
enum ts_err openai_encode_chunk(struct ts_buf *b, struct openai_stream *s,
    const char *text, size_t len);

/*
 * The finish chunk: finish_reason set and an empty text (completions) or
 * an empty delta {} (chat; {"role":"assistant","content":""} when no
 * token chunk came first, so the role is still sent exactly once).
 */
enum ts_err openai_encode_finish(struct ts_buf *b, struct openai_stream *s,
    enum openai_finish finish);

/*
 * With include_usage, the usage chunk {"id","object","created","model",
 * "choices":[],"usage":{...}}; without it, nothing (TS_OK).
 */
enum ts_err openai_encode_usage(struct ts_buf *b,
    const struct openai_stream *s, const struct openai_usage *u);

/* The end of a stream that finished: openai_encode_finish, then
 * openai_encode_usage, then `data: [DONE]\n\n`; all or nothing. */
enum ts_err openai_encode_end(struct ts_buf *b, struct openai_stream *s,
    enum openai_finish finish, const struct openai_usage *u);

/*
 * The end of a stream that failed after it began (the status line is
 * gone): `data: {"error":{"message","type","param","code"}}\n\n` then
 * `data: [DONE]\n\n`; all or nothing. No finish or usage chunk.
 */
enum ts_err openai_encode_stream_error(struct ts_buf *b,
    const struct http_error *err);

/* The served model, as GET /v1/models describes it. */
struct openai_model_info {
	const char *id;          /* model name (borrowed); UTF-8 */
	size_t id_len;
	int64_t created;         /* unix time in seconds */
	uint32_t max_model_len;  /* vLLM's field, in tokens; 0: omitted */
	const char *backend;     /* "sim", ... (borrowed); NULL: omitted */
	const char *chat_template; /* GEN_CHAT_TEMPLATE; NULL: omitted */
};

/*
 * GET /v1/models: {"object":"list","data":[{"id","object":"model",
 * "created","owned_by":"tokstream"[,"max_model_len"][,"tokstream":
 * {["backend"][,"chat_template"]}]}]}. Extra fields are allowed by the
 * OpenAI clients. No trailing newline.
 */
enum ts_err openai_encode_models(struct ts_buf *b,
    const struct openai_model_info *m);

#endif /* OPENAI_H */
