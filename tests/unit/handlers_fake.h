/*
 * handlers_fake.h - what the handler tests share (handlers_fake.c): the
 * handlers and their routes over a fake connection (transport/conn.h):
 * CGI params from a table, a body served in pieces, writes into a buffer
 * that can fail after N bytes or stall until abort(), and waits that
 * drive a manual engine (engine_create_manual) over the simulator on a
 * synthetic clock, with a hang-up or a server shutdown at a chosen time.
 * No sockets, no lighttpd, no threads, no sleeps.
 *
 * Each test fills its own struct server as server/main.c does (options
 * defaults, record hooks over an in-memory state file and metrics, the
 * blocking relay driver relay_run), routes one request, drives the engine
 * until idle (so the state record is final) and parses the CGI answer:
 * the head ("Status:", headers, an empty line) and the body (one JSON
 * object, or SSE events).
 *
 * The test programs: test_handlers_lab.c (/stream, /generate),
 * test_handlers_v1.c (/v1), test_handlers_routes.c (routing, CORS, the
 * API key, HEAD, OPTIONS, 429, 503) and test_handlers_debug.c (/metrics,
 * /_debug, /health, named instances). Include cmocka.h (with its
 * prerequisites) and jansson.h before this header.
 */
#ifndef TS_TESTS_HANDLERS_FAKE_H
#define TS_TESTS_HANDLERS_FAKE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/buf.h"
#include "engine/engine.h"
#include "openai/openai.h"
#include "transport/conn.h"
#include "handlers/settings.h"
#include "handlers/record.h"
#include "handlers/server.h"
#include "proto/resume.h"

#define MS 1000000LL
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_PARAMS 24
#define MAX_EVENTS 1024
#define MAX_WAITS 1000000u

/* ---- the synthetic clock ------------------------------------------------ */

/* CLOCK_MONOTONIC of the tests, in ns: srv.now reads it, the fake wait
 * moves it. Starts at 1 s (a time of 0 means "never" in places). */
extern int64_t clock_ns;

/* Runs the engine until it has nothing left to do (its sequences left
 * and were reported to the hooks). */
void engine_drain(struct engine *e);

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
void server_defaults(struct fake_server *fs);
/* As server/main.c fills struct server, with a manual engine over the
 * simulator. */
void server_start(struct fake_server *fs);
/* The same over the backend the caller put in fs->be (a simulator with
 * parts changed: tests/unit/test_causes.c). */
void server_start_backend(struct fake_server *fs);
/* server_defaults, then server_start. */
void server_up(struct fake_server *fs);
/* Drains the engine and frees what server_start made. */
void server_down(struct fake_server *fs);

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

/* Sets a CGI param (borrowed), replacing one of the same name. */
void fake_set(struct fake_conn *fc, const char *name, const char *value);
/* A request `method uri` from 127.0.0.1 with the body (NULL: none),
 * both borrowed until fake_close. */
void fake_open(struct fake_conn *fc, struct fake_server *fs,
    const char *method, const char *uri, const char *body);
/* Drains the engine and frees the connection's output. */
void fake_close(struct fake_conn *fc);

/* ---- the answer --------------------------------------------------------- */

struct response {
	int status;
	char head[4096];             /* header lines, each ending in CRLF */
	const char *body;            /* into the connection's output */
	size_t body_len;
};

/* Routes the request at the clock's now, drives the engine until idle and
 * splits the CGI answer (FastCGI 1.0 section 6.2) into head and body. */
void exchange(struct fake_server *fs, struct fake_conn *fc,
    struct response *r);
/* The value of header `name` into val (cap bytes): 1, or 0 if absent. */
int header(const struct response *r, const char *name, char *val,
    size_t cap);
/* X-Request-Id as a number (0 when absent). */
uint64_t request_id(const struct response *r);
/* Fails unless header `name` is there and equals want. */
void assert_header(const struct response *r, const char *name,
    const char *want);
/* The body as one JSON value (it ends in one newline); caller decrefs. */
json_t *body_json(const struct response *r);
/* The string at "a.b.c" in o (borrowed from o); fails if none. */
const char *jstr(json_t *o, const char *path);
/* An error answer: status, JSON, the shape's members and the code;
 * openai: whether it has OpenAI's "param". */
void assert_error(const struct response *r, int status, const char *type,
    const char *code, int openai);

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

/* Splits a body that must be whole SSE events (WHATWG HTML 9.2); the
 * caller frees the result with sse_free. */
struct sse *sse_parse(const char *p, size_t len);
void sse_free(struct sse *s);
/* The ": keep-alive" comments among s's events. */
size_t count_keepalives(const struct sse *s);
/* A lab token event's text, appended to text. */
void lab_token_text(const struct sse_event *e, struct ts_buf *text);

/* ---- requests ----------------------------------------------------------- */

/* A /stream URI into uri (cap bytes): the prompt percent-encoded,
 * max_tokens (< 0: not given), then extra ("&k=v...", or NULL). */
void stream_uri(char *uri, size_t cap, const char *prompt, int max_tokens,
    const char *extra);
/* A /generate body (caller frees); prefill_ms < 0: not given. */
char *generate_body(const char *prompt, int max_tokens, int prefill_ms);

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

/* The path of a /v1 request of this kind. */
const char *v1_uri(enum openai_kind kind);
/* Its JSON body (caller frees); ignore_eos, so it runs to max_tokens. */
char *v1_body(const struct v1_req *q);

#endif /* TS_TESTS_HANDLERS_FAKE_H */
