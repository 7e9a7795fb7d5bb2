/*
 * tokgen.c - the generator on the command line: print the tokens a prompt
 * generates (as raw text, JSON strings or ids), or count the prompt's
 * tokens. The integration tests compare the server's streams with it.
 *
 * Text mode writes exactly the bytes of the generated tokens and nothing
 * else: no newline is added at the end, so that `tokgen ... | od -c` shows
 * what a client must reassemble. The other modes write one line per item.
 *
 * Exit status: 0 done, 1 a file could not be read or output not written,
 * 2 bad arguments (one line on stderr says which).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gen.h"
#include "ts.h"

#define TOKGEN_DEFAULT_N 16ul
#define TOKGEN_MAX_N 1000000ul
#define TOKGEN_PROMPT_MAX (64ul * 1024 * 1024)  /* bytes of --prompt-file */
#define TOKGEN_READ_CHUNK (64ul * 1024)

#define TOKGEN_EXIT_FAIL 1
#define TOKGEN_EXIT_USAGE 2

enum tokgen_mode {
	TOKGEN_TEXT,    /* the token bytes, concatenated */
	TOKGEN_JSON,    /* one JSON string per token per line */
	TOKGEN_IDS,     /* one decimal id per line */
	TOKGEN_COUNT    /* the number of prompt tokens, one line */
};

struct tokgen_opts {
	const char *prompt;        /* --prompt, borrowed from argv */
	const char *prompt_file;   /* --prompt-file, "-" for stdin */
	unsigned long n;           /* tokens to generate */
	enum tokgen_mode mode;
	int help;
};

static void
tokgen_usage(FILE *f)
{
	fputs("usage: tokgen (--prompt TEXT | --prompt-file FILE) [-n N]\n"
	    "              [--json | --ids | --count]\n"
	    "\n"
	    "Prints the tokens the deterministic generator produces for a\n"
	    "prompt: the same prompt always gives the same tokens.\n"
	    "\n"
	    "  -p, --prompt TEXT       the prompt\n"
	    "  -f, --prompt-file FILE  read the prompt from FILE (all bytes,\n"
	    "                          NUL included; - is standard input)\n"
	    "  -n, --max-tokens N      tokens to generate, 0..1000000\n"
	    "                          (default 16)\n"
	    "  -j, --json              one token per line as a JSON string\n"
	    "  -i, --ids               one token id per line\n"
	    "  -c, --count             print the number of prompt tokens\n"
	    "  -h, --help              this text\n"
	    "\n"
	    "Without --json, --ids or --count the token bytes are written as\n"
	    "they are, with no newline added at the end.\n", f);
}

/*
 * Parses the argument of -n: decimal digits only (no sign, no space),
 * at most TOKGEN_MAX_N. Prints why on stderr and returns TS_EINVAL or
 * TS_ELIMIT when it is not acceptable.
 */
static enum ts_err
tokgen_parse_n(const char *s, unsigned long *n)
{
	char *end;

	if (s[0] == '-' && s[1] >= '0' && s[1] <= '9') {
		fprintf(stderr, "tokgen: -n %s: must not be negative\n", s);
		return TS_EINVAL;
	}
	if (s[0] < '0' || s[0] > '9') {
		fprintf(stderr, "tokgen: -n '%s': not a whole number\n", s);
		return TS_EINVAL;
	}
	errno = 0;
	*n = strtoul(s, &end, 10);
	if (*end != '\0') {
		fprintf(stderr, "tokgen: -n '%s': not a whole number\n", s);
		return TS_EINVAL;
	}
	if (errno == ERANGE || *n > TOKGEN_MAX_N) {
		fprintf(stderr, "tokgen: -n %s: over the maximum of %lu\n", s,
		    TOKGEN_MAX_N);
		return TS_ELIMIT;
	}
	return TS_OK;
}

/* Sets the output mode; --json, --ids and --count exclude each other. */
static enum ts_err
tokgen_set_mode(struct tokgen_opts *o, enum tokgen_mode m)
{
	if (o->mode != TOKGEN_TEXT && o->mode != m) {
		fputs("tokgen: --json, --ids and --count exclude each other\n",
		    stderr);
		return TS_EINVAL;
	}
	o->mode = m;
	return TS_OK;
}

/*
 * Fills *o from the command line with getopt_long. On a bad argument
 * prints one line on stderr and returns TS_EINVAL (or TS_ELIMIT for -n).
 */
static enum ts_err
tokgen_parse_args(int argc, char *argv[], struct tokgen_opts *o)
{
	static const struct option longopts[] = {
		{ "prompt", required_argument, NULL, 'p' },
		{ "prompt-file", required_argument, NULL, 'f' },
		{ "max-tokens", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "ids", no_argument, NULL, 'i' },
		{ "count", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	enum ts_err rc;
	int ch;

	memset(o, 0, sizeof(*o));
	o->n = TOKGEN_DEFAULT_N;
	o->mode = TOKGEN_TEXT;
	opterr = 0;     /* our own one-line messages */
	while ((ch = getopt_long(argc, argv, ":p:f:n:jich", longopts,
	    NULL)) != -1) {
		rc = TS_OK;
		switch (ch) {
		case 'p':
			o->prompt = optarg;
			break;
		case 'f':
			o->prompt_file = optarg;
			break;
		case 'n':
			rc = tokgen_parse_n(optarg, &o->n);
			break;
		case 'j':
			rc = tokgen_set_mode(o, TOKGEN_JSON);
			break;
		case 'i':
			rc = tokgen_set_mode(o, TOKGEN_IDS);
			break;
		case 'c':
			rc = tokgen_set_mode(o, TOKGEN_COUNT);
			break;
		case 'h':
			o->help = 1;
			break;
		case ':':
			fprintf(stderr, "tokgen: option '%s' needs an argument"
			    "\n", argv[optind - 1]);
			return TS_EINVAL;
		default:
			if (optopt != 0)
				fprintf(stderr, "tokgen: unknown option '-%c' "
				    "(see tokgen --help)\n", optopt);
			else
				fprintf(stderr, "tokgen: unknown option '%s' "
				    "(see tokgen --help)\n", argv[optind - 1]);
			return TS_EINVAL;
		}
		if (rc != TS_OK)
			return rc;
	}
	if (o->help)
		return TS_OK;
	if (optind < argc) {
		fprintf(stderr, "tokgen: unexpected argument '%s'\n",
		    argv[optind]);
		return TS_EINVAL;
	}
	if (o->prompt != NULL && o->prompt_file != NULL) {
		fputs("tokgen: give --prompt or --prompt-file, not both\n",
		    stderr);
		return TS_EINVAL;
	}
	if (o->prompt == NULL && o->prompt_file == NULL) {
		fputs("tokgen: no prompt: give --prompt TEXT or --prompt-file "
		    "FILE\n", stderr);
		return TS_EINVAL;
	}
	return TS_OK;
}

/*
 * Reads all of `path` ("-": standard input) into *buf (caller frees),
 * binary-safe, at most TOKGEN_PROMPT_MAX bytes. Prints why on stderr and
 * returns TS_ESYS or TS_ELIMIT on failure.
 */
static enum ts_err
tokgen_read_file(const char *path, char **buf, size_t *len)
{
	FILE *f;
	size_t cap = 0, want, got;
	enum ts_err rc = TS_OK;
	int saved;

	*buf = NULL;
	*len = 0;
	f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (f == NULL) {
		saved = errno;
		fprintf(stderr, "tokgen: %s: %s\n", path, strerror(saved));
		return TS_ESYS;
	}
	for (;;) {
		if (cap - *len < TOKGEN_READ_CHUNK) {
			cap = cap == 0 ? TOKGEN_READ_CHUNK : cap * 2;
			*buf = xrealloc(*buf, cap);
		}
		want = cap - *len;
		got = fread(*buf + *len, 1, want, f);
		*len += got;
		if (*len > TOKGEN_PROMPT_MAX) {
			fprintf(stderr, "tokgen: %s: over the maximum of %lu "
			    "bytes\n", path, TOKGEN_PROMPT_MAX);
			rc = TS_ELIMIT;
			goto out;
		}
		if (got == want)
			continue;
		if (ferror(f)) {
			saved = errno;
			fprintf(stderr, "tokgen: %s: %s\n", path,
			    strerror(saved));
			rc = TS_ESYS;
			goto out;
		}
		break;          /* end of file */
	}
out:
	if (f != stdin)
		fclose(f);
	if (rc != TS_OK) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return rc;
}

/*
 * Writes token `id` as one line holding a compact JSON string, encoded by
 * jansson from (ptr, len). Returns TS_EINVAL if jansson refuses the token
 * (not UTF-8: cannot happen for a generated token), TS_ESYS on a write
 * error.
 */
static enum ts_err
tokgen_put_json(uint32_t id)
{
	char line[8 * GEN_TOKEN_MAX_BYTES];     /* "\uXXXX" per byte, quoted */
	const char *text;
	size_t len, n;
	json_t *s;

	text = gen_token_text(id, &len);
	s = text == NULL ? NULL : json_stringn(text, len);
	if (s == NULL)
		return TS_EINVAL;
	n = json_dumpb(s, line, sizeof(line) - 1,
	    JSON_ENCODE_ANY | JSON_COMPACT);
	json_decref(s);
	if (n == 0 || n > sizeof(line) - 1)
		return TS_EINVAL;
	line[n++] = '\n';
	return fwrite(line, 1, n, stdout) == n ? TS_OK : TS_ESYS;
}

/*
 * Generates o->n tokens for the prompt and writes them in o->mode. Returns
 * TS_ESYS on a write error, TS_EINVAL (reported here) if a token cannot be
 * written as JSON.
 */
static enum ts_err
tokgen_generate(const struct tokgen_opts *o, const char *prompt, size_t len)
{
	struct gen_stream g;
	const char *text;
	unsigned long i;
	size_t tlen;
	uint32_t id;
	enum ts_err rc;

	gen_init(&g, prompt, len);
	for (i = 0; i < o->n; i++) {
		id = gen_next(&g);
		switch (o->mode) {
		case TOKGEN_JSON:
			rc = tokgen_put_json(id);
			if (rc == TS_EINVAL) {
				fprintf(stderr, "tokgen: token %" PRIu32
				    " cannot be written as JSON\n", id);
				return rc;
			}
			break;
		case TOKGEN_IDS:
			rc = printf("%" PRIu32 "\n", id) < 0 ? TS_ESYS :
			    TS_OK;
			break;
		default:
			text = gen_token_text(id, &tlen);
			rc = fwrite(text, 1, tlen, stdout) == tlen ? TS_OK :
			    TS_ESYS;
			break;
		}
		if (rc != TS_OK)
			return rc;
	}
	return TS_OK;
}

/*
 * Runs the command for a loaded prompt (ptr, len) and flushes standard
 * output. Returns the exit status.
 */
static int
tokgen_run(const struct tokgen_opts *o, const char *prompt, size_t len)
{
	enum ts_err rc = TS_OK;
	int saved;

	if (o->mode == TOKGEN_COUNT)
		printf("%zu\n", gen_tokenize(prompt, len, NULL, 0));
	else
		rc = tokgen_generate(o, prompt, len);
	if (rc == TS_EINVAL)
		return TOKGEN_EXIT_FAIL;
	if (fflush(stdout) != 0 || ferror(stdout) || rc != TS_OK) {
		saved = errno;
		fprintf(stderr, "tokgen: writing output: %s\n",
		    strerror(saved));
		return TOKGEN_EXIT_FAIL;
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	struct tokgen_opts o;
	char *prompt = NULL;
	size_t len;
	int status;

	if (tokgen_parse_args(argc, argv, &o) != TS_OK)
		return TOKGEN_EXIT_USAGE;
	if (o.help) {
		tokgen_usage(stdout);
		return 0;
	}
	if (o.prompt_file != NULL) {
		if (tokgen_read_file(o.prompt_file, &prompt, &len) != TS_OK)
			return TOKGEN_EXIT_FAIL;
	} else {
		len = strlen(o.prompt);  /* argv: a C string by nature */
		prompt = xstrndup(o.prompt, len);
	}
	status = tokgen_run(&o, prompt, len);
	free(prompt);
	return status;
}
