/*
 * server/conn.h - the connection a handler answers on: the request's CGI
 * parameters, its body, and writes of the response (FastCGI 1.0 section
 * 6.2: a Responder's stdout is a CGI response, "Status:" line and headers
 * first). Handlers see only this, never libfcgi, so they run the same
 * over a FastCGI request (server/fcgi.c, the one file that includes
 * fcgiapp.h) and over a fake connection in the unit tests.
 */
#ifndef TS_SERVER_CONN_H
#define TS_SERVER_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

struct conn;
struct engine_listener;

struct conn_ops {
	/* The CGI parameter `name` ("REQUEST_METHOD", "HTTP_HOST", ...),
	 * borrowed until the request ends; NULL when absent. */
	const char *(*param)(struct conn *c, const char *name);
	/* Reads up to cap bytes of the request body into buf: *got 0 at its
	 * end. TS_OK, or TS_EHUP when the connection failed. */
	enum ts_err (*read)(struct conn *c, char *buf, size_t cap,
	    size_t *got);
	/* Writes all of (p, len) and flushes. TS_OK, or TS_EHUP: the client
	 * is gone, and every later write fails too. */
	enum ts_err (*write)(struct conn *c, const char *p, size_t len);
	/* Blocks until the listener has news, the client hangs up or
	 * deadline_ns (CLOCK_MONOTONIC, the server's clock) passes. TS_OK
	 * (news or time) or TS_EHUP. */
	enum ts_err (*wait)(struct conn *c, int64_t deadline_ns);
	/* Who hears of this connection's sequences (engine.h). */
	struct engine_listener *(*listener)(struct conn *c);
	/* Makes a write blocked in another thread fail (a write stall). */
	void (*abort)(struct conn *c);
};

/* A connection: its operations, and what the handler learnt of it. */
struct conn {
	const struct conn_ops *ops;
	int hup;                 /* a write or a wait said: client gone */
};

/* The parameter, or "" when absent. */
const char *conn_param(struct conn *c, const char *name);

/* write, remembering a hang-up: after one, TS_EHUP without writing. */
enum ts_err conn_write(struct conn *c, const char *p, size_t len);

#endif /* TS_SERVER_CONN_H */
