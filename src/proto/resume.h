/*
 * proto/resume.h - SSE event ids for resumable streams (WHATWG HTML 9.2: the
 * "id" field, echoed back by EventSource as the Last-Event-ID header when
 * it reconnects). No I/O.
 *
 * Id format (opaque to clients, documented in docs/API.md "Resuming a
 * stream"):  [<instance>-]<stream>-<key>-<index>  or  ...-<key>-end
 *   instance  the --instance name of the backend that sent it (docs/
 *           OPERATIONS.md "Several hosts"); absent on an unnamed server
 *   stream  decimal stream id (X-Request-Id) of the stream that sent it
 *   key     16 lowercase hex digits: RESUME_KEY of the request's
 *           generation parameters (prompt bytes, max_tokens, error_after)
 *   index   decimal 0-based index of the token the event carries; "end"
 *           on the [DONE] event
 * Every part is at most 20 digits with no sign and no leading zeros; the
 * whole id is at most RESUME_ID_MAX bytes.
 */
#ifndef TS_PROTO_RESUME_H
#define TS_PROTO_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

#define RESUME_ID_MAX 80           /* bytes, without a NUL */
#define RESUME_INSTANCE_MAX 8      /* bytes of an instance name */
/* The longest request id (X-Request-Id): "<instance>-<stream>". */
#define RESUME_REQUEST_ID_MAX (RESUME_INSTANCE_MAX + 1 + 20)
#define RESUME_INDEX_END UINT64_MAX

/* A parsed event id. */
struct resume_id {
	uint64_t stream;           /* stream that sent the event */
	uint64_t key;              /* its parameters' key */
	uint64_t index;            /* token index, or RESUME_INDEX_END */
	uint64_t instance;         /* the sender's instance, packed
				    * (resume_instance_parse); 0: none */
};

/*
 * Instance names (--instance): 1 to RESUME_INSTANCE_MAX bytes of a-z and
 * 0-9, the first a letter, so that "b1-42" is never a number. Packed
 * into a u64, byte i at bits 8i..8i+7 (0 is no name). Returns TS_OK, or
 * TS_EINVAL for anything else.
 */
enum ts_err resume_instance_parse(const char *s, size_t len, uint64_t *out);

/* Writes the name of packed instance `inst` and a NUL into buf (at least
 * RESUME_INSTANCE_MAX + 1 bytes); returns its length, 0 for none. */
size_t resume_instance_name(uint64_t inst, char *buf);

/*
 * A request id (X-Request-Id, /_debug/generated?id=): "<stream>", or
 * "<instance>-<stream>" on a named server; stream decimal, never 0.
 * format writes it with a NUL into buf (cap bytes) and returns its length
 * (0 if cap is too small). parse reads (s, len) strictly: TS_OK with
 * *instance 0 when there is no instance part, else TS_EINVAL with a static
 * reason in *why.
 */
size_t resume_request_id_format(char *buf, size_t cap, uint64_t instance,
    uint64_t stream);
enum ts_err resume_request_id_parse(const char *s, size_t len,
    uint64_t *instance, uint64_t *stream, const char **why);

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
 * Parses (s, len) strictly: three parts, or four with an instance name
 * first. Returns TS_OK, or TS_EINVAL with a static reason in *why ("too
 * long", "not three parts", "stream is not a number", ...) for anything
 * else: empty, too long, wrong separators, signs, spaces, leading zeros,
 * overflow, uppercase or short keys, a bad instance name.
 */
enum ts_err resume_id_parse(const char *s, size_t len, struct resume_id *id,
    const char **why);

#endif /* TS_PROTO_RESUME_H */
