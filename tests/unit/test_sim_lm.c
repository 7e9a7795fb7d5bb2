/*
 * test_gen_lm.c - unit tests of the language model and sampler
 * (src/sim/lm.c): parameters, determinism and seeds, greedy decoding,
 * temperature, the top_p nucleus, the end-of-sequence token and
 * ignore_eos, byte tokens that spell whole characters, the logits, and a
 * golden vector. The lab generator (sim_lab_next) is pinned by test_gen.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/vocab.h"
#include "sim/lm.h"
#include "text/utf8.h"

/* A string literal as (ptr, len): may hold NUL bytes. */
#define S(s) (s), (sizeof(s) - 1)

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *p;
	size_t len;
} prompts[] = {
	{ S("hello") },
	{ S("") },
	{ S("<|user|>\nWhat is a token?\n<|assistant|>\n") },
	{ S("\xe4\xbd\xa0\xe5\xa5\xbd") },
	{ S("a\0b") },
};

/* Parameter sets the table-driven tests run with. */
static const struct {
	const char *name;
	double temperature, top_p;
	uint64_t seed;
	int has_seed, ignore_eos;
} params[] = {
	{ "defaults", 1.0, 1.0, 0, 0, 0 },
	{ "greedy", 0.0, 1.0, 0, 0, 0 },
	{ "cold nucleus", 0.7, 0.9, 42, 1, 0 },
	{ "hot", 2.0, 1.0, 7, 1, 0 },
	{ "narrow", 1.0, 0.3, 1, 1, 1 },
};

static void
set_params(struct engine_sampling *p, size_t i)
{
	engine_sampling_defaults(p);
	p->temperature = params[i].temperature;
	p->top_p = params[i].top_p;
	p->seed = params[i].seed;
	p->has_seed = params[i].has_seed;
	p->ignore_eos = params[i].ignore_eos;
}

/* Fills ids[0..n) (EOS repeats after the end); returns the tokens before
 * EOS (n if none). */
static size_t
run(const char *prompt, size_t len, const struct engine_sampling *p,
    uint32_t *ids, size_t n)
{
	struct sim_lm lm;
	size_t i, end = n;

	sim_lm_init(&lm, prompt, len, p);
	for (i = 0; i < n; i++) {
		ids[i] = sim_lm_next(&lm);
		if (ids[i] == SIM_EOS_ID && end == n)
			end = i;
	}
	sim_lm_free(&lm);
	return end;
}

static void
test_defaults(void **state)
{
	struct engine_sampling p;
	struct sim_lm lm;
	double l;

	(void)state;
	memset(&p, 0xa5, sizeof(p));
	engine_sampling_defaults(&p);
	assert_true(p.temperature == 1.0);
	assert_true(p.top_p == 1.0);
	assert_int_equal(p.has_seed, 0);
	assert_int_equal(p.ignore_eos, 0);
	assert_int_equal(p.seed, 0);
	assert_int_equal(sim_lm_ncand(), sim_vocab_size() + 1);
	assert_true(SIM_EOS_ID >= sim_vocab_size());
	sim_lm_free(NULL);
	memset(&lm, 0, sizeof(lm));
	sim_lm_free(&lm);
	/* The first step: EOS at 1% of 1/300 (sim/lm.h), by sim/lm.c's own
	 * logarithm, which agrees with libm's to the last bits. */
	sim_lm_init(&lm, S("x"), NULL);
	l = sim_lm_logits(&lm)[sim_lm_ncand() - 1];
	assert_true(fabs(l - log(0.01 / 300.0)) < 1e-13);
	sim_lm_free(&lm);
}

/* The same prompt, parameters and seed give the same ids, also when
 * another generation is interleaved; NULL parameters are the defaults. */
static void
test_determinism(void **state)
{
	enum { N = 64 };
	uint32_t a[N], b[N], c[N];
	struct engine_sampling p;
	struct sim_lm x, y, other;
	size_t i, k;

	(void)state;
	for (i = 0; i < NELEM(params); i++)
		for (k = 0; k < NELEM(prompts); k++) {
			set_params(&p, i);
			(void)run(prompts[k].p, prompts[k].len, &p, a, N);
			sim_lm_init(&x, prompts[k].p, prompts[k].len, &p);
			sim_lm_init(&other, S("another"), &p);
			for (size_t t = 0; t < N; t++) {
				(void)sim_lm_next(&other);
				b[t] = sim_lm_next(&x);
			}
			sim_lm_free(&x);
			sim_lm_free(&other);
			if (memcmp(a, b, sizeof(a)) != 0)
				fail_msg("%s, prompt %zu: runs differ",
				    params[i].name, k);
		}
	engine_sampling_defaults(&p);
	(void)run(S("hello"), &p, a, N);
	sim_lm_init(&y, S("hello"), NULL);
	for (i = 0; i < N; i++)
		c[i] = sim_lm_next(&y);
	sim_lm_free(&y);
	assert_memory_equal(a, c, sizeof(a));
}

/* Different seeds give different answers; the default seed is the
 * prompt's (rng_seed_of). */
static void
test_seeds(void **state)
{
	enum { N = 24, SEEDS = 12 };
	uint32_t ids[SEEDS][N], dflt[N];
	struct engine_sampling p;
	size_t k, i, j;

	(void)state;
	for (k = 0; k < NELEM(prompts); k++) {
		for (i = 0; i < SEEDS; i++) {
			engine_sampling_defaults(&p);
			p.has_seed = 1;
			p.seed = i == 0 ? 0 : UINT64_C(1) << (i * 5);
			p.ignore_eos = 1;
			(void)run(prompts[k].p, prompts[k].len, &p, ids[i], N);
		}
		for (i = 0; i < SEEDS; i++)
			for (j = i + 1; j < SEEDS; j++)
				if (memcmp(ids[i], ids[j], sizeof(ids[i])) ==
				    0)
					fail_msg("prompt %zu: seeds %zu and "
					    "%zu agree", k, i, j);
		engine_sampling_defaults(&p);
		p.ignore_eos = 1;
		(void)run(prompts[k].p, prompts[k].len, &p, dflt, N);
		p.has_seed = 1;
		p.seed = rng_seed_of(prompts[k].p, prompts[k].len);
		(void)run(prompts[k].p, prompts[k].len, &p, ids[0], N);
		assert_memory_equal(dflt, ids[0], sizeof(dflt));
	}
	/* One seed, two prompts: the prompt is context too. */
	engine_sampling_defaults(&p);
	p.has_seed = 1;
	p.seed = 5;
	(void)run(S("one"), &p, ids[0], N);
	(void)run(S("two"), &p, ids[1], N);
	assert_memory_not_equal(ids[0], ids[1], sizeof(ids[0]));
}

/* The index of the highest logit, the lowest one on a tie (EOS masked
 * if asked). */
static size_t
argmax(const double *l, size_t n, int ignore_eos)
{
	size_t k, best = 0;

	for (k = 1; k < n; k++) {
		if (ignore_eos && k == n - 1)
			break;
		if (l[k] > l[best])
			best = k;
	}
	return best;
}

static uint32_t
cand_id(size_t k)
{
	return k + 1 == sim_lm_ncand() ? SIM_EOS_ID : (uint32_t)k;
}

/*
 * Greedy decoding takes the highest logit at every step; it ignores the
 * seed and top_p, and a temperature below ENGINE_GREEDY_BELOW (or
 * negative) is greedy too. A vanishing top_p at temperature 1 keeps only
 * the most probable candidate: greedy again.
 */
static void
test_greedy(void **state)
{
	enum { N = 80 };
	static const double temps[] = { 0.0, 1e-6, -1.0 };
	uint32_t want[N], got[N];
	struct engine_sampling p;
	struct sim_lm lm;
	const double *l;
	size_t k, i, end;

	(void)state;
	for (k = 0; k < NELEM(prompts); k++) {
		engine_sampling_defaults(&p);
		p.temperature = 0.0;
		sim_lm_init(&lm, prompts[k].p, prompts[k].len, &p);
		for (i = 0; i < N; i++) {
			l = sim_lm_logits(&lm);
			want[i] = cand_id(argmax(l, sim_lm_ncand(), 0));
			assert_int_equal(sim_lm_next(&lm), want[i]);
			if (want[i] == SIM_EOS_ID)
				break;
		}
		sim_lm_free(&lm);
		end = i < N ? i + 1 : N;
		for (i = 0; i < NELEM(temps) + 3; i++) {
			engine_sampling_defaults(&p);
			if (i < NELEM(temps)) {
				p.temperature = temps[i];
				p.has_seed = 1;
				p.seed = 99 + i;
				p.top_p = 0.5;
			} else if (i == NELEM(temps)) {
				p.top_p = 1e-12;
			} else if (i == NELEM(temps) + 1) {
				p.top_p = 0.0;  /* out of range: the same */
				p.has_seed = 1;
				p.seed = 3;
			} else {
				p.top_p = NAN;
			}
			(void)run(prompts[k].p, prompts[k].len, &p, got, end);
			if (memcmp(got, want, end * sizeof(*got)) != 0)
				fail_msg("prompt %zu, variant %zu: not greedy",
				    k, i);
		}
	}
}

/* Weights of the candidates, for cmp_prob (qsort has no context). */
static const double *sort_prob;

/* Most probable first, ties by lower index. */
static int
cmp_prob(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	if (sort_prob[x] != sort_prob[y])
		return sort_prob[x] > sort_prob[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * With top_p the token drawn is always in the nucleus: the smallest set
 * of most probable candidates (ties by lower id) whose probabilities sum
 * to >= top_p, computed here from the logits with libm's exp. And it is
 * not greedy: more than one token is drawn over the seeds.
 */
static void
test_top_p(void **state)
{
	enum { SEEDS = 60 };
	static const double tops[] = { 0.3, 0.6, 0.95 };
	size_t n = sim_lm_ncand(), k, i, s, m, pos, distinct;
	double *prob = malloc(n * sizeof(*prob)), max, total, cum;
	size_t *order = malloc(n * sizeof(*order));
	unsigned char *seen = malloc(n);
	struct engine_sampling p;
	struct sim_lm lm;
	const double *l;
	uint32_t id;

	(void)state;
	assert_non_null(prob);
	assert_non_null(order);
	assert_non_null(seen);
	for (i = 0; i < NELEM(tops); i++) {
		memset(seen, 0, n);
		distinct = 0;
		for (s = 0; s < SEEDS; s++) {
			engine_sampling_defaults(&p);
			p.temperature = 0.8;
			p.top_p = tops[i];
			p.has_seed = 1;
			p.seed = s;
			/* the second step: after the capital, mid-sentence */
			sim_lm_init(&lm, S("nucleus"), &p);
			(void)sim_lm_next(&lm);
			l = sim_lm_logits(&lm);
			max = -INFINITY;
			for (k = 0; k < n; k++)
				if (l[k] > max)
					max = l[k];
			total = 0.0;
			for (k = 0; k < n; k++) {
				prob[k] = exp((l[k] - max) / p.temperature);
				total += prob[k];
				order[k] = k;
			}
			sort_prob = prob;
			qsort(order, n, sizeof(*order), cmp_prob);
			cum = 0.0;
			for (m = 0; m < n && cum < p.top_p * total; m++)
				cum += prob[order[m]];
			id = sim_lm_next(&lm);
			k = id == SIM_EOS_ID ? n - 1 : id;
			for (pos = 0; pos < n && order[pos] != k; pos++)
				;
			/* libm's exp and sim_lm's may differ in the last
			 * bits: the candidate just past the edge may be in. */
			if (pos > m)
				fail_msg("top_p %g, seed %zu: %u is number "
				    "%zu, the nucleus has %zu", p.top_p, s,
				    (unsigned)id, pos, m);
			distinct += !seen[k];
			seen[k] = 1;
			sim_lm_free(&lm);
		}
		assert_true(distinct > 1);
	}
	free(prob);
	free(order);
	free(seen);
}

/* Higher temperature, further from greedy: count the steps (of the first
 * eight, over the seeds) where the sampler took the highest logit. */
static void
test_temperature(void **state)
{
	enum { SEEDS = 40, N = 8 };
	static const double temps[] = { 0.2, 0.6, 1.0, 2.0 };
	size_t top[NELEM(temps)], i, s, k, best;
	struct engine_sampling p;
	struct sim_lm lm;

	(void)state;
	for (i = 0; i < NELEM(temps); i++) {
		top[i] = 0;
		for (s = 0; s < SEEDS; s++) {
			engine_sampling_defaults(&p);
			p.temperature = temps[i];
			p.has_seed = 1;
			p.seed = s;
			p.ignore_eos = 1;
			sim_lm_init(&lm, S("temperature"), &p);
			for (k = 0; k < N; k++) {
				best = argmax(sim_lm_logits(&lm),
				    sim_lm_ncand(), 1);
				top[i] += sim_lm_next(&lm) == cand_id(best);
			}
			sim_lm_free(&lm);
		}
	}
	for (i = 1; i < NELEM(temps); i++)
		if (top[i - 1] <= top[i])
			fail_msg("temperature %g: %zu greedy steps, %g: %zu",
			    temps[i - 1], top[i - 1], temps[i], top[i]);
}

/*
 * EOS: with the defaults, answers end by themselves, typically within
 * 20..200 tokens; greedy ones too; after EOS the model keeps returning
 * it; with ignore_eos it never comes (and the logits still have it).
 */
static void
test_eos(void **state)
{
	enum { PROMPTS = 60, N = 400, IGNORED = 3, LONG = 500 };
	static uint32_t ids[LONG];
	size_t lens[PROMPTS], i, k, ended = 0, typical = 0;
	struct engine_sampling p;
	struct sim_lm lm;
	char prompt[32];
	int plen;

	(void)state;
	for (i = 0; i < PROMPTS; i++) {
		plen = snprintf(prompt, sizeof(prompt), "eos %zu", i);
		engine_sampling_defaults(&p);
		if (i % 4 == 0)
			p.temperature = 0.0;
		lens[i] = run(prompt, (size_t)plen, &p, ids, N);
		ended += lens[i] < N;
		typical += lens[i] >= 20 && lens[i] <= 200;
		if (lens[i] < N)
			for (k = lens[i]; k < N; k++)
				assert_int_equal(ids[k], SIM_EOS_ID);
	}
	assert_int_equal(ended, PROMPTS);
	assert_true(typical >= PROMPTS * 8 / 10);

	for (i = 0; i < IGNORED; i++) {
		plen = snprintf(prompt, sizeof(prompt), "eos %zu", i);
		engine_sampling_defaults(&p);
		p.ignore_eos = 1;
		if (i == 0)
			p.temperature = 0.0;
		sim_lm_init(&lm, prompt, (size_t)plen, &p);
		for (k = 0; k < LONG; k++) {
			if (k % 50 == 49)
				assert_true(isfinite(sim_lm_logits(&lm)[
				    sim_lm_ncand() - 1]));
			assert_int_not_equal(sim_lm_next(&lm), SIM_EOS_ID);
		}
		sim_lm_free(&lm);
	}
}

/*
 * What the model scores: every text token and EOS get a finite logit;
 * byte tokens only as lead bytes of a character, and once one is drawn
 * only its valid continuation bytes (everything else -inf). Generated
 * text with byte tokens is valid UTF-8, byte tokens do occur, and the
 * first k ids of a longer answer are the shorter one.
 */
static void
test_scores_and_bytes(void **state)
{
	enum { PROMPTS = 24, N = 120 };
	static char text[N * SIM_TOKEN_MAX_BYTES];
	size_t n = sim_lm_ncand(), i, k, len, leads = 0, chars = 0;
	struct engine_sampling p;
	struct sim_lm lm;
	const double *l;
	char prompt[32];
	uint32_t id, first[N];
	int plen, in_char;

	(void)state;
	for (i = 0; i < PROMPTS; i++) {
		plen = snprintf(prompt, sizeof(prompt), "bytes %zu", i);
		engine_sampling_defaults(&p);
		p.temperature = 1.3;
		p.ignore_eos = 1;
		sim_lm_init(&lm, prompt, (size_t)plen, &p);
		len = 0;
		in_char = 0;
		for (k = 0; k < N; k++) {
			size_t b, finite = 0, tl;
			const char *t;

			l = sim_lm_logits(&lm);
			for (b = 0; b < SIM_FIRST_TEXT_ID; b++)
				finite += isfinite(l[b]) != 0;
			if (in_char) {
				/* continuation bytes only */
				for (b = 0; b < n; b++)
					if (isfinite(l[b]))
						assert_in_range(b, 0x80, 0xbf);
				assert_true(finite >= 1);
			} else {
				for (b = SIM_FIRST_TEXT_ID; b < n; b++)
					assert_true(isfinite(l[b]));
				for (b = 0; b < 0xc2; b++)
					assert_false(isfinite(l[b]));
			}
			id = sim_lm_next(&lm);
			first[k] = id;
			if (id < SIM_FIRST_TEXT_ID) {
				if (id >= 0xc0) {
					leads++;
					in_char = 1;
				}
			} else {
				assert_false(in_char);
			}
			t = sim_token_text(id, &tl);
			memcpy(text + len, t, tl);
			len += tl;
			/* complete again? */
			if (in_char && utf8_valid(text, len)) {
				in_char = 0;
				chars++;
			}
		}
		sim_lm_free(&lm);
		if (!in_char)
			assert_true(utf8_valid(text, len));
		/* prefix property */
		{
			uint32_t again[N / 2];

			(void)run(prompt, (size_t)plen, &p, again, N / 2);
			assert_memory_equal(again, first, sizeof(again));
		}
	}
	assert_true(leads >= 3);
	assert_true(chars >= 2);
}

/* FNV-1a 64 over each id's four bytes, least significant first. */
static uint64_t
digest(const uint32_t *ids, size_t n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	size_t i, k;

	for (i = 0; i < n; i++)
		for (k = 0; k < 4; k++) {
			h ^= (ids[i] >> (8 * k)) & 0xff;
			h *= UINT64_C(0x100000001b3);
		}
	return h;
}

/*
 * Golden vectors: the first 20 ids for "hello" with the defaults and with
 * seed 1 at temperature 0.8, top_p 0.9, and a digest of 2,000 ids at
 * temperature 1.5 with ignore_eos. If this fails, the model, the sampler,
 * the vocabulary or the PRNG changed - and with them every /v1 answer a
 * client has seen, as well as the floating-point determinism this model
 * promises. Update the numbers only on purpose.
 */
static void
test_golden(void **state)
{
	static const uint32_t want_default[20] = {
		272, 738, 597, 674, 456, 983, 565, 712, 527, 578, 450,
		354, 1113, 920, 569, 518, 574, 599, 766, 531,
	};
	static const uint32_t want_seed1[20] = {    /* EOS after 17 */
		280, 659, 558, 571, 583, 456, 454, 258, 777, 561, 685,
		1313, 783, 593, 458, 950, 450, SIM_EOS_ID, SIM_EOS_ID,
		SIM_EOS_ID,
	};
	enum { N = 2000 };
	static uint32_t ids[N];
	struct engine_sampling p;
	size_t i;

	(void)state;
	engine_sampling_defaults(&p);
	(void)run(S("hello"), &p, ids, 20);
	for (i = 0; i < 20; i++)
		if (ids[i] != want_default[i])
			fail_msg("defaults: id %zu is %u, want %u", i,
			    (unsigned)ids[i], (unsigned)want_default[i]);
	p.temperature = 0.8;
	p.top_p = 0.9;
	p.has_seed = 1;
	p.seed = 1;
	(void)run(S("hello"), &p, ids, 20);
	for (i = 0; i < 20; i++)
		if (ids[i] != want_seed1[i])
			fail_msg("seed 1: id %zu is %u, want %u", i,
			    (unsigned)ids[i], (unsigned)want_seed1[i]);
	engine_sampling_defaults(&p);
	p.temperature = 1.5;
	p.ignore_eos = 1;
	(void)run(S("hello"), &p, ids, N);
	assert_int_equal(digest(ids, N), UINT64_C(0x493f645409777d14));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_seeds),
		cmocka_unit_test(test_greedy),
		cmocka_unit_test(test_top_p),
		cmocka_unit_test(test_temperature),
		cmocka_unit_test(test_eos),
		cmocka_unit_test(test_scores_and_bytes),
		cmocka_unit_test(test_golden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
