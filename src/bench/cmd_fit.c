/*
 * cmd_fit.c - `tokbench fit TRACE... [-o FILE]`: a latency profile
 * (version 1, the format `tokstream-fcgi --latency-profile` loads; see
 * docs/TOKBENCH.md "fit") fitted from traces `tokbench record` wrote.
 * Reads each trace whole (trace_load, bounded by --max-bytes), hands its
 * requests to the fit (fit.h), writes the profile JSON to stdout or FILE
 * and a summary on stderr. Its "fit" object says what was observed, what
 * was left out, R^2, the coefficients' standard errors and which terms
 * were kept and why.
 *
 * Exit status: 0 a profile written; 1 a trace refused or the data cannot
 * give a profile (one line on stderr says why); 2 a bad command line.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/cmd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/fit.h"
#include "bench/msg.h"
#include "trace/trace.h"

/* The default bound of one trace file (--max-bytes). */
#define CMD_FIT_MAX_BYTES (512L << 20)
#define CMD_FIT_MAX_TRACES 64
#define CMD_FIT_NAME_MAX 95     /* the server's bound of a profile's name
				 * (ENGINE_PROFILE_NAME_MAX - 1) */

enum { CMD_FIT_NAME = 256, CMD_FIT_MAXB, CMD_FIT_QUIET, CMD_FIT_OFFSET,
	CMD_FIT_NOISE };

static const struct option cmd_fit_longopts[] = {
	{"out", required_argument, NULL, 'o'},
	{"name", required_argument, NULL, CMD_FIT_NAME},
	{"max-bytes", required_argument, NULL, CMD_FIT_MAXB},
	{"quiet", no_argument, NULL, CMD_FIT_QUIET},
	{"ttft-offset-ms", required_argument, NULL, CMD_FIT_OFFSET},
	{"noise-ms", required_argument, NULL, CMD_FIT_NOISE},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0}
};

static const char cmd_fit_usage[] =
    "usage: tokbench fit TRACE... [-o FILE] [--name NAME]\n"
    "Fits a latency profile (prefill and decode step times, jitter) to "
    "traces\n"
    "that `tokbench record` wrote, for tokstream-fcgi "
    "--latency-profile FILE.\n"
    "Record at several concurrencies (1 included) with varied prompt "
    "lengths.\n"
    "  -o, --out FILE        write the profile there (default stdout)\n"
    "      --name NAME       the profile's name (default \"fit of "
    "TRACE...\")\n"
    "      --max-bytes N     refuse a trace file over N bytes (default "
    "512 MiB)\n"
    "      --ttft-offset-ms MS  the client's stack's share of every "
    "TTFT (request\n"
    "                        in, first token out), taken from them; a "
    "trace\n"
    "                        cannot tell it from the prefill's base "
    "(default 0)\n"
    "      --noise-ms P:D    the stack's own spread (std, ms) of a TTFT "
    "and of\n"
    "                        a gap, taken out of the jitter (default 0:0)"
    "\n"
    "                        (both measured on tokstream's simulator with "
    "a zero\n"
    "                        prefill and no jitter: scripts/bench-fit)\n"
    "      --quiet           no summary on stderr\n"
    "  -h, --help            this help\n"
    "Exit status: 0 ok, 1 a trace refused or too little data, 2 usage "
    "error.\n";

/* A number of ms in [0, 60000] at s (strtod syntax); *end past it.
 * TS_EINVAL when there is none. */
static enum ts_err
cmd_fit_ms(const char *s, char **end, double *out)
{
	double v;

	errno = 0;
	v = strtod(s, end);
	if (*end == s || errno != 0 || !(v >= 0 && v <= 60000))
		return TS_EINVAL;
	*out = v;
	return TS_OK;
}

/* The fit's view of one trace's requests, and the arrays it borrows. */
struct cmd_fit_trace {
	struct trace t;
	struct fit_req *reqs;
	int64_t *ev_us;
	uint32_t *ev_n;
	size_t no_prompt;       /* requests without prompt_tokens */
};

/* The fit's requests of ft->t. Returns TS_OK or TS_EINVAL (a count out
 * of range; one line printed). */
static enum ts_err
cmd_fit_reqs(struct cmd_fit_trace *ft, const char *path)
{
	size_t i, k, ne = 0, e = 0;

	for (i = 0; i < ft->t.nrequests; i++)
		ne += ft->t.requests[i].ntoken_events;
	ft->reqs = xcalloc(ft->t.nrequests ? ft->t.nrequests : 1,
	    sizeof(*ft->reqs));
	ft->ev_us = xmalloc((ne ? ne : 1) * sizeof(*ft->ev_us));
	ft->ev_n = xmalloc((ne ? ne : 1) * sizeof(*ft->ev_n));
	for (i = 0; i < ft->t.nrequests; i++) {
		const struct trace_request *q = &ft->t.requests[i];
		struct fit_req *r = &ft->reqs[i];
		long p = q->prompt_tokens, c = q->cached_tokens;

		if (p < 0) {
			ft->no_prompt++;
			p = 0;
		}
		if (c < 0 || c > p)
			c = c > p ? p : 0;
		if (p > UINT32_MAX / 2) {
			msg_err("%s: request %ld: prompt_tokens %ld is out "
			    "of range", path, q->i, p);
			return TS_EINVAL;
		}
		r->start_us = q->start_us;
		r->end_us = q->end_us;
		r->prompt_tokens = (uint32_t)p;
		r->uncached = (uint32_t)(p - c);
		r->ev_us = &ft->ev_us[e];
		r->ev_n = &ft->ev_n[e];
		r->nev = q->ntoken_events;
		for (k = 0; k < q->ntoken_events; k++, e++) {
			long n = q->token_events[k].n;

			ft->ev_us[e] = q->token_events[k].t_us;
			ft->ev_n[e] = n < 0 ? 0 : n > 1000000 ? 1000000 :
			    (uint32_t)n;
		}
	}
	return TS_OK;
}

/* {"1": v[0], "5": v[1], ...}: the percentiles' object. */
static json_t *
cmd_fit_pcts(const double *v)
{
	json_t *o = json_object();
	char key[16];
	int p;

	for (p = 0; p < FIT_NPCT; p++) {
		snprintf(key, sizeof(key), "%g", fit_pcts[p]);
		json_object_set_new(o, key, json_real(v[p]));
	}
	return o;
}

/* One regression's report: rows, outliers, R^2, RMS, the coefficients
 * that were estimated and their standard errors. */
static json_t *
cmd_fit_reg(const struct fit_reg *r, const char *const *names)
{
	json_t *o = json_object(), *coef = json_object(), *se = json_object();
	int j;

	for (j = 0; j < FIT_MAXK; j++) {
		if (names[j] == NULL || !r->kept[j])
			continue;
		json_object_set_new(coef, names[j], json_real(r->coef[j]));
		json_object_set_new(se, names[j], json_real(r->se[j]));
	}
	json_object_set_new(o, "rows", json_integer((json_int_t)r->nobs));
	json_object_set_new(o, "outliers_dropped",
	    json_integer((json_int_t)r->dropped));
	json_object_set_new(o, "r2", json_real(r->r2));
	json_object_set_new(o, "rms_ms", json_real(r->rms));
	json_object_set_new(o, "coef", coef);
	json_object_set_new(o, "se", se);
	return o;
}

/* The profile of res, with its "fit" object. */
static json_t *
cmd_fit_json(const struct fit_result *res, const struct fit_rows *rows,
    const char *name, char **paths, int npaths, size_t no_prompt)
{
	static const char *const step_names[FIT_MAXK] = {
		"base_ms", "per_seq_ms", "per_ctx_token_ms",
		"prefill_base_ms", "prefill_per_token_ms",
		"prefill_per_token2_ms"
	};
	static const char *const prefill_names[FIT_MAXK] = {
		"base_ms", NULL, NULL, NULL, "per_token_ms", "per_token2_ms"
	};
	json_t *o = json_object(), *pre = json_object(), *dec = json_object();
	json_t *jit = json_object(), *fit = json_object(), *obs;
	json_t *a;
	int i;
	size_t t;

	json_object_set_new(o, "tokstream_latency_profile", json_integer(1));
	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(pre, "base_ms", json_real(res->p0));
	json_object_set_new(pre, "per_token_ms", json_real(res->p1));
	json_object_set_new(pre, "per_token2_ms", json_real(res->p2));
	json_object_set_new(pre, "shares_step",
	    json_boolean(res->shares_step));
	json_object_set_new(o, "prefill", pre);
	json_object_set_new(dec, "base_ms", json_real(res->d0));
	json_object_set_new(dec, "per_seq_ms", json_real(res->d1));
	json_object_set_new(dec, "per_ctx_token_ms", json_real(res->d2));
	json_object_set_new(dec, "load_factor_max", json_integer(1));
	json_object_set_new(o, "decode", dec);
	if (res->has_jit_prefill)
		json_object_set_new(jit, "prefill_ms", json_pack("{s:o}",
		    "percentiles", cmd_fit_pcts(res->jit_prefill)));
	if (res->has_jit_decode)
		json_object_set_new(jit, "decode_ms", json_pack("{s:o}",
		    "percentiles", cmd_fit_pcts(res->jit_decode)));
	json_object_set_new(o, "jitter", jit);

	json_object_set_new(fit, "tool", json_string("tokbench fit"));
	a = json_array();
	for (i = 0; i < npaths; i++)
		json_array_append_new(a, json_string(paths[i]));
	json_object_set_new(fit, "traces", a);
	obs = json_object();
	json_object_set_new(obs, "requests",
	    json_integer((json_int_t)rows->requests));
	json_object_set_new(obs, "requests_without_prompt_tokens",
	    json_integer((json_int_t)no_prompt));
	json_object_set_new(obs, "token_events",
	    json_integer((json_int_t)rows->events));
	json_object_set_new(obs, "steps_seen",
	    json_integer((json_int_t)rows->steps));
	json_object_set_new(obs, "step_rows",
	    json_integer((json_int_t)rows->step_rows));
	json_object_set_new(obs, "lone_ttfts",
	    json_integer((json_int_t)rows->solo_rows));
	json_object_set_new(obs, "skipped_idle",
	    json_integer((json_int_t)rows->skipped_idle));
	json_object_set_new(obs, "skipped_gap",
	    json_integer((json_int_t)rows->skipped_gap));
	json_object_set_new(fit, "observations", obs);
	a = json_array();
	for (t = 0; t < (size_t)npaths && t < 8; t++)
		json_array_append_new(a, json_real(rows->tol_ms[t]));
	json_object_set_new(fit, "step_tolerance_ms", a);
	json_object_set_new(fit, "steps", cmd_fit_reg(&res->decode,
	    step_names));
	if (res->prefill.nobs > 0)
		json_object_set_new(fit, res->shares_step ?
		    "prefill_cross_check" : "prefill",
		    cmd_fit_reg(&res->prefill, prefill_names));
	json_object_set_new(fit, "shares_step_f", json_real(res->f_shares));
	json_object_set_new(fit, "joiner_ms", json_real(res->joiner_ms));
	json_object_set_new(fit, "per_token2_f", json_real(res->f_quad));
	json_object_set_new(fit, "jitter_std_ms", json_pack("{s:f,s:f}",
	    "prefill", res->jit_prefill_std, "decode", res->jit_decode_std));
	a = json_array();
	for (i = 0; i < res->nnotes; i++)
		json_array_append_new(a, json_string(res->notes[i]));
	json_object_set_new(fit, "notes", a);
	json_object_set_new(o, "fit", fit);
	return o;
}

/* The summary on stderr. */
static void
cmd_fit_summary(const struct fit_result *r, const struct fit_rows *rows)
{
	int i;

	fprintf(stderr, "tokbench fit: %zu requests, %zu steps observed "
	    "(%zu used, %zu idle, %zu skipped), %zu lone TTFTs\n",
	    rows->requests, rows->steps, rows->step_rows,
	    rows->skipped_idle, rows->skipped_gap, rows->solo_rows);
	fprintf(stderr, "  prefill: %.3f + %.5f u + %.3g u^2 ms, "
	    "shares_step %s\n", r->p0, r->p1, r->p2,
	    r->shares_step ? "true" : "false");
	fprintf(stderr, "  decode step: %.3f + %.4f n + %.6f C ms "
	    "(R^2 %.4f, RMS %.3f ms, %zu outliers)\n", r->d0, r->d1, r->d2,
	    r->decode.r2, r->decode.rms, r->decode.dropped);
	fprintf(stderr, "  jitter std: prefill %.3f ms, decode %.3f ms\n",
	    r->jit_prefill_std, r->jit_decode_std);
	for (i = 0; i < r->nnotes; i++)
		fprintf(stderr, "  note: %s\n", r->notes[i]);
}

/* "fit of a.trace, b.trace" (base names), cut to the name's bound. */
static void
cmd_fit_name(char *name, size_t len, char **paths, int n)
{
	size_t used;
	int i;

	used = (size_t)snprintf(name, len, "fit of");
	for (i = 0; i < n && used < len; i++) {
		const char *b = strrchr(paths[i], '/');

		used += (size_t)snprintf(name + used, len - used, "%s %s",
		    i ? "," : "", b != NULL ? b + 1 : paths[i]);
	}
	/* cut: not inside a UTF-8 sequence */
	used = strlen(name);
	if (used == len - 1)
		while (used > 0 && ((unsigned char)name[used] & 0xC0) == 0x80)
			name[used--] = '\0';
}

static int
cmd_fit_main(int argc, char **argv)
{
	struct cmd_fit_trace ft[CMD_FIT_MAX_TRACES];
	struct fit_trace tr[CMD_FIT_MAX_TRACES];
	struct fit_rows rows;
	struct fit_result res;
	struct fit_opts fo;
	const char *out = NULL, *name = NULL;
	char *end;
	char autoname[CMD_FIT_NAME_MAX + 1], err[256];
	long max_bytes = CMD_FIT_MAX_BYTES;
	size_t no_prompt = 0;
	int c, i, n, quiet = 0, ret = 1;
	json_t *prof = NULL;

	msg_init("tokbench fit");
	memset(ft, 0, sizeof(ft));
	memset(&rows, 0, sizeof(rows));
	memset(&fo, 0, sizeof(fo));
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:h", cmd_fit_longopts,
	    NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case CMD_FIT_NAME:
			if (strlen(optarg) > CMD_FIT_NAME_MAX)
				return msg_usage("fit", "--name: at most %d "
				    "bytes", CMD_FIT_NAME_MAX);
			name = optarg;
			break;
		case CMD_FIT_MAXB:
			if (opts_parse_long(optarg, 1, 1L << 40, &max_bytes) !=
			    TS_OK)
				return msg_usage("fit", "--max-bytes: a "
				    "number of bytes, 1 or more");
			break;
		case CMD_FIT_QUIET:
			quiet = 1;
			break;
		case CMD_FIT_OFFSET:
			if (cmd_fit_ms(optarg, &end, &fo.ttft_offset_ms) !=
			    TS_OK || *end != '\0')
				return msg_usage("fit", "--ttft-offset-ms: ms "
				    "in 0..60000");
			break;
		case CMD_FIT_NOISE:
			if (cmd_fit_ms(optarg, &end, &fo.noise_prefill_ms) !=
			    TS_OK || *end != ':' || cmd_fit_ms(end + 1, &end,
			    &fo.noise_decode_ms) != TS_OK || *end != '\0')
				return msg_usage("fit", "--noise-ms: P:D, two "
				    "std's in ms (0..60000)");
			break;
		case 'h':
			fputs(cmd_fit_usage, stdout);
			return 0;
		default:
			return opts_bad_option("fit", c, argv);
		}
	}
	n = argc - optind;
	if (n < 1)
		return msg_usage("fit", "give one trace file or more");
	if (n > CMD_FIT_MAX_TRACES)
		return msg_usage("fit", "at most %d trace files",
		    CMD_FIT_MAX_TRACES);
	for (i = 0; i < n; i++) {
		const char *path = argv[optind + i];
		struct trace_error te;
		enum ts_err rc;

		memset(&te, 0, sizeof(te));
		rc = trace_load(path, (size_t)max_bytes, &ft[i].t, &te);
		if (rc != TS_OK) {
			if (te.line > 0)
				msg_err("%s: line %ld: %s", path, te.line,
				    te.text);
			else
				msg_err("%s: %s", path, te.text);
			goto out;
		}
		if (cmd_fit_reqs(&ft[i], path) != TS_OK)
			goto out;
		tr[i].reqs = ft[i].reqs;
		tr[i].nreqs = ft[i].t.nrequests;
		no_prompt += ft[i].no_prompt;
	}
	if (no_prompt > 0 && !quiet)
		fprintf(stderr, "tokbench fit: %zu requests have no "
		    "prompt_tokens: counted as 0 (their context is "
		    "unknown)\n", no_prompt);
	err[0] = '\0';
	if (fit_rows_build(tr, (size_t)n, &rows, err, sizeof(err)) !=
	    TS_OK) {
		msg_err("%s", err);
		goto out;
	}
	if (fit_solve(&rows, &fo, &res, err, sizeof(err)) != TS_OK) {
		msg_err("%s", err);
		goto out;
	}
	if (name == NULL) {
		cmd_fit_name(autoname, sizeof(autoname), &argv[optind], n);
		name = autoname;
	}
	prof = cmd_fit_json(&res, &rows, name, &argv[optind], n, no_prompt);
	json_object_set_new(json_object_get(prof, "fit"), "stack",
	    json_pack("{s:f,s:f,s:f}", "ttft_offset_ms", fo.ttft_offset_ms,
	    "noise_prefill_ms", fo.noise_prefill_ms, "noise_decode_ms",
	    fo.noise_decode_ms));
	if (json_object_get(prof, "name") == NULL) {
		msg_err("the profile's name is not UTF-8");
		goto out;
	}
	if (out == NULL || strcmp(out, "-") == 0) {
		if (json_dumpf(prof, stdout, JSON_INDENT(1) |
		    JSON_REAL_PRECISION(6)) != 0 || fputc('\n', stdout) ==
		    EOF || fflush(stdout) != 0) {
			msg_err("cannot write the profile: %s",
			    strerror(errno));
			goto out;
		}
	} else if (json_dump_file(prof, out, JSON_INDENT(1) |
	    JSON_REAL_PRECISION(6)) != 0) {
		msg_err("%s: cannot write the profile: %s", out,
		    strerror(errno));
		goto out;
	}
	if (!quiet)
		cmd_fit_summary(&res, &rows);
	ret = 0;
out:
	json_decref(prof);
	fit_rows_free(&rows);
	for (i = 0; i < CMD_FIT_MAX_TRACES; i++) {
		trace_free(&ft[i].t);
		free(ft[i].reqs);
		free(ft[i].ev_us);
		free(ft[i].ev_n);
	}
	return ret;
}

const struct opts_cmd cmd_fit = {
	"fit", NULL, NULL, NULL, NULL, 0, 0, cmd_fit_main
};
