/*
 * proto/http.h - request parsing for tokstream's lab endpoints: query strings
 * (application/x-www-form-urlencoded, WHATWG URL "urlencoded parser"), JSON
 * bodies (jansson), limits, and JSON error bodies in the OpenAI API's shape
 * {"error":{"message":...,"type":...,"code":...}}. No sockets.
 */
#ifndef TS_PROTO_HTTP_H
#define TS_PROTO_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ts.h"
#include "proto/http_error.h"
#include "proto/knobs.h"
#include "proto/limits.h"

/*
 * A generation request, from a query string or a JSON body. Owns
 * `prompt` (free with http_gen_request_free). Timing fields are -1 when the
 * request does not override the server's latency model.
 */
struct http_gen_request {
	char *prompt;            /* may contain NUL bytes; NUL-terminated */
	size_t prompt_len;       /* bytes */
	uint32_t max_tokens;     /* tokens, 0..HTTP_MAX_TOKENS_CAP */
	struct knobs knobs;      /* prefill_ms, tpot_ms, error_after: -1 or
				  * the override (knobs.h) */
	char *last_event_id;     /* GET only: resume from this SSE event id
				  * (for clients that cannot send the
				  * Last-Event-ID header); NULL if absent */
	size_t last_event_id_len;
};

void http_gen_request_free(struct http_gen_request *r);

/* The value 0..15 of the hex digit c (either case), or -1. */
int http_hex_digit(unsigned char c);

/*
 * Percent-decodes (s, len) as a form value: '+' becomes a space, "%XY"
 * (hex, either case) becomes the byte XY. Writes the result to `out`
 * (which must hold `len` bytes; the result is never longer) and its
 * length to *out_len. Returns TS_EINVAL, with the offset of the bad escape
 * in *bad_at, for '%' not followed by two hex digits.
 */
enum ts_err http_form_decode(const char *s, size_t len, char *out,
    size_t *out_len, size_t *bad_at);

/*
 * Parses the query string (qs, len) of GET /stream: prompt (required),
 * max_tokens, last_event_id and the lab knobs (knobs.h: prefill_ms,
 * tpot_ms, error_after). Unknown parameters are ignored; a known
 * parameter given twice is an error (rule: no silent pick). On error fills *err (status 400) and returns TS_EINVAL.
 */
enum ts_err http_parse_query(const char *qs, size_t len,
    struct http_gen_request *req, struct http_error *err);

/*
 * Parses the JSON body (body, len) of POST /generate: the same fields as
 * the query, as JSON values ("prompt" a string; integers for the rest;
 * null means "not given"). Unknown fields are ignored. Errors: invalid
 * JSON (with jansson's line/column), not an object, wrong types, out of
 * range: *err filled (status 400), TS_EINVAL returned.
 */
enum ts_err http_parse_json(const char *body, size_t len,
    struct http_gen_request *req, struct http_error *err);

/*
 * 1 when the JSON text (p, len) opens more than `max` arrays and objects
 * at once (brackets inside strings do not count), else 0. A byte scan, so
 * a hostile body costs no recursion: jansson reads 2,048 levels,
 * recursively, and so do the encoders and the schema generator on what
 * is kept, on threads with small stacks, so a deeper body is refused
 * before it is parsed. It need not be valid JSON.
 */
int http_json_too_deep(const char *p, size_t len, int max);

/* Fills *err for a body http_json_too_deep refused: 400 invalid_json,
 * naming HTTP_MAX_JSON_DEPTH. */
void http_error_too_deep(struct http_error *err);

/*
 * 1 when the JSON text (p, len) opens more than `max` arrays and objects
 * in all (brackets inside strings do not count), else 0: a byte scan
 * before parsing, so that a body of a few hundred thousand empty objects
 * (a 1 MiB body made jansson hold 80 MB) is refused before jansson
 * allocates a value for each. It need not be valid JSON.
 */
int http_json_too_many(const char *p, size_t len, size_t max);

/* Fills *err for a body http_json_too_many refused: 400 invalid_json,
 * naming HTTP_MAX_JSON_CONTAINERS. */
void http_error_too_many(struct http_error *err);

#endif /* TS_PROTO_HTTP_H */
