/*
 * ollama/encode.h - Ollama's API answers (ollama/ollama docs/api.md; the
 * npm client's types, ollama 0.6.4 dist/browser.d.ts: ChatResponse,
 * GenerateResponse, ToolCall, ListResponse, ModelResponse, ShowResponse,
 * VersionResponse, ErrorResponse), written into a caller's buffer. No
 * I/O.
 *
 * A stream is NDJSON (application/x-ndjson): one JSON object per line,
 * each ending in "\n", as Ollama writes them. The objects of a stream
 * are written straight into the buffer (a token's object costs its
 * bytes, no jansson tree); the keys are in the order of Ollama's Go
 * structs (api.ChatResponse: model, created_at, message, done_reason,
 * done, then the metrics; api.GenerateResponse: model, created_at,
 * response, done, done_reason, then the metrics), compact.
 */
#ifndef TS_OLLAMA_ENCODE_H
#define TS_OLLAMA_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ts.h"
#include "ollama/parse.h"
#include "proto/http_error.h"

/* The Content-Type of a stream (Ollama's). */
#define OLLAMA_NDJSON_TYPE "application/x-ndjson"

/* Why a generation ended: Ollama's done_reason. */
enum ollama_done {
	OLLAMA_DONE_STOP,       /* "stop": EOS or a stop string */
	OLLAMA_DONE_LENGTH,     /* "length": num_predict reached */
	OLLAMA_DONE_LOAD        /* "load": no messages or prompt, nothing
				 * generated (docs/api.md "Load a model") */
};

/* What every object of a response names. */
struct ollama_meta {
	enum ollama_kind kind;
	const char *model;      /* as the request named it (model, len) */
	size_t model_len;
};

/* The final object's metrics (docs/api.md: durations in nanoseconds). */
struct ollama_stats {
	enum ollama_done done;
	int64_t total_ns;           /* arrival to the end */
	int64_t load_ns;            /* arrival to a slot: the queue */
	uint64_t prompt_eval_count; /* prompt tokens */
	int64_t prompt_eval_ns;     /* the prefill: slot to first token */
	uint64_t eval_count;        /* tokens generated */
	int64_t eval_ns;            /* the decode: first token to the end */
};

/* One tool call: its function's name and its arguments, the text of a
 * JSON object (copied as it is: the caller checks it is one). */
struct ollama_call {
	const char *name;
	size_t name_len;
	const char *args;
	size_t args_len;
};

/*
 * Writes the time unix_ns (ns since the Unix epoch, UTC) in RFC 3339
 * with nanoseconds, as Go's time.Time marshals it (time.RFC3339Nano:
 * "2023-08-04T19:22:45.499127Z", the fraction's trailing zeros dropped,
 * no fraction when it is zero), into buf (at least 40 bytes),
 * NUL-terminated. Returns its length.
 */
size_t ollama_time(int64_t unix_ns, char *buf, size_t cap);

/* The name of a done_reason ("stop", "length", "load"). */
const char *ollama_done_name(enum ollama_done d);

/*
 * Appends one object of a stream and its newline: chat
 * {"model","created_at","message":{"role":"assistant","content":TEXT},
 * "done":false}, generate {"model","created_at","response":TEXT,
 * "done":false}. now_ns: created_at (Unix ns). TS_ELIMIT when b is full
 * (b is then as it was).
 */
enum ts_err ollama_encode_chunk(struct ts_buf *b, const struct ollama_meta *m,
    int64_t now_ns, const char *text, size_t len);

/*
 * Appends one object of thinking (think: true; text/think.h) and its
 * newline, as Ollama streams a thinking model's (api.Message.Thinking,
 * api.GenerateResponse.Thinking; the npm client's Message.thinking and
 * GenerateResponse.thinking): chat {"model","created_at","message":{
 * "role":"assistant","content":"","thinking":TEXT},"done":false},
 * generate {"model","created_at","response":"","thinking":TEXT,
 * "done":false}. TS_ELIMIT when b is full.
 */
enum ts_err ollama_encode_thinking_chunk(struct ts_buf *b,
    const struct ollama_meta *m, int64_t now_ns, const char *text,
    size_t len);

/*
 * Appends a chat stream's object of tool calls and its newline:
 * {"model","created_at","message":{"role":"assistant","content":"",
 * "tool_calls":[{"function":{"name","arguments":{...}}}, ...]},
 * "done":false} (Ollama streams a model's calls as one object once they
 * are whole). TS_ELIMIT when b is full.
 */
enum ts_err ollama_encode_calls_chunk(struct ts_buf *b,
    const struct ollama_meta *m, int64_t now_ns,
    const struct ollama_call *calls, size_t n);

/*
 * Appends the final object and its newline: done true, done_reason and
 * the metrics of st; its message's content (chat) or response (generate)
 * is (text, len): "" for a stream, the whole answer otherwise, with the
 * calls (chat; n may be 0) in message.tool_calls. TS_ELIMIT when b is
 * full.
 */
enum ts_err ollama_encode_final(struct ts_buf *b, const struct ollama_meta *m,
    int64_t now_ns, const char *text, size_t len,
    const struct ollama_call *calls, size_t n,
    const struct ollama_stats *st);

/* ... with a whole answer's thinking (think, think_len) (think: true;
 * NULL: none) in message.thinking (chat) or thinking (generate), after
 * the content or response as Ollama's Go structs order them. */
enum ts_err ollama_encode_final_think(struct ts_buf *b,
    const struct ollama_meta *m, int64_t now_ns, const char *text,
    size_t len, const char *think, size_t think_len,
    const struct ollama_call *calls, size_t n,
    const struct ollama_stats *st);

/*
 * Appends Ollama's error body {"error":"MESSAGE"} for err (compact, no
 * newline): the answer of a refused request with err->status, and the
 * last line of a stream that failed after it began. A message that is
 * not UTF-8 is replaced by "invalid request".
 */
enum ts_err ollama_error_json(const struct http_error *err, struct ts_buf *b);

/* What tokstream says of the model it serves (GET /api/tags, /api/ps,
 * POST /api/show). */
struct ollama_model_info {
	const char *family;         /* the backend's name: "sim", "llama" */
	const char *format;         /* "gguf" in Ollama; tokstream's own */
	const char *parameter_size; /* "" when unknown */
	const char *quantization;   /* "" when unknown */
	int64_t modified_ns;        /* the server's start, Unix ns */
	uint64_t size;              /* bytes, 0 when unknown */
	uint32_t context_length;    /* tokens */
	const char *template_text;  /* the chat template */
};

/*
 * Appends {"models":[...]} of GET /api/tags (ps = 0: name, model,
 * modified_at, size, digest, details) or GET /api/ps (ps = 1: name,
 * model, size, digest, details, expires_at, size_vram, context_length;
 * expires_ns the Unix ns it expires at, never for a server that keeps
 * its model: far in the future, as Ollama shows keep_alive -1), one
 * entry per served name (names[0..n); each name gets ":latest" when it
 * has no tag, as Ollama lists them). The digest is 64 hex digits made
 * from the name (tokstream has no blob). TS_ELIMIT when b is full,
 * TS_ENOMEM.
 */
enum ts_err ollama_encode_models(struct ts_buf *b, const char *const *names,
    size_t n, const struct ollama_model_info *mi, int ps, int64_t expires_ns);

/*
 * Appends POST /api/show's answer for the model: license, modelfile,
 * parameters, template, details, model_info (general.architecture,
 * general.parameter_count, <family>.context_length), capabilities
 * (["completion", "tools"]), modified_at. TS_ELIMIT, TS_ENOMEM.
 */
enum ts_err ollama_encode_show(struct ts_buf *b, const char *name,
    const struct ollama_model_info *mi);

/* Appends {"version":"V"} of GET /api/version. */
enum ts_err ollama_encode_version(struct ts_buf *b, const char *version);

#endif /* TS_OLLAMA_ENCODE_H */
