/*
 * jinja/parse.c - tokens to the syntax tree, after @huggingface/jinja
 * src/parser.ts (0.5.13): the same statements (set, if/elif/else, for
 * with else and a filter, break, continue; macro, call and filter blocks
 * are refused) and the same precedence, lowest first: a if b else c,
 * or, and, not, comparisons and (not) in, + - ~, * / // %, **, is,
 * |filter, unary + -, calls, .attr and [subscript] and [a:b:c].
 *
 * Unlike parser.ts it never runs off the end of the tokens: every error
 * is "line L, column C: ..." at the token that broke the rule, and
 * blocks and expressions nest at most JINJA_MAX_DEPTH deep (an
 * expression's tree at most 4 * JINJA_MAX_DEPTH high), so evaluating the
 * tree cannot exhaust the stack.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "jinja/jinja_int.h"

#define MAX_TREE (4 * JINJA_MAX_DEPTH)

struct parser {
	struct jinja_template *t;
	const struct jtok *toks;
	size_t n, i;
	int depth;              /* blocks open */
	int edepth;             /* expressions open */
	char *err;
	size_t errlen;
	enum ts_err rc;
};

static void *pfail(struct parser *p, const struct jtok *at,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records the first error, at token `at` (NULL: the end). */
static void *pfail(struct parser *p, const struct jtok *at,
    const char *fmt, ...)
{
	va_list ap;
	size_t w;

	if (p->rc != TS_OK)
		return NULL;
	p->rc = TS_EFORMAT;
	if (p->err == NULL || p->errlen == 0)
		return NULL;
	w = jinja_where(p->t->text, p->t->len, at ? at->pos : p->t->len,
	    p->err, p->errlen);
	if (w < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + w, p->errlen - w, fmt, ap);
		va_end(ap);
	}
	return NULL;
}

/* Past JINJA_MAX_DEPTH: TS_ELIMIT. */
static void *too_deep(struct parser *p, const struct jtok *at)
{
	pfail(p, at, "expression nested deeper than %d", JINJA_MAX_DEPTH);
	p->rc = TS_ELIMIT;
	return NULL;
}

static const struct jtok *peek(struct parser *p, size_t ahead)
{
	return p->i + ahead < p->n ? &p->toks[p->i + ahead] : NULL;
}

static int is(struct parser *p, enum jtok_type type)
{
	const struct jtok *t = peek(p, 0);

	return t != NULL && t->type == type;
}

static int is_name(struct parser *p, size_t ahead, const char *name)
{
	const struct jtok *t = peek(p, ahead);

	return t != NULL && t->type == T_NAME && strcmp(t->s, name) == 0;
}

/* {% NAME ... with NAME one of names (NULL-terminated list) */
static int is_stmt(struct parser *p, const char *const *names)
{
	const struct jtok *t = peek(p, 0), *u = peek(p, 1);

	if (t == NULL || t->type != T_OPEN_STMT || u == NULL ||
	    u->type != T_NAME)
		return 0;
	for (; *names != NULL; names++)
		if (strcmp(u->s, *names) == 0)
			return 1;
	return 0;
}

static void *unexpected(struct parser *p, const char *want)
{
	const struct jtok *t = peek(p, 0);

	if (t == NULL)
		return pfail(p, NULL, "unexpected end of template%s%s",
		    want ? ", expected " : "", want ? want : "");
	if (t->type == T_TEXT)
		return pfail(p, t, "unexpected text%s%s",
		    want ? ", expected " : "", want ? want : "");
	return pfail(p, t, "unexpected '%.40s'%s%s", t->s,
	    want ? ", expected " : "", want ? want : "");
}

static const struct jtok *expect(struct parser *p, enum jtok_type type,
    const char *what)
{
	if (!is(p, type))
		return unexpected(p, what);
	return &p->toks[p->i++];
}

static int expect_name(struct parser *p, const char *name)
{
	char want[48];

	if (!is_name(p, 0, name)) {
		snprintf(want, sizeof(want), "'%s'", name);
		unexpected(p, want);
		return 0;
	}
	p->i++;
	return 1;
}

static struct jnode *node(struct parser *p, enum jnode_kind kind,
    const struct jtok *at)
{
	struct jnode *n = jarena_alloc(&p->t->arena, sizeof(*n));

	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->depth = 1;
	n->pos = at ? at->pos : p->t->len;
	return n;
}

/* Sets n's height from a child's; fails past MAX_TREE. */
static int grow(struct parser *p, struct jnode *n, const struct jnode *c)
{
	if (c != NULL && c->depth + 1 > n->depth)
		n->depth = c->depth + 1;
	if (n->depth > MAX_TREE) {
		too_deep(p, NULL);
		return 0;
	}
	return 1;
}

/* A growable list of nodes, in the arena once done. */
struct nlist {
	struct jnode **v;
	size_t n, cap;
};

static void nl_push(struct nlist *l, struct jnode *n)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = n;
}

static struct jnode **nl_done(struct parser *p, struct nlist *l,
    size_t *n)
{
	struct jnode **v = NULL;

	if (l->n > 0) {
		v = jarena_alloc(&p->t->arena, l->n * sizeof(*v));
		memcpy(v, l->v, l->n * sizeof(*v));
	}
	*n = l->n;
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
	return v;
}

static struct jnode *parse_expr(struct parser *p);
static struct jnode *parse_primary(struct parser *p);
static struct jnode *parse_any(struct parser *p);

static struct jnode *binary(struct parser *p, enum jop op,
    const struct jtok *at, struct jnode *l, struct jnode *r)
{
	struct jnode *n;

	if (l == NULL || r == NULL)
		return NULL;
	n = node(p, E_BIN, at);
	n->op = op;
	n->a = l;
	n->b = r;
	if (!grow(p, n, l) || !grow(p, n, r))
		return NULL;
	return n;
}

/* expr (, expr)* -> a tuple when there is a comma (parseExpressionSequence) */
static struct jnode *parse_seq(struct parser *p, int primary)
{
	struct jnode *first = primary ? parse_primary(p) : parse_expr(p), *n;
	struct nlist l = { 0 };
	size_t k;

	if (first == NULL || !is(p, T_COMMA))
		return first;
	n = node(p, E_TUPLE, peek(p, 0));
	nl_push(&l, first);
	while (is(p, T_COMMA)) {
		struct jnode *e;

		p->i++;
		e = primary ? parse_primary(p) : parse_expr(p);
		if (e == NULL) {
			free(l.v);
			return NULL;
		}
		nl_push(&l, e);
	}
	n->list = nl_done(p, &l, &n->nlist);
	for (k = 0; k < n->nlist; k++)
		if (!grow(p, n, n->list[k]))
			return NULL;
	return n;
}

/* ( args ) of a call (parseArgs "call"): positional, then name=value */
static int parse_args(struct parser *p, struct jnode *call)
{
	struct nlist l = { 0 };
	int kw = 0;
	size_t k;

	if (!expect(p, T_LPAREN, "'('"))
		return 0;
	while (!is(p, T_RPAREN)) {
		const struct jtok *at = peek(p, 0);
		struct jnode *a;

		if (at == NULL) {
			unexpected(p, "')'");
			goto fail;
		}
		if (at->type == T_POW ||
		    (at->type == T_MUL && strcmp(at->s, "*") == 0)) {
			pfail(p, at, "argument unpacking is not supported");
			goto fail;
		}
		a = parse_expr(p);
		if (a == NULL)
			goto fail;
		if (is(p, T_EQUALS)) {
			struct jnode *kwn;

			if (a->kind != E_NAME) {
				pfail(p, at, "expected a name before '='");
				goto fail;
			}
			p->i++;
			kwn = node(p, E_KWARG, at);
			kwn->s = a->s;
			kwn->n = a->n;
			kwn->a = parse_expr(p);
			if (kwn->a == NULL || !grow(p, kwn, kwn->a))
				goto fail;
			a = kwn;
			kw = 1;
		} else if (kw) {
			pfail(p, at, "positional argument after a keyword "
			    "argument");
			goto fail;
		}
		nl_push(&l, a);
		if (is(p, T_COMMA))
			p->i++;
	}
	p->i++;
	call->list = nl_done(p, &l, &call->nlist);
	for (k = 0; k < call->nlist; k++)
		if (!grow(p, call, call->list[k]))
			return 0;
	return 1;
fail:
	free(l.v);
	return 0;
}

/* [ ... ]: a subscript or a slice (parseMemberExpressionArgumentsList) */
static struct jnode *parse_subscript(struct parser *p, const struct jtok *at)
{
	struct jnode *part[3] = { NULL, NULL, NULL }, *n;
	size_t np = 0;
	int slice = 0;

	while (!is(p, T_RBRACKET)) {
		if (peek(p, 0) == NULL)
			return unexpected(p, "']'");
		if (np == 3)
			return pfail(p, peek(p, 0), "a slice takes at most 3 "
			    "parts");
		if (is(p, T_COLON)) {
			part[np++] = NULL;
			p->i++;
			slice = 1;
		} else {
			part[np] = parse_expr(p);
			if (part[np++] == NULL)
				return NULL;
			if (is(p, T_COLON)) {
				p->i++;
				slice = 1;
			}
		}
	}
	if (np == 0)
		return pfail(p, at, "empty subscript");
	if (!slice)
		return part[0];
	n = node(p, E_SLICE, at);
	n->a = part[0];
	n->b = np > 1 ? part[1] : NULL;
	n->c = np > 2 ? part[2] : NULL;
	if (!grow(p, n, n->a) || !grow(p, n, n->b) || !grow(p, n, n->c))
		return NULL;
	return n;
}

static struct jnode *parse_member(struct parser *p, struct jnode *obj)
{
	while (obj != NULL && (is(p, T_DOT) || is(p, T_LBRACKET))) {
		const struct jtok *at = &p->toks[p->i++];
		struct jnode *n = node(p, E_MEMBER, at), *prop;

		if (at->type == T_LBRACKET) {
			prop = parse_subscript(p, at);
			if (prop == NULL ||
			    !expect(p, T_RBRACKET, "']'"))
				return NULL;
			n->flag = 1;
		} else {
			prop = parse_primary(p);
			if (prop == NULL)
				return NULL;
			if (prop->kind != E_NAME && prop->kind != E_INT)
				return pfail(p, at, "expected a name after "
				    "'.'");
		}
		n->a = obj;
		n->b = prop;
		if (!grow(p, n, obj) || !grow(p, n, prop))
			return NULL;
		obj = n;
	}
	return obj;
}

static struct jnode *parse_call(struct parser *p, struct jnode *callee)
{
	while (callee != NULL && is(p, T_LPAREN)) {
		struct jnode *n = node(p, E_CALL, peek(p, 0));

		n->a = callee;
		if (!grow(p, n, callee) || !parse_args(p, n))
			return NULL;
		callee = parse_member(p, n);
	}
	return callee;
}

static struct jnode *parse_unary(struct parser *p)
{
	const struct jtok *t = peek(p, 0);
	struct jnode *n;

	if (t != NULL && (t->type == T_UNARY || t->type == T_ADD) &&
	    (strcmp(t->s, "-") == 0 || strcmp(t->s, "+") == 0)) {
		p->i++;
		if (++p->edepth > JINJA_MAX_DEPTH)
			return too_deep(p, t);
		n = node(p, E_UNARY, t);
		n->op = t->s[0] == '-' ? OP_SUB : OP_ADD;
		n->a = parse_unary(p);
		p->edepth--;
		if (n->a == NULL || !grow(p, n, n->a))
			return NULL;
		return n;
	}
	return parse_call(p, parse_member(p, parse_primary(p)));
}

static struct jnode *parse_filter(struct parser *p)
{
	struct jnode *operand = parse_unary(p);

	while (operand != NULL && is(p, T_PIPE)) {
		const struct jtok *at = &p->toks[p->i++], *name = peek(p, 0);
		struct jnode *n = node(p, E_FILTER, at);

		if (name == NULL || name->type != T_NAME)
			return unexpected(p, "a filter name");
		p->i++;
		n->s = name->s;
		n->n = name->n;
		n->a = operand;
		if (is(p, T_LPAREN)) {
			n->flag = 1;
			if (!parse_args(p, n))
				return NULL;
		}
		if (!grow(p, n, operand))
			return NULL;
		operand = n;
	}
	return operand;
}

static struct jnode *parse_test(struct parser *p)
{
	struct jnode *operand = parse_filter(p);

	while (operand != NULL && is_name(p, 0, "is")) {
		const struct jtok *at = &p->toks[p->i++], *name;
		struct jnode *n = node(p, E_TEST, at);

		if (is_name(p, 0, "not")) {
			n->flag = 1;
			p->i++;
		}
		name = peek(p, 0);
		if (name == NULL || name->type != T_NAME)
			return unexpected(p, "a test name");
		p->i++;
		n->s = name->s;
		n->n = name->n;
		n->a = operand;
		if (is(p, T_LPAREN)) {   /* is equalto(x), a Jinja form */
			p->i++;
			n->b = parse_expr(p);
			if (n->b == NULL || !expect(p, T_RPAREN, "')'"))
				return NULL;
		}
		if (!grow(p, n, operand) || !grow(p, n, n->b))
			return NULL;
		operand = n;
	}
	return operand;
}

static struct jnode *parse_pow(struct parser *p)
{
	struct jnode *l = parse_test(p);

	while (l != NULL && is(p, T_POW)) {
		const struct jtok *at = &p->toks[p->i++];

		l = binary(p, OP_POW, at, l, parse_test(p));
	}
	return l;
}

static struct jnode *parse_mul(struct parser *p)
{
	struct jnode *l = parse_pow(p);

	while (l != NULL && is(p, T_MUL)) {
		const struct jtok *at = &p->toks[p->i++];
		enum jop op = strcmp(at->s, "*") == 0 ? OP_MUL :
		    strcmp(at->s, "/") == 0 ? OP_DIV :
		    strcmp(at->s, "//") == 0 ? OP_FLOORDIV : OP_MOD;

		l = binary(p, op, at, l, parse_pow(p));
	}
	return l;
}

static struct jnode *parse_add(struct parser *p)
{
	struct jnode *l = parse_mul(p);

	while (l != NULL && is(p, T_ADD)) {
		const struct jtok *at = &p->toks[p->i++];
		enum jop op = at->s[0] == '+' ? OP_ADD :
		    at->s[0] == '-' ? OP_SUB : OP_CONCAT;

		l = binary(p, op, at, l, parse_mul(p));
	}
	return l;
}

static struct jnode *parse_cmp(struct parser *p)
{
	struct jnode *l = parse_add(p);

	while (l != NULL) {
		const struct jtok *at = peek(p, 0);
		enum jop op;

		if (is_name(p, 0, "not") && is_name(p, 1, "in")) {
			op = OP_NOTIN;
			p->i += 2;
		} else if (is_name(p, 0, "in")) {
			op = OP_IN;
			p->i++;
		} else if (is(p, T_CMP)) {
			const char *s = at->s;

			op = strcmp(s, "==") == 0 ? OP_EQ :
			    strcmp(s, "!=") == 0 ? OP_NE :
			    strcmp(s, "<") == 0 ? OP_LT :
			    strcmp(s, ">") == 0 ? OP_GT :
			    strcmp(s, "<=") == 0 ? OP_LE : OP_GE;
			p->i++;
		} else {
			break;
		}
		l = binary(p, op, at, l, parse_add(p));
	}
	return l;
}

static struct jnode *parse_not(struct parser *p)
{
	const struct jtok *at;
	struct jnode *n;

	if (!is_name(p, 0, "not"))
		return parse_cmp(p);
	at = &p->toks[p->i++];
	if (++p->edepth > JINJA_MAX_DEPTH)
		return too_deep(p, at);
	n = node(p, E_UNARY, at);
	n->op = OP_NOT;
	n->a = parse_not(p);
	p->edepth--;
	if (n->a == NULL || !grow(p, n, n->a))
		return NULL;
	return n;
}

static struct jnode *parse_and(struct parser *p)
{
	struct jnode *l = parse_not(p);

	while (l != NULL && is_name(p, 0, "and")) {
		const struct jtok *at = &p->toks[p->i++];

		l = binary(p, OP_AND, at, l, parse_not(p));
	}
	return l;
}

static struct jnode *parse_or(struct parser *p)
{
	struct jnode *l = parse_and(p);

	while (l != NULL && is_name(p, 0, "or")) {
		const struct jtok *at = &p->toks[p->i++];

		l = binary(p, OP_OR, at, l, parse_and(p));
	}
	return l;
}

/* a if b else c; `a if b` alone is a select (undefined when b is false) */
static struct jnode *parse_expr(struct parser *p)
{
	struct jnode *a, *n;
	const struct jtok *at;

	if (++p->edepth > JINJA_MAX_DEPTH)
		return too_deep(p, peek(p, 0));
	a = parse_or(p);
	if (a != NULL && is_name(p, 0, "if")) {
		at = &p->toks[p->i++];
		n = node(p, E_SELECT, at);
		n->a = a;
		n->b = parse_or(p);
		if (n->b == NULL)
			return NULL;
		if (is_name(p, 0, "else")) {
			p->i++;
			n->kind = E_TERNARY;
			n->c = parse_expr(p);
			if (n->c == NULL)
				return NULL;
		}
		if (!grow(p, n, n->a) || !grow(p, n, n->b) ||
		    !grow(p, n, n->c))
			return NULL;
		a = n;
	}
	p->edepth--;
	return a;
}

static char *unescape_num(const struct jtok *t, struct jnode *n)
{
	char *end;

	errno = 0;
	if (strchr(t->s, '.') != NULL) {
		n->kind = E_FLOAT;
		n->f = strtod(t->s, &end);
	} else {
		n->kind = E_INT;
		n->i = strtoll(t->s, &end, 10);
		if (errno == ERANGE)
			return NULL;
	}
	return end;
}

static struct jnode *parse_primary(struct parser *p)
{
	const struct jtok *t = peek(p, 0);
	struct jnode *n;
	struct nlist l = { 0 }, l2 = { 0 };
	size_t k;

	if (t == NULL)
		return unexpected(p, "an expression");
	switch (t->type) {
	case T_NUM:
		p->i++;
		n = node(p, E_INT, t);
		if (unescape_num(t, n) == NULL)
			return pfail(p, t, "number out of range");
		return n;
	case T_STR: {
		/* adjacent literals join: 'a' 'b' */
		size_t len = 0, o = 0, j = p->i;
		char *s;

		while (j < p->n && p->toks[j].type == T_STR)
			len += p->toks[j++].n;
		s = jarena_alloc(&p->t->arena, len + 1);
		for (; p->i < j; p->i++) {
			memcpy(s + o, p->toks[p->i].s, p->toks[p->i].n);
			o += p->toks[p->i].n;
		}
		s[o] = '\0';
		n = node(p, E_STR, t);
		n->s = s;
		n->n = o;
		return n;
	}
	case T_NAME:
		p->i++;
		n = node(p, E_NAME, t);
		n->s = t->s;
		n->n = t->n;
		return n;
	case T_LPAREN:
		p->i++;
		n = parse_seq(p, 0);
		if (n == NULL || !expect(p, T_RPAREN, "')'"))
			return NULL;
		return n;
	case T_LBRACKET:
	case T_LBRACE: {
		int dict = t->type == T_LBRACE;

		p->i++;
		n = node(p, dict ? E_DICT : E_LIST, t);
		while (!is(p, dict ? T_RBRACE : T_RBRACKET)) {
			struct jnode *e;

			if (peek(p, 0) == NULL) {
				unexpected(p, dict ? "'}'" : "']'");
				goto fail;
			}
			e = parse_expr(p);
			if (e == NULL)
				goto fail;
			nl_push(&l, e);
			if (dict) {
				if (!expect(p, T_COLON, "':'"))
					goto fail;
				e = parse_expr(p);
				if (e == NULL)
					goto fail;
				nl_push(&l2, e);
			}
			if (is(p, T_COMMA))
				p->i++;
		}
		p->i++;
		n->list = nl_done(p, &l, &n->nlist);
		n->list2 = nl_done(p, &l2, &n->nlist2);
		for (k = 0; k < n->nlist; k++)
			if (!grow(p, n, n->list[k]))
				return NULL;
		for (k = 0; k < n->nlist2; k++)
			if (!grow(p, n, n->list2[k]))
				return NULL;
		return n;
	}
	default:
		return unexpected(p, "an expression");
	}
fail:
	free(l.v);
	free(l2.v);
	return NULL;
}

/* Statements until one of `ends` ({% NAME with NAME in ends). */
static int parse_body(struct parser *p, const char *const *ends,
    struct jnode ***body, size_t *n, const char *want)
{
	struct nlist l = { 0 };

	while (!is_stmt(p, ends)) {
		struct jnode *s;

		if (peek(p, 0) == NULL) {
			free(l.v);
			unexpected(p, want);
			return 0;
		}
		s = parse_any(p);
		if (p->rc != TS_OK) {
			free(l.v);
			return 0;
		}
		if (s != NULL)
			nl_push(&l, s);
	}
	*body = nl_done(p, &l, n);
	return 1;
}

static const char *const ends_if[] = { "elif", "else", "endif", NULL };
static const char *const ends_endif[] = { "endif", NULL };
static const char *const ends_for[] = { "endfor", "else", NULL };
static const char *const ends_endfor[] = { "endfor", NULL };
static const char *const ends_set[] = { "endset", NULL };

/* after {% if / {% elif: test %} body (elif ... | else body)? */
static struct jnode *parse_if(struct parser *p, const struct jtok *at)
{
	struct jnode *n = node(p, S_IF, at), *elif;

	n->a = parse_expr(p);
	if (n->a == NULL || !expect(p, T_CLOSE_STMT, "'%}'"))
		return NULL;
	if (!parse_body(p, ends_if, &n->list, &n->nlist, "'{% endif %}'"))
		return NULL;
	if (is_name(p, 1, "elif")) {
		at = peek(p, 1);
		p->i += 2;
		/* an elif nests an if in the else branch: it counts */
		if (++p->depth > JINJA_MAX_DEPTH) {
			pfail(p, at, "blocks nested deeper than %d",
			    JINJA_MAX_DEPTH);
			p->rc = TS_ELIMIT;
			return NULL;
		}
		elif = parse_if(p, at);
		p->depth--;
		if (elif == NULL)
			return NULL;
		n->list2 = jarena_alloc(&p->t->arena, sizeof(*n->list2));
		n->list2[0] = elif;
		n->nlist2 = 1;
	} else if (is_name(p, 1, "else")) {
		p->i += 2;
		if (!expect(p, T_CLOSE_STMT, "'%}'") ||
		    !parse_body(p, ends_endif, &n->list2, &n->nlist2,
		    "'{% endif %}'"))
			return NULL;
	}
	return n;
}

static struct jnode *parse_for(struct parser *p, const struct jtok *at)
{
	struct jnode *n = node(p, S_FOR, at), *it;

	n->a = parse_seq(p, 1);
	if (n->a == NULL)
		return NULL;
	if (n->a->kind != E_NAME && n->a->kind != E_TUPLE)
		return pfail(p, at, "expected a name or names after 'for'");
	if (!expect_name(p, "in"))
		return NULL;
	it = parse_expr(p);
	if (it == NULL || !expect(p, T_CLOSE_STMT, "'%}'"))
		return NULL;
	if (it->kind == E_SELECT) {     /* for x in xs if cond */
		n->b = it->a;
		n->c = it->b;
	} else {
		n->b = it;
	}
	if (!parse_body(p, ends_for, &n->list, &n->nlist, "'{% endfor %}'"))
		return NULL;
	if (is_name(p, 1, "else")) {
		p->i += 2;
		if (!expect(p, T_CLOSE_STMT, "'%}'") ||
		    !parse_body(p, ends_endfor, &n->list2, &n->nlist2,
		    "'{% endfor %}'"))
			return NULL;
	}
	return n;
}

static struct jnode *parse_set(struct parser *p, const struct jtok *at)
{
	struct jnode *n = node(p, S_SET, at);

	n->a = parse_seq(p, 0);
	if (n->a == NULL)
		return NULL;
	if (n->a->kind != E_NAME && n->a->kind != E_TUPLE &&
	    !(n->a->kind == E_MEMBER && !n->a->flag))
		return pfail(p, at, "cannot assign to this expression");
	if (is(p, T_EQUALS)) {
		p->i++;
		n->b = parse_seq(p, 0);
		if (n->b == NULL)
			return NULL;
	} else {
		if (!expect(p, T_CLOSE_STMT, "'=' or '%}'") ||
		    !parse_body(p, ends_set, &n->list, &n->nlist,
		    "'{% endset %}'"))
			return NULL;
		p->i++;
		if (!expect_name(p, "endset"))
			return NULL;
	}
	if (!expect(p, T_CLOSE_STMT, "'%}'"))
		return NULL;
	return n;
}

static struct jnode *parse_stmt(struct parser *p)
{
	const struct jtok *open = &p->toks[p->i++], *name = peek(p, 0);
	struct jnode *n = NULL;
	const char *end = NULL;

	if (name == NULL || name->type != T_NAME)
		return unexpected(p, "a statement name");
	if (++p->depth > JINJA_MAX_DEPTH) {
		pfail(p, open, "blocks nested deeper than %d",
		    JINJA_MAX_DEPTH);
		p->rc = TS_ELIMIT;
		return NULL;
	}
	p->i++;
	if (strcmp(name->s, "set") == 0) {
		n = parse_set(p, name);
	} else if (strcmp(name->s, "if") == 0) {
		n = parse_if(p, name);
		end = "endif";
	} else if (strcmp(name->s, "for") == 0) {
		n = parse_for(p, name);
		end = "endfor";
	} else if (strcmp(name->s, "break") == 0 ||
	    strcmp(name->s, "continue") == 0) {
		n = node(p, name->s[0] == 'b' ? S_BREAK : S_CONTINUE, name);
		if (!expect(p, T_CLOSE_STMT, "'%}'"))
			return NULL;
	} else if (strcmp(name->s, "macro") == 0 ||
	    strcmp(name->s, "call") == 0 ||
	    strcmp(name->s, "filter") == 0) {
		return pfail(p, name, "'%s' blocks are not supported",
		    name->s);
	} else {
		return pfail(p, name, "unexpected '%.40s'", name->s);
	}
	if (n == NULL)
		return NULL;
	if (end != NULL) {
		if (!expect(p, T_OPEN_STMT, "'{%'") || !expect_name(p, end) ||
		    !expect(p, T_CLOSE_STMT, "'%}'"))
			return NULL;
	}
	p->depth--;
	return n;
}

/* One statement; NULL for a comment (and on error, with p->rc set). */
static struct jnode *parse_any(struct parser *p)
{
	const struct jtok *t = peek(p, 0);
	struct jnode *n;

	switch (t->type) {
	case T_COMMENT:
		p->i++;
		return NULL;
	case T_TEXT:
		p->i++;
		n = node(p, S_TEXT, t);
		n->s = t->s;
		n->n = t->n;
		return n;
	case T_OPEN_STMT:
		return parse_stmt(p);
	case T_OPEN_EXPR:
		p->i++;
		n = node(p, S_PRINT, t);
		n->a = parse_expr(p);
		if (n->a == NULL || !expect(p, T_CLOSE_EXPR, "'}}'"))
			return NULL;
		return n;
	default:
		return unexpected(p, NULL);
	}
}

enum ts_err jinja_parse_tokens(struct jinja_template *t,
    const struct jtok *toks, size_t ntoks, char *err, size_t errlen)
{
	struct parser p;
	struct nlist l = { 0 };

	memset(&p, 0, sizeof(p));
	p.t = t;
	p.toks = toks;
	p.n = ntoks;
	p.err = err;
	p.errlen = errlen;
	while (p.i < p.n) {
		struct jnode *s = parse_any(&p);

		if (p.rc != TS_OK)
			break;
		if (s != NULL)
			nl_push(&l, s);
	}
	if (p.rc != TS_OK) {
		free(l.v);
		return p.rc;
	}
	t->body = nl_done(&p, &l, &t->nbody);
	return TS_OK;
}
