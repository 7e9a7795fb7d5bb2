/*
 * proto/knobs.h - the lab knobs: tokstream's own request fields that
 * override the latency model or inject an error (prefill_ms, tpot_ms,
 * error_after), taken by every endpoint that generates: GET /stream's
 * query string, POST /generate's body and the /v1 bodies. One table
 * (knobs.c) gives each knob's name, range, default, error code and where
 * it lands; the lab's parsers (http.c) and the OpenAI dialect's
 * (openai/parse.c) both read it, so a knob is refused with the same code
 * on every endpoint (docs/API.md "The lab knobs").
 */
#ifndef TS_PROTO_KNOBS_H
#define TS_PROTO_KNOBS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

struct http_error;

/* Where the knobs land: each -1 when the request does not give it. */
struct knobs {
	int32_t prefill_ms;      /* the whole prefill time, ms */
	int32_t tpot_ms;         /* the decode step time, ms */
	int32_t error_after;     /* inject an error after N tokens */
};

/* One row of the table. */
struct knob {
	const char *name;        /* the parameter or JSON field */
	int32_t min, max;        /* the range, inclusive */
	int32_t dflt;            /* when absent or null */
	const char *code;        /* the code of every error it gets (400) */
	size_t off;              /* offsetof(struct knobs, its field) */
};

/* The table, KNOBS_N rows in the order of struct knobs. */
#define KNOBS_N 3
extern const struct knob knobs_table[KNOBS_N];

/* Sets every knob to its default. */
void knobs_defaults(struct knobs *k);

/* The row named (name, len), or NULL. */
const struct knob *knobs_find(const char *name, size_t len);

/*
 * Stores v in k's field for knob kn when it is in range; else fills *err
 * (400, kn->code, param kn->name: "must not be negative", or as
 * knobs_range_error) and returns TS_EINVAL.
 */
enum ts_err knobs_set(const struct knob *kn, struct knobs *k, long long v,
    struct http_error *err);

/* Fills *err for a value of knob kn that is not an integer from min to
 * max (400, kn->code, param kn->name). */
void knobs_range_error(const struct knob *kn, struct http_error *err);

/*
 * Reads every knob from the JSON object root (absent or null: the
 * default, left as it is) into *k. TS_OK, or TS_EINVAL with *err filled
 * for the first knob, in table order, that is not an integer in range.
 */
enum ts_err knobs_from_json(const json_t *root, struct knobs *k,
    struct http_error *err);

#endif /* TS_PROTO_KNOBS_H */
