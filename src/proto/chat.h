/*
 * proto/chat.h - the chat template every dialect renders its messages
 * with (the OpenAI endpoints' /v1/chat/completions and /v1/responses,
 * Anthropic's /v1/messages, Ollama's /api/chat): how a list of messages becomes the prompt text the
 * model (sim/lm.h) continues. No I/O.
 *
 * Each message is its role marker on a line of its own, then its content
 * and a newline; the generation prompt (the assistant's marker) follows
 * the last message:
 *
 *   <|system|>\n{system content}\n<|user|>\n{user content}\n<|assistant|>\n
 *
 * With tools the request's tools array (compact JSON) comes first, as
 * "<|tools|>\n{tools}\n" (chat_render_tools); a tool's result is a
 * "<|tool|>" message, and an assistant turn of tool calls has its
 * tool_calls array (compact JSON) on a line after its content (the
 * dialect puts it in the message's content), so all of it counts as
 * prompt tokens. (Zephyr-like markers, without an end-of-turn token.)
 * Content is copied as it is: markers inside it are not escaped, and an
 * empty content gives an empty line.
 */
#ifndef TS_PROTO_CHAT_H
#define TS_PROTO_CHAT_H

#include <stddef.h>

#include "common/buf.h"
#include "common/ts.h"

/* The template in the Jinja form of Hugging Face's chat_template, for
 * GET /v1/models, POST /api/show and docs/API.md "Chat template". */
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
 * (case matters). Returns TS_EINVAL, leaving *role alone, for any other
 * ("tool" is the dialects' to accept, with what their API requires of
 * it).
 */
enum ts_err chat_role_parse(const char *name, size_t len, enum chat_role *role);

/* The name of a role ("system", ...), NULL for a value out of range. */
const char *chat_role_name(enum chat_role role);

/*
 * Appends "<|tools|>\n", the tools array's compact JSON (json, len) and a
 * newline to out. TS_ELIMIT if out would exceed its max (out is then as
 * it was).
 */
enum ts_err chat_render_tools(const char *json, size_t len,
    struct ts_buf *out);

/*
 * Appends the rendering of msgs[0..n) and the generation prompt to out
 * (n may be 0: the generation prompt alone). Returns TS_ELIMIT if out
 * would exceed its max, TS_EINVAL for a role out of range; on error out
 * is as it was.
 */
enum ts_err chat_render(const struct chat_msg *msgs, size_t n,
    struct ts_buf *out);

/*
 * chat_render with the generation prompt optional (gen 0: none) and, with
 * open_last 1, the last message left open: its content without the
 * newline that ends a turn, so the model continues it (vLLM's
 * continue_final_message, vllm/entrypoints/serve/tokenize/protocol.py).
 * chat_render is (gen 1, open_last 0). Errors as chat_render's.
 */
enum ts_err chat_render_opts(const struct chat_msg *msgs, size_t n, int gen,
    int open_last, struct ts_buf *out);

/*
 * A model's own chat template (a Hugging Face chat_template, rendered by
 * the server from the model's files: see docs/API.md "Chat templates").
 * render appends the rendering of msgs[0..n) to out: the request's tools
 * (a compact JSON array, or NULL), the generation prompt when gen, the
 * last message left open when open_last. It returns TS_OK, TS_ELIMIT
 * (out full), or TS_EINVAL with the reason in err (the template refused
 * the messages: "template raised: Conversation roles must alternate").
 * Called from any request thread at once: it must be reentrant.
 */
struct chat_renderer {
	enum ts_err (*render)(void *impl, const struct chat_msg *msgs,
	    size_t n, const char *tools, size_t tools_len, int gen,
	    int open_last, struct ts_buf *out, char *err, size_t errlen);
	void *impl;
};

/* Makes r the renderer of every chat_render_with_tools call (NULL: the
 * built-in template above). Set once at start-up, before any request;
 * r is borrowed for the process's life. */
void chat_set_renderer(const struct chat_renderer *r);

/* 1 when a model's renderer is set. */
int chat_has_renderer(void);

/*
 * What every dialect renders a chat with: the model's renderer when one
 * is set, else chat_render_tools (when tools is not NULL) and
 * chat_render_opts. Errors as the renderer's; on TS_EINVAL from a
 * model's template, chat_render_error() gives the reason. On error out
 * is as it was.
 */
enum ts_err chat_render_with_tools(const char *tools, size_t tools_len,
    const struct chat_msg *msgs, size_t n, int gen, int open_last,
    struct ts_buf *out);

/* The calling thread's last reason a model's template refused a chat
 * ("" if none). */
const char *chat_render_error(void);

#endif /* TS_PROTO_CHAT_H */
