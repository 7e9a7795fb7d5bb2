/*
 * proto/jw.c - the dialects' JSON writer (jw.h): strings and integers.
 */
#include "proto/jw.h"

#include <stdio.h>
#include <string.h>

#include "text/utf8.h"

void
jw_escaped(struct jw *w, const char *p, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, run = 0;
	char e[6];

	for (i = 0; i < len && w->rc == TS_OK; i++) {
		unsigned char c = (unsigned char)p[i];
		size_t n = 2;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		jw_raw(w, p + run, i - run);
		run = i + 1;
		e[0] = '\\';
		switch (c) {
		case '"': e[1] = '"'; break;
		case '\\': e[1] = '\\'; break;
		case '\b': e[1] = 'b'; break;
		case '\f': e[1] = 'f'; break;
		case '\n': e[1] = 'n'; break;
		case '\r': e[1] = 'r'; break;
		case '\t': e[1] = 't'; break;
		default:
			e[1] = 'u';
			e[2] = '0';
			e[3] = '0';
			e[4] = hex[c >> 4];
			e[5] = hex[c & 15];
			n = 6;
			break;
		}
		jw_raw(w, e, n);
	}
	jw_raw(w, p + run, len - run);
}

void
jw_str(struct jw *w, const char *p, size_t len)
{
	if (w->rc != TS_OK)
		return;
	if (!utf8_valid(p, len)) {
		w->rc = TS_EINVAL;
		return;
	}
	JW_LIT(w, "\"");
	jw_escaped(w, p, len);
	JW_LIT(w, "\"");
}

void
jw_cstr(struct jw *w, const char *s)
{
	jw_str(w, s, strlen(s));
}

void
jw_int(struct jw *w, long long v)
{
	char d[24];
	int n = snprintf(d, sizeof(d), "%lld", v);

	jw_raw(w, d, (size_t)n);
}

void
jw_u64(struct jw *w, uint64_t v)
{
	char d[24];
	int n = snprintf(d, sizeof(d), "%llu", (unsigned long long)v);

	jw_raw(w, d, (size_t)n);
}
