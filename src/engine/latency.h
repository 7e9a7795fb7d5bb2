/*
 * engine/latency.h - the latency model of a simulated model's forward
 * passes, after llm-d-inference-sim's: a prefill whose cost grows with
 * the prompt (it gives TTFT), a decode step per token (TPOT), both scaled
 * by a load factor and blurred by seeded jitter. Milliseconds in, absolute
 * CLOCK_MONOTONIC nanoseconds out. No threads, no I/O.
 */
#ifndef TS_ENGINE_LATENCY_H
#define TS_ENGINE_LATENCY_H

#include <stdint.h>

#define ENGINE_DEFAULT_PREFILL_BASE_MS 40.0
#define ENGINE_DEFAULT_PREFILL_PER_TOKEN_MS 0.25
#define ENGINE_DEFAULT_TPOT_MS 20.0
#define ENGINE_DEFAULT_LOAD_FACTOR 1.0

/* The longest modeled prefill or decode step, ms (one hour): what the
 * sums below are capped at, so that no deadline overflows. */
#define ENGINE_MAX_PASS_MS 3600000.0

/* The most points of a jitter distribution given by percentiles. */
#define ENGINE_DIST_MAX_POINTS 32
#define ENGINE_PROFILE_NAME_MAX 96

/*
 * A jitter distribution, ms: none (std_ms 0 and npoints 0), a normal
 * draw of standard deviation std_ms (the --jitter-* knobs), or, when
 * npoints > 0, an inverse CDF: u uniform in [pct[0], pct[npoints-1]]
 * percent, linear between the points (a fitted profile's residual
 * percentiles). pct increasing within 0..100, ms non-decreasing.
 */
struct engine_dist {
	double std_ms;
	uint32_t npoints;
	double pct[ENGINE_DIST_MAX_POINTS];
	double ms[ENGINE_DIST_MAX_POINTS];
};

/*
 * Server-wide latency model (a latency profile: docs/API.md "Latency
 * profiles"), milliseconds. The command-line knobs fill the default
 * profile; --latency-profile replaces it (engine/profile.h).
 *   prefill of u uncached prompt tokens: prefill_base_ms +
 *     prefill_per_token_ms x u + prefill_per_token2_ms x u^2
 *   a decode step of n sequences whose context is c tokens in all:
 *     tpot_ms + decode_per_seq_ms x n + decode_per_ctx_token_ms x c
 * both times the load factor (engine_load_factor), plus a jitter draw.
 */
struct engine_latency {
	double prefill_base_ms;       /* default 40 */
	double prefill_per_token_ms;  /* default 0.25 (4,000 prompt tok/s) */
	double prefill_per_token2_ms; /* default 0 (attention's quadratic) */
	int prefill_shares_step;      /* 0 (default): a prefill runs beside
				       * the batch; 1: it lengthens the step
				       * its sequence joins (engine.h) */
	double tpot_ms;               /* decode step base, default 20 */
	double decode_per_seq_ms;     /* default 0 */
	double decode_per_ctx_token_ms;  /* default 0 (the KV cache read) */
	struct engine_dist jitter_prefill;
	struct engine_dist jitter_decode;
	char name[ENGINE_PROFILE_NAME_MAX];  /* "default", "preset:NAME",
				       * or the profile's own name */
};

/* The defaults above: the default profile, named "default". */
void engine_latency_defaults(struct engine_latency *lat);

/* Modeled prefill time in ms for `tokens` uncached prompt tokens:
 * prefill_base_ms + prefill_per_token_ms x tokens +
 * prefill_per_token2_ms x tokens^2 (before the load factor), at most
 * ENGINE_MAX_PASS_MS. */
double engine_prefill_ms(const struct engine_latency *lat,
    uint64_t tokens);

/* Modeled decode step in ms for a batch of `seqs` sequences whose
 * context (prompt + generated tokens) is `ctx_tokens` in all: tpot_ms +
 * decode_per_seq_ms x seqs + decode_per_ctx_token_ms x ctx_tokens
 * (before the load factor). */
double engine_decode_ms(const struct engine_latency *lat, uint32_t seqs,
    uint64_t ctx_tokens);

/* CLOCK_MONOTONIC now, in ns. */
int64_t engine_now_ns(void);

/* A duration of `ms` x factor plus `jitter_ns`, in ns, never below 10% of
 * ms x factor (so jitter cannot make a step free or negative). */
int64_t engine_scaled_ns(double ms, double factor, int64_t jitter_ns);

/* Seeded jitter: a normal draw (Box-Muller over SplitMix64) of standard
 * deviation std_ms, in ns; 0 when std_ms <= 0 (no draw then). */
struct engine_jitter {
	uint64_t state;
};
void engine_jitter_seed(struct engine_jitter *j, uint64_t seed);
int64_t engine_jitter_ns(struct engine_jitter *j, double std_ms);

/* A draw of distribution d (struct engine_dist), in ns: 0 for none (no
 * draw then), engine_jitter_ns for a normal one, else one uniform draw
 * through the inverse CDF. */
int64_t engine_dist_ns(struct engine_jitter *j, const struct engine_dist *d);

#endif /* TS_ENGINE_LATENCY_H */
