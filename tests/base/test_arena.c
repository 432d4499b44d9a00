/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Arena (base/arena.h): alignment, no overlap between allocations of mixed
 * sizes (including ones bigger than a block), accounting, and reuse after fini.
 */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/arena.h"

TestSuite(arena, .timeout = 10);

Test(arena, allocations_are_aligned_disjoint_and_accounted)
{
        enum { N = 300 };
        static const size_t sizes[] = { 1, 7, 8, 100, 4096, 20000, 70000, 300000 };
        struct arena a;
        uint8_t *p[N];
        size_t len[N], used = 0;

        arena_init(&a, 64 * 1024);
        for (unsigned i = 0; i < N; i++) {
                len[i] = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
                p[i] = arena_alloc(&a, len[i]);
                cr_assert(not(eq(ptr, p[i], NULL)));
                cr_assert(eq(u64, (uintptr_t)p[i] % 8, 0), "allocation %u misaligned", i);
                memset(p[i], (int)(i & 0xff), len[i]);
                used += (len[i] + 7) & ~(size_t)7;
        }
        for (unsigned i = 0; i < N; i++)
                for (size_t k = 0; k < len[i]; k += 997)
                        cr_assert(eq(u8, p[i][k], (uint8_t)(i & 0xff)), "allocation %u overwritten", i);
        cr_expect(eq(sz, a.used_bytes, used));
        cr_expect(ge(sz, a.reserved_bytes, a.used_bytes));
        arena_fini(&a);
        cr_expect(eq(sz, a.reserved_bytes, 0));
        cr_assert(not(eq(ptr, arena_alloc(&a, 10), NULL)), "usable again after fini");
        arena_fini(&a);
}

Test(arena, huge_blocks_hold_whole_huge_pages_and_stay_huge_after_fini)
{
        enum { N = 200 };
        static const size_t sizes[] = { 24, 150, 4096, 100000, 600000 };
        struct arena a;
        uint8_t *p[N];
        size_t len[N];

        arena_init_huge(&a);
        for (int round = 0; round < 2; round++) {
                for (unsigned i = 0; i < N; i++) {
                        len[i] = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
                        p[i] = arena_alloc(&a, len[i]);
                        cr_assert(not(eq(ptr, p[i], NULL)));
                        cr_assert(eq(u64, (uintptr_t)p[i] % 8, 0));
                        memset(p[i], (int)(i & 0xff), len[i]);
                }
                for (unsigned i = 0; i < N; i++)
                        for (size_t k = 0; k < len[i]; k += 991)
                                cr_assert(eq(u8, p[i][k], (uint8_t)(i & 0xff)));
                /* Blocks come in whole huge pages (the header inside). */
                cr_expect(ge(sz, a.reserved_bytes, ARENA_HUGE_BYTES - 64));
                arena_fini(&a);
                cr_expect(eq(sz, a.reserved_bytes, 0));
                cr_expect(a.huge, "fini keeps the arena huge for its next use");
        }
}

/* ---- the pool of huge blocks --------------------------------------------- */

struct refills {
        unsigned calls;
};

static void count_refill(struct arena_pool *pool, void *ctx)
{
        (void)pool;
        ((struct refills *)ctx)->calls++;
}

static bool in_pool_region(const struct arena_pool *pool, const void *p)
{
        const uint8_t *b = p;

        return b >= pool->region && b < pool->region + (size_t)pool->region_blocks * ARENA_HUGE_BYTES;
}

Test(arena, pooled_arenas_take_ready_blocks_first_then_cold_ones_and_call_refill)
{
        struct arena_pool *pool = arena_pool_new(2, 3 * ARENA_HUGE_BYTES);
        struct refills r = { 0 };
        struct arena a;
        void *ready;

        cr_assert(not(eq(ptr, pool, NULL)));
        cr_expect(eq(u32, pool->region_blocks, 3));
        cr_expect(eq(u64, (uintptr_t)pool->region % ARENA_HUGE_BYTES, 0), "region block-aligned");
        pool->refill = count_refill;
        pool->ctx = &r;
        ready = arena_pool_cold(pool);
        cr_assert(in_pool_region(pool, ready));
        memset(ready, 1, ARENA_HUGE_BYTES);     /* the owner faults it in */
        cr_assert(arena_pool_put(pool, ready));

        arena_init_pooled(&a, pool);
        cr_expect(eq(u32, pool->refs, 2), "the arena holds a reference");
        cr_assert(not(eq(ptr, arena_alloc(&a, 100), NULL)));
        cr_expect(eq(ptr, a.blocks, ready), "the ready block goes first");
        cr_expect(eq(u64, pool->hits, 1));
        cr_expect(eq(u32, r.calls, 1), "taking a block asks for a refill");
        /* Fill the block: the next one is cold (a miss), from the region. */
        for (size_t used = 0; used < ARENA_HUGE_BYTES; used += 4096)
                cr_assert(not(eq(ptr, arena_alloc(&a, 4096), NULL)));
        cr_expect(eq(u64, pool->misses, 1));
        cr_expect(in_pool_region(pool, a.blocks));
        cr_expect(eq(u32, pool->out, 2));
        cr_expect(eq(u32, r.calls, 2));
        arena_fini(&a);
        cr_expect(eq(u32, pool->out, 0));
        cr_expect(eq(u32, pool->n, 2), "both blocks are ready again");
        cr_expect(eq(u32, pool->refs, 1), "fini dropped the arena's reference");
        arena_pool_unref(pool);
}

Test(arena, blocks_past_the_pools_room_are_released_and_past_its_region_come_from_malloc)
{
        struct arena_pool *pool = arena_pool_new(1, ARENA_HUGE_BYTES);
        struct arena a;
        void *outside, *in_region;

        cr_assert(not(eq(ptr, pool, NULL)));
        arena_init_pooled(&a, pool);
        while (pool->out < 3)                   /* three blocks: the region's, two others */
                cr_assert(not(eq(ptr, arena_alloc(&a, 65536), NULL)));
        cr_expect(eq(u32, pool->n_cold, 0));
        arena_fini(&a);
        /* Newest first: the third block fits back, the second (malloc'd)
         * is freed -- ASan reports it otherwise -- and the first, the
         * region's, is released: cold again. */
        cr_expect(eq(u32, pool->n, 1));
        cr_expect(eq(u32, pool->out, 0));
        cr_expect(eq(u32, pool->n_cold, 1));
        cr_expect(not(in_pool_region(pool, pool->ready[0])));
        in_region = arena_pool_cold(pool);
        cr_expect(in_pool_region(pool, in_region));
        outside = arena_pool_cold(pool);        /* the region is used up */
        cr_assert(not(eq(ptr, outside, NULL)));
        cr_expect(not(in_pool_region(pool, outside)));
        cr_expect(eq(u64, (uintptr_t)outside % ARENA_HUGE_BYTES, 0));
        arena_pool_release(pool, outside);
        arena_pool_release(pool, in_region);
        cr_expect(eq(u32, pool->n_cold, 1));
        arena_pool_unref(pool);
}

Test(arena, the_pool_outlives_its_owner_while_an_arena_holds_it)
{
        struct arena_pool *pool = arena_pool_new(4, 4 * ARENA_HUGE_BYTES);
        struct arena a;
        uint8_t *p;

        cr_assert(not(eq(ptr, pool, NULL)));
        arena_init_pooled(&a, pool);
        p = arena_alloc(&a, 1000);
        cr_assert(not(eq(ptr, p, NULL)));
        arena_pool_unref(pool);                 /* the owner lets go first */
        memset(p, 7, 1000);                     /* the block is still mapped */
        cr_expect(eq(u8, p[999], 7));
        arena_fini(&a);                         /* the last reference: unmaps */
}
