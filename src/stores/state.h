/*
 * stores/state.h - the shared state file: per-stream counters that every thread
 * and every responder process (tokstream-ctl's TOKSTREAM_PROCS) reads and
 * writes, and that a killed process leaves readable. No SQLite: the file
 * is mmap'd MAP_SHARED, every field is a C11 atomic 64-bit word, and each
 * record has its own lock word, taken only by the writers of that record.
 *
 * File format (version 4, host byte order, documented in docs/OPERATIONS.md
 * "The state file"): a 128-byte header, then `capacity` records of 144
 * bytes.
 *   header: magic "TOKSTAT1" (8 bytes), version u32, record_size u32,
 *           capacity u32, pad u32, next_id u64, total_generated u64,
 *           total_streams u64, instance u64 (state_bind_instance),
 *           newest u64 (the highest id recorded), unrecorded u64 (streams
 *           that found no record free), then zero padding.
 *   record: lock u64 (bits 0-31 the pid of the process writing it, 0
 *           when none; bits 32-63 a count of the writes it has had), id
 *           u64 (0 = empty), requested u64, generated u64, status u64,
 *           pid u64, prompt_tokens u64, started_ms u64 (Unix epoch ms),
 *           ended_ms u64, kind u64, resumed_from u64, resume_index u64,
 *           key u64, wasted u64, queue_us u64, leave_us u64, flags u64
 *           (bits 0-7 cause, 8-15 phase, 16-47 cached tokens),
 *           from_instance u64 (resumed_from's instance, packed as in
 *           resume.h; 0: this server's own).
 *
 * Capacity: the opener asks for state_capacity_for() records, every
 * process's running streams plus STATE_HISTORY; the first process of a
 * server (alone on the file: no other handle holds it) sizes the file to
 * that, keeping the counters and the records; a later one uses the file
 * as it is. Stream ids are 1, 2, 3, ... across all processes; id N lives
 * in record (N - 1) % capacity. A record is never taken from a running
 * stream whose process lives: state_begin takes the next id while the
 * record of the one it holds is busy (up to STATE_PROBES ids; the ids it
 * skips are never used), and when all of them are, the stream runs
 * unrecorded with the last of them (counted in `unrecorded`).
 *
 * Updates and reuse: every write to a record (a new stream taking it, an
 * update of its fields) happens with the record's lock held, and an
 * update stores only when the record still holds its stream's id, read
 * under the lock (ids are never reused, so the id is the record's
 * generation). So an update cannot land in a record another stream has
 * taken. The lock word is also a seqlock for readers, who take no lock:
 * they copy the record between two loads of the lock word and retry when
 * it was held or changed (Boehm, "Can Seqlocks Get Along With Programming
 * Language Memory Models?", MSPC 2012: the writer's release fence after
 * taking it, the reader's acquire fence before the second load). A lock
 * left held by a process that died is taken over by the next writer.
 */
#ifndef TS_STORES_STATE_H
#define TS_STORES_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

#define STATE_FILE_NAME "state"
/* Records for finished streams beyond those every process may run at
 * once (state_capacity_for). */
#define STATE_HISTORY 4096u
/* The most records a file has: 1,048,576, 144 MiB. */
#define STATE_MAX_RECORDS (1u << 20)
/* Ids state_begin tries, each record busy with a running stream, before
 * the stream runs unrecorded. */
#define STATE_PROBES 16u

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

/* A new stream's fields (state_begin). */
struct state_start {
	enum state_kind kind;
	uint64_t requested;        /* max_tokens asked for */
	uint64_t prompt_tokens;
	uint64_t resumed_from;     /* the stream it resumes, 0 if none */
	uint64_t resume_index;     /* its first token index, 0 if none */
	uint64_t key;              /* resume key, 0 if none (resume.h) */
	uint64_t from_instance;    /* the instance resumed_from is
				    * another host's (packed as resume.h's);
				    * 0: this one */
};

struct state;

/*
 * The records a server wants: `running` streams (max_num_seqs +
 * max_waiting: those one process may hold at once, engine.h) in each of
 * `procs` responder processes, plus STATE_HISTORY for finished ones; at
 * most STATE_MAX_RECORDS, at least STATE_HISTORY.
 */
uint32_t state_capacity_for(uint32_t procs, uint32_t running);

/*
 * Opens (creating if needed) DIR/state, creating DIR (mode 0755) if it
 * is missing, sized for `records` records (1..STATE_MAX_RECORDS; other
 * values are taken as the nearest). Every handle holds a shared flock(2)
 * on the file for its lifetime. An opener that gets it exclusively is
 * alone: it re-initialises a file of another format or size, and resizes
 * one of another capacity, keeping the totals, next_id, the instance and
 * the records (the newest of those that meet in one record). An opener
 * that is not alone uses a valid file as it is, whatever its capacity
 * (state_capacity says what it got), and refuses one of another format
 * (TS_EFORMAT) without touching it. Other failures: TS_ESYS, TS_EINVAL
 * (DIR too long). On failure errbuf says why, naming the path.
 */
enum ts_err state_open(struct state **out, const char *dir,
    uint32_t records, char *errbuf, size_t errlen);

/*
 * The same counters in this process's memory only, `records` records (as
 * state_open takes them), for when the state file cannot be used
 * (read-only or full file system): the responder keeps serving, but other
 * processes do not see its streams. TS_ESYS if even the anonymous mapping
 * fails.
 */
enum ts_err state_open_memory(struct state **out, uint32_t records);

/*
 * Binds the file to this server's instance name (--instance, packed as
 * resume.h's; 0: unnamed), stored in the header: the records' ids are
 * that name's. A file of another name (a backend renamed over its run
 * directory) is emptied, so that its records are not answered under the
 * new name; *reset says whether it held any. Serialised across processes
 * with an open file description lock (fcntl(2) F_OFD_SETLKW, which does
 * not meet the handles' flock). TS_ESYS if the lock fails.
 */
enum ts_err state_bind_instance(struct state *st, uint64_t inst, int *reset);

/* Unmaps and closes; accepts NULL. */
void state_close(struct state *st);

/* The file's records (what state_open got). */
uint32_t state_capacity(const struct state *st);

/*
 * Starts a stream record: allocates the next id (never 0) into *id and
 * stores the stream's fields with status running and this process's pid.
 * Returns TS_OK; or TS_ELIMIT when STATE_PROBES records in a row held
 * running streams: the stream has its id all the same, but no record
 * (its updates are dropped, state_lookup does not find it), and the
 * header's unrecorded count grows by one.
 */
enum ts_err state_begin(struct state *st, const struct state_start *start,
    uint64_t *id);

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

/* Ends the stream with its final status. Each of these updates stores
 * only while the record holds stream `id` (see the top of this file). */
void state_end(struct state *st, uint64_t id, enum state_status status);

/*
 * Copies record `id` (0: the highest id recorded) into *out, a
 * consistent copy of one moment. Returns TS_OK, or TS_EINVAL when no such
 * stream is held (never started, unrecorded, or overwritten by a newer
 * one) or its record stayed busy (a writer that stopped mid-write, or one
 * that died there) through the reader's bounded retries.
 */
enum ts_err state_lookup(struct state *st, uint64_t id,
    struct state_record *out);

/* Tokens produced over all streams of all processes. */
uint64_t state_total_generated(struct state *st);
/* Streams started over all processes. */
uint64_t state_total_streams(struct state *st);
/* Streams that ran unrecorded (state_begin's TS_ELIMIT), all processes. */
uint64_t state_unrecorded(struct state *st);

/* "running", "done", "cancelled", "error". */
const char *state_status_name(enum state_status s);

#endif /* TS_STORES_STATE_H */
