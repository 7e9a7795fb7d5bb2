/*
 * handlers/v1.c - the OpenAI-compatible endpoints (docs/API.md "OpenAI
 * API"): POST /v1/completions and /v1/chat/completions, streamed as
 * text_completion / chat.completion.chunk SSE events or answered as one
 * object, and GET /v1/models. Parsing and encoding are src/openai/'s; this
 * file runs the request through the engine with its sampling and stop
 * strings.
 */
#include "handlers/v1.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "openai/chat.h"
#include "openai/cost.h"
#include "openai/encode.h"
#include "common/rng.h"
#include "openai/parse.h"
#include "openai/plan.h"
#include "openai/responses.h"
#include "handlers/inject.h"
#include "stores/metrics.h"
#include "transport/conn.h"
#include "transport/relay.h"
#include "transport/reply.h"
#include "handlers/server.h"
#include "proto/chat.h"
#include "proto/sse.h"
#include "handlers/submit.h"
#include "text/think.h"

/* Every stop string the API takes reaches the engine. */
_Static_assert(OPENAI_MAX_STOP <= STOP_MAX, "more stop strings than the "
    "engine matches");

_Static_assert(OPENAI_MAX_N <= RELAY_MAX_CHOICES, "a relay carries every "
    "choice");
/* A /v1 answer within its bound fits the relay's buffer with its head
 * (reply_head_buf: a status line and a few headers). */
_Static_assert(OPENAI_MAX_ANSWER_BYTES + 64u * 1024u <= RELAY_OUT_MAX,
    "a bounded answer fits the buffer it is encoded into");
_Static_assert(INJECT_NKINDS - 1 == METRICS_INJECTED_KINDS, "a metrics "
    "counter for every failure kind");

/* One choice of a /v1 response (the OpenAI API's n). */
struct v1_choice {
	struct engine_seq *seq;
	const struct openai_plan *plan; /* the response's (v1_resp.plan) */
	struct ts_buf text;           /* the answer so far: not streamed, or
				       * a /v1/responses stream (its done
				       * events repeat the text) */
	size_t released;              /* bytes of the answer released */
	size_t opened;                /* tool calls whose head went out */
	size_t closed;                /* ... and whose done events did
				       * (/v1/responses) */
	uint32_t lp_next;             /* first token whose logprobs are
				       * unsent */
	size_t lp_off;                /* its offset in the text, bytes */
	int role_sent;                /* its first delta went out */
	struct engine_sampling sampling; /* its sequence's (v1_plan) */
	uint32_t lp_upto;             /* tokens whose text was released (the
				       * whole answer's logprobs) */
	struct ts_buf reasoning;      /* the thinking so far: not streamed,
				       * or a /v1/responses stream */
};

/* What an injected failure keeps from the client (inject.h). */
enum v1_silent {
	V1_SPEAKS = INJECT_SPEAKS,          /* everything is sent */
	V1_SILENT_ALL = INJECT_SILENT_ALL,  /* timeout: not a byte */
	V1_SILENT_END = INJECT_SILENT_END   /* midstream_cut: no end after
					     * the tokens */
};

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
	struct openai_plan plan;      /* tool calls, a JSON guide, an echo:
				       * made once, every choice's */
	struct v1_choice *ch;         /* n of them */
	uint32_t n;
	int32_t error_after;
	enum v1_silent silent;        /* an injected timeout or cut */
	int injected;                 /* a mid-stream failure to count if it
				       * fires (enum inject_kind), or 0 */
	uint32_t think;               /* each choice's thinking tokens
				       * (text/think.h; v1_think) */
	int msg_opened;               /* /v1/responses stream: the message
				       * item followed the reasoning item */
};

/* Counts an injected mid-stream failure that ended the response. */
static void
v1_fired(struct relay *r, enum engine_finish f)
{
	struct v1_resp *vr = r->resp;

	if (vr->injected != 0 && f == ENGINE_FINISH_ERROR)
		metrics_injected(r->env.metrics, vr->injected);
	vr->injected = 0;
}

static void
v1_resp_free(struct relay *r)
{
	struct v1_resp *vr = r->resp;
	uint32_t i;

	openai_request_free(&vr->req);
	openai_plan_free(&vr->plan);
	for (i = 0; i < vr->n; i++) {
		ts_buf_free(&vr->ch[i].text);
		ts_buf_free(&vr->ch[i].reasoning);
	}
	free(vr->ch);
	free(vr);
}

/* The choice r's encoder is called for (relay.h r->choice). */
static struct v1_choice *
v1_cur(struct relay *r)
{
	struct v1_resp *vr = r->resp;

	return &vr->ch[r->choice < vr->n ? r->choice : 0];
}

/* Points the stream's state at choice i (its index, its role flag); call
 * v1_leave after encoding. */
static void
v1_enter(struct v1_resp *vr, uint32_t i)
{
	vr->stream.index = i;
	vr->stream.role_sent = vr->ch[i].role_sent;
}

static void
v1_leave(struct v1_resp *vr, uint32_t i)
{
	vr->ch[i].role_sent = vr->stream.role_sent;
}

/* OpenAI's finish_reason of an engine finish (length or stop). */
static enum openai_finish
v1_finish(enum engine_finish f)
{
	return f == ENGINE_FINISH_LENGTH ? OPENAI_FINISH_LENGTH :
	    OPENAI_FINISH_STOP;
}

/* How a choice ends: tool_calls when it is a tool-call answer that
 * stopped (every planned call complete). */
static enum openai_finish
v1_finish_of(const struct v1_choice *ch, enum engine_finish f)
{
	if (f == ENGINE_FINISH_LENGTH)
		return OPENAI_FINISH_LENGTH;
	return ch->plan->ncalls > 0 ? OPENAI_FINISH_TOOL_CALLS :
	    OPENAI_FINISH_STOP;
}

/* A choice's logprobs for its tokens [first, first + n), read from the
 * engine's record one token at a time (openai_lp_src): no list of them
 * is made. */
struct v1_lp {
	const struct engine_backend *be;
	struct engine_view v;
	uint32_t first;
	uint32_t k;                   /* alternatives per token */
	size_t off0, off;             /* text_offset of token first, and of
				       * the next one got */
	struct openai_lp_entry top[ENGINE_MAX_TOP_LOGPROBS];
};

/* Token id's text ("" for an id without one). */
static const char *
v1_text(const struct engine_backend *be, uint32_t id, size_t *len)
{
	const char *t = be->token_text(be->impl, id, len);

	if (t == NULL) {
		*len = 0;
		return "";
	}
	return t;
}

/* openai_lp_src.get over a struct v1_lp: called for i = 0, 1, ... in
 * order (a pass per array), so the offsets run from off0 each time. */
static void
v1_lp_get(void *ctx, size_t i, struct openai_lp_token *t)
{
	struct v1_lp *l = ctx;
	const struct engine_logprob *e = l->v.lp + (size_t)(l->first + i) *
	    l->v.lp_stride;
	uint32_t j;

	if (i == 0)
		l->off = l->off0;
	t->tok.text = v1_text(l->be, e[0].id, &t->tok.len);
	t->tok.logprob = e[0].logprob;
	for (j = 0; j < l->k; j++) {
		l->top[j].text = v1_text(l->be, e[1 + j].id, &l->top[j].len);
		l->top[j].logprob = e[1 + j].logprob;
	}
	t->top = l->top;
	t->ntop = l->k;
	t->text_offset = l->off;
	l->off += t->tok.len;
}

/*
 * The logprobs of choice ch's tokens [lp_next, upto) (engine_view.lp):
 * fills *l and *src over them and moves lp_next and lp_off past them.
 * src, or NULL when the request asked for none.
 */
static const struct openai_lp_src *
v1_logprobs(struct relay *r, struct v1_choice *ch, uint32_t upto,
    struct v1_lp *l, struct openai_lp_src *src)
{
	struct v1_resp *vr = r->resp;
	const struct engine_backend *be = r->env.backend;
	uint32_t i;
	size_t len;

	if (!vr->req.logprobs)
		return NULL;
	memset(l, 0, sizeof(*l));
	engine_seq_view(ch->seq, &l->v);
	if (upto > l->v.produced)
		upto = l->v.produced;
	if (l->v.lp == NULL || upto < ch->lp_next)
		upto = ch->lp_next;
	l->be = be;
	l->first = ch->lp_next;
	l->k = l->v.lp_stride > 0 ? l->v.lp_stride - 1 : 0;
	if (l->k > ENGINE_MAX_TOP_LOGPROBS)
		l->k = ENGINE_MAX_TOP_LOGPROBS;
	l->off0 = ch->lp_off;
	for (i = ch->lp_next; i < upto; i++) {
		(void)v1_text(be, l->v.lp[(size_t)i * l->v.lp_stride].id,
		    &len);
		ch->lp_off += len;
	}
	src->n = upto - ch->lp_next;
	src->get = v1_lp_get;
	src->ctx = l;
	ch->lp_next = upto;
	return src;
}

/* A choice's tool calls so far (the released part of each), for the
 * whole answer: calls cut before their first byte are left out. */
static size_t
v1_calls(const struct v1_resp *vr, const struct v1_choice *ch,
    struct openai_tool_call *out)
{
	size_t n = openai_plan_calls(ch->plan, &vr->req, out), i, m = 0;
	size_t have = ch->text.len;

	for (i = 0; i < n; i++) {
		size_t off = ch->plan->calls[i].off;

		if (off >= have && ch->plan->calls[i].len > 0)
			break;
		out[m] = out[i];
		out[m].args = ch->text.p + off;
		out[m].args_len = have - off < out[i].args_len ? have - off :
		    out[i].args_len;
		m++;
	}
	return m;
}

/* Where the released bytes [at, at + len) of a tool-call answer's guide
 * meet call c's span: its first byte's offset in *lo, and how many bytes
 * (0: none). */
static size_t
v1_call_span(const struct openai_plan_call *c, size_t at, size_t len,
    size_t *lo)
{
	size_t hi = at + len < c->off + c->len ? at + len : c->off + c->len;

	*lo = at > c->off ? at : c->off;
	return *lo < hi ? hi - *lo : 0;
}

/* A tool-call answer's released text (text, len), the bytes from
 * ch->released on of the plan's guide: each call's head once, then
 * fragments of its arguments, in order; lp (NULL: none) with the
 * first. */
static enum ts_err
v1_tool_token(struct v1_resp *vr, struct v1_choice *ch, struct ts_buf *out,
    const char *text, size_t len, const struct openai_lp_src *lp)
{
	size_t at = ch->released, i;
	enum ts_err rc = TS_OK;

	ch->released += len;
	for (i = 0; i < ch->plan->ncalls && rc == TS_OK; i++) {
		const struct openai_plan_call *c = &ch->plan->calls[i];
		const char *id = NULL;
		size_t lo, n = v1_call_span(c, at, len, &lo);

		if (n == 0)
			continue;
		if (i >= ch->opened) {
			id = c->id;
			ch->opened = i + 1;
		}
		rc = openai_encode_tool_delta(out, &vr->stream, (uint32_t)i,
		    id, vr->req.tools[c->tool].name, text + (lo - at), n, lp);
		lp = NULL;
	}
	return rc;
}

/* A /v1 stream's token: one chunk (tool_calls deltas for a tool-call
 * answer, with the token's logprobs when asked); an empty released text
 * (held back for a stop string or an incomplete character) sends
 * nothing. */
static enum ts_err
v1_stream_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct v1_resp *vr = r->resp;
	struct v1_choice *ch = v1_cur(r);
	const struct openai_lp_src *lp;
	struct openai_lp_src src;
	struct v1_lp l;
	enum ts_err rc;

	if (len == 0 || vr->silent == V1_SILENT_ALL)
		return TS_OK;
	lp = v1_logprobs(r, ch, index + 1, &l, &src);
	v1_enter(vr, r->choice);
	if (think_is_thinking(vr->think, index))
		rc = openai_encode_reasoning_chunk(out, &vr->stream, text, len,
		    lp);
	else if (ch->plan->ncalls > 0)
		rc = v1_tool_token(vr, ch, out, text, len, lp);
	else
		rc = openai_encode_chunk_lp(out, &vr->stream, text, len, lp);
	v1_leave(vr, r->choice);
	if (rc != TS_OK)
		return rc;      /* TS_ELIMIT: out is full */
	*event = 1;
	return TS_OK;
}

/* The usage of the whole response: prompt tokens once, every choice's
 * generated tokens (EOS and the token that completed a stop string
 * included). */
static void
v1_usage(struct v1_resp *vr, const struct engine_view *v0)
{
	struct engine_view v;
	uint32_t i;

	vr->usage.completion_tokens = v0->generated;
	vr->usage.cached_tokens = v0->cached_tokens;
	vr->usage.reasoning_tokens = v0->generated < vr->think ?
	    v0->generated : vr->think;
	for (i = 1; i < vr->n; i++) {
		engine_seq_view(vr->ch[i].seq, &v);
		vr->usage.completion_tokens += v.generated;
		vr->usage.reasoning_tokens += v.generated < vr->think ?
		    v.generated : vr->think;
	}
}

/* A choice of several that finished: its finish chunk. */
static enum ts_err
v1_stream_choice_end(struct relay *r, struct ts_buf *out, uint32_t choice,
    enum engine_finish f, const struct engine_view *v)
{
	struct v1_resp *vr = r->resp;
	enum ts_err rc;

	(void)v;
	if (vr->silent != V1_SPEAKS || f == ENGINE_FINISH_ERROR ||
	    f == ENGINE_FINISH_SHUTDOWN)
		return TS_OK;   /* the stream's end says it */
	v1_enter(vr, choice);
	rc = openai_encode_finish(out, &vr->stream, v1_finish_of(
	    &vr->ch[choice], f));
	v1_leave(vr, choice);
	return rc;
}

/* The end of a /v1 stream: the last choice's finish chunk, the usage
 * chunk, [DONE]; or the error event. */
static enum ts_err
v1_stream_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct v1_resp *vr = r->resp;
	struct http_error err;
	size_t mark = out->len;
	enum ts_err rc;

	v1_usage(vr, v);
	v1_fired(r, f);
	if (vr->silent != V1_SPEAKS)
		return TS_OK;   /* an injected cut: no finish, no [DONE] */
	if (reply_finish_error(vr->error_after, f, &err)) {
		http_error_set_param(&err, "%s", "");
		return openai_encode_stream_error(out, &err);
	}
	if (vr->n == 1)
		return openai_encode_end(out, &vr->stream,
		    v1_finish_of(&vr->ch[0], f), &vr->usage);
	/* n > 1: each choice's finish chunk went out as it ended
	 * (v1_stream_choice_end) */
	rc = openai_encode_usage(out, &vr->stream, &vr->usage);
	if (rc == TS_OK)
		rc = sse_encode_done(out);
	if (rc != TS_OK)
		out->len = mark;
	return rc;
}

static const struct relay_ops v1_stream_ops = {
	.token = v1_stream_token,
	.keepalive = relay_sse_keepalive,
	.end = v1_stream_end,
	.free = v1_resp_free,
	.tokens_reach_client = 1,
	.choice_end = v1_stream_choice_end,
};

/* The done events of every call opened and not yet closed (the released
 * part of its arguments), finish f. */
static enum ts_err
v1_resp_close_calls(struct v1_resp *vr, struct v1_choice *ch,
    struct ts_buf *out, size_t upto, enum openai_finish f)
{
	struct openai_tool_call calls[OPENAI_PLAN_MAX_CALLS];
	size_t n = v1_calls(vr, ch, calls);
	enum ts_err rc;

	for (; ch->closed < upto && ch->closed < n; ch->closed++) {
		rc = openai_resp_encode_call_done(out, &vr->rstream,
		    (uint32_t)ch->closed, &calls[ch->closed], f);
		if (rc != TS_OK)
			return rc;
	}
	return TS_OK;
}

/* A /v1/responses tool-call answer's released text: each call's
 * output_item.added when its first byte comes (the one before it done
 * then), then its arguments' delta events. ch->text already holds it. */
static enum ts_err
v1_resp_call_token(struct v1_resp *vr, struct v1_choice *ch,
    struct ts_buf *out, const char *text, size_t len)
{
	struct openai_tool_call calls[OPENAI_PLAN_MAX_CALLS];
	size_t at = ch->released, i;
	enum ts_err rc;

	ch->released += len;
	(void)openai_plan_calls(ch->plan, &vr->req, calls);
	for (i = 0; i < ch->plan->ncalls; i++) {
		size_t lo, n = v1_call_span(&ch->plan->calls[i], at, len, &lo);

		if (n == 0)
			continue;
		if (i >= ch->opened) {
			rc = v1_resp_close_calls(vr, ch, out, i,
			    OPENAI_FINISH_STOP);
			if (rc == TS_OK)
				rc = openai_resp_encode_call_added(out,
				    &vr->rstream, (uint32_t)i, &calls[i]);
			if (rc != TS_OK)
				return rc;
			ch->opened = i + 1;
		}
		rc = openai_resp_encode_call_delta(out, &vr->rstream,
		    (uint32_t)i, text + (lo - at), n);
		if (rc != TS_OK)
			return rc;
	}
	return TS_OK;
}

/* A thinking /v1/responses stream's reasoning item ends before the
 * message's first event: its done events, then the message added. */
static enum ts_err
v1_resp_open_msg(struct v1_resp *vr, struct v1_choice *ch, struct ts_buf *out)
{
	if (vr->think == 0 || vr->msg_opened)
		return TS_OK;
	vr->msg_opened = 1;
	return openai_resp_encode_reasoning_done(out, &vr->rstream,
	    ch->reasoning.p != NULL ? ch->reasoning.p : "",
	    ch->reasoning.len);
}

/* A /v1/responses stream's token: one response.output_text.delta (a
 * thinking token's reasoning delta). */
static enum ts_err
v1_resp_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct v1_resp *vr = r->resp;
	struct v1_choice *ch = v1_cur(r);
	enum ts_err rc;

	if (len == 0 || vr->silent == V1_SILENT_ALL)
		return TS_OK;
	if (think_is_thinking(vr->think, index)) {
		rc = ts_buf_append(&ch->reasoning, text, len);
		if (rc == TS_OK)
			rc = openai_resp_encode_reasoning_delta(out,
			    &vr->rstream, text, len);
		if (rc == TS_OK)
			*event = 1;
		return rc;
	}
	rc = v1_resp_open_msg(vr, ch, out);
	/* TS_ELIMIT: the answer's text or out is full */
	if (rc == TS_OK)
		rc = ts_buf_append(&ch->text, text, len);
	if (rc == TS_OK)
		rc = ch->plan->ncalls > 0 ?
		    v1_resp_call_token(vr, ch, out, text, len) :
		    openai_resp_encode_delta(out, &vr->rstream, text, len);
	if (rc != TS_OK)
		return rc;
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
	struct ts_buf *t = &vr->ch[0].text;
	struct http_error err;

	v1_usage(vr, v);
	v1_fired(r, f);
	if (vr->silent != V1_SPEAKS)
		return TS_OK;
	if (reply_finish_error(vr->error_after, f, &err)) {
		http_error_set_param(&err, "%s", "");
		return openai_resp_encode_error(out, &vr->rstream, &err,
		    t->p ? t->p : "", t->len, &vr->usage);
	}
	vr->rstream.meta.reasoning_text = vr->ch[0].reasoning.p;
	vr->rstream.meta.reasoning_len = vr->ch[0].reasoning.len;
	if (v1_resp_open_msg(vr, &vr->ch[0], out) != TS_OK)
		return TS_ELIMIT;
	if (vr->plan.ncalls > 0) {
		struct openai_tool_call calls[OPENAI_PLAN_MAX_CALLS];
		size_t n = v1_calls(vr, &vr->ch[0], calls), mark = out->len;
		enum ts_err rc = v1_resp_close_calls(vr, &vr->ch[0], out, n,
		    v1_finish(f));

		if (rc == TS_OK)
			rc = openai_resp_encode_end_calls(out, &vr->rstream,
			    calls, n, v1_finish(f), &vr->usage);
		if (rc != TS_OK)
			out->len = mark;
		return rc;
	}
	return openai_resp_encode_end(out, &vr->rstream, t->p ? t->p : "",
	    t->len, v1_finish(f), &vr->usage);
}

static const struct relay_ops v1_resp_stream_ops = {
	.token = v1_resp_token,
	.keepalive = relay_sse_keepalive,
	.end = v1_resp_end,
	.free = v1_resp_free,
	.tokens_reach_client = 1,
};

static enum ts_err
v1_collect_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct v1_resp *vr = r->resp;
	struct v1_choice *ch = v1_cur(r);

	(void)out;
	(void)event;
	/* a token whose text a stop string cut is not in the answer, nor in
	 * its logprobs (as in a stream) */
	if (len > 0)
		ch->lp_upto = index + 1;
	return ts_buf_append(think_is_thinking(vr->think, index) ?
	    &ch->reasoning : &ch->text, text, len) == TS_OK ? TS_OK :
	    TS_ELIMIT;
}

/* The whole answer: every choice's text (or tool calls) and logprobs. */
static enum ts_err
v1_answer_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	struct v1_resp *vr = r->resp;
	struct openai_tool_call calls[RELAY_MAX_CHOICES][OPENAI_PLAN_MAX_CALLS];
	struct openai_choice cs[RELAY_MAX_CHOICES];
	struct openai_lp_src src[RELAY_MAX_CHOICES];
	struct v1_lp lps[RELAY_MAX_CHOICES];
	struct ts_buf *t0 = &vr->ch[0].text;
	struct http_error err;
	enum ts_err rc;
	size_t mark;
	uint32_t i;

	v1_fired(r, f);
	if (vr->silent != V1_SPEAKS)
		return TS_OK;   /* an injected cut or timeout: no answer */
	if (reply_finish_error(vr->error_after, f, &err)) {
		http_error_set_param(&err, "%s", "");
		return reply_error_v1_buf(r->reply, out, &err,
		    engine_seq_id(r->seq));
	}
	v1_usage(vr, v);
	rc = reply_head_buf(r->reply, out, 200, "application/json",
	    engine_seq_id(r->seq), NULL);
	if (rc != TS_OK)
		return rc;
	mark = out->len;
	memset(cs, 0, sizeof(cs));
	for (i = 0; i < vr->n; i++) {
		struct v1_choice *ch = &vr->ch[i];
		struct engine_view vi;

		engine_seq_view(ch->seq, &vi);
		cs[i].text = ch->text.p ? ch->text.p : "";
		cs[i].len = ch->text.len;
		cs[i].finish = v1_finish_of(ch, vi.finish);
		cs[i].x.logprobs = v1_logprobs(r, ch, ch->lp_upto, &lps[i],
		    &src[i]);
		cs[i].x.calls = calls[i];
		cs[i].x.ncalls = ch->plan->ncalls > 0 ? v1_calls(vr, ch,
		    calls[i]) : 0;
		if (vr->think > 0) {
			cs[i].x.reasoning = ch->reasoning.p != NULL ?
			    ch->reasoning.p : "";
			cs[i].x.reasoning_len = ch->reasoning.len;
		}
	}
	vr->rmeta.reasoning_text = vr->ch[0].reasoning.p;
	vr->rmeta.reasoning_len = vr->ch[0].reasoning.len;
	rc = vr->meta.kind == OPENAI_RESPONSES && cs[0].x.ncalls > 0 ?
	    openai_resp_encode_calls(out, &vr->rmeta, calls[0],
	    cs[0].x.ncalls, v1_finish(f), &vr->usage) :
	    vr->meta.kind == OPENAI_RESPONSES ?
	    openai_resp_encode(out, &vr->rmeta, t0->p ? t0->p : "", t0->len,
	    v1_finish(f), &vr->usage) :
	    openai_encode_response_n(out, &vr->meta, cs, vr->n, &vr->usage);
	if (rc != TS_OK || ts_buf_append(out, "\n", 1) != TS_OK) {
		/* only a head went out (or nothing): say why instead */
		out->len = mark;
		http_error_set(&err, 500, "server_error", "encode_failed",
		    "the response could not be encoded");
		return reply_error_v1_buf(r->reply, out, &err,
		    engine_seq_id(r->seq));
	}
	return TS_OK;
}

static const struct relay_ops v1_answer_ops = {
	.token = v1_collect_token,
	.keepalive = relay_json_keepalive,
	.end = v1_answer_end,
	.free = v1_resp_free,
};

/* A /v1 error before anything else was sent, in the OpenAI shape. */
static void
v1_fail(struct reply *rp, struct http_error *err, const char *extra)
{
	reply_error_v1(rp, err, extra, 0);
}

/* 1 when the answer may be tool calls or is a JSON Schema instance. */
static int
v1_structured(const struct openai_request *req)
{
	return req->format != OPENAI_FORMAT_TEXT || (req->n_tools > 0 &&
	    req->tool_choice != OPENAI_TOOL_NONE);
}

/* The seed of choice k > 0 (choice 0 samples with the request's own
 * seed, so n = 1 is unchanged): a distinct stream per choice. */
static uint64_t
v1_choice_seed(uint64_t base, uint32_t k)
{
	return k == 0 ? base : rng_mix64(base + 0x9e3779b97f4a7c15ULL * k);
}

/*
 * Failure injection (handlers/inject.h, inject_request): the request's
 * X-Tokstream-Failure header, else the seeded draw for this process's
 * n-th /v1 request. Answers an HTTP failure, or a header refused,
 * itself (returns 1; err is its storage); for the others the job is
 * fitted to the failure, and the relay's silence set, and it returns 0.
 */
static int
v1_inject(struct server *srv, struct reply *rp, struct v1_resp *vr,
    struct engine_request *job, struct http_error *err)
{
	struct inject_verdict v;

	if (inject_request(srv, rp->conn, 1, " (--failure-injection-rate "
	    "needs no header)", job, &v)) {
		*err = v.err;
		if (v.kind == INJECT_CONTEXT_LENGTH &&
		    vr->req.kind != OPENAI_CHAT)
			http_error_set_param(err, "%s", vr->req.kind ==
			    OPENAI_COMPLETIONS ? "prompt" : "input");
		v1_fail(rp, err, v.extra[0] != '\0' ? v.extra : NULL);
		return 1;
	}
	vr->injected = v.on_fire;
	vr->silent = (enum v1_silent)v.silence;
	return 0;
}

/* What v1_build makes of a request and v1_start runs. */
struct v1_job {
	struct engine_request job;    /* its sampling is each choice's in
				       * turn (v1_choice.sampling) */
	struct submit_record rec;
	struct ts_buf prompt;         /* job.prompt's bytes */
	const char *stop[STOP_MAX];   /* job.stop, for the relay */
	size_t stop_len[STOP_MAX];
};

/* Fills ch->sampling, choice k's: the request's sampling, a seed of its
 * own for k > 0 (v1_choice_seed over `base`), the plan's guide. */
static void
v1_sampling(const struct v1_resp *vr, uint32_t k, uint64_t base,
    struct engine_sampling *sp)
{
	const struct v1_choice *ch = &vr->ch[k];

	engine_sampling_defaults(sp);
	sp->temperature = vr->req.temperature;
	sp->top_p = vr->req.top_p;
	sp->top_k = vr->req.top_k;
	sp->given = vr->req.sampling_given;
	sp->has_seed = vr->req.has_seed || k > 0;
	sp->seed = k == 0 ? (uint64_t)vr->req.seed : v1_choice_seed(base, k);
	sp->ignore_eos = vr->req.ignore_eos;
	if (ch->plan->guided) {
		sp->guide = ch->plan->guide.p != NULL ? ch->plan->guide.p : "";
		sp->guide_len = ch->plan->guide.len;
	}
	if (vr->req.logprobs)
		sp->logprobs = 1 + vr->req.top_logprobs;
}

/*
 * Plans the request's answer once (tool calls, a JSON guide, an echo:
 * openai/plan.h), for every choice, and fills each choice's sampling.
 * The plan is made no longer than the guide's bytes max_tokens tokens
 * can carry (max_token_bytes each: backend.h, guided), so a schema whose
 * instance is large costs what can be sent; the request's compiled
 * schemas are freed then. Returns 0, or 1 with *err filled (a plan
 * refused, or guided output on a backend without it).
 */
static int
v1_plan(struct server *srv, struct v1_resp *vr, const struct v1_job *vj,
    struct http_error *err)
{
	const struct engine_request *job = &vj->job;
	uint32_t tokens = vr->req.max_tokens, k;
	uint64_t base, pbase;
	int rc;

	base = vr->req.has_seed ? (uint64_t)vr->req.seed :
	    rng_seed_of(job->prompt, job->prompt_len);
	/* the plan (tool call ids and arguments) depends on the prompt too,
	 * so each turn of an agent loop with a fixed seed gets new ids */
	pbase = rng_seed_of(job->prompt, job->prompt_len) ^ (vr->req.has_seed ?
	    rng_mix64((uint64_t)vr->req.seed) : 0);
	/* v1_fill's max_tokens: an injected timeout's may be lower */
	if (job->max_tokens > 0 && job->max_tokens < tokens)
		tokens = job->max_tokens;
	rc = openai_plan_make(&vr->req, pbase, srv->opt->echo,
	    (size_t)tokens * srv->backend->max_token_bytes, &vr->plan, err);
	openai_request_drop_schemas(&vr->req);
	if (rc != TS_OK)
		return 1;
	if (vr->plan.guided && !srv->backend->guided) {
		http_error_set(err, 400, "invalid_request_error",
		    "unsupported_parameter", "The %s backend cannot make tool "
		    "calls, JSON output or echoes (it has no guided "
		    "decoding).", srv->backend->name);
		return 1;
	}
	vr->n = vr->req.n;
	vr->ch = xcalloc(vr->n, sizeof(*vr->ch));
	for (k = 0; k < vr->n; k++) {
		struct v1_choice *ch = &vr->ch[k];

		ts_buf_init(&ch->text, (size_t)HTTP_MAX_TOKENS_CAP *
		    srv->backend->max_token_bytes * 3);
		ts_buf_init(&ch->reasoning, (size_t)HTTP_MAX_TOKENS_CAP *
		    srv->backend->max_token_bytes * 3);
		ch->plan = &vr->plan;
		v1_sampling(vr, k, base, &ch->sampling);
	}
	return 0;
}

/*
 * The thinking of a chat or Responses answer in free text (no tool call,
 * no guided output: those stay whole): think_tokens of the request's
 * effort (or, with --reasoning always, the default one) within
 * max_tokens, the same for every choice, whose min_tokens then keeps EOS
 * out of it (text/think.h). usage.reasoning: the request thinks.
 */
static void
v1_think(struct server *srv, struct v1_resp *vr, uint32_t max_tokens)
{
	uint32_t budget, k;

	if (vr->req.kind == OPENAI_COMPLETIONS || vr->plan.guided ||
	    vr->plan.ncalls > 0)
		return;
	budget = think_effort_budget(vr->req.effort,
	    srv->opt->reasoning_always);
	vr->usage.reasoning = budget > 0;
	vr->think = think_tokens(budget, max_tokens);
	for (k = 0; k < vr->n; k++)
		vr->ch[k].sampling.min_tokens = think_min_tokens(vr->think);
}

/*
 * Fills the engine request of a parsed, planned request: max_tokens,
 * the latency (an injected timeout's, else the lab knobs', else the
 * latency model's), error_after, the stop strings (not for tool calls or
 * a JSON instance, which must stay whole: the guide ends them) and the
 * state record's kind.
 */
static void
v1_fill(struct server *srv, struct reply *rp, struct v1_resp *vr,
    struct v1_job *vj)
{
	struct engine_request *job = &vj->job;
	const struct knobs *kn = &vr->req.knobs;
	size_t i;

	if (vr->req.max_tokens < job->max_tokens || job->max_tokens == 0)
		job->max_tokens = vr->req.max_tokens;
	if (job->prefill_ms < 0) {
		job->prefill_ms = kn->prefill_ms >= 0 ?
		    (double)kn->prefill_ms :
		    engine_prefill_ms(&srv->opt->engine.lat,
		    job->prompt_tokens);
		job->prefill_per_token_ms = kn->prefill_ms >= 0 ? 0.0 :
		    srv->opt->engine.lat.prefill_per_token_ms;
	}
	job->tpot_ms = kn->tpot_ms >= 0 ? (double)kn->tpot_ms : -1.0;
	if (job->error_after < 0)
		job->error_after = kn->error_after;
	vr->error_after = job->error_after;
	job->t0_ns = rp->t0;
	vj->rec.kind = vr->req.stream ? STATE_KIND_STREAM :
	    STATE_KIND_GENERATE;
	for (i = 0; !v1_structured(&vr->req) && i < vr->req.n_stop &&
	    i < STOP_MAX; i++) {
		vj->stop[i] = job->stop[i] = vr->req.stop[i].s;
		vj->stop_len[i] = job->stop_len[i] = vr->req.stop[i].len;
	}
	job->nstop = i;
	v1_think(srv, vr, job->max_tokens);
	job->sampling = vr->ch[0].sampling;
}

/*
 * Builds a /v1 request's job, with no side effect on the engine: reads
 * the body (reply_read_json: the size and depth limits), parses it
 * (src/openai/), renders the prompt (openai/chat.h) and counts its
 * tokens, applies failure injection, checks what the backend can do,
 * plans each choice and fills the engine request (vj). Returns 0, or 1
 * when the request was answered (an error, or an injected HTTP failure).
 */
static int
v1_build(struct server *srv, struct reply *rp, enum openai_kind kind,
    struct v1_resp *vr, struct v1_job *vj)
{
	struct http_error err;
	struct ts_buf body;
	const char *const *models;
	size_t n_models = server_model_names(srv, &models);
	struct engine_request *job = &vj->job;
	enum ts_err rc;

	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	rc = reply_read_json(rp->conn, &body, &err);
	if (rc == TS_OK)
		rc = openai_parse_request(kind, body.p ? body.p : "",
		    body.len, models, n_models, &vr->req, &err);
	ts_buf_free(&body);
	/* an answer that could outgrow its buffer is refused before any
	 * work (openai/cost.h): the I/O thread encodes it whole */
	if (rc == TS_OK)
		rc = openai_answer_check(&vr->req, &srv->tokcost,
		    strlen(server_model_name(srv)), &err);
	if (rc != TS_OK)
		goto refuse;
	if (kind != OPENAI_COMPLETIONS ?
	    openai_chat_prompt(&vr->req, &vj->prompt) != TS_OK :
	    ts_buf_append(&vj->prompt, vr->req.prompt, vr->req.prompt_len) !=
	    TS_OK) {
		http_error_set(&err, 400, "invalid_request_error",
		    "invalid_value", "%s", kind == OPENAI_COMPLETIONS ?
		    "the prompt is too long" : chat_render_error()[0] ?
		    chat_render_error() : "the messages are too long");
		goto refuse;
	}
	job->prefill_ms = -1.0;
	job->error_after = -1;
	job->prompt = vj->prompt.p ? vj->prompt.p : "";
	job->prompt_len = vj->prompt.len;
	job->model = 0;     /* the backend's default model is the one served */
	job->prefix_cache = 1;
	if (submit_count_prompt(srv, job, 0, &err))
		goto refuse;
	if (v1_inject(srv, rp, vr, job, &err) != 0)
		return 1;
	if (vr->req.logprobs && srv->backend->logprobs == NULL) {
		http_error_set(&err, 400, "invalid_request_error",
		    "unsupported_parameter", "The %s backend has no "
		    "logprobs.", srv->backend->name);
		http_error_set_param(&err, "logprobs");
		goto refuse;
	}
	if (v1_plan(srv, vr, vj, &err) != 0)
		goto refuse;
	v1_fill(srv, rp, vr, vj);
	return 0;
refuse:
	v1_fail(rp, &err, NULL);
	return 1;
}

/* The response's metadata, from its first sequence s. */
static void
v1_meta(struct server *srv, struct v1_resp *vr, enum openai_kind kind,
    struct engine_seq *s, const struct engine_request *job)
{
	const char *model = server_model_name(srv);

	vr->meta.kind = kind;
	vr->meta.id = engine_seq_id(s);
	vr->meta.created = (int64_t)time(NULL);
	vr->meta.model = model;
	vr->meta.model_len = strlen(model);
	vr->meta.id_prefix = srv->opt->id_prefix;
	vr->meta.reasoning_field = srv->opt->reasoning_field;
	vr->usage.prompt_tokens = (uint32_t)job->prompt_tokens;
	vr->rmeta.id = vr->meta.id;
	vr->rmeta.id_prefix = vr->meta.id_prefix;
	vr->rmeta.created_at = vr->meta.created;
	vr->rmeta.model = model;
	vr->rmeta.model_len = vr->meta.model_len;
	vr->rmeta.instructions = vr->req.instructions;
	vr->rmeta.instructions_len = vr->req.instructions_len;
	vr->rmeta.max_output_tokens = vr->req.max_tokens;
	vr->rmeta.has_max_output = vr->req.has_max_tokens;
	{
		/* what the sequence runs with: the model's defaults fill
		 * what the request left out */
		struct engine_sampling in, eff;

		engine_sampling_defaults(&in);
		in.temperature = vr->req.temperature;
		in.top_p = vr->req.top_p;
		in.given = vr->req.sampling_given;
		engine_sampling_effective(srv->backend, &in, &eff);
		vr->rmeta.temperature = eff.temperature;
		vr->rmeta.top_p = eff.top_p;
	}
	vr->rmeta.tools = vr->req.tools_raw;
	vr->rmeta.tool_choice = vr->req.tool_choice_raw;
	vr->rmeta.parallel_tool_calls = vr->req.parallel_tool_calls;
	vr->rmeta.reasoning = vr->think > 0;
	vr->rmeta.effort = think_effort_name(vr->req.effort);
	if (vr->rmeta.effort == NULL && vr->usage.reasoning)
		vr->rmeta.effort = think_effort_name(THINK_DEFAULT_EFFORT);
	vr->rmeta.summary = vr->req.reasoning_summary == 1 ? "auto" :
	    vr->req.reasoning_summary == 2 ? "concise" :
	    vr->req.reasoning_summary == 3 ? "detailed" : NULL;
}

/* The relay ops of a response: silent, one answer, or a stream. */
static const struct relay_ops *
v1_ops(const struct v1_resp *vr, enum openai_kind kind)
{
	if (vr->silent == V1_SILENT_ALL || !vr->req.stream)
		return &v1_answer_ops;
	return kind == OPENAI_RESPONSES ? &v1_resp_stream_ops :
	    &v1_stream_ops;
}

/*
 * Starts a built request: submits each choice's sequence (n slots, as
 * vLLM's n), sends a stream's head (and the Responses API's opening
 * events), and hands the response to its relay, which owns vr from then
 * on. Returns 0, or 1 when it could not start (a refused submit, answered
 * with its error; a client gone): the caller discards vr then, which
 * cancels the choices already submitted.
 */
static int
v1_start(struct server *srv, struct reply *rp, enum openai_kind kind,
    struct v1_resp *vr, struct v1_job *vj)
{
	struct relay_env env;
	struct http_error err;
	struct engine_seq *s;
	struct ts_buf b;
	uint32_t k;

	for (k = 0; k < vr->n; k++) {
		vj->job.sampling = vr->ch[k].sampling;
		if (submit(srv, &vj->job, &vj->rec, rp->conn, &vr->ch[k].seq,
		    &err) != TS_OK) {
			v1_fail(rp, &err, "Retry-After: 1\r\n");
			return 1;
		}
	}
	s = vr->ch[0].seq;
	v1_meta(srv, vr, kind, s, &vj->job);
	if (vr->req.stream && vr->silent != V1_SILENT_ALL) {
		enum ts_err rc;

		openai_stream_init(&vr->stream, &vr->meta,
		    vr->req.include_usage);
		openai_resp_stream_init(&vr->rstream, &vr->rmeta);
		ts_buf_init(&b, 4096);
		rc = reply_head_buf(&vr->reply, &b, 200, SSE_CONTENT_TYPE,
		    vr->meta.id, "Cache-Control: no-cache\r\n"
		    "X-Accel-Buffering: no\r\n");
		if (rc == TS_OK && kind == OPENAI_RESPONSES)
			rc = vr->plan.ncalls > 0 ?
			    openai_resp_encode_start_calls(&b, &vr->rstream) :
			    vr->think > 0 ?
			    openai_resp_encode_start_reasoning(&b,
			    &vr->rstream) :
			    openai_resp_encode_start(&b, &vr->rstream);
		if (rc == TS_OK)
			rc = conn_write(rp->conn, b.p, b.len);
		ts_buf_free(&b);
		if (rc != TS_OK)
			return 1;
	}
	env = server_relay_env(srv);
	relay_init(&vr->relay, &env, &vr->reply, s, 0, vj->stop, vj->stop_len,
	    vj->job.nstop, v1_ops(vr, kind), vr);
	for (k = 1; k < vr->n; k++)
		(void)relay_add_choice(&vr->relay, vr->ch[k].seq);
	if (vr->silent == V1_SILENT_ALL)
		relay_hold(&vr->relay, rp->t0 +
		    ts_ms_to_ns(INJECT_TIMEOUT_MS));
	server_stream(srv, rp->conn, &vr->relay);
	return 0;
}

/* Frees a response that never reached its relay, cancelling the choices
 * submitted (a later choice's 429, a client gone): not generated for
 * anybody. */
static void
v1_discard(struct server *srv, struct v1_resp *vr)
{
	uint32_t k;

	for (k = 0; vr->ch != NULL && k < vr->n; k++) {
		if (vr->ch[k].seq != NULL) {
			engine_cancel(srv->engine, vr->ch[k].seq, srv->now(),
			    ENGINE_CAUSE_CLIENT_GONE);
			engine_release(srv->engine, vr->ch[k].seq);
		}
		ts_buf_free(&vr->ch[k].text);
		ts_buf_free(&vr->ch[k].reasoning);
	}
	free(vr->ch);
	openai_plan_free(&vr->plan);
	openai_request_free(&vr->req);
	free(vr);
}

/*
 * POST /v1/completions, /v1/chat/completions and /v1/responses: build the
 * job (v1_build), then start it (v1_start): answered as one JSON object,
 * or as chat.completion.chunk / text_completion SSE chunks, or as the
 * Responses API's named events (OpenAI API reference).
 */
void
v1_generate(struct server *srv, struct reply *rp, enum openai_kind kind)
{
	struct v1_resp *vr = xcalloc(1, sizeof(*vr));
	struct v1_job vj;

	memset(&vj, 0, sizeof(vj));
	vj.rec.kind = STATE_KIND_GENERATE;
	ts_buf_init(&vj.prompt, 2 * HTTP_MAX_BODY_BYTES);
	vr->reply = *rp;
	if (v1_build(srv, rp, kind, vr, &vj) != 0 ||
	    v1_start(srv, rp, kind, vr, &vj) != 0)
		v1_discard(srv, vr);
	ts_buf_free(&vj.prompt);
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
	mi->chat_template = srv->chat_template != NULL ? srv->chat_template :
	    CHAT_TEMPLATE;
	mi->chat_template_source = srv->chat_template_source;
	mi->model_meta = srv->model_meta;
	mi->latency_profile = srv->profile;
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
