/*
 * stats.h - summary statistics over latency samples for tokbench.
 *
 * Samples are doubles (milliseconds in tokbench) passed as (ptr, len); the
 * caller owns every array, and no function keeps a pointer to one after it
 * returns. Nothing here does I/O or touches global state.
 *
 * Percentiles use the nearest-rank method: the p-th percentile (p in
 * (0, 100]) of n samples is the sample at 1-based rank ceil(p / 100 * n)
 * of the samples sorted in ascending order. It always returns one of the
 * samples (no interpolation), so p99 of 19 samples is their maximum and the
 * median is the lower middle sample when n is even.
 */
#ifndef STATS_H
#define STATS_H

#include <stddef.h>

#include "common/ts.h"

/* Name of the percentile method, for reports. */
#define STATS_PERCENTILE_METHOD "nearest-rank"

/* Everything tokbench reports about one sample set. */
struct stats_summary {
	size_t n;
	double min, max, mean;
	double median;          /* = p50 by nearest rank */
	double p50, p90, p99;
};

/*
 * Nearest-rank 1-based rank of the p-th percentile among n samples:
 * ceil(p / 100 * n), in 1..n. A product within 1e-9 (relative) of an
 * integer counts as that integer, so p = 99 with n = 100 is rank 99 even
 * though 99 / 100 is not exact in binary. Returns 0 when n is 0 or p is not
 * in (0, 100] (NaN included).
 */
size_t stats_rank(double p, size_t n);

/* Sorts v[0..n) in place, ascending (NaN samples sort last). */
void stats_sort(double *v, size_t n);

/*
 * Nearest-rank p-th percentile of samples that are ALREADY SORTED
 * ascending. Returns TS_OK and sets *out, or TS_EINVAL (n == 0, p outside
 * (0, 100]); *out is untouched on error.
 */
enum ts_err stats_percentile_sorted(const double *sorted, size_t n,
    double p, double *out);

/*
 * Nearest-rank p-th percentile of samples in any order. Does not modify v:
 * sorts a private copy (allocated and freed here). Returns TS_OK, or
 * TS_EINVAL (n == 0, p outside (0, 100], a NaN sample).
 */
enum ts_err stats_percentile(const double *v, size_t n, double p,
    double *out);

/* Arithmetic mean, smallest and largest sample. TS_EINVAL when n == 0 or
 * a sample is NaN; *out is then untouched. */
enum ts_err stats_mean(const double *v, size_t n, double *out);
enum ts_err stats_min(const double *v, size_t n, double *out);
enum ts_err stats_max(const double *v, size_t n, double *out);

/* Median = nearest-rank p50 (the lower middle sample for even n). */
enum ts_err stats_median(const double *v, size_t n, double *out);

/*
 * Fills *out with n, min, max, mean, median, p50, p90 and p99 of v (any
 * order, not modified). Returns TS_OK, or TS_EINVAL (n == 0, a NaN
 * sample), leaving *out untouched.
 */
enum ts_err stats_summarize(const double *v, size_t n,
    struct stats_summary *out);

#endif /* STATS_H */
