/*
 * test_engine.c - the serving engine on a synthetic clock (engine_create_
 * manual + engine_advance): token order and timing of prefill and decode
 * steps, continuous batching (shared step boundaries, joining at a
 * boundary), slots and the waiting queue, 429 at the cap, cancellation in
 * every phase, write stalls, injected errors, resume, the load factor,
 * seeded jitter, --no-cancel and shutdown. No test sleeps.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "engine/engine.h"
#include "server/record.h"
#include "server/state.h"
#include "sim/lab.h"
#include "sim/sim.h"

#define MS 1000000LL

/* A sequence under test and when each of its tokens appeared. */
struct probe {
	struct engine_seq *s;
	int64_t at[512];
	uint32_t seen;
};

/* The simulator, and the server's record hooks over a state (if any). */
static struct engine_backend sim;
static struct record_ctx records;
static struct engine_hooks hooks;

static struct engine *
mk_engine_cfg(const struct engine_config *cfg, struct state *st)
{
	struct engine *e;

	sim_backend(&sim);
	records.state = st;
	records.metrics = NULL;
	record_hooks(&hooks, &records);
	assert_int_equal(engine_create_manual(&e, cfg, &sim, &hooks), TS_OK);
	return e;
}

static struct engine *
mk_engine(uint32_t seqs, uint32_t waiting, struct state *st)
{
	struct engine_config cfg;

	engine_config_defaults(&cfg);
	cfg.max_num_seqs = seqs;
	cfg.max_waiting = waiting;
	cfg.lat.tpot_ms = 20;
	return mk_engine_cfg(&cfg, st);
}

/* A request for the lab model with the fields the tests do not vary. */
static void
lab_request(struct engine_request *r, const char *prompt, uint32_t max_tokens,
    double prefill_ms)
{
	memset(r, 0, sizeof(*r));
	r->prompt = prompt;
	r->prompt_len = strlen(prompt);
	r->model = SIM_MODEL_LAB;
	engine_sampling_greedy(&r->sampling);
	r->max_tokens = max_tokens;
	r->prefill_ms = prefill_ms;
	r->tpot_ms = -1;
	r->error_after = -1;
}

static enum ts_err
submit(struct engine *e, struct probe *p, const char *prompt,
    uint32_t max_tokens, double prefill_ms, int64_t t0)
{
	struct engine_request r;

	memset(p, 0, sizeof(*p));
	lab_request(&r, prompt, max_tokens, prefill_ms);
	r.t0_ns = t0;
	return engine_submit(e, &r, &p->s);
}

/* Records the time of every token that appeared at `now`. */
static void
observe(struct probe *p, int64_t now)
{
	struct engine_view v;

	if (p->s == NULL)
		return;
	engine_seq_view(p->s, &v);
	while (p->seen < v.produced && p->seen < 512)
		p->at[p->seen++] = now;
}

/* Runs the engine's events up to `until`, observing the probes. */
static int64_t
run_until(struct engine *e, int64_t now, int64_t until, struct probe **ps,
    size_t n)
{
	for (;;) {
		int64_t t = engine_advance(e, now);
		size_t i;

		for (i = 0; i < n; i++)
			observe(ps[i], now);
		if (t == INT64_MAX || t > until)
			return until;
		now = t;
	}
}

static enum engine_finish
finish_of(struct probe *p)
{
	struct engine_view v;

	engine_seq_view(p->s, &v);
	return v.finish;
}

static void
test_one_sequence_timing_and_tokens(void **unused)
{
	struct engine *e = mk_engine(4, 4, NULL);
	struct probe a = { 0 }, *ps[] = { &a };
	struct engine_view v;
	struct sim_lab g;
	uint32_t i;

	(void)unused;
	assert_int_equal(submit(e, &a, "hello", 5, 40, 0), TS_OK);
	run_until(e, 0, 10000 * MS, ps, 1);
	assert_int_equal(a.seen, 5);
	/* TTFT = prefill; then one token per TPOT (20 ms). */
	for (i = 0; i < 5; i++)
		assert_int_equal(a.at[i], 40 * MS + (int64_t)i * 20 * MS);
	engine_seq_view(a.s, &v);
	assert_int_equal(v.finish, ENGINE_FINISH_LENGTH);
	sim_lab_init(&g, "hello", 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(v.ids[i], sim_lab_next(&g));
	engine_release(e, a.s);
	engine_destroy(e);
}

/* Two sequences share step boundaries; a third waits for a slot and
 * starts its prefill when one frees. */
static void
test_batching_and_queue(void **unused)
{
	struct engine *e = mk_engine(2, 4, NULL);
	struct probe a = { 0 }, b = { 0 }, c = { 0 }, *ps[] = { &a, &b, &c };
	struct engine_stats st;
	uint32_t i;

	(void)unused;
	assert_int_equal(submit(e, &a, "a", 3, 40, 0), TS_OK);
	assert_int_equal(submit(e, &b, "b", 10, 40, 0), TS_OK);
	assert_int_equal(submit(e, &c, "c", 2, 40, 0), TS_OK);
	engine_advance(e, 0);
	engine_stats(e, &st);
	assert_int_equal(st.running, 2);
	assert_int_equal(st.waiting, 1);
	run_until(e, 0, 10000 * MS, ps, 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(a.at[i], b.at[i]);
	/* a ends at 80 ms; c's prefill starts then: first token at 120. */
	assert_int_equal(a.at[2], 80 * MS);
	assert_int_equal(c.at[0], 120 * MS);
	/* c joins b's batch: next boundary after 120 is 120 itself (b
	 * produces at 40 + 20k), so c's second token is one step later. */
	assert_int_equal(c.at[1], 140 * MS);
	assert_int_equal(b.at[5], 140 * MS);
	engine_release(e, a.s);
	engine_release(e, b.s);
	engine_release(e, c.s);
	engine_destroy(e);
}

/* A prefill that ends between two boundaries waits for the next one. */
static void
test_join_at_step_boundary(void **unused)
{
	struct engine *e = mk_engine(4, 4, NULL);
	struct probe a = { 0 }, b = { 0 }, *ps[] = { &a, &b };

	(void)unused;
	assert_int_equal(submit(e, &a, "a", 20, 40, 0), TS_OK);
	run_until(e, 0, 50 * MS, ps, 2);
	/* b arrives at 50 ms; prefill 15 ms ends at 65, inside the step
	 * 60..80: it joins at 80 and decodes its second token at 100. */
	assert_int_equal(submit(e, &b, "b", 3, 15, 50 * MS), TS_OK);
	run_until(e, 50 * MS, 10000 * MS, ps, 2);
	assert_int_equal(b.at[0], 65 * MS);
	assert_int_equal(b.at[1], 100 * MS);
	assert_int_equal(b.at[2], 120 * MS);
	assert_int_equal(a.at[4], 120 * MS);
	engine_release(e, a.s);
	engine_release(e, b.s);
	engine_destroy(e);
}

static void
test_queue_cap_refuses(void **unused)
{
	struct engine *e = mk_engine(1, 2, NULL);
	struct probe p[4];

	(void)unused;
	assert_int_equal(submit(e, &p[0], "x", 5, 40, 0), TS_OK);
	assert_int_equal(submit(e, &p[1], "x", 5, 40, 0), TS_OK);
	assert_int_equal(submit(e, &p[2], "x", 5, 40, 0), TS_OK);
	assert_int_equal(submit(e, &p[3], "x", 5, 40, 0), TS_ELIMIT);
	assert_null(p[3].s);
	/* 0 waiting allowed: only free slots take requests. */
	engine_release(e, p[0].s);
	engine_release(e, p[1].s);
	engine_release(e, p[2].s);
	engine_destroy(e);
	e = mk_engine(1, 0, NULL);
	assert_int_equal(submit(e, &p[0], "x", 5, 40, 0), TS_OK);
	assert_int_equal(submit(e, &p[1], "x", 5, 40, 0), TS_ELIMIT);
	engine_release(e, p[0].s);
	engine_destroy(e);
}

/* Cancelled mid-decode: leaves at the next boundary without a token and
 * its slot goes to the waiting request at that moment. */
static void
test_cancel_frees_slot_at_boundary(void **unused)
{
	struct state *st;
	struct engine *e;
	struct probe a = { 0 }, b = { 0 }, *ps[] = { &a, &b };
	struct state_record rec;

	(void)unused;
	assert_int_equal(state_open_memory(&st), TS_OK);
	e = mk_engine(1, 4, st);
	assert_int_equal(submit(e, &a, "a", 100, 40, 0), TS_OK);
	assert_int_equal(submit(e, &b, "b", 2, 40, 0), TS_OK);
	run_until(e, 0, 105 * MS, ps, 2);
	assert_int_equal(a.seen, 4);            /* 40, 60, 80, 100 */
	engine_delivered(a.s, 3);               /* the 4th write failed */
	engine_cancel(e, a.s, 105 * MS);
	run_until(e, 105 * MS, 10000 * MS, ps, 2);
	assert_int_equal(a.seen, 4);
	assert_int_equal(finish_of(&a), ENGINE_FINISH_CANCELLED);
	/* a left at 120; b prefilled 120..160. */
	assert_int_equal(b.at[0], 160 * MS);
	engine_release(e, a.s);
	assert_int_equal(state_lookup(st, 1, &rec),
	    TS_OK);
	assert_int_equal(rec.status, STATE_CANCELLED);
	assert_int_equal(rec.generated, 4);
	assert_int_equal(rec.wasted, 1);
	assert_int_equal(rec.leave_us, 15000);
	assert_int_equal(rec.cause, STATE_CAUSE_CLIENT_GONE);
	assert_int_equal(state_lookup(st, 2, &rec), TS_OK);
	assert_int_equal(rec.queue_us, 120000);
	engine_release(e, b.s);
	engine_destroy(e);
	state_close(st);
}

static void
test_cancel_while_waiting_and_in_prefill(void **unused)
{
	struct engine *e = mk_engine(1, 4, NULL);
	struct probe a = { 0 }, b = { 0 }, *ps[] = { &a, &b };
	struct engine_stats s;

	(void)unused;
	assert_int_equal(submit(e, &a, "a", 5, 1000, 0), TS_OK);
	assert_int_equal(submit(e, &b, "b", 5, 40, 0), TS_OK);
	run_until(e, 0, 10 * MS, ps, 2);
	engine_cancel(e, b.s, 10 * MS);         /* waiting */
	engine_advance(e, 10 * MS);
	assert_int_equal(finish_of(&b), ENGINE_FINISH_CANCELLED);
	engine_cancel(e, a.s, 20 * MS);         /* in prefill */
	engine_advance(e, 20 * MS);
	assert_int_equal(finish_of(&a), ENGINE_FINISH_CANCELLED);
	assert_int_equal(a.seen, 0);
	engine_stats(e, &s);
	assert_int_equal(s.running, 0);
	assert_int_equal(s.waiting, 0);
	assert_int_equal(s.generated, 0);
	engine_release(e, a.s);
	engine_release(e, b.s);
	engine_destroy(e);
}

static void
test_no_cancel_keeps_generating(void **unused)
{
	struct engine_config cfg;
	struct engine *e;
	struct probe a = { 0 }, *ps[] = { &a };

	(void)unused;
	engine_config_defaults(&cfg);
	cfg.no_cancel = 1;
	e = mk_engine_cfg(&cfg, NULL);
	assert_int_equal(submit(e, &a, "a", 50, 40, 0), TS_OK);
	run_until(e, 0, 100 * MS, ps, 1);
	engine_cancel(e, a.s, 100 * MS);
	engine_release(e, a.s);           /* the relay is gone too */
	a.s = NULL;
	run_until(e, 100 * MS, 100000 * MS, ps, 1);
	{
		struct engine_stats s;

		engine_stats(e, &s);
		assert_int_equal(s.generated, 50);
		assert_int_equal(s.running, 0);
	}
	engine_destroy(e);
}

static int stalls;

static void
on_stall(void *user)
{
	(void)user;
	stalls++;
}

static void
test_write_stall_cancels(void **unused)
{
	struct engine *e = mk_engine(4, 4, NULL);
	struct engine_request r;
	struct probe a = { 0 }, *ps[] = { &a };

	(void)unused;
	memset(&a, 0, sizeof(a));
	lab_request(&r, "stall", 8000, 40);
	r.on_stall = on_stall;
	assert_int_equal(engine_submit(e, &r, &a.s), TS_OK);
	run_until(e, 0, 100 * MS, ps, 1);
	engine_write_begin(a.s, 100 * MS);
	run_until(e, 100 * MS, 100 * MS + 29999 * MS, ps, 1);
	assert_int_equal(stalls, 0);
	assert_int_equal(finish_of(&a), ENGINE_FINISH_NONE);
	run_until(e, 100 * MS + 29999 * MS, 100 * MS + 30100 * MS, ps, 1);
	assert_int_equal(stalls, 1);
	assert_int_equal(finish_of(&a), ENGINE_FINISH_CANCELLED);
	engine_release(e, a.s);
	engine_destroy(e);
}

static void
test_error_after_zero_tokens_and_resume(void **unused)
{
	struct engine *e = mk_engine(4, 4, NULL);
	struct engine_request r;
	struct probe a = { 0 }, b = { 0 }, c = { 0 }, *ps[] = { &a, &b, &c };
	struct engine_view va, vc;

	(void)unused;
	lab_request(&r, "resume me", 30, 40);
	r.error_after = 4;
	memset(&a, 0, sizeof(a));
	assert_int_equal(engine_submit(e, &r, &a.s), TS_OK);
	r.error_after = -1;
	r.max_tokens = 0;
	memset(&b, 0, sizeof(b));
	assert_int_equal(engine_submit(e, &r, &b.s), TS_OK);
	r.max_tokens = 30;
	r.start_index = 7;
	memset(&c, 0, sizeof(c));
	assert_int_equal(engine_submit(e, &r, &c.s), TS_OK);
	run_until(e, 0, 100000 * MS, ps, 3);
	assert_int_equal(a.seen, 4);
	assert_int_equal(finish_of(&a), ENGINE_FINISH_ERROR);
	assert_int_equal(b.seen, 0);
	assert_int_equal(finish_of(&b), ENGINE_FINISH_LENGTH);
	assert_int_equal(c.seen, 23);
	engine_seq_view(a.s, &va);
	engine_seq_view(c.s, &vc);
	{
		struct sim_lab g;
		uint32_t i;

		sim_lab_init(&g, "resume me", 9);
		for (i = 0; i < 30; i++) {
			uint32_t id = sim_lab_next(&g);

			if (i < 4)
				assert_int_equal(va.ids[i], id);
			if (i >= 7)
				assert_int_equal(vc.ids[i - 7], id);
		}
	}
	engine_release(e, a.s);
	engine_release(e, b.s);
	engine_release(e, c.s);
	engine_destroy(e);
}

static void
test_load_factor(void **unused)
{
	struct engine_config cfg;
	struct engine *e;
	struct probe a = { 0 }, b = { 0 }, *ps[] = { &a, &b };

	(void)unused;
	engine_config_defaults(&cfg);
	cfg.max_num_seqs = 5;
	cfg.load_factor_max = 3.0;
	assert_true(engine_load_factor(&cfg, 1) == 1.0);
	assert_true(engine_load_factor(&cfg, 3) == 2.0);
	assert_true(engine_load_factor(&cfg, 5) == 3.0);
	assert_true(engine_load_factor(&cfg, 9) == 3.0);
	cfg.lat.tpot_ms = 20;
	e = mk_engine_cfg(&cfg, NULL);
	/* Two sequences: factor 1.5 on prefill (40 -> 60) and steps. */
	assert_int_equal(submit(e, &a, "a", 3, 40, 0), TS_OK);
	assert_int_equal(submit(e, &b, "b", 3, 40, 0), TS_OK);
	run_until(e, 0, 10000 * MS, ps, 2);
	assert_int_equal(a.at[0], 40 * MS);    /* admitted alone */
	assert_int_equal(b.at[0], 60 * MS);    /* second in: x1.5 */
	assert_int_equal(a.at[1], 70 * MS);    /* 40 + 20 x 1.5 */
	engine_release(e, a.s);
	engine_release(e, b.s);
	engine_destroy(e);
}

static void
run_jittered(uint64_t seed, int64_t *times)
{
	struct engine_config cfg;
	struct engine *e;
	struct probe a = { 0 }, *ps[] = { &a };

	engine_config_defaults(&cfg);
	cfg.jitter_tpot_ms = 5;
	cfg.jitter_prefill_ms = 5;
	cfg.seed = seed;
	e = mk_engine_cfg(&cfg, NULL);
	assert_int_equal(submit(e, &a, "j", 20, 40, 0), TS_OK);
	run_until(e, 0, 100000 * MS, ps, 1);
	memcpy(times, a.at, 20 * sizeof(*times));
	engine_release(e, a.s);
	engine_destroy(e);
}

static void
test_jitter_is_seeded(void **unused)
{
	int64_t x[20], y[20], z[20];
	int i, differ = 0;

	(void)unused;
	run_jittered(1, x);
	run_jittered(1, y);
	run_jittered(2, z);
	assert_memory_equal(x, y, sizeof(x));
	for (i = 0; i < 20; i++) {
		differ += x[i] != z[i];
		if (i > 0)
			assert_true(x[i] - x[i - 1] >= 2 * MS);   /* >= 10% */
	}
	assert_true(differ > 0);
	assert_true(x[19] != 40 * MS + 19 * 20 * MS);
}

static void
test_shutdown(void **unused)
{
	struct engine *e = mk_engine(1, 4, NULL);
	struct probe a, b, c;

	(void)unused;
	assert_int_equal(submit(e, &a, "a", 5, 40, 0), TS_OK);
	assert_int_equal(submit(e, &b, "b", 5, 40, 0), TS_OK);
	engine_advance(e, 0);
	engine_shutdown(e);
	assert_int_equal(finish_of(&a), ENGINE_FINISH_SHUTDOWN);
	assert_int_equal(finish_of(&b), ENGINE_FINISH_SHUTDOWN);
	assert_int_equal(submit(e, &c, "c", 5, 40, 0), TS_ETIMEDOUT);
	engine_release(e, a.s);
	engine_release(e, b.s);
	engine_destroy(e);
}

static void
test_prefill_model(void **unused)
{
	struct engine_latency lat;

	(void)unused;
	engine_latency_defaults(&lat);
	assert_true(engine_prefill_ms(&lat, 0) == lat.prefill_base_ms);
	assert_true(engine_prefill_ms(&lat, 400) ==
	    lat.prefill_base_ms + 400 * lat.prefill_per_token_ms);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_sequence_timing_and_tokens),
		cmocka_unit_test(test_batching_and_queue),
		cmocka_unit_test(test_join_at_step_boundary),
		cmocka_unit_test(test_queue_cap_refuses),
		cmocka_unit_test(test_cancel_frees_slot_at_boundary),
		cmocka_unit_test(test_cancel_while_waiting_and_in_prefill),
		cmocka_unit_test(test_no_cancel_keeps_generating),
		cmocka_unit_test(test_write_stall_cancels),
		cmocka_unit_test(test_error_after_zero_tokens_and_resume),
		cmocka_unit_test(test_load_factor),
		cmocka_unit_test(test_jitter_is_seeded),
		cmocka_unit_test(test_shutdown),
		cmocka_unit_test(test_prefill_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
