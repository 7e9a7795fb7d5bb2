/*
 * handlers/submit.c - prompt counting, context check and queueing
 * (submit.h).
 */
#include "handlers/submit.h"

#include "transport/conn.h"
#include "stores/metrics.h"
#include "handlers/server.h"

/*
 * Refuses a prompt over the context with its counts in the message, in
 * the words of vLLM's current check (vllm/renderers/params.py,
 * TokenizeParams._token_len_check):
 *   "You passed {P} input tokens and requested {C} output tokens.
 *    However, the model's context length is only {N} tokens, resulting
 *    in a maximum input length of {N - C} tokens. Please reduce the
 *    length of the input prompt."
 * (older vLLM said "This model's maximum context length is N tokens.
 * However, you requested M tokens (P in the messages, C in the
 * completion). ..."). Here max_tokens is not part of the rule (a
 * sequence whose cache fills ends there), which keeps one position
 * for output and, for a resumed stream, `more` for the tokens it
 * recomputes: the maximum input length is N - 1 - more, and the
 * message claims no output count. A prompt the backend refused on its
 * byte length alone (count 0: too long at the longest token, not
 * encoded, as vLLM's _text_len_check) is told in bytes.
 */
static void
submit_context_error(const struct engine_backend *be,
    const struct engine_request *job, uint64_t n, uint64_t more,
    uint64_t ctx, struct http_error *err)
{
	unsigned long long max = ctx > more + 1 ? ctx - more - 1 : 0;

	if (n == 0)
		http_error_set(err, 400, "invalid_request_error",
		    "context_length_exceeded", "You passed %zu input bytes. "
		    "However, the model's context length is only %llu tokens "
		    "of at most %u bytes each. Please reduce the length of "
		    "the input prompt.", job->prompt_len,
		    (unsigned long long)ctx, be->max_token_bytes);
	else if (more == 0)
		http_error_set(err, 400, "invalid_request_error",
		    "context_length_exceeded", "You passed %llu input tokens. "
		    "However, the model's context length is only %llu tokens, "
		    "resulting in a maximum input length of %llu tokens. "
		    "Please reduce the length of the input prompt.",
		    (unsigned long long)n, (unsigned long long)ctx, max);
	else
		http_error_set(err, 400, "invalid_request_error",
		    "context_length_exceeded", "You passed %llu input tokens "
		    "and %llu sent tokens to recompute. However, the model's "
		    "context length is only %llu tokens, resulting in a "
		    "maximum input length of %llu tokens. Please reduce the "
		    "length of the input prompt.", (unsigned long long)n,
		    (unsigned long long)more, (unsigned long long)ctx, max);
}

int
submit_count_prompt(struct server *srv, struct engine_request *job,
    uint64_t more, struct http_error *err)
{
	const struct engine_backend *be = srv->backend;
	uint64_t ctx = be->context_len(be->impl);
	uint64_t n = 0;

	if (be->count_tokens(be->impl, job->model, job->prompt,
	    job->prompt_len, &n) != TS_OK) {
		submit_context_error(be, job, n, more, ctx, err);
		return 400;
	}
	job->prompt_tokens = n;
	if (ctx == 0 || n + more < ctx)
		return 0;
	submit_context_error(be, job, n, more, ctx, err);
	return 400;
}

/*
 * The 400 for a request engine_submit refused with TS_EINVAL: why, from
 * engine_refusal (the same checks, in engine_submit's order), in the
 * words the /v1 handlers use when they refuse the same thing before
 * submitting.
 */
static void
submit_refused(struct server *srv, const struct engine_request *job,
    struct http_error *err)
{
	const char *be = srv->backend->name;

	switch (engine_refusal(srv->engine, job)) {
	case ENGINE_REFUSAL_LOGPROBS:
		http_error_set(err, 400, "invalid_request_error",
		    "unsupported_parameter", "The %s backend has no "
		    "logprobs.", be);
		http_error_set_param(err, "logprobs");
		return;
	case ENGINE_REFUSAL_GUIDE:
		http_error_set(err, 400, "invalid_request_error",
		    "unsupported_parameter", "The %s backend cannot make "
		    "tool calls, JSON output or echoes (it has no guided "
		    "decoding).", be);
		return;
	case ENGINE_REFUSAL_STOP_EMPTY:
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "a stop string is empty");
		break;
	case ENGINE_REFUSAL_STOP_LONG:
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "a stop string is longer than %d bytes",
		    STOP_MAX_BYTES);
		break;
	case ENGINE_REFUSAL_STOP_UTF8:
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "a stop string is not valid UTF-8");
		break;
	case ENGINE_REFUSAL_NONE:
	default:
		/* engine_submit's copy of the request was refused though
		 * the request was not: a bug, not the client's fault */
		http_error_set(err, 500, "server_error", "submit_failed",
		    "the request could not be queued");
		return;
	}
	http_error_set_param(err, "stop");
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
		submit_refused(srv, job, err);
	} else if (rc == TS_ESHUTDOWN) {
		http_error_set(err, 503, "server_error", "shutdown",
		    "the server is shutting down");
	} else {
		http_error_set(err, 500, "server_error", "submit_failed",
		    "the request could not be queued (%s)",
		    ts_strerror(rc));
	}
	return rc;
}
