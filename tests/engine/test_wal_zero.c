/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Batch mode zeroes its reserve segment (engine/wal.c, "zeroing the
 * reserve"): once the current segment is half full, the reserve is written
 * with zeros behind its header and has no unwritten extents left (FIEMAP),
 * so syncs into it need no extent conversion; a log that writes little,
 * the log's first segment and periodic logs write no zeros; rolls cut
 * zeroing short and records replay; a failed zero write stops the log like
 * any failed write.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/fault_fs.h"
#include "engine/wal.h"
#include "tests/engine/wal_helpers.h"

static void setup(void)
{
        wal_fixture_setup("wal_zero");
}

TestSuite(wal_zero, .init = setup, .fini = wal_fixture_teardown, .timeout = 60);

#define EXTENTS 64

/* How many of segment id's extents are unwritten (allocated, reading as
 * zeros); -1 if the file system cannot say (no FIEMAP). */
static int unwritten_extents(uint64_t id)
{
        char path[PATH_MAX + 32];
        struct fiemap *fm = calloc(1, sizeof(*fm) + EXTENTS * sizeof(struct fiemap_extent));
        int fd, n = 0;

        cr_assert_not_null(fm);
        snprintf(path, sizeof(path), "%s/%016llx.log", dir, (unsigned long long)id);
        fd = open(path, O_RDONLY);
        cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
        fm->fm_length = FIEMAP_MAX_OFFSET;
        fm->fm_flags = FIEMAP_FLAG_SYNC;
        fm->fm_extent_count = EXTENTS;
        if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) {
                n = -1;
        } else {
                cr_assert_gt(fm->fm_mapped_extents, 0, "segment %llu has no extents",
                             (unsigned long long)id);
                for (unsigned i = 0; i < fm->fm_mapped_extents; i++)
                        n += (fm->fm_extents[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN) != 0;
        }
        close(fd);
        free(fm);
        return n;
}

/* Appends record i with a 4000-byte payload: 0 (batch) or <0. */
static int append_big(struct eng_wal *wal, unsigned i)
{
        static uint8_t p[4000];

        memset(p, (int)(i & 0xff), sizeof(p));
        apps[i] = (struct app){ .w.done = app_done, .w.writers = 1 };
        return eng_wal_append(wal, &apps[i].w, SEQ_BASE + i, p, sizeof(p));
}

/* Appends n big records at once and waits for them. */
static void append_big_n(struct eng_wal *wal, unsigned from, unsigned n)
{
        n_done = 0;
        want_done = n;
        all_done = false;
        for (unsigned i = from; i < from + n; i++)
                cr_assert(eq(int, append_big(wal, i), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        for (unsigned i = from; i < from + n; i++)
                cr_assert(eq(int, apps[i].res, 0));
}

/* Runs the loop until the reserve is prepared. */
static void wait_reserve(struct eng_wal *wal)
{
        TEST_RUN_UNTIL(loop, eng_wal_stats(wal)->segments >= 2);
        cr_assert(eq(u64, eng_wal_stats(wal)->segments, 2), "the reserve was never prepared");
}

Test(wal_zero, the_reserve_is_zeroed_once_the_first_segment_is_half_full)
{
        const uint64_t seg = 1u << 20;
        struct eng_wal *wal = open_wal_at(fs, dir, 5, seg, ENG_WAL_SYNC_BATCH);
        const struct eng_wal_stats *st = eng_wal_stats(wal);
        int first;

        append_big_n(wal, 0, 100);      /* ~400 KiB: under half */
        wait_reserve(wal);
        run_for_ms(20);
        cr_expect(eq(u64, st->zeroed_bytes, 0), "no zeros while the log writes little");
        append_big_n(wal, 100, 60);     /* past half */
        TEST_RUN_UNTIL(loop, st->zeroed_bytes >= seg - ENG_WAL_SEGMENT_HEADER_BYTES);
        cr_expect(eq(u64, st->zeroed_bytes, seg - ENG_WAL_SEGMENT_HEADER_BYTES),
                  "the whole reserve behind its header, once");
        cr_expect(ge(u64, st->written_bytes, seg), "zeros count as written bytes");
        first = unwritten_extents(5);
        if (first < 0)
                cr_skip_test("no FIEMAP on this file system");
        cr_expect(gt(int, first, 0), "the first segment is only fallocated");
        cr_expect(eq(int, unwritten_extents(6), 0), "the reserve has no unwritten extents");
        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
}

Test(wal_zero, a_log_that_writes_little_writes_no_zeros_and_replays)
{
        struct eng_wal *wal = open_wal(1u << 20, ENG_WAL_SYNC_BATCH);

        want_done = 10;
        for (unsigned i = 0; i < want_done; i++)
                cr_assert(eq(int, append(wal, i), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        wait_reserve(wal);
        cr_expect(eq(u64, eng_wal_stats(wal)->zeroed_bytes, 0));
        close_and_expect_records(wal, want_done);
}

Test(wal_zero, periodic_mode_does_not_zero)
{
        struct eng_wal *wal = open_wal_at(fs, dir, 5, 1u << 20, ENG_WAL_SYNC_PERIODIC);

        for (unsigned i = 0; i < 160; i++)
                cr_assert(eq(int, append_big(wal, i), 1));
        wait_reserve(wal);
        cr_expect(eq(u64, eng_wal_stats(wal)->zeroed_bytes, 0));
        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
}

Test(wal_zero, records_in_zeroed_segments_replay)
{
        struct eng_wal *wal = open_wal(64u << 10, ENG_WAL_SYNC_BATCH);
        unsigned segs;
        uint64_t zeroed;

        want_done = 4000;       /* ~15 segments of 64 KiB, in waves of 50 */
        for (unsigned i = 0; i < want_done; i++) {
                cr_assert(eq(int, append(wal, i), 0));
                if (i % 50 == 49)
                        cr_assert(eq(int, rx_loop_run_until(loop, &apps[i].done), 0));
        }
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        for (unsigned i = 0; i < want_done; i++)
                cr_assert(eq(int, apps[i].res, 0));
        zeroed = eng_wal_stats(wal)->zeroed_bytes;
        segs = close_and_expect_records(wal, want_done);
        cr_expect(gt(u32, segs, 4));
        cr_expect(gt(u64, zeroed, 0));
        cr_expect(lt(u64, zeroed, (uint64_t)segs * (64u << 10)));
}

Test(wal_zero, a_failed_zero_write_stops_the_log)
{
        const uint64_t seg = 4u << 20;
        struct eng_wal *wal = open_wal_at(fs, dir, 5, seg, ENG_WAL_SYNC_BATCH);
        unsigned i = 0;

        /* One at a time: once zeroing runs, no log write is pending. */
        while (i < 1000 && eng_wal_stats(wal)->zeroed_bytes == 0)
                append_big_n(wal, i++, 1);
        cr_assert(gt(u64, eng_wal_stats(wal)->zeroed_bytes, 0), "zeroing never started");
        if (eng_wal_stats(wal)->zeroed_bytes >= seg - ENG_WAL_SEGMENT_HEADER_BYTES)
                cr_skip_test("the reserve was zeroed before the fault could be set");
        /* The next write is one of the reserve's chunks of zeros. */
        eng_fault_fs_fail(fs, ENG_FS_WRITE, EIO, 1);
        TEST_RUN_UNTIL(loop, eng_fault_fs_stats(fs)->injected > 0);
        cr_assert(eq(u64, eng_fault_fs_stats(fs)->injected, 1));
        /* The failed write's completion is a task the fault layer posted:
         * it runs in the loop's next iteration, which this includes. */
        run_for_ms(5);
        cr_expect(eq(int, append_big(wal, i), -EIO), "the log stopped with the write's error");
        cr_expect(lt(u64, eng_wal_stats(wal)->zeroed_bytes, seg));
        close_wal(wal);
        cr_expect(eq(int, close_res, -EIO));
}
