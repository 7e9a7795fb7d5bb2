/*
 * transport/io.c - the I/O threads (io.h): epoll over every stream's
 * connection, writes only as large as the socket takes at once, hang-ups,
 * keep-alives and write stalls.
 *
 * A stream's life on its thread: io_stream queues it in the thread's
 * inbox; the thread takes it, registers its socket for EPOLLRDHUP, names
 * its own listener for the sequence (engine_seq_listen) and pumps it.
 * Pumping encodes what the engine has published (relay_pump: token events,
 * a keep-alive when one is due, the end) into the stream's buffer while
 * that buffer is small, then writes as much as conn room() says the
 * socket takes without blocking. When the socket is full the stream waits
 * for EPOLLOUT (and its tokens wait in the engine's record); when it has
 * waited write_stall_ms it is cancelled. When its end has gone out the
 * request is finished (FCGI_END_REQUEST) and its memory freed.
 *
 * An answer made whole (io_answer) is an io_conn with no relay whose
 * buffer is the answer and which is ended from the start: it is pumped
 * once when taken over, then on EPOLLOUT, as a stream's end would be.
 *
 * Every stream of a thread is touched only by that thread; the inbox is
 * the one thing shared with the accept threads (a mutex), the listener the
 * one thing shared with the engine (lock-free, engine.h).
 */
#define _GNU_SOURCE
#include "transport/io.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/buf.h"
#include "engine/engine.h"
#include "transport/conn.h"
#include "transport/relay.h"

#define IO_EVENTS 256
/* Encode more of a stream only while less than this is unsent: a stalled
 * client's tokens stay ids in the engine, not bytes here. */
#define IO_ENCODE_WATERMARK (16u * 1024u)
/* Most bytes of one write. */
#define IO_WRITE_MAX (64u * 1024u)
/* A stream's buffer: one pump's worth (a whole JSON answer). */
#define IO_OUT_MAX RELAY_OUT_MAX
/* What a write costs the socket beyond its bytes: the kernel charges a
 * buffer's true size (measured: a 200-byte write to a unix socket adds
 * 1,280 to SIOCOUTQ) and libfcgi adds a record header and padding per
 * 8 KiB it flushes. Room is charged this much extra per write. */
#define IO_WRITE_OVERHEAD 2048u
#define IO_WRITE_COST(n) ((n) + IO_WRITE_OVERHEAD * ((n) / 8192u + 1u))

/* What finishing a request writes (FCGI_END_REQUEST and an empty
 * FCGI_STDOUT record), with room to spare. */
#define IO_FINISH_ROOM 64u
/* The longest epoll wait: the clock is looked at again at least this
 * often. */
#define IO_POLL_MAX_MS 1000

struct io_thread;

/* One stream on its I/O thread. */
struct io_conn {
	struct io_thread *t;
	struct conn *conn;
	struct relay *relay;
	struct ts_buf out;            /* encoded: p[off..len) not written */
	size_t off;
	size_t room;                  /* what the socket takes, as last
				       * measured, less what was written */
	int fd;
	int64_t blocked_since;        /* 0: not waiting for room */
	int64_t ka_deadline;          /* INT64_MAX: not on the list */
	int64_t hold_deadline;        /* INT64_MAX: not on the holds */
	int epout;                    /* EPOLLOUT is registered */
	int ended;                    /* the relay's end is in out */
	int written;                  /* bytes went out since relay_pump */
	int writable;                 /* EPOLLOUT said so: pump even if
				       * blocked */
	int closed;                   /* freed at the end of the pass */
	uint64_t news_pass;           /* take_news pass that queued it */
	struct io_conn *ka_prev, *ka_next;  /* keep-alives, by deadline */
	struct io_conn *st_prev, *st_next;  /* stalls, by blocked_since */
	struct io_conn *ho_prev, *ho_next;  /* holds, by hold_deadline */
	struct io_conn *rd_prev, *rd_next;  /* ready: a pump's backlog */
	int on_ready;                 /* on the ready list */
	struct io_conn *next;         /* inbox, or the closed list */
};

/* A doubly linked list of io_conns through one pair of links. */
struct io_list {
	struct io_conn *head, *tail;
};

struct io_thread {
	struct io *io;
	pthread_t thread;
	int epfd;
	int evfd;                     /* engine news and the inbox */
	struct engine_listener listener;
	pthread_mutex_t mu;           /* the inbox */
	struct io_conn *inbox;        /* handed over, newest first */
	struct io_list ka;            /* streams with a keep-alive clock */
	struct io_list stalls;        /* streams waiting for room */
	struct io_list holds;         /* held responses (relay_hold) */
	struct io_list ready;         /* pumped to their budget with more
				       * ready (relay_backlog) */
	struct io_conn *closed;       /* to free after this pass */
	atomic_int nconns;
	struct io_conn **pump;        /* take_news: the streams to pump */
	size_t npump, cap_pump;
	uint64_t pass;
};

struct io {
	int64_t (*now)(void);         /* CLOCK_MONOTONIC now, in ns */
	int n;
	int64_t stall_ns;             /* 0: never */
	atomic_uint next;             /* round robin */
	struct io_thread th[];
};

/* ---- lists ------------------------------------------------------------- */

#define LIST_APPEND(l, c, prev, next) do {				\
	(c)->prev = (l)->tail;						\
	(c)->next = NULL;						\
	if ((l)->tail != NULL)						\
		(l)->tail->next = (c);					\
	else								\
		(l)->head = (c);					\
	(l)->tail = (c);						\
} while (0)

#define LIST_REMOVE(l, c, prev, next) do {				\
	if ((c)->prev != NULL)						\
		(c)->prev->next = (c)->next;				\
	else								\
		(l)->head = (c)->next;					\
	if ((c)->next != NULL)						\
		(c)->next->prev = (c)->prev;				\
	else								\
		(l)->tail = (c)->prev;					\
	(c)->prev = (c)->next = NULL;					\
} while (0)

static size_t
pending(const struct io_conn *ic)
{
	return ic->out.len - ic->off;
}

/* Whether the stream waits for room. */
static int
blocked(const struct io_conn *ic)
{
	return ic->blocked_since != 0;
}

static void
epoll_set(struct io_conn *ic, int out)
{
	struct epoll_event ev;

	if (ic->epout == out)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLRDHUP | (out ? EPOLLOUT : 0);
	ev.data.ptr = ic;
	if (epoll_ctl(ic->t->epfd, EPOLL_CTL_MOD, ic->fd, &ev) == 0)
		ic->epout = out;
}

/* Puts the stream on the keep-alive list by its relay's next deadline
 * (a stream waiting for room needs none: it cannot send one). Deadlines
 * are the last write plus a constant, so appending keeps the order. */
static void
ka_update(struct io_conn *ic)
{
	int64_t d = blocked(ic) || ic->closed || ic->relay == NULL ?
	    INT64_MAX : relay_deadline(ic->relay);

	if (d == ic->ka_deadline)
		return;
	if (ic->ka_deadline != INT64_MAX)
		LIST_REMOVE(&ic->t->ka, ic, ka_prev, ka_next);
	ic->ka_deadline = d;
	if (d != INT64_MAX)
		LIST_APPEND(&ic->t->ka, ic, ka_prev, ka_next);
}

/* Puts a held response (relay_hold) on the holds list by the time it may
 * end, once: holds are rare and their deadlines almost always the
 * latest, so the walk from the tail is short. */
static void
hold_update(struct io_conn *ic)
{
	struct io_thread *t = ic->t;
	int64_t d = ic->closed || ic->relay == NULL ? INT64_MAX :
	    relay_hold_deadline(ic->relay);
	struct io_conn *p;

	if (d == ic->hold_deadline)
		return;
	if (ic->hold_deadline != INT64_MAX)
		LIST_REMOVE(&t->holds, ic, ho_prev, ho_next);
	ic->hold_deadline = d;
	if (d == INT64_MAX)
		return;
	for (p = t->holds.tail; p != NULL && p->hold_deadline > d;
	    p = p->ho_prev)
		;
	if (p == NULL) {                /* the earliest: at the head */
		ic->ho_prev = NULL;
		ic->ho_next = t->holds.head;
		if (t->holds.head != NULL)
			t->holds.head->ho_prev = ic;
		else
			t->holds.tail = ic;
		t->holds.head = ic;
	} else {                        /* after p */
		ic->ho_prev = p;
		ic->ho_next = p->ho_next;
		if (p->ho_next != NULL)
			p->ho_next->ho_prev = ic;
		else
			t->holds.tail = ic;
		p->ho_next = ic;
	}
}

/* On the ready list while its relay has a backlog and nothing unsent
 * (a stream waiting for room moves on EPOLLOUT). */
static void
ready_update(struct io_conn *ic)
{
	int want = !ic->closed && pending(ic) == 0 && !ic->ended &&
	    ic->relay != NULL && relay_backlog(ic->relay);

	if (want == ic->on_ready)
		return;
	if (want)
		LIST_APPEND(&ic->t->ready, ic, rd_prev, rd_next);
	else
		LIST_REMOVE(&ic->t->ready, ic, rd_prev, rd_next);
	ic->on_ready = want;
}

static void
block(struct io_conn *ic, int64_t now)
{
	epoll_set(ic, 1);
	if (!blocked(ic)) {
		ic->blocked_since = now > 0 ? now : 1;
		LIST_APPEND(&ic->t->stalls, ic, st_prev, st_next);
	}
}

/* Bytes went out while the stream waits for room: its client took some,
 * so it is slow, not stalled, and the stall clock starts again (at the
 * list's tail, which keeps it in blocked_since order). */
static void
progressed(struct io_conn *ic, int64_t now)
{
	if (!blocked(ic))
		return;
	LIST_REMOVE(&ic->t->stalls, ic, st_prev, st_next);
	ic->blocked_since = now > 0 ? now : 1;
	LIST_APPEND(&ic->t->stalls, ic, st_prev, st_next);
}

static void
unblock(struct io_conn *ic)
{
	epoll_set(ic, 0);
	if (blocked(ic)) {
		LIST_REMOVE(&ic->t->stalls, ic, st_prev, st_next);
		ic->blocked_since = 0;
	}
}

/* ---- one stream ------------------------------------------------------- */

/*
 * Ends the stream: cancels its sequence when the client did not get the
 * end (`cause` says why), finishes the request and releases the relay.
 * The io_conn itself is freed after the pass (events may still name it).
 */
static void
ic_close(struct io_conn *ic, int64_t now, enum engine_cause cause)
{
	struct io_thread *t = ic->t;

	if (ic->closed)
		return;
	if (cause != ENGINE_CAUSE_NONE && ic->relay != NULL)
		relay_gone(ic->relay, now, cause);
	unblock(ic);
	ic->closed = 1;
	ka_update(ic);
	hold_update(ic);
	ready_update(ic);
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, ic->fd, NULL);
	ic->conn->io = NULL;
	ic->conn->ops->finish(ic->conn);
	ic->conn = NULL;
	if (ic->relay != NULL)
		relay_finish(ic->relay);
	ic->relay = NULL;
	ts_buf_free(&ic->out);
	ic->next = t->closed;
	t->closed = ic;
	atomic_fetch_sub(&t->nconns, 1);
}

/*
 * Writes what the socket takes now of the unsent bytes. When all of them
 * are out, the relay hears that they were written (TTFT, ITL, E2E are
 * clocked here). TS_OK, or TS_EHUP when the client is gone.
 */
static enum ts_err
ic_flush(struct io_conn *ic, int64_t now)
{
	while (pending(ic) > 0) {
		size_t want = pending(ic) < IO_WRITE_MAX ? pending(ic) :
		    IO_WRITE_MAX, n;

		if (ic->room < IO_WRITE_COST(want))
			ic->room = ic->conn->ops->room(ic->conn);
		if (ic->room <= IO_WRITE_COST(0)) {
			block(ic, now);
			return TS_OK;
		}
		n = ic->room >= IO_WRITE_COST(want) ? want :
		    ic->room - IO_WRITE_COST(0);
		if (n > want)
			n = want;
		if (conn_write(ic->conn, ic->out.p + ic->off, n) != TS_OK)
			return TS_EHUP;
		ic->room = ic->room > IO_WRITE_COST(n) ?
		    ic->room - IO_WRITE_COST(n) : 0;
		ic->off += n;
		ic->written = 1;
		progressed(ic, now);
	}
	ts_buf_reset(&ic->out);
	ic->off = 0;
	if (ic->written) {
		ic->written = 0;
		if (ic->relay != NULL)
			relay_flushed(ic->relay, now);
	}
	return TS_OK;
}

/* Encodes what is ready (while little is unsent), writes what fits, and
 * finishes the request once its end is out. */
static void
ic_pump(struct io_conn *ic, int64_t now)
{
	/* a stream waiting for room moves on EPOLLOUT, not on news: its
	 * tokens stay ids in the engine meanwhile */
	if (ic->closed || (blocked(ic) && !ic->writable))
		return;
	ic->writable = 0;
	if (!ic->ended && pending(ic) < IO_ENCODE_WATERMARK) {
		enum relay_state st;

		if (ic->off > 0) {      /* the unsent part to the front */
			memmove(ic->out.p, ic->out.p + ic->off, pending(ic));
			ic->out.len -= ic->off;
			ic->off = 0;
		}
		st = relay_pump(ic->relay, &ic->out, now);
		if (st == RELAY_FAIL) {
			ic_close(ic, now, relay_fail_cause(ic->relay));
			return;
		}
		ic->ended = st == RELAY_DONE;
	}
	if (ic_flush(ic, now) != TS_OK) {
		ic_close(ic, now, ENGINE_CAUSE_CLIENT_GONE);
		return;
	}
	if (pending(ic) > 0)
		return;                 /* waits for room (blocked) */
	if (ic->ended) {
		/* the end records must fit too: the finish must not block */
		if (ic->conn->ops->room(ic->conn) < IO_FINISH_ROOM) {
			block(ic, now);
			return;
		}
		ic_close(ic, now, ENGINE_CAUSE_NONE);
		return;
	}
	unblock(ic);
	ka_update(ic);
	hold_update(ic);
	ready_update(ic);
}

/* ---- the thread ------------------------------------------------------- */

/* The engine's wake-up (and the inbox's): one eventfd write. */
static void
io_wake(struct engine_listener *l)
{
	struct io_thread *t = l->ctx;
	uint64_t one = 1;

	if (write(t->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
		/* the thread also looks at its clock once a second */
	}
}

/* Takes over the streams in the inbox, oldest first. */
static void
take_inbox(struct io_thread *t, int64_t now)
{
	struct io_conn *ic, *next, *list = NULL;
	struct epoll_event ev;

	pthread_mutex_lock(&t->mu);
	ic = t->inbox;
	t->inbox = NULL;
	pthread_mutex_unlock(&t->mu);
	for (; ic != NULL; ic = next) {         /* newest first: reverse */
		next = ic->next;
		ic->next = list;
		list = ic;
	}
	for (ic = list; ic != NULL; ic = next) {
		next = ic->next;
		ic->next = NULL;
		ic->conn->io = ic;
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLRDHUP;
		ev.data.ptr = ic;
		if (ic->fd < 0 ||
		    epoll_ctl(t->epfd, EPOLL_CTL_ADD, ic->fd, &ev) != 0) {
			ic->epout = -1;   /* not registered: nothing to MOD */
			ic_close(ic, now, ENGINE_CAUSE_CLIENT_GONE);
			continue;
		}
		if (ic->relay != NULL)
			relay_listen(ic->relay, &t->listener);
		else            /* a whole answer: no news will come */
			ic_pump(ic, now);
	}
}

/*
 * Pumps every stream the engine has news of, in the order it pushed
 * them (the batch's order, so each step writes in the same order). A
 * response of n choices has n sequences on the list: its stream is
 * pumped once, and the list is read whole before any pump, since a pump
 * that ends a response releases all its sequences (the later ones on
 * the list with them).
 */
static void
take_news(struct io_thread *t, int64_t now)
{
	struct engine_seq *s = engine_listener_take(&t->listener);
	size_t i;

	t->pass++;
	t->npump = 0;
	for (; s != NULL; s = engine_seq_next_news(s)) {
		struct conn *c = engine_seq_user(s);
		struct io_conn *ic = c != NULL ? c->io : NULL;

		if (ic == NULL || ic->news_pass == t->pass)
			continue;
		ic->news_pass = t->pass;
		if (t->npump == t->cap_pump) {
			t->cap_pump = t->cap_pump ? 2 * t->cap_pump : 64;
			t->pump = xrealloc(t->pump, t->cap_pump *
			    sizeof(*t->pump));
		}
		t->pump[t->npump++] = ic;
	}
	for (i = 0; i < t->npump; i++)
		ic_pump(t->pump[i], now);
}

/* Keep-alives due and streams stalled too long; returns the epoll
 * timeout in ms until the next of either. */
static int
run_timers(struct io_thread *t, int64_t now)
{
	int64_t next = now + (int64_t)IO_POLL_MAX_MS * 1000000;
	int guard = atomic_load(&t->nconns) + 1;
	struct io_conn *ic;

	while ((ic = t->stalls.head) != NULL && t->io->stall_ns > 0 &&
	    now - ic->blocked_since >= t->io->stall_ns)
		ic_close(ic, now, ENGINE_CAUSE_WRITE_STALL);
	/* each stream once: a pump that could not move its deadline
	 * (nothing fit) does not spin here */
	while ((ic = t->ka.head) != NULL && ic->ka_deadline <= now &&
	    guard-- > 0) {
		LIST_REMOVE(&t->ka, ic, ka_prev, ka_next);
		ic->ka_deadline = INT64_MAX;
		ic_pump(ic, now);
	}
	while ((ic = t->holds.head) != NULL && ic->hold_deadline <= now) {
		LIST_REMOVE(&t->holds, ic, ho_prev, ho_next);
		ic->hold_deadline = INT64_MAX;
		ic_pump(ic, now);
	}
	if (t->ka.head != NULL && t->ka.head->ka_deadline < next)
		next = t->ka.head->ka_deadline;
	if (t->holds.head != NULL && t->holds.head->hold_deadline < next)
		next = t->holds.head->hold_deadline;
	if ((ic = t->stalls.head) != NULL && t->io->stall_ns > 0 &&
	    ic->blocked_since + t->io->stall_ns < next)
		next = ic->blocked_since + t->io->stall_ns;
	if (next <= now)
		return 0;
	return (int)((next - now + 999999) / 1000000);
}

/* Pumps once each stream that stopped at its pump's budget with more
 * ready (relay_backlog), in the order they got there; one that is still
 * behind goes to the list's tail for the next pass, after the epoll
 * events in between. Returns 1 when the list is not empty after. */
static int
run_ready(struct io_thread *t, int64_t now)
{
	struct io_conn *ic, *last = t->ready.tail;

	while ((ic = t->ready.head) != NULL) {
		LIST_REMOVE(&t->ready, ic, rd_prev, rd_next);
		ic->on_ready = 0;
		ic_pump(ic, now);
		if (ic == last)
			break;
	}
	return t->ready.head != NULL;
}

static void
free_closed(struct io_thread *t)
{
	struct io_conn *ic = t->closed, *next;

	t->closed = NULL;
	for (; ic != NULL; ic = next) {
		next = ic->next;
		free(ic);
	}
}

static void *
io_main(void *arg)
{
	struct io_thread *t = arg;
	struct epoll_event evs[IO_EVENTS];
	int timeout = 0;

	for (;;) {
		int n = epoll_wait(t->epfd, evs, IO_EVENTS, timeout), i;
		int64_t now = t->io->now();

		/* new streams first: their news is pushed when they are
		 * taken over (engine_seq_listen) */
		take_inbox(t, now);
		for (i = 0; i < n; i++) {
			struct io_conn *ic = evs[i].data.ptr;

			if (ic == NULL) {
				uint64_t junk;

				if (read(t->evfd, &junk, sizeof(junk)) < 0 &&
				    errno != EAGAIN)
					continue;
				take_news(t, now);
				continue;
			}
			if (ic->closed)
				continue;
			if (evs[i].events & (EPOLLRDHUP | EPOLLHUP |
			    EPOLLERR)) {
				ic_close(ic, now, ENGINE_CAUSE_CLIENT_GONE);
				continue;
			}
			if (evs[i].events & EPOLLOUT) {
				ic->room = 0;   /* measure again */
				ic->writable = 1;
				ic_pump(ic, now);
			}
		}
		timeout = run_timers(t, t->io->now());
		if (run_ready(t, t->io->now()))
			timeout = 0;
		free_closed(t);
	}
	return NULL;
}

/* ---- the public side -------------------------------------------------- */

enum ts_err
io_start(struct io **out, int64_t (*now)(void), int n, double stall_ms)
{
	struct io *io;
	struct epoll_event ev;
	int i;

	*out = NULL;
	if (n <= 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		n = cpus > 0 ? (int)cpus : 1;
	}
	if (n > IO_MAX_THREADS)
		n = IO_MAX_THREADS;
	io = xcalloc(1, sizeof(*io) + (size_t)n * sizeof(io->th[0]));
	io->now = now;
	io->n = n;
	io->stall_ns = ts_ms_to_ns(stall_ms);
	for (i = 0; i < n; i++) {
		struct io_thread *t = &io->th[i];

		t->io = io;
		pthread_mutex_init(&t->mu, NULL);
		engine_listener_init(&t->listener, io_wake, t);
		t->epfd = epoll_create1(EPOLL_CLOEXEC);
		t->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (t->epfd < 0 || t->evfd < 0)
			return TS_ESYS;
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN;
		ev.data.ptr = NULL;
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->evfd, &ev) != 0 ||
		    pthread_create(&t->thread, NULL, io_main, t) != 0)
			return TS_ESYS;
		pthread_detach(t->thread);
	}
	*out = io;
	return TS_OK;
}

int
io_threads(const struct io *io)
{
	return io->n;
}

void
io_assign(struct io *io, struct conn *c)
{
	c->shard = (int)(atomic_fetch_add(&io->next, 1) % (unsigned)io->n);
	c->threads = io;
	c->answer = io_answer;
}

/* Hands ic (conn, relay or out set) to c's thread: the inbox, then a
 * wake-up. */
static void
hand_over(struct io *io, struct conn *c, struct io_conn *ic)
{
	struct io_thread *t = &io->th[c->shard];
	uint64_t one = 1;

	ic->t = t;
	ic->conn = c;
	ic->fd = c->ops->fd(c);
	ic->ka_deadline = INT64_MAX;
	ic->hold_deadline = INT64_MAX;
	/* before the thread can see it: from the push on, c may be freed */
	if (c->handed_off != NULL)
		*c->handed_off = 1;
	atomic_fetch_add(&t->nconns, 1);
	pthread_mutex_lock(&t->mu);
	ic->next = t->inbox;
	t->inbox = ic;
	pthread_mutex_unlock(&t->mu);
	if (write(t->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
		/* the thread also looks at its inbox once a second */
	}
}

void
io_stream(struct io *io, struct conn *c, struct relay *r)
{
	struct io_conn *ic = xcalloc(1, sizeof(*ic));

	ic->relay = r;
	ts_buf_init(&ic->out, IO_OUT_MAX);
	hand_over(io, c, ic);
}

void
io_answer(struct io *io, struct conn *c, struct ts_buf *b)
{
	struct io_conn *ic = xcalloc(1, sizeof(*ic));

	ic->out = *b;                   /* taken: b is left empty */
	memset(b, 0, sizeof(*b));
	ic->ended = 1;                  /* nothing to encode: only out */
	hand_over(io, c, ic);
}

int
io_active(const struct io *io)
{
	int i, n = 0;

	for (i = 0; i < io->n; i++)
		n += atomic_load(&io->th[i].nconns);
	return n;
}
