/*
 * text/release.c - the per-sequence detokenizer of text/release.h.
 *
 * buf holds the text that has passed the UTF-8 holdback: buf[0..off) is
 * the chunk returned by the last call, buf[off..len) what the stop matcher
 * holds (at most STOP_MAX_BYTES - 1 bytes). Each call first drops the
 * returned chunk, then appends the new complete characters, and returns
 * the prefix the matcher lets go.
 */
#include "text/release.h"

#include <string.h>

enum ts_err
release_init(struct release *r, const char *const strs[],
    const size_t lens[], size_t n)
{
	enum ts_err rc;
	size_t i;

	memset(r, 0, sizeof(*r));
	utf8_repair_init(&r->utf8);
	rc = stop_init(&r->stop, strs, lens, n);
	if (rc != TS_OK)
		return rc;
	for (i = 0; i < n; i++)
		if (!utf8_valid(strs[i], lens[i])) {
			(void)stop_init(&r->stop, NULL, NULL, 0);
			return TS_EINVAL;
		}
	return TS_OK;
}

/* Drops the chunk returned last; the held text moves to buf's start. */
static void
release_compact(struct release *r)
{
	if (r->off == 0)
		return;
	memmove(r->buf, r->buf + r->off, r->len - r->off);
	r->len -= r->off;
	r->off = 0;
}

/*
 * Runs the n new bytes at the end of buf through the stop matcher and
 * makes the released prefix the chunk. On a match the text after the
 * released part is dropped.
 */
static void
release_match(struct release *r, size_t n, struct release_chunk *out,
    int *stop)
{
	size_t go;
	int m;

	go = stop_feed(&r->stop, r->buf + r->len - n, n, &m);
	if (m != 0)
		r->len = go;    /* held text before the match + go = go */
	r->off = go;
	out->p = r->buf;
	out->len = go;
	if (stop != NULL)
		*stop = m;
}

enum ts_err
release_bytes(struct release *r, const char *p, size_t len,
    struct release_chunk *out, int *stop)
{
	size_t n;

	out->p = r->buf;
	out->len = 0;
	if (stop != NULL)
		*stop = r->stop.matched;
	if (r->finished)
		return TS_EINVAL;
	if (len > RELEASE_FEED_MAX)
		return TS_ELIMIT;
	release_compact(r);
	if (r->stop.matched != 0) {
		r->len = 0;
		return TS_OK;
	}
	n = utf8_repair_feed(&r->utf8, p, len, r->buf + r->len);
	r->len += n;
	release_match(r, n, out, stop);
	return TS_OK;
}

enum ts_err
release_text(struct release *r, const char *p, size_t len,
    struct ts_buf *out, int *stop)
{
	size_t off = 0;
	int st = 0;
	enum ts_err rc;

	/* an empty text is fed too: it reports the stop state */
	do {
		size_t n = len - off > RELEASE_FEED_MAX ? RELEASE_FEED_MAX :
		    len - off;
		struct release_chunk c = { NULL, 0 };

		if ((rc = release_bytes(r, p != NULL ? p + off : NULL, n,
		    &c, &st)) != TS_OK)
			break;
		if (out != NULL && c.len > 0)
			(void)ts_buf_append_part(out, c.p, c.len);
		off += n;
	} while (off < len && !st);
	if (stop != NULL)
		*stop = st;
	return rc;
}

int
release_at_boundary(const struct release *r)
{
	return !r->finished && r->stop.matched == 0 && r->len == r->off &&
	    r->utf8.seen == 0;
}

void
release_finish(struct release *r, struct release_chunk *out)
{
	size_t n;
	int m;

	out->p = r->buf;
	out->len = 0;
	if (r->finished)
		return;
	r->finished = 1;
	release_compact(r);
	if (r->stop.matched != 0) {
		r->len = 0;
		return;
	}
	/* An incomplete character becomes U+FFFD, which a stop string may
	 * end with; then what the matcher still holds goes out. */
	n = utf8_repair_finish(&r->utf8, r->buf + r->len);
	r->len += n;
	release_match(r, n, out, &m);
	if (m == 0) {
		out->len += stop_flush(&r->stop);
		r->off = out->len;
	}
}
