/*
 * common/buf.c - struct ts_buf: append with a hard limit, reset, free.
 */
#include "common/buf.h"

#include <stdlib.h>
#include <string.h>

void
ts_buf_init(struct ts_buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

enum ts_err
ts_buf_append(struct ts_buf *b, const void *data, size_t len)
{
	size_t need;

	if (len > b->max || b->len > b->max - len)
		return TS_ELIMIT;
	need = b->len + len;
	if (need + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < need + 1)
			cap *= 2;
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
	if (len > 0)
		memcpy(b->p + b->len, data, len);
	b->len = need;
	b->p[b->len] = '\0';   /* convenience for logging; not counted */
	return TS_OK;
}

enum ts_err
ts_buf_append_part(struct ts_buf *b, const void *data, size_t len)
{
	size_t room = b->len < b->max ? b->max - b->len : 0;

	if (len <= room)
		return ts_buf_append(b, data, len);
	(void)ts_buf_append(b, data, room);
	return TS_ELIMIT;
}

void
ts_buf_reset(struct ts_buf *b)
{
	b->len = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}

void
ts_buf_free(struct ts_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
}
