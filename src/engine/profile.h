/*
 * engine/profile.h - latency profiles: the latency model's parameters
 * (engine/latency.h) as a JSON document, version 1, and a few named
 * presets computed from first principles (a model's weight and KV bytes
 * over an accelerator's memory bandwidth, its FLOPs over the peak). The
 * format and the presets' arithmetic are in docs/API.md "Latency
 * profiles"; `tokbench fit` writes the format from a recorded run. Text
 * in, structs out: no file I/O (the server reads the file).
 */
#ifndef TS_ENGINE_PROFILE_H
#define TS_ENGINE_PROFILE_H

#include <stddef.h>

#include <jansson.h>

#include "common/ts.h"
#include "engine/latency.h"

#define ENGINE_PROFILE_VERSION 1
/* Bounds of a profile's fields, ms: a step or a prefill base beyond
 * them is a typo, not a model. */
#define ENGINE_PROFILE_MAX_PREFILL_MS 60000.0   /* --prefill-base-ms' */
#define ENGINE_PROFILE_MAX_STEP_MS 10000.0      /* --tpot-ms' */
#define ENGINE_PROFILE_MAX_SLOPE_MS 1000.0
#define ENGINE_PROFILE_MAX_JITTER_MS 60000.0
#define ENGINE_PROFILE_MAX_LOAD_FACTOR 100.0

/*
 * Parses a profile (JSON text of len bytes) into *lat and
 * *load_factor_max, which it overwrites only on success. Keys: version
 * "tokstream_latency_profile": 1; "name" (string, optional, at most
 * ENGINE_PROFILE_NAME_MAX - 1 bytes); "prefill" {base_ms, per_token_ms,
 * per_token2_ms, shares_step}; "decode" {base_ms, per_seq_ms,
 * per_ctx_token_ms, load_factor_max}; "jitter" {prefill_ms, decode_ms},
 * each {"std": ms} or {"percentiles": {"P": ms, ...}}; a missing field is
 * 0 (false, no jitter; load factor 1), "prefill" and "decode" included;
 * "fit" and other unknown keys are ignored. The prefill base is
 * 0..ENGINE_PROFILE_MAX_PREFILL_MS, the decode base
 * 0..ENGINE_PROFILE_MAX_STEP_MS, slopes 0..ENGINE_PROFILE_MAX_SLOPE_MS
 * (a longer prompt or a larger batch never makes a pass shorter), the
 * load factor 1..ENGINE_PROFILE_MAX_LOAD_FACTOR; a jitter has "std" or
 * "percentiles", not both. Returns TS_OK, or TS_EINVAL
 * with one line in err naming the field (err may be NULL).
 */
enum ts_err engine_profile_parse(const char *text, size_t len,
    struct engine_latency *lat, double *load_factor_max, char *err,
    size_t errlen);

/*
 * The preset `name` (without "preset:"), computed from its model and
 * accelerator figures (docs/API.md "Latency profiles"), into *lat and
 * *load_factor_max (1). TS_OK, or TS_EINVAL with one line in err
 * listing the names there are.
 */
enum ts_err engine_profile_preset(const char *name,
    struct engine_latency *lat, double *load_factor_max, char *err,
    size_t errlen);

/* The presets' names, comma-separated, for usage text. */
const char *engine_profile_preset_names(void);

/* The figures a preset is computed from (public for the tests and the
 * docs' arithmetic). Bytes, bytes per second, FLOP/s. */
struct engine_preset {
	const char *name;
	const char *model, *accelerator;
	double params;              /* parameters */
	double weight_bytes;        /* read once per decode step */
	double kv_bytes_per_token;  /* read per context token per step */
	double bandwidth;           /* peak memory bandwidth, B/s */
	double peak_flops;          /* dense bf16, FLOP/s */
	double bw_efficiency;       /* fraction of bandwidth reached */
	double flops_efficiency;    /* fraction of peak in prefill */
	double step_overhead_ms;    /* per step, outside the GPU's work */
};
const struct engine_preset *engine_preset_find(const char *name);

/*
 * The profile in use as a JSON object of the file's shape (version,
 * name, prefill, decode, jitter), for /v1/models, /_debug and the
 * startup log. New reference; NULL only when out of memory.
 */
json_t *engine_profile_json(const struct engine_latency *lat,
    double load_factor_max);

#endif /* TS_ENGINE_PROFILE_H */
