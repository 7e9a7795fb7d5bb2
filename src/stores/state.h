/*
 * stores/state.h - the shared state file: per-stream counters that every thread
 * and every responder process (spawn-fcgi -F N) reads and writes, and
 * that a killed process leaves readable. No SQLite, no locks on the hot
 * path: the file is mmap'd MAP_SHARED and every field is a lock-free C11
 * atomic 64-bit word.
 *
 * File format (version 3, host byte order, documented in docs/OPERATIONS.md "The state
 * file"): a 128-byte header, then STATE_CAPACITY records of 136 bytes.
 *   header: magic "TOKSTAT1" (8 bytes), version u32, record_size u32,
 *           capacity u32, pad u32, next_id u64, total_generated u64,
 *           total_streams u64, instance u64 (state_bind_instance), then
 *           zero padding.
 *   record: id u64 (0 = empty), requested u64, generated u64, status u64,
 *           pid u64, prompt_tokens u64, started_ms u64 (Unix epoch ms),
 *           ended_ms u64, kind u64, resumed_from u64, resume_index u64,
 *           key u64, wasted u64, queue_us u64, leave_us u64, flags u64
 *           (bits 0-7 cause, 8-15 phase, 16-47 cached tokens),
 *           from_instance u64 (resumed_from's instance, packed as in
 *           resume.h; 0: this server's own).
 * Stream ids are 1, 2, 3, ... across all processes; id N lives in record
 * (N - 1) % capacity, so the newest `capacity` streams can be looked up.
 *
 * Torn reads: a record is (re)claimed by storing id 0, filling it, then
 * publishing the id with release order; readers load the id with acquire,
 * copy, and re-check the id. generated is final once status is no longer
 * running (status is stored with release after the last generated update).
 */
#ifndef TS_STORES_STATE_H
#define TS_STORES_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

#define STATE_CAPACITY 4096u
#define STATE_FILE_NAME "state"

enum state_status {
	STATE_RUNNING = 1,
	STATE_DONE = 2,
	STATE_CANCELLED = 3,   /* the client went away */
	STATE_ERROR = 4        /* ended by an error (or its process died) */
};

enum state_kind {
	STATE_KIND_STREAM = 1,     /* GET /stream */
	STATE_KIND_GENERATE = 2    /* POST /generate */
};

/* Where a running sequence is (engine.h). */
enum state_phase {
	STATE_PHASE_WAITING = 1,   /* in the waiting queue, no slot yet */
	STATE_PHASE_PREFILL = 2,   /* holds a slot, prefill running */
	STATE_PHASE_DECODE = 3     /* in the batch, one token per step */
};

/* Why a sequence was cancelled. */
enum state_cause {
	STATE_CAUSE_NONE = 0,
	STATE_CAUSE_CLIENT_GONE = 1,  /* a failed write or a hang-up */
	STATE_CAUSE_WRITE_STALL = 2,  /* the client stopped reading */
	STATE_CAUSE_SHUTDOWN = 3,     /* the server is stopping */
	STATE_CAUSE_SERVER_ERROR = 4, /* the server ended it: encoding
				       * failed */
	STATE_CAUSE_OUTPUT_LIMIT = 5  /* the server ended it: the response
				       * outgrew its buffer */
};

/* What the engine knows when a sequence leaves. */
struct state_finish {
	uint64_t wasted;           /* tokens produced no client received */
	uint64_t leave_us;         /* client gone -> left the batch, us */
	enum state_cause cause;
};

/* A consistent copy of one record. */
struct state_record {
	uint64_t id;
	uint64_t requested;        /* max_tokens asked for */
	uint64_t generated;        /* tokens the server produced */
	enum state_status status;
	uint64_t pid;              /* responder process that owns it */
	uint64_t prompt_tokens;
	uint64_t started_ms;       /* Unix epoch, ms */
	uint64_t ended_ms;         /* 0 while running */
	enum state_kind kind;
	uint64_t resumed_from;     /* stream id this one resumes, 0 if none */
	uint64_t from_instance;    /* the instance that sent resumed_from
				    * (another host's, resume.h); 0: this */
	uint64_t resume_index;     /* first token index it generated */
	uint64_t key;              /* resume key of its parameters, 0 if
				    * none (resume.h) */
	uint64_t wasted;           /* see struct state_finish */
	uint64_t queue_us;         /* arrival -> slot (prefill start), us */
	uint64_t leave_us;
	enum state_cause cause;
	enum state_phase phase;
	int owner_gone;            /* running, but its process is dead */
	uint32_t cached_tokens;    /* prompt tokens the prefix cache had */
};

struct state;

/*
 * Opens (creating if needed) DIR/state, creating DIR (mode 0755) if it
 * is missing. Concurrent openers are serialised with flock(2); a file of
 * another format or size is re-initialised (it lives under /run and holds
 * only counters). On failure returns TS_ESYS or TS_EFORMAT with a message
 * naming the path and the cause in errbuf.
 */
enum ts_err state_open(struct state **out, const char *dir, char *errbuf,
    size_t errlen);

/*
 * The same counters in this process's memory only, for when the state
 * file cannot be used (read-only or full file system): the responder keeps
 * serving, but other processes do not see its streams. TS_ESYS if even
 * the anonymous mapping fails.
 */
enum ts_err state_open_memory(struct state **out);

/*
 * Binds the file to this server's instance name (--instance, packed as
 * resume.h's; 0: unnamed), stored in the header: the records' ids are
 * that name's. A file of another name (a backend renamed over its run
 * directory) is emptied, so that its records are not answered under the
 * new name; *reset says whether it held any. Serialised across processes
 * with flock. TS_ESYS if the lock fails.
 */
enum ts_err state_bind_instance(struct state *st, uint64_t inst, int *reset);

/* Unmaps and closes; accepts NULL. */
void state_close(struct state *st);

/*
 * Starts a stream record: allocates the next id (never 0), stores the
 * request's fields with status running and this process's pid. A resumed
 * stream names the stream it resumes and its first token index (0, 0
 * otherwise). Cannot fail once the state is open.
 */
uint64_t state_begin(struct state *st, enum state_kind kind,
    uint64_t requested, uint64_t prompt_tokens, uint64_t resumed_from,
    uint64_t resume_index, uint64_t key);

/* Records that the stream resumes one of another instance (a packed
 * resume.h name; resumed_from is that instance's stream id). Stored right
 * after state_begin, before any token. */
void state_set_from_instance(struct state *st, uint64_t id, uint64_t inst);

/* Adds n produced tokens to the stream and to total_generated. */
void state_add_generated(struct state *st, uint64_t id, uint64_t n);

/* Records how many of the prompt's tokens the prefix cache had. */
void state_set_cached(struct state *st, uint64_t id, uint32_t cached);

/* Records the sequence's phase; entering prefill also stores the time it
 * waited for a slot (queue_us, microseconds). */
void state_set_phase(struct state *st, uint64_t id, enum state_phase phase,
    uint64_t queue_us);

/* Stores how the sequence left (before state_end publishes it). */
void state_set_finish(struct state *st, uint64_t id,
    const struct state_finish *fin);

/* Ends the stream with its final status. */
void state_end(struct state *st, uint64_t id, enum state_status status);

/*
 * Copies record `id` (0: the most recently started stream) into *out.
 * Returns TS_OK, or TS_EINVAL when no such stream is held (never started,
 * or overwritten by a newer one).
 */
enum ts_err state_lookup(struct state *st, uint64_t id,
    struct state_record *out);

/* Tokens produced over all streams of all processes. */
uint64_t state_total_generated(struct state *st);
/* Streams started over all processes. */
uint64_t state_total_streams(struct state *st);

/* "running", "done", "cancelled", "error". */
const char *state_status_name(enum state_status s);

#endif /* TS_STORES_STATE_H */
