/*
 * model/hf.h - a Hugging Face model folder of a LlamaForCausalLM (as
 * transformers' save_pretrained writes it): reading its config, weights
 * (safetensors, one file or shards), generation and tokenizer configs,
 * and writing one (for tests and tokstream-mkmodel).
 *
 *   DIR/config.json                  required: the architecture, shapes
 *   DIR/model.safetensors            the weights, or
 *   DIR/model.safetensors.index.json + the shards it names
 *   DIR/generation_config.json       optional: eos ids, sampling defaults
 *   DIR/tokenizer_config.json        optional: chat template, bos/eos text
 *   DIR/chat_template.jinja          optional: the chat template (newer
 *                                    transformers write it here; it wins
 *                                    over tokenizer_config.json's)
 *   DIR/tokenizer.json               only its path is recorded (parsed
 *                                    elsewhere)
 *
 * config.json's fields are those of transformers' LlamaConfig
 * (models/llama/configuration_llama.py), with its defaults where a field
 * may be absent. A folder is refused unless its computation is Llama's:
 * RMSNorm, RoPE, grouped-query attention without biases, a SwiGLU FFN.
 *
 * RoPE layout. transformers' convert_llama_weights_to_hf.py permutes the
 * rows of each q_proj and k_proj (per head) from Meta's interleaved-pair
 * rotation (pairs (0,1), (2,3), ... of a head, which llama2.c, GGUF and
 * tokstream's forward pass use) to rotate_half's halves (pairs (i,
 * i + head_dim/2)). The weights read here are as stored: to run them,
 * undo that with hf_unpermute_rows (llama.cpp's convert_hf_to_gguf.py
 * does the same, LlamaModel.permute).
 */
#ifndef TS_MODEL_HF_H
#define TS_MODEL_HF_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"
#include "model/dtype.h"
#include "model/safetensors.h"

#define HF_MAX_EOS 16u                          /* eos ids in a list */
#define HF_MAX_CONFIG_BYTES (1u << 20)          /* config.json,
						 * generation_config.json */
#define HF_MAX_TOKENIZER_CONFIG_BYTES (32u << 20)
#define HF_MAX_TEMPLATE_BYTES (1u << 20)        /* chat_template.jinja */

enum hf_rope_scaling {
	HF_ROPE_NONE = 0,      /* null, absent, or rope_type "default" */
	HF_ROPE_LINEAR,        /* positions divided by factor */
	HF_ROPE_LLAMA3         /* Llama 3.1's frequency bands
				* (modeling_rope_utils.py
				* _compute_llama3_parameters) */
};

/* config.json. Token ids are in [0, 2^31). */
struct hf_config {
	char architecture[32];          /* "LlamaForCausalLM" or
					 * "MistralForCausalLM" */
	uint32_t hidden_size;           /* model width (llama2.c dim) */
	uint32_t intermediate_size;     /* FFN width (hidden_dim) */
	uint32_t num_hidden_layers;
	uint32_t num_attention_heads;
	uint32_t num_key_value_heads;   /* default num_attention_heads */
	uint32_t vocab_size;
	uint32_t max_position_embeddings; /* default 2048 (Mistral 131072) */
	uint32_t head_dim;              /* hidden_size / num_attention_heads;
					 * a head_dim field must equal it */
	double rms_norm_eps;            /* default 1e-6 */
	double rope_theta;              /* default 10000 */
	enum hf_rope_scaling rope_scaling;
	double rope_factor;             /* LINEAR, LLAMA3 */
	double rope_low_freq_factor;    /* LLAMA3 */
	double rope_high_freq_factor;   /* LLAMA3 */
	uint32_t rope_original_max_position_embeddings; /* LLAMA3 */
	int tie_word_embeddings;        /* 1: no lm_head.weight; the
					 * classifier is the embedding */
	char torch_dtype[16];           /* "bfloat16", ... informational;
					 * "" when absent */
	int has_bos_token_id;
	uint32_t bos_token_id;
	uint32_t n_eos;                 /* eos_token_id: an int or a list */
	uint32_t eos_token_ids[HF_MAX_EOS];
};

/* generation_config.json (GenerationConfig). transformers ignores
 * temperature, top_p and top_k when do_sample is false (greedy), and
 * do_sample defaults to false: the caller decides what to honour. */
struct hf_generation {
	int present;                    /* the file was there */
	int has_bos_token_id;
	uint32_t bos_token_id;
	uint32_t n_eos;
	uint32_t eos_token_ids[HF_MAX_EOS];
	int has_do_sample, do_sample;
	int has_temperature;
	double temperature;             /* >= 0 */
	int has_top_p;
	double top_p;                   /* [0, 1] */
	int has_top_k;
	uint32_t top_k;
};

/* tokenizer_config.json (and chat_template.jinja). The strings read are
 * owned by the model (hf_close, hf_tokenizer_config_free free them);
 * the writer only reads them (a caller's may be literals). */
struct hf_tokenizer_config {
	int present;                    /* tokenizer_config.json was there */
	const char *chat_template;      /* NULL: none. A list of named
					 * templates gives the "default" one
					 * (NULL when there is none) */
	int has_add_bos_token, add_bos_token;   /* recent transformers
					 * drop these two when tokenizer.json
					 * exists (its post_processor adds
					 * BOS/EOS): _from_pretrained */
	int has_add_eos_token, add_eos_token;
	const char *bos_token;          /* a string or an AddedToken's
					 * content; NULL when absent/null */
	const char *eos_token;          /* the same */
	int has_model_max_length;
	uint64_t model_max_length;      /* UINT64_MAX for transformers'
					 * VERY_LARGE_INTEGER (1e30): none */
};

struct hf_model {
	struct hf_config cfg;
	struct hf_generation gen;
	struct hf_tokenizer_config tok;
	char *dir;                      /* as given */
	char *tokenizer_json;           /* DIR/tokenizer.json when it is a
					 * file, else NULL */
	struct safetensors_set *weights;
};

/*
 * Opens the folder `dir`: parses the files above and maps the weights,
 * then hf_check_weights. Returns TS_OK with *out (free with hf_close),
 * or an error with err naming the file: TS_EFORMAT (malformed, or not a
 * llama: "config.json: architecture 'Qwen2ForCausalLM' is not supported
 * (llama only: ...): its q/k/v projections have biases"), TS_ELIMIT,
 * TS_ESYS (a required file cannot be read; errno kept).
 */
enum ts_err hf_open(struct hf_model **out, const char *dir, char *err,
    size_t errlen);

void hf_close(struct hf_model *m);

/* The parsers hf_open uses, on a file's text (text, len). err has no
 * file name. hf_tokenizer_config_free frees the strings of *t. */
enum ts_err hf_config_parse(struct hf_config *c, const char *text,
    size_t len, char *err, size_t errlen);
enum ts_err hf_generation_parse(struct hf_generation *g, const char *text,
    size_t len, char *err, size_t errlen);
enum ts_err hf_tokenizer_config_parse(struct hf_tokenizer_config *t,
    const char *text, size_t len, char *err, size_t errlen);
void hf_tokenizer_config_free(struct hf_tokenizer_config *t);

/* The eos ids generation stops at: generation_config.json's when it
 * lists any, else config.json's (transformers builds the generation
 * config from the model config when the file is absent). */
const uint32_t *hf_eos_ids(const struct hf_model *m, uint32_t *n);

/* The weights of a llama, with llama2.c's names in brackets. */
enum hf_weight {
	HF_W_EMBED = 0,    /* model.embed_tokens.weight [vocab][hidden]
			    * (token_embedding_table) */
	HF_W_ATTN_NORM,    /* model.layers.L.input_layernorm.weight [hidden]
			    * (rms_att_weight) */
	HF_W_Q,            /* ...self_attn.q_proj.weight [heads*hd][hidden]
			    * (wq, after hf_unpermute_rows) */
	HF_W_K,            /* ...self_attn.k_proj.weight [kv*hd][hidden]
			    * (wk, after hf_unpermute_rows, kv heads) */
	HF_W_V,            /* ...self_attn.v_proj.weight [kv*hd][hidden] */
	HF_W_O,            /* ...self_attn.o_proj.weight [hidden][heads*hd] */
	HF_W_FFN_NORM,     /* ...post_attention_layernorm.weight [hidden]
			    * (rms_ffn_weight) */
	HF_W_GATE,         /* ...mlp.gate_proj.weight [inter][hidden] (w1) */
	HF_W_UP,           /* ...mlp.up_proj.weight [inter][hidden] (w3) */
	HF_W_DOWN,         /* ...mlp.down_proj.weight [hidden][inter] (w2) */
	HF_W_NORM,         /* model.norm.weight [hidden] (rms_final_weight) */
	HF_W_LM_HEAD,      /* lm_head.weight [vocab][hidden] (wcls); absent
			    * when tie_word_embeddings */
	HF_W_COUNT
};

/* Writes w's HF name for layer `layer` (ignored for the model-wide ones)
 * into buf; returns snprintf's count. */
int hf_weight_name(enum hf_weight w, uint32_t layer, char *buf,
    size_t len);

/* w's expected shape under c (outermost first) into shape[2]; returns
 * its number of dimensions (1 or 2). */
uint32_t hf_weight_shape(const struct hf_config *c, enum hf_weight w,
    uint64_t shape[2]);

/* The tensor named `name` (HF name), or NULL. Borrowed until hf_close. */
const struct st_tensor *hf_find(const struct hf_model *m, const char *name);

/* Weight w of layer `layer`, or NULL. HF_W_LM_HEAD gives the classifier:
 * lm_head.weight, or the embedding when the two are tied. */
const struct st_tensor *hf_weight(const struct hf_model *m, enum hf_weight w,
    uint32_t layer);

/*
 * Checks that every weight of c's llama is in `weights` with its expected
 * shape (lm_head only when untied), and that no tensor is a bias.
 * TS_EFORMAT: "tensor 'model.layers.3.mlp.up_proj.weight' has shape
 * [64, 32] but the config needs [172, 64]", "tensor 'x' is missing",
 * "tensor 'model.layers.0.self_attn.q_proj.bias': biases are not
 * supported".
 */
enum ts_err hf_check_weights(const struct hf_config *c,
    const struct safetensors_set *weights, char *err, size_t errlen);

/*
 * RoPE row order (see the top of this file). A q or k weight is rows =
 * n_head * head_dim rows of cols elements (n_head: the kv heads for k).
 * With half = head_dim / 2, within each head h, for i < half, j in {0,1}:
 *
 *   HF row          h*head_dim + j*half + i
 *   interleaved row h*head_dim + 2*i + j
 *
 * which is what convert_hf_to_gguf.py's LlamaModel.permute computes:
 * w.reshape(n_head, 2, half, cols) makes axes (h, j, i) of the HF rows,
 * .swapaxes(1, 2) gives (h, i, j), and .reshape(rows, cols) flattens
 * that to row h*head_dim + 2*i + j. (transformers' permute, Meta to HF,
 * is the inverse: view(n_head, half, 2, cols).transpose(1, 2).)
 *
 * hf_unpermute_rows: HF -> interleaved (to run an HF checkpoint).
 * hf_permute_rows:   interleaved -> HF (to write one).
 * src and dst must not overlap. dtype F32, F16 or BF16 (whole rows are
 * moved). TS_EINVAL when rows is not a multiple of 2 * n_head.
 */
enum ts_err hf_unpermute_rows(const void *src, void *dst,
    enum model_dtype dtype, uint32_t n_head, uint64_t rows, uint64_t cols);
enum ts_err hf_permute_rows(const void *src, void *dst,
    enum model_dtype dtype, uint32_t n_head, uint64_t rows, uint64_t cols);

/* A tensor to write: n_elems floats (borrowed), converted to dtype. */
struct hf_write_tensor {
	const char *name;
	enum model_dtype dtype;         /* F32, F16 or BF16 */
	uint32_t n_dims;
	uint64_t shape[ST_MAX_DIMS];
	const float *data;
};

struct hf_write_spec {
	const struct hf_config *cfg;    /* written to config.json;
					 * architecture "" means
					 * LlamaForCausalLM */
	const struct hf_write_tensor *tensors;
	size_t n_tensors;
	uint64_t max_shard_bytes;       /* 0: one model.safetensors; else
					 * shards of at most this many
					 * tensor bytes (a larger tensor
					 * gets a shard of its own) and the
					 * index */
	const struct hf_generation *gen;        /* NULL: no file */
	const struct hf_tokenizer_config *tok;  /* NULL: no file */
};

/*
 * Writes a model folder at `dir` (created if missing; files replaced):
 * config.json, the weights (converted from float: F16 and BF16 round to
 * nearest even; metadata {"format": "pt"} as transformers writes and
 * requires), and generation_config.json / tokenizer_config.json for the
 * fields with has_ set (and non-NULL strings). The tensors are written
 * as given: the caller applies hf_permute_rows to q and k (and chooses
 * the names; hf_weight_name gives them). No tokenizer.json is written.
 * TS_EINVAL for a bad spec, TS_ESYS when writing fails; err says which.
 */
enum ts_err hf_write(const char *dir, const struct hf_write_spec *spec,
    char *err, size_t errlen);

#endif /* TS_MODEL_HF_H */
