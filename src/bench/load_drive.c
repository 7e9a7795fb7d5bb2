/*
 * load_drive.c - the libcurl multi driver of a load run (load_drive.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/load_drive.h"

#include <math.h>
#include <string.h>

#include "bench/client.h"
#include "bench/msg.h"

enum ts_err
load_drive_init(struct load_drive *d)
{
	memset(d, 0, sizeof(*d));
	d->hdrs = curl_slist_append(NULL, "Accept: text/event-stream");
	if ((d->multi = curl_multi_init()) == NULL || d->hdrs == NULL) {
		msg_err("cannot initialise libcurl's multi interface");
		return TS_ENOMEM;
	}
	return TS_OK;
}

/* Takes q off the list of requests in flight. */
static void
load_drive_unlink(struct load_drive *d, struct req *q)
{
	if (q->prev != NULL)
		q->prev->next = q->next;
	else if (d->head == q)
		d->head = q->next;
	if (q->next != NULL)
		q->next->prev = q->prev;
	q->prev = q->next = NULL;
}

/*
 * Starts q: the shared headers, its clock (just before libcurl gets it),
 * the multi handle. Returns TS_OK, or TS_ESYS after printing one line
 * (q freed).
 */
static enum ts_err
load_drive_add(struct load_drive *d, struct req *q)
{
	CURLMcode mc;

	curl_easy_setopt(q->curl, CURLOPT_HTTPHEADER, d->hdrs);
	clock_gettime(CLOCK_MONOTONIC, &q->t0);
	if ((mc = curl_multi_add_handle(d->multi, q->curl)) != CURLM_OK) {
		msg_err("curl_multi_add_handle: %s", curl_multi_strerror(mc));
		req_free(q);
		return TS_ESYS;
	}
	q->next = d->head;
	if (d->head != NULL)
		d->head->prev = q;
	d->head = q;
	d->started++;
	d->in_flight++;
	if (d->in_flight > d->max_in_flight)
		d->max_in_flight = d->in_flight;
	return TS_OK;
}

/*
 * Ends a finished transfer: off the multi handle and the list, its end
 * recorded (req_finish() closes the socket), then to the owner. A
 * request's E2E latency as the owner sees it should end at data: [DONE]
 * (req.h): the time at which the multi handle reports the end could lag
 * behind by the other transfers one curl_multi_perform() call served.
 */
static void
load_drive_end(struct load_drive *d, const struct load_drive_ops *ops,
    struct req *q, CURLcode cc)
{
	curl_multi_remove_handle(d->multi, q->curl);
	load_drive_unlink(d, q);
	req_finish(q, cc);
	d->in_flight--;
	ops->end(ops->ud, q);
}

/* Starts every request the schedule allows at now_ms. */
static enum ts_err
load_drive_start_due(struct load_drive *d, struct load_sched *s,
    const struct load_drive_ops *ops, double now_ms)
{
	struct load_plan plan;
	struct req *q;
	enum ts_err rc;

	while (load_sched_next(s, now_ms, d->in_flight, &plan)) {
		if ((q = ops->make(ops->ud, &plan)) == NULL)
			return TS_ESYS;
		if ((rc = load_drive_add(d, q)) != TS_OK)
			return rc;
	}
	return TS_OK;
}

/*
 * How long curl_multi_poll() may sleep: what the schedule allows, and
 * not past the next progress line (libcurl shortens it further for its
 * own timers). Rounded up, so that the loop does not spin through the
 * last fraction of a millisecond.
 */
static int
load_drive_poll_ms(const struct load_sched *s,
    const struct load_drive_ops *ops, double next_progress_ms,
    double now_ms)
{
	double t = load_sched_wait_ms(s, now_ms);

	if (ops->progress != NULL && next_progress_ms - now_ms < t)
		t = next_progress_ms - now_ms;
	return t <= 0 ? 0 : (int)ceil(t);
}

enum ts_err
load_drive_run(struct load_drive *d, struct load_sched *s,
    const struct load_drive_ops *ops, double *duration_s)
{
	double now, next_progress = LOAD_DRIVE_PROGRESS_MS;
	enum ts_err rc = TS_OK;
	struct req *q;
	CURLMsg *m;
	CURLMcode mc;
	CURLcode cc;
	char *priv;
	int running, left, ended;

	clock_gettime(CLOCK_MONOTONIC, &d->t0);
	for (;;) {
		now = client_ms_since(&d->t0);
		load_sched_check(s, now, d->in_flight);
		if ((rc = load_drive_start_due(d, s, ops, now)) != TS_OK)
			break;
		if ((mc = curl_multi_perform(d->multi, &running)) !=
		    CURLM_OK) {
			msg_err("curl_multi_perform: %s",
			    curl_multi_strerror(mc));
			rc = TS_ESYS;
			break;
		}
		ended = 0;
		while ((m = curl_multi_info_read(d->multi, &left)) != NULL) {
			if (m->msg != CURLMSG_DONE)
				continue;
			priv = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
			    &priv);
			q = (struct req *)(void *)priv;
			/* m is invalid once its handle is removed */
			cc = m->data.result;
			load_drive_end(d, ops, q, cc);
			ended++;
		}
		now = client_ms_since(&d->t0);
		if (ops->progress != NULL && now >= next_progress) {
			ops->progress(ops->ud, now);
			while (next_progress <= now)
				next_progress += LOAD_DRIVE_PROGRESS_MS;
		}
		if (load_sched_done(s) && d->in_flight == 0)
			break;
		if (ended > 0 && !s->stop_starting)
			continue;       /* start their successors at once */
		if ((mc = curl_multi_poll(d->multi, NULL, 0,
		    load_drive_poll_ms(s, ops, next_progress, now), NULL)) !=
		    CURLM_OK) {
			msg_err("curl_multi_poll: %s",
			    curl_multi_strerror(mc));
			rc = TS_ESYS;
			break;
		}
	}
	*duration_s = client_ms_since(&d->t0) / 1e3;
	return rc;
}

void
load_drive_free(struct load_drive *d)
{
	struct req *q;

	while ((q = d->head) != NULL) {
		if (q->curl != NULL)
			curl_multi_remove_handle(d->multi, q->curl);
		load_drive_unlink(d, q);
		req_free(q);
	}
	if (d->multi != NULL)
		curl_multi_cleanup(d->multi);
	curl_slist_free_all(d->hdrs);
	memset(d, 0, sizeof(*d));
}
