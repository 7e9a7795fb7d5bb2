/*
 * handlers/submit.c - prompt counting, context check and queueing
 * (submit.h).
 */
#include "handlers/submit.h"

#include "transport/conn.h"
#include "stores/metrics.h"
#include "handlers/server.h"

int
submit_count_prompt(struct server *srv, struct engine_request *job,
    uint64_t more, struct http_error *err)
{
	const struct engine_backend *be = srv->backend;
	uint64_t ctx = be->context_len(be->impl);
	uint64_t n = 0;

	if (be->count_tokens(be->impl, job->model, job->prompt,
	    job->prompt_len, &n) != TS_OK) {
		http_error_set(err, 400, "invalid_request_error",
		    "context_length_exceeded", "the prompt is longer than the "
		    "model's context of %llu tokens", (unsigned long long)ctx);
		return 400;
	}
	job->prompt_tokens = n;
	if (ctx == 0 || n + more < ctx)
		return 0;
	http_error_set(err, 400, "invalid_request_error",
	    "context_length_exceeded", "the prompt is %llu tokens (+%llu "
	    "to recompute); the model's context is %llu",
	    (unsigned long long)n, (unsigned long long)more,
	    (unsigned long long)ctx);
	return 400;
}

enum ts_err
submit(struct server *srv, struct engine_request *job,
    const struct submit_record *rec, struct conn *c, struct engine_seq **s,
    struct http_error *err)
{
	enum ts_err rc;

	/* the driver that relays it names its listener (engine_seq_listen) */
	job->listener = NULL;
	job->user = c;
	job->hook_arg = rec;
	rc = engine_submit(srv->engine, job, s);
	if (rc == TS_OK) {
		metrics_add(srv->metrics, METRICS_PROMPT_TOKENS,
		    job->prompt_tokens);
	} else if (rc == TS_ELIMIT) {
		metrics_add(srv->metrics, METRICS_REJECTED_QUEUE_FULL, 1);
		http_error_set(err, 429, "rate_limit_error", "queue_full",
		    "the server holds as many streams as it takes (%u slots "
		    "+ %u waiting; streams still sending to slow clients "
		    "count too); retry later", srv->opt->engine.max_num_seqs,
		    srv->opt->engine.max_waiting);
	} else if (rc == TS_EINVAL) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "the stop strings cannot be used");
	} else {
		http_error_set(err, 503, "server_error", "shutdown",
		    "the server is shutting down");
	}
	return rc;
}
