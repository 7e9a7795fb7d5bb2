/*
 * engine.c - latency model and the per-sequence generation loop. See
 * engine.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "engine.h"

#include <time.h>

#include "gen.h"
#include "state.h"

void
engine_latency_defaults(struct engine_latency *lat)
{
	lat->prefill_base_ms = ENGINE_DEFAULT_PREFILL_BASE_MS;
	lat->prefill_per_token_ms = ENGINE_DEFAULT_PREFILL_PER_TOKEN_MS;
	lat->tpot_ms = ENGINE_DEFAULT_TPOT_MS;
	lat->keepalive_ms = ENGINE_DEFAULT_KEEPALIVE_MS;
}

double
engine_prefill_ms(const struct engine_latency *lat, uint64_t prompt_tokens)
{
	return lat->prefill_base_ms +
	    lat->prefill_per_token_ms * (double)prompt_tokens;
}

int64_t
engine_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Waits until `deadline`, writing a keep-alive whenever the client has
 * seen nothing for keepalive_ns (C03/C13: a silent phase must write, or a
 * client that left is never noticed and a proxy may time the stream out).
 * *last_write_ns is when the client last got bytes.
 */
static enum ts_err
wait_with_keepalive(const struct engine_io *io, int64_t deadline,
    int64_t keepalive_ns, int64_t *last_write_ns,
    const atomic_int *stopping)
{
	enum ts_err rc;

	for (;;) {
		int64_t next = deadline;
		int ka = 0;

		if (stopping != NULL && atomic_load(stopping))
			return TS_ETIMEDOUT;
		if (io->on_keepalive != NULL && keepalive_ns > 0 &&
		    *last_write_ns + keepalive_ns < deadline) {
			next = *last_write_ns + keepalive_ns;
			ka = 1;
		}
		/* Wake at least every 100 ms to notice a shutdown. */
		if (stopping != NULL && next - engine_now_ns() > 100000000) {
			next = engine_now_ns() + 100000000;
			ka = 0;
		}
		rc = io->wait_until(io->ctx, next);
		if (rc != TS_OK)
			return rc;
		if (ka) {
			rc = io->on_keepalive(io->ctx);
			if (rc != TS_OK)
				return rc;
			*last_write_ns = engine_now_ns();
		}
		if (next >= deadline && engine_now_ns() >= deadline)
			return TS_OK;
	}
}

enum ts_err
engine_run(const struct engine_job *job, const struct engine_latency *lat,
    const struct engine_io *io, struct state *st,
    const atomic_int *stopping, struct engine_result *res)
{
	struct gen_stream g;
	int64_t keepalive_ns = ts_ms_to_ns(lat->keepalive_ms);
	int64_t tpot_ns = ts_ms_to_ns(job->tpot_ms);
	int64_t deadline = job->t0_ns + ts_ms_to_ns(job->prefill_ms);
	int64_t last_write = job->t0_ns;
	enum ts_err rc;
	uint32_t k;

	res->generated = 0;
	res->first_token_ns = 0;
	res->finish = ENGINE_FINISH_LENGTH;
	gen_init(&g, job->prompt, job->prompt_len);
	/* A resumed sequence recomputes the tokens already sent (its prefill
	 * was priced over them by the caller) and goes on from there. */
	for (k = 0; k < job->start_index && k < job->max_tokens; k++)
		gen_next(&g);
	for (k = job->start_index; k < job->max_tokens; k++) {
		const char *text;
		size_t len;
		uint32_t id;

		/* Prefill for k == 0, one decode step after that. */
		rc = wait_with_keepalive(io, deadline, keepalive_ns,
		    &last_write, stopping);
		if (rc != TS_OK)
			goto stopped;
		/* >=: a resumed sequence that starts past the error hits it
		 * at once, as the original stream did. */
		if (job->error_after >= 0 && k >= (uint32_t)job->error_after) {
			res->finish = ENGINE_FINISH_ERROR;
			goto out;
		}
		id = gen_next(&g);
		res->generated++;
		if (k == job->start_index)
			res->first_token_ns = engine_now_ns();
		if (st != NULL && job->state_id != 0)
			state_add_generated(st, job->state_id, 1);
		text = gen_token_text(id, &len);
		rc = io->on_token(io->ctx, k, text, len);
		if (rc != TS_OK)
			goto stopped;
		last_write = engine_now_ns();
		deadline += tpot_ns;
	}
	if (job->start_index >= job->max_tokens) {
		/* Nothing to decode, but the prompt is still prefilled. */
		rc = wait_with_keepalive(io, deadline, keepalive_ns,
		    &last_write, stopping);
		if (rc != TS_OK)
			goto stopped;
	}
	goto out;
stopped:
	if (rc == TS_EHUP)
		res->finish = ENGINE_FINISH_CANCELLED;
	else if (rc == TS_ETIMEDOUT)
		res->finish = ENGINE_FINISH_SHUTDOWN;
	else
		res->finish = ENGINE_FINISH_ERROR;
out:
	res->end_ns = engine_now_ns();
	return TS_OK;
}
