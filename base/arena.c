/* SPDX-License-Identifier: Apache-2.0 */
/* Bump allocator; see arena.h. Requests over a quarter block get their own
 * block. The pool of huge blocks is in arena_pool.c. */
#include <stdlib.h>
#include <sys/mman.h>

#include "base/arena.h"

#define ARENA_DEFAULT_BLOCK (256u * 1024u)
#define ARENA_ALIGN 8u

struct arena_block {
        struct arena_block *next;
        size_t bytes;
        /* data follows, 8-byte aligned (the header is 16 bytes) */
};

void arena_init(struct arena *a, size_t block_bytes)
{
        a->blocks = NULL;
        a->cur = a->end = NULL;
        a->block_bytes = block_bytes ? block_bytes : ARENA_DEFAULT_BLOCK;
        a->reserved_bytes = a->used_bytes = 0;
        a->huge = false;
        a->pool = NULL;
}

void arena_init_huge(struct arena *a)
{
        arena_init_pooled(a, NULL);
}

void arena_init_pooled(struct arena *a, struct arena_pool *pool)
{
        arena_init(a, ARENA_HUGE_BYTES - sizeof(struct arena_block));
        a->huge = true;
        a->pool = pool;
        if (pool)
                arena_pool_ref(pool);
}

void arena_fini(struct arena *a)
{
        struct arena_block *b = a->blocks, *next;
        bool huge = a->huge;

        for (; b; b = next) {
                next = b->next;
                if (!huge || b->bytes != a->block_bytes)
                        free(b);
                else if (!a->pool)
                        arena_block_free(b);
                else
                        arena_pool_give(a->pool, b);
        }
        arena_pool_unref(a->pool);
        arena_init(a, a->block_bytes);
        a->huge = huge;
}

void *arena_block_new(void)
{
        void *b = aligned_alloc(ARENA_HUGE_BYTES, ARENA_HUGE_BYTES);

        /* The advice is a hint: without it (or without THP) the block
         * still works. */
        if (b)
                madvise(b, ARENA_HUGE_BYTES, MADV_HUGEPAGE);
        return b;
}

void arena_block_free(void *block)
{
        free(block);
}

static struct arena_block *block_new(struct arena *a, size_t bytes)
{
        struct arena_block *b;

        if (a->huge && bytes == a->block_bytes)
                b = a->pool ? arena_pool_take(a->pool) : arena_block_new();
        else
                b = malloc(sizeof(*b) + bytes);
        if (!b)
                return NULL;
        b->bytes = bytes;
        a->reserved_bytes += bytes;
        return b;
}

void *arena_alloc(struct arena *a, size_t n)
{
        struct arena_block *b;
        uint8_t *p;

        n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
        if (a->cur && (size_t)(a->end - a->cur) >= n) {
                p = a->cur;
                a->cur += n;
                a->used_bytes += n;
                return p;
        }
        if (n > a->block_bytes / 4) {
                /* Big: its own block, behind the current one so the current
                 * block's free space is not wasted. */
                b = block_new(a, n);
                if (!b)
                        return NULL;
                b->next = a->blocks ? a->blocks->next : NULL;
                if (a->blocks)
                        a->blocks->next = b;
                else
                        a->blocks = b;
                a->used_bytes += n;
                return (uint8_t *)(b + 1);
        }
        b = block_new(a, a->block_bytes);
        if (!b)
                return NULL;
        b->next = a->blocks;
        a->blocks = b;
        a->cur = (uint8_t *)(b + 1) + n;
        a->end = (uint8_t *)(b + 1) + b->bytes;
        a->used_bytes += n;
        return b + 1;
}
