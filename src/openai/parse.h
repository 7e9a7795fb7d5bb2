/*
 * openai/parse.h - parsing the bodies of POST /v1/completions and POST
 * /v1/chat/completions into a struct openai_request (OpenAI API reference;
 * vLLM's extensions). Errors are the OpenAI shape
 * {"error":{"message","type","param","code"}} (http_error_json_openai),
 * with OpenAI's codes: missing_required_parameter, invalid_type,
 * invalid_value, unsupported_value, empty_array, array_above_max_length,
 * string_above_max_length, integer_below_min_value,
 * integer_above_max_value, decimal_below_min_value,
 * decimal_above_max_value, model_not_found; and tokstream's empty_body and
 * invalid_json for a body that is no JSON object. No I/O.
 */
#ifndef TS_OPENAI_PARSE_H
#define TS_OPENAI_PARSE_H

#include <jansson.h>

#include "jsonschema/schema_gen.h"
#include "openai/openai.h"
#include "text/think.h"

/* One chat message. `content` is the string, or the text parts joined
 * with "\n" (as vLLM joins them); owned by the request. */
struct openai_message {
	enum openai_role role;
	char *content;           /* NUL-terminated; may hold NUL bytes */
	size_t content_len;      /* bytes */
};

/* One function the model may call (chat "tools"; the Responses API's
 * flat form too). */
struct openai_tool {
	char *name;              /* [a-zA-Z0-9_-]{1,64}, NUL-terminated */
	size_t name_len;
	json_t *parameters;      /* its JSON Schema (a reference the request
				  * holds), {"type":"object"} if none */
	struct schema_gen *compiled; /* the parameters compiled and checked
				  * (jsonschema/schema_gen.h), for the
				  * plan; NULL: none given, or dropped */
};

/* What "tool_choice" asks. */
enum openai_tool_choice {
	OPENAI_TOOL_AUTO,        /* the model decides (the default) */
	OPENAI_TOOL_NONE,        /* never call */
	OPENAI_TOOL_REQUIRED,    /* call at least one */
	OPENAI_TOOL_NAMED        /* call tool_named */
};

/* What "response_format" asks. */
enum openai_format {
	OPENAI_FORMAT_TEXT,
	OPENAI_FORMAT_JSON_OBJECT,
	OPENAI_FORMAT_JSON_SCHEMA
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
	/* OPENAI_CHAT: 1..OPENAI_MAX_MESSAGES messages; OPENAI_RESPONSES:
	 * the instructions as a system message, then "input" as messages
	 * (a string input is one user message); NULL otherwise */
	struct openai_message *messages;
	size_t n_messages;
	/* OPENAI_RESPONSES: "instructions", echoed in the response object;
	 * NULL when not given */
	char *instructions;
	size_t instructions_len;
	int has_max_tokens;      /* OPENAI_RESPONSES: max_output_tokens was
				  * given (the response echoes it or null) */
	uint32_t max_tokens;     /* tokens: completions 0..8192 (default
				  * 16), chat 1..8192 (default 256) */
	double temperature;      /* [0, 2], default 1 */
	double top_p;            /* (0, 1], default 1 */
	uint32_t top_k;          /* vLLM's top_k: 0 (or -1 given): none */
	unsigned sampling_given; /* ENGINE_GIVEN_* of the three above */
	uint32_t n;              /* choices, 1..OPENAI_MAX_N (default 1) */
	int stream;              /* 1: answer with SSE chunks */
	int include_usage;       /* 1: stream_options.include_usage (only
				  * ever 1 with stream) */
	struct openai_stop stop[OPENAI_MAX_STOP];
	size_t n_stop;           /* 0..OPENAI_MAX_STOP */
	int has_seed;            /* 1: `seed` was given */
	int64_t seed;            /* any int64; 0 without has_seed */
	int ignore_eos;          /* vLLM: 1 = generate max_tokens tokens */
	struct knobs knobs;      /* the lab knobs (proto/knobs.h): -1, or
				  * the override */
	/* logprobs: chat "logprobs": true with "top_logprobs" 0..20;
	 * completions "logprobs": N (0..5) */
	int logprobs;            /* 1: every token carries its logprob */
	uint32_t top_logprobs;   /* alternatives per token */
	/* tools (chat): OPENAI_MAX_TOOLS at most; NULL, 0 without */
	struct openai_tool *tools;
	size_t n_tools;
	enum openai_tool_choice tool_choice;
	size_t tool_named;       /* OPENAI_TOOL_NAMED: index in tools */
	int parallel_tool_calls; /* default 1 */
	char *tools_json;        /* the tools as the prompt renders them
				  * (compact JSON of the request's array) */
	json_t *tools_raw;       /* the request's "tools" and "tool_choice"
				  * (references; NULL when absent), which a
				  * response object echoes */
	json_t *tool_choice_raw;
	/* response_format */
	enum openai_format format;
	json_t *format_schema;   /* OPENAI_FORMAT_JSON_SCHEMA: the schema
				  * (a reference), else NULL */
	struct schema_gen *format_compiled; /* ... compiled, as a tool's */
	/* steps left of the budget its schemas share while they are
	 * checked (SCHEMA_GEN_MAX_STEPS for the request) */
	uint64_t schema_steps;
	/* reasoning: chat's reasoning_effort, the Responses API's
	 * reasoning.effort (UNSET when absent or null; text/think.h) */
	enum think_effort effort;
	int reasoning_summary;   /* OPENAI_RESPONSES: reasoning.summary, 0
				  * absent or null, 1 "auto", 2 "concise",
				  * 3 "detailed" */
};

/* Frees what *r owns and leaves it empty (pointers NULL). Accepts NULL. */
void openai_request_free(struct openai_request *r);

/* Frees r's compiled schemas (tools[].compiled, format_compiled) once
 * the answer is planned: they can be large, the request lives as long
 * as its stream. */
void openai_request_drop_schemas(struct openai_request *r);

/*
 * Parses the JSON body (body, len) of a request to endpoint `kind`.
 * models[0..n_models) (n_models >= 1, NUL-terminated, borrowed for the
 * call) are the names the server answers to: "model" must be a string
 * equal to one of them byte for byte; req->model is then models[0], the
 * name every response carries (vLLM's --served-model-name).
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
 * prefill_ms, tpot_ms, error_after (proto/knobs.h: the lab endpoints'
 * table, ranges and error codes). OPENAI_RESPONSES
 * takes input (required: a string, or 1..256 message items {["type":
 * "message"], role, content: string or non-empty array of {"type":
 * "input_text"|"output_text","text"}}), instructions (a string),
 * max_output_tokens (1..8192, default 256) and reasoning ({effort,
 * summary}: the SDK's Shared.Reasoning; generate_summary ignored)
 * instead of prompt, messages, max_tokens and reasoning_effort; the rest
 * as chat.
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
    size_t len, const char *const *models, size_t n_models,
    struct openai_request *req, struct http_error *err);

/*
 * Fills *err with OpenAI's 404 model_not_found (param null, as OpenAI
 * sends it) for the model (asked, asked_len) (asked NULL: not quotable,
 * so not named), listing up to four of the served models[0..n_models).
 */
void openai_model_not_found(struct http_error *err, const char *asked,
    size_t asked_len, const char *const *models, size_t n_models);

#endif /* TS_OPENAI_PARSE_H */
