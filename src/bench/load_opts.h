/*
 * load_opts.h - the command line of `tokbench load`: its settings, and
 * the parser that reads and checks them (the help text is
 * `tokbench load --help`).
 */
#ifndef BENCH_LOAD_OPTS_H
#define BENCH_LOAD_OPTS_H

#include "bench/dataset.h"
#include "bench/load_report.h"
#include "bench/load_sched.h"

/* What the requests are sent to (--endpoint). */
enum load_endpoint {
	LOAD_EP_STREAM,         /* GET /stream (tokstream's lab endpoint) */
	LOAD_EP_COMPLETIONS,    /* POST /v1/completions, streamed */
	LOAD_EP_CHAT,           /* POST /v1/chat/completions, streamed */
	LOAD_EP_MESSAGES,       /* POST /v1/messages (Anthropic), streamed */
	LOAD_EP_OLLAMA_CHAT,    /* POST /api/chat (Ollama), NDJSON */
	LOAD_EP_OLLAMA_GENERATE /* POST /api/generate (Ollama), NDJSON */
};

/* The path of an endpoint ("/stream", "/v1/messages", ...). */
const char *load_endpoint_path(enum load_endpoint ep);

/* The metrics of --percentile-metrics (vLLM's names), as bits. */
#define LOAD_PM_TTFT 1u
#define LOAD_PM_TPOT 2u
#define LOAD_PM_ITL 4u
#define LOAD_PM_E2EL 8u

/* Most percentiles --metric-percentiles takes. */
#define LOAD_PCTS_MAX 16

/* The largest --output-tokens (the server's max_tokens cap), and so of a
 * jsonl line's "output_tokens". */
#define LOAD_OUTPUT_TOKENS_LIMIT 8192

/* Settings from the command line. */
struct load_opts {
	char *url;              /* base URL, trailing '/' removed; owned */
	enum load_endpoint endpoint;
	const char *model;      /* --model; NULL: GET /v1/models' first */
	const char *api_key;    /* --api-key (Authorization: Bearer); NULL */
	int ignore_eos;         /* --ignore-eos: "ignore_eos":true (vLLM) */
	long thinking_budget;   /* --thinking-budget N (/v1/messages); 0 */
	const char *reasoning_effort;   /* --reasoning-effort E (chat) */
	int think;              /* --think (/api/...): "think":true */
	struct load_traffic traffic;
	struct load_slo slo;
	int abandon_rst;        /* abandon with a TCP reset, not a FIN */
	double timeout_s;       /* whole request */
	long tpot_ms, prefill_ms;       /* sent when >= 0 */
	const char *json_path;  /* --json FILE or "-"; NULL none; argv */
	int quiet;
	/* workloads (dataset.h) */
	enum load_dataset_kind dataset;         /* --dataset */
	const char *dataset_path;       /* sharegpt, jsonl: FILE; argv */
	long random_prefix_len; /* --random-prefix-len: shared words */
	int output_given;       /* --output-tokens was given */
	int prompt_given;       /* --prompt-tokens was given */
	long warmup;            /* --warmup N: requests before the run */
	/* report */
	unsigned pct_metrics;   /* --percentile-metrics bits; 0 = not
				 * given: every metric, tokbench's P90
				 * and P99 */
	double pcts[LOAD_PCTS_MAX];     /* --metric-percentiles */
	size_t npcts;           /* 0 = not given */
	int save_detailed;      /* --save-detailed: per-request arrays */
};

/*
 * Parses argv (argv[0] is "load") into *o. Returns -1 to go on (then free
 * o->url), else the exit status: 0 after --help, 2 after a usage error
 * (one line printed).
 */
int load_opts_parse(int argc, char **argv, struct load_opts *o);

#endif /* BENCH_LOAD_OPTS_H */
