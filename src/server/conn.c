/*
 * server/conn.c - the helpers over struct conn (conn.h).
 */
#include "server/conn.h"

const char *
conn_param(struct conn *c, const char *name)
{
	const char *v = c->ops->param(c, name);

	return v != NULL ? v : "";
}

enum ts_err
conn_write(struct conn *c, const char *p, size_t len)
{
	if (c->hup)
		return TS_EHUP;
	if (c->ops->write(c, p, len) != TS_OK) {
		c->hup = 1;
		return TS_EHUP;
	}
	return TS_OK;
}
