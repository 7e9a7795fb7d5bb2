/*
 * stores/metrics.h - Prometheus metrics shared by every thread and every
 * responder process (spawn-fcgi -F N): GET /metrics may land on any
 * process, so all of them count into one mmap'd file, like the state file
 * (state.h). Updates and rendering take no lock (only opening does, a
 * flock): every field is a C11 atomic 64-bit word, updated with relaxed
 * fetch-adds; rendering reads a snapshot of each word.
 *
 * Names follow vLLM's (vllm:time_to_first_token_seconds, ...) with the
 * prefix "tokstream:", and so do the bucket bounds; every series carries
 * vLLM's model_name label. Rendered in vLLM's dialect
 * (metrics_render_dialect, --metrics-prefix vllm) the names are vLLM's
 * exactly, and the request-level histograms vLLM's dashboard reads are
 * added.
 *
 * File format (version 4, host byte order): DIR/metrics, 9216 bytes.
 *   header, 64 bytes: magic "TOKMETR1" (8), version u32, header_size u32
 *     (64), file_size u32, hist_count u32, hist_words u32, counter_count
 *     u32, reason_count u32, slot_count u32, layout u64 (FNV-1a 64 of the
 *     bucket bounds and the counts above), then zero padding. The magic
 *     is written last, so a crash while initialising leaves no valid file.
 *   4 histograms of 32 words (256 bytes), in enum metrics_hist order:
 *     word i < nbounds counts observations in (bound[i-1], bound[i]],
 *     word nbounds those above the last bound (le="+Inf" only), word 24
 *     is the sum of the observations in microseconds; the rest is zero.
 *     Buckets are stored non-cumulative and rendered cumulative; _count is
 *     the sum of the buckets, so it always equals the +Inf bucket.
 *   16 counter words (enum metrics_counter order, the rest zero), 8 finish
 *     reason words (enum metrics_reason order, the rest zero).
 *   METRICS_SLOTS process slots of 6 words: pid, running, waiting, token,
 *     kv_used, kv_blocks.
 *     pid 0 is a free slot; (1 << 32) | pid is a slot being claimed. A
 *     process claims one slot per handle when it opens the file (a free
 *     one, or one whose pid is gone: kill(pid, 0) fails with ESRCH) and
 *     releases it when it closes; rendering sums the gauges of the slots
 *     whose process is alive, so a responder killed with SIGKILL stops
 *     counting at once. The token (the pid in the high 32 bits, a clock
 *     hash below) tells a process its own slots from the leftovers of an
 *     earlier process with the same pid, which its first open releases.
 *     A pid reused by a process that is not a responder keeps the dead
 *     slot counted until that process exits (no start-time check).
 *   7 request histograms of 32 words (enum metrics_req_hist order), laid
 *     out as the 4 above; a token-count histogram's bounds are counts and
 *     its sum word is the sum of the counts. (After the slots, so the
 *     offsets of everything before are version 2's.)
 * Any change of this layout must change the version or the layout hash.
 *
 * Counters keep counting across restarts of the server (the file stays
 * in the state directory); Prometheus copes with counter resets anyway.
 */
#ifndef TS_STORES_METRICS_H
#define TS_STORES_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ts.h"

#define METRICS_FILE_NAME "metrics"
#define METRICS_SLOTS 128u      /* process slots: responders + spare */

/*
 * Latency histograms. Each observation is a duration in nanoseconds
 * (negative counts as 0); a value equal to a bucket's bound falls in that
 * bucket (Prometheus le is inclusive). The sum keeps microseconds
 * (rounded to the nearest), so it wraps only after 584,000 years.
 */
enum metrics_hist {
	/* tokstream:time_to_first_token_seconds: from the request's
	 * arrival to its first token written (vLLM's TTFT buckets,
	 * 0.001 s to 2560 s) */
	METRICS_TTFT,
	/* tokstream:inter_token_latency_seconds: between two consecutive
	 * tokens of one stream (vLLM's ITL buckets, 0.01 s to 80 s) */
	METRICS_ITL,
	/* tokstream:e2e_request_latency_seconds: from arrival to the end
	 * of the response, whatever the finish reason (vLLM's request
	 * latency buckets, 0.3 s to 7680 s) */
	METRICS_E2E,
	/* tokstream:request_queue_time_seconds: waiting for a decode slot
	 * (the same buckets as E2E, as vLLM does) */
	METRICS_QUEUE,
	METRICS_HIST_COUNT
};

/*
 * Request-level histograms, observed once per request when it ends
 * (metrics_observe_req), as vLLM's FinishedRequestStats
 * (vllm/v1/metrics/loggers.py): durations in ns with vLLM's request
 * latency buckets (0.3 s to 7680 s) or ITL buckets (TPOT), token counts
 * with 1-2-5 buckets from 1 to 1,000,000 (vLLM's build_1_2_5_buckets up
 * to max_model_len). Rendered in vLLM's dialect only.
 */
enum metrics_req_hist {
	/* request_prefill_time_seconds: slot taken -> first token */
	METRICS_REQ_PREFILL,
	/* request_decode_time_seconds: first token -> last token */
	METRICS_REQ_DECODE,
	/* request_inference_time_seconds: slot taken -> last token */
	METRICS_REQ_INFERENCE,
	/* request_time_per_output_token_seconds: decode time over the
	 * tokens after the first (0 for a request of one token or none) */
	METRICS_REQ_TPOT,
	/* request_prompt_tokens, request_generation_tokens (EOS included)
	 * and request_max_num_generation_tokens (here each sequence is its
	 * own request: the same as generation for n = 1) */
	METRICS_REQ_PROMPT_TOKENS,
	METRICS_REQ_GENERATION_TOKENS,
	METRICS_REQ_MAX_GENERATION_TOKENS,
	METRICS_REQ_HIST_COUNT
};

/* Counters, each a u64 that only grows (wrapping at 2^64). */
enum metrics_counter {
	/* tokstream:generation_tokens_total: tokens generated */
	METRICS_GENERATION_TOKENS,
	/* tokstream:prompt_tokens_total: prompt tokens of admitted
	 * requests */
	METRICS_PROMPT_TOKENS,
	/* tokstream:wasted_tokens_total: tokens generated that no client
	 * received (it went away first; no vLLM equivalent) */
	METRICS_WASTED_TOKENS,
	/* tokstream:requests_rejected_total{reason="queue_full"}:
	 * requests refused with 429 because the queue was full */
	METRICS_REJECTED_QUEUE_FULL,
	/* tokstream:prefix_cache_queries_total: prompt tokens looked up in
	 * the prefix cache; tokstream:prefix_cache_hits_total: of those,
	 * found (vLLM's prefix_cache_queries and _hits) */
	METRICS_PREFIX_QUERIES,
	METRICS_PREFIX_HITS,
	/* tokstream:injected_failures_total{type=...}: one counter per
	 * failure kind of handlers/inject.h, in enum inject_kind order
	 * (metrics_injected) */
	METRICS_INJECTED,
	METRICS_INJECTED_LAST = METRICS_INJECTED + 7,
	METRICS_COUNTER_COUNT
};

/*
 * Finish reasons of tokstream:request_success_total{finished_reason=...}.
 * Like vLLM, "success" counts every request that ended, aborted ones too;
 * tokstream adds "error" for an injected or failed generation.
 */
enum metrics_reason {
	METRICS_STOP,    /* "stop": the generator ended the stream */
	METRICS_LENGTH,  /* "length": max_tokens reached */
	METRICS_ABORT,   /* "abort": the client went away (TS_EHUP) */
	METRICS_ERROR,   /* "error": an injected or a real failure */
	METRICS_REASON_COUNT
};

/* Per-process gauges, summed over live processes when rendered. */
enum metrics_gauge {
	/* tokstream:num_requests_running: requests in a decode slot */
	METRICS_RUNNING,
	/* tokstream:num_requests_waiting: requests queued for one */
	METRICS_WAITING,
	/* tokstream:kv_cache_usage_perc: used blocks over blocks, summed
	 * over live processes (vLLM's kv_cache_usage_perc) */
	METRICS_KV_USED,
	METRICS_KV_BLOCKS,
	METRICS_GAUGE_COUNT
};

struct metrics;

/*
 * Opens (creating if needed) DIR/metrics, creating DIR (mode 0755) if it
 * is missing, and claims a process slot. Every open handle holds a shared
 * flock(2) on the file; the opener that gets it exclusively is alone and
 * (re)initialises a file that is new, truncated or of another format
 * (it holds only counters). A file of another format that other processes
 * hold open is left alone: TS_EFORMAT. Other failures: TS_ESYS, or
 * TS_EINVAL when DIR/metrics is over 4095 bytes. On failure *out is
 * NULL and errbuf holds one line naming the path and the cause; the
 * caller should log it and use metrics_open_memory(). On success *out
 * is the caller's, to release with metrics_close(); dir is only read.
 *
 * A handle belongs to the process that opened it: after fork(), open
 * another (a child may metrics_close() the inherited one: that frees it
 * without releasing the parent's slot). If all METRICS_SLOTS slots are
 * held by live processes the open succeeds, but this handle's gauges
 * are not reported.
 */
enum ts_err metrics_open(struct metrics **out, const char *dir,
    char *errbuf, size_t errlen);

/*
 * The same metrics in this process's memory only, for when the file
 * cannot be used: /metrics then shows this process's counts alone.
 * TS_ESYS if even the anonymous mapping fails.
 */
enum ts_err metrics_open_memory(struct metrics **out);

/* Releases the process slot, unmaps and closes; accepts NULL. */
void metrics_close(struct metrics *m);

/*
 * The update functions below are lock-free, safe from any thread, and do
 * nothing when m is NULL or the enum is out of range (so a caller without
 * metrics needs no branches).
 */

/* Records one observation of ns nanoseconds in histogram h. */
void metrics_observe(struct metrics *m, enum metrics_hist h, int64_t ns);

/* Records one request-level observation v in h: nanoseconds for a
 * duration (negative counts as 0), a count for a token histogram. */
void metrics_observe_req(struct metrics *m, enum metrics_req_hist h,
    int64_t v);

/* Adds n to counter c. */
void metrics_add(struct metrics *m, enum metrics_counter c, uint64_t n);

/* The failure kinds metrics_injected counts (inject.h's 1..8). */
#define METRICS_INJECTED_KINDS 8

/* Counts one injected failure of kind `kind` (enum inject_kind, 1..8;
 * others are ignored). */
void metrics_injected(struct metrics *m, int kind);

/* Counts one request that finished for reason r. */
void metrics_finished(struct metrics *m, enum metrics_reason r);

/* Sets this process's gauge g to n. */
void metrics_gauge_set(struct metrics *m, enum metrics_gauge g, int64_t n);

/* Adds delta (may be negative) to this process's gauge g: race-free when
 * several threads each count their own requests in and out. */
void metrics_gauge_add(struct metrics *m, enum metrics_gauge g,
    int64_t delta);

/*
 * Appends every metric to `out` in the Prometheus text exposition format
 * 0.0.4 (Content-Type: text/plain; version=0.0.4): per family "# HELP",
 * "# TYPE", then its samples, in a fixed order. Counters, gauges and
 * bucket counts are integers; le bounds and sums are decimal seconds
 * ("0.001", "1.0", "12.345678"). Also renders tokstream:responder_processes,
 * the number of live slots. Returns TS_OK, TS_ELIMIT when out's size
 * limit is reached (out is then as it was), TS_EINVAL if m is NULL.
 * About 8 KiB. (metrics_prom.c; the rest of this header is metrics.c.)
 * The "tokstream" dialect of metrics_render_dialect without a model
 * name, byte for byte.
 */
enum ts_err metrics_render(const struct metrics *m, struct ts_buf *out);

/* How the metrics are named (--metrics-prefix). */
struct metrics_dialect {
	const char *prefix;      /* "tokstream" or "vllm": NAME is
				  * PREFIX:name */
	const char *model_name;  /* NULL: no label; else every series
				  * carries model_name="..." (escaped as a
				  * label value), vLLM's label */
	int request_hists;       /* 1: the request-level histograms too
				  * (enum metrics_req_hist) */
};

/* The dialect --metrics-prefix PREFIX names: "tokstream" (the default)
 * or "vllm" (vLLM's names and the request-level histograms). In both,
 * every series carries model_name="MODEL_NAME" as vLLM's do (vLLM's
 * Grafana dashboard filters every panel on it); NULL: no label. */
void metrics_dialect_of(struct metrics_dialect *d, const char *prefix,
    const char *model_name);

/*
 * metrics_render in a dialect. With "vllm" the families are vLLM's
 * (vllm/v1/metrics/loggers.py; the names its Grafana dashboard and the
 * Gateway API Inference Extension's endpoint picker read), and
 * tokstream's own (wasted_tokens_total, requests_rejected_total,
 * injected_failures_total, responder_processes) keep their names under
 * the prefix. Same results as metrics_render; a model name over 256
 * bytes is TS_EINVAL.
 */
enum ts_err metrics_render_dialect(const struct metrics *m,
    const struct metrics_dialect *d, struct ts_buf *out);

/* Writes label="value" into dst (cap bytes), the value escaped as the
 * Prometheus text format wants (backslash, double quote, line feed as
 * \\, \", \n); returns its length, or 0 (dst "") when value is over
 * 256 bytes or cap is too small (label + 2 x value + 4 fits). For a
 * series rendered beside metrics_render_dialect's. */
size_t metrics_label(char *dst, size_t cap, const char *label,
    const char *value);

#endif /* TS_STORES_METRICS_H */
