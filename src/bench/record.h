/*
 * record.h - the trace of a `tokbench record` run (docs/TOKBENCH.md,
 * "Record"; the format is trace/trace.h's): the header line when the
 * run starts, one line per request in the order they started, written
 * as soon as every request that started before it has ended, and the
 * concurrency line when the run ends. What the recording holds in memory
 * (the bytes of the requests in flight, the lines that wait for an
 * earlier request, the concurrency samples) is bounded by
 * --record-max-bytes; past it the run stops.
 */
#ifndef BENCH_RECORD_H
#define BENCH_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/ts.h"
#include "trace/trace.h"
#include "bench/capture.h"
#include "bench/req.h"

/* One request line that waits for an earlier request to end. */
struct record_line {
	char *p;                /* owned; NULL: not ended yet */
	size_t len;
};

/* One start (+1) or end (-1) of a request, us from the run's start. */
struct record_event {
	int64_t t_us;
	int delta;
};

/* A recording; set up with record_open(). */
struct record {
	struct trace_writer w;
	const char *path;               /* borrowed (argv) */
	const char *target;             /* the base URL; borrowed */
	struct capture_budget budget;
	struct timespec t0;             /* the run's start */
	uint64_t next_seq;              /* the next request made */
	uint64_t next_write;            /* the next request line due */
	struct record_line *pend;       /* pend[head + k]: request
					 * next_write + k */
	size_t head, npend, pend_cap;
	struct record_event *ev;
	size_t nev, ev_cap;
	size_t requests;                /* lines written */
	int told_over;                  /* the budget's line was printed */
	int open;
};

/*
 * Starts a recording into `path` (created or truncated), holding at most
 * max_bytes in memory, against `target` (the base URL, borrowed: it is
 * taken off each request's URL to give its path): writes the header line
 * of hdr (its tool, created, target, endpoint and options) and starts the
 * run's clock. Returns TS_OK, or TS_ESYS after one line (msg_err).
 */
enum ts_err record_open(struct record *r, const char *path,
    size_t max_bytes, const char *target, const struct trace *hdr);

/* A capture for a request about to start (its place in start order is
 * the number of captures made before it): set it as q->cap. */
struct capture *record_attach(struct record *r);

/*
 * Records an ended request q (req_finish() done): its line from q's
 * capture, body, status, token events and counts, with `error` (NULL
 * when it completed; copied) unless the budget cut it short. Frees q's
 * capture. Returns TS_OK, TS_ELIMIT when the budget is spent (one line
 * printed the first time: the caller stops the run) or TS_ESYS when the
 * file cannot be written (one line printed).
 */
enum ts_err record_end(struct record *r, struct req *q, const char *error);

/*
 * Ends a recording: the lines still waiting (in start order; a request
 * that never ended has none), the concurrency line, the file closed.
 * Returns TS_OK, or TS_ESYS after one line; TS_ELIMIT when the budget
 * was spent during the run (the file is complete but for the requests it
 * cut). Accepts a recording that failed to open or was closed.
 */
enum ts_err record_close(struct record *r);

#endif /* BENCH_RECORD_H */
