/*
 * model/model.c - llama2.c checkpoints: validation, mmap, and the batched
 * forward pass (see model.h for the format and the sources followed).
 */
#define _POSIX_C_SOURCE 200809L
#include "model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model_map.h"
#include "model/model_pool.h"
#include "model/quant.h"

/* "ak42" read as a little-endian int32: the magic of llama2.c's newer
 * export versions (export.py version 1 and 2). */
#define MODEL_MAGIC_AK42 0x616b3432

/* RMSNorm's epsilon and RoPE's base when a config gives none, as in
 * run.c. */
#define MODEL_RMS_EPS 1e-5f
#define MODEL_ROPE_THETA 10000.0f

/* ---- configuration and file layout ------------------------------------ */

/* One header field's name, value and limit, for the checks below. */
struct model_field {
	const char *name;
	uint32_t *val;
	uint32_t max;
};

enum ts_err
model_config_check(struct model_config *c, char *err, size_t errlen)
{
	const struct model_field f[] = {
		{ "dim", &c->dim, MODEL_MAX_DIM },
		{ "hidden_dim", &c->hidden_dim, MODEL_MAX_HIDDEN },
		{ "n_layers", &c->n_layers, MODEL_MAX_LAYERS },
		{ "n_heads", &c->n_heads, MODEL_MAX_HEADS },
		{ "n_kv_heads", &c->n_kv_heads, MODEL_MAX_HEADS },
		{ "vocab_size", &c->vocab_size, MODEL_MAX_VOCAB },
		{ "seq_len", &c->seq_len, MODEL_MAX_SEQ_LEN },
	};
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (*f[i].val == 0) {
			snprintf(err, errlen, "%s is 0, must be positive",
			    f[i].name);
			return TS_EFORMAT;
		}
		if (*f[i].val > f[i].max) {
			snprintf(err, errlen, "%s %u is over the limit %u",
			    f[i].name, *f[i].val, f[i].max);
			return TS_EFORMAT;
		}
	}
	if (c->dim % c->n_heads != 0) {
		snprintf(err, errlen, "dim %u is not a multiple of n_heads %u",
		    c->dim, c->n_heads);
		return TS_EFORMAT;
	}
	if ((c->dim / c->n_heads) % 2 != 0) {
		snprintf(err, errlen, "head size %u (dim %u / n_heads %u) is "
		    "odd; RoPE rotates pairs", c->dim / c->n_heads, c->dim,
		    c->n_heads);
		return TS_EFORMAT;
	}
	if (c->n_kv_heads > c->n_heads) {
		snprintf(err, errlen, "n_kv_heads %u exceeds n_heads %u",
		    c->n_kv_heads, c->n_heads);
		return TS_EFORMAT;
	}
	if (c->n_heads % c->n_kv_heads != 0) {
		snprintf(err, errlen, "n_heads %u is not a multiple of "
		    "n_kv_heads %u", c->n_heads, c->n_kv_heads);
		return TS_EFORMAT;
	}
	if (!(c->rms_eps >= 0.0f && c->rms_eps < 1.0f) ||
	    !(c->rope_theta >= 0.0f && c->rope_theta <= 1e12f) ||
	    !(c->rope_freq_scale >= 0.0f && c->rope_freq_scale <= 1e6f)) {
		snprintf(err, errlen, "rms_eps %g, rope_theta %g or rope "
		    "scale %g is out of range", (double)c->rms_eps,
		    (double)c->rope_theta, (double)c->rope_freq_scale);
		return TS_EFORMAT;
	}
	if (c->rms_eps == 0.0f)
		c->rms_eps = MODEL_RMS_EPS;
	if (c->rope_theta == 0.0f)
		c->rope_theta = MODEL_ROPE_THETA;
	if (c->rope_freq_scale == 0.0f)
		c->rope_freq_scale = 1.0f;
	c->head_size = c->dim / c->n_heads;
	c->kv_dim = c->head_size * c->n_kv_heads;
	return TS_OK;
}

void *
model_own(struct model *m, void *p)
{
	m->owned = xrealloc(m->owned, (m->n_owned + 1) * sizeof(*m->owned));
	m->owned[m->n_owned++] = p;
	return p;
}

void
model_unbind(struct model *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->n_owned; i++)
		free(m->owned[i]);
	free(m->owned);
	free(m->w.layers);
	if (m->release != NULL)
		m->release(m->release_arg);
	memset(m, 0, sizeof(*m));
}

static uint64_t
tensor_bytes(const struct model_tensor *t)
{
	return (uint64_t)t->rows * t->row_bytes;
}

uint64_t
model_weight_bytes(const struct model *m)
{
	const struct model_config *c = &m->cfg;
	uint64_t n = 0;
	uint32_t l;

	n += tensor_bytes(&m->w.token_embedding);
	for (l = 0; l < c->n_layers; l++) {
		const struct model_layer *y = &m->w.layers[l];

		n += 2 * (uint64_t)c->dim * sizeof(float);
		n += tensor_bytes(&y->wq) + tensor_bytes(&y->wk) +
		    tensor_bytes(&y->wv) + tensor_bytes(&y->wo) +
		    tensor_bytes(&y->w1) + tensor_bytes(&y->w2) +
		    tensor_bytes(&y->w3);
	}
	n += (uint64_t)c->dim * sizeof(float);
	if (m->w.wcls.data != m->w.token_embedding.data)
		n += tensor_bytes(&m->w.wcls);
	return n;
}

enum ts_err
model_tensor_check(const struct model_tensor *t, const char *name,
    uint32_t rows, uint32_t cols, char *err, size_t errlen)
{
	if (t->rows != rows || t->cols != cols) {
		snprintf(err, errlen, "%s: shape [%u][%u], expected [%u][%u]",
		    name, t->rows, t->cols, rows, cols);
		return TS_EFORMAT;
	}
	if (t->type != MODEL_DTYPE_F32 && !quant_supported(t->type)) {
		snprintf(err, errlen, "%s: type %s is not supported (f32, "
		    "f16, bf16, q8_0, q4_0%s are)", name,
		    model_dtype_name(t->type),
		    quant_supported(MODEL_DTYPE_Q4_K) ? ", q4_K, q6_K" : "");
		return TS_EFORMAT;
	}
	if (t->row_bytes != model_dtype_row_bytes(t->type, cols)) {
		snprintf(err, errlen, "%s: %s rows of %u elements are not "
		    "%llu bytes", name, model_dtype_name(t->type), cols,
		    (unsigned long long)t->row_bytes);
		return TS_EFORMAT;
	}
	return TS_OK;
}

/* An F32 tensor [rows][cols] at p. */
static struct model_tensor
f32_tensor(const float *p, uint64_t rows, uint64_t cols)
{
	struct model_tensor t;

	t.type = MODEL_DTYPE_F32;
	t.rows = (uint32_t)rows;
	t.cols = (uint32_t)cols;
	t.row_bytes = cols * sizeof(float);
	t.data = p;
	return t;
}

/* Floats of the file after the header, by tensor (see model.h). With the
 * limits of model_config_check no product overflows 64 bits (the largest
 * is under 2^50). */
static uint64_t
body_floats(const struct model_config *c)
{
	uint64_t d = c->dim, h = c->hidden_dim, l = c->n_layers;
	uint64_t v = c->vocab_size, kv = c->kv_dim;
	uint64_t n = 0;

	n += v * d;                     /* token_embedding_table */
	n += l * d;                     /* rms_att_weight */
	n += l * d * d;                 /* wq */
	n += 2 * l * kv * d;            /* wk, wv */
	n += l * d * d;                 /* wo */
	n += l * d;                     /* rms_ffn_weight */
	n += 3 * l * h * d;             /* w1, w2, w3 */
	n += d;                         /* rms_final_weight */
	n += (uint64_t)c->seq_len * (c->head_size / 2) * 2; /* freq_cis */
	if (!c->shared_classifier)
		n += v * d;             /* wcls */
	return n;
}

uint64_t
model_file_bytes(const struct model_config *c)
{
	return MODEL_HEADER_BYTES + 4 * body_floats(c);
}

uint64_t
model_param_count(const struct model_config *c)
{
	return body_floats(c) -
	    (uint64_t)c->seq_len * (c->head_size / 2) * 2;
}

size_t
model_kv_floats(const struct model_config *c, uint32_t ctx)
{
	return 2 * (size_t)c->n_layers * ctx * c->kv_dim;
}

enum ts_err
model_bind(struct model *m, const void *data, size_t len, char *err,
    size_t errlen)
{
	static const char *const names[7] = { "dim", "hidden_dim",
		"n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len" };
	struct model_config c;
	uint32_t *dst[7];
	int32_t h[7];
	const float *p;
	uint64_t want, l, d, hd, kv, v;
	enum ts_err rc;
	int i;

	memset(m, 0, sizeof(*m));
	if (len < MODEL_HEADER_BYTES) {
		snprintf(err, errlen, "file is %zu bytes, shorter than the "
		    "%u-byte header", len, MODEL_HEADER_BYTES);
		return TS_EFORMAT;
	}
	if ((uintptr_t)data % _Alignof(float) != 0) {
		snprintf(err, errlen, "image is not aligned for float32");
		return TS_EINVAL;
	}
	memcpy(h, data, sizeof(h));
	if (h[0] == MODEL_MAGIC_AK42) {
		snprintf(err, errlen, "this is a llama2.c version-%d export "
		    "(magic \"ak42\"); only the legacy version-0 format is "
		    "supported", h[1]);
		return TS_EFORMAT;
	}
	memset(&c, 0, sizeof(c));
	dst[0] = &c.dim;
	dst[1] = &c.hidden_dim;
	dst[2] = &c.n_layers;
	dst[3] = &c.n_heads;
	dst[4] = &c.n_kv_heads;
	dst[5] = &c.vocab_size;
	dst[6] = &c.seq_len;
	c.shared_classifier = h[5] > 0;
	for (i = 0; i < 7; i++) {
		int64_t x = h[i];

		if (i == 5 && x < 0)
			x = -x;         /* separate classifier */
		if (x <= 0) {
			snprintf(err, errlen, "%s is %d, must be positive",
			    names[i], h[i]);
			return TS_EFORMAT;
		}
		if (x > UINT32_MAX) {
			snprintf(err, errlen, "%s %lld is over any limit",
			    names[i], (long long)x);
			return TS_EFORMAT;
		}
		*dst[i] = (uint32_t)x;
	}
	rc = model_config_check(&c, err, errlen);
	if (rc != TS_OK)
		return rc;
	want = model_file_bytes(&c);
	if ((uint64_t)len != want) {
		snprintf(err, errlen, "file is %zu bytes but the header "
		    "(dim %u, hidden_dim %u, n_layers %u, n_heads %u, "
		    "n_kv_heads %u, "
		    "vocab_size %u %s, seq_len %u) implies %llu bytes%s", len,
		    c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
		    c.vocab_size, c.shared_classifier ? "shared" : "separate",
		    c.seq_len, (unsigned long long)want,
		    (uint64_t)len < want ? ": truncated" : "");
		return TS_EFORMAT;
	}

	m->cfg = c;
	l = c.n_layers;
	d = c.dim;
	hd = c.hidden_dim;
	kv = c.kv_dim;
	v = c.vocab_size;
	p = (const float *)((const char *)data + MODEL_HEADER_BYTES);
	m->w.layers = xcalloc(l, sizeof(*m->w.layers));
	m->w.token_embedding = f32_tensor(p, v, d);
	p += v * d;
	/* the checkpoint keeps each kind of tensor for all layers in one
	 * array: layer i's is the i-th slice */
	for (i = 0; i < (int)l; i++)
		m->w.layers[i].rms_att = p + i * d;
	p += l * d;
	for (i = 0; i < (int)l; i++)
		m->w.layers[i].wq = f32_tensor(p + i * d * d, d, d);
	p += l * d * d;
	for (i = 0; i < (int)l; i++)
		m->w.layers[i].wk = f32_tensor(p + i * kv * d, kv, d);
	p += l * kv * d;
	for (i = 0; i < (int)l; i++)
		m->w.layers[i].wv = f32_tensor(p + i * kv * d, kv, d);
	p += l * kv * d;
	for (i = 0; i < (int)l; i++)
		m->w.layers[i].wo = f32_tensor(p + i * d * d, d, d);
	p += l * d * d;
	for (i = 0; i < (int)l; i++)
		m->w.layers[i].rms_ffn = p + i * d;
	p += l * d;
	for (i = 0; i < (int)l; i++)
		m->w.layers[i].w1 = f32_tensor(p + i * hd * d, hd, d);
	p += l * hd * d;
	for (i = 0; i < (int)l; i++)
		m->w.layers[i].w2 = f32_tensor(p + i * d * hd, d, hd);
	p += l * d * hd;
	for (i = 0; i < (int)l; i++)
		m->w.layers[i].w3 = f32_tensor(p + i * hd * d, hd, d);
	p += l * hd * d;
	m->w.rms_final = p;
	p += d;
	p += (size_t)c.seq_len * (c.head_size / 2) * 2;
	m->w.wcls = c.shared_classifier ? m->w.token_embedding :
	    f32_tensor(p, v, d);
	return TS_OK;
}

enum ts_err
model_open(struct model **out, const char *path, char *err, size_t errlen)
{
	struct model *m;
	void *map;
	size_t len;
	char why[400];
	enum ts_err rc;

	*out = NULL;
	rc = model_map_file(path, &map, &len, err, errlen);
	if (rc != TS_OK)
		return rc;
	if (len < MODEL_HEADER_BYTES) {
		snprintf(err, errlen, "%s: file is %zu bytes, shorter than "
		    "the %u-byte header", path, len, MODEL_HEADER_BYTES);
		model_unmap_file(map, len);
		return TS_EFORMAT;
	}
	m = xmalloc(sizeof(*m));
	rc = model_bind(m, map, len, why, sizeof(why));
	if (rc != TS_OK) {
		snprintf(err, errlen, "%s: %s", path, why);
		model_unmap_file(map, len);
		free(m);
		return rc;
	}
	m->map = map;
	m->map_len = len;
	*out = m;
	return TS_OK;
}

void
model_close(struct model *m)
{
	if (m == NULL)
		return;
	model_unmap_file(m->map, m->map_len);
	model_unbind(m);
	free(m);
}

/* ---- the forward pass ------------------------------------------------- */

struct model_run {
	const struct model *m;
	struct model_pool *pool;
	uint32_t max_rows;
	uint32_t ctx;            /* positions per sequence cache */
	/* activations, [max_rows][width] */
	float *x;                /* residual stream [dim] */
	float *xb;               /* normed input / attention output [dim] */
	float *xb2;              /* a matmul's output [dim] */
	float *q;                /* [dim] */
	float *k, *v;            /* [kv_dim] */
	float *hb, *hb2;         /* [hidden_dim] */
	float *rope;             /* [head_size / 2][2]: cos, sin at pos */
	float *att;              /* [threads][ctx] attention scores */
	float *logits;           /* [max_rows][vocab] */
	uint32_t *lrows;         /* rows that want logits */
	/* a matmul's inputs converted for quantized weights (quant.h's
	 * vec types), one buffer per distinct type in a job */
	unsigned char *xq[3];
	size_t xq_row;           /* bytes per row of each xq buffer */
	/* the pass in flight, for the attention job */
	const struct model_row *rows;
	uint32_t layer;
};

/* One to three matrices applied to the same batch of inputs: the rows of
 * all parts form one index range for the pool. */
struct model_mm_part {
	const struct model_tensor *w;  /* [d][in] */
	float *out;              /* [nb][d] */
	uint32_t d;
	/* for a quantized w: x converted to quant_vec_type(w->type),
	 * nb rows of xq_bytes each */
	const unsigned char *xq;
	size_t xq_bytes;
};

struct model_mm {
	const float *x;          /* [nb][in] */
	uint32_t in;
	uint32_t nb;
	uint32_t nparts;
	struct model_mm_part part[3];
};

/*
 * The kernels. With GCC or clang, 8-float vectors (the vector_size
 * extension: two SSE registers on plain x86-64, one AVX register in the
 * avx2 clone below); plain C otherwise. A row's dot product is always
 * summed the same way (lane j gets elements j, j+8, j+16, ..., the lanes
 * are added in a fixed order, then the tail), whichever kernel computes
 * it, so how rows are split between threads changes no bit.
 */
#if defined(__GNUC__)
typedef float model_v8 __attribute__((vector_size(32)));
/* inlined into each clone of the hot loops, so built for its target */
#define MODEL_INLINE __attribute__((always_inline)) inline

/* v = the 8 floats at p, unaligned (a macro: 32-byte vectors are not
 * passed by value, whose ABI differs with and without AVX) */
#define VLOAD(v, p) memcpy(&(v), (p), sizeof(v))

static MODEL_INLINE float
vsum(const model_v8 *v)
{
	return (((*v)[0] + (*v)[4]) + ((*v)[1] + (*v)[5])) +
	    (((*v)[2] + (*v)[6]) + ((*v)[3] + (*v)[7]));
}

/* a[n] . b[n] */
static MODEL_INLINE float
dot(const float *a, const float *b, size_t n)
{
	model_v8 s = { 0, 0, 0, 0, 0, 0, 0, 0 }, va, vb;
	size_t j;
	float r;

	for (j = 0; j + 8 <= n; j += 8) {
		VLOAD(va, a + j);
		VLOAD(vb, b + j);
		s += va * vb;
	}
	r = vsum(&s);
	for (; j < n; j++)
		r += a[j] * b[j];
	return r;
}

/* o[k] = w[k][n] . x[n] for the four rows k of w (row stride n): x is
 * loaded once for four rows. */
static MODEL_INLINE void
dot4(const float *w, size_t n, const float *x, float *o)
{
	model_v8 s0 = { 0, 0, 0, 0, 0, 0, 0, 0 }, s1 = s0, s2 = s0, s3 = s0;
	model_v8 xv, w0, w1, w2, w3;
	size_t j;
	int k;

	for (j = 0; j + 8 <= n; j += 8) {
		VLOAD(xv, x + j);
		VLOAD(w0, w + j);
		VLOAD(w1, w + n + j);
		VLOAD(w2, w + 2 * n + j);
		VLOAD(w3, w + 3 * n + j);
		s0 += w0 * xv;
		s1 += w1 * xv;
		s2 += w2 * xv;
		s3 += w3 * xv;
	}
	o[0] = vsum(&s0);
	o[1] = vsum(&s1);
	o[2] = vsum(&s2);
	o[3] = vsum(&s3);
	for (k = 0; k < 4; k++) {
		size_t t;

		for (t = j; t < n; t++)
			o[k] += w[k * n + t] * x[t];
	}
}
#else
static inline float
dot(const float *a, const float *b, size_t n)
{
	float s[8] = { 0, 0, 0, 0, 0, 0, 0, 0 }, r;
	size_t j;
	int k;

	for (j = 0; j + 8 <= n; j += 8)
		for (k = 0; k < 8; k++)
			s[k] += a[j + k] * b[j + k];
	r = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) +
	    (s[3] + s[7]));
	for (; j < n; j++)
		r += a[j] * b[j];
	return r;
}

static inline void
dot4(const float *w, size_t n, const float *x, float *o)
{
	int k;

	for (k = 0; k < 4; k++)
		o[k] = dot(w + k * n, x, n);
}
#endif

/* x86-64 with GCC's ifunc clones: the hot loops also get an AVX2 build,
 * picked at load time on CPUs that have it (same arithmetic, wider
 * registers). Not under ThreadSanitizer: its instrumented ifunc
 * resolver runs before the runtime is up and crashes at load. */
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && \
    !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(MODEL_NO_CLONES)
#define MODEL_HOT __attribute__((target_clones("avx2", "default")))
#else
#define MODEL_HOT
#endif

/*
 * out[b][i] = sum_j w[i][j] x[b][j] for rows i in [lo, hi) of one part,
 * every b: four rows of w at a time are read from memory once and reused
 * (from cache) for the whole batch.
 */
MODEL_HOT static void
mm_rows_f32(const struct model_mm *j, const struct model_mm_part *p,
    uint32_t lo, uint32_t hi)
{
	const float *w = p->w->data;
	size_t in = j->in, d = p->d, i, b;
	float o[4];

	for (i = lo; i + 4 <= hi; i += 4) {
		const float *wi = w + i * in;

		for (b = 0; b < j->nb; b++) {
			float *out = p->out + b * d + i;

			dot4(wi, in, j->x + b * in, o);
			out[0] = o[0];
			out[1] = o[1];
			out[2] = o[2];
			out[3] = o[3];
		}
	}
	for (; i < hi; i++)
		for (b = 0; b < j->nb; b++)
			p->out[b * d + i] = dot(w + i * in, j->x + b * in,
			    in);
}

/* The same for a quantized (or half-precision) w: four of its rows at a
 * time against each row of the converted input (quant_dot_rows). */
static void
mm_rows_quant(const struct model_mm *j, const struct model_mm_part *p,
    uint32_t lo, uint32_t hi)
{
	const struct model_tensor *w = p->w;
	const unsigned char *wd = w->data;
	size_t d = p->d, i, b, k;
	float o[4];

	for (i = lo; i < hi; i += k) {
		k = hi - i < 4 ? hi - i : 4;
		if (k == 4) {
			/* four rows against up to four sequences at once:
			 * each weight block read and converted once */
			for (b = 0; b < j->nb; b += 4)
				quant_dot_tile(w->type, wd + i * w->row_bytes,
				    j->in, p->xq + b * p->xq_bytes,
				    p->xq_bytes, j->nb - b < 4 ? j->nb - b : 4,
				    p->out + b * d + i, d);
			continue;
		}
		for (b = 0; b < j->nb; b++) {
			float *out = p->out + b * d + i;
			size_t t;

			quant_dot_rows(w->type, wd + i * w->row_bytes, j->in,
			    p->xq + b * p->xq_bytes, k, o);
			for (t = 0; t < k; t++)
				out[t] = o[t];
		}
	}
}

static void
mm_rows(const struct model_mm *j, const struct model_mm_part *p,
    uint32_t lo, uint32_t hi)
{
	if (p->w->type == MODEL_DTYPE_F32)
		mm_rows_f32(j, p, lo, hi);
	else
		mm_rows_quant(j, p, lo, hi);
}

static void
mm_fn(void *arg, uint32_t lo, uint32_t hi, uint32_t tid)
{
	const struct model_mm *j = arg;
	uint32_t base = 0, k;

	(void)tid;
	for (k = 0; k < j->nparts && base < hi; k++) {
		const struct model_mm_part *p = &j->part[k];
		uint32_t a = lo > base ? lo - base : 0;
		uint32_t b = hi - base < p->d ? hi - base : p->d;

		if (a < b)
			mm_rows(j, p, a, b);
		base += p->d;
	}
}

/* Converts the job's input for each quantized part (once per distinct
 * vec type), then runs the matmul job over the pool. */
static void
mm_run(struct model_run *r, struct model_mm *j)
{
	enum model_dtype vt[3];
	uint32_t rows = 0, k, q, nvt = 0, b;

	for (k = 0; k < j->nparts; k++) {
		struct model_mm_part *p = &j->part[k];
		enum model_dtype t;

		rows += p->d;
		if (p->w->type == MODEL_DTYPE_F32)
			continue;
		t = quant_vec_type((enum model_dtype)p->w->type);
		for (q = 0; q < nvt && vt[q] != t; q++)
			;
		p->xq_bytes = model_dtype_row_bytes(t, j->in);
		if (q == nvt) {
			vt[nvt++] = t;
			for (b = 0; b < j->nb; b++)
				quant_prepare((enum model_dtype)p->w->type,
				    j->x + (size_t)b * j->in,
				    r->xq[q] + b * p->xq_bytes, j->in);
		}
		p->xq = r->xq[q];
	}
	model_pool_run(r->pool, mm_fn, j, rows);
}

/* o[n] = weight[n] * x[n] / rms(x), as run.c's rmsnorm. */
static void
rmsnorm(float *o, const float *x, const float *weight, uint32_t n,
    float eps)
{
	float ss = 0.0f;
	uint32_t j;

	for (j = 0; j < n; j++)
		ss += x[j] * x[j];
	ss /= (float)n;
	ss += eps;
	ss = 1.0f / sqrtf(ss);
	for (j = 0; j < n; j++)
		o[j] = weight[j] * (ss * x[j]);
}

/* x[n] = softmax(x), in place. */
static void
softmax(float *x, uint32_t n)
{
	float max = x[0], sum = 0.0f;
	uint32_t i;

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

/* The cos and sin of RoPE's angles at `pos`, [head_size / 2][2], with
 * run.c's arithmetic (so the angles are the same floats), the base
 * theta, each pair's frequency divided by its factor (Llama 3's rope
 * scaling, as llama.cpp's rope_freqs; NULL: none) and positions scaled
 * by freq_scale (linear scaling; 1: none). */
static void
rope_table(float *t, uint32_t head_size, uint32_t pos, float theta,
    const float *factors, float freq_scale)
{
	uint32_t i;

	for (i = 0; i < head_size; i += 2) {
		float freq = 1.0f / powf(theta,
		    (float)i / (float)head_size);
		float val;

		if (factors != NULL)
			freq /= factors[i / 2];
		if (freq_scale != 1.0f)
			freq *= freq_scale;
		val = (float)pos * freq;

		t[i] = cosf(val);
		t[i + 1] = sinf(val);
	}
}

/* Rotates pairs of vec[n] (n a multiple of head_size) by the table. */
static void
rope_apply(float *vec, uint32_t n, const float *t, uint32_t head_size)
{
	uint32_t i;

	for (i = 0; i < n; i += 2) {
		const float *cs = t + i % head_size;
		float v0 = vec[i], v1 = vec[i + 1];

		vec[i] = v0 * cs[0] - v1 * cs[1];
		vec[i + 1] = v0 * cs[1] + v1 * cs[0];
	}
}

/*
 * Attention of (row, head) pairs [lo, hi): scores of the row's query
 * head against the cached keys at positions 0..pos of its kv head,
 * softmax, and the weighted sum of the cached values into xb.
 */
MODEL_HOT static void
attn_fn(void *arg, uint32_t lo, uint32_t hi, uint32_t tid)
{
	struct model_run *r = arg;
	const struct model_config *c = &r->m->cfg;
	uint32_t hs = c->head_size, kv_mul = c->n_heads / c->n_kv_heads;
	size_t loff = (size_t)r->layer * r->ctx * c->kv_dim;
	size_t voff = (size_t)c->n_layers * r->ctx * c->kv_dim;
	float *att = r->att + (size_t)tid * r->ctx;
	float scale = sqrtf((float)hs);
	uint32_t t, p, i;

	for (t = lo; t < hi; t++) {
		uint32_t row = t / c->n_heads, h = t % c->n_heads;
		const struct model_row *rw = &r->rows[row];
		const float *q = r->q + (size_t)row * c->dim + (size_t)h * hs;
		const float *kc = rw->kv + loff + (size_t)(h / kv_mul) * hs;
		const float *vc = kc + voff;
		float *o = r->xb + (size_t)row * c->dim + (size_t)h * hs;

		for (p = 0; p <= rw->pos; p++)
			att[p] = dot(q, kc + (size_t)p * c->kv_dim, hs) /
			    scale;
		softmax(att, rw->pos + 1);
		memset(o, 0, hs * sizeof(*o));
		for (p = 0; p <= rw->pos; p++) {
			const float *vp = vc + (size_t)p * c->kv_dim;
			float a = att[p];

			for (i = 0; i < hs; i++)
				o[i] += a * vp[i];
		}
	}
}

enum ts_err
model_run_create(struct model_run **out, const struct model *m,
    uint32_t max_rows, uint32_t ctx, uint32_t threads)
{
	const struct model_config *c = &m->cfg;
	struct model_run *r;
	enum ts_err rc;
	size_t n;
	int k;

	*out = NULL;
	if (max_rows == 0 || ctx == 0 || ctx > c->seq_len ||
	    threads > MODEL_POOL_MAX_THREADS)
		return TS_EINVAL;
	if (threads == 0)
		threads = model_pool_default_threads();
	r = xcalloc(1, sizeof(*r));
	r->m = m;
	r->max_rows = max_rows;
	r->ctx = ctx;
	rc = model_pool_create(&r->pool, threads);
	if (rc != TS_OK) {
		free(r);
		return rc;
	}
	n = max_rows;
	r->x = xmalloc(n * c->dim * sizeof(float));
	r->xb = xmalloc(n * c->dim * sizeof(float));
	r->xb2 = xmalloc(n * c->dim * sizeof(float));
	r->q = xmalloc(n * c->dim * sizeof(float));
	r->k = xmalloc(n * c->kv_dim * sizeof(float));
	r->v = xmalloc(n * c->kv_dim * sizeof(float));
	r->hb = xmalloc(n * c->hidden_dim * sizeof(float));
	r->hb2 = xmalloc(n * c->hidden_dim * sizeof(float));
	r->rope = xmalloc(n * c->head_size * sizeof(float));
	r->att = xmalloc((size_t)threads * ctx * sizeof(float));
	r->logits = xmalloc(n * c->vocab_size * sizeof(float));
	r->lrows = xmalloc(n * sizeof(uint32_t));
	/* the widest conversion is F16's 2 bytes per element (Q8_0: 34 per
	 * 32, Q8_K: 292 per 256) */
	r->xq_row = 2 * (size_t)(c->dim > c->hidden_dim ? c->dim :
	    c->hidden_dim) + 64;
	for (k = 0; k < 3; k++)
		r->xq[k] = xmalloc(n * r->xq_row);
	*out = r;
	return TS_OK;
}

void
model_run_free(struct model_run *r)
{
	if (r == NULL)
		return;
	model_pool_destroy(r->pool);
	free(r->x);
	free(r->xb);
	free(r->xb2);
	free(r->q);
	free(r->k);
	free(r->v);
	free(r->hb);
	free(r->hb2);
	free(r->rope);
	free(r->att);
	free(r->logits);
	free(r->lrows);
	free(r->xq[0]);
	free(r->xq[1]);
	free(r->xq[2]);
	free(r);
}

uint32_t
model_run_threads(const struct model_run *r)
{
	return model_pool_threads(r->pool);
}

/* One layer of the pass over rows[0..n). */
static void
forward_layer(struct model_run *r, const struct model_row *rows,
    uint32_t n, uint32_t l)
{
	const struct model *m = r->m;
	const struct model_config *c = &m->cfg;
	size_t dim = c->dim, kv_dim = c->kv_dim, hid = c->hidden_dim;
	size_t loff = (size_t)l * r->ctx * kv_dim;
	size_t voff = (size_t)c->n_layers * r->ctx * kv_dim;
	const struct model_layer *y = &m->w.layers[l];
	struct model_mm j;
	uint32_t b, i;

	/* attention: q, k, v of every row */
	for (b = 0; b < n; b++)
		rmsnorm(r->xb + b * dim, r->x + b * dim, y->rms_att,
		    c->dim, c->rms_eps);
	memset(&j, 0, sizeof(j));
	j.x = r->xb;
	j.in = c->dim;
	j.nb = n;
	j.nparts = 3;
	j.part[0].w = &y->wq;
	j.part[0].out = r->q;
	j.part[0].d = c->dim;
	j.part[1].w = &y->wk;
	j.part[1].out = r->k;
	j.part[1].d = c->kv_dim;
	j.part[2].w = &y->wv;
	j.part[2].out = r->v;
	j.part[2].d = c->kv_dim;
	mm_run(r, &j);

	/* RoPE, then this position's k and v into each row's cache: all of
	 * them before any attention, so later rows of a prompt see earlier
	 * ones. */
	for (b = 0; b < n; b++) {
		const float *t = r->rope + b * c->head_size;
		float *kc = rows[b].kv + loff + rows[b].pos * kv_dim;

		rope_apply(r->q + b * dim, c->dim, t, c->head_size);
		rope_apply(r->k + b * kv_dim, c->kv_dim, t, c->head_size);
		memcpy(kc, r->k + b * kv_dim, kv_dim * sizeof(float));
		memcpy(kc + voff, r->v + b * kv_dim, kv_dim * sizeof(float));
	}
	r->rows = rows;
	r->layer = l;
	model_pool_run(r->pool, attn_fn, r, n * c->n_heads);

	/* output projection and residual */
	memset(&j, 0, sizeof(j));
	j.x = r->xb;
	j.in = c->dim;
	j.nb = n;
	j.nparts = 1;
	j.part[0].w = &y->wo;
	j.part[0].out = r->xb2;
	j.part[0].d = c->dim;
	mm_run(r, &j);
	for (i = 0; i < n * dim; i++)
		r->x[i] += r->xb2[i];

	/* FFN: w2(silu(w1 x) * w3 x) */
	for (b = 0; b < n; b++)
		rmsnorm(r->xb + b * dim, r->x + b * dim, y->rms_ffn,
		    c->dim, c->rms_eps);
	memset(&j, 0, sizeof(j));
	j.x = r->xb;
	j.in = c->dim;
	j.nb = n;
	j.nparts = 2;
	j.part[0].w = &y->w1;
	j.part[0].out = r->hb;
	j.part[0].d = c->hidden_dim;
	j.part[1].w = &y->w3;
	j.part[1].out = r->hb2;
	j.part[1].d = c->hidden_dim;
	mm_run(r, &j);
	for (i = 0; i < n * hid; i++) {
		float h = r->hb[i];

		r->hb[i] = h * (1.0f / (1.0f + expf(-h))) * r->hb2[i];
	}
	memset(&j, 0, sizeof(j));
	j.x = r->hb;
	j.in = c->hidden_dim;
	j.nb = n;
	j.nparts = 1;
	j.part[0].w = &y->w2;
	j.part[0].out = r->xb2;
	j.part[0].d = c->dim;
	mm_run(r, &j);
	for (i = 0; i < n * dim; i++)
		r->x[i] += r->xb2[i];
}

void
model_forward(struct model_run *r, const struct model_row *rows,
    uint32_t n)
{
	const struct model *m = r->m;
	const struct model_config *c = &m->cfg;
	size_t dim = c->dim;
	struct model_mm j;
	uint32_t b, l, nl = 0;

	if (n == 0)
		return;
	for (b = 0; b < n; b++) {
		const struct model_tensor *te = &m->w.token_embedding;
		const unsigned char *row = (const unsigned char *)te->data +
		    (size_t)rows[b].token * te->row_bytes;

		if (te->type == MODEL_DTYPE_F32)
			memcpy(r->x + b * dim, row, dim * sizeof(float));
		else
			quant_dequant_row((enum model_dtype)te->type, row,
			    r->x + b * dim, dim);
		rope_table(r->rope + b * c->head_size, c->head_size,
		    rows[b].pos, c->rope_theta, m->rope_freq_factors,
		    c->rope_freq_scale);
	}
	for (l = 0; l < c->n_layers; l++)
		forward_layer(r, rows, n, l);

	/* final norm and classifier, only for the rows that want logits */
	for (b = 0; b < n; b++) {
		if (rows[b].logits == NULL)
			continue;
		rmsnorm(r->xb + nl * dim, r->x + b * dim, m->w.rms_final,
		    c->dim, c->rms_eps);
		r->lrows[nl++] = b;
	}
	if (nl == 0)
		return;
	memset(&j, 0, sizeof(j));
	j.x = r->xb;
	j.in = c->dim;
	j.nb = nl;
	j.nparts = 1;
	j.part[0].w = &m->w.wcls;
	j.part[0].out = r->logits;
	j.part[0].d = c->vocab_size;
	mm_run(r, &j);
	for (b = 0; b < nl; b++)
		memcpy(rows[r->lrows[b]].logits, r->logits +
		    (size_t)b * c->vocab_size, c->vocab_size * sizeof(float));
}
