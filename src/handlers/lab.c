/*
 * handlers/lab.c - the lab endpoints (docs/API.md "The lab endpoints"):
 * GET /stream, one SSE event per token with resumable ids, and POST
 * /generate, the whole answer as one JSON object. Both run the backend's
 * lab model (sim/sim.h: the canonical lab generator) with greedy
 * sampling and the lab's knobs: prefill_ms, tpot_ms, error_after.
 */
#include "handlers/lab.h"

#include <stdlib.h>
#include <string.h>

#include "transport/conn.h"
#include "proto/http.h"
#include "stores/metrics.h"
#include "transport/relay.h"
#include "transport/reply.h"
#include "proto/resume.h"
#include "handlers/resume.h"
#include "handlers/server.h"
#include "proto/sse.h"
#include "stores/state.h"
#include "handlers/submit.h"

/* One lab response in flight: owned by its relay from the hand-off on. */
struct lab_resp {
	struct reply reply;
	struct relay relay;
	struct http_gen_request req;
	struct resume_id eid;        /* /stream: the id of the next event */
	unsigned long retry_ms;      /* /stream: the retry field its first
				      * event carries */
	int retry_sent;              /* ... and it went into one */
	struct ts_buf text;          /* /generate: the answer so far */
	uint32_t text_tokens;        /* ... and its tokens */
	uint64_t prompt_tokens;
};

static void
lab_resp_free(struct relay *r)
{
	struct lab_resp *lr = r->resp;

	http_gen_request_free(&lr->req);
	ts_buf_free(&lr->text);
	free(lr);
}

/* ---- GET /stream -------------------------------------------------- */

/*
 * The retry field (the client's reconnection time) among the first
 * event's fields: it rides in an event with data rather than in a
 * block of its own, which some clients (@microsoft/fetch-event-source
 * 2.0.1) hand to onmessage as an event with empty data. WHATWG HTML 9.2.6
 * takes "retry" in any block. Appends nothing after the first.
 */
static enum ts_err
stream_retry(struct lab_resp *lr, struct ts_buf *out)
{
	enum ts_err rc;

	if (lr->retry_sent)
		return TS_OK;
	rc = sse_encode_retry(out, lr->retry_ms);
	if (rc == TS_OK)
		lr->retry_sent = 1;
	return rc;
}

static enum ts_err
stream_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct lab_resp *lr = r->resp;
	char id[RESUME_ID_MAX + 1];
	size_t idlen;
	enum ts_err rc;

	lr->eid.index = index;
	idlen = resume_id_format(id, sizeof(id), &lr->eid);
	rc = sse_encode_id(out, id, idlen);
	if (rc == TS_OK)
		rc = stream_retry(lr, out);
	if (rc == TS_OK)
		rc = sse_encode_token(out, text, len);
	if (rc != TS_OK)
		return rc;      /* TS_ELIMIT: out is full */
	*event = 1;
	return TS_OK;
}

/* An error event (if any) first, then exactly one [DONE] (case C12). The
 * "end" id tells a reconnecting client there is nothing more. After a
 * shutdown there is: [DONE] goes without an id, so EventSource reconnects
 * with the last token's id and the restarted server resumes the stream. */
static enum ts_err
stream_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct lab_resp *lr = r->resp;
	struct http_error err;
	char id[RESUME_ID_MAX + 1];
	enum ts_err rc = TS_OK;

	(void)v;
	rc = stream_retry(lr, out);
	if (rc == TS_OK && reply_finish_error(lr->req.knobs.error_after, f,
	    &err))
		rc = sse_encode_error(out, err.message, err.type, err.code);
	if (rc == TS_OK && f != ENGINE_FINISH_SHUTDOWN) {
		lr->eid.index = RESUME_INDEX_END;
		rc = sse_encode_id(out, id, resume_id_format(id, sizeof(id),
		    &lr->eid));
	}
	if (rc != TS_OK)
		return rc;
	return sse_encode_done(out);
}

static const struct relay_ops stream_ops = {
	.token = stream_token,
	.keepalive = relay_sse_keepalive,
	.end = stream_end,
	.free = lab_resp_free,
	.tokens_reach_client = 1,
};

/*
 * Decides where a GET /stream starts (docs/API.md "Resuming a stream"):
 * from the Last-Event-ID header (EventSource sends it when it reconnects)
 * or, without one, the last_event_id parameter; resume_decide (resume.h)
 * says what the id means. Returns 0, 204 or 400 as it does.
 */
static int
stream_start(struct server *srv, struct conn *c,
    const struct http_gen_request *r, uint64_t key, struct resume_start *rs,
    struct http_error *err)
{
	const char *hdr = c->ops->param(c, "HTTP_LAST_EVENT_ID");
	const char *s = hdr;
	size_t len = hdr ? strlen(hdr) : 0;

	/* The header wins: EventSource keeps a URL's last_event_id and
	 * sends the newer id in the header on every reconnect. */
	if (len == 0 && r->last_event_id != NULL) {
		s = r->last_event_id;
		len = r->last_event_id_len;
	}
	return resume_decide(srv, s, len, key, key, r->max_tokens,
	    r->knobs.error_after, "prompt, max_tokens or error_after", rs,
	    err);
}

/*
 * Fills the engine request shared by /stream and /generate: the lab
 * model, greedy sampling. A resumed stream (start > 0) pays prefill over
 * the prompt plus the tokens already sent, as a real engine recomputes
 * their KV cache. Returns 0, or the status with *err filled.
 */
static int
lab_request(struct server *srv, struct engine_request *job,
    struct submit_record *rec, const struct http_gen_request *r,
    int64_t t0, uint32_t start, struct http_error *err)
{
	memset(job, 0, sizeof(*job));
	job->prompt = r->prompt;
	job->prompt_len = r->prompt_len;
	job->model = srv->backend->lab_model;
	engine_sampling_greedy(&job->sampling);
	job->max_tokens = r->max_tokens;
	job->start_index = start;
	job->tpot_ms = r->knobs.tpot_ms >= 0 ? (double)r->knobs.tpot_ms :
	    -1.0;
	job->error_after = r->knobs.error_after;
	job->t0_ns = t0;
	if (submit_count_prompt(srv, job, start, err))
		return err->status;
	job->prefill_ms = r->knobs.prefill_ms >= 0 ?
	    (double)r->knobs.prefill_ms :
	    engine_prefill_ms(&srv->opt->engine.lat,
	    job->prompt_tokens + start);
	rec->resume_index = start;
	return 0;
}

/* GET /stream: SSE, one event per token with its id (the first also
 * carries the retry field), then [DONE] with the "end" id (docs/API.md).
 * Once the 200 is sent an error can only be an SSE error event, then
 * [DONE]. */
void
lab_stream(struct server *srv, struct reply *rp)
{
	struct relay_env env;
	struct conn *c = rp->conn;
	struct lab_resp *lr = xcalloc(1, sizeof(*lr));
	struct http_error err;
	struct engine_request job;
	struct submit_record rec = { STATE_KIND_STREAM, 0, 0, 0, 0 };
	struct engine_seq *s = NULL;
	const char *qs = conn_param(c, "QUERY_STRING");
	struct ts_buf b;
	struct resume_start rs;
	int rc;

	lr->reply = *rp;
	ts_buf_init(&lr->text, 0);
	ts_buf_init(&b, 4096);
	if (http_parse_query(qs, strlen(qs), &lr->req, &err) != TS_OK) {
		reply_error(rp, &err, NULL, 0);
		goto fail;
	}
	lr->eid.key = resume_key(lr->req.prompt, lr->req.prompt_len,
	    lr->req.max_tokens, lr->req.knobs.error_after);
	lr->eid.instance = srv->opt->instance;
	lr->retry_ms = srv->opt->retry_ms;
	rc = stream_start(srv, c, &lr->req, lr->eid.key, &rs, &err);
	if (rc == 400) {
		reply_error(rp, &err, NULL, 0);
		goto fail;
	}
	if (rc == 204) {
		/* EventSource stops reconnecting on 204 (WHATWG 9.2.3). */
		reply_head(rp, 204, NULL, 0, NULL);
		goto fail;
	}
	if (lab_request(srv, &job, &rec, &lr->req, rp->t0, rs.start, &err)) {
		reply_error(rp, &err, NULL, 0);
		goto fail;
	}
	if (c->head_only) {
		/* HEAD: the head a GET would get, and no generation (no id:
		 * there is no request to find). */
		reply_head(rp, 200, SSE_CONTENT_TYPE, 0, "Cache-Control: "
		    "no-cache\r\nX-Accel-Buffering: no\r\n");
		goto fail;
	}
	rec.resumed_from = rs.from;
	rec.from_instance = rs.from_inst;
	rec.key = lr->eid.key;
	if (submit(srv, &job, &rec, c, &s, &err) != TS_OK) {
		reply_error(rp, &err, "Retry-After: 1\r\n", 0);
		goto fail;
	}
	lr->eid.stream = engine_seq_id(s);
	lr->prompt_tokens = job.prompt_tokens;
	if (reply_head_buf(&lr->reply, &b, 200, SSE_CONTENT_TYPE,
	    lr->eid.stream, "Cache-Control: no-cache\r\n"
	    "X-Accel-Buffering: no\r\n") != TS_OK ||
	    conn_write(c, b.p, b.len) != TS_OK) {
		engine_cancel(srv->engine, s, srv->now(),
		    ENGINE_CAUSE_CLIENT_GONE);
		engine_release(srv->engine, s);
		goto fail;
	}
	ts_buf_free(&b);
	env = server_relay_env(srv);
	relay_init(&lr->relay, &env, &lr->reply, s, rs.start, NULL, NULL, 0,
	    &stream_ops, lr);
	server_stream(srv, c, &lr->relay);
	return;
fail:
	ts_buf_free(&b);
	http_gen_request_free(&lr->req);
	ts_buf_free(&lr->text);
	free(lr);
}

/* ---- POST /generate --------------------------------------------------- */

/* relay_ops.token of POST /generate: gathers the answer's text. */
static enum ts_err
lab_collect_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct lab_resp *lr = r->resp;

	(void)out;
	(void)index;
	(void)event;
	if (ts_buf_append(&lr->text, text, len) != TS_OK)
		return TS_ELIMIT;
	lr->text_tokens++;
	return TS_OK;
}

static enum ts_err
generate_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct lab_resp *lr = r->resp;
	struct http_error err;
	json_t *obj;
	char *s;
	enum ts_err rc;

	(void)v;
	if (reply_finish_error(lr->req.knobs.error_after, f, &err))
		return reply_error_buf(r->reply, out, &err,
		    engine_seq_id(r->seq));
	obj = json_pack("{s:s%,s:{s:I,s:I}}", "text",
	    lr->text.p ? lr->text.p : "", lr->text.len, "usage",
	    "prompt_tokens", (json_int_t)lr->prompt_tokens,
	    "completion_tokens", (json_int_t)lr->text_tokens);
	s = obj != NULL ? json_dumps(obj, JSON_COMPACT) : NULL;
	json_decref(obj);
	if (s == NULL) {
		http_error_set(&err, 500, "server_error", "encode_failed",
		    "the response could not be encoded");
		return reply_error_buf(r->reply, out, &err,
		    engine_seq_id(r->seq));
	}
	rc = reply_head_buf(r->reply, out, 200, "application/json",
	    engine_seq_id(r->seq), NULL);
	if (rc == TS_OK)
		rc = ts_buf_append(out, s, strlen(s));
	if (rc == TS_OK)
		rc = ts_buf_append(out, "\n", 1);
	free(s);
	return rc;
}

static const struct relay_ops generate_ops = {
	.token = lab_collect_token,
	.keepalive = relay_json_keepalive,
	.end = generate_end,
	.free = lab_resp_free,
};

/* POST /generate: the whole answer as one JSON object. */
void
lab_generate(struct server *srv, struct reply *rp)
{
	struct relay_env env;
	struct conn *c = rp->conn;
	struct lab_resp *lr = xcalloc(1, sizeof(*lr));
	struct http_error err;
	struct engine_request job;
	struct submit_record rec = { STATE_KIND_GENERATE, 0, 0, 0, 0 };
	struct engine_seq *s = NULL;
	struct ts_buf body;

	lr->reply = *rp;
	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	ts_buf_init(&lr->text, (size_t)HTTP_MAX_TOKENS_CAP *
	    srv->backend->max_token_bytes);
	if (reply_read_json(c, &body, &err) != TS_OK ||
	    http_parse_json(body.p ? body.p : "", body.len, &lr->req, &err) !=
	    TS_OK) {
		reply_error(rp, &err, NULL, 0);
		goto fail;
	}
	ts_buf_free(&body);
	if (lab_request(srv, &job, &rec, &lr->req, rp->t0, 0, &err)) {
		reply_error(rp, &err, NULL, 0);
		goto fail;
	}
	if (submit(srv, &job, &rec, c, &s, &err) != TS_OK) {
		reply_error(rp, &err, "Retry-After: 1\r\n", 0);
		goto fail;
	}
	lr->prompt_tokens = job.prompt_tokens;
	env = server_relay_env(srv);
	relay_init(&lr->relay, &env, &lr->reply, s, 0, NULL, NULL, 0,
	    &generate_ops, lr);
	server_stream(srv, c, &lr->relay);
	return;
fail:
	ts_buf_free(&body);
	http_gen_request_free(&lr->req);
	ts_buf_free(&lr->text);
	free(lr);
}
