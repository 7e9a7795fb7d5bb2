/*
 * test_causes.c - errors keep their cause (issue 22, bullet 5), on a
 * manual engine over the simulator and a synthetic clock, through the
 * blocking relay driver (relay_run) and a fake connection; no sockets, no
 * threads, no sleeps:
 *   - engine_submit refuses a request as TS_EINVAL for one of several
 *     reasons, engine_refusal names it, and submit() answers each with
 *     its own 400 (not "the stop strings cannot be used" for all);
 *   - a stopping engine refuses with TS_ESHUTDOWN (not TS_ETIMEDOUT), and
 *     submit() answers it 503 "shutdown";
 *   - a relay op that fails ends the stream with a cause of the server's
 *     (server_error for an encoding failure, output_limit when the
 *     response outgrew its buffer), never client_gone: in the state
 *     record and in /_debug/generated;
 *   - the /v1/responses stream's token op keeps TS_ELIMIT (the answer's
 *     text outgrew its buffer) instead of turning it into TS_EINVAL, so
 *     the record says output_limit; so does POST /generate.
 * The output cap is reached with a backend that breaks its word: its
 * tokens' text is longer than its max_token_bytes, which sizes the
 * buffers (a tokenizer that miscounts would do the same).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "engine/engine.h"
#include "transport/conn.h"
#include "transport/relay.h"
#include "transport/reply.h"
#include "proto/http.h"
#include "stores/metrics.h"
#include "stores/state.h"
#include "handlers/settings.h"
#include "handlers/record.h"
#include "handlers/routes.h"
#include "handlers/server.h"
#include "handlers/submit.h"
#include "sim/lab.h"
#include "sim/sim.h"

#include "handlers_fake.h"

/* Which backend the server runs. */
enum flavour {
	SIM,            /* the simulator as it is */
	BARE,           /* ... without logprobs and guided decoding */
	WORDY           /* ... whose tokens' text outgrows max_token_bytes */
};

/* WORDY's text of every token: 1 KiB, for a max_token_bytes of 1, so a
 * /v1 answer's text buffer (HTTP_MAX_TOKENS_CAP x 3 bytes) and the lab's
 * (HTTP_MAX_TOKENS_CAP) are full after a few dozen tokens. */
static char wordy_text[1024];

static const char *
wordy_token_text(void *impl, uint32_t id, size_t *len)
{
	(void)impl;
	(void)id;
	*len = sizeof(wordy_text);
	return wordy_text;
}

/* As server/main.c fills struct server (test_handlers.c's), with a manual
 * engine over the flavour of simulator asked for. */
/* server_up over the simulator as flavour fl makes it. */
static void
server_up_as(struct fake_server *fs, enum flavour fl)
{
	server_defaults(fs);
	sim_backend(&fs->be);
	if (fl == BARE) {
		fs->be.logprobs = NULL;
		fs->be.guided = 0;
	} else if (fl == WORDY) {
		memset(wordy_text, 'w', sizeof(wordy_text));
		fs->be.token_text = wordy_token_text;
		fs->be.max_token_bytes = 1;
	}
	server_start_backend(fs);
}

/* GET /_debug/generated?id=N's cancel_cause ("" for null), into buf. */
static void
debug_cause(struct fake_server *fs, uint64_t id, char *buf, size_t cap)
{
	struct fake_conn dc;
	char uri[64];
	const char *body;
	json_t *o, *cause;

	snprintf(uri, sizeof(uri), "/_debug/generated?id=%llu",
	    (unsigned long long)id);
	fake_open(&dc, fs, "GET", uri, NULL);
	route(&fs->srv, &dc.c, clock_ns);
	assert_non_null(dc.out.p);
	assert_int_equal(strncmp(dc.out.p, "Status: 200", 11), 0);
	body = strstr(dc.out.p, "\r\n\r\n");
	assert_non_null(body);
	o = json_loadb(body + 4, dc.out.len - (size_t)(body + 4 - dc.out.p),
	    0, NULL);
	assert_non_null(o);
	cause = json_object_get(o, "cancel_cause");
	snprintf(buf, cap, "%s", json_is_string(cause) ?
	    json_string_value(cause) : "");
	json_decref(o);
	fake_close(&dc);
}

/* ---- the engine's refusals ---------------------------------------------- */

/* A lab request of 5 tokens (the fields the tests do not vary). */
static void
lab_job(struct engine_request *r)
{
	memset(r, 0, sizeof(*r));
	r->prompt = "cause";
	r->prompt_len = strlen(r->prompt);
	r->prompt_tokens = 1;
	r->model = SIM_MODEL_LAB;
	engine_sampling_greedy(&r->sampling);
	r->max_tokens = 5;
	r->prefill_ms = 0;
	r->tpot_ms = -1;
	r->error_after = -1;
	r->t0_ns = clock_ns;
}

/* What each refused request is, and what submit() says of it. */
enum change { LOGPROBS, GUIDE, STOP_EMPTY, STOP_LONG, STOP_UTF8 };

static const struct {
	enum change what;
	enum engine_refusal refusal;
	const char *code;
	const char *param;
	const char *says;          /* in the message */
} refusals[] = {
	{ LOGPROBS, ENGINE_REFUSAL_LOGPROBS, "unsupported_parameter",
	    "logprobs", "has no logprobs" },
	{ GUIDE, ENGINE_REFUSAL_GUIDE, "unsupported_parameter", "",
	    "no guided decoding" },
	{ STOP_EMPTY, ENGINE_REFUSAL_STOP_EMPTY, "invalid_value", "stop",
	    "is empty" },
	{ STOP_LONG, ENGINE_REFUSAL_STOP_LONG, "invalid_value", "stop",
	    "longer than 64 bytes" },
	{ STOP_UTF8, ENGINE_REFUSAL_STOP_UTF8, "invalid_value", "stop",
	    "not valid UTF-8" },
};

static const char long_stop[] =
    "0123456789012345678901234567890123456789012345678901234567890123X";

/* r with one thing the engine refuses on the BARE backend. */
static void
refused_job(struct engine_request *r, enum change what)
{
	lab_job(r);
	switch (what) {
	case LOGPROBS:
		r->sampling.logprobs = 1;
		break;
	case GUIDE:
		r->sampling.guide = "{}";
		r->sampling.guide_len = 2;
		break;
	case STOP_EMPTY:
		r->stop[0] = "ok";
		r->stop_len[0] = 2;
		r->stop[1] = "";
		r->stop_len[1] = 0;
		r->nstop = 2;
		break;
	case STOP_LONG:
		r->stop[0] = long_stop;
		r->stop_len[0] = strlen(long_stop);
		r->nstop = 1;
		break;
	case STOP_UTF8:
		r->stop[0] = "\xff\xfe";
		r->stop_len[0] = 2;
		r->nstop = 1;
		break;
	}
}

/* engine_refusal names each reason engine_submit refuses for, and
 * engine_submit refuses (TS_EINVAL) exactly then. */
static void
test_engine_refusal_names_why(void **unused)
{
	struct fake_server fs;
	struct engine_request r;
	struct engine_seq *s;
	size_t k;

	(void)unused;
	server_up_as(&fs, BARE);
	for (k = 0; k < NELEM(refusals); k++) {
		refused_job(&r, refusals[k].what);
		assert_int_equal(engine_refusal(fs.srv.engine, &r),
		    refusals[k].refusal);
		assert_int_equal(engine_submit(fs.srv.engine, &r, &s),
		    TS_EINVAL);
		assert_null(s);
	}
	lab_job(&r);
	r.stop[0] = "fine";
	r.stop_len[0] = 4;
	r.nstop = 1;
	assert_int_equal(engine_refusal(fs.srv.engine, &r),
	    ENGINE_REFUSAL_NONE);
	assert_int_equal(engine_submit(fs.srv.engine, &r, &s), TS_OK);
	engine_release(fs.srv.engine, s);
	server_down(&fs);
}

/* submit() answers each refusal with its own reason, and none of them
 * with "the stop strings cannot be used" unless it is about them. */
static void
test_submit_says_why(void **unused)
{
	struct fake_server fs;
	struct engine_request r;
	struct engine_seq *s;
	struct http_error err;
	struct fake_conn fc;
	size_t k;

	(void)unused;
	server_up_as(&fs, BARE);
	fake_open(&fc, &fs, "POST", "/generate", NULL);
	for (k = 0; k < NELEM(refusals); k++) {
		refused_job(&r, refusals[k].what);
		memset(&err, 0, sizeof(err));
		assert_int_equal(submit(&fs.srv, &r, NULL, &fc.c, &s, &err),
		    TS_EINVAL);
		assert_int_equal(err.status, 400);
		assert_string_equal(err.type, "invalid_request_error");
		assert_string_equal(err.code, refusals[k].code);
		assert_string_equal(err.param, refusals[k].param);
		if (strstr(err.message, refusals[k].says) == NULL)
			fail_msg("case %zu: \"%s\" does not say \"%s\"", k,
			    err.message, refusals[k].says);
	}
	fake_close(&fc);
	server_down(&fs);
}

/* A stopping engine refuses with its own result, TS_ESHUTDOWN (no
 * deadline passed), and submit() answers it 503 shutdown. */
static void
test_shutdown_refusal(void **unused)
{
	struct fake_server fs;
	struct engine_request r;
	struct engine_seq *s;
	struct http_error err;
	struct fake_conn fc;

	(void)unused;
	server_up_as(&fs, SIM);
	engine_shutdown(fs.srv.engine);
	lab_job(&r);
	assert_int_equal(engine_submit(fs.srv.engine, &r, &s), TS_ESHUTDOWN);
	assert_null(s);
	fake_open(&fc, &fs, "POST", "/generate", NULL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(submit(&fs.srv, &r, NULL, &fc.c, &s, &err),
	    TS_ESHUTDOWN);
	assert_int_equal(err.status, 503);
	assert_string_equal(err.type, "server_error");
	assert_string_equal(err.code, "shutdown");
	assert_string_equal(err.message, "the server is shutting down");
	assert_string_equal(ts_strerror(TS_ESHUTDOWN), "shutting down");
	fake_close(&fc);
	server_down(&fs);
}

/* ---- a relay the server ends -------------------------------------------- */

/* An encoder that fails on token `fail_at` with `rc`. */
struct failing {
	uint32_t fail_at;
	enum ts_err rc;
	uint32_t tokens;
};

static enum ts_err
failing_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct failing *f = r->resp;

	(void)text;
	(void)len;
	if (index == f->fail_at)
		return f->rc;
	f->tokens++;
	*event = 1;
	return ts_buf_append(out, "t\n", 2);
}

static enum ts_err
failing_end(struct relay *r, struct ts_buf *out, enum engine_finish fin,
    const struct engine_view *v)
{
	(void)r;
	(void)fin;
	(void)v;
	return ts_buf_append(out, "end\n", 4);
}

static const struct relay_ops failing_ops = {
	.token = failing_token, .end = failing_end, .tokens_reach_client = 1,
};

/* Relays sequence s to fc with the ops and their state, on this thread
 * (relay_run), as the server's relay would: no stop strings. */
static void
relay_over_fake(struct fake_server *fs, struct fake_conn *fc,
    struct reply *rp, struct relay *rl, struct engine_seq *s,
    const struct relay_ops *ops, void *resp)
{
	struct relay_env env;

	memset(rp, 0, sizeof(*rp));
	rp->conn = &fc->c;
	rp->id_prefix = "";
	rp->t0 = clock_ns;
	env = server_relay_env(&fs->srv);
	assert_int_equal(relay_init(rl, &env, rp, s, 0, NULL, NULL, 0, ops,
	    resp), TS_OK);
	relay_run(&fc->c, rl);
}

/* relay_run over an op that fails: the record's cause is the server's
 * (server_error for an encoding failure, output_limit for TS_ELIMIT),
 * not client_gone, and /_debug/generated names it. */
static void
test_relay_run_failure_cause(void **unused)
{
	static const struct {
		enum ts_err rc;
		enum engine_cause cause;
		enum state_cause recorded;
		const char *name;
	} cases[] = {
		{ TS_EINVAL, ENGINE_CAUSE_SERVER_ERROR,
		    STATE_CAUSE_SERVER_ERROR, "server_error" },
		{ TS_ENOMEM, ENGINE_CAUSE_SERVER_ERROR,
		    STATE_CAUSE_SERVER_ERROR, "server_error" },
		{ TS_ELIMIT, ENGINE_CAUSE_OUTPUT_LIMIT,
		    STATE_CAUSE_OUTPUT_LIMIT, "output_limit" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct engine_request r;
		struct engine_seq *s;
		struct relay rl;
		struct reply rp;
		struct failing f = { 3, cases[k].rc, 0 };
		struct state_record rec;
		char name[32];
		uint64_t id;

		server_up_as(&fs, SIM);
		fake_open(&fc, &fs, "GET", "/stream", NULL);
		lab_job(&r);
		r.max_tokens = 200;
		assert_int_equal(engine_submit(fs.srv.engine, &r, &s), TS_OK);
		id = engine_seq_id(s);
		relay_over_fake(&fs, &fc, &rp, &rl, s, &failing_ops, &f);
		assert_int_equal(rl.fail, cases[k].rc);
		assert_int_equal(relay_fail_cause(&rl), cases[k].cause);
		engine_drain(fs.srv.engine);
		assert_int_equal(f.tokens, 3);
		assert_int_equal(state_lookup(fs.srv.state, id, &rec), TS_OK);
		assert_int_equal(rec.status, STATE_CANCELLED);
		assert_int_equal(rec.cause, cases[k].recorded);
		assert_true(rec.generated < 200);
		debug_cause(&fs, id, name, sizeof(name));
		assert_string_equal(name, cases[k].name);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* ---- a relay that is behind: bounded pumps ------------------------------- */

struct sized {
	size_t bytes;                 /* per token event */
	uint32_t tokens;
};

static enum ts_err
sized_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct sized *z = r->resp;
	char ev[512];

	(void)index;
	(void)text;
	(void)len;
	z->tokens++;
	*event = 1;
	memset(ev, 'e', z->bytes);
	return ts_buf_append(out, ev, z->bytes);
}

static const struct relay_ops sized_ops = {
	.token = sized_token, .end = failing_end, .tokens_reach_client = 1,
};

/* 2,000 tokens produced before the relay pumps once (a late relay): they
 * go out over several pumps of RELAY_PUMP_TOKENS tokens (2-byte events)
 * or RELAY_PUMP_BYTES bytes (300-byte events), not in one; every token
 * and the end arrive. On the code before, one write of all of them. */
static void
test_relay_pump_budget(void **unused)
{
	static const size_t sizes[] = { 2, 300 };
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(sizes); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct engine_request r;
		struct engine_seq *s;
		struct relay rl;
		struct reply rp;
		struct sized z = { sizes[k], 0 };
		unsigned want;

		server_up_as(&fs, SIM);
		fake_open(&fc, &fs, "GET", "/stream", NULL);
		lab_job(&r);
		r.max_tokens = 2000;
		r.sampling.ignore_eos = 1;
		assert_int_equal(engine_submit(fs.srv.engine, &r, &s), TS_OK);
		engine_drain(fs.srv.engine);    /* all 2,000 produced */
		relay_over_fake(&fs, &fc, &rp, &rl, s, &sized_ops, &z);
		assert_int_equal(z.tokens, 2000);
		assert_int_equal(fc.out.len, 2000 * sizes[k] + 4);
		assert_memory_equal(fc.out.p + fc.out.len - 4, "end\n", 4);
		/* pumps of at most the budget: at least this many writes */
		want = sizes[k] * RELAY_PUMP_TOKENS < RELAY_PUMP_BYTES ?
		    2000 / RELAY_PUMP_TOKENS :
		    (unsigned)(2000 * sizes[k] / (RELAY_PUMP_BYTES + sizes[k]));
		assert_true(fc.nwrites >= want);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* ---- handlers whose answer outgrows its buffer -------------------------- */

/* A /v1/responses stream and a POST /generate on the WORDY backend: the
 * answer's text buffer fills, the token op says TS_ELIMIT (the /v1 one
 * said TS_EINVAL, an encoding failure) and the record says
 * output_limit (it said client_gone). */
static void
test_output_cap_recorded(void **unused)
{
	static const struct {
		const char *uri;
		const char *body;
	} cases[] = {
		{ "/v1/responses", "{\"model\":\"tokstream-sim\","
		    "\"input\":\"grow\",\"max_output_tokens\":100,"
		    "\"stream\":true,\"ignore_eos\":true}" },
		{ "/generate", "{\"prompt\":\"grow\",\"max_tokens\":100}" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct state_record rec;
		char name[32];

		server_up_as(&fs, WORDY);
		fake_open(&fc, &fs, "POST", cases[k].uri, cases[k].body);
		route(&fs.srv, &fc.c, clock_ns);
		engine_drain(fs.srv.engine);
		assert_int_equal(state_lookup(fs.srv.state, 0, &rec), TS_OK);
		assert_int_equal(rec.status, STATE_CANCELLED);
		if (rec.cause != STATE_CAUSE_OUTPUT_LIMIT)
			fail_msg("%s: cause %d, not output_limit (%d)",
			    cases[k].uri, (int)rec.cause,
			    (int)STATE_CAUSE_OUTPUT_LIMIT);
		assert_true(rec.generated < 100);
		debug_cause(&fs, rec.id, name, sizeof(name));
		assert_string_equal(name, "output_limit");
		fake_close(&fc);
		server_down(&fs);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_refusal_names_why),
		cmocka_unit_test(test_submit_says_why),
		cmocka_unit_test(test_shutdown_refusal),
		cmocka_unit_test(test_relay_run_failure_cause),
		cmocka_unit_test(test_output_cap_recorded),
		cmocka_unit_test(test_relay_pump_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
