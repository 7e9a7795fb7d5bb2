/*
 * jinja/eval.c - runs the syntax tree: statements into the output,
 * expressions into values, after @huggingface/jinja src/runtime.ts
 * (0.5.13) Interpreter: scopes (a for loop opens one; set writes the
 * innermost), the loop variable, member access, calls, macros, and the
 * entry points of jinja.h; the operators are in ops.c. Every node
 * evaluated and loop iteration counts a step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "jinja/jinja_int.h"

/* A scope: its variables, newest last, and the scope around it. */
struct scope {
	struct scope *parent;
	struct jv *vars;        /* a JV_OBJECT */
};

enum flow { FLOW_OK, FLOW_ERR, FLOW_BREAK, FLOW_CONTINUE };

static struct jv *eval(struct jrun *r, const struct jnode *n,
    struct scope *sc);
static enum flow run_body(struct jrun *r, struct jnode *const *body,
    size_t n, struct scope *sc, struct ts_buf *out);

static struct jv *lookup(struct scope *sc, const char *name, size_t n)
{
	struct jv *v;

	for (; sc != NULL; sc = sc->parent)
		if ((v = jv_obj_get(sc->vars, name, n)) != NULL)
			return v;
	return NULL;
}

static int assign(struct jrun *r, struct scope *sc, const char *name,
    size_t n, struct jv *v)
{
	return jv_obj_set(r, sc->vars, name, n, v);
}

/* A scope in the arena: a macro may keep it past the block that made
 * it (runtime.ts captures environments by reference). */
static struct scope *new_scope(struct jrun *r, struct scope *parent)
{
	struct scope *sc = jrun_alloc(r, sizeof(*sc));

	if (sc == NULL || (sc->vars = jv_array(r, JV_OBJECT, 4)) == NULL)
		return NULL;
	sc->parent = parent;
	return sc;
}

static struct jv *undef(struct jrun *r)
{
	return jv_undef(r);
}

/* runtime.ts evaluateMemberExpression() */
static struct jv *eval_member(struct jrun *r, const struct jnode *n,
    struct scope *sc)
{
	struct jv *obj = eval(r, n->a, sc), *prop, *v = NULL;

	if (obj == NULL)
		return NULL;
	if (n->flag && n->b->kind == E_SLICE) {
		const struct jnode *sl = n->b;
		struct jv *a = sl->a ? eval(r, sl->a, sc) : NULL;
		struct jv *b = sl->b ? eval(r, sl->b, sc) : NULL;
		struct jv *c = sl->c ? eval(r, sl->c, sc) : NULL;

		if (r->rc != TS_OK)
			return NULL;
		return jinja_slice(r, obj, a, b, c);
	}
	if (n->flag)
		prop = eval(r, n->b, sc);
	else if (n->b->kind == E_INT)
		prop = jv_int(r, n->b->i);
	else
		prop = jv_str(r, n->b->s, n->b->n);
	if (prop == NULL)
		return NULL;
	if (jv_is_map(obj) || obj->t == JV_NS) {
		if (prop->t != JV_STR)
			return jrun_fail(r, TS_EINVAL, "cannot look up a %s in "
			    "a mapping", jv_type_name(prop));
		v = jv_obj_get(obj, prop->u.s.p, prop->u.s.n);
		if (v == NULL && obj->t != JV_NS)
			v = jinja_builtin_attr(r, obj, prop->u.s.p,
			    prop->u.s.n);
	} else if (jv_is_array(obj) || obj->t == JV_STR) {
		if (prop->t == JV_INT) {
			long long len = jv_is_array(obj) ?
			    (long long)obj->u.a.n : 0, i = prop->u.i;

			if (obj->t == JV_STR) {
				/* one code point (Array.from) */
				size_t k, w = 0;
				uint32_t cp;

				for (k = 0; k < obj->u.s.n; k += w, len++)
					w = jinja_utf8_next(obj->u.s.p + k,
					    obj->u.s.n - k, &cp);
				if (i < 0)
					i += len;
				if (i < 0 || i >= len)
					return undef(r);
				for (k = 0; i > 0; i--)
					k += jinja_utf8_next(obj->u.s.p + k,
					    obj->u.s.n - k, &cp);
				w = jinja_utf8_next(obj->u.s.p + k,
				    obj->u.s.n - k, &cp);
				return jv_str(r, obj->u.s.p + k, w);
			}
			if (i < 0)
				i += len;
			v = i >= 0 && i < len ? obj->u.a.v[i] : NULL;
		} else if (prop->t == JV_STR) {
			v = jinja_builtin_attr(r, obj, prop->u.s.p,
			    prop->u.s.n);
		} else {
			return jrun_fail(r, TS_EINVAL, "cannot index with a %s",
			    jv_type_name(prop));
		}
	} else {
		if (prop->t != JV_STR)
			return jrun_fail(r, TS_EINVAL, "cannot look up a %s in "
			    "a %s", jv_type_name(prop), jv_type_name(obj));
		v = jinja_builtin_attr(r, obj, prop->u.s.p, prop->u.s.n);
	}
	if (r->rc != TS_OK)
		return NULL;
	return v != NULL ? v : undef(r);
}

/* The arguments of a call: positional, then one JV_KWARGS if any. */
static struct jv **eval_args(struct jrun *r, const struct jnode *n,
    struct scope *sc, size_t *nargs)
{
	struct jv **args, *kw = NULL;
	size_t k, o = 0;

	args = jrun_alloc(r, (n->nlist + 1) * sizeof(*args));
	if (args == NULL)
		return NULL;
	for (k = 0; k < n->nlist; k++)
		if (n->list[k]->kind != E_KWARG &&
		    (args[o++] = eval(r, n->list[k], sc)) == NULL)
			return NULL;
	for (k = 0; k < n->nlist; k++) {
		struct jv *v;

		if (n->list[k]->kind != E_KWARG)
			continue;
		if (kw == NULL && (kw = jv_array(r, JV_KWARGS, 4)) == NULL)
			return NULL;
		if (jv_obj_get(kw, n->list[k]->s, n->list[k]->n) != NULL) {
			jrun_fail(r, TS_EINVAL, "keyword argument '%s' given "
			    "twice", n->list[k]->s);
			return NULL;
		}
		v = eval(r, n->list[k]->a, sc);
		if (v == NULL || !jv_obj_set(r, kw, n->list[k]->s,
		    n->list[k]->n, v))
			return NULL;
	}
	if (kw != NULL)
		args[o++] = kw;
	*nargs = o;
	return args;
}

static struct jv *eval_dict(struct jrun *r, const struct jnode *n,
    struct scope *sc)
{
	struct jv *v = jv_array(r, JV_OBJECT, n->nlist);
	size_t k;

	for (k = 0; v != NULL && k < n->nlist; k++) {
		struct jv *key = eval(r, n->list[k], sc), *val;

		if (key == NULL)
			return NULL;
		if (key->t != JV_STR)
			return jrun_fail(r, TS_EINVAL, "dict keys must be "
			    "strings");
		val = eval(r, n->list2[k], sc);
		if (val == NULL || !jv_obj_set(r, v, key->u.s.p, key->u.s.n,
		    val))
			return NULL;
	}
	return v;
}

/*
 * runtime.ts evaluateMacro() and bindMacroArguments(): a call's scope
 * sits on the scope the macro was defined in; positional arguments, then
 * keyword ones, then the defaults (evaluated in the call's scope), else
 * undefined; the body's text is the result. Calls nest at most
 * JINJA_MAX_DEPTH deep.
 */
static struct jv *call_macro(struct jrun *r, struct jv *fn,
    struct jv **args, size_t nargs)
{
	const struct jnode *m = fn->u.fn.macro->node;
	struct jv *kw = nargs > 0 && args[nargs - 1]->t == JV_KWARGS ?
	    args[--nargs] : NULL, *v;
	struct scope *sc;
	struct ts_buf t;
	size_t k, used = 0;
	enum flow f;

	if (nargs > m->nlist)
		return jrun_fail(r, TS_EINVAL, "macro '%s' takes not more "
		    "than %zu argument(s)", m->s, m->nlist);
	if (r->calls >= JINJA_MAX_DEPTH)
		return jrun_fail(r, TS_ELIMIT, "macro calls nested deeper "
		    "than %d", JINJA_MAX_DEPTH);
	if ((sc = new_scope(r, fn->u.fn.macro->scope)) == NULL)
		return NULL;
	for (k = 0; k < m->nlist; k++) {
		const struct jnode *p = m->list[k];

		v = k < nargs ? args[k] : NULL;
		if (v == NULL && kw != NULL &&
		    (v = jv_obj_get(kw, p->s, p->n)) != NULL)
			used++;
		if (!assign(r, sc, p->s, p->n, v ? v : undef(r)))
			return NULL;
	}
	if (kw != NULL && used < kw->u.o.n)
		for (k = 0; k < kw->u.o.n; k++) {
			size_t j;

			for (j = 0; j < m->nlist; j++)
				if (strcmp(m->list[j]->s, kw->u.o.v[k].k) == 0)
					break;
			if (j == m->nlist)
				return jrun_fail(r, TS_EINVAL, "macro '%s' "
				    "takes no keyword argument '%s'", m->s,
				    kw->u.o.v[k].k);
		}
	for (k = nargs; k < m->nlist; k++) {
		const struct jnode *p = m->list[k];

		if (p->kind != E_KWARG ||
		    (kw != NULL && jv_obj_get(kw, p->s, p->n) != NULL))
			continue;
		if ((v = eval(r, p->a, sc)) == NULL ||
		    !assign(r, sc, p->s, p->n, v))
			return NULL;
	}
	ts_buf_init(&t, r->max_out);
	r->calls++;
	f = run_body(r, m->list2, m->nlist2, sc, &t);
	r->calls--;
	v = NULL;
	if (f == FLOW_OK)
		v = jv_str(r, t.p ? t.p : "", t.len);
	else if (r->rc == TS_OK)
		jrun_fail(r, TS_EINVAL, "break or continue outside a loop");
	ts_buf_free(&t);
	return v;
}

static struct jv *eval_node(struct jrun *r, const struct jnode *n,
    struct scope *sc)
{
	struct jv *v, *w, **args;
	size_t k, nargs;

	if (!jrun_step(r, 1))
		return NULL;
	switch (n->kind) {
	case E_NAME:
		v = lookup(sc, n->s, n->n);
		return v != NULL ? v : undef(r);
	case E_STR:
	case E_INT:
	case E_FLOAT:
		return n->lit;
	case E_BIN:
		v = eval(r, n->a, sc);
		if (v == NULL)
			return NULL;
		if (n->op == OP_AND)
			return jv_truthy(v) ? eval(r, n->b, sc) : v;
		if (n->op == OP_OR)
			return jv_truthy(v) ? v : eval(r, n->b, sc);
		w = eval(r, n->b, sc);
		return w == NULL ? NULL : jinja_binop(r, n->op, v, w);
	case E_MEMBER: return eval_member(r, n, sc);
	case E_CALL:
		args = eval_args(r, n, sc, &nargs);
		if (args == NULL || (v = eval(r, n->a, sc)) == NULL)
			return NULL;
		if (v->t == JV_FUNC && v->u.fn.id == F_MACRO)
			return call_macro(r, v, args, nargs);
		return jinja_call(r, v, args, nargs);
	case E_FILTER:
		v = eval(r, n->a, sc);
		if (v == NULL)
			return NULL;
		nargs = 0;
		args = NULL;
		if (n->flag && (args = eval_args(r, n, sc, &nargs)) == NULL)
			return NULL;
		return jinja_filter(r, v, n->s, n->flag, args, nargs);
	case E_TEST: {
		int t;

		v = eval(r, n->a, sc);
		w = n->b ? eval(r, n->b, sc) : NULL;
		if (v == NULL || (n->b && w == NULL))
			return NULL;
		t = jinja_test(r, n->s, v, w);
		return t < 0 ? NULL : jv_bool(r, t != n->flag);
	}
	case E_TERNARY:
		v = eval(r, n->b, sc);
		if (v == NULL)
			return NULL;
		return eval(r, jv_truthy(v) ? n->a : n->c, sc);
	case E_SELECT:
		v = eval(r, n->b, sc);
		if (v == NULL)
			return NULL;
		return jv_truthy(v) ? eval(r, n->a, sc) : undef(r);
	case E_UNARY:
		v = eval(r, n->a, sc);
		if (v == NULL)
			return NULL;
		if (n->op == OP_NOT)
			return jv_bool(r, !jv_truthy(v));
		if (v->t == JV_FLOAT)
			return jv_float(r, n->op == OP_SUB ? -v->u.f : v->u.f);
		if (v->t == JV_INT || v->t == JV_BOOL) {
			long long i = v->t == JV_INT ? v->u.i : v->u.b;

			return jv_int(r, n->op == OP_SUB ? -i : i);
		}
		return jrun_fail(r, TS_EINVAL, "unary %c on %s",
		    n->op == OP_SUB ? '-' : '+', jv_type_name(v));
	case E_LIST:
	case E_TUPLE:
		v = jv_array(r, n->kind == E_LIST ? JV_ARRAY : JV_TUPLE,
		    n->nlist);
		for (k = 0; v != NULL && k < n->nlist; k++)
			if ((v->u.a.v[v->u.a.n++] = eval(r, n->list[k], sc)) ==
			    NULL)
				return NULL;
		return v;
	case E_DICT: return eval_dict(r, n, sc);
	default:
		return jrun_fail(r, TS_EINVAL, "cannot evaluate this "
		    "expression here");
	}
}

/* Evaluation nests (eval, run_body, macro calls) at most JINJA_MAX_FRAMES
 * deep, so that a render fits a thread's stack of 256 KiB. */
static struct jv *eval(struct jrun *r, const struct jnode *n,
    struct scope *sc)
{
	struct jv *v;

	if (r->frames >= JINJA_MAX_FRAMES)
		return jrun_fail(r, TS_ELIMIT, "template nested deeper than %d "
		    "evaluations", JINJA_MAX_FRAMES);
	r->frames++;
	v = eval_node(r, n, sc);
	r->frames--;
	return v;
}

/* runtime.ts executeSet() */
static int run_set(struct jrun *r, const struct jnode *n, struct scope *sc)
{
	struct jv *v, *obj;
	size_t k;

	if (n->b != NULL) {
		v = eval(r, n->b, sc);
	} else {
		struct ts_buf t;

		ts_buf_init(&t, r->max_out);
		v = NULL;
		if (run_body(r, n->list, n->nlist, sc, &t) == FLOW_OK)
			v = jv_str(r, t.p ? t.p : "", t.len);
		else if (r->rc == TS_OK)
			jrun_fail(r, TS_EINVAL, "break or continue outside "
			    "a loop");
		ts_buf_free(&t);
	}
	if (v == NULL)
		return 0;
	switch (n->a->kind) {
	case E_NAME:
		return assign(r, sc, n->a->s, n->a->n, v);
	case E_TUPLE:
		if (!jv_is_array(v)) {
			jrun_fail(r, TS_EINVAL, "cannot unpack %s in set",
			    jv_type_name(v));
			return 0;
		}
		if (v->u.a.n != n->a->nlist) {
			jrun_fail(r, TS_EINVAL, "too %s items to unpack in set",
			    n->a->nlist > v->u.a.n ? "few" : "many");
			return 0;
		}
		for (k = 0; k < n->a->nlist; k++) {
			if (n->a->list[k]->kind != E_NAME) {
				jrun_fail(r, TS_EINVAL, "cannot unpack to "
				    "this expression");
				return 0;
			}
			if (!assign(r, sc, n->a->list[k]->s,
			    n->a->list[k]->n, v->u.a.v[k]))
				return 0;
		}
		return 1;
	default:                /* ns.attr = v */
		obj = eval(r, n->a->a, sc);
		if (obj == NULL)
			return 0;
		if (obj->t != JV_NS) {
			jrun_fail(r, TS_EINVAL, "cannot assign an attribute "
			    "of a %s (only of a namespace)",
			    jv_type_name(obj));
			return 0;
		}
		if (n->a->b->kind != E_NAME) {
			jrun_fail(r, TS_EINVAL, "cannot assign this member");
			return 0;
		}
		return jv_obj_set(r, obj, n->a->b->s, n->a->b->n, v);
	}
}

static int bind(struct jrun *r, const struct jnode *var, struct jv *item,
    struct scope *sc)
{
	size_t k;

	if (var->kind == E_NAME)
		return assign(r, sc, var->s, var->n, item);
	for (k = 0; k < var->nlist; k++) {
		if (var->list[k]->kind != E_NAME) {
			jrun_fail(r, TS_EINVAL, "cannot unpack to this "
			    "expression");
			return 0;
		}
		if (!assign(r, sc, var->list[k]->s, var->list[k]->n,
		    item->u.a.v[k]))
			return 0;
	}
	return 1;
}

/* The loop variable (runtime.ts LoopValue) of iteration i of len. */
static struct jv *loop_value(struct jrun *r, struct jv **items, size_t i,
    size_t len)
{
	struct jv *l = jv_array(r, JV_OBJECT, 9);

	if (l == NULL ||
	    !jv_obj_set(r, l, "index", 5, jv_int(r, (long long)i + 1)) ||
	    !jv_obj_set(r, l, "index0", 6, jv_int(r, (long long)i)) ||
	    !jv_obj_set(r, l, "revindex", 8,
	    jv_int(r, (long long)(len - i))) ||
	    !jv_obj_set(r, l, "revindex0", 9,
	    jv_int(r, (long long)(len - i) - 1)) ||
	    !jv_obj_set(r, l, "first", 5, jv_bool(r, i == 0)) ||
	    !jv_obj_set(r, l, "last", 4, jv_bool(r, i == len - 1)) ||
	    !jv_obj_set(r, l, "length", 6, jv_int(r, (long long)len)) ||
	    !jv_obj_set(r, l, "previtem", 8, i > 0 ? items[i - 1] :
	    undef(r)) ||
	    !jv_obj_set(r, l, "nextitem", 8, i + 1 < len ? items[i + 1] :
	    undef(r)) || r->rc != TS_OK)
		return NULL;
	return l;
}

/* runtime.ts renderFor(): items picked (and checked) before the first
 * iteration; the else block when no iteration ran to its end. */
static enum flow run_for(struct jrun *r, const struct jnode *n,
    struct scope *outer, struct ts_buf *out)
{
	struct scope *sc = new_scope(r, outer);
	struct jv *it, **items, *loop;
	size_t k, count = 0;
	int none = 1;
	enum flow f;

	if (sc == NULL || (it = eval(r, n->b, sc)) == NULL)
		return FLOW_ERR;
	if (jv_is_map(it)) {
		struct jv *keys = jv_array(r, JV_ARRAY, it->u.o.n);

		for (k = 0; keys != NULL && k < it->u.o.n; k++)
			if ((keys->u.a.v[keys->u.a.n++] = jv_str(r,
			    it->u.o.v[k].k, it->u.o.v[k].kn)) == NULL)
				return FLOW_ERR;
		if ((it = keys) == NULL)
			return FLOW_ERR;
	}
	if (!jv_is_array(it)) {
		jrun_fail(r, TS_EINVAL, "cannot loop over %s",
		    jv_type_name(it));
		return FLOW_ERR;
	}
	/* without a filter every item is taken: the list itself (nothing
	 * changes a list in place) */
	items = n->c == NULL ? it->u.a.v :
	    jrun_alloc(r, (it->u.a.n + 1) * sizeof(*items));
	if (items == NULL && it->u.a.n > 0)
		return FLOW_ERR;
	for (k = 0; k < it->u.a.n; k++) {
		struct jv *cur = it->u.a.v[k];

		if (!jrun_step(r, 1))
			return FLOW_ERR;
		if (n->a->kind == E_TUPLE) {
			if (!jv_is_array(cur)) {
				jrun_fail(r, TS_EINVAL, "cannot unpack %s",
				    jv_type_name(cur));
				return FLOW_ERR;
			}
			if (cur->u.a.n != n->a->nlist) {
				jrun_fail(r, TS_EINVAL, "too %s items to "
				    "unpack", n->a->nlist > cur->u.a.n ?
				    "few" : "many");
				return FLOW_ERR;
			}
		}
		if (n->c != NULL) {
			struct scope test = { sc, jv_array(r, JV_OBJECT, 2) };
			struct jv *ok;

			if (test.vars == NULL || !bind(r, n->a, cur, &test) ||
			    (ok = eval(r, n->c, &test)) == NULL)
				return FLOW_ERR;
			if (!jv_truthy(ok))
				continue;
		}
		if (n->c != NULL)
			items[count] = cur;
		count++;
	}
	for (k = 0; k < count; k++) {
		if (!jrun_step(r, 1) || (n->flag &&
		    ((loop = loop_value(r, items, k, count)) == NULL ||
		    !assign(r, sc, "loop", 4, loop))) ||
		    !bind(r, n->a, items[k], sc))
			return FLOW_ERR;
		f = run_body(r, n->list, n->nlist, sc, out);
		if (f == FLOW_ERR)
			return FLOW_ERR;
		if (f == FLOW_CONTINUE)
			continue;
		if (f == FLOW_BREAK)
			break;
		none = 0;
	}
	if (none)
		return run_body(r, n->list2, n->nlist2, sc, out) == FLOW_ERR ?
		    FLOW_ERR : FLOW_OK;
	return FLOW_OK;
}

/* runtime.ts renderBlock(): each statement's text into out. */
static enum flow run_stmts(struct jrun *r, struct jnode *const *body,
    size_t n, struct scope *sc, struct ts_buf *out)
{
	size_t k;
	enum flow f;

	for (k = 0; k < n; k++) {
		const struct jnode *s = body[k];
		struct jv *v;

		if (!jrun_step(r, 1))
			return FLOW_ERR;
		switch (s->kind) {
		case S_TEXT:
			if (!jrun_put(r, out, s->s, s->n))
				return FLOW_ERR;
			break;
		case S_PRINT:
			v = eval(r, s->a, sc);
			if (v == NULL)
				return FLOW_ERR;
			if (v->t != JV_NULL && v->t != JV_UNDEF &&
			    !jv_print(r, out, v))
				return FLOW_ERR;
			break;
		case S_IF:
			v = eval(r, s->a, sc);
			if (v == NULL)
				return FLOW_ERR;
			f = jv_truthy(v) ? run_body(r, s->list, s->nlist, sc,
			    out) : run_body(r, s->list2, s->nlist2, sc, out);
			if (f != FLOW_OK)
				return f;
			break;
		case S_FOR:
			if (run_for(r, s, sc, out) != FLOW_OK)
				return FLOW_ERR;
			break;
		case S_SET:
			if (!run_set(r, s, sc))
				return FLOW_ERR;
			break;
		case S_BREAK:
			return FLOW_BREAK;
		case S_CONTINUE:
			return FLOW_CONTINUE;
		case S_MACRO:
			if ((v = jv_new(r, JV_FUNC)) == NULL ||
			    (v->u.fn.macro = jrun_alloc(r,
			    sizeof(*v->u.fn.macro))) == NULL)
				return FLOW_ERR;
			v->u.fn.id = F_MACRO;
			v->u.fn.macro->node = s;
			v->u.fn.macro->scope = sc;
			if (!assign(r, sc, s->s, s->n, v))
				return FLOW_ERR;
			break;
		default:
			jrun_fail(r, TS_EINVAL, "unknown statement");
			return FLOW_ERR;
		}
	}
	return FLOW_OK;
}

static enum flow run_body(struct jrun *r, struct jnode *const *body,
    size_t n, struct scope *sc, struct ts_buf *out)
{
	enum flow f;

	if (r->frames >= JINJA_MAX_FRAMES) {
		jrun_fail(r, TS_ELIMIT, "template nested deeper than %d "
		    "evaluations", JINJA_MAX_FRAMES);
		return FLOW_ERR;
	}
	r->frames++;
	f = run_stmts(r, body, n, sc, out);
	r->frames--;
	return f;
}

enum ts_err jinja_parse(struct jinja_template **out, const char *text,
    size_t len, char *err, size_t errlen)
{
	struct jinja_template *t;
	struct jtok *toks = NULL;
	size_t ntoks = 0;
	enum ts_err rc;

	*out = NULL;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (len > JINJA_MAX_TEMPLATE) {
		snprintf(err, errlen, "template of %zu bytes, over the limit "
		    "of %u", len, JINJA_MAX_TEMPLATE);
		return TS_ELIMIT;
	}
	t = xcalloc(1, sizeof(*t));
	t->text = xstrndup(text, len);
	t->len = len;
	rc = jinja_lex(&t->arena, t->text, len, &toks, &ntoks, err, errlen);
	if (rc == TS_OK)
		rc = jinja_parse_tokens(t, toks, ntoks, err, errlen);
	free(toks);
	if (rc != TS_OK) {
		jinja_free(t);
		return rc;
	}
	*out = t;
	return TS_OK;
}

void jinja_free(struct jinja_template *t)
{
	if (t == NULL)
		return;
	jarena_free(&t->arena);
	free(t->text);
	free(t);
}

/* runtime.ts setupGlobals(): names the context may not take. */
static int globals(struct jrun *r, struct jv *vars)
{
	struct jv *f;
	static const struct { const char *name; int id; } fns[] = {
		{ "namespace", F_NAMESPACE }, { "raise_exception", F_RAISE },
		{ "range", F_RANGE }, { "strftime_now", F_STRFTIME },
	};
	size_t k;

	for (k = 0; k < sizeof(fns) / sizeof(fns[0]); k++) {
		if ((f = jv_new(r, JV_FUNC)) == NULL)
			return 0;
		f->u.fn.id = fns[k].id;
		if (!jv_obj_set(r, vars, fns[k].name, strlen(fns[k].name), f))
			return 0;
	}
	return jv_obj_set(r, vars, "false", 5, jv_bool(r, 0)) &&
	    jv_obj_set(r, vars, "true", 4, jv_bool(r, 1)) &&
	    jv_obj_set(r, vars, "none", 4, jv_null(r)) &&
	    jv_obj_set(r, vars, "False", 5, jv_bool(r, 0)) &&
	    jv_obj_set(r, vars, "True", 4, jv_bool(r, 1)) &&
	    jv_obj_set(r, vars, "None", 4, jv_null(r));
}

enum ts_err jinja_render_at(const struct jinja_template *t,
    const json_t *ctx, size_t max_out, time_t now, char **out,
    size_t *out_len, char *err, size_t errlen)
{
	struct jrun r;
	struct scope root = { NULL, NULL };
	struct ts_buf b;
	struct jv *c;
	size_t k;
	enum flow f;

	*out = NULL;
	*out_len = 0;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (t == NULL || (ctx != NULL && !json_is_object(ctx))) {
		snprintf(err, errlen, "the context must be a JSON object");
		return TS_EINVAL;
	}
	memset(&r, 0, sizeof(r));
	r.arena.cap = JINJA_MAX_MEMORY;
	r.now = now;
	r.max_out = max_out;
	r.err = err;
	r.errlen = errlen;
	r.t = t;
	ts_buf_init(&b, max_out);
	if ((root.vars = jv_array(&r, JV_OBJECT, 32)) == NULL ||
	    !globals(&r, root.vars))
		goto out;
	if (ctx != NULL) {
		if ((c = jv_from_json(&r, ctx, 0)) == NULL)
			goto out;
		for (k = 0; k < c->u.o.n; k++) {
			if (jv_obj_get(root.vars, c->u.o.v[k].k,
			    c->u.o.v[k].kn) != NULL) {
				jrun_fail(&r, TS_EINVAL, "variable already "
				    "declared: %s", c->u.o.v[k].k);
				goto out;
			}
			if (!jv_obj_set(&r, root.vars, c->u.o.v[k].k,
			    c->u.o.v[k].kn, c->u.o.v[k].v))
				goto out;
		}
	}
	f = run_body(&r, t->body, t->nbody, &root, &b);
	if (f != FLOW_OK && r.rc == TS_OK)
		jrun_fail(&r, TS_EINVAL, "break or continue outside a loop");
	if (r.rc == TS_OK) {
		if (ts_buf_append(&b, "", 1) != TS_OK) {
			/* room for the NUL past max_out */
			char *p = xmalloc(b.len + 1);

			if (b.len > 0)
				memcpy(p, b.p, b.len);
			p[b.len] = '\0';
			*out = p;
			*out_len = b.len;
		} else {
			*out = b.p;
			*out_len = b.len - 1;
			b.p = NULL;
		}
	}
out:
	ts_buf_free(&b);
	jarena_free(&r.arena);
	return r.rc;
}

enum ts_err jinja_render(const struct jinja_template *t, const json_t *ctx,
    size_t max_out, char **out, size_t *out_len, char *err, size_t errlen)
{
	return jinja_render_at(t, ctx, max_out, time(NULL), out, out_len,
	    err, errlen);
}
