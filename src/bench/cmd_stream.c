/*
 * cmd_stream.c - `tokbench stream`: one stream, measured (measure.h), as
 * key=value lines or one JSON object, optionally after the log of every
 * SSE event and comment with its arrival time.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/cmd.h"

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "bench/measure.h"
#include "bench/msg.h"
#include "bench/text.h"

/* Prints the --events log: arrival ms, kind, data, tab-separated. */
static void
cmd_stream_log(const struct req *q)
{
	static const char *const kinds[] = {"token", "done", "error",
	    "comment", "other"};
	size_t i;

	for (i = 0; i < q->nlog; i++) {
		printf("%.3f\t%s\t", q->log[i].ms, kinds[q->log[i].kind]);
		text_print_escaped(stdout, q->log[i].text, q->log[i].len);
		putchar('\n');
	}
}

/*
 * --json: one compact JSON object with the raw measurements (token
 * arrival times and every ITL sample itl[0..n), in ms) and their summary
 * (is; NULL when there is none). Returns TS_OK, or TS_ENOMEM after
 * printing one line.
 */
static enum ts_err
cmd_stream_json(const struct opts *o, const struct req *q,
    const double *itl, size_t n, const struct stats_summary *is)
{
	json_t *j;
	char *txt;

	j = json_pack("{s:o,s:o,s:I,s:I,s:o,s:o,s:o,s:f,s:f,s:s}",
	    "url", measure_json_str(o->url),
	    "request_id", measure_json_str(q->request_id_len ?
	    q->request_id : ""),
	    "tokens", (json_int_t)q->ntokens,
	    "comments", (json_int_t)q->ncomments,
	    "ttft_ms", q->ntokens > 0 ? json_real(q->arrival_ms[0]) :
	    json_null(),
	    "token_arrival_ms", measure_json_reals(q->arrival_ms,
	    q->ntokens),
	    "itl_ms", measure_json_reals(itl, n),
	    "e2e_ms", q->e2e_ms,
	    "throughput_tps", measure_throughput(q),
	    "percentile_method", STATS_PERCENTILE_METHOD);
	if (j != NULL && is != NULL)
		json_object_set_new(j, "itl", json_pack(
		    "{s:I,s:f,s:f,s:f,s:f,s:f}", "count", (json_int_t)is->n,
		    "p50_ms", is->p50, "p90_ms", is->p90, "p99_ms", is->p99,
		    "mean_ms", is->mean, "max_ms", is->max));
	txt = j != NULL ? json_dumps(j, JSON_COMPACT |
	    JSON_REAL_PRECISION(9)) : NULL;
	json_decref(j);
	if (txt == NULL) {
		msg_err("cannot encode the JSON summary");
		return TS_ENOMEM;
	}
	puts(txt);
	free(txt);
	return TS_OK;
}

/* The key=value lines (is as for cmd_stream_json()). */
static void
cmd_stream_text(const struct opts *o, const struct req *q,
    const struct stats_summary *is)
{
	printf("url=%s/stream\n", o->url);
	printf("request_id=%s\n", q->request_id_len ? q->request_id : "");
	printf("max_tokens=%ld\n", o->max_tokens);
	printf("tokens=%zu\n", q->ntokens);
	printf("comments=%zu\n", q->ncomments);
	if (q->ntokens > 0)
		printf("ttft_ms=%.3f\n", q->arrival_ms[0]);
	if (is != NULL)
		printf("itl_count=%zu\nitl_p50_ms=%.3f\nitl_p90_ms=%.3f\n"
		    "itl_p99_ms=%.3f\nitl_mean_ms=%.3f\nitl_max_ms=%.3f\n",
		    is->n, is->p50, is->p90, is->p99, is->mean, is->max);
	else
		printf("itl_count=0\n");
	printf("e2e_ms=%.3f\n", q->e2e_ms);
	printf("throughput_tps=%.2f\n", measure_throughput(q));
}

/*
 * stream: the --events log (after the transfer, never during it), then
 * the summary. A stream without any token fails: it has no TTFT.
 */
static int
cmd_stream_main(struct opts *o)
{
	struct stats_summary sum, *is = NULL;
	struct req *q = NULL;
	double *itl = NULL;
	size_t n = 0;
	enum ts_err rc;
	int ret = 1;

	rc = measure_stream(o, o->max_tokens, 0, o->events, &q);
	if (o->events && q != NULL)
		cmd_stream_log(q);
	if (rc != TS_OK)
		goto out;
	itl = measure_itl(q, &n);
	if (itl != NULL && stats_summarize(itl, n, &sum) == TS_OK)
		is = &sum;
	if (o->json) {
		if (cmd_stream_json(o, q, itl, n, is) != TS_OK)
			goto out;
	} else {
		cmd_stream_text(o, q, is);
	}
	if (q->ntokens == 0)
		msg_err("%s/stream: no token events before data: [DONE]",
		    o->url);
	else
		ret = 0;
out:
	free(itl);
	req_free(q);
	return ret;
}

static const struct option cmd_stream_longopts[] = {
	OPTS_LONG_URL, OPTS_LONG_PROMPT, OPTS_LONG_MAX,
	{"events", no_argument, NULL, OPTS_EVENTS},
	{"json", no_argument, NULL, OPTS_JSON},
	OPTS_LONG_TIMING, OPTS_LONG_TIMEOUT, OPTS_LONG_HELP, OPTS_LONG_END
};

const struct opts_cmd cmd_stream = {
	"stream", ":hu:p:", cmd_stream_longopts,
	"usage: tokbench stream [--url BASE] [--prompt TEXT] "
	"[--max-tokens N] [--events | --json] [--tpot-ms MS]\n"
	"                      [--prefill-ms MS]\n"
	"Opens one GET /stream and prints key=value lines: url, "
	"request_id,\n"
	"max_tokens, tokens, comments, ttft_ms, itl_count, itl_p50_ms, "
	"itl_p90_ms,\n"
	"itl_p99_ms, itl_mean_ms, itl_max_ms, e2e_ms, throughput_tps.\n"
	OPTS_USAGE_NET
	OPTS_USAGE_MAX20
	"      --events          first print each SSE event and comment "
	"as\n"
	"                        ARRIVAL_MS<TAB>KIND<TAB>DATA, KIND one "
	"of token,\n"
	"                        done, error, comment, other\n"
	"      --json            print one JSON object instead: ttft_ms,\n"
	"                        token_arrival_ms[], itl_ms[], itl "
	"summary,\n"
	"                        e2e_ms, throughput_tps, comments\n"
	OPTS_USAGE_TIMING,
	cmd_stream_main, 0, OPTS_LAB_TOKENS, NULL
};
