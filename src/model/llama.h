/*
 * model/llama.h - the llama backend: a Llama-style model behind the
 * engine's struct engine_backend (backend/backend.h): a GGUF file, a
 * Hugging Face folder or a llama2.c checkpoint (model_file.h), its own
 * tokenizer (tokenizer.h), a KV cache per sequence, batched decode
 * steps. It serves one model, named by its file (model_file.h).
 *
 * A sequence's token stream: the prompt is encoded by the model's
 * tokenizer (BOS first when the model adds one and the text does not
 * start with it; special-token text is the special token) and
 * prefilled by seq_start; token k of the stream
 * is sampled from the logits after the prompt and tokens 0..k-1. So
 *   - seq_start(prompt, skip) runs the prefill, then samples and feeds
 *     the first `skip` tokens (a resumed stream recomputes what was sent;
 *     with the same options it gets the same tokens), and keeps the
 *     logits of token `skip`;
 *   - step() gives such a sequence the token sampled from those logits
 *     without computing; every later step() runs one decode position for
 *     it (feeds its previous token, samples from the new logits). All
 *     sequences of a step that need a decode position share one forward
 *     pass (up to max_batch rows; bigger batches take several).
 *   - Context: a sequence holds `context` positions (prompt + fed
 *     tokens). When its cache is full, step() gives it the model's
 *     first EOS id from then on, without computing, and does not fail
 *     the batch.
 *     A prompt of more than `context` tokens (BOS included) fails
 *     seq_start with TS_ELIMIT.
 * The model's EOS list (model_file.h: generation_config.json's, GGUF's
 * eos/eot/eom; for a llama2.c model EOS 2 and BOS 1, which its "stories"
 * models end a text with) is the backend's eos_ids: the engine decides
 * what ends a stream; the backend keeps going if asked. Sampling: the
 * request's temperature, top_p and top_k, else the model's defaults
 * (model_file.h), else OpenAI's (backend.h).
 *
 * Threads and cost: seq_start and step compute (milliseconds to seconds,
 * growing with the model, the prompt and the batch) on the caller's
 * thread plus the backend's pool of `threads` - 1 workers. The calls
 * that take impl (seq_start, step, seq_free) must not overlap (the
 * engine makes them one at a time); token_text only reads and may be
 * called from any thread at any time.
 */
#ifndef TS_MODEL_LLAMA_H
#define TS_MODEL_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/ts.h"
#include "backend/backend.h"

struct model_config;

#define MODEL_DEFAULT_MAX_BATCH 64u

struct model_options {
	uint32_t threads;       /* compute threads, 0 = online CPUs */
	uint32_t max_batch;     /* rows per forward pass (prefill chunk and
				 * decode batch), >= 1; default 64 */
	uint32_t context;       /* positions per sequence, 0 = the
				 * model's context length (a llama2.c
				 * checkpoint's seq_len), at most
				 * MODEL_FILE_DEFAULT_CONTEXT for the
				 * other formats */
};

/* The defaults above. */
void model_options_defaults(struct model_options *o);

/*
 * Opens the model at `path` (model_file_open: a GGUF file, a Hugging
 * Face folder, or a llama2.c checkpoint with `tokenizer`, else NULL),
 * makes the compute threads, and fills *out (impl and the operations).
 * Returns TS_OK, or TS_ESYS / TS_EFORMAT / TS_EINVAL (a bad option) with
 * err naming the file and the problem. Close with llama_backend_close.
 */
enum ts_err llama_backend_open(struct engine_backend *out,
    const char *path, const char *tokenizer,
    const struct model_options *o, char *err, size_t errlen);

/* The model's files (its chat template, EOS list, defaults), borrowed
 * for the backend's life. */
const struct model_file *llama_backend_file(const struct engine_backend *b);

/*
 * What /v1/models shows of the model (a new JSON object): "format",
 * "weights" (types), "kernels", "context_length" (the model's),
 * "eos_token_ids", "add_bos_token", "generation_defaults" (the
 * sampling fields the model sets).
 */
json_t *llama_backend_meta(const struct engine_backend *b);

/* Frees what llama_backend_open made; every sequence must have been
 * freed. Accepts a zeroed or closed backend. */
void llama_backend_close(struct engine_backend *b);

/* The checkpoint's config, borrowed for the backend's life. */
const struct model_config *llama_backend_config(
    const struct engine_backend *b);

/*
 * Text of `id` following `prev` (tokenizer_decode): after BOS a leading
 * space is dropped, which token_text (no context) cannot do; it matters
 * for the first token after an empty prompt. Borrowed for the backend's
 * life.
 */
const char *llama_backend_decode(const struct engine_backend *b,
    uint32_t prev, uint32_t id, size_t *len);

/* For tests: the logits [vocab] a started sequence will sample its next
 * token from, or NULL once that token was taken by step(). */
const float *llama_backend_seq_logits(const void *seq);

#endif /* TS_MODEL_LLAMA_H */
