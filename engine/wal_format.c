/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log format: encode, decode, and the reader's end-of-log analysis.
 * See wal_format.h for the model and docs/format/wal.md for the bytes.
 *
 * Record header (40 bytes, little-endian):
 *   0 header_checksum  u64  checksum64(bytes 8..39, seed = segment id)
 *   8 length           u32  payload bytes
 *  12 type             u8
 *  13 flags            u8   0
 *  14 reserved         u16  0
 *  16 seq              u64
 *  24 synced_upto      u64  segment offset known durable when this was written
 *  32 payload_checksum u64  checksum64(payload, seed = segment id)
 */
#include <string.h>

#include <scree/scree_errors.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "engine/wal_format.h"

#define SEG_MAGIC_OFF 0
#define SEG_VERSION_OFF 8
#define SEG_SHARD_OFF 12
#define SEG_ID_OFF 16
#define SEG_CHECKSUM_OFF 24
#define SEG_CHECKED_BYTES 24

#define REC_CHECKSUM_OFF 0
#define REC_LENGTH_OFF 8
#define REC_TYPE_OFF 12
#define REC_FLAGS_OFF 13
#define REC_RESERVED_OFF 14
#define REC_SEQ_OFF 16
#define REC_SYNCED_OFF 24
#define REC_PAYLOAD_CHECKSUM_OFF 32

_Static_assert(REC_PAYLOAD_CHECKSUM_OFF + 8 == ENG_WAL_RECORD_HEADER_BYTES, "record header size");
_Static_assert(SEG_CHECKSUM_OFF + 8 <= ENG_WAL_SEGMENT_HEADER_BYTES, "segment header size");

void eng_wal_segment_header_encode(void *dst, uint32_t shard, uint64_t segment)
{
        uint8_t *p = dst;

        memset(p, 0, ENG_WAL_SEGMENT_HEADER_BYTES);
        memcpy(p + SEG_MAGIC_OFF, ENG_WAL_MAGIC, 8);
        le32_put(p + SEG_VERSION_OFF, ENG_WAL_VERSION);
        le32_put(p + SEG_SHARD_OFF, shard);
        le64_put(p + SEG_ID_OFF, segment);
        le64_put(p + SEG_CHECKSUM_OFF, checksum64(p, SEG_CHECKED_BYTES, 0));
}

int eng_wal_segment_header_decode(const void *src, size_t len, struct eng_wal_segment_info *ret)
{
        const uint8_t *p = src;

        if (len < ENG_WAL_SEGMENT_HEADER_BYTES || memcmp(p + SEG_MAGIC_OFF, ENG_WAL_MAGIC, 8) != 0)
                return -SCREE_ECORRUPT;
        if (le64_get(p + SEG_CHECKSUM_OFF) != checksum64(p, SEG_CHECKED_BYTES, 0))
                return -SCREE_ECORRUPT;
        if (le32_get(p + SEG_VERSION_OFF) < ENG_WAL_VERSION_MIN ||
            le32_get(p + SEG_VERSION_OFF) > ENG_WAL_VERSION)
                return -SCREE_ECORRUPT;
        ret->version = le32_get(p + SEG_VERSION_OFF);
        ret->shard = le32_get(p + SEG_SHARD_OFF);
        ret->segment = le64_get(p + SEG_ID_OFF);
        return 0;
}

size_t eng_wal_record_encode(void *dst, uint64_t segment, enum eng_wal_record_type type,
                             uint64_t seq, uint64_t synced_upto, const void *payload, uint32_t len)
{
        uint8_t *p = dst;
        size_t total = eng_wal_record_size(len);

        le32_put(p + REC_LENGTH_OFF, len);
        p[REC_TYPE_OFF] = (uint8_t)type;
        p[REC_FLAGS_OFF] = 0;
        le16_put(p + REC_RESERVED_OFF, 0);
        le64_put(p + REC_SEQ_OFF, seq);
        le64_put(p + REC_SYNCED_OFF, synced_upto);
        le64_put(p + REC_PAYLOAD_CHECKSUM_OFF, checksum64(payload, len, segment));
        le64_put(p + REC_CHECKSUM_OFF,
                 checksum64(p + REC_LENGTH_OFF, ENG_WAL_RECORD_HEADER_BYTES - REC_LENGTH_OFF, segment));
        if (len)
                memcpy(p + ENG_WAL_RECORD_HEADER_BYTES, payload, len);
        memset(p + ENG_WAL_RECORD_HEADER_BYTES + len, 0, total - ENG_WAL_RECORD_HEADER_BYTES - len);
        return total;
}

void eng_wal_reader_init(struct eng_wal_reader *r, const void *buf, size_t len, uint64_t segment)
{
        memset(r, 0, sizeof(*r));
        r->buf = buf;
        r->len = len;
        r->segment = segment;
        r->off = ENG_WAL_SEGMENT_HEADER_BYTES;
}

enum rec_state {
        REC_OK,
        REC_NONE,       /* no header here: zeros, or bytes that do not verify */
        REC_CUT,        /* header verifies but the payload runs past the buffer */
        REC_BAD,        /* header verifies, payload does not */
};

/* Classifies the bytes at off as a record of this segment. */
static enum rec_state rec_at(const struct eng_wal_reader *r, size_t off, struct eng_wal_record *ret)
{
        const uint8_t *h = r->buf + off;
        uint32_t len;

        if (r->len - off < ENG_WAL_RECORD_HEADER_BYTES)
                return REC_NONE;
        if (le64_get(h + REC_CHECKSUM_OFF) !=
            checksum64(h + REC_LENGTH_OFF, ENG_WAL_RECORD_HEADER_BYTES - REC_LENGTH_OFF, r->segment))
                return REC_NONE;
        len = le32_get(h + REC_LENGTH_OFF);     /* trusted from here on */
        if (len > r->len - off - ENG_WAL_RECORD_HEADER_BYTES)
                return REC_CUT;
        if (le64_get(h + REC_PAYLOAD_CHECKSUM_OFF) !=
            checksum64(h + ENG_WAL_RECORD_HEADER_BYTES, len, r->segment))
                return REC_BAD;
        ret->type = (enum eng_wal_record_type)h[REC_TYPE_OFF];
        ret->seq = le64_get(h + REC_SEQ_OFF);
        ret->synced_upto = le64_get(h + REC_SYNCED_OFF);
        ret->payload = h + ENG_WAL_RECORD_HEADER_BYTES;
        ret->len = len;
        ret->offset = off;
        return REC_OK;
}

/* Finds the next valid record of this segment after off with seq above
 * min_seq. Returns its offset and *ret, or 0 if there is none. */
static size_t next_valid_after(const struct eng_wal_reader *r, size_t off, uint64_t min_seq,
                               struct eng_wal_record *ret)
{
        for (size_t o = off + ENG_WAL_RECORD_ALIGN; o + ENG_WAL_RECORD_HEADER_BYTES <= r->len;
             o += ENG_WAL_RECORD_ALIGN)
                if (rec_at(r, o, ret) == REC_OK && ret->seq > min_seq)
                        return o;
        return 0;
}

/*
 * The log stops at r->off. If any later valid record says the bytes at
 * r->off were already durable when it was written, they were damaged after
 * being synced: corruption. Otherwise they belong to writes never synced (a
 * write torn by a power cut may persist later blocks but not earlier ones),
 * so this is the end of the log, cut here.
 *
 * Every later record is asked, not just the next one: records written in
 * the same group commit as the damaged one cannot vouch for it (their
 * synced_upto predates the group), but those of a later group can.
 */
static int end_or_damage(struct eng_wal_reader *r, bool torn)
{
        struct eng_wal_record later;
        size_t o = r->off;

        while ((o = next_valid_after(r, o, r->last_seq, &later)) != 0) {
                if (later.synced_upto > r->off) {
                        r->bad_off = r->off;
                        r->bad_kind = ENG_WAL_DAMAGE_DURABLE;
                        return -SCREE_ECORRUPT;
                }
        }
        r->torn = torn;
        return 0;
}

static bool is_zero(const uint8_t *p, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (p[i])
                        return false;
        return true;
}

/* Checks a verifying record's type and seq against the records before it.
 * Returns 0, or -SCREE_ECORRUPT with r->bad_off and r->bad_kind set. */
static int check_record(struct eng_wal_reader *r, const struct eng_wal_record *rec)
{
        bool mark = rec->type == ENG_WAL_RECORD_MARK;

        if (rec->type <= ENG_WAL_RECORD_TYPE_INVALID || rec->type >= ENG_WAL_RECORD_TYPE_MAX ||
            (mark && rec->len != 0)) {
                r->bad_off = r->off;
                r->bad_kind = ENG_WAL_DAMAGE_TYPE;
                return -SCREE_ECORRUPT;
        }
        /* A mark repeats the seq of the batch before it; after a skipped
         * damaged batch it is above the last one read. */
        if (r->last_seq && (mark ? rec->seq < r->last_seq : rec->seq <= r->last_seq)) {
                r->bad_off = r->off;
                r->bad_kind = ENG_WAL_DAMAGE_SEQ;
                return -SCREE_ECORRUPT;
        }
        return 0;
}

int eng_wal_reader_next(struct eng_wal_reader *r, struct eng_wal_record *ret)
{
        struct eng_wal_record rec;
        int rc;

        for (;;) {
                if (r->off >= r->len)
                        return 0;
                switch (rec_at(r, r->off, &rec)) {
                case REC_NONE:
                        /* Zeros: the preallocated rest of the segment. Anything else
                         * that does not verify is a torn header, stale bytes of a
                         * recycled segment, or damage if a valid record follows. */
                        return end_or_damage(r, !is_zero(r->buf + r->off,
                                                         r->len - r->off < ENG_WAL_RECORD_HEADER_BYTES
                                                                 ? r->len - r->off
                                                                 : ENG_WAL_RECORD_HEADER_BYTES));
                case REC_CUT:
                case REC_BAD:
                        return end_or_damage(r, true);
                case REC_OK:
                        break;
                }
                rc = check_record(r, &rec);
                if (rc < 0)
                        return rc;
                r->off += eng_wal_record_size(rec.len);
                if (rec.type == ENG_WAL_RECORD_MARK) {
                        r->mark_off = rec.offset;
                        continue;
                }
                r->last_seq = rec.seq;
                *ret = rec;
                return 1;
        }
}

int eng_wal_reader_skip_damage(struct eng_wal_reader *r)
{
        struct eng_wal_record rec;
        size_t o = next_valid_after(r, r->bad_off, r->last_seq, &rec);

        if (o == 0)
                return 0;
        r->off = o;
        return 1;
}
