/*
 * jinja/filters.c - the functions, methods, filters and tests of the
 * interpreter, after @huggingface/jinja src/runtime.ts (0.5.13): the
 * globals range, raise_exception, namespace, strftime_now; a string's
 * methods (strip, split, startswith, replace, ...), a dict's (get, items,
 * keys, values); the filters chat templates use (trim, tojson, join,
 * length, default, map, selectattr, ...); the tests (defined, none,
 * string, mapping, ...). Case mapping (upper, lower, title, capitalize)
 * is ASCII only.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "jinja/jinja_int.h"

static struct jv *method(struct jrun *r, struct jv *self, int id)
{
	struct jv *f = jv_new(r, JV_FUNC);

	if (f != NULL) {
		f->u.fn.id = id;
		f->u.fn.self = self;
	}
	return f;
}

/* UTF-16 length, as JavaScript's String.length */
static long long utf16_len(const char *s, size_t n)
{
	long long len = 0;
	size_t k, w;
	uint32_t cp;

	for (k = 0; k < n; k += w) {
		w = jinja_utf8_next(s + k, n - k, &cp);
		len += cp >= 0x10000 ? 2 : 1;
	}
	return len;
}

struct jv *jinja_builtin_attr(struct jrun *r, struct jv *v,
    const char *name, size_t n)
{
	static const struct { const char *name; int id; } str_m[] = {
		{ "upper", M_UPPER }, { "lower", M_LOWER },
		{ "strip", M_STRIP }, { "title", M_TITLE },
		{ "capitalize", M_CAPITALIZE }, { "rstrip", M_RSTRIP },
		{ "lstrip", M_LSTRIP }, { "startswith", M_STARTSWITH },
		{ "endswith", M_ENDSWITH }, { "split", M_SPLIT },
		{ "replace", M_REPLACE },
	}, obj_m[] = {
		{ "get", M_GET }, { "items", M_ITEMS }, { "keys", M_KEYS },
		{ "values", M_VALUES },
	};
	size_t k;

	if (v->t == JV_STR) {
		if (n == 6 && memcmp(name, "length", 6) == 0)
			return jv_int(r, utf16_len(v->u.s.p, v->u.s.n));
		for (k = 0; k < sizeof(str_m) / sizeof(str_m[0]); k++)
			if (strlen(str_m[k].name) == n &&
			    memcmp(str_m[k].name, name, n) == 0)
				return method(r, v, str_m[k].id);
	} else if (jv_is_array(v)) {
		if (n == 6 && memcmp(name, "length", 6) == 0)
			return jv_int(r, (long long)v->u.a.n);
	} else if (jv_is_map(v)) {
		for (k = 0; k < sizeof(obj_m) / sizeof(obj_m[0]); k++)
			if (strlen(obj_m[k].name) == n &&
			    memcmp(obj_m[k].name, name, n) == 0)
				return method(r, v, obj_m[k].id);
	}
	return NULL;
}

/* ---- strings ---- */
static struct jv *trim(struct jrun *r, const struct jv *s, int left,
    int right)
{
	const char *p = s->u.s.p, *e = p + s->u.s.n;
	size_t w;

	if (left)
		while (p < e && (w = jinja_space_at(p, (size_t)(e - p))) > 0)
			p += w;
	if (right) {
		const char *k, *last = p;
		uint32_t cp;

		/* the end of the last code point that is not a space */
		for (k = p; k < e; k += w) {
			w = jinja_space_at(k, (size_t)(e - k));
			if (w == 0) {
				w = jinja_utf8_next(k, (size_t)(e - k), &cp);
				last = k + w;
			}
		}
		e = last;
	}
	return jv_str(r, p, (size_t)(e - p));
}

static int is_word(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_';
}

static int up(int c)
{
	return c >= 'a' && c <= 'z' ? c - 32 : c;
}

static int low(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* upper, lower, title (utils.ts titleCase: /\b\w/ up), capitalize
 * (the first character up, the rest as it is) */
static struct jv *recase(struct jrun *r, const struct jv *s, int id)
{
	struct jv *v = jv_str(r, s->u.s.p, s->u.s.n);
	char *p;
	size_t k;

	if (v == NULL)
		return NULL;
	p = (char *)v->u.s.p;
	for (k = 0; k < v->u.s.n; k++) {
		if (id == M_UPPER)
			p[k] = (char)up(p[k]);
		else if (id == M_LOWER)
			p[k] = (char)low(p[k]);
		else if (id == M_TITLE && (k == 0 || !is_word(
		    (unsigned char)p[k - 1])) && is_word((unsigned char)p[k]))
			p[k] = (char)up(p[k]);
		else if (id == M_CAPITALIZE && k == 0)
			p[k] = (char)up(p[k]);
	}
	return v;
}

static int has_prefix(const struct jv *s, const struct jv *x, int end)
{
	if (x->u.s.n > s->u.s.n)
		return 0;
	return memcmp(s->u.s.p + (end ? s->u.s.n - x->u.s.n : 0), x->u.s.p,
	    x->u.s.n) == 0;
}

static struct jv *starts(struct jrun *r, const struct jv *s,
    struct jv **args, size_t nargs, int end)
{
	size_t k;

	if (nargs == 0)
		return jrun_fail(r, TS_EINVAL, "%s() takes an argument",
		    end ? "endswith" : "startswith");
	if (args[0]->t == JV_STR)
		return jv_bool(r, has_prefix(s, args[0], end));
	if (jv_is_array(args[0])) {
		for (k = 0; k < args[0]->u.a.n; k++) {
			if (args[0]->u.a.v[k]->t != JV_STR)
				return jrun_fail(r, TS_EINVAL, "%s() takes "
				    "strings", end ? "endswith" :
				    "startswith");
			if (has_prefix(s, args[0]->u.a.v[k], end))
				return jv_bool(r, 1);
		}
		return jv_bool(r, 0);
	}
	return jrun_fail(r, TS_EINVAL, "%s() takes a string or a tuple",
	    end ? "endswith" : "startswith");
}

/* Python's str.split(sep=None, maxsplit=-1) */
static struct jv *split(struct jrun *r, const struct jv *s,
    struct jv **args, size_t nargs)
{
	struct jv *sep = nargs > 0 ? args[0] : NULL, *v;
	long long max = nargs > 1 && args[1]->t == JV_INT ? args[1]->u.i : -1;
	const char *p = s->u.s.p, *e = p + s->u.s.n, *q;
	size_t w;

	if (nargs > 1 && args[1]->t != JV_INT)
		return jrun_fail(r, TS_EINVAL, "maxsplit must be an integer");
	if (sep != NULL && sep->t != JV_STR && sep->t != JV_NULL)
		return jrun_fail(r, TS_EINVAL, "sep must be a string or none");
	if ((v = jv_array(r, JV_ARRAY, 4)) == NULL)
		return NULL;
	if (sep == NULL || sep->t == JV_NULL) {
		while (p < e && (w = jinja_space_at(p, (size_t)(e - p))) > 0)
			p += w;
		while (p < e) {
			if (max >= 0 && (long long)v->u.a.n >= max)
				return jv_push(r, v, jv_str(r, p,
				    (size_t)(e - p))) ? v : NULL;
			for (q = p; q < e &&
			    jinja_space_at(q, (size_t)(e - q)) == 0;) {
				uint32_t cp;

				q += jinja_utf8_next(q, (size_t)(e - q), &cp);
			}
			if (!jrun_step(r, 1) ||
			    !jv_push(r, v, jv_str(r, p, (size_t)(q - p))))
				return NULL;
			p = q;
			while (p < e &&
			    (w = jinja_space_at(p, (size_t)(e - p))) > 0)
				p += w;
		}
		return v;
	}
	if (sep->u.s.n == 0)
		return jrun_fail(r, TS_EINVAL, "empty separator");
	for (;;) {
		q = (max < 0 || (long long)v->u.a.n < max) ?
		    jinja_find(p, (size_t)(e - p), sep->u.s.p, sep->u.s.n) : NULL;
		if (q == NULL)
			return jv_push(r, v, jv_str(r, p, (size_t)(e - p))) ?
			    v : NULL;
		if (!jrun_step(r, 1) ||
		    !jv_push(r, v, jv_str(r, p, (size_t)(q - p))))
			return NULL;
		p = q + sep->u.s.n;
	}
}

/* utils.ts replace(): Python's str.replace(old, new, count=-1) */
static struct jv *replace(struct jrun *r, const struct jv *s,
    struct jv **args, size_t nargs)
{
	struct jv *cnt = NULL, *v;
	const struct jv *o, *nw;
	long long left;
	const char *p = s->u.s.p, *e = p + s->u.s.n, *q;
	struct ts_buf t;

	if (nargs > 0 && args[nargs - 1]->t == JV_KWARGS) {
		cnt = jv_obj_get(args[nargs - 1], "count", 5);
		nargs--;
	} else if (nargs > 2) {
		cnt = args[2];
	}
	if (nargs < 2 || args[0]->t != JV_STR || args[1]->t != JV_STR)
		return jrun_fail(r, TS_EINVAL, "replace() takes two strings");
	if (cnt != NULL && cnt->t != JV_INT && cnt->t != JV_NULL)
		return jrun_fail(r, TS_EINVAL, "replace() count must be an "
		    "integer");
	o = args[0];
	nw = args[1];
	left = cnt != NULL && cnt->t == JV_INT && cnt->u.i >= 0 ? cnt->u.i :
	    -1;
	ts_buf_init(&t, JINJA_MAX_MEMORY);
	while (p <= e) {
		if (left == 0) {
			jrun_put(r, &t, p, (size_t)(e - p));
			break;
		}
		if (o->u.s.n == 0) {
			/* between every code point, and at both ends */
			uint32_t cp;
			size_t w = jinja_utf8_next(p, (size_t)(e - p), &cp);

			jrun_put(r, &t, nw->u.s.p, nw->u.s.n);
			jrun_put(r, &t, p, w);
			if (w == 0)
				break;
			p += w;
		} else {
			q = jinja_find(p, (size_t)(e - p), o->u.s.p, o->u.s.n);
			if (q == NULL) {
				jrun_put(r, &t, p, (size_t)(e - p));
				break;
			}
			jrun_put(r, &t, p, (size_t)(q - p));
			jrun_put(r, &t, nw->u.s.p, nw->u.s.n);
			p = q + o->u.s.n;
		}
		if (left > 0)
			left--;
		if (!jrun_step(r, 1))
			break;
	}
	v = r->rc == TS_OK ? jv_str(r, t.p ? t.p : "", t.len) : NULL;
	ts_buf_free(&t);
	return v;
}

/* ---- dicts ---- */
static struct jv *items(struct jrun *r, const struct jv *o, int which)
{
	struct jv *v = jv_array(r, JV_ARRAY, o->u.o.n), *pair;
	size_t k;

	for (k = 0; v != NULL && k < o->u.o.n; k++) {
		struct jv *key = jv_str(r, o->u.o.v[k].k, o->u.o.v[k].kn);

		if (key == NULL)
			return NULL;
		if (which == M_KEYS) {
			pair = key;
		} else if (which == M_VALUES) {
			pair = o->u.o.v[k].v;
		} else {
			if ((pair = jv_array(r, JV_ARRAY, 2)) == NULL)
				return NULL;
			pair->u.a.v[0] = key;
			pair->u.a.v[1] = o->u.o.v[k].v;
			pair->u.a.n = 2;
		}
		v->u.a.v[v->u.a.n++] = pair;
	}
	return v;
}

/* ---- globals ---- */
static struct jv *range(struct jrun *r, struct jv **args, size_t nargs)
{
	double a, b, step = 1, i, cnt;
	struct jv *v;
	size_t k;

	/* an undefined stop or step is absent, as JavaScript's default
	 * parameters take it (utils.ts range()) */
	while (nargs > 1 && args[nargs - 1]->t == JV_UNDEF)
		nargs--;
	for (k = 0; k < nargs; k++)
		if (args[k]->t != JV_INT && args[k]->t != JV_FLOAT)
			return jrun_fail(r, TS_EINVAL, "range() takes numbers");
	if (nargs == 0 || nargs > 3)
		return jrun_fail(r, TS_EINVAL, "range() takes 1 to 3 numbers");
	a = nargs == 1 ? 0 : (args[0]->t == JV_INT ? (double)args[0]->u.i :
	    args[0]->u.f);
	b = args[nargs == 1 ? 0 : 1]->t == JV_INT ?
	    (double)args[nargs == 1 ? 0 : 1]->u.i : args[nargs == 1 ? 0 : 1]->u.f;
	if (nargs == 3)
		step = args[2]->t == JV_INT ? (double)args[2]->u.i :
		    args[2]->u.f;
	if (step == 0)
		return jrun_fail(r, TS_EINVAL, "range() step must not be "
		    "zero");
	cnt = step > 0 ? ceil((b - a) / step) : ceil((a - b) / -step);
	if (cnt < 0)
		cnt = 0;
	/* refused before anything is made: one step per item */
	if (cnt > (double)JINJA_MAX_STEPS)
		return jrun_fail(r, TS_ELIMIT, "range() of %.0f items, over "
		    "the limit of %lu steps", cnt, JINJA_MAX_STEPS);
	if (!jrun_step(r, (unsigned long)cnt) ||
	    (v = jv_array(r, JV_ARRAY, (size_t)cnt)) == NULL)
		return NULL;
	for (i = a; step > 0 ? i < b : i > b; i += step) {
		struct jv *x = i == floor(i) ? jv_int(r, (long long)i) :
		    jv_float(r, i);

		if (x == NULL || v->u.a.n == v->u.a.cap)
			break;
		v->u.a.v[v->u.a.n++] = x;
	}
	return r->rc == TS_OK ? v : NULL;
}

static struct jv *namespace(struct jrun *r, struct jv **args, size_t nargs)
{
	struct jv *ns = jv_array(r, JV_NS, 4), *kw = NULL;
	size_t k;

	if (ns == NULL)
		return NULL;
	if (nargs > 0 && args[nargs - 1]->t == JV_KWARGS)
		kw = args[--nargs];
	if (nargs > 1)
		return jrun_fail(r, TS_EINVAL, "namespace() takes at most 1 "
		    "argument");
	if (nargs == 1) {
		struct jv *src = args[0];

		if (jv_is_map(src)) {
			for (k = 0; k < src->u.o.n; k++)
				if (!jv_obj_set(r, ns, src->u.o.v[k].k,
				    src->u.o.v[k].kn, src->u.o.v[k].v))
					return NULL;
		} else if (jv_is_array(src)) {
			for (k = 0; k < src->u.a.n; k++) {
				struct jv *p = src->u.a.v[k];

				if (!jv_is_array(p) || p->u.a.n != 2 ||
				    p->u.a.v[0]->t != JV_STR)
					return jrun_fail(r, TS_EINVAL,
					    "namespace() takes [key, value] "
					    "pairs");
				if (!jv_obj_set(r, ns, p->u.a.v[0]->u.s.p,
				    p->u.a.v[0]->u.s.n, p->u.a.v[1]))
					return NULL;
			}
		} else {
			return jrun_fail(r, TS_EINVAL, "namespace() takes a "
			    "mapping");
		}
	}
	for (k = 0; kw != NULL && k < kw->u.o.n; k++)
		if (!jv_obj_set(r, ns, kw->u.o.v[k].k, kw->u.o.v[k].kn,
		    kw->u.o.v[k].v))
			return NULL;
	return ns;
}

/* utils.ts strftime(): %Y %m %d %b %B %H %M %%, English month names,
 * in UTC here. */
static struct jv *strftime_now(struct jrun *r, struct jv **args,
    size_t nargs)
{
	static const char *const mon[] = {
		"January", "February", "March", "April", "May", "June",
		"July", "August", "September", "October", "November",
		"December"
	};
	struct tm tm;
	struct ts_buf t;
	struct jv *v = NULL;
	char part[32];
	size_t k;

	if (nargs < 1 || args[0]->t != JV_STR)
		return jrun_fail(r, TS_EINVAL, "strftime_now() takes a "
		    "format string");
	gmtime_r(&r->now, &tm);
	ts_buf_init(&t, JINJA_MAX_MEMORY);
	for (k = 0; k < args[0]->u.s.n; k++) {
		const char *f = args[0]->u.s.p;

		part[0] = f[k];
		part[1] = '\0';
		if (f[k] == '%' && k + 1 < args[0]->u.s.n) {
			switch (f[k + 1]) {
			case 'Y': snprintf(part, sizeof(part), "%d",
			    tm.tm_year + 1900); k++; break;
			case 'm': snprintf(part, sizeof(part), "%02d",
			    tm.tm_mon + 1); k++; break;
			case 'd': snprintf(part, sizeof(part), "%02d",
			    tm.tm_mday); k++; break;
			case 'b': snprintf(part, sizeof(part), "%.3s",
			    mon[tm.tm_mon]); k++; break;
			case 'B': snprintf(part, sizeof(part), "%s",
			    mon[tm.tm_mon]); k++; break;
			case 'H': snprintf(part, sizeof(part), "%02d",
			    tm.tm_hour); k++; break;
			case 'M': snprintf(part, sizeof(part), "%02d",
			    tm.tm_min); k++; break;
			case '%': k++; break;
			default: break;
			}
		}
		if (!jrun_put(r, &t, part, strlen(part)))
			break;
	}
	if (r->rc == TS_OK)
		v = jv_str(r, t.p ? t.p : "", t.len);
	ts_buf_free(&t);
	return v;
}

struct jv *jinja_call(struct jrun *r, struct jv *fn, struct jv **args,
    size_t nargs)
{
	struct jv *self = fn->u.fn.self;

	if (fn->t != JV_FUNC)
		return jrun_fail(r, TS_EINVAL, "cannot call a %s",
		    jv_type_name(fn));
	switch (fn->u.fn.id) {
	case F_RANGE: return range(r, args, nargs);
	case F_NAMESPACE: return namespace(r, args, nargs);
	case F_STRFTIME: return strftime_now(r, args, nargs);
	case F_RAISE: {
		struct ts_buf t;

		ts_buf_init(&t, 4096);
		if (nargs > 0)
			ts_buf_append_part(&t, args[0]->t == JV_STR ?
			    args[0]->u.s.p : "", args[0]->t == JV_STR ?
			    args[0]->u.s.n : 0);
		jrun_fail(r, TS_EINVAL, "template raised: %.*s",
		    (int)t.len, t.p ? t.p : "");
		ts_buf_free(&t);
		return NULL;
	}
	case M_UPPER: case M_LOWER: case M_TITLE: case M_CAPITALIZE:
		return recase(r, self, fn->u.fn.id);
	case M_STRIP: return trim(r, self, 1, 1);
	case M_LSTRIP: return trim(r, self, 1, 0);
	case M_RSTRIP: return trim(r, self, 0, 1);
	case M_STARTSWITH: return starts(r, self, args, nargs, 0);
	case M_ENDSWITH: return starts(r, self, args, nargs, 1);
	case M_SPLIT: return split(r, self, args, nargs);
	case M_REPLACE: return replace(r, self, args, nargs);
	case M_GET: {
		struct jv *v;

		if (nargs < 1 || args[0]->t != JV_STR)
			return jrun_fail(r, TS_EINVAL, "get() takes a string "
			    "key");
		v = jv_obj_get(self, args[0]->u.s.p, args[0]->u.s.n);
		if (v != NULL)
			return v;
		return nargs > 1 ? args[1] : jv_null(r);
	}
	case M_ITEMS: case M_KEYS: case M_VALUES:
		return items(r, self, fn->u.fn.id);
	default:
		return jrun_fail(r, TS_EINVAL, "unknown function");
	}
}

/* ---- tests (runtime.ts Environment.TESTS) ---- */
int jinja_test(struct jrun *r, const char *name, struct jv *v,
    struct jv *arg)
{
	enum jv_type t = v->t;

	if (strcmp(name, "defined") == 0) return t != JV_UNDEF;
	if (strcmp(name, "undefined") == 0) return t == JV_UNDEF;
	if (strcmp(name, "none") == 0) return t == JV_NULL;
	if (strcmp(name, "string") == 0) return t == JV_STR;
	if (strcmp(name, "number") == 0) return t == JV_INT || t == JV_FLOAT;
	if (strcmp(name, "integer") == 0) return t == JV_INT;
	if (strcmp(name, "boolean") == 0) return t == JV_BOOL;
	if (strcmp(name, "true") == 0) return t == JV_BOOL && v->u.b;
	if (strcmp(name, "false") == 0) return t == JV_BOOL && !v->u.b;
	if (strcmp(name, "callable") == 0) return t == JV_FUNC;
	/* "iterable" is ArrayValue exactly: a tuple is not */
	if (strcmp(name, "iterable") == 0) return t == JV_ARRAY || t == JV_STR;
	if (strcmp(name, "mapping") == 0) return jv_is_map(v);
	if (strcmp(name, "sequence") == 0)
		return jv_is_array(v) || jv_is_map(v) || t == JV_STR;
	if (strcmp(name, "odd") == 0 || strcmp(name, "even") == 0) {
		if (t != JV_INT) {
			jrun_fail(r, TS_EINVAL, "cannot %s on %s", name,
			    jv_type_name(v));
			return -1;
		}
		return (v->u.i % 2 != 0) == (name[0] == 'o');
	}
	if (strcmp(name, "equalto") == 0 || strcmp(name, "eq") == 0) {
		/* a.value === b.value, with an argument or without one */
		if (arg == NULL)
			return t == JV_UNDEF;
		if ((t == JV_INT || t == JV_FLOAT) &&
		    (arg->t == JV_INT || arg->t == JV_FLOAT))
			return (t == JV_INT ? (double)v->u.i : v->u.f) ==
			    (arg->t == JV_INT ? (double)arg->u.i : arg->u.f);
		if (t != arg->t)
			return 0;
		if (t == JV_STR)
			return v->u.s.n == arg->u.s.n &&
			    memcmp(v->u.s.p, arg->u.s.p, v->u.s.n) == 0;
		if (t == JV_BOOL)
			return v->u.b == arg->u.b;
		return t == JV_NULL || t == JV_UNDEF || v == arg;
	}
	if (strcmp(name, "lower") == 0 || strcmp(name, "upper") == 0) {
		size_t k;

		if (t != JV_STR)
			return 0;
		for (k = 0; k < v->u.s.n; k++)
			if ((name[0] == 'l' ? low(v->u.s.p[k]) :
			    up(v->u.s.p[k])) != v->u.s.p[k])
				return 0;
		return 1;
	}
	jrun_fail(r, TS_EINVAL, "unknown test '%s'", name);
	return -1;
}
