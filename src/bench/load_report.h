/*
 * load_report.h - the pure part of `tokbench load`: its draws from the
 * seeded PRNG (common/rng.h), the per-request plan (lengths,
 * abandonment), the parsers of its command-line specs, and the report
 * math. No I/O, no clock, no libcurl: everything here is a function of
 * its arguments, so it is unit-tested on known samples
 * (tests/unit/test_load_report.c).
 *
 * The metrics follow vLLM's `vllm bench serve` (benchmarks/serve.py,
 * calculate_metrics()), in milliseconds:
 *   TTFT   request start to the first token event;
 *   TPOT   per request with more than one output token,
 *          (E2E - TTFT) / (output_tokens - 1);
 *   ITL    every gap between consecutive token events, pooled over the
 *          requests (n tokens give n - 1 samples);
 *   E2E    request start to the end of the response (tokbench load: the
 *          arrival of data: [DONE], the end of the stream);
 *   TTFR   request start to the first reasoning token (a thinking or
 *          reasoning delta), per completed request that had one: TTFT
 *          stays the first content token, as vllm bench serve has it.
 * Only completed requests (ended with [DONE], no error event) feed them;
 * abandoned and failed requests are counted apart. Percentiles are
 * nearest-rank (stats.h), not numpy's linear interpolation: every reported
 * percentile is an observed sample.
 *
 * A request is "good" (goodput) when each metric that has an SLO is <= it;
 * as in vLLM, a request with at most one output token counts as TPOT 0
 * there, and a metric without an SLO is not checked.
 */
#ifndef LOAD_REPORT_H
#define LOAD_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"
#include "common/ts.h"
#include "bench/stats.h"

/* ---- draws from the seeded PRNG (common/rng.h) ----------------------- */

/*
 * Seeds the xoshiro256** generator r from (seed, stream): the stream
 * number goes through one SplitMix64 step and is XORed into the seed, so
 * one --seed gives independent sequences for independent uses (stream 1
 * the arrivals, stream 2 the request plans) and (seed, 1) and
 * (seed + 1, 0) do not start from neighbouring states. The same pair
 * always gives the same sequence, on any machine.
 */
void load_rng_seed(struct rng *r, uint64_t seed, uint64_t stream);

/*
 * Uniform integer in [lo, hi] (lo <= hi; lo for hi < lo), unbiased:
 * rejection from the largest multiple of the span below 2^64, so every
 * value is equally likely and any span of longs works (rng_bounded()
 * draws 32 bits, and its values would change every --seed's plans).
 */
long load_rng_range(struct rng *r, long lo, long hi);

/*
 * One exponential inter-arrival time of a Poisson process with `rate`
 * events per second (> 0), in milliseconds: -ln(1 - U) / rate * 1000,
 * U from rng_unit(). Mean 1000 / rate ms. Returns 0 for a rate that is
 * not > 0.
 */
double load_rng_exp_ms(struct rng *r, double rate);

/*
 * A standard normal deviate (Box-Muller, Box and Muller 1958: the cosine
 * of the pair; two rng_unit() draws, the first made nonzero).
 */
double load_rng_normal(struct rng *r);

/*
 * A gamma deviate of `shape` (> 0) and `scale` (> 0), mean shape *
 * scale: Marsaglia and Tsang, "A simple method for generating gamma
 * variables" (ACM TOMS 26(3), 2000), with their boost U^(1/shape) for a
 * shape below 1. numpy.random.gamma(shape, scale) draws the same
 * distribution (not the same numbers). Returns 0 for a shape or scale
 * that is not > 0.
 */
double load_rng_gamma(struct rng *r, double shape, double scale);

/*
 * One inter-arrival time in ms at `rate` requests/s with vLLM's
 * burstiness (vllm/benchmarks/serve.py, get_request(): theta = 1 /
 * (rate * burstiness), np.random.gamma(shape=burstiness, scale=theta)):
 * mean 1000 / rate ms, coefficient of variation 1 / sqrt(burstiness).
 * Burstiness 1 is a Poisson process and draws load_rng_exp_ms(), so a
 * seed gives the arrivals it gave before burstiness existed.
 */
double load_rng_gap_ms(struct rng *r, double rate, double burstiness);

/* --ramp-up-strategy. */
enum load_ramp {
	LOAD_RAMP_NONE,
	LOAD_RAMP_LINEAR,
	LOAD_RAMP_EXPONENTIAL
};

/*
 * The request rate (req/s) of request `index` (0-based) of `total` under
 * a ramp from start_rps to end_rps, vLLM's _get_current_request_rate()
 * (vllm/benchmarks/serve.py): progress = index / max(total - 1, 1);
 * linear start + (end - start) * progress, exponential start *
 * (end / start)^progress. LOAD_RAMP_NONE gives start_rps.
 */
double load_ramp_rate(enum load_ramp ramp, double start_rps, double end_rps,
    uint64_t index, uint64_t total);

/* ---- command-line specs ---------------------------------------------- */

/* Where a spec failed to parse, after jansson's json_error_t. */
struct load_perr {
	int position;           /* 0-based byte offset in the spec */
	char text[160];         /* what was wrong, one English phrase */
};

/*
 * Parses a plain decimal number (digits, optional '.' and digits; no sign,
 * exponent, spaces, "inf" or "nan") in [lo, hi]. Returns TS_OK, or
 * TS_EINVAL with *out untouched.
 */
enum ts_err load_parse_number(const char *s, double lo, double hi,
    double *out);

/*
 * Parses decimal digits only (no sign, no spaces) as an unsigned 64-bit
 * value. Returns TS_OK, or TS_EINVAL (empty, a non-digit, overflow).
 */
enum ts_err load_parse_u64(const char *s, uint64_t *out);

/* A length, fixed (min == max) or uniform over [min, max]. */
struct load_range {
	long min, max;
};

/*
 * Parses "N" or "MIN:MAX" (decimal integers, MIN <= MAX) with every value
 * in [lo, hi]. Returns TS_OK, or TS_EINVAL with *err filled; *out is
 * untouched on error.
 */
enum ts_err load_parse_range(const char *s, long lo, long hi,
    struct load_range *out, struct load_perr *err);

/* Goodput SLOs in ms; a negative value means "no SLO on this metric". */
struct load_slo {
	double ttft_ms, tpot_ms, e2el_ms;
};

/* Sets every SLO of *slo to "none". */
void load_slo_init(struct load_slo *slo);

/* True when at least one SLO is set. */
int load_slo_any(const struct load_slo *slo);

/*
 * Parses a --goodput spec into *slo: one or more "KEY:MS" separated by
 * spaces or commas, KEY one of ttft, tpot, e2el (vLLM's names), MS a
 * decimal number > 0 and <= 1e9. A key set by an earlier spec, or twice
 * in this one, is an error (tokstream never picks one silently). Returns
 * TS_OK, or TS_EINVAL with *err filled and *slo unchanged.
 */
enum ts_err load_parse_goodput(const char *s, struct load_slo *slo,
    struct load_perr *err);

/* --abandon P:K: the share of requests that hang up after K tokens. */
struct load_abandon {
	double fraction;        /* P in [0, 1] */
	long after_tokens;      /* K >= 1 */
};

/*
 * Parses "P:K", P a decimal number in [0, 1], K an integer from 1 to
 * `max_k`. Returns TS_OK, or TS_EINVAL with *err filled; *out is
 * untouched on error.
 */
enum ts_err load_parse_abandon(const char *s, long max_k,
    struct load_abandon *out, struct load_perr *err);

/* ---- request plans ---------------------------------------------------- */

/* What one request asks for, drawn before it starts. */
struct load_plan {
	long prompt_tokens;
	long output_tokens;     /* sent as max_tokens */
	long abandon_after;     /* hang up after this many tokens; 0 never */
	uint64_t index;         /* 0-based, in the order of starts (the
				 * schedule's; load_plan_next() sets 0) */
	int warmup;             /* a --warmup request, counted nowhere
				 * (load_plan_next() sets 0) */
};

/*
 * Draws the next request's plan from r, always in the same order (prompt
 * length, output length, abandon choice; a fixed length draws nothing), so
 * request i gets the same plan for a given seed whatever the timing.
 */
void load_plan_next(struct rng *r, const struct load_range *prompt,
    const struct load_range *output, const struct load_abandon *abandon,
    struct load_plan *out);

/* ---- per-request metrics and the report ------------------------------ */

/*
 * TPOT of one request in ms: (e2e_ms - ttft_ms) / (output_tokens - 1).
 * Returns TS_OK, or TS_EINVAL when output_tokens < 2 (undefined).
 */
enum ts_err load_tpot_ms(double e2e_ms, double ttft_ms,
    size_t output_tokens, double *out);

/*
 * vLLM's goodput test of one completed request: every set SLO is met
 * (value <= SLO). tpot_ms is ignored unless output_tokens > 1 (it counts
 * as 0, as in vLLM); a TTFT SLO fails a request without any token.
 */
int load_slo_met(const struct load_slo *slo, size_t output_tokens,
    double ttft_ms, double tpot_ms, double e2el_ms);

/*
 * Why a request failed; LOAD_FAIL_COUNT is the number of kinds. The
 * statuses a gateway has to tell apart get a kind each (those tokstream's
 * failure injection answers with, handlers/inject.h: rate_limit 429,
 * server_error 500, overloaded 503, context_length 400, invalid_api_key
 * 401); its timeout is LOAD_FAIL_TIMEOUT, midstream_error
 * LOAD_FAIL_SSE_ERROR and midstream_cut LOAD_FAIL_TRUNCATED. The order is
 * that of the report.
 */
enum load_fail {
	LOAD_FAIL_HTTP_429,     /* 429 Too Many Requests (queue full) */
	LOAD_FAIL_HTTP_500,     /* 500 Internal Server Error */
	LOAD_FAIL_HTTP_503,     /* 503 Service Unavailable (overloaded) */
	LOAD_FAIL_HTTP_5XX,     /* any other 500..599 */
	LOAD_FAIL_HTTP_400,     /* 400 Bad Request (e.g. context length) */
	LOAD_FAIL_HTTP_401,     /* 401 Unauthorized (API key) */
	LOAD_FAIL_HTTP_OTHER,   /* any other status but 200 */
	LOAD_FAIL_CONNECT,      /* no connection (refused, resolve, timeout) */
	LOAD_FAIL_SSE_ERROR,    /* an error event after the 200 */
	LOAD_FAIL_TRUNCATED,    /* 200, but the response ended before [DONE] */
	LOAD_FAIL_TIMEOUT,      /* --timeout ran out once connected: no
				 * answer yet, or no [DONE] yet */
	LOAD_FAIL_PROTOCOL,     /* not an SSE stream of tokstream's events */
	LOAD_FAIL_TRANSPORT,    /* connected, no answer (reset, empty reply) */
	LOAD_FAIL_COUNT
};

/* Stable snake_case name of a failure kind ("http_429", ...). */
const char *load_fail_name(enum load_fail f);

/*
 * The kind of a request that got an HTTP status other than 200: 429,
 * 500, 503, 400 and 401 their own, any other 500..599 LOAD_FAIL_HTTP_5XX,
 * anything else (1xx, 3xx, another 4xx, a status over 599)
 * LOAD_FAIL_HTTP_OTHER. A status of 200 or 0 (no answer) is not an HTTP
 * failure and also gives LOAD_FAIL_HTTP_OTHER; the caller sorts those
 * out first (req.h, req_fate()).
 */
enum load_fail load_fail_of_status(long status);

/* One metric over its samples, in ms; n == 0 means no samples. */
struct load_metric {
	size_t n;
	double mean, std;       /* std: population (ddof 0), as numpy.std */
	double median, p90, p99, min, max;
};

/*
 * Fills *out from v[0..n) (any order, not modified): n, mean, population
 * standard deviation, nearest-rank median (lower middle), p90, p99, min,
 * max. n == 0 gives a zeroed metric with n = 0. Returns TS_OK, or
 * TS_EINVAL for a NaN sample.
 */
enum ts_err load_metric_compute(const double *v, size_t n,
    struct load_metric *out);

/* Growable array of samples (ms); the accumulator owns it. */
struct load_samples {
	double *v;
	size_t n, cap;
};

/*
 * Everything a run adds up, request by request. Zero it with
 * load_acc_init(), free it with load_acc_free().
 */
struct load_acc {
	struct load_slo slo;            /* copied at init */
	size_t completed, abandoned, failed, good;
	size_t fail[LOAD_FAIL_COUNT];
	uint64_t prompt_tokens;         /* of completed requests, as planned */
	uint64_t output_tokens;         /* tokens generated, completed ones */
	uint64_t deltas;                /* their token events (/v1: content
					 * deltas; /stream: output_tokens) */
	uint64_t abandoned_tokens;      /* token events read by abandoned */
	struct load_samples ttft, tpot, itl, e2el;
	struct load_samples itl1;       /* token 1 -> token 2, a request */
	struct load_samples ttfr;       /* first reasoning token, a request */
	uint64_t reasoning_events;      /* reasoning deltas, completed ones */
};

void load_acc_init(struct load_acc *a, const struct load_slo *slo);
void load_acc_free(struct load_acc *a);

/*
 * Adds a completed request: arrival_ms[0..ntokens) are its token events'
 * arrival times (a /v1 stream's content deltas) and e2e_ms its end, both
 * in ms since its start (arrival times ascending); output_tokens the
 * tokens it generated (ntokens for /stream; the usage chunk's
 * completion_tokens for /v1, as vllm bench serve counts). Adds its TTFT
 * (when ntokens > 0), TPOT ((E2E - TTFT) / (output_tokens - 1), when
 * output_tokens > 1), ntokens - 1 ITL gaps, its first gap (token 1 to
 * 2, when ntokens > 1: where a scheduler that adds a step after the
 * prefill shows) and E2E, and counts it good against the SLOs.
 * `arrival_ms` is borrowed for the call.
 */
void load_acc_completed(struct load_acc *a, long prompt_tokens,
    const double *arrival_ms, size_t ntokens, size_t output_tokens,
    double e2e_ms);

/*
 * load_acc_completed() for a request that reasoned: ttfr_ms is its first
 * reasoning token's arrival (ms since its start) and `events` its
 * reasoning deltas (0: none, and ttfr_ms is ignored). It adds a TTFR
 * sample, counts the deltas, and its TPOT runs from its first output
 * token of either kind (the reasoning's, when that came first), since
 * output_tokens counts the reasoning tokens too (Anthropic's
 * output_tokens, OpenAI's completion_tokens): (E2E - first) /
 * (output_tokens - 1) stays the decode's pace. TTFT, ITL and ITL1 stay
 * those of the content tokens.
 */
void load_acc_completed_reasoning(struct load_acc *a, long prompt_tokens,
    const double *arrival_ms, size_t ntokens, size_t output_tokens,
    double e2e_ms, double ttfr_ms, size_t events);

/* Counts an abandoned request that had read `ntokens` token events. */
void load_acc_abandoned(struct load_acc *a, size_t ntokens);

/* Counts a failed request of kind f. */
void load_acc_failed(struct load_acc *a, enum load_fail f);

/* The numbers of a finished run, from load_report_compute(). */
struct load_report {
	double duration_s;
	size_t completed, abandoned, failed, good;
	uint64_t prompt_tokens, output_tokens;
	double request_throughput;      /* completed / duration, req/s */
	double request_goodput;         /* good / duration, req/s */
	double output_throughput;       /* output tokens / duration, tok/s */
	double total_token_throughput;  /* (prompt + output) / duration */
	struct load_metric ttft, tpot, itl, e2el;
	struct load_metric itl1;        /* the first gap of each request */
	struct load_metric ttfr;        /* time to first reasoning token */
	uint64_t reasoning_events;
};

/*
 * Computes the report of *a over a benchmark of duration_s seconds (the
 * rates are 0 when duration_s is not > 0). Returns TS_OK, or TS_EINVAL
 * for a NaN sample.
 */
enum ts_err load_report_compute(const struct load_acc *a, double duration_s,
    struct load_report *out);

#endif /* LOAD_REPORT_H */
