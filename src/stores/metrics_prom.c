/*
 * stores/metrics_prom.c - the metrics file (metrics_file.h) rendered in
 * the Prometheus text exposition format 0.0.4 (prometheus.io "Exposition
 * formats", "Text format details"): metrics_render() of metrics.h. Reads
 * a snapshot of each word and never writes the file.
 */
#include "stores/metrics.h"
#include "stores/metrics_file.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define METRICS_LINE_MAX 512u      /* longest rendered line, bytes */

/* Histogram names and help texts, in enum metrics_hist order (the bounds
 * are the file's: metrics_hist_bounds). */
static const struct metrics_hist_desc {
	const char *name;
	const char *help;
} hist_desc[METRICS_HIST_COUNT] = {
	[METRICS_TTFT] = { "tokstream:time_to_first_token_seconds",
	    "Time from a request's arrival to its first token, in seconds." },
	[METRICS_ITL] = { "tokstream:inter_token_latency_seconds",
	    "Time between two consecutive tokens of a stream, in seconds." },
	[METRICS_E2E] = { "tokstream:e2e_request_latency_seconds",
	    "Time from a request's arrival to the end of its response, "
	    "in seconds." },
	[METRICS_QUEUE] = { "tokstream:request_queue_time_seconds",
	    "Time a request waited for a decode slot, in seconds." },
};

/* Counters in enum order; consecutive entries of one family share its
 * HELP and TYPE lines. */
static const struct metrics_counter_desc {
	const char *family;
	const char *help;
	const char *labels;         /* "{...}" or "" */
} counter_desc[METRICS_COUNTER_COUNT] = {
	[METRICS_GENERATION_TOKENS] = { "tokstream:generation_tokens_total",
	    "Tokens generated.", "" },
	[METRICS_PROMPT_TOKENS] = { "tokstream:prompt_tokens_total",
	    "Prompt tokens of the requests admitted.", "" },
	[METRICS_WASTED_TOKENS] = { "tokstream:wasted_tokens_total",
	    "Tokens generated that no client received.", "" },
	[METRICS_REJECTED_QUEUE_FULL] = {
	    "tokstream:requests_rejected_total",
	    "Requests refused before generation, by reason "
	    "(queue_full: answered 429).", "{reason=\"queue_full\"}" },
	[METRICS_PREFIX_QUERIES] = { "tokstream:prefix_cache_queries_total",
	    "Prompt tokens looked up in the prefix cache (vLLM's "
	    "prefix_cache_queries).", "" },
	[METRICS_PREFIX_HITS] = { "tokstream:prefix_cache_hits_total",
	    "Prompt tokens found in the prefix cache (vLLM's "
	    "prefix_cache_hits).", "" },
#define INJECTED(k, name) [METRICS_INJECTED + (k) - 1] = { \
	    "tokstream:injected_failures_total", "Failures injected, by " \
	    "type (--failure-injection-rate, X-Tokstream-Failure).", \
	    "{type=\"" name "\"}" }
	INJECTED(1, "rate_limit"),
	INJECTED(2, "server_error"),
	INJECTED(3, "overloaded"),
	INJECTED(4, "context_length"),
	INJECTED(5, "invalid_api_key"),
	INJECTED(6, "timeout"),
	INJECTED(7, "midstream_error"),
	INJECTED(8, "midstream_cut"),
#undef INJECTED
};

static const char *const reason_name[METRICS_REASON_COUNT] = {
	[METRICS_STOP] = "stop",
	[METRICS_LENGTH] = "length",
	[METRICS_ABORT] = "abort",
	[METRICS_ERROR] = "error",
};

/* Appends one printf-formatted line (at most METRICS_LINE_MAX bytes). */
static enum ts_err put(struct ts_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum ts_err
put(struct ts_buf *b, const char *fmt, ...)
{
	char line[METRICS_LINE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return TS_ELIMIT;       /* a name or help text too long */
	return ts_buf_append(b, line, (size_t)n);
}

/*
 * Writes units / per_second as a decimal number of seconds with at least
 * one digit after the point and no trailing zeros ("0.001", "1.0"),
 * exact for every u64: digits is log10(per_second).
 */
static void
fmt_seconds(char *dst, size_t len, uint64_t units, uint64_t per_second,
    int digits)
{
	int n = snprintf(dst, len, "%" PRIu64 ".%0*" PRIu64,
	    units / per_second, digits, units % per_second);

	while (n > 2 && dst[n - 1] == '0' && dst[n - 2] != '.')
		dst[--n] = '\0';
}

static uint64_t
add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static enum ts_err
render_family(struct ts_buf *b, const char *name, const char *help,
    const char *type)
{
	enum ts_err rc = put(b, "# HELP %s %s\n", name, help);

	return rc != TS_OK ? rc : put(b, "# TYPE %s %s\n", name, type);
}

/*
 * One histogram from a snapshot of its words: cumulative buckets
 * (saturating, so a damaged file still renders non-decreasing counts),
 * then _sum and _count, which is the +Inf bucket by construction.
 */
static enum ts_err
render_hist(struct ts_buf *b, const struct metrics *m, enum metrics_hist h)
{
	const struct metrics_hist_desc *d = &hist_desc[h];
	const struct metrics_bounds *bd = &metrics_hist_bounds[h];
	uint64_t cum = 0, sum_us;
	char num[48];
	enum ts_err rc;
	unsigned i;

	if ((rc = render_family(b, d->name, d->help, "histogram")) != TS_OK)
		return rc;
	for (i = 0; i <= bd->n; i++) {
		cum = add_sat(cum, atomic_load_explicit(&m->f->hist[h][i],
		    memory_order_relaxed));
		if (i < bd->n)
			fmt_seconds(num, sizeof(num), bd->ns[i], 1000000000u,
			    9);
		else
			snprintf(num, sizeof(num), "+Inf");
		if ((rc = put(b, "%s_bucket{le=\"%s\"} %" PRIu64 "\n",
		    d->name, num, cum)) != TS_OK)
			return rc;
	}
	sum_us = atomic_load_explicit(&m->f->hist[h][METRICS_SUM_WORD],
	    memory_order_relaxed);
	fmt_seconds(num, sizeof(num), sum_us, 1000000u, 6);
	if ((rc = put(b, "%s_sum %s\n", d->name, num)) != TS_OK)
		return rc;
	return put(b, "%s_count %" PRIu64 "\n", d->name, cum);
}

static enum ts_err
render_counters(struct ts_buf *b, const struct metrics *m)
{
	const struct metrics_counter_desc *d;
	enum ts_err rc;
	unsigned i;

	for (i = 0; i < METRICS_COUNTER_COUNT; i++) {
		d = &counter_desc[i];
		if ((i == 0 ||
		    strcmp(counter_desc[i - 1].family, d->family) != 0) &&
		    (rc = render_family(b, d->family, d->help, "counter")) !=
		    TS_OK)
			return rc;
		if ((rc = put(b, "%s%s %" PRIu64 "\n", d->family, d->labels,
		    atomic_load_explicit(&m->f->counter[i],
		    memory_order_relaxed))) != TS_OK)
			return rc;
	}
	if ((rc = render_family(b, "tokstream:request_success_total",
	    "Requests finished, by finish reason (abort: the client went "
	    "away; error: an injected or failed generation).", "counter")) !=
	    TS_OK)
		return rc;
	for (i = 0; i < METRICS_REASON_COUNT; i++)
		if ((rc = put(b, "tokstream:request_success_total"
		    "{finished_reason=\"%s\"} %" PRIu64 "\n", reason_name[i],
		    atomic_load_explicit(&m->f->reason[i],
		    memory_order_relaxed))) != TS_OK)
			return rc;
	return TS_OK;
}

/* The gauges, summed over the slots of live processes (wrapping). */
static enum ts_err
render_gauges(struct ts_buf *b, const struct metrics *m)
{
	uint64_t sum[METRICS_GAUGE_COUNT], live, running, waiting, kv_used;
	uint64_t kv_blocks;
	char num[48];
	enum ts_err rc;

	metrics_slot_sums(m, sum, &live);
	running = sum[METRICS_RUNNING];
	waiting = sum[METRICS_WAITING];
	kv_used = sum[METRICS_KV_USED];
	kv_blocks = sum[METRICS_KV_BLOCKS];
	if ((rc = render_family(b, "tokstream:num_requests_running",
	    "Requests in a slot (prefill or decode), over all responder "
	    "processes.",
	    "gauge")) != TS_OK ||
	    (rc = put(b, "tokstream:num_requests_running %" PRId64 "\n",
	    (int64_t)running)) != TS_OK)
		return rc;
	if ((rc = render_family(b, "tokstream:num_requests_waiting",
	    "Requests waiting for a decode slot, over all responder "
	    "processes.", "gauge")) != TS_OK ||
	    (rc = put(b, "tokstream:num_requests_waiting %" PRId64 "\n",
	    (int64_t)waiting)) != TS_OK)
		return rc;
	/* a fraction, as vLLM's kv_cache_usage_perc (1 = 100%), to 4
	 * decimals by integer arithmetic */
	snprintf(num, sizeof(num), "%" PRIu64 ".%04" PRIu64,
	    (uint64_t)(kv_blocks > 0 && kv_used >= kv_blocks),
	    kv_blocks > 0 && kv_used < kv_blocks ?
	    kv_used * 10000u / kv_blocks : (uint64_t)0);
	if ((rc = render_family(b, "tokstream:kv_cache_usage_perc",
	    "Fraction of the prefix cache model's KV blocks in use, over all "
	    "responder processes (1 = 100%).", "gauge")) != TS_OK ||
	    (rc = put(b, "tokstream:kv_cache_usage_perc %s\n", num)) != TS_OK)
		return rc;
	if ((rc = render_family(b, "tokstream:responder_processes",
	    "Responder processes with metrics open and alive.", "gauge")) !=
	    TS_OK)
		return rc;
	return put(b, "tokstream:responder_processes %" PRIu64 "\n", live);
}

enum ts_err
metrics_render(const struct metrics *m, struct ts_buf *out)
{
	size_t start = out->len;
	enum ts_err rc;
	unsigned h;

	if (m == NULL)
		return TS_EINVAL;
	rc = render_gauges(out, m);
	if (rc == TS_OK)
		rc = render_counters(out, m);
	for (h = 0; rc == TS_OK && h < METRICS_HIST_COUNT; h++)
		rc = render_hist(out, m, (enum metrics_hist)h);
	if (rc != TS_OK && out->p != NULL) {
		out->len = start;       /* as it was */
		out->p[start] = '\0';
	}
	return rc;
}
