/*
 * sim/lab.h - the lab generator: the simulated model "tokstream-lab" that
 * /stream and /generate use. No sampling parameters, never EOS (a stream
 * always runs to max_tokens), and text that tokenizes back to its own ids.
 * No I/O, no clocks, no HTTP.
 *
 * Determinism contract: for the same prompt bytes, sim_lab_next() returns
 * the same token ids in the same order in any process, on any run, on any
 * little- or big-endian machine (integer arithmetic only, no floats).
 * Prefix property: the first k ids of a stream do not depend on how many
 * more are asked for, so a stream cut short is a prefix of the full answer.
 * Canonical output: the concatenated text of a stream, fed to
 * sim_tokenize(), gives back the same ids (the sampler redraws a token that
 * greedy matching would merge with the text before it), so a client can
 * count a stream's tokens from its text.
 *
 * Algorithms: the seed is rng_seed_of(prompt) (common/rng.h); the PRNG is
 * xoshiro256**; tokens are drawn from an integer weight table (Zipf-like
 * over words, with a fixed share for the "stress" tokens) by Lemire's
 * nearly-divisionless bounded draw.
 */
#ifndef TS_SIM_LAB_H
#define TS_SIM_LAB_H

#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"
#include "sim/vocab.h"

/*
 * One generation: PRNG state plus what the sampler needs of the context.
 * The caller provides the storage (sim_lab_init fills it; nothing to free);
 * the fields are lab.c's.
 */
struct sim_lab {
	struct rng rng;         /* xoshiro256** */
	/* The end of the text so far, for the canonical-output check: */
	uint64_t tail_starts;   /* bit i set: a token starts at tail[i] */
	uint64_t tail_open;     /* ... and is a prefix of a longer token */
	uint32_t produced;      /* tokens returned by sim_lab_next so far */
	uint32_t last;          /* last token id, 0 before the first */
	uint32_t words;         /* words since the last sentence break */
	uint8_t tail_len;       /* bytes of tail in use */
	unsigned char tail[2 * SIM_TOKEN_MAX_BYTES];
};

/* Starts a generation for the prompt (ptr, len). Cannot fail. */
void sim_lab_init(struct sim_lab *g, const char *prompt, size_t len);

/* The next token id (always >= SIM_FIRST_TEXT_ID). Cannot fail. */
uint32_t sim_lab_next(struct sim_lab *g);

#endif /* TS_SIM_LAB_H */
