/*
 * test_cost.c - the bound of a non-streamed /v1 answer (src/openai/
 * cost.h): a vocabulary's worst token costs, the bound against answers
 * encoded at the worst by the real encoders (encode.h, responses.h), and
 * the 400 answer_too_large with the field to lower.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openai/cost.h"
#include "openai/encode.h"
#include "openai/plan.h"
#include "openai/responses.h"
#include "sim/sim.h"
#include "sim/vocab.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* A vocabulary with the worst of each kind: control characters (6
 * escaped bytes each), quote and backslash, a byte that is not UTF-8. */
static const char *const vocab[] = { "ab", "\x01\x02\x03", "\xff",
    "\"\\" };
#define EOS_ID 9u

static const char *
fake_text(void *impl, uint32_t id, size_t *len)
{
	(void)impl;
	if (id == EOS_ID) {
		*len = 0;
		return "";
	}
	if (id >= N(vocab))
		return NULL;
	*len = strlen(vocab[id]);
	return vocab[id];
}

static void
fake_backend(struct engine_backend *be)
{
	memset(be, 0, sizeof(*be));
	be->name = "fake";
	be->max_token_bytes = 3;
	be->vocab_size = N(vocab);
	be->eos_ids[0] = EOS_ID;
	be->n_eos = 1;
	be->token_text = fake_text;
}

static void
test_token_costs(void **unused)
{
	struct engine_backend be;
	struct openai_token_cost tc;

	(void)unused;
	fake_backend(&be);
	openai_token_cost_of(&be, &tc);
	/* "\x01\x02\x03" is "\u0001\u0002\u0003" */
	assert_int_equal(tc.text, 18);
	/* with its quotes; "\xff" is "bytes:\\xff", 13 */
	assert_int_equal(tc.lp_token, 20);
	/* {"token":T(20),"logprob":L(24),"bytes":[1,2,3]} */
	assert_int_equal(tc.lp_entry, 9 + 20 + 11 + 24 + 9 + 7 + 1);
	/* no vocabulary: every byte the worst */
	be.vocab_size = 0;
	openai_token_cost_of(&be, &tc);
	assert_int_equal(tc.text, 18);
	assert_int_equal(tc.lp_token, 2 + 6 + 5 * 3);
	/* the simulator's: its longest token has 13 bytes */
	sim_backend(&be);
	openai_token_cost_of(&be, &tc);
	assert_true(tc.text >= 13 && tc.text <= 4 * SIM_TOKEN_MAX_BYTES);
}

static void
meta_of(struct openai_meta *m, enum openai_kind kind, const char *model)
{
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->id = UINT64_MAX;
	m->created = INT64_MAX;
	m->model = model;
	m->model_len = strlen(model);
	m->id_prefix = "abcdefgh-";
}

/* A request of kind with n choices of toks tokens, k alternatives. */
static void
req_of(struct openai_request *r, enum openai_kind kind, uint32_t n,
    uint32_t toks, int logprobs, uint32_t k)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->n = n;
	r->max_tokens = toks;
	r->logprobs = logprobs;
	r->top_logprobs = k;
}

/*
 * The answer to r encoded at the worst of the fake vocabulary: every
 * token "\x01\x02\x03", in the text or split over three tool calls of
 * 64-byte names; every logprob and alternative that token at a logprob
 * with the longest print. Its length; the bound must hold it.
 */
static size_t
worst_answer(const struct openai_request *r, int calls, const char *model)
{
	/* distinct alternatives of the worst cost: completions key them,
	 * and a repeated key is written once */
	static const char *const perm[] = { "\x01\x02\x03",
	    "\x01\x03\x02", "\x02\x01\x03", "\x02\x03\x01",
	    "\x03\x01\x02", "\x03\x02\x01" };
	struct openai_choice cs[16];
	struct openai_tool_call tc[OPENAI_PLAN_MAX_CALLS];
	struct openai_lp_token *t;
	struct openai_lp_entry top[20];
	struct openai_lp_src src;
	struct openai_usage u = { UINT32_MAX, UINT32_MAX, UINT32_MAX,
	    UINT32_MAX, 1 };
	struct openai_meta m;
	struct ts_buf b;
	char name[65], *text;
	size_t len = (size_t)r->max_tokens * 3, i, got;

	meta_of(&m, r->kind, model);
	text = malloc(len + 1);
	for (i = 0; i < len; i++)
		text[i] = (char)(1 + i % 3);
	memset(name, 'f', 64);
	name[64] = '\0';
	for (i = 0; i < OPENAI_PLAN_MAX_CALLS; i++) {
		tc[i].id = "call_abcdefghijklmnopqrstuvwx";
		tc[i].name = name;
		tc[i].args = text + i * (len / 3);
		tc[i].args_len = i + 1 < OPENAI_PLAN_MAX_CALLS ? len / 3 :
		    len - i * (len / 3);
	}
	for (i = 0; i < r->top_logprobs; i++) {
		top[i].text = perm[i % N(perm)];
		top[i].len = 3;
		top[i].logprob = -FLT_MIN;
	}
	t = calloc(r->max_tokens + 1, sizeof(*t));
	for (i = 0; i < r->max_tokens; i++) {
		t[i].tok = top[0];
		t[i].tok.text = "\x01\x02\x03";
		t[i].tok.len = 3;
		t[i].tok.logprob = -FLT_MIN;
		t[i].top = top;
		t[i].ntop = r->top_logprobs;
		t[i].text_offset = len;
	}
	openai_lp_src_array(&src, t, r->max_tokens);
	memset(cs, 0, sizeof(cs));
	for (i = 0; i < r->n; i++) {
		cs[i].text = text;
		cs[i].len = len;
		cs[i].finish = calls ? OPENAI_FINISH_TOOL_CALLS :
		    OPENAI_FINISH_LENGTH;
		cs[i].x.logprobs = r->logprobs ? &src : NULL;
		cs[i].x.calls = tc;
		cs[i].x.ncalls = calls ? OPENAI_PLAN_MAX_CALLS : 0;
	}
	ts_buf_init(&b, 1u << 30);
	assert_int_equal(openai_encode_response_n(&b, &m, cs, r->n, &u),
	    TS_OK);
	got = b.len;
	ts_buf_free(&b);
	free(t);
	free(text);
	return got;
}

static void
test_bound_holds(void **unused)
{
	static const struct {
		enum openai_kind kind;
		uint32_t n, toks;
		int lp;
		uint32_t k;
		int calls;
	} rows[] = {
		{ OPENAI_CHAT, 1, 1, 0, 0, 0 },
		{ OPENAI_CHAT, 1, 100, 0, 0, 0 },
		{ OPENAI_CHAT, 3, 100, 0, 0, 1 },
		{ OPENAI_CHAT, 16, 50, 1, 0, 0 },
		{ OPENAI_CHAT, 2, 100, 1, 20, 0 },
		{ OPENAI_CHAT, 16, 30, 1, 20, 1 },
		{ OPENAI_COMPLETIONS, 1, 1, 0, 0, 0 },
		{ OPENAI_COMPLETIONS, 4, 100, 1, 0, 0 },
		{ OPENAI_COMPLETIONS, 16, 60, 1, 5, 0 },
	};
	static const char model[] = "model\x01\x02\x03\x04\x05";
	struct engine_backend be;
	struct openai_token_cost tc;
	struct openai_request r;
	size_t i;

	(void)unused;
	fake_backend(&be);
	openai_token_cost_of(&be, &tc);
	for (i = 0; i < N(rows); i++) {
		uint64_t bound;
		size_t got;

		req_of(&r, rows[i].kind, rows[i].n, rows[i].toks, rows[i].lp,
		    rows[i].k);
		got = worst_answer(&r, rows[i].calls, model);
		bound = openai_answer_bound(&r, &tc, strlen(model), NULL);
		/* and close: the fixed parts' rounding, a byte per
		 * logprob (they print in 23) */
		if (bound < got || bound > got + got / 20 + 2048 * r.n)
			fail_msg("row %zu: encoded %zu bytes, bound %llu", i,
			    got, (unsigned long long)bound);
	}
}

/* /v1/responses: its echo of instructions and tools counts. */
static void
test_bound_responses(void **unused)
{
	struct engine_backend be;
	struct openai_token_cost tc;
	struct openai_request r;
	struct openai_resp_meta m;
	struct openai_usage u = { UINT32_MAX, UINT32_MAX, UINT32_MAX,
	    UINT32_MAX, 1 };
	struct ts_buf b;
	char *instr, *text;
	const char *param;
	size_t i, len = 3000;
	uint64_t bound;

	(void)unused;
	fake_backend(&be);
	openai_token_cost_of(&be, &tc);
	req_of(&r, OPENAI_RESPONSES, 1, 1000, 0, 0);
	instr = malloc(len);
	text = malloc(3 * 1000);
	for (i = 0; i < len; i++)
		instr[i] = '\x01';
	for (i = 0; i < 3000; i++)
		text[i] = '\x02';
	r.instructions = instr;
	r.instructions_len = len;
	r.tools_raw = json_loads("[{\"type\":\"function\",\"name\":\"f\","
	    "\"parameters\":{\"type\":\"object\",\"description\":"
	    "\"\\u0001\\u0001\\u0001\\u0001\"}}]", 0, NULL);
	assert_non_null(r.tools_raw);
	memset(&m, 0, sizeof(m));
	m.id = UINT64_MAX;
	m.id_prefix = "abcdefgh-";
	m.created_at = INT64_MAX;
	m.model = "m";
	m.model_len = 1;
	m.instructions = instr;
	m.instructions_len = len;
	m.has_max_output = 1;
	m.max_output_tokens = 1000;
	m.temperature = 0.123456789;
	m.top_p = 0.987654321;
	m.tools = r.tools_raw;
	ts_buf_init(&b, 1u << 24);
	assert_int_equal(openai_resp_encode(&b, &m, text, 3000,
	    OPENAI_FINISH_LENGTH, &u), TS_OK);
	bound = openai_answer_bound(&r, &tc, 1, &param);
	assert_true(bound >= b.len);
	/* 6 x 3,000 + 2 bytes of instructions against 18 x 1,000 of
	 * text */
	assert_string_equal(param, "instructions");
	r.instructions_len = len - 1;
	(void)openai_answer_bound(&r, &tc, 1, &param);
	assert_string_equal(param, "max_output_tokens");
	ts_buf_free(&b);
	json_decref(r.tools_raw);
	free(instr);
	free(text);
}

/* The 400: its code, the largest part as param, what to lower. */
static void
test_answer_check(void **unused)
{
	struct engine_backend be;
	struct openai_token_cost tc;
	struct openai_request r;
	struct http_error err;

	(void)unused;
	sim_backend(&be);
	openai_token_cost_of(&be, &tc);
	req_of(&r, OPENAI_CHAT, 16, 8192, 1, 20);
	assert_int_equal(openai_answer_check(&r, &tc, 13, &err), TS_ELIMIT);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.code, "answer_too_large");
	assert_string_equal(err.param, "top_logprobs");
	assert_non_null(strstr(err.message, "over the 8,000,000 bytes"));
	assert_non_null(strstr(err.message, "lower n (16), max_tokens (8192) "
	    "or top_logprobs (20), or set \"stream\": true."));
	/* streamed: not bounded this way */
	r.stream = 1;
	assert_int_equal(openai_answer_check(&r, &tc, 13, &err), TS_OK);
	r.stream = 0;
	/* no alternatives: logprobs is the largest part */
	req_of(&r, OPENAI_CHAT, 16, 8192, 1, 0);
	assert_int_equal(openai_answer_check(&r, &tc, 13, &err), TS_ELIMIT);
	assert_string_equal(err.param, "logprobs");
	assert_non_null(strstr(err.message, "or drop logprobs"));
	/* completions count their alternatives in "logprobs" */
	req_of(&r, OPENAI_COMPLETIONS, 16, 8192, 1, 5);
	assert_int_equal(openai_answer_check(&r, &tc, 13, &err), TS_ELIMIT);
	assert_string_equal(err.param, "logprobs");
	assert_non_null(strstr(err.message, "or logprobs (5)"));
	/* text alone never reaches the bound with the simulator's tokens */
	req_of(&r, OPENAI_CHAT, 16, 8192, 0, 0);
	assert_int_equal(openai_answer_check(&r, &tc, 13, &err), TS_OK);
	/* ... but does with tokens of 4 KiB (a backend that does not tell
	 * its vocabulary) */
	be.vocab_size = 0;
	be.max_token_bytes = 4096;
	openai_token_cost_of(&be, &tc);
	req_of(&r, OPENAI_CHAT, 1, 8192, 0, 0);
	assert_int_equal(openai_answer_check(&r, &tc, 13, &err), TS_ELIMIT);
	assert_string_equal(err.param, "max_tokens");
	/* the largest request within the bound, and the next */
	sim_backend(&be);
	openai_token_cost_of(&be, &tc);
	req_of(&r, OPENAI_CHAT, 1, 3108, 1, 20);
	assert_int_equal(openai_answer_check(&r, &tc, 13, &err), TS_OK);
	r.max_tokens = 3109;
	assert_int_equal(openai_answer_check(&r, &tc, 13, &err), TS_ELIMIT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_costs),
		cmocka_unit_test(test_bound_holds),
		cmocka_unit_test(test_bound_responses),
		cmocka_unit_test(test_answer_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
