/*
 * proto/chat.c - the chat template of proto/chat.h.
 */
#include "proto/chat.h"

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

enum ts_err
chat_render(const struct chat_msg *msgs, size_t n,
    struct ts_buf *out)
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
		if (rc == TS_OK)
			rc = ts_buf_append(out, "\n", 1);
	}
	if (rc == TS_OK)
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
chat_render_tools(const char *tools, size_t len, struct ts_buf *out)
{
	size_t mark = out->len;

	if (chat_marker(out, "tools") != TS_OK ||
	    ts_buf_append(out, tools, len) != TS_OK ||
	    ts_buf_append(out, "\n", 1) != TS_OK) {
		out->len = mark;
		if (out->p != NULL)
			out->p[mark] = '\0';
		return TS_ELIMIT;
	}
	return TS_OK;
}
