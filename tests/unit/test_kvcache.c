/*
 * test_kvcache.c - the paged KV cache model (src/engine/kvcache.c):
 * prefix hits and vLLM's last-token rule, sharing between live
 * sequences, LRU eviction in vLLM's free-queue order, freeing on finish
 * and cancel, caching of generated blocks, a dry pool, reset, argument
 * checks and the block hash's formula.
 *
 * Then a seeded random workload (start, append, free and reset over
 * prompts that share random prefixes, with each other and with earlier
 * prompts and answers) run side by side with a brute-force reference
 * model kept here, which names a cached block by its whole token prefix
 * instead of a hash, keeps the free queue as a plain array and finds
 * everything by linear search. After every operation the two must agree
 * on every block table, reference count and counter, and the cache's
 * own invariants (kv_cache_check) must hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "engine/kvcache.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ids[i] = base + i. */
static void
fill(uint32_t *ids, size_t n, uint32_t base)
{
	size_t i;

	for (i = 0; i < n; i++)
		ids[i] = base + (uint32_t)i;
}

static struct kv_cache *
mk(uint32_t nblocks, uint32_t block_size)
{
	struct kv_cache *kv;

	assert_int_equal(kv_cache_create(&kv, nblocks, block_size), TS_OK);
	assert_non_null(kv);
	return kv;
}

/* Starts s over ids[0..n) and returns the tokens hit. */
static uint32_t
start(struct kv_cache *kv, struct kv_seq *s, const uint32_t *ids, size_t n)
{
	uint32_t hit = UINT32_MAX;

	assert_int_equal(kv_seq_start(kv, s, ids, n, &hit), TS_OK);
	assert_null(kv_cache_check(kv));
	return hit;
}

static struct kv_cache_stats
stats(const struct kv_cache *kv)
{
	struct kv_cache_stats st;

	kv_cache_stats(kv, &st);
	return st;
}

/* ---- the cases of the brief -------------------------------------------- */

static void
test_hit(void **state)
{
	struct kv_cache *kv = mk(64, 16);
	struct kv_seq s = {0};
	uint32_t p[100];

	(void)state;
	fill(p, NELEM(p), 1000);
	assert_int_equal(start(kv, &s, p, 100), 0);
	assert_int_equal(s.nblocks, 7);
	assert_int_equal(s.tokens, 100);
	assert_int_equal(stats(kv).cached, 6);  /* the partial one is not */
	kv_seq_free(kv, &s);
	assert_int_equal(start(kv, &s, p, 100), 96);
	kv_seq_free(kv, &s);
	assert_int_equal(stats(kv).queries, 200);
	assert_int_equal(stats(kv).hits, 96);
	assert_int_equal(stats(kv).requests, 2);
	kv_cache_destroy(kv);

	/* 96 tokens: the last one is never a hit, so 5 blocks of 6 */
	kv = mk(64, 16);
	assert_int_equal(start(kv, &s, p, 96), 0);
	kv_seq_free(kv, &s);
	assert_int_equal(start(kv, &s, p, 96), 80);
	assert_int_equal(s.nblocks, 6);
	/* the recomputed 6th block is not cached twice */
	assert_int_equal(stats(kv).cached, 6);
	assert_int_equal(stats(kv).used, 6);
	kv_seq_free(kv, &s);
	/* and a prompt one token longer hits all 6 */
	p[96] = 7;
	assert_int_equal(start(kv, &s, p, 97), 96);
	kv_seq_free(kv, &s);
	kv_cache_destroy(kv);
}

static void
test_partial_hit(void **state)
{
	struct kv_cache *kv = mk(64, 16);
	struct kv_seq s = {0};
	uint32_t p[100], q[100];

	(void)state;
	fill(p, NELEM(p), 1000);
	fill(q, NELEM(q), 5000);
	memcpy(q, p, 40 * sizeof(*q));
	assert_int_equal(start(kv, &s, p, 100), 0);
	kv_seq_free(kv, &s);
	assert_int_equal(start(kv, &s, q, 100), 32);
	kv_seq_free(kv, &s);
	/* a different first token: nothing, though later blocks match */
	p[0] = 1;
	assert_int_equal(start(kv, &s, p, 100), 0);
	kv_seq_free(kv, &s);
	kv_cache_destroy(kv);
}

static void
test_sharing(void **state)
{
	struct kv_cache *kv = mk(64, 16);
	struct kv_seq a = {0}, b = {0};
	uint32_t p[100], i;

	(void)state;
	fill(p, NELEM(p), 1000);
	assert_int_equal(start(kv, &a, p, 100), 0);
	assert_int_equal(start(kv, &b, p, 100), 96);
	/* 6 shared full blocks and a partial block each */
	assert_int_equal(stats(kv).used, 8);
	assert_true(kv_cache_usage(kv) == 8.0 / 64.0);
	for (i = 0; i < 6; i++) {
		assert_int_equal(a.blocks[i], b.blocks[i]);
		assert_int_equal(kv_cache_block_ref(kv, a.blocks[i]), 2);
	}
	assert_int_not_equal(a.blocks[6], b.blocks[6]);
	assert_int_equal(kv_cache_block_ref(kv, a.blocks[6]), 1);
	kv_seq_free(kv, &a);
	assert_int_equal(stats(kv).used, 7);
	assert_int_equal(kv_cache_block_ref(kv, b.blocks[0]), 1);
	kv_seq_free(kv, &b);
	assert_int_equal(stats(kv).used, 0);
	assert_true(kv_cache_usage(kv) == 0.0);
	assert_null(kv_cache_check(kv));
	kv_cache_destroy(kv);
}

static void
test_eviction(void **state)
{
	struct kv_cache *kv = mk(8, 16);
	struct kv_seq s = {0};
	uint32_t a[128], b[128], i;

	(void)state;
	fill(a, NELEM(a), 1000);
	fill(b, NELEM(b), 9000);
	assert_int_equal(start(kv, &s, a, 128), 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(s.blocks[i], i);
	kv_seq_free(kv, &s);
	assert_int_equal(stats(kv).cached, 8);
	assert_int_equal(stats(kv).used, 0);
	assert_int_equal(stats(kv).evictions, 0);

	/* A small B takes the tail of A: blocks 7, 6, 5 */
	assert_int_equal(start(kv, &s, b, 48), 0);
	assert_int_equal(s.blocks[0], 7);
	assert_int_equal(s.blocks[1], 6);
	assert_int_equal(s.blocks[2], 5);
	assert_int_equal(stats(kv).evictions, 3);
	kv_seq_free(kv, &s);
	/* A still hits its first 5 blocks, and takes B's 3 for the rest */
	assert_int_equal(start(kv, &s, a, 128), 80);
	for (i = 0; i < 5; i++)
		assert_int_equal(s.blocks[i], i);
	assert_int_equal(stats(kv).evictions, 6);
	assert_int_equal(stats(kv).used, 8);
	kv_seq_free(kv, &s);

	/* A B of 8 blocks evicts all of A */
	assert_int_equal(start(kv, &s, b, 128), 0);
	assert_int_equal(stats(kv).evictions, 14);
	assert_int_equal(stats(kv).cached, 8);
	kv_seq_free(kv, &s);
	assert_int_equal(start(kv, &s, a, 128), 0);
	kv_seq_free(kv, &s);
	assert_int_equal(stats(kv).evictions, 22);
	kv_cache_destroy(kv);
}

/*
 * A block freed without a hash (a partial one) goes to the tail like any
 * other, and never-used blocks go first.
 */
static void
test_queue_order(void **state)
{
	struct kv_cache *kv = mk(6, 4);
	struct kv_seq s = {0}, t = {0};
	uint32_t a[6], b[8];

	(void)state;
	fill(a, NELEM(a), 100);
	fill(b, NELEM(b), 200);
	assert_int_equal(start(kv, &s, a, 6), 0);   /* blocks 0 (full), 1 */
	kv_seq_free(kv, &s);                        /* queue 2 3 4 5 1 0 */
	assert_int_equal(start(kv, &t, b, 8), 0);
	assert_int_equal(t.blocks[0], 2);
	assert_int_equal(t.blocks[1], 3);
	assert_int_equal(start(kv, &s, b, 8), 4);   /* hits block 2 */
	assert_int_equal(s.blocks[1], 4);
	kv_seq_free(kv, &s);
	kv_seq_free(kv, &t);
	assert_int_equal(stats(kv).evictions, 0);
	assert_int_equal(stats(kv).cached, 3);      /* a's first, b's two */
	kv_cache_destroy(kv);
}

static void
test_finish_and_cancel_free(void **state)
{
	struct kv_cache *kv = mk(32, 16);
	struct kv_seq s = {0}, c = {0};
	uint32_t p[50], i;

	(void)state;
	fill(p, NELEM(p), 1000);
	/* finished: prompt and answer */
	assert_int_equal(start(kv, &s, p, 50), 0);
	for (i = 0; i < 20; i++)
		assert_int_equal(kv_seq_append(kv, &s, 77 + i), TS_OK);
	assert_int_equal(s.tokens, 70);
	assert_int_equal(s.nblocks, 5);
	kv_seq_free(kv, &s);
	assert_int_equal(stats(kv).used, 0);
	assert_null(s.blocks);
	assert_int_equal(s.tokens, 0);
	kv_seq_free(kv, &s);                        /* twice is fine */
	/* cancelled in prefill */
	assert_int_equal(start(kv, &c, p, 50), 48);
	assert_int_equal(stats(kv).used, 4);
	kv_seq_free(kv, &c);
	assert_int_equal(stats(kv).used, 0);
	assert_int_equal(stats(kv).cached, 4);
	/* still hit-able */
	assert_int_equal(start(kv, &c, p, 50), 48);
	kv_seq_free(kv, &c);
	assert_null(kv_cache_check(kv));
	kv_cache_destroy(kv);
}

static void
test_generated_cached(void **state)
{
	struct kv_cache *kv = mk(32, 16);
	struct kv_seq s = {0};
	uint32_t p[72], q[72], i;

	(void)state;
	fill(p, 40, 1000);
	fill(p + 40, 32, 30000);    /* the answer */
	assert_int_equal(start(kv, &s, p, 40), 0);
	assert_int_equal(stats(kv).cached, 2);
	for (i = 40; i < 72; i++)
		assert_int_equal(kv_seq_append(kv, &s, p[i]), TS_OK);
	/* blocks 2 (8 prompt + 8 generated ids) and 3 filled, 4 partial */
	assert_int_equal(stats(kv).cached, 4);
	assert_int_equal(s.nblocks, 5);
	kv_seq_free(kv, &s);
	/* prompt + answer as a new prompt hits the generated blocks */
	assert_int_equal(start(kv, &s, p, 72), 64);
	kv_seq_free(kv, &s);
	/* the same prompt with another answer hits the prompt only */
	memcpy(q, p, sizeof(q));
	q[41] = 1;
	assert_int_equal(start(kv, &s, q, 72), 32);
	kv_seq_free(kv, &s);
	kv_cache_destroy(kv);
}

static void
test_pool_dry(void **state)
{
	struct kv_cache *kv = mk(4, 16);
	struct kv_seq a = {0}, b = {0}, c = {0};
	uint32_t p[64], q[40];

	(void)state;
	fill(p, NELEM(p), 1000);
	fill(q, NELEM(q), 5000);
	assert_int_equal(start(kv, &a, p, 64), 0);
	assert_int_equal(stats(kv).used, 4);
	assert_true(kv_cache_usage(kv) == 1.0);
	/* no block left: all of q is overflow */
	assert_int_equal(start(kv, &b, q, 40), 0);
	assert_int_equal(b.nblocks, 0);
	assert_int_equal(b.overflow, 40);
	assert_int_equal(b.uncacheable, 1);
	assert_int_equal(kv_seq_append(kv, &b, 1), TS_OK);
	assert_int_equal(b.tokens, 41);
	assert_int_equal(b.overflow, 41);
	/* a needs a fifth block for its next token */
	assert_int_equal(kv_seq_append(kv, &a, 2), TS_OK);
	assert_int_equal(a.overflow, 1);
	assert_int_equal(a.nblocks, 4);
	/* the same prompt again shares 3 blocks, the 4th is overflow */
	assert_int_equal(start(kv, &c, p, 64), 48);
	assert_int_equal(c.nblocks, 3);
	assert_int_equal(c.overflow, 16);
	assert_int_equal(stats(kv).overflow_tokens, 58);
	assert_int_equal(stats(kv).used, 4);
	assert_int_equal(kv_cache_reset(kv), TS_EINVAL);
	kv_seq_free(kv, &c);
	kv_seq_free(kv, &b);
	kv_seq_free(kv, &a);
	assert_int_equal(stats(kv).used, 0);
	assert_null(kv_cache_check(kv));
	/* things work again */
	assert_int_equal(start(kv, &b, q, 40), 0);
	assert_int_equal(b.overflow, 0);
	assert_int_equal(b.nblocks, 3);
	kv_seq_free(kv, &b);
	assert_int_equal(start(kv, &b, q, 40), 32);
	kv_seq_free(kv, &b);
	/* reset forgets every block but no counter */
	assert_int_equal(kv_cache_reset(kv), TS_OK);
	assert_null(kv_cache_check(kv));
	assert_int_equal(stats(kv).cached, 0);
	assert_int_equal(stats(kv).overflow_tokens, 58);
	assert_int_equal(start(kv, &b, q, 40), 0);
	assert_int_equal(b.blocks[0], 0);
	kv_seq_free(kv, &b);
	kv_cache_destroy(kv);
}

static void
test_args(void **state)
{
	struct kv_cache *kv = (struct kv_cache *)&kv;
	struct kv_seq s = {0};
	uint32_t p[4] = {1, 2, 3, 4}, hit = 9;
	static const uint32_t bad[][2] = {
		{0, 16}, {KV_CACHE_MAX_BLOCKS + 1, 16}, {8, 0},
		{8, KV_CACHE_MAX_BLOCK_SIZE + 1},
	};
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(bad); i++) {
		assert_int_equal(kv_cache_create(&kv, bad[i][0], bad[i][1]),
		    TS_EINVAL);
		assert_null(kv);
	}
	kv_cache_destroy(NULL);
	kv = mk(1, 1);
	assert_int_equal(kv_seq_start(kv, &s, NULL, 1, &hit), TS_EINVAL);
	assert_int_equal(hit, 0);
	assert_int_equal(kv_seq_start(kv, &s, NULL, 0, &hit), TS_OK);
	assert_int_equal(hit, 0);
	assert_int_equal(s.nblocks, 0);
	assert_int_equal(kv_seq_append(kv, &s, 5), TS_OK);
	assert_int_equal(s.nblocks, 1);
	assert_int_equal(kv_seq_start(kv, &s, p, 4, NULL), TS_EINVAL);
	assert_int_equal(kv_seq_start(kv, &s, p, 4, NULL), TS_EINVAL);
	assert_int_equal(kv_seq_append(kv, &s, 6), TS_OK);
	assert_int_equal(s.overflow, 1);
	kv_seq_free(kv, &s);
	/* block size 1: every token but the last can hit */
	assert_int_equal(kv_seq_start(kv, &s, p, 1, &hit), TS_OK);
	kv_seq_free(kv, &s);
	assert_int_equal(kv_seq_start(kv, &s, p, 1, &hit), TS_OK);
	assert_int_equal(hit, 0);
	assert_int_equal(kv_seq_start(kv, &s, p, 2, &hit), TS_EINVAL);
	kv_seq_free(kv, &s);
	assert_int_equal(kv_seq_start(kv, &s, p, 2, &hit), TS_OK);
	assert_int_equal(hit, 1);
	kv_seq_free(kv, &s);
	assert_int_equal(stats(kv).queries, 4);
	assert_int_equal(stats(kv).hits, 1);
	assert_int_equal(kv_cache_block_ref(kv, 1), 0);    /* out of range */
	kv_cache_destroy(kv);

	kv = mk(KV_CACHE_MAX_BLOCKS, KV_CACHE_MAX_BLOCK_SIZE);
	assert_int_equal(stats(kv).nblocks, KV_CACHE_MAX_BLOCKS);
	kv_cache_destroy(kv);
}

/* The documented formula, and the chain the cache builds with it. */
static void
test_block_hash(void **state)
{
	struct kv_cache *kv = mk(8, 4);
	struct kv_seq s = {0};
	uint32_t ids[8] = {1, 0x01020304, 3, 4, 5, 6, 7, 0xffffffff};
	unsigned char b[8 + 4 * 4];
	uint64_t parent = 0x1122334455667788ULL, h;
	size_t i, j;

	(void)state;
	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)(parent >> (8 * i));
	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++)
			b[8 + 4 * i + j] = (unsigned char)(ids[i] >> (8 * j));
	h = rng_mix64(rng_fnv1a(RNG_FNV1A_INIT, b, sizeof(b)));
	assert_true(kv_block_hash(parent, ids, 4) == h);
	assert_true(kv_block_hash(0, ids, 4) != kv_block_hash(1, ids, 4));

	/* prompt blocks, then appended ones: the same chain */
	assert_int_equal(start(kv, &s, ids, 6), 0);
	h = kv_block_hash(0, ids, 4);
	assert_true(s.hash == h);
	assert_int_equal(kv_seq_append(kv, &s, ids[6]), TS_OK);
	assert_int_equal(kv_seq_append(kv, &s, ids[7]), TS_OK);
	assert_true(s.hash == kv_block_hash(h, ids + 4, 4));
	kv_cache_destroy(kv);
	free(s.blocks);
}

/* ---- the reference model ------------------------------------------------ */

#define R_BLOCKS 64
#define R_SEQS 10
#define R_HIST 8
#define R_MAXTOK 200

struct ref_block {
	uint32_t ref;
	int cached;
	uint32_t key[R_MAXTOK];     /* the whole prefix up to its end */
	size_t keylen;
};

struct ref_cache {
	uint32_t n, bs;
	struct ref_block b[R_BLOCKS];
	uint32_t queue[R_BLOCKS], nq;
	struct kv_cache_stats st;
};

struct ref_seq {
	int live;
	uint32_t ids[R_MAXTOK];
	uint32_t tokens, overflow;
	uint32_t blocks[R_BLOCKS], nblocks;
	int uncacheable;
};

static void
ref_reset(struct ref_cache *r)
{
	uint32_t i;

	r->nq = 0;
	for (i = 0; i < r->n; i++) {
		r->b[i].ref = 0;
		r->b[i].cached = 0;
		r->queue[r->nq++] = i;
	}
}

static uint32_t
ref_find(const struct ref_cache *r, const uint32_t *key, size_t len)
{
	uint32_t i;

	for (i = 0; i < r->n; i++)
		if (r->b[i].cached && r->b[i].keylen == len &&
		    memcmp(r->b[i].key, key, len * sizeof(*key)) == 0)
			return i;
	return UINT32_MAX;
}

static void
ref_dequeue(struct ref_cache *r, uint32_t b)
{
	uint32_t i;

	for (i = 0; r->queue[i] != b; i++)
		assert_true(i + 1 < r->nq);
	memmove(r->queue + i, r->queue + i + 1,
	    (r->nq - i - 1) * sizeof(*r->queue));
	r->nq--;
}

static uint32_t
ref_get(struct ref_cache *r)
{
	uint32_t b;

	if (r->nq == 0)
		return UINT32_MAX;
	b = r->queue[0];
	ref_dequeue(r, b);
	if (r->b[b].cached) {
		r->b[b].cached = 0;
		r->st.evictions++;
	}
	r->b[b].ref = 1;
	return b;
}

static void
ref_register(struct ref_cache *r, uint32_t b, const uint32_t *key, size_t len)
{
	if (ref_find(r, key, len) != UINT32_MAX)
		return;
	r->b[b].cached = 1;
	memcpy(r->b[b].key, key, len * sizeof(*key));
	r->b[b].keylen = len;
}

static uint32_t
ref_start(struct ref_cache *r, struct ref_seq *s, const uint32_t *ids,
    uint32_t n)
{
	uint32_t bs = r->bs, i, b, maxhit = n > 0 ? (n - 1) / bs : 0, hit;

	memset(s, 0, sizeof(*s));
	s->live = 1;
	memcpy(s->ids, ids, n * sizeof(*ids));
	s->tokens = n;
	for (i = 0; i < maxhit; i++) {
		b = ref_find(r, ids, (size_t)(i + 1) * bs);
		if (b == UINT32_MAX)
			break;
		if (r->b[b].ref++ == 0)
			ref_dequeue(r, b);
		s->blocks[s->nblocks++] = b;
	}
	hit = i * bs;
	r->st.requests++;
	r->st.queries += n;
	r->st.hits += hit;
	for (; i * bs < n; i++) {
		b = ref_get(r);
		if (b == UINT32_MAX) {
			s->uncacheable = 1;
			s->overflow = n - i * bs;
			r->st.overflow_tokens += s->overflow;
			break;
		}
		s->blocks[s->nblocks++] = b;
		if ((i + 1) * bs <= n)
			ref_register(r, b, ids, (size_t)(i + 1) * bs);
	}
	return hit;
}

static void
ref_append(struct ref_cache *r, struct ref_seq *s, uint32_t id)
{
	uint32_t b;

	s->ids[s->tokens++] = id;
	if (!s->uncacheable && (s->tokens - 1) % r->bs == 0) {
		b = ref_get(r);
		if (b == UINT32_MAX)
			s->uncacheable = 1;
		else
			s->blocks[s->nblocks++] = b;
	}
	if (s->uncacheable) {
		s->overflow++;
		r->st.overflow_tokens++;
	} else if (s->tokens % r->bs == 0) {
		ref_register(r, s->blocks[s->nblocks - 1], s->ids, s->tokens);
	}
}

static void
ref_free(struct ref_cache *r, struct ref_seq *s)
{
	uint32_t i = s->nblocks, b;

	while (i > 0) {
		b = s->blocks[--i];
		if (--r->b[b].ref == 0)
			r->queue[r->nq++] = b;
	}
	s->live = 0;
}

/* The cache against the model, and the reference counts against the
 * block tables of the live sequences. */
static void
compare(const struct kv_cache *kv, const struct ref_cache *r,
    const struct kv_seq *ks, const struct ref_seq *rs, size_t nseq)
{
	struct kv_cache_stats st;
	uint32_t count[R_BLOCKS] = {0}, cached = 0, i, j;
	const char *why = kv_cache_check(kv);

	if (why != NULL)
		fail_msg("kv_cache_check: %s", why);
	kv_cache_stats(kv, &st);
	for (i = 0; i < r->n; i++)
		cached += r->b[i].cached != 0;
	assert_true(st.used <= st.nblocks);
	assert_int_equal(st.used, r->n - r->nq);
	assert_int_equal(st.cached, cached);
	assert_true(st.requests == r->st.requests);
	assert_true(st.queries == r->st.queries);
	assert_true(st.hits == r->st.hits);
	assert_true(st.evictions == r->st.evictions);
	assert_true(st.overflow_tokens == r->st.overflow_tokens);
	for (i = 0; i < nseq; i++) {
		if (!rs[i].live) {
			assert_int_equal(ks[i].nblocks, 0);
			assert_int_equal(ks[i].tokens, 0);
			continue;
		}
		assert_int_equal(ks[i].tokens, rs[i].tokens);
		assert_int_equal(ks[i].overflow, rs[i].overflow);
		assert_int_equal(ks[i].uncacheable, rs[i].uncacheable);
		assert_int_equal(ks[i].nblocks, rs[i].nblocks);
		for (j = 0; j < rs[i].nblocks; j++) {
			assert_int_equal(ks[i].blocks[j], rs[i].blocks[j]);
			count[rs[i].blocks[j]]++;
		}
	}
	for (i = 0; i < r->n; i++) {
		assert_int_equal(kv_cache_block_ref(kv, i), r->b[i].ref);
		assert_int_equal(r->b[i].ref, count[i]);
	}
}

/* What the workload saw, to show it covered the interesting cases. */
struct workload_seen {
	uint64_t hits, evictions, overflow, resets, dups;
};

/*
 * A prompt of up to 64 tokens: a prefix of one of 4 fixed base texts or
 * of an earlier sequence's prompt + answer, then a few random ids, from
 * a small alphabet so that answers repeat too.
 */
static uint32_t
make_prompt(struct rng *g, uint32_t base[4][64],
    uint32_t hist[R_HIST][R_MAXTOK], const uint32_t *histlen, uint32_t *p)
{
	uint32_t n = 0, k, len, i, pick = rng_bounded(g, 3);

	if (pick < 2) {
		k = rng_bounded(g, 4);
		len = rng_bounded(g, 57);
		memcpy(p, base[k], len * sizeof(*p));
		n = len;
	} else {
		k = rng_bounded(g, R_HIST);
		len = histlen[k] ? rng_bounded(g, histlen[k] + 1) : 0;
		if (len > 56)
			len = 56;
		memcpy(p, hist[k], len * sizeof(*p));
		n = len;
	}
	len = rng_bounded(g, 9);
	for (i = 0; i < len; i++)
		p[n++] = rng_bounded(g, 6);
	return n;
}

static void
run_workload(uint32_t nblocks, uint32_t bs, uint64_t seed,
    struct workload_seen *seen)
{
	static struct ref_cache r;
	static struct ref_seq rs[R_SEQS];
	static uint32_t hist[R_HIST][R_MAXTOK];
	struct kv_seq ks[R_SEQS];
	uint32_t base[4][64], histlen[R_HIST] = {0}, p[R_MAXTOK];
	uint32_t i, j, n, hit, rhit, op, id, nhist = 0;
	struct kv_cache *kv = mk(nblocks, bs);
	struct kv_cache_stats after;
	struct rng g;
	int step, idle;

	assert_true(nblocks <= R_BLOCKS);
	memset(&r, 0, sizeof(r));
	memset(rs, 0, sizeof(rs));
	memset(ks, 0, sizeof(ks));
	r.n = nblocks;
	r.bs = bs;
	ref_reset(&r);
	rng_seed(&g, seed);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 64; j++)
			base[i][j] = rng_bounded(&g, 50);
	memset(seen, 0, sizeof(*seen));

	for (step = 0; step < 10000; step++) {
		op = rng_bounded(&g, 100);
		i = rng_bounded(&g, R_SEQS);
		if (op < 25 && !rs[i].live) {
			n = make_prompt(&g, base, hist, histlen, p);
			/* the last block is cached: it is recomputed */
			if (n > 0 && n % bs == 0 &&
			    ref_find(&r, p, n) != UINT32_MAX)
				seen->dups++;
			assert_int_equal(kv_seq_start(kv, &ks[i], p, n, &hit),
			    TS_OK);
			rhit = ref_start(&r, &rs[i], p, n);
			assert_int_equal(hit, rhit);
			assert_true(hit % bs == 0 && (n == 0 || hit < n));
		} else if (op < 85 && rs[i].live) {
			if (rs[i].tokens >= R_MAXTOK)
				continue;
			id = rng_bounded(&g, 6);
			assert_int_equal(kv_seq_append(kv, &ks[i], id), TS_OK);
			ref_append(&r, &rs[i], id);
		} else if (op < 98 && rs[i].live) {
			memcpy(hist[nhist], rs[i].ids,
			    rs[i].tokens * sizeof(*p));
			histlen[nhist] = rs[i].tokens;
			nhist = (nhist + 1) % R_HIST;
			kv_seq_free(kv, &ks[i]);
			ref_free(&r, &rs[i]);
		} else if (op >= 98) {
			/* 99: everything freed (cancelled) first */
			for (j = 0; op == 99 && j < R_SEQS; j++) {
				kv_seq_free(kv, &ks[j]);
				if (rs[j].live)
					ref_free(&r, &rs[j]);
			}
			/* live sequences without blocks do not count */
			idle = r.nq == r.n;
			assert_int_equal(kv_cache_reset(kv),
			    idle ? TS_OK : TS_EINVAL);
			if (idle) {
				ref_reset(&r);
				seen->resets++;
			}
		}
		compare(kv, &r, ks, rs, R_SEQS);
	}
	kv_cache_stats(kv, &after);
	seen->hits = after.hits;
	seen->evictions = after.evictions;
	seen->overflow = after.overflow_tokens;
	for (i = 0; i < R_SEQS; i++)
		kv_seq_free(kv, &ks[i]);
	assert_int_equal(stats(kv).used, 0);
	assert_null(kv_cache_check(kv));
	kv_cache_destroy(kv);
}

static void
test_random_workload(void **state)
{
	static const struct {
		uint32_t nblocks, bs;
		uint64_t seed;
	} cfg[] = {
		{40, 4, 1}, {64, 16, 2}, {24, 1, 3}, {16, 8, 4}, {64, 4, 5},
	};
	struct workload_seen seen, total = {0};
	size_t c;

	(void)state;
	for (c = 0; c < NELEM(cfg); c++) {
		run_workload(cfg[c].nblocks, cfg[c].bs, cfg[c].seed, &seen);
		print_message("kvcache workload %u x %u: hits %llu evictions "
		    "%llu overflow %llu resets %llu dups %llu\n",
		    cfg[c].nblocks, cfg[c].bs, (unsigned long long)seen.hits,
		    (unsigned long long)seen.evictions,
		    (unsigned long long)seen.overflow,
		    (unsigned long long)seen.resets,
		    (unsigned long long)seen.dups);
		total.hits += seen.hits;
		total.evictions += seen.evictions;
		total.overflow += seen.overflow;
		total.resets += seen.resets;
		total.dups += seen.dups;
		assert_true(seen.hits > 0 && seen.evictions > 0);
	}
	assert_true(total.overflow > 0 && total.resets > 0 && total.dups > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit),
		cmocka_unit_test(test_partial_hit),
		cmocka_unit_test(test_sharing),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_queue_order),
		cmocka_unit_test(test_finish_and_cancel_free),
		cmocka_unit_test(test_generated_cached),
		cmocka_unit_test(test_pool_dry),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_block_hash),
		cmocka_unit_test(test_random_workload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
