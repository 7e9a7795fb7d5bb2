/*
 * stores/state.c - the mmap'd state file shared by threads and processes. See
 * state.h for the format and the memory-ordering argument.
 */
#define _GNU_SOURCE
#include "stores/state.h"
#include "stores/shmfile.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#if ATOMIC_LLONG_LOCK_FREE != 2
#error "the state file needs lock-free 64-bit atomics"
#endif

#define STATE_MAGIC "TOKSTAT1"
#define STATE_VERSION 3u
#define STATE_RECORD_SIZE 136u

typedef _Atomic uint64_t aword;

struct state_header {
	char magic[8];
	uint32_t version;
	uint32_t record_size;
	uint32_t capacity;
	uint32_t pad;
	aword next_id;
	aword total_generated;
	aword total_streams;
	aword instance;         /* the --instance whose ids the records
				 * are (resume.h's packing); 0: unnamed */
	uint64_t reserved[9];
};

struct state_rec {
	aword id;
	aword requested;
	aword generated;
	aword status;
	aword pid;
	aword prompt_tokens;
	aword started_ms;
	aword ended_ms;
	aword kind;
	aword resumed_from;
	aword resume_index;
	aword key;
	aword wasted;
	aword queue_us;
	aword leave_us;
	aword flags;            /* bits 0-7 cause, 8-15 phase, 16-47
				 * cached prompt tokens */
	aword from_instance;    /* instance of resumed_from, 0: this one */
};

_Static_assert(sizeof(struct state_header) == 128, "header is 128 bytes");
_Static_assert(sizeof(struct state_rec) == STATE_RECORD_SIZE,
    "record is 136 bytes");

struct state {
	int fd;
	size_t map_len;
	struct state_header *hdr;
	struct state_rec *recs;
	uint64_t pid;
};

static uint64_t
now_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int
header_valid(const struct state_header *h)
{
	return memcmp(h->magic, STATE_MAGIC, 8) == 0 &&
	    h->version == STATE_VERSION &&
	    h->record_size == STATE_RECORD_SIZE &&
	    h->capacity == STATE_CAPACITY &&
	    atomic_load(&((struct state_header *)h)->next_id) != 0;
}

enum ts_err
state_open(struct state **out, const char *dir, char *errbuf, size_t errlen)
{
	struct state *st = NULL;
	char path[4096];
	struct stat sb;
	size_t len = sizeof(struct state_header) +
	    (size_t)STATE_CAPACITY * STATE_RECORD_SIZE;
	void *map;
	int fd = -1, saved;
	enum ts_err rc;

	*out = NULL;
	if ((rc = shmfile_open(dir, STATE_FILE_NAME, path, sizeof(path), &fd,
	    errbuf, errlen)) != TS_OK)
		return rc;
	rc = TS_ESYS;
	/* Initialisation is serialised across processes by flock. Unlike
	 * the metrics file, no lock is kept once the file is ready. */
	if (flock(fd, LOCK_EX) != 0 || fstat(fd, &sb) != 0) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot lock %s: %s", path,
		    strerror(saved));
		goto out;
	}
	if ((size_t)sb.st_size != len && ftruncate(fd, (off_t)len) != 0) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot size %s: %s", path,
		    strerror(saved));
		goto out;
	}
	if (shmfile_map(fd, path, len, &map, errbuf, errlen) != TS_OK)
		goto out;
	st = xcalloc(1, sizeof(*st));
	st->fd = fd;
	st->map_len = len;
	st->hdr = map;
	st->recs = (struct state_rec *)((char *)map +
	    sizeof(struct state_header));
	st->pid = (uint64_t)getpid();
	if (!header_valid(st->hdr)) {
		/* New, truncated, or another version: start afresh. */
		memset(map, 0, len);
		memcpy(st->hdr->magic, STATE_MAGIC, 8);
		st->hdr->version = STATE_VERSION;
		st->hdr->record_size = STATE_RECORD_SIZE;
		st->hdr->capacity = STATE_CAPACITY;
		atomic_store(&st->hdr->next_id, 1);
		msync(map, len, MS_SYNC);
	}
	flock(fd, LOCK_UN);
	*out = st;
	return TS_OK;
out:
	close(fd);
	return rc;
}

enum ts_err
state_open_memory(struct state **out)
{
	size_t len = sizeof(struct state_header) +
	    (size_t)STATE_CAPACITY * STATE_RECORD_SIZE;
	struct state *st;
	void *map;

	*out = NULL;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return TS_ESYS;
	st = xcalloc(1, sizeof(*st));
	st->fd = -1;
	st->map_len = len;
	st->hdr = map;
	st->recs = (struct state_rec *)((char *)map +
	    sizeof(struct state_header));
	st->pid = (uint64_t)getpid();
	memcpy(st->hdr->magic, STATE_MAGIC, 8);
	st->hdr->version = STATE_VERSION;
	st->hdr->record_size = STATE_RECORD_SIZE;
	st->hdr->capacity = STATE_CAPACITY;
	atomic_store(&st->hdr->next_id, 1);
	*out = st;
	return TS_OK;
}

enum ts_err
state_bind_instance(struct state *st, uint64_t inst, int *reset)
{
	size_t len = (size_t)STATE_CAPACITY * STATE_RECORD_SIZE;

	*reset = 0;
	if (st->fd >= 0 && flock(st->fd, LOCK_EX) != 0)
		return TS_ESYS;
	if (atomic_load(&st->hdr->instance) != inst) {
		/* Another name's ids: they are no ids of this one. Every
		 * process of a host starts with the same name, so the first
		 * one resets and the others find it bound. */
		*reset = atomic_load(&st->hdr->next_id) > 1;
		memset(st->recs, 0, len);
		atomic_store(&st->hdr->total_generated, 0);
		atomic_store(&st->hdr->total_streams, 0);
		atomic_store(&st->hdr->next_id, 1);
		atomic_store(&st->hdr->instance, inst);
	}
	if (st->fd >= 0)
		flock(st->fd, LOCK_UN);
	return TS_OK;
}

void
state_close(struct state *st)
{
	if (st == NULL)
		return;
	munmap(st->hdr, st->map_len);
	if (st->fd >= 0)
		close(st->fd);
	free(st);
}

static struct state_rec *
rec_of(struct state *st, uint64_t id)
{
	return &st->recs[(id - 1) % STATE_CAPACITY];
}

uint64_t
state_begin(struct state *st, enum state_kind kind, uint64_t requested,
    uint64_t prompt_tokens, uint64_t resumed_from, uint64_t resume_index,
    uint64_t key)
{
	uint64_t id = atomic_fetch_add(&st->hdr->next_id, 1);
	struct state_rec *r = rec_of(st, id);

	/* Unpublish, fill, publish (see state.h). */
	atomic_store_explicit(&r->id, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&r->requested, requested, memory_order_relaxed);
	atomic_store_explicit(&r->generated, 0, memory_order_relaxed);
	atomic_store_explicit(&r->status, STATE_RUNNING,
	    memory_order_relaxed);
	atomic_store_explicit(&r->pid, st->pid, memory_order_relaxed);
	atomic_store_explicit(&r->prompt_tokens, prompt_tokens,
	    memory_order_relaxed);
	atomic_store_explicit(&r->started_ms, now_unix_ms(),
	    memory_order_relaxed);
	atomic_store_explicit(&r->ended_ms, 0, memory_order_relaxed);
	atomic_store_explicit(&r->kind, kind, memory_order_relaxed);
	atomic_store_explicit(&r->resumed_from, resumed_from,
	    memory_order_relaxed);
	atomic_store_explicit(&r->resume_index, resume_index,
	    memory_order_relaxed);
	atomic_store_explicit(&r->key, key, memory_order_relaxed);
	atomic_store_explicit(&r->wasted, 0, memory_order_relaxed);
	atomic_store_explicit(&r->queue_us, 0, memory_order_relaxed);
	atomic_store_explicit(&r->leave_us, 0, memory_order_relaxed);
	atomic_store_explicit(&r->flags, (uint64_t)STATE_PHASE_WAITING << 8,
	    memory_order_relaxed);
	atomic_store_explicit(&r->from_instance, 0, memory_order_relaxed);
	atomic_store_explicit(&r->id, id, memory_order_release);
	atomic_fetch_add_explicit(&st->hdr->total_streams, 1,
	    memory_order_relaxed);
	return id;
}

void
state_set_from_instance(struct state *st, uint64_t id, uint64_t inst)
{
	atomic_store_explicit(&rec_of(st, id)->from_instance, inst,
	    memory_order_relaxed);
}

void
state_add_generated(struct state *st, uint64_t id, uint64_t n)
{
	struct state_rec *r = rec_of(st, id);

	if (atomic_load_explicit(&r->id, memory_order_relaxed) == id)
		atomic_fetch_add_explicit(&r->generated, n,
		    memory_order_relaxed);
	atomic_fetch_add_explicit(&st->hdr->total_generated, n,
	    memory_order_relaxed);
}

void
state_set_phase(struct state *st, uint64_t id, enum state_phase phase,
    uint64_t queue_us)
{
	struct state_rec *r = rec_of(st, id);
	uint64_t f;

	if (atomic_load_explicit(&r->id, memory_order_relaxed) != id)
		return;
	if (phase == STATE_PHASE_PREFILL)
		atomic_store_explicit(&r->queue_us, queue_us,
		    memory_order_relaxed);
	f = atomic_load_explicit(&r->flags, memory_order_relaxed);
	atomic_store_explicit(&r->flags, (f & ~(uint64_t)0xff00u) |
	    ((uint64_t)phase << 8), memory_order_relaxed);
}

void
state_set_cached(struct state *st, uint64_t id, uint32_t cached)
{
	struct state_rec *r = rec_of(st, id);
	uint64_t f;

	if (atomic_load_explicit(&r->id, memory_order_relaxed) != id)
		return;
	f = atomic_load_explicit(&r->flags, memory_order_relaxed);
	atomic_store_explicit(&r->flags, (f & 0xffffu) |
	    ((uint64_t)cached << 16), memory_order_relaxed);
}

void
state_set_finish(struct state *st, uint64_t id,
    const struct state_finish *fin)
{
	struct state_rec *r = rec_of(st, id);
	uint64_t f;

	if (atomic_load_explicit(&r->id, memory_order_relaxed) != id)
		return;
	atomic_store_explicit(&r->wasted, fin->wasted, memory_order_relaxed);
	atomic_store_explicit(&r->leave_us, fin->leave_us,
	    memory_order_relaxed);
	f = atomic_load_explicit(&r->flags, memory_order_relaxed);
	atomic_store_explicit(&r->flags, (f & ~(uint64_t)0xffu) |
	    ((uint64_t)fin->cause & 0xffu), memory_order_relaxed);
}

void
state_end(struct state *st, uint64_t id, enum state_status status)
{
	struct state_rec *r = rec_of(st, id);

	if (atomic_load_explicit(&r->id, memory_order_relaxed) != id)
		return;
	atomic_store_explicit(&r->ended_ms, now_unix_ms(),
	    memory_order_relaxed);
	atomic_store_explicit(&r->status, status, memory_order_release);
}

enum ts_err
state_lookup(struct state *st, uint64_t id, struct state_record *out)
{
	struct state_rec *r;
	uint64_t got, status, kind, flags;

	if (id == 0) {
		id = atomic_load(&st->hdr->next_id);
		if (id <= 1)
			return TS_EINVAL;
		id--;
		/* The newest id may be claimed but not yet published. */
		for (int tries = 0; tries < 100; tries++) {
			r = rec_of(st, id);
			if (atomic_load_explicit(&r->id,
			    memory_order_acquire) == id)
				break;
			sched_yield();
		}
	}
	r = rec_of(st, id);
	got = atomic_load_explicit(&r->id, memory_order_acquire);
	if (got != id || id == 0)
		return TS_EINVAL;
	status = atomic_load_explicit(&r->status, memory_order_acquire);
	out->id = id;
	out->status = (enum state_status)status;
	out->generated = atomic_load_explicit(&r->generated,
	    memory_order_relaxed);
	out->requested = atomic_load_explicit(&r->requested,
	    memory_order_relaxed);
	out->pid = atomic_load_explicit(&r->pid, memory_order_relaxed);
	out->prompt_tokens = atomic_load_explicit(&r->prompt_tokens,
	    memory_order_relaxed);
	out->started_ms = atomic_load_explicit(&r->started_ms,
	    memory_order_relaxed);
	out->ended_ms = atomic_load_explicit(&r->ended_ms,
	    memory_order_relaxed);
	kind = atomic_load_explicit(&r->kind, memory_order_relaxed);
	out->kind = kind <= STATE_KIND_GENERATE ? (enum state_kind)kind :
	    (enum state_kind)0;
	out->resumed_from = atomic_load_explicit(&r->resumed_from,
	    memory_order_relaxed);
	out->resume_index = atomic_load_explicit(&r->resume_index,
	    memory_order_relaxed);
	out->key = atomic_load_explicit(&r->key, memory_order_relaxed);
	out->from_instance = atomic_load_explicit(&r->from_instance,
	    memory_order_relaxed);
	out->wasted = atomic_load_explicit(&r->wasted, memory_order_relaxed);
	out->queue_us = atomic_load_explicit(&r->queue_us,
	    memory_order_relaxed);
	out->leave_us = atomic_load_explicit(&r->leave_us,
	    memory_order_relaxed);
	flags = atomic_load_explicit(&r->flags, memory_order_relaxed);
	out->cause = (enum state_cause)(flags & 0xffu);
	out->phase = (enum state_phase)((flags >> 8) & 0xffu);
	out->cached_tokens = (uint32_t)(flags >> 16);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&r->id, memory_order_relaxed) != id)
		return TS_EINVAL;       /* overwritten while we read */
	/* A damaged word is no record: range-check the whole 64 bits. */
	if (status < STATE_RUNNING || status > STATE_ERROR ||
	    (out->kind != STATE_KIND_STREAM &&
	    out->kind != STATE_KIND_GENERATE))
		return TS_EINVAL;
	/* A record left running by a killed process never ends by itself. */
	out->owner_gone = out->status == STATE_RUNNING &&
	    kill((pid_t)out->pid, 0) != 0 && errno == ESRCH;
	return TS_OK;
}

uint64_t
state_total_generated(struct state *st)
{
	return atomic_load(&st->hdr->total_generated);
}

uint64_t
state_total_streams(struct state *st)
{
	return atomic_load(&st->hdr->total_streams);
}

const char *
state_status_name(enum state_status s)
{
	switch (s) {
	case STATE_RUNNING: return "running";
	case STATE_DONE: return "done";
	case STATE_CANCELLED: return "cancelled";
	case STATE_ERROR: return "error";
	}
	return "unknown";
}
