/*
 * proto/http_error.h - why a request was refused, and the JSON error
 * bodies every dialect sends: the lab's {"error":{"message","type",
 * "code"}} and the OpenAI API's, which adds "param" (OpenAI's OpenAPI
 * spec, ErrorResponse). No I/O: bodies are appended to a caller's buffer.
 */
#ifndef TS_PROTO_HTTP_ERROR_H
#define TS_PROTO_HTTP_ERROR_H

#include "common/buf.h"
#include "common/ts.h"

/* Why a request was refused: HTTP status, OpenAI-style type and code, and
 * a message that says what is wrong. `param` names the request field at
 * fault for the OpenAI API's errors ("messages[0].role"); it is "" when
 * none is, and only http_error_json_openai() emits it. */
struct http_error {
	int status;              /* 400, 404, 405, 413, 500, 503 */
	const char *type;        /* "invalid_request_error", ... (static) */
	const char *code;        /* "invalid_max_tokens", ... (static) */
	char message[256];
	char param[64];          /* "" or the field at fault, NUL-terminated */
};

/*
 * Fills *err and clears its param. `fmt` is printf-style; the message is
 * truncated to fit.
 */
void http_error_set(struct http_error *err, int status, const char *type,
    const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/*
 * Sets err->param, the name of the field at fault (printf-style,
 * truncated to fit). Call it after http_error_set, which clears it.
 */
void http_error_set_param(struct http_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Appends the JSON error body {"error":{"message","type","code"}} for
 * *err to *b (compact, no trailing newline): the lab endpoints' shape,
 * which never carries "param". Returns ts_buf_append's code.
 */
enum ts_err http_error_json(const struct http_error *err, struct ts_buf *b);

/*
 * Appends the OpenAI API's full error body
 * {"error":{"message","type","param","code"}} for *err to *b (compact, no
 * trailing newline); "param" is null when err->param is "", "code" null
 * when err->code is NULL. For the /v1 endpoints. A message that is not
 * UTF-8 (it can quote input) is replaced by "invalid request". Returns
 * ts_buf_append's code, or TS_ENOMEM.
 */
enum ts_err http_error_json_openai(const struct http_error *err,
    struct ts_buf *b);

/* The reason phrase of an HTTP status ("Bad Request"), "" if unknown. */
const char *http_reason(int status);

#endif /* TS_PROTO_HTTP_ERROR_H */
