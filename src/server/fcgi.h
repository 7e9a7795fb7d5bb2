/*
 * server/fcgi.h - the FastCGI side of tokstream-fcgi (FastCGI 1.0,
 * "Responder" role, over libfcgi): listening, the gate that accepts
 * (transport/gate.h), a few accept threads that take its connections and
 * read each request with FCGX_Accept_r, and struct conn (conn.h) over an
 * FCGX_Request. fcgi.c is the one file that includes libfcgi's header.
 */
#ifndef TS_SERVER_FCGI_H
#define TS_SERVER_FCGI_H

#include "common/ts.h"

struct server;

/*
 * FCGX_Init, then the listening socket: `socket_path` (a unix socket,
 * created with `backlog`), or fd 0 as spawn-fcgi hands it over when
 * socket_path is NULL. FCGX_Init installs its own signal handlers
 * (docs/ARCHITECTURE.md "lighttpd and libfcgi, measured"): SIGPIPE is
 * set to SIG_IGN again here. TS_OK, or TS_ESYS with a message in err.
 */
enum ts_err fcgi_listen(const char *socket_path, int backlog, char *err,
    size_t errlen);

/* Starts the gate (srv->gate: accepting, with srv->opt's
 * --accept-timeout-ms and FCGI_WEB_SERVER_ADDRS), `threads` accept
 * threads that take any request and `light_threads` that take only
 * requests without a body (gate_take: /health, /metrics and GETs are
 * never queued behind a POST body being parsed), each taking one request
 * at a time from the gate and running its handler (route); a stream goes
 * on to srv->io. Returns how many accept threads started: 0 when the
 * gate did not (said on stderr). */
int fcgi_start(struct server *srv, int threads, int light_threads);

/* Requests on accept threads right now (for the shutdown's grace time). */
int fcgi_active(void);

#endif /* TS_SERVER_FCGI_H */
