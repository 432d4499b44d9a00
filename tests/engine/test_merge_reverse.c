/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The merge walking down (engine/merge_iter.h, eng_merge_opts.reverse) over
 * memtables, SSTables and fake children that call back from loop timers,
 * whose versions interleave, checked against the model of the forward
 * views (tests/engine/model.h): a walk down in the RAW and USER views is
 * the forward view reversed over many random seeds, cold and warm; walks
 * of random [start, end) ranges; a hot key whose newest version wins (or
 * hides the key) without stepping over all its versions; empty children;
 * damaged blocks skipped; tables below the walk left unread until it gets
 * there; and what reverse refuses.
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
#include "engine/merge_iter.h"
#include "engine/sst_io.h"
#include "tests/engine/helpers.h"
#include "tests/engine/merge_world.h"
#include "tests/engine/model.h"
#include "tests/rng.h"
#include "tests/tmpdir.h"

enum {
        MAX_PER_CHILD = 500,
};

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "merge_reverse");
        engine_test_io_init(&loop, &fs, &cache, 8 << 20);
        model_keys_init();
}

static void teardown(void)
{
        engine_test_io_fini(loop, fs, cache);
        tmpdir_remove(dir);
}

TestSuite(merge_reverse, .init = setup, .fini = teardown, .timeout = 120);

/* ---- a world of children and the model of all their versions ---- */

/* Adds a child of kind with the versions v[0..n) (sorted; copied). */
static void world_add(enum child_kind kind, const struct mver *v, size_t n)
{
        struct child *c = &w.c[w.n_children++];

        cr_assert(le(u32, w.n_children, MAX_CHILDREN));
        *c = (struct child){ .kind = kind, .n = n, .v = calloc(n + 1, sizeof(*v)) };
        if (n)
                memcpy(c->v, v, n * sizeof(*v));
        w.all = realloc(w.all, (w.n + n + 1) * sizeof(*w.all));
        w.want = realloc(w.want, (w.n + n + 1) * sizeof(*w.want));
        if (n)
                memcpy(w.all + w.n, v, n * sizeof(*v));
        w.n += n;
        qsort(w.all, w.n, sizeof(*w.all), mver_cmp);
        child_load(c);
}

/* Random children over versions with unique seqs spread among them, so
 * that one key's versions interleave across children. */
static void world_make(uint64_t seed, unsigned n_mt, unsigned n_sst, unsigned n_fake)
{
        uint64_t rng = seed * 104729 + 3, *seqs;
        unsigned k = n_mt + n_sst + n_fake;
        size_t counts[MAX_CHILDREN], total = 0, at = 0;

        for (unsigned i = 0; i < k; i++) {
                counts[i] = model_rand(&rng) % 8 == 0 ? 0 : 1 + model_rand(&rng) % MAX_PER_CHILD;
                total += counts[i];
        }
        seqs = model_shuffled_seqs(&rng, total);
        for (unsigned i = 0; i < k; i++) {
                struct mver *v = calloc(counts[i] + 1, sizeof(*v));

                model_gen(&rng, seqs + at, counts[i], v);
                at += counts[i];
                world_add(i < n_mt ? CHILD_MEMTABLE : i < n_mt + n_sst ? CHILD_SST : CHILD_FAKE,
                          v, counts[i]);
                free(v);
        }
        free(seqs);
}

/* ---- driving moves ---- */

static void on_move(struct eng_merge_iter *m, int res, void *arg)
{
        (void)m;
        engine_test_move_done(arg, res);
}

#define MOVE(call)                                                                    \
        __extension__({                                                               \
                struct engine_test_move mw_ = { 0 };                                  \
                engine_test_move_finish(loop, (call), &mw_);                          \
        })
#define SEEK_LAST(m) MOVE(eng_merge_iter_seek_last((m), on_move, &mw_))
#define SEEK_LT(m, k, l) MOVE(eng_merge_iter_seek_lt((m), (k), (l), on_move, &mw_))
#define PREV(m) MOVE(eng_merge_iter_prev((m), on_move, &mw_))
#define SEEK_FIRST(m) MOVE(eng_merge_iter_seek_first((m), on_move, &mw_))
#define NEXT(m) MOVE(eng_merge_iter_next((m), on_move, &mw_))

/* From a move's result r, the view's entries all[want[n-1]] down to
 * all[want[0]] follow, then the end. */
static void expect_down(struct eng_merge_iter *m, int r, const size_t *want, size_t n)
{
        for (size_t i = n; i-- > 0;) {
                struct eng_entry e;

                cr_assert(eq(int, r, 1), "entry %zu of %zu", i, n);
                cr_assert(eng_merge_iter_is_valid(m));
                eng_merge_iter_entry(m, &e);
                expect_mver(&e, &w.all[want[i]]);
                r = PREV(m);
        }
        cr_assert(eq(int, r, 0));
        cr_assert(not(eng_merge_iter_is_valid(m)));
}

static const struct eng_merge_opts rviews[] = {
        { .view = ENG_MERGE_RAW, .reverse = true },
        { .view = ENG_MERGE_USER, .now_ms = MODEL_NOW_MS, .reverse = true },
};

/* ---- walks against the model ---- */

Test(merge_reverse, walks_down_are_the_forward_views_reversed_over_random_seeds)
{
        unsigned waited = 0;

        for (uint64_t seed = 0; seed < 24; seed++) {
                uint64_t rng = seed + 1;

                world_make(seed, (unsigned)(model_rand(&rng) % 3),
                           1 + (unsigned)(model_rand(&rng) % 3), (unsigned)(model_rand(&rng) % 2));
                engine_test_moves_waited = 0;
                for (size_t v = 0; v < ARRAY_SIZE(rviews); v++) {
                        struct eng_merge_opts fo = rviews[v];
                        struct eng_merge_stats st;
                        struct eng_merge_iter *m;
                        const struct eng_merge_stats *got;
                        size_t n;

                        fo.reverse = false;
                        n = model_view(w.all, w.n, &fo, w.want, &st);
                        m = merge_make(&rviews[v], seed % 2 == 1);
                        got = eng_merge_iter_stats(m);
                        if ((seed + v) % 2 == 0)
                                cold_cache();
                        expect_down(m, SEEK_LAST(m), w.want, n);
                        cr_expect(eq(u64, got->entries, st.entries));
                        cr_expect(le(u64, got->shadowed, st.shadowed));
                        cr_expect(eq(u64, got->tombstones, st.tombstones));
                        cr_expect(eq(u64, got->expired, st.expired));
                        eng_merge_iter_free(m);
                }
                waited += engine_test_moves_waited > 0;
                world_free();
        }
        cr_expect(gt(u32, waited, 12), "cold caches and async fakes made moves wait");
}

/* Range targets, as in test_reverse.c: model keys, keys with a byte after
 * them, and keys before the first and after the last. */
static size_t random_target(uint64_t *rng, char *buf)
{
        static const char *const extra[] = { "", "a", "k", "l", "zz" };
        uint64_t r = test_rng_next(rng);
        uint32_t k = (uint32_t)(r % MODEL_KEYS);
        size_t len;

        if (r / MODEL_KEYS % 8 == 0) {
                len = strlen(extra[r / 1024 % ARRAY_SIZE(extra)]);
                memcpy(buf, extra[r / 1024 % ARRAY_SIZE(extra)], len);
                return len;
        }
        len = model_key_lens[k];
        memcpy(buf, model_keys[k], len);
        if (r / MODEL_KEYS % 3 == 1)
                buf[len++] = '\0';
        return len;
}

Test(merge_reverse, walks_of_random_ranges_start_below_the_end_and_stop_at_the_start)
{
        uint64_t rng = 77;

        for (uint64_t seed = 0; seed < 8; seed++) {
                world_make(seed + 100, 2, 2, 1);
                for (int round = 0; round < 40; round++) {
                        const struct eng_merge_opts *rv = &rviews[round % 2];
                        struct eng_merge_opts o = *rv, fo = *rv;
                        char start[16], end[16];
                        size_t sl = random_target(&rng, start), el = random_target(&rng, end);
                        size_t n, k = 0;
                        struct eng_merge_stats st;
                        struct eng_merge_iter *m;

                        fo.reverse = false;
                        n = model_view(w.all, w.n, &fo, w.want, &st);
                        /* The view's entries in [start, end); no start: from the first. */
                        for (size_t i = 0; i < n; i++) {
                                const struct mver *v = &w.all[w.want[i]];

                                if ((round % 3 == 0 || model_key_cmp(v->key, start, sl) >= 0) &&
                                    model_key_cmp(v->key, end, el) < 0)
                                        w.want[k++] = w.want[i];
                        }
                        if (round % 3) {
                                o.start_key = start;
                                o.start_len = sl;
                        }
                        m = merge_make(&o, round % 4 == 1);
                        memset(start, 0x5a, sizeof(start));     /* the bound was copied */
                        expect_down(m, SEEK_LT(m, end, el), w.want, k);
                        eng_merge_iter_free(m);
                }
                world_free();
        }
}

/* ---- hot keys ---- */

/* n versions of model key `key`, seqs seq0 .. seq0+n-1, newest first. */
static struct mver *hot_versions(uint32_t key, uint64_t seq0, size_t n)
{
        struct mver *v = calloc(n + 1, sizeof(*v));

        for (size_t i = 0; i < n; i++)
                v[i] = (struct mver){ .key = key, .seq = seq0 + n - 1 - i, .kind = ENG_ENTRY_VALUE,
                                      .value_len = (uint32_t)(i % 30) };
        return v;
}

Test(merge_reverse, a_hot_keys_newest_version_wins_without_stepping_over_every_version)
{
        struct mver *older = hot_versions(7, 1, 300), *newer = hot_versions(7, 1000, 1000);
        struct mver around[] = {
                { .key = 8, .seq = 5000, .kind = ENG_ENTRY_VALUE, .value_len = 3 },
                { .key = 6, .seq = 5001, .kind = ENG_ENTRY_VALUE, .value_len = 4 },
        };
        struct eng_merge_opts o = rviews[1];
        struct eng_merge_stats st;
        struct eng_merge_iter *m;
        struct fake *f;
        size_t n;

        qsort(around, 2, sizeof(around[0]), mver_cmp);
        world_add(CHILD_SST, older, 300);
        world_add(CHILD_MEMTABLE, newer, 1000);
        world_add(CHILD_MEMTABLE, around, 2);
        o.reverse = false;
        n = model_view(w.all, w.n, &o, w.want, &st);
        cr_assert(eq(sz, n, 3));
        m = merge_make(&rviews[1], false);
        expect_down(m, SEEK_LAST(m), w.want, n);
        cr_expect(lt(u64, eng_merge_iter_stats(m)->shadowed, 2 * ENG_MERGE_MAX_SKIPS + 4),
                  "the versions were sought past, not stepped over");
        eng_merge_iter_free(m);

        /* The same through a fake child, counting its steps down; then
         * with a tombstone newest, which hides the key. */
        world_free();
        world_add(CHILD_MEMTABLE, around, 2);
        cr_assert(eq(int, eng_merge_iter_new(&rviews[1], &m), 0));
        f = fake_add(loop, m, newer, 1000, true, 0);
        cr_assert(eq(int, eng_merge_iter_add_memtable(m, w.c[0].mt), 0));
        cr_assert(eq(int, SEEK_LT(m, "k8", 2), 1));
        {
                struct eng_entry e;

                eng_merge_iter_entry(m, &e);
                expect_mver(&e, &newer[0]);
        }
        cr_expect(le(u32, f->nexts, ENG_MERGE_MAX_SKIPS + 3), "steps down over the hot key");
        eng_merge_iter_free(m);
        newer[0].kind = ENG_ENTRY_TOMBSTONE;
        newer[0].value_len = 0;
        cr_assert(eq(int, eng_merge_iter_new(&rviews[1], &m), 0));
        fake_add(loop, m, newer, 1000, false, 0);
        cr_assert(eq(int, eng_merge_iter_add_memtable(m, w.c[0].mt), 0));
        cr_assert(eq(int, SEEK_LT(m, "k8", 2), 1));
        {
                struct eng_entry e;

                eng_merge_iter_entry(m, &e);
                cr_expect(eq(int, model_key_cmp(6, e.key, e.key_len), 0), "k7 is hidden");
        }
        cr_expect(eq(u64, eng_merge_iter_stats(m)->tombstones, 1));
        cr_expect(eq(int, PREV(m), 0));
        eng_merge_iter_free(m);
        world_free();
        free(older);
        free(newer);
}

/* Past ENG_MERGE_MAX_SKIPS versions of one key, each child is sought to
 * its newest version of it: a child with one version is found where it
 * stood, and that version is not taken (nor counted) twice. */
Test(merge_reverse, one_version_in_each_of_many_children_is_counted_once)
{
        enum { N = ENG_MERGE_MAX_SKIPS + 4 };
        static struct mver one[N];
        struct eng_merge_iter *m;
        struct eng_entry e;

        cr_assert(eq(int, eng_merge_iter_new(&rviews[1], &m), 0));
        for (unsigned i = 0; i < N; i++) {
                one[i] = (struct mver){ .key = 9, .seq = 1 + i, .kind = ENG_ENTRY_VALUE,
                                        .value_len = i };
                fake_add(loop, m, &one[i], 1, i % 2 == 0, 0);
        }
        cr_assert(eq(int, SEEK_LAST(m), 1));
        eng_merge_iter_entry(m, &e);
        expect_mver(&e, &one[N - 1]);
        cr_expect(eq(u64, eng_merge_iter_stats(m)->shadowed, N - 1));
        cr_expect(eq(int, PREV(m), 0));
        eng_merge_iter_free(m);
}

/* Regression: a version held by two children (a replay after a merge of
 * tablets repeats versions an SSTable holds) hid its key walking down:
 * the second copy was taken for the first one found again. */
Test(merge_reverse, a_version_two_children_hold_is_yielded_once)
{
        static const struct mver below = { .key = 7, .seq = 5, .kind = ENG_ENTRY_VALUE, .value_len = 1 };
        static const struct mver dup = { .key = 8, .seq = 7, .kind = ENG_ENTRY_VALUE, .value_len = 3 };
        static const struct mver above = { .key = 9, .seq = 6, .kind = ENG_ENTRY_VALUE, .value_len = 2 };
        struct eng_merge_iter *m;
        struct eng_entry e;

        for (int sync = 0; sync < 2; sync++) {
                cr_assert(eq(int, eng_merge_iter_new(&rviews[1], &m), 0));
                fake_add(loop, m, &dup, 1, sync, 0);
                fake_add(loop, m, &below, 1, sync, 0);
                fake_add(loop, m, &dup, 1, !sync, 0);
                fake_add(loop, m, &above, 1, sync, 0);
                cr_assert(eq(int, SEEK_LAST(m), 1));
                eng_merge_iter_entry(m, &e);
                expect_mver(&e, &above);
                cr_assert(eq(int, PREV(m), 1), "the key both hold");
                eng_merge_iter_entry(m, &e);
                expect_mver(&e, &dup);
                cr_assert(eq(int, PREV(m), 1));
                eng_merge_iter_entry(m, &e);
                expect_mver(&e, &below);
                cr_expect(eq(int, PREV(m), 0));
                eng_merge_iter_free(m);
        }
}

/* ---- empty children ---- */

Test(merge_reverse, empty_children_walk_down_to_nothing_or_to_the_others)
{
        struct mver one[] = { { .key = 3, .seq = 9, .kind = ENG_ENTRY_VALUE, .value_len = 5 } };
        struct eng_merge_iter *m;

        for (size_t v = 0; v < ARRAY_SIZE(rviews); v++) {
                world_add(CHILD_MEMTABLE, NULL, 0);
                world_add(CHILD_MEMTABLE, NULL, 0);
                m = merge_make(&rviews[v], false);
                fake_add(loop, m, NULL, 0, true, 0);
                cr_expect(eq(int, SEEK_LAST(m), 0));
                cr_expect(eq(int, SEEK_LT(m, "zz", 2), 0));
                eng_merge_iter_free(m);
                world_add(CHILD_SST, one, 1);
                m = merge_make(&rviews[v], false);
                fake_add(loop, m, NULL, 0, true, 0);
                w.want[0] = 0;
                expect_down(m, SEEK_LAST(m), w.want, 1);
                expect_down(m, SEEK_LT(m, "zz", 2), w.want, 1);
                expect_down(m, SEEK_LT(m, "k3", 2), w.want, 0);
                eng_merge_iter_free(m);
                world_free();
        }
}

/* ---- damage, laziness, refusals ---- */

/* The seqs a forward merge with o (reverse off) yields, in order. */
static size_t forward_seqs(const struct eng_merge_opts *o, uint64_t *out)
{
        struct eng_merge_opts fo = *o;
        struct eng_merge_iter *m;
        size_t k = 0;
        int r;

        fo.reverse = false;
        m = merge_make(&fo, false);
        for (r = SEEK_FIRST(m); r == 1; r = NEXT(m)) {
                struct eng_entry e;

                eng_merge_iter_entry(m, &e);
                out[k++] = e.seq;
        }
        cr_assert(eq(int, r, 0));
        eng_merge_iter_free(m);
        return k;
}

Test(merge_reverse, a_damaged_block_is_skipped_walking_down_as_walking_up)
{
        uint64_t rng = 5, *seqs = model_shuffled_seqs(&rng, 4000), *fwd = calloc(4000, 8);
        struct mver *big = calloc(3000, sizeof(*big)), *small = calloc(1000, sizeof(*small));
        char path[PATH_MAX + 32];
        uint32_t bad;

        model_gen(&rng, seqs, 3000, big);
        model_gen(&rng, seqs + 3000, 1000, small);
        world_add(CHILD_SST, big, 3000);
        world_add(CHILD_MEMTABLE, small, 1000);
        bad = eng_sst_reader_n_blocks(eng_sst_table_reader(w.c[0].t)) / 2;
        model_sst_path(path, dir, w.c[0].file_id);
        engine_test_flip_byte(path,
                              eng_sst_reader_block(eng_sst_table_reader(w.c[0].t), bad).offset + 64);
        cold_cache();
        for (size_t v = 0; v < ARRAY_SIZE(rviews); v++) {
                struct eng_merge_opts o = rviews[v];
                struct eng_merge_iter *m;
                size_t n;
                int r;

                o.skip_damaged = true;
                n = forward_seqs(&o, fwd);
                cr_assert(gt(sz, n, 0));
                m = merge_make(&o, false);
                for (r = SEEK_LAST(m); r == 1; r = PREV(m)) {
                        struct eng_entry e;

                        cr_assert(gt(sz, n, 0));
                        eng_merge_iter_entry(m, &e);
                        cr_assert(eq(u64, e.seq, fwd[--n]));
                }
                cr_expect(eq(int, r, 0));
                cr_expect(eq(sz, n, 0), "every version the forward walk yields");
                cr_expect(ge(u64, eng_merge_iter_stats(m)->damaged, 1));
                cr_expect(not(eq(ptr, (void *)eng_merge_iter_damage(m), NULL)));
                eng_merge_iter_free(m);
                /* Without skipping, the walk down fails on it. */
                o.skip_damaged = false;
                m = merge_make(&o, false);
                for (r = SEEK_LAST(m); r == 1; r = PREV(m))
                        ;
                cr_expect(eq(int, r, -SCREE_ECORRUPT));
                eng_merge_iter_free(m);
        }
        world_free();
        free(seqs);
        free(fwd);
        free(big);
        free(small);
}

Test(merge_reverse, tables_below_the_walk_are_not_read_until_it_gets_there)
{
        uint64_t rng = 9, *seqs = model_shuffled_seqs(&rng, 1200);
        struct mver *v = calloc(1200, sizeof(*v));
        size_t cut[4] = { 0 }, n;
        struct eng_merge_iter *m;
        struct eng_merge_opts fo = rviews[1];
        struct eng_merge_stats st;

        model_gen(&rng, seqs, 1200, v);
        /* Three tables over disjoint key ranges (cut at key changes). */
        for (int k = 1; k < 3; k++) {
                size_t c = 1200 * (size_t)k / 3;

                while (c < 1200 && v[c].key == v[c - 1].key)
                        c++;
                cut[k] = c;
        }
        cut[3] = 1200;
        for (int k = 0; k < 3; k++)
                world_add(CHILD_SST, v + cut[k], cut[k + 1] - cut[k]);
        fo.reverse = false;
        n = model_view(w.all, w.n, &fo, w.want, &st);
        m = merge_make(&rviews[1], false);
        cr_assert(eq(int, SEEK_LAST(m), 1));
        cr_expect(eq(u64, eng_merge_iter_stats(m)->lazy, 3));
        cr_expect(eq(u64, eng_merge_iter_stats(m)->woken, 1), "only the top table is read");
        eng_merge_iter_free(m);
        m = merge_make(&rviews[1], false);
        expect_down(m, SEEK_LAST(m), w.want, n);
        cr_expect(eq(u64, eng_merge_iter_stats(m)->woken, 3));
        eng_merge_iter_free(m);
        world_free();
        free(seqs);
        free(v);
}

static const struct eng_merge_child_ops forward_only_ops = {
        .seek = fake_seek, .seek_first = fake_seek_first, .next = fake_next,
        .entry = fake_entry, .free = fake_free,
};

Test(merge_reverse, compaction_streaming_and_mixed_directions_are_refused)
{
        struct eng_merge_opts o = { .view = ENG_MERGE_COMPACT, .reverse = true };
        struct mver one[] = { { .key = 3, .seq = 9, .kind = ENG_ENTRY_VALUE, .value_len = 5 } };
        struct eng_merge_child *c;
        struct eng_merge_iter *m;
        struct fake *f;

        cr_expect(eq(int, eng_merge_iter_new(&o, &m), -EINVAL));
        o = (struct eng_merge_opts){ .view = ENG_MERGE_USER, .reverse = true, .stream_bytes = 4096 };
        cr_expect(eq(int, eng_merge_iter_new(&o, &m), -EINVAL));
        o = (struct eng_merge_opts){ .view = ENG_MERGE_USER, .reverse = true, .end_key = "k" };
        cr_expect(eq(int, eng_merge_iter_new(&o, &m), -EINVAL));
        o = (struct eng_merge_opts){ .view = ENG_MERGE_USER, .start_key = "k", .start_len = 1 };
        cr_expect(eq(int, eng_merge_iter_new(&o, &m), -EINVAL), "start_key walking up");

        world_add(CHILD_SST, one, 1);
        m = merge_make(&rviews[1], false);
        cr_expect(eq(int, eng_merge_iter_seek_first(m, on_move, NULL), -EINVAL));
        cr_expect(eq(int, eng_merge_iter_seek(m, "k", 1, on_move, NULL), -EINVAL));
        cr_expect(eq(int, SEEK_LAST(m), 1));
        cr_expect(eq(int, eng_merge_iter_next(m, on_move, NULL), -EINVAL));
        eng_merge_iter_free(m);
        /* A child that cannot walk down is not taken (and is freed). */
        cr_assert(eq(int, eng_merge_iter_new(&rviews[1], &m), 0));
        f = calloc(1, sizeof(*f));
        *f = (struct fake){ .c = { .ops = &forward_only_ops }, .loop = loop };
        rx_timer_init(&f->timer, fake_fire, "test:fake");
        fake_frees = 0;
        cr_expect(eq(int, eng_merge_iter_add_take(m, &f->c), -EINVAL));
        cr_expect(eq(u32, fake_frees, 1));
        eng_merge_iter_free(m);

        m = merge_make(&(struct eng_merge_opts){ .view = ENG_MERGE_USER }, false);
        cr_expect(eq(int, eng_merge_iter_seek_last(m, on_move, NULL), -EINVAL));
        cr_expect(eq(int, eng_merge_iter_seek_lt(m, "k", 1, on_move, NULL), -EINVAL));
        cr_expect(eq(int, SEEK_FIRST(m), 1));
        cr_expect(eq(int, eng_merge_iter_prev(m, on_move, NULL), -EINVAL));
        eng_merge_iter_free(m);

        /* The streaming child walks forward only. */
        cr_assert(eq(int, eng_merge_child_sst_seq_new(w.c[0].t, 0, &c), 0));
        cr_assert(eq(int, eng_merge_iter_new(&rviews[0], &m), 0));
        cr_assert(eq(int, eng_merge_iter_add_take(m, c), 0));
        cr_expect(eq(int, SEEK_LT(m, "zz", 2), -ENOTSUP));
        cr_expect(eq(int, SEEK_LAST(m), -ENOTSUP));
        eng_merge_iter_free(m);
        world_free();
}
