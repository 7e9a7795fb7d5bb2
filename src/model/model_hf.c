/*
 * model/model_hf.c - a Hugging Face folder as a model (model_file.h):
 * hf.h reads config.json, the safetensors and the other configs; this
 * binds the weights to the forward pass and takes the tokenizer
 * (tokenizer.json), EOS list, template and sampling defaults.
 *
 * Weights stay in the mapping except q_proj and k_proj, whose rows are
 * reordered from rotate_half's layout to the interleaved pairs the
 * forward pass rotates (hf_unpermute_rows, as convert_hf_to_gguf.py
 * does), and norms not stored as aligned F32, which are converted. So a
 * folder and the GGUF of the same weights compute the same floats.
 */
#include "model/model_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dtype.h"
#include "model/hf.h"
#include "model/model.h"
#include "model/quant.h"
#include "model/tokenizer.h"

static void
release_hf(void *h)
{
	hf_close(h);
}

/* Weight w of layer l as a [rows][cols] tensor; q and k (n_head heads)
 * reordered into memory m owns. */
static enum ts_err
bind_matrix(struct model *m, const struct hf_model *h, enum hf_weight w,
    uint32_t l, uint32_t n_head, struct model_tensor *t, char *err,
    size_t errlen)
{
	const struct st_tensor *x = hf_weight(h, w, l);
	char name[128];

	hf_weight_name(w, l, name, sizeof(name));
	if (x == NULL || x->n_dims != 2) {
		snprintf(err, errlen, "tensor '%s' is missing or not 2-D",
		    name);
		return TS_EFORMAT;
	}
	t->type = x->dtype;
	t->rows = (uint32_t)x->shape[0];
	t->cols = (uint32_t)x->shape[1];
	t->row_bytes = model_dtype_row_bytes(x->dtype, x->shape[1]);
	t->data = x->data;
	if (n_head > 0) {
		void *p = model_own(m, xmalloc(x->bytes));

		if (hf_unpermute_rows(x->data, p, x->dtype, n_head,
		    x->shape[0], x->shape[1]) != TS_OK) {
			snprintf(err, errlen, "tensor '%s': %llu rows are not "
			    "%u heads of pairs", name,
			    (unsigned long long)x->shape[0], n_head);
			return TS_EFORMAT;
		}
		t->data = p;
	} else if ((uintptr_t)x->data % (x->dtype == MODEL_DTYPE_F32 ? 4 :
	    2) != 0) {
		/* the format does not promise alignment */
		t->data = memcpy(model_own(m, xmalloc(x->bytes)), x->data,
		    x->bytes);
	}
	return TS_OK;
}

/* Weight w of layer l, a vector of n, as aligned F32. */
static enum ts_err
bind_vector(struct model *m, const struct hf_model *h, enum hf_weight w,
    uint32_t l, uint32_t n, const float **out, char *err, size_t errlen)
{
	const struct st_tensor *x = hf_weight(h, w, l);
	char name[128];
	float *f;

	hf_weight_name(w, l, name, sizeof(name));
	if (x == NULL || x->n_dims != 1 || x->shape[0] != n) {
		snprintf(err, errlen, "tensor '%s' is missing or not [%u]",
		    name, n);
		return TS_EFORMAT;
	}
	if (x->dtype == MODEL_DTYPE_F32 && (uintptr_t)x->data % 4 == 0) {
		*out = x->data;
		return TS_OK;
	}
	f = model_own(m, xmalloc((size_t)n * sizeof(float)));
	if (x->dtype == MODEL_DTYPE_F32)
		memcpy(f, x->data, (size_t)n * sizeof(float));
	else
		quant_dequant_row(x->dtype, x->data, f, n);
	*out = f;
	return TS_OK;
}

/*
 * Llama 3's rope scaling as divisors of each pair's frequency, as
 * convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors writes
 * rope_freqs.weight (after transformers' _compute_llama3_parameters):
 * wavelengths under original / high_freq_factor keep their frequency,
 * over original / low_freq_factor are divided by factor, and between
 * the two are blended.
 */
static float *
llama3_factors(const struct hf_config *c, uint32_t head_size)
{
	float *ff = xmalloc(head_size / 2 * sizeof(float));
	double lo = c->rope_original_max_position_embeddings /
	    c->rope_low_freq_factor;
	double hi = c->rope_original_max_position_embeddings /
	    c->rope_high_freq_factor;
	uint32_t i;

	for (i = 0; i < head_size / 2; i++) {
		double freq = 1.0 / pow(c->rope_theta, 2.0 * i / head_size);
		double wavelen = 2.0 * 3.14159265358979323846 / freq;

		if (wavelen < hi) {
			ff[i] = 1.0f;
		} else if (wavelen > lo) {
			ff[i] = (float)c->rope_factor;
		} else {
			double smooth = (c->rope_original_max_position_embeddings /
			    wavelen - c->rope_low_freq_factor) /
			    (c->rope_high_freq_factor -
			    c->rope_low_freq_factor);

			ff[i] = (float)(1.0 / ((1.0 - smooth) /
			    c->rope_factor + smooth));
		}
	}
	return ff;
}

static enum ts_err
bind_weights(struct model *m, const struct hf_model *h, char *err,
    size_t errlen)
{
	const struct model_config *c = &m->cfg;
	uint32_t l;
	enum ts_err rc;

	m->w.layers = xcalloc(c->n_layers, sizeof(*m->w.layers));
	if ((rc = bind_matrix(m, h, HF_W_EMBED, 0, 0, &m->w.token_embedding,
	    err, errlen)) != TS_OK ||
	    (rc = bind_vector(m, h, HF_W_NORM, 0, c->dim, &m->w.rms_final,
	    err, errlen)) != TS_OK)
		return rc;
	for (l = 0; l < c->n_layers; l++) {
		struct model_layer *y = &m->w.layers[l];

		if ((rc = bind_vector(m, h, HF_W_ATTN_NORM, l, c->dim,
		    &y->rms_att, err, errlen)) != TS_OK ||
		    (rc = bind_vector(m, h, HF_W_FFN_NORM, l, c->dim,
		    &y->rms_ffn, err, errlen)) != TS_OK ||
		    (rc = bind_matrix(m, h, HF_W_Q, l, c->n_heads, &y->wq, err,
		    errlen)) != TS_OK ||
		    (rc = bind_matrix(m, h, HF_W_K, l, c->n_kv_heads, &y->wk,
		    err, errlen)) != TS_OK ||
		    (rc = bind_matrix(m, h, HF_W_V, l, 0, &y->wv, err,
		    errlen)) != TS_OK ||
		    (rc = bind_matrix(m, h, HF_W_O, l, 0, &y->wo, err,
		    errlen)) != TS_OK ||
		    (rc = bind_matrix(m, h, HF_W_GATE, l, 0, &y->w1, err,
		    errlen)) != TS_OK ||
		    (rc = bind_matrix(m, h, HF_W_DOWN, l, 0, &y->w2, err,
		    errlen)) != TS_OK ||
		    (rc = bind_matrix(m, h, HF_W_UP, l, 0, &y->w3, err,
		    errlen)) != TS_OK)
			return rc;
		if ((rc = model_tensor_check(&y->wq, "q_proj", c->dim, c->dim,
		    err, errlen)) != TS_OK ||
		    (rc = model_tensor_check(&y->wk, "k_proj", c->kv_dim,
		    c->dim, err, errlen)) != TS_OK ||
		    (rc = model_tensor_check(&y->wv, "v_proj", c->kv_dim,
		    c->dim, err, errlen)) != TS_OK ||
		    (rc = model_tensor_check(&y->wo, "o_proj", c->dim, c->dim,
		    err, errlen)) != TS_OK ||
		    (rc = model_tensor_check(&y->w1, "gate_proj",
		    c->hidden_dim, c->dim, err, errlen)) != TS_OK ||
		    (rc = model_tensor_check(&y->w2, "down_proj", c->dim,
		    c->hidden_dim, err, errlen)) != TS_OK ||
		    (rc = model_tensor_check(&y->w3, "up_proj", c->hidden_dim,
		    c->dim, err, errlen)) != TS_OK)
			return rc;
	}
	if (c->shared_classifier)
		m->w.wcls = m->w.token_embedding;
	else if ((rc = bind_matrix(m, h, HF_W_LM_HEAD, 0, 0, &m->w.wcls, err,
	    errlen)) != TS_OK)
		return rc;
	if ((rc = model_tensor_check(&m->w.token_embedding, "embed_tokens",
	    c->vocab_size, c->dim, err, errlen)) != TS_OK ||
	    (rc = model_tensor_check(&m->w.wcls, "lm_head", c->vocab_size,
	    c->dim, err, errlen)) != TS_OK)
		return rc;
	return TS_OK;
}

enum ts_err
model_hf_load(struct model_file *f, const char *dir, char *err,
    size_t errlen)
{
	struct hf_model *h = NULL;
	const struct hf_config *hc;
	struct model *m;
	const uint32_t *eos;
	uint32_t n_eos, i;
	char why[512];
	const char *b;
	size_t bl;
	enum ts_err rc;

	rc = hf_open(&h, dir, err, errlen);
	if (rc != TS_OK)
		return rc;
	m = f->m = xcalloc(1, sizeof(*m));
	m->release = release_hf;
	m->release_arg = h;
	f->format = "hf";
	hc = &h->cfg;
	m->cfg.dim = hc->hidden_size;
	m->cfg.hidden_dim = hc->intermediate_size;
	m->cfg.n_layers = hc->num_hidden_layers;
	m->cfg.n_heads = hc->num_attention_heads;
	m->cfg.n_kv_heads = hc->num_key_value_heads;
	m->cfg.vocab_size = hc->vocab_size;
	m->cfg.seq_len = hc->max_position_embeddings;
	m->cfg.shared_classifier = hc->tie_word_embeddings;
	m->cfg.rms_eps = (float)hc->rms_norm_eps;
	m->cfg.rope_theta = (float)hc->rope_theta;
	if (hc->rope_scaling == HF_ROPE_LINEAR)
		m->cfg.rope_freq_scale = (float)(1.0 / hc->rope_factor);
	if ((rc = model_config_check(&m->cfg, why, sizeof(why))) != TS_OK ||
	    (rc = bind_weights(m, h, why, sizeof(why))) != TS_OK)
		goto fail;
	if (hc->rope_scaling == HF_ROPE_LLAMA3)
		m->rope_freq_factors = model_own(m, llama3_factors(hc,
		    m->cfg.head_size));
	if (h->tokenizer_json == NULL) {
		snprintf(why, sizeof(why), "no tokenizer.json (a "
		    "SentencePiece tokenizer.model alone is not read)");
		rc = TS_EFORMAT;
		goto fail;
	}
	rc = tokenizer_from_json(&f->tok, h->tokenizer_json,
	    h->tok.has_add_bos_token ? h->tok.add_bos_token : -1, err,
	    errlen);
	if (rc != TS_OK)
		return rc;
	if (tokenizer_vocab_size(f->tok) > m->cfg.vocab_size) {
		snprintf(why, sizeof(why), "tokenizer.json has %u tokens, "
		    "more than config.json's vocab_size %u",
		    tokenizer_vocab_size(f->tok), m->cfg.vocab_size);
		rc = TS_EFORMAT;
		goto fail;
	}
	eos = hf_eos_ids(h, &n_eos);
	for (i = 0; i < n_eos; i++)
		model_file_add_eos(f, eos[i], m->cfg.vocab_size);
	if (f->n_eos == 0 && tokenizer_eos(f->tok) != TOKENIZER_NONE)
		model_file_add_eos(f, tokenizer_eos(f->tok),
		    m->cfg.vocab_size);
	if (h->tok.chat_template != NULL)
		f->chat_template = model_file_strdup(h->tok.chat_template,
		    strlen(h->tok.chat_template));
	b = h->tok.bos_token;
	if (b == NULL && tokenizer_bos(f->tok) != TOKENIZER_NONE)
		b = tokenizer_piece(f->tok, tokenizer_bos(f->tok), &bl);
	f->bos_text = b != NULL ? model_file_strdup(b, strlen(b)) :
	    model_file_strdup("", 0);
	b = h->tok.eos_token;
	if (b == NULL && tokenizer_eos(f->tok) != TOKENIZER_NONE)
		b = tokenizer_piece(f->tok, tokenizer_eos(f->tok), &bl);
	f->eos_text = b != NULL ? model_file_strdup(b, strlen(b)) :
	    model_file_strdup("", 0);
	/* generation_config.json's sampling, as vLLM's --generation-config
	 * auto takes it (whatever do_sample says) */
	if (h->gen.has_temperature) {
		f->temperature = h->gen.temperature;
		f->gen_has |= ENGINE_GIVEN_TEMPERATURE;
	}
	if (h->gen.has_top_p) {
		f->top_p = h->gen.top_p;
		f->gen_has |= ENGINE_GIVEN_TOP_P;
	}
	if (h->gen.has_top_k) {
		f->top_k = h->gen.top_k;
		f->gen_has |= ENGINE_GIVEN_TOP_K;
	}
	f->context_length = m->cfg.seq_len;
	f->weight_types = model_file_strdup(model_dtype_name(
	    m->w.layers[0].wq.type), strlen(model_dtype_name(
	    m->w.layers[0].wq.type)));
	{
		char name[256];
		size_t n = strlen(dir), s;

		while (n > 1 && dir[n - 1] == '/')
			n--;
		s = n;
		while (s > 0 && dir[s - 1] != '/')
			s--;
		snprintf(name, sizeof(name), "%.*s", (int)(n - s), dir + s);
		f->name = model_file_strdup(name, strlen(name));
	}
	return TS_OK;
fail:
	snprintf(err, errlen, "%s: %s", dir, why);
	return rc;
}
