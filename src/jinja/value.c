/*
 * jinja/value.c - the arena and the runtime values of the interpreter,
 * after @huggingface/jinja src/runtime.ts (0.5.13): JSON to values as
 * its convertToRuntimeValues() makes them from JSON.parse() (an integral
 * number is an integer, an object's keys in JavaScript's order), the
 * text a value prints as (toString()), the text `~` and `+` make of it
 * (JavaScript's String()), and toJSON(), the tojson filter, which is
 * JSON.stringify() with Python's separators (", " and ": "; "," and ": "
 * with an indent).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jinja/jinja.h"
#include "jinja/jinja_int.h"

/* One UTF-8 character of (s, n), as jinja_int.h says (here, beside
 * the values, so that the lexer and the values do not lean on each
 * other). */
size_t
jinja_utf8_next(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len, i;
	uint32_t c;

	if (n == 0) {
		*cp = 0;
		return 0;
	}
	if (u[0] < 0x80) {
		*cp = u[0];
		return 1;
	}
	if ((u[0] & 0xe0) == 0xc0) {
		len = 2;
		c = u[0] & 0x1f;
	} else if ((u[0] & 0xf0) == 0xe0) {
		len = 3;
		c = u[0] & 0x0f;
	} else if ((u[0] & 0xf8) == 0xf0) {
		len = 4;
		c = u[0] & 0x07;
	} else {
		*cp = u[0];
		return 1;
	}
	if (len > n) {
		*cp = u[0];
		return 1;
	}
	for (i = 1; i < len; i++) {
		if ((u[i] & 0xc0) != 0x80) {
			*cp = u[0];
			return 1;
		}
		c = (c << 6) | (u[i] & 0x3f);
	}
	*cp = c;
	return len;
}

/* ---- arena ---- */
struct jarena_chunk {
	struct jarena_chunk *next;
	size_t used, size;
	max_align_t data[];
};

void *jarena_alloc(struct jarena *a, size_t n)
{
	struct jarena_chunk *c = a->head;
	size_t need = (n + 15) & ~(size_t)15, size;
	void *p;

	if (need < n || (a->cap > 0 && need > a->cap - a->used))
		return NULL;
	if (c == NULL || c->size - c->used < need) {
		size = need > 65536 ? need : 65536;
		c = xmalloc(sizeof(*c) + size);
		c->next = a->head;
		c->used = 0;
		c->size = size;
		a->head = c;
	}
	p = (char *)c->data + c->used;
	c->used += need;
	a->used += need;
	return p;
}

void jarena_free(struct jarena *a)
{
	struct jarena_chunk *c = a->head, *next;

	for (; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->used = 0;
}

const char *jinja_find(const char *h, size_t n, const char *h2, size_t n2)
{
	const char *p = h, *e = h + n;

	if (n2 == 0)
		return h;
	while (n2 <= (size_t)(e - p)) {
		p = memchr(p, h2[0], (size_t)(e - p) - n2 + 1);
		if (p == NULL)
			return NULL;
		if (memcmp(p, h2, n2) == 0)
			return p;
		p++;
	}
	return NULL;
}

/* ---- the render's state ---- */
struct jv *jrun_fail(struct jrun *r, enum ts_err rc, const char *fmt, ...)
{
	va_list ap;

	if (r->rc != TS_OK)
		return NULL;
	r->rc = rc;
	if (r->err != NULL && r->errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(r->err, r->errlen, fmt, ap);
		va_end(ap);
	}
	return NULL;
}

int jrun_step(struct jrun *r, unsigned long n)
{
	if (r->rc != TS_OK)
		return 0;
	if (n > JINJA_MAX_STEPS - r->steps) {
		jrun_fail(r, TS_ELIMIT, "template ran over %lu steps",
		    JINJA_MAX_STEPS);
		return 0;
	}
	r->steps += n;
	return 1;
}

void *jrun_alloc(struct jrun *r, size_t n)
{
	void *p;

	if (r->rc != TS_OK)
		return NULL;
	p = jarena_alloc(&r->arena, n);
	if (p == NULL)
		jrun_fail(r, TS_ELIMIT, "template used over %u bytes of "
		    "memory", JINJA_MAX_MEMORY);
	return p;
}

int jrun_put(struct jrun *r, struct ts_buf *b, const void *p, size_t n)
{
	if (r->rc != TS_OK)
		return 0;
	if (ts_buf_append(b, p, n) != TS_OK) {
		jrun_fail(r, TS_ELIMIT, "output over %zu bytes", b->max);
		return 0;
	}
	return 1;
}

/* ---- values ---- */
struct jv *jv_new(struct jrun *r, enum jv_type t)
{
	struct jv *v = jrun_alloc(r, sizeof(*v));

	if (v != NULL) {
		memset(v, 0, sizeof(*v));
		v->t = t;
	}
	return v;
}

struct jv *jv_str(struct jrun *r, const char *p, size_t n)
{
	struct jv *v = jv_new(r, JV_STR);
	char *s;

	if (v == NULL || (s = jrun_alloc(r, n + 1)) == NULL)
		return NULL;
	if (n > 0)
		memcpy(s, p, n);
	s[n] = '\0';
	v->u.s.p = s;
	v->u.s.n = n;
	return v;
}

struct jv *jv_int(struct jrun *r, long long i)
{
	struct jv *v = jv_new(r, JV_INT);

	if (v != NULL)
		v->u.i = i;
	return v;
}

struct jv *jv_float(struct jrun *r, double f)
{
	struct jv *v = jv_new(r, JV_FLOAT);

	if (v != NULL)
		v->u.f = f;
	return v;
}

/* The values no render changes, shared: true, false, none, undefined
 * (values are never changed in place, but a namespace's or a scope's
 * entries). */
static struct jv jv_true_v = { JV_BOOL, { .b = 1 } };
static struct jv jv_false_v = { JV_BOOL, { .b = 0 } };
static struct jv jv_null_v = { JV_NULL, { .i = 0 } };
static struct jv jv_undef_v = { JV_UNDEF, { .i = 0 } };

struct jv *jv_bool(struct jrun *r, int b)
{
	if (r->rc != TS_OK)
		return NULL;
	return b ? &jv_true_v : &jv_false_v;
}

struct jv *jv_null(struct jrun *r)
{
	return r->rc != TS_OK ? NULL : &jv_null_v;
}

struct jv *jv_undef(struct jrun *r)
{
	return r->rc != TS_OK ? NULL : &jv_undef_v;
}

struct jv *jv_array(struct jrun *r, enum jv_type t, size_t cap)
{
	struct jv *v = jv_new(r, t);

	if (v == NULL)
		return NULL;
	if (t == JV_ARRAY || t == JV_TUPLE) {
		v->u.a.cap = cap;
		if (cap > 0 && (v->u.a.v = jrun_alloc(r, cap *
		    sizeof(*v->u.a.v))) == NULL)
			return NULL;
	} else {
		v->u.o.cap = cap;
		if (cap > 0 && (v->u.o.v = jrun_alloc(r, cap *
		    sizeof(*v->u.o.v))) == NULL)
			return NULL;
	}
	return v;
}

int jv_push(struct jrun *r, struct jv *arr, struct jv *v)
{
	if (arr->u.a.n == arr->u.a.cap) {
		size_t cap = arr->u.a.cap ? arr->u.a.cap * 2 : 8;
		struct jv **nv = jrun_alloc(r, cap * sizeof(*nv));

		if (nv == NULL)
			return 0;
		if (arr->u.a.n > 0)
			memcpy(nv, arr->u.a.v, arr->u.a.n * sizeof(*nv));
		arr->u.a.v = nv;
		arr->u.a.cap = cap;
	}
	arr->u.a.v[arr->u.a.n++] = v;
	return 1;
}

struct jv *jv_obj_get(const struct jv *o, const char *k, size_t kn)
{
	size_t i;

	for (i = 0; i < o->u.o.n; i++)
		if (o->u.o.v[i].kn == kn && memcmp(o->u.o.v[i].k, k, kn) == 0)
			return o->u.o.v[i].v;
	return NULL;
}

/* Sets k (borrowed: it must outlive the render) to v, in place when
 * present (a Map keeps the first position of a key). */
int jv_obj_set(struct jrun *r, struct jv *o, const char *k, size_t kn,
    struct jv *v)
{
	size_t i;

	for (i = 0; i < o->u.o.n; i++)
		if (o->u.o.v[i].kn == kn &&
		    memcmp(o->u.o.v[i].k, k, kn) == 0) {
			o->u.o.v[i].v = v;
			return 1;
		}
	if (o->u.o.n == o->u.o.cap) {
		size_t cap = o->u.o.cap ? o->u.o.cap * 2 : 8;
		struct jv_pair *nv = jrun_alloc(r, cap * sizeof(*nv));

		if (nv == NULL)
			return 0;
		if (o->u.o.n > 0)
			memcpy(nv, o->u.o.v, o->u.o.n * sizeof(*nv));
		o->u.o.v = nv;
		o->u.o.cap = cap;
	}
	o->u.o.v[o->u.o.n].k = k;
	o->u.o.v[o->u.o.n].kn = kn;
	o->u.o.v[o->u.o.n].v = v;
	o->u.o.n++;
	return 1;
}

/* An array index as JavaScript orders object keys: "0".."4294967294"
 * with no leading zero. Its value, or -1. */
static long long array_index(const char *k, size_t n)
{
	long long v = 0;
	size_t i;

	if (n == 0 || n > 10 || (n > 1 && k[0] == '0'))
		return -1;
	for (i = 0; i < n; i++) {
		if (k[i] < '0' || k[i] > '9')
			return -1;
		v = v * 10 + (k[i] - '0');
	}
	return v < 4294967295LL ? v : -1;
}

static int by_index(const void *a, const void *b)
{
	const struct jv_pair *x = a, *y = b;
	long long i = array_index(x->k, x->kn), j = array_index(y->k, y->kn);

	return i < j ? -1 : i > j;
}

struct jv *jv_from_json(struct jrun *r, const void *json, int depth)
{
	const json_t *j = json;
	struct jv *v;
	size_t i, nidx;
	const char *k;
	json_t *e;

	if (!jrun_step(r, 1))
		return NULL;
	if (depth > 256)
		return jrun_fail(r, TS_EINVAL, "context nested too deeply");
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		v = jv_array(r, JV_OBJECT, json_object_size(j));
		if (v == NULL)
			return NULL;
		json_object_foreach((json_t *)j, k, e) {
			struct jv *c = jv_from_json(r, e, depth + 1);

			if (c == NULL)
				return NULL;
			v->u.o.v[v->u.o.n].k = k;
			v->u.o.v[v->u.o.n].kn = strlen(k);
			v->u.o.v[v->u.o.n++].v = c;
		}
		/* Object.entries(): integer keys first, ascending */
		for (i = 0, nidx = 0; i < v->u.o.n; i++)
			if (array_index(v->u.o.v[i].k, v->u.o.v[i].kn) >= 0)
				nidx++;
		if (nidx > 0) {
			struct jv_pair *o = jrun_alloc(r, v->u.o.n *
			    sizeof(*o));
			size_t a = 0, b = nidx;

			if (o == NULL)
				return NULL;
			for (i = 0; i < v->u.o.n; i++) {
				if (array_index(v->u.o.v[i].k,
				    v->u.o.v[i].kn) >= 0)
					o[a++] = v->u.o.v[i];
				else
					o[b++] = v->u.o.v[i];
			}
			qsort(o, nidx, sizeof(*o), by_index);
			v->u.o.v = o;
		}
		return v;
	case JSON_ARRAY:
		v = jv_array(r, JV_ARRAY, json_array_size(j));
		if (v == NULL)
			return NULL;
		json_array_foreach(j, i, e) {
			struct jv *c = jv_from_json(r, e, depth + 1);

			if (c == NULL)
				return NULL;
			v->u.a.v[v->u.a.n++] = c;
		}
		return v;
	case JSON_STRING:
		return jv_str(r, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
		return jv_int(r, json_integer_value(j));
	case JSON_REAL: {
		double d = json_real_value(j);

		/* Number.isInteger(): 2.0 is an integer */
		if (isfinite(d) && d == floor(d) && fabs(d) < 9.0e18)
			return jv_int(r, (long long)d);
		return jv_float(r, d);
	}
	case JSON_TRUE:
		return jv_bool(r, 1);
	case JSON_FALSE:
		return jv_bool(r, 0);
	default:
		return jv_null(r);
	}
}

/* RuntimeValue.__bool__(): Python's truth for strings, numbers, lists
 * and dicts; a namespace or function is true. */
int jv_truthy(const struct jv *v)
{
	switch (v->t) {
	case JV_BOOL: return v->u.b;
	case JV_INT: return v->u.i != 0;
	case JV_FLOAT: return v->u.f != 0 && !isnan(v->u.f);
	case JV_STR: return v->u.s.n > 0;
	case JV_ARRAY: case JV_TUPLE: return v->u.a.n > 0;
	case JV_OBJECT: case JV_KWARGS: return v->u.o.n > 0;
	case JV_NS: case JV_FUNC: return 1;
	default: return 0;
	}
}

int jv_is_array(const struct jv *v)
{
	return v->t == JV_ARRAY || v->t == JV_TUPLE;
}

int jv_is_map(const struct jv *v)
{
	return v->t == JV_OBJECT || v->t == JV_KWARGS;
}

const char *jv_type_name(const struct jv *v)
{
	static const char *const names[] = {
		"UndefinedValue", "NullValue", "BooleanValue", "IntegerValue",
		"FloatValue", "StringValue", "ArrayValue", "TupleValue",
		"ObjectValue", "KeywordArgumentsValue", "NamespaceValue",
		"FunctionValue"
	};

	return names[v->t];
}

/*
 * JavaScript's Number.prototype.toString(): the shortest digits that
 * read back as d (ECMA-262 Number::toString), plain between 1e-7 and
 * 1e21, else with an exponent ("1e+21", "1.5e-7").
 */
void jv_fmt_number(char *out, size_t outlen, double d)
{
	char buf[40], digits[24];
	int prec, k = 0, e, n, i;
	const char *p;
	size_t o = 0;

	if (isnan(d)) {
		snprintf(out, outlen, "NaN");
		return;
	}
	if (isinf(d)) {
		snprintf(out, outlen, d < 0 ? "-Infinity" : "Infinity");
		return;
	}
	if (d == 0) {
		snprintf(out, outlen, "0");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	p = buf;
	if (*p == '-') {
		out[o++] = '-';
		p++;
	}
	for (; *p != 'e'; p++)
		if (*p != '.')
			digits[k++] = *p;
	e = atoi(p + 1);
	while (k > 1 && digits[k - 1] == '0')
		k--;
	n = e + 1;
#define PUT(c) do { if (o + 1 < outlen) out[o++] = (c); } while (0)
	if (k <= n && n <= 21) {
		for (i = 0; i < k; i++)
			PUT(digits[i]);
		for (i = k; i < n; i++)
			PUT('0');
	} else if (0 < n && n <= 21) {
		for (i = 0; i < n; i++)
			PUT(digits[i]);
		PUT('.');
		for (i = n; i < k; i++)
			PUT(digits[i]);
	} else if (-6 < n && n <= 0) {
		PUT('0');
		PUT('.');
		for (i = 0; i < -n; i++)
			PUT('0');
		for (i = 0; i < k; i++)
			PUT(digits[i]);
	} else {
		PUT(digits[0]);
		if (k > 1) {
			PUT('.');
			for (i = 1; i < k; i++)
				PUT(digits[i]);
		}
		o += (size_t)snprintf(out + o, outlen - o, "e%c%d",
		    n - 1 >= 0 ? '+' : '-', abs(n - 1));
	}
#undef PUT
	out[o < outlen ? o : outlen - 1] = '\0';
}

static int put_s(struct jrun *r, struct ts_buf *b, const char *s)
{
	return jrun_put(r, b, s, strlen(s));
}

/* FloatValue.toString(): "-0.0", "2.0" for an integral value, else the
 * JavaScript number. */
static void fmt_float(char *out, size_t outlen, double d)
{
	if (d == 0 && signbit(d))
		snprintf(out, outlen, "-0.0");
	else if (isfinite(d) && d == floor(d) && fabs(d) < 1e21)
		snprintf(out, outlen, "%.1f", d);
	else
		jv_fmt_number(out, outlen, d);
}

int jv_print(struct jrun *r, struct ts_buf *b, const struct jv *v)
{
	char num[64];
	struct jtojson o = { 0, 0, 0, NULL, NULL, 0 };

	switch (v->t) {
	case JV_UNDEF: return put_s(r, b, "undefined");
	case JV_NULL: return put_s(r, b, "null");
	case JV_BOOL: return put_s(r, b, v->u.b ? "true" : "false");
	case JV_INT:
		snprintf(num, sizeof(num), "%lld", v->u.i);
		return put_s(r, b, num);
	case JV_FLOAT:
		fmt_float(num, sizeof(num), v->u.f);
		return put_s(r, b, num);
	case JV_STR: return jrun_put(r, b, v->u.s.p, v->u.s.n);
	case JV_FUNC:
		jrun_fail(r, TS_EINVAL, "cannot print a function");
		return 0;
	default:
		return jv_tojson(r, b, v, &o, 0);
	}
}

int jv_raw(struct jrun *r, struct ts_buf *b, const struct jv *v)
{
	char num[64];
	size_t i;

	switch (v->t) {
	case JV_INT:
		snprintf(num, sizeof(num), "%lld", v->u.i);
		return put_s(r, b, num);
	case JV_FLOAT:
		jv_fmt_number(num, sizeof(num), v->u.f);
		return put_s(r, b, num);
	case JV_ARRAY:
	case JV_TUPLE:
		/* Array.prototype.toString(): join(",") of each toString() */
		for (i = 0; i < v->u.a.n; i++)
			if ((i > 0 && !put_s(r, b, ",")) ||
			    !jv_print(r, b, v->u.a.v[i]))
				return 0;
		return 1;
	case JV_OBJECT:
	case JV_KWARGS:
	case JV_NS:
		return put_s(r, b, "[object Map]");
	default:
		return jv_print(r, b, v);
	}
}

/* JSON.stringify() of a string; with ensure_ascii, every UTF-16 unit
 * from U+007F up as \uXXXX (runtime.ts makeAsciiSafe). */
static int put_json_string(struct jrun *r, struct ts_buf *b, const char *s,
    size_t n, int ascii)
{
	char esc[16];
	size_t i = 0, run = 0, w;
	uint32_t c;

	if (!put_s(r, b, "\""))
		return 0;
	while (i < n) {
		unsigned char u = (unsigned char)s[i];
		const char *e = NULL;

		if (u >= 0x20 && u != '"' && u != '\\' &&
		    !(ascii && u >= 0x7f)) {
			i++;
			run++;
			continue;
		}
		if (run > 0 && !jrun_put(r, b, s + i - run, run))
			return 0;
		run = 0;
		w = 1;
		switch (u) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			if (u < 0x20) {
				snprintf(esc, sizeof(esc), "\\u%04x", u);
			} else {
				w = jinja_utf8_next(s + i, n - i, &c);
				if (c >= 0x10000) {
					c -= 0x10000;
					snprintf(esc, sizeof(esc),
					    "\\u%04x\\u%04x",
					    0xd800 + (c >> 10),
					    0xdc00 + (c & 0x3ff));
				} else {
					snprintf(esc, sizeof(esc), "\\u%04x",
					    c);
				}
			}
			e = esc;
		}
		if (!put_s(r, b, e))
			return 0;
		i += w;
	}
	if (run > 0 && !jrun_put(r, b, s + n - run, run))
		return 0;
	return put_s(r, b, "\"");
}

static int pad(struct jrun *r, struct ts_buf *b, long indent, int depth)
{
	long k;

	if (!put_s(r, b, "\n"))
		return 0;
	for (k = 0; k < indent * depth; k++)
		if (!put_s(r, b, " "))
			return 0;
	return 1;
}

static int by_key(const void *a, const void *b)
{
	const struct jv_pair *x = a, *y = b;
	int c = memcmp(x->k, y->k, x->kn < y->kn ? x->kn : y->kn);

	return c != 0 ? c : x->kn < y->kn ? -1 : x->kn > y->kn;
}

int jv_tojson(struct jrun *r, struct ts_buf *b, const struct jv *v,
    const struct jtojson *o, int depth)
{
	const char *isep = o->item_sep, *ksep = o->key_sep;
	char num[64];
	size_t i, n;
	const struct jv_pair *pairs;

	if (!jrun_step(r, 1))
		return 0;
	if (depth > 256) {
		jrun_fail(r, TS_EINVAL, "tojson: value nested too deeply");
		return 0;
	}
	if (isep == NULL)
		isep = o->indent > 0 ? "," : ", ";
	if (ksep == NULL)
		ksep = ": ";
	switch (v->t) {
	case JV_NULL: return put_s(r, b, "null");
	case JV_UNDEF: return put_s(r, b, o->undef_null ? "null" :
	    "undefined");
	case JV_BOOL: return put_s(r, b, v->u.b ? "true" : "false");
	case JV_INT:
		snprintf(num, sizeof(num), "%lld", v->u.i);
		return put_s(r, b, num);
	case JV_FLOAT:
		if (!isfinite(v->u.f))
			return put_s(r, b, "null");
		jv_fmt_number(num, sizeof(num), v->u.f);
		return put_s(r, b, num);
	case JV_STR:
		return put_json_string(r, b, v->u.s.p, v->u.s.n, o->ensure_ascii);
	case JV_ARRAY:
	case JV_TUPLE:
		n = v->u.a.n;
		if (!put_s(r, b, "["))
			return 0;
		for (i = 0; i < n; i++) {
			if (i > 0 && !put_s(r, b, isep))
				return 0;
			if (o->indent > 0 && !pad(r, b, o->indent, depth + 1))
				return 0;
			if (!jv_tojson(r, b, v->u.a.v[i], o, depth + 1))
				return 0;
		}
		if (o->indent > 0 && n > 0 && !pad(r, b, o->indent, depth))
			return 0;
		return put_s(r, b, "]");
	case JV_OBJECT:
	case JV_KWARGS:
	case JV_NS:
		n = v->u.o.n;
		pairs = v->u.o.v;
		if (o->sort_keys && n > 1) {
			struct jv_pair *s = jrun_alloc(r, n * sizeof(*s));

			if (s == NULL)
				return 0;
			memcpy(s, pairs, n * sizeof(*s));
			qsort(s, n, sizeof(*s), by_key);
			pairs = s;
		}
		if (!put_s(r, b, "{"))
			return 0;
		for (i = 0; i < n; i++) {
			if (i > 0 && !put_s(r, b, isep))
				return 0;
			if (o->indent > 0 && !pad(r, b, o->indent, depth + 1))
				return 0;
			if (!put_json_string(r, b, pairs[i].k, pairs[i].kn,
			    o->ensure_ascii) || !put_s(r, b, ksep) ||
			    !jv_tojson(r, b, pairs[i].v, o, depth + 1))
				return 0;
		}
		if (o->indent > 0 && n > 0 && !pad(r, b, o->indent, depth))
			return 0;
		return put_s(r, b, "}");
	default:
		jrun_fail(r, TS_EINVAL, "cannot convert to JSON: %s",
		    jv_type_name(v));
		return 0;
	}
}
