/*
 * handlers/replay_set.h - the recorded responses `--replay TRACE` serves
 * and how a request finds one (docs/API.md "Replay"). A request is its
 * method, path (with its query) and body; its recording is found by
 *   1. the exact body bytes (method and path equal too), else
 *   2. "the prompt with the settings": the body parsed as JSON and
 *      written in a canonical form (jansson: keys sorted, compact, no
 *      whitespace), so a client that orders its keys or spaces its JSON
 *      otherwise still matches; numbers compare as jansson writes them
 *      (1 and 1.0 differ).
 * Recordings with the same key are served in turn: the k-th request
 * that finds a key gets its k-th recording, wrapping around. Knows no
 * server and no trace file (handlers/replay.c fills a set from one).
 */
#ifndef TS_HANDLERS_REPLAY_SET_H
#define TS_HANDLERS_REPLAY_SET_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

/* Bounds of one recording, checked as it is built (replay_rec_chunk):
 * its chunks, each chunk's bytes and all of its bytes. */
#define REPLAY_MAX_CHUNKS 65536u
#define REPLAY_MAX_CHUNK_BYTES (64u * 1024u)
#define REPLAY_MAX_BYTES (8u << 20)
/* Bytes of recorded header lines kept (the response head has room for
 * these beside tokstream's own lines); later headers are dropped. */
#define REPLAY_MAX_HEAD_BYTES 640u
/* Recordings in one set. */
#define REPLAY_MAX_RECORDINGS 100000u
/* The latest a chunk may be recorded, in us from its request's start
 * (600 s): a later one is a broken trace, and its time times 1000 /
 * speed must fit an int64_t of ns. */
#define REPLAY_MAX_CHUNK_US 600000000ll

/* One recorded chunk: the bytes of one read of the body, at t_us after
 * the recorded request's start. */
struct replay_chunk {
	int64_t t_us;
	uint32_t off;              /* into the recording's bytes */
	uint32_t len;
};

/* One recorded response. */
struct replay_rec {
	int status;                /* 200..599 */
	char *head;                /* kept header lines "Name: value\r\n",
				    * NUL-terminated ("" when none) */
	size_t head_len;
	uint32_t dropped_headers;  /* hop-by-hop, framing, tokstream's own,
				    * or past REPLAY_MAX_HEAD_BYTES */
	char *bytes;               /* every chunk's bytes, in order */
	size_t nbytes;
	struct replay_chunk *chunks;
	uint32_t nchunks;
	int64_t *sched_ns;         /* replay_set_schedule's: chunk k's time
				    * after admission, scaled, non-decreasing */
	uint64_t prompt_tokens;    /* as recorded, for the metrics */
};

/* Makes an empty recording of `status`. Caller frees (replay_rec_free)
 * unless it gives it to replay_set_add. */
struct replay_rec *replay_rec_new(int status);
void replay_rec_free(struct replay_rec *r);

/*
 * Adds the recorded header (name, value), unless it is one a replay
 * does not repeat: case-insensitively Content-Length, Transfer-Encoding,
 * Connection, Keep-Alive, Date, Server (hop-by-hop and framing: the
 * server that relays the replay frames the body itself), Status (the
 * CGI/FastCGI head's status line: the web server would take it for the
 * response's status over the recorded one), X-Request-Id
 * and Access-Control-* (tokstream sets its own), a name starting with
 * ':' (an HTTP/2 pseudo-header), or a name or value that is not one
 * line of visible bytes. Past REPLAY_MAX_HEAD_BYTES headers are dropped
 * too. Each drop counts in r->dropped_headers. Copies.
 */
void replay_rec_header(struct replay_rec *r, const char *name,
    const char *value);

/* Appends a chunk of (p, len) at t_us (copies). TS_ELIMIT past the
 * bounds above, TS_EINVAL for t_us < 0 or over REPLAY_MAX_CHUNK_US. */
enum ts_err replay_rec_chunk(struct replay_rec *r, int64_t t_us,
    const void *p, size_t len);

struct replay_set;

/* An empty set. Caller frees (replay_set_free). */
struct replay_set *replay_set_new(void);
void replay_set_free(struct replay_set *s);

/*
 * Adds recording r (the set owns it from now on, also on failure) of the
 * request (method, path, body, body_len) under its exact key and, when
 * the body is JSON, its canonical one. TS_ELIMIT past
 * REPLAY_MAX_RECORDINGS (r is freed).
 */
enum ts_err replay_set_add(struct replay_set *s, const char *method,
    const char *path, const char *body, size_t body_len,
    struct replay_rec *r);

/* Sets every recording's sched_ns: t_us x 1000 / speed (speed > 0),
 * made non-decreasing (a chunk is never before the one before it). */
void replay_set_schedule(struct replay_set *s, double speed);

/* What the set holds: recordings, distinct exact keys, distinct
 * canonical keys, and distinct (method, path) pairs. */
struct replay_stats {
	uint32_t recordings, exact_keys, canonical_keys, routes;
};
void replay_set_stats(const struct replay_set *s, struct replay_stats *st);

/* 1 when some recording is of a request to (method, path): such a
 * request is the replay's; any other is routed as without --replay. */
int replay_set_has_route(const struct replay_set *s, const char *method,
    const char *path);

enum replay_how { REPLAY_MISS = 0, REPLAY_EXACT, REPLAY_CANONICAL };

/*
 * The recording for the request (method, path, body, body_len): by its
 * exact key, else its canonical one (the module's comment); NULL on a
 * miss. Each call that finds a key takes its next recording in turn
 * (thread-safe). *how says which key matched. Borrowed until
 * replay_set_free.
 */
const struct replay_rec *replay_set_match(struct replay_set *s,
    const char *method, const char *path, const char *body,
    size_t body_len, enum replay_how *how);

#endif /* TS_HANDLERS_REPLAY_SET_H */
