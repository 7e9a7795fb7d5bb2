/*
 * jsonschema/schema_gen.c - deterministic JSON instances of a JSON Schema
 * (schema_gen.h): the API, which runs the passes (schema_compile.c,
 * schema_size.c, schema_check.c; schema_int.h tells them), then
 * generation: it walks the nodes with a struct rng seeded from the seed,
 * builds a jansson value and dumps it compactly. Every loop is bounded
 * by the schema's size or by the limits of schema_gen.h; the work of one
 * generation is bounded by a byte budget. No I/O, no global state.
 */
#include "jsonschema/schema_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "jsonschema/schema_int.h"

#define T_SCALARS (T_ALL & ~(BIT(TY_OBJ) | BIT(TY_ARR)))
#define WEIGHT_CAP (1u << 20)          /* of a choice by distinct values */
#define WORK_SOFT (SCHEMA_GEN_MAX_OUT / 8)     /* then smallest */
#define WORK_MAX (4 * (uint64_t)SCHEMA_GEN_MAX_OUT)

/* Uniform in [0, n); n >= 1. */
static uint64_t
draw(struct rng *r, uint64_t n)
{
	uint64_t x, lim;

	if (n <= 1)
		return 0;
	if (n <= UINT32_MAX)
		return rng_bounded(r, (uint32_t)n);
	lim = UINT64_MAX - UINT64_MAX % n;
	do
		x = rng_next(r);
	while (x >= lim);
	return x % n;
}

/* ---- generation --------------------------------------------------------- */

/*
 * One generation. Its text is what json_dumpb(FLAGS) writes for the
 * value built; pos follows that text's length as it is built (each
 * scalar's dumped size, brackets, commas, keys), exactly, so that the
 * generation can stop once the text reaches cap: the containers then
 * close, and the text so far is a prefix of the whole instance's text,
 * at least cap bytes long (the same draws in the same order made it).
 * An item of a uniqueItems array is made whole (it is compared with the
 * others) and the cut waits until it is done.
 */
struct gen {
	struct ctx *c;
	struct rng r;
	uint64_t work;          /* bytes made, kept or not */
	uint64_t steps;         /* values tried, items scanned */
	size_t cap;             /* stop before a member once pos >= cap */
	size_t pos;             /* bytes of the text so far */
	unsigned nocut;         /* > 0: inside a uniqueItems item */
	int cut;                /* stopped at cap */
};

static int
spend(struct gen *g, uint64_t bytes)
{
	g->work += bytes;
	if (g->work <= WORK_MAX)
		return 0;
	schema_path_failat(g->c, TS_ELIMIT, "", "the instance would be over "
	    "%u bytes", SCHEMA_GEN_MAX_OUT);
	return -1;
}

/* n steps of the generation's budget (SCHEMA_GEN_MAX_STEPS): 0, or -1
 * once it is over (the error recorded). */
static int
gstep(struct gen *g, uint64_t n)
{
	g->steps += n;
	if (g->steps <= SCHEMA_GEN_MAX_STEPS)
		return 0;
	schema_path_failat(g->c, TS_ELIMIT, "", "generating the instance "
	    "takes more than %u steps, tokstream's limit",
	    SCHEMA_GEN_MAX_STEPS);
	return -1;
}

/* Whether to stop before the next member of a container: the text has
 * reached cap (not inside a uniqueItems item). */
static int
at_cap(struct gen *g)
{
	if (g->nocut > 0)
		return 0;
	if (g->pos >= g->cap)
		g->cut = 1;
	return g->cut;
}

/* Counts scalar v's dumped bytes into pos; v may be NULL (an error). */
static json_t *
put(struct gen *g, json_t *v)
{
	if (v != NULL)
		g->pos += json_dumpb(v, NULL, 0, FLAGS);
	return v;
}

/* The dumped bytes of an object key (len bytes), quotes included:
 * jansson's escapes (dump.c, dump_string). */
static size_t
key_bytes(const char *k, size_t len)
{
	size_t i, n = 2;

	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)k[i];

		n += ch == '"' || ch == '\\' || ch == '\b' || ch == '\f' ||
		    ch == '\n' || ch == '\r' || ch == '\t' ? 2 :
		    ch < 0x20 ? 6 : 1;
	}
	return n;
}

/* The weight of a choice for uniqueItems: its distinct values. */
static uint64_t
weight(uint64_t dcount, int known)
{
	if (!known || dcount == 0)
		return 1;
	return dcount > WEIGHT_CAP ? WEIGHT_CAP : dcount;
}

static json_t *
nomem(struct gen *g)
{
	schema_path_failat(g->c, TS_ENOMEM, "", "out of memory");
	return NULL;
}

static json_t *gen_node(struct gen *g, const struct node *n,
    unsigned depth, unsigned refs, int full);

static size_t
put_word(char *b, size_t len, struct rng *r)
{
	const char *w = schema_words[draw(r, NWORDS)];
	size_t n = strlen(w);

	memcpy(b + len, w, n);
	return len + n;
}

static json_t *
gen_format(struct gen *g, enum fmt f)
{
	static const char hex[] = "0123456789abcdef";
	struct rng *r = &g->r;
	char b[64];
	size_t len = 0;
	uint64_t x, y;
	int i, k;

	switch (f) {
	case F_DATETIME:
	case F_DATE:
		k = snprintf(b, sizeof(b), "%04d-%02d-%02d",
		    2020 + (int)draw(r, 10), 1 + (int)draw(r, 12),
		    1 + (int)draw(r, 28));
		if (f == F_DATETIME)
			k += snprintf(b + k, sizeof(b) - (size_t)k,
			    "T%02d:%02d:%02dZ", (int)draw(r, 24),
			    (int)draw(r, 60), (int)draw(r, 60));
		len = (size_t)k;
		break;
	case F_TIME:
		len = (size_t)snprintf(b, sizeof(b), "%02d:%02d:%02dZ",
		    (int)draw(r, 24), (int)draw(r, 60), (int)draw(r, 60));
		break;
	case F_UUID:
		x = rng_next(r);
		y = rng_next(r);
		for (i = 0; i < 32; i++) {
			int nib = (int)(((i < 16 ? x : y) >> (4 *
			    (i % 16))) & 15);

			if (i == 12)
				nib = 4;
			if (i == 16)
				nib = 8 | (nib & 3);
			if (i == 8 || i == 12 || i == 16 || i == 20)
				b[len++] = '-';
			b[len++] = hex[nib];
		}
		break;
	case F_EMAIL:
	case F_HOSTNAME:
		len = put_word(b, 0, r);
		b[len++] = f == F_EMAIL ? '.' : '-';
		len = put_word(b, len, r);
		memcpy(b + len, f == F_EMAIL ? "@example.com" :
		    ".example.com", 12);
		len += 12;
		break;
	case F_URI:
		memcpy(b, "https://example.com/", 20);
		len = put_word(b, 20, r);
		b[len++] = '/';
		len = put_word(b, len, r);
		break;
	default:
		len = (size_t)snprintf(b, sizeof(b), "%d.%d.%d.%d",
		    1 + (int)draw(r, 254), (int)draw(r, 256),
		    (int)draw(r, 256), 1 + (int)draw(r, 254));
		break;
	}
	if (spend(g, len + 2) < 0)
		return NULL;
	return json_stringn(b, len);
}

/* One to three words (one when small), cut or extended with more words
 * to fit minLength and maxLength. */
static json_t *
gen_str(struct gen *g, const struct node *n, int small)
{
	char b[SCHEMA_GEN_MAX_LENGTH + 64];
	size_t len = 0, nw, i, want, cut;
	json_t *v;

	if (n->fmt != F_NONE)
		return gen_format(g, n->fmt);
	nw = small ? 1 : 1 + (size_t)draw(&g->r, 3);
	for (i = 0; i < nw; i++) {
		if (i > 0)
			b[len++] = ' ';
		len = put_word(b, len, &g->r);
	}
	want = len < n->minl ? n->minl : len > n->maxl ? n->maxl : len;
	while (len < want) {
		b[len++] = ' ';
		len = put_word(b, len, &g->r);
	}
	/* cut at the end of a word when minLength allows */
	for (cut = want; cut > n->minl && cut < len && b[cut] != ' ';)
		cut--;
	if (cut < len && b[cut] == ' ' && cut >= n->minl && cut > 0)
		want = cut;
	len = want;
	if (len > 0 && b[len - 1] == ' ')
		b[len - 1] = 's';
	if (spend(g, len + 2) < 0)
		return NULL;
	v = json_stringn(b, len);
	return v != NULL ? v : nomem(g);
}

static json_t *
gen_int(struct gen *g, const struct node *n)
{
	const struct ispec *is = &n->is;
	int64_t k = is->good, x;
	int i;

	for (i = 0; i < 8; i++) {
		x = is->klo + (int64_t)draw(&g->r,
		    (uint64_t)(is->khi - is->klo) + 1);
		if (!is->verify ||
		    schema_num_mult_ok(&n->b, (double)(x * is->step))) {
			k = x;
			break;
		}
	}
	if (spend(g, 20) < 0)
		return NULL;
	return json_integer(k * is->step);
}

/* Whether jansson's %.17g prints n * m / p as its short decimal. */
static int
pretty(const struct dspec *d, int64_t n, double v)
{
	char want[48], got[48];
	int64_t a = n * d->m;
	int k;

	k = snprintf(want, sizeof(want), "%s%lld", a < 0 ? "-" : "",
	    (long long)((a < 0 ? -a : a) / d->p));
	if ((a < 0 ? -a : a) % d->p != 0) {
		k += snprintf(want + k, sizeof(want) - (size_t)k, ".%0*lld",
		    d->f, (long long)((a < 0 ? -a : a) % d->p));
		while (want[k - 1] == '0')
			want[--k] = '\0';
	}
	snprintf(got, sizeof(got), "%.17g", v);
	return strcmp(want, got) == 0;
}

/*
 * When no short decimal came up: an n whose n * m / 10^f is a multiple
 * of 2^-f (x.25, x.5 for f == 2), exact in binary, so that %.17g prints
 * it short; `pick` when the grid has none.
 */
static int64_t
dec_exact(struct gen *g, const struct node *n, int64_t pick)
{
	const struct dspec *d = &n->ds;
	int64_t q = 1, kl, kh, x;
	int i;

	for (i = 0; i < d->f; i++)
		q *= 5;
	q /= schema_num_gcd(d->m, q);
	kl = schema_num_ceil_div(d->nlo, q);
	kh = schema_num_floor_div(d->nhi, q);
	for (i = 0; i < 8 && kl <= kh; i++) {
		x = q * (kl + (int64_t)draw(&g->r, (uint64_t)(kh - kl) + 1));
		if (schema_num_mult_ok(&n->b, schema_num_dec_val(d, x)))
			return x;
	}
	return pick;
}

static json_t *
gen_dec(struct gen *g, const struct node *n)
{
	const struct dspec *d = &n->ds;
	int64_t pick = d->good, x, a;
	int i, found = 0;
	double v;

	if (spend(g, 24) < 0)
		return NULL;
	if (d->single)
		return json_real(d->value);
	for (i = 0; i < 16; i++) {
		x = d->nlo + (int64_t)draw(&g->r,
		    (uint64_t)(d->nhi - d->nlo) + 1);
		v = schema_num_dec_val(d, x);
		if (!schema_num_mult_ok(&n->b, v))
			continue;
		if (!found) {
			pick = x;
			found = 1;
		}
		if (pretty(d, x, v)) {
			pick = x;
			break;
		}
	}
	if (i == 16)
		pick = dec_exact(g, n, pick);
	a = pick * d->m;
	if (a % d->p == 0)
		return json_integer(a / d->p);
	return json_real(schema_num_dec_val(d, pick));
}

/*
 * An object: the required properties, each optional one that fits the
 * depth with probability 1/2 (d / (d + 1) for `full`, d its distinct
 * values; in a smallest instance none), then to
 * reach minProperties the cheapest ones (small_inc, which fit) and to
 * keep maxProperties the last ones dropped.
 */
static json_t *
gen_obj(struct gen *g, const struct node *n, unsigned depth,
    unsigned refs, int small, int full)
{
	unsigned char *inc;
	json_t *o, *v;
	size_t i, cnt = 0;

	if (depth >= SCHEMA_GEN_MAX_DEPTH) {
		schema_path_failat(g->c, TS_ELIMIT, n->path, "the instance "
		    "nests deeper than %d", SCHEMA_GEN_MAX_DEPTH);
		return NULL;
	}
	if (spend(g, 2) < 0 || gstep(g, 1 + n->nprops) < 0)
		return NULL;
	inc = xcalloc(n->nprops ? n->nprops : 1, 1);
	for (i = 0; i < n->nprops; i++) {
		const struct node *ch = n->props[i].n;

		if (n->props[i].required)
			inc[i] = 1;
		else if (!small && ch->cost != INF && depth + 1 +
		    ch->sdepth <= SCHEMA_GEN_MAX_DEPTH)
			inc[i] = (unsigned char)(draw(&g->r, full ?
			    1 + weight(ch->dcount, ch->dstate == 2) : 2) != 0);
		cnt += inc[i];
	}
	for (i = 0; i < n->nprops && cnt < n->minp; i++)
		if (!inc[i] && n->small_inc[i]) {
			inc[i] = 1;
			cnt++;
		}
	for (i = n->nprops; i-- > 0 && cnt > n->maxp;)
		if (inc[i] && !n->props[i].required) {
			inc[i] = 0;
			cnt--;
		}
	if ((o = json_object()) == NULL) {
		free(inc);
		return nomem(g);
	}
	g->pos++;               /* { */
	for (i = 0; i < n->nprops; i++) {
		if (!inc[i])
			continue;
		if (at_cap(g))
			break;
		g->pos += (json_object_size(o) > 0) + key_bytes(n->props[i].key,
		    n->props[i].len) + 1;
		v = gen_node(g, n->props[i].n, depth + 1, refs, full);
		if (v == NULL)
			goto fail;
		if (json_object_setn_new(o, n->props[i].key, n->props[i].len,
		    v) != 0) {
			nomem(g);
			goto fail;
		}
		if (spend(g, n->props[i].len + 4) < 0)
			goto fail;
	}
	g->pos++;               /* } */
	free(inc);
	return o;
fail:
	free(inc);
	json_decref(o);
	return NULL;
}

/* The items of a uniqueItems array so far: an open-addressing set of
 * their indices by schema_value_hash. */
struct uset {
	uint64_t *hash;         /* by item */
	size_t *slot;           /* item + 1, 0 empty */
	size_t mask;
};

/* Appends v (taking it) unless it equals an item already there; 1 when
 * appended, 0 when a repeat, -1 on error. */
static int
add_unique(struct gen *g, json_t *a, json_t *v, struct uset *u)
{
	size_t k = json_array_size(a), p;
	uint64_t h = schema_value_hash(v);

	for (p = (size_t)h & u->mask; u->slot[p] != 0;
	    p = (p + 1) & u->mask) {
		size_t i = u->slot[p] - 1;

		if (gstep(g, 1) < 0) {
			json_decref(v);
			return -1;
		}

		if (u->hash[i] == h &&
		    schema_value_same(json_array_get(a, i), v)) {
			json_decref(v);
			return 0;
		}
	}
	if (json_array_append_new(a, v) != 0) {
		nomem(g);
		return -1;
	}
	u->hash[k] = h;
	u->slot[p] = k + 1;
	return 1;
}

/*
 * A listed item of a uniqueItems array not taken yet: a few draws, then
 * a scan from a random place (its cost spent). NULL when all are taken
 * (or on error, with c->rc set).
 */
static json_t *
pick_listed(struct gen *g, const struct node *it, const json_t *a,
    const struct uset *u)
{
	size_t t, i, start;

	for (t = 0; t < UNIQUE_TRIES + it->ndom; t++) {
		const json_t *x;
		uint64_t h;
		size_t p;

		if (t < UNIQUE_TRIES) {
			i = (size_t)draw(&g->r, it->ndom);
		} else {
			if (t == UNIQUE_TRIES)
				start = (size_t)draw(&g->r, it->ndom);
			i = (start + t - UNIQUE_TRIES) % it->ndom;
			if (t % 16 == 0 && spend(g, 1) < 0)
				return NULL;
		}
		if (gstep(g, 1) < 0)
			return NULL;
		x = it->dom[i];
		h = schema_value_hash(x);
		for (p = (size_t)h & u->mask; u->slot[p] != 0;
		    p = (p + 1) & u->mask)
			if (gstep(g, 1) == 0 && u->hash[u->slot[p] - 1] == h &&
			    schema_value_same(json_array_get(a,
			    u->slot[p] - 1), x))
				break;
		if (u->slot[p] == 0)
			return json_deep_copy(x);
	}
	return NULL;
}

static json_t *
gen_arr(struct gen *g, const struct node *n, unsigned depth,
    unsigned refs, int small, int full)
{
	size_t lo = n->mini, base, top, len, i, t;
	struct uset u = { NULL, NULL, 0 };
	json_t *a, *v = NULL;
	int r, listed;

	if (depth >= SCHEMA_GEN_MAX_DEPTH) {
		schema_path_failat(g->c, TS_ELIMIT, n->path, "the instance "
		    "nests deeper than %d", SCHEMA_GEN_MAX_DEPTH);
		return NULL;
	}
	if (small)
		base = top = lo;
	else
		schema_size_arr_lengths(n, &base, &top);
	len = base + (size_t)draw(&g->r, top - base + 1);
	for (i = lo; i < len; i++)      /* items past minItems must fit */
		if (depth + 1 + schema_size_item(n, i)->sdepth >
		    SCHEMA_GEN_MAX_DEPTH)
			len = i;
	if (spend(g, 2 + len) < 0)
		return NULL;
	if ((a = json_array()) == NULL)
		return nomem(g);
	if (n->unique) {
		for (u.mask = 1; u.mask < 2 * len + 2; u.mask *= 2)
			;
		u.slot = xcalloc(u.mask, sizeof(*u.slot));
		u.hash = xcalloc(len ? len : 1, sizeof(*u.hash));
		u.mask--;
	}
	g->pos++;               /* [ */
	for (i = 0; i < len; i++) {
		const struct node *it = schema_size_item(n, i);
		size_t at;

		if (at_cap(g))
			break;
		if (gstep(g, 1) < 0)
			goto fail;
		g->pos += i > 0;        /* , */
		at = g->pos;
		if (!n->unique) {
			v = gen_node(g, it, depth + 1, refs, full);
			if (v == NULL)
				goto fail;
			if (json_array_append_new(a, v) != 0) {
				nomem(g);
				goto fail;
			}
			continue;
		}
		/* an item is made whole, compared, and counted in pos
		 * only when it is kept */
		r = 0;
		g->nocut++;
		listed = it->dom_state == DOM_LISTED && depth + 1 +
		    it->domdepth <= SCHEMA_GEN_MAX_DEPTH;
		if (listed) {
			if ((v = put(g, pick_listed(g, it, a, &u))) == NULL &&
			    g->c->rc != TS_OK)
				goto fail_item;
			if (v != NULL && spend(g, 8) < 0) {
				json_decref(v);
				goto fail_item;
			}
			if (v != NULL && (r = add_unique(g, a, v, &u)) < 0)
				goto fail_item;
		}
		for (t = 0; !listed && t < UNIQUE_TRIES && r == 0; t++) {
			g->pos = at;
			if ((v = gen_node(g, it, depth + 1, refs, 1)) == NULL)
				goto fail_item;
			if ((r = add_unique(g, a, v, &u)) < 0)
				goto fail_item;
		}
		g->nocut--;
		if (g->c->rc != TS_OK)
			goto fail;
		if (r == 0) {
			g->pos = at - (i > 0);
			if (i >= lo)
				break;
			schema_path_failat(g->c,
			    g->work > WORK_SOFT ? TS_ELIMIT : TS_EINVAL,
			    n->path, "\"uniqueItems\": could not make %zu "
			    "distinct items", lo);
			goto fail;
		}
	}
	g->pos++;               /* ] */
	free(u.hash);
	free(u.slot);
	return a;
fail_item:
	g->nocut--;
fail:
	free(u.hash);
	free(u.slot);
	json_decref(a);
	return NULL;
}

/* An index drawn with probability w[i] / (sum of w); -1 if all 0. */
static int
pick_weighted(struct gen *g, const uint64_t *w, size_t n, size_t *out)
{
	uint64_t sum = 0, x;
	size_t i;

	for (i = 0; i < n; i++)
		sum += w[i];
	if (sum == 0)
		return -1;
	x = draw(&g->r, sum);
	for (i = 0; i < n; i++) {
		if (x < w[i])
			break;
		x -= w[i];
	}
	*out = i;
	return 0;
}

/*
 * The type of a value: in a smallest instance the cheapest (any scalar
 * type when that is a scalar), else a random one with an instance that
 * fits the remaining depth; `full` weighs them by distinct values.
 */
static int
pick_type(struct gen *g, const struct node *n, unsigned depth, int fixed,
    int full)
{
	uint64_t w[TY_N];
	size_t k;
	int t;

	if (fixed && !(BIT(n->stype) & T_SCALARS))
		return n->stype;
	for (t = 0; t < TY_N; t++) {
		w[t] = 0;
		if (!(n->types & BIT(t)) || n->tcost[t] == INF)
			continue;
		if (fixed ? (BIT(t) & T_SCALARS) != 0 :
		    depth + n->tdepth[t] <= SCHEMA_GEN_MAX_DEPTH)
			w[t] = full ? weight(n->tcount[t], n->dstate == 2) :
			    1;
	}
	if (pick_weighted(g, w, TY_N, &k) < 0)
		return n->stype;
	return (int)k;
}

/* An anyOf branch: as pick_type. */
static size_t
pick_branch(struct gen *g, const struct node *n, unsigned depth, int fixed,
    int full)
{
	uint64_t *w;
	size_t i, k;

	if (fixed)
		return n->schoice;
	w = xcalloc(n->nbr, sizeof(*w));
	for (i = 0; i < n->nbr; i++)
		if (n->br[i]->cost != INF &&
		    depth + n->br[i]->sdepth <= SCHEMA_GEN_MAX_DEPTH)
			w[i] = full ? weight(n->br[i]->dcount,
			    n->br[i]->dstate == 2) : 1;
	if (pick_weighted(g, w, n->nbr, &k) < 0)
		k = n->schoice;
	free(w);
	return k;
}

/*
 * A value of n at `depth` containers and `refs` nested $refs: the
 * smallest instance's structure from SCHEMA_GEN_SOFT_DEPTH, REF_HOPS or
 * WORK_SOFT bytes on. `full` (the items of uniqueItems and what they
 * hold) ignores SCHEMA_GEN_SOFT_DEPTH and weighs choices by their
 * distinct values, so that items vary as dcount expects; every choice
 * still fits SCHEMA_GEN_MAX_DEPTH.
 */
static json_t *
gen_node(struct gen *g, const struct node *n, unsigned depth,
    unsigned refs, int full)
{
	int small = (!full && depth >= SCHEMA_GEN_SOFT_DEPTH) ||
	    refs >= REF_HOPS || g->work > WORK_SOFT;
	json_t *v;

	if (gstep(g, 1) < 0)
		return NULL;
	switch (n->kind) {
	case K_REF:
		return gen_node(g, n->ref, depth, refs + 1, full);
	case K_ANYOF:
		if (gstep(g, n->nbr) < 0)
			return NULL;
		return gen_node(g, n->br[pick_branch(g, n, depth, small,
		    full)], depth, refs, full);
	case K_PLAIN:
		break;
	default:
		schema_path_failat(g->c, TS_EINVAL, n->path, "the schema "
		    "false has no instance");
		return NULL;
	}
	if (n->nvals > 0) {
		size_t i = (size_t)draw(&g->r, n->nvals);

		if (spend(g, n->valsize[i]) < 0)
			return NULL;
		v = json_deep_copy(n->vals[i]);
		g->pos += n->valsize[i];
		return v != NULL ? v : nomem(g);
	}
	switch (pick_type(g, n, depth, small, full)) {
	case TY_NULL:
		return spend(g, 4) < 0 ? NULL : put(g, json_null());
	case TY_BOOL:
		return spend(g, 5) < 0 ? NULL :
		    put(g, json_boolean(rng_next(&g->r) >> 63));
	case TY_INT:
		v = put(g, gen_int(g, n));
		break;
	case TY_NUM:
		v = put(g, n->num_int ? gen_int(g, n) : gen_dec(g, n));
		break;
	case TY_STR:
		return put(g, gen_str(g, n, small));
	case TY_OBJ:
		return gen_obj(g, n, depth, refs, small, full);
	default:
		return gen_arr(g, n, depth, refs, small, full);
	}
	return v != NULL || g->c->rc != TS_OK ? v : nomem(g);
}

/* All passes, within max_steps; the root node, or NULL with c->rc and
 * c->msg set. */
static struct node *
prepare(struct ctx *c, const json_t *schema, uint64_t max_steps)
{
	struct node *root = schema_compile(c, schema, max_steps);

	if (root == NULL)
		return NULL;
	schema_size(c);
	if (c->rc == TS_OK)
		schema_check(c, root);
	return c->rc == TS_OK ? root : NULL;
}

/* ---- the API ------------------------------------------------------------ */

/* A compiled and checked schema (schema_gen.h). */
struct schema_gen {
	struct ctx c;
	struct node *root;
	json_t *schema;         /* a reference: the nodes borrow from it */
};

static void
copy_msg(const struct ctx *c, char *msg, size_t msglen)
{
	if (msg != NULL && msglen > 0)
		snprintf(msg, msglen, "%s", c->msg);
}

enum ts_err
schema_gen_compile(const json_t *schema, uint64_t *steps,
    struct schema_gen **out, char *msg, size_t msglen)
{
	struct schema_gen *sg = xcalloc(1, sizeof(*sg));
	enum ts_err rc;

	*out = NULL;
	sg->root = prepare(&sg->c, schema, *steps);
	*steps = sg->c.steps >= *steps ? 0 : *steps - sg->c.steps;
	rc = sg->c.rc;
	if (sg->root == NULL || rc != TS_OK) {
		if (rc == TS_OK)
			rc = TS_EINVAL;
		copy_msg(&sg->c, msg, msglen);
		schema_compile_free(&sg->c);
		free(sg);
		return rc;
	}
	sg->schema = json_incref((json_t *)schema);
	*out = sg;
	return TS_OK;
}

void
schema_gen_free(struct schema_gen *sg)
{
	if (sg == NULL)
		return;
	schema_compile_free(&sg->c);
	json_decref(sg->schema);
	free(sg);
}

enum ts_err
schema_gen_emit(struct schema_gen *sg, uint64_t seed, size_t cap,
    struct ts_buf *out, char *msg, size_t msglen)
{
	struct ctx *c = &sg->c;
	struct gen g;
	json_t *v = NULL;
	char *p = NULL;
	size_t n;
	enum ts_err rc;

	/* each generation starts clean: the passes left no error */
	c->rc = TS_OK;
	c->msg[0] = '\0';
	memset(&g, 0, sizeof(g));
	g.c = c;
	g.cap = cap;
	rng_seed(&g.r, seed);
	if ((v = gen_node(&g, sg->root, 0, 0, 0)) == NULL) {
		if (c->rc == TS_OK)
			schema_path_failat(c, TS_ENOMEM, "", "out of memory");
		goto out;
	}
	n = json_dumpb(v, NULL, 0, FLAGS);
	if (n == 0) {
		schema_path_failat(c, TS_ENOMEM, "", "out of memory");
		goto out;
	}
	if (n > SCHEMA_GEN_MAX_OUT) {
		schema_path_failat(c, TS_ELIMIT, "", "the instance is %zu "
		    "bytes, over the limit %u", n, SCHEMA_GEN_MAX_OUT);
		goto out;
	}
	if (n > out->max || out->len > out->max - n) {
		schema_path_failat(c, TS_ELIMIT, "", "the instance (%zu "
		    "bytes) does not fit the output buffer", n);
		goto out;
	}
	p = xmalloc(n);
	if (json_dumpb(v, p, n, FLAGS) != n) {
		schema_path_failat(c, TS_ENOMEM, "", "out of memory");
		goto out;
	}
	if (ts_buf_append(out, p, n) != TS_OK)
		schema_path_failat(c, TS_ELIMIT, "", "the output buffer is "
		    "full");
out:
	rc = c->rc;
	if (rc != TS_OK)
		copy_msg(c, msg, msglen);
	free(p);
	json_decref(v);
	return rc;
}

enum ts_err
schema_gen_check(const json_t *schema, char *msg, size_t msglen)
{
	uint64_t steps = SCHEMA_GEN_MAX_STEPS;
	struct schema_gen *sg;
	enum ts_err rc = schema_gen_compile(schema, &steps, &sg, msg, msglen);

	schema_gen_free(sg);
	return rc;
}

enum ts_err
schema_gen(const json_t *schema, uint64_t seed, struct ts_buf *out,
    char *msg, size_t msglen)
{
	uint64_t steps = SCHEMA_GEN_MAX_STEPS;
	struct schema_gen *sg;
	enum ts_err rc = schema_gen_compile(schema, &steps, &sg, msg, msglen);

	if (rc == TS_OK)
		rc = schema_gen_emit(sg, seed, SIZE_MAX, out, msg, msglen);
	schema_gen_free(sg);
	return rc;
}
