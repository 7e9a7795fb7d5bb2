/*
 * openai/parse_field.c - the parser's helpers for one JSON field. See
 * parse_field.h. No I/O.
 */
#include "openai/parse_field.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openai/openai.h"
#include "proto/http.h"

#define ERR_TYPE FIELD_ERR_TYPE

/* True when v is the JSON string `lit` exactly (NUL bytes included). */
int
field_str_is(const json_t *v, const char *lit)
{
	size_t n = strlen(lit);

	return json_string_length(v) == n &&
	    memcmp(json_string_value(v), lit, n) == 0;
}

/* OpenAI's words for a JSON value's type, as its error messages use. */
const char *
field_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a decimal";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "a value";
}

/* Absent and null are the same: "not given". */
int
field_given(const json_t *v)
{
	return v != NULL && !json_is_null(v);
}

void
field_err_missing(struct http_error *err, const char *param)
{
	http_error_set(err, 400, ERR_TYPE, "missing_required_parameter",
	    "Missing required parameter: '%s'.", param);
	http_error_set_param(err, "%s", param);
}

void
field_err_type(struct http_error *err, const char *param, const char *want,
    const json_t *got)
{
	http_error_set(err, 400, ERR_TYPE, "invalid_type",
	    "Invalid type for '%s': expected %s, but got %s instead.", param,
	    want, field_type_name(got));
	http_error_set_param(err, "%s", param);
}

void
field_err_empty_array(struct http_error *err, const char *param)
{
	http_error_set(err, 400, ERR_TYPE, "empty_array",
	    "Invalid '%s': empty array. Expected an array with minimum "
	    "length 1, but got an empty array instead.", param);
	http_error_set_param(err, "%s", param);
}

void
field_err_array_long(struct http_error *err, const char *param, size_t max,
    size_t got)
{
	http_error_set(err, 400, ERR_TYPE, "array_above_max_length",
	    "Invalid '%s': array too long. Expected an array with maximum "
	    "length %zu, but got an array with length %zu instead.", param,
	    max, got);
	http_error_set_param(err, "%s", param);
}

void
field_err_string_long(struct http_error *err, const char *param, size_t max,
    size_t got)
{
	http_error_set(err, 400, ERR_TYPE, "string_above_max_length",
	    "Invalid '%s': string too long. Expected a string with maximum "
	    "length %zu bytes, but got a string with length %zu bytes "
	    "instead.", param, max, got);
	http_error_set_param(err, "%s", param);
}

/*
 * Reads integer field `name` of `root` into *out when it is given and in
 * [min, max]. Returns 1 (stored), 0 (absent or null) or -1 (*err filled:
 * not an integer, or out of range).
 */
int
field_get_int(const json_t *root, const char *name, long long min,
    long long max,
    long long *out, struct http_error *err)
{
	const json_t *v = json_object_get(root, name);
	long long iv;

	if (!field_given(v))
		return 0;
	if (!json_is_integer(v)) {
		field_err_type(err, name, "an integer", v);
		return -1;
	}
	iv = json_integer_value(v);
	if (iv < min) {
		http_error_set(err, 400, ERR_TYPE, "integer_below_min_value",
		    "Invalid '%s': integer below minimum value. Expected a "
		    "value >= %lld, but got %lld instead.", name, min, iv);
		http_error_set_param(err, "%s", name);
		return -1;
	}
	if (iv > max) {
		http_error_set(err, 400, ERR_TYPE, "integer_above_max_value",
		    "Invalid '%s': integer above maximum value. Expected a "
		    "value <= %lld, but got %lld instead.", name, max, iv);
		http_error_set_param(err, "%s", name);
		return -1;
	}
	*out = iv;
	return 1;
}

/*
 * Reads number field `name` (an integer or a decimal) into *out when it
 * is given and in [min, max], or (min, max] when min_open. Returns 1, 0
 * or -1 as get_int.
 */
int
field_get_number(const json_t *root, const char *name, double min,
    int min_open,
    double max, double *out, struct http_error *err)
{
	const json_t *v = json_object_get(root, name);
	double d;

	if (!field_given(v))
		return 0;
	if (!json_is_number(v)) {
		field_err_type(err, name, "a number", v);
		return -1;
	}
	d = json_number_value(v);
	if (d < min || (min_open && d == min)) {
		http_error_set(err, 400, ERR_TYPE, "decimal_below_min_value",
		    "Invalid '%s': decimal below minimum value. Expected a "
		    "value %s %g, but got %g instead.", name,
		    min_open ? ">" : ">=", min, d);
		http_error_set_param(err, "%s", name);
		return -1;
	}
	if (d > max) {
		http_error_set(err, 400, ERR_TYPE, "decimal_above_max_value",
		    "Invalid '%s': decimal above maximum value. Expected a "
		    "value <= %g, but got %g instead.", name, max, d);
		http_error_set_param(err, "%s", name);
		return -1;
	}
	*out = d;
	return 1;
}

/* Reads boolean field `name` of `obj` (`param` names it in errors).
 * Returns 1, 0 or -1 as get_int. */
int
field_get_bool(const json_t *obj, const char *name, const char *param,
    int *out,
    struct http_error *err)
{
	const json_t *v = json_object_get(obj, name);

	if (!field_given(v))
		return 0;
	if (!json_is_boolean(v)) {
		field_err_type(err, param, "a boolean", v);
		return -1;
	}
	*out = json_is_true(v);
	return 1;
}

/*
 * The length of the longest prefix of (s, len) of at most `max` bytes
 * that ends on a UTF-8 character boundary ((s, len) is valid UTF-8, as
 * jansson checked), so quoting it never cuts a character.
 */
size_t
field_utf8_prefix(const char *s, size_t len, size_t max)
{
	size_t n = len < max ? len : max;

	while (n > 0 && n < len && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* True when the string v may be quoted in an error message: short, and
 * without NUL (printf's %.*s would stop there) or control bytes. */
int
field_quotable(const json_t *v, size_t max)
{
	const char *s = json_string_value(v);
	size_t i, n = json_string_length(v);

	if (n > max)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20)
			return 0;
	return 1;
}


json_t *
field_body_object(const char *body, size_t len, struct http_error *err)
{
	json_error_t jerr;
	json_t *root;

	/* the server's body reader refuses these already
	 * (transport/reply.h: reply_read_json); checked here too, as the
	 * encoders and the schema generator rely on it whoever calls */
	if (http_json_too_deep(body, len, OPENAI_MAX_DEPTH)) {
		http_error_too_deep(err);
		return NULL;
	}
	if (http_json_too_many(body, len, HTTP_MAX_JSON_CONTAINERS)) {
		http_error_too_many(err);
		return NULL;
	}
	/* Duplicate keys are refused, as on the lab endpoints: no silent
	 * pick of one of them. */
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &jerr);
	if (root == NULL) {
		http_error_set(err, 400, ERR_TYPE, "invalid_json",
		    "The body is not valid JSON: %s at line %d, column %d.",
		    jerr.text, jerr.line, jerr.column);
		return NULL;
	}
	if (!json_is_object(root)) {
		http_error_set(err, 400, ERR_TYPE, "invalid_json",
		    "The body must be a JSON object, but got %s.",
		    field_type_name(root));
		json_decref(root);
		return NULL;
	}
	return root;
}
