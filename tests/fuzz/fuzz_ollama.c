/*
 * fuzz_ollama.c - ollama_parse_request (src/ollama/parse.h) on arbitrary
 * bytes, as the body of POST /api/chat and of POST /api/generate (every
 * input is parsed as both), then the prompt, the plan and the encoders
 * on what it accepted.
 *
 * Properties, each checked with abort():
 *  - the result is TS_OK or TS_EINVAL;
 *  - on an error: status 400, or 404 for a model string that is not the
 *    served one (with or without ":latest"), whose message is Ollama's
 *    "model \"...\" not found, try pulling it first"; the message is
 *    NUL-terminated; the request owns nothing; ollama_error_json gives a
 *    JSON object with exactly "error", a string;
 *  - on TS_OK the body is a JSON object whose model is served; stream a
 *    boolean (default true); num_predict within 0..8192; at most 4 stop
 *    strings of 1..64 bytes; temperature in 0..2, top_p in (0, 1];
 *  - the prompt renders (ollama_prompt) into a buffer of 4 MiB;
 *  - the plan is made (or refused with a 400) within a small cap, each
 *    call's span inside the guide;
 *  - a stream whose tokens are the stop strings and the model's name
 *    encodes to lines that each are one JSON object giving the token
 *    back, then a final object with done true;
 *  - nothing leaks.
 */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "ollama/encode.h"
#include "ollama/parse.h"
#include "ollama/plan.h"

#define MODEL "tokstream-sim"
static const char *const served[] = { MODEL };

/* Each line of (p, len) is a JSON object; the i-th's text field is
 * (want[i], want_len[i]) for i < n, the line after them done true. */
static void
check_lines(const char *p, size_t len, enum ollama_kind kind,
    const char *const *want, const size_t *want_len, size_t n)
{
	size_t i = 0, at = 0;

	while (at < len) {
		const char *nl = memchr(p + at, '\n', len - at);
		json_t *o, *t;

		FUZZ_CHECK(nl != NULL);
		o = json_loadb(p + at, (size_t)(nl - (p + at)), 0, NULL);
		FUZZ_CHECK(json_is_object(o));
		if (i < n) {
			t = kind == OLLAMA_CHAT ? json_object_get(
			    json_object_get(o, "message"), "content") :
			    json_object_get(o, "response");
			FUZZ_CHECK(json_is_string(t));
			FUZZ_CHECK(json_string_length(t) == want_len[i]);
			FUZZ_CHECK(memcmp(json_string_value(t), want[i],
			    want_len[i]) == 0);
			FUZZ_CHECK(json_is_false(json_object_get(o, "done")));
		} else {
			FUZZ_CHECK(json_is_true(json_object_get(o, "done")));
		}
		json_decref(o);
		at = (size_t)(nl - p) + 1;
		i++;
	}
	FUZZ_CHECK(i == n + 1);
}

static void
accepted(struct ollama_request *req)
{
	struct ollama_meta m = { req->kind, req->model, req->model_len };
	struct ollama_stats st = { OLLAMA_DONE_STOP, 4, 1, 2, 1, 3, 1 };
	const char *tok[OLLAMA_MAX_STOP + 1];
	size_t tok_len[OLLAMA_MAX_STOP + 1], n = 0, i;
	struct http_error err;
	struct ollama_plan plan;
	struct ts_buf b;

	FUZZ_CHECK(req->root != NULL && json_is_object(req->root));
	FUZZ_CHECK(ollama_model_known(req->model, req->model_len, served, 1));
	FUZZ_CHECK(req->num_predict <= 8192);
	FUZZ_CHECK(req->n_stop <= OLLAMA_MAX_STOP);
	FUZZ_CHECK(req->temperature >= 0 && req->temperature <= 2);
	FUZZ_CHECK(req->top_p > 0 && req->top_p <= 1);
	FUZZ_CHECK(req->stream == 0 || req->stream == 1);
	for (i = 0; i < req->n_stop; i++) {
		FUZZ_CHECK(req->stop_len[i] >= 1 && req->stop_len[i] <= 64);
		tok[n] = req->stop[i];
		tok_len[n++] = req->stop_len[i];
	}
	tok[n] = req->model;
	tok_len[n++] = req->model_len;
	ts_buf_init(&b, 4u << 20);
	FUZZ_CHECK(ollama_prompt(req, &b) == TS_OK);
	b.len = 0;
	if (ollama_plan_make(req, fuzz_hash(FUZZ_HASH_INIT, req->model,
	    req->model_len), 0, 4096, &plan, &err) == TS_OK) {
		for (i = 0; i < plan.ncalls; i++)
			FUZZ_CHECK(plan.calls[i].off + plan.calls[i].len <=
			    plan.guide.len && plan.calls[i].tool <
			    req->n_tools);
		ollama_plan_free(&plan);
	} else {
		FUZZ_CHECK(err.status == 400);
	}
	for (i = 0; i < n; i++)
		FUZZ_CHECK(ollama_encode_chunk(&b, &m, 1, tok[i], tok_len[i]) ==
		    TS_OK);
	FUZZ_CHECK(ollama_encode_final(&b, &m, 1, "", 0, NULL, 0, &st) ==
	    TS_OK);
	check_lines(b.p, b.len, req->kind, tok, tok_len, n);
	ts_buf_free(&b);
}

static void
refused(const struct http_error *err)
{
	struct ts_buf b;
	json_t *o;

	FUZZ_CHECK(err->status == 400 || err->status == 404);
	FUZZ_CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL);
	if (err->status == 404)
		FUZZ_CHECK(strncmp(err->message, "model \"", 7) == 0 &&
		    strstr(err->message, "\" not found, try pulling it "
		    "first") != NULL);
	ts_buf_init(&b, 4096);
	FUZZ_CHECK(ollama_error_json(err, &b) == TS_OK);
	o = json_loadb(b.p, b.len, 0, NULL);
	FUZZ_CHECK(json_is_object(o) && json_object_size(o) == 1 &&
	    json_is_string(json_object_get(o, "error")));
	json_decref(o);
	ts_buf_free(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum ollama_kind kinds[] = { OLLAMA_CHAT,
	    OLLAMA_GENERATE };
	struct ollama_request req;
	struct http_error err;
	size_t k;
	enum ts_err rc;

	if (size > (1u << 20))
		return 0;
	for (k = 0; k < 2; k++) {
		memset(&err, 0, sizeof(err));
		rc = ollama_parse_request(kinds[k], (const char *)data, size,
		    served, 1, &req, &err);
		FUZZ_CHECK(rc == TS_OK || rc == TS_EINVAL);
		if (rc == TS_OK) {
			accepted(&req);
			ollama_request_free(&req);
		} else {
			FUZZ_CHECK(req.root == NULL && req.msgs == NULL &&
			    req.tools == NULL);
			refused(&err);
		}
	}
	return 0;
}
