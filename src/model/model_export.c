/*
 * model/model_export.c - a llama2.c model written as GGUF or as a
 * Hugging Face folder (model_export.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "model/model_export.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "backend/backend.h"
#include "model/dtype.h"
#include "model/gguf.h"
#include "model/hf.h"
#include "model/model.h"
#include "model/quant.h"
#include "model/tokenizer.h"

/* SentencePiece's space, U+2581 */
#define SPM_SPACE "\xe2\x96\x81"

static char *
model_export_strdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

/* tokenizer.bin's vocabulary (tokenizer.h's format), spaces as U+2581 */
struct export_vocab {
	uint32_t n;
	char **piece;
	size_t *len;
	float *score;
	int32_t *type;
	char **merge;            /* BPE: "a b", rank order */
	size_t *merge_len;
	uint32_t n_merges;
};

static void
vocab_free(struct export_vocab *v)
{
	uint32_t i;

	for (i = 0; v->piece != NULL && i < v->n; i++)
		free(v->piece[i]);
	for (i = 0; v->merge != NULL && i < v->n_merges; i++)
		free(v->merge[i]);
	free(v->merge);
	free(v->merge_len);
	free(v->piece);
	free(v->len);
	free(v->score);
	free(v->type);
	memset(v, 0, sizeof(*v));
}

/* The n tokens of tokenizer.bin at path (tokenizer.h reads it), spaces
 * written as U+2581. */
static enum ts_err
vocab_read(struct export_vocab *v, const char *path, uint32_t n, char *err,
    size_t errlen)
{
	struct tokenizer *t;
	enum ts_err rc;
	uint32_t i;

	memset(v, 0, sizeof(*v));
	rc = tokenizer_open(&t, path, n, err, errlen);
	if (rc != TS_OK)
		return rc;
	v->piece = xcalloc(n, sizeof(*v->piece));
	v->len = xcalloc(n, sizeof(*v->len));
	v->score = xcalloc(n, sizeof(*v->score));
	v->type = xcalloc(n, sizeof(*v->type));
	v->n = n;
	for (i = 0; i < n; i++) {
		size_t len, k, o;
		const char *p = tokenizer_piece(t, i, &len);

		/* each space becomes three bytes */
		v->piece[i] = xmalloc(3 * len + 1);
		for (k = 0, o = 0; k < len; k++) {
			if (p[k] == ' ') {
				memcpy(v->piece[i] + o, SPM_SPACE, 3);
				o += 3;
			} else {
				v->piece[i][o++] = p[k];
			}
		}
		v->piece[i][o] = '\0';
		v->len[i] = o;
		v->score[i] = tokenizer_score(t, i);
		v->type[i] = tokenizer_token_type(t, i);
	}
	tokenizer_free(t);
	return TS_OK;
}

uint32_t
model_export_json_tokens(const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	json_t *vocab, *added, *t;
	const char *k;
	size_t i;
	json_int_t max = -1;

	if (root == NULL) {
		snprintf(err, errlen, "%s: line %d: %s", path, je.line,
		    je.text);
		return 0;
	}
	vocab = json_object_get(json_object_get(root, "model"), "vocab");
	added = json_object_get(root, "added_tokens");
	json_object_foreach(vocab, k, t)
		if (json_is_integer(t) && json_integer_value(t) > max)
			max = json_integer_value(t);
	json_array_foreach(added, i, t) {
		json_t *id = json_object_get(t, "id");

		if (json_is_integer(id) && json_integer_value(id) > max)
			max = json_integer_value(id);
	}
	json_decref(root);
	if (max < 0 || max >= (json_int_t)MODEL_MAX_VOCAB) {
		snprintf(err, errlen, "%s: no model.vocab of a byte-level BPE "
		    "(or over %u tokens)", path, MODEL_MAX_VOCAB);
		return 0;
	}
	return (uint32_t)max + 1;
}

/* The vocabulary and merges of a byte-level BPE tokenizer.json, n tokens
 * (ids without a token get "<unused_ID>", type unused). */
static enum ts_err
vocab_json(struct export_vocab *v, const char *path, uint32_t n, char *err,
    size_t errlen)
{
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	json_t *model, *vocab, *merges, *added, *t;
	const char *k;
	size_t i;
	uint32_t id;

	memset(v, 0, sizeof(*v));
	if (root == NULL) {
		snprintf(err, errlen, "%s: line %d: %s", path, je.line,
		    je.text);
		return TS_EFORMAT;
	}
	model = json_object_get(root, "model");
	vocab = json_object_get(model, "vocab");
	merges = json_object_get(model, "merges");
	added = json_object_get(root, "added_tokens");
	if (!json_is_object(vocab) || !json_is_array(merges)) {
		json_decref(root);
		snprintf(err, errlen, "%s: not a BPE tokenizer.json", path);
		return TS_EFORMAT;
	}
	v->n = n;
	v->piece = xcalloc(n, sizeof(*v->piece));
	v->len = xcalloc(n, sizeof(*v->len));
	v->score = xcalloc(n, sizeof(*v->score));
	v->type = xcalloc(n, sizeof(*v->type));
	json_object_foreach(vocab, k, t) {
		id = (uint32_t)json_integer_value(t);
		if (json_is_integer(t) && id < n && v->piece[id] == NULL) {
			v->piece[id] = model_export_strdup(k);
			v->len[id] = strlen(k);
			v->type[id] = 1;
		}
	}
	json_array_foreach(added, i, t) {
		json_t *jid = json_object_get(t, "id");
		const char *c = json_string_value(json_object_get(t,
		    "content"));

		id = (uint32_t)json_integer_value(jid);
		if (!json_is_integer(jid) || id >= n || c == NULL)
			continue;
		free(v->piece[id]);
		v->piece[id] = model_export_strdup(c);
		v->len[id] = strlen(c);
		v->type[id] = json_is_true(json_object_get(t, "special")) ?
		    3 : 4;
	}
	for (id = 0; id < n; id++)
		if (v->piece[id] == NULL) {
			char b[32];

			snprintf(b, sizeof(b), "<unused_%u>", id);
			v->piece[id] = model_export_strdup(b);
			v->len[id] = strlen(b);
			v->type[id] = 5;
		}
	v->n_merges = (uint32_t)json_array_size(merges);
	v->merge = xcalloc(v->n_merges + 1, sizeof(*v->merge));
	v->merge_len = xcalloc(v->n_merges + 1, sizeof(*v->merge_len));
	json_array_foreach(merges, i, t) {
		char *m;

		if (json_is_string(t)) {
			m = model_export_strdup(json_string_value(t));
		} else {
			const char *a = json_string_value(json_array_get(t, 0));
			const char *b = json_string_value(json_array_get(t, 1));

			m = xmalloc(strlen(a ? a : "") + strlen(b ? b : "") + 2);
			sprintf(m, "%s %s", a ? a : "", b ? b : "");
		}
		v->merge[i] = m;
		v->merge_len[i] = strlen(m);
	}
	json_decref(root);
	return TS_OK;
}

/* The id of the piece with text s in v, or UINT32_MAX. */
static uint32_t
vocab_id(const struct export_vocab *v, const char *s)
{
	uint32_t i;

	for (i = 0; s != NULL && i < v->n; i++)
		if (v->len[i] == strlen(s) && memcmp(v->piece[i], s,
		    v->len[i]) == 0)
			return i;
	return UINT32_MAX;
}

/* The rows of t converted to `type` (malloc'd), or NULL with err. */
static void *
convert(const struct model_tensor *t, uint32_t type, char *err,
    size_t errlen)
{
	uint64_t rb = model_dtype_row_bytes(type, t->cols);
	unsigned char *out;
	uint32_t r;

	if (rb == 0) {
		snprintf(err, errlen, "%s needs widths that are multiples of "
		    "%u; a matrix is %u wide", model_dtype_name(type),
		    model_dtype_info(type) != NULL ?
		    model_dtype_info(type)->block : 0, t->cols);
		return NULL;
	}
	out = xmalloc(rb * t->rows);
	for (r = 0; r < t->rows; r++) {
		const float *src = (const float *)((const char *)t->data +
		    (size_t)r * t->row_bytes);

		if (type == MODEL_DTYPE_F32)
			memcpy(out + r * rb, src, rb);
		else
			quant_quantize_row((enum model_dtype)type, src,
			    out + r * rb, t->cols);
	}
	return out;
}

/* Frees what the writers below keep until the file is written. */
struct export_keep {
	void **p;
	size_t n;
};

static void *
keep(struct export_keep *k, void *p)
{
	k->p = xrealloc(k->p, (k->n + 1) * sizeof(*k->p));
	k->p[k->n++] = p;
	return p;
}

static void
keep_free(struct export_keep *k)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		free(k->p[i]);
	free(k->p);
}

static enum ts_err
add_matrix(struct gguf_writer *w, struct export_keep *k, const char *name,
    const struct model_tensor *t, uint32_t type, char *err, size_t errlen)
{
	uint64_t dims[2] = { t->cols, t->rows };
	void *d = convert(t, type, err, errlen);

	if (d == NULL)
		return TS_EINVAL;
	keep(k, d);
	return gguf_writer_add_tensor(w, name, type, 2, dims, d);
}

static void
add_vector(struct gguf_writer *w, const char *name, const float *v,
    uint32_t n)
{
	uint64_t dims[1] = { n };

	(void)gguf_writer_add_tensor(w, name, MODEL_DTYPE_F32, 1, dims, v);
}

enum ts_err
model_export_gguf(const struct model *m, const char *tokenizer_path,
    const struct model_export *x, const char *path, char *err,
    size_t errlen)
{
	const struct model_config *c = &m->cfg;
	struct gguf_writer *w = gguf_writer_new(0);
	struct export_vocab v;
	struct export_keep k = { NULL, 0 };
	char name[96];
	uint32_t l;
	enum ts_err rc;

	if (x->type != MODEL_DTYPE_F32 && !quant_supported(x->type)) {
		snprintf(err, errlen, "type %s is not one the forward pass "
		    "computes", model_dtype_name(x->type));
		gguf_writer_free(w);
		return TS_EINVAL;
	}
	rc = x->tokenizer_json != NULL ? vocab_json(&v, x->tokenizer_json,
	    c->vocab_size, err, errlen) : vocab_read(&v, tokenizer_path,
	    c->vocab_size, err, errlen);
	if (rc != TS_OK) {
		gguf_writer_free(w);
		return rc;
	}
	gguf_writer_set_str(w, "general.architecture", "llama");
	if (x->name != NULL)
		gguf_writer_set_str(w, "general.name", x->name);
	if (x->type != MODEL_DTYPE_F32)
		gguf_writer_set_u32(w, "general.quantization_version", 2);
	gguf_writer_set_u32(w, "llama.context_length", c->seq_len);
	gguf_writer_set_u32(w, "llama.embedding_length", c->dim);
	gguf_writer_set_u32(w, "llama.block_count", c->n_layers);
	gguf_writer_set_u32(w, "llama.feed_forward_length", c->hidden_dim);
	gguf_writer_set_u32(w, "llama.rope.dimension_count", c->head_size);
	gguf_writer_set_u32(w, "llama.attention.head_count", c->n_heads);
	gguf_writer_set_u32(w, "llama.attention.head_count_kv",
	    c->n_kv_heads);
	gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon",
	    c->rms_eps);
	gguf_writer_set_f32(w, "llama.rope.freq_base", c->rope_theta);
	gguf_writer_set_u32(w, "llama.vocab_size", c->vocab_size);
	gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens",
	    (const char *const *)v.piece, v.len, v.n);
	gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", v.type, v.n);
	if (x->tokenizer_json != NULL) {
		/* llama.cpp's keys for a byte-level BPE (convert_hf_to_gguf
		 * _set_vocab_gpt2): model, pre, merges; special ids */
		static const char *const keys[3] = {
			"tokenizer.ggml.eos_token_id",
			"tokenizer.ggml.eot_token_id",
			"tokenizer.ggml.eom_token_id" };
		uint32_t i, id;

		gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
		gguf_writer_set_str(w, "tokenizer.ggml.pre", x->pre != NULL ?
		    x->pre : "llama-bpe");
		gguf_writer_set_arr_str(w, "tokenizer.ggml.merges",
		    (const char *const *)v.merge, v.merge_len, v.n_merges);
		if ((id = vocab_id(&v, x->bos)) != UINT32_MAX) {
			gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id",
			    id);
			gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token",
			    1);
		}
		for (i = 0; i < x->n_eos && i < 3; i++) {
			if ((id = vocab_id(&v, x->eos[i])) == UINT32_MAX) {
				snprintf(err, errlen, "EOS token '%s' is not in "
				    "%s", x->eos[i], x->tokenizer_json);
				rc = TS_EINVAL;
				goto out;
			}
			gguf_writer_set_u32(w, keys[i], id);
		}
	} else {
		gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
		gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores", v.score,
		    v.n);
		gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
		gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
		gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
		gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 1);
		gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", 0);
	}
	if (x->chat_template != NULL)
		gguf_writer_set_str(w, "tokenizer.chat_template",
		    x->chat_template);
	if (x->gen_has & ENGINE_GIVEN_TEMPERATURE)
		gguf_writer_set_f32(w, "general.sampling.temp",
		    (float)x->temperature);
	if (x->gen_has & ENGINE_GIVEN_TOP_P)
		gguf_writer_set_f32(w, "general.sampling.top_p",
		    (float)x->top_p);
	if (x->gen_has & ENGINE_GIVEN_TOP_K)
		gguf_writer_set_i32(w, "general.sampling.top_k",
		    (int32_t)x->top_k);
	/* the embedding and classifier stay F32 only when asked: llama.cpp
	 * quantizes them too (Q8_0 files have a Q8_0 token_embd) */
	if ((rc = add_matrix(w, &k, "token_embd.weight",
	    &m->w.token_embedding, x->type, err, errlen)) != TS_OK)
		goto out;
	for (l = 0; l < c->n_layers && rc == TS_OK; l++) {
		const struct model_layer *y = &m->w.layers[l];

		snprintf(name, sizeof(name), "blk.%u.attn_norm.weight", l);
		add_vector(w, name, y->rms_att, c->dim);
		snprintf(name, sizeof(name), "blk.%u.ffn_norm.weight", l);
		add_vector(w, name, y->rms_ffn, c->dim);
#define MAT(n, t) (snprintf(name, sizeof(name), "blk.%u." n ".weight", l), \
	    rc == TS_OK ? (rc = add_matrix(w, &k, name, (t), x->type, err, \
	    errlen)) : rc)
		MAT("attn_q", &y->wq);
		MAT("attn_k", &y->wk);
		MAT("attn_v", &y->wv);
		MAT("attn_output", &y->wo);
		MAT("ffn_gate", &y->w1);
		MAT("ffn_down", &y->w2);
		MAT("ffn_up", &y->w3);
#undef MAT
	}
	if (rc != TS_OK)
		goto out;
	add_vector(w, "output_norm.weight", m->w.rms_final, c->dim);
	if (!c->shared_classifier && (rc = add_matrix(w, &k, "output.weight",
	    &m->w.wcls, x->type, err, errlen)) != TS_OK)
		goto out;
	rc = gguf_writer_write(w, path, err, errlen);
out:
	gguf_writer_free(w);
	keep_free(&k);
	vocab_free(&v);
	return rc;
}

/* ---- Hugging Face ----------------------------------------------------- */

/* The id of piece (s, n) in v, or -1 (a linear scan: vocabularies here
 * are small, and this runs once per piece split). */
static long
vocab_find(const struct export_vocab *v, const char *s, size_t n)
{
	uint32_t i;

	for (i = 0; i < v->n; i++)
		if (v->len[i] == n && memcmp(v->piece[i], s, n) == 0)
			return (long)i;
	return -1;
}

struct export_merge {
	float score;
	long piece, left, right;
};

static int
merge_cmp(const void *a, const void *b)
{
	const struct export_merge *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->piece != y->piece)
		return x->piece < y->piece ? -1 : 1;
	if (x->left != y->left)
		return x->left < y->left ? -1 : 1;
	return (x->right > y->right) - (x->right < y->right);
}

/*
 * tokenizer.json of Llama 2's kind for v (tokenizers' format: the
 * fields transformers' LlamaConverter writes).
 */
static json_t *
tokenizer_json(const struct export_vocab *v)
{
	json_t *root = json_object(), *model = json_object();
	json_t *vocab = json_object(), *merges = json_array();
	json_t *added = json_array();
	struct export_merge *mg = NULL;
	size_t nm = 0, cap = 0, i;
	uint32_t id;

	for (id = 0; id < v->n; id++)
		json_object_setn_new(vocab, v->piece[id], v->len[id],
		    json_integer(id));
	/* merges: every split of a normal piece into two pieces, ranked by
	 * the piece's score (SentencePieceExtractor) */
	for (id = 0; id < v->n; id++) {
		size_t cut;

		if (v->type[id] != 1)
			continue;
		for (cut = 1; cut < v->len[id]; cut++) {
			long a, b;

			if (((unsigned char)v->piece[id][cut] & 0xC0) == 0x80)
				continue;       /* inside a character */
			a = vocab_find(v, v->piece[id], cut);
			b = vocab_find(v, v->piece[id] + cut,
			    v->len[id] - cut);
			if (a < 0 || b < 0 || v->type[a] != 1 ||
			    v->type[b] != 1)
				continue;
			if (nm == cap) {
				cap = cap ? 2 * cap : 256;
				mg = xrealloc(mg, cap * sizeof(*mg));
			}
			mg[nm].score = v->score[id];
			mg[nm].piece = id;
			mg[nm].left = a;
			mg[nm++].right = b;
		}
	}
	if (nm > 0)
		qsort(mg, nm, sizeof(*mg), merge_cmp);
	for (i = 0; i < nm; i++)
		json_array_append_new(merges, json_pack("[s%s%]",
		    v->piece[mg[i].left], v->len[mg[i].left],
		    v->piece[mg[i].right], v->len[mg[i].right]));
	free(mg);
	for (id = 0; id < 3 && id < v->n; id++)
		json_array_append_new(added, json_pack("{s:i,s:s%,s:b,s:b,"
		    "s:b,s:b,s:b}", "id", (int)id, "content", v->piece[id],
		    v->len[id], "single_word", 0, "lstrip", 0, "rstrip", 0,
		    "normalized", 0, "special", 1));
	json_object_set_new(model, "type", json_string("BPE"));
	json_object_set_new(model, "dropout", json_null());
	json_object_set_new(model, "unk_token", json_string("<unk>"));
	json_object_set_new(model, "continuing_subword_prefix", json_null());
	json_object_set_new(model, "end_of_word_suffix", json_null());
	json_object_set_new(model, "fuse_unk", json_true());
	json_object_set_new(model, "byte_fallback", json_true());
	json_object_set_new(model, "ignore_merges", json_false());
	json_object_set_new(model, "vocab", vocab);
	json_object_set_new(model, "merges", merges);
	json_object_set_new(root, "version", json_string("1.0"));
	json_object_set_new(root, "truncation", json_null());
	json_object_set_new(root, "padding", json_null());
	json_object_set_new(root, "added_tokens", added);
	json_object_set_new(root, "normalizer", json_pack("{s:s,s:[{s:s,s:s},"
	    "{s:s,s:{s:s},s:s}]}", "type", "Sequence", "normalizers", "type",
	    "Prepend", "prepend", SPM_SPACE, "type", "Replace", "pattern",
	    "String", " ", "content", SPM_SPACE));
	json_object_set_new(root, "pre_tokenizer", json_null());
	json_object_set_new(root, "post_processor", json_pack("{s:s,"
	    "s:[{s:{s:s,s:i}},{s:{s:s,s:i}}],"
	    "s:[{s:{s:s,s:i}},{s:{s:s,s:i}},{s:{s:s,s:i}},{s:{s:s,s:i}}],"
	    "s:{s:{s:s,s:[i],s:[s]}}}",
	    "type", "TemplateProcessing",
	    "single", "SpecialToken", "id", "<s>", "type_id", 0,
	    "Sequence", "id", "A", "type_id", 0,
	    "pair", "SpecialToken", "id", "<s>", "type_id", 0,
	    "Sequence", "id", "A", "type_id", 0,
	    "SpecialToken", "id", "<s>", "type_id", 1,
	    "Sequence", "id", "B", "type_id", 1,
	    "special_tokens", "<s>", "id", "<s>", "ids", 1, "tokens", "<s>"));
	json_object_set_new(root, "decoder", json_pack("{s:s,s:[{s:s,s:{s:s},"
	    "s:s},{s:s},{s:s},{s:s,s:s,s:i,s:i}]}", "type", "Sequence",
	    "decoders", "type", "Replace", "pattern", "String", SPM_SPACE,
	    "content", " ", "type", "ByteFallback", "type", "Fuse", "type",
	    "Strip", "content", " ", "start", 1, "stop", 0));
	json_object_set_new(root, "model", model);
	return root;
}

/* Copies the file src to dst. */
static enum ts_err
copy_file(const char *src, const char *dst, char *err, size_t errlen)
{
	FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
	char buf[65536];
	size_t n;
	int bad = 0;

	while (out != NULL && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			bad = 1;
	if (in == NULL || out == NULL || ferror(in) || bad ||
	    fclose(out) != 0) {
		snprintf(err, errlen, "cannot copy %s to %s", src, dst);
		if (in != NULL)
			fclose(in);
		return TS_ESYS;
	}
	fclose(in);
	return TS_OK;
}

/* The float rows of t (F32 as a checkpoint binds them) as one array. */
static const float *
rows_of(const struct model_tensor *t)
{
	return t->data;
}

enum ts_err
model_export_hf(const struct model *m, const char *tokenizer_path,
    const struct model_export *x, const char *dir, char *err,
    size_t errlen)
{
	const struct model_config *c = &m->cfg;
	struct export_vocab v;
	struct export_keep k = { NULL, 0 };
	struct hf_config hc;
	struct hf_generation gen;
	struct hf_tokenizer_config tc;
	struct hf_write_spec spec;
	struct hf_write_tensor *t;
	size_t nt = 0, cap;
	json_t *tj = NULL;
	char path[4096];
	uint32_t l;
	enum ts_err rc;

	if (x->type != MODEL_DTYPE_F32 && x->type != MODEL_DTYPE_F16 &&
	    x->type != MODEL_DTYPE_BF16) {
		snprintf(err, errlen, "a Hugging Face folder holds f32, f16 "
		    "or bf16, not %s", model_dtype_name(x->type));
		return TS_EINVAL;
	}
	rc = x->tokenizer_json != NULL ? vocab_json(&v, x->tokenizer_json,
	    c->vocab_size, err, errlen) : vocab_read(&v, tokenizer_path,
	    c->vocab_size, err, errlen);
	if (rc != TS_OK)
		return rc;
	memset(&hc, 0, sizeof(hc));
	snprintf(hc.architecture, sizeof(hc.architecture),
	    "LlamaForCausalLM");
	hc.hidden_size = c->dim;
	hc.intermediate_size = c->hidden_dim;
	hc.num_hidden_layers = c->n_layers;
	hc.num_attention_heads = c->n_heads;
	hc.num_key_value_heads = c->n_kv_heads;
	hc.vocab_size = c->vocab_size;
	hc.max_position_embeddings = c->seq_len;
	hc.head_dim = c->head_size;
	hc.rms_norm_eps = c->rms_eps;
	hc.rope_theta = c->rope_theta;
	hc.tie_word_embeddings = c->shared_classifier;
	snprintf(hc.torch_dtype, sizeof(hc.torch_dtype), "%s",
	    x->type == MODEL_DTYPE_F32 ? "float32" :
	    x->type == MODEL_DTYPE_F16 ? "float16" : "bfloat16");
	hc.has_bos_token_id = 1;
	hc.bos_token_id = 1;
	hc.n_eos = 1;
	hc.eos_token_ids[0] = 2;
	memset(&gen, 0, sizeof(gen));
	gen.present = 1;
	gen.has_bos_token_id = 1;
	gen.bos_token_id = 1;
	gen.n_eos = 1;
	gen.eos_token_ids[0] = 2;
	if (x->tokenizer_json != NULL) {
		uint32_t i, id = vocab_id(&v, x->bos);

		hc.has_bos_token_id = gen.has_bos_token_id = id != UINT32_MAX;
		hc.bos_token_id = gen.bos_token_id = id;
		hc.n_eos = gen.n_eos = 0;
		for (i = 0; i < x->n_eos && i < 3; i++) {
			if ((id = vocab_id(&v, x->eos[i])) == UINT32_MAX) {
				snprintf(err, errlen, "EOS token '%s' is not in "
				    "%s", x->eos[i], x->tokenizer_json);
				vocab_free(&v);
				return TS_EINVAL;
			}
			/* config.json names the first, the generation config
			 * all (as Llama 3.1's files do) */
			if (i == 0)
				hc.eos_token_ids[hc.n_eos++] = id;
			gen.eos_token_ids[gen.n_eos++] = id;
		}
	}
	gen.has_temperature = (x->gen_has & ENGINE_GIVEN_TEMPERATURE) != 0;
	gen.temperature = x->temperature;
	gen.has_top_p = (x->gen_has & ENGINE_GIVEN_TOP_P) != 0;
	gen.top_p = x->top_p;
	gen.has_top_k = (x->gen_has & ENGINE_GIVEN_TOP_K) != 0;
	gen.top_k = x->top_k;
	if (x->gen_has != 0) {
		gen.has_do_sample = 1;
		gen.do_sample = 1;
	}
	memset(&tc, 0, sizeof(tc));
	tc.present = 1;
	tc.chat_template = (char *)x->chat_template;
	tc.has_add_bos_token = 1;
	tc.add_bos_token = 1;
	tc.has_add_eos_token = 1;
	tc.add_eos_token = 0;
	tc.bos_token = x->tokenizer_json != NULL ? x->bos : "<s>";
	tc.eos_token = x->tokenizer_json != NULL ? (x->n_eos > 0 ?
	    x->eos[0] : NULL) : "</s>";
	tc.has_model_max_length = 1;
	tc.model_max_length = c->seq_len;

	cap = 3 + 9 * (size_t)c->n_layers;
	t = xcalloc(cap, sizeof(*t));
#define TENSOR(w, l_, src, rows, cols) do { \
	char *n_ = keep(&k, xmalloc(128)); \
	hf_weight_name((w), (l_), n_, 128); \
	t[nt].name = n_; \
	t[nt].dtype = (enum model_dtype)x->type; \
	t[nt].n_dims = (cols) > 0 ? 2 : 1; \
	t[nt].shape[0] = (rows); \
	t[nt].shape[1] = (cols); \
	t[nt++].data = (src); \
} while (0)
	TENSOR(HF_W_EMBED, 0, rows_of(&m->w.token_embedding), c->vocab_size,
	    c->dim);
	for (l = 0; l < c->n_layers; l++) {
		const struct model_layer *y = &m->w.layers[l];
		float *q = keep(&k, xmalloc((size_t)c->dim * c->dim * 4));
		float *kk = keep(&k, xmalloc((size_t)c->kv_dim * c->dim * 4));

		/* the interleaved rows of q and k in rotate_half's order,
		 * as transformers' conversion stores them */
		hf_permute_rows(rows_of(&y->wq), q, MODEL_DTYPE_F32,
		    c->n_heads, c->dim, c->dim);
		hf_permute_rows(rows_of(&y->wk), kk, MODEL_DTYPE_F32,
		    c->n_kv_heads, c->kv_dim, c->dim);
		TENSOR(HF_W_ATTN_NORM, l, y->rms_att, c->dim, 0);
		TENSOR(HF_W_Q, l, q, c->dim, c->dim);
		TENSOR(HF_W_K, l, kk, c->kv_dim, c->dim);
		TENSOR(HF_W_V, l, rows_of(&y->wv), c->kv_dim, c->dim);
		TENSOR(HF_W_O, l, rows_of(&y->wo), c->dim, c->dim);
		TENSOR(HF_W_FFN_NORM, l, y->rms_ffn, c->dim, 0);
		TENSOR(HF_W_GATE, l, rows_of(&y->w1), c->hidden_dim, c->dim);
		TENSOR(HF_W_UP, l, rows_of(&y->w3), c->hidden_dim, c->dim);
		TENSOR(HF_W_DOWN, l, rows_of(&y->w2), c->dim, c->hidden_dim);
	}
	TENSOR(HF_W_NORM, 0, m->w.rms_final, c->dim, 0);
	if (!c->shared_classifier)
		TENSOR(HF_W_LM_HEAD, 0, rows_of(&m->w.wcls), c->vocab_size,
		    c->dim);
#undef TENSOR
	memset(&spec, 0, sizeof(spec));
	spec.cfg = &hc;
	spec.tensors = t;
	spec.n_tensors = nt;
	spec.max_shard_bytes = x->max_shard_bytes;
	spec.gen = &gen;
	spec.tok = &tc;
	rc = hf_write(dir, &spec, err, errlen);
	if (rc == TS_OK && x->tokenizer_json != NULL) {
		snprintf(path, sizeof(path), "%s/tokenizer.json", dir);
		rc = copy_file(x->tokenizer_json, path, err, errlen);
	} else if (rc == TS_OK) {
		tj = tokenizer_json(&v);
		snprintf(path, sizeof(path), "%s/tokenizer.json", dir);
		if (json_dump_file(tj, path, JSON_INDENT(2) |
		    JSON_ENSURE_ASCII) != 0) {
			snprintf(err, errlen, "%s: cannot write", path);
			rc = TS_ESYS;
		}
		json_decref(tj);
	}
	free(t);
	keep_free(&k);
	vocab_free(&v);
	return rc;
}
