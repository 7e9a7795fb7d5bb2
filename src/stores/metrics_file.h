/*
 * stores/metrics_file.h - internal to src/stores/: the layout of the
 * metrics file (metrics.h documents the format) that metrics.c maps,
 * claims process slots in and updates, and that metrics_prom.c reads to
 * render the Prometheus text. Not for other layers.
 */
#ifndef TS_STORES_METRICS_FILE_H
#define TS_STORES_METRICS_FILE_H

#include <stdatomic.h>
#include <stdint.h>

#include "stores/metrics.h"

#define METRICS_HIST_WORDS 32u     /* words per histogram in the file */
#define METRICS_SUM_WORD 24u       /* the word holding the sum, in us */
#define METRICS_COUNTER_WORDS 16u
#define METRICS_REASON_WORDS 8u

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
	_Atomic uint64_t pid;
	_Atomic uint64_t running;
	_Atomic uint64_t waiting;
	_Atomic uint64_t token;         /* the owner's process_token */
	_Atomic uint64_t kv_used;       /* prefix cache blocks in use */
	_Atomic uint64_t kv_blocks;     /* ... of this many */
};

/* The whole file; every word after the header is a C11 atomic. */
struct metrics_file {
	struct metrics_header hdr;
	_Atomic uint64_t hist[METRICS_HIST_COUNT][METRICS_HIST_WORDS];
	_Atomic uint64_t counter[METRICS_COUNTER_WORDS];
	_Atomic uint64_t reason[METRICS_REASON_WORDS];
	struct metrics_slot slot[METRICS_SLOTS];
	_Atomic uint64_t req_hist[METRICS_REQ_HIST_COUNT][METRICS_HIST_WORDS];
};

#define METRICS_FILE_SIZE sizeof(struct metrics_file)

_Static_assert(sizeof(struct metrics_header) == 64, "header is 64 bytes");
_Static_assert(sizeof(struct metrics_slot) == 48, "slot is 48 bytes");
_Static_assert(sizeof(struct metrics_file) == 9216,
    "metrics.h documents 9216 bytes");
_Static_assert(METRICS_COUNTER_COUNT <= METRICS_COUNTER_WORDS,
    "counters fit their words");
_Static_assert(METRICS_REASON_COUNT <= METRICS_REASON_WORDS,
    "reasons fit their words");

/* A handle (metrics_open, metrics_open_memory). */
struct metrics {
	int fd;                     /* -1 for metrics_open_memory */
	struct metrics_file *f;     /* mapping of METRICS_FILE_SIZE bytes */
	struct metrics_slot *slot;  /* this process's; NULL if none free */
	uint64_t pid;
	uint64_t token;             /* process_token */
};

/* The bucket bounds of one histogram: n bounds in ns, increasing (or,
 * with tokens, in tokens). */
struct metrics_bounds {
	const uint64_t *ns;
	unsigned n;
	int tokens;                 /* a token-count histogram: bounds and
				     * sum are counts */
};

/*
 * Bounds per histogram, in enum metrics_hist order (metrics.c): vLLM's,
 * part of the file's layout hash.
 */
extern const struct metrics_bounds metrics_hist_bounds[METRICS_HIST_COUNT];
extern const struct metrics_bounds
    metrics_req_bounds[METRICS_REQ_HIST_COUNT];

/*
 * Sums each gauge (enum metrics_gauge order) over the slots of m's file
 * whose process is alive and that are not being claimed (metrics.h), into
 * sum[], wrapping at 2^64; *live gets the number of those slots. Reads
 * each word once, relaxed: a snapshot, not a consistent cut.
 */
void metrics_slot_sums(const struct metrics *m,
    uint64_t sum[METRICS_GAUGE_COUNT], uint64_t *live);

#endif /* TS_STORES_METRICS_FILE_H */
