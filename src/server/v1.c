/*
 * server/v1.c - the OpenAI-compatible endpoints (docs/API.md "OpenAI
 * API"): POST /v1/completions and /v1/chat/completions, streamed as
 * text_completion / chat.completion.chunk SSE events or answered as one
 * object, and GET /v1/models. Parsing and encoding are src/openai/'s; this
 * file runs the request through the engine with its sampling and stop
 * strings.
 */
#include "server/v1.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "openai/chat.h"
#include "openai/encode.h"
#include "openai/parse.h"
#include "openai/responses.h"
#include "server/conn.h"
#include "server/lab.h"
#include "server/relay.h"
#include "server/reply.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/submit.h"

/* Every stop string the API takes reaches the engine. */
_Static_assert(OPENAI_MAX_STOP <= STOP_MAX, "more stop strings than the "
    "engine matches");

/* One /v1 response in flight: owned by its relay from the hand-off on. */
struct v1_resp {
	struct reply reply;
	struct relay relay;
	struct openai_request req;
	struct openai_meta meta;
	struct openai_stream stream;  /* stream: the chunks' state */
	struct openai_resp_meta rmeta; /* /v1/responses: what it echoes */
	struct openai_resp_stream rstream; /* ... and its events' state */
	struct openai_usage usage;
	struct ts_buf text;           /* the answer so far: not streamed, or
				       * a /v1/responses stream (its done
				       * events repeat the text) */
	int32_t error_after;
};

static void
v1_resp_free(struct relay *r)
{
	struct v1_resp *vr = r->resp;

	openai_request_free(&vr->req);
	ts_buf_free(&vr->text);
	free(vr);
}

/* OpenAI's finish_reason of an engine finish (length or stop). */
static enum openai_finish
v1_finish(enum engine_finish f)
{
	return f == ENGINE_FINISH_LENGTH ? OPENAI_FINISH_LENGTH :
	    OPENAI_FINISH_STOP;
}

/* A /v1 stream's token: one chunk; an empty released text (held back
 * for a stop string or an incomplete character) sends nothing. */
static enum ts_err
v1_stream_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct v1_resp *vr = r->resp;

	(void)index;
	if (len == 0)
		return TS_OK;
	if (openai_encode_chunk(out, &vr->stream, text, len) != TS_OK)
		return TS_EINVAL;
	*event = 1;
	return TS_OK;
}

/* completion_tokens counts every token the engine generated for the
 * request, EOS and the token that completed a stop string included. */
static enum ts_err
v1_stream_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct v1_resp *vr = r->resp;
	struct http_error err;

	vr->usage.completion_tokens = v->generated;
	if (lab_finish_error(vr->error_after, f, &err)) {
		http_error_set_param(&err, "%s", "");
		return openai_encode_stream_error(out, &err);
	}
	return openai_encode_end(out, &vr->stream, v1_finish(f), &vr->usage);
}

static const struct relay_ops v1_stream_ops = {
	v1_stream_token, lab_sse_keepalive, v1_stream_end, v1_resp_free, 1
};

/* A /v1/responses stream's token: one response.output_text.delta. */
static enum ts_err
v1_resp_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct v1_resp *vr = r->resp;

	(void)index;
	if (len == 0)
		return TS_OK;
	if (ts_buf_append(&vr->text, text, len) != TS_OK ||
	    openai_resp_encode_delta(out, &vr->rstream, text, len) != TS_OK)
		return TS_EINVAL;
	*event = 1;
	return TS_OK;
}

/* ... and its end: the done events and response.completed (or
 * .incomplete), or an error event. */
static enum ts_err
v1_resp_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct v1_resp *vr = r->resp;
	struct http_error err;

	vr->usage.completion_tokens = v->generated;
	if (lab_finish_error(vr->error_after, f, &err)) {
		http_error_set_param(&err, "%s", "");
		return openai_resp_encode_error(out, &vr->rstream, &err,
		    vr->text.p ? vr->text.p : "", vr->text.len, &vr->usage);
	}
	return openai_resp_encode_end(out, &vr->rstream, vr->text.p ?
	    vr->text.p : "", vr->text.len, v1_finish(f), &vr->usage);
}

static const struct relay_ops v1_resp_stream_ops = {
	v1_resp_token, lab_sse_keepalive, v1_resp_end, v1_resp_free, 1
};

static enum ts_err
v1_collect_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct v1_resp *vr = r->resp;

	(void)out;
	(void)index;
	(void)event;
	return ts_buf_append(&vr->text, text, len) == TS_OK ? TS_OK :
	    TS_ELIMIT;
}

static enum ts_err
v1_answer_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct v1_resp *vr = r->resp;
	struct http_error err;
	size_t mark;

	if (lab_finish_error(vr->error_after, f, &err)) {
		http_error_set_param(&err, "%s", "");
		return lab_json_error(r, out, &err, 1);
	}
	vr->usage.completion_tokens = v->generated;
	if (reply_head_buf(r->reply, out, 200, "application/json",
	    engine_seq_id(r->seq), NULL) != TS_OK)
		return TS_EINVAL;
	mark = out->len;
	if ((vr->meta.kind == OPENAI_RESPONSES ?
	    openai_resp_encode(out, &vr->rmeta, vr->text.p ? vr->text.p : "",
	    vr->text.len, v1_finish(f), &vr->usage) :
	    openai_encode_response(out, &vr->meta, vr->text.p ? vr->text.p :
	    "", vr->text.len, v1_finish(f), &vr->usage)) != TS_OK ||
	    ts_buf_append(out, "\n", 1) != TS_OK) {
		/* only a head went out (or nothing): say why instead */
		out->len = mark;
		http_error_set(&err, 500, "server_error", "encode_failed",
		    "the response could not be encoded");
		return lab_json_error(r, out, &err, 1);
	}
	return TS_OK;
}

static const struct relay_ops v1_answer_ops = {
	v1_collect_token, lab_json_keepalive, v1_answer_end, v1_resp_free, 0
};

/* A /v1 error before anything else was sent, in the OpenAI shape. */
static void
v1_fail(struct reply *rp, struct http_error *err, const char *extra)
{
	reply_error_v1(rp, err, extra, 0);
}

/*
 * POST /v1/completions, /v1/chat/completions and /v1/responses: parse
 * (src/openai/), render the chat template (openai/chat.h), run the
 * sequence with the request's sampling and stop strings, and answer as
 * one JSON object, or as chat.completion.chunk / text_completion SSE
 * chunks, or as the Responses API's named events (OpenAI API
 * reference).
 */
void
v1_generate(struct server *srv, struct reply *rp, enum openai_kind kind)
{
	struct conn *c = rp->conn;
	struct v1_resp *vr = xcalloc(1, sizeof(*vr));
	struct http_error err;
	struct engine_request job;
	struct submit_record rec = { STATE_KIND_GENERATE, 0, 0, 0 };
	struct engine_seq *s = NULL;
	struct ts_buf body, prompt, b;
	const char *model = server_model_name(srv);
	const char *const *models;
	size_t n_models = server_model_names(srv, &models);
	const char *stop[STOP_MAX];
	size_t stop_len[STOP_MAX];
	size_t i;

	vr->reply = *rp;
	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	ts_buf_init(&prompt, 2 * HTTP_MAX_BODY_BYTES);
	ts_buf_init(&b, 4096);
	ts_buf_init(&vr->text, (size_t)HTTP_MAX_TOKENS_CAP *
	    srv->backend->max_token_bytes * 3);
	if (lab_read_body(c, &body, &err) != TS_OK) {
		http_error_set_param(&err, "%s", "");
		v1_fail(rp, &err, NULL);
		goto fail;
	}
	if (openai_parse_request(kind, body.p ? body.p : "", body.len, models,
	    n_models, &vr->req, &err) != TS_OK) {
		v1_fail(rp, &err, NULL);
		goto fail;
	}
	if (kind != OPENAI_COMPLETIONS) {
		if (openai_chat_prompt(&vr->req, &prompt) != TS_OK) {
			http_error_set(&err, 400, "invalid_request_error",
			    "invalid_value", "the messages are too long");
			v1_fail(rp, &err, NULL);
			goto fail;
		}
	} else if (ts_buf_append(&prompt, vr->req.prompt,
	    vr->req.prompt_len) != TS_OK) {
		http_error_set(&err, 400, "invalid_request_error",
		    "invalid_value", "the prompt is too long");
		v1_fail(rp, &err, NULL);
		goto fail;
	}
	memset(&job, 0, sizeof(job));
	job.prompt = prompt.p ? prompt.p : "";
	job.prompt_len = prompt.len;
	job.model = 0;      /* the backend's default model is the one served */
	if (submit_count_prompt(srv, &job, 0, &err)) {
		v1_fail(rp, &err, NULL);
		goto fail;
	}
	job.max_tokens = vr->req.max_tokens;
	job.prefill_ms = vr->req.prefill_ms >= 0 ?
	    (double)vr->req.prefill_ms :
	    engine_prefill_ms(&srv->opt->engine.lat, job.prompt_tokens);
	job.tpot_ms = vr->req.tpot_ms >= 0 ? (double)vr->req.tpot_ms : -1.0;
	job.error_after = vr->req.error_after;
	vr->error_after = vr->req.error_after;
	job.t0_ns = rp->t0;
	rec.kind = vr->req.stream ? STATE_KIND_STREAM : STATE_KIND_GENERATE;
	engine_sampling_defaults(&job.sampling);
	job.sampling.temperature = vr->req.temperature;
	job.sampling.top_p = vr->req.top_p;
	job.sampling.has_seed = vr->req.has_seed;
	job.sampling.seed = (uint64_t)vr->req.seed;
	job.sampling.ignore_eos = vr->req.ignore_eos;
	for (i = 0; i < vr->req.n_stop && i < STOP_MAX; i++) {
		stop[i] = job.stop[i] = vr->req.stop[i].s;
		stop_len[i] = job.stop_len[i] = vr->req.stop[i].len;
	}
	job.nstop = i;
	if (submit(srv, &job, &rec, c, &s, &err) != TS_OK) {
		v1_fail(rp, &err, "Retry-After: 1\r\n");
		goto fail;
	}
	vr->meta.kind = kind;
	vr->meta.id = engine_seq_id(s);
	vr->meta.created = (int64_t)time(NULL);
	vr->meta.model = model;
	vr->meta.model_len = strlen(model);
	vr->usage.prompt_tokens = (uint32_t)job.prompt_tokens;
	vr->rmeta.id = vr->meta.id;
	vr->rmeta.created_at = vr->meta.created;
	vr->rmeta.model = model;
	vr->rmeta.model_len = vr->meta.model_len;
	vr->rmeta.instructions = vr->req.instructions;
	vr->rmeta.instructions_len = vr->req.instructions_len;
	vr->rmeta.max_output_tokens = vr->req.max_tokens;
	vr->rmeta.has_max_output = vr->req.has_max_tokens;
	vr->rmeta.temperature = vr->req.temperature;
	vr->rmeta.top_p = vr->req.top_p;
	ts_buf_free(&body);
	ts_buf_free(&prompt);
	if (vr->req.stream) {
		openai_stream_init(&vr->stream, &vr->meta,
		    vr->req.include_usage);
		openai_resp_stream_init(&vr->rstream, &vr->rmeta);
		if (reply_head_buf(&vr->reply, &b, 200, SSE_CONTENT_TYPE,
		    vr->meta.id, "Cache-Control: no-cache\r\n"
		    "X-Accel-Buffering: no\r\n") != TS_OK ||
		    (kind == OPENAI_RESPONSES &&
		    openai_resp_encode_start(&b, &vr->rstream) != TS_OK) ||
		    conn_write(c, b.p, b.len) != TS_OK) {
			engine_cancel(srv->engine, s, srv->now(),
		    ENGINE_CAUSE_CLIENT_GONE);
			engine_release(srv->engine, s);
			goto fail;
		}
	}
	ts_buf_free(&b);
	relay_init(&vr->relay, srv, &vr->reply, s, 0, stop, stop_len,
	    job.nstop, !vr->req.stream ? &v1_answer_ops :
	    kind == OPENAI_RESPONSES ? &v1_resp_stream_ops : &v1_stream_ops,
	    vr);
	srv->stream(srv, c, &vr->relay);
	return;
fail:
	ts_buf_free(&body);
	ts_buf_free(&prompt);
	ts_buf_free(&b);
	openai_request_free(&vr->req);
	ts_buf_free(&vr->text);
	free(vr);
}

/* The served model's description; mi->id is the first served name. */
static void
model_info(struct server *srv, struct openai_model_info *mi)
{
	memset(mi, 0, sizeof(*mi));
	mi->id = server_model_name(srv);
	mi->id_len = strlen(mi->id);
	mi->created = (int64_t)srv->started_at;
	/* The simulator has no context length: only max_tokens' cap. */
	mi->max_model_len = srv->backend->context_len(srv->backend->impl);
	mi->backend = srv->backend->name;
	mi->chat_template = CHAT_TEMPLATE;
}

/* GET /v1/models: the served model under each of its names. */
void
v1_models(struct server *srv, struct reply *rp)
{
	struct openai_model_info mi;
	const char *const *names;
	size_t n = server_model_names(srv, &names);
	struct ts_buf b;

	model_info(srv, &mi);
	ts_buf_init(&b, 64 * 1024);
	if (reply_head_buf(rp, &b, 200, "application/json", 0, NULL) ==
	    TS_OK && openai_encode_models(&b, &mi, names, n) == TS_OK &&
	    ts_buf_append(&b, "\n", 1) == TS_OK)
		conn_write(rp->conn, b.p, b.len);
	ts_buf_free(&b);
}

/* GET /v1/models/{model}: (id, len) percent-decoded; one of the served
 * names gives its model object, anything else 404 model_not_found. */
void
v1_model(struct server *srv, struct reply *rp, const char *id, size_t len)
{
	struct openai_model_info mi;
	struct http_error err;
	const char *const *names;
	size_t n = server_model_names(srv, &names), k;
	struct ts_buf b;

	for (k = 0; k < n; k++)
		if (strlen(names[k]) == len && memcmp(names[k], id, len) == 0)
			break;
	if (k == n) {
		/* quoted only when it is printable ASCII (it came from a
		 * URL: anything else is not worth echoing) */
		size_t i;

		for (i = 0; i < len && i < 64 && id[i] >= 0x20 &&
		    id[i] < 0x7f; i++)
			;
		openai_model_not_found(&err, i == len ? id : NULL, len,
		    names, n);
		reply_error_v1(rp, &err, NULL, 0);
		return;
	}
	model_info(srv, &mi);
	mi.id = names[k];
	mi.id_len = len;
	ts_buf_init(&b, 64 * 1024);
	if (reply_head_buf(rp, &b, 200, "application/json", 0, NULL) ==
	    TS_OK && openai_encode_model(&b, &mi) == TS_OK &&
	    ts_buf_append(&b, "\n", 1) == TS_OK)
		conn_write(rp->conn, b.p, b.len);
	ts_buf_free(&b);
}
