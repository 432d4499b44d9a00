/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manifest file (engine/manifest.h) on the fault-injecting file layer:
 * create then load gives the same state; many edits are acknowledged once
 * durable and share syncs; crossing the rewrite threshold keeps the state
 * and shrinks the file; a power cut at a random moment, torn or not, keeps
 * every acknowledged edit and never reads back as corruption; a failed
 * fdatasync, write, rename or directory fsync stops the manifest; a
 * missing MANIFEST is ENOTFOUND, a leftover MANIFEST.tmp is ignored, a
 * damaged one is corrupt, and create cuts a torn tail; a version 1 file
 * loads and create rewrites it as version 2.
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

#include "base/checksum.h"
#include "base/compiler.h"
#include "engine/fault_fs.h"
#include "engine/manifest.h"
#include "tests/engine/helpers.h"
#include "tests/engine/manifest_helpers.h"
#include "tests/tmpdir.h"

#define MAX_EDITS 3000
#define N_TABLETS 4

static char dir[PATH_MAX];
static struct rx_loop *loop;
static struct eng_fs *fs;

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "manifest");
        engine_test_loop_fs(&loop, &fs);
}

static void teardown(void)
{
        eng_fs_free(fs);
        rx_loop_free(loop);
        tmpdir_remove(dir);
}

TestSuite(manifest, .init = setup, .fini = teardown, .timeout = 60);

/* ---- driving the manifest ---- */

struct req {
        struct eng_manifest_write w;
        int res;
        bool done;
};

static struct req reqs[MAX_EDITS];
static unsigned n_acked_in_order;       /* acknowledgements so far; they must come in order */
static bool *wake;                      /* set when the awaited edit completes */
static struct req *awaited;

static void req_done(struct eng_manifest_write *w, int res)
{
        struct req *q = container_of(w, struct req, w);

        cr_assert(not(q->done), "acknowledged twice");
        cr_assert(eq(ptr, q, &reqs[n_acked_in_order]), "acknowledged out of order");
        n_acked_in_order++;
        q->res = res;
        q->done = true;
        if (q == awaited && wake)
                *wake = true;
}

struct result {
        int res;
        bool done;
        struct eng_manifest_state state;
};

static void res_done(void *arg, int res)
{
        struct result *r = arg;

        r->res = res;
        r->done = true;
}

static void load_done(void *arg, int res, const struct eng_manifest_state *state)
{
        struct result *r = arg;

        r->res = res;
        r->done = true;
        cr_assert(eq(int, res == 0, state != NULL));
        if (state)
                cr_assert(eq(int, eng_manifest_state_copy(&r->state, state), 0));
}

static struct eng_manifest *create_on(struct eng_fs *f, const char *d,
                                      const struct eng_manifest_state *s, int want)
{
        struct result r = { 0 };
        struct eng_manifest *m;

        cr_assert(eq(int, eng_manifest_create(f, d, s, res_done, &r, &m), 0));
        cr_assert(not(r.done), "create completed inside the call");
        cr_assert(eq(int, rx_loop_run_until(loop, &r.done), 0));
        cr_assert(eq(int, r.res, want), "create: %s", scree_strerror(r.res));
        return m;
}

static int close_manifest(struct eng_manifest *m)
{
        struct result r = { 0 };

        cr_assert(eq(int, eng_manifest_close(m, res_done, &r), 0));
        cr_assert(not(r.done), "close completed inside the call");
        cr_assert(eq(int, rx_loop_run_until(loop, &r.done), 0));
        return r.res;
}

/* Loads from d through f; on success *ret holds a copy of the state. */
static int load_from(struct eng_fs *f, const char *d, struct eng_manifest_state *ret)
{
        struct result r = { 0 };

        cr_assert(eq(int, eng_manifest_load(f, d, load_done, &r), 0));
        cr_assert(not(r.done), "load completed inside the call");
        cr_assert(eq(int, rx_loop_run_until(loop, &r.done), 0));
        if (r.res == 0)
                *ret = r.state;
        return r.res;
}

static void empty_state(struct eng_manifest_state *s)
{
        struct eng_manifest_layout layout = { .shard = 1, .n_shards = 2,
                                              .tablets_per_shard = N_TABLETS };

        eng_manifest_state_init(s, &layout);
        s->next_file_id = 1;
        s->log_segment = 1;
}

static uint64_t fingerprint(const struct eng_manifest_state *s)
{
        size_t n = eng_manifest_snapshot_size(s);
        uint8_t *p = malloc(n);
        uint64_t h;

        cr_assert(not(eq(ptr, p, NULL)));
        eng_manifest_snapshot_encode(p, s);
        h = checksum64(p, n, 0);
        free(p);
        return h;
}

/* ---- random edits that apply to a model state ---- */

struct gen {
        uint64_t rng;
        struct eng_manifest_tablet new_tablets[1];
        uint8_t keys[8];                /* the new tablet's range */
        struct eng_manifest_table added[1], removed[2];
        uint32_t tablets[1];
        uint64_t seqs[1];
        struct eng_manifest_edit e;
};

static uint64_t fps[MAX_EDITS + 1];     /* fingerprint of the model after i edits */

static uint64_t next_rand(uint64_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

/* Makes g->e: one table added to a random tablet (flushing it; the
 * tablet's first flush makes its entry, the whole of a table of its own
 * id), and past eight tables the two oldest removed, so the state stays
 * small while the file grows; now and then the ids move on. */
static const struct eng_manifest_edit *gen_edit(struct gen *g, const struct eng_manifest_state *s)
{
        /* Sparse ids, as catalog ids are; the first table of one adds its entry. */
        uint32_t t = 3 + 7 * (uint32_t)(next_rand(&g->rng) % N_TABLETS);
        uint64_t min = eng_manifest_flushed_seq(s, t) + 1;

        g->added[0] = (struct eng_manifest_table){ .tablet = t, .file_id = s->next_file_id,
                                                   .file_size = 4096 * (1 + next_rand(&g->rng) % 64),
                                                   .min_seq = min };
        g->added[0].max_seq = min + next_rand(&g->rng) % 50;
        g->tablets[0] = t;
        g->seqs[0] = g->added[0].max_seq;
        g->e = (struct eng_manifest_edit){ .added = g->added, .n_added = 1,
                                           .flushed_tablets = g->tablets, .flushed_seqs = g->seqs,
                                           .n_flushed = 1 };
        if (!eng_manifest_has_tablet(s, t)) {
                g->new_tablets[0] = (struct eng_manifest_tablet){
                        .id = t, .table = t, .start = g->keys, .end = g->keys + 4,
                        .start_len = 4, .end_len = 4,
                };
                be32_put(g->keys, t);
                be32_put(g->keys + 4, t + 1);
                g->e.new_tablets = g->new_tablets;
                g->e.n_new_tablets = 1;
        }
        if (s->n_tables > 8) {
                g->removed[0] = s->tables[0];
                g->removed[1] = s->tables[1];
                g->e.removed = g->removed;
                g->e.n_removed = 2;
        }
        if (next_rand(&g->rng) % 8 == 0)
                g->e.next_file_id = s->next_file_id + 3;
        if (next_rand(&g->rng) % 8 == 0)
                g->e.log_segment = s->log_segment + 1;
        return &g->e;
}

/* A fresh run of edits from an empty model. */
static void begin(struct eng_manifest_state *model)
{
        empty_state(model);
        memset(reqs, 0, sizeof(reqs));
        n_acked_in_order = 0;
        fps[0] = fingerprint(model);
}

/* Applies edit i (a random one) to m and to the model. */
static void apply_next(struct eng_manifest *m, struct gen *g, struct eng_manifest_state *model,
                       unsigned i)
{
        const struct eng_manifest_edit *e = gen_edit(g, model);

        cr_assert(lt(u32, i, MAX_EDITS));
        reqs[i].w.done = req_done;
        cr_assert(eq(int, eng_manifest_apply(m, e, &reqs[i].w), 0), "edit %u", i);
        cr_assert(eq(int, eng_manifest_state_apply(model, e), 0));
        fps[i + 1] = fingerprint(model);
}

/* Runs the loop until edit i completes (or the cut is asked for). */
static void wait_for(unsigned i, bool already)
{
        bool woke = already;

        wake = &woke;
        awaited = &reqs[i];
        cr_assert(eq(int, rx_loop_run_until(loop, &woke), 0));
        wake = NULL;
}

/* Applies n edits (the first is *i) in random bursts, running the loop
 * until each burst is acknowledged. */
static void apply_bursts(struct eng_manifest *m, struct gen *g, struct eng_manifest_state *model,
                         unsigned *i, unsigned n)
{
        for (unsigned end = *i + n; *i < end;) {
                unsigned burst = 1 + (unsigned)(next_rand(&g->rng) % 60);

                for (unsigned k = 0; k < burst && *i < end; k++, (*i)++)
                        apply_next(m, g, model, *i);
                wait_for(*i - 1, false);
        }
}

/* Checks that MANIFEST in dir loads as want. */
static void expect_loads_as(const struct eng_manifest_state *want)
{
        struct eng_manifest_state got;

        cr_assert(eq(int, load_from(fs, dir, &got), 0));
        cr_expect(manifest_state_is_equal(&got, want));
        eng_manifest_state_fini(&got);
}

/* Closes m (which must succeed), checks that MANIFEST loads as model and
 * frees model. */
static void close_and_expect(struct eng_manifest *m, struct eng_manifest_state *model)
{
        cr_assert(eq(int, close_manifest(m), 0));
        expect_loads_as(model);
        eng_manifest_state_fini(model);
}

/* Whether s is the model after k edits for some k in [lo, hi]. */
static bool is_state_after(const struct eng_manifest_state *s, unsigned lo, unsigned hi)
{
        uint64_t fp = fingerprint(s);

        for (unsigned k = lo; k <= hi; k++)
                if (fps[k] == fp)
                        return true;
        return false;
}

/* Edits acknowledged with success, from the first. */
static unsigned count_acked(unsigned n)
{
        unsigned k = 0;

        while (k < n && reqs[k].done && reqs[k].res == 0)
                k++;
        return k;
}

static off_t file_size(const char *name)
{
        char p[PATH_MAX + 32];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        return stat(p, &st) == 0 ? st.st_size : -1;
}

static void write_file(const char *name, const void *p, size_t n, off_t off)
{
        char path[PATH_MAX + 32];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fd = open(path, O_CREAT | O_WRONLY, 0644);
        cr_assert(ge(int, fd, 0));
        cr_assert(eq(i64, (int64_t)pwrite(fd, p, n, off), (int64_t)n));
        close(fd);
}

/* ---- creating, editing, loading ---- */

Test(manifest, create_then_load_gives_the_same_state)
{
        struct eng_manifest_state s;
        struct eng_manifest *m;

        manifest_sample_state(&s);
        m = create_on(fs, dir, &s, 0);
        cr_expect(manifest_state_is_equal(eng_manifest_state(m), &s));
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->dirs_unsynced, 0), "the rename must be made durable");
        cr_expect(eq(i64, (int64_t)file_size("MANIFEST"),
                     (int64_t)eng_manifest_stats(m)->snapshot_bytes));
        cr_expect(eq(i64, (int64_t)file_size("MANIFEST.tmp"), -1));
        close_and_expect(m, &s);
}

/* A directory written before version 2: its manifest loads with catalog
 * ids, and the fresh file create writes at every start is version 2 and
 * loads back the same; edits keyed by catalog id go on from there. */
/* The ranges the catalog would give the version 1 sample's tablets: each
 * the whole of a table of its own id. */
static void fill_v1_sample_ranges(struct eng_manifest_state *s)
{
        static const uint32_t ids[] = { 1, 3, 7, 11, 13 };
        struct eng_manifest_tablet r[5] = { 0 };
        uint8_t keys[5][16];

        for (uint32_t i = 0; i < 5; i++) {
                r[i].id = ids[i];
                manifest_range_set(&r[i], ids[i], "", NULL, keys[i]);
        }
        cr_assert(eq(int, eng_manifest_state_fill_ranges(s, r, 5), 0));
        cr_assert(eng_manifest_state_is_ranged(s));
}

Test(manifest, a_version_1_file_loads_unranged_and_is_rewritten_as_version_3_once_ranged)
{
        static uint8_t buf[4096];
        static const uint32_t t7[] = { 7 };
        static const struct eng_manifest_table t7_tables[] = { { .tablet = 7, .file_id = 4 } };
        const struct eng_manifest_edit drop = { .removed = t7_tables, .n_removed = 1,
                                                .dropped_tablets = t7, .n_dropped = 1 };
        struct eng_manifest_state got, want;
        struct eng_manifest *m;
        uint8_t h[ENG_MANIFEST_HEADER_BYTES];
        char path[PATH_MAX + 32];
        FILE *f;

        write_file("MANIFEST", buf, manifest_v1_sample_file(buf, sizeof(buf), 0x1234), 0);
        cr_assert(eq(int, load_from(fs, dir, &got), 0));
        manifest_v1_sample_want(&want);
        cr_expect(manifest_state_is_equal(&got, &want));
        cr_expect(not(eng_manifest_state_is_ranged(&got)));
        cr_expect(eq(int, eng_manifest_create(fs, dir, &got, res_done, NULL, &m), -EINVAL),
                  "no file is written without ranges");
        fill_v1_sample_ranges(&got);
        fill_v1_sample_ranges(&want);
        m = create_on(fs, dir, &got, 0);
        snprintf(path, sizeof(path), "%s/MANIFEST", dir);
        f = fopen(path, "rb");
        cr_assert(not(eq(ptr, f, NULL)));
        cr_assert(eq(sz, fread(h, 1, sizeof(h), f), sizeof(h)));
        fclose(f);
        cr_expect(eq(u32, h[8] | (uint32_t)h[9] << 8, 3), "rewritten as version 3");
        memset(reqs, 0, sizeof(reqs));
        n_acked_in_order = 0;
        reqs[0].w.done = req_done;
        cr_assert(eq(int, eng_manifest_apply(m, &drop, &reqs[0].w), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &reqs[0].done), 0));
        cr_assert(eq(int, reqs[0].res, 0));
        cr_assert(eq(int, eng_manifest_state_apply(&want, &drop), 0));
        cr_assert(eq(int, close_manifest(m), 0));
        eng_manifest_state_fini(&got);
        cr_assert(eq(int, load_from(fs, dir, &got), 0));
        cr_expect(manifest_state_is_equal(&got, &want));
        cr_expect(eng_manifest_state_is_ranged(&got));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&got, 7), 0));
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&want);
}

Test(manifest, edits_are_acknowledged_once_durable_share_syncs_and_load_back)
{
        struct eng_manifest_state model;
        struct gen g = { .rng = 11 };
        struct eng_manifest *m;
        unsigned n = 0;

        begin(&model);
        m = create_on(fs, dir, &model, 0);
        apply_bursts(m, &g, &model, &n, 400);
        cr_expect(eq(u32, count_acked(n), n));
        cr_expect(manifest_state_is_equal(eng_manifest_state(m), &model));
        cr_expect(lt(u64, eng_manifest_stats(m)->syncs, n / 2), "group commit shares syncs");
        cr_expect(eq(u64, eng_manifest_stats(m)->snapshots, 1),
                  "400 small edits stay below the threshold");
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0));
        close_and_expect(m, &model);
}

Test(manifest, crossing_the_rewrite_threshold_keeps_the_state_and_shrinks_the_file)
{
        struct eng_manifest_state model;
        struct gen g = { .rng = 5 };
        struct eng_manifest *m;
        unsigned n = 0;

        begin(&model);
        m = create_on(fs, dir, &model, 0);
        apply_bursts(m, &g, &model, &n, 2000);     /* ~250 KB of edits over a state of ~500 bytes */
        cr_expect(eq(u32, count_acked(n), n));
        cr_expect(ge(u64, eng_manifest_stats(m)->snapshots, 3), "two rewrites at least");
        cr_expect(lt(i64, (int64_t)file_size("MANIFEST"), ENG_MANIFEST_REWRITE_MIN_BYTES + 16 * 1024));
        cr_expect(eq(i64, (int64_t)file_size("MANIFEST"), (int64_t)eng_manifest_stats(m)->file_bytes));
        cr_expect(eq(i64, (int64_t)file_size("MANIFEST.tmp"), -1));
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->dirs_unsynced, 0));
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0));
        cr_expect(manifest_state_is_equal(eng_manifest_state(m), &model));
        close_and_expect(m, &model);
}

Test(manifest, close_writes_pending_edits_and_then_refuses_more)
{
        struct eng_manifest_state model;
        struct gen g = { .rng = 21 };
        struct eng_manifest *m;
        struct result r = { 0 };

        begin(&model);
        m = create_on(fs, dir, &model, 0);
        for (unsigned i = 0; i < 10; i++)
                apply_next(m, &g, &model, i);
        cr_assert(eq(int, eng_manifest_close(m, res_done, &r), 0));
        cr_expect(eq(int, eng_manifest_close(m, res_done, &r), -EALREADY));
        reqs[10].w.done = req_done;
        cr_expect(eq(int, eng_manifest_apply(m, gen_edit(&g, &model), &reqs[10].w), -SCREE_ESHUTDOWN));
        cr_assert(eq(int, rx_loop_run_until(loop, &r.done), 0));
        cr_expect(eq(int, r.res, 0));
        cr_expect(eq(u32, count_acked(10), 10), "pending edits complete before close does");
        cr_expect(eq(int, reqs[10].done, false));
        expect_loads_as(&model);
        eng_manifest_state_fini(&model);
}

Test(manifest, edits_applied_before_the_first_snapshot_is_published_follow_it)
{
        struct eng_manifest_state model;
        struct gen g = { .rng = 4 };
        struct eng_manifest *m;
        struct result r = { 0 };

        begin(&model);
        cr_assert(eq(int, eng_manifest_create(fs, dir, &model, res_done, &r, &m), 0));
        for (unsigned i = 0; i < 5; i++)
                apply_next(m, &g, &model, i);
        wait_for(4, false);
        cr_expect(r.done, "create completes before the edits after it");
        cr_expect(eq(int, r.res, 0));
        cr_expect(eq(u32, count_acked(5), 5));
        close_and_expect(m, &model);
}

Test(manifest, an_invalid_state_or_edit_is_refused_and_changes_nothing)
{
        static const struct eng_manifest_table missing[] = { { .tablet = 0, .file_id = 99 } };
        struct eng_manifest_edit bad = { .removed = missing, .n_removed = 1 };
        struct eng_manifest_state s, before;
        struct eng_manifest *m;
        struct result r = { 0 };

        manifest_sample_state(&s);
        s.next_file_id = 8;             /* table 8 is not below it */
        cr_expect(eq(int, eng_manifest_create(fs, dir, &s, res_done, &r, &m), -EINVAL));
        s.next_file_id = 9;
        m = create_on(fs, dir, &s, 0);
        manifest_sample_state(&before);
        reqs[0].w.done = req_done;
        cr_expect(eq(int, eng_manifest_apply(m, &bad, &reqs[0].w), -EINVAL));
        cr_expect(manifest_state_is_equal(eng_manifest_state(m), &before));
        cr_assert(eq(int, close_manifest(m), 0));
        cr_expect(eq(int, reqs[0].done, false));
        eng_manifest_state_fini(&s);
        eng_manifest_state_fini(&before);
}

/* ---- power cuts ---- */

static unsigned ops_seen, cut_at;
static bool cut_now, in_rewrite_only, rewrite_seen;

/* Counts ops as they are submitted -- all of them, or from the first open
 * (a rewrite starting) on -- and at the chosen one asks for the cut. The
 * op is then queued but not yet submitted: the cut comes before it runs. */
static int count_ops(void *ctx, enum rx_op_kind kind, const struct rx_op *op)
{
        (void)ctx;
        (void)op;
        if (kind == RX_OP_OPEN)
                rewrite_seen = true;
        if (in_rewrite_only && !rewrite_seen)
                return 0;
        if (++ops_seen == cut_at) {
                cut_now = true;
                if (wake)
                        *wake = true;
        }
        return 0;
}

/* Edits in waves until the cut is asked for (or 40 waves are done).
 * Returns the number of edits applied. */
static unsigned edit_until_cut(struct eng_manifest *m, struct gen *g, struct eng_manifest_state *model)
{
        unsigned n = 0;

        for (int wave = 0; wave < 40 && !cut_now; wave++) {
                unsigned burst = 1 + (unsigned)(next_rand(&g->rng) % 60);

                for (unsigned k = 0; k < burst; k++, n++)
                        apply_next(m, g, model, n);
                wait_for(n - 1, cut_now);
        }
        return n;
}

/* One round in a fresh directory and fs: edits, a cut at op cut_at (see
 * count_ops), then a load through a new fs must give the state after
 * every acknowledged edit and maybe some of the others. */
static void power_cut_round(uint64_t seed, bool rewrite_only, unsigned at)
{
        struct eng_manifest_state model, got;
        struct gen g = { .rng = seed * UINT64_C(0x9e3779b97f4a7c15) + 1 };
        char sub[PATH_MAX + 32];
        struct eng_fs *rfs = eng_fault_fs_new(loop), *after;
        struct eng_manifest *m;
        unsigned n, n_acked;
        int r;

        snprintf(sub, sizeof(sub), "%s/r%llu", dir, (unsigned long long)seed);
        cr_assert(eq(int, mkdir(sub, 0755), 0));
        begin(&model);
        m = create_on(rfs, sub, &model, 0);
        ops_seen = 0;
        cut_now = rewrite_seen = false;
        in_rewrite_only = rewrite_only;
        cut_at = at;
        rx_loop_set_fault(loop, count_ops, NULL);
        n = edit_until_cut(m, &g, &model);
        rx_loop_set_fault(loop, NULL, NULL);
        cr_assert(cut_now || !rewrite_only, "seed %llu: no rewrite", (unsigned long long)seed);
        n_acked = count_acked(n);
        cr_assert(eq(int, eng_fault_fs_power_cut(rfs, seed & 1, seed), 0));
        close_manifest(m);      /* whatever was in flight fails */
        for (unsigned i = 0; i < n; i++)
                cr_assert(reqs[i].done, "seed %llu: edit %u never completed",
                          (unsigned long long)seed, i);
        eng_fs_free(rfs);
        after = eng_fault_fs_new(loop);
        r = load_from(after, sub, &got);
        cr_assert(eq(int, r, 0), "seed %llu: load after a power cut: %s", (unsigned long long)seed,
                  scree_strerror(r));
        cr_expect(is_state_after(&got, n_acked, n), "seed %llu: not the state after %u..%u edits",
                  (unsigned long long)seed, n_acked, n);
        eng_fs_free(after);
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&model);
}

Test(manifest, a_power_cut_at_any_moment_keeps_every_acknowledged_edit)
{
        uint64_t rng = 42;

        /* About 2 ops per wave, 6 per rewrite: the cut lands anywhere. */
        for (uint64_t seed = 1; seed <= 12; seed++)
                power_cut_round(seed, false, 1 + (unsigned)(next_rand(&rng) % 150));
}

Test(manifest, a_power_cut_during_a_rewrite_keeps_every_acknowledged_edit)
{
        /* Before each of: open tmp, write, fdatasync, rename, fsync the
         * directory, close the old file, the first append after. */
        for (uint64_t seed = 1; seed <= 14; seed++)
                power_cut_round(100 + seed, true, 1 + (unsigned)(seed % 7));
}

/* ---- failures ---- */

/* Applies edits first..first+n-1 and runs until the last completes. */
static void apply_and_wait(struct eng_manifest *m, struct gen *g, struct eng_manifest_state *model,
                           unsigned first, unsigned n)
{
        for (unsigned i = first; i < first + n; i++)
                apply_next(m, g, model, i);
        wait_for(first + n - 1, false);
}

/* A failure of `kind` while appending: the edits it covered get the error,
 * later ones are refused, close reports it, and the file still loads with
 * every acknowledged edit. */
static void append_failure(enum eng_fs_kind kind, int err)
{
        struct eng_manifest_state model, got;
        struct gen g = { .rng = 3 };
        struct eng_manifest *m;

        begin(&model);
        m = create_on(fs, dir, &model, 0);
        apply_and_wait(m, &g, &model, 0, 5);
        cr_assert(eq(u32, count_acked(5), 5));
        eng_fault_fs_fail(fs, kind, err, 1);
        apply_and_wait(m, &g, &model, 5, 3);
        for (unsigned i = 5; i < 8; i++)
                cr_expect(eq(int, reqs[i].res, -err), "edit %u", i);
        reqs[8].w.done = req_done;
        cr_expect(eq(int, eng_manifest_apply(m, gen_edit(&g, &model), &reqs[8].w), -err),
                  "no retry: the manifest is stopped");
        cr_expect(eq(int, close_manifest(m), -err));
        cr_expect(eq(int, reqs[8].done, false));
        cr_assert(eq(int, load_from(fs, dir, &got), 0));
        /* A failed fdatasync may leave the written edits readable. */
        cr_expect(is_state_after(&got, 5, kind == ENG_FS_WRITE ? 5 : 8));
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&model);
}

Test(manifest, a_failed_fdatasync_fails_the_edits_and_stops_the_manifest)
{
        append_failure(ENG_FS_FDATASYNC, EIO);
}

Test(manifest, a_failed_write_fails_the_edits_and_stops_the_manifest)
{
        append_failure(ENG_FS_WRITE, EIO);
}

/* Regression (issue 23): an append that ran out of space stopped the
 * manifest, and with it the shard's writes, until a restart. It waits
 * and is written again once space returns; its edits are acknowledged
 * then, in order. */
Test(manifest, an_append_out_of_space_waits_and_is_written_once_space_returns)
{
        struct eng_manifest_state model, got;
        struct gen g = { .rng = 4 };
        struct eng_manifest *m;

        begin(&model);
        m = create_on(fs, dir, &model, 0);
        apply_and_wait(m, &g, &model, 0, 5);
        eng_fault_fs_fail(fs, ENG_FS_WRITE, ENOSPC, -1);
        for (unsigned i = 5; i < 8; i++)
                apply_next(m, &g, &model, i);
        TEST_RUN_UNTIL(loop, eng_manifest_is_full(m));
        cr_expect(eq(int, reqs[5].done, false), "not failed: waits for space");
        eng_fault_fs_fail(fs, ENG_FS_WRITE, 0, 0);
        wait_for(7, false);
        cr_expect(eq(u32, count_acked(8), 8));
        cr_expect(not(eng_manifest_is_full(m)));
        apply_and_wait(m, &g, &model, 8, 2);
        cr_expect(eq(int, close_manifest(m), 0));
        cr_assert(eq(int, load_from(fs, dir, &got), 0));
        cr_expect(is_state_after(&got, 10, 10));
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&model);
}

/* A close while an append waits for space gives it up: its edits fail
 * with -ENOSPC, the close succeeds, the file holds every acknowledged
 * edit. */
Test(manifest, a_close_while_out_of_space_gives_the_waiting_edits_up)
{
        struct eng_manifest_state model, got;
        struct gen g = { .rng = 5 };
        struct eng_manifest *m;

        begin(&model);
        m = create_on(fs, dir, &model, 0);
        apply_and_wait(m, &g, &model, 0, 5);
        eng_fault_fs_fail(fs, ENG_FS_WRITE, ENOSPC, -1);
        apply_next(m, &g, &model, 5);
        TEST_RUN_UNTIL(loop, eng_manifest_is_full(m));
        cr_expect(eq(int, close_manifest(m), 0));
        cr_expect(eq(int, reqs[5].res, -ENOSPC));
        eng_fault_fs_fail(fs, ENG_FS_WRITE, 0, 0);
        cr_assert(eq(int, load_from(fs, dir, &got), 0));
        cr_expect(is_state_after(&got, 5, 5));
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&model);
}

/* A first snapshot that runs out of space fails the create and leaves no
 * MANIFEST.tmp behind. */
Test(manifest, a_create_out_of_space_fails_and_leaves_no_file)
{
        struct eng_manifest_state model;
        struct eng_manifest *m;
        char path[PATH_MAX + 32];

        begin(&model);
        eng_fault_fs_fail(fs, ENG_FS_WRITE, ENOSPC, -1);
        m = create_on(fs, dir, &model, -ENOSPC);
        cr_expect(eq(int, close_manifest(m), -ENOSPC));
        snprintf(path, sizeof(path), "%s/MANIFEST.tmp", dir);
        cr_expect(eq(int, access(path, F_OK), -1));
        snprintf(path, sizeof(path), "%s/MANIFEST", dir);
        cr_expect(eq(int, access(path, F_OK), -1));
        eng_manifest_state_fini(&model);
}

/* A rewrite that fails at its first op of `kind`: the edits it was to
 * publish fail, the manifest stops, and MANIFEST still loads with every
 * acknowledged edit (and, if the rename happened, the failed ones too). */
static void rewrite_failure(enum eng_fs_kind kind, bool renamed)
{
        struct eng_manifest_state model, got;
        struct gen g = { .rng = 8 };
        struct eng_manifest *m;
        unsigned n = 0, n_acked;

        begin(&model);
        m = create_on(fs, dir, &model, 0);
        eng_fault_fs_fail(fs, kind, EIO, 1);
        /* Rounds of 20 edits until one fails: the rewrite comes at ~64 KiB. */
        while (n + 20 <= MAX_EDITS && (n == 0 || reqs[n - 1].res == 0)) {
                apply_and_wait(m, &g, &model, n, 20);
                n += 20;
        }
        cr_assert(eq(int, reqs[n - 1].res, -EIO), "no rewrite ran");
        cr_expect(eq(u64, eng_manifest_stats(m)->snapshots, 1));
        n_acked = count_acked(n);
        for (unsigned i = n_acked; i < n; i++)
                cr_expect(eq(int, reqs[i].res, -EIO), "edit %u", i);
        cr_expect(eq(int, close_manifest(m), -EIO));
        cr_assert(eq(int, load_from(fs, dir, &got), 0));
        cr_expect(is_state_after(&got, n_acked, renamed ? n : n_acked));
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&model);
}

Test(manifest, a_rewrite_that_cannot_open_its_file_stops_the_manifest)
{
        rewrite_failure(ENG_FS_OPEN, false);
}

Test(manifest, a_failed_rename_stops_the_manifest_and_keeps_the_old_file)
{
        rewrite_failure(ENG_FS_RENAME, false);
}

Test(manifest, a_failed_directory_fsync_stops_the_manifest)
{
        rewrite_failure(ENG_FS_FSYNC, true);
}

Test(manifest, a_create_that_fails_reports_it_and_leaves_no_manifest)
{
        struct eng_manifest_state s, got;
        struct eng_manifest *m;

        manifest_sample_state(&s);
        eng_fault_fs_fail(fs, ENG_FS_OPEN, EACCES, 1);
        m = create_on(fs, dir, &s, -EACCES);
        reqs[0].w.done = req_done;
        cr_expect(eq(int, eng_manifest_apply(m, &(struct eng_manifest_edit){ 0 }, &reqs[0].w), -EACCES));
        cr_expect(eq(int, close_manifest(m), -EACCES));
        cr_expect(eq(int, load_from(fs, dir, &got), -SCREE_ENOTFOUND));
        eng_manifest_state_fini(&s);
}

/* ---- loading ---- */

Test(manifest, a_missing_manifest_is_not_found_and_a_leftover_tmp_is_ignored)
{
        static const char junk[] = "screeMAN but not really a manifest";
        struct eng_manifest_state s, got;
        struct eng_manifest *m;

        write_file("MANIFEST.tmp", junk, sizeof(junk), 0);
        cr_expect(eq(int, load_from(fs, dir, &got), -SCREE_ENOTFOUND));
        manifest_sample_state(&s);
        m = create_on(fs, dir, &s, 0);
        cr_assert(eq(int, close_manifest(m), 0));
        write_file("MANIFEST.tmp", junk, sizeof(junk), 0);
        expect_loads_as(&s);
        eng_manifest_state_fini(&s);
}

/* Makes a manifest with three edits, each synced on its own. Returns the
 * offset of the first edit's record. */
static uint64_t three_synced_edits(struct eng_manifest_state *model)
{
        struct gen g = { .rng = 17 };
        struct eng_manifest *m;
        uint64_t first;

        begin(model);
        m = create_on(fs, dir, model, 0);
        first = eng_manifest_stats(m)->snapshot_bytes;
        for (unsigned i = 0; i < 3; i++)
                apply_and_wait(m, &g, model, i, 1);
        cr_assert(eq(int, close_manifest(m), 0));
        return first;
}

Test(manifest, a_damaged_record_that_later_ones_say_was_durable_is_corrupt)
{
        struct eng_manifest_state model, got;
        uint64_t first = three_synced_edits(&model);
        uint8_t b = 0xff;

        write_file("MANIFEST", &b, 1, (off_t)first + ENG_MANIFEST_RECORD_HEADER_BYTES + 1);
        cr_expect(eq(int, load_from(fs, dir, &got), -SCREE_ECORRUPT));
        eng_manifest_state_fini(&model);
}

/* The offset of the last edit of <dir>/MANIFEST (marks are skipped). */
static size_t last_edit_offset(void)
{
        char path[PATH_MAX + 32];
        struct eng_manifest_reader r;
        struct eng_manifest_record rec;
        static uint8_t buf[1 << 16];
        size_t last = 0;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "%s/MANIFEST", dir);
        fd = open(path, O_RDONLY);
        cr_assert(ge(int, fd, 0));
        n = read(fd, buf, sizeof(buf));
        close(fd);
        cr_assert(gt(i64, (int64_t)n, 0));
        cr_assert(eq(int, eng_manifest_reader_init(&r, buf, (size_t)n), 0));
        while (eng_manifest_reader_next(&r, &rec) == 1)
                last = rec.offset;
        return last;
}

/* Regression (issue 23): damage in the last edit, synced and acknowledged,
 * read as a torn tail; start-up dropped the edit (and with it a flush or a
 * compaction's result). The sync mark written behind it, once its append
 * was synced, proves it durable: corrupt, after a close or a crash. */
Test(manifest, a_damaged_last_edit_is_corrupt_not_a_torn_tail)
{
        struct eng_manifest_state model, got;
        struct gen g = { .rng = 23 };
        struct eng_manifest *m;
        uint8_t b = 0xff;
        size_t last;

        three_synced_edits(&model);
        last = last_edit_offset();
        write_file("MANIFEST", &b, 1, (off_t)last + ENG_MANIFEST_RECORD_HEADER_BYTES + 1);
        cr_expect(eq(int, load_from(fs, dir, &got), -SCREE_ECORRUPT), "after a close");
        eng_manifest_state_fini(&model);
        /* A crash: the manifest is never closed; read behind its back. */
        begin(&model);
        m = create_on(fs, dir, &model, 0);
        apply_and_wait(m, &g, &model, 0, 1);
        TEST_RUN_UNTIL(loop, eng_manifest_stats(m)->marks > 0);
        cr_assert(eq(u64, eng_manifest_stats(m)->marks, 1));
        last = last_edit_offset();
        write_file("MANIFEST", &b, 1, (off_t)last + ENG_MANIFEST_RECORD_HEADER_BYTES + 1);
        cr_expect(eq(int, load_from(fs, dir, &got), -SCREE_ECORRUPT), "after a crash");
        cr_assert(eq(int, close_manifest(m), 0));
        eng_manifest_state_fini(&model);
}

Test(manifest, a_torn_tail_is_cut_by_load_and_gone_after_create)
{
        static const uint8_t junk[100] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
        struct eng_manifest_state model, got, again;
        struct eng_manifest *m;

        three_synced_edits(&model);
        write_file("MANIFEST", junk, sizeof(junk), file_size("MANIFEST"));
        cr_assert(eq(int, load_from(fs, dir, &got), 0));
        cr_expect(manifest_state_is_equal(&got, &model));
        m = create_on(fs, dir, &got, 0);
        cr_expect(eq(i64, (int64_t)file_size("MANIFEST"),
                     (int64_t)eng_manifest_stats(m)->snapshot_bytes), "a fresh snapshot, no tail");
        cr_assert(eq(int, close_manifest(m), 0));
        cr_assert(eq(int, load_from(fs, dir, &again), 0));
        cr_expect(manifest_state_is_equal(&again, &model));
        eng_manifest_state_fini(&again);
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&model);
}

Test(manifest, a_failed_read_fails_the_load)
{
        struct eng_manifest_state model, got;

        three_synced_edits(&model);
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_expect(eq(int, load_from(fs, dir, &got), -EIO));
        eng_fault_fs_fail(fs, ENG_FS_OPEN, EMFILE, 1);
        cr_expect(eq(int, load_from(fs, dir, &got), -EMFILE));
        expect_loads_as(&model);
        eng_manifest_state_fini(&model);
}
