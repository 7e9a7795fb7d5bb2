/*
 * gen_chat.c - the chat template of gen_chat.h.
 */
#include "gen_chat.h"

#include <string.h>

/* Role names, indexed by enum gen_role. */
static const char *const gen_chat_names[] = {
	"system", "user", "assistant"
};

#define GEN_CHAT_NROLES (sizeof(gen_chat_names) / sizeof(gen_chat_names[0]))

enum ts_err
gen_chat_role(const char *name, size_t len, enum gen_role *role)
{
	size_t i;

	for (i = 0; i < GEN_CHAT_NROLES; i++)
		if (len == strlen(gen_chat_names[i]) &&
		    memcmp(name, gen_chat_names[i], len) == 0) {
			*role = (enum gen_role)i;
			return TS_OK;
		}
	return TS_EINVAL;
}

const char *
gen_chat_role_name(enum gen_role role)
{
	if ((size_t)role >= GEN_CHAT_NROLES)
		return NULL;
	return gen_chat_names[role];
}

/* Appends "<|role|>\n" for the role's name. */
static enum ts_err
gen_chat_marker(struct ts_buf *out, const char *name)
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
gen_chat_render(const struct gen_chat_msg *msgs, size_t n,
    struct ts_buf *out)
{
	size_t start = out->len, i;
	const char *name;
	enum ts_err rc = TS_OK;

	for (i = 0; i < n && rc == TS_OK; i++) {
		name = gen_chat_role_name(msgs[i].role);
		if (name == NULL) {
			rc = TS_EINVAL;
			break;
		}
		rc = gen_chat_marker(out, name);
		if (rc == TS_OK && msgs[i].len > 0)
			rc = ts_buf_append(out, msgs[i].content, msgs[i].len);
		if (rc == TS_OK)
			rc = ts_buf_append(out, "\n", 1);
	}
	if (rc == TS_OK)
		rc = gen_chat_marker(out,
		    gen_chat_role_name(GEN_ROLE_ASSISTANT));
	if (rc != TS_OK) {
		out->len = start;
		if (out->p != NULL)
			out->p[start] = '\0';  /* ts_buf's terminator */
	}
	return rc;
}
