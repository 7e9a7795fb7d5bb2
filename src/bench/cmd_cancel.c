/*
 * cmd_cancel.c - `tokbench cancel`: reads a few token events of a stream,
 * hangs up, and watches /_debug/generated until the server has stopped
 * generating it. Also a step of `tokbench lab` (cmd.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "bench/client.h"
#include "bench/measure.h"
#include "bench/msg.h"
#include "bench/outdir.h"
#include "bench/text.h"

#define CMD_CANCEL_POLL_EVERY_MS 20     /* /_debug/generated poll period */
#define CMD_CANCEL_POLL_TIMEOUT_MS 10000        /* give up on "running" */
#define CMD_CANCEL_POLL_REQ_TIMEOUT_MS 2000     /* one poll */

/* Sleeps `ms` milliseconds, resuming after signals. */
static void
cmd_cancel_sleep_ms(long ms)
{
	struct timespec ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * One GET /_debug/generated?id=ID. Fills requested/generated/status of
 * *c from the JSON answer. Returns TS_OK, or prints one line and returns
 * TS_ESYS (transport) or TS_EINVAL (HTTP error, bad JSON).
 */
static enum ts_err
cmd_cancel_poll(const struct opts *o, const char *id,
    struct cmd_cancel_result *c)
{
	struct client_body body = {{NULL, 0, 0, REQ_BODY_MAX}, 0};
	char errbuf[CURL_ERROR_SIZE], *esc = NULL, *full = NULL, *url, *txt;
	json_t *root = NULL, *st, *gen, *req;
	json_error_t jerr;
	curl_off_t connect_us = 0;
	enum ts_err rc = TS_ESYS;
	long status = 0;
	CURLcode cc;
	CURL *curl;
	size_t n;
	const char *base = o->debug_url ? o->debug_url : o->url;
	size_t blen = strlen(base);

	while (blen > 0 && base[blen - 1] == '/')
		blen--;
	n = blen + sizeof("/_debug/generated");
	url = xmalloc(n);
	snprintf(url, n, "%.*s/_debug/generated", (int)blen, base);
	if ((curl = curl_easy_init()) == NULL) {
		msg_err("curl_easy_init failed");
		goto out;
	}
	if ((esc = curl_easy_escape(curl, id, (int)strlen(id))) == NULL) {
		msg_err("cannot percent-encode the stream id");
		goto out;
	}
	n = strlen(url) + strlen(esc) + 8;
	full = xmalloc(n);
	snprintf(full, n, "%s?id=%s", url, esc);
	client_curl_common(curl, errbuf, CMD_CANCEL_POLL_REQ_TIMEOUT_MS);
	curl_easy_setopt(curl, CURLOPT_URL, full);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, client_body_write);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
	cc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME_T, &connect_us);
	if (cc != CURLE_OK) {
		if (status == 0 && client_unreachable(cc, connect_us))
			msg_err("cannot reach %s: %s; " MSG_START_HINT, url,
			    curl_easy_strerror(cc));
		else
			msg_err("%s: %s", url,
			    errbuf[0] ? errbuf : curl_easy_strerror(cc));
		goto out;
	}
	rc = TS_EINVAL;
	if (status != 200) {
		measure_http_error(url, status, &body);
		goto out;
	}
	root = body.truncated ? NULL :
	    json_loadb(body.buf.p ? body.buf.p : "", body.buf.len, 0, &jerr);
	st = json_object_get(root, "status");
	gen = json_object_get(root, "generated");
	req = json_object_get(root, "requested");
	if (!json_is_string(st) || !json_is_integer(gen)) {
		msg_err("%s: answer is not JSON with a string \"status\" and "
		    "an integer \"generated\"", url);
		goto out;
	}
	txt = text_sanitize(json_string_value(st), json_string_length(st));
	snprintf(c->status, sizeof(c->status), "%s", txt);
	free(txt);
	c->generated = (long)json_integer_value(gen);
	c->requested = json_is_integer(req) ?
	    (long)json_integer_value(req) : c->max_tokens;
	rc = TS_OK;
out:
	json_decref(root);
	if (curl != NULL)
		curl_easy_cleanup(curl);
	curl_free(esc);
	free(full);
	free(url);
	ts_buf_free(&body.buf);
	return rc;
}

/* The poll runs every CMD_CANCEL_POLL_EVERY_MS for at most
 * CMD_CANCEL_POLL_TIMEOUT_MS after the hang-up. */
enum ts_err
cmd_cancel_run(const struct opts *o, struct cmd_cancel_result *c)
{
	struct req *q = NULL;
	struct timespec closed;
	enum ts_err rc;

	memset(c, 0, sizeof(*c));
	c->max_tokens = o->max_tokens;
	c->read = o->read_tokens;
	rc = measure_stream(o, c->max_tokens, (size_t)c->read, 0, &q);
	clock_gettime(CLOCK_MONOTONIC, &closed);
	if (rc != TS_OK)
		goto out;
	rc = TS_EFORMAT;
	if (!q->stopped) {
		msg_err("%s/stream: the stream ended after %zu token events, "
		    "before the %ld the cancel step reads", o->url,
		    q->ntokens, c->read);
		goto out;
	}
	if (q->request_id_len == 0) {
		msg_err("%s/stream: %s X-Request-Id header", o->url,
		    q->request_id_bad ? "unusable" : "no");
		goto out;
	}
	memcpy(c->request_id, q->request_id, q->request_id_len + 1);

	for (;;) {
		c->polls++;
		if ((rc = cmd_cancel_poll(o, c->request_id, c)) != TS_OK)
			goto out;
		c->poll_ms = client_ms_since(&closed);
		if (strcmp(c->status, "running") != 0)
			break;
		if (c->poll_ms >= CMD_CANCEL_POLL_TIMEOUT_MS) {
			msg_err("stream %s still running %d ms after the "
			    "client closed (generated=%ld of %ld)",
			    c->request_id, CMD_CANCEL_POLL_TIMEOUT_MS,
			    c->generated, c->requested);
			rc = TS_ETIMEDOUT;
			goto out;
		}
		cmd_cancel_sleep_ms(CMD_CANCEL_POLL_EVERY_MS);
	}
	if (o->id_only)
		printf("%s\n", c->request_id);
	else
		printf("cancel: request_id=%s requested=%ld read=%ld "
		    "generated=%ld status=%s poll_ms=%.2f polls=%d\n",
		    c->request_id, c->requested, c->read, c->generated,
		    c->status, c->poll_ms, c->polls);
	rc = TS_OK;
	if (o->out_dir != NULL)
		rc = outdir_write_fmt(o->out_dir, "cancel.txt",
		    "requested=%ld generated=%ld\n", c->requested,
		    c->generated);
out:
	req_free(q);
	return rc;
}

/* cancel: DIR/cancel.txt; a summary line on stdout. */
static int
cmd_cancel_main(struct opts *o)
{
	struct cmd_cancel_result c;

	return cmd_cancel_run(o, &c) == TS_OK ? 0 : 1;
}

static const struct option cmd_cancel_longopts[] = {
	OPTS_LONG_OUT, OPTS_LONG_URL, OPTS_LONG_PROMPT, OPTS_LONG_MAX,
	{"read", required_argument, NULL, OPTS_READ},
	{"id-only", no_argument, NULL, OPTS_ID_ONLY},
	{"rst", no_argument, NULL, OPTS_RST},
	{"debug-url", required_argument, NULL, OPTS_DEBUG_URL},
	OPTS_LONG_TIMING, OPTS_LONG_TIMEOUT, OPTS_LONG_HELP, OPTS_LONG_END
};

const struct opts_cmd cmd_cancel = {
	"cancel", ":ho:u:p:", cmd_cancel_longopts,
	"usage: tokbench cancel [--out DIR] [--url BASE] [--prompt TEXT]\n"
	"Opens /stream with max_tokens=100, reads 5 token events, closes "
	"the\n"
	"connection, then polls /_debug/generated?id=X-Request-Id every "
	"20 ms\n"
	"(at most 10 s) until the stream is no longer running. Writes\n"
	"DIR/cancel.txt as requested=<n> generated=<n>.\n"
	OPTS_USAGE_OUT OPTS_USAGE_NET
	"      --max-tokens N    max_tokens of the request (default 100)\n"
	"      --read N          token events read before closing "
	"(default 5)\n"
	"      --rst             close with a TCP reset (SO_LINGER 0), "
	"not a FIN\n"
	"      --id-only         print only the stream id (with no "
	"--out, no file)\n"
	"      --debug-url BASE  ask /_debug/generated there, not at --url "
	"(a\n"
	"                        front behind a proxy that forwards "
	"X-Forwarded-For)\n"
	OPTS_USAGE_TIMING,
	cmd_cancel_main, 0, OPTS_CANCEL_TOKENS, NULL
};
