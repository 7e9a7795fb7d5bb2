/*
 * model/tok_int.h - the tokenizer's insides, shared by tokenizer.c (the
 * table, tokenizer.bin, decoding, the merge loop), tok_vocab.c (building
 * from a vocabulary), tok_encode.c (encoding the model families) and
 * tok_json.c (tokenizer.json). Not for use outside src/model/tok*.c.
 */
#ifndef TS_MODEL_TOK_INT_H
#define TS_MODEL_TOK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "model/tokenizer.h"

#define TOK_MAX_REGEX 4      /* regexes in a pre-tokenizer chain */

/* How an SPM text segment gets its leading U+2581. */
enum tok_prepend { TOK_PREPEND_NONE, TOK_PREPEND_ALWAYS, TOK_PREPEND_FIRST };

struct tok_added {
	uint32_t id;
	uint32_t off, len;           /* its text: t->blob + off */
	uint8_t first;               /* its first byte */
	uint8_t lstrip, rstrip;
};

struct tokenizer {
	uint32_t vocab_size;
	uint32_t max_token_length;
	float *scores;               /* [vocab] (0 for BPE) */
	uint32_t *off, *len;         /* raw piece of id: blob + off, len */
	char *blob;
	uint32_t *doff, *dlen;       /* decoded text of id: dblob + doff */
	char *dblob;
	uint32_t *slots;             /* hash of pieces: id + 1, 0 = empty */
	uint32_t mask;               /* slots - 1 (a power of two) */
	uint32_t space_id;           /* tokenizer.bin's dummy prefix */

	int legacy;                  /* tokenizer.bin: run.c's encode */
	int kind;                    /* TOKENIZER_SPM or TOKENIZER_BPE */
	uint8_t *type;               /* [vocab] TOKENIZER_TYPE_* */
	uint32_t bos, eos, unk, pad;
	int add_bos, add_eos;
	int by_rank;                 /* merges from the pair table */
	int ignore_merges;           /* BPE: a word in the vocab is a token */
	int prepend;                 /* SPM: enum tok_prepend */
	int prepend_meta;            /* SPM: not when it starts with one */
	int split_ws;                /* SPM: words start at each U+2581 */
	int fuse_unk;                /* SPM: unknown characters in a row
	                              * are one unknown token */
	uint32_t byte_id[256];       /* SPM: <0xHH>; BPE: byte's character */
	/* merges by rank: (left, right) -> rank, result */
	uint64_t *pair_key;          /* UINT64_MAX = empty */
	uint32_t *pair_rank, *pair_id;
	uint32_t pair_mask;
	/* BPE pre-tokenizer: regexes applied in turn (pcre2_code *) */
	void *re[TOK_MAX_REGEX];
	unsigned nre;
	/* tokens split out of the text, by first byte, longest first */
	struct tok_added *added;
	uint32_t nadded;
	uint32_t added_at[257];      /* added[added_at[b] .. added_at[b+1]) */
};

/* What a vocabulary does not say (tokenizer.json) or says by name. */
struct tok_opts {
	const char *regex[TOK_MAX_REGEX];  /* BPE pre-tokenizer chain */
	unsigned nregex;
	int ignore_merges;
	int by_rank;                 /* SPM: merges (rank order), no scores */
	int prepend;                 /* SPM: enum tok_prepend */
	int prepend_meta;            /* Metaspace: not before a U+2581 */
	int split_ws;
	int fuse_unk;
	const uint8_t *added;        /* [n]: 1 = split out of the text;
	                              * NULL: types unknown/control/user */
	const uint8_t *strip;        /* [n]: 1 lstrip, 2 rstrip; or NULL */
	/* merges given as pairs: v->merge[i] is the left piece, these
	 * the right ones; NULL: v->merge[i] is "a b" */
	const char *const *merge_right;
	const size_t *merge_right_len;
};

/* Builds the tokenizer of v with o (tok_vocab.c); as tokenizer_from_vocab. */
enum ts_err tok_build(struct tokenizer **out, const struct tokenizer_vocab *v,
    const struct tok_opts *o, char *err, size_t errlen);

/* The pre-tokenizer regexes of a GGUF tokenizer.ggml.pre name, and
 * whether it ignores merges; 0 when the name is unknown. */
int tok_pre_regexes(const char *name, struct tok_opts *o);

/* GPT-2's pre-tokenizer regex (ByteLevel use_regex). */
extern const char tok_gpt2_regex[];

/* The lowest id whose piece is (s, n), or -1. */
int64_t tok_lookup(const struct tokenizer *t, const char *s, size_t n);
/* Adds id to the piece hash unless its piece is there already. */
void tok_hash_add(struct tokenizer *t, uint32_t id);
uint64_t tok_hash_bytes(const void *p, size_t n);

/* The byte a piece "<0xHH>" stands for, or -1. */
int tok_byte_piece(const char *s, size_t n);

/* The merge table entry of (l, r): its rank and result, or 0. */
int tok_pair_find(const struct tokenizer *t, uint32_t l, uint32_t r,
    uint32_t *rank, uint32_t *id);

/* A symbol of the text being merged: a token in a linked list. */
struct tok_sym {
	uint32_t id;
	int32_t prev, next;          /* -1 at the ends */
	uint32_t ver;                /* bumped when id changes */
	int alive;
};

/*
 * Merges the symbols s[0..ns) (linked in order by the caller) as BPE:
 * the best adjacent merge first (by_rank: the lowest merge rank; else the
 * highest score of a normal or user-defined token that is their
 * concatenation), the leftmost on ties. heap holds 3 * ns + 3 entries,
 * buf 2 * max_token_length bytes. O(ns log ns).
 */
struct tok_cand;
void tok_merge(const struct tokenizer *t, struct tok_sym *s, size_t ns,
    struct tok_cand *heap, char *buf);
size_t tok_cand_size(void);

/* The model families' encode (tok_encode.c); as tokenizer_encode. */
enum ts_err tok_encode_model(const struct tokenizer *t, const char *text,
    size_t len, int bos, int eos, uint32_t **ids, size_t *n);

#endif /* TS_MODEL_TOK_INT_H */
