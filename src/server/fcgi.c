/*
 * server/fcgi.c - the accept threads and struct conn over libfcgi
 * (fcgi.h). The only file that includes libfcgi's header.
 *
 * The gate (transport/gate.h) accepts every connection and holds it until
 * its request is whole; an accept thread takes it from the gate and lets
 * libfcgi read it with FCGX_Accept_r (FCGI_BEGIN_REQUEST, the params, and
 * later the body as FCGI_STDIN), which no longer waits for the peer, then
 * runs its handler (routes.h). A stream is handed to an I/O thread
 * (transport/io.h), which writes the rest through the same FCGX_Request:
 * libfcgi still encodes every FCGI_STDOUT record, but the I/O thread
 * writes no more than room() says the socket takes, so a blocking write
 * never blocks. What may still block on an accept thread (the rest of a
 * request larger than the gate holds, an answer larger than the socket's
 * buffer, the end of the request) runs under the thread's watch
 * (gate_watch_arm), which ends it at --accept-timeout-ms.
 *
 * Facts it relies on (docs/ARCHITECTURE.md "lighttpd and libfcgi, measured",
 * measured on lighttpd 1.4.69 and libfcgi 2.4.2):
 *   - lighttpd never sends FCGI_ABORT_REQUEST; it closes the backend
 *     connection when its client is gone, which shows as EPOLLRDHUP.
 *   - After the first failed flush libfcgi keeps reporting success, so
 *     FCGX_GetError is checked after every flush.
 *   - libfcgi writes with a loop of blocking write(2)s and takes EAGAIN
 *     as an error, so its streams cannot be made non-blocking; instead a
 *     write is sized to the socket's free space (SIOCOUTQ against
 *     SO_SNDBUF), which a Linux stream socket accepts without blocking.
 *   - FCGX_Finish_r closes with shutdown(2) and then reads until EOF for
 *     up to 2 s (libfcgi's OS_Close), which would stall an I/O thread; a
 *     request is detached first (FCGX_Detach), which closes at once, and
 *     what lighttpd sent that was never read (the empty FCGI_STDIN that
 *     ends a GET) is drained first, so the close is a clean EOF.
 *   - FCGX_Init makes SIGPIPE a no-op and SIGTERM a flag: SIGPIPE is set
 *     to SIG_IGN again here, SIGTERM is taken by main's sigwait.
 *   - FCGX_Accept_r reads a connection it is given (fcgi_take), see there.
 */
#define _GNU_SOURCE
#include "server/fcgi.h"

#include <errno.h>
#include <fcgiapp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <unistd.h>

#include "transport/conn.h"
#include "transport/gate.h"
#include "transport/io.h"
#include "handlers/routes.h"
#include "handlers/server.h"

#define THREAD_STACK_BYTES (256u * 1024u)

/* One FastCGI request and the connection the handlers see. */
struct fcgi_conn {
	struct conn conn;            /* first: fcgi_of casts back */
	FCGX_Request req;
	size_t sndbuf;               /* SO_SNDBUF of the socket */
};

static int listen_fd;
static atomic_int accepting;     /* requests on accept threads now */
/* The accept thread's watch (gate.h); NULL on every other thread, whose
 * writes never block (the I/O threads write what room() says). */
static _Thread_local struct gate_watch *fcgi_watch;

static struct fcgi_conn *
fcgi_of(struct conn *c)
{
	return (struct fcgi_conn *)c;
}

static const char *
fcgi_param(struct conn *c, const char *name)
{
	return FCGX_GetParam(name, fcgi_of(c)->req.envp);
}

/* The body spans as many FCGI_STDIN records as it needs (case C05). Read
 * on the accept thread, under its watch: the gate handed the request
 * over whole, unless it was larger than GATE_HOLD_MAX. */
static enum ts_err
fcgi_read(struct conn *c, char *buf, size_t cap, size_t *got)
{
	int n;

	gate_watch_arm(fcgi_watch);
	n = FCGX_GetStr(buf, cap > INT_MAX ? INT_MAX : (int)cap,
	    fcgi_of(c)->req.in);
	gate_watch_disarm(fcgi_watch);
	*got = n > 0 ? (size_t)n : 0;
	return n < 0 ? TS_EHUP : TS_OK;
}

/*
 * Writes (p, len) as FCGI_STDOUT records and flushes. libfcgi keeps
 * returning success after the first failure, so the stream's error is
 * read after every flush. On an accept thread the write may block (an
 * answer larger than the socket takes, to a peer that does not read): its
 * watch ends it at the deadline (EPIPE).
 */
static enum ts_err
fcgi_write(struct conn *c, const char *p, size_t len)
{
	FCGX_Stream *out = fcgi_of(c)->req.out;
	enum ts_err rc = TS_OK;

	gate_watch_arm(fcgi_watch);
	if (len > INT_MAX || FCGX_PutStr(p, (int)len, out) != (int)len ||
	    FCGX_FFlush(out) != 0 || FCGX_GetError(out) != 0)
		rc = TS_EHUP;
	gate_watch_disarm(fcgi_watch);
	return rc;
}

static int
fcgi_fd(struct conn *c)
{
	return fcgi_of(c)->req.ipcFd;
}

/*
 * The bytes a write takes now without blocking, in the units the kernel
 * charges. A Linux stream socket blocks a writer only once what it holds
 * unsent reaches SO_SNDBUF: SIOCOUTQ gives that (for a unix socket the
 * buffers' true size, for TCP the bytes), and half of SO_SNDBUF is the
 * budget, so a misjudged write still finds the other half free.
 */
static size_t
fcgi_room(struct conn *c)
{
	struct fcgi_conn *fc = fcgi_of(c);
	int queued = 0;

	if (ioctl(fc->req.ipcFd, SIOCOUTQ, &queued) != 0 || queued < 0)
		return 0;
	if ((size_t)queued >= fc->sndbuf / 2)
		return 0;
	return fc->sndbuf / 2 - (size_t)queued;
}

/* Ends the request without blocking: see the opening comment. A peer that
 * asked to keep the connection (FCGI_KEEP_CONN, which lighttpd never
 * does) has it closed all the same: one request per connection. */
static void
fcgi_finish(struct conn *c)
{
	struct fcgi_conn *fc = fcgi_of(c);
	char junk[4096];

	while (recv(fc->req.ipcFd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
	FCGX_Detach(&fc->req);
	gate_watch_arm(fcgi_watch);
	FCGX_Finish_r(&fc->req);
	gate_watch_disarm(fcgi_watch);
	if (fc->req.ipcFd >= 0)
		close(fc->req.ipcFd);
	free(fc);
}

static const struct conn_ops fcgi_conn_ops = {
	fcgi_param, fcgi_read, fcgi_write, NULL, NULL, fcgi_fd, fcgi_room,
	fcgi_finish
};

/*
 * Lets libfcgi read the request on fd, a connection the gate accepted
 * (its request whole, or larger than the gate holds), into fc->req.
 * FCGX_Accept_r has no way in for a socket it did not accept, so this
 * takes the way it keeps a connection for the next request
 * (FCGI_KEEP_CONN), on these lines of fcgiapp.c (libfcgi 2.4.2):
 *   - FCGX_Accept_r first calls FCGX_Finish_r, which closes ipcFd only
 *     when !keepConnection (and frees the streams, NULL here);
 *   - then "if (reqDataPtr->ipcFd < 0)" it accepts; ipcFd >= 0 is read
 *     as it is (FillBuffProc, ReadParams), and keepConnection is set
 *     again from the request's FCGI_BEGIN_REQUEST flags;
 *   - a request it cannot read ("goto TryAgain") is closed (FCGX_Free,
 *     at once when detached: OS_IpcClose with shutdown only when not)
 *     and it accepts again on listen_sock: -1 here, so accept(2) fails
 *     with EBADF and FCGX_Accept_r returns -EBADF, never blocking. The
 *     gate refuses what libfcgi would refuse (proto/fcgi_scan.h), so this
 *     only happens when a request too large to hold goes wrong.
 * Tried with libfcgi 2.4.2-2+deb12u1: a whole request is read, a role of
 * 9 returns -9 (EBADF) at once with the socket closed, and without the
 * FCGX_Detach the same close took 2.0 s. TS_OK, or TS_EINVAL (fd closed).
 */
static enum ts_err
fcgi_take(struct fcgi_conn *fc, int fd)
{
	int rc;

	FCGX_InitRequest(&fc->req, -1, 0);
	fc->req.ipcFd = fd;
	fc->req.keepConnection = 1;
	FCGX_Detach(&fc->req);
	gate_watch_arm(fcgi_watch);
	rc = FCGX_Accept_r(&fc->req);
	gate_watch_disarm(fcgi_watch);
	return rc < 0 ? TS_EINVAL : TS_OK;
}

/* One connection from the gate, from libfcgi's read of it to its end or
 * its hand-over to an I/O thread. */
static void
fcgi_serve(struct server *srv, int fd)
{
	struct fcgi_conn *fc = xcalloc(1, sizeof(*fc));
	int sndbuf = 0, handed_off = 0;
	socklen_t len = sizeof(sndbuf);

	gate_watch_begin(fcgi_watch, fd);
	if (fcgi_take(fc, fd) != TS_OK) {
		gate_refused(srv->gate, "libfcgi's FCGX_Accept_r refused its "
		    "request");
		gate_watch_end(fcgi_watch);
		free(fc);
		return;
	}
	atomic_fetch_add(&accepting, 1);
	if (getsockopt(fc->req.ipcFd, SOL_SOCKET, SO_SNDBUF, &sndbuf,
	    &len) != 0 || sndbuf <= 0)
		sndbuf = 65536;
	fc->sndbuf = (size_t)sndbuf;
	fc->conn.ops = &fcgi_conn_ops;
	fc->conn.handed_off = &handed_off;
	io_assign(srv->io, &fc->conn);
	route(srv, &fc->conn, srv->now());
	/* handed off: an I/O thread owns fc, and may have freed it */
	if (!handed_off)
		fcgi_finish(&fc->conn);
	gate_watch_end(fcgi_watch);
	atomic_fetch_sub(&accepting, 1);
}

/* An accept thread: nothing it does ends it (a connection that fails is
 * that connection's end); it lives until the process exits. */
/* What an accept thread is started with: its server, and whether it
 * takes only requests without a body (gate_take). */
struct accept_kind {
	struct server *srv;
	int light_only;
};

static struct accept_kind kinds[2];

static void *
accept_main(void *arg)
{
	const struct accept_kind *kind = arg;
	struct server *srv = kind->srv;

	fcgi_watch = gate_watch_new(srv->gate);
	if (fcgi_watch == NULL)
		fprintf(stderr, "tokstream-fcgi: an accept thread has no "
		    "watch (no descriptor left): its reads and writes have "
		    "no deadline\n");
	for (;;) {
		int fd;

		if (gate_take(srv->gate, kind->light_only, &fd) == TS_OK)
			fcgi_serve(srv, fd);
	}
	return NULL;
}

enum ts_err
fcgi_listen(const char *socket_path, int backlog, char *err, size_t errlen)
{
	int accepting_fd = 0;
	socklen_t optlen = sizeof(accepting_fd);

	if (FCGX_Init() != 0) {
		snprintf(err, errlen, "FCGX_Init failed");
		return TS_ESYS;
	}
	if (socket_path != NULL) {
		listen_fd = FCGX_OpenSocket(socket_path, backlog);
		if (listen_fd < 0) {
			snprintf(err, errlen, "cannot listen on %s",
			    socket_path);
			return TS_ESYS;
		}
	} else if (getsockopt(0, SOL_SOCKET, SO_ACCEPTCONN, &accepting_fd,
	    &optlen) != 0 || !accepting_fd) {
		snprintf(err, errlen, "fd 0 is not a listening socket; start "
		    "it with spawn-fcgi (see scripts/tokstream-ctl) or pass "
		    "--socket PATH");
		return TS_ESYS;
	} else {
		listen_fd = 0;
	}
	/* FCGX_Init installed its own handlers; SIGTERM stays blocked and
	 * is taken by main's sigwait. */
	signal(SIGPIPE, SIG_IGN);
	return TS_OK;
}

int
fcgi_start(struct server *srv, int threads, int light_threads)
{
	struct gate_config gc;
	pthread_attr_t attr;
	pthread_t th;
	int i, started = 0;

	/* libfcgi's own list of the fronts allowed in (FCGX_Init reads the
	 * same variable; the gate applies it, as OS_Accept did) */
	gc.listen_fd = listen_fd;
	gc.timeout_ms = srv->opt->accept_timeout_ms;
	gc.allowed_addrs = getenv("FCGI_WEB_SERVER_ADDRS");
	gc.now = srv->now;
	if (gate_start(&srv->gate, &gc) != TS_OK) {
		fprintf(stderr, "tokstream-fcgi: cannot start the gate: %s\n",
		    strerror(errno));
		return 0;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK_BYTES);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	kinds[0].srv = srv;
	kinds[0].light_only = 0;
	kinds[1].srv = srv;
	kinds[1].light_only = 1;
	for (i = 0; i < threads + light_threads; i++)
		if (pthread_create(&th, &attr, accept_main,
		    &kinds[i >= threads]) == 0)
			started++;
	pthread_attr_destroy(&attr);
	/* The threads live until the process exits (_exit, main.c). */
	return started;
}

int
fcgi_active(void)
{
	return atomic_load(&accepting);
}
