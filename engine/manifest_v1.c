/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading manifest format version 1 (docs/format/manifest.md, "Reading
 * version 1"). A version 1 file numbers tablets 0..n-1 within its shard,
 * by the static map of engine/tablet.h; these decoders turn every number
 * -- flushed slots and SSTables' tablets, in snapshots and in edits --
 * into its catalog tablet id with eng_tablet_static_id, using the file's
 * own layout (from its snapshot), so the rest of the engine sees states
 * and edits as a version 2 file reads: unranged entries, edits creating
 * entries implicitly. Nothing writes version 1 any more.
 *
 * Version 1 payloads: fixed parts as version 2's (the snapshot's
 * identical; the edit's last u32 reserved), tablet numbers as u32 directly
 * followed by their u64s: flushed seqs as a bare array of n_tablets u64
 * slots, TABLE entries of 36 bytes, removed and flushed pairs of 12.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "engine/manifest_format.h"
#include "engine/manifest_int.h"
#include "engine/tablet.h"

/* The fixed parts are version 2's (manifest_int.h), but for the edit's
 * last 4 bytes: reserved here, version 2's dropped count. */
#define EDIT_RESERVED_OFF EDIT_N_DROPPED_OFF

#define TABLE_BYTES 36u                 /* tablet u32, file_id, file_size, min_seq, max_seq */
#define PAIR_BYTES 12u                  /* tablet u32 + u64 (removed: file_id; flushed: seq) */
#define SEQ_BYTES 8u

/* The static map of a version 1 layout: -SCREE_ECORRUPT if it has none. */
static int layout_map(const struct eng_manifest_layout *l, struct eng_tablet_map *ret)
{
        if (!l || eng_tablet_map_init(ret, l->n_shards, l->tablets_per_shard) < 0 ||
            l->shard >= l->n_shards)
                return -SCREE_ECORRUPT;
        return 0;
}

/* Catalog id of version 1 tablet number local of shard: -SCREE_ECORRUPT
 * when the shard has no such local tablet. */
static int local_id(const struct eng_tablet_map *m, uint32_t shard, uint32_t local, uint32_t *ret)
{
        if (local >= eng_tablet_map_per_shard(m))
                return -SCREE_ECORRUPT;
        *ret = eng_tablet_static_id(m, shard, local);
        return 0;
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

/* Reads n_tables TABLE entries at p into s->tables, each tablet number
 * (version 1: below n_slots) made a catalog id. */
static int tables_get(struct eng_manifest_state *s, const struct eng_tablet_map *m,
                      const uint8_t *p, uint32_t n_tables, uint32_t n_slots)
{
        if (!n_tables)
                return 0;
        s->tables = malloc((size_t)n_tables * sizeof(*s->tables));
        if (!s->tables)
                return -ENOMEM;
        for (uint32_t i = 0; i < n_tables; i++) {
                struct eng_manifest_table t;

                p = table_get(p, &t);
                if (t.tablet >= n_slots)
                        return -SCREE_ECORRUPT;
                t.tablet = eng_tablet_static_id(m, s->layout.shard, t.tablet);
                s->tables[s->n_tables++] = t;
        }
        return 0;
}

static bool has_table_of(const struct eng_manifest_state *s, uint32_t id)
{
        for (size_t i = 0; i < s->n_tables; i++)
                if (s->tables[i].tablet == id)
                        return true;
        return false;
}

/* Makes s's tablet entries from the n_slots flushed seqs at p: one for
 * every slot with a flushed seq or a table (s->tables already read), in
 * slot order, which is id order (eng_tablet_static_id increases with it). */
static int tablets_get(struct eng_manifest_state *s, const struct eng_tablet_map *m,
                       const uint8_t *p, uint32_t n_slots)
{
        if (!n_slots)
                return 0;
        s->tablets = malloc((size_t)n_slots * sizeof(*s->tablets));
        if (!s->tablets)
                return -ENOMEM;
        for (uint32_t l = 0; l < n_slots; l++) {
                uint64_t seq = le64_get(p + (size_t)l * SEQ_BYTES);
                uint32_t id = eng_tablet_static_id(m, s->layout.shard, l);

                if (seq || has_table_of(s, id))
                        s->tablets[s->n_tablets++] = (struct eng_manifest_tablet){
                                .id = id, .flushed_seq = seq };
        }
        return 0;
}

int eng_manifest_v1_snapshot_decode(const void *src, size_t len, struct eng_manifest_state *ret)
{
        const uint8_t *p = src;
        struct eng_manifest_layout layout;
        struct eng_manifest_state s;
        struct eng_tablet_map m;
        uint32_t n_slots, n_tables;
        int r;

        if (len < SNAP_FIXED_BYTES || le32_get(p + SNAP_RESERVED_OFF) != 0)
                return -SCREE_ECORRUPT;
        n_slots = le32_get(p + SNAP_N_TABLETS_OFF);
        n_tables = le32_get(p + SNAP_N_TABLES_OFF);
        if ((uint64_t)len !=
            SNAP_FIXED_BYTES + (uint64_t)n_slots * SEQ_BYTES + (uint64_t)n_tables * TABLE_BYTES)
                return -SCREE_ECORRUPT;
        layout.shard = le32_get(p + SNAP_SHARD_OFF);
        layout.n_shards = le32_get(p + SNAP_N_SHARDS_OFF);
        layout.tablets_per_shard = le32_get(p + SNAP_TABLETS_PER_SHARD_OFF);
        if (layout_map(&layout, &m) < 0 || n_slots > eng_tablet_map_per_shard(&m))
                return -SCREE_ECORRUPT;
        eng_manifest_state_init(&s, &layout);
        s.next_file_id = le64_get(p + SNAP_NEXT_FILE_ID_OFF);
        s.log_segment = le64_get(p + SNAP_LOG_SEGMENT_OFF);
        p += SNAP_FIXED_BYTES;
        r = tables_get(&s, &m, p + (size_t)n_slots * SEQ_BYTES, n_tables, n_slots);
        if (r == 0)
                r = tablets_get(&s, &m, p, n_slots);
        if (r == 0)
                r = eng_manifest_state_check(&s);
        if (r < 0) {
                eng_manifest_state_fini(&s);
                return r;
        }
        *ret = s;
        return 0;
}

/* Fills a (allocated for e's counts) from the variable part of a version 1
 * edit at p, tablet numbers made catalog ids. */
static int edit_fill(const struct eng_manifest_edit *e, const struct eng_manifest_edit_arrays *a,
                     const struct eng_tablet_map *m, uint32_t shard, const uint8_t *p)
{
        int r = 0;

        for (uint32_t i = 0; i < e->n_added && r == 0; i++) {
                p = table_get(p, &a->added[i]);
                r = local_id(m, shard, a->added[i].tablet, &a->added[i].tablet);
        }
        for (uint32_t i = 0; i < e->n_removed && r == 0; i++, p += PAIR_BYTES) {
                a->removed[i] = (struct eng_manifest_table){ .file_id = le64_get(p + 4) };
                r = local_id(m, shard, le32_get(p), &a->removed[i].tablet);
        }
        for (uint32_t i = 0; i < e->n_flushed && r == 0; i++, p += PAIR_BYTES) {
                a->seqs[i] = le64_get(p + 4);
                r = local_id(m, shard, le32_get(p), &a->tablets[i]);
        }
        return r;
}

int eng_manifest_v1_edit_decode(const void *src, size_t len, const struct eng_manifest_layout *layout,
                                struct eng_manifest_edit *ret, void **ret_mem)
{
        const uint8_t *p = src;
        struct eng_manifest_edit e = { 0 };
        struct eng_manifest_edit_arrays a = { 0 };
        struct eng_tablet_map m;
        void *mem = NULL;

        if (len < EDIT_FIXED_BYTES || le32_get(p + EDIT_RESERVED_OFF) != 0 ||
            layout_map(layout, &m) < 0)
                return -SCREE_ECORRUPT;
        e.next_file_id = le64_get(p + EDIT_NEXT_FILE_ID_OFF);
        e.log_segment = le64_get(p + EDIT_LOG_SEGMENT_OFF);
        e.n_added = le32_get(p + EDIT_N_ADDED_OFF);
        e.n_removed = le32_get(p + EDIT_N_REMOVED_OFF);
        e.n_flushed = le32_get(p + EDIT_N_FLUSHED_OFF);
        if ((uint64_t)len != EDIT_FIXED_BYTES + (uint64_t)e.n_added * TABLE_BYTES +
                             ((uint64_t)e.n_removed + e.n_flushed) * PAIR_BYTES)
                return -SCREE_ECORRUPT;
        if (len > EDIT_FIXED_BYTES && !(mem = eng_manifest_edit_arrays_new(&e, 0, &a)))
                return -ENOMEM;
        if (mem && edit_fill(&e, &a, &m, layout->shard, p + EDIT_FIXED_BYTES) < 0) {
                free(mem);
                return -SCREE_ECORRUPT;
        }
        eng_manifest_edit_arrays_set(&e, &a);
        e.implicit_entries = true;
        *ret = e;
        *ret_mem = mem;
        return 0;
}
