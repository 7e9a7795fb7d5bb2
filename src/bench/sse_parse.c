/*
 * sse_parse.c - an incremental Server-Sent Events parser (see sse_parse.h).
 *
 * Follows WHATWG HTML, section 9.2.6 "Interpreting an event stream". The
 * parser is a byte-driven state machine; its state lives in struct
 * sse_parser so that a feed may end anywhere, even inside a BOM or between
 * the CR and the LF of a CRLF:
 *
 *  BOM 0..2   bom_state < SSE_BOM_DONE: at the very start of the stream,
 *             that many bytes of the UTF-8 BOM (EF BB BF) have matched.
 *             A mismatch replays the matched bytes as the start of the
 *             first line (they were not a BOM, so they are line text).
 *  LINE       bom_state == SSE_BOM_DONE, saw_cr == 0: collecting the bytes
 *             of the current line in `line` until a CR or an LF.
 *  AFTER CR   saw_cr == 1: the previous line ended in CR; if the next byte
 *             is LF it completes that CRLF and is skipped, even when it
 *             arrives in the next feed.
 *  FAILED     bom_state == SSE_FAILED: TS_ELIMIT was returned; every later
 *             feed returns TS_ELIMIT again without looking at its bytes.
 *
 * A complete line is interpreted at once (field, comment or dispatch);
 * the data, event type and last event ID buffers carry over between lines.
 */
#include "bench/sse_parse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* bom_state values after the 0..2 "bytes of the BOM matched" states. */
#define SSE_BOM_DONE 3 /* BOM skipped or ruled out: plain line bytes */
#define SSE_FAILED (-1) /* a limit was hit: the parser is unusable */

/* First capacity of a buffer; it then doubles up to what is needed. */
#define SSE_BUF_MIN 64

static const char sse_bom[] = {'\xEF', '\xBB', '\xBF'};

/*
 * Makes room for `need` bytes in a growable buffer. Callers have already
 * checked `need` against max_bytes, so growth is bounded by it. Aborts on
 * out of memory (xrealloc).
 */
static void
sse_buf_reserve(char **buf, size_t *cap, size_t need)
{
	size_t ncap;

	if (need <= *cap)
		return;
	ncap = *cap ? *cap : SSE_BUF_MIN;
	while (ncap < need)
		ncap = ncap > (size_t)-1 / 2 ? need : ncap * 2;
	*buf = xrealloc(*buf, ncap);
	*cap = ncap;
}

/* Replaces the contents of a growable buffer with (src, n); copies. */
static void
sse_buf_set(char **buf, size_t *len, size_t *cap, const char *src, size_t n)
{
	sse_buf_reserve(buf, cap, n);
	if (n > 0)
		memcpy(*buf, src, n);
	*len = n;
}

/* Puts the parser in the FAILED state and returns TS_ELIMIT. */
static enum ts_err
sse_fail(struct sse_parser *p)
{
	p->bom_state = SSE_FAILED;
	return TS_ELIMIT;
}

/*
 * Appends (src, n) to the incomplete line. Returns TS_ELIMIT when the line
 * would grow past max_bytes (the line terminator is not counted), else
 * TS_OK.
 */
static enum ts_err
sse_line_append(struct sse_parser *p, const char *src, size_t n)
{
	if (n > p->max_bytes || p->line_len > p->max_bytes - n)
		return TS_ELIMIT;
	sse_buf_reserve(&p->line, &p->line_cap, p->line_len + n);
	if (n > 0)
		memcpy(p->line + p->line_len, src, n);
	p->line_len += n;
	return TS_OK;
}

/* True when the field name (name, len) is exactly the literal `lit`. */
static int
sse_name_is(const char *name, size_t len, const char *lit)
{
	return len == strlen(lit) && memcmp(name, lit, len) == 0;
}

/*
 * Dispatches the pending event on an empty line (WHATWG "dispatch the
 * event"): nothing when the data buffer is empty; otherwise the data
 * without its final LF, the type ("message" if none was given) and the
 * last event ID. The data and type buffers are reset in every case; the
 * last event ID persists. Returns the callback's result.
 */
static enum ts_err
sse_dispatch(struct sse_parser *p)
{
	struct sse_event ev;
	enum ts_err rc = TS_OK;

	if (p->data_len > 0 && p->on_event != NULL) {
		if (p->type_len > 0) {
			ev.type = p->type;
			ev.type_len = p->type_len;
		} else {
			ev.type = "message";
			ev.type_len = strlen("message");
		}
		ev.data = p->data;
		ev.data_len = p->data_len - 1;
		ev.id = p->id_len > 0 ? p->id : "";
		ev.id_len = p->id_len;
		rc = p->on_event(p->ud, &ev);
	}
	p->data_len = 0;
	p->type_len = 0;
	return rc;
}

/*
 * Parses the value of a "retry" field: ASCII digits only (WHATWG: anything
 * else, an empty value included, is ignored). Saturates at LONG_MAX.
 * Returns 1 and sets *ms on success, 0 to ignore the field.
 */
static int
sse_parse_retry(const char *v, size_t len, long *ms)
{
	long n = 0;
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++)
		if (v[i] < '0' || v[i] > '9')
			return 0;
	for (i = 0; i < len; i++) {
		if (n > (LONG_MAX - (v[i] - '0')) / 10) {
			n = LONG_MAX;
			break;
		}
		n = n * 10 + (v[i] - '0');
	}
	*ms = n;
	return 1;
}

/*
 * Processes one field (WHATWG "process the field"). Unknown names are
 * ignored. Returns TS_ELIMIT, and enters FAILED, when "data" would grow the
 * data buffer (value plus its LF) past max_bytes; else TS_OK.
 */
static enum ts_err
sse_field(struct sse_parser *p, const char *name, size_t name_len,
    const char *value, size_t value_len)
{
	if (sse_name_is(name, name_len, "data")) {
		if (value_len >= p->max_bytes ||
		    p->data_len > p->max_bytes - value_len - 1)
			return sse_fail(p);
		sse_buf_reserve(&p->data, &p->data_cap,
		    p->data_len + value_len + 1);
		if (value_len > 0)
			memcpy(p->data + p->data_len, value, value_len);
		p->data_len += value_len;
		p->data[p->data_len++] = '\n';
	} else if (sse_name_is(name, name_len, "event")) {
		sse_buf_set(&p->type, &p->type_len, &p->type_cap, value,
		    value_len);
	} else if (sse_name_is(name, name_len, "id")) {
		if (memchr(value, '\0', value_len) == NULL)
			sse_buf_set(&p->id, &p->id_len, &p->id_cap, value,
			    value_len);
	} else if (sse_name_is(name, name_len, "retry")) {
		(void)sse_parse_retry(value, value_len, &p->retry_ms);
	}
	return TS_OK;
}

/*
 * Interprets one complete line, without its terminator (WHATWG: empty line
 * dispatches; ':' starts a comment; otherwise "name:value" with one leading
 * space of the value stripped, or a bare name with an empty value).
 * Returns TS_OK, TS_ELIMIT (FAILED entered) or the event callback's result
 * (a callback's TS_ELIMIT does not enter FAILED).
 */
static enum ts_err
sse_line(struct sse_parser *p, const char *line, size_t len)
{
	const char *colon, *value;
	size_t name_len, value_len;

	if (len == 0)
		return sse_dispatch(p);
	if (line[0] == ':') {
		if (p->on_comment != NULL)
			p->on_comment(p->ud, line + 1, len - 1);
		return TS_OK;
	}
	colon = memchr(line, ':', len);
	if (colon != NULL) {
		name_len = (size_t)(colon - line);
		value = colon + 1;
		value_len = len - name_len - 1;
		if (value_len > 0 && value[0] == ' ') {
			value++;
			value_len--;
		}
	} else {
		name_len = len;
		value = line + len;
		value_len = 0;
	}
	return sse_field(p, line, name_len, value, value_len);
}

void
sse_parser_init(struct sse_parser *p, sse_event_cb on_event,
    sse_comment_cb on_comment, void *ud)
{
	memset(p, 0, sizeof(*p));
	p->on_event = on_event;
	p->on_comment = on_comment;
	p->ud = ud;
	p->retry_ms = -1;
	p->max_bytes = SSE_PARSE_DEFAULT_MAX;
	p->saw_cr = 0;
	p->bom_state = 0;
}

/*
 * Runs the state machine described at the top of this file over (buf,
 * len). A line found whole inside `buf` is interpreted in place; only a
 * line cut by the end of a feed is copied into `line`. Returns TS_OK,
 * TS_ELIMIT (FAILED from then on) or a callback's result, in which case
 * the bytes after the line that dispatched the event are not consumed.
 */
enum ts_err
sse_parser_feed(struct sse_parser *p, const char *buf, size_t len)
{
	const char *line;
	size_t i = 0, j, n;
	enum ts_err rc;

	if (p->bom_state == SSE_FAILED)
		return TS_ELIMIT;

	/* BOM 0..2: match a leading BOM, maybe across feeds. */
	while (p->bom_state < SSE_BOM_DONE && i < len) {
		if (buf[i] == sse_bom[p->bom_state]) {
			p->bom_state++;
			i++;
			continue;
		}
		/* Not a BOM after all: its bytes begin the first line. */
		rc = sse_line_append(p, sse_bom, (size_t)p->bom_state);
		p->bom_state = SSE_BOM_DONE;
		if (rc != TS_OK)
			return sse_fail(p);
	}

	while (i < len) {
		/* AFTER CR: an LF here is the second half of a CRLF. */
		if (p->saw_cr) {
			p->saw_cr = 0;
			if (buf[i] == '\n') {
				i++;
				continue;
			}
		}

		/* LINE: look for the end of the current line. */
		for (j = i; j < len && buf[j] != '\r' && buf[j] != '\n'; j++)
			;
		if (j == len) {
			if (sse_line_append(p, buf + i, len - i) != TS_OK)
				return sse_fail(p);
			break;
		}
		if (p->line_len == 0) {
			line = buf + i;
			n = j - i;
			if (n > p->max_bytes)
				return sse_fail(p);
		} else {
			if (sse_line_append(p, buf + i, j - i) != TS_OK)
				return sse_fail(p);
			line = p->line;
			n = p->line_len;
		}
		p->saw_cr = buf[j] == '\r';
		i = j + 1;

		/* `line` stays valid: sse_line() never touches p->line. */
		rc = sse_line(p, line, n);
		p->line_len = 0;
		if (rc != TS_OK)
			return rc;
	}
	return TS_OK;
}

void
sse_parser_free(struct sse_parser *p)
{
	if (p == NULL)
		return;
	free(p->line);
	free(p->data);
	free(p->type);
	free(p->id);
	memset(p, 0, sizeof(*p));
}
