/*
 * jsonschema/schema_check.c - pass 3 of the JSON Schema generator, the
 * checks that need sizes: the root's instance within the limits, the
 * depth of smallest instances, oneOf disjointness (types, enum/const
 * values, a required property's values) and uniqueItems (enough distinct
 * values: listed when there are at most MAX_DOMAIN, else estimated). See
 * schema_int.h.
 */
#include "jsonschema/schema_int.h"

#include <stdlib.h>
#include <string.h>

#define LARGE (UINT64_C(1) << 40)      /* distinct counts saturate here */
#define SMALL_ROOM (SCHEMA_GEN_MAX_DEPTH - SCHEMA_GEN_SOFT_DEPTH)
#define MAX_DOMAIN 4096                /* values listed for uniqueItems */
#define DOM_DEPTH 8                    /* nesting of a listed value */
#define CHECK_WORK 4000000             /* comparisons of the oneOf check */

/* Integer and number overlap for a validator (1 is a number, 1.0 an
 * integer), so oneOf compares them as one. */
static unsigned
norm(unsigned m)
{
	return (m & T_NUMS) ? (m | T_NUMS) : m;
}

/* ---- pass 3: checks ----------------------------------------------------- */

/* Why the root has no finite instance: follows infinite children. */
static void
explain_inf(struct ctx *c, struct node *n)
{
	size_t steps, i;

	for (steps = 0; steps <= c->nall; steps++) {
		struct node *next = NULL;

		if (schema_step(c, 1 + n->nprops + n->nbr + n->mini) < 0)
			return;
		n->mark = 1;
		switch (n->kind) {
		case K_NEVER:
			schema_path_failat(c, TS_EINVAL, n->path, "the schema "
			    "false has no instance");
			return;
		case K_REF:
			next = n->ref;
			break;
		case K_ANYOF:
			for (i = 0; i < n->nbr && next == NULL; i++)
				if (!n->br[i]->mark)
					next = n->br[i];
			break;
		case K_PLAIN:
			if (n->types & BIT(TY_OBJ)) {
				for (i = 0; i < n->nprops && next == NULL;
				    i++)
					if (n->props[i].required &&
					    n->props[i].n->cost == INF)
						next = n->props[i].n;
				if (next == NULL) {
					schema_path_failat(c, TS_EINVAL,
					    n->path, "\"minProperties\" "
					    "cannot be met");
					return;
				}
			} else if (n->types & BIT(TY_ARR)) {
				for (i = 0; i < n->mini && next == NULL;
				    i++) {
					const struct node *it =
					    schema_size_item(n, i);

					if (it != NULL && it->cost == INF)
						next = (struct node *)it;
				}
			}
			break;
		}
		if (next == NULL || next->mark) {
			schema_path_failat(c, TS_EINVAL, n->path, "schema "
			    "recursion has no finite instance");
			return;
		}
		n = next;
	}
	schema_path_failat(c, TS_EINVAL, n->path, "the schema has no finite "
	    "instance");
}

static const struct node *
resolve(const struct node *n)
{
	size_t i;

	for (i = 0; n->kind == K_REF && i < SCHEMA_GEN_MAX_REFS + 2; i++)
		n = n->ref;
	return n->kind == K_REF ? NULL : n;
}

/* Types the generator may write for n (after type_sets). */
static unsigned
gen_types(const struct node *n)
{
	return n->gt;
}

/* Types a validator accepts for n (after type_sets). */
static unsigned
accept_types(const struct node *n)
{
	return n->at;
}

/* One step of type_sets; 1 when something changed. */
static int
type_node(struct node *n)
{
	unsigned g = 0, a = 0;
	size_t i;
	int t;

	switch (n->kind) {
	case K_REF:
		g = n->ref->gt;
		a = n->ref->at;
		break;
	case K_ANYOF:
		for (i = 0; i < n->nbr; i++) {
			if (n->br[i]->cost != INF)
				g |= n->br[i]->gt;
			a |= n->br[i]->at;
		}
		break;
	case K_PLAIN:
		if (n->nvals > 0)
			g = n->types;
		for (t = 0; t < TY_N && n->nvals == 0; t++)
			if ((n->types & BIT(t)) && n->tcost[t] != INF)
				g |= BIT(t);
		a = n->accept;
		break;
	default:
		break;
	}
	if (g == n->gt && a == n->at)
		return 0;
	n->gt = g;
	n->at = a;
	return 1;
}

/* The generated and accepted types of every node: unions that only grow
 * from round to round, so a fixed point as in schema_size(). */
static void
type_sets(struct ctx *c)
{
	size_t i;
	int round, changed;

	for (round = 0; round < MAX_ROUNDS && c->rc == TS_OK; round++) {
		changed = 0;
		for (i = c->nall; i-- > 0 &&
		    schema_step(c, 1 + c->all[i]->nbr) == 0;)
			changed |= type_node(c->all[i]);
		if (!changed)
			break;
	}
}

/* Whether the enum/const of b holds x: a binary search of its values'
 * hashes. */
static int
enum_has(struct ctx *c, struct node *b, const json_t *x)
{
	uint64_t h = schema_value_hash(x);
	size_t lo = 0, hi = b->nvals, i;

	if (b->vidx == NULL) {
		b->vidx = xcalloc(b->nvals, sizeof(*b->vidx));
		for (i = 0; i < b->nvals; i++) {
			b->vidx[i].cost = schema_value_hash(b->vals[i]);
			b->vidx[i].i = i;
		}
		qsort(b->vidx, b->nvals, sizeof(*b->vidx),
		    schema_size_costidx_cmp);
		c->work += b->nvals;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->vidx[mid].cost < h)
			lo = mid + 1;
		else
			hi = mid;
		c->work++;
	}
	for (i = lo; i < b->nvals && b->vidx[i].cost == h; i++) {
		c->work++;
		if (schema_value_same(b->vals[b->vidx[i].i], x))
			return 1;
	}
	return 0;
}

/* Whether a validator of b rejects the value x. */
static int
rejects_value(struct ctx *c, const struct node *b, const json_t *x)
{
	if (!(norm(BIT(schema_value_type(x))) & norm(accept_types(b))))
		return 1;
	b = resolve(b);
	if (b == NULL || b->kind != K_PLAIN || b->nvals == 0)
		return 0;
	return !enum_has(c, (struct node *)b, x);
}

/*
 * Whether every value generated from a is invalid against b: their
 * types differ, or a's enum values are not b's, or a requires a
 * property whose enum/const values b's same property rejects.
 */
static int
rejects(struct ctx *c, const struct node *a, const struct node *b)
{
	unsigned ga = norm(gen_types(a)), ab = norm(accept_types(b));
	const struct node *ra = resolve(a), *rb = resolve(b);
	size_t i, j, k;

	if (!(ga & ab))
		return 1;
	if (ra == NULL || rb == NULL || ra->kind != K_PLAIN)
		return 0;
	if (ra->nvals > 0) {
		for (i = 0; i < ra->nvals; i++)
			if (c->work > CHECK_WORK ||
			    !rejects_value(c, rb, ra->vals[i]))
				return 0;
		return 1;
	}
	if (rb->kind != K_PLAIN || (ga & ~BIT(TY_OBJ) & ab) ||
	    !(ga & BIT(TY_OBJ)))
		return 0;
	for (i = 0; i < ra->nprops; i++) {
		const struct prop *p = &ra->props[i];
		const struct node *pa = resolve(p->n), *pb = NULL;

		if (!p->required || pa == NULL || pa->kind != K_PLAIN ||
		    pa->nvals == 0)
			continue;
		for (j = 0; j < rb->nprops && pb == NULL; j++) {
			if (++c->work > CHECK_WORK)
				return 0;
			if (rb->props[j].len == p->len &&
			    memcmp(rb->props[j].key, p->key, p->len) == 0)
				pb = rb->props[j].n;
		}
		if (pb == NULL) {
			if (rb->addl_false)
				return 1;
			continue;
		}
		for (k = 0; k < pa->nvals; k++)
			if (c->work > CHECK_WORK ||
			    !rejects_value(c, pb, pa->vals[k]))
				break;
		if (k == pa->nvals)
			return 1;
	}
	return 0;
}

static void
check_oneof(struct ctx *c, const struct node *n)
{
	uint64_t w0 = c->work;
	size_t i, j;

	/* a step per comparison made (c->work counts them); a oneOf that
	 * would spend the rest of the budget is named */
	for (i = 0; i < n->nbr; i++) {
		if (c->steps + (c->work - w0) > c->max_steps) {
			schema_path_failat(c, TS_ELIMIT, n->path,
			    "\"oneOf\" is too large to check");
			return;
		}
		if (schema_step(c, c->work - w0) < 0)
			return;
		w0 = c->work;
		if (n->br[i]->cost == INF)
			continue;
		for (j = i + 1; j < n->nbr; j++) {
			if (n->br[j]->cost == INF)
				continue;
			if (++c->work <= CHECK_WORK &&
			    c->steps + (c->work - w0) <= c->max_steps &&
			    rejects(c, n->br[i], n->br[j]) &&
			    rejects(c, n->br[j], n->br[i]))
				continue;
			if (c->work > CHECK_WORK ||
			    c->steps + (c->work - w0) > c->max_steps)
				schema_path_failat(c, TS_ELIMIT, n->path,
				    "\"oneOf\" is too large to check");
			else
				schema_path_failat(c, TS_EINVAL, n->path,
				    "\"oneOf\" branches %zu and %zu may "
				    "accept one value (need disjoint types, "
				    "enum/const or discriminator values)", i,
				    j);
			return;
		}
	}
	(void)schema_step(c, c->work - w0);
}

/* A list of owned values, at most MAX_DOMAIN. */
struct vlist {
	json_t **v;
	size_t n, cap;
};

/* Takes v; 0, or -1 (v released) when the list is full or v NULL. */
static int
vl_push(struct vlist *l, json_t *v)
{
	if (v == NULL || l->n >= MAX_DOMAIN) {
		json_decref(v);
		return -1;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = v;
	return 0;
}

static void
vl_free(struct vlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		json_decref(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* Drops repeated values (schema_value_same), keeping the first of
 * each. */
static void
vl_dedupe(struct ctx *c, struct vlist *l)
{
	struct costidx *h;
	unsigned char *dup;
	size_t i, j, k = 0;

	if (l->n < 2 || schema_step(c, 4 * (uint64_t)l->n) < 0)
		return;
	h = xcalloc(l->n, sizeof(*h));
	dup = xcalloc(l->n, 1);
	for (i = 0; i < l->n; i++) {
		h[i].cost = schema_value_hash(l->v[i]);
		h[i].i = i;
	}
	qsort(h, l->n, sizeof(*h), schema_size_costidx_cmp);
	for (i = 1; i < l->n; i++)
		for (j = i; j-- > 0 && h[j].cost == h[i].cost &&
		    schema_step(c, 1) == 0;)
			if (!dup[h[j].i] && schema_value_same(l->v[h[j].i],
			    l->v[h[i].i])) {
				dup[h[i].i] = 1;
				break;
			}
	for (i = 0; i < l->n; i++) {
		if (dup[i])
			json_decref(l->v[i]);
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
	free(h);
	free(dup);
}

static int enumerate(struct ctx *c, struct node *n, unsigned depth);

/*
 * Every combination of the listed values of the parts (of an object's
 * properties, optional ones also absent, or of an array's positions):
 * a product over the parts, built by shallow copies. 0, or -1 when there
 * would be more than MAX_DOMAIN or a part cannot be listed.
 */
static int
product(struct ctx *c, const struct node *n, struct vlist *out, int obj,
    size_t len, unsigned depth)
{
	struct vlist cur = { NULL, 0, 0 }, next;
	size_t i, j, k, nparts = obj ? n->nprops : len;

	if (vl_push(&cur, obj ? json_object() : json_array()) < 0)
		return -1;
	for (i = 0; i < nparts; i++) {
		struct node *p = obj ? n->props[i].n :
		    (struct node *)schema_size_item(n, i);
		int opt = obj && !n->props[i].required;

		if (p->cost == INF && opt)
			continue;
		if (enumerate(c, p, depth + 1) < 0 ||
		    (uint64_t)cur.n * (p->ndom + opt) > MAX_DOMAIN)
			goto fail;
		memset(&next, 0, sizeof(next));
		for (j = 0; j < cur.n; j++) {
			if (opt && vl_push(&next, json_incref(cur.v[j])) < 0)
				goto fail_next;
			for (k = 0; k < p->ndom; k++) {
				json_t *x;

				/* a copy: a new value and its members,
				 * STEPS_VALUE each */
				if (schema_step(c, STEPS_VALUE * (1 + (obj ?
				    json_object_size(cur.v[j]) :
				    json_array_size(cur.v[j])))) < 0)
					goto fail_next;
				x = json_copy(cur.v[j]);
				int bad = x == NULL || (obj ?
				    json_object_setn(x, n->props[i].key,
				    n->props[i].len, p->dom[k]) :
				    json_array_append(x, p->dom[k])) != 0;

				if (bad) {
					json_decref(x);
					goto fail_next;
				}
				if (vl_push(&next, x) < 0)
					goto fail_next;
			}
		}
		vl_free(&cur);
		cur = next;
	}
	for (j = 0; j < cur.n; j++) {
		size_t sz = obj ? json_object_size(cur.v[j]) : 0;

		if (obj && (sz < n->minp || sz > n->maxp))
			continue;
		if (vl_push(out, json_incref(cur.v[j])) < 0)
			goto fail;
	}
	vl_free(&cur);
	return 0;
fail_next:
	vl_free(&next);
fail:
	vl_free(&cur);
	return -1;
}

/* The values of one type of a PLAIN node; 0, or -1 when unlisted. */
static int
enumerate_type(struct ctx *c, struct node *n, int t, struct vlist *l,
    unsigned depth)
{
	int64_t k, a;
	size_t len;

	switch (t) {
	case TY_NULL:
		return vl_push(l, json_null());
	case TY_BOOL:
		return vl_push(l, json_false()) < 0 ? -1 :
		    vl_push(l, json_true());
	case TY_INT:
	case TY_NUM:
		if (t == TY_NUM && n->ds.single)
			return vl_push(l, json_real(n->ds.value));
		if (t == TY_INT || n->num_int) {
			if ((uint64_t)(n->is.khi - n->is.klo) >= MAX_DOMAIN ||
			    schema_step(c, STEPS_VALUE * ((uint64_t)(n->is.khi -
			    n->is.klo) + 1)) < 0)
				return -1;
			for (k = n->is.klo; k <= n->is.khi; k++) {
				a = k * n->is.step;
				if ((!n->is.verify || schema_num_mult_ok(&n->b,
				    (double)a)) && vl_push(l,
				    json_integer(a)) < 0)
					return -1;
			}
			return 0;
		}
		if ((uint64_t)(n->ds.nhi - n->ds.nlo) >= MAX_DOMAIN ||
		    schema_step(c, STEPS_VALUE * ((uint64_t)(n->ds.nhi -
		    n->ds.nlo) + 1)) < 0)
			return -1;
		for (k = n->ds.nlo; k <= n->ds.nhi; k++) {
			if (!schema_num_mult_ok(&n->b,
			    schema_num_dec_val(&n->ds, k)))
				continue;
			a = k * n->ds.m;
			if (vl_push(l, a % n->ds.p == 0 ?
			    json_integer(a / n->ds.p) :
			    json_real(schema_num_dec_val(&n->ds, k))) < 0)
				return -1;
		}
		return 0;
	case TY_STR:            /* a..z strings of at most 2 letters */
		if (n->fmt != F_NONE || n->maxl > 2 ||
		    schema_step(c, STEPS_VALUE * (1 + 26 + 26 * 26)) < 0)
			return -1;
		for (k = 0; k < 1 + 26 + 26 * 26; k++) {
			char b[2] = { (char)('a' + (k - 1) % 26),
			    (char)('a' + (k - 27) % 26) };

			len = k == 0 ? 0 : k < 27 ? 1 : 2;
			if (len == 2)
				b[0] = (char)('a' + (k - 27) / 26);
			if (len >= n->minl && len <= n->maxl &&
			    vl_push(l, json_stringn(b, len)) < 0)
				return -1;
		}
		return 0;
	case TY_OBJ:
		return product(c, n, l, 1, 0, depth);
	default:
		if (n->unique)
			return -1;
		for (len = n->mini;
		    len <= schema_num_zmin(n->lencap, n->mini + 3); len++)
			if (product(c, n, l, 0, len, depth) < 0)
				return -1;
		return 0;
	}
}

/*
 * Lists in n->dom every value n can take when there are at most
 * MAX_DOMAIN: enum/const values, null, booleans, numbers of a small
 * range, plain strings of at most 2 characters (a..z), and anyOf,
 * objects and short arrays of such values (DOM_DEPTH deep). uniqueItems
 * then draws such items without repeats. 0 when listed, -1 when not
 * (once: the result is kept).
 */
static int
enumerate(struct ctx *c, struct node *n, unsigned depth)
{
	struct vlist l = { NULL, 0, 0 };
	size_t i;
	int t, rc = 0;

	if (n->dom_state == DOM_LISTED)
		return 0;
	if (n->dom_state != DOM_UNKNOWN || depth > DOM_DEPTH)
		return -1;      /* not listable, or a recursion */
	if (schema_step(c, 1 + STEPS_VALUE * n->nvals) < 0)
		return -1;
	n->dom_state = DOM_BUSY;
	switch (n->kind) {
	case K_NEVER:
		break;
	case K_REF:
		rc = enumerate(c, n->ref, depth + 1);
		if (rc == 0)
			rc = schema_step(c, n->ref->ndom);
		for (i = 0; rc == 0 && i < n->ref->ndom; i++)
			rc = vl_push(&l, json_incref(n->ref->dom[i]));
		break;
	case K_ANYOF:
		for (i = 0; rc == 0 && i < n->nbr; i++) {
			size_t j;

			if (n->br[i]->cost == INF)
				continue;
			rc = enumerate(c, n->br[i], depth + 1);
			if (rc == 0)
				rc = schema_step(c, n->br[i]->ndom);
			for (j = 0; rc == 0 && j < n->br[i]->ndom; j++)
				rc = vl_push(&l, json_incref(
				    n->br[i]->dom[j]));
		}
		break;
	default:
		for (i = 0; rc == 0 && i < n->nvals; i++)
			rc = vl_push(&l, json_deep_copy(n->vals[i]));
		for (t = 0; rc == 0 && n->nvals == 0 && t < TY_N; t++)
			if ((n->types & BIT(t)) && n->tcost[t] != INF)
				rc = enumerate_type(c, n, t, &l, depth);
		break;
	}
	if (rc < 0) {
		vl_free(&l);
		n->dom_state = DOM_NO;
		return -1;
	}
	vl_dedupe(c, &l);
	if (c->rc != TS_OK) {
		vl_free(&l);
		n->dom_state = DOM_NO;
		return -1;
	}
	n->dom = l.v;
	n->ndom = l.n;
	for (i = 0; i < l.n; i++)
		if (schema_value_depth(l.v[i]) > n->domdepth)
			n->domdepth = schema_value_depth(l.v[i]);
	n->dom_state = DOM_LISTED;
	return 0;
}

/* Distinct plain strings of at most maxl characters the generator makes
 * (prefixes of the words). */
static uint64_t
str_count(struct ctx *c, const struct node *n)
{
	size_t i, j, li, lj, cut = n->maxl;
	uint64_t k = 0;

	switch (n->fmt) {
	case F_DATE:
		return 10 * 12 * 28;
	case F_TIME:
		return 24 * 60 * 60;
	case F_EMAIL:
	case F_URI:
	case F_HOSTNAME:
		return NWORDS * NWORDS;
	case F_NONE:
		break;
	default:
		return LARGE;
	}
	if (cut == 0)
		return 1;
	if (cut >= 8)
		return LARGE;
	if (schema_step(c, NWORDS * NWORDS / 4) < 0)
		return 1;
	for (i = 0; i < NWORDS; i++) {
		li = schema_num_zmin(cut, strlen(schema_words[i]));
		for (j = 0; j < i; j++) {
			lj = schema_num_zmin(cut, strlen(schema_words[j]));
			if (li == lj && memcmp(schema_words[i],
			    schema_words[j], li) == 0)
				break;
		}
		if (j == i)
			k++;
	}
	return k;
}

static uint64_t dcount(struct ctx *c, struct node *n);

/* An estimate of how many distinct values one type of n can take. */
static uint64_t
type_count(struct ctx *c, struct node *n, int t)
{
	uint64_t k = 1, x, tot = 0;
	size_t i, len, base, top;

	switch (t) {
	case TY_NULL:
		return 1;
	case TY_BOOL:
		return 2;
	case TY_INT:
		return (uint64_t)(n->is.khi - n->is.klo) + 1;
	case TY_NUM:
		if (n->num_int)
			return (uint64_t)(n->is.khi - n->is.klo) + 1;
		return n->ds.single ? 1 :
		    (uint64_t)(n->ds.nhi - n->ds.nlo) + 1;
	case TY_STR:
		return str_count(c, n);
	case TY_OBJ:
		for (i = 0; i < n->nprops && schema_step(c, 1) == 0; i++) {
			if (n->props[i].n->cost == INF)
				continue;
			x = dcount(c, n->props[i].n);
			k = schema_num_sat_mul(k,
			    n->props[i].required ? x : x + 1, LARGE);
		}
		return k;
	default:
		schema_size_arr_lengths(n, &base, &top);
		for (len = base; len <= top; len++) {
			x = 1;
			for (i = 0; i < len && x < LARGE &&
			    schema_step(c, 1) == 0; i++)
				x = schema_num_sat_mul(x, dcount(c,
				    (struct node *)schema_size_item(n, i)),
				    LARGE);
			tot += x;
			if (tot >= LARGE)
				return LARGE;
		}
		return tot;
	}
}

/* An estimate of the distinct values the generator makes for n. */
static uint64_t
dcount(struct ctx *c, struct node *n)
{
	uint64_t k = 0;
	size_t i;
	int t;

	if (n->dstate == 2)
		return n->dcount;
	if (n->dstate == 1)
		return 1;       /* a recursion: at least one value */
	if (schema_step(c, 1 + n->nbr) < 0)
		return 1;
	if (enumerate(c, n, 0) == 0) {
		n->dstate = 2;
		n->dcount = n->ndom;
		return n->dcount;
	}
	n->dstate = 1;
	switch (n->kind) {
	case K_REF:
		k = dcount(c, n->ref);
		break;
	case K_ANYOF:
		for (i = 0; i < n->nbr; i++)
			if (n->br[i]->cost != INF)
				k += dcount(c, n->br[i]);
		break;
	case K_PLAIN:
		if (n->nvals > 0) {
			k = n->nvals;
			break;
		}
		for (t = 0; t < TY_N; t++)
			if ((n->types & BIT(t)) && n->tcost[t] != INF) {
				n->tcount[t] = type_count(c, n, t);
				k += n->tcount[t];
			}
		break;
	default:
		break;
	}
	n->dcount = k > LARGE ? LARGE : k;
	n->dstate = 2;
	return n->dcount;
}

/*
 * uniqueItems. Items are made in order, each distinct from the earlier
 * ones whose types overlap its own (k of them): an item with listed
 * values (enumerate) is drawn among those not taken, so it needs k + 1
 * values; another is drawn again (UNIQUE_TRIES times) while it repeats,
 * so it needs an estimated 4 x k (dcount). Checked for the first
 * minItems positions.
 */
static void
check_unique(struct ctx *c, struct node *n)
{
	size_t L = n->mini, i, j, np, k;
	unsigned *gt;
	struct node *it;
	uint64_t d;

	if (L < 2)
		return;
	/* positions: the prefix's, then the rest's (one node, all alike) */
	np = schema_num_zmin(L, n->nprefix);
	gt = xcalloc(np + 1, sizeof(*gt));
	for (i = 0; i < np; i++)
		gt[i] = norm(gen_types(n->prefix[i]));
	gt[np] = L > np ? norm(gen_types(n->rest)) : 0;
	for (i = 0; i <= np && schema_step(c, 1 + i) == 0; i++) {
		if (i == np && L == np)
			break;
		for (j = 0, k = 0; j < i; j++)
			k += (gt[i] & gt[j]) != 0;
		if (i == np)
			k += L - 1 - np;        /* the rest's earlier ones */
		it = (struct node *)schema_size_item(n, i);
		if (k == 0)
			continue;
		if (enumerate(c, it, 0) == 0) {
			if (it->ndom < k + 1)
				schema_path_failat(c, TS_EINVAL, n->path,
				    "\"uniqueItems\": the items have %zu "
				    "distinct values, fewer than "
				    "\"minItems\" %zu", it->ndom, L);
			continue;
		}
		if ((d = dcount(c, it)) < 4 * (uint64_t)k)
			schema_path_failat(c, TS_EINVAL, n->path,
			    "\"uniqueItems\": the items cannot surely give "
			    "%zu distinct values (about %llu)", L,
			    (unsigned long long)d);
	}
	free(gt);
}

/* Widens [*lo, *hi] on its open side to `need` + 1 values in +-lim. */
static void
widen_range(int64_t *lo, int64_t *hi, int open_hi, int open_lo,
    int64_t need, int64_t lim)
{
	if (*hi - *lo >= need)
		return;
	if (open_hi)
		*hi = *lo > lim - need ? lim : *lo + need;
	else if (open_lo)
		*lo = *hi < need - lim ? -lim : *hi - need;
}

/*
 * The items of uniqueItems: a number schema open on one side (the
 * default window of SPAN) widens to give 4 x minItems + 4 values.
 */
static void
widen(struct node *n)
{
	int64_t need = 4 * (int64_t)n->mini + 4;
	struct node *r;
	size_t i;

	for (i = 0; i <= n->nprefix && i < n->mini; i++) {
		if ((r = (struct node *)schema_size_item(n, i)) == NULL ||
		    (r = (struct node *)resolve(r)) == NULL ||
		    r->kind != K_PLAIN || r->nvals > 0)
			continue;
		if ((r->types & BIT(TY_INT)) || r->num_int)
			widen_range(&r->is.klo, &r->is.khi, !r->b.has_hi,
			    !r->b.has_lo, need, (r->b.int32 ? INT32_MAX :
			    INT_LIMIT) / r->is.step);
		if ((r->types & BIT(TY_NUM)) && !r->num_int && !r->ds.single)
			widen_range(&r->ds.nlo, &r->ds.nhi, !r->b.has_hi,
			    !r->b.has_lo, need, INT_LIMIT / r->ds.m);
	}
}

void
schema_check(struct ctx *c, struct node *root)
{
	size_t i;

	type_sets(c);
	if (c->rc != TS_OK)
		return;
	if (root->cost == INF) {
		explain_inf(c, root);
		return;
	}
	if (root->cost > SCHEMA_GEN_MAX_OUT) {
		schema_path_failat(c, TS_ELIMIT, root->path, "the smallest "
		    "instance is over %u bytes", SCHEMA_GEN_MAX_OUT);
		return;
	}
	for (i = 0; i < c->nall; i++)
		if (c->all[i]->kind == K_PLAIN && c->all[i]->unique &&
		    c->all[i]->cost != INF)
			widen(c->all[i]);
	for (i = 0; i < c->nall && c->rc == TS_OK; i++) {
		struct node *n = c->all[i];

		if (n->cost == INF)
			continue;
		if (n->sdepth > SMALL_ROOM) {
			schema_path_failat(c, TS_ELIMIT, n->path, "the "
			    "smallest instance nests %u arrays and objects, "
			    "over %d", n->sdepth, SMALL_ROOM);
			return;
		}
		if (n->kind == K_ANYOF && n->oneof)
			check_oneof(c, n);
		if (n->kind == K_PLAIN && n->nvals == 0 &&
		    (n->types & BIT(TY_ARR)) && n->unique)
			check_unique(c, n);
	}
}
