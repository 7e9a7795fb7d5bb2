/*
 * fit.h - a latency profile fitted from recorded requests (`tokbench
 * fit`): the model of the profile format (the latency profile, version 1:
 * docs/TOKBENCH.md "fit") estimated by least squares from what a client
 * saw. Pure functions: no I/O, no globals; cmd_fit.c reads the traces and
 * writes the JSON.
 *
 * The model (the engine's, which the profile describes):
 *   prefill(u) = p0 + p1 u + p2 u^2        u = uncached prompt tokens
 *   step(n, C) = d0 + d1 n + d2 C          n sequences that get a token
 *                                          from the step, C their context
 *                                          (prompt + tokens before it)
 *   shares_step: a step that sequences join lasts step(n, C) plus the
 *   prefill of each joiner, n and C with the joiners; beside: the
 *   prefill runs apart, the joiners get their first token at the step's
 *   end without being in it (the engine priced the step at its start,
 *   before they joined), so n and C are the others'.
 *
 * How (fit_rows_build, then fit_solve):
 *  1. Steps from token events. In one trace, every token event of every
 *     request is put on one time line; events less than half a typical
 *     gap apart, one per request at most, are one decode step's end (its
 *     tokens reach the clients at about the same moment). A request is
 *     in every step from its first event's to its last's. A step gives
 *     one observation when some request had a token at the step before
 *     too (the batch ran without a pause): y = the mean of those
 *     requests' gaps; n = the requests with a token in it; C = the sum of
 *     their prompt tokens and tokens received before it (the engine's
 *     context when it priced the step); J = the requests whose first
 *     token it is, their prompts, and the sums of their u and u^2. A step
 *     where a request in flight got no token, or an event carried more
 *     than one token (the client could not tell the steps apart), is
 *     skipped and counted.
 *  2. TTFTs of requests alone: no other request in flight from its start
 *     to its first token. Beside: TTFT = prefill(u); shares_step: a step
 *     of one joiner, TTFT = step(1, prompt) + prefill(u): one more row of
 *     the step regression.
 *  3. Ordinary least squares over the normal equations, the columns
 *     scaled to unit RMS, solved by Cholesky in the columns' order; a
 *     column that the ones before it explain (its remaining pivot below
 *     1e-9 of its own) is dropped, which is how a term the data cannot
 *     identify leaves (per_seq with one batch size: it is the intercept
 *     then). A slope that comes out negative is dropped too (the engine
 *     takes none) and the fit redone. Outliers (a stalled step, a
 *     descheduled client) beyond 8 robust sigmas (1.4826 x the median
 *     absolute deviation) or 0.1 ms, whichever is more, are dropped once
 *     and the fit redone; they are counted.
 *  4. shares_step: the beside model (n and C without the joiners) with
 *     the joiner terms (J, sum u, sum u^2) against the one without, by
 *     an F test over the same steps: shares_step when F > FIT_F_KEEP and
 *     a joiner's mean cost is positive (the shares_step model is the
 *     beside one plus such terms). The u^2 term the
 *     same way, and only when its coefficient is positive.
 *  5. Jitter: percentiles 1..99 of the residuals. Decode: of the steps
 *     without joiners. Prefill: beside, of the TTFTs of requests alone;
 *     shares_step, of the steps with one joiner, scaled by
 *     sqrt(1 - var(decode) / var(those)) (their residual is a decode
 *     draw plus a prefill draw).
 *
 * Cost: a trace of E token events and R requests takes O(E log E + R log
 * R) time and O(E + R) memory; each regression is O(rows x 6^2). The
 * traces' sizes are bounded by their reader.
 */
#ifndef BENCH_FIT_H
#define BENCH_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

#define FIT_NPCT 9              /* residual percentiles reported */
#define FIT_MAXK 6              /* columns of the largest regression */
#define FIT_MIN_STEPS 20        /* fewer step observations: an error */
#define FIT_MIN_SOLO 5          /* beside: fewer lone TTFTs: an error */
#define FIT_MIN_JOIN 5          /* fewer steps with joiners: beside */
#define FIT_F_KEEP 10.0         /* an F statistic above this keeps a term */
#define FIT_OUTLIER_SIGMAS 8.0  /* residuals beyond: dropped */
#define FIT_OUTLIER_MIN_MS 0.1  /* ... and beyond this at least */
#define FIT_NOTES 12            /* notes kept, each one sentence */
#define FIT_NOTE_LEN 200

/* The percentiles of the residuals: 1 5 10 25 50 75 90 95 99. */
extern const double fit_pcts[FIT_NPCT];

/* One recorded request, as the fit sees it. Borrowed arrays. */
struct fit_req {
	int64_t start_us;       /* its start, from its run's start */
	int64_t end_us;         /* its end, from its own start */
	uint32_t prompt_tokens;
	uint32_t uncached;      /* prompt_tokens less the cached ones */
	const int64_t *ev_us;   /* token events: arrival, from its start,
				 * non-decreasing */
	const uint32_t *ev_n;   /* tokens in each event (>= 1) */
	size_t nev;
};

/* One run: its requests (one time line). */
struct fit_trace {
	const struct fit_req *reqs;
	size_t nreqs;
};

/* One observation: a step (solo 0) or a TTFT of a request alone (solo
 * 1: n 1, c and cj its prompt, j 1, su its u). Milliseconds and
 * tokens. */
struct fit_row {
	double y;               /* the step's length or the TTFT, ms */
	double n, c;            /* sequences with a token from it, their
				 * context (joiners included) */
	double j, cj;           /* joiners, and their context (prompts) */
	double su, su2;         /* the joiners' uncached tokens, squared */
	int solo;
};

/* The observations of every trace, and what was left out. */
struct fit_rows {
	struct fit_row *v;      /* owned; fit_rows_free */
	size_t len, cap;
	size_t requests, events, steps;    /* seen */
	size_t step_rows, solo_rows;       /* kept */
	size_t skipped_idle;    /* steps no request continued into */
	size_t skipped_gap;     /* a request in flight had no token there,
				 * or an event carried several tokens */
	double tol_ms[8];       /* the step-grouping tolerance, per trace
				 * (the first 8) */
};

/* One least-squares fit. Columns by index: see fit_solve's notes. */
struct fit_reg {
	size_t nobs;            /* rows used (after outliers) */
	size_t dropped;         /* outliers left out */
	int k;                  /* columns asked */
	int kept[FIT_MAXK];     /* 1: estimated; 0: dropped (coef 0) */
	double coef[FIT_MAXK], se[FIT_MAXK];
	double rss, r2, rms;    /* residual sum of squares, R^2, RMS ms */
};

/* What fit_solve found. Every double is finite. */
struct fit_result {
	double p0, p1, p2;      /* prefill: base, per token, per token^2 */
	int shares_step;
	double d0, d1, d2;      /* decode: base, per seq, per ctx token */
	int has_jit_prefill, has_jit_decode;
	double jit_prefill[FIT_NPCT], jit_decode[FIT_NPCT];  /* ms */
	double jit_prefill_std, jit_decode_std;
	struct fit_reg decode;  /* the step regression (shares_step: with
				 * the joiner terms and the lone TTFTs) */
	struct fit_reg prefill; /* beside: the lone TTFTs; shares_step: the
				 * cross-check (lone TTFTs less their
				 * step), nobs 0 when there were too few */
	double f_shares, f_quad;    /* the F statistics (0: not tested) */
	double joiner_ms;       /* a joiner's mean cost in a step, ms */
	char notes[FIT_NOTES][FIT_NOTE_LEN];    /* why terms were kept or
						 * dropped */
	int nnotes;
};

/*
 * The observations of `ntraces` traces (steps 1 and 2 above) into *rows
 * (zeroed here; fit_rows_free frees). Requests without token events take
 * no part in the steps (they count when telling who ran alone). Returns
 * TS_OK, or TS_EINVAL with a sentence in err[0..errlen) when a request's
 * events are not in time order or one counts no token (nothing kept).
 */
enum ts_err fit_rows_build(const struct fit_trace *traces, size_t ntraces,
    struct fit_rows *rows, char *err, size_t errlen);

/* Frees rows' array; accepts a zeroed one. */
void fit_rows_free(struct fit_rows *rows);

/* Appends one observation (the unit tests' synthetic data). */
void fit_rows_add(struct fit_rows *rows, const struct fit_row *r);

/*
 * What the client's side adds, which the traces cannot tell from the
 * server's times (measured apart: e.g. tokstream's simulator with a
 * zero prefill and no jitter, fitted by the same code, gives both).
 */
struct fit_opts {
	double ttft_offset_ms;  /* the stack's round trip in every TTFT
				 * (request in, first token out): taken
				 * from the lone TTFTs, else it would be
				 * in the prefill's base */
	double noise_prefill_ms, noise_decode_ms;   /* the stack's own
				 * spread (std) of a TTFT and of a gap:
				 * taken out of the jitter's variance */
};

/*
 * Fits the profile to rows (steps 3 to 5 above) into *res, with opts
 * (NULL: none). Returns TS_OK,
 * or TS_EINVAL with a sentence in err[0..errlen) when the data cannot
 * give one: fewer than FIT_MIN_STEPS steps; beside and fewer than
 * FIT_MIN_SOLO lone TTFTs; a fit that is not finite.
 */
enum ts_err fit_solve(const struct fit_rows *rows,
    const struct fit_opts *opts, struct fit_result *res, char *err,
    size_t errlen);

/*
 * Least squares of y on the columns `use` (a bit per column of x, row
 * major n x FIT_MAXK) over the rows where mask is non-zero (NULL: all),
 * as step 3 says, without the outlier pass. Returns TS_OK, or TS_EINVAL
 * when fewer rows than kept columns + 2 remain.
 */
enum ts_err fit_ols(const double *x, const double *y, const unsigned char
    *mask, size_t n, unsigned use, struct fit_reg *r);

/*
 * The p-th percentile (0..100) of v[0..n), linear between the two
 * nearest ranks; v is sorted in place. n > 0.
 */
double fit_percentile_sorted(const double *v, size_t n, double p);

#endif /* BENCH_FIT_H */
