/*
 * jinja/filter.c - `value | filter` and `value | filter(args)`, after
 * @huggingface/jinja src/runtime.ts (0.5.13) applyFilter(): which
 * filters a value of each type takes, with the reference's results (join
 * without a separator joins with "", `string` of a list is its JSON, int
 * of "12abc" is 12). Beyond the reference: `d` and `count` (Jinja's
 * aliases of default and length), `default` without parentheses, first
 * and last of a string.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "jinja/jinja_int.h"

static int named(const char *name, const char *a)
{
	return strcmp(name, a) == 0;
}

/* Positional argument i, else keyword `kw`, else NULL. */
static struct jv *arg(struct jv **args, size_t nargs, size_t i,
    const char *kw)
{
	size_t npos = nargs;
	struct jv *kwargs = NULL;

	if (nargs > 0 && args[nargs - 1]->t == JV_KWARGS) {
		kwargs = args[nargs - 1];
		npos--;
	}
	if (i < npos)
		return args[i];
	if (kwargs != NULL && kw != NULL)
		return jv_obj_get(kwargs, kw, strlen(kw));
	return NULL;
}

static struct jv *str_of(struct jrun *r, struct ts_buf *t)
{
	struct jv *v = r->rc == TS_OK ? jv_str(r, t->p ? t->p : "", t->len) :
	    NULL;

	ts_buf_free(t);
	return v;
}

static struct jv *tojson(struct jrun *r, struct jv *v, struct jv **args,
    size_t nargs)
{
	struct jtojson o = { 0, 0, 0, NULL, NULL, 1 };
	struct jv *indent = arg(args, nargs, (size_t)-1, "indent");
	struct jv *ascii = arg(args, nargs, (size_t)-1, "ensure_ascii");
	struct jv *sort = arg(args, nargs, (size_t)-1, "sort_keys");
	struct jv *seps = arg(args, nargs, (size_t)-1, "separators");
	struct ts_buf t;

	if (indent != NULL && indent->t != JV_INT && indent->t != JV_NULL)
		return jrun_fail(r, TS_EINVAL, "tojson: indent must be an "
		    "integer");
	if (indent != NULL && indent->t == JV_INT) {
		if (indent->u.i > 64)
			return jrun_fail(r, TS_EINVAL, "tojson: indent over "
			    "64");
		o.indent = (long)indent->u.i;
	}
	if (ascii != NULL && ascii->t != JV_BOOL)
		return jrun_fail(r, TS_EINVAL, "tojson: ensure_ascii must be "
		    "a boolean");
	o.ensure_ascii = ascii != NULL && ascii->u.b;
	if (sort != NULL && sort->t != JV_BOOL)
		return jrun_fail(r, TS_EINVAL, "tojson: sort_keys must be a "
		    "boolean");
	o.sort_keys = sort != NULL && sort->u.b;
	if (seps != NULL && seps->t != JV_NULL) {
		if (!jv_is_array(seps) || seps->u.a.n != 2 ||
		    seps->u.a.v[0]->t != JV_STR ||
		    seps->u.a.v[1]->t != JV_STR)
			return jrun_fail(r, TS_EINVAL, "tojson: separators "
			    "must be two strings");
		o.item_sep = seps->u.a.v[0]->u.s.p;
		o.key_sep = seps->u.a.v[1]->u.s.p;
	}
	ts_buf_init(&t, JINJA_MAX_MEMORY);
	jv_tojson(r, &t, v, &o, 0);
	return str_of(r, &t);
}

/* join: each item's JavaScript String(), null and undefined as "" */
static struct jv *join(struct jrun *r, struct jv *v, struct jv *sep)
{
	struct ts_buf t;
	size_t k, w;
	uint32_t cp;

	if (sep != NULL && sep->t != JV_STR)
		return jrun_fail(r, TS_EINVAL, "join: the separator must be "
		    "a string");
	ts_buf_init(&t, JINJA_MAX_MEMORY);
	if (v->t == JV_STR) {
		for (k = 0; k < v->u.s.n; k += w) {
			w = jinja_utf8_next(v->u.s.p + k, v->u.s.n - k, &cp);
			if (k > 0 && sep != NULL)
				jrun_put(r, &t, sep->u.s.p, sep->u.s.n);
			jrun_put(r, &t, v->u.s.p + k, w);
		}
		return str_of(r, &t);
	}
	if (!jrun_step(r, v->u.a.n)) {
		ts_buf_free(&t);
		return NULL;
	}
	for (k = 0; k < v->u.a.n; k++) {
		struct jv *x = v->u.a.v[k];

		if (k > 0 && sep != NULL)
			jrun_put(r, &t, sep->u.s.p, sep->u.s.n);
		if (x->t != JV_NULL && x->t != JV_UNDEF)
			jv_raw(r, &t, x);
	}
	return str_of(r, &t);
}

/* indent(width=4, first=false, blank=false) */
static struct jv *indent(struct jrun *r, struct jv *s, struct jv *width,
    struct jv *first, struct jv *blank)
{
	struct ts_buf t;
	const char *p = s->u.s.p, *e = p + s->u.s.n, *nl;
	const char *ind = "    ";
	size_t indn = 4, line = 0;
	char sp[65];

	if (width != NULL && width->t == JV_STR) {
		ind = width->u.s.p;
		indn = width->u.s.n;
	} else if (width != NULL && width->t == JV_INT) {
		indn = width->u.i < 0 ? 0 : width->u.i > 64 ? 64 :
		    (size_t)width->u.i;
		memset(sp, ' ', indn);
		ind = sp;
	} else if (width != NULL) {
		return jrun_fail(r, TS_EINVAL, "indent: width must be an "
		    "integer or a string");
	}
	ts_buf_init(&t, JINJA_MAX_MEMORY);
	for (;; line++) {
		size_t len;

		nl = memchr(p, '\n', (size_t)(e - p));
		len = nl ? (size_t)(nl - p) : (size_t)(e - p);
		if (!((line == 0 && !(first && jv_truthy(first))) ||
		    (len == 0 && !(blank && jv_truthy(blank)))))
			jrun_put(r, &t, ind, indn);
		jrun_put(r, &t, p, len);
		if (nl == NULL || !jrun_step(r, 1))
			break;
		jrun_put(r, &t, "\n", 1);
		p = nl + 1;
	}
	return str_of(r, &t);
}

/* JavaScript's parseInt(s, 10) and parseFloat(s); NaN -> def */
static struct jv *to_number(struct jrun *r, struct jv *s, int flt,
    struct jv *def)
{
	const char *p = s->u.s.p, *e = p + s->u.s.n;
	char buf[64], *end;
	size_t w, n;
	double d;

	while (p < e && (w = jinja_space_at(p, (size_t)(e - p))) > 0)
		p += w;
	n = (size_t)(e - p) < sizeof(buf) - 1 ? (size_t)(e - p) :
	    sizeof(buf) - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	for (w = 0; w < n; w++)  /* decimal forms only */
		if (!(buf[w] >= '0' && buf[w] <= '9') && buf[w] != '+' &&
		    buf[w] != '-' && (!flt || (buf[w] != '.' &&
		    buf[w] != 'e' && buf[w] != 'E'))) {
			buf[w] = '\0';
			break;
		}
	if (flt) {
		d = strtod(buf, &end);
		if (end == buf)
			return def;
		return jv_float(r, d);
	}
	d = (double)strtoll(buf, &end, 10);
	if (end == buf)
		return def;
	return jv_int(r, (long long)d);
}

/* compareRuntimeValues(): numbers (and booleans) with numbers, strings
 * with strings (case-folded unless case_sensitive); 2 when they cannot
 * be compared. */
static int compare(const struct jv *a, const struct jv *b, int cs)
{
	int an = a->t == JV_INT || a->t == JV_FLOAT || a->t == JV_BOOL;
	int bn = b->t == JV_INT || b->t == JV_FLOAT || b->t == JV_BOOL;
	size_t k, n;

	if ((a->t == JV_NULL && b->t == JV_NULL) ||
	    (a->t == JV_UNDEF && b->t == JV_UNDEF))
		return 0;
	if (an && bn) {
		double x = a->t == JV_INT ? (double)a->u.i : a->t == JV_FLOAT ?
		    a->u.f : a->u.b;
		double y = b->t == JV_INT ? (double)b->u.i : b->t == JV_FLOAT ?
		    b->u.f : b->u.b;

		return x < y ? -1 : x > y;
	}
	if (a->t != JV_STR || b->t != JV_STR)
		return 2;
	n = a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n;
	for (k = 0; k < n; k++) {
		int x = (unsigned char)a->u.s.p[k];
		int y = (unsigned char)b->u.s.p[k];

		if (!cs) {
			x = x >= 'A' && x <= 'Z' ? x + 32 : x;
			y = y >= 'A' && y <= 'Z' ? y + 32 : y;
		}
		if (x != y)
			return x < y ? -1 : 1;
	}
	return a->u.s.n < b->u.s.n ? -1 : a->u.s.n > b->u.s.n;
}

static struct jv *attr_path(struct jrun *r, struct jv *v, const char *path,
    size_t n);

/* sort(reverse=false, case_sensitive=false, attribute=none): stable, as
 * Array.prototype.sort */
static struct jv *sort(struct jrun *r, struct jv *v, struct jv **args,
    size_t nargs)
{
	struct jv *rev = arg(args, nargs, 0, "reverse");
	struct jv *cs = arg(args, nargs, 1, "case_sensitive");
	struct jv *attr = arg(args, nargs, 2, "attribute");
	struct jv *out, **key;
	size_t n = v->u.a.n, i, j;

	if ((rev && rev->t != JV_BOOL) || (cs && cs->t != JV_BOOL) ||
	    (attr && attr->t != JV_STR && attr->t != JV_NULL))
		return jrun_fail(r, TS_EINVAL, "sort: bad arguments");
	if (!jrun_step(r, n * (n + 1) / 2 + 1) ||
	    (out = jv_array(r, JV_ARRAY, n)) == NULL ||
	    (key = jrun_alloc(r, (n + 1) * sizeof(*key))) == NULL)
		return NULL;
	/* insertion sort: stable, and every comparison was counted */
	for (i = 0; i < n; i++) {
		struct jv *x = v->u.a.v[i], *kx = x;

		if (attr && attr->t == JV_STR &&
		    (kx = attr_path(r, x, attr->u.s.p, attr->u.s.n)) == NULL)
			return NULL;
		for (j = i; j > 0; j--) {
			int c = compare(key[j - 1], kx, cs && cs->u.b);

			if (c == 2)
				return jrun_fail(r, TS_EINVAL, "sort: cannot "
				    "compare %s with %s",
				    jv_type_name(key[j - 1]),
				    jv_type_name(kx));
			if (rev && rev->u.b ? c >= 0 : c <= 0)
				break;
			out->u.a.v[j] = out->u.a.v[j - 1];
			key[j] = key[j - 1];
		}
		out->u.a.v[j] = x;
		key[j] = kx;
	}
	out->u.a.n = n;
	return out;
}

/* utils getAttributeValue(): "a.b.0" through dicts and lists */
static struct jv *attr_path(struct jrun *r, struct jv *v, const char *path,
    size_t n)
{
	const char *p = path, *e = path + n, *dot;

	while (p <= e) {
		size_t len;

		dot = memchr(p, '.', (size_t)(e - p));
		len = dot ? (size_t)(dot - p) : (size_t)(e - p);
		if (jv_is_map(v) || v->t == JV_NS) {
			v = jv_obj_get(v, p, len);
		} else if (jv_is_array(v)) {
			char num[24];
			long long i;

			if (len == 0 || len >= sizeof(num))
				v = NULL;
			else {
				memcpy(num, p, len);
				num[len] = '\0';
				i = strtoll(num, NULL, 10);
				v = i >= 0 && (size_t)i < v->u.a.n ?
				    v->u.a.v[i] : NULL;
			}
		} else {
			v = NULL;
		}
		if (v == NULL)
			return jv_undef(r);
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	return v;
}

static struct jv *select_attr(struct jrun *r, struct jv *v, int select,
    struct jv **args, size_t nargs)
{
	struct jv *out, *a = arg(args, nargs, 0, NULL);
	struct jv *test = arg(args, nargs, 1, NULL);
	struct jv *val = arg(args, nargs, 2, NULL);
	size_t k;

	if (a == NULL || a->t != JV_STR || (test && test->t != JV_STR) ||
	    (val && val->t != JV_STR))
		return jrun_fail(r, TS_EINVAL, "%s takes string arguments",
		    select ? "selectattr" : "rejectattr");
	if (!jrun_step(r, v->u.a.n) ||
	    (out = jv_array(r, JV_ARRAY, v->u.a.n)) == NULL)
		return NULL;
	for (k = 0; k < v->u.a.n; k++) {
		struct jv *it = v->u.a.v[k], *x;
		int ok = 0;

		if (!jv_is_map(it) && it->t != JV_NS)
			return jrun_fail(r, TS_EINVAL, "%s applies to a list "
			    "of objects", select ? "selectattr" :
			    "rejectattr");
		x = jv_obj_get(it, a->u.s.p, a->u.s.n);
		if (x != NULL) {
			ok = test ? jinja_test(r, test->u.s.p, x, val) :
			    jv_truthy(x);
			if (ok < 0)
				return NULL;
		}
		if (ok == select)
			out->u.a.v[out->u.a.n++] = it;
	}
	return out;
}

static struct jv *map_attr(struct jrun *r, struct jv *v, struct jv **args,
    size_t nargs)
{
	struct jv *a = arg(args, nargs, (size_t)-1, "attribute");
	struct jv *def = arg(args, nargs, (size_t)-1, "default"), *out;
	size_t k;

	if (a == NULL)
		return jrun_fail(r, TS_EINVAL, "map without attribute= is "
		    "not supported");
	if (a->t != JV_STR)
		return jrun_fail(r, TS_EINVAL, "map: attribute must be a "
		    "string");
	if (!jrun_step(r, v->u.a.n) ||
	    (out = jv_array(r, JV_ARRAY, v->u.a.n)) == NULL)
		return NULL;
	for (k = 0; k < v->u.a.n; k++) {
		struct jv *x;

		if (!jv_is_map(v->u.a.v[k]) && v->u.a.v[k]->t != JV_NS)
			return jrun_fail(r, TS_EINVAL, "map: items must be "
			    "objects");
		x = attr_path(r, v->u.a.v[k], a->u.s.p, a->u.s.n);
		if (x == NULL)
			return NULL;
		out->u.a.v[out->u.a.n++] = x->t == JV_UNDEF && def ? def : x;
	}
	return out;
}

static struct jv *unique(struct jrun *r, struct jv *v)
{
	struct jv *out;
	size_t i, j;

	if (!jrun_step(r, v->u.a.n * (v->u.a.n + 1) / 2 + 1) ||
	    (out = jv_array(r, JV_ARRAY, v->u.a.n)) == NULL)
		return NULL;
	for (i = 0; i < v->u.a.n; i++) {
		struct jv *x = v->u.a.v[i];

		for (j = 0; j < out->u.a.n; j++)
			if (jinja_test(r, "equalto", out->u.a.v[j], x) == 1)
				break;
		if (j == out->u.a.n)
			out->u.a.v[out->u.a.n++] = x;
	}
	return out;
}

/* dictsort(case_sensitive=false, by='key', reverse=false): [key, value]
 * pairs, sorted stably (runtime.ts ObjectValue dictsort) */
static struct jv *dictsort(struct jrun *r, struct jv *o, struct jv **args,
    size_t nargs)
{
	struct jv *cs = arg(args, nargs, 0, "case_sensitive");
	struct jv *by = arg(args, nargs, 1, "by");
	struct jv *rev = arg(args, nargs, 2, "reverse");
	struct jv *out;
	size_t n = o->u.o.n, i, j, at;

	if ((cs && cs->t != JV_BOOL) || (rev && rev->t != JV_BOOL) ||
	    (by && (by->t != JV_STR || (strcmp(by->u.s.p, "key") != 0 &&
	    strcmp(by->u.s.p, "value") != 0))))
		return jrun_fail(r, TS_EINVAL, "dictsort: bad arguments");
	at = by && strcmp(by->u.s.p, "value") == 0;
	if (!jrun_step(r, n * (n + 1) / 2 + 1) ||
	    (out = jv_array(r, JV_ARRAY, n)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		struct jv *pair = jv_array(r, JV_ARRAY, 2);

		if (pair == NULL ||
		    (pair->u.a.v[0] = jv_str(r, o->u.o.v[i].k,
		    o->u.o.v[i].kn)) == NULL)
			return NULL;
		pair->u.a.v[1] = o->u.o.v[i].v;
		pair->u.a.n = 2;
		for (j = i; j > 0; j--) {
			int c = compare(out->u.a.v[j - 1]->u.a.v[at],
			    pair->u.a.v[at], cs && cs->u.b);

			if (c == 2)
				return jrun_fail(r, TS_EINVAL, "dictsort: "
				    "cannot compare the values");
			if (rev && rev->u.b ? c >= 0 : c <= 0)
				break;
			out->u.a.v[j] = out->u.a.v[j - 1];
		}
		out->u.a.v[j] = pair;
	}
	out->u.a.n = n;
	return out;
}

static struct jv *no_filter(struct jrun *r, const char *name,
    struct jv *v)
{
	return jrun_fail(r, TS_EINVAL, "filter '%s' does not apply to %s",
	    name, jv_type_name(v));
}

struct jv *jinja_filter(struct jrun *r, struct jv *v, const char *name,
    int called, struct jv **args, size_t nargs)
{
	struct jv *x, *out;
	struct ts_buf t;
	size_t k;

	if (named(name, "d"))
		name = "default";
	if (named(name, "count"))
		name = "length";
	if (named(name, "safe"))
		return v;
	if (named(name, "tojson"))
		return tojson(r, v, args, nargs);
	if (named(name, "default")) {
		struct jv *def = arg(args, nargs, 0, NULL);
		struct jv *b = arg(args, nargs, 1, "boolean");

		if (b != NULL && b->t != JV_BOOL)
			return jrun_fail(r, TS_EINVAL, "default: the flag must "
			    "be a boolean");
		if (v->t == JV_UNDEF || (b && b->u.b && !jv_truthy(v)))
			return def ? def : jv_str(r, "", 0);
		return v;
	}
	if (named(name, "join") && (v->t == JV_STR || jv_is_array(v)))
		return join(r, v, called ? arg(args, nargs, 0, "separator") :
		    NULL);
	if ((named(name, "int") || named(name, "float")) && v->t == JV_STR) {
		struct jv *def = called ? arg(args, nargs, 0, "default") :
		    NULL;

		if (def == NULL)
			def = name[0] == 'i' ? jv_int(r, 0) : jv_float(r, 0);
		return to_number(r, v, name[0] == 'f', def);
	}
	if (named(name, "int") || named(name, "float")) {
		if (v->t == JV_INT || v->t == JV_FLOAT) {
			double d = v->t == JV_INT ? (double)v->u.i : v->u.f;

			return name[0] == 'i' ? jv_int(r, (long long)trunc(d)) :
			    jv_float(r, d);
		}
		if (v->t == JV_BOOL)
			return name[0] == 'i' ? jv_int(r, v->u.b) :
			    jv_float(r, v->u.b);
		return no_filter(r, name, v);
	}
	if (jv_is_array(v)) {
		size_t n = v->u.a.n;

		if (named(name, "list"))
			return v;
		if (named(name, "first") || named(name, "last")) {
			if (n == 0)
				return jv_undef(r);
			return v->u.a.v[name[0] == 'f' ? 0 : n - 1];
		}
		if (named(name, "length"))
			return jv_int(r, (long long)n);
		if (named(name, "reverse")) {
			if ((out = jv_array(r, JV_ARRAY, n)) == NULL)
				return NULL;
			for (k = 0; k < n; k++)
				out->u.a.v[out->u.a.n++] = v->u.a.v[n - 1 - k];
			return out;
		}
		if (named(name, "sort"))
			return sort(r, v, args, nargs);
		if (named(name, "string")) {
			struct jtojson o = { 0, 0, 0, NULL, NULL, 0 };

			ts_buf_init(&t, JINJA_MAX_MEMORY);
			jv_tojson(r, &t, v, &o, 0);
			return str_of(r, &t);
		}
		if (named(name, "unique"))
			return unique(r, v);
		if (called && (named(name, "selectattr") ||
		    named(name, "rejectattr")))
			return select_attr(r, v, name[0] == 's', args, nargs);
		if (called && named(name, "map"))
			return map_attr(r, v, args, nargs);
		return no_filter(r, name, v);
	}
	if (v->t == JV_STR) {
		if (named(name, "length"))
			return jinja_builtin_attr(r, v, "length", 6);
		if (named(name, "upper") || named(name, "lower") ||
		    named(name, "title") || named(name, "capitalize") ||
		    named(name, "trim")) {
			x = jinja_builtin_attr(r, v, named(name, "trim") ?
			    "strip" : name, named(name, "trim") ? 5 :
			    strlen(name));
			return x ? jinja_call(r, x, NULL, 0) : NULL;
		}
		if (named(name, "first") || named(name, "last")) {
			uint32_t cp;
			size_t w = 0, at = 0;

			if (v->u.s.n == 0)
				return jv_undef(r);
			for (k = 0; k < v->u.s.n; k += w) {
				w = jinja_utf8_next(v->u.s.p + k,
				    v->u.s.n - k, &cp);
				at = k;
				if (name[0] == 'f')
					break;
			}
			return jv_str(r, v->u.s.p + at, w);
		}
		if (named(name, "indent"))
			return indent(r, v, arg(args, nargs, 0, "width"),
			    arg(args, nargs, 1, "first"),
			    arg(args, nargs, 2, "blank"));
		if (named(name, "string"))
			return v;
		if (called && named(name, "replace")) {
			x = jinja_builtin_attr(r, v, "replace", 7);
			return x ? jinja_call(r, x, args, nargs) : NULL;
		}
		return no_filter(r, name, v);
	}
	if (v->t == JV_INT || v->t == JV_FLOAT) {
		if (named(name, "abs"))
			return v->t == JV_INT ? jv_int(r, v->u.i < 0 ? -v->u.i :
			    v->u.i) : jv_float(r, fabs(v->u.f));
		if (named(name, "string")) {
			ts_buf_init(&t, 64);
			jv_print(r, &t, v);
			return str_of(r, &t);
		}
		return no_filter(r, name, v);
	}
	if (jv_is_map(v)) {
		if (named(name, "length"))
			return jv_int(r, (long long)v->u.o.n);
		if (named(name, "dictsort"))
			return dictsort(r, v, args, nargs);
		x = jinja_builtin_attr(r, v, name, strlen(name));
		if (x != NULL)
			return jinja_call(r, x, args, nargs);
		return no_filter(r, name, v);
	}
	if (v->t == JV_BOOL) {
		if (named(name, "bool"))
			return v;
		if (named(name, "string"))
			return jv_str(r, v->u.b ? "true" : "false",
			    v->u.b ? 4 : 5);
		return no_filter(r, name, v);
	}
	return no_filter(r, name, v);
}
