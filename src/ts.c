/*
 * ts.c - result code names and the aborting allocators.
 */
#include "ts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
ts_strerror(enum ts_err e)
{
	switch (e) {
	case TS_OK: return "ok";
	case TS_ENOMEM: return "out of memory";
	case TS_EINVAL: return "invalid input";
	case TS_ELIMIT: return "over a limit";
	case TS_ESYS: return "system error";
	case TS_EHUP: return "client gone";
	case TS_ETIMEDOUT: return "timed out";
	case TS_EFORMAT: return "bad file format";
	}
	return "unknown error";
}

static void
oom(size_t size)
{
	fprintf(stderr, "tokstream: out of memory allocating %zu bytes\n", size);
	abort();
}

void *
xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p == NULL)
		oom(size);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		oom(n * size);
	return p;
}

void *
xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);

	if (q == NULL)
		oom(size);
	return q;
}

char *
xstrndup(const char *s, size_t len)
{
	char *p = xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

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

uint64_t
ts_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

long long
ts_ms_to_ns(double ms)
{
	if (!(ms > 0))
		return 0;
	return (long long)(ms * 1e6 + 0.5);
}
