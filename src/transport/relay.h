/*
 * transport/relay.h - what carries a sequence's tokens from the engine to a
 * client: turns the ids the engine publishes into text (text/release.h:
 * stop strings cut, incomplete UTF-8 held back, the same way the engine
 * decides that a stop string ended the sequence), hands each token's text
 * to the response's encoder (an SSE event of /stream or /v1, or the
 * growing answer of POST /generate), adds keep-alives while the stream is
 * silent (queue, prefill), and the end ([DONE], an error event, the JSON
 * answer). It does no I/O: relay_pump fills a buffer, whoever drives it
 * writes the buffer and reports back with relay_flushed or relay_gone.
 * relay_run is the driver that blocks on the request's own connection.
 *
 * TTFT and ITL (the metrics' histograms) are clocked when a token event's
 * bytes have been written, not when the engine made the token; E2E when
 * the end has been written.
 */
#ifndef TS_TRANSPORT_RELAY_H
#define TS_TRANSPORT_RELAY_H

#include <stdint.h>

#include "common/buf.h"
#include "engine/engine.h"
#include "text/release.h"

struct conn;
struct metrics;
struct relay;
struct reply;

/*
 * What a relay needs of the process that runs it, copied into each relay
 * by relay_init: the engine its sequences live in, the backend that names
 * their tokens, the metrics it clocks TTFT, ITL and E2E latency into, the
 * clock, and the keep-alive interval. The handlers fill it from their
 * server (handlers/server.h: server_relay_env); the unit tests from their
 * own engine and clock.
 */
struct relay_env {
	struct engine *engine;
	const struct engine_backend *backend;   /* the engine's */
	struct metrics *metrics;   /* NULL: every metrics_* is a no-op */
	int64_t (*now)(void);      /* CLOCK_MONOTONIC now, in ns */
	double keepalive_ms;       /* silence before a keep-alive; 0: none */
};

/* How one kind of response encodes (lab SSE, /v1 SSE, JSON answers). */
struct relay_ops {
	/* Token `index` (start_index + i) released (text, len): len may be 0
	 * (held back). Appends what it sends to out and sets *event when
	 * that is a token event (for TTFT and ITL). TS_OK, or an error that
	 * ends the stream (encoding failed). */
	enum ts_err (*token)(struct relay *r, struct ts_buf *out,
	    uint32_t index, const char *text, size_t len, int *event);
	/* Appends something the client ignores, so that lighttpd notices a
	 * client that left (docs/RELIABILITY.md "How a client that leaves is
	 * noticed"); NULL when the response cannot carry one. */
	enum ts_err (*keepalive)(struct relay *r, struct ts_buf *out);
	/* Appends the end for finish f (never CANCELLED: a client that left
	 * gets nothing more); v is the sequence's last view. */
	enum ts_err (*end)(struct relay *r, struct ts_buf *out,
	    enum engine_finish f, const struct engine_view *v);
	/* Frees the response state (r->resp); may be NULL. */
	void (*free)(struct relay *r);
	int tokens_reach_client;   /* token() writes to the client: a
				    * keep-alive is due only after silence */
	/* With several choices (relay_add_choice: the OpenAI API's n):
	 * appends what ends choice `choice` (its finish_reason), called as
	 * each one finishes, the last one too, before end(); NULL for
	 * responses of one choice (never called with one). */
	enum ts_err (*choice_end)(struct relay *r, struct ts_buf *out,
	    uint32_t choice, enum engine_finish f,
	    const struct engine_view *v);
};

/* relay_ops.keepalive of an SSE response: the comment ": keep-alive" in
 * a block of its own, which every SSE parser skips (WHATWG HTML 9.2). */
enum ts_err relay_sse_keepalive(struct relay *r, struct ts_buf *out);

/*
 * relay_ops.keepalive of an answer that is one JSON object: the 200 head
 * once (with X-Request-Id), then a newline, whitespace a JSON parser skips
 * before the value (RFC 8259 section 2).
 */
enum ts_err relay_json_keepalive(struct relay *r, struct ts_buf *out);

/* The most bytes one relay_pump may append: a whole JSON answer and its
 * head (the I/O threads' and relay_run's buffers; a /v1 answer is
 * bounded below it before its request is run: openai/cost.h). */
#define RELAY_OUT_MAX (8u << 20)

/* The most choices one relay carries (OPENAI_MAX_N). */
#define RELAY_MAX_CHOICES 16

/* One choice of a response: a sequence and its detokenizer. relay.c's. */
struct relay_choice {
	struct engine_seq *seq;
	struct release rel;
	uint32_t sent;                /* tokens given to ops->token */
	uint32_t unwritten;           /* tokens encoded, unwritten */
	uint32_t delivered;           /* tokens whose bytes were written */
	uint32_t events;              /* its token events, unwritten */
	int64_t last_token;           /* its last token event written: ITL
				       * is clocked per choice, as vLLM
				       * clocks it per sequence */
	int ended;                    /* its end is encoded */
};

enum relay_state {
	RELAY_MORE,     /* waiting for the engine (or time) */
	RELAY_DONE,     /* the end is in the buffer (or nothing is left to
			 * send: the client is gone) */
	RELAY_FAIL      /* the response cannot go on (an op failed:
			 * relay_fail_cause says why): cancel it */
};

/* One stream being relayed. The fields are relay.c's, but for resp. */
struct relay {
	struct relay_env env;         /* relay_init's copy */
	struct reply *reply;          /* borrowed from resp's owner */
	struct engine_seq *seq;       /* choice 0's: the request's id */
	const struct relay_ops *ops;
	void *resp;                   /* the encoder's state */
	struct relay_choice *ch;      /* nch choices, in index order */
	uint32_t nch;
	uint32_t choice;              /* the choice ops->token is called for */
	char stop[STOP_MAX][STOP_MAX_BYTES]; /* the stop strings' bytes,
				       * the relay's own copy (for more
				       * choices) */
	const char *stop_p[STOP_MAX]; /* stop[i], for release_init */
	size_t stop_len[STOP_MAX];
	size_t nstop;
	struct ts_buf piece;          /* one token's released text */
	uint32_t start_index;
	uint32_t events;              /* token events encoded, unwritten */
	int64_t keepalive_ns;         /* 0: none */
	int64_t t0;                   /* the request's arrival */
	int64_t last_write;           /* the last write that reaches the
				       * client (keep-alive clock) */
	int64_t last_token;           /* the last token event written, of
				       * any choice (0: none yet, TTFT) */
	int ended;                    /* the end is encoded */
	int ends_well;                /* ... and is a complete answer */
	enum ts_err fail;             /* what the op that failed returned
				       * (RELAY_FAIL), else TS_OK */
	int backlog;                  /* the last relay_pump stopped at its
				       * budget with more ready */
	int64_t hold_until;           /* relay_hold's: 0 none */
	int let_go;                   /* held, every choice ended: the
				       * sequences are released (ch[].seq
				       * and seq NULL), held_view kept */
	struct engine_view held_view; /* choice 0's end, without its ids */
};

/*
 * Starts relaying sequence s (held: relay_finish releases it) for the
 * request rp with the encoder ops/resp, in env (copied). The stop strings
 * (at most STOP_MAX of at most STOP_MAX_BYTES, text/stop.h) are copied
 * into the relay, for the detokenizer of every choice: the caller's
 * arrays need not outlive the call. TS_ELIMIT beyond those bounds,
 * TS_EINVAL for stop strings text/release.h refuses (the engine took
 * them, so neither happens).
 */
enum ts_err relay_init(struct relay *r, const struct relay_env *env,
    struct reply *rp, struct engine_seq *s, uint32_t start_index,
    const char *const stop[], const size_t stop_len[], size_t nstop,
    const struct relay_ops *ops, void *resp);

/*
 * Adds sequence s as the next choice (index r->nch) of the response, with
 * the same stop strings (the relay's copy). TS_ELIMIT beyond
 * RELAY_MAX_CHOICES. The relay holds s from now
 * on as it holds the first.
 */
enum ts_err relay_add_choice(struct relay *r, struct engine_seq *s);

/* Names the listener that hears of every choice's news. */
void relay_listen(struct relay *r, struct engine_listener *l);

/*
 * A pump's budget: per choice at most RELAY_PUMP_TOKENS tokens, and no
 * more tokens once RELAY_PUMP_BYTES were appended to out in this pump. A
 * relay that is behind (a late I/O thread, a client that was slow)
 * catches up over several pumps, each bounded, with its driver's other
 * streams pumped in between, not in one pump of up to max_tokens tokens
 * with their logprobs.
 */
#define RELAY_PUMP_TOKENS 256u
#define RELAY_PUMP_BYTES (64u * 1024u)

/* Appends to out what is ready at `now`, within the pump's budget:
 * tokens, a keep-alive when one is due, the end. relay_backlog says
 * whether it stopped at the budget. */
enum relay_state relay_pump(struct relay *r, struct ts_buf *out,
    int64_t now);

/* 1 when the last relay_pump stopped at its budget with tokens still
 * ready: the driver pumps again once out is written, without waiting for
 * news (none may come: the sequence may have finished). */
int relay_backlog(const struct relay *r);

/* The bytes relay_pump gave were written at `now`. */
void relay_flushed(struct relay *r, int64_t now);

/* A write failed or the client hung up (or stalled: `cause`) at `now`:
 * the sequence is cancelled (engine_cancel). */
void relay_gone(struct relay *r, int64_t now, enum engine_cause cause);

/*
 * After RELAY_FAIL, the cause to cancel with (relay_gone): the server
 * ended the stream, the client did not leave. ENGINE_CAUSE_OUTPUT_LIMIT
 * when the op that failed returned TS_ELIMIT (its output outgrew a
 * buffer), ENGINE_CAUSE_SERVER_ERROR for any other failure (encoding).
 */
enum engine_cause relay_fail_cause(const struct relay *r);

/* When relay_pump has something to do without news: the next keep-alive,
 * or INT64_MAX. */
int64_t relay_deadline(const struct relay *r);

/*
 * Holds the response open until `until` (ns, the relay's clock): its end
 * is not encoded before then even when every choice has finished, so the
 * connection stays open and silent, without keep-alives whatever its ops
 * (an injected timeout: its sequence ends at once, the client still
 * waits). Once every choice has ended the
 * relay releases their sequences (engine_release) instead of holding them
 * to the end, so a hold costs no slot nor a place in admission's count of
 * held streams. Its end op then sees choice 0's view without token ids
 * (produced, generated, finish). Called after relay_init, before the
 * relay is driven.
 */
void relay_hold(struct relay *r, int64_t until);

/* When a held response (relay_hold) may end: its `until` while it is
 * held, else INT64_MAX. Apart from relay_deadline: keep-alive deadlines
 * are the last write plus one constant interval, a hold's is not. */
int64_t relay_hold_deadline(const struct relay *r);

/* Releases the sequence and frees the encoder's state. */
void relay_finish(struct relay *r);

/*
 * The driver on the caller's own thread: pumps, writes, waits on the
 * connection (conn.h: wait, listener) until the response is complete or
 * the client is gone, then relay_finish. The unit tests drive handlers
 * through it with a fake connection; the server uses the I/O threads
 * (transport/io.h).
 */
void relay_run(struct conn *c, struct relay *r);

#endif /* TS_TRANSPORT_RELAY_H */
