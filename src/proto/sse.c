/*
 * proto/sse.c - Server-Sent Events encoder (WHATWG HTML 9.2). See sse.h.
 */
#include "proto/sse.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONST_STR_LEN(s) (s), (sizeof(s) - 1)

enum ts_err
sse_encode_data(struct ts_buf *b, const char *data, size_t len)
{
	size_t start = b->len, i = 0;

	/* One "data: " line per line of data; an empty data gives one
	 * empty data line, which a parser turns back into "". */
	for (;;) {
		size_t j = i;

		while (j < len && data[j] != '\n' && data[j] != '\r')
			j++;
		if (ts_buf_append(b, CONST_STR_LEN("data: ")) != TS_OK ||
		    ts_buf_append(b, data + i, j - i) != TS_OK ||
		    ts_buf_append(b, CONST_STR_LEN("\n")) != TS_OK)
			goto limit;
		if (j >= len)
			break;
		/* CRLF is one line end, as in the parser. */
		if (data[j] == '\r' && j + 1 < len && data[j + 1] == '\n')
			j++;
		i = j + 1;
		if (i == len) {
			/* data ends in a line end: one more empty line */
			if (ts_buf_append(b, CONST_STR_LEN("data: \n")) !=
			    TS_OK)
				goto limit;
			break;
		}
	}
	if (ts_buf_append(b, CONST_STR_LEN("\n")) != TS_OK)
		goto limit;
	return TS_OK;
limit:
	b->len = start;
	return TS_ELIMIT;
}

enum ts_err
sse_encode_id(struct ts_buf *b, const char *id, size_t len)
{
	size_t start = b->len;

	if (memchr(id, '\n', len) != NULL || memchr(id, '\r', len) != NULL ||
	    memchr(id, '\0', len) != NULL)
		return TS_EINVAL;
	if (ts_buf_append(b, CONST_STR_LEN("id: ")) != TS_OK ||
	    ts_buf_append(b, id, len) != TS_OK ||
	    ts_buf_append(b, CONST_STR_LEN("\n")) != TS_OK) {
		b->len = start;
		return TS_ELIMIT;
	}
	return TS_OK;
}

enum ts_err
sse_encode_event(struct ts_buf *b, const char *type, const char *data,
    size_t len)
{
	size_t start = b->len, n = strlen(type);
	enum ts_err rc;

	if (n == 0 || strpbrk(type, "\r\n") != NULL)
		return TS_EINVAL;
	if (ts_buf_append(b, CONST_STR_LEN("event: ")) != TS_OK ||
	    ts_buf_append(b, type, n) != TS_OK ||
	    ts_buf_append(b, CONST_STR_LEN("\n")) != TS_OK) {
		b->len = start;
		return TS_ELIMIT;
	}
	if ((rc = sse_encode_data(b, data, len)) != TS_OK)
		b->len = start;
	return rc;
}

enum ts_err
sse_encode_retry(struct ts_buf *b, unsigned long ms)
{
	char line[40];
	int n = snprintf(line, sizeof(line), "retry: %lu\n", ms);

	return ts_buf_append(b, line, (size_t)n);
}

enum ts_err
sse_encode_comment(struct ts_buf *b, const char *text, size_t len)
{
	size_t start = b->len;

	if (memchr(text, '\n', len) != NULL ||
	    memchr(text, '\r', len) != NULL)
		return TS_EINVAL;
	if (ts_buf_append(b, CONST_STR_LEN(": ")) != TS_OK ||
	    ts_buf_append(b, text, len) != TS_OK ||
	    ts_buf_append(b, CONST_STR_LEN("\n\n")) != TS_OK) {
		b->len = start;
		return TS_ELIMIT;
	}
	return TS_OK;
}

/*
 * Dumps `obj` compactly and appends it as one event. Takes the reference.
 * JSON_COMPACT never emits a raw LF or CR (jansson escapes control
 * characters in strings), so the event is a single data line.
 */
static enum ts_err
encode_json_event(struct ts_buf *b, json_t *obj)
{
	enum ts_err rc;
	char *s;

	if (obj == NULL)
		return TS_EINVAL;
	s = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	if (s == NULL)
		return TS_ENOMEM;
	rc = sse_encode_data(b, s, strlen(s));
	free(s);
	return rc;
}

/*
 * The hot path (one call a token event): jansson escapes the string alone
 * into a stack buffer (json_dumpb, JSON_ENCODE_ANY), and the object around
 * it is a literal, so a short token costs one string allocation instead of
 * an object, a string and a dump. The bytes are the same as json_dumps of
 * {"token": text} with JSON_COMPACT.
 */
enum ts_err
sse_encode_token(struct ts_buf *b, const char *text, size_t len)
{
	char stack[512];
	json_t *str = json_stringn(text, len);
	size_t start = b->len, n;
	enum ts_err rc;

	if (str == NULL)
		return TS_EINVAL;       /* invalid UTF-8 */
	n = json_dumpb(str, stack, sizeof(stack), JSON_ENCODE_ANY);
	if (n == 0 || n > sizeof(stack)) {
		/* a long token (or text): the general path */
		return encode_json_event(b, json_pack("{s:o}", "token", str));
	}
	json_decref(str);
	/* a JSON string has no raw line end: one data line */
	if (ts_buf_append(b, CONST_STR_LEN("data: {\"token\":")) != TS_OK ||
	    ts_buf_append(b, stack, n) != TS_OK ||
	    ts_buf_append(b, CONST_STR_LEN("}\n\n")) != TS_OK)
		rc = TS_ELIMIT;
	else
		rc = TS_OK;
	if (rc != TS_OK)
		b->len = start;
	return rc;
}

enum ts_err
sse_encode_done(struct ts_buf *b)
{
	return sse_encode_data(b, CONST_STR_LEN("[DONE]"));
}

enum ts_err
sse_encode_error(struct ts_buf *b, const char *message, const char *type,
    const char *code)
{
	return encode_json_event(b, json_pack("{s:{s:s,s:s,s:s*}}", "error",
	    "message", message, "type", type, "code", code));
}
