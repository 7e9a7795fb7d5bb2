/*
 * transport/gate.h - the gate: one thread that accepts every FastCGI
 * connection of a responder process and holds it, in an epoll set, until
 * its request is whole (proto/fcgi_scan.h); only then does an accept
 * thread take it (gate_take) and let libfcgi read it, which no longer
 * waits. A connection that sends nothing, or too little, for timeout_ms
 * is closed by the gate and costs no accept thread; one whose request
 * libfcgi would refuse is closed at once. accept(2) failing (descriptors
 * exhausted: EMFILE, ENFILE; ENOBUFS, ENOMEM) is logged and retried with
 * a back-off, never fatal, and /health says "degraded" for a minute
 * after it (gate_health). docs/RELIABILITY.md "The accept path" tells the
 * whole story and what it costs.
 *
 * What an accept thread does on a connection it took (libfcgi's reads of
 * a request too large to hold whole, the answer's blocking writes) has a
 * deadline too: a watch (gate_watch_*), which the gate's thread enforces
 * by shutting the socket down once the deadline has passed while the
 * accept thread waits in a read or a write.
 *
 * Knows no libfcgi (server/fcgi.c is the one file that does): only
 * sockets and the FastCGI record format.
 */
#ifndef TS_TRANSPORT_GATE_H
#define TS_TRANSPORT_GATE_H

#include <stdint.h>

#include "common/ts.h"

struct gate;
struct gate_watch;

/* Most bytes a connection may have sent before an accept thread takes it
 * even though its request is not whole (a body or a head this large
 * comes from a real front, which sends it at once): below what one
 * socket's receive queue holds here, about 88 KiB over TCP and 95 KiB
 * over a unix socket written 1 KiB at a time (measured, Linux 6.1). */
#define GATE_HOLD_MAX (32u * 1024u)
/* More records than this before the request is whole: taken if its head
 * is whole, refused if not (lighttpd sends a head in 3 records). */
#define GATE_MAX_RECORDS 64u
/* How long /health says "degraded" after accept(2) last failed. */
#define GATE_DEGRADED_NS (60LL * 1000000000LL)
/* The back-off after accept(2) fails: doubled from the first to the
 * second, in ms. */
#define GATE_BACKOFF_MIN_MS 10
#define GATE_BACKOFF_MAX_MS 1000
/* At most one log line per kind of event per this many seconds; the
 * lines in between are counted in the next. */
#define GATE_LOG_EVERY_S 10
/* Watches: one per accept thread. */
#define GATE_MAX_WATCHES 16

struct gate_config {
	int listen_fd;               /* the listening socket: made
				      * non-blocking here */
	double timeout_ms;           /* --accept-timeout-ms */
	/* FCGI_WEB_SERVER_ADDRS (libfcgi's own rule, os_unix.c
	 * ClientAddrOK): comma-separated IPv4 addresses; a TCP/IPv4 peer
	 * not in it is closed at once. NULL or "": everyone. */
	const char *allowed_addrs;
	int64_t (*now)(void);        /* CLOCK_MONOTONIC now, in ns */
};

/*
 * Starts the gate's thread on cfg->listen_fd. TS_OK, or TS_ESYS (errno
 * kept) when the listening socket cannot be made non-blocking or an
 * epoll, a descriptor of /dev/null or the thread cannot be made. The gate
 * lives as long as the process.
 */
enum ts_err gate_start(struct gate **out, const struct gate_config *cfg);

/*
 * Blocks until a connection's request is whole (or large) and returns
 * its socket in *fd, blocking mode, now the caller's to close. TS_OK.
 *
 * light_only 1: only a request without a body (FCGI_STDIN empty: a GET,
 * HEAD or OPTIONS, so /health, /metrics, /v1/models, /_debug and /stream)
 * is taken; 0: any, the light ones first. A request with a body (a POST
 * /v1 one, whose parsing and schema checking may take up to their step
 * budgets, docs/API.md) goes only to a thread that takes any, so threads
 * kept light_only answer /health and admit /stream however many bodies
 * are being parsed. Among idle threads that may take a request, the one
 * that went idle last is served first.
 */
enum ts_err gate_take(struct gate *g, int light_only, int *fd);

/*
 * A watch for one accept thread: a descriptor of its own that refers to
 * the connection the thread serves (dup2, which never needs a free
 * descriptor), so the gate's thread can shut that socket down whatever
 * libfcgi has closed meanwhile. NULL when GATE_MAX_WATCHES are out or no
 * descriptor is left (the thread then runs without one).
 */
struct gate_watch *gate_watch_new(struct gate *g);

/* The accept thread took fd (gate_take): its deadline is now +
 * timeout_ms. A NULL w does nothing here and below. */
void gate_watch_begin(struct gate_watch *w, int fd);

/* Around each read or write that may block: between arm and disarm,
 * once the deadline has passed, the socket is shut down (SHUT_RDWR: the
 * read sees the end, the write EPIPE), by the gate's thread within
 * timeout_ms / 20 (5 to 100 ms) or at once by arm. */
void gate_watch_arm(struct gate_watch *w);
void gate_watch_disarm(struct gate_watch *w);

/* The accept thread is done with the connection (finished it, or handed
 * it to an I/O thread): the watch lets go of the socket. */
void gate_watch_end(struct gate_watch *w);

/* Counts (and logs, GATE_LOG_EVERY_S at most) a connection an accept
 * thread closed because libfcgi refused its request: `why`, static. */
void gate_refused(struct gate *g, const char *why);

/* The accept path's health, for /health (docs/API.md "GET /health"). */
struct gate_health {
	int degraded;                /* accept(2) failed in the last
				      * GATE_DEGRADED_NS, or is backing off */
	int backing_off;             /* not accepting now: waiting to retry */
	uint64_t accept_failures;    /* accept(2) failures, process life */
	int last_errno;              /* of the last one (0: none yet) */
	double since_failure_s;      /* seconds since it, -1 when none */
	uint64_t timed_out;          /* closed at their deadline */
	uint64_t refused;            /* closed: a request libfcgi would
				      * refuse, or a peer not allowed */
};

/* Fills *h; g NULL (the unit tests' server) is a healthy gate. */
void gate_health(struct gate *g, struct gate_health *h);

#endif /* TS_TRANSPORT_GATE_H */
