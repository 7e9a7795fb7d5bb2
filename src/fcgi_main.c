/*
 * fcgi_main.c - tokstream-fcgi, the FastCGI responder (FastCGI 1.0
 * "Responder" role, libfcgi). The only file that includes fcgiapp.h: it
 * accepts requests on a pool of threads, routes them, and does every
 * write. Generation logic lives in engine.c and gen.c.
 *
 * Facts it relies on (../shared/NOTES.md, measured on lighttpd 1.4.69 and
 * libfcgi 2.4.2): lighttpd never sends FCGI_ABORT_REQUEST, it just closes
 * the backend connection when its client is gone; after the first failed
 * flush libfcgi reports success, so FCGX_GetError is checked after every
 * flush; FCGX_Init makes SIGPIPE a no-op and SIGTERM a flag, so both are
 * set up again here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fcgiapp.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "gen.h"
#include "http.h"
#include "gen_chat.h"
#include "metrics.h"
#include "openai.h"
#include "model/backend.h"
#include "resume.h"
#include "sse.h"
#include "state.h"

#define CONST_STR_LEN(s) (s), (sizeof(s) - 1)

#define DEFAULT_THREADS 160
#define MAX_THREADS 4096
#define DEFAULT_STATE_DIR "/run/tokstream"
#define SHUTDOWN_GRACE_MS 5000
#define THREAD_STACK_BYTES (256u * 1024u)
#define DEFAULT_RETRY_MS 1000

struct options {
	int threads;
	const char *state_dir;
	const char *socket_path;     /* NULL: listen on fd 0 (spawn-fcgi) */
	const char *log_path;        /* NULL: stderr as inherited */
	int backlog;
	struct engine_config engine;  /* latency model, slots, queue */
	unsigned long retry_ms;      /* SSE retry: sent at stream start */
	const char *cors_origin;     /* Access-Control-Allow-Origin; "" = off */
	const char *served_model;    /* /v1 model name; NULL: the default */
	const char *backend;         /* "sim" or "llama" */
	const char *model_path;      /* llama2.c checkpoint (--backend llama) */
	const char *tokenizer_path;  /* llama2.c tokenizer.bin */
	int model_threads;           /* compute threads, 0 = online CPUs */
	int model_context;           /* positions per sequence, 0 = model's */
};

/* Process-wide state, set up once in main and read by every worker. */
static struct options opt;
static struct state *state;
static struct engine *engine;
static struct engine_backend backend;
static struct metrics *metrics;
static time_t started_at;        /* /v1/models "created" */
static int listen_fd;
static atomic_int stopping;
static atomic_int active_requests;

/* One worker thread: its FastCGI request and its encode buffer. */
struct worker {
	pthread_t thread;
	FCGX_Request req;
	struct ts_buf out;
	int evfd;                /* eventfd: the engine says "news" */
};

/* One request in flight, the ctx of its engine_io callbacks. */
struct conn {
	struct worker *w;
	FCGX_Request *req;
	int hup;                 /* a write or the socket said: client gone */
	struct ts_buf text;      /* POST /generate: the answer so far */
	uint32_t text_tokens;    /* ... and its tokens */
	uint64_t req_id;         /* X-Request-Id of its generation, 0 none */
	int wrote;               /* the last on_token wrote to the client */
	struct openai_stream v1; /* /v1 streams: the chunks' state */
	int head_sent;           /* the response head went out already */
	struct resume_id eid;    /* /stream: the id of the next event */
	int cors;                /* add the CORS headers to the head */
};

static const char *
param(FCGX_Request *req, const char *name)
{
	const char *v = FCGX_GetParam(name, req->envp);

	return v ? v : "";
}

/*
 * Writes (p, len) and flushes. libfcgi keeps returning success after the
 * first failure, so the stream's error is read after every flush (NOTES
 * "libfcgi traps"). Returns TS_OK or TS_EHUP.
 */
static enum ts_err
conn_write_flush(struct conn *c, const char *p, size_t len)
{
	FCGX_Stream *out = c->req->out;

	if (c->hup)
		return TS_EHUP;
	if (len > INT_MAX || FCGX_PutStr(p, (int)len, out) != (int)len ||
	    FCGX_FFlush(out) != 0 || FCGX_GetError(out) != 0) {
		c->hup = 1;
		return TS_EHUP;
	}
	return TS_OK;
}

/*
 * Response head: CGI-style "Status:" line and headers (FastCGI 1.0
 * section 6.2: the Responder's stdout is a CGI response), the CORS
 * headers of the public endpoints (README "Browsers and CORS"), and the
 * stream's X-Request-Id when it has one.
 */
static enum ts_err
write_head(struct conn *c, int status, const char *ctype, uint64_t id,
    const char *extra)
{
	char head[1024];
	size_t n = 0;

	if (c->head_sent)
		return TS_OK;   /* a committed POST /generate: body only */
	c->head_sent = 1;

#define HEAD_ADD(...) do {						\
	int k_ = snprintf(head + n, sizeof(head) - n, __VA_ARGS__);	\
	if (k_ < 0 || (size_t)k_ >= sizeof(head) - n)			\
		return TS_EINVAL;					\
	n += (size_t)k_;						\
} while (0)
	HEAD_ADD("Status: %d %s\r\n", status, http_reason(status));
	if (ctype != NULL)
		HEAD_ADD("Content-Type: %s\r\n", ctype);
	if (extra != NULL)
		HEAD_ADD("%s", extra);
	if (id != 0)
		HEAD_ADD("X-Request-Id: %llu\r\n", (unsigned long long)id);
	if (c->cors)
		HEAD_ADD("Access-Control-Allow-Origin: %s\r\n"
		    "Access-Control-Expose-Headers: X-Request-Id\r\n",
		    opt.cors_origin);
	HEAD_ADD("\r\n");
#undef HEAD_ADD
	return conn_write_flush(c, head, n);
}

/* A complete JSON error response (before any other byte was sent);
 * `id` is the stream's X-Request-Id when a generation had started. */
static void
send_error_id(struct conn *c, const struct http_error *err,
    const char *extra, uint64_t id)
{
	struct ts_buf b;

	ts_buf_init(&b, 64 * 1024);
	http_error_json(err, &b);
	ts_buf_append(&b, "\n", 1);
	if (write_head(c, err->status, "application/json", id, extra) ==
	    TS_OK)
		conn_write_flush(c, b.p, b.len);
	ts_buf_free(&b);
}

static void
send_error(struct conn *c, const struct http_error *err, const char *extra)
{
	send_error_id(c, err, extra, 0);
}

/* A complete JSON response; TS_EHUP if the client did not take it. */
static enum ts_err
send_json(struct conn *c, int status, json_t *obj, uint64_t id)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(9));
	enum ts_err rc;

	json_decref(obj);
	if (s == NULL) {
		struct http_error err;

		http_error_set(&err, 500, "server_error", "encode_failed",
		    "the response could not be encoded");
		send_error(c, &err, NULL);
		return TS_EINVAL;
	}
	rc = write_head(c, status, "application/json", id, NULL);
	if (rc == TS_OK) {
		size_t n = strlen(s);

		s[n] = '\n';    /* replace the NUL: one line of JSON */
		rc = conn_write_flush(c, s, n + 1);
	}
	free(s);
	return rc;
}

/* ---- metrics (src/metrics.h, shared by all responder processes) ---- */

/* A token event was written at `now`: the first one gives TTFT (from the
 * request's arrival t0), the others ITL (from the previous one). */
static void
note_token_written(int64_t t0, int64_t last_token, int64_t now)
{
	if (last_token == 0)
		metrics_observe(metrics, METRICS_TTFT, now - t0);
	else
		metrics_observe(metrics, METRICS_ITL, now - last_token);
}

/* A request's answer was delivered whole: E2E latency. */
static void
note_request_done(int64_t t0, int64_t now)
{
	metrics_observe(metrics, METRICS_E2E, now - t0);
}

static void
hook_tokens(void *ctx, uint32_t n)
{
	(void)ctx;
	metrics_add(metrics, METRICS_GENERATION_TOKENS, n);
}

static void
hook_admit(void *ctx, int64_t queue_ns)
{
	(void)ctx;
	metrics_observe(metrics, METRICS_QUEUE, queue_ns);
}

static void
hook_finish(void *ctx, enum engine_finish f, uint32_t produced,
    uint32_t wasted)
{
	(void)ctx;
	(void)produced;
	metrics_add(metrics, METRICS_WASTED_TOKENS, wasted);
	switch (f) {
	case ENGINE_FINISH_LENGTH:
		metrics_finished(metrics, METRICS_LENGTH);
		break;
	case ENGINE_FINISH_STOP:
		metrics_finished(metrics, METRICS_STOP);
		break;
	case ENGINE_FINISH_CANCELLED:
	case ENGINE_FINISH_SHUTDOWN:
		metrics_finished(metrics, METRICS_ABORT);
		break;
	case ENGINE_FINISH_ERROR:
	case ENGINE_FINISH_NONE:
		metrics_finished(metrics, METRICS_ERROR);
		break;
	}
}

static void
hook_counts(void *ctx, uint32_t running, uint32_t waiting)
{
	(void)ctx;
	metrics_gauge_set(metrics, METRICS_RUNNING, running);
	metrics_gauge_set(metrics, METRICS_WAITING, waiting);
}

/*
 * Waits until the sequence has news (its eventfd), the FastCGI connection
 * hangs up, or deadline_ns (CLOCK_MONOTONIC) passes. lighttpd closes the
 * connection when its client is gone, which shows as POLLRDHUP/POLLHUP.
 * Only hang-up is polled for on that socket, so a pending FastCGI record
 * (the empty FCGI_STDIN that ends a GET) does not wake the loop. Returns
 * TS_OK (news or time) or TS_EHUP.
 */
static enum ts_err
conn_wait(struct conn *c, int64_t deadline_ns)
{
	int64_t left = deadline_ns - engine_now_ns();
	struct timespec ts;
	struct pollfd pfd[2];
	uint64_t junk;
	int n;

	if (c->hup)
		return TS_EHUP;
	if (left < 0)
		left = 0;
	ts.tv_sec = left / 1000000000;
	ts.tv_nsec = left % 1000000000;
	pfd[0].fd = c->req->ipcFd;
	pfd[0].events = POLLRDHUP;
	pfd[0].revents = 0;
	pfd[1].fd = c->w->evfd;
	pfd[1].events = POLLIN;
	pfd[1].revents = 0;
	n = ppoll(pfd, 2, &ts, NULL);
	if (n < 0 && errno != EINTR)
		nanosleep(&ts, NULL);   /* cannot watch: just wait */
	if (n > 0 && (pfd[0].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		c->hup = 1;
		return TS_EHUP;
	}
	if (n > 0 && (pfd[1].revents & POLLIN) &&
	    read(c->w->evfd, &junk, sizeof(junk)) < 0 && errno != EAGAIN)
		nanosleep(&ts, NULL);
	return TS_OK;
}

/* Called by the engine when this request's write has been blocked
 * --write-stall-ms: shutting the socket down makes the write fail. */
static void
conn_on_stall(void *ctx)
{
	struct conn *c = ctx;

	shutdown(c->req->ipcFd, SHUT_RDWR);
}

/* How a relay writes one kind of response (SSE or the JSON answer). */
struct relay_ops {
	/* Delivers token `index` (text borrowed for the call); must flush
	 * and return TS_EHUP for a failed flush. */
	enum ts_err (*on_token)(struct conn *c, uint32_t index,
	    const char *text, size_t len);
	/* Writes something the client can ignore, so that lighttpd notices
	 * a client that left; NULL if the response cannot carry it. */
	enum ts_err (*on_keepalive)(struct conn *c);
	int tokens_reach_client;   /* on_token writes to the client */
};

/*
 * Relays sequence s to the client: writes each token the engine
 * publishes, keep-alives while silent (queue, prefill), and tells the
 * engine as soon as the client is gone (a failed write or a hang-up).
 * Measures TTFT and ITL as written, for /metrics. Returns how the
 * sequence ended; ENGINE_FINISH_CANCELLED when the client left.
 */
static enum engine_finish
relay(struct conn *c, struct engine_seq *s, const struct engine_request *r,
    const struct relay_ops *ops)
{
	int64_t keepalive_ns = ts_ms_to_ns(opt.engine.lat.keepalive_ms);
	int64_t last_write = r->t0_ns, last_token = 0;
	struct engine_view v;
	uint32_t sent = 0;

	for (;;) {
		int64_t deadline;

		engine_seq_view(s, &v);
		while (sent < v.produced) {
			size_t len;
			const char *text;
			int64_t now = engine_now_ns();
			enum ts_err rc;

			/* The released text (stop strings and incomplete
			 * UTF-8 held back) or the token's own text. */
			if (v.released) {
				text = v.chunks[sent] != NULL ?
				    v.chunks[sent] : "";
				len = v.chunk_lens[sent];
			} else {
				text = engine_token_text(engine, v.ids[sent],
				    &len);
			}
			engine_write_begin(s, now);
			c->wrote = 1;
			rc = ops->on_token(c, r->start_index + sent, text,
			    len);
			engine_write_end(s);
			if (rc != TS_OK)
				goto gone;
			now = engine_now_ns();
			sent++;
			engine_delivered(s, sent);
			if (!c->wrote)
				continue;   /* nothing was sent for it */
			note_token_written(r->t0_ns, last_token, now);
			last_token = now;
			if (ops->tokens_reach_client)
				last_write = now;
		}
		if (v.finish != ENGINE_FINISH_NONE) {
			/* What the releaser held to the end (an incomplete
			 * character at max_tokens) goes with the last token. */
			if (v.released && v.tail_len > 0 &&
			    ops->on_token(c, r->start_index + (sent > 0 ?
			    sent - 1 : 0), v.tail, v.tail_len) != TS_OK)
				goto gone;
			return v.finish;
		}
		deadline = INT64_MAX;
		if (ops->on_keepalive != NULL && keepalive_ns > 0)
			deadline = last_write + keepalive_ns;
		if (deadline > engine_now_ns() + 1000000000LL)
			deadline = engine_now_ns() + 1000000000LL;
		if (conn_wait(c, deadline) != TS_OK)
			goto gone;
		if (ops->on_keepalive != NULL && keepalive_ns > 0 &&
		    engine_now_ns() >= last_write + keepalive_ns) {
			engine_write_begin(s, engine_now_ns());
			if (ops->on_keepalive(c) != TS_OK) {
				engine_write_end(s);
				goto gone;
			}
			engine_write_end(s);
			last_write = engine_now_ns();
		}
	}
gone:
	engine_cancel(engine, s, engine_now_ns());
	return ENGINE_FINISH_CANCELLED;
}

static enum ts_err
stream_on_token(struct conn *c, uint32_t index, const char *text,
    size_t len)
{
	struct ts_buf *b = &c->w->out;
	char id[RESUME_ID_MAX + 1];
	size_t idlen;

	ts_buf_reset(b);
	c->eid.index = index;
	idlen = resume_id_format(id, sizeof(id), &c->eid);
	if (sse_encode_id(b, id, idlen) != TS_OK ||
	    sse_encode_token(b, text, len) != TS_OK)
		return TS_EINVAL;
	return conn_write_flush(c, b->p, b->len);
}

static enum ts_err
stream_on_keepalive(struct conn *c)
{
	return conn_write_flush(c, CONST_STR_LEN(": keep-alive\n\n"));
}

static enum ts_err
generate_on_token(struct conn *c, uint32_t index, const char *text,
    size_t len)
{
	(void)index;
	if (ts_buf_append(&c->text, text, len) != TS_OK)
		return TS_ELIMIT;
	c->text_tokens++;
	return TS_OK;
}

/*
 * POST /generate keep-alive. lighttpd notices a client that left only when
 * it writes to it (NOTES "How a disconnect reaches the responder"), and a
 * JSON answer writes nothing until it is complete. So an answer that takes
 * longer than one keep-alive interval commits to 200 (with X-Request-Id)
 * and then sends a newline per interval: whitespace a JSON parser skips
 * before the value (RFC 8259 section 2), as S3's CompleteMultipartUpload
 * does. An error after that point arrives as the {"error":...} body of the
 * 200 (README "POST /generate"). A 1xx interim response would keep the
 * status but Python's http.client takes any 1xx but 100 as the final
 * response, so it is not used.
 */
static enum ts_err
generate_on_keepalive(struct conn *c)
{
	if (!c->head_sent && write_head(c, 200, "application/json",
	    c->req_id, NULL) != TS_OK)
		return TS_EHUP;
	return conn_write_flush(c, CONST_STR_LEN("\n"));
}

static const struct relay_ops stream_ops = {
	stream_on_token, stream_on_keepalive, 1
};
static const struct relay_ops generate_ops = {
	generate_on_token, generate_on_keepalive, 0
};

/* A prompt the model's tokenizer refused: longer than its context. */
#define PROMPT_TOO_LONG UINT64_MAX

/* The prompt's length in the backend's tokens; PROMPT_TOO_LONG when the
 * llama backend's tokenizer finds it longer than the context. */
static uint64_t
prompt_tokens(const char *p, size_t len)
{
	uint32_t n;

	if (backend.physical)
		return model_backend_prompt_tokens(&backend, p, len, &n) ==
		    TS_OK ? n : PROMPT_TOO_LONG;
	return gen_tokenize(p, len, NULL, 0);
}

/*
 * A prompt, plus the tokens a resumed stream recomputes, must fit the
 * model's context (the llama backend; the simulator has none). Returns
 * 0, or 400 with *err filled (OpenAI's code context_length_exceeded).
 */
static int
check_context(uint64_t prompt, uint64_t more, struct http_error *err)
{
	uint64_t ctx;

	if (!backend.physical)
		return 0;
	ctx = model_backend_context(&backend);
	if (prompt == PROMPT_TOO_LONG) {
		http_error_set(err, 400, "invalid_request_error",
		    "context_length_exceeded", "the prompt is longer than the "
		    "model's context of %llu tokens", (unsigned long long)ctx);
		return 400;
	}
	if (prompt + more < ctx)
		return 0;
	http_error_set(err, 400, "invalid_request_error",
	    "context_length_exceeded", "the prompt is %llu tokens (+%llu "
	    "to recompute); the model's context is %llu",
	    (unsigned long long)prompt, (unsigned long long)more,
	    (unsigned long long)ctx);
	return 400;
}

/*
 * Fills the engine request shared by /stream and /generate. A resumed
 * stream (start > 0) pays prefill over the prompt plus the tokens already
 * sent, as a real engine recomputes their KV cache.
 */
static void
request_from(struct engine_request *job, struct conn *c,
    const struct http_gen_request *r, int64_t t0, uint32_t start)
{
	memset(job, 0, sizeof(*job));
	job->prompt = r->prompt;
	job->prompt_len = r->prompt_len;
	job->prompt_tokens = prompt_tokens(r->prompt, r->prompt_len);
	job->max_tokens = r->max_tokens;
	job->start_index = start;
	job->prefill_ms = r->prefill_ms >= 0 ? (double)r->prefill_ms :
	    engine_prefill_ms(&opt.engine.lat, job->prompt_tokens + start);
	job->tpot_ms = r->tpot_ms >= 0 ? (double)r->tpot_ms : -1.0;
	job->error_after = r->error_after;
	job->t0_ns = t0;
	job->notify_fd = c->w->evfd;
	job->on_stall = conn_on_stall;
	job->ctx = c;
}

/*
 * Queues the request in the engine. On refusal fills *err: 429 when the
 * waiting queue is full (with Retry-After), 503 when shutting down.
 */
static enum ts_err
submit(struct engine_request *job, struct engine_seq **s,
    struct http_error *err)
{
	enum ts_err rc = engine_submit(engine, job, s);

	if (rc == TS_OK)
		metrics_add(metrics, METRICS_PROMPT_TOKENS, job->prompt_tokens);
	if (rc == TS_ELIMIT) {
		metrics_add(metrics, METRICS_REJECTED_QUEUE_FULL, 1);
		http_error_set(err, 429, "rate_limit_error", "queue_full",
		    "all %u slots are busy and %u requests are waiting; "
		    "retry later", opt.engine.max_num_seqs,
		    opt.engine.max_waiting);
	} else if (rc != TS_OK) {
		http_error_set(err, 503, "server_error", "shutdown",
		    "the server is shutting down");
	}
	return rc;
}

/*
 * The error a finish other than "length" or "cancelled" reports: as an
 * SSE error event on a stream, as the status and body of /generate.
 * Returns 0 when the finish is not an error.
 */
static int
finish_error(int32_t error_after, enum engine_finish f,
    struct http_error *err)
{
	if (f == ENGINE_FINISH_SHUTDOWN) {
		http_error_set(err, 503, "server_error", "shutdown",
		    "the server is shutting down");
		return 1;
	}
	if (f != ENGINE_FINISH_ERROR)
		return 0;
	if (error_after >= 0)
		http_error_set(err, 500, "server_error", "injected_error",
		    "injected error after %d tokens (error_after)",
		    (int)error_after);
	else
		http_error_set(err, 500, "server_error", "generation_failed",
		    "generation failed");
	return 1;
}

/*
 * Decides where a GET /stream starts (README "Resuming a stream"): from
 * the Last-Event-ID header (EventSource sends it when it reconnects) or,
 * without one, the last_event_id parameter. Returns 0 to stream from
 * *start, 204 when the stream had already ended (nothing is generated
 * again), or 400 with *err filled for an id that is malformed, belongs to
 * other parameters, or names a token this request could never send.
 * *from is the stream resumed, when the state file confirms it (a stream
 * with the same key); 0 otherwise.
 */
static int
stream_start(struct conn *c, const struct http_gen_request *r, uint64_t key,
    uint32_t *start, uint64_t *from, struct http_error *err)
{
	const char *hdr = FCGX_GetParam("HTTP_LAST_EVENT_ID", c->req->envp);
	const char *s = hdr;
	size_t len = hdr ? strlen(hdr) : 0;
	uint64_t last;
	struct resume_id id;
	struct state_record rec;
	const char *why;

	*start = 0;
	*from = 0;
	/* The header wins: EventSource keeps a URL's last_event_id and
	 * sends the newer id in the header on every reconnect. */
	if (len == 0 && r->last_event_id != NULL) {
		s = r->last_event_id;
		len = r->last_event_id_len;
	}
	if (len == 0)
		return 0;       /* an empty Last-Event-ID resumes nothing */
	if (resume_id_parse(s, len, &id, &why) != TS_OK) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_last_event_id", "the last event id is not a "
		    "tokstream event id: %s", why);
		return 400;
	}
	if (id.key != key) {
		http_error_set(err, 400, "invalid_request_error",
		    "foreign_last_event_id", "the last event id belongs to a "
		    "stream with other parameters (prompt, max_tokens or "
		    "error_after); resume with the same request");
		return 400;
	}
	if (id.index == RESUME_INDEX_END)
		return 204;
	/* The last index this request can send: max_tokens - 1, or the
	 * one before an injected error. */
	last = r->max_tokens == 0 ? 0 : r->max_tokens - 1u;
	if (r->error_after >= 0 && (uint64_t)r->error_after <= last)
		last = r->error_after == 0 ? 0 : (uint64_t)r->error_after - 1;
	if (r->max_tokens == 0 || r->error_after == 0 || id.index > last) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_last_event_id", "the last event id names token "
		    "%llu, which this request never sends",
		    (unsigned long long)id.index);
		return 400;
	}
	if (id.index + 1 >= r->max_tokens)
		return 204;
	*start = (uint32_t)(id.index + 1);
	if (state_lookup(state, id.stream, &rec) == TS_OK &&
	    rec.kind == STATE_KIND_STREAM && rec.key == key)
		*from = id.stream;
	return 0;
}

/*
 * GET /stream: SSE, a retry line, one event per token with its id, then
 * [DONE] with the "end" id (see README). Once the 200 is sent an error can
 * only be an SSE error event, then [DONE].
 */
static void
handle_stream(struct conn *c, int64_t t0)
{
	struct http_gen_request r;
	struct http_error err;
	struct engine_request job;
	struct engine_seq *s = NULL;
	enum engine_finish fin;
	const char *qs = param(c->req, "QUERY_STRING");
	struct ts_buf *b = &c->w->out;
	char id[RESUME_ID_MAX + 1];
	uint64_t sid;
	uint32_t start;
	uint64_t from;
	int rc;

	if (http_parse_query(qs, strlen(qs), &r, &err) != TS_OK) {
		send_error(c, &err, NULL);
		return;
	}
	c->eid.key = resume_key(r.prompt, r.prompt_len, r.max_tokens,
	    r.error_after);
	rc = stream_start(c, &r, c->eid.key, &start, &from, &err);
	if (rc == 400) {
		send_error(c, &err, NULL);
		goto out;
	}
	if (rc == 204) {
		/* EventSource stops reconnecting on 204 (WHATWG 9.2.3). */
		write_head(c, 204, NULL, 0, NULL);
		goto out;
	}
	request_from(&job, c, &r, t0, start);
	if (check_context(job.prompt_tokens, start, &err)) {
		send_error(c, &err, NULL);
		goto out;
	}
	job.kind = STATE_KIND_STREAM;
	job.resumed_from = from;
	job.key = c->eid.key;
	if (submit(&job, &s, &err) != TS_OK) {
		send_error(c, &err, "Retry-After: 1\r\n");
		goto out;
	}
	sid = engine_seq_id(s);
	c->eid.stream = sid;
	ts_buf_reset(b);
	sse_encode_retry(b, opt.retry_ms);
	if (write_head(c, 200, "text/event-stream", sid,
	    "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n") !=
	    TS_OK || conn_write_flush(c, b->p, b->len) != TS_OK) {
		engine_cancel(engine, s, engine_now_ns());
		goto out;
	}
	fin = relay(c, s, &job, &stream_ops);
	if (fin == ENGINE_FINISH_CANCELLED)
		goto out;
	ts_buf_reset(b);
	if (finish_error(r.error_after, fin, &err))
		sse_encode_error(b, err.message, err.type, err.code);
	/* The "end" id tells a reconnecting client there is nothing more.
	 * After a shutdown there is: [DONE] goes without an id, so
	 * EventSource reconnects with the last token's id and the restarted
	 * server resumes the stream. */
	if (fin != ENGINE_FINISH_SHUTDOWN) {
		c->eid.index = RESUME_INDEX_END;
		sse_encode_id(b, id, resume_id_format(id, sizeof(id),
		    &c->eid));
	}
	sse_encode_done(b);
	if (conn_write_flush(c, b->p, b->len) != TS_OK)
		engine_cancel(engine, s, engine_now_ns());
	else
		note_request_done(t0, engine_now_ns());
out:
	engine_release(engine, s);
	http_gen_request_free(&r);
}

/*
 * Reads the POST body: CONTENT_LENGTH bytes through FCGX_GetStr, which
 * spans as many FCGI_STDIN records as needed (C05). Over the limit: 413,
 * after draining what was sent so lighttpd can deliver the answer.
 */
static enum ts_err
read_body(struct conn *c, struct ts_buf *body, struct http_error *err)
{
	const char *cl = param(c->req, "CONTENT_LENGTH");
	char chunk[16384];
	unsigned long long want = 0;
	char *end;

	if (*cl != '\0') {
		errno = 0;
		want = strtoull(cl, &end, 10);
		if (errno != 0 || *end != '\0' || *cl == '-') {
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_content_length",
			    "Content-Length is not a number");
			return TS_EINVAL;
		}
	}
	if (want > HTTP_MAX_BODY_BYTES) {
		unsigned long long left = want;

		while (left > 0) {
			int n = FCGX_GetStr(chunk, sizeof(chunk),
			    c->req->in);

			if (n <= 0)
				break;
			left -= (unsigned long long)n < left ?
			    (unsigned long long)n : left;
		}
		http_error_set(err, 413, "invalid_request_error",
		    "body_too_large", "the body is %llu bytes; the limit is "
		    "%u bytes", want, HTTP_MAX_BODY_BYTES);
		return TS_ELIMIT;
	}
	while (body->len < want) {
		size_t room = want - body->len;
		int n = FCGX_GetStr(chunk, room < sizeof(chunk) ?
		    (int)room : (int)sizeof(chunk), c->req->in);

		if (n <= 0)
			break;
		ts_buf_append(body, chunk, (size_t)n);
	}
	if (body->len < want) {
		http_error_set(err, 400, "invalid_request_error",
		    "incomplete_body", "the body ended after %zu of the %llu "
		    "bytes that Content-Length announced", body->len, want);
		return TS_EINVAL;
	}
	return TS_OK;
}

/* POST /generate: the whole answer as one JSON object. */
static void
handle_generate(struct conn *c, int64_t t0)
{
	struct http_gen_request r = { 0 };
	struct http_error err;
	struct engine_request job;
	struct engine_seq *s = NULL;
	enum engine_finish fin;
	struct ts_buf body;
	json_t *text, *obj;

	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	ts_buf_init(&c->text, (size_t)HTTP_MAX_TOKENS_CAP *
	    GEN_TOKEN_MAX_BYTES);
	if (read_body(c, &body, &err) != TS_OK ||
	    http_parse_json(body.p ? body.p : "", body.len, &r, &err) !=
	    TS_OK) {
		send_error(c, &err, NULL);
		goto out;
	}
	request_from(&job, c, &r, t0, 0);
	if (check_context(job.prompt_tokens, 0, &err)) {
		send_error(c, &err, NULL);
		goto out;
	}
	job.kind = STATE_KIND_GENERATE;
	if (submit(&job, &s, &err) != TS_OK) {
		send_error(c, &err, "Retry-After: 1\r\n");
		goto out;
	}
	c->req_id = engine_seq_id(s);
	fin = relay(c, s, &job, &generate_ops);
	if (fin == ENGINE_FINISH_CANCELLED)
		goto out;   /* nobody to answer */
	if (finish_error(r.error_after, fin, &err)) {
		send_error_id(c, &err, NULL, engine_seq_id(s));
		goto out;
	}
	text = json_stringn(c->text.p ? c->text.p : "", c->text.len);
	obj = json_pack("{s:o,s:{s:I,s:I}}", "text", text, "usage",
	    "prompt_tokens", (json_int_t)job.prompt_tokens,
	    "completion_tokens", (json_int_t)c->text_tokens);
	if (send_json(c, 200, obj, engine_seq_id(s)) != TS_OK)
		engine_cancel(engine, s, engine_now_ns());
	else
		note_request_done(t0, engine_now_ns());
out:
	engine_release(engine, s);
	http_gen_request_free(&r);
	ts_buf_free(&body);
	ts_buf_free(&c->text);
}

/* ---- the OpenAI-compatible API (src/openai.h; README "OpenAI API") ---- */

/* The model name /v1 answers to: --served-model-name, or tokstream-sim,
 * or the checkpoint's file name. */
static const char *
served_model(void)
{
	const char *slash;

	if (opt.served_model != NULL)
		return opt.served_model;
	if (opt.model_path == NULL)
		return "tokstream-sim";
	slash = strrchr(opt.model_path, '/');
	return slash != NULL ? slash + 1 : opt.model_path;
}

/* An error in the OpenAI shape, with "param" (before any other byte). */
static void
send_error_v1(struct conn *c, const struct http_error *err,
    const char *extra, uint64_t id)
{
	struct ts_buf b;

	ts_buf_init(&b, 64 * 1024);
	http_error_json_openai(err, &b);
	ts_buf_append(&b, "\n", 1);
	if (write_head(c, err->status, "application/json", id, extra) ==
	    TS_OK)
		conn_write_flush(c, b.p, b.len);
	ts_buf_free(&b);
}

/* A /v1 stream's token: one chunk; an empty released text (held back
 * for a stop string or an incomplete character) sends nothing. */
static enum ts_err
v1_stream_on_token(struct conn *c, uint32_t index, const char *text,
    size_t len)
{
	struct ts_buf *b = &c->w->out;

	(void)index;
	c->wrote = 0;
	if (len == 0)
		return TS_OK;
	ts_buf_reset(b);
	if (openai_encode_chunk(b, &c->v1, text, len) != TS_OK)
		return TS_EINVAL;
	c->wrote = 1;
	return conn_write_flush(c, b->p, b->len);
}

static const struct relay_ops v1_stream_ops = {
	v1_stream_on_token, stream_on_keepalive, 1
};

/* OpenAI's finish_reason of an engine finish (length or stop). */
static enum openai_finish
v1_finish(enum engine_finish f)
{
	return f == ENGINE_FINISH_LENGTH ? OPENAI_FINISH_LENGTH :
	    OPENAI_FINISH_STOP;
}

/*
 * POST /v1/completions and /v1/chat/completions: parse (openai.c), render
 * the chat template (gen_chat.c), run the sequence with the request's
 * sampling and stop strings, and answer as one JSON object or as
 * chat.completion.chunk / text_completion SSE chunks (OpenAI API
 * reference). completion_tokens counts every token the engine generated
 * for the request, EOS and the token that completed a stop string
 * included.
 */
static void
handle_v1_generate(struct conn *c, int64_t t0, enum openai_kind kind)
{
	struct openai_request req;
	struct http_error err;
	struct engine_request job;
	struct engine_sampling samp;
	struct engine_seq *s = NULL;
	struct engine_view v;
	struct openai_meta meta;
	struct openai_usage usage;
	enum engine_finish fin;
	struct ts_buf body, prompt, *b = &c->w->out;
	const char *model = served_model();
	size_t i;

	memset(&req, 0, sizeof(req));
	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	ts_buf_init(&prompt, 2 * HTTP_MAX_BODY_BYTES);
	ts_buf_init(&c->text, (size_t)HTTP_MAX_TOKENS_CAP *
	    GEN_TOKEN_MAX_BYTES * 3);
	if (read_body(c, &body, &err) != TS_OK) {
		http_error_set_param(&err, "%s", "");
		send_error_v1(c, &err, NULL, 0);
		goto out;
	}
	if (openai_parse_request(kind, body.p ? body.p : "", body.len, model,
	    strlen(model), &req, &err) != TS_OK) {
		send_error_v1(c, &err, NULL, 0);
		goto out;
	}
	if (kind == OPENAI_CHAT) {
		if (openai_chat_prompt(&req, &prompt) != TS_OK) {
			http_error_set(&err, 400, "invalid_request_error",
			    "invalid_value", "the messages are too long");
			send_error_v1(c, &err, NULL, 0);
			goto out;
		}
	} else if (ts_buf_append(&prompt, req.prompt, req.prompt_len) !=
	    TS_OK) {
		http_error_set(&err, 400, "invalid_request_error",
		    "invalid_value", "the prompt is too long");
		send_error_v1(c, &err, NULL, 0);
		goto out;
	}
	memset(&job, 0, sizeof(job));
	job.prompt = prompt.p ? prompt.p : "";
	job.prompt_len = prompt.len;
	job.prompt_tokens = prompt_tokens(job.prompt, job.prompt_len);
	if (check_context(job.prompt_tokens, 0, &err)) {
		send_error_v1(c, &err, NULL, 0);
		goto out;
	}
	job.max_tokens = req.max_tokens;
	job.prefill_ms = req.prefill_ms >= 0 ? (double)req.prefill_ms :
	    engine_prefill_ms(&opt.engine.lat, job.prompt_tokens);
	job.tpot_ms = req.tpot_ms >= 0 ? (double)req.tpot_ms : -1.0;
	job.error_after = req.error_after;
	job.t0_ns = t0;
	job.notify_fd = c->w->evfd;
	job.on_stall = conn_on_stall;
	job.ctx = c;
	job.kind = req.stream ? STATE_KIND_STREAM : STATE_KIND_GENERATE;
	samp.lm = 1;
	gen_params_defaults(&samp.params);
	samp.params.temperature = req.temperature;
	samp.params.top_p = req.top_p;
	samp.params.has_seed = req.has_seed;
	samp.params.seed = (uint64_t)req.seed;
	samp.params.ignore_eos = req.ignore_eos;
	job.sampling = &samp;
	for (i = 0; i < req.n_stop && i < 4; i++) {
		job.stop[i] = req.stop[i].s;
		job.stop_len[i] = req.stop[i].len;
	}
	job.nstop = i;
	if (submit(&job, &s, &err) != TS_OK) {
		send_error_v1(c, &err, "Retry-After: 1\r\n", 0);
		goto out;
	}
	c->req_id = engine_seq_id(s);
	meta.kind = kind;
	meta.id = c->req_id;
	meta.created = (int64_t)time(NULL);
	meta.model = model;
	meta.model_len = strlen(model);
	usage.prompt_tokens = (uint32_t)job.prompt_tokens;
	if (req.stream) {
		openai_stream_init(&c->v1, &meta, req.include_usage);
		if (write_head(c, 200, "text/event-stream", c->req_id,
		    "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n") !=
		    TS_OK) {
			engine_cancel(engine, s, engine_now_ns());
			goto out;
		}
		fin = relay(c, s, &job, &v1_stream_ops);
		if (fin == ENGINE_FINISH_CANCELLED)
			goto out;
		engine_seq_view(s, &v);
		usage.completion_tokens = v.generated;
		ts_buf_reset(b);
		if (finish_error(job.error_after, fin, &err)) {
			http_error_set_param(&err, "%s", "");
			openai_encode_stream_error(b, &err);
		} else {
			openai_encode_end(b, &c->v1, v1_finish(fin), &usage);
		}
		if (conn_write_flush(c, b->p, b->len) != TS_OK)
			engine_cancel(engine, s, engine_now_ns());
		else
			note_request_done(t0, engine_now_ns());
		goto out;
	}
	fin = relay(c, s, &job, &generate_ops);
	if (fin == ENGINE_FINISH_CANCELLED)
		goto out;
	if (finish_error(job.error_after, fin, &err)) {
		http_error_set_param(&err, "%s", "");
		send_error_v1(c, &err, NULL, c->req_id);
		goto out;
	}
	engine_seq_view(s, &v);
	usage.completion_tokens = v.generated;
	ts_buf_reset(b);
	if (openai_encode_response(b, &meta, c->text.p ? c->text.p : "",
	    c->text.len, v1_finish(fin), &usage) != TS_OK ||
	    ts_buf_append(b, "\n", 1) != TS_OK) {
		http_error_set(&err, 500, "server_error", "encode_failed",
		    "the response could not be encoded");
		send_error_v1(c, &err, NULL, c->req_id);
		goto out;
	}
	if (write_head(c, 200, "application/json", c->req_id, NULL) !=
	    TS_OK || conn_write_flush(c, b->p, b->len) != TS_OK)
		engine_cancel(engine, s, engine_now_ns());
	else
		note_request_done(t0, engine_now_ns());
out:
	engine_release(engine, s);
	openai_request_free(&req);
	ts_buf_free(&body);
	ts_buf_free(&prompt);
	ts_buf_free(&c->text);
}

/* GET /v1/models: the one served model, its backend and chat template. */
static void
handle_v1_models(struct conn *c)
{
	struct openai_model_info mi;
	struct ts_buf b;

	memset(&mi, 0, sizeof(mi));
	mi.id = served_model();
	mi.id_len = strlen(mi.id);
	mi.created = (int64_t)started_at;
	/* The simulator has no context length: only max_tokens' cap. */
	mi.max_model_len = backend.physical ?
	    model_backend_context(&backend) : 0;
	mi.backend = backend.name;
	mi.chat_template = GEN_CHAT_TEMPLATE;
	ts_buf_init(&b, 64 * 1024);
	if (openai_encode_models(&b, &mi) == TS_OK &&
	    ts_buf_append(&b, "\n", 1) == TS_OK &&
	    write_head(c, 200, "application/json", 0, NULL) == TS_OK)
		conn_write_flush(c, b.p, b.len);
	ts_buf_free(&b);
}

static int
is_loopback(const char *addr)
{
	return strcmp(addr, "127.0.0.1") == 0 || strcmp(addr, "::1") == 0 ||
	    strcmp(addr, "::ffff:127.0.0.1") == 0;
}

/*
 * A request is local when it comes from the loopback address and no proxy
 * forwarded it. A reverse proxy on the same host connects from 127.0.0.1
 * too; it says so with X-Forwarded-For (de facto), Forwarded (RFC 7239)
 * or X-Real-IP (nginx), which lighttpd passes as HTTP_* params (RFC 3875
 * section 4.1.18). Any of them, whatever it names (127.0.0.1 included: a
 * client can send its own), makes the request not local. Returns 1 or 0.
 */
static int
is_local_request(FCGX_Request *req)
{
	static const char *const forwarded[] = { "HTTP_X_FORWARDED_FOR",
	    "HTTP_FORWARDED", "HTTP_X_REAL_IP" };
	size_t i;

	if (!is_loopback(param(req, "REMOTE_ADDR")))
		return 0;
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		if (FCGX_GetParam(forwarded[i], req->envp) != NULL)
			return 0;
	return 1;
}

/* GET /_debug/generated[?id=N]: one stream's counts, loopback only. */
static void
handle_debug_generated(struct conn *c)
{
	const char *qs = param(c->req, "QUERY_STRING");
	struct state_record rec;
	struct http_error err;
	unsigned long long id = 0;
	const char *status;
	char idbuf[24];
	json_t *obj;

	if (!is_local_request(c->req)) {
		http_error_set(&err, 403, "permission_error", "loopback_only",
		    "/_debug/ is reachable only from 127.0.0.1, not through a "
		    "proxy");
		send_error(c, &err, NULL);
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
			send_error(c, &err, NULL);
			return;
		}
	} else if (*qs != '\0') {
		http_error_set(&err, 400, "invalid_request_error",
		    "invalid_query", "the only parameter is id=<stream id>");
		send_error(c, &err, NULL);
		return;
	}
	if (state_lookup(state, id, &rec) != TS_OK) {
		http_error_set(&err, 404, "not_found_error", "unknown_stream",
		    id ? "no stream with id %llu is held (unknown or older "
		    "than the last %u streams)" : "no stream has started yet",
		    id, STATE_CAPACITY);
		send_error(c, &err, NULL);
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
	    "total_generated", (json_int_t)state_total_generated(state),
	    "total_streams", (json_int_t)state_total_streams(state));
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
		json_object_set_new(obj, "cancel_cause", rec.cause >= 1 &&
		    rec.cause <= 3 ? json_string(causes[rec.cause]) :
		    json_null());
		/* From the failed write (or hang-up) to the sequence leaving
		 * the batch: at most one decode step. */
		json_object_set_new(obj, "cancel_to_leave_ms", rec.cause ==
		    STATE_CAUSE_CLIENT_GONE || rec.cause ==
		    STATE_CAUSE_WRITE_STALL ? json_real(
		    (double)rec.leave_us / 1000.0) : json_null());
		engine_stats(engine, &es);
		json_object_set_new(obj, "engine", json_pack(
		    "{s:s,s:I,s:I,s:I,s:I,s:b}", "backend", backend.name,
		    "pid", (json_int_t)getpid(),
		    "running", (json_int_t)es.running, "waiting",
		    (json_int_t)es.waiting, "max_num_seqs",
		    (json_int_t)opt.engine.max_num_seqs, "no_cancel",
		    opt.engine.no_cancel));
	}
	if (obj != NULL && rec.owner_gone)
		json_object_set_new(obj, "error", json_string(
		    "the responder process that ran it has exited"));
	send_json(c, 200, obj, 0);
}

/*
 * GET /metrics: Prometheus text exposition format 0.0.4, over all
 * responder processes (README "Metrics"). Loopback only, like /_debug.
 */
static void
handle_metrics(struct conn *c)
{
	struct http_error err;
	struct ts_buf b;

	if (!is_local_request(c->req)) {
		http_error_set(&err, 403, "permission_error", "loopback_only",
		    "/metrics is reachable only from 127.0.0.1, not through a "
		    "proxy");
		send_error(c, &err, NULL);
		return;
	}
	ts_buf_init(&b, 1u << 20);
	if (metrics == NULL || metrics_render(metrics, &b) != TS_OK) {
		http_error_set(&err, 500, "server_error", "metrics_unavailable",
		    "the metrics could not be rendered");
		send_error(c, &err, NULL);
	} else if (write_head(c, 200, "text/plain; version=0.0.4; "
	    "charset=utf-8", 0, NULL) == TS_OK) {
		conn_write_flush(c, b.p, b.len);
	}
	ts_buf_free(&b);
}

/*
 * The headers a CORS preflight may allow (Fetch standard, "CORS-preflight
 * request"): the ones the page asks for when they are a plain list of
 * header names (SDKs send their own, e.g. the OpenAI SDK's X-Stainless-*),
 * else the ones tokstream reads. A borrowed static string or `asked`.
 */
static const char *
cors_request_headers(const char *asked)
{
	size_t n = strlen(asked);

	if (n == 0 || n > 512 || strspn(asked, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_, ") != n)
		return "Content-Type, Last-Event-ID, Authorization";
	return asked;
}

/* Routes one request by path and method. */
static void
handle(struct worker *w)
{
	struct conn c;
	struct http_error err;
	const char *method = param(&w->req, "REQUEST_METHOD");
	const char *uri = param(&w->req, "REQUEST_URI");
	size_t plen = strcspn(uri, "?");
	int64_t t0 = engine_now_ns();

	memset(&c, 0, sizeof(c));
	c.w = w;
	c.req = &w->req;
#define PATH_IS(s) (plen == sizeof(s) - 1 && memcmp(uri, s, plen) == 0)
	c.cors = opt.cors_origin[0] != '\0' && (PATH_IS("/stream") ||
	    PATH_IS("/generate") || PATH_IS("/health") ||
	    PATH_IS("/v1/completions") || PATH_IS("/v1/chat/completions") ||
	    PATH_IS("/v1/models"));
	if (c.cors && strcmp(method, "OPTIONS") == 0) {
		/* CORS preflight (Fetch standard): a POST of JSON, or a GET
		 * with Last-Event-ID, from a page of another origin. */
		char allow[700];

		snprintf(allow, sizeof(allow), "Access-Control-Allow-Methods: "
		    "GET, POST, OPTIONS\r\nAccess-Control-Allow-Headers: %s\r\n"
		    "Access-Control-Max-Age: 600\r\n", cors_request_headers(
		    param(&w->req, "HTTP_ACCESS_CONTROL_REQUEST_HEADERS")));
		write_head(&c, 204, NULL, 0, allow);
	} else if (atomic_load(&stopping)) {
		http_error_set(&err, 503, "server_error", "shutdown",
		    "the server is shutting down");
		send_error(&c, &err, "Retry-After: 1\r\n");
	} else if (PATH_IS("/stream")) {
		if (strcmp(method, "GET") == 0)
			handle_stream(&c, t0);
		else
			goto not_allowed_get;
	} else if (PATH_IS("/generate")) {
		if (strcmp(method, "POST") == 0) {
			handle_generate(&c, t0);
		} else {
			http_error_set(&err, 405, "invalid_request_error",
			    "method_not_allowed", "%s /generate is not "
			    "allowed; use POST", method);
			send_error(&c, &err, "Allow: POST\r\n");
		}
	} else if (PATH_IS("/_debug/generated")) {
		if (strcmp(method, "GET") == 0)
			handle_debug_generated(&c);
		else
			goto not_allowed_get;
	} else if (PATH_IS("/v1/completions") ||
	    PATH_IS("/v1/chat/completions")) {
		if (strcmp(method, "POST") == 0) {
			handle_v1_generate(&c, t0, PATH_IS("/v1/completions") ?
			    OPENAI_COMPLETIONS : OPENAI_CHAT);
		} else {
			http_error_set(&err, 405, "invalid_request_error",
			    "method_not_allowed", "%s %.*s is not allowed; use "
			    "POST", method, (int)plen, uri);
			send_error_v1(&c, &err, "Allow: POST\r\n", 0);
		}
	} else if (PATH_IS("/v1/models")) {
		if (strcmp(method, "GET") == 0) {
			handle_v1_models(&c);
		} else {
			/* /v1 errors carry "param" (OpenAI's shape) */
			http_error_set(&err, 405, "invalid_request_error",
			    "method_not_allowed", "%s /v1/models is not "
			    "allowed; use GET", method);
			send_error_v1(&c, &err, "Allow: GET\r\n", 0);
		}
	} else if (plen >= 4 && memcmp(uri, "/v1/", 4) == 0) {
		http_error_set(&err, 404, "invalid_request_error",
		    "unknown_url", "no endpoint at %.*s; tokstream serves "
		    "/v1/completions, /v1/chat/completions and /v1/models",
		    (int)(plen > 128 ? 128 : plen), uri);
		send_error_v1(&c, &err, NULL, 0);
	} else if (PATH_IS("/metrics")) {
		if (strcmp(method, "GET") == 0)
			handle_metrics(&c);
		else
			goto not_allowed_get;
	} else if (PATH_IS("/health")) {
		if (strcmp(method, "GET") == 0)
			send_json(&c, 200, json_pack("{s:s}", "status", "ok"),
			    0);
		else
			goto not_allowed_get;
	} else {
		http_error_set(&err, 404, "not_found_error", "unknown_path",
		    "no endpoint at %.*s; try GET /stream?prompt=hello, "
		    "POST /generate or GET /_debug/generated",
		    (int)(plen > 128 ? 128 : plen), uri);
		send_error(&c, &err, NULL);
	}
	return;
not_allowed_get:
	http_error_set(&err, 405, "invalid_request_error",
	    "method_not_allowed", "%s %.*s is not allowed; use GET", method,
	    (int)(plen > 128 ? 128 : plen), uri);
	send_error(&c, &err, "Allow: GET\r\n");
#undef PATH_IS
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	if (FCGX_InitRequest(&w->req, listen_fd, 0) != 0)
		return NULL;
	w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->evfd < 0) {
		fprintf(stderr, "tokstream-fcgi: eventfd: %s\n",
		    strerror(errno));
		return NULL;
	}
	ts_buf_init(&w->out, 1u << 20);
	while (!atomic_load(&stopping)) {
		if (FCGX_Accept_r(&w->req) < 0)
			break;
		uint64_t junk;

		atomic_fetch_add(&active_requests, 1);
		if (read(w->evfd, &junk, sizeof(junk)) < 0 &&
		    errno != EAGAIN)
			break;
		handle(w);
		FCGX_Finish_r(&w->req);
		atomic_fetch_sub(&active_requests, 1);
	}
	ts_buf_free(&w->out);
	return NULL;
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: tokstream-fcgi [options]\n"
"FastCGI responder for tokstream; normally started by spawn-fcgi (it\n"
"accepts on fd 0) or with --socket.\n"
"\n"
"  -t, --threads N              request threads (default %d); each open\n"
"                               stream holds one; keep it above\n"
"                               max-num-seqs + max-waiting\n"
"      --max-num-seqs N         slots: sequences decoded together (default %d)\n"
"      --max-waiting N          waiting queue cap; beyond it 429 (default %d)\n"
"      --load-factor F          step and prefill time factor at max-num-seqs,\n"
"                               linear from 1 at one sequence (default %.1f)\n"
"      --jitter-prefill-ms MS   prefill time standard deviation (default 0)\n"
"      --jitter-tpot-ms MS      decode step standard deviation (default 0)\n"
"      --seed N                 jitter PRNG seed (default fixed)\n"
"      --write-stall-ms MS      cancel a stream whose write has been blocked\n"
"                               this long, 0 = never (default %.0f)\n"
"      --no-cancel              demo only: keep generating for clients that\n"
"                               left (the failure mode tokstream avoids)\n"
"      --served-model-name NAME the /v1 model name (default tokstream-sim,\n"
"                               or the --model file's name)\n"
"      --backend sim|llama      what makes the tokens (default sim: the\n"
"                               deterministic simulator and latency model)\n"
"      --model FILE             llama2.c checkpoint (--backend llama)\n"
"      --tokenizer FILE         llama2.c tokenizer.bin (--backend llama)\n"
"      --model-threads N        compute threads, 0 = one per CPU (default 0)\n"
"      --model-context N        positions per sequence (KV cache), 0 = the\n"
"                               model's seq_len (default 0)\n"
"  -d, --state-dir DIR          state file directory (default %s)\n"
"  -s, --socket PATH            listen on this unix socket, not fd 0\n"
"  -b, --backlog N              listen backlog with --socket (default 1024)\n"
"  -l, --log FILE               append log lines to FILE (spawn-fcgi sends\n"
"                               stderr to /dev/null)\n"
"      --prefill-base-ms MS     prefill cost per request (default %.0f)\n"
"      --prefill-per-token-ms MS  prefill cost per prompt token (default %.2f)\n"
"      --tpot-ms MS             decode step time, TPOT (default %.0f)\n"
"      --keepalive-ms MS        SSE comment interval while silent, 0 = off\n"
"                               (default %.0f)\n"
"      --retry-ms MS            SSE retry sent at stream start: the client's\n"
"                               reconnection delay (default %d)\n"
"      --cors-origin ORIGIN     Access-Control-Allow-Origin of /stream,\n"
"                               /generate, /health (default *; \"\" = none)\n"
"  -h, --help                   this text\n"
"  -V, --version                version\n",
	    DEFAULT_THREADS, ENGINE_DEFAULT_MAX_NUM_SEQS,
	    ENGINE_DEFAULT_MAX_WAITING, ENGINE_DEFAULT_LOAD_FACTOR,
	    ENGINE_DEFAULT_WRITE_STALL_MS, DEFAULT_STATE_DIR, ENGINE_DEFAULT_PREFILL_BASE_MS,
	    ENGINE_DEFAULT_PREFILL_PER_TOKEN_MS, ENGINE_DEFAULT_TPOT_MS,
	    ENGINE_DEFAULT_KEEPALIVE_MS, DEFAULT_RETRY_MS);
}

/* Parses a number of ms in [0, max]; exits with a clear message if not. */
static double
parse_ms(const char *name, const char *s, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > max) {
		fprintf(stderr, "tokstream-fcgi: --%s must be a number of "
		    "milliseconds from 0 to %.0f, not '%s'\n", name, max, s);
		exit(2);
	}
	return v;
}

static int
parse_int(const char *name, const char *s, int min, int max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "tokstream-fcgi: --%s must be an integer from "
		    "%d to %d, not '%s'\n", name, min, max, s);
		exit(2);
	}
	return (int)v;
}

static void
parse_options(int argc, char **argv)
{
	enum { O_PB = 256, O_PT, O_TPOT, O_KA, O_RETRY, O_CORS, O_SEQS,
	    O_WAIT, O_LOAD, O_JP, O_JT, O_SEED, O_STALL, O_NOCANCEL, O_BACKEND,
	    O_MODEL, O_TOKENIZER, O_MTHREADS, O_MCTX, O_SERVED };
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "backlog", required_argument, NULL, 'b' },
		{ "log", required_argument, NULL, 'l' },
		{ "prefill-base-ms", required_argument, NULL, O_PB },
		{ "prefill-per-token-ms", required_argument, NULL, O_PT },
		{ "tpot-ms", required_argument, NULL, O_TPOT },
		{ "keepalive-ms", required_argument, NULL, O_KA },
		{ "retry-ms", required_argument, NULL, O_RETRY },
		{ "cors-origin", required_argument, NULL, O_CORS },
		{ "max-num-seqs", required_argument, NULL, O_SEQS },
		{ "max-waiting", required_argument, NULL, O_WAIT },
		{ "load-factor", required_argument, NULL, O_LOAD },
		{ "jitter-prefill-ms", required_argument, NULL, O_JP },
		{ "jitter-tpot-ms", required_argument, NULL, O_JT },
		{ "seed", required_argument, NULL, O_SEED },
		{ "write-stall-ms", required_argument, NULL, O_STALL },
		{ "no-cancel", no_argument, NULL, O_NOCANCEL },
		{ "backend", required_argument, NULL, O_BACKEND },
		{ "served-model-name", required_argument, NULL, O_SERVED },
		{ "model", required_argument, NULL, O_MODEL },
		{ "tokenizer", required_argument, NULL, O_TOKENIZER },
		{ "model-threads", required_argument, NULL, O_MTHREADS },
		{ "model-context", required_argument, NULL, O_MCTX },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	opt.threads = DEFAULT_THREADS;
	opt.state_dir = DEFAULT_STATE_DIR;
	opt.socket_path = NULL;
	opt.backlog = 1024;
	engine_config_defaults(&opt.engine);
	opt.retry_ms = DEFAULT_RETRY_MS;
	opt.cors_origin = "*";
	opt.backend = "sim";
	while ((ch = getopt_long(argc, argv, "t:d:s:b:l:hV", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 't':
			opt.threads = parse_int("threads", optarg, 1,
			    MAX_THREADS);
			break;
		case 'd': opt.state_dir = optarg; break;
		case 's': opt.socket_path = optarg; break;
		case 'l': opt.log_path = optarg; break;
		case 'b':
			opt.backlog = parse_int("backlog", optarg, 1, 65535);
			break;
		case O_PB:
			opt.engine.lat.prefill_base_ms = parse_ms("prefill-base-ms",
			    optarg, HTTP_MAX_PREFILL_MS);
			break;
		case O_PT:
			opt.engine.lat.prefill_per_token_ms = parse_ms(
			    "prefill-per-token-ms", optarg, 1000);
			break;
		case O_TPOT:
			opt.engine.lat.tpot_ms = parse_ms("tpot-ms", optarg,
			    HTTP_MAX_TPOT_MS);
			break;
		case O_KA:
			opt.engine.lat.keepalive_ms = parse_ms("keepalive-ms", optarg,
			    600000);
			break;
		case O_CORS:
			if (strpbrk(optarg, "\r\n") != NULL ||
			    strlen(optarg) > 256) {
				fprintf(stderr, "tokstream-fcgi: --cors-origin "
				    "must be one line of at most 256 bytes\n");
				exit(2);
			}
			opt.cors_origin = optarg;
			break;
		case O_SEQS:
			opt.engine.max_num_seqs = (uint32_t)parse_int(
			    "max-num-seqs", optarg, 1, ENGINE_MAX_SEQS);
			break;
		case O_WAIT:
			opt.engine.max_waiting = (uint32_t)parse_int(
			    "max-waiting", optarg, 0, 65536);
			break;
		case O_LOAD:
			opt.engine.load_factor_max = parse_ms("load-factor",
			    optarg, 100);
			if (opt.engine.load_factor_max < 1) {
				fprintf(stderr, "tokstream-fcgi: --load-factor "
				    "must be from 1 to 100\n");
				exit(2);
			}
			break;
		case O_JP:
			opt.engine.jitter_prefill_ms = parse_ms(
			    "jitter-prefill-ms", optarg, 60000);
			break;
		case O_JT:
			opt.engine.jitter_tpot_ms = parse_ms("jitter-tpot-ms",
			    optarg, 60000);
			break;
		case O_SEED:
			opt.engine.seed = (uint64_t)parse_int("seed", optarg,
			    0, INT_MAX);
			break;
		case O_STALL:
			opt.engine.write_stall_ms = parse_ms("write-stall-ms",
			    optarg, 3600000);
			break;
		case O_NOCANCEL:
			opt.engine.no_cancel = 1;
			break;
		case O_BACKEND:
			if (strcmp(optarg, "sim") != 0 &&
			    strcmp(optarg, "llama") != 0) {
				fprintf(stderr, "tokstream-fcgi: --backend is "
				    "sim or llama, not '%s'\n", optarg);
				exit(2);
			}
			opt.backend = optarg;
			break;
		case O_MODEL: opt.model_path = optarg; break;
		case O_SERVED:
			if (*optarg == '\0' || strlen(optarg) > 128) {
				fprintf(stderr, "tokstream-fcgi: "
				    "--served-model-name is 1 to 128 bytes\n");
				exit(2);
			}
			opt.served_model = optarg;
			break;
		case O_TOKENIZER: opt.tokenizer_path = optarg; break;
		case O_MTHREADS:
			opt.model_threads = parse_int("model-threads", optarg,
			    0, 256);
			break;
		case O_MCTX:
			opt.model_context = parse_int("model-context", optarg,
			    0, 1 << 20);
			break;
		case O_RETRY:
			opt.retry_ms = (unsigned long)parse_int("retry-ms",
			    optarg, 0, 3600000);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("tokstream-fcgi %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (strcmp(opt.backend, "llama") == 0 &&
	    (opt.model_path == NULL || opt.tokenizer_path == NULL)) {
		fprintf(stderr, "tokstream-fcgi: --backend llama needs --model "
		    "FILE and --tokenizer FILE (tokstream-mkmodel makes a "
		    "small pair)\n");
		exit(2);
	}
	if (strcmp(opt.backend, "sim") == 0 &&
	    (opt.model_path != NULL || opt.tokenizer_path != NULL)) {
		fprintf(stderr, "tokstream-fcgi: --model and --tokenizer go "
		    "with --backend llama\n");
		exit(2);
	}
	if (optind < argc) {
		fprintf(stderr, "tokstream-fcgi: unexpected argument '%s'\n",
		    argv[optind]);
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	struct worker *workers;
	pthread_attr_t attr;
	sigset_t sigs;
	char errbuf[512];
	int i, sig, started = 0, accepting = 0;
	socklen_t optlen = sizeof(accepting);

	/* Block the stop signals first, in every thread to come, so one that
	 * arrives while starting is not lost to FCGX_Init's flag-only
	 * handler but waits for sigwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	parse_options(argc, argv);
	if (opt.log_path != NULL) {
		int fd = open(opt.log_path, O_WRONLY | O_CREAT | O_APPEND |
		    O_CLOEXEC, 0644);

		if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
			fprintf(stderr, "tokstream-fcgi: cannot open log %s: "
			    "%s\n", opt.log_path, strerror(errno));
			return 1;
		}
		close(fd);
		setvbuf(stderr, NULL, _IOLBF, 0);
	}
	if (state_open(&state, opt.state_dir, errbuf, sizeof(errbuf)) !=
	    TS_OK) {
		/* A read-only or full disk must not stop the service: count
		 * in memory, and say so once. */
		fprintf(stderr, "tokstream-fcgi: %s; counting in this "
		    "process's memory instead (/_debug/generated sees only "
		    "its streams; fix the disk or set --state-dir)\n",
		    errbuf);
		if (state_open_memory(&state) != TS_OK) {
			fprintf(stderr, "tokstream-fcgi: cannot map memory for "
			    "the counters\n");
			return 1;
		}
	}
	if (metrics_open(&metrics, opt.state_dir, errbuf, sizeof(errbuf)) !=
	    TS_OK) {
		fprintf(stderr, "tokstream-fcgi: %s; /metrics counts this "
		    "process only\n", errbuf);
		if (metrics_open_memory(&metrics) != TS_OK)
			metrics = NULL;   /* every metrics_* call is a no-op */
	}
	if (FCGX_Init() != 0) {
		fprintf(stderr, "tokstream-fcgi: FCGX_Init failed\n");
		return 1;
	}
	if (opt.socket_path != NULL) {
		listen_fd = FCGX_OpenSocket(opt.socket_path, opt.backlog);
		if (listen_fd < 0) {
			fprintf(stderr, "tokstream-fcgi: cannot listen on "
			    "%s\n", opt.socket_path);
			return 1;
		}
	} else if (getsockopt(0, SOL_SOCKET, SO_ACCEPTCONN, &accepting,
	    &optlen) != 0 || !accepting) {
		fprintf(stderr, "tokstream-fcgi: fd 0 is not a listening "
		    "socket; start it with spawn-fcgi (see scripts/"
		    "tokstream-ctl) or pass --socket PATH\n");
		return 1;
	}
	/* FCGX_Init installed its own handlers (NOTES "libfcgi traps");
	 * SIGTERM stays blocked and is taken by sigwait below. */
	signal(SIGPIPE, SIG_IGN);
	started_at = time(NULL);
	if (strcmp(opt.backend, "llama") == 0) {
		struct model_options mo;

		model_options_defaults(&mo);
		mo.threads = (uint32_t)opt.model_threads;
		mo.context = (uint32_t)opt.model_context;
		mo.max_batch = opt.engine.max_num_seqs;
		if (model_backend_open(&backend, opt.model_path,
		    opt.tokenizer_path, &mo, errbuf, sizeof(errbuf)) !=
		    TS_OK) {
			fprintf(stderr, "tokstream-fcgi: --backend llama: %s\n",
			    errbuf);
			return 1;
		}
	} else {
		backend = engine_backend_sim;
	}
	if (engine_create(&engine, &opt.engine, &backend, state) !=
	    TS_OK) {
		fprintf(stderr, "tokstream-fcgi: cannot start the engine\n");
		return 1;
	}
	{
		struct engine_hooks h = { NULL, hook_tokens, hook_admit,
		    hook_finish, hook_counts };

		engine_set_hooks(engine, &h);
	}
	if ((uint32_t)opt.threads < opt.engine.max_num_seqs +
	    opt.engine.max_waiting + 4)
		fprintf(stderr, "tokstream-fcgi: warning: %d threads for %u "
		    "slots + %u waiting: requests beyond the threads wait "
		    "unseen in the listen queue instead of getting 429; raise "
		    "--threads\n", opt.threads, opt.engine.max_num_seqs,
		    opt.engine.max_waiting);

	workers = xcalloc((size_t)opt.threads, sizeof(*workers));
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK_BYTES);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < opt.threads; i++) {
		if (pthread_create(&workers[i].thread, &attr, worker_main,
		    &workers[i]) == 0)
			started++;
	}
	pthread_attr_destroy(&attr);
	if (started == 0) {
		fprintf(stderr, "tokstream-fcgi: cannot start threads\n");
		return 1;
	}
	if (backend.physical)
		fprintf(stderr, "tokstream-fcgi: backend %s: compute is real, "
		    "the latency model (TPOT, prefill) is off\n",
		    backend.name);
	fprintf(stderr, "tokstream-fcgi %s: pid %ld, %d threads, state %s/%s,"
	    " TPOT %.1f ms, prefill %.1f ms + %.3f ms/token, %u slots, "
	    "%u waiting%s\n",
	    PACKAGE_VERSION, (long)getpid(), started, opt.state_dir,
	    STATE_FILE_NAME, opt.engine.lat.tpot_ms, opt.engine.lat.prefill_base_ms,
	    opt.engine.lat.prefill_per_token_ms, opt.engine.max_num_seqs,
	    opt.engine.max_waiting, opt.engine.no_cancel ?
	    ", NO CANCELLATION (--no-cancel)" : "");

	/* The main thread only waits for a stop signal. */
	while (sigwait(&sigs, &sig) != 0 || sig == 0)
		;
	atomic_store(&stopping, 1);
	engine_shutdown(engine);
	/* Streams in flight end with an error event and [DONE] within one
	 * wake-up (engine_run polls `stopping`); give them a grace time. */
	for (i = 0; i < SHUTDOWN_GRACE_MS / 10 &&
	    atomic_load(&active_requests) > 0; i++) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "tokstream-fcgi: pid %ld stopped by signal %d\n",
	    (long)getpid(), sig);
	/* Idle workers are blocked in accept(): exit without joining. */
	_exit(0);
}
