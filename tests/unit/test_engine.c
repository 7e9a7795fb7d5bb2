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

#include <stdio.h>
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

/* A prefill that ends between two boundaries: its first token is part
 * of the next step, its second one step later. */
static void
test_join_at_step_boundary(void **unused)
{
	struct engine *e = mk_engine(4, 4, NULL);
	struct probe a = { 0 }, b = { 0 }, *ps[] = { &a, &b };

	(void)unused;
	assert_int_equal(submit(e, &a, "a", 20, 40, 0), TS_OK);
	run_until(e, 0, 50 * MS, ps, 2);
	/* b arrives at 50 ms; prefill 15 ms ends at 65, inside the step
	 * 60..80: its first token comes with that step at 80, its second
	 * at 100. */
	assert_int_equal(submit(e, &b, "b", 3, 15, 50 * MS), TS_OK);
	run_until(e, 50 * MS, 10000 * MS, ps, 2);
	assert_int_equal(b.at[0], 80 * MS);
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
	engine_cancel(e, a.s, 105 * MS, ENGINE_CAUSE_CLIENT_GONE);
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
	engine_cancel(e, b.s, 10 * MS, ENGINE_CAUSE_CLIENT_GONE);         /* waiting */
	engine_advance(e, 10 * MS);
	assert_int_equal(finish_of(&b), ENGINE_FINISH_CANCELLED);
	engine_cancel(e, a.s, 20 * MS, ENGINE_CAUSE_CLIENT_GONE);         /* in prefill */
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
	engine_cancel(e, a.s, 100 * MS, ENGINE_CAUSE_CLIENT_GONE);
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

/* A stream its relay gives up on as stalled keeps that cause in its
 * record (the write-stall timer itself is the I/O threads'). */
static void
test_write_stall_cause(void **unused)
{
	struct state *st;
	struct engine *e;
	struct probe a = { 0 }, *ps[] = { &a };
	struct state_record rec;

	(void)unused;
	assert_int_equal(state_open_memory(&st), TS_OK);
	e = mk_engine(4, 4, st);
	assert_int_equal(submit(e, &a, "stall", 8000, 40, 0), TS_OK);
	run_until(e, 0, 100 * MS, ps, 1);
	engine_cancel(e, a.s, 100 * MS, ENGINE_CAUSE_WRITE_STALL);
	/* a later hang-up does not overwrite the first cause */
	engine_cancel(e, a.s, 101 * MS, ENGINE_CAUSE_CLIENT_GONE);
	run_until(e, 100 * MS, 200 * MS, ps, 1);
	assert_int_equal(finish_of(&a), ENGINE_FINISH_CANCELLED);
	engine_release(e, a.s);
	assert_int_equal(state_lookup(st, 1, &rec), TS_OK);
	assert_int_equal(rec.status, STATE_CANCELLED);
	assert_int_equal(rec.cause, STATE_CAUSE_WRITE_STALL);
	assert_int_equal(rec.leave_us, 20000);     /* the boundary at 120 */
	engine_destroy(e);
	state_close(st);
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
	/* second in: prefill x1.5 ends at 60, inside the step 40..70 */
	assert_int_equal(b.at[0], 70 * MS);
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

/* 100 streams arriving 0.3 ms apart (as a load client opens them): each
 * one's first token lands on a step boundary and its second one step
 * later, whatever its phase against the grid. */
static void
test_first_token_on_boundary_gap_one_step(void **unused)
{
	struct engine *e = mk_engine(128, 0, NULL);
	struct probe p[100], *ps[100];
	char prompt[16];
	int64_t now = 0, last = 0;
	int i;

	(void)unused;
	for (i = 0; i < 100; i++) {
		ps[i] = &p[i];
		snprintf(prompt, sizeof(prompt), "p%d", i);
		now = (int64_t)i * 300000;      /* 0.3 ms */
		/* what is due before it arrives happens at its own time */
		run_until(e, last, now, ps, (size_t)i);
		assert_int_equal(submit(e, &p[i], prompt, 5, 0, now), TS_OK);
		last = now;
	}
	run_until(e, last, 10000 * MS, ps, 100);
	for (i = 0; i < 100; i++) {
		assert_int_equal(p[i].seen, 5);
		/* the grid started with the first at 0: boundaries 20k ms */
		assert_int_equal(p[i].at[0] % (20 * MS), 0);
		assert_int_equal(p[i].at[1] - p[i].at[0], 20 * MS);
		assert_int_equal(p[i].at[4] - p[i].at[3], 20 * MS);
		engine_release(e, p[i].s);
	}
	engine_destroy(e);
}

/* Runs the engine's events from now to until (each at its own time),
 * checking that no pass runs more than one grid step and one pass of an
 * own cadence. Returns until. */
static int64_t
run_bounded(struct engine *e, int64_t now, int64_t until, struct probe **ps,
    size_t n)
{
	for (;;) {
		struct engine_stats st0, st1;
		int64_t t;
		size_t i;

		engine_stats(e, &st0);
		t = engine_advance(e, now);
		engine_stats(e, &st1);
		assert_true(st1.steps - st0.steps <= 2);
		for (i = 0; i < n; i++)
			observe(ps[i], now);
		if (t == INT64_MAX || t > until)
			return until;
		now = t;
	}
}

/* A tpot_ms 0 request (taken as ENGINE_MIN_TPOT_MS) beside a stream at
 * the server's TPOT: the stream's gaps stay one step, each engine pass
 * runs at most one step, and a cancel still acts at the next boundary. */
static void
test_tpot_zero_beside_a_stream(void **unused)
{
	struct engine *e = mk_engine(4, 4, NULL);
	struct engine_request r;
	struct probe fast = { 0 }, slow = { 0 }, *ps[] = { &fast, &slow };
	uint32_t i;

	(void)unused;
	lab_request(&r, "fast", 2000, 0);
	r.tpot_ms = 0;
	assert_int_equal(engine_submit(e, &r, &fast.s), TS_OK);
	assert_int_equal(submit(e, &slow, "slow", 20, 0, 0), TS_OK);
	run_bounded(e, 0, 200 * MS + 500000, ps, 2);
	engine_cancel(e, slow.s, 200 * MS + 500000, ENGINE_CAUSE_CLIENT_GONE);
	run_bounded(e, 200 * MS + 500000, 100000 * MS, ps, 2);
	/* the slow stream: 0, 20, ... 200 ms, then cancelled at 200.5: it
	 * leaves at the boundary of 220 without its token */
	assert_int_equal(slow.seen, 11);
	for (i = 1; i < slow.seen; i++)
		assert_int_equal(slow.at[i] - slow.at[i - 1], 20 * MS);
	assert_int_equal(finish_of(&slow), ENGINE_FINISH_CANCELLED);
	/* the fast one: a token a millisecond */
	assert_true(fast.seen >= 500);
	for (i = 1; i < 500; i++)
		assert_int_equal(fast.at[i] - fast.at[i - 1], 1 * MS);
	assert_int_equal(finish_of(&fast), ENGINE_FINISH_LENGTH);
	engine_release(e, fast.s);
	engine_release(e, slow.s);
	engine_destroy(e);
}

/* Admission counts every stream a relay holds: one that finished but
 * whose relay has not let go (a client slow to take its last bytes) still
 * counts, so the next request gets 429 until it is released. */
static void
test_held_streams_count_for_429(void **unused)
{
	struct engine *e = mk_engine(1, 0, NULL);
	struct probe a = { 0 }, b = { 0 }, *ps[] = { &a };
	struct engine_stats st;

	(void)unused;
	assert_int_equal(submit(e, &a, "a", 2, 0, 0), TS_OK);
	run_until(e, 0, 1000 * MS, ps, 1);
	assert_int_equal(finish_of(&a), ENGINE_FINISH_LENGTH);
	engine_stats(e, &st);
	assert_int_equal(st.running, 0);
	assert_int_equal(st.held, 1);
	assert_int_equal(submit(e, &b, "b", 2, 0, 1000 * MS), TS_ELIMIT);
	engine_release(e, a.s);
	assert_int_equal(submit(e, &b, "b", 2, 0, 1000 * MS), TS_OK);
	engine_release(e, b.s);
	engine_destroy(e);
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
		cmocka_unit_test(test_write_stall_cause),
		cmocka_unit_test(test_error_after_zero_tokens_and_resume),
		cmocka_unit_test(test_load_factor),
		cmocka_unit_test(test_jitter_is_seeded),
		cmocka_unit_test(test_shutdown),
		cmocka_unit_test(test_prefill_model),
		cmocka_unit_test(test_first_token_on_boundary_gap_one_step),
		cmocka_unit_test(test_tpot_zero_beside_a_stream),
		cmocka_unit_test(test_held_streams_count_for_429),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
