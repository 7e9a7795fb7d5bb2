/*
 * test_ollama.c - Ollama's dialect (src/ollama/: parse.h, encode.h,
 * plan.h), table-driven: the requests /api/chat and /api/generate take
 * (defaults, options, format, tools, the model's name with and without
 * ":latest") and refuse (status and message, in Ollama's words), the
 * prompts they render (proto/chat.h), byte-exact NDJSON objects of a
 * stream, the final object and its metrics, the error body, created_at
 * as Go's RFC3339Nano, and the plans (tool calls, a format's instance).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ollama/encode.h"
#include "ollama/parse.h"
#include "ollama/plan.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MODEL "tokstream-sim"
static const char *const served[] = { MODEL };

#define CHECK(i, cond)                                                    \
	do {                                                              \
		if (!(cond))                                              \
			fail_msg("row %zu: %s", (size_t)(i), #cond);      \
	} while (0)

/* Bodies are written with ' for "; q() makes them JSON. Caller frees. */
static char *
q(const char *s)
{
	char *out = xstrndup(s, strlen(s)), *p;

	for (p = out; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	return out;
}

static enum ts_err
parse(enum ollama_kind kind, const char *body, struct ollama_request *req,
    struct http_error *err)
{
	char *b = q(body);
	enum ts_err rc = ollama_parse_request(kind, b, strlen(b), served,
	    N(served), req, err);

	free(b);
	return rc;
}

static void
test_refused(void **state)
{
	static const struct {
		enum ollama_kind kind;
		const char *body;
		int status;
		const char *msg;      /* a part of the message */
	} rows[] = {
		{ OLLAMA_CHAT, "", 400, "missing request body" },
		{ OLLAMA_CHAT, "{'model':", 400, "invalid JSON" },
		{ OLLAMA_CHAT, "[1]", 400, "cannot unmarshal array into Go value "
		    "of type api.ChatRequest" },
		{ OLLAMA_CHAT, "{}", 400, "model is required" },
		{ OLLAMA_CHAT, "{'model':''}", 400, "model is required" },
		{ OLLAMA_CHAT, "{'model':5}", 400, "cannot unmarshal number "
		    "into Go struct field ChatRequest.model of type string" },
		{ OLLAMA_CHAT, "{'model':'llama3'}", 404,
		    "model \"llama3\" not found, try pulling it first" },
		{ OLLAMA_GENERATE, "{'model':'tokstream-sim:7b'}", 404,
		    "model \"tokstream-sim:7b\" not found" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','messages':{}}", 400,
		    "ChatRequest.messages" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','messages':[{}]}", 400,
		    "messages[0]: role is required" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','messages':"
		    "[{'role':'bot'}]}", 400, "invalid role" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','messages':"
		    "[{'role':'user','content':[1]}]}", 400,
		    "messages.content of type string" },
		{ OLLAMA_GENERATE, "{'model':'tokstream-sim','prompt':1}", 400,
		    "GenerateRequest.prompt" },
		{ OLLAMA_GENERATE, "{'model':'tokstream-sim','stream':'no'}",
		    400, "GenerateRequest.stream of type bool" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':[]}", 400,
		    "ChatRequest.options" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'temperature':'x'}}", 400, "\"temperature\" must be of "
		    "type number" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'temperature':3}}", 400, "\"temperature\" must be from" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'num_predict':9000}}", 400, "\"num_predict\" must be" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'num_predict':-3}}", 400, "\"num_predict\" must be" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'seed':1.5}}", 400, "\"seed\" must be of type integer" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'stop':['a','b','c','d','e']}}", 400, "at most 4" },
		/* every option Ollama knows has its Go type checked
		 * (api/types.go Options, Runner), not only those used */
		{ OLLAMA_GENERATE, "{'model':'tokstream-sim','options':"
		    "{'num_ctx':'big','num_predict':1}}", 400,
		    "option \"num_ctx\" must be of type integer" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'repeat_penalty':'x'}}", 400,
		    "option \"repeat_penalty\" must be of type number" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'mirostat':'x'}}", 400,
		    "option \"mirostat\" must be of type integer" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'num_gpu':true}}", 400,
		    "option \"num_gpu\" must be of type integer" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'num_keep':1.5}}", 400,
		    "option \"num_keep\" must be of type integer" },
		{ OLLAMA_GENERATE, "{'model':'tokstream-sim','options':"
		    "{'use_mmap':'yes'}}", 400,
		    "option \"use_mmap\" must be of type boolean" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'penalize_newline':0}}", 400,
		    "option \"penalize_newline\" must be of type boolean" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'mirostat_tau':[5]}}", 400,
		    "option \"mirostat_tau\" must be of type number" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'top_k':2.5}}", 400,
		    "option \"top_k\" must be of type integer" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'stop':5}}", 400,
		    "option \"stop\" must be of type array" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','options':"
		    "{'stop':['']}}", 400, "each stop string" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','format':'xml'}", 400,
		    "invalid format" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','format':3}", 400,
		    "invalid format" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','format':"
		    "{'type':'string','pattern':'x'}}", 400, "pattern" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','tools':{}}", 400,
		    "ChatRequest.tools" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','tools':[{'type':"
		    "'function','function':{}}]}", 400, "tools[0]" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','tools':[{'type':"
		    "'function','function':{'name':'f','parameters':1}}]}",
		    400, "parameters is not an object" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','keep_alive':[]}", 400,
		    "keep_alive" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','think':'max'}", 400,
		    "invalid think value" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','tpot_ms':-1}", 400,
		    "tpot_ms" },
	};
	struct ollama_request req;
	struct http_error err;
	size_t i;

	(void)state;
	for (i = 0; i < N(rows); i++) {
		CHECK(i, parse(rows[i].kind, rows[i].body, &req, &err) ==
		    TS_EINVAL);
		if (err.status != rows[i].status ||
		    strstr(err.message, rows[i].msg) == NULL)
			fail_msg("row %zu: %d %s", i, err.status, err.message);
		/* refused requests own nothing */
		CHECK(i, req.root == NULL && req.msgs == NULL);
	}
}

static void
test_defaults_and_options(void **state)
{
	struct ollama_request req;
	struct http_error err;

	(void)state;
	assert_int_equal(parse(OLLAMA_CHAT, "{'model':'tokstream-sim:latest',"
	    "'messages':[{'role':'user','content':'hi'}]}", &req, &err),
	    TS_OK);
	assert_int_equal(req.stream, 1);
	assert_int_equal(req.num_predict, OLLAMA_DEFAULT_NUM_PREDICT);
	assert_true(req.temperature == 0.8 && req.top_p == 0.9);
	assert_int_equal(req.has_seed, 0);
	assert_int_equal(req.format, OLLAMA_FORMAT_TEXT);
	assert_int_equal(req.n_msgs, 1);
	assert_int_equal(req.knobs.tpot_ms, -1);
	assert_memory_equal(req.model, "tokstream-sim:latest", 20);
	ollama_request_free(&req);

	assert_int_equal(parse(OLLAMA_GENERATE, "{'model':'tokstream-sim',"
	    "'prompt':'p','stream':false,'keep_alive':'5m','think':'low',"
	    "'images':[],'options':{'num_predict':-1,'temperature':0,"
	    "'top_p':0.5,'top_k':20,'seed':42,'stop':'\\n','num_ctx':4096,"
	    "'mirostat':1},'tpot_ms':5}", &req, &err), TS_OK);
	assert_int_equal(req.stream, 0);
	assert_int_equal(req.num_predict, 8192);
	assert_true(req.temperature == 0 && req.top_p == 0.5);
	assert_true(req.has_seed && req.seed == 42);
	assert_int_equal(req.n_stop, 1);
	assert_memory_equal(req.stop[0], "\n", 1);
	assert_int_equal(req.think, 1);
	assert_int_equal(req.knobs.tpot_ms, 5);
	ollama_request_free(&req);

	/* every known option of the right type (null too, which Go's
	 * FromMap skips), an integral real for an int, and names Ollama
	 * does not know (any type) are accepted */
	assert_int_equal(parse(OLLAMA_CHAT, "{'model':'tokstream-sim',"
	    "'options':{'num_ctx':4096,'num_batch':512,'num_gpu':-1,"
	    "'main_gpu':0,'low_vram':false,'f16_kv':true,'logits_all':false,"
	    "'vocab_only':false,'use_mmap':true,'use_mlock':false,"
	    "'num_thread':8,'num_keep':4.0,'seed':-1,'num_predict':3,"
	    "'top_k':40,'top_p':0.9,'min_p':0,'typical_p':1,"
	    "'repeat_last_n':64,'temperature':0.8,'repeat_penalty':1.1,"
	    "'presence_penalty':0,'frequency_penalty':0,'mirostat':0,"
	    "'mirostat_tau':5,'mirostat_eta':0.1,'penalize_newline':true,"
	    "'stop':['x'],'numa':'yes','tfs_z':'x','no_such':[1]}}", &req,
	    &err), TS_OK);
	assert_int_equal(req.num_predict, 3);
	ollama_request_free(&req);
	assert_int_equal(parse(OLLAMA_CHAT, "{'model':'tokstream-sim',"
	    "'options':{'num_ctx':null,'use_mmap':null,'repeat_penalty':null}}",
	    &req, &err), TS_OK);
	ollama_request_free(&req);

	/* a key twice: the last holds, as in Go */
	assert_int_equal(parse(OLLAMA_GENERATE, "{'model':'llama3','prompt':"
	    "'p','model':'tokstream-sim'}", &req, &err), TS_OK);
	assert_memory_equal(req.model, MODEL, strlen(MODEL));
	ollama_request_free(&req);

	/* a served name with a tag of its own answers to it only */
	assert_true(ollama_model_known("a:7b", 4, (const char *[]){ "a:7b" },
	    1));
	assert_false(ollama_model_known("a", 1, (const char *[]){ "a:7b" },
	    1));
	assert_true(ollama_model_known("a", 1, (const char *[]){
	    "a:latest" }, 1));
	assert_false(ollama_model_known("a:latestx", 9, (const char *[]){
	    "a" }, 1));
}

/* The prompts rendered with proto/chat.h's template. */
static void
test_prompts(void **state)
{
	static const struct {
		enum ollama_kind kind;
		const char *body;
		const char *prompt;
	} rows[] = {
		{ OLLAMA_GENERATE, "{'model':'tokstream-sim','prompt':'hi'}",
		    "<|user|>\nhi\n<|assistant|>\n" },
		{ OLLAMA_GENERATE, "{'model':'tokstream-sim','prompt':'hi',"
		    "'system':'be brief'}",
		    "<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n" },
		{ OLLAMA_GENERATE, "{'model':'tokstream-sim','prompt':'[x]',"
		    "'raw':true}", "[x]" },
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','messages':[{'role':"
		    "'system','content':'s'},{'role':'user','content':'u'},"
		    "{'role':'assistant','content':'a'}]}",
		    "<|system|>\ns\n<|user|>\nu\n<|assistant|>\na\n"
		    "<|assistant|>\n" },
		/* tools first; an assistant's calls after its content; a
		 * tool's result */
		{ OLLAMA_CHAT, "{'model':'tokstream-sim','tools':[{'type':"
		    "'function','function':{'name':'f'}}],'messages':[{'role':"
		    "'user','content':'u'},{'role':'assistant','content':'',"
		    "'tool_calls':[{'function':{'name':'f','arguments':"
		    "{'x':1}}}]},{'role':'tool','content':'42'}]}",
		    "<|tools|>\n[{\"type\":\"function\",\"function\":{\"name\":"
		    "\"f\"}}]\n<|user|>\nu\n<|assistant|>\n\n[{\"function\":"
		    "{\"name\":\"f\",\"arguments\":{\"x\":1}}}]\n<|tool|>\n42\n"
		    "<|assistant|>\n" },
	};
	struct ollama_request req;
	struct http_error err;
	struct ts_buf b;
	size_t i;

	(void)state;
	for (i = 0; i < N(rows); i++) {
		CHECK(i, parse(rows[i].kind, rows[i].body, &req, &err) ==
		    TS_OK);
		ts_buf_init(&b, 4096);
		CHECK(i, ollama_prompt(&req, &b) == TS_OK);
		if (b.len != strlen(rows[i].prompt) ||
		    memcmp(b.p, rows[i].prompt, b.len) != 0)
			fail_msg("row %zu: %.*s", i, (int)b.len, b.p);
		if (rows[i].kind == OLLAMA_CHAT && i == N(rows) - 1)
			CHECK(i, req.last_is_tool);
		ts_buf_free(&b);
		ollama_request_free(&req);
	}
	/* a prompt over the buffer's limit: nothing appended */
	assert_int_equal(parse(OLLAMA_GENERATE, "{'model':'tokstream-sim',"
	    "'prompt':'hello there'}", &req, &err), TS_OK);
	ts_buf_init(&b, 8);
	assert_int_equal(ollama_prompt(&req, &b), TS_ELIMIT);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
	ollama_request_free(&req);
}

static void
test_time(void **state)
{
	static const struct {
		int64_t ns;
		const char *s;
	} rows[] = {
		{ 0, "1970-01-01T00:00:00Z" },
		{ INT64_C(1691177565499127000), "2023-08-04T19:32:45.499127Z" },
		{ INT64_C(1691177565000000001),
		    "2023-08-04T19:32:45.000000001Z" },
		{ INT64_C(1691177565100000000), "2023-08-04T19:32:45.1Z" },
		{ INT64_C(1691177565385406455),
		    "2023-08-04T19:32:45.385406455Z" },
	};
	char buf[48];
	size_t i, n;

	(void)state;
	for (i = 0; i < N(rows); i++) {
		n = ollama_time(rows[i].ns, buf, sizeof(buf));
		CHECK(i, n == strlen(rows[i].s) && strcmp(buf, rows[i].s) ==
		    0);
	}
}

static void
test_encode(void **state)
{
	struct ollama_meta chat = { OLLAMA_CHAT, MODEL, strlen(MODEL) };
	struct ollama_meta gen = { OLLAMA_GENERATE, "m:latest", 8 };
	struct ollama_stats st = { OLLAMA_DONE_LENGTH, 1000, 10, 21, 200, 5,
	    700 };
	struct ollama_call call = { "get_weather", 11, "{\"city\":\"x\"}",
	    12 };
	const int64_t t = INT64_C(1691177565499127000);
	struct http_error err;
	struct ts_buf b;

	(void)state;
	ts_buf_init(&b, 4096);
	assert_int_equal(ollama_encode_chunk(&b, &chat, t, "a\"\n\x01", 4),
	    TS_OK);
	assert_string_equal(b.p, "{\"model\":\"tokstream-sim\",\"created_at\":"
	    "\"2023-08-04T19:32:45.499127Z\",\"message\":{\"role\":"
	    "\"assistant\",\"content\":\"a\\\"\\n\\u0001\"},\"done\":false}\n");
	b.len = 0;
	assert_int_equal(ollama_encode_chunk(&b, &gen, t, "hi", 2), TS_OK);
	assert_string_equal(b.p, "{\"model\":\"m:latest\",\"created_at\":"
	    "\"2023-08-04T19:32:45.499127Z\",\"response\":\"hi\","
	    "\"done\":false}\n");
	b.len = 0;
	assert_int_equal(ollama_encode_final(&b, &chat, t, "", 0, NULL, 0,
	    &st), TS_OK);
	assert_string_equal(b.p, "{\"model\":\"tokstream-sim\",\"created_at\":"
	    "\"2023-08-04T19:32:45.499127Z\",\"message\":{\"role\":"
	    "\"assistant\",\"content\":\"\"},\"done_reason\":\"length\","
	    "\"done\":true,\"total_duration\":1000,\"load_duration\":10,"
	    "\"prompt_eval_count\":21,\"prompt_eval_duration\":200,"
	    "\"eval_count\":5,\"eval_duration\":700}\n");
	b.len = 0;
	st.done = OLLAMA_DONE_STOP;
	assert_int_equal(ollama_encode_final(&b, &gen, t, "all", 3, NULL, 0,
	    &st), TS_OK);
	assert_string_equal(b.p, "{\"model\":\"m:latest\",\"created_at\":"
	    "\"2023-08-04T19:32:45.499127Z\",\"response\":\"all\","
	    "\"done\":true,\"done_reason\":\"stop\",\"total_duration\":1000,"
	    "\"load_duration\":10,\"prompt_eval_count\":21,"
	    "\"prompt_eval_duration\":200,\"eval_count\":5,"
	    "\"eval_duration\":700}\n");
	b.len = 0;
	assert_int_equal(ollama_encode_final(&b, &chat, t, "", 0, &call, 1,
	    &st), TS_OK);
	assert_non_null(strstr(b.p, "\"message\":{\"role\":\"assistant\","
	    "\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":"
	    "\"get_weather\",\"arguments\":{\"city\":\"x\"}}}]},"
	    "\"done_reason\":\"stop\",\"done\":true,"));
	b.len = 0;
	assert_int_equal(ollama_encode_calls_chunk(&b, &chat, t, &call, 1),
	    TS_OK);
	assert_non_null(strstr(b.p, "\"tool_calls\":[{\"function\":"));
	assert_non_null(strstr(b.p, "},\"done\":false}\n"));
	/* a load: no metrics */
	b.len = 0;
	st.done = OLLAMA_DONE_LOAD;
	assert_int_equal(ollama_encode_final(&b, &chat, t, "", 0, NULL, 0,
	    &st), TS_OK);
	assert_null(strstr(b.p, "duration"));
	assert_non_null(strstr(b.p, "\"done_reason\":\"load\",\"done\":true}"));
	/* the error body */
	b.len = 0;
	http_error_set(&err, 404, "x", "y", "model \"%s\" not found", "q");
	assert_int_equal(ollama_error_json(&err, &b), TS_OK);
	assert_string_equal(b.p, "{\"error\":\"model \\\"q\\\" not found\"}");
	b.len = 0;
	http_error_set(&err, 400, "x", "y", "bad \xff");
	assert_int_equal(ollama_error_json(&err, &b), TS_OK);
	assert_string_equal(b.p, "{\"error\":\"invalid request\"}");
	ts_buf_free(&b);
	/* a full buffer: TS_ELIMIT and nothing appended */
	ts_buf_init(&b, 40);
	assert_int_equal(ts_buf_append(&b, "abc", 3), TS_OK);
	assert_int_equal(ollama_encode_chunk(&b, &chat, t, "hi", 2),
	    TS_ELIMIT);
	assert_int_equal(b.len, 3);
	ts_buf_free(&b);
}

/* Every object the encoders write parses back with jansson to the
 * values given. */
static void
test_encode_parses(void **state)
{
	struct ollama_meta chat = { OLLAMA_CHAT, MODEL, strlen(MODEL) };
	struct ollama_stats st = { OLLAMA_DONE_STOP, 5, 1, 2, 3, 4, 1 };
	static const char text[] = "tab\there \"q\" \\ \xc3\xa9 \xf0\x9f\x98\x80";
	struct ollama_model_info mi = { "sim", "tokstream", "", "", 0, 0,
	    8192, "T" };
	const char *names[] = { "a", "b:7b" };
	struct ts_buf b;
	json_error_t je;
	json_t *j;

	(void)state;
	ts_buf_init(&b, 1 << 16);
	assert_int_equal(ollama_encode_final(&b, &chat, 1, text,
	    sizeof(text) - 1, NULL, 0, &st), TS_OK);
	j = json_loadb(b.p, b.len, 0, &je);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(
	    json_object_get(j, "message"), "content")), text);
	assert_string_equal(json_string_value(json_object_get(j,
	    "created_at")), "1970-01-01T00:00:00.000000001Z");
	json_decref(j);
	b.len = 0;
	assert_int_equal(ollama_encode_models(&b, names, 2, &mi, 0, 0), TS_OK);
	j = json_loadb(b.p, b.len, 0, &je);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(j, "models"), 0), "name")), "a:latest");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(j, "models"), 1), "name")), "b:7b");
	assert_int_equal(strlen(json_string_value(json_object_get(
	    json_array_get(json_object_get(j, "models"), 0), "digest"))), 64);
	json_decref(j);
	b.len = 0;
	assert_int_equal(ollama_encode_models(&b, names, 1, &mi, 1,
	    INT64_C(1000000000)), TS_OK);
	assert_non_null(strstr(b.p, "\"expires_at\":\"1970-01-01T00:00:01Z\""));
	assert_non_null(strstr(b.p, "\"context_length\":8192"));
	b.len = 0;
	assert_int_equal(ollama_encode_show(&b, "a", &mi), TS_OK);
	j = json_loadb(b.p, b.len, 0, &je);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j,
	    "model_info"), "sim.context_length")), 8192);
	assert_string_equal(json_string_value(json_object_get(j, "template")),
	    "T");
	json_decref(j);
	b.len = 0;
	assert_int_equal(ollama_encode_version(&b, "1.2.3"), TS_OK);
	assert_string_equal(b.p, "{\"version\":\"1.2.3\"}");
	ts_buf_free(&b);
}

/* Plans: tools are called unless the last message is a tool's result;
 * each call's arguments are an object valid for its schema; a format's
 * instance; the same seed, the same plan. */
static void
test_plan(void **state)
{
	struct ollama_request req;
	struct ollama_plan p, p2;
	struct http_error err;
	json_t *j;

	(void)state;
	assert_int_equal(parse(OLLAMA_CHAT, "{'model':'tokstream-sim',"
	    "'messages':[{'role':'user','content':'u'}],'tools':[{'type':"
	    "'function','function':{'name':'f','parameters':{'type':'object',"
	    "'properties':{'n':{'type':'integer','minimum':3,'maximum':3}},"
	    "'required':['n']}}}]}", &req, &err), TS_OK);
	assert_int_equal(ollama_plan_make(&req, 1, 0, 1 << 20, &p, &err),
	    TS_OK);
	assert_true(p.guided);
	assert_int_equal(p.ncalls, 1);
	assert_int_equal(p.calls[0].tool, 0);
	assert_int_equal(p.calls[0].len, p.guide.len);
	assert_string_equal(p.guide.p, "{\"n\":3}");
	assert_int_equal(ollama_plan_make(&req, 1, 0, 1 << 20, &p2, &err),
	    TS_OK);
	assert_string_equal(p2.guide.p, p.guide.p);
	ollama_plan_free(&p2);
	ollama_plan_free(&p);
	ollama_request_free(&req);

	/* the tool's result is in: text */
	assert_int_equal(parse(OLLAMA_CHAT, "{'model':'tokstream-sim',"
	    "'messages':[{'role':'tool','content':'4'}],'tools':[{'type':"
	    "'function','function':{'name':'f'}}]}", &req, &err), TS_OK);
	assert_int_equal(ollama_plan_make(&req, 1, 0, 1 << 20, &p, &err),
	    TS_OK);
	assert_false(p.guided);
	assert_int_equal(p.ncalls, 0);
	ollama_plan_free(&p);
	ollama_request_free(&req);

	/* format "json": an object; format a schema: its instance */
	assert_int_equal(parse(OLLAMA_GENERATE, "{'model':'tokstream-sim',"
	    "'prompt':'x','format':'json'}", &req, &err), TS_OK);
	assert_int_equal(ollama_plan_make(&req, 5, 0, 1 << 20, &p, &err),
	    TS_OK);
	j = json_loadb(p.guide.p, p.guide.len, 0, NULL);
	assert_true(json_is_object(j));
	json_decref(j);
	ollama_plan_free(&p);
	ollama_request_free(&req);
	assert_int_equal(parse(OLLAMA_GENERATE, "{'model':'tokstream-sim',"
	    "'prompt':'x','format':{'enum':['only']}}", &req, &err), TS_OK);
	assert_int_equal(ollama_plan_make(&req, 5, 0, 1 << 20, &p, &err),
	    TS_OK);
	assert_string_equal(p.guide.p, "\"only\"");
	ollama_plan_free(&p);
	/* echo mode repeats the prompt (as far as the cap) */
	ollama_request_free(&req);
	assert_int_equal(parse(OLLAMA_GENERATE, "{'model':'tokstream-sim',"
	    "'prompt':'say this'}", &req, &err), TS_OK);
	assert_int_equal(ollama_plan_make(&req, 5, 1, 3, &p, &err), TS_OK);
	assert_true(p.guided);
	assert_string_equal(p.guide.p, "say");
	ollama_plan_free(&p);
	ollama_request_free(&req);
}

/* think (text/think.h): the thinking objects of a stream, before the
 * content, and the whole answer's thinking; parse's efforts. */
static void
test_encode_thinking(void **state)
{
	struct ollama_meta chat = { OLLAMA_CHAT, MODEL, strlen(MODEL) };
	struct ollama_meta gen = { OLLAMA_GENERATE, "m:latest", 8 };
	struct ollama_stats st = { OLLAMA_DONE_STOP, 1000, 10, 21, 200, 5,
	    700 };
	const int64_t t = INT64_C(1691177565499127000);
	struct ollama_request req;
	struct http_error err;
	struct ts_buf b;

	(void)state;
	ts_buf_init(&b, 4096);
	assert_int_equal(ollama_encode_thinking_chunk(&b, &chat, t, "hm\n",
	    3), TS_OK);
	assert_string_equal(b.p, "{\"model\":\"tokstream-sim\",\"created_at\":"
	    "\"2023-08-04T19:32:45.499127Z\",\"message\":{\"role\":"
	    "\"assistant\",\"content\":\"\",\"thinking\":\"hm\\n\"},"
	    "\"done\":false}\n");
	b.len = 0;
	assert_int_equal(ollama_encode_thinking_chunk(&b, &gen, t, "hm", 2),
	    TS_OK);
	assert_string_equal(b.p, "{\"model\":\"m:latest\",\"created_at\":"
	    "\"2023-08-04T19:32:45.499127Z\",\"response\":\"\",\"thinking\":"
	    "\"hm\",\"done\":false}\n");
	b.len = 0;
	assert_int_equal(ollama_encode_final_think(&b, &chat, t, "ok", 2,
	    "so", 2, NULL, 0, &st), TS_OK);
	assert_string_equal(b.p, "{\"model\":\"tokstream-sim\",\"created_at\":"
	    "\"2023-08-04T19:32:45.499127Z\",\"message\":{\"role\":"
	    "\"assistant\",\"content\":\"ok\",\"thinking\":\"so\"},"
	    "\"done_reason\":\"stop\",\"done\":true,\"total_duration\":1000,"
	    "\"load_duration\":10,\"prompt_eval_count\":21,"
	    "\"prompt_eval_duration\":200,\"eval_count\":5,"
	    "\"eval_duration\":700}\n");
	b.len = 0;
	assert_int_equal(ollama_encode_final_think(&b, &gen, t, "ok", 2,
	    "so", 2, NULL, 0, &st), TS_OK);
	assert_non_null(strstr(b.p, "\"response\":\"ok\",\"thinking\":\"so\","
	    "\"done\":true"));
	/* full: nothing appended */
	ts_buf_free(&b);
	ts_buf_init(&b, 16);
	assert_int_equal(ollama_encode_thinking_chunk(&b, &chat, t, "hm", 2),
	    TS_ELIMIT);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);

	/* think's efforts */
	assert_int_equal(parse(OLLAMA_CHAT, "{'model':'tokstream-sim',"
	    "'messages':[],'think':true}", &req, &err), TS_OK);
	assert_int_equal(req.effort, THINK_EFFORT_MEDIUM);
	ollama_request_free(&req);
	assert_int_equal(parse(OLLAMA_CHAT, "{'model':'tokstream-sim',"
	    "'messages':[],'think':false}", &req, &err), TS_OK);
	assert_int_equal(req.effort, THINK_EFFORT_NONE);
	ollama_request_free(&req);
	assert_int_equal(parse(OLLAMA_CHAT, "{'model':'tokstream-sim',"
	    "'messages':[],'think':'high'}", &req, &err), TS_OK);
	assert_int_equal(req.effort, THINK_EFFORT_HIGH);
	ollama_request_free(&req);
	assert_int_equal(parse(OLLAMA_CHAT, "{'model':'tokstream-sim',"
	    "'messages':[]}", &req, &err), TS_OK);
	assert_int_equal(req.effort, THINK_EFFORT_UNSET);
	ollama_request_free(&req);
	assert_int_equal(think_effort_budget(THINK_EFFORT_LOW, 0), 64);
	assert_int_equal(think_effort_budget(THINK_EFFORT_UNSET, 0), 0);
	assert_int_equal(think_effort_budget(THINK_EFFORT_UNSET, 1), 256);
	assert_int_equal(think_effort_budget(THINK_EFFORT_NONE, 1), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_defaults_and_options),
		cmocka_unit_test(test_prompts),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_encode_thinking),
		cmocka_unit_test(test_encode_parses),
		cmocka_unit_test(test_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
