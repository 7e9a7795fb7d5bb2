/*
 * test_responses.c - the Responses API's encoders (src/openai/
 * responses.h: the response object, its named SSE events and their
 * sequence numbers) and reasoning on every OpenAI endpoint (text/think.h:
 * reasoning_effort and reasoning {effort, summary} parsed and refused,
 * chat's thinking chunks, message field and usage, the Responses API's
 * reasoning item and events).
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

#include "openai_fixtures.h"

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
	/* an earlier response's reasoning item sent back in input (the
	 * multi-turn pattern): accepted and left out of the prompt, the
	 * other items in order; input of reasoning items only is a 400 */
	assert_int_equal(parse(RESP, "{'model':'tokstream-sim','input':["
	    "{'role':'user','content':'q'},{'type':'reasoning','id':'rs_1',"
	    "'summary':[{'type':'summary_text','text':'t'}]},{'type':"
	    "'message','role':'assistant','content':'a'},{'role':'user',"
	    "'content':'q2'}]}", &r, &err), TS_OK);
	assert_int_equal(r.n_messages, 3);
	assert_int_equal(r.messages[0].role, OPENAI_ROLE_USER);
	assert_string_equal(r.messages[0].content, "q");
	assert_int_equal(r.messages[1].role, OPENAI_ROLE_ASSISTANT);
	assert_string_equal(r.messages[1].content, "a");
	assert_int_equal(r.messages[2].role, OPENAI_ROLE_USER);
	assert_string_equal(r.messages[2].content, "q2");
	openai_request_free(&r);
	assert_int_equal(parse(RESP, "{'model':'tokstream-sim','input':["
	    "{'type':'reasoning','id':'rs_1','summary':[]}]}", &r, &err),
	    TS_EINVAL);
	assert_string_equal(err.param, "input");
	assert_int_equal(parse(CHAT, "{'model':'tokstream-sim','messages':["
	    "{'type':'reasoning','summary':[]},{'role':'user','content':"
	    "'q'}]}", &r, &err), TS_EINVAL);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_responses_encode),
		cmocka_unit_test(test_reasoning),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
