/*
 * openai/parse.c - the OpenAI-compatible API's request parser (OpenAI API
 * reference: Completions, Chat Completions; vLLM's OpenAI server for its
 * extensions). See parse.h. No I/O.
 */
#include "openai/parse.h"

#include "backend/backend.h"
#include "openai/parse_field.h"

#include "jsonschema/schema_gen.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_TYPE "invalid_request_error"
#define CONST_STR_LEN(s) (s), (sizeof(s) - 1)

/* A field path such as "messages[255].tool_calls[127].function.arguments"
 * fits. */
#define PATH_MAX_BYTES 96

/* ---- request parsing ---------------------------------------------------- */

void
openai_request_free(struct openai_request *r)
{
	size_t i;

	if (r == NULL)
		return;
	free(r->model);
	r->model = NULL;
	r->model_len = 0;
	free(r->prompt);
	r->prompt = NULL;
	r->prompt_len = 0;
	free(r->instructions);
	r->instructions = NULL;
	r->instructions_len = 0;
	for (i = 0; r->messages != NULL && i < r->n_messages; i++)
		free(r->messages[i].content);
	free(r->messages);
	r->messages = NULL;
	r->n_messages = 0;
	for (i = 0; i < r->n_stop && i < OPENAI_MAX_STOP; i++) {
		free(r->stop[i].s);
		r->stop[i].s = NULL;
		r->stop[i].len = 0;
	}
	r->n_stop = 0;
	openai_request_drop_schemas(r);
	for (i = 0; r->tools != NULL && i < r->n_tools; i++) {
		free(r->tools[i].name);
		json_decref(r->tools[i].parameters);
	}
	free(r->tools);
	r->tools = NULL;
	r->n_tools = 0;
	free(r->tools_json);
	r->tools_json = NULL;
	json_decref(r->tools_raw);
	r->tools_raw = NULL;
	json_decref(r->tool_choice_raw);
	r->tool_choice_raw = NULL;
	json_decref(r->format_schema);
	r->format_schema = NULL;
}

void
openai_request_drop_schemas(struct openai_request *r)
{
	size_t i;

	for (i = 0; r->tools != NULL && i < r->n_tools; i++) {
		schema_gen_free(r->tools[i].compiled);
		r->tools[i].compiled = NULL;
	}
	schema_gen_free(r->format_compiled);
	r->format_compiled = NULL;
}

static void
request_defaults(struct openai_request *r, enum openai_kind kind)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->max_tokens = kind == OPENAI_COMPLETIONS ?
	    OPENAI_COMPLETIONS_DEFAULT_MAX_TOKENS :
	    OPENAI_CHAT_DEFAULT_MAX_TOKENS;
	r->temperature = 1.0;
	r->top_p = 1.0;
	knobs_defaults(&r->knobs);
	r->parallel_tool_calls = 1;
	r->n = 1;
	r->schema_steps = SCHEMA_GEN_MAX_STEPS;
}

/*
 * "prompt" of a completions request: a string, or an array of exactly
 * one string (OpenAI also takes token ids and batches: refused here).
 * Stores a copy in req. Returns TS_OK, or TS_EINVAL / TS_ELIMIT with *err.
 */
static enum ts_err
parse_prompt(const json_t *root, struct openai_request *req,
    struct http_error *err)
{
	const json_t *v = json_object_get(root, "prompt");

	if (!field_given(v)) {
		field_err_missing(err, "prompt");
		return TS_EINVAL;
	}
	if (json_is_array(v)) {
		const json_t *p0;

		if (json_array_size(v) == 0) {
			field_err_empty_array(err, "prompt");
			return TS_EINVAL;
		}
		p0 = json_array_get(v, 0);
		if (json_array_size(v) > 1) {
			http_error_set(err, 400, ERR_TYPE,
			    "unsupported_value",
			    "Batched prompts are not supported: 'prompt' "
			    "must be a string or an array of one string, "
			    "but got an array with length %zu.",
			    json_array_size(v));
			http_error_set_param(err, "prompt");
			return TS_EINVAL;
		}
		if (json_is_integer(p0) || json_is_array(p0)) {
			http_error_set(err, 400, ERR_TYPE,
			    "unsupported_value",
			    "Token-id prompts are not supported: send the "
			    "prompt as a string.");
			http_error_set_param(err, "prompt");
			return TS_EINVAL;
		}
		if (!json_is_string(p0)) {
			field_err_type(err, "prompt[0]", "a string", p0);
			return TS_EINVAL;
		}
		v = p0;
	} else if (!json_is_string(v)) {
		field_err_type(err, "prompt", "a string or an array of one string",
		    v);
		return TS_EINVAL;
	}
	if (json_string_length(v) > OPENAI_MAX_CONTENT_BYTES) {
		field_err_string_long(err, "prompt", OPENAI_MAX_CONTENT_BYTES,
		    json_string_length(v));
		return TS_ELIMIT;
	}
	req->prompt_len = json_string_length(v);
	req->prompt = xstrndup(json_string_value(v), req->prompt_len);
	return TS_OK;
}

/*
 * Checks message i's "content" (a string, or a non-empty array of text
 * parts) and returns its length in bytes once parts are joined with "\n"
 * in *len. Returns TS_OK, or TS_EINVAL / TS_ELIMIT with *err.
 */
static enum ts_err
check_content(const json_t *c, const char *field, enum openai_kind kind,
    size_t i, size_t *len, struct http_error *err)
{
	char path[PATH_MAX_BYTES];
	size_t j, n, total = 0;

	if (json_is_string(c)) {
		*len = json_string_length(c);
		return TS_OK;
	}
	snprintf(path, sizeof(path), "%s[%zu].content", field, i);
	if (!json_is_array(c)) {
		field_err_type(err, path, "a string or an array of content parts",
		    c);
		return TS_EINVAL;
	}
	n = json_array_size(c);
	if (n == 0) {
		field_err_empty_array(err, path);
		return TS_EINVAL;
	}
	if (n > OPENAI_MAX_CONTENT_PARTS) {
		field_err_array_long(err, path, OPENAI_MAX_CONTENT_PARTS, n);
		return TS_ELIMIT;
	}
	for (j = 0; j < n; j++) {
		const json_t *part = json_array_get(c, j), *t;

		snprintf(path, sizeof(path), "%s[%zu].content[%zu]", field,
		    i, j);
		if (!json_is_object(part)) {
			field_err_type(err, path, "an object", part);
			return TS_EINVAL;
		}
		snprintf(path, sizeof(path), "%s[%zu].content[%zu].type",
		    field, i, j);
		t = json_object_get(part, "type");
		if (!field_given(t)) {
			field_err_missing(err, path);
			return TS_EINVAL;
		}
		if (!json_is_string(t)) {
			field_err_type(err, path, "a string", t);
			return TS_EINVAL;
		}
		if (kind == OPENAI_RESPONSES ? !field_str_is(t, "input_text") &&
		    !field_str_is(t, "output_text") : !field_str_is(t, "text")) {
			http_error_set(err, 400, ERR_TYPE, "invalid_value",
			    "Invalid value for '%s': only %s content parts "
			    "are supported.", path, kind == OPENAI_RESPONSES ?
			    "'input_text' and 'output_text'" : "'text'");
			http_error_set_param(err, "%s", path);
			return TS_EINVAL;
		}
		snprintf(path, sizeof(path), "%s[%zu].content[%zu].text",
		    field, i, j);
		t = json_object_get(part, "text");
		if (!field_given(t)) {
			field_err_missing(err, path);
			return TS_EINVAL;
		}
		if (!json_is_string(t)) {
			field_err_type(err, path, "a string", t);
			return TS_EINVAL;
		}
		/* Each part is at most the body's size: no overflow. */
		total += json_string_length(t) + (j > 0);
	}
	*len = total;
	return TS_OK;
}

/* Copies checked content c (check_content's len bytes) into dst, which
 * holds len + 1 bytes, NUL-terminated. */
static void
copy_content(const json_t *c, char *dst, size_t len)
{
	size_t j, at = 0;

	if (json_is_string(c)) {
		memcpy(dst, json_string_value(c), len);
	} else {
		for (j = 0; j < json_array_size(c); j++) {
			const json_t *t = json_object_get(json_array_get(c, j),
			    "text");

			if (j > 0)
				dst[at++] = '\n';
			memcpy(dst + at, json_string_value(t),
			    json_string_length(t));
			at += json_string_length(t);
		}
	}
	dst[len] = '\0';
}

/*
 * An assistant message's "tool_calls" (absent, null, or 1..OPENAI_MAX_TOOLS
 * objects {id: string, type: "function", function: {name: string,
 * arguments: string}}), checked, and on success *dump is their compact
 * JSON (the prompt's rendering; NULL when there are none).
 */
static enum ts_err
check_tool_calls(const json_t *m, size_t i, char **dump,
    struct http_error *err)
{
	const json_t *tc = json_object_get(m, "tool_calls");
	char path[PATH_MAX_BYTES];
	size_t j;

	*dump = NULL;
	if (!field_given(tc))
		return TS_OK;
	snprintf(path, sizeof(path), "messages[%zu].tool_calls", i);
	if (!json_is_array(tc)) {
		field_err_type(err, path, "an array", tc);
		return TS_EINVAL;
	}
	if (json_array_size(tc) == 0) {
		field_err_empty_array(err, path);
		return TS_EINVAL;
	}
	if (json_array_size(tc) > OPENAI_MAX_TOOLS) {
		field_err_array_long(err, path, OPENAI_MAX_TOOLS,
		    json_array_size(tc));
		return TS_ELIMIT;
	}
	for (j = 0; j < json_array_size(tc); j++) {
		const json_t *c = json_array_get(tc, j), *f, *x;
		static const char *const need[] = { "id", "type" };
		size_t q;

		snprintf(path, sizeof(path), "messages[%zu].tool_calls[%zu]",
		    i, j);
		if (!json_is_object(c)) {
			field_err_type(err, path, "an object", c);
			return TS_EINVAL;
		}
		for (q = 0; q < 2; q++) {
			x = json_object_get(c, need[q]);
			snprintf(path, sizeof(path),
			    "messages[%zu].tool_calls[%zu].%s", i, j, need[q]);
			if (!field_given(x)) {
				field_err_missing(err, path);
				return TS_EINVAL;
			}
			if (!json_is_string(x)) {
				field_err_type(err, path, "a string", x);
				return TS_EINVAL;
			}
		}
		if (!field_str_is(json_object_get(c, "type"), "function")) {
			http_error_set(err, 400, ERR_TYPE, "invalid_value",
			    "Invalid value for '%s': only 'function' tool "
			    "calls are supported.", path);
			http_error_set_param(err, "%s", path);
			return TS_EINVAL;
		}
		f = json_object_get(c, "function");
		snprintf(path, sizeof(path),
		    "messages[%zu].tool_calls[%zu].function", i, j);
		if (!field_given(f)) {
			field_err_missing(err, path);
			return TS_EINVAL;
		}
		if (!json_is_object(f)) {
			field_err_type(err, path, "an object", f);
			return TS_EINVAL;
		}
		for (q = 0; q < 2; q++) {
			const char *k = q == 0 ? "name" : "arguments";

			x = json_object_get(f, k);
			snprintf(path, sizeof(path),
			    "messages[%zu].tool_calls[%zu].function.%s", i, j,
			    k);
			if (!field_given(x)) {
				field_err_missing(err, path);
				return TS_EINVAL;
			}
			if (!json_is_string(x)) {
				field_err_type(err, path, "a string", x);
				return TS_EINVAL;
			}
		}
	}
	*dump = json_dumps(tc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (*dump == NULL) {
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Invalid 'messages[%zu].tool_calls': not encodable.", i);
		http_error_set_param(err, "messages[%zu].tool_calls", i);
		return TS_EINVAL;
	}
	return TS_OK;
}

/*
 * A Responses API input item of type "function_call" ({call_id, name,
 * arguments}: an assistant turn of one tool call, its JSON in *dump) or
 * "function_call_output" ({call_id, output}: a tool's result, its text
 * the message's content), checked into dst's role and *len.
 */
static enum ts_err
check_call_item(const json_t *m, const char *field, size_t i,
    struct openai_message *dst, char **dump, size_t *len,
    struct http_error *err)
{
	static const char *const call[] = { "call_id", "name", "arguments" };
	static const char *const out[] = { "call_id", "output" };
	int is_call = field_str_is(json_object_get(m, "type"), "function_call");
	const char *const *need = is_call ? call : out;
	size_t k, n = is_call ? 3 : 2;
	char path[PATH_MAX_BYTES];

	for (k = 0; k < n; k++) {
		const json_t *x = json_object_get(m, need[k]);

		snprintf(path, sizeof(path), "%s[%zu].%s", field, i, need[k]);
		if (!field_given(x)) {
			field_err_missing(err, path);
			return TS_EINVAL;
		}
		if (!json_is_string(x)) {
			field_err_type(err, path, "a string", x);
			return TS_EINVAL;
		}
	}
	if (is_call) {
		dst->role = OPENAI_ROLE_ASSISTANT;
		json_t *o = json_pack("{s:O,s:O}", "name",
		    json_object_get(m, "name"), "arguments",
		    json_object_get(m, "arguments"));

		*dump = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		if (*dump == NULL) {
			http_error_set(err, 400, ERR_TYPE, "invalid_value",
			    "Invalid '%s[%zu]': not encodable.", field, i);
			return TS_EINVAL;
		}
		*len = strlen(*dump);
	} else {
		dst->role = OPENAI_ROLE_TOOL;
		*len = json_string_length(json_object_get(m, "output"));
	}
	return TS_OK;
}

/*
 * The messages of a chat request ("messages") or of a Responses API
 * request ("input" as a list; its items are messages, with an optional
 * "type":"message"), after `first` leading slots the caller fills
 * (the Responses API's instructions). Everything is checked first (roles,
 * content shapes, the OPENAI_MAX_CONTENT_BYTES total with `used` bytes
 * already taken), then copied. Returns TS_OK, or TS_EINVAL / TS_ELIMIT
 * with *err.
 */
static enum ts_err
parse_messages(const json_t *root, const char *field, size_t first,
    size_t used, struct openai_request *req, struct http_error *err)
{
	const json_t *v = json_object_get(root, field);
	char path[PATH_MAX_BYTES];
	size_t i, n, total = used;
	size_t *lens = NULL, kept;
	char **calls = NULL;
	unsigned char *skip = NULL;
	enum ts_err rc;

	if (!field_given(v)) {
		field_err_missing(err, field);
		return TS_EINVAL;
	}
	if (!json_is_array(v)) {
		field_err_type(err, field, req->kind == OPENAI_RESPONSES ?
		    "a string or an array" : "an array", v);
		return TS_EINVAL;
	}
	n = json_array_size(v);
	if (n == 0) {
		field_err_empty_array(err, field);
		return TS_EINVAL;
	}
	if (n > OPENAI_MAX_MESSAGES) {
		field_err_array_long(err, field, OPENAI_MAX_MESSAGES, n);
		return TS_ELIMIT;
	}
	lens = xcalloc(n, sizeof(*lens));
	calls = xcalloc(n, sizeof(*calls));
	skip = xcalloc(n, 1);
	req->messages = xcalloc(first + n, sizeof(*req->messages));
	for (i = 0; i < n; i++) {
		const json_t *m = json_array_get(v, i), *role, *c, *t;
		struct openai_message *dst = &req->messages[first + i];

		snprintf(path, sizeof(path), "%s[%zu]", field, i);
		if (!json_is_object(m)) {
			field_err_type(err, path, "an object", m);
			rc = TS_EINVAL;
			goto out;
		}
		t = json_object_get(m, "type");
		if (req->kind == OPENAI_RESPONSES && (field_str_is(t,
		    "function_call") || field_str_is(t, "function_call_output"))) {
			/* an agent's history: a call the model made, or a
			 * tool's result */
			rc = check_call_item(m, field, i, dst, &calls[i],
			    &lens[i], err);
			if (rc != TS_OK)
				goto out;
			total += lens[i];
			continue;
		}
		if (req->kind == OPENAI_RESPONSES && field_str_is(t,
		    "reasoning")) {
			/* a reasoning item of an earlier response, sent back
			 * with the conversation (openai-node's
			 * ResponseReasoningItem, an input item as the SDK
			 * declares ResponseInputItem): the thinking is not
			 * part of the prompt, as chat templates leave it out
			 * of earlier turns; accepted and left out */
			skip[i] = 1;
			continue;
		}
		if (req->kind == OPENAI_RESPONSES && field_given(t) &&
		    !field_str_is(t, "message")) {
			snprintf(path, sizeof(path), "%s[%zu].type", field, i);
			http_error_set(err, 400, ERR_TYPE, "unsupported_value",
			    "Invalid value for '%s': tokstream takes "
			    "'message', 'function_call', "
			    "'function_call_output' and 'reasoning' input "
			    "items.", path);
			http_error_set_param(err, "%s", path);
			rc = TS_EINVAL;
			goto out;
		}
		snprintf(path, sizeof(path), "%s[%zu].role", field, i);
		role = json_object_get(m, "role");
		if (!field_given(role)) {
			field_err_missing(err, path);
			rc = TS_EINVAL;
			goto out;
		}
		if (!json_is_string(role)) {
			field_err_type(err, path, "a string", role);
			rc = TS_EINVAL;
			goto out;
		}
		if (field_str_is(role, "system") || field_str_is(role, "developer")) {
			dst->role = OPENAI_ROLE_SYSTEM;
		} else if (field_str_is(role, "user")) {
			dst->role = OPENAI_ROLE_USER;
		} else if (field_str_is(role, "assistant")) {
			dst->role = OPENAI_ROLE_ASSISTANT;
		} else if (field_str_is(role, "tool") && req->kind == OPENAI_CHAT) {
			dst->role = OPENAI_ROLE_TOOL;
		} else {
			/* OpenAI quotes the value; only a short, plain one */
			if (field_quotable(role, 32))
				http_error_set(err, 400, ERR_TYPE,
				    "invalid_value", "Invalid value: '%s'. "
				    "Supported values are: 'system', "
				    "'developer', 'user', 'assistant'%s.",
				    json_string_value(role),
				    req->kind == OPENAI_CHAT ? " and 'tool'" :
				    "");
			else
				http_error_set(err, 400, ERR_TYPE,
				    "invalid_value", "Invalid value for '%s'."
				    " Supported values are: 'system', "
				    "'developer', 'user', 'assistant'%s.",
				    path, req->kind == OPENAI_CHAT ?
				    " and 'tool'" : "");
			http_error_set_param(err, "%s", path);
			rc = TS_EINVAL;
			goto out;
		}
		c = json_object_get(m, "content");
		if (dst->role == OPENAI_ROLE_ASSISTANT &&
		    req->kind == OPENAI_CHAT) {
			rc = check_tool_calls(m, i, &calls[i], err);
			if (rc != TS_OK)
				goto out;
		}
		if (dst->role == OPENAI_ROLE_TOOL) {
			t = json_object_get(m, "tool_call_id");
			snprintf(path, sizeof(path), "%s[%zu].tool_call_id",
			    field, i);
			if (!field_given(t)) {
				field_err_missing(err, path);
				rc = TS_EINVAL;
				goto out;
			}
			if (!json_is_string(t)) {
				field_err_type(err, path, "a string", t);
				rc = TS_EINVAL;
				goto out;
			}
		}
		if (!field_given(c) && calls[i] != NULL) {
			lens[i] = 0;    /* an assistant turn of tool calls */
		} else if (!field_given(c)) {
			snprintf(path, sizeof(path), "%s[%zu].content", field,
			    i);
			field_err_missing(err, path);
			rc = TS_EINVAL;
			goto out;
		} else {
			rc = check_content(c, field, req->kind, i, &lens[i],
			    err);
			if (rc != TS_OK)
				goto out;
		}
		/* tool calls are rendered after the content, on a line */
		if (calls[i] != NULL)
			lens[i] += strlen(calls[i]) + (lens[i] > 0);
		total += lens[i];
		if (total > OPENAI_MAX_CONTENT_BYTES) {
			http_error_set(err, 400, ERR_TYPE,
			    "string_above_max_length",
			    "Invalid '%s': the content of %s 0 to %zu%s is "
			    "over %u bytes, tokstream's limit.", field, field,
			    i, used > 0 ? " and the instructions" : "",
			    OPENAI_MAX_CONTENT_BYTES);
			http_error_set_param(err, "%s", field);
			rc = TS_ELIMIT;
			goto out;
		}
	}
	for (i = 0, kept = 0; i < n; i++)
		kept += !skip[i];
	if (kept == 0) {
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Invalid '%s': it holds only reasoning items; send a "
		    "message too.", field);
		http_error_set_param(err, "%s", field);
		rc = TS_EINVAL;
		goto out;
	}
	for (i = 0, kept = 0; i < n; i++) {
		const json_t *item = json_array_get(v, i);
		const json_t *c = json_object_get(item, "content");
		/* reasoning items left out: the rest move up, with the role
		 * the first pass gave them (kept <= i) */
		struct openai_message *dst = &req->messages[first + kept];
		size_t own = lens[i];

		if (skip[i])
			continue;
		dst->role = req->messages[first + i].role;
		kept++;
		if (!field_given(c))
			c = json_object_get(item, "output");

		dst->content = xmalloc(lens[i] + 1);
		dst->content_len = lens[i];
		if (calls[i] != NULL)
			own = lens[i] - strlen(calls[i]) -
			    (lens[i] > strlen(calls[i]));
		if (field_given(c))
			copy_content(c, dst->content, own);
		if (calls[i] != NULL) {
			size_t cl = strlen(calls[i]);

			if (own > 0)
				dst->content[own] = '\n';
			memcpy(dst->content + lens[i] - cl, calls[i], cl);
		}
		dst->content[lens[i]] = '\0';
	}
	req->n_messages = first + kept;
	rc = TS_OK;
out:
	free(lens);
	free(skip);
	for (i = 0; i < n; i++)
		free(calls[i]);
	free(calls);
	if (rc != TS_OK) {
		/* nothing was copied yet: only the array to free */
		free(req->messages);
		req->messages = NULL;
	}
	return rc;
}

/*
 * A Responses API request's "instructions" (null or a string: a system
 * message first) and "input" (a string: one user message; or a list of
 * messages). Returns TS_OK, or TS_EINVAL / TS_ELIMIT with *err.
 */
static enum ts_err
parse_input(const json_t *root, struct openai_request *req,
    struct http_error *err)
{
	const json_t *ins = json_object_get(root, "instructions");
	const json_t *in = json_object_get(root, "input");
	size_t first, used;
	enum ts_err rc;

	if (field_given(ins) && !json_is_string(ins)) {
		field_err_type(err, "instructions", "a string", ins);
		return TS_EINVAL;
	}
	first = field_given(ins) ? 1 : 0;
	used = first ? json_string_length(ins) : 0;
	if (used > OPENAI_MAX_CONTENT_BYTES) {
		field_err_string_long(err, "instructions", OPENAI_MAX_CONTENT_BYTES,
		    used);
		return TS_ELIMIT;
	}
	if (field_given(in) && json_is_string(in)) {
		if (used + json_string_length(in) > OPENAI_MAX_CONTENT_BYTES) {
			field_err_string_long(err, "input", OPENAI_MAX_CONTENT_BYTES -
			    used, json_string_length(in));
			return TS_ELIMIT;
		}
		req->messages = xcalloc(first + 1, sizeof(*req->messages));
		req->messages[first].role = OPENAI_ROLE_USER;
		req->messages[first].content_len = json_string_length(in);
		req->messages[first].content = xstrndup(json_string_value(in),
		    json_string_length(in));
		req->n_messages = first + 1;
	} else if ((rc = parse_messages(root, "input", first, used, req,
	    err)) != TS_OK) {
		return rc;
	}
	if (first) {
		req->messages[0].role = OPENAI_ROLE_SYSTEM;
		req->messages[0].content_len = used;
		req->messages[0].content = xstrndup(json_string_value(ins),
		    used);
		req->instructions = xstrndup(json_string_value(ins), used);
		req->instructions_len = used;
	}
	return TS_OK;
}

/* Checks one stop sequence s at `path`; returns TS_OK or TS_EINVAL. */
static enum ts_err
check_stop(const json_t *s, const char *path, struct http_error *err)
{
	if (!json_is_string(s)) {
		field_err_type(err, path, "a string", s);
		return TS_EINVAL;
	}
	if (json_string_length(s) == 0) {
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Invalid '%s': a stop sequence must not be empty.", path);
		http_error_set_param(err, "%s", path);
		return TS_EINVAL;
	}
	if (json_string_length(s) > OPENAI_MAX_STOP_BYTES) {
		field_err_string_long(err, path, OPENAI_MAX_STOP_BYTES,
		    json_string_length(s));
		return TS_EINVAL;
	}
	return TS_OK;
}

/* "stop": null, a string, or an array of up to OPENAI_MAX_STOP strings
 * (an empty array is no stop sequence). Returns TS_OK or TS_EINVAL. */
static enum ts_err
parse_stop(const json_t *root, struct openai_request *req,
    struct http_error *err)
{
	const json_t *v = json_object_get(root, "stop");
	const json_t *items[OPENAI_MAX_STOP];
	char path[PATH_MAX_BYTES];
	size_t i, n;

	if (!field_given(v))
		return TS_OK;
	if (json_is_string(v)) {
		if (check_stop(v, "stop", err) != TS_OK)
			return TS_EINVAL;
		items[0] = v;
		n = 1;
	} else if (json_is_array(v)) {
		n = json_array_size(v);
		if (n > OPENAI_MAX_STOP) {
			field_err_array_long(err, "stop", OPENAI_MAX_STOP, n);
			return TS_EINVAL;
		}
		for (i = 0; i < n; i++) {
			items[i] = json_array_get(v, i);
			snprintf(path, sizeof(path), "stop[%zu]", i);
			if (check_stop(items[i], path, err) != TS_OK)
				return TS_EINVAL;
		}
	} else {
		field_err_type(err, "stop", "a string or an array of strings", v);
		return TS_EINVAL;
	}
	for (i = 0; i < n; i++) {
		req->stop[i].len = json_string_length(items[i]);
		req->stop[i].s = xstrndup(json_string_value(items[i]),
		    req->stop[i].len);
	}
	req->n_stop = n;
	return TS_OK;
}

/* "stream" and "stream_options"; the latter only with stream true, as
 * OpenAI requires. Returns TS_OK or TS_EINVAL. */
static enum ts_err
parse_stream(const json_t *root, struct openai_request *req,
    struct http_error *err)
{
	const json_t *so;

	if (field_get_bool(root, "stream", "stream", &req->stream, err) < 0)
		return TS_EINVAL;
	so = json_object_get(root, "stream_options");
	if (!field_given(so))
		return TS_OK;
	if (!json_is_object(so)) {
		field_err_type(err, "stream_options", "an object", so);
		return TS_EINVAL;
	}
	if (field_get_bool(so, "include_usage", "stream_options.include_usage",
	    &req->include_usage, err) < 0)
		return TS_EINVAL;
	if (!req->stream) {
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "The 'stream_options' parameter is only allowed when "
		    "'stream' is enabled.");
		http_error_set_param(err, "stream_options");
		return TS_EINVAL;
	}
	return TS_OK;
}

/* "n": choices, each its own sequence (1..OPENAI_MAX_N; the Responses
 * API has one). */
static enum ts_err
parse_n(const json_t *root, struct openai_request *req,
    struct http_error *err)
{
	long long v;
	int r;

	r = field_get_int(root, "n", 1, req->kind == OPENAI_RESPONSES ? 1 :
	    OPENAI_MAX_N, &v, err);
	if (r < 0)
		return TS_EINVAL;
	req->n = r > 0 ? (uint32_t)v : 1;
	return TS_OK;
}

/* A function name as OpenAI takes it: [a-zA-Z0-9_-]{1,64}. */
static int
tool_name_ok(const json_t *v)
{
	const char *p = json_string_value(v);
	size_t i, n = json_string_length(v);

	if (n == 0 || n > OPENAI_MAX_TOOL_NAME)
		return 0;
	for (i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' &&
		    p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') ||
		    p[i] == '_' || p[i] == '-'))
			return 0;
	return 1;
}

/*
 * A JSON Schema the generator must satisfy (a tool's parameters or a
 * json_schema response format), checked at `param` and compiled into
 * *out for the plan, within what is left of the request's step budget
 * (req->schema_steps): a schema that would take more is a 400
 * schema_too_complex.
 */
static enum ts_err
check_schema(struct openai_request *req, const json_t *schema,
    const char *param, struct schema_gen **out, struct http_error *err)
{
	char msg[200];
	enum ts_err rc;

	*out = NULL;
	if (!json_is_object(schema) && !json_is_true(schema)) {
		field_err_type(err, param, "an object (a JSON Schema)", schema);
		return TS_EINVAL;
	}
	rc = schema_gen_compile(schema, &req->schema_steps, out, msg,
	    sizeof(msg));
	if (rc != TS_OK) {
		http_error_set(err, 400, ERR_TYPE, rc == TS_ELIMIT &&
		    req->schema_steps == 0 ? "schema_too_complex" :
		    "invalid_value", "Invalid schema for '%s': %s", param,
		    msg);
		http_error_set_param(err, "%s", param);
		return TS_EINVAL;
	}
	return TS_OK;
}

/*
 * "tools" (chat: [{type: "function", function: {name, description,
 * parameters, strict}}]), "tool_choice" and "parallel_tool_calls".
 */
static enum ts_err
parse_tools(const json_t *root, struct openai_request *req,
    struct http_error *err)
{
	const json_t *v = json_object_get(root, "tools");
	const json_t *tc = json_object_get(root, "tool_choice");
	char path[PATH_MAX_BYTES];
	size_t i, j, n;

	if (field_get_bool(root, "parallel_tool_calls", "parallel_tool_calls",
	    &req->parallel_tool_calls, err) < 0)
		return TS_EINVAL;
	if (!field_given(v)) {
		if (field_given(tc)) {
			http_error_set(err, 400, ERR_TYPE, "invalid_value",
			    "Invalid value for 'tool_choice': 'tool_choice' "
			    "is only allowed when 'tools' are specified.");
			http_error_set_param(err, "tool_choice");
			return TS_EINVAL;
		}
		return TS_OK;
	}
	if (req->kind == OPENAI_COMPLETIONS) {
		http_error_set(err, 400, ERR_TYPE, "unsupported_parameter",
		    "Unsupported parameter: 'tools' is served on "
		    "/v1/chat/completions and /v1/responses.");
		http_error_set_param(err, "tools");
		return TS_EINVAL;
	}
	if (!json_is_array(v)) {
		field_err_type(err, "tools", "an array", v);
		return TS_EINVAL;
	}
	n = json_array_size(v);
	if (n > OPENAI_MAX_TOOLS) {
		field_err_array_long(err, "tools", OPENAI_MAX_TOOLS, n);
		return TS_ELIMIT;
	}
	req->tools = xcalloc(n + 1, sizeof(*req->tools));
	for (i = 0; i < n; i++) {
		const json_t *t = json_array_get(v, i), *f, *x;

		snprintf(path, sizeof(path), "tools[%zu]", i);
		if (!json_is_object(t)) {
			field_err_type(err, path, "an object", t);
			return TS_EINVAL;
		}
		x = json_object_get(t, "type");
		snprintf(path, sizeof(path), "tools[%zu].type", i);
		if (!field_given(x)) {
			field_err_missing(err, path);
			return TS_EINVAL;
		}
		if (!field_str_is(x, "function")) {
			http_error_set(err, 400, ERR_TYPE, "invalid_value",
			    "Invalid value for '%s': tokstream takes "
			    "'function' tools only.", path);
			http_error_set_param(err, "%s", path);
			return TS_EINVAL;
		}
		/* chat nests the function, the Responses API does not */
		f = req->kind == OPENAI_RESPONSES ? t :
		    json_object_get(t, "function");
		snprintf(path, sizeof(path), "tools[%zu].function", i);
		if (!field_given(f)) {
			field_err_missing(err, path);
			return TS_EINVAL;
		}
		if (!json_is_object(f)) {
			field_err_type(err, path, "an object", f);
			return TS_EINVAL;
		}
		x = json_object_get(f, "name");
		snprintf(path, sizeof(path), req->kind == OPENAI_RESPONSES ?
		    "tools[%zu].name" : "tools[%zu].function.name", i);
		if (!field_given(x)) {
			field_err_missing(err, path);
			return TS_EINVAL;
		}
		if (!json_is_string(x) || !tool_name_ok(x)) {
			http_error_set(err, 400, ERR_TYPE, "invalid_value",
			    "Invalid '%s': a function name is 1 to 64 of "
			    "a-z, A-Z, 0-9, '_' and '-'.", path);
			http_error_set_param(err, "%s", path);
			return TS_EINVAL;
		}
		for (j = 0; j < i; j++)
			if (strcmp(req->tools[j].name,
			    json_string_value(x)) == 0) {
				http_error_set(err, 400, ERR_TYPE,
				    "invalid_value", "Invalid '%s': the "
				    "function '%s' is defined twice.", path,
				    json_string_value(x));
				http_error_set_param(err, "%s", path);
				return TS_EINVAL;
			}
		req->tools[i].name = xstrndup(json_string_value(x),
		    json_string_length(x));
		req->tools[i].name_len = json_string_length(x);
		req->n_tools = i + 1;
		x = json_object_get(f, "parameters");
		snprintf(path, sizeof(path), req->kind == OPENAI_RESPONSES ?
		    "tools[%zu].parameters" : "tools[%zu].function.parameters",
		    i);
		if (field_given(x) && json_is_object(x) && json_object_size(x) > 0) {
			const json_t *ty = json_object_get(x, "type");

			/* OpenAI: the parameters are an object's schema */
			if (field_given(ty) ? !field_str_is(ty, "object") :
			    json_object_get(x, "properties") == NULL) {
				http_error_set(err, 400, ERR_TYPE,
				    "invalid_value", "Invalid schema for '%s': "
				    "a function's parameters must be a JSON "
				    "Schema of \"type\": \"object\".", path);
				http_error_set_param(err, "%s", path);
				return TS_EINVAL;
			}
			if (check_schema(req, x, path,
			    &req->tools[i].compiled, err) != TS_OK)
				return TS_EINVAL;
			req->tools[i].parameters = json_incref((json_t *)x);
		} else if (field_given(x) && !json_is_object(x)) {
			field_err_type(err, path, "an object (a JSON Schema)", x);
			return TS_EINVAL;
		} else {
			/* OpenAI: omitting parameters (or {}) defines a
			 * function with an empty parameter list */
			req->tools[i].parameters = json_pack("{s:s,s:{}}",
			    "type", "object", "properties");
		}
	}
	req->tools_json = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	req->tools_raw = json_incref((json_t *)v);
	if (field_given(tc))
		req->tool_choice_raw = json_incref((json_t *)tc);
	if (!field_given(tc) || field_str_is(tc, "auto")) {
		req->tool_choice = OPENAI_TOOL_AUTO;
	} else if (field_str_is(tc, "none")) {
		req->tool_choice = OPENAI_TOOL_NONE;
	} else if (field_str_is(tc, "required")) {
		req->tool_choice = OPENAI_TOOL_REQUIRED;
	} else if (json_is_object(tc)) {
		const json_t *f = req->kind == OPENAI_RESPONSES ? tc :
		    json_object_get(tc, "function"), *x;

		x = json_is_object(f) ? json_object_get(f, "name") : NULL;
		if (!field_str_is(json_object_get(tc, "type"), "function") ||
		    !json_is_string(x)) {
			http_error_set(err, 400, ERR_TYPE, "invalid_value",
			    "Invalid 'tool_choice': an object must be %s.",
			    req->kind == OPENAI_RESPONSES ?
			    "{\"type\": \"function\", \"name\": NAME}" :
			    "{\"type\": \"function\", \"function\": "
			    "{\"name\": NAME}}");
			http_error_set_param(err, "tool_choice");
			return TS_EINVAL;
		}
		for (j = 0; j < req->n_tools; j++)
			if (strlen(req->tools[j].name) ==
			    json_string_length(x) && memcmp(req->tools[j].name,
			    json_string_value(x), json_string_length(x)) == 0)
				break;
		if (j == req->n_tools) {
			http_error_set(err, 400, ERR_TYPE, "invalid_value",
			    "Invalid 'tool_choice': no function of that name "
			    "is in 'tools'.");
			http_error_set_param(err, "tool_choice");
			return TS_EINVAL;
		}
		req->tool_choice = OPENAI_TOOL_NAMED;
		req->tool_named = j;
	} else {
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Invalid value for 'tool_choice': use 'none', 'auto', "
		    "'required' or {\"type\": \"function\", \"function\": "
		    "{\"name\": NAME}}.");
		http_error_set_param(err, "tool_choice");
		return TS_EINVAL;
	}
	if (n == 0 && (req->tool_choice == OPENAI_TOOL_REQUIRED)) {
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Invalid value for 'tool_choice': 'required' needs at "
		    "least one tool.");
		http_error_set_param(err, "tool_choice");
		return TS_EINVAL;
	}
	return TS_OK;
}

/* The schema "json_object" output follows: an object with an answer. */
static const char format_object_schema[] =
    "{\"type\":\"object\",\"properties\":{\"answer\":{\"type\":\"string\","
    "\"minLength\":1,\"maxLength\":80},\"confidence\":{\"type\":\"number\","
    "\"minimum\":0,\"maximum\":1}},\"required\":[\"answer\","
    "\"confidence\"],\"additionalProperties\":false}";

/* "response_format" (chat): {type: "text"}, {type: "json_object"} or
 * {type: "json_schema", json_schema: {name, schema, strict,
 * description}}. */
static enum ts_err
parse_format(const json_t *root, struct openai_request *req,
    struct http_error *err)
{
	const json_t *v = json_object_get(root, "response_format"), *t, *js, *x;

	if (!field_given(v))
		return TS_OK;
	if (req->kind != OPENAI_CHAT) {
		http_error_set(err, 400, ERR_TYPE, "unsupported_parameter",
		    "Unsupported parameter: 'response_format' is served on "
		    "/v1/chat/completions only.");
		http_error_set_param(err, "response_format");
		return TS_EINVAL;
	}
	if (!json_is_object(v)) {
		field_err_type(err, "response_format", "an object", v);
		return TS_EINVAL;
	}
	t = json_object_get(v, "type");
	if (!field_given(t)) {
		field_err_missing(err, "response_format.type");
		return TS_EINVAL;
	}
	if (field_str_is(t, "text"))
		return TS_OK;
	if (field_str_is(t, "json_object")) {
		req->format = OPENAI_FORMAT_JSON_OBJECT;
		req->format_schema = json_loads(format_object_schema, 0, NULL);
		return TS_OK;
	}
	if (!field_str_is(t, "json_schema")) {
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Invalid value for 'response_format.type': use 'text', "
		    "'json_object' or 'json_schema'.");
		http_error_set_param(err, "response_format.type");
		return TS_EINVAL;
	}
	js = json_object_get(v, "json_schema");
	if (!field_given(js)) {
		field_err_missing(err, "response_format.json_schema");
		return TS_EINVAL;
	}
	if (!json_is_object(js)) {
		field_err_type(err, "response_format.json_schema", "an object", js);
		return TS_EINVAL;
	}
	x = json_object_get(js, "name");
	if (!field_given(x)) {
		field_err_missing(err, "response_format.json_schema.name");
		return TS_EINVAL;
	}
	if (!json_is_string(x) || !tool_name_ok(x)) {
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Invalid 'response_format.json_schema.name': 1 to 64 of "
		    "a-z, A-Z, 0-9, '_' and '-'.");
		http_error_set_param(err, "response_format.json_schema.name");
		return TS_EINVAL;
	}
	x = json_object_get(js, "schema");
	req->format = OPENAI_FORMAT_JSON_SCHEMA;
	if (!field_given(x)) {
		req->format_schema = json_loads(format_object_schema, 0, NULL);
		return TS_OK;
	}
	if (check_schema(req, x, "response_format.json_schema.schema",
	    &req->format_compiled, err) != TS_OK)
		return TS_EINVAL;
	req->format_schema = json_incref((json_t *)x);
	return TS_OK;
}

/* Chat "logprobs" (bool) and "top_logprobs" (0..20, only with logprobs
 * true); completions "logprobs" (0..5: the sampled token's and that many
 * alternatives). */
static enum ts_err
parse_logprobs(const json_t *root, struct openai_request *req,
    struct http_error *err)
{
	long long v;
	int r;

	if (req->kind == OPENAI_COMPLETIONS) {
		r = field_get_int(root, "logprobs", 0,
		    OPENAI_MAX_COMPLETION_LOGPROBS, &v, err);
		if (r < 0)
			return TS_EINVAL;
		if (r > 0) {
			req->logprobs = 1;
			req->top_logprobs = (uint32_t)v;
		}
		return TS_OK;
	}
	if (req->kind == OPENAI_RESPONSES)
		return TS_OK;
	if (field_get_bool(root, "logprobs", "logprobs", &req->logprobs, err) < 0)
		return TS_EINVAL;
	r = field_get_int(root, "top_logprobs", 0, OPENAI_MAX_TOP_LOGPROBS, &v, err);
	if (r < 0)
		return TS_EINVAL;
	if (r > 0) {
		if (!req->logprobs) {
			http_error_set(err, 400, ERR_TYPE, "invalid_value",
			    "Invalid value for 'top_logprobs': 'logprobs' "
			    "must be true when 'top_logprobs' is given.");
			http_error_set_param(err, "top_logprobs");
			return TS_EINVAL;
		}
		req->top_logprobs = (uint32_t)v;
	}
	return TS_OK;
}

void
openai_model_not_found(struct http_error *err, const char *asked,
    size_t asked_len, const char *const *models, size_t n_models)
{
	char served[320];
	size_t k, n = 0;

	served[0] = '\0';
	for (k = 0; k < n_models && k < 4; k++) {
		int w = snprintf(served + n, sizeof(served) - n, "%s`%.*s`",
		    k == 0 ? "" : ", ", (int)field_utf8_prefix(models[k],
		    strlen(models[k]), 64), models[k]);

		if (w < 0 || (size_t)w >= sizeof(served) - n)
			break;
		n += (size_t)w;
	}
	if (n_models > k && n + 8 < sizeof(served))
		strcat(served, ", ...");
	if (asked != NULL)
		http_error_set(err, 404, ERR_TYPE, "model_not_found",
		    "The model `%.*s` does not exist: this server serves %s.",
		    (int)asked_len, asked, served);
	else
		http_error_set(err, 404, ERR_TYPE, "model_not_found",
		    "The model does not exist: this server serves %s.", served);
}

/* An effort (the openai SDK's Shared.ReasoningEffort, openai 6.49.0
 * resources/shared.d.ts): a string of think.h's names, or null. */
static enum ts_err
parse_effort(const json_t *v, const char *param, struct openai_request *req,
    struct http_error *err)
{
	if (!field_given(v))
		return TS_OK;
	if (!json_is_string(v)) {
		field_err_type(err, param, "a string", v);
		return TS_EINVAL;
	}
	if (think_effort_parse(json_string_value(v), json_string_length(v),
	    &req->effort) != 0) {
		http_error_set(err, 400, ERR_TYPE, "invalid_value", "%s must "
		    "be one of 'none', 'minimal', 'low', 'medium', 'high', "
		    "'xhigh' or 'max'.", param);
		http_error_set_param(err, "%s", param);
		return TS_EINVAL;
	}
	return TS_OK;
}

/* Chat's reasoning_effort; the Responses API's reasoning {effort,
 * summary} (Shared.Reasoning: summary 'auto' | 'concise' | 'detailed' |
 * null). */
static enum ts_err
parse_reasoning(const json_t *root, struct openai_request *req,
    struct http_error *err)
{
	const json_t *o, *sum;

	if (req->kind == OPENAI_CHAT)
		return parse_effort(json_object_get(root, "reasoning_effort"),
		    "reasoning_effort", req, err);
	if (req->kind != OPENAI_RESPONSES)
		return TS_OK;
	o = json_object_get(root, "reasoning");
	if (!field_given(o))
		return TS_OK;
	if (!json_is_object(o)) {
		field_err_type(err, "reasoning", "an object", o);
		return TS_EINVAL;
	}
	if (parse_effort(json_object_get(o, "effort"), "reasoning.effort", req,
	    err) != TS_OK)
		return TS_EINVAL;
	sum = json_object_get(o, "summary");
	if (!field_given(sum))
		return TS_OK;
	req->reasoning_summary = field_str_is(sum, "auto") ? 1 :
	    field_str_is(sum, "concise") ? 2 :
	    field_str_is(sum, "detailed") ? 3 : 0;
	if (req->reasoning_summary != 0)
		return TS_OK;
	http_error_set(err, 400, ERR_TYPE, "invalid_value", "reasoning.summary "
	    "must be one of 'auto', 'concise' or 'detailed'.");
	http_error_set_param(err, "%s", "reasoning.summary");
	return TS_EINVAL;
}

enum ts_err
openai_parse_request(enum openai_kind kind, const char *body, size_t len,
    const char *const *models, size_t n_models, struct openai_request *req,
    struct http_error *err)
{
	const char *model = models[0];
	size_t model_len = strlen(model), k;
	json_t *root = NULL;
	const json_t *m;
	enum ts_err rc = TS_EINVAL;
	long long v;
	int r;

	request_defaults(req, kind);
	if (len == 0) {
		http_error_set(err, 400, ERR_TYPE, "empty_body",
		    "The request body is empty: send a JSON object such as "
		    "{\"model\":\"%.*s\",%s}", (int)field_utf8_prefix(model,
		    model_len, 64), model, kind == OPENAI_CHAT ?
		    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]" :
		    kind == OPENAI_RESPONSES ? "\"input\":\"hi\"" :
		    "\"prompt\":\"hi\"");
		return TS_EINVAL;
	}
	if ((root = field_body_object(body, len, err)) == NULL)
		return TS_EINVAL;
	m = json_object_get(root, "model");
	if (!field_given(m)) {
		field_err_missing(err, "model");
		goto out;
	}
	if (!json_is_string(m)) {
		field_err_type(err, "model", "a string", m);
		goto out;
	}
	if (kind == OPENAI_RESPONSES) {
		if ((rc = parse_input(root, req, err)) != TS_OK)
			goto out;
		rc = TS_EINVAL;
		r = field_get_int(root, "max_output_tokens", 1,
		    OPENAI_MAX_TOKENS_CAP, &v, err);
		if (r < 0)
			goto out;
		if (r > 0) {
			req->max_tokens = (uint32_t)v;
			req->has_max_tokens = 1;
		}
	} else if (kind == OPENAI_CHAT) {
		if ((rc = parse_messages(root, "messages", 0, 0, req, err)) !=
		    TS_OK)
			goto out;
		rc = TS_EINVAL;
		r = field_get_int(root, "max_tokens", 1, OPENAI_MAX_TOKENS_CAP, &v,
		    err);
		if (r < 0)
			goto out;
		if (r > 0)
			req->max_tokens = (uint32_t)v;
		/* vLLM: max_completion_tokens, when given, wins */
		r = field_get_int(root, "max_completion_tokens", 1,
		    OPENAI_MAX_TOKENS_CAP, &v, err);
		if (r < 0)
			goto out;
		if (r > 0)
			req->max_tokens = (uint32_t)v;
	} else {
		if ((rc = parse_prompt(root, req, err)) != TS_OK)
			goto out;
		rc = TS_EINVAL;
		r = field_get_int(root, "max_tokens", 0, OPENAI_MAX_TOKENS_CAP, &v,
		    err);
		if (r < 0)
			goto out;
		if (r > 0)
			req->max_tokens = (uint32_t)v;
	}
	if ((r = field_get_number(root, "temperature", 0, 0, 2,
	    &req->temperature, err)) < 0)
		goto out;
	req->sampling_given |= r > 0 ? ENGINE_GIVEN_TEMPERATURE : 0;
	if ((r = field_get_number(root, "top_p", 0, 1, 1, &req->top_p,
	    err)) < 0)
		goto out;
	req->sampling_given |= r > 0 ? ENGINE_GIVEN_TOP_P : 0;
	/* vLLM's top_k: -1 (or 0) disables it */
	if ((r = field_get_int(root, "top_k", -1, 1 << 20, &v, err)) < 0)
		goto out;
	if (r > 0) {
		req->top_k = v > 0 ? (uint32_t)v : 0;
		req->sampling_given |= ENGINE_GIVEN_TOP_K;
	}
	if (parse_n(root, req, err) != TS_OK ||
	    parse_stream(root, req, err) != TS_OK ||
	    parse_stop(root, req, err) != TS_OK ||
	    parse_tools(root, req, err) != TS_OK ||
	    parse_format(root, req, err) != TS_OK ||
	    parse_logprobs(root, req, err) != TS_OK ||
	    parse_reasoning(root, req, err) != TS_OK)
		goto out;
	r = field_get_int(root, "seed", INT64_MIN, INT64_MAX, &v, err);
	if (r < 0)
		goto out;
	if (r > 0) {
		req->has_seed = 1;
		req->seed = (int64_t)v;
	}
	if (field_get_bool(root, "ignore_eos", "ignore_eos", &req->ignore_eos,
	    err) < 0 || knobs_from_json(root, &req->knobs, err) != TS_OK)
		goto out;
	/* Last: a malformed request is a 400 whatever its model. */
	for (k = 0; k < n_models; k++)
		if (json_string_length(m) == strlen(models[k]) &&
		    memcmp(json_string_value(m), models[k],
		    strlen(models[k])) == 0)
			break;
	if (k == n_models) {
		openai_model_not_found(err, field_quotable(m, 64) ?
		    json_string_value(m) : NULL, json_string_length(m),
		    models, n_models);
		goto out;
	}
	req->model_len = model_len;
	req->model = xstrndup(model, model_len);
	rc = TS_OK;
out:
	json_decref(root);
	if (rc != TS_OK)
		openai_request_free(req);
	return rc;
}
