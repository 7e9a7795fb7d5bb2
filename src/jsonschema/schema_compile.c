/*
 * jsonschema/schema_compile.c - pass 1 of the JSON Schema generator:
 * every subschema reachable from the root (through $ref too) becomes a
 * struct node, its keywords checked and parsed into ranges. Unsupported
 * keywords and local contradictions are refused here, naming the JSON
 * pointer of the subschema (schema_gen.h lists the keywords). See
 * schema_int.h.
 */
#include "jsonschema/schema_int.h"

#include <stdlib.h>
#include <string.h>

#define NOLIMIT (SIZE_MAX >> 2)        /* an absent maxLength, ... */
#define T_ANY (BIT(TY_STR) | BIT(TY_INT) | BIT(TY_BOOL))

enum numfmt { NF_NONE, NF_INT32, NF_INT64, NF_FLOAT };

struct part {                   /* an object schema of an allOf */
	const json_t *s;
	char *path;
};

struct view {
	struct part *parts;
	size_t nparts, cap;
	int typed;
};

/* ---- the formats and keywords ------------------------------------------ */

static const struct {
	const char *name;
	enum fmt f;
} str_formats[] = {
	{ "date-time", F_DATETIME }, { "date", F_DATE }, { "time", F_TIME },
	{ "email", F_EMAIL }, { "uuid", F_UUID }, { "uri", F_URI },
	{ "uri-reference", F_URI }, { "url", F_URI }, { "ipv4", F_IPV4 },
	{ "hostname", F_HOSTNAME },
};

static const char *const type_names[TY_N] = {
	"null", "boolean", "integer", "number", "string", "object", "array",
};

enum kw {
	KW_OTHER,       /* annotations and unknown keywords: ignored */
	KW_REFUSED,
	KW_REF,
	KW_ANYOF,
	KW_ONEOF,
	KW_ALLOF,
	KW_TYPE,
	KW_ENUM,
	KW_CONST,
	KW_NULLABLE,
	KW_OBJ,
	KW_ARR,
	KW_STR,
	KW_NUM,
	KW_FORMAT
};

static const struct {
	const char *name;
	enum kw kw;
} keywords[] = {
	{ "$ref", KW_REF }, { "anyOf", KW_ANYOF }, { "oneOf", KW_ONEOF },
	{ "allOf", KW_ALLOF }, { "type", KW_TYPE }, { "enum", KW_ENUM },
	{ "const", KW_CONST }, { "nullable", KW_NULLABLE },
	{ "properties", KW_OBJ }, { "required", KW_OBJ },
	{ "additionalProperties", KW_OBJ }, { "minProperties", KW_OBJ },
	{ "maxProperties", KW_OBJ }, { "items", KW_ARR },
	{ "prefixItems", KW_ARR }, { "additionalItems", KW_ARR },
	{ "minItems", KW_ARR }, { "maxItems", KW_ARR },
	{ "uniqueItems", KW_ARR }, { "minLength", KW_STR },
	{ "maxLength", KW_STR }, { "minimum", KW_NUM },
	{ "maximum", KW_NUM }, { "exclusiveMinimum", KW_NUM },
	{ "exclusiveMaximum", KW_NUM }, { "multipleOf", KW_NUM },
	{ "format", KW_FORMAT }, { "pattern", KW_REFUSED },
	{ "patternProperties", KW_REFUSED }, { "propertyNames", KW_REFUSED },
	{ "dependentRequired", KW_REFUSED },
	{ "dependentSchemas", KW_REFUSED }, { "dependencies", KW_REFUSED },
	{ "if", KW_REFUSED }, { "then", KW_REFUSED }, { "else", KW_REFUSED },
	{ "not", KW_REFUSED }, { "contains", KW_REFUSED },
	{ "minContains", KW_REFUSED }, { "maxContains", KW_REFUSED },
	{ "unevaluatedProperties", KW_REFUSED },
	{ "unevaluatedItems", KW_REFUSED }, { "$dynamicRef", KW_REFUSED },
	{ "$recursiveRef", KW_REFUSED },
};

static enum kw
kw_of(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (strcmp(keywords[i].name, key) == 0)
			return keywords[i].kw;
	return KW_OTHER;
}

/* Code points of a UTF-8 string (jansson checked it). */
static size_t
utf8_len(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			n++;
	return n;
}

/* ---- compile: helpers --------------------------------------------------- */

static struct node *
new_node(struct ctx *c, enum nkind kind)
{
	struct node *n = xcalloc(1, sizeof(*n));

	if (c->nall == c->capall) {
		c->capall = c->capall ? 2 * c->capall : 64;
		c->all = xrealloc(c->all, c->capall * sizeof(*c->all));
	}
	c->all[c->nall++] = n;
	n->kind = kind;
	n->path = schema_path_copy(c);
	n->cost = INF;
	n->maxl = NOLIMIT;
	n->maxi = NOLIMIT;
	n->maxp = NOLIMIT;
	return n;
}

static void
node_free(struct node *n)
{
	size_t i;

	for (i = 0; i < n->ndom; i++)
		json_decref(n->dom[i]);
	free(n->dom);
	free(n->vidx);
	free(n->path);
	free(n->vals);
	free(n->valsize);
	free(n->br);
	free(n->props);
	free(n->small_inc);
	free(n->prefix);
	free(n);
}

/*
 * A non-negative integer keyword (an integer or an integral real; huge
 * values saturate at NOLIMIT): 1 and *out when present, 0 when absent,
 * -1 after schema_path_fail() when malformed.
 */
static int
get_count(struct ctx *c, const json_t *s, const char *key, size_t *out)
{
	const json_t *v = json_object_get(s, key);
	double d;

	if (v == NULL)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v) > NOLIMIT ? NOLIMIT :
		    (size_t)json_integer_value(v);
		return 1;
	}
	if (json_is_real(v)) {
		d = json_real_value(v);
		if (d >= 0 && schema_num_integral(d)) {
			*out = d > (double)NOLIMIT ? NOLIMIT : (size_t)d;
			return 1;
		}
	}
	schema_path_fail(c, TS_EINVAL, "\"%s\" must be a non-negative integer",
	    key);
	return -1;
}

/* minimum, maximum, exclusive* (numbers, or draft-04 booleans), and
 * multipleOf. 0, or -1 after schema_path_fail(). */
static int
get_bounds(struct ctx *c, const json_t *s, struct bounds *b)
{
	const json_t *v;
	double d;

	memset(b, 0, sizeof(*b));
	if ((v = json_object_get(s, "minimum")) != NULL) {
		if (!json_is_number(v))
			goto bad_min;
		b->has_lo = 1;
		b->lo = json_number_value(v);
		b->beyond |= json_is_integer(v) &&
		    json_integer_value(v) > INT_LIMIT;
	}
	if ((v = json_object_get(s, "maximum")) != NULL) {
		if (!json_is_number(v))
			goto bad_max;
		b->has_hi = 1;
		b->hi = json_number_value(v);
		b->beyond |= json_is_integer(v) &&
		    json_integer_value(v) < -INT_LIMIT;
	}
	if ((v = json_object_get(s, "exclusiveMinimum")) != NULL) {
		if (json_is_true(v)) {
			if (b->has_lo)
				b->lo_excl = 1;
		} else if (json_is_number(v)) {
			d = json_number_value(v);
			b->beyond |= json_is_integer(v) &&
			    json_integer_value(v) >= INT_LIMIT;
			if (!b->has_lo || d >= b->lo) {
				b->has_lo = 1;
				b->lo = d;
				b->lo_excl = 1;
			}
		} else if (!json_is_false(v)) {
			schema_path_fail(c, TS_EINVAL, "\"exclusiveMinimum\" "
			    "must be a number or a boolean");
			return -1;
		}
	}
	if ((v = json_object_get(s, "exclusiveMaximum")) != NULL) {
		if (json_is_true(v)) {
			if (b->has_hi)
				b->hi_excl = 1;
		} else if (json_is_number(v)) {
			d = json_number_value(v);
			b->beyond |= json_is_integer(v) &&
			    json_integer_value(v) <= -INT_LIMIT;
			if (!b->has_hi || d <= b->hi) {
				b->has_hi = 1;
				b->hi = d;
				b->hi_excl = 1;
			}
		} else if (!json_is_false(v)) {
			schema_path_fail(c, TS_EINVAL, "\"exclusiveMaximum\" "
			    "must be a number or a boolean");
			return -1;
		}
	}
	if ((v = json_object_get(s, "multipleOf")) != NULL) {
		if (!json_is_number(v) || !(json_number_value(v) > 0)) {
			schema_path_fail(c, TS_EINVAL, "\"multipleOf\" must "
			    "be a number greater than 0");
			return -1;
		}
		if (!schema_num_decimal(v, &b->m, &b->p, &b->f)) {
			schema_path_fail(c, TS_EINVAL, "\"multipleOf\" %.17g "
			    "is not supported (a decimal with at most 9 "
			    "fractional digits, at most 2^53)",
			    json_number_value(v));
			return -1;
		}
		b->mult = json_number_value(v);
	}
	return 0;
bad_min:
	schema_path_fail(c, TS_EINVAL, "\"minimum\" must be a number");
	return -1;
bad_max:
	schema_path_fail(c, TS_EINVAL, "\"maximum\" must be a number");
	return -1;
}

/* "type": a name or a non-empty array of names. 0, or -1 after
 * schema_path_fail(). */
static int
get_types(struct ctx *c, const json_t *v, unsigned *mask)
{
	const json_t *e;
	size_t i, n, k;

	*mask = 0;
	if (json_is_string(v)) {
		n = 1;
	} else if (json_is_array(v) && json_array_size(v) > 0) {
		n = json_array_size(v);
	} else {
		schema_path_fail(c, TS_EINVAL, "\"type\" must be a type name "
		    "or a non-empty array of them");
		return -1;
	}
	if (schema_step(c, n) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		e = json_is_string(v) ? v : json_array_get(v, i);
		if (!json_is_string(e))
			goto bad;
		for (k = 0; k < TY_N; k++)
			if (strcmp(json_string_value(e), type_names[k]) == 0)
				break;
		if (k == TY_N) {
			schema_path_fail(c, TS_EINVAL, "unknown \"type\" "
			    "\"%.64s\"", json_string_value(e));
			return -1;
		}
		*mask |= BIT(k);
	}
	return 0;
bad:
	schema_path_fail(c, TS_EINVAL, "\"type\" must be a type name or a "
	    "non-empty array of them");
	return -1;
}

/* ---- compile: schemas --------------------------------------------------- */

static struct node *compile(struct ctx *c, const json_t *s, unsigned depth);

/*
 * A $ref to "#", "#/$defs/NAME" or "#/definitions/NAME" (NAME with the
 * escapes of RFC 6901 and percent-encoding of RFC 3986): the target and,
 * in tpath, its JSON pointer. NULL after schema_path_fail().
 */
static const json_t *
resolve_ref(struct ctx *c, const json_t *v, char *tpath, size_t tsize)
{
	char dec[PATH_BYTES], name[PATH_BYTES];
	const char *r, *dkey;
	const json_t *defs, *t;
	size_t len, plen, i, dlen = 0, nlen = 0;
	int show;

	if (!json_is_string(v)) {
		schema_path_fail(c, TS_EINVAL, "\"$ref\" must be a string");
		return NULL;
	}
	r = json_string_value(v);
	len = json_string_length(v);
	show = len > 64 ? 64 : (int)len;
	if (schema_step(c, 1 + len / 16) < 0)
		return NULL;
	if (len == 1 && r[0] == '#') {
		tpath[0] = '\0';
		return c->root;
	}
	if (len > 8 && memcmp(r, "#/$defs/", 8) == 0) {
		plen = 8;
		dkey = "$defs";
	} else if (len > 14 && memcmp(r, "#/definitions/", 14) == 0) {
		plen = 14;
		dkey = "definitions";
	} else {
		goto unsupported;
	}
	for (i = plen; i < len; i++) {          /* percent-decoding */
		int ch = (unsigned char)r[i], hv = 0, j;

		if (ch == '%') {
			if (i + 2 >= len)
				goto unsupported;
			for (j = 1; j <= 2; j++) {
				int x = (unsigned char)r[i + (size_t)j];

				hv *= 16;
				if (x >= '0' && x <= '9')
					hv += x - '0';
				else if (x >= 'a' && x <= 'f')
					hv += x - 'a' + 10;
				else if (x >= 'A' && x <= 'F')
					hv += x - 'A' + 10;
				else
					goto unsupported;
			}
			ch = hv;
			i += 2;
		}
		if (dlen + 1 >= sizeof(dec))
			goto unsupported;
		dec[dlen++] = (char)ch;
	}
	for (i = 0; i < dlen; i++) {            /* RFC 6901 */
		char ch = dec[i];

		if (ch == '/')
			goto unsupported;
		if (ch == '~') {
			if (i + 1 >= dlen || (dec[i + 1] != '0' &&
			    dec[i + 1] != '1'))
				goto unsupported;
			ch = dec[++i] == '0' ? '~' : '/';
		}
		name[nlen++] = ch;
	}
	if (nlen == 0)
		goto unsupported;
	defs = json_object_get(c->root, dkey);
	t = json_is_object(defs) ? json_object_getn(defs, name, nlen) : NULL;
	if (t == NULL) {
		schema_path_fail(c, TS_EINVAL, "\"$ref\" \"%.*s\" names no "
		    "definition", show, r);
		return NULL;
	}
	{
		struct psave s;

		schema_path_save(c, &s);
		schema_path_load(c, "");
		schema_path_push_str(c, dkey);
		schema_path_push(c, name, nlen);
		schema_path_text(c, tpath, tsize);
		schema_path_restore(c, &s);
	}
	return t;
unsupported:
	schema_path_fail(c, TS_EINVAL, "\"$ref\" \"%.*s\" is not supported "
	    "(only \"#\", \"#/$defs/NAME\" and \"#/definitions/NAME\")", show,
	    r);
	return NULL;
}

static struct node *
compile_ref(struct ctx *c, const json_t *v)
{
	struct node *n = new_node(c, K_REF);
	char tpath[PATH_BYTES + 8];
	const json_t *t = resolve_ref(c, v, tpath, sizeof(tpath));
	size_t i;

	if (t == NULL)
		return NULL;
	for (i = 0; i < c->nt; i++)
		if (c->t[i].json == t)
			break;
	if (i == c->nt) {
		if (c->nt > SCHEMA_GEN_MAX_REFS) {
			schema_path_fail(c, TS_ELIMIT, "more than %d distinct "
			    "\"$ref\" targets", SCHEMA_GEN_MAX_REFS);
			return NULL;
		}
		c->t[i].json = t;
		c->t[i].node = NULL;
		c->t[i].path = xstrndup(tpath, strlen(tpath));
		c->nt++;
	}
	n->target = i;
	return n;
}

static struct node *
compile_anyof(struct ctx *c, const json_t *s, int oneof, unsigned depth)
{
	const char *key = oneof ? "oneOf" : "anyOf";
	const json_t *a = json_object_get(s, key);
	struct node *n;
	size_t i, k, old;

	if (!json_is_array(a) || json_array_size(a) == 0) {
		schema_path_fail(c, TS_EINVAL, "\"%s\" must be a non-empty "
		    "array", key);
		return NULL;
	}
	n = new_node(c, K_ANYOF);
	n->oneof = oneof;
	n->nbr = json_array_size(a);
	n->br = xcalloc(n->nbr, sizeof(*n->br));
	for (i = 0; i < n->nbr; i++) {
		old = schema_path_push_str(c, key);
		k = schema_path_push_index(c, i);
		n->br[i] = compile(c, json_array_get(a, i), depth + 1);
		schema_path_pop(c, k);
		schema_path_pop(c, old);
		if (n->br[i] == NULL)
			return NULL;
	}
	return n;
}

/* The type of an allOf part: "object" or ["object", ...]. */
static int
type_is_object(const json_t *v)
{
	size_t i;

	if (json_is_string(v))
		return strcmp(json_string_value(v), "object") == 0;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return 0;
	for (i = 0; i < json_array_size(v); i++)
		if (!json_is_string(json_array_get(v, i)) ||
		    strcmp(json_string_value(json_array_get(v, i)),
		    "object") != 0)
			return 0;
	return 1;
}

static void
view_add(struct ctx *c, struct view *vw, const json_t *s)
{
	if (vw->nparts == vw->cap) {
		vw->cap = vw->cap ? 2 * vw->cap : 8;
		vw->parts = xrealloc(vw->parts, vw->cap * sizeof(*vw->parts));
	}
	vw->parts[vw->nparts].s = s;
	vw->parts[vw->nparts].path = schema_path_copy(c);
	vw->nparts++;
}

static void
view_free(struct view *vw)
{
	size_t i;

	for (i = 0; i < vw->nparts; i++)
		free(vw->parts[i].path);
	free(vw->parts);
}

/*
 * The object schemas of an allOf, flattened: nested allOf and $ref
 * parts are followed (at most REF_HOPS $refs deep). Only object keywords
 * may appear. 0, or -1 after schema_path_fail().
 */
static int
flatten(struct ctx *c, const json_t *s, unsigned hops, unsigned depth,
    struct view *vw)
{
	const char *key;
	const json_t *ref = NULL, *sub = NULL, *t;
	json_t *v;
	int has = 0, r;
	size_t i, a, b;

	if (depth > SCHEMA_GEN_MAX_SCHEMA_DEPTH) {
		schema_path_fail(c, TS_ELIMIT, "subschemas nest deeper than "
		    "%d", SCHEMA_GEN_MAX_SCHEMA_DEPTH);
		return -1;
	}
	if (schema_step(c, 1 + json_object_size(s)) < 0)
		return -1;
	if (json_is_true(s))
		return 0;
	if (!json_is_object(s)) {
		schema_path_fail(c, TS_EINVAL, "an \"allOf\" part must be an "
		    "object schema");
		return -1;
	}
	json_object_foreach((json_t *)s, key, v) {
		switch (kw_of(key)) {
		case KW_REFUSED:
			schema_path_fail(c, TS_EINVAL, "\"%s\" is not "
			    "supported", key);
			return -1;
		case KW_REF:
			ref = v;
			break;
		case KW_ALLOF:
			sub = v;
			break;
		case KW_TYPE:
			if (!type_is_object(v)) {
				schema_path_fail(c, TS_EINVAL, "\"allOf\" is "
				    "supported only for object schemas");
				return -1;
			}
			vw->typed = 1;
			has = 1;
			break;
		case KW_OBJ:
			has = 1;
			break;
		case KW_OTHER:
			break;
		default:
			schema_path_fail(c, TS_EINVAL, "\"%s\" in an "
			    "\"allOf\" is not supported (allOf merges object "
			    "schemas only)", key);
			return -1;
		}
	}
	if (ref != NULL) {
		char tpath[PATH_BYTES + 8];
		struct psave ps;

		if (has || sub != NULL) {
			schema_path_fail(c, TS_EINVAL, "\"$ref\" beside other "
			    "keywords is not supported");
			return -1;
		}
		if (hops >= REF_HOPS) {
			schema_path_fail(c, TS_ELIMIT, "\"allOf\" follows "
			    "more than %d nested \"$ref\"", REF_HOPS);
			return -1;
		}
		if ((t = resolve_ref(c, ref, tpath, sizeof(tpath))) == NULL)
			return -1;
		schema_path_save(c, &ps);
		schema_path_load(c, tpath);
		r = flatten(c, t, hops + 1, depth + 1, vw);
		schema_path_restore(c, &ps);
		return r;
	}
	if (has)
		view_add(c, vw, s);
	if (sub == NULL)
		return 0;
	if (!json_is_array(sub) || json_array_size(sub) == 0) {
		schema_path_fail(c, TS_EINVAL, "\"allOf\" must be a non-empty "
		    "array");
		return -1;
	}
	for (i = 0; i < json_array_size(sub); i++) {
		a = schema_path_push_str(c, "allOf");
		b = schema_path_push_index(c, i);
		r = flatten(c, json_array_get(sub, i), hops, depth + 1, vw);
		schema_path_pop(c, b);
		schema_path_pop(c, a);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* Whether any part declares the property. */
static int
declared(const struct part *parts, size_t np, const char *key, size_t len)
{
	size_t i;

	for (i = 0; i < np; i++)
		if (json_object_getn(json_object_get(parts[i].s,
		    "properties"), key, len) != NULL)
			return 1;
	return 0;
}

/*
 * An object from one schema or the merged parts of an allOf: the
 * properties in order (the first declaration of a name; another one must
 * be equal), required names united, minProperties the largest,
 * maxProperties the smallest. A part's additionalProperties other than
 * true must declare every name of the other parts. 0, or -1 after
 * schema_path_fail().
 */
static int
compile_object(struct ctx *c, struct node *n, const struct part *parts,
    size_t np, unsigned depth)
{
	json_t *seen = json_object(), *v;
	const json_t *pr, *rq, *addl = NULL, *dup;
	struct node *an = NULL;
	const char *key;
	size_t i, j, k, klen, cap = 0, x, minp = 0, maxp = NOLIMIT;
	size_t addl_part = 0, a, b;
	struct psave ps;
	int rc = -1;

	schema_path_save(c, &ps);
	if (seen == NULL) {
		schema_path_fail(c, TS_ENOMEM, "out of memory");
		return -1;
	}
	for (i = 0; i < np; i++) {
		schema_path_load(c, parts[i].path);
		pr = json_object_get(parts[i].s, "properties");
		rq = json_object_get(parts[i].s, "required");
		if (pr != NULL && !json_is_object(pr)) {
			schema_path_fail(c, TS_EINVAL, "\"properties\" must "
			    "be an object");
			goto out;
		}
		if (rq != NULL && !json_is_array(rq))
			goto bad_required;
		cap += json_object_size(pr) + json_array_size(rq);
		if (schema_step(c, 1 + json_array_size(rq)) < 0)
			goto out;
		for (j = 0; j < json_array_size(rq); j++) {
			v = json_array_get(rq, j);
			if (!json_is_string(v))
				goto bad_required;
			if (json_object_getn(seen, json_string_value(v),
			    json_string_length(v)) == NULL &&
			    json_object_setn_new(seen, json_string_value(v),
			    json_string_length(v), json_true()) != 0) {
				schema_path_fail(c, TS_ENOMEM, "out of "
				    "memory");
				goto out;
			}
		}
		if (get_count(c, parts[i].s, "minProperties", &x) < 0)
			goto out;
		if (json_object_get(parts[i].s, "minProperties") != NULL)
			minp = schema_num_zmax(minp, x);
		x = NOLIMIT;
		if (get_count(c, parts[i].s, "maxProperties", &x) < 0)
			goto out;
		maxp = schema_num_zmin(maxp, x);
	}
	for (i = 0; i < np; i++) {
		const json_t *ad = json_object_get(parts[i].s,
		    "additionalProperties");

		schema_path_load(c, parts[i].path);
		pr = json_object_get(parts[i].s, "properties");
		if (ad == NULL || json_is_true(ad))
			continue;
		if (!json_is_false(ad) && !json_is_object(ad)) {
			schema_path_fail(c, TS_EINVAL,
			    "\"additionalProperties\" must be a boolean or a "
			    "schema");
			goto out;
		}
		if (addl == NULL) {
			addl = ad;
			addl_part = i;
		}
		if (np == 1)
			continue;
		/* every name of every part, and the required ones */
		if (schema_step(c, cap + json_object_size(seen)) < 0)
			goto out;
		for (j = 0; j < np; j++) {
			json_object_keylen_foreach((json_t *)json_object_get(
			    parts[j].s, "properties"), key, klen, v) {
				if (json_object_getn(pr, key, klen) == NULL) {
					schema_path_fail(c, TS_EINVAL,
					    "\"additionalProperties\" rejects "
					    "property \"%.64s\" of another "
					    "\"allOf\" part", key);
					goto out;
				}
			}
		}
		json_object_keylen_foreach(seen, key, klen, v) {
			if (json_object_getn(pr, key, klen) == NULL) {
				schema_path_fail(c, TS_EINVAL,
				    "\"additionalProperties\" rejects "
				    "required property \"%.64s\"", key);
				goto out;
			}
		}
	}
	n->props = xcalloc(cap ? cap : 1, sizeof(*n->props));
	for (i = 0; i < np; i++) {
		pr = json_object_get(parts[i].s, "properties");
		json_object_keylen_foreach((json_t *)pr, key, klen, v) {
			if (schema_step(c, 1 + i) < 0)
				goto out;
			dup = NULL;
			for (j = 0; j < i && dup == NULL; j++)
				dup = json_object_getn(json_object_get(
				    parts[j].s, "properties"), key, klen);
			schema_path_load(c, parts[i].path);
			if (dup != NULL) {
				if (json_equal(dup, v))
					continue;
				schema_path_fail(c, TS_EINVAL, "property "
				    "\"%.64s\" is declared differently by two "
				    "\"allOf\" parts", key);
				goto out;
			}
			a = schema_path_push_str(c, "properties");
			b = schema_path_push(c, key, klen);
			n->props[n->nprops].n = compile(c, v, depth + 1);
			schema_path_pop(c, b);
			schema_path_pop(c, a);
			if (n->props[n->nprops].n == NULL)
				goto out;
			n->props[n->nprops].key = key;
			n->props[n->nprops].len = klen;
			n->props[n->nprops].required =
			    json_object_getn(seen, key, klen) != NULL;
			n->nprops++;
		}
	}
	for (i = 0; i < np; i++) {              /* undeclared required */
		rq = json_object_get(parts[i].s, "required");
		schema_path_load(c, parts[i].path);
		for (j = 0; j < json_array_size(rq); j++) {
			v = json_array_get(rq, j);
			key = json_string_value(v);
			klen = json_string_length(v);
			/* the parts' lookups, then the properties' scan */
			if (schema_step(c, np) < 0)
				goto out;
			if (declared(parts, np, key, klen))
				continue;
			if (schema_step(c, n->nprops) < 0)
				goto out;
			for (k = 0; k < n->nprops; k++)
				if (n->props[k].len == klen &&
				    memcmp(n->props[k].key, key, klen) == 0)
					break;
			if (k < n->nprops)
				continue;
			if (addl != NULL && json_is_false(addl)) {
				schema_path_fail(c, TS_EINVAL, "required "
				    "property \"%.64s\" is not allowed by "
				    "\"additionalProperties\": false", key);
				goto out;
			}
			if (an == NULL && addl != NULL) {
				schema_path_load(c, parts[addl_part].path);
				a = schema_path_push_str(c,
				    "additionalProperties");
				an = compile(c, addl, depth + 1);
				schema_path_pop(c, a);
				if (an == NULL)
					goto out;
			}
			n->props[n->nprops].key = key;
			n->props[n->nprops].len = klen;
			n->props[n->nprops].n = an != NULL ? an : c->any;
			n->props[n->nprops].required = 1;
			n->nprops++;
		}
	}
	schema_path_restore(c, &ps);
	n->small_inc = xcalloc(n->nprops ? n->nprops : 1, 1);
	n->minp = minp;
	n->maxp = maxp;
	n->addl_false = addl != NULL && json_is_false(addl);
	if (minp > maxp) {
		schema_path_fail(c, TS_EINVAL, "\"minProperties\" is above "
		    "\"maxProperties\"");
		goto out;
	}
	if (json_object_size(seen) > maxp) {
		schema_path_fail(c, TS_EINVAL, "\"required\" lists %zu "
		    "properties, more than \"maxProperties\" %zu",
		    json_object_size(seen), maxp);
		goto out;
	}
	if (minp > n->nprops) {
		schema_path_fail(c, TS_EINVAL, "\"minProperties\" %zu is more "
		    "than the %zu declared properties", minp, n->nprops);
		goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		schema_path_restore(c, &ps);
	json_decref(seen);
	return rc;
bad_required:
	schema_path_fail(c, TS_EINVAL, "\"required\" must be an array of "
	    "strings");
	goto out;
}

/*
 * Arrays: prefixItems (or a draft-07 items array) then items (or
 * additionalItems); absent or true rest items are {}, false none.
 * 0, or -1 after schema_path_fail().
 */
static int
compile_array(struct ctx *c, struct node *n, const json_t *s,
    unsigned depth)
{
	const json_t *pi = json_object_get(s, "prefixItems");
	const json_t *it = json_object_get(s, "items"), *tuple = NULL, *rv;
	const json_t *u = json_object_get(s, "uniqueItems");
	const char *tkey = "prefixItems", *rkey = "items";
	size_t i, a, b;

	if (pi != NULL && json_is_array(it)) {
		schema_path_fail(c, TS_EINVAL, "\"prefixItems\" beside an "
		    "array \"items\" is not supported");
		return -1;
	}
	rv = it;
	if (pi != NULL) {
		if (!json_is_array(pi)) {
			schema_path_fail(c, TS_EINVAL, "\"prefixItems\" must "
			    "be an array");
			return -1;
		}
		tuple = pi;
	} else if (json_is_array(it)) {
		tuple = it;
		tkey = "items";
		rkey = "additionalItems";
		rv = json_object_get(s, "additionalItems");
	}
	if (tuple != NULL) {
		n->nprefix = json_array_size(tuple);
		if (n->nprefix > SCHEMA_GEN_MAX_ITEMS) {
			schema_path_fail(c, TS_ELIMIT, "\"%s\" has %zu "
			    "schemas, over the limit %d", tkey, n->nprefix,
			    SCHEMA_GEN_MAX_ITEMS);
			return -1;
		}
		n->prefix = xcalloc(n->nprefix ? n->nprefix : 1,
		    sizeof(*n->prefix));
		for (i = 0; i < n->nprefix; i++) {
			a = schema_path_push_str(c, tkey);
			b = schema_path_push_index(c, i);
			n->prefix[i] = compile(c, json_array_get(tuple, i),
			    depth + 1);
			schema_path_pop(c, b);
			schema_path_pop(c, a);
			if (n->prefix[i] == NULL)
				return -1;
		}
	}
	if (rv == NULL || json_is_true(rv)) {
		n->rest = c->any;
	} else if (!json_is_false(rv)) {
		a = schema_path_push_str(c, rkey);
		n->rest = compile(c, rv, depth + 1);
		schema_path_pop(c, a);
		if (n->rest == NULL)
			return -1;
		n->rest_explicit = 1;
	}
	if (get_count(c, s, "minItems", &n->mini) < 0 ||
	    get_count(c, s, "maxItems", &n->maxi) < 0)
		return -1;
	if (n->mini > SCHEMA_GEN_MAX_ITEMS) {
		schema_path_fail(c, TS_ELIMIT, "\"minItems\" %zu is over the "
		    "limit %d", n->mini, SCHEMA_GEN_MAX_ITEMS);
		return -1;
	}
	if (n->mini > n->maxi) {
		schema_path_fail(c, TS_EINVAL, "\"minItems\" is above "
		    "\"maxItems\"");
		return -1;
	}
	if (n->rest == NULL && n->mini > n->nprefix) {
		schema_path_fail(c, TS_EINVAL, "\"minItems\" %zu needs more "
		    "items than the %zu allowed", n->mini, n->nprefix);
		return -1;
	}
	if (u != NULL && !json_is_boolean(u)) {
		schema_path_fail(c, TS_EINVAL, "\"uniqueItems\" must be a "
		    "boolean");
		return -1;
	}
	n->unique = json_is_true(u);
	return 0;
}

static int
compile_string(struct ctx *c, struct node *n, const json_t *s,
    enum fmt f, const char *fname)
{
	int a, b;
	size_t flo, fhi;

	if ((a = get_count(c, s, "minLength", &n->minl)) < 0 ||
	    (b = get_count(c, s, "maxLength", &n->maxl)) < 0)
		return -1;
	if (n->minl > SCHEMA_GEN_MAX_LENGTH) {
		schema_path_fail(c, TS_ELIMIT, "\"minLength\" %zu is over the "
		    "limit %d", n->minl, SCHEMA_GEN_MAX_LENGTH);
		return -1;
	}
	if (n->minl > n->maxl) {
		schema_path_fail(c, TS_EINVAL, "\"minLength\" is above "
		    "\"maxLength\"");
		return -1;
	}
	n->fmt = f;
	if (f != F_NONE && (a || b)) {
		schema_words_format_lens(f, &flo, &fhi);
		if (n->minl > flo || fhi > n->maxl) {
			schema_path_fail(c, TS_EINVAL, "\"format\" \"%s\" "
			    "with \"minLength\"/\"maxLength\" is supported "
			    "only when every value (%zu to %zu characters) "
			    "fits", fname, flo, fhi);
			return -1;
		}
	}
	return 0;
}

static int
compile_numbers(struct ctx *c, struct node *n, const json_t *s,
    enum numfmt nf)
{
	if (get_bounds(c, s, &n->b) < 0)
		return -1;
	n->b.int32 = nf == NF_INT32;
	if ((n->types & BIT(TY_INT)) &&
	    schema_num_int_spec(c, &n->b, &n->is) < 0)
		return -1;
	if (!(n->types & BIT(TY_NUM)))
		return 0;
	if (nf == NF_INT32 || nf == NF_INT64 || (n->b.mult > 0 &&
	    n->b.f == 0)) {
		n->num_int = 1;
		if (!(n->types & BIT(TY_INT)) && schema_num_int_spec(c, &n->b,
		    &n->is) < 0)
			return -1;
		return 0;
	}
	return schema_num_dec_spec(c, &n->b, &n->ds);
}

/* Whether an enum/const value passes the keywords beside it. */
static int
value_ok(const struct node *n, const json_t *v, unsigned mask)
{
	int t = schema_value_type(v);
	int ok = (mask & BIT(t)) != 0;

	if (t == TY_INT && (mask & BIT(TY_NUM)))
		ok = 1;
	if (t == TY_NUM && (mask & BIT(TY_INT)) &&
	    schema_num_integral(json_real_value(v)))
		ok = 1;
	if (!ok)
		return 0;
	if (t == TY_STR) {
		size_t cp = utf8_len(json_string_value(v),
		    json_string_length(v));

		return cp >= n->minl && cp <= n->maxl;
	}
	if (t == TY_INT || t == TY_NUM)
		return schema_num_ok(&n->b, json_number_value(v));
	return 1;
}

/*
 * enum and const, filtered by type, nullable, the string lengths and
 * the numeric keywords beside them; nothing else may be beside them.
 * 0, or -1 after schema_path_fail().
 */
static int
compile_enum(struct ctx *c, struct node *n, const json_t *s, unsigned mask)
{
	const json_t *ev = json_object_get(s, "enum");
	const json_t *cv = json_object_get(s, "const"), *x;
	const char *key;
	json_t *v;
	size_t i, cand;

	json_object_foreach((json_t *)s, key, v) {
		enum kw k = kw_of(key);

		if (k == KW_OBJ || k == KW_ARR || k == KW_FORMAT) {
			schema_path_fail(c, TS_EINVAL, "\"%s\" beside \"%s\" "
			    "is not supported", key,
			    ev != NULL ? "enum" : "const");
			return -1;
		}
	}
	if (ev != NULL && (!json_is_array(ev) || json_array_size(ev) == 0)) {
		schema_path_fail(c, TS_EINVAL, "\"enum\" must be a non-empty "
		    "array");
		return -1;
	}
	if (get_count(c, s, "minLength", &n->minl) < 0 ||
	    get_count(c, s, "maxLength", &n->maxl) < 0 ||
	    get_bounds(c, s, &n->b) < 0)
		return -1;
	cand = ev != NULL ? json_array_size(ev) : 1;
	if (schema_step(c, cand) < 0)
		return -1;
	n->vals = xcalloc(cand, sizeof(*n->vals));
	n->valsize = xcalloc(cand, sizeof(*n->valsize));
	n->types = 0;
	for (i = 0; i < cand; i++) {
		x = ev != NULL ? json_array_get(ev, i) : cv;
		if (ev != NULL && cv != NULL && !schema_value_same(x, cv))
			continue;
		if (!value_ok(n, x, mask))
			continue;
		n->vals[n->nvals] = x;
		n->valsize[n->nvals] = json_dumpb(x, NULL, 0, FLAGS);
		if (n->valsize[n->nvals] == 0) {
			schema_path_fail(c, TS_ENOMEM, "out of memory");
			return -1;
		}
		/* dumped, and compared with const: a step per 64 bytes */
		if (schema_step(c, n->valsize[n->nvals] / 64) < 0)
			return -1;
		if (schema_value_depth(x) > n->valdepth)
			n->valdepth = schema_value_depth(x);
		n->types |= BIT(schema_value_type(x));
		n->nvals++;
	}
	if (n->nvals == 0) {
		schema_path_fail(c, TS_EINVAL, "no \"%s\" value is valid "
		    "against the keywords beside it",
		    ev != NULL ? "enum" : "const");
		return -1;
	}
	n->accept = n->types;
	return 0;
}

/* A schema of types and their keywords, or an enum/const. */
static struct node *
compile_plain(struct ctx *c, const json_t *s, unsigned depth)
{
	struct node *n = new_node(c, K_PLAIN);
	const json_t *tv = json_object_get(s, "type");
	const json_t *nv = json_object_get(s, "nullable");
	const json_t *fv = json_object_get(s, "format");
	const char *key, *fname = "";
	json_t *v;
	unsigned mask = 0, infer = 0;
	enum fmt f = F_NONE;
	enum numfmt nf = NF_NONE;
	size_t i;
	int r;

	if (tv != NULL && get_types(c, tv, &mask) < 0)
		return NULL;
	if (nv != NULL && !json_is_boolean(nv)) {
		schema_path_fail(c, TS_EINVAL, "\"nullable\" must be a "
		    "boolean");
		return NULL;
	}
	if (fv != NULL) {
		if (!json_is_string(fv)) {
			schema_path_fail(c, TS_EINVAL, "\"format\" must be a "
			    "string");
			return NULL;
		}
		fname = json_string_value(fv);
		for (i = 0; i < sizeof(str_formats) / sizeof(str_formats[0]);
		    i++)
			if (strcmp(fname, str_formats[i].name) == 0)
				f = str_formats[i].f;
		if (strcmp(fname, "int32") == 0)
			nf = NF_INT32;
		else if (strcmp(fname, "int64") == 0)
			nf = NF_INT64;
		else if (strcmp(fname, "float") == 0 ||
		    strcmp(fname, "double") == 0)
			nf = NF_FLOAT;
		if (f == F_NONE && nf == NF_NONE) {
			schema_path_fail(c, TS_EINVAL, "\"format\" \"%.64s\" "
			    "is not supported", fname);
			return NULL;
		}
	}
	json_object_foreach((json_t *)s, key, v) {
		switch (kw_of(key)) {
		case KW_OBJ:
			infer |= BIT(TY_OBJ);
			break;
		case KW_ARR:
			infer |= BIT(TY_ARR);
			break;
		case KW_STR:
			infer |= BIT(TY_STR);
			break;
		case KW_NUM:
			infer |= BIT(TY_NUM);
			break;
		case KW_FORMAT:
			infer |= f != F_NONE ? BIT(TY_STR) : BIT(TY_NUM);
			break;
		default:
			break;
		}
	}
	n->accept = tv != NULL ? mask : T_ALL;
	if (json_is_true(nv)) {
		mask |= BIT(TY_NULL);
		n->accept |= BIT(TY_NULL);
	}
	if (json_object_get(s, "enum") != NULL ||
	    json_object_get(s, "const") != NULL) {
		if (compile_enum(c, n, s, tv != NULL ? mask : T_ALL) < 0)
			return NULL;
		return n;
	}
	if (tv == NULL)
		mask |= infer != 0 ? infer : T_ANY;
	n->types = mask;
	if ((mask & BIT(TY_OBJ))) {
		struct part pt;

		pt.s = s;
		pt.path = schema_path_copy(c);
		r = compile_object(c, n, &pt, 1, depth);
		free(pt.path);
		if (r < 0)
			return NULL;
	}
	if ((mask & BIT(TY_ARR)) && compile_array(c, n, s, depth) < 0)
		return NULL;
	if ((mask & BIT(TY_STR)) && compile_string(c, n, s, f, fname) < 0)
		return NULL;
	if ((mask & T_NUMS) && compile_numbers(c, n, s, nf) < 0)
		return NULL;
	return n;
}

/* allOf: one part alone, or object schemas merged into one. */
static struct node *
compile_allof(struct ctx *c, const json_t *s, const char *ckey,
    unsigned depth)
{
	const json_t *a = json_object_get(s, "allOf");
	struct view vw;
	struct node *n, *r;
	size_t old, k;

	if (!json_is_array(a) || json_array_size(a) == 0) {
		schema_path_fail(c, TS_EINVAL, "\"allOf\" must be a non-empty "
		    "array");
		return NULL;
	}
	if (json_array_size(a) == 1 && ckey == NULL) {
		old = schema_path_push_str(c, "allOf");
		k = schema_path_push_index(c, 0);
		r = compile(c, json_array_get(a, 0), depth + 1);
		schema_path_pop(c, k);
		schema_path_pop(c, old);
		return r;
	}
	memset(&vw, 0, sizeof(vw));
	n = new_node(c, K_PLAIN);
	n->types = BIT(TY_OBJ);
	if (flatten(c, s, 0, depth, &vw) < 0 ||
	    compile_object(c, n, vw.parts, vw.nparts, depth) < 0)
		n = NULL;
	else
		n->accept = vw.typed ? BIT(TY_OBJ) : T_ALL;
	view_free(&vw);
	return n;
}

/*
 * One subschema; NULL after schema_path_fail(). Keywords: refused ones
 * fail, $ref, anyOf and oneOf allow only annotations beside them, allOf
 * is merged, the rest is compile_plain's.
 */
static struct node *
compile(struct ctx *c, const json_t *s, unsigned depth)
{
	const char *key, *ckey = NULL;
	json_t *v;
	const json_t *ref = NULL;
	int any = 0, one = 0, all = 0;

	if (depth > SCHEMA_GEN_MAX_SCHEMA_DEPTH) {
		schema_path_fail(c, TS_ELIMIT, "subschemas nest deeper than "
		    "%d", SCHEMA_GEN_MAX_SCHEMA_DEPTH);
		return NULL;
	}
	/* the node it becomes, and a step per keyword */
	if (schema_step(c, STEPS_VALUE + json_object_size(s)) < 0)
		return NULL;
	if (json_is_true(s))
		return c->any;
	if (json_is_false(s))
		return new_node(c, K_NEVER);
	if (!json_is_object(s)) {
		schema_path_fail(c, TS_EINVAL, "a schema must be an object or "
		    "a boolean");
		return NULL;
	}
	json_object_foreach((json_t *)s, key, v) {
		switch (kw_of(key)) {
		case KW_REFUSED:
			schema_path_fail(c, TS_EINVAL, "\"%s\" is not "
			    "supported", key);
			return NULL;
		case KW_REF:
			ref = v;
			break;
		case KW_ANYOF:
			any = 1;
			break;
		case KW_ONEOF:
			one = 1;
			break;
		case KW_ALLOF:
			all = 1;
			break;
		case KW_OTHER:
			break;
		default:
			if (ckey == NULL)
				ckey = key;
			break;
		}
	}
	if (ref != NULL) {
		if (any || one || all || ckey != NULL) {
			schema_path_fail(c, TS_EINVAL, "\"$ref\" beside "
			    "\"%s\" is not supported", any ? "anyOf" :
			    one ? "oneOf" : all ? "allOf" : ckey);
			return NULL;
		}
		return compile_ref(c, ref);
	}
	if (any || one) {
		if ((any && one) || all || ckey != NULL) {
			schema_path_fail(c, TS_EINVAL, "\"%s\" beside \"%s\" "
			    "is not supported", any ? "anyOf" : "oneOf",
			    (any && one) ? "oneOf" : all ? "allOf" : ckey);
			return NULL;
		}
		return compile_anyof(c, s, one, depth);
	}
	if (all)
		return compile_allof(c, s, ckey, depth);
	return compile_plain(c, s, depth);
}

void
schema_compile_free(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->nall; i++)
		node_free(c->all[i]);
	free(c->all);
	for (i = 0; i < c->nt; i++)
		free(c->t[i].path);
}

struct node *
schema_compile(struct ctx *c, const json_t *schema, uint64_t max_steps)
{
	struct node *root;
	size_t i;

	memset(c, 0, sizeof(*c));
	c->max_steps = max_steps;
	c->root = schema;
	c->any = new_node(c, K_PLAIN);
	c->any->types = T_ANY;
	c->any->accept = T_ALL;
	if (schema_num_int_spec(c, &c->any->b, &c->any->is) < 0)
		return NULL;
	c->t[0].json = schema;
	c->t[0].path = xstrndup("", 0);
	c->nt = 1;
	if (schema == NULL) {
		schema_path_fail(c, TS_EINVAL, "no schema");
		return NULL;
	}
	root = compile(c, schema, 0);
	c->t[0].node = root;
	for (i = 1; i < c->nt && c->rc == TS_OK; i++) {
		schema_path_load(c, c->t[i].path);
		c->t[i].node = compile(c, c->t[i].json, 0);
	}
	if (c->rc != TS_OK)
		return NULL;
	for (i = 0; i < c->nall; i++)
		if (c->all[i]->kind == K_REF)
			c->all[i]->ref = c->t[c->all[i]->target].node;
	return root;
}
