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

#define T(s) s, sizeof(s) - 1
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MODEL "tokstream-sim"
/* the served names the parser is given */
static const char *const served[] = { MODEL };
#define CMPL OPENAI_COMPLETIONS
#define CHAT OPENAI_CHAT
#define RESP OPENAI_RESPONSES

/* Fails naming the table row: cmocka's asserts name only the line. */
#define CHECK(i, cond)                                                    \
	do {                                                              \
		if (!(cond))                                              \
			fail_msg("row %zu: %s", (size_t)(i), #cond);      \
	} while (0)

/*
 * The bodies below are written with ' for " to stay readable; q() turns
 * them into JSON (no test body needs a literal apostrophe). Caller frees.
 */
static char *
q(const char *s, size_t *len)
{
	char *out = xstrndup(s, strlen(s));
	char *p;

	for (p = out; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	*len = strlen(out);
	return out;
}

static enum ts_err
parse(enum openai_kind kind, const char *qbody, struct openai_request *r,
    struct http_error *err)
{
	size_t len;
	char *body = q(qbody, &len);
	enum ts_err rc;

	rc = openai_parse_request(kind, body, len, served, 1, r, err);
	free(body);
	return rc;
}

/* ---- rejected bodies ---------------------------------------------------- */

struct bad_case {
	enum openai_kind kind;
	const char *body;        /* ' for " */
	int status;
	const char *code;
	const char *param;       /* NULL: the error has no param */
};

#define M "'model':'tokstream-sim'"
#define U "'messages':[{'role':'user','content':'hi'}]"
#define P "'prompt':'hi'"

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

#define CH_HEAD "{\"id\":\"chatcmpl-42\",\"object\":" \
	"\"chat.completion.chunk\",\"created\":1700000000," \
	"\"model\":\"tokstream-sim\","
#define CM_HEAD "{\"id\":\"cmpl-42\",\"object\":\"text_completion\"," \
	"\"created\":1700000000,\"model\":\"tokstream-sim\","
#define USAGE "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2," \
	"\"total_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":0}}"

static const struct openai_usage usage = { 5, 2, 0, 0, 0 };

static void
meta(struct openai_meta *m, enum openai_kind kind)
{
	m->kind = kind;
	m->id = 42;
	m->created = 1700000000;
	m->model = MODEL;
	m->model_len = strlen(MODEL);
	m->id_prefix = NULL;
}

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

/* ---- the Responses API ------------------------------------------------- */

/* The event types and sequence numbers of a buffer of named SSE events,
 * as "type:N type:N ..." (the data's "type" must equal the event line). */
static void
resp_events(const char *p, char *out, size_t cap)
{
	size_t n = 0;

	out[0] = '\0';
	while ((p = strstr(p, "event: ")) != NULL) {
		const char *nl = strchr(p, '\n'), *d;
		json_t *o;
		char type[64];

		assert_non_null(nl);
		snprintf(type, sizeof(type), "%.*s", (int)(nl - p - 7), p + 7);
		assert_int_equal(strncmp(nl + 1, "data: ", 6), 0);
		d = nl + 7;
		o = json_loadb(d, strcspn(d, "\n"), 0, NULL);
		assert_non_null(o);
		assert_string_equal(json_string_value(json_object_get(o,
		    "type")), type);
		n += (size_t)snprintf(out + n, cap - n, "%s%s:%lld", n ? " " :
		    "", type, (long long)json_integer_value(json_object_get(o,
		    "sequence_number")));
		json_decref(o);
		p = nl;
	}
}

static void
resp_meta(struct openai_resp_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->id = 42;
	m->created_at = 1700000000;
	m->model = MODEL;
	m->model_len = strlen(MODEL);
	m->temperature = 1;
	m->top_p = 1;
	m->parallel_tool_calls = 1;
}

static void
test_responses_encode(void **unused)
{
	struct openai_resp_meta m;
	struct openai_resp_stream st;
	struct ts_buf b;
	char seq[1024];
	json_t *o;

	resp_meta(&m);
	ts_buf_init(&b, 1u << 16);
	/* the whole object: completed, the echo fields null */
	assert_int_equal(openai_resp_encode(&b, &m, T("Hi"),
	    OPENAI_FINISH_STOP, &usage), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	o = json_loads(b.p, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "id")),
	    "resp_42");
	assert_string_equal(json_string_value(json_object_get(o, "status")),
	    "completed");
	assert_true(json_is_null(json_object_get(o, "incomplete_details")));
	assert_true(json_is_null(json_object_get(o, "instructions")));
	assert_true(json_is_null(json_object_get(o, "max_output_tokens")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o,
	    "usage"), "total_tokens")), 7);
	json_decref(o);
	/* incomplete at max_output_tokens, echoing what was asked */
	ts_buf_reset(&b);
	m.instructions = "be brief";
	m.instructions_len = 8;
	m.has_max_output = 1;
	m.max_output_tokens = 2;
	assert_int_equal(openai_resp_encode(&b, &m, T("Hi"),
	    OPENAI_FINISH_LENGTH, &usage), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_non_null(strstr(b.p, "\"status\":\"incomplete\","
	    "\"error\":null,\"incomplete_details\":{\"reason\":"
	    "\"max_output_tokens\"},\"instructions\":\"be brief\","
	    "\"max_output_tokens\":2,"));
	/* the stream: four events, deltas, four more, numbered 0.. */
	ts_buf_reset(&b);
	openai_resp_stream_init(&st, &m);
	assert_int_equal(openai_resp_encode_start(&b, &st), TS_OK);
	assert_int_equal(openai_resp_encode_delta(&b, &st, T("H")), TS_OK);
	assert_int_equal(openai_resp_encode_delta(&b, &st, T("i")), TS_OK);
	assert_int_equal(openai_resp_encode_end(&b, &st, T("Hi"),
	    OPENAI_FINISH_STOP, &usage), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	resp_events(b.p, seq, sizeof(seq));
	assert_string_equal(seq, "response.created:0 response.in_progress:1 "
	    "response.output_item.added:2 response.content_part.added:3 "
	    "response.output_text.delta:4 response.output_text.delta:5 "
	    "response.output_text.done:6 response.content_part.done:7 "
	    "response.output_item.done:8 response.completed:9");
	assert_null(strstr(b.p, "[DONE]"));
	/* an error event continues the numbering */
	ts_buf_reset(&b);
	{
		struct http_error err;

		http_error_set(&err, 500, "server_error", "injected_error",
		    "boom");
		assert_int_equal(openai_resp_encode_error(&b, &st, &err,
		    T("H"), &usage), TS_OK);
		assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
		assert_int_equal(strncmp(b.p, "event: error\ndata: {\"type\":"
		    "\"error\",\"sequence_number\":10,\"code\":"
		    "\"injected_error\",\"message\":\"boom\",\"param\":null}"
		    "\n\n", 112), 0);
		resp_events(b.p, seq, sizeof(seq));
		assert_string_equal(seq, "error:10 response.failed:11");
		assert_non_null(strstr(b.p, "\"status\":\"failed\""));
		assert_non_null(strstr(b.p, "\"error\":{\"code\":"
		    "\"server_error\",\"message\":\"boom\"}"));
	}
	ts_buf_free(&b);
	/* all or nothing: a full buffer appends nothing, numbers unused */
	ts_buf_init(&b, 600);
	openai_resp_stream_init(&st, &m);
	assert_int_equal(openai_resp_encode_start(&b, &st), TS_ELIMIT);
	assert_int_equal(b.len, 0);
	assert_int_equal(st.seq, 0);
	ts_buf_free(&b);
	/* text that is not UTF-8 encodes nothing */
	ts_buf_init(&b, 4096);
	assert_int_equal(openai_resp_encode_delta(&b, &st, T("\xff")),
	    TS_EINVAL);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
}

/* ---- reasoning (text/think.h) ------------------------------------------ */

/* reasoning_effort and reasoning {effort, summary}: parsed, refused;
 * the thinking chunks, message field and usage of chat; the Responses
 * API's reasoning item and events. */
static void
test_reasoning(void **unused)
{
	static const struct openai_usage ru = { 5, 20, 0, 16, 1 };
	struct openai_request r;
	struct http_error err;
	struct openai_stream s;
	struct openai_meta m;
	struct openai_resp_meta rm;
	struct openai_resp_stream st;
	struct openai_choice c;
	struct ts_buf b;
	char seq[2048];

	(void)unused;
	assert_int_equal(parse(CHAT, "{'model':'tokstream-sim','messages':"
	    "[{'role':'user','content':'hi'}],'reasoning_effort':'low'}", &r,
	    &err), TS_OK);
	assert_int_equal(r.effort, THINK_EFFORT_LOW);
	openai_request_free(&r);
	assert_int_equal(parse(CHAT, "{'model':'tokstream-sim','messages':"
	    "[{'role':'user','content':'hi'}],'reasoning_effort':null}", &r,
	    &err), TS_OK);
	assert_int_equal(r.effort, THINK_EFFORT_UNSET);
	openai_request_free(&r);
	assert_int_equal(parse(CHAT, "{'model':'tokstream-sim','messages':"
	    "[{'role':'user','content':'hi'}],'reasoning_effort':'huge'}", &r,
	    &err), TS_EINVAL);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.param, "reasoning_effort");
	assert_string_equal(err.code, "invalid_value");
	assert_int_equal(parse(CHAT, "{'model':'tokstream-sim','messages':"
	    "[{'role':'user','content':'hi'}],'reasoning_effort':1}", &r,
	    &err), TS_EINVAL);
	assert_string_equal(err.param, "reasoning_effort");
	assert_int_equal(parse(RESP, "{'model':'tokstream-sim','input':'hi',"
	    "'reasoning':{'effort':'xhigh','summary':'detailed'}}", &r, &err),
	    TS_OK);
	assert_int_equal(r.effort, THINK_EFFORT_XHIGH);
	assert_int_equal(r.reasoning_summary, 3);
	openai_request_free(&r);
	assert_int_equal(parse(RESP, "{'model':'tokstream-sim','input':'hi',"
	    "'reasoning':{'summary':'long'}}", &r, &err), TS_EINVAL);
	assert_string_equal(err.param, "reasoning.summary");
	assert_int_equal(parse(RESP, "{'model':'tokstream-sim','input':'hi',"
	    "'reasoning':'high'}", &r, &err), TS_EINVAL);
	assert_string_equal(err.param, "reasoning");
	/* the budgets, capped by max_tokens as think_tokens does */
	assert_int_equal(think_effort_budget(THINK_EFFORT_MINIMAL, 0), 16);
	assert_int_equal(think_effort_budget(THINK_EFFORT_MEDIUM, 0), 256);
	assert_int_equal(think_effort_budget(THINK_EFFORT_HIGH, 0), 1024);
	assert_int_equal(think_effort_budget(THINK_EFFORT_MAX, 0), 4096);
	assert_int_equal(think_effort_budget(THINK_EFFORT_UNSET, 1), 256);
	assert_int_equal(think_tokens(think_effort_budget(THINK_EFFORT_HIGH,
	    0), 40), 39);
	assert_string_equal(think_effort_name(THINK_EFFORT_XHIGH), "xhigh");
	assert_null(think_effort_name(THINK_EFFORT_UNSET));

	/* chat chunks: the first with the role, content null */
	ts_buf_init(&b, 8192);
	meta(&m, CHAT);
	m.reasoning_field = NULL;
	openai_stream_init(&s, &m, 0);
	assert_int_equal(openai_encode_reasoning_chunk(&b, &s, T("hm"), NULL),
	    TS_OK);
	assert_int_equal(openai_encode_reasoning_chunk(&b, &s, T("\n"), NULL),
	    TS_OK);
	assert_int_equal(openai_encode_chunk(&b, &s, T("ok")), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "data: " CH_HEAD "\"choices\":[{\"index\":0,"
	    "\"delta\":{\"role\":\"assistant\",\"content\":null,\"reasoning\":"
	    "\"hm\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
	    "data: " CH_HEAD "\"choices\":[{\"index\":0,\"delta\":{"
	    "\"reasoning\":\"\\n\"},\"logprobs\":null,\"finish_reason\":null}]}"
	    "\n\ndata: " CH_HEAD "\"choices\":[{\"index\":0,\"delta\":{"
	    "\"content\":\"ok\"},\"logprobs\":null,\"finish_reason\":null}]}"
	    "\n\n");
	ts_buf_reset(&b);
	m.reasoning_field = "reasoning_content";
	openai_stream_init(&s, &m, 1);
	s.role_sent = 1;
	assert_int_equal(openai_encode_reasoning_chunk(&b, &s, T("x"), NULL),
	    TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_non_null(strstr(b.p, "\"delta\":{\"reasoning_content\":\"x\"},"));
	assert_non_null(strstr(b.p, "\"usage\":null}"));
	ts_buf_reset(&b);
	/* usage: completion_tokens_details when the request thinks */
	assert_int_equal(openai_encode_usage(&b, &s, &ru), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_non_null(strstr(b.p, "\"completion_tokens\":20,"
	    "\"total_tokens\":25,\"prompt_tokens_details\":{\"cached_tokens\":"
	    "0},\"completion_tokens_details\":{\"reasoning_tokens\":16}}"));
	ts_buf_reset(&b);
	/* the message: content, then the thinking's field */
	memset(&c, 0, sizeof(c));
	c.text = "ok";
	c.len = 2;
	c.x.reasoning = "hm";
	c.x.reasoning_len = 2;
	assert_int_equal(openai_encode_response_n(&b, &m, &c, 1, &ru), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_non_null(strstr(b.p, "\"message\":{\"role\":\"assistant\","
	    "\"content\":\"ok\",\"reasoning_content\":\"hm\",\"refusal\":null}"));
	/* not UTF-8: nothing appended, the role still to send */
	ts_buf_reset(&b);
	openai_stream_init(&s, &m, 0);
	assert_int_equal(openai_encode_reasoning_chunk(&b, &s, T("\xff"),
	    NULL), TS_EINVAL);
	assert_int_equal(b.len, 0);
	assert_false(s.role_sent);
	ts_buf_free(&b);

	/* Responses: the reasoning item's events, then the message at 1 */
	ts_buf_init(&b, 1u << 16);
	resp_meta(&rm);
	rm.reasoning = 1;
	rm.effort = "minimal";
	openai_resp_stream_init(&st, &rm);
	assert_int_equal(openai_resp_encode_start_reasoning(&b, &st), TS_OK);
	assert_int_equal(openai_resp_encode_reasoning_delta(&b, &st, T("h")),
	    TS_OK);
	assert_int_equal(openai_resp_encode_reasoning_done(&b, &st, T("h")),
	    TS_OK);
	assert_int_equal(openai_resp_encode_delta(&b, &st, T("ok")), TS_OK);
	st.meta.reasoning_text = "h";
	st.meta.reasoning_len = 1;
	assert_int_equal(openai_resp_encode_end(&b, &st, T("ok"),
	    OPENAI_FINISH_STOP, &ru), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	resp_events(b.p, seq, sizeof(seq));
	assert_string_equal(seq, "response.created:0 response.in_progress:1 "
	    "response.output_item.added:2 response.reasoning_text.delta:3 "
	    "response.reasoning_text.done:4 response.output_item.done:5 "
	    "response.output_item.added:6 response.content_part.added:7 "
	    "response.output_text.delta:8 response.output_text.done:9 "
	    "response.content_part.done:10 response.output_item.done:11 "
	    "response.completed:12");
	assert_non_null(strstr(b.p, "\"output_index\":0,\"item\":{\"id\":"
	    "\"rs_42\",\"type\":\"reasoning\",\"summary\":[],\"content\":[],"
	    "\"status\":\"in_progress\"}"));
	assert_non_null(strstr(b.p, "{\"type\":\"response.reasoning_text.delta"
	    "\",\"sequence_number\":3,\"item_id\":\"rs_42\",\"output_index\":0,"
	    "\"content_index\":0,\"delta\":\"h\"}"));
	assert_non_null(strstr(b.p, "\"item_id\":\"msg_42\",\"output_index\":1,"
	    "\"content_index\":0,\"delta\":\"ok\""));
	assert_non_null(strstr(b.p, "\"output\":[{\"id\":\"rs_42\",\"type\":"
	    "\"reasoning\",\"summary\":[],\"content\":[{\"type\":"
	    "\"reasoning_text\",\"text\":\"h\"}],\"status\":\"completed\"},{"
	    "\"type\":\"message\""));
	assert_non_null(strstr(b.p, "\"reasoning\":{\"effort\":\"minimal\","
	    "\"summary\":null}"));
	assert_non_null(strstr(b.p, "\"output_tokens_details\":{"
	    "\"reasoning_tokens\":16}"));
	/* with a summary: its part and text events */
	ts_buf_reset(&b);
	rm.summary = "auto";
	openai_resp_stream_init(&st, &rm);
	assert_int_equal(openai_resp_encode_start_reasoning(&b, &st), TS_OK);
	assert_int_equal(openai_resp_encode_reasoning_delta(&b, &st, T("h")),
	    TS_OK);
	assert_int_equal(openai_resp_encode_reasoning_done(&b, &st, T("h")),
	    TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	resp_events(b.p, seq, sizeof(seq));
	assert_string_equal(seq, "response.created:0 response.in_progress:1 "
	    "response.output_item.added:2 "
	    "response.reasoning_summary_part.added:3 "
	    "response.reasoning_summary_text.delta:4 "
	    "response.reasoning_summary_text.done:5 "
	    "response.reasoning_summary_part.done:6 "
	    "response.output_item.done:7 response.output_item.added:8 "
	    "response.content_part.added:9");
	assert_non_null(strstr(b.p, "\"summary_index\":0,\"delta\":\"h\""));
	assert_non_null(strstr(b.p, "\"item\":{\"id\":\"rs_42\",\"type\":"
	    "\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":"
	    "\"h\"}],\"status\":\"completed\"}"));
	ts_buf_free(&b);
}

/* ---- tools, formats, logprobs, n --------------------------------------- */

static void
test_parse_agent_fields(void **unused)
{
	struct openai_request r;
	struct http_error err;
	struct ts_buf b;

	(void)unused;
	assert_int_equal(parse(CHAT, "{" M "," U ",'tools':[{'type':'function',"
	    "'function':{'name':'a','parameters':{'type':'object'}}},"
	    "{'type':'function','function':{'name':'b'}}],'tool_choice':"
	    "{'type':'function','function':{'name':'b'}},"
	    "'parallel_tool_calls':false,'n':3,'logprobs':true,"
	    "'top_logprobs':20}", &r, &err), TS_OK);
	assert_int_equal(r.n_tools, 2);
	assert_string_equal(r.tools[1].name, "b");
	assert_true(json_is_object(r.tools[1].parameters));
	assert_int_equal(r.tool_choice, OPENAI_TOOL_NAMED);
	assert_int_equal(r.tool_named, 1);
	assert_int_equal(r.parallel_tool_calls, 0);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.logprobs, 1);
	assert_int_equal(r.top_logprobs, 20);
	assert_non_null(r.tools_json);
	openai_request_free(&r);
	/* the Responses API's flat tools and named choice; its history */
	assert_int_equal(parse(RESP, "{" M ",'tools':[{'type':'function',"
	    "'name':'f'}],'tool_choice':{'type':'function','name':'f'},"
	    "'input':[{'role':'user','content':'hi'},{'type':'function_call',"
	    "'call_id':'c1','name':'f','arguments':'{}'},{'type':"
	    "'function_call_output','call_id':'c1','output':'42'}]}", &r,
	    &err), TS_OK);
	assert_int_equal(r.tool_choice, OPENAI_TOOL_NAMED);
	assert_int_equal(r.n_messages, 3);
	assert_int_equal(r.messages[1].role, OPENAI_ROLE_ASSISTANT);
	assert_string_equal(r.messages[1].content,
	    "{\"name\":\"f\",\"arguments\":\"{}\"}");
	assert_int_equal(r.messages[2].role, OPENAI_ROLE_TOOL);
	assert_string_equal(r.messages[2].content, "42");
	openai_request_free(&r);
	/* a chat history of tool calls renders as prompt */
	assert_int_equal(parse(CHAT, "{" M ",'messages':[{'role':'user',"
	    "'content':'hi'},{'role':'assistant','content':null,'tool_calls':"
	    "[{'id':'c','type':'function','function':{'name':'f','arguments':"
	    "'{}'}}]},{'role':'tool','tool_call_id':'c','content':'42'}]}",
	    &r, &err), TS_OK);
	ts_buf_init(&b, 1 << 16);
	assert_int_equal(openai_chat_prompt(&r, &b), TS_OK);
	assert_string_equal(b.p, "<|user|>\nhi\n<|assistant|>\n[{\"id\":\"c\","
	    "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":"
	    "\"{}\"}}]\n<|tool|>\n42\n<|assistant|>\n");
	ts_buf_free(&b);
	openai_request_free(&r);
	/* response_format */
	assert_int_equal(parse(CHAT, "{" M "," U ",'response_format':{'type':"
	    "'json_schema','json_schema':{'name':'x','schema':{'type':"
	    "'integer'}}}}", &r, &err), TS_OK);
	assert_int_equal(r.format, OPENAI_FORMAT_JSON_SCHEMA);
	assert_true(json_is_object(r.format_schema));
	openai_request_free(&r);
	assert_int_equal(parse(CMPL, "{" M "," P ",'logprobs':5}", &r, &err),
	    TS_OK);
	assert_int_equal(r.logprobs, 1);
	assert_int_equal(r.top_logprobs, 5);
	openai_request_free(&r);
	assert_int_equal(parse(CMPL, "{" M "," P ",'logprobs':6}", &r, &err),
	    TS_EINVAL);
	assert_int_equal(parse(CMPL, "{" M "," P ",'tools':[]}", &r, &err),
	    TS_EINVAL);
	assert_string_equal(err.code, "unsupported_parameter");
}

/* Tool-call deltas and logprobs as OpenAI streams them. */
static void
test_encode_agent_chunks(void **unused)
{
	struct openai_stream s;
	struct openai_meta m;
	struct openai_lp_entry top[2] = { { "a", 1, -0.25 }, { "\xe2", 1,
	    -1.5 } };
	struct openai_lp_token t = { { "a", 1, -0.25 }, top, 2, 0 };
	struct openai_lp_src src;
	struct ts_buf b;

	(void)unused;
	meta(&m, CHAT);
	openai_stream_init(&s, &m, 0);
	ts_buf_init(&b, 1 << 16);
	assert_int_equal(openai_encode_tool_delta(&b, &s, 0, "call_x", "f",
	    "{\"a", 3, NULL), TS_OK);
	assert_string_equal(b.p, "data: " CH_HEAD "\"choices\":[{\"index\":0,"
	    "\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":"
	    "[{\"index\":0,\"id\":\"call_x\",\"type\":\"function\",\"function\":"
	    "{\"name\":\"f\",\"arguments\":\"\"}}]},\"logprobs\":null,"
	    "\"finish_reason\":null}]}\n\ndata: " CH_HEAD "\"choices\":[{"
	    "\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
	    "{\"arguments\":\"{\\\"a\"}}]},\"logprobs\":null,\"finish_reason\":"
	    "null}]}\n\n");
	openai_lp_src_array(&src, &t, 1);
	ts_buf_reset(&b);
	assert_int_equal(openai_encode_logprobs(&b, CHAT, &src), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "{\"content\":[{\"token\":\"a\",\"logprob\":"
	    "-0.25,\"bytes\":[97],\"top_logprobs\":[{\"token\":\"a\","
	    "\"logprob\":-0.25,\"bytes\":[97]},{\"token\":\"bytes:\\\\xe2\","
	    "\"logprob\":-1.5,\"bytes\":[226]}]}],\"refusal\":null}");
	ts_buf_reset(&b);
	assert_int_equal(openai_encode_logprobs(&b, CMPL, &src), TS_OK);
	assert_int_equal(ts_buf_append(&b, "", 1), TS_OK);
	assert_string_equal(b.p, "{\"tokens\":[\"a\"],\"token_logprobs\":[-0.25],"
	    "\"top_logprobs\":[{\"a\":-0.25,\"bytes:\\\\xe2\":-1.5}],"
	    "\"text_offset\":[0]}");
	/* with the chunk that carries them */
	ts_buf_reset(&b);
	assert_int_equal(openai_encode_chunk_lp(&b, &s, T("a"), &src), TS_OK);
	assert_non_null(strstr(b.p, "\"delta\":{\"content\":\"a\"},\"logprobs\":"
	    "{\"content\":[{\"token\":\"a\""));
	ts_buf_free(&b);
}

/* ---- the direct encoders against jansson --------------------------------- */

/*
 * The reference: the logprobs object as tokstream built it before it was
 * written directly, a jansson tree dumped with JSON_COMPACT. The direct
 * encoder must give the same bytes.
 */
static json_t *
ref_token_string(const char *p, size_t len)
{
	json_t *j = json_stringn(p, len);
	char buf[4 * 64 + 8];
	size_t i, at;

	if (j != NULL)
		return j;
	at = (size_t)snprintf(buf, sizeof(buf), "bytes:");
	for (i = 0; i < len && at + 5 < sizeof(buf); i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "\\x%02x",
		    (unsigned char)p[i]);
	return json_stringn(buf, at);
}

static json_t *
ref_entry(const struct openai_lp_entry *e)
{
	json_t *o = json_object(), *a = json_array();
	size_t i;

	for (i = 0; i < e->len; i++)
		json_array_append_new(a, json_integer((unsigned char)e->text[i]));
	json_object_set_new(o, "token", ref_token_string(e->text, e->len));
	json_object_set_new(o, "logprob", json_real(e->logprob));
	json_object_set_new(o, "bytes", a);
	return o;
}

static char *
ref_logprobs(enum openai_kind kind, const struct openai_lp_token *t,
    size_t n)
{
	json_t *o = json_object();
	size_t i, j;
	char *d;

	if (kind == CHAT) {
		json_t *content = json_array();

		for (i = 0; i < n; i++) {
			json_t *e = ref_entry(&t[i].tok), *top = json_array();

			for (j = 0; j < t[i].ntop; j++)
				json_array_append_new(top,
				    ref_entry(&t[i].top[j]));
			json_object_set_new(e, "top_logprobs", top);
			json_array_append_new(content, e);
		}
		json_object_set_new(o, "content", content);
		json_object_set_new(o, "refusal", json_null());
	} else {
		json_t *toks = json_array(), *lps = json_array();
		json_t *tops = json_array(), *offs = json_array();

		for (i = 0; i < n; i++) {
			json_t *top = json_object();

			for (j = 0; j < t[i].ntop; j++) {
				json_t *k = ref_token_string(t[i].top[j].text,
				    t[i].top[j].len);

				json_object_set_new(top, json_string_value(k),
				    json_real(t[i].top[j].logprob));
				json_decref(k);
			}
			json_array_append_new(toks, ref_token_string(
			    t[i].tok.text, t[i].tok.len));
			json_array_append_new(lps, json_real(t[i].tok.logprob));
			json_array_append_new(tops, top);
			json_array_append_new(offs, json_integer(
			    (json_int_t)t[i].text_offset));
		}
		json_object_set_new(o, "tokens", toks);
		json_object_set_new(o, "token_logprobs", lps);
		json_object_set_new(o, "top_logprobs", tops);
		json_object_set_new(o, "text_offset", offs);
	}
	d = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return d;
}

/* xorshift64*, for the generated inputs */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* A token text of 0..12 bytes drawn from the bytes that matter: ASCII,
 * quote, backslash, control characters, NUL, UTF-8 pieces, invalid
 * bytes; often a whole character or a repeat of one of few texts (so
 * completions keys repeat). */
static size_t
rnd_text(uint64_t *s, char *out)
{
	static const char *const pool[] = { "a", " the", "\"", "\\", "\n",
	    "\x01", "\x1f", "", "\x7f", "\xe2\x80\xa8", "\xc3\xa9",
	    "\xe2", "\x80", "\xff", "\xf0\x9f\x98\x80", "a\0b", "\t\r" };
	size_t n = 0, k, i;
	uint64_t r = rnd(s);

	if (r % 3 == 0) {
		size_t w = (size_t)((r >> 8) % (sizeof(pool) /
		    sizeof(pool[0])));
		const char *p = pool[w];
		/* "a\0b" is 3 bytes */
		size_t len = w == 15 ? 3 : strlen(p);

		memcpy(out, p, len);
		return len;
	}
	k = (size_t)((r >> 4) % 13);
	for (i = 0; i < k; i++) {
		r = rnd(s);
		out[n++] = (char)(r % 4 == 0 ? (r >> 8) % 32 : r % 4 == 1 ?
		    0x80 + (r >> 8) % 128 : 0x20 + (r >> 8) % 96);
	}
	return n;
}

/* A logprob: small and large exponents, integral values, -0, the
 * masked -9999, floats widened to double as the engine gives them. */
static double
rnd_real(uint64_t *s)
{
	static const double fixed[] = { 0.0, -0.0, -9999.0, -1.0, -0.5,
	    -1e-5, -1e-300, -5e-324, -1e20, -1e21, -123456789012345678.0,
	    -1.7976931348623157e308, -2.2250738585072014e-308, -0.1 };
	uint64_t r = rnd(s);
	double m;

	if (r % 4 == 0)
		return fixed[(r >> 8) % (sizeof(fixed) / sizeof(fixed[0]))];
	m = (double)(r >> 11) / (double)(1ULL << 53);
	if (r % 4 == 1)
		return -(double)(float)(m * 30.0);
	return -m * pow(10.0, (double)((int)((r >> 3) % 80) - 40));
}

static void
test_logprobs_match_jansson(void **unused)
{
	char texts[21][16][13];
	struct openai_lp_entry top[16][20];
	struct openai_lp_token t[16];
	struct openai_lp_src src;
	struct ts_buf b;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	int round, kind;

	(void)unused;
	ts_buf_init(&b, 1u << 20);
	for (round = 0; round < 3000; round++) {
		size_t n = (size_t)(rnd(&seed) % 6), i, j;
		size_t k = (size_t)(rnd(&seed) % 21);
		char *want;

		for (i = 0; i < n; i++) {
			t[i].tok.len = rnd_text(&seed, texts[0][i]);
			t[i].tok.text = texts[0][i];
			t[i].tok.logprob = rnd_real(&seed);
			for (j = 0; j < k; j++) {
				top[i][j].len = rnd_text(&seed,
				    texts[1 + j][i]);
				top[i][j].text = texts[1 + j][i];
				top[i][j].logprob = rnd_real(&seed);
			}
			t[i].top = top[i];
			t[i].ntop = k;
			t[i].text_offset = (size_t)(rnd(&seed) % 100000);
		}
		openai_lp_src_array(&src, t, n);
		for (kind = 0; kind < 2; kind++) {
			enum openai_kind kd = kind ? CHAT : CMPL;

			want = ref_logprobs(kd, t, n);
			assert_non_null(want);
			ts_buf_reset(&b);
			assert_int_equal(openai_encode_logprobs(&b, kd, &src),
			    TS_OK);
			if (b.len != strlen(want) ||
			    memcmp(b.p, want, b.len) != 0)
				fail_msg("round %d kind %d:\n want %s\n got  %.*s",
				    round, kind, want, (int)b.len, b.p);
			free(want);
		}
	}
	/* not finite: refused, nothing appended */
	t[0].tok.text = "a";
	t[0].tok.len = 1;
	t[0].tok.logprob = NAN;
	t[0].ntop = 0;
	openai_lp_src_array(&src, t, 1);
	ts_buf_reset(&b);
	assert_int_equal(openai_encode_logprobs(&b, CHAT, &src), TS_EINVAL);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
}

/* The direct encoders' idea of UTF-8 is jansson's: every string of one
 * to three bytes, and four-byte ones from each lead byte, valid for one
 * exactly when valid for the other (a chunk of text jansson refused
 * must still be refused, and the other way round). */
static void
test_utf8_as_jansson(void **unused)
{
	struct openai_stream s;
	struct openai_meta m;
	struct ts_buf b;
	unsigned char p[4];
	uint32_t x;
	uint64_t seed = 7;
	int len;

	(void)unused;
	meta(&m, CMPL);
	openai_stream_init(&s, &m, 0);
	ts_buf_init(&b, 1u << 16);
	for (len = 1; len <= 4; len++) {
		uint32_t lim = len == 1 ? 0x100 : len == 2 ? 0x10000 :
		    len == 3 ? 0x1000000 : 0x100000;

		for (x = 0; x < lim; x++) {
			json_t *j;
			int want, got;

			if (len == 3 && (x >> 16) < 0xc0 && x % 251 != 0)
				continue;       /* lead bytes that fail early */
			if (len == 4) {
				uint64_t r = rnd(&seed);

				p[0] = (unsigned char)(0xe8 + x % 24);
				p[1] = (unsigned char)(r >> 8);
				p[2] = (unsigned char)(r >> 16);
				p[3] = (unsigned char)(r >> 24);
				if (x % 2)
					p[1] = (unsigned char)(0x80 +
					    (r >> 32) % 64);
			} else {
				int at;

				for (at = 0; at < len; at++)
					p[at] = (unsigned char)(x >> (8 *
					    (len - 1 - at)));
			}
			j = json_stringn((const char *)p, (size_t)len);
			want = j != NULL;
			json_decref(j);
			ts_buf_reset(&b);
			got = openai_encode_chunk(&b, &s, (const char *)p,
			    (size_t)len) == TS_OK;
			if (want != got)
				fail_msg("%d bytes %02x %02x %02x %02x: jansson "
				    "%d, tokstream %d", len, p[0], p[1], p[2],
				    p[3], want, got);
		}
	}
	ts_buf_free(&b);
}


/* ---- vLLM's /tokenize and /detokenize (openai/tokenize.h) ---------------- */

/* POST /tokenize bodies: status, code and param of each refusal, or 0. */
static void
test_tokenize_parse(void **unused)
{
	static const struct {
		const char *body;
		int status;
		const char *code, *param;
	} rows[] = {
		{ "", 400, "empty_body", NULL },
		{ "[1]", 400, "invalid_json", NULL },
		{ "{'model':5,'prompt':'x'}", 400, "invalid_type", "model" },
		{ "{'model':'tokstream-sim'}", 400,
		    "missing_required_parameter", "prompt" },
		{ "{'prompt':5}", 400, "invalid_type", "prompt" },
		{ "{'prompt':'x','add_special_tokens':1}", 400, "invalid_type",
		    "add_special_tokens" },
		{ "{'prompt':'x','return_token_strs':'yes'}", 400,
		    "invalid_type", "return_token_strs" },
		{ "{'messages':[]}", 400, "empty_array", "messages" },
		{ "{'messages':[{'role':'user','content':'x'}],"
		    "'add_generation_prompt':true,'continue_final_message':true}",
		    400, "invalid_value", "continue_final_message" },
		{ "{'messages':[{'role':'user','content':'x'}],"
		    "'chat_template':'{{x}}'}", 400, "unsupported_parameter",
		    "chat_template" },
		{ "{'model':'other','prompt':'x'}", 404, "model_not_found",
		    NULL },
		{ "{'prompt':'x'}", 0, NULL, NULL },
		{ "{'model':null,'prompt':'x'}", 0, NULL, NULL },
		{ "{'model':'tokstream-sim','messages':[{'role':'user',"
		    "'content':'x'}],'chat_template':null,"
		    "'chat_template_kwargs':{'a':1}}", 0, NULL, NULL },
	};
	size_t i, len;

	for (i = 0; i < N(rows); i++) {
		struct openai_tokenize t;
		struct http_error err;
		char *b = q(rows[i].body, &len);
		enum ts_err rc = openai_parse_tokenize(b, len, served, 1, &t,
		    &err);

		if (rows[i].status == 0) {
			CHECK(i, rc == TS_OK);
			openai_tokenize_free(&t);
		} else {
			CHECK(i, rc != TS_OK);
			CHECK(i, err.status == rows[i].status);
			CHECK(i, strcmp(err.code, rows[i].code) == 0);
			CHECK(i, rows[i].param == NULL ? err.param[0] == '\0' :
			    strcmp(err.param, rows[i].param) == 0);
		}
		free(b);
	}
}

/* The defaults and the text each kind of body tokenizes. */
static void
test_tokenize_text(void **unused)
{
	static const struct {
		const char *body;
		int special, strs;
		const char *text;
	} rows[] = {
		{ "{'prompt':'Hi there'}", 1, 0, "Hi there" },
		{ "{'prompt':'Hi','add_special_tokens':false,"
		    "'return_token_strs':true}", 0, 1, "Hi" },
		{ "{'messages':[{'role':'user','content':'hi'}]}", 0, 0,
		    "<|user|>\nhi\n<|assistant|>\n" },
		{ "{'messages':[{'role':'user','content':'hi'}],"
		    "'add_generation_prompt':false}", 0, 0, "<|user|>\nhi\n" },
		{ "{'messages':[{'role':'user','content':'hi'},{'role':"
		    "'assistant','content':'Hel'}],'continue_final_message':"
		    "true}", 0, 0, "<|user|>\nhi\n<|assistant|>\nHel" },
	};
	size_t i, len;

	for (i = 0; i < N(rows); i++) {
		struct openai_tokenize t;
		struct http_error err;
		struct ts_buf b;
		char *body = q(rows[i].body, &len);

		CHECK(i, openai_parse_tokenize(body, len, served, 1, &t,
		    &err) == TS_OK);
		CHECK(i, t.add_special_tokens == rows[i].special);
		CHECK(i, t.return_token_strs == rows[i].strs);
		ts_buf_init(&b, 1024);
		CHECK(i, openai_tokenize_text(&t, &b) == TS_OK);
		CHECK(i, b.len == strlen(rows[i].text) &&
		    memcmp(b.p, rows[i].text, b.len) == 0);
		ts_buf_free(&b);
		openai_tokenize_free(&t);
		free(body);
	}
}

static void
test_detokenize_parse(void **unused)
{
	static const struct {
		const char *body;
		int status;
		const char *param;
		size_t n;
	} rows[] = {
		{ "{}", 400, "tokens", 0 },
		{ "{'tokens':'1 2'}", 400, "tokens", 0 },
		{ "{'tokens':[1,'2']}", 400, "tokens[1]", 0 },
		{ "{'tokens':[1.5]}", 400, "tokens[0]", 0 },
		{ "{'tokens':[-1]}", 400, "tokens[0]", 0 },
		{ "{'tokens':[4294967295]}", 400, "tokens", 0 },
		{ "{'tokens':[1],'model':'x'}", 404, "", 0 },
		{ "{'tokens':[1],'model':7}", 400, "model", 0 },
		{ "{'tokens':[]}", 0, NULL, 0 },
		{ "{'tokens':[0,4294967294,7],'model':'tokstream-sim'}", 0,
		    NULL, 3 },
	};
	size_t i, len, n;

	for (i = 0; i < N(rows); i++) {
		struct http_error err;
		uint32_t *ids = NULL;
		char *b = q(rows[i].body, &len);
		enum ts_err rc = openai_parse_detokenize(b, len, served, 1,
		    &ids, &n, &err);

		if (rows[i].status == 0) {
			CHECK(i, rc == TS_OK);
			CHECK(i, n == rows[i].n);
		} else {
			CHECK(i, rc != TS_OK);
			CHECK(i, ids == NULL);
			CHECK(i, err.status == rows[i].status);
			CHECK(i, strcmp(err.param, rows[i].param) == 0);
		}
		if (rows[i].n == 3)
			CHECK(i, ids[0] == 0 && ids[1] == 4294967294u &&
			    ids[2] == 7);
		free(ids);
		free(b);
	}
}

/* token_strs' texts for test_tokenize_encode: id 9 is not UTF-8 alone. */
static const char *
enc_text(void *ctx, uint32_t id, size_t *len)
{
	(void)ctx;
	if (id == 9) {
		*len = 1;
		return "\xe2";
	}
	*len = id == 1 ? 3 : 2;
	return id == 1 ? "a\"b" : "\n!";
}

static void
test_tokenize_encode(void **unused)
{
	static const uint32_t ids[] = { 1, 2, 9 };
	struct openai_tokens t = { ids, 3, 256, NULL, NULL };
	struct ts_buf b;

	ts_buf_init(&b, 4096);
	assert_int_equal(openai_encode_tokenize(&b, &t), TS_OK);
	assert_string_equal(b.p, "{\"count\":3,\"max_model_len\":256,"
	    "\"tokens\":[1,2,9],\"token_strs\":null}");
	assert_true(b.len <= openai_tokenize_bound(3, 0, 0));
	ts_buf_reset(&b);
	t.text = enc_text;
	assert_int_equal(openai_encode_tokenize(&b, &t), TS_OK);
	assert_string_equal(b.p, "{\"count\":3,\"max_model_len\":256,"
	    "\"tokens\":[1,2,9],\"token_strs\":[\"a\\\"b\",\"\\n!\","
	    "\"bytes:\\\\xe2\"]}");
	assert_true(b.len <= openai_tokenize_bound(3, 6, 1));
	ts_buf_reset(&b);
	t.n = 0;
	assert_int_equal(openai_encode_tokenize(&b, &t), TS_OK);
	assert_string_equal(b.p, "{\"count\":0,\"max_model_len\":256,"
	    "\"tokens\":[],\"token_strs\":[]}");
	ts_buf_reset(&b);
	assert_int_equal(openai_encode_detokenize(&b, T("a\"\xef\xbf\xbd")),
	    TS_OK);
	assert_string_equal(b.p, "{\"prompt\":\"a\\\"\xef\xbf\xbd\"}");
	ts_buf_reset(&b);
	assert_int_equal(openai_encode_detokenize(&b, T("\xe2")), TS_EINVAL);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
	/* full: nothing appended */
	ts_buf_init(&b, 10);
	t.n = 3;
	assert_int_equal(openai_encode_tokenize(&b, &t), TS_ELIMIT);
	assert_int_equal(b.len, 0);
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
		cmocka_unit_test(test_responses_encode),
		cmocka_unit_test(test_reasoning),
		cmocka_unit_test(test_chat_prompt),
		cmocka_unit_test(test_parse_agent_fields),
		cmocka_unit_test(test_encode_agent_chunks),
		cmocka_unit_test(test_logprobs_match_jansson),
		cmocka_unit_test(test_utf8_as_jansson),
		cmocka_unit_test(test_tokenize_parse),
		cmocka_unit_test(test_tokenize_text),
		cmocka_unit_test(test_detokenize_parse),
		cmocka_unit_test(test_tokenize_encode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
