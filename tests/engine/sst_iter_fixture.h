/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SSTable-reading fixture shared by test_sst_iter.c and
 * test_sst_iter_ahead.c: a table of ~100 data blocks written and opened on
 * real files through the reactor (1 to 4 versions per key, one key with
 * 400 versions over several blocks, tombstones, 20 KB values), the list
 * of versions it was written from, and helpers that drive lookups, seeks,
 * moves and block reads to completion and check what they find. The state
 * is file-static: one fixture per test (Criterion forks per test).
 */
#ifndef SCREE_TESTS_ENGINE_SST_ITER_FIXTURE_H
#define SCREE_TESTS_ENGINE_SST_ITER_FIXTURE_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "engine/fault_fs.h"
#include "engine/sst_io.h"
#include "engine/bloom.h"
#include "engine/sst_iter.h"
#include "tests/engine/helpers.h"
#include "tests/tmpdir.h"

enum {
        N_KEYS = 3000,
        MANY_KEY = 1000,        /* the key with MANY_VERSIONS versions */
        MANY_VERSIONS = 400,
        MAX_VALUE = 32 << 10,
};

static char dir[PATH_MAX], path[PATH_MAX + 32];
static struct rx_loop *loop;
static struct eng_fs *fs;
static struct eng_block_cache *cache;
static struct eng_sst_table *table;

/* ---- the table's contents ---- */

/* Key i of the table is number 2i + 2 ("key000002", ...): odd numbers and
 * 0 fall between, before or after keys. Version j (0 = newest) of n has
 * seq (n - j) * 10. */
struct ver {
        uint32_t key;           /* i */
        uint32_t j;
        uint64_t seq;
        enum eng_entry_kind kind;
        uint32_t value_len;
};

static struct ver *vers;
static size_t n_vers;
static size_t first_ver[N_KEYS + 1];    /* index in vers of key i's newest version */

static inline int key_fmt(uint32_t num, char *buf)
{
        return snprintf(buf, 16, "key%06u", num);
}

static inline uint32_t n_versions(uint32_t i)
{
        return i == MANY_KEY ? MANY_VERSIONS : 1 + i % 4;
}

static inline uint8_t value_byte(const struct ver *v, uint32_t k)
{
        return (uint8_t)(v->key * 31 + v->j * 7 + k);
}

static inline void make_versions(void)
{
        size_t n = 0;

        vers = calloc((size_t)N_KEYS * 4 + MANY_VERSIONS, sizeof(*vers));
        cr_assert(not(eq(ptr, vers, NULL)));
        for (uint32_t i = 0; i < N_KEYS; i++) {
                uint32_t nv = n_versions(i);

                first_ver[i] = n;
                for (uint32_t j = 0; j < nv; j++) {
                        struct ver *v = &vers[n++];

                        *v = (struct ver){ .key = i, .j = j, .seq = (uint64_t)(nv - j) * 10,
                                           .kind = ENG_ENTRY_VALUE,
                                           .value_len = 10 + (i * 7 + j) % 40 };
                        if ((i + j) % 11 == 5) {
                                v->kind = ENG_ENTRY_TOMBSTONE;
                                v->value_len = 0;
                        } else if (i % 97 == 13 && j == 0) {
                                v->value_len = 20000 + i;
                        }
                }
        }
        first_ver[N_KEYS] = n;
        n_vers = n;
}

static inline void expect_entry(const struct eng_entry *e, size_t vi)
{
        const struct ver *v = &vers[vi];
        char k[16];
        int kl = key_fmt(2 * v->key + 2, k);

        cr_assert(lt(sz, vi, n_vers));
        cr_assert(eq(u32, e->key_len, (uint32_t)kl), "version %zu", vi);
        cr_assert(eq(int, memcmp(e->key, k, (size_t)kl), 0), "version %zu: %.*s", vi,
                  (int)e->key_len, (const char *)e->key);
        cr_assert(eq(u64, e->seq, v->seq), "version %zu of %s", vi, k);
        cr_assert(eq(int, (int)e->kind, (int)v->kind), "version %zu of %s", vi, k);
        cr_assert(eq(u32, e->value_len, v->value_len), "version %zu of %s", vi, k);
        for (uint32_t b = 0; b < v->value_len; b++)
                cr_assert(eq(u8, e->value[b], value_byte(v, b)), "version %zu byte %u", vi, b);
}

/* The first version at or after (key number num, seq) in table order. */
static inline size_t lower_bound(uint32_t num, uint64_t seq)
{
        size_t lo = 0, hi = n_vers;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                uint32_t m = 2 * vers[mid].key + 2;

                if (m < num || (m == num && vers[mid].seq > seq))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* ---- writing and opening ---- */

struct src {
        struct eng_sst_source s;
        size_t vi;
        char k[16];
        uint8_t v[MAX_VALUE];
};

static inline int src_next(struct eng_sst_source *s, struct eng_entry *ret)
{
        struct src *x = container_of(s, struct src, s);
        const struct ver *v;
        int kl;

        if (x->vi == n_vers)
                return 0;
        v = &vers[x->vi++];
        kl = key_fmt(2 * v->key + 2, x->k);
        for (uint32_t b = 0; b < v->value_len; b++)
                x->v[b] = value_byte(v, b);
        *ret = (struct eng_entry){ .key = (const uint8_t *)x->k, .key_len = (uint32_t)kl,
                                   .value = x->v, .value_len = v->value_len, .seq = v->seq,
                                   .kind = v->kind };
        return 1;
}

static bool io_done;
static int io_res;

static inline void on_write(struct eng_sst_write *w, int res, void *arg)
{
        (void)w;
        (void)arg;
        io_done = true;
        io_res = res;
}

static inline void on_open(void *arg, int res, struct eng_sst_table *t)
{
        (void)arg;
        io_done = true;
        io_res = res;
        table = t;
}

/* Writes the table of `vers` and opens it. */
static inline void setup(void)
{
        static struct src x = { .s = { .next = src_next } };
        struct eng_sst_write_opts o = { .path = path, .table = { .file_id = 1 } };
        struct eng_sst_write *w;

        tmpdir_make(dir, sizeof(dir), "sst_iter");
        snprintf(path, sizeof(path), "%s/0000000000000001.sst", dir);
        engine_test_loop_fs(&loop, &fs);
        cr_assert(eq(int, eng_block_cache_new(16 << 20, &cache), 0));
        make_versions();
        cr_assert(eq(int, eng_sst_write_start(fs, &o, &x.s, on_write, NULL, &w), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &io_done), 0));
        cr_assert(eq(int, io_res, 0));
        io_done = false;
        cr_assert(eq(int, eng_sst_table_open(fs, cache, path, 1, eng_sst_write_file_size(w),
                                             on_open, NULL), 0));
        eng_sst_write_free(w);
        cr_assert(eq(int, rx_loop_run_until(loop, &io_done), 0));
        cr_assert(eq(int, io_res, 0));
        cr_assert(gt(u32, eng_sst_reader_n_blocks(eng_sst_table_reader(table)), 80));
}

static inline void teardown(void)
{
        cr_expect(eq(u64, eng_block_cache_stats(cache)->pins, 0), "a block is still pinned");
        eng_sst_table_unref(table);
        /* Let every read still in flight (and the table's close) call back,
         * so that deferred frees happen and ASan sees no leak. */
        rx_loop_stop(loop);
        rx_loop_run(loop);
        eng_block_cache_free(cache);    /* asserts that no block is still pinned */
        eng_fs_free(fs);
        rx_loop_free(loop);
        tmpdir_remove(dir);
        free(vers);
}

/* Blocks pinned now. */
static inline uint64_t pins(void)
{
        return eng_block_cache_stats(cache)->pins;
}

/* Drops every cached block, so the next reads go to disk, first checking
 * that no reader left a block pinned. */
static inline void cold_cache(void)
{
        cr_assert(eq(u64, pins(), 0), "a block is still pinned");
        eng_block_cache_erase_file(cache, 1);
}

/* ---- driving lookups and moves ---- */

struct get_wait {
        struct eng_sst_get g;
        bool done;
        int res, calls;
};

static inline void on_get(struct eng_sst_get *g, int res)
{
        struct get_wait *w = container_of(g, struct get_wait, g);

        w->done = true;
        w->res = res;
        w->calls++;
}

/* Looks k up, waiting if needed; *ret_pending tells which way it went. */
static inline int get_key(const char *k, size_t kl, struct get_wait *w, bool *ret_pending)
{
        int r;

        *w = (struct get_wait){ .g = { .done = on_get } };
        r = eng_sst_table_get(table, k, kl, &w->g);
        *ret_pending = r == ENG_SST_PENDING;
        if (r != ENG_SST_PENDING) {
                cr_assert(not(eq(int, r, 1)));
                return r;
        }
        cr_assert(eq(int, rx_loop_run_until(loop, &w->done), 0));
        cr_assert(eq(int, w->calls, 1));
        return w->res;
}

static inline void on_move(struct eng_sst_iter *it, int res, void *arg)
{
        (void)it;
        engine_test_move_done(arg, res);
}

static inline int seek_first(struct eng_sst_iter *it)
{
        struct engine_test_move w = { 0 };

        return engine_test_move_finish(loop, eng_sst_iter_seek_first(it, on_move, &w), &w);
}

static inline int seek(struct eng_sst_iter *it, const void *key, size_t len, uint64_t seq)
{
        struct engine_test_move w = { 0 };

        return engine_test_move_finish(loop, eng_sst_iter_seek(it, key, len, seq, on_move, &w), &w);
}

static inline int next(struct eng_sst_iter *it)
{
        struct engine_test_move w = { 0 };

        return engine_test_move_finish(loop, eng_sst_iter_next(it, on_move, &w), &w);
}

static inline void expect_at(struct eng_sst_iter *it, size_t vi)
{
        struct eng_entry e;

        cr_assert(eng_sst_iter_is_valid(it));
        eng_sst_iter_entry(it, &e);
        expect_entry(&e, vi);
}

/* Scans from the iterator's position (version vi) to the end. */
static inline void expect_rest(struct eng_sst_iter *it, size_t vi)
{
        int r;

        for (; vi < n_vers; vi++) {
                expect_at(it, vi);
                r = next(it);
                cr_assert(eq(int, r, vi + 1 < n_vers ? 1 : 0), "after version %zu", vi);
        }
        cr_assert(not(eng_sst_iter_is_valid(it)));
}

/* A key (table index i) whose newest version is in data block `index`. */
static inline uint32_t key_in_block(uint32_t index)
{
        const struct eng_sst_reader *rd = eng_sst_table_reader(table);

        for (uint32_t i = 0; i < N_KEYS; i++) {
                char k[16];
                uint32_t b;

                cr_assert(eq(int, eng_sst_reader_find_block(rd, k, (size_t)key_fmt(2 * i + 2, k),
                                                            &b), 0));
                if (b == index)
                        return i;
        }
        cr_assert(false, "no key starts in block %u", index);
        return 0;
}

/* Reads block `index` of the table and releases it (engine_test_read_block):
 * 1 on a cache hit, else the read's result. */
static inline int read_block_wait(uint32_t index)
{
        return engine_test_read_block(loop, table, index);
}

/* Pins held on block `index` by others (the block must be cached). */
static inline uint32_t block_pins(uint32_t index)
{
        struct eng_sst_handle h = eng_sst_reader_block(eng_sst_table_reader(table), index);
        struct eng_cached_block *b = eng_block_cache_get(cache, 1, h.offset);
        uint32_t n;

        cr_assert(not(eq(ptr, b, NULL)), "block %u cached", index);
        n = b->pins - 1;
        eng_block_cache_release(cache, b);
        return n;
}

#endif
