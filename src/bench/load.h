/*
 * load.h - `tokbench load`, a load generator in the manner of vLLM's
 * `vllm bench serve`: many /stream requests at once over the libcurl multi
 * interface (one thread), closed loop (fixed concurrency) or open loop
 * (Poisson arrivals), then the serving report (load_report.h) on stdout and
 * optionally as JSON.
 */
#ifndef LOAD_H
#define LOAD_H

/*
 * Runs the subcommand; argv[0] is "load", the options follow (see
 * `tokbench load --help`). curl_global_init() must have been called.
 * Returns the exit status: 0 the benchmark ran and its report was
 * written, 1 nothing could be measured (no request completed or was
 * abandoned, e.g. the server is down) or the report could not be
 * written, 2 a bad command line.
 */
int load_main(int argc, char **argv);

#endif /* LOAD_H */
