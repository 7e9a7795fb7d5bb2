/*
 * load_sched.h - the traffic of a load run: when the next request starts
 * and what it asks for.
 *
 *   closed loop  concurrency C: C requests in flight; each one that ends
 *                starts the next.
 *   open loop    rate R: Poisson arrivals, exponential inter-arrival times
 *                (mean 1/R s) from a PRNG seeded by the seed; the first
 *                request arrives at once. With burstiness B != 1 the
 *                gaps are gamma (shape B, mean 1/R: vLLM's --burstiness,
 *                load_rng_gap_ms()); with a ramp (vLLM's
 *                --ramp-up-strategy) the gap before arrival i has the
 *                rate load_ramp_rate() gives request i of `requests`. With max_concurrency M an
 *                arrival waits while M requests are in flight, and its
 *                clock starts when it is sent (as vLLM's semaphore does).
 * Bounds: `requests` (requests started) and/or duration_s (no request
 * starts after it; arrivals still waiting then are dropped and counted as
 * not started), and an interrupt flag (^C) that acts as the duration.
 * Each request's plan (prompt and output length, whether and when it
 * hangs up) is drawn when it starts, from a second PRNG stream
 * (load_plan_next()), so a seed gives the same plans whatever the timing.
 */
#ifndef BENCH_LOAD_SCHED_H
#define BENCH_LOAD_SCHED_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"
#include "bench/load_report.h"

/* Longest wait the schedule asks for, in ms. */
#define LOAD_SCHED_WAIT_MAX_MS 1000.0

/* The traffic settings (tokbench load's command line). */
struct load_traffic {
	long concurrency;       /* closed loop: C; 0 in the open loop */
	double rate;            /* open loop: requests/s; 0 = closed loop */
	long max_concurrency;   /* open-loop cap; 0 = none */
	long requests;          /* requests to start; 0 = no bound */
	double duration_s;      /* start no request after this; 0 = none */
	struct load_range prompt, output;
	struct load_abandon abandon;    /* fraction 0 = nobody hangs up */
	uint64_t seed;
	double burstiness;      /* open loop: gamma shape; 1 = Poisson */
	enum load_ramp ramp;    /* open loop: rate ramp; then rate is
				 * ramp_start */
	double ramp_start, ramp_end;    /* req/s */
};

/* The state of the schedule; set up with load_sched_init(). */
struct load_sched {
	const struct load_traffic *t;   /* borrowed for the run */
	const volatile sig_atomic_t *interrupted;       /* or NULL */
	int quiet;              /* no "interrupted" line */
	struct rng arrivals, plans;
	double next_arrival_ms; /* open loop, ms since the start */
	size_t issued;          /* arrivals (open) or starts (closed) */
	size_t started;         /* plans handed out (their index) */
	size_t waiting;         /* open loop: arrivals not yet sent */
	size_t not_started;     /* arrivals dropped at the bound */
	int stop_starting;      /* a bound was reached */
	int warmup;             /* its plans are warm-up requests' */
};

/*
 * Sets up *s for the traffic *t (borrowed for the run). `interrupted`
 * (NULL for none) is a flag a signal handler sets to stop starting
 * requests; unless `quiet`, its effect is told on stderr.
 */
void load_sched_init(struct load_sched *s, const struct load_traffic *t,
    const volatile sig_atomic_t *interrupted, int quiet);

/*
 * Decides whether requests may still start at now_ms (ms since the run
 * started): not after `requests` of them were issued, not after the
 * duration, not after an interrupt. When the stop comes from the clock or
 * the interrupt, arrivals still waiting are dropped (not_started).
 * in_flight is for the message only.
 */
void load_sched_check(struct load_sched *s, double now_ms, size_t in_flight);

/*
 * Whether one more request starts at now_ms with in_flight requests in
 * flight: in the closed loop while fewer than C are; in the open loop,
 * after taking in every arrival due by now, while one waits and the
 * max_concurrency cap allows. Returns 1 with the request's plan in *plan
 * (its index the number of plans handed out before it; the caller starts
 * it before asking again), else 0.
 */
int load_sched_next(struct load_sched *s, double now_ms, size_t in_flight,
    struct load_plan *plan);

/* How long, in ms, the caller may wait from now_ms before the schedule
 * has something to do: the next arrival or the duration bound, at most
 * LOAD_SCHED_WAIT_MAX_MS. May be <= 0. */
double load_sched_wait_ms(const struct load_sched *s, double now_ms);

/* True when no request will start any more (once none is in flight, the
 * run is over). */
int load_sched_done(const struct load_sched *s);

#endif /* BENCH_LOAD_SCHED_H */
