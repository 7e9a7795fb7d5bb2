/*
 * sim/lab.c - the lab generator (sim/lab.h): a small sentence structure
 * drawn by integer weights over the vocabulary of vocab_table.c, kept
 * canonical against the tokenizer of vocab.c.
 *
 * Only fixed-width integer arithmetic is used, so a prompt gives the same
 * ids on every machine (the contract in sim/lab.h). The sampling tables
 * (running weight sums per context) are static and filled once, on first
 * use, under pthread_once, then only read.
 */
#include "sim/lab.h"

#include <pthread.h>
#include <string.h>

#include "sim/vocab_table.h"

/* A sentence has at least SIM_SENTENCE_MIN words and ends after at most
 * SIM_SENTENCE_MAX (one more if the last token was punctuation). */
#define SIM_SENTENCE_MIN 6u
#define SIM_SENTENCE_MAX 18u

/* One in SIM_NL_ODDS sentence ends is followed by a newline token. */
#define SIM_NL_ODDS 4u

/* Draws per token before a non-canonical one is let through (sim_lab_next). */
#define SIM_REDRAWS 16

/* A match starting this many bytes or fewer before the end of the text
 * can reach bytes appended to it. */
#define SIM_REACH (SIM_TOKEN_MAX_BYTES - 1)

/* Bytes in sim_lab.tail: the last SIM_REACH bytes, room for one more
 * token, and slack so that the tail is compacted only now and then. */
#define SIM_TAIL_CAP sizeof(((struct sim_lab *)0)->tail)

_Static_assert(SIM_TAIL_CAP >= SIM_REACH + SIM_TOKEN_MAX_BYTES + 1,
    "sim_lab.tail is too small");
_Static_assert(SIM_TAIL_CAP <= 64, "sim_lab.tail_starts has 64 bits");

/* Where in a sentence the sampler is; each has its own sim_table. */
enum sim_ctx {
	SIM_CTX_START,          /* first token, or after a newline: "The" */
	SIM_CTX_SSTART,         /* after a sentence end: " The" */
	SIM_CTX_END,            /* ending a sentence: "." */
	SIM_CTX_NL,             /* a newline after a sentence end */
	SIM_CTX_BODY,           /* inside a sentence */
	SIM_CTX_BODY_NOPUNCT,   /* inside a sentence, after punctuation */
	SIM_CTX_MAX
};

/* The tokens a context draws from; cum[i] is the sum of the weights of
 * id[0..i]. */
struct sim_table {
	uint32_t n;                     /* entries in use */
	uint16_t id[SIM_VOCAB_MAX_TEXT];
	uint32_t cum[SIM_VOCAB_MAX_TEXT];
};

static pthread_once_t sim_lab_once = PTHREAD_ONCE_INIT;
static struct sim_table sim_tables[SIM_CTX_MAX];

/* Kind of text token `id`; SIM_K_NL (a line break) for anything else. */
static unsigned
sim_kind_of(uint32_t id)
{
	if (id < SIM_FIRST_TEXT_ID ||
	    id - SIM_FIRST_TEXT_ID >= sim_vocab_ntext)
		return SIM_K_NL;
	return sim_vocab_text[id - SIM_FIRST_TEXT_ID].kind;
}

/* Whether tokens of `kind` may be drawn in context `c`. */
static int
sim_ctx_has(enum sim_ctx c, unsigned kind)
{
	switch (c) {
	case SIM_CTX_START:
		return kind == SIM_K_START;
	case SIM_CTX_SSTART:
		return kind == SIM_K_SSTART;
	case SIM_CTX_END:
		return kind == SIM_K_END;
	case SIM_CTX_NL:
		return kind == SIM_K_NL;
	case SIM_CTX_BODY:
	case SIM_CTX_BODY_NOPUNCT:
		if (kind == SIM_K_PUNCT)
			return c == SIM_CTX_BODY;
		return kind == SIM_K_WORD || kind == SIM_K_PIECE ||
		    kind == SIM_K_NUM || kind == SIM_K_STRESS ||
		    kind == SIM_K_NL;
	case SIM_CTX_MAX:
		break;
	}
	return 0;
}

/* Fills context c's table with the vocabulary's drawable tokens. */
static void
sim_table_build(enum sim_ctx c)
{
	struct sim_table *t = &sim_tables[c];
	uint32_t i, sum = 0;

	for (i = 0; i < sim_vocab_ntext; i++) {
		if (sim_vocab_text[i].weight == 0 ||
		    !sim_ctx_has(c, sim_vocab_text[i].kind))
			continue;
		sum += sim_vocab_text[i].weight;
		t->id[t->n] = (uint16_t)(SIM_FIRST_TEXT_ID + i);
		t->cum[t->n] = sum;
		t->n++;
	}
}

/* Builds the sampling tables (run once by pthread_once). */
static void
sim_lab_build(void)
{
	int c;

	for (c = 0; c < SIM_CTX_MAX; c++)
		sim_table_build((enum sim_ctx)c);
}

void
sim_lab_init(struct sim_lab *g, const char *prompt, size_t len)
{
	pthread_once(&sim_lab_once, sim_lab_build);
	rng_seed(&g->rng, rng_seed_of(prompt, len));
	g->produced = 0;
	g->last = 0;
	g->words = 0;
	g->tail_starts = 0;
	g->tail_open = 0;
	g->tail_len = 0;
}

/*
 * A token of context c drawn with probability proportional to its weight:
 * a uniform point below the total weight, then a binary search for the
 * first running sum above it. Returns its id.
 */
static uint32_t
sim_draw(struct sim_lab *g, enum sim_ctx c)
{
	const struct sim_table *t = &sim_tables[c];
	uint32_t r, lo = 0, hi, mid;

	if (t->n == 0)          /* a vocabulary without this kind */
		return SIM_FIRST_TEXT_ID;
	r = rng_bounded(&g->rng, t->cum[t->n - 1]);
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
 * Whether the sentence ends now: never before SIM_SENTENCE_MIN words,
 * always at SIM_SENTENCE_MAX, in between with odds growing by 1/16 a word,
 * so sentences run 6..18 words, about 10 on average.
 */
static int
sim_sentence_ends(struct sim_lab *g)
{
	if (g->words >= SIM_SENTENCE_MAX)
		return 1;
	if (g->words < SIM_SENTENCE_MIN)
		return 0;
	return rng_bounded(&g->rng, 16) <= g->words - SIM_SENTENCE_MIN;
}

/*
 * Whether text token `id`, appended to the stream, keeps its text
 * canonical: greedy longest match (sim_tokenize) over the text must still
 * find, at each token start within reach of the new bytes, the token that
 * was generated there. A match is at most SIM_TOKEN_MAX_BYTES long, so
 * only starts in the last SIM_REACH bytes can reach the new token, and
 * only where the token there is a prefix of a longer one (tail_open) can
 * the match run on; the new token itself is always the longest match at
 * its own start, as nothing follows it yet. Checking this at each step
 * keeps the whole text canonical: once a start falls out of reach its
 * match cannot change. Writes the token's bytes past the tail's end as
 * scratch (sim_tail_room made room).
 */
static int
sim_canonical(struct sim_lab *g, uint32_t id)
{
	const struct sim_vocab_entry *e = &sim_vocab_text[id -
	    SIM_FIRST_TEXT_ID];
	size_t len = g->tail_len, b, end, m;

	memcpy(g->tail + len, e->text, e->len);
	for (b = len > SIM_REACH ? len - SIM_REACH : 0; b < len; b++) {
		if ((g->tail_open & (UINT64_C(1) << b)) == 0)
			continue;
		for (end = b + 1; end < len; end++)
			if (g->tail_starts & (UINT64_C(1) << end))
				break;
		(void)sim_vocab_match(g->tail + b, len + e->len - b, &m);
		if (m != end - b)
			return 0;
	}
	return 1;
}

/* Makes room for one token at the end of the stream's tail, keeping the
 * last SIM_REACH bytes. */
static void
sim_tail_room(struct sim_lab *g)
{
	size_t drop;

	if (g->tail_len + SIM_TOKEN_MAX_BYTES <= SIM_TAIL_CAP)
		return;
	drop = g->tail_len - SIM_REACH;
	memmove(g->tail, g->tail + drop, SIM_REACH);
	g->tail_len = SIM_REACH;
	g->tail_starts >>= drop;
	g->tail_open >>= drop;
}

/* Appends text token `id` to the stream's tail (sim_tail_room made room),
 * marking where it starts and whether a longer token could run on. */
static void
sim_tail_push(struct sim_lab *g, uint32_t id)
{
	const struct sim_vocab_entry *e = &sim_vocab_text[id -
	    SIM_FIRST_TEXT_ID];

	memcpy(g->tail + g->tail_len, e->text, e->len);
	g->tail_starts |= UINT64_C(1) << g->tail_len;
	if (sim_vocab_is_prefix(id))
		g->tail_open |= UINT64_C(1) << g->tail_len;
	g->tail_len = (uint8_t)(g->tail_len + e->len);
}

/*
 * The next token of a small sentence structure, decided only by the PRNG
 * and the stream's fields (hence the prefix property): a capitalised start
 * ("The" at the beginning or after a newline, " The" after a sentence
 * end), then words, pieces, punctuation, numbers and stress tokens drawn
 * by weight (no two punctuation tokens in a row), then a sentence end,
 * followed one time in SIM_NL_ODDS by a newline token. `words` counts the
 * non-punctuation tokens of the current sentence. A token that would make
 * the text non-canonical (sim_canonical: " the" then "ness" reads back as
 * " then", "es", "s") is drawn again, up to SIM_REDRAWS times.
 */
uint32_t
sim_lab_next(struct sim_lab *g)
{
	unsigned kind = g->produced == 0 ? SIM_K_NL : sim_kind_of(g->last);
	enum sim_ctx c;
	uint32_t id;
	int tries;

	if (kind == SIM_K_NL)
		c = SIM_CTX_START;
	else if (kind == SIM_K_END)
		c = rng_bounded(&g->rng, SIM_NL_ODDS) == 0 ? SIM_CTX_NL :
		    SIM_CTX_SSTART;
	else if (kind == SIM_K_PUNCT)
		c = SIM_CTX_BODY_NOPUNCT;
	else if (sim_sentence_ends(g))
		c = SIM_CTX_END;
	else
		c = SIM_CTX_BODY;
	sim_tail_room(g);
	for (tries = 1;; tries++) {
		id = sim_draw(g, c);
		if (tries == SIM_REDRAWS || sim_canonical(g, id))
			break;
	}
	sim_tail_push(g, id);

	switch (sim_kind_of(id)) {
	case SIM_K_END:
	case SIM_K_NL:
		g->words = 0;
		break;
	case SIM_K_START:
	case SIM_K_SSTART:
		g->words = 1;
		break;
	case SIM_K_PUNCT:
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
