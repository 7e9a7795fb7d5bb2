/*
 * proto/sse.h - encoding Server-Sent Events into a caller's buffer. No I/O.
 *
 * Follows WHATWG HTML, section 9.2 "Server-sent events": an event is one or
 * more "data:" lines followed by an empty line; lines end in LF (tokstream
 * never writes CR); a line starting with ':' is a comment that clients
 * ignore. Every function appends to a struct ts_buf and returns TS_OK, or
 * TS_ELIMIT when the buffer's limit would be exceeded (nothing is appended
 * then), or TS_EINVAL for data the JSON encoder refuses (invalid UTF-8).
 */
#ifndef TS_PROTO_SSE_H
#define TS_PROTO_SSE_H

#include <stddef.h>

#include "common/buf.h"
#include "common/ts.h"

/*
 * The Content-Type of every event stream. WHATWG requires UTF-8 whatever
 * the label, but HTTP clients that decode a text type by its charset
 * (Python requests: ISO-8859-1 when none is named) garble every
 * non-ASCII token without it; vLLM sends the same.
 */
#define SSE_CONTENT_TYPE "text/event-stream; charset=utf-8"

/*
 * Appends one event whose data is (data, len): each line of the data
 * (split at LF, CR or CRLF, as the parser will split it) becomes its own
 * "data: " line, then one empty line ends the event. A parser that follows
 * WHATWG rebuilds exactly `data` with line ends normalised to LF.
 */
enum ts_err sse_encode_data(struct ts_buf *b, const char *data, size_t len);

/*
 * Appends the field line "id: <id>\n" that starts an event; the event's
 * data lines must follow. The id must hold no CR, LF or NUL (TS_EINVAL):
 * WHATWG ignores an id with NUL, and CR/LF would end the line.
 */
enum ts_err sse_encode_id(struct ts_buf *b, const char *id, size_t len);

/*
 * Appends "event: <type>\n" and then the event's data as sse_encode_data
 * does: an event the client dispatches under that type instead of
 * "message" (WHATWG "event" field; the OpenAI Responses API names every
 * streamed event so). type is non-empty, without CR or LF (TS_EINVAL).
 */
enum ts_err sse_encode_event(struct ts_buf *b, const char *type,
    const char *data, size_t len);

/*
 * Appends the field line "retry: <ms>\n", the client's reconnection time
 * (WHATWG "retry" field, taken in any block); the event's data lines
 * must follow in the same block. It is not a block of its own: a block
 * without data dispatches nothing by WHATWG, but some clients
 * (@microsoft/fetch-event-source 2.0.1) hand it to onmessage with empty
 * data.
 */
enum ts_err sse_encode_retry(struct ts_buf *b, unsigned long ms);

/* Appends ": text\n\n"; text must hold no CR or LF (TS_EINVAL). */
enum ts_err sse_encode_comment(struct ts_buf *b, const char *text,
    size_t len);

/*
 * Appends the token event `data: {"token":"<text>"}\n\n`. The JSON is
 * built by jansson, compact, so control characters, '"' and '\' are
 * escaped and the event is exactly one data line. `text` must be valid
 * UTF-8 (TS_EINVAL otherwise).
 */
enum ts_err sse_encode_token(struct ts_buf *b, const char *text, size_t len);

/* Appends `data: [DONE]\n\n`, the end-of-stream marker the OpenAI API
 * uses; it is always the last event of a tokstream stream. */
enum ts_err sse_encode_done(struct ts_buf *b);

/*
 * Appends an error event `data: {"error":{"message":..,"type":..,
 * "code":..}}\n\n` (the OpenAI API's error shape). Strings are copied.
 */
enum ts_err sse_encode_error(struct ts_buf *b, const char *message,
    const char *type, const char *code);

#endif /* TS_PROTO_SSE_H */
