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
};

#endif /* BENCH_LOAD_H */
