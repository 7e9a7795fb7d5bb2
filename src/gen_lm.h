/*
 * gen_lm.h - a small deterministic language model over gen.h's vocabulary,
 * with OpenAI-style sampling: temperature, top_p, seed, and an
 * end-of-sequence token. Used by the OpenAI-compatible endpoints
 * (/v1/completions, /v1/chat/completions); the lab endpoints /stream and
 * /generate keep gen_next. No I/O, no clocks, no HTTP.
 *
 * Each step scores every candidate - the 256 byte tokens, every text token
 * and GEN_EOS_ID - into a logit (natural-log units), then samples:
 *   1. the model: a soft version of gen_next's sentence structure. The
 *      last token's kind decides which kinds of token the next one is
 *      expected to be (a capital after a line break, a sentence start or a
 *      newline after a sentence end, words, pieces, punctuation, numbers
 *      and stress tokens mid-sentence, a sentence end more likely with
 *      every word from 6 on and near certain at 18); an expected token's
 *      logit is ln(its group's share x its weight in gen_vocab.c / the
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
 *      character short (gen_release then ends the text with U+FFFD). Other
 *      byte tokens are always masked.
 *   3. EOS: after a sentence end or a newline its probability is p(n) =
 *      min(0.9, (n + 1) / 300) for the n-th generated token (elsewhere 1%
 *      of that; it can even come first). Measured over 1,000 chat prompts:
 *      at temperature 1 the median answer is 65 tokens, 90% end within
 *      120 and all within 200; greedy ones run 16..91 (median 39); at
 *      temperature 2, median 143, 99% within 470. ignore_eos masks EOS
 *      before sampling.
 *   4. sampling: logits / temperature, softmax, the top_p nucleus (the
 *      smallest set of most probable candidates, ties broken by lower id,
 *      whose probability sums to >= top_p), and a draw with xoshiro256**
 *      seeded from `seed` (gen_prng_seed); without a seed, from
 *      gen_seed(prompt). Temperature below GEN_LM_GREEDY_BELOW is greedy:
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
 * one. The output is not canonical (unlike gen_next): its text may
 * tokenize to other ids (byte tokens, merges), so count the ids.
 */
#ifndef GEN_LM_H
#define GEN_LM_H

#include <stddef.h>
#include <stdint.h>

/* Sampling defaults, as OpenAI's: temperature 1, top_p 1. */
#define GEN_TEMPERATURE_DEFAULT 1.0
#define GEN_TEMPERATURE_MAX 2.0
#define GEN_TOP_P_DEFAULT 1.0

/* A temperature below this is greedy decoding (as vLLM's 1e-5). */
#define GEN_LM_GREEDY_BELOW 1e-5

/*
 * Sampling parameters. Ranges are checked by the HTTP layer; out of
 * range here, a temperature < 0 (or NaN) is greedy, over 2 is 2, a top_p
 * <= 0 (or NaN) keeps only the most probable candidate, over 1 is 1.
 */
struct gen_params {
	double temperature;     /* 0..GEN_TEMPERATURE_MAX; 0: greedy */
	double top_p;           /* (0, 1]; 1: no nucleus cut */
	uint64_t seed;          /* the sampler's seed, used if has_seed */
	int has_seed;           /* 0: the seed is gen_seed(prompt) */
	int ignore_eos;         /* nonzero: never produce GEN_EOS_ID */
};

/* Fills *p with the defaults: temperature 1.0, top_p 1.0, no seed (the
 * prompt's), ignore_eos off. */
void gen_params_defaults(struct gen_params *p);

/*
 * One generation. The caller provides the struct; gen_lm_init fills it
 * and allocates its scratch (aborts on out of memory), gen_lm_free
 * releases that. The fields are gen_lm.c's. One gen_lm is used by one
 * thread at a time; different ones are independent.
 */
struct gen_lm {
	uint64_t s[4];          /* xoshiro256** state of the sampler */
	uint64_t prompt_hash;   /* gen_seed(prompt): in every context hash */
	struct gen_params params;       /* copied by gen_lm_init */
	uint32_t hist[3];       /* last ids, newest first; GEN_EOS_ID: none */
	uint32_t produced;      /* ids returned by gen_lm_next so far */
	uint32_t words;         /* words since the last sentence break */
	uint8_t ended;          /* GEN_EOS_ID was returned */
	uint8_t utf8_lead;      /* lead byte of a character being spelt in
				 * byte tokens, 0 if none */
	uint8_t utf8_done;      /* continuation bytes of it so far */
	uint8_t utf8_need;      /* continuation bytes it still needs */
	double *logit;          /* scratch: gen_lm_ncand() logits */
	double *prob;           /* scratch: as many weights */
	struct gen_lm_cand *order;      /* scratch: 2 x as many, top_p */
};

/*
 * Starts a generation for the prompt (ptr, len; any bytes) with the
 * parameters *p (copied; NULL: the defaults). Cannot fail (aborts on out
 * of memory). Call gen_lm_free when done.
 */
void gen_lm_init(struct gen_lm *lm, const char *prompt, size_t len,
    const struct gen_params *p);

/*
 * The next id: a text token, a byte token (0..255) or GEN_EOS_ID (never
 * with ignore_eos). After GEN_EOS_ID the generation is over and later
 * calls return GEN_EOS_ID again. Cannot fail.
 */
uint32_t gen_lm_next(struct gen_lm *lm);

/*
 * Number of candidates of a step: gen_vocab_size() + 1. Index k <
 * gen_vocab_size() is id k; the last index is GEN_EOS_ID.
 */
size_t gen_lm_ncand(void);

/*
 * The model's logits for the next step, before ignore_eos, temperature
 * and top_p: gen_lm_ncand() values indexed as above, -INFINITY for a
 * masked candidate. Borrowed: valid until the next gen_lm_next,
 * gen_lm_logits or gen_lm_free on lm. Does not advance the generation.
 */
const double *gen_lm_logits(struct gen_lm *lm);

/* Releases the scratch of lm (accepts NULL and a zeroed struct). */
void gen_lm_free(struct gen_lm *lm);

#endif /* GEN_LM_H */
