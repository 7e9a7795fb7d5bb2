/*
 * measure.h - one measured /stream request for the lab steps (stream,
 * ttft, itl, cancel, lab): GET /stream?prompt=P&max_tokens=N, P
 * percent-encoded, plus the latency overrides, run as a load run of
 * concurrency 1 and one request (load_drive.h, req.h), its failure told
 * in one line; and the numbers and JSON the steps derive from it.
 *
 * Definitions (req.h has the clock): TTFT is the first token event's
 * arrival; ITL the gaps between consecutive token events (n tokens: n-1);
 * E2E the end of the response; throughput = tokens / E2E seconds.
 * Percentiles are nearest-rank (stats.h).
 */
#ifndef BENCH_MEASURE_H
#define BENCH_MEASURE_H

#include <stddef.h>

#include <jansson.h>

#include "common/ts.h"
#include "bench/client.h"
#include "bench/opts.h"
#include "bench/req.h"

/*
 * Runs GET /stream with o's prompt, URL, timeout and overrides and
 * max_tokens; after stop_after token events (0 = never) it hangs up on
 * purpose (with a TCP reset under o->rst); keep_log keeps every event
 * (req.h). *out gets the ended request, also after a failure (for its
 * event log), or NULL when none could be made; the caller frees it with
 * req_free(). Returns TS_OK when the stream ended with [DONE] or was
 * stopped on purpose; otherwise prints one line and returns TS_ESYS
 * (unreachable, transport failure), TS_EINVAL (HTTP error, error event,
 * protocol violation) or TS_EFORMAT (truncated).
 */
enum ts_err measure_stream(const struct opts *o, long max_tokens,
    size_t stop_after, int keep_log, struct req **out);

/*
 * The stream of ttft, itl and lab: measure_stream() with o->max_tokens,
 * then a check that there is a TTFT (a token) and, with need_itl, an ITL
 * (two tokens). *out as for measure_stream(). Returns TS_OK or the
 * failure (one line printed; TS_EFORMAT for too few tokens).
 */
enum ts_err measure_tokens(const struct opts *o, int need_itl,
    struct req **out);

/*
 * One line for an answer to url that is not 200: the status and the
 * server's error message from its JSON body, or a note that there was
 * none (with a hint where the status says the responder may be down).
 */
void measure_http_error(const char *url, long status,
    const struct client_body *body);

/*
 * ITL samples of an ended stream: the gaps between consecutive token
 * arrivals, in ms. Returns an array of q->ntokens - 1 values the caller
 * frees (NULL when there are fewer than two tokens); *n gets the count.
 */
double *measure_itl(const struct req *q, size_t *n);

/* Tokens per second over the whole request (E2E), 0 if undefined. */
double measure_throughput(const struct req *q);

/* A JSON string of a C string, or null when it is not UTF-8. */
json_t *measure_json_str(const char *s);

/* A JSON array of the n values v (ms). */
json_t *measure_json_reals(const double *v, size_t n);

#endif /* BENCH_MEASURE_H */
