/* SPDX-License-Identifier: Apache-2.0 */
/* The memtable's point-lookup index; see mt_index.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/mem.h"
#include "engine/mt_index.h"

#define INITIAL_SLOTS 1024u
/* Old slots each put moves: the old table (3/4 full) is empty again long
 * before the new one fills to 3/4 (see the arithmetic in grow). */
#define MOVE_PER_PUT 8u
#define SEG_SLOTS ((uint64_t)1 << MT_INDEX_SEG_SHIFT)
#define SEG_BYTES (SEG_SLOTS * sizeof(struct mt_slot))

_Static_assert(SEG_BYTES == ARENA_HUGE_BYTES, "a whole segment is one pool block");

static inline struct mt_slot *slot(const struct mt_table *t, uint64_t i)
{
        return &t->seg[i >> MT_INDEX_SEG_SHIFT][i & (SEG_SLOTS - 1)];
}

static uint64_t seg_count(uint64_t slots)
{
        return (slots + SEG_SLOTS - 1) / SEG_SLOTS;
}

/* A zeroed segment of seg_slots slots: whole ones (2 MiB, on huge pages:
 * each probe lands at random, and with 4 KiB pages nearly each was a TLB
 * miss) from the pool when there is one, smaller ones from calloc. */
static struct mt_slot *seg_new(const struct mt_index *x, uint64_t seg_slots)
{
        struct mt_slot *s;

        if (seg_slots < SEG_SLOTS)
                return calloc(seg_slots, sizeof(struct mt_slot));
        if (!x->pool)
                return mem_alloc_table(SEG_BYTES);
        s = arena_pool_take(x->pool);
        if (s)
                memset(s, 0, SEG_BYTES);
        return s;
}

static void seg_free(const struct mt_index *x, struct mt_slot *s, uint64_t seg_slots)
{
        if (seg_slots < SEG_SLOTS)
                free(s);
        else if (x->pool)
                arena_pool_give(x->pool, s);
        else
                mem_free_table(s, SEG_BYTES);
}

static void table_free(const struct mt_index *x, struct mt_table *t)
{
        uint64_t slots = t->mask + 1, n = seg_count(slots);

        for (uint64_t i = 0; t->seg && i < n; i++)
                if (t->seg[i])
                        seg_free(x, t->seg[i], slots < SEG_SLOTS ? slots : SEG_SLOTS);
        free(t->seg);
        *t = (struct mt_table){ 0 };
}

/* Makes t a zeroed table of slots slots (a power of two); false on ENOMEM. */
static bool table_new(const struct mt_index *x, struct mt_table *t, uint64_t slots)
{
        uint64_t n = seg_count(slots);

        t->mask = slots - 1;
        t->seg = calloc(n, sizeof(*t->seg));
        if (!t->seg)
                return false;
        for (uint64_t i = 0; i < n; i++) {
                t->seg[i] = seg_new(x, slots < SEG_SLOTS ? slots : SEG_SLOTS);
                if (!t->seg[i]) {
                        table_free(x, t);
                        return false;
                }
        }
        return true;
}

static uint64_t stored_hash(uint64_t hash)
{
        return hash ? hash : 1;
}

int mt_index_init(struct mt_index *x, struct arena_pool *pool)
{
        *x = (struct mt_index){ .pool = pool };
        if (pool)
                arena_pool_ref(pool);
        if (!table_new(x, &x->cur, INITIAL_SLOTS)) {
                mt_index_fini(x);
                return -ENOMEM;
        }
        return 0;
}

void mt_index_fini(struct mt_index *x)
{
        table_free(x, &x->cur);
        table_free(x, &x->old);
        table_free(x, &x->next);
        arena_pool_unref(x->pool);
        *x = (struct mt_index){ 0 };
}

/* The slot of table t holding the key, or NULL. Tombstones are skipped. */
static struct mt_slot *find_in(const struct mt_table *t, uint64_t h, mt_index_same_fn same,
                               const void *key)
{
        for (uint64_t i = h & t->mask;; i = (i + 1) & t->mask) {
                struct mt_slot *s = slot(t, i);

                if (!s->hash)
                        return NULL;
                if (s->hash == h && s->node && same(s->node, key))
                        return s;
        }
}

void *mt_index_find(const struct mt_index *x, uint64_t hash, mt_index_same_fn same, const void *key)
{
        uint64_t h = stored_hash(hash);
        struct mt_slot *s = find_in(&x->cur, h, same, key);

        if (!s && x->old.seg)
                s = find_in(&x->old, h, same, key);
        return s ? s->node : NULL;
}

/* Puts (h, node) in the first free slot of cur: the key is not there. */
static void place(struct mt_index *x, uint64_t h, void *node)
{
        uint64_t i = h & x->cur.mask;

        while (slot(&x->cur, i)->hash)
                i = (i + 1) & x->cur.mask;
        *slot(&x->cur, i) = (struct mt_slot){ .hash = h, .node = node };
        x->cur_used++;
}

/* Moves up to n old slots into cur; frees the old table once all moved.
 * Each batch first prefetches where its slots go, so their cache misses
 * overlap instead of queueing one behind the other. */
static void move_some(struct mt_index *x, unsigned n)
{
        while (n && x->moved <= x->old.mask) {
                uint64_t end = x->moved + (n < MOVE_PER_PUT ? n : MOVE_PER_PUT);

                if (end > x->old.mask + 1)
                        end = x->old.mask + 1;
                for (uint64_t i = x->moved; i < end; i++) {
                        uint64_t h = slot(&x->old, i)->hash;

                        if (h)
                                __builtin_prefetch(slot(&x->cur, h & x->cur.mask), 1);
                }
                for (; x->moved < end; x->moved++, n--) {
                        struct mt_slot *s = slot(&x->old, x->moved);

                        if (s->hash && s->node) /* a key put since has a tombstone here */
                                place(x, s->hash, s->node);
                }
        }
        if (x->moved > x->old.mask)
                table_free(x, &x->old);
}

/* Takes segments of the next table (twice cur's size) until `upto` are
 * ready; false if one cannot be had now (a later put tries again). */
static bool next_fill(struct mt_index *x, uint64_t upto)
{
        uint64_t slots = (x->cur.mask + 1) * 2;

        if (!x->next.seg) {
                x->next.seg = calloc(seg_count(slots), sizeof(*x->next.seg));
                if (!x->next.seg)
                        return false;
                x->next.mask = slots - 1;
        }
        for (; x->next_ready < upto; x->next_ready++) {
                x->next.seg[x->next_ready] = seg_new(x, SEG_SLOTS);
                if (!x->next.seg[x->next_ready])
                        return false;
        }
        return true;
}

/*
 * Makes the next table's segments ready in step with cur filling from 1/2
 * to 3/4, the last one shortly before grow() needs them: taking and zeroing
 * a whole table at once stopped the shard for 4-6 ms per 2 MiB segment
 * under readwhilewriting on a VM (a block the pool hands out cold is
 * faulted in by the memset). Tables below two segments are left to grow().
 */
static void prepare_next(struct mt_index *x)
{
        uint64_t slots = x->cur.mask + 1, n, want;

        if (x->cur_used <= slots / 2)
                return;
        n = seg_count(2 * slots);
        if (n < 2 || x->next_ready == n)
                return;
        want = 1 + (x->cur_used - slots / 2) * n / (slots / 4);
        next_fill(x, want < n ? want : n);
}

/* The next table, whole: what prepare_next made ready and the rest. */
static bool take_next(struct mt_index *x, struct mt_table *t)
{
        uint64_t slots = (x->cur.mask + 1) * 2;

        if (!x->next.seg)
                return table_new(x, t, slots);
        if (!next_fill(x, seg_count(slots)))
                return false;
        *t = x->next;
        x->next = (struct mt_table){ 0 };
        x->next_ready = 0;
        return true;
}

/*
 * Starts moving into a table twice the size. At the switch cur is 3/4
 * full; each put then moves MOVE_PER_PUT old slots, so the old table is
 * empty after (old slots)/8 puts, by which time the new table holds at
 * most 3/4 * old + old/8 = 7/16 of its slots: never 3/4 with old still
 * there. Returns -ENOMEM only if there is no room left at all.
 */
static int grow(struct mt_index *x)
{
        struct mt_table t;

        if (x->old.seg)
                move_some(x, (unsigned)(x->old.mask + 1));      /* cannot happen; stay correct */
        if (!take_next(x, &t))
                return x->cur_used < x->cur.mask ? 0 : -ENOMEM;
        x->old = x->cur;
        x->moved = 0;
        x->cur = t;
        x->cur_used = 0;
        return 0;
}

int mt_index_put(struct mt_index *x, uint64_t hash, void *node, mt_index_same_fn same,
                 const void *key, bool (*newer)(const void *stored, const void *node))
{
        uint64_t h = stored_hash(hash);
        struct mt_slot *s;

        if (!x->cur.seg)
                return -ENOMEM;
        if (x->old.seg)
                move_some(x, MOVE_PER_PUT);
        s = find_in(&x->cur, h, same, key);
        if (s) {
                if (newer(s->node, node))
                        s->node = node;
                return 0;
        }
        if (x->old.seg) {
                s = find_in(&x->old, h, same, key);
                if (s) {
                        if (!newer(s->node, node))
                                node = s->node;
                        s->node = NULL;         /* tombstone: the key lives in cur now */
                }
        }
        if ((x->cur_used + 1) * 4 > (x->cur.mask + 1) * 3 && grow(x) < 0)
                return -ENOMEM;
        place(x, h, node);
        prepare_next(x);
        return 0;
}

void mt_index_prefetch(const struct mt_index *x, uint64_t hash)
{
        if (x->cur.seg)
                __builtin_prefetch(slot(&x->cur, stored_hash(hash) & x->cur.mask), 1);
}

size_t mt_index_bytes(const struct mt_index *x)
{
        size_t b = x->cur.seg ? (x->cur.mask + 1) * sizeof(struct mt_slot) : 0;

        if (x->old.seg)
                b += (x->old.mask + 1) * sizeof(struct mt_slot);
        return b + x->next_ready * SEG_BYTES;
}
