/*
 * handlers/record.c - state records and metrics from the engine's hooks
 * (record.h). Runs on the engine thread with its lock held (or in
 * engine_release): each hook is a few atomic stores into shared memory.
 */
#include "handlers/record.h"

#include <stdio.h>
#include <string.h>

#include "stores/metrics.h"
#include "stores/state.h"
#include "handlers/submit.h"

static uint64_t
on_submit(void *ctx, const struct engine_request *r)
{
	struct record_ctx *rc = ctx;
	const struct submit_record *rec = r->hook_arg;
	struct state_start start;
	uint64_t id;

	if (rc->state == NULL)
		return 0;
	memset(&start, 0, sizeof(start));
	start.kind = STATE_KIND_STREAM;
	start.requested = r->max_tokens;
	start.prompt_tokens = r->prompt_tokens;
	start.resume_index = r->start_index;
	if (rec != NULL) {
		start.kind = rec->kind;
		start.resumed_from = rec->resumed_from;
		start.resume_index = rec->resume_index;
		start.key = rec->key;
		start.from_instance = rec->from_instance;
	}
	if (state_begin(rc->state, &start, &id) != TS_OK &&
	    !atomic_exchange(&rc->unrecorded_said, 1))
		/* Once per process; /_debug/generated counts them all. */
		fprintf(stderr, "tokstream-fcgi: every record of the state "
		    "file that stream %llu could take holds a running stream "
		    "(%u records): it runs unrecorded, and so may others "
		    "(/_debug/generated counts them in unrecorded_streams)\n",
		    (unsigned long long)id, state_capacity(rc->state));
	return id;
}

static void
on_tokens(void *ctx, uint64_t id, uint32_t n)
{
	struct record_ctx *rc = ctx;

	if (rc->state != NULL && id != 0)
		state_add_generated(rc->state, id, n);
	metrics_add(rc->metrics, METRICS_GENERATION_TOKENS, n);
}

static void
on_admit(void *ctx, uint64_t id, int64_t queue_ns)
{
	struct record_ctx *rc = ctx;

	if (rc->state != NULL && id != 0)
		state_set_phase(rc->state, id, STATE_PHASE_PREFILL,
		    queue_ns > 0 ? (uint64_t)queue_ns / 1000u : 0);
	metrics_observe(rc->metrics, METRICS_QUEUE, queue_ns);
}

static void
on_prefix(void *ctx, uint64_t id, uint32_t queried, uint32_t hit)
{
	struct record_ctx *rc = ctx;

	if (rc->state != NULL && id != 0)
		state_set_cached(rc->state, id, hit);
	metrics_add(rc->metrics, METRICS_PREFIX_QUERIES, queried);
	metrics_add(rc->metrics, METRICS_PREFIX_HITS, hit);
}

static void
on_kv(void *ctx, uint32_t used, uint32_t nblocks)
{
	struct record_ctx *rc = ctx;

	metrics_gauge_set(rc->metrics, METRICS_KV_USED, used);
	metrics_gauge_set(rc->metrics, METRICS_KV_BLOCKS, nblocks);
}

static void
on_decode(void *ctx, uint64_t id)
{
	struct record_ctx *rc = ctx;

	if (rc->state != NULL && id != 0)
		state_set_phase(rc->state, id, STATE_PHASE_DECODE, 0);
}

static enum state_status
status_of(enum engine_finish f)
{
	switch (f) {
	case ENGINE_FINISH_LENGTH:
	case ENGINE_FINISH_STOP:
		return STATE_DONE;
	case ENGINE_FINISH_CANCELLED:
		return STATE_CANCELLED;
	default:
		return STATE_ERROR;
	}
}

/*
 * The request-level histograms of a sequence that ended, as vLLM
 * records a finished request (vllm/v1/metrics/loggers.py, from
 * FinishedRequestStats: prefill = first token - scheduled, decode = last
 * token - first token, inference = both, TPOT = decode / (tokens - 1),
 * 0 for one token or none); the times are the engine's, not the
 * client's (TTFT, ITL and E2E are measured at the relay). Every finish
 * counts, aborted ones too, as vLLM's; a sequence that never had a token
 * has no prefill or decode time to record.
 */
static void
record_request_stats(struct metrics *m, const struct engine_outcome *o)
{
	metrics_observe_req(m, METRICS_REQ_PROMPT_TOKENS,
	    (int64_t)o->prompt_tokens);
	metrics_observe_req(m, METRICS_REQ_GENERATION_TOKENS, o->generated);
	metrics_observe_req(m, METRICS_REQ_MAX_GENERATION_TOKENS,
	    o->generated);
	if (o->decode_ns >= 0)
		metrics_observe_req(m, METRICS_REQ_DECODE, o->decode_ns);
	if (o->prefill_ns >= 0) {
		metrics_observe_req(m, METRICS_REQ_PREFILL, o->prefill_ns);
		metrics_observe_req(m, METRICS_REQ_INFERENCE, o->prefill_ns +
		    (o->decode_ns > 0 ? o->decode_ns : 0));
	}
	if (o->decode_ns >= 0)
		metrics_observe_req(m, METRICS_REQ_TPOT, o->generated > 1 ?
		    o->decode_ns / (int64_t)(o->generated - 1) : 0);
}

static void
on_finish(void *ctx, uint64_t id, const struct engine_outcome *o)
{
	struct record_ctx *rc = ctx;
	static const enum state_cause causes[] = {
		[ENGINE_CAUSE_NONE] = STATE_CAUSE_NONE,
		[ENGINE_CAUSE_CLIENT_GONE] = STATE_CAUSE_CLIENT_GONE,
		[ENGINE_CAUSE_WRITE_STALL] = STATE_CAUSE_WRITE_STALL,
		[ENGINE_CAUSE_SHUTDOWN] = STATE_CAUSE_SHUTDOWN,
		[ENGINE_CAUSE_SERVER_ERROR] = STATE_CAUSE_SERVER_ERROR,
		[ENGINE_CAUSE_OUTPUT_LIMIT] = STATE_CAUSE_OUTPUT_LIMIT,
	};

	if (rc->state != NULL && id != 0) {
		struct state_finish fin;

		fin.wasted = o->wasted;
		fin.leave_us = o->leave_ns > 0 ? (uint64_t)o->leave_ns / 1000u :
		    0;
		fin.cause = causes[o->cause];
		state_set_finish(rc->state, id, &fin);
		state_end(rc->state, id, status_of(o->finish));
	}
	metrics_add(rc->metrics, METRICS_WASTED_TOKENS, o->wasted);
	record_request_stats(rc->metrics, o);
	switch (o->finish) {
	case ENGINE_FINISH_LENGTH:
		metrics_finished(rc->metrics, METRICS_LENGTH);
		break;
	case ENGINE_FINISH_STOP:
		metrics_finished(rc->metrics, METRICS_STOP);
		break;
	case ENGINE_FINISH_CANCELLED:
	case ENGINE_FINISH_SHUTDOWN:
		metrics_finished(rc->metrics, METRICS_ABORT);
		break;
	case ENGINE_FINISH_ERROR:
	case ENGINE_FINISH_NONE:
		metrics_finished(rc->metrics, METRICS_ERROR);
		break;
	}
}

static void
on_counts(void *ctx, uint32_t running, uint32_t waiting)
{
	struct record_ctx *rc = ctx;

	metrics_gauge_set(rc->metrics, METRICS_RUNNING, running);
	metrics_gauge_set(rc->metrics, METRICS_WAITING, waiting);
}

void
record_hooks(struct engine_hooks *h, struct record_ctx *ctx)
{
	h->ctx = ctx;
	h->on_submit = on_submit;
	h->on_tokens = on_tokens;
	h->on_admit = on_admit;
	h->on_decode = on_decode;
	h->on_finish = on_finish;
	h->on_counts = on_counts;
	h->on_prefix = on_prefix;
	h->on_kv = on_kv;
}
