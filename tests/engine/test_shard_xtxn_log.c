/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two-phase commit's records in the commit log (engine/shard_xtxn.h;
 * the protocol itself: test_shard_xtxn.c): a part in doubt pins the log's
 * segments through flushes and truncation, transaction ids stay unique
 * across restarts, the segment header's version, and damaged transaction
 * records -- a prepare naming another coordinator, a decision with a wrong
 * participant count -- are corruption.
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

TestSuite(shard_xtxn_log, .init = setup, .fini = teardown, .timeout = 60);

/* ---- the log keeps what is in doubt ---- */

static unsigned count_logs(int i)
{
        DIR *d = opendir(dirs[i]);
        struct dirent *de;
        unsigned n = 0;

        cr_assert(not(eq(ptr, d, NULL)));
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);

                n += len > 4 && strcmp(de->d_name + len - 4, ".log") == 0;
        }
        closedir(d);
        return n;
}

/* Writes about `bytes` of other rows to shard i. */
static void write_filler(int i, unsigned bytes, int round)
{
        static char val[2048];

        memset(val, 'x', sizeof(val) - 1);
        for (unsigned n = 0; n < 2 * bytes / sizeof(val); n++) {    /* half are ours */
                char k[32];

                snprintf(k, sizeof(k), "fill%d-%u", round, n);
                if (owns(i, k))
                        cr_assert(eq(int, write_sync(i, k, val), 0));
        }
}

Test(shard_xtxn_log, in_doubt_part_survives_flushes_and_log_truncation)
{
        struct part p[N];
        struct eng_xtxn_id ids[2];
        uint64_t txn;
        unsigned logs_before, logs_pinned;

        open_all();
        txn = prepare_both(p, "v");
        logs_before = count_logs(0);
        /* Many segments (256 KiB each) after the prepare, each flushed. */
        for (int round = 0; round < 6; round++) {
                write_filler(0, 512 << 10, round);
                cr_assert(eq(int, flush_sync(0), 0));
        }
        engine_test_run_for_ms(loop, 50);       /* truncation runs in the background */
        logs_pinned = count_logs(0);
        cr_expect(gt(u32, logs_pinned, logs_before + 4), "the prepare's segment and those after it stay");
        crash_all(51);
        cr_assert(eq(u32, in_doubt(0, ids, 2), 1));
        cr_expect(eq(u64, ids[0].txn, txn));
        /* More writes and flushes after the restart keep it too. */
        write_filler(0, 512 << 10, 9);
        cr_assert(eq(int, flush_sync(0), 0));
        reopen_all();
        cr_assert(eq(u32, in_doubt(0, ids, 2), 1));
        decide_sync(txn);
        cr_expect(eq(int, resolve_all(), 2));
        for (int i = 0; i < N; i++)
                expect_part(i, &p[i], true);
        /* Resolved: the log may go now. */
        for (int round = 10; round < 13; round++) {
                write_filler(0, 512 << 10, round);
                cr_assert(eq(int, flush_sync(0), 0));
        }
        engine_test_run_for_ms(loop, 50);
        cr_expect(lt(u32, count_logs(0), logs_pinned), "the log is truncated once the txn is resolved");
        crash_all(52);
        for (int i = 0; i < N; i++) {
                expect_part(i, &p[i], true);
                cr_expect(eq(u32, in_doubt(i, ids, 2), 0));
        }
}

/* ---- ids and format ---- */

Test(shard_xtxn_log, ids_stay_unique_across_restarts)
{
        struct part p[N];
        uint64_t t1, t2, t3;

        open_all();
        t1 = prepare_both(p, "v");
        decide_sync(t1);
        crash_all(61);
        t2 = eng_shard_txn_new(shs[0]);
        cr_expect(gt(u64, t2, t1));
        cr_expect(eq(u32, eng_xtxn_coordinator(t2), 0));
        cr_expect(eq(u32, eng_xtxn_coordinator(eng_shard_txn_new(shs[1])), 1));
        /* An id asked about at resolution is never given out after it. */
        cr_expect(not(eng_shard_decided(shs[0], t2 + 1000)));
        t3 = eng_shard_txn_new(shs[0]);
        cr_expect(gt(u64, t3, t2 + 1000));
        cr_expect(eq(int, resolve_all(), 2));
}

Test(shard_xtxn_log, segment_header_version)
{
        uint8_t h[ENG_WAL_SEGMENT_HEADER_BYTES];
        struct eng_wal_segment_info info;

        eng_wal_segment_header_encode(h, 3, 7);
        cr_assert(eq(int, eng_wal_segment_header_decode(h, sizeof(h), &info), 0));
        cr_expect(eq(u32, info.version, 2));
        cr_expect(eq(u32, ENG_WAL_VERSION, 2));
        cr_expect(eq(u32, ENG_WAL_VERSION_MIN, 1));
}

/* ---- damaged transaction records ---- */

/* Rewrites the first record of type `type` in shard i's log with payload
 * byte `at` xored with `flip`, checksums made valid again: a record that
 * verifies but says something impossible. Returns whether one was found. */
static bool forge_record(int i, enum eng_wal_record_type type, uint32_t at, uint8_t flip)
{
        DIR *d = opendir(dirs[i]);
        struct dirent *de;
        bool found = false;

        cr_assert(not(eq(ptr, d, NULL)));
        while (!found && (de = readdir(d))) {
                char path[PATH_MAX + 300];
                unsigned long long id;
                struct eng_wal_reader r;
                struct eng_wal_record rec;
                uint8_t *buf;
                long len;
                FILE *f;

                if (strlen(de->d_name) != 20 || sscanf(de->d_name, "%16llx.log", &id) != 1)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dirs[i], de->d_name);
                f = fopen(path, "r+b");
                cr_assert(not(eq(ptr, f, NULL)));
                fseek(f, 0, SEEK_END);
                len = ftell(f);
                buf = malloc((size_t)len);
                cr_assert(not(eq(ptr, buf, NULL)));
                fseek(f, 0, SEEK_SET);
                cr_assert(eq(sz, fread(buf, 1, (size_t)len, f), (size_t)len));
                eng_wal_reader_init(&r, buf, (size_t)len, id);
                while (eng_wal_reader_next(&r, &rec) == 1) {
                        uint8_t p[4096];

                        if (rec.type != type)
                                continue;
                        cr_assert(lt(u32, at, rec.len));
                        cr_assert(le(u32, rec.len, sizeof(p)));
                        memcpy(p, rec.payload, rec.len);
                        p[at] ^= flip;
                        eng_wal_record_encode(buf + rec.offset, id, rec.type, rec.seq,
                                              rec.synced_upto, p, rec.len);
                        fseek(f, (long)rec.offset, SEEK_SET);
                        cr_assert(eq(sz, fwrite(buf + rec.offset, 1, eng_wal_record_size(rec.len), f),
                                     eng_wal_record_size(rec.len)));
                        found = true;
                        break;
                }
                fclose(f);
                free(buf);
        }
        closedir(d);
        return found;
}

Test(shard_xtxn_log, a_prepare_naming_another_coordinator_is_corruption)
{
        struct part p[N];

        open_all();
        prepare_both(p, "v");
        close_one(1);
        cr_assert(forge_record(1, ENG_WAL_RECORD_PREPARE, 8, 1));      /* coordinator 0 -> 1 */
        cr_expect(eq(int, open_res(1), -SCREE_ECORRUPT));
}

Test(shard_xtxn_log, a_decision_with_a_wrong_participant_count_is_corruption)
{
        struct part p[N];
        uint64_t txn;

        open_all();
        txn = prepare_both(p, "v");
        decide_sync(txn);
        close_one(0);
        cr_assert(forge_record(0, ENG_WAL_RECORD_DECISION, 8, 4));      /* n 2 -> 6 */
        cr_expect(eq(int, open_res(0), -SCREE_ECORRUPT));
}
