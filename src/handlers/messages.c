/*
 * handlers/messages.c - Anthropic's Messages API (messages.h) over the
 * engine, as handlers/v1.c runs the OpenAI endpoints: the body is read
 * with its limits, parsed (anthropic/parse.h), its prompt rendered with
 * the chat template and counted, failure injection applied, the answer
 * planned (a tool_use block: anthropic/plan.h) and bounded, the request
 * submitted (a slot, the state record, the metrics), then relayed: as one
 * Message, or as events, with ping events as keep-alives; a client that
 * leaves cancels its sequence.
 *
 * Thinking (text/think.h): the first think_tokens(budget_tokens,
 * max_tokens) tokens of the sequence are a thinking block, the rest the
 * text block; the sampling's min_tokens keeps EOS out of the thinking.
 *
 * Resume (docs/API.md "Resuming an Anthropic stream"): a delta event
 * after which the detokenizer holds nothing carries the SSE id of its
 * token (proto/resume.h; the key is the request body's), message_stop the
 * "end" id; the same body POSTed again with Last-Event-ID streams what
 * follows that token, with no message_start. Where a block starts
 * follows from the token's index alone, so the resumed stream's events
 * are the original's.
 */
#include "handlers/messages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anthropic/encode.h"
#include "anthropic/parse.h"
#include "anthropic/plan.h"
#include "common/rng.h"
#include "handlers/inject.h"
#include "handlers/resume.h"
#include "handlers/server.h"
#include "handlers/submit.h"
#include "openai/cost.h"
#include "proto/chat.h"
#include "proto/resume.h"
#include "proto/sse.h"
#include "stores/metrics.h"
#include "text/think.h"
#include "transport/conn.h"
#include "transport/relay.h"
#include "transport/reply.h"

/* How long an injected timeout holds its request silent (as /v1). */
#define MSG_INJECT_TIMEOUT_MS INJECT_TIMEOUT_MS

enum msg_silent {
	MSG_SPEAKS = INJECT_SPEAKS,
	MSG_SILENT_ALL = INJECT_SILENT_ALL, /* timeout: not a byte */
	MSG_SILENT_END = INJECT_SILENT_END  /* midstream_cut: no end after
					     * the tokens */
};

/* No block is open (msg_resp.cur). */
#define MSG_NO_BLOCK (-1)

/* One /v1/messages response in flight: its relay owns it. */
struct msg_resp {
	struct reply reply;
	struct relay relay;
	struct anthropic_request req;
	struct anthropic_plan plan;
	struct anthropic_meta meta;
	struct anthropic_usage usage;
	char id[40];                  /* "msg_..." */
	uint64_t prompt_tokens;       /* as the backend counts them */
	uint32_t think;               /* thinking tokens (text/think.h) */
	struct ts_buf thinking;       /* the thinking text so far */
	struct ts_buf text;           /* the text (or tool input) so far:
				       * not streamed */
	int cur;                      /* the open block's kind, or
				       * MSG_NO_BLOCK (stream) */
	uint32_t nblocks;             /* blocks started (stream) */
	int32_t error_after;
	enum msg_silent silent;
	int injected;                 /* a mid-stream failure to count */
	uint64_t seed;                /* rng_seed_of the rendered prompt */
	uint32_t start;               /* a resumed stream's first token */
	uint64_t key;                 /* stream: its resume key */
	struct resume_id eid;         /* stream: the id of a delta event */
};

static void
msg_resp_free(struct relay *r)
{
	struct msg_resp *mr = r->resp;

	anthropic_request_free(&mr->req);
	anthropic_plan_free(&mr->plan);
	ts_buf_free(&mr->thinking);
	ts_buf_free(&mr->text);
	free(mr);
}

void
messages_fail(struct reply *rp, const struct http_error *err,
    const char *extra)
{
	struct ts_buf b;

	ts_buf_init(&b, 16 * 1024);
	if (reply_head_buf(rp, &b, err->status, "application/json", 0,
	    extra) == TS_OK && anthropic_encode_error(&b, err) == TS_OK &&
	    ts_buf_append(&b, "\n", 1) == TS_OK)
		(void)conn_write(rp->conn, b.p, b.len);
	ts_buf_free(&b);
}

/* Counts an injected mid-stream failure that ended the response. */
static void
msg_fired(struct relay *r, enum engine_finish f)
{
	struct msg_resp *mr = r->resp;

	if (mr->injected != 0 && f == ENGINE_FINISH_ERROR)
		metrics_injected(r->env.metrics, mr->injected);
	mr->injected = 0;
}

/* The kind of block token `index` belongs to. */
static enum anthropic_block_kind
msg_kind(const struct msg_resp *mr, uint32_t index)
{
	if (mr->plan.tool_use)
		return ANTHROPIC_BLOCK_TOOL_USE;
	return think_is_thinking(mr->think, index) ? ANTHROPIC_BLOCK_THINKING :
	    ANTHROPIC_BLOCK_TEXT;
}

/* A block of kind k, as its content_block_start names it. */
static void
msg_block(const struct msg_resp *mr, enum anthropic_block_kind k,
    struct anthropic_block *b)
{
	memset(b, 0, sizeof(*b));
	b->kind = k;
	b->id = mr->plan.id;
	b->name = mr->plan.tool_use ? mr->req.tools[mr->plan.tool].name : "";
}

/*
 * The key of the event that carries token `index` (or RESUME_INDEX_END):
 * the request's key mixed with the index, so that an id is one this
 * stream sent, not one whose index a client changed (an index past the
 * answer's end, inside a stop sequence or a character the stream held
 * back would resume into text the stream never had).
 */
static uint64_t
msg_event_key(uint64_t key, uint64_t index)
{
	return rng_mix64(key ^ rng_mix64(index + 0x9e3779b97f4a7c15ULL));
}

/* The thinking block's signature into sig (65 bytes): a hash of what
 * makes its text (the rendered prompt's seed, the sampling, the number of
 * thinking tokens), so that a resumed stream, which never saw the first
 * thinking tokens, signs as the whole stream and the Message do. */
static void
msg_signature(const struct msg_resp *mr, char *sig)
{
	char d[96];
	int n = snprintf(d, sizeof(d), "%016llx %.17g %.17g %u",
	    (unsigned long long)mr->seed, mr->req.temperature, mr->req.top_p,
	    mr->think);

	anthropic_signature(d, n > 0 ? (size_t)n : 0, sig);
}

/* Closes the open block: a thinking block's signature_delta, then its
 * content_block_stop. */
static enum ts_err
msg_close(struct msg_resp *mr, struct ts_buf *out)
{
	enum ts_err rc = TS_OK;
	char sig[72];

	if (mr->cur == MSG_NO_BLOCK)
		return TS_OK;
	if (mr->cur == ANTHROPIC_BLOCK_THINKING) {
		msg_signature(mr, sig);
		rc = anthropic_encode_signature(out, mr->nblocks - 1, sig);
	}
	if (rc == TS_OK)
		rc = anthropic_encode_block_stop(out, mr->nblocks - 1);
	if (rc == TS_OK)
		mr->cur = MSG_NO_BLOCK;
	return rc;
}

/* Opens a block of kind k (closing the one before). */
static enum ts_err
msg_open(struct msg_resp *mr, struct ts_buf *out, enum anthropic_block_kind k)
{
	struct anthropic_block b;
	enum ts_err rc = msg_close(mr, out);

	msg_block(mr, k, &b);
	if (rc == TS_OK)
		rc = anthropic_encode_block_start(out, mr->nblocks, &b);
	if (rc == TS_OK) {
		mr->cur = (int)k;
		mr->nblocks++;
	}
	return rc;
}

/* A stream's token: the block it opens, if any, and its delta, with the
 * token's SSE id when the detokenizer holds nothing after it (a point
 * the stream can resume from: text/release.h). */
static enum ts_err
msg_stream_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct msg_resp *mr = r->resp;
	enum anthropic_block_kind k = msg_kind(mr, index);
	size_t mark = out->len;
	enum ts_err rc = TS_OK;
	char id[RESUME_ID_MAX + 1];

	if (len == 0 || mr->silent == MSG_SILENT_ALL)
		return TS_OK;
	if (mr->cur != (int)k)
		rc = msg_open(mr, out, k);
	if (rc == TS_OK && release_at_boundary(&r->ch[0].rel)) {
		mr->eid.index = index;
		mr->eid.key = msg_event_key(mr->key, index);
		rc = sse_encode_id(out, id, resume_id_format(id, sizeof(id),
		    &mr->eid));
	}
	if (rc == TS_OK)
		rc = anthropic_encode_delta(out, mr->nblocks - 1, k, text, len);
	if (rc != TS_OK) {
		out->len = mark;
		return rc;
	}
	*event = 1;
	return TS_OK;
}

/* The ping event, the stream's keep-alive. */
static enum ts_err
msg_ping(struct relay *r, struct ts_buf *out)
{
	(void)r;
	return anthropic_encode_ping(out);
}

/* stop_reason of finish f, and the stop sequence that matched (NULL). */
static enum anthropic_stop
msg_stop(struct relay *r, enum engine_finish f, const char **seq,
    size_t *len)
{
	struct msg_resp *mr = r->resp;
	/* relay.h: the detokenizer's matcher says which stop string ended
	 * the text (text/stop.h: 1 + its index) */
	int m = r->nch > 0 ? r->ch[0].rel.stop.matched : 0;

	*seq = NULL;
	*len = 0;
	if (f == ENGINE_FINISH_LENGTH)
		return ANTHROPIC_STOP_MAX_TOKENS;
	if (mr->plan.tool_use)
		return ANTHROPIC_STOP_TOOL_USE;
	if (m > 0 && (size_t)m <= mr->req.n_stop) {
		*seq = mr->req.stop[m - 1];
		*len = mr->req.stop_len[m - 1];
		return ANTHROPIC_STOP_SEQUENCE;
	}
	return ANTHROPIC_STOP_END_TURN;
}

/* usage at the end: Anthropic's input_tokens are the prompt's tokens
 * the cache did not hold; cache_read_input_tokens those it did. */
static void
msg_usage(struct msg_resp *mr, const struct engine_view *v,
    uint64_t prompt_tokens)
{
	uint32_t cached = v->cached_tokens;

	if (cached > prompt_tokens)
		cached = (uint32_t)prompt_tokens;
	mr->usage.input_tokens = (uint32_t)prompt_tokens - cached;
	mr->usage.cache_read_input_tokens = cached;
	mr->usage.cache_creation_input_tokens = 0;
	/* a resumed stream's count includes the tokens sent before */
	mr->usage.output_tokens = mr->start + v->generated;
	mr->usage.thinking_tokens = mr->usage.output_tokens < mr->think ?
	    mr->usage.output_tokens : mr->think;
}

static enum ts_err
msg_stream_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct msg_resp *mr = r->resp;
	struct http_error err;
	size_t mark = out->len, len;
	const char *seq;
	enum anthropic_stop stop;
	enum ts_err rc;
	char id[RESUME_ID_MAX + 1];

	msg_usage(mr, v, mr->prompt_tokens);
	msg_fired(r, f);
	if (mr->silent != MSG_SPEAKS)
		return TS_OK;
	if (reply_finish_error(mr->error_after, f, &err))
		return anthropic_encode_error_event(out, &err);
	stop = msg_stop(r, f, &seq, &len);
	if (mr->nblocks == 0 && !mr->plan.tool_use && mr->think == 0)
		rc = msg_open(mr, out, ANTHROPIC_BLOCK_TEXT); /* an empty
						 * text block, as Claude's */
	else
		rc = TS_OK;
	if (rc == TS_OK)
		rc = msg_close(mr, out);
	mr->eid.index = RESUME_INDEX_END;
	mr->eid.key = msg_event_key(mr->key, RESUME_INDEX_END);
	if (rc == TS_OK && resume_id_format(id, sizeof(id), &mr->eid) == 0)
		rc = TS_ELIMIT;
	if (rc == TS_OK)
		rc = anthropic_encode_end(out, stop, seq, len, &mr->usage, id);
	if (rc != TS_OK)
		out->len = mark;
	return rc;
}

static const struct relay_ops msg_stream_ops = {
	.token = msg_stream_token,
	.keepalive = msg_ping,
	.end = msg_stream_end,
	.free = msg_resp_free,
	.tokens_reach_client = 1,
};

static enum ts_err
msg_collect_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct msg_resp *mr = r->resp;

	(void)out;
	(void)event;
	return ts_buf_append(msg_kind(mr, index) == ANTHROPIC_BLOCK_THINKING ?
	    &mr->thinking : &mr->text, text, len) == TS_OK ? TS_OK :
	    TS_ELIMIT;
}

/* The whole Message. */
static enum ts_err
msg_answer_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct msg_resp *mr = r->resp;
	struct anthropic_block blocks[2];
	struct http_error err;
	char sig[72];
	size_t n = 0, mark, len;
	const char *seq;
	enum anthropic_stop stop;
	enum ts_err rc;

	msg_fired(r, f);
	if (mr->silent != MSG_SPEAKS)
		return TS_OK;
	if (reply_finish_error(mr->error_after, f, &err)) {
		mark = out->len;
		rc = reply_head_buf(r->reply, out, err.status,
		    "application/json", engine_seq_id(r->seq), NULL);
		if (rc == TS_OK)
			rc = anthropic_encode_error(out, &err);
		if (rc == TS_OK)
			rc = ts_buf_append(out, "\n", 1);
		if (rc != TS_OK)
			out->len = mark;
		return rc;
	}
	msg_usage(mr, v, mr->prompt_tokens);
	stop = msg_stop(r, f, &seq, &len);
	if (mr->think > 0 && mr->thinking.len > 0) {
		msg_block(mr, ANTHROPIC_BLOCK_THINKING, &blocks[n]);
		blocks[n].text = mr->thinking.p;
		blocks[n].len = mr->thinking.len;
		msg_signature(mr, sig);
		blocks[n++].signature = sig;
	}
	if (mr->text.len > 0 || mr->plan.tool_use || n == 0) {
		msg_block(mr, mr->plan.tool_use ? ANTHROPIC_BLOCK_TOOL_USE :
		    ANTHROPIC_BLOCK_TEXT, &blocks[n]);
		blocks[n].text = mr->text.p ? mr->text.p : "";
		blocks[n++].len = mr->text.len;
	}
	rc = reply_head_buf(r->reply, out, 200, "application/json",
	    engine_seq_id(r->seq), NULL);
	if (rc != TS_OK)
		return rc;
	mark = out->len;
	rc = anthropic_encode_message(out, &mr->meta, blocks, n, stop, seq,
	    len, &mr->usage);
	if (rc != TS_OK || ts_buf_append(out, "\n", 1) != TS_OK) {
		out->len = mark;
		http_error_set(&err, 500, "api_error", "encode_failed",
		    "the response could not be encoded");
		rc = anthropic_encode_error(out, &err);
		if (rc == TS_OK)
			rc = ts_buf_append(out, "\n", 1);
	}
	return rc;
}

static const struct relay_ops msg_answer_ops = {
	.token = msg_collect_token,
	.keepalive = relay_json_keepalive,
	.end = msg_answer_end,
	.free = msg_resp_free,
};

/*
 * Failure injection as on /v1 (v1.c v1_inject, handlers/inject.h), the
 * errors in Anthropic's shape: rate_limit 429 rate_limit_error with
 * Retry-After, server_error 500 api_error, overloaded 529
 * overloaded_error, context_length 400, invalid_api_key 401
 * authentication_error; timeout, midstream_error and midstream_cut as on
 * /v1. Returns 1 when the request was answered.
 */
static int
msg_inject(struct server *srv, struct reply *rp, struct msg_resp *mr,
    struct engine_request *job)
{
	struct inject_verdict v;

	if (inject_request(srv, rp->conn, 1, NULL, job, &v)) {
		if (v.kind == INJECT_OVERLOADED) {
			v.err.status = 529;
			snprintf(v.err.message, sizeof(v.err.message),
			    "Overloaded");
		} else if (v.kind == INJECT_INVALID_API_KEY) {
			/* Anthropic's 401 has no WWW-Authenticate */
			snprintf(v.err.message, sizeof(v.err.message),
			    "invalid x-api-key");
			v.extra[0] = '\0';
		}
		messages_fail(rp, &v.err, v.extra[0] != '\0' ? v.extra : NULL);
		return 1;
	}
	mr->injected = v.on_fire;
	mr->silent = (enum msg_silent)v.silence;
	return 0;
}

/* What msg_build makes and msg_start runs. */
struct msg_job {
	struct engine_request job;
	struct submit_record rec;
	struct ts_buf prompt;
	const char *stop[STOP_MAX];
	size_t stop_len[STOP_MAX];
};

/*
 * The most bytes a non-streamed Message may have: every token at the
 * vocabulary's worst escaped cost (openai/cost.h: the same escapes), a
 * tool input at its guide's bytes, the signature, ids, the model name
 * and the fixed fields. Refused over OPENAI_MAX_ANSWER_BYTES, the bound
 * the relay's buffer is sized for.
 */
static int
msg_bounded(struct server *srv, const struct anthropic_request *req,
    struct http_error *err)
{
	uint64_t per = srv->tokcost.text > srv->backend->max_token_bytes ?
	    srv->tokcost.text : srv->backend->max_token_bytes;
	uint64_t bound = 4096u + strlen(server_model_name(srv)) +
	    (uint64_t)req->max_tokens * per + ANTHROPIC_MAX_STOP_BYTES * 6u;

	if (req->stream || bound <= OPENAI_MAX_ANSWER_BYTES)
		return 0;
	http_error_set(err, 400, "invalid_request_error", "answer_too_large",
	    "the answer could be %llu bytes, over tokstream's limit of %u: "
	    "lower max_tokens or stream", (unsigned long long)bound,
	    OPENAI_MAX_ANSWER_BYTES);
	return 1;
}

/*
 * A stream's resume (docs/API.md "Resuming an Anthropic stream"): its
 * key, from the body's hash, the thinking tokens (the server's
 * --reasoning can change them), max_tokens and the injected error's
 * token; with a Last-Event-ID header (resume.h decides, against the key
 * of the id's own index), the first token to send and the record's link.
 * Returns 0, or 1 when answered (400 for an id that is not this
 * request's, 204 when the stream had ended).
 */
static int
msg_resume(struct server *srv, struct reply *rp, struct msg_resp *mr,
    struct msg_job *mj, uint64_t body_hash, struct http_error *err)
{
	struct engine_request *job = &mj->job;
	const char *h = conn_param(rp->conn, "HTTP_LAST_EVENT_ID");
	size_t hlen = h != NULL ? strlen(h) : 0;
	struct resume_start rs;
	struct resume_id id;
	const char *why;
	uint64_t want;
	char hb[12];
	int i, st;

	if (!mr->req.stream || mr->silent == MSG_SILENT_ALL)
		return 0;       /* no events, no ids */
	for (i = 0; i < 8; i++)
		hb[i] = (char)(body_hash >> (8 * i));
	for (i = 0; i < 4; i++)
		hb[8 + i] = (char)(mr->think >> (8 * i));
	mr->key = resume_key(hb, sizeof(hb), mr->req.max_tokens,
	    job->error_after);
	mr->eid.instance = srv->opt->instance;
	mj->rec.key = mr->key;
	/* a malformed id: resume_decide says why */
	want = hlen > 0 && resume_id_parse(h, hlen, &id, &why) == TS_OK ?
	    msg_event_key(mr->key, id.index) : mr->key;
	st = resume_decide(srv, h, hlen, want, mr->key, job->max_tokens,
	    job->error_after, "the request body, the thinking the server "
	    "gives it or an injected failure; or its index was changed",
	    &rs, err);
	if (st == 400) {
		messages_fail(rp, err, NULL);
		return 1;
	}
	if (st == 204 && id.index != RESUME_INDEX_END) {
		/* the last token max_tokens allows: what follows it is the
		 * end's events (the block's stop, message_delta,
		 * message_stop), which a client that held every delta may
		 * still lack; the sequence ends before any decode step */
		st = 0;
		rs.start = job->max_tokens;
	}
	if (st == 204) {
		/* EventSource stops reconnecting on 204 (WHATWG 9.2.3) */
		reply_head(rp, 204, NULL, 0, NULL);
		return 1;
	}
	if (rs.start > 0 && submit_count_prompt(srv, job, rs.start, err)) {
		messages_fail(rp, err, NULL);
		return 1;
	}
	mr->start = rs.start;
	job->start_index = rs.start;
	mj->rec.resume_index = rs.start;
	mj->rec.resumed_from = rs.from;
	mj->rec.from_instance = rs.from_inst;
	return 0;
}

/* Renders, counts, injects, plans and fills the engine request. Returns
 * 0, or 1 when answered. */
static int
msg_build(struct server *srv, struct reply *rp, struct msg_resp *mr,
    struct msg_job *mj)
{
	struct engine_request *job = &mj->job;
	const struct knobs *kn = &mr->req.knobs;
	struct http_error err;
	struct ts_buf body;
	const char *const *models;
	size_t n_models = server_model_names(srv, &models), i;
	uint64_t seed, body_hash;
	enum ts_err rc;

	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	rc = reply_read_json(rp->conn, &body, &err);
	if (rc == TS_OK)
		rc = anthropic_parse_request(body.p ? body.p : "", body.len, 0,
		    models, n_models, &mr->req, &err);
	/* a resumed stream's request is the same body (its events' ids
	 * carry this in their key) */
	body_hash = rng_fnv1a(RNG_FNV1A_INIT, body.p ? body.p : "", body.len);
	ts_buf_free(&body);
	if (rc != TS_OK || msg_bounded(srv, &mr->req, &err))
		goto refuse;
	if (anthropic_prompt(&mr->req, &mj->prompt) != TS_OK) {
		http_error_set(&err, 400, "invalid_request_error",
		    "invalid_value", "messages: %s", chat_render_error()[0] ?
		    chat_render_error() : "the prompt is too long");
		goto refuse;
	}
	job->prefill_ms = -1.0;
	job->error_after = -1;
	job->prompt = mj->prompt.p ? mj->prompt.p : "";
	job->prompt_len = mj->prompt.len;
	job->model = 0;
	job->prefix_cache = 1;
	if (submit_count_prompt(srv, job, 0, &err))
		goto refuse;
	if (msg_inject(srv, rp, mr, job) != 0)
		return 1;
	seed = rng_seed_of(job->prompt, job->prompt_len);
	mr->seed = seed;
	if (anthropic_plan_make(&mr->req, seed, (size_t)mr->req.max_tokens *
	    srv->backend->max_token_bytes, &mr->plan, &err) != TS_OK)
		goto refuse;
	anthropic_request_drop_schemas(&mr->req);
	if (mr->plan.tool_use && !srv->backend->guided) {
		http_error_set(&err, 400, "invalid_request_error",
		    "unsupported_parameter", "The %s backend cannot make "
		    "tool_use blocks (it has no guided decoding).",
		    srv->backend->name);
		goto refuse;
	}
	/* the engine request (v1.c v1_fill) */
	if (mr->req.max_tokens < job->max_tokens || job->max_tokens == 0)
		job->max_tokens = mr->req.max_tokens;
	if (job->error_after < 0)
		job->error_after = kn->error_after;
	mr->error_after = job->error_after;
	job->tpot_ms = kn->tpot_ms >= 0 ? (double)kn->tpot_ms : -1.0;
	job->t0_ns = rp->t0;
	mj->rec.kind = mr->req.stream ? STATE_KIND_STREAM :
	    STATE_KIND_GENERATE;
	engine_sampling_defaults(&job->sampling);
	job->sampling.temperature = mr->req.temperature;
	job->sampling.top_p = mr->req.top_p;
	job->sampling.top_k = mr->req.top_k;
	job->sampling.given = mr->req.sampling_given;
	if (mr->plan.tool_use) {
		/* the input stays whole: no stop strings, no thinking */
		job->sampling.guide = mr->plan.input.p ? mr->plan.input.p : "";
		job->sampling.guide_len = mr->plan.input.len;
	} else {
		for (i = 0; i < mr->req.n_stop && i < STOP_MAX; i++) {
			mj->stop[i] = job->stop[i] = mr->req.stop[i];
			mj->stop_len[i] = job->stop_len[i] =
			    mr->req.stop_len[i];
		}
		job->nstop = i;
		/* --reasoning always: thinking unless the request
		 * disabled it, at the default effort's budget */
		mr->think = think_tokens(mr->req.thinking_budget > 0 ||
		    mr->req.thinking_disabled ? mr->req.thinking_budget :
		    think_effort_budget(THINK_EFFORT_UNSET,
		    srv->opt->reasoning_always), job->max_tokens);
		job->sampling.min_tokens = think_min_tokens(mr->think);
	}
	if (msg_resume(srv, rp, mr, mj, body_hash, &err) != 0)
		return 1;
	if (job->prefill_ms < 0) {
		/* a resumed stream recomputes the tokens sent before */
		job->prefill_ms = kn->prefill_ms >= 0 ?
		    (double)kn->prefill_ms :
		    engine_prefill_ms(&srv->opt->engine.lat,
		    job->prompt_tokens + mr->start);
		job->prefill_per_token_ms = kn->prefill_ms >= 0 ? 0.0 :
		    srv->opt->engine.lat.prefill_per_token_ms;
	}
	return 0;
refuse:
	messages_fail(rp, &err, NULL);
	return 1;
}

/* Submits, sends a stream's head and message_start, hands over to the
 * relay. Returns 1 when it could not start (answered, or gone). */
static int
msg_start(struct server *srv, struct reply *rp, struct msg_resp *mr,
    struct msg_job *mj, struct engine_seq **sp)
{
	struct relay_env env;
	struct http_error err;
	struct engine_seq *s;
	struct ts_buf b;
	const char *model = server_model_name(srv);

	if (submit(srv, &mj->job, &mj->rec, rp->conn, sp, &err) != TS_OK) {
		messages_fail(rp, &err, "Retry-After: 1\r\n");
		return 1;
	}
	s = *sp;
	/* unique per request and run; digits only (API.md's examples) */
	anthropic_id("msg_", rng_mix64(engine_seq_id(s) ^
	    ((uint64_t)srv->started_at << 20)), 1, mr->id, sizeof(mr->id));
	mr->meta.id = mr->id;
	mr->meta.model = model;
	mr->meta.model_len = strlen(model);
	mr->prompt_tokens = mj->job.prompt_tokens;
	mr->usage.input_tokens = (uint32_t)mj->job.prompt_tokens;
	mr->cur = MSG_NO_BLOCK;
	mr->eid.stream = engine_seq_id(s);
	if (mr->start > 0) {
		/* resumed: the block token start - 1 was in is open (it had
		 * an id, so a delta), and message_start went out before */
		enum anthropic_block_kind k = msg_kind(mr, mr->start - 1);

		mr->cur = (int)k;
		mr->nblocks = k == ANTHROPIC_BLOCK_TEXT && mr->think > 0 ? 2 : 1;
	}
	if (mr->req.stream && mr->silent != MSG_SILENT_ALL) {
		enum ts_err rc;

		ts_buf_init(&b, 8192);
		rc = reply_head_buf(&mr->reply, &b, 200, SSE_CONTENT_TYPE,
		    engine_seq_id(s), "Cache-Control: no-cache\r\n"
		    "X-Accel-Buffering: no\r\n");
		if (rc == TS_OK && mr->start == 0)
			rc = anthropic_encode_message_start(&b, &mr->meta,
			    &mr->usage);
		if (rc == TS_OK)
			rc = conn_write(rp->conn, b.p, b.len);
		ts_buf_free(&b);
		if (rc != TS_OK)
			return 1;
	}
	env = server_relay_env(srv);
	/* an injected timeout (silent) collects, writes nothing and has no
	 * keep-alives (relay_hold) */
	relay_init(&mr->relay, &env, &mr->reply, s, mr->start, mj->stop,
	    mj->stop_len, mj->job.nstop, mr->req.stream &&
	    mr->silent != MSG_SILENT_ALL ? &msg_stream_ops : &msg_answer_ops,
	    mr);
	if (mr->silent == MSG_SILENT_ALL)
		relay_hold(&mr->relay, rp->t0 +
		    ts_ms_to_ns(MSG_INJECT_TIMEOUT_MS));
	server_stream(srv, rp->conn, &mr->relay);
	return 0;
}

void
messages_create(struct server *srv, struct reply *rp)
{
	struct msg_resp *mr = xcalloc(1, sizeof(*mr));
	struct engine_seq *s = NULL;
	struct msg_job mj;

	memset(&mj, 0, sizeof(mj));
	mj.rec.kind = STATE_KIND_GENERATE;
	ts_buf_init(&mj.prompt, 2 * HTTP_MAX_BODY_BYTES);
	ts_buf_init(&mr->thinking, (size_t)HTTP_MAX_TOKENS_CAP *
	    srv->backend->max_token_bytes * 3);
	ts_buf_init(&mr->text, (size_t)HTTP_MAX_TOKENS_CAP *
	    srv->backend->max_token_bytes * 3);
	mr->reply = *rp;
	if (msg_build(srv, rp, mr, &mj) != 0 ||
	    msg_start(srv, rp, mr, &mj, &s) != 0) {
		if (s != NULL) {
			engine_cancel(srv->engine, s, srv->now(),
			    ENGINE_CAUSE_CLIENT_GONE);
			engine_release(srv->engine, s);
		}
		anthropic_request_free(&mr->req);
		anthropic_plan_free(&mr->plan);
		ts_buf_free(&mr->thinking);
		ts_buf_free(&mr->text);
		free(mr);
	}
	ts_buf_free(&mj.prompt);
}

void
messages_count_tokens(struct server *srv, struct reply *rp)
{
	struct anthropic_request req;
	struct engine_request job;
	struct http_error err;
	struct ts_buf body, prompt, b;
	const char *const *models;
	size_t n_models = server_model_names(srv, &models);
	enum ts_err rc;

	memset(&job, 0, sizeof(job));
	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	ts_buf_init(&prompt, 2 * HTTP_MAX_BODY_BYTES);
	rc = reply_read_json(rp->conn, &body, &err);
	if (rc == TS_OK)
		rc = anthropic_parse_request(body.p ? body.p : "", body.len, 1,
		    models, n_models, &req, &err);
	ts_buf_free(&body);
	if (rc == TS_OK) {
		if (anthropic_prompt(&req, &prompt) != TS_OK) {
			http_error_set(&err, 400, "invalid_request_error",
			    "invalid_value", "messages: %s",
			    chat_render_error()[0] ? chat_render_error() :
			    "the prompt is too long");
			rc = TS_ELIMIT;
		}
		anthropic_request_free(&req);
	}
	if (rc == TS_OK) {
		job.prompt = prompt.p ? prompt.p : "";
		job.prompt_len = prompt.len;
		if (submit_count_prompt(srv, &job, 0, &err))
			rc = TS_EINVAL;
	}
	ts_buf_free(&prompt);
	if (rc != TS_OK) {
		messages_fail(rp, &err, NULL);
		return;
	}
	ts_buf_init(&b, 4096);
	if (reply_head_buf(rp, &b, 200, "application/json", 0, NULL) ==
	    TS_OK && anthropic_encode_count(&b, job.prompt_tokens) == TS_OK &&
	    ts_buf_append(&b, "\n", 1) == TS_OK)
		(void)conn_write(rp->conn, b.p, b.len);
	ts_buf_free(&b);
}
