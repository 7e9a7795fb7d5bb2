/*
 * handlers/replay.c - serving recorded responses through the engine
 * (replay.h).
 */
#include "handlers/replay.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "transport/conn.h"
#include "proto/http.h"
#include "transport/relay.h"
#include "transport/reply.h"
#include "handlers/server.h"
#include "stores/state.h"
#include "trace/trace.h"
#include "handlers/submit.h"

/* One replayed response in flight: owned by its relay from the
 * hand-off on. */
struct replay_resp {
	struct reply reply;
	struct relay relay;
	const struct replay_rec *rec;  /* borrowed from the server's set */
	uint32_t next;                 /* the next chunk to send */
};

static void
replay_resp_free(struct relay *r)
{
	free(r->resp);
}

/*
 * relay_ops.token: token k was published at its recorded time, so chunk
 * k's bytes go out now, whatever the simulator's token was. The relay
 * calls again with the last index for text its detokenizer held to the
 * end: that call sends nothing (each chunk once, in order).
 */
static enum ts_err
replay_token(struct relay *r, struct ts_buf *out, uint32_t index,
    const char *text, size_t len, int *event)
{
	struct replay_resp *rr = r->resp;
	const struct replay_chunk *ch;

	(void)text;
	(void)len;
	if (index != rr->next || index >= rr->rec->nchunks)
		return TS_OK;
	ch = &rr->rec->chunks[index];
	if (ts_buf_append(out, rr->rec->bytes + ch->off, ch->len) != TS_OK)
		return TS_ELIMIT;
	rr->next++;
	*event = ch->len > 0;
	return TS_OK;
}

/* relay_ops.end: the recorded bytes carry their own end ([DONE], the
 * closing brace); a stream the server ends early (shutdown) is cut. */
static enum ts_err
replay_end(struct relay *r, struct ts_buf *out, enum engine_finish f,
    const struct engine_view *v)
{
	(void)r;
	(void)out;
	(void)f;
	(void)v;
	return TS_OK;
}

/* No keep-alive: a comment the recording did not have would break the
 * byte-for-byte replay. A client that leaves during a silence is
 * noticed at the next recorded chunk. */
static const struct relay_ops replay_ops = {
	.token = replay_token,
	.keepalive = NULL,
	.end = replay_end,
	.free = replay_resp_free,
	.tokens_reach_client = 1,
};

/* The OpenAI-shaped 404 of a request no recording matched. */
static void
replay_miss(struct reply *rp, const char *method, const char *path)
{
	struct http_error err;

	http_error_set(&err, 404, "invalid_request_error", "replay_miss",
	    "no recording matched %.16s %.128s: neither its exact body nor "
	    "its prompt with the settings (canonical JSON) is in the "
	    "--replay trace", method, path);
	reply_error_v1(rp, &err, NULL, 0);
}

/*
 * Serves recording rec for the request: an engine request whose token k
 * is published at admission + rec->sched_ns[k] (engine.h:
 * engine_request.schedule_ns), the recorded head at once, then the
 * relay sends chunk k with token k.
 */
static void
replay_serve(struct server *srv, struct reply *rp,
    const struct replay_rec *rec, const struct ts_buf *body)
{
	struct conn *c = rp->conn;
	struct replay_resp *rr;
	struct engine_request job;
	struct submit_record srec = { STATE_KIND_STREAM, 0, 0, 0, 0 };
	struct engine_seq *s = NULL;
	struct http_error err;
	struct relay_env env;
	struct ts_buf b;

	if (rec->nchunks == 0) {
		/* nothing to time: the head alone */
		reply_head(rp, rec->status, NULL, 0, rec->head);
		return;
	}
	memset(&job, 0, sizeof(job));
	/* the body is the sequence's prompt (what /_debug/generated
	 * shows); a bodiless request (a GET) gets a word of its own */
	job.prompt = body->len > 0 ? body->p : "replay";
	job.prompt_len = body->len > 0 ? body->len : 6;
	job.prompt_tokens = rec->prompt_tokens;
	job.model = srv->backend->lab_model;
	engine_sampling_greedy(&job.sampling);
	job.sampling.ignore_eos = 1;
	job.max_tokens = rec->nchunks;
	job.tpot_ms = -1.0;
	job.error_after = -1;
	job.t0_ns = rp->t0;
	job.schedule_ns = rec->sched_ns;
	job.nschedule = rec->nchunks;
	if (submit(srv, &job, &srec, c, &s, &err) != TS_OK) {
		reply_error_v1(rp, &err, err.status == 429 ?
		    "Retry-After: 1\r\n" : NULL, 0);
		return;
	}
	rr = xcalloc(1, sizeof(*rr));
	rr->reply = *rp;
	rr->rec = rec;
	ts_buf_init(&b, 4096);
	if (reply_head_buf(&rr->reply, &b, rec->status, NULL,
	    engine_seq_id(s), rec->head) != TS_OK ||
	    conn_write(c, b.p, b.len) != TS_OK) {
		engine_cancel(srv->engine, s, srv->now(),
		    ENGINE_CAUSE_CLIENT_GONE);
		engine_release(srv->engine, s);
		ts_buf_free(&b);
		free(rr);
		return;
	}
	ts_buf_free(&b);
	env = server_relay_env(srv);
	relay_init(&rr->relay, &env, &rr->reply, s, 0, NULL, NULL, 0,
	    &replay_ops, rr);
	server_stream(srv, c, &rr->relay);
}

int
replay_route(struct server *srv, struct reply *rp, const char *method,
    const char *uri, struct ts_buf *body)
{
	const struct replay_rec *rec;
	struct http_error err;
	enum replay_how how;

	if (srv->replay == NULL || !replay_set_has_route(srv->replay, method,
	    uri))
		return 0;
	if (atomic_load(&srv->stopping)) {
		http_error_set(&err, 503, "server_error", "shutdown",
		    "the server is shutting down");
		reply_error_v1(rp, &err, "Retry-After: 1\r\n", 0);
		return 1;
	}
	if (reply_read_body(rp->conn, body, &err) != TS_OK) {
		reply_error_v1(rp, &err, NULL, 0);
		return 1;
	}
	rec = replay_set_match(srv->replay, method, uri, body->p != NULL ?
	    body->p : "", body->len, &how);
	if (rec != NULL) {
		replay_serve(srv, rp, rec, body);
		return 1;
	}
	if (!srv->opt->replay_miss_sim) {
		replay_miss(rp, method, uri);
		return 1;
	}
	rp->conn->unread = body->p;
	rp->conn->unread_len = body->len;
	return 0;
}

/*
 * One request line of the trace as a recording, or TS_ELIMIT / TS_EINVAL
 * with errbuf saying which bound or time it broke.
 */
static enum ts_err
replay_of_request(const struct trace_request *q, struct replay_rec **out,
    char *errbuf, size_t cap)
{
	struct replay_rec *r;
	enum ts_err rc = TS_OK;
	size_t k;

	if (q->nchunks > REPLAY_MAX_CHUNKS) {
		snprintf(errbuf, cap, "%zu chunks, over the %u a recording "
		    "may have", q->nchunks, REPLAY_MAX_CHUNKS);
		return TS_ELIMIT;
	}
	r = replay_rec_new((int)q->status);
	r->prompt_tokens = q->prompt_tokens > 0 ?
	    (uint64_t)q->prompt_tokens : 0;
	for (k = 0; k < q->nheaders; k++)
		replay_rec_header(r, q->headers[k].name, q->headers[k].value);
	for (k = 0; k < q->nchunks && rc == TS_OK; k++) {
		if (k > 0 && q->chunks[k].t_us < q->chunks[k - 1].t_us) {
			/* the trace's chunk times are non-decreasing */
			snprintf(errbuf, cap, "chunk %zu's time %lld us is "
			    "before chunk %zu's (%lld us)", k,
			    (long long)q->chunks[k].t_us, k - 1,
			    (long long)q->chunks[k - 1].t_us);
			replay_rec_free(r);
			return TS_EINVAL;
		}
		rc = replay_rec_chunk(r, q->chunks[k].t_us,
		    q->chunks[k].bytes, q->chunks[k].len);
	}
	if (rc != TS_OK) {
		if (rc == TS_EINVAL)
			snprintf(errbuf, cap, "chunk %zu's time %lld us is "
			    "not in 0..%lld us (600 s) from the request's "
			    "start", k - 1, (long long)q->chunks[k - 1].t_us,
			    REPLAY_MAX_CHUNK_US);
		else
			snprintf(errbuf, cap, "chunk %zu is over a "
			    "recording's bounds (%u bytes a chunk, %u bytes "
			    "in all)", k - 1, REPLAY_MAX_CHUNK_BYTES,
			    REPLAY_MAX_BYTES);
		replay_rec_free(r);
		return rc;
	}
	*out = r;
	return TS_OK;
}

enum ts_err
replay_load(const char *path, double speed, struct replay_set **out,
    uint32_t *skipped, char *errbuf, size_t cap)
{
	struct trace t;
	struct trace_error terr;
	struct replay_set *s;
	struct replay_rec *r = NULL;
	char why[200];
	enum ts_err rc;
	size_t i;

	*out = NULL;
	*skipped = 0;
	rc = trace_load(path, REPLAY_MAX_TRACE_BYTES, &t, &terr);
	if (rc != TS_OK) {
		if (terr.line > 0)
			snprintf(errbuf, cap, "%s:%ld: %s", path, terr.line,
			    terr.text);
		else
			snprintf(errbuf, cap, "%s: %s", path, terr.text);
		trace_free(&t);
		return rc;
	}
	s = replay_set_new();
	for (i = 0; i < t.nrequests && rc == TS_OK; i++) {
		const struct trace_request *q = &t.requests[i];

		if (q->status == 0) {
			/* no response was recorded (a connect error) */
			(*skipped)++;
			continue;
		}
		if (q->status < 200 || q->status > 599) {
			/* no final status a server sends: a broken trace */
			snprintf(why, sizeof(why), "status %ld is not 0 (no "
			    "response) nor in 200..599", q->status);
			rc = TS_EINVAL;
		} else {
			rc = replay_of_request(q, &r, why, sizeof(why));
		}
		if (rc == TS_OK) {
			rc = replay_set_add(s, q->method, q->path,
			    (const char *)q->body, q->body_len, r);
			snprintf(why, sizeof(why), "over the %u recordings a "
			    "trace may have", REPLAY_MAX_RECORDINGS);
		}
		if (rc != TS_OK)
			/* the header is line 1, request i follows it */
			snprintf(errbuf, cap, "%s:%zu: request i=%ld: %s", path,
			    i + 2, q->i, why);
	}
	trace_free(&t);
	if (rc != TS_OK) {
		replay_set_free(s);
		return rc;
	}
	replay_set_schedule(s, speed);
	*out = s;
	return TS_OK;
}
