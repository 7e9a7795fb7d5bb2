/*
 * engine/latency.c - prefill and step durations, jitter (latency.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "engine/latency.h"

#include <math.h>
#include <time.h>

#include "common/rng.h"
#include "common/ts.h"

void
engine_latency_defaults(struct engine_latency *lat)
{
	lat->prefill_base_ms = ENGINE_DEFAULT_PREFILL_BASE_MS;
	lat->prefill_per_token_ms = ENGINE_DEFAULT_PREFILL_PER_TOKEN_MS;
	lat->tpot_ms = ENGINE_DEFAULT_TPOT_MS;
}

double
engine_prefill_ms(const struct engine_latency *lat, uint64_t prompt_tokens)
{
	return lat->prefill_base_ms +
	    lat->prefill_per_token_ms * (double)prompt_tokens;
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
