/*
 * handlers/replay.h - `tokstream-fcgi --replay TRACE` (docs/API.md
 * "Replay"): a request to a method and path the trace recorded is
 * matched against its recordings (handlers/replay_set.h: the exact body,
 * else the prompt with the settings) and answered with the recorded
 * status, headers and body bytes, each chunk at its recorded time after
 * the request's admission (divided by --replay-speed). The request runs
 * through the engine like any other: it takes a slot (or waits for
 * one, or gets 429), shows in /metrics and /_debug/generated, and is
 * cancelled when its client leaves; token k of its sequence carries
 * chunk k. A request with no recording gets 404 replay_miss, or with
 * --replay-miss sim is served as without --replay. Requests to any
 * other method and path (/health, /metrics, ...) are routed as always.
 */
#ifndef TS_HANDLERS_REPLAY_H
#define TS_HANDLERS_REPLAY_H

#include <stddef.h>

#include "common/buf.h"
#include "handlers/replay_set.h"

struct reply;
struct server;

/* The largest trace --replay loads (the reader's bound). */
#define REPLAY_MAX_TRACE_BYTES (256u << 20)

/*
 * Loads the trace at path (the trace layer's reader: a version 1 JSONL
 * trace, trace/trace.h) into a new set (*out, caller frees with
 * replay_set_free), scheduled at `speed`: every request line with a
 * status becomes a recording; those with status 0 (no response) are
 * skipped and counted in *skipped. TS_OK, or an error with errbuf
 * naming the file and the line (the reader's error, a status neither 0
 * nor in 200..599, chunk times that decrease or pass
 * REPLAY_MAX_CHUNK_US, or a recording over the bounds of
 * replay_set.h).
 */
enum ts_err replay_load(const char *path, double speed,
    struct replay_set **out, uint32_t *skipped, char *errbuf, size_t cap);

/*
 * Answers the request if it is the replay's: 0 when its method and path
 * are no recording's (the caller routes it as always), 1 when it was
 * answered or handed to an I/O thread. On a miss with --replay-miss sim
 * it returns 0 too, the body it read given back through the
 * connection (conn.h: unread) in `body`, which the caller owns and
 * frees after routing.
 */
int replay_route(struct server *srv, struct reply *rp, const char *method,
    const char *uri, struct ts_buf *body);

#endif /* TS_HANDLERS_REPLAY_H */
