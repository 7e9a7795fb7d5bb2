/*
 * transport/reply.h - one request's answer: the CGI response head (FastCGI
 * 1.0 section 6.2: "Status:" and headers, then an empty line), the CORS
 * headers of the public endpoints (Fetch standard), and the whole answers
 * that are one write: a JSON object, an error in the lab's shape
 * {"error":{"message","type","code"}} or in the OpenAI API's, which adds
 * "param".
 */
#ifndef TS_TRANSPORT_REPLY_H
#define TS_TRANSPORT_REPLY_H

#include <jansson.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/http.h"

struct conn;

struct reply {
	const char *id_prefix;   /* before X-Request-Id's number: the
				  * instance's "<name>-", or "" */
	struct conn *conn;
	const char *cors;        /* Access-Control-Allow-Origin, or NULL */
	int head_sent;           /* the head went out (or is in a buffer) */
	int64_t t0;              /* arrival, CLOCK_MONOTONIC ns */
};

/*
 * Appends the head to b: "Status: <status> <reason>", Content-Type when
 * ctype is not NULL, the header lines `extra` (each ending in CRLF; may
 * be NULL), X-Request-Id when id is not 0, the CORS headers, the empty
 * line. Marks the head sent; appends nothing when it already was (a
 * committed POST /generate: body only). TS_ELIMIT if b is full.
 */
enum ts_err reply_head_buf(struct reply *rp, struct ts_buf *b, int status,
    const char *ctype, uint64_t id, const char *extra);

/* The same, written at once. TS_OK, or TS_EHUP. */
enum ts_err reply_head(struct reply *rp, int status, const char *ctype,
    uint64_t id, const char *extra);

/* A whole JSON error answer in the lab's shape (before any other byte);
 * `id` the request's X-Request-Id, or 0. */
void reply_error(struct reply *rp, const struct http_error *err,
    const char *extra, uint64_t id);

/* The same in the OpenAI shape, with "param" (the /v1 endpoints). */
void reply_error_v1(struct reply *rp, const struct http_error *err,
    const char *extra, uint64_t id);

/* A whole JSON answer, one line, compact; takes obj's reference (a NULL
 * obj is a 500). TS_OK, TS_EHUP, or TS_EINVAL when it could not be
 * encoded (a 500 was sent). */
enum ts_err reply_json(struct reply *rp, int status, json_t *obj,
    uint64_t id);

#endif /* TS_TRANSPORT_REPLY_H */
