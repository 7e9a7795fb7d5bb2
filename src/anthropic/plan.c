/*
 * anthropic/plan.c - a Messages API answer's tool_use, planned (plan.h).
 */
#include "anthropic/plan.h"

#include <string.h>

#include "anthropic/encode.h"
#include "backend/backend.h"
#include "common/rng.h"
#include "jsonschema/schema_gen.h"

/* The k-th draw of the plan seed. */
static uint64_t
draw(uint64_t seed, uint64_t k)
{
	return rng_mix64(seed ^ rng_mix64(k + 0x616e7468726f7000ULL));
}

enum ts_err
anthropic_plan_make(const struct anthropic_request *req, uint64_t seed,
    size_t cap, struct anthropic_plan *p, struct http_error *err)
{
	const struct anthropic_tool *t;
	struct schema_gen *own = NULL;
	uint64_t steps = SCHEMA_GEN_MAX_STEPS;
	char msg[200];
	enum ts_err rc = TS_OK;

	memset(p, 0, sizeof(*p));
	ts_buf_init(&p->input, ENGINE_MAX_GUIDE_BYTES);
	if (req->n_tools == 0 || req->tool_choice == ANTHROPIC_TOOL_NONE)
		return TS_OK;
	if (req->tool_choice == ANTHROPIC_TOOL_AUTO && (draw(seed, 1) % 4 ==
	    0 || (req->n_messages > 0 &&
	    req->messages[req->n_messages - 1].tool_result)))
		return TS_OK;
	p->tool = req->tool_choice == ANTHROPIC_TOOL_NAMED ? req->tool_named :
	    (size_t)(draw(seed, 2) % req->n_tools);
	p->tool_use = 1;
	anthropic_id("toolu_", draw(seed, 3), 0, p->id, sizeof(p->id));
	t = &req->tools[p->tool];
	if (t->compiled == NULL)
		rc = schema_gen_compile(t->input_schema, &steps, &own, msg,
		    sizeof(msg));
	if (rc == TS_OK)
		rc = schema_gen_emit(t->compiled != NULL ? t->compiled : own,
		    draw(seed, 4), cap, &p->input, msg, sizeof(msg));
	schema_gen_free(own);
	if (rc != TS_OK) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "tools.%zu.input_schema: the input cannot "
		    "be generated: %s", p->tool, msg);
		anthropic_plan_free(p);
	}
	return rc;
}

void
anthropic_plan_free(struct anthropic_plan *p)
{
	ts_buf_free(&p->input);
	memset(p, 0, sizeof(*p));
}
