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
	/* derived by model_config_check: */
	uint32_t head_size;      /* dim / n_heads */
	uint32_t kv_dim;         /* head_size * n_kv_heads */
};

/*
 * Checks a config against the rules above and fills head_size and
 * kv_dim. Returns TS_OK, or TS_EFORMAT with the first problem in err
 * ("dim 100 is not a multiple of n_heads 3").
 */
enum ts_err model_config_check(struct model_config *c, char *err,
    size_t errlen);

/* Bytes of a checkpoint file of (checked) config c. */
uint64_t model_file_bytes(const struct model_config *c);

/* Weights of c that a forward pass reads (the freq_cis tables are not
 * counted; a shared classifier counts once). */
uint64_t model_param_count(const struct model_config *c);

/* Pointers into the checkpoint, shapes as in the format above. */
struct model_weights {
	const float *token_embedding;
	const float *rms_att;
	const float *wq, *wk, *wv, *wo;
	const float *rms_ffn;
	const float *w1, *w2, *w3;
	const float *rms_final;
	const float *wcls;
};

struct model {
	struct model_config cfg;
	struct model_weights w;
	void *map;               /* the file's read-only mapping, or NULL */
	size_t map_len;
};

/*
 * Reads the header of the checkpoint image (data, len) (borrowed for the
 * model's life), validates it and the image's size, and points m's
 * weights into it. Returns TS_OK, TS_EFORMAT with the problem in err
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

/* Unmaps and frees. Accepts NULL. */
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
