/*
 * openai/parse_field.h - the parser's helpers for one JSON field: reading
 * an integer, number or boolean with its range, and the OpenAI-shaped 400
 * errors that name the field (OpenAI API reference, "Error codes"; the
 * messages follow OpenAI's wording). Private to openai/ (parse.c and its
 * parts); no I/O.
 */
#ifndef TS_OPENAI_PARSE_FIELD_H
#define TS_OPENAI_PARSE_FIELD_H

#include <stddef.h>

#include <jansson.h>

#include "proto/http_error.h"

/* The error type of every 400 the parser gives. */
#define FIELD_ERR_TYPE "invalid_request_error"

/* True when v is the JSON string `lit` exactly (NUL bytes included). */
int field_str_is(const json_t *v, const char *lit);

/* OpenAI's words for a JSON value's type, as its error messages use. */
const char *field_type_name(const json_t *v);

/* Absent and null are the same: "not given". */
int field_given(const json_t *v);

/* The 400s that name the field `param`: missing (missing_required_parameter),
 * of the wrong JSON type (invalid_type; got: what it was), an empty array
 * (empty_array), an array or a string over its maximum length. */
void field_err_missing(struct http_error *err, const char *param);

void field_err_type(struct http_error *err, const char *param,
    const char *want,
    const json_t *got);

void field_err_empty_array(struct http_error *err, const char *param);

void field_err_array_long(struct http_error *err, const char *param,
    size_t max,
    size_t got);

void field_err_string_long(struct http_error *err, const char *param,
    size_t max,
    size_t got);

/*
 * Reads integer field `name` of `root` into *out when it is given and in
 * [min, max]. Returns 1 (stored), 0 (absent or null) or -1 (*err filled:
 * not an integer, or out of range).
 */
int field_get_int(const json_t *root, const char *name, long long min,
    long long max,
    long long *out, struct http_error *err);

/*
 * Reads number field `name` (an integer or a decimal) into *out when it
 * is given and in [min, max], or (min, max] when min_open. Returns 1, 0
 * or -1 as field_get_int.
 */
int field_get_number(const json_t *root, const char *name, double min,
    int min_open,
    double max, double *out, struct http_error *err);

/* Reads boolean field `name` of `obj` (`param` names it in errors).
 * Returns 1, 0 or -1 as field_get_int. */
int field_get_bool(const json_t *obj, const char *name, const char *param,
    int *out,
    struct http_error *err);

/*
 * The length of the longest prefix of (s, len) of at most `max` bytes
 * that ends on a UTF-8 character boundary ((s, len) is valid UTF-8, as
 * jansson checked), so quoting it never cuts a character.
 */
size_t field_utf8_prefix(const char *s, size_t len, size_t max);

/* True when the string v may be quoted in an error message: short, and
 * without NUL (printf's %.*s would stop there) or control bytes. */
int field_quotable(const json_t *v, size_t max);

/*
 * A request body (body, len bytes, not empty: each endpoint words its own
 * empty_body 400) as a JSON object: a new reference the caller drops, or
 * NULL with *err, as every OpenAI-shaped endpoint refuses a body: arrays
 * and objects nested deeper than OPENAI_MAX_DEPTH (http_error_too_deep),
 * not JSON or a key given twice (400 invalid_json with jansson's message,
 * line and column), JSON that is not an object (400 invalid_json naming
 * its type). NUL bytes in strings are allowed (\u0000).
 */
json_t *field_body_object(const char *body, size_t len,
    struct http_error *err);

#endif /* TS_OPENAI_PARSE_FIELD_H */
