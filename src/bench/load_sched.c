/*
 * load_sched.c - the traffic of a load run (load_sched.h).
 */
#include "bench/load_sched.h"

#include <string.h>

#include "bench/msg.h"

#define LOAD_SCHED_RNG_ARRIVALS 1       /* PRNG stream of the arrivals */
#define LOAD_SCHED_RNG_PLANS 2          /* PRNG stream of the plans */

void
load_sched_init(struct load_sched *s, const struct load_traffic *t,
    const volatile sig_atomic_t *interrupted, int quiet)
{
	memset(s, 0, sizeof(*s));
	s->t = t;
	s->interrupted = interrupted;
	s->quiet = quiet;
	load_rng_seed(&s->arrivals, t->seed, LOAD_SCHED_RNG_ARRIVALS);
	load_rng_seed(&s->plans, t->seed, LOAD_SCHED_RNG_PLANS);
	s->next_arrival_ms = 0.0;
}

void
load_sched_check(struct load_sched *s, double now_ms, size_t in_flight)
{
	const struct load_traffic *t = s->t;
	int by_time = 0;

	if (s->stop_starting)
		return;
	if (t->requests > 0 && s->issued >= (size_t)t->requests)
		s->stop_starting = 1;
	if (t->duration_s > 0 && now_ms >= t->duration_s * 1e3)
		by_time = 1;
	if (s->interrupted != NULL && *s->interrupted) {
		by_time = 1;
		if (!s->quiet)
			msg_err("interrupted: no new requests; waiting for "
			    "%zu in flight (^C again to quit)", in_flight);
	}
	if (by_time) {
		s->stop_starting = 1;
		s->not_started += s->waiting;
		s->waiting = 0;
	}
}

/* The closed loop counts a request as issued when it starts, the open
 * loop when it arrives; either way the bounds are checked at once. */
int
load_sched_next(struct load_sched *s, double now_ms, size_t in_flight,
    struct load_plan *plan)
{
	const struct load_traffic *t = s->t;

	if (t->rate > 0) {
		while (!s->stop_starting && now_ms >= s->next_arrival_ms) {
			s->waiting++;
			s->issued++;
			s->next_arrival_ms += load_rng_gap_ms(&s->arrivals,
			    t->ramp != LOAD_RAMP_NONE ? load_ramp_rate(t->ramp,
			    t->ramp_start, t->ramp_end, s->issued,
			    (uint64_t)t->requests) : t->rate,
			    t->burstiness > 0 ? t->burstiness : 1.0);
			load_sched_check(s, now_ms, in_flight);
		}
		if (s->waiting == 0 || (t->max_concurrency > 0 &&
		    in_flight >= (size_t)t->max_concurrency))
			return 0;
		s->waiting--;
	} else {
		if (s->stop_starting || in_flight >= (size_t)t->concurrency)
			return 0;
		s->issued++;
		load_sched_check(s, now_ms, in_flight + 1);
	}
	load_plan_next(&s->plans, &t->prompt, &t->output, &t->abandon, plan);
	plan->index = s->started++;
	plan->warmup = s->warmup;
	return 1;
}

double
load_sched_wait_ms(const struct load_sched *s, double now_ms)
{
	const struct load_traffic *t = s->t;
	double w = LOAD_SCHED_WAIT_MAX_MS;

	if (!s->stop_starting && t->rate > 0 &&
	    s->next_arrival_ms - now_ms < w)
		w = s->next_arrival_ms - now_ms;
	if (!s->stop_starting && t->duration_s > 0 &&
	    t->duration_s * 1e3 - now_ms < w)
		w = t->duration_s * 1e3 - now_ms;
	return w;
}

int
load_sched_done(const struct load_sched *s)
{
	return s->stop_starting && s->waiting == 0;
}
