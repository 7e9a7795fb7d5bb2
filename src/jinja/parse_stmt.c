/*
 * jinja/parse_stmt.c - the statements of a template, after
 * @huggingface/jinja src/parser.ts (0.5.13) parseJinjaStatement(): text,
 * {{ expression }}, set (a name, names, ns.attr; a block set), if with
 * elif and else, for with a filter and an else, break, continue, macro
 * (without caller, varargs and kwargs); call and filter blocks are
 * refused. Blocks nest at most
 * JINJA_MAX_DEPTH deep (an elif counts as one more).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "jinja/parse_int.h"

static struct jnode *parse_any(struct parser *p);

/* {% NAME ... with NAME one of names (NULL-terminated list) */
static int is_stmt(struct parser *p, const char *const *names)
{
	const struct jtok *t = jp_peek(p, 0), *u = jp_peek(p, 1);

	if (t == NULL || t->type != T_OPEN_STMT || u == NULL ||
	    u->type != T_NAME)
		return 0;
	for (; *names != NULL; names++)
		if (strcmp(u->s, *names) == 0)
			return 1;
	return 0;
}

/* Statements until one of `ends` ({% NAME with NAME in ends). */
static int parse_body(struct parser *p, const char *const *ends,
    struct jnode ***body, size_t *n, const char *want)
{
	struct nlist l = { 0 };

	while (!is_stmt(p, ends)) {
		struct jnode *s;

		if (jp_peek(p, 0) == NULL) {
			free(l.v);
			jp_unexpected(p, want);
			return 0;
		}
		s = parse_any(p);
		if (p->rc != TS_OK) {
			free(l.v);
			return 0;
		}
		if (s != NULL)
			jp_push(&l, s);
	}
	*body = jp_done(p, &l, n);
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
	struct jnode *n = jp_node(p, S_IF, at), *elif;

	n->a = jp_expr(p);
	if (n->a == NULL || !jp_expect(p, T_CLOSE_STMT, "'%}'"))
		return NULL;
	if (!parse_body(p, ends_if, &n->list, &n->nlist, "'{% endif %}'"))
		return NULL;
	if (jp_is_name(p, 1, "elif")) {
		at = jp_peek(p, 1);
		p->i += 2;
		/* an elif nests an if in the else branch: it counts */
		if (++p->depth > JINJA_MAX_DEPTH) {
			jp_fail(p, at, "blocks nested deeper than %d",
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
	} else if (jp_is_name(p, 1, "else")) {
		p->i += 2;
		if (!jp_expect(p, T_CLOSE_STMT, "'%}'") ||
		    !parse_body(p, ends_endif, &n->list2, &n->nlist2,
		    "'{% endif %}'"))
			return NULL;
	}
	return n;
}

static struct jnode *parse_for(struct parser *p, const struct jtok *at)
{
	struct jnode *n = jp_node(p, S_FOR, at), *it;
	int outer_saw;

	n->a = jp_seq(p, 1);
	if (n->a == NULL)
		return NULL;
	if (n->a->kind != E_NAME && n->a->kind != E_TUPLE)
		return jp_fail(p, at, "expected a name or names after 'for'");
	if (!jp_expect_name(p, "in"))
		return NULL;
	it = jp_expr(p);
	if (it == NULL || !jp_expect(p, T_CLOSE_STMT, "'%}'"))
		return NULL;
	if (it->kind == E_SELECT) {     /* for x in xs if cond */
		n->b = it->a;
		n->c = it->b;
	} else {
		n->b = it;
	}
	/* the loop variable is made only for a body that names it */
	outer_saw = p->saw_loop;
	p->saw_loop = 0;
	if (!parse_body(p, ends_for, &n->list, &n->nlist, "'{% endfor %}'"))
		return NULL;
	if (jp_is_name(p, 1, "else")) {
		p->i += 2;
		if (!jp_expect(p, T_CLOSE_STMT, "'%}'") ||
		    !parse_body(p, ends_endfor, &n->list2, &n->nlist2,
		    "'{% endfor %}'"))
			return NULL;
	}
	n->flag = p->saw_loop;
	p->saw_loop |= outer_saw;
	return n;
}

static struct jnode *parse_set(struct parser *p, const struct jtok *at)
{
	struct jnode *n = jp_node(p, S_SET, at);

	n->a = jp_seq(p, 0);
	if (n->a == NULL)
		return NULL;
	if (n->a->kind != E_NAME && n->a->kind != E_TUPLE &&
	    !(n->a->kind == E_MEMBER && !n->a->flag))
		return jp_fail(p, at, "cannot assign to this expression");
	if (jp_is(p, T_EQUALS)) {
		p->i++;
		n->b = jp_seq(p, 0);
		if (n->b == NULL)
			return NULL;
	} else {
		if (!jp_expect(p, T_CLOSE_STMT, "'=' or '%}'") ||
		    !parse_body(p, ends_set, &n->list, &n->nlist,
		    "'{% endset %}'"))
			return NULL;
		p->i++;
		if (!jp_expect_name(p, "endset"))
			return NULL;
	}
	if (!jp_expect(p, T_CLOSE_STMT, "'%}'"))
		return NULL;
	return n;
}

static const char *const ends_macro[] = { "endmacro", NULL };

/* after {% macro: name(params) %} body (parseMacroStatement); params are
 * names, those with a default (name=value) last, each once */
static struct jnode *parse_macro(struct parser *p, const struct jtok *at)
{
	const struct jtok *name = jp_peek(p, 0);
	struct jnode *n = jp_node(p, S_MACRO, at);
	size_t k, j;

	if (name == NULL || name->type != T_NAME)
		return jp_unexpected(p, "a macro name");
	p->i++;
	n->s = name->s;
	n->n = name->n;
	if (!jp_args(p, n))
		return NULL;
	for (k = 0; k < n->nlist; k++) {
		const struct jnode *a = n->list[k];

		if (a->kind != E_NAME && a->kind != E_KWARG)
			return jp_fail(p, name, "expected a parameter name");
		for (j = 0; j < k; j++)
			if (strcmp(n->list[j]->s, a->s) == 0)
				return jp_fail(p, name, "duplicate parameter "
				    "'%s'", a->s);
	}
	if (!jp_expect(p, T_CLOSE_STMT, "'%}'") ||
	    !parse_body(p, ends_macro, &n->list2, &n->nlist2,
	    "'{% endmacro %}'"))
		return NULL;
	return n;
}

static struct jnode *parse_stmt(struct parser *p)
{
	const struct jtok *open = &p->toks[p->i++], *name = jp_peek(p, 0);
	struct jnode *n = NULL;
	const char *end = NULL;

	if (name == NULL || name->type != T_NAME)
		return jp_unexpected(p, "a statement name");
	if (++p->depth > JINJA_MAX_DEPTH) {
		jp_fail(p, open, "blocks nested deeper than %d",
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
		n = jp_node(p, name->s[0] == 'b' ? S_BREAK : S_CONTINUE, name);
		if (!jp_expect(p, T_CLOSE_STMT, "'%}'"))
			return NULL;
	} else if (strcmp(name->s, "macro") == 0) {
		n = parse_macro(p, name);
		end = "endmacro";
	} else if (strcmp(name->s, "call") == 0 ||
	    strcmp(name->s, "filter") == 0) {
		return jp_fail(p, name, "'%s' blocks are not supported",
		    name->s);
	} else {
		return jp_fail(p, name, "unexpected '%.40s'", name->s);
	}
	if (n == NULL)
		return NULL;
	if (end != NULL) {
		if (!jp_expect(p, T_OPEN_STMT, "'{%'") || !jp_expect_name(p, end) ||
		    !jp_expect(p, T_CLOSE_STMT, "'%}'"))
			return NULL;
	}
	p->depth--;
	return n;
}

/* One statement; NULL for a comment (and on error, with p->rc set). */
static struct jnode *parse_any(struct parser *p)
{
	const struct jtok *t = jp_peek(p, 0);
	struct jnode *n;

	switch (t->type) {
	case T_COMMENT:
		p->i++;
		return NULL;
	case T_TEXT:
		p->i++;
		n = jp_node(p, S_TEXT, t);
		n->s = t->s;
		n->n = t->n;
		return n;
	case T_OPEN_STMT:
		return parse_stmt(p);
	case T_OPEN_EXPR:
		p->i++;
		n = jp_node(p, S_PRINT, t);
		n->a = jp_expr(p);
		if (n->a == NULL || !jp_expect(p, T_CLOSE_EXPR, "'}}'"))
			return NULL;
		return n;
	default:
		return jp_unexpected(p, NULL);
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
			jp_push(&l, s);
	}
	if (p.rc != TS_OK) {
		free(l.v);
		return p.rc;
	}
	t->body = jp_done(&p, &l, &t->nbody);
	return TS_OK;
}
