/*
 * transport/conn.c - the helpers over struct conn (conn.h).
 */
#include "transport/conn.h"

#include <string.h>

const char *
conn_param(struct conn *c, const char *name)
{
	const char *v = c->ops->param(c, name);

	return v != NULL ? v : "";
}

/* The length of (p, len) up to and including the CGI head's empty line,
 * or len when it does not end there. A head is written whole (reply.c
 * makes it in one buffer), so the line is never split across writes. */
static size_t
head_part(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i + 4 <= len; i++)
		if (memcmp(p + i, "\r\n\r\n", 4) == 0)
			return i + 4;
	return len;
}

enum ts_err
conn_write(struct conn *c, const char *p, size_t len)
{
	if (c->hup)
		return TS_EHUP;
	if (c->head_only) {
		if (c->head_done)
			return TS_OK;
		len = head_part(p, len);
		c->head_done = len >= 4 && memcmp(p + len - 4, "\r\n\r\n",
		    4) == 0;
	}
	if (c->ops->write(c, p, len) != TS_OK) {
		c->hup = 1;
		return TS_EHUP;
	}
	return TS_OK;
}
