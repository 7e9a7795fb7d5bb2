/*
 * test_hf.c - Hugging Face llama folders (src/model/hf.c): config.json
 * (a Llama 3.1 config with llama3 rope_scaling and an eos list, the
 * defaults of a minimal one, the refused architectures and fields),
 * generation_config.json and tokenizer_config.json, a whole folder
 * written and read back (one file and shards), the check of the
 * expected weights, and the RoPE row permutation (where the rows land,
 * as convert_hf_to_gguf.py puts them, and that RoPE on the unpermuted
 * weights equals transformers' rotate_half RoPE on the HF ones).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/hf.h"

static char dir[256];
static char err[512];

static int
setup(void **unused)
{
	(void)unused;
	snprintf(dir, sizeof(dir), "%s/tokstream-hf-XXXXXX",
	    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static void
clean_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
}

static int
teardown(void **unused)
{
	(void)unused;
	clean_dir();
	rmdir(dir);
	return 0;
}

static int
per_test_clean(void **unused)
{
	(void)unused;
	clean_dir();
	return 0;
}

static void
write_text(const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static enum ts_err
parse_config(struct hf_config *c, const char *text)
{
	err[0] = '\0';
	return hf_config_parse(c, text, strlen(text), err, sizeof(err));
}

static void
expect_config_error(const char *text, enum ts_err rc, const char *want)
{
	struct hf_config c;

	assert_int_equal(parse_config(&c, text), rc);
	if (strstr(err, want) == NULL)
		fail_msg("error '%s' does not contain '%s'", err, want);
}

/* Meta-Llama-3.1-8B-Instruct's config.json (as published) */
static const char llama31[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false,"
    " \"attention_dropout\": 0.0, \"bos_token_id\": 128000,"
    " \"eos_token_id\": [128001, 128008, 128009], \"hidden_act\": \"silu\","
    " \"hidden_size\": 4096, \"initializer_range\": 0.02,"
    " \"intermediate_size\": 14336, \"max_position_embeddings\": 131072,"
    " \"mlp_bias\": false, \"model_type\": \"llama\","
    " \"num_attention_heads\": 32, \"num_hidden_layers\": 32,"
    " \"num_key_value_heads\": 8, \"pretraining_tp\": 1,"
    " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 8.0,"
    " \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
    " \"original_max_position_embeddings\": 8192,"
    " \"rope_type\": \"llama3\"}, \"rope_theta\": 500000.0,"
    " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
    " \"transformers_version\": \"4.42.3\", \"use_cache\": true,"
    " \"vocab_size\": 128256}";

static void
test_config_llama31(void **unused)
{
	struct hf_config c;

	(void)unused;
	assert_int_equal(parse_config(&c, llama31), TS_OK);
	assert_string_equal(c.architecture, "LlamaForCausalLM");
	assert_int_equal(c.hidden_size, 4096);
	assert_int_equal(c.intermediate_size, 14336);
	assert_int_equal(c.num_hidden_layers, 32);
	assert_int_equal(c.num_attention_heads, 32);
	assert_int_equal(c.num_key_value_heads, 8);
	assert_int_equal(c.head_dim, 128);
	assert_int_equal(c.vocab_size, 128256);
	assert_int_equal(c.max_position_embeddings, 131072);
	assert_true(c.rms_norm_eps == 1e-5);
	assert_true(c.rope_theta == 500000.0);
	assert_int_equal(c.rope_scaling, HF_ROPE_LLAMA3);
	assert_true(c.rope_factor == 8.0);
	assert_true(c.rope_low_freq_factor == 1.0);
	assert_true(c.rope_high_freq_factor == 4.0);
	assert_int_equal(c.rope_original_max_position_embeddings, 8192);
	assert_int_equal(c.tie_word_embeddings, 0);
	assert_string_equal(c.torch_dtype, "bfloat16");
	assert_int_equal(c.has_bos_token_id, 1);
	assert_int_equal(c.bos_token_id, 128000);
	assert_int_equal(c.n_eos, 3);
	assert_int_equal(c.eos_token_ids[0], 128001);
	assert_int_equal(c.eos_token_ids[1], 128008);
	assert_int_equal(c.eos_token_ids[2], 128009);
}

static void
test_config_defaults(void **unused)
{
	struct hf_config c;

	(void)unused;
	assert_int_equal(parse_config(&c, "{\"architectures\": "
	    "[\"LlamaForCausalLM\"], \"hidden_size\": 64, "
	    "\"intermediate_size\": 172, \"num_hidden_layers\": 2, "
	    "\"num_attention_heads\": 4, \"vocab_size\": 512, "
	    "\"num_key_value_heads\": null, \"eos_token_id\": 2, "
	    "\"rope_scaling\": null}"), TS_OK);
	assert_int_equal(c.num_key_value_heads, 4);
	assert_int_equal(c.head_dim, 16);
	assert_int_equal(c.max_position_embeddings, 2048);
	assert_true(c.rms_norm_eps == 1e-6);
	assert_true(c.rope_theta == 10000.0);
	assert_int_equal(c.rope_scaling, HF_ROPE_NONE);
	assert_int_equal(c.tie_word_embeddings, 0);
	assert_string_equal(c.torch_dtype, "");
	assert_int_equal(c.has_bos_token_id, 0);
	assert_int_equal(c.n_eos, 1);
	assert_int_equal(c.eos_token_ids[0], 2);

	/* model_type alone; linear scaling; tied; head_dim consistent */
	assert_int_equal(parse_config(&c, "{\"model_type\": \"llama\", "
	    "\"hidden_size\": 64, \"intermediate_size\": 172, "
	    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
	    "\"num_key_value_heads\": 2, \"vocab_size\": 512, "
	    "\"head_dim\": 16, \"tie_word_embeddings\": true, "
	    "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}}"),
	    TS_OK);
	assert_string_equal(c.architecture, "LlamaForCausalLM");
	assert_int_equal(c.num_key_value_heads, 2);
	assert_int_equal(c.tie_word_embeddings, 1);
	assert_int_equal(c.rope_scaling, HF_ROPE_LINEAR);
	assert_true(c.rope_factor == 2.0);
	assert_int_equal(c.n_eos, 0);

	/* rope_type "default" is no scaling */
	assert_int_equal(parse_config(&c, "{\"model_type\": \"llama\", "
	    "\"hidden_size\": 64, \"intermediate_size\": 172, "
	    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
	    "\"vocab_size\": 512, \"rope_scaling\": {\"rope_type\": "
	    "\"default\"}}"), TS_OK);
	assert_int_equal(c.rope_scaling, HF_ROPE_NONE);

	/* Mistral with an explicit null sliding window */
	assert_int_equal(parse_config(&c, "{\"architectures\": "
	    "[\"MistralForCausalLM\"], \"hidden_size\": 64, "
	    "\"intermediate_size\": 172, \"num_hidden_layers\": 2, "
	    "\"num_attention_heads\": 4, \"vocab_size\": 512, "
	    "\"sliding_window\": null}"), TS_OK);
	assert_string_equal(c.architecture, "MistralForCausalLM");
	assert_int_equal(c.max_position_embeddings, 131072);
}

#define SHAPE "\"hidden_size\": 64, \"intermediate_size\": 172, " \
	"\"num_hidden_layers\": 2, \"num_attention_heads\": 4, " \
	"\"vocab_size\": 512"
#define LLAMA "{\"architectures\": [\"LlamaForCausalLM\"], "

static void
test_config_refused(void **unused)
{
	(void)unused;
	expect_config_error("{\"architectures\": [\"Qwen2ForCausalLM\"], "
	    SHAPE "}", TS_EFORMAT, "architecture 'Qwen2ForCausalLM' is not "
	    "supported (llama only: LlamaForCausalLM, or MistralForCausalLM "
	    "without a sliding window): its q/k/v projections have biases");
	expect_config_error("{\"architectures\": [\"GemmaForCausalLM\"], "
	    SHAPE "}", TS_EFORMAT, "(1 + weight)");
	expect_config_error("{\"architectures\": [\"MixtralForCausalLM\"], "
	    SHAPE "}", TS_EFORMAT, "mixture of experts");
	expect_config_error("{\"architectures\": [\"FooForCausalLM\"], "
	    SHAPE "}", TS_EFORMAT, "'FooForCausalLM' is not supported");
	expect_config_error("{\"architectures\": [], " SHAPE "}",
	    TS_EFORMAT, "'(none)'");
	expect_config_error("{\"model_type\": \"qwen2\", " SHAPE "}",
	    TS_EFORMAT, "model_type 'qwen2' is not supported");
	expect_config_error("{" SHAPE "}", TS_EFORMAT, "model_type absent");
	expect_config_error("{\"architectures\": [\"MistralForCausalLM\"], "
	    SHAPE ", \"sliding_window\": 4096}", TS_EFORMAT,
	    "sliding_window set");
	expect_config_error("{\"architectures\": [\"MistralForCausalLM\"], "
	    SHAPE "}", TS_EFORMAT, "sliding_window absent (4096)");
	expect_config_error(LLAMA SHAPE ", \"head_dim\": 32}", TS_EFORMAT,
	    "head_dim is not hidden_size / num_attention_heads = 16");
	expect_config_error(LLAMA SHAPE ", \"hidden_act\": \"gelu\"}",
	    TS_EFORMAT, "hidden_act 'gelu' is not supported");
	expect_config_error(LLAMA SHAPE ", \"attention_bias\": true}",
	    TS_EFORMAT, "attention_bias is true");
	expect_config_error(LLAMA SHAPE ", \"mlp_bias\": true}",
	    TS_EFORMAT, "mlp_bias is true");
	expect_config_error(LLAMA SHAPE ", \"rope_scaling\": {\"rope_type\": "
	    "\"yarn\", \"factor\": 4}}", TS_EFORMAT,
	    "rope_scaling type 'yarn' is not supported");
	expect_config_error(LLAMA SHAPE ", \"rope_scaling\": {\"type\": "
	    "\"dynamic\", \"factor\": 4}}", TS_EFORMAT, "'dynamic'");
	expect_config_error(LLAMA SHAPE ", \"rope_scaling\": {\"rope_type\": "
	    "\"llama3\", \"factor\": 8}}", TS_EFORMAT,
	    "low_freq_factor is missing");
	expect_config_error(LLAMA SHAPE ", \"rope_scaling\": {\"rope_type\": "
	    "\"linear\"}}", TS_EFORMAT, "factor is missing");
	expect_config_error(LLAMA "\"intermediate_size\": 172, "
	    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
	    "\"vocab_size\": 512}", TS_EFORMAT, "hidden_size is missing");
	expect_config_error(LLAMA SHAPE ", \"num_key_value_heads\": 3}",
	    TS_EFORMAT, "not a multiple of num_key_value_heads 3");
	expect_config_error(LLAMA SHAPE ", \"num_key_value_heads\": 0}",
	    TS_EFORMAT, "num_key_value_heads 0 is out of range");
	expect_config_error(LLAMA "\"hidden_size\": 60, "
	    "\"intermediate_size\": 172, \"num_hidden_layers\": 2, "
	    "\"num_attention_heads\": 4, \"vocab_size\": 512}", TS_EFORMAT,
	    "not an even head size");
	expect_config_error(LLAMA SHAPE ", \"rms_norm_eps\": -1}",
	    TS_EFORMAT, "rms_norm_eps");
	expect_config_error(LLAMA SHAPE ", \"eos_token_id\": [1, \"x\"]}",
	    TS_EFORMAT, "eos_token_id");
	expect_config_error(LLAMA SHAPE ", \"eos_token_id\": "
	    "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}", TS_ELIMIT,
	    "over the limit 16");
	expect_config_error(LLAMA SHAPE ", \"vocab_size\": 1}", TS_EFORMAT,
	    "duplicate");
	expect_config_error(LLAMA "\"hidden_size\": 99999999, "
	    "\"intermediate_size\": 172, \"num_hidden_layers\": 2, "
	    "\"num_attention_heads\": 4, \"vocab_size\": 512}", TS_ELIMIT,
	    "hidden_size 99999999 is out of range");
	expect_config_error(LLAMA SHAPE ", \"quantization_config\": "
	    "{\"quant_method\": \"gptq\", \"bits\": 4}}", TS_EFORMAT,
	    "quantization_config (gptq) is not supported");
	expect_config_error("[]", TS_EFORMAT, "not a JSON object");
	expect_config_error("{", TS_EFORMAT, "not valid JSON");
}

static void
test_generation_config(void **unused)
{
	static const char text[] = "{\"bos_token_id\": 128000, "
	    "\"do_sample\": true, \"eos_token_id\": [128001, 128008, 128009],"
	    " \"temperature\": 0.6, \"top_p\": 0.9, \"top_k\": 50, "
	    "\"transformers_version\": \"4.42.3\"}";
	struct hf_generation g;

	(void)unused;
	assert_int_equal(hf_generation_parse(&g, text, strlen(text), err,
	    sizeof(err)), TS_OK);
	assert_int_equal(g.present, 1);
	assert_int_equal(g.bos_token_id, 128000);
	assert_int_equal(g.n_eos, 3);
	assert_int_equal(g.eos_token_ids[2], 128009);
	assert_int_equal(g.has_do_sample, 1);
	assert_int_equal(g.do_sample, 1);
	assert_int_equal(g.has_temperature, 1);
	assert_true(g.temperature == 0.6);
	assert_true(g.top_p == 0.9);
	assert_int_equal(g.top_k, 50);

	assert_int_equal(hf_generation_parse(&g, "{\"eos_token_id\": 2}", 19,
	    err, sizeof(err)), TS_OK);
	assert_int_equal(g.n_eos, 1);
	assert_int_equal(g.has_do_sample, 0);
	assert_int_equal(g.has_temperature, 0);
	assert_int_equal(g.has_top_p, 0);

	assert_int_equal(hf_generation_parse(&g, "{\"temperature\": -1}", 19,
	    err, sizeof(err)), TS_EFORMAT);
	assert_non_null(strstr(err, "temperature"));
	assert_int_equal(hf_generation_parse(&g, "{\"top_p\": 2}", 12, err,
	    sizeof(err)), TS_EFORMAT);
	assert_int_equal(hf_generation_parse(&g, "{\"do_sample\": 1}", 16,
	    err, sizeof(err)), TS_EFORMAT);
}

static enum ts_err
parse_tok(struct hf_tokenizer_config *t, const char *text)
{
	return hf_tokenizer_config_parse(t, text, strlen(text), err,
	    sizeof(err));
}

static void
test_tokenizer_config(void **unused)
{
	struct hf_tokenizer_config t;

	(void)unused;
	assert_int_equal(parse_tok(&t, "{\"add_bos_token\": true, "
	    "\"add_eos_token\": false, \"bos_token\": {\"__type\": "
	    "\"AddedToken\", \"content\": \"<s>\", \"lstrip\": false}, "
	    "\"eos_token\": \"</s>\", \"chat_template\": \"{{ x }}\", "
	    "\"model_max_length\": 1000000000000000019884624838656, "
	    "\"added_tokens_decoder\": {\"0\": {\"content\": \"<unk>\"}}}"),
	    TS_OK);
	assert_int_equal(t.present, 1);
	assert_int_equal(t.has_add_bos_token, 1);
	assert_int_equal(t.add_bos_token, 1);
	assert_int_equal(t.has_add_eos_token, 1);
	assert_int_equal(t.add_eos_token, 0);
	assert_string_equal(t.bos_token, "<s>");
	assert_string_equal(t.eos_token, "</s>");
	assert_string_equal(t.chat_template, "{{ x }}");
	assert_int_equal(t.has_model_max_length, 1);
	assert_true(t.model_max_length == UINT64_MAX);
	hf_tokenizer_config_free(&t);

	/* a list of named templates: the default one */
	assert_int_equal(parse_tok(&t, "{\"chat_template\": [{\"name\": "
	    "\"tool_use\", \"template\": \"T\"}, {\"name\": \"default\", "
	    "\"template\": \"D\"}], \"model_max_length\": 4096, "
	    "\"bos_token\": null}"), TS_OK);
	assert_string_equal(t.chat_template, "D");
	assert_true(t.model_max_length == 4096);
	assert_null(t.bos_token);
	assert_int_equal(t.has_add_bos_token, 0);
	hf_tokenizer_config_free(&t);
	assert_int_equal(parse_tok(&t, "{\"chat_template\": [{\"name\": "
	    "\"tool_use\", \"template\": \"T\"}]}"), TS_OK);
	assert_null(t.chat_template);
	hf_tokenizer_config_free(&t);

	assert_int_equal(parse_tok(&t, "{\"chat_template\": 3}"),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "chat_template"));
	assert_int_equal(parse_tok(&t, "{\"bos_token\": {\"x\": 1}}"),
	    TS_EFORMAT);
	assert_non_null(strstr(err, "bos_token"));
	assert_int_equal(parse_tok(&t, "{\"eos_token\": \"a\", "
	    "\"chat_template\": [{\"name\": \"default\"}]}"), TS_EFORMAT);
	assert_null(t.eos_token);
}

/* ---- a whole folder ------------------------------------------------ */

#define L 2u
#define HID 8u
#define INTER 12u
#define HEADS 2u
#define KV 1u
#define VOCAB 16u
#define HD (HID / HEADS)
#define MAXT (3 + 9 * L)

struct tiny {
	struct hf_config cfg;
	struct hf_write_tensor t[MAXT];
	char names[MAXT][80];
	float *data[MAXT];
	size_t n;
};

/* A tiny llama's config and tensors (values i * 0.01 + k), in dtype. */
static void
tiny_build(struct tiny *m, enum model_dtype dtype, int tied)
{
	uint32_t l;
	int w;

	memset(m, 0, sizeof(*m));
	snprintf(m->cfg.architecture, sizeof(m->cfg.architecture),
	    "LlamaForCausalLM");
	m->cfg.hidden_size = HID;
	m->cfg.intermediate_size = INTER;
	m->cfg.num_hidden_layers = L;
	m->cfg.num_attention_heads = HEADS;
	m->cfg.num_key_value_heads = KV;
	m->cfg.head_dim = HD;
	m->cfg.vocab_size = VOCAB;
	m->cfg.max_position_embeddings = 64;
	m->cfg.rms_norm_eps = 1e-5;
	m->cfg.rope_theta = 500000;
	m->cfg.rope_scaling = HF_ROPE_LLAMA3;
	m->cfg.rope_factor = 8;
	m->cfg.rope_low_freq_factor = 1;
	m->cfg.rope_high_freq_factor = 4;
	m->cfg.rope_original_max_position_embeddings = 32;
	m->cfg.tie_word_embeddings = tied;
	snprintf(m->cfg.torch_dtype, sizeof(m->cfg.torch_dtype), "bfloat16");
	m->cfg.has_bos_token_id = 1;
	m->cfg.bos_token_id = 1;
	m->cfg.n_eos = 2;
	m->cfg.eos_token_ids[0] = 2;
	m->cfg.eos_token_ids[1] = 3;
	for (w = 0; w < HF_W_COUNT; w++) {
		uint32_t layers = (w == HF_W_EMBED || w == HF_W_NORM ||
		    w == HF_W_LM_HEAD) ? 1 : L;

		if (w == HF_W_LM_HEAD && tied)
			continue;
		for (l = 0; l < layers; l++) {
			struct hf_write_tensor *t = &m->t[m->n];
			uint64_t n, i;

			hf_weight_name((enum hf_weight)w, l, m->names[m->n],
			    sizeof(m->names[0]));
			t->name = m->names[m->n];
			t->dtype = dtype;
			t->n_dims = hf_weight_shape(&m->cfg,
			    (enum hf_weight)w, t->shape);
			n = t->shape[0] * (t->n_dims == 2 ? t->shape[1] : 1);
			m->data[m->n] = malloc(n * sizeof(float));
			for (i = 0; i < n; i++)
				m->data[m->n][i] = (float)i * 0.01f +
				    (float)m->n;
			t->data = m->data[m->n];
			m->n++;
		}
	}
}

static void
tiny_free(struct tiny *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->data[i]);
}

/* Every tensor of m reads back as written (after rounding to dtype). */
static void
tiny_compare(const struct tiny *m, const struct hf_model *h)
{
	size_t i;
	uint64_t k;

	for (i = 0; i < m->n; i++) {
		const struct st_tensor *t = hf_find(h, m->t[i].name);
		float *got;

		assert_non_null(t);
		assert_int_equal(t->dtype, m->t[i].dtype);
		assert_int_equal(t->n_dims, m->t[i].n_dims);
		assert_int_equal(t->shape[0], m->t[i].shape[0]);
		got = malloc(t->n_elems * sizeof(float));
		st_to_f32(t->dtype, t->data, t->n_elems, got);
		for (k = 0; k < t->n_elems; k++) {
			float want = m->t[i].data[k];

			if (t->dtype == MODEL_DTYPE_F16)
				want = st_f16_to_f32(st_f32_to_f16(want));
			else if (t->dtype == MODEL_DTYPE_BF16)
				want = st_bf16_to_f32(st_f32_to_bf16(want));
			if (got[k] != want)
				fail_msg("%s[%llu]: %g, want %g", t->name,
				    (unsigned long long)k, got[k], want);
		}
		free(got);
	}
}

static void
test_folder_round_trip(void **unused)
{
	struct tiny m;
	struct hf_generation gen;
	struct hf_tokenizer_config tok;
	struct hf_write_spec spec;
	struct hf_model *h;
	const uint32_t *eos;
	uint32_t n;

	(void)unused;
	tiny_build(&m, MODEL_DTYPE_BF16, 0);
	memset(&gen, 0, sizeof(gen));
	gen.n_eos = 1;
	gen.eos_token_ids[0] = 7;
	gen.has_do_sample = 1;
	gen.has_temperature = 1;
	gen.temperature = 0.7;
	gen.has_top_p = 1;
	gen.top_p = 0.95;
	memset(&tok, 0, sizeof(tok));
	tok.chat_template = "{% for m in messages %}{{ m.content }}"
	    "{% endfor %}";
	tok.has_add_bos_token = 1;
	tok.add_bos_token = 1;
	tok.bos_token = "<s>";
	memset(&spec, 0, sizeof(spec));
	spec.cfg = &m.cfg;
	spec.tensors = m.t;
	spec.n_tensors = m.n;
	spec.gen = &gen;
	spec.tok = &tok;
	assert_int_equal(hf_write(dir, &spec, err, sizeof(err)), TS_OK);
	if (hf_open(&h, dir, err, sizeof(err)) != TS_OK)
		fail_msg("hf_open: %s", err);
	assert_memory_equal(&h->cfg, &m.cfg, sizeof(m.cfg));
	assert_int_equal(safetensors_set_files(h->weights), 1);
	tiny_compare(&m, h);
	assert_int_equal(h->gen.present, 1);
	assert_int_equal(h->gen.do_sample, 0);
	assert_true(h->gen.temperature == 0.7);
	assert_true(h->gen.top_p == 0.95);
	assert_int_equal(h->gen.has_top_k, 0);
	eos = hf_eos_ids(h, &n);
	assert_int_equal(n, 1);
	assert_int_equal(eos[0], 7);
	assert_int_equal(h->tok.present, 1);
	assert_string_equal(h->tok.chat_template, tok.chat_template);
	assert_int_equal(h->tok.add_bos_token, 1);
	assert_string_equal(h->tok.bos_token, "<s>");
	assert_null(h->tok.eos_token);
	assert_null(h->tokenizer_json);
	assert_ptr_equal(hf_weight(h, HF_W_LM_HEAD, 0),
	    hf_find(h, "lm_head.weight"));
	assert_ptr_equal(hf_weight(h, HF_W_UP, 1),
	    hf_find(h, "model.layers.1.mlp.up_proj.weight"));
	assert_null(hf_weight(h, HF_W_UP, L));
	hf_close(h);

	/* tokenizer.json's path; chat_template.jinja wins */
	write_text("tokenizer.json", "{}");
	write_text("chat_template.jinja", "{{ bos_token }}");
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_OK);
	assert_non_null(h->tokenizer_json);
	assert_non_null(strstr(h->tokenizer_json, "/tokenizer.json"));
	assert_string_equal(h->tok.chat_template, "{{ bos_token }}");
	hf_close(h);
	hf_close(NULL);
	tiny_free(&m);
}

static void
test_folder_tied_f16_no_optional(void **unused)
{
	struct tiny m;
	struct hf_write_spec spec;
	struct hf_model *h;
	const uint32_t *eos;
	uint32_t n;

	(void)unused;
	tiny_build(&m, MODEL_DTYPE_F16, 1);
	m.t[0].dtype = MODEL_DTYPE_F32;      /* mixed types are fine */
	memset(&spec, 0, sizeof(spec));
	spec.cfg = &m.cfg;
	spec.tensors = m.t;
	spec.n_tensors = m.n;
	assert_int_equal(hf_write(dir, &spec, err, sizeof(err)), TS_OK);
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_OK);
	tiny_compare(&m, h);
	assert_null(hf_find(h, "lm_head.weight"));
	assert_ptr_equal(hf_weight(h, HF_W_LM_HEAD, 0),
	    hf_weight(h, HF_W_EMBED, 0));
	assert_int_equal(h->gen.present, 0);
	assert_int_equal(h->tok.present, 0);
	assert_null(h->tok.chat_template);
	eos = hf_eos_ids(h, &n);      /* config.json's */
	assert_int_equal(n, 2);
	assert_int_equal(eos[1], 3);
	hf_close(h);
	tiny_free(&m);
}

static void
test_folder_shards(void **unused)
{
	struct tiny m;
	struct hf_write_spec spec;
	struct hf_model *h;
	struct stat sb;
	size_t files, k;
	char p[512];

	(void)unused;
	tiny_build(&m, MODEL_DTYPE_F32, 0);
	memset(&spec, 0, sizeof(spec));
	spec.cfg = &m.cfg;
	spec.tensors = m.t;
	spec.n_tensors = m.n;
	spec.max_shard_bytes = 600;     /* embed is 512 bytes */
	assert_int_equal(hf_write(dir, &spec, err, sizeof(err)), TS_OK);
	snprintf(p, sizeof(p), "%s/model.safetensors", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	if (hf_open(&h, dir, err, sizeof(err)) != TS_OK)
		fail_msg("hf_open: %s", err);
	files = safetensors_set_files(h->weights);
	assert_true(files > 2 && files < m.n);
	for (k = 1; k <= files; k++) {
		snprintf(p, sizeof(p), "%s/model-%05zu-of-%05zu.safetensors",
		    dir, k, files);
		assert_int_equal(access(p, F_OK), 0);
		assert_int_equal(stat(p, &sb), 0);
		/* 8 + header + at most 600 bytes of tensors */
		assert_true(sb.st_size < 8 + 1024 + 600);
	}
	tiny_compare(&m, h);
	hf_close(h);

	/* a name twice, in different shards */
	clean_dir();
	m.t[1].name = m.t[m.n - 1].name;
	assert_int_equal(hf_write(dir, &spec, err, sizeof(err)), TS_EINVAL);
	assert_non_null(strstr(err, "twice"));
	m.t[1].name = m.names[1];

	/* one tensor larger than the limit gets a shard of its own */
	spec.max_shard_bytes = 1;
	clean_dir();
	assert_int_equal(hf_write(dir, &spec, err, sizeof(err)), TS_OK);
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_OK);
	assert_int_equal(safetensors_set_files(h->weights), m.n);
	hf_close(h);
	tiny_free(&m);
}

/* Writes m with one tensor changed by `edit` and expects hf_open to
 * fail with `want`. */
static void
expect_weights_error(struct tiny *m, const char *want)
{
	struct hf_write_spec spec;
	struct hf_model *h = (struct hf_model *)&h;

	clean_dir();
	memset(&spec, 0, sizeof(spec));
	spec.cfg = &m->cfg;
	spec.tensors = m->t;
	spec.n_tensors = m->n;
	assert_int_equal(hf_write(dir, &spec, err, sizeof(err)), TS_OK);
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_EFORMAT);
	assert_null(h);
	if (strstr(err, want) == NULL)
		fail_msg("error '%s' does not contain '%s'", err, want);
}

static void
test_folder_weight_errors(void **unused)
{
	struct tiny m;
	struct hf_write_tensor keep;
	size_t i, up = 0, q = 0;

	(void)unused;
	tiny_build(&m, MODEL_DTYPE_F32, 0);
	for (i = 0; i < m.n; i++) {
		if (strcmp(m.t[i].name, "model.layers.1.mlp.up_proj.weight") ==
		    0)
			up = i;
		if (strcmp(m.t[i].name,
		    "model.layers.0.self_attn.q_proj.weight") == 0)
			q = i;
	}
	/* a wrong shape */
	keep = m.t[up];
	m.t[up].shape[0] = HID;
	m.t[up].shape[1] = INTER;
	expect_weights_error(&m, "tensor 'model.layers.1.mlp.up_proj.weight'"
	    " has shape [8, 12] but the config needs [12, 8]");
	m.t[up] = keep;
	m.t[up].n_dims = 1;
	m.t[up].shape[0] = INTER * HID;
	expect_weights_error(&m, "has shape [96] but the config needs "
	    "[12, 8]");
	m.t[up] = keep;
	/* missing: drop it (move the last into its place) */
	m.t[up] = m.t[m.n - 1];
	m.n--;
	expect_weights_error(&m, "tensor 'model.layers.1.mlp.up_proj.weight' "
	    "is missing");
	m.t[m.n++] = m.t[up];
	m.t[up] = keep;
	/* a bias */
	keep = m.t[q];
	m.t[q].name = "model.layers.0.self_attn.q_proj.bias";
	m.t[q].n_dims = 1;
	m.t[q].shape[0] = HID;
	expect_weights_error(&m, "tensor 'model.layers.0.self_attn.q_proj."
	    "bias': biases are not supported");
	m.t[q] = keep;
	/* untied without lm_head */
	for (i = 0; i < m.n; i++)
		if (strcmp(m.t[i].name, "lm_head.weight") == 0)
			break;
	assert_true(i < m.n);
	keep = m.t[i];
	m.t[i] = m.t[m.n - 1];
	m.n--;
	expect_weights_error(&m, "tensor 'lm_head.weight' is missing");
	m.n++;
	m.t[i] = keep;
	tiny_free(&m);
}

static void
test_folder_file_errors(void **unused)
{
	struct hf_model *h = (struct hf_model *)&h;
	struct tiny m;
	struct hf_write_spec spec;

	(void)unused;
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_ESYS);
	assert_null(h);
	assert_non_null(strstr(err, "config.json: cannot open"));
	write_text("config.json", "{\"architectures\": "
	    "[\"Qwen2ForCausalLM\"], " SHAPE "}");
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_EFORMAT);
	assert_non_null(strstr(err, "/config.json: architecture "
	    "'Qwen2ForCausalLM'"));
	write_text("config.json", LLAMA SHAPE "}");
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_ESYS);
	assert_non_null(strstr(err, "no model.safetensors"));

	/* a bad optional file is an error, naming it */
	tiny_build(&m, MODEL_DTYPE_F32, 0);
	memset(&spec, 0, sizeof(spec));
	spec.cfg = &m.cfg;
	spec.tensors = m.t;
	spec.n_tensors = m.n;
	assert_int_equal(hf_write(dir, &spec, err, sizeof(err)), TS_OK);
	write_text("generation_config.json", "{\"top_k\": -1}");
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_EFORMAT);
	assert_non_null(strstr(err, "generation_config.json: top_k"));
	write_text("generation_config.json", "{}");
	write_text("tokenizer_config.json", "{\"add_bos_token\": \"yes\"}");
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_EFORMAT);
	assert_non_null(strstr(err, "tokenizer_config.json: add_bos_token"));
	write_text("tokenizer_config.json", "{}");
	assert_int_equal(hf_open(&h, dir, err, sizeof(err)), TS_OK);
	assert_int_equal(h->gen.present, 1);
	assert_int_equal(h->tok.present, 1);
	hf_close(h);
	tiny_free(&m);
}

/* ---- the RoPE permutation ------------------------------------------ */

/*
 * convert_hf_to_gguf.py: w.reshape(n_head, 2, half, cols).swapaxes(1, 2)
 * .reshape(rows, cols). For n_head 2, head_dim 4 (half 2), HF row r
 * = h*4 + j*2 + i goes to h*4 + 2*i + j: out rows are HF rows
 * [0, 2, 1, 3, 4, 6, 5, 7].
 */
static void
test_permute_where_rows_land(void **unused)
{
	static const float expect[8] = { 0, 2, 1, 3, 4, 6, 5, 7 };
	float hf[8], il[8], back[8];
	int r;

	(void)unused;
	for (r = 0; r < 8; r++)
		hf[r] = (float)r;
	assert_int_equal(hf_unpermute_rows(hf, il, MODEL_DTYPE_F32, 2, 8, 1),
	    TS_OK);
	assert_memory_equal(il, expect, sizeof(expect));
	assert_int_equal(hf_permute_rows(il, back, MODEL_DTYPE_F32, 2, 8, 1),
	    TS_OK);
	assert_memory_equal(back, hf, sizeof(hf));

	/* one head of 8 (half 4): [0, 4, 1, 5, 2, 6, 3, 7] */
	{
		static const float e1[8] = { 0, 4, 1, 5, 2, 6, 3, 7 };

		assert_int_equal(hf_unpermute_rows(hf, il, MODEL_DTYPE_F32, 1,
		    8, 1), TS_OK);
		assert_memory_equal(il, e1, sizeof(e1));
	}
	assert_int_equal(hf_unpermute_rows(hf, il, MODEL_DTYPE_F32, 3, 8, 1),
	    TS_EINVAL);
	assert_int_equal(hf_unpermute_rows(hf, il, MODEL_DTYPE_F32, 0, 8, 1),
	    TS_EINVAL);
	assert_int_equal(hf_unpermute_rows(hf, il, MODEL_DTYPE_Q8_0, 2, 8,
	    1), TS_EINVAL);
}

static void
test_permute_identity(void **unused)
{
	enum { H = 4, HDIM = 6, ROWS = H * HDIM, COLS = 5 };
	uint16_t src[ROWS * COLS], mid[ROWS * COLS], back[ROWS * COLS];
	int i;

	(void)unused;
	for (i = 0; i < ROWS * COLS; i++)
		src[i] = (uint16_t)(i * 7919u);
	assert_int_equal(hf_permute_rows(src, mid, MODEL_DTYPE_BF16, H, ROWS,
	    COLS), TS_OK);
	assert_memory_not_equal(mid, src, sizeof(src));
	assert_int_equal(hf_unpermute_rows(mid, back, MODEL_DTYPE_BF16, H,
	    ROWS, COLS), TS_OK);
	assert_memory_equal(back, src, sizeof(src));
	/* rows move whole: row 1 of the HF layout is row 2 interleaved */
	assert_int_equal(hf_unpermute_rows(src, mid, MODEL_DTYPE_F16, H,
	    ROWS, COLS), TS_OK);
	assert_memory_equal(mid + 2 * COLS, src + 1 * COLS,
	    COLS * sizeof(uint16_t));
}

/*
 * The reason for the permutation: transformers' rotate_half RoPE on
 * q = W_hf x (pairs (i, i + half) of a head) gives the same vector,
 * rows permuted, as interleaved RoPE (pairs (2i, 2i+1), tokstream's) on
 * q' = unpermute(W_hf) x, at every position.
 */
static void
test_permute_matches_rope(void **unused)
{
	enum { H = 2, HDIM = 8, HALF = HDIM / 2, ROWS = H * HDIM, COLS = 3 };
	float w[ROWS * COLS], wi[ROWS * COLS], x[COLS];
	float q[ROWS], qi[ROWS];
	int pos, r, c, h, i;

	(void)unused;
	for (r = 0; r < ROWS * COLS; r++)
		w[r] = sinf((float)r * 1.3f);
	for (c = 0; c < COLS; c++)
		x[c] = cosf((float)c + 0.5f);
	assert_int_equal(hf_unpermute_rows(w, wi, MODEL_DTYPE_F32, H, ROWS,
	    COLS), TS_OK);
	for (pos = 0; pos < 5; pos++) {
		for (r = 0; r < ROWS; r++) {
			q[r] = qi[r] = 0;
			for (c = 0; c < COLS; c++) {
				q[r] += w[r * COLS + c] * x[c];
				qi[r] += wi[r * COLS + c] * x[c];
			}
		}
		for (h = 0; h < H; h++) {
			float *a = q + h * HDIM, *b = qi + h * HDIM;

			for (i = 0; i < HALF; i++) {
				float th = (float)pos * powf(10000.0f,
				    -2.0f * (float)i / HDIM);
				float cs = cosf(th), sn = sinf(th);
				float a0 = a[i], a1 = a[i + HALF];
				float b0 = b[2 * i], b1 = b[2 * i + 1];

				/* rotate_half: x*cos + rotate_half(x)*sin */
				a[i] = a0 * cs - a1 * sn;
				a[i + HALF] = a1 * cs + a0 * sn;
				/* interleaved pairs */
				b[2 * i] = b0 * cs - b1 * sn;
				b[2 * i + 1] = b0 * sn + b1 * cs;
			}
			for (i = 0; i < HALF; i++) {
				assert_true(fabsf(b[2 * i] - a[i]) < 1e-5f);
				assert_true(fabsf(b[2 * i + 1] - a[i + HALF]) <
				    1e-5f);
			}
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_llama31),
		cmocka_unit_test(test_config_defaults),
		cmocka_unit_test(test_config_refused),
		cmocka_unit_test(test_generation_config),
		cmocka_unit_test(test_tokenizer_config),
		cmocka_unit_test_setup(test_folder_round_trip, per_test_clean),
		cmocka_unit_test_setup(test_folder_tied_f16_no_optional,
		    per_test_clean),
		cmocka_unit_test_setup(test_folder_shards, per_test_clean),
		cmocka_unit_test_setup(test_folder_weight_errors,
		    per_test_clean),
		cmocka_unit_test_setup(test_folder_file_errors, per_test_clean),
		cmocka_unit_test(test_permute_where_rows_land),
		cmocka_unit_test(test_permute_identity),
		cmocka_unit_test(test_permute_matches_rope),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
