/*
 * dataset.c - the prompt files of tokbench load (dataset.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench/dataset.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/rng.h"
#include "bench/load_report.h"

/* The PRNG stream of the shuffle (load_rng_seed). */
#define LOAD_DATASET_RNG_SHUFFLE 4

static void load_derr_set(struct load_derr *err, long line, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

static void
load_derr_set(struct load_derr *err, long line, const char *fmt, ...)
{
	va_list ap;

	err->line = line;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
}

enum ts_err
load_dataset_read(const char *path, size_t max, char **buf, size_t *len,
    struct load_derr *err)
{
	struct stat st;
	FILE *f;
	char *p;
	size_t n;

	*buf = NULL;
	*len = 0;
	if ((f = fopen(path, "rb")) == NULL) {
		load_derr_set(err, 0, "cannot open %s: %s", path,
		    strerror(errno));
		return TS_ESYS;
	}
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		load_derr_set(err, 0, "%s is not a regular file", path);
		fclose(f);
		return TS_ESYS;
	}
	if ((uint64_t)st.st_size > (uint64_t)max) {
		load_derr_set(err, 0, "%s is %lld bytes, more than the %zu a "
		    "dataset may have", path, (long long)st.st_size, max);
		fclose(f);
		return TS_ELIMIT;
	}
	p = xmalloc((size_t)st.st_size + 1);
	n = fread(p, 1, (size_t)st.st_size, f);
	if (ferror(f) || n != (size_t)st.st_size) {
		load_derr_set(err, 0, "cannot read %s: %s", path,
		    ferror(f) ? strerror(errno) : "it changed size");
		free(p);
		fclose(f);
		return TS_ESYS;
	}
	fclose(f);
	p[n] = '\0';
	*buf = p;
	*len = n;
	return TS_OK;
}

long
load_dataset_estimate(size_t n)
{
	return (long)((n + 3) / 4);
}

/* Adds an entry; takes prompt and messages. */
static void
load_dataset_add(struct load_dataset *d, char *prompt, json_t *messages,
    long prompt_tokens, long output_tokens, long line)
{
	struct load_entry *e;

	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 64;
		d->v = xrealloc(d->v, d->cap * sizeof(*d->v));
	}
	e = &d->v[d->n++];
	e->prompt = prompt;
	e->messages = messages;
	e->prompt_tokens = prompt_tokens;
	e->output_tokens = output_tokens;
	e->line = line;
}

/*
 * vLLM's ShareGPTDataset.sample(): conversations[0] is the prompt,
 * conversations[1] the completion whose length is the output length;
 * is_valid_sequence() with its defaults keeps pairs with both at least 4
 * tokens, the prompt at most 1024, both at most 2048.
 */
enum ts_err
load_dataset_sharegpt(const char *buf, size_t len, struct load_dataset *d,
    struct load_derr *err)
{
	json_error_t jerr;
	json_t *root, *item, *conv, *p, *c;
	size_t i;
	long pt, ot;

	root = json_loadb(buf, len, 0, &jerr);
	if (root == NULL) {
		load_derr_set(err, jerr.line > 0 ? jerr.line : 0, "not JSON: "
		    "%s", jerr.text);
		return TS_EINVAL;
	}
	if (!json_is_array(root)) {
		load_derr_set(err, 0, "a ShareGPT file is a JSON array of "
		    "{\"conversations\": [...]} objects");
		json_decref(root);
		return TS_EINVAL;
	}
	json_array_foreach(root, i, item) {
		conv = json_object_get(item, "conversations");
		p = json_object_get(json_array_get(conv, 0), "value");
		c = json_object_get(json_array_get(conv, 1), "value");
		if (json_array_size(conv) < 2 || !json_is_string(p) ||
		    !json_is_string(c) || json_string_length(p) == 0) {
			d->skipped++;
			continue;
		}
		pt = load_dataset_estimate(json_string_length(p));
		ot = load_dataset_estimate(json_string_length(c));
		if (pt < LOAD_SHAREGPT_MIN_LEN || ot < LOAD_SHAREGPT_MIN_LEN ||
		    pt > LOAD_SHAREGPT_MAX_PROMPT ||
		    pt + ot > LOAD_SHAREGPT_MAX_TOTAL ||
		    memchr(json_string_value(p), '\0',
		    json_string_length(p)) != NULL) {
			d->skipped++;
			continue;
		}
		load_dataset_add(d, xstrndup(json_string_value(p),
		    json_string_length(p)), NULL, pt, ot, (long)i);
	}
	json_decref(root);
	if (d->n == 0) {
		load_derr_set(err, 0, "no usable conversation (of %zu entries: "
		    "two turns of text each, 4 to 1024 prompt tokens, 4 or "
		    "more output tokens, at most 2048 in all)", i);
		return TS_EINVAL;
	}
	return TS_OK;
}

/* Checks a jsonl "messages" array: objects with string role and
 * content. Returns NULL when it is fine, else what is wrong. */
static const char *
load_dataset_messages_bad(json_t *m)
{
	json_t *msg;
	size_t i;

	if (!json_is_array(m) || json_array_size(m) == 0)
		return "\"messages\" is not a non-empty array";
	json_array_foreach(m, i, msg) {
		if (!json_is_string(json_object_get(msg, "role")) ||
		    !json_is_string(json_object_get(msg, "content")))
			return "a message without a string \"role\" and "
			    "\"content\"";
	}
	return NULL;
}

/* One line (s, n) of a JSONL file, number `line`. */
static enum ts_err
load_dataset_line(const char *s, size_t n, long line, long max_output,
    struct load_dataset *d, struct load_derr *err)
{
	json_error_t jerr;
	json_t *o, *p, *m, *ot;
	const char *bad;
	long out = 0;

	o = json_loadb(s, n, 0, &jerr);
	if (o == NULL) {
		load_derr_set(err, line, "not JSON: %s", jerr.text);
		return TS_EINVAL;
	}
	p = json_object_get(o, "prompt");
	m = json_object_get(o, "messages");
	ot = json_object_get(o, "output_tokens");
	if (!json_is_object(o))
		bad = "not a JSON object";
	else if ((p == NULL) == (m == NULL))
		bad = "want one of \"prompt\" and \"messages\"";
	else if (p != NULL && (!json_is_string(p) ||
	    json_string_length(p) == 0 ||
	    memchr(json_string_value(p), '\0', json_string_length(p))))
		bad = "\"prompt\" is not a non-empty string";
	else if (m != NULL && (bad = load_dataset_messages_bad(m)) != NULL)
		;
	else if (ot != NULL && (!json_is_integer(ot) ||
	    json_integer_value(ot) < 1 ||
	    json_integer_value(ot) > max_output))
		bad = "\"output_tokens\" is not an integer from 1 to the "
		    "--output-tokens limit";
	else
		bad = NULL;
	if (bad != NULL) {
		load_derr_set(err, line, "%s", bad);
		json_decref(o);
		return TS_EINVAL;
	}
	if (ot != NULL)
		out = (long)json_integer_value(ot);
	load_dataset_add(d, p != NULL ? xstrndup(json_string_value(p),
	    json_string_length(p)) : NULL, m != NULL ? json_incref(m) : NULL,
	    p != NULL ? load_dataset_estimate(json_string_length(p)) : -1,
	    out, line);
	json_decref(o);
	return TS_OK;
}

enum ts_err
load_dataset_jsonl(const char *buf, size_t len, long max_output,
    struct load_dataset *d, struct load_derr *err)
{
	const char *s = buf, *end = buf + len, *nl;
	long line = 0;
	size_t n, k;

	while (s < end) {
		nl = memchr(s, '\n', (size_t)(end - s));
		n = nl != NULL ? (size_t)(nl - s) : (size_t)(end - s);
		line++;
		for (k = 0; k < n && (s[k] == ' ' || s[k] == '\t' ||
		    s[k] == '\r'); k++)
			;
		if (k < n && load_dataset_line(s, n, line, max_output, d,
		    err) != TS_OK)
			return TS_EINVAL;
		s += n + 1;
	}
	if (d->n == 0) {
		load_derr_set(err, 0, "no prompt: every line is blank");
		return TS_EINVAL;
	}
	return TS_OK;
}

void
load_dataset_shuffle(struct load_dataset *d, uint64_t seed)
{
	struct load_entry tmp;
	struct rng r;
	size_t i, j;

	load_rng_seed(&r, seed, LOAD_DATASET_RNG_SHUFFLE);
	for (i = d->n; i > 1; i--) {
		j = (size_t)load_rng_range(&r, 0, (long)i - 1);
		tmp = d->v[i - 1];
		d->v[i - 1] = d->v[j];
		d->v[j] = tmp;
	}
}

const struct load_entry *
load_dataset_entry(const struct load_dataset *d, uint64_t index)
{
	return &d->v[index % d->n];
}

void
load_dataset_free(struct load_dataset *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		free(d->v[i].prompt);
		json_decref(d->v[i].messages);
	}
	free(d->v);
	memset(d, 0, sizeof(*d));
}
