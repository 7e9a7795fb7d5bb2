/*
 * outdir.c - the --out directory and its result files (outdir.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/outdir.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/msg.h"

enum ts_err
outdir_mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	size_t i, n = strlen(path);

	if (n == 0 || n >= sizeof(buf)) {
		msg_err("bad output directory name '%s'", path);
		return TS_EINVAL;
	}
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0777) == -1 && errno != EEXIST) {
			msg_err("cannot create directory %s: %s", buf,
			    strerror(errno));
			return TS_ESYS;
		}
		buf[i] = path[i];
	}
	if (stat(path, &st) == -1 || !S_ISDIR(st.st_mode)) {
		msg_err("%s is not a directory", path);
		return TS_ESYS;
	}
	return TS_OK;
}

enum ts_err
outdir_path(char *out, size_t outsz, const char *dir, const char *name)
{
	int n = snprintf(out, outsz, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= outsz) {
		msg_err("path too long: %s/%s", dir, name);
		return TS_ELIMIT;
	}
	return TS_OK;
}

enum ts_err
outdir_write(const char *dir, const char *name, const char *data,
    size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX], tmpname[NAME_MAX + 1];
	FILE *f = NULL;
	enum ts_err rc = TS_ESYS;
	int saved;

	snprintf(tmpname, sizeof(tmpname), ".%s.tmp", name);
	if (outdir_path(path, sizeof(path), dir, name) != TS_OK ||
	    outdir_path(tmp, sizeof(tmp), dir, tmpname) != TS_OK)
		return TS_ELIMIT;
	if ((f = fopen(tmp, "w")) == NULL)
		goto out;
	if (len > 0 && fwrite(data, 1, len, f) != len)
		goto out;
	if (fclose(f) != 0) {
		f = NULL;
		goto out;
	}
	f = NULL;
	if (rename(tmp, path) == -1)
		goto out;
	rc = TS_OK;
out:
	if (rc != TS_OK) {
		saved = errno;
		if (f != NULL)
			fclose(f);
		unlink(tmp);
		msg_err("cannot write %s: %s", path, strerror(saved));
	}
	return rc;
}

enum ts_err
outdir_write_fmt(const char *dir, const char *name, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return TS_ELIMIT;
	return outdir_write(dir, name, buf, (size_t)n);
}
