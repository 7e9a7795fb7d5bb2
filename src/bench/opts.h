/*
 * opts.h - the command line of tokbench's lab steps (gen, stream, ttft,
 * itl, cancel, lab): their settings, the description of a subcommand
 * (options, help text, defaults, entry point), the option table entries
 * and help lines they share, and the helpers every subcommand's parser
 * uses (load's too: cmd_load.c).
 */
#ifndef BENCH_OPTS_H
#define BENCH_OPTS_H

#include <getopt.h>

#include "common/ts.h"

#define OPTS_DEFAULT_URL "http://127.0.0.1:8170"
#define OPTS_DEFAULT_PROMPT "hello"
#define OPTS_LAB_TOKENS 20              /* max_tokens of ttft/itl/lab */
#define OPTS_CANCEL_TOKENS 100          /* max_tokens of the cancel step */
#define OPTS_CANCEL_READ 5              /* token events read before closing */
#define OPTS_DEFAULT_TIMEOUT_S 60       /* whole /stream request */
#define OPTS_MAX_TOKENS 1000000L        /* sanity cap on --max-tokens, -n */

/* Command-line settings shared by the lab steps. */
struct opts {
	char *url;              /* base URL, trailing '/' removed; owned */
	const char *prompt;     /* borrowed from argv */
	const char *out_dir;    /* borrowed from argv; NULL if not given */
	const char *tokgen;     /* --tokgen, borrowed; NULL if not given */
	long max_tokens;
	long sim_tokens;        /* tokgen -n */
	long read_tokens;       /* cancel: token events read before close */
	long timeout_s;
	int events;             /* stream --events */
	int json;               /* stream --json */
	int id_only;            /* cancel --id-only */
	int rst;                /* cancel --rst: close with a TCP reset */
	const char *debug_url;  /* cancel --debug-url: where /_debug is
				 * asked; NULL: url. Borrowed */
	long tpot_ms;           /* --tpot-ms, sent as tpot_ms; -1 = not */
	long prefill_ms;        /* --prefill-ms, sent as prefill_ms; -1 */
};

/* getopt_long codes of the lab steps' options. */
enum {
	OPTS_URL = 'u',
	OPTS_PROMPT = 'p',
	OPTS_OUT = 'o',
	OPTS_N = 'n',
	OPTS_HELP = 'h',
	OPTS_MAX = 256,
	OPTS_EVENTS,
	OPTS_TIMEOUT,
	OPTS_TOKGEN,
	OPTS_READ,
	OPTS_JSON,
	OPTS_ID_ONLY,
	OPTS_RST,
	OPTS_DEBUG_URL,
	OPTS_TPOT,
	OPTS_PREFILL
};

/* Entries of the subcommands' struct option tables. */
#define OPTS_LONG_TIMING \
	{"tpot-ms", required_argument, NULL, OPTS_TPOT}, \
	{"prefill-ms", required_argument, NULL, OPTS_PREFILL}
#define OPTS_LONG_HELP {"help", no_argument, NULL, OPTS_HELP}
#define OPTS_LONG_URL {"url", required_argument, NULL, OPTS_URL}
#define OPTS_LONG_PROMPT {"prompt", required_argument, NULL, OPTS_PROMPT}
#define OPTS_LONG_OUT {"out", required_argument, NULL, OPTS_OUT}
#define OPTS_LONG_MAX {"max-tokens", required_argument, NULL, OPTS_MAX}
#define OPTS_LONG_TIMEOUT {"timeout", required_argument, NULL, OPTS_TIMEOUT}
#define OPTS_LONG_TOKGEN {"tokgen", required_argument, NULL, OPTS_TOKGEN}
#define OPTS_LONG_END {NULL, 0, NULL, 0}

/* Help lines of the options common to the steps that talk to the
 * server. */
#define OPTS_USAGE_NET \
	"  -u, --url BASE        server base URL (default " \
	OPTS_DEFAULT_URL ")\n" \
	"  -p, --prompt TEXT     prompt (default \"" \
	OPTS_DEFAULT_PROMPT "\"), percent-encoded for you\n" \
	"      --timeout SEC     limit for the whole /stream request " \
	"(default 60)\n"

/* Help lines of the per-request latency-model overrides (the server's
 * query parameters). */
#define OPTS_USAGE_TIMING \
	"      --tpot-ms MS      ask the server for this TPOT (tpot_ms=)\n" \
	"      --prefill-ms MS   ask the server for this prefill time " \
	"(prefill_ms=)\n"

/* Help lines of --out and --max-tokens N (default 20). */
#define OPTS_USAGE_OUT \
	"  -o, --out DIR         output directory (created if missing)\n"
#define OPTS_USAGE_MAX20 \
	"      --max-tokens N    max_tokens of the request (default 20)\n"

/* The options of a step that measures one stream into DIR (ttft, itl). */
extern const struct option opts_measure_longopts[];

/*
 * One subcommand: its options, help text, defaults and entry point.
 * Either `run` takes the settings opts_parse() read (and returns the exit
 * status), or `main` parses its own command line (argv[0] is the
 * subcommand's name) and returns the exit status.
 */
struct opts_cmd {
	const char *name;
	const char *shortopts;
	const struct option *longopts;
	const char *usage;
	int (*run)(struct opts *o);
	int need_out;           /* --out DIR is required */
	long max_tokens;        /* default --max-tokens */
	int (*main)(int argc, char **argv);
};

/*
 * Parses a subcommand's options into *o with getopt_long (argv[0] is the
 * subcommand's name). Returns -1 to go on (then free o->url), else the
 * exit status (0 after --help, 2 after a usage error, printed).
 */
int opts_parse(const struct opts_cmd *cmd, int argc, char **argv,
    struct opts *o);

/* Parses a decimal integer in [min, max] (strtol syntax); returns TS_OK
 * or TS_EINVAL. */
enum ts_err opts_parse_long(const char *s, long min, long max, long *out);

/*
 * The usage error of what getopt_long() returned as c for subcommand
 * `cmd` when it is no option the subcommand knows: ':' (an argument is
 * missing) or '?' (an unknown option). Returns the exit status 2.
 */
int opts_bad_option(const char *cmd, int c, char **argv);

/* A copy of a base URL without its trailing '/'s; caller frees. */
char *opts_base_url(const char *url);

#endif /* BENCH_OPTS_H */
