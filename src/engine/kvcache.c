/*
 * engine/kvcache.c - the paged KV cache model of engine/kvcache.h, after
 * vLLM v1's BlockPool (vllm/v1/core/block_pool.py): an array of blocks,
 * a doubly linked free-block queue threaded through it (allocation pops
 * the head, a freed block is appended at the tail, a hit takes a block
 * out of the middle in O(1)), and a hash table from block hash to block.
 *
 * The table is open addressing with linear probing over a power-of-two
 * array of block ids, at most half full, with backward-shift deletion
 * (Knuth, TAOCP vol. 3, 6.4, Algorithm R) so no tombstones pile up. The
 * home slot is the low bits of the hash, which rng_mix64 has spread.
 */
#include "engine/kvcache.h"

#include <stdlib.h>
#include <string.h>

#include "common/rng.h"

/* No block: the end of the free queue, an empty table slot. */
#define KV_NIL UINT32_MAX

struct kv_block {
	uint64_t hash;          /* valid when cached */
	uint32_t ref;           /* sequences holding it; 0: in the queue */
	uint32_t prev, next;    /* free queue links, when ref is 0 */
	uint32_t cached;        /* 1: hash is in the table */
};

struct kv_cache {
	struct kv_block *blocks;        /* [nblocks] */
	uint32_t *table;                /* [mask + 1] block ids or KV_NIL */
	uint32_t mask;
	uint32_t nblocks, block_size;
	uint32_t head, tail;            /* free queue: pop head, push tail */
	uint32_t nfree;                 /* blocks in the queue */
	uint32_t ncached;               /* blocks in the table */
	uint64_t requests, queries, hits, evictions, overflow_tokens;
};

/* ---- hashing ------------------------------------------------------------ */

/* The FNV-1a state of a block after its parent's hash, no ids yet. */
static uint64_t
kv_hash_begin(uint64_t parent)
{
	unsigned char b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)(parent >> (8 * i));
	return rng_fnv1a(RNG_FNV1A_INIT, b, sizeof(b));
}

/* One more token id into the state, least significant byte first. */
static uint64_t
kv_hash_feed(uint64_t h, uint32_t id)
{
	unsigned char b[4];

	b[0] = (unsigned char)id;
	b[1] = (unsigned char)(id >> 8);
	b[2] = (unsigned char)(id >> 16);
	b[3] = (unsigned char)(id >> 24);
	return rng_fnv1a(h, b, sizeof(b));
}

uint64_t
kv_block_hash(uint64_t parent, const uint32_t *ids, size_t n)
{
	uint64_t h = kv_hash_begin(parent);
	size_t i;

	for (i = 0; i < n; i++)
		h = kv_hash_feed(h, ids[i]);
	return rng_mix64(h);
}

/* ---- hash table --------------------------------------------------------- */

/* The cached block of hash h, or KV_NIL. */
static uint32_t
kv_table_find(const struct kv_cache *kv, uint64_t h)
{
	uint32_t i = (uint32_t)h & kv->mask, b;

	while ((b = kv->table[i]) != KV_NIL) {
		if (kv->blocks[b].hash == h)
			return b;
		i = (i + 1) & kv->mask;
	}
	return KV_NIL;
}

/* Adds block b under its hash, which is not in the table. */
static void
kv_table_insert(struct kv_cache *kv, uint32_t b)
{
	uint32_t i = (uint32_t)kv->blocks[b].hash & kv->mask;

	while (kv->table[i] != KV_NIL)
		i = (i + 1) & kv->mask;
	kv->table[i] = b;
}

/*
 * Removes block b, which is in the table, then closes the gap: each
 * later entry of the cluster whose home slot is not cyclically in
 * (gap, j] moves back into the gap, which moves on to j.
 */
static void
kv_table_delete(struct kv_cache *kv, uint32_t b)
{
	uint32_t i = (uint32_t)kv->blocks[b].hash & kv->mask, j, k;

	while (kv->table[i] != b)
		i = (i + 1) & kv->mask;
	j = i;
	for (;;) {
		j = (j + 1) & kv->mask;
		if (kv->table[j] == KV_NIL)
			break;
		k = (uint32_t)kv->blocks[kv->table[j]].hash & kv->mask;
		/* k in (i, j] cyclically: the entry stays */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		kv->table[i] = kv->table[j];
		i = j;
	}
	kv->table[i] = KV_NIL;
}

/* ---- free-block queue --------------------------------------------------- */

static void
kv_queue_push(struct kv_cache *kv, uint32_t b)
{
	struct kv_block *blk = &kv->blocks[b];

	blk->prev = kv->tail;
	blk->next = KV_NIL;
	if (kv->tail == KV_NIL)
		kv->head = b;
	else
		kv->blocks[kv->tail].next = b;
	kv->tail = b;
	kv->nfree++;
}

static void
kv_queue_remove(struct kv_cache *kv, uint32_t b)
{
	struct kv_block *blk = &kv->blocks[b];

	if (blk->prev == KV_NIL)
		kv->head = blk->next;
	else
		kv->blocks[blk->prev].next = blk->next;
	if (blk->next == KV_NIL)
		kv->tail = blk->prev;
	else
		kv->blocks[blk->next].prev = blk->prev;
	blk->prev = blk->next = KV_NIL;
	kv->nfree--;
}

/* ---- blocks ------------------------------------------------------------- */

/*
 * A block for new tokens, referenced once: the head of the free queue,
 * its hash dropped if it had one (vLLM BlockPool.get_new_blocks and
 * _maybe_evict_cached_block). KV_NIL if the queue is empty.
 */
static uint32_t
kv_block_get(struct kv_cache *kv)
{
	uint32_t b = kv->head;
	struct kv_block *blk;

	if (b == KV_NIL)
		return KV_NIL;
	kv_queue_remove(kv, b);
	blk = &kv->blocks[b];
	if (blk->cached) {
		kv_table_delete(kv, b);
		blk->cached = 0;
		kv->ncached--;
		kv->evictions++;
	}
	blk->ref = 1;
	return b;
}

/* One more reference on a cached block hit (vLLM BlockPool.touch). */
static void
kv_block_touch(struct kv_cache *kv, uint32_t b)
{
	if (kv->blocks[b].ref == 0)
		kv_queue_remove(kv, b);
	kv->blocks[b].ref++;
}

/* Registers the full, unregistered block b under h, unless h is cached
 * already (one block per hash). */
static void
kv_block_register(struct kv_cache *kv, uint32_t b, uint64_t h)
{
	if (kv_table_find(kv, h) != KV_NIL)
		return;
	kv->blocks[b].hash = h;
	kv->blocks[b].cached = 1;
	kv_table_insert(kv, b);
	kv->ncached++;
}

/* One reference less; at 0 the block joins the tail of the queue. */
static void
kv_block_put(struct kv_cache *kv, uint32_t b)
{
	if (--kv->blocks[b].ref == 0)
		kv_queue_push(kv, b);
}

/* ---- the pool ----------------------------------------------------------- */

/* Every block free, in id order, none cached. */
static void
kv_cache_init_queue(struct kv_cache *kv)
{
	uint32_t b;

	memset(kv->table, 0xff, ((size_t)kv->mask + 1) * sizeof(*kv->table));
	kv->head = kv->tail = KV_NIL;
	kv->nfree = 0;
	kv->ncached = 0;
	for (b = 0; b < kv->nblocks; b++) {
		kv->blocks[b].hash = 0;
		kv->blocks[b].ref = 0;
		kv->blocks[b].cached = 0;
		kv_queue_push(kv, b);
	}
}

enum ts_err
kv_cache_create(struct kv_cache **out, uint32_t nblocks, uint32_t block_size)
{
	struct kv_cache *kv = NULL;
	size_t slots = 2;

	*out = NULL;
	if (nblocks == 0 || nblocks > KV_CACHE_MAX_BLOCKS || block_size == 0 ||
	    block_size > KV_CACHE_MAX_BLOCK_SIZE)
		return TS_EINVAL;
	while (slots < 2 * (size_t)nblocks)
		slots *= 2;
	kv = calloc(1, sizeof(*kv));
	if (kv == NULL)
		goto out;
	kv->blocks = malloc((size_t)nblocks * sizeof(*kv->blocks));
	kv->table = malloc(slots * sizeof(*kv->table));
	if (kv->blocks == NULL || kv->table == NULL)
		goto out;
	kv->mask = (uint32_t)(slots - 1);
	kv->nblocks = nblocks;
	kv->block_size = block_size;
	kv_cache_init_queue(kv);
	*out = kv;
	return TS_OK;
out:
	kv_cache_destroy(kv);
	return TS_ENOMEM;
}

void
kv_cache_destroy(struct kv_cache *kv)
{
	if (kv == NULL)
		return;
	free(kv->blocks);
	free(kv->table);
	free(kv);
}

/* ---- sequences ---------------------------------------------------------- */

/* Room for `want` block ids in s's table (doubling); s unchanged on
 * TS_ENOMEM. */
static enum ts_err
kv_seq_reserve(struct kv_seq *s, size_t want)
{
	size_t cap = s->cap ? s->cap : 4;
	uint32_t *p;

	if (want <= s->cap)
		return TS_OK;
	while (cap < want)
		cap *= 2;
	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	p = realloc(s->blocks, cap * sizeof(*p));
	if (p == NULL)
		return TS_ENOMEM;
	s->blocks = p;
	s->cap = (uint32_t)cap;
	return TS_OK;
}

/*
 * First the hit (vLLM KVCacheManager.get_computed_blocks and
 * BlockPool.touch), then the new blocks (allocate_slots and
 * cache_full_blocks). The table is reserved first, for as many blocks as
 * the prompt can get (no more than the pool), so nothing can fail once
 * the cache is touched; a sequence holds each block once, so the guard
 * on cap only matters after a hash collision.
 */
enum ts_err
kv_seq_start(struct kv_cache *kv, struct kv_seq *s, const uint32_t *ids,
    size_t n, uint32_t *hit_tokens)
{
	size_t bs = kv->block_size, need, maxhit, i, covered;
	uint64_t h = 0, hb;
	uint32_t b;
	enum ts_err err;

	if (hit_tokens != NULL)
		*hit_tokens = 0;
	if (s->tokens != 0 || s->nblocks != 0 || (ids == NULL && n > 0))
		return TS_EINVAL;
	if (n > KV_SEQ_MAX_TOKENS)
		return TS_ELIMIT;
	need = (n + bs - 1) / bs;
	err = kv_seq_reserve(s, need < kv->nblocks ? need : kv->nblocks);
	if (err != TS_OK)
		return err;
	s->overflow = 0;
	s->uncacheable = 0;

	maxhit = n > 0 ? (n - 1) / bs : 0;
	for (i = 0; i < maxhit && s->nblocks < s->cap; i++) {
		hb = kv_block_hash(h, ids + i * bs, bs);
		b = kv_table_find(kv, hb);
		if (b == KV_NIL)
			break;
		kv_block_touch(kv, b);
		s->blocks[s->nblocks++] = b;
		h = hb;
	}
	if (hit_tokens != NULL)
		*hit_tokens = (uint32_t)(i * bs);
	kv->requests++;
	kv->queries += n;
	kv->hits += i * bs;

	for (; i < need; i++) {
		b = s->nblocks < s->cap ? kv_block_get(kv) : KV_NIL;
		if (b == KV_NIL) {
			s->uncacheable = 1;
			break;
		}
		s->blocks[s->nblocks++] = b;
		if ((i + 1) * bs <= n) {
			h = kv_block_hash(h, ids + i * bs, bs);
			kv_block_register(kv, b, h);
		}
	}
	covered = (size_t)s->nblocks * bs;
	if (covered > n)
		covered = n;
	s->overflow = (uint32_t)(n - covered);
	kv->overflow_tokens += n - covered;
	s->tokens = (uint32_t)n;
	s->hash = h;
	/* The partial last block's ids so far, if it has a block. */
	if (!s->uncacheable && n % bs != 0) {
		s->fnv = kv_hash_begin(h);
		for (i = n - n % bs; i < n; i++)
			s->fnv = kv_hash_feed(s->fnv, ids[i]);
	}
	return TS_OK;
}

/*
 * Without overflow, s holds ceil(tokens / block_size) blocks, the last
 * one filled by tokens % block_size ids (block_size if 0) whose FNV
 * state is s->fnv (vLLM KVCacheManager.allocate_slots for one new token,
 * then cache_blocks when it completes a block).
 */
enum ts_err
kv_seq_append(struct kv_cache *kv, struct kv_seq *s, uint32_t id)
{
	uint32_t off = s->tokens % kv->block_size, b;
	enum ts_err err;

	if (s->tokens >= KV_SEQ_MAX_TOKENS)
		return TS_ELIMIT;
	if (!s->uncacheable && off == 0) {
		err = kv_seq_reserve(s, (size_t)s->nblocks + 1);
		if (err != TS_OK)
			return err;
		b = kv_block_get(kv);
		if (b == KV_NIL) {
			s->uncacheable = 1;
		} else {
			s->blocks[s->nblocks++] = b;
			s->fnv = kv_hash_begin(s->hash);
		}
	}
	s->tokens++;
	if (s->uncacheable) {
		s->overflow++;
		kv->overflow_tokens++;
		return TS_OK;
	}
	s->fnv = kv_hash_feed(s->fnv, id);
	if (off + 1 == kv->block_size) {
		s->hash = rng_mix64(s->fnv);
		kv_block_register(kv, s->blocks[s->nblocks - 1], s->hash);
	}
	return TS_OK;
}

/* Last block first, so the tail of a prefix is evicted before its head
 * (vLLM KVCacheManager.free, BlockPool.free_blocks). */
void
kv_seq_free(struct kv_cache *kv, struct kv_seq *s)
{
	uint32_t i = s->nblocks;

	while (i > 0)
		kv_block_put(kv, s->blocks[--i]);
	free(s->blocks);
	memset(s, 0, sizeof(*s));
}

/* ---- stats and reset ---------------------------------------------------- */

void
kv_cache_stats(const struct kv_cache *kv, struct kv_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->nblocks = kv->nblocks;
	out->block_size = kv->block_size;
	out->used = kv->nblocks - kv->nfree;
	out->cached = kv->ncached;
	out->requests = kv->requests;
	out->queries = kv->queries;
	out->hits = kv->hits;
	out->evictions = kv->evictions;
	out->overflow_tokens = kv->overflow_tokens;
}

double
kv_cache_usage(const struct kv_cache *kv)
{
	return (double)(kv->nblocks - kv->nfree) / (double)kv->nblocks;
}

enum ts_err
kv_cache_reset(struct kv_cache *kv)
{
	if (kv->nfree != kv->nblocks)
		return TS_EINVAL;
	kv_cache_init_queue(kv);
	return TS_OK;
}

uint32_t
kv_cache_block_ref(const struct kv_cache *kv, uint32_t block)
{
	return block < kv->nblocks ? kv->blocks[block].ref : 0;
}

const char *
kv_cache_check(const struct kv_cache *kv)
{
	uint32_t b, prev = KV_NIL, n = 0, zero = 0, cached = 0, entries = 0;
	size_t i;

	for (b = kv->head; b != KV_NIL; b = kv->blocks[b].next) {
		if (b >= kv->nblocks || ++n > kv->nblocks)
			return "free queue: bad link or cycle";
		if (kv->blocks[b].prev != prev)
			return "free queue: prev link";
		if (kv->blocks[b].ref != 0)
			return "free queue: referenced block";
		prev = b;
	}
	if (kv->tail != prev)
		return "free queue: tail";
	if (n != kv->nfree)
		return "free queue: length != nfree";
	for (b = 0; b < kv->nblocks; b++) {
		zero += kv->blocks[b].ref == 0;
		if (kv->blocks[b].cached) {
			cached++;
			if (kv_table_find(kv, kv->blocks[b].hash) != b)
				return "hash table: cached block not found";
		}
	}
	if (zero != kv->nfree)
		return "free queue: not every free block";
	if (cached != kv->ncached)
		return "cached blocks != ncached";
	for (i = 0; i <= kv->mask; i++) {
		b = kv->table[i];
		if (b == KV_NIL)
			continue;
		entries++;
		if (b >= kv->nblocks || !kv->blocks[b].cached)
			return "hash table: entry of an uncached block";
	}
	if (entries != kv->ncached)
		return "hash table: entries != ncached";
	return NULL;
}
