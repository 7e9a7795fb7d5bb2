/*
 * test_fit.c - the latency profile's fit (bench/fit.h) on synthetic data
 * made from known parameters with seeded noise: rows drawn straight from
 * the model, and whole traces from a small simulation of the engine's
 * two prefill modes (beside the batch, sharing its step), which go
 * through the step reconstruction. Each must give its parameters back
 * within 2%; degenerate data must give an error or a documented
 * fallback, and never a number that is not finite.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/fit.h"
#include "common/rng.h"

/* The parameters a synthetic data set is made from. */
struct truth {
	double p0, p1, p2;
	int shares;
	double d0, d1, d2;
	double jit_ms;          /* std of the step's (and prefill's) noise */
};

/* A normal draw of std s (Box-Muller). */
static double
normal(struct rng *r, double s)
{
	double u1 = (rng_unit(r) + 1e-12), u2 = rng_unit(r);

	return s * sqrt(-2 * log(u1)) * cos(2 * 3.14159265358979 * u2);
}

static double
prefill(const struct truth *t, double u)
{
	return t->p0 + t->p1 * u + t->p2 * u * u;
}

static int has_note(const struct fit_result *r, const char *s);

/* Within 2% of want (or 2% of `scale` when want is 0). */
static void
near(const char *what, double got, double want, double scale)
{
	double tol = 0.02 * (want != 0 ? fabs(want) : scale);

	if (!(fabs(got - want) <= tol))
		fail_msg("%s: got %.5g, want %.5g (+- %.3g)", what, got, want,
		    tol);
}

/* FIT_DEBUG=1 in the environment: what the fit found. */
static void
dump(const struct fit_result *r)
{
	int i;

	if (getenv("FIT_DEBUG") == NULL)
		return;
	print_message("p %g %g %g shares %d d %g %g %g (se %g %g %g) "
	    "decode nobs %zu dropped %zu rms %g; prefill nobs %zu\n",
	    r->p0, r->p1, r->p2, r->shares_step, r->d0, r->d1, r->d2,
	    r->decode.se[0], r->decode.se[1], r->decode.se[2],
	    r->decode.nobs, r->decode.dropped, r->decode.rms,
	    r->prefill.nobs);
	for (i = 0; i < r->nnotes; i++)
		print_message("  %s\n", r->notes[i]);
}

static void
check(const struct fit_result *r, const struct truth *t)
{
	dump(r);
	assert_int_equal(r->shares_step, t->shares);
	near("prefill base_ms", r->p0, t->p0, 1);
	near("prefill per_token_ms", r->p1, t->p1, 0.01);
	near("prefill per_token2_ms", r->p2, t->p2, 1e-5);
	near("decode base_ms", r->d0, t->d0, 1);
	near("decode per_seq_ms", r->d1, t->d1, 1);
	near("decode per_ctx_token_ms", r->d2, t->d2, 0.001);
}

/* Rows drawn from the model: steps at batch sizes 1..6 with random
 * contexts and joiners, and lone TTFTs. */
static void
model_rows(const struct truth *t, uint64_t seed, struct fit_rows *rows)
{
	struct rng g;
	int i, k;

	memset(rows, 0, sizeof(*rows));
	rng_seed(&g, seed);
	for (i = 0; i < 3000; i++) {
		struct fit_row w;
		int n = 1 + (int)rng_bounded(&g, 6);
		int j = rng_bounded(&g, 4) == 0 ? 1 + (int)rng_bounded(&g,
		    2) : 0;

		memset(&w, 0, sizeof(w));
		w.n = n;
		w.c = 0;
		for (k = 0; k < n; k++)
			w.c += 50 + rng_bounded(&g, 900);
		w.j = j;
		for (k = 0; k < j; k++) {
			double u = 10 + rng_bounded(&g, 600);

			w.su += u;
			w.su2 += u * u;
			w.cj += u;
			if (t->shares)
				w.y += prefill(t, u) + normal(&g, t->jit_ms);
		}
		/* beside: the joiners are not in the step */
		w.n += j;
		w.c += w.cj;
		w.y += t->d0 + normal(&g, t->jit_ms) + (t->shares ?
		    t->d1 * w.n + t->d2 * w.c : t->d1 * (w.n - j) +
		    t->d2 * (w.c - w.cj));
		fit_rows_add(rows, &w);
	}
	for (i = 0; i < 200; i++) {
		struct fit_row w;
		double u = 10 + rng_bounded(&g, 600);

		memset(&w, 0, sizeof(w));
		w.solo = 1;
		w.n = 1;
		w.j = 1;
		w.c = u;
		w.cj = u;
		w.su = u;
		w.su2 = u * u;
		w.y = prefill(t, u) + normal(&g, t->jit_ms);
		if (t->shares)
			w.y += t->d0 + t->d1 + t->d2 * w.c +
			    normal(&g, t->jit_ms);
		fit_rows_add(rows, &w);
	}
}

static void
solve_ok(const struct fit_rows *rows, struct fit_result *r)
{
	char err[256] = "";

	if (fit_solve(rows, NULL, r, err, sizeof(err)) != TS_OK)
		fail_msg("fit_solve: %s", err);
}

static void
test_rows_beside(void **state)
{
	struct truth t = {30, 0.4, 0, 0, 25, 1.5, 0.05, 0.5};
	struct fit_rows rows;
	struct fit_result r;

	(void)state;
	model_rows(&t, 1, &rows);
	solve_ok(&rows, &r);
	check(&r, &t);
	assert_true(r.has_jit_decode && r.has_jit_prefill);
	/* a normal draw of std 0.5: its percentiles 25 and 75 at +-0.337 */
	assert_true(fabs(r.jit_decode_std - 0.5) < 0.025);
	assert_true(fabs(r.jit_decode[5] - r.jit_decode[3] - 0.674) < 0.05);
	fit_rows_free(&rows);
}

/* The stack's share: an offset in every lone TTFT comes off the
 * prefill's base; its spread comes off the jitter (variances). */
static void
test_rows_stack(void **state)
{
	struct truth t = {30, 0.4, 0, 0, 25, 1.5, 0.05, 0.5};
	struct fit_opts o = {2.0, 0, 0.3};
	struct fit_rows rows;
	struct fit_result r;
	char err[256] = "";

	(void)state;
	model_rows(&t, 1, &rows);
	assert_int_equal(fit_solve(&rows, &o, &r, err, sizeof(err)), TS_OK);
	near("prefill base_ms less the offset", r.p0, 28, 1);
	near("prefill per_token_ms", r.p1, 0.4, 0.01);
	/* sqrt(0.5^2 - 0.3^2) = 0.4 */
	assert_true(fabs(r.jit_decode_std - 0.4) < 0.025);
	assert_true(has_note(&r, "offset"));
	fit_rows_free(&rows);
	/* an offset beyond the data's base: the profile's base is 0 (the
	 * server refuses a negative one), and the fit says so */
	o.ttft_offset_ms = 500;
	model_rows(&t, 1, &rows);
	assert_int_equal(fit_solve(&rows, &o, &r, err, sizeof(err)), TS_OK);
	assert_true(r.p0 == 0);
	assert_true(has_note(&r, "0 in the profile"));
	fit_rows_free(&rows);
}

static void
test_rows_shares(void **state)
{
	struct truth t = {30, 0.4, 0, 1, 25, 1.5, 0.05, 0.5};
	struct fit_rows rows;
	struct fit_result r;

	(void)state;
	model_rows(&t, 2, &rows);
	solve_ok(&rows, &r);
	check(&r, &t);
	assert_true(r.f_shares > FIT_F_KEEP);
	/* the cross-check agrees */
	assert_true(r.prefill.nobs > 100);
	assert_true(fabs(r.prefill.coef[0] - 30) < 1);
	fit_rows_free(&rows);
}

static void
test_rows_quadratic(void **state)
{
	struct truth t = {30, 0.4, 0.001, 1, 25, 1.5, 0.05, 0.5};
	struct truth b = {30, 0.4, 0.001, 0, 25, 1.5, 0.05, 0.5};
	struct fit_rows rows;
	struct fit_result r;

	(void)state;
	model_rows(&t, 3, &rows);
	solve_ok(&rows, &r);
	check(&r, &t);
	assert_true(r.f_quad > FIT_F_KEEP);
	fit_rows_free(&rows);
	model_rows(&b, 4, &rows);
	solve_ok(&rows, &r);
	check(&r, &b);
	fit_rows_free(&rows);
}

/* ---- whole traces from a small engine ------------------------------- */

#define SIM_MAXREQ 400
#define SIM_MAXEV 64

/* A recorded request in the making. */
struct sim_req {
	double start, pend;     /* start; beside: its prefill's end */
	int prompt, out, got;
	int64_t ev_us[SIM_MAXEV];
	uint32_t ev_n[SIM_MAXEV];
	int state;              /* 0 waiting, 1 in the batch, 2 done */
};

/*
 * Runs `nreq` requests closed-loop at concurrency c through the engine's
 * model of t (a step over the batch and its joiners; shares: the step
 * carries the joiners' prefills; beside: a request joins at the first
 * boundary after its prefill, or starts the grid) and fills the trace.
 * Token events reach the client 0..0.2 ms after the step's end.
 */
static void
sim_run(const struct truth *t, int c, int nreq, uint64_t seed,
    struct sim_req *q, struct fit_req *fr)
{
	struct rng g;
	double now = 0;
	int started = 0, done = 0, i;

	rng_seed(&g, seed);
	for (i = 0; i < nreq; i++) {
		q[i].prompt = 20 + (int)rng_bounded(&g, 500);
		q[i].out = 8 + (int)rng_bounded(&g, 24);
		q[i].got = 0;
		q[i].state = 0;
	}
	for (; started < c && started < nreq; started++) {
		q[started].start = started * 0.5;
		q[started].pend = q[started].start + (t->shares ? 0 :
		    prefill(t, q[started].prompt) + normal(&g, t->jit_ms));
	}
	while (done < nreq) {
		double dur, end, ctx = 0, first = 1e300, nominal;
		int batch = 0, idx[SIM_MAXREQ], m = 0, n = 0;

		for (i = 0; i < started; i++) {
			if (q[i].state == 1)
				batch++;
			else if (q[i].state == 0 && (t->shares ? q[i].start :
			    q[i].pend) < first)
				first = t->shares ? q[i].start : q[i].pend;
		}
		if (batch == 0 && first > now)
			now = first;    /* an idle grid: the first starts it */
		/* who gets a token from this step: the batch, and the
		 * joiners (shares: started by its start; beside: prefilled
		 * by its end, or by now on an idle grid, whose first token
		 * comes at once) */
		nominal = batch == 0 ? 0 : t->d0 + t->d1 * batch + 1;
		dur = batch == 0 && !t->shares ? 0 : t->d0 +
		    normal(&g, t->jit_ms);
		for (i = 0; i < started; i++) {
			if (q[i].state == 2)
				continue;
			if (q[i].state == 0) {
				if (t->shares ? q[i].start > now :
				    q[i].pend > now + nominal)
					continue;
				if (t->shares)
					dur += prefill(t, q[i].prompt) +
					    normal(&g, t->jit_ms);
			}
			idx[m++] = i;
			/* beside: the step was priced without its joiners */
			if (t->shares || q[i].state == 1) {
				ctx += q[i].prompt + q[i].got;
				n++;
			}
		}
		if (dur > 0)
			dur += t->d1 * n + t->d2 * ctx;
		end = now + dur;
		for (i = 0; i < m; i++) {
			struct sim_req *s = &q[idx[i]];
			double at = end + 0.2 * rng_unit(&g);

			assert_true(s->got < SIM_MAXEV);
			s->ev_us[s->got] = (int64_t)((at - s->start) * 1000);
			s->ev_n[s->got] = 1;
			s->got++;
			s->state = 1;
			if (s->got == s->out) {
				s->state = 2;
				done++;
				if (started < nreq) {
					struct sim_req *o = &q[started++];

					o->start = at + 0.3;
					o->pend = o->start + (t->shares ? 0 :
					    prefill(t, o->prompt) +
					    normal(&g, t->jit_ms));
				}
			}
		}
		now = end;
	}
	for (i = 0; i < nreq; i++) {
		fr[i].start_us = (int64_t)(q[i].start * 1000);
		fr[i].end_us = q[i].ev_us[q[i].got - 1] + 300;
		fr[i].prompt_tokens = (uint32_t)q[i].prompt;
		fr[i].uncached = (uint32_t)q[i].prompt;
		fr[i].ev_us = q[i].ev_us;
		fr[i].ev_n = q[i].ev_n;
		fr[i].nev = (size_t)q[i].got;
	}
}

/* Three traces of t at concurrency 1, 2 and 4, fitted together. */
static void
sim_fit(const struct truth *t, struct fit_rows *rows, struct fit_result *r)
{
	static struct sim_req q[3][SIM_MAXREQ];
	static struct fit_req fr[3][SIM_MAXREQ];
	struct fit_trace tr[3];
	static const int conc[3] = {1, 2, 4};
	char err[256] = "";
	int k;

	for (k = 0; k < 3; k++) {
		sim_run(t, conc[k], 150, 10 + (uint64_t)k, q[k], fr[k]);
		tr[k].reqs = fr[k];
		tr[k].nreqs = 150;
	}
	if (fit_rows_build(tr, 3, rows, err, sizeof(err)) != TS_OK)
		fail_msg("fit_rows_build: %s", err);
	if (getenv("FIT_DEBUG") != NULL)
		print_message("rows: %zu steps %zu solo; %zu steps seen, "
		    "%zu idle, %zu gap; tol %g %g %g ms\n", rows->step_rows,
		    rows->solo_rows, rows->steps, rows->skipped_idle,
		    rows->skipped_gap, rows->tol_ms[0], rows->tol_ms[1],
		    rows->tol_ms[2]);
	solve_ok(rows, r);
}

static void
test_trace_beside(void **state)
{
	struct truth t = {30, 0.4, 0, 0, 25, 1.5, 0.05, 0.5};
	struct fit_rows rows;
	struct fit_result r;

	(void)state;
	sim_fit(&t, &rows, &r);
	/* concurrency 1: every request alone */
	assert_true(rows.solo_rows >= 150);
	assert_true(rows.step_rows > 1000);
	check(&r, &t);
	fit_rows_free(&rows);
}

static void
test_trace_shares(void **state)
{
	struct truth t = {30, 0.4, 0, 1, 25, 1.5, 0.05, 0.5};
	struct fit_rows rows;
	struct fit_result r;

	(void)state;
	sim_fit(&t, &rows, &r);
	check(&r, &t);
	fit_rows_free(&rows);
}

/* ---- degenerate data ------------------------------------------------ */

static int
all_finite(const struct fit_result *r)
{
	int p;

	for (p = 0; p < FIT_NPCT; p++)
		if (!isfinite(r->jit_decode[p]) ||
		    !isfinite(r->jit_prefill[p]))
			return 0;
	return isfinite(r->p0) && isfinite(r->p1) && isfinite(r->p2) &&
	    isfinite(r->d0) && isfinite(r->d1) && isfinite(r->d2);
}

static int
has_note(const struct fit_result *r, const char *s)
{
	int i;

	for (i = 0; i < r->nnotes; i++)
		if (strstr(r->notes[i], s) != NULL)
			return 1;
	return 0;
}

/* One batch size only: per_seq is the intercept's twin; it is 0, the
 * base carries it, and a note says so. */
static void
test_one_concurrency(void **state)
{
	struct truth t = {30, 0.4, 0, 0, 25, 0, 0.05, 0.5};
	static struct sim_req q[SIM_MAXREQ];
	static struct fit_req fr[SIM_MAXREQ];
	struct fit_trace tr = {fr, 100};
	struct fit_rows rows;
	struct fit_result r;
	char err[256] = "";

	(void)state;
	sim_run(&t, 1, 100, 7, q, fr);
	assert_int_equal(fit_rows_build(&tr, 1, &rows, err, sizeof(err)),
	    TS_OK);
	solve_ok(&rows, &r);
	assert_true(all_finite(&r));
	assert_true(r.d1 == 0);
	assert_true(has_note(&r, "per_seq_ms not identifiable"));
	near("decode base_ms", r.d0, 25, 1);
	near("decode per_ctx_token_ms", r.d2, 0.05, 0.001);
	fit_rows_free(&rows);
}

static void
test_too_few(void **state)
{
	struct truth t = {30, 0.4, 0, 0, 25, 1.5, 0.05, 0.5};
	static struct sim_req q[SIM_MAXREQ];
	static struct fit_req fr[SIM_MAXREQ];
	struct fit_trace tr = {fr, 2};
	struct fit_rows rows;
	struct fit_result r;
	char err[256] = "";
	int i;

	(void)state;
	/* no rows at all */
	memset(&rows, 0, sizeof(rows));
	assert_int_equal(fit_solve(&rows, NULL, &r, err, sizeof(err)),
	    TS_EINVAL);
	assert_non_null(strstr(err, "decode steps observed"));
	/* two requests: a handful of steps */
	sim_run(&t, 2, 2, 8, q, fr);
	assert_int_equal(fit_rows_build(&tr, 1, &rows, err, sizeof(err)),
	    TS_OK);
	err[0] = '\0';
	assert_int_equal(fit_solve(&rows, NULL, &r, err, sizeof(err)),
	    TS_EINVAL);
	assert_true(strlen(err) > 10);
	fit_rows_free(&rows);
	/* beside, and no request ran alone: the prefill cannot be told */
	sim_run(&t, 4, 60, 9, q, fr);
	tr.nreqs = 60;
	for (i = 0; i < 60; i++)
		fr[i].start_us = 0;     /* all at once, overlapping */
	assert_int_equal(fit_rows_build(&tr, 1, &rows, err, sizeof(err)),
	    TS_OK);
	err[0] = '\0';
	if (fit_solve(&rows, NULL, &r, err, sizeof(err)) == TS_OK)
		assert_true(all_finite(&r));
	else
		assert_true(strlen(err) > 10);
	fit_rows_free(&rows);
	/* constant rows: every column but one is the intercept's twin */
	memset(&rows, 0, sizeof(rows));
	for (i = 0; i < 50; i++) {
		struct fit_row w = {20, 1, 100, 0, 0, 0, 0, 0};

		fit_rows_add(&rows, &w);
	}
	err[0] = '\0';
	if (fit_solve(&rows, NULL, &r, err, sizeof(err)) == TS_OK)
		assert_true(all_finite(&r));
	else
		assert_true(strlen(err) > 10);
	fit_rows_free(&rows);
}

/* Events out of time order, or an event without tokens: refused. */
static void
test_bad_events(void **state)
{
	int64_t t1[] = {1000, 500};
	uint32_t n1[] = {1, 1};
	int64_t t2[] = {1000, 2000};
	uint32_t n2[] = {1, 0};
	struct fit_req r = {0, 3000, 10, 10, t1, n1, 2};
	struct fit_trace tr = {&r, 1};
	struct fit_rows rows;
	char err[256] = "";

	(void)state;
	assert_int_equal(fit_rows_build(&tr, 1, &rows, err, sizeof(err)),
	    TS_EINVAL);
	assert_non_null(strstr(err, "out of time order"));
	r.ev_us = t2;
	r.ev_n = n2;
	assert_int_equal(fit_rows_build(&tr, 1, &rows, err, sizeof(err)),
	    TS_EINVAL);
	assert_non_null(strstr(err, "empty"));
}

/* Exact data, two columns the same: the second leaves; the rest is
 * exact. */
static void
test_ols_collinear(void **state)
{
	double x[40 * FIT_MAXK], y[40];
	struct fit_reg r;
	int i;

	(void)state;
	memset(x, 0, sizeof(x));
	for (i = 0; i < 40; i++) {
		x[i * FIT_MAXK + 0] = 1;
		x[i * FIT_MAXK + 1] = 3;        /* 3 x the intercept */
		x[i * FIT_MAXK + 2] = i * i % 17;
		y[i] = 5 + 2 * x[i * FIT_MAXK + 2];
	}
	assert_int_equal(fit_ols(x, y, NULL, 40, 7, &r), TS_OK);
	assert_int_equal(r.kept[1], 0);
	assert_true(fabs(r.coef[0] - 5) < 1e-9);
	assert_true(fabs(r.coef[2] - 2) < 1e-9);
	assert_true(r.r2 > 0.999999);
	/* too few rows for the columns */
	assert_int_equal(fit_ols(x, y, NULL, 3, 7, &r), TS_EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ols_collinear),
		cmocka_unit_test(test_rows_beside),
		cmocka_unit_test(test_rows_stack),
		cmocka_unit_test(test_rows_shares),
		cmocka_unit_test(test_rows_quadratic),
		cmocka_unit_test(test_trace_beside),
		cmocka_unit_test(test_trace_shares),
		cmocka_unit_test(test_one_concurrency),
		cmocka_unit_test(test_too_few),
		cmocka_unit_test(test_bad_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
