/*
 * cmd_lab.c - `tokbench lab`: every step (gen, one stream for ttft.txt
 * and itl.txt, cancel), then DIR/report.txt and DIR/report.json with
 * everything measured.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/cmd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/client.h"
#include "bench/measure.h"
#include "bench/msg.h"
#include "bench/outdir.h"

/*
 * Builds report.json: every number the lab measured (the stream q, its
 * ITL samples itl and their summary is, the gen and cancel steps), the
 * settings it ran with and how percentiles were computed. Returns a new
 * reference, or NULL when jansson fails.
 */
static json_t *
cmd_lab_json(const struct opts *o, const struct cmd_gen_result *g,
    const struct req *q, const double *itl, const struct stats_summary *is,
    const struct cmd_cancel_result *c)
{
	json_t *gen, *st, *itlj, *can;

	gen = json_pack("{s:o, s:i, s:b, s:I, s:I}",
	    "tokgen", measure_json_str(g->tokgen),
	    "n", (json_int_t)o->sim_tokens,
	    "identical", g->identical,
	    "bytes", (json_int_t)g->bytes,
	    "first_difference", (json_int_t)g->first_diff);
	itlj = json_pack("{s:o, s:I, s:f, s:f, s:f, s:f, s:f, s:f}",
	    "samples_ms", measure_json_reals(itl, is->n),
	    "count", (json_int_t)is->n,
	    "p50_ms", is->p50, "p90_ms", is->p90, "p99_ms", is->p99,
	    "mean_ms", is->mean, "min_ms", is->min, "max_ms", is->max);
	st = json_pack("{s:o, s:I, s:I, s:o, s:f, s:o, s:f, s:f, s:f, s:I}",
	    "request_id", measure_json_str(q->request_id),
	    "max_tokens", (json_int_t)o->max_tokens,
	    "tokens", (json_int_t)q->ntokens,
	    "token_arrival_ms", measure_json_reals(q->arrival_ms,
	    q->ntokens),
	    "ttft_ms", q->arrival_ms[0],
	    "itl", itlj,
	    "e2e_ms", q->e2e_ms,
	    "done_ms", q->done_ms,
	    "throughput_tps", measure_throughput(q),
	    "comments", (json_int_t)q->ncomments);
	can = json_pack("{s:o, s:I, s:I, s:I, s:I, s:o, s:f, s:i}",
	    "request_id", measure_json_str(c->request_id),
	    "max_tokens", (json_int_t)c->max_tokens,
	    "read", (json_int_t)c->read,
	    "requested", (json_int_t)c->requested,
	    "generated", (json_int_t)c->generated,
	    "status", measure_json_str(c->status),
	    "poll_ms", c->poll_ms,
	    "polls", c->polls);
	return json_pack("{s:s, s:o, s:o, s:s, s:o, s:o, s:o}",
	    "tokbench_version", client_version(),
	    "url", measure_json_str(o->url),
	    "prompt", measure_json_str(o->prompt),
	    "percentile_method", STATS_PERCENTILE_METHOD,
	    "gen", gen, "stream", st, "cancel", can);
}

/* Writes DIR/report.json from cmd_lab_json(), one line. */
static enum ts_err
cmd_lab_write_json(const struct opts *o, json_t *report)
{
	char *dump;
	enum ts_err rc;
	size_t n;

	dump = report ? json_dumps(report, JSON_COMPACT |
	    JSON_REAL_PRECISION(10)) : NULL;
	if (dump == NULL) {
		msg_err("cannot build report.json");
		return TS_ENOMEM;
	}
	n = strlen(dump);
	dump = xrealloc(dump, n + 2);
	memcpy(dump + n, "\n", 2);
	rc = outdir_write(o->out_dir, "report.json", dump, n + 1);
	free(dump);
	return rc;
}

/*
 * lab: gen, one max_tokens=20 stream (ttft.txt, itl.txt), cancel, then
 * report.txt (four lines) and report.json. Stops at the first step that
 * fails; a non-deterministic tokgen is reported and fails the lab at the
 * end, after the reports are written.
 */
static int
cmd_lab_main(struct opts *o)
{
	struct opts so = *o, co = *o;
	struct cmd_gen_result g;
	struct cmd_cancel_result c;
	struct stats_summary is;
	struct req *q = NULL;
	double *itl = NULL;
	json_t *report = NULL;
	char rtxt[256];
	size_t n;
	int ret = 1;

	so.max_tokens = OPTS_LAB_TOKENS;
	co.max_tokens = OPTS_CANCEL_TOKENS;
	co.read_tokens = OPTS_CANCEL_READ;

	if (cmd_gen_run(o, &g) != TS_OK)
		goto out;
	if (measure_tokens(&so, 1, &q) != TS_OK)
		goto out;
	itl = measure_itl(q, &n);
	if (stats_summarize(itl, n, &is) != TS_OK ||
	    cmd_ttft_write(o, q) != TS_OK || cmd_itl_write(o, &is) != TS_OK)
		goto out;
	printf("stream: request_id=%s tokens=%zu ttft_ms=%.3f "
	    "itl_p50_ms=%.3f itl_p99_ms=%.3f e2e_ms=%.3f\n",
	    q->request_id_len ? q->request_id : "-", q->ntokens,
	    q->arrival_ms[0], is.p50, is.p99, q->e2e_ms);
	if (cmd_cancel_run(&co, &c) != TS_OK)
		goto out;

	n = (size_t)snprintf(rtxt, sizeof(rtxt), "ttft_ms=%lld\n"
	    "itl_p50_ms=%.2f\ntokens=%zu\nthroughput_tps=%.2f\n",
	    llround(q->arrival_ms[0]), is.p50, q->ntokens,
	    measure_throughput(q));
	if (outdir_write(o->out_dir, "report.txt", rtxt, n) != TS_OK)
		goto out;
	report = cmd_lab_json(&so, &g, q, itl, &is, &c);
	if (cmd_lab_write_json(o, report) != TS_OK)
		goto out;
	fputs(rtxt, stdout);
	printf("report=%s/report.txt json=%s/report.json\n", o->out_dir,
	    o->out_dir);
	if (cmd_gen_identical(&g))
		ret = 0;
out:
	json_decref(report);
	free(itl);
	req_free(q);
	return ret;
}

static const struct option cmd_lab_longopts[] = {
	OPTS_LONG_OUT, OPTS_LONG_URL, OPTS_LONG_PROMPT, OPTS_LONG_TOKGEN,
	OPTS_LONG_TIMEOUT, OPTS_LONG_HELP, OPTS_LONG_END
};

const struct opts_cmd cmd_lab = {
	"lab", ":ho:u:p:", cmd_lab_longopts,
	"usage: tokbench lab --out DIR [--url BASE] [--prompt TEXT] "
	"[--tokgen PATH]\n"
	"Runs gen, one max_tokens=20 stream (ttft.txt, itl.txt) and "
	"cancel,\n"
	"then writes DIR/report.txt (ttft_ms, itl_p50_ms, tokens,\n"
	"throughput_tps) and DIR/report.json (everything measured).\n"
	OPTS_USAGE_OUT OPTS_USAGE_NET
	"      --tokgen PATH     tokgen program (see tokbench gen "
	"--help)\n",
	cmd_lab_main, 1, OPTS_LAB_TOKENS, NULL
};
