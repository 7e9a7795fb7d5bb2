/*
 * sim/vocab.h - the simulator's vocabulary and prompt tokenizer. No I/O,
 * no clocks, no HTTP.
 *
 * Vocabulary layout: ids 0..255 are the byte-fallback tokens (one raw byte
 * each, used by the tokenizer; the lab generator never draws them, the
 * language model of sim/lm.h does, to spell characters); ids from
 * SIM_FIRST_TEXT_ID up are text tokens (valid UTF-8, 1..SIM_TOKEN_MAX_BYTES
 * bytes); SIM_EOS_ID ends a sequence. The text tokens live in
 * sim/vocab_table.c; their order and weights are part of the determinism
 * contract (every generated stream depends on them).
 */
#ifndef TS_SIM_VOCAB_H
#define TS_SIM_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

#define SIM_FIRST_TEXT_ID 256u
#define SIM_TOKEN_MAX_BYTES 32u

/* Most text tokens the static tables have room for. */
#define SIM_VOCAB_MAX_TEXT 4096u

/*
 * The end-of-sequence token of the language model (sim/lm.h): a special
 * id above every id a text token can have, so appending text tokens keeps
 * it (real tokenizers also number their special tokens apart). Its text is
 * empty, so it is never shown. The lab generator and sim_tokenize never
 * produce it, and sim_vocab_size does not count it.
 */
#define SIM_EOS_ID (SIM_FIRST_TEXT_ID + SIM_VOCAB_MAX_TEXT)

/* Number of entries in the vocabulary, byte tokens included (> 1256). */
uint32_t sim_vocab_size(void);

/*
 * Text of token `id`: a borrowed pointer into static storage (not
 * NUL-terminated for byte tokens; always valid for the program's life) and
 * its length in bytes in *len (may be NULL). SIM_EOS_ID gives "" and 0.
 * Returns NULL (and 0) for an id out of range.
 */
const char *sim_token_text(uint32_t id, size_t *len);

/*
 * Prompt tokenizer: greedy longest match over the text tokens, left to
 * right; a byte that starts no text token becomes one byte-fallback token.
 * Writes at most `cap` ids to `ids` (may be NULL when cap is 0) and returns
 * the total number of tokens in the prompt (which may exceed cap).
 * `prompt` is (ptr, len); NUL bytes are ordinary bytes. O(len) steps of at
 * most SIM_TOKEN_MAX_BYTES trie nodes.
 */
size_t sim_tokenize(const char *prompt, size_t len, uint32_t *ids,
    size_t cap);

struct release;
struct release_chunk;

/*
 * release_bytes (text/release.h) of the text of token `id`
 * (sim_token_text): the simulator's detokenizer in one call. Returns
 * TS_EINVAL (nothing released, *out empty) for an id with no text or
 * after release_finish.
 */
enum ts_err sim_release_token(struct release *r, uint32_t id,
    struct release_chunk *out, int *stop);

#endif /* TS_SIM_VOCAB_H */
