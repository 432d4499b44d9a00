/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard (engine/shard.h) end to end on real files through the
 * fault-injecting fs: writes, reads and deletes across memtables and
 * SSTables, TTL, read-modify-write without lost updates, atomic batches,
 * recovery after close and after power cuts (every acknowledged write
 * survives; a batch is all or nothing), flushes under a small memory
 * budget (writes stall instead of failing), commit-log truncation, disk
 * full, and the start-up errors (missing or corrupt SSTable, other layout,
 * a table in another shard's tablet); a directory whose manifest is
 * version 1 opens with its data and is rewritten as version 2.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/time.h"
#include "engine/manifest_format.h"
#include "engine/shard.h"
#include "engine/tablet.h"
#include "tests/engine/helpers.h"
#include "tests/engine/manifest_helpers.h"
#include "tests/tmpdir.h"

#include "tests/engine/shard_helpers.h"

TestSuite(shard, .init = setup, .fini = teardown, .timeout = 120);

/* ---- tests ---- */

Test(shard, put_get_delete_in_memory)
{
        cr_assert(eq(int, shard_open_sync(), 0));
        expect_value("a", NULL);
        cr_assert(eq(int, put_sync("a", "1"), 0));
        cr_assert(eq(int, put_sync("b", "2"), 0));
        expect_value("a", "1");
        cr_assert(eq(int, put_sync("a", "3"), 0));
        expect_value("a", "3");
        cr_assert(eq(int, del_sync("a"), 0));
        expect_value("a", NULL);
        expect_value("b", "2");
        cr_expect(eq(u64, eng_shard_stats(sh)->writes, 4));
}

Test(shard, bad_input_is_refused)
{
        struct eng_mutation m = put_m("k", "v", 0);
        struct wr x;

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_expect(eq(int, write_async(&x, &m, 0), -EINVAL));
        m.kind = (enum eng_mut_kind)7;
        cr_expect(eq(int, write_async(&x, &m, 1), -EINVAL));
        m = put_m("k", "v", 0);
        m.table = 1000;                 /* no such table */
        cr_expect(eq(int, write_async(&x, &m, 1), -SCREE_ENOTFOUND));
        m = put_m("k", "v", 0);
        m.key_len = ENG_MAX_USER_KEY_BYTES + 1;
        cr_expect(eq(int, write_async(&x, &m, 1), -EINVAL));
}

Test(shard, a_key_of_another_shard_is_refused)
{
        char k[32];
        int refused = 0;

        opts.n_shards = 2;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (int i = 0; i < 20; i++) {
                struct eng_mutation m;
                struct wr x;

                snprintf(k, sizeof(k), "k%d", i);
                m = put_m(k, "v", 0);
                if (eng_tablet_of_key(&(struct eng_tablet_map){ 2, 4 }, ENG_TABLE_DEFAULT, k,
                                      strlen(k)).shard == 1) {
                        cr_expect(eq(int, write_async(&x, &m, 1), -SCREE_EMOVED));
                        refused++;
                }
        }
        cr_expect(gt(int, refused, 0));
}

Test(shard, data_survives_close_and_reopen)
{
        char k[32], v[32];

        cr_assert(eq(int, shard_open_sync(), 0));
        for (int i = 0; i < 500; i++) {
                snprintf(k, sizeof(k), "key%d", i);
                snprintf(v, sizeof(v), "value%d", i);
                cr_assert(eq(int, put_sync(k, v), 0));
        }
        cr_assert(eq(int, del_sync("key7"), 0));
        cr_assert(eq(int, reopen(), 0));
        cr_expect(eq(u64, eng_shard_stats(sh)->replayed_records, 501));
        for (int i = 0; i < 500; i++) {
                snprintf(k, sizeof(k), "key%d", i);
                snprintf(v, sizeof(v), "value%d", i);
                expect_value(k, i == 7 ? NULL : v);
        }
        /* New writes after a replay get sequence numbers above the old ones. */
        cr_assert(eq(int, put_sync("key1", "newer"), 0));
        cr_assert(eq(int, reopen(), 0));
        expect_value("key1", "newer");
}

Test(shard, what_the_log_replays_is_flushed_after_start_up)
{
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("a", "1"), 0));
        cr_assert(eq(int, put_sync("b", "2"), 0));
        cr_assert(eq(int, reopen(), 0));
        cr_assert(gt(u64, eng_shard_stats(sh)->replayed_records, 0));
        /* Sealed at once: the flush runs in the background. */
        cr_expect(eq(u64, eng_shard_stats(sh)->memtable_bytes, 0));
        cr_assert(eq(int, flush_sync(), 0));
        cr_expect(eq(u64, eng_shard_stats(sh)->imm_bytes, 0));
        cr_assert(gt(u64, eng_shard_stats(sh)->flushes, 0));
        expect_value("a", "1");
        expect_value("b", "2");
        /* Nothing left to replay. */
        cr_assert(eq(int, reopen(), 0));
        cr_expect(eq(u64, eng_shard_stats(sh)->replayed_records, 0));
        expect_value("a", "1");
}

/* The writes of one loop iteration share one commit-log record, and each
 * is still acknowledged once that record is durable. */
Test(shard, writes_of_one_iteration_share_a_log_record)
{
        static struct wr w[100];
        char k[16], v[16];

        cr_assert(eq(int, shard_open_sync(), 0));
        uint64_t before = eng_shard_stats(sh)->log_records;

        for (int i = 0; i < 100; i++) {
                struct eng_mutation m;

                snprintf(k, sizeof(k), "g%03d", i);
                snprintf(v, sizeof(v), "v%d", i);
                m = put_m(k, v, 0);
                cr_assert(eq(int, write_async(&w[i], &m, 1), 0));
        }
        for (int i = 0; i < 100; i++) {
                cr_assert(eq(int, rx_loop_run_until(loop, &w[i].done), 0));
                cr_assert(eq(int, w[i].res, 0));
        }
        cr_expect(eq(u64, eng_shard_stats(sh)->log_records - before, 1));
        cr_assert(eq(int, power_cut_reopen(false, 1), 0));
        for (int i = 0; i < 100; i++) {
                snprintf(k, sizeof(k), "g%03d", i);
                snprintf(v, sizeof(v), "v%d", i);
                expect_value(k, v);
        }
}

/* A write too big to group is logged alone, after the group before it. */
Test(shard, a_big_write_is_logged_alone_in_order)
{
        static char big[300 << 10];
        struct wr a, b, c;
        struct eng_mutation m1 = put_m("k", "small", 0), m2 = put_m("k", "x", 0), m3 = put_m("j", "1", 0);

        opts.segment_bytes = 1 << 20;
        cr_assert(eq(int, shard_open_sync(), 0));
        memset(big, 'b', sizeof(big) - 1);
        m2.value = big;
        m2.value_len = sizeof(big) - 1;
        cr_assert(eq(int, write_async(&a, &m1, 1), 0));
        cr_assert(eq(int, write_async(&b, &m2, 1), 0));
        cr_assert(eq(int, write_async(&c, &m3, 1), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &c.done), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &a.done), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &b.done), 0));
        cr_assert(eq(int, a.res + b.res + c.res, 0));
        cr_assert(eq(int, power_cut_reopen(false, 2), 0));
        expect_value("j", "1");
        {
                struct rd x;

                cr_assert(eq(int, get_wait(ENG_TABLE_DEFAULT, "k", 1, &x), 0));
                cr_assert(eq(u32, x.g.value_len, sizeof(big) - 1), "the big write is not the newest");
                eng_get_release(&x.g);
        }
}

Test(shard, flushed_data_is_read_from_sstables)
{
        char k[32], v[32];

        cr_assert(eq(int, shard_open_sync(), 0));
        for (int i = 0; i < 2000; i++) {
                snprintf(k, sizeof(k), "key%d", i);
                snprintf(v, sizeof(v), "value%d", i);
                cr_assert(eq(int, put_sync(k, v), 0));
        }
        cr_assert(eq(int, del_sync("key5"), 0));
        cr_assert(eq(int, flush_sync(), 0));
        cr_expect(ge(u64, eng_shard_stats(sh)->flushes, 1));
        cr_expect(eq(u64, eng_shard_stats(sh)->memtable_bytes, 0));
        cr_assert(eq(int, put_sync("key6", "overwritten"), 0));
        for (int i = 0; i < 2000; i++) {
                snprintf(k, sizeof(k), "key%d", i);
                snprintf(v, sizeof(v), "value%d", i);
                expect_value(k, i == 5 ? NULL : i == 6 ? "overwritten" : v);
        }
        expect_value("missing", NULL);
        cr_assert(eq(int, reopen(), 0));
        cr_expect(le(u64, eng_shard_stats(sh)->replayed_records, 1),
                  "flushed writes must not be replayed");
        expect_value("key5", NULL);
        expect_value("key6", "overwritten");
        expect_value("key1999", "value1999");
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0));
}

Test(shard, expired_values_read_as_absent)
{
        uint64_t now = time_wall_ns() / 1000000;
        struct eng_mutation m[2] = { put_m("old", "x", now - 1000), put_m("young", "y", now + 3600000) };

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, write_sync(m, 2), 0));
        expect_value("old", NULL);
        expect_value("young", "y");
        cr_assert(eq(int, flush_sync(), 0));
        expect_value("old", NULL);
        expect_value("young", "y");
}

/* ---- read-modify-write ---- */

struct exp_wait {
        struct eng_expire x;
        bool done;
        int res;
};

static void on_expire(struct eng_expire *x, int res)
{
        struct exp_wait *w = x->ctx;

        w->done = true;
        w->res = res;
}

static int expire_sync(const char *k, uint64_t expiry_ms)
{
        struct exp_wait w = { .x = { .done = on_expire } };

        w.x.ctx = &w;
        cr_assert(eq(int, eng_shard_expire(sh, ENG_TABLE_DEFAULT, k, (uint32_t)strlen(k), expiry_ms,
                                           &w.x), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &w.done), 0));
        return w.res;
}

/* The expiry of k as a get sees it (k must be live). */
static uint64_t expiry_of(const char *k)
{
        struct rd x;
        uint64_t e;
        int r = get_wait(ENG_TABLE_DEFAULT, k, (uint32_t)strlen(k), &x);

        cr_assert(eq(int, r, 0), "%s: %d", k, r);
        e = x.g.expiry_ms;
        eng_get_release(&x.g);
        return e;
}

Test(shard, expire_sets_and_clears_a_keys_expiry_and_keeps_its_value)
{
        uint64_t now = time_wall_ns() / 1000000, later = now + 3600000;

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, expire_sync("nope", later), 0));      /* absent: nothing written */
        expect_value("nope", NULL);
        cr_assert(eq(int, put_sync("k", "value"), 0));
        cr_assert(eq(int, flush_sync(), 0));                    /* from an SSTable */
        cr_assert(eq(int, reopen(), 0));
        cr_assert(eq(int, expire_sync("k", later), 1));
        expect_value("k", "value");
        cr_assert(eq(u64, expiry_of("k"), later));
        cr_assert(eq(int, reopen(), 0));
        cr_assert(eq(u64, expiry_of("k"), later));
        cr_assert(eq(int, expire_sync("k", 0), 1));             /* PERSIST */
        cr_assert(eq(u64, expiry_of("k"), 0));
        expect_value("k", "value");
        cr_assert(eq(int, expire_sync("k", now - 1), 1));       /* in the past: gone */
        expect_value("k", NULL);
        cr_assert(eq(int, expire_sync("k", later), 0));
        cr_assert(eq(int, eng_shard_expire(sh, 1000, "k", 1, 0,
                                           &(struct eng_expire){ .done = on_expire }),
                     -SCREE_ENOTFOUND));        /* no such table */
}

Test(shard, concurrent_increments_lose_nothing)
{
        static struct incr inc[200];
        bool all = false;

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("counter", "1000"), 0));
        cr_assert(eq(int, flush_sync(), 0));
        /* Cold: the first reads wait for the disk while others pile up. */
        for (int i = 0; i < 200; i++) {
                inc[i] = (struct incr){ .r = { .done = on_rmw } };
                inc[i].r.ctx = &inc[i];
                cr_assert(eq(int, eng_shard_rmw(sh, ENG_TABLE_DEFAULT, "counter", 7, incr_fn,
                                                &inc[i], &inc[i].r), 0));
        }
        for (int spins = 0; !all && spins < 100000; spins++) {
                all = true;
                for (int i = 0; i < 200; i++)
                        all = all && inc[i].done;
                if (!all)
                        rx_loop_run_until(loop, &inc[199].done);
        }
        cr_assert(all);
        for (int i = 0; i < 200; i++)
                cr_expect(eq(int, inc[i].res, 1));
        expect_value("counter", "1200");
}

/* Batch mode puts a write into the memtables only once its group is logged
 * (shard.c, shard_apply_pending): reads before that must see it anyway. */
Test(shard, a_read_sees_a_batch_write_before_its_acknowledgement)
{
        struct eng_mutation m = put_m("k", "v1", 0);
        struct wr w;
        char buf[32];

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, write_async(&w, &m, 1), 0), "batch mode: acknowledged later");
        cr_assert(eq(int, get_sync("k", buf, sizeof(buf)), 0));
        cr_expect(eq(str, buf, "v1"));
        cr_assert(eq(int, rx_loop_run_until(loop, &w.done), 0));
        cr_expect(eq(int, w.res, 0));
        expect_value("k", "v1");
}

/* One key's operations take effect in call order: a write called while an
 * increment waits for the disk lands after it. Regression: the write went
 * in first and the increment, reading again, built on it (5001), as if
 * the two had been called the other way round. */
Test(shard, a_write_called_after_an_increment_waiting_for_the_disk_lands_after_it)
{
        static struct incr inc;
        struct eng_mutation m = put_m("counter", "5000", 0);
        struct wr w;

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("counter", "1000"), 0));
        cr_assert(eq(int, flush_sync(), 0));
        cr_assert(eq(int, reopen(), 0));        /* cold: the increment's read waits */
        inc = (struct incr){ .r = { .done = on_rmw } };
        inc.r.ctx = &inc;
        cr_assert(eq(int, eng_shard_rmw(sh, ENG_TABLE_DEFAULT, "counter", 7, incr_fn, &inc, &inc.r), 0));
        cr_assert(not(inc.done), "the read must wait for the disk");
        cr_assert(eq(int, write_async(&w, &m, 1), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &inc.done), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &w.done), 0));
        cr_expect(eq(int, inc.res, 1));
        cr_expect(eq(str, inc.buf, "1001"));
        cr_expect(eq(int, w.res, 0));
        expect_value("counter", "5000");
}

/* ---- flushing under a memory budget ---- */

Test(shard, a_small_budget_flushes_and_stalls_but_loses_nothing)
{
        static struct wr w[3000];
        char k[32], v[128];
        static char keys[3000][16];

        opts.memtable_budget = 256 << 10;
        opts.sync = ENG_WAL_SYNC_PERIODIC;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (int i = 0; i < 3000; i++) {
                struct eng_mutation m;

                snprintf(keys[i], sizeof(keys[i]), "k%05d", i);
                snprintf(v, sizeof(v), "%0100d", i);
                m = put_m(keys[i], v, 0);
                cr_assert(ge(int, write_async(&w[i], &m, 1), 0));
        }
        for (int i = 0; i < 3000; i++) {
                rx_loop_run_until(loop, &w[i].done);
                cr_assert(eq(int, w[i].res, 0), "write %d: %d", i, w[i].res);
        }
        const struct eng_shard_stats *st = eng_shard_stats(sh);

        cr_expect(ge(u64, st->flushes, 2), "%llu flushes", (unsigned long long)st->flushes);
        cr_expect(gt(u64, st->stalls, 0), "a burst over twice the budget must stall");
        for (int i = 0; i < 3000; i += 7) {
                snprintf(k, sizeof(k), "k%05d", i);
                snprintf(v, sizeof(v), "%0100d", i);
                expect_value(k, v);
        }
        cr_assert(eq(int, reopen(), 0));
        for (int i = 0; i < 3000; i += 7) {
                snprintf(k, sizeof(k), "k%05d", i);
                snprintf(v, sizeof(v), "%0100d", i);
                expect_value(k, v);
        }
}

/* ---- scans ---- */

static int count_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        (void)it;
        (*(unsigned *)sc->ctx)++;
        return 0;
}

static void scan_done_unexpected(struct eng_scan *sc, int res)
{
        (void)sc;
        cr_fail("a scan of memtables only called back (%d)", res);
}

/* Regression: the end of the table's last tablet read as ENG_SST_PENDING
 * (both were 2), so a scan that ran off the end, or reached its limit
 * there, said "pending" and never called back. */
Test(shard, a_scan_that_reaches_the_tables_end_finishes)
{
        struct eng_scan sc = { .item = count_item, .done = scan_done_unexpected };
        unsigned items = 0;
        char k[8];

        sc.ctx = &items;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (int i = 0; i < 4; i++) {
                struct eng_mutation m = put_m((snprintf(k, sizeof(k), "%c%d", 0xf0, i), k), "v", 0);

                m.table = ENG_TABLE_ORDERED;
                cr_assert(eq(int, write_sync(&m, 1), 0));
        }
        cr_assert(eq(int, eng_shard_scan(sh, ENG_TABLE_ORDERED, NULL, 0, NULL, 0, 10, &sc), 0));
        cr_expect(eq(u32, sc.n, 4));
        cr_expect(eq(u32, items, 4));
        cr_expect(not(sc.more));
        items = 0;
        cr_assert(eq(int, eng_shard_scan(sh, ENG_TABLE_ORDERED, "\xf0" "2", 2, NULL, 0, 2, &sc), 0));
        cr_expect(eq(u32, sc.n, 2));
        eng_scan_release(&sc);
}

/* Regression: disk_bytes_written counted SSTables only, so write
 * amplification left out the commit log. */
Test(shard, disk_bytes_written_counts_the_commit_log)
{
        const struct eng_shard_stats *st;
        char k[32], v[128];
        uint64_t before_flush;

        cr_assert(eq(int, shard_open_sync(), 0));
        for (int i = 0; i < 200; i++) {
                snprintf(k, sizeof(k), "k%05d", i);
                snprintf(v, sizeof(v), "%0100d", i);
                cr_assert(eq(int, put_sync(k, v), 0));
        }
        st = eng_shard_stats(sh);
        cr_expect(eq(u64, st->flush_bytes, 0));
        /* Batch mode: every put is its own group commit, so the log writes
         * at least the user bytes (each sync rewrites the last block). */
        cr_expect(ge(u64, st->disk_bytes_written, st->user_bytes), "%llu written, %llu user",
                  (unsigned long long)st->disk_bytes_written, (unsigned long long)st->user_bytes);
        before_flush = st->disk_bytes_written;
        cr_assert(eq(int, flush_sync(), 0));
        st = eng_shard_stats(sh);
        cr_expect(gt(u64, st->flush_bytes, 0));
        cr_expect(ge(u64, st->disk_bytes_written, before_flush + st->flush_bytes));
        /* Asking again adds nothing: the log's bytes are counted once. */
        before_flush = st->disk_bytes_written;
        cr_expect(eq(u64, eng_shard_stats(sh)->disk_bytes_written, before_flush));
}

Test(shard, flushed_log_segments_are_removed)
{
        char k[32], v[512];

        opts.segment_bytes = 64 << 10;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (int round = 0; round < 4; round++) {
                for (int i = 0; i < 200; i++) {
                        snprintf(k, sizeof(k), "r%dk%d", round, i);
                        snprintf(v, sizeof(v), "%0400d", i);
                        cr_assert(eq(int, put_sync(k, v), 0));
                }
                cr_assert(eq(int, flush_sync(), 0));
        }
        /* ~330 KB of log in 64 KiB segments, all flushed: closing waits for
         * the removals. What may remain: the old log's last segment and its
         * unused reserve (kept, emptied, so the ids stay contiguous), and the
         * new log's first segment and reserve. */
        cr_assert(eq(int, reopen(), 0));
        cr_expect(le(u32, count_files(".log"), 4), "%u segments left", count_files(".log"));
        snprintf(v, sizeof(v), "%0400d", 0);
        expect_value("r0k0", v);
        expect_value("r3k199", (snprintf(v, sizeof(v), "%0400d", 199), v));
}

/* A tablet that stops taking writes must not keep the log: its memtable
 * is sealed and flushed once the log behind the newest segment passes
 * log_limit_bytes, as a sequential load leaves every range but the last.
 * Regression: the budget only ever sealed the busiest memtable, so one
 * key in another tablet kept every segment written after it. */
Test(shard, an_idle_tablet_does_not_keep_the_log)
{
        char k[32], v[512];
        struct eng_mutation idle = { .kind = ENG_MUT_PUT, .table = ENG_TABLE_ORDERED,
                                     .key = "idle", .key_len = 4, .value = "kept", .value_len = 4 };
        struct eng_mutation m[8];
        struct rd x;

        opts.segment_bytes = 64 << 10;
        opts.memtable_budget = 256 << 10;       /* log limit: 4 segments */
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, write_sync(&idle, 1), 0));
        /* ~2.4 MB into the default table: ~37 segments of log. */
        for (int i = 0; i < 600; i++) {
                char keys[8][32];

                for (int j = 0; j < 8; j++) {
                        snprintf(keys[j], sizeof(keys[j]), "k%06d", i * 8 + j);
                        snprintf(v, sizeof(v), "%0480d", i);
                        m[j] = put_m(keys[j], v, 0);
                }
                cr_assert(eq(int, write_sync(m, 8), 0));
        }
        /* Segments in use: the limit's 4 and the one being written, the
         * reserve, 2 kept for reuse; a flush may still be cutting. */
        TEST_RUN_UNTIL(loop, count_files(".log") <= 9);
        cr_expect(ge(u64, eng_shard_stats(sh)->log_limit_seals, 1));
        cr_assert(eq(int, reopen(), 0));
        cr_assert(eq(int, get_wait(ENG_TABLE_ORDERED, "idle", 4, &x), 0));
        cr_expect(eq(u32, x.g.value_len, 4));
        cr_expect(eq(int, memcmp(x.g.value, "kept", 4), 0));
        eng_get_release(&x.g);
        snprintf(k, sizeof(k), "k%06d", 4799);
        expect_value(k, (snprintf(v, sizeof(v), "%0480d", 599), v));
}

Test(shard, start_ups_without_writes_leave_no_old_log_behind)
{
        char v[512];

        opts.segment_bytes = 64 << 10;
        cr_assert(eq(int, shard_open_sync(), 0));
        snprintf(v, sizeof(v), "%0400d", 7);
        cr_assert(eq(int, put_sync("k", v), 0));
        /* Each start-up makes a new log (a segment and its reserve); the
         * old one, with nothing unflushed in it, must go. */
        for (int i = 0; i < 6; i++)
                cr_assert(eq(int, reopen(), 0));
        cr_assert(eq(int, reopen(), 0));
        cr_expect(le(u32, count_files(".log"), 4), "%u segments left", count_files(".log"));
        expect_value("k", v);
}

/* ---- power cuts ---- */

#define CUT_KEYS 64
#define CUT_WRITES 600

/*
 * Writers overwrite a small key set with increasing versions (in batches of
 * two keys, so atomicity shows), flushing now and then; the power goes at
 * an arbitrary moment. After recovery each key holds its newest acknowledged
 * version or a later (unacknowledged) one, never an older one, and both
 * keys of a batch hold the same version.
 */
static void ignore_done(void *arg, int res)
{
        (void)arg;
        (void)res;
}

static void power_cut_round(bool tear, uint64_t seed)
{
        static struct wr w[CUT_WRITES];
        static int acked_version[CUT_KEYS], wkey[CUT_WRITES];
        char k1[16], k2[16], v[64], got1[64], got2[64];

        opts.memtable_budget = 128 << 10;
        opts.segment_bytes = 64 << 10;
        cr_assert(eq(int, shard_open_sync(), 0));
        srand((unsigned)seed);
        memset(acked_version, 0, sizeof(acked_version));
        int n = 0, stop = 200 + rand() % (CUT_WRITES - 200);

        for (; n < stop; n++) {
                int key = rand() % (CUT_KEYS / 2);
                struct eng_mutation m[2];

                wkey[n] = key;
                snprintf(k1, sizeof(k1), "a%02d", key);
                snprintf(k2, sizeof(k2), "b%02d", key);
                snprintf(v, sizeof(v), "%d-%0*d", n + 1, 20 + rand() % 40, 0);
                m[0] = put_m(k1, v, 0);
                m[1] = put_m(k2, v, 0);
                cr_assert(ge(int, write_async(&w[n], m, 2), 0));
                if (rand() % 8 == 0)
                        rx_loop_run_until(loop, &w[n].done);
                if (rand() % 150 == 0)
                        cr_assert(eq(int, eng_shard_flush(sh, ignore_done, NULL), 0));
        }
        for (int i = 0; i < n; i++)
                if (w[i].done && w[i].res == 0 && i + 1 > acked_version[wkey[i]])
                        acked_version[wkey[i]] = i + 1;
        cr_assert(eq(int, power_cut_reopen(tear, seed), 0));
        for (int key = 0; key < CUT_KEYS / 2; key++) {
                int r1, r2;

                snprintf(k1, sizeof(k1), "a%02d", key);
                snprintf(k2, sizeof(k2), "b%02d", key);
                r1 = get_sync(k1, got1, sizeof(got1));
                r2 = get_sync(k2, got2, sizeof(got2));
                cr_assert(eq(int, r1, r2), "half a batch survived for key %d", key);
                if (r1 == -SCREE_ENOTFOUND) {
                        cr_assert(eq(int, acked_version[key], 0), "key %d lost version %d", key,
                                  acked_version[key]);
                        continue;
                }
                cr_assert(eq(int, r1, 0));
                cr_assert(eq(str, got1, got2), "batch torn for key %d", key);
                cr_assert(ge(int, atoi(got1), acked_version[key]),
                          "key %d: version %d is older than acknowledged %d", key, atoi(got1),
                          acked_version[key]);
        }
}

Test(shard, a_power_cut_keeps_every_acknowledged_write)
{
        for (uint64_t seed = 1; seed <= 4; seed++) {
                power_cut_round(seed % 2 == 0, seed);
                shard_close_sync();
                tmpdir_remove(dir);
                tmpdir_make(dir, sizeof(dir), "shard");
                opts.dir = dir;
        }
}

/* ---- errors ---- */

Test(shard, a_failed_log_sync_stops_writes_but_not_reads)
{
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("a", "1"), 0));
        eng_fault_fs_fail(fs, ENG_FS_FDATASYNC, EIO, 1);
        cr_expect(eq(int, put_sync("b", "2"), -EIO));
        eng_fault_fs_fail(fs, ENG_FS_FDATASYNC, 0, 0);
        cr_expect(eq(int, put_sync("c", "3"), -EIO), "no retry after a failed fsync");
        cr_expect(eq(int, eng_shard_error(sh), -EIO));
        expect_value("a", "1");
}

Test(shard, a_full_disk_fails_writes_until_space_returns)
{
        char k[32], v[128];
        int failed = 0;

        opts.memtable_budget = 64 << 10;
        opts.sync = ENG_WAL_SYNC_PERIODIC;
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("before", "x"), 0));
        eng_fault_fs_fail(fs, ENG_FS_WRITE, ENOSPC, -1);
        /* Log writes fail too in this simulation, but the log buffers in
         * periodic mode; SSTable writes are what fail first. */
        eng_fault_fs_fail(fs, ENG_FS_FALLOCATE, ENOSPC, -1);
        for (int i = 0; i < 2000 && !failed; i++) {
                snprintf(k, sizeof(k), "k%d", i);
                snprintf(v, sizeof(v), "%0100d", i);
                if (put_sync(k, v) == -ENOSPC)
                        failed = i;
        }
        cr_expect(gt(int, failed, 0), "writes must fail once memory is full and flushes fail");
        expect_value("before", "x");
}

Test(shard, a_missing_sstable_is_named_at_start_up)
{
        char path[PATH_MAX + 32];

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("a", "1"), 0));
        cr_assert(eq(int, flush_sync(), 0));
        shard_close_sync();
        snprintf(path, sizeof(path), "%s/0000000000000001.sst", dir);
        cr_assert(eq(int, unlink(path), 0));
        cr_expect(eq(int, shard_open_sync(), -ENOENT));
}

Test(shard, a_corrupt_sstable_is_refused_at_start_up)
{
        char path[PATH_MAX + 32];
        FILE *f;

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("a", "1"), 0));
        cr_assert(eq(int, flush_sync(), 0));
        shard_close_sync();
        snprintf(path, sizeof(path), "%s/0000000000000001.sst", dir);
        f = fopen(path, "r+");
        cr_assert(not(eq(ptr, f, NULL)));
        fseek(f, 4096 + 20, SEEK_SET);     /* the index block, read at open */
        fputc('X', f);
        fclose(f);
        cr_expect(eq(int, shard_open_sync(), -SCREE_ECORRUPT));
}

Test(shard, another_layout_is_refused)
{
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("a", "1"), 0));
        cr_assert(eq(int, flush_sync(), 0));
        shard_close_sync();
        opts.tablets_per_shard = 8;
        cr_expect(eq(int, shard_open_sync(), -EINVAL));
}

/* ---- manifest versions ---- */

static uint8_t man_buf[1 << 16];

/* Reads <dir>/MANIFEST into man_buf; returns its length. */
static size_t manifest_file_read(void)
{
        char path[PATH_MAX + 32];
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "%s/MANIFEST", dir);
        f = fopen(path, "rb");
        cr_assert(not(eq(ptr, f, NULL)));
        n = fread(man_buf, 1, sizeof(man_buf), f);
        fclose(f);
        cr_assert(lt(sz, n, sizeof(man_buf)));
        return n;
}

static void manifest_file_write(const uint8_t *p, size_t n)
{
        char path[PATH_MAX + 32];
        FILE *f;

        snprintf(path, sizeof(path), "%s/MANIFEST", dir);
        f = fopen(path, "wb");
        cr_assert(not(eq(ptr, f, NULL)));
        cr_assert(eq(sz, fwrite(p, 1, n, f), n));
        fclose(f);
}

/* The state <dir>/MANIFEST reads as (fini it after); *ret_version its version. */
static void manifest_file_state(struct eng_manifest_state *ret, uint32_t *ret_version)
{
        struct eng_manifest_reader r;

        cr_assert(eq(int, eng_manifest_read(&r, man_buf, manifest_file_read(), ret), 0));
        *ret_version = r.version;
}

/* Shard 1 of 2 puts n keys of its own ("<prefix><i>" = "v<i>") and flushes. */
static void put_own_keys(const struct eng_tablet_map *m, const char *prefix, int n)
{
        char k[32], v[32];

        for (int i = 0, put = 0; put < n; i++) {
                int len = snprintf(k, sizeof(k), "%s%d", prefix, i);

                if (eng_tablet_of_key(m, ENG_TABLE_DEFAULT, k, (size_t)len).shard != opts.shard)
                        continue;
                snprintf(v, sizeof(v), "v%d", i);
                cr_assert(eq(int, put_sync(k, v), 0));
                put++;
        }
        cr_assert(eq(int, flush_sync(), 0));
}

static void expect_own_keys(const struct eng_tablet_map *m, const char *prefix, int n)
{
        char k[32], v[32];

        for (int i = 0, got = 0; got < n; i++) {
                int len = snprintf(k, sizeof(k), "%s%d", prefix, i);

                if (eng_tablet_of_key(m, ENG_TABLE_DEFAULT, k, (size_t)len).shard != opts.shard)
                        continue;
                snprintf(v, sizeof(v), "v%d", i);
                expect_value(k, v);
                got++;
        }
}

/*
 * Writes st as the version 1 file the engine wrote before tablets were
 * catalog ids: local tablet numbers, a slot per local tablet, the last
 * table and its flushed seq in an edit after the snapshot.
 */
static void manifest_file_write_v1(const struct eng_tablet_map *m, const struct eng_manifest_state *st)
{
        static struct eng_manifest_table tables[64];
        uint64_t seqs[2 * ENG_MAX_TABLETS_PER_SHARD];
        uint32_t n_slots = eng_tablet_map_per_shard(m), shard, local;
        static uint8_t buf[1 << 16], p[1 << 14];
        size_t off = ENG_MANIFEST_HEADER_BYTES, len;
        struct eng_manifest_edit e = { .n_added = 1, .n_flushed = 1 };
        uint64_t last_seq;

        cr_assert(le(sz, st->n_tables, 64));
        cr_assert(ge(sz, st->n_tables, 2));
        for (uint32_t l = 0; l < n_slots; l++)
                seqs[l] = eng_manifest_flushed_seq(st, eng_tablet_static_id(m, opts.shard, l));
        for (size_t i = 0; i < st->n_tables; i++) {
                tables[i] = st->tables[i];
                cr_assert(eq(int, eng_tablet_static_local(m, st->tables[i].tablet, &shard, &local), 0));
                cr_assert(eq(u32, shard, opts.shard));
                tables[i].tablet = local;
        }
        local = tables[st->n_tables - 1].tablet;
        last_seq = seqs[local];
        e.added = &tables[st->n_tables - 1];
        e.flushed_tablets = &local;
        e.flushed_seqs = &last_seq;
        manifest_v1_header_encode(buf, 77);
        len = manifest_v1_snapshot_encode(p, &st->layout, st->next_file_id, st->log_segment, seqs,
                                          n_slots, tables, (uint32_t)st->n_tables - 1);
        manifest_v1_record(buf, sizeof(buf), &off, 77, ENG_MANIFEST_RECORD_SNAPSHOT, p, len);
        len = manifest_v1_edit_encode(p, &e);
        manifest_v1_record(buf, sizeof(buf), &off, 77, ENG_MANIFEST_RECORD_EDIT, p, len);
        manifest_file_write(buf, off);
}

/* A shard directory written before manifest version 2 (tablets by local
 * number) opens with its data, and start-up rewrites its manifest as
 * version 3 with the same tablets and tables, by catalog id, and the
 * tablets' ranges from the catalog. */
Test(shard, a_directory_with_a_version_1_manifest_opens_with_its_data)
{
        struct eng_manifest_state before, after;
        struct eng_tablet_map m;
        uint32_t version;

        opts.n_shards = 2;
        opts.shard = 1;
        cr_assert(eq(int, eng_tablet_map_init(&m, 2, 4), 0));
        cr_assert(eq(int, shard_open_sync(), 0));
        put_own_keys(&m, "a", 40);
        put_own_keys(&m, "b", 40);
        shard_close_sync();
        manifest_file_state(&before, &version);
        cr_assert(eq(u32, version, 3));
        manifest_file_write_v1(&m, &before);
        manifest_file_state(&after, &version);
        cr_assert(eq(u32, version, 1), "the directory now looks as the old code left it");
        eng_manifest_state_fini(&after);

        cr_assert(eq(int, shard_open_sync(), 0));
        expect_own_keys(&m, "a", 40);
        expect_own_keys(&m, "b", 40);
        manifest_file_state(&after, &version);
        cr_expect(eq(u32, version, 3), "rewritten as version 3 at start-up");
        cr_assert(eq(u32, after.n_tablets, before.n_tablets));
        for (uint32_t i = 0; i < after.n_tablets; i++) {
                cr_expect(eq(u32, after.tablets[i].id, before.tablets[i].id));
                cr_expect(eq(u64, after.tablets[i].flushed_seq, before.tablets[i].flushed_seq));
                cr_expect(manifest_tablet_is_equal(&after.tablets[i], &before.tablets[i]),
                          "the catalog gave it back its range");
        }
        cr_assert(eq(sz, after.n_tables, before.n_tables));
        for (size_t i = 0; i < after.n_tables; i++)
                cr_expect(manifest_table_is_equal(&after.tables[i], &before.tables[i]), "table %zu", i);
        eng_manifest_state_fini(&after);
        eng_manifest_state_fini(&before);
        /* And it goes on: more writes, a flush, a reopen. */
        put_own_keys(&m, "c", 10);
        cr_assert(eq(int, reopen(), 0));
        expect_own_keys(&m, "a", 40);
        expect_own_keys(&m, "c", 10);
}

/* The manifest names tables by catalog tablet id: one of another shard's
 * tablets, or an id that is no static tablet, refuses the open. */
/* A tablet the catalog never made is refused; one of another shard's (a
 * move a crash interrupted: shard_move.h) is dropped, the shard's own
 * rows kept. */
Test(shard, a_table_in_a_tablet_not_of_this_shard_is_refused_at_start_up)
{
        /* Past the static ids, then shard 0's (last: its drop deletes the
         * file the edit below gave it). */
        static const uint32_t bad_ids[] = { 1000, 2000, 2 };
        struct eng_manifest_state st;
        struct eng_tablet_map m;
        uint32_t version;

        opts.n_shards = 2;
        opts.shard = 1;
        cr_assert(eq(int, eng_tablet_map_init(&m, 2, 4), 0));
        cr_assert(eq(int, shard_open_sync(), 0));
        put_own_keys(&m, "a", 10);
        shard_close_sync();
        manifest_file_state(&st, &version);
        cr_assert(ge(sz, st.n_tables, 1));
        for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
                const struct eng_manifest_table moved = { .tablet = bad_ids[i],
                                                          .file_id = st.tables[0].file_id,
                                                          .file_size = st.tables[0].file_size,
                                                          .min_seq = st.tables[0].min_seq,
                                                          .max_seq = st.tables[0].max_seq };
                static const uint8_t start[] = { 0, 0, 3, 232 }, end[] = { 0, 0, 3, 233 };
                const struct eng_manifest_tablet entry = {      /* in table 1000: overlaps none */
                        .id = bad_ids[i], .table = 1000, .start = start, .end = end,
                        .start_len = 4, .end_len = 4,
                };
                const struct eng_manifest_edit out = { .removed = &st.tables[0], .n_removed = 1 };
                const struct eng_manifest_edit in = { .new_tablets = &entry, .n_new_tablets = 1,
                                                      .added = &moved, .n_added = 1 };
                struct eng_manifest_state bad;
                uint8_t p[4096];
                size_t off = ENG_MANIFEST_HEADER_BYTES;

                cr_assert(eq(int, eng_manifest_state_copy(&bad, &st), 0));
                cr_assert(eq(int, eng_manifest_state_apply(&bad, &out), 0));
                cr_assert(eq(int, eng_manifest_state_apply(&bad, &in), 0));
                cr_assert(le(sz, eng_manifest_snapshot_size(&bad), sizeof(p)));
                eng_manifest_snapshot_encode(p, &bad);
                eng_manifest_header_encode(man_buf, 5);
                off += eng_manifest_record_encode(man_buf + off, 5, ENG_MANIFEST_RECORD_SNAPSHOT, 0, p,
                                                  eng_manifest_snapshot_size(&bad));
                manifest_file_write(man_buf, off);
                if (bad_ids[i] >= 1000) {
                        cr_expect(eq(int, shard_open_sync(), -SCREE_ECORRUPT), "tablet id %u",
                                  bad_ids[i]);
                } else {
                        cr_expect(eq(int, shard_open_sync(), 0), "tablet id %u", bad_ids[i]);
                        shard_close_sync();
                }
                eng_manifest_state_fini(&bad);
        }
        eng_manifest_state_fini(&st);
}

Test(shard, leftover_files_are_removed_at_start_up)
{
        char path[PATH_MAX + 32];
        FILE *f;

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("a", "1"), 0));
        shard_close_sync();
        snprintf(path, sizeof(path), "%s/00000000000000ff.sst", dir);
        f = fopen(path, "w");
        cr_assert(not(eq(ptr, f, NULL)));
        fclose(f);
        snprintf(path, sizeof(path), "%s/MANIFEST.tmp", dir);
        f = fopen(path, "w");
        fclose(f);
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_expect(eq(u32, count_files(".sst"), 0));
        cr_expect(eq(u32, count_files(".tmp"), 0));
        expect_value("a", "1");
}

