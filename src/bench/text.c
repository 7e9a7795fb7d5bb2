/*
 * text.c - network text made fit for a terminal or a message (text.h).
 */
#include "bench/text.h"

#include <stdlib.h>
#include <string.h>

#include "common/ts.h"

char *
text_sanitize(const char *s, size_t n)
{
	size_t i, keep = n > TEXT_MSG_MAX ? TEXT_MSG_MAX : n;
	char *out = xmalloc(keep + 4);

	for (i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)s[i];

		out[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	if (keep < n) {
		memcpy(out + keep, "...", 3);
		keep += 3;
	}
	out[keep] = '\0';
	return out;
}

/* Each of message, type and code is optional; the line names those
 * that are there. */
char *
text_error(json_t *root)
{
	json_t *err, *msg, *type, *code;
	char *m = NULL, *t = NULL, *out = NULL, cbuf[64] = "";
	size_t len;

	err = json_is_object(root) ? json_object_get(root, "error") : NULL;
	if (err == NULL)
		return NULL;
	msg = json_is_string(err) ? err : json_object_get(err, "message");
	type = json_object_get(err, "type");
	code = json_object_get(err, "code");
	m = json_is_string(msg) ? text_sanitize(json_string_value(msg),
	    json_string_length(msg)) : xstrndup("(no message)", 12);
	if (json_is_string(type))
		t = text_sanitize(json_string_value(type),
		    json_string_length(type));
	if (json_is_integer(code))
		snprintf(cbuf, sizeof(cbuf), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(code));
	else if (json_is_string(code))
		snprintf(cbuf, sizeof(cbuf), "%.40s", json_string_value(code));
	len = strlen(m) + (t ? strlen(t) : 0) + strlen(cbuf) + 32;
	out = xmalloc(len);
	if (t != NULL && cbuf[0] != '\0')
		snprintf(out, len, "%s (type %s, code %s)", m, t, cbuf);
	else if (t != NULL)
		snprintf(out, len, "%s (type %s)", m, t);
	else if (cbuf[0] != '\0')
		snprintf(out, len, "%s (code %s)", m, cbuf);
	else
		snprintf(out, len, "%s", m);
	/* a string "code" may hold control bytes: sanitise the whole line */
	for (len = 0; out[len] != '\0'; len++)
		if ((unsigned char)out[len] < 0x20)
			out[len] = '?';
	free(m);
	free(t);
	return out;
}

char *
text_error_body(const struct client_body *b)
{
	json_error_t jerr;
	json_t *root;
	char *txt;

	if (b->buf.len == 0 || b->truncated)
		return NULL;
	root = json_loadb(b->buf.p, b->buf.len, JSON_ALLOW_NUL, &jerr);
	txt = text_error(root);
	json_decref(root);
	return txt;
}

void
text_print_escaped(FILE *f, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n')
			fputs("\\n", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}
