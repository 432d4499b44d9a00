/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The k-way merge (engine/merge_iter.h) over memtables, SSTables on real
 * files and fake children that call back from loop timers, checked
 * against a model (tests/engine/model.h): over many random seeds, full
 * scans in every view (raw, user, compaction above and at the bottom),
 * seeks, and paged user scans with an end key, warm and with a cold
 * cache; tombstones and expiry in each view; a seek waiting for every
 * pending child; child and read errors; freeing mid-scan, while pending
 * and from the callback, with every block pin given back.
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
#include "base/time.h"
#include "engine/fault_fs.h"
#include "engine/merge_iter.h"
#include "engine/sst_io.h"
#include "tests/engine/helpers.h"
#include "tests/engine/merge_world.h"
#include "tests/engine/model.h"
#include "tests/tmpdir.h"

enum {
        MAX_PER_CHILD = 400,
};

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "merge_iter");
        engine_test_io_init(&loop, &fs, &cache, 8 << 20);
        model_keys_init();
}

static uint64_t pins(void)
{
        return eng_block_cache_stats(cache)->pins;
}

static void teardown(void)
{
        engine_test_io_fini(loop, fs, cache);
        tmpdir_remove(dir);
}

TestSuite(merge_iter, .init = setup, .fini = teardown, .timeout = 120);

/* ---- a world: one seed's children and the model of all their versions ---- */

/* n_mt memtables, n_sst tables and n_fake fakes over random versions
 * with unique seqs spread among them (an empty "table" is a memtable). */
static void world_make(uint64_t seed, unsigned n_mt, unsigned n_sst, unsigned n_fake)
{
        uint64_t rng = seed * 7919 + 1, *seqs;
        size_t counts[MAX_CHILDREN], total = 0, at = 0;

        w.n_children = n_mt + n_sst + n_fake;
        cr_assert(le(u32, w.n_children, MAX_CHILDREN));
        for (unsigned i = 0; i < w.n_children; i++) {
                counts[i] = model_rand(&rng) % 8 == 0 ? 0 : 1 + model_rand(&rng) % MAX_PER_CHILD;
                total += counts[i];
        }
        seqs = model_shuffled_seqs(&rng, total);
        w.all = calloc(total + 1, sizeof(*w.all));
        w.want = calloc(total + 1, sizeof(*w.want));
        for (unsigned i = 0; i < w.n_children; i++) {
                struct child *c = &w.c[i];

                *c = (struct child){ .kind = i < n_mt ? CHILD_MEMTABLE :
                                             i < n_mt + n_sst ? CHILD_SST : CHILD_FAKE,
                                     .n = counts[i] };
                c->v = calloc(c->n + 1, sizeof(*c->v));
                model_gen(&rng, seqs + at, c->n, c->v);
                memcpy(w.all + at, c->v, c->n * sizeof(*c->v));
                at += c->n;
                child_load(c);
        }
        w.n = total;
        qsort(w.all, w.n, sizeof(*w.all), mver_cmp);
        free(seqs);
}

/* ---- driving moves ---- */

static void on_move(struct eng_merge_iter *m, int res, void *arg)
{
        (void)m;
        engine_test_move_done(arg, res);
}

static int seek_first(struct eng_merge_iter *m)
{
        struct engine_test_move mw = { 0 };

        return engine_test_move_finish(loop, eng_merge_iter_seek_first(m, on_move, &mw), &mw);
}

static int seek(struct eng_merge_iter *m, const void *key, size_t len)
{
        struct engine_test_move mw = { 0 };

        return engine_test_move_finish(loop, eng_merge_iter_seek(m, key, len, on_move, &mw), &mw);
}

static int next(struct eng_merge_iter *m)
{
        struct engine_test_move mw = { 0 };

        return engine_test_move_finish(loop, eng_merge_iter_next(m, on_move, &mw), &mw);
}

static void expect_at(struct eng_merge_iter *m, const struct mver *v)
{
        struct eng_entry e;

        cr_assert(eng_merge_iter_is_valid(m));
        eng_merge_iter_entry(m, &e);
        expect_mver(&e, v);
}

/* From the first entry (r, a move's result), the view's entries
 * all[want[0..n)] follow, then the end. */
static void expect_rest(struct eng_merge_iter *m, int r, const struct mver *all, const size_t *want,
                        size_t n)
{
        for (size_t i = 0; i < n; i++) {
                cr_assert(eq(int, r, 1), "entry %zu of %zu", i, n);
                expect_at(m, &all[want[i]]);
                r = next(m);
        }
        cr_assert(eq(int, r, 0));
        cr_assert(not(eng_merge_iter_is_valid(m)));
}

static const struct eng_merge_opts views[] = {
        { .view = ENG_MERGE_RAW },
        { .view = ENG_MERGE_USER, .now_ms = MODEL_NOW_MS },
        { .view = ENG_MERGE_COMPACT, .now_ms = MODEL_NOW_MS },
        { .view = ENG_MERGE_COMPACT, .now_ms = MODEL_NOW_MS, .bottommost = true },
};

/* ---- scans and seeks against the model ---- */

static void check_scan(const struct eng_merge_opts *o, bool cold, bool async_fakes)
{
        struct eng_merge_stats st;
        size_t n = model_view(w.all, w.n, o, w.want, &st);
        struct eng_merge_iter *m = merge_make(o, async_fakes);
        const struct eng_merge_stats *got = eng_merge_iter_stats(m);

        if (cold)
                cold_cache();
        expect_rest(m, seek_first(m), w.all, w.want, n);
        cr_expect(eq(u64, got->entries, st.entries));
        /* USER seeks past a key after ENG_MERGE_MAX_SKIPS of its
         * versions, and counts only those it stepped over. */
        if (o->view == ENG_MERGE_USER)
                cr_expect(le(u64, got->shadowed, st.shadowed));
        else
                cr_expect(eq(u64, got->shadowed, st.shadowed));
        cr_expect(eq(u64, got->tombstones, st.tombstones));
        cr_expect(eq(u64, got->expired, st.expired));
        eng_merge_iter_free(m);
        cr_expect(eq(u64, pins(), 0));
}

Test(merge_iter, full_scans_match_the_model_in_every_view_over_random_seeds)
{
        unsigned waited = 0;

        for (uint64_t seed = 0; seed < 24; seed++) {
                uint64_t rng = seed;

                world_make(seed, (unsigned)(model_rand(&rng) % 3), 1 + (unsigned)(model_rand(&rng) % 3),
                           (unsigned)(model_rand(&rng) % 2));
                engine_test_moves_waited = 0;
                for (size_t v = 0; v < ARRAY_SIZE(views); v++)
                        check_scan(&views[v], (seed + v) % 2 == 0, seed % 2 == 1);
                waited += engine_test_moves_waited > 0;
                world_free();
        }
        cr_expect(gt(u32, waited, 12), "cold caches and async fakes made moves wait");
}

/* A scan driven from its callbacks, as a shard drives one: each callback
 * goes on with next until a move waits. */
struct cb_scan {
        const size_t *want;
        size_t n, i;
        bool done;
        int res;
};

static void scan_on(struct eng_merge_iter *m, int r, void *arg)
{
        struct cb_scan *cs = arg;

        while (r == 1) {
                cr_assert(lt(sz, cs->i, cs->n));
                expect_at(m, &w.all[cs->want[cs->i++]]);
                r = eng_merge_iter_next(m, scan_on, cs);
        }
        if (r == ENG_SST_PENDING)
                return;
        cs->done = true;
        cs->res = r;
}

Test(merge_iter, a_scan_driven_from_its_callbacks_matches_the_model)
{
        for (uint64_t seed = 600; seed < 606; seed++) {
                struct eng_merge_stats st;
                size_t n;
                struct eng_merge_iter *m;
                struct cb_scan cs = { 0 };

                world_make(seed, 1, 3, 1);
                n = model_view(w.all, w.n, &views[1], w.want, &st);
                cs = (struct cb_scan){ .want = w.want, .n = n };
                m = merge_make(&views[1], true);
                cold_cache();
                scan_on(m, eng_merge_iter_seek_first(m, scan_on, &cs), &cs);
                cr_assert(eq(int, rx_loop_run_until(loop, &cs.done), 0));
                cr_expect(eq(int, cs.res, 0));
                cr_expect(eq(sz, cs.i, n));
                eng_merge_iter_free(m);
                world_free();
        }
}

/* A random seek target: a key, a key extended, before or after all. */
static size_t random_target(uint64_t *rng, char *buf)
{
        uint64_t r = model_rand(rng);
        uint32_t k = (uint32_t)(r % MODEL_KEYS);

        switch (r / MODEL_KEYS % 6) {
        case 0:
                return (size_t)snprintf(buf, 16, "%s0", model_keys[k]);
        case 1:
                buf[0] = r % 2 ? '~' : 'a';     /* after or before every key */
                return 1;
        default:
                memcpy(buf, model_keys[k], model_key_lens[k]);
                return model_key_lens[k];
        }
}

/* The first of want[0..n) whose key is >= target. */
static size_t lower_bound(const size_t *want, size_t n, const char *target, size_t len)
{
        size_t i = 0;

        while (i < n && model_key_cmp(w.all[want[i]].key, target, len) < 0)
                i++;
        return i;
}

Test(merge_iter, seeks_land_where_the_model_says_in_every_view)
{
        for (uint64_t seed = 100; seed < 110; seed++) {
                uint64_t rng = seed;

                world_make(seed, 1, 2 + (unsigned)(seed % 2), seed % 2);
                for (size_t v = 0; v < ARRAY_SIZE(views); v++) {
                        struct eng_merge_stats st;
                        size_t n = model_view(w.all, w.n, &views[v], w.want, &st);
                        struct eng_merge_iter *m = merge_make(&views[v], true);

                        for (int i = 0; i < 40; i++) {
                                char t[16];
                                size_t tl = random_target(&rng, t);
                                size_t at = lower_bound(w.want, n, t, tl);
                                size_t stop = at + 4 < n ? at + 4 : n;
                                int r;

                                if (i % 8 == 0)
                                        cold_cache();
                                r = seek(m, t, tl);
                                for (size_t j = at; j < stop; j++) {
                                        cr_assert(eq(int, r, 1), "seek %.*s", (int)tl, t);
                                        expect_at(m, &w.all[w.want[j]]);
                                        r = next(m);
                                }
                                if (stop == n)
                                        cr_assert(eq(int, r, 0), "seek %.*s", (int)tl, t);
                        }
                        eng_merge_iter_free(m);
                }
                world_free();
        }
}

/* The resume key: the current entry's key, copied into buf (16 bytes). */
static void next_key(struct eng_merge_iter *m, char *buf, size_t *ret_len)
{
        struct eng_entry e;

        eng_merge_iter_entry(m, &e);
        cr_assert(lt(u32, e.key_len, 16));
        memcpy(buf, e.key, e.key_len);
        *ret_len = e.key_len;
}

/* A user scan of [start, end) in pages of `limit`, each page starting
 * with a seek to the resume key the last one gave. */
static size_t paged_scan(const struct eng_merge_opts *o, const char *start, size_t start_len,
                         size_t limit, size_t *got)
{
        struct eng_merge_iter *m = merge_make(o, true);
        char resume[16];
        size_t resume_len = start_len, n = 0;
        int r;

        memcpy(resume, start, start_len);
        for (size_t page = 0; page <= w.n; page++) {
                r = seek(m, resume, resume_len);
                for (size_t taken = 0; r == 1 && taken < limit; taken++) {
                        struct eng_entry e;

                        eng_merge_iter_entry(m, &e);
                        got[n++] = e.seq;
                        r = next(m);
                }
                cr_assert(ge(int, r, 0));
                if (r == 0)
                        break;
                next_key(m, resume, &resume_len);
        }
        eng_merge_iter_free(m);
        return n;
}

Test(merge_iter, a_user_scan_stops_at_the_end_key_and_pages_resume_at_the_next_key)
{
        for (uint64_t seed = 200; seed < 212; seed++) {
                uint64_t rng = seed;
                char start[16], end[16];
                size_t start_len, end_len, n, n_got, from, *got;
                struct eng_merge_opts o = { .view = ENG_MERGE_USER, .now_ms = MODEL_NOW_MS };
                struct eng_merge_stats st;

                world_make(seed, 1, 2, 1);
                start_len = random_target(&rng, start);
                end_len = random_target(&rng, end);
                o.end_key = end;
                o.end_len = end_len;
                n = model_view(w.all, w.n, &o, w.want, &st);
                from = lower_bound(w.want, n, start, start_len);
                n -= from;
                memmove(w.want, w.want + from, n * sizeof(*w.want));
                got = calloc(w.n + 1, sizeof(*got));
                n_got = paged_scan(&o, start, start_len, 1 + (size_t)(model_rand(&rng) % 20), got);
                cr_assert(eq(sz, n_got, n), "seed %lu", (unsigned long)seed);
                for (size_t i = 0; i < n; i++)
                        cr_assert(eq(u64, got[i], w.all[w.want[i]].seq));
                free(got);
                world_free();
        }
}

/* ---- tombstones and expiry, by hand ---- */

Test(merge_iter, tombstones_and_expired_versions_in_each_view)
{
        /* Newest first: a memtable over an older table. */
        static const struct mver mt_v[] = {
                { .key = 1, .seq = 10, .kind = ENG_ENTRY_TOMBSTONE },
                { .key = 2, .seq = 11, .kind = ENG_ENTRY_VALUE, .expiry_ms = MODEL_NOW_MS },
                { .key = 3, .seq = 12, .kind = ENG_ENTRY_VALUE, .expiry_ms = MODEL_NOW_MS + 1,
                  .value_len = 3 },
                { .key = 4, .seq = 13, .kind = ENG_ENTRY_VALUE, .value_len = 4 },
        };
        static const struct mver sst_v[] = {
                { .key = 1, .seq = 1, .kind = ENG_ENTRY_VALUE, .value_len = 1 },
                { .key = 2, .seq = 2, .kind = ENG_ENTRY_VALUE, .value_len = 2 },
                { .key = 3, .seq = 3, .kind = ENG_ENTRY_VALUE, .value_len = 3 },
                { .key = 5, .seq = 4, .kind = ENG_ENTRY_TOMBSTONE },
                { .key = 6, .seq = 5, .kind = ENG_ENTRY_VALUE, .expiry_ms = 7, .value_len = 6 },
        };
        /* What each view yields, by seq, and its counters: shadowed,
         * tombstones, expired. */
        static const struct {
                uint64_t seqs[10];
                size_t n;
                uint64_t shadowed, tombstones, expired;
        } want[] = {
                { { 10, 1, 11, 2, 12, 3, 13, 4, 5 }, 9, 0, 0, 0 },
                { { 12, 13 }, 2, 3, 2, 2 },
                { { 10, 11, 12, 13, 4, 5 }, 6, 3, 0, 0 },
                { { 12, 13 }, 2, 3, 2, 2 },
        };

        w.n_children = 2;
        w.c[0] = (struct child){ .kind = CHILD_MEMTABLE, .n = ARRAY_SIZE(mt_v) };
        w.c[1] = (struct child){ .kind = CHILD_SST, .n = ARRAY_SIZE(sst_v) };
        for (int i = 0; i < 2; i++) {
                w.c[i].v = calloc(w.c[i].n, sizeof(struct mver));
                memcpy(w.c[i].v, i ? sst_v : mt_v, w.c[i].n * sizeof(struct mver));
                child_load(&w.c[i]);
        }
        for (size_t v = 0; v < ARRAY_SIZE(views); v++) {
                struct eng_merge_iter *m = merge_make(&views[v], false);
                const struct eng_merge_stats *st = eng_merge_iter_stats(m);
                int r = seek_first(m);

                for (size_t i = 0; i < want[v].n; i++) {
                        struct eng_entry e;

                        cr_assert(eq(int, r, 1), "view %zu entry %zu", v, i);
                        eng_merge_iter_entry(m, &e);
                        cr_expect(eq(u64, e.seq, want[v].seqs[i]), "view %zu entry %zu", v, i);
                        r = next(m);
                }
                cr_expect(eq(int, r, 0), "view %zu", v);
                cr_expect(eq(u64, st->entries, want[v].n), "view %zu", v);
                cr_expect(eq(u64, st->shadowed, want[v].shadowed), "view %zu", v);
                cr_expect(eq(u64, st->tombstones, want[v].tombstones), "view %zu", v);
                cr_expect(eq(u64, st->expired, want[v].expired), "view %zu", v);
                eng_merge_iter_free(m);
        }
        world_free();
}

/* n versions of key, seqs [seq0, seq0 + n) newest first, then one
 * version of other at seq other_seq. */
static void hot_child(struct child *c, enum child_kind kind, uint32_t key, uint64_t seq0, size_t n,
                      uint32_t other, uint64_t other_seq)
{
        *c = (struct child){ .kind = kind, .n = n + 1 };
        c->v = calloc(n + 1, sizeof(*c->v));
        for (size_t i = 0; i < n; i++)
                c->v[i] = (struct mver){ .key = key, .seq = seq0 + n - 1 - i,
                                         .kind = ENG_ENTRY_VALUE, .value_len = 40 };
        c->v[n] = (struct mver){ .key = other, .seq = other_seq, .kind = ENG_ENTRY_VALUE,
                                 .value_len = 7 };
        if (kind != CHILD_FAKE)
                child_load(c);
}

Test(merge_iter, a_user_scan_seeks_past_a_hot_key_instead_of_stepping_over_its_versions)
{
        /* Key 1 has 500 versions in a memtable, 300 in a table (many
         * blocks, read cold) and 200 in a fake, down to seq 0; each child
         * then holds one other key. */
        static const uint64_t want_seqs[] = { 1499, 5000, 5001, 5002 };
        struct eng_merge_opts user = { .view = ENG_MERGE_USER, .now_ms = MODEL_NOW_MS };
        struct eng_merge_iter *m;
        const struct eng_merge_stats *st;
        struct fake *f;
        int r;

        w.n_children = 3;
        hot_child(&w.c[0], CHILD_MEMTABLE, 1, 1000, 500, 2, 5000);
        hot_child(&w.c[1], CHILD_SST, 1, 500, 300, 3, 5001);
        hot_child(&w.c[2], CHILD_FAKE, 1, 0, 200, 4, 5002);
        cold_cache();
        cr_assert(eq(int, eng_merge_iter_new(&user, &m), 0));
        cr_assert(eq(int, eng_merge_iter_add_memtable(m, w.c[0].mt), 0));
        cr_assert(eq(int, eng_merge_iter_add_sst(m, w.c[1].t), 0));
        f = fake_add(loop, m, w.c[2].v, w.c[2].n, false, 0);
        st = eng_merge_iter_stats(m);
        r = seek_first(m);
        for (size_t i = 0; i < ARRAY_SIZE(want_seqs); i++) {
                struct eng_entry e;

                cr_assert(eq(int, r, 1), "entry %zu", i);
                eng_merge_iter_entry(m, &e);
                cr_expect(eq(u64, e.seq, want_seqs[i]), "entry %zu", i);
                r = next(m);
        }
        cr_expect(eq(int, r, 0));
        /* Stepped over: ENG_MERGE_MAX_SKIPS of the memtable's, then one
         * version of each child before its seek, and the fake's seq 0,
         * which a seek to seq 0 lands on. */
        cr_expect(eq(u64, st->shadowed, ENG_MERGE_MAX_SKIPS + 4));
        cr_expect(eq(u32, f->seeks, 1));
        cr_expect(le(u32, f->nexts, 2));        /* off seq 0, off key 4 */
        eng_merge_iter_free(m);

        /* A compaction keeps stepping: its counters stay exact. */
        struct eng_merge_opts compact = { .view = ENG_MERGE_COMPACT, .now_ms = MODEL_NOW_MS };

        cr_assert(eq(int, eng_merge_iter_new(&compact, &m), 0));
        cr_assert(eq(int, eng_merge_iter_add_memtable(m, w.c[0].mt), 0));
        cr_assert(eq(int, eng_merge_iter_add_sst(m, w.c[1].t), 0));
        f = fake_add(loop, m, w.c[2].v, w.c[2].n, false, 0);
        st = eng_merge_iter_stats(m);
        for (r = seek_first(m); r == 1; r = next(m))
                ;
        cr_expect(eq(int, r, 0));
        cr_expect(eq(u64, st->entries, 4));
        cr_expect(eq(u64, st->shadowed, 999));
        cr_expect(eq(u32, f->seeks, 0));
        eng_merge_iter_free(m);
        world_free();
}

/* A table of keys first..first+n-1, one version each. */
static void run_child(struct child *c, uint32_t first, size_t n)
{
        *c = (struct child){ .kind = CHILD_SST, .n = n };
        c->v = calloc(n, sizeof(*c->v));
        for (size_t i = 0; i < n; i++)
                c->v[i] = (struct mver){ .key = first + (uint32_t)i, .seq = 1 + first + i,
                                         .kind = ENG_ENTRY_VALUE, .value_len = 300 };
        child_load(c);
}

/* Two tables side by side, as sequential loads leave them: a seek into the
 * first puts off the second's until the scan gets there, and a scan that
 * ends before it never reads it. */
Test(merge_iter, a_table_above_the_seek_is_not_read_until_the_scan_reaches_it)
{
        struct eng_merge_opts o = { .view = ENG_MERGE_USER, .now_ms = MODEL_NOW_MS };
        const struct eng_merge_stats *st;
        struct eng_merge_iter *m;
        uint32_t k = 110;
        int r;

        w.n_children = 2;
        run_child(&w.c[0], 130, 30);    /* newest first: the upper run */
        run_child(&w.c[1], 100, 30);
        cold_cache();
        m = merge_make(&o, false);
        st = eng_merge_iter_stats(m);
        r = seek(m, model_keys[k], model_key_lens[k]);
        cr_expect(eq(u64, st->lazy, 1));
        for (; k < 160; k++) {
                cr_assert(eq(int, r, 1), "key %u", k);
                expect_at(m, &w.c[k < 130].v[(k - 100) % 30]);
                cr_expect(eq(u64, st->woken, k >= 130), "key %u", k);
                r = next(m);
        }
        cr_expect(eq(int, r, 0));
        eng_merge_iter_free(m);

        /* Ending at k125: the upper run is never read. */
        cold_cache();
        o.end_key = model_keys[125];
        o.end_len = model_key_lens[125];
        m = merge_make(&o, false);
        st = eng_merge_iter_stats(m);
        for (k = 110, r = seek(m, model_keys[k], model_key_lens[k]); r == 1; k++, r = next(m))
                expect_at(m, &w.c[1].v[k - 100]);
        cr_expect(eq(int, r, 0));
        cr_expect(eq(u32, k, 125));
        cr_expect(eq(u64, st->woken, 0));
        cr_expect(eq(ptr, eng_block_cache_get(cache, w.c[0].file_id, 0), NULL),
                  "the upper run's first block was read");
        /* A seek below both puts off both; the lower one wakes first. */
        cr_assert(eq(int, seek(m, "a", 1), 1));
        cr_expect(eq(u64, st->lazy, 3));
        cr_expect(eq(u64, st->woken, 1));
        expect_at(m, &w.c[1].v[0]);
        eng_merge_iter_free(m);
        world_free();
}

/* The end key's compare is left out for children that lie wholly below
 * it: the scan still stops right before an end equal to a table's
 * largest key, inside it, and just above it (every key then), and where
 * one of two tables reaches the end. */
Test(merge_iter, an_end_at_inside_or_above_a_table_stops_right_before_it)
{
        static const uint32_t ends[] = { 129, 115, 130, 100 };
        struct eng_merge_opts o = { .view = ENG_MERGE_USER, .now_ms = MODEL_NOW_MS };

        w.n_children = 1;
        run_child(&w.c[0], 100, 30);            /* keys 100..129 */
        for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
                struct eng_merge_iter *m;
                uint32_t k = 100;
                int r;

                o.end_key = model_keys[ends[i]];
                o.end_len = model_key_lens[ends[i]];
                m = merge_make(&o, false);
                for (r = seek(m, model_keys[k], model_key_lens[k]); r == 1; k++, r = next(m))
                        expect_at(m, &w.c[0].v[k - 100]);
                cr_expect(eq(int, r, 0));
                cr_expect(eq(u32, k, ends[i]), "end %u", ends[i]);
                eng_merge_iter_free(m);
        }
        world_free();

        /* Two tables, only one reaching the end (k130), added in either
         * order: the one that does decides. */
        o.end_key = model_keys[130];
        o.end_len = model_key_lens[130];
        for (unsigned upper = 0; upper < 2; upper++) {
                struct eng_merge_iter *m;
                uint32_t k = 100;
                int r;

                w.n_children = 2;
                run_child(&w.c[upper], 120, 20);        /* keys 120..139 */
                run_child(&w.c[!upper], 100, 20);       /* keys 100..119 */
                m = merge_make(&o, false);
                for (r = seek(m, model_keys[k], model_key_lens[k]); r == 1; k++, r = next(m))
                        expect_at(m, &w.c[k < 120 ? !upper : upper].v[(k - 100) % 20]);
                cr_expect(eq(int, r, 0));
                cr_expect(eq(u32, k, 130), "upper table added %s", upper ? "second" : "first");
                eng_merge_iter_free(m);
                world_free();
        }
}

Test(merge_iter, bad_views_are_refused_and_the_end_key_is_copied)
{
        struct eng_merge_opts o = { .view = ENG_MERGE_VIEW_INVALID };
        static const struct mver v[] = {
                { .key = 1, .seq = 3, .kind = ENG_ENTRY_VALUE },
                { .key = 2, .seq = 2, .kind = ENG_ENTRY_VALUE },
                { .key = 3, .seq = 1, .kind = ENG_ENTRY_VALUE },
        };
        struct eng_merge_iter *m;
        char end[4] = "k3";

        cr_expect(eq(int, eng_merge_iter_new(&o, &m), -EINVAL));
        o.view = ENG_MERGE_VIEW_MAX;
        cr_expect(eq(int, eng_merge_iter_new(&o, &m), -EINVAL));
        o = (struct eng_merge_opts){ .view = ENG_MERGE_USER, .end_key = end, .end_len = 2 };
        cr_assert(eq(int, eng_merge_iter_new(&o, &m), 0));
        end[1] = '9';                   /* the merge kept "k3" */
        fake_add(loop, m, v, ARRAY_SIZE(v), false, 0);
        cr_assert(eq(int, seek_first(m), 1));
        cr_assert(eq(int, next(m), 1));
        cr_expect(eq(int, next(m), 0), "k3 is the end");
        eng_merge_iter_free(m);
        eng_merge_iter_free(NULL);

        /* An empty end key ends before everything. */
        o.end_len = 0;
        cr_assert(eq(int, eng_merge_iter_new(&o, &m), 0));
        fake_add(loop, m, v, ARRAY_SIZE(v), false, 0);
        cr_expect(eq(int, seek_first(m), 0));
        eng_merge_iter_free(m);
        cr_expect(eq(u32, fake_frees, 2));
}

enum { LONG_CHILDREN = 9, LONG_KEYS = 40, LONG_KEY_LEN = 200 };

/* Key i of the long-key tests: 200 bytes, alike but for the last 4. */
static void long_key(unsigned i, uint8_t *k)
{
        char digits[8];

        memset(k, 'x', LONG_KEY_LEN - 4);
        snprintf(digits, sizeof(digits), "%04u", i % 10000);
        memcpy(k + LONG_KEY_LEN - 4, digits, 4);
}

/* The newest child holding key i: child c holds every (1 + c % 3)th key
 * from c % 3 on, at seq c * 100 + i + 1. */
static unsigned long_newest(unsigned i)
{
        unsigned newest = 0;

        for (unsigned c = 0; c < LONG_CHILDREN; c++)
                if (i >= c % 3 && (i - c % 3) % (1 + c % 3) == 0)
                        newest = c;
        return newest;
}

/* The merge m over 9 memtables (mt) of long keys. */
static void long_world(struct eng_merge_iter *m, struct eng_memtable **mt)
{
        uint8_t k[LONG_KEY_LEN];

        for (unsigned c = 0; c < LONG_CHILDREN; c++) {
                cr_assert(not(eq(ptr, mt[c] = eng_memtable_new(NULL), NULL)));
                for (unsigned i = c % 3; i < LONG_KEYS; i += 1 + c % 3) {
                        /* child c holds key i at seq c * 100 + i: higher c, newer */
                        uint8_t v = (uint8_t)c;
                        struct eng_entry e = { .key = k, .key_len = sizeof(k), .value = &v,
                                               .value_len = 1, .seq = c * 100u + i + 1,
                                               .kind = ENG_ENTRY_VALUE };

                        long_key(i, k);
                        cr_assert(eq(int, eng_memtable_put(mt[c], &e), 0));
                }
                cr_assert(eq(int, eng_merge_iter_add_memtable(m, mt[c]), 0));
        }
}

/* The merge stands on key i's newest version (r: its move's result). */
static void expect_long(struct eng_merge_iter *m, int r, unsigned i)
{
        uint8_t k[LONG_KEY_LEN];
        struct eng_entry e;

        cr_assert(eq(int, r, 1), "key %u", i);
        eng_merge_iter_entry(m, &e);
        long_key(i, k);
        cr_assert(eq(u32, e.key_len, LONG_KEY_LEN));
        cr_assert(eq(int, memcmp(e.key, k, LONG_KEY_LEN), 0), "key %u", i);
        cr_assert(eq(u8, e.value[0], (uint8_t)long_newest(i)), "key %u", i);
}

static void long_world_free(struct eng_merge_iter *m, struct eng_memtable **mt)
{
        eng_merge_iter_free(m);
        for (unsigned c = 0; c < LONG_CHILDREN; c++)
                eng_memtable_unref(mt[c]);
}

/* More children than the merge holds inline, and keys longer than the
 * key it remembers inline: every key once, newest version first, its
 * older versions in other children stepped over. */
Test(merge_iter, many_children_and_long_keys_outgrow_the_inline_buffers)
{
        struct eng_merge_opts o = { .view = ENG_MERGE_USER };
        struct eng_memtable *mt[LONG_CHILDREN];
        struct eng_merge_iter *m;
        int r;

        cr_assert(eq(int, eng_merge_iter_new(&o, &m), 0));
        long_world(m, mt);
        r = seek_first(m);
        for (unsigned i = 0; i < LONG_KEYS; i++, r = next(m))
                expect_long(m, r, i);
        cr_expect(eq(int, r, 0));
        long_world_free(m, mt);
}

/* The same walking down, to a long start key kept in the merge's own
 * allocation. */
Test(merge_iter, many_children_and_long_keys_outgrow_the_inline_buffers_in_reverse)
{
        struct eng_merge_opts o = { .view = ENG_MERGE_USER, .reverse = true };
        struct eng_memtable *mt[LONG_CHILDREN];
        struct eng_merge_iter *m;
        struct engine_test_move mw = { 0 };
        uint8_t start[LONG_KEY_LEN];
        int r;

        long_key(10, start);
        o.start_key = start;
        o.start_len = sizeof(start);
        cr_assert(eq(int, eng_merge_iter_new(&o, &m), 0));
        memset(start, 0, sizeof(start));        /* the merge kept its copy */
        long_world(m, mt);
        r = engine_test_move_finish(loop, eng_merge_iter_seek_last(m, on_move, &mw), &mw);
        for (unsigned i = LONG_KEYS; i-- > 10;) {
                expect_long(m, r, i);
                mw = (struct engine_test_move){ 0 };
                r = engine_test_move_finish(loop, eng_merge_iter_prev(m, on_move, &mw), &mw);
        }
        cr_expect(eq(int, r, 0), "key 10 was the start");
        long_world_free(m, mt);
}

/* ---- waiting, errors, freeing ---- */

struct snapshot_wait {
        struct engine_test_move mw;
        unsigned completions;           /* fake completions when the callback ran */
};

static void on_move_snapshot(struct eng_merge_iter *m, int res, void *arg)
{
        struct snapshot_wait *sw = arg;

        sw->completions = fake_completions;
        on_move(m, res, &sw->mw);
}

static const struct mver three[] = {
        { .key = 1, .seq = 30, .kind = ENG_ENTRY_VALUE, .value_len = 5 },
        { .key = 2, .seq = 20, .kind = ENG_ENTRY_VALUE, .value_len = 5 },
        { .key = 3, .seq = 10, .kind = ENG_ENTRY_VALUE, .value_len = 5 },
};

Test(merge_iter, a_seek_waits_for_every_pending_child_and_calls_back_once)
{
        struct eng_merge_opts o = { .view = ENG_MERGE_RAW };
        struct snapshot_wait sw = { 0 };
        struct eng_merge_iter *m;
        struct eng_merge_stats st;
        struct mver *all;
        size_t n = 0, *want;

        world_make(300, 0, 3, 0);
        m = merge_make(&o, true);
        fake_add(loop, m, &three[2], 1, true, 3 * NS_PER_MS);
        fake_add(loop, m, &three[1], 1, true, 0);
        fake_add(loop, m, &three[0], 1, true, 1 * NS_PER_MS);
        cold_cache();
        cr_assert(eq(int, eng_merge_iter_seek(m, "k1", 2, on_move_snapshot, &sw), ENG_SST_PENDING));
        cr_assert(eq(int, rx_loop_run_until(loop, &sw.mw.done), 0));
        cr_expect(eq(int, sw.mw.calls, 1));
        cr_expect(eq(u32, sw.completions, 3), "every fake had called back");
        /* The world's versions from k1 on, and the fakes'. */
        all = calloc(w.n + 3, sizeof(*all));
        want = calloc(w.n + 3, sizeof(*want));
        for (size_t i = 0; i < w.n; i++)
                if (model_key_cmp(w.all[i].key, "k1", 2) >= 0)
                        all[n++] = w.all[i];
        memcpy(all + n, three, sizeof(three));
        n += 3;
        qsort(all, n, sizeof(*all), mver_cmp);
        n = model_view(all, n, &o, want, &st);
        expect_rest(m, sw.mw.res, all, want, n);
        eng_merge_iter_free(m);
        free(all);
        free(want);
        world_free();
}

Test(merge_iter, a_child_error_is_reported_once_no_child_is_pending_and_a_seek_recovers)
{
        struct eng_merge_opts o = { .view = ENG_MERGE_USER, .now_ms = MODEL_NOW_MS };
        struct snapshot_wait sw = { 0 };
        struct eng_merge_iter *m;
        struct fake *sync_f, *slow;

        cr_assert(eq(int, eng_merge_iter_new(&o, &m), 0));
        sync_f = fake_add(loop, m, &three[0], 2, false, 0);
        slow = fake_add(loop, m, &three[2], 1, true, 2 * NS_PER_MS);
        /* A child fails at once while another waits: the error comes from
         * the loop, after the other child is done. */
        sync_f->fail = -EIO;
        cr_assert(eq(int, eng_merge_iter_seek_first(m, on_move_snapshot, &sw), ENG_SST_PENDING));
        cr_assert(eq(int, rx_loop_run_until(loop, &sw.mw.done), 0));
        cr_expect(eq(int, sw.mw.res, -EIO));
        cr_expect(eq(u32, sw.completions, 1));
        cr_expect(not(eng_merge_iter_is_valid(m)));
        /* A failure that comes back from the loop. */
        slow->fail = -SCREE_ECORRUPT;
        cr_expect(eq(int, seek_first(m), -SCREE_ECORRUPT));
        /* Recovered. */
        cr_assert(eq(int, seek_first(m), 1));
        expect_at(m, &three[0]);
        /* A failing next. */
        sync_f->fail = -ENOMEM;
        cr_expect(eq(int, next(m), -ENOMEM));
        cr_expect(not(eng_merge_iter_is_valid(m)));
        cr_assert(eq(int, seek(m, "k2", 2), 1));
        expect_at(m, &three[1]);
        cr_assert(eq(int, next(m), 1));
        expect_at(m, &three[2]);
        cr_expect(eq(int, next(m), 0));
        eng_merge_iter_free(m);
}

Test(merge_iter, a_read_error_reaches_the_caller_and_a_retry_reads_again)
{
        struct eng_merge_opts o = { .view = ENG_MERGE_RAW };
        struct eng_merge_stats st;
        struct eng_merge_iter *m;
        size_t n;

        world_make(400, 1, 3, 0);
        n = model_view(w.all, w.n, &o, w.want, &st);
        m = merge_make(&o, false);
        cold_cache();
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_expect(eq(int, seek_first(m), -EIO));
        cr_expect(not(eng_merge_iter_is_valid(m)));
        expect_rest(m, seek_first(m), w.all, w.want, n);
        eng_merge_iter_free(m);
        world_free();
}

/* Waits for the reads of the first blocks of every table (a freed merge
 * may have left them in flight). */
static void drain_world(void)
{
        for (unsigned i = 0; i < w.n_children; i++) {
                uint32_t n = w.c[i].t ? eng_sst_reader_n_blocks(eng_sst_table_reader(w.c[i].t)) : 0;

                for (uint32_t b = 0; b < 3 && b < n; b++)
                        cr_assert(ge(int, engine_test_read_block(loop, w.c[i].t, b), 0));
        }
}

static void free_in_callback(struct eng_merge_iter *m, int res, void *arg)
{
        on_move(m, res, arg);
        eng_merge_iter_free(m);
}

Test(merge_iter, freeing_mid_scan_while_pending_or_from_the_callback_gives_everything_back)
{
        struct eng_merge_opts o = { .view = ENG_MERGE_USER, .now_ms = MODEL_NOW_MS };
        struct engine_test_move mw = { 0 };
        struct eng_merge_iter *m;
        unsigned frees;

        world_make(500, 1, 3, 1);
        /* Mid-scan, warm: the pins go at once. */
        m = merge_make(&o, true);
        cr_assert(eq(int, seek_first(m), 1));
        for (int i = 0; i < 50; i++)
                cr_assert(eq(int, next(m), 1));
        cr_expect(gt(u64, pins(), 0));
        eng_merge_iter_free(m);
        cr_expect(eq(u64, pins(), 0));

        /* While every child waits (cold tables, an async fake): nothing
         * calls back, the fake's timer is cancelled. */
        m = merge_make(&o, true);
        cold_cache();
        frees = fake_frees;
        cr_assert(eq(int, eng_merge_iter_seek(m, "k5", 2, on_move, &mw), ENG_SST_PENDING));
        eng_merge_iter_free(m);
        cr_expect(eq(u32, fake_frees, frees + 1));
        drain_world();
        cr_expect(eq(int, mw.calls, 0));
        cr_expect(eq(u64, pins(), 0));

        /* From the callback, with readaheads under way. */
        m = merge_make(&o, true);
        cold_cache();
        mw = (struct engine_test_move){ 0 };
        cr_assert(eq(int, eng_merge_iter_seek_first(m, free_in_callback, &mw), ENG_SST_PENDING));
        cr_assert(eq(int, rx_loop_run_until(loop, &mw.done), 0));
        cr_expect(eq(int, mw.calls, 1));
        cr_expect(eq(int, mw.res, 1));
        drain_world();
        cr_expect(eq(u64, pins(), 0));
        world_free();
}
