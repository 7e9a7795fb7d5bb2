/*
 * jsonschema/schema_gen.c - deterministic JSON instances of a JSON Schema
 * (schema_gen.h). Three passes over the schema, then generation:
 *   1. compile: every subschema reachable from the root (through $ref
 *      too) becomes a struct node, its keywords checked and parsed into
 *      ranges; unsupported keywords and local contradictions are refused
 *      here, naming the JSON pointer of the subschema;
 *   2. sizes: the smallest instance of every node (its cost, in estimated
 *      bytes, and its nesting depth) as a least fixed point over $ref
 *      cycles (Knuth, "A generalization of Dijkstra's algorithm", 1977:
 *      costs only fall from round to round and a node's cost is final
 *      once the nodes of its cheapest derivation are), so a recursion
 *      without a finite instance shows as an infinite cost;
 *   3. the checks that need sizes: limits, oneOf disjointness,
 *      uniqueItems.
 * Generation walks the nodes with a struct rng seeded from the seed,
 * builds a jansson value and dumps it compactly. Every loop is bounded
 * by the schema's size or by the limits of schema_gen.h; the work of one
 * generation is bounded by a byte budget. No I/O, no global state.
 */
#include "jsonschema/schema_gen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"

#if defined(__GNUC__)
#define ATTR_FMT(f, a) __attribute__((format(printf, f, a)))
#else
#define ATTR_FMT(f, a)
#endif

#define FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)
#define INF UINT64_MAX                 /* cost: no finite instance */
#define CAP (UINT64_C(1) << 62)        /* finite costs saturate here */
#define LARGE (UINT64_C(1) << 40)      /* distinct counts saturate here */
#define INT_LIMIT (INT64_C(1) << 53)   /* integers stay within +-2^53 */
#define NOLIMIT (SIZE_MAX >> 2)        /* an absent maxLength, ... */
#define REF_HOPS 8                     /* nested $refs before smallest */
#define SMALL_ROOM (SCHEMA_GEN_MAX_DEPTH - SCHEMA_GEN_SOFT_DEPTH)
#define PATH_BYTES 256
#define MSG_BYTES 256
#define PATH_SHOWN 64                  /* bytes of a path in a message */
#define MAX_DOMAIN 4096                /* values listed for uniqueItems */
#define DOM_DEPTH 8                    /* nesting of a listed value */
#define UNIQUE_TRIES 64                /* draws per distinct item */
#define WEIGHT_CAP (1u << 20)          /* of a choice by distinct values */
#define WORK_SOFT (SCHEMA_GEN_MAX_OUT / 8)     /* then smallest */
#define WORK_MAX (4 * (uint64_t)SCHEMA_GEN_MAX_OUT)
#define CHECK_WORK 4000000             /* comparisons of the oneOf check */
#define MAX_ROUNDS (2 * SCHEMA_GEN_MAX_REFS + 8)
#define SPAN 100                       /* unbounded numbers: 0..100 */

/* ---- the words, formats and keywords ----------------------------------- */

static const char *const words[] = {
	"alpha", "amber", "anchor", "apple", "arrow", "autumn", "basin",
	"beacon", "birch", "blue", "bridge", "brook", "cabin", "canyon",
	"cedar", "cloud", "coral", "crane", "delta", "dune", "ember",
	"fable", "falcon", "fern", "field", "flint", "forest", "frost",
	"garden", "glade", "granite", "harbor", "hazel", "island", "ivory",
	"jade", "juniper", "kettle", "lagoon", "lantern", "maple", "meadow",
	"mint", "moss", "north", "oak", "ocean", "olive", "orbit", "pebble",
	"pine", "prairie", "quartz", "raven", "river", "saffron", "sage",
	"shore", "spruce", "stone", "summit", "tide", "valley", "willow",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

enum fmt {
	F_NONE,
	F_DATETIME,     /* 2024-03-15T12:34:56Z */
	F_DATE,         /* 2024-03-15 */
	F_TIME,         /* 12:34:56Z */
	F_EMAIL,        /* word.word@example.com */
	F_UUID,         /* version 4, lowercase */
	F_URI,          /* https://example.com/word/word */
	F_IPV4,         /* 10.1.2.3 */
	F_HOSTNAME      /* word-word.example.com */
};

static const struct {
	const char *name;
	enum fmt f;
} str_formats[] = {
	{ "date-time", F_DATETIME }, { "date", F_DATE }, { "time", F_TIME },
	{ "email", F_EMAIL }, { "uuid", F_UUID }, { "uri", F_URI },
	{ "uri-reference", F_URI }, { "url", F_URI }, { "ipv4", F_IPV4 },
	{ "hostname", F_HOSTNAME },
};

enum numfmt { NF_NONE, NF_INT32, NF_INT64, NF_FLOAT };

/* JSON types as the generator sees them; TY_INT is a JSON integer. */
enum { TY_NULL, TY_BOOL, TY_INT, TY_NUM, TY_STR, TY_OBJ, TY_ARR, TY_N };
#define BIT(t) (1u << (t))
#define T_ALL (BIT(TY_N) - 1)
#define T_NUMS (BIT(TY_INT) | BIT(TY_NUM))
#define T_SCALARS (T_ALL & ~(BIT(TY_OBJ) | BIT(TY_ARR)))
#define T_ANY (BIT(TY_STR) | BIT(TY_INT) | BIT(TY_BOOL))

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

/* ---- compiled schemas --------------------------------------------------- */

enum { DOM_UNKNOWN, DOM_LISTED, DOM_NO, DOM_BUSY };

enum nkind {
	K_NEVER,        /* false: no instance */
	K_PLAIN,        /* types with their keywords, or enum/const */
	K_REF,          /* $ref */
	K_ANYOF         /* anyOf, or a checked oneOf */
};

struct node;

struct costidx {                /* a sort key and an index */
	uint64_t cost;
	size_t i;
};

struct prop {
	const char *key;        /* borrowed from the schema */
	size_t len;
	struct node *n;
	int required;
};

/* Numeric keywords as given (multipleOf == m / p, p == 10^f). */
struct bounds {
	int has_lo, lo_excl, has_hi, hi_excl;
	double lo, hi;
	double mult;            /* 0: no multipleOf */
	int64_t m, p;
	int f;
	int int32;              /* format int32 */
	int beyond;             /* a lower bound above 2^53 or an upper one
				 * below -2^53, given as a JSON integer that
				 * a double does not hold exactly: nothing
				 * within +-2^53 meets it */
};

/* Integers k * step, k in [klo, khi]. */
struct ispec {
	int64_t klo, khi, step;
	int verify;             /* a fractional multipleOf: check v / mult */
	int64_t good;           /* a k that passes */
};

/* Decimals n * m / p, n in [nlo, nhi]; or one value. */
struct dspec {
	int64_t nlo, nhi, m, p;
	int f;
	int single;
	double value;           /* when single */
	int64_t good;           /* an n that passes multipleOf */
};

struct node {
	enum nkind kind;
	char *path;             /* JSON pointer, for messages */
	unsigned types;         /* TY_ bits the generator may produce */
	unsigned accept;        /* TY_ bits a validator accepts */
	/* enum, const */
	const json_t **vals;    /* borrowed from the schema */
	size_t *valsize;        /* their compact sizes */
	size_t nvals;
	unsigned valdepth;      /* nesting of the deepest value */
	/* $ref */
	size_t target;
	struct node *ref;
	/* anyOf, oneOf */
	struct node **br;
	size_t nbr;
	int oneof;
	/* objects: declared properties, then undeclared required ones */
	struct prop *props;
	size_t nprops, minp, maxp;
	int addl_false;
	unsigned char *small_inc;       /* optional ones in the smallest */
	/* arrays */
	struct node **prefix;
	size_t nprefix;
	struct node *rest;      /* NULL: no items after the prefix */
	int rest_explicit;
	size_t mini, maxi, lencap;
	int unique;
	/* strings */
	size_t minl, maxl;
	enum fmt fmt;
	/* numbers */
	struct bounds b;
	struct ispec is;        /* TY_INT; TY_NUM when num_int */
	struct dspec ds;        /* TY_NUM otherwise */
	int num_int;
	/* pass 2: the smallest instance */
	uint64_t cost, tcost[TY_N];
	unsigned sdepth, tdepth[TY_N];
	int stype;              /* its type */
	size_t schoice;         /* its anyOf branch */
	/* pass 3 */
	unsigned gt, at;        /* gen_types, accept_types */
	struct costidx *vidx;   /* vals by value_hash, for oneOf */
	uint64_t dcount, tcount[TY_N];
	int dstate;             /* 0 unknown, 1 computing, 2 known */
	json_t **dom;           /* every value, for uniqueItems (owned) */
	size_t ndom;
	unsigned domdepth;      /* nesting of the deepest */
	int dom_state;          /* DOM_ */
	int mark;
};

struct target {
	const json_t *json;
	struct node *node;
	char *path;
};

struct ctx {
	const json_t *root;
	struct node **all;      /* every node, parents before children */
	size_t nall, capall;
	struct target t[SCHEMA_GEN_MAX_REFS + 1];       /* [0]: the root */
	size_t nt;
	struct node *any;       /* {} */
	char path[PATH_BYTES];
	size_t plen;
	unsigned pover;         /* segments that did not fit */
	uint64_t work;
	enum ts_err rc;
	char msg[MSG_BYTES];
};

struct part {                   /* an object schema of an allOf */
	const json_t *s;
	char *path;
};

struct view {
	struct part *parts;
	size_t nparts, cap;
	int typed;
};

/* ---- errors and paths --------------------------------------------------- */

static void
path_text(const struct ctx *c, char *out, size_t size)
{
	snprintf(out, size, "%s%s", c->plen ? c->path : "",
	    c->pover ? "/..." : "");
}

static void vfailat(struct ctx *c, enum ts_err rc, const char *path,
    const char *fmt, va_list ap) ATTR_FMT(4, 0);

/*
 * Keeps the first error: "schema at PATH: TEXT". A path over PATH_SHOWN
 * bytes shows as "..." and its last segments, so that the keyword fits
 * the callers' 200-byte messages.
 */
static void
vfailat(struct ctx *c, enum ts_err rc, const char *path, const char *fmt,
    va_list ap)
{
	size_t len = strlen(path);
	const char *tail = path, *cut;
	int k;

	if (c->rc != TS_OK)
		return;
	c->rc = rc;
	if (len > PATH_SHOWN) {
		tail = path + len - (PATH_SHOWN - 3);
		if ((cut = strchr(tail, '/')) != NULL)
			tail = cut;
	}
	k = snprintf(c->msg, sizeof(c->msg), "schema at %s%s: ",
	    tail != path ? "..." : "", path[0] != '\0' ? tail : "(root)");
	if (k < 0 || (size_t)k >= sizeof(c->msg))
		return;
	vsnprintf(c->msg + k, sizeof(c->msg) - (size_t)k, fmt, ap);
}

static void failat(struct ctx *c, enum ts_err rc, const char *path,
    const char *fmt, ...) ATTR_FMT(4, 5);

static void
failat(struct ctx *c, enum ts_err rc, const char *path, const char *fmt,
    ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfailat(c, rc, path, fmt, ap);
	va_end(ap);
}

static void fail(struct ctx *c, enum ts_err rc, const char *fmt, ...)
    ATTR_FMT(3, 4);

/* An error at the subschema being compiled. */
static void
fail(struct ctx *c, enum ts_err rc, const char *fmt, ...)
{
	char p[PATH_BYTES + 8];
	va_list ap;

	path_text(c, p, sizeof(p));
	va_start(ap, fmt);
	vfailat(c, rc, p, fmt, ap);
	va_end(ap);
}

/* Appends "/seg" with JSON pointer escapes (RFC 6901 section 3); returns
 * what path_pop needs. A segment that does not fit is counted instead. */
static size_t
path_push(struct ctx *c, const char *seg, size_t len)
{
	size_t old = c->plen, need = 1, i;

	for (i = 0; i < len; i++)
		need += (seg[i] == '~' || seg[i] == '/') ? 2 : 1;
	if (c->pover > 0 || c->plen + need + 8 > sizeof(c->path)) {
		c->pover++;
		return SIZE_MAX;
	}
	c->path[c->plen++] = '/';
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)seg[i];

		if (ch == '~' || ch == '/') {
			c->path[c->plen++] = '~';
			c->path[c->plen++] = ch == '~' ? '0' : '1';
		} else {
			c->path[c->plen++] = ch < 0x20 ? '?' : (char)ch;
		}
	}
	c->path[c->plen] = '\0';
	return old;
}

static size_t
path_push_str(struct ctx *c, const char *seg)
{
	return path_push(c, seg, strlen(seg));
}

static size_t
path_push_index(struct ctx *c, size_t i)
{
	char b[24];

	snprintf(b, sizeof(b), "%zu", i);
	return path_push_str(c, b);
}

static void
path_pop(struct ctx *c, size_t old)
{
	if (old == SIZE_MAX) {
		c->pover--;
		return;
	}
	c->plen = old;
	c->path[old] = '\0';
}

struct psave {
	char p[PATH_BYTES];
	size_t len;
	unsigned over;
};

static void
path_save(const struct ctx *c, struct psave *s)
{
	memcpy(s->p, c->path, c->plen + 1);
	s->len = c->plen;
	s->over = c->pover;
}

static void
path_restore(struct ctx *c, const struct psave *s)
{
	memcpy(c->path, s->p, s->len + 1);
	c->plen = s->len;
	c->pover = s->over;
}

/* Sets the path to p, a path_text of another place (its "/..." of
 * segments that did not fit becomes a count again). */
static void
path_load(struct ctx *c, const char *p)
{
	size_t len = strlen(p);
	unsigned over = 0;

	if (len >= 4 && strcmp(p + len - 4, "/...") == 0) {
		len -= 4;
		over = 1;
	}
	while (len > sizeof(c->path) - 16) {
		while (len > 0 && p[--len] != '/')
			;
		over = 1;
	}
	memcpy(c->path, p, len);
	c->path[len] = '\0';
	c->plen = len;
	c->pover = over;
}

static char *
path_copy(const struct ctx *c)
{
	char p[PATH_BYTES + 8];

	path_text(c, p, sizeof(p));
	return xstrndup(p, strlen(p));
}

/* ---- small helpers ------------------------------------------------------ */

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	if (a == INF || b == INF)
		return INF;
	return a + b > CAP ? CAP : a + b;
}

static uint64_t
sat_mul(uint64_t a, uint64_t b, uint64_t cap)
{
	if (a == 0 || b == 0)
		return 0;
	if (a > cap / b)
		return cap;
	return a * b > cap ? cap : a * b;
}

static size_t
zmin(size_t a, size_t b)
{
	return a < b ? a : b;
}

static size_t
zmax(size_t a, size_t b)
{
	return a > b ? a : b;
}

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

static void
word_lens(size_t *lo, size_t *hi)
{
	size_t i, n;

	*lo = SIZE_MAX;
	*hi = 0;
	for (i = 0; i < NWORDS; i++) {
		n = strlen(words[i]);
		*lo = zmin(*lo, n);
		*hi = zmax(*hi, n);
	}
}

/* Lengths every value of a string format has. */
static void
format_lens(enum fmt f, size_t *lo, size_t *hi)
{
	size_t wlo, whi;

	word_lens(&wlo, &whi);
	switch (f) {
	case F_DATETIME:
		*lo = *hi = 20;
		break;
	case F_DATE:
		*lo = *hi = 10;
		break;
	case F_TIME:
		*lo = *hi = 9;
		break;
	case F_UUID:
		*lo = *hi = 36;
		break;
	case F_EMAIL:           /* w.w@example.com */
	case F_HOSTNAME:        /* w-w.example.com */
		*lo = 2 * wlo + 13;
		*hi = 2 * whi + 13;
		break;
	case F_URI:             /* https://example.com/w/w */
		*lo = 2 * wlo + 21;
		*hi = 2 * whi + 21;
		break;
	case F_IPV4:
		*lo = 7;
		*hi = 15;
		break;
	default:
		*lo = 0;
		*hi = 0;
		break;
	}
}

/* The generator's type of a JSON value. */
static int
vtype(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
		return TY_NULL;
	case JSON_TRUE:
	case JSON_FALSE:
		return TY_BOOL;
	case JSON_INTEGER:
		return TY_INT;
	case JSON_REAL:
		return TY_NUM;
	case JSON_STRING:
		return TY_STR;
	case JSON_OBJECT:
		return TY_OBJ;
	default:
		return TY_ARR;
	}
}

/* Integer and number overlap for a validator (1 is a number, 1.0 an
 * integer), so oneOf compares them as one. */
static unsigned
norm(unsigned m)
{
	return (m & T_NUMS) ? (m | T_NUMS) : m;
}

static int
is_integral(double d)
{
	return d > -9.2e18 && d < 9.2e18 && (double)(int64_t)d == d;
}

/* Equality as JSON Schema's enum, const and uniqueItems define it:
 * numbers by value, objects regardless of key order. */
static int
same_value(const json_t *a, const json_t *b)
{
	const char *k;
	size_t klen, i;
	json_t *v;

	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		    memcmp(json_string_value(a), json_string_value(b),
		    json_string_length(a)) == 0;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (i = 0; i < json_array_size(a); i++)
			if (!same_value(json_array_get(a, i),
			    json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_keylen_foreach((json_t *)a, k, klen, v) {
			const json_t *w = json_object_getn(b, k, klen);

			if (w == NULL || !same_value(v, w))
				return 0;
		}
		return 1;
	default:
		return 1;
	}
}

/* A hash consistent with same_value. */
static uint64_t
value_hash(const json_t *v)
{
	const char *k;
	size_t klen, i;
	json_t *e;
	uint64_t h, bits;
	double d;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
	case JSON_REAL:
		d = json_number_value(v);
		if (d == 0)
			d = 0;  /* -0 == 0 */
		memcpy(&bits, &d, sizeof(bits));
		return rng_mix64(bits ^ 0x51);
	case JSON_STRING:
		return rng_fnv1a(RNG_FNV1A_INIT, json_string_value(v),
		    json_string_length(v));
	case JSON_ARRAY:
		h = 0x52;
		for (i = 0; i < json_array_size(v); i++)
			h = rng_mix64(h + value_hash(json_array_get(v, i)));
		return h;
	case JSON_OBJECT:
		h = 0x53;
		json_object_keylen_foreach((json_t *)v, k, klen, e)
			h += rng_mix64(rng_fnv1a(RNG_FNV1A_INIT, k, klen) ^
			    value_hash(e));
		return rng_mix64(h);
	default:
		return rng_mix64((uint64_t)json_typeof(v) + 0x54);
	}
}

static unsigned
value_depth(const json_t *v)
{
	const char *k;
	size_t i;
	json_t *e;
	unsigned d = 0, x;

	if (json_is_array(v)) {
		for (i = 0; i < json_array_size(v); i++)
			if ((x = value_depth(json_array_get(v, i))) > d)
				d = x;
		return d + 1;
	}
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, e)
			if ((x = value_depth(e)) > d)
				d = x;
		return d + 1;
	}
	return 0;
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

/* ---- numbers ------------------------------------------------------------ */

static int
lo_ok(const struct bounds *b, double v)
{
	return !b->has_lo || (b->lo_excl ? v > b->lo : v >= b->lo);
}

static int
hi_ok(const struct bounds *b, double v)
{
	return !b->has_hi || (b->hi_excl ? v < b->hi : v <= b->hi);
}

/* multipleOf as ajv and python-jsonschema test it: v / mult is an
 * integer in IEEE double. */
static int
mult_ok(const struct bounds *b, double v)
{
	return b->mult == 0 || is_integral(v / b->mult);
}

static int
num_ok(const struct bounds *b, double v)
{
	return lo_ok(b, v) && hi_ok(b, v) && mult_ok(b, v);
}

/* multipleOf as m / 10^f with f <= 9: the shortest such decimal whose
 * nearest double is the keyword's value. */
static int
decimal_of(const json_t *v, int64_t *m, int64_t *p, int *f)
{
	double x, y;
	int64_t k, q = 1;
	int i;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 1 ||
		    json_integer_value(v) > INT_LIMIT)
			return 0;
		*m = json_integer_value(v);
		*p = 1;
		*f = 0;
		return 1;
	}
	x = json_real_value(v);
	for (i = 0; i <= 9; i++, q *= 10) {
		y = x * (double)q;
		if (y >= (double)INT_LIMIT)
			return 0;
		k = (int64_t)(y + 0.5);
		if (k >= 1 && (double)k / (double)q == x) {
			*m = k;
			*p = q;
			*f = i;
			return 1;
		}
	}
	return 0;
}

static int64_t
ceil_div(int64_t a, int64_t s)
{
	int64_t q = a / s;

	return (a % s != 0 && a > 0) ? q + 1 : q;
}

static int64_t
floor_div(int64_t a, int64_t s)
{
	int64_t q = a / s;

	return (a % s != 0 && a < 0) ? q - 1 : q;
}

static int64_t
gcd64(int64_t a, int64_t b)
{
	while (b != 0) {
		int64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* The smallest integer above the lower bound x, |x| <= 2^53. */
static int64_t
ceil_bound(double x, int excl)
{
	int64_t t = (int64_t)x;

	if ((double)t < x)
		t++;
	if (excl && (double)t == x)
		t++;
	return t;
}

static int64_t
floor_bound(double x, int excl)
{
	int64_t t = (int64_t)x;

	if ((double)t > x)
		t--;
	if (excl && (double)t == x)
		t--;
	return t;
}

static int get_bounds(struct ctx *c, const json_t *s, struct bounds *b);

/*
 * The integers a schema allows, as k * step: bounds clamped to +-2^53
 * (int32 range for format int32); an unbounded side stays within SPAN of
 * the other (0..100 when both are open). 0, or -1 after fail().
 */
static int
int_spec(struct ctx *c, const struct bounds *b, struct ispec *is)
{
	int64_t lim_lo = -INT_LIMIT, lim_hi = INT_LIMIT, lo = 0, hi = 0;
	int64_t s = 1, w, kl = 0, kh = 0, k, n;

	if (b->int32) {
		lim_lo = INT32_MIN;
		lim_hi = INT32_MAX;
	}
	if (b->beyond)
		goto empty;
	if (b->has_lo) {
		if (b->lo > (double)lim_hi)
			goto empty;
		lo = b->lo < (double)lim_lo ? lim_lo :
		    ceil_bound(b->lo, b->lo_excl);
	}
	if (b->has_hi) {
		if (b->hi < (double)lim_lo)
			goto empty;
		hi = b->hi > (double)lim_hi ? lim_hi :
		    floor_bound(b->hi, b->hi_excl);
	}
	is->verify = 0;
	if (b->mult > 0) {
		if (b->f == 0) {
			s = b->m;
		} else {
			s = b->m / gcd64(b->m, b->p);
			is->verify = 1;
		}
	}
	w = SPAN / s;
	if (b->has_lo)
		kl = ceil_div(lo, s);
	if (b->has_hi)
		kh = floor_div(hi, s);
	if (!b->has_lo && !b->has_hi) {
		kl = 0;
		kh = w;
	} else if (!b->has_hi) {
		kh = kl + (w < 1 ? 1 : w);
	} else if (!b->has_lo) {
		kl = kh - (w < 1 ? 1 : w);
		if (kh >= 0 && kl < 0)
			kl = 0;
	}
	if (kl < ceil_div(lim_lo, s))
		kl = ceil_div(lim_lo, s);
	if (kh > floor_div(lim_hi, s))
		kh = floor_div(lim_hi, s);
	if (kl > kh)
		goto empty;
	is->klo = kl;
	is->khi = kh;
	is->step = s;
	is->good = kl;
	if (!is->verify)
		return 0;
	for (n = 0; n < 64; n++) {
		k = (n % 2 == 0) ? kl + n / 2 : kh - n / 2;
		if (k >= kl && k <= kh && mult_ok(b, (double)(k * s))) {
			is->good = k;
			return 0;
		}
	}
	fail(c, TS_EINVAL, "no integer in range is a \"multipleOf\" %.17g "
	    "in IEEE division", b->mult);
	return -1;
empty:
	fail(c, TS_EINVAL, "no integer within +-2^53 satisfies \"minimum\", "
	    "\"maximum\" and \"multipleOf\"");
	return -1;
}

static double
dec_val(const struct dspec *d, int64_t n)
{
	return (double)(n * d->m) / (double)d->p;
}

/* The grid n * m / p within the bounds; 1 when it is not empty. */
static int
dec_try(const struct bounds *b, int64_t m, int64_t p, int f,
    struct dspec *d)
{
	int64_t nmax = INT_LIMIT / m, w = SPAN * p / m, nl = 0, nh = 0, x;
	double a;
	int i;

	d->m = m;
	d->p = p;
	d->f = f;
	d->single = 0;
	if (w < 1)
		w = 1;
	if (b->has_lo) {
		a = b->lo * (double)p / (double)m;
		if (a > (double)nmax)
			return 0;
		if (a < -(double)nmax) {
			nl = -nmax;
		} else {
			nl = (int64_t)a;
			for (i = 0; i < 16 && nl > -nmax &&
			    lo_ok(b, dec_val(d, nl - 1)); i++)
				nl--;
			for (i = 0; i < 16 && nl <= nmax &&
			    !lo_ok(b, dec_val(d, nl)); i++)
				nl++;
			if (!lo_ok(b, dec_val(d, nl)))
				return 0;
		}
	}
	if (b->has_hi) {
		a = b->hi * (double)p / (double)m;
		if (a < -(double)nmax)
			return 0;
		if (a > (double)nmax) {
			nh = nmax;
		} else {
			nh = (int64_t)a;
			for (i = 0; i < 16 && nh < nmax &&
			    hi_ok(b, dec_val(d, nh + 1)); i++)
				nh++;
			for (i = 0; i < 16 && nh >= -nmax &&
			    !hi_ok(b, dec_val(d, nh)); i++)
				nh--;
			if (!hi_ok(b, dec_val(d, nh)))
				return 0;
		}
	}
	if (!b->has_lo && !b->has_hi) {
		nl = 0;
		nh = SPAN * p / m;
	} else if (!b->has_hi) {
		nh = nl + w;
	} else if (!b->has_lo) {
		nl = nh - w;
		if (nh >= 0 && nl < 0)
			nl = 0;
	}
	if (nl < -nmax)
		nl = -nmax;
	if (nh > nmax)
		nh = nmax;
	if (nl > nh)
		return 0;
	d->nlo = nl;
	d->nhi = nh;
	d->good = nl;
	if (b->mult == 0)
		return 1;
	for (i = 0; i < 64; i++) {
		x = (i % 2 == 0) ? nl + i / 2 : nh - i / 2;
		if (x >= nl && x <= nh && mult_ok(b, dec_val(d, x))) {
			d->good = x;
			return 1;
		}
	}
	return 0;
}

/*
 * The numbers a schema allows: a multipleOf grid, or the first of the
 * grids 0.01, 0.1, 1, 0.001 ... 1e-9 that meets the bounds, or one
 * bound itself. 0, or -1 after fail().
 */
static int
dec_spec(struct ctx *c, const struct bounds *b, struct dspec *d)
{
	static const int order[] = { 2, 1, 0, 3, 4, 5, 6, 7, 8, 9 };
	int64_t p;
	size_t i;
	int j;
	double mid;

	if (b->beyond) {
		fail(c, TS_EINVAL, "no number within +-2^53 satisfies "
		    "\"minimum\" and \"maximum\"");
		return -1;
	}
	if (b->mult > 0) {
		if (dec_try(b, b->m, b->p, b->f, d))
			return 0;
		fail(c, TS_EINVAL, "no number within +-2^53 satisfies "
		    "\"minimum\", \"maximum\" and \"multipleOf\"");
		return -1;
	}
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		for (p = 1, j = 0; j < order[i]; j++)
			p *= 10;
		if (dec_try(b, 1, p, order[i], d))
			return 0;
	}
	d->single = 1;
	if (b->has_lo && !b->lo_excl && hi_ok(b, b->lo)) {
		d->value = b->lo;
		return 0;
	}
	if (b->has_hi && !b->hi_excl && lo_ok(b, b->hi)) {
		d->value = b->hi;
		return 0;
	}
	if (b->has_lo && b->has_hi) {
		mid = b->lo / 2 + b->hi / 2;
		if (lo_ok(b, mid) && hi_ok(b, mid)) {
			d->value = mid;
			return 0;
		}
	}
	fail(c, TS_EINVAL, "no number satisfies \"minimum\" and \"maximum\"");
	return -1;
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
	n->path = path_copy(c);
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
 * -1 after fail() when malformed.
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
		if (d >= 0 && is_integral(d)) {
			*out = d > (double)NOLIMIT ? NOLIMIT : (size_t)d;
			return 1;
		}
	}
	fail(c, TS_EINVAL, "\"%s\" must be a non-negative integer", key);
	return -1;
}

/* minimum, maximum, exclusive* (numbers, or draft-04 booleans), and
 * multipleOf. 0, or -1 after fail(). */
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
			fail(c, TS_EINVAL, "\"exclusiveMinimum\" must be a "
			    "number or a boolean");
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
			fail(c, TS_EINVAL, "\"exclusiveMaximum\" must be a "
			    "number or a boolean");
			return -1;
		}
	}
	if ((v = json_object_get(s, "multipleOf")) != NULL) {
		if (!json_is_number(v) || !(json_number_value(v) > 0)) {
			fail(c, TS_EINVAL, "\"multipleOf\" must be a number "
			    "greater than 0");
			return -1;
		}
		if (!decimal_of(v, &b->m, &b->p, &b->f)) {
			fail(c, TS_EINVAL, "\"multipleOf\" %.17g is not "
			    "supported (a decimal with at most 9 fractional "
			    "digits, at most 2^53)", json_number_value(v));
			return -1;
		}
		b->mult = json_number_value(v);
	}
	return 0;
bad_min:
	fail(c, TS_EINVAL, "\"minimum\" must be a number");
	return -1;
bad_max:
	fail(c, TS_EINVAL, "\"maximum\" must be a number");
	return -1;
}

/* "type": a name or a non-empty array of names. 0, or -1 after fail(). */
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
		fail(c, TS_EINVAL, "\"type\" must be a type name or a "
		    "non-empty array of them");
		return -1;
	}
	for (i = 0; i < n; i++) {
		e = json_is_string(v) ? v : json_array_get(v, i);
		if (!json_is_string(e))
			goto bad;
		for (k = 0; k < TY_N; k++)
			if (strcmp(json_string_value(e), type_names[k]) == 0)
				break;
		if (k == TY_N) {
			fail(c, TS_EINVAL, "unknown \"type\" \"%.64s\"",
			    json_string_value(e));
			return -1;
		}
		*mask |= BIT(k);
	}
	return 0;
bad:
	fail(c, TS_EINVAL, "\"type\" must be a type name or a non-empty "
	    "array of them");
	return -1;
}

/* ---- compile: schemas --------------------------------------------------- */

static struct node *compile(struct ctx *c, const json_t *s, unsigned depth);

/*
 * A $ref to "#", "#/$defs/NAME" or "#/definitions/NAME" (NAME with the
 * escapes of RFC 6901 and percent-encoding of RFC 3986): the target and,
 * in tpath, its JSON pointer. NULL after fail().
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
		fail(c, TS_EINVAL, "\"$ref\" must be a string");
		return NULL;
	}
	r = json_string_value(v);
	len = json_string_length(v);
	show = len > 64 ? 64 : (int)len;
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
		fail(c, TS_EINVAL, "\"$ref\" \"%.*s\" names no definition",
		    show, r);
		return NULL;
	}
	{
		struct psave s;

		path_save(c, &s);
		path_load(c, "");
		path_push_str(c, dkey);
		path_push(c, name, nlen);
		path_text(c, tpath, tsize);
		path_restore(c, &s);
	}
	return t;
unsupported:
	fail(c, TS_EINVAL, "\"$ref\" \"%.*s\" is not supported (only \"#\", "
	    "\"#/$defs/NAME\" and \"#/definitions/NAME\")", show, r);
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
			fail(c, TS_ELIMIT, "more than %d distinct \"$ref\" "
			    "targets", SCHEMA_GEN_MAX_REFS);
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
		fail(c, TS_EINVAL, "\"%s\" must be a non-empty array", key);
		return NULL;
	}
	n = new_node(c, K_ANYOF);
	n->oneof = oneof;
	n->nbr = json_array_size(a);
	n->br = xcalloc(n->nbr, sizeof(*n->br));
	for (i = 0; i < n->nbr; i++) {
		old = path_push_str(c, key);
		k = path_push_index(c, i);
		n->br[i] = compile(c, json_array_get(a, i), depth + 1);
		path_pop(c, k);
		path_pop(c, old);
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
	vw->parts[vw->nparts].path = path_copy(c);
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
 * may appear. 0, or -1 after fail().
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
		fail(c, TS_ELIMIT, "subschemas nest deeper than %d",
		    SCHEMA_GEN_MAX_SCHEMA_DEPTH);
		return -1;
	}
	if (json_is_true(s))
		return 0;
	if (!json_is_object(s)) {
		fail(c, TS_EINVAL, "an \"allOf\" part must be an object "
		    "schema");
		return -1;
	}
	json_object_foreach((json_t *)s, key, v) {
		switch (kw_of(key)) {
		case KW_REFUSED:
			fail(c, TS_EINVAL, "\"%s\" is not supported", key);
			return -1;
		case KW_REF:
			ref = v;
			break;
		case KW_ALLOF:
			sub = v;
			break;
		case KW_TYPE:
			if (!type_is_object(v)) {
				fail(c, TS_EINVAL, "\"allOf\" is supported "
				    "only for object schemas");
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
			fail(c, TS_EINVAL, "\"%s\" in an \"allOf\" is not "
			    "supported (allOf merges object schemas only)",
			    key);
			return -1;
		}
	}
	if (ref != NULL) {
		char tpath[PATH_BYTES + 8];
		struct psave ps;

		if (has || sub != NULL) {
			fail(c, TS_EINVAL, "\"$ref\" beside other keywords "
			    "is not supported");
			return -1;
		}
		if (hops >= REF_HOPS) {
			fail(c, TS_ELIMIT, "\"allOf\" follows more than %d "
			    "nested \"$ref\"", REF_HOPS);
			return -1;
		}
		if ((t = resolve_ref(c, ref, tpath, sizeof(tpath))) == NULL)
			return -1;
		path_save(c, &ps);
		path_load(c, tpath);
		r = flatten(c, t, hops + 1, depth + 1, vw);
		path_restore(c, &ps);
		return r;
	}
	if (has)
		view_add(c, vw, s);
	if (sub == NULL)
		return 0;
	if (!json_is_array(sub) || json_array_size(sub) == 0) {
		fail(c, TS_EINVAL, "\"allOf\" must be a non-empty array");
		return -1;
	}
	for (i = 0; i < json_array_size(sub); i++) {
		a = path_push_str(c, "allOf");
		b = path_push_index(c, i);
		r = flatten(c, json_array_get(sub, i), hops, depth + 1, vw);
		path_pop(c, b);
		path_pop(c, a);
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
 * true must declare every name of the other parts. 0, or -1 after fail().
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

	path_save(c, &ps);
	if (seen == NULL) {
		fail(c, TS_ENOMEM, "out of memory");
		return -1;
	}
	for (i = 0; i < np; i++) {
		path_load(c, parts[i].path);
		pr = json_object_get(parts[i].s, "properties");
		rq = json_object_get(parts[i].s, "required");
		if (pr != NULL && !json_is_object(pr)) {
			fail(c, TS_EINVAL, "\"properties\" must be an object");
			goto out;
		}
		if (rq != NULL && !json_is_array(rq))
			goto bad_required;
		cap += json_object_size(pr) + json_array_size(rq);
		for (j = 0; j < json_array_size(rq); j++) {
			v = json_array_get(rq, j);
			if (!json_is_string(v))
				goto bad_required;
			if (json_object_getn(seen, json_string_value(v),
			    json_string_length(v)) == NULL &&
			    json_object_setn_new(seen, json_string_value(v),
			    json_string_length(v), json_true()) != 0) {
				fail(c, TS_ENOMEM, "out of memory");
				goto out;
			}
		}
		if (get_count(c, parts[i].s, "minProperties", &x) < 0)
			goto out;
		if (json_object_get(parts[i].s, "minProperties") != NULL)
			minp = zmax(minp, x);
		x = NOLIMIT;
		if (get_count(c, parts[i].s, "maxProperties", &x) < 0)
			goto out;
		maxp = zmin(maxp, x);
	}
	for (i = 0; i < np; i++) {
		const json_t *ad = json_object_get(parts[i].s,
		    "additionalProperties");

		path_load(c, parts[i].path);
		pr = json_object_get(parts[i].s, "properties");
		if (ad == NULL || json_is_true(ad))
			continue;
		if (!json_is_false(ad) && !json_is_object(ad)) {
			fail(c, TS_EINVAL, "\"additionalProperties\" must be "
			    "a boolean or a schema");
			goto out;
		}
		if (addl == NULL) {
			addl = ad;
			addl_part = i;
		}
		if (np == 1)
			continue;
		for (j = 0; j < np; j++) {
			json_object_keylen_foreach((json_t *)json_object_get(
			    parts[j].s, "properties"), key, klen, v) {
				if (json_object_getn(pr, key, klen) == NULL) {
					fail(c, TS_EINVAL, "\"additionalProp"
					    "erties\" rejects property "
					    "\"%.64s\" of another \"allOf\" "
					    "part", key);
					goto out;
				}
			}
		}
		json_object_keylen_foreach(seen, key, klen, v) {
			if (json_object_getn(pr, key, klen) == NULL) {
				fail(c, TS_EINVAL, "\"additionalProperties\" "
				    "rejects required property \"%.64s\"",
				    key);
				goto out;
			}
		}
	}
	n->props = xcalloc(cap ? cap : 1, sizeof(*n->props));
	for (i = 0; i < np; i++) {
		pr = json_object_get(parts[i].s, "properties");
		json_object_keylen_foreach((json_t *)pr, key, klen, v) {
			dup = NULL;
			for (j = 0; j < i && dup == NULL; j++)
				dup = json_object_getn(json_object_get(
				    parts[j].s, "properties"), key, klen);
			path_load(c, parts[i].path);
			if (dup != NULL) {
				if (json_equal(dup, v))
					continue;
				fail(c, TS_EINVAL, "property \"%.64s\" is "
				    "declared differently by two \"allOf\" "
				    "parts", key);
				goto out;
			}
			a = path_push_str(c, "properties");
			b = path_push(c, key, klen);
			n->props[n->nprops].n = compile(c, v, depth + 1);
			path_pop(c, b);
			path_pop(c, a);
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
		path_load(c, parts[i].path);
		for (j = 0; j < json_array_size(rq); j++) {
			v = json_array_get(rq, j);
			key = json_string_value(v);
			klen = json_string_length(v);
			if (declared(parts, np, key, klen))
				continue;
			for (k = 0; k < n->nprops; k++)
				if (n->props[k].len == klen &&
				    memcmp(n->props[k].key, key, klen) == 0)
					break;
			if (k < n->nprops)
				continue;
			if (addl != NULL && json_is_false(addl)) {
				fail(c, TS_EINVAL, "required property "
				    "\"%.64s\" is not allowed by "
				    "\"additionalProperties\": false", key);
				goto out;
			}
			if (an == NULL && addl != NULL) {
				path_load(c, parts[addl_part].path);
				a = path_push_str(c, "additionalProperties");
				an = compile(c, addl, depth + 1);
				path_pop(c, a);
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
	path_restore(c, &ps);
	n->small_inc = xcalloc(n->nprops ? n->nprops : 1, 1);
	n->minp = minp;
	n->maxp = maxp;
	n->addl_false = addl != NULL && json_is_false(addl);
	if (minp > maxp) {
		fail(c, TS_EINVAL, "\"minProperties\" is above "
		    "\"maxProperties\"");
		goto out;
	}
	if (json_object_size(seen) > maxp) {
		fail(c, TS_EINVAL, "\"required\" lists %zu properties, more "
		    "than \"maxProperties\" %zu", json_object_size(seen),
		    maxp);
		goto out;
	}
	if (minp > n->nprops) {
		fail(c, TS_EINVAL, "\"minProperties\" %zu is more than the "
		    "%zu declared properties", minp, n->nprops);
		goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		path_restore(c, &ps);
	json_decref(seen);
	return rc;
bad_required:
	fail(c, TS_EINVAL, "\"required\" must be an array of strings");
	goto out;
}

/*
 * Arrays: prefixItems (or a draft-07 items array) then items (or
 * additionalItems); absent or true rest items are {}, false none.
 * 0, or -1 after fail().
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
		fail(c, TS_EINVAL, "\"prefixItems\" beside an array "
		    "\"items\" is not supported");
		return -1;
	}
	rv = it;
	if (pi != NULL) {
		if (!json_is_array(pi)) {
			fail(c, TS_EINVAL, "\"prefixItems\" must be an array");
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
			fail(c, TS_ELIMIT, "\"%s\" has %zu schemas, over the "
			    "limit %d", tkey, n->nprefix,
			    SCHEMA_GEN_MAX_ITEMS);
			return -1;
		}
		n->prefix = xcalloc(n->nprefix ? n->nprefix : 1,
		    sizeof(*n->prefix));
		for (i = 0; i < n->nprefix; i++) {
			a = path_push_str(c, tkey);
			b = path_push_index(c, i);
			n->prefix[i] = compile(c, json_array_get(tuple, i),
			    depth + 1);
			path_pop(c, b);
			path_pop(c, a);
			if (n->prefix[i] == NULL)
				return -1;
		}
	}
	if (rv == NULL || json_is_true(rv)) {
		n->rest = c->any;
	} else if (!json_is_false(rv)) {
		a = path_push_str(c, rkey);
		n->rest = compile(c, rv, depth + 1);
		path_pop(c, a);
		if (n->rest == NULL)
			return -1;
		n->rest_explicit = 1;
	}
	if (get_count(c, s, "minItems", &n->mini) < 0 ||
	    get_count(c, s, "maxItems", &n->maxi) < 0)
		return -1;
	if (n->mini > SCHEMA_GEN_MAX_ITEMS) {
		fail(c, TS_ELIMIT, "\"minItems\" %zu is over the limit %d",
		    n->mini, SCHEMA_GEN_MAX_ITEMS);
		return -1;
	}
	if (n->mini > n->maxi) {
		fail(c, TS_EINVAL, "\"minItems\" is above \"maxItems\"");
		return -1;
	}
	if (n->rest == NULL && n->mini > n->nprefix) {
		fail(c, TS_EINVAL, "\"minItems\" %zu needs more items than "
		    "the %zu allowed", n->mini, n->nprefix);
		return -1;
	}
	if (u != NULL && !json_is_boolean(u)) {
		fail(c, TS_EINVAL, "\"uniqueItems\" must be a boolean");
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
		fail(c, TS_ELIMIT, "\"minLength\" %zu is over the limit %d",
		    n->minl, SCHEMA_GEN_MAX_LENGTH);
		return -1;
	}
	if (n->minl > n->maxl) {
		fail(c, TS_EINVAL, "\"minLength\" is above \"maxLength\"");
		return -1;
	}
	n->fmt = f;
	if (f != F_NONE && (a || b)) {
		format_lens(f, &flo, &fhi);
		if (n->minl > flo || fhi > n->maxl) {
			fail(c, TS_EINVAL, "\"format\" \"%s\" with "
			    "\"minLength\"/\"maxLength\" is supported only "
			    "when every value (%zu to %zu characters) fits",
			    fname, flo, fhi);
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
	if ((n->types & BIT(TY_INT)) && int_spec(c, &n->b, &n->is) < 0)
		return -1;
	if (!(n->types & BIT(TY_NUM)))
		return 0;
	if (nf == NF_INT32 || nf == NF_INT64 || (n->b.mult > 0 &&
	    n->b.f == 0)) {
		n->num_int = 1;
		if (!(n->types & BIT(TY_INT)) && int_spec(c, &n->b,
		    &n->is) < 0)
			return -1;
		return 0;
	}
	return dec_spec(c, &n->b, &n->ds);
}

/* Whether an enum/const value passes the keywords beside it. */
static int
value_ok(const struct node *n, const json_t *v, unsigned mask)
{
	int t = vtype(v);
	int ok = (mask & BIT(t)) != 0;

	if (t == TY_INT && (mask & BIT(TY_NUM)))
		ok = 1;
	if (t == TY_NUM && (mask & BIT(TY_INT)) &&
	    is_integral(json_real_value(v)))
		ok = 1;
	if (!ok)
		return 0;
	if (t == TY_STR) {
		size_t cp = utf8_len(json_string_value(v),
		    json_string_length(v));

		return cp >= n->minl && cp <= n->maxl;
	}
	if (t == TY_INT || t == TY_NUM)
		return num_ok(&n->b, json_number_value(v));
	return 1;
}

/*
 * enum and const, filtered by type, nullable, the string lengths and
 * the numeric keywords beside them; nothing else may be beside them.
 * 0, or -1 after fail().
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
			fail(c, TS_EINVAL, "\"%s\" beside \"%s\" is not "
			    "supported", key, ev != NULL ? "enum" : "const");
			return -1;
		}
	}
	if (ev != NULL && (!json_is_array(ev) || json_array_size(ev) == 0)) {
		fail(c, TS_EINVAL, "\"enum\" must be a non-empty array");
		return -1;
	}
	if (get_count(c, s, "minLength", &n->minl) < 0 ||
	    get_count(c, s, "maxLength", &n->maxl) < 0 ||
	    get_bounds(c, s, &n->b) < 0)
		return -1;
	cand = ev != NULL ? json_array_size(ev) : 1;
	n->vals = xcalloc(cand, sizeof(*n->vals));
	n->valsize = xcalloc(cand, sizeof(*n->valsize));
	n->types = 0;
	for (i = 0; i < cand; i++) {
		x = ev != NULL ? json_array_get(ev, i) : cv;
		if (ev != NULL && cv != NULL && !same_value(x, cv))
			continue;
		if (!value_ok(n, x, mask))
			continue;
		n->vals[n->nvals] = x;
		n->valsize[n->nvals] = json_dumpb(x, NULL, 0, FLAGS);
		if (n->valsize[n->nvals] == 0) {
			fail(c, TS_ENOMEM, "out of memory");
			return -1;
		}
		if (value_depth(x) > n->valdepth)
			n->valdepth = value_depth(x);
		n->types |= BIT(vtype(x));
		n->nvals++;
	}
	if (n->nvals == 0) {
		fail(c, TS_EINVAL, "no \"%s\" value is valid against the "
		    "keywords beside it", ev != NULL ? "enum" : "const");
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
		fail(c, TS_EINVAL, "\"nullable\" must be a boolean");
		return NULL;
	}
	if (fv != NULL) {
		if (!json_is_string(fv)) {
			fail(c, TS_EINVAL, "\"format\" must be a string");
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
			fail(c, TS_EINVAL, "\"format\" \"%.64s\" is not "
			    "supported", fname);
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
		pt.path = path_copy(c);
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
		fail(c, TS_EINVAL, "\"allOf\" must be a non-empty array");
		return NULL;
	}
	if (json_array_size(a) == 1 && ckey == NULL) {
		old = path_push_str(c, "allOf");
		k = path_push_index(c, 0);
		r = compile(c, json_array_get(a, 0), depth + 1);
		path_pop(c, k);
		path_pop(c, old);
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
 * One subschema; NULL after fail(). Keywords: refused ones fail, $ref,
 * anyOf and oneOf allow only annotations beside them, allOf is merged,
 * the rest is compile_plain's.
 */
static struct node *
compile(struct ctx *c, const json_t *s, unsigned depth)
{
	const char *key, *ckey = NULL;
	json_t *v;
	const json_t *ref = NULL;
	int any = 0, one = 0, all = 0;

	if (depth > SCHEMA_GEN_MAX_SCHEMA_DEPTH) {
		fail(c, TS_ELIMIT, "subschemas nest deeper than %d",
		    SCHEMA_GEN_MAX_SCHEMA_DEPTH);
		return NULL;
	}
	if (json_is_true(s))
		return c->any;
	if (json_is_false(s))
		return new_node(c, K_NEVER);
	if (!json_is_object(s)) {
		fail(c, TS_EINVAL, "a schema must be an object or a boolean");
		return NULL;
	}
	json_object_foreach((json_t *)s, key, v) {
		switch (kw_of(key)) {
		case KW_REFUSED:
			fail(c, TS_EINVAL, "\"%s\" is not supported", key);
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
			fail(c, TS_EINVAL, "\"$ref\" beside \"%s\" is not "
			    "supported", any ? "anyOf" : one ? "oneOf" :
			    all ? "allOf" : ckey);
			return NULL;
		}
		return compile_ref(c, ref);
	}
	if (any || one) {
		if ((any && one) || all || ckey != NULL) {
			fail(c, TS_EINVAL, "\"%s\" beside \"%s\" is not "
			    "supported", any ? "anyOf" : "oneOf",
			    (any && one) ? "oneOf" : all ? "allOf" : ckey);
			return NULL;
		}
		return compile_anyof(c, s, one, depth);
	}
	if (all)
		return compile_allof(c, s, ckey, depth);
	return compile_plain(c, s, depth);
}

/* ---- pass 2: the smallest instances ------------------------------------- */

static int
costidx_cmp(const void *a, const void *b)
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
			qsort(opt, nopt, sizeof(*opt), costidx_cmp);
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

static const struct node *
item_node(const struct node *n, size_t i)
{
	return i < n->nprefix ? n->prefix[i] : n->rest;
}

/*
 * The lengths an array is drawn from outside a smallest instance:
 * [minItems, minItems + 3]; with a prefix, every prefix item that fits
 * (at least minItems) and up to 3 more from an explicit items schema.
 * Within lencap, which array_cost sets.
 */
static void
arr_lengths(const struct node *n, size_t *base, size_t *top)
{
	size_t lo = n->mini, cap = n->lencap;

	if (n->nprefix == 0) {
		*base = lo;
		*top = zmin(cap, lo + 3);
	} else {
		*base = zmax(lo, zmin(n->nprefix, cap));
		*top = n->rest_explicit ? zmin(cap, *base + 3) : *base;
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
		sum = sat_add(sum, sat_mul(n->mini - n->nprefix,
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
			format_lens(n->fmt, &flo, &fhi);
			return 2 + fhi;
		}
		word_lens(&wlo, &whi);
		return 2 + zmax(n->minl, zmin(n->maxl, whi));
	case TY_OBJ:
		object_cost(n, &cost, depth);
		return cost;
	default:
		array_cost(n, &cost, depth);
		return cost;
	}
}

/* Recomputes one node from its children; 1 when something changed. */
static int
cost_node(struct node *n)
{
	uint64_t old = n->cost, best = INF;
	unsigned oldd = n->sdepth;
	size_t i;
	int t;

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

static void
sizes(struct ctx *c)
{
	size_t i;
	int round, changed;

	for (round = 0; round < MAX_ROUNDS; round++) {
		changed = 0;
		for (i = c->nall; i-- > 0;)
			changed |= cost_node(c->all[i]);
		if (!changed)
			break;
	}
}

/* ---- pass 3: checks ----------------------------------------------------- */

/* Why the root has no finite instance: follows infinite children. */
static void
explain_inf(struct ctx *c, struct node *n)
{
	size_t steps, i;

	for (steps = 0; steps <= c->nall; steps++) {
		struct node *next = NULL;

		n->mark = 1;
		switch (n->kind) {
		case K_NEVER:
			failat(c, TS_EINVAL, n->path, "the schema false has "
			    "no instance");
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
					failat(c, TS_EINVAL, n->path,
					    "\"minProperties\" cannot be met");
					return;
				}
			} else if (n->types & BIT(TY_ARR)) {
				for (i = 0; i < n->mini && next == NULL; i++)
					if (item_node(n, i) != NULL &&
					    item_node(n, i)->cost == INF)
						next = (struct node *)
						    item_node(n, i);
			}
			break;
		}
		if (next == NULL || next->mark) {
			failat(c, TS_EINVAL, n->path, "schema recursion has "
			    "no finite instance");
			return;
		}
		n = next;
	}
	failat(c, TS_EINVAL, n->path, "the schema has no finite instance");
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
 * from round to round, so a fixed point as in sizes(). */
static void
type_sets(struct ctx *c)
{
	size_t i;
	int round, changed;

	for (round = 0; round < MAX_ROUNDS; round++) {
		changed = 0;
		for (i = c->nall; i-- > 0;)
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
	uint64_t h = value_hash(x);
	size_t lo = 0, hi = b->nvals, i;

	if (b->vidx == NULL) {
		b->vidx = xcalloc(b->nvals, sizeof(*b->vidx));
		for (i = 0; i < b->nvals; i++) {
			b->vidx[i].cost = value_hash(b->vals[i]);
			b->vidx[i].i = i;
		}
		qsort(b->vidx, b->nvals, sizeof(*b->vidx), costidx_cmp);
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
		if (same_value(b->vals[b->vidx[i].i], x))
			return 1;
	}
	return 0;
}

/* Whether a validator of b rejects the value x. */
static int
rejects_value(struct ctx *c, const struct node *b, const json_t *x)
{
	if (!(norm(BIT(vtype(x))) & norm(accept_types(b))))
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
	size_t i, j;

	for (i = 0; i < n->nbr; i++) {
		if (n->br[i]->cost == INF)
			continue;
		for (j = i + 1; j < n->nbr; j++) {
			if (n->br[j]->cost == INF)
				continue;
			if (++c->work <= CHECK_WORK &&
			    rejects(c, n->br[i], n->br[j]) &&
			    rejects(c, n->br[j], n->br[i]))
				continue;
			if (c->work > CHECK_WORK)
				failat(c, TS_ELIMIT, n->path, "\"oneOf\" is "
				    "too large to check");
			else
				failat(c, TS_EINVAL, n->path, "\"oneOf\" "
				    "branches %zu and %zu may accept one "
				    "value (need disjoint types, enum/const "
				    "or discriminator values)", i, j);
			return;
		}
	}
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

/* Drops repeated values (same_value), keeping the first of each. */
static void
vl_dedupe(struct vlist *l)
{
	struct costidx *h;
	unsigned char *dup;
	size_t i, j, k = 0;

	if (l->n < 2)
		return;
	h = xcalloc(l->n, sizeof(*h));
	dup = xcalloc(l->n, 1);
	for (i = 0; i < l->n; i++) {
		h[i].cost = value_hash(l->v[i]);
		h[i].i = i;
	}
	qsort(h, l->n, sizeof(*h), costidx_cmp);
	for (i = 1; i < l->n; i++)
		for (j = i; j-- > 0 && h[j].cost == h[i].cost;)
			if (!dup[h[j].i] && same_value(l->v[h[j].i],
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
		    (struct node *)item_node(n, i);
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
				json_t *x = json_copy(cur.v[j]);
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
			if ((uint64_t)(n->is.khi - n->is.klo) >= MAX_DOMAIN)
				return -1;
			for (k = n->is.klo; k <= n->is.khi; k++) {
				a = k * n->is.step;
				if ((!n->is.verify || mult_ok(&n->b,
				    (double)a)) && vl_push(l,
				    json_integer(a)) < 0)
					return -1;
			}
			return 0;
		}
		if ((uint64_t)(n->ds.nhi - n->ds.nlo) >= MAX_DOMAIN)
			return -1;
		for (k = n->ds.nlo; k <= n->ds.nhi; k++) {
			if (!mult_ok(&n->b, dec_val(&n->ds, k)))
				continue;
			a = k * n->ds.m;
			if (vl_push(l, a % n->ds.p == 0 ?
			    json_integer(a / n->ds.p) :
			    json_real(dec_val(&n->ds, k))) < 0)
				return -1;
		}
		return 0;
	case TY_STR:            /* a..z strings of at most 2 letters */
		if (n->fmt != F_NONE || n->maxl > 2)
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
		for (len = n->mini; len <= zmin(n->lencap, n->mini + 3);
		    len++)
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
	n->dom_state = DOM_BUSY;
	switch (n->kind) {
	case K_NEVER:
		break;
	case K_REF:
		rc = enumerate(c, n->ref, depth + 1);
		for (i = 0; rc == 0 && i < n->ref->ndom; i++)
			rc = vl_push(&l, json_incref(n->ref->dom[i]));
		break;
	case K_ANYOF:
		for (i = 0; rc == 0 && i < n->nbr; i++) {
			size_t j;

			if (n->br[i]->cost == INF)
				continue;
			rc = enumerate(c, n->br[i], depth + 1);
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
	vl_dedupe(&l);
	n->dom = l.v;
	n->ndom = l.n;
	for (i = 0; i < l.n; i++)
		if (value_depth(l.v[i]) > n->domdepth)
			n->domdepth = value_depth(l.v[i]);
	n->dom_state = DOM_LISTED;
	return 0;
}

/* Distinct plain strings of at most maxl characters the generator makes
 * (prefixes of the words). */
static uint64_t
str_count(const struct node *n)
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
	for (i = 0; i < NWORDS; i++) {
		li = zmin(cut, strlen(words[i]));
		for (j = 0; j < i; j++) {
			lj = zmin(cut, strlen(words[j]));
			if (li == lj && memcmp(words[i], words[j], li) == 0)
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
		return str_count(n);
	case TY_OBJ:
		for (i = 0; i < n->nprops; i++) {
			if (n->props[i].n->cost == INF)
				continue;
			x = dcount(c, n->props[i].n);
			k = sat_mul(k, n->props[i].required ? x : x + 1,
			    LARGE);
		}
		return k;
	default:
		arr_lengths(n, &base, &top);
		for (len = base; len <= top; len++) {
			x = 1;
			for (i = 0; i < len && x < LARGE; i++)
				x = sat_mul(x, dcount(c, (struct node *)
				    item_node(n, i)), LARGE);
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
	np = zmin(L, n->nprefix);
	gt = xcalloc(np + 1, sizeof(*gt));
	for (i = 0; i < np; i++)
		gt[i] = norm(gen_types(n->prefix[i]));
	gt[np] = L > np ? norm(gen_types(n->rest)) : 0;
	for (i = 0; i <= np && c->rc == TS_OK; i++) {
		if (i == np && L == np)
			break;
		for (j = 0, k = 0; j < i; j++)
			k += (gt[i] & gt[j]) != 0;
		if (i == np)
			k += L - 1 - np;        /* the rest's earlier ones */
		it = (struct node *)item_node(n, i);
		if (k == 0)
			continue;
		if (enumerate(c, it, 0) == 0) {
			if (it->ndom < k + 1)
				failat(c, TS_EINVAL, n->path,
				    "\"uniqueItems\": the items have %zu "
				    "distinct values, fewer than "
				    "\"minItems\" %zu", it->ndom, L);
			continue;
		}
		if ((d = dcount(c, it)) < 4 * (uint64_t)k)
			failat(c, TS_EINVAL, n->path, "\"uniqueItems\": the "
			    "items cannot surely give %zu distinct values "
			    "(about %llu)", L, (unsigned long long)d);
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
		if ((r = (struct node *)item_node(n, i)) == NULL ||
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

/* The checks that need sizes; c->rc tells. */
static void
checks(struct ctx *c, struct node *root)
{
	size_t i;

	if (root->cost == INF) {
		explain_inf(c, root);
		return;
	}
	if (root->cost > SCHEMA_GEN_MAX_OUT) {
		failat(c, TS_ELIMIT, root->path, "the smallest instance is "
		    "over %u bytes", SCHEMA_GEN_MAX_OUT);
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
			failat(c, TS_ELIMIT, n->path, "the smallest instance "
			    "nests %u arrays and objects, over %d",
			    n->sdepth, SMALL_ROOM);
			return;
		}
		if (n->kind == K_ANYOF && n->oneof)
			check_oneof(c, n);
		if (n->kind == K_PLAIN && n->nvals == 0 &&
		    (n->types & BIT(TY_ARR)) && n->unique)
			check_unique(c, n);
	}
}

static void
ctx_free(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->nall; i++)
		node_free(c->all[i]);
	free(c->all);
	for (i = 0; i < c->nt; i++)
		free(c->t[i].path);
}

/* All passes; the root node, or NULL with c->rc and c->msg set. */
static struct node *
prepare(struct ctx *c, const json_t *schema)
{
	struct node *root;
	size_t i;

	memset(c, 0, sizeof(*c));
	c->root = schema;
	c->any = new_node(c, K_PLAIN);
	c->any->types = T_ANY;
	c->any->accept = T_ALL;
	if (int_spec(c, &c->any->b, &c->any->is) < 0)
		return NULL;
	c->t[0].json = schema;
	c->t[0].path = xstrndup("", 0);
	c->nt = 1;
	if (schema == NULL) {
		fail(c, TS_EINVAL, "no schema");
		return NULL;
	}
	root = compile(c, schema, 0);
	c->t[0].node = root;
	for (i = 1; i < c->nt && c->rc == TS_OK; i++) {
		path_load(c, c->t[i].path);
		c->t[i].node = compile(c, c->t[i].json, 0);
	}
	if (c->rc != TS_OK)
		return NULL;
	for (i = 0; i < c->nall; i++)
		if (c->all[i]->kind == K_REF)
			c->all[i]->ref = c->t[c->all[i]->target].node;
	sizes(c);
	type_sets(c);
	checks(c, root);
	return c->rc == TS_OK ? root : NULL;
}

/* ---- generation --------------------------------------------------------- */

struct gen {
	struct ctx *c;
	struct rng r;
	uint64_t work;          /* bytes made, kept or not */
};

static int
spend(struct gen *g, uint64_t bytes)
{
	g->work += bytes;
	if (g->work <= WORK_MAX)
		return 0;
	failat(g->c, TS_ELIMIT, "", "the instance would be over %u bytes",
	    SCHEMA_GEN_MAX_OUT);
	return -1;
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
	failat(g->c, TS_ENOMEM, "", "out of memory");
	return NULL;
}

static json_t *gen_node(struct gen *g, const struct node *n,
    unsigned depth, unsigned refs, int full);

static size_t
put_word(char *b, size_t len, struct rng *r)
{
	const char *w = words[draw(r, NWORDS)];
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
		if (!is->verify || mult_ok(&n->b, (double)(x * is->step))) {
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
	q /= gcd64(d->m, q);
	kl = ceil_div(d->nlo, q);
	kh = floor_div(d->nhi, q);
	for (i = 0; i < 8 && kl <= kh; i++) {
		x = q * (kl + (int64_t)draw(&g->r, (uint64_t)(kh - kl) + 1));
		if (mult_ok(&n->b, dec_val(d, x)))
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
		v = dec_val(d, x);
		if (!mult_ok(&n->b, v))
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
	return json_real(dec_val(d, pick));
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
		failat(g->c, TS_ELIMIT, n->path, "the instance nests deeper "
		    "than %d", SCHEMA_GEN_MAX_DEPTH);
		return NULL;
	}
	if (spend(g, 2) < 0)
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
	for (i = 0; i < n->nprops; i++) {
		if (!inc[i])
			continue;
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
	free(inc);
	return o;
fail:
	free(inc);
	json_decref(o);
	return NULL;
}

/* The items of a uniqueItems array so far: an open-addressing set of
 * their indices by value_hash. */
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
	uint64_t h = value_hash(v);

	for (p = (size_t)h & u->mask; u->slot[p] != 0;
	    p = (p + 1) & u->mask) {
		size_t i = u->slot[p] - 1;

		if (u->hash[i] == h && same_value(json_array_get(a, i), v)) {
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
		x = it->dom[i];
		h = value_hash(x);
		for (p = (size_t)h & u->mask; u->slot[p] != 0;
		    p = (p + 1) & u->mask)
			if (u->hash[u->slot[p] - 1] == h &&
			    same_value(json_array_get(a, u->slot[p] - 1), x))
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
		failat(g->c, TS_ELIMIT, n->path, "the instance nests deeper "
		    "than %d", SCHEMA_GEN_MAX_DEPTH);
		return NULL;
	}
	if (small)
		base = top = lo;
	else
		arr_lengths(n, &base, &top);
	len = base + (size_t)draw(&g->r, top - base + 1);
	for (i = lo; i < len; i++)      /* items past minItems must fit */
		if (depth + 1 + item_node(n, i)->sdepth > SCHEMA_GEN_MAX_DEPTH)
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
	for (i = 0; i < len; i++) {
		const struct node *it = item_node(n, i);

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
		r = 0;
		listed = it->dom_state == DOM_LISTED && depth + 1 +
		    it->domdepth <= SCHEMA_GEN_MAX_DEPTH;
		if (listed) {
			if ((v = pick_listed(g, it, a, &u)) == NULL &&
			    g->c->rc != TS_OK)
				goto fail;
			if (v != NULL && spend(g, 8) < 0) {
				json_decref(v);
				goto fail;
			}
			if (v != NULL && (r = add_unique(g, a, v, &u)) < 0)
				goto fail;
		}
		for (t = 0; !listed && t < UNIQUE_TRIES && r == 0; t++) {
			if ((v = gen_node(g, it, depth + 1, refs, 1)) == NULL)
				goto fail;
			if ((r = add_unique(g, a, v, &u)) < 0)
				goto fail;
		}
		if (g->c->rc != TS_OK)
			goto fail;
		if (r == 0) {
			if (i >= lo)
				break;
			failat(g->c, g->work > WORK_SOFT ? TS_ELIMIT :
			    TS_EINVAL, n->path, "\"uniqueItems\": could not "
			    "make %zu distinct items", lo);
			goto fail;
		}
	}
	free(u.hash);
	free(u.slot);
	return a;
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

	switch (n->kind) {
	case K_REF:
		return gen_node(g, n->ref, depth, refs + 1, full);
	case K_ANYOF:
		return gen_node(g, n->br[pick_branch(g, n, depth, small,
		    full)], depth, refs, full);
	case K_PLAIN:
		break;
	default:
		failat(g->c, TS_EINVAL, n->path, "the schema false has no "
		    "instance");
		return NULL;
	}
	if (n->nvals > 0) {
		size_t i = (size_t)draw(&g->r, n->nvals);

		if (spend(g, n->valsize[i]) < 0)
			return NULL;
		v = json_deep_copy(n->vals[i]);
		return v != NULL ? v : nomem(g);
	}
	switch (pick_type(g, n, depth, small, full)) {
	case TY_NULL:
		return spend(g, 4) < 0 ? NULL : json_null();
	case TY_BOOL:
		return spend(g, 5) < 0 ? NULL :
		    json_boolean(rng_next(&g->r) >> 63);
	case TY_INT:
		v = gen_int(g, n);
		break;
	case TY_NUM:
		v = n->num_int ? gen_int(g, n) : gen_dec(g, n);
		break;
	case TY_STR:
		return gen_str(g, n, small);
	case TY_OBJ:
		return gen_obj(g, n, depth, refs, small, full);
	default:
		return gen_arr(g, n, depth, refs, small, full);
	}
	return v != NULL || g->c->rc != TS_OK ? v : nomem(g);
}

/* ---- the API ------------------------------------------------------------ */

static void
copy_msg(const struct ctx *c, char *msg, size_t msglen)
{
	if (msg != NULL && msglen > 0)
		snprintf(msg, msglen, "%s", c->msg);
}

enum ts_err
schema_gen_check(const json_t *schema, char *msg, size_t msglen)
{
	struct ctx c;
	enum ts_err rc;

	prepare(&c, schema);
	rc = c.rc;
	if (rc != TS_OK)
		copy_msg(&c, msg, msglen);
	ctx_free(&c);
	return rc;
}

enum ts_err
schema_gen(const json_t *schema, uint64_t seed, struct ts_buf *out,
    char *msg, size_t msglen)
{
	struct ctx c;
	struct gen g;
	struct node *root = prepare(&c, schema);
	json_t *v = NULL;
	char *p = NULL;
	size_t n;
	enum ts_err rc;

	if (root == NULL)
		goto out;
	g.c = &c;
	g.work = 0;
	rng_seed(&g.r, seed);
	if ((v = gen_node(&g, root, 0, 0, 0)) == NULL) {
		if (c.rc == TS_OK)
			failat(&c, TS_ENOMEM, "", "out of memory");
		goto out;
	}
	n = json_dumpb(v, NULL, 0, FLAGS);
	if (n == 0) {
		failat(&c, TS_ENOMEM, "", "out of memory");
		goto out;
	}
	if (n > SCHEMA_GEN_MAX_OUT) {
		failat(&c, TS_ELIMIT, "", "the instance is %zu bytes, over "
		    "the limit %u", n, SCHEMA_GEN_MAX_OUT);
		goto out;
	}
	if (n > out->max || out->len > out->max - n) {
		failat(&c, TS_ELIMIT, "", "the instance (%zu bytes) does not "
		    "fit the output buffer", n);
		goto out;
	}
	p = xmalloc(n);
	if (json_dumpb(v, p, n, FLAGS) != n) {
		failat(&c, TS_ENOMEM, "", "out of memory");
		goto out;
	}
	if (ts_buf_append(out, p, n) != TS_OK)
		failat(&c, TS_ELIMIT, "", "the output buffer is full");
out:
	rc = c.rc;
	if (rc != TS_OK)
		copy_msg(&c, msg, msglen);
	free(p);
	json_decref(v);
	ctx_free(&c);
	return rc;
}
