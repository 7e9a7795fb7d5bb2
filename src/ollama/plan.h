/*
 * ollama/plan.h - what the simulated model answers an Ollama request
 * with, decided before generation (as openai/plan.h does for /v1): free
 * text (the language model samples), or a text the server makes and the
 * engine streams token by token as a guide (backend/backend.h, guided
 * decoding): the tool calls the model makes (each call's arguments an
 * instance of its function's parameters schema: jsonschema/schema_gen.h),
 * an instance of the format's JSON Schema (format "json": an object of
 * tokstream's own schema), or, in echo mode, the last user message (the
 * prompt of /api/generate). Deterministic: the same request (prompt,
 * seed, tools) gives the same plan. No I/O.
 *
 * Ollama has no tool_choice: the model decides. Here a chat request with
 * tools calls them unless its last message is a tool's result (the model
 * answers with what the tools gave: an agent loop ends): one tool, or
 * with k >= 2 tools 1 to min(3, k) distinct ones, drawn from the seed.
 */
#ifndef TS_OLLAMA_PLAN_H
#define TS_OLLAMA_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "ollama/parse.h"
#include "proto/http_error.h"

#define OLLAMA_PLAN_MAX_CALLS 3

/* One planned tool call: its arguments are guide[off, off + len). */
struct ollama_plan_call {
	size_t tool;             /* index in the request's tools */
	size_t off, len;         /* bytes of the guide */
};

struct ollama_plan {
	int guided;              /* the answer is (guide.p, guide.len) */
	struct ts_buf guide;
	struct ollama_plan_call calls[OLLAMA_PLAN_MAX_CALLS];
	size_t ncalls;           /* > 0: the guide is the calls' arguments,
				  * one after another */
};

/*
 * Plans the answer to req with `seed`; echo: the server runs with --mode
 * echo. The guide is made only as far as `cap` bytes (what num_predict
 * tokens can carry: schema_gen_emit cuts an instance there). Uses req's
 * compiled schemas. TS_OK with *p (free it with ollama_plan_free), or
 * TS_EINVAL / TS_ELIMIT with *err a 400 (a schema the generator's limits
 * refuse, an echo over ENGINE_MAX_GUIDE_BYTES).
 */
enum ts_err ollama_plan_make(const struct ollama_request *req, uint64_t seed,
    int echo, size_t cap, struct ollama_plan *p, struct http_error *err);

/* Frees what p owns; accepts a zeroed plan. */
void ollama_plan_free(struct ollama_plan *p);

#endif /* TS_OLLAMA_PLAN_H */
