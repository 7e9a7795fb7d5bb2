/*
 * transport/gate.c - the gate (gate.h): accept(2), a new connection held
 * until its FastCGI request is whole, the hand-over to the accept threads,
 * the back-off when accept fails, and the watches on what the accept
 * threads do.
 *
 * Why a gate. libfcgi's FCGX_Accept_r (fcgiapp.c, libfcgi 2.4.2) accepts
 * (os_unix.c OS_Accept) and then reads the FCGI_BEGIN_REQUEST and the
 * params with blocking read(2)s and no deadline (FillBuffProc, ReadParams),
 * so a connection that sends nothing holds the thread that accepted it:
 * over TCP for as long as the peer likes; over a unix socket 2 s each
 * (OS_Accept's is_af_unix_keeper waits that long for a first byte), then
 * the thread closes it and takes the next one, which may be silent too.
 * And OS_Accept returns -1 on any accept(2) error but a handful (EMFILE
 * included), which ended an accept thread for good.
 *
 * So the gate accepts, and lets libfcgi read only what has already come.
 * A held connection is in an edge-triggered epoll set; at each arrival
 * the gate looks at what the socket holds (SIOCINQ, then recv(MSG_PEEK),
 * which takes nothing off) once there is enough to tell more
 * (fcgi_scan's need), so a peer that trickles bytes costs one ioctl per
 * arrival and one peek per record. When the request is whole the socket
 * leaves the set and waits in a ready queue for an accept thread,
 * which hands it to libfcgi (server/fcgi.c) to read from memory-fast
 * buffers. A request without a body (a GET: /health, /metrics, /stream)
 * waits in its own queue, which a thread kept for such requests takes
 * too, so none waits behind POST bodies being parsed (gate_take). Every held connection has the same timeout, so the held list
 * in accept order is also in deadline order: the gate closes from its
 * head.
 *
 * The watches. A request larger than GATE_HOLD_MAX is handed over before
 * it is whole (the kernel would stop taking it before it were), and an
 * answer larger than the socket's buffer blocks its writer; both run on
 * an accept thread. Each accept thread has a reserved descriptor that
 * refers to its connection's socket (dup2 onto it, which never fails for
 * want of a descriptor), armed around each blocking call; the gate's
 * thread looks at the watches every tick and shuts an armed socket down
 * (SHUT_RDWR) once its deadline has passed, which ends the blocked read
 * (EOF) or write (EPIPE). Shutting down the reserved descriptor is safe
 * whatever libfcgi closed meanwhile: the socket lives until the watch
 * lets go of it, so no other connection can have its number.
 */
#define _GNU_SOURCE
#include "transport/gate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <linux/sockios.h>
#include <unistd.h>

#include "proto/fcgi_scan.h"

#define GATE_EVENTS 64
/* Connections accepted per readiness of the listening socket before the
 * held ones get a turn. */
#define GATE_ACCEPT_BATCH 64
#define GATE_MAX_ALLOWED 64
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

/* A connection the gate holds, or one in the ready queue. */
struct gate_conn {
	int fd;
	int in_epoll;
	int light;                   /* whole, with no body (gate_take) */
	int64_t deadline;            /* CLOCK_MONOTONIC ns */
	size_t need;                 /* look again once this much came */
	struct gate_conn *prev, *next;
};

struct gate_list {
	struct gate_conn *head, *tail;
};

/* An accept thread waiting in gate_take: the gate hands a connection to
 * the one that went idle last (a stack), so the threads that are busy
 * anyway take the work and the others stay asleep. Handing work out in
 * turn instead (a condition variable wakes waiters about in order) made
 * every accept thread's malloc arena grow and shrink by turns (libfcgi
 * allocates 16 KiB of buffers per request there, the I/O thread frees
 * them): sysmalloc and madvise were 13% of the responder's CPU samples
 * (perf) in a burst of one-token streams, against 3% with the stack, as
 * much as before the gate. */
struct gate_waiter {
	sem_t sem;
	struct gate_conn *conn;      /* what it was handed */
	struct gate_waiter *next;    /* the idle stack */
};

struct gate_watch {
	struct gate *g;
	/* its own lock, so that arming costs the accept thread no contended
	 * lock: only the gate's tick takes it too */
	pthread_mutex_t mu;
	int fd;                      /* reserved: /dev/null or the socket */
	int bound;                   /* fd refers to the connection */
	int armed;                   /* a read or write may block now */
	int fired;                   /* shut down already */
	int64_t deadline;
};

/* One kind of event logged GATE_LOG_EVERY_S at most. */
struct gate_log {
	int64_t at;                  /* last line; 0: none yet */
	uint64_t unlogged;           /* events since, not on a line */
};

struct gate {
	int listen_fd;
	int epfd;
	int null_fd;                 /* /dev/null: what idle watches hold */
	int64_t timeout_ns;
	int tick_ms;                 /* longest epoll wait */
	int64_t (*now)(void);
	in_addr_t allowed[GATE_MAX_ALLOWED];
	size_t nallowed;
	int listen_armed;            /* the listener is in the epoll set */
	pthread_t thread;

	/* the gate thread's own */
	struct gate_list held;       /* by deadline */
	int64_t retry_at;            /* back-off: 0 when accepting */
	int64_t backoff_ns;
	uint64_t episode;            /* failures since the last accept */
	int64_t episode_start;
	struct gate_log fail_log;
	unsigned char peek[GATE_HOLD_MAX];

	/* the ready queues and the idle accept threads, shared with them:
	 * requests without a body (light) and the others, each queue in
	 * arrival order; the threads that take any request, and those kept
	 * for light ones (gate_take) */
	pthread_mutex_t mu;
	struct gate_list ready_light;  /* no thread idle that takes it */
	struct gate_list ready_body;
	struct gate_waiter *idle;      /* take any, last idle first */
	struct gate_waiter *idle_light;   /* take light ones only */

	/* the watches: the slots taken under watch_mu, each watch under
	 * its own lock */
	pthread_mutex_t watch_mu;
	struct gate_watch watches[GATE_MAX_WATCHES];
	atomic_int nwatches;

	/* the close and refusal logs, shared too */
	pthread_mutex_t log_mu;
	struct gate_log timeout_log, refuse_log;

	/* health, read by /health on any thread */
	_Atomic uint64_t failures;
	atomic_int last_errno;
	_Atomic int64_t last_failure;
	atomic_int backing_off;
	_Atomic uint64_t timed_out;
	_Atomic uint64_t refused;
};

/* ---- lists ------------------------------------------------------------- */

static void
gate_list_append(struct gate_list *l, struct gate_conn *c)
{
	c->next = NULL;
	c->prev = l->tail;
	if (l->tail != NULL)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
}

static void
gate_list_remove(struct gate_list *l, struct gate_conn *c)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = c->next = NULL;
}

/* ---- logging ----------------------------------------------------------- */

/*
 * One event of a kind: true when a line is due now (the first, or the
 * first after GATE_LOG_EVERY_S), with *more the events of the kind since
 * the last line that were not on one. Caller holds the lock that guards l.
 */
static int
gate_log_due(struct gate_log *l, int64_t now, uint64_t *more)
{
	if (l->at != 0 && now - l->at < GATE_LOG_EVERY_S * NS_PER_S) {
		l->unlogged++;
		return 0;
	}
	*more = l->unlogged;
	l->unlogged = 0;
	l->at = now != 0 ? now : 1;
	return 1;
}

/* " (and N more since the last such line)", or "" when N is 0; the
 * string is the calling thread's, until its next call. */
static const char *
gate_log_more(uint64_t more)
{
	static _Thread_local char buf[64];

	if (more == 0)
		return "";
	snprintf(buf, sizeof(buf), " (and %llu more since the last such "
	    "line)", (unsigned long long)more);
	return buf;
}

/* A connection closed at its deadline (held: it sent no whole request in
 * time; watched: an accept thread's read or write on it outlasted it). */
static void
gate_count_timeout(struct gate *g, const char *what, int64_t now)
{
	uint64_t more = 0;

	atomic_fetch_add(&g->timed_out, 1);
	pthread_mutex_lock(&g->log_mu);
	if (gate_log_due(&g->timeout_log, now, &more))
		fprintf(stderr, "tokstream-fcgi: closed a FastCGI connection "
		    "%s within --accept-timeout-ms %lld%s\n", what,
		    (long long)(g->timeout_ns / NS_PER_MS),
		    gate_log_more(more));
	pthread_mutex_unlock(&g->log_mu);
}

static void
gate_count_refused(struct gate *g, const char *why, int64_t now)
{
	uint64_t more = 0;

	atomic_fetch_add(&g->refused, 1);
	pthread_mutex_lock(&g->log_mu);
	if (gate_log_due(&g->refuse_log, now, &more))
		fprintf(stderr, "tokstream-fcgi: refused a FastCGI connection: "
		    "%s%s\n", why, gate_log_more(more));
	pthread_mutex_unlock(&g->log_mu);
}

void
gate_refused(struct gate *g, const char *why)
{
	gate_count_refused(g, why, g->now());
}

/* ---- the held connections --------------------------------------------- */

static void
gate_close(struct gate *g, struct gate_conn *c)
{
	gate_list_remove(&g->held, c);
	close(c->fd);                /* leaves the epoll set too */
	free(c);
}

/* To an idle accept thread, or into a ready queue when none that may
 * take it is idle (gate_take). A light request (no body) goes to a
 * thread kept for light ones first, so the threads that take any stay
 * free for bodies; a request with a body only to one that takes any. */
static void
gate_hand_over(struct gate *g, struct gate_conn *c)
{
	struct gate_waiter *w;

	if (c->in_epoll)
		(void)epoll_ctl(g->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	c->in_epoll = 0;
	pthread_mutex_lock(&g->mu);
	w = NULL;
	if (c->light && g->idle_light != NULL) {
		w = g->idle_light;
		g->idle_light = w->next;
	} else if (g->idle != NULL) {
		w = g->idle;
		g->idle = w->next;
	}
	if (w != NULL)
		w->conn = c;
	else if (c->light)
		gate_list_append(&g->ready_light, c);
	else
		gate_list_append(&g->ready_body, c);
	pthread_mutex_unlock(&g->mu);
	if (w != NULL)
		sem_post(&w->sem);
}

/* What gate_look did with a connection. */
enum gate_fate {
	GATE_HELD,                   /* still held: wait for more */
	GATE_GONE                    /* handed over or closed: c is freed
				      * or no longer the gate's */
};

/*
 * Looks at what c has sent (hup: the peer will send no more; first: c was
 * just accepted) and hands it over, closes it, or keeps holding it. c is
 * on the held list.
 *
 * The first look peeks at once: lighttpd has usually sent the whole
 * request by the time it is accepted, so that is one recv(2) for the lot,
 * and a recv of 0 is a peer already gone (a port check, or one that
 * waited in the listen queue while descriptors were short, closed now
 * so that a burst of them cannot use up the descriptors again). Later
 * looks first ask how much is there (SIOCINQ) and peek only when it is
 * enough to tell more.
 */
static enum gate_fate
gate_look(struct gate *g, struct gate_conn *c, int hup, int first,
    int64_t now)
{
	struct fcgi_scan s;
	size_t want = GATE_HOLD_MAX;
	int inq = 0;
	ssize_t got;

	if (!first) {
		if (ioctl(c->fd, SIOCINQ, &inq) != 0 || inq < 0) {
			gate_close(g, c);
			return GATE_GONE;
		}
		if ((size_t)inq < c->need && (size_t)inq < GATE_HOLD_MAX) {
			if (!hup)
				return GATE_HELD;
			gate_close(g, c);    /* gone, its request not whole */
			return GATE_GONE;
		}
		if ((size_t)inq < want)
			want = (size_t)inq;
	}
	got = recv(c->fd, g->peek, want, MSG_PEEK | MSG_DONTWAIT);
	if (got < 0 && (errno == EAGAIN || errno == EINTR) && !hup)
		return GATE_HELD;
	if (got <= 0) {
		gate_close(g, c);
		return GATE_GONE;
	}
	if (fcgi_scan(g->peek, (size_t)got, &s) != TS_OK) {
		gate_count_refused(g, s.why, now);
		gate_close(g, c);
		return GATE_GONE;
	}
	if (!s.whole && s.head_end == 0 && s.records > GATE_MAX_RECORDS) {
		gate_count_refused(g, "too many records before the params' "
		    "end", now);
		gate_close(g, c);
		return GATE_GONE;
	}
	if (s.whole || (size_t)got >= GATE_HOLD_MAX ||
	    s.records > GATE_MAX_RECORDS) {
		c->light = s.whole && s.body == 0;
		gate_list_remove(&g->held, c);
		gate_hand_over(g, c);
		return GATE_GONE;
	}
	c->need = s.need;
	if (!hup)
		return GATE_HELD;
	gate_close(g, c);
	return GATE_GONE;
}

/* Closes the held connections whose deadline has passed. */
static void
gate_expire(struct gate *g, int64_t now)
{
	while (g->held.head != NULL && g->held.head->deadline <= now) {
		gate_close(g, g->held.head);
		gate_count_timeout(g, "that sent no whole request", now);
	}
}

/* ---- accepting ---------------------------------------------------------- */

/* libfcgi's rule (os_unix.c ClientAddrOK, OS_Accept): only an IPv4 peer
 * is checked, against the list; an empty list lets everyone in. */
static int
gate_peer_allowed(const struct gate *g, const struct sockaddr_storage *sa)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
	size_t i;

	if (sa->ss_family != AF_INET || g->nallowed == 0)
		return 1;
	for (i = 0; i < g->nallowed; i++)
		if (g->allowed[i] == in->sin_addr.s_addr)
			return 1;
	return 0;
}

/* accept(2) errors that belong to one connection, which Linux reports
 * from accept (accept(2), "Error handling"): take the next. */
static int
gate_errno_transient(int e)
{
	switch (e) {
	case EINTR: case ECONNABORTED: case EPROTO: case EPERM:
	case ENETDOWN: case ENOPROTOOPT: case EHOSTDOWN: case ENONET:
	case EHOSTUNREACH: case EOPNOTSUPP: case ENETUNREACH:
	case ETIMEDOUT: case ECONNRESET:
		return 1;
	default:
		return 0;
	}
}

static void
gate_listen_arm(struct gate *g, int on)
{
	struct epoll_event ev;

	if (g->listen_armed == on)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.events = on ? EPOLLIN : 0;
	ev.data.ptr = NULL;          /* NULL: the listening socket */
	if (epoll_ctl(g->epfd, EPOLL_CTL_MOD, g->listen_fd, &ev) == 0)
		g->listen_armed = on;
}

/* accept(2) failed with e: count, log, and stop accepting for the
 * back-off (the listening socket stays readable, so retrying at once
 * would spin). */
static void
gate_accept_failed(struct gate *g, int e, int64_t now)
{
	uint64_t more = 0;

	atomic_fetch_add(&g->failures, 1);
	atomic_store(&g->last_errno, e);
	atomic_store(&g->last_failure, now);
	if (g->episode++ == 0) {
		g->episode_start = now;
		g->backoff_ns = GATE_BACKOFF_MIN_MS * NS_PER_MS;
		g->fail_log.at = 0;
	} else if (g->backoff_ns < GATE_BACKOFF_MAX_MS * NS_PER_MS) {
		g->backoff_ns *= 2;
		if (g->backoff_ns > GATE_BACKOFF_MAX_MS * NS_PER_MS)
			g->backoff_ns = GATE_BACKOFF_MAX_MS * NS_PER_MS;
	}
	if (gate_log_due(&g->fail_log, now, &more))
		fprintf(stderr, "tokstream-fcgi: accept failed: %s; %llu "
		    "failures in %lld ms, retrying in %lld ms (back-off %d to "
		    "%d ms); /health says degraded\n", strerror(e),
		    (unsigned long long)g->episode,
		    (long long)((now - g->episode_start) / NS_PER_MS),
		    (long long)(g->backoff_ns / NS_PER_MS),
		    GATE_BACKOFF_MIN_MS, GATE_BACKOFF_MAX_MS);
	g->retry_at = now + g->backoff_ns;
	atomic_store(&g->backing_off, 1);
	gate_listen_arm(g, 0);
}

/* A connection was accepted: an episode of failures is over. */
static void
gate_accept_works(struct gate *g, int64_t now)
{
	if (g->episode == 0)
		return;
	fprintf(stderr, "tokstream-fcgi: accept works again after %llu "
	    "failures in %lld ms\n", (unsigned long long)g->episode,
	    (long long)((now - g->episode_start) / NS_PER_MS));
	g->episode = 0;
}

/* A new connection: allowed? then held, unless what it sent already
 * decides. */
static void
gate_admit(struct gate *g, int fd, const struct sockaddr_storage *sa,
    int64_t now)
{
	struct epoll_event ev;
	struct gate_conn *c;
	int one = 1;

	if (!gate_peer_allowed(g, sa)) {
		close(fd);
		gate_count_refused(g, "its address is not in "
		    "FCGI_WEB_SERVER_ADDRS", now);
		return;
	}
	/* as libfcgi's OS_Accept: responses go out as they are written */
	if (sa->ss_family == AF_INET)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
	c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->deadline = now + g->timeout_ns;
	c->need = FCGI_SCAN_HEADER;
	gate_list_append(&g->held, c);
	if (gate_look(g, c, 0, 1, now) == GATE_GONE)
		return;
	/* Edge-triggered: an arrival wakes the gate once, and what is not
	 * taken off the socket does not wake it again. Adding a socket
	 * that already has data reports it (epoll(7)). */
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
	ev.data.ptr = c;
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		gate_close(g, c);
		return;
	}
	c->in_epoll = 1;
}

static void
gate_accept(struct gate *g, int64_t now)
{
	int i;

	for (i = 0; i < GATE_ACCEPT_BATCH; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		int fd;

		memset(&sa, 0, sizeof(sa));
		fd = accept4(g->listen_fd, (struct sockaddr *)&sa, &len,
		    SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (gate_errno_transient(errno))
				continue;
			gate_accept_failed(g, errno, now);
			return;
		}
		gate_accept_works(g, now);
		gate_admit(g, fd, &sa, now);
	}
}

/* ---- watches ------------------------------------------------------------ */

/* Caller holds w->mu. */
static void
gate_watch_fire(struct gate_watch *w, int64_t now)
{
	if (!w->bound || !w->armed || w->fired || now < w->deadline)
		return;
	(void)shutdown(w->fd, SHUT_RDWR);
	w->fired = 1;
}

static void
gate_watch_check(struct gate *g, int64_t now)
{
	int i, n = atomic_load(&g->nwatches), fired = 0;

	for (i = 0; i < n; i++) {
		struct gate_watch *w = &g->watches[i];
		int was;

		pthread_mutex_lock(&w->mu);
		was = w->fired;
		gate_watch_fire(w, now);
		fired += w->fired && !was;
		pthread_mutex_unlock(&w->mu);
	}
	while (fired-- > 0)
		gate_count_timeout(g, "whose request or answer an accept "
		    "thread was still reading or writing", now);
}

struct gate_watch *
gate_watch_new(struct gate *g)
{
	struct gate_watch *w = NULL;
	int fd = fcntl(g->null_fd, F_DUPFD_CLOEXEC, 0), n;

	if (fd < 0)
		return NULL;
	pthread_mutex_lock(&g->watch_mu);
	n = atomic_load(&g->nwatches);
	if (n < GATE_MAX_WATCHES) {
		w = &g->watches[n];
		pthread_mutex_init(&w->mu, NULL);
		w->g = g;
		w->fd = fd;
		/* published whole: the gate's tick reads the count first */
		atomic_store(&g->nwatches, n + 1);
	}
	pthread_mutex_unlock(&g->watch_mu);
	if (w == NULL)
		close(fd);
	return w;
}

void
gate_watch_begin(struct gate_watch *w, int fd)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->armed = 0;
	w->fired = 0;
	w->bound = dup2(fd, w->fd) == w->fd;
	w->deadline = w->g->now() + w->g->timeout_ns;
	pthread_mutex_unlock(&w->mu);
}

void
gate_watch_arm(struct gate_watch *w)
{
	int fired;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->armed = 1;
	fired = w->fired;
	gate_watch_fire(w, w->g->now());
	fired = w->fired && !fired;
	pthread_mutex_unlock(&w->mu);
	if (fired)
		gate_count_timeout(w->g, "whose request or answer an accept "
		    "thread was still reading or writing", w->g->now());
}

void
gate_watch_disarm(struct gate_watch *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->armed = 0;
	pthread_mutex_unlock(&w->mu);
}

void
gate_watch_end(struct gate_watch *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->armed = 0;
	w->bound = 0;
	(void)dup2(w->g->null_fd, w->fd);
	pthread_mutex_unlock(&w->mu);
}

/* ---- the thread ---------------------------------------------------------- */

/* The longest wait: the tick, the next held deadline, the retry. */
static int
gate_wait_ms(const struct gate *g, int64_t now)
{
	int64_t until = now + g->tick_ms * NS_PER_MS;

	if (g->held.head != NULL && g->held.head->deadline < until)
		until = g->held.head->deadline;
	if (g->retry_at != 0 && g->retry_at < until)
		until = g->retry_at;
	if (until <= now)
		return 0;
	/* round up: waking before a deadline would only wait again */
	return (int)((until - now + NS_PER_MS - 1) / NS_PER_MS);
}

static void *
gate_main(void *arg)
{
	struct gate *g = arg;
	struct epoll_event ev[GATE_EVENTS];

	for (;;) {
		int64_t now = g->now();
		int i, n;

		n = epoll_wait(g->epfd, ev, GATE_EVENTS, gate_wait_ms(g, now));
		now = g->now();
		for (i = 0; i < n; i++) {
			struct gate_conn *c = ev[i].data.ptr;

			if (c == NULL)
				gate_accept(g, now);
			else
				(void)gate_look(g, c, (ev[i].events &
				    (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0,
				    0, now);
		}
		gate_expire(g, now);
		if (g->retry_at != 0 && now >= g->retry_at) {
			g->retry_at = 0;
			atomic_store(&g->backing_off, 0);
			gate_listen_arm(g, 1);
			gate_accept(g, now);
		}
		gate_watch_check(g, now);
	}
	return NULL;
}

/* FCGI_WEB_SERVER_ADDRS, split as libfcgi does (ClientAddrOK: commas,
 * each piece through inet_addr). */
static void
gate_parse_allowed(struct gate *g, const char *list)
{
	char piece[64];
	const char *p = list;

	g->nallowed = 0;
	while (p != NULL && *p != '\0' && g->nallowed < GATE_MAX_ALLOWED) {
		const char *comma = strchr(p, ',');
		size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);

		if (n < sizeof(piece)) {
			memcpy(piece, p, n);
			piece[n] = '\0';
			g->allowed[g->nallowed++] = inet_addr(piece);
		}
		p = comma != NULL ? comma + 1 : NULL;
	}
}

enum ts_err
gate_start(struct gate **out, const struct gate_config *cfg)
{
	struct epoll_event ev;
	struct gate *g = xcalloc(1, sizeof(*g));
	pthread_attr_t attr;
	enum ts_err rc = TS_ESYS;
	int flags, err;

	g->listen_fd = cfg->listen_fd;
	g->now = cfg->now;
	g->timeout_ns = ts_ms_to_ns(cfg->timeout_ms);
	g->tick_ms = (int)(cfg->timeout_ms / 20);
	if (g->tick_ms < 5)
		g->tick_ms = 5;
	if (g->tick_ms > 100)
		g->tick_ms = 100;
	gate_parse_allowed(g, cfg->allowed_addrs);
	pthread_mutex_init(&g->mu, NULL);
	pthread_mutex_init(&g->watch_mu, NULL);
	pthread_mutex_init(&g->log_mu, NULL);
	g->epfd = epoll_create1(EPOLL_CLOEXEC);
	g->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	flags = fcntl(g->listen_fd, F_GETFL);
	if (g->epfd < 0 || g->null_fd < 0 || flags < 0 ||
	    fcntl(g->listen_fd, F_SETFL, flags | O_NONBLOCK) != 0)
		goto out;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->listen_fd, &ev) != 0)
		goto out;
	g->listen_armed = 1;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&g->thread, &attr, gate_main, g);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		errno = err;
		goto out;
	}
	*out = g;
	g = NULL;
	rc = TS_OK;
out:
	if (g != NULL) {
		err = errno;
		if (g->epfd >= 0)
			close(g->epfd);
		if (g->null_fd >= 0)
			close(g->null_fd);
		free(g);
		errno = err;
	}
	return rc;
}

enum ts_err
gate_take(struct gate *g, int light_only, int *fd)
{
	static _Thread_local struct gate_waiter self;
	static _Thread_local int self_ready;
	struct gate_conn *c;

	if (!self_ready) {
		/* fails only for a value over SEM_VALUE_MAX or a shared
		 * semaphore where there are none (sem_init(3)) */
		(void)sem_init(&self.sem, 0, 0);
		self_ready = 1;
	}
	pthread_mutex_lock(&g->mu);
	/* light ones first: each is short, and a /health waits behind none
	 * of the bodies */
	c = g->ready_light.head;
	if (c != NULL) {
		gate_list_remove(&g->ready_light, c);
	} else if (!light_only && (c = g->ready_body.head) != NULL) {
		gate_list_remove(&g->ready_body, c);
	} else if (light_only) {
		self.conn = NULL;
		self.next = g->idle_light;
		g->idle_light = &self;
	} else {
		self.conn = NULL;
		self.next = g->idle;
		g->idle = &self;
	}
	pthread_mutex_unlock(&g->mu);
	if (c == NULL) {
		while (sem_wait(&self.sem) != 0)
			;            /* EINTR: the post is still to come */
		c = self.conn;
	}
	*fd = c->fd;
	free(c);
	return TS_OK;
}

void
gate_health(struct gate *g, struct gate_health *h)
{
	int64_t last;

	memset(h, 0, sizeof(*h));
	h->since_failure_s = -1;
	if (g == NULL)
		return;
	h->accept_failures = atomic_load(&g->failures);
	h->last_errno = atomic_load(&g->last_errno);
	h->backing_off = atomic_load(&g->backing_off);
	h->timed_out = atomic_load(&g->timed_out);
	h->refused = atomic_load(&g->refused);
	last = atomic_load(&g->last_failure);
	if (h->accept_failures > 0) {
		int64_t ago = g->now() - last;

		h->since_failure_s = (double)ago / (double)NS_PER_S;
		h->degraded = ago < GATE_DEGRADED_NS;
	}
	h->degraded |= h->backing_off;
}
