/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Segmented-LRU block cache; see block_cache.h. A chained hash table (power
 * of two buckets, grown at load 1) finds blocks; two circular lists with
 * sentinels order each segment, most recent at the head.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/mem.h"
#include "engine/block_cache.h"

#define DEFAULT_CAPACITY ((size_t)64 << 20)
#define PROTECTED_PERCENT 80

struct eng_block_cache {
        size_t capacity, protected_cap, protected_bytes;
        struct eng_cached_block **buckets;
        size_t n_buckets;
        struct eng_cached_block lru[2];         /* sentinels: probation, protected */
        struct eng_block_cache_stats stats;
};

static uint64_t key_hash(uint64_t file_id, uint64_t offset)
{
        uint64_t h = (file_id * UINT64_C(0x9e3779b97f4a7c15)) ^ (offset >> 12);

        h ^= h >> 31;
        return h * UINT64_C(0xbf58476d1ce4e5b9);
}

static void list_init(struct eng_cached_block *s)
{
        s->prev = s->next = s;
}

static void list_unlink(struct eng_cached_block *b)
{
        b->prev->next = b->next;
        b->next->prev = b->prev;
        b->prev = b->next = b;
}

static void list_push_head(struct eng_cached_block *s, struct eng_cached_block *b)
{
        b->next = s->next;
        b->prev = s;
        s->next->prev = b;
        s->next = b;
}

int eng_block_cache_new(size_t capacity_bytes, struct eng_block_cache **ret)
{
        struct eng_block_cache *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->capacity = capacity_bytes ? capacity_bytes : DEFAULT_CAPACITY;
        c->protected_cap = c->capacity / 100 * PROTECTED_PERCENT;
        c->n_buckets = 1024;
        c->buckets = calloc(c->n_buckets, sizeof(*c->buckets));
        if (!c->buckets) {
                free(c);
                return -ENOMEM;
        }
        list_init(&c->lru[0]);
        list_init(&c->lru[1]);
        *ret = c;
        return 0;
}

static void block_free(struct eng_cached_block *b)
{
        mem_free_aligned(b->buf);
        free(b);
}

void eng_block_cache_free(struct eng_block_cache *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->n_buckets; i++) {
                struct eng_cached_block *b = c->buckets[i], *next;

                for (; b; b = next) {
                        next = b->hash_next;
                        SCREE_ASSERT(b->pins == 0);
                        block_free(b);
                }
        }
        free(c->buckets);
        free(c);
}

static struct eng_cached_block **slot_of(struct eng_block_cache *c, uint64_t file_id,
                                         uint64_t offset)
{
        struct eng_cached_block **p = &c->buckets[key_hash(file_id, offset) & (c->n_buckets - 1)];

        while (*p && ((*p)->file_id != file_id || (*p)->offset != offset))
                p = &(*p)->hash_next;
        return p;
}

/* Removes b from the hash and its list and uncounts it. */
static void detach(struct eng_block_cache *c, struct eng_cached_block *b)
{
        struct eng_cached_block **p = slot_of(c, b->file_id, b->offset);

        SCREE_ASSERT(*p == b);
        *p = b->hash_next;
        list_unlink(b);
        if (b->segment == 1)
                c->protected_bytes -= b->len;
        c->stats.bytes -= b->len;
        c->stats.blocks--;
}

/* Moves protected blocks to probation until protected fits its share. */
static void balance(struct eng_block_cache *c)
{
        struct eng_cached_block *s = &c->lru[1];

        while (c->protected_bytes > c->protected_cap && s->prev != s) {
                struct eng_cached_block *b = s->prev;

                list_unlink(b);
                b->segment = 0;
                c->protected_bytes -= b->len;
                list_push_head(&c->lru[0], b);
        }
}

static void touch(struct eng_block_cache *c, struct eng_cached_block *b)
{
        list_unlink(b);
        if (b->segment == 0) {
                b->segment = 1;
                c->protected_bytes += b->len;
        }
        list_push_head(&c->lru[1], b);
        balance(c);
}

struct eng_cached_block *eng_block_cache_get(struct eng_block_cache *c, uint64_t file_id,
                                             uint64_t offset)
{
        struct eng_cached_block *b = *slot_of(c, file_id, offset);

        if (!b) {
                c->stats.misses++;
                return NULL;
        }
        c->stats.hits++;
        c->stats.pins++;
        b->pins++;
        touch(c, b);
        return b;
}

/* Evicts the coldest unpinned blocks, probation first, until under capacity. */
static void evict(struct eng_block_cache *c)
{
        for (int seg = 0; seg < 2 && c->stats.bytes > c->capacity; seg++) {
                struct eng_cached_block *s = &c->lru[seg], *b = s->prev;

                while (b != s && c->stats.bytes > c->capacity) {
                        struct eng_cached_block *prev = b->prev;

                        if (b->pins == 0) {
                                detach(c, b);
                                block_free(b);
                                c->stats.evictions++;
                        }
                        b = prev;
                }
        }
}

static void grow_table(struct eng_block_cache *c)
{
        size_t n = c->n_buckets * 2;
        struct eng_cached_block **nb = calloc(n, sizeof(*nb));

        if (!nb)
                return;         /* longer chains, still correct */
        for (size_t i = 0; i < c->n_buckets; i++) {
                struct eng_cached_block *b = c->buckets[i], *next;

                for (; b; b = next) {
                        size_t j = key_hash(b->file_id, b->offset) & (n - 1);

                        next = b->hash_next;
                        b->hash_next = nb[j];
                        nb[j] = b;
                }
        }
        free(c->buckets);
        c->buckets = nb;
        c->n_buckets = n;
}

struct eng_cached_block *eng_block_cache_put(struct eng_block_cache *c, uint64_t file_id,
                                             uint64_t offset, uint8_t *data_take, uint32_t len,
                                             const uint8_t *content, uint32_t content_len)
{
        struct eng_cached_block **p = slot_of(c, file_id, offset), *b = *p;

        if (b) {
                mem_free_aligned(data_take);
                c->stats.pins++;
                b->pins++;
                touch(c, b);
                return b;
        }
        if (!(b = calloc(1, sizeof(*b)))) {
                mem_free_aligned(data_take);
                return NULL;
        }
        *b = (struct eng_cached_block){ .data = data_take, .buf = data_take, .len = len, .content = content,
                                        .content_len = content_len, .file_id = file_id,
                                        .offset = offset, .pins = 1 };
        *p = b;
        list_push_head(&c->lru[0], b);
        c->stats.bytes += len;
        c->stats.blocks++;
        c->stats.inserts++;
        c->stats.pins++;
        evict(c);
        if (c->stats.blocks > c->n_buckets)
                grow_table(c);
        return b;
}

struct eng_cached_block *eng_block_cache_pin(struct eng_block_cache *c, struct eng_cached_block *b)
{
        SCREE_ASSERT(b->pins > 0);
        c->stats.pins++;
        b->pins++;
        return b;
}

void eng_block_cache_release(struct eng_block_cache *c, struct eng_cached_block *b)
{
        if (!b)
                return;
        SCREE_ASSERT(b->pins > 0);
        c->stats.pins--;
        if (--b->pins > 0)
                return;
        if (b->erased) {
                block_free(b);
                return;
        }
        evict(c);
}

void eng_block_cache_erase_file(struct eng_block_cache *c, uint64_t file_id)
{
        for (size_t i = 0; i < c->n_buckets; i++) {
                struct eng_cached_block *b = c->buckets[i], *next;

                for (; b; b = next) {
                        next = b->hash_next;
                        if (b->file_id != file_id)
                                continue;
                        detach(c, b);
                        if (b->pins)
                                b->erased = true;
                        else
                                block_free(b);
                }
        }
}

const struct eng_block_cache_stats *eng_block_cache_stats(const struct eng_block_cache *c)
{
        return &c->stats;
}
