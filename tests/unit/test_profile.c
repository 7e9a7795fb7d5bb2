/*
 * test_profile.c - latency profiles (engine/profile.h): the file format
 * and its refusals, the presets' arithmetic, the jitter distributions of
 * engine/latency.h, and that what /v1/models shows parses back to the
 * same model.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/latency.h"
#include "engine/profile.h"

static const char full[] =
    "{\"tokstream_latency_profile\": 1, \"name\": \"known\","
    " \"prefill\": {\"base_ms\": 30, \"per_token_ms\": 0.4,"
    "   \"per_token2_ms\": 0.0001, \"shares_step\": true},"
    " \"decode\": {\"base_ms\": 25, \"per_seq_ms\": 1.5,"
    "   \"per_ctx_token_ms\": 0.05, \"load_factor_max\": 2},"
    " \"jitter\": {\"prefill_ms\": {\"std\": 3},"
    "   \"decode_ms\": {\"percentiles\": {\"99\": 4, \"1\": -2,"
    "   \"50\": 0.5}}},"
    " \"fit\": {\"anything\": [1, 2, 3]}}";

static int
parse(const char *text, struct engine_latency *lat, double *lf, char *err)
{
	return engine_profile_parse(text, strlen(text), lat, lf, err, 256);
}

/* Every field lands where the engine reads it; percentiles are sorted;
 * unknown keys ("fit") are ignored. */
static void
test_parse_full(void **unused)
{
	struct engine_latency lat;
	double lf = 0;
	char err[256];

	(void)unused;
	assert_int_equal(parse(full, &lat, &lf, err), TS_OK);
	assert_string_equal(lat.name, "known");
	assert_true(lat.prefill_base_ms == 30);
	assert_true(lat.prefill_per_token_ms == 0.4);
	assert_true(lat.prefill_per_token2_ms == 0.0001);
	assert_int_equal(lat.prefill_shares_step, 1);
	assert_true(lat.tpot_ms == 25);
	assert_true(lat.decode_per_seq_ms == 1.5);
	assert_true(lat.decode_per_ctx_token_ms == 0.05);
	assert_true(lf == 2);
	assert_true(lat.jitter_prefill.std_ms == 3);
	assert_int_equal(lat.jitter_prefill.npoints, 0);
	assert_int_equal(lat.jitter_decode.npoints, 3);
	assert_true(lat.jitter_decode.pct[0] == 1);
	assert_true(lat.jitter_decode.ms[0] == -2);
	assert_true(lat.jitter_decode.pct[2] == 99);
	/* the model's arithmetic over it */
	assert_true(fabs(engine_prefill_ms(&lat, 100) - (30 + 40 + 1)) <
	    1e-9);
	assert_true(fabs(engine_decode_ms(&lat, 4, 1000) - (25 + 6 + 50)) <
	    1e-9);
}

/* Missing fields are 0 and the load factor 1, whole sections included;
 * a sum is capped at ENGINE_MAX_PASS_MS (a quadratic term over 400,000
 * tokens must not overflow a deadline). */
static void
test_parse_minimal_and_cap(void **unused)
{
	struct engine_latency lat;
	double lf = 0;
	char err[256];

	(void)unused;
	assert_int_equal(parse("{\"tokstream_latency_profile\":1,"
	    "\"decode\":{\"base_ms\":2,\"load_factor_max\":null}}", &lat,
	    &lf, err), TS_OK);
	assert_true(lf == 1);
	assert_string_equal(lat.name, "profile");
	assert_true(lat.prefill_base_ms == 0);
	assert_int_equal(lat.prefill_shares_step, 0);
	assert_true(engine_decode_ms(&lat, 5, 1000) == 2);
	assert_true(engine_prefill_ms(&lat, 1000) == 0);
	assert_int_equal(parse("{\"tokstream_latency_profile\":1}", &lat,
	    &lf, err), TS_OK);
	assert_true(lat.tpot_ms == 0);
	assert_int_equal(parse("{\"tokstream_latency_profile\":1,"
	    "\"prefill\":{\"per_token2_ms\":1000}}", &lat, &lf, err),
	    TS_OK);
	assert_true(engine_prefill_ms(&lat, 400000) == ENGINE_MAX_PASS_MS);
	assert_true(engine_prefill_ms(&lat, 10) == 100000);
}

/* Each refusal names what is wrong, and leaves the output alone. */
static void
test_parse_refusals(void **unused)
{
	static const struct {
		const char *text, *needle;
	} bad[] = {
		{ "not json", "not JSON" },
		{ "{\"prefill\":{},\"decode\":{}}", "missing" },
		{ "{\"tokstream_latency_profile\":2,\"prefill\":{},"
		    "\"decode\":{}}", "version 2" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":3}",
		    "\"prefill\"" },
		{ "{\"tokstream_latency_profile\":1,\"decode\":"
		    "{\"per_seq_ms\":-1}}", "decode.per_seq_ms is -1" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":"
		    "{\"per_token_ms\":-0.5}}", "prefill.per_token_ms" },
		{ "{\"tokstream_latency_profile\":1,\"decode\":"
		    "{\"base_ms\":20000}}", "not from 0 to 10000" },
		{ "{\"tokstream_latency_profile\":1,\"jitter\":{"
		    "\"decode_ms\":{\"std\":1,\"percentiles\":{\"1\":0,"
		    "\"99\":1}}}}", "one or the other" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":{},"
		    "\"decode\":{\"base_ms\":\"5\"}}", "decode.base_ms" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":{},"
		    "\"decode\":{\"base_ms\":-5}}", "decode.base_ms" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":"
		    "{\"base_ms\":1e9},\"decode\":{}}", "prefill.base_ms" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":"
		    "{\"shares_step\":1},\"decode\":{}}", "shares_step" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":{},"
		    "\"decode\":{\"load_factor_max\":0.5}}",
		    "load_factor_max is 0.5, not from 1 to 100" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":{},"
		    "\"decode\":{},\"jitter\":{\"decode_ms\":{\"percentiles\":"
		    "{\"50\":1}}}}", "2 to" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":{},"
		    "\"decode\":{},\"jitter\":{\"decode_ms\":{\"percentiles\":"
		    "{\"10\":1,\"90\":0}}}}", "rise" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":{},"
		    "\"decode\":{},\"jitter\":{\"decode_ms\":{\"percentiles\":"
		    "{\"10\":1,\"p90\":2}}}}", "percentile 0..100" },
		{ "{\"tokstream_latency_profile\":1,\"prefill\":{},"
		    "\"decode\":{},\"jitter\":{\"decode_ms\":{\"std\":-1}}}",
		    "jitter.decode_ms.std is -1" },
	};
	struct engine_latency lat;
	double lf = 7;
	char err[256];
	size_t i;

	(void)unused;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&lat, 0x5a, sizeof(lat));
		err[0] = '\0';
		assert_int_equal(parse(bad[i].text, &lat, &lf, err),
		    TS_EINVAL);
		if (strstr(err, bad[i].needle) == NULL)
			fail_msg("case %zu: '%s' lacks '%s'", i, err,
			    bad[i].needle);
		assert_true(lf == 7);
		assert_int_equal(((unsigned char *)&lat)[0], 0x5a);
	}
}

/* The presets' arithmetic, as docs/API.md "Latency profiles" writes it:
 * Llama 3.1 8B bf16 on one H100 SXM reads 16.06 GB a step at 80% of
 * 3.35 TB/s: 5.99 ms (the floor at 100% is the 4.8 ms); its KV
 * cache, 131,072 bytes a token at the same rate; its prefill, 2 x 8.03e9
 * FLOPs a token at 50% of 989 TFLOP/s. */
static void
test_preset_arithmetic(void **unused)
{
	struct engine_latency lat;
	const struct engine_preset *p;
	double lf = 0;
	char err[256];

	(void)unused;
	assert_int_equal(engine_profile_preset("llama-3.1-8b-h100", &lat,
	    &lf, err, sizeof(err)), TS_OK);
	p = engine_preset_find("llama-3.1-8b-h100");
	assert_non_null(p);
	assert_true(fabs(p->weight_bytes / p->bandwidth * 1e3 - 4.794) <
	    0.001);
	assert_true(fabs(lat.tpot_ms - 5.993) < 0.001);
	assert_true(fabs(lat.decode_per_ctx_token_ms - 4.89e-5) < 0.01e-5);
	assert_true(fabs(lat.prefill_per_token_ms - 0.03248) < 0.00001);
	assert_int_equal(lat.prefill_shares_step, 1);
	assert_true(lf == 1);
	assert_string_equal(lat.name, "preset:llama-3.1-8b-h100");
	/* A100 40GB: 16.06e9 / (0.8 x 1.555e12) = 12.91 ms */
	assert_int_equal(engine_profile_preset("llama-3.1-8b-a100-40gb",
	    &lat, &lf, err, sizeof(err)), TS_OK);
	assert_true(fabs(lat.tpot_ms - 12.910) < 0.001);
	/* H200: 16.06e9 / (0.8 x 4.8e12) = 4.18 ms */
	assert_int_equal(engine_profile_preset("llama-3.1-8b-h200", &lat,
	    &lf, err, sizeof(err)), TS_OK);
	assert_true(fabs(lat.tpot_ms - 4.182) < 0.001);
	assert_int_equal(engine_profile_preset("gpt-5-on-a-toaster", &lat,
	    &lf, err, sizeof(err)), TS_EINVAL);
	assert_non_null(strstr(err, "llama-3.1-8b-h100"));
}

/* What the server shows (engine_profile_json) parses back to the same
 * model, percentiles included. */
static void
test_json_round_trip(void **unused)
{
	struct engine_latency a, b;
	double lfa = 0, lfb = 0;
	char err[256], *text;
	json_t *j;

	(void)unused;
	assert_int_equal(parse(full, &a, &lfa, err), TS_OK);
	j = engine_profile_json(&a, lfa);
	assert_non_null(j);
	text = json_dumps(j, JSON_REAL_PRECISION(17));
	json_decref(j);
	assert_int_equal(parse(text, &b, &lfb, err), TS_OK);
	free(text);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_true(lfa == lfb);
}

/* A percentile distribution's draws follow its inverse CDF: over 20,000
 * seeded draws the median is near its 50th point and none falls outside
 * its first and last; no distribution draws nothing. */
static void
test_dist_percentiles(void **unused)
{
	struct engine_dist d;
	struct engine_jitter j;
	int64_t v[20000], lo = INT64_MAX, hi = INT64_MIN;
	size_t i, below = 0;
	uint64_t before;

	(void)unused;
	memset(&d, 0, sizeof(d));
	engine_jitter_seed(&j, 42);
	before = j.state;
	assert_true(engine_dist_ns(&j, &d) == 0);
	assert_true(j.state == before);
	d.npoints = 3;
	d.pct[0] = 1;  d.ms[0] = -2;
	d.pct[1] = 50; d.ms[1] = 0.5;
	d.pct[2] = 99; d.ms[2] = 4;
	for (i = 0; i < 20000; i++) {
		v[i] = engine_dist_ns(&j, &d);
		if (v[i] < lo)
			lo = v[i];
		if (v[i] > hi)
			hi = v[i];
		below += v[i] < 500000;
	}
	assert_true(lo >= -2000000 && hi <= 4000000);
	/* half of the mass is below 0.5 ms: within 2 percentage points */
	assert_true(below > 9600 && below < 10400);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_full),
		cmocka_unit_test(test_parse_minimal_and_cap),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_preset_arithmetic),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_dist_percentiles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
