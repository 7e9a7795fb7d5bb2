/*
 * gen.h - the deterministic token generator: vocabulary, prompt tokenizer,
 * PRNG and sampler. No I/O, no clocks, no HTTP.
 *
 * Determinism contract: for the same prompt bytes, gen_next() returns the
 * same token ids in the same order in any process, on any run, on any
 * little- or big-endian machine (integer arithmetic only, no floats).
 * Prefix property: the first k ids of a stream do not depend on how many
 * more are asked for, so a stream cut short is a prefix of the full answer.
 * Canonical output: the concatenated text of a stream, fed to
 * gen_tokenize(), gives back the same ids (the sampler redraws a token that
 * greedy matching would merge with the text before it), so a client can
 * count a stream's tokens from its text.
 *
 * Algorithms: the seed is FNV-1a 64 of the prompt bytes, finalised with the
 * SplitMix64 mixer; the PRNG is xoshiro256** (Blackman and Vigna, 2018)
 * whose state is filled from the seed by SplitMix64; tokens are drawn from
 * an integer weight table (Zipf-like over words, with a fixed share for the
 * "stress" tokens) by Lemire's nearly-divisionless bounded draw.
 */
#ifndef GEN_H
#define GEN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Vocabulary layout: ids 0..255 are the byte-fallback tokens (one raw byte
 * each, used by the tokenizer; gen_next never generates them, the language
 * model of gen_lm.h does, to spell characters); ids from
 * GEN_FIRST_TEXT_ID up are text tokens (valid UTF-8, 1..32 bytes);
 * GEN_EOS_ID (below) ends a sequence.
 */
#define GEN_FIRST_TEXT_ID 256u
#define GEN_TOKEN_MAX_BYTES 32u

/* Number of entries in the vocabulary, byte tokens included (> 1256). */
uint32_t gen_vocab_size(void);

/*
 * The end-of-sequence token of the language model (gen_lm.h): a special id
 * above every id a text token can have, so appending text tokens keeps it
 * (real tokenizers also number their special tokens apart). Its text is
 * empty, so it is never shown. gen_next and gen_tokenize never produce it,
 * and gen_vocab_size does not count it.
 */
#define GEN_EOS_ID (GEN_FIRST_TEXT_ID + GEN_VOCAB_MAX_TEXT)

/*
 * Text of token `id`: a borrowed pointer into static storage (not
 * NUL-terminated for byte tokens; always valid for the program's life) and
 * its length in bytes in *len. GEN_EOS_ID gives "" and 0. Returns NULL
 * (and 0) for an id out of range.
 */
const char *gen_token_text(uint32_t id, size_t *len);

/*
 * Prompt tokenizer: greedy longest match over the text tokens, left to
 * right; a byte that starts no text token becomes one byte-fallback token.
 * Writes at most `cap` ids to `ids` (may be NULL when cap is 0) and returns
 * the total number of tokens in the prompt (which may exceed cap).
 * `prompt` is (ptr, len); NUL bytes are ordinary bytes.
 */
size_t gen_tokenize(const char *prompt, size_t len, uint32_t *ids,
    size_t cap);

/* The 64-bit seed of a prompt: SplitMix64-finalised FNV-1a 64. */
uint64_t gen_seed(const char *prompt, size_t len);

/*
 * One generation: PRNG state plus what the sampler needs of the context.
 * The caller provides the storage (gen_init fills it; nothing to free);
 * the fields are gen.c's.
 */
struct gen_stream {
	uint64_t s[4];          /* xoshiro256** state */
	/* The end of the text so far, for the canonical-output check: */
	uint64_t tail_starts;   /* bit i set: a token starts at tail[i] */
	uint64_t tail_open;     /* ... and is a prefix of a longer token */
	uint32_t produced;      /* tokens returned by gen_next so far */
	uint32_t last;          /* last token id, 0 before the first */
	uint32_t words;         /* words since the last sentence break */
	uint8_t tail_len;       /* bytes of tail in use */
	unsigned char tail[2 * GEN_TOKEN_MAX_BYTES];
};

/* Starts a generation for the prompt (ptr, len). Cannot fail. */
void gen_init(struct gen_stream *g, const char *prompt, size_t len);

/* The next token id (always >= GEN_FIRST_TEXT_ID). Cannot fail. */
uint32_t gen_next(struct gen_stream *g);

/*
 * Internal to gen.c and gen_vocab.c: the text-token table. Entry i is token
 * id GEN_FIRST_TEXT_ID + i. The kind says in which part of a sentence the
 * sampler may draw it; the weight is relative to the other tokens it is
 * drawn with (0: the tokenizer knows it, the sampler never draws it).
 */
enum gen_kind {
	GEN_K_WORD,     /* a word with its leading space: " model" */
	GEN_K_PIECE,    /* glues onto the previous token: "ing", "the" */
	GEN_K_PUNCT,    /* punctuation inside a sentence: ",", " (" */
	GEN_K_NUM,      /* digits and numbers: "7", " 2024" */
	GEN_K_STRESS,   /* quote, backslash, tab, non-ASCII, " data:" */
	GEN_K_NL,       /* newlines: "\n", "\n\n" */
	GEN_K_END,      /* sentence ends: ".", "?" */
	GEN_K_START,    /* sentence start at the beginning of a line: "The" */
	GEN_K_SSTART    /* sentence start after a sentence end: " The" */
};

struct gen_vocab_entry {
	const char *text;       /* len bytes of valid UTF-8 */
	uint8_t len;            /* 1..GEN_TOKEN_MAX_BYTES */
	uint8_t kind;           /* enum gen_kind */
	uint16_t weight;        /* sampling weight within its context */
};

/* Most text tokens gen.c's static tables have room for. */
#define GEN_VOCAB_MAX_TEXT 4096u

extern const unsigned char gen_vocab_bytes[256];  /* byte b is b */
extern const struct gen_vocab_entry gen_vocab_text[];
extern const uint32_t gen_vocab_ntext;  /* entries in gen_vocab_text */

/*
 * Internal to gen.c and gen_lm.c: the PRNG both samplers share.
 * gen_mix64 is the SplitMix64 output mixer (a bijection on 64-bit words);
 * gen_prng_seed fills a xoshiro256** state from a 64-bit seed with four
 * SplitMix64 outputs; gen_xoshiro returns the next 64-bit output of
 * xoshiro256** 1.0 and advances the state.
 */
uint64_t gen_mix64(uint64_t z);
void gen_prng_seed(uint64_t s[4], uint64_t seed);
uint64_t gen_xoshiro(uint64_t s[4]);

#endif /* GEN_H */
