/*
 * openai/cost.c - the upper bound of a non-streamed /v1 answer's size,
 * from the request's parameters and the worst token of the backend's
 * vocabulary (cost.h). The fixed parts are counted from the shapes the
 * encoders write (encode.c, responses.c), rounded up; test_cost.c
 * checks the bound against answers encoded at the worst.
 */
#include "openai/cost.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "openai/plan.h"
#include "text/utf8.h"

/* Bytes of the parts of an answer that do not grow with its tokens:
 * each counted from encode.c's and responses.c's shapes with room to
 * spare (ids of 40 bytes, counts of 20 digits, the longest finish
 * reason). */
#define HEAD_BYTES 512u        /* id, object, created, usage; model apart */
#define CHOICE_BYTES 256u      /* index, message, refusal, finish_reason */
#define CALL_BYTES 256u        /* a tool call's id, type, name (64) */
#define LP_BYTES 64u           /* a logprobs object's keys, refusal */
#define RESP_BYTES 2048u       /* a response object's fields and item */

/* jansson's escape of byte c in a JSON string (dump.c dump_string). */
static uint32_t
esc(unsigned char c)
{
	if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' ||
	    c == '\r' || c == '\t')
		return 2;
	return c < 0x20 ? 6 : 1;
}

/* The decimal digits of v. */
static uint32_t
digits(uint64_t v)
{
	uint32_t d = 1;

	for (; v >= 10; v /= 10)
		d++;
	return d;
}

/* The costs of one token text (p, len), into the maxima of tc. */
static void
cost_one(const char *p, size_t len, struct openai_token_cost *tc)
{
	const unsigned char *b = (const unsigned char *)p;
	uint32_t text = 0, tok = 2, arr = 2, entry;
	int valid = utf8_valid(p, len);
	size_t i;

	for (i = 0; i < len; i++) {
		text += !valid && b[i] >= 0x80 ? 3 : esc(b[i]);
		arr += digits(b[i]) + (i > 0);
	}
	/* encode.c: a text that is not UTF-8 is "bytes:" and \xNN per byte
	 * (at most 64 of them), each backslash escaped */
	tok += valid ? text : 6 + 5 * (uint32_t)(len < 64 ? len : 64);
	/* {"token":T,"logprob":L,"bytes":[B]} */
	entry = 9 + tok + 11 + OPENAI_LOGPROB_BYTES + 9 + arr + 1;
	if (text > tc->text)
		tc->text = text;
	if (tok > tc->lp_token)
		tc->lp_token = tok;
	if (entry > tc->lp_entry)
		tc->lp_entry = entry;
}

void
openai_token_cost_of(const struct engine_backend *be,
    struct openai_token_cost *tc)
{
	uint32_t id, i, n = be->max_token_bytes;
	const char *t;
	size_t len;

	memset(tc, 0, sizeof(*tc));
	if (be->vocab_size == 0) {
		/* no vocabulary to look at: every byte a control character
		 * (6 escaped, 3 digits), and the "bytes:" form */
		tc->text = 6 * n;
		tc->lp_token = 2 + (6 * n > 6 + 5 * n ? 6 * n : 6 + 5 * n);
		tc->lp_entry = 9 + tc->lp_token + 11 + OPENAI_LOGPROB_BYTES +
		    9 + 2 + 4 * n + 1;
		return;
	}
	cost_one("", 0, tc);
	for (id = 0; id < be->vocab_size; id++)
		if ((t = be->token_text(be->impl, id, &len)) != NULL)
			cost_one(t, len, tc);
	for (i = 0; i < be->n_eos && i < ENGINE_MAX_EOS; i++)
		if ((t = be->token_text(be->impl, be->eos_ids[i], &len)) !=
		    NULL)
			cost_one(t, len, tc);
}

/* a * b and a + b, saturating (the parts are far below 2^64: 16 x 8192
 * x 21 x a few hundred bytes) */
static uint64_t
mul(uint64_t a, uint64_t b)
{
	return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t
add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The bytes jansson writes for v compactly (responses.c's flags), 0 for
 * NULL. */
static uint64_t
dump_size(const json_t *v)
{
	return v != NULL ? json_dumpb(v, NULL, 0, JSON_COMPACT |
	    JSON_REAL_PRECISION(9) | JSON_ENCODE_ANY) : 0;
}

uint64_t
openai_answer_bound(const struct openai_request *req,
    const struct openai_token_cost *tc, size_t model_len,
    const char **param)
{
	uint64_t toks = req->max_tokens, k = req->top_logprobs, n = req->n;
	uint64_t text, lp_base = 0, lp_top = 0, fixed, instr = 0, tools = 0;
	uint64_t total, big;
	const char *p;

	text = mul(mul(n, toks), tc->text);
	if (req->logprobs && req->kind == OPENAI_CHAT) {
		/* each token: its entry with ,"top_logprobs":[...] and a
		 * comma; each alternative an entry and a comma */
		lp_base = mul(mul(n, toks), tc->lp_entry + 20);
		lp_top = mul(mul(mul(n, toks), k), tc->lp_entry + 1);
	} else if (req->logprobs) {
		/* tokens, token_logprobs, top_logprobs ({} and the
		 * alternatives), text_offset (in the text, whose bytes are
		 * at most its escaped size), each with a comma */
		lp_base = mul(mul(n, toks), tc->lp_token + 1 +
		    OPENAI_LOGPROB_BYTES + 1 + 3 + digits(toks * tc->text) +
		    1);
		lp_top = mul(mul(mul(n, toks), k), tc->lp_token + 1 +
		    OPENAI_LOGPROB_BYTES + 1);
	}
	fixed = HEAD_BYTES + 6 * (uint64_t)model_len + n * (CHOICE_BYTES +
	    OPENAI_PLAN_MAX_CALLS * CALL_BYTES + (req->logprobs ? LP_BYTES :
	    0));
	if (req->kind == OPENAI_RESPONSES) {
		/* the response echoes its instructions and tools */
		fixed += RESP_BYTES;
		instr = req->instructions != NULL ?
		    6 * (uint64_t)req->instructions_len + 2 : 0;
		tools = dump_size(req->tools_raw) +
		    dump_size(req->tool_choice_raw);
	}
	total = add(add(add(add(add(fixed, text), lp_base), lp_top), instr),
	    tools);
	p = req->kind == OPENAI_RESPONSES ? "max_output_tokens" :
	    "max_tokens";
	big = text;
	if (lp_top > big) {
		big = lp_top;
		p = req->kind == OPENAI_CHAT ? "top_logprobs" : "logprobs";
	}
	if (lp_base > big) {
		big = lp_base;
		p = "logprobs";
	}
	if (instr > big) {
		big = instr;
		p = "instructions";
	}
	if (tools > big)
		p = "tools";
	if (param != NULL)
		*param = p;
	return total;
}

/* v with thousands separators into out (at least 32 bytes). */
static const char *
grouped(uint64_t v, char *out, size_t cap)
{
	char d[24];
	size_t n = (size_t)snprintf(d, sizeof(d), "%llu",
	    (unsigned long long)v), i, j = 0;

	for (i = 0; i < n && j + 2 < cap; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			out[j++] = ',';
		out[j++] = d[i];
	}
	out[j] = '\0';
	return out;
}

enum ts_err
openai_answer_check(const struct openai_request *req,
    const struct openai_token_cost *tc, size_t model_len,
    struct http_error *err)
{
	char bound[32], lim[32], what[128];
	const char *param, *tokname;
	uint64_t b;
	int at = 0;

	if (req->stream)
		return TS_OK;
	b = openai_answer_bound(req, tc, model_len, &param);
	if (b <= OPENAI_MAX_ANSWER_BYTES)
		return TS_OK;
	tokname = req->kind == OPENAI_RESPONSES ? "max_output_tokens" :
	    "max_tokens";
	/* what to lower, as it applies: "n (16), max_tokens (8192) or
	 * top_logprobs (20)" */
	if (req->n > 1)
		at += snprintf(what + at, sizeof(what) - (size_t)at,
		    "n (%u), ", req->n);
	at += snprintf(what + at, sizeof(what) - (size_t)at, "%s (%u)",
	    tokname, req->max_tokens);
	if (req->logprobs && req->kind == OPENAI_CHAT && req->top_logprobs > 0)
		snprintf(what + at, sizeof(what) - (size_t)at,
		    " or top_logprobs (%u)", req->top_logprobs);
	else if (req->logprobs && req->kind == OPENAI_CHAT)
		snprintf(what + at, sizeof(what) - (size_t)at,
		    " or drop logprobs");
	else if (req->logprobs)
		snprintf(what + at, sizeof(what) - (size_t)at,
		    " or logprobs (%u)", req->top_logprobs);
	else if (strcmp(param, "tools") == 0 ||
	    strcmp(param, "instructions") == 0)
		snprintf(what + at, sizeof(what) - (size_t)at,
		    " or shorten %s", param);
	http_error_set(err, 400, "invalid_request_error", "answer_too_large",
	    "The answer to this request could be up to %s bytes, over the "
	    "%s bytes an answer that is not streamed may have: lower %s, "
	    "or set \"stream\": true.", grouped(b, bound, sizeof(bound)),
	    grouped(OPENAI_MAX_ANSWER_BYTES, lim, sizeof(lim)), what);
	http_error_set_param(err, "%s", param);
	return TS_ELIMIT;
}
