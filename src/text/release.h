/*
 * text/release.h - the detokenizer of one sequence: turns generated token
 * ids into the text chunks a client may be sent, applying UTF-8 holdback
 * (text/utf8.h) and then stop strings (text/stop.h). Used per sequence by
 * every relay (transport/relay.c: the lab's /stream and /generate, and
 * /v1/... for both the stream, one chunk per token, and the whole
 * answer), by the engine to decide that a stop string ended a sequence
 * (engine/engine.c), and by tokgen. No I/O, no allocation.
 *
 * Guarantees, for any sequence of feeds:
 *   - every chunk is valid UTF-8 (stop strings must be valid UTF-8, so a
 *     cut before a stop string falls between characters);
 *   - the chunks, concatenated with the finish chunk, are the token texts
 *     concatenated, repaired as text/utf8.h says, and cut just before the
 *     first stop string (text/stop.h) - the same bytes however the text
 *     was split, so a stream and a non-stream answer agree byte for byte;
 *   - nothing from a stop string on is ever released; text is held back
 *     only while it may still begin a stop string or ends in an incomplete
 *     character.
 * An EOS token has no text (the backend gives it none): feeding it
 * releases nothing. Finish reasons are
 * the caller's: a match (stop) ends the sequence with "stop"; at EOS or
 * max_tokens the caller calls release_finish for what is held.
 */
#ifndef TS_TEXT_RELEASE_H
#define TS_TEXT_RELEASE_H

#include <stddef.h>
#include <stdint.h>

#include "text/stop.h"
#include "text/utf8.h"
#include "common/buf.h"
#include "common/ts.h"

/* Most bytes one release_bytes call takes: a backend's longest token must
 * fit (the simulator asserts it for SIM_TOKEN_MAX_BYTES). */
#define RELEASE_FEED_MAX 64

/* Text held for the stop matcher plus one feed's output. */
#define RELEASE_BUF (STOP_MAX_BYTES - 1 + \
	UTF8_OUT_MAX(RELEASE_FEED_MAX))

/* A released chunk: borrowed bytes (ptr, len). */
struct release_chunk {
	const char *p;
	size_t len;
};

/* The fields are text/release.c's; the caller provides the storage. */
struct release {
	struct utf8_repair utf8;
	struct stop_matcher stop;
	size_t off;             /* buf[0..off) went out with the last chunk */
	size_t len;             /* bytes in buf */
	int finished;           /* release_finish was called */
	char buf[RELEASE_BUF];
};

/*
 * Sets up a releaser with the n stop strings (strs[i], lens[i]) (copied;
 * n may be 0, then strs and lens may be NULL). Returns TS_ELIMIT or
 * TS_EINVAL as stop_init does, and TS_EINVAL for a stop string that
 * is not valid UTF-8; the releaser then has no stop strings.
 */
enum ts_err release_init(struct release *r, const char *const strs[],
    const size_t lens[], size_t n);

/*
 * Feeds the bytes (p, len) of the next token (p may be NULL if len is 0;
 * any bytes). *out gets the chunk that may be released now (possibly
 * empty; borrowed until the next call on r) and *stop (may be NULL) 0, or
 * 1 + the index of the stop string that matched: the sequence is over,
 * and later feeds release nothing.
 * TS_ELIMIT (nothing released) if len > RELEASE_FEED_MAX, TS_EINVAL
 * after release_finish.
 */
enum ts_err release_bytes(struct release *r, const char *p,
    size_t len, struct release_chunk *out, int *stop);

/*
 * Feeds the whole text (p, len) of one token, of any length, in pieces
 * of RELEASE_FEED_MAX bytes, until it ends or a stop string matches.
 * Each released chunk is appended to *out (NULL: only the stop matters;
 * an append that fails is dropped, as ts_buf_append_part drops it).
 * *stop as release_bytes. Returns TS_OK, or TS_EINVAL after
 * release_finish.
 */
enum ts_err release_text(struct release *r, const char *p, size_t len,
    struct ts_buf *out, int *stop);

/*
 * The end of the sequence for any reason: *out gets everything still held
 * (an incomplete character as U+FFFD; nothing after a stop match),
 * borrowed until r is reused. Later feeds fail with TS_EINVAL; finish
 * again gives an empty chunk.
 */
void release_finish(struct release *r, struct release_chunk *out);

/*
 * 1 when every byte fed so far has been released (the stop matcher holds
 * nothing, no character is incomplete), no stop string matched and
 * release_finish was not called; else 0. At such a point a new releaser
 * fed the following tokens releases exactly what r would: the points
 * where a stream can resume (handlers/messages.c's SSE ids).
 */
int release_at_boundary(const struct release *r);

#endif /* TS_TEXT_RELEASE_H */
