/*
 * cmd.h - tokbench's subcommands, one file each (cmd_<name>.c): their
 * descriptions for the dispatch in tokbench.c, and the steps that `lab`
 * runs again (gen, the ttft and itl files, cancel).
 *
 * Each subcommand's run() returns the exit status: 0 success, 1 a step
 * failed (one line on stderr says why); a bad command line is 2.
 */
#ifndef BENCH_CMD_H
#define BENCH_CMD_H

#include <limits.h>

#include "common/ts.h"
#include "bench/opts.h"
#include "bench/req.h"
#include "bench/stats.h"

extern const struct opts_cmd cmd_gen;
extern const struct opts_cmd cmd_stream;
extern const struct opts_cmd cmd_ttft;
extern const struct opts_cmd cmd_itl;
extern const struct opts_cmd cmd_cancel;
extern const struct opts_cmd cmd_lab;
extern const struct opts_cmd cmd_load;
extern const struct opts_cmd cmd_record;

/* Result of the gen step. */
struct cmd_gen_result {
	char tokgen[PATH_MAX];  /* the program that ran */
	int identical;
	long long bytes;
	long long first_diff;   /* -1 when identical */
};

/*
 * The gen step: tokgen twice with the same arguments into DIR/gen1.txt
 * and DIR/gen2.txt, then a byte comparison (tokgen promises determinism).
 * Prints one summary line. Returns TS_OK even when the outputs differ
 * (g->identical says so); TS_ESYS/TS_EFORMAT when tokgen cannot be run
 * or prints nothing (one line printed).
 */
enum ts_err cmd_gen_run(const struct opts *o, struct cmd_gen_result *g);

/* True when the gen step's outputs were identical; else prints one line
 * saying where they differ. */
int cmd_gen_identical(const struct cmd_gen_result *g);

/* Writes DIR/ttft.txt: "ttft_ms=<integer>" (rounded) of stream q. */
enum ts_err cmd_ttft_write(const struct opts *o, const struct req *q);

/* Writes DIR/itl.txt: "count=<n> p50_ms=<x.xx> p99_ms=<x.xx>". */
enum ts_err cmd_itl_write(const struct opts *o,
    const struct stats_summary *itl);

/* Result of the cancel step. */
struct cmd_cancel_result {
	char request_id[REQ_ID_MAX + 1];
	long max_tokens, read;
	long requested, generated;
	char status[32];
	double poll_ms;         /* from the close to a settled status */
	int polls;
};

/*
 * The cancel step: /stream with o->max_tokens, read o->read_tokens token
 * events, hang up (the socket is closed before the stream's run returns),
 * then poll /_debug/generated until the stream is no longer "running".
 * Prints its summary line (or the id alone under --id-only) and writes
 * DIR/cancel.txt when --out is given. Returns TS_OK, or prints one line
 * and returns the failure (TS_ETIMEDOUT when it kept running).
 */
enum ts_err cmd_cancel_run(const struct opts *o,
    struct cmd_cancel_result *c);

#endif /* BENCH_CMD_H */
