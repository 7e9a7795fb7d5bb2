/*
 * anthropic/parse.c - Anthropic Messages API request bodies (parse.h).
 * Field by field after @anthropic-ai/sdk's MessageCreateParamsBase
 * (resources/messages/messages.d.ts): model, max_tokens, messages
 * (MessageParam: role, content: string | ContentBlockParam[]), system
 * (string | TextBlockParam[]), stop_sequences, temperature, top_p, top_k,
 * stream, metadata, tools (Tool: name, description, input_schema),
 * tool_choice (ToolChoice), thinking (ThinkingConfigParam).
 */
#include "anthropic/parse.h"

#include "backend/backend.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/utf8.h"

#define ERR_TYPE "invalid_request_error"

/* A 400 that names the field. */
static enum ts_err
bad(struct http_error *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum ts_err
bad(struct http_error *err, const char *code, const char *fmt, ...)
{
	char msg[sizeof(err->message)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	http_error_set(err, 400, ERR_TYPE, code, "%s", msg);
	return TS_EINVAL;
}

static char *
dupn(const char *p, size_t n)
{
	char *s = xmalloc(n + 1);

	if (n > 0)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

void
anthropic_request_drop_schemas(struct anthropic_request *r)
{
	size_t i;

	for (i = 0; r != NULL && i < r->n_tools; i++) {
		schema_gen_free(r->tools[i].compiled);
		r->tools[i].compiled = NULL;
	}
}

void
anthropic_request_free(struct anthropic_request *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->n_messages; i++)
		free(r->messages[i].text);
	free(r->messages);
	free(r->system);
	for (i = 0; i < r->n_stop; i++)
		free(r->stop[i]);
	anthropic_request_drop_schemas(r);
	for (i = 0; i < r->n_tools; i++) {
		free(r->tools[i].name);
		json_decref(r->tools[i].input_schema);
	}
	free(r->tools);
	free(r->tools_json);
	memset(r, 0, sizeof(*r));
}

/* Appends (p, n) to b with a "\n" before it when b is not empty; 400
 * over ANTHROPIC_MAX_CONTENT_BYTES. */
static enum ts_err
join(struct ts_buf *b, const char *p, size_t n, size_t *total,
    struct http_error *err)
{
	*total += n + 1;
	if (*total > ANTHROPIC_MAX_CONTENT_BYTES)
		return bad(err, "content_too_long", "messages: the content is "
		    "over tokstream's limit of %u bytes",
		    ANTHROPIC_MAX_CONTENT_BYTES);
	if ((b->len > 0 && ts_buf_append(b, "\n", 1) != TS_OK) ||
	    ts_buf_append(b, p, n) != TS_OK)
		return bad(err, "content_too_long", "messages: too long");
	return TS_OK;
}

/* A JSON string's bytes, or a 400 naming `where`. */
static enum ts_err
str_of(const json_t *v, const char *where, const char **p, size_t *n,
    struct http_error *err)
{
	if (!json_is_string(v))
		return bad(err, "invalid_type", "%s: expected a string", where);
	*p = json_string_value(v);
	*n = json_string_length(v);
	return TS_OK;
}

/* The text of a tool_result's content: a string, or text blocks. */
static enum ts_err
tool_result_text(const json_t *c, const char *where, struct ts_buf *b,
    size_t *total, struct http_error *err)
{
	size_t i;
	const json_t *blk;
	const char *p = NULL;
	size_t n = 0;

	if (c == NULL || json_is_null(c))
		return TS_OK;
	if (json_is_string(c))
		return join(b, json_string_value(c), json_string_length(c),
		    total, err);
	if (!json_is_array(c))
		return bad(err, "invalid_type", "%s.content: expected a "
		    "string or an array of blocks", where);
	json_array_foreach(c, i, blk) {
		const json_t *t = json_object_get(blk, "type");

		if (!json_is_object(blk) || !json_is_string(t))
			return bad(err, "invalid_type", "%s.content.%zu: "
			    "expected a content block", where, i);
		if (strcmp(json_string_value(t), "text") != 0)
			return bad(err, "unsupported_content", "%s.content.%zu:"
			    " type '%s' is not supported: tokstream's model "
			    "reads text only", where, i, json_string_value(t));
		if (str_of(json_object_get(blk, "text"), "text", &p, &n,
		    err) != TS_OK || join(b, p, n, total, err) != TS_OK)
			return TS_EINVAL;
	}
	return TS_OK;
}

/* One content block of message i, block k, rendered into b. */
static enum ts_err
block(const json_t *blk, size_t i, size_t k, struct anthropic_message *m,
    struct ts_buf *b, size_t *total, struct http_error *err)
{
	const json_t *t = json_object_get(blk, "type");
	char where[64];
	const char *type, *p = NULL;
	size_t n = 0;

	snprintf(where, sizeof(where), "messages.%zu.content.%zu", i, k);
	if (!json_is_object(blk) || !json_is_string(t))
		return bad(err, "invalid_type", "%s: expected an object with "
		    "a type", where);
	type = json_string_value(t);
	if (strcmp(type, "text") == 0) {
		if (str_of(json_object_get(blk, "text"), where, &p, &n,
		    err) != TS_OK)
			return TS_EINVAL;
		return join(b, p, n, total, err);
	}
	if (strcmp(type, "tool_use") == 0) {
		/* rendered as its compact JSON, as an OpenAI assistant
		 * turn's tool_calls are */
		char *s;
		enum ts_err rc;

		if (!json_is_string(json_object_get(blk, "name")) ||
		    !json_is_string(json_object_get(blk, "id")))
			return bad(err, "invalid_type", "%s: a tool_use block "
			    "needs an id and a name", where);
		s = json_dumps(blk, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (s == NULL)
			return bad(err, "invalid_value", "%s: cannot be "
			    "encoded", where);
		rc = join(b, s, strlen(s), total, err);
		free(s);
		return rc;
	}
	if (strcmp(type, "tool_result") == 0) {
		if (!json_is_string(json_object_get(blk, "tool_use_id")))
			return bad(err, "invalid_type", "%s.tool_use_id: "
			    "expected a string", where);
		m->tool_result = 1;
		return tool_result_text(json_object_get(blk, "content"),
		    where, b, total, err);
	}
	if (strcmp(type, "thinking") == 0 ||
	    strcmp(type, "redacted_thinking") == 0)
		return TS_OK;   /* an earlier turn's: not in the prompt, as
				 * Anthropic strips it */
	if (strcmp(type, "image") == 0 || strcmp(type, "document") == 0)
		return bad(err, "unsupported_content", "%s: %s blocks are not "
		    "supported: tokstream's model reads text only", where,
		    type);
	return bad(err, "invalid_value", "%s: unknown content block type "
	    "'%.40s'", where, type);
}

static enum ts_err
parse_messages(const json_t *v, struct anthropic_request *req,
    struct http_error *err)
{
	size_t i, k, total = 0;
	const json_t *m, *blk;

	if (v == NULL)
		return bad(err, "missing_required_parameter", "messages: "
		    "Field required");
	if (!json_is_array(v))
		return bad(err, "invalid_type", "messages: expected an array");
	if (json_array_size(v) == 0)
		return bad(err, "empty_array", "messages: at least one "
		    "message is required");
	if (json_array_size(v) > ANTHROPIC_MAX_MESSAGES)
		return bad(err, "array_above_max_length", "messages: at most "
		    "%d messages", ANTHROPIC_MAX_MESSAGES);
	req->messages = xcalloc(json_array_size(v), sizeof(*req->messages));
	json_array_foreach(v, i, m) {
		struct anthropic_message *am = &req->messages[i];
		const json_t *role = json_object_get(m, "role");
		const json_t *c = json_object_get(m, "content");
		struct ts_buf b;
		enum ts_err rc = TS_OK;

		req->n_messages = i + 1;
		if (!json_is_object(m))
			return bad(err, "invalid_type", "messages.%zu: expected "
			    "an object", i);
		if (!json_is_string(role) || chat_role_parse(
		    json_string_value(role), json_string_length(role),
		    &am->role) != TS_OK)
			return bad(err, "invalid_value", "messages.%zu.role: "
			    "expected 'user' or 'assistant'", i);
		ts_buf_init(&b, ANTHROPIC_MAX_CONTENT_BYTES + 1);
		if (json_is_string(c)) {
			rc = join(&b, json_string_value(c),
			    json_string_length(c), &total, err);
		} else if (json_is_array(c)) {
			if (json_array_size(c) > ANTHROPIC_MAX_BLOCKS)
				rc = bad(err, "array_above_max_length",
				    "messages.%zu.content: at most %d blocks",
				    i, ANTHROPIC_MAX_BLOCKS);
			json_array_foreach(c, k, blk) {
				if (rc != TS_OK)
					break;
				rc = block(blk, i, k, am, &b, &total, err);
			}
		} else {
			rc = bad(err, c == NULL ? "missing_required_parameter" :
			    "invalid_type", "messages.%zu.content: expected a "
			    "string or an array of content blocks", i);
		}
		if (rc == TS_OK && !utf8_valid(b.p ? b.p : "", b.len))
			rc = bad(err, "invalid_value", "messages.%zu.content: "
			    "not UTF-8", i);
		am->text = dupn(b.p ? b.p : "", b.len);
		am->len = b.len;
		ts_buf_free(&b);
		if (rc != TS_OK)
			return rc;
	}
	return TS_OK;
}

static enum ts_err
parse_system(const json_t *v, struct anthropic_request *req,
    struct http_error *err)
{
	struct ts_buf b;
	size_t i, total = 0;
	const json_t *blk;
	enum ts_err rc = TS_OK;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	ts_buf_init(&b, ANTHROPIC_MAX_CONTENT_BYTES + 1);
	if (json_is_string(v)) {
		rc = join(&b, json_string_value(v), json_string_length(v),
		    &total, err);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, blk) {
			const char *p = NULL;
			size_t n = 0;

			if (rc != TS_OK)
				break;
			if (!json_is_object(blk) || !json_is_string(
			    json_object_get(blk, "type")) || strcmp(
			    json_string_value(json_object_get(blk, "type")),
			    "text") != 0) {
				rc = bad(err, "invalid_value", "system.%zu: "
				    "expected a text block", i);
				break;
			}
			rc = str_of(json_object_get(blk, "text"),
			    "system.text", &p, &n, err);
			if (rc == TS_OK)
				rc = join(&b, p, n, &total, err);
		}
	} else {
		rc = bad(err, "invalid_type", "system: expected a string or "
		    "an array of text blocks");
	}
	if (rc == TS_OK) {
		req->system = dupn(b.p ? b.p : "", b.len);
		req->system_len = b.len;
	}
	ts_buf_free(&b);
	return rc;
}

/* 1 when root has `name`, not null (the request gave it) */
static int
sampling_given(const json_t *root, const char *name)
{
	const json_t *v = json_object_get(root, name);

	return v != NULL && !json_is_null(v);
}

/* A number field in [lo, hi], or absent/null (*out untouched). */
static enum ts_err
num_in(const json_t *root, const char *name, double lo, double hi,
    double *out, struct http_error *err)
{
	const json_t *v = json_object_get(root, name);
	double d;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_number(v))
		return bad(err, "invalid_type", "%s: expected a number", name);
	d = json_number_value(v);
	if (!(d >= lo && d <= hi))
		return bad(err, "invalid_value", "%s: must be between %g and "
		    "%g", name, lo, hi);
	*out = d;
	return TS_OK;
}

/* An integer field in [lo, hi]; absent: *given 0. */
static enum ts_err
int_in(const json_t *v, const char *name, json_int_t lo, json_int_t hi,
    uint32_t *out, int *given, struct http_error *err)
{
	*given = 0;
	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_integer(v))
		return bad(err, "invalid_type", "%s: expected an integer",
		    name);
	if (json_integer_value(v) < lo || json_integer_value(v) > hi)
		return bad(err, "invalid_value", "%s: must be between %lld "
		    "and %lld", name, (long long)lo, (long long)hi);
	*out = (uint32_t)json_integer_value(v);
	*given = 1;
	return TS_OK;
}

static enum ts_err
parse_stop(const json_t *v, struct anthropic_request *req,
    struct http_error *err)
{
	size_t i;
	const json_t *s;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_array(v))
		return bad(err, "invalid_type", "stop_sequences: expected an "
		    "array of strings");
	if (json_array_size(v) > ANTHROPIC_MAX_STOP)
		return bad(err, "array_above_max_length", "stop_sequences: "
		    "tokstream takes at most %d", ANTHROPIC_MAX_STOP);
	json_array_foreach(v, i, s) {
		size_t n = json_string_length(s);

		if (!json_is_string(s))
			return bad(err, "invalid_type", "stop_sequences.%zu: "
			    "expected a string", i);
		if (n == 0 || n > ANTHROPIC_MAX_STOP_BYTES)
			return bad(err, "invalid_value", "stop_sequences.%zu: "
			    "1 to %d bytes", i, ANTHROPIC_MAX_STOP_BYTES);
		req->stop[i] = dupn(json_string_value(s), n);
		req->stop_len[i] = n;
		req->n_stop = i + 1;
	}
	return TS_OK;
}

static int
name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > ANTHROPIC_MAX_TOOL_NAME)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' &&
		    s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

static enum ts_err
parse_tools(const json_t *v, struct anthropic_request *req,
    struct http_error *err)
{
	uint64_t steps = SCHEMA_GEN_MAX_STEPS;
	size_t i, j;
	const json_t *t;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_array(v))
		return bad(err, "invalid_type", "tools: expected an array");
	if (json_array_size(v) > ANTHROPIC_MAX_TOOLS)
		return bad(err, "array_above_max_length", "tools: at most %d",
		    ANTHROPIC_MAX_TOOLS);
	if (json_array_size(v) == 0)
		return TS_OK;
	req->tools = xcalloc(json_array_size(v), sizeof(*req->tools));
	json_array_foreach(v, i, t) {
		struct anthropic_tool *at = &req->tools[i];
		const json_t *name = json_object_get(t, "name");
		const json_t *schema = json_object_get(t, "input_schema");
		const json_t *type = json_object_get(t, "type");
		char msg[200];

		req->n_tools = i + 1;
		if (!json_is_object(t))
			return bad(err, "invalid_type", "tools.%zu: expected "
			    "an object", i);
		if (type != NULL && !json_is_null(type) && !(json_is_string(
		    type) && strcmp(json_string_value(type), "custom") == 0))
			return bad(err, "invalid_value", "tools.%zu.type: "
			    "tokstream has only custom tools (no server "
			    "tools)", i);
		if (!json_is_string(name) || !name_ok(json_string_value(name),
		    json_string_length(name)))
			return bad(err, "invalid_value", "tools.%zu.name: must "
			    "match ^[a-zA-Z0-9_-]{1,64}$", i);
		for (j = 0; j < i; j++)
			if (strcmp(req->tools[j].name,
			    json_string_value(name)) == 0)
				return bad(err, "invalid_value", "tools: tool "
				    "names must be unique ('%s')",
				    req->tools[j].name);
		at->name = dupn(json_string_value(name),
		    json_string_length(name));
		at->name_len = json_string_length(name);
		if (!json_is_object(schema))
			return bad(err, schema == NULL ?
			    "missing_required_parameter" : "invalid_type",
			    "tools.%zu.input_schema: expected a JSON Schema "
			    "object", i);
		if (!json_is_string(json_object_get(schema, "type")) ||
		    strcmp(json_string_value(json_object_get(schema, "type")),
		    "object") != 0)
			return bad(err, "invalid_value", "tools.%zu.input_schema."
			    "type: must be 'object' (Tool.InputSchema)", i);
		at->input_schema = json_incref((json_t *)schema);
		if (schema_gen_compile(schema, &steps, &at->compiled, msg,
		    sizeof(msg)) != TS_OK)
			return bad(err, "invalid_value", "tools.%zu.input_schema:"
			    " %s", i, msg);
	}
	req->tools_json = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (req->tools_json == NULL)
		return bad(err, "invalid_value", "tools: cannot be encoded");
	return TS_OK;
}

static enum ts_err
parse_tool_choice(const json_t *v, struct anthropic_request *req,
    struct http_error *err)
{
	const json_t *t = json_object_get(v, "type");
	const char *s;
	size_t i;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_object(v) || !json_is_string(t))
		return bad(err, "invalid_type", "tool_choice: expected an "
		    "object with a type");
	s = json_string_value(t);
	if (strcmp(s, "auto") == 0)
		req->tool_choice = ANTHROPIC_TOOL_AUTO;
	else if (strcmp(s, "any") == 0)
		req->tool_choice = ANTHROPIC_TOOL_ANY;
	else if (strcmp(s, "none") == 0)
		req->tool_choice = ANTHROPIC_TOOL_NONE;
	else if (strcmp(s, "tool") == 0)
		req->tool_choice = ANTHROPIC_TOOL_NAMED;
	else
		return bad(err, "invalid_value", "tool_choice.type: expected "
		    "'auto', 'any', 'tool' or 'none'");
	if (req->tool_choice != ANTHROPIC_TOOL_AUTO &&
	    req->tool_choice != ANTHROPIC_TOOL_NONE && req->n_tools == 0)
		return bad(err, "invalid_value", "tool_choice: '%s' needs "
		    "tools", s);
	if (req->tool_choice != ANTHROPIC_TOOL_NAMED)
		return TS_OK;
	t = json_object_get(v, "name");
	if (!json_is_string(t))
		return bad(err, "invalid_type", "tool_choice.name: expected "
		    "a string");
	for (i = 0; i < req->n_tools; i++)
		if (strcmp(req->tools[i].name, json_string_value(t)) == 0) {
			req->tool_named = i;
			return TS_OK;
		}
	return bad(err, "invalid_value", "tool_choice.name: no tool named "
	    "'%.64s'", json_string_value(t));
}

static enum ts_err
parse_thinking(const json_t *v, struct anthropic_request *req,
    struct http_error *err)
{
	const json_t *t = json_object_get(v, "type");
	uint32_t budget = 0;
	int given;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_object(v) || !json_is_string(t))
		return bad(err, "invalid_type", "thinking: expected an object "
		    "with a type");
	if (strcmp(json_string_value(t), "disabled") == 0) {
		req->thinking_disabled = 1;
		return TS_OK;
	}
	if (strcmp(json_string_value(t), "enabled") != 0)
		return bad(err, "invalid_value", "thinking.type: expected "
		    "'enabled' or 'disabled'");
	if (int_in(json_object_get(v, "budget_tokens"),
	    "thinking.budget_tokens", 1, ANTHROPIC_MAX_TOKENS_CAP, &budget,
	    &given, err) != TS_OK)
		return TS_EINVAL;
	if (!given)
		return bad(err, "missing_required_parameter",
		    "thinking.budget_tokens: Field required");
	if (!req->count_only && budget >= req->max_tokens)
		return bad(err, "invalid_value", "max_tokens must be greater "
		    "than thinking.budget_tokens");
	if (req->tool_choice == ANTHROPIC_TOOL_ANY ||
	    req->tool_choice == ANTHROPIC_TOOL_NAMED)
		return bad(err, "invalid_value", "Thinking may not be enabled "
		    "when tool_choice forces tool use.");
	req->thinking_budget = budget;
	return TS_OK;
}

/* The fields after the JSON is an object; the model last. */
static enum ts_err
parse_fields(const json_t *root, int count_only, const char *const *models,
    size_t n_models, struct anthropic_request *req,
    struct http_error *err)
{
	const json_t *model = json_object_get(root, "model");
	const json_t *v;
	int given;
	size_t i;

	if (model == NULL)
		return bad(err, "missing_required_parameter", "model: Field "
		    "required");
	if (!json_is_string(model))
		return bad(err, "invalid_type", "model: expected a string");
	if (!count_only) {
		if (int_in(json_object_get(root, "max_tokens"), "max_tokens",
		    1, ANTHROPIC_MAX_TOKENS_CAP, &req->max_tokens, &given,
		    err) != TS_OK)
			return TS_EINVAL;
		if (!given)
			return bad(err, "missing_required_parameter",
			    "max_tokens: Field required");
	}
	if (parse_messages(json_object_get(root, "messages"), req, err) !=
	    TS_OK || parse_system(json_object_get(root, "system"), req,
	    err) != TS_OK)
		return TS_EINVAL;
	if (!count_only) {
		if (parse_stop(json_object_get(root, "stop_sequences"), req,
		    err) != TS_OK ||
		    num_in(root, "temperature", 0.0, 1.0, &req->temperature,
		    err) != TS_OK ||
		    num_in(root, "top_p", 0.0, 1.0, &req->top_p, err) !=
		    TS_OK ||
		    int_in(json_object_get(root, "top_k"), "top_k", 0,
		    1000000, &req->top_k, &given, err) != TS_OK)
			return TS_EINVAL;
		if (req->top_p <= 0.0)
			req->top_p = 1.0;
		req->sampling_given = (sampling_given(root, "temperature") ?
		    ENGINE_GIVEN_TEMPERATURE : 0) |
		    (sampling_given(root, "top_p") ? ENGINE_GIVEN_TOP_P : 0) |
		    (given ? ENGINE_GIVEN_TOP_K : 0);
		v = json_object_get(root, "stream");
		if (v != NULL && !json_is_null(v) && !json_is_boolean(v))
			return bad(err, "invalid_type", "stream: expected a "
			    "boolean");
		req->stream = json_is_true(v);
		v = json_object_get(root, "metadata");
		if (v != NULL && !json_is_null(v) && !json_is_object(v))
			return bad(err, "invalid_type", "metadata: expected "
			    "an object");
		if (knobs_from_json(root, &req->knobs, err) != TS_OK)
			return TS_EINVAL;
	}
	if (parse_tools(json_object_get(root, "tools"), req, err) != TS_OK ||
	    parse_tool_choice(json_object_get(root, "tool_choice"), req,
	    err) != TS_OK ||
	    parse_thinking(json_object_get(root, "thinking"), req, err) !=
	    TS_OK)
		return TS_EINVAL;
	for (i = 0; i < n_models; i++)
		if (strcmp(models[i], json_string_value(model)) == 0 &&
		    strlen(models[i]) == json_string_length(model))
			return TS_OK;
	http_error_set(err, 404, "not_found_error", "model_not_found",
	    "model: %.100s", utf8_valid(json_string_value(model),
	    json_string_length(model)) ? json_string_value(model) : "?");
	return TS_EINVAL;
}

enum ts_err
anthropic_parse_request(const char *body, size_t len, int count_only,
    const char *const *models, size_t n_models,
    struct anthropic_request *req, struct http_error *err)
{
	json_error_t jerr;
	json_t *root;
	enum ts_err rc;

	memset(req, 0, sizeof(*req));
	req->count_only = count_only;
	req->temperature = 1.0;
	req->top_p = 1.0;
	knobs_defaults(&req->knobs);
	if (len == 0)
		return bad(err, "empty_body", "the request body is empty: send "
		    "a JSON object");
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &jerr);
	if (root == NULL)
		return bad(err, "invalid_json", "the body is not valid JSON: "
		    "%.120s (line %d, column %d)", jerr.text, jerr.line,
		    jerr.column);
	if (!json_is_object(root))
		rc = bad(err, "invalid_json", "the body must be a JSON object");
	else
		rc = parse_fields(root, count_only, models, n_models, req,
		    err);
	json_decref(root);
	if (rc != TS_OK)
		anthropic_request_free(req);
	return rc;
}

enum ts_err
anthropic_prompt(const struct anthropic_request *req, struct ts_buf *out)
{
	struct chat_msg *msgs = xcalloc(req->n_messages + 1u, sizeof(*msgs));
	size_t n = 0, i, mark = out->len;
	enum ts_err rc = TS_OK;

	if (req->system != NULL) {
		msgs[n].role = CHAT_ROLE_SYSTEM;
		msgs[n].content = req->system;
		msgs[n++].len = req->system_len;
	}
	for (i = 0; i < req->n_messages; i++) {
		msgs[n].role = req->messages[i].tool_result ? CHAT_ROLE_TOOL :
		    req->messages[i].role;
		msgs[n].content = req->messages[i].text;
		msgs[n++].len = req->messages[i].len;
	}
	rc = chat_render_with_tools(req->tools_json, req->tools_json != NULL ?
	    strlen(req->tools_json) : 0, msgs, n, 1, 0, out);
	if (rc != TS_OK)
		out->len = mark;
	free(msgs);
	return rc;
}
