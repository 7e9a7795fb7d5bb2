/*
 * model/quant.h - dot products of rows of half-precision and quantized
 * weights with an activation vector, as ggml computes them (the decode
 * hot loop of the llama backend), plus the conversions around them.
 *
 * A weight row of n elements of type t (model_dtype_row_bytes(t, n)
 * bytes, blocks laid out as ggml's ggml-common.h) is dotted with an
 * activation x[n] that was first converted to t's "vec type" (ggml's
 * type_traits_cpu[t].vec_dot_type in ggml-cpu.c):
 *
 *   weight type   vec type   ggml's dot (ggml-cpu/quants.c, vec.c)
 *   F16           F16        ggml_vec_dot_f16
 *   BF16          BF16       ggml_vec_dot_bf16
 *   Q8_0          Q8_0       ggml_vec_dot_q8_0_q8_0
 *   Q4_0          Q8_0       ggml_vec_dot_q4_0_q8_0
 *   Q4_K          Q8_K       ggml_vec_dot_q4_K_q8_K
 *   Q6_K          Q8_K       ggml_vec_dot_q6_K_q8_K
 *
 * Three kernels compute the dots: "scalar" (plain C, the reference),
 * "avx2" (AVX2 + FMA + F16C) and "avx512" (AVX-512 F/BW/VL/VNNI), the
 * best one the CPU has chosen once at first use. The integer parts of
 * the quantized dots are exact in every kernel; only the order in which
 * the per-block float terms are added differs between kernels. Every
 * function here is thread-safe (no state but the kernel choice).
 *
 * F32 rows are not handled here (model.c's own kernels).
 */
#ifndef TS_MODEL_QUANT_H
#define TS_MODEL_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "model/dtype.h"

/* Rows a quant_dot_rows call reads at most. */
#define QUANT_MAX_ROWS 4u

/* 1 if t is a weight type these kernels handle (F16, BF16, Q8_0, Q4_0,
 * Q4_K, Q6_K), else 0 (any other number, including F32 and Q8_K). */
int quant_supported(uint32_t t);

/*
 * ggml's vec_dot_type of weight type t: the type activations are
 * converted to for a dot with a row of type t (the table above); for a
 * type quant_supported refuses, MODEL_DTYPE_F32.
 */
enum model_dtype quant_vec_type(enum model_dtype t);

/*
 * dst = x[n] converted to quant_vec_type(t), as ggml's from_float of
 * that type: quantize_row_q8_0_ref, quantize_row_q8_K_ref (ggml-quants.c,
 * the generic from_float on x86 too), fp32 -> fp16 / bf16 round to
 * nearest even. n must be a multiple of the vec type's block (32 for
 * Q8_0, 256 for Q8_K); dst holds model_dtype_row_bytes(vec, n) bytes,
 * any alignment. The bytes do not depend on the kernel chosen.
 * t not supported or n not a multiple: nothing is written.
 */
void quant_prepare(enum model_dtype t, const float *x, void *dst, size_t n);

/*
 * out[k] = (row k of w) . xq for k < nrows (1..QUANT_MAX_ROWS): nrows
 * rows of n elements of type t one after another (row stride
 * model_dtype_row_bytes(t, n) bytes, any alignment), xq from
 * quant_prepare(t, x, xq, n) (its Q8_0 bytes are never -128, which the
 * AVX2 sign trick needs). Reading up to four rows per call lets the
 * caller reuse xq from cache. n a multiple of t's block and of its vec
 * type's. Units: the product of the weights' and activations' units; an
 * F16 activation beyond +-65504 became inf in quant_prepare (as in
 * ggml). A bad t, n or nrows: out[0..min(nrows, 4)) = NAN.
 */
void quant_dot_rows(enum model_dtype t, const void *w, size_t n,
    const void *xq, size_t nrows, float *out);

/*
 * dst[n] = the values of the row src of n elements of type t (ggml's
 * to_float: dequantize_row_q8_0, _q4_0, _q4_K, _q6_K, _q8_K in
 * ggml-quants.c; fp16 / bf16 widened exactly). t may be a weight type
 * or a vec type (Q8_K too). A bad t or n: dst[0..n) = NAN.
 */
void quant_dequant_row(enum model_dtype t, const void *src, float *dst,
    size_t n);

/*
 * dst = src[n] as a row of type t by ggml's reference quantizer, the one
 * that writes model files (quantize_row_q8_0_ref, _q4_0_ref, _q4_K_ref,
 * _q6_K_ref in ggml-quants.c; fp16 / bf16 round to nearest even), for
 * the supported types and Q8_K. dst holds model_dtype_row_bytes(t, n)
 * bytes. A bad t or n: nothing is written.
 */
void quant_quantize_row(enum model_dtype t, const float *src, void *dst,
    size_t n);

/*
 * The kernel in use: "avx512", "avx2" or "scalar". Chosen on first use
 * by __builtin_cpu_supports (the best one this CPU and OS run), once
 * (racing first calls agree; the choice is an atomic pointer).
 */
const char *quant_kernel_name(void);

/*
 * Forces kernel `name` ("scalar", "avx2", "avx512") for tests and
 * benchmarks, for every thread. Returns 0, or -1 when the name is
 * unknown or this CPU (or this build) lacks the kernel (nothing changes).
 */
int quant_set_kernel(const char *name);

/*
 * fp32 <-> IEEE binary16 and bfloat16, round to nearest even, as ggml's
 * GGML_FP32_TO_FP16 (ggml_compute_fp32_to_fp16 in ggml-impl.h: NaN ->
 * 0x7e00 with the sign, overflow -> inf, subnormals kept) and
 * ggml_compute_fp32_to_bf16 (NaN -> quiet, bits | 0x40; no flush of
 * subnormals). The widenings are exact.
 */
uint16_t quant_f32_to_f16(float f);
float quant_f16_to_f32(uint16_t h);
uint16_t quant_f32_to_bf16(float f);
float quant_bf16_to_f32(uint16_t h);

/*
 * Four rows of w (as quant_dot_rows with nrows 4) against nx activation
 * rows (1..QUANT_MAX_ROWS; row j at xq + j * xstride bytes, each from
 * quant_prepare): out[j * ostride + k] = (row k) . (activation j). The
 * same bits as nx calls of quant_dot_rows; a batched matmul (a decode
 * step of several sequences) reads and converts each weight block once
 * for the nx rows (Q8_0 on AVX-512; the other types and kernels loop).
 */
void quant_dot_tile(enum model_dtype t, const void *w, size_t n,
    const void *xq, size_t xstride, size_t nx, float *out, size_t ostride);

#endif /* TS_MODEL_QUANT_H */
