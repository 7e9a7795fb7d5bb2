/*
 * server/debug.c - the operator's endpoints: GET /_debug/generated (one
 * request's record in the state file: what it asked, what was generated,
 * how it ended; docs/API.md "GET /_debug/generated: what the server
 * really produced"), GET /metrics (Prometheus text format 0.0.4 over
 * every responder process) and GET /health. The first two answer only
 * local requests.
 */
#include "server/debug.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "engine/engine.h"
#include "server/conn.h"
#include "server/metrics.h"
#include "server/reply.h"
#include "server/server.h"
#include "server/state.h"

static int
is_loopback(const char *addr)
{
	return strcmp(addr, "127.0.0.1") == 0 || strcmp(addr, "::1") == 0 ||
	    strcmp(addr, "::ffff:127.0.0.1") == 0;
}

/*
 * 1 when the Host header (HTTP_HOST; absent is allowed: HTTP/1.0) names
 * the loopback: "localhost" or a name under ".localhost" (RFC 6761:
 * resolved to loopback by the client itself), a 127.0.0.0/8 address, or
 * [::1], each with an optional ":port". A page whose own name an
 * attacker makes resolve to 127.0.0.1 (DNS rebinding) reaches the server
 * from loopback, but its requests carry that name as their Host.
 */
static int
host_is_loopback(const char *host)
{
	char name[256];
	size_t n = strlen(host);
	const char *colon;
	unsigned a, b, c, d;
	char tail;

	if (n == 0)
		return 1;
	if (strncmp(host, "[::1]", 5) == 0)
		return host[5] == '\0' || host[5] == ':';
	colon = strrchr(host, ':');
	if (colon != NULL)
		n = (size_t)(colon - host);
	if (n == 0 || n >= sizeof(name))
		return 0;
	memcpy(name, host, n);
	name[n] = '\0';
	if (n > 0 && name[n - 1] == '.')
		name[--n] = '\0';          /* "localhost." is the same name */
	if (strcasecmp(name, "localhost") == 0 ||
	    (n > 10 && strcasecmp(name + n - 10, ".localhost") == 0))
		return 1;
	return sscanf(name, "%3u.%3u.%3u.%3u%c", &a, &b, &c, &d, &tail) == 4 &&
	    a == 127 && b <= 255 && c <= 255 && d <= 255;
}

/*
 * A request is local when it comes from the loopback address, no proxy
 * forwarded it, and its Host is a loopback name. A reverse proxy on the
 * same host connects from 127.0.0.1 too; it says so with X-Forwarded-For
 * (de facto), Forwarded (RFC 7239) or X-Real-IP (nginx), which lighttpd
 * passes as HTTP_* params (RFC 3875 section 4.1.18). Any of them,
 * whatever it names (127.0.0.1 included: a client can send its own),
 * makes the request not local. Returns 0 when local, else fills *err
 * with a 403 loopback_only for `what` ("/metrics") and returns -1.
 */
int
debug_check_local(struct conn *c, const char *what, struct http_error *err)
{
	static const char *const forwarded[] = { "HTTP_X_FORWARDED_FOR",
	    "HTTP_FORWARDED", "HTTP_X_REAL_IP" };
	size_t i;

	if (!is_loopback(conn_param(c, "REMOTE_ADDR")))
		goto proxied;
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		if (c->ops->param(c, forwarded[i]) != NULL)
			goto proxied;
	if (!host_is_loopback(conn_param(c, "HTTP_HOST"))) {
		http_error_set(err, 403, "permission_error", "loopback_only",
		    "%s answers only requests for a loopback host "
		    "(localhost, 127.0.0.1, [::1]); this one is for another "
		    "name", what);
		return -1;
	}
	return 0;
proxied:
	http_error_set(err, 403, "permission_error", "loopback_only",
	    "%s is reachable only from 127.0.0.1, not through a proxy", what);
	return -1;
}

/* GET /_debug/generated[?id=N]: one stream's counts, loopback only. */
void
debug_generated(struct server *srv, struct reply *rp)
{
	const char *qs = conn_param(rp->conn, "QUERY_STRING");
	struct state_record rec;
	struct http_error err;
	unsigned long long id = 0;
	const char *status;
	char idbuf[24];
	json_t *obj;

	if (debug_check_local(rp->conn, "/_debug/", &err) != 0) {
		reply_error(rp, &err, NULL, 0);
		return;
	}
	if (strncmp(qs, "id=", 3) == 0) {
		char *end;

		errno = 0;
		id = strtoull(qs + 3, &end, 10);
		if (errno != 0 || qs[3] < '0' || qs[3] > '9' || *end != '\0' ||
		    id == 0) {
			http_error_set(&err, 400, "invalid_request_error",
			    "invalid_id", "id must be a stream id, a "
			    "positive integer as sent in X-Request-Id");
			reply_error(rp, &err, NULL, 0);
			return;
		}
	} else if (*qs != '\0') {
		http_error_set(&err, 400, "invalid_request_error",
		    "invalid_query", "the only parameter is id=<stream id>");
		reply_error(rp, &err, NULL, 0);
		return;
	}
	if (state_lookup(srv->state, id, &rec) != TS_OK) {
		http_error_set(&err, 404, "not_found_error", "unknown_stream",
		    id ? "no stream with id %llu is held (unknown or older "
		    "than the last %u streams)" : "no stream has started yet",
		    id, STATE_CAPACITY);
		reply_error(rp, &err, NULL, 0);
		return;
	}
	status = rec.owner_gone ? "error" : state_status_name(rec.status);
	snprintf(idbuf, sizeof(idbuf), "%llu", (unsigned long long)rec.id);
	obj = json_pack("{s:s,s:s,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:I,s:I}",
	    "id", idbuf,
	    "kind", rec.kind == STATE_KIND_STREAM ? "stream" : "generate",
	    "requested", (json_int_t)rec.requested,
	    "generated", (json_int_t)rec.generated,
	    "status", status,
	    "prompt_tokens", (json_int_t)rec.prompt_tokens,
	    "pid", (json_int_t)rec.pid,
	    "started_ms", (json_int_t)rec.started_ms,
	    "ended_ms", (json_int_t)rec.ended_ms,
	    "total_generated", (json_int_t)state_total_generated(srv->state),
	    "total_streams", (json_int_t)state_total_streams(srv->state));
	if (obj != NULL && rec.resume_index != 0) {
		/* resumed_from: the stream resumed, as the state file
		 * confirms it; null when the id named one it does not hold. */
		snprintf(idbuf, sizeof(idbuf), "%llu",
		    (unsigned long long)rec.resumed_from);
		json_object_set_new(obj, "resumed_from", rec.resumed_from ?
		    json_string(idbuf) : json_null());
		json_object_set_new(obj, "resume_index",
		    json_integer((json_int_t)rec.resume_index));
		/* No sequence state is kept after a drop: the KV cache of the
		 * tokens already sent is recomputed in the new prefill. */
		json_object_set_new(obj, "resume", json_string("recomputed"));
	} else if (obj != NULL) {
		json_object_set_new(obj, "resumed_from", json_null());
	}
	if (obj != NULL) {
		static const char *const causes[] = { NULL, "client_gone",
		    "write_stall", "shutdown" };
		static const char *const phases[] = { NULL, "waiting",
		    "prefill", "decode" };
		const char *reason = NULL;
		struct engine_stats es;

		/* finish_reason in the OpenAI words; "abort" for a client
		 * that left, as vLLM reports it. The record keeps no finish
		 * reason, only the status: a sequence that ended well with
		 * fewer tokens than it asked for ended by EOS or a stop
		 * string ("stop"); one that produced them all, "length"
		 * (also a stop string completed by its very last token).
		 * A resumed stream asked for those after resume_index. */
		if (rec.owner_gone)
			reason = "error";
		else if (rec.status == STATE_DONE)
			reason = rec.resume_index + rec.generated <
			    rec.requested ? "stop" : "length";
		else if (rec.status == STATE_CANCELLED)
			reason = "abort";
		else if (rec.status == STATE_ERROR)
			reason = "error";
		json_object_set_new(obj, "finish_reason", reason ?
		    json_string(reason) : json_null());
		json_object_set_new(obj, "phase", rec.status ==
		    STATE_RUNNING && !rec.owner_gone && rec.phase >= 1 &&
		    rec.phase <= 3 ? json_string(phases[rec.phase]) :
		    json_null());
		/* null for a request that never took a slot */
		json_object_set_new(obj, "queue_ms", rec.phase ==
		    STATE_PHASE_WAITING ? json_null() :
		    json_real((double)rec.queue_us / 1000.0));
		json_object_set_new(obj, "wasted", json_integer(
		    (json_int_t)rec.wasted));
		/* of prompt_tokens, found in the prefix cache (OpenAI's
		 * usage.prompt_tokens_details.cached_tokens) */
		json_object_set_new(obj, "cached_tokens", json_integer(
		    (json_int_t)rec.cached_tokens));
		json_object_set_new(obj, "cancel_cause", rec.cause >= 1 &&
		    rec.cause <= 3 ? json_string(causes[rec.cause]) :
		    json_null());
		/* From the failed write (or hang-up) to the sequence leaving
		 * the batch: at most one decode step. */
		json_object_set_new(obj, "cancel_to_leave_ms", rec.cause ==
		    STATE_CAUSE_CLIENT_GONE || rec.cause ==
		    STATE_CAUSE_WRITE_STALL ? json_real(
		    (double)rec.leave_us / 1000.0) : json_null());
		engine_stats(srv->engine, &es);
		json_object_set_new(obj, "engine", json_pack(
		    "{s:s,s:I,s:I,s:I,s:I,s:I,s:b}", "backend",
		    srv->backend->name, "pid", (json_int_t)getpid(),
		    "running", (json_int_t)es.running, "waiting",
		    (json_int_t)es.waiting, "held", (json_int_t)es.held,
		    "max_num_seqs",
		    (json_int_t)srv->opt->engine.max_num_seqs, "no_cancel",
		    srv->opt->engine.no_cancel));
	}
	if (obj != NULL && rec.owner_gone)
		json_object_set_new(obj, "error", json_string(
		    "the responder process that ran it has exited"));
	reply_json(rp, 200, obj, 0);
}

/*
 * GET /metrics: Prometheus text exposition format 0.0.4, over all
 * responder processes (docs/API.md "GET /metrics: Prometheus
 * metrics"). Loopback only, like /_debug.
 */
void
debug_metrics(struct server *srv, struct reply *rp)
{
	struct http_error err;
	struct ts_buf b;

	if (debug_check_local(rp->conn, "/metrics", &err) != 0) {
		reply_error(rp, &err, NULL, 0);
		return;
	}
	ts_buf_init(&b, 1u << 20);
	if (srv->metrics == NULL || metrics_render(srv->metrics, &b) !=
	    TS_OK) {
		http_error_set(&err, 500, "server_error", "metrics_unavailable",
		    "the metrics could not be rendered");
		reply_error(rp, &err, NULL, 0);
	} else if (reply_head(rp, 200, "text/plain; version=0.0.4; "
	    "charset=utf-8", 0, NULL) == TS_OK) {
		conn_write(rp->conn, b.p, b.len);
	}
	ts_buf_free(&b);
}

/* GET /health: {"status":"ok"} while the responder runs. */
void
debug_health(struct server *srv, struct reply *rp)
{
	(void)srv;
	reply_json(rp, 200, json_pack("{s:s}", "status", "ok"), 0);
}
