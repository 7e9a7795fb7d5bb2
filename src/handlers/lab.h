/*
 * handlers/lab.h - the lab endpoints GET /stream and POST /generate
 * (lab.c), and the pieces of them the /v1 endpoints share.
 */
#ifndef TS_HANDLERS_LAB_H
#define TS_HANDLERS_LAB_H

#include <stdint.h>

#include "common/buf.h"
#include "engine/engine.h"
#include "proto/http.h"

struct conn;
struct relay;
struct reply;
struct server;

void lab_stream(struct server *srv, struct reply *rp);
void lab_generate(struct server *srv, struct reply *rp);

/* Reads the whole request body (at most HTTP_MAX_BODY_BYTES: else 413,
 * the rest drained). TS_OK, or an error with *err filled. */
enum ts_err lab_read_body(struct conn *c, struct ts_buf *body,
    struct http_error *err);

/* The error of a finish that is one (shutdown 503, error 500 with the
 * injected-error message when error_after >= 0): 1 with *err filled, or
 * 0. */
int lab_finish_error(int32_t error_after, enum engine_finish f,
    struct http_error *err);

/* The SSE keep-alive comment ": keep-alive" (relay_ops.keepalive). */
enum ts_err lab_sse_keepalive(struct relay *r, struct ts_buf *out);

/* The keep-alive of a JSON answer: the 200 head once, then a newline
 * (relay_ops.keepalive). */
enum ts_err lab_json_keepalive(struct relay *r, struct ts_buf *out);

/* A whole JSON error answer, or after a committed 200 its body: the lab's
 * shape, or OpenAI's with `openai`. */
enum ts_err lab_json_error(struct relay *r, struct ts_buf *out,
    const struct http_error *err, int openai);

/* relay_ops.token of a JSON answer: gathers the text (the response state
 * must be lab.c's). */
enum ts_err lab_collect_token(struct relay *r, struct ts_buf *out,
    uint32_t index, const char *text, size_t len, int *event);

#endif /* TS_HANDLERS_LAB_H */
