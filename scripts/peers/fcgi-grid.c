/*
 * scripts/peers/fcgi-grid.c - the second peer of scripts/bench-capacity:
 * the least a FastCGI responder behind tokstream's lighttpd can do to hold
 * many paced streams without a thread per stream. It is the design the
 * server-core work started from, kept so that its cost can be measured
 * beside tokstream's in the same run with the same client:
 *
 *   - a few accept threads call FCGX_Accept_r, write the response head and
 *     hand the request to one of W writer threads (round robin);
 *   - each writer sleeps to the next boundary of an absolute TPOT grid
 *     (clock_nanosleep TIMER_ABSTIME) and, for every stream it owns, puts
 *     one token event and flushes it (FCGX_PutStr + FCGX_FFlush), so there
 *     is one wake-up per writer per decode step, not one per token;
 *   - a stream whose flush fails (the client left) is finished at once.
 *
 * It generates nothing, keeps no per-request record, no metrics, no
 * cancellation bookkeeping, no admission: whatever tokstream's responder
 * costs above it is the price of those. The events have tokstream's
 * GET /stream shape (an `id:` line and a `data: {"token":...}` line per
 * token, then `data: [DONE]`); token k of a stream is written at the
 * (k+1)-th grid boundary after the request was handed over, so the first
 * token waits up to one TPOT (a step grid's C=1 TTFT).
 *
 *   spawn-fcgi -s SOCK -b 4096 -- scripts/peers/fcgi-grid   (TPOT_MS=20)
 *
 * GET /stream?max_tokens=N (1..8192, default 16; other parameters are
 * ignored), GET /health; anything else is a JSON 404. libfcgi and libc
 * only; FastCGI 1.0 (the responder role) as libfcgi implements it.
 */
#define _GNU_SOURCE
#include <fcgiapp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WRITERS = 2, ACCEPTORS = 4 };

struct stream {
	FCGX_Request req;
	int next;                /* index of the next token */
	int n;                   /* tokens to send */
	struct stream *link;
};

/* Each writer's inbox: streams handed over since its last step. */
static struct {
	pthread_mutex_t mu;
	struct stream *head;
} inbox[WRITERS];
static long tpot_ns = 20L * 1000 * 1000;

static const char *const words[] = { " the", " model", " streams",
	" tokens", " to", " every", " client", ",", " one", " step", " at",
	" a", " time", "." };

/* max_tokens of a query string: 1..8192, 16 when absent or invalid. */
static int max_tokens_of(const char *q)
{
	const char *p = q ? strstr(q, "max_tokens=") : NULL;
	long v;

	if (!p || (p != q && p[-1] != '&'))
		return 16;
	v = strtol(p + strlen("max_tokens="), NULL, 10);
	return v >= 1 && v <= 8192 ? (int)v : 16;
}

static void *acceptor(void *arg)
{
	unsigned turn = (unsigned)(long)arg;

	for (;;) {
		struct stream *s = calloc(1, sizeof *s);
		const char *path;
		int w;

		if (!s)
			abort();
		FCGX_InitRequest(&s->req, 0, 0);
		if (FCGX_Accept_r(&s->req) < 0) {
			free(s);
			continue;
		}
		path = FCGX_GetParam("SCRIPT_NAME", s->req.envp);
		if (!path || !*path)
			path = FCGX_GetParam("REQUEST_URI", s->req.envp);
		if (path && strncmp(path, "/health", 7) == 0) {
			FCGX_PutS("Content-Type: application/json\r\n\r\n"
				  "{\"status\":\"ok\"}\n", s->req.out);
			FCGX_Finish_r(&s->req);
			free(s);
			continue;
		}
		if (!path || strncmp(path, "/stream", 7) != 0) {
			FCGX_PutS("Status: 404 Not Found\r\n"
				  "Content-Type: application/json\r\n\r\n"
				  "{\"error\":{\"message\":\"no such endpoint\"}}\n",
				  s->req.out);
			FCGX_Finish_r(&s->req);
			free(s);
			continue;
		}
		s->n = max_tokens_of(FCGX_GetParam("QUERY_STRING", s->req.envp));
		FCGX_PutS("Content-Type: text/event-stream\r\n"
			  "Cache-Control: no-cache\r\n"
			  "X-Accel-Buffering: no\r\n\r\n"
			  "retry: 1000\n\n", s->req.out);
		FCGX_FFlush(s->req.out);
		w = (int)(turn++ % WRITERS);
		pthread_mutex_lock(&inbox[w].mu);
		s->link = inbox[w].head;
		inbox[w].head = s;
		pthread_mutex_unlock(&inbox[w].mu);
	}
	return NULL;
}

static void *writer(void *arg)
{
	int w = (int)(long)arg;
	struct stream *live = NULL, **pp, *s, *in;
	struct timespec t;
	char ev[128];

	clock_gettime(CLOCK_MONOTONIC, &t);
	for (;;) {
		t.tv_nsec += tpot_ns;
		while (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		pthread_mutex_lock(&inbox[w].mu);
		in = inbox[w].head;
		inbox[w].head = NULL;
		pthread_mutex_unlock(&inbox[w].mu);
		while (in) {
			s = in->link;
			in->link = live;
			live = in;
			in = s;
		}
		for (pp = &live; (s = *pp) != NULL;) {
			int len = snprintf(ev, sizeof ev,
				"id: %d\ndata: {\"token\":\"%s\"}\n\n", s->next,
				words[s->next % (int)(sizeof words / sizeof *words)]);
			int gone;

			FCGX_PutStr(ev, len, s->req.out);
			if (++s->next == s->n)
				FCGX_PutS("data: [DONE]\n\n", s->req.out);
			gone = FCGX_FFlush(s->req.out) < 0 ||
			       FCGX_GetError(s->req.out) != 0;
			if (gone || s->next == s->n) {
				*pp = s->link;
				FCGX_Finish_r(&s->req);
				free(s);
			} else {
				pp = &s->link;
			}
		}
	}
	return NULL;
}

int main(void)
{
	const char *e = getenv("TPOT_MS");
	pthread_t th;
	long i;

	if (e && atol(e) >= 1 && atol(e) <= 1000)
		tpot_ns = atol(e) * 1000 * 1000;
	if (FCGX_Init() != 0) {
		fprintf(stderr, "fcgi-grid: FCGX_Init failed\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);     /* FCGX_Init's handler is a no-op */
	signal(SIGTERM, SIG_DFL);     /* FCGX_Init's only sets a flag */
	for (i = 0; i < WRITERS; i++) {
		pthread_mutex_init(&inbox[i].mu, NULL);
		if (pthread_create(&th, NULL, writer, (void *)i) != 0)
			return 1;
	}
	for (i = 0; i < ACCEPTORS; i++)
		if (pthread_create(&th, NULL, acceptor, (void *)i) != 0)
			return 1;
	fprintf(stderr, "fcgi-grid: pid %d, %d writers, TPOT %ld ms\n",
		(int)getpid(), WRITERS, tpot_ns / 1000000);
	for (;;)
		pause();
}
