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
 *
 * A tokenizer from tokenizer_from_vocab or tokenizer_from_json encodes
 * as its family does (above): bos/eos add its BOS/EOS when it has them;
 * special and added tokens in the text are split out first; SPM gives at
 * most 4 * len + 6 ids, byte-level BPE at most len + 2. Safe to call from
 * several threads at once on one tokenizer. Text that is not
 * valid UTF-8 is still encoded: for byte-level BPE each invalid byte is
 * a piece of its own (the regexes see only the valid runs between); for
 * SPM an invalid byte becomes its byte token. TS_ELIMIT when a regex
 * exceeds PCRE2's match limit (a pathological text), or len is near
 * SIZE_MAX.
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
 * an id out of range. Pass prev_id UINT32_MAX (TOKENIZER_NONE) when there
 * is no previous token. For the other tokenizers: SPM turns U+2581 into
 * a space and a byte token into its byte, dropping a leading space after
 * its BOS (if it has one);
 * byte-level BPE maps each character back to its byte; control and
 * unknown tokens are "", user-defined ones their text.
 */
const char *tokenizer_decode(const struct tokenizer *t, uint32_t prev_id,
    uint32_t id, size_t *len);

/* ---- the model's own tokenizer: GGUF vocabularies, tokenizer.json ----
 *
 * Besides tokenizer.bin (above), a tokenizer can come from a GGUF file's
 * tokenizer.ggml.* metadata (tokenizer_from_vocab; names from the GGUF
 * spec, semantics after llama.cpp src/llama-vocab.cpp) or from a Hugging
 * Face tokenizer.json (tokenizer_from_json). Two families:
 *   TOKENIZER_SPM  SentencePiece BPE (GGUF "llama"; Llama 2, TinyLlama,
 *                  Mistral's tokenizer.json): spaces are U+2581 in the
 *                  pieces, a text segment gets a leading U+2581, merges
 *                  by score (GGUF) or by merge rank (tokenizer.json),
 *                  characters without a piece as <0xHH> byte tokens.
 *   TOKENIZER_BPE  byte-level BPE (GGUF "gpt2"; Llama 3, Qwen 2, SmolLM,
 *                  GPT-2): text split by the pre-tokenizer's regexes
 *                  (PCRE2, UTF + UCP), each piece's bytes mapped to
 *                  GPT-2's printable characters, merged by merge rank.
 * Both split the text on the special and added tokens first (HF's
 * split_special_tokens false: "<|eot_id|>" in the text is that token).
 */
#define TOKENIZER_SPM 1
#define TOKENIZER_BPE 2
#define TOKENIZER_NONE UINT32_MAX    /* no such token */

/* GGUF token types (tokenizer.ggml.token_type). */
#define TOKENIZER_TYPE_NORMAL 1
#define TOKENIZER_TYPE_UNKNOWN 2
#define TOKENIZER_TYPE_CONTROL 3
#define TOKENIZER_TYPE_USER_DEFINED 4
#define TOKENIZER_TYPE_UNUSED 5
#define TOKENIZER_TYPE_BYTE 6

/* Most merges a vocabulary may have (Llama 3 has 280,147). */
#define TOKENIZER_MAX_MERGES 4194304u

/*
 * A vocabulary as GGUF metadata describes it (the caller's arrays,
 * borrowed for the call):
 *   kind       TOKENIZER_SPM (tokenizer.ggml.model "llama") or
 *              TOKENIZER_BPE ("gpt2")
 *   n          tokens (tokenizer.ggml.tokens), 1..TOKENIZER_MAX_VOCAB
 *   piece[i], piece_len[i]  token i's text (UTF-8, at most
 *              TOKENIZER_MAX_TOKEN_LENGTH bytes; may be empty only for
 *              an unused token)
 *   score      tokenizer.ggml.scores (required for SPM; NULL for BPE)
 *   type       tokenizer.ggml.token_type (TOKENIZER_TYPE_*); NULL: all
 *              normal. Unknown, control and user-defined tokens are
 *              matched in the text as whole tokens; control and unknown
 *              tokens decode to "".
 *   merge[i], merge_len[i], n_merges  tokenizer.ggml.merges, "a b" in
 *              rank order (BPE; SPM ignores them)
 *   pre        tokenizer.ggml.pre (BPE): "llama-bpe", "llama3",
 *              "llama-v3" (Llama 3's regex, and a word already in the
 *              vocabulary is not merged), "gpt2"/"gpt-2", "qwen2",
 *              "smollm", and NULL or "default" (llama.cpp's DEFAULT:
 *              four regexes in turn). Any other name is refused.
 *   bos, eos, unk, pad  ids (TOKENIZER_NONE: none; pad is kept, unused)
 *   add_bos, add_eos, add_space_prefix  tokenizer.ggml.add_bos_token,
 *              add_eos_token, add_space_prefix (SPM; llama.cpp takes 1
 *              when a "llama" file lacks the key, and so should the
 *              caller)
 */
struct tokenizer_vocab {
	int kind;
	uint32_t n;
	const char *const *piece;
	const size_t *piece_len;
	const float *score;
	const int32_t *type;
	const char *const *merge;
	const size_t *merge_len;
	uint32_t n_merges;
	const char *pre;
	uint32_t bos, eos, unk, pad;
	int add_bos, add_eos, add_space_prefix;
};

/*
 * Builds a tokenizer from v (copies what it needs). TS_OK with *out, or
 * TS_EFORMAT with err naming the problem: a kind that is neither, a
 * count out of range, a piece that is not UTF-8 or too long, a score
 * that is not finite, an unknown pre-tokenizer name ("unknown
 * pre-tokenizer \"x\""), a merge that is not "a b" or names a piece not
 * in the vocabulary or whose concatenation is not in it, a byte-level
 * vocabulary without one of the 256 byte characters, bos/eos/unk/pad
 * out of range.
 */
enum ts_err tokenizer_from_vocab(struct tokenizer **out,
    const struct tokenizer_vocab *v, char *err, size_t errlen);

/*
 * Reads a Hugging Face tokenizer.json (at most 256 MiB) with the tokenizers
 * library's semantics (huggingface/tokenizers: tokenizer/mod.rs,
 * models/bpe, added_vocabulary.rs). Accepted: model "BPE" (vocab, merges
 * as "a b" or ["a", "b"], byte_fallback, ignore_merges, unk_token,
 * fuse_unk); added_tokens (split out of the raw text first, leftmost
 * then longest, "normalized" or not; lstrip and rstrip take ASCII
 * whitespace); normalizer null, Prepend("▁"), Replace(" " -> "▁") or a
 * Sequence of them; pre_tokenizer null,
 * ByteLevel (add_prefix_space false; use_regex: GPT-2's regex), Split
 * (Regex, Isolated, not inverted), Digits, Metaspace ("▁", prepend_scheme
 * always/first/never, split) or a Sequence of them; post_processor
 * TemplateProcessing (its leading special token is the BOS it adds),
 * ByteLevel, or a Sequence; decoders ByteLevel, Replace, ByteFallback,
 * Fuse, Strip, Metaspace, Sequence. Anything else is refused naming it
 * (TS_EFORMAT: "model type \"WordPiece\" is not supported"). add_bos:
 * 1 or 0 overrides the file (tokenizer_config.json's add_bos_token), -1
 * takes the post_processor's. The EOS is the template's trailing special
 * token, else the first of "</s>", "<|end_of_text|>", "<|endoftext|>"
 * that is a token. TS_ESYS when unreadable, TS_ELIMIT when too large;
 * err starts with the path.
 */
enum ts_err tokenizer_from_json(struct tokenizer **out, const char *path,
    int add_bos, char *err, size_t errlen);

/* TOKENIZER_SPM or TOKENIZER_BPE (tokenizer.bin: TOKENIZER_SPM). */
int tokenizer_kind(const struct tokenizer *t);
/* The BOS and EOS ids (tokenizer.bin: 1 and 2), TOKENIZER_NONE if none. */
uint32_t tokenizer_bos(const struct tokenizer *t);
uint32_t tokenizer_eos(const struct tokenizer *t);
/* Whether the model's prompts start with BOS (add_bos_token; 1 for
 * tokenizer.bin), and end with EOS (0 unless the file says so). */
int tokenizer_add_bos(const struct tokenizer *t);
int tokenizer_add_eos(const struct tokenizer *t);
/* The id of the token whose piece is exactly (text, len) ("<|eot_id|>"),
 * the lowest such id, or TOKENIZER_NONE. */
uint32_t tokenizer_token_id(const struct tokenizer *t, const char *text,
    size_t len);
/* The GGUF type of id (TOKENIZER_TYPE_*), 0 when out of range. */
int tokenizer_token_type(const struct tokenizer *t, uint32_t id);
/* The SentencePiece score of id (tokenizer.bin's, GGUF's
 * tokenizer.ggml.scores; 0 for byte-level BPE), 0 when out of range. */
float tokenizer_score(const struct tokenizer *t, uint32_t id);

#endif /* TS_MODEL_TOKENIZER_H */
