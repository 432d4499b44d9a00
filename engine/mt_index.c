/* SPDX-License-Identifier: Apache-2.0 */
/* The memtable's point-lookup index; see mt_index.h. */
#include <errno.h>
#include <stdlib.h>

#include "base/mem.h"
#include "engine/mt_index.h"

#define INITIAL_SLOTS 1024u
/* Old slots each put moves: the old table (3/4 full) is empty again long
 * before the new one fills to 3/4 (see the arithmetic in grow). */
#define MOVE_PER_PUT 8u

/* Tables of 2 MiB and up are on huge pages (mem_alloc_table): each probe
 * lands at random, and with 4 KiB pages nearly each was a TLB miss. */
static struct mt_slot *table_new(uint64_t slots)
{
        return mem_alloc_table(slots * sizeof(struct mt_slot));
}

static void table_free(struct mt_slot *t, uint64_t mask)
{
        mem_free_table(t, (mask + 1) * sizeof(struct mt_slot));
}

static uint64_t stored_hash(uint64_t hash)
{
        return hash ? hash : 1;
}

int mt_index_init(struct mt_index *x)
{
        *x = (struct mt_index){ 0 };
        x->cur = table_new(INITIAL_SLOTS);
        if (!x->cur)
                return -ENOMEM;
        x->cur_mask = INITIAL_SLOTS - 1;
        return 0;
}

void mt_index_fini(struct mt_index *x)
{
        if (x->cur)
                table_free(x->cur, x->cur_mask);
        if (x->old)
                table_free(x->old, x->old_mask);
        *x = (struct mt_index){ 0 };
}

/* The slot of table t holding the key, or NULL. Tombstones are skipped. */
static struct mt_slot *find_in(struct mt_slot *t, uint64_t mask, uint64_t h, mt_index_same_fn same,
                               const void *key)
{
        for (uint64_t i = h & mask;; i = (i + 1) & mask) {
                struct mt_slot *s = &t[i];

                if (!s->hash)
                        return NULL;
                if (s->hash == h && s->node && same(s->node, key))
                        return s;
        }
}

void *mt_index_find(const struct mt_index *x, uint64_t hash, mt_index_same_fn same, const void *key)
{
        uint64_t h = stored_hash(hash);
        struct mt_slot *s = find_in(x->cur, x->cur_mask, h, same, key);

        if (!s && x->old)
                s = find_in(x->old, x->old_mask, h, same, key);
        return s ? s->node : NULL;
}

/* Puts (h, node) in the first free slot of cur: the key is not there. */
static void place(struct mt_index *x, uint64_t h, void *node)
{
        uint64_t i = h & x->cur_mask;

        while (x->cur[i].hash)
                i = (i + 1) & x->cur_mask;
        x->cur[i] = (struct mt_slot){ .hash = h, .node = node };
        x->cur_used++;
}

/* Moves up to n old slots into cur; frees the old table once all moved.
 * Each batch first prefetches where its slots go, so their cache misses
 * overlap instead of queueing one behind the other. */
static void move_some(struct mt_index *x, unsigned n)
{
        while (n && x->moved <= x->old_mask) {
                uint64_t end = x->moved + (n < MOVE_PER_PUT ? n : MOVE_PER_PUT);

                if (end > x->old_mask + 1)
                        end = x->old_mask + 1;
                for (uint64_t i = x->moved; i < end; i++)
                        if (x->old[i].hash)
                                __builtin_prefetch(&x->cur[x->old[i].hash & x->cur_mask], 1);
                for (; x->moved < end; x->moved++, n--) {
                        struct mt_slot *s = &x->old[x->moved];

                        if (s->hash && s->node) /* a key put since has a tombstone here */
                                place(x, s->hash, s->node);
                }
        }
        if (x->moved > x->old_mask) {
                table_free(x->old, x->old_mask);
                x->old = NULL;
        }
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
        uint64_t slots = (x->cur_mask + 1) * 2;
        struct mt_slot *t;

        if (x->old)
                move_some(x, (unsigned)(x->old_mask + 1));      /* cannot happen; stay correct */
        t = table_new(slots);
        if (!t)
                return x->cur_used < x->cur_mask ? 0 : -ENOMEM;
        x->old = x->cur;
        x->old_mask = x->cur_mask;
        x->moved = 0;
        x->cur = t;
        x->cur_mask = slots - 1;
        x->cur_used = 0;
        return 0;
}

int mt_index_put(struct mt_index *x, uint64_t hash, void *node, mt_index_same_fn same,
                 const void *key, bool (*newer)(const void *stored, const void *node))
{
        uint64_t h = stored_hash(hash);
        struct mt_slot *s;

        if (!x->cur)
                return -ENOMEM;
        if (x->old)
                move_some(x, MOVE_PER_PUT);
        s = find_in(x->cur, x->cur_mask, h, same, key);
        if (s) {
                if (newer(s->node, node))
                        s->node = node;
                return 0;
        }
        if (x->old) {
                s = find_in(x->old, x->old_mask, h, same, key);
                if (s) {
                        if (!newer(s->node, node))
                                node = s->node;
                        s->node = NULL;         /* tombstone: the key lives in cur now */
                }
        }
        if ((x->cur_used + 1) * 4 > (x->cur_mask + 1) * 3 && grow(x) < 0)
                return -ENOMEM;
        place(x, h, node);
        return 0;
}

void mt_index_prefetch(const struct mt_index *x, uint64_t hash)
{
        if (x->cur)
                __builtin_prefetch(&x->cur[stored_hash(hash) & x->cur_mask], 1);
}

size_t mt_index_bytes(const struct mt_index *x)
{
        size_t b = x->cur ? (x->cur_mask + 1) * sizeof(struct mt_slot) : 0;

        if (x->old)
                b += (x->old_mask + 1) * sizeof(struct mt_slot);
        return b;
}
