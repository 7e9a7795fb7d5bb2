/*
 * tests/unit/test_jinja.c - src/jinja, the chat template interpreter:
 * the language pieces one table row each (the expected text is what
 * @huggingface/jinja 0.5.13 renders; tests/integration/templates.bats
 * compares whole templates with it), the errors with their line and
 * column, and the bounds (template size, nesting, steps, memory, output)
 * that keep a hostile template from hanging or crashing the server.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <pthread.h>
#include <jansson.h>

#include "jinja/jinja.h"

#define CLOCK 1721952000    /* 2024-07-26 00:00:00 UTC */

/* Renders tpl with the JSON context ctx (NULL: {}) into out (caller
 * frees); the parse or render result, err set on failure. */
static enum ts_err render(const char *tpl, const char *ctx, size_t max,
    char **out, char *err, size_t errlen)
{
	struct jinja_template *t = NULL;
	json_t *c = NULL;
	size_t len;
	enum ts_err rc;

	*out = NULL;
	rc = jinja_parse(&t, tpl, strlen(tpl), err, errlen);
	if (rc != TS_OK)
		return rc;
	if (ctx != NULL) {
		c = json_loads(ctx, 0, NULL);
		assert_non_null(c);
	}
	rc = jinja_render_at(t, c, max, CLOCK, out, &len, err, errlen);
	if (rc == TS_OK) {
		assert_non_null(*out);
		assert_int_equal(strlen(*out), len);
	} else {
		assert_null(*out);
	}
	json_decref(c);
	jinja_free(t);
	return rc;
}

struct row {
	const char *tpl;
	const char *ctx;
	const char *want;
};

static void run_rows(const struct row *rows, size_t n)
{
	char err[256], *out;
	size_t i;

	for (i = 0; i < n; i++) {
		enum ts_err rc = render(rows[i].tpl, rows[i].ctx, 1 << 20,
		    &out, err, sizeof(err));

		if (rc != TS_OK)
			fail_msg("row %zu %s: %s", i, rows[i].tpl, err);
		if (strcmp(out, rows[i].want) != 0)
			fail_msg("row %zu %s: got [%s], want [%s]", i,
			    rows[i].tpl, out, rows[i].want);
		free(out);
	}
}

static const char *msgs = "{\"messages\": [{\"role\": \"system\", "
    "\"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, "
    "{\"role\": \"assistant\", \"content\": \"A\"}], \"bos_token\": \"<s>\"}";

static void test_whitespace(void **state)
{
	static const struct row rows[] = {
		/* trim_blocks: the newline after a tag goes */
		{ "{% if true %}\nx\n{% endif %}\ny", NULL, "x\ny" },
		/* lstrip_blocks: spaces before a tag at a line start go */
		{ "a\n    {% if true %}b{% endif %}", NULL, "a\nb" },
		/* ... but not before an expression */
		{ "a\n  {{ 'b' }}", NULL, "a\n  b" },
		{ "a   {%- if true -%}   b   {%- endif %}", NULL, "ab" },
		{ "a  {{- 'b' -}}  c", NULL, "abc" },
		{ "a {# c #} b", NULL, "a  b" },
		{ "a {#- c -#} b", NULL, "ab" },
		{ "x\n", NULL, "x" },          /* one trailing newline goes */
		{ "x\n\n", NULL, "x\n" },
		/* {{- trims Unicode spaces too (U+3000) */
		{ "a\xe3\x80\x80{{- 'b' }}", NULL, "ab" },
		/* transformers' {% generation %} tags go, "-" trimming */
		{ "a {% generation %} b{% endgeneration %}", NULL, "a  b" },
		{ "a\xe3\x80\x80{%- generation %} b{% endgeneration -%}\n c",
		  NULL, "a bc" },
	};

	(void)state;
	run_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

static void test_loops(void **state)
{
	static const struct row rows[] = {
		{ "{% for m in messages %}{{ loop.index }}{{ loop.first }}"
		  "{{ loop.last }}{{ loop.length }}{{ m.role[0] }};"
		  "{% endfor %}", NULL, "" },
		{ "{% for x in [] %}no{% else %}else{% endfor %}", NULL,
		  "else" },
		{ "{% for x in [1,2,3,4] if x is even %}{{ x }}{% endfor %}",
		  NULL, "24" },
		{ "{% for x in range(6) %}{% if x == 1 %}{% continue %}"
		  "{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}"
		  "{% endfor %}", NULL, "023" },
		{ "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}{{ v }}"
		  "{% endfor %}", NULL, "a1b2" },
		{ "{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}", NULL,
		  "ab" },
		{ "{% for x in [1,2] %}{% for y in [3,4] %}{{ loop.index }}"
		  "{% endfor %}{{ loop.index }}{% endfor %}", NULL, "121122" },
		{ "{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}"
		  ",{% endfor %}", NULL, "-2,1-3,2-," },
		{ "{% for x in range(2, 9, 3) %}{{ x }}{% endfor %}", NULL,
		  "258" },
		{ "{% for x in range(3, 0, -1) %}{{ x }}{% endfor %}", NULL,
		  "321" },
	};
	struct row r = { NULL, NULL, NULL };

	(void)state;
	run_rows(rows + 1, sizeof(rows) / sizeof(rows[0]) - 1);
	r.tpl = rows[0].tpl;
	r.ctx = msgs;
	r.want = "1truefalse3s;2falsefalse3u;3falsetrue3a;";
	run_rows(&r, 1);
}

static void test_set(void **state)
{
	static const struct row rows[] = {
		{ "{% set x = 1 %}{% set x = x + 1 %}{{ x }}", NULL, "2" },
		{ "{% set a, b = 1, 2 %}{{ a }}{{ b }}", NULL, "12" },
		/* a set in a loop stays in the loop */
		{ "{% set x = 'o' %}{% for i in [1] %}{% set x = 'i' %}"
		  "{% endfor %}{{ x }}", NULL, "o" },
		/* a namespace carries it out */
		{ "{% set ns = namespace(x='o') %}{% for i in [1] %}"
		  "{% set ns.x = 'i' %}{% endfor %}{{ ns.x }}", NULL, "i" },
		{ "{% set ns = namespace() %}{% set ns.n = 0 %}"
		  "{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}"
		  "{{ ns.n }}", NULL, "3" },
		{ "{% set b %}x{{ 1 }}y{% endset %}[{{ b }}]", NULL, "[x1y]" },
		/* macros: defaults, keywords, recursion, the defining scope */
		{ "{% macro m(a, b='d') %}[{{ a }}{{ b }}]{% endmacro %}"
		  "{{ m(1) }}{{ m(1, 2) }}{{ m(b=3) }}{{ m() }}", NULL,
		  "[1d][12][3][d]" },
		{ "{% macro f(n) %}{% if n %}{{ n }}{{ f(n - 1) }}{% endif %}"
		  "{% endmacro %}{{ f(3) }}", NULL, "321" },
		{ "{% set o = namespace() %}{% for i in [1] %}{% macro g() %}"
		  "{{ i }}{% endmacro %}{% set o.g = g %}{% endfor %}{{ o.g() }}",
		  NULL, "1" },
		/* an if does not open a scope */
		{ "{% if true %}{% set x = 5 %}{% endif %}{{ x }}", NULL, "5" },
	};

	(void)state;
	run_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

static void test_expressions(void **state)
{
	static const struct row rows[] = {
		{ "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }}", NULL,
		  "3 -4 1 -1" },
		{ "{{ 7 / 2 }} {{ 6 / 2 }} {{ 2 ** 3 }} {{ 1.5 + 1 }}", NULL,
		  "3.5 3.0 8 2.5" },
		{ "{{ 0.1 + 0.2 }} {{ 1.0 }} {{ -0.0 }} {{ 2 * 3 - 1 }}", NULL,
		  "0.30000000000000004 1.0 -0.0 5" },
		{ "{{ 'a' + 'b' }} {{ 'a' ~ 1 ~ 2.0 ~ true }} {{ 'n' + 1 }}",
		  NULL, "ab a12true n1" },
		{ "{{ 'ab' * 3 }}", NULL, "ababab" },
		{ "{{ 1 == 1.0 }} {{ 'a' != 'a' }} {{ 1 < 2 }} {{ 2 >= 3 }}",
		  NULL, "true false true false" },
		{ "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} "
		  "{{ 'x' not in [] }} {{ 1 in nothing }}", NULL,
		  "true true true true false" },
		{ "{{ true and 'y' }} {{ 0 or 'z' }} {{ not '' }} "
		  "{{ [] or 'e' }}", NULL, "y z true e" },
		{ "{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} "
		  "[{{ 'y' if 0 }}]", NULL, "y n []" },
		{ "{{ [1,2,3][1:] }} {{ [1,2,3][::-1] }} {{ [1,2,3][-1] }} "
		  "{{ 'h\xc3\xa9llo'[1:3] }} {{ 'abc'[-1] }}", NULL,
		  "[2, 3] [3, 2, 1] 3 \xc3\xa9l c" },
		{ "{{ [1, 'a', none, true] }} {{ {'a': [1.5]} }} {{ none }}",
		  NULL, "[1, \"a\", null, true] {\"a\": [1.5]} " },
		{ "{{ 'a' 'b' }} {{ \"q\\\"\\n\\t\\\\\" }} {{ '\\u00e9\\x41' }}",
		  NULL, "ab q\"\n\t\\ \xc3\xa9" "A" },
		{ "{{ True }}{{ False }}{{ None }}|{{ none == undefined_x }}",
		  NULL, "truefalse|true" },
	};

	(void)state;
	run_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

static void test_undefined_and_tests(void **state)
{
	static const struct row rows[] = {
		{ "[{{ nope }}][{{ nope.attr }}][{{ nope['k'] }}]", NULL,
		  "[][][]" },
		{ "{{ nope is defined }} {{ nope is undefined }} "
		  "{{ messages is defined }}", "{\"messages\": []}",
		  "false true true" },
		{ "{{ none is none }} {{ 1 is number }} {{ 1.5 is number }} "
		  "{{ 'a' is string }} {{ {} is mapping }} {{ [] is iterable }} "
		  "{{ 'a' is iterable }} {{ [] is sequence }} "
		  "{{ true is boolean }} {{ true is true }} "
		  "{{ false is false }} {{ 3 is odd }} {{ 4 is even }} "
		  "{{ 1 is not none }} {{ 2 is equalto(2) }}", NULL,
		  "true true true true true true true true true true true "
		  "true true true true" },
		{ "{{ x | default('d') }} {{ '' | default('e', true) }} "
		  "{{ 'v' | d('x') }}", NULL, "d e v" },
	};

	(void)state;
	run_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

static void test_filters_and_methods(void **state)
{
	static const struct row rows[] = {
		{ "[{{ '  a b \\n' | trim }}] {{ 'aB' | upper }} "
		  "{{ 'aB' | lower }} {{ 'hello wORLD' | capitalize }} "
		  "{{ 'hello wORLD-x' | title }}", NULL,
		  "[a b] AB ab Hello wORLD Hello WORLD-X" },
		{ "{{ [3,1,2] | length }} {{ 'h\xc3\xa9' | length }} "
		  "{{ {'a': 1} | count }} {{ [3,1,2] | first }} "
		  "{{ [3,1,2] | last }}", NULL, "3 2 1 3 2" },
		{ "{{ [1,'b',none] | join('-') }} {{ ['a','b'] | join }} "
		  "{{ 'abc' | join(',') }}", NULL, "1-b- ab a,b,c" },
		{ "{{ '42' | int }} {{ '4.5x' | float }} {{ 'x' | int }} "
		  "{{ 3.9 | int }} {{ 5 | float }} {{ -3 | abs }} "
		  "{{ 12 | string }} {{ [1,'a'] | string }}", NULL,
		  "42 4.5 0 3 5.0 3 12 [1, \"a\"]" },
		{ "{{ {'a': 1} | items | list }} {{ 'abab' | replace('a', 'x') }}"
		  " {{ [3,1,2] | sort }} {{ [2,1,2] | unique | list }} "
		  "{{ [1,2] | reverse | list }}", NULL,
		  "[[\"a\", 1]] xbxb [1, 2, 3] [2, 1] [2, 1]" },
		{ "{{ messages | selectattr('role', 'equalto', 'user') | "
		  "map(attribute='content') | join }} {{ messages | "
		  "rejectattr('role', 'equalto', 'user') | map(attribute='role')"
		  " | join(',') }}", NULL, "" },
		{ "{{ 'a\\nb\\n\\nc' | indent(2) }}", NULL, "a\n  b\n\n  c" },
		{ "[{{ ' x '.strip() }}][{{ ' x '.lstrip() }}]"
		  "[{{ ' x '.rstrip() }}] {{ 'a,b,,c'.split(',') }} "
		  "{{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }}", NULL,
		  "[x][x ][ x] [\"a\", \"b\", \"\", \"c\"] [\"a\", \"b\"] "
		  "[\"a\", \"b c\"]" },
		{ "{{ 'pre-x'.startswith('pre') }} "
		  "{{ 'x.md'.endswith(('.txt', '.md')) }} "
		  "{{ {'k': 1}.get('k') }} {{ {'k': 1}.get('n', 2) }} "
		  "[{{ {'k': 1}.get('n') }}] {{ {'a': 1}.keys() | list }} "
		  "{{ {'a': 1}.values() | list }} {{ 'aaa'.replace('a','b',2) }}",
		  NULL, "true true 1 2 [] [\"a\"] [1] bba" },
		{ "{{ strftime_now('%Y-%m-%d %H:%M %b %B %%') }}", NULL,
		  "2024-07-26 00:00 Jul July %" },
	};
	struct row r = { rows[5].tpl, msgs, "U system,assistant" };

	(void)state;
	run_rows(rows, 5);
	run_rows(rows + 6, sizeof(rows) / sizeof(rows[0]) - 6);
	run_rows(&r, 1);
}

/* tojson: JSON.stringify with Python's separators, keys in order */
static void test_tojson(void **state)
{
	static const struct row rows[] = {
		{ "{{ x | tojson }}", "{\"x\": {\"b\": 1, \"a\": [true, null, "
		  "2.5, \"s\"], \"e\": {}, \"l\": []}}",
		  "{\"b\": 1, \"a\": [true, null, 2.5, \"s\"], \"e\": {}, "
		  "\"l\": []}" },
		{ "{{ x | tojson(indent=2) }}", "{\"x\": {\"a\": [1, {\"b\": "
		  "[]}]}}",
		  "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ]\n}" },
		{ "{{ x | tojson }}", "{\"x\": \"\\u00e9 \\\" \\\\ \\n \\t "
		  "\\u0001 \\ud83d\\ude00 /\"}",
		  "\"\xc3\xa9 \\\" \\\\ \\n \\t \\u0001 \xf0\x9f\x98\x80 /\"" },
		{ "{{ x | tojson(ensure_ascii=true) }}", "{\"x\": \"\\u00e9 "
		  "\\ud83d\\ude00\"}", "\"\\u00e9 \\ud83d\\ude00\"" },
		{ "{{ [1, {'a': 2}] | tojson(separators=(',', ':')) }}", NULL,
		  "[1,{\"a\":2}]" },
		/* JSON.parse: 2.0 is the integer 2; integer keys first */
		{ "{{ x | tojson }} {{ x.f }}", "{\"x\": {\"f\": 2.0, "
		  "\"b\": 1e21, \"2\": 0, \"1\": 0}}",
		  "{\"1\": 0, \"2\": 0, \"f\": 2, \"b\": 1e+21} 2" },
		{ "{{ nope | tojson }} {{ none | tojson }}", NULL, "null null" },
	};

	(void)state;
	run_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

static void test_raise_and_runtime_errors(void **state)
{
	static const struct { const char *tpl, *ctx; enum ts_err rc;
	    const char *err; } rows[] = {
		{ "a{{ raise_exception('Roles must alternate!') }}", NULL,
		  TS_EINVAL, "template raised: Roles must alternate!" },
		{ "{{ 1 | nosuch }}", NULL, TS_EINVAL,
		  "filter 'nosuch' does not apply to IntegerValue" },
		{ "{{ x is nosuch }}", NULL, TS_EINVAL, "unknown test 'nosuch'" },
		{ "{{ 1 / 0 }}", NULL, TS_EINVAL, "division by zero" },
		{ "{{ nope() }}", NULL, TS_EINVAL, "cannot call a UndefinedValue" },
		{ "{{ 'a' - 1 }}", NULL, TS_EINVAL, "unsupported operator "
		  "between StringValue and IntegerValue" },
		{ "{% for x in 3 %}{% endfor %}", NULL, TS_EINVAL,
		  "cannot loop over IntegerValue" },
		{ "{% break %}", NULL, TS_EINVAL,
		  "break or continue outside a loop" },
		{ "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", NULL, TS_EINVAL,
		  "macro 'm' takes not more than 1 argument(s)" },
		{ "{% macro m(a) %}{% endmacro %}{{ m(z=1) }}", NULL, TS_EINVAL,
		  "macro 'm' takes no keyword argument 'z'" },
		{ "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", NULL,
		  TS_ELIMIT, "macro calls nested deeper than 64" },
		{ "x", "{\"range\": 1}", TS_EINVAL,
		  "variable already declared: range" },
		{ "{% set x = 1 %}{% set x.a = 2 %}", NULL, TS_EINVAL,
		  "cannot assign an attribute of a IntegerValue (only of a "
		  "namespace)" },
	};
	char err[256], *out;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		enum ts_err rc = render(rows[i].tpl, rows[i].ctx, 1 << 20,
		    &out, err, sizeof(err));

		if (rc != rows[i].rc || strcmp(err, rows[i].err) != 0)
			fail_msg("row %zu %s: rc %d [%s], want [%s]", i,
			    rows[i].tpl, rc, err, rows[i].err);
	}
}

/* Malformed templates: TS_EFORMAT, with the line and column. */
static void test_parse_errors(void **state)
{
	static const struct { const char *tpl, *err; } rows[] = {
		{ "{% endfor %}", "line 1, column 4: unexpected 'endfor'" },
		{ "a\nb {% if x %}\nc", "line 3, column 2: unexpected end of "
		  "template, expected '{% endif %}'" },
		{ "{% for x in y %}\n  {% endif %}", "line 2, column 6: "
		  "unexpected 'endif'" },
		{ "{{ 1 + }}", "line 1, column 8: unexpected '}}', expected an "
		  "expression" },
		{ "{{ 'abc }}", "line 1, column 4: unterminated string" },
		{ "x {# open", "line 1, column 3: unterminated comment" },
		{ "{{ a b }}", "line 1, column 6: unexpected 'b', expected "
		  "'}}'" },
		{ "{% call m() %}{% endcall %}", "line 1, column 4: 'call' "
		  "blocks are not supported" },
		{ "{% macro m(a, a) %}{% endmacro %}", "line 1, column 10: "
		  "duplicate parameter 'a'" },
		{ "{{ 'a\\q' }}", "line 1, column 6: unexpected escaped "
		  "character 'q'" },
		{ "{{ a ! b }}", "line 1, column 6: unexpected character '!'" },
		{ "{% for 1 in x %}{% endfor %}", "line 1, column 4: expected a "
		  "name or names after 'for'" },
		{ "{{ x", "line 1, column 5: unexpected end of template" },
	};
	struct jinja_template *t;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		enum ts_err rc = jinja_parse(&t, rows[i].tpl,
		    strlen(rows[i].tpl), err, sizeof(err));

		if (rc != TS_EFORMAT || strcmp(err, rows[i].err) != 0)
			fail_msg("row %zu %s: rc %d [%s], want [%s]", i,
			    rows[i].tpl, rc, err, rows[i].err);
		assert_null(t);
	}
}

static char *repeat(const char *a, int n, const char *mid, const char *b)
{
	size_t la = strlen(a), lm = strlen(mid), lb = strlen(b), o = 0;
	char *s = malloc((la + lb) * (size_t)n + lm + 1);
	int i;

	for (i = 0; i < n; i++, o += la)
		memcpy(s + o, a, la);
	memcpy(s + o, mid, lm);
	o += lm;
	for (i = 0; i < n; i++, o += lb)
		memcpy(s + o, b, lb);
	s[o] = '\0';
	return s;
}

/* "{{ s }}", freeing s */
static char *expr(char *s)
{
	char *e = malloc(strlen(s) + 7);

	sprintf(e, "{{ %s }}", s);
	free(s);
	return e;
}

/* The bounds: what is refused, quickly, and what just fits. */
static void test_bounds(void **state)
{
	struct jinja_template *t;
	char err[256], *out, *s;
	time_t start = time(NULL);

	(void)state;
	/* a huge range is refused before it is made */
	assert_int_equal(render("{% for i in range(1000000000) %}x"
	    "{% endfor %}", NULL, 1 << 20, &out, err, sizeof(err)),
	    TS_ELIMIT);
	assert_non_null(strstr(err, "range() of 1000000000 items"));
	/* work that would run long runs out of steps (3000 x 3000
	 * comparisons), and loops that allocate run out of memory */
	assert_int_equal(render("{% set xs = range(3000) %}{% for i in xs %}"
	    "{% if -1 in xs %}{% endif %}{% endfor %}", NULL, 1 << 20, &out,
	    err, sizeof(err)), TS_ELIMIT);
	assert_string_equal(err, "template ran over 5000000 steps");
	assert_int_equal(render("{% for i in range(3000) %}{% for j in "
	    "range(3000) %}{% endfor %}{% endfor %}", NULL, 1 << 20, &out,
	    err, sizeof(err)), TS_ELIMIT);
	/* output over max_out */
	assert_int_equal(render("{% for i in range(100) %}0123456789"
	    "{% endfor %}", NULL, 999, &out, err, sizeof(err)), TS_ELIMIT);
	assert_string_equal(err, "output over 999 bytes");
	assert_int_equal(render("{% for i in range(100) %}0123456789"
	    "{% endfor %}", NULL, 1000, &out, err, sizeof(err)), TS_OK);
	assert_int_equal(strlen(out), 1000);
	free(out);
	/* a loop whose body does not name `loop` makes no loop variable,
	 * and literals and booleans are not made again: 300,000 iterations
	 * fit the memory (with a loop variable each, they would not) */
	assert_int_equal(render("{% for i in range(300000) %}{% if i == 299999"
	    " %}{{ i }}{% endif %}{% endfor %}", NULL, 1 << 20, &out, err,
	    sizeof(err)), TS_OK);
	assert_string_equal(out, "299999");
	free(out);
	assert_int_equal(render("{% for i in range(300000) %}{% if loop.last"
	    " %}{{ i }}{% endif %}{% endfor %}", NULL, 1 << 20, &out, err,
	    sizeof(err)), TS_ELIMIT);
	assert_non_null(strstr(err, "bytes of memory"));
	/* max_out 0: only the empty output fits */
	assert_int_equal(render("{% if false %}x{% endif %}", NULL, 0, &out,
	    err, sizeof(err)), TS_OK);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(render("x", NULL, 0, &out, err, sizeof(err)),
	    TS_ELIMIT);
	/* a string that doubles: memory, not the machine */
	assert_int_equal(render("{% set ns = namespace(s='xxxxxxxxxxxxxxxx')"
	    " %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
	    "{% endfor %}", NULL, 1 << 20, &out, err, sizeof(err)),
	    TS_ELIMIT);
	assert_non_null(strstr(err, "bytes of memory"));
	assert_true(time(NULL) - start < 30);
	/* blocks nested 64 deep parse; 65 are refused */
	s = repeat("{% if true %}", JINJA_MAX_DEPTH, "x", "{% endif %}");
	assert_int_equal(render(s, NULL, 1 << 20, &out, err, sizeof(err)),
	    TS_OK);
	assert_string_equal(out, "x");
	free(out);
	free(s);
	s = repeat("{% if true %}", JINJA_MAX_DEPTH + 1, "x", "{% endif %}");
	assert_int_equal(jinja_parse(&t, s, strlen(s), err, sizeof(err)),
	    TS_ELIMIT);
	assert_non_null(strstr(err, "blocks nested deeper than 64"));
	free(s);
	/* parentheses, lists, `not`s, `+` chains: an error past the
	 * limit, not a deep stack */
	s = expr(repeat("(", JINJA_MAX_DEPTH - 1, "1", ")"));
	assert_int_equal(render(s, NULL, 1 << 20, &out, err, sizeof(err)),
	    TS_OK);
	assert_string_equal(out, "1");
	free(out);
	free(s);
	s = expr(repeat("[(", 100000, "1", ")]"));
	assert_int_equal(jinja_parse(&t, s, strlen(s), err, sizeof(err)),
	    TS_ELIMIT);
	assert_string_equal(err, "line 1, column 68: expression nested "
	    "deeper than 64");
	free(s);
	s = expr(repeat("not ", 100000, "1", ""));
	assert_int_equal(jinja_parse(&t, s, strlen(s), err, sizeof(err)),
	    TS_ELIMIT);
	free(s);
	s = expr(repeat("-", 100000, "1", ""));
	assert_int_equal(jinja_parse(&t, s, strlen(s), err, sizeof(err)),
	    TS_ELIMIT);
	free(s);
	s = expr(repeat("1 + ", 5000, "1", ""));
	assert_int_equal(jinja_parse(&t, s, strlen(s), err, sizeof(err)),
	    TS_ELIMIT);
	free(s);
	s = expr(repeat("1 + ", 200, "1", ""));
	assert_int_equal(render(s, NULL, 1 << 20, &out, err, sizeof(err)),
	    TS_OK);
	assert_string_equal(out, "201");
	free(out);
	free(s);
	/* a namespace that holds itself: tojson stops */
	assert_int_equal(render("{% set ns = namespace() %}{% set ns.me = ns"
	    " %}{{ ns | tojson }}", NULL, 1 << 20, &out, err, sizeof(err)),
	    TS_EINVAL);
	assert_string_equal(err, "tojson: value nested too deeply");
	/* the template's size */
	s = malloc(JINJA_MAX_TEMPLATE + 1);
	memset(s, 'x', JINJA_MAX_TEMPLATE + 1);
	assert_int_equal(jinja_parse(&t, s, JINJA_MAX_TEMPLATE + 1, err,
	    sizeof(err)), TS_ELIMIT);
	assert_int_equal(jinja_parse(&t, s, JINJA_MAX_TEMPLATE, err,
	    sizeof(err)), TS_OK);
	jinja_free(t);
	free(s);
	jinja_free(NULL);
}

/* Every prefix of a real template, and every one-byte change of it,
 * parses or fails cleanly, and renders or fails cleanly. */
static void test_never_crashes(void **state)
{
	static const char tpl[] =
	    "{%- if messages[0]['role'] == 'system' %}\n"
	    "    {%- set sys = messages[0]['content']|trim %}\n"
	    "    {%- set messages = messages[1:] %}\n"
	    "{%- endif %}\n"
	    "{%- set ns = namespace(n=0) %}\n"
	    "{%- for m in messages if m.role != 'x' %}\n"
	    "    {{- '<|' + m['role'] + '|>\\n' + m.content | trim }}\n"
	    "    {%- set ns.n = ns.n + 1 %}{# count #}\n"
	    "    {%- if loop.last and add_generation_prompt %}{{ x | tojson(indent=2) }}"
	    "{% else %}{{ (1, 2)[0] ~ 'a'[::-1] }}{% endif %}\n"
	    "{%- endfor %}{{ raise_exception('end') if ns.n > 9 }}\n";
	static const char subst[] = "{}%#-'\"()[]|.:,=+*/~ \nx0";
	struct jinja_template *t;
	json_t *ctx = json_loads(msgs, 0, NULL);
	char err[256], buf[sizeof(tpl)], *out;
	size_t n, i, k, len;

	(void)state;
	json_object_set_new(ctx, "add_generation_prompt", json_true());
	json_object_set_new(ctx, "x", json_loads("{\"k\": [1, \"v\"]}", 0,
	    NULL));
	for (n = 0; n < sizeof(tpl); n++) {
		if (jinja_parse(&t, tpl, n, err, sizeof(err)) != TS_OK) {
			assert_true(strncmp(err, "line ", 5) == 0);
			continue;
		}
		if (jinja_render_at(t, ctx, 1 << 16, CLOCK, &out, &len, err,
		    sizeof(err)) == TS_OK)
			free(out);
		jinja_free(t);
	}
	for (i = 0; i + 1 < sizeof(tpl); i++) {
		for (k = 0; k + 1 < sizeof(subst); k++) {
			memcpy(buf, tpl, sizeof(tpl));
			buf[i] = subst[k];
			if (jinja_parse(&t, buf, sizeof(tpl) - 1, err,
			    sizeof(err)) != TS_OK)
				continue;
			if (jinja_render_at(t, ctx, 1 << 16, CLOCK, &out, &len,
			    err, sizeof(err)) == TS_OK)
				free(out);
			jinja_free(t);
		}
	}
	/* the whole template renders */
	assert_int_equal(jinja_parse(&t, tpl, sizeof(tpl) - 1, err,
	    sizeof(err)), TS_OK);
	assert_int_equal(jinja_render_at(t, ctx, 1 << 16, CLOCK, &out, &len,
	    err, sizeof(err)), TS_OK);
	assert_string_equal(out, "<|user|>\nU1a<|assistant|>\nA{\n  \"k\": "
	    "[\n    1,\n    \"v\"\n  ]\n}");
	free(out);
	jinja_free(t);
	json_decref(ctx);
}

/* The worst nesting the limits allow, in a thread with the server's
 * 256 KiB stack (src/server/fcgi.c THREAD_STACK_BYTES): refused or
 * rendered, never a stack overflow. */
struct deep_job {
	const char *tpl;
	enum ts_err rc;
	char err[256];
};

static void *deep_render(void *arg)
{
	struct deep_job *j = arg;
	char *out;

	j->rc = render(j->tpl, NULL, 1 << 20, &out, j->err, sizeof(j->err));
	if (j->rc == TS_OK)
		free(out);
	return NULL;
}

static void run_in_small_stack(struct deep_job *j)
{
	pthread_attr_t attr;
	pthread_t th;

	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, 256u * 1024u), 0);
	assert_int_equal(pthread_create(&th, &attr, deep_render, j), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_attr_destroy(&attr);
}

static void test_stack(void **state)
{
	struct deep_job j;
	char *ifs = repeat("{% if true %}", JINJA_MAX_DEPTH - 2, "", "");
	char *ends = repeat("{% endif %}", JINJA_MAX_DEPTH - 2, "", "");
	char *chain = repeat("(n) ~ ", 200, "n", "");
	char *parens = repeat("(", JINJA_MAX_DEPTH - 2, "1", ")");
	size_t len = strlen(ifs) + strlen(ends) + strlen(chain) +
	    strlen(parens) + 256;
	char *tpl = malloc(len);

	(void)state;
	/* a macro that recurses through 62 blocks and a 200-term chain */
	snprintf(tpl, len, "{%% macro m(n) %%}%s{{ %s }}{{ m(n + 1) }}%s"
	    "{%% endmacro %%}{{ m(0) }}", ifs, chain, ends);
	j.tpl = tpl;
	run_in_small_stack(&j);
	assert_int_equal(j.rc, TS_ELIMIT);
	assert_string_equal(j.err, "template nested deeper than 500 "
	    "evaluations");
	/* the deepest blocks around the deepest parentheses render */
	snprintf(tpl, len, "%s{{ %s }}%s", ifs, parens, ends);
	run_in_small_stack(&j);
	assert_int_equal(j.rc, TS_OK);
	free(tpl);
	free(ifs);
	free(ends);
	free(chain);
	free(parens);
}

/* One parsed template rendered by 4 threads at once, 50 times each: the
 * same bytes every time (a template is read-only once parsed). */
struct shared_job {
	const struct jinja_template *t;
	json_t *ctx;
	const char *want;
	int bad;
};

static void *shared_render(void *arg)
{
	struct shared_job *j = arg;
	char err[256], *out;
	size_t len;
	int k;

	for (k = 0; k < 50; k++) {
		if (jinja_render_at(j->t, j->ctx, 1 << 20, CLOCK, &out, &len,
		    err, sizeof(err)) != TS_OK || strcmp(out, j->want) != 0)
			j->bad++;
		free(out);
	}
	return NULL;
}

static void test_threads(void **state)
{
	static const char tpl[] = "{% for m in messages %}{{ loop.index }}"
	    "{{ m.role | upper }}{{ [m.content, 'x'] | tojson }}"
	    "{% endfor %}{{ true }}{{ 1.5 }}";
	struct jinja_template *t;
	struct shared_job jobs[4];
	pthread_t th[4];
	char err[256];
	json_t *ctx = json_loads(msgs, 0, NULL);
	int k;

	(void)state;
	assert_int_equal(jinja_parse(&t, tpl, strlen(tpl), err, sizeof(err)),
	    TS_OK);
	for (k = 0; k < 4; k++) {
		jobs[k].t = t;
		jobs[k].ctx = ctx;
		jobs[k].want = "1SYSTEM[\"S\", \"x\"]2USER[\"U\", \"x\"]"
		    "3ASSISTANT[\"A\", \"x\"]true1.5";
		jobs[k].bad = 0;
		assert_int_equal(pthread_create(&th[k], NULL, shared_render,
		    &jobs[k]), 0);
	}
	for (k = 0; k < 4; k++) {
		assert_int_equal(pthread_join(th[k], NULL), 0);
		assert_int_equal(jobs[k].bad, 0);
	}
	jinja_free(t);
	json_decref(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whitespace),
		cmocka_unit_test(test_loops),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_expressions),
		cmocka_unit_test(test_undefined_and_tests),
		cmocka_unit_test(test_filters_and_methods),
		cmocka_unit_test(test_tojson),
		cmocka_unit_test(test_raise_and_runtime_errors),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_never_crashes),
		cmocka_unit_test(test_stack),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
