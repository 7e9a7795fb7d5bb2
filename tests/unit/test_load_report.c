/*
 * test_load_report.c - the pure part of `tokbench load`: report math over
 * known samples (mean, nearest-rank percentiles, std, TPOT, ITL pooling,
 * throughput, goodput against SLOs), the --goodput / --abandon / length
 * spec parsers (bad inputs rejected, outputs untouched), and the seeded
 * PRNG (reproducible, exponential inter-arrival times with the right mean),
 * and the failure kinds (names, the kind of each HTTP status).
 * Statistical checks use fixed seeds, so they cannot flake.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench/load_report.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* |got - want| <= eps, with a message naming what was compared. */
static void
check_near(const char *what, double got, double want, double eps)
{
	if (!(fabs(got - want) <= eps))
		fail_msg("%s: got %.9g, want %.9g (+-%g)", what, got, want,
		    eps);
}

/* ---- metrics ------------------------------------------------------- */

static void
test_metric_known(void **state)
{
	/* 10..100 shuffled: nearest rank p50 = rank 5 = 50, p90 = rank 9,
	 * p99 = rank ceil(9.9) = 10; population std = sqrt(825) */
	static const double v[] = {70, 10, 100, 40, 20, 90, 30, 60, 80, 50};
	struct load_metric m;

	(void)state;
	assert_int_equal(load_metric_compute(v, NELEM(v), &m), TS_OK);
	assert_int_equal(m.n, 10);
	check_near("mean", m.mean, 55.0, 1e-12);
	check_near("median", m.median, 50.0, 0);
	check_near("p90", m.p90, 90.0, 0);
	check_near("p99", m.p99, 100.0, 0);
	check_near("min", m.min, 10.0, 0);
	check_near("max", m.max, 100.0, 0);
	check_near("std", m.std, sqrt(825.0), 1e-9);
	assert_true(v[0] == 70);       /* the caller's order is kept */
}

static void
test_metric_edge(void **state)
{
	static const double one[] = {42.5};
	static const double nan_v[] = {1, NAN};
	struct load_metric m;

	(void)state;
	assert_int_equal(load_metric_compute(NULL, 0, &m), TS_OK);
	assert_int_equal(m.n, 0);
	assert_true(m.mean == 0 && m.p99 == 0);
	assert_int_equal(load_metric_compute(one, 1, &m), TS_OK);
	assert_true(m.n == 1 && m.mean == 42.5 && m.median == 42.5 &&
	    m.p99 == 42.5 && m.std == 0);
	assert_int_equal(load_metric_compute(nan_v, 2, &m), TS_EINVAL);
}

static void
test_tpot_definition(void **state)
{
	static const struct {
		double e2e, ttft;
		size_t n;
		enum ts_err rc;
		double want;
	} t[] = {
		{1000, 100, 10, TS_OK, 100},    /* 900 ms over 9 gaps */
		{120, 50, 4, TS_OK, 70.0 / 3},
		{60, 40, 2, TS_OK, 20},
		{500, 500, 2, TS_OK, 0},
		{100, 40, 1, TS_EINVAL, -1},    /* one token: undefined */
		{100, 0, 0, TS_EINVAL, -1},
	};
	size_t i;
	double x;

	(void)state;
	for (i = 0; i < NELEM(t); i++) {
		x = -1;
		if (load_tpot_ms(t[i].e2e, t[i].ttft, t[i].n, &x) != t[i].rc)
			fail_msg("case %zu: wrong result code", i);
		check_near("tpot", x, t[i].want, 1e-12);
	}
}

/*
 * Three completed requests (4 tokens, 1 token, 0 tokens), one abandoned,
 * two failed, over 2 s: every sample set and rate by hand.
 */
static void
test_acc_report(void **state)
{
	static const double a[] = {50, 70, 90, 110};
	static const double b[] = {100};
	struct load_acc acc;
	struct load_report r;

	(void)state;
	load_acc_init(&acc, NULL);
	load_acc_completed(&acc, 10, a, NELEM(a), NELEM(a), 120);
	load_acc_completed(&acc, 10, b, NELEM(b), NELEM(b), 105);
	load_acc_completed(&acc, 10, NULL, 0, 0, 30);
	load_acc_abandoned(&acc, 5);
	load_acc_failed(&acc, LOAD_FAIL_HTTP_429);
	load_acc_failed(&acc, LOAD_FAIL_TRUNCATED);
	assert_int_equal(load_report_compute(&acc, 2.0, &r), TS_OK);

	assert_int_equal(r.completed, 3);
	assert_int_equal(r.abandoned, 1);
	assert_int_equal(r.failed, 2);
	assert_int_equal(acc.fail[LOAD_FAIL_HTTP_429], 1);
	assert_int_equal(acc.fail[LOAD_FAIL_TRUNCATED], 1);
	assert_int_equal(acc.abandoned_tokens, 5);
	assert_int_equal(r.output_tokens, 5);   /* abandoned not counted */
	assert_int_equal(r.prompt_tokens, 30);
	/* TTFT of the requests with a token; TPOT only with > 1 token */
	assert_int_equal(r.ttft.n, 2);
	check_near("mean ttft", r.ttft.mean, 75, 1e-12);
	assert_int_equal(r.tpot.n, 1);
	check_near("tpot", r.tpot.mean, 70.0 / 3, 1e-12);
	/* ITL pooled: the 3 gaps of request a, none from b */
	assert_int_equal(r.itl.n, 3);
	check_near("itl", r.itl.median, 20, 1e-9);
	/* the first gap: request a's 70 - 50; b has no second token */
	assert_int_equal(r.itl1.n, 1);
	check_near("itl1", r.itl1.median, 20, 1e-9);
	assert_int_equal(r.e2el.n, 3);
	check_near("e2el median", r.e2el.median, 105, 0);
	check_near("e2el max", r.e2el.max, 120, 0);
	/* rates over the benchmark duration */
	check_near("req/s", r.request_throughput, 1.5, 1e-12);
	check_near("tok/s", r.output_throughput, 2.5, 1e-12);
	check_near("total tok/s", r.total_token_throughput, 17.5, 1e-12);
	/* no SLO: every completed request is good */
	assert_int_equal(r.good, 3);
	check_near("goodput", r.request_goodput, 1.5, 1e-12);
	load_acc_free(&acc);

	/* a zero duration gives zero rates, not a division by zero */
	load_acc_init(&acc, NULL);
	load_acc_completed(&acc, 1, b, NELEM(b), NELEM(b), 105);
	assert_int_equal(load_report_compute(&acc, 0.0, &r), TS_OK);
	assert_true(r.request_throughput == 0 && r.output_throughput == 0);
	load_acc_free(&acc);
	load_acc_free(NULL);
}

/*
 * A /v1 request whose usage chunk says 5 output tokens came as 3 content
 * deltas (several tokens in one delta, or an EOS without text): its
 * output counts 5, TPOT divides by 4, the ITL has the 2 gaps between
 * deltas (vllm bench serve's definitions).
 */
static void
test_acc_usage_tokens(void **state)
{
	static const double a[] = {40, 60, 100};
	struct load_acc acc;
	struct load_report r;

	(void)state;
	load_acc_init(&acc, NULL);
	load_acc_completed(&acc, 21, a, NELEM(a), 5, 120);
	assert_int_equal(load_report_compute(&acc, 1.0, &r), TS_OK);
	assert_int_equal(r.output_tokens, 5);
	assert_int_equal(acc.deltas, 3);
	assert_int_equal(r.prompt_tokens, 21);
	check_near("ttft", r.ttft.mean, 40, 0);
	check_near("tpot", r.tpot.mean, (120.0 - 40) / 4, 1e-12);
	assert_int_equal(r.itl.n, 2);
	check_near("itl max", r.itl.max, 40, 1e-12);
	load_acc_free(&acc);
}

/*
 * TTFR, the time to the first reasoning token, is apart from TTFT (the
 * first content token stays TTFT, as vllm bench serve has it): one
 * sample per completed request that reasoned, none from one that did
 * not; reasoning deltas are counted apart from the content deltas; TPOT
 * runs from the first output token of either kind over every output
 * token (the reasoning's included), so it stays the decode's pace.
 */
static void
test_acc_reasoning(void **state)
{
	static const double a[] = {110, 120, 130};     /* text after */
	static const double b[] = {50, 70};             /* no reasoning */
	struct load_acc acc;
	struct load_report r;

	(void)state;
	load_acc_init(&acc, NULL);
	/* a: 5 thinking deltas from 60 ms, every 10 ms; then 3 text
	 * deltas; 8 tokens, the last at 130, the end at 130 */
	load_acc_completed_reasoning(&acc, 10, a, NELEM(a), 8, 130, 60, 5);
	load_acc_completed_reasoning(&acc, 10, b, NELEM(b), 2, 80, -1, 0);
	assert_int_equal(load_report_compute(&acc, 1.0, &r), TS_OK);
	assert_int_equal(r.ttfr.n, 1);
	check_near("ttfr", r.ttfr.median, 60, 0);
	check_near("ttfr p99", r.ttfr.p99, 60, 0);
	assert_int_equal(r.reasoning_events, 5);
	assert_int_equal(acc.deltas, 5);
	assert_int_equal(r.ttft.n, 2);
	check_near("ttft max", r.ttft.max, 110, 0);
	/* (130 - 60) / 7 = 10: the pace, not (130 - 110) / 7 */
	check_near("tpot of a", r.tpot.min, 10, 1e-12);
	check_near("tpot of b", r.tpot.max, 30, 1e-12);
	/* ITL: the content gaps only (2 of a, 1 of b) */
	assert_int_equal(r.itl.n, 3);
	load_acc_free(&acc);

	/* no request reasoned: no samples, a zeroed metric */
	load_acc_init(&acc, NULL);
	load_acc_completed(&acc, 1, b, NELEM(b), 2, 80);
	assert_int_equal(load_report_compute(&acc, 1.0, &r), TS_OK);
	assert_int_equal(r.ttfr.n, 0);
	assert_int_equal(r.reasoning_events, 0);
	load_acc_free(&acc);
}

static void
test_slo_met_table(void **state)
{
	static const struct {
		double ttft_slo, tpot_slo, e2el_slo;    /* -1 = none */
		size_t n;
		double ttft, tpot, e2el;
		int good;
	} t[] = {
		{-1, -1, -1, 5, 1e9, 1e9, 1e9, 1},      /* no SLO */
		{100, -1, -1, 5, 100, 50, 900, 1},      /* equal is good */
		{100, -1, -1, 5, 100.001, 50, 900, 0},
		{100, -1, -1, 0, 0, 0, 10, 0},          /* no token, no TTFT */
		{-1, 20, -1, 2, 10, 20, 30, 1},
		{-1, 20, -1, 2, 10, 25, 30, 0},
		{-1, 20, -1, 1, 10, 1e9, 30, 1},        /* 1 token: TPOT 0 */
		{-1, 20, -1, 0, 0, 1e9, 30, 1},
		{-1, -1, 500, 9, 10, 10, 500, 1},
		{-1, -1, 500, 9, 10, 10, 501, 0},
		{100, 20, 500, 9, 99, 19, 499, 1},      /* all met */
		{100, 20, 500, 9, 101, 19, 499, 0},     /* each one fails */
		{100, 20, 500, 9, 99, 21, 499, 0},
		{100, 20, 500, 9, 99, 19, 501, 0},
		{100, -1, -1, 5, NAN, 0, 0, 0},         /* NaN never passes */
	};
	struct load_slo slo;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(t); i++) {
		slo.ttft_ms = t[i].ttft_slo;
		slo.tpot_ms = t[i].tpot_slo;
		slo.e2el_ms = t[i].e2el_slo;
		if (load_slo_met(&slo, t[i].n, t[i].ttft, t[i].tpot,
		    t[i].e2el) != t[i].good)
			fail_msg("case %zu: want good=%d", i, t[i].good);
	}
}

/* Goodput through the accumulator: 2 of 4 meet "ttft:60 tpot:25". */
static void
test_goodput_count(void **state)
{
	static const double fast[] = {50, 70, 90};      /* tpot 20 */
	static const double slow_first[] = {80, 90};    /* ttft 80 */
	static const double slow_rhythm[] = {10, 60, 110};      /* tpot 50 */
	static const double one[] = {55};
	struct load_slo slo;
	struct load_perr perr;
	struct load_acc acc;
	struct load_report r;

	(void)state;
	load_slo_init(&slo);
	assert_false(load_slo_any(&slo));
	assert_int_equal(load_parse_goodput("ttft:60 tpot:25", &slo, &perr),
	    TS_OK);
	assert_true(load_slo_any(&slo));
	load_acc_init(&acc, &slo);
	load_acc_completed(&acc, 1, fast, NELEM(fast), NELEM(fast), 90);
	load_acc_completed(&acc, 1, slow_first, NELEM(slow_first),
	    NELEM(slow_first), 90);
	load_acc_completed(&acc, 1, slow_rhythm, NELEM(slow_rhythm),
	    NELEM(slow_rhythm), 110);
	load_acc_completed(&acc, 1, one, NELEM(one), NELEM(one), 56);
	load_acc_abandoned(&acc, 2);    /* never good, never counted */
	load_acc_failed(&acc, LOAD_FAIL_TIMEOUT);
	assert_int_equal(load_report_compute(&acc, 4.0, &r), TS_OK);
	assert_int_equal(r.good, 2);
	check_near("goodput", r.request_goodput, 0.5, 1e-12);
	check_near("throughput", r.request_throughput, 1.0, 1e-12);
	load_acc_free(&acc);
}

/* ---- spec parsers -------------------------------------------------- */

static void
test_parse_goodput_valid(void **state)
{
	static const struct {
		const char *spec;
		double ttft, tpot, e2el;
	} t[] = {
		{"ttft:500 tpot:50", 500, 50, -1},
		{"ttft:500,tpot:50,e2el:1000.5", 500, 50, 1000.5},
		{"  tpot:1  ", -1, 1, -1},
		{"e2el:0.25", -1, -1, 0.25},
		{"tpot:.5\tttft:7.", 7, 0.5, -1},
		{"ttft:1000000000", 1e9, -1, -1},
	};
	struct load_slo slo;
	struct load_perr perr;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(t); i++) {
		load_slo_init(&slo);
		if (load_parse_goodput(t[i].spec, &slo, &perr) != TS_OK)
			fail_msg("'%s' rejected: %s", t[i].spec, perr.text);
		check_near(t[i].spec, slo.ttft_ms, t[i].ttft, 0);
		check_near(t[i].spec, slo.tpot_ms, t[i].tpot, 0);
		check_near(t[i].spec, slo.e2el_ms, t[i].e2el, 0);
	}
	/* repeated --goodput options add up ... */
	load_slo_init(&slo);
	assert_int_equal(load_parse_goodput("ttft:5", &slo, &perr), TS_OK);
	assert_int_equal(load_parse_goodput("tpot:6", &slo, &perr), TS_OK);
	assert_true(slo.ttft_ms == 5 && slo.tpot_ms == 6);
	/* ... but one metric is never given twice */
	assert_int_equal(load_parse_goodput("ttft:7", &slo, &perr),
	    TS_EINVAL);
	assert_true(slo.ttft_ms == 5);
}

static void
test_parse_goodput_invalid(void **state)
{
	static const char *const bad[] = {
		"", "   ", ",", "ttft", "ttft:", "ttft:abc", "ttft:-5",
		"ttft:0", "ttft:0.0", "ttft:1e3", "ttft:inf", "ttft:nan",
		"foo:1", "TTFT:5", "ttft=5", "ttft:5x", "ttft:5:6",
		"ttft:5 ttft:6", "ttft:5 tpot", "ttft :5", "itl:5",
		"ttft:1000000001", "ttft:+5", "tpot:5 e2el:1 tpot:3",
	};
	struct load_slo slo;
	struct load_perr perr;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bad); i++) {
		load_slo_init(&slo);
		slo.e2el_ms = 123;
		memset(&perr, 0, sizeof(perr));
		if (load_parse_goodput(bad[i], &slo, &perr) != TS_EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		/* nothing changes on error, even from an earlier item */
		assert_true(slo.ttft_ms == -1 && slo.tpot_ms == -1 &&
		    slo.e2el_ms == 123);
		assert_true(perr.text[0] != '\0');
		assert_true(perr.position >= 0 &&
		    (size_t)perr.position <= strlen(bad[i]));
	}
	/* the position points at the bad item */
	load_slo_init(&slo);
	assert_int_equal(load_parse_goodput("ttft:5 bogus:1", &slo, &perr),
	    TS_EINVAL);
	assert_int_equal(perr.position, 7);
}

static void
test_parse_abandon(void **state)
{
	static const struct {
		const char *spec;
		double p;
		long k;
	} ok[] = {
		{"0.1:5", 0.1, 5}, {"1:1", 1, 1}, {"0:3", 0, 3},
		{".5:2", 0.5, 2}, {"1.0:8192", 1, 8192}, {"0.25:10", 0.25, 10},
	};
	static const char *const bad[] = {
		"", "0.1", "0.1:", ":5", "1.5:5", "-0.1:5", "0.1:0",
		"0.1:-1", "0.1:5x", "a:5", "0.1:8193", "0.1:5:6", " 0.1:5",
		"nan:5", "inf:1", "1e-1:5", "0.1: 5", "0.1:+5", "1.01:1",
		"0.1:99999999999999999999",
	};
	struct load_abandon a;
	struct load_perr perr;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(ok); i++) {
		if (load_parse_abandon(ok[i].spec, 8192, &a, &perr) != TS_OK)
			fail_msg("'%s' rejected: %s", ok[i].spec, perr.text);
		check_near(ok[i].spec, a.fraction, ok[i].p, 0);
		assert_int_equal(a.after_tokens, ok[i].k);
	}
	for (i = 0; i < NELEM(bad); i++) {
		a.fraction = 0.75;
		a.after_tokens = 9;
		if (load_parse_abandon(bad[i], 8192, &a, &perr) != TS_EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_true(a.fraction == 0.75 && a.after_tokens == 9);
	}
}

static void
test_parse_range(void **state)
{
	static const struct {
		const char *spec;
		long min, max;
	} ok[] = {
		{"8", 8, 8}, {"4:16", 4, 16}, {"1", 1, 1},
		{"100:100", 100, 100}, {"1:100", 1, 100},
	};
	static const char *const bad[] = {
		"", "0", "101", "16:4", "4:", ":4", "4:16:20", "x", "4 ",
		" 4", "+4", "4.5", "99999999999999999999", "-1", "4:101",
		"4-16",
	};
	struct load_range r;
	struct load_perr perr;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(ok); i++) {
		if (load_parse_range(ok[i].spec, 1, 100, &r, &perr) != TS_OK)
			fail_msg("'%s' rejected: %s", ok[i].spec, perr.text);
		assert_int_equal(r.min, ok[i].min);
		assert_int_equal(r.max, ok[i].max);
	}
	for (i = 0; i < NELEM(bad); i++) {
		r.min = r.max = 77;
		if (load_parse_range(bad[i], 1, 100, &r, &perr) != TS_EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_true(r.min == 77 && r.max == 77);
	}
}

static void
test_parse_numbers(void **state)
{
	double d = -1;
	uint64_t u = 0;

	(void)state;
	assert_int_equal(load_parse_number("2.5", 0.001, 10, &d), TS_OK);
	assert_true(d == 2.5);
	assert_int_equal(load_parse_number("10", 0.001, 10, &d), TS_OK);
	assert_int_equal(load_parse_number("10.01", 0.001, 10, &d),
	    TS_EINVAL);
	assert_int_equal(load_parse_number("0", 0.001, 10, &d), TS_EINVAL);
	assert_int_equal(load_parse_number("-1", -5, 10, &d), TS_EINVAL);
	assert_int_equal(load_parse_number("1e2", 0, 1000, &d), TS_EINVAL);
	assert_int_equal(load_parse_number("inf", 0, INFINITY, &d),
	    TS_EINVAL);
	assert_int_equal(load_parse_number("", 0, 1, &d), TS_EINVAL);
	assert_int_equal(load_parse_number("1 ", 0, 2, &d), TS_EINVAL);
	assert_true(d == 10);
	assert_int_equal(load_parse_u64("0", &u), TS_OK);
	assert_true(u == 0);
	assert_int_equal(load_parse_u64("18446744073709551615", &u), TS_OK);
	assert_true(u == UINT64_MAX);
	assert_int_equal(load_parse_u64("18446744073709551616", &u),
	    TS_EINVAL);
	assert_int_equal(load_parse_u64("-1", &u), TS_EINVAL);
	assert_int_equal(load_parse_u64("", &u), TS_EINVAL);
	assert_int_equal(load_parse_u64("12a", &u), TS_EINVAL);
	assert_true(u == UINT64_MAX);
}

/* ---- PRNG and plans ------------------------------------------------ */

static void
test_rng_reproducible(void **state)
{
	static const uint64_t ref_state[4] = {1, 2, 3, 4};
	static const uint64_t ref_out[] = {
		11520, 0, 1509978240, UINT64_C(1215971899390074240),
	};
	struct rng a, b, c, d;
	size_t i, same_c = 0, same_d = 0;
	uint64_t x;

	(void)state;
	load_rng_seed(&a, 42, 1);
	load_rng_seed(&b, 42, 1);
	load_rng_seed(&c, 43, 1);
	load_rng_seed(&d, 42, 2);
	for (i = 0; i < 1000; i++) {
		x = rng_next(&a);
		assert_true(x == rng_next(&b));
		same_c += x == rng_next(&c);
		same_d += x == rng_next(&d);
	}
	/* another seed or another stream is another sequence */
	assert_int_equal(same_c, 0);
	assert_int_equal(same_d, 0);
	/* pinned: a plan must not change under a --seed between versions */
	load_rng_seed(&a, 0, 1);
	x = rng_next(&a);
	assert_true(x == UINT64_C(0xee127fe613436e33));
	/* xoshiro256** from the state {1, 2, 3, 4}: the reference outputs */
	memcpy(a.s, ref_state, sizeof(ref_state));
	for (i = 0; i < NELEM(ref_out); i++)
		assert_true(rng_next(&a) == ref_out[i]);
}

/*
 * Exponential inter-arrival times at 4 req/s: mean 250 ms, standard
 * deviation = mean, P(X > mean) = 1/e. 200000 draws from a fixed seed;
 * the standard error of the mean is 0.56 ms, the tolerance 2.5 ms.
 */
static void
test_exp_interarrival(void **state)
{
	const size_t n = 200000;
	const double rate = 4.0, mean = 1000.0 / rate;
	struct rng r, r2;
	double x, sum = 0, ss = 0, sd, over = 0, m;
	size_t i;

	(void)state;
	load_rng_seed(&r, 1234, 1);
	load_rng_seed(&r2, 1234, 1);
	for (i = 0; i < n; i++) {
		x = load_rng_exp_ms(&r, rate);
		assert_true(x >= 0 && isfinite(x));
		assert_true(x == load_rng_exp_ms(&r2, rate));
		sum += x;
		ss += x * x;
		over += x > mean;
	}
	m = sum / (double)n;
	sd = sqrt(ss / (double)n - m * m);
	check_near("mean inter-arrival ms", m, mean, 2.5);
	check_near("std inter-arrival ms", sd, mean, 5.0);
	check_near("P(X > mean)", over / (double)n, exp(-1.0), 0.005);
	assert_true(load_rng_exp_ms(&r, 0.0) == 0.0);
	assert_true(load_rng_exp_ms(&r, -1.0) == 0.0);
}

/* Uniform integers: every face of a die within 5% of n/6, fixed seed. */
static void
test_rng_range(void **state)
{
	size_t count[6] = {0}, i;
	struct rng r;
	long x;

	(void)state;
	load_rng_seed(&r, 7, 2);
	for (i = 0; i < 60000; i++) {
		x = load_rng_range(&r, 1, 6);
		assert_true(x >= 1 && x <= 6);
		count[x - 1]++;
	}
	for (i = 0; i < 6; i++)
		if (count[i] < 9500 || count[i] > 10500)
			fail_msg("face %zu drawn %zu times of 60000", i + 1,
			    count[i]);
	assert_int_equal(load_rng_range(&r, 5, 5), 5);
	assert_int_equal(load_rng_range(&r, 9, 3), 9);
	for (i = 0; i < 100; i++) {
		x = load_rng_range(&r, -3, -1);
		assert_true(x >= -3 && x <= -1);
	}
	for (i = 0; i < 100; i++)
		assert_true(rng_unit(&r) < 1.0);
}

static void
test_plans(void **state)
{
	const struct load_range fixed = {8, 8}, out = {10, 20};
	const struct load_abandon quarter = {0.25, 3}, none = {0, 3},
	    all = {1, 3};
	struct rng r, r2;
	struct load_plan p, p2;
	size_t i, abandoned = 0, lo = 0, hi = 0;

	(void)state;
	load_rng_seed(&r, 99, 2);
	load_rng_seed(&r2, 99, 2);
	for (i = 0; i < 10000; i++) {
		load_plan_next(&r, &fixed, &out, &quarter, &p);
		load_plan_next(&r2, &fixed, &out, &quarter, &p2);
		assert_memory_equal(&p, &p2, sizeof(p));
		assert_int_equal(p.prompt_tokens, 8);
		assert_true(p.output_tokens >= 10 && p.output_tokens <= 20);
		lo += p.output_tokens == 10;
		hi += p.output_tokens == 20;
		assert_true(p.abandon_after == 0 || p.abandon_after == 3);
		abandoned += p.abandon_after != 0;
	}
	/* binomial(10000, 0.25): sd 43, so +-200 is over 4.5 sd */
	if (abandoned < 2300 || abandoned > 2700)
		fail_msg("%zu of 10000 abandoned, want about 2500", abandoned);
	assert_true(lo > 0 && hi > 0);
	for (i = 0; i < 100; i++) {
		load_plan_next(&r, &fixed, &fixed, &none, &p);
		assert_true(p.abandon_after == 0 && p.output_tokens == 8);
		load_plan_next(&r, &fixed, &fixed, &all, &p);
		assert_int_equal(p.abandon_after, 3);
		load_plan_next(&r, &fixed, &fixed, NULL, &p);
		assert_int_equal(p.abandon_after, 0);
	}
}

static void
test_fail_names(void **state)
{
	size_t i, j;

	(void)state;
	assert_string_equal(load_fail_name(LOAD_FAIL_HTTP_429), "http_429");
	assert_string_equal(load_fail_name(LOAD_FAIL_HTTP_500), "http_500");
	assert_string_equal(load_fail_name(LOAD_FAIL_HTTP_503), "http_503");
	assert_string_equal(load_fail_name(LOAD_FAIL_HTTP_5XX), "http_5xx");
	assert_string_equal(load_fail_name(LOAD_FAIL_HTTP_400), "http_400");
	assert_string_equal(load_fail_name(LOAD_FAIL_HTTP_401), "http_401");
	assert_string_equal(load_fail_name(LOAD_FAIL_HTTP_OTHER),
	    "http_other");
	assert_string_equal(load_fail_name(LOAD_FAIL_SSE_ERROR),
	    "sse_error_event");
	assert_string_equal(load_fail_name(LOAD_FAIL_TIMEOUT), "timeout");
	for (i = 0; i < LOAD_FAIL_COUNT; i++) {
		assert_string_not_equal(load_fail_name((enum load_fail)i),
		    "unknown");
		for (j = 0; j < i; j++)
			assert_string_not_equal(
			    load_fail_name((enum load_fail)i),
			    load_fail_name((enum load_fail)j));
	}
	assert_string_equal(load_fail_name(LOAD_FAIL_COUNT), "unknown");
}

/*
 * Each status to its kind: those of tokstream's failure injection
 * (rate_limit 429, server_error 500, overloaded 503, context_length 400,
 * invalid_api_key 401) their own, the rest of 5xx together, everything
 * else "other", at the edges of each range.
 */
static void
test_fail_of_status(void **state)
{
	static const struct {
		long status;
		enum load_fail kind;
	} t[] = {
		{429, LOAD_FAIL_HTTP_429},
		{500, LOAD_FAIL_HTTP_500},
		{503, LOAD_FAIL_HTTP_503},
		{400, LOAD_FAIL_HTTP_400},
		{401, LOAD_FAIL_HTTP_401},
		{501, LOAD_FAIL_HTTP_5XX},
		{502, LOAD_FAIL_HTTP_5XX},
		{504, LOAD_FAIL_HTTP_5XX},
		{599, LOAD_FAIL_HTTP_5XX},
		{402, LOAD_FAIL_HTTP_OTHER},
		{403, LOAD_FAIL_HTTP_OTHER},
		{404, LOAD_FAIL_HTTP_OTHER},
		{408, LOAD_FAIL_HTTP_OTHER},
		{413, LOAD_FAIL_HTTP_OTHER},
		{428, LOAD_FAIL_HTTP_OTHER},
		{430, LOAD_FAIL_HTTP_OTHER},
		{499, LOAD_FAIL_HTTP_OTHER},
		{600, LOAD_FAIL_HTTP_OTHER},
		{999, LOAD_FAIL_HTTP_OTHER},
		{100, LOAD_FAIL_HTTP_OTHER},
		{204, LOAD_FAIL_HTTP_OTHER},
		{302, LOAD_FAIL_HTTP_OTHER},
		{200, LOAD_FAIL_HTTP_OTHER},    /* the caller sorts 200, 0 */
		{0, LOAD_FAIL_HTTP_OTHER},
		{-1, LOAD_FAIL_HTTP_OTHER},
	};
	struct load_acc acc;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(t); i++)
		if (load_fail_of_status(t[i].status) != t[i].kind)
			fail_msg("status %ld: got %s, want %s", t[i].status,
			    load_fail_name(load_fail_of_status(t[i].status)),
			    load_fail_name(t[i].kind));
	/* each kind counted apart */
	load_acc_init(&acc, NULL);
	load_acc_failed(&acc, load_fail_of_status(429));
	load_acc_failed(&acc, load_fail_of_status(500));
	load_acc_failed(&acc, load_fail_of_status(503));
	load_acc_failed(&acc, load_fail_of_status(503));
	load_acc_failed(&acc, load_fail_of_status(400));
	load_acc_failed(&acc, load_fail_of_status(401));
	load_acc_failed(&acc, load_fail_of_status(502));
	load_acc_failed(&acc, load_fail_of_status(404));
	assert_int_equal(acc.failed, 8);
	assert_int_equal(acc.fail[LOAD_FAIL_HTTP_429], 1);
	assert_int_equal(acc.fail[LOAD_FAIL_HTTP_500], 1);
	assert_int_equal(acc.fail[LOAD_FAIL_HTTP_503], 2);
	assert_int_equal(acc.fail[LOAD_FAIL_HTTP_5XX], 1);
	assert_int_equal(acc.fail[LOAD_FAIL_HTTP_400], 1);
	assert_int_equal(acc.fail[LOAD_FAIL_HTTP_401], 1);
	assert_int_equal(acc.fail[LOAD_FAIL_HTTP_OTHER], 1);
	load_acc_free(&acc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metric_known),
		cmocka_unit_test(test_metric_edge),
		cmocka_unit_test(test_tpot_definition),
		cmocka_unit_test(test_acc_report),
		cmocka_unit_test(test_acc_usage_tokens),
		cmocka_unit_test(test_acc_reasoning),
		cmocka_unit_test(test_slo_met_table),
		cmocka_unit_test(test_goodput_count),
		cmocka_unit_test(test_parse_goodput_valid),
		cmocka_unit_test(test_parse_goodput_invalid),
		cmocka_unit_test(test_parse_abandon),
		cmocka_unit_test(test_parse_range),
		cmocka_unit_test(test_parse_numbers),
		cmocka_unit_test(test_rng_reproducible),
		cmocka_unit_test(test_exp_interarrival),
		cmocka_unit_test(test_rng_range),
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_fail_names),
		cmocka_unit_test(test_fail_of_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
