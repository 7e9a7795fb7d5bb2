/* TEMPORARY STUB (replaced by the quant branch) */
#ifndef TS_MODEL_QUANT_H
#define TS_MODEL_QUANT_H
#include <stddef.h>
#include <stdint.h>
#include "model/dtype.h"
int quant_supported(uint32_t t);
enum model_dtype quant_vec_type(enum model_dtype t);
void quant_prepare(enum model_dtype t, const float *x, void *dst, size_t n);
void quant_dot_rows(enum model_dtype t, const void *w, size_t n, const void *xq, size_t nrows, float *out);
void quant_dequant_row(enum model_dtype t, const void *src, float *dst, size_t n);
void quant_quantize_row(enum model_dtype t, const float *src, void *dst, size_t n);
const char *quant_kernel_name(void);
int quant_set_kernel(const char *name);
#endif
