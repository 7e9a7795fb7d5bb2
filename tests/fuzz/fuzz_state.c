/*
 * fuzz_state.c - the state-file reader (src/stores/state.h) on a file whose bytes
 * are the input: what a reader must survive after a crash mid-write, a
 * stray writer, or a file of another version.
 *
 * One state file per process, in a temporary directory under /dev/shm
 * (tmpfs: state_open's msync costs nothing there; else $TMPDIR or /tmp),
 * removed at exit; one left by a run that crashed is removed by the next
 * run once its pid is gone. It is created by state_open, then given 60
 * streams written by the documented format (docs/OPERATIONS.md "The state
 * file");
 * that image is the baseline every input starts from. Then the input is
 * written over it, keeping the file's size:
 *   - first byte even (e.g. 'T' of "TOKSTAT1"): the whole input from
 *     offset 0, header included;
 *   - first byte odd: the input after that byte over the records only
 *     (offset 128), so the header stays valid.
 * Then state_open again, state_lookup of ids 0..50, of ids around the
 * capacity, of huge ids, of next_id and of the ids the first records hold.
 * The file has RECORDS records, what state_open is asked for, so a valid
 * header is never resized.
 *
 * Properties, each checked with abort():
 *  - state_open succeeds, or fails with a non-empty message;
 *  - a file with a valid header is not modified by state_open; any other
 *    is re-initialised to exactly a fresh file (header, next_id 1, zeros);
 *  - state_lookup returns TS_OK or TS_EINVAL, and TS_OK exactly when the
 *    record's raw id is the id asked for (id 0: the header's newest), its
 *    raw status word is 1..4, its kind 1 or 2 and no writer holds its lock
 *    word (bits 0-31 zero); then every field is the file's, the status is in
 *    range, and owner_gone is set only for a running record, never for
 *    this process's own pid, always for a pid above Linux's pid_max limit;
 *  - the totals are the header's.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "stores/state.h"

#define HDR_SIZE 128u
#define REC_SIZE 144u
#define RECORDS 4224u           /* state_capacity_for(1, 64 + 64): the
				 * default responder's */
#define FILE_SIZE (HDR_SIZE + (size_t)RECORDS * REC_SIZE)
#define PID_MAX_LIMIT 4194304   /* Linux's largest possible pid_max */
#define DEAD_PID 0x7ffffff0u    /* above it: no such process */
#define DIR_PREFIX "tokstream-fuzz-state."

/* Header offsets and record field offsets (docs/OPERATIONS.md "The state
 * file"). */
enum {
	H_VERSION = 8, H_RECORD_SIZE = 12, H_CAPACITY = 16, H_NEXT_ID = 24,
	H_TOTAL_GENERATED = 32, H_TOTAL_STREAMS = 40, H_NEWEST = 56
};
enum {
	R_LOCK = 0, R_ID = 8, R_REQUESTED = 16, R_GENERATED = 24,
	R_STATUS = 32, R_PID = 40, R_PROMPT_TOKENS = 48, R_STARTED = 56,
	R_ENDED = 64, R_KIND = 72, R_RESUMED_FROM = 80, R_RESUME_INDEX = 88,
	R_KEY = 96, R_WASTED = 104, R_QUEUE_US = 112, R_LEAVE_US = 120,
	R_FLAGS = 128, R_FROM_INSTANCE = 136
};

static struct {
	int ready;
	char dir[256];
	char path[300];
	int fd;
	unsigned char *map;     /* the file, MAP_SHARED */
	unsigned char *fresh;   /* the file as state_open initialises it */
	unsigned char *base;    /* fresh + 60 streams */
	size_t dirty_off;       /* where the file may differ from base */
	size_t dirty_len;
} g;

static uint64_t
rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t
rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void
wr64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static int
header_valid(const unsigned char *f)
{
	return memcmp(f, "TOKSTAT1", 8) == 0 && rd32(f + H_VERSION) == 4 &&
	    rd32(f + H_RECORD_SIZE) == REC_SIZE &&
	    rd32(f + H_CAPACITY) == RECORDS &&
	    rd64(f + H_NEXT_ID) != 0;
}

static void
cleanup(void)
{
	if (!g.ready)
		return;
	munmap(g.map, FILE_SIZE);
	close(g.fd);
	unlink(g.path);
	rmdir(g.dir);
	free(g.fresh);
	free(g.base);
	g.ready = 0;
}

/*
 * Removes the directories of earlier runs that died without their atexit
 * (a crash, a timeout): DIR_PREFIX<pid>.XXXXXX whose pid is gone.
 */
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
		    STATE_FILE_NAME);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name);
		rmdir(path);
	}
	closedir(d);
}

/* Creates the directory, the file and the baseline image (once). */
static void
setup(void)
{
	const char *tmp = getenv("TMPDIR");
	struct state *st = NULL;
	char errbuf[512];
	struct stat sb;
	uint64_t k, total = 0;

	if (access("/dev/shm", W_OK) == 0)
		tmp = "/dev/shm";
	else if (tmp == NULL || tmp[0] == '\0')
		tmp = "/tmp";
	sweep_stale(tmp);
	snprintf(g.dir, sizeof(g.dir), "%s/" DIR_PREFIX "%ld.XXXXXX", tmp,
	    (long)getpid());
	FUZZ_CHECK(mkdtemp(g.dir) != NULL);
	snprintf(g.path, sizeof(g.path), "%s/%s", g.dir, STATE_FILE_NAME);
	if (state_open(&st, g.dir, RECORDS, errbuf, sizeof(errbuf)) != TS_OK) {
		fprintf(stderr, "fuzz_state: %s\n", errbuf);
		abort();
	}
	state_close(st);
	g.fd = open(g.path, O_RDWR | O_CLOEXEC);
	FUZZ_CHECK(g.fd >= 0 && fstat(g.fd, &sb) == 0);
	FUZZ_CHECK((size_t)sb.st_size == FILE_SIZE);
	g.map = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
	    g.fd, 0);
	FUZZ_CHECK(g.map != MAP_FAILED);
	g.fresh = malloc(FILE_SIZE);
	g.base = malloc(FILE_SIZE);
	FUZZ_CHECK(g.fresh != NULL && g.base != NULL);
	memcpy(g.fresh, g.map, FILE_SIZE);
	FUZZ_CHECK(header_valid(g.fresh) && rd64(g.fresh + H_NEXT_ID) == 1);

	/* Streams 1..60, every status, live and dead owners. */
	memcpy(g.base, g.fresh, FILE_SIZE);
	for (k = 1; k <= 60; k++) {
		unsigned char *r = g.base + HDR_SIZE + (k - 1) * REC_SIZE;
		uint64_t status = 1 + k % 4;

		wr64(r + R_ID, k);
		wr64(r + R_REQUESTED, 10 + k);
		wr64(r + R_GENERATED, k % 11);
		wr64(r + R_STATUS, status);
		wr64(r + R_PID, k % 2 ? DEAD_PID : (uint64_t)getpid());
		wr64(r + R_PROMPT_TOKENS, k * 3);
		wr64(r + R_STARTED, 1700000000000u + k);
		wr64(r + R_ENDED, status == STATE_RUNNING ? 0 :
		    1700000000100u + k);
		wr64(r + R_KIND, 1 + k % 2);
		wr64(r + R_RESUMED_FROM, k > 1 && k % 5 == 0 ? k - 1 : 0);
		wr64(r + R_RESUME_INDEX, k % 5 == 0 ? k : 0);
		wr64(r + R_KEY, fuzz_hash(FUZZ_HASH_INIT, &k, sizeof(k)));
		/* "b1" packed: another instance's stream resumed */
		wr64(r + R_FROM_INSTANCE, k % 10 == 0 ? 0x3162u : 0);
		total += k % 11;
	}
	wr64(g.base + H_NEXT_ID, 61);
	wr64(g.base + H_NEWEST, 60);
	wr64(g.base + H_TOTAL_GENERATED, total);
	wr64(g.base + H_TOTAL_STREAMS, 60);
	g.dirty_off = 0;
	g.dirty_len = FILE_SIZE;        /* the file is still `fresh` */
	g.ready = 1;
	atexit(cleanup);
}

/* state_lookup(id) against the raw bytes of the file. */
static void
check_lookup(struct state *st, uint64_t id)
{
	struct state_record rec;
	const unsigned char *r;
	uint64_t want = id, raw_status;
	enum ts_err rc;
	int consistent;

	memset(&rec, 0x5a, sizeof(rec));
	rc = state_lookup(st, id, &rec);
	FUZZ_CHECK(rc == TS_OK || rc == TS_EINVAL);
	if (id == 0) {
		want = rd64(g.map + H_NEWEST);
		if (want == 0) {
			FUZZ_CHECK(rc == TS_EINVAL);
			return;
		}
	}
	r = g.map + HDR_SIZE + ((want - 1) % RECORDS) * REC_SIZE;
	raw_status = rd64(r + R_STATUS);
	consistent = want != 0 && rd64(r + R_ID) == want &&
	    (rd64(r + R_LOCK) & 0xffffffffu) == 0 &&
	    raw_status >= STATE_RUNNING && raw_status <= STATE_ERROR &&
	    (rd64(r + R_KIND) == STATE_KIND_STREAM ||
	    rd64(r + R_KIND) == STATE_KIND_GENERATE);
	if (rc != TS_OK) {
		FUZZ_CHECK(!consistent);
		return;
	}
	FUZZ_CHECK(consistent);
	FUZZ_CHECK(rec.id == want);
	FUZZ_CHECK(rec.status >= STATE_RUNNING && rec.status <= STATE_ERROR);
	FUZZ_CHECK((uint64_t)rec.status == raw_status);
	FUZZ_CHECK(rec.requested == rd64(r + R_REQUESTED));
	FUZZ_CHECK(rec.generated == rd64(r + R_GENERATED));
	FUZZ_CHECK(rec.pid == rd64(r + R_PID));
	FUZZ_CHECK(rec.prompt_tokens == rd64(r + R_PROMPT_TOKENS));
	FUZZ_CHECK(rec.started_ms == rd64(r + R_STARTED));
	FUZZ_CHECK(rec.ended_ms == rd64(r + R_ENDED));
	FUZZ_CHECK(rec.kind == (enum state_kind)rd64(r + R_KIND));
	FUZZ_CHECK(rec.resumed_from == rd64(r + R_RESUMED_FROM));
	FUZZ_CHECK(rec.resume_index == rd64(r + R_RESUME_INDEX));
	FUZZ_CHECK(rec.key == rd64(r + R_KEY));
	FUZZ_CHECK(rec.from_instance == rd64(r + R_FROM_INSTANCE));
	FUZZ_CHECK(rec.wasted == rd64(r + R_WASTED));
	FUZZ_CHECK(rec.queue_us == rd64(r + R_QUEUE_US));
	FUZZ_CHECK(rec.leave_us == rd64(r + R_LEAVE_US));
	FUZZ_CHECK((uint64_t)rec.cause == (rd64(r + R_FLAGS) & 0xffu));
	FUZZ_CHECK((uint64_t)rec.phase == ((rd64(r + R_FLAGS) >> 8) & 0xffu));
	FUZZ_CHECK(rec.owner_gone == 0 || rec.owner_gone == 1);
	if (rec.status != STATE_RUNNING || rec.pid == (uint64_t)getpid())
		FUZZ_CHECK(rec.owner_gone == 0);
	else if (rec.pid > PID_MAX_LIMIT && rec.pid <= 0x7fffffffu)
		FUZZ_CHECK(rec.owner_gone == 1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t far_ids[] = {
		RECORDS - 1, RECORDS, RECORDS + 1,
		RECORDS + 60, 2 * RECORDS, (uint64_t)1 << 32,
		((uint64_t)1 << 32) + 1, UINT64_MAX / 2, UINT64_MAX - 1,
		UINT64_MAX
	};
	struct state *st = NULL;
	char errbuf[512];
	size_t off = 0, n = size, i;
	const uint8_t *src = data;
	uint64_t next;
	int valid;
	enum ts_err rc;

	if (!g.ready)
		setup();
	/* Back to the baseline: only what the last input changed. */
	memcpy(g.map + g.dirty_off, g.base + g.dirty_off, g.dirty_len);
	if (size > 0 && (data[0] & 1)) {
		off = HDR_SIZE;
		src = data + 1;
		n = size - 1;
	}
	if (n > FILE_SIZE - off)
		n = FILE_SIZE - off;
	if (n > 0)
		memcpy(g.map + off, src, n);
	g.dirty_off = off;
	g.dirty_len = n;
	valid = header_valid(g.map);

	memset(errbuf, 'x', sizeof(errbuf));
	rc = state_open(&st, g.dir, RECORDS, errbuf, sizeof(errbuf));
	if (rc != TS_OK) {
		FUZZ_CHECK(st == NULL);
		FUZZ_CHECK(memchr(errbuf, '\0', sizeof(errbuf)) != NULL);
		FUZZ_CHECK(errbuf[0] != '\0');
		g.dirty_off = 0;
		g.dirty_len = FILE_SIZE;
		return 0;
	}
	FUZZ_CHECK(st != NULL);
	if (valid) {
		/* Untouched: the baseline with the input over it. */
		FUZZ_CHECK(memcmp(g.map, g.base, off) == 0);
		FUZZ_CHECK(n == 0 || memcmp(g.map + off, src, n) == 0);
		FUZZ_CHECK(memcmp(g.map + off + n, g.base + off + n,
		    FILE_SIZE - off - n) == 0);
	} else {
		FUZZ_CHECK(memcmp(g.map, g.fresh, FILE_SIZE) == 0);
		g.dirty_off = 0;
		g.dirty_len = FILE_SIZE;
	}

	for (i = 0; i <= 50; i++)
		check_lookup(st, i);
	for (i = 0; i < sizeof(far_ids) / sizeof(far_ids[0]); i++)
		check_lookup(st, far_ids[i]);
	next = rd64(g.map + H_NEXT_ID);
	check_lookup(st, next);
	check_lookup(st, next - 1);
	check_lookup(st, next + 1);
	/* The ids the first records hold (0, "the newest", was done). */
	for (i = 0; i < 8; i++) {
		uint64_t id = rd64(g.map + HDR_SIZE + i * REC_SIZE + R_ID);

		if (id != 0)
			check_lookup(st, id);
	}

	FUZZ_CHECK(state_total_generated(st) ==
	    rd64(g.map + H_TOTAL_GENERATED));
	FUZZ_CHECK(state_total_streams(st) == rd64(g.map + H_TOTAL_STREAMS));
	state_close(st);
	return 0;
}
