/*
 * server/resume.h - SSE event ids for resumable streams (WHATWG HTML 9.2: the
 * "id" field, echoed back by EventSource as the Last-Event-ID header when
 * it reconnects). No I/O.
 *
 * Id format (opaque to clients, documented in docs/API.md "Resuming a
 * stream"):  <stream>-<key>-<index>  or  <stream>-<key>-end
 *   stream  decimal stream id (X-Request-Id) of the stream that sent it
 *   key     16 lowercase hex digits: RESUME_KEY of the request's
 *           generation parameters (prompt bytes, max_tokens, error_after)
 *   index   decimal 0-based index of the token the event carries; "end"
 *           on the [DONE] event
 * Every part is at most 20 digits with no sign and no leading zeros; the
 * whole id is at most RESUME_ID_MAX bytes.
 */
#ifndef TS_SERVER_RESUME_H
#define TS_SERVER_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

#define RESUME_ID_MAX 64           /* bytes, without a NUL */
#define RESUME_INDEX_END UINT64_MAX

/* A parsed event id. */
struct resume_id {
	uint64_t stream;           /* stream that sent the event */
	uint64_t key;              /* its parameters' key */
	uint64_t index;            /* token index, or RESUME_INDEX_END */
};

/*
 * The key of a generation's parameters: FNV-1a 64 over a version tag,
 * the prompt bytes (ptr, len), max_tokens and error_after (-1 = none),
 * each number as 8 little-endian bytes. Two requests with the same key
 * generate the same tokens (sim/lab.h's determinism contract).
 */
uint64_t resume_key(const char *prompt, size_t len, uint32_t max_tokens,
    int32_t error_after);

/*
 * Formats `id` into buf (cap bytes, NUL-terminated). Returns the length
 * (at most RESUME_ID_MAX), or 0 if cap is too small.
 */
size_t resume_id_format(char *buf, size_t cap, const struct resume_id *id);

/*
 * Parses (s, len) strictly. Returns TS_OK, or TS_EINVAL with a static
 * reason in *why ("too long", "not three parts", "stream is not a
 * number", ...) for anything else: empty, too long, wrong separators,
 * signs, spaces, leading zeros, overflow, uppercase or short keys.
 */
enum ts_err resume_id_parse(const char *s, size_t len, struct resume_id *id,
    const char **why);

#endif /* TS_SERVER_RESUME_H */
