/*
 * model/gguf.h - GGUF model files: a reader over a file image (mmap'd or
 * in memory) and a writer that builds one in memory and writes it.
 *
 * The format is ggml's GGUF, version 3 (ggml docs/gguf.md, "File
 * Structure"; the reader ggml/src/gguf.cpp is the reference for what a
 * loader accepts). All numbers little-endian, fields packed:
 *
 *   char[4]  magic "GGUF"
 *   u32      version (2 or 3 read; 3 written)
 *   u64      tensor_count
 *   u64      metadata_kv_count
 *   kv[]     string key, u32 value type, value     ("gguf_metadata_kv_t")
 *   info[]   string name, u32 n_dims, u64 dims[n_dims] (ne[0] innermost),
 *            u32 ggml type, u64 offset from the data section
 *   padding  0x00 to the next multiple of ALIGNMENT
 *   data     each tensor at its offset (a multiple of ALIGNMENT),
 *            padded to ALIGNMENT
 *
 * where a string is a u64 byte length and that many bytes (no NUL), a
 * value is one of the thirteen gguf_type below (an array: u32 element
 * type, u64 count, the elements; arrays may nest), and ALIGNMENT is the
 * key general.alignment (default 32). Tensor types are ggml's numbers
 * (model/dtype.h). Version 1 (u32 counts) is refused; version 2 has the
 * layout of 3 (3 only added big-endian files, which are refused: a
 * big-endian file's version reads byte-swapped, 0x03000000, the test
 * llama.cpp uses).
 *
 * Costs: gguf_parse walks the image once, O(image size), and allocates
 * O(kv count + tensor count) only after checking both counts against the
 * bytes left; keys and tensor names are found through hash indexes,
 * O(1) per lookup. Values stay in the image: strings come back as
 * (pointer, length) into it, never NUL-terminated.
 */
#ifndef TS_MODEL_GGUF_H
#define TS_MODEL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

/* Metadata value types: docs/gguf.md "gguf_metadata_value_type". */
enum gguf_type {
	GGUF_TYPE_U8 = 0,
	GGUF_TYPE_I8 = 1,
	GGUF_TYPE_U16 = 2,
	GGUF_TYPE_I16 = 3,
	GGUF_TYPE_U32 = 4,
	GGUF_TYPE_I32 = 5,
	GGUF_TYPE_F32 = 6,
	GGUF_TYPE_BOOL = 7,             /* one byte, 0 or 1 */
	GGUF_TYPE_STR = 8,              /* u64 length, bytes */
	GGUF_TYPE_ARR = 9,              /* u32 type, u64 count, elements */
	GGUF_TYPE_U64 = 10,
	GGUF_TYPE_I64 = 11,
	GGUF_TYPE_F64 = 12,
	GGUF_TYPE_COUNT = 13
};

#define GGUF_MAGIC "GGUF"
#define GGUF_VERSION 3u                 /* the version written */
#define GGUF_DEFAULT_ALIGNMENT 32u      /* without general.alignment */
#define GGUF_KEY_ALIGNMENT "general.alignment"
#define GGUF_MAX_DIMS 4u                /* n_dims is 1..4 */
#define GGUF_MAX_KEY_LEN 65535u         /* spec: keys at most 2^16-1 */
#define GGUF_MAX_NAME_LEN 64u           /* spec: tensor names <= 64 */
#define GGUF_MAX_ALIGNMENT (1u << 20)   /* ggml's reader's bound */
#define GGUF_MAX_DEPTH 16u              /* nested arrays, ours */

/* ggml's short name of a value type: "u8", "str", "arr"; "unknown". */
const char *gguf_type_name(uint32_t t);

/* ---- reading ---------------------------------------------------------- */

struct gguf;

/*
 * Parses the GGUF image (data, len) and checks all of it:
 *  - magic "GGUF" (else "not a GGUF file (magic 'xxxx')"), version 2 or
 *    3 ("GGUF version 1 is not supported ...", a byte-swapped version is
 *    named as a big-endian file);
 *  - tensor and kv counts that fit the bytes left (each kv takes at
 *    least 14 bytes, each tensor info 32) before anything is allocated;
 *  - every kv: a non-empty key of at most GGUF_MAX_KEY_LEN bytes, a known
 *    value type, a value inside the image (strings and arrays by their
 *    length prefixes, bools 0 or 1, arrays nested at most GGUF_MAX_DEPTH
 *    deep), no key twice;
 *  - general.alignment (any integer type; default 32): a power of two,
 *    at most GGUF_MAX_ALIGNMENT;
 *  - every tensor info: a name of at most GGUF_MAX_NAME_LEN bytes, not
 *    seen before; n_dims 1..4; each dim at most INT64_MAX and their
 *    product too; a type of model/dtype.h ("tensor 'blk.0.attn_q.weight'
 *    has unknown type 99"); ne[0] a multiple of the type's block; an
 *    offset that is a multiple of the alignment; data inside the image
 *    after the aligned start of the data section (checked 64-bit
 *    arithmetic throughout).
 * Trailing padding after the last tensor's data is not required.
 *
 * On success *out owns the index and borrows the image: (data, len) must
 * stay valid and unchanged until gguf_close(*out). TS_EFORMAT with err
 * naming what and where ("truncated at byte 1234 reading the value of
 * key 'tokenizer.ggml.tokens' (needs 8 bytes, 3 left)"); *out is then
 * NULL. err may be NULL when errlen is 0. Aborts only on out of memory.
 */
enum ts_err gguf_parse(struct gguf **out, const void *data, size_t len,
    char *err, size_t errlen);

/*
 * mmaps the file at path (PROT_READ, MAP_PRIVATE) and parses it. err
 * starts with the path. TS_ESYS (errno kept) when it cannot be opened,
 * stat'ed or mapped; TS_EFORMAT as gguf_parse, or when path is not a
 * regular file; TS_ELIMIT when it is larger than the address space.
 */
enum ts_err gguf_open(struct gguf **out, const char *path, char *err,
    size_t errlen);

/* Frees g and unmaps the file if gguf_open mapped it. Accepts NULL. */
void gguf_close(struct gguf *g);

uint32_t gguf_version(const struct gguf *g);
uint32_t gguf_alignment(const struct gguf *g);
/* The image (borrowed or mapped) and the offset of its data section. */
const void *gguf_image(const struct gguf *g, size_t *len);
uint64_t gguf_data_offset(const struct gguf *g);

/* ---- metadata --------------------------------------------------------- */

/* One key of the file, for listing. key points into the image. */
struct gguf_kv_info {
	const char *key;
	size_t key_len;
	uint32_t type;          /* enum gguf_type */
	uint32_t arr_type;      /* arrays: the element type, else 0 */
	uint64_t arr_n;         /* arrays: the element count, else 0 */
};

/* The number of keys, and the i-th in file order (i < count; TS_EINVAL
 * past the end). */
uint64_t gguf_kv_count(const struct gguf *g);
enum ts_err gguf_kv_at(const struct gguf *g, uint64_t i,
    struct gguf_kv_info *out);

/*
 * Typed getters of the key `key` (NUL-terminated). Each returns TS_OK
 * with the value; TS_ENOENT when the key is absent (err says so, *v
 * untouched); TS_EFORMAT when its type does not convert (err: "key 'x'
 * is str, wanted u32") or its value does not fit ("key 'x' is i32 -1,
 * which does not fit u32"). The integer getters take every integer
 * type whose value fits; gguf_get_f32 takes f32 and f64 (rounded);
 * gguf_get_str gives (pointer, length) into the image.
 */
enum ts_err gguf_get_u32(const struct gguf *g, const char *key,
    uint32_t *v, char *err, size_t errlen);
enum ts_err gguf_get_u64(const struct gguf *g, const char *key,
    uint64_t *v, char *err, size_t errlen);
enum ts_err gguf_get_i32(const struct gguf *g, const char *key,
    int32_t *v, char *err, size_t errlen);
enum ts_err gguf_get_i64(const struct gguf *g, const char *key,
    int64_t *v, char *err, size_t errlen);
enum ts_err gguf_get_f32(const struct gguf *g, const char *key, float *v,
    char *err, size_t errlen);
enum ts_err gguf_get_bool(const struct gguf *g, const char *key, int *v,
    char *err, size_t errlen);
enum ts_err gguf_get_str(const struct gguf *g, const char *key,
    const char **s, size_t *len, char *err, size_t errlen);

/*
 * An array's element type (enum gguf_type) and count. TS_ENOENT when
 * absent, TS_EFORMAT when the key is not an array.
 */
enum ts_err gguf_get_arr(const struct gguf *g, const char *key,
    uint32_t *elem_type, uint64_t *n, char *err, size_t errlen);

/*
 * Element i of an array, by index. gguf_arr_f32 takes f32 and f64
 * arrays, gguf_arr_i32 every integer array whose element fits;
 * gguf_arr_str a string array (strings have no fixed size: O(i) per
 * call, for a few lookups; read a whole vocabulary with the _fill
 * functions). TS_ENOENT when absent, TS_EFORMAT for another type, a
 * value that does not fit, or i >= count ("key 'x' has 5 elements, no
 * element 7").
 */
enum ts_err gguf_arr_str(const struct gguf *g, const char *key,
    uint64_t i, const char **s, size_t *len, char *err, size_t errlen);
enum ts_err gguf_arr_f32(const struct gguf *g, const char *key,
    uint64_t i, float *v, char *err, size_t errlen);
enum ts_err gguf_arr_i32(const struct gguf *g, const char *key,
    uint64_t i, int32_t *v, char *err, size_t errlen);

/*
 * A whole array in one pass, O(n): s[k], len[k] (pointers into the
 * image) for a string array; v[k] for f32 (or f64) and integer arrays
 * (as gguf_arr_f32 / gguf_arr_i32). n must be the array's count (from
 * gguf_get_arr): the caller sizes its arrays, and a different n is
 * TS_EINVAL. Errors as gguf_arr_*; on an error the outputs are partly
 * written.
 */
enum ts_err gguf_arr_str_fill(const struct gguf *g, const char *key,
    const char **s, size_t *len, uint64_t n, char *err, size_t errlen);
enum ts_err gguf_arr_f32_fill(const struct gguf *g, const char *key,
    float *v, uint64_t n, char *err, size_t errlen);
enum ts_err gguf_arr_i32_fill(const struct gguf *g, const char *key,
    int32_t *v, uint64_t n, char *err, size_t errlen);

/* ---- tensors ---------------------------------------------------------- */

/* A tensor of the file. name and data point into the image. */
struct gguf_tensor {
	const char *name;       /* not NUL-terminated */
	size_t name_len;
	uint32_t type;          /* enum model_dtype (ggml's number) */
	uint32_t n_dims;        /* 1..4 */
	uint64_t dims[4];       /* ne[0] = row length (innermost), as
				 * ggml; dims past n_dims are 1 */
	const void *data;       /* image + data offset + offset: aligned
				 * to the file's alignment when the image
				 * is (gguf_open's mapping is page-aligned;
				 * a caller's buffer may be less) */
	uint64_t bytes;         /* rows x row bytes of the type */
	uint64_t offset;        /* from the data section, as in the file */
};

/* The tensor named `name` (NUL-terminated), or NULL. O(1). */
const struct gguf_tensor *gguf_tensor_find(const struct gguf *g,
    const char *name);
uint64_t gguf_tensor_count(const struct gguf *g);
/* The i-th tensor in file order, or NULL when i >= count. */
const struct gguf_tensor *gguf_tensor_at(const struct gguf *g, uint64_t i);

/* ---- writing ---------------------------------------------------------- */

struct gguf_writer;

/*
 * A writer of a version 3 file with the given alignment (0: 32; else a
 * power of two up to GGUF_MAX_ALIGNMENT, or NULL). Keys are written in
 * the order they were set; general.alignment first, as a u32, when the
 * alignment is not 32 (it is the writer's: setting it is refused).
 */
struct gguf_writer *gguf_writer_new(uint32_t alignment);
void gguf_writer_free(struct gguf_writer *w);    /* accepts NULL */

/*
 * Setters: each copies key and value. TS_EINVAL for an empty key or one
 * longer than GGUF_MAX_KEY_LEN, a key set before, general.alignment, a
 * bad element type or array; the first such refusal is kept and
 * gguf_writer_write then fails with its message, so a caller may check
 * only that. Strings are (pointer, length) or NUL-terminated (the
 * functions without a len); a NULL len array in gguf_writer_set_arr_str
 * means every string is NUL-terminated. gguf_writer_set_arr takes n
 * elements of a fixed-size type (not str or arr) in host order, bools
 * as one byte 0 or 1. gguf_writer_set_raw takes a value already encoded
 * as in a file (what follows the value type; nested arrays, copies from
 * another file) and checks it as the reader would.
 */
enum ts_err gguf_writer_set_u8(struct gguf_writer *w, const char *key,
    uint8_t v);
enum ts_err gguf_writer_set_i8(struct gguf_writer *w, const char *key,
    int8_t v);
enum ts_err gguf_writer_set_u16(struct gguf_writer *w, const char *key,
    uint16_t v);
enum ts_err gguf_writer_set_i16(struct gguf_writer *w, const char *key,
    int16_t v);
enum ts_err gguf_writer_set_u32(struct gguf_writer *w, const char *key,
    uint32_t v);
enum ts_err gguf_writer_set_i32(struct gguf_writer *w, const char *key,
    int32_t v);
enum ts_err gguf_writer_set_u64(struct gguf_writer *w, const char *key,
    uint64_t v);
enum ts_err gguf_writer_set_i64(struct gguf_writer *w, const char *key,
    int64_t v);
enum ts_err gguf_writer_set_f32(struct gguf_writer *w, const char *key,
    float v);
enum ts_err gguf_writer_set_f64(struct gguf_writer *w, const char *key,
    double v);
enum ts_err gguf_writer_set_bool(struct gguf_writer *w, const char *key,
    int v);
enum ts_err gguf_writer_set_str(struct gguf_writer *w, const char *key,
    const char *s);
enum ts_err gguf_writer_set_strn(struct gguf_writer *w, const char *key,
    const char *s, size_t len);
enum ts_err gguf_writer_set_arr_str(struct gguf_writer *w, const char *key,
    const char *const *s, const size_t *len, size_t n);
enum ts_err gguf_writer_set_arr_f32(struct gguf_writer *w, const char *key,
    const float *v, size_t n);
enum ts_err gguf_writer_set_arr_i32(struct gguf_writer *w, const char *key,
    const int32_t *v, size_t n);
enum ts_err gguf_writer_set_arr_u32(struct gguf_writer *w, const char *key,
    const uint32_t *v, size_t n);
enum ts_err gguf_writer_set_arr(struct gguf_writer *w, const char *key,
    uint32_t elem_type, const void *v, size_t n);
enum ts_err gguf_writer_set_raw(struct gguf_writer *w, const char *key,
    uint32_t type, const void *value, size_t len);

/*
 * Adds a tensor: name (NUL-terminated, 1..63 bytes: ggml's loader keeps
 * names in 64 bytes with their NUL), type (model/dtype.h), n_dims 1..4
 * dims with ne[0] innermost and a multiple of the type's block, and data
 * of exactly the implied bytes (dims product / block x block bytes;
 * NULL only when that is 0). The data is BORROWED: it must stay valid
 * until gguf_writer_write or gguf_writer_bytes returns. Tensors are laid
 * out in the order added, each at the next multiple of the alignment.
 * TS_EINVAL (kept, as for the setters) for a bad name, type or shape or
 * a name added before.
 */
enum ts_err gguf_writer_add_tensor(struct gguf_writer *w, const char *name,
    uint32_t type, uint32_t n_dims, const uint64_t *dims, const void *data);

/*
 * Writes the file to path: header, keys, tensor infos, padding, tensor
 * data, each tensor padded with zeros to the alignment (as ggml's
 * gguf_write_to_file). The bytes go to "path.tmp.PID" (mode 0666 less
 * the umask), renamed to path once whole, so a reader of an old file at
 * path never sees a partial one. TS_EINVAL with the first refused
 * call's message; TS_ESYS (errno kept) when it cannot be written, err
 * starting with the path; the temporary file is removed.
 */
enum ts_err gguf_writer_write(struct gguf_writer *w, const char *path,
    char *err, size_t errlen);

/* The same image in memory: *out (caller frees) and *len. Errors as
 * gguf_writer_write, without TS_ESYS. */
enum ts_err gguf_writer_bytes(struct gguf_writer *w, void **out,
    size_t *len, char *err, size_t errlen);

#endif /* TS_MODEL_GGUF_H */
