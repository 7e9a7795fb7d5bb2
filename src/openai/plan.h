/*
 * openai/plan.h - what the simulated model answers a /v1 request with,
 * decided before generation: free text (the language model samples), or
 * a text the server makes and the engine streams token by token as a
 * guide (backend/backend.h, guided decoding): the tool calls the model
 * makes (their arguments, JSON valid against each function's
 * parameters), an instance of the response_format's JSON Schema, or, in
 * echo mode, the last user message. Deterministic: the same request
 * (prompt, seed, tools) gives the same plan. No I/O.
 *
 * The decision to call tools (OpenAI API reference, "Function calling";
 * tool_choice):
 *   - "none", or no tools: no call.
 *   - "auto": no call when the last message is a tool's result (the model
 *     answers with what the tools gave: an agent loop ends), else a call
 *     with probability 3/4, drawn from the plan seed.
 *   - "required": at least one call; a named function: exactly that one.
 *   - how many (auto and required): with parallel_tool_calls (the
 *     default) and k >= 2 tools, 1 to min(3, k) distinct tools, drawn;
 *     else one. Which: drawn without repetition.
 * Each call's arguments are schema_gen(parameters, seed of the call).
 * Tool call ids are "call_" and 24 characters of [A-Za-z0-9] from the
 * seed, like OpenAI's.
 */
#ifndef TS_OPENAI_PLAN_H
#define TS_OPENAI_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "openai/encode.h"
#include "openai/parse.h"

#define OPENAI_PLAN_MAX_CALLS 3

/* One planned tool call: its arguments are guide[off, off + len). */
struct openai_plan_call {
	char id[32];             /* "call_" + 24 characters, NUL-terminated */
	size_t tool;             /* index in the request's tools */
	size_t off, len;         /* bytes of the guide */
};

struct openai_plan {
	int guided;              /* the answer is (guide.p, guide.len) */
	struct ts_buf guide;
	struct openai_plan_call calls[OPENAI_PLAN_MAX_CALLS];
	size_t ncalls;           /* > 0: the guide is the calls' arguments,
				  * one after another, and the answer's
				  * finish_reason is "tool_calls" */
};

/*
 * Plans the answer to req (parsed, its prompt rendered as `prompt`) with
 * `seed` (the request's seed, or the prompt's rng_seed_of without one).
 * echo: tokstream runs with --mode echo (the answer is the last user
 * message, or the prompt of a completion, when no tool call or JSON
 * format applies). The guide is made only as far as `cap` bytes: what
 * max_tokens tokens can carry (backend.h, guided): each schema instance
 * is cut there (schema_gen_emit: its first bytes, exactly those of the
 * whole instance) and an echo copied that far; a call that starts past
 * it is "{}"-short and never sent. Uses req's compiled schemas (parse.c)
 * when it has them. Returns TS_OK with *p filled (free it with
 * openai_plan_free), TS_ELIMIT when the text would be over
 * ENGINE_MAX_GUIDE_BYTES (err is then a 400), TS_EINVAL when a schema
 * cannot be satisfied (400; parse.c checked every schema, so only the
 * generator's size limits remain).
 */
enum ts_err openai_plan_make(const struct openai_request *req, uint64_t seed,
    int echo, size_t cap, struct openai_plan *p, struct http_error *err);

/* The calls of plan p as the encoders take them, args pointing into
 * p->guide and names into req; out holds OPENAI_PLAN_MAX_CALLS. */
size_t openai_plan_calls(const struct openai_plan *p,
    const struct openai_request *req, struct openai_tool_call *out);

/* Frees what p owns; accepts a zeroed plan. */
void openai_plan_free(struct openai_plan *p);

#endif /* TS_OPENAI_PLAN_H */
