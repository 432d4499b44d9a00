/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the manifest tests: comparing two manifest states field by
 * field (tablets and tables in order), a small sample state with sparse
 * tablet ids and ranges, and a version 1 encoder -- the engine only reads version 1
 * now, so the tests keep the writer of the old files. Header-only; tests
 * only.
 */
#ifndef SCREE_TESTS_ENGINE_MANIFEST_HELPERS_H
#define SCREE_TESTS_ENGINE_MANIFEST_HELPERS_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "engine/manifest_format.h"

static inline bool manifest_table_is_equal(const struct eng_manifest_table *a,
                                           const struct eng_manifest_table *b)
{
        return a->tablet == b->tablet && a->file_id == b->file_id && a->file_size == b->file_size &&
               a->min_seq == b->min_seq && a->max_seq == b->max_seq;
}

/* Same id, seq, table and range (both unranged counts as the same range). */
static inline bool manifest_tablet_is_equal(const struct eng_manifest_tablet *a,
                                            const struct eng_manifest_tablet *b)
{
        return a->id == b->id && a->flushed_seq == b->flushed_seq && a->table == b->table &&
               a->start_len == b->start_len && a->end_len == b->end_len &&
               (!a->start_len || !memcmp(a->start, b->start, a->start_len)) &&
               (!a->end_len || !memcmp(a->end, b->end, a->end_len));
}

static inline bool manifest_state_is_equal(const struct eng_manifest_state *a,
                                           const struct eng_manifest_state *b)
{
        if (a->layout.shard != b->layout.shard || a->layout.n_shards != b->layout.n_shards ||
            a->layout.tablets_per_shard != b->layout.tablets_per_shard ||
            a->next_file_id != b->next_file_id || a->log_segment != b->log_segment ||
            a->n_tablets != b->n_tablets || a->n_tables != b->n_tables)
                return false;
        for (uint32_t i = 0; i < a->n_tablets; i++)
                if (!manifest_tablet_is_equal(&a->tablets[i], &b->tablets[i]))
                        return false;
        for (size_t i = 0; i < a->n_tables; i++)
                if (!manifest_table_is_equal(&a->tables[i], &b->tables[i]))
                        return false;
        return true;
}

/* The sample's tablet ids, sparse as catalog ids are: T0 and T2 have
 * entries in the sample, T1 (between them) has none. */
#define T0 6u
#define T1 10u
#define T2 18u
/* The sample's table: T0 holds [SAMPLE_TABLE|"a", SAMPLE_TABLE|"m"), T2
 * [SAMPLE_TABLE|"m", SAMPLE_TABLE + 1); T1's range, if made, is
 * [SAMPLE_TABLE, SAMPLE_TABLE|"a"). */
#define SAMPLE_TABLE 7u

/* Sets t's table and range [table|start, table|end), or up to table + 1
 * when end is NULL, with the keys in buf (room for 16 + both strings). */
static inline void manifest_range_set(struct eng_manifest_tablet *t, uint32_t table, const char *start,
                                      const char *end, uint8_t *buf)
{
        size_t sl = strlen(start), el = end ? strlen(end) : 0;

        t->table = table;
        be32_put(buf, table);
        memcpy(buf + 4, start, sl);
        t->start = buf;
        t->start_len = (uint32_t)(4 + sl);
        be32_put(buf + t->start_len, end ? table : table + 1);
        memcpy(buf + t->start_len + 4, end ? end : "", el);
        t->end = buf + t->start_len;
        t->end_len = (uint32_t)(4 + el);
}

/* Gives s's entries (made by the test, not by the engine) an arena of
 * their own, as a state's: s->keys. */
static inline void manifest_state_own_keys(struct eng_manifest_state *s)
{
        size_t bytes = 0;
        uint8_t *p;

        for (uint32_t i = 0; i < s->n_tablets; i++)
                bytes += (size_t)s->tablets[i].start_len + s->tablets[i].end_len;
        free(s->keys);
        s->keys = NULL;
        if (!bytes)
                return;
        p = s->keys = malloc(bytes);
        cr_assert(not(eq(ptr, p, NULL)));
        for (uint32_t i = 0; i < s->n_tablets; i++) {
                struct eng_manifest_tablet *t = &s->tablets[i];

                memmove(p, t->start, t->start_len);
                t->start = p;
                p += t->start_len;
                memmove(p, t->end, t->end_len);
                t->end = p;
                p += t->end_len;
        }
}

/* A state of shard 2 of 4: tablets T0 (flushed 200) and T2 (7) of table
 * SAMPLE_TABLE, 3 tables; fini it after. */
static inline void manifest_sample_state(struct eng_manifest_state *s)
{
        static const struct eng_manifest_table t[] = {
                { .tablet = T0, .file_id = 3, .file_size = 4096, .min_seq = 1, .max_seq = 90 },
                { .tablet = T2, .file_id = 5, .file_size = 81920, .min_seq = 7, .max_seq = 7 },
                { .tablet = T0, .file_id = 8, .file_size = 12288, .min_seq = 91, .max_seq = 200 },
        };
        struct eng_manifest_tablet tablets[] = { { .id = T0, .flushed_seq = 200 },
                                                 { .id = T2, .flushed_seq = 7 } };
        struct eng_manifest_layout layout = { .shard = 2, .n_shards = 4, .tablets_per_shard = 3 };
        uint8_t k0[32], k2[32];

        manifest_range_set(&tablets[0], SAMPLE_TABLE, "a", "m", k0);
        manifest_range_set(&tablets[1], SAMPLE_TABLE, "m", NULL, k2);
        eng_manifest_state_init(s, &layout);
        s->next_file_id = 9;
        s->log_segment = 17;
        s->tablets = malloc(sizeof(tablets));
        s->tables = malloc(sizeof(t));
        cr_assert(not(eq(ptr, s->tablets, NULL)));
        cr_assert(not(eq(ptr, s->tables, NULL)));
        memcpy(s->tablets, tablets, sizeof(tablets));
        memcpy(s->tables, t, sizeof(t));
        s->n_tablets = 2;
        s->n_tables = 3;
        manifest_state_own_keys(s);
}

/* ---- version 1, as the engine wrote it before tablets were catalog ids ---- */

#define MANIFEST_V1_TABLE_BYTES 36u
#define MANIFEST_V1_PAIR_BYTES 12u

/* Writes a file header of version 1 into ENG_MANIFEST_HEADER_BYTES at dst. */
static inline void manifest_v1_header_encode(void *dst, uint64_t salt)
{
        uint8_t *p = dst;

        eng_manifest_header_encode(p, salt);
        le32_put(p + 8, 1);
        le64_put(p + 24, checksum64(p, 24, 0));
}

static inline uint8_t *manifest_v1_table_put(uint8_t *p, const struct eng_manifest_table *t)
{
        le32_put(p, t->tablet);
        le64_put(p + 4, t->file_id);
        le64_put(p + 12, t->file_size);
        le64_put(p + 20, t->min_seq);
        le64_put(p + 28, t->max_seq);
        return p + MANIFEST_V1_TABLE_BYTES;
}

/* A version 1 snapshot payload at dst: layout, ids, n_slots flushed seqs
 * (tablet numbers 0..n_slots-1), tables with local tablet numbers.
 * Returns its bytes. */
static inline size_t manifest_v1_snapshot_encode(uint8_t *dst, const struct eng_manifest_layout *l,
                                                 uint64_t next_file_id, uint64_t log_segment,
                                                 const uint64_t *seqs, uint32_t n_slots,
                                                 const struct eng_manifest_table *tables,
                                                 uint32_t n_tables)
{
        uint8_t *p = dst + 40;

        le32_put(dst, l->shard);
        le32_put(dst + 4, l->n_shards);
        le32_put(dst + 8, l->tablets_per_shard);
        le32_put(dst + 12, n_slots);
        le64_put(dst + 16, next_file_id);
        le64_put(dst + 24, log_segment);
        le32_put(dst + 32, n_tables);
        le32_put(dst + 36, 0);
        for (uint32_t i = 0; i < n_slots; i++, p += 8)
                le64_put(p, seqs[i]);
        for (uint32_t i = 0; i < n_tables; i++)
                p = manifest_v1_table_put(p, &tables[i]);
        return (size_t)(p - dst);
}

/* A version 1 edit payload of e (local tablet numbers; no drops in
 * version 1) at dst. Returns its bytes. */
static inline size_t manifest_v1_edit_encode(uint8_t *dst, const struct eng_manifest_edit *e)
{
        uint8_t *p = dst + 32;

        cr_assert(eq(u32, e->n_dropped, 0));
        le64_put(dst, e->next_file_id);
        le64_put(dst + 8, e->log_segment);
        le32_put(dst + 16, e->n_added);
        le32_put(dst + 20, e->n_removed);
        le32_put(dst + 24, e->n_flushed);
        le32_put(dst + 28, 0);
        for (uint32_t i = 0; i < e->n_added; i++)
                p = manifest_v1_table_put(p, &e->added[i]);
        for (uint32_t i = 0; i < e->n_removed; i++, p += MANIFEST_V1_PAIR_BYTES) {
                le32_put(p, e->removed[i].tablet);
                le64_put(p + 4, e->removed[i].file_id);
        }
        for (uint32_t i = 0; i < e->n_flushed; i++, p += MANIFEST_V1_PAIR_BYTES) {
                le32_put(p, e->flushed_tablets[i]);
                le64_put(p + 4, e->flushed_seqs[i]);
        }
        return (size_t)(p - dst);
}

/* Appends a record at *off of buf (room checked), synced_upto its own offset. */
static inline void manifest_v1_record(uint8_t *buf, size_t cap, size_t *off, uint64_t salt,
                                      enum eng_manifest_record_type type, const uint8_t *p,
                                      size_t len)
{
        cr_assert(le(sz, *off + eng_manifest_record_size(len), cap));
        *off += eng_manifest_record_encode(buf + *off, salt, type, *off, p, len);
}

/*
 * The sample version 1 file: shard 1 of 2, 4 tablets per shard (tablet
 * numbers 0..7; catalog ids 1, 3, 5, 7, 9, 11, 13, 15), a snapshot with
 * flushed seqs in slots 0 and 5, a table in slots 0, 3 and 5, then two
 * edits: a table added to slot 6 and flushed; a table of slot 0 replaced
 * and slot 1 flushed. Writes it into buf; returns its length.
 */
static inline size_t manifest_v1_sample_file(uint8_t *buf, size_t cap, uint64_t salt)
{
        static const struct eng_manifest_layout layout = { .shard = 1, .n_shards = 2,
                                                           .tablets_per_shard = 4 };
        static const uint64_t seqs[8] = { 100, 0, 0, 0, 0, 40, 0, 0 };
        static const struct eng_manifest_table tables[] = {
                { .tablet = 0, .file_id = 3, .file_size = 4096, .min_seq = 1, .max_seq = 100 },
                { .tablet = 3, .file_id = 4, .file_size = 8192, .min_seq = 5, .max_seq = 5 },
                { .tablet = 5, .file_id = 6, .file_size = 16384, .min_seq = 1, .max_seq = 40 },
        };
        static const struct eng_manifest_table e1_added[] = {
                { .tablet = 6, .file_id = 9, .file_size = 4096, .min_seq = 1, .max_seq = 77 },
        };
        static const struct eng_manifest_table e2_added[] = {
                { .tablet = 0, .file_id = 10, .file_size = 4096, .min_seq = 1, .max_seq = 100 },
        };
        static const struct eng_manifest_table e2_removed[] = { { .tablet = 0, .file_id = 3 } };
        static const uint32_t e1_tablets[] = { 6 }, e2_tablets[] = { 1 };
        static const uint64_t e1_seqs[] = { 77 }, e2_seqs[] = { 5 };
        const struct eng_manifest_edit edits[] = {
                { .added = e1_added, .n_added = 1, .flushed_tablets = e1_tablets,
                  .flushed_seqs = e1_seqs, .n_flushed = 1, .next_file_id = 10 },
                { .added = e2_added, .n_added = 1, .removed = e2_removed, .n_removed = 1,
                  .flushed_tablets = e2_tablets, .flushed_seqs = e2_seqs, .n_flushed = 1,
                  .log_segment = 3 },
        };
        uint8_t p[1024];
        size_t off = ENG_MANIFEST_HEADER_BYTES, len;

        cr_assert(ge(sz, cap, ENG_MANIFEST_HEADER_BYTES));
        manifest_v1_header_encode(buf, salt);
        len = manifest_v1_snapshot_encode(p, &layout, 7, 2, seqs, 8, tables, 3);
        manifest_v1_record(buf, cap, &off, salt, ENG_MANIFEST_RECORD_SNAPSHOT, p, len);
        for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
                len = manifest_v1_edit_encode(p, &edits[i]);
                manifest_v1_record(buf, cap, &off, salt, ENG_MANIFEST_RECORD_EDIT, p, len);
        }
        return off;
}

/* What manifest_v1_sample_file reads as (fini it after): tablet numbers
 * made catalog ids, the empty slots (2, 4, 7) left out, slot 3 kept for
 * its table. */
static inline void manifest_v1_sample_want(struct eng_manifest_state *s)
{
        static const struct eng_manifest_layout layout = { .shard = 1, .n_shards = 2,
                                                           .tablets_per_shard = 4 };
        static const struct eng_manifest_tablet tablets[] = {
                { .id = 1, .flushed_seq = 100 }, { .id = 3, .flushed_seq = 5 },
                { .id = 7, .flushed_seq = 0 },   { .id = 11, .flushed_seq = 40 },
                { .id = 13, .flushed_seq = 77 },
        };
        static const struct eng_manifest_table tables[] = {
                { .tablet = 7, .file_id = 4, .file_size = 8192, .min_seq = 5, .max_seq = 5 },
                { .tablet = 11, .file_id = 6, .file_size = 16384, .min_seq = 1, .max_seq = 40 },
                { .tablet = 13, .file_id = 9, .file_size = 4096, .min_seq = 1, .max_seq = 77 },
                { .tablet = 1, .file_id = 10, .file_size = 4096, .min_seq = 1, .max_seq = 100 },
        };

        eng_manifest_state_init(s, &layout);
        s->next_file_id = 11;
        s->log_segment = 3;
        s->tablets = malloc(sizeof(tablets));
        s->tables = malloc(sizeof(tables));
        cr_assert(not(eq(ptr, s->tablets, NULL)));
        cr_assert(not(eq(ptr, s->tables, NULL)));
        memcpy(s->tablets, tablets, sizeof(tablets));
        memcpy(s->tables, tables, sizeof(tables));
        s->n_tablets = 5;
        s->n_tables = 4;
}

#endif
