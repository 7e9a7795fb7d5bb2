/*
 * openai/plan.c - the simulated model's plan for a /v1 answer: text, tool
 * calls, a JSON Schema instance or an echo. See plan.h.
 */
#include "openai/plan.h"

#include <stdio.h>
#include <string.h>

#include "common/rng.h"
#include "backend/backend.h"
#include "jsonschema/schema_gen.h"

/* Keeps the plan's draws apart from other users of its seed; part of a
 * seeded run's answers: never change it. */
#define PLAN_TAG 0x706c616e00000000ULL

/* The k-th draw of the plan seed: a fresh 64-bit word per purpose. */
static uint64_t
draw(uint64_t seed, uint64_t k)
{
	return rng_draw(seed, PLAN_TAG, k);
}

static void
call_id(uint64_t seed, size_t i, char *out)
{
	static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789";
	uint64_t h = 0;
	size_t j;

	memcpy(out, "call_", 5);
	for (j = 0; j < 24; j++) {
		/* 10 characters of 62 per fresh 64-bit word (62^10 < 2^60) */
		if (j % 10 == 0)
			h = draw(seed, 100 + 4 * (uint64_t)i + j / 10);
		out[5 + j] = alnum[h % 62];
		h /= 62;
	}
	out[29] = '\0';
}

/* How many calls, and which tools, req's tool_choice asks for. */
static size_t
choose_tools(const struct openai_request *req, uint64_t seed, size_t *which)
{
	size_t n = req->n_tools, want;

	if (n == 0 || req->tool_choice == OPENAI_TOOL_NONE)
		return 0;
	if (req->tool_choice == OPENAI_TOOL_NAMED) {
		which[0] = req->tool_named;
		return 1;
	}
	if (req->tool_choice == OPENAI_TOOL_AUTO) {
		if (req->n_messages > 0 &&
		    req->messages[req->n_messages - 1].role ==
		    OPENAI_ROLE_TOOL)
			return 0;
		if (draw(seed, 1) % 4 == 0)
			return 0;
	}
	want = 1;
	if (req->parallel_tool_calls && n >= 2)
		want = 1 + (size_t)(draw(seed, 2) % (n < OPENAI_PLAN_MAX_CALLS ?
		    n : OPENAI_PLAN_MAX_CALLS));
	/* the tools, distinct: draws 3.. */
	rng_pick_distinct(seed, PLAN_TAG, 3, n, want, which);
	return want;
}

/* The last user message's content, or NULL. */
static const struct openai_message *
last_user(const struct openai_request *req)
{
	size_t i;

	for (i = req->n_messages; i > 0; i--)
		if (req->messages[i - 1].role == OPENAI_ROLE_USER)
			return &req->messages[i - 1];
	return NULL;
}

/*
 * Appends an instance of `schema` (compiled: parse.c's, or NULL to
 * compile it here) to out, cut once the guide is `cap` bytes long
 * (schema_gen_emit): the bytes past it are never sent.
 */
static enum ts_err
gen(const json_t *schema, struct schema_gen *compiled, uint64_t seed,
    size_t cap, struct ts_buf *out, struct http_error *err)
{
	uint64_t steps = SCHEMA_GEN_MAX_STEPS;
	struct schema_gen *own = NULL;
	char msg[200];
	enum ts_err rc = TS_OK;

	if (compiled == NULL)
		rc = schema_gen_compile(schema, &steps, &own, msg,
		    sizeof(msg));
	if (rc == TS_OK)
		rc = schema_gen_emit(compiled != NULL ? compiled : own, seed,
		    cap > out->len ? cap - out->len : 0, out, msg,
		    sizeof(msg));
	schema_gen_free(own);
	if (rc != TS_OK)
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "The schema cannot be generated: %s",
		    msg);
	return rc;
}

enum ts_err
openai_plan_make(const struct openai_request *req, uint64_t seed, int echo,
    size_t cap, struct openai_plan *p, struct http_error *err)
{
	size_t which[OPENAI_PLAN_MAX_CALLS], n, i;
	enum ts_err rc;

	memset(p, 0, sizeof(*p));
	ts_buf_init(&p->guide, ENGINE_MAX_GUIDE_BYTES);
	n = choose_tools(req, seed, which);
	for (i = 0; i < n; i++) {
		struct openai_plan_call *c = &p->calls[i];

		c->tool = which[i];
		call_id(seed, i, c->id);
		c->off = p->guide.len;
		rc = gen(req->tools[c->tool].parameters,
		    req->tools[c->tool].compiled, draw(seed, 10 + i), cap,
		    &p->guide, err);
		if (rc != TS_OK)
			goto fail;
		c->len = p->guide.len - c->off;
	}
	p->ncalls = n;
	if (n > 0) {
		p->guided = 1;
		return TS_OK;
	}
	if (req->format != OPENAI_FORMAT_TEXT && req->format_schema != NULL) {
		rc = gen(req->format_schema, req->format_compiled,
		    draw(seed, 9), cap, &p->guide, err);
		if (rc != TS_OK)
			goto fail;
		p->guided = 1;
		return TS_OK;
	}
	if (echo) {
		const struct openai_message *m = last_user(req);
		const char *t = req->kind == OPENAI_COMPLETIONS ? req->prompt :
		    m != NULL ? m->content : "";
		size_t len = req->kind == OPENAI_COMPLETIONS ?
		    req->prompt_len : m != NULL ? m->content_len : 0;

		/* no more than can be sent; the message's own limit
		 * first */
		if (len > ENGINE_MAX_GUIDE_BYTES || ts_buf_append(&p->guide,
		    t, len < cap ? len : cap) != TS_OK) {
			rc = TS_ELIMIT;
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_value", "The message to echo is over %u "
			    "bytes.", ENGINE_MAX_GUIDE_BYTES);
			goto fail;
		}
		p->guided = 1;
	}
	return TS_OK;
fail:
	openai_plan_free(p);
	return rc;
}

size_t
openai_plan_calls(const struct openai_plan *p,
    const struct openai_request *req, struct openai_tool_call *out)
{
	size_t i;

	for (i = 0; i < p->ncalls; i++) {
		out[i].id = p->calls[i].id;
		out[i].name = req->tools[p->calls[i].tool].name;
		out[i].args = p->guide.p + p->calls[i].off;
		out[i].args_len = p->calls[i].len;
	}
	return p->ncalls;
}

void
openai_plan_free(struct openai_plan *p)
{
	ts_buf_free(&p->guide);
	memset(p, 0, sizeof(*p));
}
