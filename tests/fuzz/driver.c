/*
 * driver.c - a standalone main() for the fuzz targets, so that gcc (which
 * has no libFuzzer) builds them too and `make check` runs every target
 * over its seed corpus (after jansson's test/ossfuzz/standaloneengine.c).
 *
 *   fuzz_query tests/fuzz/corpus/query [more files or directories]
 *
 * Each argument that is a directory runs every regular file in it (in
 * name order); any other argument runs that file. Each input is read into
 * an allocation of exactly its size, so that a sanitizer build catches a
 * read past its end. Prints "fuzz-driver: N inputs ok" and exits 0 when
 * every input ran; a violated property aborts (the name of the input being
 * run is printed first); an unreadable argument exits 2.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* The input being run, for the crash handler. */
static const char *current_path;

/*
 * On a crash, names the input before dying of the same signal (only
 * async-signal-safe calls: write, signal, raise).
 */
static void
on_crash(int sig)
{
	static const char msg[] = "fuzz-driver: crashed on input ";

	if (current_path != NULL) {
		ssize_t w;

		w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		w = write(STDERR_FILENO, current_path, strlen(current_path));
		w = write(STDERR_FILENO, "\n", 1);
		(void)w;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Reads the file `path` and runs it. Returns 0, or -1 if unreadable. */
static int
run_file(const char *path)
{
	FILE *f;
	struct stat sb;
	uint8_t *buf;
	size_t got;
	int saved;

	f = fopen(path, "rb");
	if (f == NULL || fstat(fileno(f), &sb) != 0) {
		saved = errno;
		fprintf(stderr, "fuzz-driver: %s: %s\n", path,
		    strerror(saved));
		if (f != NULL)
			fclose(f);
		return -1;
	}
	/* Exactly the input's size; malloc(0) may be NULL, so one byte
	 * then, which the target is told is not there. */
	buf = malloc(sb.st_size > 0 ? (size_t)sb.st_size : 1);
	if (buf == NULL) {
		fprintf(stderr, "fuzz-driver: %s: out of memory\n", path);
		fclose(f);
		return -1;
	}
	got = fread(buf, 1, (size_t)sb.st_size, f);
	if (got != (size_t)sb.st_size || ferror(f)) {
		fprintf(stderr, "fuzz-driver: %s: short read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	current_path = path;
	LLVMFuzzerTestOneInput(buf, got);
	current_path = NULL;
	free(buf);
	return 0;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Runs every regular file of directory `dir` in name order; adds the
 * number run to *n. Returns 0, or -1 on an unreadable entry.
 */
static int
run_dir(const char *dir, size_t *n)
{
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t count = 0, cap = 0, i;
	int rc = 0;

	d = opendir(dir);
	if (d == NULL) {
		fprintf(stderr, "fuzz-driver: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;       /* ".", "..", editor droppings */
		if (count == cap) {
			char **grown;

			cap = cap ? cap * 2 : 64;
			grown = realloc(names, cap * sizeof(*names));
			if (grown == NULL) {
				rc = -1;
				goto out;
			}
			names = grown;
		}
		names[count] = malloc(strlen(dir) + strlen(e->d_name) + 2);
		if (names[count] == NULL) {
			rc = -1;
			goto out;
		}
		sprintf(names[count], "%s/%s", dir, e->d_name);
		count++;
	}
	if (count > 0)
		qsort(names, count, sizeof(*names), cmp_names);
	for (i = 0; i < count && rc == 0; i++) {
		struct stat sb;

		if (stat(names[i], &sb) != 0 || !S_ISREG(sb.st_mode))
			continue;
		if (run_file(names[i]) != 0)
			rc = -1;
		else
			(*n)++;
	}
out:
	closedir(d);
	for (i = 0; i < count; i++)
		free(names[i]);
	free(names);
	return rc;
}

int
main(int argc, char **argv)
{
	size_t n = 0;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	signal(SIGABRT, on_crash);
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGFPE, on_crash);
	for (i = 1; i < argc; i++) {
		struct stat sb;
		int rc;

		if (stat(argv[i], &sb) != 0) {
			fprintf(stderr, "fuzz-driver: %s: %s\n", argv[i],
			    strerror(errno));
			return 2;
		}
		if (S_ISDIR(sb.st_mode)) {
			rc = run_dir(argv[i], &n);
		} else {
			rc = run_file(argv[i]);
			if (rc == 0)
				n++;
		}
		if (rc != 0)
			return 2;
	}
	printf("fuzz-driver: %zu inputs ok\n", n);
	return 0;
}
