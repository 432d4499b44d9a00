/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifest states: init/copy/fini, lookups, the invariants
 * (eng_manifest_state_check) and applying edits, which validates the whole
 * edit before changing anything. The codecs and the reader are in
 * manifest_format.c; the contracts in manifest_format.h. A state's tablet
 * entries stay sorted by id: an edit builds the new array aside and swaps
 * it in only once nothing else can fail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "engine/manifest_format.h"

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

void eng_manifest_state_init(struct eng_manifest_state *s, const struct eng_manifest_layout *layout)
{
        *s = (struct eng_manifest_state){ .layout = *layout };
}

int eng_manifest_state_copy(struct eng_manifest_state *dst, const struct eng_manifest_state *src)
{
        struct eng_manifest_state c = *src;
        void *tablets, *tables;

        if (dup_bytes(&tablets, src->tablets, src->n_tablets * sizeof(*src->tablets)) < 0)
                return -ENOMEM;
        if (dup_bytes(&tables, src->tables, src->n_tables * sizeof(*src->tables)) < 0) {
                free(tablets);
                return -ENOMEM;
        }
        c.tablets = tablets;
        c.tables = tables;
        *dst = c;
        return 0;
}

void eng_manifest_state_fini(struct eng_manifest_state *s)
{
        free(s->tablets);
        free(s->tables);
        memset(s, 0, sizeof(*s));
}

/* The index of id's entry in v (n sorted entries), or where it would go. */
static uint32_t tablet_lower_bound(const struct eng_manifest_tablet *v, uint32_t n, uint32_t id)
{
        uint32_t lo = 0, hi = n;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (v[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static struct eng_manifest_tablet *tablet_find(struct eng_manifest_tablet *v, uint32_t n, uint32_t id)
{
        uint32_t i = tablet_lower_bound(v, n, id);

        return i < n && v[i].id == id ? &v[i] : NULL;
}

static bool has_tablet(const struct eng_manifest_state *s, uint32_t id)
{
        return tablet_find(s->tablets, s->n_tablets, id) != NULL;
}

uint64_t eng_manifest_flushed_seq(const struct eng_manifest_state *s, uint32_t tablet_id)
{
        const struct eng_manifest_tablet *t = tablet_find(s->tablets, s->n_tablets, tablet_id);

        return t ? t->flushed_seq : 0;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return (x > y) - (x < y);
}

static int check_file_ids_unique(const struct eng_manifest_state *s)
{
        uint64_t *ids;
        int r = 0;

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

int eng_manifest_state_check(const struct eng_manifest_state *s)
{
        if ((s->n_tablets && !s->tablets) || (s->n_tables && !s->tables))
                return -SCREE_ECORRUPT;
        for (uint32_t i = 1; i < s->n_tablets; i++)
                if (s->tablets[i].id <= s->tablets[i - 1].id)
                        return -SCREE_ECORRUPT;
        for (size_t i = 0; i < s->n_tables; i++) {
                const struct eng_manifest_table *t = &s->tables[i];

                if (t->min_seq > t->max_seq || t->file_id >= s->next_file_id ||
                    !has_tablet(s, t->tablet))
                        return -SCREE_ECORRUPT;
        }
        return check_file_ids_unique(s);
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

static bool has_u32(const uint32_t *v, uint32_t n, uint32_t x)
{
        for (uint32_t i = 0; i < n; i++)
                if (v[i] == x)
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

                if (a->min_seq > a->max_seq || a->file_id == UINT64_MAX || has_file_id(s, a->file_id))
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

                if (e->flushed_seqs[i] < eng_manifest_flushed_seq(s, t))
                        return -SCREE_ECORRUPT;
                /* Twice in one edit: applied in order, so it must not go back. */
                for (uint32_t j = 0; j < i; j++)
                        if (e->flushed_tablets[j] == t && e->flushed_seqs[j] > e->flushed_seqs[i])
                                return -SCREE_ECORRUPT;
        }
        return 0;
}

/* Whether tablet id still has a table once e's removals and additions are done. */
static bool keeps_a_table(const struct eng_manifest_state *s, const struct eng_manifest_edit *e,
                          uint32_t id)
{
        for (size_t i = 0; i < s->n_tables; i++)
                if (s->tables[i].tablet == id && !removes(e, e->n_removed, &s->tables[i]))
                        return true;
        for (uint32_t i = 0; i < e->n_added; i++)
                if (e->added[i].tablet == id)
                        return true;
        return false;
}

static int validate_dropped(const struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        for (uint32_t i = 0; i < e->n_dropped; i++) {
                uint32_t id = e->dropped_tablets[i];

                if (!has_tablet(s, id) || has_u32(e->dropped_tablets, i, id) ||
                    has_u32(e->flushed_tablets, e->n_flushed, id) || keeps_a_table(s, e, id))
                        return -SCREE_ECORRUPT;
        }
        return 0;
}

static int validate_edit(const struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        int r;

        if ((e->n_added && !e->added) || (e->n_removed && !e->removed) ||
            (e->n_flushed && (!e->flushed_tablets || !e->flushed_seqs)) ||
            (e->n_dropped && !e->dropped_tablets))
                return -SCREE_ECORRUPT;
        if ((e->next_file_id && e->next_file_id < s->next_file_id) ||
            (e->log_segment && e->log_segment < s->log_segment))
                return -SCREE_ECORRUPT;
        r = validate_tables(s, e);
        if (r == 0)
                r = validate_flushed(s, e);
        return r < 0 ? r : validate_dropped(s, e);
}

/* Adds an entry (flushed seq 0) for id to v (n sorted entries, room for
 * one more) unless it has one; returns the new count. */
static uint32_t tablet_add(struct eng_manifest_tablet *v, uint32_t n, uint32_t id)
{
        uint32_t i = tablet_lower_bound(v, n, id);

        if (i < n && v[i].id == id)
                return n;
        memmove(&v[i + 1], &v[i], (n - i) * sizeof(*v));
        v[i] = (struct eng_manifest_tablet){ .id = id };
        return n + 1;
}

/*
 * The tablets of s after e (validated), in a new array *ret (NULL when
 * empty) of *ret_n entries: an entry added for every new id of e's added
 * tables and flushed seqs, flushed seqs set in e's order, dropped entries
 * gone. Returns 0 or -ENOMEM (s untouched either way).
 */
static int tablets_after(const struct eng_manifest_state *s, const struct eng_manifest_edit *e,
                         struct eng_manifest_tablet **ret, uint32_t *ret_n)
{
        size_t cap = (size_t)s->n_tablets + e->n_added + e->n_flushed;
        struct eng_manifest_tablet *v = cap ? malloc(cap * sizeof(*v)) : NULL;
        uint32_t n = s->n_tablets;

        if (cap && !v)
                return -ENOMEM;
        if (n)
                memcpy(v, s->tablets, n * sizeof(*v));
        for (uint32_t i = 0; i < e->n_added; i++)
                n = tablet_add(v, n, e->added[i].tablet);
        for (uint32_t i = 0; i < e->n_flushed; i++) {
                n = tablet_add(v, n, e->flushed_tablets[i]);
                v[tablet_lower_bound(v, n, e->flushed_tablets[i])].flushed_seq = e->flushed_seqs[i];
        }
        for (uint32_t i = 0; i < e->n_dropped; i++) {
                uint32_t k = tablet_lower_bound(v, n, e->dropped_tablets[i]);

                memmove(&v[k], &v[k + 1], (n - k - 1) * sizeof(*v));
                n--;
        }
        if (n == 0) {
                free(v);
                v = NULL;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int eng_manifest_state_apply(struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        struct eng_manifest_tablet *tablets = s->tablets;
        uint32_t n_tablets = s->n_tablets;
        size_t kept = 0;
        int r = validate_edit(s, e);

        if (r < 0)
                return r;
        /* Everything allocated first: from here on nothing can fail. */
        if ((e->n_added || e->n_flushed || e->n_dropped) &&
            tablets_after(s, e, &tablets, &n_tablets) < 0)
                return -ENOMEM;
        if (e->n_added) {
                size_t n = s->n_tables + e->n_added;
                struct eng_manifest_table *v = realloc(s->tables, n * sizeof(*v));

                if (!v) {
                        if (tablets != s->tablets)
                                free(tablets);
                        return -ENOMEM;
                }
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
        if (tablets != s->tablets) {
                free(s->tablets);
                s->tablets = tablets;
        }
        s->n_tablets = n_tablets;
        if (e->next_file_id > s->next_file_id)
                s->next_file_id = e->next_file_id;
        if (e->log_segment > s->log_segment)
                s->log_segment = e->log_segment;
        return 0;
}
