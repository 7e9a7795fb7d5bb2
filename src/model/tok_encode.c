/*
 * model/tok_encode.c - encoding with a model's own tokenizer (tokenizer.h
 * "the model's own tokenizer"), after Hugging Face tokenizers
 * (tokenizer/mod.rs encode: added tokens split out first, then normalizer,
 * pre-tokenizer and model on each remaining segment; models/bpe/word.rs
 * merge_all) and llama.cpp src/llama-vocab.cpp (tokenizer_st_partition,
 * llm_tokenizer_spm, llm_tokenizer_bpe).
 *
 * SPM: each segment between added tokens gets its leading U+2581 (as the
 * file says), spaces become U+2581, each character its piece or its bytes'
 * <0xHH> tokens (else the unknown token, one for a run of them with
 * fuse_unk), and
 * the symbols are merged by score or merge rank.
 * BPE: each segment's valid UTF-8 runs are split by the regexes in turn
 * (a regex's matches and the gaps between them are pieces: Split
 * "Isolated"), each invalid byte is a piece of its own; a piece's bytes
 * are their byte-level tokens, merged by rank (or, with ignore_merges,
 * taken whole when the vocabulary has the whole piece).
 */
#define _POSIX_C_SOURCE 200809L
#include "model/tokenizer.h"
#include "model/tok_int.h"

#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* PCRE2's backtracking budget per match, and the memory it may take for
 * it (KiB; PCRE2's own default is 20 GB): far above what the known
 * pre-tokenizer patterns need, so only a pathological one hits them. */
#define TOK_MATCH_LIMIT 10000000u
#define TOK_HEAP_LIMIT_KIB 65536u

struct tok_work {
	const struct tokenizer *t;
	uint32_t *out;
	size_t n, cap;
	struct tok_sym *sym;         /* [cap_sym] */
	struct tok_cand *heap;       /* [3 * cap_sym + 3] */
	size_t cap_sym;
	char *buf;                   /* 2 * max_token_length */
	char *scratch;               /* SPM segment, BPE byte-level word */
	pcre2_match_data *md;
	pcre2_match_context *mc;
	int failed;
};

static void
emit(struct tok_work *w, uint32_t id)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->out = xrealloc(w->out, w->cap * sizeof(*w->out));
	}
	w->out[w->n++] = id;
}

static void
need_syms(struct tok_work *w, size_t ns)
{
	if (ns <= w->cap_sym)
		return;
	free(w->sym);
	free(w->heap);
	w->cap_sym = ns < 64 ? 64 : ns;
	w->sym = xmalloc(w->cap_sym * sizeof(*w->sym));
	w->heap = xmalloc((3 * w->cap_sym + 3) * tok_cand_size());
}

/* Links sym[0..ns), merges them, emits the result. */
static void
merge_emit(struct tok_work *w, size_t ns)
{
	size_t i;
	int32_t j;

	for (i = 0; i < ns; i++) {
		w->sym[i].prev = (int32_t)i - 1;
		w->sym[i].next = i + 1 < ns ? (int32_t)i + 1 : -1;
		w->sym[i].ver = 0;
		w->sym[i].alive = 1;
	}
	tok_merge(w->t, w->sym, ns, w->heap, w->buf);
	for (j = ns > 0 ? 0 : -1; j >= 0; j = w->sym[j].next)
		emit(w, w->sym[j].id);
}

/* Length of the valid UTF-8 character at p (RFC 3629: no overlong
 * forms, surrogates or code points above U+10FFFF), 0 if invalid. */
static size_t
utf8_char(const unsigned char *p, size_t left)
{
	unsigned char c = p[0];
	size_t n, i;
	unsigned lo = 0x80, hi = 0xBF;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (left < n)
		return 0;
	for (i = 1; i < n; i++) {
		unsigned char b = p[i];

		if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF))
			return 0;
	}
	return n;
}

/* ---- SPM ------------------------------------------------------------- */

/* One word (s, n) of U+2581-escaped text: characters, then merges. */
static void
spm_word(struct tok_work *w, const char *s, size_t n)
{
	const struct tokenizer *t = w->t;
	size_t i = 0, ns = 0;
	int unk_last = 0;            /* the last character was unknown */

	need_syms(w, n);
	while (i < n) {
		size_t cl = utf8_char((const unsigned char *)s + i, n - i);
		int64_t id;
		size_t k;

		if (cl == 0)
			cl = 1;
		id = tok_lookup(t, s + i, cl);
		if (id >= 0 && t->type[id] != TOKENIZER_TYPE_CONTROL &&
		    t->type[id] != TOKENIZER_TYPE_UNUSED) {
			w->sym[ns++].id = (uint32_t)id;
			unk_last = 0;
			i += cl;
			continue;
		}
		/* byte fallback, all or nothing (models/bpe/model.rs) */
		for (k = 0; k < cl; k++)
			if (t->byte_id[(unsigned char)s[i + k]] ==
			    TOKENIZER_NONE)
				break;
		if (k == cl) {
			for (k = 0; k < cl; k++)
				w->sym[ns++].id =
				    t->byte_id[(unsigned char)s[i + k]];
		} else if (t->unk != TOKENIZER_NONE && !(t->fuse_unk &&
		    unk_last)) {
			w->sym[ns++].id = t->unk;
		}
		unk_last = k < cl;
		i += cl;
	}
	merge_emit(w, ns);
}

/* A text segment (s, n) starting at byte `at` of the input. */
static void
spm_segment(struct tok_work *w, const char *s, size_t n, size_t at)
{
	static const char ws[] = "\xE2\x96\x81";
	const struct tokenizer *t = w->t;
	char *p = w->scratch;
	size_t m = 0, i, start;

	/* Metaspace (pre_tokenizers/metaspace.rs) adds none to a segment
	 * that starts with one already; Prepend always does */
	if ((t->prepend == TOK_PREPEND_ALWAYS ||
	    (t->prepend == TOK_PREPEND_FIRST && at == 0)) &&
	    !(t->prepend_meta && (s[0] == ' ' || (n >= 3 &&
	    memcmp(s, ws, 3) == 0)))) {
		memcpy(p, ws, 3);
		m = 3;
	}
	for (i = 0; i < n; i++) {
		if (s[i] == ' ') {
			memcpy(p + m, ws, 3);
			m += 3;
		} else {
			p[m++] = s[i];
		}
	}
	if (!t->split_ws) {
		spm_word(w, p, m);
		return;
	}
	/* Metaspace split: a word starts at each U+2581 */
	for (start = 0, i = 1; i <= m; i++) {
		if (i == m || (m - i >= 3 && memcmp(p + i, ws, 3) == 0)) {
			spm_word(w, p + start, i - start);
			start = i;
		}
	}
}

/* ---- byte-level BPE ---------------------------------------------------- */

/* One pre-token (s, n) of raw bytes. */
static void
bpe_word(struct tok_work *w, const char *s, size_t n)
{
	const struct tokenizer *t = w->t;
	size_t i;

	if (n == 0)
		return;
	if (t->ignore_merges) {
		size_t m = 0;
		int64_t id;

		for (i = 0; i < n; i++) {
			uint32_t b = t->byte_id[(unsigned char)s[i]];

			memcpy(w->scratch + m, t->blob + t->off[b], t->len[b]);
			m += t->len[b];
		}
		id = tok_lookup(t, w->scratch, m);
		if (id >= 0) {
			emit(w, (uint32_t)id);
			return;
		}
	}
	need_syms(w, n);
	for (i = 0; i < n; i++)
		w->sym[i].id = t->byte_id[(unsigned char)s[i]];
	merge_emit(w, n);
}

/* Splits (s, n) (valid UTF-8) by regex k and on, down to words. */
static void
bpe_split(struct tok_work *w, unsigned k, const char *s, size_t n)
{
	const struct tokenizer *t = w->t;
	PCRE2_SIZE at = 0, last = 0, ms, me, *ov;

	if (k >= t->nre) {
		bpe_word(w, s, n);
		return;
	}
	while (at < n && !w->failed) {
		int rc = pcre2_match(t->re[k], (PCRE2_SPTR)s, n, at,
		    PCRE2_NO_UTF_CHECK, w->md, w->mc);

		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0) {
			w->failed = 1;
			return;
		}
		/* the match data is shared with the deeper regexes: copy */
		ov = pcre2_get_ovector_pointer(w->md);
		ms = ov[0];
		me = ov[1];
		if (me <= ms) {
			/* an empty match splits there (tokenizers' Pattern
			 * for a regex: the gap before it is a piece) */
			size_t cl = ms < n ? utf8_char(
			    (const unsigned char *)s + ms, n - ms) : 1;

			if (ms > last) {
				bpe_split(w, k + 1, s + last, ms - last);
				last = ms;
			}
			at = ms + (cl ? cl : 1);
			continue;
		}
		if (ms > last)
			bpe_split(w, k + 1, s + last, ms - last);
		bpe_split(w, k + 1, s + ms, me - ms);
		last = at = me;
	}
	if (last < n && !w->failed)
		bpe_split(w, k + 1, s + last, n - last);
}

static void
bpe_segment(struct tok_work *w, const char *s, size_t n)
{
	size_t i = 0, run = 0;

	while (i < n && !w->failed) {
		size_t cl = utf8_char((const unsigned char *)s + i, n - i);

		if (cl > 0) {
			i += cl;
			continue;
		}
		if (i > run)
			bpe_split(w, 0, s + run, i - run);
		bpe_word(w, s + i, 1);    /* an invalid byte alone */
		run = ++i;
	}
	if (n > run && !w->failed)
		bpe_split(w, 0, s + run, n - run);
}

/* ---- added tokens ------------------------------------------------------ */

static int
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	    c == '\f';
}

/* The leftmost, then longest, added token in text[from..len): its
 * index in t->added and start, or 0. */
static int
find_added(const struct tokenizer *t, const char *text, size_t len,
    size_t from, uint32_t *which, size_t *at)
{
	size_t i;

	if (t->nadded == 0)
		return 0;
	for (i = from; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		uint32_t k;

		for (k = t->added_at[c]; k < t->added_at[c + 1]; k++) {
			const struct tok_added *a = &t->added[k];

			if (a->len <= len - i &&
			    memcmp(text + i, t->blob + a->off, a->len) == 0) {
				*which = k;
				*at = i;
				return 1;
			}
		}
	}
	return 0;
}

static void
segment(struct tok_work *w, const char *s, size_t n, size_t at)
{
	if (n == 0)
		return;
	if (w->t->kind == TOKENIZER_SPM)
		spm_segment(w, s, n, at);
	else
		bpe_segment(w, s, n);
}

enum ts_err
tok_encode_model(const struct tokenizer *t, const char *text, size_t len,
    int bos, int eos, uint32_t **ids, size_t *n)
{
	struct tok_work w;
	size_t pos = 0, at, scratch;
	uint32_t k;

	memset(&w, 0, sizeof(w));
	w.t = t;
	w.buf = xmalloc(2 * (size_t)t->max_token_length);
	/* SPM: U+2581 for a space and a leading one; BPE: a word as
	 * byte-level characters (2 bytes each at most) */
	scratch = t->kind == TOKENIZER_SPM ? 3 * len + 3 : 2 * len;
	w.scratch = xmalloc(scratch + 1);
	if (t->nre > 0) {
		w.md = pcre2_match_data_create(8, NULL);
		w.mc = pcre2_match_context_create(NULL);
		if (w.md == NULL || w.mc == NULL)
			abort();        /* out of memory, as xmalloc */
		pcre2_set_match_limit(w.mc, TOK_MATCH_LIMIT);
		pcre2_set_heap_limit(w.mc, TOK_HEAP_LIMIT_KIB);
	}
	if (bos && t->bos != TOKENIZER_NONE)
		emit(&w, t->bos);
	while (!w.failed && find_added(t, text, len, pos, &k, &at)) {
		const struct tok_added *a = &t->added[k];
		size_t end = at + a->len, start = at;

		if (a->lstrip)
			while (start > pos && is_ws(text[start - 1]))
				start--;
		if (a->rstrip)
			while (end < len && is_ws(text[end]))
				end++;
		segment(&w, text + pos, start - pos, pos);
		emit(&w, a->id);
		pos = end;
	}
	if (!w.failed)
		segment(&w, text + pos, len - pos, pos);
	if (eos && t->eos != TOKENIZER_NONE && !w.failed)
		emit(&w, t->eos);
	free(w.sym);
	free(w.heap);
	free(w.buf);
	free(w.scratch);
	pcre2_match_data_free(w.md);
	pcre2_match_context_free(w.mc);
	if (w.failed) {
		free(w.out);
		return TS_ELIMIT;
	}
	if (w.out == NULL)
		w.out = xmalloc(sizeof(*w.out));
	*ids = w.out;
	*n = w.n;
	return TS_OK;
}
