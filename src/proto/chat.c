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

	/* "tool" only comes from a dialect's parser (OpenAI's with a
	 * tool_call_id) */
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

/* Appends "<|name|>\n". */
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

/* Takes out back to start (and its terminator) after a failed append. */
static void
chat_undo(struct ts_buf *out, size_t start)
{
	out->len = start;
	if (out->p != NULL)
		out->p[start] = '\0';  /* ts_buf's terminator */
}

enum ts_err
chat_render_tools(const char *json, size_t len, struct ts_buf *out)
{
	size_t start = out->len;
	enum ts_err rc = chat_marker(out, "tools");

	if (rc == TS_OK)
		rc = ts_buf_append(out, json, len);
	if (rc == TS_OK)
		rc = ts_buf_append(out, "\n", 1);
	if (rc != TS_OK)
		chat_undo(out, start);
	return rc;
}

enum ts_err
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
	if (rc != TS_OK)
		chat_undo(out, start);
	return rc;
}

enum ts_err
chat_render(const struct chat_msg *msgs, size_t n,
    struct ts_buf *out)
{
	return chat_render_opts(msgs, n, 1, 0, out);
}

/* The model's renderer: set once before the threads start, read after */
static const struct chat_renderer *chat_renderer;
static _Thread_local char chat_error[256];

void
chat_set_renderer(const struct chat_renderer *r)
{
	chat_renderer = r;
}

int
chat_has_renderer(void)
{
	return chat_renderer != NULL;
}

const char *
chat_render_error(void)
{
	return chat_error;
}

enum ts_err
chat_render_with_tools(const char *tools, size_t tools_len,
    const struct chat_msg *msgs, size_t n, int gen, int open_last,
    struct ts_buf *out)
{
	size_t mark = out->len;
	enum ts_err rc = TS_OK;

	chat_error[0] = '\0';
	if (chat_renderer != NULL) {
		rc = chat_renderer->render(chat_renderer->impl, msgs, n, tools,
		    tools_len, gen, open_last, out, chat_error,
		    sizeof(chat_error));
		if (rc != TS_OK)
			out->len = mark;
		return rc;
	}
	if (tools != NULL)
		rc = chat_render_tools(tools, tools_len, out);
	if (rc == TS_OK)
		rc = chat_render_opts(msgs, n, gen, open_last, out);
	if (rc != TS_OK)
		out->len = mark;
	return rc;
}
