/*
 * proto/http.c - query and JSON request parsing, limits, error bodies. See
 * http.h. Nothing here touches a socket; the server (src/server/) does the I/O.
 */
#include "proto/http.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_TYPE "invalid_request_error"

void
http_gen_request_free(struct http_gen_request *r)
{
	if (r == NULL)
		return;
	free(r->prompt);
	r->prompt = NULL;
	r->prompt_len = 0;
	free(r->last_event_id);
	r->last_event_id = NULL;
	r->last_event_id_len = 0;
}

static void
request_defaults(struct http_gen_request *r)
{
	r->prompt = NULL;
	r->prompt_len = 0;
	r->max_tokens = HTTP_DEFAULT_MAX_TOKENS;
	r->prefill_ms = -1;
	r->tpot_ms = -1;
	r->error_after = -1;
	r->last_event_id = NULL;
	r->last_event_id_len = 0;
}

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

int
http_hex_digit(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

enum ts_err
http_form_decode(const char *s, size_t len, char *out, size_t *out_len,
    size_t *bad_at)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '+') {
			out[n++] = ' ';
		} else if (c == '%') {
			int hi, lo;

			if (len - i < 3 ||
			    (hi = http_hex_digit((unsigned char)s[i + 1])) < 0 ||
			    (lo = http_hex_digit((unsigned char)s[i + 2])) < 0) {
				*bad_at = i;
				return TS_EINVAL;
			}
			out[n++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			out[n++] = (char)c;
		}
	}
	*out_len = n;
	return TS_OK;
}

/*
 * Parses a non-negative decimal integer no larger than `max` from
 * (s, len): digits only. Returns 0 and stores it, or -1 (not a number),
 * -2 (negative), -3 (over max).
 */
static int
parse_uint(const char *s, size_t len, long max, long *out)
{
	long v = 0;
	size_t i = 0;

	if (len > 0 && s[0] == '-') {
		/* "-<digits>" is negative; anything else is not a number.
		 * (s, len) is not NUL-terminated: no str* functions here. */
		for (i = 1; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			;
		return len > 1 && i == len ? -2 : -1;
	}
	if (len == 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (max - (s[i] - '0')) / 10)
			return -3;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* The integer parameters both request forms share, with their limits. */
struct int_param {
	const char *name;
	long min, max;
	const char *code;
};

static const struct int_param int_params[] = {
	{ "max_tokens", 0, HTTP_MAX_TOKENS_CAP, "invalid_max_tokens" },
	{ "prefill_ms", 0, HTTP_MAX_PREFILL_MS, "invalid_prefill_ms" },
	{ "tpot_ms", 0, HTTP_MAX_TPOT_MS, "invalid_tpot_ms" },
	{ "error_after", 0, HTTP_MAX_TOKENS_CAP, "invalid_error_after" },
};
#define N_INT_PARAMS (sizeof(int_params) / sizeof(int_params[0]))

static void
store_int(struct http_gen_request *req, size_t which, long v)
{
	switch (which) {
	case 0: req->max_tokens = (uint32_t)v; break;
	case 1: req->prefill_ms = (int32_t)v; break;
	case 2: req->tpot_ms = (int32_t)v; break;
	case 3: req->error_after = (int32_t)v; break;
	}
}

static void
range_error(struct http_error *err, const struct int_param *p)
{
	http_error_set(err, 400, ERR_TYPE, p->code,
	    "%s must be an integer from %ld to %ld", p->name, p->min, p->max);
}

enum ts_err
http_parse_query(const char *qs, size_t len, struct http_gen_request *req,
    struct http_error *err)
{
	unsigned seen = 0;              /* bit per known parameter */
	size_t pos = 0, nparams = 0;
	char *buf = NULL, *nbuf = NULL;
	int known;
	enum ts_err rc = TS_EINVAL;

	request_defaults(req);
	buf = xmalloc(len + 1);
	nbuf = xmalloc(len + 1);
	while (pos < len) {
		const char *pair = qs + pos, *eq;
		size_t plen, nlen, vlen, bad;
		char name[128];
		size_t k;

		{
			const char *amp = memchr(pair, '&', len - pos);

			plen = amp ? (size_t)(amp - pair) : len - pos;
		}
		pos += plen + 1;
		if (plen == 0)
			continue;       /* "a=1&&b=2" */
		if (++nparams > HTTP_MAX_QUERY_PARAMS) {
			http_error_set(err, 400, ERR_TYPE, "too_many_params",
			    "the query string has more than %d parameters",
			    HTTP_MAX_QUERY_PARAMS);
			goto out;
		}
		eq = memchr(pair, '=', plen);
		nlen = eq ? (size_t)(eq - pair) : plen;
		/* Every name and value is decoded, known or not, so a
		 * malformed escape is a 400 wherever it stands. */
		if (http_form_decode(pair, nlen, nbuf, &nlen, &bad) != TS_OK) {
			http_error_set(err, 400, ERR_TYPE,
			    "invalid_percent_encoding",
			    "malformed percent escape in a parameter name at "
			    "byte %zu of the name: '%%' must be followed by "
			    "two hex digits", bad);
			goto out;
		}
		/* A long name, or one with NUL, is no name we know. */
		known = nlen < sizeof(name) && memchr(nbuf, '\0', nlen) == NULL;
		if (known) {
			memcpy(name, nbuf, nlen);
			name[nlen] = '\0';
		} else {
			strcpy(name, "(unknown)");
		}
		{
			const char *val = eq ? eq + 1 : pair + plen;
			size_t dlen;

			vlen = (size_t)((pair + plen) - val);
			if (http_form_decode(val, vlen, buf, &dlen, &bad) !=
			    TS_OK) {
				http_error_set(err, 400, ERR_TYPE,
				    "invalid_percent_encoding",
				    "malformed percent escape in parameter "
				    "'%s' at byte %zu of its value: '%%' must "
				    "be followed by two hex digits",
				    name, bad);
				goto out;
			}
			vlen = dlen;
		}
		if (!known)
			continue;
		if (strcmp(name, "last_event_id") == 0) {
			if (seen & 1u << (N_INT_PARAMS + 1))
				goto twice;
			seen |= 1u << (N_INT_PARAMS + 1);
			req->last_event_id = xstrndup(buf, vlen);
			req->last_event_id_len = vlen;
			continue;
		}
		if (strcmp(name, "prompt") == 0) {
			if (seen & 1u << N_INT_PARAMS)
				goto twice;
			seen |= 1u << N_INT_PARAMS;
			req->prompt = xstrndup(buf, vlen);
			req->prompt_len = vlen;
			continue;
		}
		for (k = 0; k < N_INT_PARAMS; k++) {
			long v;
			int r;

			if (strcmp(name, int_params[k].name) != 0)
				continue;
			if (seen & 1u << k)
				goto twice;
			seen |= 1u << k;
			r = parse_uint(buf, vlen, int_params[k].max, &v);
			if (r == -2) {
				http_error_set(err, 400, ERR_TYPE,
				    int_params[k].code,
				    "%s must not be negative",
				    int_params[k].name);
				goto out;
			}
			if (r != 0) {
				range_error(err, &int_params[k]);
				goto out;
			}
			store_int(req, k, v);
			break;
		}
		continue;
twice:
		http_error_set(err, 400, ERR_TYPE, "duplicate_param",
		    "parameter '%s' is given more than once", name);
		goto out;
	}
	if (req->prompt == NULL) {
		http_error_set(err, 400, ERR_TYPE, "missing_prompt",
		    "the query string must have a 'prompt' parameter");
		goto out;
	}
	rc = TS_OK;
out:
	free(buf);
	free(nbuf);
	if (rc != TS_OK)
		http_gen_request_free(req);
	return rc;
}

enum ts_err
http_parse_json(const char *body, size_t len, struct http_gen_request *req,
    struct http_error *err)
{
	json_error_t jerr;
	json_t *root, *v;
	enum ts_err rc = TS_EINVAL;
	size_t k;

	request_defaults(req);
	if (len == 0) {
		http_error_set(err, 400, ERR_TYPE, "empty_body",
		    "the request body is empty: send a JSON object such as "
		    "{\"prompt\":\"hello\",\"max_tokens\":20}");
		return TS_EINVAL;
	}
	/* Duplicate keys are refused, as duplicate query parameters are. */
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &jerr);
	if (root == NULL) {
		http_error_set(err, 400, ERR_TYPE, "invalid_json",
		    "the body is not valid JSON: %s at line %d, column %d",
		    jerr.text, jerr.line, jerr.column);
		return TS_EINVAL;
	}
	if (!json_is_object(root)) {
		http_error_set(err, 400, ERR_TYPE, "invalid_json",
		    "the body must be a JSON object");
		goto out;
	}
	v = json_object_get(root, "prompt");
	if (v == NULL || json_is_null(v)) {
		http_error_set(err, 400, ERR_TYPE, "missing_prompt",
		    "the body must have a \"prompt\" string");
		goto out;
	}
	if (!json_is_string(v)) {
		http_error_set(err, 400, ERR_TYPE, "invalid_prompt",
		    "\"prompt\" must be a string");
		goto out;
	}
	for (k = 0; k < N_INT_PARAMS; k++) {
		json_int_t iv;

		v = json_object_get(root, int_params[k].name);
		if (v == NULL || json_is_null(v))
			continue;
		if (!json_is_integer(v)) {
			range_error(err, &int_params[k]);
			goto out;
		}
		iv = json_integer_value(v);
		if (iv < 0) {
			http_error_set(err, 400, ERR_TYPE, int_params[k].code,
			    "%s must not be negative", int_params[k].name);
			goto out;
		}
		if (iv > int_params[k].max) {
			range_error(err, &int_params[k]);
			goto out;
		}
		store_int(req, k, (long)iv);
	}
	v = json_object_get(root, "prompt");
	req->prompt_len = json_string_length(v);
	req->prompt = xstrndup(json_string_value(v), req->prompt_len);
	rc = TS_OK;
out:
	json_decref(root);
	return rc;
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
	}
	return "";
}
