/*
 * model/model_sample.h - choosing the next token from logits: greedy argmax,
 * temperature, top-p (nucleus) sampling, and the seeded PRNG they draw
 * from. Pure functions: no state beyond the caller's PRNG word.
 *
 * After llama2.c run.c (sample_argmax, sample_mult, sample_topp,
 * random_f32: xorshift64*, kept so that a checkpoint samples as it does
 * under llama2.c; common/rng.h only seeds it), with two differences: ties sort by lower id
 * so results do not depend on qsort, and the nucleus falls back to a
 * full sort when run.c's cutoff shortcut would drop needed tokens.
 */
#ifndef TS_MODEL_MODEL_SAMPLE_H
#define TS_MODEL_MODEL_SAMPLE_H

#include <stdint.h>

/* A PRNG state from any seed (never the xorshift's stuck state 0). */
uint64_t model_rng_seed(uint64_t seed);

/* The next 32 random bits / a float in [0, 1) with 24 random bits. */
uint32_t model_rng_u32(uint64_t *state);
float model_rng_f32(uint64_t *state);

/* The id of the largest of logits[0..n), the lowest id on ties; n > 0. */
uint32_t model_argmax(const float *logits, uint32_t n);

/*
 * Samples a token id from logits[0..n) (borrowed, not modified; n > 0):
 *   - temperature <= 0 (or NaN): model_argmax; *rng_state untouched;
 *   - otherwise p = softmax(logits / temperature), and when
 *     0 <= top_p < 1 only the nucleus is kept: the most probable ids, in
 *     order of p (then id), up to and including the first whose
 *     cumulative p exceeds top_p (so top_p near 0 gives the argmax);
 *     then one draw from *rng_state picks an id in proportion to p.
 * Exactly one PRNG draw per call when temperature > 0, so a stream is
 * reproducible from its seed. top_p >= 1 (or NaN) disables the nucleus.
 * The nucleus needs a temporary of 8 x n bytes (allocated, aborts when
 * out of memory).
 */
uint32_t model_sample(const float *logits, uint32_t n, float temperature,
    float top_p, uint64_t *rng_state);

#endif /* TS_MODEL_MODEL_SAMPLE_H */
