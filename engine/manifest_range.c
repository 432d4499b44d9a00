/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifest tablet ranges: the rules a range obeys, the disjointness of a
 * state's ranges, the key arena a state keeps them in, giving version 1
 * and 2 entries their ranges (eng_manifest_state_fill_ranges) and the
 * relayout of a state to the tablets a catalog wants
 * (eng_manifest_relayout). A range is [start, end) of internal keys, as
 * struct eng_tablet's (engine/shard_internal.h): keys compare as bytes,
 * so a table's ranges sort after the previous table's and ranges of
 * different tables never overlap. Contracts: manifest_format.h and
 * manifest_int.h; bytes: docs/format/manifest.md. Pure; any thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "engine/manifest_format.h"
#include "engine/manifest_int.h"

#define TABLE_ID_BYTES 4u

int eng_manifest_key_cmp(const uint8_t *a, uint32_t a_len, const uint8_t *b, uint32_t b_len)
{
        uint32_t n = a_len < b_len ? a_len : b_len;
        int c = n ? memcmp(a, b, n) : 0;

        return c ? c : (a_len > b_len) - (a_len < b_len);
}

bool eng_manifest_range_is_valid(const struct eng_manifest_tablet *t)
{
        uint8_t next[TABLE_ID_BYTES];

        if (t->start_len < TABLE_ID_BYTES || t->end_len < TABLE_ID_BYTES || !t->start || !t->end ||
            t->table == UINT32_MAX || be32_get(t->start) != t->table)
                return false;
        be32_put(next, t->table + 1);
        return eng_manifest_key_cmp(t->start, t->start_len, t->end, t->end_len) < 0 &&
               eng_manifest_key_cmp(t->end, t->end_len, next, TABLE_ID_BYTES) <= 0;
}

bool eng_manifest_unranged_is_valid(const struct eng_manifest_tablet *t)
{
        return !t->table && !t->start && !t->end && !t->start_len && !t->end_len;
}

bool eng_manifest_ranges_overlap(const struct eng_manifest_tablet *a,
                                 const struct eng_manifest_tablet *b)
{
        return a->table == b->table &&
               eng_manifest_key_cmp(a->start, a->start_len, b->end, b->end_len) < 0 &&
               eng_manifest_key_cmp(b->start, b->start_len, a->end, a->end_len) < 0;
}

static int cmp_start(const void *a, const void *b)
{
        const struct eng_manifest_tablet *x = *(const struct eng_manifest_tablet *const *)a;
        const struct eng_manifest_tablet *y = *(const struct eng_manifest_tablet *const *)b;

        return eng_manifest_key_cmp(x->start, x->start_len, y->start, y->start_len);
}

int eng_manifest_ranges_check(const struct eng_manifest_tablet *v, uint32_t n)
{
        const struct eng_manifest_tablet **by_start;
        uint32_t m = 0;
        int r = 0;

        if (n < 2)
                return 0;
        by_start = malloc(n * sizeof(*by_start));
        if (!by_start)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++)
                if (eng_manifest_tablet_is_ranged(&v[i]))
                        by_start[m++] = &v[i];
        qsort(by_start, m, sizeof(*by_start), cmp_start);
        /* Sorted by start, disjoint iff each ends at or before the next starts. */
        for (uint32_t i = 1; i < m && r == 0; i++)
                if (eng_manifest_key_cmp(by_start[i - 1]->end, by_start[i - 1]->end_len,
                                         by_start[i]->start, by_start[i]->start_len) > 0)
                        r = -SCREE_ECORRUPT;
        free(by_start);
        return r;
}

int eng_manifest_keys_pack(struct eng_manifest_tablet *v, uint32_t n, uint8_t **ret_keys)
{
        size_t bytes = 0;
        uint8_t *keys, *p;

        for (uint32_t i = 0; i < n; i++)
                bytes += (size_t)v[i].start_len + v[i].end_len;
        if (!bytes) {
                *ret_keys = NULL;
                return 0;
        }
        keys = malloc(bytes);
        if (!keys)
                return -ENOMEM;
        p = keys;
        for (uint32_t i = 0; i < n; i++) {
                if (!eng_manifest_tablet_is_ranged(&v[i]))
                        continue;
                memcpy(p, v[i].start, v[i].start_len);
                v[i].start = p;
                p += v[i].start_len;
                memcpy(p, v[i].end, v[i].end_len);
                v[i].end = p;
                p += v[i].end_len;
        }
        *ret_keys = keys;
        return 0;
}

/* ---- filling in ranges ---- */

static const struct eng_manifest_tablet *find_in(const struct eng_manifest_tablet *v, uint32_t n,
                                                 uint32_t id)
{
        for (uint32_t i = 0; i < n; i++)
                if (v[i].id == id)
                        return &v[i];
        return NULL;
}

int eng_manifest_state_fill_ranges(struct eng_manifest_state *s, const struct eng_manifest_tablet *ranges,
                                   uint32_t n)
{
        struct eng_manifest_tablet *v;
        uint8_t *keys;
        bool changed = false;
        int r;

        for (uint32_t i = 0; i < n; i++)
                if (!eng_manifest_range_is_valid(&ranges[i]))
                        return -EINVAL;
        if (!s->n_tablets)
                return 0;
        v = malloc(s->n_tablets * sizeof(*v));
        if (!v)
                return -ENOMEM;
        memcpy(v, s->tablets, s->n_tablets * sizeof(*v));
        for (uint32_t i = 0; i < s->n_tablets; i++) {
                const struct eng_manifest_tablet *w = find_in(ranges, n, v[i].id);

                if (!w || eng_manifest_tablet_is_ranged(&v[i]))
                        continue;
                v[i] = *w;
                v[i].flushed_seq = s->tablets[i].flushed_seq;
                changed = true;
        }
        r = changed ? eng_manifest_ranges_check(v, s->n_tablets) : 0;
        if (r == 0 && changed)
                r = eng_manifest_keys_pack(v, s->n_tablets, &keys);
        if (r < 0 || !changed) {
                free(v);
                return r == -SCREE_ECORRUPT ? -EINVAL : r;
        }
        free(s->tablets);
        free(s->keys);
        s->tablets = v;
        s->keys = keys;
        return 0;
}

/* ---- relayout ---- */

static int cmp_id(const void *a, const void *b)
{
        uint32_t x = (*(const struct eng_manifest_tablet *const *)a)->id;
        uint32_t y = (*(const struct eng_manifest_tablet *const *)b)->id;

        return (x > y) - (x < y);
}

/* Checks want as eng_manifest_relayout does; *ret_sorted: want by id
 * (caller frees). 0, -EINVAL or -ENOMEM. */
static int want_check(const struct eng_manifest_tablet *want, uint32_t n,
                      const struct eng_manifest_tablet ***ret_sorted)
{
        const struct eng_manifest_tablet **v = malloc((n ? n : 1) * sizeof(*v));
        int r = 0;

        if (!v)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                v[i] = &want[i];
                if (!eng_manifest_range_is_valid(&want[i]))
                        r = -EINVAL;
        }
        qsort(v, n, sizeof(*v), cmp_id);
        for (uint32_t i = 1; i < n && r == 0; i++)
                if (v[i]->id == v[i - 1]->id)
                        r = -EINVAL;
        if (r == 0)
                r = eng_manifest_ranges_check(want, n);
        if (r < 0) {
                free(v);
                return r == -ENOMEM ? r : -EINVAL;
        }
        *ret_sorted = v;
        return 0;
}

static bool is_wanted(const struct eng_manifest_tablet *const *sorted, uint32_t n, uint32_t id)
{
        uint32_t lo = 0, hi = n;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (sorted[mid]->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < n && sorted[lo]->id == id;
}

static bool same_range(const struct eng_manifest_tablet *a, const struct eng_manifest_tablet *b)
{
        return a->table == b->table &&
               !eng_manifest_key_cmp(a->start, a->start_len, b->start, b->start_len) &&
               !eng_manifest_key_cmp(a->end, a->end_len, b->end, b->end_len);
}

/* What a relayout does, counted (added: an upper bound, before
 * duplicates are left out). */
struct relayout {
        const struct eng_manifest_state *s;
        const struct eng_manifest_tablet *want;
        uint32_t n_want;
        bool *orphan;                   /* per entry of s */
        struct eng_manifest_edit e;
};

/* Whether s's entry i is an orphan whose range meets w's. */
static bool feeds(const struct relayout *rl, uint32_t i, const struct eng_manifest_tablet *w)
{
        const struct eng_manifest_tablet *o = &rl->s->tablets[i];

        return rl->orphan[i] && eng_manifest_tablet_is_ranged(o) && eng_manifest_ranges_overlap(o, w);
}

/* Marks orphans and counts the edit's parts into rl->e. -SCREE_ECORRUPT
 * if a wanted tablet's entry in s has another range. */
static int relayout_count(struct relayout *rl, const struct eng_manifest_tablet *const *sorted)
{
        const struct eng_manifest_state *s = rl->s;

        for (uint32_t i = 0; i < s->n_tablets; i++) {
                rl->orphan[i] = !is_wanted(sorted, rl->n_want, s->tablets[i].id);
                rl->e.n_dropped += rl->orphan[i];
        }
        for (size_t k = 0; k < s->n_tables; k++)
                rl->e.n_removed += !is_wanted(sorted, rl->n_want, s->tables[k].tablet);
        for (uint32_t w = 0; w < rl->n_want; w++) {
                const struct eng_manifest_tablet *have = eng_manifest_tablet_get(s, rl->want[w].id);

                if (have && !same_range(have, &rl->want[w]))
                        return -SCREE_ECORRUPT;
                if (have)
                        continue;
                rl->e.n_new_tablets++;
                for (size_t k = 0; k < s->n_tables; k++) {
                        const struct eng_manifest_tablet *o = eng_manifest_tablet_get(s, s->tables[k].tablet);

                        rl->e.n_added += feeds(rl, (uint32_t)(o - s->tablets), &rl->want[w]);
                }
        }
        return 0;
}

static bool added_has(const struct eng_manifest_edit *e, uint32_t from, uint64_t file_id)
{
        for (uint32_t i = from; i < e->n_added; i++)
                if (e->added[i].file_id == file_id)
                        return true;
        return false;
}

/* Whether the orphans feeding w cover all of w's range: else part of it
 * was a tablet the manifest never heard of (never flushed: a table's
 * first tablets, or a split's children of a never-flushed parent), whose
 * entries are all in the log. */
static bool fed_whole(const struct relayout *rl, const struct eng_manifest_tablet *w)
{
        const struct eng_manifest_state *s = rl->s;
        const uint8_t *cur = w->start;
        uint32_t cur_len = w->start_len;
        bool moved = true;

        while (moved && eng_manifest_key_cmp(cur, cur_len, w->end, w->end_len) < 0) {
                moved = false;
                for (uint32_t i = 0; i < s->n_tablets; i++) {
                        const struct eng_manifest_tablet *o = &s->tablets[i];

                        if (!feeds(rl, i, w) ||
                            eng_manifest_key_cmp(o->start, o->start_len, cur, cur_len) > 0 ||
                            eng_manifest_key_cmp(o->end, o->end_len, cur, cur_len) <= 0)
                                continue;
                        cur = o->end;           /* o holds cur: on from its end */
                        cur_len = o->end_len;
                        moved = true;
                        break;
                }
        }
        return eng_manifest_key_cmp(cur, cur_len, w->end, w->end_len) >= 0;
}

/* Creates wanted tablet w: its entry and the tables of the orphans it
 * overlaps (each file once), into a's arrays at e's counts. */
static void relayout_new(struct relayout *rl, const struct eng_manifest_edit_arrays *a,
                         const struct eng_manifest_tablet *w)
{
        const struct eng_manifest_state *s = rl->s;
        struct eng_manifest_tablet *nt = &a->new_tablets[rl->e.n_new_tablets++];
        uint32_t first = rl->e.n_added;

        *nt = *w;
        /* The lowest of them: what holds for all of its range (a split's
         * child has one; the members of a merge may differ, and a replay
         * from the lowest only repeats what the others flushed). */
        nt->flushed_seq = UINT64_MAX;
        for (uint32_t i = 0; i < s->n_tablets; i++)
                if (feeds(rl, i, w) && s->tablets[i].flushed_seq < nt->flushed_seq)
                        nt->flushed_seq = s->tablets[i].flushed_seq;
        if (nt->flushed_seq == UINT64_MAX || !fed_whole(rl, w))
                nt->flushed_seq = 0;
        rl->e.added = a->added;         /* for added_has */
        for (size_t k = 0; k < s->n_tables; k++) {
                const struct eng_manifest_table *t = &s->tables[k];
                const struct eng_manifest_tablet *o = eng_manifest_tablet_get(s, t->tablet);

                if (!feeds(rl, (uint32_t)(o - s->tablets), w) || added_has(&rl->e, first, t->file_id))
                        continue;
                a->added[rl->e.n_added] = *t;
                a->added[rl->e.n_added++].tablet = w->id;
        }
}

static void relayout_fill(struct relayout *rl, const struct eng_manifest_edit_arrays *a)
{
        const struct eng_manifest_state *s = rl->s;

        rl->e.n_new_tablets = rl->e.n_added = rl->e.n_removed = rl->e.n_dropped = 0;
        for (uint32_t w = 0; w < rl->n_want; w++)
                if (!eng_manifest_tablet_get(s, rl->want[w].id))
                        relayout_new(rl, a, &rl->want[w]);
        for (size_t k = 0; k < s->n_tables; k++) {
                const struct eng_manifest_tablet *o = eng_manifest_tablet_get(s, s->tables[k].tablet);

                if (rl->orphan[o - s->tablets])
                        a->removed[rl->e.n_removed++] = s->tables[k];
        }
        for (uint32_t i = 0; i < s->n_tablets; i++)
                if (rl->orphan[i])
                        a->dropped[rl->e.n_dropped++] = s->tablets[i].id;
}

int eng_manifest_relayout(const struct eng_manifest_state *s, const struct eng_manifest_tablet *want,
                          uint32_t n_want, struct eng_manifest_edit *ret, void **ret_mem)
{
        struct relayout rl = { .s = s, .want = want, .n_want = n_want };
        const struct eng_manifest_tablet **sorted = NULL;
        struct eng_manifest_edit_arrays a = { 0 };
        void *mem = NULL;
        int r = want_check(want, n_want, &sorted);

        if (r < 0)
                return r;
        rl.orphan = calloc(s->n_tablets + 1, sizeof(*rl.orphan));
        r = rl.orphan ? relayout_count(&rl, sorted) : -ENOMEM;
        if (r == 0 && (rl.e.n_new_tablets || rl.e.n_dropped)) {
                mem = eng_manifest_edit_arrays_new(&rl.e, 0, &a);
                if (mem)
                        relayout_fill(&rl, &a);
                else
                        r = -ENOMEM;
        }
        free(sorted);
        free(rl.orphan);
        if (r < 0)
                return r;
        eng_manifest_edit_arrays_set(&rl.e, &a);
        *ret = rl.e;
        *ret_mem = mem;
        return 0;
}
