/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard's memtable blocks (base/arena.h, struct arena_pool), which
 * also hold its block cache's pages (base/page_slab.h).
 *
 * Memtables carve their nodes from 2 MiB huge blocks. On a VM whose host
 * takes back the memory the guest frees (virtio-balloon free page
 * reporting, as on the machine this was tuned on), the first touch of a
 * fresh huge page costs 2.5-11 ms, and a memtable taking ~10k SETs per
 * block stopped its shard that long every few tens of milliseconds under
 * load: most of the server's SET p99. Two remedies:
 *
 * - Blocks of flushed memtables go back to the pool, up to the memtable
 *   budget's worth, not to the kernel: the next memtables reuse memory
 *   the host already backs.
 * - With prefault_memtables (the server's --prefault), the shard fills
 *   the pool with the budget's and the cache's worth of blocks as soon as
 *   it is open, off
 *   its thread: MADV_POPULATE_WRITE through IORING_OP_MADVISE, which the
 *   kernel runs on an io-wq worker, SHARD_PREFAULT_SLOTS at a time. Later
 *   it tops the pool up again only while the blocks in use and ready are
 *   fewer than that (a populate competes for a CPU with the shard, so it
 *   must not run in steady state). "That" is memtable_budget + cache_bytes
 *   in whole blocks, rounded down (s->prefault_cap), not the pool's cap:
 *   the cap also counts a partly used block per tablet and the cache's
 *   overrun, headroom that faulted in ahead made a small server's
 *   resident memory pass its --memory (97 MiB for 64 MiB on 2 shards).
 *
 * Each populate in flight is a background job (s->busy), so close waits
 * for it; none starts before the shard is open or once it is closing. A
 * kernel without MADV_POPULATE_WRITE (before 5.14) answers -EINVAL: the
 * shard then stops prefaulting and blocks fault in on first use.
 */
#include <errno.h>
#include <sys/mman.h>

#include "base/arena.h"
#include "base/log.h"
#include "base/time.h"
#include "engine/shard_internal.h"
#include "reactor/io.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static void refill(struct arena_pool *pool, void *ctx);

static void populated(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct shard_prefault *p = op->ctx;
        struct eng_shard *s = p->s;
        void *block = p->block;

        (void)loop;
        p->block = NULL;
        s->prefaulting--;
        if (res == -EINVAL && !s->populate_unsupported) {
                s->populate_unsupported = true;
                log_info("no MADV_POPULATE_WRITE (kernel before 5.14): memtable blocks fault in "
                         "on first use");
        }
        if (res < 0 || !arena_pool_put(s->pool, block)) {
                arena_pool_release(s->pool, block);
        } else {
                s->stats.blocks_prefaulted++;
                refill(s->pool, s);
        }
        shard_job_done(s);
}

/* Starts faulting one cold block in, in slot p; false if it could not. */
static bool prefault_one(struct eng_shard *s, struct shard_prefault *p)
{
        void *block = arena_pool_cold(s->pool);

        if (!block)
                return false;
        p->s = s;
        p->block = block;
        p->op.ctx = p;
        if (rx_mem_madvise(s->loop, &p->op, block, (uint32_t)ARENA_HUGE_BYTES, MADV_POPULATE_WRITE,
                           populated) < 0) {
                p->block = NULL;
                arena_pool_release(s->pool, block);
                return false;
        }
        s->prefaulting++;
        s->busy++;
        return true;
}

uint32_t shard_prefault_pending(const struct eng_shard *s)
{
        const struct arena_pool *pool = s->pool;

        if (!s->o.prefault_memtables || s->populate_unsupported ||
            pool->n + pool->out >= s->prefault_cap)
                return 0;
        return s->prefault_cap - pool->n - pool->out;
}

/* Runs whenever a memtable takes a block, and after each populate. */
static void refill(struct arena_pool *pool, void *ctx)
{
        struct eng_shard *s = ctx;

        if (!s->pool_on || s->closing || s->populate_unsupported || !s->o.prefault_memtables)
                return;
        for (unsigned i = 0; i < SHARD_PREFAULT_SLOTS; i++) {
                if (pool->n + pool->out + s->prefaulting >= s->prefault_cap)
                        break;
                if (!s->prefault[i].block && !prefault_one(s, &s->prefault[i]))
                        break;
        }
        if (!s->prefault_logged && !s->prefaulting && !shard_prefault_pending(s)) {
                s->prefault_logged = true;
                log_info("%zu MiB of memtable and cache memory faulted in (%.2f s)",
                         (size_t)s->prefault_cap * (ARENA_HUGE_BYTES >> 20),
                         (double)(time_now_ns() - s->prefault_start_ns) / 1e9);
        }
}

int shard_pool_init(struct eng_shard *s)
{
        /* The budget's worth, plus a partly used block per tablet of the
         * Redis keyspace and the ordered table (tablet.h's layout; tables
         * with more take blocks from malloc past the region), plus the
         * block cache's pages (eng_block_cache_use_pool). */
        size_t cap = s->o.memtable_budget / ARENA_HUGE_BYTES + 2 * s->o.tablets_per_shard +
                     eng_block_cache_pool_bytes(s->cache) / ARENA_HUGE_BYTES;
        size_t ahead = (s->o.memtable_budget + eng_block_cache_capacity(s->cache)) /
                       ARENA_HUGE_BYTES;

        s->prefault_cap = (uint32_t)(ahead < cap ? ahead : cap);

        /* Address space for twice that; past it, blocks come from malloc. */
        s->pool = arena_pool_new((unsigned)cap, 2 * cap * ARENA_HUGE_BYTES);
        if (!s->pool)
                return -ENOMEM;
        s->pool->refill = refill;
        s->pool->ctx = s;
        eng_block_cache_use_pool(s->cache, s->pool);
        return 0;
}

void shard_pool_start(struct eng_shard *s)
{
        s->pool_on = true;
        s->prefault_start_ns = time_now_ns();
        refill(s->pool, s);
}

void shard_pool_fini(struct eng_shard *s)
{
        if (!s->pool)
                return;
        s->pool->refill = NULL;         /* memtables may outlive the shard */
        arena_pool_unref(s->pool);
        s->pool = NULL;
}
