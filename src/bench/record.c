/*
 * record.c - the trace of a tokbench record run (record.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench/client.h"
#include "bench/msg.h"

/* Largest line an encoder may build: a request's bytes are bounded by
 * the budget already, and JSON escaping at most sextuples them. */
#define RECORD_LINE_MAX ((size_t)1 << 40)

/* Microseconds from *a to *b (b later). */
static int64_t
record_us(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000000 +
	    ((int64_t)b->tv_nsec - a->tv_nsec) / 1000;
}

/* Writes (p, n) to the file; one line on the first failure. */
static enum ts_err
record_put(struct record *r, const char *p, size_t n)
{
	if (trace_writer_put(&r->w, p, n) == TS_OK)
		return TS_OK;
	if (r->w.saved_errno != 0) {
		msg_err("%s: cannot write the trace: %s", r->path,
		    strerror(r->w.saved_errno));
		r->w.saved_errno = -1;  /* told; later puts fail quietly */
	}
	return TS_ESYS;
}

enum ts_err
record_open(struct record *r, const char *path, size_t max_bytes,
    const char *target, const struct trace *hdr)
{
	struct ts_buf b;
	enum ts_err rc;

	memset(r, 0, sizeof(*r));
	r->path = path;
	r->target = target;
	r->budget.max = max_bytes;
	if (trace_writer_open(&r->w, path) != TS_OK) {
		msg_err("%s: cannot create the trace: %s", path,
		    strerror(r->w.saved_errno));
		return TS_ESYS;
	}
	r->open = 1;
	ts_buf_init(&b, RECORD_LINE_MAX);
	rc = trace_encode_header(hdr, &b);
	if (rc == TS_OK)
		rc = record_put(r, b.p, b.len);
	ts_buf_free(&b);
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	return rc == TS_OK ? TS_OK : TS_ESYS;
}

struct capture *
record_attach(struct record *r)
{
	return capture_new(&r->budget, r->next_seq++);
}

/* Keeps a start or an end for the concurrency line. */
static void
record_event(struct record *r, int64_t t_us, int delta)
{
	if (r->nev == r->ev_cap) {
		r->ev_cap = r->ev_cap ? r->ev_cap * 2 : 256;
		r->ev = xrealloc(r->ev, r->ev_cap * sizeof(*r->ev));
	}
	r->ev[r->nev].t_us = t_us;
	r->ev[r->nev++].delta = delta;
}

/* Writes the waiting lines that are due, in start order. */
static enum ts_err
record_flush(struct record *r)
{
	struct record_line *l;
	enum ts_err rc = TS_OK;

	while (r->npend > 0 && r->pend[r->head].p != NULL) {
		l = &r->pend[r->head];
		if (record_put(r, l->p, l->len) != TS_OK)
			rc = TS_ESYS;
		capture_budget_give(&r->budget, l->len);
		free(l->p);
		l->p = NULL;
		r->head++;
		r->npend--;
		r->next_write++;
		r->requests++;
	}
	if (r->npend == 0)
		r->head = 0;
	return rc;
}

/* Puts the line (p, len) of request seq (owned) in its place. */
static enum ts_err
record_place(struct record *r, uint64_t seq, char *p, size_t len)
{
	size_t k = (size_t)(seq - r->next_write), need = k + 1;

	if (need > r->npend) {
		if (r->head + need > r->pend_cap) {
			/* slide to the front, then grow (nothing to slide
			 * before the first line: pend is NULL then) */
			if (r->npend > 0)
				memmove(r->pend, r->pend + r->head,
				    r->npend * sizeof(*r->pend));
			r->head = 0;
			if (need > r->pend_cap) {
				r->pend_cap = need * 2 > 64 ? need * 2 : 64;
				r->pend = xrealloc(r->pend,
				    r->pend_cap * sizeof(*r->pend));
			}
		}
		memset(r->pend + r->head + r->npend, 0,
		    (need - r->npend) * sizeof(*r->pend));
		r->npend = need;
	}
	r->pend[r->head + k].p = p;
	r->pend[r->head + k].len = len;
	/* held until the requests before it end */
	(void)capture_budget_take(&r->budget, len);
	return record_flush(r);
}

/* The part of url after the target's base URL (its path and query). */
static const char *
record_path(const struct record *r, const char *url)
{
	size_t n = strlen(r->target);

	if (url == NULL)
		return "";
	return strncmp(url, r->target, n) == 0 ? url + n : url;
}

enum ts_err
record_end(struct record *r, struct req *q, const char *error)
{
	struct capture *c = q->cap;
	struct trace_request tr;
	struct ts_buf b;
	enum ts_err rc;
	uint64_t seq;
	size_t i;

	if (c == NULL || !r->open)
		return TS_OK;
	memset(&tr, 0, sizeof(tr));
	tr.i = (long)c->seq;
	tr.start_us = record_us(&r->t0, &q->t0);
	if (tr.start_us < 0)
		tr.start_us = 0;
	tr.end_us = (int64_t)(q->e2e_ms * 1000.0 + 0.5);
	tr.method = (char *)(q->post != NULL ? "POST" : "GET");
	tr.path = (char *)record_path(r, q->url);
	tr.body = (unsigned char *)(q->post != NULL ? q->post : "");
	tr.body_len = q->post != NULL ? strlen(q->post) : 0;
	tr.status = q->status;
	tr.headers = c->headers;
	tr.nheaders = c->nheaders;
	tr.chunks = c->chunks;
	tr.nchunks = c->nchunks;
	tr.token_events = xcalloc(q->ntokens + 1, sizeof(*tr.token_events));
	for (i = 0; i < q->ntokens; i++) {
		/* tokbench counts one token an event (req.h) */
		tr.token_events[i].t_us = (int64_t)(q->arrival_ms[i] *
		    1000.0 + 0.5);
		tr.token_events[i].n = 1;
	}
	tr.ntoken_events = q->ntokens;
	tr.prompt_tokens = q->usage_prompt >= 0 ? q->usage_prompt :
	    q->prompt_tokens;
	tr.output_tokens = q->usage_completion >= 0 ? q->usage_completion :
	    (long)q->ntokens;
	tr.cached_tokens = q->usage_cached;
	tr.warmup = q->warmup;
	tr.error = (char *)(c->cut ? "not recorded whole: the recording "
	    "reached --record-max-bytes" : error);
	ts_buf_init(&b, RECORD_LINE_MAX);
	rc = trace_encode_request(&tr, &b);
	free(tr.token_events);
	record_event(r, tr.start_us, 1);
	record_event(r, tr.start_us + tr.end_us, -1);
	(void)capture_budget_take(&r->budget, 2 * sizeof(*r->ev));
	/* the capture's bytes are in the line now: give them back first */
	seq = c->seq;
	q->cap = NULL;
	capture_free(c);
	if (rc == TS_OK)
		rc = record_place(r, seq, b.p, b.len);
	else
		ts_buf_free(&b);
	if (rc != TS_OK)
		return rc;
	if (r->budget.over) {
		if (!r->told_over)
			msg_err("the recording holds more than "
			    "--record-max-bytes %zu bytes in memory: no new "
			    "requests, those in flight are cut (give a larger "
			    "--record-max-bytes, or fewer or shorter "
			    "requests)", r->budget.max);
		r->told_over = 1;
		return TS_ELIMIT;
	}
	return TS_OK;
}

/* Orders events by time. */
static int
record_event_cmp(const void *a, const void *b)
{
	const struct record_event *x = a, *y = b;

	return x->t_us < y->t_us ? -1 : x->t_us > y->t_us;
}

enum ts_err
record_close(struct record *r)
{
	struct trace_sample *s;
	struct ts_buf b;
	enum ts_err rc = TS_OK;
	size_t i, n = 0;
	long level = 0;

	if (!r->open)
		return TS_ESYS;
	r->open = 0;
	/* requests that never ended leave holes: skip them */
	while (r->npend > 0) {
		if (r->pend[r->head].p == NULL) {
			r->head++;
			r->npend--;
			r->next_write++;
			continue;
		}
		if (record_flush(r) != TS_OK)
			rc = TS_ESYS;
	}
	qsort(r->ev, r->nev, sizeof(*r->ev), record_event_cmp);
	s = xcalloc(r->nev + 1, sizeof(*s));
	for (i = 0; i < r->nev; i++) {
		level += r->ev[i].delta;
		if (n > 0 && s[n - 1].t_us == r->ev[i].t_us)
			n--;    /* one sample an instant: its last level */
		s[n].t_us = r->ev[i].t_us;
		s[n++].n = level;
	}
	ts_buf_init(&b, RECORD_LINE_MAX);
	if (trace_encode_concurrency(s, n, &b) != TS_OK ||
	    record_put(r, b.p, b.len) != TS_OK)
		rc = TS_ESYS;
	ts_buf_free(&b);
	free(s);
	free(r->ev);
	free(r->pend);
	r->ev = NULL;
	r->pend = NULL;
	if (trace_writer_close(&r->w) != TS_OK && rc == TS_OK) {
		msg_err("%s: cannot write the trace: %s", r->path,
		    strerror(r->w.saved_errno > 0 ? r->w.saved_errno : EIO));
		rc = TS_ESYS;
	}
	if (rc == TS_OK && r->budget.over)
		rc = TS_ELIMIT;
	return rc;
}
