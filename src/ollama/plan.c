/*
 * ollama/plan.c - the simulated model's plan for an Ollama answer: text,
 * tool calls, a JSON Schema instance or an echo. See plan.h.
 */
#include "ollama/plan.h"

#include <string.h>

#include "backend/backend.h"
#include "common/rng.h"
#include "jsonschema/schema_gen.h"

/* Keeps the plan's draws apart from other users of its seed; part of a
 * seeded run's answers: never change it. */
#define PLAN_TAG 0x6f6c6c616d610000ULL

/* The k-th draw of the plan seed: a fresh 64-bit word per purpose. */
static uint64_t
draw(uint64_t seed, uint64_t k)
{
	return rng_draw(seed, PLAN_TAG, k);
}

/* How many calls, and which tools (distinct, drawn). */
static size_t
choose_tools(const struct ollama_request *req, uint64_t seed, size_t *which)
{
	size_t n = req->n_tools, want;

	if (n == 0 || req->last_is_tool)
		return 0;
	want = n >= 2 ? 1 + (size_t)(draw(seed, 2) %
	    (n < OLLAMA_PLAN_MAX_CALLS ? n : OLLAMA_PLAN_MAX_CALLS)) : 1;
	/* the tools, distinct: draws 3.. */
	rng_pick_distinct(seed, PLAN_TAG, 3, n, want, which);
	return want;
}

/* Appends an instance of a compiled schema (NULL: "{}", a function
 * without parameters) to out, cut once the guide is cap bytes long. */
static enum ts_err
gen(struct schema_gen *g, uint64_t seed, size_t cap, struct ts_buf *out,
    struct http_error *err)
{
	char msg[200];
	enum ts_err rc;

	if (g == NULL)
		return ts_buf_append(out, "{}", 2) == TS_OK ? TS_OK :
		    TS_ELIMIT;
	rc = schema_gen_emit(g, seed, cap > out->len ? cap - out->len : 0,
	    out, msg, sizeof(msg));
	if (rc != TS_OK)
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "the schema cannot be generated: %s",
		    msg);
	return rc;
}

/* The text echo mode repeats: the last user message, or the prompt. */
static void
echo_text(const struct ollama_request *req, const char **t, size_t *len)
{
	size_t i;

	*t = "";
	*len = 0;
	if (req->kind == OLLAMA_GENERATE) {
		*t = req->prompt != NULL ? req->prompt : "";
		*len = req->prompt_len;
		return;
	}
	for (i = req->n_msgs; i > 0; i--)
		if (req->msgs[i - 1].role == CHAT_ROLE_USER) {
			*t = req->msgs[i - 1].content;
			*len = req->msgs[i - 1].len;
			return;
		}
}

enum ts_err
ollama_plan_make(const struct ollama_request *req, uint64_t seed, int echo,
    size_t cap, struct ollama_plan *p, struct http_error *err)
{
	size_t which[OLLAMA_PLAN_MAX_CALLS], n, i, len;
	const char *t;
	enum ts_err rc;

	memset(p, 0, sizeof(*p));
	ts_buf_init(&p->guide, ENGINE_MAX_GUIDE_BYTES);
	n = choose_tools(req, seed, which);
	for (i = 0; i < n; i++) {
		struct ollama_plan_call *c = &p->calls[i];

		c->tool = which[i];
		c->off = p->guide.len;
		rc = gen(req->tools[c->tool].compiled, draw(seed, 10 + i), cap,
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
	if (req->format != OLLAMA_FORMAT_TEXT) {
		rc = gen(req->format_compiled, draw(seed, 9), cap, &p->guide,
		    err);
		if (rc != TS_OK)
			goto fail;
		p->guided = 1;
		return TS_OK;
	}
	if (echo) {
		echo_text(req, &t, &len);
		if (len > ENGINE_MAX_GUIDE_BYTES || ts_buf_append(&p->guide,
		    t, len < cap ? len : cap) != TS_OK) {
			rc = TS_ELIMIT;
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_value", "the message to echo is over %u "
			    "bytes", ENGINE_MAX_GUIDE_BYTES);
			goto fail;
		}
		p->guided = 1;
	}
	return TS_OK;
fail:
	ollama_plan_free(p);
	return rc;
}

void
ollama_plan_free(struct ollama_plan *p)
{
	ts_buf_free(&p->guide);
	memset(p, 0, sizeof(*p));
}
