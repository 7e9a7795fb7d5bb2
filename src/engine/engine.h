/*
 * engine/engine.h - the serving engine of one responder process: slots, a
 * waiting queue and one decode loop that runs continuous batching over a
 * backend (backend/backend.h). No libfcgi, no sockets, no HTTP: the server
 * submits requests and relays what the engine publishes, so the engine can
 * be driven by unit tests with a synthetic clock.
 *
 * Model (docs/API.md "Timing: the serving engine and the
 * latency model"), after vLLM's scheduler and
 * llm-d-inference-sim's latency model (engine/latency.h):
 *   - max_num_seqs slots. A request waits in a FIFO queue until a slot is
 *     free, then prefills. Admission counts every stream a relay still
 *     holds (waiting, in a slot, or finished with its last bytes not yet
 *     taken by a slow client): beyond max_num_seqs + max_waiting of them
 *     engine_submit refuses (HTTP 429).
 *   - A request with prefix_cache set looks its prompt up in the prefix
 *     cache model at admission (engine/kvcache.h: vLLM's block pool and
 *     automatic prefix caching): its prefill_ms loses
 *     prefill_per_token_ms for every prompt token found; a sequence
 *     holds blocks while it is in a slot and frees them when it leaves.
 *   - Prefill takes prefill_ms x load factor (+ jitter). By default it
 *     runs beside the batch (an idealised chunked prefill: it does not
 *     lengthen the steps); the sequence joins the batch at the first step
 *     boundary at or after its prefill's end, and that step yields its
 *     first token. When no sequence is decoding, the first prefill to end
 *     starts the step grid at that moment. With the profile's
 *     prefill_shares_step (a real engine's way, tokstream's llama
 *     backend's) a sequence admitted joins the next step instead, which
 *     lasts its decode time plus the prefills of every sequence joining
 *     it, and yields their first tokens at its end; an idle grid starts
 *     such a step at once.
 *   - Each decode step produces one token for every sequence in the batch
 *     and takes engine_decode_ms(lat, n, context tokens of the n) x load
 *     factor (+ jitter), computed from the batch it runs, so from the
 *     first token on every token of a sequence is one step after the one
 *     before.
 *   - A sequence leaves when it finishes (max_tokens, an EOS token, a stop
 *     string, an injected error) or is cancelled; a cancelled decoding
 *     sequence on the grid leaves at its next step boundary (the token of
 *     the step in flight is dropped), one on a cadence of its own leaves
 *     at the engine's next pass (its next step may be seconds away), and
 *     its slot goes to the next waiting request at once.
 *   - Times are absolute deadlines on CLOCK_MONOTONIC: a late wake-up
 *     does not shift later tokens.
 * A request with its own tpot_ms (the lab's knob; at least
 * ENGINE_MIN_TPOT_MS) decodes at its own cadence from its prefill's end,
 * as if it ran on a model of that speed; requests at the server's TPOT
 * share the batch's step boundaries. One pass of the engine runs at most
 * one grid step and at most as many timer firings as there are timers, in
 * O(slots) with no allocation, so no
 * request holds another's step, or its cancellation, back by more than a
 * step.
 *
 * What the engine publishes per sequence is token ids, in order, and how
 * it ended; the text of those ids (stop strings cut, incomplete UTF-8
 * held back) is made by whoever sends them, with text/release.h, the
 * same way the engine decides that a stop string ended a sequence.
 */
#ifndef TS_ENGINE_ENGINE_H
#define TS_ENGINE_ENGINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"
#include "backend/backend.h"
#include "engine/latency.h"
#include "text/stop.h"

#define ENGINE_DEFAULT_MAX_NUM_SEQS 64
#define ENGINE_DEFAULT_MAX_WAITING 64
/* The smallest per-request tpot_ms: 1 ms, 1,000 tokens/s (a tpot_ms of
 * 0 is taken as 1). */
#define ENGINE_MIN_TPOT_MS 1.0
#define ENGINE_MAX_SEQS 16384
/* The prefix-cache model's defaults: vLLM's block size, and blocks for
 * 1,048,576 tokens (a GPU's worth for an 8B model at 90% of 80 GB is
 * about half that; vLLM sizes it from the memory it finds). */
#define ENGINE_DEFAULT_BLOCK_SIZE 16
#define ENGINE_DEFAULT_KV_BLOCKS 65536

/* Engine settings; engine_config_defaults() fills the documented ones. */
struct engine_config {
	struct engine_latency lat;
	uint32_t max_num_seqs;     /* slots, 1..ENGINE_MAX_SEQS */
	uint32_t max_waiting;      /* waiting queue cap; 0 = no queue */
	double load_factor_max;    /* step time factor at max_num_seqs, >= 1 */
	uint64_t seed;             /* jitter PRNG seed (the jitter's
				    * distributions are lat's) */
	/* The prefix-cache model (engine/kvcache.h): kv_blocks blocks of
	 * kv_block_size tokens; 0 blocks: off. Only with a backend that is
	 * not physical and has tokenize. */
	uint32_t kv_blocks;
	uint32_t kv_block_size;
	int no_cancel;             /* demo of the failure mode: keep
				    * generating for clients that left */
};

void engine_config_defaults(struct engine_config *cfg);

/* Why a sequence ended. */
enum engine_finish {
	ENGINE_FINISH_NONE = 0,     /* still going */
	ENGINE_FINISH_LENGTH,       /* max_tokens reached */
	ENGINE_FINISH_STOP,         /* an EOS token or a stop string */
	ENGINE_FINISH_CANCELLED,    /* the client left ("abort") */
	ENGINE_FINISH_ERROR,        /* injected error or backend failure */
	ENGINE_FINISH_SHUTDOWN      /* the server is stopping */
};

/* Why a sequence was cancelled (engine_cancel's cause). */
enum engine_cause {
	ENGINE_CAUSE_NONE = 0,
	ENGINE_CAUSE_CLIENT_GONE,   /* a failed write or a hang-up */
	ENGINE_CAUSE_WRITE_STALL,   /* the client stopped reading */
	ENGINE_CAUSE_SHUTDOWN,      /* the server is stopping */
	ENGINE_CAUSE_SERVER_ERROR,  /* the server ended the stream: its
				     * response could not be encoded */
	ENGINE_CAUSE_OUTPUT_LIMIT   /* the server ended the stream: its
				     * response outgrew its buffer */
};

struct engine;
struct engine_seq;

/*
 * Who hears of a sequence's news (a token, its slot, its end): one relay
 * thread. The engine pushes each sequence with news onto the listener's
 * list at most once until it is taken, and after a pass of its loop calls
 * wake(l) once for every listener it pushed onto: one wake-up per step per
 * listener, not one per token per stream. The list is lock-free (an
 * intrusive stack); engine_listener_take empties it.
 */
struct engine_listener {
	_Atomic(struct engine_seq *) news;   /* engine.c's */
	int pending;                         /* engine.c's (engine thread) */
	struct engine_listener *next_wake;   /* engine.c's (engine thread) */
	void (*wake)(struct engine_listener *l);  /* engine thread; must
					      * not call into the engine */
	void *ctx;
};

/* Sets up a listener whose wake is `wake` (may be NULL: poll). */
void engine_listener_init(struct engine_listener *l,
    void (*wake)(struct engine_listener *l), void *ctx);

/*
 * Takes every sequence with news since the last take, in the order the
 * engine pushed them; walk the list with engine_seq_next_news. A sequence
 * stays valid while its relay holds it (until engine_release).
 */
struct engine_seq *engine_listener_take(struct engine_listener *l);
struct engine_seq *engine_seq_next_news(const struct engine_seq *s);

/* One sequence to generate. Everything is copied by engine_submit. */
struct engine_request {
	const char *prompt;       /* (prompt, prompt_len) */
	size_t prompt_len;        /* bytes */
	uint64_t prompt_tokens;   /* as the backend counts them */
	uint32_t model;           /* backend model index */
	struct engine_sampling sampling;
	uint32_t max_tokens;
	double prefill_ms;        /* this request's prefill time, unscaled */
	int prefix_cache;         /* 1: the prompt goes through the prefix
				   * cache model (the /v1 endpoints); 0: not
				   * (the lab endpoints, whose TTFT model
				   * stays exact) */
	double prefill_per_token_ms;  /* what each prompt token found in the
				   * prefix cache takes off prefill_ms (the
				   * latency model's per-token cost); 0: a
				   * fixed prefill (the lab's prefill_ms) */
	double tpot_ms;           /* < 0: the server's TPOT (shared steps) */
	int32_t error_after;      /* -1, or fail after this many tokens */
	uint32_t start_index;     /* resume: tokens 0..start_index-1 were
				   * sent before; recomputed, not counted */
	int64_t t0_ns;            /* CLOCK_MONOTONIC arrival of the request */
	const char *stop[STOP_MAX];  /* stop strings, matched across
				   * tokens (text/stop.h limits) */
	size_t stop_len[STOP_MAX];
	size_t nstop;
	struct engine_listener *listener;   /* NULL: nobody is told */
	void *user;               /* the relay's, for engine_seq_user and
				   * on_stall; opaque to the engine */
	/* A replayed request (handlers/replay.c): token k (0-based) is
	 * published at its admission + schedule_ns[k] (non-decreasing,
	 * >= 0; the recorded arrival of chunk k, scaled), with no load
	 * factor and no jitter; max_tokens must be nschedule and the
	 * sampling ignore_eos. It holds a slot like any request and is
	 * cancelled like one. NULL: the latency model. Copied. */
	const int64_t *schedule_ns;
	uint32_t nschedule;
	const void *hook_arg;     /* for the on_submit hook only (the
				   * server's record of the request); opaque
				   * to the engine, not kept */
};

/*
 * What a relay sees of its sequence (engine_seq_view). Everything before
 * `produced` is final and stays valid until engine_release.
 */
struct engine_view {
	uint32_t produced;          /* token ids ids[0..produced) are final */
	const uint32_t *ids;        /* token i is index start_index + i */
	/* with sampling.logprobs: token i's logprobs are lp[i x lp_stride]
	 * (the sampled token's) and the lp_stride - 1 after it (the top
	 * alternatives, engine_backend.logprobs); NULL, 0 otherwise */
	const struct engine_logprob *lp;
	uint32_t lp_stride;
	uint32_t generated;         /* tokens the engine made, EOS included */
	enum engine_finish finish;  /* NONE while still going */
	int in_slot;                /* 0 while waiting for a slot */
	uint32_t cached_tokens;     /* prompt tokens the prefix cache had
				     * (set at admission) */
	/* the engine's clock (CLOCK_MONOTONIC ns) at admission (a slot:
	 * the prefill starts), at its first token (the prefill's end, the
	 * decode's start) and when it left (its finish); 0 until then */
	int64_t admit_ns, first_ns, end_ns;
};

/* How a sequence left, for the on_finish hook. */
struct engine_outcome {
	enum engine_finish finish;  /* CANCELLED also for a client that left
				     * after its last token, before [DONE] */
	enum engine_cause cause;    /* why it was cancelled, or NONE */
	uint32_t produced;          /* tokens published */
	uint32_t wasted;            /* produced but never delivered */
	int64_t leave_ns;           /* cancel -> left the batch; 0 if not
				     * cancelled */
	/* for the request-level metrics (vLLM's FinishedRequestStats,
	 * vllm/v1/metrics/stats.py): */
	uint64_t prompt_tokens;     /* engine_request.prompt_tokens */
	uint32_t generated;         /* tokens the engine made, EOS
				     * included (usage.completion_tokens) */
	int64_t prefill_ns;         /* slot taken -> first token, in the
				     * engine's clock; -1: it had no first
				     * token after a slot */
	int64_t decode_ns;          /* first token -> last token; -1: no
				     * token */
};

/*
 * What the engine tells the server, for the state file and the metrics.
 * Called on the engine thread with its lock held (on_submit from
 * engine_submit's caller, on_finish also from engine_release): they must
 * be quick and must not call into the engine. `id` is what on_submit
 * returned for the sequence. NULL members are skipped.
 */
struct engine_hooks {
	void *ctx;
	/* The request was accepted: returns its id (X-Request-Id), e.g. a
	 * state record's; 0 when it has none. */
	uint64_t (*on_submit)(void *ctx, const struct engine_request *r);
	/* n tokens were generated for it. */
	void (*on_tokens)(void *ctx, uint64_t id, uint32_t n);
	/* It took a slot after waiting queue_ns. */
	void (*on_admit)(void *ctx, uint64_t id, int64_t queue_ns);
	/* Its prefill ended: it decodes from now on. */
	void (*on_decode)(void *ctx, uint64_t id);
	/* It ended for good (engine and relay both let go). */
	void (*on_finish)(void *ctx, uint64_t id,
	    const struct engine_outcome *o);
	/* It took a slot and looked its prompt up in the prefix cache:
	 * `queried` prompt tokens, `hit` of them cached. */
	void (*on_prefix)(void *ctx, uint64_t id, uint32_t queried,
	    uint32_t hit);
	/* The prefix cache's used blocks changed (of nblocks). */
	void (*on_kv)(void *ctx, uint32_t used, uint32_t nblocks);
	/* The numbers of sequences in slots and waiting changed. */
	void (*on_counts)(void *ctx, uint32_t running, uint32_t waiting);
};

/*
 * Creates an engine over `backend` (copied) and starts its thread.
 * `hooks` may be NULL. Returns TS_OK, TS_EINVAL for a bad config or
 * TS_ESYS if the thread cannot start.
 */
enum ts_err engine_create(struct engine **out, const struct engine_config
    *cfg, const struct engine_backend *backend,
    const struct engine_hooks *hooks);

/* Creates an engine without a thread: the caller drives engine_advance
 * with its own clock (unit tests). */
enum ts_err engine_create_manual(struct engine **out,
    const struct engine_config *cfg, const struct engine_backend *backend,
    const struct engine_hooks *hooks);

/* Stops the thread (if any) and frees everything. Sequences still held by
 * relays must have been released. Accepts NULL. */
void engine_destroy(struct engine *e);

/* The backend the engine runs (its copy). */
const struct engine_backend *engine_backend(const struct engine *e);

/* 1 when the latency model paces the backend's tokens, 0 when the backend
 * computes for real (backend/backend.h `physical`). */
int engine_paces(const struct engine *e);

/* Why engine_submit refuses a request as TS_EINVAL (engine_refusal). */
enum engine_refusal {
	ENGINE_REFUSAL_NONE = 0,    /* it is taken */
	ENGINE_REFUSAL_LOGPROBS,    /* logprobs; engine_backend.logprobs is
				     * NULL */
	ENGINE_REFUSAL_GUIDE,       /* a guide; engine_backend.guided is 0 */
	ENGINE_REFUSAL_STOP_EMPTY,  /* a stop string of 0 bytes (or NULL) */
	ENGINE_REFUSAL_STOP_LONG,   /* a stop string over STOP_MAX_BYTES */
	ENGINE_REFUSAL_STOP_UTF8    /* a stop string that is not UTF-8 */
};

/*
 * What engine_submit would refuse r for, checked in its order (logprobs,
 * guide, then each of the first STOP_MAX stop strings as text/stop.h and
 * text/release.h take them), or ENGINE_REFUSAL_NONE. engine_submit
 * returns TS_EINVAL exactly when this is not NONE, so the caller can say
 * which.
 */
enum engine_refusal engine_refusal(const struct engine *e,
    const struct engine_request *r);

/*
 * Queues a request. Returns TS_OK with *out (release it with
 * engine_release), TS_ELIMIT when the waiting queue is full (answer 429;
 * on_submit is not called), TS_ESHUTDOWN when the engine is shutting down
 * (engine_shutdown was called: 503), or TS_EINVAL for a request
 * engine_refusal names (stop strings text/stop.h refuses, or logprobs or
 * a guide the backend does not support).
 */
enum ts_err engine_submit(struct engine *e, const struct engine_request *r,
    struct engine_seq **out);

/*
 * Names the listener that hears of s's news from now on: the driver that
 * relays it, once it takes the stream over. s is pushed onto it at once,
 * so what happened before is not missed.
 */
void engine_seq_listen(struct engine *e, struct engine_seq *s,
    struct engine_listener *l);

/* The sequence's id: what the on_submit hook returned. */
uint64_t engine_seq_id(const struct engine_seq *s);

/* The request's `user` pointer. */
void *engine_seq_user(const struct engine_seq *s);

/* The sequence's progress, read without blocking the engine. */
void engine_seq_view(struct engine_seq *s, struct engine_view *v);

/* The relay reports how many tokens it delivered (written): the rest of
 * what was produced is "wasted" in the on_finish hook. */
void engine_delivered(struct engine_seq *s, uint32_t delivered);

/*
 * The client is gone, seen at `now_ns` for `cause` (a failed write or a
 * hang-up, or a write stalled too long): the sequence leaves the queue at
 * once, or the batch at its next step boundary, unless the engine runs
 * with no_cancel. The first cause stays.
 */
void engine_cancel(struct engine *e, struct engine_seq *s, int64_t now_ns,
    enum engine_cause cause);

/*
 * The relay is done with the sequence. on_finish is called by whichever
 * of the relay and the engine lets go last. Accepts NULL.
 */
void engine_release(struct engine *e, struct engine_seq *s);

/* Ends every sequence with ENGINE_FINISH_SHUTDOWN and refuses new ones. */
void engine_shutdown(struct engine *e);

/* Counts of this engine. */
struct engine_stats {
	uint32_t running;          /* in slots: prefill or decode */
	uint32_t waiting;
	uint32_t held;             /* held by relays: what 429 counts */
	uint64_t steps;            /* forward passes run */
	uint64_t generated;        /* tokens produced */
};
void engine_stats(struct engine *e, struct engine_stats *out);

/*
 * Manual drive (engine_create_manual): runs everything due at `now_ns`
 * (cancellations, admissions, prefill ends, decode steps) and returns the
 * time of the next event, or INT64_MAX when idle.
 */
int64_t engine_advance(struct engine *e, int64_t now_ns);

/* The load factor for n sequences in slots (1 <= factor <=
 * load_factor_max). */
double engine_load_factor(const struct engine_config *cfg, uint32_t n);

#endif /* TS_ENGINE_ENGINE_H */
