/*
 * tok_encode.c - the tokenizer test driver of tests/integration/
 * tokenizers.bats: loads a tokenizer.json (tokenizer_from_json, BOS as
 * its post_processor says) and, for each line of CORPUS (a JSON string
 * per line), prints one line {"ids": [...], "text": "..."}: the ids of
 * tokenizer_encode, and the text that tokenizer_decode gives for them
 * one by one (each after the one before, as a stream decodes).
 *
 *   tok_encode [--gguf PRE] TOKENIZER.json CORPUS.jsonl
 *
 * --gguf PRE: the tokenizer is built instead as the lead's GGUF reader
 * would, with tokenizer_from_vocab: the file's tokens, types (as
 * tokenizer_from_json read them: added special tokens control, other
 * added tokens user-defined) and merges ("a b"), byte-level BPE with
 * tokenizer.ggml.pre PRE; BOS, EOS and add_bos as the file says.
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

/* A tokenizer_from_vocab copy of j (the file's tokenizer), as GGUF
 * metadata would describe it, with pre-tokenizer `pre`. */
static struct tokenizer *
as_gguf(struct tokenizer *j, const char *path, const char *pre)
{
	struct tokenizer_vocab v;
	struct tokenizer *t = NULL;
	uint32_t n = tokenizer_vocab_size(j), i;
	const char **piece = calloc(n, sizeof(*piece));
	size_t *len = calloc(n, sizeof(*len)), nm;
	int32_t *type = calloc(n, sizeof(*type));
	json_t *root = json_load_file(path, 0, NULL), *merges, *m;
	char **merge, err[512];
	size_t *mlen;

	merges = json_object_get(json_object_get(root, "model"), "merges");
	nm = json_array_size(merges);
	merge = calloc(nm + 1, sizeof(*merge));
	mlen = calloc(nm + 1, sizeof(*mlen));
	if (piece == NULL || len == NULL || type == NULL || merge == NULL ||
	    mlen == NULL || root == NULL)
		abort();
	for (i = 0; i < n; i++) {
		piece[i] = tokenizer_piece(j, i, &len[i]);
		type[i] = tokenizer_token_type(j, i);
	}
	json_array_foreach(merges, i, m) {
		const char *a = json_string_value(m);
		char *s;

		if (a != NULL)
			s = strdup(a);
		else {
			const char *l = json_string_value(json_array_get(m, 0));
			const char *r = json_string_value(json_array_get(m, 1));

			s = malloc(strlen(l) + strlen(r) + 2);
			if (s != NULL)
				sprintf(s, "%s %s", l, r);
		}
		if (s == NULL)
			abort();
		merge[i] = s;
		mlen[i] = strlen(s);
	}
	memset(&v, 0, sizeof(v));
	v.kind = tokenizer_kind(j);
	v.n = n;
	v.piece = piece;
	v.piece_len = len;
	v.type = type;
	v.merge = (const char *const *)merge;
	v.merge_len = mlen;
	v.n_merges = (uint32_t)nm;
	v.pre = pre;
	v.bos = tokenizer_bos(j);
	v.eos = tokenizer_eos(j);
	v.unk = v.pad = TOKENIZER_NONE;
	v.add_bos = tokenizer_add_bos(j);
	if (tokenizer_from_vocab(&t, &v, err, sizeof(err)) != TS_OK)
		fprintf(stderr, "tok_encode: --gguf %s: %s\n", pre, err);
	for (i = 0; i < nm; i++)
		free(merge[i]);
	free(merge);
	free(mlen);
	free(piece);
	free(len);
	free(type);
	json_decref(root);
	return t;
}

int
main(int argc, char **argv)
{
	const char *pre = NULL;
	struct tokenizer *t;
	char err[512], *line = NULL;
	size_t cap = 0;
	ssize_t got;
	FILE *f;
	int lineno = 0;

	if (argc == 5 && strcmp(argv[1], "--gguf") == 0) {
		pre = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: tok_encode [--gguf PRE] "
		    "TOKENIZER.json CORPUS.jsonl\n");
		return 2;
	}
	if (tokenizer_from_json(&t, argv[1], -1, err, sizeof(err)) != TS_OK) {
		fprintf(stderr, "tok_encode: %s\n", err);
		return 1;
	}
	if (pre != NULL) {
		struct tokenizer *g = as_gguf(t, argv[1], pre);

		tokenizer_free(t);
		if (g == NULL)
			return 1;
		t = g;
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
