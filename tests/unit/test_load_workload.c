/*
 * test_load_workload.c - the workloads of `tokbench load`: the words of
 * random prompts against the simulator's tokenizer (each one token, a
 * prompt of N words N tokens, the table still the vocabulary's), the
 * ShareGPT and JSONL parsers (vLLM's filters, malformed input refused
 * with its line), the dataset file's size cap, the seeded shuffle; the
 * gamma inter-arrival times of --burstiness (mean and coefficient of
 * variation over a seeded run), and vLLM's ramp-up rates. Fixed seeds:
 * nothing here can flake, and nothing is timed.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/dataset.h"
#include "bench/load_report.h"
#include "bench/words.h"
#include "sim/vocab.h"
#include "sim/vocab_table.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* |got - want| <= eps, with a message naming what was compared. */
static void
check_near(const char *what, double got, double want, double eps)
{
	if (!(fabs(got - want) <= eps))
		fail_msg("%s: got %.9g, want %.9g (+-%g)", what, got, want,
		    eps);
}

/* ---- words ----------------------------------------------------------- */

/* True for a vocabulary word the table should hold: " " and 2 to 5
 * lower-case ASCII letters, kind SIM_K_WORD. */
static int
is_table_word(const struct sim_vocab_entry *e)
{
	uint8_t i;

	if (e->kind != SIM_K_WORD || e->len < 3 || e->len > 6 ||
	    e->text[0] != ' ')
		return 0;
	for (i = 1; i < e->len; i++)
		if (e->text[i] < 'a' || e->text[i] > 'z')
			return 0;
	return 1;
}

static void
test_words_are_vocab_tokens(void **state)
{
	size_t i, k = 0;
	uint32_t id;

	(void)state;
	for (i = 0; i < load_nwords; i++) {
		const char *w = load_words[i];

		if (sim_tokenize(w, strlen(w), &id, 1) != 1 ||
		    id < SIM_FIRST_TEXT_ID)
			fail_msg("'%s' is not one text token", w);
		assert_true(strlen(w) <= LOAD_WORD_MAX_BYTES);
	}
	/* the table is every such word of the vocabulary, in its order */
	for (i = 0; i < sim_vocab_ntext; i++) {
		const struct sim_vocab_entry *e = &sim_vocab_text[i];

		if (!is_table_word(e))
			continue;
		assert_true(k < load_nwords);
		if (strlen(load_words[k]) != e->len ||
		    memcmp(load_words[k], e->text, e->len) != 0)
			fail_msg("word %zu: table '%s', vocabulary '%.*s'", k,
			    load_words[k], (int)e->len, e->text);
		k++;
	}
	assert_int_equal(k, load_nwords);
	assert_true(load_nwords >= 256);
}

/* A prompt of n words is n tokens, whatever the words; the same stream
 * gives the same prompt, two streams different ones. */
static void
test_words_prompt_tokens(void **state)
{
	static const long ns[] = {1, 2, 16, 1000, 4000};
	struct ts_buf a, b;
	struct rng r;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(ns); i++) {
		ts_buf_init(&a, 1u << 20);
		load_rng_seed(&r, 7, 100 + i);
		assert_int_equal(load_words_append(&r, ns[i], &a), TS_OK);
		assert_true(a.len <= (size_t)ns[i] * LOAD_WORD_MAX_BYTES);
		assert_int_equal(sim_tokenize(a.p, a.len, NULL, 0),
		    (size_t)ns[i]);
		ts_buf_free(&a);
	}
	ts_buf_init(&a, 1u << 20);
	ts_buf_init(&b, 1u << 20);
	load_rng_seed(&r, 1, 5);
	load_words_append(&r, 64, &a);
	load_rng_seed(&r, 1, 5);
	load_words_append(&r, 64, &b);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.p, b.p, a.len);
	ts_buf_reset(&b);
	load_rng_seed(&r, 1, 6);
	load_words_append(&r, 64, &b);
	assert_false(a.len == b.len && memcmp(a.p, b.p, a.len) == 0);
	/* a prefix and a prompt: their counts add up */
	ts_buf_reset(&a);
	load_rng_seed(&r, 3, 3);
	load_words_append(&r, 100, &a);
	load_rng_seed(&r, 3, 9);
	load_words_append(&r, 37, &a);
	assert_int_equal(sim_tokenize(a.p, a.len, NULL, 0), 137);
	ts_buf_free(&a);
	ts_buf_free(&b);
}

static void
test_words_cap(void **state)
{
	struct ts_buf a;
	struct rng r;

	(void)state;
	ts_buf_init(&a, 10);
	load_rng_seed(&r, 0, 0);
	assert_int_equal(load_words_append(&r, 100, &a), TS_ELIMIT);
	assert_true(a.len <= 10);
	ts_buf_free(&a);
}

/* ---- ShareGPT -------------------------------------------------------- */

/* A conversation of a prompt and a reply of these lengths in bytes. */
static void
conv(FILE *f, int first, size_t prompt, size_t reply)
{
	size_t i;

	fprintf(f, "%s{\"id\":\"x\",\"conversations\":[{\"from\":\"human\","
	    "\"value\":\"", first ? "" : ",");
	for (i = 0; i < prompt; i++)
		fputc('p', f);
	fputs("\"},{\"from\":\"gpt\",\"value\":\"", f);
	for (i = 0; i < reply; i++)
		fputc('r', f);
	fputs("\"}]}", f);
}

static void
test_sharegpt_filters(void **state)
{
	struct load_dataset d;
	struct load_derr err;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	f = open_memstream(&buf, &len);
	fputs("[", f);
	conv(f, 1, 40, 400);            /* 10 and 100 tokens: kept */
	conv(f, 0, 12, 40);             /* 3 prompt tokens: dropped */
	conv(f, 0, 40, 12);             /* 3 output tokens: dropped */
	conv(f, 0, 4100, 40);           /* 1025 prompt tokens: dropped */
	conv(f, 0, 4000, 4400);         /* 2100 in all: dropped */
	conv(f, 0, 4096, 4096);         /* 1024 + 1024: kept */
	fputs(",{\"conversations\":[{\"from\":\"human\",\"value\":\"only "
	    "one turn here\"}]}", f);   /* dropped */
	fputs(",{\"id\":\"no conversations\"}", f);     /* dropped */
	fputs(",{\"conversations\":[{\"value\":7},{\"value\":\"abcdabcdab"
	    "cdabcd\"}]}", f);          /* not text: dropped */
	fputs(",{\"conversations\":[{\"from\":\"human\",\"value\":\"what is"
	    " a token, and why\"},{\"from\":\"gpt\",\"value\":\"a piece of "
	    "a word\"},{\"from\":\"human\",\"value\":\"more\"}]}", f);
	fputs("]", f);
	fclose(f);
	memset(&d, 0, sizeof(d));
	assert_int_equal(load_dataset_sharegpt(buf, len, &d, &err), TS_OK);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.skipped, 7);
	assert_int_equal(d.v[0].prompt_tokens, 10);
	assert_int_equal(d.v[0].output_tokens, 100);
	assert_int_equal(d.v[0].line, 0);
	assert_int_equal(d.v[1].prompt_tokens, 1024);
	assert_int_equal(d.v[1].output_tokens, 1024);
	assert_int_equal(d.v[1].line, 5);
	/* the first turn is the prompt, the second's length the output */
	assert_string_equal(d.v[2].prompt, "what is a token, and why");
	assert_int_equal(d.v[2].output_tokens, 5);      /* 17 bytes */
	assert_null(d.v[2].messages);
	load_dataset_free(&d);
	free(buf);
}

static void
test_sharegpt_malformed(void **state)
{
	struct load_dataset d;
	struct load_derr err;
	const char *s;

	(void)state;
	memset(&d, 0, sizeof(d));
	s = "[\n{\"conversations\": [\n}\n]";
	assert_int_equal(load_dataset_sharegpt(s, strlen(s), &d, &err),
	    TS_EINVAL);
	assert_int_equal(err.line, 3);
	assert_non_null(strstr(err.text, "not JSON"));
	s = "{\"conversations\": []}";
	assert_int_equal(load_dataset_sharegpt(s, strlen(s), &d, &err),
	    TS_EINVAL);
	assert_non_null(strstr(err.text, "JSON array"));
	s = "[{\"conversations\":[{\"value\":\"hi\"},{\"value\":\"yo\"}]}]";
	assert_int_equal(load_dataset_sharegpt(s, strlen(s), &d, &err),
	    TS_EINVAL);
	assert_non_null(strstr(err.text, "no usable conversation"));
	assert_int_equal(d.n, 0);
	load_dataset_free(&d);
}

/* ---- JSONL ----------------------------------------------------------- */

static void
test_jsonl_valid(void **state)
{
	static const char s[] =
	    "{\"prompt\": \"tell me about tokens\", \"output_tokens\": 12}\n"
	    "\n"
	    "   \r\n"
	    "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"},"
	    " {\"role\": \"user\", \"content\": \"hi\"}], \"id\": 3}\n"
	    "{\"prompt\": \"no newline at the end\"}";
	struct load_dataset d;
	struct load_derr err;

	(void)state;
	memset(&d, 0, sizeof(d));
	assert_int_equal(load_dataset_jsonl(s, strlen(s), 8192, &d, &err),
	    TS_OK);
	assert_int_equal(d.n, 3);
	assert_string_equal(d.v[0].prompt, "tell me about tokens");
	assert_int_equal(d.v[0].output_tokens, 12);
	assert_int_equal(d.v[0].line, 1);
	assert_null(d.v[1].prompt);
	assert_int_equal(json_array_size(d.v[1].messages), 2);
	assert_int_equal(d.v[1].output_tokens, 0);
	assert_int_equal(d.v[1].prompt_tokens, -1);
	assert_int_equal(d.v[1].line, 4);
	assert_string_equal(d.v[2].prompt, "no newline at the end");
	assert_int_equal(d.v[2].line, 5);
	load_dataset_free(&d);
}

/* Each malformed line is refused with its line number and why. */
static void
test_jsonl_malformed(void **state)
{
	static const struct {
		const char *text;
		long line;
		const char *why;
	} c[] = {
		{"{\"prompt\":\"a\"}\n{\"prompt\": \"b\"\n", 2, "not JSON"},
		{"{\"prompt\":\"a\"}\n\n[1,2]\n", 3, "not a JSON object"},
		{"{\"prompt\":\"a\",\"messages\":[]}\n", 1, "one of"},
		{"{\"output_tokens\":5}\n", 1, "one of"},
		{"{\"prompt\":\"\"}\n", 1, "non-empty string"},
		{"{\"prompt\":7}\n", 1, "non-empty string"},
		{"{\"messages\":[]}\n", 1, "non-empty array"},
		{"{\"messages\":[{\"role\":\"user\"}]}\n", 1, "\"content\""},
		{"{\"prompt\":\"a\",\"output_tokens\":0}\n", 1,
		    "output_tokens"},
		{"{\"prompt\":\"a\",\"output_tokens\":8193}\n", 1,
		    "output_tokens"},
		{"{\"prompt\":\"a\",\"output_tokens\":\"5\"}\n", 1,
		    "output_tokens"},
		{"{\"prompt\":\"a\",\"output_tokens\":2.5}\n", 1,
		    "output_tokens"},
		{"\n\n  \n", 0, "every line is blank"},
		{"", 0, "every line is blank"},
	};
	struct load_dataset d;
	struct load_derr err;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(c); i++) {
		memset(&d, 0, sizeof(d));
		memset(&err, 0, sizeof(err));
		if (load_dataset_jsonl(c[i].text, strlen(c[i].text), 8192, &d,
		    &err) != TS_EINVAL)
			fail_msg("case %zu accepted", i);
		if (err.line != c[i].line || strstr(err.text, c[i].why) ==
		    NULL)
			fail_msg("case %zu: line %ld '%s', want line %ld '%s'",
			    i, err.line, err.text, c[i].line, c[i].why);
		load_dataset_free(&d);
	}
}

/* ---- files, shuffle, entries ----------------------------------------- */

static void
test_read_cap_and_missing(void **state)
{
	char path[] = "/tmp/test_load_workload.XXXXXX";
	struct load_derr err;
	char *buf;
	size_t len;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	close(fd);
	assert_int_equal(load_dataset_read(path, 10, &buf, &len, &err), TS_OK);
	assert_int_equal(len, 10);
	assert_string_equal(buf, "0123456789");
	free(buf);
	assert_int_equal(load_dataset_read(path, 9, &buf, &len, &err),
	    TS_ELIMIT);
	assert_null(buf);
	assert_non_null(strstr(err.text, "more than the 9"));
	unlink(path);
	assert_int_equal(load_dataset_read(path, 10, &buf, &len, &err),
	    TS_ESYS);
	assert_non_null(strstr(err.text, path));
	assert_int_equal(load_dataset_read("/tmp", 10, &buf, &len, &err),
	    TS_ESYS);
	assert_non_null(strstr(err.text, "not a regular file"));
}

static void
test_shuffle_and_entries(void **state)
{
	struct load_dataset a, b;
	struct load_derr err;
	char line[64], *text = NULL;
	size_t len = 0, i, moved = 0;
	int seen[50];
	FILE *f;

	(void)state;
	f = open_memstream(&text, &len);
	for (i = 0; i < 50; i++)
		fprintf(f, "{\"prompt\":\"p%zu\"}\n", i);
	fclose(f);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(load_dataset_jsonl(text, len, 10, &a, &err), TS_OK);
	assert_int_equal(load_dataset_jsonl(text, len, 10, &b, &err), TS_OK);
	load_dataset_shuffle(&a, 42);
	load_dataset_shuffle(&b, 42);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < 50; i++) {
		assert_string_equal(a.v[i].prompt, b.v[i].prompt);
		seen[a.v[i].line - 1]++;
		snprintf(line, sizeof(line), "p%zu", i);
		moved += strcmp(a.v[i].prompt, line) != 0;
	}
	for (i = 0; i < 50; i++)
		assert_int_equal(seen[i], 1);   /* a permutation */
	assert_true(moved > 25);
	load_dataset_shuffle(&b, 43);
	for (i = moved = 0; i < 50; i++)
		moved += strcmp(a.v[i].prompt, b.v[i].prompt) != 0;
	assert_true(moved > 25);
	/* request i takes entry i modulo n */
	assert_ptr_equal(load_dataset_entry(&a, 0), &a.v[0]);
	assert_ptr_equal(load_dataset_entry(&a, 51), &a.v[1]);
	load_dataset_free(&a);
	load_dataset_free(&b);
	free(text);
}

/* ---- arrivals -------------------------------------------------------- */

/* Mean and coefficient of variation of n gaps at rate 10/s and
 * burstiness b, from one seed. */
static void
gap_stats(double b, size_t n, double *mean, double *cv)
{
	struct rng r;
	double x, s = 0, s2 = 0, m;
	size_t i;

	load_rng_seed(&r, 2024, 1);
	for (i = 0; i < n; i++) {
		x = load_rng_gap_ms(&r, 10.0, b);
		assert_true(x >= 0);
		s += x;
		s2 += x * x;
	}
	m = s / (double)n;
	*mean = m;
	*cv = sqrt(s2 / (double)n - m * m) / m;
}

/* vLLM's gamma(shape = B, scale = 1 / (rate B)): mean 1/rate whatever
 * B, coefficient of variation 1 / sqrt(B). */
static void
test_burstiness_gamma(void **state)
{
	static const double bs[] = {0.25, 0.5, 1.0, 2.0, 4.0, 16.0};
	char what[64];
	double mean, cv;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bs); i++) {
		gap_stats(bs[i], 200000, &mean, &cv);
		snprintf(what, sizeof(what), "mean gap ms, burstiness %g",
		    bs[i]);
		check_near(what, mean, 100.0, 100.0 * 0.02);
		snprintf(what, sizeof(what), "CV, burstiness %g", bs[i]);
		check_near(what, cv, 1.0 / sqrt(bs[i]), 0.03 / sqrt(bs[i]));
	}
}

/* Burstiness 1 draws exactly the exponential gaps of before. */
static void
test_burstiness_one_is_poisson(void **state)
{
	struct rng a, b;
	size_t i;

	(void)state;
	load_rng_seed(&a, 9, 1);
	load_rng_seed(&b, 9, 1);
	for (i = 0; i < 1000; i++)
		assert_true(load_rng_gap_ms(&a, 3.0, 1.0) ==
		    load_rng_exp_ms(&b, 3.0));
	assert_true(load_rng_gap_ms(&a, 0.0, 2.0) == 0.0);
	assert_true(load_rng_gamma(&a, 0.0, 1.0) == 0.0);
	assert_true(load_rng_gamma(&a, 1.0, -1.0) == 0.0);
}

static void
test_gamma_shapes(void **state)
{
	static const double shapes[] = {0.1, 0.7, 1.0, 3.0, 30.0};
	struct rng r;
	char what[64];
	double s, x;
	size_t i, k, n = 100000;

	(void)state;
	load_rng_seed(&r, 77, 0);
	for (i = 0; i < NELEM(shapes); i++) {
		for (k = 0, s = 0; k < n; k++) {
			x = load_rng_gamma(&r, shapes[i], 2.0);
			assert_true(x >= 0 && isfinite(x));
			s += x;
		}
		snprintf(what, sizeof(what), "gamma(%g, 2) mean", shapes[i]);
		/* sd of the mean: 2 sqrt(shape / n) */
		check_near(what, s / (double)n, 2.0 * shapes[i],
		    5 * 2.0 * sqrt(shapes[i] / (double)n));
	}
}

/* vLLM's _get_current_request_rate(): progress index / (total - 1). */
static void
test_ramp_rates(void **state)
{
	(void)state;
	check_near("linear 0", load_ramp_rate(LOAD_RAMP_LINEAR, 2, 12, 0, 11),
	    2, 1e-12);
	check_near("linear 5", load_ramp_rate(LOAD_RAMP_LINEAR, 2, 12, 5, 11),
	    7, 1e-12);
	check_near("linear 10", load_ramp_rate(LOAD_RAMP_LINEAR, 2, 12, 10,
	    11), 12, 1e-12);
	check_near("exp 0", load_ramp_rate(LOAD_RAMP_EXPONENTIAL, 1, 16, 0, 5),
	    1, 1e-12);
	check_near("exp 2", load_ramp_rate(LOAD_RAMP_EXPONENTIAL, 1, 16, 2, 5),
	    4, 1e-9);
	check_near("exp 4", load_ramp_rate(LOAD_RAMP_EXPONENTIAL, 1, 16, 4, 5),
	    16, 1e-9);
	check_near("one request", load_ramp_rate(LOAD_RAMP_LINEAR, 3, 9, 0, 1),
	    3, 1e-12);
	check_near("none", load_ramp_rate(LOAD_RAMP_NONE, 5, 9, 3, 10), 5,
	    1e-12);
}

/* A linear ramp from 5 to 50 req/s over 2000 arrivals, as load_sched
 * draws it (the gap before arrival i at request i's rate): the first
 * tenth's gaps average near 1/5.5 s, the last tenth's near 1/48 s, and
 * the arrival times only grow. */
static void
test_ramp_schedule(void **state)
{
	struct rng r;
	double t = 0, g, first = 0, last = 0, rate;
	uint64_t i, n = 2000;

	(void)state;
	load_rng_seed(&r, 11, 1);
	for (i = 1; i < n; i++) {
		rate = load_ramp_rate(LOAD_RAMP_LINEAR, 5, 50, i, n);
		g = load_rng_gap_ms(&r, rate, 1.0);
		assert_true(g >= 0);
		t += g;
		if (i <= n / 10)
			first += g;
		else if (i > n - n / 10)
			last += g;
	}
	first /= (double)(n / 10);
	last /= (double)(n / 10);
	/* mean of 1000 / rate over each tenth, +-15% (200 draws) */
	check_near("first tenth's gap ms", first, 1000.0 / 7.25, 0.15 *
	    1000.0 / 7.25);
	check_near("last tenth's gap ms", last, 1000.0 / 47.75, 0.15 *
	    1000.0 / 47.75);
	assert_true(t > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_words_are_vocab_tokens),
		cmocka_unit_test(test_words_prompt_tokens),
		cmocka_unit_test(test_words_cap),
		cmocka_unit_test(test_sharegpt_filters),
		cmocka_unit_test(test_sharegpt_malformed),
		cmocka_unit_test(test_jsonl_valid),
		cmocka_unit_test(test_jsonl_malformed),
		cmocka_unit_test(test_read_cap_and_missing),
		cmocka_unit_test(test_shuffle_and_entries),
		cmocka_unit_test(test_burstiness_gamma),
		cmocka_unit_test(test_burstiness_one_is_poisson),
		cmocka_unit_test(test_gamma_shapes),
		cmocka_unit_test(test_ramp_rates),
		cmocka_unit_test(test_ramp_schedule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
