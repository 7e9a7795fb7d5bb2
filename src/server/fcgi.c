/*
 * server/fcgi.c - the accept threads and struct conn over libfcgi
 * (fcgi.h). The only file that includes libfcgi's header.
 *
 * An accept thread takes a request with FCGX_Accept_r (libfcgi reads its
 * FastCGI records: FCGI_BEGIN_REQUEST, the params, the body as FCGI_STDIN)
 * and runs its handler (routes.h). A stream is handed to an I/O thread
 * (transport/io.h), which writes the rest through the same FCGX_Request:
 * libfcgi still encodes every FCGI_STDOUT record, but the I/O thread
 * writes no more than room() says the socket takes, so a blocking write
 * never blocks.
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

/* The body spans as many FCGI_STDIN records as it needs (case C05). */
static enum ts_err
fcgi_read(struct conn *c, char *buf, size_t cap, size_t *got)
{
	int n = FCGX_GetStr(buf, cap > INT_MAX ? INT_MAX : (int)cap,
	    fcgi_of(c)->req.in);

	*got = n > 0 ? (size_t)n : 0;
	return n < 0 ? TS_EHUP : TS_OK;
}

/*
 * Writes (p, len) as FCGI_STDOUT records and flushes. libfcgi keeps
 * returning success after the first failure, so the stream's error is
 * read after every flush.
 */
static enum ts_err
fcgi_write(struct conn *c, const char *p, size_t len)
{
	FCGX_Stream *out = fcgi_of(c)->req.out;

	if (len > INT_MAX || FCGX_PutStr(p, (int)len, out) != (int)len ||
	    FCGX_FFlush(out) != 0 || FCGX_GetError(out) != 0)
		return TS_EHUP;
	return TS_OK;
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

/* Ends the request without blocking: see the opening comment. */
static void
fcgi_finish(struct conn *c)
{
	struct fcgi_conn *fc = fcgi_of(c);
	char junk[4096];

	while (recv(fc->req.ipcFd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
	FCGX_Detach(&fc->req);
	FCGX_Finish_r(&fc->req);
	free(fc);
}

static const struct conn_ops fcgi_conn_ops = {
	fcgi_param, fcgi_read, fcgi_write, NULL, NULL, fcgi_fd, fcgi_room,
	fcgi_finish
};

static void *
accept_main(void *arg)
{
	struct server *srv = arg;

	while (!atomic_load(&srv->stopping)) {
		struct fcgi_conn *fc = xcalloc(1, sizeof(*fc));
		int sndbuf = 0, handed_off = 0;
		socklen_t len = sizeof(sndbuf);

		if (FCGX_InitRequest(&fc->req, listen_fd, 0) != 0 ||
		    FCGX_Accept_r(&fc->req) < 0) {
			free(fc);
			break;
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
		atomic_fetch_sub(&accepting, 1);
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
fcgi_start(struct server *srv, int threads)
{
	pthread_attr_t attr;
	pthread_t th;
	int i, started = 0;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK_BYTES);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < threads; i++)
		if (pthread_create(&th, &attr, accept_main, srv) == 0)
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
