/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commit-log writer (engine/wal.h) on the fault-injecting file layer:
 * batch appends are acknowledged only once durable and share syncs (group
 * commit); records roll across segments and read back in order; a power cut
 * at a random moment, torn or not, keeps every acknowledged record and
 * leaves no corruption; a failed fdatasync stops the log with a clear error;
 * periodic mode acknowledges at once and syncs on its timer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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
#include "engine/fault_fs.h"
#include "engine/wal.h"
#include "engine/wal_format.h"
#include "tests/engine/helpers.h"
#include "tests/tmpdir.h"

#define MAX_APPENDS 4000

static char dir[PATH_MAX];
static struct rx_loop *loop;
static struct eng_fs *fs;

struct app {
        struct eng_wal_write w;
        int res;
        bool done;
};

static struct app apps[MAX_APPENDS];
static unsigned n_done;
static bool all_done, closed;
static int close_res;

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "wal");
        engine_test_loop_fs(&loop, &fs);
}

static void teardown(void)
{
        eng_fs_free(fs);
        rx_loop_free(loop);
        tmpdir_remove(dir);
}

TestSuite(wal, .init = setup, .fini = teardown, .timeout = 60);

static unsigned want_done;

static void app_done(struct eng_wal_write *w, int res)
{
        struct app *a = container_of(w, struct app, w);

        cr_assert(not(a->done), "acknowledged twice");
        a->res = res;
        a->done = true;
        if (++n_done == want_done)
                all_done = true;
}

static void wal_closed(void *arg, int res)
{
        (void)arg;
        close_res = res;
        closed = true;
}

/* Payload of record i: its number and a length that varies. */
static uint32_t payload_of(unsigned i, uint8_t *p)
{
        uint32_t len = 8 + (i * 37u) % 400u;

        memset(p, (int)(i & 0xff), len);
        memcpy(p, &i, sizeof(i));
        return len;
}

static int append(struct eng_wal *wal, unsigned i)
{
        uint8_t p[512];
        uint32_t len = payload_of(i, p);

        apps[i].w.done = app_done;
        return eng_wal_append(wal, &apps[i].w, 1000 + i, p, len);
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp((const char *)a, (const char *)b);
}

/*
 * Reads every segment in dir, in id order, checking each record's payload.
 * Returns the number of records read; *ret_corrupt counts -SCREE_ECORRUPT.
 * seen[i] is set for each record i found.
 */
static unsigned read_back(bool *seen, unsigned *ret_corrupt, unsigned *ret_segments)
{
        static char names[64][256];
        unsigned n = 0, records = 0;
        DIR *d = opendir(dir);
        struct dirent *e;

        *ret_corrupt = 0;
        while ((e = readdir(d)) != NULL)
                if (strstr(e->d_name, ".log") && n < 64)
                        snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
        closedir(d);
        qsort(names, n, sizeof(names[0]), cmp_names);
        for (unsigned k = 0; k < n; k++) {
                char p[PATH_MAX + 300];
                struct stat st;
                struct eng_wal_segment_info info;
                struct eng_wal_reader r;
                struct eng_wal_record rec;
                uint8_t *buf;
                int fd, rc;

                snprintf(p, sizeof(p), "%s/%.255s", dir, names[k]);
                fd = open(p, O_RDONLY);
                fstat(fd, &st);
                buf = malloc((size_t)st.st_size + 1);
                cr_assert(eq(i64, (int64_t)pread(fd, buf, (size_t)st.st_size, 0), (int64_t)st.st_size));
                close(fd);
                if (eng_wal_segment_header_decode(buf, (size_t)st.st_size, &info) < 0) {
                        free(buf);      /* a segment whose header never became durable */
                        continue;
                }
                eng_wal_reader_init(&r, buf, (size_t)st.st_size, info.segment);
                while ((rc = eng_wal_reader_next(&r, &rec)) == 1) {
                        uint8_t want[512];
                        unsigned i = (unsigned)(rec.seq - 1000);

                        cr_assert(lt(u32, i, MAX_APPENDS));
                        cr_assert(eq(u32, rec.len, payload_of(i, want)));
                        cr_assert(eq(int, memcmp(rec.payload, want, rec.len), 0), "record %u garbled", i);
                        seen[i] = true;
                        records++;
                }
                *ret_corrupt += rc == -SCREE_ECORRUPT;
                free(buf);
        }
        *ret_segments = n;
        return records;
}

static struct eng_wal *open_wal(uint64_t segment_bytes, enum eng_wal_sync sync)
{
        struct eng_wal_opts o = { .dir = dir, .shard = 1, .first_segment = 1,
                                  .segment_bytes = segment_bytes, .sync = sync };
        struct eng_wal *wal;

        cr_assert(eq(int, eng_wal_open(fs, &o, &wal), 0));
        return wal;
}

static void close_wal(struct eng_wal *wal)
{
        cr_assert(eq(int, eng_wal_close(wal, wal_closed, NULL), 0));
        cr_assert(not(closed), "close completed inside the call");
        cr_assert(eq(int, rx_loop_run_until(loop, &closed), 0));
}

Test(wal, batch_appends_are_acknowledged_once_durable_and_share_syncs)
{
        struct eng_wal *wal = open_wal(0, ENG_WAL_SYNC_BATCH);
        static bool seen[MAX_APPENDS];
        unsigned corrupt, segs;
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
        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
        cr_expect(eq(u32, read_back(seen, &corrupt, &segs), n));
        cr_expect(eq(u32, corrupt, 0));
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0), "a write overlapped an fdatasync");
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

static bool ticked;

static void tick(struct rx_loop *l, struct rx_timer *t)
{
        (void)l;
        (void)t;
        ticked = true;
}

Test(wal, periodic_mode_acknowledges_at_once_and_syncs_on_its_timer)
{
        struct eng_wal_opts o = { .dir = dir, .shard = 1, .first_segment = 7,
                                  .sync = ENG_WAL_SYNC_PERIODIC, .period_ns = 2 * 1000 * 1000 };
        static bool seen[MAX_APPENDS];
        struct rx_timer t;
        struct eng_wal *wal;
        unsigned corrupt, segs;

        cr_assert(eq(int, eng_wal_open(fs, &o, &wal), 0));
        for (unsigned i = 0; i < 100; i++)
                cr_assert(eq(int, append(wal, i), 1), "periodic appends are acknowledged at once");
        rx_timer_init(&t, tick, "test:wait");
        rx_timer_arm_after(loop, &t, 50 * 1000 * 1000);
        cr_assert(eq(int, rx_loop_run_until(loop, &ticked), 0));
        cr_expect(gt(u64, eng_wal_stats(wal)->syncs, 0), "the period timer never synced");
        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
        cr_expect(eq(u32, read_back(seen, &corrupt, &segs), 100));
        cr_expect(eq(u32, corrupt, 0));
}

Test(wal, bad_options_and_oversized_records_are_refused)
{
        struct eng_wal_opts o = { .dir = dir, .segment_bytes = 5000 };
        struct eng_wal *wal = NULL;
        static uint8_t big[70000];

        cr_expect(eq(int, eng_wal_open(fs, &o, &wal), -EINVAL));
        o.segment_bytes = 64 * 1024;
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
