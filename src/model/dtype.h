/*
 * model/dtype.h - the element types of a model's tensors, numbered as
 * ggml numbers them (enum ggml_type in ggml.h; the GGUF spec,
 * docs/gguf.md "GGML types", uses the same numbers in a tensor's info).
 *
 * A type stores a row of n elements (n a multiple of its block size) in
 * n / block blocks of `size` bytes each. The quantized blocks' layouts
 * are ggml's (ggml-common.h): e.g. Q8_0 is a float16 scale d and 32
 * int8 q, element i = d * q[i].
 */
#ifndef TS_MODEL_DTYPE_H
#define TS_MODEL_DTYPE_H

#include <stddef.h>
#include <stdint.h>

enum model_dtype {
	MODEL_DTYPE_F32 = 0,
	MODEL_DTYPE_F16 = 1,
	MODEL_DTYPE_Q4_0 = 2,
	MODEL_DTYPE_Q4_1 = 3,
	MODEL_DTYPE_Q5_0 = 6,
	MODEL_DTYPE_Q5_1 = 7,
	MODEL_DTYPE_Q8_0 = 8,
	MODEL_DTYPE_Q8_1 = 9,
	MODEL_DTYPE_Q2_K = 10,
	MODEL_DTYPE_Q3_K = 11,
	MODEL_DTYPE_Q4_K = 12,
	MODEL_DTYPE_Q5_K = 13,
	MODEL_DTYPE_Q6_K = 14,
	MODEL_DTYPE_Q8_K = 15,
	MODEL_DTYPE_IQ2_XXS = 16,
	MODEL_DTYPE_IQ2_XS = 17,
	MODEL_DTYPE_IQ3_XXS = 18,
	MODEL_DTYPE_IQ1_S = 19,
	MODEL_DTYPE_IQ4_NL = 20,
	MODEL_DTYPE_IQ3_S = 21,
	MODEL_DTYPE_IQ2_S = 22,
	MODEL_DTYPE_IQ4_XS = 23,
	MODEL_DTYPE_I8 = 24,
	MODEL_DTYPE_I16 = 25,
	MODEL_DTYPE_I32 = 26,
	MODEL_DTYPE_I64 = 27,
	MODEL_DTYPE_F64 = 28,
	MODEL_DTYPE_IQ1_M = 29,
	MODEL_DTYPE_BF16 = 30,
	MODEL_DTYPE_TQ1_0 = 34,
	MODEL_DTYPE_TQ2_0 = 35,
	MODEL_DTYPE_MXFP4 = 39,
	MODEL_DTYPE_COUNT = 40          /* one past the largest number */
};

struct model_dtype_info {
	const char *name;       /* ggml's name: "f32", "q8_0"; NULL: the
				 * number is not a type (a removed one) */
	uint32_t block;         /* elements per block */
	uint32_t size;          /* bytes per block */
};

/* The info of type t, or NULL when t names no type. */
const struct model_dtype_info *model_dtype_info(uint32_t t);

/* ggml's name of t ("q4_k"), or "unknown" */
const char *model_dtype_name(uint32_t t);

/* Bytes of a row of n elements of type t; 0 when t is no type or n is
 * not a multiple of its block. */
uint64_t model_dtype_row_bytes(uint32_t t, uint64_t n);

#endif /* TS_MODEL_DTYPE_H */
