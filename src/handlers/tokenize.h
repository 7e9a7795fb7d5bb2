/*
 * handlers/tokenize.h - vLLM's tokenizer endpoints (tokenize.c): POST
 * /tokenize and POST /detokenize, which vLLM's OpenAI-compatible server
 * serves beside /v1 (vllm/entrypoints/serve/tokenize/api_router.py), with
 * the /v1 endpoints' API key and error shape (docs/API.md "POST
 * /tokenize, POST /detokenize").
 */
#ifndef TS_HANDLERS_TOKENIZE_H
#define TS_HANDLERS_TOKENIZE_H

struct reply;
struct server;

/* POST /tokenize: {"count","max_model_len","tokens","token_strs"} for a
 * prompt or a chat (openai/tokenize.h), with the served backend's ids:
 * count equals the usage.prompt_tokens /v1 reports for the same prompt.
 * 400 for a bad body, 404 for an unknown model, 501 for a backend
 * without token ids. */
void tokenize_answer(struct server *srv, struct reply *rp);

/* POST /detokenize: {"prompt"}, the ids' texts joined (a character cut
 * between byte tokens repaired to U+FFFD). 400 for a bad body or an id
 * the model does not have, 404 for an unknown model. */
void detokenize_answer(struct server *srv, struct reply *rp);

#endif /* TS_HANDLERS_TOKENIZE_H */
