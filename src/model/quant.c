#include "model/quant.h"
#include <stdlib.h>
int quant_supported(uint32_t t){(void)t;return 0;}
enum model_dtype quant_vec_type(enum model_dtype t){return t;}
void quant_prepare(enum model_dtype t, const float *x, void *dst, size_t n){(void)t;(void)x;(void)dst;(void)n;abort();}
void quant_dot_rows(enum model_dtype t, const void *w, size_t n, const void *xq, size_t nrows, float *out){(void)t;(void)w;(void)n;(void)xq;(void)nrows;(void)out;abort();}
void quant_dequant_row(enum model_dtype t, const void *src, float *dst, size_t n){(void)t;(void)src;(void)dst;(void)n;abort();}
void quant_quantize_row(enum model_dtype t, const float *src, void *dst, size_t n){(void)t;(void)src;(void)dst;(void)n;abort();}
const char *quant_kernel_name(void){return "scalar";}
int quant_set_kernel(const char *name){(void)name;return 0;}
