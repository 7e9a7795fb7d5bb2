/*
 * opts.c - the command line of tokbench's lab steps (opts.h).
 */
#include "bench/opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/msg.h"

const struct option opts_measure_longopts[] = {
	OPTS_LONG_OUT, OPTS_LONG_URL, OPTS_LONG_PROMPT, OPTS_LONG_MAX,
	OPTS_LONG_TIMEOUT, OPTS_LONG_HELP, OPTS_LONG_END
};

enum ts_err
opts_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return TS_EINVAL;
	*out = v;
	return TS_OK;
}

char *
opts_base_url(const char *url)
{
	size_t n = strlen(url);

	while (n > 1 && url[n - 1] == '/')
		n--;
	return xstrndup(url, n);
}

int
opts_bad_option(const char *cmd, int c, char **argv)
{
	if (c == ':')
		return msg_usage(cmd, "missing argument for '%s'",
		    argv[optind - 1]);
	if (optopt > 0 && optopt < 256)
		return msg_usage(cmd, "unknown option '-%c'", optopt);
	return msg_usage(cmd, "unknown option '%s'", argv[optind - 1]);
}

/* Sets the defaults of every lab step, and cmd's --max-tokens. */
static void
opts_defaults(const struct opts_cmd *cmd, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->prompt = OPTS_DEFAULT_PROMPT;
	o->max_tokens = cmd->max_tokens;
	o->sim_tokens = OPTS_LAB_TOKENS;
	o->read_tokens = OPTS_CANCEL_READ;
	o->timeout_s = OPTS_DEFAULT_TIMEOUT_S;
	o->tpot_ms = -1;
	o->prefill_ms = -1;
}

/*
 * Parses a token count in [1, OPTS_MAX_TOKENS] for option `what`.
 * Returns -1 to go on, else the exit status of a usage error.
 */
static int
opts_count(const struct opts_cmd *cmd, const char *what, long *out)
{
	if (opts_parse_long(optarg, 1, OPTS_MAX_TOKENS, out) == TS_OK)
		return -1;
	return msg_usage(cmd->name, "bad %s '%s': want an integer from 1 to "
	    "%ld", what, optarg, OPTS_MAX_TOKENS);
}

/* Applies option c (getopt's optarg). Returns -1 to go on, else the
 * exit status. */
static int
opts_one(const struct opts_cmd *cmd, int c, char **argv, struct opts *o,
    const char **url)
{
	switch (c) {
	case OPTS_HELP:
		fputs(cmd->usage, stdout);
		return 0;
	case OPTS_URL:
		if (optarg[0] == '\0')
			return msg_usage(cmd->name, "empty --url");
		*url = optarg;
		return -1;
	case OPTS_PROMPT:
		o->prompt = optarg;
		return -1;
	case OPTS_OUT:
		if (optarg[0] == '\0')
			return msg_usage(cmd->name, "empty --out");
		o->out_dir = optarg;
		return -1;
	case OPTS_N:
		return opts_count(cmd, "-n", &o->sim_tokens);
	case OPTS_MAX:
		return opts_count(cmd, "--max-tokens", &o->max_tokens);
	case OPTS_READ:
		return opts_count(cmd, "--read", &o->read_tokens);
	case OPTS_TIMEOUT:
		if (opts_parse_long(optarg, 1, 86400, &o->timeout_s) != TS_OK)
			return msg_usage(cmd->name, "bad --timeout '%s': want "
			    "seconds from 1 to 86400", optarg);
		return -1;
	case OPTS_EVENTS:
		o->events = 1;
		return -1;
	case OPTS_JSON:
		o->json = 1;
		return -1;
	case OPTS_ID_ONLY:
		o->id_only = 1;
		return -1;
	case OPTS_RST:
		o->rst = 1;
		return -1;
	case OPTS_DEBUG_URL:
		o->debug_url = optarg;
		return -1;
	case OPTS_TPOT:
	case OPTS_PREFILL:
		if (opts_parse_long(optarg, 0, 60000, c == OPTS_TPOT ?
		    &o->tpot_ms : &o->prefill_ms) != TS_OK)
			return msg_usage(cmd->name, "bad %s '%s': want "
			    "milliseconds from 0 to 60000", argv[optind - 1],
			    optarg);
		return -1;
	case OPTS_TOKGEN:
		if (optarg[0] == '\0')
			return msg_usage(cmd->name, "empty --tokgen");
		o->tokgen = optarg;
		return -1;
	default:
		return opts_bad_option(cmd->name, c, argv);
	}
}

int
opts_parse(const struct opts_cmd *cmd, int argc, char **argv,
    struct opts *o)
{
	const char *url = OPTS_DEFAULT_URL;
	int c, ret;

	opts_defaults(cmd, o);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, cmd->shortopts, cmd->longopts,
	    NULL)) != -1)
		if ((ret = opts_one(cmd, c, argv, o, &url)) >= 0)
			return ret;
	if (optind < argc)
		return msg_usage(cmd->name, "unexpected argument '%s'",
		    argv[optind]);
	if (cmd->need_out && o->out_dir == NULL)
		return msg_usage(cmd->name, "--out DIR is required");
	if (strcmp(cmd->name, "cancel") == 0 &&
	    o->read_tokens > o->max_tokens)
		return msg_usage(cmd->name,
		    "--read %ld is more than --max-tokens %ld",
		    o->read_tokens, o->max_tokens);
	o->url = opts_base_url(url);
	return -1;
}
