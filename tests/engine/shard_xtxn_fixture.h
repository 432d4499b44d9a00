/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the two-phase commit tests (test_shard_xtxn.c,
 * test_shard_xtxn_log.c): two shards of one process (n_shards 2, one loop,
 * each its own directory and fault fs), opening, crashing and reopening
 * them, rows on a given shard, and the protocol's steps run to their end.
 * Each test file that includes it has its own copy of the state below and
 * names setup and teardown in its TestSuite. Header-only; tests only.
 */
#ifndef SCREE_TESTS_ENGINE_SHARD_XTXN_FIXTURE_H
#define SCREE_TESTS_ENGINE_SHARD_XTXN_FIXTURE_H

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

static inline void setup(void)
{
        engine_test_loop_fs(&loop, &fss[0]);
        fss[1] = eng_fault_fs_new(loop);
        for (int i = 0; i < N; i++)
                tmpdir_make(dirs[i], sizeof(dirs[i]), "xtxn");
        cr_assert(eq(int, eng_catalog_initial(N, 4, &cat), 0));
        base = (struct eng_shard_opts){ .n_shards = N, .catalog = cat, .segment_bytes = 256 << 10 };
}

static inline void close_one(int i);

static inline void teardown(void)
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


/* ---- shards ---- */

static bool done_flag;
static int done_res;

static inline void on_open(void *arg, int res, struct eng_shard *s)
{
        *(struct eng_shard **)arg = s;
        done_flag = true;
        done_res = res;
}

static inline void on_done(void *arg, int res)
{
        (void)arg;
        done_flag = true;
        done_res = res;
}

/* Opens shard i; returns the open's result. */
static inline int open_res(int i)
{
        struct eng_shard_opts o = base;

        o.dir = dirs[i];
        o.shard = (uint32_t)i;
        done_flag = false;
        cr_assert(eq(int, eng_shard_open(loop, fss[i], &o, on_open, &shs[i]), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &done_flag), 0));
        return done_res;
}

static inline void open_one(int i)
{
        int r = open_res(i);

        cr_assert(eq(int, r, 0), "open shard %d: %d", i, r);
}

static inline void open_all(void)
{
        for (int i = 0; i < N; i++)
                open_one(i);
}

static inline void close_one(int i)
{
        done_flag = false;
        cr_assert(eq(int, eng_shard_close(shs[i], on_done, NULL), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &done_flag), 0));
        shs[i] = NULL;
}

/* Closes both shards (a clean stop) and opens them again on fresh fses. */
static inline void reopen_all(void)
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
static inline void crash_all(uint64_t seed)
{
        for (int i = 0; i < N; i++)
                cr_assert(eq(int, eng_fault_fs_power_cut(fss[i], false, seed + (uint64_t)i), 0));
        reopen_all();
}

/* ---- keys and rows ---- */

/* Whether shard `shard` owns key k of the default table. */
static inline bool owns(int shard, const char *k)
{
        const struct eng_catalog_table *t;
        uint32_t tab;

        cr_assert(eq(int, eng_catalog_table_by_id(cat, ENG_TABLE_DEFAULT, &t), 0));
        cr_assert(eq(int, eng_catalog_route_key(t, k, strlen(k), &tab), 0));
        return t->tablets[tab].shard == (uint32_t)shard;
}

/* The i-th key ("<tag><n>") of the default table that shard `shard` owns. */
static inline void key_on(int shard, const char *tag, int i, char *out, size_t cap)
{
        for (int n = 0, found = 0;; n++) {
                snprintf(out, cap, "%s%d", tag, n);
                if (owns(shard, out) && found++ == i)
                        return;
        }
}

static inline struct eng_mutation put_m(const char *k, const char *v)
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

static inline void on_get(struct eng_get *g, int res)
{
        struct rd *x = g->ctx;

        x->done = true;
        x->res = res;
}

/* Starts a get of k on shard i; returns eng_shard_get's result. */
static inline int get_start(int i, const char *k, struct rd *x)
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

static inline void expect_value(int i, const char *k, const char *want)
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

static inline void on_write(struct eng_write *w, int res)
{
        struct wr *x = w->ctx;

        x->done = true;
        x->res = res;
}

static inline int write_sync(int i, const char *k, const char *v)
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

static inline int flush_sync(int i)
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

static inline void on_xop(struct eng_xtxn_op *op, int res)
{
        struct xop *x = op->ctx;

        cr_assert(not(x->done), "txn op done twice");
        x->done = true;
        x->res = res;
}

static inline void xop_init(struct xop *x)
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

static inline void part_make(struct part *p, int shard, const char *tag, const char *val)
{
        for (int j = 0; j < ROWS; j++) {
                key_on(shard, tag, j, p->keys[j], sizeof(p->keys[j]));
                snprintf(p->vals[j], sizeof(p->vals[j]), "%s%d", val, j);
                p->m[j] = put_m(p->keys[j], p->vals[j]);
        }
}

static inline void prepare_start(int i, uint64_t txn, const struct part *p, struct xop *x)
{
        xop_init(x);
        cr_assert(eq(int, eng_shard_prepare(shs[i], txn, eng_xtxn_coordinator(txn), p->m, ROWS,
                                            &x->op), 0));
}

static inline void prepare_sync(int i, uint64_t txn, const struct part *p)
{
        struct xop x;

        prepare_start(i, txn, p, &x);
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_assert(eq(int, x.res, 0), "prepare on shard %d: %d", i, x.res);
}

static const uint32_t both[N] = { 0, 1 };

static inline void decide_sync(uint64_t txn)
{
        struct xop x;

        xop_init(&x);
        cr_assert(eq(int, eng_shard_decide(shs[eng_xtxn_coordinator(txn)], txn, both, N, &x.op), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_assert(eq(int, x.res, 0));
}

/* Commits txn on shard i: 0 once durable, or the call's error. */
static inline int commit_sync(int i, uint64_t txn)
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

static inline void expect_part(int i, const struct part *p, bool visible)
{
        for (int j = 0; j < ROWS; j++)
                expect_value(i, p->keys[j], visible ? p->vals[j] : NULL);
}

static inline uint32_t in_doubt(int i, struct eng_xtxn_id *ret, uint32_t cap)
{
        return eng_shard_in_doubt(shs[i], ret, cap);
}

/* What the server does once every shard is open: in-doubt parts are
 * committed or aborted by their coordinator's word, then every decision is
 * sent to its participants again and forgotten. Returns the commits that
 * found their part in doubt. */
static inline int resolve_all(void)
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
static inline uint64_t prepare_both(struct part p[N], const char *val)
{
        uint64_t txn = eng_shard_txn_new(shs[0]);

        part_make(&p[0], 0, "a", val);
        part_make(&p[1], 1, "b", val);
        for (int i = 0; i < N; i++)
                prepare_sync(i, txn, &p[i]);
        return txn;
}

#endif
