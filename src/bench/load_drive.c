/*
 * load_drive.c - the libcurl multi driver of a load run (load_drive.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/load_drive.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "bench/client.h"
#include "bench/msg.h"

enum ts_err
load_drive_init(struct load_drive *d)
{
	memset(d, 0, sizeof(*d));
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0) {
		msg_err("epoll_create1: %s", strerror(errno));
		return TS_ESYS;
	}
	d->hdrs = curl_slist_append(NULL, "Accept: text/event-stream");
	if ((d->multi = curl_multi_init()) == NULL || d->hdrs == NULL) {
		msg_err("cannot initialise libcurl's multi interface");
		return TS_ENOMEM;
	}
	return TS_OK;
}

enum ts_err
load_drive_header(struct load_drive *d, const char *line)
{
	struct curl_slist *h = curl_slist_append(d->hdrs, line);

	if (h == NULL) {
		msg_err("cannot add a request header");
		return TS_ENOMEM;
	}
	d->hdrs = h;
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

/* Starts what the schedule allows at now_ms, at most
 * LOAD_DRIVE_START_BURST; d->backlog says whether more were due. */
static enum ts_err
load_drive_start_due(struct load_drive *d, struct load_sched *s,
    const struct load_drive_ops *ops, double now_ms)
{
	struct load_plan plan;
	struct req *q;
	enum ts_err rc;
	int n = 0;

	while (n < LOAD_DRIVE_START_BURST &&
	    load_sched_next(s, now_ms, d->in_flight, &plan)) {
		if ((q = ops->make(ops->ud, &plan)) == NULL)
			return TS_ESYS;
		if ((rc = load_drive_add(d, q)) != TS_OK)
			return rc;
		n++;
	}
	if (n == LOAD_DRIVE_START_BURST) {
		/* perhaps more due: look again after one pass */
		if (!d->backlog)
			d->backlog_since_ms = now_ms;
		d->backlog = 1;
	} else if (d->backlog) {
		d->backlog = 0;
		if (now_ms - d->backlog_since_ms > d->backlog_max_ms)
			d->backlog_max_ms = now_ms - d->backlog_since_ms;
	}
	return TS_OK;
}

/*
 * libcurl's socket callback (CURLMOPT_SOCKETFUNCTION): what it wants to
 * know of a socket goes into the run's epoll set.
 */
static int
load_drive_socket(CURL *easy, curl_socket_t fd, int what, void *ud,
    void *sockp)
{
	struct load_drive *d = ud;
	struct epoll_event ev;

	(void)easy;
	(void)sockp;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) |
	    (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	ev.data.fd = fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, fd, &ev) != 0 &&
	    epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
		return -1;
	return 0;
}

/* libcurl's timer callback (CURLMOPT_TIMERFUNCTION): when it next wants
 * curl_multi_socket_action(CURL_SOCKET_TIMEOUT), -1 for never. */
static int
load_drive_timer(CURLM *multi, long timeout_ms, void *ud)
{
	struct load_drive *d = ud;

	(void)multi;
	d->curl_due_ms = timeout_ms < 0 ? -1.0 :
	    client_ms_since(&d->t0) + (double)timeout_ms;
	return 0;
}

/*
 * How long epoll_wait may sleep: until libcurl's timer, what the schedule
 * allows, and not past the next progress line. Rounded up, so that the
 * loop does not spin through the last fraction of a millisecond.
 */
static int
load_drive_wait_ms(const struct load_drive *d, const struct load_sched *s,
    const struct load_drive_ops *ops, double next_progress_ms,
    double now_ms)
{
	double t = load_sched_wait_ms(s, now_ms);

	if (d->backlog)
		return 0;       /* starts are due: no sleep */
	if (d->curl_due_ms >= 0 && d->curl_due_ms - now_ms < t)
		t = d->curl_due_ms - now_ms;
	if (ops->progress != NULL && next_progress_ms - now_ms < t)
		t = next_progress_ms - now_ms;
	if (t > LOAD_DRIVE_WAIT_MAX_MS)
		t = LOAD_DRIVE_WAIT_MAX_MS;
	return t <= 0 ? 0 : (int)ceil(t);
}

/* Hands every transfer libcurl finished to the owner; returns how many. */
static int
load_drive_reap(struct load_drive *d, const struct load_drive_ops *ops)
{
	CURLMsg *m;
	CURLcode cc;
	struct req *q;
	char *priv;
	int left, ended = 0;

	while ((m = curl_multi_info_read(d->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		priv = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
		q = (struct req *)(void *)priv;
		/* m is invalid once its handle is removed */
		cc = m->data.result;
		load_drive_end(d, ops, q, cc);
		ended++;
	}
	return ended;
}

/*
 * The loop: libcurl's socket interface over one epoll set
 * (curl_multi_socket_action), so each wake-up costs what the sockets that
 * have data need, not a pass over every transfer (curl_multi_perform
 * walks them all: at thousands of streams that pass was the client's
 * whole budget).
 */
enum ts_err
load_drive_run(struct load_drive *d, struct load_sched *s,
    const struct load_drive_ops *ops, double *duration_s)
{
	struct epoll_event evs[LOAD_DRIVE_EVENTS];
	double now, next_progress = LOAD_DRIVE_PROGRESS_MS;
	enum ts_err rc = TS_OK;
	CURLMcode mc;
	int running, n, i;

	clock_gettime(CLOCK_MONOTONIC, &d->t0);
	d->curl_due_ms = -1.0;
	curl_multi_setopt(d->multi, CURLMOPT_SOCKETFUNCTION,
	    load_drive_socket);
	curl_multi_setopt(d->multi, CURLMOPT_SOCKETDATA, d);
	curl_multi_setopt(d->multi, CURLMOPT_TIMERFUNCTION, load_drive_timer);
	curl_multi_setopt(d->multi, CURLMOPT_TIMERDATA, d);
	for (;;) {
		now = client_ms_since(&d->t0);
		load_sched_check(s, now, d->in_flight);
		if ((rc = load_drive_start_due(d, s, ops, now)) != TS_OK)
			break;
		now = client_ms_since(&d->t0);
		if (d->curl_due_ms >= 0 && d->curl_due_ms <= now) {
			d->curl_due_ms = -1.0;
			mc = curl_multi_socket_action(d->multi,
			    CURL_SOCKET_TIMEOUT, 0, &running);
			if (mc != CURLM_OK)
				goto curl_failed;
		}
		if (load_drive_reap(d, ops) > 0 && !s->stop_starting)
			continue;       /* start their successors at once */
		now = client_ms_since(&d->t0);
		if (ops->progress != NULL && now >= next_progress) {
			ops->progress(ops->ud, now);
			while (next_progress <= now)
				next_progress += LOAD_DRIVE_PROGRESS_MS;
		}
		if (load_sched_done(s) && d->in_flight == 0)
			break;
		n = epoll_wait(d->epfd, evs, LOAD_DRIVE_EVENTS,
		    load_drive_wait_ms(d, s, ops, next_progress, now));
		if (n < 0 && errno != EINTR) {
			msg_err("epoll_wait: %s", strerror(errno));
			rc = TS_ESYS;
			break;
		}
		for (i = 0; i < n; i++) {
			int mask = (evs[i].events & EPOLLIN ?
			    CURL_CSELECT_IN : 0) |
			    (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
			    (evs[i].events & (EPOLLERR | EPOLLHUP) ?
			    CURL_CSELECT_ERR : 0);

			mc = curl_multi_socket_action(d->multi, evs[i].data.fd,
			    mask, &running);
			if (mc != CURLM_OK)
				goto curl_failed;
		}
		load_drive_reap(d, ops);
	}
	*duration_s = client_ms_since(&d->t0) / 1e3;
	return rc;
curl_failed:
	msg_err("curl_multi_socket_action: %s", curl_multi_strerror(mc));
	*duration_s = client_ms_since(&d->t0) / 1e3;
	return TS_ESYS;
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
	if (d->epfd > 0)
		close(d->epfd);
	memset(d, 0, sizeof(*d));
}
