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
