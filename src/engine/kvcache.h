/*
 * engine/kvcache.h - a model of vLLM's paged KV cache with automatic
 * prefix caching, for the latency model: block bookkeeping only, no
 * tensors. The engine (one thread, under its lock) prices a request's
 * prefill over the prompt tokens that missed the cache only, and /metrics
 * reports the counters under vLLM's names (vllm:kv_cache_usage_perc,
 * vllm:prefix_cache_queries, vllm:prefix_cache_hits). No threads, no I/O.
 *
 * Model, after vLLM v1 (vllm/v1/core/kv_cache_manager.py, block_pool.py,
 * kv_cache_utils.py):
 *   - A pool of nblocks blocks of block_size tokens (vLLM's default 16).
 *     A sequence's tokens fill its blocks in order: token t lives in
 *     block t / block_size of its block table.
 *   - A full block is named by a hash chained over its parent's (vLLM:
 *     hash(parent_block_hash, tuple(token_ids))), here kv_block_hash:
 *     FNV-1a 64 over the parent hash (8 bytes) and the ids (4 bytes each,
 *     least significant byte first), then rng_mix64 (common/rng.h). The
 *     root's parent is 0 (vLLM's NONE_HASH). Deterministic across runs
 *     and machines. Only full blocks are cached; a 64-bit collision would
 *     be a false hit, as with vLLM's builtin hash.
 *   - Blocks are reference counted; two live sequences with the same
 *     prompt share its full blocks. A block whose count drops to 0 goes
 *     to the tail of the free-block queue and keeps its hash: it can
 *     still be hit until allocation pops it from the head, which drops
 *     its hash (an eviction). The queue starts with every block in id
 *     order, so never-used blocks go before any freed one; a freed
 *     sequence's blocks are queued last block first, so a prefix's tail
 *     is evicted before its head (vLLM's FreeKVCacheBlockQueue and
 *     KVCacheManager.free).
 *   - A prompt of n tokens hits the longest chain of cached full blocks
 *     from its start, but never its last token (vLLM recomputes it to get
 *     the logits): at most (n - 1) / block_size blocks. The full blocks
 *     after the hit are allocated and registered at once (vLLM registers
 *     them once computed; the model has no prefill in flight), as is each
 *     block a generated token fills, so a prompt that repeats an earlier
 *     prompt and its answer hits both.
 *   - One block per hash (vLLM's BlockHashToBlockMap may hold several):
 *     a block that fills with a hash already cached, e.g. the recomputed
 *     last block of a fully cached prompt, stays unregistered and goes
 *     back to the queue without a hash when freed.
 *   - Pool dry (tokstream's simplification of vLLM's preemption): when a
 *     sequence needs a block and the free queue is empty (every block is
 *     referenced), it keeps what it has and holds the rest of its tokens
 *     without blocks (struct kv_seq.overflow, kv_cache_stats
 *     overflow_tokens) until it is freed: it takes no more blocks and
 *     caches nothing more. vLLM would preempt a request and recompute it
 *     later; the engine goes on generating and may price the overflow.
 *   - vLLM's reserved null block (block 0) is not modelled: all nblocks
 *     are usable.
 * Memory: 24 bytes a block plus a hash table of 4 bytes a slot, the
 * smallest power of two >= 2 x nblocks (open addressing, linear probing,
 * backward-shift deletion), all allocated by kv_cache_create. After that
 * only a sequence's block table is allocated (kv_seq_start, and growth in
 * kv_seq_append). Every call is O(blocks touched).
 */
#ifndef TS_ENGINE_KVCACHE_H
#define TS_ENGINE_KVCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

#define KV_CACHE_DEFAULT_BLOCK_SIZE 16
/* kv_cache_create: nblocks in 1..KV_CACHE_MAX_BLOCKS, block_size in
 * 1..KV_CACHE_MAX_BLOCK_SIZE. */
#define KV_CACHE_MAX_BLOCKS (1u << 24)
#define KV_CACHE_MAX_BLOCK_SIZE 1024u
/* Tokens a sequence may hold (prompt + generated). */
#define KV_SEQ_MAX_TOKENS (1u << 30)

struct kv_cache;

/*
 * One sequence's block table. The caller owns the struct and zeroes it
 * before the first kv_seq_start; the fields are engine/kvcache.c's (read
 * them, never write them). kv_seq_free releases what it holds and zeroes
 * it again. A zeroed sequence is a valid empty one.
 */
struct kv_seq {
	uint32_t *blocks;     /* block ids, [0..nblocks); kvcache.c's memory */
	uint32_t nblocks;     /* blocks held */
	uint32_t cap;         /* room in blocks[] */
	uint32_t tokens;      /* tokens held: prompt + appended */
	uint32_t overflow;    /* of those, held without a block (pool dry) */
	uint32_t uncacheable; /* 1 once the pool ran dry for this sequence */
	uint64_t hash;        /* hash of the last full block; 0 if none */
	uint64_t fnv;         /* FNV-1a state over hash and the partial ids */
};

/* Counters since kv_cache_create (kv_cache_reset keeps them), and the
 * state now. */
struct kv_cache_stats {
	uint32_t nblocks, block_size;
	uint32_t used;              /* blocks with refcount > 0 */
	uint32_t cached;            /* blocks holding a hash (used or not) */
	uint64_t requests;          /* kv_seq_start calls (vLLM requests) */
	uint64_t queries;           /* prompt tokens looked up (vLLM
	                             * prefix_cache_queries) */
	uint64_t hits;              /* of those, found cached (vLLM
	                             * prefix_cache_hits) */
	uint64_t evictions;         /* cached blocks whose hash was dropped
	                             * for reuse */
	uint64_t overflow_tokens;   /* tokens held without a block */
};

/*
 * Creates a pool of nblocks blocks of block_size tokens, all free, none
 * cached (*out; caller frees with kv_cache_destroy). Returns TS_EINVAL if
 * nblocks is not in 1..KV_CACHE_MAX_BLOCKS or block_size not in
 * 1..KV_CACHE_MAX_BLOCK_SIZE, TS_ENOMEM if the pool cannot be allocated;
 * *out is NULL then.
 */
enum ts_err kv_cache_create(struct kv_cache **out, uint32_t nblocks,
    uint32_t block_size);

/* Frees the pool (NULL is fine). Live sequences' block tables are theirs:
 * kv_seq_free them first, or free(s->blocks) without the pool. */
void kv_cache_destroy(struct kv_cache *kv);

/*
 * The hash of a full block of ids[0..n) after a parent block of hash
 * `parent` (0 for the first block): rng_mix64 of FNV-1a 64 over parent
 * (8 bytes) then each id (4 bytes), least significant byte first (vLLM
 * kv_cache_utils.hash_block_tokens). n is block_size for a cached block.
 */
uint64_t kv_block_hash(uint64_t parent, const uint32_t *ids, size_t n);

/*
 * Starts the zeroed (or freed) sequence s over the prompt ids[0..n)
 * (read, not kept; NULL if n is 0): takes a reference on the longest
 * chain of cached full blocks that starts the prompt, at most
 * (n - 1) / block_size of them (vLLM get_computed_blocks: the last
 * prompt token is always recomputed), and allocates blocks for the rest,
 * registering those that are full. Sets *hit_tokens (may be NULL) to the
 * tokens hit, a multiple of block_size, <= n - 1 (0 if n is 0), and adds
 * n to the queries and that to the hits. If the pool runs dry, the tokens
 * left without a block are overflow (see the model above); that is not an
 * error. Returns TS_ENOMEM if the block table cannot be allocated,
 * TS_ELIMIT if n > KV_SEQ_MAX_TOKENS, TS_EINVAL if s holds tokens or
 * blocks or ids is NULL with n > 0; the cache and s are unchanged then
 * (*hit_tokens is 0).
 */
enum ts_err kv_seq_start(struct kv_cache *kv, struct kv_seq *s,
    const uint32_t *ids, size_t n, uint32_t *hit_tokens);

/*
 * Appends one generated token id to s: takes a new block every
 * block_size tokens, and registers a block as it becomes full (vLLM
 * caches generated full blocks too). Once s is out of blocks (pool dry)
 * the token is overflow. Returns TS_ENOMEM if the block table cannot
 * grow, TS_ELIMIT if s already holds KV_SEQ_MAX_TOKENS; s and the cache
 * are unchanged then.
 */
enum ts_err kv_seq_append(struct kv_cache *kv, struct kv_seq *s,
    uint32_t id);

/*
 * Frees s, finished or cancelled: drops a reference on each of its
 * blocks, last block first, queueing those that reach 0 at the tail of
 * the free queue (full registered blocks stay cached and can be hit
 * until evicted; the others go back without a hash), frees the block
 * table and zeroes s. A zeroed or already freed s is a no-op.
 */
void kv_seq_free(struct kv_cache *kv, struct kv_seq *s);

/* Fills *out with the counters and the state now. O(1). */
void kv_cache_stats(const struct kv_cache *kv, struct kv_cache_stats *out);

/* vLLM's kv_cache_usage_perc: used / nblocks, 0..1. */
double kv_cache_usage(const struct kv_cache *kv);

/*
 * Drops every hash and puts the blocks back in the free queue in id
 * order, as after kv_cache_create (vLLM reset_prefix_cache), for a
 * /_debug reset or tests. The counters are kept (they are Prometheus
 * counters) and the dropped hashes are not evictions. Returns TS_EINVAL,
 * changing nothing, while any block is referenced (a live sequence).
 * O(nblocks).
 */
enum ts_err kv_cache_reset(struct kv_cache *kv);

/* The reference count of block `block` (< nblocks), for tests. */
uint32_t kv_cache_block_ref(const struct kv_cache *kv, uint32_t block);

/*
 * Checks the internal invariants, for tests: the free queue is a
 * well-linked list of exactly the blocks with refcount 0, the hash table
 * holds exactly the cached blocks and finds each under its hash, and the
 * counts agree. Returns NULL if all hold, else a static English
 * description of the first that does not. O(nblocks).
 */
const char *kv_cache_check(const struct kv_cache *kv);

#endif /* TS_ENGINE_KVCACHE_H */
