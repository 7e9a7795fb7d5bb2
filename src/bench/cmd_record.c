/*
 * cmd_record.c - `tokbench record -o TRACE [the options of load]`: runs
 * the workload of `tokbench load` against any server and endpoint it
 * speaks, prints the same report, and writes the trace of the run
 * (docs/TOKBENCH.md "Record"; the format: trace/trace.h): per request
 * the body sent, the status and headers, every read of the answer with
 * its arrival, the token events, the usage; and the concurrency over
 * time. This file reads the command line; the run is load's
 * (cmd_load_exec()), the recording record.c's.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/cmd.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "trace/trace.h"
#include "bench/load.h"
#include "bench/load_opts.h"
#include "bench/msg.h"

/* --record-max-bytes: the default (1 GiB) and the bounds. */
#define CMD_RECORD_MAX_DEFAULT ((size_t)1 << 30)
#define CMD_RECORD_MAX_MIN ((size_t)1 << 16)
#define CMD_RECORD_MAX_MAX ((size_t)1 << 40)

static const char cmd_record_usage[] =
    "usage: tokbench record -o TRACE [--record-max-bytes N] [the options of "
    "load]\n"
    "Runs the workload of `tokbench load` (the same options: traffic, "
    "bound,\n"
    "requests, endpoint, dataset, warm-up) against any server, prints the "
    "same\n"
    "report, and writes the trace of the run to TRACE: JSONL, a header "
    "line,\n"
    "one line per request in the order they started (the body sent, the\n"
    "status and headers, every read of the answer with its arrival in us "
    "from\n"
    "the request's start, the token events, the usage's prompt, output "
    "and\n"
    "cached tokens, the error), then the concurrency over time (docs/\n"
    "TOKBENCH.md, \"The trace format, version 1\"). Warm-up requests are "
    "in it\n"
    "with \"warmup\":true.\n"
    "  -o, --output TRACE        the trace file (created or truncated)\n"
    "      --record-max-bytes N  most bytes the recording holds in memory "
    "(the\n"
    "                            answers of the requests in flight, lines "
    "that\n"
    "                            wait for an earlier request); K, M, G "
    "suffixes\n"
    "                            (powers of 1024); default 1G. Past it the "
    "run\n"
    "                            starts no request, cuts those in flight, "
    "writes\n"
    "                            what it has and exits 1\n"
    "Exit status: as load's; also 1 when the trace cannot be written or "
    "the\n"
    "recording passed --record-max-bytes.\n"
    "The options of load:\n\n";

/* Parses --record-max-bytes's value: digits, then K, M or G (powers of
 * 1024). Returns TS_OK, or TS_EINVAL outside the bounds. */
static enum ts_err
cmd_record_bytes(const char *s, size_t *out)
{
	unsigned long long v = 0, mul = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return TS_EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > CMD_RECORD_MAX_MAX)
			return TS_EINVAL;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	if (*p == 'K' || *p == 'k')
		mul = 1ULL << 10;
	else if (*p == 'M' || *p == 'm')
		mul = 1ULL << 20;
	else if (*p == 'G' || *p == 'g')
		mul = 1ULL << 30;
	if (mul != 1)
		p++;
	if (*p != '\0' || v > CMD_RECORD_MAX_MAX / mul ||
	    v * mul < CMD_RECORD_MAX_MIN)
		return TS_EINVAL;
	*out = (size_t)(v * mul);
	return TS_OK;
}

/* The header's "options": the command line (the --api-key's value
 * hidden) and the settings load parsed from it. */
static json_t *
cmd_record_options(const struct load_opts *o, int argc, char **argv,
    size_t max_bytes)
{
	static const char *const ds[] = {"random", "repeat", "sharegpt",
	    "jsonl"};
	const struct load_traffic *t = &o->traffic;
	json_t *j = json_object(), *a = json_array();
	int i;

	for (i = 0; i < argc; i++) {
		if (i > 0 && strcmp(argv[i - 1], "--api-key") == 0)
			json_array_append_new(a, json_string("(hidden)"));
		else if (strncmp(argv[i], "--api-key=", 10) == 0)
			json_array_append_new(a,
			    json_string("--api-key=(hidden)"));
		else
			json_array_append_new(a, trace_bytes_json(argv[i],
			    strlen(argv[i])));
	}
	json_object_set_new(j, "argv", a);
	json_object_set_new(j, "endpoint",
	    json_string(load_endpoint_path(o->endpoint)));
	json_object_set_new(j, "concurrency", json_integer(t->concurrency));
	json_object_set_new(j, "rate", json_real(t->rate));
	json_object_set_new(j, "max_concurrency",
	    json_integer(t->max_concurrency));
	json_object_set_new(j, "requests", json_integer(t->requests));
	json_object_set_new(j, "duration_s", json_real(t->duration_s));
	json_object_set_new(j, "prompt_tokens", json_pack("[I,I]",
	    (json_int_t)t->prompt.min, (json_int_t)t->prompt.max));
	json_object_set_new(j, "output_tokens", json_pack("[I,I]",
	    (json_int_t)t->output.min, (json_int_t)t->output.max));
	json_object_set_new(j, "seed", json_integer((json_int_t)(t->seed &
	    INT64_MAX)));
	json_object_set_new(j, "burstiness", json_real(t->burstiness));
	json_object_set_new(j, "dataset", json_string(ds[o->dataset]));
	json_object_set_new(j, "warmup", json_integer(o->warmup));
	json_object_set_new(j, "tpot_ms", o->tpot_ms >= 0 ?
	    json_integer(o->tpot_ms) : json_null());
	json_object_set_new(j, "prefill_ms", o->prefill_ms >= 0 ?
	    json_integer(o->prefill_ms) : json_null());
	json_object_set_new(j, "timeout_s", json_real(o->timeout_s));
	json_object_set_new(j, "ignore_eos", json_boolean(o->ignore_eos));
	json_object_set_new(j, "abandon", json_pack("[f,I]",
	    t->abandon.fraction, (json_int_t)t->abandon.after_tokens));
	json_object_set_new(j, "record_max_bytes",
	    json_integer((json_int_t)max_bytes));
	return j;
}

/*
 * record: takes -o/--output and --record-max-bytes out of the command
 * line, hands the rest to load's parser, runs. argv[0] is "record".
 */
static int
cmd_record_main(int argc, char **argv)
{
	struct load_record_opts ro;
	struct load_opts o;
	const char *path = NULL, *a, *v;
	size_t max_bytes = CMD_RECORD_MAX_DEFAULT;
	char **av = xcalloc((size_t)argc + 1, sizeof(*av));
	json_t *options;
	int i, ac = 0, ret;

	msg_init("tokbench record");
	av[ac++] = argv[0];
	for (i = 1; i < argc; i++) {
		a = argv[i];
		v = NULL;
		if (strcmp(a, "--") == 0) {
			while (i < argc)
				av[ac++] = argv[i++];
			break;
		}
		if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 ||
		    strcmp(a, "--record-max-bytes") == 0) {
			if (i + 1 >= argc) {
				free(av);
				return msg_usage("record", "%s needs a value",
				    a);
			}
			v = argv[++i];
		} else if (strncmp(a, "--output=", 9) == 0) {
			v = a + 9;
			a = "--output";
		} else if (strncmp(a, "-o", 2) == 0 && a[2] != '\0') {
			v = a + 2;
			a = "-o";
		} else if (strncmp(a, "--record-max-bytes=", 19) == 0) {
			v = a + 19;
			a = "--record-max-bytes";
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(cmd_record_usage, stdout);
		}
		if (v == NULL) {
			av[ac++] = argv[i];
		} else if (strcmp(a, "--record-max-bytes") == 0) {
			if (cmd_record_bytes(v, &max_bytes) != TS_OK) {
				free(av);
				return msg_usage("record", "bad "
				    "--record-max-bytes '%s': want bytes from "
				    "64K to 1024G (K, M, G: powers of 1024)",
				    v);
			}
		} else {
			path = v;
		}
	}
	if ((ret = load_opts_parse(ac, av, &o)) >= 0) {
		free(av);
		return ret;
	}
	if (path == NULL || path[0] == '\0' || strcmp(path, "-") == 0) {
		free(av);
		free(o.url);
		return msg_usage("record", "give -o TRACE, the file to write "
		    "(not stdout: the report goes there)");
	}
	options = cmd_record_options(&o, argc, argv, max_bytes);
	memset(&ro, 0, sizeof(ro));
	ro.path = path;
	ro.max_bytes = max_bytes;
	ro.options = options;
	ret = cmd_load_exec(&o, &ro);
	json_decref(options);
	free(o.url);
	free(av);
	return ret;
}

const struct opts_cmd cmd_record = {
	"record", NULL, NULL, NULL, NULL, 0, 0, cmd_record_main
};
