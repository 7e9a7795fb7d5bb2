/*
 * jinja/ops.c - the binary operators and slices of the interpreter, with
 * @huggingface/jinja's semantics (src/runtime.ts 0.5.13
 * evaluateBinaryExpression(), utils.ts slice()): numbers as JavaScript
 * computes them (`%` keeps the dividend's sign, `//` floors), `==` as
 * JavaScript's ==, `in` a list as its ===, `+` joining a string with the
 * String() of anything, `~` treating undefined as "". Beyond the
 * reference: `str * int` repeats, and integer overflow and division by
 * zero are errors rather than Infinity and NaN.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "jinja/jinja_int.h"

static int is_num(const struct jv *v)
{
	return v->t == JV_INT || v->t == JV_FLOAT;
}

static double num(const struct jv *v)
{
	return v->t == JV_INT ? (double)v->u.i : v->t == JV_FLOAT ? v->u.f :
	    v->t == JV_BOOL ? v->u.b : NAN;
}

/* JavaScript's Number(string): trimmed; "" is 0; otherwise a decimal
 * number or NaN (hex and Infinity forms are taken as NaN). */
static double str_num(const struct jv *v)
{
	const char *s = v->u.s.p, *e = s + v->u.s.n;
	char *end;
	double d;
	size_t w;

	while (s < e && (w = jinja_space_at(s, (size_t)(e - s))) > 0)
		s += w;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
	    e[-1] == '\r'))
		e--;
	if (s == e)
		return 0;
	d = strtod(s, &end);
	return end == e ? d : NAN;
}

/* JavaScript's a == b on the values' `value`s. */
static int loose_eq(const struct jv *a, const struct jv *b)
{
	int an = a->t == JV_NULL || a->t == JV_UNDEF;
	int bn = b->t == JV_NULL || b->t == JV_UNDEF;

	if (an || bn)
		return an && bn;
	if (a->t == JV_STR && b->t == JV_STR)
		return a->u.s.n == b->u.s.n &&
		    memcmp(a->u.s.p, b->u.s.p, a->u.s.n) == 0;
	if ((is_num(a) || a->t == JV_BOOL) && (is_num(b) || b->t == JV_BOOL))
		return num(a) == num(b);
	if ((is_num(a) || a->t == JV_BOOL) && b->t == JV_STR)
		return num(a) == str_num(b);
	if (a->t == JV_STR && (is_num(b) || b->t == JV_BOOL))
		return str_num(a) == num(b);
	return a == b;  /* lists, dicts: the same one */
}

/* JavaScript's a === b on the values' `value`s (`in` a list). */
static int strict_eq(const struct jv *a, const struct jv *b)
{
	if (is_num(a) && is_num(b))
		return num(a) == num(b);
	if (a->t != b->t)
		return 0;
	switch (a->t) {
	case JV_UNDEF: case JV_NULL: return 1;
	case JV_BOOL: return a->u.b == b->u.b;
	case JV_STR:
		return a->u.s.n == b->u.s.n &&
		    memcmp(a->u.s.p, b->u.s.p, a->u.s.n) == 0;
	default: return a == b;
	}
}

static struct jv *concat_raw(struct jrun *r, const struct jv *a,
    const struct jv *b)
{
	struct ts_buf t;
	struct jv *v = NULL;

	ts_buf_init(&t, JINJA_MAX_MEMORY);
	if ((a == NULL || jv_raw(r, &t, a)) && (b == NULL || jv_raw(r, &t, b)))
		v = jv_str(r, t.p ? t.p : "", t.len);
	ts_buf_free(&t);
	return v;
}

static int contains(const struct jv *hay, const struct jv *needle)
{
	if (needle->u.s.n == 0)
		return 1;
	if (needle->u.s.n > hay->u.s.n)
		return 0;
	return jinja_find(hay->u.s.p, hay->u.s.n, needle->u.s.p,
	    needle->u.s.n) != NULL;
}

struct jv *jinja_binop(struct jrun *r, enum jop op, struct jv *l,
    struct jv *rt)
{
	size_t i;

	if (op == OP_EQ || op == OP_NE)
		return jv_bool(r, loose_eq(l, rt) == (op == OP_EQ));
	if (is_num(l) && is_num(rt) && op != OP_CONCAT && op != OP_POW) {
		int fl = l->t == JV_FLOAT || rt->t == JV_FLOAT;
		double a = num(l), b = num(rt), res;

		switch (op) {
		case OP_ADD: case OP_SUB: case OP_MUL:
			if (!fl) {
				long long x = l->u.i, y = rt->u.i, z;
				int ovf = op == OP_ADD ?
				    __builtin_add_overflow(x, y, &z) :
				    op == OP_SUB ?
				    __builtin_sub_overflow(x, y, &z) :
				    __builtin_mul_overflow(x, y, &z);

				if (ovf)
					return jrun_fail(r, TS_EINVAL,
					    "integer overflow");
				return jv_int(r, z);
			}
			res = op == OP_ADD ? a + b : op == OP_SUB ? a - b :
			    a * b;
			return jv_float(r, res);
		case OP_DIV:
			if (b == 0)
				return jrun_fail(r, TS_EINVAL,
				    "division by zero");
			return jv_float(r, a / b);
		case OP_FLOORDIV:
			if (b == 0)
				return jrun_fail(r, TS_EINVAL,
				    "division by zero");
			res = floor(a / b);
			return fl ? jv_float(r, res) : jv_int(r,
			    (long long)res);
		case OP_MOD:
			if (b == 0)
				return jrun_fail(r, TS_EINVAL,
				    "division by zero");
			/* JavaScript's %: the sign of the dividend */
			if (!fl)
				return jv_int(r, l->u.i % rt->u.i);
			return jv_float(r, fmod(a, b));
		case OP_LT: return jv_bool(r, a < b);
		case OP_GT: return jv_bool(r, a > b);
		case OP_LE: return jv_bool(r, a <= b);
		case OP_GE: return jv_bool(r, a >= b);
		default: break;
		}
	} else if (l->t == JV_UNDEF || rt->t == JV_UNDEF) {
		if (rt->t == JV_UNDEF && (op == OP_IN || op == OP_NOTIN))
			return jv_bool(r, op == OP_NOTIN);
		if (op == OP_CONCAT && l->t != JV_NULL && rt->t != JV_NULL)
			return concat_raw(r, l->t == JV_UNDEF ? NULL : l,
			    rt->t == JV_UNDEF ? NULL : rt);
		return jrun_fail(r, TS_EINVAL, "cannot apply an operator to "
		    "an undefined value");
	} else if (l->t == JV_NULL || rt->t == JV_NULL) {
		return jrun_fail(r, TS_EINVAL, "cannot apply an operator to "
		    "none");
	} else if (op == OP_CONCAT) {
		return concat_raw(r, l, rt);
	} else if (op == OP_POW && (is_num(l) || l->t == JV_BOOL) &&
	    (is_num(rt) || rt->t == JV_BOOL)) {
		double a = num(l), b = num(rt), res = pow(a, b);

		if (!isfinite(res) || (a == 0 && b < 0))
			return jrun_fail(r, TS_EINVAL, "'**' out of range");
		if (l->t == JV_FLOAT || rt->t == JV_FLOAT || b < 0 ||
		    fabs(res) >= 9.0e18)
			return jv_float(r, res);
		return jv_int(r, (long long)res);
	} else if (jv_is_array(l) && jv_is_array(rt)) {
		if (op == OP_ADD) {
			struct jv *v = jv_array(r, JV_ARRAY,
			    l->u.a.n + rt->u.a.n);

			if (v == NULL)
				return NULL;
			for (i = 0; i < l->u.a.n; i++)
				v->u.a.v[v->u.a.n++] = l->u.a.v[i];
			for (i = 0; i < rt->u.a.n; i++)
				v->u.a.v[v->u.a.n++] = rt->u.a.v[i];
			return v;
		}
	} else if (jv_is_array(rt)) {
		int member = 0;

		if (!jrun_step(r, rt->u.a.n))
			return NULL;
		for (i = 0; i < rt->u.a.n && !member; i++)
			member = strict_eq(rt->u.a.v[i], l);
		if (op == OP_IN || op == OP_NOTIN)
			return jv_bool(r, member == (op == OP_IN));
	}
	if ((l->t == JV_STR || rt->t == JV_STR) && op == OP_ADD)
		return concat_raw(r, l, rt);
	if (l->t == JV_STR && rt->t == JV_STR &&
	    (op == OP_IN || op == OP_NOTIN))
		return jv_bool(r, contains(rt, l) == (op == OP_IN));
	if (l->t == JV_STR && jv_is_map(rt) &&
	    (op == OP_IN || op == OP_NOTIN))
		return jv_bool(r, (jv_obj_get(rt, l->u.s.p, l->u.s.n) !=
		    NULL) == (op == OP_IN));
	/* Python's str * int (@huggingface/jinja refuses it) */
	if (op == OP_MUL && l->t == JV_STR && rt->t == JV_INT) {
		struct jv *v;
		char *p;
		long long k;

		if (rt->u.i <= 0)
			return jv_str(r, "", 0);
		if (l->u.s.n > 0 && (unsigned long long)rt->u.i >
		    JINJA_MAX_MEMORY / l->u.s.n)
			return jrun_fail(r, TS_ELIMIT, "template used over %u "
			    "bytes of memory", JINJA_MAX_MEMORY);
		v = jv_str(r, "", 0);
		p = v ? jrun_alloc(r, l->u.s.n * (size_t)rt->u.i + 1) : NULL;
		if (p == NULL)
			return NULL;
		for (k = 0; k < rt->u.i; k++)
			memcpy(p + (size_t)k * l->u.s.n, l->u.s.p, l->u.s.n);
		p[l->u.s.n * (size_t)rt->u.i] = '\0';
		v->u.s.p = p;
		v->u.s.n = l->u.s.n * (size_t)rt->u.i;
		return v;
	}
	return jrun_fail(r, TS_EINVAL, "unsupported operator between %s "
	    "and %s", jv_type_name(l), jv_type_name(rt));
}

/* Python's slice of n items (utils.ts slice()): its first index, the
 * end, the step; the number of items. */
static size_t slice_idx(long long n, const struct jv *a, const struct jv *b,
    const struct jv *c, long long *start, long long *stop, long long *step)
{
	long long s, e, st = c && c->t == JV_INT ? c->u.i : 1, cnt = 0, i;

	if (st > 0) {
		s = a && a->t == JV_INT ? a->u.i : 0;
		e = b && b->t == JV_INT ? b->u.i : n;
		s = s < 0 ? (n + s > 0 ? n + s : 0) : (s < n ? s : n);
		e = e < 0 ? (n + e > 0 ? n + e : 0) : (e < n ? e : n);
		for (i = s; i < e; i += st)
			cnt++;
	} else {
		s = a && a->t == JV_INT ? a->u.i : n - 1;
		e = b && b->t == JV_INT ? b->u.i : -1;
		s = s < 0 ? (n + s > -1 ? n + s : -1) : (s < n - 1 ? s : n - 1);
		e = e < -1 ? (n + e > -1 ? n + e : -1) : (e < n - 1 ? e : n - 1);
		for (i = s; i > e; i += st)
			cnt++;
	}
	*start = s;
	*stop = e;
	*step = st;
	return (size_t)cnt;
}

struct jv *jinja_slice(struct jrun *r, struct jv *obj, struct jv *a,
    struct jv *b, struct jv *c)
{
	long long s, e, st, i, len;
	size_t cnt, k, *off = NULL;
	struct jv *v;

	if (r->rc != TS_OK)
		return NULL;
	if ((a && a->t != JV_INT && a->t != JV_UNDEF) ||
	    (b && b->t != JV_INT && b->t != JV_UNDEF) ||
	    (c && c->t != JV_INT && c->t != JV_UNDEF))
		return jrun_fail(r, TS_EINVAL, "slice bounds must be "
		    "integers");
	/* a step of 0 takes nothing (utils.ts slice(); Python refuses it) */
	if (c && c->t == JV_INT && c->u.i == 0)
		return jv_is_array(obj) ? jv_array(r, JV_ARRAY, 0) :
		    obj->t == JV_STR ? jv_str(r, "", 0) :
		    jrun_fail(r, TS_EINVAL, "slice of %s", jv_type_name(obj));
	if (jv_is_array(obj)) {
		cnt = slice_idx((long long)obj->u.a.n, a, b, c, &s, &e, &st);
		if (!jrun_step(r, cnt) || (v = jv_array(r, JV_ARRAY, cnt)) ==
		    NULL)
			return NULL;
		for (i = s; st > 0 ? i < e : i > e; i += st)
			v->u.a.v[v->u.a.n++] = obj->u.a.v[i];
		return v;
	}
	if (obj->t != JV_STR)
		return jrun_fail(r, TS_EINVAL, "slice of %s",
		    jv_type_name(obj));
	/* a string slices by code points (Array.from) */
	off = xmalloc((obj->u.s.n + 1) * sizeof(*off));
	for (k = 0, len = 0; k < obj->u.s.n; len++) {
		uint32_t cp;

		off[len] = k;
		k += jinja_utf8_next(obj->u.s.p + k, obj->u.s.n - k, &cp);
	}
	off[len] = obj->u.s.n;
	cnt = slice_idx(len, a, b, c, &s, &e, &st);
	v = NULL;
	if (jrun_step(r, cnt)) {
		struct ts_buf t;

		ts_buf_init(&t, obj->u.s.n);
		for (i = s; st > 0 ? i < e : i > e; i += st)
			jrun_put(r, &t, obj->u.s.p + off[i],
			    off[i + 1] - off[i]);
		if (r->rc == TS_OK)
			v = jv_str(r, t.p ? t.p : "", t.len);
		ts_buf_free(&t);
	}
	free(off);
	return v;
}

