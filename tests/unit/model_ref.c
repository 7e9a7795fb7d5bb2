/*
 * model_ref.c - the reference forward pass and tokenizer (model_ref.h).
 */
#include "model_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct model_ref {
	/* config */
	int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size;
	int seq_len, shared;
	/* weights: the whole file after the header */
	float *data;
	float *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3;
	float *rms_final, *wcls;
	/* state */
	float *x, *xb, *xb2, *hb, *hb2, *q, *k, *v, *att;
	float *key_cache, *value_cache;  /* [layer][seq_len][kv_dim] */
	/* tokenizer */
	char **vocab;                    /* NUL-terminated pieces */
	int *vocab_len;
	float *scores;
	int max_token_length;
};

uint32_t
model_ref_vocab_size(const struct model_ref *r)
{
	return (uint32_t)r->vocab_size;
}

static int
load_tokenizer(struct model_ref *r, const char *path)
{
	FILE *f = fopen(path, "rb");
	int i;

	if (f == NULL)
		return -1;
	if (fread(&r->max_token_length, 4, 1, f) != 1)
		goto fail;
	r->vocab = calloc((size_t)r->vocab_size, sizeof(char *));
	r->vocab_len = calloc((size_t)r->vocab_size, sizeof(int));
	r->scores = calloc((size_t)r->vocab_size, sizeof(float));
	for (i = 0; i < r->vocab_size; i++) {
		int len;

		if (fread(&r->scores[i], 4, 1, f) != 1 ||
		    fread(&len, 4, 1, f) != 1)
			goto fail;
		r->vocab[i] = calloc((size_t)len + 1, 1);
		r->vocab_len[i] = len;
		if (fread(r->vocab[i], 1, (size_t)len, f) != (size_t)len)
			goto fail;
	}
	fclose(f);
	return 0;
fail:
	fclose(f);
	return -1;
}

struct model_ref *
model_ref_load(const char *checkpoint, const char *tokenizer)
{
	struct model_ref *r = calloc(1, sizeof(*r));
	FILE *f = fopen(checkpoint, "rb");
	int hdr[7], head_size, kv_dim;
	long size;
	float *p;

	if (f == NULL || fread(hdr, sizeof(hdr), 1, f) != 1)
		goto fail;
	r->dim = hdr[0];
	r->hidden_dim = hdr[1];
	r->n_layers = hdr[2];
	r->n_heads = hdr[3];
	r->n_kv_heads = hdr[4];
	r->shared = hdr[5] > 0;
	r->vocab_size = abs(hdr[5]);
	r->seq_len = hdr[6];
	fseek(f, 0, SEEK_END);
	size = ftell(f) - (long)sizeof(hdr);
	fseek(f, (long)sizeof(hdr), SEEK_SET);
	r->data = malloc((size_t)size);
	if (fread(r->data, 1, (size_t)size, f) != (size_t)size)
		goto fail;
	fclose(f);
	f = NULL;

	head_size = r->dim / r->n_heads;
	kv_dim = head_size * r->n_kv_heads;
	p = r->data;
	r->emb = p;
	p += r->vocab_size * r->dim;
	r->rms_att = p;
	p += r->n_layers * r->dim;
	r->wq = p;
	p += r->n_layers * r->dim * r->dim;
	r->wk = p;
	p += r->n_layers * r->dim * kv_dim;
	r->wv = p;
	p += r->n_layers * r->dim * kv_dim;
	r->wo = p;
	p += r->n_layers * r->dim * r->dim;
	r->rms_ffn = p;
	p += r->n_layers * r->dim;
	r->w1 = p;
	p += r->n_layers * r->dim * r->hidden_dim;
	r->w2 = p;
	p += r->n_layers * r->hidden_dim * r->dim;
	r->w3 = p;
	p += r->n_layers * r->dim * r->hidden_dim;
	r->rms_final = p;
	p += r->dim;
	p += r->seq_len * head_size / 2;    /* freq_cis_real */
	p += r->seq_len * head_size / 2;    /* freq_cis_imag */
	r->wcls = r->shared ? r->emb : p;

	r->x = calloc((size_t)r->dim, sizeof(float));
	r->xb = calloc((size_t)r->dim, sizeof(float));
	r->xb2 = calloc((size_t)r->dim, sizeof(float));
	r->hb = calloc((size_t)r->hidden_dim, sizeof(float));
	r->hb2 = calloc((size_t)r->hidden_dim, sizeof(float));
	r->q = calloc((size_t)r->dim, sizeof(float));
	r->k = calloc((size_t)kv_dim, sizeof(float));
	r->v = calloc((size_t)kv_dim, sizeof(float));
	r->att = calloc((size_t)r->seq_len, sizeof(float));
	r->key_cache = calloc((size_t)r->n_layers * r->seq_len * kv_dim,
	    sizeof(float));
	r->value_cache = calloc((size_t)r->n_layers * r->seq_len * kv_dim,
	    sizeof(float));
	if (load_tokenizer(r, tokenizer) != 0)
		goto fail;
	return r;
fail:
	if (f != NULL)
		fclose(f);
	model_ref_free(r);
	return NULL;
}

void
model_ref_free(struct model_ref *r)
{
	int i;

	if (r == NULL)
		return;
	free(r->data);
	free(r->x);
	free(r->xb);
	free(r->xb2);
	free(r->hb);
	free(r->hb2);
	free(r->q);
	free(r->k);
	free(r->v);
	free(r->att);
	free(r->key_cache);
	free(r->value_cache);
	if (r->vocab != NULL)
		for (i = 0; i < r->vocab_size; i++)
			free(r->vocab[i]);
	free(r->vocab);
	free(r->vocab_len);
	free(r->scores);
	free(r);
}

void
model_ref_reset(struct model_ref *r)
{
	(void)r;    /* positions are written before they are read */
}

/* out[d] = W[d][n] x[n] */
static void
ref_matmul(float *out, const float *x, const float *w, int n, int d)
{
	int i, j;

	for (i = 0; i < d; i++) {
		float val = 0.0f;

		for (j = 0; j < n; j++)
			val += w[i * n + j] * x[j];
		out[i] = val;
	}
}

static void
ref_rmsnorm(float *o, const float *x, const float *w, int n)
{
	float ss = 0.0f;
	int j;

	for (j = 0; j < n; j++)
		ss += x[j] * x[j];
	ss /= (float)n;
	ss += 1e-5f;
	ss = 1.0f / sqrtf(ss);
	for (j = 0; j < n; j++)
		o[j] = w[j] * (ss * x[j]);
}

static void
ref_softmax(float *x, int n)
{
	float max = x[0], sum = 0.0f;
	int i;

	for (i = 1; i < n; i++)
		if (x[i] > max)
			max = x[i];
	for (i = 0; i < n; i++) {
		x[i] = expf(x[i] - max);
		sum += x[i];
	}
	for (i = 0; i < n; i++)
		x[i] /= sum;
}

void
model_ref_forward(struct model_ref *r, uint32_t token, uint32_t upos,
    float *logits)
{
	int dim = r->dim, hidden = r->hidden_dim;
	int head_size = dim / r->n_heads;
	int kv_dim = head_size * r->n_kv_heads;
	int kv_mul = r->n_heads / r->n_kv_heads;
	int pos = (int)upos;
	int l, i, h, t;

	memcpy(r->x, r->emb + (size_t)token * dim, (size_t)dim *
	    sizeof(float));
	for (l = 0; l < r->n_layers; l++) {
		float *kc = r->key_cache + (size_t)l * r->seq_len * kv_dim;
		float *vc = r->value_cache + (size_t)l * r->seq_len * kv_dim;

		ref_rmsnorm(r->xb, r->x, r->rms_att + l * dim, dim);
		ref_matmul(r->q, r->xb, r->wq + l * dim * dim, dim, dim);
		ref_matmul(r->k, r->xb, r->wk + l * dim * kv_dim, dim, kv_dim);
		ref_matmul(r->v, r->xb, r->wv + l * dim * kv_dim, dim, kv_dim);

		/* RoPE: rotate each pair (i, i+1) of q, and of k below
		 * kv_dim, by pos * 10000^(-(i % head_size) / head_size) */
		for (i = 0; i < dim; i += 2) {
			int head_dim = i % head_size;
			float freq = 1.0f / powf(10000.0f,
			    (float)head_dim / (float)head_size);
			float val = (float)pos * freq;
			float fcr = cosf(val), fci = sinf(val);
			float q0 = r->q[i], q1 = r->q[i + 1];

			r->q[i] = q0 * fcr - q1 * fci;
			r->q[i + 1] = q0 * fci + q1 * fcr;
			if (i < kv_dim) {
				float k0 = r->k[i], k1 = r->k[i + 1];

				r->k[i] = k0 * fcr - k1 * fci;
				r->k[i + 1] = k0 * fci + k1 * fcr;
			}
		}
		memcpy(kc + pos * kv_dim, r->k, (size_t)kv_dim *
		    sizeof(float));
		memcpy(vc + pos * kv_dim, r->v, (size_t)kv_dim *
		    sizeof(float));

		for (h = 0; h < r->n_heads; h++) {
			float *q = r->q + h * head_size;
			float *xb = r->xb + h * head_size;
			int kvh = h / kv_mul;

			for (t = 0; t <= pos; t++) {
				float *k = kc + t * kv_dim + kvh * head_size;
				float score = 0.0f;

				for (i = 0; i < head_size; i++)
					score += q[i] * k[i];
				r->att[t] = score / sqrtf((float)head_size);
			}
			ref_softmax(r->att, pos + 1);
			for (i = 0; i < head_size; i++)
				xb[i] = 0.0f;
			for (t = 0; t <= pos; t++) {
				float *v = vc + t * kv_dim + kvh * head_size;

				for (i = 0; i < head_size; i++)
					xb[i] += r->att[t] * v[i];
			}
		}
		ref_matmul(r->xb2, r->xb, r->wo + l * dim * dim, dim, dim);
		for (i = 0; i < dim; i++)
			r->x[i] += r->xb2[i];

		ref_rmsnorm(r->xb, r->x, r->rms_ffn + l * dim, dim);
		ref_matmul(r->hb, r->xb, r->w1 + l * dim * hidden, dim,
		    hidden);
		ref_matmul(r->hb2, r->xb, r->w3 + l * dim * hidden, dim,
		    hidden);
		for (i = 0; i < hidden; i++) {
			float val = r->hb[i];

			val *= 1.0f / (1.0f + expf(-val));   /* silu */
			r->hb[i] = val * r->hb2[i];
		}
		ref_matmul(r->xb, r->hb, r->w2 + l * dim * hidden, hidden,
		    dim);
		for (i = 0; i < dim; i++)
			r->x[i] += r->xb[i];
	}
	ref_rmsnorm(r->x, r->x, r->rms_final, dim);
	ref_matmul(logits, r->x, r->wcls, dim, r->vocab_size);
}

uint32_t
model_ref_argmax(const float *v, uint32_t n)
{
	uint32_t i, best = 0;

	for (i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

/* The first id whose piece is (s, n), or -1: run.c's str_lookup, by a
 * linear search. */
static int
ref_lookup(const struct model_ref *r, const char *s, size_t n)
{
	int i;

	for (i = 0; i < r->vocab_size; i++)
		if ((size_t)r->vocab_len[i] == n &&
		    memcmp(r->vocab[i], s, n) == 0)
			return i;
	return -1;
}

size_t
model_ref_encode(const struct model_ref *r, const char *text, size_t len,
    int bos, uint32_t *ids)
{
	char *buf = malloc((size_t)r->max_token_length * 2 + 8);
	int *tok = malloc((len + 2) * sizeof(int));
	size_t n = 0, i, k, out = 0, str_len = 0;

	if (len > 0) {
		int sp = ref_lookup(r, " ", 1);

		tok[n++] = sp >= 0 ? sp : ' ' + 3;
	}
	/* each UTF-8 character, or its bytes as byte tokens */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		int id;

		if ((c & 0xC0) != 0x80)
			str_len = 0;
		buf[str_len++] = (char)c;
		if (i + 1 < len && ((unsigned char)text[i + 1] & 0xC0) ==
		    0x80 && str_len < 4)
			continue;
		id = ref_lookup(r, buf, str_len);
		if (id != -1)
			tok[n++] = id;
		else
			for (k = 0; k < str_len; k++)
				tok[n++] = (unsigned char)buf[k] + 3;
		str_len = 0;
	}
	/* merge the best pair (leftmost on ties) until none is left */
	for (;;) {
		float best_score = -1e10f;
		int best_id = -1;
		size_t best_idx = 0;

		for (i = 0; i + 1 < n; i++) {
			int a = tok[i], b = tok[i + 1], id;
			size_t la = (size_t)r->vocab_len[a];
			size_t lb = (size_t)r->vocab_len[b];
			char *cat = malloc(la + lb + 1);

			memcpy(cat, r->vocab[a], la);
			memcpy(cat + la, r->vocab[b], lb);
			id = ref_lookup(r, cat, la + lb);
			free(cat);
			if (id != -1 && r->scores[id] > best_score) {
				best_score = r->scores[id];
				best_id = id;
				best_idx = i;
			}
		}
		if (best_id == -1)
			break;
		tok[best_idx] = best_id;
		for (i = best_idx + 1; i + 1 < n; i++)
			tok[i] = tok[i + 1];
		n--;
	}
	if (bos)
		ids[out++] = 1;
	for (i = 0; i < n; i++)
		ids[out++] = (uint32_t)tok[i];
	free(buf);
	free(tok);
	return out;
}
