/*
 * model/quant_x86.c - the AVX2 and AVX-512 kernels of quant.h.
 *
 * Built without -mavx2: each function carries its own target attribute,
 * and quant.c calls them only after __builtin_cpu_supports said yes, so
 * the library still runs on a CPU without them. Elsewhere (not x86-64,
 * or not GCC/clang, or built with -DQUANT_NO_SIMD) the kernels are
 * absent and quant.c keeps to scalar.
 *
 * Each kernel reads up to four weight rows against one prepared
 * activation: the activation block is loaded (and its per-block terms
 * computed) once for the four rows. The row count is a compile-time
 * constant of an always-inlined body, so the rows' accumulators stay in
 * registers.
 *
 * Exactness: the integer parts are exact. Q8_0 / Q4_0 sum products in
 * int32 lanes (8 or 16) of 4 products each (|lane| <= 4 * 128 * 128,
 * exact in a float), then each lane times dx * dy is added in float;
 * the K types sum a whole super-block in int32 lanes before the one
 * float multiply.
 * F16 / BF16 products are exact in float (11- and 8-bit significands)
 * and summed in 8 (AVX2) or 16 (AVX-512) float lanes, where the scalar
 * kernel sums them in double.
 *
 * Follows ggml/src/ggml-cpu/arch/x86/quants.c (ggml_vec_dot_q8_0_q8_0,
 * ggml_vec_dot_q4_0_q8_0, ggml_vec_dot_q4_K_q8_K, ggml_vec_dot_q6_K_q8_K:
 * mul_sum_i8_pairs_float, bytes_from_nibbles_32) and ggml-cpu/vec.c /
 * simd-mappings.h (ggml_vec_dot_f16 / _bf16 with F16C and FMA).
 */
#include "model/quant_impl.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUANT_NO_SIMD)

#include <immintrin.h>

const int quant_have_simd = 1;

#define T_AVX2 "avx2,fma,f16c"
#define T_AVX512 "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"
/* a body inlined into each kernel that calls it (so built for its
 * target: an AVX2 body inlines into an AVX-512 caller too) */
#define BODY2 static inline __attribute__((always_inline, target(T_AVX2)))
#define BODY512 static inline __attribute__((always_inline, \
	target(T_AVX512)))
#define KERN2 static __attribute__((target(T_AVX2)))
#define KERN512 static __attribute__((target(T_AVX512)))

/* ---- helpers ---------------------------------------------------------- */

BODY2 float
hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v),
	    _mm256_extractf128_ps(v, 1));

	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

BODY2 float
f16(const uint8_t *p)
{
	return _cvtsh_ss(quant_ld16(p));
}

BODY2 __m256i
load256(const uint8_t *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

BODY2 __m128i
load128(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* ggml's mul_sum_i8_pairs_float without VNNI: x . y in 8 int32 lanes as
 * floats, |x| and sign(y, x) so maddubs gets an unsigned operand (exact:
 * pairs reach 2 * 128 * 127 < 2^15, y is never -128 from quant_prepare) */
BODY2 __m256
mul_sum_i8_pairs(__m256i x, __m256i y)
{
	const __m256i ax = _mm256_sign_epi8(x, x);
	const __m256i sy = _mm256_sign_epi8(y, x);
	const __m256i dot = _mm256_maddubs_epi16(ax, sy);

	return _mm256_cvtepi32_ps(_mm256_madd_epi16(dot,
	    _mm256_set1_epi16(1)));
}

/* ggml's bytes_from_nibbles_32: the 16 bytes' low nibbles as bytes
 * 0..15, their high nibbles as bytes 16..31 */
BODY2 __m256i
nibbles32(const uint8_t *p)
{
	const __m128i tmp = load128(p);
	const __m256i bytes = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);

	return _mm256_and_si256(bytes, _mm256_set1_epi8(0x0F));
}

/* ---- F16 / BF16 ------------------------------------------------------- */

/* 8 halves or bfloat16s at p widened to floats */
BODY2 __m256
ld8_f16(const uint8_t *p)
{
	return _mm256_cvtph_ps(load128(p));
}

BODY2 __m256
ld8_bf16(const uint8_t *p)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(
	    _mm256_cvtepu16_epi32(load128(p)), 16));
}

BODY2 float
widen(const uint8_t *p, int bf)
{
	uint32_t u = (uint32_t)quant_ld16(p) << 16;
	float f;

	if (!bf)
		return f16(p);
	memcpy(&f, &u, sizeof(f));
	return f;
}

BODY2 void
f16_rows2(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    float *out, const int R, const int bf)
{
	__m256 acc[4];
	size_t i;
	int r;

	for (r = 0; r < R; r++)
		acc[r] = _mm256_setzero_ps();
	for (i = 0; i + 8 <= n; i += 8) {
		__m256 y = bf ? ld8_bf16(xq + 2 * i) : ld8_f16(xq + 2 * i);

		for (r = 0; r < R; r++) {
			const uint8_t *p = w + r * stride + 2 * i;

			acc[r] = _mm256_fmadd_ps(bf ? ld8_bf16(p) : ld8_f16(p),
			    y, acc[r]);
		}
	}
	for (r = 0; r < R; r++) {
		float s = hsum8(acc[r]);
		size_t j;

		for (j = i; j < n; j++)
			s += widen(w + r * stride + 2 * j, bf) *
			    widen(xq + 2 * j, bf);
		out[r] = s;
	}
}

/* 16 halves / bfloat16s at p (the first `cnt` of them; the rest 0) */
BODY512 __m512
ld16_f16(const uint8_t *p, __mmask16 m)
{
	return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

BODY512 __m512
ld16_bf16(const uint8_t *p, __mmask16 m)
{
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
	    _mm256_maskz_loadu_epi16(m, p)), 16));
}

BODY512 void
f16_rows512(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    float *out, const int R, const int bf)
{
	__m512 acc[4];
	size_t i;
	int r;

	for (r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF :
		    (__mmask16)((1u << (n - i)) - 1);
		__m512 y = bf ? ld16_bf16(xq + 2 * i, m) :
		    ld16_f16(xq + 2 * i, m);

		for (r = 0; r < R; r++) {
			const uint8_t *p = w + r * stride + 2 * i;

			acc[r] = _mm512_fmadd_ps(bf ? ld16_bf16(p, m) :
			    ld16_f16(p, m), y, acc[r]);
		}
	}
	for (r = 0; r < R; r++)
		out[r] = _mm512_reduce_add_ps(acc[r]);
}

/* ---- Q8_0 x Q8_0 ------------------------------------------------------ */

/* ggml_vec_dot_q8_0_q8_0 (AVX2): per block d = dx * dy, acc += d *
 * mul_sum_i8_pairs(x, y) */
BODY2 void
q8_0_rows2(const uint8_t *w, size_t stride, size_t nb, const uint8_t *xq,
    float *out, const int R)
{
	__m256 acc[4];
	size_t b;
	int r;

	for (r = 0; r < R; r++)
		acc[r] = _mm256_setzero_ps();
	for (b = 0; b < nb; b++) {
		const uint8_t *yb = xq + b * QUANT_Q8_0_BYTES;
		const __m256i qy = load256(yb + 2);
		const float dy = f16(yb);

		for (r = 0; r < R; r++) {
			const uint8_t *xb = w + r * stride +
			    b * QUANT_Q8_0_BYTES;
			const __m256 d = _mm256_set1_ps(f16(xb) * dy);

			acc[r] = _mm256_fmadd_ps(d, mul_sum_i8_pairs(
			    load256(xb + 2), qy), acc[r]);
		}
	}
	for (r = 0; r < R; r++)
		out[r] = hsum8(acc[r]);
}

/*
 * With VNNI, two blocks per 512-bit step. ggml uses _mm256_dpbusd_epi32
 * on |x| and sign(y, x) here; instead the weight byte x is made unsigned
 * as x ^ 0x80 = x + 128 and the lane starts at -128 * (its 4 y's),
 * computed once per block for all rows, so each row costs one xor and
 * one dpbusd (exact: dpbusd does not saturate, a lane stays within
 * 4 * 255 * 128).
 *
 * d_pair: the d of two blocks as [d0 x a, d1 x a, ...] by `idx`, from
 * the fp16 values at p0 and p1 (the rows' scales widened together).
 */
BODY512 __m512
d_pair(const uint8_t *p0, const uint8_t *p1, __m512i idx)
{
	__m128i h = _mm_insert_epi16(_mm_cvtsi32_si128(quant_ld16(p0)),
	    quant_ld16(p1), 1);

	return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(
	    _mm_cvtph_ps(h)));
}

/* the 64 bytes of two 32-byte runs as one register */
BODY512 __m512i
load2x256(const uint8_t *p0, const uint8_t *p1)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(load256(p0)),
	    load256(p1), 1);
}

/* Q8_0 over pairs of blocks; an odd last block by the AVX2 body */
BODY512 void
q8_0_rows512w(const uint8_t *w, size_t stride, size_t nb,
    const uint8_t *xq, float *out, const int R)
{
	const __m512i k80 = _mm512_set1_epi8((char)0x80);
	const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1,
	    0, 0, 0, 0, 0, 0, 0, 0);
	__m512 acc[4];
	float tail[4];
	size_t b;
	int r;

	for (r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (b = 0; b + 2 <= nb; b += 2) {
		const uint8_t *y0 = xq + b * QUANT_Q8_0_BYTES;
		const uint8_t *y1 = y0 + QUANT_Q8_0_BYTES;
		const __m512i qy = load2x256(y0 + 2, y1 + 2);
		const __m512i c = _mm512_sub_epi32(_mm512_setzero_si512(),
		    _mm512_dpbusd_epi32(_mm512_setzero_si512(), k80, qy));
		const __m512 dy = d_pair(y0, y1, idx);

		for (r = 0; r < R; r++) {
			const uint8_t *x0 = w + r * stride +
			    b * QUANT_Q8_0_BYTES;
			const uint8_t *x1 = x0 + QUANT_Q8_0_BYTES;
			/* the row's blocks 8 ahead (272 bytes, two
			 * lines): at batch 1 this loop waits on DRAM,
			 * and four rows at a time are four streams for
			 * the hardware prefetcher (measured: 15-25% more
			 * GB/s on rows of 1,536 and 4,096) */
			__builtin_prefetch(x0 + 8 * QUANT_Q8_0_BYTES);
			__builtin_prefetch(x0 + 8 * QUANT_Q8_0_BYTES + 64);
			const __m512i p = _mm512_dpbusd_epi32(c,
			    _mm512_xor_si512(load2x256(x0 + 2, x1 + 2), k80),
			    qy);

			acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(d_pair(x0, x1,
			    idx), dy), _mm512_cvtepi32_ps(p), acc[r]);
		}
	}
	if (b < nb)
		q8_0_rows2(w + b * QUANT_Q8_0_BYTES, stride, 1,
		    xq + b * QUANT_Q8_0_BYTES, tail, R);
	for (r = 0; r < R; r++)
		out[r] = _mm512_reduce_add_ps(acc[r]) + (b < nb ? tail[r] : 0);
}

/*
 * q8_0_rows512w for four rows and B activation rows at once (a decode
 * step's batch): each weight block is loaded, made unsigned and its
 * scale widened once for all B, where B calls of q8_0_rows512w would do
 * it B times (llamafile's tinyBLAS tiles ggml's Q8_0 products the same
 * way). Per (row, activation) the operations and their order are
 * q8_0_rows512w's, so every result is the same bits.
 */
BODY512 void
q8_0_tile512w(const uint8_t *w, size_t stride, size_t nb,
    const uint8_t *xq, size_t xstride, float *out, size_t ostride,
    const int B)
{
	const __m512i k80 = _mm512_set1_epi8((char)0x80);
	const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1,
	    0, 0, 0, 0, 0, 0, 0, 0);
	__m512 acc[4][4];
	float tail[4];
	size_t b;
	int r, j;

	for (r = 0; r < 4; r++)
		for (j = 0; j < B; j++)
			acc[r][j] = _mm512_setzero_ps();
	for (b = 0; b + 2 <= nb; b += 2) {
		__m512i wx[4];
		__m512 wd[4];

		for (r = 0; r < 4; r++) {
			const uint8_t *x0 = w + r * stride +
			    b * QUANT_Q8_0_BYTES;
			const uint8_t *x1 = x0 + QUANT_Q8_0_BYTES;

			__builtin_prefetch(x0 + 8 * QUANT_Q8_0_BYTES);
			__builtin_prefetch(x0 + 8 * QUANT_Q8_0_BYTES + 64);
			wx[r] = _mm512_xor_si512(load2x256(x0 + 2, x1 + 2),
			    k80);
			wd[r] = d_pair(x0, x1, idx);
		}
		for (j = 0; j < B; j++) {
			const uint8_t *y0 = xq + j * xstride +
			    b * QUANT_Q8_0_BYTES;
			const uint8_t *y1 = y0 + QUANT_Q8_0_BYTES;
			const __m512i qy = load2x256(y0 + 2, y1 + 2);
			const __m512i c = _mm512_sub_epi32(
			    _mm512_setzero_si512(), _mm512_dpbusd_epi32(
			    _mm512_setzero_si512(), k80, qy));
			const __m512 dy = d_pair(y0, y1, idx);

			for (r = 0; r < 4; r++)
				acc[r][j] = _mm512_fmadd_ps(_mm512_mul_ps(
				    wd[r], dy), _mm512_cvtepi32_ps(
				    _mm512_dpbusd_epi32(c, wx[r], qy)),
				    acc[r][j]);
		}
	}
	for (j = 0; j < B; j++) {
		if (b < nb)
			q8_0_rows2(w + b * QUANT_Q8_0_BYTES, stride, 1,
			    xq + j * xstride + b * QUANT_Q8_0_BYTES, tail, 4);
		for (r = 0; r < 4; r++)
			out[j * ostride + r] = _mm512_reduce_add_ps(
			    acc[r][j]) + (b < nb ? tail[r] : 0);
	}
}

/* ---- Q4_0 x Q8_0 ------------------------------------------------------ */

/*
 * ggml_vec_dot_q4_0_q8_0 (AVX2) subtracts 8 from the nibbles and uses
 * mul_sum_i8_pairs; here the nibbles stay unsigned (0..15, a valid
 * maddubs operand as they are) and 8 * (the lane's 4 y's) is subtracted
 * in int32, computed once per block for all rows: exact, fewer ops.
 */
BODY2 void
q4_0_rows2(const uint8_t *w, size_t stride, size_t nb, const uint8_t *xq,
    float *out, const int R)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc[4];
	size_t b;
	int r;

	for (r = 0; r < R; r++)
		acc[r] = _mm256_setzero_ps();
	for (b = 0; b < nb; b++) {
		const uint8_t *yb = xq + b * QUANT_Q8_0_BYTES;
		const __m256i qy = load256(yb + 2);
		const __m256i c = _mm256_madd_epi16(_mm256_maddubs_epi16(
		    _mm256_set1_epi8(8), qy), ones);
		const float dy = f16(yb);

		for (r = 0; r < R; r++) {
			const uint8_t *xb = w + r * stride +
			    b * QUANT_Q4_0_BYTES;
			const __m256 d = _mm256_set1_ps(f16(xb) * dy);
			const __m256i p = _mm256_sub_epi32(_mm256_madd_epi16(
			    _mm256_maddubs_epi16(nibbles32(xb + 2), qy), ones),
			    c);

			acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p),
			    acc[r]);
		}
	}
	for (r = 0; r < R; r++)
		out[r] = hsum8(acc[r]);
}

/*
 * Q4_0 with VNNI over pairs of blocks: the lane starts at -8 * (its 4
 * y's), and dpbusd takes the nibbles as they are. The two blocks' 16 +
 * 16 bytes of nibbles become 128-bit lanes [lo0, lo1, hi0, hi1]; y's
 * lanes are put in the same order once per pair for all rows, so d runs
 * [d0 x 4, d1 x 4, d0 x 4, d1 x 4]. An odd last block: the AVX2 body.
 */
BODY512 void
q4_0_rows512w(const uint8_t *w, size_t stride, size_t nb,
    const uint8_t *xq, float *out, const int R)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F);
	const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0,
	    1, 1, 1, 1, 0, 0, 0, 0);
	__m512 acc[4];
	float tail[4];
	size_t b;
	int r;

	for (r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (b = 0; b + 2 <= nb; b += 2) {
		const uint8_t *y0 = xq + b * QUANT_Q8_0_BYTES;
		const uint8_t *y1 = y0 + QUANT_Q8_0_BYTES;
		/* [y0 0..15, y1 0..15, y0 16..31, y1 16..31] */
		const __m512i qy = _mm512_shuffle_i64x2(load2x256(y0 + 2,
		    y1 + 2), load2x256(y0 + 2, y1 + 2),
		    _MM_SHUFFLE(3, 1, 2, 0));
		const __m512i c = _mm512_sub_epi32(_mm512_setzero_si512(),
		    _mm512_dpbusd_epi32(_mm512_setzero_si512(),
		    _mm512_set1_epi8(8), qy));
		const __m512 dy = d_pair(y0, y1, idx);

		for (r = 0; r < R; r++) {
			const uint8_t *x0 = w + r * stride +
			    b * QUANT_Q4_0_BYTES;
			const uint8_t *x1 = x0 + QUANT_Q4_0_BYTES;
			const __m256i t = _mm256_set_m128i(load128(x1 + 2),
			    load128(x0 + 2));
			const __m512i q = _mm512_and_si512(_mm512_inserti64x4(
			    _mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4),
			    1), m4);
			const __m512i p = _mm512_dpbusd_epi32(c, q, qy);

			acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(d_pair(x0, x1,
			    idx), dy), _mm512_cvtepi32_ps(p), acc[r]);
		}
	}
	if (b < nb)
		q4_0_rows2(w + b * QUANT_Q4_0_BYTES, stride, 1,
		    xq + b * QUANT_Q8_0_BYTES, tail, R);
	for (r = 0; r < R; r++)
		out[r] = _mm512_reduce_add_ps(acc[r]) + (b < nb ? tail[r] : 0);
}

/* ---- Q4_K x Q8_K ------------------------------------------------------ */

/*
 * The 8 scales (bytes 0..7) and 8 mins (bytes 8..15) of a Q4_K block's
 * scales[12] at p, by the kmask steps of ggml_vec_dot_q4_K_q8_K on the
 * four 32-bit words u0..u2 at once (the same values as
 * get_scale_min_k4):
 *   out0 = u0 & k1            out1 = (u2 & k2) | ((u0 >> 6) & k3) << 4
 *   out2 = u1 & k1            out3 = (u2 >> 4 & k2) | ((u1 >> 6) & k3) << 4
 * Reads 16 bytes (the block's qs follow its scales).
 */
BODY2 __m128i
q4_k_scales(const uint8_t *p)
{
	const __m128i v = load128(p);
	const __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0));
	const __m128i b = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0));
	const __m128i even = _mm_and_si128(a, _mm_set1_epi32(0x3f3f3f3f));
	const __m128i odd = _mm_or_si128(_mm_and_si128(_mm_srlv_epi32(a,
	    _mm_set_epi32(4, 0, 0, 0)), _mm_set1_epi32(0x0f0f0f0f)),
	    _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(b, 6),
	    _mm_set1_epi32(0x03030303)), 4));

	return _mm_blend_epi32(even, odd, 0xA);
}

/*
 * ggml_vec_dot_q4_K_q8_K (AVX2): per 64 elements the 32 bytes of qs give
 * the low nibbles (sub-block 2j) and the high ones (2j + 1); maddubs
 * with y, madd with the sub-block's 6-bit scale, summed in int32 over
 * the super-block, then one d * yd multiply. The mins: the pairs of
 * bsums (once per super-block for all rows) madd the 8 mins, times
 * dmin * yd into a second accumulator.
 */
BODY2 void
q4_k_rows2(const uint8_t *w, size_t stride, size_t nb, const uint8_t *xq,
    float *out, const int R)
{
	__m256i word[8];        /* byte shuffles broadcasting int16 k */
	__m256 acc[4];
	__m128 accm[4];
	size_t b;
	int r, j;

	for (j = 0; j < 8; j++)
		word[j] = _mm256_set1_epi16((short)(0x0100 * (2 * j + 1) +
		    2 * j));
	for (r = 0; r < R; r++) {
		acc[r] = _mm256_setzero_ps();
		accm[r] = _mm_setzero_ps();
	}
	for (b = 0; b < nb; b++) {
		const uint8_t *yb = xq + b * QUANT_Q8_K_BYTES;
		const uint8_t *q8 = yb + QUANT_Q8_K_QS;
		const __m256i bs = load256(yb + QUANT_Q8_K_BSUMS);
		/* bsums pairs: 8 int16 sums of each 32 y (|.| <= 4096) */
		const __m128i ysum = _mm_hadd_epi16(_mm256_castsi256_si128(bs),
		    _mm256_extracti128_si256(bs, 1));
		const float yd = quant_ldf(yb);

		for (r = 0; r < R; r++) {
			const uint8_t *xb = w + r * stride +
			    b * QUANT_Q4_K_BYTES;
			const uint8_t *qs = xb + QUANT_Q4_K_QS;
			const __m128i sm = q4_k_scales(xb +
			    QUANT_Q4_K_SCALES);
			const __m256i sc = _mm256_broadcastsi128_si256(
			    _mm_cvtepu8_epi16(sm));
			const __m128i mins = _mm_cvtepu8_epi16(
			    _mm_srli_si128(sm, 8));
			__m256i sumi = _mm256_setzero_si256();

			for (j = 0; j < 4; j++) {
				const __m256i q = load256(qs + 32 * j);
				const __m256i m4 = _mm256_set1_epi8(0x0F);
				const __m256i lo = _mm256_and_si256(q, m4);
				const __m256i hi = _mm256_and_si256(
				    _mm256_srli_epi16(q, 4), m4);

				sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(
				    _mm256_maddubs_epi16(lo,
				    load256(q8 + 64 * j)),
				    _mm256_shuffle_epi8(sc, word[2 * j])));
				sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(
				    _mm256_maddubs_epi16(hi,
				    load256(q8 + 64 * j + 32)),
				    _mm256_shuffle_epi8(sc, word[2 * j + 1])));
			}
			acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(f16(xb) * yd),
			    _mm256_cvtepi32_ps(sumi), acc[r]);
			accm[r] = _mm_fmadd_ps(_mm_set1_ps(
			    f16(xb + QUANT_Q4_K_DMIN) * yd),
			    _mm_cvtepi32_ps(_mm_madd_epi16(mins, ysum)),
			    accm[r]);
		}
	}
	for (r = 0; r < R; r++) {
		__m128 m = accm[r];

		m = _mm_add_ps(m, _mm_movehl_ps(m, m));
		m = _mm_add_ss(m, _mm_movehdup_ps(m));
		out[r] = hsum8(acc[r]) - _mm_cvtss_f32(m);
	}
}

/* ---- Q6_K x Q8_K ------------------------------------------------------ */

/*
 * ggml_vec_dot_q6_K_q8_K (AVX2): per 128 elements the 64 ql bytes and
 * 32 qh bytes give four groups of 32 quants (0..63, unsigned: a valid
 * maddubs operand); maddubs with y, madd with the group's two int8
 * scales (one per 16 elements, one per 128-bit half: the chunk's 8
 * scales as int16 in both halves, spread by a byte shuffle). ggml subtracts
 * maddubs(32, y) per group; here -32 * sum(scale * bsum) is subtracted
 * once per super-block from the same int32 lanes (exact).
 */
BODY2 void
q6_k_rows2(const uint8_t *w, size_t stride, size_t nb, const uint8_t *xq,
    float *out, const int R)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
	__m256i pair[4];        /* group k: word 2k (low half), 2k+1 (high) */
	__m256 acc[4];
	size_t b;
	int r, c;

	for (c = 0; c < 4; c++)
		pair[c] = _mm256_set_m128i(_mm_set1_epi16((short)(0x0100 *
		    (4 * c + 3) + 4 * c + 2)), _mm_set1_epi16((short)(0x0100 *
		    (4 * c + 1) + 4 * c)));
	for (r = 0; r < R; r++)
		acc[r] = _mm256_setzero_ps();
	for (b = 0; b < nb; b++) {
		const uint8_t *yb = xq + b * QUANT_Q8_K_BYTES;
		const uint8_t *q8 = yb + QUANT_Q8_K_QS;
		const __m256i bs = load256(yb + QUANT_Q8_K_BSUMS);
		const float yd = quant_ldf(yb);

		for (r = 0; r < R; r++) {
			const uint8_t *xb = w + r * stride +
			    b * QUANT_Q6_K_BYTES;
			const __m256i sc16 = _mm256_cvtepi8_epi16(load128(xb +
			    QUANT_Q6_K_SCALES));
			__m256i sumi = _mm256_slli_epi32(_mm256_madd_epi16(
			    sc16, bs), 5);

			sumi = _mm256_sub_epi32(_mm256_setzero_si256(), sumi);
			for (c = 0; c < 2; c++) {
				/* scales 8c..8c+7 in both halves */
				const __m256i sc = c ?
				    _mm256_permute2x128_si256(sc16, sc16, 0x11) :
				    _mm256_permute2x128_si256(sc16, sc16, 0x00);
				const __m256i qa = load256(xb + 64 * c);
				const __m256i qb = load256(xb + 64 * c + 32);
				const __m256i qh = load256(xb + QUANT_Q6_K_QH +
				    32 * c);
				const uint8_t *y = q8 + 128 * c;
				__m256i q[4];
				int k;

				q[0] = _mm256_or_si256(_mm256_and_si256(qa, m4),
				    _mm256_and_si256(_mm256_slli_epi16(qh, 4),
				    m30));
				q[1] = _mm256_or_si256(_mm256_and_si256(qb, m4),
				    _mm256_and_si256(_mm256_slli_epi16(qh, 2),
				    m30));
				q[2] = _mm256_or_si256(_mm256_and_si256(
				    _mm256_srli_epi16(qa, 4), m4),
				    _mm256_and_si256(qh, m30));
				q[3] = _mm256_or_si256(_mm256_and_si256(
				    _mm256_srli_epi16(qb, 4), m4),
				    _mm256_and_si256(_mm256_srli_epi16(qh, 2),
				    m30));
				for (k = 0; k < 4; k++)
					sumi = _mm256_add_epi32(sumi,
					    _mm256_madd_epi16(
					    _mm256_maddubs_epi16(q[k],
					    load256(y + 32 * k)),
					    _mm256_shuffle_epi8(sc, pair[k])));
			}
			acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(
			    f16(xb + QUANT_Q6_K_D) * yd),
			    _mm256_cvtepi32_ps(sumi), acc[r]);
		}
	}
	for (r = 0; r < R; r++)
		out[r] = hsum8(acc[r]);
}

/*
 * Q6_K with 512-bit steps: per 128 elements the 64 ql bytes load as
 * [ql 0..31 | ql 32..63] and the 32 qh bytes twice, shifted per half
 * (vpsllvw / vpsrlvw), giving quants for elements 0..63 and 64..127 in
 * y's order; the 16 int16 scales are spread by vpermw.
 */
BODY512 void
q6_k_rows512(const uint8_t *w, size_t stride, size_t nb, const uint8_t *xq,
    float *out, const int R)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
	const __m512i shl = _mm512_inserti64x4(_mm512_castsi256_si512(
	    _mm256_set1_epi16(4)), _mm256_set1_epi16(2), 1);
	const __m512i shr = _mm512_inserti64x4(_mm512_setzero_si512(),
	    _mm256_set1_epi16(2), 1);
	__m512i idx[4];
	__m512 acc[4];
	size_t b;
	int r, c, k;

	/* idx[2c + h], word i: scale 8c + 4h + i / 8 */
	for (k = 0; k < 4; k++) {
		uint32_t v[16];
		int l;

		for (l = 0; l < 16; l++) {
			uint32_t g = (uint32_t)(4 * k + l / 4);

			v[l] = g | g << 16;
		}
		idx[k] = _mm512_loadu_si512((const void *)v);
	}
	for (r = 0; r < R; r++)
		acc[r] = _mm512_setzero_ps();
	for (b = 0; b < nb; b++) {
		const uint8_t *yb = xq + b * QUANT_Q8_K_BYTES;
		const uint8_t *q8 = yb + QUANT_Q8_K_QS;
		const __m256i bs = load256(yb + QUANT_Q8_K_BSUMS);
		const float yd = quant_ldf(yb);

		for (r = 0; r < R; r++) {
			const uint8_t *xb = w + r * stride +
			    b * QUANT_Q6_K_BYTES;
			const __m256i sc16 = _mm256_cvtepi8_epi16(load128(xb +
			    QUANT_Q6_K_SCALES));
			const __m512i sc = _mm512_castsi256_si512(sc16);
			/* -32 * sum(scale * bsum), as in q6_k_rows2 */
			__m512i sumi = _mm512_inserti64x4(_mm512_setzero_si512(),
			    _mm256_sub_epi32(_mm256_setzero_si256(),
			    _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5)),
			    0);

			for (c = 0; c < 2; c++) {
				const __m512i qa = _mm512_loadu_si512(
				    (const void *)(xb + 64 * c));
				const __m512i qh = _mm512_broadcast_i64x4(
				    load256(xb + QUANT_Q6_K_QH + 32 * c));
				const __m512i q01 = _mm512_or_si512(
				    _mm512_and_si512(qa, m4), _mm512_and_si512(
				    _mm512_sllv_epi16(qh, shl), m30));
				const __m512i q23 = _mm512_or_si512(
				    _mm512_and_si512(_mm512_srli_epi16(qa, 4),
				    m4), _mm512_and_si512(_mm512_srlv_epi16(qh,
				    shr), m30));
				const uint8_t *y = q8 + 128 * c;

				sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(
				    _mm512_maddubs_epi16(q01, _mm512_loadu_si512(
				    (const void *)y)), _mm512_permutexvar_epi16(
				    idx[2 * c], sc)));
				sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(
				    _mm512_maddubs_epi16(q23, _mm512_loadu_si512(
				    (const void *)(y + 64))),
				    _mm512_permutexvar_epi16(idx[2 * c + 1], sc)));
			}
			acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(
			    f16(xb + QUANT_Q6_K_D) * yd),
			    _mm512_cvtepi32_ps(sumi), acc[r]);
		}
	}
	for (r = 0; r < R; r++)
		out[r] = _mm512_reduce_add_ps(acc[r]);
}

/* ---- the kernels: one function per type and target, dispatching on the
 * row count to the bodies above ---------------------------------------- */

#define ROWS_SWITCH(body, ...) do { \
	switch (nrows) { \
	case 1: body(__VA_ARGS__, 1); break; \
	case 2: body(__VA_ARGS__, 2); break; \
	case 3: body(__VA_ARGS__, 3); break; \
	default: body(__VA_ARGS__, 4); break; \
	} \
} while (0)

/* f16_rows with the type as the last constant */
#define F16_2(w, s, n, x, o, R) f16_rows2(w, s, n, x, o, R, 0)
#define BF16_2(w, s, n, x, o, R) f16_rows2(w, s, n, x, o, R, 1)
#define F16_512(w, s, n, x, o, R) f16_rows512(w, s, n, x, o, R, 0)
#define BF16_512(w, s, n, x, o, R) f16_rows512(w, s, n, x, o, R, 1)

KERN2 void
f16_avx2(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(F16_2, w, stride, n, xq, out);
}

KERN2 void
bf16_avx2(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(BF16_2, w, stride, n, xq, out);
}

KERN2 void
q8_0_avx2(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(q8_0_rows2, w, stride, n / QUANT_QK, xq, out);
}

KERN2 void
q4_0_avx2(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(q4_0_rows2, w, stride, n / QUANT_QK, xq, out);
}

KERN2 void
q4_k_avx2(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(q4_k_rows2, w, stride, n / QUANT_QK_K, xq, out);
}

KERN2 void
q6_k_avx2(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(q6_k_rows2, w, stride, n / QUANT_QK_K, xq, out);
}

KERN512 void
f16_avx512(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(F16_512, w, stride, n, xq, out);
}

KERN512 void
bf16_avx512(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(BF16_512, w, stride, n, xq, out);
}

KERN512 void
q8_0_avx512(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(q8_0_rows512w, w, stride, n / QUANT_QK, xq, out);
}

KERN512 void
q4_0_avx512(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(q4_0_rows512w, w, stride, n / QUANT_QK, xq, out);
}

/* Q4_K: the AVX2 body built for this target (a 512-bit version, the
 * nibbles of a 64-element chunk in one register, measured ~10% slower:
 * 512-bit integer ops issue on two ports where 256-bit ones use three,
 * and the lane inserts cost a shuffle each) */
KERN512 void
q4_k_avx512(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(q4_k_rows2, w, stride, n / QUANT_QK_K, xq, out);
}

KERN512 void
q6_k_avx512(const uint8_t *w, size_t stride, size_t n, const uint8_t *xq,
    size_t nrows, float *out)
{
	ROWS_SWITCH(q6_k_rows512, w, stride, n / QUANT_QK_K, xq, out);
}

KERN512 void
q8_0_tile_avx512(const uint8_t *w, size_t stride, size_t n,
    const uint8_t *xq, size_t xstride, size_t nx, float *out,
    size_t ostride)
{
	switch (nx) {
	case 1: q8_0_tile512w(w, stride, n / QUANT_QK, xq, xstride, out,
	    ostride, 1); break;
	case 2: q8_0_tile512w(w, stride, n / QUANT_QK, xq, xstride, out,
	    ostride, 2); break;
	case 3: q8_0_tile512w(w, stride, n / QUANT_QK, xq, xstride, out,
	    ostride, 3); break;
	default: q8_0_tile512w(w, stride, n / QUANT_QK, xq, xstride, out,
	    ostride, 4); break;
	}
}

const struct quant_kernel quant_kernel_avx2 = {
	"avx2", f16_avx2, bf16_avx2, q8_0_avx2, q4_0_avx2, q4_k_avx2,
	q6_k_avx2, NULL
};

const struct quant_kernel quant_kernel_avx512 = {
	"avx512", f16_avx512, bf16_avx512, q8_0_avx512, q4_0_avx512,
	q4_k_avx512, q6_k_avx512, q8_0_tile_avx512
};

#else /* no SIMD kernels in this build */

const int quant_have_simd = 0;
const struct quant_kernel quant_kernel_avx2 = { "avx2", NULL, NULL, NULL,
	NULL, NULL, NULL, NULL };
const struct quant_kernel quant_kernel_avx512 = { "avx512", NULL, NULL,
	NULL, NULL, NULL, NULL, NULL };

#endif
