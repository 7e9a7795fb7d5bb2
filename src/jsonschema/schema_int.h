/*
 * jsonschema/schema_int.h - what the files of the JSON Schema generator
 * share behind schema_gen.h; no other folder includes it. The work runs
 * in passes over one struct ctx:
 *   schema_compile.c  1. every subschema reachable from the root (through
 *                     $ref too) becomes a struct node, its keywords
 *                     checked and parsed into ranges;
 *   schema_size.c     2. the smallest instance of every node (cost in
 *                     estimated bytes, nesting depth), a least fixed
 *                     point over $ref cycles;
 *   schema_check.c    3. the checks that need sizes: limits, oneOf
 *                     disjointness, uniqueItems;
 *   schema_gen.c      generation with a struct rng, and the API of
 *                     schema_gen.h, which runs the passes in that order.
 * Below them: schema_path.c (the JSON pointer of the subschema at hand
 * and the error messages that name it), schema_value.c (JSON values
 * compared as JSON Schema compares them) and schema_num.c (the numbers
 * a schema allows, and saturating size arithmetic). Pure, like
 * schema_gen.h says: no I/O, no global state but constant tables.
 *
 * Errors: a pass that finds one records the first in c->rc and c->msg
 * (schema_path_fail, schema_path_failat) and the passes stop early; the
 * functions below that can fail return -1 (or NULL) after recording it.
 */
#ifndef TS_JSONSCHEMA_SCHEMA_INT_H
#define TS_JSONSCHEMA_SCHEMA_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"
#include "jsonschema/schema_limits.h"

#if defined(__GNUC__)
#define ATTR_FMT(f, a) __attribute__((format(printf, f, a)))
#else
#define ATTR_FMT(f, a)
#endif

#define FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)
#define INF UINT64_MAX                 /* cost: no finite instance */
#define INT_LIMIT (INT64_C(1) << 53)   /* integers stay within +-2^53 */
#define REF_HOPS 8                     /* nested $refs before smallest */
#define PATH_BYTES 256
#define MSG_BYTES 256
#define UNIQUE_TRIES 64                /* draws per distinct item */
#define MAX_ROUNDS (2 * SCHEMA_GEN_MAX_REFS + 8)
#define SPAN 100                       /* unbounded numbers: 0..100 */
#define NWORDS ((size_t)64)            /* schema_words */
#define STEPS_VALUE 32                 /* steps of a node, a JSON value or
					* member made: their allocations
					* take ~30 times a comparison's
					* time (measured) */

/* String formats, each with the shape of its values. */
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

/* JSON types as the generator sees them; TY_INT is a JSON integer. */
enum { TY_NULL, TY_BOOL, TY_INT, TY_NUM, TY_STR, TY_OBJ, TY_ARR, TY_N };
#define BIT(t) (1u << (t))
#define T_ALL (BIT(TY_N) - 1)
#define T_NUMS (BIT(TY_INT) | BIT(TY_NUM))

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
	struct costidx *vidx;   /* vals by schema_value_hash, for oneOf */
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
	uint64_t work;          /* comparisons of the oneOf check */
	uint64_t steps;         /* work units spent (schema_step) */
	uint64_t max_steps;     /* ... and allowed */
	enum ts_err rc;
	char msg[MSG_BYTES];
};

/* A saved path (schema_path_save). */
struct psave {
	char p[PATH_BYTES];
	size_t len;
	unsigned over;
};

/* ---- the passes ------------------------------------------------------- */

/*
 * Pass 1 (schema_compile.c): clears `c`, sets its budget to max_steps
 * (schema_step: this pass and the next two spend from it), and compiles
 * `schema` (borrowed; NULL is refused) and every $ref target it reaches
 * into c->all, then links each K_REF node to its target's node. Returns
 * the root node, or NULL with c->rc and c->msg set (TS_EINVAL for an
 * unsupported or self-contradicting subschema, TS_ELIMIT for one over a
 * limit of schema_gen.h or the budget). Whatever it returns,
 * schema_compile_free(c) follows.
 */
struct node *schema_compile(struct ctx *c, const json_t *schema,
    uint64_t max_steps);

/* Frees every node and $ref target path of `c`; `c` itself is the
 * caller's. */
void schema_compile_free(struct ctx *c);

/*
 * Pass 2 (schema_size.c): sets every node's smallest instance (cost,
 * sdepth, stype, schoice, small_inc, lencap, tcost, tdepth), from the
 * leaves up and again over $ref cycles until nothing changes (at most
 * MAX_ROUNDS rounds). A node with no finite instance keeps cost INF.
 * Fails only when the budget runs out (schema_step: c->rc set).
 */
void schema_size(struct ctx *c);

/* qsort order of struct costidx: by cost, then by index (so the sort is
 * stable and the same on every libc). */
int schema_size_costidx_cmp(const void *a, const void *b);

/* The node of item i of the array node n: a prefixItems entry, else the
 * items schema (NULL when no item may follow the prefix). */
const struct node *schema_size_item(const struct node *n, size_t i);

/*
 * The lengths, [*base, *top], an array node's instances are drawn from
 * outside a smallest instance: [minItems, minItems + 3]; with a prefix,
 * every prefix item that fits (at least minItems) and up to 3 more from
 * an explicit items schema. Within n->lencap, which schema_size sets.
 */
void schema_size_arr_lengths(const struct node *n, size_t *base,
    size_t *top);

/*
 * Pass 3 (schema_check.c), after schema_size: the generated and accepted
 * type sets of every node (gt, at), then the checks that need sizes: a
 * root with an instance within SCHEMA_GEN_MAX_OUT, smallest instances
 * within the depth left below SCHEMA_GEN_SOFT_DEPTH, oneOf branches
 * disjoint, uniqueItems with enough distinct values (whose ranges it may
 * widen). The first failure is in c->rc and c->msg.
 */
void schema_check(struct ctx *c, struct node *root);

/* ---- the words (schema_words.c) --------------------------------------- */

/* The lowercase ASCII words plain strings are made of. */
extern const char *const schema_words[NWORDS];

/* The shortest and longest of schema_words, in bytes. */
void schema_words_lens(size_t *lo, size_t *hi);

/* [*lo, *hi]: the lengths (bytes == code points) every value of string
 * format f has; 0 and 0 for F_NONE. */
void schema_words_format_lens(enum fmt f, size_t *lo, size_t *hi);

/* ---- paths and errors (schema_path.c) --------------------------------- */

/*
 * Spends n steps of c's budget (max_steps): 0, or -1 once it is over,
 * with the error recorded (TS_ELIMIT, at the root: "... more than N
 * steps"). Every pass spends on what it visits, lists, copies or
 * compares, so that its time is bounded by the budget whatever the
 * schema, not only by its size.
 */
int schema_step(struct ctx *c, uint64_t n);

/* The current path as text into out (size bytes, NUL-terminated): ""
 * for the root, "/..." appended when segments did not fit. */
void schema_path_text(const struct ctx *c, char *out, size_t size);

/*
 * Records the first error of `c`: rc and the message "schema at PATH:
 * TEXT" (TEXT from fmt); later calls do nothing. "" is the root, shown
 * "(root)"; a path over 64 bytes shows as "..." and its last segments,
 * so the keyword fits the callers' 200-byte messages.
 */
void schema_path_failat(struct ctx *c, enum ts_err rc, const char *path,
    const char *fmt, ...) ATTR_FMT(4, 5);

/* schema_path_failat at the current path (the subschema being
 * compiled). */
void schema_path_fail(struct ctx *c, enum ts_err rc, const char *fmt, ...)
    ATTR_FMT(3, 4);

/*
 * Appends "/seg" (len bytes; control bytes shown as '?') with JSON
 * pointer escapes (RFC 6901 section 3). Returns what schema_path_pop
 * needs to undo it; a segment that does not fit is counted instead.
 */
size_t schema_path_push(struct ctx *c, const char *seg, size_t len);

/* schema_path_push of a NUL-terminated segment. */
size_t schema_path_push_str(struct ctx *c, const char *seg);

/* schema_path_push of an array index, in decimal. */
size_t schema_path_push_index(struct ctx *c, size_t i);

/* Undoes the schema_path_push that returned old. */
void schema_path_pop(struct ctx *c, size_t old);

/* Saves the current path into s, and puts it back. */
void schema_path_save(const struct ctx *c, struct psave *s);
void schema_path_restore(struct ctx *c, const struct psave *s);

/* Sets the path to p, a schema_path_text of another place (its "/..."
 * of segments that did not fit becomes a count again). */
void schema_path_load(struct ctx *c, const char *p);

/* The current path as schema_path_text gives it, in a new string (the
 * caller frees it; xstrndup aborts when memory runs out). */
char *schema_path_copy(const struct ctx *c);

/* ---- JSON values (schema_value.c) ------------------------------------- */

/* The generator's type of a JSON value (TY_). */
int schema_value_type(const json_t *v);

/* 1 when a and b are equal as JSON Schema's enum, const and uniqueItems
 * define it: numbers by value (1 == 1.0), objects regardless of key
 * order; else 0. */
int schema_value_same(const json_t *a, const json_t *b);

/* A 64-bit hash consistent with schema_value_same (equal values, equal
 * hashes; -0 and 0 alike). */
uint64_t schema_value_hash(const json_t *v);

/* The nesting of arrays and objects in v: 0 for a scalar, 1 for [] or
 * {}. */
unsigned schema_value_depth(const json_t *v);

/* ---- numbers (schema_num.c) ------------------------------------------- */

/* a * b, or cap when it would be over cap. */
uint64_t schema_num_sat_mul(uint64_t a, uint64_t b, uint64_t cap);

/* The smaller and the larger of a and b. */
size_t schema_num_zmin(size_t a, size_t b);
size_t schema_num_zmax(size_t a, size_t b);

/* 1 when d is an integer within the range of int64_t (|d| < 9.2e18). */
int schema_num_integral(double d);

/* 1 when v meets b's multipleOf as ajv and python-jsonschema test it
 * (v / multipleOf is an integer in IEEE double), or b has none. */
int schema_num_mult_ok(const struct bounds *b, double v);

/* 1 when v meets every bound of b: minimum, maximum (exclusive or not)
 * and multipleOf. */
int schema_num_ok(const struct bounds *b, double v);

/*
 * A multipleOf value v as *m / *p, *p == 10^*f, f <= 9: an integer as
 * itself, a real as the shortest such decimal whose nearest double is v.
 * 1, or 0 when there is none (or it is below 1 or over 2^53 units).
 */
int schema_num_decimal(const json_t *v, int64_t *m, int64_t *p, int *f);

/* a / s rounded up and down (s > 0), and the greatest common divisor of
 * a and b (Euclid's, for a, b >= 0). */
int64_t schema_num_ceil_div(int64_t a, int64_t s);
int64_t schema_num_floor_div(int64_t a, int64_t s);
int64_t schema_num_gcd(int64_t a, int64_t b);

/*
 * The integers b allows, as k * step into *is: bounds clamped to +-2^53
 * (int32's range for format int32); an unbounded side stays within SPAN
 * of the other (0..100 when both are open). 0, or -1 after
 * schema_path_fail (TS_EINVAL: no integer within +-2^53 meets them).
 */
int schema_num_int_spec(struct ctx *c, const struct bounds *b,
    struct ispec *is);

/*
 * The numbers b allows into *d: a multipleOf grid, or the first of the
 * grids 0.01, 0.1, 1, 0.001 ... 1e-9 that meets the bounds, or one bound
 * itself. 0, or -1 after schema_path_fail (TS_EINVAL).
 */
int schema_num_dec_spec(struct ctx *c, const struct bounds *b,
    struct dspec *d);

/* The value n * m / p of a grid of schema_num_dec_spec. */
double schema_num_dec_val(const struct dspec *d, int64_t n);

#endif /* TS_JSONSCHEMA_SCHEMA_INT_H */
