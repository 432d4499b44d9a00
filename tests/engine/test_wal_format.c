/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log format (engine/wal_format.h) failure modes, on segments built in
 * memory: round trip, segment header damage, truncated tail, torn record,
 * bad checksum in the middle (and salvage past it), a torn unsynced write
 * whose later blocks survived, bad length, unknown record type, seq going
 * backwards, zeros and recycled-segment leftovers after the end; sync
 * marks: skipped, checked, and what makes damage to the last group of the
 * log corruption rather than a torn tail (issue 23).
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "engine/wal_format.h"

TestSuite(wal_format, .timeout = 20);

#define SEG_BYTES (256u * 1024u)
#define MAX_RECS 64

/* A segment under construction: every record's offset, and where it ends. */
struct seg {
        uint8_t *buf;
        uint64_t id;
        size_t end;
        size_t off[MAX_RECS];
        unsigned n;
};

static void seg_init(struct seg *s, uint64_t id)
{
        s->buf = calloc(1, SEG_BYTES);
        cr_assert(not(eq(ptr, s->buf, NULL)));
        s->id = id;
        s->n = 0;
        eng_wal_segment_header_encode(s->buf, 3, id);
        s->end = ENG_WAL_SEGMENT_HEADER_BYTES;
}

/* Payload of record i: deterministic bytes of a length that varies. */
static uint32_t payload_len(unsigned i)
{
        return (i * 379u) % 3000u;
}

static void payload_fill(uint8_t *p, unsigned i)
{
        for (uint32_t k = 0; k < payload_len(i); k++)
                p[k] = (uint8_t)(i * 31u + k);
}

/* Appends record i with seq 100+i, claiming durability up to synced_upto. */
static void seg_add(struct seg *s, uint64_t synced_upto)
{
        uint8_t payload[3000];
        unsigned i = s->n;

        payload_fill(payload, i);
        s->off[s->n++] = s->end;
        s->end += eng_wal_record_encode(s->buf + s->end, s->id, ENG_WAL_RECORD_BATCH, 100 + i,
                                        synced_upto, payload, payload_len(i));
}

/* n records, each written after the previous one was synced. */
static void seg_add_synced(struct seg *s, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                seg_add(s, s->end);
}

/* Recomputes a record header's checksum after a test forged a field, so
 * that only the forged field is wrong. */
static void reseal(uint8_t *h, uint64_t segment)
{
        le64_put(h, checksum64(h + 8, ENG_WAL_RECORD_HEADER_BYTES - 8, segment));
}

static void expect_record(const struct eng_wal_record *rec, unsigned i)
{
        uint8_t want[3000];

        payload_fill(want, i);
        cr_assert(eq(u64, rec->seq, 100 + i));
        cr_assert(eq(u32, rec->len, payload_len(i)));
        cr_assert(eq(int, memcmp(rec->payload, want, rec->len), 0), "payload %u differs", i);
}

/* Reads records 0..n-1 in order, then returns what the next call returned. */
static int read_expect(struct eng_wal_reader *r, unsigned n)
{
        struct eng_wal_record rec;
        int ret;

        for (unsigned i = 0; i < n; i++) {
                cr_assert(eq(int, eng_wal_reader_next(r, &rec), 1), "record %u missing", i);
                expect_record(&rec, i);
        }
        ret = eng_wal_reader_next(r, &rec);
        cr_assert(le(int, ret, 0), "an extra record was returned");
        return ret;
}

Test(wal_format, records_round_trip_and_zeros_are_a_clean_end)
{
        struct seg s;
        struct eng_wal_reader r;
        struct eng_wal_segment_info info;

        seg_init(&s, 42);
        seg_add_synced(&s, 40);
        cr_assert(eq(int, eng_wal_segment_header_decode(s.buf, SEG_BYTES, &info), 0));
        cr_expect(eq(u64, info.segment, 42));
        cr_expect(eq(u32, info.shard, 3));
        cr_expect(eq(u32, info.version, ENG_WAL_VERSION));
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 42);
        cr_assert(eq(int, read_expect(&r, 40), 0));
        cr_expect(not(r.torn), "zeros after the last record are a clean end");
        cr_expect(eq(u64, r.off, s.end), "appends must continue right after the last record");
        free(s.buf);
}

Test(wal_format, damaged_segment_headers_are_rejected)
{
        struct seg s;
        struct eng_wal_segment_info info = { .segment = 77 };

        seg_init(&s, 5);
        cr_expect(eq(int, eng_wal_segment_header_decode(s.buf, 100, &info), -SCREE_ECORRUPT), "short");
        s.buf[0] ^= 1;
        cr_expect(eq(int, eng_wal_segment_header_decode(s.buf, SEG_BYTES, &info), -SCREE_ECORRUPT), "magic");
        s.buf[0] ^= 1;
        s.buf[17] ^= 0x40;
        cr_expect(eq(int, eng_wal_segment_header_decode(s.buf, SEG_BYTES, &info), -SCREE_ECORRUPT), "checksum");
        s.buf[17] ^= 0x40;
        le32_put(s.buf + 8, 99);        /* a future version, checksum made valid */
        le64_put(s.buf + 24, checksum64(s.buf, 24, 0));
        cr_expect(eq(int, eng_wal_segment_header_decode(s.buf, SEG_BYTES, &info), -SCREE_ECORRUPT), "version");
        cr_expect(eq(u64, info.segment, 77), "output written on failure");
        free(s.buf);
}

Test(wal_format, truncated_tail_is_cut_at_the_last_whole_record)
{
        struct seg s;
        struct eng_wal_reader r;

        seg_init(&s, 9);
        seg_add_synced(&s, 10);
        /* The file ends inside the last record's payload... */
        eng_wal_reader_init(&r, s.buf, s.off[9] + ENG_WAL_RECORD_HEADER_BYTES + 5, 9);
        cr_assert(eq(int, read_expect(&r, 9), 0));
        cr_expect(r.torn);
        cr_expect(eq(u64, r.off, s.off[9]));
        /* ...or inside its header. */
        eng_wal_reader_init(&r, s.buf, s.off[9] + 11, 9);
        cr_assert(eq(int, read_expect(&r, 9), 0));
        cr_expect(r.torn);
        cr_expect(eq(u64, r.off, s.off[9]));
        free(s.buf);
}

Test(wal_format, half_written_last_record_is_a_torn_tail)
{
        struct seg s;
        struct eng_wal_reader r;

        seg_init(&s, 9);
        seg_add_synced(&s, 12);
        /* The power cut left the second half of the last payload unwritten. */
        memset(s.buf + s.off[11] + ENG_WAL_RECORD_HEADER_BYTES + payload_len(11) / 2, 0,
               payload_len(11) / 2 + 1);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 9);
        cr_assert(eq(int, read_expect(&r, 11), 0));
        cr_expect(r.torn);
        cr_expect(eq(u64, r.off, s.off[11]));
        free(s.buf);
}

Test(wal_format, bad_checksum_in_synced_data_is_corruption_and_salvage_skips_it)
{
        struct seg s;
        struct eng_wal_reader r;
        struct eng_wal_record rec;

        seg_init(&s, 11);
        seg_add_synced(&s, 10);
        s.buf[s.off[3] + ENG_WAL_RECORD_HEADER_BYTES + 1] ^= 0x10;      /* bit rot in record 3 */
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 11);
        cr_assert(eq(int, read_expect(&r, 3), -SCREE_ECORRUPT));
        cr_expect(eq(u64, r.bad_off, s.off[3]));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_DURABLE));
        /* Salvage goes on with record 4. */
        cr_assert(eq(int, eng_wal_reader_skip_damage(&r), 1));
        for (unsigned i = 4; i < 10; i++) {
                cr_assert(eq(int, eng_wal_reader_next(&r, &rec), 1));
                expect_record(&rec, i);
        }
        cr_expect(eq(int, eng_wal_reader_next(&r, &rec), 0));
        free(s.buf);
}

/* Regression: the reader asked only the first valid record after the damage
 * whether the damaged bytes were durable. A record of the same group commit
 * cannot say so, and bit rot in a synced group read as a torn tail, so
 * recovery would have cut every acknowledged record after it. */
Test(wal_format, damage_vouched_for_by_a_later_group_not_the_next_record_is_corruption)
{
        struct seg s;
        struct eng_wal_reader r;
        size_t group;

        seg_init(&s, 17);
        group = s.end;
        for (unsigned i = 0; i < 3; i++)        /* one group commit: records 0..2 */
                seg_add(&s, group);
        group = s.end;
        for (unsigned i = 0; i < 3; i++)        /* the next, after 0..2 were synced */
                seg_add(&s, group);
        s.buf[s.off[1] + ENG_WAL_RECORD_HEADER_BYTES + 1] ^= 0x10;
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 17);
        cr_assert(eq(int, read_expect(&r, 1), -SCREE_ECORRUPT), "record 3 says 1 was durable");
        cr_expect(eq(u64, r.bad_off, s.off[1]));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_DURABLE));
        /* Damage in the last group, which nothing later vouches for, is a tail. */
        s.buf[s.off[1] + ENG_WAL_RECORD_HEADER_BYTES + 1] ^= 0x10;
        s.buf[s.off[4] + ENG_WAL_RECORD_HEADER_BYTES + 1] ^= 0x10;
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 17);
        cr_assert(eq(int, read_expect(&r, 4), 0));
        cr_expect(r.torn);
        cr_expect(eq(u64, r.off, s.off[4]));
        free(s.buf);
}

Test(wal_format, a_torn_unsynced_write_with_later_blocks_intact_is_a_tail_not_corruption)
{
        struct seg s;
        struct eng_wal_reader r;
        size_t durable;

        seg_init(&s, 12);
        seg_add_synced(&s, 5);
        durable = s.end;
        /* Records 5..9 went out in one write that was never synced... */
        for (unsigned i = 0; i < 5; i++)
                seg_add(&s, durable);
        /* ...and the cut tore record 6 while 7..9 reached the disk. */
        memset(s.buf + s.off[6] + 4, 0xee, 8);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 12);
        cr_assert(eq(int, read_expect(&r, 6), 0), "unsynced damage must not stop recovery");
        cr_expect(r.torn);
        cr_expect(eq(u64, r.off, s.off[6]));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_INVALID));
        free(s.buf);
}

Test(wal_format, bad_length_is_caught_by_the_header_checksum)
{
        struct seg s;
        struct eng_wal_reader r;

        seg_init(&s, 13);
        seg_add_synced(&s, 8);
        le32_put(s.buf + s.off[2] + 8, 0x7fffffff);    /* length only: header checksum fails */
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 13);
        cr_assert(eq(int, read_expect(&r, 2), -SCREE_ECORRUPT));
        cr_expect(eq(u64, r.bad_off, s.off[2]));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_DURABLE));
        free(s.buf);
}

Test(wal_format, a_length_past_the_end_with_a_valid_checksum_is_never_trusted)
{
        struct seg s;
        struct eng_wal_reader r;
        uint8_t *h;

        seg_init(&s, 14);
        seg_add_synced(&s, 8);
        h = s.buf + s.off[2];
        le32_put(h + 8, 0x7fffffff);    /* forged: header checksum recomputed */
        reseal(h, 14);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 14);
        cr_assert(eq(int, read_expect(&r, 2), -SCREE_ECORRUPT), "synced records follow it");
        cr_expect(eq(u64, r.bad_off, s.off[2]));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_DURABLE));
        free(s.buf);
}

Test(wal_format, unknown_record_type_is_corruption)
{
        struct seg s;
        struct eng_wal_reader r;
        uint8_t *h;

        seg_init(&s, 15);
        seg_add_synced(&s, 4);
        h = s.buf + s.off[1];
        h[12] = 200;
        reseal(h, 15);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 15);
        cr_assert(eq(int, read_expect(&r, 1), -SCREE_ECORRUPT));
        cr_expect(eq(u64, r.bad_off, s.off[1]));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_TYPE));
        free(s.buf);
}

Test(wal_format, seq_going_backwards_is_corruption)
{
        struct seg s;
        struct eng_wal_reader r;
        struct eng_wal_record rec;
        uint8_t p[8] = { 0 };

        seg_init(&s, 16);
        s.off[0] = s.end;
        s.end += eng_wal_record_encode(s.buf + s.end, 16, ENG_WAL_RECORD_BATCH, 50, s.end, p, 8);
        s.off[1] = s.end;
        s.end += eng_wal_record_encode(s.buf + s.end, 16, ENG_WAL_RECORD_BATCH, 49, s.end, p, 8);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 16);
        cr_assert(eq(int, eng_wal_reader_next(&r, &rec), 1));
        cr_expect(eq(int, eng_wal_reader_next(&r, &rec), -SCREE_ECORRUPT));
        cr_expect(eq(u64, r.bad_off, s.off[1]));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_SEQ));
        free(s.buf);
}

Test(wal_format, leftovers_of_a_recycled_segment_read_as_the_end)
{
        struct seg old, s;
        struct eng_wal_reader r;

        /* Segment 20 filled the file; it is recycled as segment 21, which
         * has written only three records over the old bytes so far. */
        seg_init(&old, 20);
        seg_add_synced(&old, 40);
        s = old;
        s.id = 21;
        s.n = 0;
        eng_wal_segment_header_encode(s.buf, 3, 21);
        s.end = ENG_WAL_SEGMENT_HEADER_BYTES;
        seg_add_synced(&s, 3);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 21);
        cr_assert(eq(int, read_expect(&r, 3), 0), "old records must not be mistaken for new ones");
        cr_expect(eq(u64, r.off, s.end));
        free(s.buf);
}

/* ---- sync marks (issue 23) ---- */

/* Appends the sync mark the writer leaves behind its last record once that
 * record's group is durable: seq of the last batch, synced_upto its own
 * offset. Returns the mark's offset. */
static size_t seg_mark(struct seg *s)
{
        size_t at = s->end;

        s->end += eng_wal_record_encode(s->buf + at, s->id, ENG_WAL_RECORD_MARK, 100 + s->n - 1, at,
                                        NULL, 0);
        return at;
}

Test(wal_format, a_sync_mark_is_skipped_and_the_log_ends_cleanly_after_it)
{
        struct seg s;
        struct eng_wal_reader r;
        size_t mark;

        seg_init(&s, 21);
        seg_add_synced(&s, 6);
        mark = seg_mark(&s);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 21);
        cr_assert(eq(int, read_expect(&r, 6), 0));
        cr_expect(not(r.torn));
        cr_expect(eq(u64, r.mark_off, mark));
        cr_expect(eq(u64, r.off, mark + ENG_WAL_RECORD_HEADER_BYTES));
        free(s.buf);
}

/* Regression (issue 23): bit rot in the last record of the log, synced and
 * acknowledged, read as a torn tail and recovery cut it without a word.
 * The writer's sync mark behind it says it was durable: corruption. */
Test(wal_format, damage_in_the_last_record_before_a_sync_mark_is_corruption)
{
        struct seg s;
        struct eng_wal_reader r;
        struct eng_wal_record rec;

        seg_init(&s, 22);
        seg_add_synced(&s, 5);
        seg_mark(&s);
        s.buf[s.off[4] + ENG_WAL_RECORD_HEADER_BYTES + 1] ^= 0x10;
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 22);
        cr_assert(eq(int, read_expect(&r, 4), -SCREE_ECORRUPT));
        cr_expect(eq(u64, r.bad_off, s.off[4]));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_DURABLE));
        cr_expect(eq(int, eng_wal_reader_skip_damage(&r), 1), "salvage resumes at the mark");
        cr_expect(eq(int, eng_wal_reader_next(&r, &rec), 0));
        cr_expect(not(r.torn));
        /* A damaged header (length unknown) and a header gone to zeros too. */
        s.buf[s.off[4] + ENG_WAL_RECORD_HEADER_BYTES + 1] ^= 0x10;
        s.buf[s.off[4] + 9] ^= 0x01;
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 22);
        cr_assert(eq(int, read_expect(&r, 4), -SCREE_ECORRUPT));
        cr_expect(eq(u64, r.bad_off, s.off[4]));
        memset(s.buf + s.off[4], 0, ENG_WAL_RECORD_HEADER_BYTES);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 22);
        cr_assert(eq(int, read_expect(&r, 4), -SCREE_ECORRUPT));
        cr_expect(eq(u64, r.bad_off, s.off[4]));
        free(s.buf);
}

/* The next group commit is written over the mark. Torn, it leaves a record
 * that does not verify where the mark was, and nothing after it claims it
 * durable: a torn tail, as before marks. */
Test(wal_format, a_torn_group_written_over_a_sync_mark_is_a_tail)
{
        struct seg s;
        struct eng_wal_reader r;
        size_t durable;

        seg_init(&s, 23);
        seg_add_synced(&s, 5);
        durable = s.end;
        seg_mark(&s);
        s.end = durable;                        /* the next flush writes from here */
        for (unsigned i = 0; i < 3; i++)
                seg_add(&s, durable);
        memset(s.buf + s.off[6] + ENG_WAL_RECORD_HEADER_BYTES, 0, payload_len(6));
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 23);
        cr_assert(eq(int, read_expect(&r, 6), 0), "an unsynced write must not stop recovery");
        cr_expect(r.torn);
        cr_expect(eq(u64, r.off, s.off[6]));
        /* The mark itself damaged, with nothing after it: a tail of no records. */
        free(s.buf);
        seg_init(&s, 24);
        seg_add_synced(&s, 5);
        durable = seg_mark(&s);
        s.buf[durable + 20] ^= 0x01;
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 24);
        cr_assert(eq(int, read_expect(&r, 5), 0));
        cr_expect(r.torn);
        cr_expect(eq(u64, r.off, durable));
        free(s.buf);
}

Test(wal_format, a_mark_with_a_payload_or_an_older_seq_is_corruption)
{
        struct seg s;
        struct eng_wal_reader r;
        uint8_t one = 1;
        size_t at;

        seg_init(&s, 25);
        seg_add_synced(&s, 3);
        at = s.end;
        eng_wal_record_encode(s.buf + at, s.id, ENG_WAL_RECORD_MARK, 102, at, &one, 1);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 25);
        cr_assert(eq(int, read_expect(&r, 3), -SCREE_ECORRUPT));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_TYPE));
        memset(s.buf + at, 0, 48);
        eng_wal_record_encode(s.buf + at, s.id, ENG_WAL_RECORD_MARK, 101, at, NULL, 0);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 25);
        cr_assert(eq(int, read_expect(&r, 3), -SCREE_ECORRUPT));
        cr_expect(eq(int, (int)r.bad_kind, ENG_WAL_DAMAGE_SEQ));
        free(s.buf);
}

Test(wal_format, a_version_1_segment_still_reads)
{
        struct seg s;
        struct eng_wal_segment_info info;

        seg_init(&s, 9);
        le32_put(s.buf + 8, 1);         /* a segment from before version 2 */
        le64_put(s.buf + 24, checksum64(s.buf, 24, 0));
        cr_assert(eq(int, eng_wal_segment_header_decode(s.buf, SEG_BYTES, &info), 0));
        cr_expect(eq(u32, info.version, 1));
        le32_put(s.buf + 8, 0);
        le64_put(s.buf + 24, checksum64(s.buf, 24, 0));
        cr_expect(eq(int, eng_wal_segment_header_decode(s.buf, SEG_BYTES, &info), -SCREE_ECORRUPT));
        le32_put(s.buf + 8, ENG_WAL_VERSION + 1);
        le64_put(s.buf + 24, checksum64(s.buf, 24, 0));
        cr_expect(eq(int, eng_wal_segment_header_decode(s.buf, SEG_BYTES, &info), -SCREE_ECORRUPT));
        free(s.buf);
}

Test(wal_format, transaction_records_read_back_in_order)
{
        static const enum eng_wal_record_type types[] = {
                ENG_WAL_RECORD_PREPARE, ENG_WAL_RECORD_DECISION, ENG_WAL_RECORD_COMMIT,
                ENG_WAL_RECORD_ABORT, ENG_WAL_RECORD_FORGET, ENG_WAL_RECORD_BATCH,
        };
        uint8_t p[16] = { 1, 2, 3 };
        struct eng_wal_record rec;
        struct eng_wal_reader r;
        struct seg s;

        seg_init(&s, 30);
        for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++)
                s.end += eng_wal_record_encode(s.buf + s.end, 30, types[i], 10 + i, s.end, p, 8 + i);
        eng_wal_reader_init(&r, s.buf, SEG_BYTES, 30);
        for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
                cr_assert(eq(int, eng_wal_reader_next(&r, &rec), 1));
                cr_expect(eq(int, (int)rec.type, (int)types[i]));
                cr_expect(eq(u64, rec.seq, 10 + i));
                cr_expect(eq(u32, rec.len, 8 + i));
        }
        cr_expect(eq(int, eng_wal_reader_next(&r, &rec), 0));
        cr_expect(not(r.torn));
        free(s.buf);
}
