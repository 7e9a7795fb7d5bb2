/*
 * transport/relay.c - from published token ids to encoded bytes, and the
 * blocking driver (relay.h).
 */
#include "transport/relay.h"

#include <stdlib.h>
#include <string.h>

#include "transport/conn.h"
#include "stores/metrics.h"
#include "transport/reply.h"

/* Longest wait without news before the driver looks again. */
#define RELAY_POLL_NS 1000000000LL

#define CONST_STR_LEN(s) (s), (sizeof(s) - 1)

enum ts_err
relay_sse_keepalive(struct relay *r, struct ts_buf *out)
{
	(void)r;
	return ts_buf_append(out, CONST_STR_LEN(": keep-alive\n\n"));
}

/*
 * lighttpd notices a client that left only when it writes to it
 * (docs/RELIABILITY.md "How a client that leaves is noticed"), and a JSON
 * answer writes nothing until it is complete. So an answer that takes
 * longer than one keep-alive interval commits to 200 (with X-Request-Id)
 * and then sends a newline per interval, as S3's CompleteMultipartUpload
 * does. An error after that point arrives as the {"error":...} body of
 * the 200. A 1xx interim response would keep the status but Python's
 * http.client takes any 1xx but 100 as the final response, so it is not
 * used.
 */
enum ts_err
relay_json_keepalive(struct relay *r, struct ts_buf *out)
{
	if (reply_head_buf(r->reply, out, 200, "application/json",
	    engine_seq_id(r->seq), NULL) != TS_OK)
		return TS_ELIMIT;
	return ts_buf_append(out, "\n", 1);
}

enum ts_err
relay_init(struct relay *r, const struct relay_env *env, struct reply *rp,
    struct engine_seq *s, uint32_t start_index, const char *const stop[],
    const size_t stop_len[], size_t nstop, const struct relay_ops *ops,
    void *resp)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->env = *env;
	r->reply = rp;
	r->seq = s;
	r->ops = ops;
	r->resp = resp;
	r->start_index = start_index;
	r->t0 = rp->t0;
	r->last_write = rp->t0;
	r->keepalive_ns = ops->keepalive != NULL ?
	    ts_ms_to_ns(env->keepalive_ms) : 0;
	/* the longest token text, held back stop-string bytes and U+FFFD
	 * repairs fit many times over */
	ts_buf_init(&r->piece, 64 * 1024);
	r->ch = xcalloc(1, sizeof(*r->ch));
	r->nch = 1;
	r->ch[0].seq = s;
	if (nstop > STOP_MAX)
		return TS_ELIMIT;
	for (i = 0; i < nstop; i++) {
		if (stop_len[i] > STOP_MAX_BYTES)
			return TS_ELIMIT;
		memcpy(r->stop[i], stop[i], stop_len[i]);
		r->stop_p[i] = r->stop[i];
		r->stop_len[i] = stop_len[i];
	}
	r->nstop = nstop;
	return release_init(&r->ch[0].rel, r->stop_p, r->stop_len, nstop);
}

enum ts_err
relay_add_choice(struct relay *r, struct engine_seq *s)
{
	struct relay_choice *c;

	if (r->nch >= RELAY_MAX_CHOICES)
		return TS_ELIMIT;
	r->ch = xrealloc(r->ch, (r->nch + 1u) * sizeof(*r->ch));
	c = &r->ch[r->nch];
	memset(c, 0, sizeof(*c));
	c->seq = s;
	r->nch++;
	return release_init(&c->rel, r->stop_p, r->stop_len, r->nstop);
}

void
relay_listen(struct relay *r, struct engine_listener *l)
{
	uint32_t i;

	for (i = 0; i < r->nch; i++)
		engine_seq_listen(r->env.engine, r->ch[i].seq, l);
}

/* The released text of token `id` into r->piece. */
static void
release_id(struct relay *r, struct release *rel, uint32_t id)
{
	const struct engine_backend *be = r->env.backend;
	size_t len;
	const char *text = be->token_text(be->impl, id, &len);

	ts_buf_reset(&r->piece);
	(void)release_text(rel, text, text != NULL ? len : 0, &r->piece,
	    NULL);
}

/* An op returned rc (not TS_OK): kept for relay_fail_cause. */
static enum relay_state
relay_failed(struct relay *r, enum ts_err rc)
{
	r->fail = rc;
	return RELAY_FAIL;
}

/* Choice i's news: its tokens, and its end when it finished (*ended).
 * RELAY_FAIL when encoding failed, RELAY_DONE when the client is gone. */
static enum relay_state
pump_choice(struct relay *r, struct ts_buf *out, uint32_t i,
    struct engine_view *v, int *ended, size_t out0)
{
	struct relay_choice *c = &r->ch[i];
	enum ts_err rc;
	int event;
	uint32_t budget = RELAY_PUMP_TOKENS;

	*ended = c->ended;
	if (c->ended)
		return RELAY_MORE;
	r->choice = i;
	engine_seq_view(c->seq, v);
	while (c->sent < v->produced) {
		if (budget-- == 0 || out->len - out0 >= RELAY_PUMP_BYTES) {
			r->backlog = 1;         /* the rest next pump */
			return RELAY_MORE;
		}
		release_id(r, &c->rel, v->ids[c->sent]);
		event = 0;
		rc = r->ops->token(r, out, r->start_index + c->sent,
		    r->piece.p != NULL ? r->piece.p : "", r->piece.len,
		    &event);
		if (rc != TS_OK)
			return relay_failed(r, rc);
		c->sent++;
		c->unwritten++;
		c->events += event != 0;
		r->events += event != 0;
	}
	if (v->finish == ENGINE_FINISH_NONE)
		return RELAY_MORE;
	if (v->finish == ENGINE_FINISH_CANCELLED)
		return RELAY_DONE;      /* nobody to tell */
	{
		struct release_chunk tail;

		/* What the detokenizer held to the end (an incomplete
		 * character at max_tokens) goes with the last token. */
		release_finish(&c->rel, &tail);
		event = 0;
		rc = tail.len > 0 ? r->ops->token(r, out, r->start_index +
		    (c->sent > 0 ? c->sent - 1 : 0), tail.p, tail.len,
		    &event) : TS_OK;
		if (rc != TS_OK)
			return relay_failed(r, rc);
		c->events += event != 0;
		r->events += event != 0;
	}
	c->ended = 1;
	*ended = 1;
	return RELAY_MORE;
}

/* A held response whose choices have all ended lets its sequences go
 * (relay_hold): what its end needs of choice 0 is kept, without the ids
 * the release frees. */
static void
relay_let_go(struct relay *r)
{
	struct engine_view v;
	uint32_t i;

	if (r->let_go)
		return;
	engine_seq_view(r->ch[0].seq, &v);
	memset(&r->held_view, 0, sizeof(r->held_view));
	r->held_view.produced = v.produced;
	r->held_view.generated = v.generated;
	r->held_view.finish = v.finish;
	r->held_view.in_slot = v.in_slot;
	r->held_view.cached_tokens = v.cached_tokens;
	for (i = 0; i < r->nch; i++) {
		engine_release(r->env.engine, r->ch[i].seq);
		r->ch[i].seq = NULL;
	}
	r->seq = NULL;
	r->let_go = 1;
}

enum relay_state
relay_pump(struct relay *r, struct ts_buf *out, int64_t now)
{
	struct engine_view v, v0;
	enum relay_state st;
	enum ts_err rc;
	uint32_t i, left = 0;
	int ended, was;
	size_t out0 = out->len;

	if (r->ended)
		return RELAY_DONE;
	r->backlog = 0;
	memset(&v0, 0, sizeof(v0));
	for (i = 0; i < r->nch; i++) {
		was = r->ch[i].ended;
		st = pump_choice(r, out, i, &v, &ended, out0);
		if (st == RELAY_DONE)
			r->ended = 1;
		if (st != RELAY_MORE)
			return st;
		if (i == 0 && !was)
			v0 = v;
		if (!ended) {
			left++;
			continue;
		}
		/* a choice that finishes before the others: its own end */
		rc = !was && r->nch > 1 && r->ops->choice_end != NULL ?
		    r->ops->choice_end(r, out, i, v.finish, &v) : TS_OK;
		if (rc != TS_OK)
			return relay_failed(r, rc);
	}
	if (left == 0 && now < r->hold_until) {
		relay_let_go(r);
		return RELAY_MORE;      /* held open (relay_hold) */
	}
	if (left == 0) {
		r->ended = 1;
		if (r->let_go)
			v0 = r->held_view;
		else if (r->nch > 1 || v0.finish == ENGINE_FINISH_NONE)
			engine_seq_view(r->ch[0].seq, &v0);
		r->choice = 0;
		rc = r->ops->end(r, out, v0.finish, &v0);
		if (rc != TS_OK)
			return relay_failed(r, rc);
		r->ends_well = 1;
		return RELAY_DONE;
	}
	if (r->keepalive_ns > 0 && now >= r->last_write + r->keepalive_ns &&
	    out->len == 0) {
		rc = r->ops->keepalive(r, out);
		if (rc != TS_OK)
			return relay_failed(r, rc);
		/* written at once by the driver: the clock restarts */
		r->last_write = now;
	}
	return RELAY_MORE;
}

void
relay_flushed(struct relay *r, int64_t now)
{
	struct metrics *m = r->env.metrics;
	uint32_t i, k;

	/* The response's first token event gives TTFT (from the request's
	 * arrival); every later event of a choice gives ITL, from that
	 * choice's previous one (with n > 1 the choices' events interleave:
	 * a gap between two choices' events is no inter-token latency). */
	for (i = 0; i < r->nch; i++) {
		struct relay_choice *c = &r->ch[i];

		for (k = 0; k < c->events; k++) {
			if (r->last_token == 0)
				metrics_observe(m, METRICS_TTFT, now - r->t0);
			else if (c->last_token != 0)
				metrics_observe(m, METRICS_ITL,
				    now - c->last_token);
			r->last_token = now;
			c->last_token = now;
		}
		c->events = 0;
	}
	if (r->events > 0 && r->ops->tokens_reach_client)
		r->last_write = now;
	r->events = 0;
	for (i = 0; i < r->nch; i++) {
		struct relay_choice *c = &r->ch[i];

		c->delivered += c->unwritten;
		c->unwritten = 0;
		if (c->seq != NULL)
			engine_delivered(c->seq, c->delivered);
	}
	if (r->ended && r->ends_well) {
		metrics_observe(m, METRICS_E2E, now - r->t0);
		r->ends_well = 0;       /* counted once */
	}
}

void
relay_gone(struct relay *r, int64_t now, enum engine_cause cause)
{
	uint32_t i;

	r->ended = 1;
	r->ends_well = 0;
	for (i = 0; i < r->nch; i++)
		if (r->ch[i].seq != NULL)       /* NULL: let go (held) */
			engine_cancel(r->env.engine, r->ch[i].seq, now,
			    cause);
}

enum engine_cause
relay_fail_cause(const struct relay *r)
{
	return r->fail == TS_ELIMIT ? ENGINE_CAUSE_OUTPUT_LIMIT :
	    ENGINE_CAUSE_SERVER_ERROR;
}

int64_t
relay_deadline(const struct relay *r)
{
	if (r->keepalive_ns <= 0 || r->ended)
		return INT64_MAX;
	return r->last_write + r->keepalive_ns;
}

int
relay_backlog(const struct relay *r)
{
	return r->backlog && !r->ended;
}

void
relay_hold(struct relay *r, int64_t until)
{
	r->hold_until = until;
	r->keepalive_ns = 0;    /* silent: not even a keep-alive */
}

int64_t
relay_hold_deadline(const struct relay *r)
{
	return r->hold_until > 0 && !r->ended ? r->hold_until : INT64_MAX;
}

void
relay_finish(struct relay *r)
{
	uint32_t i;

	for (i = 0; i < r->nch; i++)
		engine_release(r->env.engine, r->ch[i].seq);
	free(r->ch);
	r->ch = NULL;
	r->nch = 0;
	r->seq = NULL;
	ts_buf_free(&r->piece);
	if (r->ops->free != NULL)
		r->ops->free(r);
}

void
relay_run(struct conn *c, struct relay *r)
{
	struct ts_buf out;

	/* a whole answer: POST /generate's 8192 tokens of up to 32 bytes,
	 * JSON-escaped, or a /v1 answer within its bound */
	ts_buf_init(&out, RELAY_OUT_MAX);
	relay_listen(r, c->ops->listener(c));
	for (;;) {
		int64_t now = r->env.now(), deadline;
		enum relay_state st = relay_pump(r, &out, now);

		if (st == RELAY_FAIL) {
			relay_gone(r, now, relay_fail_cause(r));
			break;
		}
		if (out.len > 0) {
			if (conn_write(c, out.p, out.len) != TS_OK) {
				relay_gone(r, r->env.now(),
				    ENGINE_CAUSE_CLIENT_GONE);
				break;
			}
			relay_flushed(r, r->env.now());
			ts_buf_reset(&out);
		}
		if (st == RELAY_DONE)
			break;
		if (relay_backlog(r))
			continue;       /* more is ready: no wait */
		deadline = relay_deadline(r);
		if (relay_hold_deadline(r) < deadline)
			deadline = relay_hold_deadline(r);
		if (deadline > now + RELAY_POLL_NS)
			deadline = now + RELAY_POLL_NS;
		if (c->ops->wait(c, deadline) != TS_OK) {
			c->hup = 1;
			relay_gone(r, r->env.now(), ENGINE_CAUSE_CLIENT_GONE);
			break;
		}
	}
	ts_buf_free(&out);
	relay_finish(r);
}
