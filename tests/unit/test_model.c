/*
 * test_model.c - the llama backend (src/model/): golden tests of the
 * forward pass against the plain reference in model_ref.c (first logits
 * and 16 greedy tokens, for several shapes: grouped-query, multi-query,
 * multi-head, shared and separate classifiers), that batching, chunked
 * prefill and threads change nothing, resumed streams (skip), the end of
 * the context, bad calls, and the checkpoint's validation errors.
 *
 * Tolerance: logits within 1e-4 x max(1, max |reference logit|) of the
 * reference (the kernels sum in another order); between configurations
 * of the backend itself (threads, batch, chunks) they must be identical,
 * bit for bit: every output is computed by the same arithmetic.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/llama.h"
#include "model/model.h"
#include "model/model_synth.h"
#include "model_ref.h"

#define NGEN 16
#define TOL 1e-4f

static char dir[256];

/* Shapes under test: grouped-query with a separate classifier (the
 * default), multi-head with a shared one, multi-query. */
static const struct {
	const char *name;
	uint32_t dim, hidden, layers, heads, kv_heads, vocab, seq_len;
	int shared;
	uint64_t seed;
} shapes[] = {
	{ "gqa", 64, 172, 2, 4, 2, 512, 256, 0, 1 },
	{ "mha-shared", 48, 128, 3, 6, 6, 400, 128, 1, 7 },
	{ "mqa", 32, 64, 1, 4, 1, 360, 128, 0, 3 },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

static const char *const prompts[] = {
	"Once upon a time, there was a little girl named Lily.",
	"",
	"caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80!",
	"the the the",
};
#define NPROMPTS (sizeof(prompts) / sizeof(prompts[0]))

static void
shape_paths(size_t i, char *model, char *tok, size_t len)
{
	snprintf(model, len, "%s/%s.bin", dir, shapes[i].name);
	snprintf(tok, len, "%s/%s.tok", dir, shapes[i].name);
}

static int
setup(void **unused)
{
	char m[300], t[300], err[256];
	size_t i;

	snprintf(dir, sizeof(dir), "/tmp/ts-model-test.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	for (i = 0; i < NSHAPES; i++) {
		struct model_synth s;

		model_synth_defaults(&s);
		s.cfg.dim = shapes[i].dim;
		s.cfg.hidden_dim = shapes[i].hidden;
		s.cfg.n_layers = shapes[i].layers;
		s.cfg.n_heads = shapes[i].heads;
		s.cfg.n_kv_heads = shapes[i].kv_heads;
		s.cfg.vocab_size = shapes[i].vocab;
		s.cfg.seq_len = shapes[i].seq_len;
		s.cfg.shared_classifier = shapes[i].shared;
		s.seed = shapes[i].seed;
		shape_paths(i, m, t, sizeof(m));
		if (model_synth_write_checkpoint(&s, m, err, sizeof(err)) !=
		    TS_OK || model_synth_write_tokenizer(&s, t, err,
		    sizeof(err)) != TS_OK) {
			fprintf(stderr, "%s\n", err);
			return -1;
		}
	}
	return 0;
}

static int
teardown(void **unused)
{
	char m[300], t[300];
	size_t i;

	for (i = 0; i < NSHAPES; i++) {
		shape_paths(i, m, t, sizeof(m));
		unlink(m);
		unlink(t);
	}
	snprintf(m, sizeof(m), "%s/bad", dir);
	unlink(m);
	rmdir(dir);
	return 0;
}

static void
open_backend(struct engine_backend *b, size_t shape, uint32_t threads,
    uint32_t max_batch, uint32_t context)
{
	struct model_options o;
	char m[300], t[300], err[512];
	enum ts_err rc;

	shape_paths(shape, m, t, sizeof(m));
	model_options_defaults(&o);
	o.threads = threads;
	o.max_batch = max_batch;
	o.context = context;
	rc = llama_backend_open(b, m, t, &o, err, sizeof(err));
	if (rc != TS_OK)
		fail_msg("llama_backend_open: %s", err);
}

/* The reference's prompt ids, first logits and NGEN greedy tokens. */
static size_t
reference(size_t shape, const char *prompt, float *logits0, uint32_t *gen)
{
	char m[300], t[300];
	struct model_ref *r;
	uint32_t ids[256];
	float *lg;
	size_t n, i;
	uint32_t vocab;

	shape_paths(shape, m, t, sizeof(m));
	r = model_ref_load(m, t);
	assert_non_null(r);
	vocab = model_ref_vocab_size(r);
	lg = malloc(vocab * sizeof(float));
	n = model_ref_encode(r, prompt, strlen(prompt), 1, ids);
	assert_true(n + NGEN <= shapes[shape].seq_len);
	for (i = 0; i < n; i++)
		model_ref_forward(r, ids[i], (uint32_t)i, lg);
	memcpy(logits0, lg, vocab * sizeof(float));
	for (i = 0; i < NGEN; i++) {
		gen[i] = model_ref_argmax(lg, vocab);
		model_ref_forward(r, gen[i], (uint32_t)(n + i), lg);
	}
	free(lg);
	model_ref_free(r);
	return n;
}

/* The lab endpoints' sampling: greedy. */
static const struct engine_sampling greedy = { .temperature = 0.0,
    .top_p = 1.0 };

/* The backend's count of the prompt's tokens (BOS included). */
static enum ts_err
prompt_tokens(const struct engine_backend *b, const char *p, size_t len,
    uint32_t *n)
{
	uint64_t k = 0;
	enum ts_err rc = b->count_tokens(b->impl, 0, p, len, &k);

	*n = (uint32_t)k;
	return rc;
}

/* Starts a sequence of `prompt` and checks TS_OK. */
static void *
start(struct engine_backend *b, const char *prompt, uint32_t skip)
{
	void *seq = NULL;

	assert_int_equal(b->seq_start(b->impl, 0, prompt, strlen(prompt),
	    skip, &greedy, &seq), TS_OK);
	assert_non_null(seq);
	return seq;
}

/* Runs one sequence alone for n tokens. */
static void
run_alone(struct engine_backend *b, const char *prompt, uint32_t skip,
    uint32_t *ids, size_t n, float *logits0)
{
	const struct model_config *c = llama_backend_config(b);
	void *seq = start(b, prompt, skip);
	size_t i;

	if (logits0 != NULL)
		memcpy(logits0, llama_backend_seq_logits(seq),
		    c->vocab_size * sizeof(float));
	for (i = 0; i < n; i++)
		assert_int_equal(b->step(b->impl, &seq, 1, &ids[i]), TS_OK);
	assert_null(llama_backend_seq_logits(seq));
	b->seq_free(b->impl, seq);
}

static void
test_golden(void **unused)
{
	size_t s, p, i;

	for (s = 0; s < NSHAPES; s++) {
		struct engine_backend b;
		uint32_t vocab = shapes[s].vocab;
		float *want = malloc(vocab * sizeof(float));
		float *got = malloc(vocab * sizeof(float));
		uint32_t want_ids[NGEN], got_ids[NGEN], np;
		size_t nref;

		open_backend(&b, s, 1, 64, 0);
		for (p = 0; p < NPROMPTS; p++) {
			float scale = 1.0f;

			nref = reference(s, prompts[p], want, want_ids);
			assert_int_equal(prompt_tokens(&b,
			    prompts[p], strlen(prompts[p]), &np), TS_OK);
			assert_int_equal(np, nref);
			run_alone(&b, prompts[p], 0, got_ids, NGEN, got);
			for (i = 0; i < vocab; i++)
				if (fabsf(want[i]) > scale)
					scale = fabsf(want[i]);
			for (i = 0; i < vocab; i++)
				if (fabsf(got[i] - want[i]) > TOL * scale)
					fail_msg("%s prompt %zu: logit %zu is "
					    "%.7g, reference %.7g",
					    shapes[s].name, p, i, got[i],
					    want[i]);
			for (i = 0; i < NGEN; i++)
				if (got_ids[i] != want_ids[i])
					fail_msg("%s prompt %zu: token %zu is "
					    "%u, reference %u", shapes[s].name,
					    p, i, got_ids[i], want_ids[i]);
		}
		llama_backend_close(&b);
		free(want);
		free(got);
	}
}

/* Threads, prefill chunks and decode batches do not change a bit. */
static void
test_threads_and_chunks_identical(void **unused)
{
	static const struct {
		uint32_t threads, max_batch;
	} cfg[] = { { 1, 64 }, { 3, 64 }, { 2, 1 }, { 3, 5 } };
	size_t s, k, p;

	for (s = 0; s < NSHAPES; s++) {
		uint32_t vocab = shapes[s].vocab;
		float *l0 = malloc(vocab * sizeof(float));
		float *lk = malloc(vocab * sizeof(float));
		uint32_t ids0[NGEN], idsk[NGEN];

		for (p = 0; p < NPROMPTS; p++) {
			for (k = 0; k < sizeof(cfg) / sizeof(cfg[0]); k++) {
				struct engine_backend b;

				open_backend(&b, s, cfg[k].threads,
				    cfg[k].max_batch, 0);
				run_alone(&b, prompts[p], 0, k ? idsk : ids0,
				    NGEN, k ? lk : l0);
				llama_backend_close(&b);
				if (k == 0)
					continue;
				assert_memory_equal(l0, lk, vocab *
				    sizeof(float));
				assert_memory_equal(ids0, idsk, sizeof(ids0));
			}
		}
		free(l0);
		free(lk);
	}
}

/* Sequences in one batch get what each gets alone, whether they start
 * together or join a running batch. */
static void
test_batch_equals_alone(void **unused)
{
	uint32_t alone[3][NGEN], ids[3];
	const char *ps[3] = { prompts[0], prompts[1], prompts[2] };
	struct engine_backend b;
	void *seqs[3];
	size_t s, i, k;

	for (s = 0; s < NSHAPES; s++) {
		open_backend(&b, s, 2, 2, 0);   /* batches of 3 in 2 passes */
		for (k = 0; k < 3; k++)
			run_alone(&b, ps[k], 0, alone[k], NGEN, NULL);

		/* all three together */
		for (k = 0; k < 3; k++)
			seqs[k] = start(&b, ps[k], 0);
		for (i = 0; i < NGEN; i++) {
			assert_int_equal(b.step(b.impl, seqs, 3, ids), TS_OK);
			for (k = 0; k < 3; k++)
				assert_int_equal(ids[k], alone[k][i]);
		}
		for (k = 0; k < 3; k++)
			b.seq_free(b.impl, seqs[k]);

		/* staggered: 1 runs 5 steps, then 2 joins, then 3 (a fresh
		 * sequence beside decoding ones) */
		seqs[0] = start(&b, ps[0], 0);
		for (i = 0; i < 5; i++) {
			assert_int_equal(b.step(b.impl, seqs, 1, ids), TS_OK);
			assert_int_equal(ids[0], alone[0][i]);
		}
		seqs[1] = start(&b, ps[1], 0);
		assert_int_equal(b.step(b.impl, seqs, 2, ids), TS_OK);
		assert_int_equal(ids[0], alone[0][5]);
		assert_int_equal(ids[1], alone[1][0]);
		seqs[2] = start(&b, ps[2], 0);
		for (i = 0; i < 8; i++) {
			/* reversed: the order in the batch does not matter */
			void *rev[3] = { seqs[2], seqs[1], seqs[0] };

			assert_int_equal(b.step(b.impl, rev, 3, ids), TS_OK);
			assert_int_equal(ids[2], alone[0][6 + i]);
			assert_int_equal(ids[1], alone[1][1 + i]);
			assert_int_equal(ids[0], alone[2][i]);
		}
		for (k = 0; k < 3; k++)
			b.seq_free(b.impl, seqs[k]);
		llama_backend_close(&b);
	}
}

/* seq_start(skip = k) continues with token k of the stream. */
static void
test_skip_resumes(void **unused)
{
	uint32_t full[NGEN], ids[NGEN];
	struct engine_backend b;
	uint32_t skip;
	size_t s;

	for (s = 0; s < NSHAPES; s++) {
		open_backend(&b, s, 2, 64, 0);
		run_alone(&b, prompts[0], 0, full, NGEN, NULL);
		for (skip = 1; skip < NGEN; skip += 4) {
			run_alone(&b, prompts[0], skip, ids, NGEN - skip,
			    NULL);
			assert_memory_equal(ids, full + skip,
			    (NGEN - skip) * sizeof(uint32_t));
		}
		llama_backend_close(&b);
	}
}

/* A sequence whose cache is full yields EOS from then on; a prompt over
 * the context is refused. */
static void
test_context_end(void **unused)
{
	const char *p = prompts[0];
	struct engine_backend b;
	uint32_t full[NGEN], ids[NGEN], np, ctx, k;
	void *seq;
	char *big;
	size_t i, len;

	open_backend(&b, 0, 1, 64, 0);
	run_alone(&b, p, 0, full, NGEN, NULL);
	assert_int_equal(prompt_tokens(&b, p, strlen(p), &np),
	    TS_OK);
	llama_backend_close(&b);

	/* room for the prompt and 3 fed tokens: tokens 0..3, then EOS */
	ctx = np + 3;
	open_backend(&b, 0, 1, 64, ctx);
	assert_int_equal(b.context_len(b.impl), ctx);
	run_alone(&b, p, 0, ids, 10, NULL);
	for (i = 0; i < 10; i++)
		assert_int_equal(ids[i], i < 4 ? full[i] : MODEL_TOKEN_EOS);
	/* resumed past the end: EOS at once */
	run_alone(&b, p, 6, ids, 3, NULL);
	for (i = 0; i < 3; i++)
		assert_int_equal(ids[i], MODEL_TOKEN_EOS);
	/* resumed just before it */
	run_alone(&b, p, 3, ids, 2, NULL);
	assert_int_equal(ids[0], full[3]);
	assert_int_equal(ids[1], MODEL_TOKEN_EOS);
	llama_backend_close(&b);

	/* a prompt that fills the context exactly: one token, then EOS */
	open_backend(&b, 0, 1, 64, np);
	run_alone(&b, p, 0, ids, 2, NULL);
	assert_int_equal(ids[0], full[0]);
	assert_int_equal(ids[1], MODEL_TOKEN_EOS);
	llama_backend_close(&b);

	/* one position short: refused, the count kept for the refusal's
	 * message (backend.h count_tokens) */
	open_backend(&b, 0, 1, 64, np - 1);
	seq = (void *)1;
	assert_int_equal(b.seq_start(b.impl, 0, p, strlen(p), 0, &greedy,
	    &seq), TS_ELIMIT);
	assert_null(seq);
	assert_int_equal(prompt_tokens(&b, p, strlen(p), &k),
	    TS_ELIMIT);
	assert_int_equal(k, np);
	/* too long at the longest token: refused unencoded, count 0 */
	len = (size_t)b.max_token_bytes * (np - 1);
	big = xmalloc(len);
	memset(big, 'a', len);
	k = 7;
	assert_int_equal(prompt_tokens(&b, big, len, &k), TS_ELIMIT);
	assert_int_equal(k, 0);
	free(big);
	llama_backend_close(&b);
}

static void
test_bad_calls(void **unused)
{
	struct engine_backend b;
	struct model_options o;
	char m[300], t[300], err[512];
	uint32_t ids[2];
	void *seqs[2];
	size_t len;

	open_backend(&b, 0, 1, 64, 0);
	seqs[0] = start(&b, "hello", 0);
	seqs[1] = seqs[0];
	assert_int_equal(b.step(b.impl, seqs, 2, ids), TS_EINVAL);
	seqs[1] = NULL;
	assert_int_equal(b.step(b.impl, seqs, 2, ids), TS_EINVAL);
	/* still usable after refused steps */
	assert_int_equal(b.step(b.impl, seqs, 1, ids), TS_OK);
	assert_int_equal(b.step(b.impl, seqs, 0, ids), TS_OK);
	b.seq_free(b.impl, seqs[0]);
	b.seq_free(b.impl, NULL);
	/* out-of-range ids have empty text; specials too */
	assert_string_equal(b.token_text(b.impl, 1u << 30, &len), "");
	assert_int_equal(len, 0);
	assert_string_equal(b.token_text(b.impl, MODEL_TOKEN_EOS, &len), "");
	assert_int_equal(len, 0);
	llama_backend_close(&b);
	llama_backend_close(&b);        /* a closed backend is zeroed */

	shape_paths(0, m, t, sizeof(m));
	model_options_defaults(&o);
	o.context = 100000;
	assert_int_equal(llama_backend_open(&b, m, t, &o, err, sizeof(err)),
	    TS_EINVAL);
	assert_non_null(strstr(err, "seq_len 256"));
	model_options_defaults(&o);
	o.max_batch = 0;
	assert_int_equal(llama_backend_open(&b, m, t, &o, err, sizeof(err)),
	    TS_EINVAL);
	assert_null(b.impl);
	/* a tokenizer of another vocabulary size */
	shape_paths(1, m, t, sizeof(m));
	{
		char m0[300], t0[300];

		shape_paths(0, m0, t0, sizeof(m0));
		model_options_defaults(&o);
		assert_int_equal(llama_backend_open(&b, m0, t, &o, err,
		    sizeof(err)), TS_EFORMAT);
		assert_non_null(strstr(err, t));
		assert_non_null(strstr(err, "tokenizer has 400 tokens but "
		    "the checkpoint's vocab_size is 512"));
	}
}

/* ---- checkpoint validation --------------------------------------------- */

/* Writes a 7-int header and `floats` zero floats to dir/bad. */
static const char *
write_bad(const int32_t *hdr, size_t hdr_ints, size_t floats)
{
	static char path[300];
	FILE *f;
	float z = 0.0f;
	size_t i;

	snprintf(path, sizeof(path), "%s/bad", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	if (hdr_ints > 0)
		assert_int_equal(fwrite(hdr, sizeof(int32_t), hdr_ints, f),
		    hdr_ints);
	for (i = 0; i < floats; i++)
		assert_int_equal(fwrite(&z, sizeof(z), 1, f), 1);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void
expect_model_error(const char *path, enum ts_err want, const char *text)
{
	struct model *m = (struct model *)1;
	char err[512];

	assert_int_equal(model_open(&m, path, err, sizeof(err)), want);
	assert_null(m);
	if (strstr(err, text) == NULL || strstr(err, path) == NULL)
		fail_msg("error \"%s\" lacks \"%s\" or the path", err, text);
}

static void
test_checkpoint_validation(void **unused)
{
	/* dim, hidden, layers, heads, kv_heads, vocab, seq_len */
	static const struct {
		int32_t h[7];
		const char *text;
	} bad[] = {
		{ { -1, 8, 1, 2, 2, 300, 8 }, "dim is -1, must be positive" },
		{ { 0, 8, 1, 2, 2, 300, 8 }, "dim is 0, must be positive" },
		{ { 8, 0, 1, 2, 2, 300, 8 }, "hidden_dim is 0" },
		{ { 8, 8, -3, 2, 2, 300, 8 }, "n_layers is -3" },
		{ { 8, 8, 1, 0, 2, 300, 8 }, "n_heads is 0" },
		{ { 8, 8, 1, 2, 0, 300, 8 }, "n_kv_heads is 0" },
		{ { 8, 8, 1, 2, 2, 0, 8 }, "vocab_size is 0" },
		{ { 8, 8, 1, 2, 2, 300, -8 }, "seq_len is -8" },
		{ { 8, 8, 1, 2, 2, INT32_MIN, 8 }, "vocab_size 2147483648 is "
		    "over the limit" },
		{ { 1 << 20, 8, 1, 2, 2, 300, 8 }, "dim 1048576 is over the "
		    "limit 65536" },
		{ { 8, 8, 5000, 2, 2, 300, 8 }, "n_layers 5000 is over the "
		    "limit" },
		{ { 8, 8, 1, 2, 2, 300, 1 << 24 }, "seq_len 16777216 is over "
		    "the limit" },
		{ { 100, 8, 1, 3, 3, 300, 8 }, "dim 100 is not a multiple of "
		    "n_heads 3" },
		{ { 12, 8, 1, 4, 4, 300, 8 }, "head size 3 (dim 12 / n_heads "
		    "4) is odd" },
		{ { 16, 8, 1, 2, 4, 300, 8 }, "n_kv_heads 4 exceeds n_heads "
		    "2" },
		{ { 24, 8, 1, 4, 3, 300, 8 }, "n_heads 4 is not a multiple of "
		    "n_kv_heads 3" },
		{ { 0x616b3432, 2, 8, 1, 2, 2, 300 }, "llama2.c version-2 "
		    "export" },
		{ { 8, 8, 1, 2, 2, 300, 8 }, "file is 28 bytes but the header "
		    "(dim 8, hidden_dim 8, n_layers 1, n_heads 2, n_kv_heads "
		    "2, vocab_size 300 shared, seq_len 8) implies" },
		{ { 8, 8, 1, 2, 2, -300, 8 }, "vocab_size 300 separate" },
	};
	struct model_config c;
	struct model *m;
	char mpath[300], tpath[300], err[512], cmd[700];
	size_t i;

	/* short files */
	expect_model_error(write_bad(NULL, 0, 0), TS_EFORMAT,
	    "file is 0 bytes, shorter than the 28-byte header");
	expect_model_error(write_bad(bad[0].h, 5, 0), TS_EFORMAT,
	    "file is 20 bytes, shorter than the 28-byte header");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_model_error(write_bad(bad[i].h, 7, 0), TS_EFORMAT,
		    bad[i].text);

	/* a good header, one float short and one too many */
	memset(&c, 0, sizeof(c));
	c.dim = 8;
	c.hidden_dim = 8;
	c.n_layers = 1;
	c.n_heads = 2;
	c.n_kv_heads = 2;
	c.vocab_size = 300;
	c.seq_len = 8;
	c.shared_classifier = 1;
	assert_int_equal(model_config_check(&c, err, sizeof(err)), TS_OK);
	snprintf(cmd, sizeof(cmd), "implies %llu bytes: truncated",
	    (unsigned long long)model_file_bytes(&c));
	expect_model_error(write_bad(bad[17].h, 7, (model_file_bytes(&c) -
	    28) / 4 - 1), TS_EFORMAT, cmd);
	snprintf(cmd, sizeof(cmd), "file is %llu bytes but",
	    (unsigned long long)model_file_bytes(&c) + 4);
	expect_model_error(write_bad(bad[17].h, 7, (model_file_bytes(&c) -
	    28) / 4 + 1), TS_EFORMAT, cmd);
	assert_int_equal(model_open(&m, write_bad(bad[17].h, 7,
	    (model_file_bytes(&c) - 28) / 4), err, sizeof(err)), TS_OK);
	assert_int_equal(m->cfg.kv_dim, 8);
	assert_int_equal(m->cfg.head_size, 4);
	model_close(m);
	model_close(NULL);

	/* a real checkpoint cut short */
	shape_paths(0, mpath, tpath, sizeof(mpath));
	snprintf(cmd, sizeof(cmd), "head -c 100000 %s > %s/bad", mpath, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/bad", dir);
	expect_model_error(cmd, TS_EFORMAT, "file is 100000 bytes but the "
	    "header (dim 64, hidden_dim 172, n_layers 2, n_heads 4, "
	    "n_kv_heads 2, vocab_size 512 separate, seq_len 256) implies");

	/* not there, not a file */
	snprintf(cmd, sizeof(cmd), "%s/missing", dir);
	expect_model_error(cmd, TS_ESYS, "cannot open: No such file");
	expect_model_error(dir, TS_EFORMAT, "not a regular file");
}

/* model_bind refuses every cut of a valid image without reading past
 * it (the sanitizer build checks the reads). */
static void
test_bind_every_prefix(void **unused)
{
	struct model_config c;
	struct model m;
	char err[256];
	float *img;
	size_t n, len;

	memset(&c, 0, sizeof(c));
	c.dim = 8;
	c.hidden_dim = 8;
	c.n_layers = 1;
	c.n_heads = 2;
	c.n_kv_heads = 1;
	c.vocab_size = 260;
	c.seq_len = 4;
	assert_int_equal(model_config_check(&c, err, sizeof(err)), TS_OK);
	n = (size_t)model_file_bytes(&c);
	img = calloc(1, n);
	memcpy(img, (int32_t[7]){ 8, 8, 1, 2, 1, -260, 4 }, 28);
	for (len = 0; len < n; len += len < 64 ? 1 : 97)
		assert_int_equal(model_bind(&m, img, len, err, sizeof(err)),
		    TS_EFORMAT);
	assert_int_equal(model_bind(&m, img, n, err, sizeof(err)), TS_OK);
	assert_ptr_equal(m.w.token_embedding.data, img + 7);
	assert_ptr_equal((const float *)m.w.wcls.data + c.vocab_size * c.dim,
	    img + n / 4);
	/* less the freq_cis tables: seq_len x head_size / 2, twice */
	assert_int_equal(model_param_count(&c), (n - 28) / 4 - 4 * 2 * 2);
	assert_int_equal(model_weight_bytes(&m), 4 * model_param_count(&c));
	model_unbind(&m);
	free(img);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_threads_and_chunks_identical),
		cmocka_unit_test(test_batch_equals_alone),
		cmocka_unit_test(test_skip_resumes),
		cmocka_unit_test(test_context_end),
		cmocka_unit_test(test_bad_calls),
		cmocka_unit_test(test_checkpoint_validation),
		cmocka_unit_test(test_bind_every_prefix),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
