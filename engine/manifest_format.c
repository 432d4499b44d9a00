/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifest format: states and edits, their payload codecs, the file header,
 * record framing and the reader. See manifest_format.h for the model and
 * docs/format/manifest.md for the bytes. All integers little-endian and
 * fixed-width: a manifest is small and rewritten now and then, and fixed
 * widths make every payload's length exactly checkable against its counts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/checksum.h"
#include "base/endian.h"
#include "engine/manifest_format.h"

/* File header. */
#define HDR_MAGIC_OFF 0
#define HDR_VERSION_OFF 8
#define HDR_RESERVED_OFF 12
#define HDR_SALT_OFF 16
#define HDR_CHECKSUM_OFF 24

/* Record header. */
#define REC_CHECKSUM_OFF 0
#define REC_LENGTH_OFF 8
#define REC_TYPE_OFF 12
#define REC_FLAGS_OFF 13
#define REC_RESERVED_OFF 14
#define REC_SYNCED_OFF 16
#define REC_PAYLOAD_CHECKSUM_OFF 24
#define REC_HDR ENG_MANIFEST_RECORD_HEADER_BYTES
#define HEADER_CHECKED_BYTES (REC_HDR - REC_LENGTH_OFF)    /* what the header checksum covers */

/* Snapshot payload: fixed part, then n_tablets flushed seqs, then tables. */
#define SNAP_SHARD_OFF 0
#define SNAP_N_SHARDS_OFF 4
#define SNAP_TABLETS_PER_SHARD_OFF 8
#define SNAP_N_TABLETS_OFF 12
#define SNAP_NEXT_FILE_ID_OFF 16
#define SNAP_LOG_SEGMENT_OFF 24
#define SNAP_N_TABLES_OFF 32
#define SNAP_RESERVED_OFF 36
#define SNAP_FIXED_BYTES 40

/* Edit payload: fixed part, then added tables, removed and flushed pairs. */
#define EDIT_NEXT_FILE_ID_OFF 0
#define EDIT_LOG_SEGMENT_OFF 8
#define EDIT_N_ADDED_OFF 16
#define EDIT_N_REMOVED_OFF 20
#define EDIT_N_FLUSHED_OFF 24
#define EDIT_RESERVED_OFF 28
#define EDIT_FIXED_BYTES 32

#define TABLE_BYTES 36u                 /* tablet u32, file_id, file_size, min_seq, max_seq */
#define PAIR_BYTES 12u                  /* tablet u32 + u64 (removed: file_id; flushed: seq) */
#define SEQ_BYTES 8u

_Static_assert(HDR_CHECKSUM_OFF + 8 == ENG_MANIFEST_HEADER_BYTES, "file header size");
_Static_assert(REC_PAYLOAD_CHECKSUM_OFF + 8 == ENG_MANIFEST_RECORD_HEADER_BYTES, "record header size");
_Static_assert(ENG_MANIFEST_HEADER_BYTES % ENG_MANIFEST_RECORD_ALIGN == 0, "records start aligned");
_Static_assert(SNAP_RESERVED_OFF + 4 == SNAP_FIXED_BYTES, "snapshot fixed part");
_Static_assert(EDIT_RESERVED_OFF + 4 == EDIT_FIXED_BYTES, "edit fixed part");

/* ---- states ---- */

/* *ret = a malloc'd copy of bytes at p (NULL for 0 bytes). */
static int dup_bytes(void **ret, const void *p, size_t bytes)
{
        void *c;

        if (bytes == 0) {
                *ret = NULL;
                return 0;
        }
        c = malloc(bytes);
        if (!c)
                return -ENOMEM;
        memcpy(c, p, bytes);
        *ret = c;
        return 0;
}

int eng_manifest_state_init(struct eng_manifest_state *s, const struct eng_manifest_layout *layout,
                            uint32_t n_tablets)
{
        uint64_t *seqs = NULL;

        if (n_tablets) {
                seqs = calloc(n_tablets, sizeof(*seqs));
                if (!seqs)
                        return -ENOMEM;
        }
        *s = (struct eng_manifest_state){ .layout = *layout, .n_tablets = n_tablets,
                                          .flushed_seq = seqs };
        return 0;
}

int eng_manifest_state_copy(struct eng_manifest_state *dst, const struct eng_manifest_state *src)
{
        struct eng_manifest_state c = *src;
        void *seqs, *tables;

        if (dup_bytes(&seqs, src->flushed_seq, src->n_tablets * sizeof(*src->flushed_seq)) < 0)
                return -ENOMEM;
        if (dup_bytes(&tables, src->tables, src->n_tables * sizeof(*src->tables)) < 0) {
                free(seqs);
                return -ENOMEM;
        }
        c.flushed_seq = seqs;
        c.tables = tables;
        *dst = c;
        return 0;
}

void eng_manifest_state_fini(struct eng_manifest_state *s)
{
        free(s->flushed_seq);
        free(s->tables);
        memset(s, 0, sizeof(*s));
}

static bool table_fits(const struct eng_manifest_state *s, const struct eng_manifest_table *t)
{
        return t->tablet < s->n_tablets && t->min_seq <= t->max_seq;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return (x > y) - (x < y);
}

int eng_manifest_state_check(const struct eng_manifest_state *s)
{
        uint64_t *ids;
        int r = 0;

        if ((s->n_tablets && !s->flushed_seq) || (s->n_tables && !s->tables))
                return -SCREE_ECORRUPT;
        for (size_t i = 0; i < s->n_tables; i++)
                if (!table_fits(s, &s->tables[i]) || s->tables[i].file_id >= s->next_file_id)
                        return -SCREE_ECORRUPT;
        if (s->n_tables < 2)
                return 0;
        ids = malloc(s->n_tables * sizeof(*ids));
        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_tables; i++)
                ids[i] = s->tables[i].file_id;
        qsort(ids, s->n_tables, sizeof(*ids), cmp_u64);
        for (size_t i = 1; i < s->n_tables && r == 0; i++)
                if (ids[i] == ids[i - 1])
                        r = -SCREE_ECORRUPT;
        free(ids);
        return r;
}

static bool has_table(const struct eng_manifest_state *s, uint32_t tablet, uint64_t file_id)
{
        for (size_t i = 0; i < s->n_tables; i++)
                if (s->tables[i].tablet == tablet && s->tables[i].file_id == file_id)
                        return true;
        return false;
}

static bool has_file_id(const struct eng_manifest_state *s, uint64_t file_id)
{
        for (size_t i = 0; i < s->n_tables; i++)
                if (s->tables[i].file_id == file_id)
                        return true;
        return false;
}

static bool removes(const struct eng_manifest_edit *e, uint32_t upto, const struct eng_manifest_table *t)
{
        for (uint32_t i = 0; i < upto; i++)
                if (e->removed[i].tablet == t->tablet && e->removed[i].file_id == t->file_id)
                        return true;
        return false;
}

static int validate_tables(const struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        for (uint32_t i = 0; i < e->n_removed; i++)
                if (!has_table(s, e->removed[i].tablet, e->removed[i].file_id) ||
                    removes(e, i, &e->removed[i]))
                        return -SCREE_ECORRUPT;
        for (uint32_t i = 0; i < e->n_added; i++) {
                const struct eng_manifest_table *a = &e->added[i];

                if (!table_fits(s, a) || a->file_id == UINT64_MAX || has_file_id(s, a->file_id))
                        return -SCREE_ECORRUPT;
                for (uint32_t j = 0; j < i; j++)
                        if (e->added[j].file_id == a->file_id)
                                return -SCREE_ECORRUPT;
        }
        return 0;
}

static int validate_flushed(const struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        for (uint32_t i = 0; i < e->n_flushed; i++) {
                uint32_t t = e->flushed_tablets[i];

                if (t >= s->n_tablets || e->flushed_seqs[i] < s->flushed_seq[t])
                        return -SCREE_ECORRUPT;
                /* Twice in one edit: applied in order, so it must not go back. */
                for (uint32_t j = 0; j < i; j++)
                        if (e->flushed_tablets[j] == t && e->flushed_seqs[j] > e->flushed_seqs[i])
                                return -SCREE_ECORRUPT;
        }
        return 0;
}

static int validate_edit(const struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        int r;

        if ((e->n_added && !e->added) || (e->n_removed && !e->removed) ||
            (e->n_flushed && (!e->flushed_tablets || !e->flushed_seqs)))
                return -SCREE_ECORRUPT;
        if ((e->next_file_id && e->next_file_id < s->next_file_id) ||
            (e->log_segment && e->log_segment < s->log_segment))
                return -SCREE_ECORRUPT;
        r = validate_tables(s, e);
        return r < 0 ? r : validate_flushed(s, e);
}

int eng_manifest_state_apply(struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        size_t kept = 0;
        int r = validate_edit(s, e);

        if (r < 0)
                return r;
        if (e->n_added) {
                /* Grown first: from here on nothing can fail. */
                size_t n = s->n_tables + e->n_added;
                struct eng_manifest_table *v = realloc(s->tables, n * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                s->tables = v;
        }
        for (size_t i = 0; i < s->n_tables; i++)
                if (!removes(e, e->n_removed, &s->tables[i]))
                        s->tables[kept++] = s->tables[i];
        s->n_tables = kept;
        for (uint32_t i = 0; i < e->n_added; i++) {
                s->tables[s->n_tables++] = e->added[i];
                if (e->added[i].file_id >= s->next_file_id)
                        s->next_file_id = e->added[i].file_id + 1;
        }
        for (uint32_t i = 0; i < e->n_flushed; i++)
                s->flushed_seq[e->flushed_tablets[i]] = e->flushed_seqs[i];
        if (e->next_file_id > s->next_file_id)
                s->next_file_id = e->next_file_id;
        if (e->log_segment > s->log_segment)
                s->log_segment = e->log_segment;
        return 0;
}

/* ---- payloads ---- */

static uint8_t *table_put(uint8_t *p, const struct eng_manifest_table *t)
{
        le32_put(p, t->tablet);
        le64_put(p + 4, t->file_id);
        le64_put(p + 12, t->file_size);
        le64_put(p + 20, t->min_seq);
        le64_put(p + 28, t->max_seq);
        return p + TABLE_BYTES;
}

static const uint8_t *table_get(const uint8_t *p, struct eng_manifest_table *t)
{
        t->tablet = le32_get(p);
        t->file_id = le64_get(p + 4);
        t->file_size = le64_get(p + 12);
        t->min_seq = le64_get(p + 20);
        t->max_seq = le64_get(p + 28);
        return p + TABLE_BYTES;
}

static uint8_t *pair_put(uint8_t *p, uint32_t tablet, uint64_t v)
{
        le32_put(p, tablet);
        le64_put(p + 4, v);
        return p + PAIR_BYTES;
}

size_t eng_manifest_snapshot_size(const struct eng_manifest_state *s)
{
        return SNAP_FIXED_BYTES + (size_t)s->n_tablets * SEQ_BYTES + s->n_tables * TABLE_BYTES;
}

void eng_manifest_snapshot_encode(void *dst, const struct eng_manifest_state *s)
{
        uint8_t *p = dst;

        SCREE_ASSERT(s->n_tables <= UINT32_MAX);
        le32_put(p + SNAP_SHARD_OFF, s->layout.shard);
        le32_put(p + SNAP_N_SHARDS_OFF, s->layout.n_shards);
        le32_put(p + SNAP_TABLETS_PER_SHARD_OFF, s->layout.tablets_per_shard);
        le32_put(p + SNAP_N_TABLETS_OFF, s->n_tablets);
        le64_put(p + SNAP_NEXT_FILE_ID_OFF, s->next_file_id);
        le64_put(p + SNAP_LOG_SEGMENT_OFF, s->log_segment);
        le32_put(p + SNAP_N_TABLES_OFF, (uint32_t)s->n_tables);
        le32_put(p + SNAP_RESERVED_OFF, 0);
        p += SNAP_FIXED_BYTES;
        for (uint32_t i = 0; i < s->n_tablets; i++, p += SEQ_BYTES)
                le64_put(p, s->flushed_seq[i]);
        for (size_t i = 0; i < s->n_tables; i++)
                p = table_put(p, &s->tables[i]);
}

/* Fills s (initialized for its n_tablets, tables allocated) from the
 * variable part of a snapshot payload at p. */
static void snapshot_fill(struct eng_manifest_state *s, const uint8_t *p, uint32_t n_tables)
{
        for (uint32_t i = 0; i < s->n_tablets; i++, p += SEQ_BYTES)
                s->flushed_seq[i] = le64_get(p);
        for (uint32_t i = 0; i < n_tables; i++)
                p = table_get(p, &s->tables[i]);
        s->n_tables = n_tables;
}

int eng_manifest_snapshot_decode(const void *src, size_t len, struct eng_manifest_state *ret)
{
        const uint8_t *p = src;
        struct eng_manifest_layout layout;
        struct eng_manifest_state s;
        uint32_t n_tablets, n_tables;
        int r;

        if (len < SNAP_FIXED_BYTES || le32_get(p + SNAP_RESERVED_OFF) != 0)
                return -SCREE_ECORRUPT;
        n_tablets = le32_get(p + SNAP_N_TABLETS_OFF);
        n_tables = le32_get(p + SNAP_N_TABLES_OFF);
        /* u32 counts times small sizes: no overflow in 64 bits. */
        if ((uint64_t)len !=
            SNAP_FIXED_BYTES + (uint64_t)n_tablets * SEQ_BYTES + (uint64_t)n_tables * TABLE_BYTES)
                return -SCREE_ECORRUPT;
        layout.shard = le32_get(p + SNAP_SHARD_OFF);
        layout.n_shards = le32_get(p + SNAP_N_SHARDS_OFF);
        layout.tablets_per_shard = le32_get(p + SNAP_TABLETS_PER_SHARD_OFF);
        if (eng_manifest_state_init(&s, &layout, n_tablets) < 0)
                return -ENOMEM;
        s.next_file_id = le64_get(p + SNAP_NEXT_FILE_ID_OFF);
        s.log_segment = le64_get(p + SNAP_LOG_SEGMENT_OFF);
        if (n_tables && !(s.tables = malloc((size_t)n_tables * sizeof(*s.tables)))) {
                eng_manifest_state_fini(&s);
                return -ENOMEM;
        }
        snapshot_fill(&s, p + SNAP_FIXED_BYTES, n_tables);
        r = eng_manifest_state_check(&s);
        if (r < 0) {
                eng_manifest_state_fini(&s);
                return r;
        }
        *ret = s;
        return 0;
}

static uint64_t edit_bytes(uint64_t n_added, uint64_t n_removed, uint64_t n_flushed)
{
        return EDIT_FIXED_BYTES + n_added * TABLE_BYTES + (n_removed + n_flushed) * PAIR_BYTES;
}

size_t eng_manifest_edit_size(const struct eng_manifest_edit *e)
{
        return (size_t)edit_bytes(e->n_added, e->n_removed, e->n_flushed);
}

void eng_manifest_edit_encode(void *dst, const struct eng_manifest_edit *e)
{
        uint8_t *p = dst;

        le64_put(p + EDIT_NEXT_FILE_ID_OFF, e->next_file_id);
        le64_put(p + EDIT_LOG_SEGMENT_OFF, e->log_segment);
        le32_put(p + EDIT_N_ADDED_OFF, e->n_added);
        le32_put(p + EDIT_N_REMOVED_OFF, e->n_removed);
        le32_put(p + EDIT_N_FLUSHED_OFF, e->n_flushed);
        le32_put(p + EDIT_RESERVED_OFF, 0);
        p += EDIT_FIXED_BYTES;
        for (uint32_t i = 0; i < e->n_added; i++)
                p = table_put(p, &e->added[i]);
        for (uint32_t i = 0; i < e->n_removed; i++)
                p = pair_put(p, e->removed[i].tablet, e->removed[i].file_id);
        for (uint32_t i = 0; i < e->n_flushed; i++)
                p = pair_put(p, e->flushed_tablets[i], e->flushed_seqs[i]);
}

/* The arrays of a decoded edit, in one allocation. */
struct edit_arrays {
        struct eng_manifest_table *added, *removed;
        uint32_t *tablets;
        uint64_t *seqs;
};

static void *edit_arrays_new(const struct eng_manifest_edit *e, struct edit_arrays *a)
{
        size_t n_tables = (size_t)e->n_added + e->n_removed;
        size_t n_pairs = e->n_flushed;
        size_t bytes = n_tables * sizeof(*a->added) + n_pairs * (sizeof(*a->seqs) + sizeof(*a->tablets));
        uint8_t *mem = bytes ? malloc(bytes) : NULL;

        if (!mem)
                return NULL;
        /* Widest first, so every array is aligned. */
        a->added = (struct eng_manifest_table *)(void *)mem;
        a->removed = a->added + e->n_added;
        a->seqs = (uint64_t *)(void *)(a->removed + e->n_removed);
        a->tablets = (uint32_t *)(void *)(a->seqs + e->n_flushed);
        return mem;
}

int eng_manifest_edit_decode(const void *src, size_t len, struct eng_manifest_edit *ret, void **ret_mem)
{
        const uint8_t *p = src;
        struct eng_manifest_edit e = { 0 };
        struct edit_arrays a = { 0 };
        void *mem = NULL;

        if (len < EDIT_FIXED_BYTES || le32_get(p + EDIT_RESERVED_OFF) != 0)
                return -SCREE_ECORRUPT;
        e.next_file_id = le64_get(p + EDIT_NEXT_FILE_ID_OFF);
        e.log_segment = le64_get(p + EDIT_LOG_SEGMENT_OFF);
        e.n_added = le32_get(p + EDIT_N_ADDED_OFF);
        e.n_removed = le32_get(p + EDIT_N_REMOVED_OFF);
        e.n_flushed = le32_get(p + EDIT_N_FLUSHED_OFF);
        if ((uint64_t)len != edit_bytes(e.n_added, e.n_removed, e.n_flushed))
                return -SCREE_ECORRUPT;
        if (len > EDIT_FIXED_BYTES && !(mem = edit_arrays_new(&e, &a)))
                return -ENOMEM;
        p += EDIT_FIXED_BYTES;
        for (uint32_t i = 0; i < e.n_added; i++)
                p = table_get(p, &a.added[i]);
        for (uint32_t i = 0; i < e.n_removed; i++, p += PAIR_BYTES)
                a.removed[i] = (struct eng_manifest_table){ .tablet = le32_get(p),
                                                            .file_id = le64_get(p + 4) };
        for (uint32_t i = 0; i < e.n_flushed; i++, p += PAIR_BYTES) {
                a.tablets[i] = le32_get(p);
                a.seqs[i] = le64_get(p + 4);
        }
        if (mem) {
                e.added = e.n_added ? a.added : NULL;
                e.removed = e.n_removed ? a.removed : NULL;
                e.flushed_tablets = e.n_flushed ? a.tablets : NULL;
                e.flushed_seqs = e.n_flushed ? a.seqs : NULL;
        }
        *ret = e;
        *ret_mem = mem;
        return 0;
}

/* ---- file header and records ---- */

void eng_manifest_header_encode(void *dst, uint64_t salt)
{
        uint8_t *p = dst;

        memcpy(p + HDR_MAGIC_OFF, ENG_MANIFEST_MAGIC, 8);
        le32_put(p + HDR_VERSION_OFF, ENG_MANIFEST_VERSION);
        le32_put(p + HDR_RESERVED_OFF, 0);
        le64_put(p + HDR_SALT_OFF, salt);
        le64_put(p + HDR_CHECKSUM_OFF, checksum64(p, HDR_CHECKSUM_OFF, 0));
}

int eng_manifest_header_decode(const void *src, size_t len, uint64_t *ret_salt)
{
        const uint8_t *p = src;
        uint32_t version;

        if (len < ENG_MANIFEST_HEADER_BYTES || memcmp(p + HDR_MAGIC_OFF, ENG_MANIFEST_MAGIC, 8) != 0 ||
            le64_get(p + HDR_CHECKSUM_OFF) != checksum64(p, HDR_CHECKSUM_OFF, 0) ||
            le32_get(p + HDR_RESERVED_OFF) != 0)
                return -SCREE_ECORRUPT;
        version = le32_get(p + HDR_VERSION_OFF);
        if (version == 0)
                return -SCREE_ECORRUPT;
        if (version > ENG_MANIFEST_VERSION)
                return -SCREE_EUNSUPPORTED;
        *ret_salt = le64_get(p + HDR_SALT_OFF);
        return 0;
}

size_t eng_manifest_record_seal(void *dst, uint64_t salt, enum eng_manifest_record_type type,
                                uint64_t synced_upto, size_t len)
{
        uint8_t *p = dst;
        size_t total = eng_manifest_record_size(len);

        SCREE_ASSERT(len <= ENG_MANIFEST_MAX_PAYLOAD_BYTES);
        memset(p + REC_HDR + len, 0, total - REC_HDR - len);
        le32_put(p + REC_LENGTH_OFF, (uint32_t)len);
        p[REC_TYPE_OFF] = (uint8_t)type;
        p[REC_FLAGS_OFF] = 0;
        le16_put(p + REC_RESERVED_OFF, 0);
        le64_put(p + REC_SYNCED_OFF, synced_upto);
        le64_put(p + REC_PAYLOAD_CHECKSUM_OFF, checksum64(p + REC_HDR, len, salt));
        le64_put(p + REC_CHECKSUM_OFF, checksum64(p + REC_LENGTH_OFF, HEADER_CHECKED_BYTES, salt));
        return total;
}

size_t eng_manifest_record_encode(void *dst, uint64_t salt, enum eng_manifest_record_type type,
                                  uint64_t synced_upto, const void *payload, size_t len)
{
        if (len)
                memcpy((uint8_t *)dst + REC_HDR, payload, len);
        return eng_manifest_record_seal(dst, salt, type, synced_upto, len);
}

int eng_manifest_reader_init(struct eng_manifest_reader *r, const void *buf, size_t len)
{
        memset(r, 0, sizeof(*r));
        r->buf = buf;
        r->len = len;
        r->off = ENG_MANIFEST_HEADER_BYTES;
        return eng_manifest_header_decode(buf, len, &r->salt);
}

enum rec_state {
        REC_OK,
        REC_NONE,       /* no header here: zeros, or bytes that do not verify */
        REC_INVALID,    /* header verifies but says something no writer writes */
        REC_CUT,        /* header verifies but the payload runs past the buffer */
        REC_BAD,        /* header verifies, payload does not */
};

/* Classifies the bytes at off as a record of this file. */
static enum rec_state rec_at(const struct eng_manifest_reader *r, size_t off,
                             struct eng_manifest_record *ret)
{
        const uint8_t *h = r->buf + off;
        uint32_t len;

        if (r->len - off < REC_HDR)
                return REC_NONE;
        if (le64_get(h + REC_CHECKSUM_OFF) !=
            checksum64(h + REC_LENGTH_OFF, HEADER_CHECKED_BYTES, r->salt))
                return REC_NONE;
        len = le32_get(h + REC_LENGTH_OFF);     /* trusted from here on */
        if (h[REC_TYPE_OFF] <= ENG_MANIFEST_RECORD_TYPE_INVALID ||
            h[REC_TYPE_OFF] >= ENG_MANIFEST_RECORD_TYPE_MAX || h[REC_FLAGS_OFF] != 0 ||
            le16_get(h + REC_RESERVED_OFF) != 0 || len > ENG_MANIFEST_MAX_PAYLOAD_BYTES)
                return REC_INVALID;
        if (len > r->len - off - REC_HDR)
                return REC_CUT;
        if (le64_get(h + REC_PAYLOAD_CHECKSUM_OFF) != checksum64(h + REC_HDR, len, r->salt))
                return REC_BAD;
        ret->type = (enum eng_manifest_record_type)h[REC_TYPE_OFF];
        ret->synced_upto = le64_get(h + REC_SYNCED_OFF);
        ret->payload = h + REC_HDR;
        ret->len = len;
        ret->offset = off;
        return REC_OK;
}

/* Whether any valid record after off says the bytes at off were durable. */
static bool later_claims_durable(const struct eng_manifest_reader *r, size_t off)
{
        struct eng_manifest_record rec;

        for (size_t o = off + ENG_MANIFEST_RECORD_ALIGN; o + ENG_MANIFEST_RECORD_HEADER_BYTES <= r->len;
             o += ENG_MANIFEST_RECORD_ALIGN)
                if (rec_at(r, o, &rec) == REC_OK && rec.synced_upto > off)
                        return true;
        return false;
}

static bool is_zero(const uint8_t *p, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (p[i])
                        return false;
        return true;
}

/*
 * Reading stops at r->off. Bytes there that a later record says were
 * already durable were damaged after being synced: corruption. Otherwise
 * they belong to a write never synced -- never acknowledged -- that a power
 * cut tore (possibly keeping later blocks of it): the end, cut here.
 */
static int end_or_damage(struct eng_manifest_reader *r)
{
        if (later_claims_durable(r, r->off)) {
                r->bad_off = r->off;
                return -SCREE_ECORRUPT;
        }
        r->torn = !is_zero(r->buf + r->off, r->len - r->off);
        return 0;
}

int eng_manifest_reader_next(struct eng_manifest_reader *r, struct eng_manifest_record *ret)
{
        struct eng_manifest_record rec;

        if (r->off >= r->len)
                return 0;
        switch (rec_at(r, r->off, &rec)) {
        case REC_OK:
                if (rec.type == ENG_MANIFEST_RECORD_MARK && rec.len != 0) {
                        r->bad_off = r->off;
                        return -SCREE_ECORRUPT;
                }
                r->off += eng_manifest_record_size(rec.len);
                if (rec.type == ENG_MANIFEST_RECORD_MARK)
                        return eng_manifest_reader_next(r, ret);        /* checked; not a record */
                *ret = rec;
                return 1;
        case REC_INVALID:
                r->bad_off = r->off;
                return -SCREE_ECORRUPT;
        case REC_NONE:
        case REC_CUT:
        case REC_BAD:
                break;
        }
        return end_or_damage(r);
}

/* Decodes an edit record and applies it to s. */
static int apply_record(struct eng_manifest_state *s, const struct eng_manifest_record *rec)
{
        struct eng_manifest_edit e;
        void *mem;
        int r;

        if (rec->type != ENG_MANIFEST_RECORD_EDIT)
                return -SCREE_ECORRUPT;
        r = eng_manifest_edit_decode(rec->payload, rec->len, &e, &mem);
        if (r < 0)
                return r;
        r = eng_manifest_state_apply(s, &e);
        free(mem);
        return r;
}

int eng_manifest_read(struct eng_manifest_reader *r, const void *buf, size_t len,
                      struct eng_manifest_state *ret)
{
        struct eng_manifest_record rec;
        struct eng_manifest_state s;
        int n, rc = eng_manifest_reader_init(r, buf, len);

        if (rc < 0)
                return rc;
        n = eng_manifest_reader_next(r, &rec);
        if (n < 0)
                return n;
        if (n == 0 || rec.type != ENG_MANIFEST_RECORD_SNAPSHOT) {
                /* The snapshot was synced before the file was published. */
                r->bad_off = ENG_MANIFEST_HEADER_BYTES;
                return -SCREE_ECORRUPT;
        }
        rc = eng_manifest_snapshot_decode(rec.payload, rec.len, &s);
        if (rc < 0) {
                r->bad_off = rec.offset;
                return rc;
        }
        while ((n = eng_manifest_reader_next(r, &rec)) == 1) {
                rc = apply_record(&s, &rec);
                if (rc < 0) {
                        r->bad_off = rec.offset;
                        eng_manifest_state_fini(&s);
                        return rc;
                }
        }
        if (n < 0) {
                eng_manifest_state_fini(&s);
                return n;
        }
        *ret = s;
        return 0;
}
