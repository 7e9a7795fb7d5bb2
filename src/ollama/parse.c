/*
 * ollama/parse.c - Ollama's /api/chat and /api/generate requests. See
 * parse.h.
 */
#include "ollama/parse.h"

#include "backend/backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/limits.h"

/* The schema of format "json": Ollama's JSON mode promises a JSON object
 * and nothing more, so the simulated model writes one of this shape. */
static const char format_json_schema[] =
    "{\"type\":\"object\",\"properties\":{\"answer\":{\"type\":\"string\","
    "\"minLength\":1,\"maxLength\":80},\"confidence\":{\"type\":\"number\","
    "\"minimum\":0,\"maximum\":1}},\"required\":[\"answer\","
    "\"confidence\"],\"additionalProperties\":false}";

/* Go's name of a JSON value's type, as encoding/json's errors say it. */
static const char *
go_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER:
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	default: return "null";
	}
}

/* 400 for a field of the wrong type, in the words of Go's encoding/json
 * (Ollama decodes its requests with it): "json: cannot unmarshal number
 * into Go struct field ChatRequest.model of type string". */
static enum ts_err
bad_type(struct http_error *err, enum ollama_kind kind, const char *field,
    const json_t *v, const char *want)
{
	http_error_set(err, 400, "invalid_request_error", "invalid_type",
	    "json: cannot unmarshal %s into Go struct field %s.%s of type %s",
	    go_type(v), kind == OLLAMA_CHAT ? "ChatRequest" :
	    "GenerateRequest", field, want);
	return TS_EINVAL;
}

static enum ts_err
bad(struct http_error *err, const char *msg)
{
	http_error_set(err, 400, "invalid_request_error", "invalid_value",
	    "%s", msg);
	return TS_EINVAL;
}

int
ollama_model_known(const char *name, size_t len, const char *const *names,
    size_t n)
{
	static const char tag[] = ":latest";
	const size_t tl = sizeof(tag) - 1;
	size_t k, nl;

	for (k = 0; k < n; k++) {
		nl = strlen(names[k]);
		if (nl == len && memcmp(names[k], name, len) == 0)
			return 1;
		if (len == nl + tl && memcmp(names[k], name, nl) == 0 &&
		    memcmp(name + nl, tag, tl) == 0)
			return 1;
		if (nl == len + tl && memcmp(names[k], name, len) == 0 &&
		    memcmp(names[k] + len, tag, tl) == 0)
			return 1;
	}
	return 0;
}

void
ollama_model_not_found(struct http_error *err, const char *name, size_t len)
{
	/* quoted as Go's %q would: printable ASCII only here (it is the
	 * client's string); anything else is left out */
	char q[128];
	size_t i, m = 0;

	for (i = 0; i < len && m + 2 < sizeof(q); i++)
		if (name[i] >= 0x20 && name[i] < 0x7f && name[i] != '"' &&
		    name[i] != '\\')
			q[m++] = name[i];
	q[m] = '\0';
	http_error_set(err, 404, "not_found_error", "model_not_found",
	    "model \"%s\" not found, try pulling it first", q);
}

/* A string field: absent or null leaves *p NULL. */
static enum ts_err
get_str(const json_t *root, enum ollama_kind kind, const char *field,
    const char **p, size_t *len, struct http_error *err)
{
	const json_t *v = json_object_get(root, field);

	*p = NULL;
	*len = 0;
	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_string(v))
		return bad_type(err, kind, field, v, "string");
	*p = json_string_value(v);
	*len = json_string_length(v);
	return TS_OK;
}

/* A boolean field: absent or null leaves *b as it is. */
static enum ts_err
get_bool(const json_t *root, enum ollama_kind kind, const char *field,
    int *b, struct http_error *err)
{
	const json_t *v = json_object_get(root, field);

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_boolean(v))
		return bad_type(err, kind, field, v, "bool");
	*b = json_is_true(v);
	return TS_OK;
}

/* keep_alive: a Go duration string ("5m", "1h30m", "-1") or a number of
 * seconds (api.Duration's UnmarshalJSON). Only its type is checked. */
static enum ts_err
check_keep_alive(const json_t *root, enum ollama_kind kind,
    struct http_error *err)
{
	const json_t *v = json_object_get(root, "keep_alive");

	if (v == NULL || json_is_null(v) || json_is_string(v) ||
	    json_is_number(v))
		return TS_OK;
	return bad_type(err, kind, "keep_alive", v, "api.Duration");
}

/* think: a boolean or "high", "medium", "low" (ThinkValue): true is
 * medium, false none (text/think.h). */
static enum ts_err
parse_think(const json_t *root, struct ollama_request *req,
    struct http_error *err)
{
	const json_t *v = json_object_get(root, "think");
	const char *s;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (json_is_boolean(v)) {
		req->think = json_is_true(v);
		req->effort = req->think ? THINK_EFFORT_MEDIUM :
		    THINK_EFFORT_NONE;
		return TS_OK;
	}
	s = json_is_string(v) ? json_string_value(v) : NULL;
	if (s != NULL && (strcmp(s, "high") == 0 || strcmp(s, "medium") == 0 ||
	    strcmp(s, "low") == 0)) {
		req->think = 1;
		(void)think_effort_parse(s, strlen(s), &req->effort);
		return TS_OK;
	}
	return bad(err, "invalid think value: must be a boolean or one of "
	    "\"high\", \"medium\", \"low\"");
}

/* A number option in [lo, hi]: absent or null leaves *d. */
static enum ts_err
opt_num(const json_t *opts, const char *name, double lo, double hi,
    double *d, struct http_error *err)
{
	const json_t *v = json_object_get(opts, name);

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_number(v)) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_type", "option \"%s\" must be of type number",
		    name);
		return TS_EINVAL;
	}
	*d = json_number_value(v);
	if (!(*d >= lo && *d <= hi)) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "option \"%s\" must be from %g to %g",
		    name, lo, hi);
		return TS_EINVAL;
	}
	return TS_OK;
}

/* An integer option: absent or null gives 0 with *has 0. */
static enum ts_err
opt_int(const json_t *opts, const char *name, long long lo, long long hi,
    long long *out, int *has, struct http_error *err)
{
	const json_t *v = json_object_get(opts, name);
	double d;

	*has = 0;
	if (v == NULL || json_is_null(v))
		return TS_OK;
	/* Go's json decodes 3.0 into an int field as an error; so does
	 * tokstream, but for a real without fraction (JavaScript's) */
	d = json_number_value(v);
	if (!json_is_number(v) || (json_is_real(v) && d != floor(d))) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_type", "option \"%s\" must be of type integer",
		    name);
		return TS_EINVAL;
	}
	if (d < (double)lo || d > (double)hi) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "option \"%s\" must be from %lld to %lld",
		    name, lo, hi);
		return TS_EINVAL;
	}
	*out = json_is_integer(v) ? (long long)json_integer_value(v) :
	    (long long)d;
	*has = 1;
	return TS_OK;
}

/* options.stop: an array of strings (or one string, as the CLI sends). */
static enum ts_err
opt_stop(const json_t *opts, struct ollama_request *req,
    struct http_error *err)
{
	const json_t *v = json_object_get(opts, "stop"), *s;
	size_t i, n;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	n = json_is_array(v) ? json_array_size(v) : 1;
	if (!json_is_array(v) && !json_is_string(v)) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_type", "option \"stop\" must be of type array");
		return TS_EINVAL;
	}
	if (n > OLLAMA_MAX_STOP) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "option \"stop\": at most %d strings",
		    OLLAMA_MAX_STOP);
		return TS_EINVAL;
	}
	for (i = 0; i < n; i++) {
		s = json_is_array(v) ? json_array_get(v, i) : v;
		if (!json_is_string(s) || json_string_length(s) == 0 ||
		    json_string_length(s) > STOP_MAX_BYTES) {
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_value", "option \"stop\": each stop "
			    "string is a string of 1 to %d bytes",
			    STOP_MAX_BYTES);
			return TS_EINVAL;
		}
		req->stop[i] = json_string_value(s);
		req->stop_len[i] = json_string_length(s);
	}
	req->n_stop = n;
	return TS_OK;
}

/* The Go type of a known option, as Options.FromMap checks it. */
enum opt_type {
	OPT_INT,        /* int: an integral number */
	OPT_NUM,        /* float32: any number */
	OPT_BOOL,       /* bool, *bool */
	OPT_STRINGS     /* []string (stop; one string too, as the CLI sends) */
};

/* Every option Ollama knows, with its type: api.Options and the
 * api.Runner it embeds (ollama/ollama api/types.go, commit b8761ab0;
 * Options.FromMap answers 400 "option %q must be of type T" for a value
 * of another type, skips a null, and logs and ignores an unknown name).
 * tokstream uses num_predict, temperature, top_p, seed and stop
 * (parse_options); the rest only have their type checked. Stricter than
 * FromMap in one way, as num_predict always was: an integer option with a
 * fraction (1.5) is refused, where Go would truncate it. */
static const struct {
	const char *name;
	enum opt_type type;
} ollama_options[] = {
	/* api.Runner */
	{ "num_ctx", OPT_INT }, { "num_batch", OPT_INT },
	{ "num_gpu", OPT_INT }, { "main_gpu", OPT_INT },
	{ "low_vram", OPT_BOOL }, { "f16_kv", OPT_BOOL },
	{ "logits_all", OPT_BOOL }, { "vocab_only", OPT_BOOL },
	{ "use_mmap", OPT_BOOL }, { "use_mlock", OPT_BOOL },
	{ "num_thread", OPT_INT },
	/* api.Options */
	{ "num_keep", OPT_INT }, { "seed", OPT_INT },
	{ "num_predict", OPT_INT }, { "top_k", OPT_INT },
	{ "top_p", OPT_NUM }, { "min_p", OPT_NUM },
	{ "typical_p", OPT_NUM }, { "repeat_last_n", OPT_INT },
	{ "temperature", OPT_NUM }, { "repeat_penalty", OPT_NUM },
	{ "presence_penalty", OPT_NUM }, { "frequency_penalty", OPT_NUM },
	{ "mirostat", OPT_INT }, { "mirostat_tau", OPT_NUM },
	{ "mirostat_eta", OPT_NUM }, { "penalize_newline", OPT_BOOL },
	{ "stop", OPT_STRINGS },
};

/* The type of every known option in opts (an object): TS_OK, or a 400
 * naming the first of ollama_options[] with a value of another type,
 * in tokstream's words for the types ("number" for Go's float32). */
static enum ts_err
opt_types(const json_t *opts, struct http_error *err)
{
	static const char *const words[] = {
		[OPT_INT] = "integer", [OPT_NUM] = "number",
		[OPT_BOOL] = "boolean", [OPT_STRINGS] = "array",
	};
	const json_t *v;
	size_t i;
	int ok;

	for (i = 0; i < sizeof(ollama_options) / sizeof(ollama_options[0]);
	    i++) {
		v = json_object_get(opts, ollama_options[i].name);
		if (v == NULL || json_is_null(v))
			continue;
		switch (ollama_options[i].type) {
		case OPT_INT:
			ok = json_is_integer(v) || (json_is_real(v) &&
			    json_real_value(v) == floor(json_real_value(v)));
			break;
		case OPT_NUM:
			ok = json_is_number(v);
			break;
		case OPT_BOOL:
			ok = json_is_boolean(v);
			break;
		default:
			ok = json_is_array(v) || json_is_string(v);
			break;
		}
		if (!ok) {
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_type", "option \"%s\" must be of type %s",
			    ollama_options[i].name,
			    words[ollama_options[i].type]);
			return TS_EINVAL;
		}
	}
	return TS_OK;
}

/* options (api.Options; the npm client's Options): every known one's
 * type checked (opt_types), then the ones that change the answer read
 * and range-checked; unknown names are accepted and ignored, as Ollama
 * ignores them. */
static enum ts_err
parse_options(const json_t *root, struct ollama_request *req,
    struct http_error *err)
{
	const json_t *o = json_object_get(root, "options");
	long long v;
	int has;
	double top_k = 0;

	if (o == NULL || json_is_null(o))
		return TS_OK;
	if (!json_is_object(o))
		return bad_type(err, req->kind, "options", o,
		    "map[string]interface {}");
	if (opt_types(o, err) != TS_OK)
		return TS_EINVAL;
	if (opt_int(o, "num_predict", -2, HTTP_MAX_TOKENS_CAP, &v, &has,
	    err) != TS_OK)
		return TS_EINVAL;
	if (has)    /* -1: no limit, -2: fill the context: the cap here */
		req->num_predict = v < 0 ? HTTP_MAX_TOKENS_CAP : (uint32_t)v;
	if (opt_num(o, "temperature", 0, 2, &req->temperature, err) != TS_OK ||
	    opt_num(o, "top_p", 0, 1, &req->top_p, err) != TS_OK ||
	    opt_num(o, "top_k", 0, 1e9, &top_k, err) != TS_OK)
		return TS_EINVAL;
	req->top_k = top_k >= 1.0 && top_k <= 1e6 ? (uint32_t)top_k :
	    top_k > 1e6 ? 1000000u : 0u;
#define GIVEN(k) (json_object_get(o, k) != NULL && \
	    !json_is_null(json_object_get(o, k)))
	req->sampling_given = (GIVEN("temperature") ?
	    ENGINE_GIVEN_TEMPERATURE : 0) |
	    (GIVEN("top_p") ? ENGINE_GIVEN_TOP_P : 0) |
	    (GIVEN("top_k") ? ENGINE_GIVEN_TOP_K : 0);
#undef GIVEN
	if (req->top_p == 0)
		req->top_p = 1e-9;   /* the engine's (0, 1]: the top token */
	if (opt_int(o, "seed", INT64_MIN / 2, INT64_MAX / 2, &v, &has, err) !=
	    TS_OK)
		return TS_EINVAL;
	if (has) {
		req->has_seed = 1;
		req->seed = v;
	}
	return opt_stop(o, req, err);
}

/* format: "json" (or "" for none), or a JSON Schema object, compiled
 * within the request's schema budget. */
static enum ts_err
parse_format(const json_t *root, struct ollama_request *req,
    struct http_error *err)
{
	const json_t *v = json_object_get(root, "format");
	char msg[200];

	if (v == NULL || json_is_null(v) || (json_is_string(v) &&
	    json_string_length(v) == 0))
		return TS_OK;
	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "json") != 0)
			return bad(err, "invalid format: expected \"json\" or "
			    "a valid JSON schema");
		req->format = OLLAMA_FORMAT_JSON;
		req->format_schema = json_loads(format_json_schema, 0, NULL);
	} else if (json_is_object(v)) {
		req->format = OLLAMA_FORMAT_SCHEMA;
		req->format_schema = json_incref((json_t *)v);
	} else {
		return bad(err, "invalid format: expected \"json\" or a valid "
		    "JSON schema");
	}
	if (req->format_schema == NULL ||
	    schema_gen_compile(req->format_schema, &req->schema_steps,
	    &req->format_compiled, msg, sizeof(msg)) != TS_OK) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "invalid format: the schema cannot be "
		    "generated: %s", req->format_schema != NULL ? msg :
		    "out of memory");
		return TS_EINVAL;
	}
	return TS_OK;
}

/* tools: [{type: "function", function: {name, description, parameters}}]
 * (api.Tool); each parameters schema compiled. */
static enum ts_err
parse_tools(const json_t *root, struct ollama_request *req,
    struct http_error *err)
{
	const json_t *v = json_object_get(root, "tools"), *t, *f, *name, *p;
	char msg[200];
	size_t i, n;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_array(v))
		return bad_type(err, req->kind, "tools", v, "api.Tools");
	n = json_array_size(v);
	if (n == 0)
		return TS_OK;
	if (n > OLLAMA_MAX_TOOLS)
		return bad(err, "too many tools (at most 128)");
	req->tools = xcalloc(n, sizeof(*req->tools));
	req->n_tools = n;
	for (i = 0; i < n; i++) {
		t = json_array_get(v, i);
		f = json_is_object(t) ? json_object_get(t, "function") : NULL;
		name = json_is_object(f) ? json_object_get(f, "name") : NULL;
		if (!json_is_string(name) || json_string_length(name) == 0 ||
		    json_string_length(name) > OLLAMA_MAX_TOOL_NAME) {
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_value", "tools[%zu]: a tool is {\"type\":"
			    "\"function\",\"function\":{\"name\",...}} with a "
			    "name of 1 to %d bytes", i, OLLAMA_MAX_TOOL_NAME);
			return TS_EINVAL;
		}
		req->tools[i].name = json_string_value(name);
		req->tools[i].name_len = json_string_length(name);
		p = json_object_get(f, "parameters");
		if (p != NULL && !json_is_null(p) && !json_is_object(p)) {
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_value", "tools[%zu].function.parameters "
			    "is not an object", i);
			return TS_EINVAL;
		}
		req->tools[i].parameters = json_is_object(p) ? p : NULL;
		if (req->tools[i].parameters != NULL &&
		    schema_gen_compile(p, &req->schema_steps,
		    &req->tools[i].compiled, msg, sizeof(msg)) != TS_OK) {
			http_error_set(err, 400, "invalid_request_error",
			    "invalid_value", "tools[%zu].function.parameters: "
			    "%s", i, msg);
			return TS_EINVAL;
		}
	}
	req->tools_json = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (req->tools_json == NULL)
		return bad(err, "the tools cannot be encoded");
	return TS_OK;
}

/* One message's role. */
static enum ts_err
msg_role(const json_t *m, size_t i, enum chat_role *role,
    struct http_error *err)
{
	const json_t *r = json_object_get(m, "role");

	if (!json_is_string(r)) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "messages[%zu]: role is required", i);
		return TS_EINVAL;
	}
	if (strcmp(json_string_value(r), "tool") == 0) {
		*role = CHAT_ROLE_TOOL;
		return TS_OK;
	}
	if (chat_role_parse(json_string_value(r), json_string_length(r),
	    role) != TS_OK) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_value", "messages[%zu]: invalid role: use "
		    "system, user, assistant or tool", i);
		return TS_EINVAL;
	}
	return TS_OK;
}

/*
 * messages (api.Message: role, content, images, tool_calls, tool_name,
 * thinking). An assistant turn's tool_calls go into its content as their
 * compact JSON on a line after the text (the chat template), in
 * req->msg_text; offsets are fixed up once every message is read, since
 * msg_text may move as it grows.
 */
static enum ts_err
parse_messages(const json_t *root, struct ollama_request *req,
    struct http_error *err)
{
	const json_t *v = json_object_get(root, "messages"), *m, *c, *tc;
	size_t i, n, *off;
	enum ts_err rc = TS_OK;

	if (v == NULL || json_is_null(v))
		return TS_OK;
	if (!json_is_array(v))
		return bad_type(err, req->kind, "messages", v,
		    "[]api.Message");
	n = json_array_size(v);
	if (n > OLLAMA_MAX_MESSAGES)
		return bad(err, "too many messages (at most 256)");
	req->msgs = xcalloc(n + 1, sizeof(*req->msgs));
	off = xcalloc(n + 1, sizeof(*off));
	for (i = 0; i < n && rc == TS_OK; i++) {
		m = json_array_get(v, i);
		off[i] = SIZE_MAX;
		if (!json_is_object(m)) {
			rc = bad_type(err, req->kind, "messages", m,
			    "api.Message");
			break;
		}
		rc = msg_role(m, i, &req->msgs[i].role, err);
		if (rc != TS_OK)
			break;
		c = json_object_get(m, "content");
		if (c != NULL && !json_is_null(c) && !json_is_string(c)) {
			rc = bad_type(err, req->kind, "messages.content", c,
			    "string");
			break;
		}
		req->msgs[i].content = json_is_string(c) ?
		    json_string_value(c) : "";
		req->msgs[i].len = json_is_string(c) ?
		    json_string_length(c) : 0;
		tc = json_object_get(m, "tool_calls");
		if (tc != NULL && !json_is_null(tc)) {
			char *calls;

			if (!json_is_array(tc)) {
				rc = bad_type(err, req->kind,
				    "messages.tool_calls", tc,
				    "[]api.ToolCall");
				break;
			}
			calls = json_dumps(tc, JSON_COMPACT |
			    JSON_PRESERVE_ORDER);
			off[i] = req->msg_text.len;
			if (calls == NULL || ts_buf_append(&req->msg_text,
			    req->msgs[i].content, req->msgs[i].len) != TS_OK ||
			    ts_buf_append(&req->msg_text, "\n", 1) != TS_OK ||
			    ts_buf_append(&req->msg_text, calls,
			    strlen(calls)) != TS_OK)
				rc = bad(err, "the messages are too long");
			else
				req->msgs[i].len = req->msg_text.len - off[i];
			free(calls);
		}
	}
	req->n_msgs = i;
	for (i = 0; rc == TS_OK && i < req->n_msgs; i++)
		if (off[i] != SIZE_MAX)
			req->msgs[i].content = req->msg_text.p + off[i];
	free(off);
	if (rc == TS_OK && n > 0)
		req->last_is_tool = req->msgs[n - 1].role == CHAT_ROLE_TOOL;
	return rc;
}

/* Every field but model, in the order Ollama's handlers look at them. */
static enum ts_err
parse_fields(const json_t *root, struct ollama_request *req,
    struct http_error *err)
{
	enum ts_err rc;

	rc = get_bool(root, req->kind, "stream", &req->stream, err);
	if (rc == TS_OK && req->kind == OLLAMA_GENERATE)
		rc = get_str(root, req->kind, "prompt", &req->prompt,
		    &req->prompt_len, err);
	if (rc == TS_OK && req->kind == OLLAMA_GENERATE)
		rc = get_str(root, req->kind, "system", &req->system,
		    &req->system_len, err);
	if (rc == TS_OK && req->kind == OLLAMA_GENERATE)
		rc = get_bool(root, req->kind, "raw", &req->raw, err);
	if (rc == TS_OK && req->kind == OLLAMA_CHAT)
		rc = parse_messages(root, req, err);
	if (rc == TS_OK && req->kind == OLLAMA_CHAT)
		rc = parse_tools(root, req, err);
	if (rc == TS_OK)
		rc = check_keep_alive(root, req->kind, err);
	if (rc == TS_OK)
		rc = parse_think(root, req, err);
	if (rc == TS_OK)
		rc = parse_options(root, req, err);
	if (rc == TS_OK)
		rc = parse_format(root, req, err);
	if (rc == TS_OK)
		rc = knobs_from_json(root, &req->knobs, err);
	return rc;
}

enum ts_err
ollama_parse_request(enum ollama_kind kind, const char *body, size_t len,
    const char *const *names, size_t n, struct ollama_request *req,
    struct http_error *err)
{
	json_error_t je;
	enum ts_err rc;

	memset(req, 0, sizeof(*req));
	req->kind = kind;
	req->stream = 1;
	req->num_predict = OLLAMA_DEFAULT_NUM_PREDICT;
	req->temperature = 0.8;
	req->top_p = 0.9;
	req->schema_steps = SCHEMA_GEN_MAX_STEPS;
	knobs_defaults(&req->knobs);
	ts_buf_init(&req->msg_text, HTTP_MAX_BODY_BYTES * 2u);
	if (len == 0) {
		rc = bad(err, "missing request body");
		goto fail;
	}
	/* a key given twice: the last one holds, as Go's encoding/json
	 * takes it (and jansson without JSON_REJECT_DUPLICATES); \u0000 in
	 * a string is a string's byte, as Go's (and as on /v1) */
	req->root = json_loadb(body, len, JSON_ALLOW_NUL, &je);
	if (req->root == NULL) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_json", "invalid JSON: %s", je.text);
		rc = TS_EINVAL;
		goto fail;
	}
	if (!json_is_object(req->root)) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_type", "json: cannot unmarshal %s into Go value "
		    "of type api.%s", go_type(req->root), kind == OLLAMA_CHAT ?
		    "ChatRequest" : "GenerateRequest");
		rc = TS_EINVAL;
		goto fail;
	}
	rc = get_str(req->root, kind, "model", &req->model, &req->model_len,
	    err);
	if (rc == TS_OK && req->model_len == 0)
		rc = bad(err, "model is required");
	if (rc == TS_OK && !ollama_model_known(req->model, req->model_len,
	    names, n)) {
		ollama_model_not_found(err, req->model, req->model_len);
		rc = TS_EINVAL;
	}
	if (rc == TS_OK)
		rc = parse_fields(req->root, req, err);
	if (rc == TS_OK)
		return TS_OK;
fail:
	ollama_request_free(req);
	return TS_EINVAL;
}

enum ts_err
ollama_prompt(const struct ollama_request *req, struct ts_buf *b)
{
	size_t mark = b->len;
	struct chat_msg m[2];
	size_t k = 0;
	enum ts_err rc = TS_OK;

	if (req->kind == OLLAMA_CHAT) {
		rc = chat_render_with_tools(req->tools_json,
		    req->tools_json != NULL ? strlen(req->tools_json) : 0,
		    req->msgs, req->n_msgs, 1, 0, b);
	} else if (req->raw) {
		rc = ts_buf_append(b, req->prompt != NULL ? req->prompt : "",
		    req->prompt_len);
	} else {
		if (req->system != NULL) {
			m[k].role = CHAT_ROLE_SYSTEM;
			m[k].content = req->system;
			m[k++].len = req->system_len;
		}
		m[k].role = CHAT_ROLE_USER;
		m[k].content = req->prompt;
		m[k++].len = req->prompt_len;
		rc = chat_render_with_tools(NULL, 0, m, k, 1, 0, b);
	}
	if (rc != TS_OK) {
		b->len = mark;
		return rc == TS_EINVAL ? TS_EINVAL : TS_ELIMIT;
	}
	return TS_OK;
}

void
ollama_request_drop_schemas(struct ollama_request *req)
{
	size_t i;

	schema_gen_free(req->format_compiled);
	req->format_compiled = NULL;
	for (i = 0; i < req->n_tools; i++) {
		schema_gen_free(req->tools[i].compiled);
		req->tools[i].compiled = NULL;
	}
}

void
ollama_request_free(struct ollama_request *req)
{
	ollama_request_drop_schemas(req);
	free(req->tools);
	free(req->tools_json);
	free(req->msgs);
	ts_buf_free(&req->msg_text);
	json_decref(req->format_schema);
	json_decref(req->root);
	memset(req, 0, sizeof(*req));
}
