/*
 * cmd_load.c - `tokbench load`: many /stream requests at once, measured
 * like vLLM's `vllm bench serve` (definitions in load_report.h). Runs the
 * traffic of the command line (load_opts.h, load_sched.h) through the
 * driver (load_drive.h): builds each request, counts what became of each
 * one, then prints the report (load_output.h).
 *
 * A request's fate is one of: completed ([DONE] without an error event),
 * abandoned (--abandon: we hung up on purpose after K token events), or
 * failed, by kind (load_report.h, enum load_fail). Requests in flight at
 * the bound run to their end or their --timeout; the benchmark duration
 * runs from the start to the end of the last request, as in vLLM.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/cmd.h"

#include <sys/resource.h>
#include <sys/time.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "bench/dataset.h"
#include "bench/load.h"
#include "bench/load_drive.h"
#include "bench/load_output.h"
#include "bench/msg.h"
#include "bench/record.h"
#include "bench/text.h"
#include "bench/words.h"

/* The API version every /v1/messages request names (Anthropic's
 * required header; the SDK's default). */
#define CMD_LOAD_ANTHROPIC_VERSION "anthropic-version: 2023-06-01"

/*
 * The PRNG streams of --dataset random (load_rng_seed() with --seed):
 * the shared prefix, then one stream a request, numbered by its plan's
 * index, apart for the warm-up requests; so request i's prompt is the
 * same whatever the timing, and no two requests draw the same words.
 */
#define CMD_LOAD_RNG_PREFIX 3
#define CMD_LOAD_RNG_PROMPT (1ULL << 32)
#define CMD_LOAD_RNG_WARMUP (2ULL << 32)

/* Longest file prompt /stream takes, in bytes: percent-encoded (at most
 * 3 bytes a byte) it stays under lighttpd's URI limit (~32 KB). */
#define CMD_LOAD_STREAM_PROMPT_MAX 8000

/* A run in progress: the record for the report, and what every request
 * is built from. */
struct cmd_load_run {
	struct load_run rec;
	struct load_drive drive;
	struct load_sched sched;
	char *prompt;           /* "hello+hello+..." for the longest prompt */
	char *v1_prompt;        /* /v1: "hello hello ..." the same */
	struct load_dataset ds; /* --dataset sharegpt, jsonl */
	struct ts_buf prefix;   /* --dataset random: the shared words */
	struct ts_buf text;     /* the prompt being built */
	char *model;            /* /v1: --model, or GET /v1/models' first */
	char *auth;             /* /v1: "Authorization: Bearer KEY" or NULL
				 * (/v1/messages: "x-api-key: KEY") */
	struct req_reasoning reasoning;
	struct record *trace;   /* tokbench record's recording; NULL for
				 * load */
};

/* The path of an endpoint. */
static const char *
cmd_load_path(enum load_endpoint ep)
{
	return load_endpoint_path(ep);
}

/* True for Ollama's endpoints. */
static int
cmd_load_ollama(enum load_endpoint ep)
{
	return ep == LOAD_EP_OLLAMA_CHAT || ep == LOAD_EP_OLLAMA_GENERATE;
}

/*
 * The model of a run on a model API: the first "id" of GET BASE/v1/models
 * (OpenAI API reference, "List models"; Anthropic's "List Models" has the
 * same data[0].id), or for Ollama the first models[0].name of GET
 * BASE/api/tags (ollama docs/api.md, "List Local Models"), sent with the
 * key when there is one. Returns it (caller frees), or NULL after
 * printing one line.
 */
static char *
cmd_load_first_model(const struct cmd_load_run *run)
{
	const struct load_opts *o = run->rec.o;
	struct client_body b;
	struct curl_slist *h = NULL;
	char errbuf[CURL_ERROR_SIZE] = "", *url, *model = NULL;
	json_t *root, *id;
	CURL *c;
	CURLcode cc;
	long status = 0;

	if ((c = curl_easy_init()) == NULL) {
		msg_err("curl_easy_init failed");
		return NULL;
	}
	memset(&b, 0, sizeof(b));
	ts_buf_init(&b.buf, 1u << 20);
	url = xmalloc(strlen(o->url) + 16);
	sprintf(url, "%s%s", o->url, cmd_load_ollama(o->endpoint) ?
	    "/api/tags" : "/v1/models");
	client_curl_common(c, errbuf, 10000);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (run->auth != NULL)
		h = curl_slist_append(h, run->auth);
	if (o->endpoint == LOAD_EP_MESSAGES)
		h = curl_slist_append(h, CMD_LOAD_ANTHROPIC_VERSION);
	if (h != NULL)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, client_body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	root = cc == CURLE_OK && status == 200 ? json_loadb(b.buf.p ?
	    b.buf.p : "", b.buf.len, 0, NULL) : NULL;
	id = cmd_load_ollama(o->endpoint) ?
	    json_object_get(json_array_get(json_object_get(root, "models"), 0),
	    "name") :
	    json_object_get(json_array_get(json_object_get(root, "data"), 0),
	    "id");
	if (json_is_string(id))
		model = xstrndup(json_string_value(id), json_string_length(id));
	else if (cc != CURLE_OK)
		msg_err("GET %s: %s; give --model NAME", url, errbuf[0] ?
		    errbuf : curl_easy_strerror(cc));
	else
		msg_err("GET %s: HTTP %ld, no %s in the answer; give "
		    "--model NAME", url, status, cmd_load_ollama(o->endpoint) ?
		    "models[0].name" : "data[0].id");
	json_decref(root);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	ts_buf_free(&b.buf);
	free(url);
	return model;
}

/* Set by SIGINT: start no new request, let those in flight end. */
static volatile sig_atomic_t cmd_load_interrupted;

/* SIGINT: stop starting requests; a second ^C kills (SA_RESETHAND). */
static void
cmd_load_on_sigint(int sig)
{
	(void)sig;
	cmd_load_interrupted = 1;
}

/* Bytes of the query text of a prompt of `tokens` words ("hello", then
 * "+hello" each). */
static size_t
cmd_load_prompt_len(long tokens)
{
	return 5 + 6 * (size_t)(tokens - 1);
}

/*
 * The prompt of plan p into run->text (NUL-terminated) and its length in
 * tokens into *tokens, for the datasets other than repeat: random words
 * (after the shared prefix) or the file's entry; *messages gets a jsonl
 * entry's array (borrowed) and *output the output length (a file's,
 * unless --output-tokens was given). On /stream the text is
 * percent-encoded for the query. Returns TS_OK, or TS_ELIMIT after one
 * line when it does not fit.
 */
static enum ts_err
cmd_load_text(struct cmd_load_run *run, struct req *q,
    const struct load_plan *p, long *tokens, json_t **messages,
    long *output)
{
	const struct load_opts *o = run->rec.o;
	const struct load_entry *e;
	struct rng r;
	char *esc;
	size_t i;

	ts_buf_reset(&run->text);
	*messages = NULL;
	*output = p->output_tokens;
	if (o->dataset == LOAD_DS_RANDOM) {
		load_rng_seed(&r, o->traffic.seed, (p->warmup ?
		    CMD_LOAD_RNG_WARMUP : CMD_LOAD_RNG_PROMPT) + p->index);
		if (ts_buf_append(&run->text, run->prefix.p,
		    run->prefix.len) != TS_OK ||
		    load_words_append(&r, p->prompt_tokens,
		    &run->text) != TS_OK)
			goto big;
		*tokens = o->random_prefix_len + p->prompt_tokens;
		if (o->endpoint == LOAD_EP_STREAM)
			for (i = 0; i < run->text.len; i++)
				if (run->text.p[i] == ' ')
					run->text.p[i] = '+';
	} else {
		/* the warm-up takes the entries from the end */
		e = load_dataset_entry(&run->ds, p->warmup ? run->ds.n - 1 -
		    p->index % run->ds.n : p->index);
		*tokens = e->prompt_tokens > 0 ? e->prompt_tokens : 0;
		if (!o->output_given && e->output_tokens > 0)
			*output = e->output_tokens;
		*messages = e->messages;
		if (e->prompt == NULL)
			return ts_buf_append(&run->text, "", 1);
		if (o->endpoint == LOAD_EP_STREAM) {
			esc = curl_easy_escape(q->curl, e->prompt, 0);
			if (esc == NULL || ts_buf_append(&run->text, esc,
			    strlen(esc)) != TS_OK) {
				curl_free(esc);
				goto big;
			}
			curl_free(esc);
		} else if (ts_buf_append(&run->text, e->prompt,
		    strlen(e->prompt)) != TS_OK)
			goto big;
	}
	if (ts_buf_append(&run->text, "", 1) == TS_OK)
		return TS_OK;
big:
	msg_err("a prompt is more than %zu bytes", run->text.max);
	return TS_ELIMIT;
}

/*
 * The driver's make: the request of the plan. --dataset repeat: the URL
 * /stream?prompt=<prompt_tokens words>&max_tokens=<output_tokens>, plus
 * the latency overrides; the words are "hello" then " hello" ('+' in a
 * query), each one token of tokstream's vocabulary, so the server counts
 * exactly prompt_tokens (other servers' tokenizers: about that many).
 * The other datasets: cmd_load_text()'s prompt. A POST endpoint gets the
 * prompt (or a jsonl entry's messages) in its body. A request that
 * abandons hangs up after abandon_after tokens, with a reset under
 * --abandon-rst.
 */
static struct req *
cmd_load_make(void *ud, const struct load_plan *p)
{
	struct cmd_load_run *run = ud;
	const struct load_opts *o = run->rec.o;
	struct req *q;
	const char *prompt;
	size_t plen;
	long tokens, output = p->output_tokens;
	json_t *messages = NULL;
	char keep = '\0', *url;

	q = req_new((long)ceil(o->timeout_s * 1000.0),
	    (size_t)p->abandon_after, p->abandon_after > 0 && o->abandon_rst,
	    0);
	if (q == NULL)
		return NULL;
	q->plan_index = p->index;
	q->warmup = p->warmup;
	if (o->dataset == LOAD_DS_REPEAT) {
		tokens = p->prompt_tokens;
		plen = cmd_load_prompt_len(p->prompt_tokens);
		prompt = o->endpoint == LOAD_EP_STREAM ? run->prompt :
		    run->v1_prompt;
		keep = run->v1_prompt[plen];
		run->v1_prompt[plen] = '\0';
	} else {
		if (cmd_load_text(run, q, p, &tokens, &messages,
		    &output) != TS_OK) {
			req_free(q);
			return NULL;
		}
		prompt = run->text.p;
		plen = run->text.len - 1;
	}
	q->prompt_tokens = tokens;
	if (o->endpoint == LOAD_EP_STREAM) {
		req_set_url(q, req_stream_url(o->url, prompt, plen, output,
		    o->tpot_ms, o->prefill_ms));
	} else {
		url = xmalloc(strlen(o->url) + 32);
		sprintf(url, "%s%s", o->url, cmd_load_path(o->endpoint));
		req_set_url(q, url);
		req_set_reasoning(q, &run->reasoning);
		req_set_messages_array(q, messages);
		if (o->endpoint == LOAD_EP_MESSAGES)
			req_set_messages(q, run->model, prompt, output,
			    o->tpot_ms, o->prefill_ms);
		else if (cmd_load_ollama(o->endpoint))
			req_set_ollama(q, o->endpoint == LOAD_EP_OLLAMA_CHAT ?
			    REQ_API_OLLAMA_CHAT : REQ_API_OLLAMA_GENERATE,
			    run->model, prompt, output, o->tpot_ms,
			    o->prefill_ms);
		else
			req_set_v1(q, o->endpoint == LOAD_EP_CHAT ?
			    REQ_API_CHAT : REQ_API_COMPLETIONS, run->model,
			    prompt, output, o->ignore_eos, o->tpot_ms,
			    o->prefill_ms);
	}
	if (o->dataset == LOAD_DS_REPEAT)
		run->v1_prompt[plen] = keep;
	if (run->trace != NULL)
		q->cap = record_attach(run->trace);
	return q;
}

/* True when the id (s, n) is printable ASCII: it goes into JSON and
 * onto terminals. */
static int
cmd_load_ascii_id(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return 0;
	return n > 0;
}

/* What ends a stream of API api, for a message. */
static const char *
cmd_load_end_name(enum req_api api)
{
	switch (api) {
	case REQ_API_MESSAGES:
		return "event: message_stop";
	case REQ_API_OLLAMA_CHAT:
	case REQ_API_OLLAMA_GENERATE:
		return "a line with \"done\":true";
	default:
		return "data: [DONE]";
	}
}

/* The message of a failure: the status, and what went wrong as req.h
 * tells it. The caller frees it. */
static char *
cmd_load_fail_text(const struct req *q, enum load_fail kind)
{
	char *txt = NULL, *buf;
	const char *msg;
	size_t n;

	switch (kind) {
	case LOAD_FAIL_PROTOCOL:
		msg = q->fail;
		break;
	case LOAD_FAIL_HTTP_429:
	case LOAD_FAIL_HTTP_500:
	case LOAD_FAIL_HTTP_503:
	case LOAD_FAIL_HTTP_5XX:
	case LOAD_FAIL_HTTP_400:
	case LOAD_FAIL_HTTP_401:
	case LOAD_FAIL_HTTP_OTHER:
		msg = txt = text_error_body(&q->body);
		break;
	case LOAD_FAIL_SSE_ERROR:
		n = strlen(q->error_text) + 64;
		msg = txt = xmalloc(n);
		snprintf(txt, n, "error event after %zu tokens: %s",
		    q->error_after, q->error_text);
		break;
	case LOAD_FAIL_TRUNCATED:
		/* libcurl's text for a body that ended cleanly is "No
		 * error": say what is missing */
		n = strlen(req_detail(q)) + 96;
		msg = txt = xmalloc(n);
		snprintf(txt, n, "the stream ended before %s (%s)",
		    cmd_load_end_name(q->api), req_detail(q));
		break;
	default:
		msg = req_detail(q);
		break;
	}
	n = (msg != NULL ? strlen(msg) : 0) + 32;
	buf = xmalloc(n);
	if (msg == NULL)
		snprintf(buf, n, "HTTP %ld", q->status);
	else if (q->status == 0)
		snprintf(buf, n, "%s", msg);
	else
		snprintf(buf, n, "HTTP %ld: %s", q->status, msg);
	free(txt);
	return buf;
}

/* Keeps the first message of a failure kind. */
static void
cmd_load_example(struct load_run *rec, const struct req *q,
    enum load_fail kind)
{
	if (rec->fail_example[kind] == NULL)
		rec->fail_example[kind] = cmd_load_fail_text(q, kind);
}

/*
 * Records q for --save-detailed at its plan's index: vLLM's input and
 * output lengths (0 output for a failure), TTFT and ITL in seconds, and
 * the error ("" for a completed request; an abandoned one says so).
 */
static void
cmd_load_detail(struct load_run *rec, const struct req *q,
    enum req_fate fate, enum load_fail kind)
{
	struct load_detail *d;
	size_t i, need = (size_t)q->plan_index + 1;
	char buf[64];

	if (need > rec->ndetail) {
		rec->detail = xrealloc(rec->detail, need * sizeof(*d));
		memset(rec->detail + rec->ndetail, 0,
		    (need - rec->ndetail) * sizeof(*d));
		rec->ndetail = need;
	}
	d = &rec->detail[q->plan_index];
	d->set = 1;
	d->input_len = q->usage_prompt >= 0 ? q->usage_prompt :
	    q->prompt_tokens;
	d->output_len = fate == REQ_FAILED ? 0 : q->usage_completion >= 0 &&
	    fate == REQ_COMPLETED ? q->usage_completion : (long)q->ntokens;
	d->ttft_s = q->ntokens > 0 ? q->arrival_ms[0] / 1e3 : 0.0;
	d->nitl = q->ntokens > 1 ? q->ntokens - 1 : 0;
	d->itl_s = d->nitl > 0 ? xmalloc(d->nitl * sizeof(double)) : NULL;
	for (i = 0; i < d->nitl; i++)
		d->itl_s[i] = (q->arrival_ms[i + 1] - q->arrival_ms[i]) / 1e3;
	if (fate == REQ_FAILED) {
		d->error = cmd_load_fail_text(q, kind);
	} else if (fate == REQ_STOPPED) {
		snprintf(buf, sizeof(buf), "abandoned after %zu tokens",
		    q->ntokens);
		d->error = xstrndup(buf, strlen(buf));
	} else {
		d->error = xstrndup("", 0);
	}
}

/*
 * tokbench record: q's line in the trace, with what became of it (as
 * --save-detailed says it). A spent budget or a trace that cannot be
 * written stops the run: no new requests.
 */
static void
cmd_load_trace(struct cmd_load_run *run, struct req *q, enum req_fate fate,
    enum load_fail kind)
{
	char *err = NULL, buf[64];

	if (fate == REQ_FAILED) {
		err = cmd_load_fail_text(q, kind);
	} else if (fate == REQ_STOPPED) {
		snprintf(buf, sizeof(buf), "abandoned after %zu tokens",
		    q->ntokens);
		err = xstrndup(buf, strlen(buf));
	}
	if (record_end(run->trace, q, err) != TS_OK)
		cmd_load_interrupted = 1;
	free(err);
}

/*
 * The driver's end: counts the request as completed (its E2E latency
 * ends at data: [DONE], see load_drive.c), abandoned (its stream id
 * kept) or failed (the first message of each kind kept), and frees it.
 */
static void
cmd_load_end(void *ud, struct req *q)
{
	struct cmd_load_run *run = ud;
	struct load_run *rec = &run->rec;
	enum load_fail kind = LOAD_FAIL_TRANSPORT;
	enum req_fate fate = req_fate(q, &kind);

	if (run->trace != NULL)
		cmd_load_trace(run, q, fate, kind);
	if (q->warmup) {
		/* left out of every number */
		if (fate == REQ_COMPLETED)
			rec->warmup_completed++;
		else
			rec->warmup_failed++;
		req_free(q);
		return;
	}
	if (rec->o->save_detailed)
		cmd_load_detail(rec, q, fate, kind);
	switch (fate) {
	case REQ_COMPLETED:
		/* /v1: the server's own counts (the usage chunk) when it
		 * sent them; the deltas are the arrivals either way */
		load_acc_completed_reasoning(&rec->acc, q->usage_prompt >= 0 ?
		    q->usage_prompt : q->prompt_tokens, q->arrival_ms,
		    q->ntokens, q->usage_completion >= 0 ?
		    (size_t)q->usage_completion : q->ntokens, q->done_ms,
		    q->reason_ms, q->nreason);
		break;
	case REQ_STOPPED:
		load_acc_abandoned(&rec->acc, q->ntokens);
		if (cmd_load_ascii_id(q->request_id, q->request_id_len))
			json_array_append_new(rec->abandoned_ids,
			    json_stringn(q->request_id, q->request_id_len));
		else
			rec->abandoned_no_id++;
		break;
	case REQ_FAILED:
		load_acc_failed(&rec->acc, kind);
		cmd_load_example(rec, q, kind);
		break;
	}
	req_free(q);
}

/* The driver's progress: one line on stderr. */
static void
cmd_load_progress(void *ud, double now_ms)
{
	const struct cmd_load_run *run = ud;
	const struct load_acc *a = &run->rec.acc;

	fprintf(stderr, "tokbench %s: %7.1f s started=%zu completed=%zu "
	    "abandoned=%zu failed=%zu in_flight=%zu", run->trace != NULL ?
	    "record" : "load", now_ms / 1e3,
	    run->drive.started, a->completed, a->abandoned, a->failed,
	    run->drive.in_flight);
	if (run->rec.o->traffic.rate > 0)
		fprintf(stderr, " waiting=%zu", run->sched.waiting);
	fputc('\n', stderr);
}

/*
 * Raises the soft limit on open files to the hard one: every request in
 * flight holds a socket, and 1024 is the usual soft limit.
 */
static void
cmd_load_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* User plus system CPU time of this process so far, in seconds (0 when
 * getrusage fails): whether the client itself limited the run. */
static double
cmd_load_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0.0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/*
 * Tells and writes the report of a run that ended: the text on stdout
 * (stderr when the JSON goes to stdout), then the JSON. Returns the exit
 * status (see cmd.h and the help text).
 */
static int
cmd_load_report(struct cmd_load_run *run, double duration_s)
{
	const struct load_opts *o = run->rec.o;
	struct load_run *rec = &run->rec;
	struct load_report rep;
	json_t *j;
	int ret = 0;

	rec->started = run->drive.started;
	rec->max_in_flight = run->drive.max_in_flight;
	rec->not_started = run->sched.not_started;
	rec->client_cpu_s = cmd_load_cpu_s();
	rec->start_backlog_ms = run->drive.backlog_max_ms;
	if (load_report_compute(&rec->acc, duration_s, &rep) != TS_OK) {
		msg_err("a latency sample is not a number");
		return 1;
	}
	if (rep.completed == 0 && rep.abandoned == 0 && rep.failed > 0 &&
	    rec->acc.fail[LOAD_FAIL_CONNECT] == rep.failed) {
		/* the server is down: one line, like the other commands */
		msg_err("cannot reach %s: %s; " MSG_START_HINT, o->url,
		    rec->fail_example[LOAD_FAIL_CONNECT]);
		return 1;
	}
	load_output_text(o->json_path != NULL &&
	    strcmp(o->json_path, "-") == 0 ? stderr : stdout, rec, &rep);
	fflush(stdout);
	if (o->json_path != NULL) {
		j = load_output_json(rec, &rep);
		if (load_output_write_json(o->json_path, j) != TS_OK)
			ret = 1;
		json_decref(j);
	}
	if (rep.completed == 0 && rep.abandoned == 0) {
		msg_err("no request completed or was abandoned: nothing was "
		    "measured");
		ret = 1;
	}
	return ret;
}

/*
 * Reads and checks --dataset's file into run->ds, shuffled with the seed.
 * Returns -1 to go on, else the exit status 2 after one line (the file's
 * name, and the line at fault when there is one).
 */
static int
cmd_load_dataset(struct cmd_load_run *run)
{
	const struct load_opts *o = run->rec.o;
	struct load_derr err;
	const struct load_entry *e;
	enum ts_err rc;
	char *buf;
	size_t len, i;
	int chat = o->endpoint == LOAD_EP_CHAT ||
	    o->endpoint == LOAD_EP_MESSAGES ||
	    o->endpoint == LOAD_EP_OLLAMA_CHAT;

	memset(&err, 0, sizeof(err));
	rc = load_dataset_read(o->dataset_path, LOAD_DATASET_FILE_MAX, &buf,
	    &len, &err);
	if (rc != TS_OK) {
		msg_err("--dataset: %s", err.text);     /* it names the file */
		return 2;
	}
	rc = o->dataset == LOAD_DS_SHAREGPT ?
	    load_dataset_sharegpt(buf, len, &run->ds, &err) :
	    load_dataset_jsonl(buf, len, LOAD_OUTPUT_TOKENS_LIMIT, &run->ds,
	    &err);
	free(buf);
	for (i = 0; rc == TS_OK && i < run->ds.n; i++) {
		e = &run->ds.v[i];
		err.line = o->dataset == LOAD_DS_JSONL ? e->line : 0;
		if (e->messages != NULL && !chat) {
			snprintf(err.text, sizeof(err.text), "\"messages\" is "
			    "for /v1/chat/completions, /v1/messages or "
			    "/api/chat, not %s", cmd_load_path(o->endpoint));
			rc = TS_EINVAL;
		} else if (o->endpoint == LOAD_EP_STREAM &&
		    strlen(e->prompt) > CMD_LOAD_STREAM_PROMPT_MAX) {
			/* jsonl only: ShareGPT's prompts are at most 1024
			 * tokens of 4 bytes */
			snprintf(err.text, sizeof(err.text), "a prompt of %zu "
			    "bytes is too long for a /stream URI (at most %d); "
			    "use a POST --endpoint", strlen(e->prompt),
			    CMD_LOAD_STREAM_PROMPT_MAX);
			rc = TS_EINVAL;
		}
	}
	if (rc != TS_OK) {
		if (err.line > 0)
			msg_err("%s:%ld: %s", o->dataset_path, err.line,
			    err.text);
		else
			msg_err("%s: %s", o->dataset_path, err.text);
		return 2;
	}
	load_dataset_shuffle(&run->ds, o->traffic.seed);
	run->rec.dataset_entries = run->ds.n;
	run->rec.dataset_skipped = run->ds.skipped;
	return -1;
}

/*
 * Sets up the prompts of the run's dataset: the repeated "hello" of the
 * longest prompt, the shared prefix of --dataset random, or the file.
 * Returns -1 to go on, else the exit status.
 */
static int
cmd_load_prompts(struct cmd_load_run *run)
{
	const struct load_opts *o = run->rec.o;
	const struct load_traffic *t = &o->traffic;
	struct rng r;
	size_t i, plen;

	/* the longest prompt, with room for percent-encoding */
	ts_buf_init(&run->text, o->dataset == LOAD_DS_RANDOM ?
	    (size_t)(o->random_prefix_len + t->prompt.max) *
	    LOAD_WORD_MAX_BYTES + 1 : LOAD_DATASET_FILE_MAX);
	ts_buf_init(&run->prefix, (size_t)o->random_prefix_len *
	    LOAD_WORD_MAX_BYTES + 1);
	if (o->dataset == LOAD_DS_RANDOM) {
		load_rng_seed(&r, t->seed, CMD_LOAD_RNG_PREFIX);
		if (load_words_append(&r, o->random_prefix_len,
		    &run->prefix) != TS_OK)
			return 1;
		return -1;
	}
	if (o->dataset != LOAD_DS_REPEAT)
		return cmd_load_dataset(run);
	plen = cmd_load_prompt_len(t->prompt.max);
	run->prompt = xmalloc(plen + 1);
	memcpy(run->prompt, "hello", 5);
	for (i = 5; i < plen; i += 6)
		memcpy(run->prompt + i, "+hello", 6);
	run->prompt[plen] = '\0';
	run->v1_prompt = xstrndup(run->prompt, plen);
	for (i = 0; i < plen; i++)
		if (run->v1_prompt[i] == '+')
			run->v1_prompt[i] = ' ';
	return -1;
}

/* Adds the headers of every request to driver d: the key, the JSON
 * content type, Anthropic's version. Returns TS_OK or an error (one line
 * printed). */
static enum ts_err
cmd_load_headers(const struct cmd_load_run *run, struct load_drive *d)
{
	const struct load_opts *o = run->rec.o;

	/* the key, on every endpoint (a server started with --api-key
	 * wants it on the lab's /stream too) */
	if (run->auth != NULL && load_drive_header(d, run->auth) != TS_OK)
		return TS_ENOMEM;
	if (o->endpoint == LOAD_EP_STREAM)
		return TS_OK;
	if (load_drive_header(d, "Content-Type: application/json") != TS_OK ||
	    (o->endpoint == LOAD_EP_MESSAGES &&
	    load_drive_header(d, CMD_LOAD_ANTHROPIC_VERSION) != TS_OK))
		return TS_ENOMEM;
	return TS_OK;
}

/*
 * The warm-up (vllm bench serve's --num-warmups): o->warmup requests of
 * their own prompts (--dataset random: their own PRNG streams; a file:
 * its entries from the end), all at once up to the run's concurrency
 * (--concurrency, else --max-concurrency, else all), run to their end
 * before the benchmark starts, and counted nowhere but in
 * warmup_completed / warmup_failed. Returns TS_OK, or an error (one
 * line printed).
 */
static enum ts_err
cmd_load_warmup(struct cmd_load_run *run, const struct load_drive_ops *ops)
{
	const struct load_opts *o = run->rec.o;
	struct load_traffic wt;
	struct load_sched ws;
	struct load_drive wd;
	struct load_drive_ops wops = *ops;
	double dur = 0.0;
	enum ts_err rc;

	memset(&wt, 0, sizeof(wt));
	wt.requests = o->warmup;
	wt.concurrency = o->traffic.concurrency > 0 ? o->traffic.concurrency :
	    o->traffic.max_concurrency > 0 ? o->traffic.max_concurrency :
	    o->warmup;
	wt.prompt = o->traffic.prompt;
	wt.output = o->traffic.output;
	wt.seed = o->traffic.seed;
	wt.burstiness = 1.0;
	load_sched_init(&ws, &wt, &cmd_load_interrupted, o->quiet);
	ws.warmup = 1;
	wops.progress = NULL;
	if ((rc = load_drive_init(&wd)) == TS_OK &&
	    (rc = cmd_load_headers(run, &wd)) == TS_OK)
		rc = load_drive_run(&wd, &ws, &wops, &dur);
	load_drive_free(&wd);
	if (rc == TS_OK && !o->quiet)
		msg_err("warm-up: %zu requests completed, %zu did not, in "
		    "%.2f s (left out of the report)",
		    run->rec.warmup_completed, run->rec.warmup_failed, dur);
	return rc;
}

/* The traffic, for the first line. */
static void
cmd_load_tell(const struct cmd_load_run *run)
{
	const struct load_opts *o = run->rec.o;
	const struct load_traffic *t = &o->traffic;
	static const char *const ds[] = {"random", "repeat", "sharegpt",
	    "jsonl"};
	char traffic[160];

	if (t->ramp != LOAD_RAMP_NONE)
		snprintf(traffic, sizeof(traffic), "open loop, %s ramp-up "
		    "%g to %g req/s, burstiness %g, max concurrency %ld "
		    "(0 = none)", t->ramp == LOAD_RAMP_LINEAR ? "linear" :
		    "exponential", t->ramp_start, t->ramp_end, t->burstiness,
		    t->max_concurrency);
	else if (t->rate > 0)
		snprintf(traffic, sizeof(traffic), "open loop, %s %g req/s%s, "
		    "max concurrency %ld (0 = none)", t->burstiness == 1.0 ?
		    "Poisson" : "gamma", t->rate, t->burstiness == 1.0 ? "" :
		    " (burstiness set)", t->max_concurrency);
	else
		snprintf(traffic, sizeof(traffic), "closed loop, concurrency "
		    "%ld", t->concurrency);
	msg_err("%s%s: %s, dataset %s%s%s%s%s", o->url,
	    cmd_load_path(o->endpoint), traffic, ds[o->dataset],
	    o->dataset_path ? " " : "", o->dataset_path ? o->dataset_path :
	    "", run->model ? ", model " : "", run->model ? run->model : "");
}

/*
 * tokbench record: opens the trace of ro into *trace with its header
 * (trace.h: the tool, the time in UTC, the target, the endpoint, ro's
 * options and the model) and makes run record into it. Returns TS_OK,
 * or TS_ESYS after one line.
 */
static enum ts_err
cmd_load_trace_open(struct cmd_load_run *run,
    const struct load_record_opts *ro, struct record *trace)
{
	const struct load_opts *o = run->rec.o;
	struct trace hdr;
	struct tm tm;
	time_t now = time(NULL);
	char created[32] = "";
	enum ts_err rc;

	memset(&hdr, 0, sizeof(hdr));
	if (gmtime_r(&now, &tm) != NULL)
		strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	hdr.tool = (char *)"tokbench record";
	hdr.created = created;
	hdr.target = o->url;
	hdr.endpoint = (char *)cmd_load_path(o->endpoint);
	hdr.options = ro->options != NULL ? json_deep_copy(ro->options) :
	    json_object();
	if (run->model != NULL)
		json_object_set_new(hdr.options, "model",
		    trace_bytes_json(run->model, strlen(run->model)));
	rc = record_open(trace, ro->path, ro->max_bytes, o->url, &hdr);
	json_decref(hdr.options);
	if (rc == TS_OK)
		run->trace = trace;
	return rc;
}

/*
 * tokbench record: the trace's last line and its end; returns the exit
 * status given the run's ret.
 */
static int
cmd_load_trace_close(struct cmd_load_run *run, int ret)
{
	struct record *trace = run->trace;
	enum ts_err rc = record_close(trace);

	run->trace = NULL;
	if (rc == TS_ELIMIT) {
		msg_err("%s: the trace lacks what came after the recording "
		    "passed --record-max-bytes %zu (its lines say which "
		    "requests were cut)", trace->path, trace->budget.max);
		return 1;
	}
	if (rc != TS_OK)
		return 1;
	if (!run->rec.o->quiet)
		msg_err("wrote %s: %zu requests", trace->path,
		    trace->requests);
	return ret;
}

/*
 * The benchmark: sets up the prompts, the schedule and the driver,
 * catches ^C, runs the warm-up and the traffic, prints the report; with
 * ro, records the trace (tokbench record). Returns the exit status.
 */
int
cmd_load_exec(const struct load_opts *o, const struct load_record_opts *ro)
{
	struct record trace;
	const struct load_traffic *t = &o->traffic;
	struct cmd_load_run run;
	struct load_drive_ops ops;
	struct sigaction sa, old_sa;
	double duration_s = 0.0;
	size_t i;
	int ret = 1, have_sa = 0;

	memset(&run, 0, sizeof(run));
	run.rec.o = o;
	load_acc_init(&run.rec.acc, &o->slo);
	run.rec.abandoned_ids = json_array();
	if ((ret = cmd_load_prompts(&run)) >= 0)
		goto out;
	ret = 1;
	memset(&ops, 0, sizeof(ops));
	ops.make = cmd_load_make;
	ops.end = cmd_load_end;
	ops.progress = o->quiet ? NULL : cmd_load_progress;
	ops.ud = &run;
	load_sched_init(&run.sched, t, &cmd_load_interrupted, o->quiet);

	cmd_load_raise_nofile();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = cmd_load_on_sigint;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	have_sa = sigaction(SIGINT, &sa, &old_sa) == 0;
	cmd_load_interrupted = 0;

	if (load_drive_init(&run.drive) != TS_OK)
		goto out;
	run.reasoning.thinking_budget = o->thinking_budget;
	run.reasoning.effort = o->reasoning_effort;
	run.reasoning.think = o->think;
	if (o->api_key != NULL) {
		run.auth = xmalloc(strlen(o->api_key) + 32);
		sprintf(run.auth, o->endpoint == LOAD_EP_MESSAGES ?
		    "x-api-key: %s" : "Authorization: Bearer %s", o->api_key);
	}
	if (o->endpoint != LOAD_EP_STREAM) {
		run.model = o->model != NULL ? xstrndup(o->model,
		    strlen(o->model)) : cmd_load_first_model(&run);
		if (run.model == NULL)
			goto out;
	}
	if (cmd_load_headers(&run, &run.drive) != TS_OK)
		goto out;
	if (ro != NULL && cmd_load_trace_open(&run, ro, &trace) != TS_OK)
		goto out;
	if (!o->quiet)
		cmd_load_tell(&run);
	if (o->warmup > 0 && cmd_load_warmup(&run, &ops) != TS_OK)
		goto out;
	if (load_drive_run(&run.drive, &run.sched, &ops, &duration_s) !=
	    TS_OK)
		goto out;
	if (!o->quiet)
		cmd_load_progress(&run, duration_s * 1e3);
	ret = cmd_load_report(&run, duration_s);
out:
	if (have_sa)
		sigaction(SIGINT, &old_sa, NULL);
	/* only after an error: requests still in flight */
	load_drive_free(&run.drive);
	if (run.trace != NULL)
		ret = cmd_load_trace_close(&run, ret);
	for (i = 0; i < LOAD_FAIL_COUNT; i++)
		free(run.rec.fail_example[i]);
	for (i = 0; i < run.rec.ndetail; i++) {
		free(run.rec.detail[i].itl_s);
		free(run.rec.detail[i].error);
	}
	free(run.rec.detail);
	json_decref(run.rec.abandoned_ids);
	load_acc_free(&run.rec.acc);
	load_dataset_free(&run.ds);
	ts_buf_free(&run.prefix);
	ts_buf_free(&run.text);
	free(run.prompt);
	free(run.v1_prompt);
	free(run.model);
	free(run.auth);
	return ret;
}

/* load: parses its own command line (argv[0] is "load"). */
static int
cmd_load_main(int argc, char **argv)
{
	struct load_opts o;
	int ret;

	msg_init("tokbench load");
	if ((ret = load_opts_parse(argc, argv, &o)) >= 0)
		return ret;
	ret = cmd_load_exec(&o, NULL);
	free(o.url);
	return ret;
}

const struct opts_cmd cmd_load = {
	"load", NULL, NULL, NULL, NULL, 0, 0, cmd_load_main
};
