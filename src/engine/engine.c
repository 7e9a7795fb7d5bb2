/*
 * engine/engine.c - slots, waiting queue and the continuous-batching
 * decode loop of one responder process. See engine.h for the model.
 *
 * Concurrency: one mutex guards the queue, the slots and every field of a
 * sequence that the engine schedules by. What a relay reads while the
 * engine runs (produced, the ids before it, finish, in_slot) and what it
 * reports (delivered, write_since) are C11 atomics, so a relay never
 * takes the lock per token: the engine publishes ids[i] and then stores
 * produced with release order, the relay loads produced with acquire.
 * News reaches a relay through its listener (engine.h): a lock-free stack
 * of sequences, and one wake-up per listener per pass of the loop.
 */
#define _GNU_SOURCE
#include "engine/engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/release.h"

/* Housekeeping wake-up while relays are writing (write-stall checks). */
#define ENGINE_TICK_NS 100000000LL

enum seq_phase { SEQ_WAITING = 1, SEQ_PREFILL, SEQ_DECODE, SEQ_DONE };

#define SEQ_NEWS 1u
#define SEQ_DEAD 2u

struct engine_seq {
	struct engine_seq *qnext;       /* waiting FIFO */
	struct engine_seq *lprev, *lnext; /* relay-held list (stall checks) */
	struct engine_request req;      /* prompt, stop point at copies */
	uint64_t id;                    /* from the on_submit hook */
	char *stop_copy[STOP_MAX];
	struct release *stop;           /* stop strings: NULL if none */
	_Atomic uint32_t generated;     /* EOS included */
	char *prompt_copy;
	void *bseq;                     /* backend state, from admission */
	uint32_t *ids;                  /* cap entries */
	uint32_t cap;                   /* max_tokens - start_index, or 0 */
	enum seq_phase phase;
	int joining;                    /* next boundary aligns, no token */
	int own_cadence;                /* request gave its own tpot_ms */
	int cancel;                     /* the client is gone */
	enum engine_cause cause;
	int64_t cancel_ns;
	int64_t admitted_ns;
	int64_t prefill_end_ns;
	int64_t next_ns;                /* next decode boundary */
	int64_t leave_ns;
	int stall_fired;
	int relay_held, engine_held;
	_Atomic uint32_t produced;
	_Atomic int finish;
	_Atomic int in_slot;
	_Atomic uint32_t delivered;
	_Atomic int64_t write_since;    /* 0 = not in a write */
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
	pthread_t thread;
	int has_thread;
	int quit;
	int stopping;
	struct engine_seq *qhead, *qtail;  /* waiting FIFO */
	uint32_t nwaiting;
	struct engine_seq **slots;
	uint32_t nslots;
	struct engine_seq *held;           /* relay-held list */
	struct engine_listener *to_wake;   /* listeners with news (lock) */
	struct engine_jitter jitter;
	uint64_t steps, generated;
	uint32_t last_running, last_waiting;
};

void
engine_config_defaults(struct engine_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	engine_latency_defaults(&cfg->lat);
	cfg->max_num_seqs = ENGINE_DEFAULT_MAX_NUM_SEQS;
	cfg->max_waiting = ENGINE_DEFAULT_MAX_WAITING;
	cfg->load_factor_max = ENGINE_DEFAULT_LOAD_FACTOR;
	cfg->seed = 0x746f6b73747265ULL;   /* "tokstre" */
	cfg->write_stall_ms = ENGINE_DEFAULT_WRITE_STALL_MS;
}

/*
 * Linear from 1 at one sequence to load_factor_max at max_num_seqs, as
 * llm-d-inference-sim's time-factor-under-load.
 */
double
engine_load_factor(const struct engine_config *cfg, uint32_t n)
{
	double f = cfg->load_factor_max;

	if (n <= 1 || f <= 1.0)
		return 1.0;
	if (cfg->max_num_seqs <= 1 || n >= cfg->max_num_seqs)
		return f;
	return 1.0 + (f - 1.0) * (double)(n - 1) /
	    (double)(cfg->max_num_seqs - 1);
}

/* ---- listeners -------------------------------------------------------- */

void
engine_listener_init(struct engine_listener *l,
    void (*wake)(struct engine_listener *l), void *ctx)
{
	memset(l, 0, sizeof(*l));
	atomic_init(&l->news, NULL);
	l->wake = wake;
	l->ctx = ctx;
}

/*
 * Puts s on its listener's stack unless it is there already, and the
 * listener on the list to wake at the end of this pass (lock held).
 */
static void
news(struct engine *e, struct engine_seq *s)
{
	struct engine_listener *l = s->req.listener;
	struct engine_seq *head;

	if (l == NULL || (atomic_fetch_or(&s->list_flags, SEQ_NEWS) &
	    SEQ_NEWS))
		return;
	head = atomic_load_explicit(&l->news, memory_order_relaxed);
	do {
		s->push_next = head;
	} while (!atomic_compare_exchange_weak_explicit(&l->news, &head, s,
	    memory_order_release, memory_order_relaxed));
	if (!l->pending) {
		l->pending = 1;
		l->next_wake = e->to_wake;
		e->to_wake = l;
	}
}

/* Wakes every listener that got news in this pass (lock held). */
static void
wake_listeners(struct engine *e)
{
	struct engine_listener *l = e->to_wake, *next;

	e->to_wake = NULL;
	for (; l != NULL; l = next) {
		next = l->next_wake;
		l->pending = 0;
		if (l->wake != NULL)
			l->wake(l);
	}
}

/*
 * Empties the stack and returns it oldest first. Each sequence's SEQ_NEWS
 * is cleared (acq_rel, after its link was read) so the engine may push it
 * again at once; the returned list runs on take_next, which only the
 * listener's thread writes. A sequence released while on the stack
 * (SEQ_DEAD) is freed here instead of returned.
 */
struct engine_seq *
engine_listener_take(struct engine_listener *l)
{
	struct engine_seq *s = atomic_exchange_explicit(&l->news, NULL,
	    memory_order_acquire), *out = NULL, *next;

	for (; s != NULL; s = next) {
		next = s->push_next;
		if (atomic_fetch_and(&s->list_flags, ~SEQ_NEWS) & SEQ_DEAD) {
			free(s);
			continue;
		}
		s->take_next = out;
		out = s;
	}
	return out;
}

struct engine_seq *
engine_seq_next_news(const struct engine_seq *s)
{
	return s->take_next;
}

/* ---- sequences ------------------------------------------------------- */

static void
counts_changed(struct engine *e)
{
	if (e->nslots == e->last_running && e->nwaiting == e->last_waiting)
		return;
	e->last_running = e->nslots;
	e->last_waiting = e->nwaiting;
	if (e->hooks.on_counts != NULL)
		e->hooks.on_counts(e->hooks.ctx, e->nslots, e->nwaiting);
}

/* The finish a client sees: one that left before [DONE] reached it was
 * cancelled even if its last token had been generated. */
static enum engine_finish
outcome_of(const struct engine *e, const struct engine_seq *s)
{
	enum engine_finish f = (enum engine_finish)atomic_load(&s->finish);

	if ((f == ENGINE_FINISH_LENGTH || f == ENGINE_FINISH_STOP) &&
	    s->cancel && !e->cfg.no_cancel)
		return ENGINE_FINISH_CANCELLED;
	return f;
}

/* Frees what a sequence owns (its backend state with e's backend). */
static void
seq_free(struct engine *e, struct engine_seq *s)
{
	size_t k;

	if (s->bseq != NULL)
		e->be.seq_free(e->be.impl, s->bseq);
	for (k = 0; k < STOP_MAX; k++)
		free(s->stop_copy[k]);
	free(s->stop);
	free(s->ids);
	free(s->prompt_copy);
	/* on a listener's stack still: its next take frees the struct */
	if (!(atomic_fetch_or(&s->list_flags, SEQ_DEAD) & SEQ_NEWS))
		free(s);
}

/* Both sides let go: report, free. */
static void
seq_finalize(struct engine *e, struct engine_seq *s)
{
	uint32_t produced = atomic_load(&s->produced);
	uint32_t delivered = atomic_load(&s->delivered);
	struct engine_outcome o;

	o.finish = outcome_of(e, s);
	o.produced = produced;
	o.wasted = produced > delivered ? produced - delivered : 0;
	o.leave_ns = s->cancel && s->leave_ns > s->cancel_ns ?
	    s->leave_ns - s->cancel_ns : 0;
	o.cause = s->cancel ? s->cause : ENGINE_CAUSE_NONE;
	if (atomic_load(&s->finish) == ENGINE_FINISH_SHUTDOWN)
		o.cause = ENGINE_CAUSE_SHUTDOWN;
	if (e->hooks.on_finish != NULL)
		e->hooks.on_finish(e->hooks.ctx, s->id, &o);
	seq_free(e, s);
}

static void
slot_remove(struct engine *e, struct engine_seq *s)
{
	uint32_t i;

	for (i = 0; i < e->nslots; i++) {
		if (e->slots[i] == s) {
			e->slots[i] = e->slots[--e->nslots];
			return;
		}
	}
}

static void
queue_remove(struct engine *e, struct engine_seq *s)
{
	struct engine_seq **pp = &e->qhead, *prev = NULL;

	while (*pp != NULL && *pp != s) {
		prev = *pp;
		pp = &(*pp)->qnext;
	}
	if (*pp == NULL)
		return;
	*pp = s->qnext;
	if (e->qtail == s)
		e->qtail = prev;
	s->qnext = NULL;
	e->nwaiting--;
}

/* The engine is done with s at time t: it leaves its slot or the queue. */
static void
seq_finish(struct engine *e, struct engine_seq *s, enum engine_finish f,
    int64_t t)
{
	if (s->phase == SEQ_WAITING)
		queue_remove(e, s);
	else if (s->phase == SEQ_PREFILL || s->phase == SEQ_DECODE)
		slot_remove(e, s);
	s->phase = SEQ_DONE;
	s->leave_ns = t;
	atomic_store_explicit(&s->finish, f, memory_order_release);
	s->engine_held = 0;
	if (!s->relay_held)
		seq_finalize(e, s);
	else
		news(e, s);
}

/* Whether token `id` completes one of the sequence's stop strings. Its
 * text goes through a releaser (engine/release.h), as the relay's does,
 * so both agree on where the text ends. */
static int
seq_stops(struct engine *e, struct engine_seq *s, uint32_t id)
{
	size_t len, off = 0;
	const char *text;
	int stop = 0;

	if (s->stop == NULL)
		return 0;
	text = e->be.token_text(e->be.impl, id, &len);
	if (text == NULL)
		len = 0;
	/* a token text longer than one feed goes in pieces */
	do {
		size_t n = len - off > RELEASE_FEED_MAX ? RELEASE_FEED_MAX :
		    len - off;
		struct release_chunk c;

		if (release_bytes(s->stop, text + off, n, &c, &stop) != TS_OK)
			break;
		off += n;
	} while (off < len && !stop);
	return stop != 0;
}

/*
 * Publishes token `id` as the sequence's next. Returns ENGINE_FINISH_NONE
 * to go on, or why the sequence ends with it: LENGTH (it was the last),
 * STOP (an EOS id, which is counted but not published, or a stop string
 * completed by this token).
 */
static enum engine_finish
seq_publish(struct engine *e, struct engine_seq *s, uint32_t id)
{
	uint32_t p = atomic_load_explicit(&s->produced, memory_order_relaxed);
	int stop;

	e->generated++;
	atomic_fetch_add(&s->generated, 1);
	if (e->hooks.on_tokens != NULL)
		e->hooks.on_tokens(e->hooks.ctx, s->id, 1);
	if (id == e->be.eos_ids[0] || id == e->be.eos_ids[1])
		return ENGINE_FINISH_STOP;
	stop = seq_stops(e, s, id);
	s->ids[p] = id;
	atomic_store_explicit(&s->produced, p + 1, memory_order_release);
	news(e, s);
	if (stop)
		return ENGINE_FINISH_STOP;
	if (p + 1 >= s->cap)
		return ENGINE_FINISH_LENGTH;
	return ENGINE_FINISH_NONE;
}

/* 1 when the sequence must stop with an injected error before token k. */
static int
seq_errors_now(const struct engine_seq *s)
{
	uint32_t k = s->req.start_index + atomic_load_explicit(&s->produced,
	    memory_order_relaxed);

	return s->req.error_after >= 0 && k >= (uint32_t)s->req.error_after;
}

/* ---- scheduling ------------------------------------------------------ */

/* Moves waiting requests into free slots; their prefill starts at now. */
static void
admit(struct engine *e, int64_t now)
{
	while (e->qhead != NULL && e->nslots < e->cfg.max_num_seqs) {
		struct engine_seq *s = e->qhead;
		double factor;

		e->qhead = s->qnext;
		if (e->qhead == NULL)
			e->qtail = NULL;
		s->qnext = NULL;
		e->nwaiting--;
		e->slots[e->nslots++] = s;
		factor = engine_load_factor(&e->cfg, e->nslots);
		s->phase = SEQ_PREFILL;
		s->admitted_ns = now;
		/* A physical backend's prefill takes the time it takes. */
		s->prefill_end_ns = e->be.physical ? now : now +
		    engine_scaled_ns(s->req.prefill_ms, factor,
		    engine_jitter_ns(&e->jitter, e->cfg.jitter_prefill_ms));
		atomic_store(&s->in_slot, 1);
		news(e, s);
		if (e->hooks.on_admit != NULL)
			e->hooks.on_admit(e->hooks.ctx, s->id,
			    now - s->req.t0_ns);
	}
}

/* The time of the slots' next event, INT64_MAX if none. */
static int64_t
next_event(const struct engine *e)
{
	int64_t t = INT64_MAX;
	uint32_t i;

	for (i = 0; i < e->nslots; i++) {
		const struct engine_seq *s = e->slots[i];
		int64_t x = s->phase == SEQ_PREFILL ? s->prefill_end_ns :
		    s->next_ns;

		if (x < t)
			t = x;
	}
	return t;
}

/* The batch's next step boundary at or after t, or t without a batch. */
static int64_t
join_boundary(const struct engine *e, const struct engine_seq *self,
    int64_t t)
{
	int64_t b = INT64_MAX;
	uint32_t i;

	for (i = 0; i < e->nslots; i++) {
		const struct engine_seq *s = e->slots[i];

		if (s != self && s->phase == SEQ_DECODE && !s->own_cadence &&
		    s->next_ns >= t && s->next_ns < b)
			b = s->next_ns;
	}
	return b == INT64_MAX ? t : b;
}

static int64_t
step_ns(const struct engine *e, const struct engine_seq *s, double factor,
    int64_t jitter)
{
	if (e->be.physical)
		return 0;       /* the step itself took the time */
	return engine_scaled_ns(s->own_cadence ? s->req.tpot_ms :
	    e->cfg.lat.tpot_ms, factor, jitter);
}

/*
 * Of the sequences whose prefill ends at t, keeps those that get a first
 * token; the others leave now (cancelled, nothing to decode, an error
 * injected at 0). Returns how many are kept, compacted at the front.
 */
static size_t
prefill_filter(struct engine *e, struct engine_seq **batch, size_t n,
    int64_t t)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct engine_seq *s = batch[i];

		if (s->cancel && !e->cfg.no_cancel)
			seq_finish(e, s, ENGINE_FINISH_CANCELLED, t);
		else if (s->cap == 0)
			seq_finish(e, s, ENGINE_FINISH_LENGTH, t);
		else if (seq_errors_now(s))
			seq_finish(e, s, ENGINE_FINISH_ERROR, t);
		else
			continue;
		batch[i--] = batch[--n];
	}
	return n;
}

/*
 * Prefill: starts each sequence in the backend and runs the pass that
 * yields its first token into ids[]. A physical backend computes here, so
 * the engine's lock is released meanwhile (only this thread changes the
 * slots; relays only set flags). Sequences the backend refuses leave with
 * an error. Returns how many got a token, compacted at the front.
 */
static size_t
prefill_compute(struct engine *e, struct engine_seq **batch, void **bseqs,
    uint32_t *ids, size_t n, int64_t t)
{
	enum ts_err *rc = xcalloc(n + 1u, sizeof(*rc));
	size_t i, m = 0;

	if (e->be.physical)
		pthread_mutex_unlock(&e->mu);
	for (i = 0; i < n; i++) {
		struct engine_seq *s = batch[i];

		rc[i] = e->be.seq_start(e->be.impl, s->req.model,
		    s->req.prompt, s->req.prompt_len, s->req.start_index,
		    &s->req.sampling, &s->bseq);
		if (rc[i] == TS_OK)
			bseqs[m++] = s->bseq;
	}
	for (i = 0; i < m; i++)
		ids[i] = 0;
	if (m > 0 && e->be.step(e->be.impl, bseqs, m, ids) != TS_OK)
		for (i = 0; i < n; i++)
			rc[i] = rc[i] == TS_OK ? TS_EINVAL : rc[i];
	if (e->be.physical)
		pthread_mutex_lock(&e->mu);
	/* ids[] follows the started ones; keep batch[] in step with it */
	for (i = 0, m = 0; i < n; i++) {
		if (rc[i] == TS_OK) {
			batch[m++] = batch[i];
		} else {
			if (batch[i]->bseq != NULL) {
				e->be.seq_free(e->be.impl, batch[i]->bseq);
				batch[i]->bseq = NULL;
			}
			seq_finish(e, batch[i], ENGINE_FINISH_ERROR, t);
		}
	}
	free(rc);
	return m;
}

/*
 * Runs everything scheduled at time t: prefills that end (each yields its
 * first token, then the sequence waits for the batch's next boundary),
 * then the decode step of every sequence whose boundary is t.
 */
static void
run_events_at(struct engine *e, int64_t t)
{
	struct engine_seq **batch = xmalloc(sizeof(*batch) *
	    (e->nslots + 1u));
	uint32_t *ids = xmalloc(sizeof(*ids) * (e->nslots + 1u));
	void **bseqs = xmalloc(sizeof(*bseqs) * (e->nslots + 1u));
	double factor = engine_load_factor(&e->cfg, e->nslots);
	int64_t jit = engine_jitter_ns(&e->jitter, e->cfg.jitter_tpot_ms);
	enum ts_err rc;
	size_t n, i;
	uint32_t k;

	/* Prefills that end at t: one forward pass yields first tokens. */
	n = 0;
	for (k = 0; k < e->nslots; k++) {
		struct engine_seq *s = e->slots[k];

		if (s->phase == SEQ_PREFILL && s->prefill_end_ns == t)
			batch[n++] = s;
	}
	n = prefill_filter(e, batch, n, t);
	n = prefill_compute(e, batch, bseqs, ids, n, t);
	for (i = 0; i < n; i++) {
		struct engine_seq *s = batch[i];
		enum engine_finish f = seq_publish(e, s, ids[i]);

		if (f != ENGINE_FINISH_NONE) {
			seq_finish(e, s, f, t);
			continue;
		}
		s->phase = SEQ_DECODE;
		s->next_ns = s->own_cadence ? t : join_boundary(e, s, t);
		s->joining = 1;
		if (e->hooks.on_decode != NULL)
			e->hooks.on_decode(e->hooks.ctx, s->id);
	}

	/* The decode step that ends at t. */
	n = 0;
	for (k = 0; k < e->nslots; k++) {
		struct engine_seq *s = e->slots[k];

		if (s->phase == SEQ_DECODE && s->next_ns == t)
			batch[n++] = s;
	}
	for (i = 0; i < n; i++) {
		struct engine_seq *s = batch[i];

		if (s->cancel && !e->cfg.no_cancel) {
			/* Leaves at this boundary; the step's token for it
			 * is dropped. */
			seq_finish(e, s, ENGINE_FINISH_CANCELLED, t);
		} else if (s->joining) {
			/* Joins the batch: its first decode step starts. */
			s->joining = 0;
			s->next_ns = t + step_ns(e, s, factor, jit);
		} else if (seq_errors_now(s)) {
			seq_finish(e, s, ENGINE_FINISH_ERROR, t);
		} else {
			continue;
		}
		batch[i--] = batch[--n];
	}
	if (n > 0) {
		e->steps++;
		for (i = 0; i < n; i++)
			bseqs[i] = batch[i]->bseq;
		if (e->be.physical)
			pthread_mutex_unlock(&e->mu);
		rc = e->be.step(e->be.impl, bseqs, n, ids);
		if (e->be.physical) {
			pthread_mutex_lock(&e->mu);
			t = engine_now_ns();  /* the step took real time */
		}
		if (rc != TS_OK) {
			for (i = 0; i < n; i++)
				seq_finish(e, batch[i], ENGINE_FINISH_ERROR,
				    t);
			n = 0;
		}
	}
	for (i = 0; i < n; i++) {
		struct engine_seq *s = batch[i];
		enum engine_finish f = seq_publish(e, s, ids[i]);

		if (f != ENGINE_FINISH_NONE)
			seq_finish(e, s, f, t);
		else
			s->next_ns = t + step_ns(e, s, factor, jit);
	}
	free(batch);
	free(ids);
	free(bseqs);
}

/* Cancellations that act at once (waiting, prefill) and write stalls. */
static void
handle_cancels(struct engine *e, int64_t now)
{
	struct engine_seq *s, *next;
	uint32_t i;

	if (e->cfg.write_stall_ms > 0) {
		int64_t stall = (int64_t)ts_ms_to_ns(e->cfg.write_stall_ms);

		for (s = e->held; s != NULL; s = s->lnext) {
			int64_t ws = atomic_load(&s->write_since);

			if (ws == 0 || now - ws < stall || s->stall_fired)
				continue;
			s->stall_fired = 1;
			if (!s->cancel) {
				s->cancel = 1;
				s->cause = ENGINE_CAUSE_WRITE_STALL;
				s->cancel_ns = now;
			}
			if (s->req.on_stall != NULL)
				s->req.on_stall(s->req.user);
		}
	}
	if (e->cfg.no_cancel)
		return;
	for (s = e->qhead; s != NULL; s = next) {
		next = s->qnext;
		if (s->cancel)
			seq_finish(e, s, ENGINE_FINISH_CANCELLED, now);
	}
	for (i = 0; i < e->nslots; i++) {
		s = e->slots[i];
		if (s->cancel && s->phase == SEQ_PREFILL) {
			seq_finish(e, s, ENGINE_FINISH_CANCELLED, now);
			i--;    /* the slot array was compacted */
		}
	}
}

/* Ends every sequence with ENGINE_FINISH_SHUTDOWN (lock held). */
static void
shutdown_locked(struct engine *e, int64_t now)
{
	while (e->qhead != NULL)
		seq_finish(e, e->qhead, ENGINE_FINISH_SHUTDOWN, now);
	while (e->nslots > 0)
		seq_finish(e, e->slots[0], ENGINE_FINISH_SHUTDOWN, now);
	counts_changed(e);
	wake_listeners(e);
}

static int64_t
advance_locked(struct engine *e, int64_t now)
{
	int64_t t;

	if (e->stopping) {
		shutdown_locked(e, now);
		return INT64_MAX;
	}

	handle_cancels(e, now);
	for (;;) {
		admit(e, now);
		t = next_event(e);
		if (t > now)
			break;
		run_events_at(e, t);
		if (e->be.physical) {
			/* Real compute took time: look at the relays again
			 * (cancellations, new requests) between steps. */
			t = next_event(e);
			break;
		}
	}
	counts_changed(e);
	wake_listeners(e);
	if (e->held != NULL && e->cfg.write_stall_ms > 0 &&
	    t > now + ENGINE_TICK_NS)
		t = now + ENGINE_TICK_NS;
	return t;
}

int64_t
engine_advance(struct engine *e, int64_t now)
{
	int64_t t;

	pthread_mutex_lock(&e->mu);
	t = advance_locked(e, now);
	pthread_mutex_unlock(&e->mu);
	return t;
}

/* ---- the engine thread ----------------------------------------------- */

static void *
engine_main(void *arg)
{
	struct engine *e = arg;

	pthread_mutex_lock(&e->mu);
	while (!e->quit) {
		int64_t next = advance_locked(e, engine_now_ns());

		if (next == INT64_MAX) {
			pthread_cond_wait(&e->cv, &e->mu);
		} else {
			struct timespec ts;

			ts.tv_sec = next / 1000000000;
			ts.tv_nsec = next % 1000000000;
			pthread_cond_timedwait(&e->cv, &e->mu, &ts);
		}
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

static enum ts_err
engine_init(struct engine **out, const struct engine_config *cfg,
    const struct engine_backend *backend, const struct engine_hooks *hooks)
{
	struct engine *e;
	pthread_condattr_t ca;

	*out = NULL;
	if (cfg->max_num_seqs < 1 || cfg->max_num_seqs > ENGINE_MAX_SEQS ||
	    !(cfg->load_factor_max >= 1.0) || cfg->jitter_prefill_ms < 0 ||
	    cfg->jitter_tpot_ms < 0 || cfg->write_stall_ms < 0 ||
	    backend->nmodels < 1 || backend->lab_model >= backend->nmodels)
		return TS_EINVAL;
	e = xcalloc(1, sizeof(*e));
	e->cfg = *cfg;
	e->be = *backend;
	if (hooks != NULL)
		e->hooks = *hooks;
	engine_jitter_seed(&e->jitter, cfg->seed);
	e->slots = xcalloc(cfg->max_num_seqs, sizeof(*e->slots));
	pthread_mutex_init(&e->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cv, &ca);
	pthread_condattr_destroy(&ca);
	*out = e;
	return TS_OK;
}

enum ts_err
engine_create_manual(struct engine **out, const struct engine_config *cfg,
    const struct engine_backend *backend, const struct engine_hooks *hooks)
{
	return engine_init(out, cfg, backend, hooks);
}

enum ts_err
engine_create(struct engine **out, const struct engine_config *cfg,
    const struct engine_backend *backend, const struct engine_hooks *hooks)
{
	enum ts_err rc = engine_init(out, cfg, backend, hooks);

	if (rc != TS_OK)
		return rc;
	if (pthread_create(&(*out)->thread, NULL, engine_main, *out) != 0) {
		engine_destroy(*out);
		*out = NULL;
		return TS_ESYS;
	}
	(*out)->has_thread = 1;
	return TS_OK;
}

void
engine_destroy(struct engine *e)
{
	if (e == NULL)
		return;
	pthread_mutex_lock(&e->mu);
	e->quit = 1;
	pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
	if (e->has_thread)
		pthread_join(e->thread, NULL);
	while (e->qhead != NULL)
		seq_finish(e, e->qhead, ENGINE_FINISH_SHUTDOWN, 0);
	while (e->nslots > 0)
		seq_finish(e, e->slots[0], ENGINE_FINISH_SHUTDOWN, 0);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
	free(e->slots);
	free(e);
}

const struct engine_backend *
engine_backend(const struct engine *e)
{
	return &e->be;
}

int
engine_paces(const struct engine *e)
{
	return !e->be.physical;
}

/* ---- the relay's side ------------------------------------------------ */

/* A sequence for r, its copies made (no lock needed). NULL for stop
 * strings the releaser refuses. */
static struct engine_seq *
seq_new(const struct engine_request *r)
{
	struct engine_seq *s = xcalloc(1, sizeof(*s));
	size_t k, nstop = r->nstop < STOP_MAX ? r->nstop : STOP_MAX;

	s->req = *r;
	s->prompt_copy = xstrndup(r->prompt != NULL ? r->prompt : "",
	    r->prompt_len);
	s->req.prompt = s->prompt_copy;
	for (k = 0; k < nstop; k++) {
		s->stop_copy[k] = xstrndup(r->stop[k], r->stop_len[k]);
		s->req.stop[k] = s->stop_copy[k];
	}
	s->req.nstop = nstop;
	if (nstop > 0) {
		s->stop = xmalloc(sizeof(*s->stop));
		if (release_init(s->stop, s->req.stop, s->req.stop_len,
		    nstop) != TS_OK) {
			for (k = 0; k < STOP_MAX; k++)
				free(s->stop_copy[k]);
			free(s->stop);
			free(s->prompt_copy);
			free(s);
			return NULL;
		}
	}
	s->cap = r->max_tokens > r->start_index ?
	    r->max_tokens - r->start_index : 0;
	s->ids = xcalloc(s->cap + 1u, sizeof(*s->ids));
	s->own_cadence = r->tpot_ms >= 0;
	s->phase = SEQ_WAITING;
	s->relay_held = 1;
	s->engine_held = 1;
	atomic_init(&s->list_flags, 0);
	return s;
}

enum ts_err
engine_submit(struct engine *e, const struct engine_request *r,
    struct engine_seq **out)
{
	struct engine_seq *s;

	*out = NULL;
	s = seq_new(r);
	if (s == NULL)
		return TS_EINVAL;
	pthread_mutex_lock(&e->mu);
	if (e->stopping) {
		pthread_mutex_unlock(&e->mu);
		seq_free(e, s);
		return TS_ETIMEDOUT;
	}
	/* Free slots take requests at once (the engine thread admits
	 * them); beyond them, max_waiting may wait. */
	if ((uint64_t)e->nslots + e->nwaiting >=
	    (uint64_t)e->cfg.max_num_seqs + e->cfg.max_waiting) {
		pthread_mutex_unlock(&e->mu);
		seq_free(e, s);
		return TS_ELIMIT;
	}
	if (e->hooks.on_submit != NULL)
		s->id = e->hooks.on_submit(e->hooks.ctx, &s->req);
	s->lnext = e->held;
	if (e->held != NULL)
		e->held->lprev = s;
	e->held = s;
	if (e->qtail != NULL)
		e->qtail->qnext = s;
	else
		e->qhead = s;
	e->qtail = s;
	e->nwaiting++;
	pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
	*out = s;
	return TS_OK;
}

uint64_t
engine_seq_id(const struct engine_seq *s)
{
	return s->id;
}

void *
engine_seq_user(const struct engine_seq *s)
{
	return s->req.user;
}

void
engine_seq_view(struct engine_seq *s, struct engine_view *v)
{
	v->finish = (enum engine_finish)atomic_load_explicit(&s->finish,
	    memory_order_acquire);
	v->produced = atomic_load_explicit(&s->produced,
	    memory_order_acquire);
	v->ids = s->ids;
	v->generated = atomic_load(&s->generated);
	v->in_slot = atomic_load_explicit(&s->in_slot, memory_order_relaxed);
}

void
engine_delivered(struct engine_seq *s, uint32_t delivered)
{
	atomic_store(&s->delivered, delivered);
}

void
engine_write_begin(struct engine_seq *s, int64_t now_ns)
{
	atomic_store(&s->write_since, now_ns > 0 ? now_ns : 1);
}

void
engine_write_end(struct engine_seq *s)
{
	atomic_store(&s->write_since, 0);
}

void
engine_cancel(struct engine *e, struct engine_seq *s, int64_t now_ns)
{
	pthread_mutex_lock(&e->mu);
	if (!s->cancel) {
		s->cancel = 1;
		s->cause = ENGINE_CAUSE_CLIENT_GONE;
		s->cancel_ns = now_ns;
		pthread_cond_signal(&e->cv);
	}
	pthread_mutex_unlock(&e->mu);
}

void
engine_release(struct engine *e, struct engine_seq *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&e->mu);
	if (s->lprev != NULL)
		s->lprev->lnext = s->lnext;
	else
		e->held = s->lnext;
	if (s->lnext != NULL)
		s->lnext->lprev = s->lprev;
	s->relay_held = 0;
	if (!s->engine_held)
		seq_finalize(e, s);
	pthread_mutex_unlock(&e->mu);
}

void
engine_shutdown(struct engine *e)
{
	int64_t now = engine_now_ns();

	pthread_mutex_lock(&e->mu);
	e->stopping = 1;
	/* With a thread, it ends the sequences itself (it may be computing
	 * a step with the lock released); without one, now. */
	if (!e->has_thread)
		shutdown_locked(e, now);
	pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

void
engine_stats(struct engine *e, struct engine_stats *out)
{
	pthread_mutex_lock(&e->mu);
	out->running = e->nslots;
	out->waiting = e->nwaiting;
	out->steps = e->steps;
	out->generated = e->generated;
	pthread_mutex_unlock(&e->mu);
}
