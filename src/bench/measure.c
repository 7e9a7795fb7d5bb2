/*
 * measure.c - one measured /stream request for the lab steps
 * (measure.h).
 */
#include "bench/measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "bench/load_drive.h"
#include "bench/load_sched.h"
#include "bench/msg.h"
#include "bench/text.h"

/* The one request of a run and what it needs. */
struct measure_run {
	const struct opts *o;
	const char *url;        /* BASE/stream */
	int keep_log;
	struct req *q;          /* the ended request */
};

/*
 * Builds the request: the plan's output length is max_tokens and its
 * hang-up point stop_after (the traffic of measure_stream()). Returns
 * NULL after printing one line.
 */
static struct req *
measure_make(void *ud, const struct load_plan *plan)
{
	struct measure_run *m = ud;
	const struct opts *o = m->o;
	struct req *q;
	char *esc;

	q = req_new(o->timeout_s * 1000L, (size_t)plan->abandon_after,
	    o->rst, m->keep_log);
	if (q == NULL)
		return NULL;
	esc = curl_easy_escape(q->curl, o->prompt, (int)strlen(o->prompt));
	if (esc == NULL) {
		msg_err("cannot percent-encode the prompt");
		req_free(q);
		return NULL;
	}
	req_set_url(q, req_stream_url(o->url, esc, strlen(esc),
	    plan->output_tokens, o->tpot_ms, o->prefill_ms));
	curl_free(esc);
	return q;
}

/* Keeps the ended request for the caller. */
static void
measure_end(void *ud, struct req *q)
{
	struct measure_run *m = ud;

	m->q = q;
}

void
measure_http_error(const char *url, long status,
    const struct client_body *body)
{
	char *txt = text_error_body(body);

	if (txt != NULL)
		msg_err("%s: HTTP %ld: %s", url, status, txt);
	else if (status == 502 || status == 503 || status == 504)
		msg_err("%s: HTTP %ld without a JSON error body: the FastCGI "
		    "responder may be down; " MSG_START_HINT, url, status);
	else
		msg_err("%s: HTTP %ld without a JSON error body", url,
		    status);
	free(txt);
}

/*
 * Tells what became of an ended request to url in one line, when it
 * failed. Returns TS_OK for a completed or deliberately stopped stream,
 * else the failure's code (see measure_stream()).
 */
static enum ts_err
measure_verdict(const char *url, const struct req *q)
{
	enum load_fail kind = LOAD_FAIL_TRANSPORT;

	if (req_fate(q, &kind) != REQ_FAILED)
		return TS_OK;
	switch (kind) {
	case LOAD_FAIL_PROTOCOL:
		msg_err("%s: %s", url, q->fail);
		return TS_EINVAL;
	case LOAD_FAIL_CONNECT:
		msg_err("cannot reach %s: %s; " MSG_START_HINT, url,
		    curl_easy_strerror(q->result));
		return TS_ESYS;
	case LOAD_FAIL_HTTP_429:
	case LOAD_FAIL_HTTP_500:
	case LOAD_FAIL_HTTP_503:
	case LOAD_FAIL_HTTP_5XX:
	case LOAD_FAIL_HTTP_400:
	case LOAD_FAIL_HTTP_401:
	case LOAD_FAIL_HTTP_OTHER:
		measure_http_error(url, q->status, &q->body);
		return TS_EINVAL;
	case LOAD_FAIL_SSE_ERROR:
		msg_err("%s: error event after %zu tokens: %s", url,
		    q->error_after, q->error_text);
		return TS_EINVAL;
	case LOAD_FAIL_TIMEOUT:
	case LOAD_FAIL_TRUNCATED:
	case LOAD_FAIL_TRANSPORT:
	case LOAD_FAIL_COUNT:
		break;
	}
	if (q->status == 0) {
		msg_err("%s: %s", url, req_detail(q));
		return TS_ESYS;
	}
	if (!q->done)
		msg_err("%s: stream truncated after %zu tokens (no data: "
		    "[DONE])%s%s", url, q->ntokens,
		    q->result != CURLE_OK ? ": " : "",
		    q->result == CURLE_OK ? "" : req_detail(q));
	else
		msg_err("%s: transfer failed after data: [DONE]: %s", url,
		    req_detail(q));
	return TS_EFORMAT;
}

/* The traffic is a closed loop of concurrency 1 and one request, whose
 * plan carries max_tokens and the hang-up point. */
enum ts_err
measure_stream(const struct opts *o, long max_tokens, size_t stop_after,
    int keep_log, struct req **out)
{
	struct load_traffic t;
	struct load_sched s;
	struct load_drive d;
	struct load_drive_ops ops;
	struct measure_run m;
	enum ts_err rc = TS_ESYS;
	double duration_s;
	size_t n = strlen(o->url) + sizeof("/stream");
	char *url = xmalloc(n);

	snprintf(url, n, "%s/stream", o->url);
	memset(&t, 0, sizeof(t));
	t.concurrency = 1;
	t.requests = 1;
	t.prompt.min = t.prompt.max = 1;
	t.output.min = t.output.max = max_tokens;
	t.abandon.fraction = stop_after > 0 ? 1.0 : 0.0;
	t.abandon.after_tokens = (long)stop_after;
	memset(&m, 0, sizeof(m));
	m.o = o;
	m.url = url;
	m.keep_log = keep_log;
	memset(&ops, 0, sizeof(ops));
	ops.make = measure_make;
	ops.end = measure_end;
	ops.ud = &m;

	load_sched_init(&s, &t, NULL, 1);
	if (load_drive_init(&d) == TS_OK &&
	    load_drive_run(&d, &s, &ops, &duration_s) == TS_OK &&
	    m.q != NULL)
		rc = measure_verdict(url, m.q);
	load_drive_free(&d);
	free(url);
	*out = m.q;
	return rc;
}

enum ts_err
measure_tokens(const struct opts *o, int need_itl, struct req **out)
{
	enum ts_err rc;

	if ((rc = measure_stream(o, o->max_tokens, 0, 0, out)) != TS_OK)
		return rc;
	if ((*out)->ntokens < (need_itl ? 2u : 1u)) {
		msg_err("%s/stream: only %zu token events for max_tokens=%ld: "
		    "need %d to measure %s", o->url, (*out)->ntokens,
		    o->max_tokens, need_itl ? 2 : 1,
		    need_itl ? "ITL" : "TTFT");
		return TS_EFORMAT;
	}
	return TS_OK;
}

double *
measure_itl(const struct req *q, size_t *n)
{
	double *v;
	size_t i;

	*n = q->ntokens > 1 ? q->ntokens - 1 : 0;
	if (*n == 0)
		return NULL;
	v = xmalloc(*n * sizeof(*v));
	for (i = 0; i < *n; i++)
		v[i] = q->arrival_ms[i + 1] - q->arrival_ms[i];
	return v;
}

double
measure_throughput(const struct req *q)
{
	return q->e2e_ms > 0 ? (double)q->ntokens / (q->e2e_ms / 1e3) : 0.0;
}

json_t *
measure_json_str(const char *s)
{
	json_t *j = json_string(s);

	return j != NULL ? j : json_null();
}

json_t *
measure_json_reals(const double *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(a, json_real(v[i]));
	return a;
}
