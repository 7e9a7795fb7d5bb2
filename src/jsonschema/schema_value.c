/*
 * jsonschema/schema_value.c - JSON values as JSON Schema sees them: their
 * type for the generator, equality as enum, const and uniqueItems define
 * it, a hash that agrees with it, and nesting depth. See schema_int.h.
 */
#include "jsonschema/schema_int.h"

#include <string.h>

#include "common/rng.h"

/* The generator's type of a JSON value. */
int
schema_value_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
		return TY_NULL;
	case JSON_TRUE:
	case JSON_FALSE:
		return TY_BOOL;
	case JSON_INTEGER:
		return TY_INT;
	case JSON_REAL:
		return TY_NUM;
	case JSON_STRING:
		return TY_STR;
	case JSON_OBJECT:
		return TY_OBJ;
	default:
		return TY_ARR;
	}
}

/* Equality as JSON Schema's enum, const and uniqueItems define it:
 * numbers by value, objects regardless of key order. */
int
schema_value_same(const json_t *a, const json_t *b)
{
	const char *k;
	size_t klen, i;
	json_t *v;

	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		    memcmp(json_string_value(a), json_string_value(b),
		    json_string_length(a)) == 0;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (i = 0; i < json_array_size(a); i++)
			if (!schema_value_same(json_array_get(a, i),
			    json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_keylen_foreach((json_t *)a, k, klen, v) {
			const json_t *w = json_object_getn(b, k, klen);

			if (w == NULL || !schema_value_same(v, w))
				return 0;
		}
		return 1;
	default:
		return 1;
	}
}

/* A hash consistent with schema_value_same. */
uint64_t
schema_value_hash(const json_t *v)
{
	const char *k;
	size_t klen, i;
	json_t *e;
	uint64_t h, bits;
	double d;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
	case JSON_REAL:
		d = json_number_value(v);
		if (d == 0)
			d = 0;  /* -0 == 0 */
		memcpy(&bits, &d, sizeof(bits));
		return rng_mix64(bits ^ 0x51);
	case JSON_STRING:
		return rng_fnv1a(RNG_FNV1A_INIT, json_string_value(v),
		    json_string_length(v));
	case JSON_ARRAY:
		h = 0x52;
		for (i = 0; i < json_array_size(v); i++)
			h = rng_mix64(h + schema_value_hash(json_array_get(v,
			    i)));
		return h;
	case JSON_OBJECT:
		h = 0x53;
		json_object_keylen_foreach((json_t *)v, k, klen, e)
			h += rng_mix64(rng_fnv1a(RNG_FNV1A_INIT, k, klen) ^
			    schema_value_hash(e));
		return rng_mix64(h);
	default:
		return rng_mix64((uint64_t)json_typeof(v) + 0x54);
	}
}

unsigned
schema_value_depth(const json_t *v)
{
	const char *k;
	size_t i;
	json_t *e;
	unsigned d = 0, x;

	if (json_is_array(v)) {
		for (i = 0; i < json_array_size(v); i++)
			if ((x = schema_value_depth(json_array_get(v, i))) > d)
				d = x;
		return d + 1;
	}
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, e)
			if ((x = schema_value_depth(e)) > d)
				d = x;
		return d + 1;
	}
	return 0;
}

