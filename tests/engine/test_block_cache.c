/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Block cache (engine/block_cache.h): hits and misses, the byte bound, a
 * one-off scan not flushing blocks that were hit twice, a hit among the
 * most recent leaving the block in place, pinned blocks never
 * evicted, a second put of a key returning the first, and dropping a file's
 * blocks while one is pinned; stats.pins counts the pins held. Rows: keyed
 * by file and hash apart from blocks, charged with their header, evicted
 * with blocks, erased with their file only; adopted blocks stay outside.
 * Slots: a bound slot finds its block until the block is evicted, erased
 * or the cache freed, which clear it; a block binds to one slot only.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/mem.h"
#include "engine/block_cache.h"

TestSuite(block_cache, .timeout = 20);

static struct eng_cached_block *put(struct eng_block_cache *c, uint64_t file, uint64_t block)
{
        uint8_t *buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, 4096);
        struct eng_cached_block *b;

        memset(buf, (int)(block & 0xff), 4096);
        b = eng_block_cache_put(c, file, block * 4096, buf, 4096, buf + 16, 4080);
        cr_assert(not(eq(ptr, b, NULL)));
        return b;
}

static bool cached(struct eng_block_cache *c, uint64_t file, uint64_t block)
{
        struct eng_cached_block *b = eng_block_cache_get(c, file, block * 4096);

        eng_block_cache_release(c, b);
        return b != NULL;
}

Test(block_cache, get_after_put_hits_and_unknown_keys_miss)
{
        struct eng_block_cache *c;
        struct eng_cached_block *b;

        cr_assert(eq(int, eng_block_cache_new(1 << 20, &c), 0));
        eng_block_cache_release(c, put(c, 1, 5));
        b = eng_block_cache_get(c, 1, 5 * 4096);
        cr_assert(not(eq(ptr, b, NULL)));
        cr_expect(eq(u8, b->data[0], 5));
        cr_expect(eq(u32, b->content_len, 4080));
        eng_block_cache_release(c, b);
        cr_expect(not(cached(c, 1, 6)));
        cr_expect(not(cached(c, 2, 5)));
        cr_expect(eq(u64, eng_block_cache_stats(c)->hits, 1));
        cr_expect(eq(u64, eng_block_cache_stats(c)->misses, 2));
        eng_block_cache_free(c);
}

Test(block_cache, bytes_stay_within_capacity)
{
        struct eng_block_cache *c;

        cr_assert(eq(int, eng_block_cache_new(100 * 4096, &c), 0));
        for (uint64_t i = 0; i < 5000; i++) {
                eng_block_cache_release(c, put(c, 1, i));
                cr_assert(le(u64, eng_block_cache_stats(c)->bytes, 100 * 4096));
        }
        cr_expect(eq(u64, eng_block_cache_stats(c)->blocks, 100));
        cr_expect(eq(u64, eng_block_cache_stats(c)->evictions, 4900));
        cr_expect(cached(c, 1, 4999));
        cr_expect(not(cached(c, 1, 0)));
        eng_block_cache_free(c);
}

Test(block_cache, a_one_off_scan_does_not_flush_blocks_hit_twice)
{
        struct eng_block_cache *c;
        unsigned kept = 0;

        cr_assert(eq(int, eng_block_cache_new(100 * 4096, &c), 0));
        for (uint64_t i = 0; i < 50; i++) {     /* the working set, hit twice */
                eng_block_cache_release(c, put(c, 1, i));
                cr_assert(cached(c, 1, i));
        }
        for (uint64_t i = 0; i < 10000; i++)    /* a scan of another file */
                eng_block_cache_release(c, put(c, 2, i));
        for (uint64_t i = 0; i < 50; i++)
                kept += cached(c, 1, i);
        cr_expect(eq(u32, kept, 50), "%u of 50 hot blocks survived the scan", kept);
        eng_block_cache_free(c);
}

/* A hit moves a protected block to the head of protected, so when
 * protected overflows the blocks demoted, and then evicted by a scan, are
 * the ones not hit since. */
Test(block_cache, protected_blocks_hit_again_outlast_those_that_were_not)
{
        struct eng_block_cache *c;
        unsigned kept = 0, gone = 0;

        cr_assert(eq(int, eng_block_cache_new(100 * 4096, &c), 0));
        for (uint64_t i = 0; i < 80; i++) {     /* protected full: 80% */
                eng_block_cache_release(c, put(c, 1, i));
                cr_assert(cached(c, 1, i));
        }
        for (uint64_t i = 0; i < 40; i++)       /* the oldest half, hit again */
                cr_assert(cached(c, 1, i));
        for (uint64_t i = 0; i < 40; i++) {     /* 40 more promoted: 40 demoted */
                eng_block_cache_release(c, put(c, 3, i));
                cr_assert(cached(c, 3, i));
        }
        for (uint64_t i = 0; i < 1000; i++)     /* a scan empties probation */
                eng_block_cache_release(c, put(c, 2, i));
        for (uint64_t i = 0; i < 40; i++) {
                kept += cached(c, 1, i);
                gone += !cached(c, 1, 40 + i);
        }
        cr_expect(eq(u32, kept, 40), "%u of the 40 blocks hit again kept", kept);
        cr_expect(eq(u32, gone, 40), "%u of the 40 blocks not hit again evicted", gone);
        eng_block_cache_free(c);
}

/* A hit on a protected block among the segment's most recent quarter
 * leaves it in place (moving it costs its neighbours' cache lines): after
 * 71 more promotions block 70, hit among the newest, goes before 71, which
 * exact LRU would have kept it ahead of. */
Test(block_cache, a_hit_among_the_most_recent_quarter_leaves_the_block_in_place)
{
        struct eng_block_cache *c;

        cr_assert(eq(int, eng_block_cache_new(100 * 4096, &c), 0));
        for (uint64_t i = 0; i < 80; i++) {     /* protected full: 80, newest 79 */
                eng_block_cache_release(c, put(c, 1, i));
                cr_assert(cached(c, 1, i));
        }
        cr_assert(cached(c, 1, 70));            /* 9 newer: in the newest quarter (20) */
        for (uint64_t i = 0; i < 71; i++) {     /* 71 promoted: 0..70 demoted */
                eng_block_cache_release(c, put(c, 3, i));
                cr_assert(cached(c, 3, i));
        }
        for (uint64_t i = 0; i < 1000; i++)     /* a scan empties probation */
                eng_block_cache_release(c, put(c, 2, i));
        cr_expect(not(cached(c, 1, 70)));
        for (uint64_t i = 71; i < 80; i++)
                cr_expect(cached(c, 1, i), "block %lu", (unsigned long)i);
        eng_block_cache_free(c);
}

Test(block_cache, pinned_blocks_are_not_evicted_and_a_second_put_returns_the_first)
{
        struct eng_block_cache *c;
        struct eng_cached_block *pinned, *again;
        uint8_t *dup = mem_alloc_aligned(MEM_DIRECT_ALIGN, 4096);

        cr_assert(eq(int, eng_block_cache_new(10 * 4096, &c), 0));
        pinned = put(c, 1, 0);
        for (uint64_t i = 1; i < 100; i++)
                eng_block_cache_release(c, put(c, 1, i));
        cr_expect(eq(u8, pinned->data[100], 0));
        cr_expect(eq(u64, eng_block_cache_stats(c)->pins, 1));
        again = eng_block_cache_put(c, 1, 0, dup, 4096, dup + 16, 4080);   /* dup is freed */
        cr_expect(eq(ptr, again, pinned));
        cr_expect(eq(u64, eng_block_cache_stats(c)->pins, 2));
        cr_expect(eq(ptr, eng_block_cache_pin(c, again), again));
        cr_expect(eq(u64, eng_block_cache_stats(c)->pins, 3));
        eng_block_cache_release(c, again);
        eng_block_cache_release(c, again);
        eng_block_cache_release(c, pinned);
        cr_expect(eq(u64, eng_block_cache_stats(c)->pins, 0));
        cr_expect(le(u64, eng_block_cache_stats(c)->bytes, 10 * 4096));
        eng_block_cache_free(c);
}

Test(block_cache, erasing_a_file_drops_its_blocks_and_frees_pinned_ones_at_release)
{
        struct eng_block_cache *c;
        struct eng_cached_block *pinned;

        cr_assert(eq(int, eng_block_cache_new(1 << 20, &c), 0));
        for (uint64_t i = 0; i < 10; i++) {
                eng_block_cache_release(c, put(c, 1, i));
                eng_block_cache_release(c, put(c, 2, i));
        }
        pinned = eng_block_cache_get(c, 1, 3 * 4096);
        eng_block_cache_erase_file(c, 1);
        cr_expect(eq(u64, eng_block_cache_stats(c)->blocks, 10));
        cr_expect(eq(u64, eng_block_cache_stats(c)->pins, 1), "an erased block's pin counts");
        cr_expect(not(cached(c, 1, 3)));
        cr_expect(cached(c, 2, 3));
        cr_expect(eq(u8, pinned->data[0], 3), "still readable while pinned");
        eng_block_cache_release(c, pinned);     /* freed here (ASan checks) */
        cr_expect(eq(u64, eng_block_cache_stats(c)->pins, 0));
        eng_block_cache_free(c);
}

/* ---- rows ---- */

static struct eng_cached_block *put_row(struct eng_block_cache *c, uint64_t file, uint64_t hash,
                                        const char *bytes)
{
        const struct eng_cache_part part = { bytes, strlen(bytes) };
        struct eng_cached_block *b = eng_block_cache_put_row(c, file, hash, &part, 1);

        cr_assert(not(eq(ptr, b, NULL)));
        return b;
}

Test(block_cache, rows_are_found_by_file_and_hash_and_charged_with_their_header)
{
        struct eng_block_cache *c;
        struct eng_cached_block *b;
        const struct eng_block_cache_stats *st;

        cr_assert(eq(int, eng_block_cache_new(1 << 20, &c), 0));
        st = eng_block_cache_stats(c);
        cr_expect(not(eng_block_cache_rows(c)), "off by default");
        eng_block_cache_release(c, put_row(c, 1, 42, "hello"));
        /* the block at offset 0 and a row whose hash is 0 do not meet */
        eng_block_cache_release(c, put(c, 1, 0));
        eng_block_cache_release(c, put_row(c, 1, 0, "zero"));
        b = eng_block_cache_get_row(c, 1, 42);
        cr_assert(not(eq(ptr, b, NULL)));
        cr_expect(eq(u32, b->content_len, 5));
        cr_expect(eq(int, memcmp(b->content, "hello", 5), 0));
        eng_block_cache_release(c, b);
        /* a second put keeps the first row */
        b = put_row(c, 1, 42, "other");
        cr_expect(eq(int, memcmp(b->content, "hello", 5), 0));
        eng_block_cache_release(c, b);
        cr_expect(eq(ptr, eng_block_cache_get_row(c, 2, 42), NULL));
        cr_expect(eq(ptr, eng_block_cache_get_row(c, 1, 43), NULL));
        b = eng_block_cache_get_row(c, 1, 0);
        cr_assert(not(eq(ptr, b, NULL)));
        cr_expect(eq(int, memcmp(b->content, "zero", 4), 0));
        eng_block_cache_release(c, b);
        cr_expect(cached(c, 1, 0));
        cr_expect(eq(u64, st->rows, 2));
        cr_expect(eq(u64, st->row_inserts, 2));
        cr_expect(eq(u64, st->row_hits, 2));
        cr_expect(eq(u64, st->row_misses, 2));
        cr_expect(eq(u64, st->blocks, 1));
        cr_expect(eq(u64, st->hits, 1), "rows leave the block counters alone");
        cr_expect(eq(u64, st->bytes, 4096 + 2 * sizeof(struct eng_cached_block) + 9));
        eng_block_cache_free(c);
}

Test(block_cache, rows_and_blocks_share_the_capacity_and_a_file_erase_takes_only_its_own)
{
        enum { ROWS = 3000 };
        struct eng_block_cache *c;
        struct eng_cached_block *pinned;
        const struct eng_block_cache_stats *st;
        char v[100];

        cr_assert(eq(int, eng_block_cache_new(256 << 10, &c), 0));
        st = eng_block_cache_stats(c);
        memset(v, 'v', sizeof(v) - 1);
        v[sizeof(v) - 1] = 0;
        for (uint64_t i = 0; i < ROWS; i++) {
                eng_block_cache_release(c, put_row(c, 1 + i % 3, i, v));
                if (i % 100 == 0)
                        eng_block_cache_release(c, put(c, 1 + i % 3, i));
                cr_assert(le(u64, st->bytes, 256 << 10));
        }
        cr_expect(lt(u64, st->rows, ROWS), "rows were evicted");
        cr_expect(gt(u64, st->evictions, 0));
        pinned = eng_block_cache_get_row(c, 2, ROWS - 2);      /* i % 3 == 1: file 2 */
        cr_assert(not(eq(ptr, pinned, NULL)));
        eng_block_cache_erase_file(c, 2);
        for (uint64_t i = ROWS - 300; i < ROWS; i++) {
                struct eng_cached_block *b = eng_block_cache_get_row(c, 1 + i % 3, i);

                if (i % 3 == 1)
                        cr_expect(eq(ptr, b, NULL), "row %lu of the erased file", (unsigned long)i);
                else
                        cr_expect(not(eq(ptr, b, NULL)), "row %lu of a kept file", (unsigned long)i);
                eng_block_cache_release(c, b);
        }
        cr_expect(eq(int, memcmp(pinned->content, v, 99), 0), "a pinned row outlives the erase");
        eng_block_cache_release(c, pinned);
        cr_expect(eq(u64, st->pins, 0));
        eng_block_cache_erase_file(c, 1);
        eng_block_cache_erase_file(c, 3);
        eng_block_cache_erase_file(c, 9);       /* never cached: nothing happens */
        cr_expect(eq(u64, st->rows, 0));
        cr_expect(eq(u64, st->blocks, 0));
        cr_expect(eq(u64, st->bytes, 0));
        eng_block_cache_free(c);
}

Test(block_cache, an_adopted_block_is_never_found_and_goes_at_its_last_release)
{
        struct eng_block_cache *c;
        struct eng_cached_block *b;
        uint8_t *buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, 4096);

        cr_assert(eq(int, eng_block_cache_new(1 << 20, &c), 0));
        memset(buf, 7, 4096);
        b = eng_block_cache_adopt(c, buf, 4096, buf + 16, 4080);
        cr_assert(not(eq(ptr, b, NULL)));
        cr_expect(eq(u8, b->content[0], 7));
        eng_block_cache_pin(c, b);
        cr_expect(eq(u64, eng_block_cache_stats(c)->pins, 2));
        cr_expect(eq(u64, eng_block_cache_stats(c)->bytes, 0));
        cr_expect(eq(u64, eng_block_cache_stats(c)->blocks, 0));
        eng_block_cache_release(c, b);
        eng_block_cache_release(c, b);  /* freed here: ASan checks */
        cr_expect(eq(u64, eng_block_cache_stats(c)->pins, 0));
        eng_block_cache_free(c);
}

Test(block_cache, a_bound_slot_finds_its_block_until_the_block_leaves)
{
        struct eng_block_cache *c;
        struct eng_cached_block *slots[3] = { 0 }, *other = NULL, *b;

        cr_assert(eq(int, eng_block_cache_new(2 * 4096, &c), 0));
        b = put(c, 1, 0);
        cr_assert(eng_block_cache_bind(c, b, &slots[0]));
        cr_expect(not(eng_block_cache_bind(c, b, &other)), "one slot per block");
        cr_expect(eq(ptr, other, NULL));
        eng_block_cache_release(c, b);
        b = eng_block_cache_get_bound(c, &slots[0]);
        cr_expect(eq(u8, b->data[0], 0));
        cr_expect(eq(u64, eng_block_cache_stats(c)->hits, 1));
        cr_expect(eq(u64, eng_block_cache_stats(c)->bound_hits, 1));
        eng_block_cache_release(c, b);

        /* Evicted (block 1, on probation, goes before block 0, hit
         * again): the slot is cleared. */
        for (uint64_t i = 1; i <= 2; i++) {
                b = put(c, 1, i);
                cr_assert(eng_block_cache_bind(c, b, &slots[i]));
                eng_block_cache_release(c, b);
        }
        cr_expect(eq(ptr, slots[1], NULL));
        cr_expect(not(eq(ptr, slots[0], NULL)));
        cr_expect(not(eq(ptr, slots[2], NULL)));

        /* Unbound: the block stays cached, the slot no longer follows it,
         * and another slot may take it. */
        eng_block_cache_unbind(c, &slots[0]);
        cr_expect(eq(ptr, slots[0], NULL));
        b = eng_block_cache_get(c, 1, 0);
        cr_assert(not(eq(ptr, b, NULL)));
        cr_expect(eng_block_cache_bind(c, b, &other));
        eng_block_cache_release(c, b);

        /* Erased while pinned: cleared at once, and it binds no more. */
        b = eng_block_cache_get_bound(c, &slots[2]);
        eng_block_cache_erase_file(c, 1);
        cr_expect(eq(ptr, slots[2], NULL));
        cr_expect(eq(ptr, other, NULL));
        cr_expect(not(eng_block_cache_bind(c, b, &slots[2])));
        eng_block_cache_release(c, b);

        /* Freed: the cache clears what is still bound. */
        b = put(c, 2, 0);
        cr_assert(eng_block_cache_bind(c, b, &slots[0]));
        eng_block_cache_release(c, b);
        eng_block_cache_free(c);
        cr_expect(eq(ptr, slots[0], NULL));
}
