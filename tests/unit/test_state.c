/*
 * test_state.c - the shared state file: records, latest lookup, totals
 * across processes (fork), concurrent writers (threads), ring eviction,
 * running streams never evicted, a file full of running streams, updates
 * racing the reuse of their record (threads and processes), consistent
 * copies, re-initialisation of a foreign file, a killed owner, a lock
 * holder that died or stopped, resizing, a file in use in another
 * format, and the conversion of a version 3 file.
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
#include <stdatomic.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/* Records of the tests' files: small, so that the ring turns fast. */
#define TEST_RECORDS 64u

static struct state *
open_records(uint32_t records)
{
	struct state *st;
	char err[256];

	assert_int_equal(state_open(&st, dir, records, err, sizeof(err)),
	    TS_OK);
	return st;
}

static struct state *
open_state(void)
{
	return open_records(TEST_RECORDS);
}

/* state_begin with the fields as arguments; the id, whether recorded or
 * not (threads and children call it: no cmocka assertion). */
static uint64_t
begin_any(struct state *st, enum state_kind kind, uint64_t requested,
    uint64_t prompt_tokens, uint64_t resumed_from, uint64_t resume_index,
    uint64_t key)
{
	struct state_start s;
	uint64_t id = 0;

	memset(&s, 0, sizeof(s));
	s.kind = kind;
	s.requested = requested;
	s.prompt_tokens = prompt_tokens;
	s.resumed_from = resumed_from;
	s.resume_index = resume_index;
	s.key = key;
	(void)state_begin(st, &s, &id);
	return id;
}

/* The same, in the test's own thread: the stream must have a record. */
static uint64_t
begin(struct state *st, enum state_kind kind, uint64_t requested,
    uint64_t prompt_tokens, uint64_t resumed_from, uint64_t resume_index,
    uint64_t key)
{
	struct state_start s;
	uint64_t id = 0;

	memset(&s, 0, sizeof(s));
	s.kind = kind;
	s.requested = requested;
	s.prompt_tokens = prompt_tokens;
	s.resumed_from = resumed_from;
	s.resume_index = resume_index;
	s.key = key;
	assert_int_equal(state_begin(st, &s, &id), TS_OK);
	return id;
}

static void
test_record_lifecycle(void **unused)
{
	struct state *st = open_state();
	struct state_record rec;
	uint64_t total0 = state_total_generated(st);
	uint64_t id = begin(st, STATE_KIND_STREAM, 100, 7, 0, 0, 0);

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
	id = begin(st, STATE_KIND_STREAM, 20, 1, 5, 6, 0xabcdef);
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
			uint64_t id = begin_any(c, STATE_KIND_GENERATE, 3, 1,
			    0, 0, 0);

			state_add_generated(c, id, 3);
			state_end(c, id, STATE_DONE);
		}
		state_close(c);
		_exit(0);
	}
	for (i = 0; i < 50; i++) {
		uint64_t id = begin(st, STATE_KIND_STREAM, 2, 1, 0, 0, 0);

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
		a->ids[i] = begin_any(a->st, STATE_KIND_STREAM, 10, 1, 0, 0, 0);
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
	uint64_t first = begin(st, STATE_KIND_STREAM, 1, 1, 0, 0,
	    0);
	uint64_t id = 0;
	unsigned i;

	state_end(st, first, STATE_DONE);
	for (i = 0; i < state_capacity(st); i++) {
		id = begin(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0);
		state_end(st, id, STATE_DONE);
	}
	assert_int_equal(state_lookup(st, first, &rec), TS_EINVAL);
	assert_int_equal(state_lookup(st, id, &rec), TS_OK);
	assert_int_equal(state_lookup(st, first + 1, &rec), TS_OK);
	state_close(st);
}

/*
 * A running stream keeps its record however many streams start after it:
 * 3 x capacity more streams start and end while it runs, and it is still
 * there, running, with its own fields, and its updates land.
 */
static void
test_running_never_evicted(void **unused)
{
	struct state *st = open_state();
	struct state_record rec;
	uint64_t first = begin(st, STATE_KIND_STREAM, 77, 3, 0, 0, 0);
	uint64_t id;
	unsigned i;

	(void)unused;
	state_add_generated(st, first, 2);
	for (i = 0; i < 3 * state_capacity(st); i++) {
		id = begin(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0);
		state_end(st, id, STATE_DONE);
	}
	assert_int_equal(state_lookup(st, first, &rec), TS_OK);
	assert_int_equal(rec.status, STATE_RUNNING);
	assert_int_equal(rec.requested, 77);
	assert_int_equal(rec.generated, 2);
	state_add_generated(st, first, 1);
	state_end(st, first, STATE_DONE);
	assert_int_equal(state_lookup(st, first, &rec), TS_OK);
	assert_int_equal(rec.generated, 3);
	assert_int_equal(rec.status, STATE_DONE);
	state_close(st);
}

/*
 * More running streams than records: the ones recorded stay, each with
 * its own fields; the stream that found no free record still gets an id
 * of its own, is counted as unrecorded, is not looked up, and its
 * updates touch no record but count in the total. Once a record is
 * free again (its stream ended), new streams are recorded.
 */
static void
test_full_of_running(void **unused)
{
	struct state *st = open_state();
	struct state_record rec;
	struct state_start s;
	uint32_t cap = state_capacity(st);
	uint64_t *ids = xcalloc(cap + 1, sizeof(*ids));
	uint64_t total;
	unsigned i;

	(void)unused;
	for (i = 0; i < cap; i++)
		ids[i] = begin(st, STATE_KIND_STREAM, 1000 + i, 1, 0, 0, 0);
	memset(&s, 0, sizeof(s));
	s.kind = STATE_KIND_STREAM;
	s.requested = 5;
	assert_int_equal(state_begin(st, &s, &ids[cap]), TS_ELIMIT);
	assert_int_equal(state_unrecorded(st), 1);
	assert_true(ids[cap] > ids[cap - 1]);
	assert_int_equal(state_lookup(st, ids[cap], &rec), TS_EINVAL);
	total = state_total_generated(st);
	state_add_generated(st, ids[cap], 5);
	state_set_phase(st, ids[cap], STATE_PHASE_DECODE, 1);
	state_end(st, ids[cap], STATE_DONE);
	assert_int_equal(state_total_generated(st), total + 5);
	assert_int_equal(state_total_streams(st), cap + 1);
	for (i = 0; i < cap; i++) {
		assert_int_equal(state_lookup(st, ids[i], &rec), TS_OK);
		assert_int_equal(rec.status, STATE_RUNNING);
		assert_int_equal(rec.requested, 1000 + i);
		assert_int_equal(rec.generated, 0);
		assert_int_equal(rec.phase, STATE_PHASE_WAITING);
	}
	for (i = 0; i < cap; i++)
		state_end(st, ids[i], STATE_DONE);
	begin(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0);
	assert_int_equal(state_unrecorded(st), 1);
	free(ids);
	state_close(st);
}

/*
 * The race of an update with the reuse of its record. A late writer
 * (stream X, ended) keeps updating X while a claimer starts streams that
 * take X's record over; the claimer checks that each of its records holds
 * exactly what it wrote. A late update that checked X's id, then stored
 * after the claimer took the record, shows as a field of X in another
 * stream's record (a mixed record). The late writer runs ROUNDS rounds:
 * each round ends a stream and updates it until its record is reused.
 */
#define RACE_ROUNDS 500u
#define RACE_MAGIC 0x5eedull

struct race {
	_Atomic int done;          /* the late writer has finished */
	_Atomic unsigned mixed;    /* mixed records the claimer saw */
	_Atomic unsigned claimed;  /* records the claimer checked */
};

static void
race_late_writer(struct state *st, struct race *rc)
{
	struct state_finish fin = { 7, 7, STATE_CAUSE_CLIENT_GONE };
	struct state_record rec;
	unsigned round;
	uint64_t x;

	for (round = 0; round < RACE_ROUNDS; round++) {
		x = begin_any(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0);
		state_end(st, x, STATE_DONE);
		/* late updates until X's record holds another stream */
		while (state_lookup(st, x, &rec) == TS_OK) {
			state_add_generated(st, x, 1);
			state_set_finish(st, x, &fin);
			state_set_phase(st, x, STATE_PHASE_DECODE, 9);
			state_set_cached(st, x, 99);
			state_end(st, x, STATE_CANCELLED);
		}
	}
	atomic_store(&rc->done, 1);
}

static void
race_claimer(struct state *st, struct race *rc)
{
	struct state_finish fin = { 0, 0, STATE_CAUSE_NONE };
	struct state_record rec;
	uint64_t y;

	while (!atomic_load(&rc->done)) {
		y = begin_any(st, STATE_KIND_GENERATE, RACE_MAGIC, 2, 0, 0,
		    0);
		state_add_generated(st, y, 5);
		state_set_finish(st, y, &fin);
		state_end(st, y, STATE_DONE);
		if (state_lookup(st, y, &rec) != TS_OK)
			continue;
		atomic_fetch_add(&rc->claimed, 1);
		if (rec.kind != STATE_KIND_GENERATE ||
		    rec.requested != RACE_MAGIC || rec.generated != 5 ||
		    rec.status != STATE_DONE || rec.wasted != 0 ||
		    rec.leave_us != 0 || rec.cause != STATE_CAUSE_NONE ||
		    rec.phase != STATE_PHASE_WAITING || rec.queue_us != 0 ||
		    rec.cached_tokens != 0)
			atomic_fetch_add(&rc->mixed, 1);
	}
}

struct race_thread {
	struct state *st;
	struct race *rc;
};

static void *
race_late_thread(void *p)
{
	struct race_thread *t = p;

	race_late_writer(t->st, t->rc);
	return NULL;
}

/* Two threads of one process (ThreadSanitizer watches this one). */
static void
test_update_vs_reuse_threads(void **unused)
{
	struct state *st = open_state();
	struct race rc = { 0, 0, 0 };
	struct race_thread t = { st, &rc };
	pthread_t th;

	(void)unused;
	assert_int_equal(pthread_create(&th, NULL, race_late_thread, &t), 0);
	race_claimer(st, &rc);
	pthread_join(th, NULL);
	assert_true(atomic_load(&rc.claimed) > 0);
	assert_int_equal(atomic_load(&rc.mixed), 0);
	state_close(st);
}

/* Two processes, each with its own mapping of the file. */
static void
test_update_vs_reuse_processes(void **unused)
{
	struct state *st = open_state();
	struct race *rc = mmap(NULL, sizeof(*rc), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;
	int status;

	(void)unused;
	assert_true(rc != MAP_FAILED);
	atomic_init(&rc->done, 0);
	atomic_init(&rc->mixed, 0);
	atomic_init(&rc->claimed, 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct state *c = open_state();

		race_late_writer(c, rc);
		state_close(c);
		_exit(0);
	}
	race_claimer(st, rc);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	assert_true(atomic_load(&rc->claimed) > 0);
	assert_int_equal(atomic_load(&rc->mixed), 0);
	munmap(rc, sizeof(*rc));
	state_close(st);
}

/*
 * A reader never sees half an update: a writer stores wasted = leave_us
 * = k for k = 1, 2, ... into SNAPSHOT_RECS running records in turn (some
 * of them with the two words on two cache lines) while a reader copies
 * them; every copy has wasted == leave_us.
 */
#define SNAPSHOT_WRITES 2000000u
#define SNAPSHOT_RECS 8u

struct snapshot {
	struct state *st;
	uint64_t id[SNAPSHOT_RECS];
	_Atomic int done;
};

static void *
snapshot_writer(void *p)
{
	struct snapshot *s = p;
	struct state_finish fin;
	uint64_t k;

	for (k = 1; k <= SNAPSHOT_WRITES; k++) {
		fin.wasted = k;
		fin.leave_us = k;
		fin.cause = STATE_CAUSE_NONE;
		state_set_finish(s->st, s->id[k % SNAPSHOT_RECS], &fin);
	}
	atomic_store(&s->done, 1);
	return NULL;
}

static void
test_consistent_copy(void **unused)
{
	struct snapshot s;
	struct state_record rec;
	pthread_t th;
	unsigned torn = 0, copies = 0, i;

	(void)unused;
	s.st = open_state();
	for (i = 0; i < SNAPSHOT_RECS; i++)
		s.id[i] = begin(s.st, STATE_KIND_STREAM, 1, 1, 0, 0, 0);
	atomic_init(&s.done, 0);
	assert_int_equal(pthread_create(&th, NULL, snapshot_writer, &s), 0);
	while (!atomic_load(&s.done)) {
		for (i = 0; i < SNAPSHOT_RECS; i++) {
			if (state_lookup(s.st, s.id[i], &rec) != TS_OK)
				continue;
			copies++;
			if (rec.wasted != rec.leave_us)
				torn++;
		}
	}
	pthread_join(th, NULL);
	assert_true(copies > 0);
	assert_int_equal(torn, 0);
	state_close(s.st);
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
	unsigned i;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct state *c = open_state();
		uint64_t id = begin_any(c, STATE_KIND_STREAM, 50, 1, 0, 0, 0);

		state_add_generated(c, id, 3);
		_exit(0);       /* no state_end: as if killed */
	}
	waitpid(pid, &status, 0);
	assert_int_equal(state_lookup(st, 0, &rec), TS_OK);
	assert_int_equal(rec.status, STATE_RUNNING);
	assert_int_equal(rec.generated, 3);
	assert_int_equal(rec.owner_gone, 1);
	/* running, but nobody will end it: its record is taken again */
	for (i = 0; i < state_capacity(st); i++)
		state_end(st, begin(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0),
		    STATE_DONE);
	assert_int_equal(state_lookup(st, rec.id, &rec), TS_EINVAL);
	state_close(st);
}

/* The file's layout (state.h), for the tests that write it by hand. */
#define HDR_SIZE 128u
#define REC_SIZE 144u
#define REC_LOCK 0u
#define REC_ID 8u

/* Maps the test's state file (its whole length) read-write. */
static unsigned char *
map_file(size_t *len)
{
	char path[300];
	struct stat sb;
	unsigned char *m;
	int fd;

	snprintf(path, sizeof(path), "%s/state", dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	*len = (size_t)sb.st_size;
	m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	close(fd);
	return m;
}

/* A pid that no process has: a child that has exited and been reaped. */
static uint64_t
dead_pid(void)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return (uint64_t)pid;
}

/*
 * A writer that died holding a record's lock (killed between taking it
 * and releasing it) leaves it to the next writer: an update of that
 * stream lands, and readers see the record again. A holder that lives
 * (a writer stopped mid-write) does not hang a reader or a new stream:
 * the lookup gives up, the new stream takes another record.
 */
static void
test_lock_holder_gone_or_stuck(void **unused)
{
	struct state *st = open_state();
	struct state_record rec;
	unsigned char *m;
	size_t len;
	uint64_t id, w, ids[2], cap;
	_Atomic uint64_t *lock;

	(void)unused;
	id = begin(st, STATE_KIND_STREAM, 9, 1, 0, 0, 0);
	m = map_file(&len);
	lock = (_Atomic uint64_t *)(m + HDR_SIZE + (id - 1) * REC_SIZE +
	    REC_LOCK);
	w = atomic_load(lock);
	atomic_store(lock, w | dead_pid());
	state_add_generated(st, id, 4);
	assert_int_equal(state_lookup(st, id, &rec), TS_OK);
	assert_int_equal(rec.generated, 4);
	assert_int_equal(atomic_load(lock) & 0xffffffffu, 0);
	/* a live holder: our parent, stopped mid-write as far as the file
	 * says */
	state_end(st, id, STATE_DONE);
	w = atomic_load(lock);
	atomic_store(lock, w | (uint64_t)getppid());
	assert_int_equal(state_lookup(st, id, &rec), TS_EINVAL);
	/* the next stream to meet that record passes it by */
	cap = state_capacity(st);
	do {
		ids[0] = begin(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0);
		state_end(st, ids[0], STATE_DONE);
	} while ((ids[0] - 1) % cap != ((id - 1) % cap + cap - 1) % cap);
	ids[1] = begin(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0);
	assert_int_equal(ids[1], ids[0] + 2);
	assert_int_equal(state_lookup(st, ids[1], &rec), TS_OK);
	atomic_store(lock, w);
	munmap(m, len);
	state_close(st);
}

/* The records a server wants: every process's streams plus history,
 * within the bounds. */
static void
test_capacity_for(void **unused)
{
	(void)unused;
	assert_int_equal(state_capacity_for(1, 128), STATE_HISTORY + 128);
	assert_int_equal(state_capacity_for(4, 1000), STATE_HISTORY + 4000);
	assert_int_equal(state_capacity_for(0, 0), STATE_HISTORY);
	assert_int_equal(state_capacity_for(64, 16384 + 65536),
	    STATE_MAX_RECORDS);
	assert_int_equal(state_capacity_for(UINT32_MAX, UINT32_MAX),
	    STATE_MAX_RECORDS);
}

/*
 * A process alone on the file resizes it to what it asks for, keeping the
 * totals, the ids, the instance name and the records (where two meet in
 * one record of a smaller file, the newer); one that is not alone takes
 * it as it is.
 */
static void
test_resize(void **unused)
{
	struct state *st = open_records(64), *other;
	struct state_record rec;
	uint64_t ids[10], total;
	int i, reset = -1;

	(void)unused;
	assert_int_equal(state_bind_instance(st, 0x3162, &reset), TS_OK);
	for (i = 0; i < 10; i++) {
		ids[i] = begin(st, STATE_KIND_STREAM, 100 + i, 1, 0, 0, 0);
		state_add_generated(st, ids[i], (uint64_t)i);
		state_end(st, ids[i], STATE_DONE);
	}
	total = state_total_generated(st);
	/* not alone: the file as it is */
	other = open_records(128);
	assert_int_equal(state_capacity(other), 64);
	assert_int_equal(state_lookup(other, ids[3], &rec), TS_OK);
	state_close(other);
	state_close(st);
	/* alone: grown */
	st = open_records(128);
	assert_int_equal(state_capacity(st), 128);
	assert_int_equal(state_bind_instance(st, 0x3162, &reset), TS_OK);
	assert_int_equal(reset, 0);
	assert_int_equal(state_total_generated(st), total);
	assert_int_equal(state_total_streams(st), 10);
	for (i = 0; i < 10; i++) {
		assert_int_equal(state_lookup(st, ids[i], &rec), TS_OK);
		assert_int_equal(rec.requested, 100 + i);
		assert_int_equal(rec.generated, i);
	}
	assert_int_equal(state_lookup(st, 0, &rec), TS_OK);
	assert_int_equal(rec.id, ids[9]);
	state_close(st);
	/* alone: shrunk to 4, the newest 4 kept */
	st = open_records(4);
	assert_int_equal(state_capacity(st), 4);
	for (i = 0; i < 10; i++)
		assert_int_equal(state_lookup(st, ids[i], &rec),
		    i >= 6 ? TS_OK : TS_EINVAL);
	assert_int_equal(begin(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0),
	    ids[9] + 1);
	state_close(st);
}

/* A file in another format that another process holds open is not
 * touched: the opener is refused (and falls back to memory); alone, it
 * re-initialises it. */
static void
test_in_use_other_format(void **unused)
{
	struct state *st = open_state(), *other;
	unsigned char *m, *copy;
	char err[256];
	size_t len;

	(void)unused;
	m = map_file(&len);
	memcpy(m, "TOKSTAT9", 8);
	copy = xmalloc(len);
	memcpy(copy, m, len);
	assert_int_equal(state_open(&other, dir, TEST_RECORDS, err,
	    sizeof(err)), TS_EFORMAT);
	assert_null(other);
	assert_non_null(strstr(err, "is in use in another format (not a "
	    "state file)"));
	assert_memory_equal(m, copy, len);
	state_close(st);
	munmap(m, len);
	free(copy);
	st = open_state();
	assert_int_equal(state_total_streams(st), 0);
	state_close(st);
}

/*
 * A file of version 3 (4096 records of 136 bytes, no lock word), as the
 * server before this one left it, is converted by an opener that is
 * alone: totals, next id, instance and records kept.
 */
static void
test_version3_converted(void **unused)
{
	enum { V3_REC = 136, V3_CAP = 4096 };
	size_t len = 128 + (size_t)V3_CAP * V3_REC;
	unsigned char *f = xcalloc(1, len), *r;
	struct state *st;
	struct state_record rec;
	char path[300];
	uint64_t v, k;
	uint32_t u;
	FILE *out;
	int reset = -1;

	(void)unused;
	memcpy(f, "TOKSTAT1", 8);
	u = 3;
	memcpy(f + 8, &u, 4);
	u = V3_REC;
	memcpy(f + 12, &u, 4);
	u = V3_CAP;
	memcpy(f + 16, &u, 4);
	v = 5001;                       /* next_id */
	memcpy(f + 24, &v, 8);
	v = 777;                        /* total_generated */
	memcpy(f + 32, &v, 8);
	v = 5000;                       /* total_streams */
	memcpy(f + 40, &v, 8);
	v = 0x3162;                     /* instance "b1" */
	memcpy(f + 48, &v, 8);
	for (k = 4990; k <= 5000; k++) {
		r = f + 128 + ((k - 1) % V3_CAP) * V3_REC;
		memcpy(r, &k, 8);                       /* id */
		v = k + 1;
		memcpy(r + 8, &v, 8);                   /* requested */
		v = 2;
		memcpy(r + 24, &v, 8);                  /* status done */
		v = 1;
		memcpy(r + 64, &v, 8);                  /* kind stream */
	}
	snprintf(path, sizeof(path), "%s/state", dir);
	out = fopen(path, "w");
	assert_non_null(out);
	assert_int_equal(fwrite(f, 1, len, out), len);
	fclose(out);
	free(f);
	st = open_state();
	assert_int_equal(state_capacity(st), TEST_RECORDS);
	assert_int_equal(state_bind_instance(st, 0x3162, &reset), TS_OK);
	assert_int_equal(reset, 0);
	assert_int_equal(state_total_generated(st), 777);
	assert_int_equal(state_total_streams(st), 5000);
	for (k = 4990; k <= 5000; k++) {
		assert_int_equal(state_lookup(st, k, &rec), TS_OK);
		assert_int_equal(rec.requested, k + 1);
		assert_int_equal(rec.status, STATE_DONE);
	}
	assert_int_equal(state_lookup(st, 0, &rec), TS_OK);
	assert_int_equal(rec.id, 5000);
	assert_int_equal(begin(st, STATE_KIND_STREAM, 1, 1, 0, 0, 0), 5001);
	state_close(st);
}

/* The in-memory fallback counts like the file does. */
static void
test_memory_fallback(void **unused)
{
	struct state *st;
	struct state_record rec;
	uint64_t id;

	assert_int_equal(state_open_memory(&st, TEST_RECORDS), TS_OK);
	id = begin(st, STATE_KIND_STREAM, 9, 2, 0, 0, 7);
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

	assert_int_equal(state_open(&st, "/proc/nonexistent/x", TEST_RECORDS,
	    err, sizeof(err)), TS_ESYS);
	assert_non_null(strstr(err, "/proc/nonexistent/x"));
	assert_null(st);
	memset(longdir, 'a', sizeof(longdir) - 1);
	longdir[sizeof(longdir) - 1] = '\0';
	assert_int_equal(state_open(&st, longdir, TEST_RECORDS, err,
	    sizeof(err)), TS_EINVAL);
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
	id = begin(st, STATE_KIND_STREAM, 10, 1, 0, 0, 0);
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
	assert_true(begin(again, STATE_KIND_STREAM, 1, 1, 0, 0, 0) == 1);
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
		cmocka_unit_test_setup_teardown(test_running_never_evicted,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_of_running, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_update_vs_reuse_threads,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_update_vs_reuse_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_consistent_copy, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_foreign_file_reinitialised, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_gone, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_instance_binding, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_lock_holder_gone_or_stuck, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_in_use_other_format,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_version3_converted, setup,
		    teardown),
		cmocka_unit_test(test_capacity_for),
		cmocka_unit_test(test_memory_fallback),
		cmocka_unit_test(test_open_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
