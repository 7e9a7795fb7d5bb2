/*
 * tools/tokgen.c - the generator on the command line: print the tokens a prompt
 * generates (as raw text, JSON strings or ids), or count the prompt's
 * tokens. The integration tests compare the server's streams with it.
 *
 * Text mode writes exactly the bytes of the generated tokens and nothing
 * else: no newline is added at the end, so that `tokgen ... | od -c` shows
 * what a client must reassemble. The other modes write one line per item.
 *
 * With --lm (or any of its options) the tokens come from the language
 * model of the OpenAI-compatible endpoints (sim/lm.h) with their sampling
 * parameters, stop strings and chat template, and text is what the
 * detokenizer (text/release.h) releases: the answer those endpoints give.
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

#include "common/buf.h"
#include "common/ts.h"
#include "text/release.h"
#include "openai/chat.h"
#include "sim/lab.h"
#include "sim/lm.h"
#include "sim/vocab.h"

#define TOKGEN_DEFAULT_N 16ul
#define TOKGEN_MAX_N 1000000ul
#define TOKGEN_PROMPT_MAX (64ul * 1024 * 1024)  /* bytes of --prompt-file */
#define TOKGEN_READ_CHUNK (64ul * 1024)
#define TOKGEN_CHAT_MAX (2 * TOKGEN_PROMPT_MAX)  /* bytes of a --chat prompt */

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
	/* The language model (--lm and the options that imply it): */
	int lm;
	struct engine_sampling params;
	const char *stops[STOP_MAX];        /* --stop, from argv */
	size_t nstops;
	int chat;                  /* the prompt is a user message */
	const char *system;        /* --system, from argv */
	int usage;                 /* --usage: a summary on stderr */
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
	    "Language model of the /v1 endpoints (each option implies --lm):\n"
	    "      --lm              use it instead of the lab generator\n"
	    "      --temperature T   0..2 (default 1; 0 is greedy)\n"
	    "      --top-p P         over 0, at most 1 (default 1)\n"
	    "      --seed N          0..2^64-1 (default: from the prompt)\n"
	    "      --ignore-eos      never end by the end-of-sequence token\n"
	    "      --stop TEXT       end before TEXT (1..64 bytes; up to 4)\n"
	    "      --chat            the prompt is a user message, rendered\n"
	    "                        with the chat template\n"
	    "      --system TEXT     with --chat: a system message first\n"
	    "      --usage           print prompt_tokens, completion_tokens\n"
	    "                        and finish_reason on stderr\n"
	    "With --lm, text is what the endpoints would send (held back\n"
	    "at stop strings and split characters), --json one line per\n"
	    "token with the text released for it, --ids the ids (the\n"
	    "end-of-sequence token included), --count the prompt tokens\n"
	    "(after --chat).\n"
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
 * Parses a decimal number for --temperature or --top-p: strtod syntax, all
 * of it, finite, in [lo, hi] (lo excluded if lo_open). Prints why on
 * stderr and returns TS_EINVAL when it is not acceptable.
 */
static enum ts_err
tokgen_parse_double(const char *name, const char *s, double lo, int lo_open,
    double hi, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !(*v <= hi) ||
	    !(*v >= lo) || (lo_open && *v == lo)) {
		fprintf(stderr, "tokgen: %s '%s': must be a number %s %g %s "
		    "%g\n", name, s, lo_open ? "over" : "from", lo,
		    lo_open ? "and at most" : "to", hi);
		return TS_EINVAL;
	}
	return TS_OK;
}

/* Parses --seed: decimal digits only, 0..2^64-1. */
static enum ts_err
tokgen_parse_seed(const char *s, uint64_t *seed)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno == ERANGE ||
	    v > UINT64_MAX) {
		fprintf(stderr, "tokgen: --seed '%s': must be a whole number "
		    "from 0 to 18446744073709551615\n", s);
		return TS_EINVAL;
	}
	*seed = (uint64_t)v;
	return TS_OK;
}

/* Adds a --stop string: 1..STOP_MAX_BYTES bytes of valid UTF-8, at
 * most STOP_MAX of them. */
static enum ts_err
tokgen_add_stop(struct tokgen_opts *o, const char *s)
{
	size_t len = strlen(s);

	if (o->nstops == STOP_MAX) {
		fprintf(stderr, "tokgen: at most %d --stop strings\n",
		    STOP_MAX);
		return TS_ELIMIT;
	}
	if (len == 0 || len > STOP_MAX_BYTES) {
		fprintf(stderr, "tokgen: --stop: 1 to %d bytes\n",
		    STOP_MAX_BYTES);
		return TS_ELIMIT;
	}
	if (!utf8_valid(s, len)) {
		fputs("tokgen: --stop: not valid UTF-8\n", stderr);
		return TS_EINVAL;
	}
	o->stops[o->nstops++] = s;
	return TS_OK;
}

/* Long options without a short form. */
enum {
	TOKGEN_OPT_LM = 256,
	TOKGEN_OPT_TEMPERATURE,
	TOKGEN_OPT_TOP_P,
	TOKGEN_OPT_SEED,
	TOKGEN_OPT_IGNORE_EOS,
	TOKGEN_OPT_STOP,
	TOKGEN_OPT_CHAT,
	TOKGEN_OPT_SYSTEM,
	TOKGEN_OPT_USAGE
};

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
		{ "lm", no_argument, NULL, TOKGEN_OPT_LM },
		{ "temperature", required_argument, NULL,
		    TOKGEN_OPT_TEMPERATURE },
		{ "top-p", required_argument, NULL, TOKGEN_OPT_TOP_P },
		{ "seed", required_argument, NULL, TOKGEN_OPT_SEED },
		{ "ignore-eos", no_argument, NULL, TOKGEN_OPT_IGNORE_EOS },
		{ "stop", required_argument, NULL, TOKGEN_OPT_STOP },
		{ "chat", no_argument, NULL, TOKGEN_OPT_CHAT },
		{ "system", required_argument, NULL, TOKGEN_OPT_SYSTEM },
		{ "usage", no_argument, NULL, TOKGEN_OPT_USAGE },
		{ NULL, 0, NULL, 0 }
	};
	enum ts_err rc;
	int ch;

	memset(o, 0, sizeof(*o));
	o->n = TOKGEN_DEFAULT_N;
	o->mode = TOKGEN_TEXT;
	engine_sampling_defaults(&o->params);
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
		case TOKGEN_OPT_LM:
			break;
		case TOKGEN_OPT_TEMPERATURE:
			rc = tokgen_parse_double("--temperature", optarg, 0.0,
			    0, ENGINE_TEMPERATURE_MAX, &o->params.temperature);
			break;
		case TOKGEN_OPT_TOP_P:
			rc = tokgen_parse_double("--top-p", optarg, 0.0, 1,
			    1.0, &o->params.top_p);
			break;
		case TOKGEN_OPT_SEED:
			rc = tokgen_parse_seed(optarg, &o->params.seed);
			o->params.has_seed = 1;
			break;
		case TOKGEN_OPT_IGNORE_EOS:
			o->params.ignore_eos = 1;
			break;
		case TOKGEN_OPT_STOP:
			rc = tokgen_add_stop(o, optarg);
			break;
		case TOKGEN_OPT_CHAT:
			o->chat = 1;
			break;
		case TOKGEN_OPT_SYSTEM:
			o->system = optarg;
			break;
		case TOKGEN_OPT_USAGE:
			o->usage = 1;
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
		if (ch >= TOKGEN_OPT_LM)
			o->lm = 1;
	}
	if (o->help)
		return TS_OK;
	if (o->system != NULL && !o->chat) {
		fputs("tokgen: --system needs --chat\n", stderr);
		return TS_EINVAL;
	}
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
 * Writes (text, len), at most RELEASE_BUF bytes, as one line holding a
 * compact JSON string, encoded by jansson. Returns TS_EINVAL if jansson
 * refuses it (not UTF-8: cannot happen for generated text), TS_ESYS on a
 * write error.
 */
static enum ts_err
tokgen_put_json_text(const char *text, size_t len)
{
	char line[6 * RELEASE_BUF + 3];     /* "\uXXXX" per byte, quoted */
	size_t n;
	json_t *s;

	s = text == NULL || len > RELEASE_BUF ? NULL :
	    json_stringn(text, len);
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

/* Writes token `id` as a JSON string line (tokgen_put_json_text). */
static enum ts_err
tokgen_put_json(uint32_t id)
{
	const char *text;
	size_t len;

	text = sim_token_text(id, &len);
	return tokgen_put_json_text(text, len);
}

/*
 * Generates o->n tokens for the prompt and writes them in o->mode. Returns
 * TS_ESYS on a write error, TS_EINVAL (reported here) if a token cannot be
 * written as JSON.
 */
static enum ts_err
tokgen_generate(const struct tokgen_opts *o, const char *prompt, size_t len)
{
	struct sim_lab g;
	const char *text;
	unsigned long i;
	size_t tlen;
	uint32_t id;
	enum ts_err rc;

	sim_lab_init(&g, prompt, len);
	for (i = 0; i < o->n; i++) {
		id = sim_lab_next(&g);
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
			text = sim_token_text(id, &tlen);
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
 * Writes what the language model's token `id` released, chunk c, in
 * o->mode: the bytes, a JSON string line, or the id.
 */
static enum ts_err
tokgen_lm_put(const struct tokgen_opts *o, uint32_t id,
    const struct release_chunk *c)
{
	switch (o->mode) {
	case TOKGEN_JSON:
		return tokgen_put_json_text(c->p, c->len);
	case TOKGEN_IDS:
		return printf("%" PRIu32 "\n", id) < 0 ? TS_ESYS : TS_OK;
	default:
		return fwrite(c->p, 1, c->len, stdout) == c->len ? TS_OK :
		    TS_ESYS;
	}
}

/*
 * Generates up to o->n tokens with the language model (sim/lm.h) for the
 * prompt and writes them in o->mode through a detokenizer with the stop
 * strings: ends at the end-of-sequence token or a stop string (finish
 * reason "stop") or after o->n tokens ("length"); what is still held then
 * goes out (with --json as one more line, if any). With --usage, one line
 * on stderr. Returns TS_ESYS on a write error, TS_EINVAL (reported here)
 * if text cannot be written as JSON.
 */
static enum ts_err
tokgen_lm(const struct tokgen_opts *o, const char *prompt, size_t len)
{
	struct sim_lm lm;
	struct release r;
	struct release_chunk c;
	size_t lens[STOP_MAX], i;
	unsigned long k, produced = 0;
	const char *finish = "length";
	enum ts_err rc = TS_OK;
	uint32_t id;
	int stop = 0;

	for (i = 0; i < o->nstops; i++)
		lens[i] = strlen(o->stops[i]);
	/* The stops were checked by tokgen_add_stop. */
	(void)release_init(&r, o->stops, lens, o->nstops);
	sim_lm_init(&lm, prompt, len, &o->params);
	for (k = 0; k < o->n && rc == TS_OK; k++) {
		id = sim_lm_next(&lm);
		produced++;
		(void)sim_release_token(&r, id, &c, &stop);
		rc = tokgen_lm_put(o, id, &c);
		if (id == SIM_EOS_ID || stop != 0) {
			finish = "stop";
			break;
		}
	}
	release_finish(&r, &c);
	if (rc == TS_OK && c.len > 0 && o->mode != TOKGEN_IDS)
		rc = tokgen_lm_put(o, SIM_EOS_ID, &c);
	sim_lm_free(&lm);
	if (rc == TS_EINVAL)
		fputs("tokgen: text cannot be written as JSON\n", stderr);
	if (o->usage)
		fprintf(stderr, "prompt_tokens=%zu completion_tokens=%lu "
		    "finish_reason=%s\n", sim_tokenize(prompt, len, NULL, 0),
		    produced, finish);
	return rc;
}

/*
 * Renders the prompt (ptr, len) as a user message, after the --system
 * message if any, with the chat template into *out (caller frees).
 * Returns TS_ELIMIT (reported here) if that is over TOKGEN_CHAT_MAX.
 */
static enum ts_err
tokgen_chat(const struct tokgen_opts *o, const char *prompt, size_t len,
    struct ts_buf *out)
{
	struct chat_msg msgs[2];
	size_t n = 0;
	enum ts_err rc;

	if (o->system != NULL) {
		msgs[n].role = CHAT_ROLE_SYSTEM;
		msgs[n].content = o->system;
		msgs[n].len = strlen(o->system);        /* from argv */
		n++;
	}
	msgs[n].role = CHAT_ROLE_USER;
	msgs[n].content = prompt;
	msgs[n].len = len;
	n++;
	ts_buf_init(out, TOKGEN_CHAT_MAX);
	rc = chat_render(msgs, n, out);
	if (rc != TS_OK)
		fprintf(stderr, "tokgen: the chat prompt is over %lu bytes\n",
		    TOKGEN_CHAT_MAX);
	return rc;
}

/*
 * Runs the command for a loaded prompt (ptr, len) - with --chat, for its
 * rendering - and flushes standard output. Returns the exit status.
 */
static int
tokgen_run(const struct tokgen_opts *o, const char *prompt, size_t len)
{
	struct ts_buf chat;
	enum ts_err rc = TS_OK;
	int saved, status = 0;

	ts_buf_init(&chat, 0);
	if (o->chat) {
		if (tokgen_chat(o, prompt, len, &chat) != TS_OK) {
			status = TOKGEN_EXIT_FAIL;
			goto out;
		}
		prompt = chat.p;
		len = chat.len;
	}
	if (o->mode == TOKGEN_COUNT)
		printf("%zu\n", sim_tokenize(prompt, len, NULL, 0));
	else if (o->lm)
		rc = tokgen_lm(o, prompt, len);
	else
		rc = tokgen_generate(o, prompt, len);
	if (rc == TS_EINVAL) {
		status = TOKGEN_EXIT_FAIL;
		goto out;
	}
	if (fflush(stdout) != 0 || ferror(stdout) || rc != TS_OK) {
		saved = errno;
		fprintf(stderr, "tokgen: writing output: %s\n",
		    strerror(saved));
		status = TOKGEN_EXIT_FAIL;
	}
out:
	ts_buf_free(&chat);
	return status;
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
