/*
 * common/buf.h - a growable byte buffer with a hard size limit (after
 * curl's dynbuf): what every encoder appends to. Knows no other layer.
 */
#ifndef TS_COMMON_BUF_H
#define TS_COMMON_BUF_H

#include <stddef.h>

#include "common/ts.h"

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

#endif /* TS_COMMON_BUF_H */
