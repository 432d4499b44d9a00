/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard's memtable blocks (engine/shard_pool.c): with
 * prefault_memtables the budget's and the cache's worth (no more) is
 * faulted in off the shard's thread once it is open, and writes then take
 * ready blocks, never cold ones; without it nothing is faulted ahead, but flushed memtables' blocks
 * are reused; closing while blocks fault in waits for them (ASan checks
 * that nothing leaks); the block cache's pages come from the pool, up to
 * its capacity and an eighth, then from malloc.
 */
#include "tests/engine/shard_helpers.h"

#include "base/arena.h"
#include "tests/kernel.h"

TestSuite(shard_pool, .init = setup, .fini = teardown, .timeout = 120);

/* Runs the loop until no block is left to fault in. Memory the machine
 * never touched can take seconds to fault in on a cold, loaded VM: wait
 * for the stat, not for a number of loop turns (issue 23). */
static const struct eng_shard_stats *run_until_prefaulted(void)
{
        TEST_RUN_UNTIL(loop, eng_shard_stats(sh)->prefault_pending == 0);
        return eng_shard_stats(sh);
}

/* Puts keys from..from+n-1, each with a 100-byte value. */
static void put_keys(int from, int n)
{
        char k[32], v[128];

        for (int i = from; i < from + n; i++) {
                snprintf(k, sizeof(k), "key%07d", i);
                snprintf(v, sizeof(v), "%0100d", i);
                cr_assert(eq(int, put_sync(k, v), 0));
        }
}

static void expect_keys(int from, int n)
{
        char k[32], v[128];

        for (int i = from; i < from + n; i += 13) {
                snprintf(k, sizeof(k), "key%07d", i);
                snprintf(v, sizeof(v), "%0100d", i);
                expect_value(k, v);
        }
}

Test(shard_pool, prefaulting_fills_the_budget_and_writes_take_only_ready_blocks)
{
        const struct eng_shard_stats *st;
        uint64_t misses, prefaulted;

        opts.memtable_budget = 32 << 20;
        opts.cache_bytes = 16 << 20;
        opts.prefault_memtables = true;
        opts.sync = ENG_WAL_SYNC_PERIODIC;
        cr_assert(eq(int, shard_open_sync(), 0));
        if (!kernel_populates())
                cr_skip_test("no MADV_POPULATE_WRITE here (Linux < 5.14)");
        st = run_until_prefaulted();
        /* The budget's worth (16 blocks) and the cache's capacity (8),
         * less the blocks the first memtables took at open: not the pool's
         * headroom (a block per tablet, the cache's overrun), or a small
         * server faulted in more than its --memory (issue 24). */
        misses = st->block_pool_misses;
        prefaulted = st->blocks_prefaulted;
        cr_expect(eq(u64, prefaulted + misses, (32 << 20) / ARENA_HUGE_BYTES + (16 << 20) / ARENA_HUGE_BYTES),
                  "%llu prefaulted, %llu taken cold", (unsigned long long)prefaulted,
                  (unsigned long long)misses);
        put_keys(0, 80000);                     /* ~16 MiB: a few blocks a tablet */
        st = eng_shard_stats(sh);
        cr_expect(gt(u64, st->block_pool_hits, 0));
        cr_expect(eq(u64, st->block_pool_misses, misses), "a write took a cold block");
        cr_expect(eq(u64, st->blocks_prefaulted, prefaulted), "nothing faulted in past the budget");
        expect_keys(0, 80000);
        cr_assert(eq(int, reopen(), 0));
        expect_keys(0, 80000);
}

Test(shard_pool, without_prefaulting_flushed_memtables_blocks_are_reused)
{
        const struct eng_shard_stats *st;

        opts.memtable_budget = 4 << 20;         /* flushes every ~10k keys */
        opts.sync = ENG_WAL_SYNC_PERIODIC;
        cr_assert(eq(int, shard_open_sync(), 0));
        put_keys(0, 60000);
        cr_assert(eq(int, flush_sync(), 0));
        st = eng_shard_stats(sh);
        cr_expect(ge(u64, st->flushes, 3));
        cr_expect(eq(u64, st->blocks_prefaulted, 0));
        cr_expect(eq(u64, st->prefault_pending, 0));
        cr_expect(gt(u64, st->block_pool_hits, 0), "no block of a flushed memtable was reused");
        expect_keys(0, 60000);
}

Test(shard_pool, closing_while_blocks_fault_in_waits_for_them)
{
        opts.memtable_budget = 256 << 20;
        opts.prefault_memtables = true;
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("k", "v"), 0));
        shard_close_sync();                     /* with populates in flight */
        cr_assert(eq(int, shard_open_sync(), 0));
        expect_value("k", "v");
}

Test(shard_pool, the_block_caches_pages_come_from_the_pool_up_to_its_capacity)
{
        const struct eng_shard_stats *st;
        uint64_t taken;

        opts.memtable_budget = 4 << 20;
        opts.cache_bytes = 2 << 20;             /* with the slack: 3 huge blocks, 1,536 pages */
        opts.sync = ENG_WAL_SYNC_PERIODIC;
        cr_assert(eq(int, shard_open_sync(), 0));
        put_keys(0, 60000);                     /* ~8 MiB of tables: more blocks than that */
        cr_assert(eq(int, flush_sync(), 0));
        taken = eng_shard_stats(sh)->block_pool_hits + eng_shard_stats(sh)->block_pool_misses;
        expect_keys(0, 60000);
        st = eng_shard_stats(sh);
        cr_expect(gt(u64, st->cache_misses, 0), "the reads went to the tables");
        cr_expect(gt(u64, st->cache_pages_huge, 0), "cached blocks sit in the pool's huge blocks");
        cr_expect(le(u64, st->cache_pages_huge, 3 * ARENA_HUGE_BYTES / 4096));
        cr_expect(le(u64, st->block_pool_hits + st->block_pool_misses - taken, 3),
                  "the cache took at most its capacity and an eighth, in whole blocks");
        /* Evicted pages are reused before malloc is asked: the cache's
         * bytes stay near its capacity, so it never needs more pages. */
        cr_expect(le(u64, st->cache_bytes, (2 << 20) + 64 * 4096));
        cr_expect(eq(u64, st->cache_pages_malloc, 0));
        expect_keys(0, 60000);
        cr_expect(eq(u64, eng_shard_stats(sh)->cache_pages_malloc, 0));
        cr_assert(eq(int, reopen(), 0));
        expect_keys(0, 60000);
}
