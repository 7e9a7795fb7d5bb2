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

/* Server-wide latency model, milliseconds. */
struct engine_latency {
	double prefill_base_ms;       /* default 40 */
	double prefill_per_token_ms;  /* default 0.25 (4,000 prompt tok/s) */
	double tpot_ms;               /* default 20 (50 tokens/s) */
};

/* The defaults above. */
void engine_latency_defaults(struct engine_latency *lat);

/* Modeled prefill time (TTFT) in ms for a prompt of `prompt_tokens`:
 * prefill_base_ms + prefill_per_token_ms x prompt_tokens. */
double engine_prefill_ms(const struct engine_latency *lat,
    uint64_t prompt_tokens);

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

#endif /* TS_ENGINE_LATENCY_H */
