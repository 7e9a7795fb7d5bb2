/*
 * test_openai.c - the OpenAI-compatible API module (src/openai/: openai.h,
 * parse.h, encode.h),
 * table-driven: every validation rule of POST /v1/completions and
 * POST /v1/chat/completions bodies (status, code and param), the
 * defaults, the limits, and byte-exact encodings of responses, stream
 * chunks (role only in the first chunk, usage chunk, errors after the
 * start), the OpenAI error shape and GET /v1/models.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openai/chat.h"
#include "openai/encode.h"
#include "openai/parse.h"
#include "openai/responses.h"
#include "openai/tokenize.h"

#include "openai_fixtures.h"

/* ---- rejected bodies ---------------------------------------------------- */

struct bad_case {
	enum openai_kind kind;
	const char *body;        /* ' for " */
	int status;
	const char *code;
	const char *param;       /* NULL: the error has no param */
};


static const struct bad_case bad_cases[] = {
	/* the body */
	{ CMPL, "", 400, "empty_body", NULL },
	{ CHAT, "", 400, "empty_body", NULL },
	{ CMPL, "nope", 400, "invalid_json", NULL },
	{ CMPL, "{" M "," P "} x", 400, "invalid_json", NULL },
	{ CMPL, "[1]", 400, "invalid_json", NULL },
	{ CMPL, "'hi'", 400, "invalid_json", NULL },
	{ CMPL, "{" M "," P ",'prompt':'b'}", 400, "invalid_json", NULL },
	{ CMPL, "{" M ",'prompt':'\xff'}", 400, "invalid_json", NULL },
	{ CMPL, "{" M "," P ",'seed':9223372036854775808}", 400,
	  "invalid_json", NULL },
	/* model: required string, then (last) the served one */
	{ CMPL, "{" P "}", 400, "missing_required_parameter", "model" },
	{ CMPL, "{'model':null," P "}", 400, "missing_required_parameter",
	  "model" },
	{ CMPL, "{'model':7," P "}", 400, "invalid_type", "model" },
	{ CMPL, "{'model':['tokstream-sim']," P "}", 400, "invalid_type",
	  "model" },
	{ CMPL, "{'model':'gpt-4'," P "}", 404, "model_not_found", NULL },
	{ CMPL, "{'model':'TOKSTREAM-SIM'," P "}", 404, "model_not_found",
	  NULL },
	{ CMPL, "{'model':'tokstream-sim\\u0000'," P "}", 404,
	  "model_not_found", NULL },
	{ CMPL, "{'model':''," P "}", 404, "model_not_found", NULL },
	{ CHAT, "{'model':'gpt-4'," U "}", 404, "model_not_found", NULL },
	/* a malformed request is a 400 before its model is a 404 */
	{ CMPL, "{'model':'gpt-4'," P ",'temperature':3}", 400,
	  "decimal_above_max_value", "temperature" },
	{ CHAT, "{'model':'gpt-4'}", 400, "missing_required_parameter",
	  "messages" },
	/* prompt: a string or an array of one string */
	{ CMPL, "{" M "}", 400, "missing_required_parameter", "prompt" },
	{ CMPL, "{" M ",'prompt':null}", 400, "missing_required_parameter",
	  "prompt" },
	{ CMPL, "{" M ",'prompt':5}", 400, "invalid_type", "prompt" },
	{ CMPL, "{" M ",'prompt':{}}", 400, "invalid_type", "prompt" },
	{ CMPL, "{" M ",'prompt':true}", 400, "invalid_type", "prompt" },
	{ CMPL, "{" M ",'prompt':[]}", 400, "empty_array", "prompt" },
	{ CMPL, "{" M ",'prompt':['a','b']}", 400, "unsupported_value",
	  "prompt" },
	{ CMPL, "{" M ",'prompt':[1,2]}", 400, "unsupported_value",
	  "prompt" },
	{ CMPL, "{" M ",'prompt':[[1,2]]}", 400, "unsupported_value",
	  "prompt" },
	{ CMPL, "{" M ",'prompt':[null]}", 400, "invalid_type",
	  "prompt[0]" },
	{ CMPL, "{" M ",'prompt':[{}]}", 400, "invalid_type", "prompt[0]" },
	/* chat bodies are not completions bodies, and the reverse */
	{ CMPL, "{" M "," U "}", 400, "missing_required_parameter",
	  "prompt" },
	{ CHAT, "{" M "," P "}", 400, "missing_required_parameter",
	  "messages" },
	/* messages */
	{ CHAT, "{" M ",'messages':null}", 400,
	  "missing_required_parameter", "messages" },
	{ CHAT, "{" M ",'messages':'hi'}", 400, "invalid_type",
	  "messages" },
	{ CHAT, "{" M ",'messages':{}}", 400, "invalid_type", "messages" },
	{ CHAT, "{" M ",'messages':[]}", 400, "empty_array", "messages" },
	{ CHAT, "{" M ",'messages':['hi']}", 400, "invalid_type",
	  "messages[0]" },
	{ CHAT, "{" M ",'messages':[null]}", 400, "invalid_type",
	  "messages[0]" },
	{ CHAT, "{" M ",'messages':[{'content':'hi'}]}", 400,
	  "missing_required_parameter", "messages[0].role" },
	{ CHAT, "{" M ",'messages':[{'role':null,'content':'hi'}]}", 400,
	  "missing_required_parameter", "messages[0].role" },
	{ CHAT, "{" M ",'messages':[{'role':1,'content':'hi'}]}", 400,
	  "invalid_type", "messages[0].role" },
	{ CHAT, "{" M ",'messages':[{'role':'tool','content':'hi'}]}", 400,
	  "missing_required_parameter", "messages[0].tool_call_id" },
	{ CHAT, "{" M ",'messages':[{'role':'function','content':'hi'}]}",
	  400, "invalid_value", "messages[0].role" },
	{ CHAT, "{" M ",'messages':[{'role':'User','content':'hi'}]}", 400,
	  "invalid_value", "messages[0].role" },
	{ CHAT, "{" M ",'messages':[{'role':'user\\u0000','content':'hi'}]}",
	  400, "invalid_value", "messages[0].role" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':'a'},"
	  "{'role':'robot','content':'b'}]}", 400, "invalid_value",
	  "messages[1].role" },
	{ CHAT, "{" M ",'messages':[{'role':'user'}]}", 400,
	  "missing_required_parameter", "messages[0].content" },
	{ CHAT, "{" M ",'messages':[{'role':'assistant','content':null}]}",
	  400, "missing_required_parameter", "messages[0].content" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':5}]}", 400,
	  "invalid_type", "messages[0].content" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':{}}]}", 400,
	  "invalid_type", "messages[0].content" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':[]}]}", 400,
	  "empty_array", "messages[0].content" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':['x']}]}", 400,
	  "invalid_type", "messages[0].content[0]" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':"
	  "[{'text':'x'}]}]}", 400, "missing_required_parameter",
	  "messages[0].content[0].type" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':"
	  "[{'type':5,'text':'x'}]}]}", 400, "invalid_type",
	  "messages[0].content[0].type" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':[{'type':"
	  "'text','text':'a'},{'type':'image_url','image_url':{}}]}]}", 400,
	  "invalid_value", "messages[0].content[1].type" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':"
	  "[{'type':'text'}]}]}", 400, "missing_required_parameter",
	  "messages[0].content[0].text" },
	{ CHAT, "{" M ",'messages':[{'role':'user','content':"
	  "[{'type':'text','text':1}]}]}", 400, "invalid_type",
	  "messages[0].content[0].text" },
	/* max_tokens and max_completion_tokens */
	{ CMPL, "{" M "," P ",'max_tokens':-1}", 400,
	  "integer_below_min_value", "max_tokens" },
	{ CMPL, "{" M "," P ",'max_tokens':8193}", 400,
	  "integer_above_max_value", "max_tokens" },
	{ CMPL, "{" M "," P ",'max_tokens':1.5}", 400, "invalid_type",
	  "max_tokens" },
	{ CMPL, "{" M "," P ",'max_tokens':16.0}", 400, "invalid_type",
	  "max_tokens" },
	{ CMPL, "{" M "," P ",'max_tokens':'5'}", 400, "invalid_type",
	  "max_tokens" },
	{ CHAT, "{" M "," U ",'max_tokens':0}", 400,
	  "integer_below_min_value", "max_tokens" },
	{ CHAT, "{" M "," U ",'max_tokens':8193}", 400,
	  "integer_above_max_value", "max_tokens" },
	{ CHAT, "{" M "," U ",'max_completion_tokens':0}", 400,
	  "integer_below_min_value", "max_completion_tokens" },
	{ CHAT, "{" M "," U ",'max_completion_tokens':9000}", 400,
	  "integer_above_max_value", "max_completion_tokens" },
	{ CHAT, "{" M "," U ",'max_completion_tokens':false}", 400,
	  "invalid_type", "max_completion_tokens" },
	/* temperature [0, 2], top_p (0, 1] */
	{ CMPL, "{" M "," P ",'temperature':-0.1}", 400,
	  "decimal_below_min_value", "temperature" },
	{ CMPL, "{" M "," P ",'temperature':2.5}", 400,
	  "decimal_above_max_value", "temperature" },
	{ CMPL, "{" M "," P ",'temperature':'hot'}", 400, "invalid_type",
	  "temperature" },
	{ CHAT, "{" M "," U ",'temperature':true}", 400, "invalid_type",
	  "temperature" },
	{ CMPL, "{" M "," P ",'top_p':0}", 400, "decimal_below_min_value",
	  "top_p" },
	{ CMPL, "{" M "," P ",'top_p':-1}", 400, "decimal_below_min_value",
	  "top_p" },
	{ CMPL, "{" M "," P ",'top_p':1.01}", 400,
	  "decimal_above_max_value", "top_p" },
	{ CHAT, "{" M "," U ",'top_p':'1'}", 400, "invalid_type", "top_p" },
	/* n: only 1 */
	{ CMPL, "{" M "," P ",'n':17}", 400, "integer_above_max_value", "n" },
	{ CHAT, "{" M "," U ",'n':128}", 400, "integer_above_max_value", "n" },
	{ CHAT, "{" M "," U ",'n':9223372036854775807}", 400,
	  "integer_above_max_value", "n" },
	{ RESP, "{" M ",'input':'x','n':2}", 400, "integer_above_max_value",
	  "n" },
	{ CMPL, "{" M "," P ",'n':0}", 400, "integer_below_min_value",
	  "n" },
	{ CMPL, "{" M "," P ",'n':1.0}", 400, "invalid_type", "n" },
	/* stream and stream_options */
	{ CMPL, "{" M "," P ",'stream':'yes'}", 400, "invalid_type",
	  "stream" },
	{ CHAT, "{" M "," U ",'stream':1}", 400, "invalid_type", "stream" },
	{ CHAT, "{" M "," U ",'stream_options':{'include_usage':true}}",
	  400, "invalid_value", "stream_options" },
	{ CMPL, "{" M "," P ",'stream':false,'stream_options':{}}", 400,
	  "invalid_value", "stream_options" },
	{ CMPL, "{" M "," P ",'stream':true,'stream_options':5}", 400,
	  "invalid_type", "stream_options" },
	{ CHAT, "{" M "," U ",'stream':true,'stream_options':"
	  "{'include_usage':'yes'}}", 400, "invalid_type",
	  "stream_options.include_usage" },
	/* stop */
	{ CMPL, "{" M "," P ",'stop':''}", 400, "invalid_value", "stop" },
	{ CMPL, "{" M "," P ",'stop':'0123456789012345678901234567890123456"
	  "7890123456789012345678901234'}", 400, "string_above_max_length",
	  "stop" },
	{ CHAT, "{" M "," U ",'stop':['a','b','c','d','e']}", 400,
	  "array_above_max_length", "stop" },
	{ CHAT, "{" M "," U ",'stop':['a','']}", 400, "invalid_value",
	  "stop[1]" },
	{ CHAT, "{" M "," U ",'stop':['a',1]}", 400, "invalid_type",
	  "stop[1]" },
	{ CHAT, "{" M "," U ",'stop':['a',null]}", 400, "invalid_type",
	  "stop[1]" },
	{ CMPL, "{" M "," P ",'stop':5}", 400, "invalid_type", "stop" },
	{ CMPL, "{" M "," P ",'stop':{}}", 400, "invalid_type", "stop" },
	/* seed, ignore_eos */
	{ CMPL, "{" M "," P ",'seed':1.5}", 400, "invalid_type", "seed" },
	{ CMPL, "{" M "," P ",'seed':'42'}", 400, "invalid_type", "seed" },
	{ CHAT, "{" M "," U ",'ignore_eos':'true'}", 400, "invalid_type",
	  "ignore_eos" },
	{ CHAT, "{" M "," U ",'ignore_eos':0}", 400, "invalid_type",
	  "ignore_eos" },
	/* the lab knobs, with the lab endpoints' caps and codes (one
	 * table: proto/knobs.h) */
	{ CMPL, "{" M "," P ",'prefill_ms':60001}", 400,
	  "invalid_prefill_ms", "prefill_ms" },
	{ CMPL, "{" M "," P ",'tpot_ms':-1}", 400,
	  "invalid_tpot_ms", "tpot_ms" },
	{ CMPL, "{" M "," P ",'tpot_ms':10001}", 400,
	  "invalid_tpot_ms", "tpot_ms" },
	{ CHAT, "{" M "," U ",'error_after':8193}", 400,
	  "invalid_error_after", "error_after" },
	{ CHAT, "{" M "," U ",'tpot_ms':'5'}", 400, "invalid_tpot_ms",
	  "tpot_ms" },
	/* the first failure wins: fields are checked in a fixed order */
	{ CMPL, "{" M "," P ",'max_tokens':-1,'temperature':9}", 400,
	  "integer_below_min_value", "max_tokens" },
	{ CHAT, "{" M "," U ",'n':20,'stop':5}", 400,
	  "integer_above_max_value", "n" },
};

static void
test_parse_errors(void **unused)
{
	size_t i;

	for (i = 0; i < N(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct openai_request r;
		struct http_error err;

		memset(&err, 0x5a, sizeof(err));
		CHECK(i, parse(c->kind, c->body, &r, &err) == TS_EINVAL);
		CHECK(i, err.status == c->status);
		CHECK(i, strcmp(err.type, "invalid_request_error") == 0);
		if (strcmp(err.code, c->code) != 0)
			fail_msg("row %zu: code %s, want %s (%s)", i,
			    err.code, c->code, err.message);
		if (strcmp(err.param, c->param ? c->param : "") != 0)
			fail_msg("row %zu: param '%s', want '%s'", i,
			    err.param, c->param ? c->param : "");
		CHECK(i, strlen(err.message) > 10);
		/* the request owns nothing */
		CHECK(i, r.model == NULL && r.prompt == NULL);
		CHECK(i, r.messages == NULL && r.n_stop == 0);
		openai_request_free(&r);
	}
}

/* A few messages exactly, the ones clients show to people. */
static void
test_error_messages(void **unused)
{
	static const struct {
		enum openai_kind kind;
		const char *body;
		const char *message;
	} cases[] = {
		{ CMPL, "{" P "}", "Missing required parameter: 'model'." },
		{ CMPL, "{'model':'gpt-4'," P "}", "The model `gpt-4` does "
		  "not exist: this server serves `tokstream-sim`." },
		{ CMPL, "{'model':'gpt\\n4'," P "}", "The model does not "
		  "exist: this server serves `tokstream-sim`." },
		{ CMPL, "{" M "," P ",'max_tokens':'5'}", "Invalid type for "
		  "'max_tokens': expected an integer, but got a string "
		  "instead." },
		{ CMPL, "{" M "," P ",'max_tokens':8193}", "Invalid "
		  "'max_tokens': integer above maximum value. Expected a "
		  "value <= 8192, but got 8193 instead." },
		{ CMPL, "{" M "," P ",'top_p':0}", "Invalid 'top_p': decimal "
		  "below minimum value. Expected a value > 0, but got 0 "
		  "instead." },
		{ CHAT, "{" M ",'messages':[{'role':'function','content':'x'}]}",
		  "Invalid value: 'function'. Supported values are: 'system', "
		  "'developer', 'user', 'assistant' and 'tool'." },
		{ CHAT, "{" M "," U ",'stream_options':{}}", "The "
		  "'stream_options' parameter is only allowed when 'stream' "
		  "is enabled." },
		{ CHAT, "{" M "," U ",'n':17}", "Invalid 'n': integer above "
		  "maximum value. Expected a value <= 16, but got 17 "
		  "instead." },
	};
	size_t i;

	for (i = 0; i < N(cases); i++) {
		struct openai_request r;
		struct http_error err;

		assert_int_equal(parse(cases[i].kind, cases[i].body, &r,
		    &err), TS_EINVAL);
		assert_string_equal(err.message, cases[i].message);
	}
}

/* ---- accepted bodies ---------------------------------------------------- */

struct ok_case {
	enum openai_kind kind;
	const char *body;        /* ' for " */
	uint32_t max_tokens;
	double temperature, top_p;
	int stream, include_usage;
	size_t n_stop;
	int has_seed;
	long long seed;
	int ignore_eos;
	int32_t prefill_ms, tpot_ms, error_after;
};

/* defaults: temperature 1, top_p 1, no stream, no stop, no seed */
#define DFL 1.0, 1.0, 0, 0, 0, 0, 0, 0, -1, -1, -1

static const struct ok_case ok_cases[] = {
	{ CMPL, "{" M "," P "}", 16, DFL },
	{ CMPL, "{" M ",'prompt':['hi']}", 16, DFL },
	{ CHAT, "{" M "," U "}", 256, DFL },
	/* null is "not given" */
	{ CMPL, "{" M "," P ",'max_tokens':null,'temperature':null,"
	  "'top_p':null,'n':null,'stream':null,'stream_options':null,"
	  "'stop':null,'seed':null,'ignore_eos':null,'prefill_ms':null}",
	  16, DFL },
	{ CHAT, "{" M "," U ",'max_tokens':null,"
	  "'max_completion_tokens':null}", 256, DFL },
	/* unknown fields are ignored */
	{ CMPL, "{" M "," P ",'logprobs':null,'echo':false,'user':'u',"
	  "'suffix':'x','presence_penalty':0,'x':{'y':[1]}}", 16, DFL },
	/* edges */
	{ CMPL, "{" M "," P ",'max_tokens':0}", 0, DFL },
	{ CMPL, "{" M "," P ",'max_tokens':8192}", 8192, DFL },
	{ CHAT, "{" M "," U ",'max_tokens':1}", 1, DFL },
	{ CHAT, "{" M "," U ",'max_tokens':5}", 5, DFL },
	{ CHAT, "{" M "," U ",'max_completion_tokens':7}", 7, DFL },
	{ CHAT, "{" M "," U ",'max_tokens':5,'max_completion_tokens':7}", 7,
	  DFL },
	{ CMPL, "{" M "," P ",'temperature':0,'top_p':1}", 16, 0.0, 1.0, 0,
	  0, 0, 0, 0, 0, -1, -1, -1 },
	{ CMPL, "{" M "," P ",'temperature':2,'top_p':0.001}", 16, 2.0,
	  0.001, 0, 0, 0, 0, 0, 0, -1, -1, -1 },
	{ CMPL, "{" M "," P ",'n':1}", 16, DFL },
	/* streaming */
	{ CMPL, "{" M "," P ",'stream':false}", 16, DFL },
	{ CMPL, "{" M "," P ",'stream':true}", 16, 1.0, 1.0, 1, 0, 0, 0, 0,
	  0, -1, -1, -1 },
	{ CHAT, "{" M "," U ",'stream':true,'stream_options':{}}", 256,
	  1.0, 1.0, 1, 0, 0, 0, 0, 0, -1, -1, -1 },
	{ CHAT, "{" M "," U ",'stream':true,'stream_options':"
	  "{'include_usage':false,'continuous_usage_stats':true}}", 256,
	  1.0, 1.0, 1, 0, 0, 0, 0, 0, -1, -1, -1 },
	{ CHAT, "{" M "," U ",'stream':true,'stream_options':"
	  "{'include_usage':true}}", 256, 1.0, 1.0, 1, 1, 0, 0, 0, 0, -1,
	  -1, -1 },
	/* stop */
	{ CMPL, "{" M "," P ",'stop':'\\n'}", 16, 1.0, 1.0, 0, 0, 1, 0, 0,
	  0, -1, -1, -1 },
	{ CMPL, "{" M "," P ",'stop':[]}", 16, DFL },
	{ CHAT, "{" M "," U ",'stop':['a','bb','ccc','0123456789012345678901"
	  "234567890123456789012345678901234567890123']}", 256, 1.0, 1.0, 0,
	  0, 4, 0, 0, 0, -1, -1, -1 },
	/* seed: any int64 */
	{ CMPL, "{" M "," P ",'seed':0}", 16, 1.0, 1.0, 0, 0, 0, 1, 0, 0,
	  -1, -1, -1 },
	{ CMPL, "{" M "," P ",'seed':-9223372036854775808}", 16, 1.0, 1.0,
	  0, 0, 0, 1, INT64_MIN, 0, -1, -1, -1 },
	{ CMPL, "{" M "," P ",'seed':9223372036854775807}", 16, 1.0, 1.0, 0,
	  0, 0, 1, INT64_MAX, 0, -1, -1, -1 },
	/* vLLM's ignore_eos and the lab knobs */
	{ CHAT, "{" M "," U ",'ignore_eos':true}", 256, 1.0, 1.0, 0, 0, 0,
	  0, 0, 1, -1, -1, -1 },
	{ CMPL, "{" M "," P ",'ignore_eos':false,'prefill_ms':0,"
	  "'tpot_ms':10000,'error_after':3}", 16, 1.0, 1.0, 0, 0, 0, 0, 0,
	  0, 0, 10000, 3 },
	{ CHAT, "{" M "," U ",'prefill_ms':60000,'error_after':8192}", 256,
	  1.0, 1.0, 0, 0, 0, 0, 0, 0, 60000, -1, 8192 },
	/* everything at once */
	{ CMPL, "{" M "," P ",'max_tokens':3,'temperature':0.5,'top_p':0.9,"
	  "'n':1,'stream':true,'stream_options':{'include_usage':true},"
	  "'stop':['x','y'],'seed':-5,'ignore_eos':true,'prefill_ms':1,"
	  "'tpot_ms':2,'error_after':0}", 3, 0.5, 0.9, 1, 1, 2, 1, -5, 1, 1,
	  2, 0 },
};

static void
test_parse_ok(void **unused)
{
	size_t i;

	for (i = 0; i < N(ok_cases); i++) {
		const struct ok_case *c = &ok_cases[i];
		struct openai_request r;
		struct http_error err;

		if (parse(c->kind, c->body, &r, &err) != TS_OK)
			fail_msg("row %zu: refused: %s", i, err.message);
		CHECK(i, r.kind == c->kind);
		CHECK(i, r.model_len == strlen(MODEL));
		CHECK(i, strcmp(r.model, MODEL) == 0);
		if (c->kind == CMPL) {
			CHECK(i, r.prompt != NULL && r.prompt_len == 2);
			CHECK(i, strcmp(r.prompt, "hi") == 0);
			CHECK(i, r.messages == NULL && r.n_messages == 0);
		} else {
			CHECK(i, r.prompt == NULL);
			CHECK(i, r.n_messages == 1);
			CHECK(i, r.messages[0].role == OPENAI_ROLE_USER);
			CHECK(i, r.messages[0].content_len == 2);
			CHECK(i, strcmp(r.messages[0].content, "hi") == 0);
		}
		CHECK(i, r.max_tokens == c->max_tokens);
		CHECK(i, r.temperature == c->temperature);
		CHECK(i, r.top_p == c->top_p);
		CHECK(i, r.stream == c->stream);
		CHECK(i, r.include_usage == c->include_usage);
		CHECK(i, r.n_stop == c->n_stop);
		CHECK(i, r.has_seed == c->has_seed);
		CHECK(i, r.seed == c->seed);
		CHECK(i, r.ignore_eos == c->ignore_eos);
		CHECK(i, r.knobs.prefill_ms == c->prefill_ms);
		CHECK(i, r.knobs.tpot_ms == c->tpot_ms);
		CHECK(i, r.knobs.error_after == c->error_after);
		openai_request_free(&r);
		openai_request_free(&r);        /* idempotent */
		assert_null(r.model);
	}
	openai_request_free(NULL);
}

/* Strings are copied with their lengths: NUL bytes survive. */
static void
test_parse_strings(void **unused)
{
	struct openai_request r;
	struct http_error err;

	assert_int_equal(parse(CMPL, "{" M ",'prompt':'a\\u0000b',"
	    "'stop':['\\u0000','x\\ny']}", &r, &err), TS_OK);
	assert_int_equal(r.prompt_len, 3);
	assert_memory_equal(r.prompt, "a\0b", 4);
	assert_int_equal(r.n_stop, 2);
	assert_int_equal(r.stop[0].len, 1);
	assert_memory_equal(r.stop[0].s, "\0", 2);
	assert_int_equal(r.stop[1].len, 3);
	assert_string_equal(r.stop[1].s, "x\ny");
	openai_request_free(&r);

	assert_int_equal(parse(CMPL, "{" M ",'prompt':''}", &r, &err),
	    TS_OK);
	assert_int_equal(r.prompt_len, 0);
	assert_string_equal(r.prompt, "");
	openai_request_free(&r);
}

/* Roles (developer is system), string and part contents, joining. */
static void
test_parse_messages(void **unused)
{
	struct openai_request r;
	struct http_error err;

	assert_int_equal(parse(CHAT, "{" M ",'messages':["
	    "{'role':'system','content':'be brief'},"
	    "{'role':'developer','content':'really','name':'x'},"
	    "{'role':'user','content':[{'type':'text','text':'a'},"
	    "{'type':'text','text':'b','extra':1}]},"
	    "{'role':'assistant','content':''},"
	    "{'role':'user','content':[{'type':'text','text':''}]}]}",
	    &r, &err), TS_OK);
	assert_int_equal(r.n_messages, 5);
	assert_int_equal(r.messages[0].role, OPENAI_ROLE_SYSTEM);
	assert_string_equal(r.messages[0].content, "be brief");
	assert_int_equal(r.messages[1].role, OPENAI_ROLE_SYSTEM);
	assert_string_equal(r.messages[1].content, "really");
	assert_int_equal(r.messages[2].role, OPENAI_ROLE_USER);
	assert_int_equal(r.messages[2].content_len, 3);
	assert_string_equal(r.messages[2].content, "a\nb");
	assert_int_equal(r.messages[3].role, OPENAI_ROLE_ASSISTANT);
	assert_int_equal(r.messages[3].content_len, 0);
	assert_int_equal(r.messages[4].content_len, 0);
	openai_request_free(&r);
}

/* ---- tokstream's limits ------------------------------------------------- */

/* Appends the NUL-terminated s to b, which is big enough. */
static void
put(struct ts_buf *b, const char *s)
{
	assert_int_equal(ts_buf_append(b, s, strlen(s)), TS_OK);
}

static enum ts_err
parse_buf(enum openai_kind kind, const struct ts_buf *b,
    struct openai_request *r, struct http_error *err)
{
	return openai_parse_request(kind, b->p, b->len, served, 1, r, err);
}

static void
test_limits(void **unused)
{
	struct openai_request r;
	struct http_error err;
	struct ts_buf b;
	size_t i, n;
	char *big;

	ts_buf_init(&b, 4u << 20);
	/* OPENAI_MAX_MESSAGES messages, then one more */
	for (n = OPENAI_MAX_MESSAGES; n <= OPENAI_MAX_MESSAGES + 1; n++) {
		ts_buf_reset(&b);
		put(&b, "{\"model\":\"" MODEL "\",\"messages\":[");
		for (i = 0; i < n; i++)
			put(&b, i ? ",{\"role\":\"user\",\"content\":\"x\"}" :
			    "{\"role\":\"user\",\"content\":\"x\"}");
		put(&b, "]}");
		if (n == OPENAI_MAX_MESSAGES) {
			assert_int_equal(parse_buf(CHAT, &b, &r, &err),
			    TS_OK);
			assert_int_equal(r.n_messages, n);
			openai_request_free(&r);
		} else {
			assert_int_equal(parse_buf(CHAT, &b, &r, &err),
			    TS_ELIMIT);
			assert_int_equal(err.status, 400);
			assert_string_equal(err.code,
			    "array_above_max_length");
			assert_string_equal(err.param, "messages");
			assert_null(r.messages);
		}
	}
	/* OPENAI_MAX_CONTENT_PARTS parts, then one more */
	for (n = OPENAI_MAX_CONTENT_PARTS; n <= OPENAI_MAX_CONTENT_PARTS + 1;
	    n++) {
		ts_buf_reset(&b);
		put(&b, "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":"
		    "\"user\",\"content\":[");
		for (i = 0; i < n; i++)
			put(&b, i ? ",{\"type\":\"text\",\"text\":\"x\"}" :
			    "{\"type\":\"text\",\"text\":\"x\"}");
		put(&b, "]}]}");
		if (n == OPENAI_MAX_CONTENT_PARTS) {
			assert_int_equal(parse_buf(CHAT, &b, &r, &err),
			    TS_OK);
			assert_int_equal(r.messages[0].content_len,
			    2 * n - 1);
			openai_request_free(&r);
		} else {
			assert_int_equal(parse_buf(CHAT, &b, &r, &err),
			    TS_ELIMIT);
			assert_string_equal(err.code,
			    "array_above_max_length");
			assert_string_equal(err.param, "messages[0].content");
		}
	}
	/* content: 1 MiB in all is fine, one byte more is not (the body
	 * is over 1 MiB then, which the caller refuses first; the module
	 * checks anyway) */
	big = xmalloc(OPENAI_MAX_CONTENT_BYTES + 1);
	memset(big, 'a', OPENAI_MAX_CONTENT_BYTES);
	big[OPENAI_MAX_CONTENT_BYTES] = '\0';
	for (n = 0; n <= 1; n++) {
		ts_buf_reset(&b);
		put(&b, "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":"
		    "\"user\",\"content\":\"");
		put(&b, big + OPENAI_MAX_CONTENT_BYTES / 2);
		put(&b, "\"},{\"role\":\"user\",\"content\":\"");
		put(&b, big + OPENAI_MAX_CONTENT_BYTES / 2 - n);
		put(&b, "\"}]}");
		if (n == 0) {
			assert_int_equal(parse_buf(CHAT, &b, &r, &err),
			    TS_OK);
			openai_request_free(&r);
		} else {
			assert_int_equal(parse_buf(CHAT, &b, &r, &err),
			    TS_ELIMIT);
			assert_string_equal(err.code,
			    "string_above_max_length");
			assert_string_equal(err.param, "messages");
			assert_null(r.messages);
		}
		/* the same bytes as one prompt */
		ts_buf_reset(&b);
		put(&b, "{\"model\":\"" MODEL "\",\"prompt\":\"");
		put(&b, big);
		if (n == 1)
			put(&b, "a");
		put(&b, "\"}");
		if (n == 0) {
			assert_int_equal(parse_buf(CMPL, &b, &r, &err),
			    TS_OK);
			assert_int_equal(r.prompt_len,
			    OPENAI_MAX_CONTENT_BYTES);
			openai_request_free(&r);
		} else {
			assert_int_equal(parse_buf(CMPL, &b, &r, &err),
			    TS_ELIMIT);
			assert_string_equal(err.code,
			    "string_above_max_length");
			assert_string_equal(err.param, "prompt");
			assert_null(r.prompt);
		}
	}
	free(big);
	ts_buf_free(&b);
}

/* ---- the OpenAI error shape --------------------------------------------- */

static void
test_error_json(void **unused)
{
	struct http_error err;
	struct ts_buf b;

	ts_buf_init(&b, 4096);
	http_error_set(&err, 400, "invalid_request_error", "invalid_type",
	    "bad \"%s\"", "x");
	http_error_set_param(&err, "messages[%d].role", 3);
	assert_int_equal(http_error_json_openai(&err, &b), TS_OK);
	assert_string_equal(b.p, "{\"error\":{\"message\":\"bad \\\"x\\\"\","
	    "\"type\":\"invalid_request_error\",\"param\":"
	    "\"messages[3].role\",\"code\":\"invalid_type\"}}");
	/* the lab shape is unchanged: no param, even when one is set */
	ts_buf_reset(&b);
	assert_int_equal(http_error_json(&err, &b), TS_OK);
	assert_string_equal(b.p, "{\"error\":{\"message\":\"bad \\\"x\\\"\","
	    "\"type\":\"invalid_request_error\",\"code\":\"invalid_type\"}}");
	/* http_error_set clears the param: null; no code: null */
	http_error_set(&err, 404, "invalid_request_error", NULL, "gone");
	ts_buf_reset(&b);
	assert_int_equal(http_error_json_openai(&err, &b), TS_OK);
	assert_string_equal(b.p, "{\"error\":{\"message\":\"gone\",\"type\":"
	    "\"invalid_request_error\",\"param\":null,\"code\":null}}");
	/* a message that is not UTF-8 becomes a generic one */
	http_error_set(&err, 400, "invalid_request_error", "invalid_json",
	    "near '\xff'");
	ts_buf_reset(&b);
	assert_int_equal(http_error_json_openai(&err, &b), TS_OK);
	assert_string_equal(b.p, "{\"error\":{\"message\":\"invalid request\","
	    "\"type\":\"invalid_request_error\",\"param\":null,\"code\":"
	    "\"invalid_json\"}}");
	ts_buf_free(&b);
}

/* ---- responses and stream chunks ---------------------------------------- */


static void
test_response(void **unused)
{
	struct openai_meta m;
	struct ts_buf b;

	ts_buf_init(&b, 4096);
	meta(&m, CMPL);
	assert_int_equal(openai_encode_response(&b, &m, T("Hi \"there\"\n"),
	    OPENAI_FINISH_LENGTH, &usage), TS_OK);
	assert_string_equal(b.p, CM_HEAD "\"choices\":[{\"index\":0,"
	    "\"text\":\"Hi \\\"there\\\"\\n\",\"logprobs\":null,"
	    "\"finish_reason\":\"length\"}]," USAGE "}");
	ts_buf_reset(&b);
	meta(&m, CHAT);
	assert_int_equal(openai_encode_response(&b, &m, T("Hi"),
	    OPENAI_FINISH_STOP, &usage), TS_OK);
	assert_string_equal(b.p, "{\"id\":\"chatcmpl-42\",\"object\":"
	    "\"chat.completion\",\"created\":1700000000,\"model\":"
	    "\"tokstream-sim\",\"choices\":[{\"index\":0,\"message\":"
	    "{\"role\":\"assistant\",\"content\":\"Hi\",\"refusal\":null},"
	    "\"logprobs\":null,"
	    "\"finish_reason\":\"stop\"}]," USAGE "}");
	/* the id is the request id in decimal, up to UINT64_MAX */
	ts_buf_reset(&b);
	m.id = UINT64_MAX;
	assert_int_equal(openai_encode_response(&b, &m, T(""),
	    OPENAI_FINISH_STOP, &usage), TS_OK);
	assert_non_null(strstr(b.p,
	    "\"id\":\"chatcmpl-18446744073709551615\""));
	/* a named server's (--instance b1): the request id's prefix too,
	 * with the longest name */
	ts_buf_reset(&b);
	m.id_prefix = "zzzzzzzz-";
	assert_int_equal(openai_encode_response(&b, &m, T(""),
	    OPENAI_FINISH_STOP, &usage), TS_OK);
	assert_non_null(strstr(b.p,
	    "\"id\":\"chatcmpl-zzzzzzzz-18446744073709551615\""));
	ts_buf_free(&b);
}

/* Encodes a whole stream of `n` tokens and compares it byte for byte. */
struct stream_case {
	enum openai_kind kind;
	int include_usage;
	const char *tokens[3];
	size_t n;
	enum openai_finish finish;
	const char *want;
};

static const struct stream_case stream_cases[] = {
	/* chat: the role only in the first chunk, with the first token */
	{ CHAT, 0, { "Hel", "lo" }, 2, OPENAI_FINISH_STOP,
	  "data: " CH_HEAD "\"choices\":[{\"index\":0,\"delta\":{\"role\":"
	  "\"assistant\",\"content\":\"Hel\"},\"logprobs\":null,"
	  "\"finish_reason\":null}]}\n\n"
	  "data: " CH_HEAD "\"choices\":[{\"index\":0,\"delta\":{\"content\":"
	  "\"lo\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
	  "data: " CH_HEAD "\"choices\":[{\"index\":0,\"delta\":{},"
	  "\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n"
	  "data: [DONE]\n\n" },
	/* include_usage: "usage":null on every chunk, then the usage chunk */
	{ CHAT, 1, { "Hel", "lo" }, 2, OPENAI_FINISH_LENGTH,
	  "data: " CH_HEAD "\"choices\":[{\"index\":0,\"delta\":{\"role\":"
	  "\"assistant\",\"content\":\"Hel\"},\"logprobs\":null,"
	  "\"finish_reason\":null}],\"usage\":null}\n\n"
	  "data: " CH_HEAD "\"choices\":[{\"index\":0,\"delta\":{\"content\":"
	  "\"lo\"},\"logprobs\":null,\"finish_reason\":null}],"
	  "\"usage\":null}\n\n"
	  "data: " CH_HEAD "\"choices\":[{\"index\":0,\"delta\":{},"
	  "\"logprobs\":null,\"finish_reason\":\"length\"}],"
	  "\"usage\":null}\n\n"
	  "data: " CH_HEAD "\"choices\":[]," USAGE "}\n\n"
	  "data: [DONE]\n\n" },
	/* chat, no token at all: the finish chunk carries the role */
	{ CHAT, 0, { NULL }, 0, OPENAI_FINISH_LENGTH,
	  "data: " CH_HEAD "\"choices\":[{\"index\":0,\"delta\":{\"role\":"
	  "\"assistant\",\"content\":\"\"},\"logprobs\":null,"
	  "\"finish_reason\":\"length\"}]}\n\n"
	  "data: [DONE]\n\n" },
	/* completions */
	{ CMPL, 0, { "a", "\n\"b\"" }, 2, OPENAI_FINISH_STOP,
	  "data: " CM_HEAD "\"choices\":[{\"index\":0,\"text\":\"a\","
	  "\"logprobs\":null,\"finish_reason\":null}]}\n\n"
	  "data: " CM_HEAD "\"choices\":[{\"index\":0,\"text\":"
	  "\"\\n\\\"b\\\"\",\"logprobs\":null,\"finish_reason\":null}]}\n\n"
	  "data: " CM_HEAD "\"choices\":[{\"index\":0,\"text\":\"\","
	  "\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n"
	  "data: [DONE]\n\n" },
	{ CMPL, 1, { "a" }, 1, OPENAI_FINISH_LENGTH,
	  "data: " CM_HEAD "\"choices\":[{\"index\":0,\"text\":\"a\","
	  "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n"
	  "data: " CM_HEAD "\"choices\":[{\"index\":0,\"text\":\"\","
	  "\"logprobs\":null,\"finish_reason\":\"length\"}],"
	  "\"usage\":null}\n\n"
	  "data: " CM_HEAD "\"choices\":[]," USAGE "}\n\n"
	  "data: [DONE]\n\n" },
	{ CMPL, 0, { NULL }, 0, OPENAI_FINISH_LENGTH,
	  "data: " CM_HEAD "\"choices\":[{\"index\":0,\"text\":\"\","
	  "\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n"
	  "data: [DONE]\n\n" },
};

static void
test_stream(void **unused)
{
	size_t i, k;

	for (i = 0; i < N(stream_cases); i++) {
		const struct stream_case *c = &stream_cases[i];
		struct openai_stream s;
		struct openai_meta m;
		struct ts_buf b;

		ts_buf_init(&b, 16384);
		meta(&m, c->kind);
		openai_stream_init(&s, &m, c->include_usage);
		for (k = 0; k < c->n; k++)
			CHECK(i, openai_encode_chunk(&b, &s, c->tokens[k],
			    strlen(c->tokens[k])) == TS_OK);
		CHECK(i, openai_encode_end(&b, &s, c->finish, &usage) ==
		    TS_OK);
		CHECK(i, ts_buf_append(&b, "", 1) == TS_OK);
		if (strcmp(b.p, c->want) != 0)
			fail_msg("row %zu:\n got %s\nwant %s", i, b.p,
			    c->want);
		ts_buf_free(&b);
	}
}

/* The usage chunk only with include_usage; the finish chunk on its own. */
static void
test_stream_parts(void **unused)
{
	struct openai_stream s;
	struct openai_meta m;
	struct ts_buf b;

	ts_buf_init(&b, 4096);
	meta(&m, CHAT);
	openai_stream_init(&s, &m, 0);
	assert_int_equal(openai_encode_usage(&b, &s, &usage), TS_OK);
	assert_int_equal(b.len, 0);
	openai_stream_init(&s, &m, 1);
	assert_int_equal(openai_encode_usage(&b, &s, &usage), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "data: " CH_HEAD "\"choices\":[]," USAGE
	    "}\n\n");
	ts_buf_reset(&b);
	/* a second content chunk never repeats the role */
	assert_int_equal(openai_encode_chunk(&b, &s, T("")), TS_OK);
	assert_true(s.role_sent);
	ts_buf_reset(&b);
	assert_int_equal(openai_encode_finish(&b, &s, OPENAI_FINISH_STOP),
	    TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "data: " CH_HEAD "\"choices\":[{\"index\":0,"
	    "\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],"
	    "\"usage\":null}\n\n");
	assert_string_equal(openai_finish_reason(OPENAI_FINISH_STOP), "stop");
	assert_string_equal(openai_finish_reason(OPENAI_FINISH_LENGTH),
	    "length");
	ts_buf_free(&b);
}

/* An error after the stream began: the error event, then [DONE]. */
static void
test_stream_error(void **unused)
{
	struct http_error err;
	struct ts_buf b;

	ts_buf_init(&b, 4096);
	http_error_set(&err, 500, "server_error", "injected_error",
	    "injected error after %d tokens", 3);
	assert_int_equal(openai_encode_stream_error(&b, &err), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "data: {\"error\":{\"message\":\"injected "
	    "error after 3 tokens\",\"type\":\"server_error\",\"param\":null,"
	    "\"code\":\"injected_error\"}}\n\ndata: [DONE]\n\n");
	ts_buf_free(&b);
}

/* Text that is not UTF-8, or a full buffer: an error, nothing appended,
 * and the stream's state unchanged. */
static void
test_encode_failures(void **unused)
{
	struct openai_stream s;
	struct openai_meta m;
	struct http_error err;
	struct ts_buf b;

	ts_buf_init(&b, 300);
	meta(&m, CHAT);
	openai_stream_init(&s, &m, 1);
	assert_int_equal(openai_encode_chunk(&b, &s, T("\xff")), TS_EINVAL);
	assert_int_equal(b.len, 0);
	assert_false(s.role_sent);
	assert_int_equal(openai_encode_response(&b, &m, T("\xc3"),
	    OPENAI_FINISH_STOP, &usage), TS_EINVAL);
	assert_int_equal(b.len, 0);
	m.model = "\xff";
	m.model_len = 1;
	openai_stream_init(&s, &m, 0);
	assert_int_equal(openai_encode_chunk(&b, &s, T("a")), TS_EINVAL);
	assert_int_equal(b.len, 0);
	meta(&m, CHAT);
	openai_stream_init(&s, &m, 1);
	/* 300 bytes: a chunk fits, the end (3 events) does not */
	assert_int_equal(openai_encode_chunk(&b, &s, T("a")), TS_OK);
	assert_true(s.role_sent);
	ts_buf_reset(&b);
	s.role_sent = 0;
	assert_int_equal(openai_encode_end(&b, &s, OPENAI_FINISH_STOP,
	    &usage), TS_ELIMIT);
	assert_int_equal(b.len, 0);
	assert_false(s.role_sent);
	b.max = 20;
	assert_int_equal(openai_encode_chunk(&b, &s, T("a")), TS_ELIMIT);
	assert_int_equal(b.len, 0);
	assert_false(s.role_sent);
	http_error_set(&err, 500, "server_error", "x", "y");
	assert_int_equal(openai_encode_stream_error(&b, &err), TS_ELIMIT);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
}

/* ---- GET /v1/models and the chat template ------------------------------- */

static void
test_models(void **unused)
{
	struct openai_model_info mi = { T(MODEL), 1700000000, 0, NULL,
	    NULL };
	struct ts_buf b;

	static const char *const two[] = { "a", "org/b" };

	ts_buf_init(&b, 4096);
	assert_int_equal(openai_encode_models(&b, &mi, served, 1), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "{\"object\":\"list\",\"data\":[{\"id\":"
	    "\"tokstream-sim\",\"object\":\"model\",\"created\":1700000000,"
	    "\"owned_by\":\"tokstream\"}]}");
	/* several names: one model object each, in order; mi.id unused */
	ts_buf_reset(&b);
	assert_int_equal(openai_encode_models(&b, &mi, two, 2), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "{\"object\":\"list\",\"data\":[{\"id\":"
	    "\"a\",\"object\":\"model\",\"created\":1700000000,"
	    "\"owned_by\":\"tokstream\"},{\"id\":\"org/b\",\"object\":"
	    "\"model\",\"created\":1700000000,\"owned_by\":\"tokstream\"}]}");
	/* one model (GET /v1/models/{model}): the object alone */
	ts_buf_reset(&b);
	assert_int_equal(openai_encode_model(&b, &mi), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "{\"id\":\"tokstream-sim\",\"object\":"
	    "\"model\",\"created\":1700000000,\"owned_by\":\"tokstream\"}");
	/* a name that is not UTF-8 encodes nothing */
	ts_buf_reset(&b);
	{
		static const char *const bad[] = { "\xff" };

		assert_int_equal(openai_encode_models(&b, &mi, bad, 1),
		    TS_EINVAL);
		assert_int_equal(b.len, 0);
	}
	ts_buf_reset(&b);
	mi.max_model_len = 8192;
	mi.backend = "sim";
	mi.chat_template = "chatml";   /* any string: it is copied */
	assert_int_equal(openai_encode_models(&b, &mi, served, 1), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "{\"object\":\"list\",\"data\":[{\"id\":"
	    "\"tokstream-sim\",\"object\":\"model\",\"created\":1700000000,"
	    "\"owned_by\":\"tokstream\",\"max_model_len\":8192,"
	    "\"tokstream\":{\"backend\":\"sim\",\"chat_template\":"
	    "\"chatml\"}}]}");
	ts_buf_reset(&b);
	mi.backend = NULL;
	assert_int_equal(openai_encode_models(&b, &mi, served, 1), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_non_null(strstr(b.p, ",\"tokstream\":{\"chat_template\":"
	    "\"chatml\"}}]}"));
	ts_buf_free(&b);
}

static void
test_chat_prompt(void **unused)
{
	struct openai_request r;
	struct http_error err;
	struct ts_buf b;
	static const char want[] = "<|system|>\nbe brief\n"
	    "<|user|>\nhi\nthere\n"
	    "<|assistant|>\nyes\n"
	    "<|assistant|>\n";

	assert_int_equal(parse(CHAT, "{" M ",'messages':["
	    "{'role':'developer','content':'be brief'},"
	    "{'role':'user','content':[{'type':'text','text':'hi'},"
	    "{'type':'text','text':'there'}]},"
	    "{'role':'assistant','content':'yes'}]}", &r, &err), TS_OK);
	ts_buf_init(&b, 4096);
	assert_int_equal(openai_chat_prompt(&r, &b), TS_OK);
	assert_int_equal(b.len, sizeof(want) - 1);
	assert_memory_equal(b.p, want, b.len);
	/* all or nothing */
	ts_buf_reset(&b);
	b.max = sizeof(want) - 2;
	assert_int_equal(openai_chat_prompt(&r, &b), TS_ELIMIT);
	assert_int_equal(b.len, 0);
	openai_request_free(&r);
	assert_int_equal(parse(CMPL, "{" M "," P "}", &r, &err), TS_OK);
	assert_int_equal(openai_chat_prompt(&r, &b), TS_EINVAL);
	openai_request_free(&r);
	ts_buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_error_messages),
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_strings),
		cmocka_unit_test(test_parse_messages),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_error_json),
		cmocka_unit_test(test_response),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_stream_parts),
		cmocka_unit_test(test_stream_error),
		cmocka_unit_test(test_encode_failures),
		cmocka_unit_test(test_models),
		cmocka_unit_test(test_chat_prompt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
