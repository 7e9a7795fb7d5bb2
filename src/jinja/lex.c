/*
 * jinja/lex.c - the template's text to tokens, after @huggingface/jinja
 * src/lexer.ts (0.5.13): its preprocess() (one trailing newline dropped,
 * lstrip_blocks, trim_blocks) and its tokenize(), rule for rule, so that
 * whitespace comes out as the reference renders it. Every token keeps the
 * byte offset of its text in the template as given, for the parser's
 * "line L, column C" errors.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja_int.h"

/* The preprocessed text, with the offset in the original of each byte. */
struct src {
	char *p;
	uint32_t *at;           /* at[i]: original offset of p[i] */
	size_t n;
};

/* lexer.ts isWhitespace(): JavaScript's /\s/. */
static int is_space_cp(uint32_t c)
{
	if (c <= 32)
		return c == 32 || (c >= 9 && c <= 13);
	return c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
	    c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
	    c == 0x3000 || c == 0xfeff;
}

size_t jinja_space_at(const char *s, size_t n)
{
	uint32_t c;
	size_t w = jinja_utf8_next(s, n, &c);

	return w > 0 && is_space_cp(c) ? w : 0;
}

size_t jinja_where(const char *text, size_t len, size_t pos, char *err,
    size_t errlen)
{
	size_t line = 1, col = 1, i;
	int w;

	for (i = 0; i < pos && i < len; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	w = snprintf(err, errlen, "line %zu, column %zu: ", line, col);
	return w < 0 ? 0 : (size_t)w;
}

static enum ts_err lex_fail(const char *text, size_t len, size_t pos,
    char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static enum ts_err lex_fail(const char *text, size_t len, size_t pos,
    char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	size_t w;

	if (err != NULL && errlen > 0) {
		w = jinja_where(text, len, pos, err, errlen);
		if (w < errlen) {
			va_start(ap, fmt);
			vsnprintf(err + w, errlen - w, fmt, ap);
			va_end(ap);
		}
	}
	return TS_EFORMAT;
}

/* A line starts at 0 and after \n, \r, U+2028, U+2029 (the m flag of a
 * JavaScript regular expression). */
static int line_start(const char *p, size_t i)
{
	if (i == 0)
		return 1;
	if (p[i - 1] == '\n' || p[i - 1] == '\r')
		return 1;
	return i >= 3 && (unsigned char)p[i - 3] == 0xe2 &&
	    (unsigned char)p[i - 2] == 0x80 &&
	    ((unsigned char)p[i - 1] == 0xa8 ||
	    (unsigned char)p[i - 1] == 0xa9);
}

/* The end of a {% generation %} or {% endgeneration %} tag at i (0: no
 * such tag there); *ls, *rs: the tag's "-" on the left, on the right. */
static size_t generation_tag(const char *p, size_t n, size_t i, int *ls,
    int *rs)
{
	size_t k = i + 2, w;

	if (i + 1 >= n || p[i] != '{' || p[i + 1] != '%')
		return 0;
	*ls = k < n && p[k] == '-';
	k += (size_t)*ls;
	while (k < n && (w = jinja_space_at(p + k, n - k)) > 0)
		k += w;
	if (n - k >= 13 && memcmp(p + k, "endgeneration", 13) == 0)
		k += 3;
	if (n - k < 10 || memcmp(p + k, "generation", 10) != 0)
		return 0;
	k += 10;
	while (k < n && (w = jinja_space_at(p + k, n - k)) > 0)
		k += w;
	*rs = k < n && p[k] == '-';
	k += (size_t)*rs;
	if (k + 1 >= n || p[k] != '%' || p[k + 1] != '}')
		return 0;
	return k + 2;
}

/*
 * lexer.ts preprocess()'s last step: transformers' {% generation %} and
 * {% endgeneration %} tags (the assistant mask of apply_chat_template)
 * leave the text; a "-" inside one strips the whitespace beside it, on
 * its side (never past the previous tag). In place; the new length.
 */
static size_t drop_generation_tags(char *p, uint32_t *at, size_t n)
{
	size_t i = 0, j = 0, floor = 0, end, k, w;
	int ls, rs;

	while (i < n) {
		end = p[i] == '{' ? generation_tag(p, n, i, &ls, &rs) : 0;
		if (end == 0) {
			p[j] = p[i];
			at[j++] = at[i++];
			continue;
		}
		while (ls && j > floor) {
			/* the code point that ends at j */
			k = j - 1;
			while (k > floor && ((unsigned char)p[k] & 0xc0) == 0x80)
				k--;
			if (jinja_space_at(p + k, j - k) != j - k)
				break;
			j = k;
		}
		for (i = end; i < n && (w = jinja_space_at(p + i, n - i)) > 0;
		    i += w) {
			for (k = 0; !rs && k < w; k++) {
				p[j] = p[i + k];
				at[j++] = at[i + k];
			}
		}
		floor = j;
	}
	return j;
}

/*
 * lexer.ts preprocess() with lstrip_blocks and trim_blocks on (as its
 * Template does): drops one trailing "\n"; then /^[ \t]*({[#%-])/gm ->
 * "$1" (spaces and tabs before a block or comment tag at the start of a
 * line); then /([#%-]})\n/g -> "$1" (the newline after a tag); then
 * the {% generation %} tags go.
 */
static void preprocess(const char *text, size_t len, struct src *s)
{
	size_t i, j, k, n = len;
	char *p;
	uint32_t *at;

	if (n > 0 && text[n - 1] == '\n')
		n--;
	p = xmalloc(n + 1);
	at = xmalloc((n + 1) * sizeof(*at));
	/* lstrip_blocks */
	for (i = 0, j = 0; i < n;) {
		if (line_start(text, i)) {
			k = i;
			while (k < n && (text[k] == ' ' || text[k] == '\t'))
				k++;
			if (k + 1 < n && text[k] == '{' &&
			    (text[k + 1] == '#' || text[k + 1] == '%' ||
			    text[k + 1] == '-'))
				i = k;
		}
		/* copy up to the next line start */
		do {
			p[j] = text[i];
			at[j++] = (uint32_t)i;
			i++;
		} while (i < n && !line_start(text, i));
	}
	/* trim_blocks: in place */
	n = j;
	for (i = 0, j = 0; i < n; i++) {
		p[j] = p[i];
		at[j++] = at[i];
		if (i + 2 < n && p[i + 1] == '}' && p[i + 2] == '\n' &&
		    (p[i] == '#' || p[i] == '%' || p[i] == '-')) {
			p[j] = '}';
			at[j++] = at[i + 1];
			i += 2;
		}
	}
	n = j;
	j = drop_generation_tags(p, at, n);
	p[j] = '\0';
	at[j] = (uint32_t)len;
	s->p = p;
	s->at = at;
	s->n = j;
}

struct lexer {
	struct jarena *a;
	struct src s;
	size_t i;
	struct jtok *toks;
	size_t n, cap;
	const char *text;
	size_t len;
	char *err;
	size_t errlen;
	int curly;
};

static struct jtok *push(struct lexer *l, enum jtok_type type,
    const char *s, size_t n, size_t at)
{
	struct jtok *t;
	char *c;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->toks = xrealloc(l->toks, l->cap * sizeof(*l->toks));
	}
	c = jarena_alloc(l->a, n + 1);
	if (c == NULL)
		return NULL;
	memcpy(c, s, n);
	c[n] = '\0';
	t = &l->toks[l->n++];
	t->type = type;
	t->s = c;
	t->n = n;
	t->pos = l->s.at[at];
	return t;
}

static int last_type(const struct lexer *l)
{
	return l->n == 0 ? -1 : (int)l->toks[l->n - 1].type;
}

/* {%- and {{- : the text before loses its trailing whitespace (trimEnd). */
static void strip_trailing(struct lexer *l)
{
	struct jtok *t;
	size_t end, k, w;

	if (l->n == 0 || l->toks[l->n - 1].type != T_TEXT)
		return;
	t = &l->toks[l->n - 1];
	end = 0;
	for (k = 0; k < t->n; k += w) {
		w = jinja_space_at(t->s + k, t->n - k);
		if (w == 0) {
			uint32_t c;

			w = jinja_utf8_next(t->s + k, t->n - k, &c);
			end = k + w;
		}
	}
	t->n = end;
	((char *)t->s)[end] = '\0';
	if (end == 0)
		l->n--;
}

static void skip_leading(struct lexer *l)
{
	size_t w;

	while (l->i < l->s.n &&
	    (w = jinja_space_at(l->s.p + l->i, l->s.n - l->i)) > 0)
		l->i += w;
}

#define LFAIL(l, off, ...) lex_fail((l)->text, (l)->len, (l)->s.at[off], \
	(l)->err, (l)->errlen, __VA_ARGS__)

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_word(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    is_digit(c) || c == '_';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Appends code point c as UTF-8 (a lone surrogate as its 3 bytes). */
static size_t put_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	o[0] = (char)(0xe0 | (c >> 12));
	o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[2] = (char)(0x80 | (c & 0x3f));
	return 3;
}

/* A string literal after its opening quote (lexer.ts consumeString). */
static enum ts_err lex_string(struct lexer *l, char quote)
{
	const char *p = l->s.p;
	size_t start = l->i, o = 0, k;
	char *buf = xmalloc(l->s.n - l->i + 1);
	enum ts_err rc = TS_OK;

	for (;;) {
		if (l->i >= l->s.n) {
			rc = LFAIL(l, start - 1, "unterminated string");
			goto out;
		}
		if (p[l->i] == quote)
			break;
		if (p[l->i] != '\\') {
			buf[o++] = p[l->i++];
			continue;
		}
		if (++l->i >= l->s.n) {
			rc = LFAIL(l, start - 1, "unterminated string");
			goto out;
		}
		switch (p[l->i]) {
		case 'n': buf[o++] = '\n'; break;
		case 't': buf[o++] = '\t'; break;
		case 'r': buf[o++] = '\r'; break;
		case 'b': buf[o++] = '\b'; break;
		case 'f': buf[o++] = '\f'; break;
		case 'v': buf[o++] = '\v'; break;
		case '\'': buf[o++] = '\''; break;
		case '"': buf[o++] = '"'; break;
		case '\\': buf[o++] = '\\'; break;
		case 'x':
		case 'u': {
			size_t hl = p[l->i] == 'x' ? 2 : 4;
			uint32_t c = 0;

			for (k = 1; k <= hl; k++) {
				int h = l->i + k < l->s.n ?
				    hexval(p[l->i + k]) : -1;

				if (h < 0) {
					rc = LFAIL(l, l->i - 1, "invalid "
					    "hexadecimal escape sequence");
					goto out;
				}
				c = c * 16 + (uint32_t)h;
			}
			o += put_utf8(buf + o, c);
			l->i += hl;
			break;
		}
		default:
			rc = LFAIL(l, l->i - 1, "unexpected escaped character "
			    "'%c'", p[l->i]);
			goto out;
		}
		l->i++;
	}
	if (push(l, T_STR, buf, o, start - 1) == NULL)
		rc = TS_ELIMIT;
	l->i++;                 /* the closing quote */
out:
	free(buf);
	return rc;
}

static const struct { const char *seq; enum jtok_type type; } rules[] = {
	{ "{%", T_OPEN_STMT }, { "%}", T_CLOSE_STMT },
	{ "{{", T_OPEN_EXPR }, { "}}", T_CLOSE_EXPR },
	{ "(", T_LPAREN }, { ")", T_RPAREN }, { "{", T_LBRACE },
	{ "}", T_RBRACE }, { "[", T_LBRACKET }, { "]", T_RBRACKET },
	{ ",", T_COMMA }, { ".", T_DOT }, { ":", T_COLON }, { "|", T_PIPE },
	{ "<=", T_CMP }, { ">=", T_CMP }, { "==", T_CMP }, { "!=", T_CMP },
	{ "<", T_CMP }, { ">", T_CMP },
	{ "+", T_ADD }, { "-", T_ADD }, { "~", T_ADD },
	{ "**", T_POW }, { "*", T_MUL }, { "//", T_MUL }, { "/", T_MUL },
	{ "%", T_MUL }, { "=", T_EQUALS },
};

/* One step of lexer.ts's main loop: 1 when a token (or text) was taken
 * or skipped, 0 at the end, -1 on error (err set). */
static int lex_one(struct lexer *l)
{
	const char *p = l->s.p;
	size_t n = l->s.n, start, k;
	int last = last_type(l);
	char c;

	if (last < 0 || last == T_CLOSE_STMT || last == T_CLOSE_EXPR ||
	    last == T_COMMENT) {
		size_t end = l->i;

		for (;;) {
			const char *q = memchr(p + end, '{', n - end);

			if (q == NULL) {
				end = n;
				break;
			}
			end = (size_t)(q - p);
			if (end + 1 < n && (p[end + 1] == '%' ||
			    p[end + 1] == '{' || p[end + 1] == '#'))
				break;
			end++;
		}
		if (end > l->i) {
			if (push(l, T_TEXT, p + l->i, end - l->i, l->i) == NULL)
				return -2;
			l->i = end;
			return 1;
		}
	}
	if (l->i >= n)
		return 0;
	if (p[l->i] == '{' && l->i + 1 < n) {
		char next = p[l->i + 1];

		if (next == '#') {
			int before, after;
			const char *e;
			size_t body;

			start = l->i;
			l->i += 2;
			before = l->i < n && p[l->i] == '-';
			if (before)
				l->i++;
			e = NULL;
			for (k = l->i; k + 1 < n; k++)
				if (p[k] == '#' && p[k + 1] == '}') {
					e = p + k;
					break;
				}
			if (e == NULL) {
				LFAIL(l, start, "unterminated comment");
				return -1;
			}
			body = (size_t)(e - p);
			after = body > l->i && p[body - 1] == '-';
			if (before)
				strip_trailing(l);
			if (push(l, T_COMMENT, "", 0, start) == NULL)
				return -2;
			l->i = body + 2;
			if (after)
				skip_leading(l);
			return 1;
		}
		if (l->i + 2 < n && p[l->i + 2] == '-' &&
		    (next == '%' || next == '{')) {
			strip_trailing(l);
			if (push(l, next == '%' ? T_OPEN_STMT : T_OPEN_EXPR,
			    next == '%' ? "{%" : "{{", 2, l->i) == NULL)
				return -2;
			if (next == '{')
				l->curly = 0;
			l->i += 3;
			return 1;
		}
	}
	/* whitespace inside a tag; lexer.ts's consumeWhile throws when the
	 * input ends within it */
	while (l->i < n && (k = jinja_space_at(p + l->i, n - l->i)) > 0)
		l->i += k;
	if (l->i >= n) {
		LFAIL(l, n, "unexpected end of template");
		return -1;
	}
	c = p[l->i];
	if (c == '-' && l->i + 2 < n && p[l->i + 2] == '}' &&
	    (p[l->i + 1] == '%' || p[l->i + 1] == '}')) {
		int stmt = p[l->i + 1] == '%';

		if (push(l, stmt ? T_CLOSE_STMT : T_CLOSE_EXPR,
		    stmt ? "%}" : "}}", 2, l->i) == NULL)
			return -2;
		l->i += 3;
		skip_leading(l);
		return 1;
	}
	if (c == '-' || c == '+') {
		if (last < 0 || last == T_TEXT) {
			LFAIL(l, l->i, "unexpected character '%c'", c);
			return -1;
		}
		if (last != T_NAME && last != T_NUM && last != T_STR &&
		    last != T_RPAREN && last != T_RBRACKET) {
			/* a sign: -1, -x */
			start = l->i++;
			while (l->i < n && is_digit(p[l->i]))
				l->i++;
			if (l->i > start + 1 && l->i + 1 < n &&
			    p[l->i] == '.' && is_digit(p[l->i + 1])) {
				l->i++;
				while (l->i < n && is_digit(p[l->i]))
					l->i++;
			}
			if (l->i >= n) {
				LFAIL(l, n, "unexpected end of template");
				return -1;
			}
			if (push(l, l->i > start + 1 ? T_NUM : T_UNARY,
			    p + start, l->i - start, start) == NULL)
				return -2;
			return 1;
		}
	}
	for (k = 0; k < sizeof(rules) / sizeof(rules[0]); k++) {
		size_t sl = strlen(rules[k].seq);

		if (rules[k].type == T_CLOSE_EXPR && l->curly > 0)
			continue;
		if (sl <= n - l->i && memcmp(p + l->i, rules[k].seq, sl) == 0) {
			if (push(l, rules[k].type, rules[k].seq, sl, l->i) ==
			    NULL)
				return -2;
			if (rules[k].type == T_OPEN_EXPR)
				l->curly = 0;
			else if (rules[k].type == T_LBRACE)
				l->curly++;
			else if (rules[k].type == T_RBRACE)
				l->curly--;
			l->i += sl;
			return 1;
		}
	}
	if (c == '\'' || c == '"') {
		enum ts_err rc;

		l->i++;
		rc = lex_string(l, c);
		return rc == TS_OK ? 1 : rc == TS_ELIMIT ? -2 : -1;
	}
	if (is_digit(c)) {
		start = l->i;
		while (l->i < n && is_digit(p[l->i]))
			l->i++;
		if (last != T_DOT && l->i + 1 < n && p[l->i] == '.' &&
		    is_digit(p[l->i + 1])) {
			l->i++;
			while (l->i < n && is_digit(p[l->i]))
				l->i++;
		}
		if (l->i >= n) {
			LFAIL(l, n, "unexpected end of template");
			return -1;
		}
		return push(l, T_NUM, p + start, l->i - start, start) ?
		    1 : -2;
	}
	if (is_word(c)) {
		start = l->i;
		while (l->i < n && is_word(p[l->i]))
			l->i++;
		if (l->i >= n) {
			LFAIL(l, n, "unexpected end of template");
			return -1;
		}
		return push(l, T_NAME, p + start, l->i - start, start) ?
		    1 : -2;
	}
	LFAIL(l, l->i, "unexpected character '%c'", c);
	return -1;
}

enum ts_err jinja_lex(struct jarena *a, const char *text, size_t len,
    struct jtok **toks, size_t *ntoks, char *err, size_t errlen)
{
	struct lexer l;
	int r;

	memset(&l, 0, sizeof(l));
	l.a = a;
	l.text = text;
	l.len = len;
	l.err = err;
	l.errlen = errlen;
	preprocess(text, len, &l.s);
	while ((r = lex_one(&l)) > 0)
		;
	free(l.s.p);
	free(l.s.at);
	if (r < 0) {
		free(l.toks);
		if (r == -2)
			snprintf(err, errlen, "template too large");
		return r == -2 ? TS_ELIMIT : TS_EFORMAT;
	}
	*toks = l.toks;
	*ntoks = l.n;
	return TS_OK;
}
