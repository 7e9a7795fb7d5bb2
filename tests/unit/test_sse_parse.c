/*
 * test_sse_parse.c - the incremental SSE parser against WHATWG HTML 9.2.6
 * "Interpreting an event stream".
 *
 * Table-driven (after curl's tests/unit): every input is fed (a) whole,
 * (b) split in two at every split point, and (c) one byte at a time, and
 * must give the same events, comments and retry value each time. Every
 * piece is copied into its own exact-size allocation so that a sanitizer
 * catches any read past a feed's end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/sse_parse.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
/* An input literal as (ptr, len): inputs may hold NUL bytes. */
#define IN(s) (s), (sizeof(s) - 1)

/* A growable byte buffer. */
struct buf {
	char *p;
	size_t len, cap;
};

/* What the callbacks saw: events and comments apart, each in order. */
struct trace {
	struct buf ev, cm;
	size_t events;
	size_t stop_after;      /* stop the feed after this many; 0 = never */
	enum ts_err stop_rc;    /* what the callback then returns */
};

/* One expected event; strings are NUL-terminated in the table. */
struct want_event {
	const char *type;
	const char *data;
	const char *id;
};

struct sse_case {
	const char *name;
	const char *input;
	size_t input_len;
	struct want_event events[6];    /* ends at the first .type == NULL */
	const char *comments[4];        /* ends at the first NULL */
	long retry_ms;                  /* expected retry_ms at the end */
};

static void
buf_put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	if (n > 0)
		memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* Appends a length-prefixed field, so no content can fake a boundary. */
static void
buf_field(struct buf *b, const char *s, size_t n)
{
	char num[32];
	int k = snprintf(num, sizeof(num), "%zu:", n);

	buf_put(b, num, (size_t)k);
	buf_put(b, s, n);
	buf_put(b, " ", 1);
}

static void
buf_event(struct buf *b, const char *type, size_t type_len, const char *id,
    size_t id_len, const char *data, size_t data_len)
{
	buf_put(b, "E ", 2);
	buf_field(b, type, type_len);
	buf_field(b, id, id_len);
	buf_field(b, data, data_len);
	buf_put(b, "\n", 1);
}

static void
buf_comment(struct buf *b, const char *text, size_t len)
{
	buf_put(b, "C ", 2);
	buf_field(b, text, len);
	buf_put(b, "\n", 1);
}

static void
trace_free(struct trace *t)
{
	free(t->ev.p);
	free(t->cm.p);
	memset(t, 0, sizeof(*t));
}

static enum ts_err
on_event(void *ud, const struct sse_event *ev)
{
	struct trace *t = ud;

	buf_event(&t->ev, ev->type, ev->type_len, ev->id, ev->id_len,
	    ev->data, ev->data_len);
	t->events++;
	if (t->stop_after != 0 && t->events == t->stop_after)
		return t->stop_rc;
	return TS_OK;
}

static void
on_comment(void *ud, const char *text, size_t len)
{
	struct trace *t = ud;

	buf_comment(&t->cm, text, len);
}

/* Feeds (s, n) from a private exact-size copy; returns the result. */
static enum ts_err
feed_copy(struct sse_parser *p, const char *s, size_t n)
{
	char *copy = malloc(n ? n : 1);
	enum ts_err rc;

	assert_non_null(copy);
	if (n > 0)
		memcpy(copy, s, n);
	rc = sse_parser_feed(p, copy, n);
	free(copy);
	return rc;
}

/* True when two buffers hold the same bytes. */
static int
buf_equal(const struct buf *a, const struct buf *b)
{
	return a->len == b->len &&
	    (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/*
 * Feeds c->input cut at the offsets cuts[0..ncuts) and compares the
 * events, the comments and retry_ms with the table.
 */
static void
run_cuts(const struct sse_case *c, const size_t *cuts, size_t ncuts,
    const char *how)
{
	struct sse_parser p;
	struct trace t = {0};
	struct buf want_ev = {0}, want_cm = {0};
	const struct want_event *e;
	size_t i, from = 0, to;

	for (e = c->events; e->type != NULL; e++)
		buf_event(&want_ev, e->type, strlen(e->type), e->id,
		    strlen(e->id), e->data, strlen(e->data));
	for (i = 0; i < NELEM(c->comments) && c->comments[i] != NULL; i++)
		buf_comment(&want_cm, c->comments[i], strlen(c->comments[i]));

	sse_parser_init(&p, on_event, on_comment, &t);
	for (i = 0; i <= ncuts; i++) {
		to = i < ncuts ? cuts[i] : c->input_len;
		if (feed_copy(&p, c->input + from, to - from) != TS_OK)
			fail_msg("%s (%s): feed failed", c->name, how);
		from = to;
	}
	if (p.retry_ms != c->retry_ms)
		fail_msg("%s (%s): retry_ms %ld, want %ld", c->name, how,
		    p.retry_ms, c->retry_ms);
	sse_parser_free(&p);

	if (!buf_equal(&t.ev, &want_ev))
		fail_msg("%s (%s): events\n--- got ---\n%.*s--- want ---\n"
		    "%.*s", c->name, how, (int)t.ev.len,
		    t.ev.p ? t.ev.p : "", (int)want_ev.len,
		    want_ev.p ? want_ev.p : "");
	if (!buf_equal(&t.cm, &want_cm))
		fail_msg("%s (%s): comments\n--- got ---\n%.*s--- want ---\n"
		    "%.*s", c->name, how, (int)t.cm.len,
		    t.cm.p ? t.cm.p : "", (int)want_cm.len,
		    want_cm.p ? want_cm.p : "");
	trace_free(&t);
	free(want_ev.p);
	free(want_cm.p);
}

/* Runs one case whole, at every split point and byte by byte. */
static void
run_case(const struct sse_case *c)
{
	size_t k, *cuts;
	char how[64];

	run_cuts(c, NULL, 0, "whole");
	for (k = 0; k <= c->input_len; k++) {
		snprintf(how, sizeof(how), "split at %zu", k);
		run_cuts(c, &k, 1, how);
	}
	cuts = malloc((c->input_len ? c->input_len : 1) * sizeof(*cuts));
	assert_non_null(cuts);
	for (k = 0; k < c->input_len; k++)
		cuts[k] = k + 1;
	run_cuts(c, cuts, c->input_len > 0 ? c->input_len - 1 : 0,
	    "byte by byte");
	free(cuts);
}

/* The exact byte stream a tokstream /stream response carries. */
#define TOKSTREAM_BODY \
	": keep-alive\n\n" \
	": keep-alive\n\n" \
	"data: {\"token\":\"Hel\"}\n\n" \
	": keep-alive\n\n" \
	"data: {\"token\":\"lo\\n\\u00e9\"}\n\n" \
	"data: {\"token\":\" \\\"w\\\"\"}\n\n" \
	"data: [DONE]\n\n"

static const struct sse_case cases[] = {
	{"single event", IN("data: hello\n\n"),
	    {{"message", "hello", ""}}, {NULL}, -1},
	{"several events in one buffer",
	    IN("data: a\n\ndata: b\n\nevent: x\ndata: c\n\n"),
	    {{"message", "a", ""}, {"message", "b", ""}, {"x", "c", ""}},
	    {NULL}, -1},
	{"multi-line data", IN("data: one\ndata: two\ndata\ndata:\n\n"),
	    {{"message", "one\ntwo\n\n", ""}}, {NULL}, -1},
	{"CRLF endings", IN("data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"),
	    {{"message", "a\nb", ""}, {"message", "c", ""}}, {NULL}, -1},
	{"CR endings", IN("data: a\rdata: b\r\rdata: c\r\r"),
	    {{"message", "a\nb", ""}, {"message", "c", ""}}, {NULL}, -1},
	{"LF endings", IN("data: a\ndata: b\n\ndata: c\n\n"),
	    {{"message", "a\nb", ""}, {"message", "c", ""}}, {NULL}, -1},
	{"mixed endings", IN("data: 1\r\ndata: 2\rdata: 3\n\r\n"
	    "data: 4\r\r\ndata: 5\n\r"),
	    {{"message", "1\n2\n3", ""}, {"message", "4", ""},
	    {"message", "5", ""}}, {NULL}, -1},
	{"CR CR is two line ends", IN("data: a\r\r\r\n"),
	    {{"message", "a", ""}}, {NULL}, -1},
	{"comments", IN(": keep-alive\n:\ndata: x\n:: y\n\n"),
	    {{"message", "x", ""}}, {" keep-alive", "", ": y"}, -1},
	{"BOM", IN("\xEF\xBB\xBF" "data: bom\n\n"),
	    {{"message", "bom", ""}}, {NULL}, -1},
	{"BOM then comment", IN("\xEF\xBB\xBF: c\ndata: x\n\n"),
	    {{"message", "x", ""}}, {" c"}, -1},
	{"only the first BOM is skipped",
	    IN("\xEF\xBB\xBF\xEF\xBB\xBF" "data: x\n\ndata: y\n\n"),
	    {{"message", "y", ""}}, {NULL}, -1},
	{"partial BOM is line text",
	    IN("\xEF\xBB" "data: x\n\ndata: y\n\n"),
	    {{"message", "y", ""}}, {NULL}, -1},
	{"BOM byte then LF", IN("\xEF\ndata: y\n\n"),
	    {{"message", "y", ""}}, {NULL}, -1},
	{"field without colon", IN("data\n\nevent\ndata: x\n\nfoo\n\n"),
	    {{"message", "", ""}, {"message", "x", ""}}, {NULL}, -1},
	{"data with no space", IN("data:no-space\n\n"),
	    {{"message", "no-space", ""}}, {NULL}, -1},
	{"two spaces keep one", IN("data:  two\n\n"),
	    {{"message", " two", ""}}, {NULL}, -1},
	{"colon in value", IN("data: a:b: c\n\n"),
	    {{"message", "a:b: c", ""}}, {NULL}, -1},
	{"name is exact", IN("data : x\nDATA: y\ndata\t: z\n\n"),
	    {{NULL, NULL, NULL}}, {NULL}, -1},
	{"id persists, NUL ignored",
	    IN("id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\nid\ndata: c\n\n"),
	    {{"message", "a", "1"}, {"message", "b", "1"},
	    {"message", "c", ""}}, {NULL}, -1},
	{"id set by an event without data",
	    IN("id: 7\n\ndata: a\n\n"),
	    {{"message", "a", "7"}}, {NULL}, -1},
	{"retry digits", IN("retry: 1500\n"), {{NULL, NULL, NULL}},
	    {NULL}, 1500},
	{"retry non-digit ignored",
	    IN("retry: 250\nretry: 15x0\nretry: -1\nretry:\nretry: 1.5\n"
	    "retry:  7\n"),
	    {{NULL, NULL, NULL}}, {NULL}, 250},
	{"retry saturates", IN("retry: 99999999999999999999999999\n"),
	    {{NULL, NULL, NULL}}, {NULL}, LONG_MAX},
	{"event type", IN("event: add\ndata: 1\n\ndata: 2\n\n"
	    "event: x\n\nevent:\ndata: 3\n\n"),
	    {{"add", "1", ""}, {"message", "2", ""}, {"message", "3", ""}},
	    {NULL}, -1},
	{"trailing event not dispatched", IN("data: a\n\ndata: b\n"),
	    {{"message", "a", ""}}, {NULL}, -1},
	{"trailing line not dispatched", IN("data: a\n\ndata: b"),
	    {{"message", "a", ""}}, {NULL}, -1},
	{"blank lines only", IN("\n\r\n\r\n\n"), {{NULL, NULL, NULL}},
	    {NULL}, -1},
	{"empty input", IN(""), {{NULL, NULL, NULL}}, {NULL}, -1},
	{"NUL in data", IN("data: a\0b\n\n"),
	    {{NULL, NULL, NULL}}, {NULL}, -1},
	{"tokstream stream", IN(TOKSTREAM_BODY),
	    {{"message", "{\"token\":\"Hel\"}", ""},
	    {"message", "{\"token\":\"lo\\n\\u00e9\"}", ""},
	    {"message", "{\"token\":\" \\\"w\\\"\"}", ""},
	    {"message", "[DONE]", ""}},
	    {" keep-alive", " keep-alive", " keep-alive"}, -1},
	{"tokstream stream, CRLF",
	    IN(": keep-alive\r\n\r\ndata: {\"token\":\"a\"}\r\n\r\n"
	    "data: {\"error\":{\"message\":\"x\",\"type\":\"t\","
	    "\"code\":500}}\r\n\r\ndata: [DONE]\r\n\r\n"),
	    {{"message", "{\"token\":\"a\"}", ""},
	    {"message", "{\"error\":{\"message\":\"x\",\"type\":\"t\","
	    "\"code\":500}}", ""},
	    {"message", "[DONE]", ""}},
	    {" keep-alive"}, -1},
};

static void
test_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		/* "NUL in data" cannot be written as a C string: below. */
		if (strcmp(cases[i].name, "NUL in data") == 0)
			continue;
		run_case(&cases[i]);
	}
}

/* Data may hold NUL bytes: the length, not a terminator, is the truth. */
static void
test_nul_in_data(void **state)
{
	struct sse_parser p;
	struct trace t = {0};
	static const char want[] = "E 7:message 0: 3:a\0b \n";

	(void)state;
	sse_parser_init(&p, on_event, NULL, &t);
	assert_int_equal(sse_parser_feed(&p, IN("data: a\0b\n\n")), TS_OK);
	sse_parser_free(&p);
	assert_int_equal(t.ev.len, sizeof(want) - 1);
	assert_memory_equal(t.ev.p, want, t.ev.len);
	trace_free(&t);
}

/* A line longer than max_bytes fails, whole or built up over feeds. */
static void
test_line_limit(void **state)
{
	struct sse_parser p;
	struct trace t = {0};

	(void)state;
	sse_parser_init(&p, on_event, NULL, &t);
	p.max_bytes = 8;
	/* exactly 8 bytes is allowed */
	assert_int_equal(sse_parser_feed(&p, IN("data: 12\n\n")), TS_OK);
	assert_int_equal(t.events, 1);
	assert_int_equal(sse_parser_feed(&p, IN("data: 123\n")),
	    TS_ELIMIT);
	/* unusable from now on, whatever it is fed */
	assert_int_equal(sse_parser_feed(&p, IN("\n")), TS_ELIMIT);
	assert_int_equal(sse_parser_feed(&p, IN("")), TS_ELIMIT);
	assert_int_equal(t.events, 1);
	sse_parser_free(&p);

	sse_parser_init(&p, on_event, NULL, &t);
	p.max_bytes = 8;
	assert_int_equal(sse_parser_feed(&p, IN("data")), TS_OK);
	assert_int_equal(sse_parser_feed(&p, IN(": 12")), TS_OK);
	assert_int_equal(sse_parser_feed(&p, IN("3")), TS_ELIMIT);
	sse_parser_free(&p);

	/* an over-long line with no end yet, e.g. a peer that never sends
	 * LF, fails as soon as it passes the limit */
	sse_parser_init(&p, on_event, NULL, &t);
	p.max_bytes = 4;
	assert_int_equal(sse_parser_feed(&p, IN("abcde")), TS_ELIMIT);
	sse_parser_free(&p);

	/* even a partial BOM replayed into a tiny line limit */
	sse_parser_init(&p, on_event, NULL, &t);
	p.max_bytes = 1;
	assert_int_equal(sse_parser_feed(&p, IN("\xEF\xBB")), TS_OK);
	assert_int_equal(sse_parser_feed(&p, IN("x")), TS_ELIMIT);
	sse_parser_free(&p);
	trace_free(&t);
}

/* The data buffer (values plus one LF each) may not pass max_bytes. */
static void
test_data_limit(void **state)
{
	struct sse_parser p;
	struct trace t = {0};

	(void)state;
	sse_parser_init(&p, on_event, NULL, &t);
	p.max_bytes = 10;
	/* "1234\n" + "1234\n" = 10 bytes: allowed */
	assert_int_equal(sse_parser_feed(&p,
	    IN("data: 1234\ndata: 1234\n\n")), TS_OK);
	assert_int_equal(t.events, 1);
	assert_int_equal(sse_parser_feed(&p,
	    IN("data: 1234\ndata: 1234\ndata: 1\n")), TS_ELIMIT);
	assert_int_equal(sse_parser_feed(&p, IN("\n")), TS_ELIMIT);
	assert_int_equal(t.events, 1);
	sse_parser_free(&p);
	trace_free(&t);
}

/* The default limit is SSE_PARSE_DEFAULT_MAX. */
static void
test_default_limit(void **state)
{
	struct sse_parser p;
	struct trace t = {0};
	size_t n = SSE_PARSE_DEFAULT_MAX + 1;
	char *big = malloc(n);

	(void)state;
	assert_non_null(big);
	memset(big, 'x', n);
	sse_parser_init(&p, on_event, NULL, &t);
	assert_int_equal(p.max_bytes, SSE_PARSE_DEFAULT_MAX);
	assert_int_equal(sse_parser_feed(&p, big, n - 1), TS_OK);
	assert_int_equal(sse_parser_feed(&p, big, 1), TS_ELIMIT);
	sse_parser_free(&p);
	free(big);
	trace_free(&t);
}

/* A callback's result stops the feed and comes back from it. */
static void
test_callback_stops(void **state)
{
	struct sse_parser p;
	struct trace t = {0};

	(void)state;
	t.stop_after = 2;
	t.stop_rc = TS_EHUP;
	sse_parser_init(&p, on_event, NULL, &t);
	assert_int_equal(sse_parser_feed(&p,
	    IN("data: a\n\ndata: b\n\ndata: c\n\n")), TS_EHUP);
	assert_int_equal(t.events, 2);
	/* the parser stays consistent: later input is parsed normally */
	assert_int_equal(sse_parser_feed(&p, IN("data: d\n\n")), TS_OK);
	assert_int_equal(t.events, 3);
	sse_parser_free(&p);
	trace_free(&t);

	/* a callback returning TS_ELIMIT does not break the parser */
	t.stop_after = 1;
	t.stop_rc = TS_ELIMIT;
	sse_parser_init(&p, on_event, NULL, &t);
	assert_int_equal(sse_parser_feed(&p, IN("data: a\n\n")), TS_ELIMIT);
	assert_int_equal(sse_parser_feed(&p, IN("data: b\n\n")), TS_OK);
	assert_int_equal(t.events, 2);
	sse_parser_free(&p);
	trace_free(&t);
}

static void
test_free_twice(void **state)
{
	struct sse_parser p;
	struct trace t = {0};

	(void)state;
	memset(&p, 0, sizeof(p));
	sse_parser_free(&p);
	sse_parser_init(&p, on_event, NULL, &t);
	assert_int_equal(sse_parser_feed(&p, IN("data: pending")), TS_OK);
	sse_parser_free(&p);
	sse_parser_free(&p);
	sse_parser_free(NULL);
	assert_int_equal(t.events, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_nul_in_data),
		cmocka_unit_test(test_line_limit),
		cmocka_unit_test(test_data_limit),
		cmocka_unit_test(test_default_limit),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_free_twice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
