/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading ahead in SSTable scans (engine/sst_iter.h), on the table of
 * tests/engine/sst_iter_fixture.h: readers of one cold block share its
 * read; entering a block reads the next one so crossing does not wait; a
 * seek that misses reads the next block with its own, one with a span the
 * blocks it covers; a block entered with the span used up reads none
 * ahead, and cached blocks are skipped.
 */
#include "tests/engine/sst_iter_fixture.h"

TestSuite(sst_iter_ahead, .init = setup, .fini = teardown, .timeout = 60);

Test(sst_iter_ahead, readers_of_one_cold_block_share_its_read)
{
        struct engine_test_move w1 = { 0 }, w2 = { 0 };
        struct eng_sst_iter *a, *b;
        struct get_wait g = { .g = { .done = on_get } };
        char k[16];
        int kl = key_fmt(2, k);

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &a), 0));
        cr_assert(eq(int, eng_sst_iter_new(table, &b), 0));
        cr_assert(eq(int, eng_sst_iter_seek_first(a, on_move, &w1), ENG_SST_PENDING));
        cr_assert(eq(int, eng_sst_iter_seek(b, k, (size_t)kl, UINT64_MAX, on_move, &w2),
                     ENG_SST_PENDING));
        cr_assert(eq(int, eng_sst_table_get(table, k, (size_t)kl, &g.g), ENG_SST_PENDING));
        cr_assert(eq(int, rx_loop_run_until(loop, &g.done), 0));
        cr_expect(eq(int, w1.res, 1));
        cr_expect(eq(int, w2.res, 1));
        cr_expect(eq(int, g.res, 0));
        expect_at(a, 0);
        expect_at(b, 0);
        expect_entry(&g.g.entry, 0);
        eng_block_cache_release(cache, g.g.block);
        /* The seek read block 1 ahead too; when that landed was a race
         * (this once expected 1 and failed under ASan in CI): wait for it. */
        cr_assert(ge(int, read_block_wait(1), 0));
        cr_expect(eq(u64, eng_block_cache_stats(cache)->inserts, 2),
                  "one read of block 0, one of block 1 ahead");
        eng_sst_iter_free(a);
        eng_sst_iter_free(b);
        cold_cache();
}

Test(sst_iter_ahead, entering_a_block_reads_the_next_one_ahead_so_crossing_does_not_wait)
{
        struct eng_sst_iter *it;
        uint64_t misses;
        size_t vi = 0;

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        misses = eng_block_cache_stats(cache)->misses;
        engine_test_moves_waited = 0;
        cr_assert(eq(int, seek_first(it), 1));
        cr_expect(eq(u32, engine_test_moves_waited, 1));
        cr_expect(eq(u64, eng_block_cache_stats(cache)->misses - misses, 2),
                  "block 0, and block 1 ahead");
        cr_assert(ge(int, read_block_wait(1), 0));      /* the readahead has landed */
        cr_expect(eq(u64, eng_block_cache_stats(cache)->inserts, 2));
        /* Through block 0 into block 1 without waiting; block 1's entry
         * starts the read of block 2. */
        engine_test_moves_waited = 0;
        misses = eng_block_cache_stats(cache)->misses;
        cr_assert(eq(int, seek(it, "key000002", 9, UINT64_MAX), 1));
        while (eng_block_cache_stats(cache)->misses == misses) {
                cr_assert(lt(sz, vi, 1000), "never left block 0");
                expect_at(it, vi++);
                cr_assert(eq(int, next(it), 1));
        }
        cr_expect(eq(u32, engine_test_moves_waited, 0));
        cr_expect(eq(u64, eng_block_cache_stats(cache)->misses - misses, 1), "block 2 ahead");
        cr_assert(ge(int, read_block_wait(2), 0));
        eng_sst_iter_free(it);
        cold_cache();
}

/* Seeks a new iterator with span `span` to the first key in `block` with
 * the cache cold, expecting `at_once` block reads to start with the seek;
 * returns it positioned, the version it stands on and the misses before. */
static struct eng_sst_iter *seek_cold_into(uint32_t block, uint32_t span, uint64_t at_once,
                                           size_t *ret_vi, uint64_t *ret_misses)
{
        struct engine_test_move w = { 0 };
        uint32_t at = key_in_block(block);
        struct eng_sst_iter *it;
        char k[16];
        int kl = key_fmt(2 * at + 2, k);

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        eng_sst_iter_set_span(it, span);
        *ret_misses = eng_block_cache_stats(cache)->misses;
        cr_assert(eq(int, eng_sst_iter_seek(it, k, (size_t)kl, UINT64_MAX, on_move, &w),
                     ENG_SST_PENDING));
        cr_expect(eq(u64, eng_block_cache_stats(cache)->misses - *ret_misses, at_once),
                  "reads started with the seek into block %u", block);
        cr_assert(eq(int, engine_test_move_finish(loop, ENG_SST_PENDING, &w), 1));
        *ret_vi = first_ver[at];
        expect_at(it, *ret_vi);
        return it;
}

/* Scans on from version vi until the cache has seen `misses` misses in
 * all, checking that no move waited; returns the version it stands on. */
static size_t cross_without_waiting(struct eng_sst_iter *it, size_t vi, uint64_t misses)
{
        engine_test_moves_waited = 0;
        for (; eng_block_cache_stats(cache)->misses < misses; vi++) {
                cr_assert(lt(sz, vi, n_vers));
                expect_at(it, vi);
                cr_assert(eq(int, next(it), 1));
        }
        cr_expect(eq(u32, engine_test_moves_waited, 0),
                  "the blocks read ahead were there when the scan crossed");
        return vi;
}

/* A seek that must read its block reads the next one in the same breath,
 * so a short scan across the two waits once; a seek below the table's
 * smallest key (the table is likely merged in for an entry or none) does
 * not, and entering its block reads ahead as before. */
Test(sst_iter_ahead, a_seek_that_misses_reads_the_next_block_with_its_own)
{
        struct engine_test_move w = { 0 };
        struct eng_sst_iter *it;
        uint64_t misses;
        size_t vi;

        it = seek_cold_into(50, 0, 2, &vi, &misses);
        cr_assert(ge(int, read_block_wait(51), 0));
        cross_without_waiting(it, vi, misses + 3);
        eng_sst_iter_free(it);

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        misses = eng_block_cache_stats(cache)->misses;
        cr_assert(eq(int, eng_sst_iter_seek(it, "a", 1, UINT64_MAX, on_move, &w), ENG_SST_PENDING));
        cr_expect(eq(u64, eng_block_cache_stats(cache)->misses - misses, 1), "block 0 alone");
        cr_assert(eq(int, engine_test_move_finish(loop, ENG_SST_PENDING, &w), 1));
        expect_at(it, 0);
        cr_expect(eq(u64, eng_block_cache_stats(cache)->misses - misses, 2), "block 1 ahead");
        cr_assert(ge(int, read_block_wait(1), 0));
        eng_sst_iter_free(it);
        cold_cache();
}

/* With a span, a seek that misses reads as many blocks after its own as
 * the span fills (here three, the most), and the scan crosses all of them
 * without waiting: entering a block keeps the reads of those after it. */
Test(sst_iter_ahead, a_seek_with_a_span_reads_the_blocks_it_covers_at_once)
{
        const struct eng_sst_reader *rd = eng_sst_table_reader(table);
        uint32_t per_block = (uint32_t)(eng_sst_reader_props(rd)->n_entries /
                                        eng_sst_reader_n_blocks(rd));
        struct eng_sst_iter *it;
        uint64_t misses;
        size_t vi;

        it = seek_cold_into(40, 5 * per_block, 4, &vi, &misses);
        for (uint32_t b = 41; b <= 43; b++)
                cr_assert(ge(int, read_block_wait(b), 0));
        vi = cross_without_waiting(it, vi, misses + 5);
        expect_at(it, vi);
        cr_expect(ge(int, read_block_wait(44), 0), "entering block 43 reads block 44 ahead");
        eng_sst_iter_free(it);
        cold_cache();
}

/* Once a step enters a block with no more than a block's worth of the
 * span left, the block reads none ahead: the scan likely ends in it.
 * Going on past the span still works, reading each block when the scan
 * gets there. */
Test(sst_iter_ahead, a_block_entered_with_the_span_used_up_reads_none_ahead)
{
        size_t vi = first_ver[key_in_block(40)], in42 = first_ver[key_in_block(42)];
        size_t at43 = first_ver[key_in_block(43)];
        struct eng_sst_iter *it;
        uint64_t misses;
        char k[16];
        int kl = key_fmt(2 * vers[vi].key + 2, k);

        /* Blocks 40-42 cached, 43 not; the span ends in block 42. */
        cold_cache();
        for (uint32_t b = 40; b <= 42; b++)
                cr_assert(ge(int, read_block_wait(b), 0));
        misses = eng_block_cache_stats(cache)->misses;
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        eng_sst_iter_set_span(it, (uint32_t)(in42 - vi + 1));
        cr_assert(eq(int, seek(it, k, (size_t)kl, UINT64_MAX), 1));
        engine_test_moves_waited = 0;
        for (; vi < in42; vi++) {
                expect_at(it, vi);
                cr_assert(eq(int, next(it), 1));
        }
        expect_at(it, vi);
        cr_expect(eq(u32, engine_test_moves_waited, 0));
        cr_expect(eq(u64, eng_block_cache_stats(cache)->misses, misses),
                  "inside block 42 and block 43 not read ahead");
        /* On into block 43: read when the scan gets there. */
        for (; vi < at43; vi++) {
                expect_at(it, vi);
                cr_assert(eq(int, next(it), 1));
        }
        expect_at(it, vi);
        cr_expect(gt(u64, eng_block_cache_stats(cache)->misses, misses));
        cr_expect(ge(u32, engine_test_moves_waited, 1), "the move into block 43 waited for it");
        eng_sst_iter_free(it);
        cold_cache();
}

/* A seek among cached blocks takes its own block and pins none ahead:
 * only reads are started ahead. Past a cached block, the first one not
 * cached is read ahead still. */
Test(sst_iter_ahead, a_seek_among_cached_blocks_pins_none_ahead_but_reads_the_first_uncached)
{
        size_t vi = first_ver[key_in_block(50)], at52 = first_ver[key_in_block(52)];
        const struct eng_block_cache_stats *st = eng_block_cache_stats(cache);
        struct eng_sst_iter *it;
        uint64_t hits, misses;
        char k[16];
        int kl = key_fmt(2 * vers[vi].key + 2, k);

        cold_cache();
        for (uint32_t b = 50; b <= 51; b++)
                cr_assert(ge(int, read_block_wait(b), 0));
        hits = st->hits;
        misses = st->misses;
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        eng_sst_iter_set_span(it, 1000);
        cr_assert(eq(int, seek(it, k, (size_t)kl, UINT64_MAX), 1));
        expect_at(it, vi);
        cr_expect(eq(u64, st->hits, hits + 1), "block 50 only, not 51 ahead");
        cr_expect(eq(u32, block_pins(51), 0));
        cr_expect(eq(u64, st->misses, misses), "nothing read yet");
        /* Into block 51, to its last entry: block 52, not cached, is
         * being read ahead of the scan. */
        for (; vi + 1 < at52; vi++) {
                expect_at(it, vi);
                cr_assert(eq(int, next(it), 1));
        }
        expect_at(it, vi);
        cr_expect(eq(u64, st->misses, misses + 1), "block 52 read ahead");
        cr_assert(eq(int, next(it), 1));
        expect_at(it, at52);
        eng_sst_iter_free(it);
        cold_cache();
}
