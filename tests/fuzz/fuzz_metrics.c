/*
 * fuzz_metrics.c - the metrics-file reader (src/stores/metrics.h) on a file
 * whose bytes are the input: what metrics_open() and metrics_render()
 * must survive after a crash mid-write, a stray writer, a truncation, or
 * a file of another version, alone or while other processes hold it.
 *
 * One file per process, in a temporary directory under /dev/shm (else
 * $TMPDIR or /tmp), removed at exit; one left by a run that crashed is
 * removed by the next run once its pid is gone. The baseline image is a
 * fresh file (made by metrics_open) with counts, sums and process slots
 * written by the documented format: slot 0 live (pid 1), slot 1 dead, slot
 * 2 this process's pid with another token (a leftover of an earlier
 * process), slot 3 garbage, slot 4 this process's pid and token (as if
 * another handle). The first input byte is a mode, the rest is content:
 *   bit 0 clear: content from offset 0, header included;
 *   bit 0 set:   content from offset 64, after the valid header;
 *   bit 1 set:   another "process" holds the file (a shared flock on the
 *                harness's own descriptor) while metrics_open runs;
 *   bit 2 set (with bit 0 clear): the file is exactly the content, of
 *                the content's size (empty, truncated, or longer).
 *
 * Properties, each checked with abort():
 *  - metrics_open returns TS_OK, or TS_EFORMAT exactly when the file is
 *    held and its size or header is not valid (then with a message naming
 *    the file, and the file untouched);
 *  - alone with an invalid file: it becomes exactly a fresh file with one
 *    claimed slot (slot 0: this pid, gauges 0, this process's token);
 *  - with a valid file: nothing outside the slots changes; at most one
 *    slot changes, claimed (this pid, gauges 0, the token), and it was
 *    free, or not a pid word, or another pid that is gone; if none is
 *    claimed, no slot was free. (Leftovers of this pid were released by
 *    the first open, in setup(): later opens leave them alone);
 *  - metrics_render succeeds and its sample lines are the fresh file's
 *    series in the same order, with values computed from the file's
 *    words: gauges summed over live slots (wrapping, signed), counters
 *    and reasons as they are, buckets as saturating prefix sums, _count
 *    the +Inf bucket, _sum the microseconds as decimal seconds;
 *    gauges counted for slots of live pids and, for this pid, only with
 *    this process's token;
 *  - metrics_close releases the claimed slot (pid and token 0).
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "stores/metrics.h"

/* The layout of metrics.h "File format". */
#define FILE_SIZE 9216u
#define HDR_SIZE 64u
#define HIST_OFF 64u
#define HIST_SIZE 256u
#define SUM_WORD 24u
#define COUNTER_OFF 1088u
#define REASON_OFF 1216u
#define SLOT_OFF 1280u
#define SLOT_SIZE 48u
#define DEAD_PID 0x7ffffff0u    /* above Linux's pid_max limit */
#define DIR_PREFIX "tokstream-fuzz-metrics."
#define SERIES_MAX 128u

static const unsigned hist_nbounds[METRICS_HIST_COUNT] = { 22, 19, 21, 21 };

static struct {
	int ready;
	char dir[256];
	char path[300];
	int fd;
	unsigned char *fresh;   /* as metrics_open initialises it */
	unsigned char *base;    /* fresh + counts and slots */
	unsigned char *before;  /* the file as metrics_open found it */
	unsigned char *after;
	char *series[SERIES_MAX];       /* the fresh render's, in order */
	size_t nseries;
	uint64_t self;
	uint64_t token;         /* this process's slot token (metrics.h) */
} g;

static uint64_t
rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void
wr64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Reads the whole file into buf (FILE_SIZE bytes); returns its size. */
static size_t
snapshot(unsigned char *buf)
{
	struct stat sb;
	ssize_t n;

	FUZZ_CHECK(fstat(g.fd, &sb) == 0);
	memset(buf, 0, FILE_SIZE);
	n = pread(g.fd, buf, FILE_SIZE, 0);
	FUZZ_CHECK(n >= 0);
	FUZZ_CHECK((off_t)n == sb.st_size || (size_t)n == FILE_SIZE);
	return (size_t)sb.st_size;
}

static void
put_file(const void *data, size_t off, size_t n, size_t size)
{
	FUZZ_CHECK(ftruncate(g.fd, (off_t)size) == 0);
	FUZZ_CHECK(n == 0 || pwrite(g.fd, data, n, (off_t)off) == (ssize_t)n);
}

static void
cleanup(void)
{
	size_t i;

	if (!g.ready)
		return;
	close(g.fd);
	unlink(g.path);
	rmdir(g.dir);
	free(g.fresh);
	free(g.base);
	free(g.before);
	free(g.after);
	for (i = 0; i < g.nseries; i++)
		free(g.series[i]);
	g.ready = 0;
}

/* Removes DIR_PREFIX<pid>.XXXXXX directories of runs that are gone. */
static void
sweep_stale(const char *tmp)
{
	DIR *d = opendir(tmp);
	struct dirent *e;
	char path[512];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		const char *p = e->d_name + strlen(DIR_PREFIX);
		char *end;
		long pid;

		if (strncmp(e->d_name, DIR_PREFIX, strlen(DIR_PREFIX)) != 0)
			continue;
		pid = strtol(p, &end, 10);
		if (end == p || *end != '.' || pid <= 0 ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", tmp, e->d_name,
		    METRICS_FILE_NAME);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name);
		rmdir(path);
	}
	closedir(d);
}

/* The sample lines of a render, split at their last blank: series and
 * value, NUL-terminated in place. Returns the number of lines. */
static size_t
split_samples(char *text, char **series, char **value, size_t max)
{
	char *line = text, *nl, *sp;
	size_t n = 0;

	while ((nl = strchr(line, '\n')) != NULL) {
		*nl = '\0';
		if (line[0] != '#') {
			FUZZ_CHECK(n < max);
			sp = strrchr(line, ' ');
			FUZZ_CHECK(sp != NULL);
			*sp = '\0';
			series[n] = line;
			value[n] = sp + 1;
			n++;
		}
		line = nl + 1;
	}
	FUZZ_CHECK(*line == '\0');      /* the last line ends in \n */
	return n;
}

static char *
render_text(struct metrics *m)
{
	struct ts_buf b;

	ts_buf_init(&b, 1 << 20);
	FUZZ_CHECK(metrics_render(m, &b) == TS_OK);
	FUZZ_CHECK(b.p != NULL && strlen(b.p) == b.len);
	return b.p;
}

/* Creates the directory, the file, the baseline image (once). */
static void
setup(void)
{
	const char *tmp = getenv("TMPDIR");
	char *series[SERIES_MAX], *value[SERIES_MAX], *text;
	struct metrics *m = NULL;
	char errbuf[512];
	unsigned char *slot;
	unsigned h, i;

	if (access("/dev/shm", W_OK) == 0)
		tmp = "/dev/shm";
	else if (tmp == NULL || tmp[0] == '\0')
		tmp = "/tmp";
	sweep_stale(tmp);
	snprintf(g.dir, sizeof(g.dir), "%s/" DIR_PREFIX "%ld.XXXXXX", tmp,
	    (long)getpid());
	FUZZ_CHECK(mkdtemp(g.dir) != NULL);
	snprintf(g.path, sizeof(g.path), "%s/%s", g.dir, METRICS_FILE_NAME);
	if (metrics_open(&m, g.dir, errbuf, sizeof(errbuf)) != TS_OK) {
		fprintf(stderr, "fuzz_metrics: %s\n", errbuf);
		abort();
	}
	text = render_text(m);
	g.nseries = split_samples(text, series, value, SERIES_MAX);
	for (i = 0; i < g.nseries; i++)
		g.series[i] = strdup(series[i]);
	free(text);
	g.self = (uint64_t)getpid();
	g.fd = open(g.path, O_RDWR | O_CLOEXEC);
	FUZZ_CHECK(g.fd >= 0);
	g.fresh = malloc(FILE_SIZE);
	g.base = malloc(FILE_SIZE);
	g.before = malloc(FILE_SIZE);
	g.after = malloc(FILE_SIZE);
	FUZZ_CHECK(g.fresh && g.base && g.before && g.after);
	FUZZ_CHECK(snapshot(g.fresh) == FILE_SIZE);
	FUZZ_CHECK(rd64(g.fresh + SLOT_OFF) == g.self);
	g.token = rd64(g.fresh + SLOT_OFF + 24);
	FUZZ_CHECK(g.token >> 32 == g.self);
	metrics_close(m);
	FUZZ_CHECK(snapshot(g.fresh) == FILE_SIZE);
	FUZZ_CHECK(rd64(g.fresh + SLOT_OFF) == 0);
	FUZZ_CHECK(rd64(g.fresh + SLOT_OFF + 24) == 0);
	FUZZ_CHECK(memcmp(g.fresh, "TOKMETR1", 8) == 0);

	/* Counts that render recognisably, and four kinds of slot. */
	memcpy(g.base, g.fresh, FILE_SIZE);
	for (h = 0; h < METRICS_HIST_COUNT; h++) {
		for (i = 0; i <= hist_nbounds[h]; i++)
			wr64(g.base + HIST_OFF + h * HIST_SIZE + i * 8,
			    (i * 7 + h) % 5);
		wr64(g.base + HIST_OFF + h * HIST_SIZE + SUM_WORD * 8,
		    1234567u * (h + 1));
	}
	for (i = 0; i < METRICS_COUNTER_COUNT; i++)
		wr64(g.base + COUNTER_OFF + i * 8, 1000u + i);
	for (i = 0; i < METRICS_REASON_COUNT; i++)
		wr64(g.base + REASON_OFF + i * 8, 10u + i);
	slot = g.base + SLOT_OFF;
	wr64(slot, 1);                          /* init: alive */
	wr64(slot + 8, 3);
	wr64(slot + 16, 1);
	wr64(slot + SLOT_SIZE, DEAD_PID);
	wr64(slot + SLOT_SIZE + 8, 100);
	wr64(slot + 2 * SLOT_SIZE, g.self);     /* a leftover of our pid */
	wr64(slot + 2 * SLOT_SIZE + 8, 7);
	wr64(slot + 3 * SLOT_SIZE, 0xdead000000000001u);
	wr64(slot + 3 * SLOT_SIZE + 16, 9);
	wr64(slot + 4 * SLOT_SIZE, g.self);     /* "another handle" */
	wr64(slot + 4 * SLOT_SIZE + 8, 5);
	wr64(slot + 4 * SLOT_SIZE + 24, g.token);
	g.ready = 1;
	atexit(cleanup);
}

static int
header_valid(const unsigned char *f, size_t size)
{
	/* magic .. layout: the fields metrics.c checks */
	return size == FILE_SIZE && memcmp(f, g.fresh, 48) == 0;
}

/* Whether the slot at s counts (metrics.c slot_live). */
static int
live(const unsigned char *s)
{
	uint64_t w = rd64(s);

	if (w == 0 || w > 0x7fffffffu)
		return 0;
	if (w == g.self)
		return rd64(s + 24) == g.token;
	return !(kill((pid_t)w, 0) != 0 && errno == ESRCH);
}

/* Whether slot pid word w may be claimed (metrics.c slot_takeable). */
static int
takeable(uint64_t w)
{
	uint64_t pid = w & 0xffffffffu;

	if (w == 0 || (w >> 32) > 1 || pid == 0 || pid > 0x7fffffffu)
		return 1;
	return pid != g.self && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/*
 * The slot changes metrics_open may make to a valid file; returns the
 * index of the claimed slot, or -1.
 */
static int
check_slots(void)
{
	unsigned i, had_free = 0;
	int claimed = -1;

	for (i = 0; i < METRICS_SLOTS; i++) {
		const unsigned char *b = g.before + SLOT_OFF + i * SLOT_SIZE;
		const unsigned char *a = g.after + SLOT_OFF + i * SLOT_SIZE;

		had_free |= rd64(b) == 0;
		if (memcmp(a, b, SLOT_SIZE) == 0)
			continue;
		FUZZ_CHECK(claimed < 0);
		FUZZ_CHECK(takeable(rd64(b)));
		FUZZ_CHECK(rd64(a) == g.self && rd64(a + 8) == 0 &&
		    rd64(a + 16) == 0 && rd64(a + 24) == g.token &&
		    rd64(a + 32) == 0 && rd64(a + 40) == 0);
		claimed = (int)i;
	}
	if (claimed < 0)
		FUZZ_CHECK(!had_free);
	return claimed;
}

static void
expect_u64(const char *value, uint64_t want)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, want);
	FUZZ_CHECK(strcmp(value, buf) == 0);
}

/* The render against the file's words (see the header comment). */
static void
check_render(struct metrics *m)
{
	char *series[SERIES_MAX], *value[SERIES_MAX], *text, buf[48];
	uint64_t running = 0, waiting = 0, nlive = 0, cum, v, us;
	uint64_t kv_used = 0, kv_blocks = 0;
	const unsigned char *f = g.after, *s;
	size_t n, i, k = 0;
	unsigned h, j;
	int len;

	text = render_text(m);
	FUZZ_CHECK(snapshot(g.after) == FILE_SIZE);
	n = split_samples(text, series, value, SERIES_MAX);
	FUZZ_CHECK(n == g.nseries);
	for (i = 0; i < n; i++)
		FUZZ_CHECK(strcmp(series[i], g.series[i]) == 0);

	for (j = 0; j < METRICS_SLOTS; j++) {
		s = f + SLOT_OFF + j * SLOT_SIZE;
		if (!live(s))
			continue;
		running += rd64(s + 8);
		waiting += rd64(s + 16);
		kv_used += rd64(s + 32);
		kv_blocks += rd64(s + 40);
		nlive++;
	}
	snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)running);
	FUZZ_CHECK(strcmp(value[k++], buf) == 0);
	snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)waiting);
	FUZZ_CHECK(strcmp(value[k++], buf) == 0);
	/* kv_cache_usage_perc: used over blocks, 4 decimals, capped at 1 */
	snprintf(buf, sizeof(buf), "%" PRIu64 ".%04" PRIu64,
	    (uint64_t)(kv_blocks > 0 && kv_used >= kv_blocks),
	    kv_blocks > 0 && kv_used < kv_blocks ?
	    kv_used * 10000u / kv_blocks : (uint64_t)0);
	FUZZ_CHECK(strcmp(value[k++], buf) == 0);
	expect_u64(value[k++], nlive);
	for (j = 0; j < METRICS_COUNTER_COUNT; j++)
		expect_u64(value[k++], rd64(f + COUNTER_OFF + j * 8));
	for (j = 0; j < METRICS_REASON_COUNT; j++)
		expect_u64(value[k++], rd64(f + REASON_OFF + j * 8));
	for (h = 0; h < METRICS_HIST_COUNT; h++) {
		const unsigned char *w = f + HIST_OFF + h * HIST_SIZE;

		for (cum = 0, j = 0; j <= hist_nbounds[h]; j++) {
			v = rd64(w + j * 8);
			cum = cum + v < cum ? UINT64_MAX : cum + v;
			expect_u64(value[k++], cum);
		}
		us = rd64(w + SUM_WORD * 8);
		len = snprintf(buf, sizeof(buf), "%" PRIu64 ".%06" PRIu64,
		    us / 1000000u, us % 1000000u);
		while (len > 2 && buf[len - 1] == '0' && buf[len - 2] != '.')
			buf[--len] = '\0';
		FUZZ_CHECK(strcmp(value[k++], buf) == 0);
		expect_u64(value[k++], cum);
	}
	FUZZ_CHECK(k == n);
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct metrics *m = NULL;
	char errbuf[512];
	unsigned mode = size > 0 ? data[0] : 0;
	const uint8_t *src = size > 0 ? data + 1 : data;
	size_t n = size > 0 ? size - 1 : 0, fsize;
	int held = (mode & 2) != 0, valid, claimed = 0;
	const unsigned char *cs;
	uint64_t hash = fuzz_hash(FUZZ_HASH_INIT, data, size);
	enum ts_err rc;

	if (!g.ready)
		setup();
	if (mode & 1) {
		put_file(g.base, 0, FILE_SIZE, FILE_SIZE);
		if (n > FILE_SIZE - HDR_SIZE)
			n = FILE_SIZE - HDR_SIZE;
		put_file(src, HDR_SIZE, n, FILE_SIZE);
	} else if (mode & 4) {
		if (n > 4 * FILE_SIZE)
			n = 4 * FILE_SIZE;
		put_file(src, 0, n, n);
	} else {
		put_file(g.base, 0, FILE_SIZE, FILE_SIZE);
		if (n > FILE_SIZE)
			n = FILE_SIZE;
		put_file(src, 0, n, FILE_SIZE);
	}
	fsize = snapshot(g.before);
	valid = header_valid(g.before, fsize);
	if (held)
		FUZZ_CHECK(flock(g.fd, LOCK_SH) == 0);

	memset(errbuf, 'x', sizeof(errbuf));
	rc = metrics_open(&m, g.dir, errbuf, sizeof(errbuf));
	if (held)
		FUZZ_CHECK(flock(g.fd, LOCK_UN) == 0);
	if (held && !valid) {
		FUZZ_CHECK(rc == TS_EFORMAT && m == NULL);
		FUZZ_CHECK(memchr(errbuf, '\0', sizeof(errbuf)) != NULL);
		FUZZ_CHECK(strstr(errbuf, g.path) != NULL);
		FUZZ_CHECK(snapshot(g.after) == fsize);
		FUZZ_CHECK(memcmp(g.after, g.before, FILE_SIZE) == 0);
		return 0;
	}
	FUZZ_CHECK(rc == TS_OK && m != NULL);
	FUZZ_CHECK(snapshot(g.after) == FILE_SIZE);
	if (!valid) {
		/* Re-initialised: fresh, slot 0 ours. */
		cs = g.after + SLOT_OFF;
		FUZZ_CHECK(memcmp(g.after, g.fresh, SLOT_OFF) == 0);
		FUZZ_CHECK(rd64(cs) == g.self && rd64(cs + 8) == 0 &&
		    rd64(cs + 16) == 0 && rd64(cs + 24) == g.token);
		FUZZ_CHECK(memcmp(cs + SLOT_SIZE, g.fresh + SLOT_OFF +
		    SLOT_SIZE, FILE_SIZE - SLOT_OFF - SLOT_SIZE) == 0);
	} else {
		FUZZ_CHECK(memcmp(g.after, g.before, SLOT_OFF) == 0);
		claimed = check_slots();
	}
	check_render(m);

	/* Writes on whatever words the file holds, then render again. */
	metrics_observe(m, (enum metrics_hist)(hash % METRICS_HIST_COUNT),
	    (int64_t)(hash >> 8) - (INT64_C(1) << 40));
	metrics_add(m, (enum metrics_counter)((hash >> 3) %
	    METRICS_COUNTER_COUNT), hash);
	metrics_finished(m, (enum metrics_reason)((hash >> 5) %
	    METRICS_REASON_COUNT));
	metrics_gauge_add(m, METRICS_RUNNING, (int64_t)(hash % 9) - 4);
	check_render(m);

	metrics_close(m);
	FUZZ_CHECK(snapshot(g.after) == FILE_SIZE);
	if (claimed >= 0) {
		cs = g.after + SLOT_OFF + (unsigned)claimed * SLOT_SIZE;
		FUZZ_CHECK(rd64(cs) == 0 && rd64(cs + 8) == 0 &&
		    rd64(cs + 16) == 0 && rd64(cs + 24) == 0);
	}
	return 0;
}
