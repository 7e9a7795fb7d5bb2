/*
 * capture.h - what `tokbench record` keeps of one request while it runs
 * (req.h's q->cap): every read of the response body with its arrival,
 * and the response headers, as received; all requests of a run draw
 * their bytes from one budget (struct capture_budget), so a recording
 * cannot grow past --record-max-bytes.
 */
#ifndef BENCH_CAPTURE_H
#define BENCH_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"
#include "trace/trace.h"

/* The bytes a run's recording holds in memory, against its bound. */
struct capture_budget {
	size_t used;            /* bytes held now */
	size_t max;             /* --record-max-bytes */
	int over;               /* a request asked past max: stop */
};

/*
 * One request's capture. chunks[] and headers[] own their bytes (the
 * trace.h shapes, so a request line is encoded from them as they are);
 * seq is the request's place in start order.
 */
struct capture {
	struct capture_budget *budget;  /* borrowed: the run's */
	uint64_t seq;
	struct trace_chunk *chunks;
	size_t nchunks, chunk_cap;
	struct trace_hdr *headers;
	size_t nheaders, header_cap;
	size_t held;            /* bytes charged to the budget */
	int cut;                /* a chunk or header was refused: the
				 * transfer was ended for the budget */
};

/* Takes n bytes from the budget: TS_OK, or TS_ELIMIT (b->over set, the
 * budget unchanged) when used would pass max. */
enum ts_err capture_budget_take(struct capture_budget *b, size_t n);

/* Gives n bytes back to the budget (n at most what was taken). */
void capture_budget_give(struct capture_budget *b, size_t n);

/* A new capture of request number seq, charged to b (borrowed; it must
 * outlive the capture). Aborts on out of memory. */
struct capture *capture_new(struct capture_budget *b, uint64_t seq);

/*
 * Keeps one read of the body: (p, n) copied, t_us its arrival in us from
 * the request's start. Returns TS_OK, or TS_ELIMIT when the budget would
 * pass its bound (nothing kept; the caller ends the transfer).
 */
enum ts_err capture_chunk(struct capture *c, int64_t t_us, const char *p,
    size_t n);

/*
 * Keeps one header line (line, n) as libcurl's header callback gets it
 * (not NUL-terminated, line end included): a status line ("HTTP/...")
 * starts a new response and drops the headers of an earlier one (1xx,
 * a redirect), the blank line that ends the head is skipped, any other
 * line is split at its first ':' into a name (as received) and a value
 * without the blanks around it and the line end (RFC 9110 section 5.5).
 * Returns TS_OK, or TS_ELIMIT when over the budget (nothing kept).
 */
enum ts_err capture_header_line(struct capture *c, const char *line,
    size_t n);

/* Frees a capture and gives its bytes back; accepts NULL. */
void capture_free(struct capture *c);

#endif /* BENCH_CAPTURE_H */
