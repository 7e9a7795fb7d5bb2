/*
 * handlers/debug.c - the operator's endpoints: GET /_debug/generated (one
 * request's record in the state file: what it asked, what was generated,
 * how it ended; docs/API.md "GET /_debug/generated: what the server
 * really produced"), GET /metrics (Prometheus text format 0.0.4 over
 * every responder process) and GET /health. The first two answer only
 * local requests.
 */
#include "handlers/debug.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "engine/engine.h"
#include "transport/conn.h"
#include "transport/gate.h"
#include "stores/metrics.h"
#include "transport/reply.h"
#include "proto/resume.h"
#include "handlers/server.h"
#include "stores/state.h"

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

/*
 * An id asked of this server: parses "[<instance>-]<stream>" into *id. A
 * named server (--instance) answers only its own ids: another instance's
 * is a 421 (the front routes an id to its instance, so a 421 means a
 * route is missing), and a bare number a 400 (which host's?). Returns 0,
 * or the status with *err filled.
 */
static int
debug_parse_id(struct server *srv, const char *s, unsigned long long *id,
    struct http_error *err)
{
	char own[RESUME_INSTANCE_MAX + 1], its[RESUME_INSTANCE_MAX + 1];
	uint64_t inst, stream;
	const char *why;

	resume_instance_name(srv->opt->instance, own);
	if (resume_request_id_parse(s, strlen(s), &inst, &stream, &why) !=
	    TS_OK || (inst == 0 && srv->opt->instance != 0)) {
		if (srv->opt->instance != 0)
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_id", "id must be a stream id as sent in "
			    "X-Request-Id: %s-N on this server (instance "
			    "%s)", own, own);
		else
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_id", "id must be a stream id, a "
			    "positive integer as sent in X-Request-Id");
		return 400;
	}
	if (inst != srv->opt->instance) {
		resume_instance_name(inst, its);
		http_error_set(err, 421, "invalid_request_error",
		    "misdirected_request", "stream %s belongs to instance %s; "
		    "this is %s%s (a front routes ids by their instance: "
		    "docs/OPERATIONS.md \"Several hosts\")", s, its,
		    own[0] ? "instance " : "an unnamed server", own);
		return 421;
	}
	*id = stream;
	return 0;
}

/*
 * The walk over a query string's parameters (split at '&', empty ones
 * included; nothing decoded): *walk starts at the query, or NULL for an
 * empty one. Returns the next parameter with its length in *n, NULL at
 * the end.
 */
static const char *
debug_param_next(const char **walk, size_t *n)
{
	const char *at = *walk;

	if (at == NULL)
		return NULL;
	*n = strcspn(at, "&");
	*walk = at[*n] == '&' ? at + *n + 1 : NULL;
	return at;
}

/* 1 when the query has a parameter other than id= (id=5&x=1: the only
 * parameter is id, a 400 invalid_query; id=5&id=6 stays an invalid id). */
static int
debug_other_param(const char *qs)
{
	const char *walk = *qs ? qs : NULL, *p;
	size_t n;

	while ((p = debug_param_next(&walk, &n)) != NULL)
		if (n < 3 || memcmp(p, "id=", 3) != 0)
			return 1;
	return 0;
}

/* GET /_debug/generated[?id=N]: one stream's counts, loopback only. */
void
debug_generated(struct server *srv, struct reply *rp)
{
	const char *qs = conn_param(rp->conn, "QUERY_STRING");
	const char *pre = srv->opt->id_prefix;
	struct state_record rec;
	struct http_error err;
	unsigned long long id = 0;
	const char *status;
	char idbuf[RESUME_REQUEST_ID_MAX + 1];
	json_t *obj;

	if (debug_check_local(rp->conn, "/_debug/", &err) != 0) {
		reply_error(rp, &err, NULL, 0);
		return;
	}
	if (strncmp(qs, "id=", 3) == 0 && !debug_other_param(qs)) {
		if (debug_parse_id(srv, qs + 3, &id, &err) != 0) {
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
		    id ? "no stream with id %s%llu is held (unknown, older "
		    "than the last %u ids, or run unrecorded)" :
		    "no stream has started yet",
		    pre, id, state_capacity(srv->state));
		reply_error(rp, &err, NULL, 0);
		return;
	}
	status = rec.owner_gone ? "error" : state_status_name(rec.status);
	resume_request_id_format(idbuf, sizeof(idbuf), srv->opt->instance,
	    rec.id);
	obj = json_pack("{s:s,s:s,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
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
	    "total_streams", (json_int_t)state_total_streams(srv->state),
	    "unrecorded_streams", (json_int_t)state_unrecorded(srv->state));
	if (obj != NULL && rec.resume_index != 0) {
		/* resumed_from: the stream resumed, as the state file
		 * confirms it ("held"); null when the id named one it does
		 * not hold ("not_held"); another instance's as its id names
		 * it ("other_instance": that instance's record, at a front,
		 * while it is up and holds it). */
		resume_request_id_format(idbuf, sizeof(idbuf),
		    rec.from_instance ? rec.from_instance :
		    srv->opt->instance, rec.resumed_from);
		json_object_set_new(obj, "resumed_from", rec.resumed_from ?
		    json_string(idbuf) : json_null());
		json_object_set_new(obj, "resumed_from_record", json_string(
		    rec.from_instance ? "other_instance" : rec.resumed_from ?
		    "held" : "not_held"));
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
		    "write_stall", "shutdown", "server_error",
		    "output_limit" };
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
		    rec.cause < sizeof(causes) / sizeof(causes[0]) ?
		    json_string(causes[rec.cause]) : json_null());
		/* From the failed write (or hang-up, or the failed encoding)
		 * to the sequence leaving the batch: at most one decode
		 * step. */
		json_object_set_new(obj, "cancel_to_leave_ms", rec.cause ==
		    STATE_CAUSE_CLIENT_GONE || rec.cause ==
		    STATE_CAUSE_WRITE_STALL || rec.cause ==
		    STATE_CAUSE_SERVER_ERROR || rec.cause ==
		    STATE_CAUSE_OUTPUT_LIMIT ? json_real(
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
 * ?instance=NAME on /health and /metrics: a front routes it to that
 * backend (docs/OPERATIONS.md "Several hosts"), and the backend checks
 * that it is the one asked, so a missing route is a 421, never another
 * host's answer. Other parameters are ignored (as before). Returns 0 to
 * answer, -1 when the 421 was sent.
 */
static int
debug_check_instance(struct server *srv, struct reply *rp)
{
	const char *qs = conn_param(rp->conn, "QUERY_STRING"), *p;
	const char *walk = *qs ? qs : NULL;
	const char *own = srv->opt->instance_name;
	struct http_error err;
	uint64_t asked;
	size_t n;

	while ((p = debug_param_next(&walk, &n)) != NULL) {
		if (n >= 9 && memcmp(p, "instance=", 9) == 0 &&
		    (own == NULL || n - 9 != strlen(own) ||
		    memcmp(p + 9, own, n - 9) != 0)) {
			/* the name is echoed only when it is one */
			int named = resume_instance_parse(p + 9, n - 9,
			    &asked) == TS_OK;

			http_error_set(&err, 421, "invalid_request_error",
			    "misdirected_request", "this is %s%s, not "
			    "instance %.*s (a front routes ?instance= to "
			    "its backend: docs/OPERATIONS.md \"Several "
			    "hosts\")", own ? "instance " : "an unnamed "
			    "server", own ? own : "", named ? (int)(n - 9) :
			    9, named ? p + 9 : "<invalid>");
			reply_error(rp, &err, NULL, 0);
			return -1;
		}
	}
	return 0;
}

/* On a named server, the series that says which backend answered. */
static enum ts_err
debug_render_instance(struct server *srv, const struct metrics_dialect *d,
    struct ts_buf *b)
{
	char line[1024], model[600];
	int n;

	if (srv->opt->instance_name == NULL)
		return TS_OK;
	/* every series carries model_name (as vLLM's) */
	model[0] = '\0';
	if (d->model_name != NULL && metrics_label(model, sizeof(model) - 1,
	    "model_name", d->model_name) > 0)
		strcat(model, ",");
	n = snprintf(line, sizeof(line), "# HELP %s:backend_info "
	    "This backend's --instance name (docs/OPERATIONS.md \"Several "
	    "hosts\").\n# TYPE %s:backend_info gauge\n"
	    "%s:backend_info{%stokstream_instance=\"%s\"} 1\n", d->prefix,
	    d->prefix, d->prefix, model, srv->opt->instance_name);
	if (n < 0 || (size_t)n >= sizeof(line))
		return TS_ELIMIT;
	return ts_buf_append(b, line, (size_t)n);
}

/*
 * GET /metrics: Prometheus text exposition format 0.0.4, over all
 * responder processes (docs/API.md "GET /metrics: Prometheus
 * metrics"). Loopback only, like /_debug.
 */
void
debug_metrics(struct server *srv, struct reply *rp)
{
	struct metrics_dialect d;
	struct http_error err;
	struct ts_buf b;

	if (debug_check_local(rp->conn, "/metrics", &err) != 0) {
		reply_error(rp, &err, NULL, 0);
		return;
	}
	if (debug_check_instance(srv, rp) != 0)
		return;
	/* --metrics-prefix: tokstream's names, or vLLM's; model_name the
	 * served model's first name, as vLLM's --served-model-name */
	metrics_dialect_of(&d, srv->opt->metrics_prefix,
	    server_model_name(srv));
	ts_buf_init(&b, 1u << 20);
	if (srv->metrics == NULL || metrics_render_dialect(srv->metrics, &d,
	    &b) != TS_OK || debug_render_instance(srv, &d, &b) != TS_OK) {
		http_error_set(&err, 500, "server_error", "metrics_unavailable",
		    "the metrics could not be rendered");
		reply_error(rp, &err, NULL, 0);
	} else if (reply_head(rp, 200, "text/plain; version=0.0.4; "
	    "charset=utf-8", 0, NULL) == TS_OK) {
		conn_write(rp->conn, b.p, b.len);
	}
	ts_buf_free(&b);
}

/*
 * GET /health: {"status":"ok"} while the responder runs, with "instance"
 * on a named server; {"status":"degraded", "accept": {...}} (still 200:
 * this process answers) for GATE_DEGRADED_NS after its accept(2) last
 * failed, with the failures, the last error, the seconds since, whether
 * it is backing off now, and the connections the gate closed at their
 * deadline or refused (transport/gate.h; docs/API.md "GET /health").
 */
void
debug_health(struct server *srv, struct reply *rp)
{
	struct gate_health h;
	json_t *obj;

	if (debug_check_instance(srv, rp) != 0)
		return;
	gate_health(srv->gate, &h);
	obj = json_pack("{s:s}", "status", h.degraded ? "degraded" : "ok");
	if (obj != NULL && srv->opt->instance_name != NULL)
		json_object_set_new(obj, "instance",
		    json_string(srv->opt->instance_name));
	if (obj != NULL && h.degraded)
		json_object_set_new(obj, "accept", json_pack(
		    "{s:I,s:s,s:f,s:b,s:I,s:I}", "failures",
		    (json_int_t)h.accept_failures, "last_error",
		    h.last_errno != 0 ? strerror(h.last_errno) : "",
		    "seconds_since_failure", h.since_failure_s < 0 ? 0.0 :
		    (double)(long long)(h.since_failure_s * 10.0 + 0.5) / 10.0,
		    "backing_off", h.backing_off, "timed_out",
		    (json_int_t)h.timed_out, "refused",
		    (json_int_t)h.refused));
	reply_json(rp, 200, obj, 0);
}
