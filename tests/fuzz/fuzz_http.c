/*
 * fuzz_http.c - checks shared by the request-parsing fuzz targets
 * (fuzz_query.c, fuzz_json.c): an error body must be the OpenAI-shaped
 * JSON that jansson loads back.
 */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_http.h"

const struct fuzz_int_param fuzz_int_params[4] = {
	{ "max_tokens", HTTP_MAX_TOKENS_CAP, "invalid_max_tokens" },
	{ "prefill_ms", HTTP_MAX_PREFILL_MS, "invalid_prefill_ms" },
	{ "tpot_ms", HTTP_MAX_TPOT_MS, "invalid_tpot_ms" },
	{ "error_after", HTTP_MAX_TOKENS_CAP, "invalid_error_after" },
};

/* True when (s, len) is valid UTF-8 (jansson's own check). */
int
fuzz_is_utf8(const char *s, size_t len)
{
	json_t *j = json_stringn(s, len);

	json_decref(j);
	return j != NULL;
}

/*
 * http_error_json must give {"error":{"message","type","code"}} that
 * jansson loads back: the same type and code, and the message itself
 * unless it is not UTF-8 (it can quote input; then a generic one).
 */
void
fuzz_check_error_json(const struct http_error *err)
{
	struct ts_buf b;
	json_t *root, *e, *msg;
	json_error_t jerr;
	size_t mlen = strlen(err->message);

	ts_buf_init(&b, 4096);
	FUZZ_CHECK(http_error_json(err, &b) == TS_OK);
	FUZZ_CHECK(memchr(b.p, '\n', b.len) == NULL);
	root = json_loadb(b.p, b.len, JSON_REJECT_DUPLICATES, &jerr);
	FUZZ_CHECK(root != NULL);
	FUZZ_CHECK(json_object_size(root) == 1);
	e = json_object_get(root, "error");
	FUZZ_CHECK(json_is_object(e) && json_object_size(e) == 3);
	FUZZ_CHECK(strcmp(json_string_value(json_object_get(e, "type")),
	    err->type) == 0);
	FUZZ_CHECK(strcmp(json_string_value(json_object_get(e, "code")),
	    err->code) == 0);
	msg = json_object_get(e, "message");
	FUZZ_CHECK(json_is_string(msg));
	if (fuzz_is_utf8(err->message, mlen))
		FUZZ_CHECK(json_string_length(msg) == mlen &&
		    memcmp(json_string_value(msg), err->message, mlen) == 0);
	else
		FUZZ_CHECK(strcmp(json_string_value(msg),
		    "invalid request") == 0);
	json_decref(root);
	ts_buf_free(&b);
}
