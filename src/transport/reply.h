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
#include "engine/engine.h"
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

/*
 * The same two shapes appended to b instead of written (a relay's end or
 * a late error): the head (nothing when it already went out, as after a
 * committed 200), the body, a newline. TS_OK, or TS_ELIMIT / TS_EINVAL
 * when b is full or the body could not be encoded.
 */
enum ts_err reply_error_buf(struct reply *rp, struct ts_buf *b,
    const struct http_error *err, uint64_t id);
enum ts_err reply_error_v1_buf(struct reply *rp, struct ts_buf *b,
    const struct http_error *err, uint64_t id);

/*
 * The error of an engine finish that is one: a shutdown is 503
 * "shutdown", an error 500 "injected_error" (naming the count) when the
 * request set error_after >= 0, else 500 "generation_failed". 1 with
 * *err filled, or 0 for any other finish.
 */
int reply_finish_error(int32_t error_after, enum engine_finish f,
    struct http_error *err);

/*
 * Reads the whole request body: CONTENT_LENGTH bytes, which may span many
 * FastCGI records. TS_OK, or with *err filled: 400
 * invalid_content_length (not a number), 413 body_too_large (over
 * HTTP_MAX_BODY_BYTES; what was sent is drained first, so lighttpd can
 * deliver the answer), 400 incomplete_body (the client stopped short).
 */
enum ts_err reply_read_body(struct conn *c, struct ts_buf *body,
    struct http_error *err);

/*
 * The one entry for a JSON request body, every endpoint's (POST
 * /generate and the /v1 endpoints): reply_read_body, then the nesting
 * limit (400 invalid_json over HTTP_MAX_JSON_DEPTH arrays and objects
 * open at once, refused before any parser recurses into it).
 */
enum ts_err reply_read_json(struct conn *c, struct ts_buf *body,
    struct http_error *err);

/* The largest whole answer written on the handler's own thread: a
 * larger one goes to an I/O thread (reply_send). Well under what the
 * FastCGI socket's send buffer holds, so a write this size does not
 * block even when the HTTP client reads nothing. */
#define REPLY_INLINE_MAX (64u * 1024u)

/*
 * Sends a whole answer made in b (the CGI head and body), the last bytes
 * the handler writes: up to REPLY_INLINE_MAX, or with no I/O threads
 * (c->threads NULL: the unit tests), written here (conn_write); larger,
 * handed with the connection to an I/O thread (transport/io.h:
 * io_answer), which writes it without blocking, so a client that does
 * not read holds no accept thread. b is left empty either way (the
 * caller still frees it). TS_OK (written, or handed over), or TS_EHUP.
 */
enum ts_err reply_send(struct reply *rp, struct ts_buf *b);

/* A whole JSON answer, one line, compact, sent by reply_send; takes
 * obj's reference (a NULL obj is a 500). TS_OK, TS_EHUP, or TS_EINVAL
 * when it could not be encoded (a 500 was sent). */
enum ts_err reply_json(struct reply *rp, int status, json_t *obj,
    uint64_t id);

#endif /* TS_TRANSPORT_REPLY_H */
