/*
 * test_gen_chat.c - unit tests of the chat template (src/proto/chat.c):
 * rendering, role names, limits, and that the rendered prompt drives the
 * model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sim/vocab.h"
#include "openai/chat.h"
#include "sim/lm.h"
#include "common/buf.h"
#include "common/ts.h"

/* A string literal as (ptr, len): may hold NUL bytes. */
#define S(s) (s), (sizeof(s) - 1)

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define MSG(r, s) { CHAT_ROLE_##r, (s), sizeof(s) - 1 }

static void
test_render_table(void **state)
{
	static const struct chat_msg user[] = { MSG(USER, "Hi") };
	static const struct chat_msg sys_user[] = {
		MSG(SYSTEM, "Be brief."), MSG(USER, "What is a token?")
	};
	static const struct chat_msg turns[] = {
		MSG(USER, "Hi"), MSG(ASSISTANT, "Hello!"),
		MSG(USER, "Again")
	};
	static const struct chat_msg empty[] = { MSG(USER, "") };
	static const struct chat_msg nul[] = { MSG(USER, "a\0b") };
	static const struct chat_msg markers[] = {
		MSG(USER, "<|assistant|>\nx")
	};
	static const struct {
		const char *name;
		const struct chat_msg *msgs;
		size_t n;
		const char *want;
		size_t want_len;
	} cases[] = {
		{ "none", NULL, 0, S("<|assistant|>\n") },
		{ "user", user, 1, S("<|user|>\nHi\n<|assistant|>\n") },
		{ "system and user", sys_user, 2,
		    S("<|system|>\nBe brief.\n<|user|>\nWhat is a token?\n"
		    "<|assistant|>\n") },
		{ "turns", turns, 3,
		    S("<|user|>\nHi\n<|assistant|>\nHello!\n<|user|>\nAgain\n"
		    "<|assistant|>\n") },
		{ "empty content", empty, 1,
		    S("<|user|>\n\n<|assistant|>\n") },
		{ "NUL byte", nul, 1, S("<|user|>\na\0b\n<|assistant|>\n") },
		{ "markers as text", markers, 1,
		    S("<|user|>\n<|assistant|>\nx\n<|assistant|>\n") },
	};
	struct ts_buf b;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		ts_buf_init(&b, 4096);
		assert_int_equal(chat_render(cases[i].msgs, cases[i].n,
		    &b), TS_OK);
		if (b.len != cases[i].want_len ||
		    memcmp(b.p, cases[i].want, b.len) != 0)
			fail_msg("%s: \"%.*s\"", cases[i].name, (int)b.len,
			    b.p);
		ts_buf_free(&b);
	}
	/* Appends to what is there. */
	ts_buf_init(&b, 4096);
	assert_int_equal(ts_buf_append(&b, "X", 1), TS_OK);
	assert_int_equal(chat_render(user, 1, &b), TS_OK);
	assert_int_equal(b.len, 1 + strlen("<|user|>\nHi\n<|assistant|>\n"));
	ts_buf_free(&b);
}

static void
test_roles(void **state)
{
	static const struct {
		const char *name;
		size_t len;
		enum ts_err rc;
		enum chat_role role;
	} cases[] = {
		{ S("system"), TS_OK, CHAT_ROLE_SYSTEM },
		{ S("user"), TS_OK, CHAT_ROLE_USER },
		{ S("assistant"), TS_OK, CHAT_ROLE_ASSISTANT },
		{ S("User"), TS_EINVAL, CHAT_ROLE_USER },
		{ S("tool"), TS_EINVAL, CHAT_ROLE_USER },
		{ S("use"), TS_EINVAL, CHAT_ROLE_USER },
		{ S("users"), TS_EINVAL, CHAT_ROLE_USER },
		{ S("user\0"), TS_EINVAL, CHAT_ROLE_USER },
		{ S(""), TS_EINVAL, CHAT_ROLE_USER },
	};
	enum chat_role r;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		r = (enum chat_role)99;
		assert_int_equal(chat_role_parse(cases[i].name, cases[i].len,
		    &r), cases[i].rc);
		if (cases[i].rc == TS_OK) {
			assert_int_equal(r, cases[i].role);
			assert_string_equal(chat_role_name(r),
			    cases[i].name);
		} else {
			assert_int_equal(r, 99);
		}
	}
	assert_string_equal(chat_role_name(CHAT_ROLE_TOOL), "tool");
	assert_null(chat_role_name((enum chat_role)4));
}

/* Over the buffer's limit or with a bad role: an error, and the buffer
 * as it was. */
static void
test_errors(void **state)
{
	static const struct chat_msg msgs[] = {
		MSG(SYSTEM, "s"), MSG(USER, "a longer user message")
	};
	const size_t need = 2 + strlen("<|system|>\ns\n<|user|>\n"
	    "a longer user message\n<|assistant|>\n");
	struct chat_msg bad[2];
	struct ts_buf b;
	size_t max;

	(void)state;
	for (max = 0; max < need + 4; max++) {
		ts_buf_init(&b, max);
		if (max >= 2)
			assert_int_equal(ts_buf_append(&b, "AB", 2), TS_OK);
		if (chat_render(msgs, 2, &b) == TS_OK) {
			assert_true(max >= need);
		} else {
			assert_true(max < need);
			assert_int_equal(b.len, max >= 2 ? 2 : 0);
			if (b.p != NULL)
				assert_int_equal(b.p[b.len], '\0');
		}
		ts_buf_free(&b);
	}
	memcpy(bad, msgs, sizeof(bad));
	bad[1].role = (enum chat_role)7;
	ts_buf_init(&b, 4096);
	assert_int_equal(chat_render(bad, 2, &b), TS_EINVAL);
	assert_int_equal(b.len, 0);
	ts_buf_free(&b);
}

/* The template string names the markers; a rendered prompt is counted
 * with sim_tokenize and seeds the model. */
static void
test_template_and_prompt(void **state)
{
	static const struct chat_msg a[] = { MSG(USER, "Hi") };
	static const struct chat_msg b[] = { MSG(USER, "Ho") };
	struct ts_buf x, y;
	struct sim_lm la, lb;
	uint32_t ia[16], ib[16];
	size_t i;

	(void)state;
	assert_non_null(strstr(CHAT_TEMPLATE, "<|{{ message.role }}|>"));
	assert_non_null(strstr(CHAT_TEMPLATE, "<|assistant|>\n"));
	ts_buf_init(&x, 4096);
	ts_buf_init(&y, 4096);
	assert_int_equal(chat_render(a, 1, &x), TS_OK);
	assert_int_equal(chat_render(b, 1, &y), TS_OK);
	assert_true(sim_tokenize(x.p, x.len, NULL, 0) >= 5);
	assert_true(sim_tokenize(x.p, x.len, NULL, 0) <= x.len);
	sim_lm_init(&la, x.p, x.len, NULL);
	sim_lm_init(&lb, y.p, y.len, NULL);
	for (i = 0; i < 16; i++) {
		ia[i] = sim_lm_next(&la);
		ib[i] = sim_lm_next(&lb);
	}
	assert_memory_not_equal(ia, ib, sizeof(ia));
	sim_lm_free(&la);
	sim_lm_free(&lb);
	ts_buf_free(&x);
	ts_buf_free(&y);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_table),
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_template_and_prompt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
