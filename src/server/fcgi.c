/*
 * server/fcgi.c - the request threads and struct conn over libfcgi
 * (fcgi.h). The only file that includes fcgiapp.h.
 *
 * Facts it relies on (docs/ARCHITECTURE.md "libfcgi and lighttpd",
 * measured on lighttpd 1.4.69 and libfcgi 2.4.2): lighttpd never sends
 * FCGI_ABORT_REQUEST, it closes the backend connection when its client is
 * gone, which shows as POLLRDHUP on the socket; after the first failed
 * flush libfcgi keeps reporting success, so FCGX_GetError is checked
 * after every flush; FCGX_Init makes SIGPIPE a no-op and SIGTERM a flag.
 */
#define _GNU_SOURCE
#include "server/fcgi.h"

#include <errno.h>
#include <fcgiapp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "server/conn.h"
#include "server/routes.h"
#include "server/server.h"

#define THREAD_STACK_BYTES (256u * 1024u)

/* One request thread: its FastCGI request, its connection and the
 * listener its sequences report to. */
struct worker {
	pthread_t thread;
	struct server *srv;
	FCGX_Request req;
	struct conn conn;            /* first: conn_of casts back */
	struct engine_listener listener;
	int evfd;                    /* eventfd: the engine says "news" */
};

static int listen_fd;
static atomic_int active_requests;

static struct worker *
worker_of(struct conn *c)
{
	return (struct worker *)((char *)c - offsetof(struct worker, conn));
}

static const char *
fcgi_param(struct conn *c, const char *name)
{
	return FCGX_GetParam(name, worker_of(c)->req.envp);
}

/* The body spans as many FCGI_STDIN records as it needs (case C05). */
static enum ts_err
fcgi_read(struct conn *c, char *buf, size_t cap, size_t *got)
{
	int n = FCGX_GetStr(buf, cap > INT_MAX ? INT_MAX : (int)cap,
	    worker_of(c)->req.in);

	*got = n > 0 ? (size_t)n : 0;
	return n < 0 ? TS_EHUP : TS_OK;
}

/*
 * Writes (p, len) and flushes. libfcgi keeps returning success after the
 * first failure, so the stream's error is read after every flush.
 */
static enum ts_err
fcgi_write(struct conn *c, const char *p, size_t len)
{
	FCGX_Stream *out = worker_of(c)->req.out;

	if (len > INT_MAX || FCGX_PutStr(p, (int)len, out) != (int)len ||
	    FCGX_FFlush(out) != 0 || FCGX_GetError(out) != 0)
		return TS_EHUP;
	return TS_OK;
}

/*
 * Waits until the listener's eventfd says "news", the FastCGI connection
 * hangs up, or deadline_ns passes. Only hang-up is polled for on that
 * socket, so a pending FastCGI record (the empty FCGI_STDIN that ends a
 * GET) does not wake the loop.
 */
static enum ts_err
fcgi_wait(struct conn *c, int64_t deadline_ns)
{
	struct worker *w = worker_of(c);
	int64_t left = deadline_ns - w->srv->now();
	struct timespec ts;
	struct pollfd pfd[2];
	uint64_t junk;
	int n;

	if (left < 0)
		left = 0;
	ts.tv_sec = left / 1000000000;
	ts.tv_nsec = left % 1000000000;
	pfd[0].fd = w->req.ipcFd;
	pfd[0].events = POLLRDHUP;
	pfd[0].revents = 0;
	pfd[1].fd = w->evfd;
	pfd[1].events = POLLIN;
	pfd[1].revents = 0;
	n = ppoll(pfd, 2, &ts, NULL);
	if (n < 0 && errno != EINTR)
		nanosleep(&ts, NULL);   /* cannot watch: just wait */
	if (n > 0 && (pfd[0].revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return TS_EHUP;
	if (n > 0 && (pfd[1].revents & POLLIN)) {
		if (read(w->evfd, &junk, sizeof(junk)) < 0 && errno != EAGAIN)
			nanosleep(&ts, NULL);
		/* the news itself is in the sequence: take it off the list */
		(void)engine_listener_take(&w->listener);
	}
	return TS_OK;
}

static struct engine_listener *
fcgi_listener(struct conn *c)
{
	return &worker_of(c)->listener;
}

/* A write stall: shutting the socket down makes the blocked write fail. */
static void
fcgi_abort(struct conn *c)
{
	shutdown(worker_of(c)->req.ipcFd, SHUT_RDWR);
}

static const struct conn_ops fcgi_conn_ops = {
	fcgi_param, fcgi_read, fcgi_write, fcgi_wait, fcgi_listener,
	fcgi_abort
};

/* The engine's wake-up: one eventfd write. */
static void
fcgi_wake(struct engine_listener *l)
{
	struct worker *w = l->ctx;
	uint64_t one = 1;

	if (write(w->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
		/* Nothing to do: the relay also wakes on its own timer. */
	}
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t junk;

	if (FCGX_InitRequest(&w->req, listen_fd, 0) != 0)
		return NULL;
	w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->evfd < 0) {
		fprintf(stderr, "tokstream-fcgi: eventfd: %s\n",
		    strerror(errno));
		return NULL;
	}
	engine_listener_init(&w->listener, fcgi_wake, w);
	while (!atomic_load(&w->srv->stopping)) {
		if (FCGX_Accept_r(&w->req) < 0)
			break;
		atomic_fetch_add(&active_requests, 1);
		if (read(w->evfd, &junk, sizeof(junk)) < 0 &&
		    errno != EAGAIN)
			break;
		(void)engine_listener_take(&w->listener);
		w->conn.ops = &fcgi_conn_ops;
		w->conn.hup = 0;
		route(w->srv, &w->conn, w->srv->now());
		FCGX_Finish_r(&w->req);
		atomic_fetch_sub(&active_requests, 1);
	}
	return NULL;
}

enum ts_err
fcgi_listen(const char *socket_path, int backlog, char *err, size_t errlen)
{
	int accepting = 0;
	socklen_t optlen = sizeof(accepting);

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
	} else if (getsockopt(0, SOL_SOCKET, SO_ACCEPTCONN, &accepting,
	    &optlen) != 0 || !accepting) {
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
	struct worker *workers = xcalloc((size_t)threads, sizeof(*workers));
	pthread_attr_t attr;
	int i, started = 0;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK_BYTES);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < threads; i++) {
		workers[i].srv = srv;
		if (pthread_create(&workers[i].thread, &attr, worker_main,
		    &workers[i]) == 0)
			started++;
	}
	pthread_attr_destroy(&attr);
	/* The workers live until the process exits (_exit, main.c). */
	return started;
}

int
fcgi_active(void)
{
	return atomic_load(&active_requests);
}
