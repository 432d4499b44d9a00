/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log segment recycling (eng_wal_recycle, docs/format/wal.md
 * "Recycled segments"): a log that hands its old segments back, as the
 * shard does once flushes move the log cut, reuses their files (stale
 * records of the old id in them) and still replays exactly: after a clean
 * close, with old records longer than the new ones, with a last record
 * ending on a block boundary at a roll, after a rename that failed (the
 * header written under the old name), and after power cuts at random
 * moments, torn or not -- then restarted and cut again. The number of
 * .log files stays bounded.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/fault_fs.h"
#include "engine/wal.h"
#include "engine/wal_format.h"
#include "engine/wal_replay.h"
#include "tests/engine/wal_helpers.h"

static void setup(void)
{
        wal_fixture_setup("wal_recycle");
}

TestSuite(wal_recycle, .init = setup, .fini = wal_fixture_teardown, .timeout = 120);

static uint64_t oldest, cut;    /* segment files below cut are no longer needed */
static uint64_t floor_seg;      /* the first segment without old-life records */

/* Where a replay starts: the cut, but past the old life's records. */
static uint64_t from(void)
{
        return cut > floor_seg ? cut : floor_seg;
}

/* .log files in dir; with below, only those with an id below it. */
static unsigned count_logs(uint64_t below)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        unsigned n = 0;

        cr_assert(not(eq(ptr, d, NULL)));
        while ((e = readdir(d))) {
                unsigned long long id;
                char ext[8];

                if (strlen(e->d_name) == 20 && sscanf(e->d_name, "%16llx.%3s", &id, ext) == 2 &&
                    strcmp(ext, "log") == 0 && (!below || id < below))
                        n++;
        }
        closedir(d);
        return n;
}

/* What shard start-up does with segment files below the manifest's cut. */
static void remove_below(uint64_t below)
{
        char p[PATH_MAX + 32];

        for (uint64_t id = 1; id < below; id++) {
                seg_path(p, sizeof(p), id);
                unlink(p);
        }
}

/* Moves the cut to the segment before the current one, handing what falls
 * below back to the log (or deleting it, as the shard does), and checks
 * that the directory stays bounded. */
static void advance_cut(struct eng_wal *wal)
{
        uint64_t cur = eng_wal_segment(wal);
        char p[PATH_MAX + 32];

        if (cur > cut + 1)
                cut = cur - 1;
        for (; oldest < cut; oldest++) {
                if (eng_wal_recycle(wal, oldest))
                        continue;
                seg_path(p, sizeof(p), oldest);
                cr_assert(unlink(p) == 0 || errno == ENOENT);
        }
        cr_assert(le(u32, count_logs(0), (unsigned)(cur + 1 - cut + 1) + ENG_WAL_RECYCLE_MAX),
                  "cur %llu cut %llu", (unsigned long long)cur, (unsigned long long)cut);
}

/* Fills `segments` fresh segments exactly with big records whose seqs are
 * below SEQ_BASE (an old life, never replayed: replays start at from()),
 * recycling as they fill. */
#define OLD_PER_SEGMENT 20u
static void old_life(struct eng_wal *wal, unsigned segments)
{
        static uint8_t big[(SEG_BYTES - ENG_WAL_SEGMENT_HEADER_BYTES) / OLD_PER_SEGMENT -
                          ENG_WAL_RECORD_HEADER_BYTES];
        uint64_t seq = 1;

        memset(big, 0x5a, sizeof(big));
        n_done = 0;
        all_done = false;
        want_done = UINT32_MAX;
        floor_seg = eng_wal_segment(wal) + segments;
        for (unsigned k = 0; k < segments * OLD_PER_SEGMENT; k++) {
                cr_assert(lt(u64, seq, SEQ_BASE));
                apps[0] = (struct app){ .w.done = app_done, .w.writers = 1 };
                cr_assert(eq(int, eng_wal_append(wal, &apps[0].w, seq++, big, sizeof(big)), 0));
                cr_assert(eq(int, rx_loop_run_until(loop, &apps[0].done), 0));
                cr_assert(eq(int, apps[0].res, 0));
                advance_cut(wal);
        }
}

/* Checks a replay from the cut: exactly records j0..k-1, where j0 is the
 * first of [0, n) appended at or above the cut, and every acknowledged one
 * at or above it is there. Returns k. */
static unsigned expect_suffix(const struct replayed *x, unsigned n, const bool *acked)
{
        unsigned j0 = 0, k;

        while (j0 < n && apps[j0].w.segment < from())
                j0++;
        for (unsigned i = 0; i < j0; i++)
                cr_assert(not(x->seen[i]), "record %u is below the cut", i);
        for (k = j0; k < n && x->seen[k]; k++)
                ;
        for (unsigned i = k; i < n; i++)
                cr_assert(not(x->seen[i]), "record %u replayed after a hole at %u", i, k);
        for (unsigned i = j0; i < n; i++)
                cr_assert(not(acked[i] && !x->seen[i]), "acknowledged record %u lost", i);
        cr_assert(eq(u32, x->records, k - j0));
        return k;
}

Test(wal_recycle, a_recycling_log_replays_exactly_after_a_clean_close)
{
        struct eng_wal *wal = open_wal_at(fs, dir, 1, SEG_BYTES, ENG_WAL_SYNC_BATCH);
        struct eng_wal_replay_opts o;
        static struct replayed x;
        static bool acked[MAX_APPENDS];
        unsigned n = 3000;

        oldest = cut = 1;
        old_life(wal, 6);               /* old records (3000 bytes) longer than the new ones */
        n_done = 0;
        all_done = false;
        want_done = n;
        for (unsigned i = 0; i < n; i++) {
                cr_assert(eq(int, append(wal, i), 0));
                if (i % 50 == 49) {
                        cr_assert(eq(int, rx_loop_run_until(loop, &apps[i].done), 0));
                        advance_cut(wal);
                }
        }
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        cr_expect(ge(u64, eng_wal_stats(wal)->recycled, 10));
        close_wal(wal);
        cr_assert(eq(int, close_res, 0));
        for (unsigned i = 0; i < n; i++)
                acked[i] = apps[i].res == 0;
        o = (struct eng_wal_replay_opts){ .dir = dir, .shard = WAL_SHARD, .from_segment = from() };
        cr_assert(eq(int, replay_fresh(&o, &x), 0));
        cr_expect(eq(u32, expect_suffix(&x, n, acked), n));
        cr_expect(not(x.res.torn));
        cr_expect(eq(u64, x.res.dropped_segments, 0));
        cr_expect(le(u32, count_logs(cut), ENG_WAL_RECYCLE_MAX));
}

struct raw {
        unsigned records;
        uint64_t seqs[8], segs[8];
        bool done;
        int res;
        struct eng_wal_replay_result r;
};

static int raw_record(void *arg, uint64_t segment, const struct eng_wal_record *rec)
{
        struct raw *x = arg;

        cr_assert(lt(u32, x->records, 8));
        x->segs[x->records] = segment;
        x->seqs[x->records++] = rec->seq;
        return 0;
}

static void raw_done(void *arg, int res, const struct eng_wal_replay_result *r)
{
        struct raw *x = arg;

        x->res = res;
        x->r = *r;
        x->done = true;
}

static uint8_t byte_at(uint64_t id, uint64_t off)
{
        char p[PATH_MAX + 32];
        uint8_t b = 0;
        int fd;

        seg_path(p, sizeof(p), id);
        fd = open(p, O_RDONLY);
        cr_assert(ge(int, fd, 0));
        cr_assert(eq(i64, (int64_t)pread(fd, &b, 1, (off_t)off), 1));
        close(fd);
        return b;
}

/* Regression (recycling): a record ending exactly on a block boundary when
 * the log rolls was followed by stale bytes of the file's previous life; the
 * segment read as a torn tail in the middle of the log, and the next
 * segment's records as corruption. */
/* The segment's last record ends short_by bytes before 8192, then the log
 * rolls into a recycled file: the segment must read as cleanly ended. */
static void roll_after_a_record_ending_before(uint32_t short_by)
{
        struct eng_wal *wal = open_wal_at(fs, dir, 1, SEG_BYTES, ENG_WAL_SYNC_BATCH);
        struct eng_wal_replay_opts o;
        /* b fills a segment so that a (up to 4096 bytes with its header) does
         * not fit after it, and b does not fit after a. */
        static uint8_t a[4096 - ENG_WAL_RECORD_HEADER_BYTES], b[SEG_BYTES - 2 * 4096 - 16];
        uint32_t a_len = (uint32_t)sizeof(a) - short_by;
        struct raw x = { 0 };
        uint64_t s;

        oldest = cut = 1;
        old_life(wal, 6);
        /* Wait for the reserve to be a recycled file, then roll into it. */
        TEST_RUN_UNTIL(loop, eng_wal_stats(wal)->recycled > 0);
        b[0] = 0;
        apps[1] = (struct app){ .w.done = app_done, .w.writers = 1 };
        cr_assert(eq(int, eng_wal_append(wal, &apps[1].w, SEQ_BASE, b, sizeof(b)), 0));
        s = eng_wal_segment(wal) + 1;   /* the reserve, recycled: takes a and then rolls */
        cr_assert(eq(int, rx_loop_run_until(loop, &apps[1].done), 0));
        memset(a, 7, sizeof(a));
        apps[2] = (struct app){ .w.done = app_done, .w.writers = 1 };
        apps[3] = (struct app){ .w.done = app_done, .w.writers = 1 };
        /* b does not fit after it: a ends at 8192 - short_by, the segment's
         * last record. */
        cr_assert(eq(int, eng_wal_append(wal, &apps[2].w, SEQ_BASE + 1, a, a_len), 0));
        cr_assert(eq(u64, eng_wal_segment(wal), s));
        cr_assert(eq(int, eng_wal_append(wal, &apps[3].w, SEQ_BASE + 2, b, sizeof(b)), 0));
        cr_assert(eq(u64, eng_wal_segment(wal), s + 1));
        cr_assert(eq(int, rx_loop_run_until(loop, &apps[3].done), 0));
        close_wal(wal);
        cr_assert(eq(int, close_res, 0));
        for (uint32_t i = 0; i < ENG_WAL_RECORD_HEADER_BYTES; i++)
                cr_assert(eq(u8, byte_at(s, 8192 - short_by + i), 0), "no zero header after the last record");
        cr_assert(not(eq(u8, byte_at(s, 8192 + 4096 + 100), 0)), "the file was not recycled");
        o = (struct eng_wal_replay_opts){ .dir = dir, .shard = WAL_SHARD, .from_segment = s };
        cr_assert(eq(int, eng_wal_replay(fs, &o, raw_record, raw_done, &x), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        cr_assert(eq(int, x.res, 0), "bad segment %llu offset %llu", (unsigned long long)x.r.bad_segment,
                  (unsigned long long)x.r.bad_offset);
        cr_expect(eq(u32, x.records, 2));
        cr_expect(eq(u64, x.seqs[0], SEQ_BASE + 1));
        cr_expect(eq(u64, x.seqs[1], SEQ_BASE + 2));
        cr_expect(eq(u64, x.segs[1], s + 1));
        cr_expect(not(x.r.torn));
}

Test(wal_recycle, a_record_ending_on_a_block_boundary_at_a_roll_is_followed_by_a_clean_end)
{
        roll_after_a_record_ending_before(0);
}

/* Regression (crash_kill9, seed 42): a record ending less than a record
 * header before a block boundary left only a few zero bytes of padding;
 * the rest of the zero header would have been the next block's stale bytes. */
Test(wal_recycle, a_record_ending_just_short_of_a_block_boundary_at_a_roll_is_followed_by_a_clean_end)
{
        roll_after_a_record_ending_before(8);
}

/* A rename that fails (or a cut before it) leaves the new header under the
 * old name, below the cut: the replay never sees it, start-up deletes it. */
Test(wal_recycle, a_failed_rename_leaves_a_log_that_replays_every_acknowledged_record)
{
        struct eng_wal *wal = open_wal_at(fs, dir, 1, SEG_BYTES, ENG_WAL_SYNC_BATCH);
        struct eng_wal_replay_opts o;
        static struct replayed x;
        static bool acked[MAX_APPENDS];
        unsigned n = 0;

        oldest = cut = 1;
        old_life(wal, 4);
        eng_fault_fs_fail(fs, ENG_FS_RENAME, EIO, -1);
        n_done = 0;
        all_done = false;
        want_done = UINT32_MAX;
        for (int r = 0; n < 2000 && r == 0; n++) {
                r = append(wal, n);
                if (r < 0)
                        break;
                rx_loop_run_until(loop, &apps[n].done);
                if (apps[n].res < 0) {
                        n++;
                        break;
                }
                advance_cut(wal);
        }
        cr_assert(lt(u32, n, 2000), "the log never renamed a recycled file");
        cr_assert(eq(int, eng_fault_fs_power_cut(fs, false, 1), 0));
        for (unsigned i = 0; i < n; i++)
                acked[i] = apps[i].done && apps[i].res == 0;
        close_wal(wal);
        cr_assert(ge(u32, count_logs(cut), 1), "no recycled file under its old name");
        o = (struct eng_wal_replay_opts){ .dir = dir, .shard = WAL_SHARD, .from_segment = from() };
        cr_assert(eq(int, replay_fresh(&o, &x), 0));
        expect_suffix(&x, n, acked);
        remove_below(cut);
        cr_assert(eq(int, replay_fresh(&o, &x), 0));
        expect_suffix(&x, n, acked);
}

struct cut_timer {
        struct rx_timer t;
        bool tear, done;
        uint64_t seed;
        int res;
};

static void cut_fire(struct rx_loop *l, struct rx_timer *t)
{
        struct cut_timer *c = container_of(t, struct cut_timer, t);

        (void)l;
        c->res = eng_fault_fs_power_cut(fs, c->tear, c->seed);
        c->done = true;
}

/* Cuts the power from a timer while the loop runs the log's I/O. */
static void run_cut(bool tear, uint64_t seed, unsigned us)
{
        struct cut_timer c = { .tear = tear, .seed = seed };

        rx_timer_init(&c.t, cut_fire, "test:cut");
        cr_assert(eq(int, rx_timer_arm_after(loop, &c.t, (uint64_t)us * 1000), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &c.done), 0));
        cr_assert(eq(int, c.res, 0), "seed %llu", (unsigned long long)seed);
}

/* Like test_wal_replay's life_until_cut, recycling as the shard does. */
static unsigned recycling_life(uint64_t first, unsigned i0, bool tear, uint64_t seed, bool *acked)
{
        struct eng_wal *wal = open_wal_at(fs, dir, first, SEG_BYTES, ENG_WAL_SYNC_BATCH);
        unsigned i = i0, waves;

        srand((unsigned)seed);
        if (i0 == 0)
                old_life(wal, 1 + (unsigned)rand() % 4);
        n_done = 0;
        all_done = false;
        want_done = UINT32_MAX;
        waves = 1 + (unsigned)rand() % 40;
        for (unsigned w = 0; w < waves && i < MAX_APPENDS - 100; w++) {
                unsigned burst = 1 + (unsigned)rand() % 80;

                for (unsigned k = 0; k < burst; k++, i++)
                        cr_assert(eq(int, append(wal, i), 0));
                if (rand() % 4 == 0)
                        continue;
                rx_loop_run_until(loop, &apps[i - 1 - (unsigned)rand() % burst].done);
                advance_cut(wal);
        }
        run_cut(tear, seed, (unsigned)rand() % 3000);
        for (unsigned k = i0; k < i; k++)
                acked[k] = apps[k].done && apps[k].res == 0;
        close_wal(wal);
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0));
        eng_fs_free(fs);
        fs = eng_fault_fs_new(loop);
        cr_assert(not(eq(ptr, fs, NULL)));
        return i;
}

/* Two lives per round: cut, replay from the cut, trim, restart after the
 * old log, cut again. Each replay is exactly a suffix-then-prefix. */
static void recycling_rounds(bool tear, uint64_t seed0)
{
        static struct replayed x;
        static bool acked[MAX_APPENDS];

        for (unsigned round = 0; round < 25; round++) {
                struct eng_wal_replay_opts o;
                unsigned n;

                tmpdir_remove(dir);
                cr_assert(eq(int, mkdir(dir, 0700), 0));
                memset(acked, 0, sizeof(acked));
                oldest = cut = 1;
                floor_seg = 0;
                n = recycling_life(1, 0, tear, seed0 + round, acked);
                remove_below(cut);
                o = (struct eng_wal_replay_opts){ .dir = dir, .shard = WAL_SHARD, .from_segment = from() };
                cr_assert(eq(int, replay_fresh(&o, &x), 0), "round %u: a power cut must not look like corruption",
                          round);
                n = expect_suffix(&x, n, acked);        /* the next life goes on after the log */
                cr_assert(eq(int, trim(fs, &o, &x.res), 0));
                oldest = cut;
                n = recycling_life(x.res.last_segment + 1, n, tear, seed0 + 1000 + round, acked);
                remove_below(cut);
                o.from_segment = from();
                cr_assert(eq(int, replay_fresh(&o, &x), 0), "round %u, second life", round);
                expect_suffix(&x, n, acked);
        }
}

Test(wal_recycle, power_cuts_at_random_moments_replay_every_acknowledged_record)
{
        recycling_rounds(false, 1);
}

Test(wal_recycle, torn_power_cuts_at_random_moments_replay_every_acknowledged_record)
{
        recycling_rounds(true, 5000);
}
