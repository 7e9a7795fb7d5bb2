/*
 * load_drive.h - the driver of a load run: one thread takes every request
 * a schedule (load_sched.h) starts through the libcurl multi interface
 * (its socket interface over epoll: curl_multi_socket_action), so
 * thousands of open streams cost a socket and a struct req each, and a
 * wake-up costs only the sockets that have data, until the schedule is done and the last
 * request has ended. Each request's bytes reach its own callbacks
 * (req.h) as they arrive; the owner of the run builds each request and
 * takes each one back when it ends. tokbench load runs many this way;
 * the single-stream commands (measure.h) run one, a closed loop of
 * concurrency 1.
 */
#ifndef BENCH_LOAD_DRIVE_H
#define BENCH_LOAD_DRIVE_H

#include <stddef.h>
#include <time.h>

#include <curl/curl.h>

#include "common/ts.h"
#include "bench/load_report.h"
#include "bench/load_sched.h"
#include "bench/req.h"

/* Period of the progress callback, in ms. */
#define LOAD_DRIVE_PROGRESS_MS 1000.0
/* The longest epoll wait, ms, and the events taken per wait. */
#define LOAD_DRIVE_WAIT_MAX_MS 1000.0
#define LOAD_DRIVE_EVENTS 512
/*
 * Requests started per pass of the loop. Between two bursts the loop reads
 * what has arrived, so when thousands are due at once (a closed loop's
 * start) a request's TTFT, from its own start, does not include the
 * connects of the thousands started in the same instant before it; the
 * client's lag behind its schedule is reported apart (start_backlog_ms).
 */
#define LOAD_DRIVE_START_BURST 32

/* What the owner of a run does for the driver. */
struct load_drive_ops {
	/*
	 * Builds the request of `plan`, its URL set, not yet started (see
	 * req_new()). Returns NULL after printing one line: the run stops.
	 */
	struct req *(*make)(void *ud, const struct load_plan *plan);
	/* Takes back an ended request (req_finish() done); owns it. */
	void (*end)(void *ud, struct req *q);
	/* Prints a progress line every LOAD_DRIVE_PROGRESS_MS; NULL for
	 * none. now_ms is ms since the start of the run. */
	void (*progress)(void *ud, double now_ms);
	void *ud;
};

/* One run of the driver; set up with load_drive_init(). */
struct load_drive {
	CURLM *multi;
	int epfd;                       /* the sockets libcurl watches */
	double curl_due_ms;             /* libcurl's timer (ms since t0),
					 * -1: none */
	struct curl_slist *hdrs;        /* of every request */
	struct req *head;               /* requests in flight */
	size_t started, in_flight, max_in_flight;
	struct timespec t0;             /* start of the run */
	int backlog;                    /* more due than one burst */
	double backlog_since_ms;        /* when the backlog began */
	double backlog_max_ms;          /* its longest spell: how far the
					 * client lagged its schedule */
};

/* Sets up the multi handle. Returns TS_OK, or TS_ENOMEM after printing
 * one line. Free with load_drive_free() either way. */
enum ts_err load_drive_init(struct load_drive *d);

/* Adds the header line (copied; "Name: value") to every request the
 * driver starts from now on. TS_OK, or TS_ENOMEM after one line. */
enum ts_err load_drive_header(struct load_drive *d, const char *line);

/*
 * Runs the schedule *s to its end and until every request has ended.
 * *duration_s gets the run's duration, from its start to the end of the
 * last request. Returns TS_OK, or TS_ESYS when libcurl fails or a request
 * cannot be made or started (one line printed; requests still in flight
 * are freed by load_drive_free(), uncounted).
 */
enum ts_err load_drive_run(struct load_drive *d, struct load_sched *s,
    const struct load_drive_ops *ops, double *duration_s);

/* Frees the multi handle and any request still in flight; accepts a
 * zeroed driver. */
void load_drive_free(struct load_drive *d);

#endif /* BENCH_LOAD_DRIVE_H */
