/*
 * load_output.h - the report of a `tokbench load` run: the text, in the
 * layout of vLLM's `vllm bench serve`, and one JSON object with vLLM's
 * result keys plus the failures by kind, the abandoned streams' ids, the
 * client's own CPU time and the settings.
 */
#ifndef BENCH_LOAD_OUTPUT_H
#define BENCH_LOAD_OUTPUT_H

#include <stdio.h>

#include <jansson.h>

#include "common/ts.h"
#include "bench/load.h"
#include "bench/load_report.h"

/* Prints the text report of *run and its numbers *r to f. */
void load_output_text(FILE *f, const struct load_run *run,
    const struct load_report *r);

/* The JSON report of *run and *r. Returns a new reference. */
json_t *load_output_json(const struct load_run *run,
    const struct load_report *r);

/*
 * Writes the JSON report j to `path` ("-" = stdout), one compact line.
 * Returns TS_OK, or TS_ESYS after printing one line.
 */
enum ts_err load_output_write_json(const char *path, json_t *j);

#endif /* BENCH_LOAD_OUTPUT_H */
