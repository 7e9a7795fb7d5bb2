/*
 * fuzz_jinja.c - the chat template interpreter (src/jinja): the input is
 * a template, parsed and rendered with a fixed context (messages of
 * every role, tools, a tool call, tokens, add_generation_prompt).
 *
 * Properties, each checked with abort():
 *  - jinja_parse() gives TS_OK with a template, or TS_EFORMAT/TS_ELIMIT
 *    with no template and an error message ("line L, column C: ..." for
 *    a syntax error);
 *  - a render gives TS_OK with a NUL-terminated output of at most
 *    max_out bytes, or TS_EINVAL/TS_ELIMIT with no output and a message;
 *  - rendering again gives the same result, byte for byte (no state
 *    kept between renders, no uninitialised read);
 *  - text with no brace at all comes out as it went in, less one
 *    trailing newline;
 *  - nothing leaks (LeakSanitizer under scripts/fuzz).
 */
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "jinja/jinja.h"

static const char ctx_json[] =
    "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", "
    "\"add_generation_prompt\": true, \"date_string\": \"06 Dec 2026\", "
    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", "
    "\"description\": \"d \\\"q\\\" \\u00e9\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}}}], "
    "\"messages\": [{\"role\": \"system\", \"content\": \" S \\n\"}, "
    "{\"role\": \"user\", \"content\": \"U {{ x }}\"}, "
    "{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": "
    "\"abcdefghi\", \"type\": \"function\", \"function\": {\"name\": \"f\", "
    "\"arguments\": {\"a\": 1}}}]}, "
    "{\"role\": \"tool\", \"tool_call_id\": \"abcdefghi\", \"content\": "
    "\"2\"}, {\"role\": \"assistant\", \"content\": \"A \\ud83d\\ude00\"}]}";

#define MAX_OUT (64u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jinja_template *t = (struct jinja_template *)1;
	json_t *ctx;
	char err[256], err2[256], *out = (char *)1, *out2 = (char *)1;
	size_t len = 0, len2 = 0;
	enum ts_err rc, rc2;

	err[0] = '\0';
	rc = jinja_parse(&t, (const char *)data, size, err, sizeof(err));
	if (rc != TS_OK) {
		FUZZ_CHECK(rc == TS_EFORMAT || rc == TS_ELIMIT);
		FUZZ_CHECK(t == NULL);
		FUZZ_CHECK(err[0] != '\0');
		FUZZ_CHECK(rc != TS_EFORMAT || strncmp(err, "line ", 5) == 0);
		return 0;
	}
	FUZZ_CHECK(t != NULL);
	ctx = json_loads(ctx_json, 0, NULL);
	FUZZ_CHECK(ctx != NULL);
	rc = jinja_render_at(t, ctx, MAX_OUT, 1721952000, &out, &len, err,
	    sizeof(err));
	if (rc == TS_OK) {
		FUZZ_CHECK(out != NULL && len <= MAX_OUT && out[len] == '\0');
	} else {
		FUZZ_CHECK(rc == TS_EINVAL || rc == TS_ELIMIT);
		FUZZ_CHECK(out == NULL && len == 0 && err[0] != '\0');
	}
	rc2 = jinja_render_at(t, ctx, MAX_OUT, 1721952000, &out2, &len2, err2,
	    sizeof(err2));
	FUZZ_CHECK(rc2 == rc);
	if (rc == TS_OK)
		FUZZ_CHECK(len2 == len && memcmp(out, out2, len) == 0);
	else
		FUZZ_CHECK(strcmp(err, err2) == 0);
	if (memchr(data, '{', size) == NULL && memchr(data, '}', size) ==
	    NULL && size > 0) {
		size_t want = data[size - 1] == '\n' ? size - 1 : size;

		FUZZ_CHECK(rc == TS_OK && len == want &&
		    memcmp(out, data, want) == 0);
	}
	free(out);
	free(out2);
	json_decref(ctx);
	jinja_free(t);
	return 0;
}
