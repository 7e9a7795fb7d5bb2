/*
 * engine.h - the latency model and the generation loop of one sequence.
 * No libfcgi here: the loop talks to its client through struct engine_io,
 * so the same loop serves SSE streams, JSON answers and unit tests.
 *
 * Latency model (README "Latency model"), standing in for a model's
 * forward passes:
 *   prefill time = prefill_base_ms + prefill_per_token_ms * prompt_tokens
 *   (this is the modeled TTFT: the first token is produced when prefill
 *   ends), then one decode step of tpot_ms per further token. Token k
 *   (1-based) is produced at t0 + prefill + (k - 1) * tpot, where t0 is when
 *   the request was accepted; deadlines are absolute (CLOCK_MONOTONIC), so
 *   a slow write does not shift later tokens.
 * Time passes inside the loop, in io->wait_until, which returns early with
 * TS_EHUP when the client is gone: a client that leaves mid-prefill or
 * mid-decode stops generation at once.
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ts.h"

struct state;

/* Server-wide latency model, milliseconds. */
struct engine_latency {
	double prefill_base_ms;       /* default 40 */
	double prefill_per_token_ms;  /* default 0.25 (4,000 prompt tok/s) */
	double tpot_ms;               /* default 20 (50 tokens/s) */
	double keepalive_ms;          /* default 1000; 0 disables comments */
};

#define ENGINE_DEFAULT_PREFILL_BASE_MS 40.0
#define ENGINE_DEFAULT_PREFILL_PER_TOKEN_MS 0.25
#define ENGINE_DEFAULT_TPOT_MS 20.0
#define ENGINE_DEFAULT_KEEPALIVE_MS 1000.0

/* The defaults above. */
void engine_latency_defaults(struct engine_latency *lat);

/* Modeled prefill time (TTFT) in ms for a prompt of `prompt_tokens`. */
double engine_prefill_ms(const struct engine_latency *lat,
    uint64_t prompt_tokens);

/*
 * How the loop reaches its client. Every callback returns TS_OK, TS_EHUP
 * (the client is gone: the loop stops at once) or another error (the loop
 * stops and reports it). `ctx` is passed back unchanged.
 */
struct engine_io {
	void *ctx;
	/* Delivers token `index` (0-based), text (ptr, len) borrowed for the
	 * call. Must flush and report a failed flush as TS_EHUP. */
	enum ts_err (*on_token)(void *ctx, uint32_t index, const char *text,
	    size_t len);
	/* Writes a keep-alive (an SSE comment) during a silent phase longer
	 * than keepalive_ms. NULL when the response cannot carry one. */
	enum ts_err (*on_keepalive)(void *ctx);
	/* Blocks until the CLOCK_MONOTONIC time deadline_ns, or returns
	 * TS_EHUP as soon as the client is known to be gone. */
	enum ts_err (*wait_until)(void *ctx, int64_t deadline_ns);
};

/* One sequence to generate. */
struct engine_job {
	const char *prompt;       /* borrowed for the call */
	size_t prompt_len;        /* bytes */
	uint64_t prompt_tokens;   /* as counted by gen_tokenize */
	uint32_t max_tokens;
	double prefill_ms;        /* this job's prefill time */
	double tpot_ms;           /* this job's decode step time */
	int32_t error_after;      /* -1, or fail after this many tokens */
	uint32_t start_index;     /* resume: tokens 0..start_index-1 were
				   * sent before; they are recomputed, not
				   * delivered nor counted */
	int64_t t0_ns;            /* CLOCK_MONOTONIC start of the request */
	uint64_t state_id;        /* state record to count into; 0 = none */
};

/* Why the loop ended. */
enum engine_finish {
	ENGINE_FINISH_LENGTH = 1,   /* max_tokens reached */
	ENGINE_FINISH_CANCELLED,    /* the client left (TS_EHUP) */
	ENGINE_FINISH_ERROR,        /* injected error or failed callback */
	ENGINE_FINISH_SHUTDOWN      /* the server is stopping */
};

struct engine_result {
	uint32_t generated;         /* tokens produced (delivered or not),
				     * from start_index on */
	enum engine_finish finish;
	int64_t first_token_ns;     /* when token 0 was produced, 0 if none */
	int64_t end_ns;
};

/*
 * Runs the job: prefill (with keep-alives), then decode steps until
 * max_tokens. Counts every produced token into the state file (when
 * `st` and job->state_id are set) at the moment it is produced, before
 * delivery. `stopping` (may be NULL) is polled at each wait; when it
 * becomes non-zero the loop ends with ENGINE_FINISH_SHUTDOWN.
 * Returns TS_OK when the loop ran to any finish; the finish says why.
 */
enum ts_err engine_run(const struct engine_job *job,
    const struct engine_latency *lat, const struct engine_io *io,
    struct state *st, const atomic_int *stopping,
    struct engine_result *res);

/* CLOCK_MONOTONIC now, in ns. */
int64_t engine_now_ns(void);

#endif /* ENGINE_H */
