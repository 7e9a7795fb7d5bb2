/*
 * test_metrics.c - the shared metrics file (src/stores/metrics.h): bucket
 * boundaries (le is inclusive), cumulative rendering, _sum and _count,
 * counters and gauges, two handles and forked processes on one file, the
 * slots of dead processes, damaged files (alone: re-initialised; in use:
 * TS_EFORMAT), concurrent threads, the render size limit, and the
 * rendered text through tests/promcheck when TS_BUILDDIR names a build.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stores/metrics.h"

#define FILE_SIZE 9216          /* metrics.h "File format" */
#define SLOT_OFF 1280           /* header, histograms, counters, reasons */
#define SLOT_SIZE 48
#define TTFT "tokstream:time_to_first_token_seconds"
#define ITL "tokstream:inter_token_latency_seconds"
#define E2E "tokstream:e2e_request_latency_seconds"
#define QUEUE "tokstream:request_queue_time_seconds"
#define GEN "tokstream:generation_tokens_total"
#define RUNNING "tokstream:num_requests_running"
#define WAITING "tokstream:num_requests_waiting"
#define PROCS "tokstream:responder_processes"

static char dir[256];
static char path[300];

static int
setup(void **unused)
{
	snprintf(dir, sizeof(dir), "/tmp/ts-metrics-test.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, METRICS_FILE_NAME);
	return 0;
}

static int
teardown(void **unused)
{
	unlink(path);
	rmdir(dir);
	return 0;
}

static struct metrics *
open_file(void)
{
	struct metrics *m = NULL;
	char err[512];

	if (metrics_open(&m, dir, err, sizeof(err)) != TS_OK)
		fail_msg("metrics_open: %s", err);
	return m;
}

static struct metrics *
open_memory(void)
{
	struct metrics *m = NULL;

	assert_int_equal(metrics_open_memory(&m), TS_OK);
	assert_non_null(m);
	return m;
}

/* The rendered text; the caller frees it with free(). */
static char *
render(const struct metrics *m)
{
	struct ts_buf b;

	ts_buf_init(&b, 1 << 20);
	assert_int_equal(metrics_render(m, &b), TS_OK);
	assert_non_null(b.p);
	assert_int_equal(strlen(b.p), b.len);
	return b.p;
}

/* The value text of the sample line `series` ("name{labels}"), which
 * must occur exactly once; copied into val. */
static void
sample_text(const char *text, const char *series, char *val, size_t len)
{
	size_t n = strlen(series);
	const char *p = text, *hit = NULL, *end;

	for (; (p = strstr(p, series)) != NULL; p += n) {
		if ((p != text && p[-1] != '\n') || p[n] != ' ')
			continue;
		if (hit != NULL)
			fail_msg("%s occurs twice", series);
		hit = p;
	}
	if (hit == NULL)
		fail_msg("no sample %s in:\n%s", series, text);
	hit += n + 1;
	end = strchr(hit, '\n');
	assert_non_null(end);
	assert_true((size_t)(end - hit) < len);
	memcpy(val, hit, (size_t)(end - hit));
	val[end - hit] = '\0';
}

static uint64_t
sample(const char *text, const char *series)
{
	char val[64], *end;
	uint64_t v;

	sample_text(text, series, val, sizeof(val));
	v = strtoull(val, &end, 10);
	if (*end != '\0' || end == val)
		fail_msg("%s: not an integer: %s", series, val);
	return v;
}

static uint64_t
bucket(const char *text, const char *hist, const char *le)
{
	char series[160];

	snprintf(series, sizeof(series), "%s_bucket{le=\"%s\"}", hist, le);
	return sample(text, series);
}

static void
assert_sum(const char *text, const char *hist, const char *want)
{
	char series[160], val[64];

	snprintf(series, sizeof(series), "%s_sum", hist);
	sample_text(text, series, val, sizeof(val));
	assert_string_equal(val, want);
}

static uint64_t
count(const char *text, const char *hist)
{
	char series[160];

	snprintf(series, sizeof(series), "%s_count", hist);
	return sample(text, series);
}

/* Every bucket of hist in order: non-decreasing, +Inf last == _count. */
static void
assert_histogram_shape(const char *text, const char *hist)
{
	char prefix[160];
	const char *p = text, *le;
	uint64_t prev = 0, v = 0;
	int n = 0, inf = 0;

	snprintf(prefix, sizeof(prefix), "%s_bucket{le=\"", hist);
	while ((p = strstr(p, prefix)) != NULL) {
		assert_false(inf);      /* nothing after +Inf */
		le = p + strlen(prefix);
		inf = strncmp(le, "+Inf\"", 5) == 0;
		p = strchr(le, ' ');
		assert_non_null(p);
		v = strtoull(p + 1, NULL, 10);
		assert_true(v >= prev);
		prev = v;
		n++;
	}
	assert_true(n > 1);
	assert_true(inf);
	assert_int_equal(v, count(text, hist));
}

/* ---- buckets -------------------------------------------------------- */

static const struct bucket_case {
	enum metrics_hist h;
	const char *name;
	int64_t ns;
	const char *le;         /* the first bucket that holds it */
	const char *prev;       /* the bucket before, which must not */
} bucket_cases[] = {
	{ METRICS_TTFT, TTFT, 0, "0.001", NULL },
	{ METRICS_TTFT, TTFT, -5, "0.001", NULL },
	{ METRICS_TTFT, TTFT, INT64_MIN, "0.001", NULL },
	{ METRICS_TTFT, TTFT, 999999, "0.001", NULL },
	{ METRICS_TTFT, TTFT, 1000000, "0.001", NULL },
	{ METRICS_TTFT, TTFT, 1000001, "0.005", "0.001" },
	{ METRICS_TTFT, TTFT, 100000000, "0.1", "0.08" },
	{ METRICS_TTFT, TTFT, 1000000000, "1.0", "0.75" },
	{ METRICS_TTFT, TTFT, 1000000001, "2.5", "1.0" },
	{ METRICS_TTFT, TTFT, 7500000000, "7.5", "5.0" },
	{ METRICS_TTFT, TTFT, 2560000000000, "2560.0", "640.0" },
	{ METRICS_TTFT, TTFT, 2560000000001, "+Inf", "2560.0" },
	{ METRICS_TTFT, TTFT, INT64_MAX, "+Inf", "2560.0" },
	{ METRICS_ITL, ITL, 0, "0.01", NULL },
	{ METRICS_ITL, ITL, 10000000, "0.01", NULL },
	{ METRICS_ITL, ITL, 10000001, "0.025", "0.01" },
	{ METRICS_ITL, ITL, 75000000, "0.075", "0.05" },
	{ METRICS_ITL, ITL, 80000000000, "80.0", "40.0" },
	{ METRICS_ITL, ITL, 80000000001, "+Inf", "80.0" },
	{ METRICS_E2E, E2E, 300000000, "0.3", NULL },
	{ METRICS_E2E, E2E, 300000001, "0.5", "0.3" },
	{ METRICS_E2E, E2E, 7680000000000, "7680.0", "1920.0" },
	{ METRICS_E2E, E2E, 7680000000001, "+Inf", "7680.0" },
	{ METRICS_QUEUE, QUEUE, 1, "0.3", NULL },
	{ METRICS_QUEUE, QUEUE, 800000000, "0.8", "0.5" },
};

/* One observation per fresh handle: exactly the right bucket, the
 * buckets above it hold it too (cumulative), the ones below do not. */
static void
test_bucket_boundaries(void **unused)
{
	size_t i;

	for (i = 0; i < sizeof(bucket_cases) / sizeof(bucket_cases[0]);
	    i++) {
		const struct bucket_case *c = &bucket_cases[i];
		struct metrics *m = open_memory();
		char *text;

		metrics_observe(m, c->h, c->ns);
		text = render(m);
		print_message("case %zu: %s %" PRId64 " ns\n", i, c->name,
		    c->ns);
		assert_int_equal(bucket(text, c->name, c->le), 1);
		if (c->prev != NULL)
			assert_int_equal(bucket(text, c->name, c->prev), 0);
		assert_int_equal(bucket(text, c->name, "+Inf"), 1);
		assert_int_equal(count(text, c->name), 1);
		assert_histogram_shape(text, c->name);
		free(text);
		metrics_close(m);
	}
}

/* Several observations: cumulative counts, _sum in seconds, _count. */
static void
test_cumulative_render(void **unused)
{
	struct metrics *m = open_memory();
	static const int64_t ns[] = { 500000, 3000000, 3000000, 50000000,
		2000000000, 3000000000000 };
	char *text;
	size_t i;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		metrics_observe(m, METRICS_TTFT, ns[i]);
	text = render(m);
	assert_int_equal(bucket(text, TTFT, "0.001"), 1);
	assert_int_equal(bucket(text, TTFT, "0.005"), 3);
	assert_int_equal(bucket(text, TTFT, "0.04"), 3);
	assert_int_equal(bucket(text, TTFT, "0.06"), 4);
	assert_int_equal(bucket(text, TTFT, "1.0"), 4);
	assert_int_equal(bucket(text, TTFT, "2.5"), 5);
	assert_int_equal(bucket(text, TTFT, "2560.0"), 5);
	assert_int_equal(bucket(text, TTFT, "+Inf"), 6);
	assert_int_equal(count(text, TTFT), 6);
	assert_sum(text, TTFT, "3002.0565");
	assert_histogram_shape(text, TTFT);
	/* The others are empty, and render so. */
	assert_int_equal(count(text, ITL), 0);
	assert_int_equal(bucket(text, ITL, "+Inf"), 0);
	assert_sum(text, ITL, "0.0");
	assert_histogram_shape(text, ITL);
	assert_histogram_shape(text, E2E);
	assert_histogram_shape(text, QUEUE);
	free(text);
	metrics_close(m);
}

/* The sum keeps microseconds, rounded to the nearest. */
static void
test_sum_rounding(void **unused)
{
	static const struct {
		int64_t ns[3];
		const char *sum;
	} cases[] = {
		{ { 1, 0, 0 }, "0.0" },
		{ { 499, 0, 0 }, "0.0" },
		{ { 500, 0, 0 }, "0.000001" },
		{ { 1499, 1500, 0 }, "0.000003" },
		{ { 1000000000, 250000000, 0 }, "1.25" },
		{ { 10000000, 10000000, 10000000 }, "0.03" },
		{ { -1000000, 1000000, 0 }, "0.001" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct metrics *m = open_memory();
		char *text;
		int j;

		for (j = 0; j < 3; j++)
			if (cases[i].ns[j] != 0)
				metrics_observe(m, METRICS_ITL,
				    cases[i].ns[j]);
		text = render(m);
		assert_sum(text, ITL, cases[i].sum);
		free(text);
		metrics_close(m);
	}
}

static void
test_counters(void **unused)
{
	struct metrics *m = open_memory();
	char *text;

	metrics_add(m, METRICS_GENERATION_TOKENS, 5);
	metrics_add(m, METRICS_GENERATION_TOKENS, 7);
	metrics_add(m, METRICS_PROMPT_TOKENS, 3);
	metrics_add(m, METRICS_WASTED_TOKENS, 2);
	metrics_add(m, METRICS_REJECTED_QUEUE_FULL, 1);
	metrics_add(m, (enum metrics_counter)99, 1);    /* ignored */
	metrics_finished(m, METRICS_STOP);
	metrics_finished(m, METRICS_STOP);
	metrics_finished(m, METRICS_LENGTH);
	metrics_finished(m, METRICS_ABORT);
	metrics_finished(m, METRICS_ERROR);
	metrics_finished(m, METRICS_ERROR);
	metrics_finished(m, METRICS_ERROR);
	metrics_finished(m, (enum metrics_reason)-1);   /* ignored */
	metrics_observe(m, (enum metrics_hist)7, 1);    /* ignored */
	text = render(m);
	assert_int_equal(sample(text, GEN), 12);
	assert_int_equal(sample(text, "tokstream:prompt_tokens_total"), 3);
	assert_int_equal(sample(text, "tokstream:wasted_tokens_total"), 2);
	assert_int_equal(sample(text, "tokstream:requests_rejected_total"
	    "{reason=\"queue_full\"}"), 1);
	assert_int_equal(sample(text, "tokstream:request_success_total"
	    "{finished_reason=\"stop\"}"), 2);
	assert_int_equal(sample(text, "tokstream:request_success_total"
	    "{finished_reason=\"length\"}"), 1);
	assert_int_equal(sample(text, "tokstream:request_success_total"
	    "{finished_reason=\"abort\"}"), 1);
	assert_int_equal(sample(text, "tokstream:request_success_total"
	    "{finished_reason=\"error\"}"), 3);
	assert_non_null(strstr(text, "# TYPE " GEN " counter\n"));
	assert_non_null(strstr(text,
	    "# TYPE tokstream:request_success_total counter\n"));
	assert_non_null(strstr(text, "# TYPE " TTFT " histogram\n"));
	assert_non_null(strstr(text, "# TYPE " RUNNING " gauge\n"));
	/* Big values stay integral. */
	metrics_add(m, METRICS_PROMPT_TOKENS, UINT64_MAX - 3);
	free(text);
	text = render(m);
	assert_non_null(strstr(text,
	    "\ntokstream:prompt_tokens_total 18446744073709551615\n"));
	free(text);
	metrics_close(m);
}

static void
test_gauges(void **unused)
{
	struct metrics *m = open_memory();
	char *text;

	metrics_gauge_set(m, METRICS_RUNNING, 3);
	metrics_gauge_set(m, METRICS_WAITING, 2);
	metrics_gauge_add(m, METRICS_RUNNING, -1);
	metrics_gauge_add(m, METRICS_WAITING, 4);
	metrics_gauge_set(m, METRICS_GAUGE_COUNT, 9);   /* ignored */
	text = render(m);
	assert_int_equal(sample(text, RUNNING), 2);
	assert_int_equal(sample(text, WAITING), 6);
	assert_int_equal(sample(text, PROCS), 1);
	free(text);
	metrics_close(m);
}

/* A NULL handle is a no-op everywhere but render. */
static void
test_null_handle(void **unused)
{
	struct ts_buf b;

	metrics_observe(NULL, METRICS_TTFT, 1);
	metrics_add(NULL, METRICS_GENERATION_TOKENS, 1);
	metrics_finished(NULL, METRICS_STOP);
	metrics_gauge_set(NULL, METRICS_RUNNING, 1);
	metrics_gauge_add(NULL, METRICS_RUNNING, 1);
	metrics_close(NULL);
	ts_buf_init(&b, 1024);
	assert_int_equal(metrics_render(NULL, &b), TS_EINVAL);
	ts_buf_free(&b);
}

/* Over the buffer's limit: TS_ELIMIT, and the buffer as it was. */
static void
test_render_limit(void **unused)
{
	struct metrics *m = open_memory();
	struct ts_buf b;

	ts_buf_init(&b, 100);
	assert_int_equal(metrics_render(m, &b), TS_ELIMIT);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
	ts_buf_init(&b, 3000);
	assert_int_equal(ts_buf_append(&b, "abc", 3), TS_OK);
	assert_int_equal(metrics_render(m, &b), TS_ELIMIT);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.p, "abc");
	ts_buf_free(&b);
	ts_buf_init(&b, 16384);        /* metrics.h: about 8 KiB */
	assert_int_equal(metrics_render(m, &b), TS_OK);
	ts_buf_free(&b);
	metrics_close(m);
}

/* ---- sharing ------------------------------------------------------------ */

/* Two handles on one file, as two processes would have. */
static void
test_two_handles(void **unused)
{
	struct metrics *a = open_file(), *b = open_file();
	char *text;

	metrics_observe(a, METRICS_TTFT, 1000000);
	metrics_observe(b, METRICS_TTFT, 2000000);
	metrics_add(a, METRICS_GENERATION_TOKENS, 4);
	metrics_add(b, METRICS_GENERATION_TOKENS, 6);
	metrics_gauge_set(a, METRICS_RUNNING, 2);
	metrics_gauge_set(b, METRICS_RUNNING, 3);
	metrics_gauge_set(b, METRICS_WAITING, 1);
	text = render(a);
	assert_int_equal(sample(text, GEN), 10);
	assert_int_equal(count(text, TTFT), 2);
	assert_int_equal(bucket(text, TTFT, "0.001"), 1);
	assert_sum(text, TTFT, "0.003");
	assert_int_equal(sample(text, RUNNING), 5);
	assert_int_equal(sample(text, WAITING), 1);
	assert_int_equal(sample(text, PROCS), 2);
	free(text);
	metrics_close(b);       /* its gauges go with it */
	text = render(a);
	assert_int_equal(sample(text, RUNNING), 2);
	assert_int_equal(sample(text, WAITING), 0);
	assert_int_equal(sample(text, PROCS), 1);
	assert_int_equal(sample(text, GEN), 10);
	free(text);
	metrics_close(a);
	/* Counters outlive the handles (metrics.h). */
	a = open_file();
	text = render(a);
	assert_int_equal(sample(text, GEN), 10);
	assert_int_equal(sample(text, RUNNING), 0);
	free(text);
	metrics_close(a);
}

static void
add_many(struct metrics *m, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		metrics_add(m, METRICS_GENERATION_TOKENS, 1);
		metrics_observe(m, METRICS_ITL, 20000000);
		metrics_finished(m, METRICS_LENGTH);
	}
}

/* Forked children count into the parent's file, concurrently. */
static void
test_across_processes(void **unused)
{
	struct metrics *m = open_file();
	pid_t pid[3];
	char *text;
	int i, status;

	metrics_gauge_set(m, METRICS_RUNNING, 2);
	for (i = 0; i < 3; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			struct metrics *c = NULL;
			char err[512];

			if (metrics_open(&c, dir, err, sizeof(err)) != TS_OK)
				_exit(1);
			metrics_gauge_set(c, METRICS_RUNNING, 7);
			add_many(c, 20000);
			metrics_close(c);
			/* The parent's handle: freed here, its slot kept. */
			metrics_close(m);
			_exit(0);
		}
	}
	add_many(m, 20000);
	for (i = 0; i < 3; i++) {
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	text = render(m);
	assert_int_equal(sample(text, GEN), 80000);
	assert_int_equal(count(text, ITL), 80000);
	assert_int_equal(bucket(text, ITL, "0.01"), 0);
	assert_int_equal(bucket(text, ITL, "0.025"), 80000);
	assert_sum(text, ITL, "1600.0");
	assert_int_equal(sample(text, "tokstream:request_success_total"
	    "{finished_reason=\"length\"}"), 80000);
	assert_int_equal(sample(text, RUNNING), 2);    /* theirs closed */
	assert_int_equal(sample(text, PROCS), 1);
	free(text);
	metrics_close(m);
}

/* A child that exits without metrics_close, one killed with SIGKILL,
 * and one that exited and waits to be reaped: none's gauges count once
 * it is gone. */
static void
test_dead_process_slot(void **unused)
{
	struct metrics *m = open_file();
	int fds[2], status;
	char *text, c;
	pid_t pid;

	metrics_gauge_set(m, METRICS_WAITING, 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct metrics *cm = NULL;
		char err[512];

		if (metrics_open(&cm, dir, err, sizeof(err)) != TS_OK)
			_exit(1);
		metrics_gauge_set(cm, METRICS_RUNNING, 5);
		metrics_gauge_set(cm, METRICS_WAITING, 3);
		_exit(0);               /* no metrics_close */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	text = render(m);
	assert_int_equal(sample(text, RUNNING), 0);
	assert_int_equal(sample(text, WAITING), 1);
	assert_int_equal(sample(text, PROCS), 1);
	free(text);

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct metrics *cm = NULL;
		char err[512];

		if (metrics_open(&cm, dir, err, sizeof(err)) != TS_OK)
			_exit(1);
		metrics_gauge_set(cm, METRICS_RUNNING, 5);
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);          /* a child that fails: EOF, not a hang */
	assert_int_equal(read(fds[0], &c, 1), 1);
	text = render(m);
	assert_int_equal(sample(text, RUNNING), 5);    /* alive: counted */
	assert_int_equal(sample(text, PROCS), 2);
	free(text);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	text = render(m);
	assert_int_equal(sample(text, RUNNING), 0);
	assert_int_equal(sample(text, PROCS), 1);
	free(text);
	close(fds[0]);

	/* a child that has exited and is not reaped yet (a zombie: kill()
	 * still finds it) is gone too */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct metrics *cm = NULL;
		char err[512];

		if (metrics_open(&cm, dir, err, sizeof(err)) != TS_OK)
			_exit(1);
		metrics_gauge_set(cm, METRICS_RUNNING, 7);
		_exit(0);
	}
	{
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		assert_int_equal(waitid(P_PID, (id_t)pid, &si,
		    WEXITED | WNOWAIT), 0);     /* exited, left unreaped */
		assert_int_equal(kill(pid, 0), 0);
	}
	text = render(m);
	assert_int_equal(sample(text, RUNNING), 0);
	assert_int_equal(sample(text, PROCS), 1);
	free(text);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	metrics_close(m);
}

/*
 * The slots of dead processes are reused: with two dead slots in the
 * file, METRICS_SLOTS handles all get one; the next has none, opens all
 * the same, and its gauges are not reported.
 */
static void
test_slot_reuse(void **unused)
{
	static struct metrics *h[METRICS_SLOTS + 1];
	struct metrics *extra;
	char *text;
	pid_t pid;
	int i, status;

	for (i = 0; i < 2; i++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct metrics *cm = NULL;
			char err[512];

			if (metrics_open(&cm, dir, err, sizeof(err)) != TS_OK)
				_exit(1);
			metrics_gauge_set(cm, METRICS_RUNNING, 100);
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_int_equal(status, 0);
	}
	for (i = 0; i < (int)METRICS_SLOTS; i++) {
		h[i] = open_file();
		metrics_gauge_set(h[i], METRICS_RUNNING, 1);
	}
	extra = open_file();
	metrics_gauge_set(extra, METRICS_RUNNING, 1000);
	text = render(extra);
	assert_int_equal(sample(text, RUNNING), METRICS_SLOTS);
	assert_int_equal(sample(text, PROCS), METRICS_SLOTS);
	free(text);
	metrics_close(extra);
	for (i = 0; i < (int)METRICS_SLOTS; i++)
		metrics_close(h[i]);
}

/* Raw 64-bit word of the file at byte offset off. */
static void
write_word(int fd, off_t off, uint64_t v)
{
	assert_int_equal(pwrite(fd, &v, sizeof(v), off), (ssize_t)sizeof(v));
}

static uint64_t
read_word(int fd, off_t off)
{
	uint64_t v = 0;

	if (pread(fd, &v, sizeof(v), off) != (ssize_t)sizeof(v))
		return UINT64_MAX;
	return v;
}

/*
 * Leftover slots: one with this process's pid but not its token (an
 * earlier process that had the same pid), one with a pid no process can
 * have, one with garbage in the high bits: none counts. Another handle
 * of this process does.
 */
static void
test_leftover_slots(void **unused)
{
	struct metrics *m = open_file(), *m2;
	char *text;
	int fd;

	metrics_close(m);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	write_word(fd, SLOT_OFF + 5 * SLOT_SIZE, (uint64_t)getpid());
	write_word(fd, SLOT_OFF + 5 * SLOT_SIZE + 8, 9);
	write_word(fd, SLOT_OFF + 6 * SLOT_SIZE, 0x7ffffff0u);
	write_word(fd, SLOT_OFF + 6 * SLOT_SIZE + 8, 10);
	write_word(fd, SLOT_OFF + 7 * SLOT_SIZE, 0xdead000000000001u);
	write_word(fd, SLOT_OFF + 7 * SLOT_SIZE + 8, 11);
	close(fd);
	m = open_file();
	m2 = open_file();
	metrics_gauge_set(m2, METRICS_RUNNING, 2);
	text = render(m);
	assert_int_equal(sample(text, RUNNING), 2);
	assert_int_equal(sample(text, PROCS), 2);
	free(text);
	metrics_close(m2);
	metrics_close(m);
}

/*
 * A new process whose pid had a leftover slot: its first open releases
 * it, so that other processes (which cannot tell a leftover from a slot
 * of the live process) do not count its gauges either.
 */
static void
test_leftover_of_own_pid(void **unused)
{
	struct metrics *m = open_file();
	int up[2], status;
	char *text, c;
	pid_t pid;

	assert_int_equal(pipe(up), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct metrics *cm = NULL;
		off_t slot = SLOT_OFF + 9 * SLOT_SIZE;
		char err[512];
		int fd = open(path, O_RDWR);

		if (fd < 0 || pwrite(fd, &(uint64_t){ (uint64_t)getpid() },
		    8, slot) != 8 || pwrite(fd, &(uint64_t){ 9 }, 8,
		    slot + 8) != 8)
			_exit(1);
		if (metrics_open(&cm, dir, err, sizeof(err)) != TS_OK)
			_exit(2);
		metrics_gauge_set(cm, METRICS_RUNNING, 1);
		if (read_word(fd, slot) != 0 || read_word(fd, slot + 8) != 0)
			_exit(3);       /* not released */
		if (write(up[1], "x", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(up[1]);           /* a child that fails: EOF, not a hang */
	assert_int_equal(read(up[0], &c, 1), 1);
	text = render(m);
	assert_int_equal(sample(text, RUNNING), 1);
	assert_int_equal(sample(text, PROCS), 2);
	free(text);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	text = render(m);
	assert_int_equal(sample(text, RUNNING), 0);
	assert_int_equal(sample(text, PROCS), 1);
	free(text);
	close(up[0]);
	metrics_close(m);
}

/* ---- damaged files ------------------------------------------------- */

static void
write_file(const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* A valid file with some counts, closed. */
static void
make_valid_file(void)
{
	struct metrics *m = open_file();

	metrics_add(m, METRICS_GENERATION_TOKENS, 42);
	metrics_observe(m, METRICS_TTFT, 5);
	metrics_close(m);
}

static void
assert_fresh(void)
{
	struct metrics *m = open_file();
	struct stat sb;
	char *text;

	text = render(m);
	assert_int_equal(sample(text, GEN), 0);
	assert_int_equal(count(text, TTFT), 0);
	free(text);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, FILE_SIZE);
	metrics_close(m);
}

/* Nobody uses it: a foreign, truncated, or other-version file is
 * re-initialised, as state.c does. */
static void
test_damaged_file_alone(void **unused)
{
	uint32_t v = 3;
	int fd;

	write_file("not a metrics file", 18);
	assert_fresh();
	make_valid_file();
	assert_int_equal(truncate(path, 100), 0);
	assert_fresh();
	make_valid_file();
	assert_int_equal(truncate(path, FILE_SIZE + 1), 0);
	assert_fresh();
	make_valid_file();
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &v, 4, 8), 4);     /* version */
	close(fd);
	assert_fresh();
	write_file("", 0);
	assert_fresh();
}

/*
 * In use by another process (a shared flock held here on its own open
 * file description): the opener must not re-initialise it under them;
 * TS_EFORMAT with the path and the cause, then the memory fallback.
 */
static void
check_in_use(void (*damage)(int fd), const char *cause)
{
	struct metrics *m = (struct metrics *)&m, *mem;
	char err[512];
	int fd;

	make_valid_file();
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_SH), 0);
	damage(fd);
	memset(err, 'x', sizeof(err));
	assert_int_equal(metrics_open(&m, dir, err, sizeof(err)),
	    TS_EFORMAT);
	assert_null(m);
	print_message("%s\n", err);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, cause));
	mem = open_memory();
	metrics_add(mem, METRICS_GENERATION_TOKENS, 1);
	metrics_close(mem);
	close(fd);
	/* Released: the next opener is alone and starts afresh. */
	assert_fresh();
}

static void
damage_magic(int fd)
{
	assert_int_equal(pwrite(fd, "TOKSTAT1", 8, 0), 8);
}

static void
damage_truncate(int fd)
{
	assert_int_equal(ftruncate(fd, 100), 0);
}

static void
damage_version(int fd)
{
	uint32_t v = 3;

	assert_int_equal(pwrite(fd, &v, 4, 8), 4);
}

static void
damage_layout(int fd)
{
	write_word(fd, 40, 12345);      /* the layout hash */
}

static void
test_damaged_file_in_use(void **unused)
{
	check_in_use(damage_magic, "bad magic");
	check_in_use(damage_truncate, "100 bytes, want 9216");
	check_in_use(damage_version, "version 3, want 4");
	check_in_use(damage_layout, "another layout");
}

static void
test_open_errors(void **unused)
{
	struct metrics *m = (struct metrics *)&m;
	char err[512], longdir[5000];

	assert_int_equal(metrics_open(&m, "/proc/nonexistent/x", err,
	    sizeof(err)), TS_ESYS);
	assert_non_null(strstr(err, "/proc/nonexistent/x"));
	assert_null(m);
	memset(longdir, 'a', sizeof(longdir) - 1);
	longdir[sizeof(longdir) - 1] = '\0';
	m = (struct metrics *)&m;
	assert_int_equal(metrics_open(&m, longdir, err, sizeof(err)),
	    TS_EINVAL);
	assert_string_equal(err, "metrics directory path too long");
	assert_null(m);
	/* A directory that is a file. */
	write_file("x", 1);
	snprintf(longdir, sizeof(longdir), "%s", path);
	assert_int_equal(metrics_open(&m, longdir, err, sizeof(err)),
	    TS_ESYS);
	assert_non_null(strstr(err, path));
}

/* ---- threads ------------------------------------------------------------ */

static void *
thread_main(void *p)
{
	struct metrics *m = p;
	int i;

	for (i = 0; i < 20000; i++) {
		metrics_gauge_add(m, METRICS_RUNNING, 1);
		metrics_observe(m, METRICS_TTFT, (int64_t)i * 1000);
		metrics_add(m, METRICS_GENERATION_TOKENS, 1);
		metrics_finished(m, METRICS_STOP);
		metrics_gauge_add(m, METRICS_RUNNING, -1);
	}
	return NULL;
}

static void
test_threads(void **unused)
{
	struct metrics *m = open_file();
	pthread_t t[4];
	char *text;
	int i;

	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, thread_main, m),
		    0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	text = render(m);
	assert_int_equal(sample(text, GEN), 80000);
	assert_int_equal(count(text, TTFT), 80000);
	/* i us for i < 20000, four times: 4 * 199990000 us */
	assert_sum(text, TTFT, "799.96");
	assert_int_equal(bucket(text, TTFT, "0.001"), 4 * 1001);
	assert_int_equal(bucket(text, TTFT, "0.005"), 4 * 5001);
	assert_int_equal(bucket(text, TTFT, "0.02"), 80000);
	assert_int_equal(sample(text, RUNNING), 0);
	assert_int_equal(sample(text, "tokstream:request_success_total"
	    "{finished_reason=\"stop\"}"), 80000);
	assert_histogram_shape(text, TTFT);
	free(text);
	metrics_close(m);
}

static void *
opener_main(void *p)
{
	struct metrics **h = p;
	char err[512];

	if (metrics_open(h, dir, err, sizeof(err)) != TS_OK)
		return NULL;
	metrics_gauge_set(*h, METRICS_RUNNING, 1);
	return NULL;
}

/* Threads of one process opening at once each get a slot of their own. */
static void
test_concurrent_opens(void **unused)
{
	struct metrics *h[16] = { NULL };
	pthread_t t[16];
	char *text;
	int i;

	for (i = 0; i < 16; i++)
		assert_int_equal(pthread_create(&t[i], NULL, opener_main,
		    &h[i]), 0);
	for (i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 16; i++)
		assert_non_null(h[i]);
	text = render(h[0]);
	assert_int_equal(sample(text, RUNNING), 16);
	assert_int_equal(sample(text, PROCS), 16);
	free(text);
	for (i = 0; i < 16; i++)
		metrics_close(h[i]);
}

/* ---- the text format ------------------------------------------------ */

/* Pipes text into tests/promcheck; returns its exit status. */
static int
promcheck(const char *prog, const char *text)
{
	char cmd[1200];
	FILE *p;
	int status;

	snprintf(cmd, sizeof(cmd), "'%s' >&2", prog);
	p = popen(cmd, "w");
	assert_non_null(p);
	fputs(text, p);
	status = pclose(p);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void
test_promcheck(void **unused)
{
	const char *build = getenv("TS_BUILDDIR");
	struct metrics *m = open_memory();
	char prog[1024], *text, *corrupt;

	if (build == NULL)
		skip();
	snprintf(prog, sizeof(prog), "%s/tests/promcheck", build);
	if (access(prog, X_OK) != 0)
		skip();
	text = render(m);
	assert_int_equal(promcheck(prog, text), 0);
	free(text);
	metrics_observe(m, METRICS_TTFT, 3000000);
	metrics_observe(m, METRICS_E2E, INT64_MAX);
	metrics_add(m, METRICS_GENERATION_TOKENS, UINT64_MAX);
	metrics_gauge_set(m, METRICS_WAITING, -2);
	metrics_finished(m, METRICS_ABORT);
	text = render(m);
	assert_int_equal(promcheck(prog, text), 0);
	/* And it does fail: a +Inf bucket below the one before it. */
	corrupt = strstr(text, TTFT "_bucket{le=\"+Inf\"} 1\n");
	assert_non_null(corrupt);
	corrupt[strlen(TTFT "_bucket{le=\"+Inf\"} ")] = '0';
	assert_int_not_equal(promcheck(prog, text), 0);
	free(text);
	metrics_close(m);
}


/* vLLM's dialect: vllm: names, model_name (escaped) on every sample, the
 * request histograms (durations in seconds, token counts as counts); the
 * default render has none of them and is the "tokstream" dialect. */
static void
test_vllm_dialect(void **unused)
{
	struct metrics *m = open_memory();
	struct metrics_dialect d;
	struct ts_buf b;
	const char *build = getenv("TS_BUILDDIR");
	char prog[1024], val[64], *line, *text, *plain;
	char big[300];
	size_t samples = 0;

	metrics_observe_req(m, METRICS_REQ_PROMPT_TOKENS, 5);
	metrics_observe_req(m, METRICS_REQ_PROMPT_TOKENS, 7);
	metrics_observe_req(m, METRICS_REQ_GENERATION_TOKENS, 1000001);
	metrics_observe_req(m, METRICS_REQ_TPOT, 20000000);
	metrics_observe_req(m, METRICS_REQ_PREFILL, -5);
	metrics_observe_req(m, (enum metrics_req_hist)99, 1);  /* ignored */
	metrics_finished(m, METRICS_LENGTH);
	metrics_dialect_of(&d, "vllm", "my \"model\"\\x");
	ts_buf_init(&b, 1 << 20);
	assert_int_equal(metrics_render_dialect(m, &d, &b), TS_OK);
	text = b.p;
#define ML "{model_name=\"my \\\"model\\\"\\\\x\""
	assert_int_equal(sample(text, "vllm:request_success_total" ML
	    ",finished_reason=\"length\"}"), 1);
	assert_int_equal(sample(text, "vllm:request_prompt_tokens_bucket" ML
	    ",le=\"5.0\"}"), 1);
	assert_int_equal(sample(text, "vllm:request_prompt_tokens_bucket" ML
	    ",le=\"10.0\"}"), 2);
	sample_text(text, "vllm:request_prompt_tokens_sum" ML "}", val,
	    sizeof(val));
	assert_string_equal(val, "12.0");
	assert_int_equal(sample(text,
	    "vllm:request_generation_tokens_bucket" ML ",le=\"1000000.0\"}"),
	    0);
	assert_int_equal(sample(text,
	    "vllm:request_generation_tokens_bucket" ML ",le=\"+Inf\"}"), 1);
	assert_int_equal(sample(text,
	    "vllm:request_time_per_output_token_seconds_bucket" ML
	    ",le=\"0.025\"}"), 1);
	sample_text(text, "vllm:request_time_per_output_token_seconds_sum" ML
	    "}", val, sizeof(val));
	assert_string_equal(val, "0.02");
	assert_int_equal(sample(text, "vllm:request_prefill_time_seconds_bucket"
	    ML ",le=\"0.3\"}"), 1);
	assert_int_equal(sample(text, "vllm:num_requests_running" ML "}"), 0);
#undef ML
	/* every sample is vllm: and labelled */
	for (line = text; *line != '\0'; line = strchr(line, '\n') + 1) {
		if (*line != '#') {
			assert_memory_equal(line, "vllm:", 5);
			assert_non_null(strstr(line, "{model_name=\"my "));
			samples++;
		}
	}
	assert_true(samples > 200);
	/* tests/promcheck, when a build is named */
	snprintf(prog, sizeof(prog), "%s/tests/promcheck", build ? build : "");
	if (build != NULL && access(prog, X_OK) == 0)
		assert_int_equal(promcheck(prog, text), 0);
	/* the default: tokstream's names, no request histogram; with a
	 * model name (as the server gives it, #24) every sample carries
	 * model_name too, else it is metrics_render's text */
	plain = render(m);
	assert_null(strstr(plain, "vllm:"));
	assert_null(strstr(plain, "model_name"));
	assert_null(strstr(plain, "request_prompt_tokens"));
	metrics_dialect_of(&d, "tokstream", NULL);
	ts_buf_reset(&b);
	assert_int_equal(metrics_render_dialect(m, &d, &b), TS_OK);
	assert_string_equal(b.p, plain);
	metrics_dialect_of(&d, "tokstream", "m1");
	ts_buf_reset(&b);
	assert_int_equal(metrics_render_dialect(m, &d, &b), TS_OK);
	assert_null(strstr(b.p, "vllm:"));
	assert_null(strstr(b.p, "request_prompt_tokens"));
	samples = 0;
	for (line = b.p; *line != '\0'; line = strchr(line, '\n') + 1) {
		if (*line != '#') {
			assert_memory_equal(line, "tokstream:", 10);
			assert_non_null(strstr(line, "{model_name=\"m1\""));
			samples++;
		}
	}
	assert_true(samples > 50);
	free(plain);
	/* a model name over 256 bytes: refused, b as it was */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	metrics_dialect_of(&d, "vllm", big);
	ts_buf_reset(&b);
	assert_int_equal(metrics_render_dialect(m, &d, &b), TS_EINVAL);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
	metrics_close(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_boundaries),
		cmocka_unit_test(test_cumulative_render),
		cmocka_unit_test(test_sum_rounding),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_gauges),
		cmocka_unit_test(test_null_handle),
		cmocka_unit_test(test_render_limit),
		cmocka_unit_test_setup_teardown(test_two_handles, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_across_processes, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_dead_process_slot, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_slot_reuse, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_leftover_slots, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_leftover_of_own_pid,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_file_alone, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_damaged_file_in_use,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_opens, setup,
		    teardown),
		cmocka_unit_test(test_promcheck),
		cmocka_unit_test(test_vllm_dialect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
