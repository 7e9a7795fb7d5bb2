/*
 * model/safetensors.h - Hugging Face's safetensors files: reading (mmap,
 * validation), a set of shards named by an index, and writing.
 *
 * Format (huggingface/safetensors README.md, "Format"):
 *
 *   8 bytes   N, an unsigned little-endian 64-bit integer: the header size
 *   N bytes   a UTF-8 JSON object, beginning with '{' and possibly padded
 *             at the end with spaces (0x20):
 *               {"TENSOR_NAME": {"dtype": "F16", "shape": [1, 16, 256],
 *                                "data_offsets": [BEGIN, END]}, ...,
 *                "__metadata__": {"key": "value", ...}}   (optional,
 *                                                          strings only)
 *   the rest  the byte buffer; BEGIN and END (one past) are offsets in it
 *
 * and its notes: duplicate keys are disallowed; tensors are little-endian
 * and row-major ('C' order); a shape [] is a scalar and a dimension may
 * be 0 (no bytes); "the byte buffer needs to be entirely indexed, and
 * cannot contain holes" (so tensors do not overlap either, and the file
 * ends where the last tensor does). The reference implementation
 * (safetensors/src/tensor.rs) refuses headers over 100 MB
 * (MAX_HEADER_SIZE = 100_000_000), as we do.
 *
 * Only the float types a llama checkpoint uses are accepted: F32, F16 and
 * BF16. Any other dtype (F64, I8, BOOL, F8_E4M3, ...) is refused, naming
 * the dtype and the tensor.
 *
 * Shards (transformers' save_pretrained with max_shard_size):
 * model.safetensors.index.json is {"metadata": {"total_size": BYTES},
 * "weight_map": {"TENSOR_NAME": "model-00001-of-00002.safetensors", ...}}
 * next to the shard files.
 */
#ifndef TS_MODEL_SAFETENSORS_H
#define TS_MODEL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"
#include "model/dtype.h"

#define ST_MAX_HEADER_BYTES 100000000u  /* the reference's limit */
#define ST_MAX_DIMS 8u
#define ST_MAX_TENSORS 1048576u
#define ST_MAX_NAME 1024u               /* bytes of a tensor's name */
#define ST_MAX_SHARDS 4096u
#define ST_MAX_INDEX_BYTES (64u << 20)  /* model.safetensors.index.json */

/* One tensor of a file. Everything is borrowed from its file (or set)
 * until safetensors_close (safetensors_set_close). */
struct st_tensor {
	const char *name;              /* NUL-terminated */
	enum model_dtype dtype;        /* MODEL_DTYPE_F32, _F16 or _BF16 */
	uint32_t n_dims;               /* 0 (a scalar) .. ST_MAX_DIMS */
	uint64_t shape[ST_MAX_DIMS];   /* outermost first, as torch: a
					* Linear's weight is [out][in] */
	uint64_t n_elems;              /* product of shape (1 for []) */
	const void *data;              /* little-endian elements, in the
					* mapping; aligned only as the file
					* places it (the reference writer
					* aligns every tensor to its element
					* size; others may not) */
	uint64_t bytes;                /* n_elems * element size */
	uint64_t offset;               /* of data, from the file's start */
};

struct safetensors;
struct safetensors_set;

/*
 * Maps the file `path` read-only and validates it (see above). Returns
 * TS_OK with *out (close with safetensors_close); TS_ESYS (cannot open,
 * stat or map; errno kept), TS_ELIMIT (header over the limit, too many
 * tensors or dimensions) or TS_EFORMAT, with err starting with the path:
 * "x.safetensors: tensor 'w': dtype F64 is not supported (F32, F16 and
 * BF16 only)".
 */
enum ts_err safetensors_open(struct safetensors **out, const char *path,
    char *err, size_t errlen);

/*
 * The same validation of an image (buf, len) in memory, borrowed until
 * safetensors_close (tests and fuzzing). err has no path prefix.
 */
enum ts_err safetensors_parse(struct safetensors **out, const void *buf,
    size_t len, char *err, size_t errlen);

/* Frees a file (unmapping it); NULL is fine. */
void safetensors_close(struct safetensors *st);

/* The tensor named `name`, or NULL. O(log n). */
const struct st_tensor *safetensors_find(const struct safetensors *st,
    const char *name);

/* Tensors in the order of their data in the file (i < count). */
size_t safetensors_count(const struct safetensors *st);
const struct st_tensor *safetensors_at(const struct safetensors *st,
    size_t i);

/* The value of `key` in the header's __metadata__, or NULL. Borrowed. */
const char *safetensors_metadata(const struct safetensors *st,
    const char *key);

/*
 * Opens the weights of a Hugging Face model folder: when
 * DIR/model.safetensors.index.json exists, every shard its weight_map
 * names (a plain file name in DIR: one with '/' or '\', "." or "..", or
 * a leading '.' is refused), checking that each tensor of the map is in
 * its named shard; otherwise DIR/model.safetensors alone. Errors as
 * safetensors_open, naming the file; a shard missing is TS_ESYS
 * ("DIR/model-00002-of-00002.safetensors: cannot open: No such file or
 * directory"), a tensor missing from its shard TS_EFORMAT.
 */
enum ts_err safetensors_set_open_dir(struct safetensors_set **out,
    const char *dir, char *err, size_t errlen);

/* One file as a set (its tensors are the set's). */
enum ts_err safetensors_set_open_file(struct safetensors_set **out,
    const char *path, char *err, size_t errlen);

void safetensors_set_close(struct safetensors_set *s);

/* The tensor `name` of the set (from the shard the index names), or
 * NULL. O(log n). */
const struct st_tensor *safetensors_set_find(
    const struct safetensors_set *s, const char *name);

/* The set's tensors in name order (strcmp), i < count. */
size_t safetensors_set_count(const struct safetensors_set *s);
const struct st_tensor *safetensors_set_at(const struct safetensors_set *s,
    size_t i);

/* Number of files (1 without an index). */
size_t safetensors_set_files(const struct safetensors_set *s);

/*
 * A tensor to write: its elements (n_elems of dtype F32/F16/BF16, in
 * host order, which must be little-endian) are borrowed.
 */
struct st_write_tensor {
	const char *name;
	enum model_dtype dtype;
	uint32_t n_dims;
	uint64_t shape[ST_MAX_DIMS];
	const void *data;
};

/*
 * Writes a safetensors file at `path` (replaced) as the reference writer
 * does (safetensors/src/tensor.rs prepare/serialize): __metadata__
 * first (n_meta pairs meta[2i] = key, meta[2i + 1] = value; transformers
 * reads only files whose "format" is "pt"), the header padded with
 * spaces to a multiple of 8 bytes, and the tensors ordered by element
 * size (largest first) then name, so each is aligned to its element
 * size. TS_EINVAL for a bad tensor (dtype, dims, empty or duplicate
 * name), TS_ESYS when writing fails; err says which.
 */
enum ts_err safetensors_write(const char *path,
    const struct st_write_tensor *t, size_t n, const char *const *meta,
    size_t n_meta, char *err, size_t errlen);

/* Bytes of a tensor's data: the shape's product times the element size
 * (0 on overflow or a dtype other than F32/F16/BF16). */
uint64_t st_tensor_bytes(enum model_dtype dtype, uint32_t n_dims,
    const uint64_t *shape);

/*
 * Float conversions. To F16 and BF16: round to nearest, ties to even
 * (as torch's .to(torch.float16 / torch.bfloat16)); overflow gives
 * infinity, a NaN stays a (quiet) NaN.
 */
uint16_t st_f32_to_f16(float f);
float st_f16_to_f32(uint16_t h);
uint16_t st_f32_to_bf16(float f);
float st_bf16_to_f32(uint16_t h);

/* The n elements at src (little-endian dtype F32/F16/BF16, any
 * alignment) as floats in out[n]. */
void st_to_f32(enum model_dtype dtype, const void *src, uint64_t n,
    float *out);

/*
 * Reads the whole file `path` (at most max bytes) into a NUL-terminated
 * buffer (*buf, caller frees; *len without the NUL). TS_ESYS with errno
 * kept (ENOENT: it does not exist), TS_ELIMIT when it is larger; err
 * names the path. Used for a folder's JSON files.
 */
enum ts_err st_read_file(const char *path, size_t max, char **buf,
    size_t *len, char *err, size_t errlen);

#endif /* TS_MODEL_SAFETENSORS_H */
