/*
 * proto/http_error.c - refusals and their JSON error bodies (see
 * http_error.h).
 */
#include "proto/http_error.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
http_error_set(struct http_error *err, int status, const char *type,
    const char *code, const char *fmt, ...)
{
	va_list ap;

	err->status = status;
	err->type = type;
	err->code = code;
	err->param[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

void
http_error_set_param(struct http_error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->param, sizeof(err->param), fmt, ap);
	va_end(ap);
}

/*
 * Appends `o` as compact JSON (one line) to b and drops the reference;
 * o NULL (a failed json_pack) is TS_ENOMEM. Returns what
 * ts_buf_append() returns, or TS_ENOMEM.
 */
static enum ts_err
append_compact(struct ts_buf *b, json_t *o)
{
	char *s;
	enum ts_err rc;

	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (s == NULL)
		return TS_ENOMEM;
	rc = ts_buf_append(b, s, strlen(s));
	free(s);
	return rc;
}

enum ts_err
http_error_json(const struct http_error *err, struct ts_buf *b)
{
	json_t *o;

	o = json_pack("{s:{s:s,s:s,s:s*}}", "error", "message", err->message,
	    "type", err->type ? err->type : "server_error", "code",
	    err->code);
	if (o == NULL) {
		/* message was not UTF-8 (it can quote input): say less */
		o = json_pack("{s:{s:s,s:s,s:s*}}", "error", "message",
		    "invalid request", "type",
		    err->type ? err->type : "server_error", "code", err->code);
	}
	return append_compact(b, o);
}

enum ts_err
http_error_json_openai(const struct http_error *err, struct ts_buf *b)
{
	const char *type = err->type ? err->type : "server_error";
	json_t *o, *param;

	/* Both strings can quote input (param names an array index at
	 * most, but be safe): a non-UTF-8 one becomes null or generic. */
	param = err->param[0] != '\0' ? json_string(err->param) : NULL;
	if (param == NULL)
		param = json_null();
	o = json_pack("{s:{s:s,s:s,s:O,s:s?}}", "error", "message",
	    err->message, "type", type, "param", param, "code", err->code);
	if (o == NULL)
		o = json_pack("{s:{s:s,s:s,s:O,s:s?}}", "error", "message",
		    "invalid request", "type", type, "param", param, "code",
		    err->code);
	json_decref(param);
	return append_compact(b, o);
}

const char *
http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Payload Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 421: return "Misdirected Request";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 529: return "Site Is Overloaded";   /* Anthropic's overloaded */
	}
	return "";
}
