/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Batch mode zeroes new reserve segments (engine/wal.h): the file a batch
 * log rolls into has no unwritten extents left (FIEMAP), so its syncs need
 * no extent conversion; the log's first segment and periodic logs are not
 * zeroed; a failed zero write stops the log like any failed write.
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

/* Appends one record, waits for it and for the reserve to be prepared. */
static void first_record_and_reserve(struct eng_wal *wal, int expect)
{
        want_done = expect == 0 ? 1 : 0;
        cr_assert(eq(int, append(wal, 0), expect));
        if (expect == 0)
                cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        for (int i = 0; i < 2000 && eng_wal_stats(wal)->segments < 2; i++)
                run_for_ms(5);
        cr_assert(eq(u64, eng_wal_stats(wal)->segments, 2), "the reserve was never prepared");
}

Test(wal_zero, batch_mode_zeroes_the_reserve_but_not_the_first_segment)
{
        const uint64_t seg = 1u << 20;
        struct eng_wal *wal = open_wal_at(fs, dir, 5, seg, ENG_WAL_SYNC_BATCH);
        const struct eng_wal_stats *st = eng_wal_stats(wal);
        int first;

        first_record_and_reserve(wal, 0);
        cr_expect(eq(u64, st->zeroed_bytes, seg), "the whole reserve, once");
        cr_expect(ge(u64, st->written_bytes, seg), "zeros count as written bytes");
        first = unwritten_extents(5);
        if (first < 0)
                cr_skip_test("no FIEMAP on this file system");
        cr_expect(gt(int, first, 0), "the first segment is only fallocated");
        cr_expect(eq(int, unwritten_extents(6), 0), "the reserve has no unwritten extents");
        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
}

Test(wal_zero, periodic_mode_does_not_zero)
{
        struct eng_wal *wal = open_wal_at(fs, dir, 5, 1u << 20, ENG_WAL_SYNC_PERIODIC);

        first_record_and_reserve(wal, 1);
        cr_expect(eq(u64, eng_wal_stats(wal)->zeroed_bytes, 0));
        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
}

Test(wal_zero, records_in_a_zeroed_segment_replay)
{
        static bool seen[MAX_APPENDS];
        struct eng_wal *wal = open_wal(64u << 10, ENG_WAL_SYNC_BATCH);
        unsigned corrupt, segs;
        uint64_t zeroed;

        want_done = 2000;       /* ~8 segments of 64 KiB */
        for (unsigned i = 0; i < want_done; i++)
                cr_assert(eq(int, append(wal, i), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        for (unsigned i = 0; i < want_done; i++)
                cr_assert(eq(int, apps[i].res, 0));
        zeroed = eng_wal_stats(wal)->zeroed_bytes;
        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
        cr_expect(eq(u32, read_back(seen, &corrupt, &segs), want_done));
        cr_expect(eq(u32, corrupt, 0));
        cr_expect(gt(u32, segs, 4));
        cr_expect(ge(u64, zeroed, (segs - 1) * (uint64_t)(64u << 10)),
                  "every segment but the first was zeroed before it took records");
}

Test(wal_zero, a_failed_zero_write_stops_the_log)
{
        /* Big enough that zeroing the reserve outlasts the first sync. */
        const uint64_t seg = 64u << 20;
        struct eng_wal *wal = open_wal_at(fs, dir, 5, seg, ENG_WAL_SYNC_BATCH);

        want_done = 1;
        cr_assert(eq(int, append(wal, 0), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        cr_assert(eq(int, apps[0].res, 0));
        if (eng_wal_stats(wal)->zeroed_bytes >= seg)
                cr_skip_test("the reserve was zeroed before the fault could be set");
        /* No append is pending: the next write is the reserve's zeros. */
        eng_fault_fs_fail(fs, ENG_FS_WRITE, EIO, 1);
        for (int i = 0; i < 2000 && eng_fault_fs_stats(fs)->injected == 0; i++)
                run_for_ms(5);
        cr_assert(eq(u64, eng_fault_fs_stats(fs)->injected, 1));
        run_for_ms(5);  /* the failed write's completion runs from the loop */
        cr_expect(eq(int, append(wal, 2), -EIO), "the log stopped with the write's error");
        cr_expect(lt(u64, eng_wal_stats(wal)->zeroed_bytes, seg));
        close_wal(wal);
        cr_expect(eq(int, close_res, -EIO));
}
