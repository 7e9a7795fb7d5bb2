/*
 * test_tokenize.c - vLLM's POST /tokenize and POST /detokenize
 * (src/openai/tokenize.h): bodies refused and accepted, the text a
 * prompt or chat becomes, and the answers' bytes.
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
#include "openai/parse.h"
#include "openai/tokenize.h"

#include "openai_fixtures.h"

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
		{ "{'prompt':'x','messages':[{'role':'user','content':'y'}]}",
		    400, "invalid_value", "messages" },
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
		{ "{'tokens':[4294967295]}", 400, "tokens[0]", 0 },
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
	/* an empty prompt's answer, with the longest numbers, fits its
	 * bound (it did not: a 500 encode_failed for "prompt":"") */
	t.text = NULL;
	t.max_model_len = UINT64_MAX;
	assert_int_equal(openai_encode_tokenize(&b, &t), TS_OK);
	assert_true(b.len <= openai_tokenize_bound(0, 0, 0));
	assert_true(openai_tokenize_bound(0, 0, 0) - b.len >= 20);
	t.text = enc_text;
	t.max_model_len = 256;
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
		cmocka_unit_test(test_tokenize_parse),
		cmocka_unit_test(test_tokenize_text),
		cmocka_unit_test(test_detokenize_parse),
		cmocka_unit_test(test_tokenize_encode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
