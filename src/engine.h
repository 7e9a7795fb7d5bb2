/*
 * engine.h - the serving engine of one responder process: slots, a
 * waiting queue and one decode loop that runs continuous batching over a
 * backend. No libfcgi here: request threads only relay (they take their
 * sequence's tokens and write them), so the engine can be driven by unit
 * tests with a synthetic clock.
 *
 * Model (README "Serving engine"), after vLLM's scheduler and
 * llm-d-inference-sim's latency model:
 *   - max_num_seqs slots. A request waits in a FIFO queue (at most
 *     max_waiting; beyond that engine_submit refuses: HTTP 429) until a
 *     slot is free, then prefills.
 *   - Prefill takes prefill_ms x load factor (+ jitter) and yields the
 *     first token; it overlaps the running batch (as with chunked prefill)
 *     rather than stalling it. The sequence then joins the batch at its
 *     next step boundary.
 *   - Each decode step produces one token for every sequence in the batch
 *     and takes tpot_ms x load factor (+ jitter). The load factor grows
 *     linearly from 1 with one sequence to load_factor_max with
 *     max_num_seqs sequences in slots.
 *   - A sequence leaves when it finishes (max_tokens, an injected error)
 *     or is cancelled; a cancelled decoding sequence leaves at its next
 *     step boundary (the token of the step in flight is dropped) and its
 *     slot goes to the next waiting request at once.
 *   - Times are absolute deadlines on CLOCK_MONOTONIC: a late wake-up
 *     does not shift later tokens.
 * A request with its own tpot_ms (the lab's knob) decodes at its own
 * cadence, as if it ran on a model of that speed; requests at the server's
 * TPOT share the batch's step boundaries.
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gen_lm.h"
#include "ts.h"

struct state;

/* Server-wide latency model, milliseconds. */
struct engine_latency {
	double prefill_base_ms;       /* default 40 */
	double prefill_per_token_ms;  /* default 0.25 (4,000 prompt tok/s) */
	double tpot_ms;               /* default 20 (50 tokens/s) */
	double keepalive_ms;          /* default 1000; 0 disables comments */
};

#define ENGINE_DEFAULT_PREFILL_BASE_MS 40.0
#define ENGINE_DEFAULT_PREFILL_PER_TOKEN_MS 0.25
#define ENGINE_DEFAULT_TPOT_MS 20.0
#define ENGINE_DEFAULT_KEEPALIVE_MS 1000.0
#define ENGINE_DEFAULT_MAX_NUM_SEQS 64
#define ENGINE_DEFAULT_MAX_WAITING 64
#define ENGINE_DEFAULT_LOAD_FACTOR 1.0
#define ENGINE_DEFAULT_WRITE_STALL_MS 30000.0
#define ENGINE_MAX_SEQS 4096

/* The defaults above. */
void engine_latency_defaults(struct engine_latency *lat);

/* Modeled prefill time (TTFT) in ms for a prompt of `prompt_tokens`. */
double engine_prefill_ms(const struct engine_latency *lat,
    uint64_t prompt_tokens);

/* CLOCK_MONOTONIC now, in ns. */
int64_t engine_now_ns(void);

/* Engine settings; engine_config_defaults() fills the documented ones. */
struct engine_config {
	struct engine_latency lat;
	uint32_t max_num_seqs;     /* slots, 1..ENGINE_MAX_SEQS */
	uint32_t max_waiting;      /* waiting queue cap; 0 = no queue */
	double load_factor_max;    /* step time factor at max_num_seqs, >= 1 */
	double jitter_prefill_ms;  /* standard deviation, 0 = none */
	double jitter_tpot_ms;     /* standard deviation, 0 = none */
	uint64_t seed;             /* jitter PRNG seed */
	double write_stall_ms;     /* a write blocked this long cancels the
				    * sequence; 0 = never */
	int no_cancel;             /* demo of the failure mode: keep
				    * generating for clients that left */
};

void engine_config_defaults(struct engine_config *cfg);

/*
 * How a sequence samples (the OpenAI endpoints): `lm` 0 keeps the lab
 * generator (gen_next: no sampling parameters, never EOS), 1 uses the
 * backend's language model with `params` (gen_lm.h: temperature, top_p,
 * seed, ignore_eos).
 */
struct engine_sampling {
	int lm;
	struct gen_params params;
};

/*
 * The backend: what produces token ids. The simulator (gen.c, gen_lm.c)
 * is built in; the transformer of src/model/ plugs in here. The engine
 * serialises every call but seq_free's; with `physical` set it makes them
 * without holding its lock, since they take real time.
 */
struct engine_backend {
	void *impl;
	const char *name;          /* "sim", "llama": /v1/models, /_debug */
	int physical;              /* calls take real time: no latency model */
	int byte_tokens;           /* token texts may split a UTF-8
				    * character: always release text through
				    * gen_release (holdback) */
	uint32_t eos_ids[2];       /* ids that end a sequence ("stop");
				    * UINT32_MAX: unused */
	/* Starts a sequence for (prompt, len), borrowed for the call, and
	 * skips its first `skip` tokens (a resumed stream). For a physical
	 * backend this is the prefill. TS_ELIMIT: the prompt does not fit. */
	enum ts_err (*seq_start)(void *impl, const char *prompt, size_t len,
	    uint32_t skip, const struct engine_sampling *samp, void **seq);
	/* One forward pass for n sequences: ids[i] gets seqs[i]'s next
	 * token. Used for the token a prefill yields and for decode steps. */
	enum ts_err (*step)(void *impl, void *const *seqs, size_t n,
	    uint32_t *ids);
	/* Text of token `id`, borrowed for the backend's life. */
	const char *(*token_text)(void *impl, uint32_t id, size_t *len);
	void (*seq_free)(void *impl, void *seq);
};

/* The deterministic simulator of gen.h. */
extern const struct engine_backend engine_backend_sim;

/* Why a sequence ended. */
enum engine_finish {
	ENGINE_FINISH_NONE = 0,     /* still going */
	ENGINE_FINISH_LENGTH,       /* max_tokens reached */
	ENGINE_FINISH_STOP,         /* an EOS token or a stop string */
	ENGINE_FINISH_CANCELLED,    /* the client left ("abort") */
	ENGINE_FINISH_ERROR,        /* injected error or backend failure */
	ENGINE_FINISH_SHUTDOWN      /* the server is stopping */
};

/* One sequence to generate. */
struct engine_request {
	const char *prompt;       /* copied by engine_submit */
	size_t prompt_len;        /* bytes */
	uint64_t prompt_tokens;   /* as counted by gen_tokenize */
	uint32_t max_tokens;
	double prefill_ms;        /* this request's prefill time, unscaled */
	double tpot_ms;           /* < 0: the server's TPOT (shared steps) */
	int32_t error_after;      /* -1, or fail after this many tokens */
	uint32_t start_index;     /* resume: tokens 0..start_index-1 were
				   * sent before; recomputed, not counted */
	int64_t t0_ns;            /* CLOCK_MONOTONIC arrival of the request */
	const struct engine_sampling *sampling;  /* copied; NULL: the lab
				   * generator */
	const char *stop[4];      /* stop strings (gen_stop.h limits),
				   * copied; matched across tokens */
	size_t stop_len[4];
	size_t nstop;
	int kind;                 /* enum state_kind of its record */
	uint64_t resumed_from;    /* state record fields (state_begin) */
	uint64_t key;
	int notify_fd;            /* eventfd written on every token and at
				   * the end; -1 = none (poll) */
	/* Called (engine thread, lock held) when a write has been blocked
	 * write_stall_ms: must make the blocked write fail. May be NULL. */
	void (*on_stall)(void *ctx);
	void *ctx;
};

/*
 * What a relay sees of its sequence (engine_seq_view). With `released`
 * set the text to send is not the token texts but chunks[i] (the text
 * token i released: stop strings and incomplete UTF-8 are held back, so a
 * chunk may be empty) and, once finished, `tail` (what was held at the
 * end). Everything before `produced` (and tail once `finish` is set) is
 * final and stays valid until engine_release.
 */
struct engine_view {
	uint32_t produced;          /* token ids ids[0..produced) are final */
	const uint32_t *ids;        /* token i is index start_index + i */
	int released;
	const char *const *chunks;
	const uint32_t *chunk_lens;
	const char *tail;
	size_t tail_len;
	uint32_t generated;         /* tokens the engine made, EOS included */
	enum engine_finish finish;  /* NONE while still going */
	int in_slot;                /* 0 while waiting for a slot */
};

struct engine;
struct engine_seq;

/*
 * Creates an engine over `backend` and starts its thread. `st` (may be
 * NULL) gets the per-stream counts. Returns TS_OK, TS_EINVAL for a bad
 * config or TS_ESYS if the thread cannot start.
 */
enum ts_err engine_create(struct engine **out, const struct engine_config
    *cfg, const struct engine_backend *backend, struct state *st);

/* Creates an engine without a thread: the caller drives engine_advance
 * with its own clock (unit tests). */
enum ts_err engine_create_manual(struct engine **out,
    const struct engine_config *cfg, const struct engine_backend *backend,
    struct state *st);

/* Stops the thread (if any) and frees everything. Sequences still held by
 * relays must have been released. Accepts NULL. */
void engine_destroy(struct engine *e);

/*
 * Queues a request and starts its state record (state_begin). Returns
 * TS_OK with *out (release it with engine_release), TS_ELIMIT when the
 * waiting queue is full (answer 429; no record is made), or TS_ETIMEDOUT
 * when the engine is shutting down (503).
 */
enum ts_err engine_submit(struct engine *e, const struct engine_request *r,
    struct engine_seq **out);

/* The sequence's state record id (its X-Request-Id); 0 without a state
 * file. */
uint64_t engine_seq_id(const struct engine_seq *s);

/* The sequence's progress, read without blocking the engine. */
void engine_seq_view(struct engine_seq *s, struct engine_view *v);

/* Text of a token id, borrowed for the engine's life. */
const char *engine_token_text(const struct engine *e, uint32_t id,
    size_t *len);

/*
 * The relay reports each token it delivered (written and flushed), and
 * brackets each write with engine_write_begin/end so the engine can tell
 * a stalled reader (README "Write stalls").
 */
void engine_delivered(struct engine_seq *s, uint32_t delivered);
void engine_write_begin(struct engine_seq *s, int64_t now_ns);
void engine_write_end(struct engine_seq *s);

/*
 * The client is gone (a failed write or a hang-up seen at `now_ns`): the
 * sequence leaves the queue at once, or the batch at its next step
 * boundary, unless the engine runs with no_cancel.
 */
void engine_cancel(struct engine *e, struct engine_seq *s, int64_t now_ns);

/*
 * The relay is done with the sequence. The record in the state file is
 * closed (status, wasted tokens, timings) by whichever of the relay and
 * the engine lets go last.
 */
void engine_release(struct engine *e, struct engine_seq *s);

/* Ends every sequence with ENGINE_FINISH_SHUTDOWN and refuses new ones. */
void engine_shutdown(struct engine *e);

/* Counts of this engine: sequences in slots, and waiting. */
struct engine_stats {
	uint32_t running;          /* in slots: prefill or decode */
	uint32_t waiting;
	uint64_t steps;            /* decode steps run */
	uint64_t generated;        /* tokens produced */
};
void engine_stats(struct engine *e, struct engine_stats *out);

/*
 * Hooks the relay layer installs for metrics. Called on the engine thread
 * (lock held) or from engine_release; NULL members are skipped.
 */
struct engine_hooks {
	void *ctx;
	void (*on_tokens)(void *ctx, uint32_t n);
	/* A sequence took its slot after waiting queue_ns. */
	void (*on_admit)(void *ctx, int64_t queue_ns);
	/* A sequence ended for good (both sides let go). */
	void (*on_finish)(void *ctx, enum engine_finish f, uint32_t produced,
	    uint32_t wasted);
	/* running or waiting changed */
	void (*on_counts)(void *ctx, uint32_t running, uint32_t waiting);
};
void engine_set_hooks(struct engine *e, const struct engine_hooks *h);

/*
 * Manual drive (engine_create_manual): runs everything due at `now_ns`
 * (cancellations, admissions, prefill ends, decode steps) and returns the
 * time of the next event, or INT64_MAX when idle.
 */
int64_t engine_advance(struct engine *e, int64_t now_ns);

/* The load factor for n sequences in slots (1 <= factor <=
 * load_factor_max). */
double engine_load_factor(const struct engine_config *cfg, uint32_t n);

#endif /* ENGINE_H */
