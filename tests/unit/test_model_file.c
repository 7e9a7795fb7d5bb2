/*
 * test_model_file.c - model files (model_file.h, model_export.h): one
 * synthetic model written as a llama2.c checkpoint, as GGUF in every
 * weight type and as a Hugging Face folder (one file, shards, bf16), then
 * opened again and run:
 *   - GGUF f32 and the checkpoint: the same token ids for every prompt
 *     and the same logits, bit for bit (the same floats, the same
 *     kernels);
 *   - the HF folder and the GGUF of the same type: the same logits, bit
 *     for bit (q_proj and k_proj undo transformers' permutation exactly);
 *   - f16, bf16, q8_0, q4_0, q6_K, q4_K against f32: logits within the tolerances
 *     below, stated as a fraction of the f32 logits' spread (their
 *     standard deviation), and the greedy token agrees at most steps;
 *   - the EOS list, the sampling defaults and the template read back;
 *   - broken files: a clear error naming the problem, never a crash.
 *
 * Tolerances (max |logit - f32 logit| / std(f32 logits), over 24 decode
 * positions), about 3 times what this model gives (measured: f16 0.0025,
 * bf16 0.021, q8_0 0.083, q4_0 0.62, the printout of
 * test_quantized_close): f16 0.01 (11-bit mantissas on weights and
 * activations), bf16 0.06 (8-bit), q8_0 0.25 (8-bit blocks, activations
 * quantized to q8_0 as ggml does), q4_0 1.8 (4-bit blocks: uniform random
 * weights are the worst case for a 16-level grid); on a model 256 wide
 * the K types: q6_K 0.5 (measured 0.18), q4_K 1.8 (0.58).
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

#include "backend/backend.h"
#include "model/dtype.h"
#include "model/gguf.h"
#include "model/model.h"
#include "model/model_export.h"
#include "model/model_file.h"
#include "model/model_synth.h"
#include "model/quant.h"
#include "model/tokenizer.h"

#define NPOS 24

static char dir[256];
static char ckpt[300], tokbin[300];
/* a model whose widths are multiples of 256, for the K types */
static char kckpt[300], ktokbin[300];

static const char *const prompts[] = {
	"Once upon a time, there was a little girl named Lily.",
	"",
	"caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80!",
	"  two  spaces\nand a newline",
	"the the the",
};
#define NPROMPTS (sizeof(prompts) / sizeof(prompts[0]))

static int
setup(void **unused)
{
	struct model_synth s;
	char err[256];

	(void)unused;
	snprintf(dir, sizeof(dir), "/tmp/ts-model-file.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	model_synth_defaults(&s);
	s.cfg.dim = 64;
	s.cfg.hidden_dim = 192;      /* a multiple of 32: q8_0, q4_0 */
	s.cfg.n_layers = 2;
	s.cfg.n_heads = 4;
	s.cfg.n_kv_heads = 2;
	s.cfg.vocab_size = 512;
	s.cfg.seq_len = 128;
	s.seed = 5;
	snprintf(ckpt, sizeof(ckpt), "%s/m.bin", dir);
	snprintf(tokbin, sizeof(tokbin), "%s/t.bin", dir);
	if (model_synth_write_checkpoint(&s, ckpt, err, sizeof(err)) !=
	    TS_OK || model_synth_write_tokenizer(&s, tokbin, err,
	    sizeof(err)) != TS_OK) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	s.cfg.dim = 256;
	s.cfg.hidden_dim = 512;
	s.cfg.n_layers = 1;
	s.seed = 6;
	snprintf(kckpt, sizeof(kckpt), "%s/k.bin", dir);
	snprintf(ktokbin, sizeof(ktokbin), "%s/k.tok", dir);
	if (model_synth_write_checkpoint(&s, kckpt, err, sizeof(err)) !=
	    TS_OK || model_synth_write_tokenizer(&s, ktokbin, err,
	    sizeof(err)) != TS_OK) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static int
teardown(void **unused)
{
	char cmd[300];

	(void)unused;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes checkpoint c (tokenizer t) as `format` (gguf, hf) of `type` at
 * path. */
static void
export_of(const char *c, const char *t, const char *format, uint32_t type,
    uint64_t shard, const char *path)
{
	struct model *m;
	struct model_export x;
	char err[512];

	assert_int_equal(model_open(&m, c, err, sizeof(err)), TS_OK);
	memset(&x, 0, sizeof(x));
	x.type = type;
	x.name = "synth";
	x.chat_template = MODEL_EXPORT_TEMPLATE_TINYLLAMA;
	x.max_shard_bytes = shard;
	if (strcmp(format, "gguf") == 0) {
		if (model_export_gguf(m, t, &x, path, err, sizeof(err)) !=
		    TS_OK)
			fail_msg("%s", err);
	} else if (model_export_hf(m, t, &x, path, err, sizeof(err)) !=
	    TS_OK) {
		fail_msg("%s", err);
	}
	model_close(m);
}

static void
export(const char *format, uint32_t type, uint64_t shard, const char *path)
{
	export_of(ckpt, tokbin, format, type, shard, path);
}

static struct model_file *
open_file(const char *path, const char *tok)
{
	struct model_file *f;
	char err[512];

	if (model_file_open(&f, path, tok, err, sizeof(err)) != TS_OK)
		fail_msg("%s", err);
	return f;
}

/* The logits [NPOS][vocab] of f's model after each token of a fixed
 * sequence (BOS, then ids 300.., one position at a time). */
static float *
run_logits(const struct model_file *f)
{
	const struct model_config *c = &f->m->cfg;
	struct model_run *r;
	struct model_row row;
	float *kv = calloc(model_kv_floats(c, 64), sizeof(float));
	float *lg = malloc((size_t)NPOS * c->vocab_size * sizeof(float));
	uint32_t p;

	assert_int_equal(model_run_create(&r, f->m, 4, 64, 1), TS_OK);
	for (p = 0; p < NPOS; p++) {
		row.kv = kv;
		row.token = p == 0 ? 1 : 300 + (p * 37) % 200;
		row.pos = p;
		row.logits = lg + (size_t)p * c->vocab_size;
		model_forward(r, &row, 1);
	}
	model_run_free(r);
	free(kv);
	return lg;
}

/* GGUF f32 and the llama2.c checkpoint: same ids, same logits. */
static void
test_gguf_equals_checkpoint(void **unused)
{
	char path[300];
	struct model_file *a, *b;
	float *la, *lb;
	size_t i;

	(void)unused;
	snprintf(path, sizeof(path), "%s/f32.gguf", dir);
	export("gguf", MODEL_DTYPE_F32, 0, path);
	a = open_file(ckpt, tokbin);
	b = open_file(path, NULL);
	assert_string_equal(b->format, "gguf");
	assert_string_equal(b->name, "synth");
	assert_int_equal(b->m->cfg.vocab_size, a->m->cfg.vocab_size);
	for (i = 0; i < NPROMPTS; i++) {
		uint32_t *ia, *ib;
		size_t na, nb;

		assert_int_equal(tokenizer_encode(a->tok, prompts[i],
		    strlen(prompts[i]), 1, 0, &ia, &na), TS_OK);
		assert_int_equal(tokenizer_encode(b->tok, prompts[i],
		    strlen(prompts[i]), 1, 0, &ib, &nb), TS_OK);
		assert_int_equal(na, nb);
		assert_memory_equal(ia, ib, na * sizeof(*ia));
		free(ia);
		free(ib);
	}
	la = run_logits(a);
	lb = run_logits(b);
	assert_memory_equal(la, lb, (size_t)NPOS * a->m->cfg.vocab_size *
	    sizeof(float));
	/* what the files say */
	assert_int_equal(a->n_eos, 2);          /* </s> and <s> */
	assert_int_equal(b->n_eos, 1);
	assert_int_equal(b->eos[0], 2);
	assert_non_null(b->chat_template);
	assert_string_equal(b->chat_template,
	    MODEL_EXPORT_TEMPLATE_TINYLLAMA);
	assert_string_equal(b->bos_text, "<s>");
	assert_string_equal(b->eos_text, "</s>");
	assert_int_equal(b->context_length, 128);
	free(la);
	free(lb);
	model_file_close(a);
	model_file_close(b);
}

/* The HF folder (one file, shards) and GGUF of the same type: same
 * logits, bit for bit. */
static void
test_hf_equals_gguf(void **unused)
{
	static const uint32_t types[] = { MODEL_DTYPE_F32, MODEL_DTYPE_BF16,
		MODEL_DTYPE_F16 };
	size_t t;

	(void)unused;
	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		char g[300], h[300], hs[300];
		struct model_file *a, *b, *c;
		float *la, *lb, *lc;
		size_t n;

		snprintf(g, sizeof(g), "%s/%s.gguf", dir,
		    model_dtype_name(types[t]));
		snprintf(h, sizeof(h), "%s/hf-%s", dir,
		    model_dtype_name(types[t]));
		snprintf(hs, sizeof(hs), "%s/hf-shards-%s", dir,
		    model_dtype_name(types[t]));
		export("gguf", types[t], 0, g);
		export("hf", types[t], 0, h);
		export("hf", types[t], 40000, hs);
		a = open_file(g, NULL);
		b = open_file(h, NULL);
		c = open_file(hs, NULL);
		assert_string_equal(b->format, "hf");
		assert_int_equal(b->n_eos, 1);
		assert_int_equal(b->eos[0], 2);
		assert_string_equal(b->chat_template,
		    MODEL_EXPORT_TEMPLATE_TINYLLAMA);
		la = run_logits(a);
		lb = run_logits(b);
		lc = run_logits(c);
		n = (size_t)NPOS * a->m->cfg.vocab_size * sizeof(float);
		assert_memory_equal(la, lb, n);
		assert_memory_equal(la, lc, n);
		/* and the tokenizers agree */
		for (n = 0; n < NPROMPTS; n++) {
			uint32_t *ia, *ib;
			size_t na, nb;

			assert_int_equal(tokenizer_encode(a->tok, prompts[n],
			    strlen(prompts[n]), 1, 0, &ia, &na), TS_OK);
			assert_int_equal(tokenizer_encode(b->tok, prompts[n],
			    strlen(prompts[n]), 1, 0, &ib, &nb), TS_OK);
			if (na != nb || memcmp(ia, ib, na * sizeof(*ia)) != 0)
				fail_msg("prompt %zu: HF tokenizer.json and "
				    "GGUF differ", n);
			free(ia);
			free(ib);
		}
		free(la);
		free(lb);
		free(lc);
		model_file_close(a);
		model_file_close(b);
		model_file_close(c);
	}
}

struct quant_case {
	uint32_t type;
	double tol;
};

/* Each case's GGUF of checkpoint c against its f32 GGUF, within tol. */
static void
quantized_close(const char *c, const char *t, const char *tag,
    const struct quant_case *q, size_t nq)
{
	char g[300];
	struct model_file *a;
	float *la;
	uint32_t v;
	size_t k, i;
	double mean = 0, var = 0, sd;

	snprintf(g, sizeof(g), "%s/%s-ref.gguf", dir, tag);
	export_of(c, t, "gguf", MODEL_DTYPE_F32, 0, g);
	a = open_file(g, NULL);
	v = a->m->cfg.vocab_size;
	la = run_logits(a);
	for (i = 0; i < (size_t)NPOS * v; i++)
		mean += la[i];
	mean /= (double)NPOS * v;
	for (i = 0; i < (size_t)NPOS * v; i++)
		var += (la[i] - mean) * (la[i] - mean);
	sd = sqrt(var / ((double)NPOS * v));
	for (k = 0; k < nq; k++) {
		struct model_file *b;
		float *lb;
		double worst = 0;
		uint32_t p, agree = 0;

		if (!quant_supported(q[k].type))
			fail_msg("%s is not supported", model_dtype_name(
			    q[k].type));
		snprintf(g, sizeof(g), "%s/%s-%s.gguf", dir, tag,
		    model_dtype_name(q[k].type));
		export_of(c, t, "gguf", q[k].type, 0, g);
		b = open_file(g, NULL);
		lb = run_logits(b);
		for (p = 0; p < NPOS; p++) {
			uint32_t ba = 0, bb = 0, j;

			for (j = 0; j < v; j++) {
				double d = fabs((double)lb[p * v + j] -
				    la[p * v + j]);

				if (d > worst)
					worst = d;
				if (la[p * v + j] > la[p * v + ba])
					ba = j;
				if (lb[p * v + j] > lb[p * v + bb])
					bb = j;
			}
			agree += ba == bb;
		}
		printf("# %s %s: max |dlogit| / sd %.4f (bound %.2f), argmax "
		    "agrees at %u of %d positions, kernels %s\n", tag,
		    model_dtype_name(q[k].type), worst / sd, q[k].tol, agree,
		    NPOS, quant_kernel_name());
		assert_true(worst / sd <= q[k].tol);
		assert_true(worst > 0.0);   /* it is quantized */
		assert_true(agree >= NPOS / 2);
		free(lb);
		model_file_close(b);
	}
	free(la);
	model_file_close(a);
}

/* Quantized and half-precision GGUF against f32, within the header's
 * tolerances. */
static void
test_quantized_close(void **unused)
{
	static const struct quant_case q[] = {
		{ MODEL_DTYPE_F16, 0.01 },
		{ MODEL_DTYPE_BF16, 0.06 },
		{ MODEL_DTYPE_Q8_0, 0.25 },
		{ MODEL_DTYPE_Q4_0, 1.8 },
	};

	(void)unused;
	quantized_close(ckpt, tokbin, "dim64", q, sizeof(q) / sizeof(q[0]));
}

/* The K types (256-weight super-blocks) on a model 256 wide. */
static void
test_k_quants_close(void **unused)
{
	static const struct quant_case q[] = {
		{ MODEL_DTYPE_Q8_0, 0.25 },
		{ MODEL_DTYPE_Q6_K, 0.5 },
		{ MODEL_DTYPE_Q4_K, 1.8 },
	};

	(void)unused;
	quantized_close(kckpt, ktokbin, "dim256", q, sizeof(q) / sizeof(q[0]));
}

/* Sampling defaults and the EOS list from a GGUF's metadata. */
static void
test_defaults_read(void **unused)
{
	struct model *m;
	struct model_export x;
	struct model_file *f;
	char g[300], err[512];

	(void)unused;
	snprintf(g, sizeof(g), "%s/defaults.gguf", dir);
	assert_int_equal(model_open(&m, ckpt, err, sizeof(err)), TS_OK);
	memset(&x, 0, sizeof(x));
	x.type = MODEL_DTYPE_F32;
	x.gen_has = ENGINE_GIVEN_TEMPERATURE | ENGINE_GIVEN_TOP_K;
	x.temperature = 0.25;
	x.top_k = 7;
	assert_int_equal(model_export_gguf(m, tokbin, &x, g, err,
	    sizeof(err)), TS_OK);
	model_close(m);
	f = open_file(g, NULL);
	assert_int_equal(f->gen_has, ENGINE_GIVEN_TEMPERATURE |
	    ENGINE_GIVEN_TOP_K);
	assert_true(fabs(f->temperature - 0.25) < 1e-6);
	assert_int_equal(f->top_k, 7);
	assert_null(f->chat_template);
	/* no general.name: the file's name */
	assert_string_equal(f->name, "defaults.gguf");
	model_file_close(f);
}

/* The precedence of sampling fields: the request's, the model's, the
 * dialect's (engine_sampling_effective). */
static void
test_sampling_precedence(void **unused)
{
	struct engine_backend be;
	struct engine_sampling in, out;

	(void)unused;
	memset(&be, 0, sizeof(be));
	be.gen_has = ENGINE_GIVEN_TEMPERATURE | ENGINE_GIVEN_TOP_K;
	be.gen_temperature = 0.25;
	be.gen_top_p = 0.5;         /* not in gen_has: never used */
	be.gen_top_k = 7;
	engine_sampling_defaults(&in);
	in.temperature = 1.5;
	in.given = ENGINE_GIVEN_TEMPERATURE;
	engine_sampling_effective(&be, &in, &out);
	assert_true(out.temperature == 1.5);   /* the request's */
	assert_int_equal(out.top_k, 7);        /* the model's */
	assert_true(out.top_p == 1.0);         /* the dialect's */
	in.given = 0;
	engine_sampling_effective(&be, &in, &out);
	assert_true(out.temperature == 0.25);
	engine_sampling_greedy(&in);           /* the lab: all given */
	engine_sampling_effective(&be, &in, &out);
	assert_true(out.temperature == 0.0);
	assert_int_equal(out.top_k, 0);
}

/* Writes a GGUF of the synthetic model with `arch` and without tensor
 * `drop` (NULL: none). */
static void
write_variant(const char *path, const char *arch, const char *drop)
{
	struct gguf *g;
	struct gguf_writer *w = gguf_writer_new(0);
	char src[300], err[512];
	uint64_t i, n;

	snprintf(src, sizeof(src), "%s/f32.gguf", dir);
	export("gguf", MODEL_DTYPE_F32, 0, src);
	assert_int_equal(gguf_open(&g, src, err, sizeof(err)), TS_OK);
	gguf_writer_set_str(w, "general.architecture", arch);
	gguf_writer_set_u32(w, "llama.context_length", 128);
	gguf_writer_set_u32(w, "llama.embedding_length", 64);
	gguf_writer_set_u32(w, "llama.block_count", 2);
	gguf_writer_set_u32(w, "llama.feed_forward_length", 192);
	gguf_writer_set_u32(w, "llama.attention.head_count", 4);
	gguf_writer_set_u32(w, "llama.attention.head_count_kv", 2);
	n = gguf_tensor_count(g);
	for (i = 0; i < n; i++) {
		const struct gguf_tensor *t = gguf_tensor_at(g, i);
		char name[80];

		snprintf(name, sizeof(name), "%.*s", (int)t->name_len,
		    t->name);
		if (drop != NULL && strcmp(name, drop) == 0)
			continue;
		gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->dims,
		    t->data);
	}
	assert_int_equal(gguf_writer_write(w, path, err, sizeof(err)), TS_OK);
	gguf_writer_free(w);
	gguf_close(g);
}

static void
expect_error(const char *path, const char *tok, const char *want)
{
	struct model_file *f = (struct model_file *)1;
	char err[512];

	err[0] = '\0';
	assert_int_not_equal(model_file_open(&f, path, tok, err, sizeof(err)),
	    TS_OK);
	assert_null(f);
	if (strstr(err, want) == NULL)
		fail_msg("error \"%s\" does not say \"%s\"", err, want);
}

static void
test_errors(void **unused)
{
	char p[300], cmd[700];
	FILE *f;

	(void)unused;
	snprintf(p, sizeof(p), "%s/qwen.gguf", dir);
	write_variant(p, "qwen2", NULL);
	expect_error(p, NULL, "architecture 'qwen2' is not supported");
	expect_error(p, NULL, "biases");
	snprintf(p, sizeof(p), "%s/notok.gguf", dir);
	write_variant(p, "llama", NULL);
	expect_error(p, NULL, "tokenizer");
	snprintf(p, sizeof(p), "%s/missing.gguf", dir);
	write_variant(p, "llama", "blk.1.ffn_up.weight");
	expect_error(p, NULL, "tensor 'blk.1.ffn_up.weight' is missing");
	/* a llama2.c checkpoint needs its tokenizer; a GGUF refuses one */
	expect_error(ckpt, NULL, "needs --tokenizer");
	snprintf(p, sizeof(p), "%s/f32.gguf", dir);
	expect_error(p, tokbin, "drop --tokenizer");
	/* truncated GGUF: cut in the tensor data */
	snprintf(cmd, sizeof(cmd), "head -c 20000 '%s' > '%s/cut.gguf'", p,
	    dir);
	assert_int_equal(system(cmd), 0);
	snprintf(p, sizeof(p), "%s/cut.gguf", dir);
	expect_error(p, NULL, "cut.gguf");
	/* a folder without config.json */
	snprintf(p, sizeof(p), "%s/empty-dir", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	expect_error(p, NULL, "config.json");
	/* not a file at all */
	snprintf(p, sizeof(p), "%s/nope.gguf", dir);
	expect_error(p, NULL, "cannot open");
	/* an HF folder of another architecture */
	snprintf(p, sizeof(p), "%s/qwen-hf", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(cmd, sizeof(cmd), "%s/config.json", p);
	f = fopen(cmd, "w");
	assert_non_null(f);
	fputs("{\"architectures\": [\"Qwen2ForCausalLM\"], "
	    "\"model_type\": \"qwen2\"}", f);
	fclose(f);
	expect_error(p, NULL, "Qwen2ForCausalLM");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gguf_equals_checkpoint),
		cmocka_unit_test(test_hf_equals_gguf),
		cmocka_unit_test(test_quantized_close),
		cmocka_unit_test(test_k_quants_close),
		cmocka_unit_test(test_defaults_read),
		cmocka_unit_test(test_sampling_precedence),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
