/*
 * openai/chat.h - the OpenAI endpoints' side of the chat template
 * (proto/chat.h, which every dialect shares): how a /v1/chat/completions
 * or /v1/responses request's messages and tools become the prompt text.
 * usage.prompt_tokens is the backend's count of the rendered text, and
 * the model's default seed is rng_seed_of() of it. No I/O.
 */
#ifndef TS_OPENAI_CHAT_H
#define TS_OPENAI_CHAT_H

#include <stddef.h>

#include "common/buf.h"
#include "common/ts.h"
#include "openai/parse.h"
#include "proto/chat.h"

/*
 * Appends the prompt of a chat (or Responses API) request rendered with
 * tokstream's chat template (proto/chat.h, CHAT_TEMPLATE): for each
 * message "<|ROLE|>\nCONTENT\n" (ROLE system, user or assistant), then
 * the generation prompt "<|assistant|>\n" to start the answer.
 * TS_EINVAL for a request without messages (completions); TS_ELIMIT if
 * the buffer's limit would be exceeded (nothing is appended then).
 */
enum ts_err openai_chat_prompt(const struct openai_request *req,
    struct ts_buf *b);

/*
 * openai_chat_prompt with the options of vLLM's TokenizeChatRequest
 * (vllm/entrypoints/serve/tokenize/protocol.py): gen 0 leaves out the
 * generation prompt (add_generation_prompt false), open_last 1 leaves the
 * last message open, without the newline that ends its turn
 * (continue_final_message). openai_chat_prompt is (gen 1, open_last 0).
 */
enum ts_err openai_chat_prompt_opts(const struct openai_request *req,
    int gen, int open_last, struct ts_buf *b);

#endif /* TS_OPENAI_CHAT_H */
