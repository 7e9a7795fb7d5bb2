/*
 * engine/engine_int.h - the engine's private definitions, shared by its
 * own files only (engine.c: the queue, slots, scheduling and the thread;
 * engine_lists.c: listeners and the timer heap). Nothing outside
 * src/engine/ includes it: engine.h is the engine's interface.
 */
#ifndef TS_ENGINE_ENGINE_INT_H
#define TS_ENGINE_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/kvcache.h"
#include "text/release.h"

enum seq_phase { SEQ_WAITING = 1, SEQ_PREFILL, SEQ_JOINING, SEQ_DECODE,
	SEQ_DONE };

#define SEQ_NEWS 1u       /* on a listener's stack */
#define SEQ_DEAD 2u       /* freed but for the struct: the take frees it */
#define SEQ_GONE 4u       /* its relay let go: no news for anyone */

/* Not in the timer heap / the batch. */
#define NO_INDEX UINT32_MAX

struct engine_seq {
	struct engine_seq *qnext;       /* waiting FIFO */
	struct engine_request req;      /* prompt, stop point at copies */
	uint64_t id;                    /* from the on_submit hook */
	char *stop_copy[STOP_MAX];
	struct release *stop;           /* stop strings: NULL if none */
	_Atomic uint32_t generated;     /* EOS included */
	char *prompt_copy;
	char *guide_copy;               /* sampling.guide's copy, or NULL */
	struct engine_logprob *lp;      /* cap x sampling.logprobs, or NULL */
	uint32_t *prompt_ids;           /* for the prefix cache, until
					 * admission; NULL: none */
	size_t nprompt_ids;
	struct kv_seq kv;               /* its blocks in the cache model */
	_Atomic uint32_t cached;        /* prompt tokens the cache had */
	void *bseq;                     /* backend state, once started */
	uint32_t *ids;                  /* cap entries */
	uint32_t cap;                   /* max_tokens - start_index, or 0 */
	enum seq_phase phase;
	int own_cadence;                /* request gave its own tpot_ms,
					 * or a schedule */
	int64_t *sched;                 /* replay: token k at admit_ns +
					 * sched[k]; NULL: none */
	double tpot_ms;                 /* its cadence (own_cadence) */
	int cancel;                     /* the client is gone */
	enum engine_cause cause;
	int64_t cancel_ns;
	int64_t due;                    /* timer: prefill end, own step */
	int64_t prefill_ns;             /* prefill_shares_step: its prefill,
					 * to lengthen the step it joins */
	int claimed;                    /* ... that step's length has it */
	int64_t leave_ns;
	/* when it took a slot, and its first and last tokens (vLLM's
	 * scheduled, first_token and last_token timestamps), for the
	 * on_finish hook: admit_ns and first_ns (below, read by
	 * engine_seq_view too) are valid once the has_ flag is set, which
	 * only the engine thread reads */
	int64_t last_ns;
	int has_admit, has_first;
	uint32_t slot_idx, heap_idx, batch_idx;
	int relay_held, engine_held;
	_Atomic uint32_t produced;
	_Atomic int finish;
	_Atomic int in_slot;
	_Atomic uint32_t delivered;
	_Atomic int64_t admit_ns;       /* engine_view's: a slot taken */
	_Atomic int64_t first_ns;       /* ... its first token published */
	/* listener lists (engine.h): SEQ_NEWS while on a listener's stack,
	 * SEQ_DEAD once freed but for the struct, which the listener's next
	 * take frees */
	_Atomic unsigned list_flags;
	struct engine_seq *push_next;   /* the listener's stack */
	struct engine_seq *take_next;   /* the list engine_listener_take
					 * returned */
};

struct engine {
	struct engine_config cfg;
	struct engine_backend be;
	struct engine_hooks hooks;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_uint lockers;            /* other threads in engine_lock */
	pthread_t thread;
	int has_thread;
	int quit;
	int stopping;
	struct engine_seq *qhead, *qtail;  /* waiting FIFO */
	uint32_t nwaiting;
	uint32_t nheld;                    /* submitted, not yet released by
					    * the relay: what admission counts */
	struct engine_seq **slots;         /* prefill and decode */
	uint32_t nslots;
	struct engine_seq **heap;          /* timers, by due (min-heap) */
	uint32_t nheap;
	struct engine_seq **batch;         /* on the grid, in step order;
					    * NULL: a hole (batch_compact) */
	uint32_t nbatch, batch_holes;
	struct engine_seq **joining;       /* prefilled, to join the grid at
					    * the first step at or after their
					    * prefill's end (due); NULL: left */
	uint32_t njoining;
	int64_t grid_next;                 /* next step; INT64_MAX: idle */
	/* scratch of a step, max_num_seqs each */
	struct engine_seq **step_seqs;
	void **step_bseqs;
	uint32_t *step_ids;
	enum ts_err *step_rc;
	struct engine_listener *to_wake;   /* listeners with news (lock) */
	struct engine_jitter jitter;
	uint64_t steps, generated;
	uint32_t last_running, last_waiting;
	struct kv_cache *kv;               /* the prefix cache model, or NULL */
	uint32_t last_kv_used;
};

/*
 * Puts s on its listener's stack unless it is there already, and the
 * listener on the list to wake at the end of this pass (lock held).
 */
void eng_news(struct engine *e, struct engine_seq *s);

/* Wakes every listener that got news in this pass (lock held). */
void eng_wake_listeners(struct engine *e);

/* The timer heap, by due (lock held): s goes in at `due`, or out. */
void eng_heap_push(struct engine *e, struct engine_seq *s, int64_t due);
void eng_heap_remove(struct engine *e, struct engine_seq *s);

#endif /* TS_ENGINE_ENGINE_INT_H */
