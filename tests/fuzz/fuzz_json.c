/*
 * fuzz_json.c - http_parse_json (src/proto/http.h) on arbitrary bytes, as a
 * POST /generate body.
 *
 * Properties, each checked with abort():
 *  - the verdict agrees with a model built on jansson itself and the
 *    rules of docs/API.md "Request parameters" and "Errors": empty body
 *    empty_body; not JSON, not an object or a duplicate key
 *    invalid_json; no or null prompt missing_prompt; a
 *    prompt not a string invalid_prompt; then max_tokens, prefill_ms,
 *    tpot_ms, error_after in that order must each be absent, null or an
 *    integer within its cap, else that field's code;
 *  - on TS_OK the prompt is non-NULL, NUL-terminated at prompt_len and
 *    holds exactly the JSON string's bytes (NUL included), the numbers are
 *    the JSON ones or their defaults, last_event_id stays NULL;
 *  - on TS_EINVAL status is 400, type and code are set, the message is
 *    NUL-terminated and the request owns nothing;
 *  - http_error_json of the error is valid JSON (json_loadb) with the same
 *    type and code, and the message when it is UTF-8 (jansson's error
 *    text quotes input, and truncation can cut a character);
 *  - nothing leaks.
 */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_http.h"
#include "proto/http.h"


/*
 * The expected error code for `body`, or NULL when it must be accepted;
 * then *root is the loaded object (caller decrefs), else NULL.
 */
static const char *
model_code(const char *body, size_t len, json_t **root)
{
	json_error_t jerr;
	json_t *v;
	int k;

	*root = NULL;
	if (len == 0)
		return "empty_body";
	*root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &jerr);
	if (*root == NULL)
		return "invalid_json";
	if (!json_is_object(*root))
		return "invalid_json";
	v = json_object_get(*root, "prompt");
	if (v == NULL || json_is_null(v))
		return "missing_prompt";
	if (!json_is_string(v))
		return "invalid_prompt";
	for (k = 0; k < 4; k++) {
		v = json_object_get(*root, fuzz_int_params[k].name);
		if (v == NULL || json_is_null(v))
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > fuzz_int_params[k].max)
			return fuzz_int_params[k].code;
	}
	return NULL;
}

/* The value the request must hold for int field k: JSON's, or `dflt`. */
static long
want_int(json_t *root, int k, long dflt)
{
	json_t *v = json_object_get(root, fuzz_int_params[k].name);

	if (v == NULL || json_is_null(v))
		return dflt;
	return (long)json_integer_value(v);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct http_gen_request req;
	struct http_error err;
	const char *code;
	json_t *root, *p;

	code = model_code(body, size, &root);

	memset(&req, 0x5a, sizeof(req));
	memset(&err, 0, sizeof(err));
	memset(err.message, 'x', sizeof(err.message));
	if (http_parse_json(body, size, &req, &err) == TS_OK) {
		FUZZ_CHECK(code == NULL && root != NULL);
		p = json_object_get(root, "prompt");
		FUZZ_CHECK(req.prompt != NULL);
		FUZZ_CHECK(req.prompt_len <= size);
		FUZZ_CHECK(req.prompt[req.prompt_len] == '\0');
		FUZZ_CHECK(req.prompt_len == json_string_length(p));
		FUZZ_CHECK(memcmp(req.prompt, json_string_value(p),
		    req.prompt_len) == 0);
		FUZZ_CHECK(req.max_tokens <= HTTP_MAX_TOKENS_CAP);
		FUZZ_CHECK((long)req.max_tokens ==
		    want_int(root, 0, HTTP_DEFAULT_MAX_TOKENS));
		FUZZ_CHECK(req.knobs.prefill_ms >= -1 &&
		    req.knobs.prefill_ms <= HTTP_MAX_PREFILL_MS);
		FUZZ_CHECK(req.knobs.prefill_ms == want_int(root, 1, -1));
		FUZZ_CHECK(req.knobs.tpot_ms >= -1 &&
		    req.knobs.tpot_ms <= HTTP_MAX_TPOT_MS);
		FUZZ_CHECK(req.knobs.tpot_ms == want_int(root, 2, -1));
		FUZZ_CHECK(req.knobs.error_after >= -1 &&
		    req.knobs.error_after <= HTTP_MAX_TOKENS_CAP);
		FUZZ_CHECK(req.knobs.error_after == want_int(root, 3, -1));
		FUZZ_CHECK(req.last_event_id == NULL &&
		    req.last_event_id_len == 0);
	} else {
		FUZZ_CHECK(err.status == 400);
		FUZZ_CHECK(err.type != NULL && err.code != NULL);
		FUZZ_CHECK(memchr(err.message, '\0', sizeof(err.message)) !=
		    NULL);
		FUZZ_CHECK(err.message[0] != '\0');
		FUZZ_CHECK(code != NULL && strcmp(err.code, code) == 0);
		FUZZ_CHECK(req.prompt == NULL && req.last_event_id == NULL);
		fuzz_check_error_json(&err);
	}
	http_gen_request_free(&req);
	json_decref(root);
	return 0;
}
