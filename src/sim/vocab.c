/*
 * sim/vocab.c - the simulator's tokenizer: a trie over the text tokens of
 * vocab_table.c, greedy longest match, token texts.
 *
 * The trie is static and filled once, on first use, under pthread_once;
 * it is never written again, so any number of threads may read it
 * afterwards. Static rather than allocated: nothing to free, nothing for a
 * leak checker.
 */
#include "sim/vocab_table.h"

#include "text/release.h"

_Static_assert(RELEASE_FEED_MAX >= SIM_TOKEN_MAX_BYTES,
    "a token must fit in one release feed");

#include <pthread.h>
#include <string.h>

/*
 * Room in the static tables: trie nodes (at most one per byte of text, plus
 * the root; ~3,500 are used) and nodes with a direct child table. A
 * vocabulary that outgrows SIM_TRIE_MAX loses its last tokens from the
 * tokenizer, which the unit tests notice; it cannot overflow.
 */
#define SIM_TRIE_MAX 16384u
#define SIM_WIDE_MAX 8u

/* Nodes with this many children get a direct child table (the root and
 * " "): most matches pass through them. */
#define SIM_WIDE_MIN 16u

_Static_assert(SIM_TRIE_MAX <= UINT16_MAX, "trie indices are 16 bits");
_Static_assert(SIM_FIRST_TEXT_ID + SIM_VOCAB_MAX_TEXT <= UINT16_MAX,
    "token ids in the tables are 16 bits");

/*
 * A node of the tokenizer's trie: its first child and next sibling
 * (indices into sim_trie; 0, the root, stands for none as it is nobody's
 * child), the text token whose text ends here (0 = none: text ids are
 * >= 256), for a wide node 1 + the index of its table in sim_wide, and the
 * byte on the edge from its parent.
 */
struct sim_node {
	uint16_t child;
	uint16_t sibling;
	uint16_t id;
	uint8_t wide;
	unsigned char byte;
};

static pthread_once_t sim_trie_once = PTHREAD_ONCE_INIT;
static struct sim_node sim_trie[SIM_TRIE_MAX];  /* node 0 is the root */
static uint16_t sim_wide[SIM_WIDE_MAX][256];    /* wide node's children */
static unsigned char sim_open[SIM_VOCAB_MAX_TEXT];  /* text token i is a
					 * prefix of a longer one */

/*
 * Adds text token `id` (bytes s[0..len), len >= 1) to the trie, taking new
 * nodes from *used. With equal texts the first one keeps the node, so the
 * tokenizer yields the lower id (the vocabulary has none; the tests check).
 * Returns the token's node, or 0 if the trie is full.
 */
static uint32_t
sim_trie_add(uint32_t *used, const unsigned char *s, size_t len, uint32_t id)
{
	uint32_t n = 0, c;
	size_t i;

	for (i = 0; i < len; i++) {
		for (c = sim_trie[n].child; c != 0; c = sim_trie[c].sibling)
			if (sim_trie[c].byte == s[i])
				break;
		if (c == 0) {
			if (*used + 1 >= SIM_TRIE_MAX)
				return 0;
			c = ++*used;
			sim_trie[c].byte = s[i];
			sim_trie[c].sibling = sim_trie[n].child;
			sim_trie[n].child = (uint16_t)c;
		}
		n = c;
	}
	if (sim_trie[n].id == 0)
		sim_trie[n].id = (uint16_t)id;
	return n;
}

/* Gives up to SIM_WIDE_MAX of the `nodes` nodes with SIM_WIDE_MIN children
 * or more a direct child table in sim_wide. */
static void
sim_trie_widen(uint32_t nodes)
{
	uint32_t n, c, k, nwide = 0;

	for (n = 0; n < nodes && nwide < SIM_WIDE_MAX; n++) {
		for (k = 0, c = sim_trie[n].child; c != 0;
		    c = sim_trie[c].sibling)
			k++;
		if (k < SIM_WIDE_MIN)
			continue;
		for (c = sim_trie[n].child; c != 0; c = sim_trie[c].sibling)
			sim_wide[nwide][sim_trie[c].byte] = (uint16_t)c;
		sim_trie[n].wide = (uint8_t)++nwide;
	}
}

/* Builds the trie and sim_open (run once by pthread_once). */
static void
sim_trie_build(void)
{
	uint32_t i, n, used = 0;

	for (i = 0; i < sim_vocab_ntext; i++)
		(void)sim_trie_add(&used,
		    (const unsigned char *)sim_vocab_text[i].text,
		    sim_vocab_text[i].len, SIM_FIRST_TEXT_ID + i);
	/* Adding a token again only finds its node: now that every token is
	 * in, see which ones longer tokens continue. */
	for (i = 0; i < sim_vocab_ntext; i++) {
		n = sim_trie_add(&used,
		    (const unsigned char *)sim_vocab_text[i].text,
		    sim_vocab_text[i].len, SIM_FIRST_TEXT_ID + i);
		sim_open[i] = n != 0 && sim_trie[n].child != 0;
	}
	sim_trie_widen(used + 1);
}

uint32_t
sim_vocab_size(void)
{
	return SIM_FIRST_TEXT_ID + sim_vocab_ntext;
}

const char *
sim_token_text(uint32_t id, size_t *len)
{
	const struct sim_vocab_entry *e;
	size_t dummy;

	if (len == NULL)
		len = &dummy;
	if (id < SIM_FIRST_TEXT_ID) {
		*len = 1;
		return (const char *)&sim_vocab_bytes[id];
	}
	if (id == SIM_EOS_ID) {
		*len = 0;
		return "";
	}
	if (id - SIM_FIRST_TEXT_ID >= sim_vocab_ntext) {
		*len = 0;
		return NULL;
	}
	e = &sim_vocab_text[id - SIM_FIRST_TEXT_ID];
	*len = e->len;
	return e->text;
}

/* The child of node n on byte c, 0 if none. */
static uint32_t
sim_child(uint32_t n, unsigned char c)
{
	if (sim_trie[n].wide != 0)
		return sim_wide[sim_trie[n].wide - 1][c];
	for (n = sim_trie[n].child; n != 0; n = sim_trie[n].sibling)
		if (sim_trie[n].byte == c)
			break;
	return n;
}

uint32_t
sim_vocab_match(const unsigned char *p, size_t len, size_t *tlen)
{
	uint32_t n = 0, best = p[0];
	size_t i;

	pthread_once(&sim_trie_once, sim_trie_build);
	*tlen = 1;
	for (i = 0; i < len; i++) {
		n = sim_child(n, p[i]);
		if (n == 0)
			break;
		if (sim_trie[n].id != 0) {
			best = sim_trie[n].id;
			*tlen = i + 1;
		}
	}
	return best;
}

/* Greedy longest match, left to right (sim/vocab.h). */
size_t
sim_tokenize(const char *prompt, size_t len, uint32_t *ids, size_t cap)
{
	const unsigned char *p = (const unsigned char *)prompt;
	size_t i = 0, n = 0, tlen;
	uint32_t id;

	if (len == 0)
		return 0;
	while (i < len) {
		id = sim_vocab_match(p + i, len - i, &tlen);
		if (n < cap)
			ids[n] = id;
		n++;
		i += tlen;
	}
	return n;
}


int
sim_vocab_is_prefix(uint32_t id)
{
	pthread_once(&sim_trie_once, sim_trie_build);
	return id >= SIM_FIRST_TEXT_ID &&
	    id - SIM_FIRST_TEXT_ID < sim_vocab_ntext &&
	    sim_open[id - SIM_FIRST_TEXT_ID];
}

enum ts_err
sim_release_token(struct release *r, uint32_t id, struct release_chunk *out,
    int *stop)
{
	size_t len;
	const char *t = sim_token_text(id, &len);

	if (t == NULL) {
		out->p = r->buf;
		out->len = 0;
		if (stop != NULL)
			*stop = r->stop.matched;
		return TS_EINVAL;
	}
	return release_bytes(r, t, len, out, stop);
}
