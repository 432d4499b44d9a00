/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 4 KiB pages from an arena_pool's huge blocks (base/page_slab.h): pages
 * are carved from the pool's blocks, freed ones reused newest first;
 * other lengths, pages past max_bytes and a slab without a pool go to
 * malloc and back; fini gives every block back to the pool, and refuses
 * (aborts) while a page is still out.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/arena.h"
#include "base/page_slab.h"

TestSuite(page_slab, .timeout = 10);

#define PAGES_PER_BLOCK (ARENA_HUGE_BYTES / PAGE_SLAB_PAGE)

static int in_block(const void *p, const struct page_slab *s)
{
        uintptr_t base = (uintptr_t)p & ~(uintptr_t)(ARENA_HUGE_BYTES - 1);

        for (unsigned i = 0; i < s->n_blocks; i++)
                if (s->blocks[i] == base)
                        return 1;
        return 0;
}

Test(page_slab, pages_come_from_the_pools_blocks_and_are_reused)
{
        struct arena_pool *pool = arena_pool_new(4, 8 * ARENA_HUGE_BYTES);
        struct page_slab s;
        uint8_t *a, *b, *big;

        cr_assert(not(eq(ptr, pool, NULL)));
        page_slab_init(&s, pool, 2 * ARENA_HUGE_BYTES);
        a = page_slab_alloc(&s, PAGE_SLAB_PAGE);
        b = page_slab_alloc(&s, PAGE_SLAB_PAGE);
        cr_assert(not(eq(ptr, a, NULL)));
        cr_assert(not(eq(ptr, b, NULL)));
        cr_expect(eq(u32, pool->out, 1), "one huge block taken");
        cr_expect(in_block(a, &s));
        cr_expect(in_block(b, &s));
        cr_expect(eq(u64, (uintptr_t)a % PAGE_SLAB_PAGE, 0));
        cr_expect(eq(ptr, b, a + PAGE_SLAB_PAGE), "carved in order");
        memset(a, 0xab, PAGE_SLAB_PAGE);
        memset(b, 0xcd, PAGE_SLAB_PAGE);
        cr_expect(eq(u64, s.pages_out, 2));
        page_slab_free(&s, a, PAGE_SLAB_PAGE);
        page_slab_free(&s, b, PAGE_SLAB_PAGE);
        cr_expect(eq(ptr, page_slab_alloc(&s, PAGE_SLAB_PAGE), b), "the newest freed first");
        cr_expect(eq(ptr, page_slab_alloc(&s, PAGE_SLAB_PAGE), a));
        /* Another length: malloc's, freed to malloc (ASan checks). */
        big = page_slab_alloc(&s, 2 * PAGE_SLAB_PAGE);
        cr_assert(not(eq(ptr, big, NULL)));
        cr_expect(not(in_block(big, &s)));
        cr_expect(eq(u64, (uintptr_t)big % PAGE_SLAB_PAGE, 0));
        page_slab_free(&s, big, 2 * PAGE_SLAB_PAGE);
        page_slab_free(&s, a, PAGE_SLAB_PAGE);
        page_slab_free(&s, b, PAGE_SLAB_PAGE);
        cr_expect(eq(u64, s.pages_out, 0));
        page_slab_fini(&s);
        cr_expect(eq(u32, pool->out, 0), "the block went back to the pool");
        arena_pool_unref(pool);
}

Test(page_slab, past_max_bytes_pages_come_from_malloc)
{
        struct arena_pool *pool = arena_pool_new(4, 8 * ARENA_HUGE_BYTES);
        static void *pages[2 * PAGES_PER_BLOCK + 10];
        struct page_slab s;
        size_t n = sizeof(pages) / sizeof(pages[0]);

        page_slab_init(&s, pool, 2 * ARENA_HUGE_BYTES);
        for (size_t i = 0; i < n; i++) {
                pages[i] = page_slab_alloc(&s, PAGE_SLAB_PAGE);
                cr_assert(not(eq(ptr, pages[i], NULL)));
        }
        cr_expect(eq(u32, s.n_blocks, 2));
        cr_expect(eq(u64, s.pages_out, 2 * PAGES_PER_BLOCK));
        cr_expect(eq(u64, s.fallbacks, 10));
        cr_expect(not(in_block(pages[n - 1], &s)));
        for (size_t i = 0; i < n; i++)
                page_slab_free(&s, pages[i], PAGE_SLAB_PAGE);
        cr_expect(eq(u64, s.pages_out, 0));
        page_slab_fini(&s);
        cr_expect(eq(u32, pool->out, 0));
        arena_pool_unref(pool);

        /* Without a pool: every page is malloc's, and none is counted. */
        page_slab_init(&s, NULL, 2 * ARENA_HUGE_BYTES);
        pages[0] = page_slab_alloc(&s, PAGE_SLAB_PAGE);
        cr_assert(not(eq(ptr, pages[0], NULL)));
        cr_expect(eq(u64, s.pages_out, 0));
        page_slab_free(&s, pages[0], PAGE_SLAB_PAGE);
        page_slab_free(&s, NULL, PAGE_SLAB_PAGE);
        page_slab_fini(&s);
}

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>

Test(page_slab, a_freed_page_is_poisoned_until_it_is_reused)
{
        struct arena_pool *pool = arena_pool_new(4, 8 * ARENA_HUGE_BYTES);
        struct page_slab s;
        uint8_t *a;

        page_slab_init(&s, pool, ARENA_HUGE_BYTES);
        a = page_slab_alloc(&s, PAGE_SLAB_PAGE);
        cr_expect(not(__asan_address_is_poisoned(a + 100)));
        page_slab_free(&s, a, PAGE_SLAB_PAGE);
        cr_expect(__asan_address_is_poisoned(a + 100), "a use after free is caught");
        cr_expect(eq(ptr, page_slab_alloc(&s, PAGE_SLAB_PAGE), a));
        cr_expect(not(__asan_address_is_poisoned(a + 100)));
        page_slab_free(&s, a, PAGE_SLAB_PAGE);
        page_slab_fini(&s);
        arena_pool_unref(pool);
}
#endif

/* Finishing with a page still out would give its block back to the pool
 * (and on to a memtable) under its owner: refused, loudly. */
Test(page_slab, finishing_with_a_page_out_aborts, .signal = SIGABRT)
{
        struct arena_pool *pool = arena_pool_new(4, 8 * ARENA_HUGE_BYTES);
        struct page_slab s;

        page_slab_init(&s, pool, ARENA_HUGE_BYTES);
        cr_assert(not(eq(ptr, page_slab_alloc(&s, PAGE_SLAB_PAGE), NULL)));
        page_slab_fini(&s);
}
