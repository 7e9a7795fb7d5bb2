/*
 * test_handlers_replay.c - `--replay` through route() over the fake
 * connection (handlers_fake.h) on the synthetic clock: a recording's
 * head and bytes, each chunk written at the request's admission plus its
 * recorded time (divided by the speed), a client that leaves mid-way
 * (cancelled with the chunks it had), a miss
 * as 404 replay_miss or, with --replay-miss sim, the simulator's answer
 * to the same body, and a path no recording has routed as always.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/replay_set.h"
#include "stores/state.h"

#include "handlers_fake.h"

static const char CHAT[] = "/v1/chat/completions";
static const char BODY[] = "{\"model\":\"mini\",\"stream\":true}";

/* The recorded chunks: times in us, bytes. */
static const struct {
	int64_t t_us;
	const char *bytes;
} CHUNKS[] = {
	{ 1500, "data: {\"role\":\"assistant\"}\n\n" },
	{ 100000, "data: {\"c\":\" a\"}\n\n" },
	{ 120000, "data: {\"c\":\" b\"}\n\n" },
	{ 140500, "data: {\"c\":\" c\"}\n\n" },
	{ 140600, "data: [DONE]\n\n" },
};

/* A set with the one recording of BODY, scheduled at speed. */
static struct replay_set *
recorded(double speed)
{
	struct replay_set *s = replay_set_new();
	struct replay_rec *r = replay_rec_new(200);
	size_t i;

	replay_rec_header(r, "content-type", "text/event-stream");
	replay_rec_header(r, "content-length", "99");
	replay_rec_header(r, "openai-processing-ms", "7");
	for (i = 0; i < NELEM(CHUNKS); i++)
		assert_int_equal(replay_rec_chunk(r, CHUNKS[i].t_us,
		    CHUNKS[i].bytes, strlen(CHUNKS[i].bytes)), TS_OK);
	assert_int_equal(replay_set_add(s, "POST", CHAT, BODY, strlen(BODY),
	    r), TS_OK);
	replay_set_schedule(s, speed);
	return s;
}

static void
all_bytes(struct ts_buf *b)
{
	size_t i;

	for (i = 0; i < NELEM(CHUNKS); i++)
		ts_buf_append(b, CHUNKS[i].bytes, strlen(CHUNKS[i].bytes));
}

/* The recorded head and bytes, chunk k written at t0 + t_k / speed. */
static void
test_replay_bytes_and_times(void **unused)
{
	static const double speeds[] = { 1.0, 2.0, 0.5 };
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct ts_buf want;
	char v[64];
	size_t i, k;

	(void)unused;
	for (k = 0; k < NELEM(speeds); k++) {
		int64_t t0;

		server_defaults(&fs);
		fs.opt.replay_speed = speeds[k];
		server_start(&fs);
		fs.srv.replay = recorded(speeds[k]);
		fake_open(&fc, &fs, "POST", CHAT, BODY);
		t0 = clock_ns;
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		assert_header(&r, "content-type", "text/event-stream");
		assert_header(&r, "openai-processing-ms", "7");
		assert_int_equal(header(&r, "content-length", v, sizeof(v)),
		    0);
		assert_true(request_id(&r) > 0);
		ts_buf_init(&want, 4096);
		all_bytes(&want);
		assert_int_equal(r.body_len, want.len);
		assert_memory_equal(r.body, want.p, want.len);
		ts_buf_free(&want);
		/* the head at once, then one write per chunk at its time
		 * (the last two, 0.1 ms apart, may share a write) */
		assert_true(fc.nwrites >= NELEM(CHUNKS));
		assert_int_equal(fc.write_at[0], t0);
		for (i = 0; i + 1 < NELEM(CHUNKS); i++)
			assert_int_equal(fc.write_at[1 + i] - t0,
			    (int64_t)((double)CHUNKS[i].t_us * 1000.0 /
			    speeds[k]));
		fake_close(&fc);
		replay_set_free(fs.srv.replay);
		fs.srv.replay = NULL;
		server_down(&fs);
	}
}

/* A client that leaves after 110 ms: cancelled with the chunks it had,
 * no more bytes written. */
static void
test_replay_client_leaves(void **unused)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct state_record rec;

	(void)unused;
	server_up(&fs);
	fs.srv.replay = recorded(1.0);
	fake_open(&fc, &fs, "POST", CHAT, BODY);
	fc.hup_at = clock_ns + 110 * MS;
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, strlen(CHUNKS[0].bytes) +
	    strlen(CHUNKS[1].bytes));
	assert_int_equal(state_lookup(fs.srv.state, request_id(&r), &rec),
	    TS_OK);
	assert_int_equal(rec.status, STATE_CANCELLED);
	assert_true(rec.generated < NELEM(CHUNKS));
	fake_close(&fc);
	replay_set_free(fs.srv.replay);
	fs.srv.replay = NULL;
	server_down(&fs);
}

/* A miss: 404 replay_miss in OpenAI's shape; with --replay-miss sim the
 * same request is the simulator's (its body given back to /v1); a path
 * no recording has is routed as always, --replay or not. */
static void
test_replay_misses(void **unused)
{
	static const char other[] = "{\"model\":\"tokstream-sim\","
	    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	    "\"max_tokens\":3}";
	static const char prompt[] = "{\"model\":\"tokstream-sim\","
	    "\"prompt\":\"hi\",\"max_tokens\":2}";
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	json_t *o;
	int sim;

	(void)unused;
	for (sim = 0; sim <= 1; sim++) {
		server_defaults(&fs);
		fs.opt.replay_miss_sim = sim;
		server_start(&fs);
		fs.srv.replay = recorded(1.0);
		fake_open(&fc, &fs, "POST", CHAT, other);
		exchange(&fs, &fc, &r);
		if (!sim) {
			assert_error(&r, 404, "invalid_request_error",
			    "replay_miss", 1);
		} else {
			assert_int_equal(r.status, 200);
			o = body_json(&r);
			assert_string_equal(jstr(o, "object"),
			    "chat.completion");
			assert_int_equal(json_integer_value(json_object_get(
			    json_object_get(o, "usage"),
			    "completion_tokens")), 3);
			json_decref(o);
		}
		fake_close(&fc);
		/* not a recorded path: /v1/completions as always */
		fake_open(&fc, &fs, "POST", "/v1/completions", prompt);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		o = body_json(&r);
		assert_string_equal(jstr(o, "object"), "text_completion");
		json_decref(o);
		fake_close(&fc);
		fake_open(&fc, &fs, "GET", "/health", NULL);
		exchange(&fs, &fc, &r);
		assert_int_equal(r.status, 200);
		fake_close(&fc);
		replay_set_free(fs.srv.replay);
		fs.srv.replay = NULL;
		server_down(&fs);
	}
}

/* A recording of 10,000 one-byte chunks, more than a /v1 request's
 * max_tokens may be (8192): every byte, in order. */
static void
test_replay_many_chunks(void **unused)
{
	struct fake_server fs;
	struct fake_conn fc;
	struct response r;
	struct replay_set *s = replay_set_new();
	struct replay_rec *rec = replay_rec_new(200);
	char want[10000];
	uint32_t i;

	(void)unused;
	for (i = 0; i < sizeof(want); i++) {
		want[i] = (char)('a' + i % 26);
		assert_int_equal(replay_rec_chunk(rec, 100 * (int64_t)i,
		    &want[i], 1), TS_OK);
	}
	assert_int_equal(replay_set_add(s, "POST", CHAT, BODY, strlen(BODY),
	    rec), TS_OK);
	replay_set_schedule(s, 1.0);
	server_up(&fs);
	fs.srv.replay = s;
	fake_open(&fc, &fs, "POST", CHAT, BODY);
	exchange(&fs, &fc, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, sizeof(want));
	assert_memory_equal(r.body, want, sizeof(want));
	fake_close(&fc);
	replay_set_free(s);
	fs.srv.replay = NULL;
	server_down(&fs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_bytes_and_times),
		cmocka_unit_test(test_replay_client_leaves),
		cmocka_unit_test(test_replay_misses),
		cmocka_unit_test(test_replay_many_chunks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
