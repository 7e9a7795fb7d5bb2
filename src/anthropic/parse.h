/*
 * anthropic/parse.h - parsing the body of Anthropic's POST /v1/messages
 * and POST /v1/messages/count_tokens into a struct anthropic_request.
 * The fields follow @anthropic-ai/sdk's MessageCreateParams and
 * MessageCountTokensParams (resources/messages/messages.d.ts, version
 * pinned in tests/node/package.json); docs/API.md "Anthropic Messages
 * API" lists what is honoured, accepted or refused. No I/O.
 *
 * Errors fill a struct http_error with the HTTP status that Anthropic's
 * API answers (400, 404); anthropic/encode.h writes it in Anthropic's
 * error shape, whose type follows the status.
 */
#ifndef TS_ANTHROPIC_PARSE_H
#define TS_ANTHROPIC_PARSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonschema/schema_gen.h"
#include "proto/chat.h"
#include "proto/http_error.h"
#include "proto/knobs.h"
#include "text/stop.h"

#define ANTHROPIC_MAX_TOKENS_CAP 8192   /* max_tokens (HTTP_MAX_TOKENS_CAP) */
#define ANTHROPIC_MAX_MESSAGES 256          /* messages per request */
#define ANTHROPIC_MAX_BLOCKS 256            /* content blocks per message */
#define ANTHROPIC_MAX_CONTENT_BYTES (1u << 20) /* all the text rendered */
#define ANTHROPIC_MAX_STOP STOP_MAX         /* stop_sequences (engine's) */
#define ANTHROPIC_MAX_STOP_BYTES STOP_MAX_BYTES
#define ANTHROPIC_MAX_TOOLS 128             /* tools per request */
#define ANTHROPIC_MAX_TOOL_NAME 64          /* ^[a-zA-Z0-9_-]{1,64}$ */

/* One message, its content blocks rendered as the prompt shows them:
 * text as it is, a tool_use block as its compact JSON, a tool_result
 * block as its content's text; blocks joined with "\n". Owned. */
struct anthropic_message {
	enum chat_role role;     /* user, assistant (system: a "system"
				  * role message, as the SDK's types allow) */
	char *text;              /* NUL-terminated; may hold NUL bytes */
	size_t len;
	int tool_result;         /* it holds a tool_result block */
};

/* One tool ("custom" tools: name, description, input_schema, whose type
 * must be "object": messages.d.ts Tool.InputSchema). */
struct anthropic_tool {
	char *name;              /* NUL-terminated */
	size_t name_len;
	json_t *input_schema;    /* a reference the request holds */
	struct schema_gen *compiled; /* checked at parse time; NULL once
				  * dropped (anthropic_request_drop_schemas) */
};

/* tool_choice's type (ToolChoiceAuto, ToolChoiceAny, ToolChoiceTool,
 * ToolChoiceNone). */
enum anthropic_tool_choice {
	ANTHROPIC_TOOL_AUTO,     /* the default */
	ANTHROPIC_TOOL_ANY,      /* some tool */
	ANTHROPIC_TOOL_NAMED,    /* {"type":"tool","name":...} */
	ANTHROPIC_TOOL_NONE
};

/* A parsed request. Owns every pointer (anthropic_request_free). */
struct anthropic_request {
	int count_only;          /* count_tokens: no max_tokens, stream... */
	uint32_t max_tokens;     /* 1..ANTHROPIC_MAX_TOKENS_CAP, required */
	struct anthropic_message *messages; /* 1..ANTHROPIC_MAX_MESSAGES */
	size_t n_messages;
	char *system;            /* "system": a string or text blocks
				  * joined with "\n"; NULL: none */
	size_t system_len;
	char *stop[ANTHROPIC_MAX_STOP]; /* stop_sequences, 1..64 bytes */
	size_t stop_len[ANTHROPIC_MAX_STOP];
	size_t n_stop;
	double temperature;      /* [0, 1], default 1 */
	double top_p;            /* [0, 1], default 1 (0 is taken as 1) */
	uint32_t top_k;          /* 0 when absent */
	unsigned sampling_given; /* ENGINE_GIVEN_* of the three above */
	int stream;
	struct anthropic_tool *tools;
	size_t n_tools;
	char *tools_json;        /* the tools array, compact: the prompt's
				  * tools block; NULL without tools */
	enum anthropic_tool_choice tool_choice;
	size_t tool_named;       /* ANTHROPIC_TOOL_NAMED: index in tools */
	uint32_t thinking_budget; /* thinking enabled: budget_tokens (>= 1,
				  * below max_tokens); 0: disabled */
	int thinking_disabled;   /* thinking {"type":"disabled"} was sent
				  * (so --reasoning always leaves it off) */
	struct knobs knobs;      /* the lab knobs (proto/knobs.h) */
};

void anthropic_request_free(struct anthropic_request *r);

/* Frees the compiled schemas once the answer is planned. */
void anthropic_request_drop_schemas(struct anthropic_request *r);

/*
 * Parses the JSON body (body, len). count_only: the count_tokens body
 * (MessageCountTokensParams: model, messages, system, tools,
 * tool_choice, thinking; max_tokens and stream not taken). models[0..n)
 * are the served names: "model" must equal one of them, else 404
 * not_found_error (checked last, so a malformed request is a 400 first).
 * Unknown fields are ignored (metadata, service_tier, ...). TS_OK with
 * *req filled, else *err filled (status 400 or 404) and *req empty.
 */
enum ts_err anthropic_parse_request(const char *body, size_t len,
    int count_only, const char *const *models, size_t n_models,
    struct anthropic_request *req, struct http_error *err);

/*
 * Appends the prompt of req rendered with tokstream's chat template
 * (proto/chat.h): the tools block, the system message, the messages,
 * the generation prompt. TS_ELIMIT when out's max is reached (nothing
 * appended).
 */
enum ts_err anthropic_prompt(const struct anthropic_request *req,
    struct ts_buf *out);

#endif /* TS_ANTHROPIC_PARSE_H */
