/*
 * test_stats.c - nearest-rank percentiles and the other summary statistics
 * on vectors whose answers are known by hand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench/stats.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* One expected percentile: p, and the value nearest rank must give. */
struct pct_case {
	double p;
	double want;
};

/* Checks every (p, want) of `cases` against v, and that v is unchanged. */
static void
check_percentiles(const double *v, size_t n, const struct pct_case *cases,
    size_t ncases)
{
	double before[128], got;
	size_t i;

	assert_true(n <= NELEM(before));
	memcpy(before, v, n * sizeof(*v));
	for (i = 0; i < ncases; i++) {
		got = -1.0;
		assert_int_equal(stats_percentile(v, n, cases[i].p, &got),
		    TS_OK);
		if (got != cases[i].want)
			fail_msg("p%g of %zu samples: got %g, want %g",
			    cases[i].p, n, got, cases[i].want);
	}
	assert_memory_equal(before, v, n * sizeof(*v));
}

static void
test_rank_table(void **state)
{
	static const struct {
		double p;
		size_t n, rank;
	} t[] = {
		{50, 1, 1}, {99, 1, 1}, {100, 1, 1}, {0.001, 1, 1},
		{50, 19, 10}, {90, 19, 18}, {99, 19, 19}, {5, 19, 1},
		{50, 100, 50}, {99, 100, 99}, {100, 100, 100},
		{29, 100, 29}, {57, 100, 57}, {99.9, 1000, 999},
		{99.9, 100, 100}, {0.1, 100, 1}, {33.3, 100, 34},
		/* p * n / 100 = 161.00000000000003 in binary: rank 161 */
		{16.1, 1000, 161}, {8.3, 1000000, 83000},
		{50, 2, 1}, {50, 4, 2}, {75, 4, 3}, {25, 4, 1},
		/* invalid: n == 0, p outside (0, 100], NaN */
		{50, 0, 0}, {0, 10, 0}, {-1, 10, 0}, {100.5, 10, 0},
		{NAN, 10, 0},
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(t); i++)
		if (stats_rank(t[i].p, t[i].n) != t[i].rank)
			fail_msg("rank(p=%g, n=%zu) = %zu, want %zu", t[i].p,
			    t[i].n, stats_rank(t[i].p, t[i].n), t[i].rank);
}

static void
test_one_sample(void **state)
{
	static const double v[] = {42.5};
	static const struct pct_case c[] = {
		{0.1, 42.5}, {50, 42.5}, {90, 42.5}, {99, 42.5}, {100, 42.5},
	};
	struct stats_summary s;

	(void)state;
	check_percentiles(v, NELEM(v), c, NELEM(c));
	assert_int_equal(stats_summarize(v, NELEM(v), &s), TS_OK);
	assert_int_equal(s.n, 1);
	assert_true(s.min == 42.5 && s.max == 42.5 && s.mean == 42.5);
	assert_true(s.median == 42.5 && s.p99 == 42.5);
}

/* 19 samples: the ITL count of a max_tokens=20 stream. p99 is the max. */
static void
test_nineteen(void **state)
{
	double v[19];
	static const struct pct_case c[] = {
		{5, 1}, {10, 2}, {50, 10}, {90, 18}, {94.8, 19}, {99, 19},
		{100, 19},
	};
	struct stats_summary s;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(v); i++)
		v[i] = (double)(i + 1);
	check_percentiles(v, NELEM(v), c, NELEM(c));
	assert_int_equal(stats_summarize(v, NELEM(v), &s), TS_OK);
	assert_true(s.p99 == s.max);
	assert_true(s.max == 19 && s.min == 1 && s.mean == 10);
	assert_true(s.p50 == 10 && s.median == 10 && s.p90 == 18);
}

/* 1..100 in reverse order: the p-th percentile of 1..100 is p. */
static void
test_hundred(void **state)
{
	double v[100];
	static const struct pct_case c[] = {
		{1, 1}, {10, 10}, {29, 29}, {50, 50}, {57, 57}, {90, 90},
		{99, 99}, {99.5, 100}, {100, 100}, {0.5, 1}, {33.3, 34},
	};
	struct stats_summary s;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(v); i++)
		v[i] = (double)(100 - i);
	check_percentiles(v, NELEM(v), c, NELEM(c));
	assert_int_equal(stats_summarize(v, NELEM(v), &s), TS_OK);
	assert_true(s.p50 == 50 && s.p90 == 90 && s.p99 == 99);
	assert_true(s.mean == 50.5 && s.min == 1 && s.max == 100);
	assert_true(v[0] == 100); /* the caller's order is kept */
}

static void
test_unsorted(void **state)
{
	static const double v[] = {5.5, 1.25, 4, -2, 3};
	static const struct pct_case c[] = {
		{20, -2}, {40, 1.25}, {50, 3}, {60, 3}, {61, 4}, {80, 4},
		{81, 5.5}, {100, 5.5},
	};
	double x;

	(void)state;
	check_percentiles(v, NELEM(v), c, NELEM(c));
	assert_int_equal(stats_min(v, NELEM(v), &x), TS_OK);
	assert_true(x == -2);
	assert_int_equal(stats_max(v, NELEM(v), &x), TS_OK);
	assert_true(x == 5.5);
	assert_int_equal(stats_median(v, NELEM(v), &x), TS_OK);
	assert_true(x == 3);
	assert_int_equal(stats_mean(v, NELEM(v), &x), TS_OK);
	assert_true(fabs(x - 2.35) < 1e-12);
}

static void
test_duplicates(void **state)
{
	static const double v[] = {7, 2, 7, 2, 2};
	static const struct pct_case c[] = {
		{20, 2}, {50, 2}, {60, 2}, {61, 7}, {99, 7}, {100, 7},
	};
	static const double same[] = {3, 3, 3, 3};
	static const struct pct_case c_same[] = {{1, 3}, {50, 3}, {100, 3}};

	(void)state;
	check_percentiles(v, NELEM(v), c, NELEM(c));
	check_percentiles(same, NELEM(same), c_same, NELEM(c_same));
}

/* Even n: the median is the lower middle sample, not an average. */
static void
test_even_median(void **state)
{
	static const double v[] = {10, 40, 20, 30};
	double x;

	(void)state;
	assert_int_equal(stats_median(v, NELEM(v), &x), TS_OK);
	assert_true(x == 20);
}

static void
test_sorted_variant(void **state)
{
	double v[] = {9, 3, 6, 1};
	double x = -1;

	(void)state;
	stats_sort(v, NELEM(v));
	assert_true(v[0] == 1 && v[1] == 3 && v[2] == 6 && v[3] == 9);
	assert_int_equal(stats_percentile_sorted(v, NELEM(v), 75, &x),
	    TS_OK);
	assert_true(x == 6);
	stats_sort(v, 0);
}

static void
test_invalid(void **state)
{
	static const double v[] = {1, 2, 3};
	static const double with_nan[] = {1, NAN, 3};
	struct stats_summary s;
	double x = 123;

	(void)state;
	assert_int_equal(stats_percentile(v, 0, 50, &x), TS_EINVAL);
	assert_int_equal(stats_percentile(NULL, 0, 50, &x), TS_EINVAL);
	assert_int_equal(stats_percentile(v, 3, 0, &x), TS_EINVAL);
	assert_int_equal(stats_percentile(v, 3, -5, &x), TS_EINVAL);
	assert_int_equal(stats_percentile(v, 3, 100.01, &x), TS_EINVAL);
	assert_int_equal(stats_percentile(v, 3, NAN, &x), TS_EINVAL);
	assert_int_equal(stats_percentile(with_nan, 3, 50, &x), TS_EINVAL);
	assert_int_equal(stats_percentile_sorted(v, 0, 50, &x), TS_EINVAL);
	assert_int_equal(stats_mean(v, 0, &x), TS_EINVAL);
	assert_int_equal(stats_mean(with_nan, 3, &x), TS_EINVAL);
	assert_int_equal(stats_min(v, 0, &x), TS_EINVAL);
	assert_int_equal(stats_max(v, 0, &x), TS_EINVAL);
	assert_int_equal(stats_median(v, 0, &x), TS_EINVAL);
	assert_true(x == 123); /* untouched on error */
	assert_int_equal(stats_summarize(v, 0, &s), TS_EINVAL);
	assert_int_equal(stats_summarize(with_nan, 3, &s), TS_EINVAL);
}

static void
test_method_name(void **state)
{
	(void)state;
	assert_string_equal(STATS_PERCENTILE_METHOD, "nearest-rank");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rank_table),
		cmocka_unit_test(test_one_sample),
		cmocka_unit_test(test_nineteen),
		cmocka_unit_test(test_hundred),
		cmocka_unit_test(test_unsorted),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_even_median),
		cmocka_unit_test(test_sorted_variant),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_method_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
