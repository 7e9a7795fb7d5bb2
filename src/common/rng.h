/*
 * common/rng.h - the one PRNG and the one hash of tokstream. Knows no
 * other layer.
 *
 *   - FNV-1a 64 (Fowler, Noll, Vo; draft-eastlake-fnv): rng_fnv1a. Its
 *     values are kept in files and ids (resume keys, the metrics layout
 *     hash), so it must never change.
 *   - SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
 *     generators", 2014): rng_splitmix64 steps a 64-bit state; its output
 *     mixer alone is rng_mix64, a bijection on 64-bit words (Stafford's
 *     "Mix13" variant of MurmurHash3's fmix64).
 *   - xoshiro256** 1.0 (Blackman and Vigna, 2018): struct rng, seeded from
 *     64 bits by four SplitMix64 outputs as its authors advise (so the
 *     state is never all zero), and drawn with rng_next, rng_bounded
 *     (Lemire's nearly divisionless method, 2019) and rng_unit.
 *   - rng_seed_of: the seed of a byte string (FNV-1a 64 of the bytes, a
 *     byte at a time so endianness cannot matter, then rng_mix64 to spread
 *     FNV's weak high bits). The simulator and the llama backend seed a
 *     prompt's generation with it.
 * Integer arithmetic only (rng_unit aside), so every value is the same on
 * every machine.
 */
#ifndef TS_COMMON_RNG_H
#define TS_COMMON_RNG_H

#include <stddef.h>
#include <stdint.h>

#define RNG_FNV1A_INIT 0xcbf29ce484222325ULL

/* FNV-1a 64 of (p, len) continued from h: start with RNG_FNV1A_INIT, feed
 * more bytes by passing the result back. Not cryptographic. */
uint64_t rng_fnv1a(uint64_t h, const void *p, size_t len);

/* SplitMix64's output mixer: a bijection on 64-bit words. */
uint64_t rng_mix64(uint64_t z);

/* One SplitMix64 step: advances *state, returns the next output. */
uint64_t rng_splitmix64(uint64_t *state);

/* The seed of the bytes (p, len): rng_mix64 of their FNV-1a 64. */
uint64_t rng_seed_of(const void *p, size_t len);

/* The k-th draw of a plan seed for one user (tag, a constant of the user
 * that keeps its draws apart from others'): rng_mix64(seed ^
 * rng_mix64(k + tag)), a fresh 64-bit word per k. The dialects' plans
 * draw with it; their values are part of a seeded run's answers, so it
 * must never change. */
uint64_t rng_draw(uint64_t seed, uint64_t tag, uint64_t k);

/*
 * Fills which[0..want) with distinct indices of 0..n-1 (want <= n), in
 * draw order: which[i] is the (rng_draw(seed, tag, k0 + i) mod (n - i))-th
 * index, counted from 0, of those not chosen before it. Deterministic in
 * (seed, tag, k0, n, want); a seeded run's choices depend on it, so it
 * must never change.
 */
void rng_pick_distinct(uint64_t seed, uint64_t tag, uint64_t k0, size_t n,
    size_t want, size_t *which);

/* A xoshiro256** 1.0 generator; the caller provides the storage. */
struct rng {
	uint64_t s[4];
};

/* Fills r's state from `seed` with four SplitMix64 outputs. */
void rng_seed(struct rng *r, uint64_t seed);

/* The next 64-bit output; advances the state. */
uint64_t rng_next(struct rng *r);

/* A uniform integer in [0, range), range >= 1 (Lemire, "Fast Random
 * Integer Generation in an Interval", 2019, on the top 32 bits). */
uint32_t rng_bounded(struct rng *r, uint32_t range);

/* A uniform double in [0, 1) from the top 53 bits of one output. */
double rng_unit(struct rng *r);

#endif /* TS_COMMON_RNG_H */
