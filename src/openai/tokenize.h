/*
 * openai/tokenize.h - the bodies of vLLM's tokenizer endpoints, POST
 * /tokenize and POST /detokenize, which vLLM's OpenAI-compatible server
 * adds beside /v1. Their types are vLLM's TokenizeCompletionRequest,
 * TokenizeChatRequest and DetokenizeRequest
 * (vllm/entrypoints/serve/tokenize/protocol.py; vllm/entrypoints/openai/
 * protocol.py before the move) and the handling is
 * vllm/entrypoints/serve/tokenize/serving.py's (ServingTokenization
 * create_tokenize, create_detokenize). The answers are encode.h's
 * openai_encode_tokenize and openai_encode_detokenize. Errors are the
 * OpenAI shape of the /v1 endpoints. No I/O.
 */
#ifndef TS_OPENAI_TOKENIZE_H
#define TS_OPENAI_TOKENIZE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "openai/parse.h"
#include "proto/http_error.h"

/* The most ids a /detokenize body may list (a 1 MiB body holds at most
 * half a million). */
#define OPENAI_MAX_DETOKENIZE_IDS (1u << 19)

/*
 * A parsed POST /tokenize body. `req` holds the prompt (kind
 * OPENAI_COMPLETIONS: TokenizeCompletionRequest) or the messages and tools
 * (OPENAI_CHAT: TokenizeChatRequest), parsed as /v1/completions and
 * /v1/chat/completions parse them, so the text tokenized is the text
 * those endpoints count as usage.prompt_tokens. Owns req (free with
 * openai_tokenize_free).
 */
struct openai_tokenize {
	struct openai_request req;
	int add_special_tokens;      /* default 1 for a prompt, 0 for chat */
	int add_generation_prompt;   /* chat; default 1 */
	int continue_final_message;  /* chat; default 0 */
	int return_token_strs;       /* default 0 */
};

/*
 * Parses the JSON body (body, len) of POST /tokenize. "model" is
 * optional, as vLLM's (null or absent: the served model); given, it must
 * be one of models[0..n_models) or the answer is 404 model_not_found.
 * "prompt" (a string) makes it a completion request, else "messages"
 * (required then) a chat request, with "tools"; the rest of each body is
 * read as /v1 reads it (openai_parse_request), so a field /v1 refuses is
 * refused here too. Booleans add_special_tokens, return_token_strs, and
 * for chat add_generation_prompt and continue_final_message (not both
 * true: vLLM's check_generation_prompt). A chat_template other than null
 * is refused (400: tokstream has one template, and vLLM refuses one from
 * a request unless --trust-request-chat-template); chat_template_kwargs,
 * mm_processor_kwargs and media_io_kwargs are ignored. Returns TS_OK with
 * *t filled, else TS_EINVAL or TS_ELIMIT with *err (and *t owns nothing).
 */
enum ts_err openai_parse_tokenize(const char *body, size_t len,
    const char *const *models, size_t n_models, struct openai_tokenize *t,
    struct http_error *err);

void openai_tokenize_free(struct openai_tokenize *t);

/* Appends the text POST /tokenize encodes: the prompt, or the messages
 * rendered with the chat template (openai_chat_prompt_opts). TS_ELIMIT
 * when b is full (nothing appended). */
enum ts_err openai_tokenize_text(const struct openai_tokenize *t,
    struct ts_buf *b);

/*
 * Parses the JSON body of POST /detokenize, vLLM's DetokenizeRequest:
 * "model" as for /tokenize, "tokens" (required) an array of at most
 * OPENAI_MAX_DETOKENIZE_IDS integers >= 0. An id above UINT32_MAX is out
 * of every vocabulary: 400 (openai_token_out_of_vocab). Returns TS_OK
 * with *ids (caller frees; NULL when *n is 0) and *n, else TS_EINVAL or
 * TS_ELIMIT with *err.
 */
enum ts_err openai_parse_detokenize(const char *body, size_t len,
    const char *const *models, size_t n_models, uint32_t **ids, size_t *n,
    struct http_error *err);

/* The 400 for tokens[index] = id, which the model's vocabulary (ids
 * 0..vocab - 1 and its special ids) does not have. */
void openai_token_out_of_vocab(struct http_error *err, size_t index,
    uint64_t id, uint64_t vocab);

#endif /* TS_OPENAI_TOKENIZE_H */
