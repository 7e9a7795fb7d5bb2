/*
 * test_io.c - the I/O threads (transport/io.c) over real sockets: streams
 * routed as tokstream-fcgi routes them, handed to the I/O threads, written
 * to one end of a unix socketpair whose other end the test reads (or does
 * not). Real threads and the real clock: an engine with its own thread,
 * two I/O threads. What is checked:
 *   - a stream whose client reads arrives whole, in order, and is finished
 *     once;
 *   - a client that hangs up after two events has its sequence cancelled
 *     (client_gone) within a step, few tokens generated;
 *   - a client that never reads costs no thread and is cancelled with
 *     write_stall after --write-stall-ms, its tokens counted wasted;
 *   - a client that reads, but slower than the tokens come, is not: the
 *     stall clock restarts whenever it takes bytes;
 *   - a stream the server ends (its encoder fails) is cancelled with the
 *     server's cause, server_error or output_limit, not client_gone;
 *   - the hand-off: a 1-token stream may be finished (and its connection
 *     freed) by an I/O thread before route() returns on the accepting
 *     thread; the accepting side must learn of the hand-off from its own
 *     flag (run under ASan by scripts/check, this fails on a use after
 *     free if it does not);
 *   - an answer made whole (reply_send) over REPLY_INLINE_MAX goes to an
 *     I/O thread at once, arrives whole to a client that reads late, and
 *     is ended at the write-stall time when the client never reads; a
 *     small one is written on the caller's thread.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/sockios.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "transport/conn.h"
#include "transport/io.h"
#include "transport/relay.h"
#include "transport/reply.h"
#include "stores/metrics.h"
#include "handlers/settings.h"
#include "handlers/record.h"
#include "handlers/routes.h"
#include "handlers/server.h"
#include "stores/state.h"
#include "sim/sim.h"

#define MS 1000000LL
/* The write-stall time of these tests, ms. */
#define STALL_MS 300.0

static struct options opt;
static struct server srv;
static struct engine_backend be;
static struct record_ctx records;
static struct engine_hooks hooks;

/* ---- a connection over one end of a socketpair ----------------------- */

struct sock_conn {
	struct conn c;               /* first: what the handlers get */
	int fd;                      /* the server's end */
	char uri[256];
	const char *qs;              /* into uri */
	int free_on_finish;          /* finish() frees it (the hand-off
				      * test); else it stays to be looked at */
	atomic_int finished;         /* finish() calls */
};

static atomic_int finishes;      /* over all connections */

static struct sock_conn *
sc_of(struct conn *c)
{
	return (struct sock_conn *)(void *)c;
}

static const char *
sc_param(struct conn *c, const char *name)
{
	struct sock_conn *sc = sc_of(c);

	if (strcmp(name, "REQUEST_METHOD") == 0)
		return "GET";
	if (strcmp(name, "REQUEST_URI") == 0)
		return sc->uri;
	if (strcmp(name, "QUERY_STRING") == 0)
		return sc->qs;
	return NULL;
}

static enum ts_err
sc_read(struct conn *c, char *buf, size_t cap, size_t *got)
{
	(void)c;
	(void)buf;
	(void)cap;
	*got = 0;
	return TS_OK;
}

/* Blocking, as libfcgi's: the I/O threads write no more than room(). */
static enum ts_err
sc_write(struct conn *c, const char *p, size_t len)
{
	struct sock_conn *sc = sc_of(c);

	while (len > 0) {
		ssize_t n = send(sc->fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return TS_EHUP;
		p += n;
		len -= (size_t)n;
	}
	return TS_OK;
}

static int
sc_fd(struct conn *c)
{
	return sc_of(c)->fd;
}

/* As server/fcgi.c measures it: half of SO_SNDBUF less SIOCOUTQ. */
static size_t
sc_room(struct conn *c)
{
	struct sock_conn *sc = sc_of(c);
	int sndbuf = 0, queued = 0;
	socklen_t len = sizeof(sndbuf);

	if (getsockopt(sc->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) != 0 ||
	    ioctl(sc->fd, SIOCOUTQ, &queued) != 0 ||
	    queued >= sndbuf / 2)
		return 0;
	return (size_t)(sndbuf / 2 - queued);
}

static void
sc_finish(struct conn *c)
{
	struct sock_conn *sc = sc_of(c);

	close(sc->fd);
	sc->fd = -1;
	atomic_fetch_add(&finishes, 1);
	if (sc->free_on_finish) {
		free(sc);
		return;
	}
	atomic_fetch_add(&sc->finished, 1);
}

static const struct conn_ops sc_ops = {
	sc_param, sc_read, sc_write, NULL, NULL, sc_fd, sc_room, sc_finish
};

/*
 * A request for `target` (path and query) on a new socketpair (its
 * server end's SO_SNDBUF set to `sndbuf` when > 0); *peer gets the
 * client's end. As server/fcgi.c's accept thread does: assign, route,
 * and finish it here only if nobody took it over. Returns whether it was
 * handed off.
 */
static int
open_stream_buf(struct sock_conn *sc, const char *target, int *peer,
    int sndbuf)
{
	int sv[2], handed_off = 0;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	if (sndbuf > 0)
		assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF,
		    &sndbuf, sizeof(sndbuf)), 0);
	snprintf(sc->uri, sizeof(sc->uri), "%s", target);
	sc->qs = strchr(sc->uri, '?') != NULL ? strchr(sc->uri, '?') + 1 : "";
	sc->fd = sv[0];
	*peer = sv[1];
	sc->c.ops = &sc_ops;
	sc->c.handed_off = &handed_off;
	io_assign(srv.io, &sc->c);
	route(&srv, &sc->c, srv.now());
	if (!handed_off)
		sc_finish(&sc->c);
	return handed_off;
}

static int
open_stream(struct sock_conn *sc, const char *target, int *peer)
{
	return open_stream_buf(sc, target, peer, 0);
}

/* Reads from fd until EOF, at most cap - 1 bytes kept (NUL-terminated),
 * giving up after timeout_ms. Returns the bytes kept. */
static size_t
read_all(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t len = 0;
	int64_t end = engine_now_ns() + timeout_ms * MS;

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = (end - engine_now_ns()) / MS;
		char junk[4096];
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = read(fd, junk, sizeof(junk));
		if (n <= 0)
			break;
		if (len + (size_t)n >= cap)
			n = (ssize_t)(cap - 1 - len);
		memcpy(buf + len, junk, (size_t)n);
		len += (size_t)n;
	}
	buf[len] = '\0';
	return len;
}

static unsigned
count_of(const char *hay, const char *needle)
{
	unsigned n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* The X-Request-Id of a response's head. */
static uint64_t
request_id(const char *resp)
{
	const char *h = strstr(resp, "X-Request-Id: ");

	assert_non_null(h);
	return strtoull(h + 14, NULL, 10);
}

/* Waits up to timeout_ms for record `id` to leave running. */
static void
wait_ended(uint64_t id, struct state_record *rec, int timeout_ms)
{
	int i;

	for (i = 0; i < timeout_ms; i++) {
		assert_int_equal(state_lookup(srv.state, id, rec), TS_OK);
		if (rec->status != STATE_RUNNING)
			return;
		struct timespec ts = { 0, MS };
		nanosleep(&ts, NULL);
	}
	fail_msg("stream %llu still running after %d ms",
	    (unsigned long long)id, timeout_ms);
}

/* Waits up to 1 s for finish() (it closes the socket before it counts, so
 * the reader's EOF can come first); returns the count. */
static int
finished_of(struct sock_conn *sc)
{
	int i;

	for (i = 0; i < 1000 && atomic_load(&sc->finished) == 0; i++) {
		struct timespec ts = { 0, MS };
		nanosleep(&ts, NULL);
	}
	return atomic_load(&sc->finished);
}

static int
thread_count(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* ---- the tests ---------------------------------------------------------- */

/* Read to the end: every token, in order, [DONE], finished once. */
static void
test_stream_whole(void **unused)
{
	struct sock_conn *sc = calloc(1, sizeof(*sc));
	static char resp[1 << 16];
	int peer;

	(void)unused;
	assert_true(open_stream(sc, "/stream?prompt=hello&max_tokens=40"
	    "&tpot_ms=2", &peer));
	read_all(peer, resp, sizeof(resp), 5000);
	close(peer);
	assert_non_null(strstr(resp, "Status: 200"));
	assert_int_equal(count_of(resp, "data: {\"token\""), 40);
	assert_non_null(strstr(resp, "-39\ndata: "));     /* the last id */
	assert_non_null(strstr(resp, "data: [DONE]\n\n"));
	assert_int_equal(finished_of(sc), 1);
	free(sc);
}

/* The client reads two events and hangs up: EPOLLRDHUP cancels the
 * sequence within a step or two; it generated a handful, not 4000. */
static void
test_hangup_cancels(void **unused)
{
	struct sock_conn *sc = calloc(1, sizeof(*sc));
	struct state_record rec;
	char buf[8192];
	size_t len = 0;
	int peer;

	(void)unused;
	assert_true(open_stream(sc, "/stream?prompt=leave&max_tokens=4000"
	    "&tpot_ms=5", &peer));
	while (count_of(buf, "data: {\"token\"") < 2) {
		struct pollfd p = { peer, POLLIN, 0 };
		ssize_t n;

		assert_int_equal(poll(&p, 1, 5000), 1);
		n = read(peer, buf + len, sizeof(buf) - 1 - len);
		assert_true(n > 0);
		len += (size_t)n;
		buf[len] = '\0';
	}
	close(peer);
	wait_ended(request_id(buf), &rec, 2000);
	assert_int_equal(rec.status, STATE_CANCELLED);
	assert_int_equal(rec.cause, STATE_CAUSE_CLIENT_GONE);
	assert_true(rec.generated < 40);
	assert_int_equal(finished_of(sc), 1);
	free(sc);
}

/* 20 clients that never read: no thread more, each cancelled with
 * write_stall after STALL_MS, its unsent tokens wasted. */
static void
test_stall_costs_no_thread(void **unused)
{
	enum { N = 20 };
	struct sock_conn *sc[N];
	int peer[N], i, before = thread_count();
	struct engine_stats es;
	uint64_t last;
	struct state_record rec;

	(void)unused;
	for (i = 0; i < N; i++) {
		sc[i] = calloc(1, sizeof(*sc[i]));
		assert_true(open_stream(sc[i], "/stream?prompt=stall"
		    "&max_tokens=8192&tpot_ms=1", &peer[i]));
	}
	/* all of them blocked: their sockets full, nobody reading */
	struct timespec ts = { 0, 100 * MS };
	nanosleep(&ts, NULL);
	assert_int_equal(thread_count(), before);
	engine_stats(srv.engine, &es);
	assert_true(es.held >= N);
	assert_int_equal(state_lookup(srv.state, 0, &rec), TS_OK);
	last = rec.id;
	for (i = 0; i < N; i++) {
		wait_ended(last - (uint64_t)i, &rec, (int)STALL_MS * 10);
		assert_int_equal(rec.status, STATE_CANCELLED);
		assert_int_equal(rec.cause, STATE_CAUSE_WRITE_STALL);
		assert_true(rec.wasted > 0);
		assert_true(rec.generated < 8192);
	}
	for (i = 0; i < N; i++) {
		assert_int_equal(finished_of(sc[i]), 1);
		close(peer[i]);
		free(sc[i]);
	}
	assert_int_equal(thread_count(), before);
}

/* A client that reads 2 KiB every 50 ms from a small socket (slower than
 * 1,000 tokens/s come, so the socket stays full and the stream always has
 * bytes waiting) for 5 x STALL_MS is still served: it takes bytes, so it
 * is slow, not stalled. Then it leaves. */
static void
test_slow_reader_not_stalled(void **unused)
{
	struct sock_conn *sc = calloc(1, sizeof(*sc));
	struct state_record rec;
	static char head[4096];
	char buf[4096];
	size_t got = 0;
	int peer, i;
	uint64_t id;

	(void)unused;
	assert_true(open_stream_buf(sc, "/stream?prompt=slow&max_tokens=8192"
	    "&tpot_ms=1", &peer, 8192));
	/* the head first, for the id */
	while (strstr(head, "X-Request-Id: ") == NULL ||
	    strstr(strstr(head, "X-Request-Id: "), "\r\n") == NULL) {
		ssize_t n = read(peer, head + got, sizeof(head) - 1 - got);

		assert_true(n > 0);
		got += (size_t)n;
		head[got] = '\0';
	}
	id = request_id(head);
	for (i = 0; i < (int)(5 * STALL_MS / 50); i++) {
		struct timespec ts = { 0, 50 * MS };

		nanosleep(&ts, NULL);
		if (read(peer, buf, 2048) <= 0) {
			assert_int_equal(state_lookup(srv.state, id, &rec),
			    TS_OK);
			fail_msg("closed after %d reads: status %d cause %d "
			    "generated %llu", i, (int)rec.status,
			    (int)rec.cause, (unsigned long long)rec.generated);
		}
	}
	assert_int_equal(state_lookup(srv.state, id, &rec), TS_OK);
	assert_int_equal(rec.status, STATE_RUNNING);
	close(peer);
	wait_ended(id, &rec, 2000);
	assert_int_equal(rec.status, STATE_CANCELLED);
	assert_int_equal(rec.cause, STATE_CAUSE_CLIENT_GONE);
	assert_int_equal(finished_of(sc), 1);
	free(sc);
}

/* A relay whose token op fails at token fail_at with rc; freed with it. */
struct failing_stream {
	struct relay relay;
	struct reply reply;
	uint32_t fail_at;
	enum ts_err rc;
};

static enum ts_err
failing_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct failing_stream *f = r->resp;

	(void)text;
	(void)len;
	if (index == f->fail_at)
		return f->rc;
	*event = 1;
	return ts_buf_append(out, "data: t\n\n", 9);
}

static enum ts_err
failing_end(struct relay *r, struct ts_buf *out, enum engine_finish fin,
    const struct engine_view *v)
{
	(void)r;
	(void)fin;
	(void)v;
	return ts_buf_append(out, "data: [DONE]\n\n", 14);
}

static void
failing_free(struct relay *r)
{
	free(r->resp);
}

static const struct relay_ops failing_ops = {
	.token = failing_token, .end = failing_end, .free = failing_free,
	.tokens_reach_client = 1,
};

/* The I/O thread pumps a stream whose encoder fails at its third token:
 * the server ended it, so its record says server_error (any encoding
 * failure) or output_limit (TS_ELIMIT: the response outgrew a buffer),
 * not client_gone; the client, still reading, got at most two events
 * and no [DONE]. */
static void
test_encoder_failure_cause(void **unused)
{
	static const struct {
		enum ts_err rc;
		enum state_cause cause;
	} cases[] = {
		{ TS_EINVAL, STATE_CAUSE_SERVER_ERROR },
		{ TS_ELIMIT, STATE_CAUSE_OUTPUT_LIMIT },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct sock_conn *sc = calloc(1, sizeof(*sc));
		struct failing_stream *f = calloc(1, sizeof(*f));
		struct engine_request r;
		struct engine_seq *s;
		struct relay_env env;
		struct state_record rec;
		static char resp[1 << 16];
		int sv[2];
		uint64_t id;

		memset(&r, 0, sizeof(r));
		r.prompt = "fail";
		r.prompt_len = 4;
		r.prompt_tokens = 1;
		r.model = SIM_MODEL_LAB;
		engine_sampling_greedy(&r.sampling);
		r.max_tokens = 4000;
		r.tpot_ms = 2;
		r.error_after = -1;
		r.t0_ns = srv.now();
		r.user = &sc->c;        /* the I/O thread finds it by this */
		assert_int_equal(engine_submit(srv.engine, &r, &s), TS_OK);
		id = engine_seq_id(s);
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		snprintf(sc->uri, sizeof(sc->uri), "/stream");
		sc->qs = "";
		sc->fd = sv[0];
		sc->c.ops = &sc_ops;
		f->fail_at = 2;
		f->rc = cases[k].rc;
		f->reply.conn = &sc->c;
		f->reply.id_prefix = "";
		f->reply.t0 = r.t0_ns;
		env = server_relay_env(&srv);
		assert_int_equal(relay_init(&f->relay, &env, &f->reply, s, 0,
		    NULL, NULL, 0, &failing_ops, f), TS_OK);
		io_assign(srv.io, &sc->c);
		io_stream(srv.io, &sc->c, &f->relay);
		wait_ended(id, &rec, 2000);
		assert_int_equal(rec.status, STATE_CANCELLED);
		assert_int_equal(rec.cause, cases[k].cause);
		assert_true(rec.generated < 4000);
		assert_int_equal(finished_of(sc), 1);
		read_all(sv[1], resp, sizeof(resp), 1000);
		/* the events encoded in the pass that failed are dropped */
		assert_true(count_of(resp, "data: t\n\n") <= 2);
		assert_null(strstr(resp, "[DONE]"));
		close(sv[1]);
		free(sc);
	}
}

/* 1-token streams with no prefill, their connections freed by finish():
 * the I/O thread may end one before route() has returned. Every one is
 * finished exactly once, and only by the I/O thread. */
static void
test_short_streams_handoff(void **unused)
{
	enum { N = 300 };
	int i, base = atomic_load(&finishes), peer[N];

	(void)unused;
	for (i = 0; i < N; i++) {
		struct sock_conn *sc = calloc(1, sizeof(*sc));

		sc->free_on_finish = 1;
		assert_true(open_stream(sc, "/stream?prompt=quick"
		    "&max_tokens=1&prefill_ms=0&tpot_ms=1", &peer[i]));
		/* sc may be freed already: not touched again */
	}
	for (i = 0; i < N; i++) {
		char resp[4096];

		read_all(peer[i], resp, sizeof(resp), 5000);
		assert_int_equal(count_of(resp, "data: {\"token\""), 1);
		assert_non_null(strstr(resp, "data: [DONE]"));
		close(peer[i]);
	}
	for (i = 0; i < 2000 && atomic_load(&finishes) - base < N; i++) {
		struct timespec ts = { 0, MS };
		nanosleep(&ts, NULL);
	}
	assert_int_equal(atomic_load(&finishes) - base, N);
}

/* As server/main.c starts a responder: state and metrics in memory, the
 * sim backend, an engine with its thread, two I/O threads. */
static int
setup(void **unused)
{
	(void)unused;
	opt.write_stall_ms = STALL_MS;
	opt.state_dir = OPTIONS_DEFAULT_STATE_DIR;
	opt.backlog = 1024;
	engine_config_defaults(&opt.engine);
	opt.engine.lat.tpot_ms = 20;
	opt.engine.lat.prefill_base_ms = 0;
	opt.engine.lat.prefill_per_token_ms = 0;
	opt.engine.max_num_seqs = 512;
	opt.retry_ms = OPTIONS_DEFAULT_RETRY_MS;
	opt.keepalive_ms = OPTIONS_DEFAULT_KEEPALIVE_MS;
	opt.cors_origin = "*";
	opt.backend = "sim";
	assert_int_equal(state_open_memory(&srv.state, STATE_HISTORY), TS_OK);
	assert_int_equal(metrics_open_memory(&srv.metrics), TS_OK);
	srv.opt = &opt;
	srv.started_at = time(NULL);
	srv.now = engine_now_ns;

	sim_backend(&be);
	records.state = srv.state;
	records.metrics = srv.metrics;
	record_hooks(&hooks, &records);
	assert_int_equal(engine_create(&srv.engine, &opt.engine, &be, &hooks),
	    TS_OK);
	srv.backend = engine_backend(srv.engine);
	server_init_costs(&srv);
	assert_int_equal(io_start(&srv.io, srv.now, 2, opt.write_stall_ms),
	    TS_OK);
	return 0;
}

/* The relay keeps its own copy of the stop strings: a caller's arrays (a
 * handler's stack) may be gone when a later choice is added (n > 1). On
 * the code before, relay_add_choice read the caller's arrays then. */
static const struct relay_ops bare_ops = { 0 };

static void
test_relay_owns_stop_strings(void **unused)
{
	struct relay r;
	struct relay_env env;
	struct reply rp;
	char s1[8], s2[8];
	const char *stop[2];
	size_t len[2];

	(void)unused;
	memset(&env, 0, sizeof(env));
	memset(&rp, 0, sizeof(rp));
	strcpy(s1, "END");
	strcpy(s2, "\n\n");
	stop[0] = s1;
	stop[1] = s2;
	len[0] = 3;
	len[1] = 2;
	assert_int_equal(relay_init(&r, &env, &rp, NULL, 0, stop, len, 2,
	    &bare_ops, NULL), TS_OK);
	/* the caller's strings and arrays are gone */
	memset(s1, 'x', sizeof(s1));
	memset(s2, 'x', sizeof(s2));
	memset(stop, 0, sizeof(stop));
	memset(len, 0, sizeof(len));
	assert_int_equal(relay_add_choice(&r, NULL), TS_OK);
	assert_int_equal(r.ch[1].rel.stop.n, 2);
	assert_memory_equal(r.ch[1].rel.stop.str[0], "END", 3);
	assert_memory_equal(r.ch[1].rel.stop.str[1], "\n\n", 2);
	/* beyond text/stop.h's bounds: refused, not copied past them */
	{
		char big[STOP_MAX_BYTES + 1];
		const char *b[1] = { big };
		size_t bl[1] = { sizeof(big) };

		memset(big, 'a', sizeof(big));
		relay_finish(&r);
		assert_int_equal(relay_init(&r, &env, &rp, NULL, 0, b, bl, 1,
		    &bare_ops, NULL), TS_ELIMIT);
	}
	relay_finish(&r);
}

/* A connection on a new socketpair, assigned as server/fcgi.c assigns
 * one; *peer gets the client's end. */
static void
open_conn(struct sock_conn *sc, int *peer, int *handed_off)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	sc->fd = sv[0];
	*peer = sv[1];
	sc->c.ops = &sc_ops;
	sc->c.handed_off = handed_off;
	io_assign(srv.io, &sc->c);
}

/* An answer of n bytes: "Status: 200 OK", then a body of 'a'..'z'. */
static void
make_answer(struct ts_buf *b, size_t n)
{
	static const char head[] = "Status: 200 OK\r\n\r\n";
	size_t i;

	ts_buf_init(b, SIZE_MAX);
	assert_int_equal(ts_buf_append(b, head, sizeof(head) - 1), TS_OK);
	for (i = b->len; i < n; i++)
		assert_int_equal(ts_buf_append(b, &"abcdefghijklmnopqrstuvwxyz"
		    [i % 26], 1), TS_OK);
}

/* A 4 MB answer made whole (reply_send) while the client reads nothing
 * yet: handed to an I/O thread at once (a blocking write would wait for
 * the client here), then written whole as the client reads, and the
 * request finished once. */
static void
test_whole_answer_handed_off(void **unused)
{
	enum { N = 4 << 20 };
	struct sock_conn *sc = calloc(1, sizeof(*sc));
	struct reply rp;
	struct ts_buf b, want;
	char *got = malloc(N + 1);
	int peer, handed_off = 0;

	(void)unused;
	open_conn(sc, &peer, &handed_off);
	memset(&rp, 0, sizeof(rp));
	rp.conn = &sc->c;
	make_answer(&b, N);
	make_answer(&want, N);
	assert_int_equal(reply_send(&rp, &b), TS_OK);
	assert_true(handed_off);
	assert_int_equal(b.len, 0);             /* taken */
	ts_buf_free(&b);
	assert_int_equal(read_all(peer, got, N + 1, 10000), N);
	assert_memory_equal(got, want.p, N);
	assert_int_equal(finished_of(sc), 1);
	close(peer);
	ts_buf_free(&want);
	free(got);
	free(sc);
}

/* One that the client never reads costs no thread and is ended after
 * the write-stall time (its connection finished); a small one is
 * written on the caller's thread, not handed over. */
static void
test_whole_answer_stall(void **unused)
{
	struct sock_conn *sc = calloc(1, sizeof(*sc));
	struct sock_conn *small = calloc(1, sizeof(*small));
	struct reply rp;
	struct ts_buf b;
	char got[REPLY_INLINE_MAX + 1];
	int peer, speer, handed_off = 0, before = thread_count(), i;

	(void)unused;
	open_conn(sc, &peer, &handed_off);
	memset(&rp, 0, sizeof(rp));
	rp.conn = &sc->c;
	make_answer(&b, 4 << 20);
	assert_int_equal(reply_send(&rp, &b), TS_OK);
	assert_true(handed_off);
	ts_buf_free(&b);
	assert_int_equal(thread_count(), before);
	for (i = 0; i < (int)STALL_MS * 10 &&
	    atomic_load(&sc->finished) == 0; i++) {
		struct timespec ts = { 0, MS };
		nanosleep(&ts, NULL);
	}
	assert_int_equal(atomic_load(&sc->finished), 1);
	close(peer);
	free(sc);

	handed_off = 0;
	open_conn(small, &speer, &handed_off);
	rp.conn = &small->c;
	make_answer(&b, REPLY_INLINE_MAX);
	assert_int_equal(reply_send(&rp, &b), TS_OK);
	assert_false(handed_off);
	ts_buf_free(&b);
	sc_finish(&small->c);
	assert_int_equal(read_all(speer, got, sizeof(got), 5000),
	    REPLY_INLINE_MAX);
	close(speer);
	free(small);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_whole),
		cmocka_unit_test(test_hangup_cancels),
		cmocka_unit_test(test_stall_costs_no_thread),
		cmocka_unit_test(test_slow_reader_not_stalled),
		cmocka_unit_test(test_encoder_failure_cause),
		cmocka_unit_test(test_short_streams_handoff),
		cmocka_unit_test(test_relay_owns_stop_strings),
		cmocka_unit_test(test_whole_answer_handed_off),
		cmocka_unit_test(test_whole_answer_stall),
	};

	/* the I/O threads run until the process exits, as in main.c */
	return cmocka_run_group_tests(tests, setup, NULL);
}
