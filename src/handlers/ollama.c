/*
 * handlers/ollama.c - Ollama's API (docs/API.md "Ollama API"; ollama/ollama
 * docs/api.md): POST /api/chat and /api/generate, streamed as NDJSON (one
 * object per line, application/x-ndjson, a line per token) or answered
 * as one object, and GET /api/tags, /api/ps, /api/version, POST
 * /api/show. Parsing and encoding are src/ollama/'s; this file runs the
 * request through the engine as handlers/v1.c does: the body's limits,
 * the prompt counted, failure injection's header, the plan (tool calls,
 * format), the submit, the relay, the record in /_debug/generated.
 *
 * NDJSON has no comment line, and the npm client (ollama 0.6.4
 * browser.mjs, parseJSON) warns on every line that is not an object, so
 * a stream sends no keep-alive while it waits (queue, prefill): a client
 * that leaves then is noticed at the first token's write. A stream that
 * cannot go on ends with a last line {"error":"..."}, as Ollama's own
 * handlers write it (server/routes.go, streamResponse). A stream has no
 * resume (no event ids): a client that reconnects starts again.
 */
#define _GNU_SOURCE     /* clock_gettime, CLOCK_REALTIME */
#include "config.h"

#include "handlers/ollama.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rng.h"
#include "handlers/inject.h"
#include "handlers/server.h"
#include "handlers/submit.h"
#include "ollama/encode.h"
#include "ollama/plan.h"
#include "proto/chat.h"
#include "stores/metrics.h"
#include "text/think.h"
#include "transport/conn.h"
#include "transport/relay.h"
#include "transport/reply.h"

_Static_assert(OLLAMA_MAX_STOP <= STOP_MAX, "every stop string reaches "
    "the engine");

/* One Ollama response in flight: owned by its relay from the hand-off
 * on. */
struct oll_resp {
	struct reply reply;
	struct relay relay;
	struct ollama_request req;
	struct ollama_plan plan;
	struct ollama_meta meta;
	struct ts_buf text;           /* the answer so far (not streamed, or
				       * a tool-call answer) */
	struct ts_buf thinking;       /* the thinking so far (not streamed) */
	uint32_t think;               /* thinking tokens (text/think.h) */
	uint64_t prompt_tokens;
	int32_t error_after;
	int injected;                 /* a mid-stream failure to count if it
				       * fires (enum inject_kind), or 0 */
	int silent;                   /* an injected failure keeps from the
				       * client: OLL_SILENT_END, _ALL */
};

/* What an injected failure keeps from the client (inject.h), as /v1. */
enum {
	OLL_SPEAKS = INJECT_SPEAKS,         /* everything is sent */
	OLL_SILENT_ALL = INJECT_SILENT_ALL, /* timeout: not a byte */
	OLL_SILENT_END = INJECT_SILENT_END  /* midstream_cut: no end after
					     * the tokens */
};

/* What oll_build makes of a request and oll_start runs. */
struct oll_job {
	struct engine_request job;
	struct submit_record rec;
	struct ts_buf prompt;
	const char *stop[STOP_MAX];
	size_t stop_len[STOP_MAX];
};

/* The wall clock in ns since the Unix epoch: created_at. */
static int64_t
oll_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Appends an error answer (head, {"error"}, newline) to b: the head only
 * when none went out yet (a committed non-streamed answer). */
static enum ts_err
oll_error_buf(struct reply *rp, struct ts_buf *b, const struct http_error *err,
    const char *extra, uint64_t id)
{
	enum ts_err rc = reply_head_buf(rp, b, err->status, "application/json",
	    id, extra);

	if (rc == TS_OK)
		rc = ollama_error_json(err, b);
	if (rc == TS_OK)
		rc = ts_buf_append(b, "\n", 1);
	return rc;
}

void
ollama_fail(struct reply *rp, const struct http_error *err,
    const char *extra)
{
	struct ts_buf b;

	ts_buf_init(&b, 64 * 1024);
	if (oll_error_buf(rp, &b, err, extra, 0) == TS_OK)
		conn_write(rp->conn, b.p, b.len);
	ts_buf_free(&b);
}

/* Counts an injected mid-stream failure that ended the response. */
static void
oll_fired(struct relay *r, enum engine_finish f)
{
	struct oll_resp *ol = r->resp;

	if (ol->injected != 0 && f == ENGINE_FINISH_ERROR)
		metrics_injected(r->env.metrics, ol->injected);
	ol->injected = 0;
}

static void
oll_resp_free(struct relay *r)
{
	struct oll_resp *ol = r->resp;

	ollama_request_free(&ol->req);
	ollama_plan_free(&ol->plan);
	ts_buf_free(&ol->text);
	ts_buf_free(&ol->thinking);
	free(ol);
}

/* The final object's metrics from the sequence's last view: the queue
 * (load_duration), the prefill (prompt_eval_duration: a slot to the first
 * token) and the decode (eval_duration: the first token to the end), as
 * the engine clocked them; total_duration to now. */
static void
oll_stats(struct relay *r, enum engine_finish f, const struct engine_view *v,
    struct ollama_stats *st)
{
	struct oll_resp *ol = r->resp;
	int64_t t0 = ol->reply.t0, now = r->env.now();
	int64_t admit = v->admit_ns > 0 ? v->admit_ns : t0;
	int64_t first = v->first_ns > 0 ? v->first_ns : 0;
	int64_t end = v->end_ns > 0 ? v->end_ns : now;

	memset(st, 0, sizeof(*st));
	st->done = f == ENGINE_FINISH_LENGTH ? OLLAMA_DONE_LENGTH :
	    OLLAMA_DONE_STOP;
	st->total_ns = now > t0 ? now - t0 : 0;
	st->load_ns = admit > t0 ? admit - t0 : 0;
	st->prompt_eval_count = ol->prompt_tokens;
	st->prompt_eval_ns = (first > 0 ? first : end) - admit;
	if (st->prompt_eval_ns < 0)
		st->prompt_eval_ns = 0;
	st->eval_count = v->generated;
	st->eval_ns = first > 0 && end > first ? end - first : 0;
}

/*
 * A tool-call answer's calls from the text released so far: the calls
 * whose arguments came whole (an object), in order; the first cut short
 * (num_predict) and those after it are left out, and *rest tells where
 * the text the calls do not take starts (the cut call's bytes: its
 * answer's content, as a model's unparsed output is in Ollama).
 */
static size_t
oll_calls(const struct oll_resp *ol, struct ollama_call *out, size_t *rest)
{
	size_t i, m = 0, have = ol->text.len;
	json_error_t je;
	json_t *j;

	*rest = have;
	for (i = 0; i < ol->plan.ncalls; i++) {
		const struct ollama_plan_call *c = &ol->plan.calls[i];

		if (c->off + c->len > have) {
			*rest = c->off < have ? c->off : have;
			break;
		}
		j = json_loadb(ol->text.p + c->off, c->len, 0, &je);
		if (!json_is_object(j)) {
			json_decref(j);
			*rest = c->off;
			break;
		}
		json_decref(j);
		out[m].name = ol->req.tools[c->tool].name;
		out[m].name_len = ol->req.tools[c->tool].name_len;
		out[m].args = ol->text.p + c->off;
		out[m].args_len = c->len;
		m++;
		*rest = c->off + c->len;
	}
	return m;
}

/* A stream's token: one object per released text; a tool-call answer's
 * text is kept until the end (Ollama sends whole calls). */
static enum ts_err
oll_stream_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct oll_resp *ol = r->resp;
	enum ts_err rc;

	if (len == 0 || ol->silent == OLL_SILENT_ALL)
		return TS_OK;
	if (ol->plan.ncalls > 0)
		return ts_buf_append(&ol->text, text, len) == TS_OK ? TS_OK :
		    TS_ELIMIT;
	rc = think_is_thinking(ol->think, index) ?
	    ollama_encode_thinking_chunk(out, &ol->meta, oll_wall_ns(), text,
	    len) :
	    ollama_encode_chunk(out, &ol->meta, oll_wall_ns(), text, len);
	if (rc != TS_OK)
		return rc;      /* TS_ELIMIT: out is full */
	*event = 1;
	return TS_OK;
}

/* The end of a stream: the calls' object (a tool-call answer), then the
 * final object; or the error line. */
static enum ts_err
oll_stream_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct oll_resp *ol = r->resp;
	struct ollama_call calls[OLLAMA_PLAN_MAX_CALLS];
	struct ollama_stats st;
	struct http_error err;
	size_t mark = out->len, n = 0, rest = 0;
	int64_t now = oll_wall_ns();
	enum ts_err rc = TS_OK;

	oll_fired(r, f);
	if (ol->silent != OLL_SPEAKS)
		return TS_OK;   /* an injected cut: the stream just stops */
	if (reply_finish_error(ol->error_after, f, &err)) {
		rc = ollama_error_json(&err, out);
		if (rc == TS_OK)
			rc = ts_buf_append(out, "\n", 1);
		return rc;
	}
	oll_stats(r, f, v, &st);
	if (ol->plan.ncalls > 0) {
		n = oll_calls(ol, calls, &rest);
		if (n > 0)
			rc = ollama_encode_calls_chunk(out, &ol->meta, now,
			    calls, n);
		if (rc == TS_OK && rest < ol->text.len)
			rc = ollama_encode_chunk(out, &ol->meta, now,
			    ol->text.p + rest, ol->text.len - rest);
	}
	if (rc == TS_OK)
		rc = ollama_encode_final(out, &ol->meta, now, "", 0, NULL, 0,
		    &st);
	if (rc != TS_OK)
		out->len = mark;
	return rc;
}

static const struct relay_ops oll_stream_ops = {
	.token = oll_stream_token,
	.keepalive = NULL,      /* NDJSON has no line a client skips */
	.end = oll_stream_end,
	.free = oll_resp_free,
	.tokens_reach_client = 1,
};

static enum ts_err
oll_collect_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct oll_resp *ol = r->resp;

	(void)out;
	(void)event;
	return ts_buf_append(think_is_thinking(ol->think, index) ?
	    &ol->thinking : &ol->text, text, len) == TS_OK ? TS_OK :
	    TS_ELIMIT;
}

/* The whole answer: one object with the text (or the calls) and the
 * metrics; or the error with its status (unless a keep-alive committed
 * the 200: then the error is the 200's body). */
static enum ts_err
oll_answer_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct oll_resp *ol = r->resp;
	struct ollama_call calls[OLLAMA_PLAN_MAX_CALLS];
	struct ollama_stats st;
	struct http_error err;
	size_t n = 0, rest = 0, mark;
	enum ts_err rc;

	oll_fired(r, f);
	if (ol->silent != OLL_SPEAKS)
		return TS_OK;   /* an injected cut or timeout: no answer */
	if (reply_finish_error(ol->error_after, f, &err))
		return oll_error_buf(r->reply, out, &err, NULL,
		    engine_seq_id(r->seq));
	oll_stats(r, f, v, &st);
	rc = reply_head_buf(r->reply, out, 200, "application/json",
	    engine_seq_id(r->seq), NULL);
	if (rc != TS_OK)
		return rc;
	mark = out->len;
	if (ol->plan.ncalls > 0)
		n = oll_calls(ol, calls, &rest);
	rc = ollama_encode_final_think(out, &ol->meta, oll_wall_ns(),
	    ol->text.p != NULL ? ol->text.p + rest : "", ol->text.len - rest,
	    ol->think == 0 ? NULL : ol->thinking.p != NULL ? ol->thinking.p :
	    "", ol->thinking.len, calls, n, &st);
	if (rc != TS_OK) {
		out->len = mark;
		http_error_set(&err, 500, "server_error", "encode_failed",
		    "the response could not be encoded");
		return oll_error_buf(r->reply, out, &err, NULL,
		    engine_seq_id(r->seq));
	}
	return TS_OK;
}

static const struct relay_ops oll_answer_ops = {
	.token = oll_collect_token,
	.keepalive = relay_json_keepalive,
	.end = oll_answer_end,
	.free = oll_resp_free,
};

/*
 * Failure injection (handlers/inject.h, inject_request) by the request's
 * X-Tokstream-Failure header, honoured with --allow-failure-header as on
 * /v1 (the seeded --failure-injection-rate draws only for /v1): an HTTP
 * failure, or a header refused, is answered in Ollama's shape (returns
 * 1); the others adjust the job (inject_request; a timeout's again at
 * the end of oll_plan, which sets its latency) and the relay's silence
 * (a timeout's connection held silent for INJECT_TIMEOUT_MS). Returns 0
 * to go on.
 */
static int
oll_inject(struct server *srv, struct reply *rp, struct oll_resp *ol,
    struct engine_request *job)
{
	struct inject_verdict v;

	if (inject_request(srv, rp->conn, 0, NULL, job, &v)) {
		ollama_fail(rp, &v.err, v.extra[0] != '\0' ? v.extra : NULL);
		return 1;
	}
	ol->injected = v.on_fire;
	ol->silent = v.silence;
	return 0;
}

/* The sampling of the request and its plan's guide. */
static void
oll_sampling(const struct oll_resp *ol, uint64_t seed,
    struct engine_sampling *sp)
{
	engine_sampling_defaults(sp);
	sp->temperature = ol->req.temperature;
	sp->top_p = ol->req.top_p;
	sp->top_k = ol->req.top_k;
	sp->given = ol->req.sampling_given;
	sp->has_seed = ol->req.has_seed;
	sp->seed = seed;
	if (ol->plan.guided) {
		sp->guide = ol->plan.guide.p != NULL ? ol->plan.guide.p : "";
		sp->guide_len = ol->plan.guide.len;
	}
}

/*
 * Plans the answer (ollama/plan.h) as far as num_predict tokens can
 * carry, frees the compiled schemas, and fills the engine request: the
 * sampling, num_predict, the latency (the lab knobs' or the model's),
 * error_after, the stop strings (not for calls or a format's instance,
 * which the guide ends). 0, or 1 with *err (a 400).
 */
static int
oll_plan(struct server *srv, struct reply *rp, struct oll_resp *ol,
    struct oll_job *oj, struct http_error *err)
{
	struct engine_request *job = &oj->job;
	const struct knobs *kn = &ol->req.knobs;
	uint64_t pseed;
	size_t i;

	pseed = rng_seed_of(job->prompt, job->prompt_len) ^ (ol->req.has_seed ?
	    rng_mix64((uint64_t)ol->req.seed) : 0);
	if (ollama_plan_make(&ol->req, pseed, srv->opt->echo,
	    (size_t)ol->req.num_predict * srv->backend->max_token_bytes,
	    &ol->plan, err) != TS_OK)
		return 1;
	ollama_request_drop_schemas(&ol->req);
	if (ol->plan.guided && !srv->backend->guided) {
		http_error_set(err, 400, "invalid_request_error",
		    "unsupported_parameter", "the %s backend cannot make tool "
		    "calls, JSON output or echoes (it has no guided "
		    "decoding)", srv->backend->name);
		return 1;
	}
	oll_sampling(ol, ol->req.has_seed ? (uint64_t)ol->req.seed : 0,
	    &job->sampling);
	job->max_tokens = ol->req.num_predict;
	job->prefill_ms = kn->prefill_ms >= 0 ? (double)kn->prefill_ms :
	    engine_prefill_ms(&srv->opt->engine.lat, job->prompt_tokens);
	job->prefill_per_token_ms = kn->prefill_ms >= 0 ? 0.0 :
	    srv->opt->engine.lat.prefill_per_token_ms;
	job->tpot_ms = kn->tpot_ms >= 0 ? (double)kn->tpot_ms : -1.0;
	if (job->error_after < 0)
		job->error_after = kn->error_after;
	ol->error_after = job->error_after;
	job->t0_ns = rp->t0;
	oj->rec.kind = ol->req.stream ? STATE_KIND_STREAM :
	    STATE_KIND_GENERATE;
	for (i = 0; !ol->plan.guided && i < ol->req.n_stop; i++) {
		oj->stop[i] = job->stop[i] = ol->req.stop[i];
		oj->stop_len[i] = job->stop_len[i] = ol->req.stop_len[i];
	}
	job->nstop = i;
	/* think (text/think.h): free text only, the calls and a format's
	 * instance stay whole */
	if (!ol->plan.guided && ol->plan.ncalls == 0) {
		ol->think = think_tokens(think_effort_budget(ol->req.effort,
		    srv->opt->reasoning_always), job->max_tokens);
		job->sampling.min_tokens = think_min_tokens(ol->think);
	}
	if (ol->silent == OLL_SILENT_ALL) {
		/* an injected timeout: an error at once, no prefill */
		job->prefill_ms = 0.0;
		job->prefill_per_token_ms = 0.0;
		job->max_tokens = 1;
		job->error_after = 0;
		ol->error_after = 0;
		ol->think = 0;
		job->sampling.min_tokens = 0;
	}
	return 0;
}

/*
 * 1 when a non-streamed answer could outgrow the relay's buffer: each
 * token's text escaped at its worst (the backend's, srv->tokcost), twice
 * for a tool-call answer (the text and its copy in the calls), and the
 * object around it. Bounded before any work, as /v1's answers are.
 */
static int
oll_too_large(const struct server *srv, const struct ollama_request *req)
{
	uint64_t per = srv->tokcost.text > 0 ? srv->tokcost.text :
	    6u * srv->backend->max_token_bytes;
	uint64_t bytes = (uint64_t)req->num_predict * per * 2u +
	    req->model_len * 6u + 64u * 1024u;

	return !req->stream && bytes + 64u * 1024u > RELAY_OUT_MAX;
}

/*
 * Builds the job: reads the body (its size and depth limits), parses it,
 * renders the prompt and counts it, applies injection, plans it. 0, or 1
 * when the request was answered (an error, a "load" answer).
 */
static int
oll_build(struct server *srv, struct reply *rp, enum ollama_kind kind,
    struct oll_resp *ol, struct oll_job *oj)
{
	struct http_error err;
	struct ts_buf body;
	const char *const *names;
	size_t n = server_model_names(srv, &names);
	struct engine_request *job = &oj->job;
	enum ts_err rc;

	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	rc = reply_read_json(rp->conn, &body, &err);
	if (rc == TS_OK)
		rc = ollama_parse_request(kind, body.p ? body.p : "", body.len,
		    names, n, &ol->req, &err);
	ts_buf_free(&body);
	if (rc != TS_OK)
		goto refuse;
	if (oll_too_large(srv, &ol->req)) {
		http_error_set(&err, 400, "invalid_request_error",
		    "answer_too_large", "num_predict %u could make an answer "
		    "over %u bytes: stream it", ol->req.num_predict,
		    RELAY_OUT_MAX);
		goto refuse;
	}
	if (ollama_prompt(&ol->req, &oj->prompt) != TS_OK) {
		http_error_set(&err, 400, "invalid_request_error",
		    "invalid_value", "%s", chat_render_error()[0] ?
		    chat_render_error() : "the prompt is too long");
		goto refuse;
	}
	job->error_after = -1;
	job->prompt = oj->prompt.p ? oj->prompt.p : "";
	job->prompt_len = oj->prompt.len;
	job->model = 0;
	job->prefix_cache = 1;
	if (submit_count_prompt(srv, job, 0, &err))
		goto refuse;
	ol->prompt_tokens = job->prompt_tokens;
	if (oll_inject(srv, rp, ol, job) != 0)
		return 1;
	if (oll_plan(srv, rp, ol, oj, &err) != 0)
		goto refuse;
	return 0;
refuse:
	ollama_fail(rp, &err, NULL);
	return 1;
}

/* A chat without messages, or a generate without a prompt: Ollama loads
 * the model and answers done_reason "load" with nothing generated. */
static int
oll_load_only(const struct ollama_request *req)
{
	return req->kind == OLLAMA_CHAT ? req->n_msgs == 0 :
	    req->prompt_len == 0 && req->system == NULL;
}

static void
oll_answer_load(struct reply *rp, const struct oll_resp *ol)
{
	struct ollama_stats st;
	struct ts_buf b;

	memset(&st, 0, sizeof(st));
	st.done = OLLAMA_DONE_LOAD;
	ts_buf_init(&b, 64 * 1024);
	if (reply_head_buf(rp, &b, 200, "application/json", 0, NULL) ==
	    TS_OK && ollama_encode_final(&b, &ol->meta, oll_wall_ns(), "", 0,
	    NULL, 0, &st) == TS_OK)
		conn_write(rp->conn, b.p, b.len);
	ts_buf_free(&b);
}

/* Submits the job, sends a stream's head and hands the response to its
 * relay (which owns or from then on). 0, or 1 when it could not start
 * (answered; the caller frees ol). */
static int
oll_start(struct server *srv, struct reply *rp, struct oll_resp *ol,
    struct oll_job *oj)
{
	struct relay_env env;
	struct http_error err;
	struct engine_seq *s;
	struct ts_buf b;

	if (submit(srv, &oj->job, &oj->rec, rp->conn, &s, &err) != TS_OK) {
		ollama_fail(rp, &err, err.status == 429 ?
		    "Retry-After: 1\r\n" : NULL);
		return 1;
	}
	if (ol->req.stream && ol->silent != OLL_SILENT_ALL) {
		enum ts_err rc;

		ts_buf_init(&b, 4096);
		rc = reply_head_buf(&ol->reply, &b, 200, OLLAMA_NDJSON_TYPE,
		    engine_seq_id(s), "Cache-Control: no-cache\r\n"
		    "X-Accel-Buffering: no\r\n");
		if (rc == TS_OK)
			rc = conn_write(rp->conn, b.p, b.len);
		ts_buf_free(&b);
		if (rc != TS_OK) {
			engine_cancel(srv->engine, s, srv->now(),
			    ENGINE_CAUSE_CLIENT_GONE);
			engine_release(srv->engine, s);
			return 1;
		}
	}
	env = server_relay_env(srv);
	relay_init(&ol->relay, &env, &ol->reply, s, 0, oj->stop, oj->stop_len,
	    oj->job.nstop, ol->req.stream && ol->silent != OLL_SILENT_ALL ?
	    &oll_stream_ops : &oll_answer_ops, ol);
	if (ol->silent == OLL_SILENT_ALL)
		relay_hold(&ol->relay, rp->t0 +
		    ts_ms_to_ns(INJECT_TIMEOUT_MS));
	server_stream(srv, rp->conn, &ol->relay);
	return 0;
}

void
ollama_generate(struct server *srv, struct reply *rp, enum ollama_kind kind)
{
	struct oll_resp *ol = xcalloc(1, sizeof(*ol));
	struct oll_job oj;

	memset(&oj, 0, sizeof(oj));
	oj.rec.kind = STATE_KIND_GENERATE;
	ts_buf_init(&oj.prompt, 2 * HTTP_MAX_BODY_BYTES);
	ts_buf_init(&ol->text, (size_t)HTTP_MAX_TOKENS_CAP *
	    srv->backend->max_token_bytes * 3);
	ts_buf_init(&ol->thinking, (size_t)HTTP_MAX_TOKENS_CAP *
	    srv->backend->max_token_bytes * 3);
	ol->reply = *rp;
	if (oll_build(srv, rp, kind, ol, &oj) != 0)
		goto out_free;
	ol->meta.kind = kind;
	ol->meta.model = ol->req.model;
	ol->meta.model_len = ol->req.model_len;
	if (oll_load_only(&ol->req)) {
		oll_answer_load(rp, ol);
		goto out_free;
	}
	if (oll_start(srv, rp, ol, &oj) != 0)
		goto out_free;
	ts_buf_free(&oj.prompt);
	return;
out_free:
	ollama_request_free(&ol->req);
	ollama_plan_free(&ol->plan);
	ts_buf_free(&ol->text);
	ts_buf_free(&ol->thinking);
	free(ol);
	ts_buf_free(&oj.prompt);
}

/* What tokstream says of its model. */
static void
oll_info(const struct server *srv, struct ollama_model_info *mi)
{
	memset(mi, 0, sizeof(*mi));
	mi->family = srv->backend->name;
	mi->format = "tokstream";
	mi->parameter_size = "";
	mi->quantization = "";
	mi->modified_ns = (int64_t)srv->started_at * 1000000000;
	mi->context_length = (uint32_t)srv->backend->context_len(
	    srv->backend->impl);
	if (mi->context_length == 0)
		mi->context_length = HTTP_MAX_TOKENS_CAP;
	mi->template_text = srv->chat_template != NULL ?
	    srv->chat_template : CHAT_TEMPLATE;
}

/* Writes a 200 JSON answer made by the caller into b (after its head). */
static void
oll_send(struct reply *rp, struct ts_buf *b, enum ts_err rc)
{
	if (rc == TS_OK && ts_buf_append(b, "\n", 1) == TS_OK) {
		reply_send(rp, b);
	} else {
		struct http_error err;

		http_error_set(&err, 500, "server_error", "encode_failed",
		    "the response could not be encoded");
		if (!rp->head_sent)
			ollama_fail(rp, &err, NULL);
	}
	ts_buf_free(b);
}

/* An expiry Ollama shows for a model kept loaded (keep_alive -1): far in
 * the future. tokstream's model never unloads. */
#define OLL_NEVER_NS (INT64_C(9000000000) * 1000000000)

void
ollama_models(struct server *srv, struct reply *rp, int ps)
{
	struct ollama_model_info mi;
	const char *const *names;
	size_t n = server_model_names(srv, &names);
	struct ts_buf b;
	enum ts_err rc;

	oll_info(srv, &mi);
	ts_buf_init(&b, 256 * 1024);
	rc = reply_head_buf(rp, &b, 200, "application/json", 0, NULL);
	if (rc == TS_OK)
		rc = ollama_encode_models(&b, names, n, &mi, ps, OLL_NEVER_NS);
	oll_send(rp, &b, rc);
}

void
ollama_show(struct server *srv, struct reply *rp)
{
	struct ollama_model_info mi;
	struct http_error err;
	const char *const *names;
	size_t n = server_model_names(srv, &names), len = 0;
	const char *name = NULL;
	struct ts_buf body, b;
	json_t *root = NULL, *v;
	enum ts_err rc;

	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	rc = reply_read_json(rp->conn, &body, &err);
	if (rc == TS_OK) {
		root = json_loadb(body.p ? body.p : "", body.len, 0, NULL);
		/* "name" is the older spelling (docs/api.md "Show Model
		 * Information") */
		v = json_object_get(root, "model");
		if (!json_is_string(v))
			v = json_object_get(root, "name");
		if (json_is_string(v)) {
			name = json_string_value(v);
			len = json_string_length(v);
		}
		if (root == NULL || !json_is_object(root) || len == 0) {
			http_error_set(&err, 400, "invalid_request_error",
			    "invalid_value", root == NULL ? "invalid JSON" :
			    "model is required");
			rc = TS_EINVAL;
		} else if (!ollama_model_known(name, len, names, n)) {
			ollama_model_not_found(&err, name, len);
			rc = TS_EINVAL;
		}
	}
	ts_buf_free(&body);
	if (rc != TS_OK) {
		json_decref(root);
		ollama_fail(rp, &err, NULL);
		return;
	}
	oll_info(srv, &mi);
	ts_buf_init(&b, 256 * 1024);
	rc = reply_head_buf(rp, &b, 200, "application/json", 0, NULL);
	if (rc == TS_OK)
		rc = ollama_encode_show(&b, name, &mi);
	json_decref(root);
	oll_send(rp, &b, rc);
}

void
ollama_version(struct server *srv, struct reply *rp)
{
	struct ts_buf b;
	enum ts_err rc;

	(void)srv;
	ts_buf_init(&b, 4096);
	rc = reply_head_buf(rp, &b, 200, "application/json", 0, NULL);
	if (rc == TS_OK)
		rc = ollama_encode_version(&b, PACKAGE_VERSION);
	oll_send(rp, &b, rc);
}
