/*
 * proto/knobs.c - the table of lab knobs and the checks both request
 * parsers share (knobs.h).
 */
#include "proto/knobs.h"

#include <string.h>

#include "proto/http_error.h"
#include "proto/limits.h"

const struct knob knobs_table[KNOBS_N] = {
	{
		.name = "prefill_ms",
		.min = 0, .max = HTTP_MAX_PREFILL_MS, .dflt = -1,
		.code = "invalid_prefill_ms",
		.off = offsetof(struct knobs, prefill_ms),
	},
	{
		.name = "tpot_ms",
		.min = 0, .max = HTTP_MAX_TPOT_MS, .dflt = -1,
		.code = "invalid_tpot_ms",
		.off = offsetof(struct knobs, tpot_ms),
	},
	{
		.name = "error_after",
		.min = 0, .max = HTTP_MAX_TOKENS_CAP, .dflt = -1,
		.code = "invalid_error_after",
		.off = offsetof(struct knobs, error_after),
	},
};

/* The field of k that knob kn lands in. */
static int32_t *
knobs_slot(const struct knob *kn, struct knobs *k)
{
	return (int32_t *)(void *)((char *)k + kn->off);
}

void
knobs_defaults(struct knobs *k)
{
	size_t i;

	for (i = 0; i < KNOBS_N; i++)
		*knobs_slot(&knobs_table[i], k) = knobs_table[i].dflt;
}

const struct knob *
knobs_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < KNOBS_N; i++)
		if (strlen(knobs_table[i].name) == len &&
		    memcmp(knobs_table[i].name, name, len) == 0)
			return &knobs_table[i];
	return NULL;
}

void
knobs_range_error(const struct knob *kn, struct http_error *err)
{
	http_error_set(err, 400, "invalid_request_error", kn->code,
	    "%s must be an integer from %ld to %ld", kn->name,
	    (long)kn->min, (long)kn->max);
	http_error_set_param(err, "%s", kn->name);
}

enum ts_err
knobs_set(const struct knob *kn, struct knobs *k, long long v,
    struct http_error *err)
{
	if (v < 0 && kn->min >= 0) {
		http_error_set(err, 400, "invalid_request_error", kn->code,
		    "%s must not be negative", kn->name);
		http_error_set_param(err, "%s", kn->name);
		return TS_EINVAL;
	}
	if (v < kn->min || v > kn->max) {
		knobs_range_error(kn, err);
		return TS_EINVAL;
	}
	*knobs_slot(kn, k) = (int32_t)v;
	return TS_OK;
}

enum ts_err
knobs_from_json(const json_t *root, struct knobs *k, struct http_error *err)
{
	size_t i;

	for (i = 0; i < KNOBS_N; i++) {
		const struct knob *kn = &knobs_table[i];
		const json_t *v = json_object_get(root, kn->name);

		if (v == NULL || json_is_null(v))
			continue;
		if (!json_is_integer(v)) {
			knobs_range_error(kn, err);
			return TS_EINVAL;
		}
		if (knobs_set(kn, k, (long long)json_integer_value(v), err) !=
		    TS_OK)
			return TS_EINVAL;
	}
	return TS_OK;
}
