/*
 * model/model_pool.c - the forward pass's worker threads (see model_pool.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "model/model_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct model_pool;

struct model_pool_worker {
	struct model_pool *pool;
	uint32_t tid;
	pthread_t thread;
};

struct model_pool {
	pthread_mutex_t mu;
	pthread_cond_t go;           /* a new job (gen changed) or stop */
	pthread_cond_t done;         /* pending reached 0 */
	uint64_t gen;                /* job number, under mu */
	uint32_t pending;            /* worker parts still running */
	int stop;
	model_pool_fn *fn;           /* the current job, under mu */
	void *arg;
	uint32_t n;
	uint32_t threads;            /* the caller's included */
	uint32_t started;            /* workers running */
	struct model_pool_worker *workers;   /* [threads - 1] */
};

/* Part `tid` of [0, n) split in `parts`: [*lo, *hi). */
static void
split(uint32_t n, uint32_t parts, uint32_t tid, uint32_t *lo, uint32_t *hi)
{
	*lo = (uint32_t)((uint64_t)n * tid / parts);
	*hi = (uint32_t)((uint64_t)n * (tid + 1) / parts);
}

static void *
worker_main(void *p)
{
	struct model_pool_worker *w = p;
	struct model_pool *pool = w->pool;
	uint64_t seen = 0;

	pthread_mutex_lock(&pool->mu);
	for (;;) {
		model_pool_fn *fn;
		void *arg;
		uint32_t lo, hi;

		while (pool->gen == seen && !pool->stop)
			pthread_cond_wait(&pool->go, &pool->mu);
		if (pool->stop)
			break;
		seen = pool->gen;
		fn = pool->fn;
		arg = pool->arg;
		split(pool->n, pool->threads, w->tid, &lo, &hi);
		pthread_mutex_unlock(&pool->mu);
		if (lo < hi)
			fn(arg, lo, hi, w->tid);
		pthread_mutex_lock(&pool->mu);
		if (--pool->pending == 0)
			pthread_cond_signal(&pool->done);
	}
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

uint32_t
model_pool_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	if (n > MODEL_POOL_MAX_THREADS)
		return MODEL_POOL_MAX_THREADS;
	return (uint32_t)n;
}

enum ts_err
model_pool_create(struct model_pool **out, uint32_t threads)
{
	struct model_pool *p;
	uint32_t i;
	int rc;

	*out = NULL;
	if (threads < 1 || threads > MODEL_POOL_MAX_THREADS)
		return TS_EINVAL;
	p = xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	p->threads = threads;
	p->workers = xcalloc(threads, sizeof(*p->workers));
	for (i = 1; i < threads; i++) {
		struct model_pool_worker *w = &p->workers[i - 1];

		w->pool = p;
		w->tid = i;
		rc = pthread_create(&w->thread, NULL, worker_main, w);
		if (rc != 0) {
			model_pool_destroy(p);
			errno = rc;
			return TS_ESYS;
		}
		p->started++;
	}
	*out = p;
	return TS_OK;
}

uint32_t
model_pool_threads(const struct model_pool *p)
{
	return p->threads;
}

void
model_pool_run(struct model_pool *p, model_pool_fn *fn, void *arg,
    uint32_t n)
{
	uint32_t lo, hi;

	if (p->threads == 1 || n <= 1) {
		if (n > 0)
			fn(arg, 0, n, 0);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->arg = arg;
	p->n = n;
	p->pending = p->threads - 1;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);

	split(n, p->threads, 0, &lo, &hi);
	if (lo < hi)
		fn(arg, lo, hi, 0);

	pthread_mutex_lock(&p->mu);
	while (p->pending > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void
model_pool_destroy(struct model_pool *p)
{
	uint32_t i;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (i = 0; i < p->started; i++)
		pthread_join(p->workers[i].thread, NULL);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
	free(p->workers);
	free(p);
}
