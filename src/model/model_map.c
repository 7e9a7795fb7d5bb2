/*
 * model/model_map.c - mapping a model file (model_map.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "model/model_map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum ts_err
model_map_file(const char *path, void **map, size_t *len, char *err,
    size_t errlen)
{
	struct stat sb;
	enum ts_err rc = TS_OK;
	void *m;
	int fd, saved;

	*map = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		snprintf(err, errlen, "%s: cannot open: %s", path,
		    strerror(saved));
		errno = saved;
		return TS_ESYS;
	}
	if (fstat(fd, &sb) != 0) {
		saved = errno;
		snprintf(err, errlen, "%s: cannot stat: %s", path,
		    strerror(saved));
		rc = TS_ESYS;
	} else if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		rc = TS_EFORMAT;
	} else if ((uint64_t)sb.st_size > SIZE_MAX) {
		snprintf(err, errlen, "%s: file too large to map", path);
		rc = TS_ELIMIT;
	} else if (sb.st_size > 0) {
		m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd,
		    0);
		if (m == MAP_FAILED) {
			saved = errno;
			snprintf(err, errlen, "%s: cannot map %lld bytes: %s",
			    path, (long long)sb.st_size, strerror(saved));
			rc = TS_ESYS;
		} else {
			/* read it in now rather than on the first
			 * request's page faults (advice only) */
			(void)posix_madvise(m, (size_t)sb.st_size,
			    POSIX_MADV_WILLNEED);
			*map = m;
			*len = (size_t)sb.st_size;
		}
	}
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

void
model_unmap_file(void *map, size_t len)
{
	if (map != NULL)
		munmap(map, len);
}
