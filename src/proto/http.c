/*
 * proto/http.c - query and JSON request parsing (the lab endpoints), the
 * JSON nesting limit. See
 * http.h. Nothing here touches a socket; the server (src/server/) does the I/O.
 */
#include "proto/http.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
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
	knobs_defaults(&r->knobs);
	r->last_event_id = NULL;
	r->last_event_id_len = 0;
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

/* The error of a max_tokens that is negative, or else not an integer
 * from 0 to the cap: the one integer of the lab's requests that is not a
 * knob (the /v1 endpoints read their own, with other defaults). */
static void
max_tokens_error(struct http_error *err, int negative)
{
	if (negative)
		http_error_set(err, 400, ERR_TYPE, "invalid_max_tokens",
		    "max_tokens must not be negative");
	else
		http_error_set(err, 400, ERR_TYPE, "invalid_max_tokens",
		    "max_tokens must be an integer from 0 to %d",
		    HTTP_MAX_TOKENS_CAP);
}

/*
 * Reads the query value (s, len) of max_tokens (kn NULL) or of knob kn
 * into req. TS_OK, or TS_EINVAL with *err filled: a negative number is
 * "must not be negative", anything else not a number in range is out of
 * range, under the knob's code (knobs.h) or invalid_max_tokens.
 */
static enum ts_err
query_int(const char *s, size_t len, const struct knob *kn,
    struct http_gen_request *req, struct http_error *err)
{
	long v;
	int r = parse_uint(s, len, kn != NULL ? kn->max : HTTP_MAX_TOKENS_CAP,
	    &v);

	if (kn != NULL) {
		if (r == -1 || r == -3) {
			knobs_range_error(kn, err);
			return TS_EINVAL;
		}
		/* -2, negative: knobs_set refuses it with its message */
		return knobs_set(kn, &req->knobs, r == -2 ? -1 : v, err);
	}
	if (r != 0) {
		max_tokens_error(err, r == -2);
		return TS_EINVAL;
	}
	req->max_tokens = (uint32_t)v;
	return TS_OK;
}

enum ts_err
http_parse_query(const char *qs, size_t len, struct http_gen_request *req,
    struct http_error *err)
{
	unsigned seen = 0;              /* bit per known parameter: the
					 * knobs by row, then max_tokens,
					 * prompt, last_event_id */
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
		const struct knob *kn;
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
			if (seen & 1u << (KNOBS_N + 2))
				goto twice;
			seen |= 1u << (KNOBS_N + 2);
			req->last_event_id = xstrndup(buf, vlen);
			req->last_event_id_len = vlen;
			continue;
		}
		if (strcmp(name, "prompt") == 0) {
			if (seen & 1u << (KNOBS_N + 1))
				goto twice;
			seen |= 1u << (KNOBS_N + 1);
			req->prompt = xstrndup(buf, vlen);
			req->prompt_len = vlen;
			continue;
		}
		kn = knobs_find(name, strlen(name));
		if (kn == NULL && strcmp(name, "max_tokens") != 0)
			continue;
		k = kn != NULL ? (size_t)(kn - knobs_table) : KNOBS_N;
		if (seen & 1u << k)
			goto twice;
		seen |= 1u << k;
		if (query_int(buf, vlen, kn, req, err) != TS_OK)
			goto out;
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

/*
 * Scans JSON text (p, len) for its arrays and objects (brackets inside
 * strings do not count): 1 as soon as more than max_depth are open at
 * once or more than max_count have opened in all, else 0.
 */
static int
json_over(const char *p, size_t len, int max_depth, size_t max_count)
{
	int depth = 0, in_str = 0;
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		char c = p[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"') {
			in_str = 1;
		} else if (c == '[' || c == '{') {
			if (++depth > max_depth || ++n > max_count)
				return 1;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return 0;
}

int
http_json_too_deep(const char *p, size_t len, int max)
{
	return json_over(p, len, max, SIZE_MAX);
}

int
http_json_too_many(const char *p, size_t len, size_t max)
{
	return json_over(p, len, INT_MAX, max);
}

void
http_error_too_many(struct http_error *err)
{
	http_error_set(err, 400, ERR_TYPE, "invalid_json",
	    "The body holds more than %d arrays and objects, tokstream's "
	    "limit.", HTTP_MAX_JSON_CONTAINERS);
}

void
http_error_too_deep(struct http_error *err)
{
	http_error_set(err, 400, ERR_TYPE, "invalid_json",
	    "The body nests arrays and objects more than %d levels deep, "
	    "tokstream's limit.", HTTP_MAX_JSON_DEPTH);
}

enum ts_err
http_parse_json(const char *body, size_t len, struct http_gen_request *req,
    struct http_error *err)
{
	json_error_t jerr;
	json_t *root, *v;
	enum ts_err rc = TS_EINVAL;

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
	v = json_object_get(root, "max_tokens");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > HTTP_MAX_TOKENS_CAP) {
			max_tokens_error(err, json_is_integer(v) &&
			    json_integer_value(v) < 0);
			goto out;
		}
		req->max_tokens = (uint32_t)json_integer_value(v);
	}
	if (knobs_from_json(root, &req->knobs, err) != TS_OK)
		goto out;
	v = json_object_get(root, "prompt");
	req->prompt_len = json_string_length(v);
	req->prompt = xstrndup(json_string_value(v), req->prompt_len);
	rc = TS_OK;
out:
	json_decref(root);
	return rc;
}
