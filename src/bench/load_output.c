/*
 * load_output.c - the text and JSON report of a load run
 * (load_output.h).
 */
#include "bench/load_output.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/client.h"
#include "bench/msg.h"
#include "bench/stats.h"

/* One "label: value" line of the text report, vLLM's {:<40} {:<10}. */
static void
load_output_f(FILE *f, const char *label, double v)
{
	fprintf(f, "%-40s %.2f\n", label, v);
}

static void
load_output_u(FILE *f, const char *label, uint64_t v)
{
	fprintf(f, "%-40s %" PRIu64 "\n", label, v);
}

/* A centred title padded with `c` to 50 columns, as vLLM prints them. */
static void
load_output_title(FILE *f, const char *title, char c)
{
	size_t n = strlen(title), left, right, i;

	left = n < 50 ? (50 - n) / 2 : 0;
	right = n < 50 ? 50 - n - left : 0;
	for (i = 0; i < left; i++)
		fputc(c, f);
	fputs(title, f);
	for (i = 0; i < right; i++)
		fputc(c, f);
	fputc('\n', f);
}

/* The statistics of a metric, in the order of the JSON report; `text`
 * names those the text report shows (NULL: JSON only). */
static const struct {
	const char *json, *text;
	size_t off;             /* of the double in struct load_metric */
} load_output_stats[] = {
	{"mean", "Mean", offsetof(struct load_metric, mean)},
	{"median", "Median", offsetof(struct load_metric, median)},
	{"std", NULL, offsetof(struct load_metric, std)},
	{"p90", "P90", offsetof(struct load_metric, p90)},
	{"p99", "P99", offsetof(struct load_metric, p99)},
	{"min", NULL, offsetof(struct load_metric, min)},
	{"max", NULL, offsetof(struct load_metric, max)},
};

#define LOAD_OUTPUT_NSTATS \
	(sizeof(load_output_stats) / sizeof(load_output_stats[0]))

/* Statistic i of load_output_stats[] of m. */
static double
load_output_stat(const struct load_metric *m, size_t i)
{
	double v;

	memcpy(&v, (const char *)m + load_output_stats[i].off, sizeof(v));
	return v;
}

static void load_output_metric(FILE *f, const char *title,
    const char *abbr, const struct load_metric *m);

/* A percentile as vLLM names it: "99", "99.9" (str(int(p)) when p is
 * whole, else str(p)). */
static void
load_output_pword(char *buf, size_t n, double p)
{
	if (p == (double)(long)p)
		snprintf(buf, n, "%ld", (long)p);
	else
		snprintf(buf, n, "%.10g", p);
}

/* The block of a metric with --metric-percentiles: mean, median and each
 * percentile asked for, over the samples s (vLLM's process_one_metric). */
static void
load_output_metric_pcts(FILE *f, const struct load_opts *o,
    const char *title, const char *abbr, const struct load_metric *m,
    const struct load_samples *s)
{
	char label[64], pw[32];
	double v;
	size_t i;

	load_output_title(f, title, '-');
	for (i = 0; i < 2; i++) {
		snprintf(label, sizeof(label), "%s %s (ms):", i ? "Median" :
		    "Mean", abbr);
		if (m->n > 0)
			load_output_f(f, label, i ? m->median : m->mean);
		else
			fprintf(f, "%-40s n/a\n", label);
	}
	for (i = 0; i < o->npcts; i++) {
		load_output_pword(pw, sizeof(pw), o->pcts[i]);
		snprintf(label, sizeof(label), "P%s %s (ms):", pw, abbr);
		if (stats_percentile(s->v, s->n, o->pcts[i], &v) == TS_OK)
			load_output_f(f, label, v);
		else
			fprintf(f, "%-40s n/a\n", label);
	}
}

/* The block of one metric: mean, median, p90, p99 (n/a without data);
 * with --metric-percentiles those asked for instead, and with
 * --percentile-metrics only for the metrics named (`bit`; 0: a metric
 * tokbench adds, always shown). */
static void
load_output_metric_sel(FILE *f, const struct load_run *run, unsigned bit,
    const char *title, const char *abbr, const struct load_metric *m,
    const struct load_samples *s)
{
	const struct load_opts *o = run->o;

	if (o->npcts == 0) {
		load_output_metric(f, title, abbr, m);
		return;
	}
	if (bit != 0 && (o->pct_metrics & bit) == 0)
		return;
	load_output_metric_pcts(f, o, title, abbr, m, s);
}

/* The block of one metric: mean, median, p90, p99 (n/a without data). */
static void
load_output_metric(FILE *f, const char *title, const char *abbr,
    const struct load_metric *m)
{
	char label[64];
	size_t i;

	load_output_title(f, title, '-');
	for (i = 0; i < LOAD_OUTPUT_NSTATS; i++) {
		if (load_output_stats[i].text == NULL)
			continue;
		snprintf(label, sizeof(label), "%s %s (ms):",
		    load_output_stats[i].text, abbr);
		if (m->n > 0)
			load_output_f(f, label, load_output_stat(m, i));
		else
			fprintf(f, "%-40s n/a\n", label);
	}
}

/* True when the run asked for reasoning or saw some: then the text
 * report has its lines. */
static int
load_output_reasoning(const struct load_opts *o, const struct load_report *r)
{
	return o->thinking_budget > 0 || o->reasoning_effort != NULL ||
	    o->think || r->ttfr.n > 0;
}

void
load_output_text(FILE *f, const struct load_run *run,
    const struct load_report *r)
{
	const struct load_opts *o = run->o;
	const struct load_traffic *t = &o->traffic;
	char buf[128];
	size_t i;

	load_output_title(f, " Serving Benchmark Result ", '=');
	if (t->ramp != LOAD_RAMP_NONE || (t->rate > 0 &&
	    t->burstiness != 1.0)) {
		if (t->ramp != LOAD_RAMP_NONE)
			snprintf(buf, sizeof(buf), "open loop, %s ramp-up "
			    "%g to %g req/s", t->ramp == LOAD_RAMP_LINEAR ?
			    "linear" : "exponential", t->ramp_start,
			    t->ramp_end);
		else
			snprintf(buf, sizeof(buf), "open loop, gamma %g req/s",
			    t->rate);
		fprintf(f, "%-40s %s\n", "Traffic:", buf);
		/* vllm bench serve's line */
		snprintf(buf, sizeof(buf), "%g (%s)", t->burstiness,
		    t->burstiness == 1.0 ? "Poisson process" :
		    "Gamma distribution");
		fprintf(f, "%-40s %s\n", "Burstiness factor:", buf);
		if (t->max_concurrency > 0)
			load_output_u(f, "Maximum request concurrency:",
			    (uint64_t)t->max_concurrency);
	} else if (t->rate > 0) {
		snprintf(buf, sizeof(buf), "open loop, Poisson %g req/s",
		    t->rate);
		fprintf(f, "%-40s %s\n", "Traffic:", buf);
		if (t->max_concurrency > 0)
			load_output_u(f, "Maximum request concurrency:",
			    (uint64_t)t->max_concurrency);
	} else {
		snprintf(buf, sizeof(buf), "closed loop, concurrency %ld",
		    t->concurrency);
		fprintf(f, "%-40s %s\n", "Traffic:", buf);
	}
	load_output_u(f, "Successful requests:", r->completed);
	if (t->abandon.fraction > 0) {
		snprintf(buf, sizeof(buf), "Abandoned requests (after %ld "
		    "tok, %s):", t->abandon.after_tokens,
		    o->abandon_rst ? "RST" : "FIN");
		load_output_u(f, buf, r->abandoned);
	}
	load_output_u(f, "Failed requests:", r->failed);
	if (run->not_started > 0)
		load_output_u(f, "Arrivals not started:", run->not_started);
	load_output_f(f, "Benchmark duration (s):", r->duration_s);
	load_output_f(f, "Client CPU time (s):", run->client_cpu_s);
	load_output_f(f, "Client start backlog (ms):", run->start_backlog_ms);
	load_output_u(f, "Total input tokens:", r->prompt_tokens);
	load_output_u(f, "Total generated tokens:", r->output_tokens);
	if (o->endpoint != LOAD_EP_STREAM)
		/* the cross-check of the usage chunks' counts */
		load_output_u(f, "Total content deltas:", run->acc.deltas);
	load_output_f(f, "Request throughput (req/s):",
	    r->request_throughput);
	if (load_slo_any(&o->slo))
		load_output_f(f, "Request goodput (req/s):",
		    r->request_goodput);
	load_output_f(f, "Output token throughput (tok/s):",
	    r->output_throughput);
	load_output_f(f, "Total Token throughput (tok/s):",
	    r->total_token_throughput);
	load_output_u(f, "Peak concurrent requests:", run->max_in_flight);
	if (load_output_reasoning(o, r))
		load_output_u(f, "Total reasoning deltas:", r->reasoning_events);
	load_output_metric_sel(f, run, LOAD_PM_TTFT, "Time to First Token",
	    "TTFT", &r->ttft, &run->acc.ttft);
	if (load_output_reasoning(o, r))
		/* only when there is reasoning: the other reports stay as
		 * vllm bench serve prints them */
		load_output_metric_sel(f, run, 0,
		    "Time to First Reasoning Token", "TTFR", &r->ttfr,
		    &run->acc.ttfr);
	load_output_metric_sel(f, run, LOAD_PM_TPOT,
	    "Time per Output Token (excl. 1st token)", "TPOT", &r->tpot,
	    &run->acc.tpot);
	load_output_metric_sel(f, run, LOAD_PM_ITL, "Inter-token Latency",
	    "ITL", &r->itl, &run->acc.itl);
	load_output_metric_sel(f, run, 0, "First ITL (token 1 to 2)", "ITL1",
	    &r->itl1, &run->acc.itl1);
	load_output_metric_sel(f, run, LOAD_PM_E2EL, "End-to-end Latency",
	    "E2EL", &r->e2el, &run->acc.e2el);
	if (r->failed > 0) {
		load_output_title(f, "Failures", '-');
		for (i = 0; i < LOAD_FAIL_COUNT; i++)
			if (run->acc.fail[i] > 0)
				fprintf(f, "%-40s %zu  (%s)\n",
				    load_fail_name((enum load_fail)i),
				    run->acc.fail[i],
				    run->fail_example[i] != NULL ?
				    run->fail_example[i] : "");
	}
	load_output_title(f, "", '=');
}

/* Adds mean_/median_/std_/p90_/p99_/min_/max_<name>_ms and
 * count_<name> to j; null values when there are no samples. */
static void
load_output_json_metric(json_t *j, const char *name,
    const struct load_metric *m)
{
	char key[64];
	size_t i;

	for (i = 0; i < LOAD_OUTPUT_NSTATS; i++) {
		snprintf(key, sizeof(key), "%s_%s_ms",
		    load_output_stats[i].json, name);
		json_object_set_new(j, key, m->n > 0 ?
		    json_real(load_output_stat(m, i)) : json_null());
	}
	snprintf(key, sizeof(key), "count_%s", name);
	json_object_set_new(j, key, json_integer((json_int_t)m->n));
}

/* A real, or null for "not set" (negative). */
static json_t *
load_output_opt(double v)
{
	return v >= 0 ? json_real(v) : json_null();
}

/* The workload's part of "settings": the dataset and the arrivals. */
static void
load_output_settings_workload(json_t *set, const struct load_opts *o)
{
	static const char *const ds[] = {"random", "repeat", "sharegpt",
	    "jsonl"};
	static const char *const ramp[] = {NULL, "linear", "exponential"};
	const struct load_traffic *t = &o->traffic;
	json_t *a;
	size_t i;

	json_object_set_new(set, "dataset", json_string(ds[o->dataset]));
	json_object_set_new(set, "dataset_path", o->dataset_path ?
	    json_string(o->dataset_path) : json_null());
	json_object_set_new(set, "random_prefix_len",
	    json_integer(o->random_prefix_len));
	json_object_set_new(set, "warmup", json_integer(o->warmup));
	json_object_set_new(set, "burstiness", json_real(t->burstiness));
	json_object_set_new(set, "ramp_up_strategy", t->ramp ?
	    json_string(ramp[t->ramp]) : json_null());
	json_object_set_new(set, "ramp_up_start_rps", t->ramp ?
	    json_real(t->ramp_start) : json_null());
	json_object_set_new(set, "ramp_up_end_rps", t->ramp ?
	    json_real(t->ramp_end) : json_null());
	a = json_array();
	for (i = 0; i < o->npcts; i++)
		json_array_append_new(a, json_real(o->pcts[i]));
	json_object_set_new(set, "metric_percentiles", a);
	json_object_set_new(set, "save_detailed",
	    json_boolean(o->save_detailed));
}

/* The "settings" object: the command line, as the run understood it. */
static json_t *
load_output_settings(const struct load_opts *o)
{
	const struct load_traffic *t = &o->traffic;
	char seed[32];
	json_t *slo, *set;

	/* a 64-bit seed may not fit json_int_t: a decimal string is exact */
	snprintf(seed, sizeof(seed), "%" PRIu64, t->seed);
	slo = json_pack("{s:o,s:o,s:o}",
	    "ttft", load_output_opt(o->slo.ttft_ms),
	    "tpot", load_output_opt(o->slo.tpot_ms),
	    "e2el", load_output_opt(o->slo.e2el_ms));
	set = json_pack("{s:s,s:s,s:I,s:f,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:s,"
	    "s:f,s:I,s:b,s:f,s:o,s:o,s:o}",
	    "url", o->url,
	    "traffic", t->rate > 0 ? "open" : "closed",
	    "concurrency", (json_int_t)t->concurrency,
	    "request_rate", t->rate,
	    "max_concurrency", (json_int_t)t->max_concurrency,
	    "requests", (json_int_t)t->requests,
	    "duration_s", t->duration_s,
	    "prompt_tokens_min", (json_int_t)t->prompt.min,
	    "prompt_tokens_max", (json_int_t)t->prompt.max,
	    "output_tokens_min", (json_int_t)t->output.min,
	    "output_tokens_max", (json_int_t)t->output.max,
	    "seed", seed,
	    "abandon_fraction", t->abandon.fraction,
	    "abandon_after_tokens", (json_int_t)t->abandon.after_tokens,
	    "abandon_rst", o->abandon_rst,
	    "timeout_s", o->timeout_s,
	    "tpot_ms", o->tpot_ms >= 0 ? json_integer(o->tpot_ms) :
	    json_null(),
	    "prefill_ms", o->prefill_ms >= 0 ? json_integer(o->prefill_ms) :
	    json_null(),
	    "goodput_slo_ms", slo);
	if (set == NULL)
		return json_null();
	json_object_set_new(set, "thinking_budget", o->thinking_budget > 0 ?
	    json_integer(o->thinking_budget) : json_null());
	json_object_set_new(set, "reasoning_effort", o->reasoning_effort ?
	    json_string(o->reasoning_effort) : json_null());
	json_object_set_new(set, "think", json_boolean(o->think));
	load_output_settings_workload(set, o);
	return set;
}

/* Adds an integer count to j. */
static void
load_output_count(json_t *j, const char *key, uint64_t v)
{
	json_object_set_new(j, key, json_integer((json_int_t)v));
}

/* --metric-percentiles: p<P>_<metric>_ms of each metric named by
 * --percentile-metrics (vLLM's keys; null without samples). */
static void
load_output_json_pcts(json_t *j, const struct load_run *run)
{
	static const struct {
		unsigned bit;
		const char *name;
		size_t off;
	} m[] = {
		{LOAD_PM_TTFT, "ttft", offsetof(struct load_acc, ttft)},
		{LOAD_PM_TPOT, "tpot", offsetof(struct load_acc, tpot)},
		{LOAD_PM_ITL, "itl", offsetof(struct load_acc, itl)},
		{LOAD_PM_E2EL, "e2el", offsetof(struct load_acc, e2el)},
	};
	const struct load_opts *o = run->o;
	const struct load_samples *s;
	char key[64], pw[32];
	double v;
	size_t i, k;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		if ((o->pct_metrics & m[i].bit) == 0)
			continue;
		s = (const struct load_samples *)(const void *)
		    ((const char *)&run->acc + m[i].off);
		for (k = 0; k < o->npcts; k++) {
			load_output_pword(pw, sizeof(pw), o->pcts[k]);
			snprintf(key, sizeof(key), "p%s_%s_ms", pw, m[i].name);
			json_object_set_new(j, key, stats_percentile(s->v, s->n,
			    o->pcts[k], &v) == TS_OK ? json_real(v) :
			    json_null());
		}
	}
}

/* --save-detailed: vLLM's per-request arrays (vllm/benchmarks/serve.py,
 * the result of benchmark(); kept only with --save-detailed there too),
 * in the order of the requests' starts: input_lens, output_lens, ttfts
 * and itls in seconds, errors ("" for a completed request). */
static void
load_output_json_detailed(json_t *j, const struct load_run *run)
{
	json_t *in = json_array(), *out = json_array(), *ttft = json_array();
	json_t *itls = json_array(), *err = json_array(), *a;
	const struct load_detail *d;
	size_t i, k;

	for (i = 0; i < run->ndetail; i++) {
		d = &run->detail[i];
		json_array_append_new(in, json_integer(d->input_len));
		json_array_append_new(out, json_integer(d->output_len));
		json_array_append_new(ttft, json_real(d->ttft_s));
		a = json_array();
		for (k = 0; k < d->nitl; k++)
			json_array_append_new(a, json_real(d->itl_s[k]));
		json_array_append_new(itls, a);
		a = json_string(d->set ? d->error : "not started");
		json_array_append_new(err, a != NULL ? a :
		    json_string("(an error that is not UTF-8)"));
	}
	json_object_set_new(j, "input_lens", in);
	json_object_set_new(j, "output_lens", out);
	json_object_set_new(j, "ttfts", ttft);
	json_object_set_new(j, "itls", itls);
	json_object_set_new(j, "errors", err);
}

json_t *
load_output_json(const struct load_run *run, const struct load_report *r)
{
	const struct load_opts *o = run->o;
	json_t *j = json_object(), *fails = json_object(), *ex;
	size_t i;

	ex = json_object();
	for (i = 0; i < LOAD_FAIL_COUNT; i++) {
		json_object_set_new(fails, load_fail_name((enum load_fail)i),
		    json_integer((json_int_t)run->acc.fail[i]));
		if (run->fail_example[i] != NULL)
			json_object_set_new(ex,
			    load_fail_name((enum load_fail)i),
			    json_string(run->fail_example[i]));
	}
	json_object_set_new(j, "tokbench_version",
	    json_string(client_version()));
	json_object_set_new(j, "percentile_method",
	    json_string(STATS_PERCENTILE_METHOD));
	json_object_set_new(j, "duration", json_real(r->duration_s));
	json_object_set_new(j, "client_cpu_s", json_real(run->client_cpu_s));
	json_object_set_new(j, "start_backlog_ms",
	    json_real(run->start_backlog_ms));
	load_output_count(j, "started", run->started);
	load_output_count(j, "completed", r->completed);
	load_output_count(j, "abandoned", r->abandoned);
	load_output_count(j, "failed", r->failed);
	load_output_count(j, "not_started", run->not_started);
	json_object_set_new(j, "failures", fails);
	json_object_set_new(j, "failure_examples", ex);
	json_object_set_new(j, "abandoned_ids",
	    json_incref(run->abandoned_ids));
	load_output_count(j, "abandoned_without_id", run->abandoned_no_id);
	load_output_count(j, "abandoned_output_tokens",
	    run->acc.abandoned_tokens);
	load_output_count(j, "total_input_tokens", r->prompt_tokens);
	load_output_count(j, "total_output_tokens", r->output_tokens);
	load_output_count(j, "total_token_events", run->acc.deltas);
	load_output_count(j, "total_reasoning_events", r->reasoning_events);
	json_object_set_new(j, "endpoint",
	    json_string(load_endpoint_path(o->endpoint)));
	load_output_count(j, "good_requests", r->good);
	json_object_set_new(j, "request_throughput",
	    json_real(r->request_throughput));
	json_object_set_new(j, "request_goodput", load_slo_any(&o->slo) ?
	    json_real(r->request_goodput) : json_null());
	json_object_set_new(j, "output_throughput",
	    json_real(r->output_throughput));
	json_object_set_new(j, "total_token_throughput",
	    json_real(r->total_token_throughput));
	load_output_count(j, "max_concurrent_requests", run->max_in_flight);
	load_output_json_metric(j, "ttft", &r->ttft);
	load_output_json_metric(j, "tpot", &r->tpot);
	load_output_json_metric(j, "itl", &r->itl);
	load_output_json_metric(j, "e2el", &r->e2el);
	load_output_json_metric(j, "itl1", &r->itl1);
	load_output_json_metric(j, "ttfr", &r->ttfr);
	json_object_set_new(j, "settings", load_output_settings(o));
	load_output_count(j, "warmup_completed", run->warmup_completed);
	load_output_count(j, "warmup_failed", run->warmup_failed);
	if (o->dataset_path != NULL) {
		load_output_count(j, "dataset_entries", run->dataset_entries);
		load_output_count(j, "dataset_skipped", run->dataset_skipped);
	}
	load_output_json_pcts(j, run);
	if (o->save_detailed)
		load_output_json_detailed(j, run);
	return j;
}

enum ts_err
load_output_write_json(const char *path, json_t *j)
{
	char *txt = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));
	enum ts_err rc = TS_ESYS;
	FILE *f = NULL;
	int saved;

	if (txt == NULL) {
		msg_err("cannot encode the JSON report");
		return TS_ESYS;
	}
	if (strcmp(path, "-") == 0) {
		puts(txt);
		rc = fflush(stdout) == 0 ? TS_OK : TS_ESYS;
		if (rc != TS_OK)
			msg_err("cannot write the JSON report: %s",
			    strerror(errno));
		free(txt);
		return rc;
	}
	if ((f = fopen(path, "w")) == NULL ||
	    fputs(txt, f) == EOF || fputc('\n', f) == EOF) {
		saved = errno;
		msg_err("cannot write %s: %s", path, strerror(saved));
		goto out;
	}
	if (fclose(f) != 0) {
		f = NULL;
		saved = errno;
		msg_err("cannot write %s: %s", path, strerror(saved));
		goto out;
	}
	f = NULL;
	rc = TS_OK;
out:
	if (f != NULL)
		fclose(f);
	free(txt);
	return rc;
}
