/*
 * model/model_export.h - writing a llama2.c model (a checkpoint and its
 * tokenizer.bin, as model_synth.h makes them) as the files people hold:
 * a GGUF file (any weight type the forward pass computes) or a Hugging
 * Face folder (F32, F16 or BF16 safetensors, tokenizer.json,
 * tokenizer_config.json, generation_config.json). For
 * tokstream-mkmodel, the tests and the benchmarks: the same weights in
 * every format, so their logits can be compared.
 *
 * The tokenizer: tokenizer.bin's pieces with its spaces written as
 * SentencePiece's U+2581, as GGUF "llama" (tokens, scores, token types:
 * <unk> unknown, <s> and </s> control, <0xHH> byte) and as a
 * tokenizer.json of Llama 2's kind (BPE with byte fallback, the
 * normalizer's Prepend and Replace, merges ranked by the score of the
 * piece they make, as transformers' SentencePieceExtractor builds
 * them). BOS 1, EOS 2, BOS added.
 */
#ifndef TS_MODEL_MODEL_EXPORT_H
#define TS_MODEL_MODEL_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

struct model;

/* TinyLlama-1.1B-Chat's template (Zephyr's markers, </s> ends a turn):
 * tokenizer_config.json of TinyLlama/TinyLlama-1.1B-Chat-v1.0. It needs
 * no special tokens beyond </s>, so a synthetic vocabulary carries it. */
#define MODEL_EXPORT_TEMPLATE_TINYLLAMA \
	"{% for message in messages %}\n" \
	"{% if message['role'] == 'user' %}\n" \
	"{{ '<|user|>\\n' + message['content'] + eos_token }}\n" \
	"{% elif message['role'] == 'system' %}\n" \
	"{{ '<|system|>\\n' + message['content'] + eos_token }}\n" \
	"{% elif message['role'] == 'assistant' %}\n" \
	"{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n" \
	"{% endif %}\n" \
	"{% if loop.last and add_generation_prompt %}\n" \
	"{{ '<|assistant|>' }}\n" \
	"{% endif %}\n" \
	"{% endfor %}"

struct model_export {
	uint32_t type;             /* the matrices' type (model/dtype.h):
				    * GGUF any quant.h supports or F32; HF
				    * F32, F16, BF16 */
	const char *name;          /* GGUF general.name; NULL: none */
	const char *chat_template; /* NULL: none written */
	uint64_t max_shard_bytes;  /* HF: 0 one file, else shards */
	unsigned gen_has;          /* ENGINE_GIVEN_* of the defaults */
	double temperature;
	double top_p;
	uint32_t top_k;
	/* A byte-level BPE tokenizer.json to use instead of tokenizer.bin
	 * (NULL: tokenizer.bin's vocabulary): its vocabulary and merges
	 * become GGUF "gpt2" with tokenizer.ggml.pre `pre` (NULL:
	 * "llama-bpe"), the folder gets the file itself. The model's
	 * vocab_size must be its token count (model_export_json_tokens). */
	const char *tokenizer_json;
	const char *pre;
	const char *bos;           /* BOS token text (NULL: none) */
	const char *const *eos;    /* EOS token texts, the first the EOS,
				    * the second GGUF's eot, the third its
				    * eom; all in generation_config.json */
	uint32_t n_eos;            /* 0..3 */
};

/* The tokens of the tokenizer.json at path (its largest id + 1), or 0
 * with err. */
uint32_t model_export_json_tokens(const char *path, char *err,
    size_t errlen);

/*
 * Writes m (F32 weights, as model_open binds a checkpoint) and the
 * tokenizer.bin at tokenizer_path as a GGUF file at path. Returns TS_OK,
 * TS_EINVAL (a type the forward pass does not compute, or rows not a
 * multiple of its block: "q8_0 needs widths that are multiples of 32;
 * hidden_dim is 172"), TS_ESYS / TS_EFORMAT with err.
 */
enum ts_err model_export_gguf(const struct model *m,
    const char *tokenizer_path, const struct model_export *x,
    const char *path, char *err, size_t errlen);

/* The same as a Hugging Face folder at dir (created). */
enum ts_err model_export_hf(const struct model *m,
    const char *tokenizer_path, const struct model_export *x,
    const char *dir, char *err, size_t errlen);

#endif /* TS_MODEL_MODEL_EXPORT_H */
