/*
 * model/tok_vocab.c - a tokenizer from a model's vocabulary: GGUF's
 * tokenizer.ggml.* arrays (tokenizer_from_vocab) or what tok_json.c read
 * from a tokenizer.json (tok_build). Checks every piece and merge, builds
 * the piece hash, the merge table, the byte tokens, the list of tokens
 * split out of the text, each token's decoded text, and compiles the
 * pre-tokenizer's regexes. See tokenizer.h and tok_int.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "model/tokenizer.h"
#include "model/tok_int.h"

#include "text/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* GPT-2's pattern (openai/gpt-2 encoder.py; tokenizers ByteLevel). */
const char tok_gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+"
    "|\\s+(?!\\S)|\\s+";

/* Llama 3's (tokenizer.json of Meta-Llama-3; llama-vocab.cpp LLAMA3). */
static const char llama3_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
    "|\\s+(?!\\S)|\\s+";

/* Qwen 2's (llama-vocab.cpp QWEN2). */
static const char qwen2_regex[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* llama-vocab.cpp's GPT-2 set without the trailing \s+ (SMOLLM, DEFAULT). */
static const char gpt2_short_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+"
    "|\\s+(?!\\S)";

int
tok_pre_regexes(const char *name, struct tok_opts *o)
{
	o->nregex = 0;
	o->ignore_merges = 0;
	if (name == NULL || strcmp(name, "default") == 0) {
		/* llama-vocab.cpp LLAMA_VOCAB_PRE_TYPE_DEFAULT */
		o->regex[0] = "[\\p{P}\\$\\+<=>\\^~\\|]+";
		o->regex[1] = gpt2_short_regex;
		o->regex[2] = "\\p{N}+";
		o->regex[3] = "[0-9][0-9][0-9]";
		o->nregex = 4;
	} else if (strcmp(name, "llama-bpe") == 0 ||
	    strcmp(name, "llama3") == 0 || strcmp(name, "llama-v3") == 0) {
		o->regex[0] = llama3_regex;
		o->nregex = 1;
		o->ignore_merges = 1;
	} else if (strcmp(name, "gpt2") == 0 || strcmp(name, "gpt-2") == 0) {
		o->regex[0] = tok_gpt2_regex;
		o->nregex = 1;
	} else if (strcmp(name, "qwen2") == 0) {
		o->regex[0] = qwen2_regex;
		o->nregex = 1;
	} else if (strcmp(name, "smollm") == 0) {
		o->regex[0] = "\\p{N}";
		o->regex[1] = gpt2_short_regex;
		o->nregex = 2;
	} else {
		return 0;
	}
	return 1;
}

/* GPT-2's bytes_to_unicode: the code point byte b stands for. */
static unsigned
byte_char(unsigned b)
{
	unsigned k = 0, i;

	if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
		return b;
	for (i = 0; i < b; i++)
		if (!((i >= 33 && i <= 126) || (i >= 161 && i <= 172) ||
		    i >= 174))
			k++;
	return 256 + k;
}

/* UTF-8 of code point c (< 0x800) into p; its length. */
static size_t
put_cp(char *p, unsigned c)
{
	if (c < 0x80) {
		p[0] = (char)c;
		return 1;
	}
	p[0] = (char)(0xC0 | (c >> 6));
	p[1] = (char)(0x80 | (c & 0x3F));
	return 2;
}

/* Code points of byte-level characters: 0..255 and 256..323. */
#define TOK_BYTE_CHARS 324

/* The byte that the 2-byte or 1-byte character at p stands for in a
 * byte-level piece, or -1; *n its length. inv: code point -> byte + 1. */
static int
char_byte(const unsigned char *p, size_t left, size_t *n,
    const short *inv)
{
	unsigned c;

	if (p[0] < 0x80) {
		c = p[0];
		*n = 1;
	} else if ((p[0] & 0xE0) == 0xC0 && left >= 2) {
		c = (unsigned)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
		*n = 2;
	} else {
		return -1;
	}
	return c < TOK_BYTE_CHARS ? inv[c] - 1 : -1;
}

/* Length of the UTF-8 sequence at p (valid input) from its lead byte. */
static size_t
seq_len(unsigned char c)
{
	return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Fills t->dblob with each id's text in a stream (see tokenizer_decode). */
static void
build_decoded(struct tokenizer *t, size_t bytes)
{
	static const char ws[] = "\xE2\x96\x81";
	uint32_t i;
	size_t d = 0;
	short inv[TOK_BYTE_CHARS] = { 0 };

	for (i = 0; i < 256; i++)
		inv[byte_char(i)] = (short)(i + 1);
	t->doff = xmalloc(t->vocab_size * sizeof(*t->doff));
	t->dlen = xmalloc(t->vocab_size * sizeof(*t->dlen));
	t->dblob = xmalloc(bytes + 1);
	for (i = 0; i < t->vocab_size; i++) {
		const unsigned char *p =
		    (const unsigned char *)t->blob + t->off[i];
		size_t n = t->len[i], j, cl;
		int ty = t->type[i], b;

		t->doff[i] = (uint32_t)d;
		if (ty == TOKENIZER_TYPE_CONTROL ||
		    ty == TOKENIZER_TYPE_UNKNOWN ||
		    ty == TOKENIZER_TYPE_UNUSED) {
			n = 0;
		} else if (ty == TOKENIZER_TYPE_BYTE &&
		    (b = tok_byte_piece((const char *)p, n)) >= 0) {
			t->dblob[d++] = (char)b;
		} else if (ty == TOKENIZER_TYPE_USER_DEFINED) {
			memcpy(t->dblob + d, p, n);
			d += n;
		} else if (t->kind == TOKENIZER_SPM) {
			for (j = 0; j < n; j++) {
				if (n - j >= 3 && memcmp(p + j, ws, 3) == 0) {
					t->dblob[d++] = ' ';
					j += 2;
				} else {
					t->dblob[d++] = (char)p[j];
				}
			}
		} else {
			for (j = 0; j < n; j += cl) {
				b = char_byte(p + j, n - j, &cl, inv);
				if (b >= 0) {
					t->dblob[d++] = (char)b;
				} else {
					cl = seq_len(p[j]);
					if (cl > n - j)
						cl = n - j;
					memcpy(t->dblob + d, p + j, cl);
					d += cl;
				}
			}
		}
		t->dlen[i] = (uint32_t)(d - t->doff[i]);
	}
}

/* by first byte, then longest first (the longest match wins), then id */
static int
added_cmp(const void *a, const void *b)
{
	const struct tok_added *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void
build_added(struct tokenizer *t, const struct tok_opts *o)
{
	uint32_t i, k = 0, b;

	for (i = 0; i < t->vocab_size; i++) {
		int ty = t->type[i];
		int is = o->added != NULL ? o->added[i] :
		    (ty == TOKENIZER_TYPE_UNKNOWN ||
		    ty == TOKENIZER_TYPE_CONTROL ||
		    ty == TOKENIZER_TYPE_USER_DEFINED);

		if (is && t->len[i] > 0)
			k++;
	}
	t->added = xcalloc(k + 1, sizeof(*t->added));
	for (i = 0, k = 0; i < t->vocab_size; i++) {
		int ty = t->type[i];
		int is = o->added != NULL ? o->added[i] :
		    (ty == TOKENIZER_TYPE_UNKNOWN ||
		    ty == TOKENIZER_TYPE_CONTROL ||
		    ty == TOKENIZER_TYPE_USER_DEFINED);

		if (!is || t->len[i] == 0)
			continue;
		t->added[k].id = i;
		t->added[k].off = t->off[i];
		t->added[k].len = t->len[i];
		t->added[k].first = (uint8_t)t->blob[t->off[i]];
		t->added[k].lstrip = o->strip != NULL && (o->strip[i] & 1);
		t->added[k].rstrip = o->strip != NULL && (o->strip[i] & 2);
		k++;
	}
	t->nadded = k;
	qsort(t->added, k, sizeof(*t->added), added_cmp);
	for (b = 0, i = 0; b < 256; b++) {
		t->added_at[b] = i;
		while (i < k && t->added[i].first == b)
			i++;
	}
	t->added_at[256] = k;
}

/* Splits merge i into its two pieces. */
static int
merge_parts(const struct tokenizer_vocab *v, const struct tok_opts *o,
    uint32_t i, const char **l, size_t *ll, const char **r, size_t *rl)
{
	const char *s = v->merge[i], *sp;
	size_t n = v->merge_len[i];

	if (s == NULL)
		return 0;
	if (o->merge_right != NULL) {
		*l = s;
		*ll = n;
		*r = o->merge_right[i];
		*rl = o->merge_right_len[i];
		return *r != NULL;
	}
	sp = memchr(s, ' ', n);
	if (sp == NULL || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
		return 0;
	*l = s;
	*ll = (size_t)(sp - s);
	*r = sp + 1;
	*rl = n - *ll - 1;
	return 1;
}

static enum ts_err
build_merges(struct tokenizer *t, const struct tokenizer_vocab *v,
    const struct tok_opts *o, char *err, size_t errlen)
{
	uint32_t i, nslots;
	char *buf = xmalloc(2 * (size_t)TOKENIZER_MAX_TOKEN_LENGTH + 1);

	for (nslots = 1024; nslots < 2 * v->n_merges; nslots *= 2)
		;
	t->pair_key = xmalloc(nslots * sizeof(*t->pair_key));
	memset(t->pair_key, 0xFF, nslots * sizeof(*t->pair_key));
	t->pair_rank = xmalloc(nslots * sizeof(*t->pair_rank));
	t->pair_id = xmalloc(nslots * sizeof(*t->pair_id));
	t->pair_mask = nslots - 1;
	for (i = 0; i < v->n_merges; i++) {
		const char *l, *r;
		size_t ll, rl;
		int64_t a, b, c;
		uint64_t key;
		uint32_t h, rank, id;

		if (!merge_parts(v, o, i, &l, &ll, &r, &rl)) {
			snprintf(err, errlen, "merge %u is not two pieces "
			    "\"a b\"", i);
			goto fail;
		}
		a = tok_lookup(t, l, ll);
		b = tok_lookup(t, r, rl);
		if (a < 0 || b < 0) {
			snprintf(err, errlen, "merge %u names \"%.*s\", "
			    "which is not in the vocabulary", i,
			    (int)(a < 0 ? (ll > 40 ? 40 : ll) :
			    (rl > 40 ? 40 : rl)), a < 0 ? l : r);
			goto fail;
		}
		if (ll + rl > 2 * (size_t)TOKENIZER_MAX_TOKEN_LENGTH)
			c = -1;
		else {
			memcpy(buf, l, ll);
			memcpy(buf + ll, r, rl);
			c = tok_lookup(t, buf, ll + rl);
		}
		if (c < 0) {
			snprintf(err, errlen, "merge %u (\"%.*s\" + "
			    "\"%.*s\"): the merged piece is not in the "
			    "vocabulary", i,
			    (int)(ll > 40 ? 40 : ll), l,
			    (int)(rl > 40 ? 40 : rl), r);
			goto fail;
		}
		if (tok_pair_find(t, (uint32_t)a, (uint32_t)b, &rank, &id))
			continue;   /* a repeated merge keeps its first rank */
		key = (uint64_t)a << 32 | (uint64_t)b;
		for (h = (uint32_t)tok_hash_bytes(&key, sizeof(key)) &
		    t->pair_mask; t->pair_key[h] != UINT64_MAX;
		    h = (h + 1) & t->pair_mask)
			;
		t->pair_key[h] = key;
		t->pair_rank[h] = i;
		t->pair_id[h] = (uint32_t)c;
	}
	free(buf);
	return TS_OK;
fail:
	free(buf);
	return TS_EFORMAT;
}

static enum ts_err
compile_regexes(struct tokenizer *t, const struct tok_opts *o, char *err,
    size_t errlen)
{
	unsigned i;

	for (i = 0; i < o->nregex && i < TOK_MAX_REGEX; i++) {
		int code;
		PCRE2_SIZE at;
		pcre2_code *re = pcre2_compile((PCRE2_SPTR)o->regex[i],
		    PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at,
		    NULL);

		if (re == NULL) {
			PCRE2_UCHAR msg[160];

			pcre2_get_error_message(code, msg, sizeof(msg));
			snprintf(err, errlen, "pre-tokenizer regex %u: %s at "
			    "offset %zu", i, (const char *)msg, (size_t)at);
			return TS_EFORMAT;
		}
		t->re[t->nre++] = re;
	}
	return TS_OK;
}

/* Checks what v says of each token; the total of their bytes. */
static enum ts_err
check_tokens(const struct tokenizer_vocab *v, const struct tok_opts *o,
    size_t *bytes, char *err, size_t errlen)
{
	uint32_t i;

	*bytes = 0;
	for (i = 0; i < v->n; i++) {
		size_t n = v->piece_len[i];

		if (n > TOKENIZER_MAX_TOKEN_LENGTH) {
			snprintf(err, errlen, "token %u is %zu bytes, over "
			    "%u", i, n, TOKENIZER_MAX_TOKEN_LENGTH);
			return TS_EFORMAT;
		}
		if (n > 0 && (v->piece[i] == NULL ||
		    !utf8_valid(v->piece[i], n))) {
			snprintf(err, errlen, "token %u is not valid UTF-8",
			    i);
			return TS_EFORMAT;
		}
		if (v->score != NULL && !isfinite(v->score[i])) {
			snprintf(err, errlen, "token %u: score is not a "
			    "finite number", i);
			return TS_EFORMAT;
		}
		if (v->type != NULL && (v->type[i] < TOKENIZER_TYPE_NORMAL ||
		    v->type[i] > TOKENIZER_TYPE_BYTE)) {
			snprintf(err, errlen, "token %u has type %d, not "
			    "1..6", i, (int)v->type[i]);
			return TS_EFORMAT;
		}
		*bytes += n;
	}
	if (v->kind == TOKENIZER_SPM && !o->by_rank && v->score == NULL) {
		snprintf(err, errlen, "a SentencePiece vocabulary needs "
		    "scores");
		return TS_EFORMAT;
	}
	return TS_OK;
}

enum ts_err
tok_build(struct tokenizer **out, const struct tokenizer_vocab *v,
    const struct tok_opts *o, char *err, size_t errlen)
{
	struct tokenizer *t;
	size_t bytes, off = 0;
	uint32_t i, nslots, maxlen = 1;
	const uint32_t ids[4] = { v->bos, v->eos, v->unk, v->pad };
	static const char *const idname[4] = { "bos", "eos", "unk", "pad" };
	enum ts_err rc;

	*out = NULL;
	if (v->kind != TOKENIZER_SPM && v->kind != TOKENIZER_BPE) {
		snprintf(err, errlen, "tokenizer kind %d is neither "
		    "SentencePiece nor byte-level BPE", v->kind);
		return TS_EFORMAT;
	}
	if (v->n < 1 || v->n > TOKENIZER_MAX_VOCAB) {
		snprintf(err, errlen, "%u tokens: outside 1..%u", v->n,
		    TOKENIZER_MAX_VOCAB);
		return TS_EFORMAT;
	}
	if (v->n_merges > TOKENIZER_MAX_MERGES ||
	    (v->n_merges > 0 && v->merge == NULL)) {
		snprintf(err, errlen, "%u merges: more than %u", v->n_merges,
		    TOKENIZER_MAX_MERGES);
		return TS_EFORMAT;
	}
	for (i = 0; i < 4; i++) {
		if (ids[i] != TOKENIZER_NONE && ids[i] >= v->n) {
			snprintf(err, errlen, "%s id %u is not below the %u "
			    "tokens", idname[i], ids[i], v->n);
			return TS_EFORMAT;
		}
	}
	rc = check_tokens(v, o, &bytes, err, errlen);
	if (rc != TS_OK)
		return rc;

	t = xcalloc(1, sizeof(*t));
	t->vocab_size = v->n;
	t->kind = v->kind;
	t->scores = xcalloc(v->n, sizeof(*t->scores));
	t->off = xmalloc(v->n * sizeof(*t->off));
	t->len = xmalloc(v->n * sizeof(*t->len));
	t->type = xmalloc(v->n);
	t->blob = xmalloc(bytes + 1);
	for (nslots = 1024; nslots < 2 * v->n; nslots *= 2)
		;
	t->slots = xcalloc(nslots, sizeof(*t->slots));
	t->mask = nslots - 1;
	for (i = 0; i < v->n; i++) {
		size_t n = v->piece_len[i];

		t->off[i] = (uint32_t)off;
		t->len[i] = (uint32_t)n;
		if (n > 0)
			memcpy(t->blob + off, v->piece[i], n);
		off += n;
		if (n > maxlen)
			maxlen = (uint32_t)n;
		if (v->score != NULL)
			t->scores[i] = v->score[i];
		t->type[i] = v->type != NULL ? (uint8_t)v->type[i] :
		    TOKENIZER_TYPE_NORMAL;
		if (n > 0)
			tok_hash_add(t, i);
	}
	t->max_token_length = maxlen;
	t->bos = v->bos;
	t->eos = v->eos;
	t->unk = v->unk;
	t->pad = v->pad;
	t->add_bos = v->add_bos != 0;
	t->add_eos = v->add_eos != 0;
	t->by_rank = v->kind == TOKENIZER_BPE || o->by_rank;
	t->ignore_merges = o->ignore_merges;
	t->prepend = o->prepend;
	t->prepend_meta = o->prepend_meta;
	t->split_ws = o->split_ws;
	t->fuse_unk = o->fuse_unk;
	t->space_id = TOKENIZER_NONE;

	for (i = 0; i < 256; i++) {
		char s[8];
		int64_t id;

		if (v->kind == TOKENIZER_SPM) {
			snprintf(s, sizeof(s), "<0x%02X>", i);
			id = tok_lookup(t, s, 6);
		} else {
			id = tok_lookup(t, s, put_cp(s, byte_char(i)));
			if (id < 0) {
				snprintf(err, errlen, "byte-level vocabulary "
				    "has no token for byte 0x%02X", i);
				tokenizer_free(t);
				return TS_EFORMAT;
			}
		}
		t->byte_id[i] = id < 0 ? TOKENIZER_NONE : (uint32_t)id;
	}
	if (t->by_rank) {
		rc = build_merges(t, v, o, err, errlen);
		if (rc == TS_OK)
			rc = compile_regexes(t, o, err, errlen);
		if (rc != TS_OK) {
			tokenizer_free(t);
			return rc;
		}
	}
	build_added(t, o);
	build_decoded(t, bytes);
	*out = t;
	return TS_OK;
}

enum ts_err
tokenizer_from_vocab(struct tokenizer **out, const struct tokenizer_vocab *v,
    char *err, size_t errlen)
{
	struct tok_opts o;

	memset(&o, 0, sizeof(o));
	*out = NULL;
	if (v->kind == TOKENIZER_BPE && !tok_pre_regexes(v->pre, &o)) {
		snprintf(err, errlen, "unknown pre-tokenizer \"%.60s\" "
		    "(tokenizer.ggml.pre; known: llama-bpe, llama3, gpt2, "
		    "qwen2, smollm, default)", v->pre);
		return TS_EFORMAT;
	}
	if (v->kind == TOKENIZER_SPM)
		o.prepend = v->add_space_prefix ? TOK_PREPEND_ALWAYS :
		    TOK_PREPEND_NONE;
	return tok_build(out, v, &o, err, errlen);
}
