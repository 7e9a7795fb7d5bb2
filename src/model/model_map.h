/*
 * model/model_map.h - a model file mapped read-only: what the readers of
 * llama2.c checkpoints (model.c), GGUF files (gguf.c) and safetensors
 * (safetensors.c) share. The weights stay in the page cache, shared by
 * every process that maps the file, and are read in on demand.
 */
#ifndef TS_MODEL_MODEL_MAP_H
#define TS_MODEL_MODEL_MAP_H

#include <stddef.h>

#include "common/ts.h"

/*
 * Maps the regular file at `path` read-only (PROT_READ, MAP_PRIVATE) and
 * advises the kernel to read it in (POSIX_MADV_WILLNEED). *map is NULL
 * and *len 0 for an empty file. Returns TS_OK, TS_ESYS (open, fstat or
 * mmap failed; errno kept), TS_EFORMAT (not a regular file) or TS_ELIMIT
 * (larger than the address space); err starts with the path ("m.gguf:
 * cannot open: No such file or directory").
 */
enum ts_err model_map_file(const char *path, void **map, size_t *len,
    char *err, size_t errlen);

/* Unmaps what model_map_file mapped. Accepts NULL. */
void model_unmap_file(void *map, size_t len);

#endif /* TS_MODEL_MODEL_MAP_H */
