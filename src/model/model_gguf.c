/*
 * model/model_gguf.c - a GGUF file as a model (model_file.h): the
 * "llama" architecture's hyperparameters and tensors, its tokenizer,
 * EOS list, chat template and sampling defaults, from the metadata keys
 * of the GGUF spec (ggml docs/gguf.md "Standardized key-value pairs":
 * general.*, [llm].*, tokenizer.ggml.*, tokenizer.chat_template) and the
 * tensor names llama.cpp writes for it (llama-arch.cpp LLM_ARCH_LLAMA:
 * token_embd, blk.N.attn_norm, attn_q, attn_k, attn_v, attn_output,
 * ffn_norm, ffn_gate, ffn_down, ffn_up, output_norm, output, rope_freqs).
 * GGUF's q and k rows are already in the interleaved RoPE layout the
 * forward pass uses (convert_hf_to_gguf.py permutes them).
 */
#include "model/model_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dtype.h"
#include "model/gguf.h"
#include "model/model.h"
#include "model/quant.h"
#include "model/tokenizer.h"

/* Architectures llama.cpp has that this loader refuses, and why (their
 * computation differs from Llama's: llama-model.cpp's build functions). */
static const struct {
	const char *arch;
	const char *why;
} gguf_refused[] = {
	{ "qwen2", "its q/k/v projections have biases" },
	{ "qwen3", "it normalises q and k per head" },
	{ "gemma", "GeGLU, scaled embeddings and (1 + w) norms" },
	{ "gemma2", "GeGLU, soft-capped logits and extra norms" },
	{ "gemma3", "GeGLU, sliding-window layers and extra norms" },
	{ "phi3", "fused qkv and gate/up projections" },
	{ "mistral3", "its vision tower and rope scaling" },
	{ "falcon", "parallel attention and LayerNorm" },
	{ "gpt2", "learned positions and LayerNorm" },
	{ "mixtral", "mixture of experts" },
};

/* A metadata key of the architecture: "llama.block_count". */
#define KEY(buf, k) (snprintf((buf), sizeof(buf), "llama.%s", (k)), (buf))

/* Reads u32 key k (TS_ENOENT: *v keeps its default when !required). */
static enum ts_err
get_u32(const struct gguf *g, const char *k, uint32_t *v, int required,
    char *err, size_t errlen)
{
	enum ts_err rc = gguf_get_u32(g, k, v, err, errlen);

	if (rc == TS_ENOENT && !required)
		return TS_OK;
	if (rc == TS_ENOENT)
		snprintf(err, errlen, "key '%s' is missing", k);
	return rc;
}

static enum ts_err
get_f32(const struct gguf *g, const char *k, float *v, char *err,
    size_t errlen)
{
	enum ts_err rc = gguf_get_f32(g, k, v, err, errlen);

	return rc == TS_ENOENT ? TS_OK : rc;
}

/* The hyperparameters of a "llama" file into c. */
static enum ts_err
read_config(const struct gguf *g, struct model_config *c, char *err,
    size_t errlen)
{
	char k[96];
	uint32_t experts = 0, rope_dim = 0, key_len = 0, val_len = 0;
	const char *s;
	size_t sl;
	enum ts_err rc;
	float factor = 0.0f;

	memset(c, 0, sizeof(*c));
	if ((rc = get_u32(g, KEY(k, "embedding_length"), &c->dim, 1, err,
	    errlen)) != TS_OK ||
	    (rc = get_u32(g, KEY(k, "feed_forward_length"), &c->hidden_dim, 1,
	    err, errlen)) != TS_OK ||
	    (rc = get_u32(g, KEY(k, "block_count"), &c->n_layers, 1, err,
	    errlen)) != TS_OK ||
	    (rc = get_u32(g, KEY(k, "attention.head_count"), &c->n_heads, 1,
	    err, errlen)) != TS_OK ||
	    (rc = get_u32(g, KEY(k, "context_length"), &c->seq_len, 1, err,
	    errlen)) != TS_OK)
		return rc;
	c->n_kv_heads = c->n_heads;
	if ((rc = get_u32(g, KEY(k, "attention.head_count_kv"),
	    &c->n_kv_heads, 0, err, errlen)) != TS_OK ||
	    (rc = get_u32(g, KEY(k, "expert_count"), &experts, 0, err,
	    errlen)) != TS_OK ||
	    (rc = get_u32(g, KEY(k, "rope.dimension_count"), &rope_dim, 0, err,
	    errlen)) != TS_OK ||
	    (rc = get_u32(g, KEY(k, "attention.key_length"), &key_len, 0, err,
	    errlen)) != TS_OK ||
	    (rc = get_u32(g, KEY(k, "attention.value_length"), &val_len, 0,
	    err, errlen)) != TS_OK ||
	    (rc = get_f32(g, KEY(k, "attention.layer_norm_rms_epsilon"),
	    &c->rms_eps, err, errlen)) != TS_OK ||
	    (rc = get_f32(g, KEY(k, "rope.freq_base"), &c->rope_theta, err,
	    errlen)) != TS_OK)
		return rc;
	if (experts > 0) {
		snprintf(err, errlen, "a mixture of %u experts is not "
		    "supported (dense llama only)", experts);
		return TS_EFORMAT;
	}
	rc = gguf_get_str(g, KEY(k, "rope.scaling.type"), &s, &sl, err,
	    errlen);
	if (rc == TS_OK && !(sl == 4 && memcmp(s, "none", 4) == 0)) {
		if (!(sl == 6 && memcmp(s, "linear", 6) == 0)) {
			snprintf(err, errlen, "rope scaling '%.*s' is not "
			    "supported (none, linear; Llama 3's comes as "
			    "rope_freqs.weight)", (int)(sl > 32 ? 32 : sl), s);
			return TS_EFORMAT;
		}
		if ((rc = get_f32(g, KEY(k, "rope.scaling.factor"), &factor,
		    err, errlen)) != TS_OK)
			return rc;
		if (!(factor >= 1.0f && factor <= 1e6f)) {
			snprintf(err, errlen, "rope scaling factor %g is out "
			    "of range", (double)factor);
			return TS_EFORMAT;
		}
		c->rope_freq_scale = 1.0f / factor;
	} else if (rc != TS_ENOENT && rc != TS_OK) {
		return rc;
	}
	if (c->n_heads == 0 || c->dim % c->n_heads != 0) {
		snprintf(err, errlen, "embedding_length %u is not a multiple "
		    "of head_count %u", c->dim, c->n_heads);
		return TS_EFORMAT;
	}
	if ((rope_dim != 0 && rope_dim != c->dim / c->n_heads) ||
	    (key_len != 0 && key_len != c->dim / c->n_heads) ||
	    (val_len != 0 && val_len != c->dim / c->n_heads)) {
		snprintf(err, errlen, "head size %u with rope dimensions %u, "
		    "key length %u, value length %u: partial rotary or "
		    "separate head sizes are not supported",
		    c->dim / c->n_heads, rope_dim, key_len, val_len);
		return TS_EFORMAT;
	}
	return TS_OK;
}

/* Binds tensor `name` as a [rows][cols] weight. */
static enum ts_err
bind_matrix(const struct gguf *g, const char *name, uint32_t rows,
    uint32_t cols, struct model_tensor *t, char *err, size_t errlen)
{
	const struct gguf_tensor *x = gguf_tensor_find(g, name);

	if (x == NULL) {
		snprintf(err, errlen, "tensor '%s' is missing", name);
		return TS_EFORMAT;
	}
	if (x->n_dims != 2 || x->dims[0] != cols || x->dims[1] != rows) {
		snprintf(err, errlen, "tensor '%s' has %u dimensions [%llu, "
		    "%llu], expected [%u, %u] (ne0 first)", name, x->n_dims,
		    (unsigned long long)x->dims[0],
		    (unsigned long long)(x->n_dims > 1 ? x->dims[1] : 1),
		    cols, rows);
		return TS_EFORMAT;
	}
	t->type = x->type;
	t->rows = rows;
	t->cols = cols;
	t->row_bytes = model_dtype_row_bytes(x->type, cols);
	t->data = x->data;
	return model_tensor_check(t, name, rows, cols, err, errlen);
}

/* Binds 1-D tensor `name` of n floats (converted to F32 when stored as
 * F16 or BF16: a norm's weights are read in full every pass). */
static enum ts_err
bind_vector(struct model *m, const struct gguf *g, const char *name,
    uint32_t n, const float **out, char *err, size_t errlen)
{
	const struct gguf_tensor *x = gguf_tensor_find(g, name);
	float *f;

	if (x == NULL) {
		snprintf(err, errlen, "tensor '%s' is missing", name);
		return TS_EFORMAT;
	}
	if (x->n_dims != 1 || x->dims[0] != n) {
		snprintf(err, errlen, "tensor '%s' has %u dimensions "
		    "[%llu, ...], expected [%u]", name, x->n_dims,
		    (unsigned long long)x->dims[0], n);
		return TS_EFORMAT;
	}
	if (x->type == MODEL_DTYPE_F32 && (uintptr_t)x->data % 4 == 0) {
		*out = x->data;
		return TS_OK;
	}
	if (x->type != MODEL_DTYPE_F32 && x->type != MODEL_DTYPE_F16 &&
	    x->type != MODEL_DTYPE_BF16) {
		snprintf(err, errlen, "tensor '%s' is %s; a norm must be f32, "
		    "f16 or bf16", name, model_dtype_name(x->type));
		return TS_EFORMAT;
	}
	f = model_own(m, xmalloc((size_t)n * sizeof(float)));
	if (x->type == MODEL_DTYPE_F32)
		memcpy(f, x->data, (size_t)n * sizeof(float));
	else
		quant_dequant_row((enum model_dtype)x->type, x->data, f, n);
	*out = f;
	return TS_OK;
}

static void
release_gguf(void *g)
{
	gguf_close(g);
}

/* Adds type t's name to the list in buf ("q8_0+q6_K") unless there. */
static void
note_type(char *buf, size_t len, uint32_t t)
{
	const char *n = model_dtype_name(t);
	size_t nl = strlen(n), at = strlen(buf);
	const char *p = buf;

	while ((p = strstr(p, n)) != NULL) {
		if ((p == buf || p[-1] == '+') && (p[nl] == '\0' ||
		    p[nl] == '+'))
			return;
		p += nl;
	}
	snprintf(buf + at, len - at, "%s%s", at > 0 ? "+" : "", n);
}

/* The weights of every layer, the embedding, the final norm, the
 * classifier (output.weight, or the embedding when absent: tied) and
 * Llama 3's rope_freqs. */
static enum ts_err
bind_weights(struct model *m, const struct gguf *g, char *types,
    size_t tlen, char *err, size_t errlen)
{
	const struct model_config *c = &m->cfg;
	const struct gguf_tensor *x;
	char name[96];
	uint32_t l, d = c->dim, h = c->hidden_dim, kv = c->kv_dim;
	enum ts_err rc;

	m->w.layers = xcalloc(c->n_layers, sizeof(*m->w.layers));
	if ((rc = bind_matrix(g, "token_embd.weight", c->vocab_size, d,
	    &m->w.token_embedding, err, errlen)) != TS_OK ||
	    (rc = bind_vector(m, g, "output_norm.weight", d,
	    &m->w.rms_final, err, errlen)) != TS_OK)
		return rc;
	for (l = 0; l < c->n_layers; l++) {
		struct model_layer *y = &m->w.layers[l];
		static const struct {
			const char *n;
			size_t off;
			int shape;      /* 0 [d][d], 1 [kv][d], 2 [h][d],
					 * 3 [d][h] */
		} mats[] = {
			{ "attn_q", offsetof(struct model_layer, wq), 0 },
			{ "attn_k", offsetof(struct model_layer, wk), 1 },
			{ "attn_v", offsetof(struct model_layer, wv), 1 },
			{ "attn_output", offsetof(struct model_layer, wo), 0 },
			{ "ffn_gate", offsetof(struct model_layer, w1), 2 },
			{ "ffn_down", offsetof(struct model_layer, w2), 3 },
			{ "ffn_up", offsetof(struct model_layer, w3), 2 },
		};
		size_t i;

		snprintf(name, sizeof(name), "blk.%u.attn_norm.weight", l);
		if ((rc = bind_vector(m, g, name, d, &y->rms_att, err,
		    errlen)) != TS_OK)
			return rc;
		snprintf(name, sizeof(name), "blk.%u.ffn_norm.weight", l);
		if ((rc = bind_vector(m, g, name, d, &y->rms_ffn, err,
		    errlen)) != TS_OK)
			return rc;
		for (i = 0; i < sizeof(mats) / sizeof(mats[0]); i++) {
			struct model_tensor *t = (struct model_tensor *)
			    ((char *)y + mats[i].off);
			uint32_t rows = mats[i].shape == 1 ? kv :
			    mats[i].shape == 2 ? h : d;
			uint32_t cols = mats[i].shape == 3 ? h : d;

			snprintf(name, sizeof(name), "blk.%u.%s.weight", l,
			    mats[i].n);
			if ((rc = bind_matrix(g, name, rows, cols, t, err,
			    errlen)) != TS_OK)
				return rc;
			note_type(types, tlen, t->type);
		}
	}
	if (gguf_tensor_find(g, "output.weight") != NULL) {
		if ((rc = bind_matrix(g, "output.weight", c->vocab_size, d,
		    &m->w.wcls, err, errlen)) != TS_OK)
			return rc;
	} else {
		m->w.wcls = m->w.token_embedding;
	}
	note_type(types, tlen, m->w.wcls.type);
	x = gguf_tensor_find(g, "rope_freqs.weight");
	if (x != NULL) {
		const float *ff;
		uint32_t i;

		if ((rc = bind_vector(m, g, "rope_freqs.weight",
		    c->head_size / 2, &ff, err, errlen)) != TS_OK)
			return rc;
		for (i = 0; i < c->head_size / 2; i++)
			if (!(ff[i] > 0.0f && ff[i] < 1e9f)) {
				snprintf(err, errlen, "rope_freqs.weight[%u] "
				    "is %g, not a positive factor", i,
				    (double)ff[i]);
				return TS_EFORMAT;
			}
		m->rope_freq_factors = ff;
	}
	return TS_OK;
}

/* Token texts llama.cpp treats as the end of a generation when they are
 * special tokens (llama-vocab.cpp, special_eog_ids). */
static const char *const gguf_eog_texts[] = {
	"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>",
	"<end_of_turn>", "<|endoftext|>", "<EOT>", "<|end_of_text|>",
};

/* An optional token id key: *id stays TOKENIZER_NONE when absent. */
static enum ts_err
get_id(const struct gguf *g, const char *k, uint32_t *id, char *err,
    size_t errlen)
{
	enum ts_err rc = gguf_get_u32(g, k, id, err, errlen);

	if (rc == TS_ENOENT) {
		*id = TOKENIZER_NONE;
		return TS_OK;
	}
	return rc;
}

/* An optional boolean key into *v (kept when absent). */
static enum ts_err
get_flag(const struct gguf *g, const char *k, int *v, char *err,
    size_t errlen)
{
	enum ts_err rc = gguf_get_bool(g, k, v, err, errlen);

	return rc == TS_ENOENT ? TS_OK : rc;
}

/* The tokenizer of tokenizer.ggml.*, and the EOS list and bos/eos
 * texts from it. */
static enum ts_err
read_tokenizer(struct model_file *f, const struct gguf *g, char *err,
    size_t errlen)
{
	struct tokenizer_vocab v;
	const char *s, *pre = NULL;
	const char **piece = NULL, **merge = NULL;
	size_t sl, *piece_len = NULL, *merge_len = NULL;
	float *score = NULL;
	int32_t *type = NULL;
	uint32_t et, eot = TOKENIZER_NONE, eom = TOKENIZER_NONE, i;
	uint64_t n, nm = 0;
	char prebuf[64];
	enum ts_err rc;

	memset(&v, 0, sizeof(v));
	rc = gguf_get_str(g, "tokenizer.ggml.model", &s, &sl, err, errlen);
	if (rc == TS_ENOENT) {
		snprintf(err, errlen, "key 'tokenizer.ggml.model' is missing: "
		    "the file has no tokenizer");
		return TS_EFORMAT;
	}
	if (rc != TS_OK)
		return rc;
	if (sl == 5 && memcmp(s, "llama", 5) == 0) {
		v.kind = TOKENIZER_SPM;
	} else if (sl == 4 && memcmp(s, "gpt2", 4) == 0) {
		v.kind = TOKENIZER_BPE;
	} else {
		snprintf(err, errlen, "tokenizer '%.*s' is not supported "
		    "(llama: SentencePiece, gpt2: byte-level BPE)",
		    (int)(sl > 32 ? 32 : sl), s);
		return TS_EFORMAT;
	}
	if ((rc = gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, err,
	    errlen)) != TS_OK) {
		if (rc == TS_ENOENT)
			snprintf(err, errlen, "key 'tokenizer.ggml.tokens' is "
			    "missing");
		return rc == TS_ENOENT ? TS_EFORMAT : rc;
	}
	if (n != f->m->cfg.vocab_size) {
		snprintf(err, errlen, "tokenizer.ggml.tokens has %llu tokens "
		    "but token_embd.weight has %u rows",
		    (unsigned long long)n, f->m->cfg.vocab_size);
		return TS_EFORMAT;
	}
	piece = xmalloc(n * sizeof(*piece));
	piece_len = xmalloc(n * sizeof(*piece_len));
	if ((rc = gguf_arr_str_fill(g, "tokenizer.ggml.tokens", piece,
	    piece_len, n, err, errlen)) != TS_OK)
		goto out;
	if (gguf_get_arr(g, "tokenizer.ggml.scores", &et, &nm, err, errlen) ==
	    TS_OK) {
		if (nm != n) {
			snprintf(err, errlen, "tokenizer.ggml.scores has %llu "
			    "entries for %llu tokens", (unsigned long long)nm,
			    (unsigned long long)n);
			rc = TS_EFORMAT;
			goto out;
		}
		score = xmalloc(n * sizeof(*score));
		if ((rc = gguf_arr_f32_fill(g, "tokenizer.ggml.scores", score,
		    n, err, errlen)) != TS_OK)
			goto out;
	}
	if (gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &nm, err,
	    errlen) == TS_OK) {
		if (nm != n) {
			snprintf(err, errlen, "tokenizer.ggml.token_type has "
			    "%llu entries for %llu tokens",
			    (unsigned long long)nm, (unsigned long long)n);
			rc = TS_EFORMAT;
			goto out;
		}
		type = xmalloc(n * sizeof(*type));
		if ((rc = gguf_arr_i32_fill(g, "tokenizer.ggml.token_type",
		    type, n, err, errlen)) != TS_OK)
			goto out;
	}
	nm = 0;
	if (gguf_get_arr(g, "tokenizer.ggml.merges", &et, &nm, err, errlen) ==
	    TS_OK && nm > 0) {
		if (nm > TOKENIZER_MAX_MERGES) {
			snprintf(err, errlen, "tokenizer.ggml.merges has %llu "
			    "merges, over the limit %u",
			    (unsigned long long)nm, TOKENIZER_MAX_MERGES);
			rc = TS_ELIMIT;
			goto out;
		}
		merge = xmalloc(nm * sizeof(*merge));
		merge_len = xmalloc(nm * sizeof(*merge_len));
		if ((rc = gguf_arr_str_fill(g, "tokenizer.ggml.merges", merge,
		    merge_len, nm, err, errlen)) != TS_OK)
			goto out;
	}
	if (gguf_get_str(g, "tokenizer.ggml.pre", &s, &sl, err, errlen) ==
	    TS_OK) {
		snprintf(prebuf, sizeof(prebuf), "%.*s",
		    (int)(sl > 60 ? 60 : sl), s);
		pre = prebuf;
	}
	v.n = (uint32_t)n;
	v.piece = piece;
	v.piece_len = piece_len;
	v.score = score;
	v.type = type;
	v.merge = merge;
	v.merge_len = merge_len;
	v.n_merges = (uint32_t)nm;
	v.pre = pre;
	/* defaults as llama-vocab.cpp's load(): SentencePiece adds BOS and
	 * a space prefix; byte-level BPE adds BOS for Llama 3's
	 * pre-tokenizer only; the keys override */
	v.add_bos = v.kind == TOKENIZER_SPM || (pre != NULL &&
	    (strcmp(pre, "llama-bpe") == 0 || strcmp(pre, "llama3") == 0 ||
	    strcmp(pre, "llama-v3") == 0));
	v.add_space_prefix = v.kind == TOKENIZER_SPM;
	if ((rc = get_id(g, "tokenizer.ggml.bos_token_id", &v.bos, err,
	    errlen)) != TS_OK ||
	    (rc = get_id(g, "tokenizer.ggml.eos_token_id", &v.eos, err,
	    errlen)) != TS_OK ||
	    (rc = get_id(g, "tokenizer.ggml.unknown_token_id", &v.unk, err,
	    errlen)) != TS_OK ||
	    (rc = get_id(g, "tokenizer.ggml.padding_token_id", &v.pad, err,
	    errlen)) != TS_OK ||
	    (rc = get_id(g, "tokenizer.ggml.eot_token_id", &eot, err,
	    errlen)) != TS_OK ||
	    (rc = get_id(g, "tokenizer.ggml.eom_token_id", &eom, err,
	    errlen)) != TS_OK ||
	    (rc = get_flag(g, "tokenizer.ggml.add_bos_token", &v.add_bos, err,
	    errlen)) != TS_OK ||
	    (rc = get_flag(g, "tokenizer.ggml.add_eos_token", &v.add_eos, err,
	    errlen)) != TS_OK ||
	    (rc = get_flag(g, "tokenizer.ggml.add_space_prefix",
	    &v.add_space_prefix, err, errlen)) != TS_OK)
		goto out;
	if (v.kind == TOKENIZER_SPM) {
		/* llama.cpp's SentencePiece defaults: <unk> 0, <s> 1, </s> 2 */
		if (v.bos == TOKENIZER_NONE)
			v.bos = 1;
		if (v.eos == TOKENIZER_NONE)
			v.eos = 2;
		if (v.unk == TOKENIZER_NONE)
			v.unk = 0;
	}
	rc = tokenizer_from_vocab(&f->tok, &v, err, errlen);
	if (rc != TS_OK)
		goto out;
	/* the EOS list: eos, eot, eom, and the special tokens llama.cpp
	 * ends a generation at */
	model_file_add_eos(f, v.eos, v.n);
	model_file_add_eos(f, eot, v.n);
	model_file_add_eos(f, eom, v.n);
	for (i = 0; i < sizeof(gguf_eog_texts) / sizeof(gguf_eog_texts[0]);
	    i++) {
		uint32_t id = tokenizer_token_id(f->tok, gguf_eog_texts[i],
		    strlen(gguf_eog_texts[i]));
		int t = tokenizer_token_type(f->tok, id);

		if (id != TOKENIZER_NONE && (t == TOKENIZER_TYPE_CONTROL ||
		    t == TOKENIZER_TYPE_USER_DEFINED))
			model_file_add_eos(f, id, v.n);
	}
	f->bos_text = v.bos < v.n ? model_file_strdup(piece[v.bos],
	    piece_len[v.bos]) : model_file_strdup("", 0);
	f->eos_text = v.eos < v.n ? model_file_strdup(piece[v.eos],
	    piece_len[v.eos]) : model_file_strdup("", 0);
	rc = TS_OK;
out:
	free(piece);
	free(piece_len);
	free(score);
	free(type);
	free(merge);
	free(merge_len);
	return rc;
}

/* general.sampling.* (llama.cpp's LLAMA_MODEL_META_KEY_SAMPLING_*). */
static enum ts_err
read_defaults(struct model_file *f, const struct gguf *g, char *err,
    size_t errlen)
{
	float x;
	int32_t k;
	enum ts_err rc;

	if ((rc = gguf_get_f32(g, "general.sampling.temp", &x, err,
	    errlen)) == TS_OK && x >= 0.0f && x <= 2.0f) {
		f->temperature = x;
		f->gen_has |= ENGINE_GIVEN_TEMPERATURE;
	} else if (rc != TS_ENOENT && rc != TS_OK) {
		return rc;
	}
	if ((rc = gguf_get_f32(g, "general.sampling.top_p", &x, err,
	    errlen)) == TS_OK && x > 0.0f && x <= 1.0f) {
		f->top_p = x;
		f->gen_has |= ENGINE_GIVEN_TOP_P;
	} else if (rc != TS_ENOENT && rc != TS_OK) {
		return rc;
	}
	if ((rc = gguf_get_i32(g, "general.sampling.top_k", &k, err,
	    errlen)) == TS_OK) {
		f->top_k = k > 0 ? (uint32_t)k : 0;
		f->gen_has |= ENGINE_GIVEN_TOP_K;
	} else if (rc != TS_ENOENT) {
		return rc;
	}
	return TS_OK;
}

enum ts_err
model_gguf_load(struct model_file *f, const char *path, char *err,
    size_t errlen)
{
	struct gguf *g = NULL;
	const struct gguf_tensor *emb;
	struct model *m;
	char why[512], types[128];
	const char *s;
	size_t sl, i;
	enum ts_err rc;

	rc = gguf_open(&g, path, err, errlen);
	if (rc != TS_OK)
		return rc;
	m = f->m = xcalloc(1, sizeof(*m));
	m->release = release_gguf;
	m->release_arg = g;
	f->format = "gguf";
	types[0] = '\0';
	rc = gguf_get_str(g, "general.architecture", &s, &sl, why,
	    sizeof(why));
	if (rc == TS_ENOENT) {
		snprintf(why, sizeof(why), "key 'general.architecture' is "
		    "missing");
		rc = TS_EFORMAT;
	}
	if (rc != TS_OK)
		goto fail;
	if (!(sl == 5 && memcmp(s, "llama", 5) == 0)) {
		const char *r = "its computation is not Llama's";

		for (i = 0; i < sizeof(gguf_refused) / sizeof(gguf_refused[0]);
		    i++)
			if (strlen(gguf_refused[i].arch) == sl &&
			    memcmp(gguf_refused[i].arch, s, sl) == 0)
				r = gguf_refused[i].why;
		snprintf(why, sizeof(why), "architecture '%.*s' is not "
		    "supported (llama only: Llama 2 and 3, TinyLlama, "
		    "SmolLM, Mistral 7B): %s", (int)(sl > 32 ? 32 : sl), s,
		    r);
		rc = TS_EFORMAT;
		goto fail;
	}
	if ((rc = read_config(g, &m->cfg, why, sizeof(why))) != TS_OK)
		goto fail;
	emb = gguf_tensor_find(g, "token_embd.weight");
	if (emb == NULL || emb->n_dims != 2 || emb->dims[1] == 0 ||
	    emb->dims[1] > MODEL_MAX_VOCAB) {
		snprintf(why, sizeof(why), "tensor 'token_embd.weight' is "
		    "missing or not [dim, vocab]");
		rc = TS_EFORMAT;
		goto fail;
	}
	m->cfg.vocab_size = (uint32_t)emb->dims[1];
	m->cfg.shared_classifier = gguf_tensor_find(g, "output.weight") ==
	    NULL;
	if ((rc = model_config_check(&m->cfg, why, sizeof(why))) != TS_OK ||
	    (rc = bind_weights(m, g, types, sizeof(types), why,
	    sizeof(why))) != TS_OK ||
	    (rc = read_tokenizer(f, g, why, sizeof(why))) != TS_OK ||
	    (rc = read_defaults(f, g, why, sizeof(why))) != TS_OK)
		goto fail;
	f->context_length = m->cfg.seq_len;
	f->weight_types = model_file_strdup(types, strlen(types));
	if (gguf_get_str(g, "tokenizer.chat_template", &s, &sl, why,
	    sizeof(why)) == TS_OK)
		f->chat_template = model_file_strdup(s, sl);
	if (gguf_get_str(g, "general.name", &s, &sl, why, sizeof(why)) ==
	    TS_OK && sl > 0 && sl < 256) {
		f->name = model_file_strdup(s, sl);
	} else {
		const char *b = strrchr(path, '/');

		b = b != NULL ? b + 1 : path;
		f->name = model_file_strdup(b, strlen(b));
	}
	return TS_OK;
fail:
	snprintf(err, errlen, "%s: %s", path, why);
	return rc;
}
