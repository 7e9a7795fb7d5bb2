/*
 * model/quant.c - the fp16 / bf16 conversions, the scalar kernel, the
 * choice of kernel and the API of quant.h. ggml's reference quantizers
 * and dequantizers live in quant_ref.c, the SIMD kernels in quant_x86.c.
 *
 * Sources followed (github.com/ggml-org/llama.cpp):
 *   ggml/src/ggml-impl.h      ggml_compute_fp16_to_fp32 / fp32_to_fp16
 *                             (from the FP16 library), fp32 <-> bf16
 *   ggml/src/ggml-cpu/quants.c  ggml_vec_dot_*_generic (the scalar dots)
 *   ggml/src/ggml-cpu/vec.c   ggml_vec_dot_f16 / _bf16 (double sums)
 */
#include "model/quant.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUANT_NO_SIMD)
#include <cpuid.h>
#endif

#include "model/quant_impl.h"

/* ---- fp16 / bf16 ------------------------------------------------------ */

static inline float
f32_from_bits(uint32_t w)
{
	float f;

	memcpy(&f, &w, sizeof(f));
	return f;
}

static inline uint32_t
f32_bits(float f)
{
	uint32_t w;

	memcpy(&w, &f, sizeof(w));
	return w;
}

/* ggml_compute_fp16_to_fp32: exact, subnormals, inf and NaN included */
float
quant_f16_to_f32(uint16_t h)
{
	const uint32_t w = (uint32_t)h << 16;
	const uint32_t sign = w & UINT32_C(0x80000000);
	const uint32_t two_w = w + w;
	const uint32_t exp_offset = UINT32_C(0xE0) << 23;
	const float exp_scale = 0x1.0p-112f;
	const float normalized = f32_from_bits((two_w >> 4) + exp_offset) *
	    exp_scale;
	const uint32_t magic_mask = UINT32_C(126) << 23;
	const float denormalized = f32_from_bits((two_w >> 17) | magic_mask) -
	    0.5f;
	const uint32_t cutoff = UINT32_C(1) << 27;

	return f32_from_bits(sign | (two_w < cutoff ? f32_bits(denormalized) :
	    f32_bits(normalized)));
}

/* ggml_compute_fp32_to_fp16: round to nearest even by float arithmetic
 * (scale to inf and back, then a bias that puts the kept bits in place) */
uint16_t
quant_f32_to_f16(float f)
{
	const float scale_to_inf = 0x1.0p+112f;
	const float scale_to_zero = 0x1.0p-110f;
	float base = (fabsf(f) * scale_to_inf) * scale_to_zero;
	const uint32_t w = f32_bits(f);
	const uint32_t shl1_w = w + w;
	const uint32_t sign = w & UINT32_C(0x80000000);
	uint32_t bias = shl1_w & UINT32_C(0xFF000000), bits, nonsign;

	if (bias < UINT32_C(0x71000000))
		bias = UINT32_C(0x71000000);
	base = f32_from_bits((bias >> 1) + UINT32_C(0x07800000)) + base;
	bits = f32_bits(base);
	nonsign = ((bits >> 13) & UINT32_C(0x00007C00)) +
	    (bits & UINT32_C(0x00000FFF));
	return (uint16_t)((sign >> 16) |
	    (shl1_w > UINT32_C(0xFF000000) ? UINT32_C(0x7E00) : nonsign));
}

float
quant_bf16_to_f32(uint16_t h)
{
	return f32_from_bits((uint32_t)h << 16);
}

/* ggml_compute_fp32_to_bf16 */
uint16_t
quant_f32_to_bf16(float f)
{
	uint32_t u = f32_bits(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 64);   /* NaN: force quiet */
	return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

/* ---- the scalar kernel (ggml's *_generic dots) ------------------------ */

/* ggml_vec_dot_f16: exact float products summed in double */
static void
dot_f16(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	size_t r, i;

	for (r = 0; r < nrows; r++, w += stride) {
		double s = 0;

		for (i = 0; i < n; i++)
			s += (double)(quant_f16_to_f32(quant_ld16(w + 2 * i)) *
			    quant_f16_to_f32(quant_ld16(xq + 2 * i)));
		out[r] = (float)s;
	}
}

/* ggml_vec_dot_bf16: likewise */
static void
dot_bf16(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	size_t r, i;

	for (r = 0; r < nrows; r++, w += stride) {
		double s = 0;

		for (i = 0; i < n; i++)
			s += (double)(quant_bf16_to_f32(quant_ld16(w + 2 * i)) *
			    quant_bf16_to_f32(quant_ld16(xq + 2 * i)));
		out[r] = (float)s;
	}
}

/* ggml_vec_dot_q8_0_q8_0_generic: per block, the exact integer sum times
 * dx * dy, added in float */
static void
dot_q8_0(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	size_t r, b, j;

	for (r = 0; r < nrows; r++, w += stride) {
		const uint8_t *x = w, *y = xq;
		float s = 0;

		for (b = 0; b < n / QUANT_QK; b++, x += QUANT_Q8_0_BYTES,
		    y += QUANT_Q8_0_BYTES) {
			int32_t sumi = 0;

			for (j = 0; j < QUANT_QK; j++)
				sumi += (int8_t)x[2 + j] * (int8_t)y[2 + j];
			s += (float)sumi * (quant_f16_to_f32(quant_ld16(x)) *
			    quant_f16_to_f32(quant_ld16(y)));
		}
		out[r] = s;
	}
}

/* ggml_vec_dot_q4_0_q8_0_generic */
static void
dot_q4_0(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	size_t r, b, j;

	for (r = 0; r < nrows; r++, w += stride) {
		const uint8_t *x = w, *y = xq;
		float s = 0;

		for (b = 0; b < n / QUANT_QK; b++, x += QUANT_Q4_0_BYTES,
		    y += QUANT_Q8_0_BYTES) {
			int32_t sumi = 0;

			for (j = 0; j < QUANT_QK / 2; j++) {
				sumi += ((x[2 + j] & 0x0F) - 8) *
				    (int8_t)y[2 + j];
				sumi += ((x[2 + j] >> 4) - 8) *
				    (int8_t)y[2 + j + QUANT_QK / 2];
			}
			s += (float)sumi * (quant_f16_to_f32(quant_ld16(x)) *
			    quant_f16_to_f32(quant_ld16(y)));
		}
		out[r] = s;
	}
}

/* ggml_vec_dot_q4_K_q8_K_generic: per super-block the exact integer
 * sum of scale * q * y over the 8 sub-blocks times d * yd, minus the
 * integer sum of min * bsums times dmin * yd */
static void
dot_q4_k(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	size_t r, b;
	int j, l;

	for (r = 0; r < nrows; r++, w += stride) {
		const uint8_t *x = w, *y = xq;
		float s = 0;

		for (b = 0; b < n / QUANT_QK_K; b++, x += QUANT_Q4_K_BYTES,
		    y += QUANT_Q8_K_BYTES) {
			const uint8_t *q = x + QUANT_Q4_K_QS;
			const int8_t *q8 = (const int8_t *)(y + QUANT_Q8_K_QS);
			float yd = quant_ldf(y);
			int32_t sumi = 0, summ = 0;

			for (j = 0; j < 8; j++) {
				uint8_t sc, m;
				int32_t si = 0;
				int16_t b0, b1;

				quant_scale_min_k4(j, x + QUANT_Q4_K_SCALES, &sc,
				    &m);
				for (l = 0; l < 32; l++)
					si += (j & 1 ? q[32 * (j / 2) + l] >> 4 :
					    q[32 * (j / 2) + l] & 0xF) *
					    q8[32 * j + l];
				sumi += sc * si;
				memcpy(&b0, y + QUANT_Q8_K_BSUMS + 4 * j, 2);
				memcpy(&b1, y + QUANT_Q8_K_BSUMS + 4 * j + 2, 2);
				summ += m * (b0 + b1);
			}
			s += quant_f16_to_f32(quant_ld16(x)) * yd *
			    (float)sumi;
			s -= quant_f16_to_f32(quant_ld16(x + QUANT_Q4_K_DMIN)) *
			    yd * (float)summ;
		}
		out[r] = s;
	}
}

/* ggml_vec_dot_q6_K_q8_K_generic: the exact integer sum of scale *
 * (q - 32) * y over the 16 groups times d * yd */
static void
dot_q6_k(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	size_t r, b;
	int e, g;

	for (r = 0; r < nrows; r++, w += stride) {
		const uint8_t *x = w, *y = xq;
		float s = 0;

		for (b = 0; b < n / QUANT_QK_K; b++, x += QUANT_Q6_K_BYTES,
		    y += QUANT_Q8_K_BYTES) {
			const int8_t *sc = (const int8_t *)(x +
			    QUANT_Q6_K_SCALES);
			const int8_t *q8 = (const int8_t *)(y + QUANT_Q8_K_QS);
			int8_t q[QUANT_QK_K];
			int32_t sumi = 0;

			quant_q6_k_unpack(x, q);
			for (g = 0; g < 16; g++) {
				int32_t si = 0;

				for (e = 16 * g; e < 16 * g + 16; e++)
					si += q[e] * q8[e];
				sumi += sc[g] * si;
			}
			s += quant_f16_to_f32(quant_ld16(x + QUANT_Q6_K_D)) *
			    quant_ldf(y) * (float)sumi;
		}
		out[r] = s;
	}
}

static const struct quant_kernel quant_kernel_scalar = {
	"scalar", dot_f16, dot_bf16, dot_q8_0, dot_q4_0, dot_q4_k, dot_q6_k,
	NULL
};

/* ---- the choice of kernel --------------------------------------------- */

static _Atomic(const struct quant_kernel *) quant_kernel_cur;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUANT_NO_SIMD)
/* F16C (CPUID leaf 1, ECX bit 29): clang's __builtin_cpu_supports has
 * no name for it. Its registers are AVX's, whose OS support the "avx2"
 * answer already includes. */
static int
has_f16c(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
#endif

/* 1 if this CPU (and OS) runs kernel k */
static int
kernel_runs(const struct quant_kernel *k)
{
	if (k == &quant_kernel_scalar)
		return 1;
	if (!quant_have_simd)
		return 0;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUANT_NO_SIMD)
	__builtin_cpu_init();
	if (k == &quant_kernel_avx2)
		return __builtin_cpu_supports("avx2") &&
		    __builtin_cpu_supports("fma") && has_f16c();
	if (k == &quant_kernel_avx512)
		return __builtin_cpu_supports("avx2") &&
		    __builtin_cpu_supports("fma") && has_f16c() &&
		    __builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("avx512bw") &&
		    __builtin_cpu_supports("avx512vl") &&
		    __builtin_cpu_supports("avx512vnni");
#endif
	return 0;
}

/* The kernel in use; the first call picks the best one. Two threads
 * racing here compute the same answer, so a plain store is enough. */
static const struct quant_kernel *
kernel(void)
{
	const struct quant_kernel *k = atomic_load_explicit(&quant_kernel_cur,
	    memory_order_acquire);

	if (k != NULL)
		return k;
	if (kernel_runs(&quant_kernel_avx512))
		k = &quant_kernel_avx512;
	else if (kernel_runs(&quant_kernel_avx2))
		k = &quant_kernel_avx2;
	else
		k = &quant_kernel_scalar;
	atomic_store_explicit(&quant_kernel_cur, k, memory_order_release);
	return k;
}

const char *
quant_kernel_name(void)
{
	return kernel()->name;
}

int
quant_set_kernel(const char *name)
{
	const struct quant_kernel *all[] = { &quant_kernel_scalar,
	    &quant_kernel_avx2, &quant_kernel_avx512 };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (all[i]->name == NULL || strcmp(all[i]->name, name) != 0)
			continue;
		if (!kernel_runs(all[i]))
			return -1;
		atomic_store_explicit(&quant_kernel_cur, all[i],
		    memory_order_release);
		return 0;
	}
	return -1;
}

/* ---- the API ---------------------------------------------------------- */

int
quant_supported(uint32_t t)
{
	return t == MODEL_DTYPE_F16 || t == MODEL_DTYPE_BF16 ||
	    t == MODEL_DTYPE_Q8_0 || t == MODEL_DTYPE_Q4_0 ||
	    t == MODEL_DTYPE_Q4_K || t == MODEL_DTYPE_Q6_K;
}

enum model_dtype
quant_vec_type(enum model_dtype t)
{
	switch (t) {
	case MODEL_DTYPE_F16:
	case MODEL_DTYPE_BF16:
		return t;
	case MODEL_DTYPE_Q8_0:
	case MODEL_DTYPE_Q4_0:
		return MODEL_DTYPE_Q8_0;
	case MODEL_DTYPE_Q4_K:
	case MODEL_DTYPE_Q6_K:
		return MODEL_DTYPE_Q8_K;
	default:
		return MODEL_DTYPE_F32;
	}
}

/*
 * Activations for a Q8_0 or Q4_0 product as ggml quantizes them at run
 * time on x86 (ggml-cpu/arch/x86/quants.c quantize_row_q8_0, the
 * AVX2/AVX-512 path that llama.cpp takes on this kind of CPU): d = amax
 * / 127 stored as fp16, each x times id = 127 / amax, rounded to the
 * nearest integer with ties to even (_mm256_round_ps(_MM_ROUND_NEAREST)).
 * The reference quantizer (quantize_row_q8_0_ref: id = 1 / d, roundf,
 * ties away from zero) gives the same bytes but for ties and the last
 * bit of id, which is enough to part a greedy text from llama.cpp's
 * after a dozen tokens.
 */
static void
prepare_q8_0(const float *x, uint8_t *y, size_t n)
{
	size_t b;
	unsigned j;

	for (b = 0; b < n / QUANT_QK; b++, x += QUANT_QK,
	    y += QUANT_Q8_0_BYTES) {
		float amax = 0.0f, d, id;
		uint16_t dh;

		for (j = 0; j < QUANT_QK; j++)
			if (fabsf(x[j]) > amax)
				amax = fabsf(x[j]);
		d = amax / 127.f;
		id = amax != 0.0f ? 127.f / amax : 0.0f;
		dh = quant_f32_to_f16(d);
		memcpy(y, &dh, 2);
		for (j = 0; j < QUANT_QK; j++)
			y[2 + j] = (uint8_t)(int8_t)nearbyintf(x[j] * id);
	}
}

void
quant_prepare(enum model_dtype t, const float *x, void *dst, size_t n)
{
	if (!quant_supported(t))
		return;
	if (quant_vec_type(t) == MODEL_DTYPE_Q8_0 && n % QUANT_QK == 0) {
		prepare_q8_0(x, dst, n);
		return;
	}
	quant_quantize_row(quant_vec_type(t), x, dst, n);
}

void
quant_dot_rows(enum model_dtype t, const void *w, size_t n, const void *xq,
    size_t nrows, float *out)
{
	const struct quant_kernel *k = kernel();
	uint64_t stride = model_dtype_row_bytes(t, n);
	quant_dot_fn f = NULL;
	size_t r;

	switch (t) {
	case MODEL_DTYPE_F16: f = k->f16; break;
	case MODEL_DTYPE_BF16: f = k->bf16; break;
	case MODEL_DTYPE_Q8_0: f = k->q8_0; break;
	case MODEL_DTYPE_Q4_0: f = k->q4_0; break;
	case MODEL_DTYPE_Q4_K: f = k->q4_k; break;
	case MODEL_DTYPE_Q6_K: f = k->q6_k; break;
	default: break;
	}
	if (f == NULL || stride == 0 || nrows < 1 || nrows > QUANT_MAX_ROWS) {
		for (r = 0; r < nrows && r < QUANT_MAX_ROWS; r++)
			out[r] = NAN;
		return;
	}
	f(w, (size_t)stride, n, xq, nrows, out);
}

void
quant_dot_tile(enum model_dtype t, const void *w, size_t n, const void *xq,
    size_t xstride, size_t nx, float *out, size_t ostride)
{
	const struct quant_kernel *k = kernel();
	uint64_t stride = model_dtype_row_bytes(t, n);
	size_t j, r;

	if (t == MODEL_DTYPE_Q8_0 && k->q8_0_tile != NULL && stride != 0 &&
	    nx >= 1 && nx <= QUANT_MAX_ROWS) {
		k->q8_0_tile(w, (size_t)stride, n, xq, xstride, nx, out,
		    ostride);
		return;
	}
	for (j = 0; j < nx; j++) {
		float o[QUANT_MAX_ROWS];

		quant_dot_rows(t, w, n, (const unsigned char *)xq +
		    j * xstride, QUANT_MAX_ROWS, o);
		for (r = 0; r < QUANT_MAX_ROWS; r++)
			out[j * ostride + r] = o[r];
	}
}
