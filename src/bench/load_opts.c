/*
 * load_opts.c - the command line of `tokbench load` (load_opts.h).
 */
#include "bench/load_opts.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "bench/msg.h"
#include "bench/opts.h"

#define LOAD_DEFAULT_PROMPT_TOKENS 32
#define LOAD_DEFAULT_OUTPUT_TOKENS 64
#define LOAD_DEFAULT_TIMEOUT_S 60.0
/* lighttpd refuses a URI over ~32 KB; "+hello" and every random word
 * (words.h) are at most 6 bytes a token */
#define LOAD_PROMPT_TOKENS_MAX 4000
/* POST endpoints: the body, not the URI; 131072 tokens (a 128K context)
 * is at most 768 KiB of random words a request */
#define LOAD_PROMPT_TOKENS_MAX_POST 131072
#define LOAD_WARMUP_MAX 100000
#define LOAD_BURSTINESS_MIN 0.001
#define LOAD_BURSTINESS_MAX 1000.0
#define LOAD_OUTPUT_TOKENS_MAX LOAD_OUTPUT_TOKENS_LIMIT
#define LOAD_CONCURRENCY_MAX 100000
#define LOAD_REQUESTS_MAX 100000000L
#define LOAD_RATE_MAX 1e6               /* requests per second */
#define LOAD_DURATION_MAX 86400.0 * 30  /* seconds */

static const char load_opts_usage[] =
    "usage: tokbench load (--concurrency C | --rate R [--max-concurrency M])\n"
    "                     (--requests N | --duration S) [options]\n"
    "Runs many GET /stream (or --endpoint: OpenAI, Anthropic, Ollama)\n"
    "requests at once and prints vLLM-style serving metrics (vllm bench\n"
    "serve): TTFT, TPOT, ITL, E2E latency (mean, median, p90, p99 in ms;\n"
    "nearest-rank), request and token throughput, goodput; TTFR (the first\n"
    "reasoning token) when there is reasoning.\n"
    "Traffic (default --concurrency 1):\n"
    "  -c, --concurrency C       closed loop: C requests always in flight\n"
    "  -r, --rate R              open loop: Poisson arrivals, R requests/s\n"
    "      --max-concurrency M   open loop: at most M in flight; arrivals "
    "wait\n"
    "      --burstiness B        open loop: gamma inter-arrival times of "
    "shape B\n"
    "                            (default 1: Poisson; < 1 burstier, > 1 "
    "steadier)\n"
    "      --ramp-up-strategy linear|exponential  open loop instead of "
    "--rate:\n"
    "                            the rate goes from --ramp-up-start-rps "
    "R0 to\n"
    "                            --ramp-up-end-rps R1 over --requests N\n"
    "Bound (at least one; both: whichever comes first):\n"
    "  -n, --requests N          start N requests\n"
    "  -d, --duration S          start no request after S seconds; those "
    "in\n"
    "                            flight then run to their end\n"
    "Requests:\n"
    "  -u, --url BASE            server base URL (default "
    OPTS_DEFAULT_URL ")\n"
    "      --prompt-tokens N|MIN:MAX  prompt length in tokens, fixed or\n"
    "                            uniform (default 32; at most 4000 on\n"
    "                            /stream, 131072 on the POST endpoints)\n"
    "      --output-tokens N|MIN:MAX  max_tokens, fixed or uniform "
    "(default 64;\n"
    "                            with a file: instead of its lengths)\n"
    "      --seed N              PRNG seed of arrivals, prompts, lengths "
    "and\n"
    "                            abandons (default 0; same seed, same plan)\n"
    "      --tpot-ms MS          ask the server for this TPOT (tpot_ms=)\n"
    "      --prefill-ms MS       ask the server for this prefill "
    "(prefill_ms=)\n"
    "      --timeout SEC         limit for each whole request (default "
    "60)\n"
    "      --abandon P:K         a share P (0..1) of the requests hang up\n"
    "                            after K token events (FIN); counted as\n"
    "                            abandoned, not as failures or in the "
    "latencies\n"
    "      --abandon-rst         hang up with a TCP reset (SO_LINGER 0)\n"
    "      --endpoint PATH       /stream (default: tokstream's GET endpoint)\n"
    "                            or, for any OpenAI-compatible server,\n"
    "                            /v1/completions or /v1/chat/completions:\n"
    "                            a streamed POST with stream_options.\n"
    "                            include_usage; TTFT at the first content\n"
    "                            delta, ITL between deltas, output tokens\n"
    "                            from the usage chunk (vllm bench serve)\n"
    "      --model NAME          the model (default: the first id of\n"
    "                            GET /v1/models; Ollama: of GET /api/tags)\n"
    "      --api-key KEY         send Authorization: Bearer KEY (/v1/messages:\n"
    "                            x-api-key: KEY)\n"
    "      --ignore-eos          send \"ignore_eos\":true (vLLM's extension:\n"
    "                            every request runs to its max_tokens)\n"
    "      --endpoint /v1/messages  Anthropic's Messages API (named SSE\n"
    "                            events; TTFT at the first text_delta,\n"
    "                            output tokens from message_delta's usage;\n"
    "                            --api-key goes as x-api-key)\n"
    "      --endpoint /api/chat, /api/generate  Ollama's API (NDJSON; TTFT\n"
    "                            at the first line with content, output\n"
    "                            tokens from the last line's eval_count)\n"
    "Workload (vllm bench serve's datasets):\n"
    "      --dataset random      (default) each request its own random "
    "words,\n"
    "                            one token each in tokstream's "
    "vocabulary\n"
    "                            (other tokenizers: about one), from "
    "--seed:\n"
    "                            no two prompts share a prefix\n"
    "      --random-prefix-len N  random: N words shared by every prompt, "
    "in\n"
    "                            front of its --prompt-tokens own "
    "(vLLM's)\n"
    "      --dataset repeat      \"hello\" repeated, the same prompt "
    "for all\n"
    "      --dataset sharegpt FILE  ShareGPT JSON: the first turn the "
    "prompt,\n"
    "                            the reply's length (4 bytes a token) "
    "the\n"
    "                            output length, shuffled with --seed\n"
    "      --dataset jsonl FILE  one {\"prompt\"|\"messages\", "
    "\"output_tokens\"}\n"
    "                            a line; a file is at most 1 GiB\n"
    "      --warmup N            run N requests first, left out of "
    "every number\n"
    "Reasoning (TTFR: time to the first reasoning token, apart from TTFT):\n"
    "      --thinking-budget N   /v1/messages: \"thinking\":{\"type\":\n"
    "                            \"enabled\",\"budget_tokens\":N}, N below\n"
    "                            --output-tokens\n"
    "      --reasoning-effort E  /v1/chat/completions: \"reasoning_effort\":E\n"
    "                            (none, minimal, low, medium, high)\n"
    "      --think               /api/chat, /api/generate: \"think\":true\n"
    "Report:\n"
    "      --goodput SPEC        SLOs in ms, e.g. \"ttft:500 tpot:50\" (keys\n"
    "                            ttft, tpot, e2el; repeatable): goodput =\n"
    "                            completed requests meeting all of them / s\n"
    "      --json FILE           also write the report as one JSON object\n"
    "                            (\"-\": on stdout; the text goes to "
    "stderr)\n"
    "      --percentile-metrics LIST  metrics with percentiles, of ttft,"
    "tpot,\n"
    "                            itl,e2el (vLLM's; default with the next: "
    "ttft,\n"
    "                            tpot,itl; without either: all, P90 and "
    "P99)\n"
    "      --metric-percentiles LIST  percentiles, e.g. 50,90,99.9 "
    "(default 99)\n"
    "      --save-detailed       per-request input_lens, output_lens, "
    "ttfts,\n"
    "                            itls (seconds, as vLLM) and errors in "
    "the JSON\n"
    "  -q, --quiet               no progress lines on stderr\n"
    "Exit status: 0 report written, 1 nothing measured (no request "
    "completed\n"
    "or was abandoned) or the JSON could not be written, 2 usage error.\n";

/* getopt_long codes of load's own options; --url, --timeout, --tpot-ms,
 * --prefill-ms and --help are the lab steps' (opts.h). */
enum {
	LOAD_OPT_CONCURRENCY = 'c',
	LOAD_OPT_RATE = 'r',
	LOAD_OPT_REQUESTS = 'n',
	LOAD_OPT_DURATION = 'd',
	LOAD_OPT_QUIET = 'q',
	LOAD_OPT_MAX_CONCURRENCY = OPTS_PREFILL + 1,
	LOAD_OPT_PROMPT_TOKENS,
	LOAD_OPT_OUTPUT_TOKENS,
	LOAD_OPT_SEED,
	LOAD_OPT_GOODPUT,
	LOAD_OPT_ABANDON,
	LOAD_OPT_ABANDON_RST,
	LOAD_OPT_JSON,
	LOAD_OPT_ENDPOINT,
	LOAD_OPT_MODEL,
	LOAD_OPT_API_KEY,
	LOAD_OPT_IGNORE_EOS,
	LOAD_OPT_THINKING_BUDGET,
	LOAD_OPT_REASONING_EFFORT,
	LOAD_OPT_THINK,
	LOAD_OPT_DATASET,
	LOAD_OPT_RANDOM_PREFIX_LEN,
	LOAD_OPT_WARMUP,
	LOAD_OPT_BURSTINESS,
	LOAD_OPT_RAMP_STRATEGY,
	LOAD_OPT_RAMP_START,
	LOAD_OPT_RAMP_END,
	LOAD_OPT_PCT_METRICS,
	LOAD_OPT_METRIC_PCTS,
	LOAD_OPT_SAVE_DETAILED
};

static const struct option load_opts_longopts[] = {
	OPTS_LONG_URL,
	{"concurrency", required_argument, NULL, LOAD_OPT_CONCURRENCY},
	{"rate", required_argument, NULL, LOAD_OPT_RATE},
	{"max-concurrency", required_argument, NULL,
	    LOAD_OPT_MAX_CONCURRENCY},
	{"requests", required_argument, NULL, LOAD_OPT_REQUESTS},
	{"duration", required_argument, NULL, LOAD_OPT_DURATION},
	{"prompt-tokens", required_argument, NULL, LOAD_OPT_PROMPT_TOKENS},
	{"output-tokens", required_argument, NULL, LOAD_OPT_OUTPUT_TOKENS},
	{"seed", required_argument, NULL, LOAD_OPT_SEED},
	{"goodput", required_argument, NULL, LOAD_OPT_GOODPUT},
	{"abandon", required_argument, NULL, LOAD_OPT_ABANDON},
	{"abandon-rst", no_argument, NULL, LOAD_OPT_ABANDON_RST},
	OPTS_LONG_TIMEOUT,
	OPTS_LONG_TIMING,
	{"json", required_argument, NULL, LOAD_OPT_JSON},
	{"endpoint", required_argument, NULL, LOAD_OPT_ENDPOINT},
	{"model", required_argument, NULL, LOAD_OPT_MODEL},
	{"api-key", required_argument, NULL, LOAD_OPT_API_KEY},
	{"ignore-eos", no_argument, NULL, LOAD_OPT_IGNORE_EOS},
	{"thinking-budget", required_argument, NULL,
	    LOAD_OPT_THINKING_BUDGET},
	{"reasoning-effort", required_argument, NULL,
	    LOAD_OPT_REASONING_EFFORT},
	{"think", no_argument, NULL, LOAD_OPT_THINK},
	{"dataset", required_argument, NULL, LOAD_OPT_DATASET},
	{"random-prefix-len", required_argument, NULL,
	    LOAD_OPT_RANDOM_PREFIX_LEN},
	{"warmup", required_argument, NULL, LOAD_OPT_WARMUP},
	{"burstiness", required_argument, NULL, LOAD_OPT_BURSTINESS},
	{"ramp-up-strategy", required_argument, NULL, LOAD_OPT_RAMP_STRATEGY},
	{"ramp-up-start-rps", required_argument, NULL, LOAD_OPT_RAMP_START},
	{"ramp-up-end-rps", required_argument, NULL, LOAD_OPT_RAMP_END},
	{"percentile-metrics", required_argument, NULL, LOAD_OPT_PCT_METRICS},
	{"metric-percentiles", required_argument, NULL, LOAD_OPT_METRIC_PCTS},
	{"save-detailed", no_argument, NULL, LOAD_OPT_SAVE_DETAILED},
	{"quiet", no_argument, NULL, LOAD_OPT_QUIET},
	OPTS_LONG_HELP,
	OPTS_LONG_END
};

/* The endpoints of --endpoint, in the order of enum load_endpoint. */
static const char *const load_endpoint_paths[] = {
	"/stream", "/v1/completions", "/v1/chat/completions", "/v1/messages",
	"/api/chat", "/api/generate"
};

#define LOAD_NENDPOINTS \
	(sizeof(load_endpoint_paths) / sizeof(load_endpoint_paths[0]))

const char *
load_endpoint_path(enum load_endpoint ep)
{
	return (size_t)ep < LOAD_NENDPOINTS ? load_endpoint_paths[ep] :
	    "/stream";
}

/* True when s is UTF-8 (it goes into the JSON body). */
static int
load_opts_utf8(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

/*
 * optarg as a decimal integer in [lo, hi] (digits only, after an
 * optional '-') into *out, for option `opt`; `what` names the unit in
 * the message. Returns -1 to go on, else the exit status 2.
 */
static int
load_opts_long(const char *opt, const char *what, long lo, long hi,
    long *out)
{
	struct load_range r;

	if (strchr(optarg, ':') == NULL &&
	    load_parse_range(optarg, lo, hi, &r, NULL) == TS_OK) {
		*out = r.min;
		return -1;
	}
	return msg_usage("load", "bad %s '%s': want %s from %ld to %ld", opt,
	    optarg, what, lo, hi);
}

/* optarg as seconds, a plain decimal number in [0.001, hi], into *out,
 * for option `opt`. Returns -1 to go on, else the exit status 2. */
static int
load_opts_seconds(const char *opt, double hi, double *out)
{
	if (load_parse_number(optarg, 0.001, hi, out) == TS_OK)
		return -1;
	return msg_usage("load", "bad %s '%s': want seconds from 0.001 to "
	    "%.0f", opt, optarg, hi);
}

/* The verdict rc of a spec parser (load_report.h) on optarg, for option
 * `opt`. Returns -1 to go on, else the exit status 2. */
static int
load_opts_spec(const char *opt, enum ts_err rc,
    const struct load_perr *perr)
{
	if (rc == TS_OK)
		return -1;
	return msg_usage("load", "bad %s '%s' at %d: %s", opt, optarg,
	    perr->position, perr->text);
}

/* --percentile-metrics: a comma list of ttft, tpot, itl, e2el (vLLM's
 * selected_percentile_metrics). Returns -1 to go on, else 2. */
static int
load_opts_pct_metrics(struct load_opts *o)
{
	static const char *const names[] = {"ttft", "tpot", "itl", "e2el"};
	const char *p = optarg, *e;
	unsigned bits = 0;
	size_t i, n;

	for (;;) {
		e = strchr(p, ',');
		n = e != NULL ? (size_t)(e - p) : strlen(p);
		for (i = 0; i < 4; i++)
			if (strlen(names[i]) == n && strncmp(p, names[i], n) == 0)
				break;
		if (i == 4)
			return msg_usage("load", "bad --percentile-metrics "
			    "'%s' at %d: want a comma list of ttft, tpot, itl, "
			    "e2el", optarg, (int)(p - optarg));
		bits |= 1u << i;
		if (e == NULL)
			break;
		p = e + 1;
	}
	o->pct_metrics = bits;
	return -1;
}

/* --metric-percentiles: a comma list of numbers in (0, 100] (vLLM's
 * selected_percentiles, floats). Returns -1 to go on, else 2. */
static int
load_opts_metric_pcts(struct load_opts *o)
{
	char tok[32];
	const char *p = optarg, *e;
	size_t n;
	double v;

	o->npcts = 0;
	for (;;) {
		e = strchr(p, ',');
		n = e != NULL ? (size_t)(e - p) : strlen(p);
		if (n == 0 || n >= sizeof(tok) || o->npcts == LOAD_PCTS_MAX)
			goto bad;
		memcpy(tok, p, n);
		tok[n] = '\0';
		if (load_parse_number(tok, 0.0, 100.0, &v) != TS_OK ||
		    !(v > 0))
			goto bad;
		o->pcts[o->npcts++] = v;
		if (e == NULL)
			return -1;
		p = e + 1;
	}
bad:
	o->npcts = 0;
	return msg_usage("load", "bad --metric-percentiles '%s' at %d: want "
	    "a comma list of at most %d numbers > 0 and <= 100", optarg,
	    (int)(p - optarg), LOAD_PCTS_MAX);
}

/* --ramp-up-start-rps / --ramp-up-end-rps: requests/s in [0, max]. */
static int
load_opts_rps(const char *opt, double *out)
{
	if (load_parse_number(optarg, 0.0, LOAD_RATE_MAX, out) == TS_OK)
		return -1;
	return msg_usage("load", "bad %s '%s': want requests per second, a "
	    "number from 0 to %g", opt, optarg, LOAD_RATE_MAX);
}

/*
 * --dataset NAME [FILE]: sharegpt and jsonl take the next argument as
 * their file (vllm bench serve's --dataset-name and --dataset-path in
 * one). Returns -1 to go on, else 2.
 */
static int
load_opts_dataset(int argc, char **argv, struct load_opts *o)
{
	if (strcmp(optarg, "random") == 0)
		o->dataset = LOAD_DS_RANDOM;
	else if (strcmp(optarg, "repeat") == 0)
		o->dataset = LOAD_DS_REPEAT;
	else if (strcmp(optarg, "sharegpt") == 0)
		o->dataset = LOAD_DS_SHAREGPT;
	else if (strcmp(optarg, "jsonl") == 0)
		o->dataset = LOAD_DS_JSONL;
	else
		return msg_usage("load", "bad --dataset '%s': want random, "
		    "repeat, sharegpt FILE or jsonl FILE", optarg);
	o->dataset_path = NULL;
	if (o->dataset == LOAD_DS_SHAREGPT || o->dataset == LOAD_DS_JSONL) {
		if (optind >= argc || argv[optind][0] == '\0' ||
		    (argv[optind][0] == '-' && argv[optind][1] != '\0'))
			return msg_usage("load", "--dataset %s needs a FILE "
			    "after it", optarg);
		o->dataset_path = argv[optind++];
	}
	return -1;
}

/*
 * Applies option c (getopt's optarg) to *o; *url and *have_abandon note
 * --url and --abandon. Returns -1 to go on, else the exit status.
 */
static int
load_opts_one(int c, int argc, char **argv, struct load_opts *o,
    const char **url, int *have_abandon)
{
	struct load_traffic *t = &o->traffic;
	struct load_perr perr;

	switch (c) {
	case OPTS_HELP:
		fputs(load_opts_usage, stdout);
		return 0;
	case OPTS_URL:
		if (optarg[0] == '\0')
			return msg_usage("load", "empty --url");
		*url = optarg;
		return -1;
	case LOAD_OPT_CONCURRENCY:
		return load_opts_long("--concurrency", "an integer", 1,
		    LOAD_CONCURRENCY_MAX, &t->concurrency);
	case LOAD_OPT_MAX_CONCURRENCY:
		return load_opts_long("--max-concurrency", "an integer", 1,
		    LOAD_CONCURRENCY_MAX, &t->max_concurrency);
	case LOAD_OPT_RATE:
		if (load_parse_number(optarg, 1e-6, LOAD_RATE_MAX,
		    &t->rate) != TS_OK || !(t->rate > 0))
			return msg_usage("load", "bad --rate '%s': want "
			    "requests per second, a number > 0 and <= %g",
			    optarg, LOAD_RATE_MAX);
		return -1;
	case LOAD_OPT_REQUESTS:
		return load_opts_long("--requests", "an integer", 1,
		    LOAD_REQUESTS_MAX, &t->requests);
	case LOAD_OPT_DURATION:
		return load_opts_seconds("--duration", LOAD_DURATION_MAX,
		    &t->duration_s);
	case LOAD_OPT_PROMPT_TOKENS:
		o->prompt_given = 1;
		return load_opts_spec("--prompt-tokens",
		    load_parse_range(optarg, 1, LOAD_PROMPT_TOKENS_MAX_POST,
		    &t->prompt, &perr), &perr);
	case LOAD_OPT_OUTPUT_TOKENS:
		o->output_given = 1;
		return load_opts_spec("--output-tokens",
		    load_parse_range(optarg, 1, LOAD_OUTPUT_TOKENS_MAX,
		    &t->output, &perr), &perr);
	case LOAD_OPT_SEED:
		if (load_parse_u64(optarg, &t->seed) != TS_OK)
			return msg_usage("load", "bad --seed '%s': want an "
			    "integer from 0 to %" PRIu64, optarg, UINT64_MAX);
		return -1;
	case LOAD_OPT_GOODPUT:
		return load_opts_spec("--goodput",
		    load_parse_goodput(optarg, &o->slo, &perr), &perr);
	case LOAD_OPT_ABANDON:
		*have_abandon = 1;
		return load_opts_spec("--abandon",
		    load_parse_abandon(optarg, LOAD_OUTPUT_TOKENS_MAX,
		    &t->abandon, &perr), &perr);
	case LOAD_OPT_ABANDON_RST:
		o->abandon_rst = 1;
		return -1;
	case OPTS_TIMEOUT:
		return load_opts_seconds("--timeout", 86400.0,
		    &o->timeout_s);
	case OPTS_TPOT:
		return load_opts_long("--tpot-ms", "milliseconds", 0, 10000,
		    &o->tpot_ms);
	case OPTS_PREFILL:
		return load_opts_long("--prefill-ms", "milliseconds", 0,
		    60000, &o->prefill_ms);
	case LOAD_OPT_JSON:
		if (optarg[0] == '\0')
			return msg_usage("load", "empty --json");
		o->json_path = optarg;
		return -1;
	case LOAD_OPT_QUIET:
		o->quiet = 1;
		return -1;
	case LOAD_OPT_ENDPOINT: {
		size_t i;

		for (i = 0; i < LOAD_NENDPOINTS; i++)
			if (strcmp(optarg, load_endpoint_paths[i]) == 0) {
				o->endpoint = (enum load_endpoint)i;
				return -1;
			}
		return msg_usage("load", "bad --endpoint '%s': want /stream, "
		    "/v1/completions, /v1/chat/completions, /v1/messages, "
		    "/api/chat or /api/generate", optarg);
	}
	case LOAD_OPT_THINKING_BUDGET:
		return load_opts_long("--thinking-budget", "tokens", 1,
		    LOAD_OUTPUT_TOKENS_MAX - 1, &o->thinking_budget);
	case LOAD_OPT_REASONING_EFFORT:
		if (strcmp(optarg, "none") != 0 &&
		    strcmp(optarg, "minimal") != 0 &&
		    strcmp(optarg, "low") != 0 &&
		    strcmp(optarg, "medium") != 0 &&
		    strcmp(optarg, "high") != 0)
			return msg_usage("load", "bad --reasoning-effort '%s': "
			    "want none, minimal, low, medium or high", optarg);
		o->reasoning_effort = optarg;
		return -1;
	case LOAD_OPT_THINK:
		o->think = 1;
		return -1;
	case LOAD_OPT_DATASET:
		return load_opts_dataset(argc, argv, o);
	case LOAD_OPT_RANDOM_PREFIX_LEN:
		return load_opts_long("--random-prefix-len", "tokens", 0,
		    LOAD_PROMPT_TOKENS_MAX_POST, &o->random_prefix_len);
	case LOAD_OPT_WARMUP:
		return load_opts_long("--warmup", "requests", 0,
		    LOAD_WARMUP_MAX, &o->warmup);
	case LOAD_OPT_BURSTINESS:
		if (load_parse_number(optarg, LOAD_BURSTINESS_MIN,
		    LOAD_BURSTINESS_MAX, &t->burstiness) != TS_OK)
			return msg_usage("load", "bad --burstiness '%s': want "
			    "a number from %g to %g (1: Poisson)", optarg,
			    LOAD_BURSTINESS_MIN, LOAD_BURSTINESS_MAX);
		return -1;
	case LOAD_OPT_RAMP_STRATEGY:
		if (strcmp(optarg, "linear") == 0)
			t->ramp = LOAD_RAMP_LINEAR;
		else if (strcmp(optarg, "exponential") == 0)
			t->ramp = LOAD_RAMP_EXPONENTIAL;
		else
			return msg_usage("load", "bad --ramp-up-strategy '%s': "
			    "want linear or exponential", optarg);
		return -1;
	case LOAD_OPT_RAMP_START:
		return load_opts_rps("--ramp-up-start-rps", &t->ramp_start);
	case LOAD_OPT_RAMP_END:
		return load_opts_rps("--ramp-up-end-rps", &t->ramp_end);
	case LOAD_OPT_PCT_METRICS:
		return load_opts_pct_metrics(o);
	case LOAD_OPT_METRIC_PCTS:
		return load_opts_metric_pcts(o);
	case LOAD_OPT_SAVE_DETAILED:
		o->save_detailed = 1;
		return -1;
	case LOAD_OPT_MODEL:
		if (optarg[0] == '\0' || strlen(optarg) > 256 ||
		    !load_opts_utf8(optarg))
			return msg_usage("load", "--model is 1 to 256 bytes of "
			    "UTF-8");
		o->model = optarg;
		return -1;
	case LOAD_OPT_API_KEY:
		if (optarg[0] == '\0' || strpbrk(optarg, "\r\n") != NULL ||
		    strlen(optarg) > 512)
			return msg_usage("load", "--api-key is 1 to 512 bytes "
			    "on one line");
		o->api_key = optarg;
		return -1;
	case LOAD_OPT_IGNORE_EOS:
		o->ignore_eos = 1;
		return -1;
	default:
		return opts_bad_option("load", c, argv);
	}
}

/*
 * The checks of the workload and traffic options that need every option
 * (after vllm bench serve's: ramp-up replaces --rate and needs both
 * rates, start <= end, an exponential ramp a start > 0). Returns -1 to
 * go on, else 2.
 */
static int
load_opts_workload(struct load_opts *o, int have_start, int have_end)
{
	struct load_traffic *t = &o->traffic;
	int file = o->dataset == LOAD_DS_SHAREGPT ||
	    o->dataset == LOAD_DS_JSONL;
	long longest = t->prompt.max + o->random_prefix_len;

	if (t->ramp != LOAD_RAMP_NONE || have_start || have_end) {
		if (t->ramp == LOAD_RAMP_NONE || !have_start || !have_end)
			return msg_usage("load", "--ramp-up-strategy, "
			    "--ramp-up-start-rps and --ramp-up-end-rps go "
			    "together");
		if (t->rate > 0 || t->concurrency > 0)
			return msg_usage("load", "a ramp-up sets the rate: "
			    "leave out --rate and --concurrency");
		if (t->requests == 0)
			return msg_usage("load", "a ramp-up runs over "
			    "--requests N: give it");
		if (t->ramp_start > t->ramp_end)
			return msg_usage("load", "--ramp-up-start-rps %g is "
			    "more than --ramp-up-end-rps %g", t->ramp_start,
			    t->ramp_end);
		if (!(t->ramp_start > 0) && t->ramp == LOAD_RAMP_EXPONENTIAL)
			return msg_usage("load", "an exponential ramp-up needs "
			    "--ramp-up-start-rps > 0");
		if (!(t->ramp_end > 0))
			return msg_usage("load", "--ramp-up-end-rps must be "
			    "> 0");
		/* open loop; request 0 arrives at once, later gaps ramp */
		t->rate = t->ramp_start > 0 ? t->ramp_start : t->ramp_end;
	}
	if (t->burstiness != 1.0 && t->rate == 0)
		return msg_usage("load", "--burstiness shapes the arrivals of "
		    "--rate or a ramp-up (open loop)");
	if (o->random_prefix_len > 0 && o->dataset != LOAD_DS_RANDOM)
		return msg_usage("load", "--random-prefix-len is for --dataset "
		    "random");
	if (file && o->prompt_given)
		return msg_usage("load", "--prompt-tokens is for --dataset "
		    "random and repeat: a file's prompts are its own");
	if (o->endpoint == LOAD_EP_STREAM && longest > LOAD_PROMPT_TOKENS_MAX)
		return msg_usage("load", "a /stream prompt is at most %d "
		    "tokens (its URI; the POST endpoints take %d): %ld asked",
		    LOAD_PROMPT_TOKENS_MAX, LOAD_PROMPT_TOKENS_MAX_POST,
		    longest);
	if (longest > LOAD_PROMPT_TOKENS_MAX_POST)
		return msg_usage("load", "--random-prefix-len plus "
		    "--prompt-tokens is %ld, more than %d", longest,
		    LOAD_PROMPT_TOKENS_MAX_POST);
	if (o->pct_metrics != 0 && o->npcts == 0) {
		o->pcts[0] = 99.0;      /* vLLM's default */
		o->npcts = 1;
	}
	if (o->npcts > 0 && o->pct_metrics == 0)
		o->pct_metrics = LOAD_PM_TTFT | LOAD_PM_TPOT | LOAD_PM_ITL;
	return -1;
}

/* The checks that need every option come after the loop. */
int
load_opts_parse(int argc, char **argv, struct load_opts *o)
{
	struct load_traffic *t = &o->traffic;
	const char *url = OPTS_DEFAULT_URL;
	int c, ret, have_abandon = 0;
	int have_ramp_start = 0, have_ramp_end = 0;

	memset(o, 0, sizeof(*o));
	t->prompt.min = t->prompt.max = LOAD_DEFAULT_PROMPT_TOKENS;
	t->output.min = t->output.max = LOAD_DEFAULT_OUTPUT_TOKENS;
	o->timeout_s = LOAD_DEFAULT_TIMEOUT_S;
	o->tpot_ms = -1;
	o->prefill_ms = -1;
	t->burstiness = 1.0;
	t->ramp_start = t->ramp_end = -1;
	load_slo_init(&o->slo);

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hqu:c:r:n:d:",
	    load_opts_longopts, NULL)) != -1) {
		ret = load_opts_one(c, argc, argv, o, &url, &have_abandon);
		if (ret >= 0)
			return ret;
	}
	if (optind < argc)
		return msg_usage("load", "unexpected argument '%s'",
		    argv[optind]);
	have_ramp_start = t->ramp_start >= 0;
	have_ramp_end = t->ramp_end >= 0;
	if ((ret = load_opts_workload(o, have_ramp_start, have_ramp_end)) >= 0)
		return ret;
	if (t->concurrency > 0 && t->rate > 0)
		return msg_usage("load", "--concurrency (closed loop) and "
		    "--rate (open loop) exclude each other");
	if (t->max_concurrency > 0 && t->rate == 0)
		return msg_usage("load", "--max-concurrency caps the open "
		    "loop of --rate; for a closed loop use --concurrency");
	if (t->rate == 0 && t->concurrency == 0)
		t->concurrency = 1;
	if (t->requests == 0 && t->duration_s == 0)
		return msg_usage("load", "give --requests N or --duration S "
		    "(or both)");
	if (o->abandon_rst && !have_abandon)
		return msg_usage("load", "--abandon-rst needs --abandon P:K");
	if (have_abandon && t->abandon.after_tokens > t->output.max)
		return msg_usage("load", "--abandon K=%ld is more than the "
		    "largest --output-tokens %ld: no request would hang up",
		    t->abandon.after_tokens, t->output.max);
	if (o->endpoint == LOAD_EP_STREAM && (o->model != NULL ||
	    o->ignore_eos))
		return msg_usage("load", "--model and --ignore-eos are for the "
		    "/v1 endpoints (--endpoint)");
	if (o->ignore_eos && o->endpoint != LOAD_EP_CHAT &&
	    o->endpoint != LOAD_EP_COMPLETIONS)
		return msg_usage("load", "--ignore-eos is vLLM's field of the "
		    "OpenAI endpoints; %s has none",
		    load_endpoint_path(o->endpoint));
	if (o->thinking_budget > 0 && o->endpoint != LOAD_EP_MESSAGES)
		return msg_usage("load", "--thinking-budget is for "
		    "--endpoint /v1/messages");
	if (o->thinking_budget >= t->output.min && o->thinking_budget > 0)
		return msg_usage("load", "--thinking-budget %ld must be below "
		    "the smallest --output-tokens %ld (Anthropic's "
		    "budget_tokens < max_tokens)", o->thinking_budget,
		    t->output.min);
	if (o->reasoning_effort != NULL && o->endpoint != LOAD_EP_CHAT)
		return msg_usage("load", "--reasoning-effort is for "
		    "--endpoint /v1/chat/completions");
	if (o->think && o->endpoint != LOAD_EP_OLLAMA_CHAT &&
	    o->endpoint != LOAD_EP_OLLAMA_GENERATE)
		return msg_usage("load", "--think is for --endpoint /api/chat "
		    "or /api/generate");
	o->url = opts_base_url(url);
	return -1;
}

