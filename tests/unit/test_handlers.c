/*
 * test_handlers.c - the lab and /v1 handlers through route() over a fake
 * connection (transport/conn.h): CGI params from a table, a body served in
 * pieces, writes into a buffer that can fail after N bytes or stall until
 * abort(), and waits that drive a manual engine (engine_create_manual)
 * over the simulator on a synthetic clock, with a hang-up or a server
 * shutdown at a chosen time. No sockets, no lighttpd, no threads, no
 * sleeps.
 *
 * Each test fills its own struct server as server/main.c does (options
 * defaults, record hooks over an in-memory state file and metrics, the
 * blocking relay driver relay_run), routes one request, drives the engine
 * until idle (so the state record is final) and parses the CGI answer:
 * the head ("Status:", headers, an empty line) and the body (one JSON
 * object, or SSE events).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "engine/engine.h"
#include "openai/openai.h"
#include "handlers/auth.h"
#include "transport/conn.h"
#include "proto/http.h"
#include "stores/metrics.h"
#include "handlers/options.h"
#include "handlers/record.h"
#include "transport/relay.h"
#include "proto/resume.h"
#include "handlers/routes.h"
#include "handlers/server.h"
#include "stores/state.h"
#include "sim/lab.h"
#include "sim/sim.h"
#include "sim/vocab.h"

#define MS 1000000LL
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_PARAMS 24
#define MAX_EVENTS 1024
#define MAX_WAITS 1000000u

/* ---- the synthetic clock ------------------------------------------------ */

/* CLOCK_MONOTONIC of the tests, in ns: srv.now reads it, the fake wait
 * moves it. Starts at 1 s (a time of 0 means "never" in places). */
static int64_t clock_ns;

static int64_t
fake_now(void)
{
	return clock_ns;
}

/* Runs the engine until it has nothing left to do (its sequences left
 * and were reported to the hooks). */
static void
engine_drain(struct engine *e)
{
	unsigned i;

	for (i = 0; i < MAX_WAITS; i++) {
		int64_t t = engine_advance(e, clock_ns);

		if (t == INT64_MAX)
			return;
		if (t > clock_ns)
			clock_ns = t;
	}
	fail_msg("the engine never became idle");
}

/* ---- the server --------------------------------------------------------- */

struct fake_server {
	struct options opt;
	struct server srv;
	struct engine_backend be;
	struct record_ctx records;
	struct engine_hooks hooks;
};

/* The options tokstream-fcgi has without arguments (server/options.c),
 * with a TPOT of 20 ms. Tests change them before server_start. */
static void
server_defaults(struct fake_server *fs)
{
	memset(fs, 0, sizeof(*fs));
	fs->opt.write_stall_ms = OPTIONS_DEFAULT_WRITE_STALL_MS;
	fs->opt.state_dir = OPTIONS_DEFAULT_STATE_DIR;
	fs->opt.backlog = 1024;
	engine_config_defaults(&fs->opt.engine);
	fs->opt.engine.lat.tpot_ms = 20;
	fs->opt.retry_ms = OPTIONS_DEFAULT_RETRY_MS;
	fs->opt.keepalive_ms = OPTIONS_DEFAULT_KEEPALIVE_MS;
	fs->opt.cors_origin = "*";
	fs->opt.backend = "sim";
	clock_ns = 1000 * MS;
}

/* As server/main.c fills struct server, with a manual engine. */
static void
server_start(struct fake_server *fs)
{
	struct server *srv = &fs->srv;

	assert_int_equal(state_open_memory(&srv->state), TS_OK);
	assert_int_equal(metrics_open_memory(&srv->metrics), TS_OK);
	srv->opt = &fs->opt;
	srv->started_at = 1700000000;
	srv->now = fake_now;

	sim_backend(&fs->be);
	fs->records.state = srv->state;
	fs->records.metrics = srv->metrics;
	record_hooks(&fs->hooks, &fs->records);
	assert_int_equal(engine_create_manual(&srv->engine, &fs->opt.engine,
	    &fs->be, &fs->hooks), TS_OK);
	srv->backend = engine_backend(srv->engine);
}

static void
server_up(struct fake_server *fs)
{
	server_defaults(fs);
	server_start(fs);
}

static void
server_down(struct fake_server *fs)
{
	engine_drain(fs->srv.engine);
	engine_destroy(fs->srv.engine);
	metrics_close(fs->srv.metrics);
	state_close(fs->srv.state);
}

/* ---- the fake connection ------------------------------------------------ */

struct fake_conn {
	struct conn c;               /* first: what the handlers get */
	struct engine *engine;       /* what wait() drives */
	const char *names[MAX_PARAMS];
	const char *values[MAX_PARAMS];
	size_t nparams;
	char qs[4096];               /* QUERY_STRING */
	char cl[32];                 /* CONTENT_LENGTH */
	const char *body;            /* borrowed */
	size_t body_len, body_off;
	size_t piece;                /* bytes per read; 0: as asked */
	unsigned reads;
	struct ts_buf out;           /* everything written */
	size_t fail_after;           /* a write past this many bytes fails
				      * (the part that fits is written) */
	int write_failed;
	unsigned writes;
	int64_t write_at[MAX_EVENTS];  /* the clock at each whole write */
	size_t nwrites;
	int64_t hup_at;              /* wait() reports TS_EHUP from then */
	int64_t shutdown_at;         /* wait() stops the engine then */
	unsigned waits;
	struct engine_listener listener;
	int finished;                /* finish() calls */
};

static struct fake_conn *
fake_of(struct conn *c)
{
	return (struct fake_conn *)(void *)c;
}

static const char *
fake_param(struct conn *c, const char *name)
{
	struct fake_conn *fc = fake_of(c);
	size_t i;

	for (i = 0; i < fc->nparams; i++)
		if (strcmp(fc->names[i], name) == 0)
			return fc->values[i];
	return NULL;
}

static enum ts_err
fake_read(struct conn *c, char *buf, size_t cap, size_t *got)
{
	struct fake_conn *fc = fake_of(c);
	size_t n = fc->body_len - fc->body_off;

	fc->reads++;
	if (n > cap)
		n = cap;
	if (fc->piece > 0 && n > fc->piece)
		n = fc->piece;
	if (n > 0)
		memcpy(buf, fc->body + fc->body_off, n);
	fc->body_off += n;
	*got = n;
	return TS_OK;
}

static enum ts_err
fake_write(struct conn *c, const char *p, size_t len)
{
	struct fake_conn *fc = fake_of(c);
	size_t room;

	fc->writes++;
	if (fc->write_failed)
		return TS_EHUP;
	room = fc->fail_after > fc->out.len ? fc->fail_after - fc->out.len :
	    0;
	if (len <= room) {
		assert_int_equal(ts_buf_append(&fc->out, p, len), TS_OK);
		if (fc->nwrites < MAX_EVENTS)
			fc->write_at[fc->nwrites++] = clock_ns;
		return TS_OK;
	}
	assert_int_equal(ts_buf_append(&fc->out, p, room), TS_OK);
	fc->write_failed = 1;
	return TS_EHUP;
}

/* Moves the clock to the engine's next event or the deadline, whichever
 * comes first, and runs the engine there; a hang-up at hup_at. */
static enum ts_err
fake_wait(struct conn *c, int64_t deadline)
{
	struct fake_conn *fc = fake_of(c);
	int64_t next = engine_advance(fc->engine, clock_ns);
	int64_t to = next < deadline ? next : deadline;

	if (++fc->waits > MAX_WAITS)
		fail_msg("the relay never finished");
	if (to < clock_ns)
		to = clock_ns;
	if (fc->shutdown_at <= to) {
		/* SIGTERM: main.c stops the engine; the relay hears of it */
		if (fc->shutdown_at > clock_ns)
			clock_ns = fc->shutdown_at;
		fc->shutdown_at = INT64_MAX;
		engine_shutdown(fc->engine);
		(void)engine_listener_take(&fc->listener);
		return TS_OK;
	}
	if (fc->hup_at <= to) {
		if (fc->hup_at > clock_ns)
			clock_ns = fc->hup_at;
		return TS_EHUP;
	}
	clock_ns = to;
	engine_advance(fc->engine, clock_ns);
	/* the news is how a real I/O thread is woken: take it */
	(void)engine_listener_take(&fc->listener);
	return TS_OK;
}

static struct engine_listener *
fake_listener(struct conn *c)
{
	return &fake_of(c)->listener;
}

static int
fake_fd(struct conn *c)
{
	(void)c;
	return -1;
}

static size_t
fake_room(struct conn *c)
{
	(void)c;
	return SIZE_MAX;
}

/* The fake connection is the test's: nothing to free here. */
static void
fake_finish(struct conn *c)
{
	fake_of(c)->finished++;
}

static const struct conn_ops fake_ops = {
	fake_param, fake_read, fake_write, fake_wait, fake_listener,
	fake_fd, fake_room, fake_finish
};

/* Sets a CGI param (borrowed), replacing one of the same name. */
static void
fake_set(struct fake_conn *fc, const char *name, const char *value)
{
	size_t i;

	for (i = 0; i < fc->nparams; i++) {
		if (strcmp(fc->names[i], name) == 0) {
			fc->values[i] = value;
			return;
		}
	}
	assert_true(fc->nparams < MAX_PARAMS);
	fc->names[fc->nparams] = name;
	fc->values[fc->nparams++] = value;
}

/* A request `method uri` from 127.0.0.1 with the body (NULL: none),
 * both borrowed until fake_close. */
static void
fake_open(struct fake_conn *fc, struct fake_server *fs, const char *method,
    const char *uri, const char *body)
{
	const char *q = strchr(uri, '?');

	memset(fc, 0, sizeof(*fc));
	fc->c.ops = &fake_ops;
	fc->engine = fs->srv.engine;
	ts_buf_init(&fc->out, 64u << 20);
	fc->fail_after = SIZE_MAX;
	fc->hup_at = INT64_MAX;
	fc->shutdown_at = INT64_MAX;
	engine_listener_init(&fc->listener, NULL, fc);
	snprintf(fc->qs, sizeof(fc->qs), "%s", q != NULL ? q + 1 : "");
	fake_set(fc, "REQUEST_METHOD", method);
	fake_set(fc, "REQUEST_URI", uri);
	fake_set(fc, "QUERY_STRING", fc->qs);
	fake_set(fc, "REMOTE_ADDR", "127.0.0.1");
	fake_set(fc, "SERVER_PROTOCOL", "HTTP/1.1");
	fake_set(fc, "HTTP_HOST", "localhost");
	if (body != NULL) {
		fc->body = body;
		fc->body_len = strlen(body);
		snprintf(fc->cl, sizeof(fc->cl), "%zu", fc->body_len);
		fake_set(fc, "CONTENT_LENGTH", fc->cl);
		fake_set(fc, "CONTENT_TYPE", "application/json");
	}
}

static void
fake_close(struct fake_conn *fc)
{
	engine_drain(fc->engine);
	/* frees the sequences that were released while on the stack */
	(void)engine_listener_take(&fc->listener);
	ts_buf_free(&fc->out);
}

/* ---- the answer --------------------------------------------------------- */

struct response {
	int status;
	char head[4096];             /* header lines, each ending in CRLF */
	const char *body;            /* into the connection's output */
	size_t body_len;
};

/* Routes the request at the clock's now, drives the engine until idle and
 * splits the CGI answer (FastCGI 1.0 section 6.2) into head and body. */
static void
exchange(struct fake_server *fs, struct fake_conn *fc, struct response *r)
{
	const char *p, *end;
	size_t hlen;

	route(&fs->srv, &fc->c, clock_ns);
	engine_drain(fs->srv.engine);
	memset(r, 0, sizeof(*r));
	r->status = -1;
	p = fc->out.p != NULL ? fc->out.p : "";
	if (fc->out.len < 8 || memcmp(p, "Status: ", 8) != 0)
		return;
	end = NULL;
	for (hlen = 0; hlen + 4 <= fc->out.len; hlen++) {
		if (memcmp(p + hlen, "\r\n\r\n", 4) == 0) {
			end = p + hlen;
			break;
		}
	}
	if (end == NULL)
		return;
	hlen += 2;             /* the last header line's CRLF */
	assert_true(hlen < sizeof(r->head));
	memcpy(r->head, p, hlen);
	r->head[hlen] = '\0';
	r->status = atoi(p + 8);
	r->body = end + 4;
	r->body_len = fc->out.len - (size_t)(r->body - p);
}

/* The value of header `name` into val (cap bytes): 1, or 0 if absent. */
static int
header(const struct response *r, const char *name, char *val, size_t cap)
{
	char key[128];
	const char *h, *eol;
	size_t n;

	snprintf(key, sizeof(key), "\r\n%s: ", name);
	h = strstr(r->head, key);
	if (h == NULL)
		return 0;
	h += strlen(key);
	eol = strstr(h, "\r\n");
	assert_non_null(eol);
	n = (size_t)(eol - h);
	assert_true(n < cap);
	memcpy(val, h, n);
	val[n] = '\0';
	return 1;
}

/* X-Request-Id as a number (0 when absent). */
static uint64_t
request_id(const struct response *r)
{
	char v[32];

	if (!header(r, "X-Request-Id", v, sizeof(v)))
		return 0;
	return strtoull(v, NULL, 10);
}

static void
assert_header(const struct response *r, const char *name, const char *want)
{
	char v[512];

	if (!header(r, name, v, sizeof(v)))
		fail_msg("no %s header in:\n%s", name, r->head);
	assert_string_equal(v, want);
}

/* The body as one JSON value (it ends in one newline). */
static json_t *
body_json(const struct response *r)
{
	json_error_t jerr;
	json_t *v;

	assert_true(r->body_len > 0);
	assert_int_equal(r->body[r->body_len - 1], '\n');
	v = json_loadb(r->body, r->body_len, 0, &jerr);
	if (v == NULL)
		fail_msg("body is not JSON (%s): %.*s", jerr.text,
		    (int)r->body_len, r->body);
	return v;
}

static const char *
jstr(json_t *o, const char *path)
{
	json_t *v = o;
	char key[64];
	const char *p = path;

	/* "a.b.c" */
	while (*p != '\0') {
		size_t n = strcspn(p, ".");

		assert_true(n < sizeof(key));
		memcpy(key, p, n);
		key[n] = '\0';
		v = json_object_get(v, key);
		if (v == NULL)
			fail_msg("no %s", path);
		p += n + (p[n] == '.');
	}
	if (!json_is_string(v))
		fail_msg("%s is not a string", path);
	return json_string_value(v);
}

/* An error answer: status, JSON, the shape's members and the code. */
static void
assert_error(const struct response *r, int status, const char *type,
    const char *code, int openai)
{
	json_t *o, *e;

	assert_int_equal(r->status, status);
	assert_header(r, "Content-Type", "application/json");
	o = body_json(r);
	e = json_object_get(o, "error");
	assert_non_null(e);
	assert_string_equal(jstr(e, "type"), type);
	assert_string_equal(jstr(e, "code"), code);
	assert_true(strlen(jstr(e, "message")) > 0);
	/* the OpenAI shape carries "param"; the lab's never does */
	assert_int_equal(json_object_get(e, "param") != NULL, openai);
	json_decref(o);
}

/* ---- SSE ---------------------------------------------------------------- */

enum ev_kind { EV_DATA, EV_COMMENT };

struct sse_event {
	enum ev_kind kind;
	int has_id;
	char id[RESUME_ID_MAX + 1];
	char *data;                  /* NUL-terminated copy */
	size_t data_len;
	int has_retry;               /* a "retry:" field (in an event with
				      * data: never a block of its own) */
	long retry;
	char comment[64];
	char type[64];               /* "event:" field; "" when absent */
};

struct sse {
	struct sse_event ev[MAX_EVENTS];
	size_t n;
};

/* Splits a body that must be whole SSE events (WHATWG HTML 9.2: fields,
 * an empty line after each) as tokstream writes them: "id:", "data:",
 * "retry:" and ": comment" lines, LF only. */
static struct sse *
sse_parse(const char *p, size_t len)
{
	struct sse *s = calloc(1, sizeof(*s));
	size_t pos = 0;

	assert_non_null(s);
	while (pos < len) {
		struct sse_event *e;
		struct ts_buf data;

		assert_true(s->n < MAX_EVENTS);
		e = &s->ev[s->n++];
		e->kind = EV_DATA;
		ts_buf_init(&data, 1u << 20);
		for (;;) {
			const char *line = p + pos;
			const char *nl = memchr(line, '\n', len - pos);
			size_t n;

			if (nl == NULL)
				fail_msg("SSE body ends inside a line: %.*s",
				    (int)(len - pos), line);
			n = (size_t)(nl - line);
			pos += n + 1;
			if (n == 0)
				break;          /* the event's end */
			if (n > 4 && memcmp(line, "id: ", 4) == 0) {
				assert_true(n - 4 <= RESUME_ID_MAX);
				memcpy(e->id, line + 4, n - 4);
				e->id[n - 4] = '\0';
				e->has_id = 1;
			} else if (n >= 6 && memcmp(line, "data: ", 6) == 0) {
				if (data.len > 0)
					ts_buf_append(&data, "\n", 1);
				ts_buf_append(&data, line + 6, n - 6);
			} else if (n > 7 && memcmp(line, "event: ", 7) == 0 &&
			    n - 7 < sizeof(e->type)) {
				memcpy(e->type, line + 7, n - 7);
			} else if (n > 7 && memcmp(line, "retry: ", 7) == 0) {
				e->has_retry = 1;
				e->retry = strtol(line + 7, NULL, 10);
			} else if (n >= 2 && memcmp(line, ": ", 2) == 0 &&
			    n - 2 < sizeof(e->comment)) {
				e->kind = EV_COMMENT;
				memcpy(e->comment, line + 2, n - 2);
			} else {
				fail_msg("unexpected SSE line: %.*s", (int)n,
				    line);
			}
		}
		e->data = calloc(1, data.len + 1);
		assert_non_null(e->data);
		if (data.len > 0)
			memcpy(e->data, data.p, data.len);
		e->data_len = data.len;
		ts_buf_free(&data);
	}
	return s;
}

static void
sse_free(struct sse *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->ev[i].data);
	free(s);
}

static size_t
count_keepalives(const struct sse *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++)
		n += s->ev[i].kind == EV_COMMENT &&
		    strcmp(s->ev[i].comment, "keep-alive") == 0;
	return n;
}

/* A lab token event's text, appended to text. */
static void
lab_token_text(const struct sse_event *e, struct ts_buf *text)
{
	json_error_t jerr;
	json_t *o = json_loadb(e->data, e->data_len, 0, &jerr);
	json_t *t = json_object_get(o, "token");

	if (!json_is_string(t))
		fail_msg("not a token event: %s", e->data);
	assert_int_equal(json_object_size(o), 1);
	ts_buf_append(text, json_string_value(t), json_string_length(t));
	json_decref(o);
}

/* ---- requests ----------------------------------------------------------- */

/* Percent-encodes s as a form value (WHATWG URL, urlencoded). */
static void
url_encode(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		assert_true(n + 4 < cap);
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.') {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	out[n] = '\0';
}

static void
stream_uri(char *uri, size_t cap, const char *prompt, int max_tokens,
    const char *extra)
{
	char p[1024];
	int k;

	url_encode(prompt, p, sizeof(p));
	if (max_tokens >= 0)
		k = snprintf(uri, cap, "/stream?prompt=%s&max_tokens=%d%s", p,
		    max_tokens, extra != NULL ? extra : "");
	else
		k = snprintf(uri, cap, "/stream?prompt=%s%s", p,
		    extra != NULL ? extra : "");
	assert_true(k > 0 && (size_t)k < cap);
}

/* A /generate body (caller frees); prefill_ms < 0: not given. */
static char *
generate_body(const char *prompt, int max_tokens, int prefill_ms)
{
	json_t *o = json_pack("{s:s,s:i}", "prompt", prompt, "max_tokens",
	    max_tokens);
	char *s;

	if (prefill_ms >= 0)
		json_object_set_new(o, "prefill_ms", json_integer(prefill_ms));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	assert_non_null(s);
	return s;
}

/* A /v1 request. */
struct v1_req {
	enum openai_kind kind;
	const char *prompt;
	int max_tokens;
	int stream;
	int include_usage;
	const char *stop[2];
	size_t nstop;
	int prefill_ms;              /* -1: not given */
};

static const char *
v1_uri(enum openai_kind kind)
{
	return kind == OPENAI_CHAT ? "/v1/chat/completions" :
	    kind == OPENAI_RESPONSES ? "/v1/responses" : "/v1/completions";
}

/* Its JSON body (caller frees); ignore_eos, so it runs to max_tokens. */
static char *
v1_body(const struct v1_req *q)
{
	json_t *o = json_pack("{s:s,s:i,s:b,s:b}", "model", "tokstream-sim",
	    q->kind == OPENAI_RESPONSES ? "max_output_tokens" : "max_tokens",
	    q->max_tokens, "stream", q->stream, "ignore_eos", 1);
	char *s;
	size_t i;

	if (q->kind == OPENAI_RESPONSES)
		json_object_set_new(o, "input", json_string(q->prompt));
	else if (q->kind == OPENAI_CHAT)
		json_object_set_new(o, "messages", json_pack("[{s:s,s:s}]",
		    "role", "user", "content", q->prompt));
	else
		json_object_set_new(o, "prompt", json_string(q->prompt));
	if (q->include_usage)
		json_object_set_new(o, "stream_options", json_pack("{s:b}",
		    "include_usage", 1));
	if (q->nstop > 0) {
		json_t *a = json_array();

		for (i = 0; i < q->nstop; i++)
			json_array_append_new(a, json_string(q->stop[i]));
		json_object_set_new(o, "stop", a);
	}
	if (q->prefill_ms >= 0)
		json_object_set_new(o, "prefill_ms",
		    json_integer(q->prefill_ms));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	assert_non_null(s);
	return s;
}

/* What a /v1 answer said, streamed or not. */
struct v1_result {
	uint64_t id;                 /* X-Request-Id */
	struct ts_buf text;          /* the content, concatenated */
	size_t nchunks;              /* content chunks (streamed) */
	size_t chunk_end[MAX_EVENTS];  /* text offset after each chunk */
	char finish[16];
	long completion_tokens;      /* -1: no usage */
	long prompt_tokens;
	size_t keepalives;
};

static void
v1_result_free(struct v1_result *res)
{
	ts_buf_free(&res->text);
}

/* A whole Responses API response object's text, finish ("stop" for
 * status completed, "length" for incomplete) and usage into res, its
 * fields checked (OpenAI API reference, the response object). */
static void
responses_object(json_t *o, uint64_t id, struct v1_result *res)
{
	char want[48];
	json_t *out, *item, *part, *usage;
	const char *status = jstr(o, "status");

	snprintf(want, sizeof(want), "resp_%llu", (unsigned long long)id);
	assert_string_equal(jstr(o, "id"), want);
	assert_string_equal(jstr(o, "object"), "response");
	assert_string_equal(jstr(o, "model"), "tokstream-sim");
	assert_true(json_is_integer(json_object_get(o, "created_at")));
	assert_true(json_is_null(json_object_get(o, "error")));
	out = json_object_get(o, "output");
	assert_int_equal(json_array_size(out), 1);
	item = json_array_get(out, 0);
	snprintf(want, sizeof(want), "msg_%llu", (unsigned long long)id);
	assert_string_equal(jstr(item, "id"), want);
	assert_string_equal(jstr(item, "type"), "message");
	assert_string_equal(jstr(item, "role"), "assistant");
	assert_string_equal(jstr(item, "status"), status);
	assert_int_equal(json_array_size(json_object_get(item, "content")),
	    1);
	part = json_array_get(json_object_get(item, "content"), 0);
	assert_string_equal(jstr(part, "type"), "output_text");
	assert_int_equal(json_array_size(json_object_get(part,
	    "annotations")), 0);
	ts_buf_append(&res->text, jstr(part, "text"),
	    strlen(jstr(part, "text")));
	if (strcmp(status, "completed") == 0) {
		assert_true(json_is_null(json_object_get(o,
		    "incomplete_details")));
		snprintf(res->finish, sizeof(res->finish), "stop");
	} else {
		assert_string_equal(status, "incomplete");
		assert_string_equal(jstr(o, "incomplete_details.reason"),
		    "max_output_tokens");
		snprintf(res->finish, sizeof(res->finish), "length");
	}
	usage = json_object_get(o, "usage");
	res->completion_tokens = (long)json_integer_value(json_object_get(
	    usage, "output_tokens"));
	res->prompt_tokens = (long)json_integer_value(json_object_get(usage,
	    "input_tokens"));
	assert_int_equal(json_integer_value(json_object_get(usage,
	    "total_tokens")), res->completion_tokens + res->prompt_tokens);
}

/* A streamed Responses API answer: named events in OpenAI's order
 * (created, in_progress, output_item.added, content_part.added, the
 * deltas, output_text.done, content_part.done, output_item.done,
 * completed or incomplete), sequence numbers 0, 1, ..., the event name
 * equal to the data's "type", the done events repeating the text, no
 * [DONE]. */
static void
responses_parse_stream(const struct response *r, struct v1_result *res)
{
	static const char *const before[] = { "response.created",
	    "response.in_progress", "response.output_item.added",
	    "response.content_part.added" };
	static const char *const after[] = { "response.output_text.done",
	    "response.content_part.done", "response.output_item.done" };
	struct sse *s = sse_parse(r->body, r->body_len);
	size_t i, seq = 0, nb = 0, na = 0;
	int last = 0;

	for (i = 0; i < s->n; i++) {
		const struct sse_event *e = &s->ev[i];
		json_t *o;

		if (e->kind == EV_COMMENT) {
			assert_int_equal(seq, 0);
			res->keepalives++;
			continue;
		}
		assert_int_equal(e->kind, EV_DATA);
		assert_false(last);
		assert_false(e->has_id);
		o = json_loadb(e->data, e->data_len, 0, NULL);
		if (o == NULL)
			fail_msg("event is not JSON: %s", e->data);
		assert_string_equal(e->type, jstr(o, "type"));
		assert_int_equal(json_integer_value(json_object_get(o,
		    "sequence_number")), seq++);
		if (nb < NELEM(before)) {
			assert_string_equal(e->type, before[nb++]);
			if (nb <= 2) {
				assert_string_equal(jstr(o, "response.status"),
				    "in_progress");
				assert_true(json_is_null(json_object_get(
				    json_object_get(o, "response"), "usage")));
			}
		} else if (strcmp(e->type, "response.output_text.delta") ==
		    0) {
			assert_int_equal(na, 0);
			assert_int_equal(json_integer_value(json_object_get(o,
			    "output_index")), 0);
			assert_true(strlen(jstr(o, "delta")) > 0);
			ts_buf_append(&res->text, jstr(o, "delta"),
			    strlen(jstr(o, "delta")));
			assert_true(res->nchunks < MAX_EVENTS);
			res->chunk_end[res->nchunks++] = res->text.len;
		} else if (na < NELEM(after)) {
			const char *t = na == 0 ? jstr(o, "text") : na == 1 ?
			    jstr(o, "part.text") : NULL;

			assert_string_equal(e->type, after[na++]);
			if (t != NULL) {
				assert_int_equal(strlen(t), res->text.len);
				assert_memory_equal(t, res->text.p,
				    res->text.len);
			}
		} else {
			struct v1_result whole;

			assert_true(strcmp(e->type, "response.completed") ==
			    0 || strcmp(e->type, "response.incomplete") == 0);
			memset(&whole, 0, sizeof(whole));
			ts_buf_init(&whole.text, 1u << 20);
			responses_object(json_object_get(o, "response"),
			    res->id, &whole);
			assert_int_equal(whole.text.len, res->text.len);
			assert_memory_equal(whole.text.p, res->text.p,
			    res->text.len);
			assert_string_equal(e->type, strcmp(whole.finish,
			    "stop") == 0 ? "response.completed" :
			    "response.incomplete");
			memcpy(res->finish, whole.finish, sizeof(res->finish));
			res->completion_tokens = whole.completion_tokens;
			res->prompt_tokens = whole.prompt_tokens;
			ts_buf_free(&whole.text);
			last = 1;
		}
		json_decref(o);
	}
	assert_true(last);
	sse_free(s);
}

/* A streamed /v1 answer's events (OpenAI API reference, the chunk
 * object): content chunks, the first with role assistant (chat), one
 * finish chunk, the usage chunk when asked for, then [DONE] last. */
static void
v1_parse_stream(const struct v1_req *q, const struct response *r,
    struct v1_result *res)
{
	struct sse *s;
	const char *object = q->kind == OPENAI_CHAT ?
	    "chat.completion.chunk" : "text_completion";
	char want_id[48];
	size_t i, data_events = 0;
	int finished = 0, usage_seen = 0, done = 0;

	if (q->kind == OPENAI_RESPONSES) {
		responses_parse_stream(r, res);
		return;
	}
	s = sse_parse(r->body, r->body_len);

	snprintf(want_id, sizeof(want_id), "%s-%llu", q->kind == OPENAI_CHAT ?
	    "chatcmpl" : "cmpl", (unsigned long long)res->id);
	for (i = 0; i < s->n; i++) {
		const struct sse_event *e = &s->ev[i];
		json_t *o, *choices, *c, *fr, *usage;
		json_error_t jerr;

		if (e->kind == EV_COMMENT) {
			assert_int_equal(data_events, 0);
			res->keepalives++;
			continue;
		}
		assert_int_equal(e->kind, EV_DATA);
		assert_false(e->has_id);
		assert_false(done);
		data_events++;
		if (strcmp(e->data, "[DONE]") == 0) {
			done = 1;
			continue;
		}
		o = json_loadb(e->data, e->data_len, 0, &jerr);
		if (o == NULL)
			fail_msg("chunk is not JSON: %s", e->data);
		assert_string_equal(jstr(o, "object"), object);
		assert_string_equal(jstr(o, "id"), want_id);
		assert_string_equal(jstr(o, "model"), "tokstream-sim");
		usage = json_object_get(o, "usage");
		choices = json_object_get(o, "choices");
		assert_true(json_is_array(choices));
		if (json_array_size(choices) == 0) {
			/* the usage chunk: after the finish chunk */
			assert_true(q->include_usage);
			assert_true(finished);
			assert_false(usage_seen);
			usage_seen = 1;
			res->completion_tokens = (long)json_integer_value(
			    json_object_get(usage, "completion_tokens"));
			res->prompt_tokens = (long)json_integer_value(
			    json_object_get(usage, "prompt_tokens"));
			assert_int_equal(json_integer_value(json_object_get(
			    usage, "total_tokens")), res->completion_tokens +
			    res->prompt_tokens);
			json_decref(o);
			continue;
		}
		/* every other chunk: usage null with include_usage, else
		 * no usage member at all */
		if (q->include_usage)
			assert_true(json_is_null(usage));
		else
			assert_null(usage);
		assert_int_equal(json_array_size(choices), 1);
		assert_false(finished);
		c = json_array_get(choices, 0);
		fr = json_object_get(c, "finish_reason");
		if (q->kind == OPENAI_CHAT) {
			json_t *d = json_object_get(c, "delta");
			json_t *role = json_object_get(d, "role");
			json_t *content = json_object_get(d, "content");

			assert_true(json_is_object(d));
			/* the role comes with the stream's first chunk only */
			if (i == res->keepalives)
				assert_string_equal(json_string_value(role),
				    "assistant");
			else
				assert_null(role);
			if (content != NULL)
				ts_buf_append(&res->text,
				    json_string_value(content),
				    json_string_length(content));
		} else {
			json_t *t = json_object_get(c, "text");

			ts_buf_append(&res->text, json_string_value(t),
			    json_string_length(t));
		}
		if (json_is_string(fr)) {
			finished = 1;
			snprintf(res->finish, sizeof(res->finish), "%s",
			    json_string_value(fr));
		} else {
			assert_true(json_is_null(fr));
			assert_true(res->nchunks < MAX_EVENTS);
			res->chunk_end[res->nchunks++] = res->text.len;
		}
		json_decref(o);
	}
	assert_true(finished);
	assert_int_equal(usage_seen, q->include_usage);
	assert_true(done);
	sse_free(s);
}

/* A whole /v1 answer: one chat.completion or text_completion object. */
static void
v1_parse_answer(const struct v1_req *q, const struct response *r,
    struct v1_result *res)
{
	json_t *o = body_json(r), *c, *usage;
	const char *text;
	char want_id[48];

	if (q->kind == OPENAI_RESPONSES) {
		responses_object(o, res->id, res);
		json_decref(o);
		return;
	}

	snprintf(want_id, sizeof(want_id), "%s-%llu", q->kind == OPENAI_CHAT ?
	    "chatcmpl" : "cmpl", (unsigned long long)res->id);
	assert_string_equal(jstr(o, "id"), want_id);
	assert_string_equal(jstr(o, "object"), q->kind == OPENAI_CHAT ?
	    "chat.completion" : "text_completion");
	assert_int_equal(json_array_size(json_object_get(o, "choices")), 1);
	c = json_array_get(json_object_get(o, "choices"), 0);
	if (q->kind == OPENAI_CHAT) {
		json_t *m = json_object_get(c, "message");

		assert_string_equal(jstr(c, "message.role"), "assistant");
		/* required by OpenAI's schema, null unless refused */
		assert_non_null(json_object_get(m, "refusal"));
		assert_true(json_is_null(json_object_get(m, "refusal")));
		text = jstr(c, "message.content");
	} else {
		text = jstr(c, "text");
	}
	ts_buf_append(&res->text, text, strlen(text));
	snprintf(res->finish, sizeof(res->finish), "%s",
	    jstr(c, "finish_reason"));
	usage = json_object_get(o, "usage");
	res->completion_tokens = (long)json_integer_value(json_object_get(
	    usage, "completion_tokens"));
	res->prompt_tokens = (long)json_integer_value(json_object_get(usage,
	    "prompt_tokens"));
	json_decref(o);
}

/* Runs the /v1 request q on a fresh server and parses its answer. */
static void
v1_run(const struct v1_req *q, struct v1_result *res,
    struct state_record *rec)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	char *body = v1_body(q);

	memset(res, 0, sizeof(*res));
	ts_buf_init(&res->text, 1u << 20);
	res->completion_tokens = -1;
	server_up(&fs);
	fake_open(&fc, &fs, "POST", v1_uri(q->kind), body);
	exchange(&fs, &fc, &r);
	if (r.status != 200)
		fail_msg("%d: %.*s", r.status, (int)r.body_len, r.body);
	res->id = request_id(&r);
	assert_true(res->id > 0);
	if (q->stream) {
		assert_header(&r, "Content-Type",
		    "text/event-stream; charset=utf-8");
		v1_parse_stream(q, &r, res);
	} else {
		assert_header(&r, "Content-Type", "application/json");
		v1_parse_answer(q, &r, res);
	}
	assert_int_equal(state_lookup(fs.srv.state, res->id, rec), TS_OK);
	fake_close(&fc);
	server_down(&fs);
	free(body);
}

/* The lab generator's text for a prompt (sim/lab.h): what /stream and
 * /generate must send. */
static void
lab_text(const char *prompt, uint32_t n, struct ts_buf *out)
{
	struct sim_lab g;
	uint32_t i;

	sim_lab_init(&g, prompt, strlen(prompt));
	for (i = 0; i < n; i++) {
		size_t len;
		const char *t = sim_token_text(sim_lab_next(&g), &len);

		ts_buf_append(out, t, len);
	}
}

/* ---- GET /stream -------------------------------------------------------- */

/* The lab stream's events (docs/API.md): one event per token with the id
 * <stream>-<key>-<index>, the first with the retry field, then the "end"
 * id with [DONE]; max_tokens absent is 16. */
static void
test_stream_events(void **unused)
{
	static const struct {
		const char *prompt;
		int max_tokens;          /* -1: not given */
		uint32_t events;
	} cases[] = {
		{ "hello", 1, 1 },
		{ "hello", 2, 2 },
		{ "two words", 5, 5 },
		{ "no max_tokens", -1, HTTP_DEFAULT_MAX_TOKENS },
		{ "hello", 0, 0 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct sse *s;
		struct state_record rec;
		char uri[2048], want[RESUME_ID_MAX + 1];
		struct resume_id rid = { 0, 0, 0, 0 };
		uint64_t id;
		uint32_t i;

		server_up(&fs);
		stream_uri(uri, sizeof(uri), cases[k].prompt,
		    cases[k].max_tokens, NULL);
		fake_open(&fc, &fs, "GET", uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_header(&r, "Content-Type",
		    "text/event-stream; charset=utf-8");
		assert_header(&r, "Cache-Control", "no-cache");
		assert_header(&r, "Access-Control-Allow-Origin", "*");
		id = request_id(&r);
		assert_true(id > 0);
		s = sse_parse(r.body, r.body_len);
		/* the tokens (the first with retry), the end */
		assert_int_equal(s->n, cases[k].events + 1);
		assert_int_equal(s->ev[0].kind, EV_DATA);
		assert_true(s->ev[0].has_retry);
		assert_int_equal(s->ev[0].retry, OPTIONS_DEFAULT_RETRY_MS);
		rid.stream = id;
		rid.key = resume_key(cases[k].prompt, strlen(cases[k].prompt),
		    cases[k].max_tokens < 0 ? HTTP_DEFAULT_MAX_TOKENS :
		    (uint32_t)cases[k].max_tokens, -1);
		for (i = 0; i < cases[k].events; i++) {
			const struct sse_event *e = &s->ev[i];
			struct ts_buf t;

			rid.index = i;
			resume_id_format(want, sizeof(want), &rid);
			assert_int_equal(e->kind, EV_DATA);
			assert_true(e->has_id);
			assert_string_equal(e->id, want);
			ts_buf_init(&t, 4096);
			lab_token_text(e, &t);
			assert_true(t.len > 0);
			ts_buf_free(&t);
		}
		rid.index = RESUME_INDEX_END;
		resume_id_format(want, sizeof(want), &rid);
		assert_true(s->ev[s->n - 1].has_id);
		assert_string_equal(s->ev[s->n - 1].id, want);
		assert_string_equal(s->ev[s->n - 1].data, "[DONE]");
		assert_int_equal(count_keepalives(s), 0);
		/* the record the hooks wrote */
		assert_int_equal(state_lookup(fs.srv.state, id, &rec), TS_OK);
		assert_int_equal(rec.kind, STATE_KIND_STREAM);
		assert_int_equal(rec.status, STATE_DONE);
		assert_int_equal(rec.generated, cases[k].events);
		sse_free(s);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* The tokens of GET /stream, concatenated, are the text of POST
 * /generate for the same prompt, and both are the lab generator's. */
static void
test_stream_text_matches_generate(void **unused)
{
	static const struct {
		const char *prompt;
		int max_tokens;
	} cases[] = {
		{ "hello", 1 },
		{ "hello", 24 },
		{ "a&b=c d+e", 12 },
		{ "\xc3\xbcnic\xc3\xb8" "de \xe2\x82\xac", 40 },
		{ "", 7 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct sse *s;
		struct ts_buf streamed, want;
		json_t *o;
		char uri[2048], *body;
		size_t i;

		ts_buf_init(&streamed, 1u << 20);
		ts_buf_init(&want, 1u << 20);
		lab_text(cases[k].prompt, (uint32_t)cases[k].max_tokens,
		    &want);
		server_up(&fs);
		stream_uri(uri, sizeof(uri), cases[k].prompt,
		    cases[k].max_tokens, NULL);
		fake_open(&fc, &fs, "GET", uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		s = sse_parse(r.body, r.body_len);
		for (i = 0; i < s->n; i++)
			if (s->ev[i].kind == EV_DATA &&
			    strcmp(s->ev[i].data, "[DONE]") != 0)
				lab_token_text(&s->ev[i], &streamed);
		sse_free(s);
		fake_close(&fc);

		body = generate_body(cases[k].prompt, cases[k].max_tokens, -1);
		fake_open(&fc, &fs, "POST", "/generate", body);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_header(&r, "Content-Type", "application/json");
		o = body_json(&r);
		assert_int_equal(streamed.len, want.len);
		assert_memory_equal(streamed.p, want.p, want.len);
		assert_string_equal(jstr(o, "text"), want.p);
		assert_int_equal(json_integer_value(json_object_get(
		    json_object_get(o, "usage"), "completion_tokens")),
		    cases[k].max_tokens);
		json_decref(o);
		fake_close(&fc);
		free(body);
		server_down(&fs);
		ts_buf_free(&streamed);
		ts_buf_free(&want);
	}
}

/* A malformed query is a 400 in the lab's error shape, before any
 * sequence starts. */
static void
test_stream_bad_query(void **unused)
{
	static const struct {
		const char *uri;
		const char *code;
	} cases[] = {
		{ "/stream", "missing_prompt" },
		{ "/stream?max_tokens=3", "missing_prompt" },
		{ "/stream?prompt=%zz", "invalid_percent_encoding" },
		{ "/stream?prompt=x&max_tokens=abc", "invalid_max_tokens" },
		{ "/stream?prompt=x&max_tokens=99999", "invalid_max_tokens" },
		{ "/stream?prompt=x&max_tokens=-1", "invalid_max_tokens" },
		{ "/stream?prompt=x&prompt=y", "duplicate_param" },
		{ "/stream?prompt=x&prefill_ms=600000",
		    "invalid_prefill_ms" },
		{ "/stream?prompt=x&last_event_id=nonsense",
		    "invalid_last_event_id" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;

		server_up(&fs);
		fake_open(&fc, &fs, "GET", cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		assert_error(&r, 400, "invalid_request_error", cases[k].code,
		    0);
		assert_int_equal(request_id(&r), 0);
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* An injected error: the tokens before it, an error event, then the end
 * id and [DONE]; the record says error. */
static void
test_stream_injected_error(void **unused)
{
	static const struct {
		int error_after;
		uint32_t tokens;
	} cases[] = {
		{ 0, 0 },
		{ 3, 3 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct sse *s;
		struct state_record rec;
		char uri[256], extra[64];
		json_t *o;
		uint32_t i;

		server_up(&fs);
		snprintf(extra, sizeof(extra), "&error_after=%d",
		    cases[k].error_after);
		stream_uri(uri, sizeof(uri), "boom", 10, extra);
		fake_open(&fc, &fs, "GET", uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		s = sse_parse(r.body, r.body_len);
		/* tokens, the error, [DONE] */
		assert_int_equal(s->n, cases[k].tokens + 2);
		for (i = 0; i < cases[k].tokens; i++)
			assert_true(s->ev[i].has_id);
		o = json_loads(s->ev[s->n - 2].data, 0, NULL);
		assert_non_null(o);
		assert_string_equal(jstr(o, "error.code"), "injected_error");
		json_decref(o);
		assert_false(s->ev[s->n - 2].has_id);
		assert_string_equal(s->ev[s->n - 1].data, "[DONE]");
		assert_int_equal(state_lookup(fs.srv.state, request_id(&r),
		    &rec), TS_OK);
		assert_int_equal(rec.status, STATE_ERROR);
		assert_int_equal(rec.generated, cases[k].tokens);
		sse_free(s);
		fake_close(&fc);
		server_down(&fs);
	}
}

/*
 * Resuming a stream (docs/API.md "Resuming a stream"): from the
 * Last-Event-ID header or the last_event_id parameter the stream goes on
 * after the named token, with the same text the whole stream has there,
 * and its record names the stream resumed; an id of the last token or
 * the end is a 204; one of other parameters or past the end a 400.
 */
static void
test_stream_resume(void **unused)
{
	enum via { HEADER, QUERY };
	static const struct {
		enum via via;
		int max_tokens;          /* of the id; the request asks 5 */
		uint64_t stream;         /* of the id; 0: the first stream */
		uint64_t index;          /* of the id */
		int status;
		const char *code;        /* a 400's */
		uint64_t resumed_from;   /* 0: the first stream's; 9: none */
	} cases[] = {
		{ HEADER, 5, 0, 1, 200, NULL, 0 },
		{ QUERY, 5, 0, 2, 200, NULL, 0 },
		{ HEADER, 5, 0, 0, 200, NULL, 0 },
		/* a stream the state file does not hold: resumed anyway */
		{ HEADER, 5, 77, 2, 200, NULL, 9 },
		{ HEADER, 5, 0, 4, 204, NULL, 0 },
		{ HEADER, 5, 0, RESUME_INDEX_END, 204, NULL, 0 },
		{ HEADER, 6, 0, 1, 400, "foreign_last_event_id", 0 },
		{ QUERY, 5, 0, 7, 400, "invalid_last_event_id", 0 },
	};
	const char *prompt = "resume me";
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc, rc;
		struct response r;
		struct resume_id rid = { 0, 0, 0, 0 };
		struct ts_buf want, got;
		char uri[512], extra[128], idbuf[RESUME_ID_MAX + 1];
		uint64_t first;

		ts_buf_init(&want, 1u << 20);
		ts_buf_init(&got, 1u << 20);
		server_up(&fs);
		/* the stream that is resumed */
		stream_uri(uri, sizeof(uri), prompt, 5, NULL);
		fake_open(&fc, &fs, "GET", uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		first = request_id(&r);
		rid.stream = cases[k].stream != 0 ? cases[k].stream : first;
		rid.key = resume_key(prompt, strlen(prompt),
		    (uint32_t)cases[k].max_tokens, -1);
		rid.index = cases[k].index;
		assert_true(resume_id_format(idbuf, sizeof(idbuf), &rid) > 0);
		if (cases[k].via == QUERY) {
			snprintf(extra, sizeof(extra), "&last_event_id=%s",
			    idbuf);
			stream_uri(uri, sizeof(uri), prompt, 5, extra);
		}
		fake_open(&rc, &fs, "GET", uri, NULL);
		if (cases[k].via == HEADER)
			fake_set(&rc, "HTTP_LAST_EVENT_ID", idbuf);
		exchange(&fs, &rc, &r);
		if (cases[k].status == 400) {
			assert_error(&r, 400, "invalid_request_error",
			    cases[k].code, 0);
			assert_int_equal(state_total_streams(fs.srv.state), 1);
		} else if (cases[k].status == 204) {
			assert_int_equal(r.status, 204);
			assert_int_equal(r.body_len, 0);
			assert_int_equal(state_total_streams(fs.srv.state), 1);
		} else {
			struct sse *s;
			struct state_record rec;
			struct sim_lab g;
			uint32_t i, start = (uint32_t)cases[k].index + 1;
			size_t j;

			assert_int_equal(r.status, 200);
			s = sse_parse(r.body, r.body_len);
			/* tokens start..4, the end */
			assert_int_equal(s->n, 5 - start + 1);
			rid.stream = request_id(&r);
			rid.key = resume_key(prompt, strlen(prompt), 5, -1);
			for (j = 0; j + 1 < s->n; j++) {
				rid.index = start + j;
				resume_id_format(idbuf, sizeof(idbuf), &rid);
				assert_string_equal(s->ev[j].id, idbuf);
				lab_token_text(&s->ev[j], &got);
			}
			/* the same text the whole stream has from there */
			sim_lab_init(&g, prompt, strlen(prompt));
			for (i = 0; i < 5; i++) {
				size_t len;
				const char *t = sim_token_text(sim_lab_next(&g),
				    &len);

				if (i >= start)
					ts_buf_append(&want, t, len);
			}
			assert_int_equal(got.len, want.len);
			assert_memory_equal(got.p, want.p, want.len);
			sse_free(s);
			assert_int_equal(state_lookup(fs.srv.state, rid.stream,
			    &rec), TS_OK);
			assert_int_equal(rec.resume_index, start);
			assert_int_equal(rec.generated, 5 - start);
			assert_int_equal(rec.resumed_from,
			    cases[k].resumed_from == 9 ? 0 : first);
		}
		fake_close(&rc);
		fake_close(&fc);
		server_down(&fs);
		ts_buf_free(&want);
		ts_buf_free(&got);
	}
}

/*
 * When the bytes go out, on the synthetic clock: the head at arrival,
 * the first token after the prefill (the request's prefill_ms, or the
 * latency model's over the prompt's tokens, plus the tokens a resumed
 * stream recomputes), then one per TPOT (the request's tpot_ms, or the
 * server's). A JSON answer is one write at the end.
 */
static void
test_stream_timing(void **unused)
{
	static const struct {
		const char *method;
		const char *uri;
		const char *body;
		const char *prompt;      /* for the latency model's prefill */
		int64_t resume_index;    /* Last-Event-ID's, or -1 */
		double prefill_ms;       /* < 0: the latency model's */
		double tpot_ms;
		size_t tokens;           /* token writes; 0: one answer */
		size_t max_tokens;
	} cases[] = {
		{ "GET", "/stream?prompt=t&max_tokens=4&prefill_ms=200&"
		    "tpot_ms=50", NULL, "t", -1, 200, 50, 4, 4 },
		{ "GET", "/stream?prompt=t&max_tokens=3", NULL, "t", -1, -1,
		    20, 3, 3 },
		{ "GET", "/stream?prompt=hello+world+and+more&max_tokens=3&"
		    "tpot_ms=5", NULL, "hello world and more", -1, -1, 5, 3,
		    3 },
		{ "GET", "/stream?prompt=t&max_tokens=6", NULL, "t", 2, -1,
		    20, 3, 6 },
		{ "POST", "/generate", "{\"prompt\":\"t\",\"max_tokens\":4,"
		    "\"prefill_ms\":100,\"tpot_ms\":30}", "t", -1, 100, 30, 0,
		    4 },
		{ "POST", "/generate", "{\"prompt\":\"t\",\"max_tokens\":4}",
		    "t", -1, -1, 20, 0, 4 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char idbuf[RESUME_ID_MAX + 1];
		int64_t t0, prefill, tpot;
		size_t i;

		server_up(&fs);
		t0 = clock_ns;
		prefill = cases[k].prefill_ms >= 0 ?
		    ts_ms_to_ns(cases[k].prefill_ms) :
		    ts_ms_to_ns(engine_prefill_ms(&fs.opt.engine.lat,
		    sim_tokenize(cases[k].prompt, strlen(cases[k].prompt),
		    NULL, 0) + (uint64_t)(cases[k].resume_index + 1)));
		tpot = ts_ms_to_ns(cases[k].tpot_ms);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri,
		    cases[k].body);
		if (cases[k].resume_index >= 0) {
			struct resume_id rid = { 77, resume_key(
			    cases[k].prompt, strlen(cases[k].prompt),
			    (uint32_t)cases[k].max_tokens, -1),
			    (uint64_t)cases[k].resume_index, 0 };

			resume_id_format(idbuf, sizeof(idbuf), &rid);
			fake_set(&fc, "HTTP_LAST_EVENT_ID", idbuf);
		}
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		if (cases[k].tokens == 0) {
			assert_int_equal(fc.nwrites, 1);
			assert_int_equal(fc.write_at[0], t0 + prefill +
			    (int64_t)(cases[k].max_tokens - 1) * tpot);
		} else {
			/* the head (and retry), then each token */
			assert_int_equal(fc.nwrites, 1 + cases[k].tokens);
			assert_int_equal(fc.write_at[0], t0);
			for (i = 0; i < cases[k].tokens; i++)
				assert_int_equal(fc.write_at[1 + i], t0 +
				    prefill + (int64_t)i * tpot);
		}
		fake_close(&fc);
		server_down(&fs);
	}
}

/* ---- POST /generate --------------------------------------------------- */

/* A body read in small pieces is whole (case C05); a body shorter than
 * its Content-Length is a 400. */
static void
test_generate_body_reads(void **unused)
{
	static const struct {
		size_t piece;            /* 0: whatever read() is asked */
		int cl_extra;            /* Content-Length - body length */
		int status;
	} cases[] = {
		{ 7, 0, 200 },
		{ 1, 0, 200 },
		{ 0, 0, 200 },
		{ 7, 5, 400 },
	};
	const char *prompt = "a prompt long enough to need many reads of "
	    "seven bytes";
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct ts_buf want;
		char *body = generate_body(prompt, 9, -1);
		char cl[32];

		ts_buf_init(&want, 1u << 20);
		lab_text(prompt, 9, &want);
		server_up(&fs);
		fake_open(&fc, &fs, "POST", "/generate", body);
		fc.piece = cases[k].piece;
		snprintf(cl, sizeof(cl), "%zu", fc.body_len +
		    (size_t)cases[k].cl_extra);
		fake_set(&fc, "CONTENT_LENGTH", cl);
		exchange(&fs, &fc, &r);
		if (cases[k].status == 200) {
			json_t *o;

			assert_int_equal(r.status, 200);
			o = body_json(&r);
			assert_string_equal(jstr(o, "text"), want.p);
			json_decref(o);
			assert_true(request_id(&r) > 0);
		} else {
			assert_error(&r, 400, "invalid_request_error",
			    "incomplete_body", 0);
			assert_int_equal(state_total_streams(fs.srv.state), 0);
		}
		assert_int_equal(fc.body_off, fc.body_len);
		if (cases[k].piece > 0)
			assert_true(fc.reads >= (fc.body_len +
			    cases[k].piece - 1) / cases[k].piece);
		fake_close(&fc);
		server_down(&fs);
		free(body);
		ts_buf_free(&want);
	}
}

/* A body over the limit is a 413 after it was drained (so lighttpd can
 * deliver the answer); a Content-Length that is not a number, or no
 * body at all, a 400. The same on /v1, in the OpenAI shape. */
static void
test_body_limits(void **unused)
{
	static const struct {
		const char *uri;
		const char *cl;          /* CONTENT_LENGTH; NULL: absent */
		size_t body_len;         /* bytes served */
		int status;
		const char *code;
		int openai;
	} cases[] = {
		{ "/generate", "1048577", 1048577, 413, "body_too_large", 0 },
		{ "/generate", "abc", 0, 400, "invalid_content_length", 0 },
		{ "/generate", "-1", 0, 400, "invalid_content_length", 0 },
		{ "/generate", NULL, 0, 400, "empty_body", 0 },
		{ "/v1/completions", "1048577", 1048577, 413,
		    "body_too_large", 1 },
		{ "/v1/chat/completions", "12x", 0, 400,
		    "invalid_content_length", 1 },
		{ "/v1/chat/completions", NULL, 0, 400, "empty_body", 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char *body = calloc(1, cases[k].body_len + 1);

		assert_non_null(body);
		memset(body, ' ', cases[k].body_len);
		server_up(&fs);
		fake_open(&fc, &fs, "POST", cases[k].uri, NULL);
		fc.body = body;
		fc.body_len = cases[k].body_len;
		fc.piece = 1000;
		if (cases[k].cl != NULL)
			fake_set(&fc, "CONTENT_LENGTH", cases[k].cl);
		exchange(&fs, &fc, &r);
		assert_error(&r, cases[k].status, "invalid_request_error",
		    cases[k].code, cases[k].openai);
		/* drained: every byte was read */
		assert_int_equal(fc.body_off, fc.body_len);
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
		free(body);
	}
}

/* ---- a client that leaves ----------------------------------------------- */

/* The offset just after the n-th token event (one with an id) of a
 * whole /stream answer, head included. */
static size_t
after_event(const char *out, size_t len, uint32_t n)
{
	const char *body = NULL;
	size_t pos, i;
	uint32_t seen = 0;

	for (i = 0; i + 4 <= len && body == NULL; i++)
		if (memcmp(out + i, "\r\n\r\n", 4) == 0)
			body = out + i + 4;
	assert_non_null(body);
	pos = (size_t)(body - out);
	while (seen < n) {
		size_t start = pos;

		/* the event's end: its empty line */
		for (i = pos; i + 2 <= len; i++)
			if (memcmp(out + i, "\n\n", 2) == 0)
				break;
		assert_true(i + 2 <= len);
		pos = i + 2;
		seen += memcmp(out + start, "id: ", 4) == 0;
	}
	return pos;
}

/*
 * A client that leaves after 3 token events, by a failed write (part of
 * the 4th went out), by a hang-up that wait() reports between the 3rd
 * and 4th tokens: the sequence is cancelled with fewer tokens generated
 * than asked, the client got exactly 3 tokens and no [DONE], and
 * /_debug/generated says so. (A client that stops reading is the I/O
 * threads' to time out: test_io.c.)
 */
static void
test_client_gone(void **unused)
{
	enum how { WRITE_FAILS, HANG_UP };
	static const struct {
		enum how how;
		uint64_t generated;      /* when the sequence left */
		uint64_t wasted;         /* generated, never delivered */
		const char *cause;
	} cases[] = {
		/* the 4th token was made; its write failed */
		{ WRITE_FAILS, 4, 1, "client_gone" },
		/* gone between the 3rd and the 4th: the step in flight is
		 * dropped at its boundary */
		{ HANG_UP, 3, 0, "client_gone" },
	};
	const uint32_t asked = 50;
	size_t k, cut;
	char uri[256];
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;

	(void)unused;
	stream_uri(uri, sizeof(uri), "leave early", (int)asked,
	    "&prefill_ms=100");
	/* where the 3rd event ends in a complete answer */
	server_up(&fs);
	fake_open(&fc, &fs, "GET", uri, NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	cut = after_event(fc.out.p, fc.out.len, 3);
	fake_close(&fc);
	server_down(&fs);

	for (k = 0; k < NELEM(cases); k++) {
		struct sse *s;
		struct state_record rec;
		char dbg[64];
		struct fake_conn dc;
		struct response dr;
		json_t *o;
		size_t i, tokens = 0;
		uint64_t id;

		server_defaults(&fs);
		server_start(&fs);
		fake_open(&fc, &fs, "GET", uri, NULL);
		if (cases[k].how == HANG_UP) {
			/* tokens at t0 + 100, 120, 140 ms; gone at 150 */
			fc.hup_at = clock_ns + 150 * MS;
		} else {
			fc.fail_after = cut + 5;
		}
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		id = request_id(&r);
		/* the body up to the cut: 3 whole events and no more */
		s = sse_parse(r.body, cut - (size_t)(r.body - fc.out.p));
		for (i = 0; i < s->n; i++) {
			assert_true(s->ev[i].kind != EV_DATA ||
			    strcmp(s->ev[i].data, "[DONE]") != 0);
			tokens += s->ev[i].has_id;
		}
		assert_int_equal(tokens, 3);
		sse_free(s);
		assert_int_equal(fc.out.len, cases[k].how == HANG_UP ? cut :
		    cut + 5);
		assert_int_equal(state_lookup(fs.srv.state, id, &rec), TS_OK);
		assert_int_equal(rec.status, STATE_CANCELLED);
		assert_true(rec.generated < asked);
		assert_int_equal(rec.generated, cases[k].generated);
		assert_int_equal(rec.wasted, cases[k].wasted);

		snprintf(dbg, sizeof(dbg), "/_debug/generated?id=%llu",
		    (unsigned long long)id);
		fake_open(&dc, &fs, "GET", dbg, NULL);
		exchange(&fs, &dc, &dr);
		assert_int_equal(dr.status, 200);
		o = body_json(&dr);
		assert_string_equal(jstr(o, "status"), "cancelled");
		assert_string_equal(jstr(o, "finish_reason"), "abort");
		assert_string_equal(jstr(o, "cancel_cause"), cases[k].cause);
		assert_int_equal(json_integer_value(json_object_get(o,
		    "generated")), cases[k].generated);
		assert_int_equal(json_integer_value(json_object_get(o,
		    "requested")), asked);
		json_decref(o);
		fake_close(&dc);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* A whole answer whose client left is noticed at its first keep-alive
 * (the write fails) and its sequence cancelled long before max_tokens;
 * nothing reached the client. */
static void
test_answer_client_gone(void **unused)
{
	static const struct {
		const char *uri;
		const char *body;
	} cases[] = {
		{ "/generate", "{\"prompt\":\"x\",\"max_tokens\":200,"
		    "\"prefill_ms\":100}" },
		{ "/v1/completions", "{\"model\":\"tokstream-sim\","
		    "\"prompt\":\"x\",\"max_tokens\":200,\"ignore_eos\":true,"
		    "\"prefill_ms\":100}" },
		{ "/v1/chat/completions", "{\"model\":\"tokstream-sim\","
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		    "\"max_tokens\":200,\"ignore_eos\":true,"
		    "\"prefill_ms\":100}" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct state_record rec;

		server_up(&fs);
		fake_open(&fc, &fs, "POST", cases[k].uri, cases[k].body);
		fc.fail_after = 0;
		route(&fs.srv, &fc.c, clock_ns);
		engine_drain(fs.srv.engine);
		assert_int_equal(fc.out.len, 0);
		assert_true(fc.write_failed);
		assert_int_equal(state_lookup(fs.srv.state, 0, &rec), TS_OK);
		assert_int_equal(rec.status, STATE_CANCELLED);
		assert_int_equal(rec.cause, STATE_CAUSE_CLIENT_GONE);
		/* tokens at 100, 120, ... 1000 ms; the step of 1020 is
		 * dropped */
		assert_int_equal(rec.generated, 46);
		assert_int_equal(rec.wasted, 46);
		fake_close(&fc);
		server_down(&fs);
	}
}

/*
 * The server stops while a request runs: a stream gets an error event
 * (503 shutdown) and [DONE] - on /stream without the "end" id, so that
 * EventSource reconnects and resumes on the restarted server - and a
 * whole answer is a 503. The record says error.
 */
static void
test_shutdown_mid_request(void **unused)
{
	enum shape { LAB_SSE, V1_SSE, JSON };
	static const struct {
		const char *method, *uri, *body;
		enum shape shape;
		int openai;
	} cases[] = {
		{ "GET", "/stream?prompt=s&max_tokens=20&prefill_ms=100",
		    NULL, LAB_SSE, 0 },
		{ "POST", "/v1/chat/completions", "{\"model\":"
		    "\"tokstream-sim\",\"messages\":[{\"role\":\"user\","
		    "\"content\":\"s\"}],\"max_tokens\":20,\"stream\":true,"
		    "\"ignore_eos\":true,\"prefill_ms\":100}", V1_SSE, 1 },
		{ "POST", "/generate", "{\"prompt\":\"s\",\"max_tokens\":20,"
		    "\"prefill_ms\":100}", JSON, 0 },
		{ "POST", "/v1/completions", "{\"model\":\"tokstream-sim\","
		    "\"prompt\":\"s\",\"max_tokens\":20,\"ignore_eos\":true,"
		    "\"prefill_ms\":100}", JSON, 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct state_record rec;

		server_up(&fs);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri,
		    cases[k].body);
		/* tokens at 100, 120, 140; stopped at 150 */
		fc.shutdown_at = clock_ns + 150 * MS;
		exchange(&fs, &fc, &r);
		if (cases[k].shape == JSON) {
			assert_error(&r, 503, "server_error", "shutdown",
			    cases[k].openai);
			assert_true(request_id(&r) > 0);
		} else {
			struct sse *s = sse_parse(r.body, r.body_len);
			json_t *o;
			size_t i, ids = 0;

			assert_int_equal(r.status, 200);
			assert_true(s->n >= 2);
			for (i = 0; i < s->n; i++)
				ids += s->ev[i].has_id;
			/* the tokens' ids only: no "end" */
			if (cases[k].shape == LAB_SSE)
				assert_int_equal(ids, 3);
			else
				assert_int_equal(ids, 0);
			o = json_loads(s->ev[s->n - 2].data, 0, NULL);
			assert_non_null(o);
			assert_string_equal(jstr(o, "error.code"), "shutdown");
			json_decref(o);
			assert_false(s->ev[s->n - 1].has_id);
			assert_string_equal(s->ev[s->n - 1].data, "[DONE]");
			sse_free(s);
		}
		assert_int_equal(state_lookup(fs.srv.state, 0, &rec), TS_OK);
		assert_int_equal(rec.status, STATE_ERROR);
		assert_int_equal(rec.cause, STATE_CAUSE_SHUTDOWN);
		assert_int_equal(rec.generated, 3);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* ---- /v1 ---------------------------------------------------------------- */

/* A streamed chat completion: chat.completion.chunk events, the first
 * with role assistant, then finish_reason and [DONE]; with
 * stream_options.include_usage a usage chunk whose completion_tokens is
 * what the engine generated. */
static void
test_chat_stream_chunks(void **unused)
{
	static const struct v1_req cases[] = {
		{ OPENAI_CHAT, "Tell me a story", 12, 1, 0, { NULL }, 0, -1 },
		{ OPENAI_CHAT, "Tell me a story", 12, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_CHAT, "one", 1, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_COMPLETIONS, "Once upon", 9, 1, 1, { NULL }, 0, -1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_result res;
		struct state_record rec;

		v1_run(&cases[k], &res, &rec);
		assert_string_equal(res.finish, "length");
		assert_true(res.nchunks >= 1);
		assert_true(res.text.len > 0);
		assert_int_equal(rec.kind, STATE_KIND_STREAM);
		assert_int_equal(rec.status, STATE_DONE);
		assert_int_equal(rec.generated, cases[k].max_tokens);
		if (cases[k].include_usage) {
			assert_int_equal(res.completion_tokens, rec.generated);
			assert_int_equal(res.prompt_tokens, rec.prompt_tokens);
		} else {
			assert_int_equal(res.completion_tokens, -1);
		}
		v1_result_free(&res);
	}
}

/* Not streamed: one object whose content is the streamed deltas
 * concatenated, with the same finish reason and token count. */
static void
test_v1_answer_matches_stream(void **unused)
{
	static const struct v1_req cases[] = {
		{ OPENAI_CHAT, "Tell me a story", 12, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_CHAT, "Write a poem about the sea", 80, 1, 1,
		    { NULL }, 0, -1 },
		{ OPENAI_COMPLETIONS, "Once upon", 30, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_COMPLETIONS, "x", 1, 1, 1, { NULL }, 0, -1 },
		{ OPENAI_RESPONSES, "Tell me a story", 12, 1, 0, { NULL }, 0,
		    -1 },
		{ OPENAI_RESPONSES, "x", 1, 1, 0, { NULL }, 0, -1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_req q = cases[k];
		struct v1_result st, an;
		struct state_record rs, ra;

		v1_run(&q, &st, &rs);
		q.stream = 0;
		q.include_usage = 0;
		v1_run(&q, &an, &ra);
		assert_true(st.text.len > 0);
		assert_int_equal(an.text.len, st.text.len);
		assert_memory_equal(an.text.p, st.text.p, st.text.len);
		assert_string_equal(an.finish, st.finish);
		assert_int_equal(an.completion_tokens, st.completion_tokens);
		assert_int_equal(an.completion_tokens, q.max_tokens);
		assert_int_equal(ra.kind, STATE_KIND_GENERATE);
		v1_result_free(&st);
		v1_result_free(&an);
	}
}

/* The first chunk boundary from `from` on around which both chunks have
 * at least `side` ASCII bytes (no multi-byte character to split). */
static size_t
ascii_boundary(const struct v1_result *res, size_t from, size_t side)
{
	size_t i, j;

	for (i = from; i + 1 < res->nchunks; i++) {
		size_t start = i > 0 ? res->chunk_end[i - 1] : 0;
		size_t end = res->chunk_end[i + 1];
		int ok = res->chunk_end[i] - start >= side &&
		    end - res->chunk_end[i] >= side;

		for (j = res->chunk_end[i] - side; ok && j < res->chunk_end[i] +
		    side; j++)
			ok = (unsigned char)res->text.p[j] < 0x80;
		if (ok)
			return i;
	}
	fail_msg("no chunk boundary with ASCII around it");
	return 0;
}

/* A stop string (into stop, 5 bytes) taken from a streamed text past
 * its first chunks, whose first occurrence is where it was taken from:
 * the 4 ASCII bytes around a chunk boundary (spanning), or the first 3
 * of a chunk. Returns its offset in the text. */
static size_t
pick_stop(const struct v1_result *full, int spanning, char *stop)
{
	size_t b, off, len = spanning ? 4 : 3;

	for (b = 3;; b++) {
		b = ascii_boundary(full, b, spanning ? 2 : 3);
		off = spanning ? full->chunk_end[b] - 2 : full->chunk_end[b];
		memcpy(stop, full->text.p + off, len);
		stop[len] = '\0';
		if (strstr(full->text.p, stop) == full->text.p + off)
			return off;
	}
}

/*
 * Stop strings cut the text: the stopped text is the unstopped text's
 * prefix before the stop string's first occurrence, and finish_reason is
 * "stop". The stop string lies inside one chunk, spans two chunks, or is
 * the second of two stop strings (the first never occurs); streamed and
 * not.
 */
static void
test_v1_stop_strings(void **unused)
{
	enum where { INSIDE, SPANNING, SECOND_OF_TWO };
	static const struct {
		enum openai_kind kind;
		int stream;
		enum where where;
	} cases[] = {
		{ OPENAI_CHAT, 1, INSIDE },
		{ OPENAI_CHAT, 0, INSIDE },
		{ OPENAI_CHAT, 1, SPANNING },
		{ OPENAI_CHAT, 0, SPANNING },
		{ OPENAI_COMPLETIONS, 1, SPANNING },
		{ OPENAI_COMPLETIONS, 0, SECOND_OF_TWO },
		{ OPENAI_CHAT, 1, SECOND_OF_TWO },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_req q = { cases[k].kind, "Tell me about the weather "
		    "in the mountains", 60, 1, 1, { NULL }, 0, -1 };
		struct v1_result full, cut;
		struct state_record rec;
		char stop[16];
		const char *at;
		size_t off;

		v1_run(&q, &full, &rec);
		assert_string_equal(full.finish, "length");
		off = pick_stop(&full, cases[k].where == SPANNING, stop);
		at = full.text.p + off;
		q.stream = cases[k].stream;
		q.include_usage = cases[k].stream;
		q.stop[0] = stop;
		q.nstop = 1;
		if (cases[k].where == SECOND_OF_TWO) {
			q.stop[0] = "\x01never\x02";
			q.stop[1] = stop;
			q.nstop = 2;
		}
		v1_run(&q, &cut, &rec);
		assert_string_equal(cut.finish, "stop");
		assert_int_equal(cut.text.len, (size_t)(at - full.text.p));
		assert_memory_equal(cut.text.p, full.text.p, cut.text.len);
		assert_null(strstr(cut.text.p != NULL ? cut.text.p : "",
		    stop));
		/* generated up to the token that completed the stop */
		assert_true(cut.completion_tokens < full.completion_tokens);
		assert_int_equal(rec.generated, cut.completion_tokens);
		if (cases[k].stream)
			assert_true(cut.nchunks < full.nchunks);
		v1_result_free(&full);
		v1_result_free(&cut);
	}
}

/* An injected error on /v1 (the lab knob error_after): streamed, the
 * chunks before it, an error event in the OpenAI shape and [DONE];
 * not streamed, a 500 in the OpenAI shape. */
static void
test_v1_injected_error(void **unused)
{
	static const struct {
		enum openai_kind kind;
		int stream;
		int error_after;
	} cases[] = {
		{ OPENAI_CHAT, 1, 3 },
		{ OPENAI_COMPLETIONS, 1, 0 },
		{ OPENAI_CHAT, 0, 3 },
		{ OPENAI_COMPLETIONS, 0, 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_req q = { cases[k].kind, "fail", 10,
		    cases[k].stream, 0, { NULL }, 0, -1 };
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct state_record rec;
		char *body = v1_body(&q);
		json_t *o;

		o = json_loads(body, 0, NULL);
		json_object_set_new(o, "error_after",
		    json_integer(cases[k].error_after));
		free(body);
		body = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		server_up(&fs);
		fake_open(&fc, &fs, "POST", v1_uri(q.kind), body);
		exchange(&fs, &fc, &r);
		if (cases[k].stream) {
			struct sse *s = sse_parse(r.body, r.body_len);
			size_t i, chunks = 0;

			assert_int_equal(r.status, 200);
			assert_true(s->n >= 2);
			for (i = 0; i + 2 < s->n; i++) {
				o = json_loads(s->ev[i].data, 0, NULL);
				assert_non_null(json_object_get(o, "choices"));
				json_decref(o);
				chunks++;
			}
			/* one chunk per token (the sim's text is ASCII
			 * here or held: at most one per token) */
			assert_true(chunks <= (size_t)cases[k].error_after);
			o = json_loads(s->ev[s->n - 2].data, 0, NULL);
			assert_non_null(o);
			assert_string_equal(jstr(o, "error.code"),
			    "injected_error");
			assert_string_equal(jstr(o, "error.type"),
			    "server_error");
			assert_true(json_is_null(json_object_get(
			    json_object_get(o, "error"), "param")));
			json_decref(o);
			assert_string_equal(s->ev[s->n - 1].data, "[DONE]");
			sse_free(s);
		} else {
			assert_error(&r, 500, "server_error", "injected_error",
			    1);
		}
		assert_int_equal(state_lookup(fs.srv.state, request_id(&r),
		    &rec), TS_OK);
		assert_int_equal(rec.status, STATE_ERROR);
		assert_int_equal(rec.generated, cases[k].error_after);
		fake_close(&fc);
		server_down(&fs);
		free(body);
	}
}

/* Runs `method uri` with body on a fresh server whose client's writes
 * fail past fail_after bytes (SIZE_MAX: never). Returns the bytes that
 * reached the client; *rec is the request's record, status and reason
 * what /_debug/generated says of it. */
static size_t
run_until_gone(const char *method, const char *uri, const char *body,
    size_t fail_after, struct state_record *rec, char *status,
    char *reason)
{
	struct fake_server fs;
	struct fake_conn fc, dc;
	struct response r;
	char dbg[64];
	size_t len;
	json_t *o;

	server_up(&fs);
	fake_open(&fc, &fs, method, uri, body);
	fc.fail_after = fail_after;
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	len = fc.out.len;
	assert_int_equal(state_lookup(fs.srv.state, request_id(&r), rec),
	    TS_OK);
	snprintf(dbg, sizeof(dbg), "/_debug/generated?id=%llu",
	    (unsigned long long)request_id(&r));
	fake_open(&dc, &fs, "GET", dbg, NULL);
	exchange(&fs, &dc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	snprintf(status, 16, "%s", jstr(o, "status"));
	snprintf(reason, 16, "%s", jstr(o, "finish_reason"));
	json_decref(o);
	fake_close(&dc);
	fake_close(&fc);
	server_down(&fs);
	return len;
}

/*
 * A client that leaves after its last token but before the end ([DONE]
 * or the finish chunk) reached it: the end's write fails. The request
 * was cancelled (docs/API.md "Streaming format": "A client that leaves is
 * noticed as on /stream and its sequence is cancelled (cancelled,
 * finish_reason abort)"; engine.h struct engine_outcome: "CANCELLED also
 * for a client that left after its last token, before [DONE]"), however
 * the sequence ended: by max_tokens or by a stop string.
 */
static void
test_client_gone_before_done(void **unused)
{
	enum ep { STREAM, V1_LENGTH, V1_STOP };
	static const struct {
		enum ep ep;
		enum openai_kind kind;
	} cases[] = {
		{ STREAM, 0 },
		{ V1_LENGTH, OPENAI_CHAT },
		{ V1_LENGTH, OPENAI_COMPLETIONS },
		{ V1_STOP, OPENAI_CHAT },
		{ V1_STOP, OPENAI_COMPLETIONS },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct v1_req q = { cases[k].kind, "Tell me about the weather "
		    "in the mountains", 30, 1, 1, { NULL }, 0, -1 };
		struct state_record rec;
		char status[16], reason[16], stop[16];
		const char *method = "POST", *uri = v1_uri(q.kind);
		char *body = NULL;
		size_t whole, got;

		if (cases[k].ep == STREAM) {
			method = "GET";
			uri = "/stream?prompt=gone&max_tokens=5";
		} else if (cases[k].ep == V1_STOP) {
			struct v1_result full;

			v1_run(&q, &full, &rec);
			pick_stop(&full, 0, stop);
			q.stop[0] = stop;
			q.nstop = 1;
			v1_result_free(&full);
		}
		if (cases[k].ep != STREAM)
			body = v1_body(&q);
		/* the whole answer, as it ends */
		whole = run_until_gone(method, uri, body, SIZE_MAX, &rec,
		    status, reason);
		assert_string_equal(status, "done");
		assert_string_equal(reason, cases[k].ep == V1_STOP ? "stop" :
		    "length");
		/* the same, but the client is gone before its last 3 bytes */
		got = run_until_gone(method, uri, body, whole - 3, &rec,
		    status, reason);
		assert_int_equal(got, whole - 3);
		assert_int_equal(rec.status, STATE_CANCELLED);
		assert_string_equal(status, "cancelled");
		assert_string_equal(reason, "abort");
		free(body);
	}
}

/* A /v1 request the parser refuses: a 400 (404 for another model) in
 * the OpenAI shape, naming the field at fault in "param". */
static void
test_v1_bad_requests(void **unused)
{
	static const struct {
		const char *uri;
		const char *body;
		int status;
		const char *code;
		const char *param;       /* NULL: null */
	} cases[] = {
		{ "/v1/completions", "{\"prompt\":\"x\"}", 400,
		    "missing_required_parameter", "model" },
		{ "/v1/completions", "{\"model\":\"gpt-4\",\"prompt\":\"x\"}",
		    404, "model_not_found", NULL },     /* as OpenAI's */
		{ "/v1/completions", "{\"model\":", 400, "invalid_json",
		    NULL },
		{ "/v1/chat/completions", "{\"model\":\"tokstream-sim\","
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		    "\"stream_options\":{\"include_usage\":true}}", 400,
		    "invalid_value", "stream_options" },
		{ "/v1/chat/completions", "{\"model\":\"tokstream-sim\","
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		    "\"n\":17}", 400, "integer_above_max_value", "n" },
		{ "/v1/chat/completions", "{\"model\":\"tokstream-sim\","
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		    "\"stop\":[\"\"]}", 400, "invalid_value", "stop[0]" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		json_t *o, *param;

		server_up(&fs);
		fake_open(&fc, &fs, "POST", cases[k].uri, cases[k].body);
		exchange(&fs, &fc, &r);
		assert_error(&r, cases[k].status, "invalid_request_error",
		    cases[k].code, 1);
		o = body_json(&r);
		param = json_object_get(json_object_get(o, "error"), "param");
		if (cases[k].param != NULL && !json_is_string(param))
			fail_msg("%s %s: param is not \"%s\"", cases[k].uri,
			    cases[k].body, cases[k].param);
		if (cases[k].param != NULL)
			assert_string_equal(json_string_value(param),
			    cases[k].param);
		else
			assert_true(json_is_null(param));
		json_decref(o);
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* A whole answer that took longer than a keep-alive interval committed
 * its 200 (with X-Request-Id) and newlines; an error after that is the
 * body of the 200, in the endpoint's shape. */
static void
test_error_after_commit(void **unused)
{
	static const struct {
		const char *uri;
		int openai;
		size_t newlines;         /* keep-alives before the error */
	} cases[] = {
		/* prefill 100 ms, the error after 60 tokens: 1300 ms */
		{ "/generate", 0, 1 },
		{ "/v1/completions", 1, 1 },
		{ "/v1/chat/completions", 1, 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct state_record rec;
		json_t *o;
		char *body;

		if (cases[k].openai) {
			o = json_pack("{s:s,s:i,s:b,s:i,s:i}", "model",
			    "tokstream-sim", "max_tokens", 80, "ignore_eos", 1,
			    "error_after", 60, "prefill_ms", 100);
			if (strstr(cases[k].uri, "chat") != NULL)
				json_object_set_new(o, "messages", json_pack(
				    "[{s:s,s:s}]", "role", "user", "content",
				    "x"));
			else
				json_object_set_new(o, "prompt",
				    json_string("x"));
		} else {
			o = json_pack("{s:s,s:i,s:i,s:i}", "prompt", "x",
			    "max_tokens", 80, "error_after", 60, "prefill_ms",
			    100);
		}
		body = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		server_up(&fs);
		fake_open(&fc, &fs, "POST", cases[k].uri, body);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_true(request_id(&r) > 0);
		assert_int_equal(strspn(r.body, "\n"), cases[k].newlines);
		o = body_json(&r);
		assert_string_equal(jstr(o, "error.code"), "injected_error");
		assert_int_equal(json_object_get(json_object_get(o, "error"),
		    "param") != NULL, cases[k].openai);
		assert_null(json_object_get(o, "text"));
		assert_null(json_object_get(o, "choices"));
		json_decref(o);
		assert_int_equal(state_lookup(fs.srv.state, request_id(&r),
		    &rec), TS_OK);
		assert_int_equal(rec.status, STATE_ERROR);
		assert_int_equal(rec.generated, 60);
		fake_close(&fc);
		server_down(&fs);
		free(body);
	}
}

/* GET /v1/models lists the one served model. */
static void
test_v1_models(void **unused)
{
	static const struct {
		const char *served;      /* --served-model-name, or NULL */
		const char *id;
	} cases[] = {
		{ NULL, "tokstream-sim" },
		{ "my-model", "my-model" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		json_t *o, *data, *m;

		server_defaults(&fs);
		fs.opt.n_served_models = cases[k].served != NULL;
		fs.opt.served_models[0] = cases[k].served;
		server_start(&fs);
		fake_open(&fc, &fs, "GET", "/v1/models", NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_header(&r, "Content-Type", "application/json");
		o = body_json(&r);
		assert_string_equal(jstr(o, "object"), "list");
		data = json_object_get(o, "data");
		assert_int_equal(json_array_size(data), 1);
		m = json_array_get(data, 0);
		assert_string_equal(jstr(m, "id"), cases[k].id);
		assert_string_equal(jstr(m, "object"), "model");
		assert_string_equal(jstr(m, "tokstream.backend"), "sim");
		assert_int_equal(json_integer_value(json_object_get(m,
		    "created")), 1700000000);
		json_decref(o);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* ---- routing ------------------------------------------------------------ */

/* An unknown path is 404, a known path with another method 405 with
 * Allow (GET takes HEAD, and every path OPTIONS); /v1 errors in the
 * OpenAI shape (with "param"). */
static void
test_unknown_path_and_method(void **unused)
{
#define G "GET, HEAD, OPTIONS"
#define P "POST, OPTIONS"
	static const struct {
		const char *method, *uri;
		int status;
		const char *code;
		const char *allow;       /* NULL: no Allow header */
		int openai;
	} cases[] = {
		{ "GET", "/nope", 404, "unknown_path", NULL, 0 },
		{ "GET", "/streams?prompt=x", 404, "unknown_path", NULL, 0 },
		{ "GET", "/v1/nope", 404, "unknown_url", NULL, 1 },
		{ "POST", "/stream?prompt=x", 405, "method_not_allowed",
		    G, 0 },
		{ "GET", "/generate", 405, "method_not_allowed", P, 0 },
		{ "PUT", "/generate", 405, "method_not_allowed", P, 0 },
		{ "HEAD", "/generate", 405, "method_not_allowed", P, 0 },
		{ "GET", "/v1/chat/completions", 405, "method_not_allowed",
		    P, 1 },
		{ "GET", "/v1/completions", 405, "method_not_allowed", P, 1 },
		{ "GET", "/v1/responses", 405, "method_not_allowed", P, 1 },
		{ "DELETE", "/v1/models", 405, "method_not_allowed", G, 1 },
		{ "POST", "/v1/models/tokstream-sim", 405,
		    "method_not_allowed", G, 1 },
		{ "POST", "/_debug/generated", 405, "method_not_allowed",
		    G, 0 },
		{ "POST", "/health", 405, "method_not_allowed", G, 0 },
		{ "CONNECT", "/health", 405, "method_not_allowed", G, 0 },
		{ "POST", "/metrics", 405, "method_not_allowed", G, 0 },
		/* the demo page: lighttpd serves its GET and HEAD */
		{ "POST", "/", 405, "method_not_allowed", G, 0 },
		{ "DELETE", "/index.html", 405, "method_not_allowed", G, 0 },
		{ "OPTIONS", "/nope", 404, "unknown_path", NULL, 0 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char v[64];

		server_up(&fs);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		assert_error(&r, cases[k].status, cases[k].status == 404 &&
		    !cases[k].openai ? "not_found_error" :
		    "invalid_request_error", cases[k].code, cases[k].openai);
		if (cases[k].allow != NULL)
			assert_header(&r, "Allow", cases[k].allow);
		else
			assert_false(header(&r, "Allow", v, sizeof(v)));
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
#undef G
#undef P
}

/* A CORS preflight of a public endpoint is a 204 with the methods and
 * the headers asked for (a plain list) or tokstream's own; while the
 * server stops every request is a 503. */
static void
test_preflight_and_stopping(void **unused)
{
	static const struct {
		const char *method, *uri;
		const char *asked;       /* Access-Control-Request-Headers */
		int stopping;
		int status;
		const char *allow_headers;
		const char *methods;     /* Allow and ...-Allow-Methods */
	} cases[] = {
		{ "OPTIONS", "/stream", "last-event-id", 0, 204,
		    "last-event-id", "GET, HEAD, OPTIONS" },
		{ "OPTIONS", "/v1/chat/completions",
		    "authorization, x-stainless-os", 0, 204,
		    "authorization, x-stainless-os", "POST, OPTIONS" },
		{ "OPTIONS", "/generate", "bad\"header", 0, 204,
		    "Content-Type, Last-Event-ID, Authorization",
		    "POST, OPTIONS" },
		{ "OPTIONS", "/v1/responses", "content-type", 0, 204,
		    "content-type", "POST, OPTIONS" },
		{ "OPTIONS", "/v1/models/tokstream-sim", "authorization", 0,
		    204, "authorization", "GET, HEAD, OPTIONS" },
		/* a preflight while stopping is still answered */
		{ "OPTIONS", "/stream", "last-event-id", 1, 204,
		    "last-event-id", "GET, HEAD, OPTIONS" },
		{ "GET", "/stream?prompt=x", NULL, 1, 503, NULL, NULL },
		{ "GET", "/v1/models", NULL, 1, 503, NULL, NULL },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;

		server_up(&fs);
		atomic_store(&fs.srv.stopping, cases[k].stopping);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri, NULL);
		if (cases[k].asked != NULL) {
			fake_set(&fc, "HTTP_ACCESS_CONTROL_REQUEST_HEADERS",
			    cases[k].asked);
			fake_set(&fc, "HTTP_ACCESS_CONTROL_REQUEST_METHOD",
			    "POST");
		}
		exchange(&fs, &fc, &r);
		if (cases[k].status == 204) {
			assert_int_equal(r.status, 204);
			assert_int_equal(r.body_len, 0);
			assert_header(&r, "Access-Control-Allow-Origin", "*");
			assert_header(&r, "Access-Control-Allow-Methods",
			    cases[k].methods);
			assert_header(&r, "Allow", cases[k].methods);
			assert_header(&r, "Access-Control-Allow-Headers",
			    cases[k].allow_headers);
		} else {
			/* /v1 in the OpenAI shape */
			assert_error(&r, 503, "server_error", "shutdown",
			    strncmp(cases[k].uri, "/v1/", 4) == 0);
			assert_header(&r, "Retry-After", "1");
		}
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* The metrics the hooks and the relay count for streams: tokens, TTFT
 * once per stream, ITL between tokens, E2E, finish reasons. */
static void
test_metrics_after_streams(void **unused)
{
	static const struct {
		const char *line;        /* a whole line of /metrics */
	} want[] = {
		{ "tokstream:generation_tokens_total 9" },
		{ "tokstream:time_to_first_token_seconds_count 2" },
		{ "tokstream:inter_token_latency_seconds_count 7" },
		{ "tokstream:e2e_request_latency_seconds_count 2" },
		{ "tokstream:request_success_total{finished_reason="
		    "\"length\"} 2" },
		{ "tokstream:num_requests_running 0" },
	};
	struct fake_server fs;
	struct fake_conn a, b, m;
	struct response r;
	char *text;
	size_t k;

	(void)unused;
	server_up(&fs);
	fake_open(&a, &fs, "GET", "/stream?prompt=m&max_tokens=5", NULL);
	exchange(&fs, &a, &r);
	assert_int_equal(r.status, 200);
	fake_open(&b, &fs, "GET", "/stream?prompt=n&max_tokens=4", NULL);
	exchange(&fs, &b, &r);
	assert_int_equal(r.status, 200);
	fake_open(&m, &fs, "GET", "/metrics", NULL);
	exchange(&fs, &m, &r);
	assert_int_equal(r.status, 200);
	text = calloc(1, r.body_len + 2);
	assert_non_null(text);
	text[0] = '\n';
	memcpy(text + 1, r.body, r.body_len);
	for (k = 0; k < NELEM(want); k++) {
		char line[256];

		snprintf(line, sizeof(line), "\n%s\n", want[k].line);
		if (strstr(text, line) == NULL)
			fail_msg("no line '%s' in /metrics", want[k].line);
	}
	free(text);
	fake_close(&m);
	fake_close(&b);
	fake_close(&a);
	server_down(&fs);
}

/* --cors-origin: the public endpoints' answers carry it (errors too);
 * the operator's never do; "" turns CORS off, and then a preflight is
 * just a method /stream does not allow. */
static void
test_cors_origin(void **unused)
{
	static const struct {
		const char *cors;
		const char *method, *uri;
		int status;
		const char *origin;      /* NULL: no CORS headers */
	} cases[] = {
		{ "https://a.example", "GET", "/stream?prompt=c&max_tokens=1",
		    200, "https://a.example" },
		{ "https://a.example", "GET", "/stream", 400,
		    "https://a.example" },
		{ "https://a.example", "GET", "/v1/models", 200,
		    "https://a.example" },
		{ "https://a.example", "GET", "/health", 200,
		    "https://a.example" },
		{ "https://a.example", "GET", "/_debug/generated", 404, NULL },
		{ "https://a.example", "GET", "/metrics", 200, NULL },
		/* errors too: a page sees the JSON, not "Failed to fetch" */
		{ "https://a.example", "GET", "/v1/nope", 404,
		    "https://a.example" },
		{ "https://a.example", "GET", "/nope", 404,
		    "https://a.example" },
		{ "https://a.example", "GET", "/generate", 405,
		    "https://a.example" },
		{ "https://a.example", "GET", "/v1/models/nope", 404,
		    "https://a.example" },
		{ "https://a.example", "POST", "/metrics", 405, NULL },
		{ "", "GET", "/stream?prompt=c&max_tokens=1", 200, NULL },
		{ "", "OPTIONS", "/stream", 204, NULL },
		{ "", "GET", "/v1/nope", 404, NULL },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char v[256];

		server_defaults(&fs);
		fs.opt.cors_origin = cases[k].cors;
		server_start(&fs);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, cases[k].status);
		if (cases[k].origin != NULL) {
			assert_header(&r, "Access-Control-Allow-Origin",
			    cases[k].origin);
			assert_header(&r, "Access-Control-Expose-Headers",
			    "X-Request-Id");
		} else {
			assert_false(header(&r, "Access-Control-Allow-Origin",
			    v, sizeof(v)));
		}
		fake_close(&fc);
		server_down(&fs);
	}
}

/* A full engine (1 slot, no queue, the slot taken by a sequence
 * submitted directly) answers 429 queue_full with Retry-After. */
static void
test_queue_full_429(void **unused)
{
	static const struct {
		const char *method, *uri;
		int openai;
	} cases[] = {
		{ "POST", "/generate", 0 },
		{ "GET", "/stream?prompt=x", 0 },
		{ "POST", "/v1/completions", 1 },
		{ "POST", "/v1/chat/completions", 1 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct engine_request job;
		struct engine_seq *busy;
		struct v1_req q = { OPENAI_COMPLETIONS, "x", 4, 0, 0, { NULL },
		    0, -1 };
		char *body = NULL;

		server_defaults(&fs);
		fs.opt.engine.max_num_seqs = 1;
		fs.opt.engine.max_waiting = 0;
		server_start(&fs);
		memset(&job, 0, sizeof(job));
		job.prompt = "busy";
		job.prompt_len = 4;
		job.model = fs.be.lab_model;
		engine_sampling_greedy(&job.sampling);
		job.max_tokens = 5;
		job.prefill_ms = 40;
		job.tpot_ms = -1;
		job.error_after = -1;
		job.t0_ns = clock_ns;
		assert_int_equal(engine_submit(fs.srv.engine, &job, &busy),
		    TS_OK);
		if (strcmp(cases[k].uri, "/generate") == 0) {
			body = generate_body("x", 4, -1);
		} else if (cases[k].openai) {
			q.kind = strcmp(cases[k].uri, "/v1/completions") == 0 ?
			    OPENAI_COMPLETIONS : OPENAI_CHAT;
			body = v1_body(&q);
		}
		fake_open(&fc, &fs, cases[k].method, cases[k].uri, body);
		exchange(&fs, &fc, &r);
		assert_error(&r, 429, "rate_limit_error", "queue_full",
		    cases[k].openai);
		assert_header(&r, "Retry-After", "1");
		/* only the direct sequence has a record */
		assert_int_equal(state_total_streams(fs.srv.state), 1);
		engine_cancel(fs.srv.engine, busy, clock_ns,
		    ENGINE_CAUSE_CLIENT_GONE);
		engine_release(fs.srv.engine, busy);
		fake_close(&fc);
		server_down(&fs);
		free(body);
	}
}

/* Keep-alives (": keep-alive") during a long prefill, before the first
 * token: one per keepalive_ms of silence; none when off or when the
 * prefill is shorter. POST /generate commits to 200 and sends newlines,
 * which a JSON parser skips. */
static void
test_keepalive_during_prefill(void **unused)
{
	enum ep { STREAM, CHAT, GENERATE };
	static const struct {
		enum ep ep;
		int prefill_ms;
		double keepalive_ms;
		size_t keepalives;
	} cases[] = {
		{ STREAM, 3000, 1000, 2 },
		{ STREAM, 3500, 1000, 3 },
		{ STREAM, 3000, 0, 0 },
		{ STREAM, 500, 1000, 0 },
		{ CHAT, 3000, 1000, 2 },
		{ GENERATE, 2500, 1000, 2 },
		/* the first token (at 3000) writes nothing to a JSON answer:
		 * the silence has lasted 1000 ms then, so a third newline */
		{ GENERATE, 3000, 1000, 3 },
		{ GENERATE, 500, 1000, 0 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		struct ts_buf want;
		char uri[256], extra[64], *body = NULL;
		struct v1_req q = { OPENAI_CHAT, "wait", 3, 1, 0, { NULL }, 0,
		    -1 };

		ts_buf_init(&want, 1u << 20);
		server_defaults(&fs);
		fs.opt.keepalive_ms = cases[k].keepalive_ms;
		server_start(&fs);
		if (cases[k].ep == STREAM) {
			snprintf(extra, sizeof(extra), "&prefill_ms=%d",
			    cases[k].prefill_ms);
			stream_uri(uri, sizeof(uri), "wait", 3, extra);
			fake_open(&fc, &fs, "GET", uri, NULL);
		} else if (cases[k].ep == CHAT) {
			q.prefill_ms = cases[k].prefill_ms;
			body = v1_body(&q);
			fake_open(&fc, &fs, "POST", v1_uri(q.kind), body);
		} else {
			body = generate_body("wait", 3, cases[k].prefill_ms);
			fake_open(&fc, &fs, "POST", "/generate", body);
		}
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_true(request_id(&r) > 0);
		if (cases[k].ep == GENERATE) {
			size_t nl = strspn(r.body, "\n");
			json_t *o;

			assert_int_equal(nl, cases[k].keepalives);
			o = body_json(&r);
			lab_text("wait", 3, &want);
			assert_string_equal(jstr(o, "text"), want.p);
			json_decref(o);
		} else {
			struct sse *s = sse_parse(r.body, r.body_len);
			size_t i, first = s->n;

			for (i = 0; i < s->n && first == s->n; i++)
				if (s->ev[i].kind == EV_DATA)
					first = i;
			assert_true(first < s->n);
			assert_int_equal(count_keepalives(s),
			    cases[k].keepalives);
			/* all of them before the first token */
			for (i = first; i < s->n; i++)
				assert_int_not_equal(s->ev[i].kind,
				    EV_COMMENT);
			sse_free(s);
		}
		fake_close(&fc);
		server_down(&fs);
		free(body);
		ts_buf_free(&want);
	}
}

/* The X-Request-Id of the head names the request's record in the state
 * file, of the right kind, with what it asked for and generated. */
static void
test_request_id_matches_record(void **unused)
{
	enum ep { STREAM, GENERATE, V1 };
	static const struct {
		enum ep ep;
		struct v1_req q;
		enum state_kind kind;
	} cases[] = {
		{ STREAM, { 0, "id", 4, 1, 0, { NULL }, 0, -1 },
		    STATE_KIND_STREAM },
		{ GENERATE, { 0, "id", 4, 0, 0, { NULL }, 0, -1 },
		    STATE_KIND_GENERATE },
		{ V1, { OPENAI_COMPLETIONS, "id", 4, 1, 0, { NULL }, 0, -1 },
		    STATE_KIND_STREAM },
		{ V1, { OPENAI_COMPLETIONS, "id", 4, 0, 0, { NULL }, 0, -1 },
		    STATE_KIND_GENERATE },
		{ V1, { OPENAI_CHAT, "id", 4, 0, 0, { NULL }, 0, -1 },
		    STATE_KIND_GENERATE },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc[3];
		struct response r;
		struct state_record rec;
		char uri[256], *body = NULL;
		uint64_t id;
		size_t j;

		server_up(&fs);
		/* two requests before, so the id is not simply 1 */
		for (j = 0; j < 3; j++) {
			const struct v1_req *q = &cases[k].q;

			free(body);
			body = NULL;
			if (cases[k].ep == STREAM) {
				stream_uri(uri, sizeof(uri), q->prompt,
				    q->max_tokens, NULL);
				fake_open(&fc[j], &fs, "GET", uri, NULL);
			} else if (cases[k].ep == GENERATE) {
				body = generate_body(q->prompt, q->max_tokens,
				    -1);
				fake_open(&fc[j], &fs, "POST", "/generate",
				    body);
			} else {
				body = v1_body(q);
				fake_open(&fc[j], &fs, "POST", v1_uri(q->kind),
				    body);
			}
			exchange(&fs, &fc[j], &r);
			assert_int_equal(r.status, 200);
		}
		id = request_id(&r);
		assert_int_equal(id, 3);
		assert_int_equal(state_lookup(fs.srv.state, 0, &rec), TS_OK);
		assert_int_equal(rec.id, id);
		assert_int_equal(rec.kind, cases[k].kind);
		assert_int_equal(rec.requested, cases[k].q.max_tokens);
		assert_int_equal(rec.generated, cases[k].q.max_tokens);
		assert_int_equal(rec.status, STATE_DONE);
		assert_true(rec.prompt_tokens > 0);
		for (j = 0; j < 3; j++)
			fake_close(&fc[j]);
		server_down(&fs);
		free(body);
	}
}

/* /_debug/generated answers only local requests that no proxy
 * forwarded, for a loopback Host (no DNS rebinding). */
static void
test_debug_generated_local_only(void **unused)
{
	static const struct {
		const char *addr;
		const char *hdr;         /* a forwarding header, or NULL */
		int status;
		const char *host;        /* Host; NULL: fake_open's localhost */
	} cases[] = {
		{ "127.0.0.1", NULL, 200, NULL },
		{ "::1", NULL, 200, NULL },
		{ "10.1.2.3", NULL, 403, NULL },
		{ "127.0.0.1", "HTTP_X_FORWARDED_FOR", 403, NULL },
		{ "127.0.0.1", "HTTP_FORWARDED", 403, NULL },
		{ "127.0.0.1", "HTTP_X_REAL_IP", 403, NULL },
		/* DNS rebinding: loopback, but the page's own name */
		{ "127.0.0.1", NULL, 403, "rebind.attacker.example" },
		{ "127.0.0.1", NULL, 403, "rebind.attacker.example:8170" },
		{ "127.0.0.1", NULL, 403, "127.0.0.1.attacker.example" },
		{ "127.0.0.1", NULL, 403, "localhost.attacker.example" },
		{ "127.0.0.1", NULL, 403, "[::2]:8170" },
		{ "127.0.0.1", NULL, 200, "localhost:8170" },
		{ "127.0.0.1", NULL, 200, "LOCALHOST." },
		{ "127.0.0.1", NULL, 200, "ui.localhost:3000" },
		{ "127.0.0.1", NULL, 200, "127.0.0.1:8170" },
		{ "127.0.0.1", NULL, 200, "127.9.8.7" },
		{ "::1", NULL, 200, "[::1]:8170" },
		{ "127.0.0.1", NULL, 200, "" },   /* HTTP/1.0: no Host */
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc, dc;
		struct response r;

		server_up(&fs);
		fake_open(&fc, &fs, "GET", "/stream?prompt=d&max_tokens=2",
		    NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		fake_open(&dc, &fs, "GET", "/_debug/generated?id=1", NULL);
		fake_set(&dc, "REMOTE_ADDR", cases[k].addr);
		if (cases[k].hdr != NULL)
			fake_set(&dc, cases[k].hdr, "127.0.0.1");
		if (cases[k].host != NULL)
			fake_set(&dc, "HTTP_HOST", cases[k].host);
		exchange(&fs, &dc, &r);
		if (cases[k].status == 200) {
			json_t *o = body_json(&r);

			assert_int_equal(r.status, 200);
			assert_string_equal(jstr(o, "id"), "1");
			assert_string_equal(jstr(o, "status"), "done");
			assert_string_equal(jstr(o, "finish_reason"),
			    "length");
			json_decref(o);
		} else {
			assert_error(&r, 403, "permission_error",
			    "loopback_only", 0);
		}
		fake_close(&dc);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* A request that waits for the only slot gets keep-alives while it
 * waits, starts when the slot frees, and its record has the time it
 * waited (queue_ms). */
static void
test_queued_request(void **unused)
{
	static const struct {
		double busy_ms;          /* the slot holder's prefill */
		size_t keepalives;
	} cases[] = {
		{ 2500, 2 },
		{ 500, 0 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc, dc;
		struct response r;
		struct engine_request job;
		struct engine_seq *busy;
		struct state_record rec;
		struct sse *s;
		json_t *o;
		uint64_t id;
		char dbg[64];
		size_t i, tokens = 0;

		server_defaults(&fs);
		fs.opt.engine.max_num_seqs = 1;
		fs.opt.engine.max_waiting = 4;
		server_start(&fs);
		memset(&job, 0, sizeof(job));
		job.prompt = "busy";
		job.prompt_len = 4;
		job.model = fs.be.lab_model;
		engine_sampling_greedy(&job.sampling);
		job.max_tokens = 1;
		job.prefill_ms = cases[k].busy_ms;
		job.tpot_ms = -1;
		job.error_after = -1;
		job.t0_ns = clock_ns;
		assert_int_equal(engine_submit(fs.srv.engine, &job, &busy),
		    TS_OK);
		engine_advance(fs.srv.engine, clock_ns);  /* takes the slot */
		fake_open(&fc, &fs, "GET",
		    "/stream?prompt=q&max_tokens=2&prefill_ms=100", NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		id = request_id(&r);
		s = sse_parse(r.body, r.body_len);
		assert_int_equal(count_keepalives(s), cases[k].keepalives);
		for (i = 0; i < s->n; i++)
			tokens += s->ev[i].has_id;
		assert_int_equal(tokens, 3);         /* 2 tokens and the end */
		sse_free(s);
		assert_int_equal(state_lookup(fs.srv.state, id, &rec), TS_OK);
		assert_int_equal(rec.queue_us,
		    (uint64_t)(cases[k].busy_ms * 1000));
		snprintf(dbg, sizeof(dbg), "/_debug/generated?id=%llu",
		    (unsigned long long)id);
		fake_open(&dc, &fs, "GET", dbg, NULL);
		exchange(&fs, &dc, &r);
		o = body_json(&r);
		assert_true(json_real_value(json_object_get(o, "queue_ms")) ==
		    cases[k].busy_ms);
		json_decref(o);
		engine_release(fs.srv.engine, busy);
		fake_close(&dc);
		fake_close(&fc);
		server_down(&fs);
	}
}

/* GET /_debug/generated: the newest record without an id, the named one
 * with one; a malformed query is a 400, an unknown id a 404. */
static void
test_debug_generated_queries(void **unused)
{
	static const struct {
		const char *qs;
		int status;
		const char *code;        /* an error's */
		const char *id;          /* a 200's */
	} cases[] = {
		{ "", 200, NULL, "2" },
		{ "id=1", 200, NULL, "1" },
		{ "id=2", 200, NULL, "2" },
		{ "id=3", 404, "unknown_stream", NULL },
		{ "id=0", 400, "invalid_id", NULL },
		{ "id=abc", 400, "invalid_id", NULL },
		{ "id=1x", 400, "invalid_id", NULL },
		{ "id=-1", 400, "invalid_id", NULL },
		{ "stream=1", 400, "invalid_query", NULL },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn a, b, dc;
		struct response r;
		char uri[128];

		server_up(&fs);
		fake_open(&a, &fs, "GET", "/stream?prompt=a&max_tokens=3",
		    NULL);
		exchange(&fs, &a, &r);
		fake_open(&b, &fs, "POST", "/generate",
		    "{\"prompt\":\"b\",\"max_tokens\":2}");
		exchange(&fs, &b, &r);
		snprintf(uri, sizeof(uri), "/_debug/generated%s%s",
		    *cases[k].qs != '\0' ? "?" : "", cases[k].qs);
		fake_open(&dc, &fs, "GET", uri, NULL);
		exchange(&fs, &dc, &r);
		if (cases[k].status == 200) {
			json_t *o = body_json(&r);
			int first = strcmp(cases[k].id, "1") == 0;

			assert_int_equal(r.status, 200);
			assert_string_equal(jstr(o, "id"), cases[k].id);
			assert_string_equal(jstr(o, "kind"), first ? "stream" :
			    "generate");
			assert_int_equal(json_integer_value(json_object_get(o,
			    "generated")), first ? 3 : 2);
			assert_int_equal(json_integer_value(json_object_get(o,
			    "total_generated")), 5);
			assert_int_equal(json_integer_value(json_object_get(o,
			    "total_streams")), 2);
			json_decref(o);
		} else {
			assert_error(&r, cases[k].status, cases[k].status ==
			    404 ? "not_found_error" : "invalid_request_error",
			    cases[k].code, 0);
		}
		fake_close(&dc);
		fake_close(&b);
		fake_close(&a);
		server_down(&fs);
	}
}

/* --api-key: every /v1 request needs "Authorization: Bearer KEY" (401
 * invalid_api_key in OpenAI's shape, with WWW-Authenticate, otherwise);
 * the lab endpoints, /health and a preflight need none. */
static void
test_api_key(void **unused)
{
	static const struct {
		const char *method, *uri;
		const char *auth;        /* Authorization, or NULL */
		int status;
	} cases[] = {
		{ "GET", "/v1/models", NULL, 401 },
		{ "GET", "/v1/models", "Bearer sk-right", 200 },
		{ "GET", "/v1/models", "bearer   sk-right", 200 },
		{ "GET", "/v1/models", "Bearer sk-wrong", 401 },
		{ "GET", "/v1/models", "Bearer sk-righ", 401 },
		{ "GET", "/v1/models", "Bearer sk-rightt", 401 },
		{ "GET", "/v1/models", "Basic c2stcmlnaHQ=", 401 },
		{ "GET", "/v1/models", "sk-right", 401 },
		{ "GET", "/v1/models", "Bearer ", 401 },
		{ "GET", "/v1/models/tokstream-sim", NULL, 401 },
		{ "GET", "/v1/nope", NULL, 401 },
		{ "POST", "/v1/chat/completions", NULL, 401 },
		{ "OPTIONS", "/v1/chat/completions", NULL, 204 },
		{ "GET", "/health", NULL, 200 },
		{ "GET", "/stream?prompt=k&max_tokens=1", NULL, 200 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;

		server_defaults(&fs);
		fs.opt.api_key = "sk-right";
		server_start(&fs);
		fake_open(&fc, &fs, cases[k].method, cases[k].uri, NULL);
		if (cases[k].auth != NULL)
			fake_set(&fc, "HTTP_AUTHORIZATION", cases[k].auth);
		exchange(&fs, &fc, &r);
		if (cases[k].status == 401) {
			assert_error(&r, 401, "invalid_request_error",
			    "invalid_api_key", 1);
			assert_header(&r, "WWW-Authenticate", "Bearer");
			assert_header(&r, "Access-Control-Allow-Origin", "*");
		} else {
			assert_int_equal(r.status, cases[k].status);
		}
		assert_int_equal(state_total_streams(fs.srv.state),
		    cases[k].status == 200 &&
		    strncmp(cases[k].uri, "/stream", 7) == 0);
		fake_close(&fc);
		server_down(&fs);
	}
	/* the comparison itself */
	assert_true(auth_bearer_ok("Bearer k", "k"));
	assert_false(auth_bearer_ok(NULL, "k"));
	assert_false(auth_bearer_ok("", "k"));
	assert_false(auth_bearer_ok("Bearerk", "k"));
	assert_false(auth_bearer_ok("Bearer k ", "k"));
	assert_int_equal(auth_key_valid("sk-1", 4), 0);
	assert_int_equal(auth_key_valid("", 0), -1);
	assert_int_equal(auth_key_valid("a b", 3), -1);
	assert_int_equal(auth_key_valid("a\x01", 2), -1);
}

/* HEAD is GET without the body (RFC 9110 section 9.3.2): the same
 * status and headers; HEAD /stream starts no generation. */
static void
test_head_requests(void **unused)
{
	static const struct {
		const char *uri;
		int status;
		const char *ctype;
	} cases[] = {
		{ "/health", 200, "application/json" },
		{ "/v1/models", 200, "application/json" },
		{ "/v1/models/tokstream-sim", 200, "application/json" },
		{ "/v1/models/nope", 404, "application/json" },
		{ "/metrics", 200, "text/plain; version=0.0.4; charset=utf-8" },
		{ "/stream?prompt=hi&max_tokens=5", 200,
		    "text/event-stream; charset=utf-8" },
		{ "/stream", 400, "application/json" },
		{ "/stream?prompt=hi&max_tokens=99999", 400,
		    "application/json" },
		{ "/_debug/generated?id=7", 404, "application/json" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		char v[8];

		server_up(&fs);
		fake_open(&fc, &fs, "HEAD", cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, cases[k].status);
		assert_header(&r, "Content-Type", cases[k].ctype);
		assert_int_equal(r.body_len, 0);
		if (strncmp(cases[k].uri, "/stream", 7) == 0)
			assert_false(header(&r, "X-Request-Id", v,
			    sizeof(v)));
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		{
			struct engine_stats st;

			engine_stats(fs.srv.engine, &st);
			assert_int_equal(st.generated, 0);
			assert_int_equal(st.held, 0);
		}
		fake_close(&fc);
		server_down(&fs);
	}
}

/* OPTIONS on every path tokstream serves: 204 with Allow, also with
 * CORS off; the demo page's path too (HAProxy's default check); with
 * CORS on, the public paths add the preflight's answer. */
static void
test_options_allow(void **unused)
{
	static const struct {
		const char *uri;
		const char *allow;
	} cases[] = {
		{ "/", "GET, HEAD, OPTIONS" },
		{ "/index.html", "GET, HEAD, OPTIONS" },
		{ "/stream", "GET, HEAD, OPTIONS" },
		{ "/health", "GET, HEAD, OPTIONS" },
		{ "/metrics", "GET, HEAD, OPTIONS" },
		{ "/_debug/generated", "GET, HEAD, OPTIONS" },
		{ "/v1/models", "GET, HEAD, OPTIONS" },
		{ "/v1/models/any", "GET, HEAD, OPTIONS" },
		{ "/generate", "POST, OPTIONS" },
		{ "/v1/completions", "POST, OPTIONS" },
		{ "/v1/chat/completions", "POST, OPTIONS" },
		{ "/v1/responses", "POST, OPTIONS" },
	};
	size_t k, off;

	(void)unused;
	for (off = 0; off < 2; off++) {
		for (k = 0; k < NELEM(cases); k++) {
			struct fake_server fs;
			struct fake_conn fc;
			struct response r;
			char v[64];

			server_defaults(&fs);
			if (off)
				fs.opt.cors_origin = "";
			server_start(&fs);
			fake_open(&fc, &fs, "OPTIONS", cases[k].uri, NULL);
			exchange(&fs, &fc, &r);
			assert_int_equal(r.status, 204);
			assert_int_equal(r.body_len, 0);
			assert_header(&r, "Allow", cases[k].allow);
			/* CORS on: the preflight's answer too (the
			 * debug paths never have CORS) */
			if (off || strncmp(cases[k].uri, "/_debug", 7) == 0 ||
			    strcmp(cases[k].uri, "/metrics") == 0)
				assert_false(header(&r,
				    "Access-Control-Allow-Methods", v,
				    sizeof(v)));
			else
				assert_header(&r,
				    "Access-Control-Allow-Methods",
				    cases[k].allow);
			fake_close(&fc);
			server_down(&fs);
		}
	}
}

/* GET /v1/models/{model}: each served name (percent-decoded, '+' kept)
 * gives the model object; any other 404 model_not_found. With several
 * --served-model-name, /v1/models lists all, a request may name any, and
 * every response carries the first (as vLLM). */
static void
test_v1_model_names(void **unused)
{
	static const struct {
		const char *uri;
		int status;
		const char *id;
	} cases[] = {
		{ "/v1/models/first", 200, "first" },
		{ "/v1/models/org/second", 200, "org/second" },
		{ "/v1/models/org%2Fsecond", 200, "org/second" },
		{ "/v1/models/org%2fsecond", 200, "org/second" },
		{ "/v1/models/a+b", 200, "a+b" },
		{ "/v1/models/a%20b", 404, NULL },
		{ "/v1/models/First", 404, NULL },
		{ "/v1/models/first/", 404, NULL },
		{ "/v1/models/%zz", 404, NULL },
		{ "/v1/models/first%", 404, NULL },
		{ "/v1/models/tokstream-sim", 404, NULL },
	};
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	json_t *o, *data;
	size_t k;

	(void)unused;
	server_defaults(&fs);
	fs.opt.served_models[0] = "first";
	fs.opt.served_models[1] = "org/second";
	fs.opt.served_models[2] = "a+b";
	fs.opt.n_served_models = 3;
	server_start(&fs);
	fake_open(&fc, &fs, "GET", "/v1/models", NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	data = json_object_get(o, "data");
	assert_int_equal(json_array_size(data), 3);
	assert_string_equal(jstr(json_array_get(data, 0), "id"), "first");
	assert_string_equal(jstr(json_array_get(data, 1), "id"),
	    "org/second");
	assert_string_equal(jstr(json_array_get(data, 2), "id"), "a+b");
	json_decref(o);
	fake_close(&fc);
	for (k = 0; k < NELEM(cases); k++) {
		fake_open(&fc, &fs, "GET", cases[k].uri, NULL);
		exchange(&fs, &fc, &r);
		if (cases[k].status == 200) {
			assert_int_equal(r.status, 200);
			o = body_json(&r);
			assert_string_equal(jstr(o, "id"), cases[k].id);
			assert_string_equal(jstr(o, "object"), "model");
			assert_string_equal(jstr(o, "owned_by"), "tokstream");
			assert_true(json_is_integer(json_object_get(o,
			    "created")));
			json_decref(o);
		} else {
			assert_error(&r, 404, "invalid_request_error",
			    "model_not_found", 1);
		}
		fake_close(&fc);
	}
	/* a request naming the second name: served, answered as "first" */
	fake_open(&fc, &fs, "POST", "/v1/chat/completions",
	    "{\"model\":\"org/second\",\"max_tokens\":2,\"messages\":[{"
	    "\"role\":\"user\",\"content\":\"hi\"}]}");
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_string_equal(jstr(o, "model"), "first");
	json_decref(o);
	fake_close(&fc);
	fake_open(&fc, &fs, "POST", "/v1/chat/completions",
	    "{\"model\":\"tokstream-sim\",\"max_tokens\":2,\"messages\":[{"
	    "\"role\":\"user\",\"content\":\"hi\"}]}");
	exchange(&fs, &fc, &r);
	assert_error(&r, 404, "invalid_request_error", "model_not_found", 1);
	o = body_json(&r);
	assert_non_null(strstr(jstr(o, "error.message"),
	    "`first`, `org/second`, `a+b`"));
	json_decref(o);
	fake_close(&fc);
	server_down(&fs);
}

/* /v1/responses runs the chat template over instructions (a system
 * message) and input (a string: one user message; or message items with
 * input_text parts): the same prompt as the chat request with those
 * messages gives the same text. The response echoes instructions and
 * max_output_tokens (null when not given). */
static void
test_responses_as_chat(void **unused)
{
	static const char *const bodies[] = {
		"{\"model\":\"tokstream-sim\",\"instructions\":\"be brief\","
		"\"input\":\"hello there\",\"max_output_tokens\":9,"
		"\"ignore_eos\":true}",
		"{\"model\":\"tokstream-sim\",\"instructions\":\"be brief\","
		"\"input\":[{\"role\":\"user\",\"content\":[{\"type\":"
		"\"input_text\",\"text\":\"hello there\"}]}],"
		"\"max_output_tokens\":9,\"ignore_eos\":true}",
		"{\"model\":\"tokstream-sim\",\"input\":[{\"type\":\"message\","
		"\"role\":\"system\",\"content\":\"be brief\"},{\"role\":"
		"\"user\",\"content\":\"hello there\"}],"
		"\"max_output_tokens\":9,\"ignore_eos\":true}",
	};
	static const char chat[] = "{\"model\":\"tokstream-sim\","
	    "\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
	    "{\"role\":\"user\",\"content\":\"hello there\"}],"
	    "\"max_tokens\":9,\"ignore_eos\":true}";
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	json_t *o;
	char want[4096];
	size_t k;

	(void)unused;
	server_up(&fs);
	fake_open(&fc, &fs, "POST", "/v1/chat/completions", chat);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	snprintf(want, sizeof(want), "%s",
	    jstr(json_array_get(json_object_get(o, "choices"), 0),
	    "message.content"));
	json_decref(o);
	fake_close(&fc);
	for (k = 0; k < NELEM(bodies); k++) {
		json_t *part;

		fake_open(&fc, &fs, "POST", "/v1/responses", bodies[k]);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		o = body_json(&r);
		part = json_array_get(json_object_get(json_array_get(
		    json_object_get(o, "output"), 0), "content"), 0);
		assert_string_equal(jstr(part, "text"), want);
		assert_string_equal(jstr(o, "status"), "incomplete");
		assert_int_equal(json_integer_value(json_object_get(o,
		    "max_output_tokens")), 9);
		if (k < 2)
			assert_string_equal(jstr(o, "instructions"),
			    "be brief");
		else
			assert_true(json_is_null(json_object_get(o,
			    "instructions")));
		assert_int_equal(json_integer_value(json_object_get(
		    json_object_get(o, "usage"), "output_tokens")), 9);
		json_decref(o);
		fake_close(&fc);
	}
	/* not given: null; EOS ends it: status completed */
	fake_open(&fc, &fs, "POST", "/v1/responses",
	    "{\"model\":\"tokstream-sim\",\"input\":\"hi\"}");
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_true(json_is_null(json_object_get(o, "max_output_tokens")));
	if (json_integer_value(json_object_get(json_object_get(o, "usage"),
	    "output_tokens")) < 256)
		assert_string_equal(jstr(o, "status"), "completed");
	json_decref(o);
	fake_close(&fc);
	server_down(&fs);
}

/* /v1/responses refuses what it cannot do with OpenAI's error shape and
 * codes, naming the field. */
static void
test_responses_bad_requests(void **unused)
{
	static const struct {
		const char *body;
		const char *code;
		const char *param;
	} cases[] = {
		{ "{\"model\":\"tokstream-sim\"}", "missing_required_parameter",
		    "input" },
		{ "{\"model\":\"tokstream-sim\",\"input\":7}", "invalid_type",
		    "input" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[]}", "empty_array",
		    "input" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[{\"type\":"
		  "\"file_search_call\",\"id\":\"c\"}]}", "unsupported_value",
		  "input[0].type" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[{\"type\":"
		  "\"function_call_output\",\"output\":\"x\"}]}",
		  "missing_required_parameter", "input[0].call_id" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[{\"role\":\"user\","
		  "\"content\":[{\"type\":\"input_image\",\"image_url\":"
		  "\"x\"}]}]}", "invalid_value", "input[0].content[0].type" },
		{ "{\"model\":\"tokstream-sim\",\"input\":[{\"role\":\"tool\","
		  "\"content\":\"x\"}]}", "invalid_value", "input[0].role" },
		{ "{\"model\":\"tokstream-sim\",\"input\":\"x\","
		  "\"instructions\":5}", "invalid_type", "instructions" },
		{ "{\"model\":\"tokstream-sim\",\"input\":\"x\","
		  "\"max_output_tokens\":0}", "integer_below_min_value",
		  "max_output_tokens" },
		{ "{\"model\":\"tokstream-sim\",\"input\":\"x\","
		  "\"max_output_tokens\":8193}", "integer_above_max_value",
		  "max_output_tokens" },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct fake_server fs;
		struct fake_conn fc;
		struct response r;
		json_t *o;

		server_up(&fs);
		fake_open(&fc, &fs, "POST", "/v1/responses", cases[k].body);
		exchange(&fs, &fc, &r);
		assert_error(&r, 400, "invalid_request_error", cases[k].code,
		    1);
		o = body_json(&r);
		assert_string_equal(jstr(o, "error.param"), cases[k].param);
		json_decref(o);
		assert_int_equal(state_total_streams(fs.srv.state), 0);
		fake_close(&fc);
		server_down(&fs);
	}
}

/*
 * A named server (--instance b1; docs/OPERATIONS.md "Several hosts"):
 * its request, event and /v1 ids start with the name; /_debug/generated
 * answers only its own ids (421 for another instance's, 400 for a bare
 * number); /health and /metrics check ?instance=; a Last-Event-ID that
 * another instance sent resumes here and links to it as other_instance.
 */
static void
test_named_instance(void **unused)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct resume_id rid = { 9, 0, 2, 0 };
	char uri[512], idbuf[RESUME_ID_MAX + 1], hdr[64];
	struct sse *sp;
	json_t *o;

	(void)unused;
	server_defaults(&fs);
	assert_int_equal(resume_instance_parse("b1", 2, &fs.opt.instance),
	    TS_OK);
	fs.opt.instance_name = "b1";
	snprintf(fs.opt.id_prefix, sizeof(fs.opt.id_prefix), "b1-");
	server_start(&fs);
	stream_uri(uri, sizeof(uri), "named", 3, NULL);
	fake_open(&fc, &fs, "GET", uri, NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	assert_header(&r, "X-Request-Id", "b1-1");
	sp = sse_parse(r.body, r.body_len);
	assert_true(sp->n >= 2);
	assert_int_equal(strncmp(sp->ev[0].id, "b1-1-", 5), 0);
	sse_free(sp);
	fake_close(&fc);
	/* its own id, then another instance's, then a bare number */
	fake_open(&fc, &fs, "GET", "/_debug/generated?id=b1-1", NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_string_equal(jstr(o, "id"), "b1-1");
	json_decref(o);
	fake_close(&fc);
	fake_open(&fc, &fs, "GET", "/_debug/generated?id=b2-1", NULL);
	exchange(&fs, &fc, &r);
	assert_error(&r, 421, "invalid_request_error", "misdirected_request",
	    0);
	fake_close(&fc);
	fake_open(&fc, &fs, "GET", "/_debug/generated?id=1", NULL);
	exchange(&fs, &fc, &r);
	assert_error(&r, 400, "invalid_request_error", "invalid_id", 0);
	fake_close(&fc);
	fake_open(&fc, &fs, "GET", "/health?instance=b2", NULL);
	exchange(&fs, &fc, &r);
	assert_error(&r, 421, "invalid_request_error", "misdirected_request",
	    0);
	fake_close(&fc);
	fake_open(&fc, &fs, "GET", "/health?instance=b1", NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_string_equal(jstr(o, "instance"), "b1");
	json_decref(o);
	fake_close(&fc);
	/* b2's event for token 2 of the same request: resumed here */
	assert_int_equal(resume_instance_parse("b2", 2, &rid.instance),
	    TS_OK);
	rid.key = resume_key("named", 5, 3, -1);
	assert_true(resume_id_format(idbuf, sizeof(idbuf), &rid) > 0);
	stream_uri(uri, sizeof(uri), "named", 3, NULL);
	fake_open(&fc, &fs, "GET", uri, NULL);
	fake_set(&fc, "HTTP_LAST_EVENT_ID", idbuf);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 204);   /* token 2 was the last of 3 */
	fake_close(&fc);
	rid.index = 0;
	assert_true(resume_id_format(idbuf, sizeof(idbuf), &rid) > 0);
	fake_open(&fc, &fs, "GET", uri, NULL);
	fake_set(&fc, "HTTP_LAST_EVENT_ID", idbuf);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	assert_header(&r, "X-Request-Id", "b1-2");
	fake_close(&fc);
	snprintf(hdr, sizeof(hdr), "/_debug/generated?id=b1-2");
	fake_open(&fc, &fs, "GET", hdr, NULL);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	o = body_json(&r);
	assert_string_equal(jstr(o, "resumed_from"), "b2-9");
	assert_string_equal(jstr(o, "resumed_from_record"), "other_instance");
	json_decref(o);
	fake_close(&fc);
	server_down(&fs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_events),
		cmocka_unit_test(test_stream_text_matches_generate),
		cmocka_unit_test(test_stream_bad_query),
		cmocka_unit_test(test_stream_injected_error),
		cmocka_unit_test(test_stream_resume),
		cmocka_unit_test(test_stream_timing),
		cmocka_unit_test(test_generate_body_reads),
		cmocka_unit_test(test_body_limits),
		cmocka_unit_test(test_client_gone),
		cmocka_unit_test(test_client_gone_before_done),
		cmocka_unit_test(test_answer_client_gone),
		cmocka_unit_test(test_shutdown_mid_request),
		cmocka_unit_test(test_chat_stream_chunks),
		cmocka_unit_test(test_v1_answer_matches_stream),
		cmocka_unit_test(test_v1_stop_strings),
		cmocka_unit_test(test_v1_injected_error),
		cmocka_unit_test(test_v1_bad_requests),
		cmocka_unit_test(test_error_after_commit),
		cmocka_unit_test(test_v1_models),
		cmocka_unit_test(test_v1_model_names),
		cmocka_unit_test(test_responses_as_chat),
		cmocka_unit_test(test_responses_bad_requests),
		cmocka_unit_test(test_head_requests),
		cmocka_unit_test(test_api_key),
		cmocka_unit_test(test_options_allow),
		cmocka_unit_test(test_unknown_path_and_method),
		cmocka_unit_test(test_preflight_and_stopping),
		cmocka_unit_test(test_cors_origin),
		cmocka_unit_test(test_queue_full_429),
		cmocka_unit_test(test_metrics_after_streams),
		cmocka_unit_test(test_keepalive_during_prefill),
		cmocka_unit_test(test_request_id_matches_record),
		cmocka_unit_test(test_debug_generated_local_only),
		cmocka_unit_test(test_debug_generated_queries),
		cmocka_unit_test(test_named_instance),
		cmocka_unit_test(test_queued_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
