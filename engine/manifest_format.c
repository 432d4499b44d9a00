/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifest format: the payload codecs of states and edits (version 3
 * written; 3 and 2 read), the file header, record framing and the reader.
 * States and applying edits are in manifest_state.c, ranges in
 * manifest_range.c; version 1 payloads decode in manifest_v1.c. See
 * manifest_format.h for the model and docs/format/manifest.md for the
 * bytes. All integers little-endian and
 * fixed-width: a manifest is small and rewritten now and then, and fixed
 * widths make every payload's length exactly checkable against its counts.
 * Every u64 of a payload sits 8-byte aligned (payloads start aligned).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/checksum.h"
#include "base/endian.h"
#include "engine/manifest_format.h"
#include "engine/manifest_int.h"

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


/* Each entry: a u32 tablet id, 4 reserved bytes (0) so what follows is
 * aligned, then its u64s. */
#define TABLE_BYTES 40u                 /* tablet, file_id, file_size, min_seq, max_seq */
#define PAIR_BYTES 16u                  /* tablet, u64 (TABLET: flushed seq; removed: file_id;
                                         * flushed: seq) */
#define DROPPED_BYTES 8u                /* tablet */
#define TABLET_BYTES 24u                /* version 3: id, table, flushed_seq, start_len, end_len;
                                         * the keys in the payload's key area */

_Static_assert(HDR_CHECKSUM_OFF + 8 == ENG_MANIFEST_HEADER_BYTES, "file header size");
_Static_assert(REC_PAYLOAD_CHECKSUM_OFF + 8 == ENG_MANIFEST_RECORD_HEADER_BYTES, "record header size");
_Static_assert(ENG_MANIFEST_HEADER_BYTES % ENG_MANIFEST_RECORD_ALIGN == 0, "records start aligned");
_Static_assert(SNAP_RESERVED_OFF + 4 == SNAP_FIXED_BYTES, "snapshot fixed part");
_Static_assert(EDIT_N_DROPPED_OFF + 4 == EDIT_FIXED_BYTES, "edit fixed part");
_Static_assert(EDIT_KEY_BYTES_OFF + 4 == EDIT_V3_FIXED_BYTES, "version 3 edit fixed part");
_Static_assert(SNAP_FIXED_BYTES % 8 == 0 && EDIT_FIXED_BYTES % 8 == 0 && TABLE_BYTES % 8 == 0 &&
               PAIR_BYTES % 8 == 0 && DROPPED_BYTES % 8 == 0 && TABLET_BYTES % 8 == 0 &&
               EDIT_V3_FIXED_BYTES % 8 == 0, "every u64 aligned");

/* ---- payloads ---- */

static uint8_t *table_put(uint8_t *p, const struct eng_manifest_table *t)
{
        le32_put(p, t->tablet);
        le32_put(p + 4, 0);
        le64_put(p + 8, t->file_id);
        le64_put(p + 16, t->file_size);
        le64_put(p + 24, t->min_seq);
        le64_put(p + 32, t->max_seq);
        return p + TABLE_BYTES;
}

/* Reads a TABLE entry, or-ing its reserved bytes into *reserved. */
static const uint8_t *table_get(const uint8_t *p, struct eng_manifest_table *t, uint32_t *reserved)
{
        t->tablet = le32_get(p);
        *reserved |= le32_get(p + 4);
        t->file_id = le64_get(p + 8);
        t->file_size = le64_get(p + 16);
        t->min_seq = le64_get(p + 24);
        t->max_seq = le64_get(p + 32);
        return p + TABLE_BYTES;
}

static uint8_t *pair_put(uint8_t *p, uint32_t tablet, uint64_t v)
{
        le32_put(p, tablet);
        le32_put(p + 4, 0);
        le64_put(p + 8, v);
        return p + PAIR_BYTES;
}

static const uint8_t *pair_get(const uint8_t *p, uint32_t *tablet, uint64_t *v, uint32_t *reserved)
{
        *tablet = le32_get(p);
        *reserved |= le32_get(p + 4);
        *v = le64_get(p + 8);
        return p + PAIR_BYTES;
}

/* Bytes of a key area of len bytes: padded to 8 with zeros. */
static uint64_t pad8(uint64_t len)
{
        return (len + 7) & ~(uint64_t)7;
}

static uint64_t keys_bytes(const struct eng_manifest_tablet *v, uint32_t n)
{
        uint64_t b = 0;

        for (uint32_t i = 0; i < n; i++)
                b += (uint64_t)v[i].start_len + v[i].end_len;
        return b;
}

static uint8_t *tablet_put(uint8_t *p, const struct eng_manifest_tablet *t)
{
        le32_put(p, t->id);
        le32_put(p + 4, t->table);
        le64_put(p + 8, t->flushed_seq);
        le32_put(p + 16, t->start_len);
        le32_put(p + 20, t->end_len);
        return p + TABLET_BYTES;
}

/* Writes v's keys (n entries) at p, then zeros to a multiple of 8. */
static uint8_t *keys_put(uint8_t *p, const struct eng_manifest_tablet *v, uint32_t n)
{
        uint8_t *q = p;

        for (uint32_t i = 0; i < n; i++) {
                memcpy(q, v[i].start, v[i].start_len);
                q += v[i].start_len;
                memcpy(q, v[i].end, v[i].end_len);
                q += v[i].end_len;
        }
        memset(q, 0, (size_t)(pad8((uint64_t)(q - p)) - (uint64_t)(q - p)));
        return p + pad8((uint64_t)(q - p));
}

/*
 * Reads n version 3 TABLET entries at p into v, their keys pointing into
 * the key_bytes of keys. Returns 0, or -SCREE_ECORRUPT: an entry without
 * a range, keys not adding up to key_bytes.
 */
static int tablets_get(const uint8_t *p, struct eng_manifest_tablet *v, uint32_t n,
                       const uint8_t *keys, uint32_t key_bytes)
{
        uint64_t off = 0;

        for (uint32_t i = 0; i < n; i++, p += TABLET_BYTES) {
                struct eng_manifest_tablet *t = &v[i];

                t->id = le32_get(p);
                t->table = le32_get(p + 4);
                t->flushed_seq = le64_get(p + 8);
                t->start_len = le32_get(p + 16);
                t->end_len = le32_get(p + 20);
                if (!t->start_len || off + t->start_len + t->end_len > key_bytes)
                        return -SCREE_ECORRUPT;
                t->start = keys + off;
                t->end = t->start + t->start_len;
                off += (uint64_t)t->start_len + t->end_len;
        }
        return off == key_bytes ? 0 : -SCREE_ECORRUPT;
}

/* Whether the padding after a key area of key_bytes at keys is zeros. */
static bool padding_is_zero(const uint8_t *keys, uint32_t key_bytes)
{
        for (uint64_t i = key_bytes; i < pad8(key_bytes); i++)
                if (keys[i])
                        return false;
        return true;
}

size_t eng_manifest_snapshot_size(const struct eng_manifest_state *s)
{
        return SNAP_FIXED_BYTES + (size_t)s->n_tablets * TABLET_BYTES + s->n_tables * TABLE_BYTES +
               (size_t)pad8(keys_bytes(s->tablets, s->n_tablets));
}

void eng_manifest_snapshot_encode(void *dst, const struct eng_manifest_state *s)
{
        uint8_t *p = dst;
        uint64_t kb = keys_bytes(s->tablets, s->n_tablets);

        SCREE_ASSERT(s->n_tables <= UINT32_MAX && kb <= UINT32_MAX);
        SCREE_ASSERT(eng_manifest_state_is_ranged(s));
        le32_put(p + SNAP_SHARD_OFF, s->layout.shard);
        le32_put(p + SNAP_N_SHARDS_OFF, s->layout.n_shards);
        le32_put(p + SNAP_TABLETS_PER_SHARD_OFF, s->layout.tablets_per_shard);
        le32_put(p + SNAP_N_TABLETS_OFF, s->n_tablets);
        le64_put(p + SNAP_NEXT_FILE_ID_OFF, s->next_file_id);
        le64_put(p + SNAP_LOG_SEGMENT_OFF, s->log_segment);
        le32_put(p + SNAP_N_TABLES_OFF, (uint32_t)s->n_tables);
        le32_put(p + SNAP_KEY_BYTES_OFF, (uint32_t)kb);
        p += SNAP_FIXED_BYTES;
        for (uint32_t i = 0; i < s->n_tablets; i++)
                p = tablet_put(p, &s->tablets[i]);
        for (size_t i = 0; i < s->n_tables; i++)
                p = table_put(p, &s->tables[i]);
        keys_put(p, s->tablets, s->n_tablets);
}

/* Fills s (its arrays allocated for n_tablets and n_tables) from the
 * variable part of a snapshot payload at p of the given version (2 or
 * 3), key_bytes of keys (version 3). Returns 0 or -SCREE_ECORRUPT. */
static int snapshot_fill(struct eng_manifest_state *s, const uint8_t *p, uint32_t version,
                         uint32_t n_tablets, uint32_t n_tables, uint32_t key_bytes)
{
        uint32_t reserved = 0;
        const uint8_t *tables = p + (size_t)n_tablets *
                                    (version == ENG_MANIFEST_VERSION ? TABLET_BYTES : PAIR_BYTES);
        int r = 0;

        if (version == ENG_MANIFEST_VERSION) {
                const uint8_t *keys = tables + (size_t)n_tables * TABLE_BYTES;

                r = tablets_get(p, s->tablets, n_tablets, keys, key_bytes);
                if (!padding_is_zero(keys, key_bytes))
                        r = -SCREE_ECORRUPT;
        } else {
                for (uint32_t i = 0; i < n_tablets; i++) {
                        s->tablets[i] = (struct eng_manifest_tablet){ 0 };      /* unranged */
                        p = pair_get(p, &s->tablets[i].id, &s->tablets[i].flushed_seq, &reserved);
                }
        }
        p = tables;
        for (uint32_t i = 0; i < n_tables; i++)
                p = table_get(p, &s->tables[i], &reserved);
        s->n_tablets = n_tablets;
        s->n_tables = n_tables;
        return r < 0 || reserved ? -SCREE_ECORRUPT : 0;
}

/* The payload bytes a snapshot of these counts takes in version (2 or 3). */
static uint64_t snapshot_bytes(uint32_t version, uint64_t n_tablets, uint64_t n_tables,
                               uint64_t key_bytes)
{
        /* u32 counts times small sizes: no overflow in 64 bits. */
        return SNAP_FIXED_BYTES + n_tables * TABLE_BYTES +
               (version == ENG_MANIFEST_VERSION ? n_tablets * TABLET_BYTES + pad8(key_bytes)
                                                : n_tablets * PAIR_BYTES);
}

int eng_manifest_snapshot_decode(const void *src, size_t len, uint32_t version,
                                 struct eng_manifest_state *ret)
{
        const uint8_t *p = src;
        struct eng_manifest_layout layout;
        struct eng_manifest_state s;
        uint32_t n_tablets, n_tables, key_bytes;
        int r;

        if (version == ENG_MANIFEST_VERSION_STATIC)
                return eng_manifest_v1_snapshot_decode(src, len, ret);
        if (version != ENG_MANIFEST_VERSION && version != ENG_MANIFEST_VERSION_UNRANGED)
                return -SCREE_EUNSUPPORTED;
        if (len < SNAP_FIXED_BYTES)
                return -SCREE_ECORRUPT;
        key_bytes = le32_get(p + SNAP_KEY_BYTES_OFF);   /* version 2: reserved, 0 */
        if (version == ENG_MANIFEST_VERSION_UNRANGED && key_bytes != 0)
                return -SCREE_ECORRUPT;
        n_tablets = le32_get(p + SNAP_N_TABLETS_OFF);
        n_tables = le32_get(p + SNAP_N_TABLES_OFF);
        if ((uint64_t)len != snapshot_bytes(version, n_tablets, n_tables, key_bytes))
                return -SCREE_ECORRUPT;
        layout.shard = le32_get(p + SNAP_SHARD_OFF);
        layout.n_shards = le32_get(p + SNAP_N_SHARDS_OFF);
        layout.tablets_per_shard = le32_get(p + SNAP_TABLETS_PER_SHARD_OFF);
        eng_manifest_state_init(&s, &layout);
        s.next_file_id = le64_get(p + SNAP_NEXT_FILE_ID_OFF);
        s.log_segment = le64_get(p + SNAP_LOG_SEGMENT_OFF);
        if ((n_tablets && !(s.tablets = malloc((size_t)n_tablets * sizeof(*s.tablets)))) ||
            (n_tables && !(s.tables = malloc((size_t)n_tables * sizeof(*s.tables))))) {
                eng_manifest_state_fini(&s);
                return -ENOMEM;
        }
        r = snapshot_fill(&s, p + SNAP_FIXED_BYTES, version, n_tablets, n_tables, key_bytes);
        if (r == 0)
                r = eng_manifest_keys_pack(s.tablets, s.n_tablets, &s.keys);    /* off the payload */
        if (r == 0)
                r = eng_manifest_state_check(&s);
        if (r < 0) {
                eng_manifest_state_fini(&s);
                return r;
        }
        *ret = s;
        return 0;
}

/* The payload bytes an edit of these counts takes in version 3 (or 2:
 * n_new and key_bytes 0). */
static uint64_t edit_bytes(uint32_t version, const struct eng_manifest_edit *e, uint64_t key_bytes)
{
        uint64_t b = (uint64_t)e->n_added * TABLE_BYTES +
                     ((uint64_t)e->n_removed + e->n_flushed) * PAIR_BYTES +
                     (uint64_t)e->n_dropped * DROPPED_BYTES;

        if (version != ENG_MANIFEST_VERSION)
                return EDIT_FIXED_BYTES + b;
        return EDIT_V3_FIXED_BYTES + b + (uint64_t)e->n_new_tablets * TABLET_BYTES + pad8(key_bytes);
}

size_t eng_manifest_edit_size(const struct eng_manifest_edit *e)
{
        return (size_t)edit_bytes(ENG_MANIFEST_VERSION, e, keys_bytes(e->new_tablets, e->n_new_tablets));
}

void eng_manifest_edit_encode(void *dst, const struct eng_manifest_edit *e)
{
        uint8_t *p = dst;
        uint64_t kb = keys_bytes(e->new_tablets, e->n_new_tablets);

        SCREE_ASSERT(!e->implicit_entries && kb <= UINT32_MAX);
        le64_put(p + EDIT_NEXT_FILE_ID_OFF, e->next_file_id);
        le64_put(p + EDIT_LOG_SEGMENT_OFF, e->log_segment);
        le32_put(p + EDIT_N_ADDED_OFF, e->n_added);
        le32_put(p + EDIT_N_REMOVED_OFF, e->n_removed);
        le32_put(p + EDIT_N_FLUSHED_OFF, e->n_flushed);
        le32_put(p + EDIT_N_DROPPED_OFF, e->n_dropped);
        le32_put(p + EDIT_N_NEW_OFF, e->n_new_tablets);
        le32_put(p + EDIT_KEY_BYTES_OFF, (uint32_t)kb);
        p += EDIT_V3_FIXED_BYTES;
        for (uint32_t i = 0; i < e->n_added; i++)
                p = table_put(p, &e->added[i]);
        for (uint32_t i = 0; i < e->n_removed; i++)
                p = pair_put(p, e->removed[i].tablet, e->removed[i].file_id);
        for (uint32_t i = 0; i < e->n_flushed; i++)
                p = pair_put(p, e->flushed_tablets[i], e->flushed_seqs[i]);
        for (uint32_t i = 0; i < e->n_dropped; i++, p += DROPPED_BYTES) {
                le32_put(p, e->dropped_tablets[i]);
                le32_put(p + 4, 0);
        }
        for (uint32_t i = 0; i < e->n_new_tablets; i++)
                p = tablet_put(p, &e->new_tablets[i]);
        keys_put(p, e->new_tablets, e->n_new_tablets);
}

void *eng_manifest_edit_arrays_new(const struct eng_manifest_edit *e, size_t key_bytes,
                                   struct eng_manifest_edit_arrays *a)
{
        size_t n_tables = (size_t)e->n_added + e->n_removed;
        size_t bytes = n_tables * sizeof(*a->added) +
                       (size_t)e->n_new_tablets * sizeof(*a->new_tablets) +
                       (size_t)e->n_flushed * (sizeof(*a->seqs) + sizeof(*a->tablets)) +
                       (size_t)e->n_dropped * sizeof(*a->dropped) + key_bytes;
        uint8_t *mem = bytes ? malloc(bytes) : NULL;

        if (!mem)
                return NULL;
        /* Widest alignment first, so every array is aligned. */
        a->added = (struct eng_manifest_table *)(void *)mem;
        a->removed = a->added + e->n_added;
        a->new_tablets = (struct eng_manifest_tablet *)(void *)(a->removed + e->n_removed);
        a->seqs = (uint64_t *)(void *)(a->new_tablets + e->n_new_tablets);
        a->tablets = (uint32_t *)(void *)(a->seqs + e->n_flushed);
        a->dropped = a->tablets + e->n_flushed;
        a->keys = (uint8_t *)(a->dropped + e->n_dropped);
        return mem;
}

void eng_manifest_edit_arrays_set(struct eng_manifest_edit *e, const struct eng_manifest_edit_arrays *a)
{
        e->new_tablets = e->n_new_tablets ? a->new_tablets : NULL;
        e->added = e->n_added ? a->added : NULL;
        e->removed = e->n_removed ? a->removed : NULL;
        e->flushed_tablets = e->n_flushed ? a->tablets : NULL;
        e->flushed_seqs = e->n_flushed ? a->seqs : NULL;
        e->dropped_tablets = e->n_dropped ? a->dropped : NULL;
}

/* Fills a (allocated for e's counts) from the variable part of an edit
 * payload at p (version 2 or 3, key_bytes of keys). Returns 0 or
 * -SCREE_ECORRUPT. */
static int edit_fill(const struct eng_manifest_edit *e, const struct eng_manifest_edit_arrays *a,
                     const uint8_t *p, uint32_t key_bytes)
{
        const uint8_t *keys;
        uint32_t reserved = 0;
        int r;

        for (uint32_t i = 0; i < e->n_added; i++)
                p = table_get(p, &a->added[i], &reserved);
        for (uint32_t i = 0; i < e->n_removed; i++) {
                a->removed[i] = (struct eng_manifest_table){ 0 };
                p = pair_get(p, &a->removed[i].tablet, &a->removed[i].file_id, &reserved);
        }
        for (uint32_t i = 0; i < e->n_flushed; i++)
                p = pair_get(p, &a->tablets[i], &a->seqs[i], &reserved);
        for (uint32_t i = 0; i < e->n_dropped; i++, p += DROPPED_BYTES) {
                a->dropped[i] = le32_get(p);
                reserved |= le32_get(p + 4);
        }
        /* The keys go with the arrays, off the payload. */
        keys = p + (size_t)e->n_new_tablets * TABLET_BYTES;
        if (key_bytes)
                memcpy(a->keys, keys, key_bytes);
        r = tablets_get(p, a->new_tablets, e->n_new_tablets, a->keys, key_bytes);
        if (!padding_is_zero(keys, key_bytes))
                r = -SCREE_ECORRUPT;
        return r < 0 || reserved ? -SCREE_ECORRUPT : 0;
}

int eng_manifest_edit_decode(const void *src, size_t len, uint32_t version,
                             const struct eng_manifest_layout *layout, struct eng_manifest_edit *ret,
                             void **ret_mem)
{
        const uint8_t *p = src;
        struct eng_manifest_edit e = { 0 };
        struct eng_manifest_edit_arrays a = { 0 };
        uint32_t key_bytes = 0;
        void *mem = NULL;

        if (version == ENG_MANIFEST_VERSION_STATIC)
                return eng_manifest_v1_edit_decode(src, len, layout, ret, ret_mem);
        if (version != ENG_MANIFEST_VERSION && version != ENG_MANIFEST_VERSION_UNRANGED)
                return -SCREE_EUNSUPPORTED;
        if (len < (version == ENG_MANIFEST_VERSION ? EDIT_V3_FIXED_BYTES : EDIT_FIXED_BYTES))
                return -SCREE_ECORRUPT;
        e.next_file_id = le64_get(p + EDIT_NEXT_FILE_ID_OFF);
        e.log_segment = le64_get(p + EDIT_LOG_SEGMENT_OFF);
        e.n_added = le32_get(p + EDIT_N_ADDED_OFF);
        e.n_removed = le32_get(p + EDIT_N_REMOVED_OFF);
        e.n_flushed = le32_get(p + EDIT_N_FLUSHED_OFF);
        e.n_dropped = le32_get(p + EDIT_N_DROPPED_OFF);
        if (version == ENG_MANIFEST_VERSION) {
                e.n_new_tablets = le32_get(p + EDIT_N_NEW_OFF);
                key_bytes = le32_get(p + EDIT_KEY_BYTES_OFF);
        }
        e.implicit_entries = version != ENG_MANIFEST_VERSION;
        if ((uint64_t)len != edit_bytes(version, &e, key_bytes))
                return -SCREE_ECORRUPT;
        if (!(mem = eng_manifest_edit_arrays_new(&e, key_bytes, &a)) &&
            len > (version == ENG_MANIFEST_VERSION ? EDIT_V3_FIXED_BYTES : EDIT_FIXED_BYTES))
                return -ENOMEM;
        if (mem && edit_fill(&e, &a, p + (version == ENG_MANIFEST_VERSION ? EDIT_V3_FIXED_BYTES
                                                                          : EDIT_FIXED_BYTES),
                             key_bytes) < 0) {
                free(mem);
                return -SCREE_ECORRUPT;
        }
        eng_manifest_edit_arrays_set(&e, &a);
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

int eng_manifest_header_decode(const void *src, size_t len, uint64_t *ret_salt,
                               uint32_t *ret_version)
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
        if (version > ENG_MANIFEST_VERSION)   /* 1 (ENG_MANIFEST_VERSION_STATIC) still reads */
                return -SCREE_EUNSUPPORTED;
        *ret_salt = le64_get(p + HDR_SALT_OFF);
        *ret_version = version;
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
        return eng_manifest_header_decode(buf, len, &r->salt, &r->version);
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

/* Decodes an edit record of the file r reads and applies it to s. */
static int apply_record(const struct eng_manifest_reader *r, struct eng_manifest_state *s,
                        const struct eng_manifest_record *rec)
{
        struct eng_manifest_edit e;
        void *mem;
        int rc;

        if (rec->type != ENG_MANIFEST_RECORD_EDIT)
                return -SCREE_ECORRUPT;
        rc = eng_manifest_edit_decode(rec->payload, rec->len, r->version, &s->layout, &e, &mem);
        if (rc < 0)
                return rc;
        rc = eng_manifest_state_apply(s, &e);
        free(mem);
        return rc;
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
        rc = eng_manifest_snapshot_decode(rec.payload, rec.len, r->version, &s);
        if (rc < 0) {
                r->bad_off = rec.offset;
                return rc;
        }
        while ((n = eng_manifest_reader_next(r, &rec)) == 1) {
                rc = apply_record(r, &s, &rec);
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
