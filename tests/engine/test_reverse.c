/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Walking down, below the merge: the reverse moves of data blocks
 * (engine/block.h), memtables (engine/memtable.h) and SSTable iterators
 * (engine/sst_iter.h), each checked against a sorted model of versions
 * (tests/engine/model.h: the empty key, prefixes, many versions of a few
 * keys, tombstones, expiries, a hot key): a walk down from the end is the
 * model reversed, seek_lt lands where the model says before the first key,
 * between keys, exactly at a key and after the last, and prev goes on from
 * there; forward and reverse moves mixed; restart intervals of 1 to 16;
 * SSTables of many blocks, cold and warm; damaged blocks skipped or
 * reported walking down; reading ahead downwards, and freeing with a
 * reverse read pending. The merge's reverse mode: test_merge_reverse.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/endian.h"
#include "engine/block.h"
#include "engine/memtable.h"
#include "engine/sst_io.h"
#include "engine/sst_iter.h"
#include "tests/engine/helpers.h"
#include "tests/engine/model.h"
#include "tests/rng.h"
#include "tests/tmpdir.h"

static char dir[PATH_MAX];
static struct rx_loop *loop;
static struct eng_fs *fs;
static struct eng_block_cache *cache;

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "reverse");
        engine_test_io_init(&loop, &fs, &cache, 8 << 20);
        model_keys_init();
}

static void teardown(void)
{
        engine_test_io_fini(loop, fs, cache);
        tmpdir_remove(dir);
}

TestSuite(reverse, .init = setup, .fini = teardown, .timeout = 120);

/* ---- the model ---- */

/* n random versions (model_gen), plus `hot` more of model key 5 when hot
 * is set; sorted. *ret_n is the total. Caller frees. */
static struct mver *versions(uint64_t seed, size_t n, size_t hot, size_t *ret_n)
{
        uint64_t rng = seed * 2654435761u + 7, *seqs = model_shuffled_seqs(&rng, n);
        struct mver *v = calloc(n + hot + 1, sizeof(*v));

        cr_assert(not(eq(ptr, v, NULL)));
        model_gen(&rng, seqs, n, v);
        for (size_t i = 0; i < hot; i++)
                v[n + i] = (struct mver){ .key = 5, .seq = n + 1 + i, .kind = ENG_ENTRY_VALUE,
                                          .value_len = (uint32_t)(i % 50) };
        qsort(v, n + hot, sizeof(*v), mver_cmp);
        free(seqs);
        *ret_n = n + hot;
        return v;
}

/* Seek targets: every model key, each with a 0x00 and a 0xff byte after
 * it (between a key and its extensions, and past them), and keys before
 * the first ("", "a", "k") and after the last ("l", "zz"). */
enum { N_TARGETS = MODEL_KEYS * 3 + 5 };

static size_t target(size_t t, char *buf)
{
        static const char *const extra[] = { "", "a", "k", "l", "zz" };
        size_t len;

        if (t >= MODEL_KEYS * 3) {
                len = strlen(extra[t - MODEL_KEYS * 3]);
                memcpy(buf, extra[t - MODEL_KEYS * 3], len);
                return len;
        }
        len = model_key_lens[t / 3];
        memcpy(buf, model_keys[t / 3], len);
        if (t % 3)
                buf[len++] = t % 3 == 1 ? '\0' : '\xff';
        return len;
}

/* The index of the last version whose key is < key, or n when none. */
static size_t model_lt(const struct mver *v, size_t n, const void *key, size_t len)
{
        size_t i = 0;

        while (i < n && model_key_cmp(v[i].key, key, len) < 0)
                i++;
        return i ? i - 1 : n;
}

/* ---- data blocks ---- */

/* A block of v's keys, each value its version's seq (8 bytes). */
static uint8_t *block_make(const struct mver *v, size_t n, unsigned interval, size_t *ret_len)
{
        struct eng_block_builder b;
        uint8_t *content;

        eng_block_builder_init(&b, interval);
        for (size_t i = 0; i < n; i++) {
                uint8_t seq[8];

                le64_put(seq, v[i].seq);
                cr_assert(eq(int, eng_block_builder_add(&b, model_keys[v[i].key],
                                                        model_key_lens[v[i].key], seq, 8), 0));
        }
        content = malloc(eng_block_builder_size(&b));
        *ret_len = eng_block_builder_finish(&b, content);
        eng_block_builder_fini(&b);
        return content;
}

static void expect_block_at(const struct eng_block_iter *it, const struct mver *v, size_t i)
{
        cr_assert(it->valid, "version %zu", i);
        cr_assert(eq(int, model_key_cmp(v[i].key, it->key, it->key_len), 0), "version %zu", i);
        cr_assert(eq(u64, le64_get(it->value), v[i].seq), "version %zu", i);
}

Test(reverse, block_walks_down_and_seeks_below_every_boundary_at_every_restart_interval)
{
        static const unsigned intervals[] = { 1, 2, 3, 5, 16 };
        size_t n;
        struct mver *v = versions(1, 300, 40, &n);

        for (size_t k = 0; k < ARRAY_SIZE(intervals); k++) {
                size_t len;
                uint8_t *content = block_make(v, n, intervals[k], &len);
                struct eng_block_iter it;
                char buf[16];

                cr_assert(eq(int, eng_block_iter_init(&it, content, len), 0));
                eng_block_iter_seek_last(&it);
                for (size_t i = n; i-- > 0;) {
                        expect_block_at(&it, v, i);
                        eng_block_iter_prev(&it);
                }
                cr_expect(not(it.valid));
                cr_expect(eq(int, it.err, 0));
                for (size_t t = 0; t < N_TARGETS; t++) {
                        size_t tl = target(t, buf), want = model_lt(v, n, buf, tl);

                        eng_block_iter_seek_lt(&it, buf, tl);
                        cr_assert(eq(int, it.err, 0));
                        if (want == n) {
                                cr_expect(not(it.valid), "target %zu", t);
                                continue;
                        }
                        for (size_t i = want, steps = 0; steps < 3 && i < n; steps++, i--) {
                                expect_block_at(&it, v, i);
                                eng_block_iter_prev(&it);
                                if (i == 0)
                                        cr_expect(not(it.valid));
                        }
                }
                eng_block_iter_fini(&it);
                free(content);
        }
        free(v);
}

Test(reverse, an_empty_block_has_nothing_walking_down)
{
        size_t len;
        uint8_t *content = block_make(NULL, 0, 16, &len);
        struct eng_block_iter it;

        cr_assert(eq(int, eng_block_iter_init(&it, content, len), 0));
        eng_block_iter_seek_last(&it);
        cr_expect(not(it.valid));
        eng_block_iter_seek_lt(&it, "k1", 2);
        cr_expect(not(it.valid));
        cr_expect(eq(int, it.err, 0));
        eng_block_iter_fini(&it);
        free(content);
}

/* ---- memtables ---- */

static struct eng_memtable *memtable_of(const struct mver *v, size_t n)
{
        struct eng_memtable *mt = eng_memtable_new(NULL);
        uint8_t *buf = malloc(MODEL_MAX_VALUE);

        cr_assert(not(eq(ptr, mt, NULL)));
        /* In seq order, not key order: as writes come. */
        for (uint64_t seq = 1; seq <= n; seq++)
                for (size_t i = 0; i < n; i++)
                        if (v[i].seq == seq) {
                                struct eng_entry e;

                                mver_entry(&v[i], buf, &e);
                                cr_assert(eq(int, eng_memtable_put(mt, &e), 0));
                                break;
                        }
        free(buf);
        return mt;
}

static void expect_mt_at(const struct eng_memtable_iter *it, const struct mver *v, size_t i)
{
        struct eng_entry e;

        cr_assert(eng_memtable_iter_valid(it), "version %zu", i);
        eng_memtable_iter_entry(it, &e);
        expect_mver(&e, &v[i]);
}

Test(reverse, a_memtable_walk_down_is_the_forward_walk_reversed)
{
        for (uint64_t seed = 0; seed < 6; seed++) {
                size_t n;
                struct mver *v = versions(seed, 400 + seed * 300, seed % 2 ? 700 : 0, &n);
                struct eng_memtable *mt = memtable_of(v, n);
                struct eng_memtable_iter it;
                size_t i = 0;

                eng_memtable_iter_init(&it, mt);
                for (eng_memtable_iter_seek_first(&it); eng_memtable_iter_valid(&it);
                     eng_memtable_iter_next(&it))
                        expect_mt_at(&it, v, i++);
                cr_assert(eq(sz, i, n));
                eng_memtable_iter_seek_last(&it);
                while (i-- > 0) {
                        expect_mt_at(&it, v, i);
                        eng_memtable_iter_prev(&it);
                }
                cr_expect(not(eng_memtable_iter_valid(&it)));
                eng_memtable_unref(mt);
                free(v);
        }
}

Test(reverse, memtable_seek_lt_lands_below_every_boundary_and_prev_goes_on)
{
        size_t n;
        struct mver *v = versions(3, 900, 300, &n);
        struct eng_memtable *mt = memtable_of(v, n);
        struct eng_memtable_iter it;
        char buf[16];

        eng_memtable_iter_init(&it, mt);
        for (size_t t = 0; t < N_TARGETS; t++) {
                size_t tl = target(t, buf), want = model_lt(v, n, buf, tl);

                eng_memtable_iter_seek_lt(&it, buf, (uint32_t)tl);
                if (want == n) {
                        cr_expect(not(eng_memtable_iter_valid(&it)), "target %zu", t);
                        continue;
                }
                for (size_t i = want, steps = 0; steps < 4 && i < n; steps++, i--) {
                        expect_mt_at(&it, v, i);
                        eng_memtable_iter_prev(&it);
                }
        }
        /* Mixed: a forward seek to each version, prev, next. */
        for (size_t i = 0; i < n; i++) {
                eng_memtable_iter_seek_version(&it, model_keys[v[i].key], model_key_lens[v[i].key],
                                               v[i].seq);
                expect_mt_at(&it, v, i);
                eng_memtable_iter_prev(&it);
                if (i == 0) {
                        cr_expect(not(eng_memtable_iter_valid(&it)));
                        continue;
                }
                expect_mt_at(&it, v, i - 1);
                eng_memtable_iter_next(&it);
                expect_mt_at(&it, v, i);
        }
        eng_memtable_unref(mt);
        free(v);
}

Test(reverse, an_empty_memtable_and_versions_put_while_walking_down)
{
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_memtable_iter it;
        struct eng_entry e = { .key = (const uint8_t *)"b", .key_len = 1, .seq = 1,
                               .kind = ENG_ENTRY_VALUE };

        eng_memtable_iter_init(&it, mt);
        eng_memtable_iter_seek_last(&it);
        cr_expect(not(eng_memtable_iter_valid(&it)));
        eng_memtable_iter_seek_lt(&it, "z", 1);
        cr_expect(not(eng_memtable_iter_valid(&it)));
        cr_assert(eq(int, eng_memtable_put(mt, &e), 0));
        eng_memtable_iter_seek_last(&it);
        cr_assert(eng_memtable_iter_valid(&it));
        /* A version put below the iterator is seen by its prev. */
        e = (struct eng_entry){ .key = (const uint8_t *)"a", .key_len = 1, .seq = 2,
                                .kind = ENG_ENTRY_VALUE };
        cr_assert(eq(int, eng_memtable_put(mt, &e), 0));
        eng_memtable_iter_prev(&it);
        cr_assert(eng_memtable_iter_valid(&it));
        eng_memtable_iter_entry(&it, &e);
        cr_expect(eq(u64, e.seq, 2));
        eng_memtable_iter_prev(&it);
        cr_expect(not(eng_memtable_iter_valid(&it)));
        eng_memtable_unref(mt);
}

/* ---- SSTables ---- */

/* Writes v[0..n) as table id with the given restart interval (small data
 * blocks of 4 KiB) and opens it. */
static struct eng_sst_table *table_make(uint64_t id, const struct mver *v, size_t n,
                                        unsigned interval)
{
        static struct model_src x;
        char path[PATH_MAX + 32];
        struct eng_sst_write_opts o = { .path = path,
                                        .table = { .file_id = id, .restart_interval = interval } };
        struct model_wait mw = { 0 };
        struct eng_sst_write *w;
        uint64_t size;

        model_sst_path(path, dir, id);
        x = (struct model_src){ .s = { .next = model_src_next }, .v = v, .n = n };
        cr_assert(eq(int, eng_sst_write_start(fs, &o, &x.s, model_on_write, &mw, &w), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mw.done), 0));
        cr_assert(eq(int, mw.res, 0));
        size = eng_sst_write_file_size(w);
        eng_sst_write_free(w);
        mw = (struct model_wait){ 0 };
        cr_assert(eq(int, eng_sst_table_open(fs, cache, path, id, size, model_on_open, &mw), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mw.done), 0));
        cr_assert(eq(int, mw.res, 0));
        return mw.t;
}

static void on_move(struct eng_sst_iter *it, int res, void *arg)
{
        (void)it;
        engine_test_move_done(arg, res);
}

#define MOVE(call)                                                                    \
        __extension__({                                                               \
                struct engine_test_move mw_ = { 0 };                                  \
                engine_test_move_finish(loop, (call), &mw_);                          \
        })
#define SEEK_LAST(it) MOVE(eng_sst_iter_seek_last((it), on_move, &mw_))
#define SEEK_LT(it, k, l) MOVE(eng_sst_iter_seek_lt((it), (k), (l), on_move, &mw_))
#define PREV(it) MOVE(eng_sst_iter_prev((it), on_move, &mw_))
#define NEXT(it) MOVE(eng_sst_iter_next((it), on_move, &mw_))
#define SEEK(it, k, l, s) MOVE(eng_sst_iter_seek((it), (k), (l), (s), on_move, &mw_))
#define SEEK_FIRST(it) MOVE(eng_sst_iter_seek_first((it), on_move, &mw_))

static void expect_sst_at(const struct eng_sst_iter *it, const struct mver *v, size_t i)
{
        struct eng_entry e;

        cr_assert(eng_sst_iter_is_valid(it), "version %zu", i);
        eng_sst_iter_entry(it, &e);
        expect_mver(&e, &v[i]);
}

static uint32_t n_blocks(struct eng_sst_table *t)
{
        return eng_sst_reader_n_blocks(eng_sst_table_reader(t));
}

Test(reverse, an_sstable_walk_down_is_the_model_reversed_cold_and_warm)
{
        static const unsigned intervals[] = { 1, 3, 16 };

        for (uint64_t seed = 0; seed < 6; seed++) {
                size_t n;
                struct mver *v = versions(seed + 10, 1500 + seed * 200, seed % 2 ? 600 : 0, &n);
                struct eng_sst_table *t = table_make(seed + 1, v, n, intervals[seed % 3]);
                struct eng_sst_iter *it;
                int r;

                cr_assert(gt(u32, n_blocks(t), 20));
                cr_assert(eq(int, eng_sst_iter_new(t, &it), 0));
                for (int pass = 0; pass < 2; pass++) {  /* cold, then warm */
                        engine_test_moves_waited = 0;
                        r = SEEK_LAST(it);
                        for (size_t i = n; i-- > 0;) {
                                cr_assert(eq(int, r, 1), "version %zu", i);
                                expect_sst_at(it, v, i);
                                r = PREV(it);
                        }
                        cr_expect(eq(int, r, 0));
                        cr_expect(not(eng_sst_iter_is_valid(it)));
                        if (pass == 0)
                                cr_expect(gt(u32, engine_test_moves_waited, 0), "cold reads");
                        else
                                cr_expect(eq(u32, engine_test_moves_waited, 0), "warm");
                }
                eng_sst_iter_free(it);
                eng_sst_table_unref(t);
                eng_block_cache_erase_file(cache, seed + 1);
                free(v);
        }
}

Test(reverse, sstable_seek_lt_lands_below_every_boundary_and_moves_mix)
{
        size_t n;
        struct mver *v = versions(21, 2500, 500, &n);
        struct eng_sst_table *t = table_make(1, v, n, 4);
        struct eng_sst_iter *it;
        char buf[16];

        cr_assert(eq(int, eng_sst_iter_new(t, &it), 0));
        for (size_t t_ = 0; t_ < N_TARGETS; t_++) {
                size_t tl = target(t_, buf), want = model_lt(v, n, buf, tl);
                int r = SEEK_LT(it, buf, tl);

                if (want == n) {
                        cr_expect(eq(int, r, 0), "target %zu", t_);
                        continue;
                }
                for (size_t i = want, steps = 0; steps < 4 && i < n; steps++, i--) {
                        cr_assert(eq(int, r, 1), "target %zu step %zu", t_, steps);
                        expect_sst_at(it, v, i);
                        r = PREV(it);
                }
        }
        /* Forward seek to every version, then prev and next: every block
         * boundary is crossed both ways. */
        eng_block_cache_erase_file(cache, 1);
        for (size_t i = 0; i < n; i++) {
                cr_assert(eq(int, SEEK(it, model_keys[v[i].key], model_key_lens[v[i].key],
                                       v[i].seq), 1));
                expect_sst_at(it, v, i);
                if (i == 0) {
                        cr_expect(eq(int, PREV(it), 0));
                        continue;
                }
                cr_assert(eq(int, PREV(it), 1));
                expect_sst_at(it, v, i - 1);
                cr_assert(eq(int, NEXT(it), 1));
                expect_sst_at(it, v, i);
        }
        eng_sst_iter_free(it);
        eng_sst_table_unref(t);
        free(v);
}

struct damage_log {
        unsigned calls;
        struct eng_sst_damage last;
};

static void on_damage(void *arg, const struct eng_sst_damage *d)
{
        struct damage_log *l = arg;

        l->calls++;
        l->last = *d;
}

/* The versions a forward scan that skips damage yields: their indexes in
 * v into out; returns the count. */
static size_t forward_skipping(struct eng_sst_table *t, const struct mver *v, size_t n, size_t *out)
{
        struct eng_sst_iter *it;
        size_t k = 0, i = 0;
        int r;

        cr_assert(eq(int, eng_sst_iter_new(t, &it), 0));
        eng_sst_iter_on_damage(it, true, NULL, NULL);
        for (r = SEEK_FIRST(it); r == 1; r = NEXT(it)) {
                struct eng_entry e;

                eng_sst_iter_entry(it, &e);
                while (i < n && v[i].seq != e.seq)
                        i++;
                cr_assert(lt(sz, i, n));
                expect_mver(&e, &v[i]);
                out[k++] = i++;
        }
        cr_assert(eq(int, r, 0));
        eng_sst_iter_free(it);
        return k;
}

Test(reverse, a_damaged_block_is_skipped_or_reported_walking_down)
{
        size_t n, *vis = calloc(4000, sizeof(*vis)), n_vis, gap = 0, k;
        struct mver *v = versions(5, 2000, 200, &n);
        struct eng_sst_table *t = table_make(1, v, n, 16);
        const uint32_t bad = n_blocks(t) / 2;
        struct eng_sst_handle h = eng_sst_reader_block(eng_sst_table_reader(t), bad);
        struct damage_log dl = { 0 };
        struct eng_sst_iter *it;
        char path[PATH_MAX + 32], buf[16];
        int r;

        model_sst_path(path, dir, 1);
        engine_test_flip_byte(path, h.offset + 100);
        n_vis = forward_skipping(t, v, n, vis);
        cr_assert(lt(sz, n_vis, n), "the forward scan skipped the block");
        while (gap < n_vis && vis[gap] == gap)
                gap++;          /* vis[gap - 1] is the last version before the block */

        /* Skipping: the forward scan reversed, the damage named. */
        cr_assert(eq(int, eng_sst_iter_new(t, &it), 0));
        eng_sst_iter_on_damage(it, true, on_damage, &dl);
        r = SEEK_LAST(it);
        for (k = n_vis; k-- > 0;) {
                cr_assert(eq(int, r, 1), "visible %zu", k);
                expect_sst_at(it, v, vis[k]);
                r = PREV(it);
        }
        cr_expect(eq(int, r, 0));
        cr_expect(eq(u32, dl.calls, 1));
        cr_expect(eq(u32, dl.last.block, bad));
        cr_expect(eq(u64, dl.last.offset, h.offset));
        /* Seeks below every boundary match the visible versions. */
        for (size_t t_ = 0; t_ < N_TARGETS; t_++) {
                size_t tl = target(t_, buf);

                k = n_vis;
                while (k > 0 && model_key_cmp(v[vis[k - 1]].key, buf, tl) >= 0)
                        k--;
                r = SEEK_LT(it, buf, tl);
                if (k == 0) {
                        cr_expect(eq(int, r, 0), "target %zu", t_);
                        continue;
                }
                cr_assert(eq(int, r, 1), "target %zu", t_);
                expect_sst_at(it, v, vis[k - 1]);
        }
        eng_sst_iter_free(it);

        /* Not skipping: the walk down yields the versions after the block,
         * then fails on it. */
        cr_assert(eq(int, eng_sst_iter_new(t, &it), 0));
        k = n_vis;
        for (r = SEEK_LAST(it); r == 1; r = PREV(it), k--) {
                cr_assert(gt(sz, k, gap), "past the damaged block");
                expect_sst_at(it, v, vis[k - 1]);
        }
        cr_expect(eq(int, r, -SCREE_ECORRUPT));
        cr_expect(eq(sz, k, gap), "every version after the block came first");
        cr_expect(not(eng_sst_iter_is_valid(it)));
        eng_sst_iter_free(it);
        eng_sst_table_unref(t);
        free(v);
        free(vis);
}

static uint64_t misses(void)
{
        return eng_block_cache_stats(cache)->misses;
}

Test(reverse, walking_down_reads_the_block_below_ahead_and_a_pending_free_never_calls_back)
{
        size_t n, i;
        struct mver *v = versions(8, 2000, 0, &n);
        struct eng_sst_table *t = table_make(1, v, n, 16);
        const uint32_t nb = n_blocks(t);
        struct engine_test_move mw = { 0 };
        struct eng_sst_iter *it;
        uint64_t m0 = misses();

        cr_assert(eq(int, eng_sst_iter_new(t, &it), 0));
        engine_test_moves_waited = 0;
        cr_assert(eq(int, SEEK_LAST(it), 1));
        cr_expect(eq(u32, engine_test_moves_waited, 1));
        cr_expect(eq(u64, misses() - m0, 2), "the last block, and the one below ahead");
        cr_assert(ge(int, engine_test_read_block(loop, t, nb - 2), 0)); /* it has landed */
        /* Down through the last block into the one below without waiting;
         * entering it starts the read of the next one down. */
        engine_test_moves_waited = 0;
        m0 = misses();
        for (i = n - 1; misses() == m0; i--) {
                cr_assert(gt(sz, i, 0), "never left the last block");
                expect_sst_at(it, v, i);
                cr_assert(eq(int, PREV(it), 1));
        }
        cr_expect(eq(u32, engine_test_moves_waited, 0));
        cr_expect(eq(u64, misses() - m0, 1), "block %u ahead", nb - 3);
        cr_assert(ge(int, engine_test_read_block(loop, t, nb - 3), 0));
        eng_sst_iter_free(it);

        /* Freed while its read is pending: the read completes, the block
         * goes back, no callback. */
        eng_block_cache_erase_file(cache, 1);
        cr_assert(eq(int, eng_sst_iter_new(t, &it), 0));
        cr_assert(eq(int, eng_sst_iter_seek_last(it, on_move, &mw), ENG_SST_PENDING));
        eng_sst_iter_free(it);
        cr_assert(ge(int, engine_test_read_block(loop, t, nb - 1), 0));
        cr_assert(ge(int, engine_test_read_block(loop, t, nb - 2), 0));
        cr_expect(eq(int, mw.calls, 0));
        cr_expect(eq(u64, eng_block_cache_stats(cache)->pins, 0));
        eng_sst_table_unref(t);
        free(v);
}
