/*
 * gen_chat.h - the chat template: how /v1/chat/completions turns a list
 * of messages into the prompt text the model (gen_lm.h) continues. No
 * I/O.
 *
 * Each message is its role marker on a line of its own, then its content
 * and a newline; the generation prompt (the assistant's marker) follows
 * the last message:
 *
 *   <|system|>\n{system content}\n<|user|>\n{user content}\n<|assistant|>\n
 *
 * (Zephyr-like markers, without an end-of-turn token.) Content is copied
 * as it is: markers inside it are not escaped, and an empty content gives
 * an empty line. usage.prompt_tokens is gen_tokenize() over the rendered
 * text, and the model's default seed is gen_seed() of it.
 */
#ifndef GEN_CHAT_H
#define GEN_CHAT_H

#include <stddef.h>

#include "ts.h"

/* The template in the Jinja form of Hugging Face's chat_template, for
 * GET /v1/models and the README. */
#define GEN_CHAT_TEMPLATE \
	"{% for message in messages %}<|{{ message.role }}|>\n" \
	"{{ message.content }}\n{% endfor %}<|assistant|>\n"

enum gen_role {
	GEN_ROLE_SYSTEM,
	GEN_ROLE_USER,
	GEN_ROLE_ASSISTANT
};

/* One message: its role and its content (ptr, len; borrowed). */
struct gen_chat_msg {
	enum gen_role role;
	const char *content;    /* may be NULL if len is 0 */
	size_t len;
};

/*
 * The role named (name, len): "system", "user" or "assistant", exactly
 * (case matters). Returns TS_EINVAL, leaving *role alone, for any other.
 */
enum ts_err gen_chat_role(const char *name, size_t len, enum gen_role *role);

/* The name of a role ("system", ...), NULL for a value out of range. */
const char *gen_chat_role_name(enum gen_role role);

/*
 * Appends the rendering of msgs[0..n) and the generation prompt to out
 * (n may be 0: the generation prompt alone). Returns TS_ELIMIT if out
 * would exceed its max, TS_EINVAL for a role out of range; on error out
 * is as it was.
 */
enum ts_err gen_chat_render(const struct gen_chat_msg *msgs, size_t n,
    struct ts_buf *out);

#endif /* GEN_CHAT_H */
