/*
 * openai/chat.c - the chat template of openai/chat.h.
 */
#include "openai/chat.h"

#include <stdlib.h>
#include <string.h>

/* Role names, indexed by enum chat_role. */
static const char *const chat_names[] = {
	"system", "user", "assistant", "tool"
};

#define CHAT_NROLES (sizeof(chat_names) / sizeof(chat_names[0]))

enum ts_err
chat_role_parse(const char *name, size_t len, enum chat_role *role)
{
	size_t i;

	/* "tool" only comes from the OpenAI parser (with a tool_call_id) */
	for (i = 0; i < CHAT_ROLE_TOOL; i++)
		if (len == strlen(chat_names[i]) &&
		    memcmp(name, chat_names[i], len) == 0) {
			*role = (enum chat_role)i;
			return TS_OK;
		}
	return TS_EINVAL;
}

const char *
chat_role_name(enum chat_role role)
{
	if ((size_t)role >= CHAT_NROLES)
		return NULL;
	return chat_names[role];
}

/* Appends "<|role|>\n" for the role's name. */
static enum ts_err
chat_marker(struct ts_buf *out, const char *name)
{
	enum ts_err rc;

	rc = ts_buf_append(out, "<|", 2);
	if (rc == TS_OK)
		rc = ts_buf_append(out, name, strlen(name));
	if (rc == TS_OK)
		rc = ts_buf_append(out, "|>\n", 3);
	return rc;
}

/*
 * chat_render with the generation prompt optional (gen 0: none) and, with
 * open_last, the last message left open: its content without the newline
 * that ends a turn, so the model continues it (vLLM's
 * continue_final_message). On error out is as it was.
 */
static enum ts_err
chat_render_opts(const struct chat_msg *msgs, size_t n, int gen,
    int open_last, struct ts_buf *out)
{
	size_t start = out->len, i;
	const char *name;
	enum ts_err rc = TS_OK;

	for (i = 0; i < n && rc == TS_OK; i++) {
		name = chat_role_name(msgs[i].role);
		if (name == NULL) {
			rc = TS_EINVAL;
			break;
		}
		rc = chat_marker(out, name);
		if (rc == TS_OK && msgs[i].len > 0)
			rc = ts_buf_append(out, msgs[i].content, msgs[i].len);
		if (rc == TS_OK && !(open_last && i + 1 == n))
			rc = ts_buf_append(out, "\n", 1);
	}
	if (rc == TS_OK && gen)
		rc = chat_marker(out,
		    chat_role_name(CHAT_ROLE_ASSISTANT));
	if (rc != TS_OK) {
		out->len = start;
		if (out->p != NULL)
			out->p[start] = '\0';  /* ts_buf's terminator */
	}
	return rc;
}

enum ts_err
chat_render(const struct chat_msg *msgs, size_t n,
    struct ts_buf *out)
{
	return chat_render_opts(msgs, n, 1, 0, out);
}

enum ts_err
openai_chat_prompt(const struct openai_request *req, struct ts_buf *b)
{
	return openai_chat_prompt_opts(req, 1, 0, b);
}

enum ts_err
openai_chat_prompt_opts(const struct openai_request *req, int gen,
    int open_last, struct ts_buf *b)
{
	struct chat_msg *msgs;
	enum ts_err rc;
	size_t i, mark;

	if (req->kind == OPENAI_COMPLETIONS || req->messages == NULL)
		return TS_EINVAL;
	msgs = xcalloc(req->n_messages + 1u, sizeof(*msgs));
	for (i = 0; i < req->n_messages; i++) {
		const struct openai_message *m = &req->messages[i];

		msgs[i].role = m->role == OPENAI_ROLE_ASSISTANT ?
		    CHAT_ROLE_ASSISTANT : m->role == OPENAI_ROLE_USER ?
		    CHAT_ROLE_USER : m->role == OPENAI_ROLE_TOOL ?
		    CHAT_ROLE_TOOL : CHAT_ROLE_SYSTEM;
		msgs[i].content = m->content;
		msgs[i].len = m->content_len;
	}
	mark = b->len;
	rc = TS_OK;
	if (req->tools_json != NULL && (chat_marker(b, "tools") != TS_OK ||
	    ts_buf_append(b, req->tools_json, strlen(req->tools_json)) !=
	    TS_OK || ts_buf_append(b, "\n", 1) != TS_OK))
		rc = TS_ELIMIT;
	if (rc == TS_OK)
		rc = chat_render_opts(msgs, req->n_messages, gen, open_last,
		    b);
	if (rc != TS_OK)
		b->len = mark;
	free(msgs);
	return rc;
}
