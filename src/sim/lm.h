/*
 * sim/lm.h - the simulated model "tokstream-sim": a small deterministic
 * language model over sim/vocab.h's vocabulary, with OpenAI-style
 * sampling (struct engine_sampling: temperature, top_p, seed, ignore_eos)
 * and an end-of-sequence token. The OpenAI-compatible endpoints serve it;
 * the lab endpoints /stream and /generate use sim/lab.h. No I/O, no
 * clocks, no HTTP.
 *
 * Each step scores every candidate - the 256 byte tokens, every text token
 * and SIM_EOS_ID - into a logit (natural-log units), then samples:
 *   1. the model: a soft version of sim_lab_next's sentence structure. The
 *      last token's kind decides which kinds of token the next one is
 *      expected to be (a capital after a line break, a sentence start or a
 *      newline after a sentence end, words, pieces, punctuation, numbers
 *      and stress tokens mid-sentence, a sentence end more likely with
 *      every word from 6 on and near certain at 18); an expected token's
 *      logit is ln(its group's share x its weight in vocab_table.c / the
 *      group's weight), any other text token's is small (all of them
 *      together hold about 0.2% of the mass). A context term in (-2, +2)
 *      - two uniform numbers from hashes of the prompt, the last token
 *      and the candidate, and of the prompt, the last three tokens and the
 *      candidate - makes the choice depend on the context without changing
 *      the average distribution, and a repeat of one of the last three
 *      tokens loses 3.
 *   2. byte tokens: mid-sentence, a lead byte of a multi-byte UTF-8
 *      character (Latin-1 letters, Greek, Cyrillic, CJK, emoji) has a small
 *      logit (0.4% of the mass together); after one, only the continuation
 *      bytes that keep the character valid are allowed (every other
 *      candidate, EOS included, is masked to -inf). So characters split
 *      over byte tokens occur (about 1 token in 120 at temperature 1) and
 *      the text is always valid UTF-8 - except that max_tokens may cut a
 *      character short (text/release.h then ends the text with U+FFFD). Other
 *      byte tokens are always masked.
 *   3. EOS: after a sentence end or a newline its probability is p(n) =
 *      min(0.9, (n + 1) / 300) for the n-th generated token (elsewhere 1%
 *      of that; it can even come first). Measured over 1,000 chat prompts:
 *      at temperature 1 the median answer is 65 tokens, 90% end within
 *      120 and all within 200; greedy ones run 16..91 (median 39); at
 *      temperature 2, median 143, 99% within 470. ignore_eos masks EOS
 *      before sampling, and min_tokens while fewer ids than it were
 *      produced (a thinking phase: text/think.h).
 *   4. sampling: logits / temperature, softmax, the top_p nucleus (the
 *      smallest set of most probable candidates, ties broken by lower id,
 *      whose probability sums to >= top_p), and a draw with xoshiro256**
 *      seeded from `seed` (rng_seed); without a seed, from
 *      rng_seed_of(prompt). Temperature below ENGINE_GREEDY_BELOW is greedy:
 *      the highest logit, ties broken by the lowest id, no draw (greedy
 *      text repeats itself, as greedy decoding of small models does).
 *
 * Determinism: the same prompt, parameters and seed give the same ids in
 * any process, on any run. Floats are used (IEEE-754 binary64), but only
 * +, -, *, / and the exact floor/frexp/ldexp: exp and log are computed
 * here by fixed polynomials, not by libm (whose last bit may differ
 * between versions), and every sum runs in candidate order, one term at a
 * time (no parallel or reordered reductions). That holds on x86-64 (SSE2,
 * FLT_EVAL_METHOD 0) and wherever doubles are binary64 and the compiler
 * does not contract a*b+c into an FMA (gcc -std=c11 does not).
 * Prefix property: token k depends only on the prompt, the parameters and
 * the tokens before it, so a stream cut short is a prefix of the longer
 * one. The output is not canonical (unlike sim_lab_next): its text may
 * tokenize to other ids (byte tokens, merges), so count the ids.
 */
#ifndef TS_SIM_LM_H
#define TS_SIM_LM_H

#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"
#include "backend/backend.h"
#include "sim/vocab.h"

/*
 * One generation. The caller provides the struct; sim_lm_init fills it
 * and allocates its scratch (aborts on out of memory), sim_lm_free
 * releases that. The fields are lm.c's. One sim_lm is used by one
 * thread at a time; different ones are independent.
 */
struct sim_lm {
	struct rng rng;         /* xoshiro256**: the sampler */
	uint64_t prompt_hash;   /* rng_seed_of(prompt): in every context hash */
	struct engine_sampling params;  /* copied by sim_lm_init */
	uint32_t hist[3];       /* last ids, newest first; SIM_EOS_ID: none */
	uint32_t produced;      /* ids returned by sim_lm_next so far */
	uint32_t words;         /* words since the last sentence break */
	uint8_t ended;          /* SIM_EOS_ID was returned */
	uint8_t utf8_lead;      /* lead byte of a character being spelt in
				 * byte tokens, 0 if none */
	uint8_t utf8_done;      /* continuation bytes of it so far */
	uint8_t utf8_need;      /* continuation bytes it still needs */
	double *logit;          /* scratch: sim_lm_ncand() logits */
	double *prob;           /* scratch: as many weights */
	struct sim_lm_cand *order;      /* scratch: 2 x as many, top_p */
};

/*
 * Starts a generation for the prompt (ptr, len; any bytes) with the
 * parameters *p (copied; NULL: the defaults). Cannot fail (aborts on out
 * of memory). Call sim_lm_free when done.
 */
void sim_lm_init(struct sim_lm *lm, const char *prompt, size_t len,
    const struct engine_sampling *p);

/*
 * The next id: a text token, a byte token (0..255) or SIM_EOS_ID (never
 * with ignore_eos). After SIM_EOS_ID the generation is over and later
 * calls return SIM_EOS_ID again. Cannot fail.
 */
uint32_t sim_lm_next(struct sim_lm *lm);

/*
 * Number of candidates of a step: sim_vocab_size() + 1. Index k <
 * sim_vocab_size() is id k; the last index is SIM_EOS_ID.
 */
size_t sim_lm_ncand(void);

/*
 * The model's logits for the next step, before ignore_eos, temperature
 * and top_p: sim_lm_ncand() values indexed as above, -INFINITY for a
 * masked candidate. Borrowed: valid until the next sim_lm_next,
 * sim_lm_logits or sim_lm_free on lm. Does not advance the generation.
 */
const double *sim_lm_logits(struct sim_lm *lm);

/*
 * Guided decoding: scores the step as sim_lm_next does (so
 * sim_lm_logprobs sees the model's distribution) but takes `id` instead
 * of sampling, and returns it; SIM_EOS_ID ends the generation. The
 * sampler draws nothing, so a forced step leaves the rng as it was.
 */
uint32_t sim_lm_force(struct sim_lm *lm, uint32_t id);

/*
 * The logprobs of the step just taken (sim_lm_next or sim_lm_force)
 * that gave `id`: out[0] is id's, out[1..k] the k most probable
 * candidates (k <= ENGINE_MAX_TOP_LOGPROBS) by descending logprob, ties
 * by lower id. Log-softmax of the raw logits (after the ignore_eos mask,
 * before temperature and top_p; natural log, computed with this file's
 * exp and log, so the same on every machine); masked candidates are
 * ENGINE_LOGPROB_MASKED.
 */
void sim_lm_logprobs(const struct sim_lm *lm, uint32_t id, uint32_t k,
    struct engine_logprob *out);

/* Releases the scratch of lm (accepts NULL and a zeroed struct). */
void sim_lm_free(struct sim_lm *lm);

#endif /* TS_SIM_LM_H */
