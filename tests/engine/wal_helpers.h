/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log fixture shared by test_wal.c and test_wal_replay.c: a scratch
 * directory, a loop with a fault fs, the real writer with every batch
 * append tracked until it is acknowledged, and reading back through
 * eng_wal_replay with each record's payload, order and uniqueness checked.
 * Record i has seq SEQ_BASE + i and the payload payload_of(i). Also: a
 * timed wait, whole logs written in one call, the trim, and editing
 * segment files behind the log's back (damage, zeroed headers, removal).
 * The state is file-static: one fixture per test (Criterion forks per test).
 */
#ifndef SCREE_TESTS_ENGINE_WAL_HELPERS_H
#define SCREE_TESTS_ENGINE_WAL_HELPERS_H

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/compiler.h"
#include "engine/fault_fs.h"
#include "engine/wal.h"
#include "engine/wal_format.h"
#include "engine/wal_replay.h"
#include "tests/engine/helpers.h"
#include "tests/tmpdir.h"

#define MAX_APPENDS 8000
#define SEQ_BASE 1000
#define WAL_SHARD 1

static char dir[PATH_MAX];
static struct rx_loop *loop;
static struct eng_fs *fs;

struct app {
        struct eng_wal_write w;
        int res;
        bool done;
};

static struct app apps[MAX_APPENDS];
static unsigned n_done, want_done;
static bool all_done, closed;
static int close_res;

static inline void wal_fixture_setup(const char *tag)
{
        tmpdir_make(dir, sizeof(dir), tag);
        engine_test_loop_fs(&loop, &fs);
}

static inline void wal_fixture_teardown(void)
{
        eng_fs_free(fs);
        rx_loop_free(loop);
        tmpdir_remove(dir);
}

static inline void app_done(struct eng_wal_write *w, int res)
{
        struct app *a = container_of(w, struct app, w);

        cr_assert(not(a->done), "acknowledged twice");
        a->res = res;
        a->done = true;
        if (++n_done == want_done)
                all_done = true;
}

static inline void wal_closed(void *arg, int res)
{
        (void)arg;
        close_res = res;
        closed = true;
}

/* Payload of record i: its number and a length that varies. */
static inline uint32_t payload_of(unsigned i, uint8_t *p)
{
        uint32_t len = 8 + (i * 37u) % 400u;

        memset(p, (int)(i & 0xff), len);
        memcpy(p, &i, sizeof(i));
        return len;
}

/* Appends record i, one writer waiting for it: 0 (batch: apps[i]
 * completes later), 1 (periodic), <0. */
static inline int append(struct eng_wal *wal, unsigned i)
{
        uint8_t p[512];
        uint32_t len = payload_of(i, p);

        apps[i] = (struct app){ .w.done = app_done, .w.writers = 1 };
        return eng_wal_append(wal, &apps[i].w, SEQ_BASE + i, p, len);
}

static inline struct eng_wal *open_wal_at(struct eng_fs *f, const char *d, uint64_t first_segment,
                                          uint64_t segment_bytes, enum eng_wal_sync sync)
{
        struct eng_wal_opts o = { .dir = d, .shard = WAL_SHARD, .first_segment = first_segment,
                                  .segment_bytes = segment_bytes, .sync = sync,
                                  .period_ns = 2 * 1000 * 1000 };
        struct eng_wal *wal;

        cr_assert(eq(int, eng_wal_open(f, &o, &wal), 0));
        return wal;
}

static inline struct eng_wal *open_wal(uint64_t segment_bytes, enum eng_wal_sync sync)
{
        return open_wal_at(fs, dir, 1, segment_bytes, sync);
}

static inline void close_wal(struct eng_wal *wal)
{
        closed = false;
        cr_assert(eq(int, eng_wal_close(wal, wal_closed, NULL), 0));
        cr_assert(not(closed), "close completed inside the call");
        cr_assert(eq(int, rx_loop_run_until(loop, &closed), 0));
}

/* ---- reading back ---- */

struct replayed {
        struct eng_wal_replay_result res;
        int err;
        bool done;
        unsigned records;
        uint64_t last_seq;
        bool seen[MAX_APPENDS];
        uint64_t segment_of[MAX_APPENDS], offset_of[MAX_APPENDS];
        int fail_err;                   /* rec_fn returns this ... */
        unsigned fail_after;            /* ... after this many records */
};

static inline int replayed_record(void *arg, uint64_t segment, const struct eng_wal_record *rec)
{
        struct replayed *x = arg;
        uint8_t want[512];
        unsigned i = (unsigned)(rec->seq - SEQ_BASE);

        if (x->fail_err && x->records == x->fail_after)
                return x->fail_err;
        cr_assert(ge(u64, rec->seq, SEQ_BASE));
        cr_assert(lt(u32, i, MAX_APPENDS));
        cr_assert(gt(u64, rec->seq, x->last_seq), "record %u out of order", i);
        cr_assert(not(x->seen[i]), "record %u replayed twice", i);
        cr_assert(eq(u32, rec->len, payload_of(i, want)), "record %u: wrong length", i);
        cr_assert(eq(int, memcmp(rec->payload, want, rec->len), 0), "record %u garbled", i);
        x->seen[i] = true;
        x->segment_of[i] = segment;
        x->offset_of[i] = rec->offset;
        x->records++;
        x->last_seq = rec->seq;
        return 0;
}

static inline void replayed_done(void *arg, int res, const struct eng_wal_replay_result *r)
{
        struct replayed *x = arg;

        cr_assert(not(x->done), "done ran twice");
        x->err = res;
        x->res = *r;
        x->done = true;
}

/* Replays through f into x (reset first, keeping fail_*); returns done's res. */
static inline int replay_with(struct eng_fs *f, const struct eng_wal_replay_opts *o, struct replayed *x)
{
        int fail_err = x->fail_err;
        unsigned fail_after = x->fail_after;

        memset(x, 0, sizeof(*x));
        x->fail_err = fail_err;
        x->fail_after = fail_after;
        cr_assert(eq(int, eng_wal_replay(f, o, replayed_record, replayed_done, x), 0));
        cr_assert(not(x->done), "done ran inside the call");
        cr_assert(eq(int, rx_loop_run_until(loop, &x->done), 0));
        return x->err;
}

/* Replays with a fresh fs, as a restarted shard would (a fs that lost power
 * is dead). */
static inline int replay_fresh(const struct eng_wal_replay_opts *o, struct replayed *x)
{
        struct eng_fs *f = eng_fault_fs_new(loop);
        int r;

        cr_assert(not(eq(ptr, f, NULL)));
        r = replay_with(f, o, x);
        eng_fs_free(f);
        return r;
}

/*
 * Reads the log in dir back. Returns the number of records; seen[i] is set
 * for each record i found, *ret_corrupt is 1 if the replay found corruption,
 * *ret_segments the number of segments read.
 */
static inline unsigned read_back(bool *seen, unsigned *ret_corrupt, unsigned *ret_segments)
{
        static struct replayed x;
        struct eng_wal_replay_opts o = { .dir = dir, .shard = WAL_SHARD };
        int r = replay_fresh(&o, &x);

        cr_assert(r == 0 || r == -SCREE_ECORRUPT, "replay: %s", strerror(-r));
        for (unsigned i = 0; i < MAX_APPENDS; i++)
                seen[i] = seen[i] || x.seen[i];
        *ret_corrupt = r == -SCREE_ECORRUPT;
        *ret_segments = (unsigned)x.res.segments;
        return x.records;
}

/* Closes wal, expecting a clean close, and reads the log back, expecting
 * exactly n records and no corruption. Returns the segments read. */
static inline unsigned close_and_expect_records(struct eng_wal *wal, unsigned n)
{
        static bool seen[MAX_APPENDS];
        unsigned corrupt, segs;

        close_wal(wal);
        cr_expect(eq(int, close_res, 0));
        cr_expect(eq(u32, read_back(seen, &corrupt, &segs), n));
        cr_expect(eq(u32, corrupt, 0));
        return segs;
}

/* ---- driving the writer; editing segment files behind its back ---- */

#define SEG_BYTES (64u * 1024u)

static inline void run_for_ms(unsigned ms)
{
        engine_test_run_for_ms(loop, ms);
}

/*
 * Writes records [i0, i0 + n) to a log that starts at segment first, lets
 * the writer flush every `every` appends (batch: waits for that record's
 * acknowledgement; periodic: for the timer's next sync), and closes it
 * cleanly.
 * Returns the writer's stats.
 */
static inline struct eng_wal_stats write_log(uint64_t first, unsigned i0, unsigned n,
                                             enum eng_wal_sync sync, unsigned every)
{
        struct eng_wal *wal = open_wal_at(fs, dir, first, SEG_BYTES, sync);
        bool batch = sync == ENG_WAL_SYNC_BATCH;
        struct eng_wal_stats st;

        n_done = 0;
        all_done = false;
        want_done = batch ? n : UINT32_MAX;
        for (unsigned k = 0; k < n; k++) {
                cr_assert(eq(int, append(wal, i0 + k), batch ? 0 : 1));
                if (k % every != every - 1)
                        continue;
                if (batch) {
                        cr_assert(eq(int, rx_loop_run_until(loop, &apps[i0 + k].done), 0));
                } else {
                        uint64_t syncs = eng_wal_stats(wal)->syncs;

                        TEST_RUN_UNTIL(loop, eng_wal_stats(wal)->syncs > syncs);
                }
        }
        if (batch)
                cr_assert(eq(int, rx_loop_run_until(loop, &all_done), 0));
        st = *eng_wal_stats(wal);
        close_wal(wal);
        cr_assert(eq(int, close_res, 0));
        for (unsigned k = 0; batch && k < n; k++)
                cr_assert(eq(int, apps[i0 + k].res, 0));
        return st;
}

static bool trimmed;
static int trim_res;

static inline void trim_done(void *arg, int res)
{
        (void)arg;
        trim_res = res;
        trimmed = true;
}

static inline int trim(struct eng_fs *f, const struct eng_wal_replay_opts *o,
                       const struct eng_wal_replay_result *res)
{
        trimmed = false;
        cr_assert(eq(int, eng_wal_replay_trim(f, o, res, trim_done, NULL), 0));
        cr_assert(not(trimmed), "trim finished inside the call");
        cr_assert(eq(int, rx_loop_run_until(loop, &trimmed), 0));
        return trim_res;
}

/* ---- editing segment files behind the log's back ---- */

static inline void seg_path(char *p, size_t len, uint64_t id)
{
        snprintf(p, len, "%s/%016llx.log", dir, (unsigned long long)id);
}

static inline void poke(uint64_t id, uint64_t off, const void *bytes, size_t n)
{
        char p[PATH_MAX + 32];
        int fd;

        seg_path(p, sizeof(p), id);
        fd = open(p, O_WRONLY | O_CREAT, 0644);
        cr_assert(ge(int, fd, 0));
        cr_assert(eq(i64, (int64_t)pwrite(fd, bytes, n, (off_t)off), (int64_t)n));
        close(fd);
}

static inline void flip_byte(uint64_t id, uint64_t off)
{
        char p[PATH_MAX + 32];
        uint8_t b;
        int fd;

        seg_path(p, sizeof(p), id);
        fd = open(p, O_RDWR);
        cr_assert(ge(int, fd, 0));
        cr_assert(eq(i64, (int64_t)pread(fd, &b, 1, (off_t)off), 1));
        b ^= 0x55;
        cr_assert(eq(i64, (int64_t)pwrite(fd, &b, 1, (off_t)off), 1));
        close(fd);
}

static inline void zero_header(uint64_t id)
{
        static const uint8_t zeros[ENG_WAL_SEGMENT_HEADER_BYTES];

        poke(id, 0, zeros, sizeof(zeros));
}

/* Writes a valid, empty segment file (as a finished preparation leaves it). */
static inline void empty_segment(uint64_t id)
{
        static uint8_t block[SEG_BYTES];

        memset(block, 0, sizeof(block));
        eng_wal_segment_header_encode(block, WAL_SHARD, id);
        poke(id, 0, block, sizeof(block));
}

static inline void remove_segment(uint64_t id)
{
        char p[PATH_MAX + 32];

        seg_path(p, sizeof(p), id);
        cr_assert(eq(int, unlink(p), 0));
}

#endif
