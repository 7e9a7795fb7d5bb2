/*
 * cmd_gen.c - `tokbench gen`: runs tokgen twice with the same arguments
 * and compares the outputs byte by byte (determinism). Also the first
 * step of `tokbench lab` (cmd.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/cmd.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/msg.h"
#include "bench/outdir.h"

extern char **environ;

/* True when `path` names an executable regular file. */
static int
cmd_gen_is_exec(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    access(path, X_OK) == 0;
}

/*
 * Chooses the tokgen program: --tokgen PATH, else $TOKGEN, else tokgen
 * next to this executable (/proc/self/exe), else ../tokgen from it (the
 * build tree keeps tokbench in src/bench/ and tokgen in src/), else plain
 * "tokgen", which posix_spawnp() looks up on PATH. Writes it to out.
 */
static void
cmd_gen_find_tokgen(const struct opts *o, char *out, size_t outsz)
{
	char self[PATH_MAX], cand[PATH_MAX];
	const char *env = getenv("TOKGEN");
	char *slash;
	ssize_t n;

	if (o->tokgen != NULL) {
		snprintf(out, outsz, "%s", o->tokgen);
		return;
	}
	if (env != NULL && env[0] != '\0') {
		snprintf(out, outsz, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0 && (size_t)n < sizeof(self) - 1) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			if (snprintf(cand, sizeof(cand), "%s/tokgen", self) <
			    (int)sizeof(cand) && cmd_gen_is_exec(cand)) {
				snprintf(out, outsz, "%s", cand);
				return;
			}
			if (snprintf(cand, sizeof(cand), "%s/../tokgen",
			    self) < (int)sizeof(cand) &&
			    cmd_gen_is_exec(cand)) {
				snprintf(out, outsz, "%s", cand);
				return;
			}
		}
	}
	snprintf(out, outsz, "tokgen");
}

/*
 * Runs `tokgen --prompt P -n N` with stdout sent to `out_path` (created
 * or truncated) and stdin from /dev/null; stderr is inherited so tokgen's
 * own message reaches the user. Returns TS_OK when it exits 0, else
 * prints one line and returns TS_ESYS.
 */
static enum ts_err
cmd_gen_tokgen(const char *tokgen, const struct opts *o,
    const char *out_path)
{
	posix_spawn_file_actions_t fa;
	char nbuf[32], *argv[6] = {NULL};
	enum ts_err rc = TS_ESYS;
	int fd = -1, fa_ok = 0, err, wst, i;
	pid_t pid;

	snprintf(nbuf, sizeof(nbuf), "%ld", o->sim_tokens);
	argv[0] = xstrndup(tokgen, strlen(tokgen));
	argv[1] = xstrndup("--prompt", 8);
	argv[2] = xstrndup(o->prompt, strlen(o->prompt));
	argv[3] = xstrndup("-n", 2);
	argv[4] = xstrndup(nbuf, strlen(nbuf));

	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd == -1) {
		msg_err("cannot create %s: %s", out_path, strerror(errno));
		goto out;
	}
	if ((err = posix_spawn_file_actions_init(&fa)) != 0)
		goto spawn_failed;
	fa_ok = 1;
	if ((err = posix_spawn_file_actions_adddup2(&fa, fd, 1)) != 0 ||
	    (err = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
	    O_RDONLY, 0)) != 0)
		goto spawn_failed;
	if ((err = posix_spawnp(&pid, tokgen, &fa, NULL, argv, environ)) != 0)
		goto spawn_failed;
	while (waitpid(pid, &wst, 0) == -1) {
		if (errno != EINTR) {
			msg_err("waitpid for %s: %s", tokgen,
			    strerror(errno));
			goto out;
		}
	}
	if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0)
		rc = TS_OK;
	else if (WIFEXITED(wst))
		msg_err("%s exited with status %d (output in %s)", tokgen,
		    WEXITSTATUS(wst), out_path);
	else
		msg_err("%s was killed by signal %d", tokgen, WTERMSIG(wst));
	goto out;
spawn_failed:
	msg_err("cannot run %s: %s; build it with make, or pass --tokgen "
	    "PATH or set TOKGEN", tokgen, strerror(err));
out:
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (fd != -1)
		close(fd);
	for (i = 0; i < 5; i++)
		free(argv[i]);
	return rc;
}

/*
 * Compares two files byte by byte. Sets *first_diff to the offset of the
 * first difference (-1 if equal) and *bytes to the length of the first.
 * Returns TS_OK or TS_ESYS after printing one line.
 */
static enum ts_err
cmd_gen_compare(const char *a, const char *b, long long *first_diff,
    long long *bytes)
{
	FILE *fa = NULL, *fb = NULL;
	char ba[8192], bb[8192];
	size_t na, nb, i;
	long long off = 0;
	enum ts_err rc = TS_ESYS;

	*first_diff = -1;
	if ((fa = fopen(a, "rb")) == NULL || (fb = fopen(b, "rb")) == NULL) {
		msg_err("cannot read %s: %s", fa ? b : a, strerror(errno));
		goto out;
	}
	for (;;) {
		na = fread(ba, 1, sizeof(ba), fa);
		nb = fread(bb, 1, sizeof(bb), fb);
		for (i = 0; i < na && i < nb; i++)
			if (ba[i] != bb[i])
				break;
		if (*first_diff == -1 && (i < na || i < nb))
			*first_diff = off + (long long)i;
		off += (long long)na;
		if (na == 0 && nb == 0)
			break;
	}
	if (ferror(fa) || ferror(fb)) {
		msg_err("read error comparing %s and %s", a, b);
		goto out;
	}
	*bytes = off;
	rc = TS_OK;
out:
	if (fa != NULL)
		fclose(fa);
	if (fb != NULL)
		fclose(fb);
	return rc;
}

enum ts_err
cmd_gen_run(const struct opts *o, struct cmd_gen_result *g)
{
	char p1[PATH_MAX], p2[PATH_MAX];
	enum ts_err rc;

	memset(g, 0, sizeof(*g));
	cmd_gen_find_tokgen(o, g->tokgen, sizeof(g->tokgen));
	if ((rc = outdir_path(p1, sizeof(p1), o->out_dir, "gen1.txt")) !=
	    TS_OK ||
	    (rc = outdir_path(p2, sizeof(p2), o->out_dir, "gen2.txt")) !=
	    TS_OK)
		return rc;
	if ((rc = cmd_gen_tokgen(g->tokgen, o, p1)) != TS_OK ||
	    (rc = cmd_gen_tokgen(g->tokgen, o, p2)) != TS_OK)
		return rc;
	if ((rc = cmd_gen_compare(p1, p2, &g->first_diff, &g->bytes)) !=
	    TS_OK)
		return rc;
	if (g->bytes == 0 && g->first_diff == -1) {
		msg_err("%s printed nothing for --prompt '%s' -n %ld",
		    g->tokgen, o->prompt, o->sim_tokens);
		return TS_EFORMAT;
	}
	g->identical = g->first_diff == -1;
	if (g->identical)
		printf("gen: tokgen=%s bytes=%lld identical=yes\n", g->tokgen,
		    g->bytes);
	else
		printf("gen: tokgen=%s bytes=%lld identical=no "
		    "first_difference=%lld\n", g->tokgen, g->bytes,
		    g->first_diff);
	return TS_OK;
}

int
cmd_gen_identical(const struct cmd_gen_result *g)
{
	if (!g->identical)
		msg_err("tokgen is not deterministic: gen1.txt and gen2.txt "
		    "differ at byte %lld", g->first_diff);
	return g->identical;
}

/* gen: exit 1 also when the two outputs differ. */
static int
cmd_gen_main(struct opts *o)
{
	struct cmd_gen_result g;

	if (cmd_gen_run(o, &g) != TS_OK || !cmd_gen_identical(&g))
		return 1;
	return 0;
}

static const struct option cmd_gen_longopts[] = {
	OPTS_LONG_OUT, OPTS_LONG_PROMPT, OPTS_LONG_TOKGEN, OPTS_LONG_HELP,
	OPTS_LONG_END
};

const struct opts_cmd cmd_gen = {
	"gen", ":ho:p:n:", cmd_gen_longopts,
	"usage: tokbench gen --out DIR [--prompt TEXT] [-n N] "
	"[--tokgen PATH]\n"
	"Runs `tokgen --prompt TEXT -n N` twice into DIR/gen1.txt and\n"
	"DIR/gen2.txt and reports whether they are identical; exit 1 if "
	"not.\n"
	OPTS_USAGE_OUT
	"  -p, --prompt TEXT     prompt (default \"hello\")\n"
	"  -n N                  tokens to generate (default 20)\n"
	"      --tokgen PATH     tokgen program; else $TOKGEN, else "
	"tokgen next to\n"
	"                        tokbench (or in ..), else tokgen on "
	"PATH\n"
	"Output: gen: tokgen=PATH bytes=N identical=yes|no "
	"[first_difference=N]\n",
	cmd_gen_main, 1, OPTS_LAB_TOKENS, NULL
};
