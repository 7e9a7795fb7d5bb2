/*
 * jsonschema/schema_size.c - pass 2 of the JSON Schema generator: the
 * smallest instance of every node (its cost, in estimated bytes, and its
 * nesting depth) as a least fixed point over $ref cycles (Knuth, "A
 * generalization of Dijkstra's algorithm", 1977: costs only fall from
 * round to round and a node's cost is final once the nodes of its
 * cheapest derivation are), so a recursion without a finite instance
 * shows as an infinite cost (INF). See schema_int.h.
 */
#include "jsonschema/schema_int.h"

#include <stdlib.h>
#include <string.h>

#define CAP (UINT64_C(1) << 62)        /* finite costs saturate here */

/* a + b, saturating at CAP; INF (no finite instance) stays INF. */
static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	if (a == INF || b == INF)
		return INF;
	return a + b > CAP ? CAP : a + b;
}

/* ---- pass 2: the smallest instances ------------------------------------- */

int
schema_size_costidx_cmp(const void *a, const void *b)
{
	const struct costidx *x = a, *y = b;

	if (x->cost != y->cost)
		return x->cost < y->cost ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * The smallest object: its required properties and, to reach
 * minProperties, the cheapest optional ones (marked in small_inc).
 */
static void
object_cost(struct node *n, uint64_t *cost, unsigned *depth)
{
	struct costidx *opt;
	uint64_t sum = 2;
	size_t i, nreq = 0, nopt = 0, need;
	unsigned d = 1;

	memset(n->small_inc, 0, n->nprops ? n->nprops : 1);
	for (i = 0; i < n->nprops; i++) {
		const struct node *ch = n->props[i].n;

		if (!n->props[i].required)
			continue;
		nreq++;
		sum = sat_add(sum, sat_add(n->props[i].len + 4, ch->cost));
		if (ch->cost != INF && ch->sdepth + 1 > d)
			d = ch->sdepth + 1;
	}
	need = n->minp > nreq ? n->minp - nreq : 0;
	if (need > 0 && sum != INF) {
		opt = xcalloc(n->nprops, sizeof(*opt));
		for (i = 0; i < n->nprops; i++) {
			if (n->props[i].required ||
			    n->props[i].n->cost == INF)
				continue;
			opt[nopt].cost = n->props[i].n->cost +
			    n->props[i].len;
			opt[nopt].i = i;
			nopt++;
		}
		if (nopt < need) {
			sum = INF;
		} else {
			qsort(opt, nopt, sizeof(*opt),
			    schema_size_costidx_cmp);
			for (i = 0; i < need; i++) {
				const struct node *ch =
				    n->props[opt[i].i].n;

				n->small_inc[opt[i].i] = 1;
				sum = sat_add(sum, sat_add(4, opt[i].cost));
				if (ch->sdepth + 1 > d)
					d = ch->sdepth + 1;
			}
		}
		free(opt);
	}
	*cost = sum;
	*depth = d;
}

const struct node *
schema_size_item(const struct node *n, size_t i)
{
	return i < n->nprefix ? n->prefix[i] : n->rest;
}

/*
 * The lengths an array is drawn from outside a smallest instance:
 * [minItems, minItems + 3]; with a prefix, every prefix item that fits
 * (at least minItems) and up to 3 more from an explicit items schema.
 * Within lencap, which array_cost sets.
 */
void
schema_size_arr_lengths(const struct node *n, size_t *base, size_t *top)
{
	size_t lo = n->mini, cap = n->lencap;

	if (n->nprefix == 0) {
		*base = lo;
		*top = schema_num_zmin(cap, lo + 3);
	} else {
		*base = schema_num_zmax(lo, schema_num_zmin(n->nprefix, cap));
		*top = n->rest_explicit ? schema_num_zmin(cap,
		    *base + 3) : *base;
	}
}

/* The smallest array: minItems items. Also how long arrays may be with
 * items that have instances (lencap). */
static void
array_cost(struct node *n, uint64_t *cost, unsigned *depth)
{
	uint64_t sum = 2;
	size_t i, cap = n->maxi;
	unsigned d = 1;

	for (i = 0; i < n->nprefix && i < cap; i++)
		if (n->prefix[i]->cost == INF)
			cap = i;
	if (cap > n->nprefix && (n->rest == NULL || n->rest->cost == INF))
		cap = n->nprefix;
	n->lencap = cap;
	if (n->mini > cap) {
		*cost = INF;
		*depth = 1;
		return;
	}
	for (i = 0; i < n->mini && i < n->nprefix; i++) {
		sum = sat_add(sum, 1 + n->prefix[i]->cost);
		if (n->prefix[i]->sdepth + 1 > d)
			d = n->prefix[i]->sdepth + 1;
	}
	if (n->mini > n->nprefix) {
		sum = sat_add(sum, schema_num_sat_mul(n->mini - n->nprefix,
		    1 + n->rest->cost, CAP));
		if (n->rest->sdepth + 1 > d)
			d = n->rest->sdepth + 1;
	}
	*cost = sum;
	*depth = d;
}

static uint64_t
type_cost(struct node *n, int t, unsigned *depth)
{
	uint64_t cost;
	size_t wlo, whi, flo, fhi;

	*depth = 0;
	switch (t) {
	case TY_NULL:
		return 4;
	case TY_BOOL:
		return 5;
	case TY_INT:
		return 18;
	case TY_NUM:
		return 24;
	case TY_STR:
		if (n->fmt != F_NONE) {
			schema_words_format_lens(n->fmt, &flo, &fhi);
			return 2 + fhi;
		}
		schema_words_lens(&wlo, &whi);
		return 2 + schema_num_zmax(n->minl, schema_num_zmin(n->maxl,
		    whi));
	case TY_OBJ:
		object_cost(n, &cost, depth);
		return cost;
	default:
		array_cost(n, &cost, depth);
		return cost;
	}
}

/* Recomputes one node from its children; 1 when something changed. A
 * step for the node and one per child it reads (a sort of the optional
 * properties for minProperties counts 8 per property). */
static int
cost_node(struct ctx *c, struct node *n)
{
	uint64_t old = n->cost, best = INF;
	unsigned oldd = n->sdepth;
	size_t i;
	int t;

	if (schema_step(c, 1 + n->nbr + n->nvals + n->nprefix + n->nprops *
	    (n->minp > 0 ? 8 : 1)) < 0)
		return 0;
	switch (n->kind) {
	case K_NEVER:
		n->cost = INF;
		break;
	case K_REF:
		n->cost = sat_add(1, n->ref->cost);
		n->sdepth = n->ref->sdepth;
		break;
	case K_ANYOF:
		for (i = 0; i < n->nbr; i++)
			if (n->br[i]->cost < best) {
				best = n->br[i]->cost;
				n->schoice = i;
			}
		n->cost = sat_add(1, best);
		n->sdepth = n->br[n->schoice]->sdepth;
		break;
	case K_PLAIN:
		if (n->nvals > 0) {
			for (i = 0; i < n->nvals; i++)
				if (n->valsize[i] < best)
					best = n->valsize[i];
			n->cost = best;
			n->sdepth = n->valdepth;
			break;
		}
		for (t = 0; t < TY_N; t++) {
			if (!(n->types & BIT(t)))
				continue;
			n->tcost[t] = type_cost(n, t, &n->tdepth[t]);
			if (n->tcost[t] < best) {
				best = n->tcost[t];
				n->stype = t;
			}
		}
		n->cost = best;
		n->sdepth = n->tdepth[n->stype];
		break;
	}
	return n->cost != old || n->sdepth != oldd;
}

void
schema_size(struct ctx *c)
{
	size_t i;
	int round, changed;

	for (round = 0; round < MAX_ROUNDS && c->rc == TS_OK; round++) {
		changed = 0;
		for (i = c->nall; i-- > 0 && c->rc == TS_OK;)
			changed |= cost_node(c, c->all[i]);
		if (!changed)
			break;
	}
}
