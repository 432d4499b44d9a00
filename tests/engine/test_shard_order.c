/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One key's operations in call order (shard.h, keyq.h), above all while
 * writes stall on a full memtable budget: a read sees a stalled write
 * called before it, read-modify-writes of one key never interleave, and a
 * write called after an increment lands after it. Also the commit-log
 * windows around sealing that lost acknowledged writes at a crash.
 *
 * Writes are called in bursts without running the loop, so the budget
 * fills and later writes stall until a flush frees memory.
 */
#include "engine/shard_internal.h"
#include "tests/engine/shard_helpers.h"

TestSuite(shard_order, .init = setup, .fini = teardown, .timeout = 120);

static void rmw_start(struct incr *x, const char *key, bool absent_only)
{
        *x = (struct incr){ .r = { .done = on_rmw }, .absent_only = absent_only };
        x->r.ctx = x;
        cr_assert(eq(int, eng_shard_rmw(sh, ENG_TABLE_DEFAULT, key, (uint32_t)strlen(key),
                                        incr_fn, x, &x->r), 0));
}

/* Puts a 4 KiB value under filler key i without waiting: enough of them
 * fill the budget and make later writes stall. */
static void fill(struct wr *w, int i)
{
        static char v[4096];
        char k[32];
        struct eng_mutation m;

        memset(v, 'f', sizeof(v) - 1);
        snprintf(k, sizeof(k), "fill%06d", i);
        m = put_m(k, v, 0);
        cr_assert(ge(int, write_async(w, &m, 1), 0));
}

static void small_budget(void)
{
        opts.memtable_budget = 256 << 10;
        opts.segment_bytes = 256 << 10;
}

#define BURST 300

/* Regression: increments called while writes stalled read the memtables,
 * which did not hold the stalled increments before them, and wrote the
 * same value again (issue 23: "501" twelve times in a row). */
Test(shard_order, increments_while_writes_stall_count_every_one)
{
        static struct wr w[BURST];
        static struct incr inc[BURST];

        small_budget();
        cr_assert(eq(int, shard_open_sync(), 0));
        for (int i = 0; i < BURST; i++) {
                fill(&w[i], i);
                rmw_start(&inc[i], "counter", false);
        }
        cr_assert(ge(u64, eng_shard_stats(sh)->stalls, 1), "the burst must stall");
        for (int i = 0; i < BURST; i++) {
                cr_assert(eq(int, rx_loop_run_until(loop, &inc[i].done), 0));
                cr_assert(eq(int, rx_loop_run_until(loop, &w[i].done), 0));
                cr_expect(eq(int, w[i].res, 0));
                cr_assert(eq(int, inc[i].res, 1), "increment %d: %d", i, inc[i].res);
                cr_assert(eq(long, strtol(inc[i].buf, NULL, 10), i + 1),
                          "increment %d wrote %s", i, inc[i].buf);
        }
        char want[32];

        snprintf(want, sizeof(want), "%d", BURST);
        expect_value("counter", want);
}

/* Regression: every "set if absent" called while writes stalled won. */
Test(shard_order, one_set_if_absent_wins_while_writes_stall)
{
        static struct wr w[BURST];
        static struct incr nx[BURST];
        char k[32];
        int won = 0;

        small_budget();
        cr_assert(eq(int, shard_open_sync(), 0));
        for (int i = 0; i < BURST; i++) {
                fill(&w[i], i);
                snprintf(k, sizeof(k), "lock%d", i / 10);       /* 10 racers a key */
                rmw_start(&nx[i], k, true);
        }
        for (int i = 0; i < BURST; i++) {
                cr_assert(eq(int, rx_loop_run_until(loop, &nx[i].done), 0));
                cr_assert(eq(int, rx_loop_run_until(loop, &w[i].done), 0));
                cr_assert(ge(int, nx[i].res, 0));
                won += nx[i].res;
                if (i % 10 == 9) {
                        cr_assert(eq(int, won, 1), "key lock%d: %d winners", i / 10, won);
                        won = 0;
                }
        }
}

/* A read called after a write that stalled sees it (it waits for it);
 * a read of another key does not wait. */
Test(shard_order, a_read_after_a_stalled_write_sees_it)
{
        static struct wr w[BURST];
        struct eng_mutation m = put_m("k", "new", 0);
        struct wr kw;
        struct rd x, other;
        int i, r;

        small_budget();
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("k", "old"), 0));
        cr_assert(eq(int, put_sync("o", "other"), 0));
        for (i = 0; i < BURST && !eng_shard_stats(sh)->stalls; i++)
                fill(&w[i], i);
        cr_assert(ge(u64, eng_shard_stats(sh)->stalls, 1), "the burst must stall");
        cr_assert(eq(int, write_async(&kw, &m, 1), 0));
        cr_assert(not(kw.done), "stalled");
        x = (struct rd){ .g = { .done = on_get } };
        x.g.ctx = &x;
        cr_assert(eq(int, eng_shard_get(sh, ENG_TABLE_DEFAULT, "k", 1, &x.g), 1),
                  "the read waits for the stalled write");
        other = (struct rd){ .g = { .done = on_get } };
        other.g.ctx = &other;
        r = eng_shard_get(sh, ENG_TABLE_DEFAULT, "o", 1, &other.g);
        cr_expect(eq(int, r, 0), "another key's read answers at once");
        if (r == 0)
                eng_get_release(&other.g);
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_assert(eq(int, x.res, 0));
        cr_expect(eq(u32, x.g.value_len, 3));
        cr_expect(eq(int, memcmp(x.g.value, "new", 3), 0));
        eng_get_release(&x.g);
        cr_assert(eq(int, rx_loop_run_until(loop, &kw.done), 0));
        for (int j = 0; j < i; j++)
                cr_assert(eq(int, rx_loop_run_until(loop, &w[j].done), 0));
}

/* A batch waiting behind one of its keys holds its others: a read of
 * another of its keys called after it sees the batch. A key twice in one
 * batch is one place (no wait on itself). */
Test(shard_order, a_waiting_batch_holds_all_of_its_keys)
{
        static struct incr inc;
        struct eng_mutation m[3] = { put_m("a", "A2", 0), put_m("b", "B2", 0),
                                     put_m("a", "A3", 0) };
        struct wr bw;
        struct rd x;

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("a", "1"), 0));
        cr_assert(eq(int, put_sync("b", "B1"), 0));
        cr_assert(eq(int, flush_sync(), 0));
        cr_assert(eq(int, reopen(), 0));        /* cold: the increment waits for the disk */
        rmw_start(&inc, "a", false);
        cr_assert(not(inc.done));
        cr_assert(eq(int, write_async(&bw, m, 3), 0));
        x = (struct rd){ .g = { .done = on_get } };
        x.g.ctx = &x;
        cr_assert(eq(int, eng_shard_get(sh, ENG_TABLE_DEFAULT, "b", 1, &x.g), 1),
                  "b waits for the batch, which waits for a");
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_assert(eq(int, x.res, 0));
        cr_expect(eq(int, memcmp(x.g.value, "B2", 2), 0));
        eng_get_release(&x.g);
        cr_assert(eq(int, rx_loop_run_until(loop, &inc.done), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &bw.done), 0));
        cr_expect(eq(str, inc.buf, "2"));
        expect_value("a", "A3");
        expect_value("b", "B2");
}

/* Closing fails what waits for a key, once each, and frees it. */
Test(shard_order, close_fails_the_operations_waiting_for_a_key)
{
        static struct wr w[BURST];
        static struct incr inc[4];
        int i;

        small_budget();
        cr_assert(eq(int, shard_open_sync(), 0));
        for (i = 0; i < BURST && !eng_shard_stats(sh)->stalls; i++)
                fill(&w[i], i);
        cr_assert(ge(u64, eng_shard_stats(sh)->stalls, 1), "the burst must stall");
        for (int j = 0; j < 4; j++)
                rmw_start(&inc[j], "c", false);
        shard_close_sync();
        for (int j = 0; j < 4; j++) {
                cr_expect(inc[j].done, "increment %d answered", j);
                cr_expect(eq(int, inc[j].res, -SCREE_ESHUTDOWN), "increment %d: %d", j,
                          inc[j].res);
        }
}

/* ---- crash windows ---- */

/*
 * Regression (issue 23, lost acknowledged writes after kill -9): in batch
 * mode a write waits for its group's log record before it goes into the
 * memtables; sealing a memtable meanwhile recorded the newest seq as
 * flushed, above the write that was not in it, and the replay after a
 * crash skipped the write. Here the log limit seals the idle tablet
 * while its newest write waits to be applied.
 */
Test(shard_order, a_seal_while_writes_wait_to_be_applied_loses_none_at_a_crash)
{
        static struct wr big[64];
        struct wr iw;
        char v[512], iv[32], got[64];
        struct eng_mutation m[8];
        static char keys[8][32];
        int acked = 0;
        uint64_t seals = 0;

        opts.segment_bytes = 64 << 10;
        opts.memtable_budget = 256 << 10;       /* log limit: 4 segments */
        cr_assert(eq(int, shard_open_sync(), 0));
        for (int round = 0; round < 400 && seals < 3; round++) {
                struct eng_mutation im = { .kind = ENG_MUT_PUT, .table = ENG_TABLE_ORDERED,
                                           .key = "idle", .key_len = 4, .value = iv };

                im.value_len = (uint32_t)snprintf(iv, sizeof(iv), "%d", round + 1);
                cr_assert(eq(int, write_async(&iw, &im, 1), 0));
                /* ~80 KiB into the default table in the same iteration: the
                 * log moves on a segment while the idle write waits. */
                for (int b = 0; b < 20; b++) {
                        for (int j = 0; j < 8; j++) {
                                snprintf(keys[j], sizeof(keys[j]), "k%03d%d", b, j);
                                snprintf(v, sizeof(v), "%0480d", round);
                                m[j] = put_m(keys[j], v, 0);
                        }
                        cr_assert(ge(int, write_async(&big[b], m, 8), 0));
                }
                cr_assert(eq(int, rx_loop_run_until(loop, &iw.done), 0));
                cr_assert(eq(int, iw.res, 0));
                acked = round + 1;
                for (int b = 0; b < 20; b++)
                        cr_assert(eq(int, rx_loop_run_until(loop, &big[b].done), 0));
                seals = eng_shard_stats(sh)->log_limit_seals;
        }
        cr_assert(ge(u64, seals, 1), "the log limit must seal the idle tablet");
        /* Let the seal's flush end and record its seq, then crash. */
        TEST_RUN_UNTIL(loop, eng_shard_stats(sh)->imm_bytes == 0);
        cr_assert(eq(int, power_cut_reopen(false, 7), 0));
        struct rd x;

        cr_assert(eq(int, get_wait(ENG_TABLE_ORDERED, "idle", 4, &x), 0));
        snprintf(got, sizeof(got), "%.*s", (int)x.g.value_len, x.g.value);
        eng_get_release(&x.g);
        cr_expect(eq(int, atoi(got), acked), "idle holds %s, %d was acknowledged", got, acked);
}

/*
 * Regression (found in review): writes waiting in s->unapplied are in no
 * memtable yet, and a burst can roll the log (its groups are logged at a
 * quarter segment) while they wait. The oldest segment a flush kept was
 * taken from the memtables only, so a flush completing between two tasks
 * cut the log past their records and a crash lost them (shown with a
 * wrapped fs timing the flush's last read into that window). The log
 * needed must reach back to their segment.
 */
Test(shard_order, the_log_kept_reaches_back_to_writes_waiting_to_be_applied)
{
        static struct wr w[14];
        static char keys[14][16], v[7000];

        opts.segment_bytes = 64 << 10;
        cr_assert(eq(int, shard_open_sync(), 0));
        memset(v, 'v', sizeof(v) - 1);
        for (int i = 0; i < 14; i++) {
                struct eng_mutation m = { .kind = ENG_MUT_PUT, .table = ENG_TABLE_ORDERED,
                                          .key = keys[i], .value = v, .value_len = sizeof(v) - 1 };

                m.key_len = (uint32_t)snprintf(keys[i], sizeof(keys[i]), "b%02d", i);
                cr_assert(ge(int, write_async(&w[i], &m, 1), 0));
        }
        cr_assert(gt(u32, sh->unapplied.count, 0), "the burst waits to be applied");
        cr_assert(lt(u64, sh->unapplied_segment, eng_wal_segment(sh->wal)),
                  "the burst rolled the log while it waited");
        cr_expect(le(u64, shard_log_needed(sh), sh->unapplied_segment),
                  "log kept from %llu, the waiting writes are in %llu",
                  (unsigned long long)shard_log_needed(sh),
                  (unsigned long long)sh->unapplied_segment);
        for (int i = 0; i < 14; i++)
                cr_assert(eq(int, rx_loop_run_until(loop, &w[i].done), 0));
}

/* ---- scans ---- */

struct seen {
        struct eng_scan sc;
        bool found, done;
        int res;
};

static int look_for_k(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct seen *x = sc->ctx;

        if (it->key_len == 7 && memcmp(it->key, "stalled", 7) == 0)
                x->found = true;
        return 0;
}

static void on_scan_done(struct eng_scan *sc, int res)
{
        struct seen *x = sc->ctx;

        x->done = true;
        x->res = res;
}

/* Regression: a scan (SCAN, KEYS, DBSIZE) called after a write that
 * stalled did not see it. It waits for the writes in flight at its call. */
Test(shard_order, a_scan_after_a_stalled_write_sees_it)
{
        static struct wr w[BURST];
        static struct seen x;
        struct eng_mutation m = put_m("stalled", "v", 0);
        struct wr kw;
        int i, r;

        small_budget();
        cr_assert(eq(int, shard_open_sync(), 0));
        for (i = 0; i < BURST && !eng_shard_stats(sh)->stalls; i++)
                fill(&w[i], i);
        cr_assert(ge(u64, eng_shard_stats(sh)->stalls, 1), "the burst must stall");
        cr_assert(eq(int, write_async(&kw, &m, 1), 0));
        x = (struct seen){ .sc = { .item = look_for_k, .done = on_scan_done } };
        x.sc.ctx = &x;
        r = eng_shard_scan(sh, ENG_TABLE_DEFAULT, NULL, 0, NULL, 0, 100000, &x.sc);
        cr_assert(eq(int, r, 1), "the scan waits for the stalled write");
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_assert(eq(int, x.res, 0));
        cr_expect(x.found, "the scan saw the write called before it");
        eng_scan_release(&x.sc);
        cr_assert(eq(int, rx_loop_run_until(loop, &kw.done), 0));
        for (int j = 0; j < i; j++)
                cr_assert(eq(int, rx_loop_run_until(loop, &w[j].done), 0));
}
