/*
 * model/model_synth.h - synthetic models: a llama2.c checkpoint of seeded
 * random weights and a matching tokenizer.bin, for tests, benchmarks and
 * trying the server without downloading a model (tokstream-mkmodel).
 *
 * Weights: every matrix and the embedding table uniform in
 * +-1/sqrt(its input width), RMSNorm weights 1.0, the legacy freq_cis
 * tables as llama2.c's export wrote them. The output is gibberish (with
 * a shared classifier, mostly one token repeated: the embedding of the
 * last token dominates its own logit), but finite and deterministic for
 * a seed.
 *
 * Tokenizer: <unk>, <s>, </s>; the byte tokens <0x00>..<0xFF>; " " and
 * the printable ASCII characters; then the prefixes of frequent English
 * words (" the", " and", ...); then letter strings grown one letter at a
 * time, so that every piece can be reached by BPE merges. Scores
 * decrease in that order (earlier pieces merge first).
 */
#ifndef TS_MODEL_MODEL_SYNTH_H
#define TS_MODEL_MODEL_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "common/ts.h"

/* The tokenizer needs the 259 specials and bytes plus 95 characters. */
#define MODEL_SYNTH_MIN_VOCAB 354u

struct model_synth {
	struct model_config cfg;     /* head_size, kv_dim not needed */
	uint64_t seed;
};

/* dim 64, hidden 172, 2 layers, 4 heads, 2 kv heads, vocab 512,
 * seq_len 256, separate classifier (livelier text), seed 1. */
void model_synth_defaults(struct model_synth *s);

/*
 * Writes the checkpoint to `path` (created or truncated). Returns TS_OK,
 * TS_EFORMAT for a config model_config_check refuses or a vocab under
 * MODEL_SYNTH_MIN_VOCAB, TS_ESYS for an I/O error; err says which.
 */
enum ts_err model_synth_write_checkpoint(const struct model_synth *s,
    const char *path, char *err, size_t errlen);

/* Writes the tokenizer of s->cfg.vocab_size tokens to `path`. Same
 * results. */
enum ts_err model_synth_write_tokenizer(const struct model_synth *s,
    const char *path, char *err, size_t errlen);

#endif /* TS_MODEL_MODEL_SYNTH_H */
