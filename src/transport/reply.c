/*
 * transport/reply.c - response heads, JSON answers and errors (reply.h).
 */
#include "transport/reply.h"

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

/* Head and body of an error, made by `encode` (either shape). */
static void
error_with(struct reply *rp, const struct http_error *err,
    const char *extra, uint64_t id,
    enum ts_err (*encode)(const struct http_error *, struct ts_buf *))
{
	struct ts_buf b;

	ts_buf_init(&b, 64 * 1024);
	if (reply_head_buf(rp, &b, err->status, "application/json", id,
	    extra) == TS_OK && encode(err, &b) == TS_OK &&
	    ts_buf_append(&b, "\n", 1) == TS_OK)
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
		rc = conn_write(rp->conn, b.p, b.len);
	}
	ts_buf_free(&b);
	free(s);
	return rc;
}
