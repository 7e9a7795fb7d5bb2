/*
 * test_inject.c - failure injection (handlers/inject.h): kind names, the
 * --failure-injection-rate and --failure-types parsers, the
 * X-Tokstream-Failure header, the seeded draw (determinism and binomial
 * counts) and the error bodies, table-driven.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "handlers/inject.h"

#define T(s) s, sizeof(s) - 1
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void
test_kind_names(void **state)
{
	static const struct { const char *s; size_t len; } bad[] = {
		{ T("") }, { T("rate") }, { T("rate_limits") },
		{ T(" rate_limit") }, { T("rate_limit ") },
		{ T("rate-limit") },
		{ T("unknown") }, { T("none\0") }, { T("timeout\0x") },
	};
	char up[32];
	size_t i, n;
	int k;

	(void)state;
	for (k = 0; k < INJECT_NKINDS; k++) {
		const char *name = inject_kind_name((enum inject_kind)k);

		n = strlen(name);
		assert_int_equal(inject_kind_parse(name, n), k);
		/* case-insensitive, and reads only len bytes */
		for (i = 0; i <= n; i++)
			up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ?
			    name[i] - 'a' + 'A' : name[i]);
		assert_int_equal(inject_kind_parse(up, n), k);
		memcpy(up, name, n);
		memcpy(up + n, "xyz", 3);
		assert_int_equal(inject_kind_parse(up, n), k);
	}
	assert_string_equal(inject_kind_name(INJECT_NONE), "none");
	assert_string_equal(inject_kind_name(INJECT_RATE_LIMIT), "rate_limit");
	assert_string_equal(inject_kind_name(INJECT_MIDSTREAM_CUT),
	    "midstream_cut");
	assert_string_equal(inject_kind_name(INJECT_NKINDS), "unknown");
	assert_string_equal(inject_kind_name((enum inject_kind)-1),
	    "unknown");
	for (i = 0; i < NELEM(bad); i++)
		assert_int_equal(inject_kind_parse(bad[i].s, bad[i].len), -1);
	assert_int_equal(inject_kind_parse(NULL, 0), -1);
}

static void
test_defaults(void **state)
{
	struct inject_config c;

	(void)state;
	memset(&c, 0xff, sizeof(c));
	inject_config_defaults(&c);
	assert_true(c.rate == 0.0);
	assert_int_equal(c.types, INJECT_TYPES_DEFAULT);
	assert_false(c.types & INJECT_BIT(INJECT_TIMEOUT));
	assert_false(c.types & INJECT_BIT(INJECT_NONE));
	assert_int_equal(c.types | INJECT_BIT(INJECT_TIMEOUT),
	    INJECT_TYPES_ALL);
	assert_int_equal(INJECT_TYPES_ALL, 0x1feu);
	assert_int_equal(c.after_tokens, 5);
	assert_int_equal(c.retry_after_s, 1);
	assert_int_equal(c.seed, 0);
}

static void
test_parse_rate(void **state)
{
	static const struct { const char *s; double rate; } ok[] = {
		{ "0", 0.0 }, { "100", 1.0 }, { "10", 0.1 }, { "50", 0.5 },
		{ "2.5", 0.025 }, { "0.001", 0.00001 }, { "007", 0.07 },
		{ "10.000000", 0.1 }, { "99.999999", 0.99999999 },
		{ "100.0", 1.0 },
	};
	static const char *const bad[] = {
		"", "-1", "+5", "101", "100.000001", "1e2", " 5", "5 ", "5%",
		".5", "5.", "0.0000001", "abc", "1000000000000000000000",
		"0x10", "1,5",
	};
	char msg[256];
	double r;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(ok); i++) {
		r = -1;
		assert_int_equal(inject_parse_rate(ok[i].s, &r, msg,
		    sizeof(msg)), TS_OK);
		assert_true(r == ok[i].rate);
	}
	for (i = 0; i < NELEM(bad); i++) {
		r = -1;
		msg[0] = '\0';
		assert_int_equal(inject_parse_rate(bad[i], &r, msg,
		    sizeof(msg)), TS_EINVAL);
		assert_true(r == -1);
		assert_non_null(strstr(msg, "--failure-injection-rate"));
	}
	assert_int_equal(inject_parse_rate(NULL, &r, NULL, 0), TS_EINVAL);
}

static void
test_parse_types(void **state)
{
	static const struct { const char *s; uint32_t types; } ok[] = {
		{ "rate_limit", INJECT_BIT(INJECT_RATE_LIMIT) },
		{ "rate_limit,server_error", INJECT_BIT(INJECT_RATE_LIMIT) |
		    INJECT_BIT(INJECT_SERVER_ERROR) },
		{ " Timeout ,\tMIDSTREAM_CUT\t", INJECT_BIT(INJECT_TIMEOUT) |
		    INJECT_BIT(INJECT_MIDSTREAM_CUT) },
		{ "overloaded,overloaded", INJECT_BIT(INJECT_OVERLOADED) },
		{ "rate_limit,server_error,overloaded,context_length,"
		    "invalid_api_key,timeout,midstream_error,midstream_cut",
		    INJECT_TYPES_ALL },
	};
	static const struct { const char *s; const char *in_msg; } bad[] = {
		{ "", "item 1 is empty" },
		{ " ", "item 1 is empty" },
		{ "rate_limit,", "item 2 is empty" },
		{ ",rate_limit", "item 1 is empty" },
		{ "rate_limit,,timeout", "item 2 is empty" },
		{ "rate_limit, ,timeout", "item 2 is empty" },
		{ "rate_limit,bogus", "item 2, 'bogus', is not" },
		{ "none", "item 1, 'none', is not" },
		{ "rate limit", "item 1, 'rate limit', is not" },
		{ "server_error;timeout", "'server_error;timeout'" },
		{ "\xff\x01", "'?\?'" },
	};
	char msg[256];
	uint32_t t;
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(ok); i++) {
		t = 0;
		assert_int_equal(inject_parse_types(ok[i].s, &t, msg,
		    sizeof(msg)), TS_OK);
		assert_int_equal(t, ok[i].types);
	}
	for (i = 0; i < NELEM(bad); i++) {
		t = 12345;
		msg[0] = '\0';
		assert_int_equal(inject_parse_types(bad[i].s, &t, msg,
		    sizeof(msg)), TS_EINVAL);
		assert_int_equal(t, 12345);
		assert_non_null(strstr(msg, bad[i].in_msg));
		/* the message lists the valid names, never "none" */
		assert_non_null(strstr(msg, "rate_limit, server_error, "
		    "overloaded, context_length, invalid_api_key, timeout, "
		    "midstream_error, midstream_cut"));
		assert_null(strstr(msg, "none,"));
	}
	/* a short buffer gets a truncated, terminated message */
	assert_int_equal(inject_parse_types("x", &t, msg, 8), TS_EINVAL);
	assert_int_equal(strlen(msg), 7);
	assert_int_equal(inject_parse_types("x", &t, NULL, 0), TS_EINVAL);
}

static void
test_parse_header(void **state)
{
	static const struct {
		const char *v; size_t len; enum inject_kind kind;
		uint32_t after;
	} ok[] = {
		{ T("rate_limit"), INJECT_RATE_LIMIT, 7 },
		{ T("server_error"), INJECT_SERVER_ERROR, 7 },
		{ T("overloaded"), INJECT_OVERLOADED, 7 },
		{ T("context_length"), INJECT_CONTEXT_LENGTH, 7 },
		{ T("invalid_api_key"), INJECT_INVALID_API_KEY, 7 },
		{ T("timeout"), INJECT_TIMEOUT, 7 },
		{ T("midstream_error"), INJECT_MIDSTREAM_ERROR, 7 },
		{ T("midstream_cut"), INJECT_MIDSTREAM_CUT, 7 },
		{ T("none"), INJECT_NONE, 7 },
		{ T("NONE"), INJECT_NONE, 7 },
		{ T("  Rate_Limit \t"), INJECT_RATE_LIMIT, 7 },
		{ T("midstream_error; after=3"), INJECT_MIDSTREAM_ERROR, 3 },
		{ T("midstream_error;after=0"), INJECT_MIDSTREAM_ERROR, 0 },
		{ T("midstream_cut ; AFTER = 8192 "), INJECT_MIDSTREAM_CUT,
		    8192 },
		{ T("\tmidstream_cut\t;\tafter\t=\t00012\t"),
		    INJECT_MIDSTREAM_CUT, 12 },
		/* reads len bytes only: the rest is not the value */
		{ "timeout; after=1", 7, INJECT_TIMEOUT, 7 },
		{ "midstream_cut; after=12", 22, INJECT_MIDSTREAM_CUT, 1 },
	};
	static const struct { const char *v; size_t len; const char *in_msg; }
	    bad[] = {
		{ T(""), "the value is empty" },
		{ T(" \t "), "the value is empty" },
		{ T("; after=3"), "no failure type before ';'" },
		{ T("bogus"), "unknown failure type 'bogus'" },
		{ T("rate-limit"), "unknown failure type 'rate-limit'" },
		{ T("rate_limit server_error"), "unexpected 'server_error'" },
		{ T("rate_limit,server_error"), "unknown failure type" },
		{ T("midstream_cut;"), "unknown parameter ''" },
		{ T("midstream_cut; k=3"), "unknown parameter 'k'" },
		{ T("midstream_cut; after"), "after needs a value" },
		{ T("midstream_cut; after 3"), "after needs a value" },
		{ T("midstream_cut; after="), "after= takes a whole number" },
		{ T("midstream_cut; after=-1"), "not '-1'" },
		{ T("midstream_cut; after=+1"), "not '+1'" },
		{ T("midstream_cut; after=x"), "not 'x'" },
		{ T("midstream_cut; after=8193"), "after=8193 is over 8192" },
		{ T("midstream_cut; after=99999999999999999999999"),
		    "is over 8192" },
		{ T("midstream_cut; after=3x"),
		    "unexpected 'x' after after=3" },
		{ T("midstream_cut; after=3 4"), "unexpected '4'" },
		{ T("midstream_cut; after=3; after=4"),
		    "unexpected '; after=4'" },
		{ T("rate_limit; after=3"), "not to rate_limit" },
		{ T("none; after=3"), "not to none" },
		{ T("timeout; after=0"), "not to timeout" },
		{ T("ra\0te_limit"), "unknown failure type 'ra?te_limit'" },
		{ T("\xc3\xa9t\xc3\xa9"), "'?\?t?\?'" },
		{ T("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
		    "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'" },
	};
	struct inject_config c;
	enum inject_kind k;
	uint32_t after;
	char msg[256];
	size_t i;

	(void)state;
	inject_config_defaults(&c);
	c.after_tokens = 7;
	for (i = 0; i < NELEM(ok); i++) {
		k = INJECT_NKINDS;
		after = 99;
		assert_int_equal(inject_parse_header(ok[i].v, ok[i].len, &c,
		    &k, &after, msg, sizeof(msg)), TS_OK);
		assert_int_equal(k, ok[i].kind);
		assert_int_equal(after, ok[i].after);
	}
	for (i = 0; i < NELEM(bad); i++) {
		k = INJECT_NKINDS;
		after = 99;
		msg[0] = '\0';
		assert_int_equal(inject_parse_header(bad[i].v, bad[i].len, &c,
		    &k, &after, msg, sizeof(msg)), TS_EINVAL);
		assert_int_equal(k, INJECT_NKINDS);
		assert_int_equal(after, 99);
		assert_non_null(strstr(msg, "X-Tokstream-Failure: "));
		assert_non_null(strstr(msg, bad[i].in_msg));
		/* a message quotes only printable ASCII */
		for (const char *p = msg; *p != '\0'; p++)
			assert_true(*p >= 0x20 && *p < 0x7f);
	}
	/* an unknown type's message lists the valid names, "none" too */
	assert_int_equal(inject_parse_header(T("x"), &c, &k, &after, msg,
	    sizeof(msg)), TS_EINVAL);
	assert_non_null(strstr(msg, "valid: none, rate_limit, server_error, "
	    "overloaded, context_length, invalid_api_key, timeout, "
	    "midstream_error, midstream_cut"));
	/* without a config, after defaults to 5 */
	assert_int_equal(inject_parse_header(T("midstream_cut"), NULL, &k,
	    &after, NULL, 0), TS_OK);
	assert_int_equal(after, 5);
	assert_int_equal(inject_parse_header(NULL, 0, &c, &k, &after, NULL,
	    0), TS_EINVAL);
}

/* The decisions for n = 0..N-1 as kind letters ('.' for none). */
static void
decisions(const struct inject_config *c, char *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = (char)(i == n - 1 ? '\0' :
		    ".abcdefgh"[inject_decide(c, i)]);
}

static void
test_decide_deterministic(void **state)
{
	struct inject_config c;
	char a[1001], b[1001];

	(void)state;
	inject_config_defaults(&c);
	c.rate = 0.5;
	c.types = INJECT_TYPES_ALL;
	decisions(&c, a, sizeof(a));
	decisions(&c, b, sizeof(b));
	assert_string_equal(a, b);
	/* pinned: a seeded run must inject the same failures in every
	 * build, so the draw may never change */
	assert_memory_equal(a, ".fbh..ee.dacfg..e..fe.a..f..b.b..ad.eg"
	    "......c....ad...c.b..h.hhe", 64);
	c.seed = 1;
	decisions(&c, b, sizeof(b));
	assert_string_not_equal(a, b);
	c.seed = 0;
	c.after_tokens = 99;
	c.retry_after_s = 9;
	decisions(&c, b, sizeof(b));
	assert_string_equal(a, b);
	/* another types set draws the same failing requests */
	c.types = INJECT_BIT(INJECT_OVERLOADED);
	decisions(&c, b, sizeof(b));
	for (size_t i = 0; i + 1 < sizeof(a); i++)
		assert_int_equal(a[i] == '.', b[i] == '.');
}

static void
test_decide_counts(void **state)
{
	static const uint64_t seeds[] = { 0, 1, 42, UINT64_MAX };
	static const enum inject_kind four[] = { INJECT_RATE_LIMIT,
	    INJECT_OVERLOADED, INJECT_TIMEOUT, INJECT_MIDSTREAM_CUT };
	struct inject_config c;
	uint64_t n, count[INJECT_NKINDS], f;
	int64_t d;
	size_t s, i;

	(void)state;
	for (s = 0; s < NELEM(seeds); s++) {
		inject_config_defaults(&c);
		c.seed = seeds[s];
		c.rate = 0.1;
		c.types = 0;
		for (i = 0; i < NELEM(four); i++)
			c.types |= INJECT_BIT(four[i]);
		memset(count, 0, sizeof(count));
		for (n = 0; n < 100000; n++)
			count[inject_decide(&c, n)]++;
		f = 100000 - count[INJECT_NONE];
		/* binomial(100000, 0.1): sd 94.9, 4 sd = 380 */
		assert_in_range(f, 10000 - 380, 10000 + 380);
		/* each type binomial(f, 1/4): |4 c - f| <= 4 sd * 4, i.e.
		 * (4 c - f)^2 <= 16 * 16 * f * 3/16 = 48 f */
		for (i = 0; i < NELEM(four); i++) {
			d = 4 * (int64_t)count[four[i]] - (int64_t)f;
			assert_true((uint64_t)(d * d) <= 48 * f);
		}
		/* only configured types */
		for (i = INJECT_RATE_LIMIT; i < INJECT_NKINDS; i++)
			if (!(c.types & INJECT_BIT(i)))
				assert_int_equal(count[i], 0);
	}
}

static void
test_decide_edges(void **state)
{
	struct inject_config c;
	uint64_t n;
	int seen[INJECT_NKINDS] = { 0 };
	enum inject_kind k;

	(void)state;
	inject_config_defaults(&c);
	c.seed = 7;
	for (n = 0; n < 20000; n++)
		assert_int_equal(inject_decide(&c, n), INJECT_NONE);
	c.rate = -0.5;
	for (n = 0; n < 1000; n++)
		assert_int_equal(inject_decide(&c, n), INJECT_NONE);
	c.rate = NAN;
	for (n = 0; n < 1000; n++)
		assert_int_equal(inject_decide(&c, n), INJECT_NONE);
	c.rate = 1.0;
	for (n = 0; n < 20000; n++) {
		k = inject_decide(&c, n);
		assert_true(k != INJECT_NONE && k != INJECT_TIMEOUT);
		seen[k] = 1;
	}
	/* the default set: every kind but timeout */
	for (n = INJECT_RATE_LIMIT; n < INJECT_NKINDS; n++)
		assert_int_equal(seen[n], n != INJECT_TIMEOUT);
	c.rate = 2.0;
	c.types = INJECT_BIT(INJECT_SERVER_ERROR) |
	    INJECT_BIT(INJECT_MIDSTREAM_CUT) | INJECT_BIT(INJECT_NONE) |
	    UINT32_C(0x80000000);
	memset(seen, 0, sizeof(seen));
	for (n = 0; n < 1000; n++) {
		k = inject_decide(&c, UINT64_MAX - n);
		assert_true(k == INJECT_SERVER_ERROR ||
		    k == INJECT_MIDSTREAM_CUT);
		seen[k] = 1;
	}
	assert_true(seen[INJECT_SERVER_ERROR] && seen[INJECT_MIDSTREAM_CUT]);
	/* no kind configured: never */
	c.types = INJECT_BIT(INJECT_NONE);
	for (n = 0; n < 1000; n++)
		assert_int_equal(inject_decide(&c, n), INJECT_NONE);
	/* a tiny rate fails rarely, never with a 0 threshold */
	c.types = INJECT_TYPES_ALL;
	c.rate = 1e-300;
	for (n = 0; n < 1000; n++)
		assert_int_equal(inject_decide(&c, n), INJECT_NONE);
}

static void
test_error(void **state)
{
	static const struct {
		enum inject_kind k; int status; const char *type, *code,
		    *param, *msg;
	} http[] = {
		{ INJECT_RATE_LIMIT, 429, "requests", "rate_limit_exceeded",
		    "", "Rate limit reached for requests" },
		{ INJECT_SERVER_ERROR, 500, "server_error", "server_error", "",
		    "The server had an error while processing your request. "
		    "Sorry about that!" },
		{ INJECT_OVERLOADED, 503, "server_error", "overloaded", "",
		    "The engine is currently overloaded, please try again "
		    "later." },
		{ INJECT_CONTEXT_LENGTH, 400, "invalid_request_error",
		    "context_length_exceeded", "messages",
		    "This model's maximum context length is " },
		{ INJECT_INVALID_API_KEY, 401, "invalid_request_error",
		    "invalid_api_key", "", "Incorrect API key provided." },
	};
	static const enum inject_kind none[] = { INJECT_NONE, INJECT_TIMEOUT,
	    INJECT_MIDSTREAM_ERROR, INJECT_MIDSTREAM_CUT, INJECT_NKINDS };
	static const struct { uint32_t ctx; uint64_t prompt; const char *msg; }
	    ctx[] = {
		{ 4096, 5000, "maximum context length is 4096 tokens. "
		    "However, your messages resulted in 5000 tokens. Please "
		    "reduce the length of the messages." },
		{ 0, 37, "is 36 tokens. However, your messages resulted in "
		    "37 tokens." },
		{ 4096, 50, "is 49 tokens. However, your messages resulted "
		    "in 50 tokens." },
		{ 4096, 4096, "is 4095 tokens. However, your messages "
		    "resulted in 4096 tokens." },
		{ 0, 1, "is 0 tokens. However, your messages resulted in 1 "
		    "tokens." },
		{ 0, 0, "is 0 tokens. However, your messages resulted in 1 "
		    "tokens." },
		{ 0, UINT64_MAX, "is 18446744073709551614 tokens. However, "
		    "your messages resulted in 18446744073709551615 tokens." },
	};
	struct inject_config c;
	struct http_error err;
	size_t i;

	(void)state;
	inject_config_defaults(&c);
	for (i = 0; i < NELEM(http); i++) {
		memset(&err, 0xaa, sizeof(err));
		assert_int_equal(inject_error(http[i].k, &c, 0, 10, &err), 1);
		assert_int_equal(err.status, http[i].status);
		assert_string_equal(err.type, http[i].type);
		assert_string_equal(err.code, http[i].code);
		assert_string_equal(err.param, http[i].param);
		assert_non_null(memchr(err.message, '\0',
		    sizeof(err.message)));
		assert_non_null(strstr(err.message, http[i].msg));
	}
	for (i = 0; i < NELEM(none); i++) {
		memset(&err, 0xaa, sizeof(err));
		assert_int_equal(inject_error(none[i], &c, 0, 10, &err), 0);
		assert_int_equal(err.status, (int)0xaaaaaaaa);
	}
	/* Retry-After's value is in the message */
	c.retry_after_s = 30;
	assert_int_equal(inject_error(INJECT_RATE_LIMIT, &c, 0, 0, &err), 1);
	assert_non_null(strstr(err.message, "Please try again in 30s."));
	assert_int_equal(inject_error(INJECT_RATE_LIMIT, NULL, 0, 0, &err),
	    1);
	assert_non_null(strstr(err.message, "Please try again in 1s."));
	for (i = 0; i < NELEM(ctx); i++) {
		assert_int_equal(inject_error(INJECT_CONTEXT_LENGTH, NULL,
		    ctx[i].ctx, ctx[i].prompt, &err), 1);
		assert_non_null(strstr(err.message, ctx[i].msg));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_parse_rate),
		cmocka_unit_test(test_parse_types),
		cmocka_unit_test(test_parse_header),
		cmocka_unit_test(test_decide_deterministic),
		cmocka_unit_test(test_decide_counts),
		cmocka_unit_test(test_decide_edges),
		cmocka_unit_test(test_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
