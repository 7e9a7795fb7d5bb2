/*
 * stores/shmfile.h - the open and map steps that the state file (state.c) and
 * the metrics file (metrics.c) share: DIR/NAME opened or created, then
 * reserved and mapped MAP_SHARED. What lies between stays with each file,
 * because it differs on purpose: the state file is sized and initialised
 * under an exclusive flock(2) that it drops at once; every metrics handle
 * keeps a shared flock for its lifetime, and only an opener that is alone
 * may re-initialise the file (see metrics_open()). Errors are one line in
 * the caller's errbuf, as state_open() and metrics_open() report them.
 */
#ifndef TS_STORES_SHMFILE_H
#define TS_STORES_SHMFILE_H

#include <stddef.h>

#include "common/ts.h"

/*
 * Opens DIR/NAME read-write (close-on-exec), creating DIR (mode 0755; its
 * parent must exist) and the file (mode 0644) when missing. path (pathsz
 * bytes) gets "DIR/NAME", for the caller's later messages. Returns TS_OK
 * with *fd set (the caller closes it); TS_EINVAL when DIR/NAME does not
 * fit pathsz ("NAME directory path too long"); TS_ESYS when mkdir(2) or
 * open(2) fails. On failure errbuf (errlen bytes) says why and nothing
 * is left open.
 */
enum ts_err shmfile_open(const char *dir, const char *name, char *path,
    size_t pathsz, int *fd, char *errbuf, size_t errlen);

/*
 * Reserves the first len bytes of the open file fd with
 * posix_fallocate(3), so that a store into a mapped page that a full file
 * system cannot back is an error here and not a SIGBUS later, then maps
 * them read-write, MAP_SHARED. The file must already be len bytes long.
 * Returns TS_OK with *map set (munmap(2) it with len), or TS_ESYS with
 * errbuf saying why (path names the file) and *map untouched. fd stays
 * open, and its lock held, either way.
 */
enum ts_err shmfile_map(int fd, const char *path, size_t len, void **map,
    char *errbuf, size_t errlen);

#endif /* TS_STORES_SHMFILE_H */
