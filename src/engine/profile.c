/*
 * engine/profile.c - latency profiles: parse, presets, show (profile.h).
 */
#include "engine/profile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The presets. Llama 3.1 8B: 8.03e9 parameters in bf16 (2 bytes each:
 * 16.06 GB read once per decode step); its KV cache holds 32 layers x
 * (K and V) x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes per token,
 * read once per step for every token of context. Accelerators' peak
 * memory bandwidth and dense bf16 FLOP/s are the vendors' data sheets
 * (H100 SXM 3.35 TB/s, 989 TFLOP/s; H200 4.8 TB/s, 989 TFLOP/s; A100
 * 40GB 1.555 TB/s, 312 TFLOP/s). The efficiencies are stated, not
 * fitted: decode reaches 80% of the bandwidth, prefill 50% of the peak
 * FLOP/s. docs/API.md "Latency profiles" checks each against a
 * published measurement.
 */
static const struct engine_preset presets[] = {
	{ "llama-3.1-8b-h100", "Llama 3.1 8B bf16", "1x H100 SXM 80GB",
	    8.03e9, 16.06e9, 131072.0, 3.35e12, 989e12, 0.8, 0.5, 0.0 },
	{ "llama-3.1-8b-h200", "Llama 3.1 8B bf16", "1x H200 141GB",
	    8.03e9, 16.06e9, 131072.0, 4.8e12, 989e12, 0.8, 0.5, 0.0 },
	{ "llama-3.1-8b-a100-40gb", "Llama 3.1 8B bf16", "1x A100 40GB",
	    8.03e9, 16.06e9, 131072.0, 1.555e12, 312e12, 0.8, 0.5, 0.0 },
};
#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

static void
say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

const char *
engine_profile_preset_names(void)
{
	return "llama-3.1-8b-h100, llama-3.1-8b-h200, llama-3.1-8b-a100-40gb";
}

const struct engine_preset *
engine_preset_find(const char *name)
{
	size_t i;

	for (i = 0; i < NPRESETS; i++)
		if (strcmp(presets[i].name, name) == 0)
			return &presets[i];
	return NULL;
}

enum ts_err
engine_profile_preset(const char *name, struct engine_latency *lat,
    double *load_factor_max, char *err, size_t errlen)
{
	const struct engine_preset *p = engine_preset_find(name);
	double bw;

	if (p == NULL) {
		say(err, errlen, "no latency profile preset '%s' (there are "
		    "%s)", name, engine_profile_preset_names());
		return TS_EINVAL;
	}
	bw = p->bandwidth * p->bw_efficiency;
	engine_latency_defaults(lat);
	/* decode: the weights once a step, the KV cache per context token,
	 * the sequences' own work free at these batch sizes (memory-bound) */
	lat->tpot_ms = p->weight_bytes / bw * 1e3 + p->step_overhead_ms;
	lat->decode_per_seq_ms = 0;
	lat->decode_per_ctx_token_ms = p->kv_bytes_per_token / bw * 1e3;
	/* prefill: 2 FLOPs per parameter per token at the stated fraction
	 * of the peak (compute-bound), in the step it joins, as vLLM's
	 * chunked prefill */
	lat->prefill_base_ms = 0;
	lat->prefill_per_token_ms = 2.0 * p->params /
	    (p->peak_flops * p->flops_efficiency) * 1e3;
	lat->prefill_per_token2_ms = 0;
	lat->prefill_shares_step = 1;
	snprintf(lat->name, sizeof(lat->name), "preset:%s", p->name);
	*load_factor_max = 1.0;
	return TS_OK;
}

/* A number field of obj, 0 when missing; -1 after saying why. */
static int
num_field(json_t *obj, const char *sect, const char *key, double lo,
    double hi, double *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);

	*out = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_number(v)) {
		say(err, errlen, "latency profile: %s.%s is not a number",
		    sect, key);
		return -1;
	}
	*out = json_number_value(v);
	if (!isfinite(*out) || *out < lo || *out > hi) {
		say(err, errlen, "latency profile: %s.%s is %g, not from %g "
		    "to %g", sect, key, *out, lo, hi);
		return -1;
	}
	return 0;
}

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One jitter distribution ({"std": ms} or {"percentiles": {...}}). */
static int
dist_parse(json_t *j, const char *key, struct engine_dist *d, char *err,
    size_t errlen)
{
	json_t *v = json_object_get(j, key), *pct, *x;
	const char *k;
	double pts[ENGINE_DIST_MAX_POINTS][2];
	uint32_t n = 0, i;

	memset(d, 0, sizeof(*d));
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_object(v)) {
		say(err, errlen, "latency profile: jitter.%s is not an "
		    "object", key);
		return -1;
	}
	pct = json_object_get(v, "percentiles");
	if (json_object_get(v, "std") != NULL && pct != NULL) {
		say(err, errlen, "latency profile: jitter.%s has \"std\" and "
		    "\"percentiles\": one or the other", key);
		return -1;
	}
	if (json_object_get(v, "std") != NULL) {
		char sect[64];

		snprintf(sect, sizeof(sect), "jitter.%s", key);
		return num_field(v, sect, "std", 0,
		    ENGINE_PROFILE_MAX_JITTER_MS, &d->std_ms, err, errlen);
	}
	if (pct == NULL)
		return 0;
	if (!json_is_object(pct) || json_object_size(pct) < 2 ||
	    json_object_size(pct) > ENGINE_DIST_MAX_POINTS) {
		say(err, errlen, "latency profile: jitter.%s.percentiles is "
		    "an object of 2 to %d percentiles", key,
		    ENGINE_DIST_MAX_POINTS);
		return -1;
	}
	json_object_foreach(pct, k, x) {
		char *end;
		double p = strtod(k, &end);

		if (*k == '\0' || *end != '\0' || !(p >= 0 && p <= 100) ||
		    !json_is_number(x) ||
		    !isfinite(json_number_value(x)) ||
		    fabs(json_number_value(x)) >
		    ENGINE_PROFILE_MAX_JITTER_MS) {
			say(err, errlen, "latency profile: jitter.%s."
			    "percentiles[\"%.40s\"]: the key is a percentile "
			    "0..100, the value ms within +-%g", key, k,
			    ENGINE_PROFILE_MAX_JITTER_MS);
			return -1;
		}
		pts[n][0] = p;
		pts[n][1] = json_number_value(x);
		n++;
	}
	qsort(pts, n, sizeof(pts[0]), cmp_dbl);
	for (i = 0; i < n; i++) {
		if (i > 0 && (pts[i][0] == pts[i - 1][0] ||
		    pts[i][1] < pts[i - 1][1])) {
			say(err, errlen, "latency profile: jitter.%s."
			    "percentiles must rise with the percentile (at "
			    "%g: %g after %g)", key, pts[i][0], pts[i][1],
			    pts[i - 1][1]);
			return -1;
		}
		d->pct[i] = pts[i][0];
		d->ms[i] = pts[i][1];
	}
	d->npoints = n;
	return 0;
}

enum ts_err
engine_profile_parse(const char *text, size_t len,
    struct engine_latency *lat, double *load_factor_max, char *err,
    size_t errlen)
{
	struct engine_latency l;
	json_error_t je;
	json_t *root, *pre, *dec, *jit, *v;
	double lf = 1.0, shares = 0;
	const double S = ENGINE_PROFILE_MAX_SLOPE_MS;
	int bad = 0;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		say(err, errlen, "latency profile: not JSON (line %d: %s)",
		    je.line, je.text);
		return TS_EINVAL;
	}
	memset(&l, 0, sizeof(l));
	v = json_object_get(root, "tokstream_latency_profile");
	if (!json_is_object(root) || !json_is_integer(v) ||
	    json_integer_value(v) != ENGINE_PROFILE_VERSION) {
		if (json_is_integer(v))
			say(err, errlen, "latency profile: version %lld "
			    "(\"tokstream_latency_profile\"); this server "
			    "reads version %d", (long long)json_integer_value(v),
			    ENGINE_PROFILE_VERSION);
		else
			say(err, errlen, "latency profile: \"tokstream_latency_"
			    "profile\": %d is missing (not a profile?)",
			    ENGINE_PROFILE_VERSION);
		json_decref(root);
		return TS_EINVAL;
	}
	v = json_object_get(root, "name");
	if (v != NULL && (!json_is_string(v) ||
	    json_string_length(v) >= sizeof(l.name) ||
	    strlen(json_string_value(v)) != json_string_length(v))) {
		say(err, errlen, "latency profile: name is a string of at "
		    "most %zu bytes", sizeof(l.name) - 1);
		json_decref(root);
		return TS_EINVAL;
	}
	snprintf(l.name, sizeof(l.name), "%s", v != NULL ?
	    json_string_value(v) : "profile");
	pre = json_object_get(root, "prefill");
	dec = json_object_get(root, "decode");
	jit = json_object_get(root, "jitter");
	if ((pre != NULL && !json_is_object(pre)) ||
	    (dec != NULL && !json_is_object(dec)) ||
	    (jit != NULL && !json_is_object(jit))) {
		say(err, errlen, "latency profile: \"prefill\", \"decode\" "
		    "and \"jitter\" are objects when there");
		json_decref(root);
		return TS_EINVAL;
	}
	/* a missing section is one of zeros (root owns it) */
	if (pre == NULL)
		json_object_set_new(root, "prefill", pre = json_object());
	if (dec == NULL)
		json_object_set_new(root, "decode", dec = json_object());
	v = json_object_get(pre, "shares_step");
	if (v != NULL && !json_is_boolean(v)) {
		say(err, errlen, "latency profile: prefill.shares_step is "
		    "true or false");
		json_decref(root);
		return TS_EINVAL;
	}
	shares = v != NULL && json_is_true(v);
	bad = num_field(pre, "prefill", "base_ms", 0,
	    ENGINE_PROFILE_MAX_PREFILL_MS, &l.prefill_base_ms, err, errlen) ||
	    num_field(pre, "prefill", "per_token_ms", 0, S,
	    &l.prefill_per_token_ms, err, errlen) ||
	    num_field(pre, "prefill", "per_token2_ms", 0, S,
	    &l.prefill_per_token2_ms, err, errlen) ||
	    num_field(dec, "decode", "base_ms", 0,
	    ENGINE_PROFILE_MAX_STEP_MS, &l.tpot_ms, err, errlen) ||
	    num_field(dec, "decode", "per_seq_ms", 0, S,
	    &l.decode_per_seq_ms, err, errlen) ||
	    num_field(dec, "decode", "per_ctx_token_ms", 0, S,
	    &l.decode_per_ctx_token_ms, err, errlen) ||
	    num_field(dec, "decode", "load_factor_max", 1,
	    ENGINE_PROFILE_MAX_LOAD_FACTOR, &lf, err, errlen);
	if (!bad && (json_object_get(dec, "load_factor_max") == NULL ||
	    json_is_null(json_object_get(dec, "load_factor_max"))))
		lf = 1.0;
	if (!bad && jit != NULL)
		bad = dist_parse(jit, "prefill_ms", &l.jitter_prefill, err,
		    errlen) || dist_parse(jit, "decode_ms", &l.jitter_decode,
		    err, errlen);
	json_decref(root);
	if (bad)
		return TS_EINVAL;
	l.prefill_shares_step = shares != 0;
	*lat = l;
	*load_factor_max = lf;
	return TS_OK;
}

static json_t *
dist_json(const struct engine_dist *d)
{
	json_t *o, *p;
	uint32_t i;
	char k[32];

	if (d->npoints == 0)
		return d->std_ms > 0 ? json_pack("{s:f}", "std", d->std_ms) :
		    json_null();
	p = json_object();
	for (i = 0; i < d->npoints; i++) {
		snprintf(k, sizeof(k), "%g", d->pct[i]);
		json_object_set_new(p, k, json_real(d->ms[i]));
	}
	o = json_object();
	json_object_set_new(o, "percentiles", p);
	return o;
}

json_t *
engine_profile_json(const struct engine_latency *lat,
    double load_factor_max)
{
	return json_pack("{s:i, s:s, s:{s:f, s:f, s:f, s:b}, "
	    "s:{s:f, s:f, s:f, s:f}, s:{s:o, s:o}}",
	    "tokstream_latency_profile", ENGINE_PROFILE_VERSION,
	    "name", lat->name,
	    "prefill", "base_ms", lat->prefill_base_ms,
	    "per_token_ms", lat->prefill_per_token_ms,
	    "per_token2_ms", lat->prefill_per_token2_ms,
	    "shares_step", lat->prefill_shares_step,
	    "decode", "base_ms", lat->tpot_ms,
	    "per_seq_ms", lat->decode_per_seq_ms,
	    "per_ctx_token_ms", lat->decode_per_ctx_token_ms,
	    "load_factor_max", load_factor_max,
	    "jitter", "prefill_ms", dist_json(&lat->jitter_prefill),
	    "decode_ms", dist_json(&lat->jitter_decode));
}
