/*
 * ts.h - tokstream's shared result codes and allocation helpers.
 *
 * Every module returns enum ts_err (after kcgi's enum kcgi_err) so callers
 * can tell "the client went away" (TS_EHUP) from a real failure.
 */
#ifndef TS_H
#define TS_H

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
	TS_EFORMAT      /* a file is not in the expected format */
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

/*
 * A growable byte buffer with a hard size limit (after curl's dynbuf).
 * The caller owns `p`; ts_buf_free() releases it and accepts a zeroed
 * buffer. `max` is the largest `len` allowed, in bytes.
 */
struct ts_buf {
	char *p;
	size_t len;
	size_t cap;
	size_t max;
};

/* Initialises an empty buffer that may grow to `max` bytes. */
void ts_buf_init(struct ts_buf *b, size_t max);
/* Appends (data, len). TS_ELIMIT if the result would exceed max (the
 * buffer is then unchanged). Aborts on out of memory. */
enum ts_err ts_buf_append(struct ts_buf *b, const void *data, size_t len);
/* Appends as much of (data, len) as fits under max, for a capped copy of
 * network data. TS_OK when all of it fit; TS_ELIMIT when bytes were
 * dropped (the part that fits is kept). Aborts on out of memory. */
enum ts_err ts_buf_append_part(struct ts_buf *b, const void *data,
    size_t len);
/* Empties the buffer, keeping its memory. */
void ts_buf_reset(struct ts_buf *b);
void ts_buf_free(struct ts_buf *b);

/* Milliseconds to nanoseconds, rounded to the nearest ns; negative → 0. */
long long ts_ms_to_ns(double ms);

/*
 * FNV-1a, 64 bits (Fowler, Noll, Vo; draft-eastlake-fnv), of (p, len)
 * continued from h: start with TS_FNV1A_INIT, feed more bytes by passing
 * the result back. Not cryptographic; its values are kept in files and
 * ids (resume.h, metrics.h), so it must never change.
 */
#define TS_FNV1A_INIT 0xcbf29ce484222325ULL
uint64_t ts_fnv1a(uint64_t h, const void *p, size_t len);

#endif /* TS_H */
