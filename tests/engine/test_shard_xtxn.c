/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's half of the two-phase commit (engine/shard_xtxn.h): two
 * shards of one process (n_shards 2, one loop, each its own directory and
 * fault fs) run prepare, decide, commit, abort and forget as the server
 * will; rows show only after the commit, a held key's operations wait;
 * and a crash (a power cut of both fses, or a close) at every step
 * recovers to all or nothing, resolved as the server will at start; a scan
 * waits for a prepared part. The records in the log: test_shard_xtxn_log.c.
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
#include "tests/engine/shard_xtxn_fixture.h"
#include "tests/tmpdir.h"

TestSuite(shard_xtxn, .init = setup, .fini = teardown, .timeout = 60);

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
