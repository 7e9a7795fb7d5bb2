/*
 * openai/chat.c - the chat template over a /v1 request (openai/chat.h).
 */
#include "openai/chat.h"

#include <stdlib.h>
#include <string.h>

enum ts_err
openai_chat_prompt(const struct openai_request *req, struct ts_buf *b)
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
	if (req->tools_json != NULL)
		rc = chat_render_tools(req->tools_json,
		    strlen(req->tools_json), b);
	if (rc == TS_OK)
		rc = chat_render(msgs, req->n_messages, b);
	if (rc != TS_OK)
		b->len = mark;
	free(msgs);
	return rc;
}
