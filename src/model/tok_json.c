/*
 * model/tok_json.c - a Hugging Face tokenizer.json as a tokenizer
 * (tokenizer_from_json in tokenizer.h). The file's shape follows the
 * serde forms of huggingface/tokenizers (tokenizers/src/tokenizer/
 * serialization.rs, models/bpe/serialization.rs, normalizers/,
 * pre_tokenizers/, processors/template.rs, decoders/); what it says is
 * turned into a struct tokenizer_vocab plus struct tok_opts for
 * tok_build. Only what tokstream implements is accepted; the rest is
 * refused by name.
 */
#define _POSIX_C_SOURCE 200809L
#include "model/tokenizer.h"
#include "model/tok_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOK_JSON_MAX_FILE (256u << 20)

struct jload {
	struct tokenizer_vocab v;
	struct tok_opts o;
	const char **piece;
	size_t *piece_len;
	int32_t *type;
	uint8_t *added, *strip;
	const char **ml, **mr;
	size_t *mll, *mrl;
	int bytelevel, spm, prepend_norm, replace_norm, metaspace;
	int tmpl_bos, tmpl_eos;      /* template's specials, or -1 */
	char *err;
	size_t errlen;
};

static const char *
type_of(json_t *o)
{
	const char *s = json_string_value(json_object_get(o, "type"));

	return s != NULL ? s : "";
}

static int
is_str(json_t *o, const char *key, const char *want)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL && strcmp(s, want) == 0;
}

/* Whether key is absent, null, or false/"" (an unset option). */
static int
unset(json_t *o, const char *key)
{
	json_t *x = json_object_get(o, key);

	return x == NULL || json_is_null(x) || json_is_false(x) ||
	    (json_is_string(x) && json_string_length(x) == 0);
}

#define REFUSE(...) do { snprintf(j->err, j->errlen, __VA_ARGS__); \
	return -1; } while (0)

static int
normalizer(struct jload *j, json_t *n)
{
	const char *ty = type_of(n);
	size_t i;
	json_t *x;

	if (n == NULL || json_is_null(n))
		return 0;
	if (strcmp(ty, "Sequence") == 0) {
		json_array_foreach(json_object_get(n, "normalizers"), i, x)
			if (normalizer(j, x) < 0)
				return -1;
		return 0;
	}
	if (strcmp(ty, "Prepend") == 0) {
		if (!is_str(n, "prepend", "\xE2\x96\x81"))
			REFUSE("normalizer Prepend of other than \"\xE2\x96"
			    "\x81\" is not supported");
		j->prepend_norm = 1;
		return 0;
	}
	if (strcmp(ty, "Replace") == 0) {
		if (!is_str(json_object_get(n, "pattern"), "String", " ") ||
		    !is_str(n, "content", "\xE2\x96\x81"))
			REFUSE("normalizer Replace other than \" \" -> "
			    "\"\xE2\x96\x81\" is not supported");
		j->replace_norm = 1;
		return 0;
	}
	REFUSE("normalizer \"%.40s\" is not supported", ty);
}

static int
add_regex(struct jload *j, const char *re)
{
	if (j->o.nregex >= TOK_MAX_REGEX)
		REFUSE("more than %d pre-tokenizer regexes", TOK_MAX_REGEX);
	j->o.regex[j->o.nregex++] = re;
	return 0;
}

static int
pre_tokenizer(struct jload *j, json_t *p)
{
	const char *ty = type_of(p);
	size_t i;
	json_t *x;

	if (p == NULL || json_is_null(p))
		return 0;
	if (strcmp(ty, "Sequence") == 0) {
		json_array_foreach(json_object_get(p, "pretokenizers"), i, x)
			if (pre_tokenizer(j, x) < 0)
				return -1;
		return 0;
	}
	if (strcmp(ty, "Split") == 0) {
		const char *re = json_string_value(json_object_get(
		    json_object_get(p, "pattern"), "Regex"));

		if (re == NULL)
			REFUSE("pre_tokenizer Split without a Regex pattern "
			    "is not supported");
		if (!is_str(p, "behavior", "Isolated") || !unset(p, "invert"))
			REFUSE("pre_tokenizer Split other than Isolated, "
			    "not inverted, is not supported");
		return add_regex(j, re);
	}
	if (strcmp(ty, "Digits") == 0) {
		/* runs of digits, or each digit, alone (pre_tokenizers/
		 * digits.rs: char::is_numeric, the categories of \p{N}) */
		return add_regex(j, json_is_true(json_object_get(p,
		    "individual_digits")) ? "\\p{N}" : "\\p{N}+");
	}
	if (strcmp(ty, "ByteLevel") == 0) {
		json_t *ur = json_object_get(p, "use_regex");

		if (!unset(p, "add_prefix_space"))
			REFUSE("pre_tokenizer ByteLevel with add_prefix_space "
			    "is not supported");
		j->bytelevel = 1;
		/* use_regex defaults to true (pre_tokenizers/byte_level.rs) */
		if (ur == NULL || json_is_true(ur))
			return add_regex(j, tok_gpt2_regex);
		return 0;
	}
	if (strcmp(ty, "Metaspace") == 0) {
		const char *scheme = json_string_value(
		    json_object_get(p, "prepend_scheme"));
		json_t *split = json_object_get(p, "split");

		if (!is_str(p, "replacement", "\xE2\x96\x81"))
			REFUSE("pre_tokenizer Metaspace with a replacement "
			    "other than \"\xE2\x96\x81\" is not supported");
		j->metaspace = 1;
		j->o.prepend_meta = 1;
		if (scheme == NULL)
			j->o.prepend = json_is_false(json_object_get(p,
			    "add_prefix_space")) ? TOK_PREPEND_NONE :
			    TOK_PREPEND_ALWAYS;
		else if (strcmp(scheme, "always") == 0)
			j->o.prepend = TOK_PREPEND_ALWAYS;
		else if (strcmp(scheme, "first") == 0)
			j->o.prepend = TOK_PREPEND_FIRST;
		else if (strcmp(scheme, "never") == 0)
			j->o.prepend = TOK_PREPEND_NONE;
		else
			REFUSE("Metaspace prepend_scheme \"%.20s\" is not "
			    "supported", scheme);
		j->o.split_ws = split == NULL || json_is_true(split);
		return 0;
	}
	REFUSE("pre_tokenizer \"%.40s\" is not supported", ty);
}

static int
decoder(struct jload *j, json_t *d)
{
	static const char *const ok[] = { "ByteLevel", "Replace",
	    "ByteFallback", "Fuse", "Strip", "Metaspace" };
	const char *ty = type_of(d);
	size_t i;
	json_t *x;

	if (d == NULL || json_is_null(d))
		return 0;
	if (strcmp(ty, "Sequence") == 0) {
		json_array_foreach(json_object_get(d, "decoders"), i, x)
			if (decoder(j, x) < 0)
				return -1;
		return 0;
	}
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(ty, ok[i]) == 0)
			return 0;
	REFUSE("decoder \"%.40s\" is not supported", ty);
}

/* The id of special token `name` of a TemplateProcessing. */
static int
template_id(struct jload *j, json_t *pp, const char *name)
{
	json_t *st = json_object_get(json_object_get(pp, "special_tokens"),
	    name);
	json_t *ids = json_object_get(st, "ids");
	json_int_t id;

	if (json_array_size(ids) != 1 ||
	    !json_is_integer(json_array_get(ids, 0)))
		REFUSE("post_processor special token \"%.40s\" is not one "
		    "id", name);
	id = json_integer_value(json_array_get(ids, 0));
	if (id < 0 || (json_int_t)id >= (json_int_t)j->v.n)
		REFUSE("post_processor special token \"%.40s\" has id "
		    "%lld, not a token", name, (long long)id);
	return (int)id;
}

static int
post_processor(struct jload *j, json_t *pp)
{
	const char *ty = type_of(pp);
	size_t i, seq = (size_t)-1;
	json_t *x, *single;

	if (pp == NULL || json_is_null(pp) || strcmp(ty, "ByteLevel") == 0)
		return 0;
	if (strcmp(ty, "Sequence") == 0) {
		json_array_foreach(json_object_get(pp, "processors"), i, x)
			if (post_processor(j, x) < 0)
				return -1;
		return 0;
	}
	if (strcmp(ty, "TemplateProcessing") != 0)
		REFUSE("post_processor \"%.40s\" is not supported", ty);
	single = json_object_get(pp, "single");
	json_array_foreach(single, i, x)
		if (json_object_get(x, "Sequence") != NULL)
			seq = i;
	if (seq == (size_t)-1)
		REFUSE("post_processor TemplateProcessing has no Sequence "
		    "in single");
	json_array_foreach(single, i, x) {
		const char *name = json_string_value(json_object_get(
		    json_object_get(x, "SpecialToken"), "id"));
		int id;

		if (name == NULL)
			continue;
		if ((id = template_id(j, pp, name)) < 0)
			return -1;
		if (i < seq && j->tmpl_bos < 0)
			j->tmpl_bos = id;
		else if (i > seq && j->tmpl_eos < 0)
			j->tmpl_eos = id;
	}
	return 0;
}

static int
grow_vocab(struct jload *j, json_int_t id)
{
	uint32_t n = (uint32_t)id + 1, old = j->v.n;

	if (id < 0 || id >= (json_int_t)TOKENIZER_MAX_VOCAB)
		REFUSE("token id %lld is outside 0..%u", (long long)id,
		    TOKENIZER_MAX_VOCAB - 1);
	if (n <= old)
		return 0;
	j->piece = xrealloc(j->piece, n * sizeof(*j->piece));
	j->piece_len = xrealloc(j->piece_len, n * sizeof(*j->piece_len));
	j->type = xrealloc(j->type, n * sizeof(*j->type));
	j->added = xrealloc(j->added, n);
	j->strip = xrealloc(j->strip, n);
	memset(j->piece + old, 0, (n - old) * sizeof(*j->piece));
	memset(j->piece_len + old, 0, (n - old) * sizeof(*j->piece_len));
	memset(j->added + old, 0, n - old);
	memset(j->strip + old, 0, n - old);
	for (; old < n; old++)
		j->type[old] = TOKENIZER_TYPE_UNUSED;
	j->v.n = n;
	return 0;
}

static int
model(struct jload *j, json_t *m)
{
	const char *key, *ty = type_of(m);
	json_t *x, *merges;
	size_t i;
	int fallback = json_is_true(json_object_get(m, "byte_fallback"));

	if (strcmp(ty, "BPE") != 0)
		REFUSE("model type \"%.40s\" is not supported (BPE only)",
		    ty);
	if (!unset(m, "dropout") || !unset(m, "continuing_subword_prefix") ||
	    !unset(m, "end_of_word_suffix"))
		REFUSE("BPE dropout, continuing_subword_prefix and "
		    "end_of_word_suffix are not supported");
	if (!json_is_object(json_object_get(m, "vocab")))
		REFUSE("model has no vocab object");
	json_object_foreach(json_object_get(m, "vocab"), key, x) {
		json_int_t id = json_integer_value(x);

		if (!json_is_integer(x) || grow_vocab(j, id) < 0)
			REFUSE("vocab entry \"%.40s\" has no valid id", key);
		if (j->type[id] != TOKENIZER_TYPE_UNUSED)
			REFUSE("vocab id %lld is given twice", (long long)id);
		j->piece[id] = key;
		j->piece_len[id] = strlen(key);
		j->type[id] = fallback && tok_byte_piece(key,
		    strlen(key)) >= 0 ? TOKENIZER_TYPE_BYTE :
		    TOKENIZER_TYPE_NORMAL;
	}
	j->o.ignore_merges = json_is_true(json_object_get(m, "ignore_merges"));
	j->o.fuse_unk = json_is_true(json_object_get(m, "fuse_unk"));
	merges = json_object_get(m, "merges");
	if (merges != NULL && !json_is_array(merges))
		REFUSE("model merges is not an array");
	if (json_array_size(merges) > TOKENIZER_MAX_MERGES)
		REFUSE("%zu merges: more than %u", json_array_size(merges),
		    TOKENIZER_MAX_MERGES);
	j->v.n_merges = (uint32_t)json_array_size(merges);
	j->ml = xcalloc(j->v.n_merges + 1, sizeof(*j->ml));
	j->mr = xcalloc(j->v.n_merges + 1, sizeof(*j->mr));
	j->mll = xcalloc(j->v.n_merges + 1, sizeof(*j->mll));
	j->mrl = xcalloc(j->v.n_merges + 1, sizeof(*j->mrl));
	json_array_foreach(merges, i, x) {
		const char *s = json_string_value(x), *sp;

		if (s != NULL) {
			/* "a b": split at the one space (serialization.rs) */
			sp = strchr(s, ' ');
			if (sp == NULL || strchr(sp + 1, ' ') != NULL)
				REFUSE("merge %zu \"%.40s\" is not \"a b\"", i,
				    s);
			j->ml[i] = s;
			j->mll[i] = (size_t)(sp - s);
			j->mr[i] = sp + 1;
			j->mrl[i] = strlen(sp + 1);
		} else if (json_array_size(x) == 2 &&
		    json_is_string(json_array_get(x, 0)) &&
		    json_is_string(json_array_get(x, 1))) {
			j->ml[i] = json_string_value(json_array_get(x, 0));
			j->mll[i] = json_string_length(json_array_get(x, 0));
			j->mr[i] = json_string_value(json_array_get(x, 1));
			j->mrl[i] = json_string_length(json_array_get(x, 1));
		} else {
			REFUSE("merge %zu is neither \"a b\" nor [\"a\", "
			    "\"b\"]", i);
		}
	}
	return 0;
}

static int
added_tokens(struct jload *j, json_t *a)
{
	size_t i;
	json_t *x;

	json_array_foreach(a, i, x) {
		json_t *idv = json_object_get(x, "id");
		json_t *c = json_object_get(x, "content");
		json_int_t id = json_integer_value(idv);

		if (!json_is_integer(idv) || !json_is_string(c) ||
		    json_string_length(c) == 0)
			REFUSE("added token %zu has no id or content", i);
		if (json_is_true(json_object_get(x, "single_word")))
			REFUSE("added token \"%.40s\": single_word is not "
			    "supported", json_string_value(c));
		if (grow_vocab(j, id) < 0)
			return -1;
		j->piece[id] = json_string_value(c);
		j->piece_len[id] = json_string_length(c);
		j->type[id] = json_is_true(json_object_get(x, "special")) ?
		    TOKENIZER_TYPE_CONTROL : TOKENIZER_TYPE_USER_DEFINED;
		j->added[id] = 1;
		j->strip[id] = (uint8_t)(json_is_true(json_object_get(x,
		    "lstrip")) | json_is_true(json_object_get(x,
		    "rstrip")) << 1);
	}
	return 0;
}

/* The lowest id of the first of names that is a token, or NONE. */
static uint32_t
first_of(const struct jload *j, const char *const *names)
{
	uint32_t i;

	for (; *names != NULL; names++)
		for (i = 0; i < j->v.n; i++)
			if (j->piece[i] != NULL &&
			    j->piece_len[i] == strlen(*names) &&
			    memcmp(j->piece[i], *names, j->piece_len[i]) == 0)
				return i;
	return TOKENIZER_NONE;
}

static int
read_all(struct jload *j, json_t *root, int add_bos)
{
	static const char *const bos_names[] = { "<s>",
	    "<|begin_of_text|>", NULL };
	static const char *const eos_names[] = { "</s>", "<|end_of_text|>",
	    "<|endoftext|>", NULL };
	json_t *m = json_object_get(root, "model");
	const char *unk;

	if (!json_is_object(m))
		REFUSE("no model object");
	if (model(j, m) < 0 ||
	    added_tokens(j, json_object_get(root, "added_tokens")) < 0 ||
	    normalizer(j, json_object_get(root, "normalizer")) < 0 ||
	    pre_tokenizer(j, json_object_get(root, "pre_tokenizer")) < 0 ||
	    decoder(j, json_object_get(root, "decoder")) < 0 ||
	    post_processor(j, json_object_get(root, "post_processor")) < 0)
		return -1;
	if (j->v.n == 0)
		REFUSE("the vocabulary is empty");
	if (j->bytelevel) {
		if (j->prepend_norm || j->replace_norm || j->metaspace)
			REFUSE("ByteLevel mixed with SentencePiece-style "
			    "normalizers is not supported");
		j->v.kind = TOKENIZER_BPE;
	} else if (j->replace_norm || j->metaspace) {
		if (j->o.nregex > 0)
			REFUSE("Split with a SentencePiece-style tokenizer "
			    "is not supported");
		j->v.kind = TOKENIZER_SPM;
		j->o.by_rank = 1;
		if (j->prepend_norm)
			j->o.prepend = TOK_PREPEND_ALWAYS;
	} else {
		REFUSE("neither a ByteLevel pre_tokenizer nor a "
		    "SentencePiece-style normalizer or Metaspace: not "
		    "supported");
	}
	unk = json_string_value(json_object_get(m, "unk_token"));
	if (unk != NULL) {
		const char *names[2] = { unk, NULL };

		j->v.unk = first_of(j, names);
	}
	j->v.bos = j->tmpl_bos >= 0 ? (uint32_t)j->tmpl_bos :
	    first_of(j, bos_names);
	j->v.eos = j->tmpl_eos >= 0 ? (uint32_t)j->tmpl_eos :
	    first_of(j, eos_names);
	j->v.add_bos = add_bos >= 0 ? add_bos : j->tmpl_bos >= 0;
	j->v.add_eos = j->tmpl_eos >= 0;
	return 0;
}

enum ts_err
tokenizer_from_json(struct tokenizer **out, const char *path, int add_bos,
    char *err, size_t errlen)
{
	struct jload j;
	struct stat st;
	json_error_t jerr;
	json_t *root;
	char why[400];
	enum ts_err rc = TS_EFORMAT;

	*out = NULL;
	if (stat(path, &st) != 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path,
		    strerror(errno));
		return TS_ESYS;
	}
	if (st.st_size > (off_t)TOK_JSON_MAX_FILE) {
		snprintf(err, errlen, "%s: larger than %u bytes", path,
		    TOK_JSON_MAX_FILE);
		return TS_ELIMIT;
	}
	root = json_load_file(path, 0, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "%s: line %d: %s", path, jerr.line,
		    jerr.text);
		return errno == ENOENT ? TS_ESYS : TS_EFORMAT;
	}
	memset(&j, 0, sizeof(j));
	j.tmpl_bos = j.tmpl_eos = -1;
	j.v.bos = j.v.eos = j.v.unk = j.v.pad = TOKENIZER_NONE;
	j.err = why;
	j.errlen = sizeof(why);
	if (!json_is_object(root))
		snprintf(why, sizeof(why), "not a JSON object");
	else if (read_all(&j, root, add_bos) == 0) {
		j.v.piece = j.piece;
		j.v.piece_len = j.piece_len;
		j.v.type = j.type;
		j.v.merge = j.ml;
		j.v.merge_len = j.mll;
		j.o.merge_right = j.mr;
		j.o.merge_right_len = j.mrl;
		j.o.added = j.added;
		j.o.strip = j.strip;
		rc = tok_build(out, &j.v, &j.o, why, sizeof(why));
	}
	if (rc != TS_OK)
		snprintf(err, errlen, "%s: %s", path, why);
	free(j.piece);
	free(j.piece_len);
	free(j.type);
	free(j.added);
	free(j.strip);
	free(j.ml);
	free(j.mr);
	free(j.mll);
	free(j.mrl);
	json_decref(root);
	return rc;
}
