/*
 * server/relay.c - from published token ids to encoded bytes, and the
 * blocking driver (relay.h).
 */
#include "server/relay.h"

#include <string.h>

#include "server/conn.h"
#include "server/metrics.h"
#include "server/reply.h"
#include "server/server.h"

/* Longest wait without news before the driver looks again. */
#define RELAY_POLL_NS 1000000000LL

enum ts_err
relay_init(struct relay *r, struct server *srv, struct reply *rp,
    struct engine_seq *s, uint32_t start_index, const char *const stop[],
    const size_t stop_len[], size_t nstop, const struct relay_ops *ops,
    void *resp)
{
	memset(r, 0, sizeof(*r));
	r->srv = srv;
	r->reply = rp;
	r->seq = s;
	r->ops = ops;
	r->resp = resp;
	r->start_index = start_index;
	r->t0 = rp->t0;
	r->last_write = rp->t0;
	r->keepalive_ns = ops->keepalive != NULL ?
	    ts_ms_to_ns(srv->opt->keepalive_ms) : 0;
	/* the longest token text, held back stop-string bytes and U+FFFD
	 * repairs fit many times over */
	ts_buf_init(&r->piece, 64 * 1024);
	return release_init(&r->rel, stop, stop_len, nstop);
}

/* The released text of token `id` into r->piece. */
static void
release_id(struct relay *r, uint32_t id)
{
	const struct engine_backend *be = r->srv->backend;
	size_t len;
	const char *text = be->token_text(be->impl, id, &len);

	ts_buf_reset(&r->piece);
	(void)release_text(&r->rel, text, text != NULL ? len : 0, &r->piece,
	    NULL);
}

enum relay_state
relay_pump(struct relay *r, struct ts_buf *out, int64_t now)
{
	struct engine_view v;
	int event;

	if (r->ended)
		return RELAY_DONE;
	engine_seq_view(r->seq, &v);
	while (r->sent < v.produced) {
		release_id(r, v.ids[r->sent]);
		event = 0;
		if (r->ops->token(r, out, r->start_index + r->sent,
		    r->piece.p != NULL ? r->piece.p : "", r->piece.len,
		    &event) != TS_OK)
			return RELAY_FAIL;
		r->sent++;
		r->unwritten++;
		r->events += event != 0;
	}
	if (v.finish != ENGINE_FINISH_NONE) {
		struct release_chunk tail;

		r->ended = 1;
		if (v.finish == ENGINE_FINISH_CANCELLED)
			return RELAY_DONE;      /* nobody to tell */
		/* What the detokenizer held to the end (an incomplete
		 * character at max_tokens) goes with the last token. */
		release_finish(&r->rel, &tail);
		event = 0;
		if (tail.len > 0 && r->ops->token(r, out, r->start_index +
		    (r->sent > 0 ? r->sent - 1 : 0), tail.p, tail.len,
		    &event) != TS_OK)
			return RELAY_FAIL;
		r->events += event != 0;
		if (r->ops->end(r, out, v.finish, &v) != TS_OK)
			return RELAY_FAIL;
		r->ends_well = 1;
		return RELAY_DONE;
	}
	if (r->keepalive_ns > 0 && now >= r->last_write + r->keepalive_ns &&
	    out->len == 0) {
		if (r->ops->keepalive(r, out) != TS_OK)
			return RELAY_FAIL;
		/* written at once by the driver: the clock restarts */
		r->last_write = now;
	}
	return RELAY_MORE;
}

void
relay_flushed(struct relay *r, int64_t now)
{
	struct metrics *m = r->srv->metrics;
	uint32_t i;

	/* The first token event ever gives TTFT (from the request's
	 * arrival), every later one ITL (from the one before). */
	for (i = 0; i < r->events; i++) {
		if (r->last_token == 0)
			metrics_observe(m, METRICS_TTFT, now - r->t0);
		else
			metrics_observe(m, METRICS_ITL, now - r->last_token);
		r->last_token = now;
	}
	if (r->events > 0 && r->ops->tokens_reach_client)
		r->last_write = now;
	r->events = 0;
	r->delivered += r->unwritten;
	r->unwritten = 0;
	engine_delivered(r->seq, r->delivered);
	if (r->ended && r->ends_well) {
		metrics_observe(m, METRICS_E2E, now - r->t0);
		r->ends_well = 0;       /* counted once */
	}
}

void
relay_gone(struct relay *r, int64_t now, enum engine_cause cause)
{
	r->ended = 1;
	r->ends_well = 0;
	engine_cancel(r->srv->engine, r->seq, now, cause);
}

int64_t
relay_deadline(const struct relay *r)
{
	if (r->keepalive_ns <= 0 || r->ended)
		return INT64_MAX;
	return r->last_write + r->keepalive_ns;
}

void
relay_finish(struct relay *r)
{
	engine_release(r->srv->engine, r->seq);
	r->seq = NULL;
	ts_buf_free(&r->piece);
	if (r->ops->free != NULL)
		r->ops->free(r);
}

void
relay_run(struct server *srv, struct conn *c, struct relay *r)
{
	struct ts_buf out;

	/* a whole POST /generate answer: 8192 tokens of up to 32 bytes,
	 * JSON-escaped */
	ts_buf_init(&out, 8u << 20);
	engine_seq_listen(srv->engine, r->seq, c->ops->listener(c));
	for (;;) {
		int64_t now = srv->now(), deadline;
		enum relay_state st = relay_pump(r, &out, now);

		if (st == RELAY_FAIL) {
			relay_gone(r, now, ENGINE_CAUSE_CLIENT_GONE);
			break;
		}
		if (out.len > 0) {
			if (conn_write(c, out.p, out.len) != TS_OK) {
				relay_gone(r, srv->now(),
				    ENGINE_CAUSE_CLIENT_GONE);
				break;
			}
			relay_flushed(r, srv->now());
			ts_buf_reset(&out);
		}
		if (st == RELAY_DONE)
			break;
		deadline = relay_deadline(r);
		if (deadline > now + RELAY_POLL_NS)
			deadline = now + RELAY_POLL_NS;
		if (c->ops->wait(c, deadline) != TS_OK) {
			c->hup = 1;
			relay_gone(r, srv->now(), ENGINE_CAUSE_CLIENT_GONE);
			break;
		}
	}
	ts_buf_free(&out);
	relay_finish(r);
}
