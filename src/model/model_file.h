/*
 * model/model_file.h - a model from the files people hold: a GGUF file
 * (llama.cpp, Ollama), a Hugging Face folder (config.json, safetensors),
 * or a llama2.c checkpoint with its tokenizer.bin. One call opens any of
 * them and gives what the llama backend serves: the weights bound to the
 * forward pass (model.h), the model's own tokenizer (tokenizer.h), its
 * EOS list, chat template, sampling defaults and context length.
 *
 *   GGUF   the file starts with "GGUF" (model_gguf.c): architecture
 *          "llama" only, weights F32, F16, BF16, Q8_0, Q4_0 (and what
 *          quant.h supports), mmap'd; tokenizer, template and defaults
 *          from its metadata.
 *   HF     a directory (model_hf.c): LlamaForCausalLM (hf.h), weights
 *          F32, F16, BF16 (q_proj and k_proj converted to the forward
 *          pass's interleaved RoPE layout, the rest mmap'd); tokenizer.json,
 *          tokenizer_config.json, generation_config.json.
 *   llama2.c  any other file (model.h), with `tokenizer` (tokenizer.bin)
 *          required; EOS 2 and BOS 1, no template, no defaults.
 */
#ifndef TS_MODEL_MODEL_FILE_H
#define TS_MODEL_MODEL_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"
#include "backend/backend.h"

struct model;
struct tokenizer;

/* The context a sequence gets when the caller asks for none and the
 * model allows more: a Llama 3.1 file says 131,072 positions, whose KV
 * cache would be gigabytes per sequence (--context raises it). */
#define MODEL_FILE_DEFAULT_CONTEXT 4096u

struct model_file {
	struct model *m;
	struct tokenizer *tok;
	const char *format;        /* "gguf", "hf" or "llama2.c" */
	char *name;                /* the served name: GGUF general.name,
				    * else the file's or folder's name */
	char *weight_types;        /* "q8_0 (f32 norms)", "f32": for logs */
	uint32_t eos[ENGINE_MAX_EOS]; /* the ids that end a text */
	uint32_t n_eos;
	char *chat_template;       /* the model's Jinja template, or NULL */
	char *bos_text;            /* its bos_token / eos_token ("" when */
	char *eos_text;            /* the model has none) */
	unsigned gen_has;          /* ENGINE_GIVEN_* of the defaults below */
	double temperature;        /* the model's sampling defaults */
	double top_p;
	uint32_t top_k;
	uint32_t context_length;   /* the longest the model was made for */
};

/*
 * Opens `path` (a GGUF file, a Hugging Face folder, or a llama2.c
 * checkpoint, which needs `tokenizer`; for the others tokenizer must be
 * NULL: the model's own is used). Returns TS_OK with *out (close with
 * model_file_close), or TS_ESYS / TS_EFORMAT / TS_EINVAL / TS_ELIMIT
 * with err starting with the path and naming the problem ("m.gguf:
 * architecture 'qwen2' is not supported: ...").
 */
enum ts_err model_file_open(struct model_file **out, const char *path,
    const char *tokenizer, char *err, size_t errlen);

void model_file_close(struct model_file *f);

/* The loaders model_file_open dispatches to; f is zeroed, and on error
 * whatever they set is freed by model_file_close. */
enum ts_err model_gguf_load(struct model_file *f, const char *path,
    char *err, size_t errlen);
enum ts_err model_hf_load(struct model_file *f, const char *dir,
    char *err, size_t errlen);

/*
 * Adds id to f's EOS list unless it is there, out of the vocabulary
 * (vocab) or the list is full. For the loaders.
 */
void model_file_add_eos(struct model_file *f, uint32_t id, uint32_t vocab);

/* A malloc'd copy of (s, len), NUL-terminated. */
char *model_file_strdup(const char *s, size_t len);

#endif /* TS_MODEL_MODEL_FILE_H */
