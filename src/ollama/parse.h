/*
 * ollama/parse.h - Ollama's API requests: POST /api/chat and POST
 * /api/generate (ollama/ollama docs/api.md, "Generate a chat completion"
 * and "Generate a completion"; the npm client's types, ollama 0.6.4
 * dist/browser.d.ts: ChatRequest, GenerateRequest, Message, Tool,
 * Options), parsed into what the engine runs. No I/O.
 *
 * Taken: model (required), messages (chat: role system, user, assistant
 * or tool; content; tool_calls of an assistant turn, whose arguments are
 * an object), prompt, system, raw (generate), stream (default true),
 * format ("json" or a JSON Schema object), tools (chat: {type:
 * "function", function: {name, description, parameters}}), options
 * (num_predict, temperature, top_p, seed, stop; top_k, num_ctx and the
 * rest of Options are accepted and ignored), keep_alive (a duration
 * string or a number of seconds: accepted, ignored), think (a boolean or
 * "high", "medium", "low": text/think.h's efforts; true is medium), the
 * lab knobs (prefill_ms, tpot_ms, error_after: proto/knobs.h). Images,
 * suffix, template, context and logprobs are accepted and ignored.
 *
 * Errors are Ollama's: a status and a message for {"error": "..."}
 * (ollama_error_json): 400 for a malformed request, 404 `model "x" not
 * found, try pulling it first` for a model that is not served.
 */
#ifndef TS_OLLAMA_PARSE_H
#define TS_OLLAMA_PARSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ts.h"
#include "jsonschema/schema_gen.h"
#include "proto/chat.h"
#include "proto/http_error.h"
#include "proto/knobs.h"
#include "text/stop.h"
#include "text/think.h"

#define OLLAMA_DEFAULT_NUM_PREDICT 256  /* num_predict absent: tokstream's
					 * choice (Ollama's is -1, no cap) */
#define OLLAMA_MAX_MESSAGES 256         /* messages per request */
#define OLLAMA_MAX_TOOLS 128            /* tools per request */
#define OLLAMA_MAX_TOOL_NAME 64         /* a function name's bytes */
#define OLLAMA_MAX_STOP STOP_MAX        /* stop strings */

enum ollama_kind {
	OLLAMA_CHAT,            /* POST /api/chat */
	OLLAMA_GENERATE         /* POST /api/generate */
};

enum ollama_format {
	OLLAMA_FORMAT_TEXT,     /* no format */
	OLLAMA_FORMAT_JSON,     /* "json": an object of tokstream's schema */
	OLLAMA_FORMAT_SCHEMA    /* a JSON Schema */
};

/* One tool of a chat request: names borrowed from the request's root. */
struct ollama_tool {
	const char *name;
	size_t name_len;
	const json_t *parameters;     /* the schema, or NULL: {} */
	struct schema_gen *compiled;  /* parameters compiled (parse time) */
};

/* A parsed request. Strings are borrowed from root (owned), the rendered
 * messages' contents from msg_text. Free with ollama_request_free. */
struct ollama_request {
	enum ollama_kind kind;
	json_t *root;
	const char *model;            /* as the client named it */
	size_t model_len;
	struct chat_msg *msgs;        /* chat: the messages, a system
				       * message first for generate's system */
	size_t n_msgs;
	struct ts_buf msg_text;       /* assistant turns with tool_calls:
				       * content + "\n" + the calls' JSON */
	const char *prompt;           /* generate */
	size_t prompt_len;
	const char *system;           /* generate's system, or NULL */
	size_t system_len;
	int raw;                      /* generate: the prompt as it is */
	int stream;                   /* default 1 */
	uint32_t num_predict;         /* tokens at most */
	double temperature;           /* default 0.8 (Ollama's) */
	double top_p;                 /* default 0.9 (Ollama's) */
	uint32_t top_k;               /* options.top_k; 0: none */
	unsigned sampling_given;      /* ENGINE_GIVEN_* of the three */
	int has_seed;
	int64_t seed;
	const char *stop[OLLAMA_MAX_STOP];
	size_t stop_len[OLLAMA_MAX_STOP];
	size_t n_stop;
	enum ollama_format format;
	json_t *format_schema;        /* a reference; NULL for text */
	struct schema_gen *format_compiled;
	struct ollama_tool *tools;    /* n_tools of them (chat) */
	size_t n_tools;
	char *tools_json;             /* the tools array, compact (template) */
	int last_is_tool;             /* the last message is a tool result */
	int think;                    /* think was true or a level */
	enum think_effort effort;     /* think: true medium, false none, a
				       * level its own; absent UNSET */
	struct knobs knobs;
	uint64_t schema_steps;        /* what is left of the schema budget */
};

/*
 * Parses a request body (body, len) of kind `kind` into *req, checking
 * the model against the served names (names[0..n), each also answered
 * with ":latest" appended). TS_OK, or TS_EINVAL with *err (status and
 * message; ollama_error_json writes its body) and *req freed.
 */
enum ts_err ollama_parse_request(enum ollama_kind kind, const char *body,
    size_t len, const char *const *names, size_t n, struct ollama_request
    *req, struct http_error *err);

/*
 * 1 when (name, len) names one of names[0..n): exactly, or a served name
 * with ":latest" added or taken off (Ollama's default tag).
 */
int ollama_model_known(const char *name, size_t len,
    const char *const *names, size_t n);

/* Sets *err to Ollama's 404 for a model it does not have:
 * `model "NAME" not found, try pulling it first`. */
void ollama_model_not_found(struct http_error *err, const char *name,
    size_t len);

/*
 * Appends the prompt of a parsed request to b with the chat template
 * (proto/chat.h): chat, its tools (chat_render_tools) and messages;
 * generate, its system message and the prompt as a user message, or a
 * raw prompt as it is. TS_ELIMIT when b is full (nothing appended).
 */
enum ts_err ollama_prompt(const struct ollama_request *req,
    struct ts_buf *b);

/* Frees what req owns (its compiled schemas too); accepts a zeroed one. */
void ollama_request_free(struct ollama_request *req);

/* Frees the compiled schemas only, once the answer is planned. */
void ollama_request_drop_schemas(struct ollama_request *req);

#endif /* TS_OLLAMA_PARSE_H */
