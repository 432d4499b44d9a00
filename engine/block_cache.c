/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Segmented-LRU block cache; see block_cache.h. A chained hash table (power
 * of two buckets, grown at load 1) finds blocks and rows; two circular
 * lists with sentinels order each segment, most recent at the head. A
 * second, small chained table maps each file id to its entry list (a
 * struct eng_cache_file of stable address), so erasing a file walks only
 * its own entries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/arena.h"
#include "base/page_slab.h"
#include "engine/block_cache.h"

#define DEFAULT_CAPACITY ((size_t)64 << 20)
#define PROTECTED_PERCENT 80

struct eng_cache_file {
        uint64_t file_id;
        struct eng_cached_block *first;
        struct eng_cache_file *hash_next;
};

struct eng_block_cache {
        size_t capacity, protected_cap, protected_bytes;
        uint64_t promoted;                      /* bytes ever pushed onto protected's head */
        struct eng_cached_block **buckets;
        size_t n_buckets;
        struct eng_cached_block lru[2];         /* sentinels: probation, protected */
        struct eng_cache_file **files;          /* by file id */
        size_t n_file_buckets, n_files;
        bool rows;                              /* point lookups keep rows */
        struct page_slab pages;                 /* blocks' data (eng_block_cache_use_pool) */
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
        c->n_file_buckets = 64;
        c->files = calloc(c->n_file_buckets, sizeof(*c->files));
        if (!c->buckets || !c->files) {
                free(c->buckets);
                free(c->files);
                free(c);
                return -ENOMEM;
        }
        page_slab_init(&c->pages, NULL, 0);
        list_init(&c->lru[0]);
        list_init(&c->lru[1]);
        *ret = c;
        return 0;
}

/* Clears the slot bound to b, if any. */
static void unbind(struct eng_cached_block *b)
{
        if (b->bound) {
                *b->bound = NULL;
                b->bound = NULL;
        }
}

static void block_free(struct eng_block_cache *c, struct eng_cached_block *b)
{
        page_slab_free(&c->pages, b->buf, b->len);
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
                        unbind(b);
                        block_free(c, b);
                }
        }
        for (size_t i = 0; i < c->n_file_buckets; i++) {
                struct eng_cache_file *f = c->files[i], *next;

                for (; f; f = next) {
                        next = f->hash_next;
                        free(f);
                }
        }
        free(c->files);
        free(c->buckets);
        page_slab_fini(&c->pages);
        free(c);
}

/* The capacity's worth and an eighth more, in whole huge blocks, and two
 * blocks besides: what readers pin and the reads in flight run over it. */
size_t eng_block_cache_pool_bytes(const struct eng_block_cache *c)
{
        size_t want = c->capacity + c->capacity / 8;

        return (want + ARENA_HUGE_BYTES - 1) / ARENA_HUGE_BYTES * ARENA_HUGE_BYTES +
               2 * ARENA_HUGE_BYTES;
}

size_t eng_block_cache_capacity(const struct eng_block_cache *c)
{
        return c->capacity;
}

void eng_block_cache_use_pool(struct eng_block_cache *c, struct arena_pool *pool)
{
        SCREE_ASSERT(c->pages.pages_out == 0 && c->pages.n_blocks == 0);
        page_slab_fini(&c->pages);
        page_slab_init(&c->pages, pool, eng_block_cache_pool_bytes(c));
}

uint8_t *eng_block_cache_alloc_data(struct eng_block_cache *c, uint32_t len)
{
        return page_slab_alloc(&c->pages, len);
}

void eng_block_cache_free_data(struct eng_block_cache *c, uint8_t *data, uint32_t len)
{
        page_slab_free(&c->pages, data, len);
}

void eng_block_cache_page_stats(const struct eng_block_cache *c, uint64_t *huge_pages,
                                uint64_t *fallbacks)
{
        *huge_pages = c->pages.pages_out;
        *fallbacks = c->pages.fallbacks;
}

/* ---- files ---- */

static struct eng_cache_file **file_slot(struct eng_block_cache *c, uint64_t file_id)
{
        uint64_t h = file_id * UINT64_C(0x9e3779b97f4a7c15);
        struct eng_cache_file **p = &c->files[(h >> 32) & (c->n_file_buckets - 1)];

        while (*p && (*p)->file_id != file_id)
                p = &(*p)->hash_next;
        return p;
}

static void files_grow(struct eng_block_cache *c)
{
        size_t n = c->n_file_buckets * 2, old_n = c->n_file_buckets;
        struct eng_cache_file **old = c->files, **nf = calloc(n, sizeof(*nf));

        if (!nf)
                return;         /* longer chains, still correct */
        c->files = nf;
        c->n_file_buckets = n;
        for (size_t i = 0; i < old_n; i++) {
                struct eng_cache_file *f = old[i], *next;

                for (; f; f = next) {
                        struct eng_cache_file **p = file_slot(c, f->file_id);

                        next = f->hash_next;
                        f->hash_next = NULL;
                        *p = f;
                }
        }
        free(old);
}

/* The file's list, made on first use; NULL on ENOMEM. */
static struct eng_cache_file *file_get(struct eng_block_cache *c, uint64_t file_id)
{
        struct eng_cache_file **p = file_slot(c, file_id), *f = *p;

        if (f)
                return f;
        if (!(f = calloc(1, sizeof(*f))))
                return NULL;
        f->file_id = file_id;
        *p = f;
        if (++c->n_files > c->n_file_buckets)
                files_grow(c);
        return f;
}

static void file_link(struct eng_cache_file *f, struct eng_cached_block *b)
{
        b->file_next = f->first;
        b->file_pprev = &f->first;
        if (f->first)
                f->first->file_pprev = &b->file_next;
        f->first = b;
}

static void file_unlink(struct eng_cached_block *b)
{
        *b->file_pprev = b->file_next;
        if (b->file_next)
                b->file_next->file_pprev = b->file_pprev;
        b->file_next = NULL;
        b->file_pprev = NULL;
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
        file_unlink(b);
        unbind(b);
        if (b->segment == 1)
                c->protected_bytes -= b->charge;
        c->stats.bytes -= b->charge;
        if (b->offset & ENG_CACHE_ROW_BIT)
                c->stats.rows--;
        else
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
                c->protected_bytes -= b->charge;
                list_push_head(&c->lru[0], b);
        }
}

/* Whether protected block b is among the segment's most recent quarter:
 * fewer bytes than that were pushed onto the head since b was, and only
 * they can stand before it. */
static bool recent(const struct eng_block_cache *c, const struct eng_cached_block *b)
{
        return b->segment == 1 && c->promoted - b->stamp < c->protected_cap / 4;
}

/* Makes b the most recent of the protected segment, unless it is recent
 * already: moving it would only touch its neighbours -- two cache misses
 * on every hit, half of pinning a cached block in 100-row range reads --
 * for an order that hardly changes. */
static void touch(struct eng_block_cache *c, struct eng_cached_block *b)
{
        if (recent(c, b))
                return;
        list_unlink(b);
        if (b->segment == 0) {
                b->segment = 1;
                c->protected_bytes += b->charge;
        }
        list_push_head(&c->lru[1], b);
        c->promoted += b->charge;
        b->stamp = c->promoted;
        balance(c);
}

/* A hit: pins b and makes it the most recent. */
static struct eng_cached_block *hit(struct eng_block_cache *c, struct eng_cached_block *b)
{
        c->stats.pins++;
        b->pins++;
        touch(c, b);
        return b;
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
        return hit(c, b);
}

struct eng_cached_block *eng_block_cache_get_bound(struct eng_block_cache *c,
                                                   struct eng_cached_block *const *slot)
{
        SCREE_ASSERT(*slot && (*slot)->bound == slot);
        c->stats.hits++;
        c->stats.bound_hits++;
        return hit(c, *slot);
}

bool eng_block_cache_bind(struct eng_block_cache *c, struct eng_cached_block *b,
                          struct eng_cached_block **slot)
{
        (void)c;
        SCREE_ASSERT(b->buf && !(b->offset & ENG_CACHE_ROW_BIT) && (!*slot || *slot == b));
        if (b->erased || (b->bound && b->bound != slot))
                return false;
        b->bound = slot;
        *slot = b;
        return true;
}

void eng_block_cache_unbind(struct eng_block_cache *c, struct eng_cached_block **slot)
{
        (void)c;
        if (*slot) {
                SCREE_ASSERT((*slot)->bound == slot);
                unbind(*slot);
        }
}

static uint64_t row_offset(uint64_t hash)
{
        return ENG_CACHE_ROW_BIT | hash;      /* hashes differing only in bit 63 share a row */
}

struct eng_cached_block *eng_block_cache_get_row(struct eng_block_cache *c, uint64_t file_id,
                                                 uint64_t hash)
{
        struct eng_cached_block *b = *slot_of(c, file_id, row_offset(hash));

        if (!b) {
                c->stats.row_misses++;
                return NULL;
        }
        c->stats.row_hits++;
        return hit(c, b);
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
                                block_free(c, b);
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

/* Links the new entry b (pinned once) under *p and its file, and counts
 * it. Returns b, or NULL (b freed) on ENOMEM. May evict. */
static struct eng_cached_block *insert(struct eng_block_cache *c, struct eng_cached_block **p,
                                       struct eng_cached_block *b)
{
        struct eng_cache_file *f = file_get(c, b->file_id);

        if (!f) {
                block_free(c, b);
                return NULL;
        }
        *p = b;
        file_link(f, b);
        list_push_head(&c->lru[0], b);
        c->stats.bytes += b->charge;
        if (b->offset & ENG_CACHE_ROW_BIT) {
                c->stats.rows++;
                c->stats.row_inserts++;
        } else {
                c->stats.blocks++;
                c->stats.inserts++;
        }
        c->stats.pins++;
        evict(c);
        if (c->stats.blocks + c->stats.rows > c->n_buckets)
                grow_table(c);
        return b;
}

struct eng_cached_block *eng_block_cache_put(struct eng_block_cache *c, uint64_t file_id,
                                             uint64_t offset, uint8_t *data_take, uint32_t len,
                                             const uint8_t *content, uint32_t content_len)
{
        struct eng_cached_block **p = slot_of(c, file_id, offset), *b = *p;

        SCREE_ASSERT(!(offset & ENG_CACHE_ROW_BIT));
        if (b) {
                page_slab_free(&c->pages, data_take, len);
                return hit(c, b);
        }
        if (!(b = calloc(1, sizeof(*b)))) {
                page_slab_free(&c->pages, data_take, len);
                return NULL;
        }
        *b = (struct eng_cached_block){ .data = data_take, .buf = data_take, .len = len, .content = content,
                                        .content_len = content_len, .file_id = file_id,
                                        .offset = offset, .pins = 1, .charge = len };
        return insert(c, p, b);
}

struct eng_cached_block *eng_block_cache_adopt(struct eng_block_cache *c, uint8_t *data_take,
                                               uint32_t len, const uint8_t *content,
                                               uint32_t content_len)
{
        struct eng_cached_block *b = calloc(1, sizeof(*b));

        if (!b) {
                page_slab_free(&c->pages, data_take, len);
                return NULL;
        }
        *b = (struct eng_cached_block){ .data = data_take, .buf = data_take, .len = len, .content = content,
                                        .content_len = content_len, .pins = 1, .erased = true };
        c->stats.pins++;
        return b;
}

struct eng_cached_block *eng_block_cache_put_row(struct eng_block_cache *c, uint64_t file_id,
                                                 uint64_t hash, const struct eng_cache_part *parts,
                                                 unsigned n)
{
        uint64_t offset = row_offset(hash);
        struct eng_cached_block **p = slot_of(c, file_id, offset), *b = *p;
        size_t len = 0, at = 0;
        uint8_t *data;

        if (b)
                return hit(c, b);
        for (unsigned i = 0; i < n; i++)
                len += parts[i].len;
        if (len > UINT32_MAX - sizeof(*b) || !(b = malloc(sizeof(*b) + len)))
                return NULL;
        data = (uint8_t *)(b + 1);
        for (unsigned i = 0; i < n; at += parts[i].len, i++)
                if (parts[i].len)
                        memcpy(data + at, parts[i].bytes, parts[i].len);
        *b = (struct eng_cached_block){ .data = data, .len = (uint32_t)len, .content = data,
                                        .content_len = (uint32_t)len, .file_id = file_id,
                                        .offset = offset, .pins = 1,
                                        .charge = (uint32_t)(sizeof(*b) + len) };
        return insert(c, p, b);
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
                block_free(c, b);
                return;
        }
        evict(c);
}

void eng_block_cache_erase_file(struct eng_block_cache *c, uint64_t file_id)
{
        struct eng_cache_file **p = file_slot(c, file_id), *f = *p;

        if (!f)
                return;
        while (f->first) {
                struct eng_cached_block *b = f->first;

                detach(c, b);           /* unlinks it from f too */
                if (b->pins)
                        b->erased = true;
                else
                        block_free(c, b);
        }
        *p = f->hash_next;
        c->n_files--;
        free(f);
}

void eng_block_cache_set_rows(struct eng_block_cache *c, bool on)
{
        c->rows = on;
}

bool eng_block_cache_rows(const struct eng_block_cache *c)
{
        return c->rows;
}

const struct eng_block_cache_stats *eng_block_cache_stats(const struct eng_block_cache *c)
{
        return &c->stats;
}

/* ---- carrying entries to another shard ---- */

uint32_t eng_block_cache_file_keys(struct eng_block_cache *c, uint64_t file_id, uint64_t *keys,
                                   uint32_t cap)
{
        const struct eng_cache_file *f = *file_slot(c, file_id);
        uint32_t n = 0;

        for (uint8_t seg = 2; f && seg-- > 0;)
                for (const struct eng_cached_block *b = f->first; b && n < cap; b = b->file_next) {
                        if (b->segment != seg || b->erased)
                                continue;
                        if (keys)
                                keys[n] = b->offset;
                        n++;
                }
        return n;
}

const struct eng_cached_block *eng_block_cache_peek(struct eng_block_cache *c, uint64_t file_id,
                                                    uint64_t key)
{
        return *slot_of(c, file_id, key);
}
