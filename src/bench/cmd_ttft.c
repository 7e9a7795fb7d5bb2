/*
 * cmd_ttft.c - `tokbench ttft`: TTFT of one stream into DIR/ttft.txt.
 * Also a step of `tokbench lab` (cmd.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/cmd.h"

#include <math.h>
#include <stdio.h>

#include "bench/measure.h"
#include "bench/outdir.h"

enum ts_err
cmd_ttft_write(const struct opts *o, const struct req *q)
{
	return outdir_write_fmt(o->out_dir, "ttft.txt", "ttft_ms=%lld\n",
	    llround(q->arrival_ms[0]));
}

/* ttft: DIR/ttft.txt, and the same line on stdout. */
static int
cmd_ttft_main(struct opts *o)
{
	struct req *q = NULL;
	int ret = 1;

	if (measure_tokens(o, 0, &q) != TS_OK || cmd_ttft_write(o, q) != TS_OK)
		goto out;
	printf("ttft_ms=%lld\n", llround(q->arrival_ms[0]));
	ret = 0;
out:
	req_free(q);
	return ret;
}

const struct opts_cmd cmd_ttft = {
	"ttft", ":ho:u:p:", opts_measure_longopts,
	"usage: tokbench ttft --out DIR [--url BASE] [--prompt TEXT]\n"
	"Measures TTFT on one max_tokens=20 stream; writes DIR/ttft.txt "
	"as\n"
	"ttft_ms=<integer, rounded> and prints the same line.\n"
	OPTS_USAGE_OUT OPTS_USAGE_NET OPTS_USAGE_MAX20,
	cmd_ttft_main, 1, OPTS_LAB_TOKENS, NULL
};
