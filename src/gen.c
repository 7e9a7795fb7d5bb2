/*
 * gen.c - the deterministic token generator: tokenizer, PRNG and sampler
 * over the vocabulary of gen_vocab.c.
 *
 * Only fixed-width integer arithmetic is used, so a prompt gives the same
 * ids on every machine (the contract in gen.h). The lookup tables (a trie
 * for the tokenizer, running weight sums for the sampler) are static and
 * filled once, on first use, under pthread_once; they are never written
 * again, so any number of threads may read them afterwards.
 */
#include "gen.h"

#include <pthread.h>
#include <string.h>

/* A sentence has at least GEN_SENTENCE_MIN words and ends after at most
 * GEN_SENTENCE_MAX (one more if the last token was punctuation). */
#define GEN_SENTENCE_MIN 6u
#define GEN_SENTENCE_MAX 18u

/* One in GEN_NL_ODDS sentence ends is followed by a newline token. */
#define GEN_NL_ODDS 4u

/* Draws per token before a non-canonical one is let through (gen_next). */
#define GEN_REDRAWS 16

/* A match starting this many bytes or fewer before the end of the text
 * can reach bytes appended to it. */
#define GEN_REACH (GEN_TOKEN_MAX_BYTES - 1)

/* Bytes in gen_stream.tail: the last GEN_REACH bytes, room for one more
 * token, and slack so that the tail is compacted only now and then. */
#define GEN_TAIL_CAP sizeof(((struct gen_stream *)0)->tail)

_Static_assert(GEN_TAIL_CAP >= GEN_REACH + GEN_TOKEN_MAX_BYTES + 1,
    "gen_stream.tail is too small");
_Static_assert(GEN_TAIL_CAP <= 64, "gen_stream.tail_starts has 64 bits");

/*
 * Room in the static tables: trie nodes (at most one per byte of text, plus
 * the root; ~3,500 are used) and nodes with a direct child table. A
 * vocabulary that outgrows GEN_TRIE_MAX loses its last tokens from the
 * tokenizer, which the unit tests notice; it cannot overflow.
 */
#define GEN_TRIE_MAX 16384u
#define GEN_WIDE_MAX 8u

/* Nodes with this many children get a direct child table (the root and
 * " "): most matches pass through them. */
#define GEN_WIDE_MIN 16u

_Static_assert(GEN_TRIE_MAX <= UINT16_MAX, "trie indices are 16 bits");
_Static_assert(GEN_FIRST_TEXT_ID + GEN_VOCAB_MAX_TEXT <= UINT16_MAX,
    "token ids in the tables are 16 bits");

/*
 * A node of the tokenizer's trie: its first child and next sibling
 * (indices into gen_trie; 0, the root, stands for none as it is nobody's
 * child), the text token whose text ends here (0 = none: text ids are
 * >= 256), for a wide node 1 + the index of its table in gen_wide, and the
 * byte on the edge from its parent.
 */
struct gen_node {
	uint16_t child;
	uint16_t sibling;
	uint16_t id;
	uint8_t wide;
	unsigned char byte;
};

/* Where in a sentence the sampler is; each has its own gen_table. */
enum gen_ctx {
	GEN_CTX_START,          /* first token, or after a newline: "The" */
	GEN_CTX_SSTART,         /* after a sentence end: " The" */
	GEN_CTX_END,            /* ending a sentence: "." */
	GEN_CTX_NL,             /* a newline after a sentence end */
	GEN_CTX_BODY,           /* inside a sentence */
	GEN_CTX_BODY_NOPUNCT,   /* inside a sentence, after punctuation */
	GEN_CTX_MAX
};

/* The tokens a context draws from; cum[i] is the sum of the weights of
 * id[0..i]. */
struct gen_table {
	uint32_t n;                     /* entries in use */
	uint16_t id[GEN_VOCAB_MAX_TEXT];
	uint32_t cum[GEN_VOCAB_MAX_TEXT];
};

/*
 * Built once by gen_build under gen_once, read-only afterwards. Static
 * rather than allocated: nothing to free, nothing for a leak checker.
 */
static pthread_once_t gen_once = PTHREAD_ONCE_INIT;
static struct gen_node gen_trie[GEN_TRIE_MAX];  /* node 0 is the root */
static uint16_t gen_wide[GEN_WIDE_MAX][256];    /* wide node's children */
static struct gen_table gen_tables[GEN_CTX_MAX];
static unsigned char gen_open[GEN_VOCAB_MAX_TEXT];  /* text token i is a
					 * prefix of a longer one */

/* Kind of text token `id`; GEN_K_NL (a line break) for anything else. */
static unsigned
gen_kind_of(uint32_t id)
{
	if (id < GEN_FIRST_TEXT_ID ||
	    id - GEN_FIRST_TEXT_ID >= gen_vocab_ntext)
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
 * Returns the token's node, or 0 if the trie is full.
 */
static uint32_t
gen_trie_add(uint32_t *used, const unsigned char *s, size_t len, uint32_t id)
{
	uint32_t n = 0, c;
	size_t i;

	for (i = 0; i < len; i++) {
		for (c = gen_trie[n].child; c != 0; c = gen_trie[c].sibling)
			if (gen_trie[c].byte == s[i])
				break;
		if (c == 0) {
			if (*used + 1 >= GEN_TRIE_MAX)
				return 0;
			c = ++*used;
			gen_trie[c].byte = s[i];
			gen_trie[c].sibling = gen_trie[n].child;
			gen_trie[n].child = (uint16_t)c;
		}
		n = c;
	}
	if (gen_trie[n].id == 0)
		gen_trie[n].id = (uint16_t)id;
	return n;
}

/* Gives up to GEN_WIDE_MAX of the `nodes` nodes with GEN_WIDE_MIN children
 * or more a direct child table in gen_wide. */
static void
gen_trie_widen(uint32_t nodes)
{
	uint32_t n, c, k, nwide = 0;

	for (n = 0; n < nodes && nwide < GEN_WIDE_MAX; n++) {
		for (k = 0, c = gen_trie[n].child; c != 0;
		    c = gen_trie[c].sibling)
			k++;
		if (k < GEN_WIDE_MIN)
			continue;
		for (c = gen_trie[n].child; c != 0; c = gen_trie[c].sibling)
			gen_wide[nwide][gen_trie[c].byte] = (uint16_t)c;
		gen_trie[n].wide = (uint8_t)++nwide;
	}
}

/* Fills context c's table with the vocabulary's drawable tokens. */
static void
gen_table_build(enum gen_ctx c)
{
	struct gen_table *t = &gen_tables[c];
	uint32_t i, sum = 0;

	for (i = 0; i < gen_vocab_ntext; i++) {
		if (gen_vocab_text[i].weight == 0 ||
		    !gen_ctx_has(c, gen_vocab_text[i].kind))
			continue;
		sum += gen_vocab_text[i].weight;
		t->id[t->n] = (uint16_t)(GEN_FIRST_TEXT_ID + i);
		t->cum[t->n] = sum;
		t->n++;
	}
}

/* Builds the trie, gen_open and the sampling tables (run once by
 * pthread_once). */
static void
gen_build(void)
{
	uint32_t i, n, used = 0;
	int c;

	for (i = 0; i < gen_vocab_ntext; i++)
		(void)gen_trie_add(&used,
		    (const unsigned char *)gen_vocab_text[i].text,
		    gen_vocab_text[i].len, GEN_FIRST_TEXT_ID + i);
	/* Adding a token again only finds its node: now that every token is
	 * in, see which ones longer tokens continue. */
	for (i = 0; i < gen_vocab_ntext; i++) {
		n = gen_trie_add(&used,
		    (const unsigned char *)gen_vocab_text[i].text,
		    gen_vocab_text[i].len, GEN_FIRST_TEXT_ID + i);
		gen_open[i] = n != 0 && gen_trie[n].child != 0;
	}
	gen_trie_widen(used + 1);
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
	if (id == GEN_EOS_ID) {
		*len = 0;
		return "";
	}
	if (id - GEN_FIRST_TEXT_ID >= gen_vocab_ntext) {
		*len = 0;
		return NULL;
	}
	e = &gen_vocab_text[id - GEN_FIRST_TEXT_ID];
	*len = e->len;
	return e->text;
}

/* The child of node n on byte c, 0 if none. */
static uint32_t
gen_child(uint32_t n, unsigned char c)
{
	if (gen_trie[n].wide != 0)
		return gen_wide[gen_trie[n].wide - 1][c];
	for (n = gen_trie[n].child; n != 0; n = gen_trie[n].sibling)
		if (gen_trie[n].byte == c)
			break;
	return n;
}

/*
 * The longest text token that starts p[0..len), len >= 1, found by walking
 * the trie (at most GEN_TOKEN_MAX_BYTES steps). Returns its id and its
 * length in *tlen, or the byte token p[0] and 1 if no text token matches.
 */
static uint32_t
gen_match(const unsigned char *p, size_t len, size_t *tlen)
{
	uint32_t n = 0, best = p[0];
	size_t i;

	*tlen = 1;
	for (i = 0; i < len; i++) {
		n = gen_child(n, p[i]);
		if (n == 0)
			break;
		if (gen_trie[n].id != 0) {
			best = gen_trie[n].id;
			*tlen = i + 1;
		}
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
uint64_t
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
gen_prng_seed(uint64_t s[4], uint64_t seed)
{
	uint64_t x = seed;
	int i;

	for (i = 0; i < 4; i++) {
		x += UINT64_C(0x9e3779b97f4a7c15);
		s[i] = gen_mix64(x);
	}
}

void
gen_init(struct gen_stream *g, const char *prompt, size_t len)
{
	pthread_once(&gen_once, gen_build);
	gen_prng_seed(g->s, gen_seed(prompt, len));
	g->produced = 0;
	g->last = 0;
	g->words = 0;
	g->tail_starts = 0;
	g->tail_open = 0;
	g->tail_len = 0;
}

static uint64_t
gen_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** 1.0 (Blackman and Vigna, 2018): the next 64-bit output. */
uint64_t
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
	uint32_t r, lo = 0, hi, mid;

	if (t->n == 0)          /* a vocabulary without this kind */
		return GEN_FIRST_TEXT_ID;
	r = gen_bounded(g, t->cum[t->n - 1]);
	hi = t->n - 1;
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
 * Whether text token `id`, appended to the stream, keeps its text
 * canonical: greedy longest match (gen_tokenize) over the text must still
 * find, at each token start within reach of the new bytes, the token that
 * was generated there. A match is at most GEN_TOKEN_MAX_BYTES long, so
 * only starts in the last GEN_REACH bytes can reach the new token, and
 * only where the token there is a prefix of a longer one (tail_open) can
 * the match run on; the new token itself is always the longest match at
 * its own start, as nothing follows it yet. Checking this at each step
 * keeps the whole text canonical: once a start falls out of reach its
 * match cannot change. Writes the token's bytes past the tail's end as
 * scratch (gen_tail_room made room).
 */
static int
gen_canonical(struct gen_stream *g, uint32_t id)
{
	const struct gen_vocab_entry *e = &gen_vocab_text[id -
	    GEN_FIRST_TEXT_ID];
	size_t len = g->tail_len, b, end, m;

	memcpy(g->tail + len, e->text, e->len);
	for (b = len > GEN_REACH ? len - GEN_REACH : 0; b < len; b++) {
		if ((g->tail_open & (UINT64_C(1) << b)) == 0)
			continue;
		for (end = b + 1; end < len; end++)
			if (g->tail_starts & (UINT64_C(1) << end))
				break;
		(void)gen_match(g->tail + b, len + e->len - b, &m);
		if (m != end - b)
			return 0;
	}
	return 1;
}

/* Makes room for one token at the end of the stream's tail, keeping the
 * last GEN_REACH bytes. */
static void
gen_tail_room(struct gen_stream *g)
{
	size_t drop;

	if (g->tail_len + GEN_TOKEN_MAX_BYTES <= GEN_TAIL_CAP)
		return;
	drop = g->tail_len - GEN_REACH;
	memmove(g->tail, g->tail + drop, GEN_REACH);
	g->tail_len = GEN_REACH;
	g->tail_starts >>= drop;
	g->tail_open >>= drop;
}

/* Appends text token `id` to the stream's tail (gen_tail_room made room),
 * marking where it starts and whether a longer token could run on. */
static void
gen_tail_push(struct gen_stream *g, uint32_t id)
{
	const struct gen_vocab_entry *e = &gen_vocab_text[id -
	    GEN_FIRST_TEXT_ID];

	memcpy(g->tail + g->tail_len, e->text, e->len);
	g->tail_starts |= UINT64_C(1) << g->tail_len;
	if (gen_open[id - GEN_FIRST_TEXT_ID])
		g->tail_open |= UINT64_C(1) << g->tail_len;
	g->tail_len = (uint8_t)(g->tail_len + e->len);
}

/*
 * The next token of a small sentence structure, decided only by the PRNG
 * and the stream's fields (hence the prefix property): a capitalised start
 * ("The" at the beginning or after a newline, " The" after a sentence
 * end), then words, pieces, punctuation, numbers and stress tokens drawn
 * by weight (no two punctuation tokens in a row), then a sentence end,
 * followed one time in GEN_NL_ODDS by a newline token. `words` counts the
 * non-punctuation tokens of the current sentence. A token that would make
 * the text non-canonical (gen_canonical: " the" then "ness" reads back as
 * " then", "es", "s") is drawn again, up to GEN_REDRAWS times.
 */
uint32_t
gen_next(struct gen_stream *g)
{
	unsigned kind = g->produced == 0 ? GEN_K_NL : gen_kind_of(g->last);
	enum gen_ctx c;
	uint32_t id;
	int tries;

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
	gen_tail_room(g);
	for (tries = 1;; tries++) {
		id = gen_draw(g, c);
		if (tries == GEN_REDRAWS || gen_canonical(g, id))
			break;
	}
	gen_tail_push(g, id);

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
