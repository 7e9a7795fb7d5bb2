/*
 * trace/trace.h - tokstream's trace files, version 1 (docs/TOKBENCH.md,
 * "The trace format, version 1"): what `tokbench record` writes and what
 * the server's replay and the latency-model fit read. Knows only
 * common/ (and jansson).
 *
 * A trace is JSONL, one JSON object a line, "\n" after each: a header
 * line ({"type":"header","tokstream_trace":1,...}), one line per request
 * in the order they started ({"type":"request",...}), and last the run's
 * concurrency ({"type":"concurrency","samples":[[t_us,n],...]}). Times
 * are integers in microseconds on CLOCK_MONOTONIC: a request's start_us
 * from the run's start, everything else of a request (end_us, each
 * chunk's and token event's t_us) from the request's own start. Bytes
 * are a JSON string when they are valid UTF-8, else {"b64":"..."}
 * (RFC 4648 base64, padded); a request body that is not UTF-8 goes as
 * "body_b64" instead of "body". Readers ignore keys and line types they
 * do not know (forward compatible within version 1).
 *
 * The reader loads a whole file into struct trace, bounded by a size the
 * caller gives; the encoders build one line into a caller's ts_buf and do
 * no I/O; the writer puts lines into a file.
 */
#ifndef TS_TRACE_TRACE_H
#define TS_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/ts.h"

/* The version this code writes and the only one it reads. */
#define TRACE_VERSION 1

/* One read of a response body: its bytes (owned; len may be 0) and its
 * arrival, us from the request's start. bytes is NUL-terminated one past
 * len, for convenience; the bytes themselves may hold NULs. */
struct trace_chunk {
	int64_t t_us;
	unsigned char *bytes;
	size_t len;
};

/* One response header as received: name and value without the line end
 * or the blanks around the value (owned, NUL-terminated; the bytes may
 * be anything but NUL and line ends). */
struct trace_hdr {
	char *name;
	size_t name_len;
	char *value;
	size_t value_len;
};

/* One SSE event (or NDJSON line) that carried tokens: its arrival, us
 * from the request's start, and the tokens in it (1 when the client
 * could not tell). */
struct trace_token_event {
	int64_t t_us;
	long n;
};

/* One request of a trace. Counts are -1 where the file has none (null or
 * absent). Every pointer is owned by the struct trace it belongs to. */
struct trace_request {
	long i;                 /* its index, in start order */
	int64_t start_us;       /* its start, from the run's start */
	int64_t end_us;         /* its end, from its own start */
	char *method;           /* "POST", "GET" */
	char *path;             /* path and query, as sent ("/stream?..."),
				 * the target's base URL left out */
	unsigned char *body;    /* as sent (NUL-terminated one past
				 * body_len); "" for none */
	size_t body_len;
	long status;            /* HTTP status; 0: no response */
	struct trace_hdr *headers;      /* response headers, in order */
	size_t nheaders;
	struct trace_chunk *chunks;     /* body reads, in order */
	size_t nchunks;
	struct trace_token_event *token_events;
	size_t ntoken_events;
	long prompt_tokens;     /* usage, or the client's count; -1 none */
	long output_tokens;     /* usage, or the client's count; -1 none */
	long cached_tokens;     /* usage's cached prompt tokens; -1 null */
	int warmup;             /* a warm-up request (left out of reports) */
	char *error;            /* what went wrong, NULL when nothing */
};

/* One concurrency sample: requests in flight from t_us (us from the
 * run's start) on. */
struct trace_sample {
	int64_t t_us;
	long n;
};

/*
 * A whole trace: the header's fields (strings owned, "" when absent),
 * its requests in file order, the concurrency samples (none when the
 * file has no concurrency line: a run that did not end).
 */
struct trace {
	long version;           /* tokstream_trace: TRACE_VERSION */
	char *tool;             /* "tokbench record" */
	char *created;          /* "2026-12-06T11:00:00Z" */
	char *target;           /* the base URL recorded against */
	char *endpoint;         /* "/v1/chat/completions", ... */
	json_t *options;        /* the header's "options" object (owned
				 * reference; an empty object when absent) */
	struct trace_request *requests;
	size_t nrequests;
	struct trace_sample *samples;
	size_t nsamples;
	int has_concurrency;    /* the file had its concurrency line */
};

/* Where a file was refused: the line (1-based; 0 for the file as a
 * whole) and what is wrong, one line of text. */
struct trace_error {
	long line;
	char text[256];
};

/*
 * Loads the trace file `path` whole into *t (zeroed first; free it with
 * trace_free() whatever the result). The file may be at most max_bytes
 * long; the struct then takes a small multiple of that. Returns TS_OK,
 * or with *err filled (the text names the file's problem, not the path):
 *   TS_ESYS     the file cannot be opened or read (errno's text);
 *   TS_ELIMIT   the file is over max_bytes;
 *   TS_EFORMAT  the first line is not a header, its tokstream_trace is
 *               not 1 (the text names the version found), a line is not
 *               a JSON object or a field has the wrong type or value
 *               (err->line says which line, the text which field).
 */
enum ts_err trace_load(const char *path, size_t max_bytes, struct trace *t,
    struct trace_error *err);

/* trace_load() on the bytes (buf, len) of a file already in memory
 * (borrowed); the same results but TS_ESYS. */
enum ts_err trace_load_mem(const char *buf, size_t len, size_t max_bytes,
    struct trace *t, struct trace_error *err);

/* Frees everything a trace holds and zeroes it; accepts a zeroed one. */
void trace_free(struct trace *t);

/*
 * The encoders: each appends one line, "\n" included, to *out. They read
 * the struct and do no I/O. Returns TS_OK, or TS_ELIMIT when the line
 * does not fit under out->max (out is then unchanged). Strings in the
 * structs are written as JSON strings when valid UTF-8, else as
 * {"b64":...} (the body as "body_b64"). Counts below 0 are written as
 * null (cached_tokens) or left out (prompt_tokens, output_tokens).
 */

/* The header line of t: version TRACE_VERSION, tool, created, target,
 * endpoint, options (t->options, or {} when NULL). */
enum ts_err trace_encode_header(const struct trace *t, struct ts_buf *out);

/* A request line. */
enum ts_err trace_encode_request(const struct trace_request *r,
    struct ts_buf *out);

/* The concurrency line of samples (s, n). */
enum ts_err trace_encode_concurrency(const struct trace_sample *s,
    size_t n, struct ts_buf *out);

/*
 * The writer: lines into a file, in the order given. trace_writer_open()
 * creates or truncates `path` ("-": stdout); trace_writer_put() writes
 * (line, len) as it is (an encoder's output); trace_writer_close()
 * flushes and closes it. Each returns TS_OK or TS_ESYS, with the errno of
 * the first failure kept in w->saved_errno (later puts do nothing and
 * fail). trace_writer_close() accepts a writer that failed to open.
 */
struct trace_writer {
	FILE *f;
	int is_stdout;
	int saved_errno;        /* 0, or the first failure's errno */
	uint64_t bytes;         /* written so far */
};

enum ts_err trace_writer_open(struct trace_writer *w, const char *path);
enum ts_err trace_writer_put(struct trace_writer *w, const char *line,
    size_t len);
enum ts_err trace_writer_close(struct trace_writer *w);

/*
 * Helpers the encoders use, for a caller that builds its own objects:
 * (p, len) as a JSON string when valid UTF-8 (NULs allowed), else
 * {"b64":"..."}; a new reference, never NULL (aborts on out of memory).
 */
json_t *trace_bytes_json(const void *p, size_t len);

#endif /* TS_TRACE_TRACE_H */
