/*
 * jinja/parse_int.h - what the two halves of the parser share: parse.c
 * (the helpers and expressions) and parse_stmt.c (statements and the
 * entry point). Internal to src/jinja.
 */
#ifndef TS_JINJA_PARSE_INT_H
#define TS_JINJA_PARSE_INT_H

#include "jinja/jinja_int.h"

struct parser {
	struct jinja_template *t;
	const struct jtok *toks;
	size_t n, i;
	int depth;              /* blocks open */
	int edepth;             /* expressions open */
	int saw_loop;           /* the name `loop` was read */
	char *err;
	size_t errlen;
	enum ts_err rc;
};

/* A growable list of nodes, in the arena once done. */
struct nlist {
	struct jnode **v;
	size_t n, cap;
};

/* Records the first error, at token `at` (NULL: the end of the
 * template); returns NULL. */
void *jp_fail(struct parser *p, const struct jtok *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The token `ahead` places on, NULL past the end. */
const struct jtok *jp_peek(struct parser *p, size_t ahead);
int jp_is(struct parser *p, enum jtok_type type);
/* The token `ahead` places on is the name `name`. */
int jp_is_name(struct parser *p, size_t ahead, const char *name);
/* "unexpected X[, expected WANT]" at the current token; NULL. */
void *jp_unexpected(struct parser *p, const char *want);
/* Takes a token of `type`, or fails naming `what`. */
const struct jtok *jp_expect(struct parser *p, enum jtok_type type,
    const char *what);
int jp_expect_name(struct parser *p, const char *name);
struct jnode *jp_node(struct parser *p, enum jnode_kind kind,
    const struct jtok *at);
void jp_push(struct nlist *l, struct jnode *n);
/* The list, moved into the arena; its length in *n. */
struct jnode **jp_done(struct parser *p, struct nlist *l, size_t *n);
/* "(a, b, k=v)" into call->list (E_KWARG for k=v); 0 on error. */
int jp_args(struct parser *p, struct jnode *call);
/* An expression (parseExpression); NULL on error. */
struct jnode *jp_expr(struct parser *p);
/* expr (, expr)*: a tuple when there is a comma; with `primary`, of
 * primary expressions (a for loop's names). */
struct jnode *jp_seq(struct parser *p, int primary);

#endif /* TS_JINJA_PARSE_INT_H */
