/*
 * tokbench.c - tokstream's measurement client: TTFT, ITL and E2E latency,
 * cancellation and determinism, seen from the client's side of the wire.
 *
 * tokbench talks HTTP/1.1 to the server with libcurl, parses each /stream
 * response with the incremental SSE parser (sse_parse.h) as the bytes
 * arrive, and time-stamps every SSE event with CLOCK_MONOTONIC when libcurl
 * hands its bytes over. The definitions it measures by:
 *   TTFT   from just before curl_easy_perform() to the arrival of the first
 *          token event (headers, comments and [DONE] do not count);
 *   ITL    the gaps between consecutive token events (n tokens: n-1);
 *   E2E    from the same start to the end of the response;
 *   throughput = tokens / E2E seconds.
 * Percentiles are nearest-rank (stats.h).
 *
 * Every subcommand is one step of the lab; `lab` runs them all. Exit
 * status: 0 success, 1 a step failed (one line on stderr says why), 2 a
 * bad command line.
 */
#define _POSIX_C_SOURCE 200809L

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/buf.h"
#include "common/ts.h"
#include "bench/client.h"
#include "bench/load.h"
#include "bench/sse_parse.h"
#include "bench/stats.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

extern char **environ;

#define TOKBENCH_DEFAULT_URL "http://127.0.0.1:8170"
#define TOKBENCH_DEFAULT_PROMPT "hello"
#define TOKBENCH_LAB_TOKENS 20          /* max_tokens of ttft/itl/lab */
#define TOKBENCH_CANCEL_TOKENS 100      /* max_tokens of the cancel step */
#define TOKBENCH_CANCEL_READ 5          /* token events read before closing */
#define TOKBENCH_POLL_EVERY_MS 20       /* /_debug/generated poll period */
#define TOKBENCH_POLL_TIMEOUT_MS 10000  /* give up waiting for "running" */
#define TOKBENCH_POLL_REQ_TIMEOUT_MS 2000
#define TOKBENCH_DEFAULT_TIMEOUT_S 60   /* whole /stream request */
#define TOKBENCH_MAX_TOKENS 1000000L    /* sanity cap on --max-tokens, -n */
#define TOKBENCH_BODY_MAX (64 * 1024)   /* kept of an error or JSON body */
#define TOKBENCH_ID_MAX 256             /* longest X-Request-Id accepted */
#define TOKBENCH_MSG_MAX 300            /* server text quoted in a message */
#define TOKBENCH_START_HINT \
	"start it with scripts/tokstream-ctl start (or scripts/run-lab)"

/* Command-line settings shared by all subcommands. */
struct tokbench_opts {
	char *url;              /* base URL, trailing '/' removed; owned */
	const char *prompt;     /* borrowed from argv */
	const char *out_dir;    /* borrowed from argv; NULL if not given */
	const char *tokgen;     /* --tokgen, borrowed; NULL if not given */
	long max_tokens;
	long sim_tokens;        /* tokgen -n */
	long read_tokens;       /* cancel: token events read before close */
	long timeout_s;
	int events;             /* stream --events */
	int json;               /* stream --json */
	int id_only;            /* cancel --id-only */
	int rst;                /* cancel --rst: close with a TCP reset */
	long tpot_ms;           /* --tpot-ms, sent as tpot_ms; -1 = not */
	long prefill_ms;        /* --prefill-ms, sent as prefill_ms; -1 */
};

/* A capped copy of an answer's body: what fits under buf.max, and
 * whether bytes were dropped (a cut body is not parsed as JSON). */
struct tokbench_body {
	struct ts_buf buf;
	int truncated;
};

/* What kind of SSE event or line an --events log entry is. */
enum tokbench_kind {
	TOKBENCH_TOKEN,
	TOKBENCH_DONE,
	TOKBENCH_ERROR,
	TOKBENCH_COMMENT,
	TOKBENCH_OTHER
};

/* One entry of the --events log: copied, printed after the transfer so
 * that printing cannot delay the arrival of later events. */
struct tokbench_logent {
	double ms;
	enum tokbench_kind kind;
	char *text;             /* data (or comment text), owned */
	size_t len;
};

/* One /stream request and everything measured on it. */
struct tokbench_stream {
	/* inputs */
	const struct tokbench_opts *o;
	long max_tokens;
	size_t stop_after;      /* abort after this many tokens; 0 = never */
	int keep_log;
	/* transfer */
	CURL *curl;
	struct sse_parser parser;
	struct timespec t0;     /* just before curl_easy_perform() */
	double chunk_ms;        /* arrival of the bytes being parsed */
	int status_known;
	long status;
	char errbuf[CURL_ERROR_SIZE];
	struct tokbench_body body;      /* body of a non-200 answer */
	/* results */
	char request_id[TOKBENCH_ID_MAX + 1];
	size_t request_id_len;
	int request_id_bad;     /* too long or has control bytes */
	double *arrival_ms;     /* arrival of token i, ms since t0 */
	size_t ntokens, arrival_cap;
	size_t ncomments;
	double done_ms;         /* arrival of [DONE]; -1 if none */
	double e2e_ms;
	int done;
	int stopped;            /* we aborted after stop_after tokens */
	char *error_text;       /* an error event, sanitised; owned */
	char fail[512];         /* protocol failure; stops the transfer */
	struct tokbench_logent *log;
	size_t nlog, log_cap;
};

/* Result of the cancel step. */
struct tokbench_cancel {
	char request_id[TOKBENCH_ID_MAX + 1];
	long max_tokens, read;
	long requested, generated;
	char status[32];
	double poll_ms;         /* from the close to a settled status */
	int polls;
};

/* Result of the gen step. */
struct tokbench_gen {
	char tokgen[PATH_MAX];
	int identical;
	long long bytes;
	long long first_diff;   /* -1 when identical */
};

static void tokbench_err(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Prints one "tokbench: ..." line on stderr. */
static void
tokbench_err(const char *fmt, ...)
{
	va_list ap;

	fputs("tokbench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Sleeps `ms` milliseconds, resuming after signals. */
static void
tokbench_sleep_ms(long ms)
{
	struct timespec ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Appends what fits of (src, n); remembers that bytes were lost. */
static void
tokbench_body_put(struct tokbench_body *b, const char *src, size_t n)
{
	if (ts_buf_append_part(&b->buf, src, n) != TS_OK)
		b->truncated = 1;
}

/*
 * Copies network text (s, n) for a message on a terminal: control bytes,
 * NUL included, become '?', and at most TOKBENCH_MSG_MAX bytes are kept
 * ("..." marks a cut). Returns a NUL-terminated string the caller frees.
 */
static char *
tokbench_sanitize(const char *s, size_t n)
{
	size_t i, keep = n > TOKBENCH_MSG_MAX ? TOKBENCH_MSG_MAX : n;
	char *out = xmalloc(keep + 4);

	for (i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)s[i];

		out[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	if (keep < n) {
		memcpy(out + keep, "...", 3);
		keep += 3;
	}
	out[keep] = '\0';
	return out;
}

/*
 * Writes (s, n) to f with C-style escapes for control bytes, so that one
 * SSE event (multi-line data included) prints as one line. Backslashes
 * are left alone: tokstream's data is one line of JSON, which then prints
 * as is (e.g. for jq).
 */
static void
tokbench_print_escaped(FILE *f, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n')
			fputs("\\n", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

/*
 * Text of a tokstream error object, {"error":{"message":..,"type":..,
 * "code":..}}, as "message (type TYPE, code CODE)", sanitised. Accepts a
 * bare string as "error" too. Returns NULL when `root` has no "error";
 * else a string the caller frees.
 */
static char *
tokbench_error_text(json_t *root)
{
	json_t *err, *msg, *type, *code;
	char *m = NULL, *t = NULL, *out = NULL, cbuf[64] = "";
	size_t len;

	err = json_is_object(root) ? json_object_get(root, "error") : NULL;
	if (err == NULL)
		return NULL;
	msg = json_is_string(err) ? err : json_object_get(err, "message");
	type = json_object_get(err, "type");
	code = json_object_get(err, "code");
	m = json_is_string(msg) ? tokbench_sanitize(json_string_value(msg),
	    json_string_length(msg)) : xstrndup("(no message)", 12);
	if (json_is_string(type))
		t = tokbench_sanitize(json_string_value(type),
		    json_string_length(type));
	if (json_is_integer(code))
		snprintf(cbuf, sizeof(cbuf), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(code));
	else if (json_is_string(code))
		snprintf(cbuf, sizeof(cbuf), "%.40s", json_string_value(code));
	len = strlen(m) + (t ? strlen(t) : 0) + strlen(cbuf) + 32;
	out = xmalloc(len);
	if (t != NULL && cbuf[0] != '\0')
		snprintf(out, len, "%s (type %s, code %s)", m, t, cbuf);
	else if (t != NULL)
		snprintf(out, len, "%s (type %s)", m, t);
	else if (cbuf[0] != '\0')
		snprintf(out, len, "%s (code %s)", m, cbuf);
	else
		snprintf(out, len, "%s", m);
	/* a string "code" may hold control bytes: sanitise the whole line */
	for (len = 0; out[len] != '\0'; len++)
		if ((unsigned char)out[len] < 0x20)
			out[len] = '?';
	free(m);
	free(t);
	return out;
}

/*
 * Creates `path` and its missing parents (mkdir -p). Returns TS_OK, or
 * TS_ESYS after printing one line (errno saved in the message).
 */
static enum ts_err
tokbench_mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	size_t i, n = strlen(path);

	if (n == 0 || n >= sizeof(buf)) {
		tokbench_err("bad output directory name '%s'", path);
		return TS_EINVAL;
	}
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0777) == -1 && errno != EEXIST) {
			tokbench_err("cannot create directory %s: %s", buf,
			    strerror(errno));
			return TS_ESYS;
		}
		buf[i] = path[i];
	}
	if (stat(path, &st) == -1 || !S_ISDIR(st.st_mode)) {
		tokbench_err("%s is not a directory", path);
		return TS_ESYS;
	}
	return TS_OK;
}

/* Joins dir and name into out; returns TS_ELIMIT if over PATH_MAX. */
static enum ts_err
tokbench_path(char *out, size_t outsz, const char *dir, const char *name)
{
	int n = snprintf(out, outsz, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= outsz) {
		tokbench_err("path too long: %s/%s", dir, name);
		return TS_ELIMIT;
	}
	return TS_OK;
}

/*
 * Writes (data, len) to dir/name through dir/.name.tmp and rename(), so a
 * reader never sees half a result. Returns TS_OK, or TS_ESYS after
 * printing one line.
 */
static enum ts_err
tokbench_write_file(const char *dir, const char *name, const char *data,
    size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX], tmpname[NAME_MAX + 1];
	FILE *f = NULL;
	enum ts_err rc = TS_ESYS;
	int saved;

	snprintf(tmpname, sizeof(tmpname), ".%s.tmp", name);
	if (tokbench_path(path, sizeof(path), dir, name) != TS_OK ||
	    tokbench_path(tmp, sizeof(tmp), dir, tmpname) != TS_OK)
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
		tokbench_err("cannot write %s: %s", path, strerror(saved));
	}
	return rc;
}

/* printf into a file in dir; see tokbench_write_file(). */
static enum ts_err tokbench_write_fmt(const char *dir, const char *name,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static enum ts_err
tokbench_write_fmt(const char *dir, const char *name, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return TS_ELIMIT;
	return tokbench_write_file(dir, name, buf, (size_t)n);
}

/* ------------------------------------------------------------------ */
/* gen: run tokgen twice and compare                                    */
/* ------------------------------------------------------------------ */

/* True when `path` names an executable regular file. */
static int
tokbench_is_exec(const char *path)
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
tokbench_find_tokgen(const struct tokbench_opts *o, char *out, size_t outsz)
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
			    (int)sizeof(cand) && tokbench_is_exec(cand)) {
				snprintf(out, outsz, "%s", cand);
				return;
			}
			if (snprintf(cand, sizeof(cand), "%s/../tokgen",
			    self) < (int)sizeof(cand) &&
			    tokbench_is_exec(cand)) {
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
tokbench_run_tokgen(const char *tokgen, const struct tokbench_opts *o,
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
		tokbench_err("cannot create %s: %s", out_path,
		    strerror(errno));
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
			tokbench_err("waitpid for %s: %s", tokgen,
			    strerror(errno));
			goto out;
		}
	}
	if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0)
		rc = TS_OK;
	else if (WIFEXITED(wst))
		tokbench_err("%s exited with status %d (output in %s)", tokgen,
		    WEXITSTATUS(wst), out_path);
	else
		tokbench_err("%s was killed by signal %d", tokgen,
		    WTERMSIG(wst));
	goto out;
spawn_failed:
	tokbench_err("cannot run %s: %s; build it with make, or pass "
	    "--tokgen PATH or set TOKGEN", tokgen, strerror(err));
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
tokbench_compare(const char *a, const char *b, long long *first_diff,
    long long *bytes)
{
	FILE *fa = NULL, *fb = NULL;
	char ba[8192], bb[8192];
	size_t na, nb, i;
	long long off = 0;
	enum ts_err rc = TS_ESYS;

	*first_diff = -1;
	if ((fa = fopen(a, "rb")) == NULL || (fb = fopen(b, "rb")) == NULL) {
		tokbench_err("cannot read %s: %s", fa ? b : a,
		    strerror(errno));
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
		tokbench_err("read error comparing %s and %s", a, b);
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

/*
 * The gen step: tokgen twice with the same arguments into gen1.txt and
 * gen2.txt, then a byte comparison (tokgen promises determinism).
 * Prints one summary line. Returns TS_OK even when the outputs differ
 * (g->identical says so); TS_ESYS/TS_EFORMAT when tokgen cannot be run
 * or prints nothing.
 */
static enum ts_err
tokbench_gen_run(const struct tokbench_opts *o, struct tokbench_gen *g)
{
	char p1[PATH_MAX], p2[PATH_MAX];
	enum ts_err rc;

	memset(g, 0, sizeof(*g));
	tokbench_find_tokgen(o, g->tokgen, sizeof(g->tokgen));
	if ((rc = tokbench_path(p1, sizeof(p1), o->out_dir, "gen1.txt")) !=
	    TS_OK ||
	    (rc = tokbench_path(p2, sizeof(p2), o->out_dir, "gen2.txt")) !=
	    TS_OK)
		return rc;
	if ((rc = tokbench_run_tokgen(g->tokgen, o, p1)) != TS_OK ||
	    (rc = tokbench_run_tokgen(g->tokgen, o, p2)) != TS_OK)
		return rc;
	if ((rc = tokbench_compare(p1, p2, &g->first_diff, &g->bytes)) !=
	    TS_OK)
		return rc;
	if (g->bytes == 0 && g->first_diff == -1) {
		tokbench_err("%s printed nothing for --prompt '%s' -n %ld",
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

/* ------------------------------------------------------------------ */
/* /stream: one measured request                                        */
/* ------------------------------------------------------------------ */

static void tokbench_fail(struct tokbench_stream *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records the first protocol failure of a stream (later ones are
 * consequences of it and are dropped). */
static void
tokbench_fail(struct tokbench_stream *s, const char *fmt, ...)
{
	va_list ap;

	if (s->fail[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(s->fail, sizeof(s->fail), fmt, ap);
	va_end(ap);
}

/* Adds an --events log entry; copies (text, len). */
static void
tokbench_log(struct tokbench_stream *s, enum tokbench_kind kind,
    const char *text, size_t len)
{
	struct tokbench_logent *e;

	if (!s->keep_log)
		return;
	if (s->nlog == s->log_cap) {
		s->log_cap = s->log_cap ? s->log_cap * 2 : 64;
		s->log = xrealloc(s->log, s->log_cap * sizeof(*s->log));
	}
	e = &s->log[s->nlog++];
	e->ms = s->chunk_ms;
	e->kind = kind;
	e->text = xstrndup(text, len);
	e->len = len;
}

/*
 * SSE event callback. Classifies the event as [DONE], an error event or a
 * token event (JSON with a string "token", parsed with its length) and
 * records the chunk's arrival time for tokens. Returns TS_OK to go on,
 * TS_EHUP when stop_after tokens have arrived (the deliberate close of
 * the cancel step), TS_EINVAL on a protocol violation (s->fail says
 * which); either stops the transfer.
 */
static enum ts_err
tokbench_on_event(void *ud, const struct sse_event *ev)
{
	struct tokbench_stream *s = ud;
	json_error_t jerr;
	json_t *root, *tok;
	char *txt;

	if (ev->type_len != 7 || memcmp(ev->type, "message", 7) != 0) {
		tokbench_log(s, TOKBENCH_OTHER, ev->data, ev->data_len);
		return TS_OK;
	}
	if (ev->data_len == 6 && memcmp(ev->data, "[DONE]", 6) == 0) {
		tokbench_log(s, TOKBENCH_DONE, ev->data, ev->data_len);
		if (s->done) {
			tokbench_fail(s, "a second data: [DONE]");
			return TS_EINVAL;
		}
		s->done = 1;
		s->done_ms = s->chunk_ms;
		return TS_OK;
	}
	if (s->done) {
		tokbench_log(s, TOKBENCH_OTHER, ev->data, ev->data_len);
		tokbench_fail(s, "an event after data: [DONE]");
		return TS_EINVAL;
	}
	root = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &jerr);
	if (root == NULL) {
		tokbench_log(s, TOKBENCH_OTHER, ev->data, ev->data_len);
		txt = tokbench_sanitize(ev->data, ev->data_len);
		tokbench_fail(s, "event %zu is not JSON (%s at column %d): %s",
		    s->ntokens + 1, jerr.text, jerr.column, txt);
		free(txt);
		return TS_EINVAL;
	}
	if ((txt = tokbench_error_text(root)) != NULL) {
		tokbench_log(s, TOKBENCH_ERROR, ev->data, ev->data_len);
		if (s->error_text == NULL)
			s->error_text = txt;
		else
			free(txt);
		json_decref(root);
		return TS_OK;   /* read on to [DONE] and the end */
	}
	tok = json_object_get(root, "token");
	if (!json_is_string(tok)) {
		json_decref(root);
		tokbench_log(s, TOKBENCH_OTHER, ev->data, ev->data_len);
		tokbench_fail(s, "event %zu has no string \"token\"",
		    s->ntokens + 1);
		return TS_EINVAL;
	}
	json_decref(root);
	tokbench_log(s, TOKBENCH_TOKEN, ev->data, ev->data_len);
	if (s->ntokens == s->arrival_cap) {
		s->arrival_cap = s->arrival_cap ? s->arrival_cap * 2 : 128;
		s->arrival_ms = xrealloc(s->arrival_ms,
		    s->arrival_cap * sizeof(*s->arrival_ms));
	}
	s->arrival_ms[s->ntokens++] = s->chunk_ms;
	if (s->stop_after != 0 && s->ntokens == s->stop_after) {
		s->stopped = 1;
		return TS_EHUP;
	}
	return TS_OK;
}

/* SSE comment callback: counted, and logged for --events. */
static void
tokbench_on_comment(void *ud, const char *text, size_t len)
{
	struct tokbench_stream *s = ud;

	s->ncomments++;
	tokbench_log(s, TOKBENCH_COMMENT, text, len);
}

/*
 * libcurl header callback: keeps X-Request-Id (the stream id the debug
 * endpoint knows). A status line starts a new response (1xx, redirects),
 * so it forgets what an earlier one said. An unusable id (see
 * client_header_line()) is forgotten too, and request_id_bad says so.
 * Returns n (keep going).
 */
static size_t
tokbench_on_header(char *ptr, size_t size, size_t nitems, void *ud)
{
	struct tokbench_stream *s = ud;
	size_t n = size * nitems, len = 0;
	const char *val = NULL;

	switch (client_header_line(ptr, n, TOKBENCH_ID_MAX, &val, &len)) {
	case CLIENT_HEADER_STATUS:
		s->request_id_len = 0;
		s->request_id_bad = 0;
		break;
	case CLIENT_HEADER_ID:
		memcpy(s->request_id, val, len);
		s->request_id[len] = '\0';
		s->request_id_len = len;
		s->request_id_bad = 0;
		break;
	case CLIENT_HEADER_ID_BAD:
		s->request_id_len = 0;
		s->request_id_bad = 1;
		break;
	case CLIENT_HEADER_OTHER:
		break;
	}
	return n;
}

/*
 * libcurl write callback: time-stamps the chunk, then feeds a 200 answer
 * to the SSE parser, or keeps (a capped copy of) any other answer's body
 * for its error message. Returns n to go on or 0 to abort the transfer:
 * at once after the last token the cancel step wanted, or on a protocol
 * failure.
 */
static size_t
tokbench_on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct tokbench_stream *s = ud;
	size_t n = size * nmemb;
	char why[CLIENT_WHY_MAX];
	enum ts_err rc;

	s->chunk_ms = client_ms_since(&s->t0);
	if (client_check_start(s->curl, &s->status_known, &s->status, why,
	    sizeof(why)) != TS_OK) {
		tokbench_fail(s, "%s", why);
		return 0;
	}
	if (s->status != 200) {
		tokbench_body_put(&s->body, ptr, n);
		return n;
	}
	rc = sse_parser_feed(&s->parser, ptr, n);
	if (rc == TS_OK)
		return n;
	if (rc == TS_ELIMIT)
		tokbench_fail(s, "an SSE line or event is over %zu bytes",
		    s->parser.max_bytes);
	return 0;
}

/* Base URL + path, in a string the caller frees. */
static char *
tokbench_url(const struct tokbench_opts *o, const char *path)
{
	size_t n = strlen(o->url) + strlen(path) + 1;
	char *u = xmalloc(n);

	snprintf(u, n, "%s%s", o->url, path);
	return u;
}

/*
 * One line for an answer that is not 200: the status and the server's
 * error message from its JSON body, or a note that there was none.
 */
static void
tokbench_http_error(const char *url, long status,
    const struct tokbench_body *body)
{
	json_error_t jerr;
	json_t *root = NULL;
	char *txt = NULL;

	if (body->buf.len > 0 && !body->truncated)
		root = json_loadb(body->buf.p, body->buf.len, JSON_ALLOW_NUL,
		    &jerr);
	if (root != NULL)
		txt = tokbench_error_text(root);
	if (txt != NULL)
		tokbench_err("%s: HTTP %ld: %s", url, status, txt);
	else if (status == 502 || status == 503 || status == 504)
		tokbench_err("%s: HTTP %ld without a JSON error body: the "
		    "FastCGI responder may be down; " TOKBENCH_START_HINT,
		    url, status);
	else
		tokbench_err("%s: HTTP %ld without a JSON error body", url,
		    status);
	free(txt);
	json_decref(root);
}

/* Prepares *s for one /stream request; free it with tokbench_stream_free. */
static void
tokbench_stream_init(struct tokbench_stream *s, const struct tokbench_opts *o,
    long max_tokens, size_t stop_after, int keep_log)
{
	memset(s, 0, sizeof(*s));
	s->o = o;
	s->max_tokens = max_tokens;
	s->stop_after = stop_after;
	s->keep_log = keep_log;
	s->done_ms = -1.0;
	ts_buf_init(&s->body.buf, TOKBENCH_BODY_MAX);
	sse_parser_init(&s->parser, tokbench_on_event, tokbench_on_comment, s);
}

/* Frees what a stream owns; accepts a zeroed stream. */
static void
tokbench_stream_free(struct tokbench_stream *s)
{
	size_t i;

	sse_parser_free(&s->parser);
	if (s->curl != NULL)
		curl_easy_cleanup(s->curl);
	ts_buf_free(&s->body.buf);
	free(s->arrival_ms);
	free(s->error_text);
	for (i = 0; i < s->nlog; i++)
		free(s->log[i].text);
	free(s->log);
	memset(s, 0, sizeof(*s));
}

/*
 * Runs GET /stream?prompt=P&max_tokens=N and measures it (see the top of
 * this file). The handle is cleaned up as soon as curl_easy_perform()
 * returns, so an aborted stream's socket is closed at once. Returns TS_OK
 * when the stream ended with [DONE] (or was stopped on purpose after
 * stop_after tokens); otherwise prints one line and returns TS_ESYS
 * (unreachable, transport error), TS_EINVAL (HTTP error, error event,
 * protocol violation) or TS_EFORMAT (truncated).
 */
static enum ts_err
tokbench_stream_run(struct tokbench_stream *s)
{
	const struct tokbench_opts *o = s->o;
	char *esc = NULL, *full = NULL, *url = NULL;
	struct curl_slist *hdrs = NULL;
	curl_off_t connect_us = 0;
	enum ts_err rc = TS_ESYS;
	CURLcode cc;
	size_t n;

	url = tokbench_url(o, "/stream");
	if ((s->curl = curl_easy_init()) == NULL) {
		tokbench_err("curl_easy_init failed");
		goto out;
	}
	esc = curl_easy_escape(s->curl, o->prompt, (int)strlen(o->prompt));
	if (esc == NULL) {
		tokbench_err("cannot percent-encode the prompt");
		goto out;
	}
	n = strlen(url) + strlen(esc) + 128;
	full = xmalloc(n);
	snprintf(full, n, "%s?prompt=%s&max_tokens=%ld", url, esc,
	    s->max_tokens);
	/* Per-request overrides of the server's latency model. */
	if (o->tpot_ms >= 0)
		snprintf(full + strlen(full), n - strlen(full),
		    "&tpot_ms=%ld", o->tpot_ms);
	if (o->prefill_ms >= 0)
		snprintf(full + strlen(full), n - strlen(full),
		    "&prefill_ms=%ld", o->prefill_ms);
	hdrs = curl_slist_append(NULL, "Accept: text/event-stream");

	client_curl_common(s->curl, s->errbuf, o->timeout_s * 1000L);
	curl_easy_setopt(s->curl, CURLOPT_URL, full);
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, tokbench_on_body);
	curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(s->curl, CURLOPT_HEADERFUNCTION, tokbench_on_header);
	curl_easy_setopt(s->curl, CURLOPT_HEADERDATA, s);
	if (o->rst)
		curl_easy_setopt(s->curl, CURLOPT_SOCKOPTFUNCTION,
		    client_sockopt_rst);

	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	cc = curl_easy_perform(s->curl);
	s->e2e_ms = client_ms_since(&s->t0);
	if (!s->status_known)
		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
	curl_easy_getinfo(s->curl, CURLINFO_CONNECT_TIME_T, &connect_us);
	curl_easy_cleanup(s->curl);
	s->curl = NULL;

	if (s->stopped && cc == CURLE_WRITE_ERROR) {
		rc = TS_OK;
	} else if (s->fail[0] != '\0') {
		tokbench_err("%s: %s", url, s->fail);
		rc = TS_EINVAL;
	} else if (s->status == 0 && client_unreachable(cc, connect_us)) {
		tokbench_err("cannot reach %s: %s; " TOKBENCH_START_HINT, url,
		    curl_easy_strerror(cc));
		rc = TS_ESYS;
	} else if (s->status == 0) {
		tokbench_err("%s: %s", url,
		    s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc));
		rc = TS_ESYS;
	} else if (s->status != 200) {
		tokbench_http_error(url, s->status, &s->body);
		rc = TS_EINVAL;
	} else if (s->error_text != NULL) {
		tokbench_err("%s: error event after %zu tokens: %s", url,
		    s->ntokens, s->error_text);
		rc = TS_EINVAL;
	} else if (!s->done) {
		tokbench_err("%s: stream truncated after %zu tokens (no data: "
		    "[DONE])%s%s", url, s->ntokens, cc != CURLE_OK ? ": " : "",
		    cc == CURLE_OK ? "" :
		    s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc));
		rc = TS_EFORMAT;
	} else if (cc != CURLE_OK) {
		tokbench_err("%s: transfer failed after data: [DONE]: %s", url,
		    s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc));
		rc = TS_EFORMAT;
	} else {
		rc = TS_OK;
	}
out:
	if (rc == TS_ESYS && s->curl != NULL) {
		curl_easy_cleanup(s->curl);
		s->curl = NULL;
	}
	curl_free(esc);
	curl_slist_free_all(hdrs);
	free(full);
	free(url);
	return rc;
}

/*
 * ITL samples of a finished stream: gaps between consecutive token
 * arrivals. Returns an array of s->ntokens - 1 values the caller frees
 * (NULL when there are fewer than two tokens); *n gets the count.
 */
static double *
tokbench_itl(const struct tokbench_stream *s, size_t *n)
{
	double *v;
	size_t i;

	*n = s->ntokens > 1 ? s->ntokens - 1 : 0;
	if (*n == 0)
		return NULL;
	v = xmalloc(*n * sizeof(*v));
	for (i = 0; i < *n; i++)
		v[i] = s->arrival_ms[i + 1] - s->arrival_ms[i];
	return v;
}

/* Tokens per second over the whole request (E2E), 0 if undefined. */
static double
tokbench_throughput(const struct tokbench_stream *s)
{
	return s->e2e_ms > 0 ? (double)s->ntokens / (s->e2e_ms / 1e3) : 0.0;
}

/* Prints the --events log: arrival ms, kind, data, tab-separated. */
static void
tokbench_print_log(const struct tokbench_stream *s)
{
	static const char *const kinds[] = {"token", "done", "error",
	    "comment", "other"};
	size_t i;

	for (i = 0; i < s->nlog; i++) {
		printf("%.3f\t%s\t", s->log[i].ms, kinds[s->log[i].kind]);
		tokbench_print_escaped(stdout, s->log[i].text, s->log[i].len);
		putchar('\n');
	}
}

/*
 * Runs the max_tokens stream of ttft/itl/lab and checks there is a TTFT
 * (at least one token) and, when need_itl, an ITL (at least two). Returns
 * TS_OK or the failure (one line printed).
 */
static enum ts_err
tokbench_measure(const struct tokbench_opts *o, struct tokbench_stream *s,
    int need_itl)
{
	enum ts_err rc;

	tokbench_stream_init(s, o, o->max_tokens, 0, 0);
	if ((rc = tokbench_stream_run(s)) != TS_OK)
		return rc;
	if (s->ntokens < (need_itl ? 2u : 1u)) {
		tokbench_err("%s/stream: only %zu token events for "
		    "max_tokens=%ld: need %d to measure %s", o->url,
		    s->ntokens, o->max_tokens, need_itl ? 2 : 1,
		    need_itl ? "ITL" : "TTFT");
		return TS_EFORMAT;
	}
	return TS_OK;
}

/* Writes DIR/ttft.txt: "ttft_ms=<integer>" (rounded). */
static enum ts_err
tokbench_write_ttft(const struct tokbench_opts *o,
    const struct tokbench_stream *s)
{
	return tokbench_write_fmt(o->out_dir, "ttft.txt", "ttft_ms=%lld\n",
	    llround(s->arrival_ms[0]));
}

/* Writes DIR/itl.txt: "count=<n> p50_ms=<x.xx> p99_ms=<x.xx>". */
static enum ts_err
tokbench_write_itl(const struct tokbench_opts *o,
    const struct stats_summary *itl)
{
	return tokbench_write_fmt(o->out_dir, "itl.txt",
	    "count=%zu p50_ms=%.2f p99_ms=%.2f\n", itl->n, itl->p50,
	    itl->p99);
}

/* ------------------------------------------------------------------ */
/* cancel: read a few tokens, hang up, watch the server stop            */
/* ------------------------------------------------------------------ */

/* libcurl write callback of a poll: keeps a capped copy of the body. */
static size_t
tokbench_on_poll_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	tokbench_body_put(ud, ptr, size * nmemb);
	return size * nmemb;
}

/*
 * One GET /_debug/generated?id=ID. Fills requested/generated/status of
 * *c from the JSON answer. Returns TS_OK, or prints one line and returns
 * TS_ESYS (transport) or TS_EINVAL (HTTP error, bad JSON).
 */
static enum ts_err
tokbench_poll_once(const struct tokbench_opts *o, const char *id,
    struct tokbench_cancel *c)
{
	struct tokbench_body body = {{NULL, 0, 0, TOKBENCH_BODY_MAX}, 0};
	char errbuf[CURL_ERROR_SIZE], *esc = NULL, *full = NULL, *url, *txt;
	json_t *root = NULL, *st, *gen, *req;
	json_error_t jerr;
	curl_off_t connect_us = 0;
	enum ts_err rc = TS_ESYS;
	long status = 0;
	CURLcode cc;
	CURL *curl;
	size_t n;

	url = tokbench_url(o, "/_debug/generated");
	if ((curl = curl_easy_init()) == NULL) {
		tokbench_err("curl_easy_init failed");
		goto out;
	}
	if ((esc = curl_easy_escape(curl, id, (int)strlen(id))) == NULL) {
		tokbench_err("cannot percent-encode the stream id");
		goto out;
	}
	n = strlen(url) + strlen(esc) + 8;
	full = xmalloc(n);
	snprintf(full, n, "%s?id=%s", url, esc);
	client_curl_common(curl, errbuf, TOKBENCH_POLL_REQ_TIMEOUT_MS);
	curl_easy_setopt(curl, CURLOPT_URL, full);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, tokbench_on_poll_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
	cc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME_T, &connect_us);
	if (cc != CURLE_OK) {
		if (status == 0 && client_unreachable(cc, connect_us))
			tokbench_err("cannot reach %s: %s; "
			    TOKBENCH_START_HINT, url, curl_easy_strerror(cc));
		else
			tokbench_err("%s: %s", url,
			    errbuf[0] ? errbuf : curl_easy_strerror(cc));
		goto out;
	}
	rc = TS_EINVAL;
	if (status != 200) {
		tokbench_http_error(url, status, &body);
		goto out;
	}
	root = body.truncated ? NULL :
	    json_loadb(body.buf.p ? body.buf.p : "", body.buf.len, 0, &jerr);
	st = json_object_get(root, "status");
	gen = json_object_get(root, "generated");
	req = json_object_get(root, "requested");
	if (!json_is_string(st) || !json_is_integer(gen)) {
		tokbench_err("%s: answer is not JSON with a string \"status\" "
		    "and an integer \"generated\"", url);
		goto out;
	}
	txt = tokbench_sanitize(json_string_value(st),
	    json_string_length(st));
	snprintf(c->status, sizeof(c->status), "%s", txt);
	free(txt);
	c->generated = (long)json_integer_value(gen);
	c->requested = json_is_integer(req) ?
	    (long)json_integer_value(req) : c->max_tokens;
	rc = TS_OK;
out:
	json_decref(root);
	if (curl != NULL)
		curl_easy_cleanup(curl);
	curl_free(esc);
	free(full);
	free(url);
	ts_buf_free(&body.buf);
	return rc;
}

/*
 * The cancel step: /stream with max_tokens = c->max_tokens, read c->read
 * token events, abort the transfer (the socket is closed before
 * tokbench_stream_run() returns), then poll /_debug/generated every
 * TOKBENCH_POLL_EVERY_MS until the stream is no longer "running", for at
 * most TOKBENCH_POLL_TIMEOUT_MS. Returns TS_OK, or prints one line and
 * returns the failure (TS_ETIMEDOUT when it kept running).
 */
static enum ts_err
tokbench_cancel_run(const struct tokbench_opts *o, struct tokbench_cancel *c)
{
	struct tokbench_stream s;
	struct timespec closed;
	enum ts_err rc;

	memset(c, 0, sizeof(*c));
	c->max_tokens = o->max_tokens;
	c->read = o->read_tokens;
	tokbench_stream_init(&s, o, c->max_tokens, (size_t)c->read, 0);
	rc = tokbench_stream_run(&s);
	clock_gettime(CLOCK_MONOTONIC, &closed);
	if (rc != TS_OK)
		goto out;
	rc = TS_EFORMAT;
	if (!s.stopped) {
		tokbench_err("%s/stream: the stream ended after %zu token "
		    "events, before the %ld the cancel step reads", o->url,
		    s.ntokens, c->read);
		goto out;
	}
	if (s.request_id_len == 0) {
		tokbench_err("%s/stream: %s X-Request-Id header", o->url,
		    s.request_id_bad ? "unusable" : "no");
		goto out;
	}
	memcpy(c->request_id, s.request_id, s.request_id_len + 1);

	for (;;) {
		c->polls++;
		if ((rc = tokbench_poll_once(o, c->request_id, c)) != TS_OK)
			goto out;
		c->poll_ms = client_ms_since(&closed);
		if (strcmp(c->status, "running") != 0)
			break;
		if (c->poll_ms >= TOKBENCH_POLL_TIMEOUT_MS) {
			tokbench_err("stream %s still running %d ms after the "
			    "client closed (generated=%ld of %ld)",
			    c->request_id, TOKBENCH_POLL_TIMEOUT_MS,
			    c->generated, c->requested);
			rc = TS_ETIMEDOUT;
			goto out;
		}
		tokbench_sleep_ms(TOKBENCH_POLL_EVERY_MS);
	}
	if (o->id_only)
		printf("%s\n", c->request_id);
	else
		printf("cancel: request_id=%s requested=%ld read=%ld "
		    "generated=%ld status=%s poll_ms=%.2f polls=%d\n",
		    c->request_id, c->requested, c->read, c->generated,
		    c->status, c->poll_ms, c->polls);
	rc = TS_OK;
	if (o->out_dir != NULL)
		rc = tokbench_write_fmt(o->out_dir, "cancel.txt",
		    "requested=%ld generated=%ld\n", c->requested,
		    c->generated);
out:
	tokbench_stream_free(&s);
	return rc;
}

/* ------------------------------------------------------------------ */
/* lab: everything, plus report.txt and report.json                     */
/* ------------------------------------------------------------------ */

/* A JSON string of a C string, or null when it is not UTF-8. */
static json_t *
tokbench_json_str(const char *s)
{
	json_t *j = json_string(s);

	return j != NULL ? j : json_null();
}

/* A JSON array of n doubles. */
static json_t *
tokbench_json_reals(const double *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(a, json_real(v[i]));
	return a;
}

/*
 * Builds report.json: every number the lab measured, the settings it ran
 * with and how percentiles were computed. Returns a new reference.
 */
static json_t *
tokbench_lab_json(const struct tokbench_opts *o, const struct tokbench_gen *g,
    const struct tokbench_stream *s, const double *itl,
    const struct stats_summary *is, const struct tokbench_cancel *c)
{
	json_t *root, *gen, *st, *itlj, *can;

	gen = json_pack("{s:o, s:i, s:b, s:I, s:I}",
	    "tokgen", tokbench_json_str(g->tokgen),
	    "n", (json_int_t)o->sim_tokens,
	    "identical", g->identical,
	    "bytes", (json_int_t)g->bytes,
	    "first_difference", (json_int_t)g->first_diff);
	itlj = json_pack("{s:o, s:I, s:f, s:f, s:f, s:f, s:f, s:f}",
	    "samples_ms", tokbench_json_reals(itl, is->n),
	    "count", (json_int_t)is->n,
	    "p50_ms", is->p50, "p90_ms", is->p90, "p99_ms", is->p99,
	    "mean_ms", is->mean, "min_ms", is->min, "max_ms", is->max);
	st = json_pack("{s:o, s:I, s:I, s:o, s:f, s:o, s:f, s:f, s:f, s:I}",
	    "request_id", tokbench_json_str(s->request_id),
	    "max_tokens", (json_int_t)s->max_tokens,
	    "tokens", (json_int_t)s->ntokens,
	    "token_arrival_ms", tokbench_json_reals(s->arrival_ms,
	    s->ntokens),
	    "ttft_ms", s->arrival_ms[0],
	    "itl", itlj,
	    "e2e_ms", s->e2e_ms,
	    "done_ms", s->done_ms,
	    "throughput_tps", tokbench_throughput(s),
	    "comments", (json_int_t)s->ncomments);
	can = json_pack("{s:o, s:I, s:I, s:I, s:I, s:o, s:f, s:i}",
	    "request_id", tokbench_json_str(c->request_id),
	    "max_tokens", (json_int_t)c->max_tokens,
	    "read", (json_int_t)c->read,
	    "requested", (json_int_t)c->requested,
	    "generated", (json_int_t)c->generated,
	    "status", tokbench_json_str(c->status),
	    "poll_ms", c->poll_ms,
	    "polls", c->polls);
	root = json_pack("{s:s, s:o, s:o, s:s, s:o, s:o, s:o}",
	    "tokbench_version", PACKAGE_VERSION,
	    "url", tokbench_json_str(o->url),
	    "prompt", tokbench_json_str(o->prompt),
	    "percentile_method", STATS_PERCENTILE_METHOD,
	    "gen", gen, "stream", st, "cancel", can);
	return root;
}

/* ------------------------------------------------------------------ */
/* subcommands                                                          */
/* ------------------------------------------------------------------ */

/* Each tokbench_cmd_*() runs one subcommand and returns the exit status
 * (0 or 1; the failure has been reported on stderr). */

/* gen: exit 1 also when the two outputs differ. */
static int
tokbench_cmd_gen(struct tokbench_opts *o)
{
	struct tokbench_gen g;

	if (tokbench_gen_run(o, &g) != TS_OK)
		return 1;
	if (!g.identical) {
		tokbench_err("tokgen is not deterministic: gen1.txt and "
		    "gen2.txt differ at byte %lld", g.first_diff);
		return 1;
	}
	return 0;
}

/*
 * stream --json: one compact JSON object with the raw measurements
 * (token arrival times and every ITL sample, in ms) and their summary.
 * Returns the exit status: 1 when the stream had no token (no TTFT).
 */
static int
tokbench_print_stream_json(const struct tokbench_opts *o,
    const struct tokbench_stream *s)
{
	struct stats_summary is;
	double *itl;
	size_t n;
	json_t *j;
	char *txt;

	itl = tokbench_itl(s, &n);
	j = json_pack("{s:o,s:o,s:I,s:I,s:o,s:o,s:o,s:f,s:f,s:s}",
	    "url", tokbench_json_str(o->url),
	    "request_id", tokbench_json_str(s->request_id_len ?
	    s->request_id : ""),
	    "tokens", (json_int_t)s->ntokens,
	    "comments", (json_int_t)s->ncomments,
	    "ttft_ms", s->ntokens > 0 ? json_real(s->arrival_ms[0]) :
	    json_null(),
	    "token_arrival_ms", tokbench_json_reals(s->arrival_ms,
	    s->ntokens),
	    "itl_ms", tokbench_json_reals(itl, n),
	    "e2e_ms", s->e2e_ms,
	    "throughput_tps", tokbench_throughput(s),
	    "percentile_method", STATS_PERCENTILE_METHOD);
	if (j != NULL && itl != NULL && stats_summarize(itl, n, &is) ==
	    TS_OK)
		json_object_set_new(j, "itl", json_pack(
		    "{s:I,s:f,s:f,s:f,s:f,s:f}", "count", (json_int_t)is.n,
		    "p50_ms", is.p50, "p90_ms", is.p90, "p99_ms", is.p99,
		    "mean_ms", is.mean, "max_ms", is.max));
	free(itl);
	txt = j != NULL ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9)) :
	    NULL;
	json_decref(j);
	if (txt == NULL) {
		tokbench_err("cannot encode the JSON summary");
		return 1;
	}
	puts(txt);
	free(txt);
	if (s->ntokens == 0) {
		tokbench_err("%s/stream: no token events before data: [DONE]",
		    o->url);
		return 1;
	}
	return 0;
}

/*
 * stream: the --events log (after the transfer, never during it), then
 * the key=value summary. A stream without any token fails: it has no
 * TTFT.
 */
static int
tokbench_cmd_stream(struct tokbench_opts *o)
{
	struct tokbench_stream s;
	struct stats_summary is;
	double *itl = NULL;
	size_t n;
	int ret = 1;

	tokbench_stream_init(&s, o, o->max_tokens, 0, o->events);
	if (tokbench_stream_run(&s) != TS_OK) {
		if (o->events)
			tokbench_print_log(&s);
		goto out;
	}
	if (o->events)
		tokbench_print_log(&s);
	if (o->json) {
		ret = tokbench_print_stream_json(o, &s);
		goto out;
	}
	printf("url=%s/stream\n", o->url);
	printf("request_id=%s\n", s.request_id_len ? s.request_id : "");
	printf("max_tokens=%ld\n", o->max_tokens);
	printf("tokens=%zu\n", s.ntokens);
	printf("comments=%zu\n", s.ncomments);
	if (s.ntokens > 0)
		printf("ttft_ms=%.3f\n", s.arrival_ms[0]);
	itl = tokbench_itl(&s, &n);
	if (itl != NULL && stats_summarize(itl, n, &is) == TS_OK)
		printf("itl_count=%zu\nitl_p50_ms=%.3f\nitl_p90_ms=%.3f\n"
		    "itl_p99_ms=%.3f\nitl_mean_ms=%.3f\nitl_max_ms=%.3f\n",
		    is.n, is.p50, is.p90, is.p99, is.mean, is.max);
	else
		printf("itl_count=0\n");
	printf("e2e_ms=%.3f\n", s.e2e_ms);
	printf("throughput_tps=%.2f\n", tokbench_throughput(&s));
	if (s.ntokens == 0)
		tokbench_err("%s/stream: no token events before data: [DONE]",
		    o->url);
	else
		ret = 0;
out:
	free(itl);
	tokbench_stream_free(&s);
	return ret;
}

/* ttft: DIR/ttft.txt, and the same line on stdout. */
static int
tokbench_cmd_ttft(struct tokbench_opts *o)
{
	struct tokbench_stream s;
	int ret = 1;

	if (tokbench_measure(o, &s, 0) != TS_OK ||
	    tokbench_write_ttft(o, &s) != TS_OK)
		goto out;
	printf("ttft_ms=%lld\n", llround(s.arrival_ms[0]));
	ret = 0;
out:
	tokbench_stream_free(&s);
	return ret;
}

/* itl: DIR/itl.txt, and the same line on stdout. */
static int
tokbench_cmd_itl(struct tokbench_opts *o)
{
	struct tokbench_stream s;
	struct stats_summary is;
	double *itl = NULL;
	size_t n;
	int ret = 1;

	if (tokbench_measure(o, &s, 1) != TS_OK)
		goto out;
	itl = tokbench_itl(&s, &n);
	if (stats_summarize(itl, n, &is) != TS_OK ||
	    tokbench_write_itl(o, &is) != TS_OK)
		goto out;
	printf("count=%zu p50_ms=%.2f p99_ms=%.2f\n", is.n, is.p50, is.p99);
	ret = 0;
out:
	free(itl);
	tokbench_stream_free(&s);
	return ret;
}

/* cancel: DIR/cancel.txt; a summary line on stdout. */
static int
tokbench_cmd_cancel(struct tokbench_opts *o)
{
	struct tokbench_cancel c;

	return tokbench_cancel_run(o, &c) == TS_OK ? 0 : 1;
}

/*
 * lab: gen, one max_tokens=20 stream (ttft.txt, itl.txt), cancel, then
 * report.txt (four lines) and report.json. Stops at the first step that
 * fails; a non-deterministic tokgen is reported and fails the lab at the
 * end, after the reports are written.
 */
static int
tokbench_cmd_lab(struct tokbench_opts *o)
{
	struct tokbench_opts so = *o, co = *o;
	struct tokbench_stream s;
	struct tokbench_gen g;
	struct tokbench_cancel c;
	struct stats_summary is;
	double *itl = NULL;
	json_t *report = NULL;
	char *dump = NULL, rtxt[256];
	size_t n;
	int ret = 1;

	memset(&s, 0, sizeof(s));
	so.max_tokens = TOKBENCH_LAB_TOKENS;
	co.max_tokens = TOKBENCH_CANCEL_TOKENS;
	co.read_tokens = TOKBENCH_CANCEL_READ;

	if (tokbench_gen_run(o, &g) != TS_OK)
		goto out;
	if (tokbench_measure(&so, &s, 1) != TS_OK)
		goto out;
	itl = tokbench_itl(&s, &n);
	if (stats_summarize(itl, n, &is) != TS_OK ||
	    tokbench_write_ttft(o, &s) != TS_OK ||
	    tokbench_write_itl(o, &is) != TS_OK)
		goto out;
	printf("stream: request_id=%s tokens=%zu ttft_ms=%.3f "
	    "itl_p50_ms=%.3f itl_p99_ms=%.3f e2e_ms=%.3f\n",
	    s.request_id_len ? s.request_id : "-", s.ntokens,
	    s.arrival_ms[0], is.p50, is.p99, s.e2e_ms);
	if (tokbench_cancel_run(&co, &c) != TS_OK)
		goto out;

	n = (size_t)snprintf(rtxt, sizeof(rtxt), "ttft_ms=%lld\n"
	    "itl_p50_ms=%.2f\ntokens=%zu\nthroughput_tps=%.2f\n",
	    llround(s.arrival_ms[0]), is.p50, s.ntokens,
	    tokbench_throughput(&s));
	if (tokbench_write_file(o->out_dir, "report.txt", rtxt, n) != TS_OK)
		goto out;
	report = tokbench_lab_json(o, &g, &s, itl, &is, &c);
	dump = report ? json_dumps(report, JSON_COMPACT |
	    JSON_REAL_PRECISION(10)) : NULL;
	if (dump == NULL) {
		tokbench_err("cannot build report.json");
		goto out;
	}
	n = strlen(dump);
	dump = xrealloc(dump, n + 2);
	memcpy(dump + n, "\n", 2);
	if (tokbench_write_file(o->out_dir, "report.json", dump, n + 1) !=
	    TS_OK)
		goto out;
	fputs(rtxt, stdout);
	printf("report=%s/report.txt json=%s/report.json\n", o->out_dir,
	    o->out_dir);
	if (!g.identical) {
		tokbench_err("tokgen is not deterministic: gen1.txt and "
		    "gen2.txt differ at byte %lld", g.first_diff);
		goto out;
	}
	ret = 0;
out:
	free(dump);
	json_decref(report);
	free(itl);
	tokbench_stream_free(&s);
	return ret;
}

/* ------------------------------------------------------------------ */
/* command line                                                         */
/* ------------------------------------------------------------------ */

enum {
	TOKBENCH_OPT_URL = 'u',
	TOKBENCH_OPT_PROMPT = 'p',
	TOKBENCH_OPT_OUT = 'o',
	TOKBENCH_OPT_N = 'n',
	TOKBENCH_OPT_HELP = 'h',
	TOKBENCH_OPT_MAX_TOKENS = 256,
	TOKBENCH_OPT_EVENTS,
	TOKBENCH_OPT_TIMEOUT,
	TOKBENCH_OPT_TOKGEN,
	TOKBENCH_OPT_READ,
	TOKBENCH_OPT_JSON,
	TOKBENCH_OPT_ID_ONLY,
	TOKBENCH_OPT_RST,
	TOKBENCH_OPT_TPOT,
	TOKBENCH_OPT_PREFILL
};

#define TOKBENCH_LONG_TIMING \
	{"tpot-ms", required_argument, NULL, TOKBENCH_OPT_TPOT}, \
	{"prefill-ms", required_argument, NULL, TOKBENCH_OPT_PREFILL}

#define TOKBENCH_LONG_HELP {"help", no_argument, NULL, TOKBENCH_OPT_HELP}
#define TOKBENCH_LONG_URL {"url", required_argument, NULL, TOKBENCH_OPT_URL}
#define TOKBENCH_LONG_PROMPT \
	{"prompt", required_argument, NULL, TOKBENCH_OPT_PROMPT}
#define TOKBENCH_LONG_OUT {"out", required_argument, NULL, TOKBENCH_OPT_OUT}
#define TOKBENCH_LONG_MAX \
	{"max-tokens", required_argument, NULL, TOKBENCH_OPT_MAX_TOKENS}
#define TOKBENCH_LONG_TIMEOUT \
	{"timeout", required_argument, NULL, TOKBENCH_OPT_TIMEOUT}
#define TOKBENCH_LONG_TOKGEN \
	{"tokgen", required_argument, NULL, TOKBENCH_OPT_TOKGEN}
#define TOKBENCH_LONG_END {NULL, 0, NULL, 0}

static const struct option tokbench_gen_opts[] = {
	TOKBENCH_LONG_OUT, TOKBENCH_LONG_PROMPT, TOKBENCH_LONG_TOKGEN,
	TOKBENCH_LONG_HELP, TOKBENCH_LONG_END
};
static const struct option tokbench_stream_opts[] = {
	TOKBENCH_LONG_URL, TOKBENCH_LONG_PROMPT, TOKBENCH_LONG_MAX,
	{"events", no_argument, NULL, TOKBENCH_OPT_EVENTS},
	{"json", no_argument, NULL, TOKBENCH_OPT_JSON},
	TOKBENCH_LONG_TIMING,
	TOKBENCH_LONG_TIMEOUT, TOKBENCH_LONG_HELP, TOKBENCH_LONG_END
};
static const struct option tokbench_measure_opts[] = {
	TOKBENCH_LONG_OUT, TOKBENCH_LONG_URL, TOKBENCH_LONG_PROMPT,
	TOKBENCH_LONG_MAX, TOKBENCH_LONG_TIMEOUT, TOKBENCH_LONG_HELP,
	TOKBENCH_LONG_END
};
static const struct option tokbench_cancel_opts[] = {
	TOKBENCH_LONG_OUT, TOKBENCH_LONG_URL, TOKBENCH_LONG_PROMPT,
	TOKBENCH_LONG_MAX,
	{"read", required_argument, NULL, TOKBENCH_OPT_READ},
	{"id-only", no_argument, NULL, TOKBENCH_OPT_ID_ONLY},
	{"rst", no_argument, NULL, TOKBENCH_OPT_RST},
	TOKBENCH_LONG_TIMING,
	TOKBENCH_LONG_TIMEOUT, TOKBENCH_LONG_HELP, TOKBENCH_LONG_END
};
static const struct option tokbench_lab_opts[] = {
	TOKBENCH_LONG_OUT, TOKBENCH_LONG_URL, TOKBENCH_LONG_PROMPT,
	TOKBENCH_LONG_TOKGEN, TOKBENCH_LONG_TIMEOUT, TOKBENCH_LONG_HELP,
	TOKBENCH_LONG_END
};

/* Options common to the subcommands that talk to the server. */
#define TOKBENCH_USAGE_NET \
	"  -u, --url BASE        server base URL (default " \
	TOKBENCH_DEFAULT_URL ")\n" \
	"  -p, --prompt TEXT     prompt (default \"" \
	TOKBENCH_DEFAULT_PROMPT "\"), percent-encoded for you\n" \
	"      --timeout SEC     limit for the whole /stream request " \
	"(default 60)\n"

/* Per-request latency-model overrides (the server's query parameters). */
#define TOKBENCH_USAGE_TIMING \
	"      --tpot-ms MS      ask the server for this TPOT (tpot_ms=)\n" \
	"      --prefill-ms MS   ask the server for this prefill time " \
	"(prefill_ms=)\n"

/* One subcommand: its options, help text, defaults and entry point. */
struct tokbench_cmd {
	const char *name;
	const char *shortopts;
	const struct option *longopts;
	const char *usage;
	int (*run)(struct tokbench_opts *);
	int need_out;
	long max_tokens;        /* default --max-tokens */
	/* a command that parses its own options (load.h); run is NULL */
	int (*main)(int argc, char **argv);
};

static const struct tokbench_cmd tokbench_cmds[] = {
	{"gen", ":ho:p:n:", tokbench_gen_opts,
	    "usage: tokbench gen --out DIR [--prompt TEXT] [-n N] "
	    "[--tokgen PATH]\n"
	    "Runs `tokgen --prompt TEXT -n N` twice into DIR/gen1.txt and\n"
	    "DIR/gen2.txt and reports whether they are identical; exit 1 if "
	    "not.\n"
	    "  -o, --out DIR         output directory (created if missing)\n"
	    "  -p, --prompt TEXT     prompt (default \"hello\")\n"
	    "  -n N                  tokens to generate (default 20)\n"
	    "      --tokgen PATH     tokgen program; else $TOKGEN, else "
	    "tokgen next to\n"
	    "                        tokbench (or in ..), else tokgen on "
	    "PATH\n"
	    "Output: gen: tokgen=PATH bytes=N identical=yes|no "
	    "[first_difference=N]\n",
	    tokbench_cmd_gen, 1, TOKBENCH_LAB_TOKENS, NULL},
	{"stream", ":hu:p:", tokbench_stream_opts,
	    "usage: tokbench stream [--url BASE] [--prompt TEXT] "
	    "[--max-tokens N] [--events]\n"
	    "Opens one GET /stream and prints key=value lines: url, "
	    "request_id,\n"
	    "max_tokens, tokens, comments, ttft_ms, itl_count, itl_p50_ms, "
	    "itl_p90_ms,\n"
	    "itl_p99_ms, itl_mean_ms, itl_max_ms, e2e_ms, throughput_tps.\n"
	    TOKBENCH_USAGE_NET
	    "      --max-tokens N    max_tokens of the request (default 20)\n"
	    "      --events          first print each SSE event and comment "
	    "as\n"
	    "                        ARRIVAL_MS<TAB>KIND<TAB>DATA, KIND one "
	    "of token,\n"
	    "                        done, error, comment, other\n"
	    "      --json            print one JSON object instead: ttft_ms,\n"
	    "                        token_arrival_ms[], itl_ms[], itl "
	    "summary,\n"
	    "                        e2e_ms, throughput_tps, comments\n"
	    TOKBENCH_USAGE_TIMING,
	    tokbench_cmd_stream, 0, TOKBENCH_LAB_TOKENS, NULL},
	{"ttft", ":ho:u:p:", tokbench_measure_opts,
	    "usage: tokbench ttft --out DIR [--url BASE] [--prompt TEXT]\n"
	    "Measures TTFT on one max_tokens=20 stream; writes DIR/ttft.txt "
	    "as\n"
	    "ttft_ms=<integer, rounded> and prints the same line.\n"
	    "  -o, --out DIR         output directory (created if missing)\n"
	    TOKBENCH_USAGE_NET
	    "      --max-tokens N    max_tokens of the request (default 20)\n",
	    tokbench_cmd_ttft, 1, TOKBENCH_LAB_TOKENS, NULL},
	{"itl", ":ho:u:p:", tokbench_measure_opts,
	    "usage: tokbench itl --out DIR [--url BASE] [--prompt TEXT]\n"
	    "Measures ITL on one max_tokens=20 stream; writes DIR/itl.txt as\n"
	    "count=<n> p50_ms=<x.xx> p99_ms=<x.xx> (nearest-rank) and prints "
	    "it.\n"
	    "  -o, --out DIR         output directory (created if missing)\n"
	    TOKBENCH_USAGE_NET
	    "      --max-tokens N    max_tokens of the request (default 20)\n",
	    tokbench_cmd_itl, 1, TOKBENCH_LAB_TOKENS, NULL},
	{"cancel", ":ho:u:p:", tokbench_cancel_opts,
	    "usage: tokbench cancel [--out DIR] [--url BASE] [--prompt TEXT]\n"
	    "Opens /stream with max_tokens=100, reads 5 token events, closes "
	    "the\n"
	    "connection, then polls /_debug/generated?id=X-Request-Id every "
	    "20 ms\n"
	    "(at most 10 s) until the stream is no longer running. Writes\n"
	    "DIR/cancel.txt as requested=<n> generated=<n>.\n"
	    "  -o, --out DIR         output directory (created if missing)\n"
	    TOKBENCH_USAGE_NET
	    "      --max-tokens N    max_tokens of the request (default 100)\n"
	    "      --read N          token events read before closing "
	    "(default 5)\n"
	    "      --rst             close with a TCP reset (SO_LINGER 0), "
	    "not a FIN\n"
	    "      --id-only         print only the stream id (with no "
	    "--out, no file)\n"
	    TOKBENCH_USAGE_TIMING,
	    tokbench_cmd_cancel, 0, TOKBENCH_CANCEL_TOKENS, NULL},
	{"lab", ":ho:u:p:", tokbench_lab_opts,
	    "usage: tokbench lab --out DIR [--url BASE] [--prompt TEXT] "
	    "[--tokgen PATH]\n"
	    "Runs gen, one max_tokens=20 stream (ttft.txt, itl.txt) and "
	    "cancel,\n"
	    "then writes DIR/report.txt (ttft_ms, itl_p50_ms, tokens,\n"
	    "throughput_tps) and DIR/report.json (everything measured).\n"
	    "  -o, --out DIR         output directory (created if missing)\n"
	    TOKBENCH_USAGE_NET
	    "      --tokgen PATH     tokgen program (see tokbench gen "
	    "--help)\n",
	    tokbench_cmd_lab, 1, TOKBENCH_LAB_TOKENS, NULL},
	{"load", NULL, NULL, NULL, NULL, 0, 0, load_main},
};

/* Top-level help. */
static void
tokbench_usage(FILE *f)
{
	fputs("usage: tokbench COMMAND [OPTIONS]\n"
	    "Measures a tokstream server from the client side.\n"
	    "  gen     run tokgen twice and compare (determinism)\n"
	    "  stream  one stream: TTFT, ITL, E2E latency, throughput\n"
	    "  ttft    write DIR/ttft.txt\n"
	    "  itl     write DIR/itl.txt\n"
	    "  cancel  close a stream early; write DIR/cancel.txt\n"
	    "  lab     all of the above; write DIR/report.txt and "
	    "report.json\n"
	    "  load    many streams at once (closed or open loop): TTFT, "
	    "TPOT, ITL,\n"
	    "          E2E latency, throughput, goodput, as vllm bench "
	    "serve\n"
	    "Run `tokbench COMMAND --help` for a command's options.\n"
	    "Exit status: 0 ok, 1 a measurement failed, 2 usage error.\n",
	    f);
}

/* Parses a decimal integer in [min, max]; returns TS_OK or TS_EINVAL. */
static enum ts_err
tokbench_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return TS_EINVAL;
	*out = v;
	return TS_OK;
}

static int tokbench_usage_error(const struct tokbench_cmd *cmd,
    const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One usage-error line on stderr; returns its exit status, 2. */
static int
tokbench_usage_error(const struct tokbench_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tokbench %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see tokbench %s --help)\n", cmd->name);
	return 2;
}

/*
 * Parses a subcommand's options into *o with getopt_long (argv[0] is the
 * subcommand's name). Returns -1 to go on, else the exit status (0 after
 * --help, 2 after a usage error).
 */
static int
tokbench_parse(const struct tokbench_cmd *cmd, int argc, char **argv,
    struct tokbench_opts *o)
{
	const char *url = TOKBENCH_DEFAULT_URL;
	size_t n;
	int c;

	memset(o, 0, sizeof(*o));
	o->prompt = TOKBENCH_DEFAULT_PROMPT;
	o->max_tokens = cmd->max_tokens;
	o->sim_tokens = TOKBENCH_LAB_TOKENS;
	o->read_tokens = TOKBENCH_CANCEL_READ;
	o->timeout_s = TOKBENCH_DEFAULT_TIMEOUT_S;
	o->tpot_ms = -1;
	o->prefill_ms = -1;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, cmd->shortopts, cmd->longopts,
	    NULL)) != -1) {
		switch (c) {
		case TOKBENCH_OPT_HELP:
			fputs(cmd->usage, stdout);
			return 0;
		case TOKBENCH_OPT_URL:
			if (optarg[0] == '\0')
				return tokbench_usage_error(cmd,
				    "empty --url");
			url = optarg;
			break;
		case TOKBENCH_OPT_PROMPT:
			o->prompt = optarg;
			break;
		case TOKBENCH_OPT_OUT:
			if (optarg[0] == '\0')
				return tokbench_usage_error(cmd,
				    "empty --out");
			o->out_dir = optarg;
			break;
		case TOKBENCH_OPT_N:
			if (tokbench_parse_long(optarg, 1, TOKBENCH_MAX_TOKENS,
			    &o->sim_tokens) != TS_OK)
				return tokbench_usage_error(cmd, "bad -n '%s': "
				    "want an integer from 1 to %ld", optarg,
				    TOKBENCH_MAX_TOKENS);
			break;
		case TOKBENCH_OPT_MAX_TOKENS:
			if (tokbench_parse_long(optarg, 1, TOKBENCH_MAX_TOKENS,
			    &o->max_tokens) != TS_OK)
				return tokbench_usage_error(cmd, "bad "
				    "--max-tokens '%s': want an integer from 1 "
				    "to %ld", optarg, TOKBENCH_MAX_TOKENS);
			break;
		case TOKBENCH_OPT_READ:
			if (tokbench_parse_long(optarg, 1, TOKBENCH_MAX_TOKENS,
			    &o->read_tokens) != TS_OK)
				return tokbench_usage_error(cmd, "bad --read "
				    "'%s': want an integer from 1 to %ld",
				    optarg, TOKBENCH_MAX_TOKENS);
			break;
		case TOKBENCH_OPT_TIMEOUT:
			if (tokbench_parse_long(optarg, 1, 86400,
			    &o->timeout_s) != TS_OK)
				return tokbench_usage_error(cmd, "bad "
				    "--timeout '%s': want seconds from 1 to "
				    "86400", optarg);
			break;
		case TOKBENCH_OPT_EVENTS:
			o->events = 1;
			break;
		case TOKBENCH_OPT_JSON:
			o->json = 1;
			break;
		case TOKBENCH_OPT_ID_ONLY:
			o->id_only = 1;
			break;
		case TOKBENCH_OPT_RST:
			o->rst = 1;
			break;
		case TOKBENCH_OPT_TPOT:
		case TOKBENCH_OPT_PREFILL:
			if (tokbench_parse_long(optarg, 0, 60000,
			    c == TOKBENCH_OPT_TPOT ? &o->tpot_ms :
			    &o->prefill_ms) != TS_OK)
				return tokbench_usage_error(cmd, "bad %s '%s': "
				    "want milliseconds from 0 to 60000",
				    argv[optind - 1], optarg);
			break;
		case TOKBENCH_OPT_TOKGEN:
			if (optarg[0] == '\0')
				return tokbench_usage_error(cmd,
				    "empty --tokgen");
			o->tokgen = optarg;
			break;
		case ':':
			return tokbench_usage_error(cmd,
			    "missing argument for '%s'", argv[optind - 1]);
		default:
			if (optopt > 0 && optopt < 256)
				return tokbench_usage_error(cmd,
				    "unknown option '-%c'", optopt);
			return tokbench_usage_error(cmd,
			    "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return tokbench_usage_error(cmd,
		    "unexpected argument '%s'", argv[optind]);
	if (cmd->need_out && o->out_dir == NULL)
		return tokbench_usage_error(cmd, "--out DIR is required");
	if (strcmp(cmd->name, "cancel") == 0 &&
	    o->read_tokens > o->max_tokens)
		return tokbench_usage_error(cmd,
		    "--read %ld is more than --max-tokens %ld",
		    o->read_tokens, o->max_tokens);
	n = strlen(url);
	while (n > 1 && url[n - 1] == '/')
		n--;
	o->url = xstrndup(url, n);
	return -1;
}

int
main(int argc, char **argv)
{
	struct tokbench_opts o;
	const struct tokbench_cmd *cmd = NULL;
	size_t i;
	int ret;

	if (argc < 2) {
		tokbench_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		tokbench_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("tokbench %s (libcurl %s, jansson %s)\n",
		    PACKAGE_VERSION,
		    curl_version_info(CURLVERSION_NOW)->version,
		    JANSSON_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(tokbench_cmds) / sizeof(tokbench_cmds[0]); i++)
		if (strcmp(argv[1], tokbench_cmds[i].name) == 0)
			cmd = &tokbench_cmds[i];
	if (cmd == NULL) {
		fprintf(stderr, "tokbench: unknown command '%s' (see "
		    "tokbench --help)\n", argv[1]);
		return 2;
	}
	if (cmd->main != NULL) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			tokbench_err("curl_global_init failed");
			return 1;
		}
		ret = cmd->main(argc - 1, argv + 1);
		fflush(stdout);
		curl_global_cleanup();
		return ret;
	}
	if ((ret = tokbench_parse(cmd, argc - 1, argv + 1, &o)) >= 0)
		return ret;
	if (o.out_dir != NULL && tokbench_mkdir_p(o.out_dir) != TS_OK) {
		free(o.url);
		return 1;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		tokbench_err("curl_global_init failed");
		free(o.url);
		return 1;
	}
	ret = cmd->run(&o);
	fflush(stdout);
	curl_global_cleanup();
	free(o.url);
	return ret;
}
