/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's half of the two-phase commit (engine/shard_xtxn.h): two
 * shards of one process (n_shards 2, one loop, each its own directory and
 * fault fs) run prepare, decide, commit, abort and forget as the server
 * will; rows show only after the commit, a held key's operations wait;
 * and a crash (a power cut of both fses, or a close) at every step
 * recovers to all or nothing, resolved as the server will at start.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/catalog.h"
#include "engine/fault_fs.h"
#include "engine/shard.h"
#include "engine/shard_xtxn.h"
#include "engine/wal_format.h"
#include "tests/engine/helpers.h"
#include "tests/tmpdir.h"

#define N 2

static char dirs[N][PATH_MAX];
static struct rx_loop *loop;
static struct eng_fs *fss[N];
static struct eng_shard *shs[N];
static struct eng_shard_opts base;
static struct eng_catalog *cat;

static void setup(void)
{
        engine_test_loop_fs(&loop, &fss[0]);
        fss[1] = eng_fault_fs_new(loop);
        for (int i = 0; i < N; i++)
                tmpdir_make(dirs[i], sizeof(dirs[i]), "xtxn");
        cr_assert(eq(int, eng_catalog_initial(N, 4, &cat), 0));
        base = (struct eng_shard_opts){ .n_shards = N, .catalog = cat, .segment_bytes = 256 << 10 };
}

static void close_one(int i);

static void teardown(void)
{
        for (int i = 0; i < N; i++) {
                if (shs[i])
                        close_one(i);
                eng_fs_free(fss[i]);
                tmpdir_remove(dirs[i]);
        }
        eng_catalog_unref(cat);
        rx_loop_free(loop);
}

TestSuite(shard_xtxn, .init = setup, .fini = teardown, .timeout = 60);

/* ---- shards ---- */

static bool done_flag;
static int done_res;

static void on_open(void *arg, int res, struct eng_shard *s)
{
        *(struct eng_shard **)arg = s;
        done_flag = true;
        done_res = res;
}

static void on_done(void *arg, int res)
{
        (void)arg;
        done_flag = true;
        done_res = res;
}

/* Opens shard i; returns the open's result. */
static int open_res(int i)
{
        struct eng_shard_opts o = base;

        o.dir = dirs[i];
        o.shard = (uint32_t)i;
        done_flag = false;
        cr_assert(eq(int, eng_shard_open(loop, fss[i], &o, on_open, &shs[i]), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &done_flag), 0));
        return done_res;
}

static void open_one(int i)
{
        int r = open_res(i);

        cr_assert(eq(int, r, 0), "open shard %d: %d", i, r);
}

static void open_all(void)
{
        for (int i = 0; i < N; i++)
                open_one(i);
}

static void close_one(int i)
{
        done_flag = false;
        cr_assert(eq(int, eng_shard_close(shs[i], on_done, NULL), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &done_flag), 0));
        shs[i] = NULL;
}

/* Closes both shards (a clean stop) and opens them again on fresh fses. */
static void reopen_all(void)
{
        for (int i = 0; i < N; i++) {
                close_one(i);
                eng_fs_free(fss[i]);
                fss[i] = eng_fault_fs_new(loop);
        }
        open_all();
}

/* A power cut of the whole machine: both fses lose what was not synced;
 * then both shards start again. */
static void crash_all(uint64_t seed)
{
        for (int i = 0; i < N; i++)
                cr_assert(eq(int, eng_fault_fs_power_cut(fss[i], false, seed + (uint64_t)i), 0));
        reopen_all();
}

/* ---- keys and rows ---- */

/* Whether shard `shard` owns key k of the default table. */
static bool owns(int shard, const char *k)
{
        const struct eng_catalog_table *t;
        uint32_t tab;

        cr_assert(eq(int, eng_catalog_table_by_id(cat, ENG_TABLE_DEFAULT, &t), 0));
        cr_assert(eq(int, eng_catalog_route_key(t, k, strlen(k), &tab), 0));
        return t->tablets[tab].shard == (uint32_t)shard;
}

/* The i-th key ("<tag><n>") of the default table that shard `shard` owns. */
static void key_on(int shard, const char *tag, int i, char *out, size_t cap)
{
        for (int n = 0, found = 0;; n++) {
                snprintf(out, cap, "%s%d", tag, n);
                if (owns(shard, out) && found++ == i)
                        return;
        }
}

static struct eng_mutation put_m(const char *k, const char *v)
{
        return (struct eng_mutation){ .kind = ENG_MUT_PUT, .table = ENG_TABLE_DEFAULT, .key = k,
                                      .key_len = (uint32_t)strlen(k), .value = v,
                                      .value_len = (uint32_t)strlen(v) };
}

struct rd {
        struct eng_get g;
        bool done;
        int res;
};

static void on_get(struct eng_get *g, int res)
{
        struct rd *x = g->ctx;

        x->done = true;
        x->res = res;
}

/* Starts a get of k on shard i; returns eng_shard_get's result. */
static int get_start(int i, const char *k, struct rd *x)
{
        int r;

        *x = (struct rd){ .g = { .done = on_get } };
        x->g.ctx = x;
        r = eng_shard_get(shs[i], ENG_TABLE_DEFAULT, k, (uint32_t)strlen(k), &x->g);
        if (r != 1) {
                x->done = true;
                x->res = r;
        }
        return r;
}

static void expect_value(int i, const char *k, const char *want)
{
        struct rd x;
        char buf[256];

        get_start(i, k, &x);
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        if (!want) {
                cr_expect(eq(int, x.res, -SCREE_ENOTFOUND), "%s on shard %d: %d", k, i, x.res);
                if (x.res == 0)
                        eng_get_release(&x.g);
                return;
        }
        cr_assert(eq(int, x.res, 0), "%s on shard %d: %d", k, i, x.res);
        snprintf(buf, sizeof(buf), "%.*s", (int)x.g.value_len, (const char *)x.g.value);
        cr_expect(eq(str, buf, (char *)want), "%s on shard %d", k, i);
        eng_get_release(&x.g);
}

struct wr {
        struct eng_write w;
        bool done;
        int res;
};

static void on_write(struct eng_write *w, int res)
{
        struct wr *x = w->ctx;

        x->done = true;
        x->res = res;
}

static int write_sync(int i, const char *k, const char *v)
{
        struct eng_mutation m = put_m(k, v);
        struct wr x = { .w = { .done = on_write } };
        int r;

        x.w.ctx = &x;
        r = eng_shard_write(shs[i], &m, 1, &x.w);
        if (r != 0)
                return r > 0 ? 0 : r;
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        return x.res;
}

static int flush_sync(int i)
{
        done_flag = false;
        cr_assert(eq(int, eng_shard_flush(shs[i], on_done, NULL), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &done_flag), 0));
        return done_res;
}

/* ---- the protocol's steps ---- */

struct xop {
        struct eng_xtxn_op op;
        bool done;
        int res;
};

static void on_xop(struct eng_xtxn_op *op, int res)
{
        struct xop *x = op->ctx;

        cr_assert(not(x->done), "txn op done twice");
        x->done = true;
        x->res = res;
}

static void xop_init(struct xop *x)
{
        *x = (struct xop){ .op = { .done = on_xop } };
        x->op.ctx = x;
}

/* A txn's rows: per shard, keys "<tag><j>" of that shard with values
 * "<val><j>". */
#define ROWS 3

struct part {
        char keys[ROWS][32];
        char vals[ROWS][32];
        struct eng_mutation m[ROWS];
};

static void part_make(struct part *p, int shard, const char *tag, const char *val)
{
        for (int j = 0; j < ROWS; j++) {
                key_on(shard, tag, j, p->keys[j], sizeof(p->keys[j]));
                snprintf(p->vals[j], sizeof(p->vals[j]), "%s%d", val, j);
                p->m[j] = put_m(p->keys[j], p->vals[j]);
        }
}

static void prepare_start(int i, uint64_t txn, const struct part *p, struct xop *x)
{
        xop_init(x);
        cr_assert(eq(int, eng_shard_prepare(shs[i], txn, eng_xtxn_coordinator(txn), p->m, ROWS,
                                            &x->op), 0));
}

static void prepare_sync(int i, uint64_t txn, const struct part *p)
{
        struct xop x;

        prepare_start(i, txn, p, &x);
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_assert(eq(int, x.res, 0), "prepare on shard %d: %d", i, x.res);
}

static const uint32_t both[N] = { 0, 1 };

static void decide_sync(uint64_t txn)
{
        struct xop x;

        xop_init(&x);
        cr_assert(eq(int, eng_shard_decide(shs[eng_xtxn_coordinator(txn)], txn, both, N, &x.op), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_assert(eq(int, x.res, 0));
}

/* Commits txn on shard i: 0 once durable, or the call's error. */
static int commit_sync(int i, uint64_t txn)
{
        struct xop x;
        int r;

        xop_init(&x);
        r = eng_shard_commit(shs[i], txn, &x.op);
        if (r < 0)
                return r;
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        return x.res;
}

static void expect_part(int i, const struct part *p, bool visible)
{
        for (int j = 0; j < ROWS; j++)
                expect_value(i, p->keys[j], visible ? p->vals[j] : NULL);
}

static uint32_t in_doubt(int i, struct eng_xtxn_id *ret, uint32_t cap)
{
        return eng_shard_in_doubt(shs[i], ret, cap);
}

/* What the server does once every shard is open: in-doubt parts are
 * committed or aborted by their coordinator's word, then every decision is
 * sent to its participants again and forgotten. Returns the commits that
 * found their part in doubt. */
static int resolve_all(void)
{
        int committed = 0;

        for (int i = 0; i < N; i++) {
                struct eng_xtxn_id ids[8];
                uint32_t n = in_doubt(i, ids, 8);

                cr_assert(le(u32, n, 8));
                for (uint32_t k = 0; k < n; k++) {
                        if (eng_shard_decided(shs[ids[k].coordinator], ids[k].txn)) {
                                cr_assert(eq(int, commit_sync(i, ids[k].txn), 0));
                                committed++;
                        } else {
                                cr_assert(eq(int, eng_shard_abort(shs[i], ids[k].txn), 0));
                        }
                }
        }
        for (int c = 0; c < N; c++) {
                struct eng_xtxn_decision d[8];
                uint64_t txns[8];
                uint32_t n = eng_shard_decisions(shs[c], d, 8);

                cr_assert(le(u32, n, 8));
                for (uint32_t k = 0; k < n; k++) {
                        txns[k] = d[k].txn;
                        for (uint32_t j = 0; j < d[k].n_participants; j++) {
                                int r = commit_sync((int)d[k].participants[j], d[k].txn);

                                cr_assert(r == 0 || r == -SCREE_ENOTFOUND, "resent commit: %d", r);
                                committed += r == 0;
                        }
                }
                for (uint32_t k = 0; k < n; k++)
                        cr_assert(eq(int, eng_shard_forget(shs[c], txns[k]), 0));
        }
        return committed;
}

/* Prepares txn's parts p[0] on shard 0 and p[1] on shard 1. */
static uint64_t prepare_both(struct part p[N], const char *val)
{
        uint64_t txn = eng_shard_txn_new(shs[0]);

        part_make(&p[0], 0, "a", val);
        part_make(&p[1], 1, "b", val);
        for (int i = 0; i < N; i++)
                prepare_sync(i, txn, &p[i]);
        return txn;
}

/* ---- the protocol ---- */

Test(shard_xtxn, commit_on_two_shards_shows_rows_only_after_commit)
{
        struct part p[N];
        struct eng_xtxn_id ids[4];
        struct eng_xtxn_decision d[2];
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        cr_assert(eq(u32, eng_xtxn_coordinator(txn), 0));
        for (int i = 0; i < N; i++) {
                cr_assert(eq(u32, in_doubt(i, ids, 4), 1));
                cr_expect(eq(u64, ids[0].txn, txn));
                cr_expect(eq(u32, ids[0].coordinator, 0));
        }
        cr_expect(not(eng_shard_decided(shs[0], txn)));
        decide_sync(txn);
        cr_expect(eng_shard_decided(shs[0], txn));
        cr_assert(eq(u32, eng_shard_decisions(shs[0], d, 2), 1));
        cr_expect(eq(u64, d[0].txn, txn));
        cr_assert(eq(u32, d[0].n_participants, 2));
        cr_expect(eq(u32, d[0].participants[0], 0));
        cr_expect(eq(u32, d[0].participants[1], 1));
        for (int i = 0; i < N; i++)
                cr_assert(eq(int, commit_sync(i, txn), 0));
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], true);
                cr_expect(eq(u32, in_doubt(i, ids, 4), 0));
        }
        cr_assert(eq(int, eng_shard_forget(shs[0], txn), 0));
        cr_expect(eq(u32, eng_shard_decisions(shs[0], d, 2), 0));
        cr_expect(not(eng_shard_decided(shs[0], txn)));
        cr_expect(eq(int, eng_shard_forget(shs[0], txn), -SCREE_ENOTFOUND));
        /* A second commit finds nothing in doubt and changes nothing. */
        cr_expect(eq(int, commit_sync(1, txn), -SCREE_ENOTFOUND));
        cr_expect(eq(int, eng_shard_abort(shs[1], txn), -SCREE_ENOTFOUND));
        reopen_all();
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], true);
                cr_expect(eq(u32, in_doubt(i, ids, 4), 0));
                cr_expect(eq(u32, eng_shard_decisions(shs[i], d, 2), 0));
        }
}

Test(shard_xtxn, held_key_get_waits_until_commit)
{
        struct part p[N];
        struct rd x;
        struct wr w = { .w = { .done = on_write } };
        struct eng_mutation m;
        uint64_t txn;
        char buf[64];

        open_all();
        txn = prepare_both(p, "v");
        cr_assert(eq(int, get_start(1, p[1].keys[1], &x), 1));
        /* A write of a held key waits too, and lands after the commit. */
        m = put_m(p[1].keys[2], "later");
        w.w.ctx = &w;
        cr_assert(eq(int, eng_shard_write(shs[1], &m, 1, &w.w), 0));
        engine_test_run_for_ms(loop, 20);
        cr_expect(not(x.done));
        cr_expect(not(w.done));
        decide_sync(txn);
        engine_test_run_for_ms(loop, 5);
        cr_expect(not(x.done), "a decision alone releases nothing");
        cr_assert(eq(int, commit_sync(1, txn), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_assert(eq(int, x.res, 0));
        snprintf(buf, sizeof(buf), "%.*s", (int)x.g.value_len, (const char *)x.g.value);
        cr_expect(eq(str, buf, p[1].vals[1]));
        eng_get_release(&x.g);
        cr_assert(eq(int, rx_loop_run_until(loop, &w.done), 0));
        cr_expect(eq(int, w.res, 0));
        expect_value(1, p[1].keys[2], "later");
        cr_assert(eq(int, commit_sync(0, txn), 0));
        cr_assert(eq(int, eng_shard_forget(shs[0], txn), 0));
}

Test(shard_xtxn, abort_leaves_nothing)
{
        struct part p[N];
        struct eng_xtxn_id ids[2];
        struct rd x;
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        cr_assert(eq(int, get_start(0, p[0].keys[0], &x), 1));
        for (int i = 0; i < N; i++)
                cr_assert(eq(int, eng_shard_abort(shs[i], txn), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_expect(eq(int, x.res, -SCREE_ENOTFOUND));
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], false);
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
                cr_expect(eq(int, commit_sync(i, txn), -SCREE_ENOTFOUND));
        }
        reopen_all();
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], false);
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
        }
}

Test(shard_xtxn, bad_calls_are_refused)
{
        struct part p[N];
        struct xop x;
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        xop_init(&x);
        /* Prepared here already. */
        cr_expect(eq(int, eng_shard_prepare(shs[0], txn, 0, p[0].m, ROWS, &x.op), -EEXIST));
        /* The coordinator must be the id's. */
        cr_expect(eq(int, eng_shard_prepare(shs[0], txn + 1, 1, p[0].m, ROWS, &x.op), -EINVAL));
        /* A key of the other shard. */
        cr_expect(eq(int, eng_shard_prepare(shs[0], txn + 1, 0, p[1].m, ROWS, &x.op),
                     -SCREE_EMOVED));
        /* Only the coordinator decides. */
        cr_expect(eq(int, eng_shard_decide(shs[1], txn, both, N, &x.op), -EINVAL));
        cr_expect(eq(int, eng_shard_forget(shs[0], txn), -SCREE_ENOTFOUND));
        cr_expect(not(x.done));
        for (int i = 0; i < N; i++)
                cr_assert(eq(int, eng_shard_abort(shs[i], txn), 0));
}

Test(shard_xtxn, prepare_waits_behind_a_prepared_key_and_abort_ends_it)
{
        struct part p[N], q;
        struct xop x;
        uint64_t t1, t2;

        open_all();
        t1 = prepare_both(p, "v");
        t2 = eng_shard_txn_new(shs[0]);
        cr_assert(gt(u64, t2, t1));
        q = p[0];
        for (int j = 0; j < ROWS; j++) {
                snprintf(q.vals[j], sizeof(q.vals[j]), "w%d", j);
                q.m[j] = put_m(q.keys[j], q.vals[j]);
        }
        /* t2 wants t1's keys: it waits (the deadlock the server must time
         * out), and its abort ends the wait. */
        prepare_start(0, t2, &q, &x);
        engine_test_run_for_ms(loop, 20);
        cr_expect(not(x.done));
        cr_expect(eq(int, commit_sync(0, t2), -EBUSY));
        cr_assert(eq(int, eng_shard_abort(shs[0], t2), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_expect(eq(int, x.res, -ECANCELED));
        decide_sync(t1);
        for (int i = 0; i < N; i++)
                cr_assert(eq(int, commit_sync(i, t1), 0));
        expect_part(0, &p[0], true);
        /* And one that waits for a commit goes on after it. */
        prepare_start(0, t2 + 1, &q, &x);
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_expect(eq(int, x.res, 0));
        cr_assert(eq(int, eng_shard_abort(shs[0], t2 + 1), 0));
        expect_part(0, &p[0], true);
        reopen_all();
        expect_part(0, &p[0], true);
        cr_expect(eq(u32, in_doubt(0, NULL, 0), 0));
}

Test(shard_xtxn, prepare_is_durable_in_periodic_mode)
{
        struct part p[N];
        struct eng_xtxn_id ids[2];
        uint64_t txn;

        base.sync = ENG_WAL_SYNC_PERIODIC;
        base.period_ns = 60000 * NS_PER_MS;       /* no periodic sync within the test */
        open_all();
        txn = prepare_both(p, "v");
        crash_all(1);
        for (int i = 0; i < N; i++) {
                cr_assert(eq(u32, in_doubt(i, ids, 2), 1));
                cr_expect(eq(u64, ids[0].txn, txn));
        }
        decide_sync(txn);
        crash_all(2);
        cr_expect(eng_shard_decided(shs[0], txn));
        /* The commits are durable when done, in periodic mode too. */
        for (int i = 0; i < N; i++)
                cr_assert(eq(int, commit_sync(i, txn), 0));
        crash_all(3);
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], true);
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
        }
        cr_expect(eq(int, resolve_all(), 0));
}

/* ---- a crash at every step ---- */

Test(shard_xtxn, crash_after_prepares_aborts)
{
        struct part p[N];
        struct eng_xtxn_id ids[2];
        struct rd x;
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        crash_all(11);
        for (int i = 0; i < N; i++) {
                cr_assert(eq(u32, in_doubt(i, ids, 2), 1));
                cr_expect(eq(u64, ids[0].txn, txn));
                cr_expect(eq(u32, ids[0].coordinator, 0));
        }
        /* The replayed part holds its keys again. */
        cr_assert(eq(int, get_start(1, p[1].keys[0], &x), 1));
        engine_test_run_for_ms(loop, 10);
        cr_expect(not(x.done));
        cr_expect(not(eng_shard_decided(shs[0], txn)));
        cr_expect(eq(int, resolve_all(), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_expect(eq(int, x.res, -SCREE_ENOTFOUND));
        for (int i = 0; i < N; i++)
                expect_part(i, &p[i], false);
        /* Its id is never given out again. */
        cr_expect(gt(u64, eng_shard_txn_new(shs[0]), txn));
        crash_all(12);
        /* The ABORT was not synced: the part may be back in doubt (its
         * keys held), and resolves to abort again. */
        cr_expect(eq(int, resolve_all(), 0));
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], false);
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
        }
}

Test(shard_xtxn, crash_after_decision_commits)
{
        struct part p[N];
        struct eng_xtxn_id ids[2];
        struct eng_xtxn_decision d[2];
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        decide_sync(txn);
        crash_all(21);
        for (int i = 0; i < N; i++) {
                cr_assert(eq(u32, in_doubt(i, ids, 2), 1));
                cr_expect(eq(u64, ids[0].txn, txn));
        }
        cr_expect(eng_shard_decided(shs[0], txn));
        cr_assert(eq(u32, eng_shard_decisions(shs[0], d, 2), 1));
        cr_expect(eq(u32, d[0].n_participants, 2));
        cr_expect(eq(int, resolve_all(), 2));
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], true);
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
        }
        cr_expect(eq(u32, eng_shard_decisions(shs[0], d, 2), 0));
        crash_all(22);
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], true);
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
        }
        /* The FORGET was not synced: the decision may be back; its commits
         * then find nothing in doubt. */
        cr_expect(eq(int, resolve_all(), 0));
}

Test(shard_xtxn, crash_after_one_commit_commits_the_other_once)
{
        struct part p[N];
        struct eng_xtxn_id ids[2];
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        decide_sync(txn);
        cr_assert(eq(int, commit_sync(1, txn), 0));
        crash_all(31);
        cr_expect(eq(u32, in_doubt(1, ids, 2), 0), "shard 1 committed");
        cr_assert(eq(u32, in_doubt(0, ids, 2), 1));
        cr_expect(eq(u64, ids[0].txn, txn));
        expect_part(1, &p[1], true);
        /* A write after the restart to one of the txn's keys ... */
        cr_assert(eq(int, write_sync(1, p[1].keys[0], "newer"), 0));
        /* ... is not undone by the commit the resolution sends again. */
        cr_expect(eq(int, resolve_all(), 1));
        expect_part(0, &p[0], true);
        expect_value(1, p[1].keys[0], "newer");
        expect_value(1, p[1].keys[1], p[1].vals[1]);
        crash_all(32);
        cr_expect(eq(int, resolve_all(), 0));
        expect_part(0, &p[0], true);
        expect_value(1, p[1].keys[0], "newer");
        for (int i = 0; i < N; i++)
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
}

Test(shard_xtxn, crash_after_forget_leaves_nothing_in_doubt)
{
        struct part p[N];
        struct eng_xtxn_id ids[2];
        struct eng_xtxn_decision d[2];
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        decide_sync(txn);
        for (int i = 0; i < N; i++)
                cr_assert(eq(int, commit_sync(i, txn), 0));
        cr_assert(eq(int, eng_shard_forget(shs[0], txn), 0));
        /* A clean stop syncs the FORGET: the decision is gone for good. */
        reopen_all();
        for (int i = 0; i < N; i++) {
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
                cr_expect(eq(u32, eng_shard_decisions(shs[i], d, 2), 0));
                expect_part(i, &p[i], true);
        }
        crash_all(41);
        for (int i = 0; i < N; i++) {
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
                cr_expect(eq(u32, eng_shard_decisions(shs[i], d, 2), 0));
                expect_part(i, &p[i], true);
        }
        cr_expect(gt(u64, eng_shard_txn_new(shs[0]), txn));
}

Test(shard_xtxn, close_without_commit_keeps_the_txn_in_doubt)
{
        struct part p[N];
        struct eng_xtxn_id ids[2];
        struct rd x;
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        /* A get waiting for a held key fails with the close. */
        cr_assert(eq(int, get_start(0, p[0].keys[1], &x), 1));
        close_one(0);
        cr_expect(x.done);
        cr_expect(eq(int, x.res, -SCREE_ESHUTDOWN));
        open_one(0);
        cr_assert(eq(u32, in_doubt(0, ids, 2), 1));
        decide_sync(txn);
        reopen_all();
        cr_expect(eq(int, resolve_all(), 2));
        for (int i = 0; i < N; i++)
                expect_part(i, &p[i], true);
}

/* ---- the log keeps what is in doubt ---- */

static unsigned count_logs(int i)
{
        DIR *d = opendir(dirs[i]);
        struct dirent *de;
        unsigned n = 0;

        cr_assert(not(eq(ptr, d, NULL)));
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);

                n += len > 4 && strcmp(de->d_name + len - 4, ".log") == 0;
        }
        closedir(d);
        return n;
}

/* Writes about `bytes` of other rows to shard i. */
static void write_filler(int i, unsigned bytes, int round)
{
        static char val[2048];

        memset(val, 'x', sizeof(val) - 1);
        for (unsigned n = 0; n < 2 * bytes / sizeof(val); n++) {    /* half are ours */
                char k[32];

                snprintf(k, sizeof(k), "fill%d-%u", round, n);
                if (owns(i, k))
                        cr_assert(eq(int, write_sync(i, k, val), 0));
        }
}

Test(shard_xtxn, in_doubt_part_survives_flushes_and_log_truncation)
{
        struct part p[N];
        struct eng_xtxn_id ids[2];
        uint64_t txn;
        unsigned logs_before, logs_pinned;

        open_all();
        txn = prepare_both(p, "v");
        logs_before = count_logs(0);
        /* Many segments (256 KiB each) after the prepare, each flushed. */
        for (int round = 0; round < 6; round++) {
                write_filler(0, 512 << 10, round);
                cr_assert(eq(int, flush_sync(0), 0));
        }
        engine_test_run_for_ms(loop, 50);       /* truncation runs in the background */
        logs_pinned = count_logs(0);
        cr_expect(gt(u32, logs_pinned, logs_before + 4), "the prepare's segment and those after it stay");
        crash_all(51);
        cr_assert(eq(u32, in_doubt(0, ids, 2), 1));
        cr_expect(eq(u64, ids[0].txn, txn));
        /* More writes and flushes after the restart keep it too. */
        write_filler(0, 512 << 10, 9);
        cr_assert(eq(int, flush_sync(0), 0));
        reopen_all();
        cr_assert(eq(u32, in_doubt(0, ids, 2), 1));
        decide_sync(txn);
        cr_expect(eq(int, resolve_all(), 2));
        for (int i = 0; i < N; i++)
                expect_part(i, &p[i], true);
        /* Resolved: the log may go now. */
        for (int round = 10; round < 13; round++) {
                write_filler(0, 512 << 10, round);
                cr_assert(eq(int, flush_sync(0), 0));
        }
        engine_test_run_for_ms(loop, 50);
        cr_expect(lt(u32, count_logs(0), logs_pinned), "the log is truncated once the txn is resolved");
        crash_all(52);
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], true);
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
        }
}

/* ---- ids and format ---- */

Test(shard_xtxn, ids_stay_unique_across_restarts)
{
        struct part p[N];
        uint64_t t1, t2, t3;

        open_all();
        t1 = prepare_both(p, "v");
        decide_sync(t1);
        crash_all(61);
        t2 = eng_shard_txn_new(shs[0]);
        cr_expect(gt(u64, t2, t1));
        cr_expect(eq(u32, eng_xtxn_coordinator(t2), 0));
        cr_expect(eq(u32, eng_xtxn_coordinator(eng_shard_txn_new(shs[1])), 1));
        /* An id asked about at resolution is never given out after it. */
        cr_expect(not(eng_shard_decided(shs[0], t2 + 1000)));
        t3 = eng_shard_txn_new(shs[0]);
        cr_expect(gt(u64, t3, t2 + 1000));
        cr_expect(eq(int, resolve_all(), 2));
}

Test(shard_xtxn, segment_header_version)
{
        uint8_t h[ENG_WAL_SEGMENT_HEADER_BYTES];
        struct eng_wal_segment_info info;

        eng_wal_segment_header_encode(h, 3, 7);
        cr_assert(eq(int, eng_wal_segment_header_decode(h, sizeof(h), &info), 0));
        cr_expect(eq(u32, info.version, 2));
        cr_expect(eq(u32, ENG_WAL_VERSION, 2));
        cr_expect(eq(u32, ENG_WAL_VERSION_MIN, 1));
}

/* ---- damaged transaction records ---- */

/* Rewrites the first record of type `type` in shard i's log with payload
 * byte `at` xored with `flip`, checksums made valid again: a record that
 * verifies but says something impossible. Returns whether one was found. */
static bool forge_record(int i, enum eng_wal_record_type type, uint32_t at, uint8_t flip)
{
        DIR *d = opendir(dirs[i]);
        struct dirent *de;
        bool found = false;

        cr_assert(not(eq(ptr, d, NULL)));
        while (!found && (de = readdir(d))) {
                char path[PATH_MAX + 300];
                unsigned long long id;
                struct eng_wal_reader r;
                struct eng_wal_record rec;
                uint8_t *buf;
                long len;
                FILE *f;

                if (strlen(de->d_name) != 20 || sscanf(de->d_name, "%16llx.log", &id) != 1)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dirs[i], de->d_name);
                f = fopen(path, "r+b");
                cr_assert(not(eq(ptr, f, NULL)));
                fseek(f, 0, SEEK_END);
                len = ftell(f);
                buf = malloc((size_t)len);
                cr_assert(not(eq(ptr, buf, NULL)));
                fseek(f, 0, SEEK_SET);
                cr_assert(eq(sz, fread(buf, 1, (size_t)len, f), (size_t)len));
                eng_wal_reader_init(&r, buf, (size_t)len, id);
                while (eng_wal_reader_next(&r, &rec) == 1) {
                        uint8_t p[4096];

                        if (rec.type != type)
                                continue;
                        cr_assert(lt(u32, at, rec.len));
                        cr_assert(le(u32, rec.len, sizeof(p)));
                        memcpy(p, rec.payload, rec.len);
                        p[at] ^= flip;
                        eng_wal_record_encode(buf + rec.offset, id, rec.type, rec.seq,
                                              rec.synced_upto, p, rec.len);
                        fseek(f, (long)rec.offset, SEEK_SET);
                        cr_assert(eq(sz, fwrite(buf + rec.offset, 1, eng_wal_record_size(rec.len), f),
                                     eng_wal_record_size(rec.len)));
                        found = true;
                        break;
                }
                fclose(f);
                free(buf);
        }
        closedir(d);
        return found;
}

Test(shard_xtxn, a_prepare_naming_another_coordinator_is_corruption)
{
        struct part p[N];

        open_all();
        prepare_both(p, "v");
        close_one(1);
        cr_assert(forge_record(1, ENG_WAL_RECORD_PREPARE, 8, 1));      /* coordinator 0 -> 1 */
        cr_expect(eq(int, open_res(1), -SCREE_ECORRUPT));
}

Test(shard_xtxn, a_decision_with_a_wrong_participant_count_is_corruption)
{
        struct part p[N];
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        decide_sync(txn);
        close_one(0);
        cr_assert(forge_record(0, ENG_WAL_RECORD_DECISION, 8, 4));      /* n 2 -> 6 */
        cr_expect(eq(int, open_res(0), -SCREE_ECORRUPT));
}

/* ---- scans ---- */

struct sc {
        struct eng_scan sc;
        unsigned n;
        bool done;
        int res;
};

static int sc_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct sc *x = sc->ctx;

        (void)it;
        x->n++;
        return 0;
}

static void sc_done(struct eng_scan *sc, int res)
{
        struct sc *x = sc->ctx;

        x->done = true;
        x->res = res;
}

Test(shard_xtxn, a_scan_waits_for_a_prepared_part_and_sees_it_committed)
{
        struct part p[N];
        struct sc x = { .sc = { .item = sc_item, .done = sc_done } };
        uint64_t txn;
        int r;

        open_all();
        txn = prepare_both(p, "v");
        x.sc.ctx = &x;
        r = eng_shard_scan(shs[0], ENG_TABLE_DEFAULT, NULL, 0, NULL, 0, 100, &x.sc);
        cr_assert(eq(int, r, 1), "the scan waits for the part in flight");
        engine_test_run_for_ms(loop, 20);
        cr_expect(not(x.done));
        decide_sync(txn);
        cr_assert(eq(int, commit_sync(0, txn), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_expect(eq(int, x.res, 0));
        cr_expect(eq(u32, x.n, ROWS));
        eng_scan_release(&x.sc);
        cr_assert(eq(int, commit_sync(1, txn), 0));
}

/* A part replayed in doubt behind another on a key they share: its commit
 * waits for the other's, and they land in prepare order. */
Test(shard_xtxn, a_commit_of_a_part_replayed_behind_another_waits_for_it)
{
        static const uint32_t only0[1] = { 0 };
        struct part p[N], q;
        struct eng_xtxn_id ids[4];
        struct xop x2, c1, c2;
        uint64_t t1, t2;

        open_all();
        t1 = prepare_both(p, "v");
        t2 = eng_shard_txn_new(shs[0]);
        q = p[0];
        for (int j = 0; j < ROWS; j++) {
                snprintf(q.vals[j], sizeof(q.vals[j]), "w%d", j);
                q.m[j] = put_m(q.keys[j], q.vals[j]);
        }
        prepare_start(0, t2, &q, &x2);          /* waits for t1's keys; its record is synced */
        engine_test_run_for_ms(loop, 30);
        cr_assert(not(x2.done));
        decide_sync(t1);
        xop_init(&c1);
        cr_assert(eq(int, eng_shard_decide(shs[0], t2, only0, 1, &c1.op), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &c1.done), 0));
        cr_assert(eq(int, c1.res, 0));
        crash_all(71);
        cr_assert(eq(u32, in_doubt(0, ids, 4), 2));
        cr_expect(eq(u64, ids[0].txn, t1), "oldest first");
        cr_expect(eq(u64, ids[1].txn, t2));
        /* t2 first: it waits for t1. */
        xop_init(&c2);
        cr_assert(eq(int, eng_shard_commit(shs[0], t2, &c2.op), 0));
        engine_test_run_for_ms(loop, 10);
        cr_expect(not(c2.done));
        cr_expect(eq(int, commit_sync(0, t2), -EBUSY), "a commit is pending already");
        cr_assert(eq(int, commit_sync(0, t1), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &c2.done), 0));
        cr_expect(eq(int, c2.res, 0));
        expect_part(0, &q, true);
        cr_expect(eq(int, resolve_all(), 1));   /* t1's part on shard 1 */
        expect_part(1, &p[1], true);
        crash_all(72);
        cr_expect(eq(int, resolve_all(), 0));
        expect_part(0, &q, true);
        expect_part(1, &p[1], true);
}
