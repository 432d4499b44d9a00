/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of manifest tablet ranges (engine/manifest_range.c and the range
 * rules of manifest_state.c): version 3 states with ranges, version 2
 * states read unranged and filled in, the range invariants and their
 * errors, files shared by several tablets, and eng_manifest_relayout --
 * splits, merges, orphans, and a property test over random layouts.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "engine/manifest_format.h"
#include "tests/engine/manifest_helpers.h"

TestSuite(manifest_range, .timeout = 30);

#define TBL 5u
#define MAX_T 16

/* Tablets with their keys: [TBL|lo, TBL|hi), "" = the table's start,
 * NULL hi = its end. */
struct layout {
        struct eng_manifest_tablet t[MAX_T];
        uint8_t keys[MAX_T][32];
        uint32_t n;
};

static void lay(struct layout *l, uint32_t id, const char *lo, const char *hi, uint64_t seq)
{
        cr_assert(lt(u32, l->n, MAX_T));
        l->t[l->n] = (struct eng_manifest_tablet){ .id = id, .flushed_seq = seq };
        manifest_range_set(&l->t[l->n], TBL, lo, hi, l->keys[l->n]);
        l->n++;
}

static const struct eng_manifest_layout LAYOUT = { .shard = 0, .n_shards = 1, .tablets_per_shard = 4 };

/* A state with l's tablets and, per tablet i, the files ids[i][0..3] (0:
 * none; a file named twice is shared, with the same meta). */
static void state_of(struct eng_manifest_state *s, const struct layout *l, const uint64_t (*ids)[4])
{
        struct eng_manifest_table tables[MAX_T * 4];
        struct eng_manifest_edit e = { .new_tablets = l->t, .n_new_tablets = l->n, .added = tables };

        eng_manifest_state_init(s, &LAYOUT);
        for (uint32_t i = 0; i < l->n; i++)
                for (uint32_t k = 0; ids && k < 4; k++)
                        if (ids[i][k])
                                tables[e.n_added++] = (struct eng_manifest_table){
                                .tablet = l->t[i].id, .file_id = ids[i][k],
                                .file_size = 100 * ids[i][k], .min_seq = ids[i][k],
                                .max_seq = ids[i][k] };
        cr_assert(eq(int, eng_manifest_state_apply(s, &e), 0));
        cr_assert(eq(int, eng_manifest_state_check(s), 0));
}

/* Whether tablet id of s names file_id. */
static bool names(const struct eng_manifest_state *s, uint32_t id, uint64_t file_id)
{
        for (size_t i = 0; i < s->n_tables; i++)
                if (s->tables[i].tablet == id && s->tables[i].file_id == file_id)
                        return true;
        return false;
}

static uint32_t n_tables_of(const struct eng_manifest_state *s, uint32_t id)
{
        uint32_t n = 0;

        for (size_t i = 0; i < s->n_tables; i++)
                n += s->tables[i].tablet == id;
        return n;
}

/* Relays s out to want and applies it. */
static void relayout(struct eng_manifest_state *s, const struct layout *want)
{
        struct eng_manifest_edit e;
        void *mem;

        cr_assert(eq(int, eng_manifest_relayout(s, want->t, want->n, &e, &mem), 0));
        cr_assert(eq(int, eng_manifest_state_apply(s, &e), 0));
        free(mem);
        cr_assert(eq(int, eng_manifest_state_check(s), 0));
        cr_assert(eq(u32, s->n_tablets, want->n), "exactly the wanted tablets");
}

/* ---- ranges in states ---- */

Test(manifest_range, a_ranged_state_round_trips_and_copies_its_keys)
{
        struct layout l = { 0 };
        struct eng_manifest_state s, got, c;
        static const uint64_t ids[][4] = { { 1, 2 }, { 3 } };
        uint8_t buf[1024];

        lay(&l, 10, "", "k", 5);
        lay(&l, 11, "k", NULL, 7);
        state_of(&s, &l, ids);
        memset(l.keys, 0xee, sizeof(l.keys));   /* the state holds copies */
        cr_expect(eq(u32, be32_get(s.tablets[1].end), TBL + 1));
        cr_assert(le(sz, eng_manifest_snapshot_size(&s), sizeof(buf)));
        eng_manifest_snapshot_encode(buf, &s);
        cr_assert(eq(int, eng_manifest_snapshot_decode(buf, eng_manifest_snapshot_size(&s),
                                                       ENG_MANIFEST_VERSION, &got), 0));
        cr_expect(manifest_state_is_equal(&s, &got));
        cr_assert(eq(int, eng_manifest_state_copy(&c, &got), 0));
        eng_manifest_state_fini(&got);
        cr_expect(manifest_state_is_equal(&s, &c), "a copy owns its keys");
        eng_manifest_state_fini(&c);
        eng_manifest_state_fini(&s);
}

/* A version 2 snapshot payload: tablets as (id, seq) pairs, no keys. */
static size_t v2_snapshot(uint8_t *p, const struct eng_manifest_state *s)
{
        uint8_t *q = p + 40;

        memset(p, 0, 40);
        le32_put(p + 4, 1);
        le32_put(p + 8, 4);
        le32_put(p + 12, s->n_tablets);
        le64_put(p + 16, s->next_file_id);
        le64_put(p + 24, s->log_segment);
        le32_put(p + 32, (uint32_t)s->n_tables);
        for (uint32_t i = 0; i < s->n_tablets; i++, q += 16) {
                le64_put(q, s->tablets[i].id);
                le64_put(q + 8, s->tablets[i].flushed_seq);
        }
        for (size_t i = 0; i < s->n_tables; i++, q += 40) {
                const struct eng_manifest_table *t = &s->tables[i];

                le64_put(q, t->tablet);
                le64_put(q + 8, t->file_id);
                le64_put(q + 16, t->file_size);
                le64_put(q + 24, t->min_seq);
                le64_put(q + 32, t->max_seq);
        }
        return (size_t)(q - p);
}

Test(manifest_range, a_version_2_state_reads_unranged_and_once_filled_is_written_as_version_3)
{
        struct layout l = { 0 }, other = { 0 };
        struct eng_manifest_state s, got, back;
        static const uint64_t ids[][4] = { { 1 }, { 2, 3 } };
        uint8_t buf[1024];
        size_t n;

        lay(&l, 10, "", "k", 5);
        lay(&l, 11, "k", NULL, 7);
        state_of(&s, &l, ids);
        n = v2_snapshot(buf, &s);
        cr_assert(eq(int, eng_manifest_snapshot_decode(buf, n, ENG_MANIFEST_VERSION_UNRANGED, &got), 0));
        cr_assert(eq(u32, got.n_tablets, 2));
        cr_expect(not(eng_manifest_tablet_is_ranged(&got.tablets[0])));
        cr_expect(eq(u32, got.tablets[1].table, 0));
        cr_expect(eq(u64, got.tablets[1].flushed_seq, 7));
        cr_expect(not(eng_manifest_state_is_ranged(&got)));
        cr_expect(eq(int, eng_manifest_state_check(&got), 0), "unranged entries pass the check");
        /* Ranges that overlap once filled in are refused, changing nothing. */
        lay(&other, 10, "", "m", 0);
        lay(&other, 11, "k", NULL, 0);
        cr_expect(eq(int, eng_manifest_state_fill_ranges(&got, other.t, 2), -EINVAL));
        cr_expect(not(eng_manifest_tablet_is_ranged(&got.tablets[0])));
        /* Part of them: the rest stays unranged. */
        cr_assert(eq(int, eng_manifest_state_fill_ranges(&got, &l.t[1], 1), 0));
        cr_expect(not(eng_manifest_tablet_is_ranged(&got.tablets[0])));
        cr_expect(eng_manifest_tablet_is_ranged(&got.tablets[1]));
        cr_assert(eq(int, eng_manifest_state_fill_ranges(&got, l.t, 2), 0));
        cr_expect(manifest_state_is_equal(&got, &s), "filled: the state the version 2 file held");
        eng_manifest_snapshot_encode(buf, &got);
        cr_assert(eq(int, eng_manifest_snapshot_decode(buf, eng_manifest_snapshot_size(&got),
                                                       ENG_MANIFEST_VERSION, &back), 0));
        cr_expect(manifest_state_is_equal(&back, &s));
        eng_manifest_state_fini(&back);
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&s);
}

Test(manifest_range, malformed_and_overlapping_ranges_are_corrupt)
{
        struct layout l = { 0 };
        struct eng_manifest_state s;
        uint8_t big[8];

        lay(&l, 10, "", "k", 0);
        lay(&l, 11, "k", NULL, 0);
        state_of(&s, &l, NULL);
        s.tablets[0].table = TBL + 1;           /* start not of its table */
        cr_expect(eq(int, eng_manifest_state_check(&s), -SCREE_ECORRUPT));
        s.tablets[0].table = TBL;
        s.tablets[0].end_len = 4;               /* end == start: empty */
        cr_expect(eq(int, eng_manifest_state_check(&s), -SCREE_ECORRUPT));
        s.tablets[0].end_len = 5;
        s.tablets[0].start_len = 3;             /* shorter than a table id */
        cr_expect(eq(int, eng_manifest_state_check(&s), -SCREE_ECORRUPT));
        s.tablets[0].start_len = 4;
        be32_put(big, TBL + 1);
        big[4] = 0;
        s.tablets[1].end = big;                 /* past the next table's start */
        s.tablets[1].end_len = 5;
        cr_expect(eq(int, eng_manifest_state_check(&s), -SCREE_ECORRUPT));
        s.tablets[1].end_len = 4;               /* exactly there: fine */
        cr_expect(eq(int, eng_manifest_state_check(&s), 0));
        s.tablets[1].start = s.tablets[0].start;        /* overlaps tablet 10 */
        s.tablets[1].start_len = s.tablets[0].start_len;
        cr_expect(eq(int, eng_manifest_state_check(&s), -SCREE_ECORRUPT));
        s.tablets[1].start_len = 0;             /* unranged but not zeroed */
        cr_expect(eq(int, eng_manifest_state_check(&s), -SCREE_ECORRUPT));
        s.tablets[1] = (struct eng_manifest_tablet){ .id = 11 };
        cr_expect(eq(int, eng_manifest_state_check(&s), 0), "unranged");
        eng_manifest_state_fini(&s);
}

Test(manifest_range, new_tablets_need_a_fresh_id_and_a_range_that_overlaps_none)
{
        struct layout l = { 0 }, n = { 0 };
        struct eng_manifest_state s, before;
        struct eng_manifest_edit e = { .n_new_tablets = 1 };

        lay(&l, 10, "", "k", 3);
        state_of(&s, &l, NULL);
        cr_assert(eq(int, eng_manifest_state_copy(&before, &s), 0));
        lay(&n, 10, "k", NULL, 0);              /* 0: the id is taken */
        lay(&n, 12, "j", NULL, 0);              /* 1: overlaps 10 */
        lay(&n, 12, "k", NULL, 0);              /* 2: fine */
        n.t[3] = (struct eng_manifest_tablet){ .id = 13 };      /* 3: unranged */
        n.n = 4;
        for (uint32_t i = 0; i < 4; i++) {
                e.new_tablets = &n.t[i];
                cr_expect(eq(int, eng_manifest_state_apply(&s, &e), i == 2 ? 0 : -SCREE_ECORRUPT),
                          "new tablet %u", i);
                if (i < 2)
                        cr_expect(manifest_state_is_equal(&s, &before), "unchanged");
        }
        e.new_tablets = &n.t[2];
        cr_expect(eq(int, eng_manifest_state_apply(&s, &e), -SCREE_ECORRUPT), "12 exists now");
        cr_expect(eq(u32, s.n_tablets, 2));
        eng_manifest_state_fini(&before);
        eng_manifest_state_fini(&s);
}

/* ---- shared files ---- */

/* One edit splits P (20, with files 1 and 2) into A (21) and B (22). */
Test(manifest_range, one_edit_splits_a_tablet_whose_children_share_its_files)
{
        struct layout p = { 0 }, ab = { 0 };
        static const uint64_t ids[][4] = { { 1, 2 } };
        struct eng_manifest_state s;
        struct eng_manifest_table added[4], removed[2];
        const uint32_t dropped[] = { 20 };
        struct eng_manifest_edit e = { .added = added, .n_added = 4, .removed = removed,
                                       .n_removed = 2, .dropped_tablets = dropped, .n_dropped = 1 };

        lay(&p, 20, "", NULL, 50);
        state_of(&s, &p, ids);
        lay(&ab, 21, "", "m", 50);
        lay(&ab, 22, "m", NULL, 50);
        e.new_tablets = ab.t;
        e.n_new_tablets = 2;
        for (uint32_t i = 0; i < 2; i++) {
                removed[i] = s.tables[i];
                added[i] = added[i + 2] = s.tables[i];
                added[i].tablet = 21;
                added[i + 2].tablet = 22;
        }
        added[3].file_size++;           /* a shared file with another size */
        cr_expect(eq(int, eng_manifest_state_apply(&s, &e), -SCREE_ECORRUPT));
        added[3].file_size--;
        added[3].tablet = 21;           /* (21, 2) twice */
        cr_expect(eq(int, eng_manifest_state_apply(&s, &e), -SCREE_ECORRUPT));
        added[3].tablet = 22;
        cr_assert(eq(int, eng_manifest_state_apply(&s, &e), 0));
        cr_assert(eq(int, eng_manifest_state_check(&s), 0));
        cr_expect(not(eng_manifest_has_tablet(&s, 20)));
        cr_expect(names(&s, 21, 1) && names(&s, 21, 2) && names(&s, 22, 1) && names(&s, 22, 2));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 22), 50));
        /* A compaction of 21 takes file 1 out of it: 22 still names it. */
        e = (struct eng_manifest_edit){ .removed = &added[0], .n_removed = 1 };
        cr_assert(eq(int, eng_manifest_state_apply(&s, &e), 0));
        cr_expect(eng_manifest_names_file(&s, 1), "still 22's");
        e.removed = &added[2];
        cr_assert(eq(int, eng_manifest_state_apply(&s, &e), 0));
        cr_expect(not(eng_manifest_names_file(&s, 1)), "named by none: may go");
        cr_expect(eng_manifest_names_file(&s, 2));
        cr_expect(not(eng_manifest_names_file(&s, 99)));
        eng_manifest_state_fini(&s);
}

/* ---- relayout ---- */

Test(manifest_range, relayout_splits_a_tablet_into_children_sharing_its_files)
{
        struct layout p = { 0 }, want = { 0 };
        static const uint64_t ids[][4] = { { 1, 2 } };
        struct eng_manifest_state s;

        lay(&p, 20, "", NULL, 50);
        state_of(&s, &p, ids);
        lay(&want, 21, "", "m", 0);
        lay(&want, 22, "m", NULL, 0);
        relayout(&s, &want);
        cr_expect(names(&s, 21, 1) && names(&s, 21, 2) && names(&s, 22, 1) && names(&s, 22, 2));
        cr_expect(eq(sz, s.n_tables, 4));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 21), 50), "the parent's flushed seq");
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 22), 50));
        cr_expect(not(eng_manifest_has_tablet(&s, 20)));
        eng_manifest_state_fini(&s);
}

Test(manifest_range, relayout_merges_tablets_into_one_with_all_files_and_the_lowest_seq)
{
        struct layout p = { 0 }, want = { 0 };
        static const uint64_t ids[][4] = { { 1, 2 }, { 2, 3 } };    /* 2 shared already */
        struct eng_manifest_state s;

        lay(&p, 20, "", "m", 40);
        lay(&p, 21, "m", NULL, 90);
        state_of(&s, &p, ids);
        lay(&want, 30, "", NULL, 0);
        relayout(&s, &want);
        cr_expect(eq(u32, n_tables_of(&s, 30), 3), "files 1, 2, 3; 2 once");
        cr_expect(names(&s, 30, 1) && names(&s, 30, 2) && names(&s, 30, 3));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 30), 40), "a replay from 40 loses nothing");
        eng_manifest_state_fini(&s);
}

Test(manifest_range, relayout_keeps_wanted_tablets_and_drops_unrelated_orphans)
{
        struct layout p = { 0 }, want = { 0 };
        static const uint64_t ids[][4] = { { 1 }, { 2 }, { 3 } };
        struct eng_manifest_state s;
        struct eng_manifest_edit e;
        struct eng_manifest_tablet other;
        uint8_t keys[32];
        void *mem;

        lay(&p, 20, "", "c", 40);
        lay(&p, 21, "c", "m", 50);      /* of a dropped table, say */
        lay(&p, 22, "m", NULL, 60);
        state_of(&s, &p, ids);
        lay(&want, 20, "", "c", 0);
        lay(&want, 22, "m", NULL, 0);
        lay(&want, 23, "a", "b", 0);    /* new, inside 20: inherits nothing */
        /* Everything wanted that is there: an empty edit. */
        cr_assert(eq(int, eng_manifest_relayout(&s, p.t, p.n, &e, &mem), 0));
        cr_expect(eq(ptr, mem, NULL));
        cr_expect(eq(u32, e.n_new_tablets + e.n_added + e.n_removed + e.n_dropped, 0));
        /* Wanted and there but with another range: the catalog disagrees. */
        other = want.t[0];
        manifest_range_set(&other, TBL, "", "d", keys);
        cr_expect(eq(int, eng_manifest_relayout(&s, &other, 1, &e, &mem), -SCREE_ECORRUPT));
        cr_expect(eq(int, eng_manifest_relayout(&s, want.t, 2, &e, &mem), 0));
        free(mem);
        want.t[2] = (struct eng_manifest_tablet){ .id = 23 };
        cr_expect(eq(int, eng_manifest_relayout(&s, want.t, 3, &e, &mem), -EINVAL), "unranged");
        want.n = 2;
        lay(&want, 23, "z", NULL, 0);   /* overlaps 22 */
        cr_expect(eq(int, eng_manifest_relayout(&s, want.t, 3, &e, &mem), -EINVAL));
        want.n = 2;
        lay(&want, 20, "c", "d", 0);    /* an id twice */
        cr_expect(eq(int, eng_manifest_relayout(&s, want.t, 3, &e, &mem), -EINVAL));
        want.n = 2;
        relayout(&s, &want);
        cr_expect(names(&s, 20, 1) && names(&s, 22, 3));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 20), 40), "untouched");
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 22), 60));
        cr_expect(not(eng_manifest_names_file(&s, 2)), "the orphan's file is named by none");
        eng_manifest_state_fini(&s);
}

Test(manifest_range, relayout_gives_an_unranged_orphan_to_none)
{
        struct layout p = { 0 }, want = { 0 };
        static const uint64_t ids[][4] = { { 1 } };
        struct eng_manifest_state s;

        lay(&p, 20, "", NULL, 40);
        state_of(&s, &p, ids);
        s.tablets[0] = (struct eng_manifest_tablet){ .id = 20, .flushed_seq = 40 };
        lay(&want, 21, "", NULL, 0);
        relayout(&s, &want);
        cr_expect(eq(u32, n_tables_of(&s, 21), 0));
        cr_expect(eq(u64, eng_manifest_flushed_seq(&s, 21), 0));
        cr_expect(not(eng_manifest_names_file(&s, 1)));
        eng_manifest_state_fini(&s);
}

/* ---- property: random layouts before and after ---- */

static uint64_t rnd(uint64_t *x)
{
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        return *x;
}

/* n tablets tiling table TBL at random cut bytes, ids from id0, seqs random. */
static void random_layout(struct layout *l, uint64_t *x, uint32_t n, uint32_t id0)
{
        char cuts[MAX_T][2] = { { 0 } };
        bool used[256] = { false };

        for (uint32_t i = 1; i < n; i++) {
                uint8_t c;

                do
                        c = (uint8_t)(1 + rnd(x) % 254);
                while (used[c]);
                used[c] = true;
        }
        for (uint32_t c = 1, i = 1; c < 256; c++)
                if (used[c])
                        cuts[i++][0] = (char)c;
        l->n = 0;
        for (uint32_t i = 0; i < n; i++)
                lay(l, id0 + i, cuts[i], i + 1 < n ? cuts[i + 1] : NULL, 1 + rnd(x) % 1000);
}

static int manifest_key_cmp(const uint8_t *a, uint32_t a_len, const uint8_t *b, uint32_t b_len)
{
        int c = memcmp(a, b, a_len < b_len ? a_len : b_len);

        return c ? c : (a_len > b_len) - (a_len < b_len);
}

static bool overlap(const struct eng_manifest_tablet *a, const struct eng_manifest_tablet *b)
{
        return manifest_key_cmp(a->start, a->start_len, b->end, b->end_len) < 0 &&
               manifest_key_cmp(b->start, b->start_len, a->end, a->end_len) < 0;
}

Test(manifest_range, relayout_gives_every_new_tablet_exactly_the_files_of_what_it_overlaps)
{
        uint64_t x = 0x9e3779b97f4a7c15u;

        for (int round = 0; round < 300; round++) {
                struct layout before, after;
                uint64_t ids[MAX_T][4] = { { 0 } }, next = 1;
                struct eng_manifest_state s;

                random_layout(&before, &x, 1 + (uint32_t)(rnd(&x) % 6), 100);
                random_layout(&after, &x, 1 + (uint32_t)(rnd(&x) % 6), 200);
                for (uint32_t i = 0; i < before.n; i++)
                        for (uint32_t k = 0; k < rnd(&x) % 4; k++)
                                ids[i][k] = next++;
                /* Now and then a file shared with the neighbour, as a split leaves them. */
                for (uint32_t i = 1; i < before.n; i++)
                        if (rnd(&x) % 3 == 0 && ids[i - 1][0] && !ids[i][3])
                                ids[i][3] = ids[i - 1][0];
                state_of(&s, &before, (const uint64_t(*)[4])ids);
                relayout(&s, &after);
                for (uint32_t w = 0; w < after.n; w++) {
                        uint64_t seq = UINT64_MAX;
                        uint32_t want_n = 0;

                        for (uint64_t f = 1; f < next; f++) {
                                bool inherit = false;

                                for (uint32_t o = 0; o < before.n; o++)
                                        for (uint32_t k = 0; k < 4; k++)
                                                if (ids[o][k] == f && overlap(&before.t[o], &after.t[w]))
                                                        inherit = true;
                                want_n += inherit;
                                cr_assert(eq(int, names(&s, after.t[w].id, f), inherit),
                                          "round %d: tablet %u, file %llu", round, after.t[w].id,
                                          (unsigned long long)f);
                        }
                        for (uint32_t o = 0; o < before.n; o++)
                                if (overlap(&before.t[o], &after.t[w]) && before.t[o].flushed_seq < seq)
                                        seq = before.t[o].flushed_seq;
                        if (seq == UINT64_MAX)
                                seq = 0;        /* it overlaps no orphan */
                        cr_assert(eq(u32, n_tables_of(&s, after.t[w].id), want_n));
                        cr_assert(eq(u64, eng_manifest_flushed_seq(&s, after.t[w].id), seq),
                                  "round %d", round);
                }
                eng_manifest_state_fini(&s);
        }
}
