/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streaming an SSTable in chunks (engine/sst_seq.h) on real files through
 * the reactor, against the model's versions (model.h): a table of ~3000
 * random versions, tombstones and values of a few KB (so some blocks are
 * two pages, larger than a one-page chunk). Full scans and seeks at chunk
 * sizes of one page, three pages and the default, with the reads they
 * cost and no block cached; freeing with reads in flight, also as the
 * last owner of the table and from the callback; read errors at the first
 * chunk and at a chunk read ahead; a corrupt block; a file cut short.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "engine/fault_fs.h"
#include "engine/sst_seq.h"
#include "tests/engine/helpers.h"
#include "tests/engine/model.h"
#include "tests/tmpdir.h"

enum { N_VERS = 3000, TABLE_ID = 1 };

static char dir[PATH_MAX], path[PATH_MAX + 32];
static struct rx_loop *loop;
static struct eng_fs *fs;
static struct eng_block_cache *cache;
static struct eng_sst_table *table;
static struct mver *vers;

static void setup(void)
{
        uint64_t rng = 42, *seqs;

        tmpdir_make(dir, sizeof(dir), "sst_seq");
        engine_test_io_init(&loop, &fs, &cache, 8 << 20);
        model_keys_init();
        seqs = model_shuffled_seqs(&rng, N_VERS);
        vers = calloc(N_VERS, sizeof(*vers));
        cr_assert(not(eq(ptr, vers, NULL)));
        model_gen(&rng, seqs, N_VERS, vers);
        free(seqs);
        table = model_sst_make(loop, fs, cache, dir, TABLE_ID, vers, N_VERS);
        model_sst_path(path, dir, TABLE_ID);
}

static void teardown(void)
{
        eng_sst_table_unref(table);
        engine_test_io_fini(loop, fs, cache);
        tmpdir_remove(dir);
        free(vers);
}

TestSuite(sst_seq, .init = setup, .fini = teardown, .timeout = 60);

static const struct eng_sst_reader *reader(void)
{
        return eng_sst_table_reader(table);
}

static uint32_t n_blocks(void)
{
        return eng_sst_reader_n_blocks(reader());
}

/* Bytes of the data region: where the last block ends. */
static uint64_t data_bytes(void)
{
        struct eng_sst_handle h = eng_sst_reader_block(reader(), n_blocks() - 1);

        return h.offset + h.size;
}

/* ---- driving moves ---- */

static void on_move(struct eng_sst_seq *it, int res, void *arg)
{
        (void)it;
        engine_test_move_done(arg, res);
}

static int seek_first(struct eng_sst_seq *it)
{
        struct engine_test_move w = { 0 };

        return engine_test_move_finish(loop, eng_sst_seq_seek_first(it, on_move, &w), &w);
}

static int seek(struct eng_sst_seq *it, uint32_t key, uint64_t seq)
{
        struct engine_test_move w = { 0 };
        int r = eng_sst_seq_seek(it, model_keys[key], model_key_lens[key], seq, on_move, &w);

        return engine_test_move_finish(loop, r, &w);
}

static int next(struct eng_sst_seq *it)
{
        struct engine_test_move w = { 0 };

        return engine_test_move_finish(loop, eng_sst_seq_next(it, on_move, &w), &w);
}

static void expect_at(struct eng_sst_seq *it, size_t vi)
{
        struct eng_entry e;

        cr_assert(lt(sz, vi, (size_t)N_VERS));
        cr_assert(eng_sst_seq_is_valid(it), "at version %zu", vi);
        eng_sst_seq_entry(it, &e);
        expect_mver(&e, &vers[vi]);
}

/* Scans from the iterator's position (version vi) to the end; returns
 * the error that stopped it early, or 0. */
static int scan_rest(struct eng_sst_seq *it, size_t vi, size_t *ret_vi)
{
        int r = 1;

        for (; r == 1; vi++) {
                expect_at(it, vi);
                r = next(it);
        }
        *ret_vi = vi;
        return r;
}

static void expect_rest(struct eng_sst_seq *it, size_t vi)
{
        cr_assert(eq(int, scan_rest(it, vi, &vi), 0));
        cr_assert(eq(sz, vi, (size_t)N_VERS), "the scan ended early");
        cr_assert(not(eng_sst_seq_is_valid(it)));
}

/* The first version at or after (key, seq) in table order. */
static size_t lower_bound(uint32_t key, uint64_t seq)
{
        struct mver probe = { .key = key, .seq = seq };
        size_t lo = 0, hi = N_VERS;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (mver_cmp(&vers[mid], &probe) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static struct eng_sst_seq *seq_new(uint32_t chunk_bytes)
{
        struct eng_sst_seq *it;

        cr_assert(eq(int, eng_sst_seq_new(table, chunk_bytes, &it), 0));
        cr_assert(not(eng_sst_seq_is_valid(it)));
        return it;
}

/* ---- scans and seeks ---- */

Test(sst_seq, the_table_has_blocks_larger_than_one_page)
{
        uint32_t big = 0;

        cr_assert(gt(u32, n_blocks(), 40));
        for (uint32_t i = 0; i < n_blocks(); i++)
                big += eng_sst_reader_block(reader(), i).size > 4096;
        cr_assert(gt(u32, big, 0));
}

/* The reads a full scan with chunks of chunk_bytes costs: a chunk takes
 * whole blocks while they fit, and a larger block alone. */
static uint64_t chunks_of(uint32_t chunk_bytes)
{
        uint64_t n = 0;

        for (uint32_t i = 0; i < n_blocks();) {
                uint32_t len = eng_sst_reader_block(reader(), i++).size;

                while (i < n_blocks() && len < chunk_bytes &&
                       eng_sst_reader_block(reader(), i).size <= chunk_bytes - len)
                        len += eng_sst_reader_block(reader(), i++).size;
                n++;
        }
        return n;
}

Test(sst_seq, a_scan_yields_every_version_in_order_one_read_a_chunk_and_caches_nothing)
{
        const uint32_t sizes[] = { 4096, 3 * 4096, 0 };

        for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
                struct eng_sst_seq *it = seq_new(sizes[s]);
                uint32_t chunk = sizes[s] ? sizes[s] : ENG_SST_SEQ_DEFAULT_CHUNK;

                engine_test_moves_waited = 0;
                cr_assert(eq(int, seek_first(it), 1));
                expect_rest(it, 0);
                cr_expect(eq(u64, eng_sst_seq_reads(it), chunks_of(chunk)), "chunk %u", chunk);
                if (chunk == 4096)
                        cr_expect(eq(u64, eng_sst_seq_reads(it), n_blocks()), "a block a read");
                else if (chunk == ENG_SST_SEQ_DEFAULT_CHUNK)
                        cr_expect(le(u64, eng_sst_seq_reads(it), data_bytes() / chunk + 2),
                                  "chunk %u: %lu bytes", chunk, (unsigned long)data_bytes());
                cr_expect(le(u32, engine_test_moves_waited, (uint32_t)eng_sst_seq_reads(it)));
                eng_sst_seq_free(it);
        }
        cr_expect(eq(u64, eng_block_cache_stats(cache)->blocks, 0), "nothing cached");
        cr_expect(eq(u64, eng_block_cache_stats(cache)->misses, 0), "the cache never asked");
}

/* Seeks to (key, seq) and checks the landing place and a few entries after. */
static void check_seek(struct eng_sst_seq *it, uint32_t key, uint64_t seq)
{
        size_t want = lower_bound(key, seq);
        int r = seek(it, key, seq);

        if (want == N_VERS) {
                cr_assert(eq(int, r, 0), "seek %s/%lu", model_keys[key], (unsigned long)seq);
                cr_assert(not(eng_sst_seq_is_valid(it)));
                return;
        }
        cr_assert(eq(int, r, 1), "seek %s/%lu", model_keys[key], (unsigned long)seq);
        for (size_t vi = want; vi < want + 3 && vi < N_VERS; vi++) {
                if (vi > want)
                        cr_assert(eq(int, next(it), 1));
                expect_at(it, vi);
        }
}

Test(sst_seq, seeks_forward_and_back_land_on_the_first_version_at_or_after_the_target)
{
        const uint32_t sizes[] = { 4096, 3 * 4096, 0 };

        for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
                struct eng_sst_seq *it = seq_new(sizes[s]);

                /* Every key, newest and below its oldest; then backwards,
                 * at seqs inside the keys' version runs. */
                for (uint32_t k = 0; k < MODEL_KEYS; k++) {
                        check_seek(it, k, UINT64_MAX);
                        check_seek(it, k, 0);
                }
                for (uint32_t k = MODEL_KEYS; k-- > 0;)
                        for (uint64_t seq = 1; seq <= N_VERS; seq += 397)
                                check_seek(it, k, seq);
                /* A seek then a scan to the end. */
                cr_assert(eq(int, seek(it, MODEL_KEYS / 2, UINT64_MAX), 1));
                expect_rest(it, lower_bound(MODEL_KEYS / 2, UINT64_MAX));
                eng_sst_seq_free(it);
        }
}

Test(sst_seq, a_chunk_size_that_is_not_whole_pages_is_refused)
{
        struct eng_sst_seq *it = NULL;

        cr_expect(eq(int, eng_sst_seq_new(table, 1000, &it), -EINVAL));
        cr_expect(eq(ptr, it, NULL));
}

/* ---- lifetime ---- */

static bool table_closed;

static void on_closed(void *arg)
{
        (void)arg;
        table_closed = true;
}

Test(sst_seq, freeing_with_reads_in_flight_lets_them_finish_and_never_calls_back)
{
        struct engine_test_move w = { 0 };
        struct eng_sst_seq *it = seq_new(4096);

        /* The first chunk in flight. */
        cr_assert(eq(int, eng_sst_seq_seek_first(it, on_move, &w), ENG_SST_PENDING));
        eng_sst_seq_free(it);
        /* The next one read ahead in flight, and the owner's reference gone:
         * the read keeps the table open until it completes. */
        it = seq_new(4096);
        cr_assert(eq(int, seek_first(it), 1));
        eng_sst_table_on_closed(table, on_closed, NULL);
        eng_sst_table_unref(table);
        table = NULL;
        eng_sst_seq_free(it);
        cr_expect(not(table_closed), "a read in flight holds the table");
        cr_assert(eq(int, rx_loop_run_until(loop, &table_closed), 0));
        cr_expect(eq(int, w.calls, 0));
        eng_sst_seq_free(NULL);
}

static void free_in_callback(struct eng_sst_seq *it, int res, void *arg)
{
        struct engine_test_move *w = arg;

        cr_expect(eq(int, res, 1));
        eng_sst_seq_free(it);
        w->done = true;
        w->calls++;
}

Test(sst_seq, the_callback_may_free_the_iterator)
{
        struct engine_test_move w = { 0 };
        struct eng_sst_seq *it = seq_new(0);

        cr_assert(eq(int, eng_sst_seq_seek_first(it, free_in_callback, &w), ENG_SST_PENDING));
        cr_assert(eq(int, rx_loop_run_until(loop, &w.done), 0));
        cr_expect(eq(int, w.calls, 1));
}

/* ---- failures ---- */

Test(sst_seq, a_failed_first_read_reaches_the_caller_and_a_retry_reads_again)
{
        struct eng_sst_seq *it = seq_new(0);

        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_expect(eq(int, seek_first(it), -EIO));
        cr_expect(not(eng_sst_seq_is_valid(it)));
        cr_assert(eq(int, seek_first(it), 1), "retry");
        expect_rest(it, 0);
        eng_sst_seq_free(it);
}

Test(sst_seq, a_failed_read_ahead_is_reported_where_the_scan_reaches_it_and_a_reseek_resumes)
{
        struct engine_test_move w = { 0 };
        struct eng_sst_seq *it = seq_new(3 * 4096);
        size_t vi;

        cr_assert(eq(int, eng_sst_seq_seek_first(it, on_move, &w), ENG_SST_PENDING));
        /* The first chunk's read is under way; the read ahead of the
         * second, started when the scan enters the first, fails. */
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_assert(eq(int, rx_loop_run_until(loop, &w.done), 0));
        cr_assert(eq(int, w.res, 1));
        cr_assert(eq(int, scan_rest(it, 0, &vi), -EIO));
        cr_expect(lt(sz, vi, (size_t)N_VERS / 4), "the error came at the second chunk");
        cr_expect(not(eng_sst_seq_is_valid(it)));
        /* Resume after the last version seen: the chunk is read again. */
        cr_assert(eq(int, seek(it, vers[vi - 1].key, vers[vi - 1].seq - 1), 1));
        expect_rest(it, vi);
        eng_sst_seq_free(it);
}

/* The index of the first version whose block is `index` or later. */
static size_t first_in_block(uint32_t index)
{
        for (size_t vi = 0; vi < N_VERS; vi++) {
                const struct mver *v = &vers[vi];
                uint32_t b;

                cr_assert(eq(int, eng_sst_reader_find_block(reader(), model_keys[v->key],
                                                            model_key_lens[v->key], &b), 0));
                if (b >= index)
                        return vi;
        }
        return N_VERS;
}

Test(sst_seq, a_corrupt_block_stops_the_scan_there_and_the_blocks_after_it_still_read)
{
        const uint32_t bad = 20;
        struct eng_sst_handle h = eng_sst_reader_block(reader(), bad);
        struct eng_sst_seq *it = seq_new(0);
        uint32_t after;
        size_t vi;

        engine_test_flip_byte(path, h.offset + 100);
        cr_assert(eq(int, seek_first(it), 1));
        cr_expect(eq(int, scan_rest(it, 0, &vi), -SCREE_ECORRUPT));
        cr_expect(ge(sz, vi, first_in_block(bad - 1)), "the blocks before it read");
        cr_expect(le(sz, vi, first_in_block(bad + 1)), "stopped at block %u", bad);
        cr_expect(not(eng_sst_seq_is_valid(it)));
        cr_expect(eq(int, seek_first(it), 1), "the iterator is usable after the error");
        /* A key whose versions start past the bad block. */
        vi = first_in_block(bad + 2);
        cr_assert(eq(int, eng_sst_reader_find_block(reader(), model_keys[vers[vi].key],
                                                    model_key_lens[vers[vi].key], &after), 0));
        cr_assert(gt(u32, after, bad));
        check_seek(it, vers[vi].key, UINT64_MAX);
        eng_sst_seq_free(it);
}

Test(sst_seq, a_file_cut_short_under_the_reader_is_ecorrupt)
{
        struct eng_sst_seq *it = seq_new(3 * 4096);
        size_t vi = 0;
        int r;

        cr_assert(eq(int, truncate(path, (off_t)(data_bytes() / 2 & ~UINT64_C(4095))), 0));
        r = seek_first(it);
        if (r == 1)
                r = scan_rest(it, 0, &vi);
        cr_expect(eq(int, r, -SCREE_ECORRUPT));
        cr_expect(gt(sz, vi, 0), "the chunks before the cut read");
        cr_expect(lt(sz, vi, (size_t)N_VERS * 3 / 4));
        cr_expect(not(eng_sst_seq_is_valid(it)));
        eng_sst_seq_free(it);
}
