/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading entries out of an open SSTable (engine/sst_io.h point lookups,
 * engine/sst_iter.h scans) on real files through the reactor, on the table
 * of tests/engine/sst_iter_fixture.h. Lookups of every key, cold then warm
 * (warm is synchronous), and misses (bloom negatives synchronous); rows
 * kept instead of blocks; scans from the start and seeks to every kind of
 * position, compared with the list the table was written from; freeing
 * mid-scan and with reads pending; a corrupt block and injected read
 * errors (and retries) through both paths. Reading ahead:
 * test_sst_iter_ahead.c.
 */
#include "tests/engine/sst_iter_fixture.h"

TestSuite(sst_iter, .init = setup, .fini = teardown, .timeout = 60);

/* ---- point lookups ---- */

/* Looks every key up once, checking what each finds; returns how many
 * waited for a read. */
static unsigned get_every_key(void)
{
        unsigned waited = 0;

        for (uint32_t i = 0; i < N_KEYS; i++) {
                char k[16];
                int kl = key_fmt(2 * i + 2, k);
                struct get_wait w;
                bool was_pending;

                cr_assert(eq(int, get_key(k, (size_t)kl, &w, &was_pending), 0), "%s", k);
                expect_entry(&w.g.entry, first_ver[i]);
                cr_expect(eq(ptr, (void *)w.g.entry.key, (void *)k));
                cr_assert(not(eq(ptr, w.g.block, NULL)));
                eng_block_cache_release(cache, w.g.block);
                waited += was_pending;
        }
        return waited;
}

Test(sst_iter, get_finds_the_newest_version_of_every_key_cold_then_warm_synchronously)
{
        uint64_t misses;

        cr_expect(gt(u32, get_every_key(), 80), "cold lookups read blocks");
        misses = eng_block_cache_stats(cache)->misses;
        cr_expect(eq(u32, get_every_key(), 0), "a warm lookup waited");
        cr_expect(eq(u64, eng_block_cache_stats(cache)->misses, misses));
        cr_expect(eq(u64, eng_sst_table_stats(table)->gets, 2 * N_KEYS));
        cr_expect(eq(u64, eng_sst_table_stats(table)->found, 2 * N_KEYS));
        cr_expect(eq(u64, eng_sst_table_stats(table)->bloom_negatives, 0));
        cr_expect(eq(u64, eng_sst_table_stats(table)->bloom_false_positives, 0));
}

Test(sst_iter, misses_are_not_found_and_bloom_negatives_are_synchronous)
{
        const struct eng_sst_read_stats *st = eng_sst_table_stats(table);
        const char *odd[] = { "", "a", "key", "key0000021", "z", "key999999" };
        unsigned n = 0, fp_waited = 0;

        for (int pass = 0; pass < 2; pass++) {
                for (uint32_t num = 1; num <= 2 * N_KEYS + 3; num += 2) {
                        char k[16];
                        int kl = key_fmt(num, k);
                        uint64_t negatives = st->bloom_negatives;
                        struct get_wait w;
                        bool was_pending;

                        cr_assert(eq(int, get_key(k, (size_t)kl, &w, &was_pending),
                                     -SCREE_ENOTFOUND), "%s", k);
                        cr_assert(eq(ptr, w.g.block, NULL));
                        if (st->bloom_negatives > negatives)
                                cr_assert(not(was_pending), "a bloom negative waited");
                        fp_waited += was_pending;
                        n++;
                }
        }
        for (size_t i = 0; i < ARRAY_SIZE(odd); i++) {
                struct get_wait w;
                bool was_pending;

                cr_expect(eq(int, get_key(odd[i], strlen(odd[i]), &w, &was_pending),
                             -SCREE_ENOTFOUND), "%s", odd[i]);
                n++;
        }
        cr_expect(eq(u64, st->gets, n));
        cr_expect(eq(u64, st->found, 0));
        cr_expect(eq(u64, st->bloom_negatives + st->bloom_false_positives, n));
        cr_expect(gt(u64, st->bloom_negatives, n * 9 / 10), "~1%% false positives");
        cr_expect(le(u32, fp_waited, st->bloom_false_positives));
}

/* ---- rows (block_cache.h) ---- */

Test(sst_iter, lookups_keep_rows_not_blocks_and_rows_answer_the_next_ones)
{
        const struct eng_block_cache_stats *st = eng_block_cache_stats(cache);

        eng_block_cache_set_rows(cache, true);
        cold_cache();
        cr_expect(gt(u32, get_every_key(), 80), "cold lookups read blocks");
        cr_expect(eq(u64, st->blocks, 0), "no block kept for a lookup");
        cr_expect(eq(u64, st->rows, N_KEYS));
        cr_expect(eq(u32, get_every_key(), 0), "every second lookup from its row");
        cr_expect(eq(u64, st->row_hits, N_KEYS));
        cr_expect(eq(u64, eng_sst_table_stats(table)->row_hits, N_KEYS));
        cr_expect(eq(u64, eng_sst_table_stats(table)->found, 2 * N_KEYS));
        cold_cache();
        cr_expect(eq(u64, st->rows, 0), "the file's rows went with it");
        cr_expect(eq(u64, st->bytes, 0));
}

Test(sst_iter, a_row_of_another_key_under_the_same_hash_is_not_taken_for_the_key)
{
        char k[16], other[16];
        int kl = key_fmt(2 * 7 + 2, k), ol = key_fmt(2 * 8 + 2, other);
        uint8_t klen[4] = { (uint8_t)ol };
        const struct eng_cache_part row[] = { { klen, sizeof(klen) }, { other, (size_t)ol } };
        struct get_wait w;
        bool was_pending;

        /* other's row (a length, the key, no valid value) filed under k's hash */
        eng_block_cache_set_rows(cache, true);
        eng_block_cache_release(cache, eng_block_cache_put_row(cache, 1, eng_bloom_hash(k, (size_t)kl),
                                                               row, ARRAY_SIZE(row)));
        cr_assert(eq(int, get_key(k, (size_t)kl, &w, &was_pending), 0));
        expect_entry(&w.g.entry, first_ver[7]);
        cr_expect(was_pending, "read from its block");
        eng_block_cache_release(cache, w.g.block);
        cr_expect(eq(u64, eng_sst_table_stats(table)->row_hits, 0));
}

Test(sst_iter, with_rows_off_lookups_keep_blocks)
{
        const struct eng_block_cache_stats *st = eng_block_cache_stats(cache);

        cold_cache();                   /* rows are off by default */
        cr_expect(gt(u32, get_every_key(), 80));
        cr_expect(eq(u64, st->rows, 0));
        cr_expect(gt(u64, st->blocks, 80));
        cr_expect(eq(u32, get_every_key(), 0), "from the cached blocks");
        cr_expect(eq(u64, st->row_hits + st->row_misses, 0), "rows never looked at");
}

/* ---- scans ---- */

Test(sst_iter, a_scan_from_the_start_yields_every_version_in_order_then_warm_without_waiting)
{
        struct eng_sst_iter *it;

        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        cr_assert(not(eng_sst_iter_is_valid(it)));
        cold_cache();
        engine_test_moves_waited = 0;
        cr_assert(eq(int, seek_first(it), 1));
        expect_rest(it, 0);
        cr_expect(gt(u32, engine_test_moves_waited, 0));
        engine_test_moves_waited = 0;
        cr_assert(eq(int, seek_first(it), 1));
        expect_rest(it, 0);
        cr_expect(eq(u32, engine_test_moves_waited, 0), "a warm scan never waits");
        eng_sst_iter_free(it);
}

/* Seeks to (num, seq) and checks the landing place and a few entries after. */
static void check_seek(struct eng_sst_iter *it, uint32_t num, uint64_t seq)
{
        char k[16];
        int kl = key_fmt(num, k);
        size_t want = lower_bound(num, seq);
        int r = seek(it, k, (size_t)kl, seq);

        if (want == n_vers) {
                cr_assert(eq(int, r, 0), "seek %s/%lu", k, (unsigned long)seq);
                cr_assert(not(eng_sst_iter_is_valid(it)));
                return;
        }
        cr_assert(eq(int, r, 1), "seek %s/%lu", k, (unsigned long)seq);
        for (size_t vi = want; vi < want + 3 && vi < n_vers; vi++) {
                if (vi > want)
                        cr_assert(eq(int, next(it), 1));
                expect_at(it, vi);
        }
}

static void check_seeks(struct eng_sst_iter *it)
{
        /* Before the first key, every key, between keys, after the last. */
        for (uint32_t num = 0; num <= 2 * N_KEYS + 3; num++)
                check_seek(it, num, UINT64_MAX);
        /* Into the middle of a key's versions, at and between seqs, and
         * below its oldest (the next key). */
        for (uint32_t i = 0; i < N_KEYS; i += 37)
                for (uint64_t seq = 0; seq <= 45; seq += 5)
                        check_seek(it, 2 * i + 2, seq);
        for (uint64_t seq = 0; seq <= MANY_VERSIONS * 10 + 10; seq += 7)
                check_seek(it, 2 * MANY_KEY + 2, seq);
}

Test(sst_iter, seeks_land_on_the_first_version_at_or_after_the_target)
{
        const struct eng_sst_reader *rd = eng_sst_table_reader(table);
        const char *before[] = { "", "a", "key" }, *after[] = { "key999999", "l", "z" };
        struct eng_sst_iter *it;
        char k[16];
        uint32_t b0, b1;

        /* The many-versions key runs over several blocks. */
        cr_assert(eq(int, eng_sst_reader_find_block(rd, k, (size_t)key_fmt(2 * MANY_KEY + 2, k),
                                                    &b0), 0));
        cr_assert(eq(int, eng_sst_reader_find_block(rd, k, (size_t)key_fmt(2 * MANY_KEY + 4, k),
                                                    &b1), 0));
        cr_assert(ge(u32, b1 - b0, 2));

        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        for (int pass = 0; pass < 2; pass++) {
                if (pass == 0)
                        cold_cache();
                for (size_t i = 0; i < ARRAY_SIZE(before); i++) {
                        cr_assert(eq(int, seek(it, before[i], strlen(before[i]), 0), 1));
                        expect_at(it, 0);
                        cr_assert(eq(int, seek(it, after[i], strlen(after[i]), UINT64_MAX), 0));
                }
                check_seeks(it);
        }
        eng_sst_iter_free(it);
}

/* ---- lifetime ---- */

Test(sst_iter, freeing_mid_scan_releases_every_pin_and_the_table_reference)
{
        struct eng_sst_iter *it, *it2;

        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        cr_assert(eq(int, eng_sst_iter_new(table, &it2), 0));
        eng_sst_table_unref(table);     /* the owner drops the table: the iterators keep it */
        table = NULL;
        cr_assert(eq(int, seek_first(it), 1));
        for (size_t vi = 0; vi < n_vers / 2; vi++)
                cr_assert(eq(int, next(it), 1));
        expect_at(it, n_vers / 2);
        cr_assert(eq(int, seek(it2, "key004000", 9, UINT64_MAX), 1));
        expect_at(it2, lower_bound(4000, UINT64_MAX));
        /* Each holds its block and perhaps the one read ahead. */
        cr_expect(ge(u64, pins(), 2));
        cr_expect(le(u64, pins(), 4));
        eng_sst_iter_free(it);
        cr_expect(le(u64, pins(), 2), "freeing releases at once");
        expect_at(it2, lower_bound(4000, UINT64_MAX));
        cr_assert(eq(int, next(it2), 1));
        eng_sst_iter_free(it2);         /* the last reference: the table goes too (ASan) */
        cr_expect(eq(u64, pins(), 0));
        eng_sst_iter_free(NULL);
}

Test(sst_iter, freeing_with_a_read_pending_waits_for_the_read_and_never_calls_back)
{
        struct engine_test_move w = { 0 };
        struct eng_sst_iter *it;

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        cr_assert(eq(int, eng_sst_iter_seek_first(it, on_move, &w), ENG_SST_PENDING));
        eng_sst_iter_free(it);
        /* The iterator's read of block 0 completes first: it must release
         * the block and free itself, and not call back. */
        cr_assert(eq(int, read_block_wait(0), 0));
        cr_expect(eq(int, w.calls, 0));
        cr_expect(eq(u32, block_pins(0), 0));
        cold_cache();
}

Test(sst_iter, freeing_with_the_readahead_pending_and_the_table_dropped)
{
        struct eng_sst_iter *it;

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        cr_assert(eq(int, seek_first(it), 1));  /* entering block 0 started reading block 1 */
        eng_sst_table_ref(table);               /* ours, for the read below */
        eng_sst_table_unref(table);             /* the owner's */
        eng_sst_iter_free(it);
        cr_expect(eq(u64, pins(), 0));
        cr_assert(ge(int, read_block_wait(1), 0));
        cr_expect(eq(u32, block_pins(1), 0));
        cold_cache();
}

Test(sst_iter, a_read_no_longer_wanted_is_released_when_it_completes)
{
        uint32_t far = key_in_block(50);
        struct eng_sst_iter *it;
        char k[16];

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        cr_assert(eq(int, seek_first(it), 1));  /* block 1 is read ahead */
        engine_test_moves_waited = 0;
        cr_assert(eq(int, seek(it, k, (size_t)key_fmt(2 * far + 2, k), UINT64_MAX), 1));
        cr_expect(eq(u32, engine_test_moves_waited, 1));
        expect_at(it, first_ver[far]);
        cr_assert(ge(int, read_block_wait(1), 0));
        cr_expect(eq(u32, block_pins(1), 0), "the readahead of block 1 was let go");
        cr_expect(le(u64, pins(), 2));
        eng_sst_iter_free(it);
        cold_cache();
}

static void free_in_callback(struct eng_sst_iter *it, int res, void *arg)
{
        struct engine_test_move *w = arg;

        w->done = true;
        w->res = res;
        w->calls++;
        expect_at(it, 0);
        eng_sst_iter_free(it);
}

Test(sst_iter, the_callback_may_free_the_iterator)
{
        struct engine_test_move w = { 0 };
        struct eng_sst_iter *it;

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        cr_assert(eq(int, eng_sst_iter_seek_first(it, free_in_callback, &w), ENG_SST_PENDING));
        cr_assert(eq(int, rx_loop_run_until(loop, &w.done), 0));
        cr_assert(eq(int, w.res, 1));
        /* The readahead of block 1 started before the callback freed it. */
        cr_assert(ge(int, read_block_wait(1), 0));
        cr_expect(eq(u64, pins(), 0));

        /* Now with block 1 cached: no read is left pending when the
         * callback frees the iterator. */
        eng_block_cache_erase_file(cache, 1);
        cr_assert(eq(int, read_block_wait(1), 0));
        w = (struct engine_test_move){ 0 };
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        cr_assert(eq(int, eng_sst_iter_seek_first(it, free_in_callback, &w), ENG_SST_PENDING));
        cr_assert(eq(int, rx_loop_run_until(loop, &w.done), 0));
        cr_assert(eq(int, w.res, 1));
        cr_expect(eq(u64, pins(), 0));
        cold_cache();
}

/* ---- failures ---- */

Test(sst_iter, a_corrupt_block_is_ecorrupt_for_lookups_and_scans)
{
        const uint32_t bad = 7;
        struct eng_sst_handle h = eng_sst_reader_block(eng_sst_table_reader(table), bad);
        uint32_t i = key_in_block(bad);
        struct eng_sst_iter *it;
        struct get_wait w;
        bool was_pending;
        char k[16];
        int kl = key_fmt(2 * i + 2, k), r;
        size_t vi;

        cold_cache();
        engine_test_flip_byte(path, h.offset + 300);
        for (int attempt = 0; attempt < 2; attempt++)    /* a bad block is never cached */
                cr_expect(eq(int, get_key(k, (size_t)kl, &w, &was_pending), -SCREE_ECORRUPT));
        cr_expect(eq(ptr, w.g.block, NULL));
        cr_expect(eq(u64, eng_sst_table_stats(table)->found, 0));
        cr_expect(eq(u64, eng_sst_table_stats(table)->bloom_false_positives, 0));

        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        cr_expect(eq(int, seek(it, k, (size_t)kl, UINT64_MAX), -SCREE_ECORRUPT));
        cr_expect(not(eng_sst_iter_is_valid(it)));
        /* A scan stops at the bad block with the error. */
        cr_assert(eq(int, seek_first(it), 1));
        for (vi = 0, r = 1; r == 1 && vi < n_vers; vi++) {
                expect_at(it, vi);
                r = next(it);
        }
        cr_expect(eq(int, r, -SCREE_ECORRUPT));
        cr_expect(gt(sz, vi, first_ver[key_in_block(bad - 1)]), "block %u read", bad - 1);
        cr_expect(le(sz, vi, first_ver[i]), "stopped at block %u", bad);
        cr_expect(not(eng_sst_iter_is_valid(it)));
        /* Other blocks still read. */
        check_seek(it, 2 * key_in_block(bad + 1) + 2, UINT64_MAX);
        eng_sst_iter_free(it);
        cold_cache();
}

struct damage_log {
        unsigned calls, firsts;
        struct eng_sst_damage last;
};

static void on_table_damage(void *arg, struct eng_sst_table *t, const struct eng_sst_damage *d,
                            bool first)
{
        struct damage_log *l = arg;

        (void)t;
        l->calls++;
        l->firsts += first;
        l->last = *d;
}

static void on_iter_damage(void *arg, const struct eng_sst_damage *d)
{
        on_table_damage(arg, NULL, d, false);
}

/* Issue 23: the damage is named and reported once; a skipping scan reads
 * every other block. */
Test(sst_iter, issue23_a_damaged_block_is_named_reported_once_and_a_skipping_scan_passes_it)
{
        const uint32_t bad = 7;
        struct eng_sst_handle h = eng_sst_reader_block(eng_sst_table_reader(table), bad);
        uint32_t i = key_in_block(bad), n_bad;
        struct damage_log tl = { 0 }, il = { 0 };
        struct eng_sst_iter *it;
        struct eng_entry e;
        uint8_t prev[64];
        size_t prev_len = 0;
        uint64_t prev_seq = 0;
        struct get_wait w;
        bool was_pending;
        char k[16];
        int kl = key_fmt(2 * i + 2, k), r;
        size_t n = 0;

        size_t before_next = 0;         /* versions in blocks 0..bad */

        for (uint32_t b = 0; b <= bad; b++) {
                struct eng_cached_block *cb;
                struct eng_block_iter bi = { 0 };

                cr_assert(eq(int, read_block_wait(b), 0));
                cb = eng_block_cache_get(cache, 1, eng_sst_reader_block(
                                                           eng_sst_table_reader(table), b).offset);
                cr_assert(not(eq(ptr, cb, NULL)));
                cr_assert(eq(int, eng_block_iter_init(&bi, cb->content, cb->content_len), 0));
                for (eng_block_iter_seek_first(&bi), n_bad = 0; bi.valid; eng_block_iter_next(&bi))
                        n_bad++;
                eng_block_iter_fini(&bi);
                eng_block_cache_release(cache, cb);
                before_next += n_bad;   /* the last round leaves n_bad = block bad's */
        }
        eng_sst_table_on_damage(table, on_table_damage, &tl);
        cold_cache();
        engine_test_flip_byte(path, h.offset + 300);
        for (int attempt = 0; attempt < 2; attempt++) {
                cr_expect(eq(int, get_key(k, (size_t)kl, &w, &was_pending), -SCREE_ECORRUPT));
                cr_expect(eq(u64, w.g.damage.file_id, 1));
                cr_expect(eq(u64, w.g.damage.offset, h.offset));
                cr_expect(eq(u32, w.g.damage.size, h.size));
                cr_expect(eq(u32, w.g.damage.block, bad));
        }
        cr_expect(eq(u32, tl.calls, 2));
        cr_expect(eq(u32, tl.firsts, 1), "reported as new once");
        cr_expect(eng_sst_table_is_damaged(table));
        kl = key_fmt(2 * key_in_block(bad + 1) + 2, k);
        cr_expect(eq(int, get_key(k, (size_t)kl, &w, &was_pending), 0), "another block reads");
        eng_block_cache_release(cache, w.g.block);
        cr_expect(eq(u64, pins(), 0), "after gets");

        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        eng_sst_iter_on_damage(it, true, on_iter_damage, &il);
        for (r = seek_first(it); r == 1; r = next(it), n++) {
                eng_sst_iter_entry(it, &e);
                if (n)
                        cr_assert(lt(int, eng_version_cmp(prev, prev_len, prev_seq, e.key,
                                                          e.key_len, e.seq), 0));
                cr_assert(le(sz, e.key_len, sizeof(prev)));
                memcpy(prev, e.key, e.key_len);
                prev_len = e.key_len;
                prev_seq = e.seq;
        }
        cr_expect(eq(int, r, 0), "the scan ends normally");
        cr_expect(eq(sz, n, n_vers - n_bad), "every version but the bad block's");
        cr_expect(eq(u32, il.calls, 1));
        cr_expect(eq(u64, il.last.offset, h.offset));
        cr_expect(eq(u32, tl.firsts, 1));
        cr_expect(eq(u64, pins(), 0), "after scan");
        /* A seek into the bad block lands on the next block's first entry. */
        kl = key_fmt(2 * i + 2, k);
        cr_expect(eq(int, seek(it, k, (size_t)kl, UINT64_MAX), 1));
        expect_at(it, before_next);
        eng_sst_iter_free(it);
        cr_expect(eq(u64, pins(), 0), "after free");
        cold_cache();
}

Test(sst_iter, read_errors_reach_the_caller_and_a_retry_works)
{
        struct eng_sst_iter *it;
        struct get_wait w;
        bool was_pending;
        char k[16];
        int kl = key_fmt(2 * 500 + 2, k);

        cold_cache();
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_expect(eq(int, get_key(k, (size_t)kl, &w, &was_pending), -EIO));
        cr_expect(was_pending, "the error comes from the loop");
        cr_expect(eq(int, get_key(k, (size_t)kl, &w, &was_pending), 0), "retry");
        expect_entry(&w.g.entry, first_ver[500]);
        eng_block_cache_release(cache, w.g.block);

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_expect(eq(int, seek_first(it), -EIO));
        cr_expect(not(eng_sst_iter_is_valid(it)));
        cr_assert(eq(int, seek_first(it), 1), "retry");
        expect_rest(it, 0);
        eng_sst_iter_free(it);
        cold_cache();
}

Test(sst_iter, a_failed_readahead_is_reported_where_the_scan_reaches_it_and_a_reseek_resumes)
{
        struct engine_test_move w = { 0 };
        struct eng_sst_iter *it;
        char k[16];
        size_t vi = 0;
        int r;

        cold_cache();
        cr_assert(eq(int, eng_sst_iter_new(table, &it), 0));
        cr_assert(eq(int, eng_sst_iter_seek_first(it, on_move, &w), ENG_SST_PENDING));
        /* Block 0's read is under way; the readahead of block 1, started
         * when the scan enters block 0, fails. */
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_assert(eq(int, rx_loop_run_until(loop, &w.done), 0));
        cr_assert(eq(int, w.res, 1));
        for (r = 1; r == 1; vi++) {
                cr_assert(lt(sz, vi, n_vers));
                expect_at(it, vi);
                r = next(it);
        }
        cr_assert(eq(int, r, -EIO));
        cr_expect(lt(sz, vi, 200), "the error came at block 1");
        /* Resume after the last entry seen: the block is read again. */
        cr_assert(eq(int, seek(it, k, (size_t)key_fmt(2 * vers[vi - 1].key + 2, k),
                               vers[vi - 1].seq - 1), 1));
        expect_rest(it, vi);
        eng_sst_iter_free(it);
        cold_cache();
}
