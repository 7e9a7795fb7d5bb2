/*
 * transport/conn.h - the connection a handler answers on: the request's CGI
 * parameters, its body, and writes of the response (FastCGI 1.0 section
 * 6.2: a Responder's stdout is a CGI response, "Status:" line and headers
 * first). Handlers see only this, never libfcgi, so they run the same
 * over a FastCGI request (server/fcgi.c, the one file that includes
 * libfcgi's header) and over a fake connection in the unit tests.
 *
 * A handler runs on an accept thread and answers there (an error, a JSON
 * object; one over REPLY_INLINE_MAX goes to an I/O thread: reply_send);
 * a stream it hands to the server's driver (server.h `stream`),
 * which writes the rest from an I/O thread (transport/io.c), only as much as
 * the socket takes without blocking (room): a client that stops reading
 * costs the engine's record of its unsent tokens, never a thread.
 */
#ifndef TS_TRANSPORT_CONN_H
#define TS_TRANSPORT_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

struct conn;
struct engine_listener;
struct io;
struct ts_buf;

struct conn_ops {
	/* The CGI parameter `name` ("REQUEST_METHOD", "HTTP_HOST", ...),
	 * borrowed until the request ends; NULL when absent. */
	const char *(*param)(struct conn *c, const char *name);
	/* Reads up to cap bytes of the request body into buf: *got 0 at its
	 * end. TS_OK, or TS_EHUP when the connection failed. */
	enum ts_err (*read)(struct conn *c, char *buf, size_t cap,
	    size_t *got);
	/* Writes all of (p, len) and flushes. TS_OK, or TS_EHUP: the client
	 * is gone, and every later write fails too. Blocks while the socket
	 * is full: the I/O threads write no more than room() said. */
	enum ts_err (*write)(struct conn *c, const char *p, size_t len);
	/* For the blocking driver (relay_run): blocks until the listener
	 * has news, the client hangs up or deadline_ns (CLOCK_MONOTONIC,
	 * the server's clock) passes. TS_OK (news or time) or TS_EHUP. */
	enum ts_err (*wait)(struct conn *c, int64_t deadline_ns);
	/* ... and the listener it waits on (engine.h). */
	struct engine_listener *(*listener)(struct conn *c);
	/* For the I/O threads: the socket to poll for hang-up and for
	 * room, -1 if none. */
	int (*fd)(struct conn *c);
	/* How many bytes write() takes now without blocking (0 when the
	 * peer is not reading). */
	size_t (*room)(struct conn *c);
	/* Ends the request (FastCGI 1.0 FCGI_END_REQUEST) and closes the
	 * connection without blocking; frees c. */
	void (*finish)(struct conn *c);
};

/* A connection: its operations, and what the server learnt of it. */
struct conn {
	const struct conn_ops *ops;
	int hup;                 /* a write or a wait said: client gone */
	/* A HEAD request (RFC 9110 section 9.3.2): conn_write sends the
	 * response head (up to its empty line) and drops the body, so a
	 * handler answers HEAD by answering GET. Set by route(). */
	int head_only;
	int head_done;           /* head_only: the empty line went out */
	int shard;               /* the I/O thread to relay it on */
	/* The driver of a large whole answer (reply_send): io_answer and
	 * the I/O threads, set by io_assign; NULL: none (written inline).
	 * A pointer, so that reply.c needs nothing of io.c. */
	void (*answer)(struct io *io, struct conn *c, struct ts_buf *b);
	struct io *threads;
	void *io;                /* that thread's record of it (io.c) */
	/* Set to 1 by a driver (io_stream) that took the connection over:
	 * the accepting thread's own flag, not a field of the connection,
	 * which the driver may finish and free before route() returns.
	 * NULL: nobody asks. */
	int *handed_off;
	/* Body bytes already read and given back (a replay that found no
	 * recording, handlers/replay.h): reply_read_body takes them first.
	 * Borrowed; NULL: none. */
	const char *unread;
	size_t unread_len;
};

/* The parameter, or "" when absent. */
const char *conn_param(struct conn *c, const char *name);

/* write, remembering a hang-up: after one, TS_EHUP without writing.
 * With head_only, only the bytes up to and including the head's empty
 * line ("\r\n\r\n") are written; the rest is dropped as if sent. */
enum ts_err conn_write(struct conn *c, const char *p, size_t len);

#endif /* TS_TRANSPORT_CONN_H */
