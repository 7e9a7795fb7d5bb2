/*
 * engine.c - slots, waiting queue and the continuous-batching decode loop
 * of one responder process. See engine.h for the model.
 *
 * Concurrency: one mutex guards the queue, the slots and every field of a
 * sequence that the engine schedules by. What a relay reads while the
 * engine runs (produced, the ids before it, finish, in_slot) and what it
 * reports (delivered, write_since) are C11 atomics, so a relay never
 * takes the lock per token: the engine publishes ids[i] and then stores
 * produced with release order, the relay loads produced with acquire.
 */
#define _GNU_SOURCE
#include "engine.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "gen_release.h"
#include "state.h"

/* Housekeeping wake-up while relays are writing (write-stall checks). */
#define ENGINE_TICK_NS 100000000LL

enum seq_phase { SEQ_WAITING = 1, SEQ_PREFILL, SEQ_DECODE, SEQ_DONE };

struct engine_seq {
	struct engine_seq *qnext;       /* waiting FIFO */
	struct engine_seq *lprev, *lnext; /* relay-held list (stall checks) */
	struct engine_request req;      /* prompt points at prompt_copy */
	uint64_t state_id;
	struct engine_sampling samp;    /* req.sampling points here */
	char *stop_copy[4];
	struct gen_release *rel;        /* NULL: token texts go out whole */
	char **chunks;                  /* [cap]: text released per token */
	uint32_t *chunk_lens;
	char *tail;                     /* released at the end */
	size_t tail_len;
	_Atomic uint32_t generated;     /* EOS included */
	char *prompt_copy;
	void *bseq;                     /* backend state, from admission */
	uint32_t *ids;                  /* cap entries */
	uint32_t cap;                   /* max_tokens - start_index, or 0 */
	enum seq_phase phase;
	int joining;                    /* next boundary aligns, no token */
	int own_cadence;                /* request gave its own tpot_ms */
	int cancel;                     /* the client is gone */
	enum state_cause cause;
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
};

struct engine {
	struct engine_config cfg;
	struct engine_backend be;
	struct state *st;
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
	uint64_t rng;                      /* jitter PRNG (SplitMix64) */
	uint64_t steps, generated;
	uint32_t last_running, last_waiting;
};

/* ---- latency model --------------------------------------------------- */

void
engine_latency_defaults(struct engine_latency *lat)
{
	lat->prefill_base_ms = ENGINE_DEFAULT_PREFILL_BASE_MS;
	lat->prefill_per_token_ms = ENGINE_DEFAULT_PREFILL_PER_TOKEN_MS;
	lat->tpot_ms = ENGINE_DEFAULT_TPOT_MS;
	lat->keepalive_ms = ENGINE_DEFAULT_KEEPALIVE_MS;
}

double
engine_prefill_ms(const struct engine_latency *lat, uint64_t prompt_tokens)
{
	return lat->prefill_base_ms +
	    lat->prefill_per_token_ms * (double)prompt_tokens;
}

int64_t
engine_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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

/* SplitMix64 (Steele, Lea, Flood 2014): the jitter's PRNG. */
static uint64_t
rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A standard normal draw (Box-Muller), scaled to `std` ms, in ns. */
static int64_t
jitter_ns(struct engine *e, double std_ms)
{
	double u1, u2, z;

	if (std_ms <= 0)
		return 0;
	u1 = ((double)(rng_next(&e->rng) >> 11) + 1.0) / 9007199254740993.0;
	u2 = (double)(rng_next(&e->rng) >> 11) / 9007199254740992.0;
	z = sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
	return (int64_t)ts_ms_to_ns(fabs(z * std_ms)) * (z < 0 ? -1 : 1);
}

/* A duration of `ms` x factor plus jitter, never below 10% of it. */
static int64_t
scaled_ns(double ms, double factor, int64_t jitter)
{
	int64_t base = (int64_t)ts_ms_to_ns(ms * factor);
	int64_t d = base + jitter;

	return d < base / 10 ? base / 10 : d;
}

/* ---- the simulator backend ------------------------------------------- */

/* One simulated sequence: the lab generator or the language model. */
struct sim_seq {
	int lm;
	struct gen_stream g;
	struct gen_lm m;
};

static enum ts_err
sim_seq_start(void *impl, const char *prompt, size_t len, uint32_t skip,
    const struct engine_sampling *samp, void **seq)
{
	struct sim_seq *q = xcalloc(1, sizeof(*q));
	uint32_t i;

	(void)impl;
	q->lm = samp != NULL && samp->lm;
	if (q->lm)
		gen_lm_init(&q->m, prompt, len, &samp->params);
	else
		gen_init(&q->g, prompt, len);
	for (i = 0; i < skip; i++) {
		if (q->lm)
			gen_lm_next(&q->m);
		else
			gen_next(&q->g);
	}
	*seq = q;
	return TS_OK;
}

static enum ts_err
sim_step(void *impl, void *const *seqs, size_t n, uint32_t *ids)
{
	size_t i;

	(void)impl;
	for (i = 0; i < n; i++) {
		struct sim_seq *q = seqs[i];

		ids[i] = q->lm ? gen_lm_next(&q->m) : gen_next(&q->g);
	}
	return TS_OK;
}

static const char *
sim_token_text(void *impl, uint32_t id, size_t *len)
{
	(void)impl;
	return gen_token_text(id, len);
}

static void
sim_seq_free(void *impl, void *seq)
{
	struct sim_seq *q = seq;

	(void)impl;
	if (q != NULL && q->lm)
		gen_lm_free(&q->m);
	free(q);
}

const struct engine_backend engine_backend_sim = {
	NULL, "sim", 0, 0, { GEN_EOS_ID, UINT32_MAX }, sim_seq_start, sim_step,
	sim_token_text, sim_seq_free
};

/* ---- sequences ------------------------------------------------------- */

static void
notify(struct engine_seq *s)
{
	uint64_t one = 1;

	if (s->req.notify_fd >= 0 &&
	    write(s->req.notify_fd, &one, sizeof(one)) < 0 &&
	    errno != EAGAIN) {
		/* Nothing to do: the relay also wakes on its own timer. */
	}
}

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

static enum state_status
status_of(const struct engine *e, const struct engine_seq *s)
{
	switch ((enum engine_finish)atomic_load(&s->finish)) {
	case ENGINE_FINISH_LENGTH:
		/* A client that left before [DONE] reached it. */
		return s->cancel && !e->cfg.no_cancel ? STATE_CANCELLED :
		    STATE_DONE;
	case ENGINE_FINISH_STOP:
		return STATE_DONE;
	case ENGINE_FINISH_CANCELLED:
		return STATE_CANCELLED;
	default:
		return STATE_ERROR;
	}
}

/* Both sides let go: close the state record, report, free. */
static void
seq_finalize(struct engine *e, struct engine_seq *s)
{
	uint32_t produced = atomic_load(&s->produced);
	uint32_t delivered = atomic_load(&s->delivered);
	struct state_finish fin;

	fin.wasted = produced > delivered ? produced - delivered : 0;
	fin.leave_us = s->cancel && s->leave_ns > s->cancel_ns ?
	    (uint64_t)(s->leave_ns - s->cancel_ns) / 1000u : 0;
	fin.cause = s->cancel ? s->cause : STATE_CAUSE_NONE;
	if (atomic_load(&s->finish) == ENGINE_FINISH_SHUTDOWN)
		fin.cause = STATE_CAUSE_SHUTDOWN;
	if (e->st != NULL && s->state_id != 0) {
		state_set_finish(e->st, s->state_id, &fin);
		state_end(e->st, s->state_id, status_of(e, s));
	}
	if (e->hooks.on_finish != NULL) {
		enum engine_finish f = atomic_load(&s->finish);

		if (f == ENGINE_FINISH_LENGTH && status_of(e, s) ==
		    STATE_CANCELLED)
			f = ENGINE_FINISH_CANCELLED;
		e->hooks.on_finish(e->hooks.ctx, f, produced,
		    (uint32_t)fin.wasted);
	}
	if (s->bseq != NULL)
		e->be.seq_free(e->be.impl, s->bseq);
	if (s->chunks != NULL) {
		uint32_t i, n = atomic_load(&s->produced);

		for (i = 0; i < n; i++)
			free(s->chunks[i]);
	}
	for (size_t k = 0; k < 4; k++)
		free(s->stop_copy[k]);
	free(s->chunks);
	free(s->chunk_lens);
	free(s->tail);
	free(s->rel);
	free(s->ids);
	free(s->prompt_copy);
	free(s);
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
	notify(s);
	s->engine_held = 0;
	if (!s->relay_held)
		seq_finalize(e, s);
}

/* Holds the releaser's end text in s->tail (before finish is stored). */
static void
seq_release_tail(struct engine_seq *s)
{
	struct gen_chunk c;

	if (s->rel == NULL || s->rel->finished)
		return;
	gen_release_finish(s->rel, &c);
	if (c.len > 0) {
		s->tail = xmalloc(c.len);
		memcpy(s->tail, c.p, c.len);
		s->tail_len = c.len;
	}
}

/* Runs token text through the releaser; the released text is stored as
 * the chunk of token p. *stop is set when a stop string matched. */
static void
seq_release_token(struct engine *e, struct engine_seq *s, uint32_t p,
    uint32_t id, int *stop)
{
	size_t len, off = 0, got = 0;
	const char *text = e->be.token_text(e->be.impl, id, &len);
	char *out = NULL;

	*stop = 0;
	if (text == NULL)
		len = 0;
	/* a token text longer than one feed goes in pieces */
	do {
		size_t n = len - off > GEN_RELEASE_FEED_MAX ?
		    GEN_RELEASE_FEED_MAX : len - off;
		struct gen_chunk c = { NULL, 0 };

		if (gen_release_bytes(s->rel, text + off, n, &c, stop) !=
		    TS_OK)
			break;
		if (c.len > 0) {
			out = xrealloc(out, got + c.len);
			memcpy(out + got, c.p, c.len);
			got += c.len;
		}
		off += n;
	} while (off < len && !*stop);
	s->chunks[p] = out;
	s->chunk_lens[p] = (uint32_t)got;
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
	int stop = 0;

	e->generated++;
	atomic_fetch_add(&s->generated, 1);
	if (e->st != NULL && s->state_id != 0)
		state_add_generated(e->st, s->state_id, 1);
	if (e->hooks.on_tokens != NULL)
		e->hooks.on_tokens(e->hooks.ctx, 1);
	if ((id == e->be.eos_ids[0] || id == e->be.eos_ids[1]) &&
	    (s->samp.lm || e->be.byte_tokens)) {
		seq_release_tail(s);
		return ENGINE_FINISH_STOP;
	}
	if (s->rel != NULL)
		seq_release_token(e, s, p, id, &stop);
	s->ids[p] = id;
	atomic_store_explicit(&s->produced, p + 1, memory_order_release);
	notify(s);
	if (stop)
		return ENGINE_FINISH_STOP;
	if (p + 1 >= s->cap) {
		seq_release_tail(s);
		return ENGINE_FINISH_LENGTH;
	}
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
		s->prefill_end_ns = e->be.physical ? now : now + scaled_ns(
		    s->req.prefill_ms, factor,
		    jitter_ns(e, e->cfg.jitter_prefill_ms));
		atomic_store(&s->in_slot, 1);
		notify(s);
		if (e->st != NULL && s->state_id != 0)
			state_set_phase(e->st, s->state_id,
			    STATE_PHASE_PREFILL, now > s->req.t0_ns ?
			    (uint64_t)(now - s->req.t0_ns) / 1000u : 0);
		if (e->hooks.on_admit != NULL)
			e->hooks.on_admit(e->hooks.ctx, now - s->req.t0_ns);
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
	return scaled_ns(s->own_cadence ? s->req.tpot_ms : e->cfg.lat.tpot_ms,
	    factor, jitter);
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

		rc[i] = e->be.seq_start(e->be.impl, s->req.prompt,
		    s->req.prompt_len, s->req.start_index, &s->samp,
		    &s->bseq);
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
			batch[m] = batch[i];
			ids[m] = ids[m];
			m++;
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
	int64_t jit = jitter_ns(e, e->cfg.jitter_tpot_ms);
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
		if (e->st != NULL && s->state_id != 0)
			state_set_phase(e->st, s->state_id,
			    STATE_PHASE_DECODE, 0);
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
				s->cause = STATE_CAUSE_WRITE_STALL;
				s->cancel_ns = now;
			}
			if (s->req.on_stall != NULL)
				s->req.on_stall(s->req.ctx);
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
    const struct engine_backend *backend, struct state *st)
{
	struct engine *e;
	pthread_condattr_t ca;

	*out = NULL;
	if (cfg->max_num_seqs < 1 || cfg->max_num_seqs > ENGINE_MAX_SEQS ||
	    !(cfg->load_factor_max >= 1.0) || cfg->jitter_prefill_ms < 0 ||
	    cfg->jitter_tpot_ms < 0 || cfg->write_stall_ms < 0)
		return TS_EINVAL;
	e = xcalloc(1, sizeof(*e));
	e->cfg = *cfg;
	e->be = *backend;
	e->st = st;
	e->rng = cfg->seed;
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
    const struct engine_backend *backend, struct state *st)
{
	return engine_init(out, cfg, backend, st);
}

enum ts_err
engine_create(struct engine **out, const struct engine_config *cfg,
    const struct engine_backend *backend, struct state *st)
{
	enum ts_err rc = engine_init(out, cfg, backend, st);

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

void
engine_set_hooks(struct engine *e, const struct engine_hooks *h)
{
	pthread_mutex_lock(&e->mu);
	e->hooks = *h;
	pthread_mutex_unlock(&e->mu);
}

/* ---- the relay's side ------------------------------------------------ */

enum ts_err
engine_submit(struct engine *e, const struct engine_request *r,
    struct engine_seq **out)
{
	struct engine_seq *s;

	*out = NULL;
	pthread_mutex_lock(&e->mu);
	if (e->stopping) {
		pthread_mutex_unlock(&e->mu);
		return TS_ETIMEDOUT;
	}
	/* Free slots take requests at once (the engine thread admits
	 * them); beyond them, max_waiting may wait. */
	if ((uint64_t)e->nslots + e->nwaiting >=
	    (uint64_t)e->cfg.max_num_seqs + e->cfg.max_waiting) {
		pthread_mutex_unlock(&e->mu);
		return TS_ELIMIT;
	}
	s = xcalloc(1, sizeof(*s));
	s->req = *r;
	s->prompt_copy = xstrndup(r->prompt != NULL ? r->prompt : "",
	    r->prompt_len);
	s->req.prompt = s->prompt_copy;
	if (r->sampling != NULL)
		s->samp = *r->sampling;
	s->req.sampling = &s->samp;
	for (size_t k = 0; k < r->nstop && k < 4; k++) {
		s->stop_copy[k] = xstrndup(r->stop[k], r->stop_len[k]);
		s->req.stop[k] = s->stop_copy[k];
	}
	if (s->samp.lm || e->be.byte_tokens) {
		s->rel = xmalloc(sizeof(*s->rel));
		if (gen_release_init(s->rel, s->req.stop, s->req.stop_len,
		    s->req.nstop < 4 ? s->req.nstop : 4) != TS_OK) {
			pthread_mutex_unlock(&e->mu);
			for (size_t k = 0; k < 4; k++)
				free(s->stop_copy[k]);
			free(s->rel);
			free(s->prompt_copy);
			free(s);
			return TS_EINVAL;
		}
	}
	s->state_id = e->st == NULL ? 0 : state_begin(e->st,
	    (enum state_kind)r->kind, r->max_tokens, r->prompt_tokens,
	    r->resumed_from, r->start_index, r->key);
	s->cap = r->max_tokens > r->start_index ?
	    r->max_tokens - r->start_index : 0;
	if (s->rel != NULL) {
		s->chunks = xcalloc(s->cap + 1u, sizeof(*s->chunks));
		s->chunk_lens = xcalloc(s->cap + 1u, sizeof(*s->chunk_lens));
	}
	s->ids = xcalloc(s->cap + 1u, sizeof(*s->ids));
	s->own_cadence = r->tpot_ms >= 0;
	s->phase = SEQ_WAITING;
	s->relay_held = 1;
	s->engine_held = 1;
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
	return s->state_id;
}

void
engine_seq_view(struct engine_seq *s, struct engine_view *v)
{
	v->finish = (enum engine_finish)atomic_load_explicit(&s->finish,
	    memory_order_acquire);
	v->produced = atomic_load_explicit(&s->produced,
	    memory_order_acquire);
	v->ids = s->ids;
	v->released = s->rel != NULL;
	v->chunks = (const char *const *)s->chunks;
	v->chunk_lens = s->chunk_lens;
	v->tail = s->tail;
	v->tail_len = s->tail_len;
	v->generated = atomic_load(&s->generated);
	v->in_slot = atomic_load_explicit(&s->in_slot, memory_order_relaxed);
}

const char *
engine_token_text(const struct engine *e, uint32_t id, size_t *len)
{
	return e->be.token_text(e->be.impl, id, len);
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
		s->cause = STATE_CAUSE_CLIENT_GONE;
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
