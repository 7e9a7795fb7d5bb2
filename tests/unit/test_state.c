/*
 * test_state.c - the shared state file: records, latest lookup, totals
 * across processes (fork), concurrent writers (threads), ring eviction,
 * re-initialisation of a foreign file, and a killed owner.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stores/state.h"

static char dir[256];

static int
setup(void **unused)
{
	snprintf(dir, sizeof(dir), "/tmp/ts-state-test.XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **unused)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/state", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}

static struct state *
open_state(void)
{
	struct state *st;
	char err[256];

	assert_int_equal(state_open(&st, dir, err, sizeof(err)), TS_OK);
	return st;
}

static void
test_record_lifecycle(void **unused)
{
	struct state *st = open_state();
	struct state_record rec;
	uint64_t total0 = state_total_generated(st);
	uint64_t id = state_begin(st, STATE_KIND_STREAM, 100, 7, 0, 0, 0);

	assert_true(id > 0);
	assert_int_equal(state_lookup(st, id, &rec), TS_OK);
	assert_int_equal(rec.status, STATE_RUNNING);
	assert_int_equal(rec.requested, 100);
	assert_int_equal(rec.prompt_tokens, 7);
	assert_int_equal(rec.pid, (uint64_t)getpid());
	assert_int_equal(rec.owner_gone, 0);
	state_add_generated(st, id, 1);
	state_add_generated(st, id, 4);
	state_end(st, id, STATE_CANCELLED);
	assert_int_equal(state_lookup(st, 0, &rec), TS_OK);   /* latest */
	assert_int_equal(rec.id, id);
	assert_int_equal(rec.generated, 5);
	assert_int_equal(rec.status, STATE_CANCELLED);
	assert_true(rec.ended_ms >= rec.started_ms);
	assert_int_equal(state_total_generated(st), total0 + 5);
	assert_int_equal(rec.resumed_from, 0);
	assert_int_equal(state_lookup(st, id + 1000, &rec), TS_EINVAL);
	id = state_begin(st, STATE_KIND_STREAM, 20, 1, 5, 6, 0xabcdef);
	assert_int_equal(state_lookup(st, id, &rec), TS_OK);
	assert_int_equal(rec.resumed_from, 5);
	assert_int_equal(rec.resume_index, 6);
	assert_int_equal(rec.key, 0xabcdef);
	state_end(st, id, STATE_DONE);
	assert_string_equal(state_status_name(STATE_DONE), "done");
	state_close(st);
}

/* Two processes share one file: ids unique, totals add up. */
static void
test_across_processes(void **unused)
{
	struct state *st = open_state();
	uint64_t total0 = state_total_generated(st);
	uint64_t streams0 = state_total_streams(st);
	pid_t pid;
	int status, i;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct state *c = open_state();

		for (i = 0; i < 50; i++) {
			uint64_t id = state_begin(c, STATE_KIND_GENERATE, 3, 1, 0, 0, 0);

			state_add_generated(c, id, 3);
			state_end(c, id, STATE_DONE);
		}
		state_close(c);
		_exit(0);
	}
	for (i = 0; i < 50; i++) {
		uint64_t id = state_begin(st, STATE_KIND_STREAM, 2, 1, 0, 0, 0);

		state_add_generated(st, id, 2);
		state_end(st, id, STATE_DONE);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	assert_int_equal(state_total_generated(st), total0 + 250);
	assert_int_equal(state_total_streams(st), streams0 + 100);
	state_close(st);
}

struct thread_arg {
	struct state *st;
	uint64_t ids[200];
};

static void *
writer(void *p)
{
	struct thread_arg *a = p;
	int i;

	for (i = 0; i < 200; i++) {
		a->ids[i] = state_begin(a->st, STATE_KIND_STREAM, 10, 1, 0, 0, 0);
		state_add_generated(a->st, a->ids[i], (uint64_t)(i % 7));
		state_end(a->st, a->ids[i], STATE_DONE);
	}
	return NULL;
}

static void
test_threads(void **unused)
{
	struct state *st = open_state();
	struct thread_arg args[4];
	pthread_t t[4];
	uint64_t total0 = state_total_generated(st), want = 0;
	int i, j, k;

	for (i = 0; i < 4; i++) {
		args[i].st = st;
		assert_int_equal(pthread_create(&t[i], NULL, writer, &args[i]),
		    0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 200; i++)
		want += (uint64_t)(i % 7) * 4;
	assert_int_equal(state_total_generated(st), total0 + want);
	/* ids are unique across threads */
	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++)
			for (k = 0; k < 200 && i < j; k++)
				assert_true(args[i].ids[k] != args[j].ids[k]);
	state_close(st);
}

static void
test_ring_eviction(void **unused)
{
	struct state *st = open_state();
	struct state_record rec;
	uint64_t first = state_begin(st, STATE_KIND_STREAM, 1, 1, 0, 0,
	    0);
	uint64_t id = 0;
	unsigned i;

	state_end(st, first, STATE_DONE);
	for (i = 0; i < STATE_CAPACITY; i++) {
		id = state_begin(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0);
		state_end(st, id, STATE_DONE);
	}
	assert_int_equal(state_lookup(st, first, &rec), TS_EINVAL);
	assert_int_equal(state_lookup(st, id, &rec), TS_OK);
	assert_int_equal(state_lookup(st, first + 1, &rec), TS_OK);
	state_close(st);
}

static void
test_foreign_file_reinitialised(void **unused)
{
	char path[300];
	FILE *f;
	struct state *st;
	struct state_record rec;

	snprintf(path, sizeof(path), "%s/state", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not a state file", f);
	fclose(f);
	st = open_state();
	assert_int_equal(state_total_generated(st), 0);
	assert_int_equal(state_lookup(st, 0, &rec), TS_EINVAL);
	state_close(st);
}

/* A process killed mid-stream leaves a readable record, marked gone. */
static void
test_owner_gone(void **unused)
{
	struct state *st = open_state();
	struct state_record rec;
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct state *c = open_state();
		uint64_t id = state_begin(c, STATE_KIND_STREAM, 50, 1, 0, 0, 0);

		state_add_generated(c, id, 3);
		_exit(0);       /* no state_end: as if killed */
	}
	waitpid(pid, &status, 0);
	assert_int_equal(state_lookup(st, 0, &rec), TS_OK);
	assert_int_equal(rec.status, STATE_RUNNING);
	assert_int_equal(rec.generated, 3);
	assert_int_equal(rec.owner_gone, 1);
	state_close(st);
}

/* The in-memory fallback counts like the file does. */
static void
test_memory_fallback(void **unused)
{
	struct state *st;
	struct state_record rec;
	uint64_t id;

	assert_int_equal(state_open_memory(&st), TS_OK);
	id = state_begin(st, STATE_KIND_STREAM, 9, 2, 0, 0, 7);
	assert_int_equal(id, 1);
	state_add_generated(st, id, 4);
	state_end(st, id, STATE_CANCELLED);
	assert_int_equal(state_lookup(st, 0, &rec), TS_OK);
	assert_int_equal(rec.generated, 4);
	assert_int_equal(rec.status, STATE_CANCELLED);
	assert_int_equal(state_total_generated(st), 4);
	state_close(st);
}

static void
test_open_errors(void **unused)
{
	struct state *st;
	char err[256], longdir[5000];

	assert_int_equal(state_open(&st, "/proc/nonexistent/x", err,
	    sizeof(err)), TS_ESYS);
	assert_non_null(strstr(err, "/proc/nonexistent/x"));
	assert_null(st);
	memset(longdir, 'a', sizeof(longdir) - 1);
	longdir[sizeof(longdir) - 1] = '\0';
	assert_int_equal(state_open(&st, longdir, err, sizeof(err)),
	    TS_EINVAL);
	assert_string_equal(err, "state directory path too long");
	assert_null(st);
}

/* The file is bound to an instance name: the same name (a restarted
 * process, a second one) keeps the records; another name (a backend
 * renamed over its run directory) empties them, so that b1's ids are
 * never answered as b2's; the binding survives a reopen. */
static void
test_instance_binding(void **unused)
{
	struct state *st = open_state(), *again;
	struct state_record rec;
	uint64_t id;
	int reset = -1;

	(void)unused;
	assert_int_equal(state_bind_instance(st, 0x3162, &reset), TS_OK);
	assert_int_equal(reset, 0);              /* a new file: nothing lost */
	id = state_begin(st, STATE_KIND_STREAM, 10, 1, 0, 0, 0);
	state_add_generated(st, id, 3);
	again = open_state();
	assert_int_equal(state_bind_instance(again, 0x3162, &reset), TS_OK);
	assert_int_equal(reset, 0);
	assert_int_equal(state_lookup(again, id, &rec), TS_OK);
	assert_int_equal(state_total_generated(again), 3);
	state_close(again);
	again = open_state();
	assert_int_equal(state_bind_instance(again, 0x3262, &reset), TS_OK);
	assert_int_equal(reset, 1);
	assert_int_equal(state_lookup(again, id, &rec), TS_EINVAL);
	assert_int_equal(state_total_generated(again), 0);
	assert_int_equal(state_total_streams(again), 0);
	/* ids start again at 1 */
	assert_true(state_begin(again, STATE_KIND_STREAM, 1, 1, 0, 0, 0) == 1);
	state_close(again);
	state_close(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_record_lifecycle, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_across_processes, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_eviction, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_foreign_file_reinitialised, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_gone, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_instance_binding, setup,
		    teardown),
		cmocka_unit_test(test_memory_fallback),
		cmocka_unit_test(test_open_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
