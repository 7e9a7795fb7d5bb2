/*
 * test_engine_physical.c - the engine over a scripted backend of the
 * physical kind (its calls take real time, so the latency model is off):
 * EOS and stop strings end a sequence with finish STOP, a failing step
 * ends its whole batch with ERROR, a sequence the backend refuses to
 * start leaves with ERROR while the others go on, a client that left
 * before the end of a finished sequence is recorded as cancelled, and the
 * ids the engine published turn into the text a relay would send
 * (text/release.h). test_engine.c has the engine on a synthetic clock.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "text/release.h"
#include "text/utf8.h"
#include "handlers/record.h"
#include "stores/state.h"
#include "sim/lab.h"
#include "sim/sim.h"
#include "sim/vocab.h"

#define MS 1000000LL

/* The server's record hooks over a state (if any). */
static struct record_ctx records;
static struct engine_hooks hooks;

/* ---- a scripted backend of the physical kind --------------------------- */

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define SCRIPT_MAX 8

/* The vocabulary: test strings. é is split over two byte tokens. */
enum {
	T_HEL, T_LO, T_WOR, T_LD, T_BANG, T_E1, T_E2, T_AFTER, T_EOS,
	T_EOS2, T_COUNT
};

static const char *const script_texts[T_COUNT] = {
	[T_HEL] = "Hel", [T_LO] = "lo", [T_WOR] = " wor", [T_LD] = "ld",
	[T_BANG] = "!", [T_E1] = "\xc3", [T_E2] = "\xa9",
	[T_AFTER] = " after", [T_EOS] = "", [T_EOS2] = "</s>",
};

/* What the backend answers for one prompt. */
struct script {
	const char *prompt;
	enum ts_err start_rc;           /* seq_start's answer */
	size_t n;
	uint32_t ids[SCRIPT_MAX];       /* then "!" for ever */
};

/* The backend's impl: its scripts and what it was asked. */
struct script_backend {
	const struct script *scripts;
	size_t nscripts;
	unsigned fail_step;             /* step call that fails; 0: none */
	unsigned steps;                 /* step calls */
	size_t step_n[64];              /* sequences of each step call */
	unsigned started, freed;        /* sequences started and freed */
};

struct script_seq {
	const struct script *sc;
	size_t pos;
};

static struct script_backend sb;

static enum ts_err
script_seq_start(void *impl, uint32_t model, const char *prompt,
    size_t len, uint32_t skip, const struct engine_sampling *samp,
    void **seq)
{
	struct script_backend *b = impl;
	struct script_seq *q;
	size_t i;

	(void)model;
	(void)samp;
	*seq = NULL;
	for (i = 0; i < b->nscripts; i++)
		if (strlen(b->scripts[i].prompt) == len &&
		    memcmp(b->scripts[i].prompt, prompt, len) == 0)
			break;
	assert_true(i < b->nscripts);
	if (b->scripts[i].start_rc != TS_OK)
		return b->scripts[i].start_rc;
	q = calloc(1, sizeof(*q));
	assert_non_null(q);
	q->sc = &b->scripts[i];
	q->pos = skip;
	b->started++;
	*seq = q;
	return TS_OK;
}

static enum ts_err
script_step(void *impl, void *const *seqs, size_t n, uint32_t *ids)
{
	struct script_backend *b = impl;
	size_t i;

	if (b->steps < NELEM(b->step_n))
		b->step_n[b->steps] = n;
	if (++b->steps == b->fail_step)
		return TS_ESYS;
	for (i = 0; i < n; i++) {
		struct script_seq *q = seqs[i];

		ids[i] = q->pos < q->sc->n ? q->sc->ids[q->pos] : T_BANG;
		q->pos++;
	}
	return TS_OK;
}

static const char *
script_token_text(void *impl, uint32_t id, size_t *len)
{
	(void)impl;
	if (id >= T_COUNT) {
		*len = 0;
		return NULL;
	}
	*len = strlen(script_texts[id]);
	return script_texts[id];
}

static void
script_seq_free(void *impl, void *seq)
{
	struct script_backend *b = impl;

	if (seq != NULL)
		b->freed++;
	free(seq);
}

static enum ts_err
script_count_tokens(void *impl, uint32_t model, const char *prompt,
    size_t len, uint64_t *n)
{
	(void)impl;
	(void)model;
	(void)prompt;
	*n = len;
	return TS_OK;
}

static uint32_t
script_context_len(void *impl)
{
	(void)impl;
	return 0;
}

static const char *const script_models[] = { "scripted" };

/* An engine over the scripted backend with these scripts. No write-stall
 * ticks: it idles once its sequences ended. With st, the server's record
 * hooks write to it. */
static struct engine *
mk_physical_st(const struct script *scripts, size_t n, unsigned fail_step,
    struct state *st)
{
	struct engine_backend be = {
		.impl = &sb,
		.name = "scripted",
		.models = script_models,
		.nmodels = 1,
		.lab_model = 0,
		.physical = 1,
		.eos_ids = { T_EOS, T_EOS2 },
		.n_eos = 2,
		.max_token_bytes = 8,
		.seq_start = script_seq_start,
		.step = script_step,
		.token_text = script_token_text,
		.seq_free = script_seq_free,
		.count_tokens = script_count_tokens,
		.context_len = script_context_len,
		.close = NULL,
	};
	struct engine_config cfg;
	struct engine *e;

	memset(&sb, 0, sizeof(sb));
	sb.scripts = scripts;
	sb.nscripts = n;
	sb.fail_step = fail_step;
	engine_config_defaults(&cfg);
	cfg.max_num_seqs = 4;
	records.state = st;
	records.metrics = NULL;
	record_hooks(&hooks, &records);
	assert_int_equal(engine_create_manual(&e, &cfg, &be, st != NULL ?
	    &hooks : NULL), TS_OK);
	assert_int_equal(engine_paces(e), 0);
	return e;
}

static struct engine *
mk_physical(const struct script *scripts, size_t n, unsigned fail_step)
{
	return mk_physical_st(scripts, n, fail_step, NULL);
}

static enum ts_err
submit_physical(struct engine *e, const char *prompt, uint32_t max_tokens,
    const char *const *stop, size_t nstop, struct engine_seq **s)
{
	struct engine_request r;
	size_t i;

	memset(&r, 0, sizeof(r));
	r.prompt = prompt;
	r.prompt_len = strlen(prompt);
	r.prompt_tokens = r.prompt_len;
	engine_sampling_defaults(&r.sampling);
	r.max_tokens = max_tokens;
	r.tpot_ms = -1;
	r.error_after = -1;
	r.t0_ns = engine_now_ns();
	for (i = 0; i < nstop; i++) {
		r.stop[i] = stop[i];
		r.stop_len[i] = strlen(stop[i]);
	}
	r.nstop = nstop;
	return engine_submit(e, &r, s);
}

/* Runs the engine until it is idle. A physical backend's step takes real
 * time, so the engine's times are CLOCK_MONOTONIC: follow them. */
static void
run_physical(struct engine *e)
{
	int64_t now = engine_now_ns();
	int i;

	for (i = 0; i < 100000; i++) {
		int64_t t = engine_advance(e, now);

		if (t == INT64_MAX)
			return;
		if (t > now)
			now = t;
	}
	fail_msg("the engine never became idle");
}

/* EOS (either of the backend's eos_ids) ends a sequence with STOP: the
 * EOS counts in `generated` but is not published in ids. max_tokens
 * before an EOS is LENGTH. */
static void
test_physical_eos_ends_with_stop(void **unused)
{
	static const struct {
		struct script sc;
		uint32_t max_tokens;
		enum engine_finish finish;
		uint32_t produced, generated;
	} cases[] = {
		{ { "p", TS_OK, 4, { T_HEL, T_LO, T_EOS, T_LD } }, 10,
		    ENGINE_FINISH_STOP, 2, 3 },
		{ { "p", TS_OK, 3, { T_HEL, T_EOS2, T_LD } }, 10,
		    ENGINE_FINISH_STOP, 1, 2 },
		/* the token of the prefill pass is an EOS */
		{ { "p", TS_OK, 1, { T_EOS } }, 10, ENGINE_FINISH_STOP, 0, 1 },
		{ { "p", TS_OK, 3, { T_HEL, T_LO, T_LD } }, 3,
		    ENGINE_FINISH_LENGTH, 3, 3 },
		{ { "p", TS_OK, 3, { T_HEL, T_LO, T_EOS } }, 2,
		    ENGINE_FINISH_LENGTH, 2, 2 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct engine *e = mk_physical(&cases[k].sc, 1, 0);
		struct engine_seq *s;
		struct engine_view v;
		struct engine_stats st;
		uint32_t i;

		assert_int_equal(submit_physical(e, "p", cases[k].max_tokens,
		    NULL, 0, &s), TS_OK);
		run_physical(e);
		engine_seq_view(s, &v);
		assert_int_equal(v.finish, cases[k].finish);
		assert_int_equal(v.produced, cases[k].produced);
		assert_int_equal(v.generated, cases[k].generated);
		for (i = 0; i < v.produced; i++) {
			assert_int_equal(v.ids[i], cases[k].sc.ids[i]);
			assert_int_not_equal(v.ids[i], T_EOS);
			assert_int_not_equal(v.ids[i], T_EOS2);
		}
		engine_stats(e, &st);
		assert_int_equal(st.generated, cases[k].generated);
		assert_int_equal(st.running, 0);
		engine_release(e, s);
		assert_int_equal(sb.freed, sb.started);
		engine_destroy(e);
	}
}

/* A stop string ends the sequence with STOP at the token that completes
 * it (that token is published: its text before the stop string is
 * sent), also when it spans two or three tokens. */
static void
test_physical_stop_strings(void **unused)
{
	static const struct script sc = { "p", TS_OK, 6,
	    { T_HEL, T_LO, T_WOR, T_LD, T_BANG, T_AFTER } };
	static const struct {
		const char *stop[2];
		size_t nstop;
		enum engine_finish finish;
		uint32_t produced;
	} cases[] = {
		{ { "wor" }, 1, ENGINE_FINISH_STOP, 3 },     /* in a token */
		{ { " wor" }, 1, ENGINE_FINISH_STOP, 3 },    /* a token */
		{ { "lo w" }, 1, ENGINE_FINISH_STOP, 3 },    /* two tokens */
		{ { "Hello" }, 1, ENGINE_FINISH_STOP, 2 },   /* two tokens */
		{ { "ld!" }, 1, ENGINE_FINISH_STOP, 5 },     /* two tokens */
		{ { "d! a" }, 1, ENGINE_FINISH_STOP, 6 },    /* three */
		{ { "zz", "lo w" }, 2, ENGINE_FINISH_STOP, 3 },
		{ { "o wo", "wor" }, 2, ENGINE_FINISH_STOP, 3 },
		{ { "xyz" }, 1, ENGINE_FINISH_LENGTH, 6 },   /* never */
		{ { "after!" }, 1, ENGINE_FINISH_LENGTH, 6 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct engine *e = mk_physical(&sc, 1, 0);
		struct engine_seq *s;
		struct engine_view v;
		uint32_t i;

		assert_int_equal(submit_physical(e, "p", 6, cases[k].stop,
		    cases[k].nstop, &s), TS_OK);
		run_physical(e);
		engine_seq_view(s, &v);
		assert_int_equal(v.finish, cases[k].finish);
		assert_int_equal(v.produced, cases[k].produced);
		assert_int_equal(v.generated, cases[k].produced);
		for (i = 0; i < v.produced; i++)
			assert_int_equal(v.ids[i], sc.ids[i]);
		/* the backend was not asked for more */
		assert_int_equal(sb.steps, cases[k].produced);
		engine_release(e, s);
		engine_destroy(e);
	}
}

/* A step that fails ends every sequence of its batch with ERROR (the
 * pass that yields the first tokens, or a decode step); the backend's
 * sequences are freed, and the engine goes on with the next request. */
static void
test_physical_step_failure_ends_batch(void **unused)
{
	static const struct script scripts[] = {
		{ "a", TS_OK, 4, { T_HEL, T_LO, T_WOR, T_LD } },
		{ "b", TS_OK, 4, { T_LD, T_BANG, T_AFTER, T_LO } },
		{ "c", TS_OK, 4, { T_WOR, T_WOR, T_WOR, T_WOR } },
	};
	static const struct {
		unsigned fail_step;      /* 1: the prefill pass */
		uint32_t produced;       /* by each, before it */
	} cases[] = {
		{ 1, 0 },
		{ 2, 1 },
		{ 3, 2 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct engine *e = mk_physical(scripts, NELEM(scripts),
		    cases[k].fail_step);
		struct engine_seq *s[3], *after;
		struct engine_view v;
		size_t i;

		for (i = 0; i < 3; i++)
			assert_int_equal(submit_physical(e, scripts[i].prompt,
			    4, NULL, 0, &s[i]), TS_OK);
		run_physical(e);
		/* the three ran as one batch, the failing step included */
		assert_true(sb.steps >= cases[k].fail_step);
		assert_int_equal(sb.step_n[cases[k].fail_step - 1], 3);
		for (i = 0; i < 3; i++) {
			uint32_t j;

			engine_seq_view(s[i], &v);
			assert_int_equal(v.finish, ENGINE_FINISH_ERROR);
			assert_int_equal(v.produced, cases[k].produced);
			for (j = 0; j < v.produced; j++)
				assert_int_equal(v.ids[j], scripts[i].ids[j]);
			engine_release(e, s[i]);
		}
		assert_int_equal(sb.started, 3);
		assert_int_equal(sb.freed, 3);
		/* the backend is healthy again: a new request runs */
		assert_int_equal(submit_physical(e, "b", 4, NULL, 0, &after),
		    TS_OK);
		run_physical(e);
		engine_seq_view(after, &v);
		assert_int_equal(v.finish, ENGINE_FINISH_LENGTH);
		assert_int_equal(v.produced, 4);
		for (i = 0; i < 4; i++)
			assert_int_equal(v.ids[i], scripts[1].ids[i]);
		engine_release(e, after);
		assert_int_equal(sb.freed, sb.started);
		engine_destroy(e);
	}
}

/* seq_start refusing a sequence (TS_ELIMIT: the prompt does not fit the
 * context; TS_ENOMEM: no KV cache) ends that one with ERROR; the others
 * of the same prefill pass get their own tokens and run to the end. */
static void
test_physical_seq_start_refused(void **unused)
{
	static const struct {
		size_t refused;          /* which of the three */
		enum ts_err rc;
	} cases[] = {
		{ 0, TS_ELIMIT },
		{ 1, TS_ELIMIT },
		{ 2, TS_ELIMIT },
		{ 1, TS_ENOMEM },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct script scripts[] = {
			{ "a", TS_OK, 3, { T_HEL, T_LO, T_WOR } },
			{ "b", TS_OK, 3, { T_LD, T_BANG, T_AFTER } },
			{ "c", TS_OK, 3, { T_AFTER, T_AFTER, T_LD } },
		};
		struct engine *e;
		struct engine_seq *s[3];
		struct engine_view v;
		size_t i;

		scripts[cases[k].refused].start_rc = cases[k].rc;
		e = mk_physical(scripts, NELEM(scripts), 0);
		for (i = 0; i < 3; i++)
			assert_int_equal(submit_physical(e, scripts[i].prompt,
			    3, NULL, 0, &s[i]), TS_OK);
		run_physical(e);
		/* the prefill pass ran the two that started */
		assert_int_equal(sb.step_n[0], 2);
		for (i = 0; i < 3; i++) {
			uint32_t j;

			engine_seq_view(s[i], &v);
			if (i == cases[k].refused) {
				assert_int_equal(v.finish,
				    ENGINE_FINISH_ERROR);
				assert_int_equal(v.produced, 0);
				assert_int_equal(v.generated, 0);
			} else {
				assert_int_equal(v.finish,
				    ENGINE_FINISH_LENGTH);
				assert_int_equal(v.produced, 3);
				for (j = 0; j < 3; j++)
					assert_int_equal(v.ids[j],
					    scripts[i].ids[j]);
			}
			engine_release(e, s[i]);
		}
		assert_int_equal(sb.started, 2);
		assert_int_equal(sb.freed, 2);
		engine_destroy(e);
	}
}

/*
 * A client that leaves after the sequence's last token but before its
 * end was written (the relay cancels it after the engine finished it,
 * then releases it) was cancelled, whatever ended the sequence
 * (engine.h struct engine_outcome: "CANCELLED also for a client that
 * left after its last token, before [DONE]"); one that stays sees the
 * finish.
 */
static void
test_physical_gone_before_done(void **unused)
{
	static const struct script sc = { "p", TS_OK, 4,
	    { T_HEL, T_LO, T_EOS, T_LD } };
	static const char *const stop[] = { "llo" };
	static const struct {
		uint32_t max_tokens;
		size_t nstop;
		int gone;
		enum engine_finish finish;   /* the sequence's */
		enum state_status status;    /* the record's */
	} cases[] = {
		{ 2, 0, 0, ENGINE_FINISH_LENGTH, STATE_DONE },
		{ 2, 0, 1, ENGINE_FINISH_LENGTH, STATE_CANCELLED },
		{ 8, 0, 0, ENGINE_FINISH_STOP, STATE_DONE },     /* EOS */
		{ 8, 0, 1, ENGINE_FINISH_STOP, STATE_CANCELLED },
		{ 8, 1, 0, ENGINE_FINISH_STOP, STATE_DONE },     /* stop */
		{ 8, 1, 1, ENGINE_FINISH_STOP, STATE_CANCELLED },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct state *st;
		struct engine *e;
		struct engine_seq *s;
		struct engine_view v;
		struct state_record rec;

		assert_int_equal(state_open_memory(&st, STATE_HISTORY), TS_OK);
		e = mk_physical_st(&sc, 1, 0, st);
		assert_int_equal(submit_physical(e, "p", cases[k].max_tokens,
		    stop, cases[k].nstop, &s), TS_OK);
		run_physical(e);
		engine_seq_view(s, &v);
		assert_int_equal(v.finish, cases[k].finish);
		assert_int_equal(v.produced, 2);
		if (cases[k].gone) {
			engine_delivered(s, 1);
			engine_cancel(e, s, engine_now_ns(),
			    ENGINE_CAUSE_CLIENT_GONE);
		} else {
			engine_delivered(s, 2);
		}
		engine_release(e, s);
		assert_int_equal(state_lookup(st, 1, &rec), TS_OK);
		assert_int_equal(rec.status, cases[k].status);
		assert_int_equal(rec.wasted, cases[k].gone ? 1 : 0);
		engine_destroy(e);
		state_close(st);
	}
}

/*
 * The text of what the engine published, as a relay makes it: each id's
 * text through text/release.h with the request's stop strings, one
 * chunk per token, then release_finish. A character split over two
 * tokens goes out whole with the second; the stop string and what
 * follows it never go out; the releaser sees the stop at the very token
 * where the engine ended the sequence.
 */
static void
test_physical_released_text(void **unused)
{
	static const struct {
		struct script sc;
		uint32_t max_tokens;
		const char *stop;        /* NULL: none */
		enum engine_finish finish;
		uint32_t produced;
		const char *chunks[SCRIPT_MAX];
		const char *tail;        /* release_finish's */
		int stopped;             /* the stop string ended it */
	} cases[] = {
		{ { "p", TS_OK, 4, { T_HEL, T_E1, T_E2, T_BANG } }, 4, NULL,
		    ENGINE_FINISH_LENGTH, 4,
		    { "Hel", "", "\xc3\xa9", "!" }, "", 0 },
		{ { "p", TS_OK, 4, { T_HEL, T_LO, T_WOR, T_LD } }, 4, "lo w",
		    ENGINE_FINISH_STOP, 3, { "He", "l", "" }, "", 1 },
		{ { "p", TS_OK, 4, { T_HEL, T_LO, T_WOR, T_LD } }, 4, "wo",
		    ENGINE_FINISH_STOP, 3, { "Hel", "lo", " " }, "", 1 },
		/* the stop string starts with the split character */
		{ { "p", TS_OK, 5, { T_HEL, T_E1, T_E2, T_BANG, T_AFTER } },
		    5, "\xc3\xa9!", ENGINE_FINISH_STOP, 4,
		    { "Hel", "", "", "" }, "", 1 },
		/* ... and is held, then let go when the stop fails */
		{ { "p", TS_OK, 5, { T_HEL, T_E1, T_E2, T_LO, T_BANG } },
		    5, "\xc3\xa9!", ENGINE_FINISH_LENGTH, 5,
		    { "Hel", "", "", "\xc3\xa9lo", "!" }, "", 0 },
		{ { "p", TS_OK, 6, { T_HEL, T_LO, T_WOR, T_LD, T_BANG,
		    T_AFTER } }, 6, "d! a", ENGINE_FINISH_STOP, 6,
		    { "Hel", "lo", " wor", "l", "", "" }, "", 1 },
		/* an EOS: nothing of its text, what is held goes out */
		{ { "p", TS_OK, 4, { T_HEL, T_E1, T_E2, T_EOS2 } }, 8, NULL,
		    ENGINE_FINISH_STOP, 3, { "Hel", "", "\xc3\xa9" }, "", 0 },
		/* an EOS while a stop string's prefix is held: let go */
		{ { "p", TS_OK, 3, { T_HEL, T_LO, T_EOS2 } }, 8, "lo!",
		    ENGINE_FINISH_STOP, 2, { "He", "l" }, "lo", 0 },
		/* max_tokens inside a character: U+FFFD at the end */
		{ { "p", TS_OK, 2, { T_HEL, T_E1 } }, 2, NULL,
		    ENGINE_FINISH_LENGTH, 2, { "Hel", "" }, "\xef\xbf\xbd", 0 },
	};
	size_t k;

	(void)unused;
	for (k = 0; k < NELEM(cases); k++) {
		struct engine *e = mk_physical(&cases[k].sc, 1, 0);
		const struct engine_backend *be = engine_backend(e);
		const char *stop = cases[k].stop;
		size_t stop_len = stop != NULL ? strlen(stop) : 0;
		struct engine_seq *s;
		struct engine_view v;
		struct release rel;
		struct release_chunk c;
		char text[256];
		size_t tlen = 0;
		uint32_t i;
		int matched = 0;

		assert_int_equal(submit_physical(e, "p", cases[k].max_tokens,
		    stop != NULL ? &stop : NULL, stop != NULL, &s), TS_OK);
		run_physical(e);
		engine_seq_view(s, &v);
		assert_int_equal(v.finish, cases[k].finish);
		assert_int_equal(v.produced, cases[k].produced);
		assert_int_equal(release_init(&rel, stop != NULL ? &stop :
		    NULL, &stop_len, stop != NULL), TS_OK);
		for (i = 0; i < v.produced; i++) {
			size_t len;
			const char *t = be->token_text(be->impl, v.ids[i],
			    &len);

			assert_false(matched);
			assert_int_equal(release_bytes(&rel, t, len, &c,
			    &matched), TS_OK);
			assert_int_equal(c.len, strlen(cases[k].chunks[i]));
			assert_memory_equal(c.p, cases[k].chunks[i], c.len);
			assert_true(utf8_valid(c.p, c.len));
			memcpy(text + tlen, c.p, c.len);
			tlen += c.len;
		}
		/* the releaser stopped where the engine did */
		assert_int_equal(matched != 0, cases[k].stopped);
		release_finish(&rel, &c);
		assert_int_equal(c.len, strlen(cases[k].tail));
		assert_memory_equal(c.p, cases[k].tail, c.len);
		memcpy(text + tlen, c.p, c.len);
		tlen += c.len;
		text[tlen] = '\0';
		assert_true(utf8_valid(text, tlen));
		if (stop != NULL)
			assert_null(strstr(text, stop));
		assert_null(strstr(text, "</s>"));
		engine_release(e, s);
		engine_destroy(e);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_physical_eos_ends_with_stop),
		cmocka_unit_test(test_physical_stop_strings),
		cmocka_unit_test(test_physical_step_failure_ends_batch),
		cmocka_unit_test(test_physical_seq_start_refused),
		cmocka_unit_test(test_physical_gone_before_done),
		cmocka_unit_test(test_physical_released_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
