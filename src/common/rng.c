/*
 * common/rng.c - FNV-1a 64, SplitMix64 and xoshiro256** (rng.h).
 */
#include "common/rng.h"

uint64_t
rng_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t
rng_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

uint64_t
rng_splitmix64(uint64_t *state)
{
	*state += UINT64_C(0x9e3779b97f4a7c15);
	return rng_mix64(*state);
}

uint64_t
rng_seed_of(const void *p, size_t len)
{
	return rng_mix64(rng_fnv1a(RNG_FNV1A_INIT, p, len));
}

uint64_t
rng_draw(uint64_t seed, uint64_t tag, uint64_t k)
{
	return rng_mix64(seed ^ rng_mix64(k + tag));
}

void
rng_pick_distinct(uint64_t seed, uint64_t tag, uint64_t k0, size_t n,
    size_t want, size_t *which)
{
	size_t i, j, k;

	for (i = 0; i < want; i++) {
		/* the (r)-th index not chosen yet */
		size_t r = (size_t)(rng_draw(seed, tag, k0 + i) % (n - i));

		for (k = 0; k < n; k++) {
			for (j = 0; j < i && which[j] != k; j++)
				;
			if (j < i)
				continue;
			if (r-- == 0)
				break;
		}
		which[i] = k;
	}
}

void
rng_seed(struct rng *r, uint64_t seed)
{
	uint64_t x = seed;
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = rng_splitmix64(&x);
}

static uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/*
 * Multiply, keep the high half, and divide only when the low half falls
 * in the short biased zone, where the draw is rejected and repeated.
 */
uint32_t
rng_bounded(struct rng *r, uint32_t range)
{
	uint64_t m = (rng_next(r) >> 32) * (uint64_t)range;
	uint32_t low = (uint32_t)m, floor;

	if (low < range) {
		floor = (0u - range) % range;   /* 2^32 mod range */
		while (low < floor) {
			m = (rng_next(r) >> 32) * (uint64_t)range;
			low = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

double
rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}
