/*
 * test_model_sample.c - model_sample (src/model/model_sample.c): greedy
 * argmax at temperature 0 and with a tiny top_p, ties, determinism from
 * the seed, different seeds, the sampled frequencies, the nucleus's
 * cut, and the PRNG's stuck state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_sample.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const float v1[] = { 0.1f, 2.5f, -1.0f, 2.4f, 0.0f };
static const float v2[] = { -5.0f, -3.0f, -3.0f, -4.0f };   /* tie 1, 2 */
static const float v3[] = { 7.0f };

static void
test_argmax_at_temperature_zero(void **unused)
{
	uint64_t rng = model_rng_seed(1), before = rng;

	assert_int_equal(model_sample(v1, NELEM(v1), 0.0f, 1.0f, &rng), 1);
	assert_int_equal(model_sample(v2, NELEM(v2), 0.0f, 0.9f, &rng), 1);
	assert_int_equal(model_sample(v3, NELEM(v3), 0.0f, 1.0f, &rng), 0);
	assert_int_equal(model_sample(v1, NELEM(v1), -1.0f, 1.0f, &rng), 1);
	assert_int_equal(model_sample(v1, NELEM(v1), NAN, 1.0f, &rng), 1);
	/* greedy draws nothing: the stream of a seed does not move */
	assert_true(rng == before);
	assert_int_equal(model_argmax(v2, NELEM(v2)), 1);
}

static void
test_tiny_top_p_is_argmax(void **unused)
{
	uint64_t seed;

	for (seed = 0; seed < 200; seed++) {
		uint64_t rng = model_rng_seed(seed);

		assert_int_equal(model_sample(v1, NELEM(v1), 1.0f, 1e-6f,
		    &rng), 1);
		assert_int_equal(model_sample(v1, NELEM(v1), 5.0f, 0.0f,
		    &rng), 1);
		/* ties keep the lower id */
		assert_int_equal(model_sample(v2, NELEM(v2), 1.0f, 1e-6f,
		    &rng), 1);
	}
}

/* n ids drawn from `seed`. */
static void
draw(uint64_t seed, float temp, float top_p, uint32_t *out, size_t n)
{
	static float logits[64];
	uint64_t rng = model_rng_seed(seed);
	size_t i;

	for (i = 0; i < NELEM(logits); i++)
		logits[i] = (float)((i * 37) % 11) * 0.3f;
	for (i = 0; i < n; i++)
		out[i] = model_sample(logits, NELEM(logits), temp, top_p,
		    &rng);
}

static void
test_seeded_determinism(void **unused)
{
	static const float tp[] = { 1.0f, 0.9f, 0.5f };
	uint32_t a[64], b[64];
	size_t k;

	for (k = 0; k < NELEM(tp); k++) {
		draw(42, 1.0f, tp[k], a, NELEM(a));
		draw(42, 1.0f, tp[k], b, NELEM(b));
		assert_memory_equal(a, b, sizeof(a));
		draw(43, 1.0f, tp[k], b, NELEM(b));
		assert_memory_not_equal(a, b, sizeof(a));
	}
	/* seed 0 is a seed like any other */
	draw(0, 1.0f, 1.0f, a, NELEM(a));
	draw(1, 1.0f, 1.0f, b, NELEM(b));
	assert_memory_not_equal(a, b, sizeof(a));
}

/* Frequencies of 20000 draws from p = 0.5, 0.3, 0.2 and the nucleus of
 * top_p 0.6 ({0, 1}, renormalised: 0.625, 0.375). */
static void
test_frequencies(void **unused)
{
	const float lg[3] = { logf(0.5f), logf(0.3f), logf(0.2f) };
	const double want[2][3] = { { 0.5, 0.3, 0.2 }, { 0.625, 0.375, 0 } };
	const float tp[2] = { 1.0f, 0.6f };
	uint64_t rng = model_rng_seed(7);
	size_t k, i;

	for (k = 0; k < 2; k++) {
		unsigned count[3] = { 0, 0, 0 };

		for (i = 0; i < 20000; i++)
			count[model_sample(lg, 3, 1.0f, tp[k], &rng)]++;
		for (i = 0; i < 3; i++)
			assert_true(fabs(count[i] / 20000.0 - want[k][i]) <
			    0.015);
	}
	/* a high temperature flattens: every id is drawn */
	{
		unsigned seen[3] = { 0, 0, 0 };
		const float sharp[3] = { 10.0f, 0.0f, -10.0f };

		for (i = 0; i < 3000; i++)
			seen[model_sample(sharp, 3, 100.0f, 1.0f, &rng)] = 1;
		assert_true(seen[0] && seen[1] && seen[2]);
		for (i = 0; i < 3000; i++)
			assert_int_equal(model_sample(sharp, 3, 0.01f, 1.0f,
			    &rng), 0);
	}
}

/*
 * run.c's shortcut keeps only ids with p >= (1 - top_p) / (n - 1); when
 * top_p < 1/n that can be none of them (here 1000 nearly equal p of
 * about 0.001 against a cutoff of about 0.001001). The nucleus is then
 * the most probable id alone.
 */
static void
test_nucleus_without_candidates(void **unused)
{
	float lg[1000];
	uint64_t rng = model_rng_seed(3);
	unsigned char seen[1000];
	unsigned distinct = 0;
	size_t i;

	for (i = 0; i < 1000; i++)
		lg[i] = -(float)i * 1e-4f;
	for (i = 0; i < 100; i++)
		assert_int_equal(model_sample(lg, 1000, 1.0f, 1e-4f, &rng), 0);
	/* and a wide nucleus samples widely */
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < 2000; i++)
		seen[model_sample(lg, 1000, 1.0f, 0.9f, &rng)] = 1;
	for (i = 0; i < 1000; i++)
		distinct += seen[i];
	assert_true(distinct > 500);
	/* the nucleus of 0.9 leaves out the least probable tenth or so */
	for (i = 950; i < 1000; i++)
		assert_int_equal(seen[i], 0);
}

static void
test_rng(void **unused)
{
	uint64_t s = 0;
	uint32_t a = model_rng_u32(&s), b = model_rng_u32(&s);
	float f;
	int i;

	assert_true(s != 0);        /* 0 is not a stuck state */
	assert_true(a != b);
	assert_true(model_rng_seed(0) != 0);
	assert_true(model_rng_seed(0) != model_rng_seed(1));
	s = model_rng_seed(9);
	for (i = 0; i < 10000; i++) {
		f = model_rng_f32(&s);
		assert_true(f >= 0.0f && f < 1.0f);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_argmax_at_temperature_zero),
		cmocka_unit_test(test_tiny_top_p_is_argmax),
		cmocka_unit_test(test_seeded_determinism),
		cmocka_unit_test(test_frequencies),
		cmocka_unit_test(test_nucleus_without_candidates),
		cmocka_unit_test(test_rng),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
