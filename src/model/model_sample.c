/*
 * model/model_sample.c - argmax, temperature and top-p sampling (see
 * model_sample.h).
 */
#include "model/model_sample.h"

#include <math.h>
#include <stdlib.h>

#include "common/rng.h"
#include "common/ts.h"

uint64_t
model_rng_seed(uint64_t seed)
{
	/* one SplitMix64 step from the seed: nearby seeds give unrelated
	 * streams */
	uint64_t z = rng_splitmix64(&seed);

	return z != 0 ? z : 0x2545f4914f6cdd1dULL;
}

uint32_t
model_rng_u32(uint64_t *state)
{
	/* xorshift64* (Vigna 2016), as run.c's random_u32 */
	uint64_t s = *state;

	if (s == 0)
		s = 0x2545f4914f6cdd1dULL;
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	*state = s;
	return (uint32_t)((s * 0x2545f4914f6cdd1dULL) >> 32);
}

float
model_rng_f32(uint64_t *state)
{
	return (float)(model_rng_u32(state) >> 8) / 16777216.0f;
}

uint32_t
model_argmax(const float *logits, uint32_t n)
{
	uint32_t i, best = 0;

	for (i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	return best;
}

/* A candidate of the nucleus: its probability and id. */
struct model_prob {
	float p;
	uint32_t id;
};

/* Descending p, then ascending id: a total order, so qsort's result is
 * the same on every libc. */
static int
prob_cmp(const void *a, const void *b)
{
	const struct model_prob *x = a, *y = b;

	if (x->p != y->p)
		return x->p > y->p ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * The nucleus of p[0..n) (sum 1) for top_p in [0, 1): sorts candidates
 * into c and returns how many to keep, and their total in *mass. Only
 * ids with p >= (1 - top_p) / (n - 1) can belong to it when the ones
 * above that cutoff already exceed top_p (run.c's shortcut); otherwise
 * every id is sorted.
 */
static uint32_t
nucleus(const float *p, uint32_t n, float top_p, struct model_prob *c,
    float *mass)
{
	float cutoff = n > 1 ? (1.0f - top_p) / (float)(n - 1) : 0.0f;
	float cum = 0.0f, above = 0.0f;
	uint32_t i, m = 0;

	for (i = 0; i < n; i++)
		if (p[i] >= cutoff) {
			c[m].p = p[i];
			c[m++].id = i;
			above += p[i];
		}
	if (above <= top_p || m == 0) {
		for (i = 0, m = 0; i < n; i++) {
			c[m].p = p[i];
			c[m++].id = i;
		}
	}
	qsort(c, m, sizeof(*c), prob_cmp);
	for (i = 0; i < m; i++) {
		cum += c[i].p;
		if (cum > top_p) {
			*mass = cum;
			return i + 1;
		}
	}
	*mass = cum;
	return m;
}

uint32_t
model_sample(const float *logits, uint32_t n, float temperature,
    float top_p, uint64_t *rng_state)
{
	struct model_prob *c = NULL;
	float *p = NULL;
	double z = 0.0;
	float max, r, cdf, mass;
	uint32_t i, k, id;

	if (!(temperature > 0.0f) || n == 1)
		return model_argmax(logits, n);
	max = logits[model_argmax(logits, n)];
	r = model_rng_f32(rng_state);
	if (!(top_p < 1.0f)) {
		/* plain sampling: two passes, no temporary */
		for (i = 0; i < n; i++)
			z += exp((double)((logits[i] - max) / temperature));
		cdf = 0.0f;
		for (i = 0; i < n; i++) {
			cdf += (float)(exp((double)((logits[i] - max) /
			    temperature)) / z);
			if (r < cdf)
				return i;
		}
		return model_argmax(logits, n);  /* rounding: r >= sum */
	}
	if (top_p < 0.0f)
		top_p = 0.0f;
	p = xmalloc((size_t)n * sizeof(*p));
	c = xmalloc((size_t)n * sizeof(*c));
	for (i = 0; i < n; i++) {
		p[i] = (float)exp((double)((logits[i] - max) / temperature));
		z += p[i];
	}
	for (i = 0; i < n; i++)
		p[i] = (float)(p[i] / z);
	k = nucleus(p, n, top_p, c, &mass);
	r *= mass;
	cdf = 0.0f;
	id = c[k - 1].id;           /* rounding: r >= the kept mass */
	for (i = 0; i < k; i++) {
		cdf += c[i].p;
		if (r < cdf) {
			id = c[i].id;
			break;
		}
	}
	free(p);
	free(c);
	return id;
}
