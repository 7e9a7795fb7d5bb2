/*
 * gen.c - the deterministic token generator: tokenizer, PRNG and sampler
 * over the vocabulary of gen_vocab.c.
 *
 * Only fixed-width integer arithmetic is used, so a prompt gives the same
 * ids on every machine (the contract in gen.h). The lookup tables (a trie
 * for the tokenizer, running weight sums for the sampler) are built once,
 * on first use, under pthread_once; they are never written again nor
 * freed, so any number of threads may read them afterwards.
 */
#include "gen.h"

#include <pthread.h>

#include "ts.h"

/* A sentence has at least GEN_SENTENCE_MIN words and ends after at most
 * GEN_SENTENCE_MAX (one more if the last token was punctuation). */
#define GEN_SENTENCE_MIN 6u
#define GEN_SENTENCE_MAX 18u

/* One in GEN_NL_ODDS sentence ends is followed by a newline token. */
#define GEN_NL_ODDS 4u

/*
 * A node of the tokenizer's trie: the byte on the edge from its parent, its
 * first child and next sibling (indices into gen_trie, 0 = none), and the
 * text token whose text ends here (0 = none: text ids are >= 256).
 */
struct gen_node {
	uint32_t child;
	uint32_t sibling;
	uint32_t id;
	unsigned char byte;
};

/* Where in a sentence the sampler is; each has its own gen_table. */
enum gen_ctx {
	GEN_CTX_START,          /* first token, or after a newline: "The" */
	GEN_CTX_SSTART,         /* after a sentence end: " The" */
	GEN_CTX_END,            /* ending a sentence: "." */
	GEN_CTX_NL,             /* a newline after a sentence end */
	GEN_CTX_BODY,           /* inside a sentence */
	GEN_CTX_BODY_NOPUNCT,   /* inside a sentence, right after punctuation */
	GEN_CTX_MAX
};

/* The tokens a context draws from, with running sums of their weights. */
struct gen_table {
	uint32_t n;             /* entries, > 0 once built */
	uint32_t *id;           /* token ids */
	uint32_t *cum;          /* cum[i]: weights of id[0..i] summed */
};

static pthread_once_t gen_once = PTHREAD_ONCE_INIT;
static uint32_t gen_root[256];          /* the root's child for each byte */
static struct gen_node *gen_trie;       /* node 0 is unused */
static struct gen_table gen_tables[GEN_CTX_MAX];

/* Kind of text token `id`; GEN_K_NL (a line break) for anything else. */
static unsigned
gen_kind_of(uint32_t id)
{
	if (id < GEN_FIRST_TEXT_ID || id - GEN_FIRST_TEXT_ID >= gen_vocab_ntext)
		return GEN_K_NL;
	return gen_vocab_text[id - GEN_FIRST_TEXT_ID].kind;
}

/* Whether tokens of `kind` may be drawn in context `c`. */
static int
gen_ctx_has(enum gen_ctx c, unsigned kind)
{
	switch (c) {
	case GEN_CTX_START:
		return kind == GEN_K_START;
	case GEN_CTX_SSTART:
		return kind == GEN_K_SSTART;
	case GEN_CTX_END:
		return kind == GEN_K_END;
	case GEN_CTX_NL:
		return kind == GEN_K_NL;
	case GEN_CTX_BODY:
	case GEN_CTX_BODY_NOPUNCT:
		if (kind == GEN_K_PUNCT)
			return c == GEN_CTX_BODY;
		return kind == GEN_K_WORD || kind == GEN_K_PIECE ||
		    kind == GEN_K_NUM || kind == GEN_K_STRESS ||
		    kind == GEN_K_NL;
	case GEN_CTX_MAX:
		break;
	}
	return 0;
}

/*
 * Adds text token `id` (bytes s[0..len), len >= 1) to the trie, taking new
 * nodes from *used. With equal texts the first one keeps the node, so the
 * tokenizer yields the lower id (the vocabulary has none; the tests check).
 */
static void
gen_trie_add(uint32_t *used, const unsigned char *s, size_t len, uint32_t id)
{
	uint32_t *head = &gen_root[s[0]];
	uint32_t n = *head;
	size_t i;

	if (n == 0) {
		n = *head = ++*used;
		gen_trie[n].byte = s[0];
	}
	for (i = 1; i < len; i++) {
		head = &gen_trie[n].child;
		for (n = *head; n != 0; n = gen_trie[n].sibling)
			if (gen_trie[n].byte == s[i])
				break;
		if (n == 0) {
			n = ++*used;
			gen_trie[n].byte = s[i];
			gen_trie[n].sibling = *head;
			*head = n;
		}
	}
	if (gen_trie[n].id == 0)
		gen_trie[n].id = id;
}

/* Fills context c's table with the vocabulary's drawable tokens. */
static void
gen_table_build(enum gen_ctx c)
{
	struct gen_table *t = &gen_tables[c];
	uint32_t i, n = 0, sum = 0;

	for (i = 0; i < gen_vocab_ntext; i++)
		if (gen_vocab_text[i].weight != 0 &&
		    gen_ctx_has(c, gen_vocab_text[i].kind))
			n++;
	t->id = xcalloc(n, sizeof(*t->id));
	t->cum = xcalloc(n, sizeof(*t->cum));
	for (i = 0; i < gen_vocab_ntext; i++) {
		if (gen_vocab_text[i].weight == 0 ||
		    !gen_ctx_has(c, gen_vocab_text[i].kind))
			continue;
		sum += gen_vocab_text[i].weight;
		t->id[t->n] = GEN_FIRST_TEXT_ID + i;
		t->cum[t->n] = sum;
		t->n++;
	}
}

/*
 * Builds the trie and the sampling tables (run once by pthread_once). The
 * trie has at most one node per byte of text, plus the unused node 0.
 */
static void
gen_build(void)
{
	uint32_t i, used = 0;
	size_t bytes = 0;
	int c;

	for (i = 0; i < gen_vocab_ntext; i++)
		bytes += gen_vocab_text[i].len;
	gen_trie = xcalloc(bytes + 1, sizeof(*gen_trie));
	for (i = 0; i < gen_vocab_ntext; i++)
		gen_trie_add(&used,
		    (const unsigned char *)gen_vocab_text[i].text,
		    gen_vocab_text[i].len, GEN_FIRST_TEXT_ID + i);
	for (c = 0; c < GEN_CTX_MAX; c++)
		gen_table_build((enum gen_ctx)c);
}

uint32_t
gen_vocab_size(void)
{
	return GEN_FIRST_TEXT_ID + gen_vocab_ntext;
}

const char *
gen_token_text(uint32_t id, size_t *len)
{
	const struct gen_vocab_entry *e;
	size_t dummy;

	if (len == NULL)
		len = &dummy;
	if (id < GEN_FIRST_TEXT_ID) {
		*len = 1;
		return (const char *)&gen_vocab_bytes[id];
	}
	if (id - GEN_FIRST_TEXT_ID >= gen_vocab_ntext) {
		*len = 0;
		return NULL;
	}
	e = &gen_vocab_text[id - GEN_FIRST_TEXT_ID];
	*len = e->len;
	return e->text;
}

/*
 * The longest text token that starts p[0..len), len >= 1, found by walking
 * the trie (at most GEN_TOKEN_MAX_BYTES steps). Returns its id and its
 * length in *tlen, or the byte token p[0] and 1 if no text token matches.
 */
static uint32_t
gen_match(const unsigned char *p, size_t len, size_t *tlen)
{
	uint32_t n = gen_root[p[0]], best = p[0];
	size_t i = 1;

	*tlen = 1;
	while (n != 0) {
		if (gen_trie[n].id != 0) {
			best = gen_trie[n].id;
			*tlen = i;
		}
		if (i == len)
			break;
		for (n = gen_trie[n].child; n != 0; n = gen_trie[n].sibling)
			if (gen_trie[n].byte == p[i])
				break;
		i++;
	}
	return best;
}

/*
 * Greedy longest match, left to right (as in gen.h): O(len) trie steps of
 * at most GEN_TOKEN_MAX_BYTES each. Returns the number of tokens.
 */
size_t
gen_tokenize(const char *prompt, size_t len, uint32_t *ids, size_t cap)
{
	const unsigned char *p = (const unsigned char *)prompt;
	size_t i = 0, n = 0, tlen;
	uint32_t id;

	if (len == 0)
		return 0;
	pthread_once(&gen_once, gen_build);
	while (i < len) {
		id = gen_match(p + i, len - i, &tlen);
		if (n < cap)
			ids[n] = id;
		n++;
		i += tlen;
	}
	return n;
}

/* The SplitMix64 output mixer (Steele, Lea and Flood, 2014), a bijection
 * on 64-bit words: Stafford's "Mix13" variant of the MurmurHash3 fmix64. */
static uint64_t
gen_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/*
 * FNV-1a 64 (Fowler, Noll, Vo) of the prompt bytes, a byte at a time so
 * the result does not depend on endianness, then gen_mix64 to spread FNV's
 * weak high bits. Returns the seed.
 */
uint64_t
gen_seed(const char *prompt, size_t len)
{
	const unsigned char *p = (const unsigned char *)prompt;
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= UINT64_C(0x100000001b3);
	}
	return gen_mix64(h);
}

/*
 * Seeds xoshiro256** with four SplitMix64 outputs, as its authors advise:
 * consecutive outputs of a bijection on distinct inputs, so the state is
 * never all zero.
 */
void
gen_init(struct gen_stream *g, const char *prompt, size_t len)
{
	uint64_t x = gen_seed(prompt, len);
	int i;

	pthread_once(&gen_once, gen_build);
	for (i = 0; i < 4; i++) {
		x += UINT64_C(0x9e3779b97f4a7c15);
		g->s[i] = gen_mix64(x);
	}
	g->produced = 0;
	g->last = 0;
	g->words = 0;
}

static uint64_t
gen_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** 1.0 (Blackman and Vigna, 2018): the next 64-bit output. */
static uint64_t
gen_xoshiro(uint64_t s[4])
{
	uint64_t r = gen_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = gen_rotl(s[3], 45);
	return r;
}

/*
 * A uniform integer in [0, range), range >= 1, by Lemire's nearly
 * divisionless method ("Fast Random Integer Generation in an Interval",
 * 2019) on the top 32 bits of each output: multiply, keep the high half,
 * and divide only when the low half falls in the short biased zone, where
 * the draw is rejected and repeated.
 */
static uint32_t
gen_bounded(struct gen_stream *g, uint32_t range)
{
	uint64_t m = (gen_xoshiro(g->s) >> 32) * (uint64_t)range;
	uint32_t low = (uint32_t)m, floor;

	if (low < range) {
		floor = (0u - range) % range;   /* 2^32 mod range */
		while (low < floor) {
			m = (gen_xoshiro(g->s) >> 32) * (uint64_t)range;
			low = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

/*
 * A token of context c drawn with probability proportional to its weight:
 * a uniform point below the total weight, then a binary search for the
 * first running sum above it. Returns its id.
 */
static uint32_t
gen_draw(struct gen_stream *g, enum gen_ctx c)
{
	const struct gen_table *t = &gen_tables[c];
	uint32_t r = gen_bounded(g, t->cum[t->n - 1]);
	uint32_t lo = 0, hi = t->n - 1, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->cum[mid] > r)
			hi = mid;
		else
			lo = mid + 1;
	}
	return t->id[lo];
}

/*
 * Whether the sentence ends now: never before GEN_SENTENCE_MIN words,
 * always at GEN_SENTENCE_MAX, in between with odds growing by 1/16 a word,
 * so sentences run 6..18 words, about 10 on average.
 */
static int
gen_sentence_ends(struct gen_stream *g)
{
	if (g->words >= GEN_SENTENCE_MAX)
		return 1;
	if (g->words < GEN_SENTENCE_MIN)
		return 0;
	return gen_bounded(g, 16) <= g->words - GEN_SENTENCE_MIN;
}

/*
 * The next token of a small sentence structure, decided only by the PRNG
 * and the stream's fields (hence the prefix property): a capitalised start
 * ("The" at the beginning or after a newline, " The" after a sentence
 * end), then words, pieces, punctuation, numbers and stress tokens drawn
 * by weight (no two punctuation tokens in a row), then a sentence end,
 * followed one time in GEN_NL_ODDS by a newline token. `words` counts the
 * non-punctuation tokens of the current sentence.
 */
uint32_t
gen_next(struct gen_stream *g)
{
	unsigned kind = g->produced == 0 ? GEN_K_NL : gen_kind_of(g->last);
	enum gen_ctx c;
	uint32_t id;

	if (kind == GEN_K_NL)
		c = GEN_CTX_START;
	else if (kind == GEN_K_END)
		c = gen_bounded(g, GEN_NL_ODDS) == 0 ? GEN_CTX_NL :
		    GEN_CTX_SSTART;
	else if (kind == GEN_K_PUNCT)
		c = GEN_CTX_BODY_NOPUNCT;
	else if (gen_sentence_ends(g))
		c = GEN_CTX_END;
	else
		c = GEN_CTX_BODY;
	id = gen_draw(g, c);

	switch (gen_kind_of(id)) {
	case GEN_K_END:
	case GEN_K_NL:
		g->words = 0;
		break;
	case GEN_K_START:
	case GEN_K_SSTART:
		g->words = 1;
		break;
	case GEN_K_PUNCT:
		break;
	default:
		g->words++;
		break;
	}
	g->last = id;
	if (g->produced < UINT32_MAX)
		g->produced++;
	return id;
}
