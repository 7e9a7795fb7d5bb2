/*
 * openai/chat.c - the OpenAI endpoints' prompts, rendered with the chat
 * template of proto/chat.h.
 */
#include "openai/chat.h"

#include <stdlib.h>
#include <string.h>

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
	rc = chat_render_with_tools(req->tools_json, req->tools_json != NULL ?
	    strlen(req->tools_json) : 0, msgs, req->n_messages, gen,
	    open_last, b);
	if (rc != TS_OK)
		b->len = mark;
	free(msgs);
	return rc;
}
