/*
 * tok_encode.c - the tokenizer test driver of tests/integration/
 * tokenizers.bats: loads a tokenizer.json (tokenizer_from_json, BOS as
 * its post_processor says) and, for each line of CORPUS (a JSON string
 * per line), prints one line {"ids": [...], "text": "..."}: the ids of
 * tokenizer_encode, and the text that tokenizer_decode gives for them
 * one by one (each after the one before, as a stream decodes).
 *
 *   tok_encode TOKENIZER.json CORPUS.jsonl
 *
 * Exit 0; 1 when the tokenizer or a line cannot be read (message on
 * stderr); 2 on usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "model/tokenizer.h"

int
main(int argc, char **argv)
{
	struct tokenizer *t;
	char err[512], *line = NULL;
	size_t cap = 0;
	ssize_t got;
	FILE *f;
	int lineno = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: tok_encode TOKENIZER.json "
		    "CORPUS.jsonl\n");
		return 2;
	}
	if (tokenizer_from_json(&t, argv[1], -1, err, sizeof(err)) != TS_OK) {
		fprintf(stderr, "tok_encode: %s\n", err);
		return 1;
	}
	f = fopen(argv[2], "r");
	if (f == NULL) {
		perror(argv[2]);
		tokenizer_free(t);
		return 1;
	}
	while ((got = getline(&line, &cap, f)) > 0) {
		json_error_t jerr;
		json_t *s = json_loadb(line, (size_t)got, JSON_DECODE_ANY |
		    JSON_ALLOW_NUL, &jerr), *ids, *o;
		uint32_t *v, prev = TOKENIZER_NONE;
		size_t n, i;
		struct ts_buf text;
		char *out;

		lineno++;
		if (!json_is_string(s) || tokenizer_encode(t,
		    json_string_value(s), json_string_length(s),
		    tokenizer_add_bos(t), 0, &v,
		    &n) != TS_OK) {
			fprintf(stderr, "tok_encode: line %d: not a JSON "
			    "string, or not encoded\n", lineno);
			json_decref(s);
			return 1;
		}
		ts_buf_init(&text, (size_t)1 << 30);
		ids = json_array();
		for (i = 0; i < n; i++) {
			size_t len;
			const char *p = tokenizer_decode(t, prev, v[i], &len);

			json_array_append_new(ids, json_integer(v[i]));
			if (ts_buf_append(&text, p, len) != TS_OK)
				abort();
			prev = v[i];
		}
		o = json_pack("{s:o, s:s%}", "ids", ids, "text",
		    text.p != NULL ? text.p : "", text.len);
		out = json_dumps(o, JSON_COMPACT);
		if (out == NULL) {
			fprintf(stderr, "tok_encode: line %d: the decoded "
			    "text is not UTF-8\n", lineno);
			return 1;
		}
		printf("%s\n", out);
		free(out);
		json_decref(o);
		json_decref(s);
		ts_buf_free(&text);
		free(v);
	}
	free(line);
	fclose(f);
	tokenizer_free(t);
	return 0;
}
