/* SPDX-License-Identifier: Apache-2.0 */
/* 4 KiB pages from an arena_pool's huge blocks; see page_slab.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/check.h"
#include "base/mem.h"
#include "base/page_slab.h"

#if defined(__SANITIZE_ADDRESS__)
#define PAGE_SLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)           /* clang's spelling */
#define PAGE_SLAB_ASAN 1
#endif
#endif

#ifdef PAGE_SLAB_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

void page_slab_init(struct page_slab *s, struct arena_pool *pool, size_t max_bytes)
{
        memset(s, 0, sizeof(*s));
        s->max_blocks = pool ? (unsigned)(max_bytes / ARENA_HUGE_BYTES) : 0;
        if (s->max_blocks) {
                s->blocks = malloc(s->max_blocks * sizeof(*s->blocks));
                s->free = malloc(s->max_blocks * (ARENA_HUGE_BYTES / PAGE_SLAB_PAGE) *
                                 sizeof(*s->free));
                if (!s->blocks || !s->free) {
                        free(s->blocks);
                        free(s->free);
                        s->blocks = NULL;
                        s->free = NULL;
                        s->max_blocks = 0;      /* every page from malloc: slower, still right */
                }
        }
        if (s->max_blocks) {
                s->pool = pool;
                arena_pool_ref(pool);
        }
}

void page_slab_fini(struct page_slab *s)
{
        /* A page still out would go back to the pool with its block and be
         * handed to a memtable while its owner still uses it. */
        SCREE_VERIFY(s->pages_out == 0);
        for (unsigned i = 0; i < s->n_blocks; i++) {
                UNPOISON((void *)s->blocks[i], ARENA_HUGE_BYTES);
                arena_pool_give(s->pool, (void *)s->blocks[i]);
        }
        if (s->pool)
                arena_pool_unref(s->pool);
        free(s->blocks);
        free(s->free);
        memset(s, 0, sizeof(*s));
}

/* The index of the first block at or above addr. */
static unsigned lower_bound(const struct page_slab *s, uintptr_t addr)
{
        unsigned lo = 0, hi = s->n_blocks;

        while (lo < hi) {
                unsigned mid = lo + (hi - lo) / 2;

                if (s->blocks[mid] < addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Takes one more huge block from the pool to carve; false if it may not. */
static bool take_block(struct page_slab *s)
{
        uint8_t *b;
        unsigned at;

        if (s->n_blocks >= s->max_blocks || !(b = arena_pool_take(s->pool)))
                return false;
        at = lower_bound(s, (uintptr_t)b);
        memmove(&s->blocks[at + 1], &s->blocks[at], (s->n_blocks - at) * sizeof(*s->blocks));
        s->blocks[at] = (uintptr_t)b;
        s->n_blocks++;
        s->carve = b;
        s->carve_left = ARENA_HUGE_BYTES;
        return true;
}

void *page_slab_alloc(struct page_slab *s, size_t len)
{
        void *p;

        if (len != PAGE_SLAB_PAGE || !s->pool)
                return mem_alloc_aligned(PAGE_SLAB_PAGE, len);
        if (s->n_free) {
                p = s->free[--s->n_free];
                UNPOISON(p, PAGE_SLAB_PAGE);
        } else if (s->carve_left || take_block(s)) {
                p = s->carve;
                s->carve += PAGE_SLAB_PAGE;
                s->carve_left -= PAGE_SLAB_PAGE;
        } else {
                s->fallbacks++;
                return mem_alloc_aligned(PAGE_SLAB_PAGE, len);
        }
        s->pages_out++;
        return p;
}

static bool owns(const struct page_slab *s, const void *p)
{
        uintptr_t base = (uintptr_t)p & ~(uintptr_t)(ARENA_HUGE_BYTES - 1);
        unsigned at = lower_bound(s, base);

        return at < s->n_blocks && s->blocks[at] == base;
}

void page_slab_free(struct page_slab *s, void *p, size_t len)
{
        if (!p)
                return;
        if (len != PAGE_SLAB_PAGE || !owns(s, p)) {
                mem_free_aligned(p);
                return;
        }
        POISON(p, PAGE_SLAB_PAGE);
        s->free[s->n_free++] = p;
        s->pages_out--;
}
