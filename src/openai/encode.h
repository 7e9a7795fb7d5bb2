/*
 * openai/encode.h - encoding the OpenAI-compatible API's answers into a
 * caller's buffer: whole responses, SSE stream chunks, the [DONE] marker,
 * stream errors, GET /v1/models (OpenAI API reference). No I/O.
 */
#ifndef TS_OPENAI_ENCODE_H
#define TS_OPENAI_ENCODE_H

#include <jansson.h>

#include "openai/openai.h"

/* What every response and chunk of one request carries. */
struct openai_meta {
	enum openai_kind kind;
	uint64_t id;             /* the request id (X-Request-Id): the
				  * response id is "cmpl-<id>" or
				  * "chatcmpl-<id>", decimal */
	int64_t created;         /* unix time in seconds */
	const char *model;       /* borrowed for each call; UTF-8 */
	size_t model_len;
	const char *id_prefix;   /* before the id: "NAME-" on a named
				  * server (--instance), NULL or "" */
	const char *reasoning_field; /* chat: the thinking's field in a
				  * delta and a message, "reasoning"
				  * (vLLM's) or "reasoning_content"
				  * (DeepSeek's); NULL: "reasoning" */
};

/* Token counts; total_tokens is their sum. cached_tokens (of
 * prompt_tokens, found in the prefix cache) is sent as
 * prompt_tokens_details.cached_tokens (input_tokens_details on
 * /v1/responses), as OpenAI reports it. */
struct openai_usage {
	uint32_t prompt_tokens;
	uint32_t completion_tokens;
	uint32_t cached_tokens;
	/* of completion_tokens, the thinking's (text/think.h), sent as
	 * completion_tokens_details.reasoning_tokens (the SDK's
	 * CompletionUsage, resources/completions.d.ts) when `reasoning`
	 * (the request thinks), and as /v1/responses'
	 * output_tokens_details.reasoning_tokens always */
	uint32_t reasoning_tokens;
	int reasoning;
};

/* One tool call of an answer (chat): its arguments are JSON text. */
struct openai_tool_call {
	const char *id;          /* "call_...", NUL-terminated */
	const char *name;        /* the function's, NUL-terminated */
	const char *args;        /* (args, args_len): UTF-8 */
	size_t args_len;
};

/* One candidate token of a logprobs list: its text (any bytes: a piece of
 * a UTF-8 character too) and its logprob (natural log, <= 0). */
struct openai_lp_entry {
	const char *text;
	size_t len;
	double logprob;
};

/* One generated token's logprobs: the token and its top alternatives,
 * and (completions) its offset in the text, bytes. */
struct openai_lp_token {
	struct openai_lp_entry tok;
	const struct openai_lp_entry *top;
	size_t ntop;
	size_t text_offset;
};

/*
 * Where the encoders read a choice's logprobs, one token at a time, so
 * that no list or tree of every token is built: get(ctx, i, t) fills *t
 * for token i of [0, n), its top pointing at storage of the source's
 * own that stays valid until the next call. The encoders call it for i
 * = 0, 1, ..., n - 1 in order, once per array they write (the
 * completions object has four).
 */
struct openai_lp_src {
	size_t n;
	void (*get)(void *ctx, size_t i, struct openai_lp_token *t);
	void *ctx;
};

/* A source over an array t[0..n) (borrowed), for tests and tools. */
void openai_lp_src_array(struct openai_lp_src *src,
    const struct openai_lp_token *t, size_t n);

/*
 * Appends the "logprobs" object of a choice for the tokens of src
 * (OpenAI API reference), written directly as compact JSON, byte for
 * byte what jansson would dump for the same tree: chat {"content":
 * [{"token","logprob","bytes":[...],"top_logprobs":[{"token","logprob",
 * "bytes"}...]}],"refusal":null}; completions {"tokens":[...],
 * "token_logprobs":[...],"top_logprobs":[{TOKEN: logprob, ...}],
 * "text_offset":[...]}, where a TOKEN given twice is written once, at its
 * first place with its last logprob, and a key ends at a NUL byte (as
 * jansson's object keys do). A token whose text is not UTF-8 (a byte of
 * a character) is written as OpenAI does, "bytes:\\xe2\\x80" with its
 * real bytes in "bytes". TS_EINVAL for a logprob that is not finite;
 * TS_ELIMIT when b's limit would be exceeded; nothing appended then.
 */
enum ts_err openai_encode_logprobs(struct ts_buf *b, enum openai_kind kind,
    const struct openai_lp_src *src);

/* What a choice carries beyond its text, for the _x encoders: NULL
 * members (0 counts) are sent as OpenAI sends their absence. */
struct openai_extra {
	const struct openai_lp_src *logprobs;  /* borrowed; NULL: null */
	const struct openai_tool_call *calls;  /* chat: message.tool_calls
				  * with content null */
	size_t ncalls;
	const char *reasoning;   /* chat: the thinking, message.reasoning
				  * (meta.reasoning_field); NULL: none */
	size_t reasoning_len;
};

/*
 * For the encoders (here and responses.h): sets o[key] = v, taking v's
 * reference; when either is NULL or the set fails, drops both and
 * returns NULL, so a chain of calls fails as one. Returns o or NULL.
 */
json_t *openai_json_set(json_t *o, const char *key, json_t *v);

/* "stop", "length" or "tool_calls". */
const char *openai_finish_reason(enum openai_finish f);

/*
 * Encoders. Each appends compact JSON to *b, written directly with
 * jansson's escapes and number formats (the bytes json_dumps(JSON_COMPACT)
 * gives for the same tree, without the tree: a token's chunk or a whole
 * answer costs its bytes, not a tree of its parts), and returns TS_OK;
 * TS_EINVAL for text or a model name that is not UTF-8 (or a logprob
 * that is not finite); TS_ELIMIT when b's limit would be exceeded. On
 * any error nothing is appended. (openai_encode_models, _model and the
 * stream error still build with jansson: they carry no tokens.)
 */

/*
 * The whole (stream false) answer for generated (text, len):
 * completions {"id","object":"text_completion","created","model",
 * "choices":[{"index":0,"text","logprobs":null,"finish_reason"}],
 * "usage":{"prompt_tokens","completion_tokens","total_tokens"}}; chat
 * {"id","object":"chat.completion","created","model","choices":[{"index":
 * 0,"message":{"role":"assistant","content","refusal":null},
 * "logprobs":null,"finish_reason"}],"usage":{...}}. No trailing newline.
 */
enum ts_err openai_encode_response(struct ts_buf *b,
    const struct openai_meta *m, const char *text, size_t len,
    enum openai_finish finish, const struct openai_usage *u);
/* One choice of a whole answer (n > 1). */
struct openai_choice {
	const char *text;
	size_t len;
	enum openai_finish finish;
	struct openai_extra x;
};

/* The whole answer with n choices (indexes 0..n-1); usage is the
 * response's (completion tokens of every choice). */
enum ts_err openai_encode_response_n(struct ts_buf *b,
    const struct openai_meta *m, const struct openai_choice *c, size_t n,
    const struct openai_usage *u);

/* ... with the choice's logprobs and tool calls (x may be NULL). */
enum ts_err openai_encode_response_x(struct ts_buf *b,
    const struct openai_meta *m, const char *text, size_t len,
    enum openai_finish finish, const struct openai_usage *u,
    const struct openai_extra *x);

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
	uint32_t index;          /* the choice the chunks are for (n > 1:
				  * the caller sets it, and role_sent,
				  * per choice); 0 after init */
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
/* ... with that chunk's tokens' logprobs (NULL: null). */
enum ts_err openai_encode_chunk_lp(struct ts_buf *b, struct openai_stream *s,
    const char *text, size_t len, const struct openai_lp_src *logprobs);

/*
 * A chat chunk of tool call `index`: its first ({"index","id","type":
 * "function","function":{"name","arguments":""}} when `id` is not NULL,
 * then the fragment in a chunk of its own) or a fragment of its
 * arguments ({"index","function":{"arguments"}}), as OpenAI streams
 * them; the stream's first delta also has "role":"assistant" and
 * "content":null. logprobs NULL: null.
 */
enum ts_err openai_encode_tool_delta(struct ts_buf *b,
    struct openai_stream *s, uint32_t index, const char *id,
    const char *name, const char *frag, size_t frag_len,
    const struct openai_lp_src *logprobs);

enum ts_err openai_encode_chunk(struct ts_buf *b, struct openai_stream *s,
    const char *text, size_t len);

/*
 * A chat chunk of thinking: its delta {"reasoning":TEXT} (the field
 * meta.reasoning_field names: vLLM's DeltaMessage.reasoning, DeepSeek's
 * reasoning_content), the stream's first with "role":"assistant" and
 * "content":null before it; logprobs NULL: null.
 */
enum ts_err openai_encode_reasoning_chunk(struct ts_buf *b,
    struct openai_stream *s, const char *text, size_t len,
    const struct openai_lp_src *logprobs);

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
	const char *chat_template; /* the template in use; NULL: omitted */
	const char *chat_template_source; /* "model", "file", "tokstream";
				  * NULL: omitted */
	json_t *model_meta;      /* more fields of the tokstream object
				  * (the llama backend's model: format,
				  * eos_token_ids, generation_defaults...;
				  * borrowed); NULL: none */
	json_t *latency_profile; /* the latency profile in use (borrowed,
				  * engine/profile.h's shape); NULL: omitted
				  * (a physical backend takes its own time) */
};

/*
 * GET /v1/models: {"object":"list","data":[MODEL...]}, one model object
 * per name of names[0..n) (each described by m, whose id is ignored),
 * where a model object is {"id","object":"model","created","owned_by":
 * "tokstream"[,"max_model_len"][,"tokstream":{["backend"]
 * [,"chat_template"][,"latency_profile"]}]}. Extra fields are allowed by the OpenAI clients.
 * No trailing newline. TS_EINVAL if a name is not UTF-8.
 */
enum ts_err openai_encode_models(struct ts_buf *b,
    const struct openai_model_info *m, const char *const *names, size_t n);

/* GET /v1/models/{model}: the model object of m alone (OpenAI API
 * reference, "Retrieve model"). No trailing newline. */
enum ts_err openai_encode_model(struct ts_buf *b,
    const struct openai_model_info *m);

/*
 * The ids of a prompt for POST /tokenize: n ids, the context length, and
 * (text NULL: not asked) the text of each id, borrowed while encoding.
 */
struct openai_tokens {
	const uint32_t *ids;
	size_t n;
	uint64_t max_model_len;
	const char *(*text)(void *ctx, uint32_t id, size_t *len);
	void *ctx;
};

/*
 * POST /tokenize's answer, vLLM's TokenizeResponse
 * (vllm/entrypoints/serve/tokenize/protocol.py; before its move,
 * vllm/entrypoints/openai/protocol.py): {"count","max_model_len",
 * "tokens":[ids],"token_strs":[strings] or null}, token_strs null when
 * not asked, as vLLM's model_dump() writes the unset field. A token's
 * text that is not UTF-8 (a byte token of a character cut in two) is
 * written in the "bytes:\xNN" form the logprobs use. No trailing
 * newline; TS_ELIMIT when b is full.
 */
enum ts_err openai_encode_tokenize(struct ts_buf *b,
    const struct openai_tokens *t);

/* The most bytes openai_encode_tokenize writes for n ids whose texts are
 * text_bytes long in all, with token_strs (strs 1) or without. */
size_t openai_tokenize_bound(size_t n, size_t text_bytes, int strs);

/* POST /detokenize's answer, vLLM's DetokenizeResponse: {"prompt":text}.
 * TS_EINVAL when (text, len) is not UTF-8; TS_ELIMIT when b is full. */
enum ts_err openai_encode_detokenize(struct ts_buf *b, const char *text,
    size_t len);

#endif /* TS_OPENAI_ENCODE_H */
