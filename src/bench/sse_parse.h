/*
 * sse_parse.h - an incremental Server-Sent Events parser for tokbench.
 *
 * Follows WHATWG HTML, section 9.2.6 "Interpreting an event stream": lines
 * end in CRLF, LF or CR (a CRLF split across two feeds is one line end); a
 * leading UTF-8 BOM is skipped; lines starting with ':' are comments; a
 * field is "name:value" with one optional space after the colon stripped;
 * "data" lines append value + LF to the data buffer; "event", "id" (ignored
 * if it contains NUL) and "retry" (ASCII digits only) are kept; an empty
 * line dispatches the event (nothing is dispatched when the data buffer is
 * empty; the final LF of the data buffer is removed). Bytes may arrive split
 * at any point; several events may arrive in one feed.
 */
#ifndef SSE_PARSE_H
#define SSE_PARSE_H

#include <stddef.h>

#include "common/ts.h"

/* One dispatched event. All pointers are borrowed until the callback
 * returns; data is NOT NUL-terminated, use data_len. */
struct sse_event {
	const char *type;      /* "message" when no event field was given */
	size_t type_len;
	const char *data;
	size_t data_len;
	const char *id;        /* last event id (persists across events) */
	size_t id_len;
};

/*
 * Called once per dispatched event. Return TS_OK to go on; any other value
 * stops the feed and is returned by sse_parser_feed().
 */
typedef enum ts_err (*sse_event_cb)(void *ud, const struct sse_event *ev);
/* Called once per comment line (text after ':', borrowed). May be NULL. */
typedef void (*sse_comment_cb)(void *ud, const char *text, size_t len);

struct sse_parser {
	sse_event_cb on_event;
	sse_comment_cb on_comment;
	void *ud;
	char *line;            /* the current, incomplete line */
	size_t line_len, line_cap;
	char *data;            /* data buffer */
	size_t data_len, data_cap;
	char *type;            /* event type buffer */
	size_t type_len, type_cap;
	char *id;              /* last event id buffer */
	size_t id_len, id_cap;
	long retry_ms;         /* last valid retry value, -1 if none */
	size_t max_bytes;      /* limit for a line and for the data buffer */
	int saw_cr;            /* previous byte was CR: skip one LF */
	int bom_state;         /* bytes of a leading BOM matched; 3 = done */
};

/* Default max_bytes for lines and for the data buffer: 1 MiB. */
#define SSE_PARSE_DEFAULT_MAX (1u << 20)

/* Initialises `p`. on_event is required; on_comment may be NULL. */
void sse_parser_init(struct sse_parser *p, sse_event_cb on_event,
    sse_comment_cb on_comment, void *ud);

/*
 * Feeds `len` bytes. Returns TS_OK, TS_ELIMIT when a line or the data buffer
 * would exceed max_bytes (the parser is then unusable), or whatever a
 * callback returned other than TS_OK.
 */
enum ts_err sse_parser_feed(struct sse_parser *p, const char *buf,
    size_t len);

/* Frees the parser's buffers; accepts a zeroed or freed parser. A pending
 * event without its empty line is discarded, as WHATWG says at EOF. */
void sse_parser_free(struct sse_parser *p);

#endif /* SSE_PARSE_H */
