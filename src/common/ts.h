/*
 * common/ts.h - tokstream's result codes, the aborting allocators and the
 * ms-to-ns conversion every layer uses. Knows no other layer.
 *
 * Every module returns enum ts_err (after kcgi's enum kcgi_err) so callers
 * can tell "the client went away" (TS_EHUP) from a real failure.
 */
#ifndef TS_COMMON_TS_H
#define TS_COMMON_TS_H

#include <stddef.h>
#include <stdint.h>

enum ts_err {
	TS_OK = 0,      /* success */
	TS_ENOMEM,      /* allocation failed (only where we do not abort) */
	TS_EINVAL,      /* bad input: the caller's data is malformed */
	TS_ELIMIT,      /* input is well formed but over a documented limit */
	TS_ESYS,        /* a system call failed; errno was saved */
	TS_EHUP,        /* the peer went away: stop generating */
	TS_ETIMEDOUT,   /* a deadline passed */
	TS_EFORMAT,     /* a file is not in the expected format */
	TS_ESHUTDOWN,   /* the server is stopping: nothing new is taken */
	TS_ENOENT       /* what was looked up is absent (a file's key) */
};

/* Short, stable English name of an error ("ok", "client gone", ...). */
const char *ts_strerror(enum ts_err e);

/*
 * Allocation that cannot fail: on out-of-memory it prints one line to stderr
 * and aborts (after lighttpd's ck_malloc). Sizes in bytes.
 */
void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrndup(const char *s, size_t len);

/* Milliseconds to nanoseconds, rounded to the nearest ns; negative → 0. */
long long ts_ms_to_ns(double ms);

#endif /* TS_COMMON_TS_H */
