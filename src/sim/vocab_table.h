/*
 * sim/vocab_table.h - internal to src/sim/: the text-token table
 * (vocab_table.c) and the tokenizer's trie lookups (vocab.c) that the lab
 * generator and the language model build on. Not for other layers.
 */
#ifndef TS_SIM_VOCAB_TABLE_H
#define TS_SIM_VOCAB_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/vocab.h"

/*
 * Entry i of sim_vocab_text is token id SIM_FIRST_TEXT_ID + i. The kind
 * says in which part of a sentence a sampler may draw it; the weight is
 * relative to the other tokens it is drawn with (0: the tokenizer knows
 * it, the samplers never draw it).
 */
enum sim_kind {
	SIM_K_WORD,     /* a word with its leading space: " model" */
	SIM_K_PIECE,    /* glues onto the previous token: "ing", "the" */
	SIM_K_PUNCT,    /* punctuation inside a sentence: ",", " (" */
	SIM_K_NUM,      /* digits and numbers: "7", " 2024" */
	SIM_K_STRESS,   /* quote, backslash, tab, non-ASCII, " data:" */
	SIM_K_NL,       /* newlines: "\n", "\n\n" */
	SIM_K_END,      /* sentence ends: ".", "?" */
	SIM_K_START,    /* sentence start at the beginning of a line: "The" */
	SIM_K_SSTART    /* sentence start after a sentence end: " The" */
};

struct sim_vocab_entry {
	const char *text;       /* len bytes of valid UTF-8 */
	uint8_t len;            /* 1..SIM_TOKEN_MAX_BYTES */
	uint8_t kind;           /* enum sim_kind */
	uint16_t weight;        /* sampling weight within its context */
};

extern const unsigned char sim_vocab_bytes[256];  /* byte b is b */
extern const struct sim_vocab_entry sim_vocab_text[];
extern const uint32_t sim_vocab_ntext;  /* entries in sim_vocab_text */

/*
 * The longest text token that starts p[0..len), len >= 1, found by walking
 * the trie (at most SIM_TOKEN_MAX_BYTES steps). Returns its id and its
 * length in *tlen, or the byte token p[0] and 1 if no text token matches.
 */
uint32_t sim_vocab_match(const unsigned char *p, size_t len, size_t *tlen);

/* Whether text token `id` is a prefix of a longer one (so a greedy match
 * may run past it). */
int sim_vocab_is_prefix(uint32_t id);

#endif /* TS_SIM_VOCAB_TABLE_H */
