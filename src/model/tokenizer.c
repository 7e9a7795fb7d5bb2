/*
 * model/tokenizer.c - llama2.c's tokenizer.bin: parsing, BPE encoding with byte
 * fallback, decoding (see tokenizer.h; after run.c build_tokenizer,
 * encode and decode).
 *
 * run.c merges by rescanning every adjacent pair after each merge
 * (quadratic in the prompt). Here the symbols form a linked list and the
 * candidate merges a heap ordered by (score desc, left position asc),
 * entries checked against version numbers when popped: the same merges
 * in the same order, in O(n log n).
 */
#define _POSIX_C_SOURCE 200809L
#include "model/tokenizer.h"
#include "model/tok_int.h"

#include "text/utf8.h"

#include <errno.h>
#include <math.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

/* run.c's best_score starts at -1e10: a merge must score above it. */
#define TOKENIZER_MIN_SCORE -1e10f
#define TOKENIZER_MAX_FILE (1u << 30)


uint64_t
tok_hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;   /* FNV-1a 64 */
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

int64_t
tok_lookup(const struct tokenizer *t, const char *s, size_t n)
{
	uint32_t i = (uint32_t)tok_hash_bytes(s, n) & t->mask;

	for (;; i = (i + 1) & t->mask) {
		uint32_t v = t->slots[i];

		if (v == 0)
			return -1;
		v--;
		if (t->len[v] == n && memcmp(t->blob + t->off[v], s, n) == 0)
			return v;
	}
}

void
tok_hash_add(struct tokenizer *t, uint32_t id)
{
	const char *s = t->blob + t->off[id];
	size_t n = t->len[id];
	uint32_t h;

	/* the first id of a piece wins, as a linear search would */
	if (tok_lookup(t, s, n) >= 0)
		return;
	for (h = (uint32_t)tok_hash_bytes(s, n) & t->mask; t->slots[h] != 0;
	    h = (h + 1) & t->mask)
		;
	t->slots[h] = id + 1;
}

/* Strict: six characters, two hex digits of either case. */
int
tok_byte_piece(const char *s, size_t n)
{
	int v = 0, i;

	if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
		return -1;
	for (i = 3; i < 5; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else
			return -1;
	}
	return v;
}

static int32_t
get_i32(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static float
get_f32(const unsigned char *p)
{
	float v;

	memcpy(&v, p, sizeof(v));
	return v;
}

void
tokenizer_free(struct tokenizer *t)
{
	unsigned i;

	if (t == NULL)
		return;
	free(t->scores);
	free(t->off);
	free(t->len);
	free(t->blob);
	free(t->doff);
	free(t->dlen);
	free(t->dblob);
	free(t->slots);
	free(t->type);
	free(t->pair_key);
	free(t->pair_rank);
	free(t->pair_id);
	free(t->added);
	for (i = 0; i < t->nre; i++)
		pcre2_code_free(t->re[i]);
	free(t);
}

enum ts_err
tokenizer_load(struct tokenizer **out, const void *data, size_t len,
    uint32_t vocab_size, char *err, size_t errlen)
{
	const unsigned char *p = data;
	struct tokenizer *t;
	size_t off, bytes = 0, dbytes = 0;
	uint32_t count = 0, i, nslots;
	int32_t maxlen;

	*out = NULL;
	if (vocab_size < TOKENIZER_MIN_VOCAB ||
	    vocab_size > TOKENIZER_MAX_VOCAB) {
		snprintf(err, errlen, "vocab_size %u is outside %u..%u (the "
		    "3 specials and 256 byte tokens at least)", vocab_size,
		    TOKENIZER_MIN_VOCAB, TOKENIZER_MAX_VOCAB);
		return TS_EFORMAT;
	}
	if (len < 4) {
		snprintf(err, errlen, "truncated: %zu bytes, no "
		    "max_token_length", len);
		return TS_EFORMAT;
	}
	maxlen = get_i32(p);
	if (maxlen <= 0 || (uint32_t)maxlen > TOKENIZER_MAX_TOKEN_LENGTH) {
		snprintf(err, errlen, "max_token_length %d is outside 1..%u",
		    maxlen, TOKENIZER_MAX_TOKEN_LENGTH);
		return TS_EFORMAT;
	}

	/* first pass: check every record and count them */
	for (off = 4; off < len; count++) {
		int32_t n;
		float score;

		if (len - off < 8) {
			snprintf(err, errlen, "truncated in token %u at "
			    "offset %zu: %zu bytes left of its 8-byte score "
			    "and length", count, off, len - off);
			return TS_EFORMAT;
		}
		score = get_f32(p + off);
		n = get_i32(p + off + 4);
		if (n <= 0 || n > maxlen) {
			snprintf(err, errlen, "token %u at offset %zu: length "
			    "%d is outside 1..%d (max_token_length)", count,
			    off, n, maxlen);
			return TS_EFORMAT;
		}
		if (len - off - 8 < (size_t)n) {
			snprintf(err, errlen, "truncated in token %u at "
			    "offset %zu: its piece is %d bytes, %zu left",
			    count, off, n, len - off - 8);
			return TS_EFORMAT;
		}
		if (!isfinite(score)) {
			snprintf(err, errlen, "token %u at offset %zu: score "
			    "is not a finite number", count, off);
			return TS_EFORMAT;
		}
		/* Pieces are text (SentencePiece writes UTF-8; raw bytes are
		 * spelt "<0xXX>"): a piece that is not valid UTF-8 would
		 * reach clients as broken JSON. */
		if (!utf8_valid((const char *)p + off + 8, (size_t)n)) {
			snprintf(err, errlen, "token %u at offset %zu: its "
			    "%d-byte piece is not valid UTF-8", count, off,
			    n);
			return TS_EFORMAT;
		}
		off += 8 + (size_t)n;
		bytes += (size_t)n;
	}
	if (count != vocab_size) {
		snprintf(err, errlen, "tokenizer has %u tokens but the "
		    "checkpoint's vocab_size is %u", count, vocab_size);
		return TS_EFORMAT;
	}

	t = xcalloc(1, sizeof(*t));
	t->vocab_size = vocab_size;
	t->max_token_length = (uint32_t)maxlen;
	t->scores = xmalloc(vocab_size * sizeof(*t->scores));
	t->off = xmalloc(vocab_size * sizeof(*t->off));
	t->len = xmalloc(vocab_size * sizeof(*t->len));
	t->doff = xmalloc(vocab_size * sizeof(*t->doff));
	t->dlen = xmalloc(vocab_size * sizeof(*t->dlen));
	t->blob = xmalloc(bytes);
	t->dblob = xmalloc(bytes);
	for (nslots = 1024; nslots < 2 * vocab_size; nslots *= 2)
		;
	t->slots = xcalloc(nslots, sizeof(*t->slots));
	t->mask = nslots - 1;
	t->legacy = 1;
	t->kind = TOKENIZER_SPM;
	t->type = xmalloc(vocab_size);
	memset(t->type, TOKENIZER_TYPE_NORMAL, vocab_size);
	t->type[0] = TOKENIZER_TYPE_UNKNOWN;
	t->type[MODEL_TOKEN_BOS] = TOKENIZER_TYPE_CONTROL;
	t->type[MODEL_TOKEN_EOS] = TOKENIZER_TYPE_CONTROL;
	t->bos = MODEL_TOKEN_BOS;
	t->eos = MODEL_TOKEN_EOS;
	t->unk = 0;
	t->pad = TOKENIZER_NONE;
	t->add_bos = 1;

	bytes = 0;
	for (off = 4, i = 0; i < vocab_size; i++) {
		uint32_t n = (uint32_t)get_i32(p + off + 4);
		const char *s = (const char *)p + off + 8;
		int b;

		t->scores[i] = get_f32(p + off);
		t->off[i] = (uint32_t)bytes;
		t->len[i] = n;
		memcpy(t->blob + bytes, s, n);
		bytes += n;
		off += 8 + n;

		/* decoded text: a byte token is its byte, specials are "" */
		t->doff[i] = (uint32_t)dbytes;
		b = tok_byte_piece(s, n);
		if (i <= MODEL_TOKEN_EOS) {
			t->dlen[i] = 0;
		} else if (b >= 0) {
			t->dblob[dbytes++] = (char)b;
			t->dlen[i] = 1;
		} else {
			memcpy(t->dblob + dbytes, s, n);
			dbytes += n;
			t->dlen[i] = n;
		}

		tok_hash_add(t, i);
	}
	for (i = 0; i < 256; i++) {
		uint32_t id = TOKENIZER_BYTE0 + i;

		if (tok_byte_piece(t->blob + t->off[id], t->len[id]) !=
		    (int)i) {
			snprintf(err, errlen, "token %u is \"%.*s\", not the "
			    "byte token <0x%02X> that byte fallback needs at "
			    "ids 3..258", id, (int)(t->len[id] > 16 ? 16 :
			    t->len[id]), t->blob + t->off[id], i);
			tokenizer_free(t);
			return TS_EFORMAT;
		}
		t->type[id] = TOKENIZER_TYPE_BYTE;
		t->byte_id[i] = id;
	}
	{
		int64_t sp = tok_lookup(t, " ", 1);

		t->space_id = sp >= 0 ? (uint32_t)sp : TOKENIZER_BYTE0 + ' ';
	}
	*out = t;
	return TS_OK;
}

enum ts_err
tokenizer_open(struct tokenizer **out, const char *path,
    uint32_t vocab_size, char *err, size_t errlen)
{
	FILE *f;
	char *buf = NULL;
	size_t cap = 0, n = 0, got;
	char why[400];
	enum ts_err rc;
	int saved;

	*out = NULL;
	f = fopen(path, "rb");
	if (f == NULL) {
		saved = errno;
		snprintf(err, errlen, "%s: cannot open: %s", path,
		    strerror(saved));
		errno = saved;
		return TS_ESYS;
	}
	for (;;) {
		if (n == cap) {
			if (cap >= TOKENIZER_MAX_FILE) {
				snprintf(err, errlen, "%s: larger than %u "
				    "bytes", path, TOKENIZER_MAX_FILE);
				rc = TS_ELIMIT;
				goto out;
			}
			cap = cap ? cap * 2 : 65536;
			buf = xrealloc(buf, cap);
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		saved = errno;
		snprintf(err, errlen, "%s: cannot read: %s", path,
		    strerror(saved));
		rc = TS_ESYS;
		goto out;
	}
	rc = tokenizer_load(out, buf, n, vocab_size, why, sizeof(why));
	if (rc != TS_OK)
		snprintf(err, errlen, "%s: %s", path, why);
out:
	saved = errno;
	free(buf);
	fclose(f);
	errno = saved;
	return rc;
}

uint32_t
tokenizer_vocab_size(const struct tokenizer *t)
{
	return t->vocab_size;
}

uint32_t
tokenizer_max_token_length(const struct tokenizer *t)
{
	return t->max_token_length;
}

const char *
tokenizer_piece(const struct tokenizer *t, uint32_t id, size_t *len)
{
	if (id >= t->vocab_size) {
		*len = 0;
		return NULL;
	}
	*len = t->len[id];
	return t->blob + t->off[id];
}

int
tokenizer_kind(const struct tokenizer *t)
{
	return t->kind;
}

uint32_t
tokenizer_bos(const struct tokenizer *t)
{
	return t->bos;
}

uint32_t
tokenizer_eos(const struct tokenizer *t)
{
	return t->eos;
}

int
tokenizer_add_bos(const struct tokenizer *t)
{
	return t->add_bos;
}

int
tokenizer_add_eos(const struct tokenizer *t)
{
	return t->add_eos;
}

uint32_t
tokenizer_token_id(const struct tokenizer *t, const char *text, size_t len)
{
	int64_t id = tok_lookup(t, text, len);

	return id < 0 ? TOKENIZER_NONE : (uint32_t)id;
}

int
tokenizer_token_type(const struct tokenizer *t, uint32_t id)
{
	return id < t->vocab_size ? t->type[id] : 0;
}

float
tokenizer_score(const struct tokenizer *t, uint32_t id)
{
	return id < t->vocab_size && t->scores != NULL ? t->scores[id] : 0.0f;
}

const char *
tokenizer_decode(const struct tokenizer *t, uint32_t prev_id, uint32_t id,
    size_t *len)
{
	const char *s;
	size_t n;

	if (id >= t->vocab_size) {
		*len = 0;
		return "";
	}
	s = t->dblob + t->doff[id];
	n = t->dlen[id];
	if (prev_id == t->bos && t->bos != TOKENIZER_NONE &&
	    t->kind == TOKENIZER_SPM && n > 0 && s[0] == ' ') {
		s++;
		n--;
	}
	*len = n;
	return n > 0 ? s : "";
}

/* ---- encoding ----------------------------------------------------------- */

/* A possible merge of symbols left and right into id: prio is the score,
 * or minus the merge rank. */
struct tok_cand {
	double prio;
	int32_t left, right;
	uint32_t id;
	uint32_t lver, rver;
};

size_t
tok_cand_size(void)
{
	return sizeof(struct tok_cand);
}

struct tok_heap {
	struct tok_cand *a;
	size_t n;
};

/* Whether x comes out of the heap before y. */
static int
cand_before(const struct tok_cand *x, const struct tok_cand *y)
{
	if (x->prio != y->prio)
		return x->prio > y->prio;
	return x->left < y->left;
}

static void
heap_push(struct tok_heap *h, const struct tok_cand *c)
{
	size_t i = h->n++;

	while (i > 0) {
		size_t up = (i - 1) / 2;

		if (!cand_before(c, &h->a[up]))
			break;
		h->a[i] = h->a[up];
		i = up;
	}
	h->a[i] = *c;
}

static void
heap_pop(struct tok_heap *h, struct tok_cand *out)
{
	struct tok_cand last;
	size_t i = 0;

	*out = h->a[0];
	last = h->a[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, best;

		if (l >= h->n)
			break;
		best = l;
		if (l + 1 < h->n && cand_before(&h->a[l + 1], &h->a[l]))
			best = l + 1;
		if (!cand_before(&h->a[best], &last))
			break;
		h->a[i] = h->a[best];
		i = best;
	}
	if (h->n > 0)
		h->a[i] = last;
}

int
tok_pair_find(const struct tokenizer *t, uint32_t l, uint32_t r,
    uint32_t *rank, uint32_t *id)
{
	uint64_t key = (uint64_t)l << 32 | r;
	uint32_t i;

	if (t->pair_key == NULL)
		return 0;
	for (i = (uint32_t)tok_hash_bytes(&key, sizeof(key)) & t->pair_mask;
	    t->pair_key[i] != UINT64_MAX; i = (i + 1) & t->pair_mask) {
		if (t->pair_key[i] == key) {
			*rank = t->pair_rank[i];
			*id = t->pair_id[i];
			return 1;
		}
	}
	return 0;
}

/* Pushes the merge of symbols a and its successor, if there is one. buf
 * holds 2 x max_token_length bytes. */
static void
push_pair(const struct tokenizer *t, const struct tok_sym *s, int32_t a,
    char *buf, struct tok_heap *h)
{
	struct tok_cand c;
	uint32_t la, lb;
	int64_t id;
	int32_t b;

	if (a < 0 || s[a].next < 0)
		return;
	b = s[a].next;
	if (t->by_rank) {
		uint32_t rank, rid;

		if (!tok_pair_find(t, s[a].id, s[b].id, &rank, &rid))
			return;
		c.prio = -(double)rank;
		c.id = rid;
	} else {
		la = t->len[s[a].id];
		lb = t->len[s[b].id];
		memcpy(buf, t->blob + t->off[s[a].id], la);
		memcpy(buf + la, t->blob + t->off[s[b].id], lb);
		id = tok_lookup(t, buf, (size_t)la + lb);
		if (id < 0 || !(t->scores[id] > TOKENIZER_MIN_SCORE))
			return;
		/* a model vocabulary merges into text pieces only
		 * (sentencepiece: normal and user-defined) */
		if (!t->legacy && t->type[id] != TOKENIZER_TYPE_NORMAL &&
		    t->type[id] != TOKENIZER_TYPE_USER_DEFINED)
			return;
		c.prio = t->scores[id];
		c.id = (uint32_t)id;
	}
	c.left = a;
	c.right = b;
	c.lver = s[a].ver;
	c.rver = s[b].ver;
	heap_push(h, &c);
}

void
tok_merge(const struct tokenizer *t, struct tok_sym *s, size_t ns,
    struct tok_cand *heap, char *buf)
{
	struct tok_heap h;
	struct tok_cand c;
	size_t i;

	h.a = heap;
	h.n = 0;
	for (i = 0; i + 1 < ns; i++)
		push_pair(t, s, (int32_t)i, buf, &h);
	while (h.n > 0) {
		int32_t a, b;

		heap_pop(&h, &c);
		a = c.left;
		b = c.right;
		if (!s[a].alive || !s[b].alive || s[a].next != b ||
		    s[a].ver != c.lver || s[b].ver != c.rver)
			continue;       /* stale: a neighbour changed */
		s[a].id = c.id;
		s[a].ver++;
		s[b].alive = 0;
		s[a].next = s[b].next;
		if (s[b].next >= 0)
			s[s[b].next].prev = a;
		push_pair(t, s, s[a].prev, buf, &h);
		push_pair(t, s, a, buf, &h);
	}
}

enum ts_err
tokenizer_encode(const struct tokenizer *t, const char *text, size_t len,
    int bos, int eos, uint32_t **ids, size_t *n)
{
	struct tok_sym *s;
	struct tok_cand *heap;
	uint32_t *out;
	char *buf;
	size_t ns = 0, i, k = 0;
	int32_t j;

	*ids = NULL;
	*n = 0;
	if (len > SIZE_MAX / 64 - 64)
		return TS_ELIMIT;
	if (!t->legacy)
		return tok_encode_model(t, text, len, bos, eos, ids, n);
	s = xmalloc((len + 1) * sizeof(*s));
	heap = xmalloc((3 * len + 3) * sizeof(*heap));
	buf = xmalloc(2 * (size_t)t->max_token_length);
	out = xmalloc((len + 3) * sizeof(*out));

	/* the dummy prefix, then each UTF-8 character (a lead byte and up
	 * to three continuation bytes, as run.c groups them) */
	if (len > 0) {
		s[ns].id = t->space_id;
		ns++;
	}
	for (i = 0; i < len;) {
		size_t start = i;
		int64_t id;

		i++;
		while (i < len && ((unsigned char)text[i] & 0xC0) == 0x80 &&
		    i - start < 4)
			i++;
		id = tok_lookup(t, text + start, i - start);
		if (id >= 0) {
			s[ns++].id = (uint32_t)id;
			continue;
		}
		for (; start < i; start++)
			s[ns++].id = TOKENIZER_BYTE0 +
			    (unsigned char)text[start];
	}
	for (i = 0; i < ns; i++) {
		s[i].prev = (int32_t)i - 1;
		s[i].next = i + 1 < ns ? (int32_t)i + 1 : -1;
		s[i].ver = 0;
		s[i].alive = 1;
	}

	/* BPE: the best-scoring adjacent merge first, leftmost on ties */
	tok_merge(t, s, ns, heap, buf);

	if (bos)
		out[k++] = MODEL_TOKEN_BOS;
	for (j = ns > 0 ? 0 : -1; j >= 0; j = s[j].next)
		out[k++] = s[j].id;
	if (eos)
		out[k++] = MODEL_TOKEN_EOS;
	free(s);
	free(heap);
	free(buf);
	*ids = out;
	*n = k;
	return TS_OK;
}
