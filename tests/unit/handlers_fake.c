/*
 * handlers_fake.c - what the handler tests (test_handlers_*.c) share: a
 * struct server filled as server/main.c does, a fake connection
 * (transport/conn.h) and the parsing of its answer. See handlers_fake.h.
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

#include "stores/metrics.h"
#include "handlers/routes.h"
#include "stores/state.h"
#include "sim/sim.h"

#include "handlers_fake.h"

/* ---- the synthetic clock ------------------------------------------------ */

/* CLOCK_MONOTONIC of the tests, in ns: srv.now reads it, the fake wait
 * moves it. Starts at 1 s (a time of 0 means "never" in places). */
int64_t clock_ns;

static int64_t
fake_now(void)
{
	return clock_ns;
}

/* Runs the engine until it has nothing left to do (its sequences left
 * and were reported to the hooks). */
void
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

/* The options tokstream-fcgi has without arguments (server/options.c),
 * with a TPOT of 20 ms. Tests change them before server_start. */
void
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
void
server_start(struct fake_server *fs)
{
	sim_backend(&fs->be);
	server_start_backend(fs);
}

void
server_start_backend(struct fake_server *fs)
{
	struct server *srv = &fs->srv;

	assert_int_equal(state_open_memory(&srv->state, STATE_HISTORY), TS_OK);
	assert_int_equal(metrics_open_memory(&srv->metrics), TS_OK);
	srv->opt = &fs->opt;
	srv->started_at = 1700000000;
	srv->now = fake_now;
	fs->records.state = srv->state;
	fs->records.metrics = srv->metrics;
	record_hooks(&fs->hooks, &fs->records);
	assert_int_equal(engine_create_manual(&srv->engine, &fs->opt.engine,
	    &fs->be, &fs->hooks), TS_OK);
	srv->backend = engine_backend(srv->engine);
	server_init_costs(srv);
}

void
server_up(struct fake_server *fs)
{
	server_defaults(fs);
	server_start(fs);
}

void
server_down(struct fake_server *fs)
{
	engine_drain(fs->srv.engine);
	engine_destroy(fs->srv.engine);
	metrics_close(fs->srv.metrics);
	state_close(fs->srv.state);
}

/* ---- the fake connection ------------------------------------------------ */

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
void
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
void
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

void
fake_close(struct fake_conn *fc)
{
	engine_drain(fc->engine);
	/* frees the sequences that were released while on the stack */
	(void)engine_listener_take(&fc->listener);
	ts_buf_free(&fc->out);
}

/* ---- the answer --------------------------------------------------------- */

/* Routes the request at the clock's now, drives the engine until idle and
 * splits the CGI answer (FastCGI 1.0 section 6.2) into head and body. */
void
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
int
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
uint64_t
request_id(const struct response *r)
{
	char v[32];

	if (!header(r, "X-Request-Id", v, sizeof(v)))
		return 0;
	return strtoull(v, NULL, 10);
}

void
assert_header(const struct response *r, const char *name, const char *want)
{
	char v[512];

	if (!header(r, name, v, sizeof(v)))
		fail_msg("no %s header in:\n%s", name, r->head);
	assert_string_equal(v, want);
}

/* The body as one JSON value (it ends in one newline). */
json_t *
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

const char *
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
void
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

/* Splits a body that must be whole SSE events (WHATWG HTML 9.2: fields,
 * an empty line after each) as tokstream writes them: "id:", "data:",
 * "retry:" and ": comment" lines, LF only. */
struct sse *
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

void
sse_free(struct sse *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->ev[i].data);
	free(s);
}

size_t
count_keepalives(const struct sse *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++)
		n += s->ev[i].kind == EV_COMMENT &&
		    strcmp(s->ev[i].comment, "keep-alive") == 0;
	return n;
}

/* A lab token event's text, appended to text. */
void
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

void
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
char *
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

const char *
v1_uri(enum openai_kind kind)
{
	return kind == OPENAI_CHAT ? "/v1/chat/completions" :
	    kind == OPENAI_RESPONSES ? "/v1/responses" : "/v1/completions";
}

/* Its JSON body (caller frees); ignore_eos, so it runs to max_tokens. */
char *
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
