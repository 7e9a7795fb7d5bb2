/*
 * stores/state.c - the mmap'd state file shared by threads and processes. See
 * state.h for the format, the record locks and the memory-ordering
 * argument.
 */
#define _GNU_SOURCE
#include "stores/state.h"
#include "stores/shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
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
#define STATE_VERSION 4u
#define STATE_HEADER_SIZE 128u
#define STATE_RECORD_SIZE 144u
/* The format before: 4096 records of 136 bytes (no lock word), the same
 * header; a file of it is converted when its opener is alone. */
#define STATE_V3 3u
#define STATE_V3_RECORD_SIZE 136u
#define STATE_V3_CAPACITY 4096u

/* The lock word: the writer's pid below, the count of writes above. */
#define LOCK_HOLDER 0xffffffffull
#define LOCK_COUNT_ONE (1ull << 32)

/*
 * How long a locker waits for a record another writer holds: it spins
 * LOCK_SPINS times, then yields LOCK_SPINS times, then sleeps
 * LOCK_NAP_NS between tries; every LOCK_SPINS tries past the first spins
 * it asks whether the holder's process is gone, and takes the lock over
 * if it is. A writer holds a record for a few stores, so the waits end in
 * the spins unless its thread was preempted there. Readers and new
 * streams give up after TRIES_SHORT tries (about 20 ms of naps), an
 * update of a stream's own record after TRIES_LONG (about 1 s): those
 * counts are what bound a wait on a process stopped mid-write (SIGSTOP),
 * the only holder that neither finishes nor dies.
 */
#define LOCK_SPINS 64u
#define LOCK_NAP_NS 100000L
#define TRIES_SHORT (2u * LOCK_SPINS + 200u)
#define TRIES_LONG (2u * LOCK_SPINS + 10000u)

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
	aword newest;           /* the highest id recorded */
	aword unrecorded;       /* streams that found no record free */
	uint64_t reserved[7];
};

struct state_rec {
	aword lock;             /* see LOCK_HOLDER, LOCK_COUNT_ONE */
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

_Static_assert(sizeof(struct state_header) == STATE_HEADER_SIZE,
    "header is 128 bytes");
_Static_assert(sizeof(struct state_rec) == STATE_RECORD_SIZE,
    "record is 144 bytes");

struct state {
	int fd;
	size_t map_len;
	uint32_t cap;           /* records, fixed for the handle's life */
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

static size_t
file_len(uint32_t cap)
{
	return STATE_HEADER_SIZE + (size_t)cap * STATE_RECORD_SIZE;
}

static uint32_t
clamp_records(uint32_t records)
{
	if (records < 1)
		return 1;
	return records > STATE_MAX_RECORDS ? STATE_MAX_RECORDS : records;
}

uint32_t
state_capacity_for(uint32_t procs, uint32_t running)
{
	uint64_t want = (uint64_t)procs * running + STATE_HISTORY;

	return want > STATE_MAX_RECORDS ? STATE_MAX_RECORDS : (uint32_t)want;
}

/*
 * Whether process pid is gone: kill(2) with signal 0 fails with ESRCH. A
 * number that is no process id (0, or beyond pid_t, which kill would
 * take as a process group or as every process) is gone too. Keeps errno.
 */
static int
pid_gone(uint64_t pid)
{
	int saved = errno, gone;

	if (pid == 0 || pid > INT32_MAX)
		return 1;
	gone = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
	errno = saved;
	return gone;
}

/* One wait of a locker or reader at its n-th try (see LOCK_SPINS). */
static void
backoff(unsigned n)
{
	struct timespec nap = { 0, LOCK_NAP_NS };

	if (n < LOCK_SPINS)
		return;
	if (n < 2u * LOCK_SPINS)
		sched_yield();
	else
		nanosleep(&nap, NULL);
}

/* Whether a waiter at its n-th try should ask if the holder is gone. */
static int
ask_holder(unsigned n)
{
	return n >= LOCK_SPINS && n % LOCK_SPINS == 0;
}

/*
 * Takes record r's lock for this process, within `tries` tries. *held
 * gets the lock word as it was (its write count) for rec_unlock. Returns
 * 1, or 0 when another live writer held it through all the tries.
 */
static int
rec_lock(const struct state *st, struct state_rec *r, unsigned tries,
    uint64_t *held)
{
	uint64_t w, holder, me = st->pid & LOCK_HOLDER;
	unsigned n;

	for (n = 0; n < tries; n++) {
		w = atomic_load_explicit(&r->lock, memory_order_relaxed);
		holder = w & LOCK_HOLDER;
		/* a holder that died mid-write leaves the lock to us */
		if (holder == 0 || (holder != me && ask_holder(n) &&
		    pid_gone(holder))) {
			if (atomic_compare_exchange_strong_explicit(&r->lock,
			    &w, (w & ~LOCK_HOLDER) | me,
			    memory_order_acquire, memory_order_relaxed)) {
				/* readers that see a store below see the
				 * lock taken (state.h: Boehm's seqlock) */
				atomic_thread_fence(memory_order_release);
				*held = w & ~LOCK_HOLDER;
				return 1;
			}
			continue;
		}
		backoff(n);
	}
	return 0;
}

/* Releases the lock rec_lock took, counting one more write. */
static void
rec_unlock(struct state_rec *r, uint64_t held)
{
	atomic_store_explicit(&r->lock, held + LOCK_COUNT_ONE,
	    memory_order_release);
}

static struct state_rec *
rec_of(const struct state *st, uint64_t id)
{
	return &st->recs[(id - 1) % st->cap];
}

static uint64_t
get(aword *w)
{
	return atomic_load_explicit(w, memory_order_relaxed);
}

static void
put(aword *w, uint64_t v)
{
	atomic_store_explicit(w, v, memory_order_relaxed);
}

/*
 * Whether record r may take a new stream: empty, ended, damaged, or left
 * running by a process that is gone. A running record of this process's
 * own pid never is.
 */
static int
rec_free(const struct state *st, struct state_rec *r)
{
	uint64_t pid;

	if (get(&r->id) == 0 || get(&r->status) != STATE_RUNNING)
		return 1;
	pid = get(&r->pid);
	return pid != st->pid && pid_gone(pid);
}

/*
 * Takes the lock of stream id's record if the record still holds it:
 * returns the record (*held set for rec_unlock), or NULL when it holds
 * another stream (or none), or stayed locked through TRIES_LONG tries.
 */
static struct state_rec *
rec_enter(const struct state *st, uint64_t id, uint64_t *held)
{
	struct state_rec *r;

	if (id == 0)
		return NULL;
	r = rec_of(st, id);
	/* the cheap check first: an unrecorded stream's updates, or late
	 * ones, end here */
	if (get(&r->id) != id || !rec_lock(st, r, TRIES_LONG, held))
		return NULL;
	if (get(&r->id) != id) {
		rec_unlock(r, *held);
		return NULL;
	}
	return r;
}

static void
header_init(struct state_header *h, uint32_t cap)
{
	h->version = STATE_VERSION;
	h->record_size = STATE_RECORD_SIZE;
	h->capacity = cap;
	if (atomic_load(&h->next_id) == 0)
		atomic_store(&h->next_id, 1);
	/* the magic last: an initialisation cut short is no valid file */
	atomic_thread_fence(memory_order_release);
	memcpy(h->magic, STATE_MAGIC, 8);
}

/*
 * Whether the header (a copy) is a valid one of a file of `size` bytes:
 * 1 for this version, 3 for a valid file of version 3 (kept, converted),
 * 0 for anything else, with why saying what.
 */
static int
header_valid(const struct state_header *h, off_t size, char *why,
    size_t whylen)
{
	uint32_t rsize = STATE_RECORD_SIZE, version = STATE_VERSION;

	if (h->version == STATE_V3) {
		rsize = STATE_V3_RECORD_SIZE;
		version = STATE_V3;
	}
	if (memcmp(h->magic, STATE_MAGIC, 8) != 0)
		snprintf(why, whylen, "not a state file");
	else if (h->version != version)
		snprintf(why, whylen, "version %u, want %u", h->version,
		    STATE_VERSION);
	else if (h->record_size != rsize || h->capacity < 1 ||
	    h->capacity > STATE_MAX_RECORDS || (version == STATE_V3 &&
	    h->capacity != STATE_V3_CAPACITY))
		snprintf(why, whylen, "record size %u, capacity %u",
		    h->record_size, h->capacity);
	else if ((uint64_t)size != STATE_HEADER_SIZE +
	    (uint64_t)h->capacity * rsize)
		snprintf(why, whylen, "%jd bytes for %u records",
		    (intmax_t)size, h->capacity);
	else if (atomic_load(&((struct state_header *)h)->next_id) == 0)
		snprintf(why, whylen, "next id 0");
	else
		return version == STATE_V3 ? 3 : 1;
	return 0;
}

/* flock(2) that retries when a signal interrupts the wait. */
static int
lock_file(int fd, int op)
{
	int rc;

	while ((rc = flock(fd, op)) != 0 && errno == EINTR)
		;
	return rc;
}

/*
 * What a resize (or the conversion of a version 3 file) keeps: the old
 * header and a copy of the old records (NULL when there were none, or no
 * memory for them: then only the counters are kept).
 */
struct kept {
	int valid;              /* header_valid's answer */
	struct state_header hdr;
	unsigned char *recs;
	uint32_t cap;
	uint32_t rsize;         /* bytes per kept record */
};

/* Reads what a resize keeps from the open file fd (valid, alone). */
static void
keep_read(int fd, struct kept *k)
{
	size_t len = (size_t)k->cap * k->rsize;

	k->recs = malloc(len);
	if (k->recs != NULL && pread(fd, k->recs, len, STATE_HEADER_SIZE) !=
	    (ssize_t)len) {
		free(k->recs);
		k->recs = NULL;
	}
}

/*
 * Fills a fresh (zeroed) file with what was kept: the counters, then
 * every record of the old file in its record of the new capacity, the
 * newest winning where two meet, its lock free (a version 3 record is
 * the same words after the lock word). newest becomes the highest id
 * kept if that is higher (version 3 had no newest).
 */
static void
keep_write(struct state *st, const struct kept *k)
{
	struct state_header *o = (struct state_header *)&k->hdr;
	struct state_header *h = st->hdr;
	uint64_t words[STATE_RECORD_SIZE / 8], id, newest;
	size_t skip = k->rsize == STATE_RECORD_SIZE ? 0 : 1;
	uint32_t i, j;

	atomic_store(&h->next_id, atomic_load(&o->next_id));
	atomic_store(&h->total_generated, atomic_load(&o->total_generated));
	atomic_store(&h->total_streams, atomic_load(&o->total_streams));
	atomic_store(&h->instance, atomic_load(&o->instance));
	newest = k->valid == STATE_V3 ? 0 : atomic_load(&o->newest);
	atomic_store(&h->unrecorded, k->valid == STATE_V3 ? 0 :
	    atomic_load(&o->unrecorded));
	for (i = 0; k->recs != NULL && i < k->cap; i++) {
		struct state_rec *r;

		words[0] = 0;
		memcpy(words + skip, k->recs + (size_t)i * k->rsize, k->rsize);
		id = words[offsetof(struct state_rec, id) / 8];
		if (id == 0)
			continue;
		if (id > newest)
			newest = id;
		r = rec_of(st, id);
		if (get(&r->id) > id)
			continue;
		words[offsetof(struct state_rec, lock) / 8] = 0;
		for (j = 0; j < STATE_RECORD_SIZE / 8; j++)
			put((aword *)r + j, words[j]);
	}
	atomic_store(&h->newest, newest);
}

static struct state *
handle_new(int fd, void *map, size_t len, uint32_t cap)
{
	struct state *st = xcalloc(1, sizeof(*st));

	st->fd = fd;
	st->map_len = len;
	st->cap = cap;
	st->hdr = map;
	st->recs = (struct state_rec *)((char *)map + STATE_HEADER_SIZE);
	st->pid = (uint64_t)getpid();
	return st;
}

enum ts_err
state_open(struct state **out, const char *dir, uint32_t records,
    char *errbuf, size_t errlen)
{
	struct kept k;
	struct stat sb;
	char path[4096], why[96];
	uint32_t cap = clamp_records(records);
	void *map = MAP_FAILED;
	size_t len = 0;
	int fd = -1, saved, alone, fresh = 0;
	enum ts_err rc;

	*out = NULL;
	memset(&k, 0, sizeof(k));
	if ((rc = shmfile_open(dir, STATE_FILE_NAME, path, sizeof(path), &fd,
	    errbuf, errlen)) != TS_OK)
		return rc;
	rc = TS_ESYS;
	/* As the metrics file (metrics_open): every handle keeps a shared
	 * lock; an opener that gets it exclusively is alone and may size
	 * the file; one that cannot waits for a shared lock (for an
	 * initialiser to finish) and takes the file as it is. */
	if (lock_file(fd, LOCK_EX | LOCK_NB) == 0)
		alone = 1;
	else if (errno == EWOULDBLOCK && lock_file(fd, LOCK_SH) == 0)
		alone = 0;
	else
		alone = -1;
	if (alone < 0 || fstat(fd, &sb) != 0) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot %s %s: %s",
		    alone < 0 ? "lock" : "stat", path, strerror(saved));
		goto out;
	}
	snprintf(why, sizeof(why), "%jd bytes", (intmax_t)sb.st_size);
	if (sb.st_size >= (off_t)STATE_HEADER_SIZE) {
		if (pread(fd, &k.hdr, sizeof(k.hdr), 0) !=
		    (ssize_t)sizeof(k.hdr)) {
			saved = errno;
			snprintf(errbuf, errlen, "cannot read %s: %s", path,
			    strerror(saved));
			goto out;
		}
		k.valid = header_valid(&k.hdr, sb.st_size, why, sizeof(why));
		k.cap = k.hdr.capacity;
		k.rsize = k.valid == STATE_V3 ? STATE_V3_RECORD_SIZE :
		    STATE_RECORD_SIZE;
	}
	if (k.valid == STATE_V3 && !alone) {
		/* others of this version hold it, yet it is of the earlier
		 * one (re-initialised by one of that version): not ours to
		 * convert under them */
		snprintf(errbuf, errlen, "%s is in use in another format "
		    "(version %u)", path, STATE_V3);
		rc = TS_EFORMAT;
		goto out;
	}
	if (!k.valid && !alone) {
		snprintf(errbuf, errlen, "%s is in use in another format (%s)",
		    path, why);
		rc = TS_EFORMAT;
		goto out;
	}
	if (k.valid == 1 && (!alone || k.cap == cap)) {
		cap = k.cap;            /* the file as it is */
		len = file_len(cap);
		if (shmfile_map(fd, path, len, &map, errbuf, errlen) != TS_OK)
			goto out;
	} else {
		/* Alone with a new, foreign or differently sized file: start
		 * afresh at the size asked for, keeping what a valid one
		 * held. */
		if (k.valid)
			keep_read(fd, &k);
		fresh = 1;
		len = file_len(cap);
		if (ftruncate(fd, 0) != 0 || ftruncate(fd, (off_t)len) != 0) {
			saved = errno;
			snprintf(errbuf, errlen, "cannot size %s: %s", path,
			    strerror(saved));
			goto out;
		}
		if (shmfile_map(fd, path, len, &map, errbuf, errlen) != TS_OK)
			goto out;
	}
	*out = handle_new(fd, map, len, cap);
	if (fresh) {
		if (k.valid)
			keep_write(*out, &k);
		header_init((*out)->hdr, cap);
	}
	free(k.recs);
	k.recs = NULL;
	/* Initialised: let the others in. */
	if (alone && lock_file(fd, LOCK_SH) != 0) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot lock %s: %s", path,
		    strerror(saved));
		free(*out);
		*out = NULL;
		goto out;
	}
	return TS_OK;
out:
	free(k.recs);
	if (map != MAP_FAILED)
		munmap(map, len);
	close(fd);
	return rc;
}

enum ts_err
state_open_memory(struct state **out, uint32_t records)
{
	uint32_t cap = clamp_records(records);
	size_t len = file_len(cap);
	void *map;

	*out = NULL;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return TS_ESYS;
	*out = handle_new(-1, map, len, cap);
	header_init((*out)->hdr, cap);
	return TS_OK;
}

/* An open file description lock on the header's first byte: the binders
 * of an instance name, one at a time (see state_bind_instance). */
static int
bind_lock(int fd, short type)
{
	struct flock fl;
	int rc;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 1;
	while ((rc = fcntl(fd, F_OFD_SETLKW, &fl)) != 0 && errno == EINTR)
		;
	return rc;
}

enum ts_err
state_bind_instance(struct state *st, uint64_t inst, int *reset)
{
	size_t len = (size_t)st->cap * STATE_RECORD_SIZE;

	*reset = 0;
	if (st->fd >= 0 && bind_lock(st->fd, F_WRLCK) != 0)
		return TS_ESYS;
	if (atomic_load(&st->hdr->instance) != inst) {
		/* Another name's ids: they are no ids of this one. Every
		 * process of a host starts with the same name, so the first
		 * one resets and the others find it bound. */
		*reset = atomic_load(&st->hdr->next_id) > 1;
		memset(st->recs, 0, len);
		atomic_store(&st->hdr->total_generated, 0);
		atomic_store(&st->hdr->total_streams, 0);
		atomic_store(&st->hdr->newest, 0);
		atomic_store(&st->hdr->unrecorded, 0);
		atomic_store(&st->hdr->next_id, 1);
		atomic_store(&st->hdr->instance, inst);
	}
	if (st->fd >= 0)
		bind_lock(st->fd, F_UNLCK);
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

uint32_t
state_capacity(const struct state *st)
{
	return st->cap;
}

/* Raises the header's newest id to id (never lowers it). */
static void
raise_newest(struct state *st, uint64_t id)
{
	uint64_t cur = atomic_load_explicit(&st->hdr->newest,
	    memory_order_relaxed);

	while (cur < id && !atomic_compare_exchange_weak_explicit(
	    &st->hdr->newest, &cur, id, memory_order_relaxed,
	    memory_order_relaxed))
		;
}

/* Stores a new stream's fields into r, whose lock is held. */
static void
rec_fill(const struct state *st, struct state_rec *r, uint64_t id,
    const struct state_start *s)
{
	put(&r->id, id);
	put(&r->requested, s->requested);
	put(&r->generated, 0);
	put(&r->status, STATE_RUNNING);
	put(&r->pid, st->pid);
	put(&r->prompt_tokens, s->prompt_tokens);
	put(&r->started_ms, now_unix_ms());
	put(&r->ended_ms, 0);
	put(&r->kind, s->kind);
	put(&r->resumed_from, s->resumed_from);
	put(&r->resume_index, s->resume_index);
	put(&r->key, s->key);
	put(&r->wasted, 0);
	put(&r->queue_us, 0);
	put(&r->leave_us, 0);
	put(&r->flags, (uint64_t)STATE_PHASE_WAITING << 8);
	put(&r->from_instance, s->from_instance);
}

enum ts_err
state_begin(struct state *st, const struct state_start *start, uint64_t *id)
{
	struct state_rec *r;
	uint64_t held;
	unsigned probe;

	atomic_fetch_add_explicit(&st->hdr->total_streams, 1,
	    memory_order_relaxed);
	for (probe = 0; probe < STATE_PROBES; probe++) {
		*id = atomic_fetch_add(&st->hdr->next_id, 1);
		r = rec_of(st, *id);
		/* a look without the lock, then again under it */
		if (!rec_free(st, r) || !rec_lock(st, r, TRIES_SHORT, &held))
			continue;
		if (!rec_free(st, r)) {
			rec_unlock(r, held);
			continue;
		}
		rec_fill(st, r, *id, start);
		rec_unlock(r, held);
		raise_newest(st, *id);
		return TS_OK;
	}
	atomic_fetch_add_explicit(&st->hdr->unrecorded, 1,
	    memory_order_relaxed);
	return TS_ELIMIT;
}

void
state_add_generated(struct state *st, uint64_t id, uint64_t n)
{
	struct state_rec *r;
	uint64_t held;

	if ((r = rec_enter(st, id, &held)) != NULL) {
		put(&r->generated, get(&r->generated) + n);
		rec_unlock(r, held);
	}
	atomic_fetch_add_explicit(&st->hdr->total_generated, n,
	    memory_order_relaxed);
}

void
state_set_phase(struct state *st, uint64_t id, enum state_phase phase,
    uint64_t queue_us)
{
	struct state_rec *r;
	uint64_t held;

	if ((r = rec_enter(st, id, &held)) == NULL)
		return;
	if (phase == STATE_PHASE_PREFILL)
		put(&r->queue_us, queue_us);
	put(&r->flags, (get(&r->flags) & ~(uint64_t)0xff00u) |
	    ((uint64_t)phase << 8));
	rec_unlock(r, held);
}

void
state_set_cached(struct state *st, uint64_t id, uint32_t cached)
{
	struct state_rec *r;
	uint64_t held;

	if ((r = rec_enter(st, id, &held)) == NULL)
		return;
	put(&r->flags, (get(&r->flags) & 0xffffu) | ((uint64_t)cached << 16));
	rec_unlock(r, held);
}

void
state_set_finish(struct state *st, uint64_t id,
    const struct state_finish *fin)
{
	struct state_rec *r;
	uint64_t held;

	if ((r = rec_enter(st, id, &held)) == NULL)
		return;
	put(&r->wasted, fin->wasted);
	put(&r->leave_us, fin->leave_us);
	put(&r->flags, (get(&r->flags) & ~(uint64_t)0xffu) |
	    ((uint64_t)fin->cause & 0xffu));
	rec_unlock(r, held);
}

void
state_end(struct state *st, uint64_t id, enum state_status status)
{
	struct state_rec *r;
	uint64_t held;

	if ((r = rec_enter(st, id, &held)) == NULL)
		return;
	put(&r->ended_ms, now_unix_ms());
	put(&r->status, status);
	rec_unlock(r, held);
}

/*
 * Copies stream id's record into *out between two loads of its lock word
 * (state.h: the reader's side of the seqlock), and its status and kind
 * words into *status, *kind. Returns TS_OK, or TS_EINVAL when the record
 * holds another stream (or none), or stayed busy through TRIES_SHORT
 * tries, or a writer died in it.
 */
static enum ts_err
rec_copy(const struct state *st, uint64_t id, struct state_record *out,
    uint64_t *status, uint64_t *kind)
{
	struct state_rec *r = rec_of(st, id);
	uint64_t w, again, flags;
	unsigned n;

	for (n = 0; n < TRIES_SHORT; n++) {
		w = atomic_load_explicit(&r->lock, memory_order_acquire);
		if ((w & LOCK_HOLDER) != 0) {
			if (ask_holder(n) && pid_gone(w & LOCK_HOLDER))
				return TS_EINVAL;
			backoff(n);
			continue;
		}
		if (get(&r->id) != id)
			return TS_EINVAL;
		*status = get(&r->status);
		*kind = get(&r->kind);
		out->id = id;
		out->generated = get(&r->generated);
		out->requested = get(&r->requested);
		out->pid = get(&r->pid);
		out->prompt_tokens = get(&r->prompt_tokens);
		out->started_ms = get(&r->started_ms);
		out->ended_ms = get(&r->ended_ms);
		out->resumed_from = get(&r->resumed_from);
		out->resume_index = get(&r->resume_index);
		out->key = get(&r->key);
		out->from_instance = get(&r->from_instance);
		out->wasted = get(&r->wasted);
		out->queue_us = get(&r->queue_us);
		out->leave_us = get(&r->leave_us);
		flags = get(&r->flags);
		out->cause = (enum state_cause)(flags & 0xffu);
		out->phase = (enum state_phase)((flags >> 8) & 0xffu);
		out->cached_tokens = (uint32_t)(flags >> 16);
		atomic_thread_fence(memory_order_acquire);
		again = atomic_load_explicit(&r->lock, memory_order_relaxed);
		if (again == w)
			return TS_OK;
		backoff(n);
	}
	return TS_EINVAL;
}

enum ts_err
state_lookup(struct state *st, uint64_t id, struct state_record *out)
{
	uint64_t status = 0, kind = 0;
	enum ts_err rc = TS_EINVAL;
	int tries;

	if (id != 0) {
		rc = rec_copy(st, id, out, &status, &kind);
	} else {
		/* The newest may be overwritten between the two loads by a
		 * still newer one, which is then the newest. */
		for (tries = 0; tries < 3 && rc != TS_OK; tries++) {
			id = atomic_load(&st->hdr->newest);
			if (id == 0)
				return TS_EINVAL;
			rc = rec_copy(st, id, out, &status, &kind);
		}
	}
	if (rc != TS_OK)
		return rc;
	/* A damaged word is no record: range-check the whole 64 bits. */
	if (status < STATE_RUNNING || status > STATE_ERROR ||
	    (kind != STATE_KIND_STREAM && kind != STATE_KIND_GENERATE))
		return TS_EINVAL;
	out->status = (enum state_status)status;
	out->kind = (enum state_kind)kind;
	/* A record left running by a killed process never ends by itself. */
	out->owner_gone = out->status == STATE_RUNNING &&
	    out->pid != st->pid && pid_gone(out->pid);
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

uint64_t
state_unrecorded(struct state *st)
{
	return atomic_load(&st->hdr->unrecorded);
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
