/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard's SSTable block cache: verified data blocks keyed by (file id,
 * offset), bounded in bytes, with segmented LRU so that one-off scans do not
 * flush the working set: a new block enters the probation segment, a block
 * hit again moves to the protected segment (at most 80% of the capacity),
 * and eviction takes the coldest unpinned block of probation first. A hit
 * on a protected block still among the segment's most recent quarter
 * leaves it where it is (the order is that close to LRU).
 *
 * Blocks are pinned while a reader uses them (get/put return pinned
 * blocks; release unpins). A pinned block is never evicted or freed, so
 * the cache may run over its capacity by what readers hold.
 *
 * Rows: the same cache also holds small entries keyed by (file id, a 64-bit
 * key hash) -- one version of one key as a point lookup found it in that
 * file (sst_io.c), so a hot key costs its own bytes instead of its whole
 * 4 KiB block. Rows and blocks share the capacity and the segments, so
 * the split between them follows the workload; a row is charged its bytes
 * and its header. Files are immutable, so neither ever goes stale; a file
 * dropped after a compaction is erased with its entries, in time
 * proportional to their number (each file keeps a list of its own).
 *
 * Shard-local: one cache per shard, no locks.
 */
#ifndef SCREE_ENGINE_BLOCK_CACHE_H
#define SCREE_ENGINE_BLOCK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct eng_block_cache;

/* A cached block. data/len are the block as read from disk (verified
 * before it was put); content/content_len its content. Borrowed, valid
 * while pinned. */
struct eng_cached_block {
        const uint8_t *data;
        const uint8_t *content;
        uint32_t len, content_len;
        /* internal; what a hit reads first, near content */
        uint32_t pins;
        uint32_t charge;                /* bytes counted against the capacity */
        uint8_t segment;                /* 0 probation, 1 protected */
        bool erased;                    /* file dropped: free at the last release */
        uint64_t stamp;                 /* protected: the cache's promoted bytes once it was pushed */
        uint8_t *buf;                   /* = data, owned (NULL for a row: it follows the header) */
        uint64_t file_id, offset;       /* a row's offset: ENG_CACHE_ROW_BIT | its hash's bits */
        struct eng_cached_block *hash_next, *prev, *next;
        struct eng_cached_block *file_next, **file_pprev;       /* its file's entries */
        struct eng_cached_block **bound;        /* the slot bound to it, or NULL */
};

struct eng_cache_file;

struct eng_block_cache_stats {
        uint64_t hits, misses, inserts;         /* blocks */
        uint64_t bound_hits;                    /* of hits, those through a slot */
        uint64_t evictions;                     /* blocks and rows */
        uint64_t bytes;                         /* charged, blocks and rows */
        uint64_t blocks;
        uint64_t pins;                  /* held by readers now, erased blocks included */
        uint64_t row_hits, row_misses, row_inserts, rows;
};

/* Block offsets never have this bit; rows' keys always do. */
#define ENG_CACHE_ROW_BIT (UINT64_C(1) << 63)

/* capacity_bytes: 0 = default 64 MiB. Returns 0 and *ret, or -ENOMEM. */
int eng_block_cache_new(size_t capacity_bytes, struct eng_block_cache **ret);
/* Accepts NULL. REQUIRES: no block pinned, no data of alloc_data out. */
void eng_block_cache_free(struct eng_block_cache *c);

/*
 * Blocks' data. A block is read into eng_block_cache_alloc_data(c, len)
 * (4096-aligned, for O_DIRECT) and handed to put or adopt, which own it
 * from then on; data not handed over goes back with free_data, the same
 * len. Single-page blocks come from huge pages of the pool given to
 * use_pool (base/page_slab.h), faulted in ahead by the shard: a cache
 * filling 4 KiB pages from malloc took a fault the host backs on every
 * block read, and YCSB at 10M keys ran 5-29% slower for it. At most
 * eng_block_cache_pool_bytes come from there; other blocks, and all
 * without a pool, from mem_alloc_aligned. use_pool takes a
 * reference on pool; REQUIRES: no data allocated yet. NULL only on ENOMEM.
 */
struct arena_pool;
void eng_block_cache_use_pool(struct eng_block_cache *c, struct arena_pool *pool);
uint8_t *eng_block_cache_alloc_data(struct eng_block_cache *c, uint32_t len);
void eng_block_cache_free_data(struct eng_block_cache *c, uint8_t *data, uint32_t len);
/* The most use_pool's slab takes from the pool: the capacity and an
 * eighth, rounded up to huge blocks, and two more (what readers pin and
 * reads in flight run over); the shard sizes its pool with it. */
size_t eng_block_cache_pool_bytes(const struct eng_block_cache *c);
/* The capacity in bytes (what eng_block_cache_new made it). */
size_t eng_block_cache_capacity(const struct eng_block_cache *c);
/* Single pages of block data now out of the pool's huge blocks, and the
 * single pages ever taken from malloc because the slab was full. */
void eng_block_cache_page_stats(const struct eng_block_cache *c, uint64_t *huge_pages,
                                uint64_t *fallbacks);

/* Returns the block pinned, or NULL (a miss). */
struct eng_cached_block *eng_block_cache_get(struct eng_block_cache *c, uint64_t file_id,
                                             uint64_t offset);

/*
 * Inserts a verified block: data_take (from eng_block_cache_alloc_data(c,
 * len); the cache frees it) of len bytes whose content is at content. Returns it
 * pinned; if the key is present already, frees data_take and returns the
 * cached one pinned. NULL only on ENOMEM (data_take is freed). May evict.
 */
struct eng_cached_block *eng_block_cache_put(struct eng_block_cache *c, uint64_t file_id,
                                             uint64_t offset, uint8_t *data_take, uint32_t len,
                                             const uint8_t *content, uint32_t content_len);

/* A row of file_id by its key's hash (any 64 bits; the caller checks the
 * key it stored), pinned, or NULL. Counts in row_hits / row_misses. */
struct eng_cached_block *eng_block_cache_get_row(struct eng_block_cache *c, uint64_t file_id,
                                                 uint64_t hash);

/* Borrowed bytes, one part of a row. */
struct eng_cache_part {
        const void *bytes;
        size_t len;
};

/* Inserts a row: the n parts copied back to back (data = content, len =
 * content_len = their total). Returns it pinned -- the one already cached
 * under this (file_id, hash) if there is one, unchanged -- or NULL on
 * ENOMEM or a row over 4 GiB. May evict. */
struct eng_cached_block *eng_block_cache_put_row(struct eng_block_cache *c, uint64_t file_id,
                                                 uint64_t hash, const struct eng_cache_part *parts,
                                                 unsigned n);

/* Wraps a verified block like eng_block_cache_put, but outside the cache:
 * nothing finds it, it takes no capacity, and it is freed at its last
 * release (a point lookup that caches the row it needs, not the block).
 * Returns it pinned, or NULL on ENOMEM (data_take is freed). */
struct eng_cached_block *eng_block_cache_adopt(struct eng_block_cache *c, uint8_t *data_take,
                                               uint32_t len, const uint8_t *content,
                                               uint32_t content_len);

/*
 * Slots: a reader's own shortcut to cached blocks (an SSTable keeps one per
 * data block, so that a hit costs neither the hash's bucket and chain nor
 * the block's index handle). bind points *slot at b, a block got or put
 * (not a row; REQUIRES: *slot is NULL or b), and makes the cache set
 * *slot to NULL when b leaves it (evicted, erased, or the cache freed). A
 * block has at most one slot: bind returns false, and leaves *slot alone,
 * if b has another or is out of the cache (adopted, or erased while
 * pinned). unbind clears *slot and the block's link to it; the owner calls
 * it for every bound slot before the slot's memory goes.
 */
bool eng_block_cache_bind(struct eng_block_cache *c, struct eng_cached_block *b,
                          struct eng_cached_block **slot);
void eng_block_cache_unbind(struct eng_block_cache *c, struct eng_cached_block **slot);
/* A hit on a block found through its slot (REQUIRES: *slot non-NULL):
 * pinned, counted and made the most recent, as eng_block_cache_get. */
struct eng_cached_block *eng_block_cache_get_bound(struct eng_block_cache *c,
                                                   struct eng_cached_block *const *slot);

/* Pins b once more (another reader of a block already pinned); returns b. */
struct eng_cached_block *eng_block_cache_pin(struct eng_block_cache *c, struct eng_cached_block *b);

/* Unpins. Accepts NULL. */
void eng_block_cache_release(struct eng_block_cache *c, struct eng_cached_block *b);

/* Whether point lookups keep rows here (sst_io.c); off by default.
 * Turning them off leaves the rows cached so far to age out. */
void eng_block_cache_set_rows(struct eng_block_cache *c, bool on);
bool eng_block_cache_rows(const struct eng_block_cache *c);

/* Carrying entries to another shard's cache (a tablet moving: shard_warm.c). */
/* The keys (a block's offset, a row's ENG_CACHE_ROW_BIT key) of file_id's
 * entries, those hit more than once (the protected segment) first, into
 * keys[0..cap) (keys NULL: only counted); how many, at most cap. Walks
 * no further than that. */
uint32_t eng_block_cache_file_keys(struct eng_block_cache *c, uint64_t file_id, uint64_t *keys,
                                   uint32_t cap);
/* The entry under (file_id, key), unpinned and untouched (no hit counted,
 * no LRU move), or NULL. Borrowed until the next call that may evict. */
const struct eng_cached_block *eng_block_cache_peek(struct eng_block_cache *c, uint64_t file_id,
                                                    uint64_t key);

/* Drops every block and row of a file (deleted after a compaction);
 * pinned ones go at their last release. */
void eng_block_cache_erase_file(struct eng_block_cache *c, uint64_t file_id);

const struct eng_block_cache_stats *eng_block_cache_stats(const struct eng_block_cache *c);

#endif
