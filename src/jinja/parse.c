/*
 * jinja/parse.c - tokens to the syntax tree: the parser's helpers and the
 * expressions (the statements are in parse_stmt.c), after
 * @huggingface/jinja src/parser.ts (0.5.13), with the same precedence,
 * lowest first: a if b else c,
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
#include "jinja/parse_int.h"

#define MAX_TREE (4 * JINJA_MAX_DEPTH)

/* Records the first error, at token `at` (NULL: the end). */
void *jp_fail(struct parser *p, const struct jtok *at,
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
	jp_fail(p, at, "expression nested deeper than %d", JINJA_MAX_DEPTH);
	p->rc = TS_ELIMIT;
	return NULL;
}

const struct jtok *jp_peek(struct parser *p, size_t ahead)
{
	return p->i + ahead < p->n ? &p->toks[p->i + ahead] : NULL;
}

int jp_is(struct parser *p, enum jtok_type type)
{
	const struct jtok *t = jp_peek(p, 0);

	return t != NULL && t->type == type;
}

int jp_is_name(struct parser *p, size_t ahead, const char *name)
{
	const struct jtok *t = jp_peek(p, ahead);

	return t != NULL && t->type == T_NAME && strcmp(t->s, name) == 0;
}

void *jp_unexpected(struct parser *p, const char *want)
{
	const struct jtok *t = jp_peek(p, 0);

	if (t == NULL)
		return jp_fail(p, NULL, "unexpected end of template%s%s",
		    want ? ", expected " : "", want ? want : "");
	if (t->type == T_TEXT)
		return jp_fail(p, t, "unexpected text%s%s",
		    want ? ", expected " : "", want ? want : "");
	return jp_fail(p, t, "unexpected '%.40s'%s%s", t->s,
	    want ? ", expected " : "", want ? want : "");
}

const struct jtok *jp_expect(struct parser *p, enum jtok_type type,
    const char *what)
{
	if (!jp_is(p, type))
		return jp_unexpected(p, what);
	return &p->toks[p->i++];
}

int jp_expect_name(struct parser *p, const char *name)
{
	char want[48];

	if (!jp_is_name(p, 0, name)) {
		snprintf(want, sizeof(want), "'%s'", name);
		jp_unexpected(p, want);
		return 0;
	}
	p->i++;
	return 1;
}

struct jnode *jp_node(struct parser *p, enum jnode_kind kind,
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

void jp_push(struct nlist *l, struct jnode *n)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = n;
}

struct jnode **jp_done(struct parser *p, struct nlist *l,
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

struct jnode *jp_expr(struct parser *p);
static struct jnode *parse_primary(struct parser *p);

static struct jnode *binary(struct parser *p, enum jop op,
    const struct jtok *at, struct jnode *l, struct jnode *r)
{
	struct jnode *n;

	if (l == NULL || r == NULL)
		return NULL;
	n = jp_node(p, E_BIN, at);
	n->op = op;
	n->a = l;
	n->b = r;
	if (!grow(p, n, l) || !grow(p, n, r))
		return NULL;
	return n;
}

/* expr (, expr)* -> a tuple when there is a comma (parseExpressionSequence) */
struct jnode *jp_seq(struct parser *p, int primary)
{
	struct jnode *first = primary ? parse_primary(p) : jp_expr(p), *n;
	struct nlist l = { 0 };
	size_t k;

	if (first == NULL || !jp_is(p, T_COMMA))
		return first;
	n = jp_node(p, E_TUPLE, jp_peek(p, 0));
	jp_push(&l, first);
	while (jp_is(p, T_COMMA)) {
		struct jnode *e;

		p->i++;
		e = primary ? parse_primary(p) : jp_expr(p);
		if (e == NULL) {
			free(l.v);
			return NULL;
		}
		jp_push(&l, e);
	}
	n->list = jp_done(p, &l, &n->nlist);
	for (k = 0; k < n->nlist; k++)
		if (!grow(p, n, n->list[k]))
			return NULL;
	return n;
}

/* ( args ) of a call (parseArgs "call"): positional, then name=value */
int jp_args(struct parser *p, struct jnode *call)
{
	struct nlist l = { 0 };
	int kw = 0;
	size_t k;

	if (!jp_expect(p, T_LPAREN, "'('"))
		return 0;
	while (!jp_is(p, T_RPAREN)) {
		const struct jtok *at = jp_peek(p, 0);
		struct jnode *a;

		if (at == NULL) {
			jp_unexpected(p, "')'");
			goto fail;
		}
		if (at->type == T_POW ||
		    (at->type == T_MUL && strcmp(at->s, "*") == 0)) {
			jp_fail(p, at, "argument unpacking is not supported");
			goto fail;
		}
		a = jp_expr(p);
		if (a == NULL)
			goto fail;
		if (jp_is(p, T_EQUALS)) {
			struct jnode *kwn;

			if (a->kind != E_NAME) {
				jp_fail(p, at, "expected a name before '='");
				goto fail;
			}
			p->i++;
			kwn = jp_node(p, E_KWARG, at);
			kwn->s = a->s;
			kwn->n = a->n;
			kwn->a = jp_expr(p);
			if (kwn->a == NULL || !grow(p, kwn, kwn->a))
				goto fail;
			a = kwn;
			kw = 1;
		} else if (kw) {
			jp_fail(p, at, "positional argument after a keyword "
			    "argument");
			goto fail;
		}
		jp_push(&l, a);
		if (jp_is(p, T_COMMA))
			p->i++;
	}
	p->i++;
	call->list = jp_done(p, &l, &call->nlist);
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

	while (!jp_is(p, T_RBRACKET)) {
		if (jp_peek(p, 0) == NULL)
			return jp_unexpected(p, "']'");
		if (np == 3)
			return jp_fail(p, jp_peek(p, 0), "a slice takes at most 3 "
			    "parts");
		if (jp_is(p, T_COLON)) {
			part[np++] = NULL;
			p->i++;
			slice = 1;
		} else {
			part[np] = jp_expr(p);
			if (part[np++] == NULL)
				return NULL;
			if (jp_is(p, T_COLON)) {
				p->i++;
				slice = 1;
			}
		}
	}
	if (np == 0)
		return jp_fail(p, at, "empty subscript");
	if (!slice)
		return part[0];
	n = jp_node(p, E_SLICE, at);
	n->a = part[0];
	n->b = np > 1 ? part[1] : NULL;
	n->c = np > 2 ? part[2] : NULL;
	if (!grow(p, n, n->a) || !grow(p, n, n->b) || !grow(p, n, n->c))
		return NULL;
	return n;
}

static struct jnode *parse_member(struct parser *p, struct jnode *obj)
{
	while (obj != NULL && (jp_is(p, T_DOT) || jp_is(p, T_LBRACKET))) {
		const struct jtok *at = &p->toks[p->i++];
		struct jnode *n = jp_node(p, E_MEMBER, at), *prop;

		if (at->type == T_LBRACKET) {
			prop = parse_subscript(p, at);
			if (prop == NULL ||
			    !jp_expect(p, T_RBRACKET, "']'"))
				return NULL;
			n->flag = 1;
		} else {
			prop = parse_primary(p);
			if (prop == NULL)
				return NULL;
			if (prop->kind != E_NAME && prop->kind != E_INT)
				return jp_fail(p, at, "expected a name after "
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
	while (callee != NULL && jp_is(p, T_LPAREN)) {
		struct jnode *n = jp_node(p, E_CALL, jp_peek(p, 0));

		n->a = callee;
		if (!grow(p, n, callee) || !jp_args(p, n))
			return NULL;
		callee = parse_member(p, n);
	}
	return callee;
}

static struct jnode *parse_unary(struct parser *p)
{
	const struct jtok *t = jp_peek(p, 0);
	struct jnode *n;

	if (t != NULL && (t->type == T_UNARY || t->type == T_ADD) &&
	    (strcmp(t->s, "-") == 0 || strcmp(t->s, "+") == 0)) {
		p->i++;
		if (++p->edepth > JINJA_MAX_DEPTH)
			return too_deep(p, t);
		n = jp_node(p, E_UNARY, t);
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

	while (operand != NULL && jp_is(p, T_PIPE)) {
		const struct jtok *at = &p->toks[p->i++], *name = jp_peek(p, 0);
		struct jnode *n = jp_node(p, E_FILTER, at);

		if (name == NULL || name->type != T_NAME)
			return jp_unexpected(p, "a filter name");
		p->i++;
		n->s = name->s;
		n->n = name->n;
		n->a = operand;
		if (jp_is(p, T_LPAREN)) {
			n->flag = 1;
			if (!jp_args(p, n))
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

	while (operand != NULL && jp_is_name(p, 0, "is")) {
		const struct jtok *at = &p->toks[p->i++], *name;
		struct jnode *n = jp_node(p, E_TEST, at);

		if (jp_is_name(p, 0, "not")) {
			n->flag = 1;
			p->i++;
		}
		name = jp_peek(p, 0);
		if (name == NULL || name->type != T_NAME)
			return jp_unexpected(p, "a test name");
		p->i++;
		n->s = name->s;
		n->n = name->n;
		n->a = operand;
		if (jp_is(p, T_LPAREN)) {   /* is equalto(x), a Jinja form */
			p->i++;
			n->b = jp_expr(p);
			if (n->b == NULL || !jp_expect(p, T_RPAREN, "')'"))
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

	while (l != NULL && jp_is(p, T_POW)) {
		const struct jtok *at = &p->toks[p->i++];

		l = binary(p, OP_POW, at, l, parse_test(p));
	}
	return l;
}

static struct jnode *parse_mul(struct parser *p)
{
	struct jnode *l = parse_pow(p);

	while (l != NULL && jp_is(p, T_MUL)) {
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

	while (l != NULL && jp_is(p, T_ADD)) {
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
		const struct jtok *at = jp_peek(p, 0);
		enum jop op;

		if (jp_is_name(p, 0, "not") && jp_is_name(p, 1, "in")) {
			op = OP_NOTIN;
			p->i += 2;
		} else if (jp_is_name(p, 0, "in")) {
			op = OP_IN;
			p->i++;
		} else if (jp_is(p, T_CMP)) {
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

	if (!jp_is_name(p, 0, "not"))
		return parse_cmp(p);
	at = &p->toks[p->i++];
	if (++p->edepth > JINJA_MAX_DEPTH)
		return too_deep(p, at);
	n = jp_node(p, E_UNARY, at);
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

	while (l != NULL && jp_is_name(p, 0, "and")) {
		const struct jtok *at = &p->toks[p->i++];

		l = binary(p, OP_AND, at, l, parse_not(p));
	}
	return l;
}

static struct jnode *parse_or(struct parser *p)
{
	struct jnode *l = parse_and(p);

	while (l != NULL && jp_is_name(p, 0, "or")) {
		const struct jtok *at = &p->toks[p->i++];

		l = binary(p, OP_OR, at, l, parse_and(p));
	}
	return l;
}

/* a if b else c; `a if b` alone is a select (undefined when b is false) */
struct jnode *jp_expr(struct parser *p)
{
	struct jnode *a, *n;
	const struct jtok *at;

	if (++p->edepth > JINJA_MAX_DEPTH)
		return too_deep(p, jp_peek(p, 0));
	a = parse_or(p);
	if (a != NULL && jp_is_name(p, 0, "if")) {
		at = &p->toks[p->i++];
		n = jp_node(p, E_SELECT, at);
		n->a = a;
		n->b = parse_or(p);
		if (n->b == NULL)
			return NULL;
		if (jp_is_name(p, 0, "else")) {
			p->i++;
			n->kind = E_TERNARY;
			n->c = jp_expr(p);
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

/* The literal's value, made once in the template's arena: evaluating a
 * literal allocates nothing (values are never changed in place). */
static struct jv *literal(struct parser *p, struct jnode *n)
{
	struct jv *v = jarena_alloc(&p->t->arena, sizeof(*v));

	memset(v, 0, sizeof(*v));
	if (n->kind == E_STR) {
		v->t = JV_STR;
		v->u.s.p = n->s;
		v->u.s.n = n->n;
	} else if (n->kind == E_INT) {
		v->t = JV_INT;
		v->u.i = n->i;
	} else {
		v->t = JV_FLOAT;
		v->u.f = n->f;
	}
	n->lit = v;
	return v;
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
	const struct jtok *t = jp_peek(p, 0);
	struct jnode *n;
	struct nlist l = { 0 }, l2 = { 0 };
	size_t k;

	if (t == NULL)
		return jp_unexpected(p, "an expression");
	switch (t->type) {
	case T_NUM:
		p->i++;
		n = jp_node(p, E_INT, t);
		if (unescape_num(t, n) == NULL)
			return jp_fail(p, t, "number out of range");
		literal(p, n);
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
		n = jp_node(p, E_STR, t);
		n->s = s;
		n->n = o;
		literal(p, n);
		return n;
	}
	case T_NAME:
		p->i++;
		n = jp_node(p, E_NAME, t);
		n->s = t->s;
		n->n = t->n;
		if (t->n == 4 && memcmp(t->s, "loop", 4) == 0)
			p->saw_loop = 1;
		return n;
	case T_LPAREN:
		p->i++;
		n = jp_seq(p, 0);
		if (n == NULL || !jp_expect(p, T_RPAREN, "')'"))
			return NULL;
		return n;
	case T_LBRACKET:
	case T_LBRACE: {
		int dict = t->type == T_LBRACE;

		p->i++;
		n = jp_node(p, dict ? E_DICT : E_LIST, t);
		while (!jp_is(p, dict ? T_RBRACE : T_RBRACKET)) {
			struct jnode *e;

			if (jp_peek(p, 0) == NULL) {
				jp_unexpected(p, dict ? "'}'" : "']'");
				goto fail;
			}
			e = jp_expr(p);
			if (e == NULL)
				goto fail;
			jp_push(&l, e);
			if (dict) {
				if (!jp_expect(p, T_COLON, "':'"))
					goto fail;
				e = jp_expr(p);
				if (e == NULL)
					goto fail;
				jp_push(&l2, e);
			}
			if (jp_is(p, T_COMMA))
				p->i++;
		}
		p->i++;
		n->list = jp_done(p, &l, &n->nlist);
		n->list2 = jp_done(p, &l2, &n->nlist2);
		for (k = 0; k < n->nlist; k++)
			if (!grow(p, n, n->list[k]))
				return NULL;
		for (k = 0; k < n->nlist2; k++)
			if (!grow(p, n, n->list2[k]))
				return NULL;
		return n;
	}
	default:
		return jp_unexpected(p, "an expression");
	}
fail:
	free(l.v);
	free(l2.v);
	return NULL;
}
