/*
 * load.h - the record of a `tokbench load` run: what cmd_load.c counts
 * while the run goes (each request's fate, the driver's and the
 * schedule's counts, the client's CPU time) and load_output.c prints.
 * The metrics are defined in load_report.h.
 */
#ifndef BENCH_LOAD_H
#define BENCH_LOAD_H

#include <stddef.h>

#include <jansson.h>

#include "bench/load_opts.h"
#include "bench/load_report.h"

/* One measured request, for --save-detailed (vLLM's per-request arrays
 * of vllm/benchmarks/serve.py's result: input_lens, output_lens, ttfts,
 * itls, errors). */
struct load_detail {
	int set;                /* the request ended */
	long input_len;         /* the server's prompt count, else the
				 * plan's (or the file's estimate) */
	long output_len;        /* output tokens; 0 for a failure */
	double ttft_s;          /* seconds; 0 without a token */
	double *itl_s;          /* gaps between token events, seconds */
	size_t nitl;
	char *error;            /* "" when it completed */
};

/* Everything a run counted, for its report. */
struct load_run {
	const struct load_opts *o;
	struct load_acc acc;
	size_t started, max_in_flight, not_started;
	json_t *abandoned_ids;  /* X-Request-Id of every abandoned stream */
	size_t abandoned_no_id;
	char *fail_example[LOAD_FAIL_COUNT];    /* first message per kind */
	double client_cpu_s;    /* user + system CPU time of tokbench */
	double start_backlog_ms;   /* longest spell of starts due and not
				    * yet made (load_drive.h) */
	size_t warmup_completed, warmup_failed; /* --warmup, apart */
	size_t dataset_entries, dataset_skipped;        /* a file's */
	struct load_detail *detail;     /* by plan index; --save-detailed */
	size_t ndetail;
};

/* What `tokbench record` adds to a load run (cmd_record.c). */
struct load_record_opts {
	const char *path;       /* -o TRACE; borrowed */
	size_t max_bytes;       /* --record-max-bytes */
	const json_t *options;  /* the header's "options" (borrowed; the
				 * model is added to a copy) */
};

/*
 * Runs the load of o (cmd_load.c): the warm-up, the traffic, the report
 * on stdout; with ro (NULL for `tokbench load`) also the trace of every
 * request into ro->path (record.h). Returns the exit status: 0, or 1
 * when nothing was measured, a file could not be written or the
 * recording passed ro->max_bytes.
 */
int cmd_load_exec(const struct load_opts *o,
    const struct load_record_opts *ro);

#endif /* BENCH_LOAD_H */
