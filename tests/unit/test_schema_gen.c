/*
 * test_schema_gen.c - the JSON Schema instance generator: determinism,
 * validity over 1,000 seeds per schema (checked by a small validator of
 * the supported keywords below, independent of the generator), exact
 * compact bytes, refusals naming the path, limits and the output cap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonschema/schema_gen.h"

#define FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)
#define SEEDS 1000

/* ---- a small validator -------------------------------------------------- */

static int valid(const json_t *root, const json_t *s, const json_t *v,
    int depth);

/* Equality of JSON Schema: numbers by value, objects unordered. */
static int
same(const json_t *a, const json_t *b)
{
	const char *k;
	json_t *x;
	size_t i;

	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (i = 0; i < json_array_size(a); i++)
			if (!same(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a)) {
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)a, k, x)
			if (json_object_get(b, k) == NULL ||
			    !same(x, json_object_get(b, k)))
				return 0;
		return 1;
	}
	return json_equal(a, b);
}

static int
is_int(const json_t *v)
{
	double d;

	if (json_is_integer(v))
		return 1;
	if (!json_is_real(v))
		return 0;
	d = json_real_value(v);
	return d == (double)(long long)d;
}

static int
type_ok(const char *t, const json_t *v)
{
	if (strcmp(t, "null") == 0)
		return json_is_null(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(t, "integer") == 0)
		return is_int(v);
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "object") == 0)
		return json_is_object(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	return 0;
}

static int
digits(const char *s, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int
date_ok(const char *s)
{
	int mo, d;

	if (strlen(s) < 10 || !digits(s, 4) || s[4] != '-' ||
	    !digits(s + 5, 2) || s[7] != '-' || !digits(s + 8, 2))
		return 0;
	mo = atoi(s + 5);
	d = atoi(s + 8);
	return mo >= 1 && mo <= 12 && d >= 1 && d <= 28;
}

static int
time_ok(const char *s)
{
	return strlen(s) == 9 && digits(s, 2) && s[2] == ':' &&
	    digits(s + 3, 2) && s[5] == ':' && digits(s + 6, 2) &&
	    s[8] == 'Z' && atoi(s) < 24 && atoi(s + 3) < 60 &&
	    atoi(s + 6) < 60;
}

static int
label_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' &&
		    s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

static int
hostname_ok(const char *s)
{
	const char *dot;

	while ((dot = strchr(s, '.')) != NULL) {
		if (!label_ok(s, (size_t)(dot - s)))
			return 0;
		s = dot + 1;
	}
	return label_ok(s, strlen(s));
}

static int
format_ok(const char *f, const char *s)
{
	size_t i;
	int parts = 0;
	const char *at;

	if (strcmp(f, "date-time") == 0)
		return strlen(s) == 20 && date_ok(s) && s[10] == 'T' &&
		    time_ok(s + 11);
	if (strcmp(f, "date") == 0)
		return strlen(s) == 10 && date_ok(s);
	if (strcmp(f, "time") == 0)
		return time_ok(s);
	if (strcmp(f, "uuid") == 0) {
		if (strlen(s) != 36)
			return 0;
		for (i = 0; i < 36; i++) {
			int dash = i == 8 || i == 13 || i == 18 || i == 23;

			if (dash ? s[i] != '-' : !((s[i] >= '0' &&
			    s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
				return 0;
		}
		return s[14] == '4' && strchr("89ab", s[19]) != NULL;
	}
	if (strcmp(f, "email") == 0) {
		at = strchr(s, '@');
		return at != NULL && at != s && hostname_ok(at + 1) &&
		    strchr(at + 1, '.') != NULL;
	}
	if (strcmp(f, "hostname") == 0)
		return hostname_ok(s);
	if (strcmp(f, "uri") == 0 || strcmp(f, "url") == 0 ||
	    strcmp(f, "uri-reference") == 0)
		return strncmp(s, "https://", 8) == 0 && strchr(s, ' ') ==
		    NULL;
	if (strcmp(f, "ipv4") == 0) {
		while (*s != '\0') {
			char *e;
			long x = strtol(s, &e, 10);

			if (e == s || e - s > 3 || x < 0 || x > 255 ||
			    (*e != '.' && *e != '\0'))
				return 0;
			parts++;
			s = *e == '.' ? e + 1 : e;
		}
		return parts == 4;
	}
	return 1;       /* number formats */
}

static size_t
cps(const char *s, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			k++;
	return k;
}

/* "#", "#/$defs/NAME", "#/definitions/NAME" with ~0 ~1 and %20. */
static const json_t *
deref(const json_t *root, const char *r)
{
	char name[256];
	const char *defs = "$defs", *p;
	size_t n = 0;

	if (strcmp(r, "#") == 0)
		return root;
	if (strncmp(r, "#/$defs/", 8) == 0) {
		p = r + 8;
	} else if (strncmp(r, "#/definitions/", 14) == 0) {
		p = r + 14;
		defs = "definitions";
	} else {
		return NULL;
	}
	for (; *p != '\0' && n + 1 < sizeof(name); p++) {
		if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
			name[n++] = *++p == '0' ? '~' : '/';
		} else if (strncmp(p, "%20", 3) == 0) {
			name[n++] = ' ';
			p += 2;
		} else {
			name[n++] = *p;
		}
	}
	name[n] = '\0';
	return json_object_get(json_object_get(root, defs), name);
}

/* Nesting of arrays and objects. */
static int
depth_of(const json_t *v)
{
	const char *k;
	json_t *e;
	size_t i;
	int d = 0, x;

	if (json_is_array(v))
		for (i = 0; i < json_array_size(v); i++)
			if ((x = depth_of(json_array_get(v, i))) > d)
				d = x;
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, e)
			if ((x = depth_of(e)) > d)
				d = x;
	return d + (json_is_array(v) || json_is_object(v));
}

static int
count_valid(const json_t *root, const json_t *arr, const json_t *v,
    int depth)
{
	size_t i;
	int n = 0;

	for (i = 0; i < json_array_size(arr); i++)
		n += valid(root, json_array_get(arr, i), v, depth + 1);
	return n;
}

static int
num_ok(const json_t *s, double d)
{
	const json_t *x;

	if ((x = json_object_get(s, "minimum")) != NULL) {
		if (json_is_true(json_object_get(s, "exclusiveMinimum")) ?
		    !(d > json_number_value(x)) : !(d >= json_number_value(x)))
			return 0;
	}
	if ((x = json_object_get(s, "maximum")) != NULL) {
		if (json_is_true(json_object_get(s, "exclusiveMaximum")) ?
		    !(d < json_number_value(x)) : !(d <= json_number_value(x)))
			return 0;
	}
	if ((x = json_object_get(s, "exclusiveMinimum")) != NULL &&
	    json_is_number(x) && !(d > json_number_value(x)))
		return 0;
	if ((x = json_object_get(s, "exclusiveMaximum")) != NULL &&
	    json_is_number(x) && !(d < json_number_value(x)))
		return 0;
	if ((x = json_object_get(s, "multipleOf")) != NULL) {
		double q = d / json_number_value(x);

		if (q != (double)(long long)q)     /* as ajv computes it */
			return 0;
	}
	if ((x = json_object_get(s, "format")) != NULL &&
	    strcmp(json_string_value(x), "int32") == 0 &&
	    (d != (double)(long long)d || d < -2147483648.0 ||
	    d > 2147483647.0))
		return 0;
	return 1;
}

static int
valid(const json_t *root, const json_t *s, const json_t *v, int depth)
{
	const json_t *x, *t;
	const char *k;
	json_t *e;
	size_t i, j, n;
	int ok;

	if (depth > 200)
		return 0;
	if (json_is_boolean(s))
		return json_is_true(s);
	if ((x = json_object_get(s, "$ref")) != NULL) {
		t = deref(root, json_string_value(x));
		return t != NULL && valid(root, t, v, depth + 1);
	}
	if ((x = json_object_get(s, "anyOf")) != NULL) {
		for (i = 0; i < json_array_size(x); i++)
			if (valid(root, json_array_get(x, i), v, depth + 1))
				break;
		if (i == json_array_size(x))
			return 0;
	}
	if ((x = json_object_get(s, "oneOf")) != NULL &&
	    count_valid(root, x, v, depth) != 1)
		return 0;
	if ((x = json_object_get(s, "allOf")) != NULL &&
	    (size_t)count_valid(root, x, v, depth) != json_array_size(x))
		return 0;
	if ((x = json_object_get(s, "type")) != NULL &&
	    !(json_is_null(v) && json_is_true(json_object_get(s,
	    "nullable")))) {
		ok = 0;
		if (json_is_string(x))
			ok = type_ok(json_string_value(x), v);
		for (i = 0; i < json_array_size(x); i++)
			ok |= type_ok(json_string_value(json_array_get(x, i)),
			    v);
		if (!ok)
			return 0;
	}
	if ((x = json_object_get(s, "enum")) != NULL) {
		for (i = 0; i < json_array_size(x); i++)
			if (same(json_array_get(x, i), v))
				break;
		if (i == json_array_size(x))
			return 0;
	}
	if ((x = json_object_get(s, "const")) != NULL && !same(x, v))
		return 0;
	if (json_is_string(v)) {
		n = cps(json_string_value(v), json_string_length(v));
		if ((x = json_object_get(s, "minLength")) != NULL &&
		    n < (size_t)json_integer_value(x))
			return 0;
		if ((x = json_object_get(s, "maxLength")) != NULL &&
		    n > (size_t)json_integer_value(x))
			return 0;
		if ((x = json_object_get(s, "format")) != NULL &&
		    !format_ok(json_string_value(x), json_string_value(v)))
			return 0;
	}
	if (json_is_number(v) && !num_ok(s, json_number_value(v)))
		return 0;
	if (json_is_object(v)) {
		const json_t *props = json_object_get(s, "properties");
		const json_t *addl = json_object_get(s,
		    "additionalProperties");

		x = json_object_get(s, "required");
		for (i = 0; i < json_array_size(x); i++)
			if (json_object_get(v, json_string_value(
			    json_array_get(x, i))) == NULL)
				return 0;
		json_object_foreach((json_t *)v, k, e) {
			t = json_object_get(props, k);
			if (t != NULL) {
				if (!valid(root, t, e, depth + 1))
					return 0;
			} else if (addl != NULL &&
			    !valid(root, addl, e, depth + 1)) {
				return 0;
			}
		}
		if ((x = json_object_get(s, "minProperties")) != NULL &&
		    json_object_size(v) < (size_t)json_integer_value(x))
			return 0;
		if ((x = json_object_get(s, "maxProperties")) != NULL &&
		    json_object_size(v) > (size_t)json_integer_value(x))
			return 0;
	}
	if (json_is_array(v)) {
		const json_t *pre = json_object_get(s, "prefixItems");
		const json_t *it = json_object_get(s, "items");
		const json_t *rest = it;

		if (json_is_array(it)) {
			pre = it;
			rest = json_object_get(s, "additionalItems");
		}
		for (i = 0; i < json_array_size(v); i++) {
			t = i < json_array_size(pre) ? json_array_get(pre, i) :
			    rest;
			if (t != NULL && !valid(root, t, json_array_get(v, i),
			    depth + 1))
				return 0;
		}
		if ((x = json_object_get(s, "minItems")) != NULL &&
		    json_array_size(v) < (size_t)json_integer_value(x))
			return 0;
		if ((x = json_object_get(s, "maxItems")) != NULL &&
		    json_array_size(v) > (size_t)json_integer_value(x))
			return 0;
		if (json_is_true(json_object_get(s, "uniqueItems")))
			for (i = 0; i < json_array_size(v); i++)
				for (j = i + 1; j < json_array_size(v); j++)
					if (same(json_array_get(v, i),
					    json_array_get(v, j)))
						return 0;
	}
	return 1;
}

/* ---- helpers ------------------------------------------------------------ */

static json_t *
load(const char *text)
{
	json_error_t e;
	json_t *s = json_loads(text, JSON_DECODE_ANY, &e);

	if (s == NULL)
		fail_msg("bad test schema: %s: %s", e.text, text);
	return s;
}

/* Generates with `seed`; the caller frees the text. */
static char *
gen_text(const json_t *s, uint64_t seed, size_t *len)
{
	struct ts_buf b;
	char msg[200] = "";
	enum ts_err rc;

	ts_buf_init(&b, SCHEMA_GEN_MAX_OUT);
	rc = schema_gen(s, seed, &b, msg, sizeof(msg));
	if (rc != TS_OK)
		fail_msg("seed %llu: rc %d: %s", (unsigned long long)seed,
		    (int)rc, msg);
	*len = b.len;
	return b.p;
}

/* ---- the schemas -------------------------------------------------------- */

static const char *const good_schemas[] = {
	/* 0: OpenAI's get_weather */
	"{\"type\":\"object\",\"properties\":{\"location\":{\"type\":"
	"\"string\",\"description\":\"City and country e.g. Bogot\xc3\xa1, "
	"Colombia\"},\"units\":{\"type\":\"string\",\"enum\":[\"celsius\","
	"\"fahrenheit\"],\"description\":\"Units\"}},\"required\":["
	"\"location\",\"units\"],\"additionalProperties\":false}",
	/* 1: nested objects, arrays of objects */
	"{\"type\":\"object\",\"properties\":{\"customer\":{\"type\":"
	"\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
	"\"address\":{\"type\":\"object\",\"properties\":{\"street\":{"
	"\"type\":\"string\"},\"zip\":{\"type\":\"string\",\"minLength\":5,"
	"\"maxLength\":5}},\"required\":[\"street\",\"zip\"],"
	"\"additionalProperties\":false}},\"required\":[\"name\","
	"\"address\"]},\"lines\":{\"type\":\"array\",\"minItems\":1,"
	"\"maxItems\":5,\"items\":{\"type\":\"object\",\"properties\":{"
	"\"sku\":{\"type\":\"string\",\"maxLength\":8},\"qty\":{\"type\":"
	"\"integer\",\"minimum\":1},\"tags\":{\"type\":\"array\",\"items\":{"
	"\"type\":\"string\"}}},\"required\":[\"sku\",\"qty\"],"
	"\"additionalProperties\":false}}},\"required\":[\"customer\","
	"\"lines\"],\"additionalProperties\":false}",
	/* 2: numeric bounds */
	"{\"type\":\"object\",\"properties\":{\"price\":{\"type\":\"number\","
	"\"exclusiveMinimum\":0,\"maximum\":1000,\"multipleOf\":0.01},"
	"\"qty\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":99},"
	"\"pct\":{\"type\":\"number\",\"minimum\":0,\"exclusiveMaximum\":1},"
	"\"step\":{\"type\":\"integer\",\"multipleOf\":5,\"minimum\":-20,"
	"\"maximum\":20},\"old\":{\"type\":\"number\",\"minimum\":10,"
	"\"exclusiveMinimum\":true,\"maximum\":11,\"exclusiveMaximum\":true},"
	"\"quarter\":{\"type\":\"number\",\"multipleOf\":0.25},\"tiny\":{"
	"\"type\":\"number\",\"multipleOf\":0.001,\"minimum\":0.002,"
	"\"maximum\":0.005},\"i32\":{\"type\":\"integer\",\"format\":"
	"\"int32\",\"minimum\":-3000000000},\"tenth\":{\"type\":\"integer\","
	"\"multipleOf\":0.1,\"minimum\":-5,\"maximum\":5},\"neg\":{\"type\":"
	"\"number\",\"maximum\":-1000.5},\"big\":{\"type\":\"integer\","
	"\"minimum\":9007199254740000},\"thin\":{\"type\":\"number\","
	"\"exclusiveMinimum\":0.1,\"exclusiveMaximum\":0.1000001}},"
	"\"required\":[\"price\",\"qty\",\"pct\",\"step\",\"old\",\"quarter\","
	"\"tiny\",\"i32\",\"tenth\",\"neg\",\"big\",\"thin\"]}",
	/* 3: formats */
	"{\"type\":\"object\",\"properties\":{\"at\":{\"type\":\"string\","
	"\"format\":\"date-time\"},\"day\":{\"type\":\"string\",\"format\":"
	"\"date\"},\"t\":{\"type\":\"string\",\"format\":\"time\"},\"mail\":"
	"{\"type\":\"string\",\"format\":\"email\"},\"id\":{\"type\":"
	"\"string\",\"format\":\"uuid\"},\"u\":{\"type\":\"string\","
	"\"format\":\"uri\"},\"l\":{\"type\":\"string\",\"format\":\"url\"},"
	"\"ip\":{\"type\":\"string\",\"format\":\"ipv4\"},\"h\":{\"type\":"
	"\"string\",\"format\":\"hostname\",\"maxLength\":253},\"r\":{"
	"\"format\":\"uri-reference\"}},\"required\":[\"at\",\"day\",\"t\","
	"\"mail\",\"id\",\"u\",\"l\",\"ip\",\"h\",\"r\"]}",
	/* 4: $defs recursion: a tree */
	"{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"value\":"
	"{\"type\":\"integer\"},\"children\":{\"type\":\"array\",\"items\":{"
	"\"$ref\":\"#/$defs/node\"}}},\"required\":[\"value\",\"children\"],"
	"\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}",
	/* 5: "#" and definitions */
	"{\"type\":\"object\",\"properties\":{\"name\":{\"$ref\":"
	"\"#/definitions/name\"},\"parent\":{\"$ref\":\"#\"},\"alt\":{"
	"\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"null\"}]}},\"required\":["
	"\"name\",\"alt\"],\"definitions\":{\"name\":{\"type\":\"string\","
	"\"maxLength\":12}}}",
	/* 6: anyOf */
	"{\"type\":\"object\",\"properties\":{\"v\":{\"anyOf\":[{\"type\":"
	"\"string\",\"maxLength\":5},{\"type\":\"integer\",\"minimum\":1000},"
	"{\"type\":\"null\"},{\"type\":\"array\",\"items\":{\"type\":"
	"\"boolean\"},\"maxItems\":2}]}},\"required\":[\"v\"]}",
	/* 7: prefixItems and draft-07 tuples */
	"{\"type\":\"object\",\"properties\":{\"point\":{\"type\":\"array\","
	"\"prefixItems\":[{\"type\":\"number\"},{\"type\":\"string\","
	"\"enum\":[\"N\",\"S\"]},{\"type\":\"boolean\"}],\"items\":false},"
	"\"old\":{\"type\":\"array\",\"items\":[{\"type\":\"integer\"},{"
	"\"const\":\"x\"}],\"additionalItems\":{\"type\":\"null\"},"
	"\"minItems\":3},\"open\":{\"type\":\"array\",\"prefixItems\":[{"
	"\"type\":\"string\"}],\"items\":{\"type\":\"integer\"},"
	"\"maxItems\":3}},\"required\":[\"point\",\"old\",\"open\"]}",
	/* 8: uniqueItems */
	"{\"type\":\"object\",\"properties\":{\"e\":{\"type\":\"array\","
	"\"items\":{\"enum\":[\"a\",\"b\",\"c\",\"d\"]},\"uniqueItems\":true,"
	"\"minItems\":3},\"i\":{\"type\":\"array\",\"items\":{\"type\":"
	"\"integer\",\"minimum\":1,\"maximum\":5},\"uniqueItems\":true,"
	"\"minItems\":5},\"s\":{\"type\":\"array\",\"items\":{\"type\":"
	"\"string\"},\"uniqueItems\":true,\"minItems\":10},\"o\":{\"type\":"
	"\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"k\":{"
	"\"type\":\"integer\",\"maximum\":30},\"f\":{\"type\":\"boolean\"}},"
	"\"required\":[\"k\",\"f\"]},\"uniqueItems\":true,\"minItems\":6},"
	"\"b\":{\"type\":\"array\",\"items\":{\"type\":[\"boolean\","
	"\"null\"]},\"uniqueItems\":true,\"minItems\":3},\"t\":{\"type\":"
	"\"array\",\"prefixItems\":[{\"type\":\"boolean\"},{\"type\":"
	"\"string\"},{\"type\":\"boolean\"}],\"uniqueItems\":true}},"
	"\"required\":[\"e\",\"i\",\"s\",\"o\",\"b\",\"t\"]}",
	/* 9: nullable */
	"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
	"\"nullable\":true},\"b\":{\"type\":[\"integer\",\"null\"]},\"c\":{"
	"\"anyOf\":[{\"type\":\"string\",\"format\":\"date\"},{\"type\":"
	"\"null\"}]},\"d\":{\"type\":\"string\",\"enum\":[\"x\",\"y\",null],"
	"\"nullable\":true}},\"required\":[\"a\",\"b\",\"c\",\"d\"],"
	"\"additionalProperties\":false}",
	/* 10: oneOf with a discriminator, and of types */
	"{\"type\":\"object\",\"properties\":{\"shape\":{\"oneOf\":[{"
	"\"type\":\"object\",\"properties\":{\"kind\":{\"const\":"
	"\"circle\"},\"r\":{\"type\":\"number\",\"minimum\":0}},"
	"\"required\":[\"kind\",\"r\"]},{\"type\":\"object\","
	"\"properties\":{\"kind\":{\"enum\":[\"square\",\"rect\"]},\"side\":"
	"{\"type\":\"number\"}},\"required\":[\"kind\",\"side\"]}]},\"id\":"
	"{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"},{\"enum\":"
	"[true]}]},\"c\":{\"oneOf\":[{\"enum\":[1,2]},{\"enum\":[3,\"x\"]}]}},"
	"\"required\":[\"shape\",\"id\",\"c\"]}",
	/* 11: allOf of object schemas with $ref */
	"{\"$defs\":{\"base\":{\"type\":\"object\",\"properties\":{\"id\":{"
	"\"type\":\"integer\"}},\"required\":[\"id\"]}},\"allOf\":[{\"$ref\":"
	"\"#/$defs/base\"},{\"properties\":{\"tag\":{\"type\":\"string\"},"
	"\"id\":{\"type\":\"integer\"}},\"required\":[\"tag\"]}]}",
	/* 12: minProperties, maxProperties, additionalProperties */
	"{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"object\","
	"\"properties\":{\"a\":{},\"b\":{},\"c\":{},\"d\":{}},"
	"\"minProperties\":2,\"maxProperties\":3},\"q\":{\"type\":\"object\","
	"\"required\":[\"x\",\"y\"],\"additionalProperties\":{\"type\":"
	"\"integer\",\"maximum\":0}},\"r\":true,\"s\":{}},\"required\":["
	"\"p\",\"q\",\"r\",\"s\"]}",
	/* 13: enum and const values of every kind */
	"{\"type\":\"array\",\"minItems\":4,\"items\":{\"anyOf\":[{\"enum\":"
	"[1,\"two\",null,{\"x\":[1,2]},3.5,\"\xe6\x97\xa5\xe6\x9c\xac\","
	"\"q\\\"\\\\\\n\"]},{\"const\":{\"deep\":{\"a\":[true,false]}}},{"
	"\"type\":\"string\",\"enum\":[\"ab\",\"abcdef\",7],\"maxLength\":3}"
	"]}}",
	/* 14: strings */
	"{\"type\":\"object\",\"properties\":{\"w\":{\"type\":\"array\","
	"\"items\":{\"type\":\"string\",\"minLength\":3,\"maxLength\":6},"
	"\"minItems\":1},\"long\":{\"type\":\"string\",\"minLength\":40},"
	"\"one\":{\"type\":\"string\",\"maxLength\":1},\"none\":{\"type\":"
	"\"string\",\"maxLength\":0}},\"required\":[\"w\",\"long\",\"one\","
	"\"none\"]}",
	/* 15: a strict structured output */
	"{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"array\","
	"\"items\":{\"type\":\"object\",\"properties\":{\"explanation\":{"
	"\"type\":\"string\"},\"output\":{\"type\":\"string\"}},"
	"\"required\":[\"explanation\",\"output\"],"
	"\"additionalProperties\":false}},\"final_answer\":{\"anyOf\":[{"
	"\"type\":\"string\"},{\"type\":\"null\"}]}},\"required\":[\"steps\","
	"\"final_answer\"],\"additionalProperties\":false}",
	/* 16: a hostile recursion: wide, optional, unbounded arrays */
	"{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"a\":{"
	"\"$ref\":\"#/$defs/n\"},\"b\":{\"$ref\":\"#/$defs/n\"},\"c\":{"
	"\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}},\"d\":{"
	"\"anyOf\":[{\"$ref\":\"#/$defs/m\"},{\"type\":\"string\"}]}}},"
	"\"m\":{\"anyOf\":[{\"$ref\":\"#/$defs/n\"},{\"$ref\":"
	"\"#/$defs/m\"}]}},\"$ref\":\"#/$defs/n\"}",
	/* 17: no type: inferred */
	"{\"properties\":{\"a\":{\"minimum\":5},\"b\":{\"maxLength\":4},"
	"\"c\":{\"items\":{\"type\":\"integer\"}},\"d\":{\"required\":["
	"\"z\"]},\"e\":{\"format\":\"ipv4\"}},\"required\":[\"a\",\"b\","
	"\"c\",\"d\",\"e\"]}",
	/* 18: allOf: additionalProperties false declaring every name */
	"{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
	"\"integer\"},\"b\":{\"type\":\"string\"},\"c\":{}},"
	"\"additionalProperties\":false},{\"properties\":{\"a\":{\"type\":"
	"\"integer\"}},\"required\":[\"a\",\"b\"]},{\"maxProperties\":2}]}",
	/* 19: $ref names with escapes */
	"{\"$defs\":{\"a/b\":{\"type\":\"integer\",\"minimum\":7,"
	"\"maximum\":7},\"c d\":{\"const\":\"cd\"},\"t~\":{\"type\":"
	"\"boolean\"}},\"type\":\"array\",\"prefixItems\":[{\"$ref\":"
	"\"#/$defs/a~1b\"},{\"$ref\":\"#/$defs/c%20d\"},{\"$ref\":"
	"\"#/$defs/t~0\"}],\"minItems\":3,\"items\":false}",
};
#define NGOOD (sizeof(good_schemas) / sizeof(good_schemas[0]))

/* ---- tests -------------------------------------------------------------- */

/* Every schema, 1,000 seeds: valid, exactly json_dumps' bytes, and
 * schema_gen_check agrees. */
static void
test_valid(void **unused)
{
	size_t i, len;
	uint64_t seed;

	(void)unused;
	for (i = 0; i < NGOOD; i++) {
		json_t *s = load(good_schemas[i]);
		char msg[200] = "";

		if (schema_gen_check(s, msg, sizeof(msg)) != TS_OK)
			fail_msg("schema %zu: %s", i, msg);
		for (seed = 0; seed < SEEDS; seed++) {
			char *text = gen_text(s, seed * 7919 + i, &len);
			json_error_t e;
			json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &e);
			char *again;

			if (v == NULL)
				fail_msg("schema %zu seed %llu: %s: %s", i,
				    (unsigned long long)seed, e.text, text);
			if (!valid(s, s, v, 0))
				fail_msg("schema %zu seed %llu: invalid: %s",
				    i, (unsigned long long)seed, text);
			assert_true(depth_of(v) <= SCHEMA_GEN_MAX_DEPTH);
			again = json_dumps(v, FLAGS);
			assert_non_null(again);
			if (strlen(again) != len ||
			    memcmp(again, text, len) != 0)
				fail_msg("schema %zu: not compact: %s vs %s",
				    i, text, again);
			free(again);
			json_decref(v);
			free(text);
		}
		json_decref(s);
	}
}

/* Same seed, same bytes; different seeds, different texts. */
static void
test_determinism(void **unused)
{
	size_t i, j, la, lb;
	uint64_t seed;

	(void)unused;
	for (i = 0; i < NGOOD; i++) {
		json_t *s = load(good_schemas[i]);
		char *first = gen_text(s, 42, &la);
		size_t differ = 0;

		for (j = 0; j < 3; j++) {
			char *b = gen_text(s, 42, &lb);

			assert_int_equal(la, lb);
			assert_memory_equal(first, b, la);
			free(b);
		}
		for (seed = 0; seed < 20; seed++) {
			char *b = gen_text(s, seed, &lb);

			differ += lb != la || memcmp(first, b, la) != 0;
			free(b);
		}
		if (differ == 0)
			fail_msg("schema %zu: every seed gives %s", i, first);
		free(first);
		json_decref(s);
	}
}

/* Fixed bytes for one (schema, seed): the output must never change
 * between runs or machines. */
static void
test_golden(void **unused)
{
	json_t *s = load(good_schemas[0]);
	size_t len;
	char *a = gen_text(s, 1, &len), *b;
	json_t *n = load("{\"type\":\"number\",\"multipleOf\":0.01}");

	(void)unused;
	assert_string_equal(a, "{\"location\":\"island juniper flint\","
	    "\"units\":\"fahrenheit\"}");
	free(a);
	b = gen_text(n, 3, &len);
	assert_true(len <= 6);          /* a short decimal, 0.00..100.00 */
	free(b);
	json_decref(s);
	json_decref(n);
}

/* Decimal steps print as short decimals (nearly always). */
static void
test_short_decimals(void **unused)
{
	json_t *s = load("{\"type\":\"number\",\"minimum\":0,\"maximum\":"
	    "500,\"multipleOf\":0.01}");
	uint64_t seed;
	size_t len, shortn = 0;

	(void)unused;
	for (seed = 0; seed < SEEDS; seed++) {
		char *t = gen_text(s, seed, &len);
		const char *dot = strchr(t, '.');

		shortn += dot == NULL || strlen(dot) <= 3;
		free(t);
	}
	assert_true(shortn >= SEEDS * 95 / 100);
	json_decref(s);
}

struct refusal {
	const char *schema;
	enum ts_err rc;
	const char *want;       /* a substring of the message */
};

static const struct refusal refusals[] = {
	{ "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\","
	  "\"pattern\":\"^a\"}}}", TS_EINVAL,
	  "schema at /properties/x: \"pattern\" is not supported" },
	{ "{\"type\":\"strin\"}", TS_EINVAL,
	  "schema at (root): unknown \"type\" \"strin\"" },
	{ "{\"properties\":{\"a\":{\"$ref\":\"#/properties/b\"},\"b\":{}}}",
	  TS_EINVAL, "schema at /properties/a: \"$ref\" \"#/properties/b\" "
	  "is not supported" },
	{ "{\"$ref\":\"other.json#/x\"}", TS_EINVAL, "is not supported" },
	{ "{\"$ref\":\"#/$defs/nope\"}", TS_EINVAL, "names no definition" },
	{ "{\"$defs\":{\"a\":{\"type\":\"object\",\"properties\":{\"n\":{"
	  "\"$ref\":\"#/$defs/a\"}},\"required\":[\"n\"]}},\"$ref\":"
	  "\"#/$defs/a\"}", TS_EINVAL,
	  "schema at /$defs/a/properties/n: schema recursion has no finite "
	  "instance" },
	{ "{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":"
	  "\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}", TS_EINVAL,
	  "no finite instance" },
	{ "{\"type\":\"array\",\"items\":{\"enum\":[1,2]},\"uniqueItems\":"
	  "true,\"minItems\":3}", TS_EINVAL,
	  "schema at (root): \"uniqueItems\": the items have 2 distinct "
	  "values" },
	{ "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
	  "{\"a\":{\"type\":\"boolean\"}},\"required\":[\"a\"],"
	  "\"additionalProperties\":false},\"uniqueItems\":true,\"minItems\":"
	  "3}", TS_EINVAL, "schema at (root): \"uniqueItems\": the items have "
	  "2 distinct values" },
	{ "{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":"
	  "4},\"uniqueItems\":true,\"minItems\":100}", TS_EINVAL,
	  "\"uniqueItems\": the items cannot surely give 100 distinct "
	  "values" },
	{ "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
	  "{}},\"uniqueItems\":true,\"minItems\":2}", TS_EINVAL,
	  "have 1 distinct values" },
	{ "{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"string\","
	  "\"minLength\":2}]}", TS_EINVAL, "\"oneOf\" branches 0 and 1" },
	{ "{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}",
	  TS_EINVAL, "\"oneOf\" branches 0 and 1" },
	{ "{\"not\":{}}", TS_EINVAL, "\"not\" is not supported" },
	{ "{\"type\":\"string\",\"format\":\"regex\"}", TS_EINVAL,
	  "\"format\" \"regex\" is not supported" },
	{ "{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", TS_EINVAL,
	  "no integer" },
	{ "{\"type\":\"number\",\"exclusiveMinimum\":1,\"exclusiveMaximum\":"
	  "1}", TS_EINVAL, "no number" },
	{ "{\"type\":\"number\",\"multipleOf\":0.0000000001}", TS_EINVAL,
	  "\"multipleOf\"" },
	{ "{\"$ref\":\"#/$defs/a\",\"type\":\"object\",\"$defs\":{\"a\":{}}}",
	  TS_EINVAL, "\"$ref\" beside \"type\" is not supported" },
	{ "{\"anyOf\":[{}],\"minLength\":3}", TS_EINVAL,
	  "\"anyOf\" beside \"minLength\"" },
	{ "false", TS_EINVAL, "schema at (root): the schema false has no "
	  "instance" },
	{ "{\"type\":\"object\",\"required\":[\"a\"],\"additionalProperties\":"
	  "false}", TS_EINVAL, "required property \"a\" is not allowed" },
	{ "{\"type\":\"object\",\"properties\":{\"a\":false},\"required\":["
	  "\"a\"]}", TS_EINVAL, "schema at /properties/a: the schema false" },
	{ "{\"type\":\"string\",\"minLength\":5,\"maxLength\":4}", TS_EINVAL,
	  "\"minLength\" is above \"maxLength\"" },
	{ "{\"type\":\"string\",\"format\":\"date\",\"maxLength\":5}",
	  TS_EINVAL, "\"format\" \"date\" with" },
	{ "{\"enum\":[1,2],\"properties\":{}}", TS_EINVAL,
	  "\"properties\" beside \"enum\"" },
	{ "{\"type\":\"string\",\"enum\":[1,2]}", TS_EINVAL,
	  "no \"enum\" value" },
	{ "{\"allOf\":[{\"type\":\"string\"},{\"minLength\":1}]}",
	  TS_EINVAL, "allOf" },
	{ "{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"string\"}}},{"
	  "\"properties\":{\"a\":{\"type\":\"integer\"}}}]}", TS_EINVAL,
	  "property \"a\" is declared differently" },
	{ "{\"type\":\"object\",\"properties\":{\"a\":{}},\"minProperties\":"
	  "2}", TS_EINVAL, "\"minProperties\" 2" },
	{ "{\"type\":\"array\",\"minItems\":5000}", TS_ELIMIT,
	  "\"minItems\" 5000 is over the limit" },
	{ "{\"type\":\"string\",\"minLength\":10000}", TS_ELIMIT,
	  "\"minLength\" 10000 is over the limit" },
	{ "{\"type\":\"array\",\"minItems\":1000,\"items\":{\"type\":"
	  "\"string\",\"minLength\":4000}}", TS_ELIMIT,
	  "the smallest instance is over" },
	{ "{\"type\":\"array\",\"items\":{\"type\":\"array\",\"minItems\":"
	  "2}, \"maxItems\":0, \"minItems\":1}", TS_EINVAL,
	  "\"minItems\" is above \"maxItems\"" },
	{ "{\"minLength\":\"3\"}", TS_EINVAL,
	  "\"minLength\" must be a non-negative integer" },
	{ "{\"type\":\"object\",\"properties\":{\"a\":{\"if\":{}}}}",
	  TS_EINVAL, "schema at /properties/a: \"if\" is not supported" },
	{ "{\"type\":\"object\",\"properties\":{\"a~b/c\":{\"contains\":{}}}"
	  "}", TS_EINVAL, "schema at /properties/a~0b~1c: \"contains\"" },
	{ "{\"items\":[{}],\"prefixItems\":[{}]}", TS_EINVAL,
	  "\"prefixItems\" beside an array \"items\"" },
	{ "[1]", TS_EINVAL, "a schema must be an object or a boolean" },
	{ "{\"allOf\":[{\"properties\":{\"a\":{}},\"additionalProperties\":"
	  "false},{\"properties\":{\"b\":{}}}]}", TS_EINVAL,
	  "schema at /allOf/0: \"additionalProperties\" rejects property "
	  "\"b\"" },
	{ "{\"type\":\"object\",\"properties\":{\"a\":{\"oneOf\":[{}],"
	  "\"type\":\"string\"}}}", TS_EINVAL,
	  "schema at /properties/a: \"oneOf\" beside \"type\"" },
	{ "{\"$defs\":{\"x\":{\"allOf\":[{\"$ref\":\"#/$defs/x\"}]}},"
	  "\"allOf\":[{\"$ref\":\"#/$defs/x\"},{}]}", TS_ELIMIT,
	  "\"allOf\" follows more than 8 nested \"$ref\"" },
	{ "{\"type\":\"integer\",\"multipleOf\":0}", TS_EINVAL,
	  "\"multipleOf\" must be a number greater than 0" },
	{ "{\"type\":\"integer\",\"minimum\":1e300}", TS_EINVAL,
	  "no integer within +-2^53" },
	/* integer bounds a double does not hold exactly (2^53 + 1 would
	 * read as 2^53, below the bound) */
	{ "{\"type\":\"integer\",\"minimum\":9007199254740993}", TS_EINVAL,
	  "no integer within +-2^53" },
	{ "{\"type\":\"integer\",\"maximum\":-9007199254740993}",
	  TS_EINVAL, "no integer within +-2^53" },
	{ "{\"type\":\"integer\",\"exclusiveMinimum\":9007199254740992}",
	  TS_EINVAL, "no integer within +-2^53" },
	{ "{\"type\":\"number\",\"minimum\":9007199254740993}", TS_EINVAL,
	  "no number within +-2^53" },
};

static void
test_refusals(void **unused)
{
	size_t i;

	(void)unused;
	for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		json_t *s = load(refusals[i].schema);
		char msg[200] = "", msg2[200] = "";
		struct ts_buf b;
		enum ts_err rc = schema_gen_check(s, msg, sizeof(msg));

		if (rc != refusals[i].rc || strstr(msg, refusals[i].want) ==
		    NULL)
			fail_msg("refusal %zu: rc %d msg \"%s\", want %d "
			    "\"%s\"", i, (int)rc, msg, (int)refusals[i].rc,
			    refusals[i].want);
		ts_buf_init(&b, 1 << 20);
		assert_int_equal(schema_gen(s, 1, &b, msg2, sizeof(msg2)),
		    refusals[i].rc);
		assert_string_equal(msg, msg2);
		assert_int_equal(b.len, 0);
		ts_buf_free(&b);
		/* msg may be NULL or short */
		assert_int_equal(schema_gen_check(s, NULL, 0),
		    refusals[i].rc);
		assert_int_equal(schema_gen_check(s, msg, 8),
		    refusals[i].rc);
		assert_int_equal(strlen(msg), 7);
		json_decref(s);
	}
}

/* Nesting of subschemas and of the smallest instance over the limits. */
static void
test_too_deep(void **unused)
{
	char *t = malloc(64 * 100 + 64);
	size_t len = 0;
	int i, n;
	json_t *s;
	char msg[200];

	(void)unused;
	for (n = 0; n < 2; n++) {
		int levels = n == 0 ? 70 : 30;

		len = 0;
		for (i = 0; i < levels; i++)
			len += (size_t)sprintf(t + len, "{\"type\":\"object\","
			    "\"required\":[\"a\"],\"properties\":{\"a\":");
		len += (size_t)sprintf(t + len, "{}");
		for (i = 0; i < levels; i++)
			t[len++] = '}', t[len++] = '}';
		t[len] = '\0';
		s = load(t);
		assert_int_equal(schema_gen_check(s, msg, sizeof(msg)),
		    TS_ELIMIT);
		if (n == 0)
			assert_non_null(strstr(msg, "schema at .../a/"
			    "properties/a/properties/a/"));
		assert_non_null(strstr(msg, n == 0 ? "subschemas nest deeper "
		    "than 64" : "schema at (root): the smallest instance "
		    "nests 30 arrays and objects, over 28"));
		json_decref(s);
	}
	free(t);
}

/* The output buffer's limit: TS_ELIMIT, nothing appended. */
static void
test_output_cap(void **unused)
{
	json_t *s = load(good_schemas[1]);
	struct ts_buf b;
	char msg[200];

	(void)unused;
	ts_buf_init(&b, 24);
	assert_int_equal(ts_buf_append(&b, "abc", 3), TS_OK);
	assert_int_equal(schema_gen(s, 5, &b, msg, sizeof(msg)), TS_ELIMIT);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.p, "abc", 3);
	assert_non_null(strstr(msg, "output buffer"));
	ts_buf_free(&b);
	/* appends after what is there */
	ts_buf_init(&b, 1 << 16);
	assert_int_equal(ts_buf_append(&b, "abc", 3), TS_OK);
	assert_int_equal(schema_gen(s, 5, &b, msg, sizeof(msg)), TS_OK);
	assert_true(b.len > 3 && b.p[3] == '{');
	ts_buf_free(&b);
	json_decref(s);
}

/* Big instances: within SCHEMA_GEN_MAX_OUT or TS_ELIMIT, never more. */
static void
test_big(void **unused)
{
	static const char *const big[] = {
		"{\"type\":\"array\",\"minItems\":1000,\"items\":{\"type\":"
		"\"string\",\"minLength\":900}}",
		"{\"type\":\"array\",\"items\":{\"type\":\"array\","
		"\"minItems\":300,\"items\":{\"type\":\"string\","
		"\"minLength\":1000}}}",
		"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
		"\"array\",\"minItems\":1024,\"items\":{\"type\":\"array\","
		"\"minItems\":1024,\"items\":{\"type\":\"integer\"}}}}}",
	};
	size_t i;
	uint64_t seed;

	(void)unused;
	for (i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		json_t *s = load(big[i]);

		for (seed = 0; seed < 20; seed++) {
			struct ts_buf b;
			char msg[200];
			enum ts_err rc;

			ts_buf_init(&b, 1u << 24);
			rc = schema_gen(s, seed, &b, msg, sizeof(msg));
			assert_true(rc == TS_OK || rc == TS_ELIMIT);
			assert_true(b.len <= SCHEMA_GEN_MAX_OUT);
			if (rc != TS_OK)
				assert_int_equal(b.len, 0);
			ts_buf_free(&b);
		}
		json_decref(s);
	}
}

/* uniqueItems over small domains: every value, each once. */
static void
test_unique_exact(void **unused)
{
	static const struct {
		const char *items;
		size_t n;
	} cases[] = {
		{ "{\"enum\":[\"a\",\"b\",\"c\",\"d\"]}", 4 },
		{ "{\"anyOf\":[{\"const\":\"a\"},{\"const\":\"b\"},{\"type\":"
		  "\"integer\",\"minimum\":0,\"maximum\":3}]}", 6 },
		{ "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
		  "\"boolean\"},\"b\":{\"enum\":[1,2,3]}},\"required\":"
		  "[\"a\"]}", 8 },
		{ "{\"type\":\"string\",\"maxLength\":1}", 27 },
		{ "{\"type\":[\"boolean\",\"null\"]}", 3 },
		{ "{\"type\":\"number\",\"multipleOf\":0.5,\"minimum\":0,"
		  "\"maximum\":2}", 5 },
	};
	char text[512];
	size_t i, len;
	uint64_t seed;

	(void)unused;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *s;

		snprintf(text, sizeof(text), "{\"type\":\"array\","
		    "\"uniqueItems\":true,\"minItems\":%zu,\"items\":%s}",
		    cases[i].n, cases[i].items);
		s = load(text);
		for (seed = 0; seed < SEEDS; seed++) {
			char *t = gen_text(s, seed, &len);
			json_t *v = json_loadb(t, len, 0, NULL);

			assert_non_null(v);
			assert_int_equal(json_array_size(v), cases[i].n);
			if (!valid(s, s, v, 0))
				fail_msg("case %zu: %s", i, t);
			json_decref(v);
			free(t);
		}
		json_decref(s);
		/* one more than there are */
		snprintf(text, sizeof(text), "{\"type\":\"array\","
		    "\"uniqueItems\":true,\"minItems\":%zu,\"items\":%s}",
		    cases[i].n + 1, cases[i].items);
		s = load(text);
		assert_int_equal(schema_gen_check(s, NULL, 0), TS_EINVAL);
		json_decref(s);
	}
}

/* {} and true: strings, integers and booleans. */
static void
test_any(void **unused)
{
	const char *const texts[] = { "{}", "true",
	    "{\"description\":\"x\"}" };
	size_t i, len;
	uint64_t seed;

	(void)unused;
	for (i = 0; i < 3; i++) {
		json_t *s = load(texts[i]);
		unsigned seen = 0;

		for (seed = 0; seed < 100; seed++) {
			char *t = gen_text(s, seed, &len);
			json_t *v = json_loadb(t, len, JSON_DECODE_ANY, NULL);

			assert_non_null(v);
			seen |= json_is_string(v) ? 1u : json_is_integer(v) ?
			    2u : json_is_boolean(v) ? 4u : 8u;
			json_decref(v);
			free(t);
		}
		assert_int_equal(seen, 7);
		json_decref(s);
	}
}

/* A oneOf of 2,000 discriminated branches: too large to check. */
static void
test_oneof_large(void **unused)
{
	json_t *s = json_object(), *br = json_array();
	char msg[200], k[16];
	int i;

	(void)unused;
	for (i = 0; i < 2000; i++) {
		snprintf(k, sizeof(k), "v%d", i);
		json_array_append_new(br, json_pack("{s:s,s:{s:{s:s}},s:[s]}",
		    "type", "object", "properties", "k", "const", k,
		    "required", "k"));
	}
	json_object_set_new(s, "oneOf", br);
	assert_int_equal(schema_gen_check(s, msg, sizeof(msg)), TS_ELIMIT);
	assert_non_null(strstr(msg, "schema at (root): \"oneOf\" is too "
	    "large to check"));
	/* 200 of them are fine */
	while (json_array_size(br) > 200)
		json_array_remove(br, json_array_size(br) - 1);
	assert_int_equal(schema_gen_check(s, msg, sizeof(msg)), TS_OK);
	json_decref(s);
}

/* A cut generation (schema_gen_emit with a cap): over every schema of
 * the corpus, seeds and caps, the text is at least the cap long (or the
 * whole instance) and begins with exactly the whole instance's bytes;
 * with no cap it is the whole instance. */
static void
test_emit_cap(void **unused)
{
	static const size_t caps[] = { 0, 1, 2, 7, 31, 100, 512, 4096 };
	size_t i, k, len;
	uint64_t seed;

	(void)unused;
	for (i = 0; i < NGOOD; i++) {
		json_t *s = load(good_schemas[i]);
		uint64_t steps = SCHEMA_GEN_MAX_STEPS;
		struct schema_gen *g;
		char msg[200] = "";

		if (schema_gen_compile(s, &steps, &g, msg, sizeof(msg)) !=
		    TS_OK)
			fail_msg("schema %zu: %s", i, msg);
		assert_true(steps < SCHEMA_GEN_MAX_STEPS);
		for (seed = 0; seed < 40; seed++) {
			char *whole = gen_text(s, seed, &len);
			struct ts_buf b;

			for (k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
				size_t want = caps[k] < len ? caps[k] : len;

				ts_buf_init(&b, 1u << 22);
				assert_int_equal(schema_gen_emit(g, seed,
				    caps[k], &b, msg, sizeof(msg)), TS_OK);
				if (b.len < want ||
				    memcmp(b.p, whole, want) != 0)
					fail_msg("schema %zu seed %llu cap %zu: "
					    "%.*s is not a prefix of %s", i,
					    (unsigned long long)seed, caps[k],
					    (int)b.len, b.p, whole);
				ts_buf_free(&b);
			}
			ts_buf_init(&b, 1u << 22);
			assert_int_equal(schema_gen_emit(g, seed, SIZE_MAX, &b,
			    msg, sizeof(msg)), TS_OK);
			assert_int_equal(b.len, len);
			assert_memory_equal(b.p, whole, len);
			ts_buf_free(&b);
			free(whole);
		}
		schema_gen_free(g);
		json_decref(s);
	}
}

/* The instance of 1,024 strings of 1,000 characters (1 MB), cut at 512
 * bytes: what is made stops at the first string past the cap. */
static void
test_emit_cap_large(void **unused)
{
	json_t *s = load("{\"type\":\"object\",\"properties\":{\"a\":{"
	    "\"type\":\"array\",\"minItems\":1024,\"items\":{\"type\":"
	    "\"string\",\"minLength\":1000}}},\"required\":[\"a\"]}");
	uint64_t steps = SCHEMA_GEN_MAX_STEPS;
	struct schema_gen *g;
	struct ts_buf b;
	char msg[200];

	(void)unused;
	assert_int_equal(schema_gen_compile(s, &steps, &g, msg, sizeof(msg)),
	    TS_OK);
	ts_buf_init(&b, 1u << 22);
	assert_int_equal(schema_gen_emit(g, 3, 512, &b, msg, sizeof(msg)),
	    TS_OK);
	/* {"a":[ then whole strings of 1,002 bytes until past 512: one */
	assert_true(b.len >= 512 && b.len < 512 + 1003 + 8);
	assert_memory_equal(b.p, "{\"a\":[\"", 7);
	ts_buf_free(&b);
	schema_gen_free(g);
	json_decref(s);
}

/* uniqueItems over objects of six booleans (729 values to list), n
 * times: the passes' step budget. */
static json_t *
uniq_schema(size_t n)
{
	json_t *props = json_object(), *item;
	char k[16];
	size_t i;

	item = json_pack("{s:s,s:{s:{s:s},s:{s:s},s:{s:s},s:{s:s},s:{s:s},"
	    "s:{s:s}}}", "type", "object", "properties", "a", "type",
	    "boolean", "b", "type", "boolean", "c", "type", "boolean", "d",
	    "type", "boolean", "e", "type", "boolean", "f", "type",
	    "boolean");
	for (i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "a%zu", i);
		json_object_set_new(props, k, json_pack("{s:s,s:b,s:i,s:O}",
		    "type", "array", "uniqueItems", 1, "minItems", 2, "items",
		    item));
	}
	json_decref(item);
	return json_pack("{s:s,s:o}", "type", "object", "properties", props);
}

/*
 * The step budget: a schema whose checking lists hundreds of thousands
 * of values (2,100 arrays of uniqueItems over 729 objects each: seconds
 * and hundreds of MB before the budget) is refused with TS_ELIMIT naming
 * the budget, and the budget is left at 0; 2 of those arrays are fine
 * (about 100,000 steps each), and what they spend is taken off a shared
 * budget, so that enough of them in one request run it out.
 */
static void
test_step_budget(void **unused)
{
	json_t *big = uniq_schema(2100), *small = uniq_schema(2);
	uint64_t steps = SCHEMA_GEN_MAX_STEPS, used;
	struct schema_gen *g;
	char msg[200];
	int i;

	(void)unused;
	assert_int_equal(schema_gen_compile(big, &steps, &g, msg,
	    sizeof(msg)), TS_ELIMIT);
	assert_null(g);
	assert_int_equal(steps, 0);
	assert_non_null(strstr(msg, "schema at (root): checking the schema "
	    "takes more than 2000000 steps"));
	assert_int_equal(schema_gen_check(big, msg, sizeof(msg)), TS_ELIMIT);
	steps = SCHEMA_GEN_MAX_STEPS;
	assert_int_equal(schema_gen_compile(small, &steps, &g, msg,
	    sizeof(msg)), TS_OK);
	used = SCHEMA_GEN_MAX_STEPS - steps;
	assert_true(used > 0 && used < SCHEMA_GEN_MAX_STEPS / 8);
	schema_gen_free(g);
	/* a budget shared by the schemas of one request runs out */
	steps = SCHEMA_GEN_MAX_STEPS;
	for (i = 0; i < 1000; i++) {
		enum ts_err rc = schema_gen_compile(small, &steps, &g, msg,
		    sizeof(msg));

		schema_gen_free(g);
		if (rc != TS_OK) {
			assert_int_equal(rc, TS_ELIMIT);
			break;
		}
	}
	assert_true(i >= 8 && i <= (int)(SCHEMA_GEN_MAX_STEPS / used) + 1);
	json_decref(big);
	json_decref(small);
}

/* A flat object of 5,000 required properties (OpenAI's own limit for
 * structured outputs' schemas) is well within the budget. */
static void
test_step_budget_wide(void **unused)
{
	json_t *props = json_object(), *req = json_array(), *s;
	uint64_t steps = SCHEMA_GEN_MAX_STEPS;
	struct schema_gen *g;
	char msg[200], k[16];
	size_t i;

	(void)unused;
	for (i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "p%zu", i);
		json_object_set_new(props, k, json_pack("{s:s}", "type",
		    i % 2 ? "integer" : "string"));
		json_array_append_new(req, json_string(k));
	}
	s = json_pack("{s:s,s:o,s:o}", "type", "object", "properties", props,
	    "required", req);
	assert_int_equal(schema_gen_compile(s, &steps, &g, msg, sizeof(msg)),
	    TS_OK);
	assert_true(SCHEMA_GEN_MAX_STEPS - steps < SCHEMA_GEN_MAX_STEPS / 4);
	schema_gen_free(g);
	json_decref(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_short_decimals),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_too_deep),
		cmocka_unit_test(test_output_cap),
		cmocka_unit_test(test_emit_cap),
		cmocka_unit_test(test_emit_cap_large),
		cmocka_unit_test(test_step_budget),
		cmocka_unit_test(test_step_budget_wide),
		cmocka_unit_test(test_big),
		cmocka_unit_test(test_unique_exact),
		cmocka_unit_test(test_any),
		cmocka_unit_test(test_oneof_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
