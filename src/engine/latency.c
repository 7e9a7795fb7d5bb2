/*
 * engine/latency.c - prefill and step durations, jitter (latency.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "engine/latency.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "common/rng.h"
#include "common/ts.h"

void
engine_latency_defaults(struct engine_latency *lat)
{
	memset(lat, 0, sizeof(*lat));
	lat->prefill_base_ms = ENGINE_DEFAULT_PREFILL_BASE_MS;
	lat->prefill_per_token_ms = ENGINE_DEFAULT_PREFILL_PER_TOKEN_MS;
	lat->tpot_ms = ENGINE_DEFAULT_TPOT_MS;
	strcpy(lat->name, "default");
}

double
engine_prefill_ms(const struct engine_latency *lat, uint64_t tokens)
{
	double u = (double)tokens;

	double ms = lat->prefill_base_ms + lat->prefill_per_token_ms * u +
	    lat->prefill_per_token2_ms * u * u;

	/* at most ENGINE_MAX_PASS_MS: a quadratic term over a long prompt
	 * must not overflow a deadline */
	return ms < ENGINE_MAX_PASS_MS ? ms : ENGINE_MAX_PASS_MS;
}

double
engine_decode_ms(const struct engine_latency *lat, uint32_t seqs,
    uint64_t ctx_tokens)
{
	double ms = lat->tpot_ms + lat->decode_per_seq_ms * (double)seqs +
	    lat->decode_per_ctx_token_ms * (double)ctx_tokens;

	return ms < ENGINE_MAX_PASS_MS ? ms : ENGINE_MAX_PASS_MS;
}

int64_t
engine_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
engine_scaled_ns(double ms, double factor, int64_t jitter_ns)
{
	int64_t base = (int64_t)ts_ms_to_ns(ms * factor);
	int64_t d = base + jitter_ns;

	return d < base / 10 ? base / 10 : d;
}

void
engine_jitter_seed(struct engine_jitter *j, uint64_t seed)
{
	j->state = seed;
}

int64_t
engine_jitter_ns(struct engine_jitter *j, double std_ms)
{
	double u1, u2, z;

	if (std_ms <= 0)
		return 0;
	u1 = ((double)(rng_splitmix64(&j->state) >> 11) + 1.0) /
	    9007199254740993.0;
	u2 = (double)(rng_splitmix64(&j->state) >> 11) / 9007199254740992.0;
	z = sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
	return (int64_t)ts_ms_to_ns(fabs(z * std_ms)) * (z < 0 ? -1 : 1);
}

int64_t
engine_dist_ns(struct engine_jitter *j, const struct engine_dist *d)
{
	double u, lo, hi, ms;
	uint32_t k;

	if (d->npoints == 0)
		return engine_jitter_ns(j, d->std_ms);
	if (d->npoints == 1)
		return (int64_t)ts_ms_to_ns(fabs(d->ms[0])) *
		    (d->ms[0] < 0 ? -1 : 1);
	lo = d->pct[0];
	hi = d->pct[d->npoints - 1];
	u = lo + (hi - lo) * ((double)(rng_splitmix64(&j->state) >> 11) /
	    9007199254740992.0);
	for (k = 1; k < d->npoints - 1 && d->pct[k] < u; k++)
		;
	/* u in [pct[k-1], pct[k]] */
	ms = d->pct[k] > d->pct[k - 1] ? d->ms[k - 1] + (d->ms[k] -
	    d->ms[k - 1]) * (u - d->pct[k - 1]) / (d->pct[k] -
	    d->pct[k - 1]) : d->ms[k];
	return (int64_t)ts_ms_to_ns(fabs(ms)) * (ms < 0 ? -1 : 1);
}
