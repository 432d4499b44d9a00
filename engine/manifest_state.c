/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifest states: init/copy/fini, lookups, the invariants
 * (eng_manifest_state_check) and applying edits, which validates the whole
 * edit before changing anything. The codecs and the reader are in
 * manifest_format.c, ranges and the relayout in manifest_range.c; the
 * contracts in manifest_format.h. A state's tablet entries stay sorted by
 * id: an edit builds the new array (and, when it creates entries, a new
 * key arena) aside and swaps it in only once nothing else can fail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "engine/manifest_format.h"
#include "engine/manifest_int.h"

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
        if (eng_manifest_keys_pack(tablets, src->n_tablets, &c.keys) < 0) {
                free(tablets);
                free(tables);
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
        free(s->keys);
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

bool eng_manifest_has_tablet(const struct eng_manifest_state *s, uint32_t tablet_id)
{
        return has_tablet(s, tablet_id);
}

const struct eng_manifest_tablet *eng_manifest_tablet_get(const struct eng_manifest_state *s,
                                                          uint32_t id)
{
        return tablet_find(s->tablets, s->n_tablets, id);
}

bool eng_manifest_state_is_ranged(const struct eng_manifest_state *s)
{
        for (uint32_t i = 0; i < s->n_tablets; i++)
                if (!eng_manifest_tablet_is_ranged(&s->tablets[i]))
                        return false;
        return true;
}

uint64_t eng_manifest_flushed_seq(const struct eng_manifest_state *s, uint32_t tablet_id)
{
        const struct eng_manifest_tablet *t = tablet_find(s->tablets, s->n_tablets, tablet_id);

        return t ? t->flushed_seq : 0;
}

/* Tables by file id, then tablet. */
static int cmp_file(const void *a, const void *b)
{
        const struct eng_manifest_table *x = *(const struct eng_manifest_table *const *)a;
        const struct eng_manifest_table *y = *(const struct eng_manifest_table *const *)b;

        if (x->file_id != y->file_id)
                return x->file_id < y->file_id ? -1 : 1;
        return (x->tablet > y->tablet) - (x->tablet < y->tablet);
}

static bool same_file_meta(const struct eng_manifest_table *a, const struct eng_manifest_table *b)
{
        return a->file_size == b->file_size && a->min_seq == b->min_seq && a->max_seq == b->max_seq;
}

/* (tablet, file_id) unique; the tables of one file agree on it. */
static int check_tables_unique(const struct eng_manifest_state *s)
{
        const struct eng_manifest_table **v;
        int r = 0;

        if (s->n_tables < 2)
                return 0;
        v = malloc(s->n_tables * sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_tables; i++)
                v[i] = &s->tables[i];
        qsort(v, s->n_tables, sizeof(*v), cmp_file);
        for (size_t i = 1; i < s->n_tables && r == 0; i++)
                if (v[i]->file_id == v[i - 1]->file_id &&
                    (v[i]->tablet == v[i - 1]->tablet || !same_file_meta(v[i], v[i - 1])))
                        r = -SCREE_ECORRUPT;
        free(v);
        return r;
}

static int check_tablets(const struct eng_manifest_state *s)
{
        for (uint32_t i = 0; i < s->n_tablets; i++) {
                const struct eng_manifest_tablet *t = &s->tablets[i];

                if (i && t->id <= s->tablets[i - 1].id)
                        return -SCREE_ECORRUPT;
                if (eng_manifest_tablet_is_ranged(t) ? !eng_manifest_range_is_valid(t)
                                                     : !eng_manifest_unranged_is_valid(t))
                        return -SCREE_ECORRUPT;
        }
        return eng_manifest_ranges_check(s->tablets, s->n_tablets);
}

int eng_manifest_state_check(const struct eng_manifest_state *s)
{
        int r;

        if ((s->n_tablets && !s->tablets) || (s->n_tables && !s->tables))
                return -SCREE_ECORRUPT;
        r = check_tablets(s);
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->n_tables; i++) {
                const struct eng_manifest_table *t = &s->tables[i];

                if (t->min_seq > t->max_seq || t->file_id >= s->next_file_id ||
                    !has_tablet(s, t->tablet))
                        return -SCREE_ECORRUPT;
        }
        return check_tables_unique(s);
}

bool eng_manifest_names_file(const struct eng_manifest_state *s, uint64_t file_id)
{
        for (size_t i = 0; i < s->n_tables; i++)
                if (s->tables[i].file_id == file_id)
                        return true;
        return false;
}

static bool has_table(const struct eng_manifest_state *s, uint32_t tablet, uint64_t file_id)
{
        for (size_t i = 0; i < s->n_tables; i++)
                if (s->tables[i].tablet == tablet && s->tables[i].file_id == file_id)
                        return true;
        return false;
}

/* A table of s naming file_id, or NULL. */
static const struct eng_manifest_table *file_of(const struct eng_manifest_state *s, uint64_t file_id)
{
        for (size_t i = 0; i < s->n_tables; i++)
                if (s->tables[i].file_id == file_id)
                        return &s->tables[i];
        return NULL;
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

/* e's new tablet id, or NULL. */
static const struct eng_manifest_tablet *new_of(const struct eng_manifest_edit *e, uint32_t id)
{
        for (uint32_t i = 0; i < e->n_new_tablets; i++)
                if (e->new_tablets[i].id == id)
                        return &e->new_tablets[i];
        return NULL;
}

/* Whether tablet id has an entry by step 1 of e (or gets one implicitly). */
static bool entry_by_step1(const struct eng_manifest_state *s, const struct eng_manifest_edit *e,
                           uint32_t id)
{
        return e->implicit_entries || has_tablet(s, id) || new_of(e, id);
}

static int validate_new(const struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        for (uint32_t i = 0; i < e->n_new_tablets; i++) {
                const struct eng_manifest_tablet *t = &e->new_tablets[i];

                if (!eng_manifest_range_is_valid(t) || has_tablet(s, t->id) ||
                    new_of(e, t->id) != t)
                        return -SCREE_ECORRUPT;
        }
        return 0;
}

static int validate_added(const struct eng_manifest_state *s, const struct eng_manifest_edit *e,
                          uint32_t i)
{
        const struct eng_manifest_table *a = &e->added[i], *same = file_of(s, a->file_id);

        if (a->min_seq > a->max_seq || a->file_id == UINT64_MAX || has_table(s, a->tablet, a->file_id) ||
            !entry_by_step1(s, e, a->tablet) || (same && !same_file_meta(same, a)))
                return -SCREE_ECORRUPT;
        for (uint32_t j = 0; j < i; j++)
                if (e->added[j].file_id == a->file_id &&
                    (e->added[j].tablet == a->tablet || !same_file_meta(&e->added[j], a)))
                        return -SCREE_ECORRUPT;
        return 0;
}

static int validate_tables(const struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        for (uint32_t i = 0; i < e->n_removed; i++)
                if (!has_table(s, e->removed[i].tablet, e->removed[i].file_id) ||
                    removes(e, i, &e->removed[i]))
                        return -SCREE_ECORRUPT;
        for (uint32_t i = 0; i < e->n_added; i++)
                if (validate_added(s, e, i) < 0)
                        return -SCREE_ECORRUPT;
        return 0;
}

static int validate_flushed(const struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        for (uint32_t i = 0; i < e->n_flushed; i++) {
                uint32_t t = e->flushed_tablets[i];
                const struct eng_manifest_tablet *nt = new_of(e, t);

                if (!entry_by_step1(s, e, t) ||
                    e->flushed_seqs[i] < (nt ? nt->flushed_seq : eng_manifest_flushed_seq(s, t)))
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

        if ((e->n_new_tablets && !e->new_tablets) || (e->n_added && !e->added) ||
            (e->n_removed && !e->removed) ||
            (e->n_flushed && (!e->flushed_tablets || !e->flushed_seqs)) ||
            (e->n_dropped && !e->dropped_tablets))
                return -SCREE_ECORRUPT;
        if ((e->next_file_id && e->next_file_id < s->next_file_id) ||
            (e->log_segment && e->log_segment < s->log_segment))
                return -SCREE_ECORRUPT;
        r = validate_new(s, e);
        if (r == 0)
                r = validate_tables(s, e);
        if (r == 0)
                r = validate_flushed(s, e);
        return r < 0 ? r : validate_dropped(s, e);
}

/* Adds entry t to v (n sorted entries, room for one more) unless v has
 * its id; returns the new count. */
static uint32_t tablet_add(struct eng_manifest_tablet *v, uint32_t n, const struct eng_manifest_tablet *t)
{
        uint32_t i = tablet_lower_bound(v, n, t->id);

        if (i < n && v[i].id == t->id)
                return n;
        memmove(&v[i + 1], &v[i], (n - i) * sizeof(*v));
        v[i] = *t;
        return n + 1;
}

/* Steps 1, 4 and 5 of e (validated) on v, a copy of s's entries with
 * room for e's new ones. Returns the new count. */
static uint32_t tablets_edit(struct eng_manifest_tablet *v, uint32_t n, const struct eng_manifest_edit *e)
{
        for (uint32_t i = 0; i < e->n_new_tablets; i++)
                n = tablet_add(v, n, &e->new_tablets[i]);
        for (uint32_t i = 0; e->implicit_entries && i < e->n_added; i++)
                n = tablet_add(v, n, &(struct eng_manifest_tablet){ .id = e->added[i].tablet });
        for (uint32_t i = 0; i < e->n_flushed; i++) {
                if (e->implicit_entries)
                        n = tablet_add(v, n, &(struct eng_manifest_tablet){ .id = e->flushed_tablets[i] });
                v[tablet_lower_bound(v, n, e->flushed_tablets[i])].flushed_seq = e->flushed_seqs[i];
        }
        for (uint32_t i = 0; i < e->n_dropped; i++) {
                uint32_t k = tablet_lower_bound(v, n, e->dropped_tablets[i]);

                memmove(&v[k], &v[k + 1], (n - k - 1) * sizeof(*v));
                n--;
        }
        return n;
}

/* What applying an edit replaces in a state, made before anything changes. */
struct after {
        struct eng_manifest_tablet *tablets;
        uint32_t n_tablets;
        uint8_t *keys;                  /* a new arena when e creates entries, else s's */
};

/*
 * The tablets of s after e (validated), in a new array (NULL when empty)
 * and, when e creates entries, a new key arena. Returns 0,
 * -SCREE_ECORRUPT (the ranges would overlap) or -ENOMEM; s untouched
 * either way.
 */
static int tablets_after(const struct eng_manifest_state *s, const struct eng_manifest_edit *e,
                         struct after *ret)
{
        size_t cap = (size_t)s->n_tablets + e->n_new_tablets +
                     (e->implicit_entries ? (size_t)e->n_added + e->n_flushed : 0);
        struct eng_manifest_tablet *v = cap ? malloc(cap * sizeof(*v)) : NULL;
        struct after a = { .keys = s->keys };
        int r = 0;

        if (cap && !v)
                return -ENOMEM;
        if (s->n_tablets)
                memcpy(v, s->tablets, s->n_tablets * sizeof(*v));
        a.n_tablets = tablets_edit(v, s->n_tablets, e);
        if (e->n_new_tablets) {
                r = eng_manifest_ranges_check(v, a.n_tablets);
                if (r == 0)
                        r = eng_manifest_keys_pack(v, a.n_tablets, &a.keys);
        }
        if (r < 0 || a.n_tablets == 0) {
                free(v);
                v = NULL;
        }
        if (r < 0)
                return r;
        a.tablets = v;
        *ret = a;
        return 0;
}

/* Steps 2 and 3: tables removed, then added. REQUIRES: room for them. */
static void tables_edit(struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        size_t kept = 0;

        for (size_t i = 0; i < s->n_tables; i++)
                if (!removes(e, e->n_removed, &s->tables[i]))
                        s->tables[kept++] = s->tables[i];
        s->n_tables = kept;
        for (uint32_t i = 0; i < e->n_added; i++) {
                s->tables[s->n_tables++] = e->added[i];
                if (e->added[i].file_id >= s->next_file_id)
                        s->next_file_id = e->added[i].file_id + 1;
        }
}

int eng_manifest_state_apply(struct eng_manifest_state *s, const struct eng_manifest_edit *e)
{
        struct after a = { .tablets = s->tablets, .n_tablets = s->n_tablets, .keys = s->keys };
        int r = validate_edit(s, e);

        if (r < 0)
                return r;
        /* Everything allocated first: from here on nothing can fail. */
        if (e->n_new_tablets || e->n_added || e->n_flushed || e->n_dropped) {
                r = tablets_after(s, e, &a);
                if (r < 0)
                        return r;
        }
        if (e->n_added) {
                struct eng_manifest_table *v = realloc(s->tables, (s->n_tables + e->n_added) * sizeof(*v));

                if (!v) {
                        if (a.tablets != s->tablets)
                                free(a.tablets);
                        if (a.keys != s->keys)
                                free(a.keys);
                        return -ENOMEM;
                }
                s->tables = v;
        }
        tables_edit(s, e);
        if (a.tablets != s->tablets)
                free(s->tablets);
        if (a.keys != s->keys)
                free(s->keys);
        s->tablets = a.tablets;
        s->n_tablets = a.n_tablets;
        s->keys = a.keys;
        if (e->next_file_id > s->next_file_id)
                s->next_file_id = e->next_file_id;
        if (e->log_segment > s->log_segment)
                s->log_segment = e->log_segment;
        return 0;
}
