/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log replay and trim (engine/wal_replay.h) on logs written by the
 * real writer: batch and periodic logs over many small segments replay
 * exactly; from_segment skips older files; an empty directory; power cuts
 * at random moments, torn or not, replay every acknowledged record, a
 * prefix of the log and never corruption; a log restarted after each cut
 * (replay, trim, new log) replays as one; and the failures: a damaged
 * record mid-segment or at the end of a full segment (and salvage), a torn
 * tail followed by a new log without a trim, an unprepared last segment, a
 * bad header, a missing segment, another shard's or another id's header,
 * seqs going back across segments, rec_fn and fs errors, and a power cut
 * during the trim.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/time.h"
#include "engine/fault_fs.h"
#include "engine/wal.h"
#include "engine/wal_format.h"
#include "engine/wal_replay.h"
#include "tests/engine/wal_helpers.h"

static void setup(void)
{
        wal_fixture_setup("wal_replay");
}

TestSuite(wal_replay, .init = setup, .fini = wal_fixture_teardown, .timeout = 60);

static struct eng_wal_replay_opts opts(uint64_t from_segment, bool salvage)
{
        return (struct eng_wal_replay_opts){ .dir = dir, .shard = WAL_SHARD, .from_segment = from_segment,
                                             .salvage = salvage };
}

/* The last record of a replay: its number. */
static unsigned last_record(const struct replayed *x)
{
        return (unsigned)(x->last_seq - SEQ_BASE);
}

/* Where the last replayed record ends. */
static uint64_t end_of_last(const struct replayed *x)
{
        uint8_t p[512];
        unsigned i = last_record(x);

        return x->offset_of[i] + eng_wal_record_size(payload_of(i, p));
}

/* Puts garbage after the last record of replay x, as a torn write leaves it. */
static void garbage_after_last(const struct replayed *x)
{
        uint8_t garbage[100];

        memset(garbage, 0xab, sizeof(garbage));
        poke(x->segment_of[last_record(x)], end_of_last(x), garbage, sizeof(garbage));
}

/* A clean batch log of records 0..n-1 from segment 1, flushed every
 * `every` appends, and its replay into x. */
static void clean_log(unsigned n, unsigned every, struct replayed *x)
{
        struct eng_wal_replay_opts o = opts(1, false);

        write_log(1, 0, n, ENG_WAL_SYNC_BATCH, every);
        cr_assert(eq(int, replay_with(fs, &o, x), 0));
        cr_assert(eq(u32, x->records, n));
}

/* ---- clean logs ---- */

/* Writes n records from segment first and checks that the replay gives
 * exactly them back: each once, in order (replayed_record checks that),
 * the writer's byte count, every segment from first in the log and
 * nothing dropped. Returns the writer's stats. */
static struct eng_wal_stats expect_exact_replay(uint64_t first, unsigned n, enum eng_wal_sync sync,
                                                unsigned every)
{
        struct eng_wal_stats st = write_log(first, 0, n, sync, every);
        struct eng_wal_replay_opts o = opts(first, false);
        static struct replayed x;

        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, n));
        cr_expect(eq(u64, x.res.records, n));
        cr_expect(eq(u64, x.res.bytes, st.bytes));
        cr_expect(eq(u64, x.res.last_seq, SEQ_BASE + n - 1));
        cr_expect(ge(u64, x.res.segments, 4), "%u records in 64 KiB segments", n);
        cr_expect(eq(u64, x.res.segments, x.res.last_segment - first + 1), "a segment is not in the log");
        cr_expect(eq(u64, x.res.end_segment, x.res.last_segment));
        cr_expect(not(x.res.torn));
        cr_expect(eq(u64, x.res.dropped_segments, 0));
        cr_expect(eq(u64, x.res.salvaged, 0));
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0));
        return st;
}

Test(wal_replay, a_batch_log_replays_exactly_and_in_order)
{
        expect_exact_replay(1, 1500, ENG_WAL_SYNC_BATCH, 50);
}

Test(wal_replay, a_periodic_log_replays_exactly)
{
        struct eng_wal_stats st = expect_exact_replay(3, 1200, ENG_WAL_SYNC_PERIODIC, 100);

        cr_expect(gt(u64, st.syncs, 1), "the timer never flushed in between");
}

/* Regression: every read of a full chunk was taken for a short read at
 * the end of the file, so a segment holding more than one chunk (1 MiB)
 * of records was cut there and the log read as corrupt. */
Test(wal_replay, a_segment_longer_than_a_read_chunk_replays_whole)
{
        struct eng_wal *wal = open_wal_at(fs, dir, 1, 8u << 20, ENG_WAL_SYNC_PERIODIC);
        struct eng_wal_replay_opts o = opts(1, false);
        struct eng_wal_stats st;
        static struct replayed x;

        for (unsigned k = 0; k < MAX_APPENDS; k++)
                cr_assert(eq(int, append(wal, k), 1));
        st = *eng_wal_stats(wal);
        close_wal(wal);
        cr_assert(eq(int, close_res, 0));
        cr_assert(gt(u64, st.bytes, ENG_WAL_REPLAY_CHUNK_BYTES), "%llu bytes: too few to span chunks",
                  (unsigned long long)st.bytes);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, MAX_APPENDS));
        cr_expect(eq(u64, x.res.bytes, st.bytes));
        cr_expect(not(x.res.torn));
}

/* A record that takes a millisecond to apply, and a task that notes, each
 * time the loop runs it, how far the replay is. */
static const struct replayed *observer_of;
static unsigned seen_mid_segment, observed_n;
static bool observing;
static struct rx_task observer;

static int slow_record(void *arg, uint64_t segment, const struct eng_wal_record *rec)
{
        uint64_t until = time_now_ns() + NS_PER_MS;

        while (time_now_ns() < until)
                ;
        return replayed_record(arg, segment, rec);
}

static void observe(struct rx_loop *l, struct rx_task *task)
{
        const struct replayed *x = observer_of;

        if (x->done || !observing)
                return;
        if (x->records > 0 && x->records < observed_n)
                seen_mid_segment++;
        rx_loop_post(l, task);
}

/* The loop runs while a segment replays (in slices of a few ms), so a
 * loading shard still answers PING and INFO; before, a whole segment's
 * records (hundreds of ms for a 32 MiB one) ran in one go. */
Test(wal_replay, a_segment_replays_in_slices_the_loop_running_between)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed x;
        const unsigned n = 60;

        write_log(1, 0, n, ENG_WAL_SYNC_BATCH, 1);
        memset(&x, 0, sizeof(x));
        observer_of = &x;
        observing = true;
        seen_mid_segment = 0;
        observed_n = n;
        observer = (struct rx_task){ .fn = observe, .name = "test:observe" };
        rx_loop_post(loop, &observer);
        cr_assert(eq(int, eng_wal_replay(fs, &o, slow_record, replayed_done, &x), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        observing = false;
        cr_assert(eq(int, x.err, 0));
        cr_expect(eq(u32, x.records, n));
        cr_expect(eq(u64, x.segment_of[0], x.segment_of[n - 1]), "the records are in one segment");
        cr_expect(gt(u32, seen_mid_segment, 0), "the loop never ran while the segment replayed");
}

Test(wal_replay, from_segment_skips_older_segments)
{
        struct eng_wal_replay_opts from3 = opts(3, false);
        static struct replayed a, b;
        unsigned n3 = 0;

        clean_log(1000, 100, &a);
        cr_assert(eq(int, replay_with(fs, &from3, &b), 0));
        for (unsigned i = 0; i < 1000; i++) {
                cr_assert(eq(int, b.seen[i], a.segment_of[i] >= 3), "record %u in segment %llu", i,
                          (unsigned long long)a.segment_of[i]);
                n3 += a.segment_of[i] >= 3;
        }
        cr_expect(gt(u32, n3, 0));
        cr_expect(lt(u32, n3, 1000));
        cr_expect(eq(u64, b.res.segments, a.res.segments - 2));
        cr_expect(eq(u64, b.res.last_segment, a.res.last_segment));
        /* Segments 1 and 2 gone (flushed): no gap, the log starts at 3. */
        remove_segment(1);
        remove_segment(2);
        cr_assert(eq(int, replay_with(fs, &from3, &b), 0));
        cr_expect(eq(u32, b.records, n3));
}

Test(wal_replay, an_empty_directory_is_an_empty_log_and_other_names_are_ignored)
{
        const char *junk[] = { "notes.txt", "0000000000000001.log.tmp", "000000000000000g.log",
                               "00000000000001.log", "000000000000000A.log", "0000000000000000.log",
                               "00000000000000010.log" };
        struct eng_wal_replay_opts o = opts(5, false);
        static struct replayed x;

        for (size_t k = 0; k < sizeof(junk) / sizeof(junk[0]); k++) {
                char p[PATH_MAX + 64];
                FILE *f;

                snprintf(p, sizeof(p), "%s/%s", dir, junk[k]);
                f = fopen(p, "w");
                cr_assert(not(eq(ptr, f, NULL)));
                fputs("garbage that is not a segment", f);
                fclose(f);
        }
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u64, x.res.records, 0));
        cr_expect(eq(u64, x.res.segments, 0));
        cr_expect(eq(u64, x.res.last_segment, 4), "the new log starts at from_segment");
        cr_expect(eq(u64, x.res.end_segment, 4));
        cr_expect(not(x.res.torn));
        cr_expect(eq(int, trim(fs, &o, &x.res), 0));
        o.from_segment = 0;
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u64, x.res.last_segment, 0));
}

/* ---- power cuts ---- */

struct cut {
        struct rx_timer t;
        bool tear, done;
        uint64_t seed;
        int res;
};

static void cut_fire(struct rx_loop *l, struct rx_timer *t)
{
        struct cut *c = container_of(t, struct cut, t);

        (void)l;
        c->res = eng_fault_fs_power_cut(fs, c->tear, c->seed);
        c->done = true;
}

/* Cuts the power from a timer while the loop runs the log's I/O: at any
 * point, e.g. between a write's completion and its fdatasync. */
static void cut_after_us(unsigned us, bool tear, uint64_t seed)
{
        struct cut c = { .tear = tear, .seed = seed };

        rx_timer_init(&c.t, cut_fire, "test:cut");
        cr_assert(eq(int, rx_timer_arm_after(loop, &c.t, (uint64_t)us * 1000), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &c.done), 0));
        cr_assert(eq(int, c.res, 0), "seed %llu", (unsigned long long)seed);
}

/*
 * One life of a log: opens it at segment first, appends records from i0 in
 * random waves, letting I/O run in between or not, then cuts the power
 * (torn or not) at a random moment with writes and syncs in flight, closes
 * the dead log and starts a fresh fs, as a restart would. Sets acked[i] for each batch
 * append acknowledged before the cut. Returns the next record number.
 */
static unsigned life_until_cut(uint64_t first, unsigned i0, enum eng_wal_sync sync, bool tear, uint64_t seed,
                               bool *acked)
{
        struct eng_wal *wal = open_wal_at(fs, dir, first, SEG_BYTES, sync);
        bool batch = sync == ENG_WAL_SYNC_BATCH;
        unsigned i = i0, waves;

        srand((unsigned)seed);
        n_done = 0;
        all_done = false;
        want_done = UINT32_MAX;
        waves = 1 + (unsigned)rand() % 12;
        for (unsigned w = 0; w < waves && i < MAX_APPENDS - 100; w++) {
                unsigned burst = 1 + (unsigned)rand() % 80;

                for (unsigned k = 0; k < burst; k++, i++)
                        cr_assert(eq(int, append(wal, i), batch ? 0 : 1));
                if (rand() % 4 == 0)
                        continue;               /* no I/O until the next wave */
                if (batch)
                        rx_loop_run_until(loop, &apps[i - 1 - (unsigned)rand() % burst].done);
                else
                        run_for_ms(1 + (unsigned)rand() % 4);
        }
        cut_after_us((unsigned)rand() % 2000, tear, seed);
        for (unsigned k = i0; k < i; k++)
                acked[k] = batch && apps[k].done && apps[k].res == 0;  /* acks after the cut fail */
        close_wal(wal);                 /* everything in flight fails */
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0));
        eng_fs_free(fs);
        fs = eng_fault_fs_new(loop);
        cr_assert(not(eq(ptr, fs, NULL)));
        return i;
}

/* The records replayed are 0..k-1 for some k: returns k. */
static unsigned prefix_of(const struct replayed *x, unsigned n)
{
        unsigned k = 0;

        while (k < n && x->seen[k])
                k++;
        for (unsigned i = k; i < n; i++)
                cr_assert(not(x->seen[i]), "record %u replayed after a hole at %u", i, k);
        return k;
}

static void fresh_dir(void)
{
        tmpdir_remove(dir);
        cr_assert(eq(int, mkdir(dir, 0700), 0));
}

static void power_cut_rounds(enum eng_wal_sync sync, bool tear, uint64_t seed0)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed x;
        static bool acked[MAX_APPENDS];

        for (unsigned round = 0; round < 40; round++) {
                unsigned n, k;

                fresh_dir();
                memset(acked, 0, sizeof(acked));
                n = life_until_cut(1, 0, sync, tear, seed0 + round, acked);
                cr_assert(eq(int, replay_fresh(&o, &x), 0), "round %u: a power cut must not look like corruption",
                          round);
                k = prefix_of(&x, n);
                cr_expect(eq(u32, x.records, k));
                for (unsigned i = 0; i < n; i++)
                        cr_assert(not(acked[i] && !x.seen[i]), "round %u: acknowledged record %u lost", round, i);
                if (x.res.torn)
                        cr_expect(eq(u64, x.res.torn_segment, x.res.end_segment));
        }
}

Test(wal_replay, a_power_cut_replays_every_acknowledged_record_and_a_prefix)
{
        power_cut_rounds(ENG_WAL_SYNC_BATCH, false, 1);
}

Test(wal_replay, a_torn_power_cut_replays_every_acknowledged_record_and_a_prefix)
{
        power_cut_rounds(ENG_WAL_SYNC_BATCH, true, 1000);
}

Test(wal_replay, a_power_cut_in_periodic_mode_replays_a_prefix)
{
        power_cut_rounds(ENG_WAL_SYNC_PERIODIC, true, 2000);
}

/* garbage_after_last, and replays again: the same records, now ending in a
 * torn tail. */
static void tear_after_last(struct replayed *x)
{
        struct eng_wal_replay_opts o = opts(1, false);
        unsigned records = x->records;
        uint64_t seg = x->segment_of[last_record(x)], off = end_of_last(x);

        garbage_after_last(x);
        cr_assert(eq(int, replay_fresh(&o, x), 0));
        cr_assert(eq(u32, x->records, records));
        cr_assert(x->res.torn);
        cr_assert(eq(u64, x->res.torn_segment, seg));
        cr_assert(eq(u64, x->res.torn_offset, off));
}

/* Replay, trim, new log at last_segment + 1, cut again: the replays read
 * the lives as one log; a record once replayed stays, one once dropped
 * never comes back. */
Test(wal_replay, a_log_restarted_after_each_power_cut_replays_as_one)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed x;
        static bool acked[MAX_APPENDS], kept[MAX_APPENDS];
        uint64_t first = 1;
        unsigned n = 0, lives = 16;

        for (unsigned life = 0; life < lives; life++) {
                unsigned i0 = n;

                n = life_until_cut(first, i0, life % 4 == 3 ? ENG_WAL_SYNC_PERIODIC : ENG_WAL_SYNC_BATCH,
                                   life % 2 == 1, 500 + life, acked);
                cr_assert(eq(int, replay_fresh(&o, &x), 0), "life %u", life);
                for (unsigned i = 0; i < n; i++) {
                        cr_assert(not(acked[i] && !x.seen[i]), "life %u: acknowledged record %u lost", life, i);
                        if (i < i0)
                                cr_assert(eq(int, x.seen[i], kept[i]), "life %u: record %u of an earlier life %s",
                                          life, i, kept[i] ? "lost" : "came back");
                }
                if (life % 3 == 2 && !x.res.torn && x.records)
                        tear_after_last(&x);   /* torn tails are rare in random cuts */
                memcpy(kept, x.seen, sizeof(kept));
                cr_assert(eq(int, trim(fs, &o, &x.res), 0));
                first = x.res.last_segment + 1;
        }
        cr_assert(lt(u32, n + 200, MAX_APPENDS));
        write_log(first, n, 200, ENG_WAL_SYNC_BATCH, 20);
        cr_assert(eq(int, replay_fresh(&o, &x), 0));
        for (unsigned i = 0; i < n + 200; i++)
                cr_assert(eq(int, x.seen[i], i >= n || kept[i]), "record %u", i);
        cr_expect(not(x.res.torn));
        cr_expect(eq(u64, x.res.dropped_segments, 0));
}

/* ---- torn tails, unprepared segments and the trim ---- */

/* A clean log of 300 records with garbage after its last record, as a torn
 * write leaves it. Returns the replay from before the damage. */
static void log_with_torn_tail(struct replayed *before)
{
        clean_log(300, 10, before);
        garbage_after_last(before);
}

Test(wal_replay, a_torn_tail_ends_the_log_and_the_trim_cuts_it)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed before, x;
        uint64_t torn_seg;

        log_with_torn_tail(&before);
        torn_seg = before.segment_of[last_record(&before)];
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 300));
        cr_expect(x.res.torn);
        cr_expect(eq(u64, x.res.torn_segment, torn_seg));
        cr_expect(eq(u64, x.res.torn_offset, end_of_last(&before)));
        cr_expect(eq(u64, x.res.end_segment, torn_seg));
        cr_expect(eq(u64, x.res.dropped_segments, x.res.last_segment - torn_seg), "the empty reserve");
        cr_assert(eq(int, trim(fs, &o, &x.res), 0));
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(not(x.res.torn));
        cr_expect(eq(u64, x.res.dropped_segments, 0));
        cr_expect(eq(u64, x.res.end_segment, x.res.last_segment));
        cr_expect(eq(u32, x.records, 300));
        write_log(x.res.last_segment + 1, 300, 100, ENG_WAL_SYNC_BATCH, 10);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 400));
}

/* A torn write whose first block went back to zeros but whose later block
 * survived: the records stop at zeros, yet the log ends there, and the trim
 * removes the survivor so that no later salvage can bring it back. (The
 * log was closed cleanly, so the zeros come after its sync mark, which
 * the cut keeps.) */
Test(wal_replay, surviving_blocks_of_a_torn_write_after_zeros_end_the_log)
{
        struct eng_wal_replay_opts o = opts(1, false), salvage = opts(1, true);
        static struct replayed before, x;
        uint8_t rec[512 + ENG_WAL_RECORD_HEADER_BYTES], p[512];
        uint64_t seg, end, at;
        size_t n;

        clean_log(300, 10, &before);
        seg = before.segment_of[299];
        end = end_of_last(&before);
        at = (end / 4096 + 1) * 4096;
        n = eng_wal_record_encode(rec, seg, ENG_WAL_RECORD_BATCH, SEQ_BASE + 300, end, p, payload_of(300, p));
        poke(seg, at, rec, n);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 300));
        cr_expect(x.res.torn);
        cr_expect(eq(u64, x.res.torn_segment, seg));
        cr_expect(eq(u64, x.res.torn_offset, end + ENG_WAL_RECORD_HEADER_BYTES));
        cr_assert(eq(int, trim(fs, &o, &x.res), 0));
        cr_assert(eq(int, replay_with(fs, &salvage, &x), 0));
        cr_expect(eq(u32, x.records, 300), "the survivor came back");
        cr_expect(not(x.res.torn));
}

Test(wal_replay, a_new_log_after_an_untrimmed_torn_tail_is_corruption)
{
        struct eng_wal_replay_opts o = opts(1, false), salvage = opts(1, true);
        static struct replayed before, x;

        log_with_torn_tail(&before);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        write_log(x.res.last_segment + 1, 300, 100, ENG_WAL_SYNC_BATCH, 10);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, before.segment_of[last_record(&before)]));
        cr_expect(eq(u64, x.res.bad_offset, end_of_last(&before)));
        cr_assert(eq(int, replay_with(fs, &salvage, &x), 0));
        cr_expect(eq(u32, x.records, 400));
        cr_expect(eq(u64, x.res.salvaged, 1));
}

Test(wal_replay, an_unprepared_last_segment_is_not_part_of_the_log)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed x;
        char p[PATH_MAX + 32];
        uint64_t last;

        clean_log(300, 10, &x);
        last = x.res.last_segment;              /* the empty reserve */
        zero_header(last);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 300));
        cr_expect(eq(u64, x.res.dropped_segments, 1));
        cr_expect(eq(u64, x.res.end_segment, last - 1));
        cr_expect(eq(u64, x.res.last_segment, last));
        cr_expect(not(x.res.torn));
        /* Cut before its fallocate; and a later reserve whose preparation
         * finished first. */
        seg_path(p, sizeof(p), last);
        cr_assert(eq(int, truncate(p, 0), 0));
        empty_segment(last + 1);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 300));
        cr_expect(eq(u64, x.res.dropped_segments, 2));
        cr_expect(eq(u64, x.res.end_segment, last - 1));
        cr_assert(eq(int, trim(fs, &o, &x.res), 0));
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u64, x.res.dropped_segments, 0));
        cr_expect(eq(u64, x.res.end_segment, last + 1));
        write_log(last + 2, 300, 50, ENG_WAL_SYNC_BATCH, 10);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 350));
}

Test(wal_replay, a_power_cut_during_the_trim_leaves_a_log_that_replays_the_same)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed before, x;

        log_with_torn_tail(&before);
        zero_header(before.segment_of[last_record(&before)] + 1);       /* and an unprepared reserve */
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_assert(x.res.torn);
        cr_assert(eq(u64, x.res.dropped_segments, 1));
        eng_fault_fs_fail(fs, ENG_FS_FDATASYNC, EIO, -1);
        cr_expect(eq(int, trim(fs, &o, &x.res), -EIO));
        cr_assert(eq(int, eng_fault_fs_power_cut(fs, true, 77), 0));
        cr_assert(eq(int, replay_fresh(&o, &x), 0));
        cr_expect(eq(u32, x.records, 300));
        cr_expect(eq(u64, x.res.last_seq, before.res.last_seq));
        eng_fs_free(fs);
        fs = eng_fault_fs_new(loop);
        cr_assert(eq(int, trim(fs, &o, &x.res), 0));
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 300));
        cr_expect(not(x.res.torn));
        cr_expect(eq(u64, x.res.dropped_segments, 0));
}

/* ---- damage ---- */

/* 600 records over several segments, flushed four at a time so that later
 * records prove earlier ones durable. Returns the replay of the intact log. */
static void synced_log(struct replayed *x)
{
        clean_log(600, 4, x);
        cr_assert(ge(u64, x->res.segments, 3));
}

/* The first or last record of segment seg in replay x. */
static unsigned record_in(const struct replayed *x, uint64_t seg, bool last)
{
        unsigned found = MAX_APPENDS;

        for (unsigned i = 0; i < 600; i++)
                if (x->segment_of[i] == seg && (found == MAX_APPENDS || last))
                        found = i;
        cr_assert(lt(u32, found, MAX_APPENDS));
        return found;
}

static void expect_all_but(const struct replayed *x, unsigned skipped)
{
        cr_expect(eq(u32, x->records, 599));
        for (unsigned i = 0; i < 600; i++)
                cr_assert(eq(int, x->seen[i], i != skipped), "record %u", i);
}

Test(wal_replay, a_damaged_record_mid_log_is_corruption_and_salvage_replays_the_rest)
{
        struct eng_wal_replay_opts o = opts(1, false), salvage = opts(1, true);
        static struct replayed intact, x;
        unsigned k;

        synced_log(&intact);
        k = (record_in(&intact, 2, false) + record_in(&intact, 2, true)) / 2;
        flip_byte(2, intact.offset_of[k] + ENG_WAL_RECORD_HEADER_BYTES);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, 2));
        cr_expect(eq(u64, x.res.bad_offset, intact.offset_of[k]));
        cr_expect(eq(u32, x.records, k), "the records before it were replayed");
        cr_assert(eq(int, replay_with(fs, &salvage, &x), 0));
        expect_all_but(&x, k);
        cr_expect(eq(u64, x.res.salvaged, 1));
        cr_expect(not(x.res.torn));
}

/* Damage in the last record of a full segment reads like a torn tail, but
 * the next segment was only written once all of this one was durable. */
Test(wal_replay, a_damaged_last_record_of_a_full_segment_is_corruption)
{
        struct eng_wal_replay_opts o = opts(1, false), salvage = opts(1, true);
        static struct replayed intact, x;
        unsigned k;

        synced_log(&intact);
        k = record_in(&intact, 2, true);
        flip_byte(2, intact.offset_of[k] + ENG_WAL_RECORD_HEADER_BYTES);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, 2));
        cr_expect(eq(u64, x.res.bad_offset, intact.offset_of[k]));
        cr_assert(eq(int, replay_with(fs, &salvage, &x), 0));
        expect_all_but(&x, k);
        cr_expect(eq(u64, x.res.salvaged, 1));
}

/* Regression (issue 23): bit rot in the last record of the whole log,
 * synced and acknowledged, was dropped as a torn tail with a warning, and
 * acknowledged writes disappeared. The writer's sync mark behind the last
 * record now says it was durable: start-up refuses it, salvage skips it. */
Test(wal_replay, a_damaged_last_record_of_the_log_is_corruption_not_a_torn_tail)
{
        struct eng_wal_replay_opts o = opts(1, false), salvage = opts(1, true);
        static struct replayed intact, x;
        unsigned k;

        synced_log(&intact);
        k = 599;
        flip_byte(intact.segment_of[k], intact.offset_of[k] + ENG_WAL_RECORD_HEADER_BYTES + 3);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, intact.segment_of[k]));
        cr_expect(eq(u64, x.res.bad_offset, intact.offset_of[k]));
        cr_expect(eq(u32, x.records, k), "the records before it were replayed");
        cr_assert(eq(int, replay_with(fs, &salvage, &x), 0));
        expect_all_but(&x, k);
        cr_expect(eq(u64, x.res.salvaged, 1));
        cr_expect(not(x.res.torn));
}

static unsigned n_skips;
static uint64_t skip_segment, skip_offset;

static void on_skip(void *arg, uint64_t segment, uint64_t offset)
{
        (void)arg;
        n_skips++;
        skip_segment = segment;
        skip_offset = offset;
}

/* The same after a crash (kill -9): no close, but the mark written once the
 * last group's sync completed vouches for it; salvage reports each place
 * it skips. */
Test(wal_replay, a_damaged_last_record_is_corruption_after_a_crash_too)
{
        struct eng_wal_replay_opts o = opts(1, false), salvage = opts(1, true);
        struct eng_wal *wal = open_wal(SEG_BYTES, ENG_WAL_SYNC_BATCH);
        static struct replayed x;
        uint64_t seg, off;

        n_done = 0;
        all_done = false;
        want_done = 50;
        for (unsigned i = 0; i < 50; i++)
                cr_assert(eq(int, append(wal, i), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        TEST_RUN_UNTIL(loop, eng_wal_stats(wal)->marks > 0);    /* once the log is idle */
        cr_assert(eq(u64, eng_wal_stats(wal)->marks, 1));
        /* What a crashed process leaves: read behind the live log's back. */
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_assert(eq(u32, x.records, 50));
        seg = x.segment_of[49];
        off = x.offset_of[49];
        flip_byte(seg, off + ENG_WAL_RECORD_HEADER_BYTES);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, seg));
        cr_expect(eq(u64, x.res.bad_offset, off));
        salvage.skip_fn = on_skip;
        cr_assert(eq(int, replay_with(fs, &salvage, &x), 0));
        cr_expect(eq(u32, x.records, 49));
        cr_expect(eq(u32, n_skips, 1));
        cr_expect(eq(u64, skip_segment, seg));
        cr_expect(eq(u64, skip_offset, off));
        close_wal(wal);
}

/* A genuine torn tail stays one: the next group, written over the mark and
 * torn by a power cut (its payload's second half never reached the disk),
 * is cut, and the replay succeeds without salvage. */
Test(wal_replay, a_torn_group_written_over_the_sync_mark_is_a_torn_tail)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed before, x;
        uint8_t rec[512 + ENG_WAL_RECORD_HEADER_BYTES], p[512];
        uint64_t seg, end;
        uint32_t len;
        size_t n;

        clean_log(300, 10, &before);
        seg = before.segment_of[299];
        end = end_of_last(&before);
        len = payload_of(300, p);
        n = eng_wal_record_encode(rec, seg, ENG_WAL_RECORD_BATCH, SEQ_BASE + 300, end, p, len);
        memset(rec + ENG_WAL_RECORD_HEADER_BYTES + len / 2, 0, n - ENG_WAL_RECORD_HEADER_BYTES - len / 2);
        poke(seg, end, rec, n);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 300));
        cr_expect(x.res.torn);
        cr_expect(eq(u64, x.res.torn_segment, seg));
        cr_expect(eq(u64, x.res.torn_offset, end));
}

Test(wal_replay, a_bad_header_is_corruption_unless_it_is_an_unfinished_preparation)
{
        struct eng_wal_replay_opts o = opts(1, false), salvage = opts(1, true);
        static struct replayed intact, x;
        const char bad[] = "scraaWAL";
        uint64_t last;

        synced_log(&intact);
        last = intact.res.last_segment;
        poke(2, 0, bad, 8);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, 2));
        cr_expect(eq(u64, x.res.bad_offset, 0));
        cr_expect(eq(u32, x.records, record_in(&intact, 2, false)), "segment 1 was replayed");
        cr_expect(eq(int, replay_with(fs, &salvage, &x), -SCREE_ECORRUPT), "salvage is for records");
        /* A zeroed header over records: they prove it was prepared. */
        zero_header(2);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, 2));
        empty_segment(2);
        /* Garbage in the last, empty segment's header is no unfinished
         * preparation either. */
        poke(last, 0, bad, 8);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, last));
}

Test(wal_replay, a_missing_segment_in_the_middle_is_corruption)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed intact, x;
        uint64_t last;

        synced_log(&intact);
        last = intact.res.last_segment;
        remove_segment(2);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, 2));
        remove_segment(1);
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT), "segment 1 is still needed");
        cr_expect(eq(u64, x.res.bad_segment, 1));
        cr_expect(eq(u32, x.records, 0));
        /* The missing id of a cut creation, with only an empty reserve after
         * it, just ends the log. */
        o.from_segment = 3;
        remove_segment(last);
        empty_segment(last + 1);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u64, x.res.end_segment, last - 1));
        cr_expect(eq(u64, x.res.last_segment, last + 1));
        cr_expect(eq(u64, x.res.dropped_segments, 1));
        cr_assert(eq(int, trim(fs, &o, &x.res), 0));
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u64, x.res.end_segment, last + 1), "the trim filled the gap");
}

Test(wal_replay, a_header_of_another_shard_or_id_is_corruption)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed intact, x;
        uint8_t block[ENG_WAL_SEGMENT_HEADER_BYTES];

        synced_log(&intact);
        o.shard = WAL_SHARD + 1;
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, 1));
        o.shard = WAL_SHARD;
        eng_wal_segment_header_encode(block, WAL_SHARD, 9);
        poke(2, 0, block, sizeof(block));
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, 2));
}

Test(wal_replay, seqs_going_back_across_segments_are_corruption)
{
        struct eng_wal_replay_opts o = opts(1, false), salvage = opts(1, true);
        static struct replayed x;
        uint64_t next;

        write_log(1, 100, 50, ENG_WAL_SYNC_BATCH, 10);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        next = x.res.last_segment + 1;
        write_log(next, 0, 50, ENG_WAL_SYNC_BATCH, 10);        /* seqs below the first log's */
        cr_assert(eq(int, replay_with(fs, &o, &x), -SCREE_ECORRUPT));
        cr_expect(eq(u64, x.res.bad_segment, next));
        cr_expect(eq(u64, x.res.bad_offset, ENG_WAL_SEGMENT_HEADER_BYTES));
        cr_assert(eq(int, replay_with(fs, &salvage, &x), 0));
        cr_expect(eq(u32, x.records, 50));
        cr_expect(eq(u64, x.res.last_seq, SEQ_BASE + 149));
        cr_expect(eq(u64, x.res.salvaged, 1));
}

/* ---- errors ---- */

Test(wal_replay, an_error_from_the_record_callback_stops_the_replay)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed x;

        write_log(1, 0, 500, ENG_WAL_SYNC_BATCH, 50);
        x.fail_err = -ENOSPC;
        x.fail_after = 123;
        cr_assert(eq(int, replay_with(fs, &o, &x), -ENOSPC));
        cr_expect(eq(u32, x.records, 123));
        cr_expect(eq(u64, x.res.records, 123));
        x.fail_err = 0;
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 500));
}

Test(wal_replay, fs_errors_fail_the_replay)
{
        struct eng_wal_replay_opts o = opts(1, false);
        static struct replayed x;

        write_log(1, 0, 500, ENG_WAL_SYNC_BATCH, 50);
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_expect(eq(int, replay_with(fs, &o, &x), -EIO));
        eng_fault_fs_fail(fs, ENG_FS_OPEN, EACCES, 1);
        cr_expect(eq(int, replay_with(fs, &o, &x), -EACCES));
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, -1);
        cr_expect(eq(int, replay_with(fs, &o, &x), -EIO));
        eng_fault_fs_fail(fs, ENG_FS_READ, 0, 0);
        cr_assert(eq(int, replay_with(fs, &o, &x), 0));
        cr_expect(eq(u32, x.records, 500));
        eng_fault_fs_fail(fs, ENG_FS_OPEN, EIO, 1);
        cr_expect(eq(int, trim(fs, &o, &x.res), 0), "nothing to trim: no I/O");
        x.res.torn = true;
        x.res.torn_segment = 1;
        x.res.torn_offset = ENG_WAL_SEGMENT_HEADER_BYTES;
        cr_expect(eq(int, trim(fs, &o, &x.res), -EIO));
}

Test(wal_replay, bad_arguments_are_refused_without_a_callback)
{
        struct eng_wal_replay_opts o = opts(1, false), none = { .dir = NULL };
        static struct replayed x;
        char missing[PATH_MAX + 16];

        cr_expect(eq(int, eng_wal_replay(fs, &none, replayed_record, replayed_done, &x), -EINVAL));
        cr_expect(eq(int, eng_wal_replay(fs, &o, NULL, replayed_done, &x), -EINVAL));
        cr_expect(eq(int, eng_wal_replay(fs, &o, replayed_record, NULL, &x), -EINVAL));
        cr_expect(eq(int, eng_wal_replay_trim(fs, &o, NULL, trim_done, NULL), -EINVAL));
        snprintf(missing, sizeof(missing), "%s/nope", dir);
        o.dir = missing;
        cr_expect(eq(int, eng_wal_replay(fs, &o, replayed_record, replayed_done, &x), -ENOENT));
        run_for_ms(5);
        cr_expect(not(x.done), "done ran after a refused replay");
}
