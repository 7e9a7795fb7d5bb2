/*
 * model/tokenizer.h - the llama2.c tokenizer: the sentencepiece (BPE with byte
 * fallback) vocabulary of a Llama-2 model, as exported to tokenizer.bin
 * by llama2.c's tokenizer.py, and run.c's encode() and decode().
 *
 * File format (host byte order, little-endian in practice):
 *   int32 max_token_length
 *   then per token id 0..vocab_size-1:
 *     float32 score, int32 len, len bytes (the piece; no terminator)
 * The vocabulary size is not stored: it is the checkpoint's. Ids 0, 1, 2
 * are <unk>, <s> (BOS), </s> (EOS); ids 3..258 are the byte tokens
 * "<0x00>".."<0xFF>" (sentencepiece byte_fallback); a space is a plain
 * " " (the export replaced sentencepiece's U+2581).
 */
#ifndef TS_MODEL_TOKENIZER_H
#define TS_MODEL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

/* Limits of a tokenizer file: the longest piece, and the vocabulary. */
#define TOKENIZER_MAX_TOKEN_LENGTH 4096u
#define TOKENIZER_MAX_VOCAB 1048576u
/* Specials plus the 256 byte tokens. */
#define TOKENIZER_MIN_VOCAB 259u
#define TOKENIZER_BYTE0 3u          /* id of "<0x00>" */

struct tokenizer;

/*
 * Parses a tokenizer image (data, len) (copied) of exactly vocab_size
 * tokens. Returns TS_OK with *out (free with tokenizer_free) or
 * TS_EFORMAT with the problem in err: truncated (where), a length <= 0
 * or over max_token_length, a score that is not finite, a byte token not
 * where byte fallback needs it, or a count that differs from vocab_size
 * ("tokenizer has 500 tokens but the checkpoint's vocab_size is 512").
 */
enum ts_err tokenizer_load(struct tokenizer **out, const void *data,
    size_t len, uint32_t vocab_size, char *err, size_t errlen);

/*
 * Reads the file `path` and parses it as above; err starts with the
 * path. TS_ESYS when it cannot be read, TS_ELIMIT when over 1 GiB.
 */
enum ts_err tokenizer_open(struct tokenizer **out, const char *path,
    uint32_t vocab_size, char *err, size_t errlen);

void tokenizer_free(struct tokenizer *t);

uint32_t tokenizer_vocab_size(const struct tokenizer *t);
uint32_t tokenizer_max_token_length(const struct tokenizer *t);

/*
 * Encodes (text, len) (any bytes, NULs included) as run.c encode():
 * optional BOS (id 1); a dummy-prefix " " token when len > 0
 * (sentencepiece add_dummy_prefix); each UTF-8 character as its piece,
 * or as its bytes' byte tokens when it has none; then BPE: repeatedly
 * merge the adjacent pair whose concatenated piece has the best score
 * (the leftmost on ties); optional EOS (id 2). O(len log len).
 * Returns TS_OK with *ids[*n] (caller frees), at most len + 3 ids.
 */
enum ts_err tokenizer_encode(const struct tokenizer *t, const char *text,
    size_t len, int bos, int eos, uint32_t **ids, size_t *n);

/* The raw piece of `id` as stored ("<0x0A>" for a byte token), borrowed
 * for the tokenizer's life; NULL with *len 0 when id is out of range. */
const char *tokenizer_piece(const struct tokenizer *t, uint32_t id,
    size_t *len);

/*
 * The text of `id` as run.c decode() renders it after prev_id: a byte
 * token "<0xHH>" is that byte; after BOS (prev_id 1) a leading space is
 * dropped (sentencepiece); the specials <unk>, <s>, </s> are "" (a
 * stream's text, not markup). Borrowed for the tokenizer's life; "" for
 * an id out of range. Pass prev_id UINT32_MAX when there is no previous
 * token.
 */
const char *tokenizer_decode(const struct tokenizer *t, uint32_t prev_id,
    uint32_t id, size_t *len);

#endif /* TS_MODEL_TOKENIZER_H */
