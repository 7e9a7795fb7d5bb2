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

#include "common/ts.h"

#include "model/model_load.h"

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

#endif /* TS_MODEL_MODEL_FILE_H */
