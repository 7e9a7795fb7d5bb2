/*
 * model/dtype.c - the table of ggml's tensor types (see dtype.h). Block
 * sizes and byte sizes as ggml's type_traits (ggml.c) and the block
 * structs of ggml-common.h.
 */
#include "model/dtype.h"

static const struct model_dtype_info model_dtypes[MODEL_DTYPE_COUNT] = {
	[MODEL_DTYPE_F32] = { "f32", 1, 4 },
	[MODEL_DTYPE_F16] = { "f16", 1, 2 },
	[MODEL_DTYPE_Q4_0] = { "q4_0", 32, 18 },
	[MODEL_DTYPE_Q4_1] = { "q4_1", 32, 20 },
	[MODEL_DTYPE_Q5_0] = { "q5_0", 32, 22 },
	[MODEL_DTYPE_Q5_1] = { "q5_1", 32, 24 },
	[MODEL_DTYPE_Q8_0] = { "q8_0", 32, 34 },
	[MODEL_DTYPE_Q8_1] = { "q8_1", 32, 36 },
	[MODEL_DTYPE_Q2_K] = { "q2_K", 256, 84 },
	[MODEL_DTYPE_Q3_K] = { "q3_K", 256, 110 },
	[MODEL_DTYPE_Q4_K] = { "q4_K", 256, 144 },
	[MODEL_DTYPE_Q5_K] = { "q5_K", 256, 176 },
	[MODEL_DTYPE_Q6_K] = { "q6_K", 256, 210 },
	[MODEL_DTYPE_Q8_K] = { "q8_K", 256, 292 },
	[MODEL_DTYPE_IQ2_XXS] = { "iq2_xxs", 256, 66 },
	[MODEL_DTYPE_IQ2_XS] = { "iq2_xs", 256, 74 },
	[MODEL_DTYPE_IQ3_XXS] = { "iq3_xxs", 256, 98 },
	[MODEL_DTYPE_IQ1_S] = { "iq1_s", 256, 50 },
	[MODEL_DTYPE_IQ4_NL] = { "iq4_nl", 32, 18 },
	[MODEL_DTYPE_IQ3_S] = { "iq3_s", 256, 110 },
	[MODEL_DTYPE_IQ2_S] = { "iq2_s", 256, 82 },
	[MODEL_DTYPE_IQ4_XS] = { "iq4_xs", 256, 136 },
	[MODEL_DTYPE_I8] = { "i8", 1, 1 },
	[MODEL_DTYPE_I16] = { "i16", 1, 2 },
	[MODEL_DTYPE_I32] = { "i32", 1, 4 },
	[MODEL_DTYPE_I64] = { "i64", 1, 8 },
	[MODEL_DTYPE_F64] = { "f64", 1, 8 },
	[MODEL_DTYPE_IQ1_M] = { "iq1_m", 256, 56 },
	[MODEL_DTYPE_BF16] = { "bf16", 1, 2 },
	[MODEL_DTYPE_TQ1_0] = { "tq1_0", 256, 54 },
	[MODEL_DTYPE_TQ2_0] = { "tq2_0", 256, 66 },
	[MODEL_DTYPE_MXFP4] = { "mxfp4", 32, 17 },
};

const struct model_dtype_info *
model_dtype_info(uint32_t t)
{
	if (t >= MODEL_DTYPE_COUNT || model_dtypes[t].name == NULL)
		return NULL;
	return &model_dtypes[t];
}

const char *
model_dtype_name(uint32_t t)
{
	const struct model_dtype_info *i = model_dtype_info(t);

	return i != NULL ? i->name : "unknown";
}

uint64_t
model_dtype_row_bytes(uint32_t t, uint64_t n)
{
	const struct model_dtype_info *i = model_dtype_info(t);

	if (i == NULL || n % i->block != 0)
		return 0;
	return n / i->block * i->size;
}
