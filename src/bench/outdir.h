/*
 * outdir.h - the --out directory of tokbench's lab steps: created with its
 * parents, and result files written whole (through a temporary file and
 * rename(2)) so that a reader never sees half a result. Every function
 * prints one line on failure.
 */
#ifndef BENCH_OUTDIR_H
#define BENCH_OUTDIR_H

#include <stddef.h>

#include "common/ts.h"

/*
 * Creates `path` and its missing parents (mkdir -p). Returns TS_OK,
 * TS_EINVAL for an empty or too long name, or TS_ESYS.
 */
enum ts_err outdir_mkdir_p(const char *path);

/* Joins dir and name into out (outsz bytes); TS_ELIMIT if too long. */
enum ts_err outdir_path(char *out, size_t outsz, const char *dir,
    const char *name);

/*
 * Writes (data, len) to dir/name through dir/.name.tmp and rename().
 * Returns TS_OK, TS_ELIMIT (path too long) or TS_ESYS.
 */
enum ts_err outdir_write(const char *dir, const char *name, const char *data,
    size_t len);

/*
 * printf into dir/name, as outdir_write(); at most 1 KB of text.
 * Returns TS_OK, TS_ELIMIT or TS_ESYS.
 */
enum ts_err outdir_write_fmt(const char *dir, const char *name,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* BENCH_OUTDIR_H */
