/*
 * model/model_pool.h - a small fixed pool of worker threads for the forward
 * pass: one job at a time, its index range split into equal contiguous
 * parts, one per thread, the caller's thread taking part 0.
 *
 * Kept simple on purpose: a mutex, a "go" condition variable with a job
 * generation number and a "done" condition variable with a count of
 * parts still running. A job costs two condition-variable round trips,
 * a few microseconds, so callers give it work of at least tens of
 * microseconds (a matrix, not a row).
 */
#ifndef TS_MODEL_MODEL_POOL_H
#define TS_MODEL_MODEL_POOL_H

#include <stdint.h>

#include "common/ts.h"

#define MODEL_POOL_MAX_THREADS 256

struct model_pool;

/* One part of a job: indices [lo, hi) of it, run on thread `tid`
 * (0 = the caller, 1..threads-1 the workers). */
typedef void model_pool_fn(void *arg, uint32_t lo, uint32_t hi,
    uint32_t tid);

/*
 * Starts threads-1 workers (threads 1..MODEL_POOL_MAX_THREADS; 1 runs
 * every job on the caller's thread). Returns TS_OK, TS_EINVAL for a bad
 * count or TS_ESYS (errno kept) when a thread cannot start.
 */
enum ts_err model_pool_create(struct model_pool **out, uint32_t threads);

/* Threads in the pool, the caller's included. */
uint32_t model_pool_threads(const struct model_pool *p);

/*
 * Runs fn over [0, n) split in model_pool_threads() contiguous parts and
 * returns when every part has returned; the parts' writes are visible to
 * the caller then. Not reentrant: one caller at a time, and fn must not
 * call model_pool_run.
 */
void model_pool_run(struct model_pool *p, model_pool_fn *fn, void *arg,
    uint32_t n);

/* Stops and joins the workers. Accepts NULL. */
void model_pool_destroy(struct model_pool *p);

/* The number of online CPUs (sysconf), at least 1 and at most
 * MODEL_POOL_MAX_THREADS. */
uint32_t model_pool_default_threads(void);

#endif /* TS_MODEL_MODEL_POOL_H */
