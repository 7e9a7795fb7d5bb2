/*
 * engine/engine.c - slots, waiting queue and the continuous-batching
 * decode loop of one responder process. See engine.h for the model.
 *
 * The batch clock: sequences at the server's TPOT share one grid of step
 * boundaries (grid_next). A prefill runs beside the batch (an idealised
 * chunked prefill: it does not lengthen the steps) and its sequence joins
 * at the first boundary at or after its end: its first token is part of
 * that step, its second comes one step later. When no sequence is on the
 * grid, the prefill that ends first starts it. A request with its own
 * tpot_ms decodes on a cadence of its own (a timer in the heap).
 *
 * Work under the lock is bounded: one pass of engine_advance runs at most
 * one grid step and as many timer firings as there were timers when it
 * began (a timer behind its deadlines may take two of them, another one
 * none: it was not due), in O(slots) with no
 * allocation (scratch arrays of max_num_seqs are made once), so no
 * request can hold another's step or its cancellation back by more than
 * a step.
 *
 * Concurrency: one mutex guards the queue, the slots and every field of a
 * sequence that the engine schedules by. What a relay reads while the
 * engine runs (produced, the ids before it, finish, in_slot) and what it
 * reports (delivered) are C11 atomics, so a relay never takes the lock
 * per token: the engine publishes ids[i] and then stores produced with
 * release order, the relay loads produced with acquire. News reaches a
 * relay through its listener (engine.h): a lock-free stack of sequences,
 * and one wake-up per listener per pass of the loop. Other threads take
 * the lock through engine_lock, and an engine thread that runs behind
 * hands it to them between passes (engine_hand_off): glibc's mutex is
 * not fair.
 */
#define _GNU_SOURCE
#include "engine/engine.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_int.h"
#include "engine/kvcache.h"
#include "text/release.h"
#include "text/utf8.h"

/* Tells the hooks when the cache's used blocks changed. */
static void
kv_report(struct engine *e)
{
	struct kv_cache_stats st;

	if (e->kv == NULL || e->hooks.on_kv == NULL)
		return;
	kv_cache_stats(e->kv, &st);
	if (st.used == e->last_kv_used)
		return;
	e->last_kv_used = st.used;
	e->hooks.on_kv(e->hooks.ctx, st.used, st.nblocks);
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
	cfg->kv_blocks = ENGINE_DEFAULT_KV_BLOCKS;
	cfg->kv_block_size = ENGINE_DEFAULT_BLOCK_SIZE;
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

/* ---- the lock ------------------------------------------------------- */

/* How many times the engine thread yields, between two passes, to
 * threads waiting for its lock (engine_lock) before it takes the lock
 * back anyway: new arrivals cannot hold it off for ever. */
#define ENGINE_YIELDS 64

/* The lock, for any thread but the engine's own: counted in e->lockers
 * while it waits, so the engine thread can hand the lock over between
 * passes (engine_main). */
static void
engine_lock(struct engine *e)
{
	atomic_fetch_add_explicit(&e->lockers, 1, memory_order_relaxed);
	pthread_mutex_lock(&e->mu);
	atomic_fetch_sub_explicit(&e->lockers, 1, memory_order_relaxed);
}

/*
 * Between two passes of an engine thread that runs behind: a fair
 * hand-off. glibc's mutexes are not fair: an unlock followed by a lock on
 * the same thread wins the lock back before a waiter that was woken runs,
 * so engine_submit, engine_cancel and engine_release could wait through
 * many passes. While a thread waits in engine_lock, the engine thread
 * yields (at most ENGINE_YIELDS times) until that thread has it.
 */
static void
engine_hand_off(struct engine *e)
{
	int i;

	pthread_mutex_unlock(&e->mu);
	for (i = 0; i < ENGINE_YIELDS &&
	    atomic_load_explicit(&e->lockers, memory_order_relaxed) > 0; i++)
		sched_yield();
	pthread_mutex_lock(&e->mu);
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
	free(s->lp);
	free(s->prompt_ids);
	free(s->prompt_copy);
	free(s->guide_copy);
	free(s->sched);
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
	o.prompt_tokens = s->req.prompt_tokens;
	o.generated = atomic_load(&s->generated);
	o.prefill_ns = s->has_admit && s->has_first ?
	    atomic_load_explicit(&s->first_ns, memory_order_relaxed) -
	    atomic_load_explicit(&s->admit_ns, memory_order_relaxed) : -1;
	o.decode_ns = s->has_first ? s->last_ns -
	    atomic_load_explicit(&s->first_ns, memory_order_relaxed) : -1;
	if (atomic_load(&s->finish) == ENGINE_FINISH_SHUTDOWN)
		o.cause = ENGINE_CAUSE_SHUTDOWN;
	if (e->hooks.on_finish != NULL)
		e->hooks.on_finish(e->hooks.ctx, s->id, &o);
	seq_free(e, s);
}

static void
slot_remove(struct engine *e, struct engine_seq *s)
{
	uint32_t i = s->slot_idx;

	if (i == NO_INDEX)
		return;
	s->slot_idx = NO_INDEX;
	e->slots[i] = e->slots[--e->nslots];
	e->slots[i]->slot_idx = i;
}

/* Takes s out of the batch, leaving a hole that batch_compact closes:
 * the others keep their order (the order listeners hear of them in, so
 * writes go out in the same order each step). */
static void
batch_remove(struct engine *e, struct engine_seq *s)
{
	if (s->batch_idx == NO_INDEX)
		return;
	e->batch[s->batch_idx] = NULL;
	s->batch_idx = NO_INDEX;
	e->batch_holes++;
}

/* Closes the batch's holes in one pass. */
static void
batch_compact(struct engine *e)
{
	uint32_t i, n = 0;

	if (e->batch_holes == 0)
		return;
	for (i = 0; i < e->nbatch; i++) {
		if (e->batch[i] == NULL)
			continue;
		e->batch[i]->batch_idx = n;
		e->batch[n++] = e->batch[i];
	}
	e->nbatch = n;
	e->batch_holes = 0;
}

/* The same for the sequences waiting to join (few: no index kept). */
static void
joining_remove(struct engine *e, struct engine_seq *s)
{
	uint32_t i;

	for (i = 0; i < e->njoining; i++)
		if (e->joining[i] == s)
			e->joining[i] = NULL;
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
	switch (s->phase) {
	case SEQ_WAITING:
		queue_remove(e, s);
		break;
	case SEQ_JOINING:
		joining_remove(e, s);
		slot_remove(e, s);
		break;
	case SEQ_PREFILL:
	case SEQ_DECODE:
		eng_heap_remove(e, s);
		batch_remove(e, s);
		slot_remove(e, s);
		break;
	case SEQ_DONE:
		return;
	}
	s->phase = SEQ_DONE;
	s->leave_ns = t;
	if (e->kv != NULL) {
		/* finished or cancelled: its blocks go back (the full ones
		 * stay cached until evicted) */
		kv_seq_free(e->kv, &s->kv);
		kv_report(e);
	}
	atomic_store_explicit(&s->finish, f, memory_order_release);
	s->engine_held = 0;
	if (!s->relay_held)
		seq_finalize(e, s);
	else
		eng_news(e, s);
}

/* Whether token `id` completes one of the sequence's stop strings. Its
 * text goes through a releaser (text/release.h), as the relay's does,
 * so both agree on where the text ends. */
static int
seq_stops(struct engine *e, struct engine_seq *s, uint32_t id)
{
	size_t len;
	const char *text;
	int stop = 0;

	if (s->stop == NULL)
		return 0;
	text = e->be.token_text(e->be.impl, id, &len);
	(void)release_text(s->stop, text, text != NULL ? len : 0, NULL,
	    &stop);
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
	if (engine_backend_is_eos(&e->be, id))
		return ENGINE_FINISH_STOP;
	stop = seq_stops(e, s, id);
	s->ids[p] = id;
	if (e->kv != NULL && s->phase != SEQ_WAITING) {
		(void)kv_seq_append(e->kv, &s->kv, id);
		kv_report(e);
	}
	if (s->lp != NULL)
		e->be.logprobs(e->be.impl, s->bseq, id,
		    s->req.sampling.logprobs - 1,
		    s->lp + (size_t)p * s->req.sampling.logprobs);
	atomic_store_explicit(&s->produced, p + 1, memory_order_release);
	eng_news(e, s);
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

/*
 * What ends a sequence before its next token at time t, or NONE: the
 * client left (unless no_cancel), nothing to decode, an injected error.
 * Ends it and returns the finish.
 */
static enum engine_finish
seq_ends_before(struct engine *e, struct engine_seq *s, int64_t t)
{
	enum engine_finish f = ENGINE_FINISH_NONE;

	if (s->cancel && !e->cfg.no_cancel)
		f = ENGINE_FINISH_CANCELLED;
	else if (s->cap == 0)
		f = ENGINE_FINISH_LENGTH;
	else if (seq_errors_now(s))
		f = ENGINE_FINISH_ERROR;
	if (f != ENGINE_FINISH_NONE)
		seq_finish(e, s, f, t);
	return f;
}

/* ---- scheduling ------------------------------------------------------ */

/* A decode step of `ms` at the current load, with the step's jitter. */
static int64_t
step_len(struct engine *e, double ms, int64_t jitter)
{
	if (e->be.physical)
		return 0;       /* the step itself took the time */
	return engine_scaled_ns(ms, engine_load_factor(&e->cfg, e->nslots),
	    jitter);
}

/* A sequence's context: its prompt and every token made so far. */
static uint64_t
seq_context(const struct engine_seq *s)
{
	return s->req.prompt_tokens + s->req.start_index +
	    atomic_load_explicit(&s->produced, memory_order_relaxed);
}

/*
 * The length of the grid's next step, from the batch it will run: the
 * batch, and the joiners this step claims (prefill_shares_step: their
 * prefills lengthen it), `jitter` the step's draw.
 */
static int64_t
grid_len(struct engine *e, int64_t jitter, uint32_t njoin,
    uint64_t join_ctx, int64_t join_prefill_ns)
{
	uint64_t ctx = join_ctx;
	uint32_t i, n = njoin;

	if (e->be.physical)
		return 0;
	if (e->cfg.lat.decode_per_ctx_token_ms != 0 ||
	    e->cfg.lat.decode_per_seq_ms != 0)
		for (i = 0; i < e->nbatch; i++)
			if (e->batch[i] != NULL) {
				n++;
				ctx += seq_context(e->batch[i]);
			}
	return step_len(e, engine_decode_ms(&e->cfg.lat, n, ctx), jitter) +
	    join_prefill_ns;
}

/* Moves waiting requests into free slots; their prefill starts at now
 * and ends at its modeled time (a physical backend's at once: its
 * seq_start is the prefill). */
static void
admit(struct engine *e, int64_t now)
{
	while (e->qhead != NULL && e->nslots < e->cfg.max_num_seqs) {
		struct engine_seq *s = e->qhead;
		double factor, ms;
		int64_t end;

		e->qhead = s->qnext;
		if (e->qhead == NULL)
			e->qtail = NULL;
		s->qnext = NULL;
		e->nwaiting--;
		s->slot_idx = e->nslots;
		e->slots[e->nslots++] = s;
		factor = engine_load_factor(&e->cfg, e->nslots);
		s->phase = SEQ_PREFILL;
		ms = s->req.prefill_ms;
		if (e->kv != NULL && s->prompt_ids != NULL) {
			uint32_t hit = 0;

			(void)kv_seq_start(e->kv, &s->kv, s->prompt_ids,
			    s->nprompt_ids, &hit);
			free(s->prompt_ids);
			s->prompt_ids = NULL;
			atomic_store(&s->cached, hit);
			/* the prefill is priced over the tokens that missed
			 * the cache only */
			ms -= s->req.prefill_per_token_ms * hit;
			if (e->cfg.lat.prefill_per_token2_ms > 0 &&
			    s->req.prefill_per_token_ms > 0) {
				/* the quadratic term over the uncached
				 * tokens: n^2 - u^2 of it goes */
				double n = (double)(s->req.prompt_tokens >
				    hit ? s->req.prompt_tokens : hit);
				double u = n - (double)hit;

				ms -= e->cfg.lat.prefill_per_token2_ms *
				    (n * n - u * u);
			}
			/* a hit never makes a prefill longer */
			if (ms < 0)
				ms = 0;
			if (ms > s->req.prefill_ms)
				ms = s->req.prefill_ms;
			if (e->hooks.on_prefix != NULL)
				e->hooks.on_prefix(e->hooks.ctx, s->id,
				    s->nprompt_ids, hit);
			kv_report(e);
		}
		if (s->sched != NULL) {
			end = now + s->sched[0];   /* replay: as recorded */
		} else if (e->be.physical) {
			end = now;
		} else if (e->cfg.lat.prefill_shares_step &&
		    !s->own_cadence) {
			/* joins the next step at once, lengthening it */
			s->prefill_ns = engine_scaled_ns(ms, factor,
			    engine_dist_ns(&e->jitter,
			    &e->cfg.lat.jitter_prefill));
			end = now;
		} else {
			end = now + engine_scaled_ns(ms, factor,
			    engine_dist_ns(&e->jitter,
			    &e->cfg.lat.jitter_prefill));
		}
		eng_heap_push(e, s, end);
		atomic_store(&s->in_slot, 1);
		s->has_admit = 1;
		eng_news(e, s);
		atomic_store_explicit(&s->admit_ns, now,
		    memory_order_relaxed);
		if (e->hooks.on_admit != NULL)
			e->hooks.on_admit(e->hooks.ctx, s->id,
			    now - s->req.t0_ns);
	}
}

/* The time of the next event, INT64_MAX if none. */
static int64_t
next_event(const struct engine *e)
{
	int64_t t = e->grid_next;

	if (e->nheap > 0 && e->heap[0]->due < t)
		t = e->heap[0]->due;
	return t;
}

/*
 * One forward pass over seqs[0..n) at time t (starting the ones that
 * were not: their seq_start is their prefill, and this pass gives their
 * first token), and publishes each token. A physical backend computes
 * here, so the lock is released meanwhile (only this thread changes the
 * slots; relays only set flags) and *t becomes the time it ended. A
 * sequence the backend cannot start, or a failed pass, ends with an
 * error. Returns how many go on, compacted at the front of seqs.
 */
static uint32_t
forward(struct engine *e, struct engine_seq **seqs, uint32_t n, int64_t *t)
{
	uint32_t i, m = 0, go;
	enum ts_err rc = TS_OK;

	if (n == 0)
		return 0;
	if (e->be.physical)
		pthread_mutex_unlock(&e->mu);
	for (i = 0; i < n; i++) {
		struct engine_seq *s = seqs[i];

		e->step_rc[i] = TS_OK;
		if (s->bseq == NULL)
			e->step_rc[i] = e->be.seq_start(e->be.impl,
			    s->req.model, s->req.prompt, s->req.prompt_len,
			    s->req.start_index, &s->req.sampling, &s->bseq);
		if (e->step_rc[i] == TS_OK)
			e->step_bseqs[m++] = s->bseq;
	}
	if (m > 0)
		rc = e->be.step(e->be.impl, e->step_bseqs, m, e->step_ids);
	if (e->be.physical) {
		pthread_mutex_lock(&e->mu);
		*t = engine_now_ns();
	}
	e->steps++;
	/* step_ids[] follows the started ones; a sequence that ends here
	 * is not looked at again (with no relay holding it, seq_finish
	 * freed it) */
	for (i = 0, m = 0, go = 0; i < n; i++) {
		struct engine_seq *s = seqs[i];
		enum engine_finish f;

		if (e->step_rc[i] != TS_OK || rc != TS_OK) {
			if (e->step_rc[i] == TS_OK)
				m++;
			seq_finish(e, s, ENGINE_FINISH_ERROR, *t);
			continue;
		}
		if (!s->has_first) {
			atomic_store_explicit(&s->first_ns, *t,
			    memory_order_relaxed);
			s->has_first = 1;
		}
		s->last_ns = *t;
		f = seq_publish(e, s, e->step_ids[m++]);
		if (f != ENGINE_FINISH_NONE) {
			seq_finish(e, s, f, *t);
			continue;
		}
		seqs[go++] = s;
	}
	return go;
}

/*
 * The grid step that ends at t: the batch's next tokens and the first
 * tokens of the sequences whose prefill has ended by t, in one pass.
 * Those that join are appended to the batch, so the batch keeps its
 * order. The grid idles when nobody is left on it.
 */
static void
grid_step(struct engine *e, int64_t t)
{
	int64_t jit = engine_dist_ns(&e->jitter, &e->cfg.lat.jitter_decode);
	int64_t first_join = INT64_MAX, join_ns = 0;
	int shares = e->cfg.lat.prefill_shares_step && !e->be.physical;
	uint32_t i, n = 0, go, kept = 0, nclaim = 0;
	uint64_t join_ctx = 0;

	/* a cancelled sequence leaves at this boundary; the step's token
	 * for it is dropped */
	for (i = 0; i < e->nbatch; i++) {
		struct engine_seq *s = e->batch[i];

		if (s != NULL && seq_ends_before(e, s, t) ==
		    ENGINE_FINISH_NONE)
			e->step_seqs[n++] = s;
	}
	for (i = 0; i < e->njoining; i++) {
		struct engine_seq *s = e->joining[i];

		if (s == NULL)
			continue;
		if (s->due > t || (shares && !s->claimed)) {
			/* an engine running late: not ended yet; or, with
			 * prefill_shares_step, not yet in a step (below) */
			e->joining[kept++] = s;
			if (s->due > t && s->due < first_join)
				first_join = s->due;
		} else if (seq_ends_before(e, s, t) == ENGINE_FINISH_NONE) {
			e->step_seqs[n++] = s;
		}
	}
	e->njoining = kept;
	batch_compact(e);
	go = forward(e, e->step_seqs, n, &t);
	batch_compact(e);
	/* the sequences that joined and go on are decoding now */
	for (i = 0; i < go; i++) {
		struct engine_seq *s = e->step_seqs[i];

		if (s->phase != SEQ_JOINING)
			continue;
		s->phase = SEQ_DECODE;
		s->batch_idx = e->nbatch;
		e->batch[e->nbatch++] = s;
		if (e->hooks.on_decode != NULL)
			e->hooks.on_decode(e->hooks.ctx, s->id);
	}
	/* prefill_shares_step: the next step takes the joiners whose
	 * admission came by now, their prefills in its length */
	for (i = 0; shares && i < e->njoining; i++) {
		struct engine_seq *s = e->joining[i];

		if (s->due > t || s->claimed)
			continue;
		if (seq_ends_before(e, s, t) != ENGINE_FINISH_NONE) {
			e->joining[i] = NULL;
			continue;
		}
		s->claimed = 1;
		nclaim++;
		join_ctx += seq_context(s);
		join_ns += s->prefill_ns;
	}
	if (shares) {
		for (i = 0, kept = 0; i < e->njoining; i++)
			if (e->joining[i] != NULL)
				e->joining[kept++] = e->joining[i];
		e->njoining = kept;
	}
	e->grid_next = e->nbatch > 0 || nclaim > 0 ? t + grid_len(e, jit,
	    nclaim, join_ctx, join_ns) : first_join;
	if (first_join < e->grid_next)
		e->grid_next = first_join;
}

/*
 * The timer of s, due at t: its prefill ended (it joins the grid at the
 * next boundary, or starts the grid if it is idle, or, with its own
 * cadence, takes its first token now), or, with its own cadence, its next
 * step.
 */
static void
timer_fired(struct engine *e, struct engine_seq *s, int64_t t, int64_t now)
{
	struct engine_seq *one = s;
	int64_t jit, next;

	eng_heap_remove(e, s);
	s->due = t;
	if (s->phase == SEQ_PREFILL && !s->own_cadence) {
		if (seq_ends_before(e, s, t) != ENGINE_FINISH_NONE)
			return;
		s->phase = SEQ_JOINING;
		e->joining[e->njoining++] = s;
		if (e->grid_next == INT64_MAX)
			e->grid_next = t;   /* an idle grid starts with it */
		return;
	}
	/* its own cadence: a pass of its own */
	if (seq_ends_before(e, s, t) != ENGINE_FINISH_NONE)
		return;
	jit = engine_dist_ns(&e->jitter, &e->cfg.lat.jitter_decode);
	if (forward(e, &one, 1, &t) == 0)
		return;
	if (s->phase == SEQ_PREFILL) {
		s->phase = SEQ_DECODE;
		if (e->hooks.on_decode != NULL)
			e->hooks.on_decode(e->hooks.ctx, s->id);
	}
	/* absolute deadlines: a late pass does not shift later tokens; but a
	 * cadence the engine cannot keep (its steps cost more CPU than their
	 * interval: tpot_ms 1 with n 16 and top_logprobs 20 is 16,000 tokens
	 * a second with their logprobs) is not caught up: a deadline more
	 * than a step behind the pass moves to the pass's time. Caught up,
	 * such timers stayed earliest in the heap for ever and the grid step,
	 * every other stream's, waited behind them by seconds, more every
	 * second (capacity.bats "own cadences the engine cannot keep ...") */
	if (s->sched != NULL) {
		/* replay: the recorded time of the next token, late or not
		 * (a late pass sends what is due at once) */
		uint32_t k = atomic_load_explicit(&s->produced,
		    memory_order_relaxed);

		next = atomic_load_explicit(&s->admit_ns,
		    memory_order_relaxed) + s->sched[k < s->req.nschedule ?
		    k : s->req.nschedule - 1];
		eng_heap_push(e, s, next < t ? t : next);
		return;
	}
	next = s->due + step_len(e, s->tpot_ms, jit);
	if (next < t)
		next = t;
	if (next < now - step_len(e, s->tpot_ms, 0))
		next = now;
	eng_heap_push(e, s, next);
}

/* Cancellations that act at once: waiting, in prefill, and a sequence on
 * a cadence of its own (its in-flight token dropped), whose next step may
 * be seconds away (tpot_ms up to 10,000): its slot is free within this
 * pass, not at that step. A sequence on the grid leaves at the grid's
 * next boundary (grid_step), at most one step away. */
static void
handle_cancels(struct engine *e, int64_t now)
{
	struct engine_seq *s, *next;
	uint32_t i;

	if (e->cfg.no_cancel)
		return;
	for (s = e->qhead; s != NULL; s = next) {
		next = s->qnext;
		if (s->cancel)
			seq_finish(e, s, ENGINE_FINISH_CANCELLED, now);
	}
	for (i = 0; i < e->nslots;) {
		s = e->slots[i];
		if (s->cancel && (s->phase == SEQ_PREFILL ||
		    s->phase == SEQ_JOINING ||
		    (s->phase == SEQ_DECODE && s->own_cadence)))
			seq_finish(e, s, ENGINE_FINISH_CANCELLED, now);
		else
			i++;
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
	e->grid_next = INT64_MAX;
	counts_changed(e);
	eng_wake_listeners(e);
}

/*
 * One bounded pass at `now`: cancellations, admissions, then the events
 * due, earliest first: timers (as many firings as were due when the pass
 * began) and the grid step (once). Returns the time of the next event
 * (<= now when more is already due).
 */
static int64_t
advance_locked(struct engine *e, int64_t now)
{
	uint32_t fired = 0, budget;
	int grid_done = 0;

	if (e->stopping) {
		shutdown_locked(e, now);
		return INT64_MAX;
	}
	handle_cancels(e, now);
	admit(e, now);
	/* at most as many firings as there are timers now (a cadence far
	 * behind its deadlines catches up over passes, not in one) */
	budget = e->nheap;
	for (;;) {
		int64_t th = fired < budget && e->nheap > 0 ?
		    e->heap[0]->due : INT64_MAX;
		int64_t tg = grid_done ? INT64_MAX : e->grid_next;

		if (th > now && tg > now)
			break;
		if (th <= tg) {
			timer_fired(e, e->heap[0], th, now);
			fired++;
		} else {
			grid_step(e, tg);
			grid_done = 1;
		}
	}
	admit(e, now);
	counts_changed(e);
	eng_wake_listeners(e);
	return next_event(e);
}

int64_t
engine_advance(struct engine *e, int64_t now)
{
	int64_t t;

	engine_lock(e);
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
		int64_t now = engine_now_ns();
		int64_t next = advance_locked(e, now);

		if (next <= now) {
			/* more is due: let others in between passes */
			engine_hand_off(e);
		} else if (next == INT64_MAX) {
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
	uint32_t n = cfg->max_num_seqs;

	*out = NULL;
	if (n < 1 || n > ENGINE_MAX_SEQS || !(cfg->load_factor_max >= 1.0) ||
	    cfg->lat.jitter_prefill.std_ms < 0 ||
	    cfg->lat.jitter_decode.std_ms < 0 ||
	    backend->nmodels < 1 || backend->lab_model >= backend->nmodels)
		return TS_EINVAL;
	e = xcalloc(1, sizeof(*e));
	e->cfg = *cfg;
	e->be = *backend;
	if (hooks != NULL)
		e->hooks = *hooks;
	engine_jitter_seed(&e->jitter, cfg->seed);
	/* the prefix-cache model prices modeled prefills: not for a
	 * physical backend, whose prefill takes the time it takes */
	if (cfg->kv_blocks > 0 && !backend->physical &&
	    backend->tokenize != NULL &&
	    kv_cache_create(&e->kv, cfg->kv_blocks, cfg->kv_block_size) !=
	    TS_OK) {
		free(e);
		return TS_EINVAL;
	}
	e->slots = xcalloc(n, sizeof(*e->slots));
	e->heap = xcalloc(n, sizeof(*e->heap));
	e->batch = xcalloc(n, sizeof(*e->batch));
	e->joining = xcalloc(n, sizeof(*e->joining));
	e->step_seqs = xcalloc(n, sizeof(*e->step_seqs));
	e->step_bseqs = xcalloc(n, sizeof(*e->step_bseqs));
	e->step_ids = xcalloc(n, sizeof(*e->step_ids));
	e->step_rc = xcalloc(n, sizeof(*e->step_rc));
	e->grid_next = INT64_MAX;
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
	engine_lock(e);
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
	free(e->heap);
	free(e->batch);
	free(e->joining);
	free(e->step_seqs);
	free(e->step_bseqs);
	free(e->step_ids);
	free(e->step_rc);
	kv_cache_destroy(e->kv);
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
	if (r->sampling.guide != NULL) {
		s->guide_copy = xmalloc(r->sampling.guide_len + 1);
		memcpy(s->guide_copy, r->sampling.guide,
		    r->sampling.guide_len);
		s->guide_copy[r->sampling.guide_len] = '\0';
		s->req.sampling.guide = s->guide_copy;
	}
	atomic_init(&s->list_flags, 0);
	if (nstop > 0) {
		s->stop = xmalloc(sizeof(*s->stop));
		if (release_init(s->stop, s->req.stop, s->req.stop_len,
		    nstop) != TS_OK) {
			for (k = 0; k < STOP_MAX; k++)
				free(s->stop_copy[k]);
			free(s->stop);
			free(s->prompt_copy);
			free(s->guide_copy);
			free(s);
			return NULL;
		}
	}
	s->cap = r->max_tokens > r->start_index ?
	    r->max_tokens - r->start_index : 0;
	s->ids = xcalloc(s->cap + 1u, sizeof(*s->ids));
	if (s->req.sampling.logprobs > 1u + ENGINE_MAX_TOP_LOGPROBS)
		s->req.sampling.logprobs = 1u + ENGINE_MAX_TOP_LOGPROBS;
	if (s->req.sampling.logprobs > 0 && s->cap > 0)
		s->lp = xcalloc((size_t)s->cap * s->req.sampling.logprobs,
		    sizeof(*s->lp));
	s->own_cadence = r->tpot_ms >= 0;
	s->tpot_ms = r->tpot_ms < ENGINE_MIN_TPOT_MS ? ENGINE_MIN_TPOT_MS :
	    r->tpot_ms;
	s->req.schedule_ns = NULL;
	if (r->schedule_ns != NULL && r->nschedule > 0) {
		s->sched = xcalloc(r->nschedule, sizeof(*s->sched));
		memcpy(s->sched, r->schedule_ns,
		    r->nschedule * sizeof(*s->sched));
		s->req.schedule_ns = s->sched;
		s->own_cadence = 1;
	}
	s->phase = SEQ_WAITING;
	s->slot_idx = s->heap_idx = s->batch_idx = NO_INDEX;
	s->relay_held = 1;
	s->engine_held = 1;
	return s;
}

enum engine_refusal
engine_refusal(const struct engine *e, const struct engine_request *r)
{
	size_t k, nstop = r->nstop < STOP_MAX ? r->nstop : STOP_MAX;

	if (r->sampling.logprobs > 0 && e->be.logprobs == NULL)
		return ENGINE_REFUSAL_LOGPROBS;
	if (r->sampling.guide != NULL && !e->be.guided)
		return ENGINE_REFUSAL_GUIDE;
	/* stop_init's checks, then release_init's */
	for (k = 0; k < nstop; k++) {
		if (r->stop[k] == NULL || r->stop_len[k] == 0)
			return ENGINE_REFUSAL_STOP_EMPTY;
		if (r->stop_len[k] > STOP_MAX_BYTES)
			return ENGINE_REFUSAL_STOP_LONG;
	}
	for (k = 0; k < nstop; k++)
		if (!utf8_valid(r->stop[k], r->stop_len[k]))
			return ENGINE_REFUSAL_STOP_UTF8;
	return ENGINE_REFUSAL_NONE;
}

enum ts_err
engine_submit(struct engine *e, const struct engine_request *r,
    struct engine_seq **out)
{
	struct engine_seq *s;

	*out = NULL;
	if (engine_refusal(e, r) != ENGINE_REFUSAL_NONE)
		return TS_EINVAL;
	s = seq_new(r);
	if (s == NULL)
		return TS_EINVAL;
	if (e->kv != NULL && r->prefix_cache && r->prompt_len > 0) {
		/* the prompt's ids for the prefix cache, outside the lock */
		size_t n = e->be.tokenize(e->be.impl, r->model, s->req.prompt,
		    r->prompt_len, NULL, 0);

		if (n > 0 && n <= KV_SEQ_MAX_TOKENS) {
			s->prompt_ids = xcalloc(n, sizeof(*s->prompt_ids));
			s->nprompt_ids = e->be.tokenize(e->be.impl, r->model,
			    s->req.prompt, r->prompt_len, s->prompt_ids, n);
		}
	}
	engine_lock(e);
	if (e->stopping) {
		pthread_mutex_unlock(&e->mu);
		seq_free(e, s);
		return TS_ESHUTDOWN;
	}
	/* Every stream a relay still holds counts, a finished one whose
	 * client is slow to take its last bytes included: beyond slots and
	 * the waiting queue, 429. */
	if ((uint64_t)e->nheld >= (uint64_t)e->cfg.max_num_seqs +
	    e->cfg.max_waiting) {
		pthread_mutex_unlock(&e->mu);
		seq_free(e, s);
		return TS_ELIMIT;
	}
	e->nheld++;             /* its place, before the work below */
	if (!e->be.physical) {
		/* A modeled backend's sequence starts here, outside the
		 * lock and after admission: the simulator's resume replays
		 * up to max_tokens skipped tokens, which under the lock
		 * held every other stream's step back (a physical backend's
		 * start is its prefill: forward() runs it, unlocked). A
		 * failure is met again, and reported, by forward(). */
		pthread_mutex_unlock(&e->mu);
		(void)e->be.seq_start(e->be.impl, s->req.model, s->req.prompt,
		    s->req.prompt_len, s->req.start_index, &s->req.sampling,
		    &s->bseq);
		engine_lock(e);
		if (e->stopping) {
			e->nheld--;
			pthread_mutex_unlock(&e->mu);
			seq_free(e, s);
			return TS_ESHUTDOWN;
		}
	}
	if (e->hooks.on_submit != NULL)
		s->id = e->hooks.on_submit(e->hooks.ctx, &s->req);
	s->req.hook_arg = NULL;
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

void
engine_seq_listen(struct engine *e, struct engine_seq *s,
    struct engine_listener *l)
{
	engine_lock(e);
	s->req.listener = l;
	eng_news(e, s);
	eng_wake_listeners(e);
	pthread_mutex_unlock(&e->mu);
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
	v->lp = s->lp;
	v->cached_tokens = atomic_load(&s->cached);
	v->lp_stride = s->lp != NULL ? s->req.sampling.logprobs : 0;
	v->generated = atomic_load(&s->generated);
	v->in_slot = atomic_load_explicit(&s->in_slot, memory_order_relaxed);
	v->admit_ns = atomic_load_explicit(&s->admit_ns, memory_order_relaxed);
	v->first_ns = atomic_load_explicit(&s->first_ns, memory_order_relaxed);
	/* leave_ns is written before finish's release store, and read only
	 * after its acquire load saw the finish */
	v->end_ns = v->finish != ENGINE_FINISH_NONE ? s->leave_ns : 0;
}

void
engine_delivered(struct engine_seq *s, uint32_t delivered)
{
	atomic_store(&s->delivered, delivered);
}

void
engine_cancel(struct engine *e, struct engine_seq *s, int64_t now_ns,
    enum engine_cause cause)
{
	engine_lock(e);
	if (!s->cancel) {
		s->cancel = 1;
		s->cause = cause;
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
	engine_lock(e);
	e->nheld--;
	s->relay_held = 0;
	atomic_fetch_or(&s->list_flags, SEQ_GONE);
	if (!s->engine_held)
		seq_finalize(e, s);
	pthread_mutex_unlock(&e->mu);
}

void
engine_shutdown(struct engine *e)
{
	int64_t now = engine_now_ns();

	engine_lock(e);
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
	engine_lock(e);
	out->running = e->nslots;
	out->waiting = e->nwaiting;
	out->held = e->nheld;
	out->steps = e->steps;
	out->generated = e->generated;
	pthread_mutex_unlock(&e->mu);
}
