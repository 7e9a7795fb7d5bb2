/*
 * cmd_itl.c - `tokbench itl`: ITL of one stream into DIR/itl.txt. Also a
 * step of `tokbench lab` (cmd.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/cmd.h"

#include <stdio.h>
#include <stdlib.h>

#include "bench/measure.h"
#include "bench/outdir.h"

enum ts_err
cmd_itl_write(const struct opts *o, const struct stats_summary *itl)
{
	return outdir_write_fmt(o->out_dir, "itl.txt",
	    "count=%zu p50_ms=%.2f p99_ms=%.2f\n", itl->n, itl->p50,
	    itl->p99);
}

/* itl: DIR/itl.txt, and the same line on stdout. */
static int
cmd_itl_main(struct opts *o)
{
	struct stats_summary is;
	struct req *q = NULL;
	double *itl = NULL;
	size_t n;
	int ret = 1;

	if (measure_tokens(o, 1, &q) != TS_OK)
		goto out;
	itl = measure_itl(q, &n);
	if (stats_summarize(itl, n, &is) != TS_OK ||
	    cmd_itl_write(o, &is) != TS_OK)
		goto out;
	printf("count=%zu p50_ms=%.2f p99_ms=%.2f\n", is.n, is.p50, is.p99);
	ret = 0;
out:
	free(itl);
	req_free(q);
	return ret;
}

const struct opts_cmd cmd_itl = {
	"itl", ":ho:u:p:", opts_measure_longopts,
	"usage: tokbench itl --out DIR [--url BASE] [--prompt TEXT]\n"
	"Measures ITL on one max_tokens=20 stream; writes DIR/itl.txt as\n"
	"count=<n> p50_ms=<x.xx> p99_ms=<x.xx> (nearest-rank) and prints "
	"it.\n"
	OPTS_USAGE_OUT OPTS_USAGE_NET OPTS_USAGE_MAX20,
	cmd_itl_main, 1, OPTS_LAB_TOKENS, NULL
};
