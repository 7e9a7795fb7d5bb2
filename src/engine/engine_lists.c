/*
 * engine/engine_lists.c - the engine's listeners (news reaches a relay
 * through a lock-free stack, engine.h) and its timer heap (prefill ends,
 * own cadences, replay schedules: a min-heap by due). engine.c runs
 * them under its lock.
 */
#include "engine/engine_int.h"

#include <stdlib.h>
#include <string.h>

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
void
eng_news(struct engine *e, struct engine_seq *s)
{
	struct engine_listener *l = s->req.listener;
	struct engine_seq *head;

	if (l == NULL || !s->relay_held ||
	    (atomic_fetch_or(&s->list_flags, SEQ_NEWS) & SEQ_NEWS))
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
void
eng_wake_listeners(struct engine *e)
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
 * listener's thread writes. A sequence released while on the stack is
 * not returned (SEQ_GONE: its relay is gone), and one freed meanwhile
 * (SEQ_DEAD) is freed here.
 */
struct engine_seq *
engine_listener_take(struct engine_listener *l)
{
	struct engine_seq *s = atomic_exchange_explicit(&l->news, NULL,
	    memory_order_acquire), *out = NULL, *next;

	for (; s != NULL; s = next) {
		unsigned f;

		next = s->push_next;
		f = atomic_fetch_and(&s->list_flags, ~SEQ_NEWS);
		if (f & SEQ_DEAD) {
			free(s);
			continue;
		}
		if (f & SEQ_GONE)
			continue;       /* released: its relay is no more */
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

/* ---- the timer heap ---------------------------------------------------- */

static void
heap_swap(struct engine *e, uint32_t i, uint32_t j)
{
	struct engine_seq *t = e->heap[i];

	e->heap[i] = e->heap[j];
	e->heap[j] = t;
	e->heap[i]->heap_idx = i;
	e->heap[j]->heap_idx = j;
}

static void
heap_up(struct engine *e, uint32_t i)
{
	while (i > 0 && e->heap[(i - 1) / 2]->due > e->heap[i]->due) {
		heap_swap(e, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void
heap_down(struct engine *e, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < e->nheap && e->heap[l]->due < e->heap[m]->due)
			m = l;
		if (r < e->nheap && e->heap[r]->due < e->heap[m]->due)
			m = r;
		if (m == i)
			return;
		heap_swap(e, i, m);
		i = m;
	}
}

void
eng_heap_push(struct engine *e, struct engine_seq *s, int64_t due)
{
	s->due = due;
	s->heap_idx = e->nheap;
	e->heap[e->nheap++] = s;
	heap_up(e, s->heap_idx);
}

void
eng_heap_remove(struct engine *e, struct engine_seq *s)
{
	uint32_t i = s->heap_idx;

	if (i == NO_INDEX)
		return;
	s->heap_idx = NO_INDEX;
	if (i != --e->nheap) {
		e->heap[i] = e->heap[e->nheap];
		e->heap[i]->heap_idx = i;
		heap_down(e, i);
		heap_up(e, i);
	}
}

