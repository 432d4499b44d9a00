/* SPDX-License-Identifier: Apache-2.0 */
/* Huge blocks for pooled arenas, carved from one reserved region; see arena.h. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/arena.h"

/* Maps reserve_bytes (whole blocks) of address space, block-aligned,
 * advised as huge pages; false on ENOMEM. */
static bool region_reserve(struct arena_pool *pool, size_t reserve_bytes)
{
        size_t blocks = (reserve_bytes + ARENA_HUGE_BYTES - 1) / ARENA_HUGE_BYTES;
        size_t bytes = blocks * ARENA_HUGE_BYTES, head;
        uint8_t *p;

        if (!blocks || blocks > UINT32_MAX)
                return blocks == 0;
        p = mmap(NULL, bytes + ARENA_HUGE_BYTES, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
                return false;
        head = (ARENA_HUGE_BYTES - (uintptr_t)p % ARENA_HUGE_BYTES) % ARENA_HUGE_BYTES;
        if (head)
                munmap(p, head);
        munmap(p + head + bytes, ARENA_HUGE_BYTES - head);
        pool->cold = malloc(blocks * sizeof(*pool->cold));
        if (!pool->cold) {
                munmap(p + head, bytes);
                return false;
        }
        /* A hint: without THP the blocks work, only slower. */
        madvise(p + head, bytes, MADV_HUGEPAGE);
        pool->region = p + head;
        pool->region_blocks = (uint32_t)blocks;
        for (uint32_t i = 0; i < pool->region_blocks; i++)
                pool->cold[i] = pool->region_blocks - 1 - i;    /* low addresses first */
        pool->n_cold = pool->region_blocks;
        return true;
}

struct arena_pool *arena_pool_new(unsigned cap, size_t reserve_bytes)
{
        struct arena_pool *pool = calloc(1, sizeof(*pool));

        if (!pool)
                return NULL;
        pool->ready = calloc(cap ? cap : 1, sizeof(*pool->ready));
        if (!pool->ready || !region_reserve(pool, reserve_bytes)) {
                free(pool->ready);
                free(pool);
                return NULL;
        }
        pool->cap = cap;
        pool->refs = 1;
        return pool;
}

void arena_pool_ref(struct arena_pool *pool)
{
        pool->refs++;
}

static bool in_region(const struct arena_pool *pool, const void *block)
{
        const uint8_t *p = block;

        return pool->region && p >= pool->region &&
               p < pool->region + (size_t)pool->region_blocks * ARENA_HUGE_BYTES;
}

void arena_pool_unref(struct arena_pool *pool)
{
        if (!pool || --pool->refs > 0)
                return;
        while (pool->n) {
                void *b = pool->ready[--pool->n];

                if (!in_region(pool, b))
                        arena_block_free(b);
        }
        if (pool->region)
                munmap(pool->region, (size_t)pool->region_blocks * ARENA_HUGE_BYTES);
        free(pool->cold);
        free(pool->ready);
        free(pool);
}

void *arena_pool_cold(struct arena_pool *pool)
{
        if (pool->n_cold)
                return pool->region + (size_t)pool->cold[--pool->n_cold] * ARENA_HUGE_BYTES;
        return arena_block_new();
}

void *arena_pool_take(struct arena_pool *pool)
{
        void *b;

        if (pool->n) {
                b = pool->ready[--pool->n];
                pool->hits++;
        } else {
                b = arena_pool_cold(pool);
                pool->misses++;
        }
        if (b)
                pool->out++;
        if (pool->refill)
                pool->refill(pool, pool->ctx);
        return b;
}

void arena_pool_give(struct arena_pool *pool, void *block)
{
        pool->out--;
        if (!arena_pool_put(pool, block))
                arena_pool_release(pool, block);
}

bool arena_pool_put(struct arena_pool *pool, void *block)
{
        if (pool->n >= pool->cap)
                return false;
        pool->ready[pool->n++] = block;
        return true;
}

void arena_pool_release(struct arena_pool *pool, void *block)
{
        if (!in_region(pool, block)) {
                arena_block_free(block);
                return;
        }
        /* Drops the pages (the next touch faults in zeroes); only the mmap
         * lock's read side, like a page fault. */
        madvise(block, ARENA_HUGE_BYTES, MADV_DONTNEED);
        pool->cold[pool->n_cold++] =
                (uint32_t)(((uint8_t *)block - pool->region) / ARENA_HUGE_BYTES);
}
