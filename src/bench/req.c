/*
 * req.c - one GET /stream request: its libcurl callbacks and its outcome
 * (req.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/req.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "common/ts.h"
#include "bench/msg.h"
#include "bench/text.h"

static void req_violation(struct req *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records the first protocol violation of a request (later ones are
 * consequences of it and are dropped). */
static void
req_violation(struct req *q, const char *fmt, ...)
{
	va_list ap;

	if (q->fail[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(q->fail, sizeof(q->fail), fmt, ap);
	va_end(ap);
}

/* Adds an event-log entry when the log is kept; copies (text, len). */
static void
req_log(struct req *q, enum req_kind kind, const char *text, size_t len)
{
	struct req_logent *e;

	if (!q->keep_log)
		return;
	if (q->nlog == q->log_cap) {
		q->log_cap = q->log_cap ? q->log_cap * 2 : 64;
		q->log = xrealloc(q->log, q->log_cap * sizeof(*q->log));
	}
	e = &q->log[q->nlog++];
	e->ms = q->chunk_ms;
	e->kind = kind;
	e->text = xstrndup(text, len);
	e->len = len;
}

/* A token event: logged, time-stamped with its chunk's arrival; the
 * stop_after-th one hangs up (TS_EHUP). */
static enum ts_err
req_token(struct req *q, const struct sse_event *ev)
{
	req_log(q, REQ_TOKEN, ev->data, ev->data_len);
	if (q->ntokens == q->arrival_cap) {
		q->arrival_cap = q->arrival_cap ? q->arrival_cap * 2 : 64;
		q->arrival_ms = xrealloc(q->arrival_ms,
		    q->arrival_cap * sizeof(*q->arrival_ms));
	}
	q->arrival_ms[q->ntokens++] = q->chunk_ms;
	if (q->stop_after != 0 && q->ntokens == q->stop_after) {
		q->stopped = 1;
		return TS_EHUP;
	}
	return TS_OK;
}

/* True when j is a non-empty JSON string. */
static int
req_nonempty(const json_t *j)
{
	return json_is_string(j) && json_string_length(j) > 0;
}

/* A reasoning delta: counted, the first one's arrival kept (TTFR). */
static void
req_reasoning(struct req *q, const struct sse_event *ev)
{
	req_log(q, REQ_OTHER, ev->data, ev->data_len);
	if (q->nreason++ == 0)
		q->reason_ms = q->chunk_ms;
}

/*
 * A /v1 stream's chunk (OpenAI API reference, the chunk objects): a
 * non-empty choices[0].delta.content (chat) or choices[0].text
 * (completions) is a token arrival; a non-empty delta.reasoning (vLLM's
 * and OpenRouter's name) or delta.reasoning_content (DeepSeek's, vLLM's
 * older one) is a reasoning arrival; a "usage" object is kept (the usage
 * chunk's choices are empty). A chunk without a "choices" array is a
 * protocol violation (TS_EINVAL). The first stop_after-th token hangs
 * up (TS_EHUP).
 */
static enum ts_err
req_v1_chunk(struct req *q, json_t *root, const struct sse_event *ev)
{
	json_t *choices = json_object_get(root, "choices"), *c, *t, *u;

	if (!json_is_array(choices)) {
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
		req_violation(q, "chunk %zu has no \"choices\" array",
		    q->ntokens + 1);
		return TS_EINVAL;
	}
	u = json_object_get(root, "usage");
	if (json_is_object(u)) {
		t = json_object_get(u, "completion_tokens");
		if (json_is_integer(t))
			q->usage_completion = (long)json_integer_value(t);
		t = json_object_get(u, "prompt_tokens");
		if (json_is_integer(t))
			q->usage_prompt = (long)json_integer_value(t);
		t = json_object_get(json_object_get(u,
		    "prompt_tokens_details"), "cached_tokens");
		if (json_is_integer(t))
			q->usage_cached = (long)json_integer_value(t);
	}
	c = json_array_get(choices, 0);
	if (q->api == REQ_API_CHAT) {
		json_t *d = json_object_get(c, "delta");

		if (req_nonempty(json_object_get(d, "reasoning")) ||
		    req_nonempty(json_object_get(d, "reasoning_content"))) {
			req_reasoning(q, ev);
			if (!req_nonempty(json_object_get(d, "content")))
				return TS_OK;
		}
	}
	t = q->api == REQ_API_CHAT ? json_object_get(json_object_get(c,
	    "delta"), "content") : json_object_get(c, "text");
	if (!json_is_string(t) || json_string_length(t) == 0) {
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
		return TS_OK;
	}
	return req_token(q, ev);
}

/* Keeps an error object's text as the request's first error. */
static void
req_error(struct req *q, char *txt)
{
	if (q->error_text == NULL) {
		q->error_text = txt;
		q->error_after = q->ntokens;
	} else {
		free(txt);
	}
}

/* The sum of the integer members `keys` (NULL-ended) of object o; -1
 * when the first is missing. */
static long
req_sum(const json_t *o, const char *const *keys)
{
	json_t *t = json_object_get(o, keys[0]);
	long n;

	if (!json_is_integer(t))
		return -1;
	n = (long)json_integer_value(t);
	for (keys++; *keys != NULL; keys++)
		if (json_is_integer(t = json_object_get(o, *keys)))
			n += (long)json_integer_value(t);
	return n;
}

/* True when the SSE event's name (its "event:" field) is `name`. */
static int
req_event_is(const struct sse_event *ev, const char *name)
{
	size_t n = strlen(name);

	return ev->type_len == n && memcmp(ev->type, name, n) == 0;
}

/*
 * One of Anthropic's named events (RawMessageStreamEvent, @anthropic-ai/
 * sdk resources/messages/messages.d.ts; the SDK's Stream dispatches on
 * the SSE event name, and so does this): content_block_delta with a
 * non-empty text_delta is a token, with a thinking_delta a reasoning
 * token (other deltas, signature and input_json, are neither);
 * message_start gives the prompt (input_tokens + the cache's reads and
 * creations, which Anthropic counts apart), message_delta the
 * output_tokens, message_stop the end; "error" is an error event; ping,
 * the block starts and stops and unknown events are skipped (the SDK's
 * rule). A known event whose data is not a JSON object, or any event
 * after message_stop, is a protocol violation.
 */
static enum ts_err
req_messages_event(struct req *q, const struct sse_event *ev)
{
	static const char *const in_keys[] = {"input_tokens",
	    "cache_creation_input_tokens", "cache_read_input_tokens", NULL};
	static const char *const out_keys[] = {"output_tokens", NULL};
	json_error_t jerr;
	json_t *root, *d, *t;
	const char *dtype;
	enum ts_err rc = TS_OK;
	char *txt, *name;
	long n;

	if (q->done) {
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
		req_violation(q, "an event after message_stop");
		return TS_EINVAL;
	}
	if (!req_event_is(ev, "message_start") &&
	    !req_event_is(ev, "content_block_delta") &&
	    !req_event_is(ev, "message_delta") &&
	    !req_event_is(ev, "message_stop") &&
	    !req_event_is(ev, "error")) {
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
		return TS_OK;
	}
	root = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &jerr);
	if (!json_is_object(root)) {
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
		txt = text_sanitize(ev->data, ev->data_len);
		name = text_sanitize(ev->type, ev->type_len);
		req_violation(q, "event %s is not a JSON object: %s", name,
		    txt);
		free(name);
		free(txt);
		json_decref(root);
		return TS_EINVAL;
	}
	if (req_event_is(ev, "error")) {
		req_log(q, REQ_ERROR, ev->data, ev->data_len);
		txt = text_error(root);
		req_error(q, txt != NULL ? txt : text_sanitize(ev->data,
		    ev->data_len));
	} else if (req_event_is(ev, "content_block_delta")) {
		d = json_object_get(root, "delta");
		dtype = json_string_value(json_object_get(d, "type"));
		if (dtype != NULL && strcmp(dtype, "text_delta") == 0 &&
		    req_nonempty(json_object_get(d, "text")))
			rc = req_token(q, ev);
		else if (dtype != NULL && strcmp(dtype, "thinking_delta") == 0 &&
		    req_nonempty(json_object_get(d, "thinking")))
			req_reasoning(q, ev);
		else
			req_log(q, REQ_OTHER, ev->data, ev->data_len);
	} else if (req_event_is(ev, "message_start")) {
		t = json_object_get(json_object_get(root, "message"), "usage");
		if ((n = req_sum(t, in_keys)) >= 0)
			q->usage_prompt = n;
		t = json_object_get(t, "cache_read_input_tokens");
		if (json_is_integer(t))
			q->usage_cached = (long)json_integer_value(t);
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
	} else if (req_event_is(ev, "message_delta")) {
		if ((n = req_sum(json_object_get(root, "usage"),
		    out_keys)) >= 0)
			q->usage_completion = n;
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
	} else {        /* message_stop */
		req_log(q, REQ_DONE, ev->data, ev->data_len);
		q->done = 1;
		q->done_ms = q->chunk_ms;
	}
	json_decref(root);
	return rc;
}

/*
 * SSE event callback. Events of a type other than "message" are not
 * tokstream's (WHATWG clients skip them); data: [DONE] ends the stream;
 * {"error":{...}} is an error event (read on to [DONE]); JSON with a
 * string "token" is a token event, time-stamped with its chunk's arrival.
 * Returns TS_OK to go on, TS_EHUP after the stop_after-th token (the
 * deliberate hang-up), TS_EINVAL on a protocol violation (q->fail says
 * which); either stops the transfer.
 */
static enum ts_err
req_on_event(void *ud, const struct sse_event *ev)
{
	struct req *q = ud;
	json_error_t jerr;
	json_t *root;
	char *txt;

	if (q->api == REQ_API_MESSAGES)
		return req_messages_event(q, ev);
	if (ev->type_len != 7 || memcmp(ev->type, "message", 7) != 0) {
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
		return TS_OK;
	}
	if (ev->data_len == 6 && memcmp(ev->data, "[DONE]", 6) == 0) {
		req_log(q, REQ_DONE, ev->data, ev->data_len);
		if (q->done) {
			req_violation(q, "a second data: [DONE]");
			return TS_EINVAL;
		}
		q->done = 1;
		q->done_ms = q->chunk_ms;
		return TS_OK;
	}
	if (q->done) {
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
		req_violation(q, "an event after data: [DONE]");
		return TS_EINVAL;
	}
	root = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &jerr);
	if (root != NULL && q->api != REQ_API_LAB &&
	    json_object_get(root, "error") == NULL) {
		enum ts_err rc = req_v1_chunk(q, root, ev);

		json_decref(root);
		return rc;
	}
	if (root == NULL) {
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
		txt = text_sanitize(ev->data, ev->data_len);
		req_violation(q, "event %zu is not JSON (%s at column %d): %s",
		    q->ntokens + 1, jerr.text, jerr.column, txt);
		free(txt);
		return TS_EINVAL;
	}
	if ((txt = text_error(root)) != NULL) {
		req_log(q, REQ_ERROR, ev->data, ev->data_len);
		req_error(q, txt);
		json_decref(root);
		return TS_OK;
	}
	if (!json_is_string(json_object_get(root, "token"))) {
		json_decref(root);
		req_log(q, REQ_OTHER, ev->data, ev->data_len);
		req_violation(q, "event %zu has no string \"token\"",
		    q->ntokens + 1);
		return TS_EINVAL;
	}
	json_decref(root);
	return req_token(q, ev);
}

/*
 * One line of an Ollama NDJSON stream (docs/api.md; api/types.go,
 * ChatResponse / GenerateResponse): {"error":...} is an error (Ollama's
 * last line); a non-empty message.content (chat) or response (generate)
 * is a token, a non-empty message.thinking (thinking) a reasoning token;
 * "done":true is the end, with prompt_eval_count and eval_count. A blank
 * line is skipped; a line that is not a JSON object, or one after the
 * end, is a protocol violation.
 */
static enum ts_err
req_ollama_line(struct req *q, const char *s, size_t n)
{
	struct sse_event ev;
	json_error_t jerr;
	json_t *root, *m, *t;
	enum ts_err rc = TS_OK;
	int chat = q->api == REQ_API_OLLAMA_CHAT;
	char *txt;
	size_t i;

	for (i = 0; i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r');
	    i++)
		;
	if (i == n)
		return TS_OK;
	memset(&ev, 0, sizeof(ev));
	ev.data = s;
	ev.data_len = n;
	if (q->done) {
		req_log(q, REQ_OTHER, s, n);
		req_violation(q, "a line after \"done\":true");
		return TS_EINVAL;
	}
	root = json_loadb(s, n, JSON_ALLOW_NUL, &jerr);
	if (!json_is_object(root)) {
		req_log(q, REQ_OTHER, s, n);
		txt = text_sanitize(s, n);
		req_violation(q, "line %zu is not a JSON object: %s",
		    q->ntokens + q->nreason + 1, txt);
		free(txt);
		json_decref(root);
		return TS_EINVAL;
	}
	if ((txt = text_error(root)) != NULL) {
		req_log(q, REQ_ERROR, s, n);
		req_error(q, txt);
		json_decref(root);
		return TS_OK;
	}
	m = chat ? json_object_get(root, "message") : root;
	if (req_nonempty(json_object_get(m, "thinking")))
		req_reasoning(q, &ev);
	if (req_nonempty(json_object_get(m, chat ? "content" : "response")))
		rc = req_token(q, &ev);
	else
		req_log(q, REQ_OTHER, s, n);
	if (rc == TS_OK && json_is_true(json_object_get(root, "done"))) {
		if (json_is_integer(t = json_object_get(root, "eval_count")))
			q->usage_completion = (long)json_integer_value(t);
		if (json_is_integer(t = json_object_get(root,
		    "prompt_eval_count")))
			q->usage_prompt = (long)json_integer_value(t);
		q->done = 1;
		q->done_ms = q->chunk_ms;
	}
	json_decref(root);
	return rc;
}

/*
 * Feeds (p, n) of an NDJSON body: each '\n'-ended line goes to
 * req_ollama_line(); a partial line waits in q->line. Returns TS_OK,
 * TS_ELIMIT for a line over SSE_PARSE_DEFAULT_MAX bytes, or what a line
 * returned.
 */
static enum ts_err
req_ndjson_feed(struct req *q, const char *p, size_t n)
{
	const char *nl;
	enum ts_err rc;
	size_t k;

	while (n > 0) {
		if ((nl = memchr(p, '\n', n)) == NULL)
			return ts_buf_append(&q->line, p, n);
		k = (size_t)(nl - p);
		if (q->line.len > 0) {
			if (ts_buf_append(&q->line, p, k) != TS_OK)
				return TS_ELIMIT;
			rc = req_ollama_line(q, q->line.p, q->line.len);
			ts_buf_reset(&q->line);
		} else {
			rc = req_ollama_line(q, p, k);
		}
		if (rc != TS_OK)
			return rc;
		p = nl + 1;
		n -= k + 1;
	}
	return TS_OK;
}

/* SSE comment callback: counted, and logged. */
static void
req_on_comment(void *ud, const char *text, size_t len)
{
	struct req *q = ud;

	q->ncomments++;
	req_log(q, REQ_COMMENT, text, len);
}

/*
 * libcurl header callback: keeps X-Request-Id (the stream id that
 * /_debug/generated?id= knows). A status line starts a new response (1xx,
 * redirects), so it forgets what an earlier one said. An unusable id (see
 * client_header_line()) is forgotten too, and request_id_bad says so.
 * Returns n (go on).
 */
static size_t
req_on_header(char *ptr, size_t size, size_t nitems, void *ud)
{
	struct req *q = ud;
	size_t n = size * nitems, len = 0;
	const char *val = NULL;

	if (q->cap != NULL && capture_header_line(q->cap, ptr, n) != TS_OK)
		return 0;       /* the recording's budget is spent */
	switch (client_header_line(ptr, n, REQ_ID_MAX, &val, &len)) {
	case CLIENT_HEADER_STATUS:
		q->request_id_len = 0;
		q->request_id_bad = 0;
		break;
	case CLIENT_HEADER_ID:
		memcpy(q->request_id, val, len);
		q->request_id[len] = '\0';
		q->request_id_len = len;
		q->request_id_bad = 0;
		break;
	case CLIENT_HEADER_ID_BAD:
		q->request_id_len = 0;
		q->request_id_bad = 1;
		break;
	case CLIENT_HEADER_OTHER:
		break;
	}
	return n;
}

/* True when q reads Ollama's NDJSON. */
static int
req_ollama(const struct req *q)
{
	return q->api == REQ_API_OLLAMA_CHAT ||
	    q->api == REQ_API_OLLAMA_GENERATE;
}

/*
 * client_check_start() for an NDJSON answer: on the first chunk, the
 * status, and for a 200 a Content-Type of application/x-ndjson (Ollama's;
 * parameters allowed). Returns TS_OK, or TS_EFORMAT with the reason in
 * why.
 */
static enum ts_err
req_check_ndjson(struct req *q, char *why, size_t whysz)
{
	static const char nd[] = "application/x-ndjson";
	char *ct = NULL;

	if (q->status_known)
		return TS_OK;
	q->status_known = 1;
	curl_easy_getinfo(q->curl, CURLINFO_RESPONSE_CODE, &q->status);
	if (q->status != 200)
		return TS_OK;
	curl_easy_getinfo(q->curl, CURLINFO_CONTENT_TYPE, &ct);
	if (ct != NULL && strncasecmp(ct, nd, sizeof(nd) - 1) == 0 &&
	    (ct[sizeof(nd) - 1] == '\0' || ct[sizeof(nd) - 1] == ';' ||
	    ct[sizeof(nd) - 1] == ' '))
		return TS_OK;
	snprintf(why, whysz, "HTTP 200 with Content-Type %.60s, not "
	    "application/x-ndjson", ct ? ct : "(none)");
	return TS_EFORMAT;
}

/*
 * libcurl write callback: time-stamps the chunk, then feeds a 200 answer
 * to the SSE parser, or keeps a capped copy of any other answer's body
 * for its error message. Returns n to go on, or 0 to end the transfer:
 * after the stop_after-th token, or on a protocol violation.
 */
static size_t
req_on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct req *q = ud;
	size_t n = size * nmemb;
	char why[CLIENT_WHY_MAX];
	enum ts_err rc;

	q->chunk_ms = client_ms_since(&q->t0);
	/* tokbench record: every read as it came, before any check */
	if (q->cap != NULL && capture_chunk(q->cap,
	    (int64_t)(q->chunk_ms * 1000.0 + 0.5), ptr, n) != TS_OK)
		return 0;       /* the recording's budget is spent */
	if (req_ollama(q) ? req_check_ndjson(q, why, sizeof(why)) != TS_OK :
	    client_check_start(q->curl, &q->status_known, &q->status, why,
	    sizeof(why)) != TS_OK) {
		req_violation(q, "%s", why);
		return 0;
	}
	if (q->status != 200) {
		client_body_put(&q->body, ptr, n);
		return n;
	}
	if (req_ollama(q))
		rc = req_ndjson_feed(q, ptr, n);
	else
		rc = sse_parser_feed(&q->parser, ptr, n);
	if (rc == TS_OK)
		return n;
	if (rc == TS_ELIMIT)
		req_violation(q, "a line or event is over %zu bytes",
		    q->parser.max_bytes);
	return 0;
}

struct req *
req_new(long timeout_ms, size_t stop_after, int rst, int keep_log)
{
	struct req *q = xcalloc(1, sizeof(*q));

	q->stop_after = stop_after;
	q->keep_log = keep_log;
	q->done_ms = -1.0;
	q->reason_ms = -1.0;
	q->usage_prompt = q->usage_completion = q->usage_cached = -1;
	ts_buf_init(&q->body.buf, REQ_BODY_MAX);
	ts_buf_init(&q->line, SSE_PARSE_DEFAULT_MAX);
	sse_parser_init(&q->parser, req_on_event, req_on_comment, q);
	if ((q->curl = curl_easy_init()) == NULL) {
		msg_err("curl_easy_init failed");
		req_free(q);
		return NULL;
	}
	client_curl_common(q->curl, q->errbuf, timeout_ms);
	curl_easy_setopt(q->curl, CURLOPT_WRITEFUNCTION, req_on_body);
	curl_easy_setopt(q->curl, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(q->curl, CURLOPT_HEADERFUNCTION, req_on_header);
	curl_easy_setopt(q->curl, CURLOPT_HEADERDATA, q);
	curl_easy_setopt(q->curl, CURLOPT_PRIVATE, q);
	if (rst)
		curl_easy_setopt(q->curl, CURLOPT_SOCKOPTFUNCTION,
		    client_sockopt_rst);
	return q;
}

char *
req_stream_url(const char *base, const char *prompt, size_t prompt_len,
    long max_tokens, long tpot_ms, long prefill_ms)
{
	size_t n = strlen(base) + prompt_len + 128;
	char *u = xmalloc(n);
	int k;

	k = snprintf(u, n, "%s/stream?prompt=%.*s&max_tokens=%ld", base,
	    (int)prompt_len, prompt, max_tokens);
	if (tpot_ms >= 0)
		k += snprintf(u + k, n - (size_t)k, "&tpot_ms=%ld", tpot_ms);
	if (prefill_ms >= 0)
		snprintf(u + k, n - (size_t)k, "&prefill_ms=%ld", prefill_ms);
	return u;
}

void
req_set_url(struct req *q, char *url)
{
	free(q->url);
	q->url = url;
	curl_easy_setopt(q->curl, CURLOPT_URL, url);
}

/* Adds q->reasoning's field for API api to the body o. */
static void
req_add_reasoning(const struct req *q, enum req_api api, json_t *o)
{
	const struct req_reasoning *r = q->reasoning;

	if (r == NULL)
		return;
	if (api == REQ_API_MESSAGES && r->thinking_budget > 0)
		json_object_set_new(o, "thinking", json_pack("{s:s,s:I}",
		    "type", "enabled", "budget_tokens",
		    (json_int_t)r->thinking_budget));
	else if (api == REQ_API_CHAT && r->effort != NULL)
		json_object_set_new(o, "reasoning_effort",
		    json_string(r->effort));
	else if ((api == REQ_API_OLLAMA_CHAT ||
	    api == REQ_API_OLLAMA_GENERATE) && r->think)
		json_object_set_new(o, "think", json_true());
}

/* Makes the body o (owned, freed here) q's POST body, of API api, with
 * the reasoning asked for and the lab knobs tpot_ms and prefill_ms when
 * they are >= 0. */
static void
req_set_body(struct req *q, enum req_api api, json_t *o, long tpot_ms,
    long prefill_ms)
{
	if (o == NULL)
		abort();        /* json_pack of valid args: allocation only */
	req_add_reasoning(q, api, o);
	if (q->messages != NULL && json_object_get(o, "messages") != NULL)
		json_object_set(o, "messages", q->messages);
	if (tpot_ms >= 0)
		json_object_set_new(o, "tpot_ms", json_integer(tpot_ms));
	if (prefill_ms >= 0)
		json_object_set_new(o, "prefill_ms", json_integer(prefill_ms));
	free(q->post);
	q->post = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (q->post == NULL)
		abort();        /* only allocation fails here: UTF-8 args */
	q->api = api;
	curl_easy_setopt(q->curl, CURLOPT_POSTFIELDS, q->post);
	curl_easy_setopt(q->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(q->post));
}

void
req_set_v1(struct req *q, enum req_api api, const char *model,
    const char *prompt, long max_tokens, int ignore_eos, long tpot_ms,
    long prefill_ms)
{
	json_t *o = json_pack("{s:s,s:I,s:b,s:{s:b}}", "model", model,
	    "max_tokens", (json_int_t)max_tokens, "stream", 1,
	    "stream_options", "include_usage", 1);

	if (api == REQ_API_CHAT)
		json_object_set_new(o, "messages", json_pack("[{s:s,s:s}]",
		    "role", "user", "content", prompt));
	else
		json_object_set_new(o, "prompt", json_string(prompt));
	if (ignore_eos)
		json_object_set_new(o, "ignore_eos", json_true());
	req_set_body(q, api, o, tpot_ms, prefill_ms);
}

void
req_set_messages(struct req *q, const char *model, const char *prompt,
    long max_tokens, long tpot_ms, long prefill_ms)
{
	json_t *o = json_pack("{s:s,s:I,s:[{s:s,s:s}],s:b}", "model", model,
	    "max_tokens", (json_int_t)max_tokens, "messages", "role", "user",
	    "content", prompt, "stream", 1);

	req_set_body(q, REQ_API_MESSAGES, o, tpot_ms, prefill_ms);
}

void
req_set_ollama(struct req *q, enum req_api api, const char *model,
    const char *prompt, long max_tokens, long tpot_ms, long prefill_ms)
{
	json_t *o = json_pack("{s:s,s:b,s:{s:I}}", "model", model, "stream",
	    1, "options", "num_predict", (json_int_t)max_tokens);

	if (api == REQ_API_OLLAMA_CHAT)
		json_object_set_new(o, "messages", json_pack("[{s:s,s:s}]",
		    "role", "user", "content", prompt));
	else
		json_object_set_new(o, "prompt", json_string(prompt));
	req_set_body(q, api, o, tpot_ms, prefill_ms);
}

void
req_set_reasoning(struct req *q, const struct req_reasoning *r)
{
	q->reasoning = r;
}

void
req_set_messages_array(struct req *q, json_t *m)
{
	q->messages = m;
}

void
req_finish(struct req *q, CURLcode cc)
{
	q->e2e_ms = client_ms_since(&q->t0);
	q->result = cc;
	if (q->curl == NULL)
		return;
	if (!q->status_known)
		curl_easy_getinfo(q->curl, CURLINFO_RESPONSE_CODE, &q->status);
	curl_easy_getinfo(q->curl, CURLINFO_CONNECT_TIME_T, &q->connect_us);
	curl_easy_cleanup(q->curl);
	q->curl = NULL;
}

enum req_fate
req_fate(const struct req *q, enum load_fail *kind)
{
	CURLcode cc = q->result;

	if (q->stopped && cc == CURLE_WRITE_ERROR)
		return REQ_STOPPED;
	if (q->fail[0] != '\0')
		*kind = LOAD_FAIL_PROTOCOL;
	else if (q->status == 0 && client_unreachable(cc, q->connect_us))
		*kind = LOAD_FAIL_CONNECT;
	else if (q->status == 0)
		*kind = cc == CURLE_OPERATION_TIMEDOUT ? LOAD_FAIL_TIMEOUT :
		    LOAD_FAIL_TRANSPORT;
	else if (q->status != 200)
		*kind = load_fail_of_status(q->status);
	else if (q->error_text != NULL)
		*kind = LOAD_FAIL_SSE_ERROR;
	else if (!q->done)
		*kind = cc == CURLE_OPERATION_TIMEDOUT ? LOAD_FAIL_TIMEOUT :
		    LOAD_FAIL_TRUNCATED;
	else if (cc != CURLE_OK)
		*kind = LOAD_FAIL_TRUNCATED;    /* not a clean end after it */
	else
		return REQ_COMPLETED;
	return REQ_FAILED;
}

const char *
req_detail(const struct req *q)
{
	return q->errbuf[0] != '\0' ? q->errbuf :
	    curl_easy_strerror(q->result);
}

void
req_free(struct req *q)
{
	size_t i;

	if (q == NULL)
		return;
	if (q->curl != NULL)
		curl_easy_cleanup(q->curl);
	capture_free(q->cap);
	sse_parser_free(&q->parser);
	ts_buf_free(&q->body.buf);
	ts_buf_free(&q->line);
	free(q->arrival_ms);
	free(q->error_text);
	for (i = 0; i < q->nlog; i++)
		free(q->log[i].text);
	free(q->log);
	free(q->url);
	free(q->post);
	free(q);
}
