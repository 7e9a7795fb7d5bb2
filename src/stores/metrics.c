/*
 * stores/metrics.c - the mmap'd metrics file shared by threads and
 * processes: opening and validating it, claiming and releasing process
 * slots, and the lock-free updates. See metrics.h for the file format
 * (laid out in metrics_file.h); metrics_prom.c renders it.
 */
#define _GNU_SOURCE
#include "stores/metrics.h"
#include "stores/metrics_file.h"
#include "stores/shmfile.h"
#include "common/rng.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if ATOMIC_LLONG_LOCK_FREE != 2
#error "the metrics file needs lock-free 64-bit atomics"
#endif

#define METRICS_MAGIC "TOKMETR1"
#define METRICS_VERSION 4u     /* 3 was never released: a test's
				 * "other version" */
#define METRICS_CLAIMING ((uint64_t)1 << 32)  /* slot pid word: claiming */
#define METRICS_PID_MAX 0x7fffffffu

typedef _Atomic uint64_t aword;

/* Bucket bounds in ns, as vLLM's (vllm/v1/metrics/loggers.py), in ms. */
#define MS(x) ((uint64_t)(x) * 1000000u)
static const uint64_t ttft_bounds[] = {
	MS(1), MS(5), MS(10), MS(20), MS(40), MS(60), MS(80), MS(100),
	MS(250), MS(500), MS(750), MS(1000), MS(2500), MS(5000), MS(7500),
	MS(10000), MS(20000), MS(40000), MS(80000), MS(160000), MS(640000),
	MS(2560000)
};
static const uint64_t itl_bounds[] = {
	MS(10), MS(25), MS(50), MS(75), MS(100), MS(150), MS(200), MS(300),
	MS(400), MS(500), MS(750), MS(1000), MS(2500), MS(5000), MS(7500),
	MS(10000), MS(20000), MS(40000), MS(80000)
};
static const uint64_t request_bounds[] = {
	MS(300), MS(500), MS(800), MS(1000), MS(1500), MS(2000), MS(2500),
	MS(5000), MS(10000), MS(15000), MS(20000), MS(30000), MS(40000),
	MS(50000), MS(60000), MS(120000), MS(240000), MS(480000),
	MS(960000), MS(1920000), MS(7680000)
};
#undef MS

/* Token counts: vLLM's build_1_2_5_buckets (vllm/v1/metrics/loggers.py),
 * here up to a million whatever the context. */
static const uint64_t token_bounds[] = {
	1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000,
	50000, 100000, 200000, 500000, 1000000
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const struct metrics_bounds metrics_hist_bounds[METRICS_HIST_COUNT] = {
	[METRICS_TTFT] = { ttft_bounds, NELEM(ttft_bounds), 0 },
	[METRICS_ITL] = { itl_bounds, NELEM(itl_bounds), 0 },
	[METRICS_E2E] = { request_bounds, NELEM(request_bounds), 0 },
	[METRICS_QUEUE] = { request_bounds, NELEM(request_bounds), 0 },
};

const struct metrics_bounds metrics_req_bounds[METRICS_REQ_HIST_COUNT] = {
	[METRICS_REQ_PREFILL] = { request_bounds, NELEM(request_bounds), 0 },
	[METRICS_REQ_DECODE] = { request_bounds, NELEM(request_bounds), 0 },
	[METRICS_REQ_INFERENCE] = { request_bounds, NELEM(request_bounds),
	    0 },
	[METRICS_REQ_TPOT] = { itl_bounds, NELEM(itl_bounds), 0 },
	[METRICS_REQ_PROMPT_TOKENS] = { token_bounds, NELEM(token_bounds),
	    1 },
	[METRICS_REQ_GENERATION_TOKENS] = { token_bounds,
	    NELEM(token_bounds), 1 },
	[METRICS_REQ_MAX_GENERATION_TOKENS] = { token_bounds,
	    NELEM(token_bounds), 1 },
};

/*
 * This process's token, written in the slots it claims: its pid in the
 * high 32 bits and, below, a hash of the monotonic clock at its first
 * open, which an earlier process that had the same pid did not have.
 * Computed again in a child after fork() (the pid differs).
 */
static _Atomic uint64_t process_token;
/* The pid whose leftover slots have been released (slot_cleanup). */
static _Atomic uint64_t cleaned_pid;

/*
 * The layout hash: changes with any bucket bound or any count in the
 * header, so that a build with other buckets never shares a file whose
 * version number someone forgot to bump.
 */
static uint64_t
layout_hash(void)
{
	uint64_t h = RNG_FNV1A_INIT;
	uint32_t words[] = { METRICS_VERSION, (uint32_t)METRICS_FILE_SIZE,
		METRICS_HIST_COUNT, METRICS_HIST_WORDS, METRICS_COUNTER_COUNT,
		METRICS_REASON_COUNT, METRICS_SLOTS, METRICS_REQ_HIST_COUNT };
	unsigned i;

	h = rng_fnv1a(h, words, sizeof(words));
	for (i = 0; i < METRICS_HIST_COUNT; i++) {
		h = rng_fnv1a(h, &metrics_hist_bounds[i].n,
		    sizeof(metrics_hist_bounds[i].n));
		h = rng_fnv1a(h, metrics_hist_bounds[i].ns,
		    metrics_hist_bounds[i].n * sizeof(uint64_t));
	}
	for (i = 0; i < METRICS_REQ_HIST_COUNT; i++) {
		h = rng_fnv1a(h, &metrics_req_bounds[i].n,
		    sizeof(metrics_req_bounds[i].n));
		h = rng_fnv1a(h, metrics_req_bounds[i].ns,
		    metrics_req_bounds[i].n * sizeof(uint64_t));
	}
	return h;
}

/* Fills a fresh header; the magic goes last (see metrics.h). */
static void
header_init(struct metrics_header *h)
{
	h->version = METRICS_VERSION;
	h->header_size = sizeof(struct metrics_header);
	h->file_size = (uint32_t)METRICS_FILE_SIZE;
	h->hist_count = METRICS_HIST_COUNT;
	h->hist_words = METRICS_HIST_WORDS;
	h->counter_count = METRICS_COUNTER_COUNT;
	h->reason_count = METRICS_REASON_COUNT;
	h->slot_count = METRICS_SLOTS;
	h->layout = layout_hash();
	atomic_thread_fence(memory_order_release);
	memcpy(h->magic, METRICS_MAGIC, 8);
}

/*
 * Why a header read from a file is not ours: writes a short reason into
 * why and returns 0, or returns 1 when it is valid.
 */
static int
header_check(const struct metrics_header *h, char *why, size_t len)
{
	if (memcmp(h->magic, METRICS_MAGIC, 8) != 0)
		snprintf(why, len, "bad magic");
	else if (h->version != METRICS_VERSION)
		snprintf(why, len, "version %" PRIu32 ", want %u", h->version,
		    METRICS_VERSION);
	else if (h->header_size != sizeof(struct metrics_header) ||
	    h->file_size != METRICS_FILE_SIZE ||
	    h->hist_count != METRICS_HIST_COUNT ||
	    h->hist_words != METRICS_HIST_WORDS ||
	    h->counter_count != METRICS_COUNTER_COUNT ||
	    h->reason_count != METRICS_REASON_COUNT ||
	    h->slot_count != METRICS_SLOTS || h->layout != layout_hash())
		snprintf(why, len, "another layout of version %u",
		    METRICS_VERSION);
	else
		return 1;
	return 0;
}

static uint64_t
token_of(uint64_t pid)
{
	uint64_t cur = atomic_load(&process_token), mine;
	struct timespec ts;

	while (cur >> 32 != pid) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		mine = pid << 32 | (rng_fnv1a(RNG_FNV1A_INIT, &ts,
		    sizeof(ts)) & 0xffffffffu);
		if (atomic_compare_exchange_weak(&process_token, &cur, mine))
			return mine;
	}
	return cur;
}

/* Whether /proc says process pid is a zombie (exited, not yet reaped:
 * proc(5), the state after the command's closing parenthesis); 0 when
 * it cannot tell. */
static int
pid_zombie(uint64_t pid)
{
	char path[48], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%" PRIu64 "/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Whether process pid (1 .. METRICS_PID_MAX) is gone: no such process,
 * or one that has exited and waits to be reaped (a responder's slot stops
 * counting when it exits, not when its parent reaps it); keeps errno. */
static int
pid_gone(uint64_t pid)
{
	int saved = errno, gone;

	gone = kill((pid_t)pid, 0) != 0 ? errno == ESRCH : pid_zombie(pid);
	errno = saved;
	return gone;
}

/*
 * Whether the slot whose pid word is w may be claimed by process self:
 * free, not a word we write, or owned by a process that is gone. A slot
 * of self's own pid never is: it is this process's (another handle, or
 * one being claimed) or a leftover, which only slot_cleanup() touches.
 */
static int
slot_takeable(uint64_t w, uint64_t self)
{
	uint64_t pid = w & 0xffffffffu;

	if (w == 0 || (w >> 32) > 1 || pid == 0 || pid > METRICS_PID_MAX)
		return 1;
	return pid != self && pid_gone(pid);
}

/*
 * Whether a slot counts: owned (not being claimed) by a live process;
 * for this process's own pid, only with this process's token (else it is
 * a leftover of an earlier process that had the same pid).
 */
static int
slot_live(const struct metrics *m, const struct metrics_slot *s)
{
	uint64_t w = atomic_load_explicit(&s->pid, memory_order_acquire);

	if (w == 0 || w > METRICS_PID_MAX)
		return 0;               /* free, being claimed, or garbage */
	if (w == m->pid)
		return atomic_load_explicit(&s->token,
		    memory_order_relaxed) == m->token;
	return !pid_gone(w);
}

/*
 * Releases the leftovers of an earlier process that had this pid (their
 * gauges would count for everyone else, who cannot tell them from ours).
 * Done once per process, by the first metrics_open() to get here, so no
 * two threads release the same slot; other threads never claim a slot of
 * their own pid, and a slot this process claims has its token.
 */
static void
slot_cleanup(struct metrics *m)
{
	uint64_t prev = atomic_load(&cleaned_pid), w;
	struct metrics_slot *s;
	unsigned i;

	do {
		if (prev == m->pid)
			return;
	} while (!atomic_compare_exchange_weak(&cleaned_pid, &prev,
	    m->pid));
	for (i = 0; i < METRICS_SLOTS; i++) {
		s = &m->f->slot[i];
		w = m->pid;
		if (atomic_load_explicit(&s->pid, memory_order_acquire) != w ||
		    atomic_load_explicit(&s->token, memory_order_relaxed) ==
		    m->token)
			continue;
		atomic_store_explicit(&s->running, 0, memory_order_relaxed);
		atomic_store_explicit(&s->waiting, 0, memory_order_relaxed);
		atomic_store_explicit(&s->kv_used, 0, memory_order_relaxed);
		atomic_store_explicit(&s->kv_blocks, 0, memory_order_relaxed);
		atomic_store_explicit(&s->token, 0, memory_order_relaxed);
		atomic_compare_exchange_strong(&s->pid, &w, 0);
	}
}

/*
 * Claims a process slot for m (m->slot stays NULL if none is free): CAS
 * the pid word to "claiming", zero the gauges, write the token, then
 * publish the pid with release order, so that a reader that sees the pid
 * sees the rest.
 */
static void
slot_claim(struct metrics *m)
{
	struct metrics_slot *s;
	uint64_t w;
	unsigned i;

	for (i = 0; i < METRICS_SLOTS; i++) {
		s = &m->f->slot[i];
		w = atomic_load_explicit(&s->pid, memory_order_relaxed);
		if (!slot_takeable(w, m->pid))
			continue;
		if (!atomic_compare_exchange_strong(&s->pid, &w,
		    METRICS_CLAIMING | m->pid))
			continue;
		atomic_store_explicit(&s->running, 0, memory_order_relaxed);
		atomic_store_explicit(&s->waiting, 0, memory_order_relaxed);
		atomic_store_explicit(&s->kv_used, 0, memory_order_relaxed);
		atomic_store_explicit(&s->kv_blocks, 0, memory_order_relaxed);
		atomic_store_explicit(&s->token, m->token,
		    memory_order_relaxed);
		atomic_store_explicit(&s->pid, m->pid, memory_order_release);
		m->slot = s;
		return;
	}
}

static struct metrics *
handle_new(int fd, void *map)
{
	struct metrics *m = xcalloc(1, sizeof(*m));

	m->fd = fd;
	m->f = map;
	m->pid = (uint64_t)getpid();
	m->token = token_of(m->pid);
	return m;
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
 * Opening shares its first and last steps with state_open() (state.c):
 * shmfile_open() and shmfile_map(). The locking between them differs:
 * every handle keeps a shared lock for its lifetime, so an opener that
 * gets the lock exclusively (LOCK_NB) knows no other process uses the
 * file and may re-initialise it; one that cannot waits for a shared lock
 * (that is, for a concurrent initialiser to finish) and only validates.
 */
enum ts_err
metrics_open(struct metrics **out, const char *dir, char *errbuf,
    size_t errlen)
{
	struct metrics_header hdr;
	struct metrics *m;
	struct stat sb;
	char path[4096], why[96];
	void *map = MAP_FAILED;
	int fd = -1, saved, alone, valid = 0;
	enum ts_err rc;

	*out = NULL;
	if ((rc = shmfile_open(dir, METRICS_FILE_NAME, path, sizeof(path),
	    &fd, errbuf, errlen)) != TS_OK)
		return rc;
	rc = TS_ESYS;
	if (lock_file(fd, LOCK_EX | LOCK_NB) == 0)
		alone = 1;
	else if (errno == EWOULDBLOCK && lock_file(fd, LOCK_SH) == 0)
		alone = 0;     /* others use it (or initialise it: wait) */
	else
		alone = -1;
	if (alone < 0 || fstat(fd, &sb) != 0) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot %s %s: %s",
		    alone < 0 ? "lock" : "stat", path, strerror(saved));
		goto out;
	}
	if ((uint64_t)sb.st_size != METRICS_FILE_SIZE) {
		snprintf(why, sizeof(why), "%jd bytes, want %zu",
		    (intmax_t)sb.st_size, METRICS_FILE_SIZE);
	} else if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot read %s: %s", path,
		    strerror(saved));
		goto out;
	} else {
		valid = header_check(&hdr, why, sizeof(why));
	}
	if (!valid && !alone) {
		snprintf(errbuf, errlen, "%s is in use in another format (%s)",
		    path, why);
		rc = TS_EFORMAT;
		goto out;
	}
	/* Alone with a new, truncated or foreign file: start afresh. */
	if (!valid && (ftruncate(fd, 0) != 0 ||
	    ftruncate(fd, (off_t)METRICS_FILE_SIZE) != 0)) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot size %s: %s", path,
		    strerror(saved));
		goto out;
	}
	if (shmfile_map(fd, path, METRICS_FILE_SIZE, &map, errbuf, errlen) !=
	    TS_OK)
		goto out;
	if (!valid)
		header_init(map);
	/* Initialised: let the others in. */
	if (alone && lock_file(fd, LOCK_SH) != 0) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot lock %s: %s", path,
		    strerror(saved));
		goto out;
	}
	m = handle_new(fd, map);
	slot_cleanup(m);
	slot_claim(m);
	*out = m;
	return TS_OK;
out:
	if (map != MAP_FAILED)
		munmap(map, METRICS_FILE_SIZE);
	close(fd);
	return rc;
}

enum ts_err
metrics_open_memory(struct metrics **out)
{
	struct metrics *m;
	void *map;

	*out = NULL;
	map = mmap(NULL, METRICS_FILE_SIZE, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return TS_ESYS;
	m = handle_new(-1, map);
	header_init(&m->f->hdr);
	slot_claim(m);
	*out = m;
	return TS_OK;
}

void
metrics_close(struct metrics *m)
{
	uint64_t w;

	if (m == NULL)
		return;
	/* Only the owner releases the slot, not a child after fork(). */
	if (m->slot != NULL && (uint64_t)getpid() == m->pid) {
		atomic_store_explicit(&m->slot->running, 0,
		    memory_order_relaxed);
		atomic_store_explicit(&m->slot->waiting, 0,
		    memory_order_relaxed);
		atomic_store_explicit(&m->slot->kv_used, 0,
		    memory_order_relaxed);
		atomic_store_explicit(&m->slot->kv_blocks, 0,
		    memory_order_relaxed);
		atomic_store_explicit(&m->slot->token, 0,
		    memory_order_relaxed);
		w = m->pid;
		atomic_compare_exchange_strong(&m->slot->pid, &w, 0);
	}
	munmap(m->f, METRICS_FILE_SIZE);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}

void
metrics_observe(struct metrics *m, enum metrics_hist h, int64_t ns)
{
	const struct metrics_bounds *d;
	uint64_t v;
	unsigned i;

	if (m == NULL || (unsigned)h >= METRICS_HIST_COUNT)
		return;
	d = &metrics_hist_bounds[h];
	v = ns > 0 ? (uint64_t)ns : 0;
	for (i = 0; i < d->n && v > d->ns[i]; i++)
		;
	atomic_fetch_add_explicit(&m->f->hist[h][i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->f->hist[h][METRICS_SUM_WORD],
	    (v + 500) / 1000, memory_order_relaxed);
}

void
metrics_observe_req(struct metrics *m, enum metrics_req_hist h, int64_t v)
{
	const struct metrics_bounds *d;
	uint64_t u;
	unsigned i;

	if (m == NULL || (unsigned)h >= METRICS_REQ_HIST_COUNT)
		return;
	d = &metrics_req_bounds[h];
	u = v > 0 ? (uint64_t)v : 0;
	for (i = 0; i < d->n && u > d->ns[i]; i++)
		;
	atomic_fetch_add_explicit(&m->f->req_hist[h][i], 1,
	    memory_order_relaxed);
	/* a duration's sum in microseconds, as the others; a count's as
	 * it is */
	atomic_fetch_add_explicit(&m->f->req_hist[h][METRICS_SUM_WORD],
	    d->tokens ? u : (u + 500) / 1000, memory_order_relaxed);
}

void
metrics_add(struct metrics *m, enum metrics_counter c, uint64_t n)
{
	if (m == NULL || (unsigned)c >= METRICS_COUNTER_COUNT)
		return;
	atomic_fetch_add_explicit(&m->f->counter[c], n, memory_order_relaxed);
}

void
metrics_injected(struct metrics *m, int kind)
{
	if (kind >= 1 && kind <= METRICS_INJECTED_KINDS)
		metrics_add(m, (enum metrics_counter)(METRICS_INJECTED + kind -
		    1), 1);
}

void
metrics_finished(struct metrics *m, enum metrics_reason r)
{
	if (m == NULL || (unsigned)r >= METRICS_REASON_COUNT)
		return;
	atomic_fetch_add_explicit(&m->f->reason[r], 1, memory_order_relaxed);
}

static aword *
gauge_word(struct metrics *m, enum metrics_gauge g)
{
	if (m == NULL || m->slot == NULL)
		return NULL;
	switch (g) {
	case METRICS_RUNNING: return &m->slot->running;
	case METRICS_WAITING: return &m->slot->waiting;
	case METRICS_KV_USED: return &m->slot->kv_used;
	case METRICS_KV_BLOCKS: return &m->slot->kv_blocks;
	case METRICS_GAUGE_COUNT: break;
	}
	return NULL;
}

void
metrics_gauge_set(struct metrics *m, enum metrics_gauge g, int64_t n)
{
	aword *w = gauge_word(m, g);

	if (w != NULL)
		atomic_store_explicit(w, (uint64_t)n, memory_order_relaxed);
}

void
metrics_gauge_add(struct metrics *m, enum metrics_gauge g, int64_t delta)
{
	aword *w = gauge_word(m, g);

	/* Two's complement: adding (uint64_t)-1 subtracts one. */
	if (w != NULL)
		atomic_fetch_add_explicit(w, (uint64_t)delta,
		    memory_order_relaxed);
}

void
metrics_slot_sums(const struct metrics *m, uint64_t sum[METRICS_GAUGE_COUNT],
    uint64_t *live)
{
	const struct metrics_slot *s;
	unsigned i;

	memset(sum, 0, METRICS_GAUGE_COUNT * sizeof(sum[0]));
	*live = 0;
	for (i = 0; i < METRICS_SLOTS; i++) {
		s = &m->f->slot[i];
		if (!slot_live(m, s))
			continue;
		sum[METRICS_RUNNING] += atomic_load_explicit(&s->running,
		    memory_order_relaxed);
		sum[METRICS_WAITING] += atomic_load_explicit(&s->waiting,
		    memory_order_relaxed);
		sum[METRICS_KV_USED] += atomic_load_explicit(&s->kv_used,
		    memory_order_relaxed);
		sum[METRICS_KV_BLOCKS] += atomic_load_explicit(&s->kv_blocks,
		    memory_order_relaxed);
		(*live)++;
	}
}
