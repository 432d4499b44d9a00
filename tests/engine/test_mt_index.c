/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memtable's hash index (engine/mt_index.h): every key is found through
 * several incremental grows, including while the old table is still being
 * moved; a key keeps its newest node whichever table it was in; colliding
 * hashes (even all equal) stay apart; the moving never duplicates a key
 * (the new table ends with exactly one slot per key).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/arena.h"
#include "engine/mt_index.h"

TestSuite(mt_index, .timeout = 20);

/* A node: key and version. */
struct node {
        uint32_t key;
        uint32_t version;
};

static bool same(const void *node, const void *key)
{
        return ((const struct node *)node)->key == *(const uint32_t *)key;
}

static bool newer(const void *stored, const void *node)
{
        return ((const struct node *)node)->version > ((const struct node *)stored)->version;
}

static uint64_t hash_of(uint32_t k)
{
        return (uint64_t)k * 0x9e3779b97f4a7c15ull;
}

static void put(struct mt_index *x, struct node *n, uint64_t h)
{
        cr_assert(eq(int, mt_index_put(x, h, n, same, &n->key, newer), 0));
}

static struct node *find(const struct mt_index *x, uint32_t k, uint64_t h)
{
        return mt_index_find(x, h, same, &k);
}

enum { N = 20000 };
static struct node v1[N], v2[N];

Test(mt_index, keys_are_found_through_grows_and_keep_their_newest_node)
{
        struct mt_index x;
        bool seen_moving = false;

        cr_assert(eq(int, mt_index_init(&x, NULL), 0));
        for (uint32_t k = 0; k < N; k++) {
                v1[k] = (struct node){ k, 1 };
                put(&x, &v1[k], hash_of(k));
                seen_moving = seen_moving || mt_index_moving(&x);
                /* Every so often, all keys so far, mid-move or not. */
                if (k % 997 == 0)
                        for (uint32_t j = 0; j <= k; j++)
                                cr_assert(eq(ptr, find(&x, j, hash_of(j)), &v1[j]), "key %u at %u", j, k);
        }
        cr_expect(seen_moving, "never grew");
        cr_expect(eq(ptr, find(&x, N + 5, hash_of(N + 5)), NULL));
        /* Newer versions replace, older ones do not, wherever the key is. */
        for (uint32_t k = 0; k < N; k += 3) {
                v2[k] = (struct node){ k, 2 };
                put(&x, &v2[k], hash_of(k));
                put(&x, &v1[k], hash_of(k));
        }
        for (uint32_t k = 0; k < N; k++)
                cr_assert(eq(ptr, find(&x, k, hash_of(k)), k % 3 ? &v1[k] : &v2[k]), "key %u", k);
        cr_expect(ge(u64, mt_index_bytes(&x), N * sizeof(struct mt_slot)));
        mt_index_fini(&x);
}

/* A grow happens with keys updated while the old table is half moved: the
 * moved table must hold each key once, with its newest node. */
Test(mt_index, updates_during_a_move_leave_one_slot_per_key)
{
        struct mt_index x;
        uint32_t k = 0, distinct;

        cr_assert(eq(int, mt_index_init(&x, NULL), 0));
        while (!mt_index_moving(&x)) {
                v1[k] = (struct node){ k, 1 };
                put(&x, &v1[k], hash_of(k));
                k++;
        }
        distinct = k;
        /* Update every old key, newest first: some are moved already. */
        for (uint32_t j = 0; j < distinct; j++) {
                v2[j] = (struct node){ j, 2 };
                put(&x, &v2[j], hash_of(j));
        }
        while (mt_index_moving(&x)) {         /* finish the move with fresh keys */
                v1[k] = (struct node){ k, 1 };
                put(&x, &v1[k], hash_of(k));
                k++;
        }
        for (uint32_t j = 0; j < k; j++)
                cr_assert(eq(ptr, find(&x, j, hash_of(j)), j < distinct ? &v2[j] : &v1[j]), "key %u", j);
        cr_expect(eq(u64, x.cur_used, k), "%llu slots for %u keys",
                  (unsigned long long)x.cur_used, k);
        mt_index_fini(&x);
}

Test(mt_index, equal_hashes_stay_apart)
{
        struct mt_index x;

        cr_assert(eq(int, mt_index_init(&x, NULL), 0));
        for (uint32_t k = 0; k < 3000; k++) {
                v1[k] = (struct node){ k, 1 };
                put(&x, &v1[k], k % 2 ? 0 : 42);        /* 0 is a valid hash too */
        }
        for (uint32_t k = 0; k < 3000; k++)
                cr_assert(eq(ptr, find(&x, k, k % 2 ? 0 : 42), &v1[k]), "key %u", k);
        cr_expect(eq(ptr, find(&x, 3001, 42), NULL));
        mt_index_fini(&x);
}

/* Tables from 2 MiB up are rows of 2 MiB segments taken from the block
 * pool; blocks it hands back ready hold a previous user's bytes, so a
 * segment must be zeroed (garbage slots would read as keys). */
Test(mt_index, big_tables_take_zeroed_segments_from_the_pool_and_give_them_back)
{
        enum { KEYS = 400000 };                 /* grows to 1M slots: 8 segments */
        struct arena_pool *pool = arena_pool_new(16, 16 * ARENA_HUGE_BYTES);
        static struct node big[KEYS];
        struct mt_index x;

        cr_assert(not(eq(ptr, pool, NULL)));
        for (unsigned i = 0; i < 16; i++) {     /* every ready block full of garbage */
                void *b = arena_pool_cold(pool);

                memset(b, 0xa5, ARENA_HUGE_BYTES);
                cr_assert(arena_pool_put(pool, b));
        }
        cr_assert(eq(int, mt_index_init(&x, pool), 0));
        for (uint32_t k = 0; k < KEYS; k++) {
                big[k] = (struct node){ k, 1 };
                put(&x, &big[k], hash_of(k));
        }
        while (mt_index_moving(&x))             /* finish the last move */
                put(&x, &big[0], hash_of(0));
        for (uint32_t k = 0; k < KEYS; k += 7)
                cr_assert(eq(ptr, find(&x, k, hash_of(k)), &big[k]), "key %u", k);
        cr_expect(eq(ptr, find(&x, KEYS + 1, hash_of(KEYS + 1)), NULL));
        cr_expect(eq(u64, x.cur.mask + 1, (uint64_t)1 << 20));
        cr_expect(eq(u32, pool->out, 8), "the table holds 8 whole segments");
        cr_expect(ge(u64, pool->hits, 8));
        mt_index_fini(&x);
        cr_expect(eq(u32, pool->out, 0));
        cr_expect(eq(u32, pool->refs, 1), "fini dropped the index's reference");
        arena_pool_unref(pool);
}

/* The next table is made ready a segment at a time while the current one
 * fills from 1/2 to 3/4: no put takes more than one segment, where the
 * switch used to take the whole bigger table at once (a stall of the
 * shard). The segments still come zeroed from a pool full of garbage. */
Test(mt_index, a_grow_never_takes_more_than_one_segment_in_one_put)
{
        enum { KEYS = 300000 };                 /* ends in 512K slots, preparing 1M */
        struct arena_pool *pool = arena_pool_new(32, 32 * ARENA_HUGE_BYTES);
        static struct node big[KEYS];
        size_t before, max_step = 0;
        struct mt_index x;

        cr_assert(not(eq(ptr, pool, NULL)));
        for (unsigned i = 0; i < 32; i++) {
                void *b = arena_pool_cold(pool);

                memset(b, 0x5a, ARENA_HUGE_BYTES);
                cr_assert(arena_pool_put(pool, b));
        }
        cr_assert(eq(int, mt_index_init(&x, pool), 0));
        before = mt_index_bytes(&x);
        for (uint32_t k = 0; k < KEYS; k++) {
                size_t now;

                big[k] = (struct node){ k, 1 };
                put(&x, &big[k], hash_of(k));
                now = mt_index_bytes(&x);
                if (now > before && now - before > max_step)
                        max_step = now - before;
                before = now;
        }
        cr_expect(le(sz, max_step, (size_t)ARENA_HUGE_BYTES), "one put took %zu bytes", max_step);
        cr_expect(eq(u64, x.cur.mask + 1, (uint64_t)1 << 19));
        cr_expect(gt(u64, x.next_ready, 0), "past half full: the next table is on its way");
        cr_expect(lt(u64, x.next_ready, 8), "but not all of it yet");
        cr_expect(eq(u32, pool->out, (uint32_t)(mt_index_bytes(&x) / ARENA_HUGE_BYTES)));
        for (uint32_t k = 0; k < KEYS; k += 5)
                cr_assert(eq(ptr, find(&x, k, hash_of(k)), &big[k]), "key %u", k);
        mt_index_fini(&x);
        cr_expect(eq(u32, pool->out, 0), "the next table's segments went back too");
        arena_pool_unref(pool);
}
