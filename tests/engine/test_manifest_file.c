/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifest files (engine/manifest_format.h): a file reads back to the
 * state its records describe; version 1 files and payloads decode with
 * catalog ids (and bad version 1 layouts are corrupt); and the reader's
 * failure modes -- truncated tail, torn record, a torn write whose later
 * record survived, bad checksum, bad lengths, unknown record type,
 * misplaced snapshots, bad headers, edits that do not apply, stale bytes
 * of another file -- each end as a cut tail or as -SCREE_ECORRUPT at the
 * right offset. States and edits in memory: test_manifest_format.c.
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

TestSuite(manifest_file, .timeout = 30);

/* ---- whole files ---- */

Test(manifest_file, a_file_reads_back_to_the_state_its_records_describe)
{
        struct eng_manifest_reader r;
        struct fbuf fb;

        fb_sample(&fb);
        cr_assert(eq(int, read_expect(&fb, fb.len, 3, &r), 0));
        cr_expect(eq(sz, r.off, fb.len));
        cr_expect(eq(int, r.torn, false));
        cr_expect(eq(u64, r.salt, SALT));
}

Test(manifest_file, zeros_after_the_last_record_are_a_clean_end)
{
        struct eng_manifest_reader r;
        struct fbuf fb;

        fb_sample(&fb);
        cr_assert(eq(int, read_expect(&fb, fb.len + 4096, 3, &r), 0));
        cr_expect(eq(sz, r.off, fb.len));
        cr_expect(eq(int, r.torn, false));
}

Test(manifest_file, a_truncated_tail_is_cut_at_every_length)
{
        struct eng_manifest_reader r;
        struct fbuf fb;

        size_t payload_end;

        fb_sample(&fb);
        payload_end = fb.rec_off[3] + ENG_MANIFEST_RECORD_HEADER_BYTES + eng_manifest_edit_size(&e3);
        /* Version 2 payloads are whole multiples of 8 bytes: no padding
         * (version 1 records have some; the v1 tests cut those). */
        cr_assert(eq(sz, payload_end, fb.len));
        for (size_t len = fb.rec_off[3] + 1; len < payload_end; len++) {
                cr_assert(eq(int, read_expect(&fb, len, 2, &r), 0), "cut at %zu", len);
                cr_assert(eq(sz, r.off, fb.rec_off[3]));
                cr_assert(eq(int, r.torn, true));
        }
        /* Only padding missing: the record is whole. */
        for (size_t len = payload_end; len < fb.len; len++)
                cr_assert(eq(int, read_expect(&fb, len, 3, &r), 0), "cut at %zu", len);
        cr_assert(eq(int, read_expect(&fb, fb.rec_off[3], 2, &r), 0));
        cr_expect(eq(int, r.torn, false), "cut exactly between records");
}

Test(manifest_file, a_torn_last_record_is_cut)
{
        struct eng_manifest_reader r;
        struct fbuf fb;

        fb_sample(&fb);
        fb.buf[fb.rec_off[3] + ENG_MANIFEST_RECORD_HEADER_BYTES + 2] ^= 0x40;   /* payload */
        cr_assert(eq(int, read_expect(&fb, fb.len, 2, &r), 0));
        cr_expect(eq(int, r.torn, true));
        fb_sample(&fb);
        fb.buf[fb.rec_off[3] + 9] ^= 0x01;                                     /* header */
        cr_assert(eq(int, read_expect(&fb, fb.len, 2, &r), 0));
        cr_expect(eq(sz, r.off, fb.rec_off[3]));
}

/* Regression (issue 23): damage in the last edit of the file, synced and
 * acknowledged, read as a torn tail and start-up dropped the edit. The
 * writer's sync mark behind it says it was durable: corruption. */
Test(manifest_file, damage_in_the_last_edit_before_a_sync_mark_is_corruption)
{
        struct eng_manifest_reader r;
        struct fbuf fb;

        fb_sample(&fb);
        fb_record(&fb, ENG_MANIFEST_RECORD_MARK, NULL, 0);
        cr_assert(eq(int, read_expect(&fb, fb.len, 3, &r), 0), "the mark is skipped");
        cr_expect(eq(int, r.torn, false));
        fb.buf[fb.rec_off[3] + ENG_MANIFEST_RECORD_HEADER_BYTES + 2] ^= 0x40;
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[3], "payload before a mark");
        fb.buf[fb.rec_off[3] + ENG_MANIFEST_RECORD_HEADER_BYTES + 2] ^= 0x40;
        fb.buf[fb.rec_off[3] + 9] ^= 0x01;
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[3], "header before a mark");
        /* Without the mark (a crash before it was written) it is a tail. */
        cr_assert(eq(int, read_expect(&fb, fb.rec_off[4], 2, &r), 0));
        cr_expect(eq(int, r.torn, true));
        /* The mark itself damaged: a tail of no records. */
        fb.buf[fb.rec_off[3] + 9] ^= 0x01;
        fb.buf[fb.rec_off[4] + 9] ^= 0x01;
        cr_assert(eq(int, read_expect(&fb, fb.len, 3, &r), 0));
        cr_expect(eq(int, r.torn, true));
        cr_expect(eq(sz, r.off, fb.rec_off[4]));
}

Test(manifest_file, a_mark_with_a_payload_is_corruption)
{
        struct fbuf fb;
        uint8_t one = 1;

        fb_sample(&fb);
        fb_record(&fb, ENG_MANIFEST_RECORD_MARK, &one, 1);
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[4], "a mark with a payload");
}

Test(manifest_file, a_torn_write_whose_later_record_survived_is_a_tail_not_corruption)
{
        struct eng_manifest_state s;
        struct eng_manifest_reader r;
        struct fbuf fb;

        /* e2 and e3 went out in one write that was never synced; the power
         * cut kept e3's block but not e2's. */
        manifest_sample_state(&s);
        fb_init(&fb, SALT);
        fb_snapshot(&fb, &s);
        fb_sync(&fb);
        fb_edit(&fb, &e1);
        fb_sync(&fb);
        fb_edit(&fb, &e2);
        fb_edit(&fb, &e3);
        memset(fb.buf + fb.rec_off[2], 0, fb.rec_off[3] - fb.rec_off[2]);
        cr_assert(eq(int, read_expect(&fb, fb.len, 1, &r), 0));
        cr_expect(eq(sz, r.off, fb.rec_off[2]));
        cr_expect(eq(int, r.torn, true));
        eng_manifest_state_fini(&s);
}

Test(manifest_file, damage_in_a_record_a_later_one_says_was_durable_is_corruption)
{
        struct fbuf fb;

        fb_sample(&fb);
        fb.buf[fb.rec_off[2] + ENG_MANIFEST_RECORD_HEADER_BYTES] ^= 0x01;      /* payload checksum fails */
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[2], "");
        fb_sample(&fb);
        fb.buf[fb.rec_off[1] + 3] ^= 0x01;                                     /* header checksum fails */
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[1], "");
}

Test(manifest_file, a_damaged_snapshot_is_corruption_even_at_the_end)
{
        struct fbuf fb;

        fb_sample(&fb);
        fb.buf[fb.rec_off[0] + ENG_MANIFEST_RECORD_HEADER_BYTES + 5] ^= 0x10;
        /* The snapshot is synced before the file is published: never a torn tail. */
        expect_read_fails(&fb, fb.rec_off[1], -SCREE_ECORRUPT, ENG_MANIFEST_HEADER_BYTES, "damaged");
        expect_read_fails(&fb, ENG_MANIFEST_HEADER_BYTES, -SCREE_ECORRUPT, ENG_MANIFEST_HEADER_BYTES,
                          "a header alone");
}

Test(manifest_file, bad_lengths_are_corruption)
{
        struct fbuf fb;
        uint8_t *h;

        /* A verifying header with a length no writer writes. */
        fb_sample(&fb);
        h = fb.buf + fb.rec_off[3];
        le32_put(h + 8, ENG_MANIFEST_MAX_PAYLOAD_BYTES + 1);
        reseal(&fb, fb.rec_off[3]);
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[3], "");
        /* Counts inside an edit that claim more than its payload holds. */
        fb_sample(&fb);
        h = fb.buf + fb.rec_off[2];
        le32_put(h + ENG_MANIFEST_RECORD_HEADER_BYTES + 16, 2);        /* n_added */
        reseal_payload(&fb, fb.rec_off[2]);
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[2], "");
}

Test(manifest_file, unknown_record_types_and_misplaced_snapshots_are_corruption)
{
        struct eng_manifest_state snap;
        struct fbuf fb;

        fb_sample(&fb);
        fb.buf[fb.rec_off[2] + 12] = 9;
        reseal(&fb, fb.rec_off[2]);
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[2], "unknown type");
        fb_sample(&fb);
        fb.buf[fb.rec_off[2] + 13] = 1;
        reseal(&fb, fb.rec_off[2]);
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, SIZE_MAX, "flags set");
        /* A snapshot after the first record. */
        manifest_sample_state(&snap);
        fb_sample(&fb);
        fb_snapshot(&fb, &snap);
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[4], "second snapshot");
        /* An edit first. */
        fb_init(&fb, SALT);
        fb_edit(&fb, &e3);
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, SIZE_MAX, "no snapshot");
        eng_manifest_state_fini(&snap);
}

Test(manifest_file, an_edit_that_does_not_apply_is_corruption)
{
        static const struct eng_manifest_table gone[] = { { .tablet = T0, .file_id = 3 } };
        struct eng_manifest_edit again = { .removed = gone, .n_removed = 1 };
        struct fbuf fb;

        fb_sample(&fb);
        fb_edit(&fb, &again);   /* e2 removed table 3 already */
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[4], "");
}

Test(manifest_file, bad_headers_are_refused)
{
        struct fbuf fb;
        uint64_t salt;
        uint32_t version;

        fb_sample(&fb);
        expect_read_fails(&fb, 0, -SCREE_ECORRUPT, SIZE_MAX, "empty file");
        expect_read_fails(&fb, 31, -SCREE_ECORRUPT, SIZE_MAX, "short header");
        fb.buf[0] = 'S';
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, SIZE_MAX, "magic");
        fb_sample(&fb);
        fb.buf[17] ^= 1;
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, SIZE_MAX, "checksum");
        fb_sample(&fb);
        le32_put(fb.buf + 8, ENG_MANIFEST_VERSION + 1);
        le64_put(fb.buf + 24, checksum64(fb.buf, 24, 0));
        cr_expect(eq(int, eng_manifest_header_decode(fb.buf, fb.len, &salt, &version),
                     -SCREE_EUNSUPPORTED));
        expect_read_fails(&fb, fb.len, -SCREE_EUNSUPPORTED, SIZE_MAX, "newer version");
        le32_put(fb.buf + 8, 0);
        le64_put(fb.buf + 24, checksum64(fb.buf, 24, 0));
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, 0, "version 0");
}

Test(manifest_file, records_of_another_file_never_verify)
{
        struct eng_manifest_reader r;
        struct fbuf fb, other;

        /* e3 as a file with another salt wrote it, in place of ours. */
        fb_sample(&fb);
        fb_init(&other, SALT + 1);
        fb_edit(&other, &e3);
        cr_assert(eq(sz, other.len - other.rec_off[0], fb.len - fb.rec_off[3]));
        memcpy(fb.buf + fb.rec_off[3], other.buf + other.rec_off[0], other.len - other.rec_off[0]);
        cr_assert(eq(int, read_expect(&fb, fb.len, 2, &r), 0));
        cr_expect(eq(sz, r.off, fb.rec_off[3]));
        cr_expect(eq(int, r.torn, true));
}

/* ---- version 1 ---- */

static const struct eng_manifest_layout v1_layout = { .shard = 1, .n_shards = 2, .tablets_per_shard = 4 };

Test(manifest_file, a_version_1_file_reads_with_catalog_ids)
{
        static uint8_t buf[4096];
        struct eng_manifest_state got, want;
        struct eng_manifest_reader r;
        size_t len = manifest_v1_sample_file(buf, sizeof(buf), SALT);

        cr_assert(eq(int, eng_manifest_read(&r, buf, len, &got), 0));
        cr_expect(eq(u32, r.version, 1));
        cr_expect(eq(sz, r.off, len));
        cr_expect(eq(int, r.torn, false));
        manifest_v1_sample_want(&want);
        cr_expect(manifest_state_is_equal(&got, &want));
        cr_expect(eq(int, eng_manifest_state_check(&got), 0));
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&want);
}

Test(manifest_file, version_1_payloads_decode_with_the_files_layout)
{
        static const uint64_t seqs[8] = { 0, 0, 0, 0, 0, 0, 0, 9 };
        static const struct eng_manifest_table t[] = { { .tablet = 4, .file_id = 1, .max_seq = 3 } };
        static const uint32_t tablets[] = { 7 };
        const struct eng_manifest_edit e = { .added = t, .n_added = 1, .removed = t, .n_removed = 1,
                                             .flushed_tablets = tablets, .flushed_seqs = seqs + 7,
                                             .n_flushed = 1 };
        struct eng_manifest_state s;
        struct eng_manifest_edit got;
        uint8_t buf[512];
        size_t n = manifest_v1_snapshot_encode(buf, &v1_layout, 2, 1, seqs, 8, t, 1);
        void *mem;

        cr_assert(eq(sz, n, 40 + 8 * 8 + 36));
        cr_assert(eq(int, eng_manifest_snapshot_decode(buf, n, 1, &s), 0));
        cr_assert(eq(u32, s.n_tablets, 2), "slots 4 (a table) and 7 (a seq); the rest left out");
        cr_expect(eq(u32, s.tablets[0].id, 9));
        cr_expect(eq(u64, s.tablets[0].flushed_seq, 0));
        cr_expect(eq(u32, s.tablets[1].id, 15));
        cr_expect(eq(u64, s.tablets[1].flushed_seq, 9));
        cr_assert(eq(sz, s.n_tables, 1));
        cr_expect(eq(u32, s.tables[0].tablet, 9));
        eng_manifest_state_fini(&s);
        cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, V2, &s), -SCREE_ECORRUPT),
                  "the same bytes are no version 2 snapshot");

        n = manifest_v1_edit_encode(buf, &e);
        cr_assert(eq(sz, n, 32 + 36 + 2 * 12));
        cr_assert(eq(int, eng_manifest_edit_decode(buf, n, 1, &v1_layout, &got, &mem), 0));
        cr_expect(eq(u32, got.added[0].tablet, 9));
        cr_expect(eq(u32, got.removed[0].tablet, 9));
        cr_expect(eq(u64, got.removed[0].file_id, 1));
        cr_expect(eq(u32, got.flushed_tablets[0], 15));
        cr_expect(eq(u64, got.flushed_seqs[0], 9));
        cr_expect(eq(u32, got.n_dropped, 0));
        free(mem);
        cr_expect(eq(int, eng_manifest_edit_decode(buf, n, 1, NULL, &got, &mem), -SCREE_ECORRUPT),
                  "no layout");
        buf[28] = 1;
        cr_expect(eq(int, eng_manifest_edit_decode(buf, n, 1, &v1_layout, &got, &mem), -SCREE_ECORRUPT),
                  "reserved");
}

Test(manifest_file, a_version_1_layout_or_tablet_number_outside_the_static_map_is_corrupt)
{
        static const uint64_t seqs[9] = { 0 };
        static const struct eng_manifest_table in_slot_3[] = { { .tablet = 3, .file_id = 1 } };
        const struct {
                const char *what;
                struct eng_manifest_layout l;
                uint32_t n_slots, n_tables;
        } cases[] = {
                { "no shards", { .shard = 0, .n_shards = 0, .tablets_per_shard = 4 }, 8, 0 },
                { "no tablets per shard", { .shard = 0, .n_shards = 2, .tablets_per_shard = 0 }, 0, 0 },
                { "too many tablets per shard",
                  { .shard = 0, .n_shards = 2, .tablets_per_shard = ENG_MAX_TABLETS_PER_SHARD + 1 }, 0, 0 },
                { "shard past n_shards", { .shard = 2, .n_shards = 2, .tablets_per_shard = 4 }, 8, 0 },
                { "more slots than the shard's tablets", v1_layout, 9, 0 },
                { "a table past the slots", v1_layout, 3, 1 },
        };
        static const uint32_t local_8[] = { 8 };
        const struct eng_manifest_edit bad_flush = { .flushed_tablets = local_8, .flushed_seqs = seqs,
                                                     .n_flushed = 1 };
        struct eng_manifest_state s;
        struct eng_manifest_edit got;
        uint8_t buf[512];
        void *mem;
        size_t n;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                n = manifest_v1_snapshot_encode(buf, &cases[i].l, 2, 1, seqs, cases[i].n_slots,
                                                in_slot_3, cases[i].n_tables);
                cr_expect(eq(int, eng_manifest_snapshot_decode(buf, n, 1, &s), -SCREE_ECORRUPT), "%s",
                          cases[i].what);
        }
        n = manifest_v1_snapshot_encode(buf, &v1_layout, 2, 1, seqs, 4, in_slot_3, 1);
        cr_assert(eq(int, eng_manifest_snapshot_decode(buf, n, 1, &s), 0), "the same, valid");
        eng_manifest_state_fini(&s);
        n = manifest_v1_edit_encode(buf, &bad_flush);
        cr_expect(eq(int, eng_manifest_edit_decode(buf, n, 1, &v1_layout, &got, &mem), -SCREE_ECORRUPT),
                  "tablet 8 of a shard of 8");
        cr_expect(eq(int, eng_manifest_edit_decode(buf, n, 1, &cases[0].l, &got, &mem), -SCREE_ECORRUPT),
                  "a bad layout");
}

Test(manifest_file, a_version_1_edit_that_does_not_convert_is_corruption_at_its_record)
{
        static const uint32_t local_8[] = { 8 };
        static const uint64_t seq[] = { 1 };
        const struct eng_manifest_edit bad = { .flushed_tablets = local_8, .flushed_seqs = seq,
                                               .n_flushed = 1 };
        static uint8_t buf[4096];
        uint8_t p[256];
        size_t len = manifest_v1_sample_file(buf, sizeof(buf), SALT), at = len;

        manifest_v1_record(buf, sizeof(buf), &len, SALT, ENG_MANIFEST_RECORD_EDIT, p,
                           manifest_v1_edit_encode(p, &bad));
        {
                struct eng_manifest_reader r;
                struct eng_manifest_state s;

                cr_expect(eq(int, eng_manifest_read(&r, buf, len, &s), -SCREE_ECORRUPT));
                cr_expect(eq(sz, r.bad_off, at));
        }
}

/* Version 1 records have padding: a cut inside it loses nothing. */
Test(manifest_file, a_version_1_tail_cut_in_its_padding_is_whole)
{
        static uint8_t buf[4096];
        struct eng_manifest_reader r;
        struct eng_manifest_record rec;
        struct eng_manifest_state s, want;
        size_t len = manifest_v1_sample_file(buf, sizeof(buf), SALT), last = 0, payload_end = 0;

        cr_assert(eq(int, eng_manifest_reader_init(&r, buf, len), 0));
        while (eng_manifest_reader_next(&r, &rec) == 1) {
                last = rec.offset;
                payload_end = rec.offset + ENG_MANIFEST_RECORD_HEADER_BYTES + rec.len;
        }
        cr_assert(lt(sz, payload_end, len), "the last edit has padding");
        manifest_v1_sample_want(&want);
        for (size_t cut = payload_end; cut <= len; cut++) {
                cr_assert(eq(int, eng_manifest_read(&r, buf, cut, &s), 0), "cut at %zu", cut);
                cr_expect(manifest_state_is_equal(&s, &want), "cut at %zu", cut);
                eng_manifest_state_fini(&s);
        }
        cr_assert(eq(int, eng_manifest_read(&r, buf, payload_end - 1, &s), 0));
        cr_expect(eq(sz, r.off, last));
        cr_expect(eq(int, r.torn, true));
        eng_manifest_state_fini(&s);
        eng_manifest_state_fini(&want);
}

Test(manifest_file, files_are_written_as_version_3)
{
        uint8_t h[ENG_MANIFEST_HEADER_BYTES];
        uint64_t salt;
        uint32_t version = 0;

        eng_manifest_header_encode(h, SALT);
        cr_expect(eq(u32, le32_get(h + 8), 3));
        cr_assert(eq(int, eng_manifest_header_decode(h, sizeof(h), &salt, &version), 0));
        cr_expect(eq(u32, version, 3));
        manifest_v1_header_encode(h, SALT);
        cr_assert(eq(int, eng_manifest_header_decode(h, sizeof(h), &salt, &version), 0));
        cr_expect(eq(u32, version, 1), "version 1 still reads");
        le32_put(h + 8, 2);
        le64_put(h + 24, checksum64(h, 24, 0));
        cr_assert(eq(int, eng_manifest_header_decode(h, sizeof(h), &salt, &version), 0));
        cr_expect(eq(u32, version, 2), "version 2 still reads");
        le32_put(h + 8, 4);
        le64_put(h + 24, checksum64(h, 24, 0));
        cr_expect(eq(int, eng_manifest_header_decode(h, sizeof(h), &salt, &version),
                     -SCREE_EUNSUPPORTED));
}
