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

#define METRICS_LINE_MAX 1024u     /* longest rendered line, bytes */
#define METRICS_MODEL_MAX 256u     /* longest model_name, bytes */

/* Histogram names (after "PREFIX:") and help texts, in enum metrics_hist
 * order (the bounds are the file's: metrics_hist_bounds). */
static const struct metrics_hist_desc {
	const char *name;
	const char *help;
} hist_desc[METRICS_HIST_COUNT] = {
	[METRICS_TTFT] = { "time_to_first_token_seconds",
	    "Time from a request's arrival to its first token, in seconds." },
	[METRICS_ITL] = { "inter_token_latency_seconds",
	    "Time between two consecutive tokens of a stream, in seconds." },
	[METRICS_E2E] = { "e2e_request_latency_seconds",
	    "Time from a request's arrival to the end of its response, "
	    "in seconds." },
	[METRICS_QUEUE] = { "request_queue_time_seconds",
	    "Time a request waited for a decode slot, in seconds." },
}, req_desc[METRICS_REQ_HIST_COUNT] = {
	/* vLLM's names and meanings (vllm/v1/metrics/loggers.py) */
	[METRICS_REQ_PREFILL] = { "request_prefill_time_seconds",
	    "Time from a request's slot to its first token, in seconds." },
	[METRICS_REQ_DECODE] = { "request_decode_time_seconds",
	    "Time from a request's first token to its last, in seconds." },
	[METRICS_REQ_INFERENCE] = { "request_inference_time_seconds",
	    "Time from a request's slot to its last token, in seconds." },
	[METRICS_REQ_TPOT] = { "request_time_per_output_token_seconds",
	    "A request's decode time over its tokens after the first "
	    "(TPOT), in seconds; 0 for one token or none." },
	[METRICS_REQ_PROMPT_TOKENS] = { "request_prompt_tokens",
	    "Prompt tokens of each finished request." },
	[METRICS_REQ_GENERATION_TOKENS] = { "request_generation_tokens",
	    "Tokens generated for each finished request." },
	[METRICS_REQ_MAX_GENERATION_TOKENS] = {
	    "request_max_num_generation_tokens",
	    "Tokens generated for each finished sequence (each choice is "
	    "one)." },
};

/* Counters in enum order (names after "PREFIX:"); consecutive entries of
 * one family share its HELP and TYPE lines. */
static const struct metrics_counter_desc {
	const char *family;
	const char *help;
	const char *labels;         /* a="b" (without braces), or "" */
} counter_desc[METRICS_COUNTER_COUNT] = {
	[METRICS_GENERATION_TOKENS] = { "generation_tokens_total",
	    "Tokens generated.", "" },
	[METRICS_PROMPT_TOKENS] = { "prompt_tokens_total",
	    "Prompt tokens of the requests admitted.", "" },
	[METRICS_WASTED_TOKENS] = { "wasted_tokens_total",
	    "Tokens generated that no client received.", "" },
	[METRICS_REJECTED_QUEUE_FULL] = {
	    "requests_rejected_total",
	    "Requests refused before generation, by reason "
	    "(queue_full: answered 429).", "reason=\"queue_full\"" },
	[METRICS_PREFIX_QUERIES] = { "prefix_cache_queries_total",
	    "Prompt tokens looked up in the prefix cache (vLLM's "
	    "prefix_cache_queries).", "" },
	[METRICS_PREFIX_HITS] = { "prefix_cache_hits_total",
	    "Prompt tokens found in the prefix cache (vLLM's "
	    "prefix_cache_hits).", "" },
#define INJECTED(k, name) [METRICS_INJECTED + (k) - 1] = { \
	    "injected_failures_total", "Failures injected, by " \
	    "type (--failure-injection-rate, X-Tokstream-Failure).", \
	    "type=\"" name "\"" }
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

/* One render: where it goes and how names and labels are written. */
struct render {
	struct ts_buf *b;
	const char *prefix;
	char model[2 * METRICS_MODEL_MAX + 16]; /* model_name="..." or "" */
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
 * One sample line: PREFIX:name+suffix, the labels (the model's first,
 * then `labels`, "" for none) and the value.
 */
static enum ts_err
sample(struct render *r, const char *name, const char *suffix,
    const char *labels, const char *value)
{
	int m = r->model[0] != '\0', l = labels[0] != '\0';

	return put(r->b, "%s:%s%s%s%s%s%s%s %s\n", r->prefix, name, suffix,
	    m || l ? "{" : "", r->model, m && l ? "," : "", labels,
	    m || l ? "}" : "", value);
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
render_family(struct render *r, const char *name, const char *help,
    const char *type)
{
	enum ts_err rc = put(r->b, "# HELP %s:%s %s\n", r->prefix, name,
	    help);

	return rc != TS_OK ? rc : put(r->b, "# TYPE %s:%s %s\n", r->prefix,
	    name, type);
}

/*
 * One histogram from a snapshot of its words w: cumulative buckets
 * (saturating, so a damaged file still renders non-decreasing counts),
 * then _sum and _count, which is the +Inf bucket by construction. A
 * token histogram's bounds and sum are counts ("5.0", "1234.0").
 */
static enum ts_err
render_hist(struct render *r, const struct metrics_hist_desc *d,
    const struct metrics_bounds *bd, const _Atomic uint64_t *w)
{
	uint64_t cum = 0, sum;
	char num[48], le[64];
	enum ts_err rc;
	unsigned i;

	if ((rc = render_family(r, d->name, d->help, "histogram")) != TS_OK)
		return rc;
	for (i = 0; i <= bd->n; i++) {
		cum = add_sat(cum, atomic_load_explicit(&w[i],
		    memory_order_relaxed));
		if (i == bd->n)
			snprintf(num, sizeof(num), "+Inf");
		else if (bd->tokens)
			snprintf(num, sizeof(num), "%" PRIu64 ".0",
			    bd->ns[i]);
		else
			fmt_seconds(num, sizeof(num), bd->ns[i], 1000000000u,
			    9);
		snprintf(le, sizeof(le), "le=\"%s\"", num);
		snprintf(num, sizeof(num), "%" PRIu64, cum);
		if ((rc = sample(r, d->name, "_bucket", le, num)) != TS_OK)
			return rc;
	}
	sum = atomic_load_explicit(&w[METRICS_SUM_WORD],
	    memory_order_relaxed);
	if (bd->tokens)
		snprintf(num, sizeof(num), "%" PRIu64 ".0", sum);
	else
		fmt_seconds(num, sizeof(num), sum, 1000000u, 6);
	if ((rc = sample(r, d->name, "_sum", "", num)) != TS_OK)
		return rc;
	snprintf(num, sizeof(num), "%" PRIu64, cum);
	return sample(r, d->name, "_count", "", num);
}

static enum ts_err
render_counters(struct render *r, const struct metrics *m)
{
	const struct metrics_counter_desc *d;
	char num[32], lbl[48];
	enum ts_err rc;
	unsigned i;

	for (i = 0; i < METRICS_COUNTER_COUNT; i++) {
		d = &counter_desc[i];
		if ((i == 0 ||
		    strcmp(counter_desc[i - 1].family, d->family) != 0) &&
		    (rc = render_family(r, d->family, d->help, "counter")) !=
		    TS_OK)
			return rc;
		snprintf(num, sizeof(num), "%" PRIu64,
		    atomic_load_explicit(&m->f->counter[i],
		    memory_order_relaxed));
		if ((rc = sample(r, d->family, "", d->labels, num)) != TS_OK)
			return rc;
	}
	if ((rc = render_family(r, "request_success_total",
	    "Requests finished, by finish reason (abort: the client went "
	    "away; error: an injected or failed generation).", "counter")) !=
	    TS_OK)
		return rc;
	for (i = 0; i < METRICS_REASON_COUNT; i++) {
		snprintf(lbl, sizeof(lbl), "finished_reason=\"%s\"",
		    reason_name[i]);
		snprintf(num, sizeof(num), "%" PRIu64,
		    atomic_load_explicit(&m->f->reason[i],
		    memory_order_relaxed));
		if ((rc = sample(r, "request_success_total", "", lbl, num)) !=
		    TS_OK)
			return rc;
	}
	return TS_OK;
}

/* The gauges, summed over the slots of live processes (wrapping). */
static enum ts_err
render_gauges(struct render *r, const struct metrics *m)
{
	uint64_t sum[METRICS_GAUGE_COUNT], live, kv_used, kv_blocks;
	char num[48];
	enum ts_err rc;

	metrics_slot_sums(m, sum, &live);
	kv_used = sum[METRICS_KV_USED];
	kv_blocks = sum[METRICS_KV_BLOCKS];
	snprintf(num, sizeof(num), "%" PRId64, (int64_t)sum[METRICS_RUNNING]);
	if ((rc = render_family(r, "num_requests_running",
	    "Requests in a slot (prefill or decode), over all responder "
	    "processes.",
	    "gauge")) != TS_OK ||
	    (rc = sample(r, "num_requests_running", "", "", num)) != TS_OK)
		return rc;
	snprintf(num, sizeof(num), "%" PRId64, (int64_t)sum[METRICS_WAITING]);
	if ((rc = render_family(r, "num_requests_waiting",
	    "Requests waiting for a decode slot, over all responder "
	    "processes.", "gauge")) != TS_OK ||
	    (rc = sample(r, "num_requests_waiting", "", "", num)) != TS_OK)
		return rc;
	/* a fraction, as vLLM's kv_cache_usage_perc (1 = 100%), to 4
	 * decimals by integer arithmetic */
	snprintf(num, sizeof(num), "%" PRIu64 ".%04" PRIu64,
	    (uint64_t)(kv_blocks > 0 && kv_used >= kv_blocks),
	    kv_blocks > 0 && kv_used < kv_blocks ?
	    kv_used * 10000u / kv_blocks : (uint64_t)0);
	if ((rc = render_family(r, "kv_cache_usage_perc",
	    "Fraction of the prefix cache model's KV blocks in use, over all "
	    "responder processes (1 = 100%).", "gauge")) != TS_OK ||
	    (rc = sample(r, "kv_cache_usage_perc", "", "", num)) != TS_OK)
		return rc;
	if ((rc = render_family(r, "responder_processes",
	    "Responder processes with metrics open and alive.", "gauge")) !=
	    TS_OK)
		return rc;
	snprintf(num, sizeof(num), "%" PRIu64, live);
	return sample(r, "responder_processes", "", "", num);
}

void
metrics_dialect_of(struct metrics_dialect *d, const char *prefix,
    const char *model_name)
{
	int vllm = prefix != NULL && strcmp(prefix, "vllm") == 0;

	d->prefix = vllm ? "vllm" : "tokstream";
	d->model_name = model_name;     /* both dialects, as vLLM's */
	d->request_hists = vllm;
}

size_t
metrics_label(char *dst, size_t cap, const char *label, const char *value)
{
	size_t i, n, len = strlen(value);

	if (len > METRICS_MODEL_MAX || cap < strlen(label) + 2 * len + 4) {
		if (cap > 0)
			dst[0] = '\0';
		return 0;
	}
	n = (size_t)snprintf(dst, cap, "%s=\"", label);
	for (i = 0; i < len; i++) {
		if (value[i] == '\\' || value[i] == '"' || value[i] == '\n') {
			dst[n++] = '\\';
			dst[n++] = value[i] == '\n' ? 'n' : value[i];
		} else {
			dst[n++] = value[i];
		}
	}
	dst[n++] = '"';
	dst[n] = '\0';
	return n;
}

/* model_name="NAME" into r->model ("" without a name). */
static enum ts_err
model_label(struct render *r, const char *name)
{
	r->model[0] = '\0';
	if (name == NULL)
		return TS_OK;
	return metrics_label(r->model, sizeof(r->model), "model_name",
	    name) > 0 ? TS_OK : TS_EINVAL;
}

enum ts_err
metrics_render_dialect(const struct metrics *m,
    const struct metrics_dialect *d, struct ts_buf *out)
{
	struct render r;
	size_t start = out->len;
	enum ts_err rc;
	unsigned h;

	if (m == NULL || d == NULL)
		return TS_EINVAL;
	r.b = out;
	r.prefix = d->prefix;
	if (model_label(&r, d->model_name) != TS_OK)
		return TS_EINVAL;
	rc = render_gauges(&r, m);
	if (rc == TS_OK)
		rc = render_counters(&r, m);
	for (h = 0; rc == TS_OK && h < METRICS_HIST_COUNT; h++)
		rc = render_hist(&r, &hist_desc[h], &metrics_hist_bounds[h],
		    m->f->hist[h]);
	for (h = 0; rc == TS_OK && d->request_hists &&
	    h < METRICS_REQ_HIST_COUNT; h++)
		rc = render_hist(&r, &req_desc[h], &metrics_req_bounds[h],
		    m->f->req_hist[h]);
	if (rc != TS_OK && out->p != NULL) {
		out->len = start;       /* as it was */
		out->p[start] = '\0';
	}
	return rc;
}

enum ts_err
metrics_render(const struct metrics *m, struct ts_buf *out)
{
	struct metrics_dialect d;

	metrics_dialect_of(&d, "tokstream", NULL);
	return metrics_render_dialect(m, &d, out);
}
