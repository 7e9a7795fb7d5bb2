/*
 * test_engine.c - the generation loop with a fake client: token order and
 * count, cancellation at any point (prefill or decode), injected errors,
 * max_tokens 0, keep-alives during a silent prefill, shutdown.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <time.h>

#include "engine.h"
#include "gen.h"

struct fake {
	uint32_t ids_seen;
	char text[8192];
	size_t text_len;
	int hup_at_token;      /* on_token returns TS_EHUP at this index */
	int hup_in_wait;       /* wait_until returns TS_EHUP on this call */
	int waits;
	int keepalives;
};

static enum ts_err
fake_token(void *ctx, uint32_t index, const char *text, size_t len)
{
	struct fake *f = ctx;

	assert_int_equal(index, f->ids_seen);
	f->ids_seen++;
	memcpy(f->text + f->text_len, text, len);
	f->text_len += len;
	return (int)index == f->hup_at_token ? TS_EHUP : TS_OK;
}

static enum ts_err
fake_keepalive(void *ctx)
{
	((struct fake *)ctx)->keepalives++;
	return TS_OK;
}

static enum ts_err
fake_wait(void *ctx, int64_t deadline)
{
	struct fake *f = ctx;
	int64_t left = deadline - engine_now_ns();

	if (++f->waits == f->hup_in_wait)
		return TS_EHUP;
	if (left > 0) {
		struct timespec ts = { left / 1000000000, left % 1000000000 };

		nanosleep(&ts, NULL);
	}
	return TS_OK;
}

static void
init_job(struct engine_job *job, const char *prompt, uint32_t n)
{
	memset(job, 0, sizeof(*job));
	job->prompt = prompt;
	job->prompt_len = strlen(prompt);
	job->max_tokens = n;
	job->error_after = -1;
	job->t0_ns = engine_now_ns();
}

static struct engine_latency lat0 = { 0, 0, 0, 0 };

static void
test_runs_to_length_in_gen_order(void **unused)
{
	struct fake f = { .hup_at_token = -1 };
	struct engine_io io = { &f, fake_token, fake_keepalive, fake_wait };
	struct engine_job job;
	struct engine_result res;
	struct gen_stream g;
	char want[8192];
	size_t wlen = 0, len;
	uint32_t i;

	init_job(&job, "hello", 50);
	assert_int_equal(engine_run(&job, &lat0, &io, NULL, NULL, &res),
	    TS_OK);
	assert_int_equal(res.finish, ENGINE_FINISH_LENGTH);
	assert_int_equal(res.generated, 50);
	assert_int_equal(f.ids_seen, 50);
	gen_init(&g, "hello", 5);
	for (i = 0; i < 50; i++) {
		const char *t = gen_token_text(gen_next(&g), &len);

		memcpy(want + wlen, t, len);
		wlen += len;
	}
	assert_int_equal(f.text_len, wlen);
	assert_memory_equal(f.text, want, wlen);
}

static void
test_cancel_mid_decode(void **unused)
{
	struct fake f = { .hup_at_token = 4 };
	struct engine_io io = { &f, fake_token, fake_keepalive, fake_wait };
	struct engine_job job;
	struct engine_result res;

	init_job(&job, "hello", 100);
	engine_run(&job, &lat0, &io, NULL, NULL, &res);
	assert_int_equal(res.finish, ENGINE_FINISH_CANCELLED);
	assert_int_equal(res.generated, 5);   /* the 5th was produced */
}

static void
test_cancel_in_wait(void **unused)
{
	struct fake f = { .hup_at_token = -1, .hup_in_wait = 1 };
	struct engine_io io = { &f, fake_token, fake_keepalive, fake_wait };
	struct engine_job job;
	struct engine_result res;

	init_job(&job, "hello", 100);
	engine_run(&job, &lat0, &io, NULL, NULL, &res);
	assert_int_equal(res.finish, ENGINE_FINISH_CANCELLED);
	assert_int_equal(res.generated, 0);   /* noticed during prefill */
	f.waits = 0;
	f.hup_in_wait = 4;
	f.ids_seen = 0;
	engine_run(&job, &lat0, &io, NULL, NULL, &res);
	assert_int_equal(res.generated, 3);
}

static void
test_error_after_and_zero(void **unused)
{
	struct fake f = { .hup_at_token = -1 };
	struct engine_io io = { &f, fake_token, fake_keepalive, fake_wait };
	struct engine_job job;
	struct engine_result res;

	init_job(&job, "hello", 10);
	job.error_after = 3;
	engine_run(&job, &lat0, &io, NULL, NULL, &res);
	assert_int_equal(res.finish, ENGINE_FINISH_ERROR);
	assert_int_equal(res.generated, 3);
	f.ids_seen = 0;
	init_job(&job, "hello", 0);
	engine_run(&job, &lat0, &io, NULL, NULL, &res);
	assert_int_equal(res.finish, ENGINE_FINISH_LENGTH);
	assert_int_equal(res.generated, 0);
	assert_int_equal(f.ids_seen, 0);
}

/* A 250 ms prefill with keep-alives every 50 ms writes about 4 of them
 * (asserted with a wide margin: this is logic, not a speed test). */
static void
test_keepalive_during_prefill(void **unused)
{
	struct fake f = { .hup_at_token = -1 };
	struct engine_io io = { &f, fake_token, fake_keepalive, fake_wait };
	struct engine_latency lat = { 0, 0, 1, 50 };
	struct engine_job job;
	struct engine_result res;

	init_job(&job, "hello", 3);
	job.prefill_ms = 250;
	job.tpot_ms = 1;
	engine_run(&job, &lat, &io, NULL, NULL, &res);
	assert_int_equal(res.generated, 3);
	assert_true(f.keepalives >= 2 && f.keepalives <= 5);
	assert_true(res.first_token_ns - job.t0_ns >= 250000000);
	/* no keep-alive callback: none written, no crash */
	io.on_keepalive = NULL;
	f.keepalives = 0;
	f.ids_seen = 0;
	init_job(&job, "hello", 1);
	job.prefill_ms = 120;
	engine_run(&job, &lat, &io, NULL, NULL, &res);
	assert_int_equal(f.keepalives, 0);
}

/* A resumed job recomputes tokens 0..start-1 silently, then delivers
 * start.. with their absolute indices: the joined text is the whole. */
static void
test_resume_start_index(void **unused)
{
	struct fake a = { .hup_at_token = -1 }, b = { .hup_at_token = -1 };
	struct engine_io ia = { &a, fake_token, fake_keepalive, fake_wait };
	struct engine_io ib = { &b, fake_token, fake_keepalive, fake_wait };
	struct engine_job job;
	struct engine_result res;

	init_job(&job, "resume me", 30);
	job.max_tokens = 7;
	engine_run(&job, &lat0, &ia, NULL, NULL, &res);
	assert_int_equal(res.generated, 7);
	b.ids_seen = 7;               /* fake_token checks index order */
	memcpy(b.text, a.text, a.text_len);
	b.text_len = a.text_len;
	init_job(&job, "resume me", 30);
	job.start_index = 7;
	engine_run(&job, &lat0, &ib, NULL, NULL, &res);
	assert_int_equal(res.finish, ENGINE_FINISH_LENGTH);
	assert_int_equal(res.generated, 23);
	a.ids_seen = 0;
	a.text_len = 0;
	init_job(&job, "resume me", 30);
	engine_run(&job, &lat0, &ia, NULL, NULL, &res);
	assert_int_equal(a.text_len, b.text_len);
	assert_memory_equal(a.text, b.text, a.text_len);
	/* nothing left to resume: prefill only, no token */
	init_job(&job, "resume me", 30);
	job.start_index = 30;
	engine_run(&job, &lat0, &ib, NULL, NULL, &res);
	assert_int_equal(res.generated, 0);
}

static void
test_shutdown(void **unused)
{
	struct fake f = { .hup_at_token = -1 };
	struct engine_io io = { &f, fake_token, fake_keepalive, fake_wait };
	struct engine_job job;
	struct engine_result res;
	atomic_int stopping = 1;

	init_job(&job, "hello", 10);
	engine_run(&job, &lat0, &io, NULL, &stopping, &res);
	assert_int_equal(res.finish, ENGINE_FINISH_SHUTDOWN);
	assert_int_equal(res.generated, 0);
}

static void
test_prefill_model(void **unused)
{
	struct engine_latency lat;

	engine_latency_defaults(&lat);
	assert_true(engine_prefill_ms(&lat, 0) == lat.prefill_base_ms);
	assert_true(engine_prefill_ms(&lat, 400) ==
	    lat.prefill_base_ms + 400 * lat.prefill_per_token_ms);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_to_length_in_gen_order),
		cmocka_unit_test(test_cancel_mid_decode),
		cmocka_unit_test(test_cancel_in_wait),
		cmocka_unit_test(test_error_after_and_zero),
		cmocka_unit_test(test_keepalive_during_prefill),
		cmocka_unit_test(test_resume_start_index),
		cmocka_unit_test(test_shutdown),
		cmocka_unit_test(test_prefill_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
