/*
 * test_quant.c - the quantized and half-precision dot kernels
 * (src/model/quant.c, quant_x86.c): fp16 / bf16 conversions against
 * known bit patterns (rounding, inf, NaN, subnormals) and the compiler's
 * own _Float16; the block layouts against known bytes and hand-built
 * blocks; quantize / dequantize round trips within each type's bound;
 * the scalar dot against a double dot of the dequantized operands; each
 * SIMD kernel against the scalar one on random rows of 32..4096
 * elements and 1..4 rows, a row's result the same bits whatever rows
 * share its call; integer parts exact (bit-equal results where
 * every float step is exact); threads racing on the first use; the
 * API's tables and bad calls.
 *
 * Tolerance between two ways of summing the same terms: both add the
 * same products (exact integers times the same float d, or exact float
 * products for F16 / BF16), only in another order, so each result is
 * within (additions on its longest path) * 2^-24 * S of the exact sum,
 * S = sum of |w_i x_i| (Higham, recursive summation). The longest path
 * is at most n/8 + 3 (eight-lane float sums plus the final reduction)
 * plus one rounding per block (the product sumi * d); n/4 + 16 bounds
 * both paths for every type, so |a - b| <= (n/4 + 16) * 2^-24 * S.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dtype.h"
#include "model/quant.h"

#define MAXN 4096

static const enum model_dtype types[] = {
	MODEL_DTYPE_F16, MODEL_DTYPE_BF16, MODEL_DTYPE_Q8_0,
	MODEL_DTYPE_Q4_0, MODEL_DTYPE_Q4_K, MODEL_DTYPE_Q6_K,
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static const char *const simd_kernels[] = { "avx2", "avx512" };

/* ---- a seeded PRNG (xorshift64*) and normal deviates ----------------- */

static uint64_t rng_state = 88172645463325252ull;

static uint64_t
rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* uniform in [0, 1) */
static double
rng_unit(void)
{
	return (double)(rng_next() >> 11) / 9007199254740992.0;
}

static float
rng_normal(void)
{
	double u = rng_unit() + 1e-12, v = rng_unit();

	return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* a row like a weight or activation: normal, a few outliers, a few
 * zeros, scaled by `scale` */
static void
random_row(float *x, size_t n, float scale)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t k = rng_next() % 100;

		x[i] = scale * rng_normal();
		if (k == 0)
			x[i] *= 8.0f;
		else if (k == 1)
			x[i] = 0.0f;
	}
}

static size_t
block_of(enum model_dtype t)
{
	enum model_dtype v = quant_vec_type(t);
	uint32_t a = model_dtype_info(t)->block, b = model_dtype_info(v)->block;

	return a > b ? a : b;
}

static uint16_t
bits16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* ---- threads ---------------------------------------------------------- */

/* Four threads make the process's first dots at once (the kernel is
 * chosen on first use: an atomic, so ThreadSanitizer stays quiet) and
 * must all get the same results, equal to the same dot made later. */
#define TH_N 1024
static uint8_t th_w[4 * TH_N / 32 * 34], th_x[TH_N / 32 * 34];
static float th_out[4][4];

static void *
th_run(void *arg)
{
	float *o = arg;

	quant_dot_rows(MODEL_DTYPE_Q8_0, th_w, TH_N, th_x, 4, o);
	return NULL;
}

static void
test_threads_first_use(void **state)
{
	static float w[4 * TH_N], x[TH_N];
	pthread_t th[4];
	float again[4];
	int i;

	(void)state;
	random_row(w, 4 * TH_N, 0.1f);
	random_row(x, TH_N, 1.0f);
	for (i = 0; i < 4; i++)
		quant_quantize_row(MODEL_DTYPE_Q8_0, w + i * TH_N,
		    th_w + i * (TH_N / 32 * 34), TH_N);
	quant_prepare(MODEL_DTYPE_Q8_0, x, th_x, TH_N);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, th_run,
		    th_out[i]), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	quant_dot_rows(MODEL_DTYPE_Q8_0, th_w, TH_N, th_x, 4, again);
	for (i = 0; i < 4; i++)
		assert_memory_equal(th_out[i], again, sizeof(again));
	printf("# kernel chosen: %s\n", quant_kernel_name());
}

/* ---- fp16 / bf16 ---------------------------------------------------- */

static float
from_bits(uint32_t w)
{
	float f;

	memcpy(&f, &w, sizeof(f));
	return f;
}

static void
test_f16_known(void **state)
{
	static const struct { uint32_t f; uint16_t h; } c[] = {
		{ 0x00000000, 0x0000 },          /* 0 */
		{ 0x80000000, 0x8000 },          /* -0 */
		{ 0x3f800000, 0x3c00 },          /* 1 */
		{ 0xc0000000, 0xc000 },          /* -2 */
		{ 0x3dcccccd, 0x2e66 },          /* 0.1 */
		{ 0x3eaaaaab, 0x3555 },          /* 1/3 */
		{ 0x477fe000, 0x7bff },          /* 65504, the largest */
		{ 0x477ff000, 0x7c00 },          /* 65520: ties up to inf */
		{ 0x477fefff, 0x7bff },          /* just below: 65504 */
		{ 0x49742400, 0x7c00 },          /* 1e6: inf */
		{ 0x7f800000, 0x7c00 },          /* inf */
		{ 0xff800000, 0xfc00 },          /* -inf */
		{ 0x7fc00000, 0x7e00 },          /* NaN */
		{ 0xffc00000, 0xfe00 },          /* -NaN */
		{ 0x7f800001, 0x7e00 },          /* signalling NaN: quiet */
		{ 0x38800000, 0x0400 },          /* 2^-14, smallest normal */
		{ 0x387fc000, 0x03ff },          /* largest subnormal */
		{ 0x33800000, 0x0001 },          /* 2^-24, smallest subnormal */
		{ 0x33000000, 0x0000 },          /* 2^-25: tie to even (0) */
		{ 0x33400000, 0x0001 },          /* 1.5 * 2^-25: up */
		{ 0x33c00000, 0x0002 },          /* 3 * 2^-25: tie to even 2 */
		{ 0x34200000, 0x0002 },          /* 5 * 2^-25: tie to even 2 */
		{ 0x3f801000, 0x3c00 },          /* 1 + 2^-11: tie to even */
		{ 0x3f803000, 0x3c02 },          /* 1 + 3 * 2^-11: tie up */
		{ 0x3f801001, 0x3c01 },          /* just above the tie */
		{ 0x2f800000, 0x0000 },          /* 2^-32: underflow to 0 */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint16_t h = quant_f32_to_f16(from_bits(c[i].f));

		if (h != c[i].h)
			fail_msg("fp32 0x%08x -> fp16 0x%04x, want 0x%04x",
			    c[i].f, h, c[i].h);
	}
	assert_true(quant_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
	assert_true(quant_f16_to_f32(0x03ff) == 1023.0f * ldexpf(1.0f, -24));
	assert_true(quant_f16_to_f32(0x3555) == 0.333251953125f);
	assert_true(quant_f16_to_f32(0xc000) == -2.0f);
	assert_true(isinf(quant_f16_to_f32(0x7c00)));
	assert_true(quant_f16_to_f32(0xfc00) < 0 &&
	    isinf(quant_f16_to_f32(0xfc00)));
	assert_true(isnan(quant_f16_to_f32(0x7e00)));
	assert_true(isnan(quant_f16_to_f32(0x7c01)));
	assert_true(signbit(quant_f16_to_f32(0x8000)));
}

/* every half widens and narrows back to itself (NaNs to a NaN), and
 * narrowing agrees with the compiler's _Float16 (round to nearest even)
 * on random floats of every magnitude */
static void
test_f16_exhaustive(void **state)
{
	uint32_t h, i;

	(void)state;
	for (h = 0; h < 65536; h++) {
		float f = quant_f16_to_f32((uint16_t)h);

		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) {
			assert_true(isnan(f));
			continue;
		}
		if (quant_f32_to_f16(f) != h)
			fail_msg("fp16 0x%04x -> %g -> 0x%04x", h, (double)f,
			    quant_f32_to_f16(f));
	}
#if defined(__FLT16_MAX__)
	for (i = 0; i < 2000000; i++) {
		uint32_t w = (uint32_t)rng_next();
		float f = from_bits(w);
		_Float16 ref = (_Float16)f;
		uint16_t rb;

		if (isnan(f))
			continue;
		memcpy(&rb, &ref, 2);
		if (quant_f32_to_f16(f) != rb)
			fail_msg("fp32 0x%08x -> 0x%04x, _Float16 0x%04x", w,
			    quant_f32_to_f16(f), rb);
	}
#else
	(void)i;
#endif
}

static void
test_bf16_known(void **state)
{
	static const struct { uint32_t f; uint16_t h; } c[] = {
		{ 0x00000000, 0x0000 },
		{ 0x80000000, 0x8000 },
		{ 0x3f800000, 0x3f80 },          /* 1 */
		{ 0x3f808000, 0x3f80 },          /* 1 + 2^-8: tie to even */
		{ 0x3f818000, 0x3f82 },          /* 1 + 3 * 2^-8: tie up */
		{ 0x3f808001, 0x3f81 },          /* above the tie */
		{ 0x7f7fffff, 0x7f80 },          /* FLT_MAX rounds to inf */
		{ 0x7f800000, 0x7f80 },          /* inf */
		{ 0xff800000, 0xff80 },          /* -inf */
		{ 0x7fc00000, 0x7fc0 },          /* NaN */
		{ 0x7f800001, 0x7fc0 },          /* signalling NaN: quiet */
		{ 0xff800001, 0xffc0 },
		{ 0x00000001, 0x0000 },          /* subnormals round too */
		{ 0x00008000, 0x0000 },          /* tie to even */
		{ 0x00018000, 0x0002 },
		{ 0x00010000, 0x0001 },          /* a bf16 subnormal kept */
		{ 0x3dcccccd, 0x3dcd },          /* 0.1 */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint16_t h = quant_f32_to_bf16(from_bits(c[i].f));

		if (h != c[i].h)
			fail_msg("fp32 0x%08x -> bf16 0x%04x, want 0x%04x",
			    c[i].f, h, c[i].h);
	}
	assert_true(quant_bf16_to_f32(0x3f80) == 1.0f);
	assert_true(quant_bf16_to_f32(0xc040) == -3.0f);
	assert_true(quant_bf16_to_f32(0x0001) == from_bits(0x00010000));
	assert_true(isnan(quant_bf16_to_f32(0x7fc1)));
}

/* ---- block layouts ---------------------------------------------------- */

static void
test_q8_0_bytes(void **state)
{
	/* x[j] = j - 16: amax 16, d = 16/127 -> fp16 0x3008, q = round(x / d)
	 * (bytes as computed independently, float32 arithmetic) */
	static const uint8_t want[34] = {
		0x08, 0x30,
		0x81, 0x89, 0x91, 0x99, 0xa1, 0xa9, 0xb1, 0xb9,
		0xc0, 0xc8, 0xd0, 0xd8, 0xe0, 0xe8, 0xf0, 0xf8,
		0x00, 0x08, 0x10, 0x18, 0x20, 0x28, 0x30, 0x38,
		0x40, 0x47, 0x4f, 0x57, 0x5f, 0x67, 0x6f, 0x77,
	};
	float x[32];
	uint8_t got[34];
	int j;

	(void)state;
	for (j = 0; j < 32; j++)
		x[j] = (float)(j - 16);
	quant_quantize_row(MODEL_DTYPE_Q8_0, x, got, 32);
	assert_memory_equal(got, want, 34);
	/* the activation side is the same format */
	memset(got, 0, sizeof(got));
	quant_prepare(MODEL_DTYPE_Q4_0, x, got, 32);
	assert_memory_equal(got, want, 34);
}

static void
test_q4_0_bytes(void **state)
{
	/* x[j] = j - 16: the largest magnitude is -16, d = -16 / -8 = 2
	 * (fp16 0x4000), q = min(15, (int)(x / 2 + 8.5)); byte j holds
	 * element j in its low nibble and element j + 16 in its high one */
	float x[32];
	uint8_t got[18], want[18];
	int j;

	(void)state;
	for (j = 0; j < 32; j++)
		x[j] = (float)(j - 16);
	want[0] = 0x00;
	want[1] = 0x40;
	for (j = 0; j < 16; j++) {
		int lo = (j + 1) / 2, hi = 8 + (j + 1) / 2;

		want[2 + j] = (uint8_t)(lo | (hi > 15 ? 15 : hi) << 4);
	}
	quant_quantize_row(MODEL_DTYPE_Q4_0, x, got, 32);
	assert_memory_equal(got, want, 18);
}

/* Q4_K and Q6_K blocks built by hand, read back by dequantization at
 * the positions ggml-common.h / dequantize_row_q4_K / _q6_K give */
static void
test_k_layouts(void **state)
{
	uint8_t b4[144], b6[210], b8[292];
	float y[256];
	int e;

	(void)state;
	memset(b4, 0, sizeof(b4));
	b4[0] = 0x00; b4[1] = 0x3c;             /* d = 1 */
	b4[2] = 0x00; b4[3] = 0x40;             /* dmin = 2 */
	/* sub-block 1: scale 5, min 3 (low 6 bits of scales[1], [5]);
	 * sub-block 6: scale 0x2a = 10 | 2 << 4 (scales[10] low nibble,
	 * the top bits in scales[2] >> 6), min 0x13 = 3 | 1 << 4 */
	b4[4 + 1] = 5;
	b4[4 + 5] = 3;
	b4[4 + 10] = 0x3a;                      /* 10 | 3 << 4 */
	b4[4 + 2] = 0x80;                       /* scale 6 top bits: 2 */
	b4[4 + 6] = 0x40;                       /* min 6 top bits: 1 */
	/* element 32 + 7 (sub-block 1): high nibble of qs[7]; element
	 * 192 + 3 (sub-block 6): low nibble of qs[96 + 3] */
	b4[16 + 7] = 0x90;
	b4[16 + 96 + 3] = 0x0c;
	quant_dequant_row(MODEL_DTYPE_Q4_K, b4, y, 256);
	assert_true(y[32 + 7] == 1.0f * 5 * 9 - 2.0f * 3);
	assert_true(y[32 + 8] == -2.0f * 3);
	assert_true(y[192 + 3] == 1.0f * 42 * 12 - 2.0f * 19);
	assert_true(y[0] == 0.0f);

	memset(b6, 0, sizeof(b6));
	b6[208] = 0x00; b6[209] = 0x3c;         /* d = 1 */
	for (e = 0; e < 16; e++)
		b6[192 + e] = (uint8_t)(e + 1);  /* scale of group e: e + 1 */
	b6[0] = 0x21;       /* elements 0 (low nibble 1), 64 (high 2) */
	b6[32] = 0x43;      /* elements 32 (3), 96 (4) */
	b6[128] = 0xe4;     /* qh of 0, 32, 64, 96: 0, 1, 2, 3 */
	b6[64 + 5] = 0x07;  /* second half: element 128 + 5, low nibble 7 */
	b6[128 + 32 + 5] = 0x03;                /* its high bits 3 */
	b6[192 + 4] = (uint8_t)-2;              /* group 4: scale -2 */
	quant_dequant_row(MODEL_DTYPE_Q6_K, b6, y, 256);
	assert_true(y[0] == 1.0f * (1 + 0 - 32));
	assert_true(y[32] == 3.0f * (3 + 16 - 32));
	assert_true(y[64] == -2.0f * (2 + 32 - 32));
	assert_true(y[96] == 7.0f * (4 + 48 - 32));
	assert_true(y[128 + 5] == 9.0f * (7 + 48 - 32));
	assert_true(y[1] == 1.0f * -32);

	/* Q8_K: float d first, then qs, then the int16 bsums */
	memset(b8, 0, sizeof(b8));
	{
		float d = 0.5f;

		memcpy(b8, &d, 4);
	}
	b8[4 + 17] = (uint8_t)-3;
	quant_dequant_row(MODEL_DTYPE_Q8_K, b8, y, 256);
	assert_true(y[17] == -1.5f);
	for (e = 0; e < 256; e++)
		y[e] = (float)((e % 7) - 3);
	quant_quantize_row(MODEL_DTYPE_Q8_K, y, b8, 256);
	{
		int16_t bs;
		int sum = 0;

		for (e = 16; e < 32; e++)
			sum += (int8_t)b8[4 + e];
		memcpy(&bs, b8 + 260 + 2, 2);
		assert_int_equal(bs, sum);
	}
}

/* ---- round trips ------------------------------------------------------ */

/* rms(a - b) / rms(a) */
static double
rel_rms(const float *a, const float *b, size_t n)
{
	double e = 0, s = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		s += (double)a[i] * a[i];
	}
	return sqrt(e / s);
}

static void
test_round_trips(void **state)
{
	static float x[MAXN], y[MAXN];
	static uint8_t q[MAXN * 2];
	const size_t n = MAXN;
	size_t b, i;
	int rep;

	(void)state;
	for (rep = 0; rep < 4; rep++) {
		random_row(x, n, rep == 0 ? 1e-3f : rep == 1 ? 1.0f : 30.0f);

		/* F16: relative 2^-11 (normal range) */
		quant_quantize_row(MODEL_DTYPE_F16, x, q, n);
		quant_dequant_row(MODEL_DTYPE_F16, q, y, n);
		for (i = 0; i < n; i++)
			assert_true(fabsf(x[i] - y[i]) <=
			    fabsf(x[i]) * 0x1p-11f + 0x1p-25f);
		/* BF16: relative 2^-8 */
		quant_quantize_row(MODEL_DTYPE_BF16, x, q, n);
		quant_dequant_row(MODEL_DTYPE_BF16, q, y, n);
		for (i = 0; i < n; i++)
			assert_true(fabsf(x[i] - y[i]) <= fabsf(x[i]) * 0x1p-8f);

		/* Q8_0: |err| <= d/2 per block (d = amax / 127), plus 127
		 * times the fp16 rounding of d (relative 2^-11, more for a
		 * subnormal d) */
		quant_quantize_row(MODEL_DTYPE_Q8_0, x, q, n);
		quant_dequant_row(MODEL_DTYPE_Q8_0, q, y, n);
		for (b = 0; b < n / 32; b++) {
			float d16 = quant_f16_to_f32(bits16(q + 34 * b));
			float amax = 0, d;

			for (i = 32 * b; i < 32 * b + 32; i++)
				amax = fmaxf(amax, fabsf(x[i]));
			d = amax / 127;
			for (i = 32 * b; i < 32 * b + 32; i++)
				assert_true(fabsf(x[i] - y[i]) <= d * 0.5f *
				    1.0001f + 127 * fabsf(d - d16) + 1e-30f);
		}
		assert_true(rel_rms(x, y, n) < 0.01);

		/* Q4_0: |err| <= |d|/2 (d = max / -8), or |d| for the end
		 * that the clamp to 15 cuts (x / d near +8: the value 7 d),
		 * plus 8 times the fp16 rounding of d */
		quant_quantize_row(MODEL_DTYPE_Q4_0, x, q, n);
		quant_dequant_row(MODEL_DTYPE_Q4_0, q, y, n);
		for (b = 0; b < n / 32; b++) {
			float d16 = quant_f16_to_f32(bits16(q + 18 * b));
			float amax = 0, d;

			for (i = 32 * b; i < 32 * b + 32; i++)
				amax = fmaxf(amax, fabsf(x[i]));
			d = amax / 8;
			for (i = 32 * b; i < 32 * b + 32; i++) {
				float lim = y[i] == 7 * d16 ? d : d / 2;

				assert_true(fabsf(x[i] - y[i]) <= lim * 1.0001f +
				    8 * fabsf(d - fabsf(d16)) + 1e-30f);
			}
		}
		assert_true(rel_rms(x, y, n) < 0.15);

		/* Q4_K: each value the nearest point of its sub-block's
		 * grid d * sc * l - dmin * m, l in 0..15 (to float
		 * rounding); overall a 4-bit error */
		quant_quantize_row(MODEL_DTYPE_Q4_K, x, q, n);
		quant_dequant_row(MODEL_DTYPE_Q4_K, q, y, n);
		for (b = 0; b < n / 32; b++) {
			float lo = INFINITY, hi = -INFINITY, step;

			for (i = 32 * b; i < 32 * b + 32; i++) {
				lo = fminf(lo, y[i]);
				hi = fmaxf(hi, y[i]);
			}
			/* the grid's step: the smallest gap between values */
			step = hi - lo;
			for (i = 32 * b; i < 32 * b + 32; i++) {
				size_t k;

				for (k = 32 * b; k < 32 * b + 32; k++)
					if (y[k] != y[i] && fabsf(y[k] - y[i]) <
					    step)
						step = fabsf(y[k] - y[i]);
			}
			for (i = 32 * b; i < 32 * b + 32; i++)
				if (x[i] >= lo && x[i] <= hi)
					assert_true(fabsf(x[i] - y[i]) <=
					    step * 0.5f * 1.001f + 1e-6f *
					    fabsf(x[i]));
		}
		assert_true(rel_rms(x, y, n) < 0.12);

		/* Q6_K: a 6-bit error overall, values within half a step */
		quant_quantize_row(MODEL_DTYPE_Q6_K, x, q, n);
		quant_dequant_row(MODEL_DTYPE_Q6_K, q, y, n);
		for (b = 0; b < n / 256; b++) {
			const uint8_t *blk = q + 210 * b;
			float d = quant_f16_to_f32(bits16(blk + 208));

			for (i = 0; i < 256; i++) {
				float s = fabsf(d * (int8_t)blk[192 + i / 16]);
				size_t k = 256 * b + i;

				/* inside the grid (|l| <= 31 whatever the
				 * sign of the scale): half a step */
				if (x[k] >= -31 * s && x[k] <= 31 * s)
					assert_true(fabsf(x[k] - y[k]) <= s *
					    0.5f * 1.001f + 1e-6f *
					    fabsf(x[k]));
			}
		}
		assert_true(rel_rms(x, y, n) < 0.03);

		/* Q8_K: |err| <= d/2 (d a float) */
		quant_quantize_row(MODEL_DTYPE_Q8_K, x, q, n);
		quant_dequant_row(MODEL_DTYPE_Q8_K, q, y, n);
		for (b = 0; b < n / 256; b++) {
			float d;

			memcpy(&d, q + 292 * b, 4);
			for (i = 256 * b; i < 256 * b + 256; i++)
				assert_true(fabsf(x[i] - y[i]) <= fabsf(d) *
				    0.5f * 1.0001f);
		}
	}
	/* an all-zero row stays zero in every type */
	memset(x, 0, sizeof(float) * 512);
	for (i = 0; i < NTYPES; i++) {
		size_t k;

		quant_quantize_row(types[i], x, q, 512);
		quant_dequant_row(types[i], q, y, 512);
		for (k = 0; k < 512; k++)
			assert_true(y[k] == 0.0f);
	}
}

/* ---- dots ------------------------------------------------------------- */

/* Σ w_i x_i and Σ |w_i x_i| in double of dequantized operands */
static void
dot_ref(enum model_dtype t, const uint8_t *w, const uint8_t *xq, size_t n,
    double *dot, double *abs)
{
	static float a[MAXN], b[MAXN];
	size_t i;

	quant_dequant_row(t, w, a, n);
	quant_dequant_row(quant_vec_type(t), xq, b, n);
	*dot = 0;
	*abs = 0;
	for (i = 0; i < n; i++) {
		*dot += (double)a[i] * b[i];
		*abs += fabs((double)a[i] * b[i]);
	}
}

static double
tol(size_t n, double abs)
{
	return ((double)n / 4 + 16) * 0x1p-24 * abs + 1e-30;
}

/* the scalar kernel against the double dot of its dequantized operands,
 * and the quantized dot close to the float one */
static void
test_scalar_vs_double(void **state)
{
	static float w[4 * MAXN], x[MAXN];
	static uint8_t wq[4 * MAXN * 2], xq[MAXN * 2];
	size_t ti, n;

	(void)state;
	assert_int_equal(quant_set_kernel("scalar"), 0);
	assert_string_equal(quant_kernel_name(), "scalar");
	for (ti = 0; ti < NTYPES; ti++) {
		enum model_dtype t = types[ti];

		for (n = block_of(t); n <= MAXN; n *= 2) {
			size_t stride = model_dtype_row_bytes(t, n), r;
			float out[4];

			random_row(w, 4 * n, 0.05f);
			random_row(x, n, 2.0f);
			for (r = 0; r < 4; r++)
				quant_quantize_row(t, w + r * n,
				    wq + r * stride, n);
			quant_prepare(t, x, xq, n);
			quant_dot_rows(t, wq, n, xq, 4, out);
			for (r = 0; r < 4; r++) {
				double d, a, f = 0, nw = 0, nx = 0;
				size_t i;

				dot_ref(t, wq + r * stride, xq, n, &d, &a);
				if (fabs(out[r] - d) > tol(n, a))
					fail_msg("%s n %zu row %zu: %.9g vs %.9g",
					    model_dtype_name(t), n, r,
					    (double)out[r], d);
				/* against the unquantized dot: relative to
				 * |w| |x|, loose (4 bits at worst) */
				for (i = 0; i < n; i++) {
					f += (double)w[r * n + i] * x[i];
					nw += (double)w[r * n + i] *
					    w[r * n + i];
					nx += (double)x[i] * x[i];
				}
				assert_true(fabs(out[r] - f) <=
				    0.1 * sqrt(nw * nx));
			}
		}
	}
}

/* every SIMD kernel against the scalar one: random rows, 32..4096
 * elements (odd lengths for F16 / BF16), 1..4 rows, odd alignments */
static void
test_simd_vs_scalar(void **state)
{
	static float w[4 * MAXN], x[MAXN];
	static uint8_t wbuf[4 * MAXN * 2 + 64], xbuf[MAXN * 2 + 64];
	static const size_t lens[] = { 32, 33, 96, 256, 288, 512, 1000, 1024,
	    2048, 2816, 4096, 4095 };
	size_t ki, ti, li;
	int tested = 0;

	(void)state;
	for (ki = 0; ki < 2; ki++) {
		if (quant_set_kernel(simd_kernels[ki]) != 0) {
			printf("# kernel %s: not on this CPU, skipped\n",
			    simd_kernels[ki]);
			continue;
		}
		tested++;
		for (ti = 0; ti < NTYPES; ti++) {
			enum model_dtype t = types[ti];

			for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
				size_t n = lens[li], nrows, r, stride;
				/* odd offsets: rows need no alignment */
				uint8_t *wq = wbuf + 1 + li % 3;
				uint8_t *xq = xbuf + 3 + li % 5;

				if (n % block_of(t) != 0)
					continue;
				stride = model_dtype_row_bytes(t, n);
				random_row(w, 4 * n, 0.05f);
				random_row(x, n, 3.0f);
				for (r = 0; r < 4; r++)
					quant_quantize_row(t, w + r * n,
					    wq + r * stride, n);
				quant_prepare(t, x, xq, n);
				for (nrows = 1; nrows <= 4; nrows++) {
					float got[4], want[4];

					quant_set_kernel(simd_kernels[ki]);
					quant_dot_rows(t, wq, n, xq, nrows, got);
					/* a row's result does not depend on
					 * the rows read with it: bit for bit
					 * (so splitting rows between threads
					 * changes nothing) */
					for (r = 0; r < nrows; r++) {
						float one;

						quant_dot_rows(t, wq + r * stride,
						    n, xq, 1, &one);
						assert_memory_equal(&one, &got[r],
						    sizeof(one));
					}
					quant_set_kernel("scalar");
					quant_dot_rows(t, wq, n, xq, nrows,
					    want);
					for (r = 0; r < nrows; r++) {
						double d, a;

						dot_ref(t, wq + r * stride, xq,
						    n, &d, &a);
						if (fabs((double)got[r] -
						    want[r]) > 2 * tol(n, a))
							fail_msg("%s %s n %zu "
							    "rows %zu row %zu: "
							    "%.9g vs %.9g",
							    simd_kernels[ki],
							    model_dtype_name(t),
							    n, nrows, r,
							    (double)got[r],
							    (double)want[r]);
					}
				}
			}
		}
	}
	printf("# %d SIMD kernels tested\n", tested);
	quant_set_kernel("scalar");
}

/* A quantized row with every scale 1 (or small) and activations with
 * d = 1: every product and partial sum is an integer below 2^24, so
 * every kernel's float steps are exact and all must equal the integer
 * dot. Weight bytes cover -128 (Q8_0), every nibble and 6-bit value. */
/*
 * quant_dot_tile (four rows against 1..4 activation rows) gives the bits
 * of quant_dot_rows for each activation row, with every kernel, for
 * every type (Q8_0 has a tiled AVX-512 body; the others loop), on even
 * and odd numbers of blocks (the tiled body's tail).
 */
static void
test_tile_equals_rows(void **state)
{
	static float w[4 * MAXN], x[4 * MAXN];
	static uint8_t wbuf[4 * MAXN * 2 + 64], xbuf[4 * MAXN * 2 + 64];
	static const char *const kernels[] = { "scalar", "avx2", "avx512" };
	static const size_t lens[] = { 32, 64, 96, 256, 512, 1536, 2816 };
	size_t ki, ti, li;

	(void)state;
	for (ki = 0; ki < 3; ki++) {
		if (quant_set_kernel(kernels[ki]) != 0)
			continue;
		for (ti = 0; ti < NTYPES; ti++) {
			enum model_dtype t = types[ti];

			for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
				size_t n = lens[li], stride, xs, nx, r, j;
				uint8_t *wq = wbuf + 1, *xq = xbuf + 3;

				if (n % block_of(t) != 0)
					continue;
				stride = model_dtype_row_bytes(t, n);
				xs = model_dtype_row_bytes(quant_vec_type(t), n);
				random_row(w, 4 * n, 0.05f);
				random_row(x, 4 * n, 3.0f);
				for (r = 0; r < 4; r++) {
					quant_quantize_row(t, w + r * n,
					    wq + r * stride, n);
					quant_prepare(t, x + r * n, xq + r * xs,
					    n);
				}
				for (nx = 1; nx <= 4; nx++) {
					float got[4 * 5], want[4];

					quant_dot_tile(t, wq, n, xq, xs, nx, got,
					    5);
					for (j = 0; j < nx; j++) {
						quant_dot_rows(t, wq, n,
						    xq + j * xs, 4, want);
						for (r = 0; r < 4; r++)
							if (memcmp(&got[j * 5 + r],
							    &want[r], 4) != 0)
								fail_msg("%s %s n %zu "
								    "nx %zu: tile %g, "
								    "rows %g", kernels[ki],
								    model_dtype_name(t),
								    n, nx, got[j * 5 + r],
								    want[r]);
					}
				}
			}
		}
	}
	quant_set_kernel(quant_kernel_name());
}

static void
test_integer_exact(void **state)
{
	const size_t n = 512;
	static uint8_t w[4 * 512 * 2], y8[512 / 32 * 34], yk[2 * 292];
	static float a[512], b[512];
	const char *const kernels[] = { "scalar", "avx2", "avx512" };
	enum model_dtype qt[] = { MODEL_DTYPE_Q8_0, MODEL_DTYPE_Q4_0,
	    MODEL_DTYPE_Q4_K, MODEL_DTYPE_Q6_K };
	size_t ti, i, r, k;

	(void)state;
	/* activations: d = 1 (fp16 0x3c00 / float 1.0), q in -127..127 */
	for (i = 0; i < n / 32; i++) {
		y8[34 * i] = 0x00;
		y8[34 * i + 1] = 0x3c;
		for (k = 0; k < 32; k++)
			y8[34 * i + 2 + k] = (uint8_t)(int8_t)(
			    (int)(rng_next() % 255) - 127);
	}
	for (i = 0; i < n / 256; i++) {
		float one = 1.0f;
		uint8_t *blk = yk + 292 * i;

		memcpy(blk, &one, 4);
		for (k = 0; k < 16; k++) {
			int16_t s = 0;
			size_t l;

			for (l = 0; l < 16; l++) {
				int8_t v = (int8_t)((int)(rng_next() % 255) -
				    127);

				blk[4 + 16 * k + l] = (uint8_t)v;
				s = (int16_t)(s + v);
			}
			memcpy(blk + 260 + 2 * k, &s, 2);
		}
	}
	for (ti = 0; ti < 4; ti++) {
		enum model_dtype t = qt[ti];
		size_t stride = model_dtype_row_bytes(t, n);
		const uint8_t *y = quant_vec_type(t) == MODEL_DTYPE_Q8_0 ?
		    y8 : yk;

		for (i = 0; i < 4 * stride; i++)
			w[i] = (uint8_t)rng_next();
		for (r = 0; r < 4; r++) {
			uint8_t *row = w + r * stride;

			for (i = 0; i < n / model_dtype_info(t)->block; i++) {
				uint8_t *blk = row + i *
				    model_dtype_info(t)->size;

				switch (t) {
				case MODEL_DTYPE_Q8_0:
				case MODEL_DTYPE_Q4_0:
					blk[0] = 0x00;  /* d = 1 */
					blk[1] = 0x3c;
					if (t == MODEL_DTYPE_Q8_0)
						blk[2 + r] = 0x80; /* -128 */
					break;
				case MODEL_DTYPE_Q4_K:
					blk[0] = 0x00;  /* d = dmin = 1 */
					blk[1] = 0x3c;
					blk[2] = 0x00;
					blk[3] = 0x3c;
					for (k = 4; k < 16; k++)
						blk[k] &= 0x07; /* scales <= 7 */
					break;
				default:                /* Q6_K */
					blk[208] = 0x00;
					blk[209] = 0x3c;
					for (k = 192; k < 208; k++)
						blk[k] = (uint8_t)(int8_t)(
						    (int)(rng_next() % 15) - 7);
					break;
				}
			}
		}
		for (k = 0; k < 3; k++) {
			size_t nrows;

			if (quant_set_kernel(kernels[k]) != 0)
				continue;
			for (nrows = 1; nrows <= 4; nrows++) {
				float out[4];

				quant_dot_rows(t, w, n, y, nrows, out);
				for (r = 0; r < nrows; r++) {
					double want = 0;

					quant_dequant_row(t, w + r * stride, a,
					    n);
					quant_dequant_row(quant_vec_type(t), y,
					    b, n);
					for (i = 0; i < n; i++)
						want += (double)a[i] * b[i];
					assert_true(fabs(want) < 0x1p24);
					if ((double)out[r] != want)
						fail_msg("%s %s row %zu: %.1f, "
						    "want %.1f", kernels[k],
						    model_dtype_name(t), r,
						    (double)out[r], want);
				}
			}
		}
	}
	quant_set_kernel("scalar");
}

/* ---- the API ---------------------------------------------------------- */

static void
test_api(void **state)
{
	uint32_t t;
	float out[4], x[32] = { 0 };
	uint8_t q[64];
	const char *name;

	(void)state;
	for (t = 0; t < MODEL_DTYPE_COUNT + 2; t++) {
		int want = t == MODEL_DTYPE_F16 || t == MODEL_DTYPE_BF16 ||
		    t == MODEL_DTYPE_Q8_0 || t == MODEL_DTYPE_Q4_0 ||
		    t == MODEL_DTYPE_Q4_K || t == MODEL_DTYPE_Q6_K;

		assert_int_equal(quant_supported(t), want);
	}
	assert_int_equal(quant_vec_type(MODEL_DTYPE_F16), MODEL_DTYPE_F16);
	assert_int_equal(quant_vec_type(MODEL_DTYPE_BF16), MODEL_DTYPE_BF16);
	assert_int_equal(quant_vec_type(MODEL_DTYPE_Q8_0), MODEL_DTYPE_Q8_0);
	assert_int_equal(quant_vec_type(MODEL_DTYPE_Q4_0), MODEL_DTYPE_Q8_0);
	assert_int_equal(quant_vec_type(MODEL_DTYPE_Q4_K), MODEL_DTYPE_Q8_K);
	assert_int_equal(quant_vec_type(MODEL_DTYPE_Q6_K), MODEL_DTYPE_Q8_K);
	assert_int_equal(quant_vec_type(MODEL_DTYPE_F32), MODEL_DTYPE_F32);
	assert_int_equal(quant_vec_type(MODEL_DTYPE_Q5_K), MODEL_DTYPE_F32);

	assert_int_equal(quant_set_kernel("nope"), -1);
	assert_int_equal(quant_set_kernel("scalar"), 0);
	assert_string_equal(quant_kernel_name(), "scalar");
	if (quant_set_kernel("avx512") == 0)
		assert_string_equal(quant_kernel_name(), "avx512");
	name = quant_kernel_name();
	assert_true(strcmp(name, "scalar") == 0 || strcmp(name, "avx2") == 0 ||
	    strcmp(name, "avx512") == 0);

	/* bad calls: NaN out, nothing written */
	quant_dot_rows(MODEL_DTYPE_Q5_K, q, 256, q, 2, out);
	assert_true(isnan(out[0]) && isnan(out[1]));
	quant_dot_rows(MODEL_DTYPE_Q8_0, q, 33, q, 1, out);
	assert_true(isnan(out[0]));
	quant_dot_rows(MODEL_DTYPE_Q8_0, q, 32, q, 5, out);
	assert_true(isnan(out[3]));
	memset(q, 0xAB, sizeof(q));
	quant_prepare(MODEL_DTYPE_F32, x, q, 32);
	quant_prepare(MODEL_DTYPE_Q4_K, x, q, 32);       /* not 256 */
	quant_quantize_row(MODEL_DTYPE_Q2_K, x, q, 32);
	for (t = 0; t < sizeof(q); t++)
		assert_int_equal(q[t], 0xAB);
	quant_dequant_row(MODEL_DTYPE_Q2_K, q, x, 32);
	assert_true(isnan(x[0]) && isnan(x[31]));
	quant_set_kernel("scalar");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		/* first: it makes the process's first dots */
		cmocka_unit_test(test_threads_first_use),
		cmocka_unit_test(test_api),
		cmocka_unit_test(test_f16_known),
		cmocka_unit_test(test_f16_exhaustive),
		cmocka_unit_test(test_bf16_known),
		cmocka_unit_test(test_q8_0_bytes),
		cmocka_unit_test(test_q4_0_bytes),
		cmocka_unit_test(test_k_layouts),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_scalar_vs_double),
		cmocka_unit_test(test_simd_vs_scalar),
		cmocka_unit_test(test_integer_exact),
		cmocka_unit_test(test_tile_equals_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
