/*
 * anthropic/plan.h - whether the simulated model answers a Messages API
 * request with a tool_use block, decided before generation (as
 * openai/plan.h decides tool calls), and that block's input: an instance
 * of the tool's input_schema (jsonschema/schema_gen.h), which the engine
 * then streams token by token as a guide (backend.h, guided decoding).
 * Deterministic: the same request gives the same plan. No I/O.
 *
 * tool_choice (@anthropic-ai/sdk messages.d.ts, ToolChoice):
 *   none, or no tools: no tool_use.
 *   auto: none when the last message carries a tool_result (the model
 *         answers with what the tool gave: an agent loop ends), else a
 *         tool_use with probability 3/4, drawn from the seed.
 *   any:  a tool_use of a tool drawn from the seed.
 *   tool: a tool_use of the named tool.
 * One tool_use block per answer. Its id is "toolu_" and 24 characters of
 * [A-Za-z0-9] from the seed.
 */
#ifndef TS_ANTHROPIC_PLAN_H
#define TS_ANTHROPIC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "anthropic/parse.h"
#include "common/buf.h"

struct anthropic_plan {
	int tool_use;            /* 1: the answer is one tool_use block */
	size_t tool;             /* its tool's index in req->tools */
	char id[40];             /* "toolu_..." */
	struct ts_buf input;     /* its input, JSON (the guide) */
};

/*
 * Plans req's answer with `seed`; the input is made only as far as `cap`
 * bytes (what max_tokens tokens can carry: schema_gen_emit). TS_OK with
 * *p (free with anthropic_plan_free), else a 400 in *err (a schema the
 * generator cannot satisfy, an input over ENGINE_MAX_GUIDE_BYTES).
 */
enum ts_err anthropic_plan_make(const struct anthropic_request *req,
    uint64_t seed, size_t cap, struct anthropic_plan *p,
    struct http_error *err);

void anthropic_plan_free(struct anthropic_plan *p);

#endif /* TS_ANTHROPIC_PLAN_H */
