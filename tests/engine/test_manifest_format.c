/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manifest format (engine/manifest_format.h), in memory: snapshots and
 * edits round-trip with sparse tablet ids, reserved bytes checked; applying
 * an edit adds and drops tablet entries, validates it all and changes
 * nothing on error. Whole files and version 1: test_manifest_file.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "engine/manifest_format.h"
#include "engine/tablet.h"
#include "tests/engine/manifest_format_fixture.h"
#include "tests/engine/manifest_helpers.h"

TestSuite(manifest_format, .timeout = 30);

/* ---- states, payloads, edits ---- */

Test(manifest_format, snapshot_round_trips_every_field)
{
        struct eng_manifest_state s, got;
        uint8_t buf[1024];
        size_t n;

        manifest_sample_state(&s);
        n = eng_manifest_snapshot_size(&s);
        /* keys: T0 5 + 5 bytes, T2 5 + 4: 19, padded to 24 */
        cr_assert(eq(sz, n, 40 + 2 * 24 + 3 * 40 + 24));
        eng_manifest_snapshot_encode(buf, &s);
        cr_expect(eq(u32, le32_get(buf + 36), 19), "key_bytes");
        cr_expect(eq(u32, le32_get(buf + 40), T0), "the first TABLET entry");
        cr_expect(eq(u32, le32_get(buf + 44), SAMPLE_TABLE));
        cr_expect(eq(u64, le64_get(buf + 48), 200));
        cr_expect(eq(u32, le32_get(buf + 56), 5), "start_len");
        cr_expect(eq(u32, le32_get(buf + 60), 5), "end_len");
        cr_expect(eq(u32, le32_get(buf + 64), T2));
        cr_expect(eq(u32, le32_get(buf + 88), T0), "the first TABLE entry");
        cr_expect(eq(u64, le64_get(buf + 96), 3));
        cr_expect(eq(u32, be32_get(buf + 208), SAMPLE_TABLE), "the key area: T0's start");
        cr_expect(eq(u8, buf[212], 'a'));
        cr_expect(eq(u8, buf[217], 'm'), "T0's end");
        cr_expect(eq(u32, be32_get(buf + 223), SAMPLE_TABLE + 1), "T2's end");
        cr_expect(eq(u8, buf[227], 0), "padding");
        cr_assert(eq(int, eng_manifest_snapshot_decode(buf, n, ENG_MANIFEST_VERSION, &got), 0));
        cr_expect(manifest_state_is_equal(&s, &got));
        cr_expect(eq(ptr, (void *)got.tablets[0].start, got.keys), "keys in the state's arena");
        eng_manifest_state_fini(&got);
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n - 8, ENG_MANIFEST_VERSION, &got),
                     -SCREE_ECORRUPT));
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, 39, ENG_MANIFEST_VERSION, &got),
                     -SCREE_ECORRUPT));
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, ENG_MANIFEST_VERSION + 1, &got),
                     -SCREE_EUNSUPPORTED));
        buf[227] = 1;
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), -SCREE_ECORRUPT),
                  "nonzero padding");
        buf[227] = 0;
        le32_put(buf + 36, 20);
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), -SCREE_ECORRUPT),
                  "key lengths not adding up to key_bytes");
        le32_put(buf + 36, 19);
        le32_put(buf + 56, 0);
        le32_put(buf + 60, 10);
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), -SCREE_ECORRUPT),
                  "an unranged entry in a version 3 file");
        eng_manifest_state_fini(&s);
}

Test(manifest_format, an_empty_state_round_trips)
{
        struct eng_manifest_layout layout = { .shard = 0, .n_shards = 1, .tablets_per_shard = 0 };
        struct eng_manifest_state s, got;
        uint8_t buf[64];

        eng_manifest_state_init(&s, &layout);
        cr_assert(eq(sz, eng_manifest_snapshot_size(&s), 40));
        eng_manifest_snapshot_encode(buf, &s);
        cr_assert(eq(int, eng_manifest_snapshot_decode(buf, 40, ENG_MANIFEST_VERSION, &got), 0));
        cr_expect(manifest_state_is_equal(&s, &got));
        cr_expect(eq(ptr, got.tables, NULL));
        cr_expect(eq(ptr, got.tablets, NULL));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&got, 0), 0));
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&s);
}

Test(manifest_format, a_snapshot_of_an_invalid_state_or_with_reserved_bits_is_corrupt)
{
        struct eng_manifest_state s, got;
        uint8_t buf[1024];
        size_t n;

        manifest_sample_state(&s);
        n = eng_manifest_snapshot_size(&s);
        eng_manifest_snapshot_encode(buf, &s);
        cr_assert(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), 0));
        eng_manifest_state_fini(&got);
        s.tables[1].file_id = 3;        /* duplicate id */
        eng_manifest_snapshot_encode(buf, &s);
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), -SCREE_ECORRUPT));
        s.tables[1].file_id = 9;        /* not below next_file_id */
        eng_manifest_snapshot_encode(buf, &s);
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), -SCREE_ECORRUPT));
        s.tables[1].file_id = 5;
        s.tables[1].tablet = T1;        /* a tablet without an entry */
        eng_manifest_snapshot_encode(buf, &s);
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), -SCREE_ECORRUPT));
        s.tables[1].tablet = T2;
        s.tablets[1].id = T0;           /* an id twice */
        eng_manifest_snapshot_encode(buf, &s);
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), -SCREE_ECORRUPT));
        s.tablets[0].id = T2;           /* ids out of order */
        s.tablets[1].id = T0;
        eng_manifest_snapshot_encode(buf, &s);
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), -SCREE_ECORRUPT));
        s.tablets[0].id = T0;
        s.tablets[1].id = T2;
        for (size_t off = 36; off < n; off += 8) {
                /* Reserved: the fixed part's, each TABLET's and TABLE's. */
                bool reserved = off == 36 || (off >= 40 && off < 72 && (off - 40) % 16 == 0) ||
                                (off >= 72 && (off - 72) % 40 == 0);

                if (!reserved)
                        continue;
                eng_manifest_snapshot_encode(buf, &s);
                buf[off + (off == 36 ? 0 : 4)] = 1;
                cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V3, &got), -SCREE_ECORRUPT),
                          "reserved byte at %zu", off + (off == 36 ? 0 : 4));
        }
        eng_manifest_state_fini(&s);
}

Test(manifest_format, an_edit_round_trips_every_field)
{
        struct eng_manifest_edit got;
        uint8_t buf[1024];
        void *mem;
        size_t n = eng_manifest_edit_size(&e2);

        cr_assert(eq(sz, n, 40 + 40 + 2 * 16));
        eng_manifest_edit_encode(buf, &e2);
        cr_assert(eq(int, eng_manifest_edit_decode(buf, n, V3, NULL, &got, &mem), 0));
        cr_expect(eq(u64, got.next_file_id, 12));
        cr_expect(eq(u64, got.log_segment, 0));
        cr_assert(eq(u32, got.n_added, 1));
        cr_expect(manifest_table_is_equal(&got.added[0], &e2_added[0]));
        cr_assert(eq(u32, got.n_removed, 2));
        cr_expect(eq(u64, got.removed[1].file_id, 8));
        cr_expect(eq(u32, got.removed[1].tablet, T0));
        cr_expect(eq(u32, got.n_flushed, 0));
        cr_expect(eq(ptr, (void *)got.flushed_tablets, NULL));
        cr_expect(eq(u32, got.n_dropped, 0));
        cr_expect(eq(ptr, (void *)got.dropped_tablets, NULL));
        free(mem);

        n = eng_manifest_edit_size(&e1);
        eng_manifest_edit_encode(buf, &e1);
        cr_assert(eq(int, eng_manifest_edit_decode(buf, n, V3, NULL, &got, &mem), 0));
        cr_assert(eq(u32, got.n_flushed, 1));
        cr_expect(eq(u32, got.flushed_tablets[0], T1));
        cr_expect(eq(u64, got.flushed_seqs[0], 300));
        cr_expect(eq(u64, got.log_segment, 18));
        cr_expect(not(got.implicit_entries));
        cr_assert(eq(u32, got.n_new_tablets, 1));
        cr_expect(manifest_tablet_is_equal(&got.new_tablets[0], &e1_new[0]));
        cr_expect(eq(sz, n, 40 + 40 + 16 + 24 + 16), "a new tablet, 9 bytes of keys padded to 16");
        cr_expect(eq(u32, le32_get(buf + 32), 1), "n_new_tablets");
        cr_expect(eq(u32, le32_get(buf + 36), 9), "key_bytes");
        cr_expect(eq(u32, le32_get(buf + 96), T1), "the new TABLET entry");
        cr_expect(eq(u32, be32_get(buf + 120), SAMPLE_TABLE), "its keys");
        free(mem);
        cr_assert(eq(int, eng_manifest_edit_decode(buf, n, V3, NULL, &got, &mem), 0));
        memset(buf + 120, 0, 9);
        cr_expect(eq(u32, be32_get(got.new_tablets[0].start), SAMPLE_TABLE),
                  "keys copied off the payload");
        free(mem);
        eng_manifest_edit_encode(buf, &e1);
        buf[130] = 1;
        cr_expect(eq(int, eng_manifest_edit_decode(buf, n, V3, NULL, &got, &mem), -SCREE_ECORRUPT),
                  "nonzero padding");
        cr_expect(eq(int, eng_manifest_edit_decode(buf, n - 16, V3, NULL, &got, &mem), -SCREE_ECORRUPT),
                  "counts say more than the payload holds");
        cr_expect(eq(int, eng_manifest_edit_decode(buf, 39, V3, NULL, &got, &mem), -SCREE_ECORRUPT));
        cr_expect(eq(int, eng_manifest_edit_decode(buf, n, V3 + 1, NULL, &got, &mem),
                     -SCREE_EUNSUPPORTED));
}

Test(manifest_format, an_edit_with_drops_round_trips_and_reserved_bytes_are_checked)
{
        static const struct eng_manifest_table removed[] = { { .tablet = 0xfffffff0u, .file_id = 77 } };
        static const uint32_t flushed[] = { 4000000000u }, dropped[] = { 3, 0xfffffff0u };
        static const uint64_t seqs[] = { 1u << 20 };
        const struct eng_manifest_edit e = { .removed = removed, .n_removed = 1,
                                             .flushed_tablets = flushed, .flushed_seqs = seqs,
                                             .n_flushed = 1, .dropped_tablets = dropped,
                                             .n_dropped = 2, .next_file_id = 80 };
        struct eng_manifest_edit got;
        uint8_t buf[256];
        void *mem;
        size_t n = eng_manifest_edit_size(&e);

        cr_assert(eq(sz, n, 40 + 2 * 16 + 2 * 8));
        eng_manifest_edit_encode(buf, &e);
        cr_expect(eq(u32, le32_get(buf + 28), 2), "n_dropped");
        cr_expect(eq(u32, le32_get(buf + 72), 3), "the first dropped id");
        cr_assert(eq(int, eng_manifest_edit_decode(buf, n, V3, NULL, &got, &mem), 0));
        cr_expect(eq(u64, got.next_file_id, 80));
        cr_assert(eq(u32, got.n_removed, 1));
        cr_expect(eq(u32, got.removed[0].tablet, 0xfffffff0u));
        cr_expect(eq(u64, got.removed[0].file_id, 77));
        cr_assert(eq(u32, got.n_flushed, 1));
        cr_expect(eq(u32, got.flushed_tablets[0], 4000000000u));
        cr_expect(eq(u64, got.flushed_seqs[0], 1u << 20));
        cr_assert(eq(u32, got.n_dropped, 2));
        cr_expect(eq(u32, got.dropped_tablets[0], 3));
        cr_expect(eq(u32, got.dropped_tablets[1], 0xfffffff0u));
        free(mem);
        cr_expect(eq(int, eng_manifest_edit_decode(buf, n - 8, V3, NULL, &got, &mem), -SCREE_ECORRUPT));
        /* The reserved halves of the removed and flushed pairs and of each drop. */
        for (size_t i = 0; i < 4; i++) {
                static const size_t at[] = { 40 + 4, 56 + 4, 72 + 4, 80 + 4 };

                eng_manifest_edit_encode(buf, &e);
                buf[at[i]] = 1;
                cr_expect(eq(int, eng_manifest_edit_decode(buf, n, V3, NULL, &got, &mem),
                             -SCREE_ECORRUPT), "reserved byte at %zu", at[i]);
        }
        eng_manifest_edit_encode(buf, &e2);     /* an added TABLE's */
        buf[40 + 4] = 1;
        cr_expect(eq(int, eng_manifest_edit_decode(buf, eng_manifest_edit_size(&e2), V3, NULL, &got,
                                                   &mem), -SCREE_ECORRUPT));
}

Test(manifest_format, an_empty_edit_round_trips_and_changes_nothing)
{
        struct eng_manifest_edit empty = { 0 }, got;
        struct eng_manifest_state s, before;
        uint8_t buf[64];
        void *mem = &buf;

        eng_manifest_edit_encode(buf, &empty);
        cr_assert(eq(int, eng_manifest_edit_decode(buf, eng_manifest_edit_size(&empty), V3, NULL, &got,
                                                   &mem), 0));
        cr_expect(eq(ptr, mem, NULL));
        manifest_sample_state(&s);
        manifest_sample_state(&before);
        cr_assert(eq(int, eng_manifest_state_apply(&s, &got), 0));
        cr_expect(manifest_state_is_equal(&s, &before));
        eng_manifest_state_fini(&s);
        eng_manifest_state_fini(&before);
}

Test(manifest_format, apply_removes_adds_in_order_and_moves_ids_forward)
{
        struct eng_manifest_state s;
        static const struct eng_manifest_table big[] = {
                { .tablet = T2, .file_id = 40, .file_size = 1, .min_seq = 300, .max_seq = 301 },
        };
        struct eng_manifest_edit raise = { .added = big, .n_added = 1 };

        expected_state(&s, 2);
        /* Removed 3 and 8 of T0; 5 keeps its place, 9 and 11 follow. */
        cr_assert(eq(sz, s.n_tables, 3));
        cr_expect(eq(u64, s.tables[0].file_id, 5));
        cr_expect(eq(u64, s.tables[1].file_id, 9));
        cr_expect(eq(u64, s.tables[2].file_id, 11));
        /* e1 added T1's entry, sorted in between. */
        cr_assert(eq(u32, s.n_tablets, 3));
        cr_expect(eq(u32, s.tablets[0].id, T0));
        cr_expect(eq(u32, s.tablets[1].id, T1));
        cr_expect(eq(u32, s.tablets[2].id, T2));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, T1), 300));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, T0), 200));
        cr_expect(eq(u64, s.log_segment, 18));
        cr_expect(eq(u64, s.next_file_id, 12));
        cr_assert(eq(int, eng_manifest_state_apply(&s, &raise), 0));
        cr_expect(eq(u64, s.next_file_id, 41), "an added id is used: next_file_id moves past it");
        cr_expect(eq(int, eng_manifest_state_check(&s), 0));
        eng_manifest_state_fini(&s);
}

Test(manifest_format, with_implicit_entries_tables_and_seqs_of_new_ids_add_unranged_entries)
{
        static const struct eng_manifest_table t1_table[] = {
                { .tablet = T1, .file_id = 20, .file_size = 1, .min_seq = 1, .max_seq = 2 },
        };
        static const struct eng_manifest_table t2_tables[] = { { .tablet = T2, .file_id = 5 } };
        static const uint32_t far[] = { 0xfffffffeu }, t2[] = { T2 }, t1_far[] = { T1, 0xfffffffeu };
        static const uint32_t low[] = { 1 };
        static const uint64_t seq[] = { 42 };
        /* The rule of versions 1 and 2 (their decoders set implicit_entries). */
        const struct eng_manifest_edit add = { .added = t1_table, .n_added = 1,
                                               .implicit_entries = true };
        const struct eng_manifest_edit flush_far = { .flushed_tablets = far, .flushed_seqs = seq,
                                                     .n_flushed = 1, .implicit_entries = true };
        const struct eng_manifest_edit flush_low = { .flushed_tablets = low, .flushed_seqs = seq,
                                                     .n_flushed = 1, .implicit_entries = true };
        struct eng_manifest_edit strict;
        /* T2's last table goes and T2 with it, in one edit. */
        const struct eng_manifest_edit drop_t2 = { .removed = t2_tables, .n_removed = 1,
                                                   .dropped_tablets = t2, .n_dropped = 1 };
        const struct eng_manifest_edit drop_rest = { .removed = (const struct eng_manifest_table[]){
                                                             { .tablet = T1, .file_id = 20 } },
                                                     .n_removed = 1, .dropped_tablets = t1_far,
                                                     .n_dropped = 2 };
        struct eng_manifest_state s;

        manifest_sample_state(&s);
        strict = add;
        strict.implicit_entries = false;
        cr_expect(eq(int, eng_manifest_state_apply(&s, &strict), -SCREE_ECORRUPT),
                  "version 3: a table of a tablet without an entry");
        strict = flush_far;
        strict.implicit_entries = false;
        cr_expect(eq(int, eng_manifest_state_apply(&s, &strict), -SCREE_ECORRUPT),
                  "version 3: a seq of a tablet without an entry");
        cr_assert(eq(int, eng_manifest_state_apply(&s, &add), 0));
        cr_assert(eq(u32, s.n_tablets, 3));
        cr_expect(eq(u32, s.tablets[1].id, T1), "an added table's tablet gets an entry, sorted in");
        cr_expect(eq(u64, s.tablets[1].flushed_seq, 0));
        cr_expect(not(eng_manifest_tablet_is_ranged(&s.tablets[1])), "made unranged");
        cr_expect(not(eng_manifest_state_is_ranged(&s)));
        cr_assert(eq(int, eng_manifest_state_apply(&s, &flush_far), 0));
        cr_assert(eq(int, eng_manifest_state_apply(&s, &flush_low), 0));
        cr_assert(eq(u32, s.n_tablets, 5));
        cr_expect(eq(u32, s.tablets[0].id, 1), "a flushed seq of a new id adds its entry first...");
        cr_expect(eq(u32, s.tablets[4].id, 0xfffffffeu), "...or last");
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 0xfffffffeu), 42));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 1), 42));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 2), 0), "no entry: 0");
        cr_expect(eq(int, eng_manifest_state_check(&s), 0));
        cr_assert(eq(int, eng_manifest_state_apply(&s, &drop_t2), 0));
        cr_assert(eq(u32, s.n_tablets, 4));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, T2), 0));
        cr_expect(eq(u32, s.tablets[3].id, 0xfffffffeu));
        cr_assert(eq(int, eng_manifest_state_apply(&s, &drop_rest), 0));
        cr_assert(eq(u32, s.n_tablets, 2));
        cr_expect(eq(u32, s.tablets[0].id, 1));
        cr_expect(eq(u32, s.tablets[1].id, T0));
        cr_expect(eq(int, eng_manifest_state_check(&s), 0));
        /* A dropped id is free to come back (not that the catalog reuses ids). */
        cr_assert(eq(int, eng_manifest_state_apply(&s, &flush_far), 0));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 0xfffffffeu), 42));
        eng_manifest_state_fini(&s);
}

Test(manifest_format, dropping_every_tablet_leaves_no_array)
{
        static const struct eng_manifest_table all[] = { { .tablet = T0, .file_id = 3 },
                                                         { .tablet = T2, .file_id = 5 },
                                                         { .tablet = T0, .file_id = 8 } };
        static const uint32_t both[] = { T2, T0 };
        const struct eng_manifest_edit e = { .removed = all, .n_removed = 3,
                                             .dropped_tablets = both, .n_dropped = 2 };
        struct eng_manifest_state s;

        manifest_sample_state(&s);
        cr_assert(eq(int, eng_manifest_state_apply(&s, &e), 0));
        cr_expect(eq(u32, s.n_tablets, 0));
        cr_expect(eq(ptr, s.tablets, NULL));
        cr_expect(eq(sz, s.n_tables, 0));
        cr_expect(eq(int, eng_manifest_state_check(&s), 0));
        eng_manifest_state_fini(&s);
}

Test(manifest_format, an_edit_that_does_not_apply_is_refused_and_changes_nothing)
{
        static const struct eng_manifest_table missing[] = { { .tablet = T0, .file_id = 4 } };
        static const struct eng_manifest_table wrong_tablet[] = { { .tablet = T1, .file_id = 3 } };
        static const struct eng_manifest_table twice[] = { { .tablet = T0, .file_id = 3 },
                                                           { .tablet = T0, .file_id = 3 } };
        static const struct eng_manifest_table dup_id[] = { { .tablet = T1, .file_id = 5, .max_seq = 1 } };
        static const struct eng_manifest_table dup_in_edit[] = { { .tablet = T1, .file_id = 20 },
                                                                 { .tablet = T2, .file_id = 20 } };
        static const struct eng_manifest_table bad_range[] = {
                { .tablet = T1, .file_id = 20, .min_seq = 5, .max_seq = 4 },
        };
        static const struct eng_manifest_table max_id[] = { { .tablet = T1, .file_id = UINT64_MAX } };
        static const struct eng_manifest_table t2_gone[] = { { .tablet = T2, .file_id = 5 } };
        static const struct eng_manifest_table t0_one_gone[] = { { .tablet = T0, .file_id = 3 } };
        static const struct eng_manifest_table t2_new[] = { { .tablet = T2, .file_id = 30 } };
        static const uint32_t t0[] = { T0 }, t11[] = { T1, T1 }, t2[] = { T2 }, t2t2[] = { T2, T2 };
        static const uint32_t t1[] = { T1 }, t2t1[] = { T2, T1 };
        static const uint64_t back[] = { 199 }, down[] = { 10, 9 }, any[] = { 500 };
        const struct {
                const char *what;
                struct eng_manifest_edit e;
        } cases[] = {
                { "remove a table that is not there", { .removed = missing, .n_removed = 1 } },
                { "remove from the wrong tablet", { .removed = wrong_tablet, .n_removed = 1 } },
                { "remove twice", { .removed = twice, .n_removed = 2 } },
                { "add an id already present", { .added = dup_id, .n_added = 1 } },
                { "add one id twice", { .added = dup_in_edit, .n_added = 2 } },
                { "add min_seq > max_seq", { .added = bad_range, .n_added = 1 } },
                { "add the largest id", { .added = max_id, .n_added = 1 } },
                { "flushed seq backwards",
                  { .flushed_tablets = t0, .flushed_seqs = back, .n_flushed = 1 } },
                { "flushed twice, going down",
                  { .flushed_tablets = t11, .flushed_seqs = down, .n_flushed = 2 } },
                { "next_file_id backwards", { .next_file_id = 8 } },
                { "log_segment backwards", { .log_segment = 16 } },
                { "a count without its array", { .n_added = 1 } },
                { "a drop count without its array", { .n_dropped = 1 } },
                { "drop a tablet without an entry",
                  { .dropped_tablets = t1, .n_dropped = 1 } },
                { "drop a tablet with its tables", { .dropped_tablets = t2, .n_dropped = 1 } },
                { "drop a tablet with a table left after the removals",
                  { .removed = t0_one_gone, .n_removed = 1, .dropped_tablets = t0, .n_dropped = 1 } },
                { "drop a tablet a table is added to",
                  { .removed = t2_gone, .n_removed = 1, .added = t2_new, .n_added = 1,
                    .dropped_tablets = t2, .n_dropped = 1 } },
                { "drop twice",
                  { .removed = t2_gone, .n_removed = 1, .dropped_tablets = t2t2, .n_dropped = 2 } },
                { "drop a tablet also flushed",
                  { .removed = t2_gone, .n_removed = 1, .flushed_tablets = t2, .flushed_seqs = any,
                    .n_flushed = 1, .dropped_tablets = t2, .n_dropped = 1 } },
                { "a valid part does not save an invalid one",
                  { .removed = missing, .n_removed = 1, .next_file_id = 100, .log_segment = 100 } },
                { "valid tables and flushes do not save an invalid drop",
                  { .removed = t2_gone, .n_removed = 1, .flushed_tablets = t0, .flushed_seqs = any,
                    .n_flushed = 1, .dropped_tablets = t2t1, .n_dropped = 2 } },
        };
        struct eng_manifest_state s, before;

        manifest_sample_state(&s);
        manifest_sample_state(&before);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                cr_expect(eq(int, eng_manifest_state_apply(&s, &cases[i].e), -SCREE_ECORRUPT), "%s",
                          cases[i].what);
                cr_expect(manifest_state_is_equal(&s, &before), "%s changed the state", cases[i].what);
        }
        eng_manifest_state_fini(&s);
        eng_manifest_state_fini(&before);
}

Test(manifest_format, copy_is_deep_and_fini_accepts_a_zeroed_state)
{
        struct eng_manifest_state s, c, zero = { 0 };

        manifest_sample_state(&s);
        cr_assert(eq(int, eng_manifest_state_copy(&c, &s), 0));
        cr_expect(manifest_state_is_equal(&s, &c));
        cr_expect(not(eq(ptr, c.tables, s.tables)));
        c.tables[0].file_size = 1;
        cr_expect(not(eq(ptr, c.tablets, s.tablets)));
        c.tablets[0].flushed_seq = 1;
        cr_expect(eq(u64, s.tables[0].file_size, 4096));
        cr_expect(eq(u64, s.tablets[0].flushed_seq, 200));
        eng_manifest_state_fini(&c);
        eng_manifest_state_fini(&s);
        eng_manifest_state_fini(&zero);
}
