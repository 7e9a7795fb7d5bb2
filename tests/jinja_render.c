/*
 * tests/jinja_render.c - renders a chat template with a JSON context
 * through src/jinja, for tests/integration/templates.bats, which renders
 * the same pair with @huggingface/jinja (tests/node/jinja-render.mjs)
 * and compares the bytes.
 *
 *   tests/jinja_render TEMPLATE CONTEXT.json [NOW]
 *
 * Writes the rendered text to stdout, exactly; on error one line to
 * stderr ("parse: ..." or "render: ...") and exit 1. NOW (seconds since
 * the epoch) is what strftime_now() reads; default 1721952000, 26 Jul
 * 2024, the date Llama 3.1's template falls back to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jinja/jinja.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	size_t cap = 0, n = 0, r;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			p = realloc(p, cap);
			if (p == NULL)
				abort();
		}
		r = fread(p + n, 1, cap - n, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	*len = n;
	return p;
}

int main(int argc, char **argv)
{
	struct jinja_template *t = NULL;
	json_t *ctx;
	json_error_t jerr;
	char err[512], *text, *out = NULL;
	size_t len, out_len;
	time_t now = 1721952000;
	int rc = 1;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s TEMPLATE CONTEXT.json [NOW]\n",
		    argv[0]);
		return 2;
	}
	if (argc == 4)
		now = (time_t)strtoll(argv[3], NULL, 10);
	text = slurp(argv[1], &len);
	if (text == NULL) {
		perror(argv[1]);
		return 2;
	}
	ctx = json_load_file(argv[2], 0, &jerr);
	if (ctx == NULL) {
		fprintf(stderr, "%s: %s\n", argv[2], jerr.text);
		free(text);
		return 2;
	}
	if (jinja_parse(&t, text, len, err, sizeof(err)) != TS_OK) {
		fprintf(stderr, "parse: %s\n", err);
		goto out;
	}
	if (jinja_render_at(t, ctx, 4u << 20, now, &out, &out_len, err,
	    sizeof(err)) != TS_OK) {
		fprintf(stderr, "render: %s\n", err);
		goto out;
	}
	if (fwrite(out, 1, out_len, stdout) != out_len)
		goto out;
	rc = 0;
out:
	free(out);
	jinja_free(t);
	json_decref(ctx);
	free(text);
	return rc;
}
