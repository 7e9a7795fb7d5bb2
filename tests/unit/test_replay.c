/*
 * test_replay.c - the recordings `--replay` serves and how a request finds
 * one (handlers/replay_set.h): the exact body, the prompt with the
 * settings (canonical JSON), recordings of one key in turn, misses, the
 * headers a replay drops (Status too), the bounds of a recording, what
 * the loader refuses, and the schedule.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handlers/replay.h"
#include "handlers/replay_set.h"
#include "trace/trace.h"

#define T(s) s, sizeof(s) - 1
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char CHAT[] = "/v1/chat/completions";

/* A recording of `status` whose one chunk is `tag` (to tell them apart). */
static struct replay_rec *
rec_of(int status, const char *tag)
{
	struct replay_rec *r = replay_rec_new(status);

	assert_int_equal(replay_rec_chunk(r, 1000, tag, strlen(tag)), TS_OK);
	return r;
}

static const char *
tag_of(const struct replay_rec *r)
{
	static char buf[64];

	assert_non_null(r);
	assert_true(r->nchunks >= 1 && r->chunks[0].len < sizeof(buf));
	memcpy(buf, r->bytes + r->chunks[0].off, r->chunks[0].len);
	buf[r->chunks[0].len] = '\0';
	return buf;
}

/* Exact bytes first; a body that differs only in key order or spacing
 * finds it by its canonical form; an exact match wins over a canonical
 * one of another recording. */
static void
test_exact_then_canonical(void **state)
{
	struct replay_set *s = replay_set_new();
	enum replay_how how;
	static const struct {
		const char *body;
		const char *tag;
		enum replay_how how;
	} cases[] = {
		{ "{\"model\":\"m\",\"max_tokens\":5}", "A", REPLAY_EXACT },
		{ "{\"max_tokens\":5,\"model\":\"m\"}", "B", REPLAY_EXACT },
		{ "{ \"max_tokens\": 5, \"model\": \"m\" }", "A",
		    REPLAY_CANONICAL },
		{ "{\"model\":\"m\",\"max_tokens\":5}", "A", REPLAY_EXACT },
		{ "{\"messages\":[{\"content\":\"hi\",\"role\":\"user\"}]}",
		    "C", REPLAY_EXACT },
		{ "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		    "C", REPLAY_CANONICAL },
	};
	size_t i;

	(void)state;
	assert_int_equal(replay_set_add(s, "POST", CHAT,
	    T("{\"model\":\"m\",\"max_tokens\":5}"), rec_of(200, "A")), TS_OK);
	/* the same canonical form, other bytes: its own exact key */
	assert_int_equal(replay_set_add(s, "POST", CHAT,
	    T("{\"max_tokens\":5,\"model\":\"m\"}"), rec_of(200, "B")), TS_OK);
	assert_int_equal(replay_set_add(s, "POST", CHAT,
	    T("{\"messages\":[{\"content\":\"hi\",\"role\":\"user\"}]}"),
	    rec_of(200, "C")), TS_OK);
	for (i = 0; i < NELEM(cases); i++) {
		const struct replay_rec *r = replay_set_match(s, "POST", CHAT,
		    cases[i].body, strlen(cases[i].body), &how);

		assert_int_equal(how, cases[i].how);
		/* the canonical key of A and B holds A then B: its first
		 * turn is A's */
		assert_string_equal(tag_of(r), cases[i].tag);
	}
	replay_set_free(s);
}

/* Recordings of one key are served in turn, wrapping around; keys keep
 * their own turns. */
static void
test_in_turn(void **state)
{
	struct replay_set *s = replay_set_new();
	static const char *const want[] = { "1", "2", "3", "1", "2" };
	enum replay_how how;
	size_t i;

	(void)state;
	assert_int_equal(replay_set_add(s, "POST", CHAT, T("{\"p\":1}"),
	    rec_of(200, "1")), TS_OK);
	assert_int_equal(replay_set_add(s, "POST", CHAT, T("{\"q\":1}"),
	    rec_of(200, "other")), TS_OK);
	assert_int_equal(replay_set_add(s, "POST", CHAT, T("{\"p\":1}"),
	    rec_of(200, "2")), TS_OK);
	assert_int_equal(replay_set_add(s, "POST", CHAT, T("{\"p\":1}"),
	    rec_of(429, "3")), TS_OK);
	for (i = 0; i < NELEM(want); i++) {
		assert_string_equal(tag_of(replay_set_match(s, "POST", CHAT,
		    T("{\"p\":1}"), &how)), want[i]);
		assert_int_equal(how, REPLAY_EXACT);
		if (i == 1)     /* another key between: its own turn */
			assert_string_equal(tag_of(replay_set_match(s, "POST",
			    CHAT, T("{\"q\":1}"), &how)), "other");
	}
	replay_set_free(s);
}

/* Misses: another body, another path, another method, a body that is no
 * JSON and not the bytes; the routes the set answers for. */
static void
test_misses(void **state)
{
	struct replay_set *s = replay_set_new();
	struct replay_stats st;
	enum replay_how how = REPLAY_EXACT;

	(void)state;
	assert_int_equal(replay_set_add(s, "POST", CHAT, T("{\"p\":1}"),
	    rec_of(200, "x")), TS_OK);
	assert_int_equal(replay_set_add(s, "POST", CHAT, T("not json"),
	    rec_of(200, "y")), TS_OK);
	assert_null(replay_set_match(s, "POST", CHAT, T("{\"p\":2}"), &how));
	assert_int_equal(how, REPLAY_MISS);
	assert_null(replay_set_match(s, "POST", CHAT, T("{\"p\":1.0}"),
	    &how));
	assert_null(replay_set_match(s, "POST", "/v1/completions",
	    T("{\"p\":1}"), &how));
	assert_null(replay_set_match(s, "GET", CHAT, T("{\"p\":1}"), &how));
	assert_null(replay_set_match(s, "POST", CHAT, T("not  json"), &how));
	assert_null(replay_set_match(s, "POST", CHAT, T(""), &how));
	assert_string_equal(tag_of(replay_set_match(s, "POST", CHAT,
	    T("not json"), &how)), "y");
	assert_int_equal(how, REPLAY_EXACT);
	assert_true(replay_set_has_route(s, "POST", CHAT));
	assert_false(replay_set_has_route(s, "GET", CHAT));
	assert_false(replay_set_has_route(s, "POST", "/health"));
	replay_set_stats(s, &st);
	assert_int_equal(st.recordings, 2);
	assert_int_equal(st.exact_keys, 2);
	assert_int_equal(st.canonical_keys, 1);
	assert_int_equal(st.routes, 1);
	replay_set_free(s);
}

/* Many keys: the table grows and every key still finds its recording. */
static void
test_many_keys(void **state)
{
	struct replay_set *s = replay_set_new();
	enum replay_how how;
	char body[64], tag[16];
	int i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		snprintf(body, sizeof(body), "{\"i\":%d}", i);
		snprintf(tag, sizeof(tag), "%d", i);
		assert_int_equal(replay_set_add(s, "POST", CHAT, body,
		    strlen(body), rec_of(200, tag)), TS_OK);
	}
	for (i = 999; i >= 0; i -= 7) {
		snprintf(body, sizeof(body), "{ \"i\" : %d }", i);
		snprintf(tag, sizeof(tag), "%d", i);
		assert_string_equal(tag_of(replay_set_match(s, "POST", CHAT,
		    body, strlen(body), &how)), tag);
		assert_int_equal(how, REPLAY_CANONICAL);
	}
	replay_set_free(s);
}

/* The head keeps the recorded headers a replay repeats, in order, and
 * drops hop-by-hop, framing, tokstream's own and unsafe ones. */
static void
test_headers(void **state)
{
	struct replay_rec *r = replay_rec_new(200);
	static const char *const h[][2] = {
		{ "content-type", "text/event-stream; charset=utf-8" },
		{ "Content-Length", "12" },
		{ "transfer-encoding", "chunked" },
		{ "Connection", "keep-alive" },
		{ "keep-alive", "timeout=5" },
		{ "date", "Sun, 06 Dec 2026 11:00:00 GMT" },
		{ "server", "node" },
		{ "x-request-id", "abc" },
		{ "access-control-allow-origin", "*" },
		{ ":status", "200" },
		{ "x-evil", "a\r\nStatus: 500" },
		{ "bad name", "v" },
		{ "openai-processing-ms", "12" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(h); i++)
		replay_rec_header(r, h[i][0], h[i][1]);
	assert_string_equal(r->head, "content-type: text/event-stream; "
	    "charset=utf-8\r\nopenai-processing-ms: 12\r\n");
	assert_int_equal(r->head_len, strlen(r->head));
	assert_int_equal(r->dropped_headers, NELEM(h) - 2);
	/* past the head's budget: dropped */
	for (i = 0; i < 40; i++)
		replay_rec_header(r, "x-ratelimit-remaining-requests",
		    "1234567890");
	assert_true(r->head_len <= REPLAY_MAX_HEAD_BYTES);
	assert_true(r->dropped_headers > NELEM(h) - 2);
	replay_rec_free(r);
}

/* A recording's bounds: chunks, a chunk's bytes, all bytes, times. */
static void
test_bounds(void **state)
{
	struct replay_rec *r = replay_rec_new(200);
	static char big[REPLAY_MAX_CHUNK_BYTES + 1];
	uint32_t i;

	(void)state;
	assert_int_equal(replay_rec_chunk(r, -1, "x", 1), TS_EINVAL);
	assert_int_equal(replay_rec_chunk(r, 0, big, sizeof(big)),
	    TS_ELIMIT);
	for (i = 0; i < REPLAY_MAX_BYTES / REPLAY_MAX_CHUNK_BYTES; i++)
		assert_int_equal(replay_rec_chunk(r, i, big,
		    REPLAY_MAX_CHUNK_BYTES), TS_OK);
	assert_int_equal(replay_rec_chunk(r, 0, "x", 1), TS_ELIMIT);
	replay_rec_free(r);
	r = replay_rec_new(200);
	for (i = 0; i < REPLAY_MAX_CHUNKS; i++)
		assert_int_equal(replay_rec_chunk(r, i, "", 0), TS_OK);
	assert_int_equal(replay_rec_chunk(r, 0, "", 0), TS_ELIMIT);
	assert_int_equal(r->nchunks, REPLAY_MAX_CHUNKS);
	replay_rec_free(r);
}

/* A recorded Status header (any case) is dropped: in a CGI/FastCGI head
 * it would be the response's status, over the recorded one. */
static void
test_status_header_dropped(void **state)
{
	struct replay_rec *r = replay_rec_new(200);

	(void)state;
	replay_rec_header(r, "content-type", "application/json");
	replay_rec_header(r, "Status", "500 Oops");
	replay_rec_header(r, "status", "500");
	replay_rec_header(r, "STATUS", "404 Not Found");
	replay_rec_header(r, "x-status", "kept");
	assert_string_equal(r->head, "content-type: application/json\r\n"
	    "x-status: kept\r\n");
	assert_int_equal(r->dropped_headers, 3);
	replay_rec_free(r);
}

/* Writes lines (each ending in "\n") to a new temporary file, its path
 * into path (a cap of at least 64). */
static void
trace_file(char *path, size_t cap, const char *const *lines, size_t n)
{
	const char *dir = getenv("TMPDIR");
	FILE *f;
	size_t i;
	int fd;

	snprintf(path, cap, "%s/test_replay_XXXXXX",
	    dir != NULL && dir[0] != '\0' ? dir : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (i = 0; i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	assert_int_equal(fclose(f), 0);
}

static const char HEAD_LINE[] =
    "{\"type\":\"header\",\"tokstream_trace\":1}";

/* A recording whose body is spaced JSON is found by a compact body (and
 * any other spacing or key order) through its canonical key: the
 * recording's canonical key is made from its parsed body. */
static void
test_spaced_recording_canonical(void **state)
{
	static const char *const lines[] = { HEAD_LINE,
	    "{\"type\":\"request\",\"i\":0,\"start_us\":0,\"end_us\":10,"
	    "\"method\":\"POST\",\"path\":\"/v1/chat/completions\","
	    "\"body\":\"{\\\"tag\\\": \\\"x\\\", \\\"n\\\": 1}\","
	    "\"status\":200,\"headers\":[],\"chunks\":[[5,\"X\"]]}" };
	static const char *const bodies[] = { "{\"tag\":\"x\",\"n\":1}",
	    "{\"n\":1,\"tag\":\"x\"}", "{ \"n\" : 1 , \"tag\" : \"x\" }" };
	char path[256], err[512];
	struct replay_set *s;
	enum replay_how how;
	uint32_t skipped;
	size_t i;

	(void)state;
	trace_file(path, sizeof(path), lines, NELEM(lines));
	if (replay_load(path, 1.0, &s, &skipped, err, sizeof(err)) != TS_OK)
		fail_msg("%s", err);
	unlink(path);
	for (i = 0; i < NELEM(bodies); i++) {
		assert_string_equal(tag_of(replay_set_match(s, "POST", CHAT,
		    bodies[i], strlen(bodies[i]), &how)), "X");
		assert_int_equal(how, REPLAY_CANONICAL);
	}
	assert_string_equal(tag_of(replay_set_match(s, "POST", CHAT,
	    T("{\"tag\": \"x\", \"n\": 1}"), &how)), "X");
	assert_int_equal(how, REPLAY_EXACT);
	replay_set_free(s);
	/* the same in the set alone */
	s = replay_set_new();
	assert_int_equal(replay_set_add(s, "POST", CHAT,
	    T("{\"tag\": \"x\"}"), rec_of(200, "Y")), TS_OK);
	assert_string_equal(tag_of(replay_set_match(s, "POST", CHAT,
	    T("{\"tag\":\"x\"}"), &how)), "Y");
	assert_int_equal(how, REPLAY_CANONICAL);
	replay_set_free(s);
}

/*
 * The loader refuses, naming the file and the request's line: a chunk
 * time over 600 s from the request's start, chunk times that decrease,
 * and a status neither 0 (no response, skipped) nor in 200..599.
 */
static void
test_load_refusals(void **state)
{
#define REQ(status, chunks) "{\"type\":\"request\",\"i\":1,\"start_us\":0," \
    "\"end_us\":10,\"method\":\"POST\",\"path\":\"/v1/completions\"," \
    "\"body\":\"{}\",\"status\":" status ",\"headers\":[],\"chunks\":" \
    chunks "}"
	static const char OK[] = REQ("200", "[[1,\"a\"],[1,\"b\"],[600000000,"
	    "\"c\"]]");
	static const struct {
		const char *bad;
		const char *says;
	} cases[] = {
		{ REQ("200", "[[1,\"a\"],[600000001,\"b\"]]"), "600 s" },
		{ REQ("200", "[[1,\"a\"],[1000000000000000000,\"b\"]]"),
		    "600 s" },
		{ REQ("200", "[[5,\"a\"],[4,\"b\"]]"), "before chunk 0's" },
		{ REQ("99999", "[[1,\"a\"]]"), "status 99999" },
		{ REQ("101", "[[1,\"a\"]]"), "status 101" },
		{ REQ("600", "[[1,\"a\"]]"), "status 600" },
		{ REQ("199", "[]"), "status 199" },
	};
	char path[256], err[512], want[300];
	const char *lines[4];
	struct replay_set *s;
	struct replay_stats st;
	uint32_t skipped;
	size_t i;

	(void)state;
	lines[0] = HEAD_LINE;
	lines[1] = OK;
	lines[2] = REQ("0", "[]");
	/* the good ones load: status 0 is skipped and counted */
	trace_file(path, sizeof(path), lines, 3);
	if (replay_load(path, 1.0, &s, &skipped, err, sizeof(err)) != TS_OK)
		fail_msg("%s", err);
	unlink(path);
	assert_int_equal(skipped, 1);
	replay_set_stats(s, &st);
	assert_int_equal(st.recordings, 1);
	replay_set_free(s);
	for (i = 0; i < NELEM(cases); i++) {
		lines[2] = cases[i].bad;
		lines[3] = OK;
		trace_file(path, sizeof(path), lines, 4);
		assert_int_not_equal(replay_load(path, 1.0, &s, &skipped, err,
		    sizeof(err)), TS_OK);
		unlink(path);
		assert_null(s);
		/* the header is line 1: the bad request is line 3 */
		snprintf(want, sizeof(want), "%s:3: ", path);
		if (strstr(err, want) == NULL ||
		    strstr(err, cases[i].says) == NULL)
			fail_msg("case %zu: %s", i, err);
	}
#undef REQ
}

/* The schedule: t_us x 1000 / speed, never before the chunk before. */
static void
test_schedule(void **state)
{
	struct replay_set *s = replay_set_new();
	struct replay_rec *r = replay_rec_new(200);
	static const int64_t t[] = { 100000, 120000, 110000, 160000 };
	static const int64_t want1[] = { 100000000, 120000000, 120000000,
	    160000000 };
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(t); i++)
		assert_int_equal(replay_rec_chunk(r, t[i], "x", 1), TS_OK);
	assert_int_equal(replay_set_add(s, "POST", CHAT, T("{}"), r), TS_OK);
	replay_set_schedule(s, 1.0);
	for (i = 0; i < NELEM(t); i++)
		assert_int_equal(r->sched_ns[i], want1[i]);
	replay_set_schedule(s, 2.0);
	for (i = 0; i < NELEM(t); i++)
		assert_int_equal(r->sched_ns[i], want1[i] / 2);
	replay_set_free(s);
}

/*
 * A trace tokbench record wrote (tests/data/trace/chat-v1.jsonl: four
 * recordings of one /v1/chat/completions body, the first a warm-up):
 * replay_load makes four recordings under one key of each kind, and the
 * body finds them in turn, each with its recorded bytes, the fifth the
 * first again.
 */
static void
test_recorded_trace(void **state)
{
	const char *dir = getenv("TS_SRCDIR");
	char path[4096], err[512];
	struct replay_set *s;
	struct replay_stats st;
	struct trace t;
	struct trace_error terr;
	const struct replay_rec *r;
	enum replay_how how;
	uint32_t skipped = 9;
	size_t i, k, off;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/trace/chat-v1.jsonl",
	    dir != NULL ? dir : ".");
	if (replay_load(path, 1.0, &s, &skipped, err, sizeof(err)) != TS_OK)
		fail_msg("%s", err);
	assert_int_equal(skipped, 0);
	replay_set_stats(s, &st);
	assert_int_equal(st.recordings, 4);
	assert_int_equal(st.exact_keys, 1);
	assert_int_equal(st.canonical_keys, 1);
	assert_int_equal(st.routes, 1);
	assert_int_equal(trace_load(path, 1u << 20, &t, &terr), TS_OK);
	for (i = 0; i < 5; i++) {
		const struct trace_request *q = &t.requests[i % 4];

		r = replay_set_match(s, q->method, q->path,
		    (const char *)q->body, q->body_len, &how);
		assert_non_null(r);
		assert_int_equal(how, REPLAY_EXACT);
		assert_int_equal(r->status, 200);
		assert_int_equal(r->nchunks, q->nchunks);
		for (k = 0, off = 0; k < q->nchunks; k++) {
			assert_int_equal(r->chunks[k].len, q->chunks[k].len);
			assert_memory_equal(r->bytes + r->chunks[k].off,
			    q->chunks[k].bytes, q->chunks[k].len);
			assert_int_equal(r->sched_ns[k],
			    q->chunks[k].t_us * 1000);
			off += q->chunks[k].len;
		}
		assert_int_equal(r->nbytes, off);
		/* its head: the recorded content type, no framing */
		assert_non_null(strstr(r->head, "text/event-stream"));
		assert_null(strstr(r->head, "ransfer-"));
	}
	trace_free(&t);
	replay_set_free(s);
	/* the errors name the file (and the line, when there is one) */
	assert_int_not_equal(replay_load("/nonexistent/t.jsonl", 1.0, &s,
	    &skipped, err, sizeof(err)), TS_OK);
	assert_null(s);
	assert_non_null(strstr(err, "/nonexistent/t.jsonl: "));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_then_canonical),
		cmocka_unit_test(test_in_turn),
		cmocka_unit_test(test_misses),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_recorded_trace),
		cmocka_unit_test(test_status_header_dropped),
		cmocka_unit_test(test_spaced_recording_canonical),
		cmocka_unit_test(test_load_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
