/*
 * stores/shmfile.c - opening and mapping the files under the state directory
 * that processes share. See shmfile.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "stores/shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

enum ts_err
shmfile_open(const char *dir, const char *name, char *path, size_t pathsz,
    int *fd, char *errbuf, size_t errlen)
{
	int n, saved;

	n = snprintf(path, pathsz, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= pathsz) {
		snprintf(errbuf, errlen, "%s directory path too long", name);
		return TS_EINVAL;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot create %s: %s", dir,
		    strerror(saved));
		return TS_ESYS;
	}
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (*fd < 0) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot open %s: %s", path,
		    strerror(saved));
		return TS_ESYS;
	}
	return TS_OK;
}

enum ts_err
shmfile_map(int fd, const char *path, size_t len, void **map, char *errbuf,
    size_t errlen)
{
	void *m;
	int saved;

	/* posix_fallocate returns the error; it does not set errno */
	if ((saved = posix_fallocate(fd, 0, (off_t)len)) != 0) {
		snprintf(errbuf, errlen, "cannot reserve %zu bytes for %s: %s",
		    len, path, strerror(saved));
		return TS_ESYS;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		saved = errno;
		snprintf(errbuf, errlen, "cannot map %s: %s", path,
		    strerror(saved));
		return TS_ESYS;
	}
	*map = m;
	return TS_OK;
}
