/*
 * stats.c - nearest-rank percentiles, mean, min and max (see stats.h).
 */
#include "bench/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack when deciding that p / 100 * n is a whole number. */
#define STATS_RANK_EPS 1e-9

/*
 * qsort comparator: ascending, NaN after every number so that a sort is
 * still a total order when a NaN slips in.
 */
static int
stats_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	if (isnan(x) || isnan(y))
		return isnan(x) - isnan(y);
	return (x > y) - (x < y);
}

/* True when some sample is NaN: such a set has no order statistics. */
static int
stats_has_nan(const double *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (isnan(v[i]))
			return 1;
	return 0;
}

/*
 * ceil(p / 100 * n) computed as p * n / 100, which is exact for integer p
 * and realistic n; the epsilon then absorbs the binary rounding of decimal
 * p such as 99.9. Clamped to 1..n.
 */
size_t
stats_rank(double p, size_t n)
{
	double r, k;

	if (n == 0 || !(p > 0.0 && p <= 100.0))
		return 0;
	r = p * (double)n / 100.0;
	k = ceil(r);
	if (k - 1.0 >= r * (1.0 - STATS_RANK_EPS))
		k -= 1.0;
	if (k < 1.0)
		return 1;
	if (k > (double)n)
		return n;
	return (size_t)k;
}

void
stats_sort(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), stats_cmp);
}

enum ts_err
stats_percentile_sorted(const double *sorted, size_t n, double p,
    double *out)
{
	size_t k = stats_rank(p, n);

	if (k == 0)
		return TS_EINVAL;
	*out = sorted[k - 1];
	return TS_OK;
}

enum ts_err
stats_percentile(const double *v, size_t n, double p, double *out)
{
	double *copy;
	enum ts_err rc;

	if (stats_rank(p, n) == 0 || stats_has_nan(v, n))
		return TS_EINVAL;
	copy = xmalloc(n * sizeof(*copy));
	memcpy(copy, v, n * sizeof(*copy));
	stats_sort(copy, n);
	rc = stats_percentile_sorted(copy, n, p, out);
	free(copy);
	return rc;
}

enum ts_err
stats_mean(const double *v, size_t n, double *out)
{
	double sum = 0.0;
	size_t i;

	if (n == 0 || stats_has_nan(v, n))
		return TS_EINVAL;
	for (i = 0; i < n; i++)
		sum += v[i];
	*out = sum / (double)n;
	return TS_OK;
}

/* The smallest (sign 1) or largest (sign -1) of v[0..n). */
static enum ts_err
stats_extreme(const double *v, size_t n, double sign, double *out)
{
	double m;
	size_t i;

	if (n == 0 || stats_has_nan(v, n))
		return TS_EINVAL;
	for (m = v[0], i = 1; i < n; i++)
		if (sign * v[i] < sign * m)
			m = v[i];
	*out = m;
	return TS_OK;
}

enum ts_err
stats_min(const double *v, size_t n, double *out)
{
	return stats_extreme(v, n, 1.0, out);
}

enum ts_err
stats_max(const double *v, size_t n, double *out)
{
	return stats_extreme(v, n, -1.0, out);
}

enum ts_err
stats_median(const double *v, size_t n, double *out)
{
	return stats_percentile(v, n, 50.0, out);
}

/*
 * One sort for all the order statistics, then a pass for the mean. Works
 * on a private copy so the caller's samples keep their (arrival) order.
 */
enum ts_err
stats_summarize(const double *v, size_t n, struct stats_summary *out)
{
	struct stats_summary s;
	double *sorted;

	if (n == 0 || stats_has_nan(v, n))
		return TS_EINVAL;
	sorted = xmalloc(n * sizeof(*sorted));
	memcpy(sorted, v, n * sizeof(*sorted));
	stats_sort(sorted, n);

	memset(&s, 0, sizeof(s));
	s.n = n;
	s.min = sorted[0];
	s.max = sorted[n - 1];
	(void)stats_mean(sorted, n, &s.mean);
	(void)stats_percentile_sorted(sorted, n, 50.0, &s.p50);
	(void)stats_percentile_sorted(sorted, n, 90.0, &s.p90);
	(void)stats_percentile_sorted(sorted, n, 99.0, &s.p99);
	s.median = s.p50;
	free(sorted);

	*out = s;
	return TS_OK;
}
