/*
 * req.h - one GET /stream request and everything measured on it, for
 * every tokbench command: its libcurl easy handle and callbacks, the
 * incremental SSE parse of a 200 answer as its bytes arrive
 * (sse_parse.h), the time of each token event, the X-Request-Id, and what
 * became of the request when it ended. The driver (load_drive.h) starts
 * and ends requests; what each outcome means is the command's (measure.c
 * prints one line, cmd_load.c counts it).
 *
 * Times are ms on CLOCK_MONOTONIC since t0, taken just before the request
 * is handed to libcurl; a chunk is time-stamped when libcurl hands its
 * bytes over, and every SSE event in it gets that time:
 *   arrival_ms[i]  token event i (headers, comments and [DONE] are not
 *                  tokens), so TTFT is arrival_ms[0] and the ITL samples
 *                  are the gaps between consecutive arrivals;
 *   done_ms        data: [DONE], the end of the stream;
 *   e2e_ms         the end of the transfer.
 */
#ifndef BENCH_REQ_H
#define BENCH_REQ_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "bench/capture.h"
#include "bench/client.h"
#include "bench/load_report.h"
#include "bench/sse_parse.h"

#define REQ_ID_MAX 256                  /* longest X-Request-Id kept */
#define REQ_BODY_MAX (64 * 1024)        /* kept of a non-200 answer */

/* What kind of SSE event or line an event-log entry is. */
enum req_kind {
	REQ_TOKEN,
	REQ_DONE,
	REQ_ERROR,
	REQ_COMMENT,
	REQ_OTHER
};

/* One entry of the event log (kept only when asked for): copied, for
 * printing after the transfer, when it cannot delay later events. */
struct req_logent {
	double ms;
	enum req_kind kind;
	char *text;             /* data (or comment text), owned */
	size_t len;
};

/* What a request's events are: tokstream's lab stream, an OpenAI API
 * stream (req_set_v1()), Anthropic's named events (req_set_messages())
 * or Ollama's NDJSON lines (req_set_ollama()). */
enum req_api {
	REQ_API_LAB,            /* data: {"token":...} ... data: [DONE] */
	REQ_API_COMPLETIONS,    /* text_completion chunks, choices[0].text */
	REQ_API_CHAT,           /* chat.completion.chunk, delta.content */
	REQ_API_MESSAGES,       /* Anthropic: content_block_delta ...
				 * message_stop */
	REQ_API_OLLAMA_CHAT,    /* NDJSON, message.content ... done:true */
	REQ_API_OLLAMA_GENERATE /* NDJSON, response ... done:true */
};

/* What a request asks of a model that reasons (0 / NULL: nothing). */
struct req_reasoning {
	long thinking_budget;   /* Anthropic: thinking.budget_tokens */
	const char *effort;     /* OpenAI chat: reasoning_effort */
	int think;              /* Ollama: "think": true */
};

/* One /stream (or /v1) request; create it with req_new(). */
struct req {
	/* settings */
	CURL *curl;             /* NULL once the request has ended */
	char *url;              /* owned; see req_set_url() */
	enum req_api api;
	char *post;             /* a POST request's JSON body; owned */
	const struct req_reasoning *reasoning;  /* borrowed; NULL none */
	size_t stop_after;      /* hang up after this many tokens; 0 never */
	int keep_log;           /* fill log[] */
	long prompt_tokens;     /* the owner's plan, for its report */
	uint64_t plan_index;    /* the owner's plan's index (load_plan) */
	int warmup;             /* the owner's: a warm-up request */
	json_t *messages;       /* borrowed; see req_set_messages_array() */
	struct capture *cap;    /* tokbench record: the answer's bytes and
				 * headers as they arrive; NULL: not kept.
				 * Owned (freed with q). When it cannot
				 * keep a chunk (its budget is spent) the
				 * transfer ends. */
	/* transfer */
	struct sse_parser parser;
	struct timespec t0;     /* just before libcurl got the request */
	double chunk_ms;        /* arrival of the bytes being parsed */
	int status_known;
	long status;
	char errbuf[CURL_ERROR_SIZE];
	struct client_body body;        /* of a non-200 answer */
	/* what was measured */
	char request_id[REQ_ID_MAX + 1];
	size_t request_id_len;
	int request_id_bad;     /* too long, empty or has control bytes */
	double *arrival_ms;     /* token i's arrival: a /v1 stream's i-th
				 * content delta (a chunk with non-empty
				 * text; role-only and finish chunks are
				 * not tokens) */
	size_t ntokens, arrival_cap;
	long usage_prompt;      /* /v1: the usage chunk's prompt_tokens and */
	long usage_completion;  /* completion_tokens (Anthropic: the prompt
				 * of message_start, message_delta's
				 * output_tokens; Ollama: the final line's
				 * prompt_eval_count, eval_count); -1
				 * without one */
	long usage_cached;      /* the prompt tokens the server's prefix
				 * cache served: /v1 usage.
				 * prompt_tokens_details.cached_tokens,
				 * Anthropic's cache_read_input_tokens; -1
				 * without one */
	double reason_ms;       /* the first reasoning token's arrival (a
				 * non-empty thinking_delta, delta.reasoning
				 * or reasoning_content, message.thinking);
				 * -1 if none */
	size_t nreason;         /* reasoning deltas seen */
	struct ts_buf line;     /* Ollama: the NDJSON line being read */
	size_t ncomments;
	int done;               /* saw the end: data: [DONE], Anthropic's
				 * message_stop, Ollama's "done":true */
	double done_ms;         /* its arrival; -1 if none */
	int stopped;            /* we hung up after stop_after tokens */
	char *error_text;       /* first error event, sanitised; owned */
	size_t error_after;     /* tokens before that error event */
	char fail[512];         /* protocol violation; stopped the transfer */
	struct req_logent *log;
	size_t nlog, log_cap;
	/* the end, from req_finish() */
	CURLcode result;
	curl_off_t connect_us;  /* CURLINFO_CONNECT_TIME_T; 0 no connection */
	double e2e_ms;
	/* the driver's list of requests in flight */
	struct req *prev, *next;
};

/*
 * Creates a request and its easy handle with every option but the URL
 * (client_curl_common(), the callbacks, CURLOPT_PRIVATE = the request):
 * the whole transfer is limited to timeout_ms; after stop_after token
 * events (0 = never) the transfer is ended on purpose, with a TCP reset
 * when `rst` (else a FIN); keep_log keeps every event for printing.
 * Returns NULL after printing one line when libcurl refuses.
 */
struct req *req_new(long timeout_ms, size_t stop_after, int rst,
    int keep_log);

/*
 * The URL of a stream: BASE/stream?prompt=P&max_tokens=N, P the first
 * prompt_len bytes of `prompt` (already percent-encoded), plus tpot_ms=
 * and prefill_ms= (the server's per-request latency overrides) when they
 * are >= 0. Caller frees.
 */
char *req_stream_url(const char *base, const char *prompt,
    size_t prompt_len, long max_tokens, long tpot_ms, long prefill_ms);

/* Sets the URL of the request; takes ownership of `url` (freed with q). */
void req_set_url(struct req *q, char *url);

/*
 * Makes q a streamed POST to an OpenAI endpoint (OpenAI API reference:
 * completions or chat completions, stream true, stream_options.
 * include_usage): the body {"model","prompt" or "messages":[{"role":
 * "user","content"}],"max_tokens","stream":true,"stream_options":
 * {"include_usage":true}} plus "ignore_eos":true when asked and tpot_ms /
 * prefill_ms (tokstream's extensions) when >= 0. The caller sets the
 * URL (BASE/v1/...) and the shared headers (Content-Type, Authorization).
 */
void req_set_v1(struct req *q, enum req_api api, const char *model,
    const char *prompt, long max_tokens, int ignore_eos, long tpot_ms,
    long prefill_ms);

/*
 * Makes the body that req_set_v1(), req_set_messages() or
 * req_set_ollama() builds next carry the reasoning request r (borrowed:
 * it must outlive q's body setting; NULL for none): "reasoning_effort"
 * (OpenAI chat, CreateChatCompletionRequest), "thinking":{"type":
 * "enabled","budget_tokens":N} (Anthropic, ThinkingConfigEnabled) or
 * "think":true (Ollama's ChatRequest / GenerateRequest), each only for
 * its API and only when set. Call it before the body setter.
 */
void req_set_reasoning(struct req *q, const struct req_reasoning *r);

/*
 * Makes the body that req_set_v1(), req_set_messages() or
 * req_set_ollama() builds next carry the array m (borrowed: it must
 * outlive the body setting; NULL for none) as its "messages", in place of
 * the one user message of the prompt, where the body has "messages"
 * (chat completions, Anthropic's Messages, Ollama's /api/chat). Call it
 * before the body setter.
 */
void req_set_messages_array(struct req *q, json_t *m);

/*
 * Makes q a streamed POST to Anthropic's Messages API (API reference,
 * "Create a Message"; @anthropic-ai/sdk resources/messages/messages.d.ts,
 * MessageCreateParamsStreaming): {"model","max_tokens","messages":
 * [{"role":"user","content"}],"stream":true} plus tpot_ms / prefill_ms
 * (tokstream's extensions) when >= 0. Its named events are read as
 * RawMessageStreamEvent: TTFT at the first non-empty text_delta, TTFR at
 * the first thinking_delta, the end at message_stop. The caller sets the
 * URL and the headers (x-api-key, anthropic-version).
 */
void req_set_messages(struct req *q, const char *model, const char *prompt,
    long max_tokens, long tpot_ms, long prefill_ms);

/*
 * Makes q a streamed POST to Ollama's /api/chat (api == REQ_API_OLLAMA_
 * CHAT: "messages") or /api/generate ("prompt"), after ollama's
 * docs/api.md and api/types.go: {"model",...,"stream":true,"options":
 * {"num_predict":max_tokens}} plus tpot_ms / prefill_ms when >= 0. The
 * answer is NDJSON, one object a line: TTFT at the first non-empty
 * message.content (response), TTFR at the first message.thinking
 * (thinking), the end at "done":true with eval_count.
 */
void req_set_ollama(struct req *q, enum req_api api, const char *model,
    const char *prompt, long max_tokens, long tpot_ms, long prefill_ms);

/*
 * Records the end of the transfer, with libcurl's result cc: e2e_ms, the
 * status when no body came, the connect time; then cleans up the easy
 * handle, so that the socket is closed at once. The caller has removed it
 * from any multi handle.
 */
void req_finish(struct req *q, CURLcode cc);

/* What became of an ended request. */
enum req_fate {
	REQ_COMPLETED,          /* its end event ([DONE], message_stop,
				 * done:true) without an error, clean end */
	REQ_STOPPED,            /* we hung up after stop_after tokens */
	REQ_FAILED              /* *kind says how (load_report.h) */
};

/*
 * Sorts an ended request into its fate, in this order: stopped on
 * purpose, a protocol violation, no answer (unreachable, timeout, other
 * transport failure), a status other than 200, an error event, no
 * [DONE] (truncated, or the timeout), a failure after [DONE] (truncated).
 * For REQ_FAILED, *kind gets the kind.
 */
enum req_fate req_fate(const struct req *q, enum load_fail *kind);

/* libcurl's description of how the transfer ended: its error buffer, or
 * the text of its result code. Borrowed from q or libcurl. */
const char *req_detail(const struct req *q);

/* Frees a request and its easy handle; accepts NULL. The caller has
 * unlinked it from the driver's list. */
void req_free(struct req *q);

#endif /* BENCH_REQ_H */
