/*
 * fuzz_anthropic.c - anthropic_parse_request (src/anthropic/parse.h) on
 * arbitrary bytes, as the body of POST /v1/messages and of POST
 * /v1/messages/count_tokens (every input is parsed as both), then the
 * prompt, the plan and the encoders on what it accepted.
 *
 * Properties, each checked with abort():
 *  - the result is TS_OK or TS_EINVAL;
 *  - on an error: status 400, or 404 only for a body that is a JSON
 *    object whose model is a string other than the served one; the
 *    message NUL-terminated and not empty; the request owns nothing;
 *    anthropic_encode_error gives JSON {"type":"error","error":{"type",
 *    "message"},"request_id":null} with the type of the status;
 *  - on TS_OK the body is a JSON object whose model is the served one,
 *    and every field is within its documented range: max_tokens
 *    1..8192 (a create), 1..256 messages of valid UTF-8, 0..4 stop
 *    sequences of 1..64 bytes, temperature and top_p in [0, 1] (top_p
 *    not 0), a named tool among the tools, a thinking budget below
 *    max_tokens and never with a forced tool;
 *  - an accepted request renders its prompt (anthropic_prompt), is
 *    planned (a tool_use names one of its tools, whose input is a JSON
 *    object, as input_schema's type "object" asks),
 *    and a Message whose text block is its first message's text and an
 *    event of that text encode to JSON;
 *  - nothing leaks.
 */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "anthropic/encode.h"
#include "anthropic/parse.h"
#include "anthropic/plan.h"

#define MODEL "tokstream-sim"
static const char *const served[] = { MODEL };

/* 1 when the body is an object whose model is a string other than the
 * served one: the only 404. */
static int
other_model(const uint8_t *data, size_t size)
{
	json_error_t e;
	json_t *root = json_loadb((const char *)data, size,
	    JSON_REJECT_DUPLICATES, &e);
	const json_t *m = json_object_get(root, "model");
	int r = json_is_object(root) && json_is_string(m) &&
	    strcmp(json_string_value(m), MODEL) != 0;

	json_decref(root);
	return r;
}

static void
check_error(const struct http_error *err, int maybe404)
{
	struct ts_buf b;
	json_error_t e;
	json_t *v, *eo;

	FUZZ_CHECK(err->status == 400 || (err->status == 404 && maybe404));
	FUZZ_CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL);
	FUZZ_CHECK(err->message[0] != '\0');
	ts_buf_init(&b, 1 << 16);
	FUZZ_CHECK(anthropic_encode_error(&b, err) == TS_OK);
	v = json_loadb(b.p, b.len, 0, &e);
	FUZZ_CHECK(v != NULL);
	eo = json_object_get(v, "error");
	FUZZ_CHECK(json_object_size(v) == 3 && json_object_size(eo) == 2);
	FUZZ_CHECK(strcmp(json_string_value(json_object_get(eo, "type")),
	    anthropic_error_type(err->status)) == 0);
	FUZZ_CHECK(json_is_null(json_object_get(v, "request_id")));
	json_decref(v);
	ts_buf_free(&b);
}

static void
check_accepted(const struct anthropic_request *r, int count)
{
	struct anthropic_meta meta = { "msg_0", MODEL, sizeof(MODEL) - 1 };
	struct anthropic_usage u = { 1, 0, 0, 1, 0 };
	struct anthropic_block blk;
	struct anthropic_plan p;
	struct http_error err;
	struct ts_buf b;
	json_error_t e;
	json_t *v;
	size_t i;

	FUZZ_CHECK(count || (r->max_tokens >= 1 &&
	    r->max_tokens <= ANTHROPIC_MAX_TOKENS_CAP));
	FUZZ_CHECK(r->n_messages >= 1 &&
	    r->n_messages <= ANTHROPIC_MAX_MESSAGES);
	FUZZ_CHECK(r->n_stop <= ANTHROPIC_MAX_STOP);
	for (i = 0; i < r->n_stop; i++)
		FUZZ_CHECK(r->stop_len[i] >= 1 &&
		    r->stop_len[i] <= ANTHROPIC_MAX_STOP_BYTES);
	FUZZ_CHECK(r->temperature >= 0.0 && r->temperature <= 1.0);
	FUZZ_CHECK(r->top_p > 0.0 && r->top_p <= 1.0);
	FUZZ_CHECK(r->tool_choice != ANTHROPIC_TOOL_NAMED ||
	    r->tool_named < r->n_tools);
	FUZZ_CHECK(r->n_tools == 0 || r->tools_json != NULL);
	FUZZ_CHECK(r->thinking_budget == 0 || count ||
	    r->thinking_budget < r->max_tokens);
	FUZZ_CHECK(r->thinking_budget == 0 ||
	    (r->tool_choice != ANTHROPIC_TOOL_ANY &&
	    r->tool_choice != ANTHROPIC_TOOL_NAMED));

	ts_buf_init(&b, 8u << 20);
	FUZZ_CHECK(anthropic_prompt(r, &b) == TS_OK);
	FUZZ_CHECK(b.len > 0);
	ts_buf_free(&b);

	if (anthropic_plan_make(r, fuzz_hash(0, r->messages[0].text,
	    r->messages[0].len), 4096, &p, &err) == TS_OK) {
		FUZZ_CHECK(!p.tool_use || p.tool < r->n_tools);
		if (p.tool_use) {
			v = json_loadb(p.input.p, p.input.len, 0, &e);
			FUZZ_CHECK(json_is_object(v));
			json_decref(v);
		}
		anthropic_plan_free(&p);
	} else {
		FUZZ_CHECK(err.status == 400);
	}

	memset(&blk, 0, sizeof(blk));
	blk.kind = ANTHROPIC_BLOCK_TEXT;
	blk.text = r->messages[0].text;
	blk.len = r->messages[0].len;
	ts_buf_init(&b, 8u << 20);
	FUZZ_CHECK(anthropic_encode_message(&b, &meta, &blk, 1,
	    ANTHROPIC_STOP_END_TURN, r->n_stop > 0 ? r->stop[0] : NULL,
	    r->n_stop > 0 ? r->stop_len[0] : 0, &u) == TS_OK);
	v = json_loadb(b.p, b.len, 0, &e);
	FUZZ_CHECK(v != NULL);
	json_decref(v);
	b.len = 0;
	FUZZ_CHECK(anthropic_encode_delta(&b, 0, ANTHROPIC_BLOCK_TEXT,
	    blk.text, blk.len) == TS_OK);
	FUZZ_CHECK(strncmp(b.p, "event: content_block_delta\ndata: ", 33) ==
	    0);
	v = json_loadb(b.p + 33, b.len - 35, 0, &e);
	FUZZ_CHECK(v != NULL);
	FUZZ_CHECK(json_string_length(json_object_get(json_object_get(v,
	    "delta"), "text")) == blk.len);
	json_decref(v);
	ts_buf_free(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct anthropic_request r;
	struct http_error err;
	int count;

	for (count = 0; count < 2; count++) {
		enum ts_err rc;

		memset(&err, 0, sizeof(err));
		rc = anthropic_parse_request((const char *)data, size, count,
		    served, 1, &r, &err);
		FUZZ_CHECK(rc == TS_OK || rc == TS_EINVAL);
		if (rc != TS_OK) {
			FUZZ_CHECK(r.messages == NULL && r.tools == NULL &&
			    r.system == NULL && r.n_stop == 0);
			check_error(&err, other_model(data, size));
			continue;
		}
		FUZZ_CHECK(!other_model(data, size));
		check_accepted(&r, count);
		anthropic_request_free(&r);
	}
	return 0;
}
