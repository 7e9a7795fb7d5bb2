/*
 * common/ts.c - result code names, the aborting allocators, ms to ns.
 */
#include "common/ts.h"

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
	case TS_ESHUTDOWN: return "shutting down";
	case TS_ENOENT: return "not found";
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

long long
ts_ms_to_ns(double ms)
{
	if (!(ms > 0))
		return 0;
	return (long long)(ms * 1e6 + 0.5);
}
