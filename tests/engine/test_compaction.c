/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compaction (engine/compaction.h). The picker: runs that must and must
 * not be picked, adjacency, the bottommost flag, the table-count limit,
 * options and overflow. The job, on real files: the output of random
 * tables (disjoint seq ranges, overlapping keys) holds exactly the newest
 * version of each key, with tombstones and expired versions dropped only
 * at the bottom, checked against the model (tests/engine/model.h) by scan
 * and by lookup; its counters; no file when everything is dropped; the
 * rate limit engaging; bad inputs refused; write, sync and read failures
 * failing the job cleanly (no output left, nothing pinned or leaked).
 */
#include <errno.h>
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
#include "engine/compaction.h"
#include "engine/fault_fs.h"
#include "engine/sst_iter.h"
#include "tests/engine/helpers.h"
#include "tests/engine/model.h"
#include "tests/tmpdir.h"

/* ---- the picker (pure) ---- */

TestSuite(compaction_pick, .timeout = 10);

enum { MAX_TABLES = 32 };

/* Tables of the given sizes, newest first, with disjoint seq ranges. */
static uint32_t tables_of(const uint64_t *sizes, uint32_t n, struct eng_compact_table *t)
{
        for (uint32_t i = 0; i < n; i++)
                t[i] = (struct eng_compact_table){ .file_size = sizes[i],
                                                   .min_seq = (uint64_t)(n - i) * 100,
                                                   .max_seq = (uint64_t)(n - i) * 100 + 99 };
        cr_assert(eng_compact_tables_check(t, n));
        return n;
}

/* Picks among tables of these sizes: 1 with *ret, or 0. */
static int pick(const uint64_t *sizes, uint32_t n, const struct eng_compact_opts *o,
                struct eng_compact_pick *ret)
{
        struct eng_compact_table t[MAX_TABLES];

        *ret = (struct eng_compact_pick){ .first = 99, .n = 99 };
        return eng_compact_pick(t, tables_of(sizes, n, t), o, ret);
}

static void expect_pick(const uint64_t *sizes, uint32_t n, const struct eng_compact_opts *o,
                        uint32_t want_n, bool want_bottom)
{
        struct eng_compact_pick p;

        cr_assert(eq(int, pick(sizes, n, o, &p), 1), "%u tables", n);
        cr_expect(eq(u32, p.first, 0), "a run starts at the newest table");
        cr_expect(eq(u32, p.n, want_n), "%u tables", n);
        cr_expect(eq(int, p.bottommost, want_bottom), "%u tables", n);
}

/* The size-tiered rules alone: the space-amplification trigger off. */
#define NO_AMP UINT32_MAX
static const struct eng_compact_opts tiers_only = { .max_space_amp_pct = NO_AMP };

Test(compaction_pick, a_run_of_similar_sizes_from_the_newest_is_merged)
{
        static const uint64_t same[] = { 100, 100, 100, 100, 100, 100 };
        static const uint64_t tiered[] = { 100, 100, 100, 100, 1000, 100000 };
        static const uint64_t doubling[] = { 10, 10, 20, 40, 80 };
        struct eng_compact_pick p;

        expect_pick(same, 4, &tiers_only, 4, true);
        expect_pick(same, 6, &tiers_only, 6, true);
        cr_expect(eq(int, pick(same, 3, &tiers_only, &p), 0), "3 < min_merge");
        cr_expect(eq(int, pick(same, 1, &tiers_only, &p), 0));
        cr_expect(eq(int, pick(same, 0, &tiers_only, &p), 0));
        /* The run stops at the first table too big for it: not bottommost. */
        expect_pick(tiered, 6, &tiers_only, 4, false);
        cr_expect(eq(int, pick(tiered + 1, 5, &tiers_only, &p), 0), "a run of 3 is too short");
        /* Each table as big as the run before it: all of them. */
        expect_pick(doubling, 5, &tiers_only, 5, true);
}

Test(compaction_pick, only_adjacent_tables_from_the_newest_are_merged)
{
        /* Five small tables, but a big one separates the two newest from
         * the other three: no run is long enough, and nothing skips it. */
        static const uint64_t split[] = { 100, 100, 5000, 100, 100, 100 };
        /* Small newer tables in front of an old big one are merged
         * without it. */
        static const uint64_t small_first[] = { 1, 1, 1, 1, 1, 1, 1, 1000000 };
        struct eng_compact_pick p;

        cr_expect(eq(int, pick(split, 6, &tiers_only, &p), 0));
        expect_pick(small_first, 8, &tiers_only, 7, false);
}

Test(compaction_pick, too_many_tables_forces_a_merge_of_the_newest_min_merge)
{
        uint64_t growing[MAX_TABLES];
        struct eng_compact_opts o = { .max_tables = 5, .min_merge = 3, .max_space_amp_pct = NO_AMP };
        struct eng_compact_pick p;

        for (uint32_t i = 0; i < 14; i++)
                growing[i] = (uint64_t)1000 << i;       /* every table twice the one before */
        cr_expect(eq(int, pick(growing, 12, &tiers_only, &p), 0), "12 tables are allowed");
        expect_pick(growing, 13, &tiers_only, 4, false);
        expect_pick(growing, 14, &tiers_only, 4, false);
        cr_expect(eq(int, pick(growing, 5, &o, &p), 0));
        expect_pick(growing, 6, &o, 3, false);
        /* A forced pick that reaches the oldest table is bottommost. */
        o = (struct eng_compact_opts){ .max_tables = 1, .min_merge = 2, .max_space_amp_pct = NO_AMP };
        expect_pick(growing, 2, &o, 2, true);
}

Test(compaction_pick, options_ratio_and_min_merge_and_huge_sizes)
{
        static const uint64_t ratio[] = { 100, 150, 300, 500 };
        static const uint64_t two[] = { 5, 5 };
        uint64_t huge[] = { UINT64_MAX / 2, UINT64_MAX / 2, UINT64_MAX / 2, UINT64_MAX };
        struct eng_compact_opts o = { .size_ratio_pct = 50, .max_space_amp_pct = NO_AMP };
        struct eng_compact_pick p;

        cr_expect(eq(int, pick(ratio, 4, &tiers_only, &p), 0), "150 > 101%% of 100");
        expect_pick(ratio, 4, &o, 4, true);     /* 150 <= 150, 300 <= 375, 500 <= 825 */
        o.size_ratio_pct = 49;
        cr_expect(eq(int, pick(ratio, 4, &o, &p), 0));
        o = (struct eng_compact_opts){ .min_merge = 2, .max_space_amp_pct = NO_AMP };
        expect_pick(two, 2, &o, 2, true);
        o.min_merge = 1;                        /* a merge of one table is no merge */
        expect_pick(two, 2, &o, 2, true);
        /* Sizes whose sums overflow 64 bits. */
        expect_pick(huge, 4, &tiers_only, 4, true);
}

Test(compaction_pick, newer_tables_as_big_as_twice_the_oldest_merge_everything)
{
        /* 100 + 100 >= 200% of 100: all, bottommost (before any size rule). */
        static const uint64_t three[] = { 100, 100, 100 };
        static const uint64_t below[] = { 100, 99, 100 };
        /* A big old table under small new ones: no. */
        static const uint64_t small_first[] = { 1, 1, 1, 1000000 };
        static const uint64_t big_new[] = { 1000, 10, 400 };
        struct eng_compact_opts o = { .max_space_amp_pct = 50 };
        struct eng_compact_pick p;

        expect_pick(three, 3, NULL, 3, true);
        cr_expect(eq(int, pick(below, 3, NULL, &p), 0), "199%% of the oldest");
        cr_expect(eq(int, pick(small_first, 4, NULL, &p), 0));
        expect_pick(big_new, 3, NULL, 3, true);
        expect_pick(below, 3, &o, 3, true);
        cr_expect(eq(int, pick(three, 3, &tiers_only, &p), 0), "off: 3 < min_merge");
        /* Sizes whose sums overflow 64 bits. */
        {
                uint64_t huge[] = { UINT64_MAX - 1, UINT64_MAX - 1, UINT64_MAX / 2 };

                expect_pick(huge, 3, NULL, 3, true);
        }
}

Test(compaction_pick, a_major_compaction_takes_every_table_and_is_bottommost)
{
        struct eng_compact_pick p;

        cr_expect(eq(int, eng_compact_pick_major(0, &p), 0));
        cr_assert(eq(int, eng_compact_pick_major(1, &p), 1));
        cr_expect(eq(u32, p.first, 0));
        cr_expect(eq(u32, p.n, 1));
        cr_expect(p.bottommost);
        cr_assert(eq(int, eng_compact_pick_major(7, &p), 1));
        cr_expect(eq(u32, p.n, 7));
        cr_expect(p.bottommost);
}

Test(compaction_pick, the_table_list_check_wants_newest_first)
{
        struct eng_compact_table t[3] = {
                { .min_seq = 20, .max_seq = 29 },
                { .min_seq = 10, .max_seq = 19 },
                { .min_seq = 1, .max_seq = 9 },
        };

        cr_expect(eng_compact_tables_check(t, 3));
        cr_expect(eng_compact_tables_check(t, 0));
        t[1].max_seq = 20;              /* overlaps: a merged tablet's key-disjoint tables */
        cr_expect(eng_compact_tables_check(t, 3));
        t[1].max_seq = 30;                      /* newer than the table before */
        cr_expect(not(eng_compact_tables_check(t, 3)));
        t[1] = (struct eng_compact_table){ .min_seq = 15, .max_seq = 14 };
        cr_expect(not(eng_compact_tables_check(t, 3)));
        cr_expect(not(eng_compact_tables_check(&t[1], 1)), "min above max");
        t[1] = (struct eng_compact_table){ .min_seq = 5, .max_seq = 6 };
        cr_expect(not(eng_compact_tables_check(t, 3)), "older than the next one");
}

/* ---- the job (real files) ---- */

static char dir[PATH_MAX], out_path[PATH_MAX + 32];
static struct rx_loop *loop;
static struct eng_fs *fs;
static struct eng_block_cache *cache;
static uint64_t next_file_id = 1;
/* The jobs' readahead_bytes: 0 streams the inputs in the default chunks. */
static uint32_t job_readahead;

enum { MAX_INPUTS = 6, OUT_TABLET = 3 };

/* The inputs, newest first, and the model of all their versions. */
static struct {
        struct eng_sst_table *t[MAX_INPUTS];
        struct mver *v[MAX_INPUTS];
        uint64_t file_id[MAX_INPUTS];
        uint32_t n;
        struct mver *all;
        size_t n_all;
        size_t *want;
} in;

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "compaction");
        engine_test_io_init(&loop, &fs, &cache, 8 << 20);
        model_keys_init();
}

static uint64_t pins(void)
{
        return eng_block_cache_stats(cache)->pins;
}

static void inputs_free(void)
{
        for (uint32_t i = 0; i < in.n; i++) {
                eng_sst_table_unref(in.t[i]);
                free(in.v[i]);
        }
        free(in.all);
        free(in.want);
        memset(&in, 0, sizeof(in));
}

static void teardown(void)
{
        inputs_free();
        engine_test_io_fini(loop, fs, cache);
        tmpdir_remove(dir);
}

TestSuite(compaction, .init = setup, .fini = teardown, .timeout = 120);

/* n tables of `per` random versions each (per 0: 1 to 400), newest first:
 * table i's seqs all above table i + 1's. gen, when not NULL, rewrites
 * each version after model_gen. */
static void inputs_make(uint64_t seed, uint32_t n, size_t per, void (*gen)(struct mver *v))
{
        uint64_t rng = seed * 104729 + 7, next_seq = 1;
        size_t counts[MAX_INPUTS], total = 0;

        cr_assert(le(u32, n, MAX_INPUTS));
        for (uint32_t i = 0; i < n; i++)
                total += counts[i] = per ? per : 1 + model_rand(&rng) % 400;
        in.all = calloc(total, sizeof(*in.all));
        in.want = calloc(total, sizeof(*in.want));
        for (uint32_t k = n; k-- > 0;) {        /* oldest first, so seqs grow */
                uint64_t *seqs = calloc(counts[k], sizeof(*seqs));

                for (size_t j = 0; j < counts[k]; j++)
                        seqs[j] = next_seq++;
                in.v[k] = calloc(counts[k], sizeof(struct mver));
                model_gen(&rng, seqs, counts[k], in.v[k]);
                for (size_t j = 0; gen && j < counts[k]; j++)
                        gen(&in.v[k][j]);
                free(seqs);
                memcpy(in.all + in.n_all, in.v[k], counts[k] * sizeof(struct mver));
                in.n_all += counts[k];
                in.file_id[k] = next_file_id++;
                in.t[k] = model_sst_make(loop, fs, cache, dir, in.file_id[k], in.v[k], counts[k]);
        }
        in.n = n;
        qsort(in.all, in.n_all, sizeof(*in.all), mver_cmp);
}

static void cold_cache(void)
{
        for (uint32_t i = 0; i < in.n; i++)
                eng_block_cache_erase_file(cache, in.file_id[i]);
}

struct job_wait {
        bool done;
        int res, calls;
};

static void on_job(struct eng_compaction *job, int res, void *arg)
{
        struct job_wait *jw = arg;

        (void)job;
        jw->done = true;
        jw->res = res;
        jw->calls++;
}

static struct eng_compaction_opts job_opts(bool bottommost, uint64_t out_id)
{
        model_sst_path(out_path, dir, out_id);
        return (struct eng_compaction_opts){
                .inputs = in.t, .n_inputs = in.n, .now_ms = MODEL_NOW_MS, .bottommost = bottommost,
                .readahead_bytes = job_readahead,
                .out = { .path = out_path, .table = { .file_id = out_id, .tablet = OUT_TABLET } },
        };
}

/* Runs a job with o to its end; returns done's result and the job. */
static int run_job(const struct eng_compaction_opts *o, struct eng_compaction **ret_job)
{
        struct job_wait jw = { 0 };

        cr_assert(eq(int, eng_compaction_start(fs, o, on_job, &jw, ret_job), 0));
        cr_assert(not(jw.done), "done ran inside start");
        cr_assert(eq(int, rx_loop_run_until(loop, &jw.done), 0));
        cr_assert(eq(int, jw.calls, 1));
        return jw.res;
}

static bool file_exists(const char *path)
{
        return access(path, F_OK) == 0;
}

static struct eng_sst_table *open_output(uint64_t id, uint64_t size)
{
        struct model_wait mw = { 0 };

        cr_assert(eq(int, eng_sst_table_open(fs, cache, out_path, id, size, model_on_open, &mw), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mw.done), 0));
        cr_assert(eq(int, mw.res, 0));
        return mw.t;
}

/* ---- reading the output back ---- */

static void on_move(struct eng_sst_iter *it, int res, void *arg)
{
        (void)it;
        engine_test_move_done(arg, res);
}

/* The output's versions, in order, are all[want[0..n)]. */
static void expect_scan(struct eng_sst_table *t, const size_t *want, size_t n)
{
        struct eng_sst_iter *it;
        struct engine_test_move mw = { 0 };
        int r;

        cr_assert(eq(int, eng_sst_iter_new(t, &it), 0));
        r = engine_test_move_finish(loop, eng_sst_iter_seek_first(it, on_move, &mw), &mw);
        for (size_t i = 0; i < n; i++) {
                struct eng_entry e;

                cr_assert(eq(int, r, 1), "entry %zu of %zu", i, n);
                eng_sst_iter_entry(it, &e);
                expect_mver(&e, &in.all[want[i]]);
                mw = (struct engine_test_move){ 0 };
                r = engine_test_move_finish(loop, eng_sst_iter_next(it, on_move, &mw), &mw);
        }
        cr_assert(eq(int, r, 0));
        eng_sst_iter_free(it);
}

struct get_wait {
        struct eng_sst_get g;
        bool done;
        int res;
};

static void on_get(struct eng_sst_get *g, int res)
{
        struct get_wait *gw = container_of(g, struct get_wait, g);

        gw->done = true;
        gw->res = res;
}

/* Every key of the model: found with its newest version if the output
 * kept it, else not found. */
static void expect_gets(struct eng_sst_table *t, const size_t *want, size_t n)
{
        size_t wi = 0;

        for (size_t i = 0; i < in.n_all; i++) {
                const struct mver *v = &in.all[i];
                struct get_wait gw = { .g = { .done = on_get } };
                int r;

                if (i > 0 && in.all[i - 1].key == v->key)
                        continue;               /* not the newest version */
                r = eng_sst_table_get(t, model_keys[v->key], model_key_lens[v->key], &gw.g);
                if (r == ENG_SST_PENDING) {
                        cr_assert(eq(int, rx_loop_run_until(loop, &gw.done), 0));
                        r = gw.res;
                }
                if (wi < n && want[wi] == i) {
                        cr_assert(eq(int, r, 0), "key %s", model_keys[v->key]);
                        expect_mver(&gw.g.entry, v);
                        eng_block_cache_release(cache, gw.g.block);
                        wi++;
                } else {
                        cr_assert(eq(int, r, -SCREE_ENOTFOUND), "key %s", model_keys[v->key]);
                }
        }
        cr_expect(eq(sz, wi, n));
}

/* Compacts the inputs and checks the output and the counters against the
 * model. */
static void check_job(bool bottommost, bool cold)
{
        uint64_t id = next_file_id++, bytes_in = 0;
        struct eng_compaction_opts o = job_opts(bottommost, id);
        struct eng_merge_opts mo = { .view = ENG_MERGE_COMPACT, .now_ms = MODEL_NOW_MS,
                                     .bottommost = bottommost };
        struct eng_merge_stats st;
        size_t n = model_view(in.all, in.n_all, &mo, in.want, &st);
        const struct eng_compaction_result *rs;
        struct eng_compaction *job;
        struct eng_sst_table *t;
        struct stat sb;

        if (cold)
                cold_cache();
        cr_assert(eq(int, run_job(&o, &job), 0));
        rs = eng_compaction_result(job);
        cr_expect(eq(u64, pins(), 0), "the job let go of its blocks");
        for (uint32_t i = 0; i < in.n; i++)
                bytes_in += eng_sst_reader_file_size(eng_sst_table_reader(in.t[i]));
        cr_expect(eq(u64, rs->bytes_read, bytes_in));
        cr_expect(eq(u64, rs->min_seq, 1));
        cr_expect(eq(u64, rs->max_seq, in.n_all));
        cr_expect(eq(u64, rs->entries_in, in.n_all));
        cr_expect(eq(u64, rs->merge.shadowed, st.shadowed));
        cr_expect(eq(u64, rs->merge.tombstones, st.tombstones));
        cr_expect(eq(u64, rs->merge.expired, st.expired));
        cr_expect(eq(u64, rs->dropped, st.shadowed + st.tombstones + st.expired));
        cr_expect(eq(u64, rs->entries_out + rs->dropped, rs->entries_in));
        cr_expect(eq(u64, rs->throttled_ns, 0));
        if (!n) {
                cr_expect(not(rs->has_output));
                cr_expect(not(file_exists(out_path)), "no file for an empty output");
                eng_compaction_free(job);
                return;
        }
        cr_assert(rs->has_output);
        cr_expect(eq(u64, rs->entries_out, n));
        cr_expect(eq(u64, rs->props.n_entries, n));
        cr_expect(eq(u64, rs->props.file_id, id));
        cr_expect(eq(u32, rs->props.tablet, OUT_TABLET));
        cr_expect(eq(u64, rs->bytes_written, rs->file_size));
        cr_assert(eq(int, stat(out_path, &sb), 0));
        cr_expect(eq(u64, (uint64_t)sb.st_size, rs->file_size));
        t = open_output(id, rs->file_size);
        eng_compaction_free(job);
        expect_scan(t, in.want, n);
        expect_gets(t, in.want, n);
        eng_sst_table_unref(t);
}

/* Inputs read block by block through the cache, streamed a page a read
 * (every chunk a block), three pages, and the default. */
static const uint32_t readaheads[] = { ENG_COMPACT_READ_CACHED, 4096, 3 * 4096, 0 };

Test(compaction, the_output_holds_the_newest_version_of_each_key_over_random_inputs)
{
        for (uint64_t seed = 0; seed < 8; seed++) {
                job_readahead = readaheads[seed % ARRAY_SIZE(readaheads)];
                inputs_make(seed, 2 + (uint32_t)(seed % 4), 0, NULL);
                check_job(false, seed % 2 == 0);
                check_job(true, seed % 2 == 1);
                inputs_free();
        }
}

/* Compacts only keys [model key lo, model key hi) (hi 0: to the end), as
 * a tablet made by a split does with its parent's files: the output holds
 * the newest versions of exactly the keys in range. */
static void check_clipped_job(bool bottommost, uint32_t lo, uint32_t hi)
{
        uint64_t id = next_file_id++;
        struct eng_compaction_opts o = job_opts(bottommost, id);
        struct eng_merge_opts mo = { .view = ENG_MERGE_COMPACT, .now_ms = MODEL_NOW_MS,
                                     .bottommost = bottommost };
        struct eng_merge_stats st;
        size_t n = model_view(in.all, in.n_all, &mo, in.want, &st), kept = 0;
        const struct eng_compaction_result *rs;
        struct eng_compaction *job;
        struct eng_sst_table *t;

        o.lo = model_keys[lo];
        o.lo_len = model_key_lens[lo];
        o.hi = hi ? model_keys[hi] : NULL;
        o.hi_len = hi ? model_key_lens[hi] : 0;
        for (size_t i = 0; i < n; i++) {
                uint32_t k = in.all[in.want[i]].key;

                if (model_key_cmp(k, o.lo, o.lo_len) >= 0 &&
                    (!hi || model_key_cmp(k, o.hi, o.hi_len) < 0))
                        in.want[kept++] = in.want[i];
        }
        cr_assert(eq(int, run_job(&o, &job), 0));
        rs = eng_compaction_result(job);
        if (!kept) {
                cr_expect(not(rs->has_output));
                eng_compaction_free(job);
                return;
        }
        cr_assert(rs->has_output);
        cr_expect(eq(u64, rs->entries_out, kept));
        t = open_output(id, rs->file_size);
        eng_compaction_free(job);
        expect_scan(t, in.want, kept);
        expect_gets(t, in.want, kept);
        eng_sst_table_unref(t);
}

Test(compaction, a_clipped_job_keeps_only_the_keys_of_its_range)
{
        for (uint64_t seed = 0; seed < 8; seed++) {
                uint32_t lo = (uint32_t)(seed * 7 % MODEL_KEYS);
                uint32_t hi = seed % 3 == 0 ? 0 : (uint32_t)(lo + 1 + seed * 5 % (MODEL_KEYS - lo));

                if (hi >= MODEL_KEYS)
                        hi = 0;
                job_readahead = readaheads[seed % ARRAY_SIZE(readaheads)];
                inputs_make(seed, 2 + (uint32_t)(seed % 4), 0, NULL);
                check_clipped_job(seed % 2 == 0, lo, hi);
                inputs_free();
        }
}

Test(compaction, streamed_inputs_leave_the_cache_alone_and_cached_ones_fill_it)
{
        const struct eng_block_cache_stats *st = eng_block_cache_stats(cache);

        struct eng_compaction_opts o;
        struct eng_compaction *job;

        inputs_make(16, 4, 400, NULL);
        cold_cache();
        o = job_opts(true, next_file_id++);
        cr_assert(eq(int, run_job(&o, &job), 0));
        eng_compaction_free(job);
        cr_expect(eq(u64, st->blocks, 0), "streamed: no block cached");
        cr_expect(eq(u64, st->misses + st->hits, 0), "streamed: the cache never asked");
        job_readahead = ENG_COMPACT_READ_CACHED;
        o = job_opts(true, next_file_id++);
        cr_assert(eq(int, run_job(&o, &job), 0));
        eng_compaction_free(job);
        cr_expect(gt(u64, st->blocks, 0), "cached: the inputs' blocks");
}

/* Everything a tombstone, or expired. */
static void all_dead(struct mver *v)
{
        if (v->kind == ENG_ENTRY_VALUE)
                v->expiry_ms = MODEL_NOW_MS - 1 - v->seq % 100;
}

Test(compaction, every_version_dropped_at_the_bottom_makes_no_file)
{
        inputs_make(10, 3, 50, all_dead);
        check_job(true, true);          /* no output; the counters still add up */
        check_job(true, false);
        check_job(false, true);         /* above the bottom they are all kept */
}

Test(compaction, the_owner_may_drop_the_inputs_while_the_job_runs)
{
        struct job_wait jw = { 0 };
        struct eng_compaction *job;
        struct eng_compaction_opts o;

        inputs_make(11, 3, 300, NULL);
        o = job_opts(true, next_file_id++);
        cold_cache();
        cr_assert(eq(int, eng_compaction_start(fs, &o, on_job, &jw, &job), 0));
        for (uint32_t i = 0; i < in.n; i++) {
                eng_sst_table_unref(in.t[i]);   /* the job holds its own references */
                in.t[i] = NULL;
        }
        cr_assert(eq(int, rx_loop_run_until(loop, &jw.done), 0));
        cr_expect(eq(int, jw.res, 0));
        cr_expect(eng_compaction_result(job)->has_output);
        eng_compaction_free(job);
        cr_expect(eq(u64, pins(), 0));
}

Test(compaction, a_tiny_rate_throttles_the_output)
{
        struct eng_compaction *job;
        struct eng_compaction_opts o;
        uint64_t throttled;

        inputs_make(12, 2, 400, NULL);
        o = job_opts(false, next_file_id++);
        o.out.chunk_bytes = 4096;
        o.out.rate_bytes_per_sec = 512u << 10;  /* ~100 KB of output: ~0.2 s, slower than ASan */
        cr_assert(eq(int, run_job(&o, &job), 0));
        throttled = eng_compaction_result(job)->throttled_ns;
        cr_expect(gt(u64, eng_compaction_result(job)->file_size, 8 * 4096));
        cr_expect(gt(u64, throttled, 0), "the throttle engaged");
        eng_compaction_free(job);
        eng_compaction_free(NULL);
}

Test(compaction, bad_inputs_are_refused_and_done_never_runs)
{
        struct job_wait jw = { 0 };
        struct eng_compaction *job = NULL;
        struct eng_compaction_opts o;

        inputs_make(13, 2, 20, NULL);
        o = job_opts(false, next_file_id++);
        o.n_inputs = 0;
        cr_expect(eq(int, eng_compaction_start(fs, &o, on_job, &jw, &job), -EINVAL));
        o = job_opts(false, next_file_id++);
        o.out.path = NULL;
        cr_expect(eq(int, eng_compaction_start(fs, &o, on_job, &jw, &job), -EINVAL));
        o = job_opts(false, next_file_id++);
        o.out.chunk_bytes = 1000;
        cr_expect(eq(int, eng_compaction_start(fs, &o, on_job, &jw, &job), -EINVAL));
        o = job_opts(false, next_file_id++);
        o.readahead_bytes = 1000;
        cr_expect(eq(int, eng_compaction_start(fs, &o, on_job, &jw, &job), -EINVAL));
        o = job_opts(false, next_file_id++);
        o.inputs = &in.t[0];
        o.n_inputs = 1;
        cr_expect(eq(int, run_job(&o, &job), 0), "one table alone is fine");
        eng_compaction_free(job);
        cr_expect(eq(int, jw.calls, 0));
}

/* Runs a job that must fail with want_err, leaving no output behind. */
static void expect_failure(int want_err, const char *what)
{
        struct eng_compaction *job;
        struct eng_compaction_opts o = job_opts(true, next_file_id++);

        cr_expect(eq(int, run_job(&o, &job), want_err), "%s", what);
        cr_expect(not(eng_compaction_result(job)->has_output), "%s", what);
        cr_expect(not(file_exists(out_path)), "%s: the partial output is gone", what);
        cr_expect(eq(u64, pins(), 0), "%s", what);
        eng_compaction_free(job);
}

Test(compaction, write_and_sync_failures_fail_the_job_and_leave_no_file)
{
        inputs_make(14, 4, 400, NULL);
        eng_fault_fs_fail(fs, ENG_FS_WRITE, EIO, 1);
        expect_failure(-EIO, "write");
        eng_fault_fs_fail(fs, ENG_FS_WRITE, ENOSPC, 1);
        cold_cache();
        expect_failure(-ENOSPC, "write while reading cold blocks");
        eng_fault_fs_fail(fs, ENG_FS_FDATASYNC, EIO, 1);
        expect_failure(-EIO, "fdatasync");
        eng_fault_fs_fail(fs, ENG_FS_OPEN, EACCES, 1);
        expect_failure(-EACCES, "open");
        check_job(true, true);          /* and then it works */
}

/* Reads the first data block of every input, so that the next read is a
 * readahead the scan meets later. */
static void warm_first_blocks(void)
{
        for (uint32_t i = 0; i < in.n; i++) {
                struct engine_test_move mw = { 0 };
                struct eng_sst_iter *it;
                int r;

                cr_assert(eq(int, eng_sst_iter_new(in.t[i], &it), 0));
                r = eng_sst_iter_seek_first(it, on_move, &mw);
                cr_assert(eq(int, engine_test_move_finish(loop, r, &mw), 1));
                eng_sst_iter_free(it);
        }
}

Test(compaction, read_failures_fail_the_job_before_or_after_the_output_is_started)
{
        job_readahead = ENG_COMPACT_READ_CACHED;
        inputs_make(15, 3, 400, NULL);
        cold_cache();
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        expect_failure(-EIO, "the first read");
        cold_cache();
        warm_first_blocks();
        /* Let the readaheads land, then drop all but the first blocks. */
        cold_cache();
        warm_first_blocks();
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        expect_failure(-EIO, "a read mid-way");
        check_job(true, false);
}

Test(compaction, streamed_read_failures_and_corrupt_blocks_fail_the_job)
{
        const struct eng_sst_reader *rd;
        char p[PATH_MAX + 32];

        job_readahead = 4096;
        inputs_make(17, 3, 400, NULL);
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        expect_failure(-EIO, "the first read");
        /* Mid-way: a bad block in the middle of the oldest input. */
        rd = eng_sst_table_reader(in.t[2]);
        cr_assert(gt(u32, eng_sst_reader_n_blocks(rd), 4));
        model_sst_path(p, dir, in.file_id[2]);
        engine_test_flip_byte(p, eng_sst_reader_block(rd, eng_sst_reader_n_blocks(rd) / 2).offset +
                                         64);
        expect_failure(-SCREE_ECORRUPT, "a corrupt block mid-way");
        job_readahead = 0;
        expect_failure(-SCREE_ECORRUPT, "a corrupt block in a default chunk");
}
