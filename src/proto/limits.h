/*
 * proto/limits.h - the documented limits of a request (docs/API.md
 * "Request bodies", docs/OPERATIONS.md "Limits"): bytes, counts and the
 * ranges of the numbers every dialect's parser and the lab knobs
 * (proto/knobs.h) check. Only constants.
 */
#ifndef TS_PROTO_LIMITS_H
#define TS_PROTO_LIMITS_H

/* Documented limits (docs/OPERATIONS.md "Limits"). */
#define HTTP_MAX_BODY_BYTES (1u << 20)      /* POST body: 1 MiB, else 413 */
#define HTTP_MAX_QUERY_PARAMS 64            /* more params: 400 */
#define HTTP_MAX_QUERY_BYTES 30000          /* query string, else 414: it
					     * travels twice in lighttpd's
					     * one 64 KiB params record */
#define HTTP_MAX_TOKENS_CAP 8192            /* max_tokens above: 400 */
#define HTTP_DEFAULT_MAX_TOKENS 16          /* max_tokens missing or null */
#define HTTP_MAX_PREFILL_MS 60000           /* per-request prefill_ms cap */
#define HTTP_MAX_TPOT_MS 10000              /* per-request tpot_ms cap */
#define HTTP_MAX_JSON_DEPTH 64              /* arrays and objects open at
					     * once in a JSON body, else 400
					     * invalid_json */
#define HTTP_MAX_JSON_CONTAINERS 32768      /* arrays and objects in all
					     * in a JSON body, else 400
					     * invalid_json (jansson holds
					     * about 230 bytes an empty
					     * object: 7.5 MB at most) */

#endif /* TS_PROTO_LIMITS_H */
