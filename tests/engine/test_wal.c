/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commit-log writer (engine/wal.h) on the fault-injecting file layer:
 * batch appends are acknowledged only once durable and share syncs (group
 * commit); records roll across segments and read back in order; a power cut
 * at a random moment, torn or not, keeps every acknowledged record and
 * leaves no corruption; a failed fdatasync stops the log with a clear error;
 * periodic mode acknowledges at once and syncs on its timer (once per period,
 * or sooner past 1 MiB buffered); a new log never
 * writes into an existing segment file; a flush held for writers that do
 * not come back goes by its timer, or at a close. Logs are read back through
 * eng_wal_replay (tests/engine/wal_helpers.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/fault_fs.h"
#include "engine/wal.h"
#include "tests/engine/wal_helpers.h"

static void setup(void)
{
        wal_fixture_setup("wal");
}

TestSuite(wal, .init = setup, .fini = wal_fixture_teardown, .timeout = 60);

Test(wal, batch_appends_are_acknowledged_once_durable_and_share_syncs)
{
        struct eng_wal *wal = open_wal(0, ENG_WAL_SYNC_BATCH);
        const unsigned n = 1000;

        want_done = n;
        for (unsigned i = 0; i < n; i++)
                cr_assert(eq(int, append(wal, i), 0));
        cr_expect(eq(u32, n_done, 0), "acknowledged before anything was durable");
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        for (unsigned i = 0; i < n; i++)
                cr_assert(eq(int, apps[i].res, 0));
        cr_expect(lt(u64, eng_wal_stats(wal)->syncs, 10), "%llu syncs for %u appends: no group commit",
                  (unsigned long long)eng_wal_stats(wal)->syncs, n);
        close_and_expect_records(wal, n);
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0), "a write overlapped an fdatasync");
}

/* A busy log swaps two write buffers instead of allocating one per flush.
 * Regression: each flush took a fresh buffer of the active one's size and
 * zeroed it, and a few MiB fresh from the allocator faulted in page by
 * page (a quarter of a shard's time under YCSB A). The records written
 * over reused buffers, stale bytes beyond their end, still read back. */
Test(wal, flushes_reuse_their_buffers)
{
        struct eng_wal *wal = open_wal(0, ENG_WAL_SYNC_BATCH);
        const unsigned rounds = 200, per = 5;

        for (unsigned r = 0; r < rounds; r++) {
                n_done = 0;
                all_done = false;
                want_done = per;
                for (unsigned i = r * per; i < (r + 1) * per; i++)
                        cr_assert(eq(int, append(wal, i), 0));
                cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        }
        cr_expect(ge(u64, eng_wal_stats(wal)->syncs, rounds));
        cr_expect(le(u64, eng_wal_stats(wal)->buffers, 4), "%llu buffers for %llu flushes",
                  (unsigned long long)eng_wal_stats(wal)->buffers,
                  (unsigned long long)eng_wal_stats(wal)->syncs);
        close_and_expect_records(wal, rounds * per);
}

Test(wal, records_roll_across_segments_and_read_back_in_order)
{
        struct eng_wal *wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        static bool seen[MAX_APPENDS];
        unsigned corrupt, segs;
        const unsigned n = 2000;

        want_done = n;
        for (unsigned i = 0; i < n; i++) {
                cr_assert(eq(int, append(wal, i), 0));
                if (i % 100 == 99)      /* let some flushes happen in between */
                        rx_loop_run_until(loop, &apps[i - 50].done);
        }
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        close_wal(wal);
        cr_expect(eq(u32, read_back(seen, &corrupt, &segs), n));
        cr_expect(eq(u32, corrupt, 0));
        cr_expect(ge(u32, segs, 5), "only %u segments for ~450 KB in 64 KiB segments", segs);
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0));
}

static void power_cut_round(bool tear, uint64_t seed)
{
        struct eng_wal *wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        static bool seen[MAX_APPENDS], acked[MAX_APPENDS];
        unsigned corrupt, segs, n = 0, n_acked = 0;

        memset(seen, 0, sizeof(seen));
        want_done = MAX_APPENDS + 1;
        srand((unsigned)seed);
        /* Waves of appends with the loop running in between, then a cut at
         * an arbitrary point with writes and syncs in flight. */
        for (int wave = 0; wave < 20; wave++) {
                unsigned burst = 20 + (unsigned)(rand() % 80);

                for (unsigned k = 0; k < burst; k++, n++)
                        cr_assert(eq(int, append(wal, n), 0));
                rx_loop_run_until(loop, &apps[n - burst / 2].done);
        }
        for (unsigned i = 0; i < n; i++)
                if (apps[i].done && apps[i].res == 0) {
                        acked[i] = true;
                        n_acked++;
                }
        /* Zeroing of the reserve (batch mode) is part of what gets cut. */
        cr_expect(gt(u64, eng_wal_stats(wal)->zeroed_bytes, 0));
        cr_assert(eq(int, eng_fault_fs_power_cut(fs, tear, seed), 0));
        close_wal(wal);         /* everything in flight now fails */
        cr_expect(lt(int, close_res, 0), "the log must report the lost power");
        read_back(seen, &corrupt, &segs);
        cr_expect(eq(u32, corrupt, 0), "a power cut must not look like corruption");
        for (unsigned i = 0; i < n; i++) {
                cr_assert(not(acked[i] && !seen[i]), "acknowledged record %u lost", i);
                cr_assert(apps[i].done, "record %u never completed", i);
        }
        cr_expect(gt(u32, n_acked, 0));
}

Test(wal, a_power_cut_keeps_every_acknowledged_record)
{
        power_cut_round(false, 1);
}

Test(wal, a_torn_power_cut_keeps_every_acknowledged_record)
{
        power_cut_round(true, 99);
}

Test(wal, a_failed_fdatasync_stops_the_log_with_that_error)
{
        struct eng_wal *wal = open_wal(0, ENG_WAL_SYNC_BATCH);

        want_done = 1;
        cr_assert(eq(int, append(wal, 0), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        cr_assert(eq(int, apps[0].res, 0));
        eng_fault_fs_fail(fs, ENG_FS_FDATASYNC, EIO, 1);
        want_done = 3;
        all_done = false;
        cr_assert(eq(int, append(wal, 1), 0));
        cr_assert(eq(int, append(wal, 2), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        cr_expect(eq(int, apps[1].res, -EIO));
        cr_expect(eq(int, apps[2].res, -EIO));
        /* No retry: a later append fails at once even though fdatasync
         * would work again. */
        cr_expect(eq(int, append(wal, 3), -EIO));
        close_wal(wal);
        cr_expect(eq(int, close_res, -EIO));
}

Test(wal, periodic_mode_acknowledges_at_once_and_syncs_on_its_timer)
{
        struct eng_wal *wal = open_wal_at(fs, dir, 7, 0, ENG_WAL_SYNC_PERIODIC);

        for (unsigned i = 0; i < 100; i++)
                cr_assert(eq(int, append(wal, i), 1), "periodic appends are acknowledged at once");
        TEST_RUN_UNTIL(loop, eng_wal_stats(wal)->syncs > 0);        /* the period timer synced */
        close_and_expect_records(wal, 100);
}

static struct eng_wal *open_periodic(uint64_t period_ns)
{
        struct eng_wal_opts o = { .dir = dir, .shard = WAL_SHARD, .first_segment = 1,
                                  .sync = ENG_WAL_SYNC_PERIODIC, .period_ns = period_ns };
        struct eng_wal *wal;

        cr_assert(eq(int, eng_wal_open(fs, &o, &wal), 0));
        return wal;
}

static uint64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Regression: each sync used to start the next flush at once, so a steady
 * stream of appends kept a write and an fdatasync in flight all the time
 * (thousands a second in the server) instead of one per period. */
Test(wal, periodic_mode_flushes_once_per_period_under_steady_appends)
{
        struct eng_wal *wal = open_periodic(50 * 1000 * 1000);
        unsigned n = 0;
        uint64_t t0, ms, syncs;

        t0 = now_ms();
        for (int round = 0; round < 60; round++) {
                for (int k = 0; k < 20; k++, n++)
                        cr_assert(eq(int, append(wal, n), 1));
                run_for_ms(5);
        }
        /* A cold disk may take longer than the rounds for the first sync:
         * wait for it, then bound the count by the time it all took. */
        TEST_RUN_UNTIL(loop, eng_wal_stats(wal)->syncs > 0);
        ms = now_ms() - t0;
        syncs = eng_wal_stats(wal)->syncs;
        cr_expect(le(u64, syncs, ms / 50 + 2), "%llu syncs in %llu ms with a 50 ms period",
                  (unsigned long long)syncs, (unsigned long long)ms);
        /* close flushes what is buffered */
        close_and_expect_records(wal, n);
}

/* The buffer a periodic log holds between its syncs is bounded: past
 * 1 MiB it flushes without waiting for the timer. */
Test(wal, periodic_mode_flushes_a_full_buffer_before_its_period)
{
        struct eng_wal *wal = open_periodic(600 * UINT64_C(1000000000));
        unsigned n = 0;

        for (; n < 1000; n++)
                cr_assert(eq(int, append(wal, n), 1));
        run_for_ms(20);
        cr_expect(eq(u64, eng_wal_stats(wal)->syncs, 0), "synced ~200 KB before its period");
        for (; n < MAX_APPENDS; n++)
                cr_assert(eq(int, append(wal, n), 1));
        /* The period is 10 minutes: a sync now is the full buffer's. */
        TEST_RUN_UNTIL(loop, eng_wal_stats(wal)->syncs > 0);
        close_and_expect_records(wal, n);
}

Test(wal, bad_options_and_oversized_records_are_refused)
{
        struct eng_wal_opts o = { .dir = dir, .segment_bytes = 5000 };
        struct eng_wal *wal = NULL;
        static uint8_t big[70000];

        cr_expect(eq(int, eng_wal_open(fs, &o, &wal), -EINVAL));
        o.segment_bytes = 64 * 1024;
        cr_expect(eq(int, eng_wal_open(fs, &o, &wal), -EINVAL), "segment ids start at 1");
        o.first_segment = 1;
        o.sync = ENG_WAL_SYNC_MAX;
        cr_expect(eq(int, eng_wal_open(fs, &o, &wal), -EINVAL));
        wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        cr_expect(eq(int, eng_wal_append(wal, &apps[0].w, 1, big, sizeof(big)), -E2BIG));
        want_done = 1;
        cr_assert(eq(int, append(wal, 5), 0));
        cr_expect(eq(int, append(wal, 4), -EINVAL), "sequence numbers must increase");
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        close_wal(wal);
}

/* A leftover file with the id of a new segment would hold records seeded
 * with that same id: the log must not write into it. */
Test(wal, a_new_log_never_opens_an_existing_segment_file)
{
        char p[PATH_MAX + 32];
        const char junk[] = "leftover";
        char back[sizeof(junk)];
        struct eng_wal *wal;
        int fd;

        snprintf(p, sizeof(p), "%s/%016llx.log", dir, 1ull);
        fd = open(p, O_CREAT | O_WRONLY, 0644);
        cr_assert(ge(int, fd, 0));
        cr_assert(eq(i64, (int64_t)write(fd, junk, sizeof(junk)), (int64_t)sizeof(junk)));
        close(fd);
        wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        want_done = 1;
        cr_assert(eq(int, append(wal, 0), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        cr_expect(eq(int, apps[0].res, -EEXIST));
        close_wal(wal);
        cr_expect(eq(int, close_res, -EEXIST));
        fd = open(p, O_RDONLY);
        cr_assert(eq(i64, (int64_t)read(fd, back, sizeof(back)), (int64_t)sizeof(junk)));
        close(fd);
        cr_expect(eq(int, memcmp(back, junk, sizeof(junk)), 0), "the leftover was overwritten");
}

/* ---- the names of new segments (regression: the directory was never
 * fsynced, so a power cut could take a fresh segment and the acknowledged
 * records in it) ---- */

/* Cuts the power now (not torn), closes the dead log and reads back:
 * record i must be there. */
static void cut_and_expect(struct eng_wal *wal, unsigned i)
{
        static bool seen[MAX_APPENDS];
        unsigned corrupt, segs;

        cr_assert(eq(int, eng_fault_fs_power_cut(fs, false, 0), 0));
        close_wal(wal);
        read_back(seen, &corrupt, &segs);
        cr_expect(eq(u32, corrupt, 0));
        cr_expect(seen[i], "acknowledged record %u lost with its segment's name", i);
}

Test(wal, the_first_segment_survives_a_power_cut_once_a_record_is_acknowledged)
{
        struct eng_wal *wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        char p[PATH_MAX + 32];

        want_done = 1;
        cr_assert(eq(int, append(wal, 0), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        cr_assert(eq(int, apps[0].res, 0));
        cut_and_expect(wal, 0);
        seg_path(p, sizeof(p), 1);
        cr_expect(eq(int, access(p, F_OK), 0));
}

Test(wal, a_segment_rolled_into_survives_a_power_cut_once_a_record_is_acknowledged)
{
        struct eng_wal *wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        unsigned i = 0;

        want_done = MAX_APPENDS + 1;
        /* Up to the first record of segment 3: the first segment created at
         * a roll rather than at open. */
        while (eng_wal_segment(wal) < 3) {
                cr_assert(lt(u32, i, 1000), "no roll after %u records", i);
                cr_assert(eq(int, append(wal, i), 0));
                i++;
        }
        cr_assert(eq(int, rx_loop_run_until(loop, &apps[i - 1].done), 0));
        cr_assert(eq(int, apps[i - 1].res, 0));
        /* The next reserve is usually still preparing here, its new name
         * not yet synced (the cut then removes it), but that is timing:
         * not asserted. */
        cut_and_expect(wal, i - 1);
}

Test(wal, a_failed_directory_fsync_stops_the_log_and_acknowledges_nothing)
{
        struct eng_wal *wal;

        /* The log's only full fsyncs are of the directory. */
        eng_fault_fs_fail(fs, ENG_FS_FSYNC, EIO, 1);
        wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        want_done = 2;
        cr_assert(eq(int, append(wal, 0), 0));
        cr_assert(eq(int, append(wal, 1), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        cr_expect(eq(int, apps[0].res, -EIO));
        cr_expect(eq(int, apps[1].res, -EIO));
        cr_expect(eq(int, append(wal, 2), -EIO));
        close_wal(wal);
        cr_expect(eq(int, close_res, -EIO));
}

Test(wal, a_failed_directory_fsync_at_a_roll_stops_the_log_and_acknowledges_nothing_after)
{
        struct eng_wal *wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        unsigned i = 0, first_in_3 = 0;

        /* Segments 1 and 2 (the first reserve) prepared, directory synced. */
        TEST_RUN_UNTIL(loop, eng_wal_stats(wal)->segments >= 2);
        cr_assert(eq(u64, eng_wal_stats(wal)->segments, 2));
        /* From now every directory fsync fails: segment 3, created by the
         * roll into segment 2, never becomes durable by name. */
        eng_fault_fs_fail(fs, ENG_FS_FSYNC, EIO, -1);
        want_done = MAX_APPENDS + 1;
        while (eng_wal_segment(wal) < 3 || i < first_in_3 + 5) {
                cr_assert(lt(u32, i, 2000), "no roll after %u records", i);
                cr_assert(eq(int, append(wal, i), 0));
                if (!first_in_3 && eng_wal_segment(wal) == 3)
                        first_in_3 = i;
                i++;
        }
        cr_assert(eq(int, rx_loop_run_until(loop, &apps[i - 1].done), 0));
        for (unsigned k = first_in_3; k < i; k++)
                cr_assert(eq(int, apps[k].res, -EIO), "record %u in the fresh segment: %d", k, apps[k].res);
        cr_expect(eq(int, append(wal, i), -EIO), "the log stopped");
        close_wal(wal);
        cr_expect(eq(int, close_res, -EIO));
}

Test(wal, a_failed_open_of_the_directory_stops_the_log)
{
        struct eng_wal *wal;

        eng_fault_fs_fail(fs, ENG_FS_OPEN, EACCES, 1);  /* the directory is opened first */
        wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        want_done = 1;
        cr_assert(eq(int, append(wal, 0), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        cr_expect(eq(int, apps[0].res, -EACCES));
        close_wal(wal);
        cr_expect(eq(int, close_res, -EACCES));
}

Test(wal, a_log_closed_at_once_after_open_closes_cleanly)
{
        struct eng_wal *wal = open_wal(64 * 1024, ENG_WAL_SYNC_BATCH);
        char p[PATH_MAX + 32];

        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
        seg_path(p, sizeof(p), 1);
        cr_expect(eq(int, access(p, F_OK), 0), "the first segment was still prepared");
        cr_assert(eq(int, eng_fault_fs_power_cut(fs, false, 0), 0));
        cr_expect(eq(int, access(p, F_OK), 0), "and its name made durable");
}

/* eng_wal_append_record(durable): a periodic log writes and syncs it at
 * once, with what was buffered before it, instead of at the period's end;
 * a power cut right after its acknowledgement keeps both. */
Test(wal, a_durable_record_is_synced_at_once_in_periodic_mode)
{
        struct eng_wal *wal = open_periodic(60000 * UINT64_C(1000000));
        struct eng_wal_replay_opts o = { .dir = dir, .shard = WAL_SHARD };
        struct replayed x;
        uint8_t p[512];
        uint32_t len = payload_of(1, p);

        cr_assert(eq(int, append(wal, 0), 1));
        apps[1] = (struct app){ .w.done = app_done, .w.writers = 1 };
        want_done = 1;
        cr_assert(eq(int, eng_wal_append_record(wal, &apps[1].w, ENG_WAL_RECORD_PREPARE, SEQ_BASE + 1,
                                                p, len, true), 0));
        cr_expect(not(apps[1].done), "acknowledged before it was durable");
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        cr_expect(eq(int, apps[1].res, 0));
        cr_expect(ge(u64, eng_wal_stats(wal)->syncs, 1));
        /* Not durable: acknowledged at once, as any periodic append. */
        len = payload_of(2, p);
        cr_expect(eq(int, eng_wal_append_record(wal, NULL, ENG_WAL_RECORD_ABORT, SEQ_BASE + 2, p, len,
                                                false), 1));
        /* The log writes its marks itself; durable needs a write to ack. */
        cr_expect(eq(int, eng_wal_append_record(wal, &apps[3].w, ENG_WAL_RECORD_MARK, SEQ_BASE + 3,
                                                p, 0, false), -EINVAL));
        cr_expect(eq(int, eng_wal_append_record(wal, NULL, ENG_WAL_RECORD_COMMIT, SEQ_BASE + 3, p, len,
                                                true), -EINVAL));
        cr_expect(eq(int, eng_wal_append_record(wal, &apps[3].w, ENG_WAL_RECORD_TYPE_MAX,
                                                SEQ_BASE + 3, p, len, true), -EINVAL));
        cr_assert(eq(int, eng_fault_fs_power_cut(fs, false, 5), 0));
        close_wal(wal);
        cr_assert(eq(int, replay_fresh(&o, &x), 0));
        cr_expect(eq(u32, x.records, 2), "the durable record and the one before it, not the one after");
        cr_expect(x.seen[0]);
        cr_expect(x.seen[1]);
        cr_expect(not(x.seen[2]));
}

/* Batch mode's gathering (wal_gather.h) holds a flush for the writers the
 * last sync woke; here they never come back. Record 2 waits through record
 * 1's sync, so the flush after it wants two writers and gets one: the
 * gathering's timer must flush it (a rule that never let a short group go
 * would time this test out). Then a close with a record held acknowledges
 * it. (Whether a flush is held at all depends on how soon after its sync
 * the log looks; what the test checks is that every record is
 * acknowledged.) */
Test(wal, a_flush_held_for_writers_goes_by_its_timer_or_at_a_close)
{
        struct eng_wal *wal = open_wal(0, ENG_WAL_SYNC_BATCH);

        cr_assert(eq(int, append(wal, 0), 0));          /* alone, once the segment is ready */
        cr_assert(eq(int, rx_loop_run_until(loop, &apps[0].done), 0));
        cr_assert(eq(int, append(wal, 1), 0));          /* a group of one: flushed at once */
        cr_assert(eq(int, append(wal, 2), 0));          /* waits through its sync */
        cr_assert(eq(int, rx_loop_run_until(loop, &apps[1].done), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &apps[2].done), 0), "held for good");
        cr_expect(eq(int, apps[2].res, 0));
        cr_expect(le(u64, eng_wal_stats(wal)->gathers, 1));

        cr_assert(eq(int, append(wal, 3), 0));
        cr_assert(eq(int, append(wal, 4), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &apps[3].done), 0));
        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
        cr_assert(apps[4].done, "the close left a held record unacknowledged");
        cr_expect(eq(int, apps[4].res, 0));
}
