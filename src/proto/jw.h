/*
 * proto/jw.h - a small JSON writer that appends to a caller's ts_buf,
 * shared by the dialects' encoders (openai/, anthropic/, ollama/): no
 * trees, a value costs its bytes. The first error sticks: every later
 * call does nothing, and jw_end takes back all that was appended since
 * jw_begin, so a failed object leaves the buffer as it was.
 *
 * Strings are escaped as jansson 2.14's dump_string escapes them without
 * flags (dump.c), so the bytes equal json_dumpb's with JSON_COMPACT for
 * the same values: " \ and the control characters, \b \f \n \r \t
 * short, the others \u00XX with upper-case hex; everything else (DEL,
 * U+2028, any UTF-8) as it is. No I/O.
 */
#ifndef TS_PROTO_JW_H
#define TS_PROTO_JW_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ts.h"

/* One run of writes into b: start is b->len at jw_begin; rc the first
 * error (TS_ELIMIT from ts_buf_append, TS_EINVAL from a string that is
 * not UTF-8), TS_OK while there is none. */
struct jw {
	struct ts_buf *b;
	size_t start;
	enum ts_err rc;
};

/* Starts a run at b's end. b is the caller's, borrowed until jw_end. */
static inline void
jw_begin(struct jw *w, struct ts_buf *b)
{
	w->b = b;
	w->start = b->len;
	w->rc = TS_OK;
}

/* Ends the run: TS_OK, or its first error with b cut back to its length
 * at jw_begin (and NUL-terminated there, as ts_buf_append leaves it). */
static inline enum ts_err
jw_end(struct jw *w)
{
	if (w->rc != TS_OK) {
		w->b->len = w->start;
		if (w->b->p != NULL)
			w->b->p[w->start] = '\0';
	}
	return w->rc;
}

/* Appends len bytes of p as they are (JSON the caller has made). */
static inline void
jw_raw(struct jw *w, const char *p, size_t len)
{
	if (w->rc == TS_OK)
		w->rc = ts_buf_append(w->b, p, len);
}

/* jw_raw of a string literal. */
#define JW_LIT(w, s) jw_raw((w), (s), sizeof(s) - 1)

/*
 * The len bytes of p as the inside of a JSON string (no quotes), escaped
 * as above. p must be UTF-8: not checked (jw_str checks).
 */
void jw_escaped(struct jw *w, const char *p, size_t len);

/*
 * A JSON string, quoted and escaped, of the len bytes of p (NUL bytes
 * included, as \u0000). Not UTF-8 (RFC 3629, text/utf8.h's utf8_valid,
 * which accepts what jansson's utf8_check_string accepts): TS_EINVAL,
 * the run's error, nothing appended.
 */
void jw_str(struct jw *w, const char *p, size_t len);

/* jw_str of a NUL-terminated string. */
void jw_cstr(struct jw *w, const char *s);

/* An integer in decimal ("%lld", as jansson dumps a json_integer). */
void jw_int(struct jw *w, long long v);

/* An unsigned integer in decimal ("%llu"). */
void jw_u64(struct jw *w, uint64_t v);

#endif /* TS_PROTO_JW_H */
