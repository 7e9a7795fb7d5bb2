/*
 * handlers/record.h - the engine's hooks (engine.h struct engine_hooks) as
 * the server keeps them: every request's record in the state file
 * (stores/state.h: what /_debug/generated shows) and the counters and
 * gauges of /metrics (stores/metrics.h).
 */
#ifndef TS_HANDLERS_RECORD_H
#define TS_HANDLERS_RECORD_H

#include <stdatomic.h>

#include "engine/engine.h"

struct metrics;
struct state;

/* What the hooks write to; both borrowed for the engine's life. */
struct record_ctx {
	struct state *state;       /* NULL: no records */
	struct metrics *metrics;   /* NULL: no metrics */
	atomic_int unrecorded_said; /* the log said a stream ran without a
				     * record (once per process) */
};

/* Fills *h with hooks over *ctx. The on_submit hook opens the record
 * from the request's hook_arg, a struct submit_record (handlers/submit.h),
 * or a plain stream record when it is NULL. */
void record_hooks(struct engine_hooks *h, struct record_ctx *ctx);

#endif /* TS_HANDLERS_RECORD_H */
