/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard's SSTable block cache: verified data blocks keyed by (file id,
 * offset), bounded in bytes, with segmented LRU so that one-off scans do not
 * flush the working set: a new block enters the probation segment, a block
 * hit again moves to the protected segment (at most 80% of the capacity),
 * and eviction takes the coldest unpinned block of probation first.
 *
 * Blocks are pinned while a reader uses them (get/put return pinned
 * blocks; release unpins). A pinned block is never evicted or freed, so
 * the cache may run over its capacity by what readers hold.
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
        /* internal */
        uint8_t *buf;                   /* = data, owned */
        uint64_t file_id, offset;
        struct eng_cached_block *hash_next, *prev, *next;
        uint32_t pins;
        uint8_t segment;                /* 0 probation, 1 protected */
        bool erased;                    /* file dropped: free at the last release */
};

struct eng_block_cache_stats {
        uint64_t hits, misses, inserts, evictions;
        uint64_t bytes, blocks;
        uint64_t pins;                  /* held by readers now, erased blocks included */
};

/* capacity_bytes: 0 = default 64 MiB. Returns 0 and *ret, or -ENOMEM. */
int eng_block_cache_new(size_t capacity_bytes, struct eng_block_cache **ret);
/* Accepts NULL. REQUIRES: no block pinned. */
void eng_block_cache_free(struct eng_block_cache *c);

/* Returns the block pinned, or NULL (a miss). */
struct eng_cached_block *eng_block_cache_get(struct eng_block_cache *c, uint64_t file_id,
                                             uint64_t offset);

/*
 * Inserts a verified block: data_take (4096-aligned; the cache frees it with
 * mem_free_aligned) of len bytes whose content is at content. Returns it
 * pinned; if the key is present already, frees data_take and returns the
 * cached one pinned. NULL only on ENOMEM (data_take is freed). May evict.
 */
struct eng_cached_block *eng_block_cache_put(struct eng_block_cache *c, uint64_t file_id,
                                             uint64_t offset, uint8_t *data_take, uint32_t len,
                                             const uint8_t *content, uint32_t content_len);

/* Pins b once more (another reader of a block already pinned); returns b. */
struct eng_cached_block *eng_block_cache_pin(struct eng_block_cache *c, struct eng_cached_block *b);

/* Unpins. Accepts NULL. */
void eng_block_cache_release(struct eng_block_cache *c, struct eng_cached_block *b);

/* Drops every block of a file (deleted after a compaction); pinned ones go
 * at their last release. */
void eng_block_cache_erase_file(struct eng_block_cache *c, uint64_t file_id);

const struct eng_block_cache_stats *eng_block_cache_stats(const struct eng_block_cache *c);

#endif
