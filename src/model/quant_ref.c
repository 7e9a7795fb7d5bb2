/*
 * model/quant_ref.c - ggml's reference quantizers and dequantizers
 * (quant_quantize_row, quant_dequant_row of quant.h): the bytes a model
 * file holds and the values they stand for.
 *
 * Follows ggml/src/ggml-quants.c (github.com/ggml-org/llama.cpp):
 * quantize_row_q8_0_ref, _q4_0_ref, _q4_K_ref, _q6_K_ref, _q8_K_ref,
 * dequantize_row_q8_0, _q4_0, _q4_K, _q6_K, _q8_K, and their helpers
 * nearest_int, make_qx_quants, make_qkx2_quants, get_scale_min_k4.
 */
#include "model/quant.h"

#include <math.h>
#include <string.h>

#include "model/quant_impl.h"

/* ---- reference quantizers (ggml-quants.c) ----------------------------- */

#define QMAX(a, b) ((a) > (b) ? (a) : (b))
#define QMIN(a, b) ((a) < (b) ? (a) : (b))
#define GROUP_MAX_EPS 1e-15f

/* ggml's nearest_int: round half to even by the 1.5 * 2^23 trick, for
 * |fval| <= 4194303 */
static inline int
nearest_int(float fval)
{
	float val = fval + 12582912.f;
	int32_t i;

	memcpy(&i, &val, sizeof(i));
	return (i & 0x007fffff) - 0x00400000;
}

/* quantize_row_q8_0_ref: d = amax / 127, q = round(x / d) */
static void
quantize_q8_0(const float *x, uint8_t *y, size_t nb)
{
	size_t i;
	int j;

	for (i = 0; i < nb; i++, x += QUANT_QK, y += QUANT_Q8_0_BYTES) {
		float amax = 0.0f, d, id;
		uint16_t dh;

		for (j = 0; j < (int)QUANT_QK; j++)
			amax = QMAX(amax, fabsf(x[j]));
		d = amax / ((1 << 7) - 1);
		id = d != 0.0f ? 1.0f / d : 0.0f;
		dh = quant_f32_to_f16(d);
		memcpy(y, &dh, 2);
		for (j = 0; j < (int)QUANT_QK; j++)
			y[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
	}
}

/* quantize_row_q4_0_ref: d = max / -8 (max: the value of largest
 * magnitude, with its sign), q = min(15, (int)(x / d + 8.5)) */
static void
quantize_q4_0(const float *x, uint8_t *y, size_t nb)
{
	size_t i;
	int j;

	for (i = 0; i < nb; i++, x += QUANT_QK, y += QUANT_Q4_0_BYTES) {
		float amax = 0.0f, max = 0.0f, d, id;
		uint16_t dh;

		for (j = 0; j < (int)QUANT_QK; j++) {
			if (amax < fabsf(x[j])) {
				amax = fabsf(x[j]);
				max = x[j];
			}
		}
		d = max / -8;
		id = d != 0.0f ? 1.0f / d : 0.0f;
		dh = quant_f32_to_f16(d);
		memcpy(y, &dh, 2);
		for (j = 0; j < (int)QUANT_QK / 2; j++) {
			int x0 = (int8_t)(x[j] * id + 8.5f);
			int x1 = (int8_t)(x[QUANT_QK / 2 + j] * id + 8.5f);

			y[2 + j] = (uint8_t)(QMIN(15, x0) | (QMIN(15, x1) << 4));
		}
	}
}

/* make_qx_quants(n, nmax, x, L, rmse_type 1, qw NULL) of ggml-quants.c:
 * the scale of a group of signed quants in [-nmax, nmax-1], L = q + nmax,
 * searched over 19 candidate scales for the least weighted error */
static float
make_qx_quants(int n, int nmax, const float *x, int8_t *L)
{
	float max = 0, amax = 0, iscale, sumlx = 0, suml2 = 0, scale, best;
	int i, is;

	for (i = 0; i < n; ++i) {
		float ax = fabsf(x[i]);

		if (ax > amax) {
			amax = ax;
			max = x[i];
		}
	}
	if (amax < GROUP_MAX_EPS) {
		for (i = 0; i < n; ++i)
			L[i] = 0;
		return 0.f;
	}
	iscale = -nmax / max;
	for (i = 0; i < n; ++i) {
		int l = nearest_int(iscale * x[i]);
		float w = x[i] * x[i];

		l = QMAX(-nmax, QMIN(nmax - 1, l));
		L[i] = (int8_t)(l + nmax);
		sumlx += w * x[i] * l;
		suml2 += w * l * l;
	}
	scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
	best = scale * sumlx;
	for (is = -9; is <= 9; ++is) {
		if (is == 0)
			continue;
		iscale = -(nmax + 0.1f * is) / max;
		sumlx = suml2 = 0;
		for (i = 0; i < n; ++i) {
			int l = nearest_int(iscale * x[i]);
			float w = x[i] * x[i];

			l = QMAX(-nmax, QMIN(nmax - 1, l));
			sumlx += w * x[i] * l;
			suml2 += w * l * l;
		}
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			for (i = 0; i < n; ++i) {
				int l = nearest_int(iscale * x[i]);

				L[i] = (int8_t)(nmax + QMAX(-nmax,
				    QMIN(nmax - 1, l)));
			}
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

/* make_qkx2_quants of ggml-quants.c: scale and min of a group of
 * unsigned quants in [0, nmax] (x = scale * L - the_min), searched over
 * nstep + 1 candidates for the least weighted squared error */
static float
make_qkx2_quants(int n, int nmax, const float *x, const float *weights,
    uint8_t *L, float *the_min, uint8_t *Laux, float rmin, float rdelta,
    int nstep)
{
	float min = x[0], max = x[0], sum_w = weights[0];
	float sum_x = sum_w * x[0], iscale, scale, best_error = 0;
	int i, is;

	for (i = 1; i < n; ++i) {
		if (x[i] < min)
			min = x[i];
		if (x[i] > max)
			max = x[i];
		sum_w += weights[i];
		sum_x += weights[i] * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		for (i = 0; i < n; ++i)
			L[i] = 0;
		*the_min = -min;
		return 0.f;
	}
	iscale = nmax / (max - min);
	scale = 1 / iscale;
	for (i = 0; i < n; ++i) {
		int l = nearest_int(iscale * (x[i] - min));
		float diff;

		L[i] = (uint8_t)QMAX(0, QMIN(nmax, l));
		diff = scale * L[i] + min - x[i];
		diff = diff * diff;     /* ggml's order of rounding */
		best_error += weights[i] * diff;
	}
	for (is = 0; is <= nstep; ++is) {
		float sum_l = 0, sum_l2 = 0, sum_xl = 0, D;

		iscale = (rmin + rdelta * is + nmax) / (max - min);
		for (i = 0; i < n; ++i) {
			int l = nearest_int(iscale * (x[i] - min));

			l = QMAX(0, QMIN(nmax, l));
			Laux[i] = (uint8_t)l;
			sum_l += weights[i] * l;
			sum_l2 += weights[i] * l * l;
			sum_xl += weights[i] * l * x[i];
		}
		D = sum_w * sum_l2 - sum_l * sum_l;
		if (D > 0) {
			float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
			float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
			float cur_error = 0;

			if (this_min > 0) {
				this_min = 0;
				this_scale = sum_xl / sum_l2;
			}
			for (i = 0; i < n; ++i) {
				float diff = this_scale * Laux[i] + this_min -
				    x[i];

				diff = diff * diff;
				cur_error += weights[i] * diff;
			}
			if (cur_error < best_error) {
				for (i = 0; i < n; ++i)
					L[i] = Laux[i];
				best_error = cur_error;
				scale = this_scale;
				min = this_min;
			}
		}
	}
	*the_min = -min;
	return scale;
}

/* quantize_row_q4_K_ref: 8 sub-blocks of 32, each with a 6-bit scale and
 * min relative to the super-block's fp16 d and dmin, 4-bit quants */
static void
quantize_q4_k(const float *x, uint8_t *y, size_t nb)
{
	uint8_t L[QUANT_QK_K], Laux[32];
	float weights[32], mins[8], scales[8];
	size_t i;
	int j, l;

	for (i = 0; i < nb; i++, x += QUANT_QK_K, y += QUANT_Q4_K_BYTES) {
		float max_scale = 0, max_min = 0, inv_scale, inv_min, d, dm;
		uint8_t *sc = y + QUANT_Q4_K_SCALES, *q = y + QUANT_Q4_K_QS;
		uint16_t h;

		for (j = 0; j < 8; ++j) {
			float sum_x2 = 0, av_x;

			for (l = 0; l < 32; ++l)
				sum_x2 += x[32 * j + l] * x[32 * j + l];
			av_x = sqrtf(sum_x2 / 32);
			for (l = 0; l < 32; ++l)
				weights[l] = av_x + fabsf(x[32 * j + l]);
			scales[j] = make_qkx2_quants(32, 15, x + 32 * j, weights,
			    L + 32 * j, &mins[j], Laux, -1.f, 0.1f, 20);
			if (scales[j] > max_scale)
				max_scale = scales[j];
			if (mins[j] > max_min)
				max_min = mins[j];
		}
		inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
		inv_min = max_min > 0 ? 63.f / max_min : 0.f;
		memset(sc, 0, 12);
		for (j = 0; j < 8; ++j) {
			uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
			uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);

			ls = QMIN(63, ls);
			lm = QMIN(63, lm);
			if (j < 4) {
				sc[j] = ls;
				sc[j + 4] = lm;
			} else {
				sc[j + 4] = (uint8_t)((ls & 0xF) |
				    ((lm & 0xF) << 4));
				sc[j - 4] |= (uint8_t)((ls >> 4) << 6);
				sc[j - 0] |= (uint8_t)((lm >> 4) << 6);
			}
		}
		h = quant_f32_to_f16(max_scale / 63.f);
		memcpy(y, &h, 2);
		h = quant_f32_to_f16(max_min / 63.f);
		memcpy(y + QUANT_Q4_K_DMIN, &h, 2);
		d = quant_f16_to_f32(quant_ld16(y));
		dm = quant_f16_to_f32(quant_ld16(y + QUANT_Q4_K_DMIN));
		for (j = 0; j < 8; ++j) {
			uint8_t s, m;
			float dj, mj;

			quant_scale_min_k4(j, sc, &s, &m);
			dj = d * s;
			if (dj == 0.0f)
				continue;
			mj = dm * m;
			for (l = 0; l < 32; ++l) {
				int v = nearest_int((x[32 * j + l] + mj) / dj);

				L[32 * j + l] = (uint8_t)QMAX(0, QMIN(15, v));
			}
		}
		for (j = 0; j < (int)QUANT_QK_K; j += 64, q += 32)
			for (l = 0; l < 32; ++l)
				q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
	}
}

/* quantize_row_q6_K_ref: 16 groups of 16 with an int8 scale relative to
 * the fp16 d, 6-bit quants (4 low bits in ql, 2 high bits in qh) */
static void
quantize_q6_k(const float *x, uint8_t *y, size_t nb)
{
	int8_t L[QUANT_QK_K];
	float scales[16];
	size_t i;
	int j, l;

	for (i = 0; i < nb; i++, x += QUANT_QK_K, y += QUANT_Q6_K_BYTES) {
		float max_scale = 0, max_abs_scale = 0, iscale, d;
		uint8_t *ql = y, *qh = y + QUANT_Q6_K_QH;
		int8_t *sc = (int8_t *)(y + QUANT_Q6_K_SCALES);
		uint16_t h;

		for (j = 0; j < 16; ++j) {
			scales[j] = make_qx_quants(16, 32, x + 16 * j,
			    L + 16 * j);
			if (fabsf(scales[j]) > max_abs_scale) {
				max_abs_scale = fabsf(scales[j]);
				max_scale = scales[j];
			}
		}
		if (max_abs_scale < GROUP_MAX_EPS) {
			memset(y, 0, QUANT_Q6_K_BYTES);
			continue;
		}
		iscale = -128.f / max_scale;
		h = quant_f32_to_f16(1 / iscale);
		memcpy(y + QUANT_Q6_K_D, &h, 2);
		for (j = 0; j < 16; ++j)
			sc[j] = (int8_t)QMIN(127, nearest_int(iscale *
			    scales[j]));
		d = quant_f16_to_f32(h);
		for (j = 0; j < 16; ++j) {
			float dj = d * sc[j];

			if (dj == 0.0f)
				continue;
			for (l = 0; l < 16; ++l) {
				int v = nearest_int(x[16 * j + l] / dj);

				L[16 * j + l] = (int8_t)(QMAX(-32, QMIN(31, v)) +
				    32);
			}
		}
		for (j = 0; j < (int)QUANT_QK_K; j += 128) {
			for (l = 0; l < 32; ++l) {
				uint8_t q1 = L[j + l + 0] & 0xF;
				uint8_t q2 = L[j + l + 32] & 0xF;
				uint8_t q3 = L[j + l + 64] & 0xF;
				uint8_t q4 = L[j + l + 96] & 0xF;

				ql[l + 0] = (uint8_t)(q1 | (q3 << 4));
				ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
				qh[l] = (uint8_t)((L[j + l] >> 4) |
				    ((L[j + l + 32] >> 4) << 2) |
				    ((L[j + l + 64] >> 4) << 4) |
				    ((L[j + l + 96] >> 4) << 6));
			}
			ql += 64;
			qh += 32;
		}
	}
}

/* quantize_row_q8_K_ref: d = max / -127 (max with its sign), q =
 * min(127, nearest_int(x / d)), bsums = sums of each 16 q. (ggml leaves
 * bsums unwritten for an all-zero block; they are 0 here.) */
static void
quantize_q8_k(const float *x, uint8_t *y, size_t nb)
{
	size_t i;
	int j, l;

	for (i = 0; i < nb; i++, x += QUANT_QK_K, y += QUANT_Q8_K_BYTES) {
		float max = 0, amax = 0, iscale, d;
		int8_t *qs = (int8_t *)(y + QUANT_Q8_K_QS);

		for (j = 0; j < (int)QUANT_QK_K; ++j) {
			if (fabsf(x[j]) > amax) {
				amax = fabsf(x[j]);
				max = x[j];
			}
		}
		if (amax == 0.0f) {
			memset(y, 0, QUANT_Q8_K_BYTES);
			continue;
		}
		iscale = -127.f / max;
		for (j = 0; j < (int)QUANT_QK_K; ++j)
			qs[j] = (int8_t)QMIN(127, nearest_int(iscale * x[j]));
		for (j = 0; j < 16; ++j) {
			int16_t sum = 0;

			for (l = 0; l < 16; ++l)
				sum = (int16_t)(sum + qs[16 * j + l]);
			memcpy(y + QUANT_Q8_K_BSUMS + 2 * j, &sum, 2);
		}
		d = 1 / iscale;
		memcpy(y, &d, 4);
	}
}

/* ---- dequantizers (ggml-quants.c dequantize_row_*) ------------------- */

static void
dequant_q4_k(const uint8_t *x, float *y, size_t nb)
{
	size_t i;
	int j, l, is;

	for (i = 0; i < nb; i++, x += QUANT_Q4_K_BYTES) {
		const uint8_t *q = x + QUANT_Q4_K_QS;
		float d = quant_f16_to_f32(quant_ld16(x));
		float min = quant_f16_to_f32(quant_ld16(x + QUANT_Q4_K_DMIN));

		for (j = 0, is = 0; j < (int)QUANT_QK_K; j += 64, is += 2) {
			uint8_t sc, m;
			float d1, m1, d2, m2;

			quant_scale_min_k4(is, x + QUANT_Q4_K_SCALES, &sc, &m);
			d1 = d * sc;
			m1 = min * m;
			quant_scale_min_k4(is + 1, x + QUANT_Q4_K_SCALES, &sc,
			    &m);
			d2 = d * sc;
			m2 = min * m;
			for (l = 0; l < 32; ++l)
				*y++ = d1 * (q[l] & 0xF) - m1;
			for (l = 0; l < 32; ++l)
				*y++ = d2 * (q[l] >> 4) - m2;
			q += 32;
		}
	}
}

/* The 256 signed quants (q - 32) of a Q6_K block, as the loop of
 * dequantize_row_q6_K: per 128 elements, element l + 32 g (g 0..3) has
 * its low 4 bits in ql[l] (g 0, 2: low, high nibble) or ql[l + 32]
 * (g 1, 3) and its high 2 bits in bits 2g..2g+1 of qh[l]. */
void
quant_q6_k_unpack(const uint8_t *x, int8_t q[QUANT_QK_K])
{
	const uint8_t *ql = x, *qh = x + QUANT_Q6_K_QH;
	int n, l;

	for (n = 0; n < (int)QUANT_QK_K; n += 128, ql += 64, qh += 32) {
		for (l = 0; l < 32; ++l) {
			q[n + l + 0] = (int8_t)(((ql[l + 0] & 0xF) |
			    (((qh[l] >> 0) & 3) << 4)) - 32);
			q[n + l + 32] = (int8_t)(((ql[l + 32] & 0xF) |
			    (((qh[l] >> 2) & 3) << 4)) - 32);
			q[n + l + 64] = (int8_t)(((ql[l + 0] >> 4) |
			    (((qh[l] >> 4) & 3) << 4)) - 32);
			q[n + l + 96] = (int8_t)(((ql[l + 32] >> 4) |
			    (((qh[l] >> 6) & 3) << 4)) - 32);
		}
	}
}

static void
dequant_q6_k(const uint8_t *x, float *y, size_t nb)
{
	int8_t q[QUANT_QK_K];
	size_t i;
	int e;

	for (i = 0; i < nb; i++, x += QUANT_Q6_K_BYTES) {
		const int8_t *sc = (const int8_t *)(x + QUANT_Q6_K_SCALES);
		float d = quant_f16_to_f32(quant_ld16(x + QUANT_Q6_K_D));

		quant_q6_k_unpack(x, q);
		for (e = 0; e < (int)QUANT_QK_K; e++)
			*y++ = d * sc[e / 16] * q[e];
	}
}

void
quant_dequant_row(enum model_dtype t, const void *src, float *dst, size_t n)
{
	const uint8_t *x = src;
	size_t i, j;

	if (model_dtype_row_bytes(t, n) == 0 && n > 0) {
		for (i = 0; i < n; i++)
			dst[i] = NAN;
		return;
	}
	switch (t) {
	case MODEL_DTYPE_F16:
		for (i = 0; i < n; i++)
			dst[i] = quant_f16_to_f32(quant_ld16(x + 2 * i));
		return;
	case MODEL_DTYPE_BF16:
		for (i = 0; i < n; i++)
			dst[i] = quant_bf16_to_f32(quant_ld16(x + 2 * i));
		return;
	case MODEL_DTYPE_Q8_0:
		for (i = 0; i < n / QUANT_QK; i++, x += QUANT_Q8_0_BYTES) {
			float d = quant_f16_to_f32(quant_ld16(x));

			for (j = 0; j < QUANT_QK; j++)
				*dst++ = (int8_t)x[2 + j] * d;
		}
		return;
	case MODEL_DTYPE_Q4_0:
		for (i = 0; i < n / QUANT_QK; i++, x += QUANT_Q4_0_BYTES) {
			float d = quant_f16_to_f32(quant_ld16(x));

			for (j = 0; j < QUANT_QK / 2; j++) {
				dst[j] = ((x[2 + j] & 0x0F) - 8) * d;
				dst[j + QUANT_QK / 2] = ((x[2 + j] >> 4) - 8) *
				    d;
			}
			dst += QUANT_QK;
		}
		return;
	case MODEL_DTYPE_Q4_K:
		dequant_q4_k(x, dst, n / QUANT_QK_K);
		return;
	case MODEL_DTYPE_Q6_K:
		dequant_q6_k(x, dst, n / QUANT_QK_K);
		return;
	case MODEL_DTYPE_Q8_K:
		for (i = 0; i < n / QUANT_QK_K; i++, x += QUANT_Q8_K_BYTES) {
			float d = quant_ldf(x);

			for (j = 0; j < QUANT_QK_K; j++)
				*dst++ = d * (int8_t)x[QUANT_Q8_K_QS + j];
		}
		return;
	default:
		for (i = 0; i < n; i++)
			dst[i] = NAN;
		return;
	}
}

void
quant_quantize_row(enum model_dtype t, const float *src, void *dst,
    size_t n)
{
	uint8_t *y = dst;
	size_t i;

	if (model_dtype_row_bytes(t, n) == 0)
		return;
	switch (t) {
	case MODEL_DTYPE_F16:
		for (i = 0; i < n; i++) {
			uint16_t h = quant_f32_to_f16(src[i]);

			memcpy(y + 2 * i, &h, 2);
		}
		return;
	case MODEL_DTYPE_BF16:
		for (i = 0; i < n; i++) {
			uint16_t h = quant_f32_to_bf16(src[i]);

			memcpy(y + 2 * i, &h, 2);
		}
		return;
	case MODEL_DTYPE_Q8_0:
		quantize_q8_0(src, y, n / QUANT_QK);
		return;
	case MODEL_DTYPE_Q4_0:
		quantize_q4_0(src, y, n / QUANT_QK);
		return;
	case MODEL_DTYPE_Q4_K:
		quantize_q4_k(src, y, n / QUANT_QK_K);
		return;
	case MODEL_DTYPE_Q6_K:
		quantize_q6_k(src, y, n / QUANT_QK_K);
		return;
	case MODEL_DTYPE_Q8_K:
		quantize_q8_k(src, y, n / QUANT_QK_K);
		return;
	default:
		return;
	}
}
