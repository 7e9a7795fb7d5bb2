/*
 * stores/metrics.c - the mmap'd metrics file shared by threads and processes,
 * and its rendering in the Prometheus text exposition format 0.0.4
 * (prometheus.io "Exposition formats", "Text format details"). See
 * metrics.h for the file format.
 */
#define _GNU_SOURCE
#include "stores/metrics.h"
#include "stores/shmfile.h"
#include "common/rng.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
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
#define METRICS_VERSION 2u
#define METRICS_HIST_WORDS 32u     /* words per histogram in the file */
#define METRICS_SUM_WORD 24u       /* the word holding the sum, in us */
#define METRICS_COUNTER_WORDS 16u
#define METRICS_REASON_WORDS 8u
#define METRICS_CLAIMING ((uint64_t)1 << 32)  /* slot pid word: claiming */
#define METRICS_PID_MAX 0x7fffffffu
#define METRICS_LINE_MAX 512u      /* longest rendered line, bytes */

typedef _Atomic uint64_t aword;

struct metrics_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint32_t file_size;
	uint32_t hist_count;
	uint32_t hist_words;
	uint32_t counter_count;
	uint32_t reason_count;
	uint32_t slot_count;
	uint64_t layout;
	uint64_t reserved[2];
};

struct metrics_slot {
	aword pid;
	aword running;
	aword waiting;
	aword token;            /* the owner's process_token */
	aword kv_used;          /* prefix cache blocks in use */
	aword kv_blocks;        /* ... of this many */
};

struct metrics_file {
	struct metrics_header hdr;
	aword hist[METRICS_HIST_COUNT][METRICS_HIST_WORDS];
	aword counter[METRICS_COUNTER_WORDS];
	aword reason[METRICS_REASON_WORDS];
	struct metrics_slot slot[METRICS_SLOTS];
};

#define METRICS_FILE_SIZE sizeof(struct metrics_file)

_Static_assert(sizeof(struct metrics_header) == 64, "header is 64 bytes");
_Static_assert(sizeof(struct metrics_slot) == 48, "slot is 48 bytes");
_Static_assert(sizeof(struct metrics_file) == 7424,
    "metrics.h documents 7424 bytes");
_Static_assert(METRICS_COUNTER_COUNT <= METRICS_COUNTER_WORDS,
    "counters fit their words");
_Static_assert(METRICS_REASON_COUNT <= METRICS_REASON_WORDS,
    "reasons fit their words");

struct metrics {
	int fd;                     /* -1 for metrics_open_memory */
	struct metrics_file *f;     /* mapping of METRICS_FILE_SIZE bytes */
	struct metrics_slot *slot;  /* this process's; NULL if none free */
	uint64_t pid;
	uint64_t token;             /* process_token */
};

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

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const struct metrics_hist_desc {
	const char *name;
	const char *help;
	const uint64_t *bounds;     /* ns, increasing */
	unsigned nbounds;
} hist_desc[METRICS_HIST_COUNT] = {
	[METRICS_TTFT] = { "tokstream:time_to_first_token_seconds",
	    "Time from a request's arrival to its first token, in seconds.",
	    ttft_bounds, NELEM(ttft_bounds) },
	[METRICS_ITL] = { "tokstream:inter_token_latency_seconds",
	    "Time between two consecutive tokens of a stream, in seconds.",
	    itl_bounds, NELEM(itl_bounds) },
	[METRICS_E2E] = { "tokstream:e2e_request_latency_seconds",
	    "Time from a request's arrival to the end of its response, "
	    "in seconds.",
	    request_bounds, NELEM(request_bounds) },
	[METRICS_QUEUE] = { "tokstream:request_queue_time_seconds",
	    "Time a request waited for a decode slot, in seconds.",
	    request_bounds, NELEM(request_bounds) },
};

/* Counters in enum order; consecutive entries of one family share its
 * HELP and TYPE lines. */
static const struct metrics_counter_desc {
	const char *family;
	const char *help;
	const char *labels;         /* "{...}" or "" */
} counter_desc[METRICS_COUNTER_COUNT] = {
	[METRICS_GENERATION_TOKENS] = { "tokstream:generation_tokens_total",
	    "Tokens generated.", "" },
	[METRICS_PROMPT_TOKENS] = { "tokstream:prompt_tokens_total",
	    "Prompt tokens of the requests admitted.", "" },
	[METRICS_WASTED_TOKENS] = { "tokstream:wasted_tokens_total",
	    "Tokens generated that no client received.", "" },
	[METRICS_REJECTED_QUEUE_FULL] = {
	    "tokstream:requests_rejected_total",
	    "Requests refused before generation, by reason "
	    "(queue_full: answered 429).", "{reason=\"queue_full\"}" },
	[METRICS_PREFIX_QUERIES] = { "tokstream:prefix_cache_queries_total",
	    "Prompt tokens looked up in the prefix cache (vLLM's "
	    "prefix_cache_queries).", "" },
	[METRICS_PREFIX_HITS] = { "tokstream:prefix_cache_hits_total",
	    "Prompt tokens found in the prefix cache (vLLM's "
	    "prefix_cache_hits).", "" },
#define INJECTED(k, name) [METRICS_INJECTED + (k) - 1] = { \
	    "tokstream:injected_failures_total", "Failures injected, by " \
	    "type (--failure-injection-rate, X-Tokstream-Failure).", \
	    "{type=\"" name "\"}" }
	INJECTED(1, "rate_limit"),
	INJECTED(2, "server_error"),
	INJECTED(3, "overloaded"),
	INJECTED(4, "context_length"),
	INJECTED(5, "invalid_api_key"),
	INJECTED(6, "timeout"),
	INJECTED(7, "midstream_error"),
	INJECTED(8, "midstream_cut"),
#undef INJECTED
};

static const char *const reason_name[METRICS_REASON_COUNT] = {
	[METRICS_STOP] = "stop",
	[METRICS_LENGTH] = "length",
	[METRICS_ABORT] = "abort",
	[METRICS_ERROR] = "error",
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
		METRICS_REASON_COUNT, METRICS_SLOTS };
	unsigned i;

	h = rng_fnv1a(h, words, sizeof(words));
	for (i = 0; i < METRICS_HIST_COUNT; i++) {
		h = rng_fnv1a(h, &hist_desc[i].nbounds,
		    sizeof(hist_desc[i].nbounds));
		h = rng_fnv1a(h, hist_desc[i].bounds,
		    hist_desc[i].nbounds * sizeof(uint64_t));
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

/* Whether process pid (1 .. METRICS_PID_MAX) is gone; keeps errno. */
static int
pid_gone(uint64_t pid)
{
	int saved = errno, gone;

	gone = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
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
	const struct metrics_hist_desc *d;
	uint64_t v;
	unsigned i;

	if (m == NULL || (unsigned)h >= METRICS_HIST_COUNT)
		return;
	d = &hist_desc[h];
	v = ns > 0 ? (uint64_t)ns : 0;
	for (i = 0; i < d->nbounds && v > d->bounds[i]; i++)
		;
	atomic_fetch_add_explicit(&m->f->hist[h][i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->f->hist[h][METRICS_SUM_WORD],
	    (v + 500) / 1000, memory_order_relaxed);
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

/* ---- rendering ------------------------------------------------------ */

/* Appends one printf-formatted line (at most METRICS_LINE_MAX bytes). */
static enum ts_err put(struct ts_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum ts_err
put(struct ts_buf *b, const char *fmt, ...)
{
	char line[METRICS_LINE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return TS_ELIMIT;       /* a name or help text too long */
	return ts_buf_append(b, line, (size_t)n);
}

/*
 * Writes units / per_second as a decimal number of seconds with at least
 * one digit after the point and no trailing zeros ("0.001", "1.0"),
 * exact for every u64: digits is log10(per_second).
 */
static void
fmt_seconds(char *dst, size_t len, uint64_t units, uint64_t per_second,
    int digits)
{
	int n = snprintf(dst, len, "%" PRIu64 ".%0*" PRIu64,
	    units / per_second, digits, units % per_second);

	while (n > 2 && dst[n - 1] == '0' && dst[n - 2] != '.')
		dst[--n] = '\0';
}

static uint64_t
add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static enum ts_err
render_family(struct ts_buf *b, const char *name, const char *help,
    const char *type)
{
	enum ts_err rc = put(b, "# HELP %s %s\n", name, help);

	return rc != TS_OK ? rc : put(b, "# TYPE %s %s\n", name, type);
}

/*
 * One histogram from a snapshot of its words: cumulative buckets
 * (saturating, so a damaged file still renders non-decreasing counts),
 * then _sum and _count, which is the +Inf bucket by construction.
 */
static enum ts_err
render_hist(struct ts_buf *b, const struct metrics *m, enum metrics_hist h)
{
	const struct metrics_hist_desc *d = &hist_desc[h];
	uint64_t cum = 0, sum_us;
	char num[48];
	enum ts_err rc;
	unsigned i;

	if ((rc = render_family(b, d->name, d->help, "histogram")) != TS_OK)
		return rc;
	for (i = 0; i <= d->nbounds; i++) {
		cum = add_sat(cum, atomic_load_explicit(&m->f->hist[h][i],
		    memory_order_relaxed));
		if (i < d->nbounds)
			fmt_seconds(num, sizeof(num), d->bounds[i],
			    1000000000u, 9);
		else
			snprintf(num, sizeof(num), "+Inf");
		if ((rc = put(b, "%s_bucket{le=\"%s\"} %" PRIu64 "\n",
		    d->name, num, cum)) != TS_OK)
			return rc;
	}
	sum_us = atomic_load_explicit(&m->f->hist[h][METRICS_SUM_WORD],
	    memory_order_relaxed);
	fmt_seconds(num, sizeof(num), sum_us, 1000000u, 6);
	if ((rc = put(b, "%s_sum %s\n", d->name, num)) != TS_OK)
		return rc;
	return put(b, "%s_count %" PRIu64 "\n", d->name, cum);
}

static enum ts_err
render_counters(struct ts_buf *b, const struct metrics *m)
{
	const struct metrics_counter_desc *d;
	enum ts_err rc;
	unsigned i;

	for (i = 0; i < METRICS_COUNTER_COUNT; i++) {
		d = &counter_desc[i];
		if ((i == 0 ||
		    strcmp(counter_desc[i - 1].family, d->family) != 0) &&
		    (rc = render_family(b, d->family, d->help, "counter")) !=
		    TS_OK)
			return rc;
		if ((rc = put(b, "%s%s %" PRIu64 "\n", d->family, d->labels,
		    atomic_load_explicit(&m->f->counter[i],
		    memory_order_relaxed))) != TS_OK)
			return rc;
	}
	if ((rc = render_family(b, "tokstream:request_success_total",
	    "Requests finished, by finish reason (abort: the client went "
	    "away; error: an injected or failed generation).", "counter")) !=
	    TS_OK)
		return rc;
	for (i = 0; i < METRICS_REASON_COUNT; i++)
		if ((rc = put(b, "tokstream:request_success_total"
		    "{finished_reason=\"%s\"} %" PRIu64 "\n", reason_name[i],
		    atomic_load_explicit(&m->f->reason[i],
		    memory_order_relaxed))) != TS_OK)
			return rc;
	return TS_OK;
}

/* The gauges, summed over the slots of live processes (wrapping). */
static enum ts_err
render_gauges(struct ts_buf *b, const struct metrics *m)
{
	const struct metrics_slot *s;
	uint64_t running = 0, waiting = 0, live = 0, kv_used = 0;
	uint64_t kv_blocks = 0;
	char num[48];
	enum ts_err rc;
	unsigned i;

	for (i = 0; i < METRICS_SLOTS; i++) {
		s = &m->f->slot[i];
		if (!slot_live(m, s))
			continue;
		running += atomic_load_explicit(&s->running,
		    memory_order_relaxed);
		waiting += atomic_load_explicit(&s->waiting,
		    memory_order_relaxed);
		kv_used += atomic_load_explicit(&s->kv_used,
		    memory_order_relaxed);
		kv_blocks += atomic_load_explicit(&s->kv_blocks,
		    memory_order_relaxed);
		live++;
	}
	if ((rc = render_family(b, "tokstream:num_requests_running",
	    "Requests in a slot (prefill or decode), over all responder "
	    "processes.",
	    "gauge")) != TS_OK ||
	    (rc = put(b, "tokstream:num_requests_running %" PRId64 "\n",
	    (int64_t)running)) != TS_OK)
		return rc;
	if ((rc = render_family(b, "tokstream:num_requests_waiting",
	    "Requests waiting for a decode slot, over all responder "
	    "processes.", "gauge")) != TS_OK ||
	    (rc = put(b, "tokstream:num_requests_waiting %" PRId64 "\n",
	    (int64_t)waiting)) != TS_OK)
		return rc;
	/* a fraction, as vLLM's kv_cache_usage_perc (1 = 100%), to 4
	 * decimals by integer arithmetic */
	snprintf(num, sizeof(num), "%" PRIu64 ".%04" PRIu64,
	    (uint64_t)(kv_blocks > 0 && kv_used >= kv_blocks),
	    kv_blocks > 0 && kv_used < kv_blocks ?
	    kv_used * 10000u / kv_blocks : (uint64_t)0);
	if ((rc = render_family(b, "tokstream:kv_cache_usage_perc",
	    "Fraction of the prefix cache model's KV blocks in use, over all "
	    "responder processes (1 = 100%).", "gauge")) != TS_OK ||
	    (rc = put(b, "tokstream:kv_cache_usage_perc %s\n", num)) != TS_OK)
		return rc;
	if ((rc = render_family(b, "tokstream:responder_processes",
	    "Responder processes with metrics open and alive.", "gauge")) !=
	    TS_OK)
		return rc;
	return put(b, "tokstream:responder_processes %" PRIu64 "\n", live);
}

enum ts_err
metrics_render(const struct metrics *m, struct ts_buf *out)
{
	size_t start = out->len;
	enum ts_err rc;
	unsigned h;

	if (m == NULL)
		return TS_EINVAL;
	rc = render_gauges(out, m);
	if (rc == TS_OK)
		rc = render_counters(out, m);
	for (h = 0; rc == TS_OK && h < METRICS_HIST_COUNT; h++)
		rc = render_hist(out, m, (enum metrics_hist)h);
	if (rc != TS_OK && out->p != NULL) {
		out->len = start;       /* as it was */
		out->p[start] = '\0';
	}
	return rc;
}
