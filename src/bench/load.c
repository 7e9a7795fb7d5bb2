/*
 * load.c - `tokbench load`: many /stream requests at once, measured like
 * vLLM's `vllm bench serve` (definitions in load_report.h).
 *
 * One thread drives every request through the libcurl multi interface
 * (curl_multi_perform + curl_multi_poll), so hundreds of open streams cost
 * a socket and a small struct each. Each response is fed to the
 * incremental SSE parser (sse_parse.h) as its bytes arrive, and every
 * token event is time-stamped with CLOCK_MONOTONIC in the write callback,
 * i.e. when libcurl hands the bytes over, as tokbench's other commands do.
 *
 * Traffic:
 *   closed loop  --concurrency C: C requests in flight; each one that
 *                ends starts the next.
 *   open loop    --rate R: Poisson arrivals, exponential inter-arrival
 *                times (mean 1/R s) from a PRNG seeded by --seed; the
 *                first request starts at once. With --max-concurrency M an
 *                arrival waits while M requests are in flight, and its
 *                TTFT starts when it is sent (as vLLM's semaphore does).
 * Bounds: --requests N (requests started) and/or --duration S (no request
 * starts after S seconds; arrivals still waiting then are dropped and
 * counted as not started). Requests in flight at the bound run to their
 * end or their --timeout; the benchmark duration runs from the start to
 * the end of the last request, as in vLLM.
 *
 * A request's fate is one of: completed ([DONE] without an error event),
 * abandoned (--abandon: we hung up on purpose after K token events), or
 * failed, by kind (load_report.h, enum load_fail).
 */
#define _POSIX_C_SOURCE 200809L

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <sys/resource.h>
#include <sys/types.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/buf.h"
#include "common/ts.h"
#include "bench/client.h"
#include "bench/load.h"
#include "bench/load_report.h"
#include "bench/sse_parse.h"
#include "bench/stats.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define LOAD_DEFAULT_URL "http://127.0.0.1:8170"
#define LOAD_DEFAULT_PROMPT_TOKENS 32
#define LOAD_DEFAULT_OUTPUT_TOKENS 64
#define LOAD_DEFAULT_TIMEOUT_S 60.0
/* lighttpd refuses a URI over ~32 KB; "+hello" is 6 bytes a token */
#define LOAD_PROMPT_TOKENS_MAX 4000
#define LOAD_OUTPUT_TOKENS_MAX 8192     /* the server's max_tokens cap */
#define LOAD_CONCURRENCY_MAX 100000
#define LOAD_REQUESTS_MAX 100000000L
#define LOAD_RATE_MAX 1e6               /* requests per second */
#define LOAD_DURATION_MAX 86400.0 * 30  /* seconds */
#define LOAD_POLL_MAX_MS 1000           /* longest curl_multi_poll wait */
#define LOAD_PROGRESS_MS 1000.0         /* progress line period */
#define LOAD_ID_MAX 256                 /* longest X-Request-Id kept */
#define LOAD_MSG_MAX 200                /* server text kept in a message */
#define LOAD_BODY_MAX 4096              /* kept of a non-200 answer's body */
#define LOAD_RNG_ARRIVALS 1             /* PRNG stream of the arrivals */
#define LOAD_RNG_PLANS 2                /* PRNG stream of the plans */
#define LOAD_START_HINT \
	"start it with scripts/tokstream-ctl start (or scripts/run-lab)"

/* Settings from the command line. */
struct load_opts {
	char *url;              /* base URL, trailing '/' removed; owned */
	long concurrency;       /* closed loop: C; 0 in the open loop */
	double rate;            /* open loop: requests/s; 0 = closed loop */
	long max_concurrency;   /* open-loop cap; 0 = none */
	long requests;          /* requests to start; 0 = no bound */
	double duration_s;      /* start no request after this; 0 = none */
	struct load_range prompt, output;
	uint64_t seed;
	struct load_slo slo;
	struct load_abandon abandon;    /* fraction 0 = nobody hangs up */
	int abandon_rst;        /* abandon with a TCP reset, not a FIN */
	double timeout_s;       /* whole request */
	long tpot_ms, prefill_ms;       /* sent when >= 0 */
	const char *json_path;  /* --json FILE or "-"; NULL none; argv */
	int quiet;
};

struct load_run;

/* One /stream request in flight. */
struct load_req {
	struct load_run *run;
	CURL *curl;
	char *url;              /* owned */
	struct load_plan plan;
	struct sse_parser parser;
	struct timespec t0;     /* just before curl_multi_add_handle() */
	double chunk_ms;        /* arrival of the bytes being parsed */
	int status_known;
	long status;
	char errbuf[CURL_ERROR_SIZE];
	char request_id[LOAD_ID_MAX + 1];
	size_t request_id_len;
	double *arrival_ms;     /* token i's arrival, ms since t0 */
	size_t ntokens, arrival_cap;
	int done;               /* saw data: [DONE] */
	double done_ms;         /* its arrival, ms since t0 */
	int abandoned;          /* we hung up after plan.abandon_after */
	int error_event;        /* saw an error event */
	int proto_fail;         /* not tokstream's SSE; msg says why */
	struct ts_buf body;     /* start of a non-200 answer's body */
	struct load_req *prev, *next;   /* run->head's list */
	char msg[LOAD_MSG_MAX + 64];    /* first error event or violation */
};

/* The whole benchmark. */
struct load_run {
	const struct load_opts *o;
	CURLM *multi;
	struct curl_slist *hdrs;        /* shared by every request */
	char *prompt;           /* "hello+hello+..." for the longest prompt */
	struct load_rng arrivals, plans;
	struct timespec t0;
	double next_arrival_ms; /* open loop */
	double next_progress_ms;
	size_t issued;          /* arrivals (open) or starts (closed) */
	size_t started, in_flight, max_in_flight, waiting, not_started;
	int stop_starting;
	struct load_acc acc;
	struct load_req *head;  /* requests in flight */
	json_t *abandoned_ids;  /* X-Request-Id of every abandoned stream */
	size_t abandoned_no_id;
	char *fail_example[LOAD_FAIL_COUNT];    /* first message per kind */
};

/* Set by SIGINT: start no new request, let those in flight end. */
static volatile sig_atomic_t load_interrupted;

static void load_err(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* One "tokbench load: ..." line on stderr. */
static void
load_err(const char *fmt, ...)
{
	va_list ap;

	fputs("tokbench load: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Copies network text (s, n) into out (size outsz) for a message: control
 * bytes become '?', the rest is cut to fit ("..." marks a cut).
 */
static void
load_sanitize(char *out, size_t outsz, const char *s, size_t n)
{
	size_t i, keep = n < outsz - 1 ? n : outsz - 1;

	for (i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)s[i];

		out[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	out[keep] = '\0';
	if (keep < n && keep >= 3)
		memcpy(out + keep - 3, "...", 3);
}

static void load_req_msg(struct load_req *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Keeps the first failure message of a request. */
static void
load_req_msg(struct load_req *q, const char *fmt, ...)
{
	va_list ap;

	if (q->msg[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(q->msg, sizeof(q->msg), fmt, ap);
	va_end(ap);
}

/*
 * The message of a tokstream error object {"error":{"message":..,"code":
 * ..}} (or {"error":"text"}) as "message (code CODE)", sanitised into
 * out. Returns 1, or 0 when `root` has no "error" (out untouched).
 */
static int
load_error_text(json_t *root, char *out, size_t outsz)
{
	json_t *err, *msg, *code;
	char m[LOAD_MSG_MAX], c[64] = "";

	err = json_is_object(root) ? json_object_get(root, "error") : NULL;
	if (err == NULL)
		return 0;
	msg = json_is_string(err) ? err : json_object_get(err, "message");
	code = json_object_get(err, "code");
	if (json_is_string(msg))
		load_sanitize(m, sizeof(m), json_string_value(msg),
		    json_string_length(msg));
	else
		snprintf(m, sizeof(m), "(no message)");
	if (json_is_string(code))
		load_sanitize(c, sizeof(c), json_string_value(code),
		    json_string_length(code));
	else if (json_is_integer(code))
		snprintf(c, sizeof(c), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(code));
	if (c[0] != '\0')
		snprintf(out, outsz, "%s (code %s)", m, c);
	else
		snprintf(out, outsz, "%s", m);
	return 1;
}

/* ------------------------------------------------------------------ */
/* one request: callbacks                                               */
/* ------------------------------------------------------------------ */

/*
 * SSE event callback. [DONE] ends the stream; {"error":{...}} is an error
 * event (read on to [DONE]); {"token":"..."} is a token, time-stamped
 * with its chunk's arrival. Returns TS_OK to go on, TS_EHUP after the
 * token that the plan hangs up at, TS_EINVAL on a protocol violation
 * (q->msg says which); either stops the transfer.
 */
static enum ts_err
load_on_event(void *ud, const struct sse_event *ev)
{
	struct load_req *q = ud;
	json_error_t jerr;
	json_t *root;
	char text[LOAD_MSG_MAX];

	if (ev->type_len != 7 || memcmp(ev->type, "message", 7) != 0)
		return TS_OK;   /* not tokstream's; WHATWG clients skip it */
	if (ev->data_len == 6 && memcmp(ev->data, "[DONE]", 6) == 0) {
		if (q->done) {
			q->proto_fail = 1;
			load_req_msg(q, "a second data: [DONE]");
			return TS_EINVAL;
		}
		q->done = 1;
		q->done_ms = q->chunk_ms;
		return TS_OK;
	}
	if (q->done) {
		q->proto_fail = 1;
		load_req_msg(q, "an event after data: [DONE]");
		return TS_EINVAL;
	}
	root = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &jerr);
	if (root == NULL) {
		load_sanitize(text, sizeof(text), ev->data, ev->data_len);
		q->proto_fail = 1;
		load_req_msg(q, "event %zu is not JSON: %s", q->ntokens + 1,
		    text);
		return TS_EINVAL;
	}
	if (load_error_text(root, text, sizeof(text))) {
		load_req_msg(q, "error event after %zu tokens: %s",
		    q->ntokens, text);
		q->error_event = 1;
		json_decref(root);
		return TS_OK;
	}
	if (!json_is_string(json_object_get(root, "token"))) {
		json_decref(root);
		q->proto_fail = 1;
		load_req_msg(q, "event %zu has no string \"token\"",
		    q->ntokens + 1);
		return TS_EINVAL;
	}
	json_decref(root);
	if (q->ntokens == q->arrival_cap) {
		q->arrival_cap = q->arrival_cap ? q->arrival_cap * 2 : 64;
		q->arrival_ms = xrealloc(q->arrival_ms,
		    q->arrival_cap * sizeof(*q->arrival_ms));
	}
	q->arrival_ms[q->ntokens++] = q->chunk_ms;
	if (q->plan.abandon_after > 0 &&
	    q->ntokens == (size_t)q->plan.abandon_after) {
		q->abandoned = 1;
		return TS_EHUP;
	}
	return TS_OK;
}

/*
 * libcurl header callback: keeps X-Request-Id (the server's stream id,
 * which /_debug/generated?id= knows). A status line starts a new response
 * and forgets an earlier one's id. An unusable id (see
 * client_header_line(), and bytes over 0x7f) is ignored, keeping an
 * earlier one. Returns n (go on).
 */
static size_t
load_on_header(char *ptr, size_t size, size_t nitems, void *ud)
{
	struct load_req *q = ud;
	size_t n = size * nitems, i, len = 0;
	const char *val = NULL;

	switch (client_header_line(ptr, n, LOAD_ID_MAX, &val, &len)) {
	case CLIENT_HEADER_STATUS:
		q->request_id_len = 0;
		break;
	case CLIENT_HEADER_ID:
		/* printable ASCII only: an id goes into JSON and onto
		 * terminals */
		for (i = 0; i < len; i++)
			if ((unsigned char)val[i] >= 0x80)
				return n;
		memcpy(q->request_id, val, len);
		q->request_id[len] = '\0';
		q->request_id_len = len;
		break;
	case CLIENT_HEADER_ID_BAD:
	case CLIENT_HEADER_OTHER:
		break;
	}
	return n;
}

/*
 * libcurl write callback: time-stamps the chunk and feeds a 200 answer to
 * the SSE parser; any other answer's body is dropped (its status is the
 * failure kind). Returns n to go on, or 0 to end the transfer: after the
 * token the plan hangs up at, or on a protocol violation.
 */
static size_t
load_on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct load_req *q = ud;
	size_t n = size * nmemb;
	char why[CLIENT_WHY_MAX];
	enum ts_err rc;

	q->chunk_ms = client_ms_since(&q->t0);
	if (client_check_start(q->curl, &q->status_known, &q->status, why,
	    sizeof(why)) != TS_OK) {
		q->proto_fail = 1;
		load_req_msg(q, "%s", why);
		return 0;
	}
	if (q->status != 200) {
		/* keep the start, for the JSON error's message */
		(void)ts_buf_append_part(&q->body, ptr, n);
		return n;
	}
	rc = sse_parser_feed(&q->parser, ptr, n);
	if (rc == TS_OK)
		return n;
	if (rc == TS_ELIMIT) {
		q->proto_fail = 1;
		load_req_msg(q, "an SSE line or event is over %zu bytes",
		    q->parser.max_bytes);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* one request: start and end                                           */
/* ------------------------------------------------------------------ */

/* Frees a request and its easy handle (removed from the multi first),
 * and unlinks it from the run's list; accepts NULL. */
static void
load_req_free(struct load_req *q)
{
	if (q == NULL)
		return;
	if (q->prev != NULL)
		q->prev->next = q->next;
	else if (q->run->head == q)
		q->run->head = q->next;
	if (q->next != NULL)
		q->next->prev = q->prev;
	if (q->curl != NULL) {
		curl_multi_remove_handle(q->run->multi, q->curl);
		curl_easy_cleanup(q->curl);
	}
	sse_parser_free(&q->parser);
	ts_buf_free(&q->body);
	free(q->arrival_ms);
	free(q->url);
	free(q);
}

/*
 * The URL of a request: /stream?prompt=<plan.prompt_tokens words>&
 * max_tokens=<plan.output_tokens>, plus the latency overrides. The words
 * are "hello" then " hello" ('+' in a query), each one token of
 * tokstream's vocabulary, so the server counts exactly prompt_tokens
 * (other servers' tokenizers: about that many). Caller frees.
 */
static char *
load_req_url(const struct load_run *run, const struct load_plan *p)
{
	const struct load_opts *o = run->o;
	size_t plen = 5 + 6 * (size_t)(p->prompt_tokens - 1);
	size_t n = strlen(o->url) + plen + 128;
	char *u = xmalloc(n);
	int k;

	k = snprintf(u, n, "%s/stream?prompt=%.*s&max_tokens=%ld", o->url,
	    (int)plen, run->prompt, p->output_tokens);
	if (o->tpot_ms >= 0)
		k += snprintf(u + k, n - (size_t)k, "&tpot_ms=%ld",
		    o->tpot_ms);
	if (o->prefill_ms >= 0)
		snprintf(u + k, n - (size_t)k, "&prefill_ms=%ld",
		    o->prefill_ms);
	return u;
}

/*
 * Starts the next request: draws its plan, builds its handle (no proxy,
 * HTTP/1.1, no connection reuse so that a hang-up really closes the
 * socket, the per-request timeout) and adds it to the multi handle; its
 * clock starts just before. Returns TS_OK, or TS_ENOMEM / TS_ESYS when
 * libcurl refuses (one line printed).
 */
static enum ts_err
load_req_start(struct load_run *run)
{
	const struct load_opts *o = run->o;
	struct load_req *q = xcalloc(1, sizeof(*q));
	CURLMcode mc;

	q->run = run;
	load_plan_next(&run->plans, &o->prompt, &o->output, &o->abandon,
	    &q->plan);
	q->url = load_req_url(run, &q->plan);
	sse_parser_init(&q->parser, load_on_event, NULL, q);
	ts_buf_init(&q->body, LOAD_BODY_MAX);
	if ((q->curl = curl_easy_init()) == NULL) {
		load_err("curl_easy_init failed");
		load_req_free(q);
		return TS_ENOMEM;
	}
	client_curl_common(q->curl, q->errbuf,
	    (long)ceil(o->timeout_s * 1000.0));
	curl_easy_setopt(q->curl, CURLOPT_URL, q->url);
	curl_easy_setopt(q->curl, CURLOPT_HTTPHEADER, run->hdrs);
	curl_easy_setopt(q->curl, CURLOPT_WRITEFUNCTION, load_on_body);
	curl_easy_setopt(q->curl, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(q->curl, CURLOPT_HEADERFUNCTION, load_on_header);
	curl_easy_setopt(q->curl, CURLOPT_HEADERDATA, q);
	curl_easy_setopt(q->curl, CURLOPT_PRIVATE, q);
	if (q->plan.abandon_after > 0 && o->abandon_rst)
		curl_easy_setopt(q->curl, CURLOPT_SOCKOPTFUNCTION,
		    client_sockopt_rst);
	clock_gettime(CLOCK_MONOTONIC, &q->t0);
	if ((mc = curl_multi_add_handle(run->multi, q->curl)) != CURLM_OK) {
		load_err("curl_multi_add_handle: %s", curl_multi_strerror(mc));
		curl_easy_cleanup(q->curl);
		q->curl = NULL;
		load_req_free(q);
		return TS_ESYS;
	}
	q->next = run->head;
	if (run->head != NULL)
		run->head->prev = q;
	run->head = q;
	run->started++;
	run->in_flight++;
	if (run->in_flight > run->max_in_flight)
		run->max_in_flight = run->in_flight;
	return TS_OK;
}

/* What became of a request (see the top of this file). */
enum load_fate {
	LOAD_COMPLETED,
	LOAD_ABANDONED,
	LOAD_FAILED
};

/*
 * Sorts an ended transfer into its fate. *msg gets a description of a
 * failure (borrowed from q, libcurl or static text; NULL when there is
 * none). Returns the fate; for LOAD_FAILED, *kind says which.
 */
static enum load_fate
load_req_classify(struct load_req *q, CURLcode cc, curl_off_t connect_us,
    enum load_fail *kind, const char **msg)
{
	json_error_t jerr;
	json_t *root;

	*msg = q->msg[0] != '\0' ? q->msg : q->errbuf[0] != '\0' ?
	    q->errbuf : curl_easy_strerror(cc);
	if (q->abandoned && cc == CURLE_WRITE_ERROR)
		return LOAD_ABANDONED;
	if (q->proto_fail) {
		*kind = LOAD_FAIL_PROTOCOL;
	} else if (q->status == 0) {
		if (client_unreachable(cc, connect_us))
			*kind = LOAD_FAIL_CONNECT;
		else if (cc == CURLE_OPERATION_TIMEDOUT)
			*kind = LOAD_FAIL_TIMEOUT;
		else
			*kind = LOAD_FAIL_TRANSPORT;
	} else if (q->status != 200) {
		*kind = q->status == 429 ? LOAD_FAIL_HTTP_429 :
		    q->status >= 500 && q->status <= 599 ?
		    LOAD_FAIL_HTTP_5XX : LOAD_FAIL_HTTP_OTHER;
		*msg = NULL;
		root = json_loadb(q->body.p != NULL ? q->body.p : "",
		    q->body.len, JSON_ALLOW_NUL, &jerr);
		if (root != NULL && load_error_text(root, q->msg,
		    sizeof(q->msg)))
			*msg = q->msg;
		json_decref(root);
	} else if (q->error_event) {
		*kind = LOAD_FAIL_SSE_ERROR;
	} else if (!q->done) {
		*kind = cc == CURLE_OPERATION_TIMEDOUT ? LOAD_FAIL_TIMEOUT :
		    LOAD_FAIL_TRUNCATED;
	} else if (cc != CURLE_OK) {
		/* [DONE] came, but the response did not end cleanly */
		*kind = LOAD_FAIL_TRUNCATED;
	} else {
		return LOAD_COMPLETED;
	}
	return LOAD_FAILED;
}

/*
 * Ends a finished transfer: counts it as completed, abandoned (its stream
 * id kept) or failed (the first message of each failure kind kept), and
 * frees it. A completed request's E2E latency ends at the arrival of
 * data: [DONE], the end of the stream, time-stamped in the write callback
 * like the tokens: the time at which the multi handle reports the end
 * could lag behind it by the other transfers that one
 * curl_multi_perform() call served.
 */
static void
load_req_end(struct load_run *run, struct load_req *q, CURLcode cc)
{
	curl_off_t connect_us = 0;
	enum load_fail kind = LOAD_FAIL_TRANSPORT;
	const char *msg = NULL;
	char buf[LOAD_MSG_MAX + 128];

	if (!q->status_known)
		curl_easy_getinfo(q->curl, CURLINFO_RESPONSE_CODE, &q->status);
	curl_easy_getinfo(q->curl, CURLINFO_CONNECT_TIME_T, &connect_us);
	switch (load_req_classify(q, cc, connect_us, &kind, &msg)) {
	case LOAD_COMPLETED:
		load_acc_completed(&run->acc, q->plan.prompt_tokens,
		    q->arrival_ms, q->ntokens, q->done_ms);
		break;
	case LOAD_ABANDONED:
		load_acc_abandoned(&run->acc, q->ntokens);
		if (q->request_id_len > 0)
			json_array_append_new(run->abandoned_ids,
			    json_stringn(q->request_id, q->request_id_len));
		else
			run->abandoned_no_id++;
		break;
	case LOAD_FAILED:
		load_acc_failed(&run->acc, kind);
		if (run->fail_example[kind] == NULL) {
			if (msg == NULL)
				snprintf(buf, sizeof(buf), "HTTP %ld",
				    q->status);
			else if (q->status == 0)
				snprintf(buf, sizeof(buf), "%s", msg);
			else
				snprintf(buf, sizeof(buf), "HTTP %ld: %s",
				    q->status, msg);
			run->fail_example[kind] = xstrndup(buf, strlen(buf));
		}
		break;
	}
	run->in_flight--;
	load_req_free(q);
}

/* ------------------------------------------------------------------ */
/* the benchmark loop                                                   */
/* ------------------------------------------------------------------ */

/* SIGINT: stop starting requests; a second ^C kills (SA_RESETHAND). */
static void
load_on_sigint(int sig)
{
	(void)sig;
	load_interrupted = 1;
}

/* One progress line on stderr. */
static void
load_progress(const struct load_run *run, double now_ms)
{
	const struct load_acc *a = &run->acc;

	fprintf(stderr, "tokbench load: %7.1f s started=%zu completed=%zu "
	    "abandoned=%zu failed=%zu in_flight=%zu", now_ms / 1e3,
	    run->started, a->completed, a->abandoned, a->failed,
	    run->in_flight);
	if (run->o->rate > 0)
		fprintf(stderr, " waiting=%zu", run->waiting);
	fputc('\n', stderr);
}

/*
 * Decides whether requests may still start: not after --requests of
 * them were issued, not after --duration, not after ^C. When the stop
 * comes from the clock or ^C, open-loop arrivals still waiting for a
 * --max-concurrency slot are dropped (counted as not started).
 */
static void
load_check_bounds(struct load_run *run, double now_ms)
{
	const struct load_opts *o = run->o;
	int by_time = 0;

	if (run->stop_starting)
		return;
	if (o->requests > 0 && run->issued >= (size_t)o->requests)
		run->stop_starting = 1;
	if (o->duration_s > 0 && now_ms >= o->duration_s * 1e3)
		by_time = 1;
	if (load_interrupted) {
		by_time = 1;
		if (!o->quiet)
			load_err("interrupted: no new requests; waiting for "
			    "%zu in flight (^C again to quit)",
			    run->in_flight);
	}
	if (by_time) {
		run->stop_starting = 1;
		run->not_started += run->waiting;
		run->waiting = 0;
	}
}

/*
 * Starts what the traffic model allows now: in the closed loop, requests
 * up to --concurrency; in the open loop, every arrival due by now_ms
 * (drawing the next inter-arrival time each), then waiting arrivals while
 * --max-concurrency allows. Returns TS_OK or a start failure.
 */
static enum ts_err
load_start_due(struct load_run *run, double now_ms)
{
	const struct load_opts *o = run->o;
	enum ts_err rc;

	if (o->rate > 0) {
		while (!run->stop_starting && now_ms >= run->next_arrival_ms) {
			run->waiting++;
			run->issued++;
			run->next_arrival_ms += load_rng_exp_ms(&run->arrivals,
			    o->rate);
			load_check_bounds(run, now_ms);
		}
		while (run->waiting > 0 && (o->max_concurrency == 0 ||
		    run->in_flight < (size_t)o->max_concurrency)) {
			if ((rc = load_req_start(run)) != TS_OK)
				return rc;
			run->waiting--;
		}
		return TS_OK;
	}
	while (!run->stop_starting &&
	    run->in_flight < (size_t)o->concurrency) {
		if ((rc = load_req_start(run)) != TS_OK)
			return rc;
		run->issued++;
		load_check_bounds(run, now_ms);
	}
	return TS_OK;
}

/*
 * How long curl_multi_poll() may sleep: until the next arrival, the
 * duration bound or the next progress line, at most LOAD_POLL_MAX_MS
 * (libcurl shortens it further for its own timers). Rounded up, so that
 * the loop does not spin through the last fraction of a millisecond.
 */
static int
load_poll_ms(const struct load_run *run, double now_ms)
{
	const struct load_opts *o = run->o;
	double t = LOAD_POLL_MAX_MS;

	if (!run->stop_starting && o->rate > 0 &&
	    run->next_arrival_ms - now_ms < t)
		t = run->next_arrival_ms - now_ms;
	if (!run->stop_starting && o->duration_s > 0 &&
	    o->duration_s * 1e3 - now_ms < t)
		t = o->duration_s * 1e3 - now_ms;
	if (!o->quiet && run->next_progress_ms - now_ms < t)
		t = run->next_progress_ms - now_ms;
	return t <= 0 ? 0 : (int)ceil(t);
}

/*
 * Runs the benchmark to its bound and until every request has ended.
 * *duration_s gets the benchmark duration (start to the end of the last
 * request). Returns TS_OK, or TS_ESYS when libcurl fails (one line
 * printed; requests in flight are then freed uncounted).
 */
static enum ts_err
load_loop(struct load_run *run, double *duration_s)
{
	const struct load_opts *o = run->o;
	enum ts_err rc = TS_OK;
	struct load_req *q;
	CURLMsg *m;
	CURLMcode mc;
	double now;
	char *priv;
	int running, left, ended;

	clock_gettime(CLOCK_MONOTONIC, &run->t0);
	run->next_arrival_ms = 0.0;
	run->next_progress_ms = LOAD_PROGRESS_MS;
	for (;;) {
		now = client_ms_since(&run->t0);
		load_check_bounds(run, now);
		if ((rc = load_start_due(run, now)) != TS_OK)
			break;
		if ((mc = curl_multi_perform(run->multi, &running)) !=
		    CURLM_OK) {
			load_err("curl_multi_perform: %s",
			    curl_multi_strerror(mc));
			rc = TS_ESYS;
			break;
		}
		ended = 0;
		while ((m = curl_multi_info_read(run->multi, &left)) != NULL) {
			if (m->msg != CURLMSG_DONE)
				continue;
			priv = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
			    &priv);
			q = (struct load_req *)(void *)priv;
			/* m is invalid once its handle is removed */
			load_req_end(run, q, m->data.result);
			ended++;
		}
		now = client_ms_since(&run->t0);
		if (!o->quiet && now >= run->next_progress_ms) {
			load_progress(run, now);
			while (run->next_progress_ms <= now)
				run->next_progress_ms += LOAD_PROGRESS_MS;
		}
		if (run->stop_starting && run->in_flight == 0 &&
		    run->waiting == 0)
			break;
		if (ended > 0 && !run->stop_starting)
			continue;       /* start their successors at once */
		if ((mc = curl_multi_poll(run->multi, NULL, 0,
		    load_poll_ms(run, now), NULL)) != CURLM_OK) {
			load_err("curl_multi_poll: %s",
			    curl_multi_strerror(mc));
			rc = TS_ESYS;
			break;
		}
	}
	*duration_s = client_ms_since(&run->t0) / 1e3;
	return rc;
}

/* ------------------------------------------------------------------ */
/* the report                                                           */
/* ------------------------------------------------------------------ */

/* One "label: value" line of the text report, vLLM's {:<40} {:<10}. */
static void
load_line_f(FILE *f, const char *label, double v)
{
	fprintf(f, "%-40s %.2f\n", label, v);
}

static void
load_line_u(FILE *f, const char *label, uint64_t v)
{
	fprintf(f, "%-40s %" PRIu64 "\n", label, v);
}

/* A centred title padded with `c` to 50 columns, as vLLM prints them. */
static void
load_title(FILE *f, const char *title, char c)
{
	size_t n = strlen(title), left, right, i;

	left = n < 50 ? (50 - n) / 2 : 0;
	right = n < 50 ? 50 - n - left : 0;
	for (i = 0; i < left; i++)
		fputc(c, f);
	fputs(title, f);
	for (i = 0; i < right; i++)
		fputc(c, f);
	fputc('\n', f);
}

/* The block of one metric: mean, median, p90, p99 (n/a without data). */
static void
load_print_metric(FILE *f, const char *title, const char *abbr,
    const struct load_metric *m)
{
	static const char *const names[] = {"Mean", "Median", "P90", "P99"};
	double v[4];
	char label[64];
	size_t i;

	v[0] = m->mean;
	v[1] = m->median;
	v[2] = m->p90;
	v[3] = m->p99;
	load_title(f, title, '-');
	for (i = 0; i < 4; i++) {
		snprintf(label, sizeof(label), "%s %s (ms):", names[i], abbr);
		if (m->n > 0)
			load_line_f(f, label, v[i]);
		else
			fprintf(f, "%-40s n/a\n", label);
	}
}

/* The human-readable report, in the layout of vLLM's. */
static void
load_print_report(FILE *f, const struct load_run *run,
    const struct load_report *r)
{
	const struct load_opts *o = run->o;
	char buf[128];
	size_t i;

	load_title(f, " Serving Benchmark Result ", '=');
	if (o->rate > 0) {
		snprintf(buf, sizeof(buf), "open loop, Poisson %g req/s",
		    o->rate);
		fprintf(f, "%-40s %s\n", "Traffic:", buf);
		if (o->max_concurrency > 0)
			load_line_u(f, "Maximum request concurrency:",
			    (uint64_t)o->max_concurrency);
	} else {
		snprintf(buf, sizeof(buf), "closed loop, concurrency %ld",
		    o->concurrency);
		fprintf(f, "%-40s %s\n", "Traffic:", buf);
	}
	load_line_u(f, "Successful requests:", r->completed);
	if (o->abandon.fraction > 0) {
		snprintf(buf, sizeof(buf), "Abandoned requests (after %ld "
		    "tok, %s):", o->abandon.after_tokens,
		    o->abandon_rst ? "RST" : "FIN");
		load_line_u(f, buf, r->abandoned);
	}
	load_line_u(f, "Failed requests:", r->failed);
	if (run->not_started > 0)
		load_line_u(f, "Arrivals not started:", run->not_started);
	load_line_f(f, "Benchmark duration (s):", r->duration_s);
	load_line_u(f, "Total input tokens:", r->prompt_tokens);
	load_line_u(f, "Total generated tokens:", r->output_tokens);
	load_line_f(f, "Request throughput (req/s):", r->request_throughput);
	if (load_slo_any(&o->slo))
		load_line_f(f, "Request goodput (req/s):", r->request_goodput);
	load_line_f(f, "Output token throughput (tok/s):",
	    r->output_throughput);
	load_line_f(f, "Total Token throughput (tok/s):",
	    r->total_token_throughput);
	load_line_u(f, "Peak concurrent requests:", run->max_in_flight);
	load_print_metric(f, "Time to First Token", "TTFT", &r->ttft);
	load_print_metric(f, "Time per Output Token (excl. 1st token)",
	    "TPOT", &r->tpot);
	load_print_metric(f, "Inter-token Latency", "ITL", &r->itl);
	load_print_metric(f, "End-to-end Latency", "E2EL", &r->e2el);
	if (r->failed > 0) {
		load_title(f, "Failures", '-');
		for (i = 0; i < LOAD_FAIL_COUNT; i++)
			if (run->acc.fail[i] > 0)
				fprintf(f, "%-40s %zu  (%s)\n",
				    load_fail_name((enum load_fail)i),
				    run->acc.fail[i],
				    run->fail_example[i] != NULL ?
				    run->fail_example[i] : "");
	}
	load_title(f, "", '=');
}

/* Adds mean_/median_/std_/p90_/p99_/min_/max_<name>_ms and
 * count_<name> to j; null values when there are no samples. */
static void
load_json_metric(json_t *j, const char *name, const struct load_metric *m)
{
	static const char *const stat[] = {"mean", "median", "std", "p90",
	    "p99", "min", "max"};
	double v[7];
	char key[64];
	size_t i;

	v[0] = m->mean;
	v[1] = m->median;
	v[2] = m->std;
	v[3] = m->p90;
	v[4] = m->p99;
	v[5] = m->min;
	v[6] = m->max;
	for (i = 0; i < 7; i++) {
		snprintf(key, sizeof(key), "%s_%s_ms", stat[i], name);
		json_object_set_new(j, key, m->n > 0 ? json_real(v[i]) :
		    json_null());
	}
	snprintf(key, sizeof(key), "count_%s", name);
	json_object_set_new(j, key, json_integer((json_int_t)m->n));
}

/* A real, or null for "not set" (negative). */
static json_t *
load_json_opt(double v)
{
	return v >= 0 ? json_real(v) : json_null();
}

/*
 * The JSON report: vLLM's result keys (completed, duration,
 * request_throughput, mean_ttft_ms, ...) plus the failures by kind, the
 * abandoned streams' ids and the settings. Returns a new reference.
 */
static json_t *
load_json(const struct load_run *run, const struct load_report *r)
{
	const struct load_opts *o = run->o;
	json_t *j = json_object(), *fails = json_object(), *ex, *set, *slo;
	char seed[32];
	size_t i;

	/* a 64-bit seed may not fit json_int_t: a decimal string is exact */
	snprintf(seed, sizeof(seed), "%" PRIu64, o->seed);

	ex = json_object();
	for (i = 0; i < LOAD_FAIL_COUNT; i++) {
		json_object_set_new(fails, load_fail_name((enum load_fail)i),
		    json_integer((json_int_t)run->acc.fail[i]));
		if (run->fail_example[i] != NULL)
			json_object_set_new(ex,
			    load_fail_name((enum load_fail)i),
			    json_string(run->fail_example[i]));
	}
	slo = json_pack("{s:o,s:o,s:o}",
	    "ttft", load_json_opt(o->slo.ttft_ms),
	    "tpot", load_json_opt(o->slo.tpot_ms),
	    "e2el", load_json_opt(o->slo.e2el_ms));
	set = json_pack("{s:s,s:s,s:I,s:f,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:s,"
	    "s:f,s:I,s:b,s:f,s:o,s:o,s:o}",
	    "url", o->url,
	    "traffic", o->rate > 0 ? "open" : "closed",
	    "concurrency", (json_int_t)o->concurrency,
	    "request_rate", o->rate,
	    "max_concurrency", (json_int_t)o->max_concurrency,
	    "requests", (json_int_t)o->requests,
	    "duration_s", o->duration_s,
	    "prompt_tokens_min", (json_int_t)o->prompt.min,
	    "prompt_tokens_max", (json_int_t)o->prompt.max,
	    "output_tokens_min", (json_int_t)o->output.min,
	    "output_tokens_max", (json_int_t)o->output.max,
	    "seed", seed,
	    "abandon_fraction", o->abandon.fraction,
	    "abandon_after_tokens", (json_int_t)o->abandon.after_tokens,
	    "abandon_rst", o->abandon_rst,
	    "timeout_s", o->timeout_s,
	    "tpot_ms", o->tpot_ms >= 0 ? json_integer(o->tpot_ms) :
	    json_null(),
	    "prefill_ms", o->prefill_ms >= 0 ? json_integer(o->prefill_ms) :
	    json_null(),
	    "goodput_slo_ms", slo);
	json_object_set_new(j, "tokbench_version",
	    json_string(PACKAGE_VERSION));
	json_object_set_new(j, "percentile_method",
	    json_string(STATS_PERCENTILE_METHOD));
	json_object_set_new(j, "duration", json_real(r->duration_s));
	json_object_set_new(j, "started",
	    json_integer((json_int_t)run->started));
	json_object_set_new(j, "completed",
	    json_integer((json_int_t)r->completed));
	json_object_set_new(j, "abandoned",
	    json_integer((json_int_t)r->abandoned));
	json_object_set_new(j, "failed", json_integer((json_int_t)r->failed));
	json_object_set_new(j, "not_started",
	    json_integer((json_int_t)run->not_started));
	json_object_set_new(j, "failures", fails);
	json_object_set_new(j, "failure_examples", ex);
	json_object_set_new(j, "abandoned_ids",
	    json_incref(run->abandoned_ids));
	json_object_set_new(j, "abandoned_without_id",
	    json_integer((json_int_t)run->abandoned_no_id));
	json_object_set_new(j, "abandoned_output_tokens",
	    json_integer((json_int_t)run->acc.abandoned_tokens));
	json_object_set_new(j, "total_input_tokens",
	    json_integer((json_int_t)r->prompt_tokens));
	json_object_set_new(j, "total_output_tokens",
	    json_integer((json_int_t)r->output_tokens));
	json_object_set_new(j, "good_requests",
	    json_integer((json_int_t)r->good));
	json_object_set_new(j, "request_throughput",
	    json_real(r->request_throughput));
	json_object_set_new(j, "request_goodput", load_slo_any(&o->slo) ?
	    json_real(r->request_goodput) : json_null());
	json_object_set_new(j, "output_throughput",
	    json_real(r->output_throughput));
	json_object_set_new(j, "total_token_throughput",
	    json_real(r->total_token_throughput));
	json_object_set_new(j, "max_concurrent_requests",
	    json_integer((json_int_t)run->max_in_flight));
	load_json_metric(j, "ttft", &r->ttft);
	load_json_metric(j, "tpot", &r->tpot);
	load_json_metric(j, "itl", &r->itl);
	load_json_metric(j, "e2el", &r->e2el);
	json_object_set_new(j, "settings", set != NULL ? set : json_null());
	return j;
}

/*
 * Writes the JSON report to `path` ("-" = stdout), one compact line.
 * Returns TS_OK, or TS_ESYS after printing one line.
 */
static enum ts_err
load_write_json(const char *path, json_t *j)
{
	char *txt = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));
	enum ts_err rc = TS_ESYS;
	FILE *f = NULL;
	int saved;

	if (txt == NULL) {
		load_err("cannot encode the JSON report");
		return TS_ESYS;
	}
	if (strcmp(path, "-") == 0) {
		puts(txt);
		rc = fflush(stdout) == 0 ? TS_OK : TS_ESYS;
		if (rc != TS_OK)
			load_err("cannot write the JSON report: %s",
			    strerror(errno));
		free(txt);
		return rc;
	}
	if ((f = fopen(path, "w")) == NULL ||
	    fputs(txt, f) == EOF || fputc('\n', f) == EOF) {
		saved = errno;
		load_err("cannot write %s: %s", path, strerror(saved));
		goto out;
	}
	if (fclose(f) != 0) {
		f = NULL;
		saved = errno;
		load_err("cannot write %s: %s", path, strerror(saved));
		goto out;
	}
	f = NULL;
	rc = TS_OK;
out:
	if (f != NULL)
		fclose(f);
	free(txt);
	return rc;
}

/* ------------------------------------------------------------------ */
/* running it                                                           */
/* ------------------------------------------------------------------ */

/*
 * Raises the soft limit on open files to the hard one: every request in
 * flight holds a socket, and 1024 is the usual soft limit.
 */
static void
load_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * The benchmark: sets up the multi handle and the shared prompt, runs the
 * loop, prints the report (stdout; stderr when the JSON goes to stdout)
 * and writes the JSON. Returns the exit status (see load.h).
 */
static int
load_run(const struct load_opts *o)
{
	struct load_run run;
	struct load_report rep;
	struct sigaction sa, old_sa;
	double duration_s = 0.0;
	json_t *j = NULL;
	enum ts_err rc;
	size_t i, plen;
	int ret = 1, have_sa = 0;

	memset(&run, 0, sizeof(run));
	run.o = o;
	load_acc_init(&run.acc, &o->slo);
	load_rng_seed(&run.arrivals, o->seed, LOAD_RNG_ARRIVALS);
	load_rng_seed(&run.plans, o->seed, LOAD_RNG_PLANS);
	run.abandoned_ids = json_array();
	plen = 5 + 6 * (size_t)(o->prompt.max - 1);
	run.prompt = xmalloc(plen + 1);
	memcpy(run.prompt, "hello", 5);
	for (i = 5; i < plen; i += 6)
		memcpy(run.prompt + i, "+hello", 6);
	run.prompt[plen] = '\0';
	run.hdrs = curl_slist_append(NULL, "Accept: text/event-stream");
	if ((run.multi = curl_multi_init()) == NULL || run.hdrs == NULL) {
		load_err("cannot initialise libcurl's multi interface");
		goto out;
	}
	load_raise_nofile();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = load_on_sigint;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	have_sa = sigaction(SIGINT, &sa, &old_sa) == 0;
	load_interrupted = 0;

	if (!o->quiet) {
		if (o->rate > 0)
			load_err("%s/stream: open loop, Poisson %g req/s, "
			    "max concurrency %ld (0 = none)", o->url, o->rate,
			    o->max_concurrency);
		else
			load_err("%s/stream: closed loop, concurrency %ld",
			    o->url, o->concurrency);
	}
	rc = load_loop(&run, &duration_s);
	if (rc != TS_OK)
		goto out;
	if (!o->quiet)
		load_progress(&run, duration_s * 1e3);
	if (load_report_compute(&run.acc, duration_s, &rep) != TS_OK) {
		load_err("a latency sample is not a number");
		goto out;
	}
	if (rep.completed == 0 && rep.abandoned == 0 && rep.failed > 0 &&
	    run.acc.fail[LOAD_FAIL_CONNECT] == rep.failed) {
		/* the server is down: one line, like the other commands */
		load_err("cannot reach %s: %s; " LOAD_START_HINT, o->url,
		    run.fail_example[LOAD_FAIL_CONNECT]);
		goto out;
	}
	load_print_report(o->json_path != NULL &&
	    strcmp(o->json_path, "-") == 0 ? stderr : stdout, &run, &rep);
	fflush(stdout);
	ret = 0;
	if (o->json_path != NULL) {
		j = load_json(&run, &rep);
		if (load_write_json(o->json_path, j) != TS_OK)
			ret = 1;
	}
	if (rep.completed == 0 && rep.abandoned == 0) {
		load_err("no request completed or was abandoned: nothing was "
		    "measured");
		ret = 1;
	}
out:
	if (have_sa)
		sigaction(SIGINT, &old_sa, NULL);
	/* only after an error: requests still in flight */
	while (run.head != NULL)
		load_req_free(run.head);
	if (run.multi != NULL)
		curl_multi_cleanup(run.multi);
	for (i = 0; i < LOAD_FAIL_COUNT; i++)
		free(run.fail_example[i]);
	curl_slist_free_all(run.hdrs);
	json_decref(j);
	json_decref(run.abandoned_ids);
	load_acc_free(&run.acc);
	free(run.prompt);
	return ret;
}

/* ------------------------------------------------------------------ */
/* command line                                                         */
/* ------------------------------------------------------------------ */

static const char load_usage[] =
    "usage: tokbench load (--concurrency C | --rate R [--max-concurrency M])\n"
    "                     (--requests N | --duration S) [options]\n"
    "Runs many GET /stream requests at once and prints vLLM-style serving\n"
    "metrics (vllm bench serve): TTFT, TPOT, ITL, E2E latency (mean, median,\n"
    "p90, p99 in ms; nearest-rank), request and token throughput, goodput.\n"
    "Traffic (default --concurrency 1):\n"
    "  -c, --concurrency C       closed loop: C requests always in flight\n"
    "  -r, --rate R              open loop: Poisson arrivals, R requests/s\n"
    "      --max-concurrency M   open loop: at most M in flight; arrivals "
    "wait\n"
    "Bound (at least one; both: whichever comes first):\n"
    "  -n, --requests N          start N requests\n"
    "  -d, --duration S          start no request after S seconds; those "
    "in\n"
    "                            flight then run to their end\n"
    "Requests:\n"
    "  -u, --url BASE            server base URL (default "
    LOAD_DEFAULT_URL ")\n"
    "      --prompt-tokens N|MIN:MAX  prompt length in tokens, fixed or\n"
    "                            uniform (default 32, at most 4000): "
    "\"hello\"\n"
    "                            repeated, one token each in tokstream's\n"
    "                            vocabulary (other tokenizers: about N)\n"
    "      --output-tokens N|MIN:MAX  max_tokens, fixed or uniform "
    "(default 64)\n"
    "      --seed N              PRNG seed of arrivals, lengths and "
    "abandons\n"
    "                            (default 0; same seed, same plan)\n"
    "      --tpot-ms MS          ask the server for this TPOT (tpot_ms=)\n"
    "      --prefill-ms MS       ask the server for this prefill "
    "(prefill_ms=)\n"
    "      --timeout SEC         limit for each whole request (default "
    "60)\n"
    "      --abandon P:K         a share P (0..1) of the requests hang up\n"
    "                            after K token events (FIN); counted as\n"
    "                            abandoned, not as failures or in the "
    "latencies\n"
    "      --abandon-rst         hang up with a TCP reset (SO_LINGER 0)\n"
    "Report:\n"
    "      --goodput SPEC        SLOs in ms, e.g. \"ttft:500 tpot:50\" (keys\n"
    "                            ttft, tpot, e2el; repeatable): goodput =\n"
    "                            completed requests meeting all of them / s\n"
    "      --json FILE           also write the report as one JSON object\n"
    "                            (\"-\": on stdout; the text goes to "
    "stderr)\n"
    "  -q, --quiet               no progress lines on stderr\n"
    "Exit status: 0 report written, 1 nothing measured (no request "
    "completed\n"
    "or was abandoned) or the JSON could not be written, 2 usage error.\n";

enum {
	LOAD_OPT_URL = 'u',
	LOAD_OPT_CONCURRENCY = 'c',
	LOAD_OPT_RATE = 'r',
	LOAD_OPT_REQUESTS = 'n',
	LOAD_OPT_DURATION = 'd',
	LOAD_OPT_QUIET = 'q',
	LOAD_OPT_HELP = 'h',
	LOAD_OPT_MAX_CONCURRENCY = 256,
	LOAD_OPT_PROMPT_TOKENS,
	LOAD_OPT_OUTPUT_TOKENS,
	LOAD_OPT_SEED,
	LOAD_OPT_GOODPUT,
	LOAD_OPT_ABANDON,
	LOAD_OPT_ABANDON_RST,
	LOAD_OPT_TIMEOUT,
	LOAD_OPT_TPOT,
	LOAD_OPT_PREFILL,
	LOAD_OPT_JSON
};

static const struct option load_longopts[] = {
	{"url", required_argument, NULL, LOAD_OPT_URL},
	{"concurrency", required_argument, NULL, LOAD_OPT_CONCURRENCY},
	{"rate", required_argument, NULL, LOAD_OPT_RATE},
	{"max-concurrency", required_argument, NULL,
	    LOAD_OPT_MAX_CONCURRENCY},
	{"requests", required_argument, NULL, LOAD_OPT_REQUESTS},
	{"duration", required_argument, NULL, LOAD_OPT_DURATION},
	{"prompt-tokens", required_argument, NULL, LOAD_OPT_PROMPT_TOKENS},
	{"output-tokens", required_argument, NULL, LOAD_OPT_OUTPUT_TOKENS},
	{"seed", required_argument, NULL, LOAD_OPT_SEED},
	{"goodput", required_argument, NULL, LOAD_OPT_GOODPUT},
	{"abandon", required_argument, NULL, LOAD_OPT_ABANDON},
	{"abandon-rst", no_argument, NULL, LOAD_OPT_ABANDON_RST},
	{"timeout", required_argument, NULL, LOAD_OPT_TIMEOUT},
	{"tpot-ms", required_argument, NULL, LOAD_OPT_TPOT},
	{"prefill-ms", required_argument, NULL, LOAD_OPT_PREFILL},
	{"json", required_argument, NULL, LOAD_OPT_JSON},
	{"quiet", no_argument, NULL, LOAD_OPT_QUIET},
	{"help", no_argument, NULL, LOAD_OPT_HELP},
	{NULL, 0, NULL, 0}
};

static int load_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* One usage-error line on stderr, as tokbench's other commands print
 * them; returns the exit status, 2. */
static int
load_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("tokbench load: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see tokbench load --help)\n", stderr);
	return 2;
}

/* A decimal long in [lo, hi], digits only after an optional '-'. */
static enum ts_err
load_parse_long(const char *s, long lo, long hi, long *out)
{
	struct load_range r;

	if (strchr(s, ':') != NULL ||
	    load_parse_range(s, lo, hi, &r, NULL) != TS_OK)
		return TS_EINVAL;
	*out = r.min;
	return TS_OK;
}

/*
 * Parses argv into *o. Returns -1 to go on, else the exit status (0
 * after --help, 2 after a usage error).
 */
static int
load_parse_args(int argc, char **argv, struct load_opts *o)
{
	const char *url = LOAD_DEFAULT_URL, *opt;
	struct load_perr perr;
	int c, have_abandon = 0;
	size_t n;

	memset(o, 0, sizeof(*o));
	o->prompt.min = o->prompt.max = LOAD_DEFAULT_PROMPT_TOKENS;
	o->output.min = o->output.max = LOAD_DEFAULT_OUTPUT_TOKENS;
	o->timeout_s = LOAD_DEFAULT_TIMEOUT_S;
	o->tpot_ms = -1;
	o->prefill_ms = -1;
	load_slo_init(&o->slo);

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hqu:c:r:n:d:", load_longopts,
	    NULL)) != -1) {
		opt = argv[optind - 1];
		switch (c) {
		case LOAD_OPT_HELP:
			fputs(load_usage, stdout);
			return 0;
		case LOAD_OPT_URL:
			if (optarg[0] == '\0')
				return load_usage_error("empty --url");
			url = optarg;
			break;
		case LOAD_OPT_CONCURRENCY:
		case LOAD_OPT_MAX_CONCURRENCY:
			if (load_parse_long(optarg, 1, LOAD_CONCURRENCY_MAX,
			    c == LOAD_OPT_CONCURRENCY ? &o->concurrency :
			    &o->max_concurrency) != TS_OK)
				return load_usage_error("bad %s '%s': want an "
				    "integer from 1 to %d",
				    c == LOAD_OPT_CONCURRENCY ?
				    "--concurrency" : "--max-concurrency",
				    optarg, LOAD_CONCURRENCY_MAX);
			break;
		case LOAD_OPT_RATE:
			if (load_parse_number(optarg, 1e-6, LOAD_RATE_MAX,
			    &o->rate) != TS_OK || !(o->rate > 0))
				return load_usage_error("bad --rate '%s': "
				    "want requests per second, a number > 0 "
				    "and <= %g", optarg, LOAD_RATE_MAX);
			break;
		case LOAD_OPT_REQUESTS:
			if (load_parse_long(optarg, 1, LOAD_REQUESTS_MAX,
			    &o->requests) != TS_OK)
				return load_usage_error("bad --requests '%s': "
				    "want an integer from 1 to %ld", optarg,
				    LOAD_REQUESTS_MAX);
			break;
		case LOAD_OPT_DURATION:
			if (load_parse_number(optarg, 0.001, LOAD_DURATION_MAX,
			    &o->duration_s) != TS_OK)
				return load_usage_error("bad --duration '%s': "
				    "want seconds from 0.001 to %.0f", optarg,
				    LOAD_DURATION_MAX);
			break;
		case LOAD_OPT_PROMPT_TOKENS:
			if (load_parse_range(optarg, 1, LOAD_PROMPT_TOKENS_MAX,
			    &o->prompt, &perr) != TS_OK)
				return load_usage_error("bad --prompt-tokens "
				    "'%s' at %d: %s", optarg, perr.position,
				    perr.text);
			break;
		case LOAD_OPT_OUTPUT_TOKENS:
			if (load_parse_range(optarg, 1, LOAD_OUTPUT_TOKENS_MAX,
			    &o->output, &perr) != TS_OK)
				return load_usage_error("bad --output-tokens "
				    "'%s' at %d: %s", optarg, perr.position,
				    perr.text);
			break;
		case LOAD_OPT_SEED:
			if (load_parse_u64(optarg, &o->seed) != TS_OK)
				return load_usage_error("bad --seed '%s': "
				    "want an integer from 0 to %" PRIu64,
				    optarg, UINT64_MAX);
			break;
		case LOAD_OPT_GOODPUT:
			if (load_parse_goodput(optarg, &o->slo, &perr) !=
			    TS_OK)
				return load_usage_error("bad --goodput '%s' "
				    "at %d: %s", optarg, perr.position,
				    perr.text);
			break;
		case LOAD_OPT_ABANDON:
			if (load_parse_abandon(optarg, LOAD_OUTPUT_TOKENS_MAX,
			    &o->abandon, &perr) != TS_OK)
				return load_usage_error("bad --abandon '%s' "
				    "at %d: %s", optarg, perr.position,
				    perr.text);
			have_abandon = 1;
			break;
		case LOAD_OPT_ABANDON_RST:
			o->abandon_rst = 1;
			break;
		case LOAD_OPT_TIMEOUT:
			if (load_parse_number(optarg, 0.001, 86400.0,
			    &o->timeout_s) != TS_OK)
				return load_usage_error("bad --timeout '%s': "
				    "want seconds from 0.001 to 86400",
				    optarg);
			break;
		case LOAD_OPT_TPOT:
			if (load_parse_long(optarg, 0, 10000, &o->tpot_ms) !=
			    TS_OK)
				return load_usage_error("bad --tpot-ms '%s': "
				    "want milliseconds from 0 to 10000",
				    optarg);
			break;
		case LOAD_OPT_PREFILL:
			if (load_parse_long(optarg, 0, 60000,
			    &o->prefill_ms) != TS_OK)
				return load_usage_error("bad --prefill-ms "
				    "'%s': want milliseconds from 0 to 60000",
				    optarg);
			break;
		case LOAD_OPT_JSON:
			if (optarg[0] == '\0')
				return load_usage_error("empty --json");
			o->json_path = optarg;
			break;
		case LOAD_OPT_QUIET:
			o->quiet = 1;
			break;
		case ':':
			return load_usage_error("missing argument for '%s'",
			    opt);
		default:
			if (optopt > 0 && optopt < 256)
				return load_usage_error("unknown option '-%c'",
				    optopt);
			return load_usage_error("unknown option '%s'", opt);
		}
	}
	if (optind < argc)
		return load_usage_error("unexpected argument '%s'",
		    argv[optind]);
	if (o->concurrency > 0 && o->rate > 0)
		return load_usage_error("--concurrency (closed loop) and "
		    "--rate (open loop) exclude each other");
	if (o->max_concurrency > 0 && o->rate == 0)
		return load_usage_error("--max-concurrency caps the open loop "
		    "of --rate; for a closed loop use --concurrency");
	if (o->rate == 0 && o->concurrency == 0)
		o->concurrency = 1;
	if (o->requests == 0 && o->duration_s == 0)
		return load_usage_error("give --requests N or --duration S "
		    "(or both)");
	if (o->abandon_rst && !have_abandon)
		return load_usage_error("--abandon-rst needs --abandon P:K");
	if (have_abandon && o->abandon.after_tokens > o->output.max)
		return load_usage_error("--abandon K=%ld is more than the "
		    "largest --output-tokens %ld: no request would hang up",
		    o->abandon.after_tokens, o->output.max);
	n = strlen(url);
	while (n > 1 && url[n - 1] == '/')
		n--;
	o->url = xstrndup(url, n);
	return -1;
}

int
load_main(int argc, char **argv)
{
	struct load_opts o;
	int ret;

	if ((ret = load_parse_args(argc, argv, &o)) >= 0)
		return ret;
	ret = load_run(&o);
	free(o.url);
	return ret;
}
