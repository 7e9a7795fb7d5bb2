/*
 * jinja/jinja_int.h - what the files of the Jinja interpreter share: the
 * arena, the tokens (lex.c), the syntax tree (parse.c), the values
 * (value.c) and the interpreter's state (eval.c, filters.c). Not for
 * other layers: they include jinja/jinja.h.
 */
#ifndef TS_JINJA_INT_H
#define TS_JINJA_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/buf.h"
#include "common/ts.h"

/* ---- arena: every node, token and runtime value lives in one, freed at
 * once; `cap` bounds its total size in bytes (0: no bound). */
struct jarena_chunk;
struct jarena {
	struct jarena_chunk *head;
	size_t used;            /* bytes handed out, all chunks */
	size_t cap;
};
/* NULL when the arena would pass cap (never on out of memory: aborts). */
void *jarena_alloc(struct jarena *a, size_t n);
void jarena_free(struct jarena *a);

/* ---- tokens (after @huggingface/jinja src/lexer.ts TOKEN_TYPES) ---- */
enum jtok_type {
	T_TEXT, T_NUM, T_STR, T_NAME, T_EQUALS, T_LPAREN, T_RPAREN,
	T_OPEN_STMT, T_CLOSE_STMT, T_OPEN_EXPR, T_CLOSE_EXPR, T_LBRACKET,
	T_RBRACKET, T_LBRACE, T_RBRACE, T_COMMA, T_DOT, T_COLON, T_PIPE,
	T_ADD, T_MUL, T_POW, T_CMP, T_UNARY, T_COMMENT
};
struct jtok {
	enum jtok_type type;
	const char *s;          /* the text, NUL-terminated (arena) */
	size_t n;
	size_t pos;             /* byte offset in the template as given */
};

/* Tokenizes text (len bytes) into the arena. TS_OK with *toks, *ntoks,
 * or TS_EFORMAT with err "line L, column C: ...". */
enum ts_err jinja_lex(struct jarena *a, const char *text, size_t len,
    struct jtok **toks, size_t *ntoks, char *err, size_t errlen);
/* Writes "line L, column C: " for byte offset pos of text into err. */
size_t jinja_where(const char *text, size_t len, size_t pos, char *err,
    size_t errlen);

/* ---- the syntax tree ---- */
enum jnode_kind {
	/* statements */
	S_TEXT, S_PRINT, S_IF, S_FOR, S_SET, S_BREAK, S_CONTINUE, S_MACRO,
	/* expressions */
	E_STR, E_INT, E_FLOAT, E_NAME, E_LIST, E_TUPLE, E_DICT, E_MEMBER,
	E_SLICE, E_CALL, E_FILTER, E_TEST, E_BIN, E_UNARY, E_TERNARY,
	E_SELECT, E_KWARG
};
enum jop {
	OP_NONE, OP_OR, OP_AND, OP_NOT, OP_IN, OP_NOTIN, OP_EQ, OP_NE,
	OP_LT, OP_GT, OP_LE, OP_GE, OP_ADD, OP_SUB, OP_CONCAT, OP_MUL,
	OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW
};
struct jnode {
	enum jnode_kind kind;
	enum jop op;
	int flag;               /* E_MEMBER: computed; E_TEST: negated;
				   E_FILTER: called with (args); S_FOR:
				   the body names `loop` */
	int depth;              /* height of this subtree */
	size_t pos;             /* byte offset in the template */
	const char *s;          /* E_STR, E_NAME, E_FILTER, E_TEST, E_KWARG,
				   S_TEXT: text (arena, NUL-terminated) */
	size_t n;
	long long i;            /* E_INT */
	double f;               /* E_FLOAT */
	struct jv *lit;         /* E_STR, E_INT, E_FLOAT: the value, made
				   once (template arena; never changed) */
	struct jnode *a, *b, *c;
	struct jnode **list;    /* body, items, args, dict keys */
	size_t nlist;
	struct jnode **list2;   /* else body, dict values */
	size_t nlist2;
};
struct jinja_template {
	struct jarena arena;
	char *text;             /* the template as given (for positions) */
	size_t len;
	struct jnode **body;
	size_t nbody;
};
enum ts_err jinja_parse_tokens(struct jinja_template *t,
    const struct jtok *toks, size_t ntoks, char *err, size_t errlen);

/* ---- runtime values (after runtime.ts RuntimeValue) ---- */
enum jv_type {
	JV_UNDEF, JV_NULL, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_ARRAY,
	JV_TUPLE, JV_OBJECT, JV_KWARGS, JV_NS, JV_FUNC
};
struct jv;
/* A macro: its node and the scope it was defined in (eval.c). */
struct jmacro {
	const struct jnode *node;
	void *scope;
};
struct jv_pair {
	const char *k;
	size_t kn;
	struct jv *v;
};
struct jv {
	enum jv_type t;
	union {
		int b;
		long long i;
		double f;
		struct { const char *p; size_t n; } s;
		struct { struct jv **v; size_t n, cap; } a;
		struct { struct jv_pair *v; size_t n, cap; } o;
		struct {
			int id;
			struct jv *self;        /* a method's object */
			struct jmacro *macro;   /* a macro's */
		} fn;
	} u;
};

/* The interpreter's state for one render. */
struct jrun {
	struct jarena arena;
	unsigned long steps;
	int calls;              /* macro calls open */
	int frames;             /* evaluations open (eval, run_body) */
	time_t now;
	size_t max_out;
	char *err;
	size_t errlen;
	enum ts_err rc;         /* the first error, TS_OK while none */
	const struct jinja_template *t;
};
/* Records the first error (printf format) and returns NULL. */
struct jv *jrun_fail(struct jrun *r, enum ts_err rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Counts n steps; 0 and an error past JINJA_MAX_STEPS. */
int jrun_step(struct jrun *r, unsigned long n);
void *jrun_alloc(struct jrun *r, size_t n);

struct jv *jv_new(struct jrun *r, enum jv_type t);
struct jv *jv_str(struct jrun *r, const char *p, size_t n);
struct jv *jv_int(struct jrun *r, long long i);
struct jv *jv_float(struct jrun *r, double f);
struct jv *jv_bool(struct jrun *r, int b);      /* shared */
struct jv *jv_null(struct jrun *r);             /* shared */
struct jv *jv_undef(struct jrun *r);            /* shared */
struct jv *jv_array(struct jrun *r, enum jv_type t, size_t cap);
int jv_push(struct jrun *r, struct jv *arr, struct jv *v);
int jv_obj_set(struct jrun *r, struct jv *o, const char *k, size_t kn,
    struct jv *v);
struct jv *jv_obj_get(const struct jv *o, const char *k, size_t kn);
struct jv *jv_from_json(struct jrun *r, const void *json, int depth);
int jv_truthy(const struct jv *v);
int jv_is_array(const struct jv *v);
int jv_is_map(const struct jv *v);   /* object, kwargs (not namespace) */
const char *jv_type_name(const struct jv *v);

/* The text `{{ v }}` prints (RuntimeValue.toString()); appended to b. */
int jv_print(struct jrun *r, struct ts_buf *b, const struct jv *v);
/* The text JavaScript's String(v.value) gives, as `~` and `+` use it. */
int jv_raw(struct jrun *r, struct ts_buf *b, const struct jv *v);
/* JSON.stringify-like output of runtime.ts toJSON(). */
struct jtojson {
	long indent;            /* <= 0: none */
	int ensure_ascii;
	int sort_keys;
	const char *item_sep, *key_sep;   /* NULL: the defaults */
	int undef_null;         /* undefined -> null (else "undefined") */
};
int jv_tojson(struct jrun *r, struct ts_buf *b, const struct jv *v,
    const struct jtojson *o, int depth);
/* JavaScript's Number.prototype.toString() of d. */
void jv_fmt_number(char *out, size_t outlen, double d);
/* Appends to b, failing the render (0) when b is over its limit. */
int jrun_put(struct jrun *r, struct ts_buf *b, const void *p, size_t n);
/* JavaScript's /\s/ on the code point at s (n bytes left): the bytes it
 * takes, 0 when it is not a space. */
size_t jinja_space_at(const char *s, size_t n);
/* The first n2 bytes at h2 within (h, n), or NULL (memmem). */
const char *jinja_find(const char *h, size_t n, const char *h2, size_t n2);
/* The code point at s and its length in bytes (invalid: the byte, 1). */
size_t jinja_utf8_next(const char *s, size_t n, uint32_t *cp);

/* ---- operators (ops.c) ---- */
/* l OP r for every operator but and/or (evaluated first, both). */
struct jv *jinja_binop(struct jrun *r, enum jop op, struct jv *l,
    struct jv *rt);
/* obj[a:b:c] of a list or a string (by code points); NULL parts are
 * absent. */
struct jv *jinja_slice(struct jrun *r, struct jv *obj, struct jv *a,
    struct jv *b, struct jv *c);

/* ---- filters, tests, methods (filters.c) ---- */
enum jfn {
	F_RANGE = 1, F_RAISE, F_NAMESPACE, F_STRFTIME, F_MACRO,
	M_UPPER, M_LOWER, M_STRIP, M_TITLE, M_CAPITALIZE, M_RSTRIP, M_LSTRIP,
	M_STARTSWITH, M_ENDSWITH, M_SPLIT, M_REPLACE,
	M_GET, M_ITEMS, M_KEYS, M_VALUES
};
/* The builtin attribute `name` of v (a bound method, or a string's or
 * list's length), NULL when none. */
struct jv *jinja_builtin_attr(struct jrun *r, struct jv *v,
    const char *name, size_t n);
/* Calls fn with args (kwargs last as a JV_KWARGS). */
struct jv *jinja_call(struct jrun *r, struct jv *fn, struct jv **args,
    size_t nargs);
struct jv *jinja_filter(struct jrun *r, struct jv *operand,
    const char *name, int called, struct jv **args, size_t nargs);
/* -1 on error (unknown test). */
int jinja_test(struct jrun *r, const char *name, struct jv *v,
    struct jv *arg);

#endif /* TS_JINJA_INT_H */
