/*
 * model/quant_impl.h - what quant.c (the scalar kernel, the conversions,
 * the choice of kernel), quant_ref.c (the reference quantizers) and
 * quant_x86.c (the AVX2 and AVX-512 kernels) share; not for other files.
 *
 * Blocks are read as bytes at these offsets (ggml-common.h's structs,
 * which have no padding): rows may sit at any alignment, so every
 * multi-byte field is read with memcpy (little-endian, as GGUF files).
 *
 *   Q8_0  34 bytes: fp16 d; int8 qs[32]              x[i] = d * qs[i]
 *   Q4_0  18 bytes: fp16 d; uint8 qs[16]   x[i] = d * (nibble - 8), low
 *                   nibbles are elements 0..15, high ones 16..31
 *   Q4_K 144 bytes: fp16 d, dmin; uint8 scales[12] (8 6-bit scales and
 *                   8 6-bit mins); uint8 qs[128]
 *   Q6_K 210 bytes: uint8 ql[128], qh[64]; int8 scales[16]; fp16 d
 *   Q8_K 292 bytes: float d; int8 qs[256]; int16 bsums[16] (sums of
 *                   each 16 qs)
 */
#ifndef TS_MODEL_QUANT_IMPL_H
#define TS_MODEL_QUANT_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define QUANT_QK 32u            /* elements of a Q8_0 / Q4_0 block */
#define QUANT_QK_K 256u         /* elements of a K super-block */
#define QUANT_Q8_0_BYTES 34u
#define QUANT_Q4_0_BYTES 18u
#define QUANT_Q4_K_BYTES 144u
#define QUANT_Q6_K_BYTES 210u
#define QUANT_Q8_K_BYTES 292u

/* Offsets in a Q4_K block */
#define QUANT_Q4_K_DMIN 2u
#define QUANT_Q4_K_SCALES 4u
#define QUANT_Q4_K_QS 16u
/* Offsets in a Q6_K block */
#define QUANT_Q6_K_QH 128u
#define QUANT_Q6_K_SCALES 192u
#define QUANT_Q6_K_D 208u
/* Offsets in a Q8_K block */
#define QUANT_Q8_K_QS 4u
#define QUANT_Q8_K_BSUMS 260u

static inline uint16_t
quant_ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline float
quant_ldf(const uint8_t *p)
{
	float v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * One kernel's dot of nrows (1..4) rows at w (row stride `stride`
 * bytes) of n elements with the prepared activation xq, into out[].
 * n is a multiple of the type's block (checked by the caller).
 */
typedef void (*quant_dot_fn)(const uint8_t *w, size_t stride, size_t n,
    const uint8_t *xq, size_t nrows, float *out);

/* Four rows against nx (1..4) activation rows (at xq + j * xstride):
 * out[j * ostride + k]; the same bits as quant_dot_fn per row. */
typedef void (*quant_tile_fn)(const uint8_t *w, size_t stride, size_t n,
    const uint8_t *xq, size_t xstride, size_t nx, float *out,
    size_t ostride);

struct quant_kernel {
	const char *name;
	quant_dot_fn f16, bf16, q8_0, q4_0, q4_k, q6_k;
	quant_tile_fn q8_0_tile;       /* NULL: a loop of q8_0 calls */
};

/*
 * The 6-bit scale and min of sub-block j (0..7) of a Q4_K block's
 * scales[12], as ggml's get_scale_min_k4 (ggml-quants.c).
 */
static inline void
quant_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
	if (j < 4) {
		*d = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
		*m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
	}
}

/* The 256 signed quants (q - 32) of the Q6_K block at x (quant_ref.c) */
void quant_q6_k_unpack(const uint8_t *x, int8_t q[QUANT_QK_K]);

/* The SIMD kernels (quant_x86.c); NULL pointers there when the build
 * has none (not x86-64 GCC/clang). */
extern const struct quant_kernel quant_kernel_avx2;
extern const struct quant_kernel quant_kernel_avx512;
/* 1 if quant_x86.c was built with the SIMD kernels */
extern const int quant_have_simd;

#endif /* TS_MODEL_QUANT_IMPL_H */
