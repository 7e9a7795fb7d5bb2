/*
 * load_report.c - PRNG draws, spec parsers, request plans and report
 * math of `tokbench load` (see load_report.h). Pure: no I/O, no clock.
 */
#include "bench/load_report.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest SLO accepted, in ms (about 11.6 days). */
#define LOAD_SLO_MAX_MS 1e9
/* Longest --goodput key accepted ("e2el"), for the error message. */
#define LOAD_KEY_MAX 16

/* ---- PRNG draws ---------------------------------------------------- */

void
load_rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t mix = stream;

	rng_seed(r, seed ^ rng_splitmix64(&mix));
}

long
load_rng_range(struct rng *r, long lo, long hi)
{
	uint64_t span, limit, x;

	if (hi <= lo)
		return lo;
	span = (uint64_t)hi - (uint64_t)lo + 1;
	if (span == 0)          /* the whole 64-bit range */
		return (long)rng_next(r);
	limit = UINT64_MAX - UINT64_MAX % span;
	do
		x = rng_next(r);
	while (x >= limit);
	return (long)((uint64_t)lo + x % span);
}

/* Inversion: 1 - U is in (0, 1], so the log is finite. */
double
load_rng_exp_ms(struct rng *r, double rate)
{
	if (!(rate > 0.0))
		return 0.0;
	return -log(1.0 - rng_unit(r)) / rate * 1000.0;
}

/* 1 - U is in (0, 1]: the log is finite. */
double
load_rng_normal(struct rng *r)
{
	double u1 = 1.0 - rng_unit(r), u2 = rng_unit(r);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

/* Marsaglia and Tsang (2000), section 6: d = a - 1/3, c = 1 / sqrt(9d);
 * accept v = (1 + c x)^3 when ln U < x^2 / 2 + d - d v + d ln v. */
double
load_rng_gamma(struct rng *r, double shape, double scale)
{
	double d, c, x, v, u, boost = 1.0;

	if (!(shape > 0.0) || !(scale > 0.0))
		return 0.0;
	if (shape < 1.0) {
		/* gamma(a) = gamma(a + 1) * U^(1/a) */
		boost = pow(1.0 - rng_unit(r), 1.0 / shape);
		shape += 1.0;
	}
	d = shape - 1.0 / 3.0;
	c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		do {
			x = load_rng_normal(r);
			v = 1.0 + c * x;
		} while (v <= 0.0);
		v = v * v * v;
		u = 1.0 - rng_unit(r);
		if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
			return d * v * scale * boost;
	}
}

double
load_rng_gap_ms(struct rng *r, double rate, double burstiness)
{
	if (!(rate > 0.0))
		return 0.0;
	if (burstiness == 1.0)
		return load_rng_exp_ms(r, rate);
	return load_rng_gamma(r, burstiness, 1.0 / (rate * burstiness)) *
	    1000.0;
}

double
load_ramp_rate(enum load_ramp ramp, double start_rps, double end_rps,
    uint64_t index, uint64_t total)
{
	double progress = (double)index / (double)(total > 1 ? total - 1 : 1);

	switch (ramp) {
	case LOAD_RAMP_LINEAR:
		return start_rps + (end_rps - start_rps) * progress;
	case LOAD_RAMP_EXPONENTIAL:
		return start_rps * pow(end_rps / start_rps, progress);
	default:
		return start_rps;
	}
}

/* ---- spec parsing ---------------------------------------------------- */

static void load_perr_set(struct load_perr *err, const char *spec,
    const char *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fills *err with the offset of `at` in `spec` and a message. */
static void
load_perr_set(struct load_perr *err, const char *spec, const char *at,
    const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	err->position = (int)(at - spec);
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
}

/*
 * A decimal integer at s (optional '-', digits only: no spaces, no '+').
 * Sets *end past it. Returns TS_OK, or TS_EINVAL (no digits, overflow).
 */
static enum ts_err
load_scan_long(const char *s, const char **end, long *out)
{
	const char *p = s;
	char *e;
	long v;

	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return TS_EINVAL;
	errno = 0;
	v = strtol(s, &e, 10);
	if (errno != 0)
		return TS_EINVAL;
	*end = e;
	*out = v;
	return TS_OK;
}

/*
 * A plain decimal number at s: digits, at most one '.', digits, no sign,
 * no exponent, no "inf"/"nan" (strtod would take them). Sets *end past
 * it. Returns TS_OK, or TS_EINVAL.
 */
static enum ts_err
load_scan_number(const char *s, const char **end, double *out)
{
	const char *p = s;
	size_t digits = 0;
	char *e;
	double v;

	while (*p >= '0' && *p <= '9') {
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			p++;
			digits++;
		}
	}
	if (digits == 0)
		return TS_EINVAL;
	errno = 0;
	v = strtod(s, &e);
	if (errno != 0 || e != p || !isfinite(v))
		return TS_EINVAL;
	*end = p;
	*out = v;
	return TS_OK;
}

enum ts_err
load_parse_number(const char *s, double lo, double hi, double *out)
{
	const char *end;
	double v;

	if (load_scan_number(s, &end, &v) != TS_OK || *end != '\0' ||
	    v < lo || v > hi)
		return TS_EINVAL;
	*out = v;
	return TS_OK;
}

enum ts_err
load_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p;

	if (*s == '\0')
		return TS_EINVAL;
	for (p = s; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return TS_EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return TS_EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	return TS_OK;
}

enum ts_err
load_parse_range(const char *s, long lo, long hi, struct load_range *out,
    struct load_perr *err)
{
	struct load_range r;
	const char *p = s, *at;

	at = p;
	if (load_scan_long(p, &p, &r.min) != TS_OK) {
		load_perr_set(err, s, at, "expected an integer");
		return TS_EINVAL;
	}
	if (r.min < lo || r.min > hi) {
		load_perr_set(err, s, at, "%ld is not from %ld to %ld", r.min,
		    lo, hi);
		return TS_EINVAL;
	}
	r.max = r.min;
	if (*p == ':') {
		at = ++p;
		if (load_scan_long(p, &p, &r.max) != TS_OK) {
			load_perr_set(err, s, at,
			    "expected an integer after ':'");
			return TS_EINVAL;
		}
		if (r.max < lo || r.max > hi) {
			load_perr_set(err, s, at, "%ld is not from %ld to %ld",
			    r.max, lo, hi);
			return TS_EINVAL;
		}
		if (r.max < r.min) {
			load_perr_set(err, s, at, "MAX %ld is below MIN %ld",
			    r.max, r.min);
			return TS_EINVAL;
		}
	}
	if (*p != '\0') {
		load_perr_set(err, s, p, "unexpected '%c'; want N or MIN:MAX",
		    *p);
		return TS_EINVAL;
	}
	*out = r;
	return TS_OK;
}

void
load_slo_init(struct load_slo *slo)
{
	slo->ttft_ms = -1.0;
	slo->tpot_ms = -1.0;
	slo->e2el_ms = -1.0;
}

int
load_slo_any(const struct load_slo *slo)
{
	return slo->ttft_ms >= 0 || slo->tpot_ms >= 0 || slo->e2el_ms >= 0;
}

/*
 * Works on a copy of *slo so that a spec with an error in its last item
 * changes nothing. Items are separated by any run of spaces, tabs and
 * commas; leading and trailing separators are allowed, an empty spec is
 * not.
 */
enum ts_err
load_parse_goodput(const char *s, struct load_slo *slo, struct load_perr *err)
{
	struct load_slo w = *slo;
	const char *p = s, *key, *at;
	double v, *slot;
	size_t klen, items = 0;

	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		key = p;
		while (*p != '\0' && *p != ':' && *p != ' ' && *p != '\t' &&
		    *p != ',')
			p++;
		klen = (size_t)(p - key);
		if (klen == 4 && memcmp(key, "ttft", 4) == 0)
			slot = &w.ttft_ms;
		else if (klen == 4 && memcmp(key, "tpot", 4) == 0)
			slot = &w.tpot_ms;
		else if (klen == 4 && memcmp(key, "e2el", 4) == 0)
			slot = &w.e2el_ms;
		else {
			load_perr_set(err, s, key, "unknown metric '%.*s'; "
			    "want ttft, tpot or e2el",
			    (int)(klen > LOAD_KEY_MAX ? LOAD_KEY_MAX : klen),
			    key);
			return TS_EINVAL;
		}
		if (*p != ':') {
			load_perr_set(err, s, p, "expected ':' after '%.*s'",
			    (int)klen, key);
			return TS_EINVAL;
		}
		at = ++p;
		if (load_scan_number(p, &p, &v) != TS_OK ||
		    (*p != '\0' && *p != ' ' && *p != '\t' && *p != ',')) {
			load_perr_set(err, s, at, "expected milliseconds (a "
			    "plain decimal number) after '%.*s:'", (int)klen,
			    key);
			return TS_EINVAL;
		}
		if (!(v > 0.0) || v > LOAD_SLO_MAX_MS) {
			load_perr_set(err, s, at, "%.*s SLO must be > 0 and "
			    "<= %.0f ms", (int)klen, key, LOAD_SLO_MAX_MS);
			return TS_EINVAL;
		}
		if (*slot >= 0.0) {
			load_perr_set(err, s, key, "%.*s given twice",
			    (int)klen, key);
			return TS_EINVAL;
		}
		*slot = v;
		items++;
	}
	if (items == 0) {
		load_perr_set(err, s, p, "no KEY:MS item (e.g. ttft:500)");
		return TS_EINVAL;
	}
	*slo = w;
	return TS_OK;
}

enum ts_err
load_parse_abandon(const char *s, long max_k, struct load_abandon *out,
    struct load_perr *err)
{
	struct load_abandon a;
	const char *p = s, *at;

	if (load_scan_number(p, &p, &a.fraction) != TS_OK) {
		load_perr_set(err, s, s, "expected a fraction P from 0 to 1 "
		    "(P:K)");
		return TS_EINVAL;
	}
	if (a.fraction > 1.0) {
		load_perr_set(err, s, s, "fraction %g is over 1", a.fraction);
		return TS_EINVAL;
	}
	if (*p != ':') {
		load_perr_set(err, s, p, "expected ':' and a token count K "
		    "(P:K)");
		return TS_EINVAL;
	}
	at = ++p;
	if (load_scan_long(p, &p, &a.after_tokens) != TS_OK ||
	    *p != '\0') {
		load_perr_set(err, s, at, "expected an integer K (token "
		    "events read before hanging up)");
		return TS_EINVAL;
	}
	if (a.after_tokens < 1 || a.after_tokens > max_k) {
		load_perr_set(err, s, at, "K %ld is not from 1 to %ld",
		    a.after_tokens, max_k);
		return TS_EINVAL;
	}
	*out = a;
	return TS_OK;
}

/* ---- plans ----------------------------------------------------------- */

/*
 * The abandon draw is made for every request (even with fraction 0 or 1)
 * so that changing P does not shift the lengths of later requests.
 */
void
load_plan_next(struct rng *r, const struct load_range *prompt,
    const struct load_range *output, const struct load_abandon *abandon,
    struct load_plan *out)
{
	double u;

	memset(out, 0, sizeof(*out));
	out->prompt_tokens = prompt->min == prompt->max ? prompt->min :
	    load_rng_range(r, prompt->min, prompt->max);
	out->output_tokens = output->min == output->max ? output->min :
	    load_rng_range(r, output->min, output->max);
	u = rng_unit(r);
	out->abandon_after = abandon != NULL && u < abandon->fraction ?
	    abandon->after_tokens : 0;
}

/* ---- metrics --------------------------------------------------------- */

enum ts_err
load_tpot_ms(double e2e_ms, double ttft_ms, size_t output_tokens,
    double *out)
{
	if (output_tokens < 2)
		return TS_EINVAL;
	*out = (e2e_ms - ttft_ms) / (double)(output_tokens - 1);
	return TS_OK;
}

int
load_slo_met(const struct load_slo *slo, size_t output_tokens,
    double ttft_ms, double tpot_ms, double e2el_ms)
{
	if (slo->ttft_ms >= 0.0 && (output_tokens == 0 ||
	    !(ttft_ms <= slo->ttft_ms)))
		return 0;
	if (slo->tpot_ms >= 0.0 && output_tokens > 1 &&
	    !(tpot_ms <= slo->tpot_ms))
		return 0;
	if (slo->e2el_ms >= 0.0 && !(e2el_ms <= slo->e2el_ms))
		return 0;
	return 1;
}

const char *
load_fail_name(enum load_fail f)
{
	switch (f) {
	case LOAD_FAIL_HTTP_429: return "http_429";
	case LOAD_FAIL_HTTP_500: return "http_500";
	case LOAD_FAIL_HTTP_503: return "http_503";
	case LOAD_FAIL_HTTP_5XX: return "http_5xx";
	case LOAD_FAIL_HTTP_400: return "http_400";
	case LOAD_FAIL_HTTP_401: return "http_401";
	case LOAD_FAIL_HTTP_OTHER: return "http_other";
	case LOAD_FAIL_CONNECT: return "connect";
	case LOAD_FAIL_SSE_ERROR: return "sse_error_event";
	case LOAD_FAIL_TRUNCATED: return "truncated";
	case LOAD_FAIL_TIMEOUT: return "timeout";
	case LOAD_FAIL_PROTOCOL: return "protocol";
	case LOAD_FAIL_TRANSPORT: return "transport";
	case LOAD_FAIL_COUNT: break;
	}
	return "unknown";
}

enum load_fail
load_fail_of_status(long status)
{
	switch (status) {
	case 429: return LOAD_FAIL_HTTP_429;
	case 500: return LOAD_FAIL_HTTP_500;
	case 503: return LOAD_FAIL_HTTP_503;
	case 400: return LOAD_FAIL_HTTP_400;
	case 401: return LOAD_FAIL_HTTP_401;
	default: break;
	}
	return status >= 500 && status <= 599 ? LOAD_FAIL_HTTP_5XX :
	    LOAD_FAIL_HTTP_OTHER;
}

/* The order statistics come from stats_summarize(); the deviation is a
 * second pass around the mean (stable enough for latencies in ms). */
enum ts_err
load_metric_compute(const double *v, size_t n, struct load_metric *out)
{
	struct stats_summary s;
	double ss = 0.0;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (n == 0)
		return TS_OK;
	if (stats_summarize(v, n, &s) != TS_OK)
		return TS_EINVAL;
	for (i = 0; i < n; i++)
		ss += (v[i] - s.mean) * (v[i] - s.mean);
	out->n = n;
	out->mean = s.mean;
	out->std = sqrt(ss / (double)n);
	out->median = s.median;
	out->p90 = s.p90;
	out->p99 = s.p99;
	out->min = s.min;
	out->max = s.max;
	return TS_OK;
}

/* Appends x, doubling the capacity when full. */
static void
load_samples_add(struct load_samples *s, double x)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = x;
}

static void
load_samples_free(struct load_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void
load_acc_init(struct load_acc *a, const struct load_slo *slo)
{
	memset(a, 0, sizeof(*a));
	if (slo != NULL)
		a->slo = *slo;
	else
		load_slo_init(&a->slo);
}

void
load_acc_free(struct load_acc *a)
{
	if (a == NULL)
		return;
	load_samples_free(&a->ttft);
	load_samples_free(&a->tpot);
	load_samples_free(&a->itl);
	load_samples_free(&a->e2el);
	load_samples_free(&a->itl1);
	load_samples_free(&a->ttfr);
}

void
load_acc_completed(struct load_acc *a, long prompt_tokens,
    const double *arrival_ms, size_t ntokens, size_t output_tokens,
    double e2e_ms)
{
	load_acc_completed_reasoning(a, prompt_tokens, arrival_ms, ntokens,
	    output_tokens, e2e_ms, -1.0, 0);
}

void
load_acc_completed_reasoning(struct load_acc *a, long prompt_tokens,
    const double *arrival_ms, size_t ntokens, size_t output_tokens,
    double e2e_ms, double ttfr_ms, size_t events)
{
	double ttft = 0.0, tpot = 0.0, first = -1.0;
	size_t i;

	a->completed++;
	a->prompt_tokens += prompt_tokens > 0 ? (uint64_t)prompt_tokens : 0;
	a->output_tokens += output_tokens;
	a->deltas += ntokens;
	if (ntokens > 0) {
		ttft = arrival_ms[0];
		load_samples_add(&a->ttft, ttft);
		first = ttft;
	}
	if (events > 0) {
		a->reasoning_events += events;
		load_samples_add(&a->ttfr, ttfr_ms);
		if (first < 0 || ttfr_ms < first)
			first = ttfr_ms;
	}
	if (first >= 0 &&
	    load_tpot_ms(e2e_ms, first, output_tokens, &tpot) == TS_OK)
		load_samples_add(&a->tpot, tpot);
	for (i = 1; i < ntokens; i++)
		load_samples_add(&a->itl, arrival_ms[i] - arrival_ms[i - 1]);
	if (ntokens > 1)
		load_samples_add(&a->itl1, arrival_ms[1] - arrival_ms[0]);
	load_samples_add(&a->e2el, e2e_ms);
	if (load_slo_met(&a->slo, output_tokens, ttft, tpot, e2e_ms))
		a->good++;
}

void
load_acc_abandoned(struct load_acc *a, size_t ntokens)
{
	a->abandoned++;
	a->abandoned_tokens += ntokens;
}

void
load_acc_failed(struct load_acc *a, enum load_fail f)
{
	a->failed++;
	if ((unsigned)f < LOAD_FAIL_COUNT)
		a->fail[f]++;
}

enum ts_err
load_report_compute(const struct load_acc *a, double duration_s,
    struct load_report *out)
{
	struct load_report r;

	memset(&r, 0, sizeof(r));
	r.duration_s = duration_s;
	r.completed = a->completed;
	r.abandoned = a->abandoned;
	r.failed = a->failed;
	r.good = a->good;
	r.prompt_tokens = a->prompt_tokens;
	r.output_tokens = a->output_tokens;
	r.reasoning_events = a->reasoning_events;
	if (duration_s > 0.0) {
		r.request_throughput = (double)a->completed / duration_s;
		r.request_goodput = (double)a->good / duration_s;
		r.output_throughput = (double)a->output_tokens / duration_s;
		r.total_token_throughput = (double)(a->prompt_tokens +
		    a->output_tokens) / duration_s;
	}
	if (load_metric_compute(a->ttft.v, a->ttft.n, &r.ttft) != TS_OK ||
	    load_metric_compute(a->tpot.v, a->tpot.n, &r.tpot) != TS_OK ||
	    load_metric_compute(a->itl.v, a->itl.n, &r.itl) != TS_OK ||
	    load_metric_compute(a->e2el.v, a->e2el.n, &r.e2el) != TS_OK ||
	    load_metric_compute(a->itl1.v, a->itl1.n, &r.itl1) != TS_OK ||
	    load_metric_compute(a->ttfr.v, a->ttfr.n, &r.ttfr) != TS_OK)
		return TS_EINVAL;
	*out = r;
	return TS_OK;
}
