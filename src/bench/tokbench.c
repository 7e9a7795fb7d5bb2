/*
 * tokbench.c - tokstream's measurement client: TTFT, ITL and E2E latency,
 * cancellation and determinism, seen from the client's side of the wire.
 * This file only dispatches: the top-level help, --version, and the
 * subcommands, one file each (cmd.h).
 *
 * Every subcommand but load is one step of the lab; `lab` runs them all.
 * Exit status: 0 success, 1 a step failed (one line on stderr says why),
 * 2 a bad command line.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/ts.h"
#include "bench/client.h"
#include "bench/cmd.h"
#include "bench/msg.h"
#include "bench/opts.h"
#include "bench/outdir.h"

static const struct opts_cmd *const tokbench_cmds[] = {
	&cmd_gen, &cmd_stream, &cmd_ttft, &cmd_itl, &cmd_cancel, &cmd_lab,
	&cmd_load, &cmd_record
};

/* Top-level help. */
static void
tokbench_usage(FILE *f)
{
	fputs("usage: tokbench COMMAND [OPTIONS]\n"
	    "Measures a tokstream server from the client side.\n"
	    "  gen     run tokgen twice and compare (determinism)\n"
	    "  stream  one stream: TTFT, ITL, E2E latency, throughput\n"
	    "  ttft    write DIR/ttft.txt\n"
	    "  itl     write DIR/itl.txt\n"
	    "  cancel  close a stream early; write DIR/cancel.txt\n"
	    "  lab     all of the above; write DIR/report.txt and "
	    "report.json\n"
	    "  load    many streams at once (closed or open loop): TTFT, "
	    "TPOT, ITL,\n"
	    "          E2E latency, throughput, goodput, as vllm bench "
	    "serve\n"
	    "  record  load, and write a trace of the run (-o TRACE): each "
	    "request's\n"
	    "          body, status, headers, every chunk with its arrival; "
	    "the\n"
	    "          concurrency over time\n"
	    "Run `tokbench COMMAND --help` for a command's options.\n"
	    "Exit status: 0 ok, 1 a measurement failed, 2 usage error.\n",
	    f);
}

/*
 * Runs a subcommand whose command line is parsed (for one that parses
 * its own, cmd->main): the options, the --out directory, libcurl, then
 * the step. Returns the exit status.
 */
static int
tokbench_run(const struct opts_cmd *cmd, int argc, char **argv)
{
	struct opts o;
	int ret;

	memset(&o, 0, sizeof(o));
	if (cmd->main == NULL) {
		if ((ret = opts_parse(cmd, argc, argv, &o)) >= 0)
			return ret;
		if (o.out_dir != NULL && outdir_mkdir_p(o.out_dir) != TS_OK) {
			free(o.url);
			return 1;
		}
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		msg_err("curl_global_init failed");
		free(o.url);
		return 1;
	}
	ret = cmd->main != NULL ? cmd->main(argc, argv) : cmd->run(&o);
	fflush(stdout);
	curl_global_cleanup();
	free(o.url);
	return ret;
}

int
main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		tokbench_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		tokbench_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("tokbench %s (libcurl %s, jansson %s)\n",
		    client_version(),
		    curl_version_info(CURLVERSION_NOW)->version,
		    JANSSON_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(tokbench_cmds) / sizeof(tokbench_cmds[0]); i++)
		if (strcmp(argv[1], tokbench_cmds[i]->name) == 0)
			return tokbench_run(tokbench_cmds[i], argc - 1,
			    argv + 1);
	fprintf(stderr, "tokbench: unknown command '%s' (see tokbench "
	    "--help)\n", argv[1]);
	return 2;
}
