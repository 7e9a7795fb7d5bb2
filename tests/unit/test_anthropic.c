/*
 * test_anthropic.c - unit tests of Anthropic's Messages API layer
 * (src/anthropic/: the request parser, the prompt it renders, the
 * encoders of the Message object, its events and errors, ids and
 * signatures, the tool_use plan) and of the thinking phase it streams
 * (text/think.h, with the sampling's min_tokens in the simulator).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <string.h>

#include "anthropic/encode.h"
#include "anthropic/parse.h"
#include "anthropic/plan.h"
#include "common/buf.h"
#include "common/ts.h"
#include "proto/chat.h"
#include "sim/lm.h"
#include "sim/vocab.h"
#include "text/think.h"

static const char *const models[] = { "tokstream-sim", "alias" };

/* Parses body (NUL-terminated) as /v1/messages (count: count_tokens). */
static enum ts_err
parse(const char *body, int count, struct anthropic_request *req,
    struct http_error *err)
{
	return anthropic_parse_request(body, strlen(body), count, models, 2,
	    req, err);
}

/* Parses a body that must be refused with `status`, its message holding
 * `needle`. */
static void
refused(const char *body, int status, const char *needle)
{
	struct anthropic_request req;
	struct http_error err;

	memset(&err, 0, sizeof(err));
	if (parse(body, 0, &req, &err) == TS_OK) {
		anthropic_request_free(&req);
		fail_msg("accepted: %s", body);
	}
	if (err.status != status || strstr(err.message, needle) == NULL)
		fail_msg("%s: %d %s (wanted %d, \"%s\")", body, err.status,
		    err.message, status, needle);
	assert_null(req.messages);
	assert_null(req.tools);
}

static void
test_parse_fields(void **state)
{
	struct anthropic_request req;
	struct http_error err;

	(void)state;
	assert_int_equal(parse("{\"model\":\"alias\",\"max_tokens\":7,"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	    "\"system\":\"be brief\",\"stop_sequences\":[\"x\",\"yz\"],"
	    "\"temperature\":0.25,\"top_p\":0.5,\"top_k\":3,\"stream\":true,"
	    "\"metadata\":{\"user_id\":\"u\"},\"tpot_ms\":9,"
	    "\"unknown_field\":1}", 0, &req, &err), TS_OK);
	assert_int_equal(req.max_tokens, 7);
	assert_int_equal(req.n_messages, 1);
	assert_int_equal(req.messages[0].role, CHAT_ROLE_USER);
	assert_string_equal(req.messages[0].text, "hi");
	assert_string_equal(req.system, "be brief");
	assert_int_equal(req.n_stop, 2);
	assert_string_equal(req.stop[1], "yz");
	assert_true(req.temperature == 0.25);
	assert_true(req.top_p == 0.5);
	assert_int_equal(req.top_k, 3);
	assert_int_equal(req.stream, 1);
	assert_int_equal(req.knobs.tpot_ms, 9);
	assert_int_equal(req.thinking_budget, 0);
	anthropic_request_free(&req);

	/* count_tokens takes no max_tokens */
	assert_int_equal(parse("{\"model\":\"tokstream-sim\",\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}]}", 1, &req, &err), TS_OK);
	anthropic_request_free(&req);
}

static void
test_parse_refusals(void **state)
{
	(void)state;
	refused("", 400, "empty");
	refused("{\"model\":", 400, "JSON");
	refused("[]", 400, "object");
	refused("{\"model\":\"tokstream-sim\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"hi\"}]}", 400, "max_tokens");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":0,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}]}", 400, "max_tokens");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":8193,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}]}", 400, "max_tokens");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":5}", 400,
	    "messages");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":5,\"messages\":"
	    "[]}", 400, "messages");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":5,\"messages\":"
	    "[{\"role\":\"robot\",\"content\":\"hi\"}]}", 400, "role");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":5,\"messages\":"
	    "[{\"role\":\"user\",\"content\":[{\"type\":\"image\","
	    "\"source\":{}}]}]}", 400, "image");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":5,\"messages\":"
	    "[{\"role\":\"user\",\"content\":[{\"type\":\"video\"}]}]}", 400,
	    "unknown");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":5,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"temperature\":1.5}",
	    400, "temperature");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":5,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"stop_sequences\":"
	    "[\"a\",\"b\",\"c\",\"d\",\"e\"]}", 400, "stop_sequences");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":5,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"stop_sequences\":"
	    "[\"\"]}", 400, "stop_sequences");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":5,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"thinking\":{\"type\":"
	    "\"enabled\",\"budget_tokens\":5}}", 400, "budget_tokens");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":50,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"name\":"
	    "\"f\",\"input_schema\":{\"type\":\"object\"}}],\"tool_choice\":"
	    "{\"type\":\"any\"},\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":5}}", 400, "Thinking");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":50,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"name\":"
	    "\"f\",\"input_schema\":{\"type\":\"object\"}}],\"tool_choice\":"
	    "{\"type\":\"tool\",\"name\":\"g\"}}", 400, "no tool named");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":50,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"name\":"
	    "\"bad name\",\"input_schema\":{\"type\":\"object\"}}]}", 400,
	    "name");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":50,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"name\":"
	    "\"f\"}]}", 400, "input_schema");
	refused("{\"model\":\"tokstream-sim\",\"max_tokens\":50,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"name\":"
	    "\"f\",\"input_schema\":{\"type\":\"string\"}}]}", 400,
	    "'object'");
	/* the model last: malformed is a 400 before an unknown model's
	 * 404 */
	refused("{\"model\":\"claude-x\",\"max_tokens\":5,\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"hi\"}]}", 404, "claude-x");
	refused("{\"model\":\"claude-x\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"hi\"}]}", 400, "max_tokens");
}

/* Content blocks are rendered into the prompt: text, tool_use as its
 * JSON, tool_result as its text (a "tool" turn), thinking left out; the
 * prompt is the chat template's rendering of those messages. */
static void
test_prompt(void **state)
{
	struct anthropic_request req;
	struct http_error err;
	struct ts_buf got, want;
	static const char tools[] = "[{\"name\":\"f\",\"input_schema\":"
	    "{\"type\":\"object\"}}]";
	struct chat_msg msgs[4] = {
		{ CHAT_ROLE_SYSTEM, "s1\ns2", 5 },
		{ CHAT_ROLE_USER, "a\nb", 3 },
		{ CHAT_ROLE_ASSISTANT, "{\"type\":\"tool_use\",\"id\":\"t1\","
		    "\"name\":\"f\",\"input\":{}}", 0 },
		{ CHAT_ROLE_TOOL, "r1\nr2", 5 },
	};

	(void)state;
	msgs[2].len = strlen(msgs[2].content);
	assert_int_equal(parse("{\"model\":\"tokstream-sim\",\"max_tokens\":5,"
	    "\"system\":[{\"type\":\"text\",\"text\":\"s1\"},{\"type\":"
	    "\"text\",\"text\":\"s2\"}],\"tools\":[{\"name\":\"f\","
	    "\"input_schema\":{\"type\":\"object\"}}],\"messages\":["
	    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
	    "\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
	    "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\","
	    "\"thinking\":\"hm\",\"signature\":\"x\"},{\"type\":\"tool_use\","
	    "\"id\":\"t1\",\"name\":\"f\",\"input\":{}}]},"
	    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
	    "\"tool_use_id\":\"t1\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"r1\"}]},{\"type\":\"text\",\"text\":\"r2\"}]}]}", 0,
	    &req, &err), TS_OK);
	assert_int_equal(req.messages[2].tool_result, 1);
	ts_buf_init(&got, 1 << 16);
	ts_buf_init(&want, 1 << 16);
	assert_int_equal(anthropic_prompt(&req, &got), TS_OK);
	assert_int_equal(chat_render_tools(tools, strlen(tools), &want), TS_OK);
	assert_int_equal(chat_render(msgs, 4, &want), TS_OK);
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.p, want.p, got.len);
	anthropic_request_free(&req);
	ts_buf_free(&got);
	ts_buf_free(&want);
}

/* Parses the JSON text of b from `at`; fails the test if it is not. */
static json_t *
json_at(const struct ts_buf *b, size_t at)
{
	json_error_t e;
	json_t *v = json_loadb(b->p + at, b->len - at, 0, &e);

	if (v == NULL)
		fail_msg("not JSON (%s): %.*s", e.text, (int)(b->len - at),
		    b->p + at);
	return v;
}

static void
test_encode_message(void **state)
{
	struct anthropic_meta m = { "msg_x", "tokstream-sim", 13 };
	struct anthropic_usage u = { 3, 16, 0, 9, 4 };
	struct anthropic_block blk[2];
	struct ts_buf b;
	json_t *v;
	char *s;

	(void)state;
	memset(blk, 0, sizeof(blk));
	blk[0].kind = ANTHROPIC_BLOCK_THINKING;
	blk[0].text = "hm \"q\"\n";
	blk[0].len = strlen(blk[0].text);
	blk[0].signature = "sig";
	blk[1].kind = ANTHROPIC_BLOCK_TEXT;
	blk[1].text = "hi";
	blk[1].len = 2;
	ts_buf_init(&b, 1 << 16);
	assert_int_equal(anthropic_encode_message(&b, &m, blk, 2,
	    ANTHROPIC_STOP_SEQUENCE, "zz", 2, &u), TS_OK);
	/* jansson's own compact dump of the same value is the same text */
	v = json_at(&b, 0);
	s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(s, "{\"id\":\"msg_x\",\"type\":\"message\","
	    "\"role\":\"assistant\",\"model\":\"tokstream-sim\",\"content\":["
	    "{\"type\":\"thinking\",\"thinking\":\"hm \\\"q\\\"\\n\","
	    "\"signature\":\"sig\"},{\"type\":\"text\",\"text\":\"hi\"}],"
	    "\"stop_reason\":\"stop_sequence\",\"stop_sequence\":\"zz\","
	    "\"stop_details\":null,\"container\":null,\"diagnostics\":null,"
	    "\"usage\":{\"input_tokens\":3,\"cache_creation_input_tokens\":0,"
	    "\"cache_read_input_tokens\":16,\"cache_creation\":{"
	    "\"ephemeral_5m_input_tokens\":0,\"ephemeral_1h_input_tokens\":0},"
	    "\"output_tokens\":9,\"output_tokens_details\":{"
	    "\"thinking_tokens\":4},\"server_tool_use\":null,"
	    "\"service_tier\":\"standard\",\"inference_geo\":null,"
	    "\"speed\":null}}");
	assert_int_equal(strlen(s), b.len);
	free(s);
	json_decref(v);

	/* a tool_use: its input as it is when whole, {} when cut */
	blk[0].kind = ANTHROPIC_BLOCK_TOOL_USE;
	blk[0].id = "toolu_1";
	blk[0].name = "f";
	blk[0].text = "{\"a\":[1,2]}";
	blk[0].len = strlen(blk[0].text);
	b.len = 0;
	assert_int_equal(anthropic_encode_message(&b, &m, blk, 1,
	    ANTHROPIC_STOP_TOOL_USE, NULL, 0, &u), TS_OK);
	assert_non_null(strstr(b.p, "\"content\":[{\"type\":\"tool_use\","
	    "\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{\"a\":[1,2]},"
	    "\"caller\":{\"type\":\"direct\"}}],"
	    "\"stop_reason\":\"tool_use\",\"stop_sequence\":null"));
	blk[0].len = 6;
	b.len = 0;
	assert_int_equal(anthropic_encode_message(&b, &m, blk, 1,
	    ANTHROPIC_STOP_MAX_TOKENS, NULL, 0, &u), TS_OK);
	assert_non_null(strstr(b.p, "\"input\":{},\"caller\""));

	/* text that is not UTF-8: refused, nothing appended */
	blk[1].text = "\xff";
	blk[1].len = 1;
	b.len = 0;
	assert_int_equal(anthropic_encode_message(&b, &m, blk + 1, 1,
	    ANTHROPIC_STOP_END_TURN, NULL, 0, &u), TS_EINVAL);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
}

/* One event's name and data: "event: NAME\ndata: JSON\n\n". */
static json_t *
event(const struct ts_buf *b, size_t *at, const char *name)
{
	const char *p = b->p + *at, *nl, *end;
	json_error_t e;
	json_t *v;

	assert_true(strncmp(p, "event: ", 7) == 0);
	nl = strchr(p, '\n');
	assert_int_equal((size_t)(nl - p - 7), strlen(name));
	assert_memory_equal(p + 7, name, strlen(name));
	assert_true(strncmp(nl + 1, "data: ", 6) == 0);
	end = strstr(nl + 7, "\n\n");
	assert_non_null(end);
	v = json_loadb(nl + 7, (size_t)(end - nl - 7), 0, &e);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "type")),
	    name);
	*at = (size_t)(end + 2 - b->p);
	return v;
}

static void
test_encode_events(void **state)
{
	struct anthropic_meta m = { "msg_y", "m", 1 };
	struct anthropic_usage u = { 10, 0, 0, 4, 1 };
	struct anthropic_block blk;
	struct http_error err;
	struct ts_buf b;
	size_t at = 0;
	json_t *v;

	(void)state;
	memset(&blk, 0, sizeof(blk));
	blk.kind = ANTHROPIC_BLOCK_THINKING;
	ts_buf_init(&b, 1 << 16);
	assert_int_equal(anthropic_encode_message_start(&b, &m, &u), TS_OK);
	assert_int_equal(anthropic_encode_ping(&b), TS_OK);
	assert_int_equal(anthropic_encode_block_start(&b, 0, &blk), TS_OK);
	assert_int_equal(anthropic_encode_delta(&b, 0,
	    ANTHROPIC_BLOCK_THINKING, "t", 1), TS_OK);
	assert_int_equal(anthropic_encode_signature(&b, 0, "S"), TS_OK);
	assert_int_equal(anthropic_encode_block_stop(&b, 0), TS_OK);
	assert_int_equal(anthropic_encode_delta(&b, 1,
	    ANTHROPIC_BLOCK_TOOL_USE, "{\"a", 3), TS_OK);
	assert_int_equal(anthropic_encode_end(&b, ANTHROPIC_STOP_END_TURN,
	    NULL, 0, &u, NULL), TS_OK);

	v = event(&b, &at, "message_start");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_object_get(v, "message"), "usage"), "output_tokens")), 0);
	assert_int_equal(json_array_size(json_object_get(json_object_get(v,
	    "message"), "content")), 0);
	assert_true(json_is_null(json_object_get(json_object_get(v,
	    "message"), "stop_reason")));
	json_decref(v);
	json_decref(event(&b, &at, "ping"));
	v = event(&b, &at, "content_block_start");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    v, "content_block"), "signature")), "");
	json_decref(v);
	v = event(&b, &at, "content_block_delta");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    v, "delta"), "thinking")), "t");
	json_decref(v);
	v = event(&b, &at, "content_block_delta");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    v, "delta"), "type")), "signature_delta");
	json_decref(v);
	json_decref(event(&b, &at, "content_block_stop"));
	v = event(&b, &at, "content_block_delta");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    v, "delta"), "partial_json")), "{\"a");
	assert_int_equal(json_integer_value(json_object_get(v, "index")), 1);
	json_decref(v);
	v = event(&b, &at, "message_delta");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    v, "delta"), "stop_reason")), "end_turn");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    v, "usage"), "output_tokens")), 4);
	json_decref(v);
	json_decref(event(&b, &at, "message_stop"));
	assert_int_equal(at, b.len);

	/* the end with an SSE id: the line starts message_stop's event; an
	 * id with a line end is refused and nothing is written */
	b.len = 0;
	assert_int_equal(anthropic_encode_end(&b, ANTHROPIC_STOP_END_TURN,
	    NULL, 0, &u, "7-00000000000000ab-end"), TS_OK);
	assert_non_null(strstr(b.p, "}\n\nid: 7-00000000000000ab-end\n"
	    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
	b.len = 0;
	assert_int_equal(anthropic_encode_end(&b, ANTHROPIC_STOP_END_TURN,
	    NULL, 0, &u, "a\nb"), TS_EINVAL);
	assert_int_equal(b.len, 0);

	/* an error event */
	b.len = 0;
	at = 0;
	http_error_set(&err, 529, "x", "y", "busy");
	assert_int_equal(anthropic_encode_error_event(&b, &err), TS_OK);
	v = event(&b, &at, "error");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    v, "error"), "type")), "overloaded_error");
	json_decref(v);
	/* a full buffer: TS_ELIMIT and nothing appended */
	ts_buf_free(&b);
	ts_buf_init(&b, 40);
	assert_int_equal(anthropic_encode_message_start(&b, &m, &u), TS_ELIMIT);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
}

static void
test_errors(void **state)
{
	static const struct { int status; const char *type; } map[] = {
		{ 400, "invalid_request_error" }, { 401, "authentication_error" },
		{ 403, "permission_error" }, { 404, "not_found_error" },
		{ 405, "invalid_request_error" }, { 413, "request_too_large" },
		{ 429, "rate_limit_error" }, { 500, "api_error" },
		{ 503, "overloaded_error" }, { 529, "overloaded_error" },
	};
	struct http_error err;
	struct ts_buf b;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		assert_string_equal(anthropic_error_type(map[i].status),
		    map[i].type);
	ts_buf_init(&b, 4096);
	http_error_set(&err, 404, "t", "c", "model: \"x\"");
	assert_int_equal(anthropic_encode_error(&b, &err), TS_OK);
	assert_string_equal(b.p, "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"not_found_error\",\"message\":\"model: \\\"x\\\"\"},"
	    "\"request_id\":null}");
	ts_buf_free(&b);
}

static void
test_ids_and_signatures(void **state)
{
	char a[40], c[40], s1[72], s2[72], s3[72];
	size_t i;

	(void)state;
	anthropic_id("msg_", 1, 0, a, sizeof(a));
	anthropic_id("msg_", 2, 0, c, sizeof(c));
	assert_int_equal(strlen(a), 28);
	assert_true(strncmp(a, "msg_", 4) == 0);
	for (i = 4; i < 28; i++)
		assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
		    "nopqrstuvwxyz0123456789", a[i]));
	assert_string_not_equal(a, c);
	anthropic_id("toolu_", 1, 0, c, sizeof(c));
	assert_int_equal(strlen(c), 30);
	anthropic_id("msg_", 1, 1, c, sizeof(c));
	assert_int_equal(strspn(c + 4, "0123456789"), 24);
	anthropic_id("msg_", 1, 0, c, 20);     /* too small: empty */
	assert_string_equal(c, "");
	anthropic_signature("thought", 7, s1);
	anthropic_signature("thought", 7, s2);
	anthropic_signature("thoughT", 7, s3);
	assert_int_equal(strlen(s1), 64);
	assert_string_equal(s1, s2);
	assert_string_not_equal(s1, s3);
}

/* tool_choice: tool names one; any draws one; none and a tool_result
 * after auto give none; the input follows the schema and is cut at
 * cap. */
static void
test_plan(void **state)
{
	static const char head[] = "{\"model\":\"tokstream-sim\","
	    "\"max_tokens\":50,\"tools\":[{\"name\":\"f\",\"input_schema\":"
	    "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
	    "\"minimum\":3,\"maximum\":3}},\"required\":[\"n\"]}},"
	    "{\"name\":\"g\",\"input_schema\":{\"type\":\"object\"}}],";
	struct anthropic_request req;
	struct anthropic_plan p;
	struct http_error err;
	char body[1024];
	uint64_t seed;
	int any = 0;

	(void)state;
	snprintf(body, sizeof(body), "%s\"tool_choice\":{\"type\":\"tool\","
	    "\"name\":\"f\"},\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"x\"}]}", head);
	assert_int_equal(parse(body, 0, &req, &err), TS_OK);
	assert_int_equal(anthropic_plan_make(&req, 7, 1 << 20, &p, &err),
	    TS_OK);
	assert_int_equal(p.tool_use, 1);
	assert_int_equal(p.tool, 0);
	assert_true(strncmp(p.id, "toolu_", 6) == 0);
	assert_string_equal(p.input.p, "{\"n\":3}");
	anthropic_plan_free(&p);
	anthropic_request_free(&req);

	snprintf(body, sizeof(body), "%s\"tool_choice\":{\"type\":\"any\"},"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", head);
	assert_int_equal(parse(body, 0, &req, &err), TS_OK);
	for (seed = 0; seed < 32; seed++) {
		assert_int_equal(anthropic_plan_make(&req, seed, 1 << 20, &p,
		    &err), TS_OK);
		assert_int_equal(p.tool_use, 1);
		any |= 1 << p.tool;
		anthropic_plan_free(&p);
	}
	assert_int_equal(any, 3);
	anthropic_request_free(&req);

	snprintf(body, sizeof(body), "%s\"tool_choice\":{\"type\":\"none\"},"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", head);
	assert_int_equal(parse(body, 0, &req, &err), TS_OK);
	assert_int_equal(anthropic_plan_make(&req, 1, 1 << 20, &p, &err),
	    TS_OK);
	assert_int_equal(p.tool_use, 0);
	anthropic_plan_free(&p);
	anthropic_request_free(&req);

	snprintf(body, sizeof(body), "%s\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":\"ok\"}]}]}", head);
	assert_int_equal(parse(body, 0, &req, &err), TS_OK);
	for (seed = 0; seed < 16; seed++) {
		assert_int_equal(anthropic_plan_make(&req, seed, 1 << 20, &p,
		    &err), TS_OK);
		assert_int_equal(p.tool_use, 0);
		anthropic_plan_free(&p);
	}
	anthropic_request_free(&req);
}

/* The thinking phase: how many tokens, and the sampling's min_tokens
 * keeping EOS out of it in the simulator. */
static void
test_think(void **state)
{
	struct engine_sampling sp;
	struct sim_lm lm;
	char prompt[32];
	uint32_t i, think, k, eos_early = 0;

	(void)state;
	assert_int_equal(think_tokens(0, 100), 0);
	assert_int_equal(think_tokens(32, 64), 32);
	assert_int_equal(think_tokens(64, 64), 63);
	assert_int_equal(think_tokens(5, 0), 0);
	assert_int_equal(think_min_tokens(0), 0);
	assert_int_equal(think_min_tokens(32), 33);
	assert_true(think_is_thinking(2, 1));
	assert_false(think_is_thinking(2, 2));

	/* without min_tokens some of these prompts end within 40 tokens;
	 * with it none does before 41 */
	for (k = 0; k < 200; k++) {
		snprintf(prompt, sizeof(prompt), "p%u.", k);
		engine_sampling_defaults(&sp);
		sim_lm_init(&lm, prompt, strlen(prompt), &sp);
		for (i = 0; i < 40; i++)
			if (sim_lm_next(&lm) == SIM_EOS_ID) {
				eos_early++;
				break;
			}
		sim_lm_free(&lm);
		think = 40;
		sp.min_tokens = think_min_tokens(think);
		sim_lm_init(&lm, prompt, strlen(prompt), &sp);
		for (i = 0; i < think + 1; i++)
			assert_int_not_equal(sim_lm_next(&lm), SIM_EOS_ID);
		sim_lm_free(&lm);
	}
	assert_true(eos_early > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_prompt),
		cmocka_unit_test(test_encode_message),
		cmocka_unit_test(test_encode_events),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_ids_and_signatures),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_think),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
