/*
 * fuzz_openai.c - openai_parse_request (src/openai/openai.h, parse.h, encode.h) on arbitrary bytes,
 * as the body of POST /v1/completions and of POST /v1/chat/completions
 * (every input is parsed as both), then the encoders on what it accepted.
 *
 * Properties, each checked with abort():
 *  - the result is TS_OK, TS_EINVAL or TS_ELIMIT;
 *  - the first checks agree with a model built on jansson itself: an
 *    empty body is empty_body; no JSON, not an object or a duplicate key
 *    invalid_json; no or null model missing_required_parameter, a model
 *    not a string invalid_type (param "model" both);
 *  - on TS_OK the body is a JSON object whose model is the served one,
 *    and every field holds the JSON's value or its default within its
 *    documented range: the prompt (a string or the one string of an
 *    array), the messages (count, roles, string contents byte for byte),
 *    max_tokens (max_completion_tokens winning on chat), temperature,
 *    top_p, stream, include_usage (only with stream), stop sequences
 *    (1..4 of 1..64 bytes, byte for byte), seed, ignore_eos, lab knobs;
 *  - on an error: status 400, or 404 with model_not_found for a model
 *    string that is not the served one; type and code set; message and
 *    param NUL-terminated; a param names a field of the body (its first
 *    name is a key of the object, or a missing top-level field); the
 *    request owns nothing; TS_ELIMIT
 *    only with array_above_max_length or string_above_max_length;
 *  - http_error_json_openai of the error is JSON (json_loadb) with
 *    exactly message, type, param (the param or null) and code;
 *    openai_encode_stream_error gives an error event then [DONE];
 *  - for an accepted request, a stream whose tokens are its stop
 *    sequences encodes to events that each are one "data: " line of JSON
 *    giving back each token, the role in the first chat chunk only, then
 *    [DONE]; a chat request renders with openai_chat_prompt;
 *  - nothing leaks.
 */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "openai/chat.h"
#include "openai/plan.h"
#include "openai/encode.h"
#include "openai/parse.h"

#define MODEL "tokstream-sim"
#define MODEL_LEN (sizeof(MODEL) - 1)
static const char *const served[] = { MODEL };

static int
given(const json_t *v)
{
	return v != NULL && !json_is_null(v);
}

/*
 * The code the first checks must give for `body`, or NULL when they pass
 * (then *root is the loaded object; caller decrefs it).
 */
/* 1 when v nests arrays and objects more than `left` levels (parse.c's
 * OPENAI_MAX_DEPTH rule, computed on the tree). */
static int
deeper(const json_t *v, int left)
{
	const json_t *x;
	const char *k;
	size_t i;

	if (!json_is_array(v) && !json_is_object(v))
		return 0;
	if (left <= 0)
		return 1;
	json_array_foreach(v, i, x)
		if (deeper(x, left - 1))
			return 1;
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, x)
			if (deeper(x, left - 1))
				return 1;
	return 0;
}

static const char *
model_code(const char *body, size_t len, json_t **root)
{
	json_error_t jerr;
	json_t *m;

	*root = NULL;
	if (len == 0)
		return "empty_body";
	*root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &jerr);
	if (*root == NULL || !json_is_object(*root) ||
	    deeper(*root, OPENAI_MAX_DEPTH))
		return "invalid_json";
	m = json_object_get(*root, "model");
	if (!given(m))
		return "missing_required_parameter";
	if (!json_is_string(m))
		return "invalid_type";
	return NULL;
}

/* True when the string v holds exactly (s, len). */
static int
same(const json_t *v, const char *s, size_t len)
{
	return json_is_string(v) && json_string_length(v) == len &&
	    memcmp(json_string_value(v), s, len) == 0;
}

/* The integer field `name` of root, or `dflt` when absent or null. */
static long long
want_int(const json_t *root, const char *name, long long dflt)
{
	const json_t *v = json_object_get(root, name);

	return given(v) ? (long long)json_integer_value(v) : dflt;
}

static double
want_num(const json_t *root, const char *name, double dflt)
{
	const json_t *v = json_object_get(root, name);

	return given(v) ? json_number_value(v) : dflt;
}

static int
want_bool(const json_t *obj, const char *name)
{
	return json_is_true(json_object_get(obj, name));
}

static void
check_accepted(enum openai_kind kind, const json_t *root,
    const struct openai_request *r)
{
	const json_t *v;
	size_t i;

	FUZZ_CHECK(r->kind == kind);
	FUZZ_CHECK(same(json_object_get(root, "model"), MODEL, MODEL_LEN));
	FUZZ_CHECK(r->model != NULL && r->model_len == MODEL_LEN &&
	    memcmp(r->model, MODEL, MODEL_LEN + 1) == 0);
	if (kind == OPENAI_COMPLETIONS) {
		v = json_object_get(root, "prompt");
		if (json_is_array(v)) {
			FUZZ_CHECK(json_array_size(v) == 1);
			v = json_array_get(v, 0);
		}
		FUZZ_CHECK(r->prompt != NULL);
		FUZZ_CHECK(r->prompt[r->prompt_len] == '\0');
		FUZZ_CHECK(same(v, r->prompt, r->prompt_len));
		FUZZ_CHECK(r->messages == NULL && r->n_messages == 0);
		FUZZ_CHECK(r->max_tokens == want_int(root, "max_tokens",
		    OPENAI_COMPLETIONS_DEFAULT_MAX_TOKENS));
	} else if (kind == OPENAI_RESPONSES) {
		const json_t *ins = json_object_get(root, "instructions");
		size_t first = given(ins) ? 1 : 0;

		v = json_object_get(root, "input");
		FUZZ_CHECK(r->prompt == NULL);
		FUZZ_CHECK(r->n_messages == first + (json_is_string(v) ? 1 :
		    json_array_size(v)));
		FUZZ_CHECK(r->n_messages > first);
		if (first) {
			FUZZ_CHECK(json_is_string(ins));
			FUZZ_CHECK(r->messages[0].role == OPENAI_ROLE_SYSTEM);
			FUZZ_CHECK(same(ins, r->messages[0].content,
			    r->messages[0].content_len));
			FUZZ_CHECK(same(ins, r->instructions,
			    r->instructions_len));
		} else {
			FUZZ_CHECK(r->instructions == NULL);
		}
		if (json_is_string(v))
			FUZZ_CHECK(r->messages[first].role ==
			    OPENAI_ROLE_USER && same(v,
			    r->messages[first].content,
			    r->messages[first].content_len));
		for (i = 0; i < r->n_messages; i++)
			FUZZ_CHECK(r->messages[i].content != NULL &&
			    r->messages[i].content[r->messages[i].content_len]
			    == '\0');
		FUZZ_CHECK(r->has_max_tokens == given(json_object_get(root,
		    "max_output_tokens")));
		FUZZ_CHECK(r->max_tokens == want_int(root,
		    "max_output_tokens", OPENAI_CHAT_DEFAULT_MAX_TOKENS));
		FUZZ_CHECK(r->max_tokens >= 1);
	} else {
		v = json_object_get(root, "messages");
		FUZZ_CHECK(r->prompt == NULL);
		FUZZ_CHECK(json_is_array(v));
		FUZZ_CHECK(r->n_messages == json_array_size(v));
		FUZZ_CHECK(r->n_messages >= 1 &&
		    r->n_messages <= OPENAI_MAX_MESSAGES);
		for (i = 0; i < r->n_messages; i++) {
			const json_t *m = json_array_get(v, i);
			const json_t *role = json_object_get(m, "role");
			const json_t *c = json_object_get(m, "content");
			const struct openai_message *got = &r->messages[i];

			FUZZ_CHECK(got->content != NULL);
			FUZZ_CHECK(got->content[got->content_len] == '\0');
			if (json_is_string(c))
				FUZZ_CHECK(same(c, got->content,
				    got->content_len));
			else
				FUZZ_CHECK(json_is_array(c) &&
				    json_array_size(c) >= 1);
			if (same(role, "user", 4))
				FUZZ_CHECK(got->role == OPENAI_ROLE_USER);
			else if (same(role, "assistant", 9))
				FUZZ_CHECK(got->role ==
				    OPENAI_ROLE_ASSISTANT);
			else
				FUZZ_CHECK(got->role == OPENAI_ROLE_SYSTEM &&
				    (same(role, "system", 6) ||
				    same(role, "developer", 9)));
		}
		FUZZ_CHECK(r->max_tokens == want_int(root,
		    "max_completion_tokens", want_int(root, "max_tokens",
		    OPENAI_CHAT_DEFAULT_MAX_TOKENS)));
		FUZZ_CHECK(r->max_tokens >= 1);
	}
	FUZZ_CHECK(r->max_tokens <= OPENAI_MAX_TOKENS_CAP);
	FUZZ_CHECK(r->temperature >= 0 && r->temperature <= 2);
	FUZZ_CHECK(r->temperature == want_num(root, "temperature", 1));
	FUZZ_CHECK(r->top_p > 0 && r->top_p <= 1);
	FUZZ_CHECK(r->top_p == want_num(root, "top_p", 1));
	FUZZ_CHECK(r->n >= 1 && r->n <= (kind == OPENAI_RESPONSES ? 1u :
	    OPENAI_MAX_N));
	FUZZ_CHECK((long long)r->n == want_int(root, "n", 1));
	FUZZ_CHECK(r->stream == want_bool(root, "stream"));
	FUZZ_CHECK(r->include_usage == want_bool(json_object_get(root,
	    "stream_options"), "include_usage"));
	FUZZ_CHECK(!r->include_usage || r->stream);
	FUZZ_CHECK(r->n_stop <= OPENAI_MAX_STOP);
	v = json_object_get(root, "stop");
	for (i = 0; i < r->n_stop; i++) {
		FUZZ_CHECK(r->stop[i].len >= 1 &&
		    r->stop[i].len <= OPENAI_MAX_STOP_BYTES);
		FUZZ_CHECK(r->stop[i].s[r->stop[i].len] == '\0');
		FUZZ_CHECK(same(json_is_array(v) ? json_array_get(v, i) : v,
		    r->stop[i].s, r->stop[i].len));
	}
	FUZZ_CHECK(r->n_stop == (json_is_array(v) ? json_array_size(v) :
	    json_is_string(v) ? 1 : 0));
	FUZZ_CHECK(r->has_seed == given(json_object_get(root, "seed")));
	FUZZ_CHECK(r->seed == want_int(root, "seed", 0));
	FUZZ_CHECK(r->ignore_eos == want_bool(root, "ignore_eos"));
	FUZZ_CHECK(r->knobs.prefill_ms == want_int(root, "prefill_ms", -1));
	FUZZ_CHECK(r->knobs.prefill_ms >= -1 &&
	    r->knobs.prefill_ms <= HTTP_MAX_PREFILL_MS);
	FUZZ_CHECK(r->knobs.tpot_ms == want_int(root, "tpot_ms", -1));
	FUZZ_CHECK(r->knobs.tpot_ms >= -1 &&
	    r->knobs.tpot_ms <= HTTP_MAX_TPOT_MS);
	FUZZ_CHECK(r->knobs.error_after == want_int(root, "error_after", -1));
	FUZZ_CHECK(r->knobs.error_after >= -1 &&
	    r->knobs.error_after <= HTTP_MAX_TOKENS_CAP);
}

/*
 * Checks that (p, len) is a run of SSE events "data: <line>\n\n" whose
 * lines are JSON chunks carrying `want` tokens (the stop sequences of r)
 * then a finish chunk, then "data: [DONE]\n\n".
 */
static void
check_events(const char *p, size_t len, const struct openai_request *r)
{
	size_t at = 0, k = 0;

	for (;;) {
		const char *nl;
		size_t line;
		json_t *o, *ch, *delta;
		json_error_t jerr;

		FUZZ_CHECK(len - at > 6 && memcmp(p + at, "data: ", 6) == 0);
		at += 6;
		nl = memchr(p + at, '\n', len - at);
		FUZZ_CHECK(nl != NULL);
		line = (size_t)(nl - (p + at));
		FUZZ_CHECK(len - at >= line + 2 && nl[1] == '\n');
		if (line == 6 && memcmp(p + at, "[DONE]", 6) == 0) {
			FUZZ_CHECK(at + line + 2 == len);
			FUZZ_CHECK(k == r->n_stop + 1);
			return;
		}
		FUZZ_CHECK(memchr(p + at, '\r', line) == NULL);
		o = json_loadb(p + at, line, JSON_ALLOW_NUL, &jerr);
		FUZZ_CHECK(o != NULL);
		ch = json_array_get(json_object_get(o, "choices"), 0);
		FUZZ_CHECK(ch != NULL);
		delta = json_object_get(ch, "delta");
		if (k < r->n_stop) {
			FUZZ_CHECK(same(r->kind == OPENAI_CHAT ?
			    json_object_get(delta, "content") :
			    json_object_get(ch, "text"), r->stop[k].s,
			    r->stop[k].len));
			FUZZ_CHECK(json_is_null(json_object_get(ch,
			    "finish_reason")));
		} else {
			FUZZ_CHECK(json_is_string(json_object_get(ch,
			    "finish_reason")));
		}
		if (r->kind == OPENAI_CHAT)
			FUZZ_CHECK((json_object_get(delta, "role") != NULL) ==
			    (k == 0));
		json_decref(o);
		at += line + 2;
		k++;
	}
}

static void
check_encoders(const struct openai_request *r)
{
	struct openai_meta m = { r->kind, 7, 1700000000, r->model,
	    r->model_len, NULL, NULL };
	struct openai_usage u = { 3, (uint32_t)r->n_stop, 0, 0, 0 };
	struct openai_stream s;
	struct ts_buf b;
	size_t i, want;

	ts_buf_init(&b, 1u << 16);
	openai_stream_init(&s, &m, 0);
	for (i = 0; i < r->n_stop; i++)
		FUZZ_CHECK(openai_encode_chunk(&b, &s, r->stop[i].s,
		    r->stop[i].len) == TS_OK);
	FUZZ_CHECK(openai_encode_end(&b, &s, OPENAI_FINISH_STOP, &u) ==
	    TS_OK);
	check_events(b.p, b.len, r);
	ts_buf_free(&b);
	if (r->kind != OPENAI_CHAT)
		return;
	ts_buf_init(&b, 4u << 20);
	FUZZ_CHECK(openai_chat_prompt(r, &b) == TS_OK);
	want = sizeof("<|assistant|>\n") - 1;
	for (i = 0; i < r->n_messages; i++)
		want += r->messages[i].content_len +
		    sizeof("<||>\n\n") - 1 +
		    (r->messages[i].role == OPENAI_ROLE_ASSISTANT ? 9 :
		    r->messages[i].role == OPENAI_ROLE_USER ? 4 : 6);
	FUZZ_CHECK(b.len == want);
	ts_buf_free(&b);
}

/* The error's JSON bodies: the OpenAI shape, and the stream's ending. */
static void
check_error_json(const struct http_error *err)
{
	struct ts_buf b;
	json_t *root, *e, *p;
	json_error_t jerr;

	ts_buf_init(&b, 8192);
	FUZZ_CHECK(http_error_json_openai(err, &b) == TS_OK);
	FUZZ_CHECK(memchr(b.p, '\n', b.len) == NULL);
	root = json_loadb(b.p, b.len, JSON_REJECT_DUPLICATES, &jerr);
	FUZZ_CHECK(root != NULL && json_object_size(root) == 1);
	e = json_object_get(root, "error");
	FUZZ_CHECK(json_is_object(e) && json_object_size(e) == 4);
	FUZZ_CHECK(json_is_string(json_object_get(e, "message")));
	FUZZ_CHECK(strcmp(json_string_value(json_object_get(e, "type")),
	    err->type) == 0);
	FUZZ_CHECK(strcmp(json_string_value(json_object_get(e, "code")),
	    err->code) == 0);
	p = json_object_get(e, "param");
	if (err->param[0] == '\0')
		FUZZ_CHECK(json_is_null(p));
	else
		FUZZ_CHECK(strcmp(json_string_value(p), err->param) == 0);
	json_decref(root);
	ts_buf_reset(&b);
	FUZZ_CHECK(openai_encode_stream_error(&b, err) == TS_OK);
	FUZZ_CHECK(b.len > 20 && memcmp(b.p, "data: {\"error\":", 15) == 0);
	FUZZ_CHECK(memcmp(b.p + b.len - 14, "data: [DONE]\n\n", 14) == 0);
	ts_buf_free(&b);
}

static void
check_refused(enum ts_err rc, const char *code, const json_t *root,
    const struct openai_request *r, const struct http_error *err)
{
	size_t n;

	FUZZ_CHECK(rc == TS_EINVAL || rc == TS_ELIMIT);
	FUZZ_CHECK(err->type != NULL && err->code != NULL);
	FUZZ_CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL);
	FUZZ_CHECK(err->message[0] != '\0');
	FUZZ_CHECK(memchr(err->param, '\0', sizeof(err->param)) != NULL);
	if (code != NULL) {
		FUZZ_CHECK(err->status == 400 && strcmp(err->code, code) == 0);
		if (strcmp(code, "missing_required_parameter") == 0 ||
		    strcmp(code, "invalid_type") == 0)
			FUZZ_CHECK(strcmp(err->param, "model") == 0);
	}
	if (err->status == 404) {
		FUZZ_CHECK(rc == TS_EINVAL);
		FUZZ_CHECK(strcmp(err->code, "model_not_found") == 0);
		FUZZ_CHECK(!same(json_object_get(root, "model"), MODEL,
		    MODEL_LEN));
	} else {
		FUZZ_CHECK(err->status == 400);
		FUZZ_CHECK(strcmp(err->code, "model_not_found") != 0);
	}
	if (rc == TS_ELIMIT)
		FUZZ_CHECK(strcmp(err->code, "array_above_max_length") == 0 ||
		    strcmp(err->code, "string_above_max_length") == 0);
	if (err->param[0] != '\0') {
		/* "messages[3].role" names the body's key "messages" */
		char key[sizeof(err->param)];

		n = strcspn(err->param, "[.");
		memcpy(key, err->param, n);
		key[n] = '\0';
		FUZZ_CHECK(json_object_get(root, key) != NULL ||
		    (strcmp(err->code, "missing_required_parameter") == 0 &&
		    strcmp(key, err->param) == 0));
	}
	FUZZ_CHECK(r->model == NULL && r->prompt == NULL);
	FUZZ_CHECK(r->messages == NULL && r->n_stop == 0);
	check_error_json(err);
}

/* An accepted request's plan (openai/plan.h): tool calls and JSON Schema
 * instances from the fuzzed schemas. Every schema parse.c accepted must
 * be generated (TS_OK), or refused only for size (TS_ELIMIT), and each
 * call's arguments must be JSON. Planned again with a cap (what
 * max_tokens tokens can carry), the guide must be at least the cap long
 * (or the whole guide) and begin with the whole guide's bytes. */
static void
check_plan(const struct openai_request *r, size_t cap)
{
	struct openai_plan p, q;
	struct http_error err;
	enum ts_err rc;
	size_t i, n;

	rc = openai_plan_make(r, 42, 1, SIZE_MAX, &p, &err);
	FUZZ_CHECK(rc == TS_OK || rc == TS_ELIMIT);
	if (rc != TS_OK)
		return;
	for (i = 0; i < p.ncalls; i++) {
		json_t *v = json_loadb(p.guide.p + p.calls[i].off,
		    p.calls[i].len, JSON_DECODE_ANY, NULL);

		FUZZ_CHECK(v != NULL);
		json_decref(v);
	}
	rc = openai_plan_make(r, 42, 1, cap, &q, &err);
	FUZZ_CHECK(rc == TS_OK);
	FUZZ_CHECK(q.ncalls == p.ncalls && q.guided == p.guided);
	n = cap < p.guide.len ? cap : p.guide.len;
	FUZZ_CHECK(q.guide.len >= n);
	FUZZ_CHECK(n == 0 || memcmp(p.guide.p, q.guide.p, n) == 0);
	openai_plan_free(&q);
	openai_plan_free(&p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum openai_kind kinds[] = { OPENAI_COMPLETIONS,
	    OPENAI_CHAT, OPENAI_RESPONSES };
	const char *body = (const char *)data;
	const char *code;
	json_t *root;
	size_t k;

	code = model_code(body, size, &root);
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct openai_request r;
		struct http_error err;
		enum ts_err rc;

		memset(&r, 0x5a, sizeof(r));
		memset(&err, 'x', sizeof(err));
		rc = openai_parse_request(kinds[k], body, size, served, 1,
		    &r, &err);
		if (rc == TS_OK) {
			FUZZ_CHECK(code == NULL);
			check_accepted(kinds[k], root, &r);
			check_encoders(&r);
			/* a cap from the input, up to 512 bytes */
			check_plan(&r, (size - k) % 513);
		} else {
			check_refused(rc, code, root, &r, &err);
		}
		openai_request_free(&r);
	}
	json_decref(root);
	return 0;
}
