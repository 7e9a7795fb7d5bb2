/*
 * proto/chat.h - tokstream's chat template, every dialect's (the OpenAI
 * endpoints, Anthropic's Messages API): how a list of messages becomes
 * the prompt text the model (sim/lm.h) continues. No I/O.
 *
 * Each message is its role marker on a line of its own, then its content
 * and a newline; the generation prompt (the assistant's marker) follows
 * the last message:
 *
 *   <|system|>\n{system content}\n<|user|>\n{user content}\n<|assistant|>\n
 *
 * With tools, the request's tools (compact JSON, as its dialect lists
 * them) come first, as "<|tools|>\n{tools}\n"; a tool's result is a
 * "<|tool|>" message; each dialect renders its tool calls into the
 * assistant's content (openai/chat.h, anthropic/parse.h), so all of it
 * counts as prompt tokens. (Zephyr-like markers, without an
 * end-of-turn token.) Content is copied as it is: markers inside it are
 * not escaped, and an empty content gives an empty line.
 * usage.prompt_tokens is sim_tokenize() over the rendered text, and the
 * model's default seed is rng_seed_of() of it.
 */
#ifndef TS_PROTO_CHAT_H
#define TS_PROTO_CHAT_H

#include <stddef.h>

#include "common/buf.h"
#include "common/ts.h"

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
	CHAT_ROLE_TOOL          /* a tool's result (OpenAI's tool messages,
				 * Anthropic's tool_result turns) */
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
 * Appends "<|tools|>\n{tools}\n", the tools block that comes first when
 * a request has tools: (tools, len) is their compact JSON, as the
 * request's dialect lists them. TS_ELIMIT if out would exceed its max
 * (nothing is appended then).
 */
enum ts_err chat_render_tools(const char *tools, size_t len,
    struct ts_buf *out);

#endif /* TS_PROTO_CHAT_H */
