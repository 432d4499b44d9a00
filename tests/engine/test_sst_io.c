/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable I/O (engine/sst_io.h) on real files through the reactor: a table
 * written from a source reads back key by key through the block cache;
 * concurrent misses on one block share one read; failures: a missing file,
 * a file shorter than the manifest says, a corrupt footer or data block on
 * disk, a failed write or fdatasync, a source error; the throttle
 * engaging at a byte rate; a source that makes the writer wait
 * (ENG_SST_PENDING) and resumes it; a slow source's building giving the
 * loop back long before a chunk is built.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/time.h"
#include "engine/bloom.h"
#include "engine/fault_fs.h"
#include "engine/sst_io.h"
#include "tests/engine/helpers.h"
#include "tests/tmpdir.h"

static char dir[PATH_MAX], path[PATH_MAX + 32];
static struct rx_loop *loop;
static struct eng_fs *fs;
static struct eng_block_cache *cache;

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "sst_io");
        snprintf(path, sizeof(path), "%s/0000000000000001.sst", dir);
        engine_test_loop_fs(&loop, &fs);
        cr_assert(eq(int, eng_block_cache_new(8 << 20, &cache), 0));
}

static void teardown(void)
{
        eng_block_cache_free(cache);
        eng_fs_free(fs);
        rx_loop_free(loop);
        tmpdir_remove(dir);
}

TestSuite(sst_io, .init = setup, .fini = teardown, .timeout = 60);

/* A source of n entries "key%08u" -> "value-%u-...", failing at fail_at. */
struct src {
        struct eng_sst_source s;
        unsigned i, n, fail_at;
        char k[32], v[64];
};

static int src_next(struct eng_sst_source *s, struct eng_entry *ret)
{
        struct src *x = container_of(s, struct src, s);
        int kl, vl;

        if (x->i == x->fail_at)
                return -ENOSPC;
        if (x->i == x->n)
                return 0;
        kl = snprintf(x->k, sizeof(x->k), "key%08u", x->i);
        vl = snprintf(x->v, sizeof(x->v), "value-%u-abcdefghijklmnopqrstuvwxyz", x->i);
        *ret = (struct eng_entry){ .key = (const uint8_t *)x->k, .key_len = (uint32_t)kl,
                                   .value = (const uint8_t *)x->v, .value_len = (uint32_t)vl,
                                   .seq = x->i + 1, .kind = ENG_ENTRY_VALUE };
        x->i++;
        return 1;
}

static bool write_done;
static int write_res;

static void on_write(struct eng_sst_write *w, int res, void *arg)
{
        (void)w;
        (void)arg;
        cr_assert(not(write_done), "done ran twice");
        write_done = true;
        write_res = res;
}

enum { CHUNK = 64 << 10 };

/* Writes a table of n entries from source s (which may need *ret_w to
 * resume the writer); returns done's result and the file size. */
static int write_from(struct eng_sst_source *s, unsigned n, uint64_t rate,
                      struct eng_sst_write **ret_w, uint64_t *ret_size, uint64_t *ret_throttled)
{
        struct eng_sst_write_opts o = { .path = path, .table = { .file_id = 1 },
                                        .chunk_bytes = CHUNK, .rate_bytes_per_sec = rate };
        struct eng_sst_write *w;

        write_done = false;
        cr_assert(eq(int, eng_sst_write_start(fs, &o, s, on_write, NULL, &w), 0));
        *ret_w = w;
        cr_assert(eq(int, rx_loop_run_until(loop, &write_done), 0));
        if (ret_size)
                *ret_size = eng_sst_write_file_size(w);
        if (ret_throttled)
                *ret_throttled = eng_sst_write_throttled_ns(w);
        if (write_res == 0)
                cr_expect(eq(u64, eng_sst_write_props(w)->n_entries, n));
        eng_sst_write_free(w);
        *ret_w = NULL;
        return write_res;
}

static int write_table(unsigned n, unsigned fail_at, uint64_t rate, uint64_t *ret_size,
                       uint64_t *ret_throttled)
{
        struct src x = { .s = { .next = src_next }, .n = n, .fail_at = fail_at };
        struct eng_sst_write *w;

        return write_from(&x.s, n, rate, &w, ret_size, ret_throttled);
}

static bool open_done;
static int open_res;
static struct eng_sst_table *table;

static void on_open(void *arg, int res, struct eng_sst_table *t)
{
        (void)arg;
        open_done = true;
        open_res = res;
        table = t;
}

static int open_table(uint64_t size)
{
        open_done = false;
        table = NULL;
        cr_assert(eq(int, eng_sst_table_open(fs, cache, path, 1, size, on_open, NULL), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &open_done), 0));
        return open_res;
}

struct rd {
        struct eng_sst_block_read rq;
        bool done;
        int res;
};

static void on_block(struct eng_sst_block_read *rq, int res)
{
        struct rd *d = container_of(rq, struct rd, rq);

        d->done = true;
        d->res = res;
}

/* Reads block i, waiting if needed; returns the result, block pinned in *d. */
static int read_block(uint32_t i, struct rd *d)
{
        int r;

        *d = (struct rd){ .rq = { .done = on_block } };
        r = eng_sst_table_read_block(table, i, &d->rq);
        if (r == 1)
                return 1;
        cr_assert(eq(int, r, 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &d->done), 0));
        return d->res;
}

Test(sst_io, a_written_table_reads_back_every_key_through_the_cache)
{
        enum { N = 20000 };
        uint64_t size;
        struct stat st;
        struct eng_block_iter it = { 0 };

        cr_assert(eq(int, write_table(N, UINT32_MAX, 0, &size, NULL), 0));
        cr_assert(eq(int, stat(path, &st), 0));
        cr_assert(eq(u64, (uint64_t)st.st_size, size));
        cr_assert(eq(int, open_table(size), 0));
        for (unsigned i = 0; i < N; i += 13) {
                const struct eng_sst_reader *r = eng_sst_table_reader(table);
                char k[32], v[64];
                int kl = snprintf(k, sizeof(k), "key%08u", i);
                int vl = snprintf(v, sizeof(v), "value-%u-abcdefghijklmnopqrstuvwxyz", i);
                struct eng_entry e;
                uint32_t blk;
                struct rd d;

                cr_assert(eng_sst_reader_may_contain(r, eng_bloom_hash(k, (size_t)kl)));
                cr_assert(eq(int, eng_sst_reader_find_block(r, k, (size_t)kl, &blk), 0));
                cr_assert(ge(int, read_block(blk, &d), 0), "block %u: %d", blk, d.res);
                eng_block_iter_fini(&it);
                cr_assert(eq(int, eng_block_iter_init(&it, d.rq.block->content,
                                                      d.rq.block->content_len), 0));
                cr_assert(eq(int, eng_sst_data_get(&it, k, (size_t)kl, &e), 0));
                cr_assert(eq(u64, e.seq, i + 1));
                cr_assert(eq(u32, e.value_len, (uint32_t)vl));
                cr_assert(eq(int, memcmp(e.value, v, (size_t)vl), 0));
                eng_block_cache_release(cache, d.rq.block);
        }
        eng_block_iter_fini(&it);
        cr_expect(gt(u64, eng_block_cache_stats(cache)->hits, 0), "neighbouring keys share blocks");
        eng_sst_table_unref(table);
}

Test(sst_io, concurrent_misses_on_one_block_share_one_read)
{
        uint64_t size;
        struct rd d[3];
        int n_done = 0;

        cr_assert(eq(int, write_table(2000, UINT32_MAX, 0, &size, NULL), 0));
        cr_assert(eq(int, open_table(size), 0));
        for (int i = 0; i < 3; i++) {
                d[i] = (struct rd){ .rq = { .done = on_block } };
                cr_assert(eq(int, eng_sst_table_read_block(table, 5, &d[i].rq), 0));
        }
        eng_sst_table_unref(table);     /* the reads keep it alive */
        /* The leader (d[0]) calls back first, then the waiters. */
        cr_assert(eq(int, rx_loop_run_until(loop, &d[2].done), 0));
        n_done = d[0].done + d[1].done + d[2].done;
        cr_assert(eq(int, n_done, 3));
        for (int i = 0; i < 3; i++) {
                cr_expect(eq(int, d[i].res, 0));
                cr_expect(eq(ptr, d[i].rq.block, d[0].rq.block));
        }
        cr_expect(eq(u64, eng_block_cache_stats(cache)->inserts, 1));
        for (int i = 0; i < 3; i++)
                eng_block_cache_release(cache, d[i].rq.block);
        cr_expect(eq(u64, eng_block_cache_stats(cache)->blocks, 1));
}

/* Fills the cache with blocks of another file, each put once. */
static void flood_cache(void)
{
        for (uint64_t i = 0; i < (8 << 20) / 4096 + 64; i++) {
                uint8_t *buf = eng_block_cache_alloc_data(cache, 4096);
                struct eng_cached_block *b;

                cr_assert(not(eq(ptr, buf, NULL)));
                memset(buf, 0, 4096);
                b = eng_block_cache_put(cache, 99, i * 4096, buf, 4096, buf + 16, 4080);
                cr_assert(not(eq(ptr, b, NULL)));
                eng_block_cache_release(cache, b);
        }
}

/* A table finds the blocks it read through its own slots; a block that
 * left the cache (erased with its file, or evicted) is read again, never
 * found stale, and a table gone first leaves its blocks cached. */
Test(sst_io, a_block_read_again_hits_and_one_that_left_the_cache_is_read_again)
{
        const struct eng_block_cache_stats *st = eng_block_cache_stats(cache);
        uint8_t first[64];
        uint64_t size, off;
        struct rd d;

        cr_assert(eq(int, write_table(2000, UINT32_MAX, 0, &size, NULL), 0));
        cr_assert(eq(int, open_table(size), 0));
        cr_assert(eq(int, read_block(3, &d), 0));
        memcpy(first, d.rq.block->content, sizeof(first));
        eng_block_cache_release(cache, d.rq.block);
        cr_assert(eq(int, read_block(3, &d), 1));
        cr_expect(eq(u64, st->hits, 1));
        cr_expect(eq(u64, st->bound_hits, 1), "found through the table's slot");
        eng_block_cache_release(cache, d.rq.block);

        eng_block_cache_erase_file(cache, 1);
        cr_assert(eq(int, read_block(3, &d), 0), "erased: read again");
        cr_expect(eq(int, memcmp(d.rq.block->content, first, sizeof(first)), 0));
        eng_block_cache_release(cache, d.rq.block);
        cr_expect(eq(u64, st->inserts, 2));

        flood_cache();
        cr_assert(eq(int, read_block(3, &d), 0), "evicted: read again");
        cr_expect(eq(int, memcmp(d.rq.block->content, first, sizeof(first)), 0));
        eng_block_cache_release(cache, d.rq.block);

        off = eng_sst_reader_block(eng_sst_table_reader(table), 3).offset;
        eng_sst_table_unref(table);
        cr_expect(eng_block_cache_peek(cache, 1, off) != NULL, "cached still");
        flood_cache();  /* evicts it after its slot's memory went (ASan) */
        cr_expect(eng_block_cache_peek(cache, 1, off) == NULL);
}

/* What a scan's read-ahead prefetches: a block the table's slot holds, so
 * eng_sst_table_block_cached tells, read through it; none once it left
 * the cache (erased or evicted), nor before it was read. Under ASan the
 * prefetch's load of the block's header would catch a slot left dangling. */
Test(sst_io, cached_tells_which_blocks_a_scan_may_prefetch)
{
        uint64_t size;
        struct rd d;

        cr_assert(eq(int, write_table(2000, UINT32_MAX, 0, &size, NULL), 0));
        cr_assert(eq(int, open_table(size), 0));
        cr_expect(not(eng_sst_table_block_cached(table, 3)), "not read yet");
        eng_sst_table_block_prefetch(table, 3);
        cr_assert(eq(int, read_block(3, &d), 0));
        eng_block_cache_release(cache, d.rq.block);
        cr_expect(eng_sst_table_block_cached(table, 3), "bound to its slot");
        cr_expect(not(eng_sst_table_block_cached(table, 4)));
        eng_sst_table_block_prefetch(table, 3);
        eng_sst_table_block_prefetch(table, 4);

        eng_block_cache_erase_file(cache, 1);
        cr_expect(not(eng_sst_table_block_cached(table, 3)), "erased: its slot is clear");
        eng_sst_table_block_prefetch(table, 3);
        cr_assert(eq(int, read_block(3, &d), 0));
        eng_block_cache_release(cache, d.rq.block);
        cr_expect(eng_sst_table_block_cached(table, 3));
        flood_cache();
        cr_expect(not(eng_sst_table_block_cached(table, 3)), "evicted: its slot is clear");
        eng_sst_table_block_prefetch(table, 3);
}

/* Regression: the path was used after the call returned, so a caller
 * reusing its buffer (the shard opening many tables) opened the wrong file. */
Test(sst_io, open_copies_the_path_it_is_given)
{
        uint64_t size;
        char p[PATH_MAX + 32];

        cr_assert(eq(int, write_table(100, UINT32_MAX, 0, &size, NULL), 0));
        strcpy(p, path);
        open_done = false;
        table = NULL;
        cr_assert(eq(int, eng_sst_table_open(fs, cache, p, 1, size, on_open, NULL), 0));
        strcpy(p, "/nonexistent");
        cr_assert(eq(int, rx_loop_run_until(loop, &open_done), 0));
        cr_expect(eq(int, open_res, 0));
        eng_sst_table_unref(table);
}

Test(sst_io, a_missing_or_short_file_fails_to_open)
{
        uint64_t size;

        cr_expect(eq(int, open_table(8192), -ENOENT));
        cr_assert(eq(int, write_table(500, UINT32_MAX, 0, &size, NULL), 0));
        cr_expect(eq(int, open_table(size + 4096), -SCREE_ECORRUPT), "shorter than the manifest says");
        cr_expect(eq(int, open_table(size - 4096), -SCREE_ECORRUPT), "footer not at the end");
        cr_expect(eq(int, open_table(100), -SCREE_ECORRUPT));
        cr_expect(eq(int, open_table(size), 0));
        eng_sst_table_unref(table);
}

Test(sst_io, corruption_on_disk_is_reported_not_returned)
{
        uint64_t size;
        struct rd d;

        cr_assert(eq(int, write_table(3000, UINT32_MAX, 0, &size, NULL), 0));
        engine_test_flip_byte(path, 4096 * 3 + 200);   /* inside data block 3 */
        cr_assert(eq(int, open_table(size), 0));
        cr_expect(eq(int, read_block(2, &d), 0));
        eng_block_cache_release(cache, d.rq.block);
        cr_expect(eq(int, read_block(3, &d), -SCREE_ECORRUPT));
        cr_expect(eq(ptr, d.rq.block, NULL));
        cr_expect(eq(int, read_block(3, &d), -SCREE_ECORRUPT), "a bad block is never cached");
        eng_sst_table_unref(table);
        engine_test_flip_byte(path, size - 4096 + 30); /* the footer */
        cr_expect(eq(int, open_table(size), -SCREE_ECORRUPT));
}

Test(sst_io, write_and_sync_failures_and_source_errors_reach_done)
{
        eng_fault_fs_fail(fs, ENG_FS_WRITE, EIO, 1);
        cr_expect(eq(int, write_table(5000, UINT32_MAX, 0, NULL, NULL), -EIO));
        eng_fault_fs_fail(fs, ENG_FS_FDATASYNC, EIO, 1);
        cr_expect(eq(int, write_table(5000, UINT32_MAX, 0, NULL, NULL), -EIO));
        eng_fault_fs_fail(fs, ENG_FS_WRITE, ENOSPC, 1);
        cr_expect(eq(int, write_table(5000, UINT32_MAX, 0, NULL, NULL), -ENOSPC));
        cr_expect(eq(int, write_table(5000, 4321, 0, NULL, NULL), -ENOSPC), "the source's error");
        cr_expect(eq(int, write_table(5000, UINT32_MAX, 0, NULL, NULL), 0), "and then it works");
}

Test(sst_io, the_throttle_holds_writes_to_the_rate)
{
        uint64_t size, throttled;

        /* ~1 MiB at 4 MiB/s: the throttle must engage, even under ASan (no timing asserted
         * beyond "it waited at all"). */
        cr_assert(eq(int, write_table(20000, UINT32_MAX, 4u << 20, &size, &throttled), 0));
        cr_expect(gt(u64, size, 512 << 10));
        cr_expect(gt(u64, throttled, 0));
        cr_assert(eq(int, write_table(8000, UINT32_MAX, 0, &size, &throttled), 0));
        cr_expect(eq(u64, throttled, 0));
}

/* A source that, before every `every`-th entry, has nothing ready: it
 * returns ENG_SST_PENDING and resumes the writer from a loop task. */
struct slow_src {
        struct src x;
        struct eng_sst_source s;
        struct eng_sst_write *w;
        struct rx_task task;
        unsigned calls, every, waits, resumes;
        bool held;
};

static void slow_resume(struct rx_loop *l, struct rx_task *t)
{
        struct slow_src *y = container_of(t, struct slow_src, task);

        (void)l;
        y->resumes++;
        eng_sst_write_resume(y->w);
}

static int slow_next(struct eng_sst_source *s, struct eng_entry *ret)
{
        struct slow_src *y = container_of(s, struct slow_src, s);

        if (!y->held && ++y->calls % y->every == 0) {
                y->held = true;
                y->waits++;
                rx_loop_post(loop, &y->task);
                return ENG_SST_PENDING;
        }
        y->held = false;
        return src_next(&y->x.s, ret);
}

static void slow_init(struct slow_src *y, unsigned n, unsigned fail_at, unsigned every)
{
        *y = (struct slow_src){ .x = { .s = { .next = src_next }, .n = n, .fail_at = fail_at },
                                .s = { .next = slow_next }, .every = every,
                                .task = { .fn = slow_resume, .name = "test:resume" } };
}

Test(sst_io, a_source_that_waits_pauses_the_writer_without_small_writes)
{
        enum { N = 20000 };
        const struct eng_fault_fs_stats *st = eng_fault_fs_stats(fs);
        struct slow_src y;
        uint64_t size, sync_size, writes;
        struct rd d;

        cr_assert(eq(int, write_table(N, UINT32_MAX, 0, &sync_size, NULL), 0));
        slow_init(&y, N, UINT32_MAX, 7);
        writes = st->writes;
        cr_assert(eq(int, write_from(&y.s, N, 0, &y.w, &size, NULL), 0));
        cr_expect(gt(u32, y.waits, N / 8));
        cr_expect(eq(u64, size, sync_size), "the same table as from a source that never waits");
        /* Only whole chunks are written (the last chunk may be bigger). */
        cr_expect(le(u64, st->writes - writes, size / CHUNK + 1));
        cr_assert(eq(int, open_table(size), 0));
        for (uint32_t i = 0; i < eng_sst_reader_n_blocks(eng_sst_table_reader(table)); i++) {
                cr_assert(ge(int, read_block(i, &d), 0), "block %u", i);
                eng_block_cache_release(cache, d.rq.block);
        }
        eng_sst_table_unref(table);

        /* Waiting at the very first entry, and on every one. */
        slow_init(&y, 300, UINT32_MAX, 1);
        cr_assert(eq(int, write_from(&y.s, 300, 0, &y.w, &size, NULL), 0));
        cr_expect(eq(u32, y.waits, 301));
        /* An empty table from a source that waits before saying so. */
        slow_init(&y, 0, UINT32_MAX, 1);
        cr_assert(eq(int, write_from(&y.s, 0, 0, &y.w, &size, NULL), 0));
        cr_expect(eq(u32, y.waits, 1));
}

Test(sst_io, a_source_error_after_a_wait_and_a_write_error_while_waiting_reach_done)
{
        struct slow_src y;
        uint64_t size;

        slow_init(&y, 5000, 4321, 5);
        cr_expect(eq(int, write_from(&y.s, 5000, 0, &y.w, &size, NULL), -ENOSPC));
        /* The first chunk's write fails while the source is waiting (it
         * waits before every entry): done waits for the resume it is owed,
         * then the writer asks for nothing more. */
        slow_init(&y, 20000, UINT32_MAX, 1);
        eng_fault_fs_fail(fs, ENG_FS_WRITE, EIO, 1);
        cr_expect(eq(int, write_from(&y.s, 20000, 0, &y.w, &size, NULL), -EIO));
        cr_expect(eq(u32, y.resumes, y.waits));
        cr_expect(lt(u32, y.x.i, 20000), "the writer stopped asking the source");
}

/* A source that spins SPIN_NS before every entry, and a task that re-posts
 * itself until the write is done, counting the entries built between two
 * of its runs: how long building kept the loop from everything else. */
enum { SPIN_NS = 10 * 1000 };

struct busy_src {
        struct src x;
        struct eng_sst_source s;
        struct rx_task probe;
        unsigned since_probe, most_between, probes;
        bool probe_stopped;
};

static int busy_next(struct eng_sst_source *s, struct eng_entry *ret)
{
        struct busy_src *y = container_of(s, struct busy_src, s);
        uint64_t until = time_now_ns() + SPIN_NS;

        while (time_now_ns() < until)
                ;
        y->since_probe++;
        return src_next(&y->x.s, ret);
}

static void busy_probe(struct rx_loop *l, struct rx_task *t)
{
        struct busy_src *y = container_of(t, struct busy_src, probe);

        y->probes++;
        if (y->since_probe > y->most_between)
                y->most_between = y->since_probe;
        y->since_probe = 0;
        if (write_done)
                y->probe_stopped = true;
        else
                rx_loop_post(l, t);
}

static int busy_write(struct busy_src *y, unsigned n, uint64_t *ret_slices, uint64_t *ret_size)
{
        struct eng_sst_write_opts o = { .path = path, .table = { .file_id = 1 },
                                        .chunk_bytes = CHUNK };
        struct eng_sst_write *w;

        *y = (struct busy_src){ .x = { .s = { .next = src_next }, .n = n, .fail_at = UINT32_MAX },
                                .s = { .next = busy_next },
                                .probe = { .fn = busy_probe, .name = "test:probe" } };
        write_done = false;
        cr_assert(eq(int, eng_sst_write_start(fs, &o, &y->s, on_write, NULL, &w), 0));
        rx_loop_post(loop, &y->probe);
        cr_assert(eq(int, rx_loop_run_until(loop, &y->probe_stopped), 0));
        *ret_slices = eng_sst_write_slices(w);
        *ret_size = eng_sst_write_file_size(w);
        eng_sst_write_free(w);
        return write_res;
}

Test(sst_io, building_gives_the_loop_back_long_before_a_chunk_is_built)
{
        /* ~1,600 entries a 64 KiB chunk: 1,000 entries are one chunk, 16 ms
         * of building at 10 us an entry. */
        enum { N = 1000 };
        struct busy_src y;
        uint64_t slices, size, plain_size;

        cr_assert(eq(int, write_table(N, UINT32_MAX, 0, &plain_size, NULL), 0));
        cr_assert(eq(int, busy_write(&y, N, &slices, &size), 0));
        cr_expect(eq(u64, size, plain_size), "the same table as from a fast source");
        /* A slice is 100 us: the clock, read every 16 entries, ends it at
         * the first read. Built in one go, all N would come between. */
        cr_expect(le(u32, y.most_between, 32), "%u entries built without a break",
                  y.most_between);
        cr_expect(ge(u64, slices, N / 32));
        cr_expect(ge(u32, y.probes, N / 32));

        /* A write that fails while the next chunk is built in slices:
         * done runs once, with the error, after the building stops. */
        eng_fault_fs_fail(fs, ENG_FS_WRITE, EIO, 1);
        cr_expect(eq(int, busy_write(&y, 3 * N, &slices, &size), -EIO));
        cr_expect(gt(u64, slices, 0));
}
