/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manifest format (engine/manifest_format.h), in memory: snapshots and
 * edits round-trip with sparse tablet ids, reserved bytes checked; applying
 * an edit adds and drops tablet entries, validates it all and changes
 * nothing on error; version 1 files and payloads decode with catalog ids
 * (and bad version 1 layouts are corrupt); a file reads back to the state
 * its records describe; and the
 * reader's failure modes -- truncated tail, torn record, a torn write whose
 * later record survived, bad checksum, bad lengths, unknown record type,
 * misplaced snapshots, bad headers, edits that do not apply, stale bytes
 * of another file -- each end as a cut tail or as -SCREE_ECORRUPT at the
 * right offset.
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
#include "tests/engine/manifest_helpers.h"

TestSuite(manifest_format, .timeout = 30);

#define SALT UINT64_C(0x5eed5a1700000001)
#define FILE_CAP (64u * 1024u)
#define MAX_RECS 16
#define V3 ENG_MANIFEST_VERSION
#define V2 ENG_MANIFEST_VERSION_UNRANGED

/* A manifest file built in memory the way the writer builds it: records
 * claim durable what the last fb_sync covered. */
struct fbuf {
        uint8_t buf[FILE_CAP];
        size_t len;
        uint64_t salt, synced;
        size_t rec_off[MAX_RECS];
        unsigned n_rec;
};

static void fb_init(struct fbuf *fb, uint64_t salt)
{
        memset(fb, 0, sizeof(*fb));
        fb->salt = salt;
        eng_manifest_header_encode(fb->buf, salt);
        fb->len = ENG_MANIFEST_HEADER_BYTES;
}

static void fb_record(struct fbuf *fb, enum eng_manifest_record_type type, const void *p, size_t len)
{
        cr_assert(le(sz, fb->len + eng_manifest_record_size(len), FILE_CAP));
        cr_assert(lt(u32, fb->n_rec, MAX_RECS));
        fb->rec_off[fb->n_rec++] = fb->len;
        fb->len += eng_manifest_record_encode(fb->buf + fb->len, fb->salt, type, fb->synced, p, len);
}

static void fb_snapshot(struct fbuf *fb, const struct eng_manifest_state *s)
{
        uint8_t p[4096];

        cr_assert(le(sz, eng_manifest_snapshot_size(s), sizeof(p)));
        eng_manifest_snapshot_encode(p, s);
        fb_record(fb, ENG_MANIFEST_RECORD_SNAPSHOT, p, eng_manifest_snapshot_size(s));
}

static void fb_edit(struct fbuf *fb, const struct eng_manifest_edit *e)
{
        uint8_t p[4096];

        cr_assert(le(sz, eng_manifest_edit_size(e), sizeof(p)));
        eng_manifest_edit_encode(p, e);
        fb_record(fb, ENG_MANIFEST_RECORD_EDIT, p, eng_manifest_edit_size(e));
}

static void fb_sync(struct fbuf *fb)
{
        fb->synced = fb->len;
}

/* Recomputes the header checksum of the record at off after a forged field. */
static void reseal(struct fbuf *fb, size_t off)
{
        uint8_t *h = fb->buf + off;

        le64_put(h, checksum64(h + 8, ENG_MANIFEST_RECORD_HEADER_BYTES - 8, fb->salt));
}

/* Reseals the record at off after forging its payload too. */
static void reseal_payload(struct fbuf *fb, size_t off)
{
        uint8_t *h = fb->buf + off;

        le64_put(h + 24, checksum64(h + ENG_MANIFEST_RECORD_HEADER_BYTES, le32_get(h + 8), fb->salt));
        reseal(fb, off);
}

/* The edits used by the file tests, on top of manifest_sample_state. e1
 * makes T1's entry, [SAMPLE_TABLE, SAMPLE_TABLE|"a"), with its first
 * table and flushed seq. */
static const uint8_t t1_keys[] = { 0, 0, 0, SAMPLE_TABLE, 0, 0, 0, SAMPLE_TABLE, 'a' };
static const struct eng_manifest_tablet e1_new[] = {
        { .id = T1, .table = SAMPLE_TABLE, .start = t1_keys, .start_len = 4, .end = t1_keys + 4,
          .end_len = 5 },
};
static const struct eng_manifest_table e1_added[] = {
        { .tablet = T1, .file_id = 9, .file_size = 4096, .min_seq = 1, .max_seq = 300 },
};
static const uint32_t e1_tablets[] = { T1 };
static const uint64_t e1_seqs[] = { 300 };
static const struct eng_manifest_edit e1 = { .new_tablets = e1_new, .n_new_tablets = 1,
                                             .added = e1_added, .n_added = 1, .flushed_tablets = e1_tablets,
                                             .flushed_seqs = e1_seqs, .n_flushed = 1, .log_segment = 18 };
static const struct eng_manifest_table e2_removed[] = {
        { .tablet = T0, .file_id = 3 },
        { .tablet = T0, .file_id = 8 },
};
static const struct eng_manifest_table e2_added[] = {
        { .tablet = T0, .file_id = 11, .file_size = 16384, .min_seq = 1, .max_seq = 200 },
};
static const struct eng_manifest_edit e2 = { .added = e2_added, .n_added = 1, .removed = e2_removed,
                                             .n_removed = 2, .next_file_id = 12 };
static const uint32_t e3_tablets[] = { T2 };
static const uint64_t e3_seqs[] = { 50 };
static const struct eng_manifest_edit e3 = { .flushed_tablets = e3_tablets, .flushed_seqs = e3_seqs,
                                             .n_flushed = 1 };

/* The sample state with the first n of e1, e2, e3 applied. */
static void expected_state(struct eng_manifest_state *s, unsigned n)
{
        const struct eng_manifest_edit *all[] = { &e1, &e2, &e3 };

        manifest_sample_state(s);
        for (unsigned i = 0; i < n; i++)
                cr_assert(eq(int, eng_manifest_state_apply(s, all[i]), 0), "edit %u", i + 1);
}

/* Header, snapshot, then e1, e2, e3, each written and synced on its own. */
static void fb_sample(struct fbuf *fb)
{
        struct eng_manifest_state s;

        manifest_sample_state(&s);
        fb_init(fb, SALT);
        fb_snapshot(fb, &s);
        fb_sync(fb);
        fb_edit(fb, &e1);
        fb_sync(fb);
        fb_edit(fb, &e2);
        fb_sync(fb);
        fb_edit(fb, &e3);
        fb_sync(fb);
        eng_manifest_state_fini(&s);
}

/* Reads fb; on success checks the result against the first want_edits
 * edits and frees it. Returns read's result; *r says where it stopped. */
static int read_expect(const struct fbuf *fb, size_t len, unsigned want_edits,
                       struct eng_manifest_reader *r)
{
        struct eng_manifest_state got, want;
        int rc = eng_manifest_read(r, fb->buf, len, &got);

        if (rc < 0)
                return rc;
        expected_state(&want, want_edits);
        cr_expect(manifest_state_is_equal(&got, &want), "state differs from %u edits applied", want_edits);
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&want);
        return 0;
}

/* Expects reading the first len bytes of fb to fail with want, at bad_off
 * (SIZE_MAX: anywhere). */
static void expect_read_fails(const struct fbuf *fb, size_t len, int want, size_t bad_off,
                              const char *what)
{
        struct eng_manifest_reader r;
        struct eng_manifest_state s;

        cr_expect(eq(int, eng_manifest_read(&r, fb->buf, len, &s), want), "%s", what);
        if (bad_off != SIZE_MAX)
                cr_expect(eq(sz, r.bad_off, bad_off), "%s", what);
}

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

/* ---- whole files ---- */

Test(manifest_format, a_file_reads_back_to_the_state_its_records_describe)
{
        struct eng_manifest_reader r;
        struct fbuf fb;

        fb_sample(&fb);
        cr_assert(eq(int, read_expect(&fb, fb.len, 3, &r), 0));
        cr_expect(eq(sz, r.off, fb.len));
        cr_expect(eq(int, r.torn, false));
        cr_expect(eq(u64, r.salt, SALT));
}

Test(manifest_format, zeros_after_the_last_record_are_a_clean_end)
{
        struct eng_manifest_reader r;
        struct fbuf fb;

        fb_sample(&fb);
        cr_assert(eq(int, read_expect(&fb, fb.len + 4096, 3, &r), 0));
        cr_expect(eq(sz, r.off, fb.len));
        cr_expect(eq(int, r.torn, false));
}

Test(manifest_format, a_truncated_tail_is_cut_at_every_length)
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

Test(manifest_format, a_torn_last_record_is_cut)
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
Test(manifest_format, damage_in_the_last_edit_before_a_sync_mark_is_corruption)
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

Test(manifest_format, a_mark_with_a_payload_is_corruption)
{
        struct fbuf fb;
        uint8_t one = 1;

        fb_sample(&fb);
        fb_record(&fb, ENG_MANIFEST_RECORD_MARK, &one, 1);
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[4], "a mark with a payload");
}

Test(manifest_format, a_torn_write_whose_later_record_survived_is_a_tail_not_corruption)
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

Test(manifest_format, damage_in_a_record_a_later_one_says_was_durable_is_corruption)
{
        struct fbuf fb;

        fb_sample(&fb);
        fb.buf[fb.rec_off[2] + ENG_MANIFEST_RECORD_HEADER_BYTES] ^= 0x01;      /* payload checksum fails */
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[2], "");
        fb_sample(&fb);
        fb.buf[fb.rec_off[1] + 3] ^= 0x01;                                     /* header checksum fails */
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[1], "");
}

Test(manifest_format, a_damaged_snapshot_is_corruption_even_at_the_end)
{
        struct fbuf fb;

        fb_sample(&fb);
        fb.buf[fb.rec_off[0] + ENG_MANIFEST_RECORD_HEADER_BYTES + 5] ^= 0x10;
        /* The snapshot is synced before the file is published: never a torn tail. */
        expect_read_fails(&fb, fb.rec_off[1], -SCREE_ECORRUPT, ENG_MANIFEST_HEADER_BYTES, "damaged");
        expect_read_fails(&fb, ENG_MANIFEST_HEADER_BYTES, -SCREE_ECORRUPT, ENG_MANIFEST_HEADER_BYTES,
                          "a header alone");
}

Test(manifest_format, bad_lengths_are_corruption)
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

Test(manifest_format, unknown_record_types_and_misplaced_snapshots_are_corruption)
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

Test(manifest_format, an_edit_that_does_not_apply_is_corruption)
{
        static const struct eng_manifest_table gone[] = { { .tablet = T0, .file_id = 3 } };
        struct eng_manifest_edit again = { .removed = gone, .n_removed = 1 };
        struct fbuf fb;

        fb_sample(&fb);
        fb_edit(&fb, &again);   /* e2 removed table 3 already */
        expect_read_fails(&fb, fb.len, -SCREE_ECORRUPT, fb.rec_off[4], "");
}

Test(manifest_format, bad_headers_are_refused)
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

Test(manifest_format, records_of_another_file_never_verify)
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

Test(manifest_format, a_version_1_file_reads_with_catalog_ids)
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

Test(manifest_format, version_1_payloads_decode_with_the_files_layout)
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

Test(manifest_format, a_version_1_layout_or_tablet_number_outside_the_static_map_is_corrupt)
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

Test(manifest_format, a_version_1_edit_that_does_not_convert_is_corruption_at_its_record)
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
Test(manifest_format, a_version_1_tail_cut_in_its_padding_is_whole)
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

Test(manifest_format, files_are_written_as_version_3)
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
