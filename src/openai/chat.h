/*
 * openai/chat.h - the chat template: how /v1/chat/completions turns a list
 * of messages into the prompt text the model (sim/lm.h) continues. No
 * I/O.
 *
 * Each message is its role marker on a line of its own, then its content
 * and a newline; the generation prompt (the assistant's marker) follows
 * the last message:
 *
 *   <|system|>\n{system content}\n<|user|>\n{user content}\n<|assistant|>\n
 *
 * With "tools" the request's tools array (compact JSON) comes first, as
 * "<|tools|>\n{tools}\n"; a tool's result is a "<|tool|>" message, and an
 * assistant turn of tool calls has its tool_calls array (compact JSON)
 * on a line after its content, so all of it counts as prompt tokens.
 * (Zephyr-like markers, without an end-of-turn token.) Content is copied
 * as it is: markers inside it are not escaped, and an empty content gives
 * an empty line. usage.prompt_tokens is sim_tokenize() over the rendered
 * text, and the model's default seed is rng_seed_of() of it.
 */
#ifndef TS_OPENAI_CHAT_H
#define TS_OPENAI_CHAT_H

#include <stddef.h>

#include "common/buf.h"
#include "common/ts.h"
#include "openai/parse.h"

/* The template in the Jinja form of Hugging Face's chat_template, for
 * GET /v1/models and docs/API.md "Chat template". */
#define CHAT_TEMPLATE \
	"{% if tools %}<|tools|>\n{{ tools | tojson }}\n{% endif %}" \
	"{% for message in messages %}<|{{ message.role }}|>\n" \
	"{{ message.content }}\n{% endfor %}<|assistant|>\n"

enum chat_role {
	CHAT_ROLE_SYSTEM,
	CHAT_ROLE_USER,
	CHAT_ROLE_ASSISTANT,
	CHAT_ROLE_TOOL          /* a tool's result (the OpenAI endpoints) */
};

/* One message: its role and its content (ptr, len; borrowed). */
struct chat_msg {
	enum chat_role role;
	const char *content;    /* may be NULL if len is 0 */
	size_t len;
};

/*
 * The role named (name, len): "system", "user" or "assistant", exactly
 * (case matters). Returns TS_EINVAL, leaving *role alone, for any other.
 */
enum ts_err chat_role_parse(const char *name, size_t len, enum chat_role *role);

/* The name of a role ("system", ...), NULL for a value out of range. */
const char *chat_role_name(enum chat_role role);

/*
 * Appends the rendering of msgs[0..n) and the generation prompt to out
 * (n may be 0: the generation prompt alone). Returns TS_ELIMIT if out
 * would exceed its max, TS_EINVAL for a role out of range; on error out
 * is as it was.
 */
enum ts_err chat_render(const struct chat_msg *msgs, size_t n,
    struct ts_buf *out);

/*
 * Appends the prompt of a chat (or Responses API) request rendered with
 * tokstream's chat template (openai/chat.h, CHAT_TEMPLATE): for each
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
