/*
 * transport/reply.c - response heads, JSON answers and errors (reply.h).
 */
#include "transport/reply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/conn.h"

enum ts_err
reply_head_buf(struct reply *rp, struct ts_buf *b, int status,
    const char *ctype, uint64_t id, const char *extra)
{
	char head[1024];
	size_t n = 0;

	if (rp->head_sent)
		return TS_OK;
#define HEAD_ADD(...) do {						\
	int k_ = snprintf(head + n, sizeof(head) - n, __VA_ARGS__);	\
	if (k_ < 0 || (size_t)k_ >= sizeof(head) - n)			\
		return TS_ELIMIT;					\
	n += (size_t)k_;						\
} while (0)
	HEAD_ADD("Status: %d %s\r\n", status, http_reason(status));
	if (ctype != NULL)
		HEAD_ADD("Content-Type: %s\r\n", ctype);
	if (extra != NULL)
		HEAD_ADD("%s", extra);
	if (id != 0)
		HEAD_ADD("X-Request-Id: %s%llu\r\n", rp->id_prefix,
		    (unsigned long long)id);
	if (rp->cors != NULL)
		HEAD_ADD("Access-Control-Allow-Origin: %s\r\n"
		    "Access-Control-Expose-Headers: X-Request-Id\r\n",
		    rp->cors);
	HEAD_ADD("\r\n");
#undef HEAD_ADD
	if (ts_buf_append(b, head, n) != TS_OK)
		return TS_ELIMIT;
	rp->head_sent = 1;
	return TS_OK;
}

enum ts_err
reply_head(struct reply *rp, int status, const char *ctype, uint64_t id,
    const char *extra)
{
	struct ts_buf b;
	enum ts_err rc;

	if (rp->head_sent)
		return TS_OK;
	ts_buf_init(&b, 4096);
	rc = reply_head_buf(rp, &b, status, ctype, id, extra);
	if (rc == TS_OK)
		rc = conn_write(rp->conn, b.p, b.len);
	ts_buf_free(&b);
	return rc;
}

/* Appends the head and body of an error, made by `encode` (either
 * shape), and a newline to b. */
static enum ts_err
error_buf(struct reply *rp, struct ts_buf *b, const struct http_error *err,
    const char *extra, uint64_t id,
    enum ts_err (*encode)(const struct http_error *, struct ts_buf *))
{
	enum ts_err rc = reply_head_buf(rp, b, err->status,
	    "application/json", id, extra);

	if (rc == TS_OK)
		rc = encode(err, b);    /* TS_ELIMIT: b is full */
	if (rc != TS_OK)
		return rc;
	return ts_buf_append(b, "\n", 1);
}

/* ... and writes them. */
static void
error_with(struct reply *rp, const struct http_error *err,
    const char *extra, uint64_t id,
    enum ts_err (*encode)(const struct http_error *, struct ts_buf *))
{
	struct ts_buf b;

	ts_buf_init(&b, 64 * 1024);
	if (error_buf(rp, &b, err, extra, id, encode) == TS_OK)
		conn_write(rp->conn, b.p, b.len);
	ts_buf_free(&b);
}

void
reply_error(struct reply *rp, const struct http_error *err,
    const char *extra, uint64_t id)
{
	error_with(rp, err, extra, id, http_error_json);
}

void
reply_error_v1(struct reply *rp, const struct http_error *err,
    const char *extra, uint64_t id)
{
	error_with(rp, err, extra, id, http_error_json_openai);
}

enum ts_err
reply_error_buf(struct reply *rp, struct ts_buf *b,
    const struct http_error *err, uint64_t id)
{
	return error_buf(rp, b, err, NULL, id, http_error_json);
}

enum ts_err
reply_error_v1_buf(struct reply *rp, struct ts_buf *b,
    const struct http_error *err, uint64_t id)
{
	return error_buf(rp, b, err, NULL, id, http_error_json_openai);
}

int
reply_finish_error(int32_t error_after, enum engine_finish f,
    struct http_error *err)
{
	if (f == ENGINE_FINISH_SHUTDOWN) {
		http_error_set(err, 503, "server_error", "shutdown",
		    "the server is shutting down");
		return 1;
	}
	if (f != ENGINE_FINISH_ERROR)
		return 0;
	if (error_after >= 0)
		http_error_set(err, 500, "server_error", "injected_error",
		    "injected error after %d tokens (error_after)",
		    (int)error_after);
	else
		http_error_set(err, 500, "server_error", "generation_failed",
		    "generation failed");
	return 1;
}

enum ts_err
reply_read_body(struct conn *c, struct ts_buf *body, struct http_error *err)
{
	const char *cl = conn_param(c, "CONTENT_LENGTH");
	char chunk[16384];
	unsigned long long want = 0;
	size_t got;
	char *end;

	if (*cl != '\0') {
		errno = 0;
		want = strtoull(cl, &end, 10);
		if (errno != 0 || *end != '\0' || *cl == '-') {
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_content_length",
			    "Content-Length is not a number");
			return TS_EINVAL;
		}
	}
	if (want > HTTP_MAX_BODY_BYTES) {
		unsigned long long left = want;

		while (left > 0 && c->ops->read(c, chunk, sizeof(chunk),
		    &got) == TS_OK && got > 0)
			left -= got < left ? got : left;
		http_error_set(err, 413, "invalid_request_error",
		    "body_too_large", "the body is %llu bytes; the limit is "
		    "%u bytes", want, HTTP_MAX_BODY_BYTES);
		return TS_ELIMIT;
	}
	if (c->unread_len > 0) {
		/* given back by a replay that looked at it first */
		ts_buf_append(body, c->unread, c->unread_len < want ?
		    c->unread_len : (size_t)want);
		c->unread = NULL;
		c->unread_len = 0;
	}
	while (body->len < want) {
		size_t room = want - body->len;

		if (c->ops->read(c, chunk, room < sizeof(chunk) ? room :
		    sizeof(chunk), &got) != TS_OK || got == 0)
			break;
		ts_buf_append(body, chunk, got);
	}
	if (body->len < want) {
		http_error_set(err, 400, "invalid_request_error",
		    "incomplete_body", "the body ended after %zu of the %llu "
		    "bytes that Content-Length announced", body->len, want);
		return TS_EINVAL;
	}
	return TS_OK;
}

enum ts_err
reply_read_json(struct conn *c, struct ts_buf *body, struct http_error *err)
{
	enum ts_err rc = reply_read_body(c, body, err);

	if (rc != TS_OK)
		return rc;
	if (http_json_too_deep(body->p, body->len, HTTP_MAX_JSON_DEPTH)) {
		http_error_too_deep(err);
		return TS_EINVAL;
	}
	if (http_json_too_many(body->p, body->len,
	    HTTP_MAX_JSON_CONTAINERS)) {
		http_error_too_many(err);
		return TS_EINVAL;
	}
	return TS_OK;
}

enum ts_err
reply_json(struct reply *rp, int status, json_t *obj, uint64_t id)
{
	char *s = obj != NULL ? json_dumps(obj,
	    JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	struct ts_buf b;
	enum ts_err rc;

	json_decref(obj);
	if (s == NULL) {
		struct http_error err;

		http_error_set(&err, 500, "server_error", "encode_failed",
		    "the response could not be encoded");
		reply_error(rp, &err, NULL, id);
		return TS_EINVAL;
	}
	ts_buf_init(&b, SIZE_MAX);
	rc = reply_head_buf(rp, &b, status, "application/json", id, NULL);
	if (rc == TS_OK) {
		ts_buf_append(&b, s, strlen(s));
		ts_buf_append(&b, "\n", 1);    /* one line of JSON */
		rc = reply_send(rp, &b);
	}
	ts_buf_free(&b);
	free(s);
	return rc;
}

enum ts_err
reply_send(struct reply *rp, struct ts_buf *b)
{
	struct conn *c = rp->conn;
	enum ts_err rc;

	if (c->hup)
		rc = TS_EHUP;
	else if (b->len > REPLY_INLINE_MAX && c->answer != NULL &&
	    !c->head_only) {
		c->answer(c->threads, c, b);
		return TS_OK;
	} else
		rc = conn_write(c, b->p, b->len);
	ts_buf_reset(b);
	return rc;
}
