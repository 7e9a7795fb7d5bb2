/*
 * msg.h - tokbench's lines on stderr: one line a failure, prefixed with
 * the program and subcommand ("tokbench: ...", "tokbench load: ..."),
 * and the usage error of a subcommand's command line.
 */
#ifndef BENCH_MSG_H
#define BENCH_MSG_H

/* What every "cannot reach the server" line ends with. */
#define MSG_START_HINT \
	"start it with scripts/tokstream-ctl start (or scripts/run-lab)"

/*
 * Sets the prefix of msg_err() lines, e.g. "tokbench load" (borrowed for
 * the life of the process). The default is "tokbench".
 */
void msg_init(const char *prefix);

/* Prints one "PREFIX: ..." line on stderr. */
void msg_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Prints one "tokbench CMD: ... (see tokbench CMD --help)" line on stderr
 * for a bad command line of subcommand `cmd`. Returns the exit status of
 * a usage error, 2.
 */
int msg_usage(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* BENCH_MSG_H */
