/*
 * test_openai_agent.c - what agents ask of the OpenAI endpoints
 * (src/openai/): tools, response formats, logprobs and n parsed; their
 * chunks encoded; and the direct encoders of logprobs and strings against
 * jansson's bytes.
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

#include "openai_fixtures.h"

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


int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_agent_fields),
		cmocka_unit_test(test_encode_agent_chunks),
		cmocka_unit_test(test_logprobs_match_jansson),
		cmocka_unit_test(test_utf8_as_jansson),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
