/*
 * model/model.h - a Llama-2 style transformer from a llama2.c checkpoint:
 * loading (mmap, validation) and a batched forward pass on the CPU.
 *
 * Checkpoint format: llama2.c's legacy "version 0" export, as written by
 * export.py legacy_export() and read by run.c (read_checkpoint,
 * memory_map_weights) in github.com/karpathy/llama2.c. Host byte order,
 * little-endian in practice; no padding:
 *
 *   int32   dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
 *           seq_len                       28-byte header; vocab_size < 0
 *                                         means wcls is stored (not shared)
 *   float32 token_embedding_table [vocab][dim]
 *           rms_att_weight        [layers][dim]
 *           wq                    [layers][dim][dim]     (out x in)
 *           wk                    [layers][kv_dim][dim]
 *           wv                    [layers][kv_dim][dim]
 *           wo                    [layers][dim][dim]
 *           rms_ffn_weight        [layers][dim]
 *           w1                    [layers][hidden][dim]
 *           w2                    [layers][dim][hidden]
 *           w3                    [layers][hidden][dim]
 *           rms_final_weight      [dim]
 *           freq_cis_real         [seq_len][head_size / 2]   (not used:
 *           freq_cis_imag         [seq_len][head_size / 2]    RoPE is
 *                                                             computed)
 *           wcls                  [vocab][dim]   only if vocab_size < 0
 *
 * with head_size = dim / n_heads and kv_dim = head_size * n_kv_heads.
 * A matrix [out][in] maps x[in] to y[out] = W x (row i gives y[i]).
 * The newer llama2.c exports (version 1, 2: magic "ak42") are refused.
 *
 * The forward pass follows run.c's forward(): RMSNorm (eps 1e-5), RoPE
 * on q and k with theta 10000 over pairs of each head, multi-head
 * attention with grouped-query heads (query head h reads kv head
 * h / (n_heads / n_kv_heads)), SwiGLU FFN w2(silu(w1 x) * w3 x), final
 * RMSNorm, classifier. It runs rows of several sequences (or many
 * positions of one prompt) in one pass so that each weight matrix is
 * read once per pass.
 */
#ifndef TS_MODEL_MODEL_H
#define TS_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

#define MODEL_HEADER_BYTES 28u

/* Limits of a checkpoint's header, far above real Llama-2 models (70B:
 * dim 8192, hidden 28672, 80 layers, 64 heads, vocab 32000, 4096). */
#define MODEL_MAX_DIM 65536u
#define MODEL_MAX_HIDDEN 262144u
#define MODEL_MAX_LAYERS 1024u
#define MODEL_MAX_HEADS 1024u
#define MODEL_MAX_VOCAB 1048576u
#define MODEL_MAX_SEQ_LEN 1048576u

/* Token ids fixed by the Llama-2 sentencepiece vocabulary. */
#define MODEL_TOKEN_UNK 0u
#define MODEL_TOKEN_BOS 1u
#define MODEL_TOKEN_EOS 2u

struct model_config {
	uint32_t dim;            /* model width */
	uint32_t hidden_dim;     /* FFN width */
	uint32_t n_layers;
	uint32_t n_heads;        /* query heads */
	uint32_t n_kv_heads;     /* key/value heads, divides n_heads */
	uint32_t vocab_size;
	uint32_t seq_len;        /* longest sequence, positions */
	int shared_classifier;   /* 1: wcls is the embedding table */
	float rms_eps;           /* RMSNorm's epsilon; 0: 1e-5 (run.c) */
	float rope_theta;        /* RoPE's base; 0: 10000 (run.c) */
	float rope_freq_scale;   /* linear RoPE scaling, position x this;
				  * 0: 1 (none) */
	/* derived by model_config_check: */
	uint32_t head_size;      /* dim / n_heads */
	uint32_t kv_dim;         /* head_size * n_kv_heads */
};

/*
 * Checks a config against the rules above and fills head_size and
 * kv_dim, and the defaults of rms_eps, rope_theta, rope_freq_scale. Returns TS_OK, or TS_EFORMAT with the first problem in err
 * ("dim 100 is not a multiple of n_heads 3").
 */
enum ts_err model_config_check(struct model_config *c, char *err,
    size_t errlen);

/* Bytes of a checkpoint file of (checked) config c. */
uint64_t model_file_bytes(const struct model_config *c);

/* Weights of c that a forward pass reads (the freq_cis tables are not
 * counted; a shared classifier counts once). */
uint64_t model_param_count(const struct model_config *c);

/*
 * A weight matrix [rows][cols] of element type `type` (model/dtype.h):
 * row i is row_bytes bytes at data + i * row_bytes, and maps x[cols] to
 * y[i]. F32 rows are floats; the others are ggml's blocks along the row
 * (cols a multiple of the type's block), computed by model/quant.h.
 */
struct model_tensor {
	uint32_t type;           /* enum model_dtype */
	uint32_t rows;
	uint32_t cols;
	uint64_t row_bytes;
	const void *data;
};

/* One transformer block's weights. The norms are float32 [dim]. */
struct model_layer {
	const float *rms_att;
	const float *rms_ffn;
	struct model_tensor wq;  /* [dim][dim] */
	struct model_tensor wk;  /* [kv_dim][dim] */
	struct model_tensor wv;  /* [kv_dim][dim] */
	struct model_tensor wo;  /* [dim][dim] */
	struct model_tensor w1;  /* [hidden][dim]  (gate) */
	struct model_tensor w2;  /* [dim][hidden]  (down) */
	struct model_tensor w3;  /* [hidden][dim]  (up) */
};

/* The weights a forward pass reads. */
struct model_weights {
	struct model_tensor token_embedding;  /* [vocab][dim] */
	struct model_layer *layers;           /* [n_layers] */
	const float *rms_final;               /* [dim] */
	struct model_tensor wcls;             /* [vocab][dim]; the embedding
					       * table when shared */
};

/*
 * A model: its config and weights, and what keeps them alive. The
 * loaders (this file's llama2.c checkpoints, model_file.h's GGUF files
 * and Hugging Face folders) fill it; the forward pass only reads it.
 */
struct model {
	struct model_config cfg;
	struct model_weights w;
	const float *rope_freq_factors; /* [head_size / 2] divisors of
					 * RoPE's frequencies (Llama 3's
					 * rope scaling), or NULL */
	void *map;               /* the file's read-only mapping, or NULL */
	size_t map_len;
	/* what the loader made: freed by model_close / model_unbind */
	void (*release)(void *); /* called with release_arg, or NULL */
	void *release_arg;
	void **owned;            /* malloc'd blocks (converted tensors) */
	size_t n_owned;
};

/* Keeps the malloc'd block p until the model is unbound; returns p. */
void *model_own(struct model *m, void *p);

/* Bytes of the weights a forward pass reads (a shared classifier counts
 * once): what a decode step at batch 1 streams from memory. */
uint64_t model_weight_bytes(const struct model *m);

/* Frees what model_bind (or a loader) made for m, not m itself; m is
 * zeroed. Accepts a zeroed model. */
void model_unbind(struct model *m);

/* Checks that a tensor has the shape [rows][cols] and a type the
 * forward pass computes (F32, or one model/quant.h supports). Returns
 * TS_OK or TS_EFORMAT: "blk.0.attn_q.weight: shape [64][32], expected
 * [64][64]" with `name` first. */
enum ts_err model_tensor_check(const struct model_tensor *t,
    const char *name, uint32_t rows, uint32_t cols, char *err,
    size_t errlen);

/*
 * Reads the header of the checkpoint image (data, len) (borrowed for the
 * model's life), validates it and the image's size, and points m's
 * weights into it (free what it made with model_unbind). Returns TS_OK, TS_EFORMAT with the problem in err
 * ("file is 1000 bytes but the header (...) implies 2000 bytes"), or
 * TS_EINVAL when data is not aligned for float.
 */
enum ts_err model_bind(struct model *m, const void *data, size_t len,
    char *err, size_t errlen);

/*
 * Maps the checkpoint at `path` read-only and binds it. Returns TS_OK
 * with *out (free with model_close), TS_ESYS when the file cannot be
 * opened or mapped, or TS_EFORMAT; err starts with the path.
 */
enum ts_err model_open(struct model **out, const char *path, char *err,
    size_t errlen);

/* Unbinds, unmaps and frees. Accepts NULL. */
void model_close(struct model *m);

/* Floats of one sequence's KV cache for `ctx` positions:
 * keys [n_layers][ctx][kv_dim], then values of the same shape. */
size_t model_kv_floats(const struct model_config *c, uint32_t ctx);

/*
 * One row of a forward pass: `token` at position `pos` of a sequence
 * whose cache (model_kv_floats(ctx) floats, ctx as given to
 * model_run_create) holds positions 0..pos-1 already, or gets them from
 * earlier rows of the same pass. The pass writes position pos of the
 * cache and, when `logits` is not NULL, the next-token logits
 * [vocab_size] there.
 */
struct model_row {
	float *kv;
	uint32_t token;          /* < vocab_size */
	uint32_t pos;            /* < ctx */
	float *logits;           /* [vocab_size] out, or NULL */
};

struct model_run;

/*
 * Scratch memory and threads for passes over `m` (borrowed for the run's
 * life) of at most max_rows rows on sequences of ctx positions
 * (1..seq_len), spread over `threads` threads (0 = the online CPUs).
 * Returns TS_OK, TS_EINVAL for a bad argument or TS_ESYS when a thread
 * cannot start.
 */
enum ts_err model_run_create(struct model_run **out, const struct model *m,
    uint32_t max_rows, uint32_t ctx, uint32_t threads);

/* Stops the threads, frees. Accepts NULL. */
void model_run_free(struct model_run *r);

uint32_t model_run_threads(const struct model_run *r);

/*
 * One forward pass over rows[0..n) (n <= max_rows). Every weight matrix
 * is read once for the whole pass. Rows of the same sequence must come
 * in order of position, and no two rows may share (kv, pos). Not
 * reentrant: one pass at a time per run.
 */
void model_forward(struct model_run *r, const struct model_row *rows,
    uint32_t n);

#endif /* TS_MODEL_MODEL_H */
