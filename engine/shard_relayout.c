/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A catalog that splits a tablet of this shard (engine/catalog.h,
 * eng_catalog_split_tablet): the children take the parent's place at
 * once, without copying or writing any row (see shard.h,
 * eng_shard_set_catalog).
 *
 * Each child starts with:
 *   - the parent's SSTables: the same files, referenced again,
 *     every read of the child clipped to its range -- a point read only
 *     looks up keys routed to it, scans stop at its ends, and its flushes
 *     and compactions keep to its range (compaction.h: lo, hi), so the
 *     first compaction of each child separates its rows from its
 *     sibling's;
 *   - the parent's memtables, shared and sealed: the parent's active
 *     memtable becomes one more sealed memtable, and each child flushes
 *     its own range of each (shard_flush.c); a memtable is freed once
 *     every child flushed it. Their bytes are shared out between the
 *     children so that the shard's totals stay what they were;
 *   - the parent's flushed seq: every entry at or below it is in the
 *     shared SSTables, so a replay skips it in either child.
 * The manifest then records the children and forgets the parent in one
 * edit (the children's entries, the parent's tables added to both and
 * removed from it, its entry dropped); a crash before it is durable is
 * repaired at the next open, where the catalog names the children and
 * the manifest the parent (eng_manifest_relayout: the same inheritance).
 *
 * A parent with a flush running cannot hand over its table set: the
 * install waits (-EBUSY, tried again by the caller) with the parent
 * frozen so that no new job starts on it meanwhile. A compaction of the
 * parent is thrown away instead (its output deleted when it ends: the
 * children compact their own ranges), unless its manifest edit is
 * already applied -- then the install waits the few milliseconds to its
 * end.
 *
 * Shard-local.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/log.h"
#include "engine/catalog.h"
#include "engine/key.h"
#include "engine/shard_internal.h"

/* Whether [a0, a1) and [b0, b1) share a key. */
static bool ranges_meet(const struct eng_tablet *a, const struct eng_tablet *b)
{
        return eng_key_cmp(a->start, a->start_len, b->end, b->end_len) < 0 &&
               eng_key_cmp(b->start, b->start_len, a->end, a->end_len) < 0;
}

bool shard_tablet_replaced(const struct eng_catalog *cat, const struct eng_tablet *t)
{
        const struct eng_catalog_table *ct;
        uint32_t i;

        if (t->dropped || eng_catalog_table_by_id(cat, t->table, &ct) < 0)
                return false;           /* dropped with its table instead */
        return eng_catalog_tablet_by_id(cat, t->id, &ct, &i) < 0;
}

int shard_relayout_ready(struct eng_shard *s, const struct eng_catalog *cat)
{
        int r = 0;

        for (uint32_t i = 0; i < s->n_tablets; i++) {
                struct eng_tablet *t = s->tablets[i];

                if (!shard_tablet_replaced(cat, t))
                        continue;
                if (shard_flushing(s, t) || !shard_compaction_orphanable(s, t)) {
                        t->frozen = true;       /* no new job: this one is waited for */
                        r = -EBUSY;
                } else if (shard_tablet_merging(cat, t)) {
                        int m = shard_merge_ready(s, cat, t);

                        t->frozen = false;      /* its flushes and separations run */
                        if (m < 0)
                                r = m;
                } else if (t->n_imm + (t->active_first_segment ? 1u : 0u) > SHARD_MAX_IMM) {
                        /* Its children could not hold its memtables: let
                         * its flushes make room first. */
                        t->frozen = false;
                        r = -EBUSY;
                }
        }
        if (r < 0) {
                shard_maybe_flush(s);
                shard_maybe_compact(s);
        }
        return r;
}

/* The parent's memtables as sealed ones (its active memtable last, if it
 * holds entries): what each child shares. Moves the active memtable's
 * bytes to the sealed ones. */
static void parent_seal_all(struct eng_shard *s, struct eng_tablet *p)
{
        if (!p->active_first_segment)
                return;
        SCREE_ASSERT(p->n_imm < SHARD_MAX_IMM);
        p->imm[p->n_imm++] = (struct eng_imm){ .mt = p->active, .sealed_seq = s->applied_seq,
                                               .first_segment = p->active_first_segment,
                                               .bytes = p->active_bytes };
        s->active_bytes -= p->active_bytes;
        s->imm_bytes += p->active_bytes;
        p->active = NULL;
        p->active_bytes = 0;
        p->active_first_segment = 0;
}

/* Child c's table set: the same tables as parent p's, each entry as c's
 * (the manifest's tables are per tablet). 0 or -ENOMEM. */
static int child_tset(struct eng_tablet *c, const struct eng_tablet *p)
{
        struct eng_tset *ts;

        if (!p->tset)
                return 0;
        if (!(ts = shard_tset_new(p->tset->n)))
                return -ENOMEM;
        for (uint32_t i = 0; i < ts->n; i++) {
                ts->e[i] = p->tset->e[i];
                ts->e[i].meta.tablet = c->id;
                eng_sst_table_ref(ts->e[i].t);
        }
        shard_tset_unref(c->tset);
        c->tset = ts;
        return 0;
}

/* Child k of n takes its share of parent p's memtables and its flushed
 * seq (its table set is made already). */
static void child_inherit(struct eng_tablet *c, const struct eng_tablet *p, uint32_t k, uint32_t n)
{
        c->n_imm = p->n_imm;
        for (uint32_t i = 0; i < p->n_imm; i++) {
                size_t b = p->imm[i].bytes;

                c->imm[i] = p->imm[i];
                c->imm[i].bytes = b / n + (k < b % n ? 1 : 0);
                eng_memtable_ref(c->imm[i].mt);
        }
        c->flushed_seq = p->flushed_seq;
        c->merge_seq = p->merge_seq;
        c->ops_avg = p->ops_avg / n;
}

/* The children of parent p among the tablets made for the new catalog
 * (into kids[2]): how many, or -EINVAL when p's range is not simply
 * split among new tablets of this shard -- a merge, or a range gone to
 * another shard, which need their own protocols. */
static int children_of(const struct eng_tablet *p, struct eng_tablet *const *made, uint32_t n_made,
                       struct eng_tablet **kids)
{
        int n = 0;

        for (uint32_t i = 0; i < n_made; i++) {
                struct eng_tablet *c = made[i];

                if (c->table != p->table || !ranges_meet(c, p))
                        continue;
                if (n == 2 || eng_key_cmp(c->start, c->start_len, p->start, p->start_len) < 0 ||
                    eng_key_cmp(c->end, c->end_len, p->end, p->end_len) > 0)
                        return -EINVAL;
                kids[n++] = c;
        }
        return n ? n : -EINVAL;
}

/* The tablet made for the new catalog that replaced tablet p is merged
 * into (shard_merge.c), or NULL. */
static struct eng_tablet *merged_into(const struct eng_tablet *p, struct eng_tablet *const *made,
                                      uint32_t n_made)
{
        for (uint32_t i = 0; i < n_made; i++)
                if (made[i]->table == p->table && ranges_meet(made[i], p))
                        return made[i];
        return NULL;
}

/* ---- the manifest's edit ---- */

struct split_edit {
        struct eng_manifest_write mw;
        struct eng_shard *s;
        uint32_t parent;
};

static void split_recorded(struct eng_manifest_write *mw, int res)
{
        struct split_edit *se = mw->ctx;
        struct eng_shard *s = se->s;

        /* A failed write stopped the manifest: the shard's error already
         * says so (its later edits fail the same way); the next open
         * repairs the split from the catalog. */
        if (res < 0)
                log_warn("shard %u: recording the split of tablet %u: %s", s->o.shard,
                         se->parent, scree_strerror(res));
        free(se);
        shard_job_done(s);
}

/* The manifest's entry for child c of parent p (flushed as p is). */
static struct eng_manifest_tablet child_entry(const struct eng_tablet *c, uint64_t flushed)
{
        return (struct eng_manifest_tablet){ .id = c->id, .table = c->table, .flushed_seq = flushed,
                                             .start = c->start, .start_len = c->start_len,
                                             .end = c->end, .end_len = c->end_len };
}

/* Builds the edit of p's split into kids[0..n) into e (arrays in *mem,
 * the caller's to free): the children's entries, p's tables added to
 * each (the same files) and removed from p, p's entry dropped. 0 or
 * -ENOMEM. */
static int split_edit_build(const struct eng_manifest_state *st, const struct eng_tablet *p,
                            struct eng_tablet *const *kids, uint32_t n,
                            struct eng_manifest_edit *e, void **mem)
{
        struct eng_manifest_tablet *nt;
        struct eng_manifest_table *added, *removed;
        uint32_t nr = 0;
        char *m;

        for (size_t i = 0; i < st->n_tables; i++)
                nr += st->tables[i].tablet == p->id;
        m = calloc(1, n * sizeof(*nt) + (size_t)(n + 1) * (nr ? nr : 1) * sizeof(*added));
        if (!m)
                return -ENOMEM;
        nt = (struct eng_manifest_tablet *)m;
        removed = (struct eng_manifest_table *)(nt + n);
        added = removed + (nr ? nr : 1);
        for (uint32_t k = 0; k < n; k++)
                nt[k] = child_entry(kids[k], eng_manifest_flushed_seq(st, p->id));
        nr = 0;
        for (size_t i = 0; i < st->n_tables; i++) {
                if (st->tables[i].tablet != p->id)
                        continue;
                for (uint32_t k = 0; k < n; k++) {
                        added[nr * n + k] = st->tables[i];
                        added[nr * n + k].tablet = kids[k]->id;
                }
                removed[nr++] = st->tables[i];
        }
        *e = (struct eng_manifest_edit){ .new_tablets = nt, .n_new_tablets = n,
                                         .added = added, .n_added = nr * n,
                                         .removed = removed, .n_removed = nr,
                                         .dropped_tablets = &p->id, .n_dropped = 1 };
        *mem = m;
        return 0;
}

/* Records p's split in the manifest, if the manifest knows p (else the
 * children get their entries with their first flush, as new tablets
 * do). A failure stops the shard's writes: an entry left for p would
 * overlap the children's. */
static void split_record(struct eng_shard *s, const struct eng_tablet *p,
                         struct eng_tablet *const *kids, uint32_t n)
{
        const struct eng_manifest_state *st = eng_manifest_state(s->man);
        struct eng_manifest_edit e;
        struct split_edit *se;
        void *mem = NULL;
        int r;

        if (!eng_manifest_has_tablet(st, p->id))
                return;
        se = calloc(1, sizeof(*se));
        r = se ? split_edit_build(st, p, kids, n, &e, &mem) : -ENOMEM;
        if (r == 0) {
                *se = (struct split_edit){ .mw = { .done = split_recorded, .ctx = se }, .s = s,
                                           .parent = p->id };
                r = eng_manifest_apply(s->man, &e, &se->mw);
        }
        free(mem);                      /* the manifest copied the edit */
        if (r < 0) {
                free(se);
                shard_set_error(s, r, "recording a tablet split");
                return;
        }
        s->busy++;
}

int shard_relayout_prepare(struct eng_shard *s, const struct eng_catalog *cat,
                           struct eng_tablet *const *made, uint32_t n_made)
{
        struct eng_tablet *kids[2];

        for (uint32_t i = 0; i < s->n_tablets; i++) {
                const struct eng_tablet *t = s->tablets[i];
                int n;

                if (!shard_tablet_replaced(cat, t))
                        continue;
                if (shard_tablet_merging(cat, t)) {
                        struct eng_tablet *c = merged_into(t, made, n_made);

                        if (!c || (n = shard_merge_prepare(s, cat, c)) < 0)
                                return c ? n : -EINVAL;
                        continue;
                }
                n = children_of(t, made, n_made, kids);
                if (n < 0)
                        return -EINVAL;
                for (int k = 0; k < n; k++)
                        if (child_tset(kids[k], t) < 0)
                                return -ENOMEM;
        }
        return 0;
}

void shard_relayout(struct eng_shard *s, const struct eng_catalog *cat, struct eng_tablet *p,
                    struct eng_tablet *const *made, uint32_t n_made)
{
        struct eng_tablet *kids[2];
        int n;

        if (shard_tablet_merging(cat, p)) {
                shard_merge(s, cat, p, merged_into(p, made, n_made));
                return;
        }
        n = children_of(p, made, n_made, kids);

        SCREE_ASSERT(n > 0);            /* shard_relayout_prepare said so */
        parent_seal_all(s, p);
        for (int k = 0; k < n; k++)
                child_inherit(kids[k], p, (uint32_t)k, (uint32_t)n);
        if (s->man)
                split_record(s, p, kids, (uint32_t)n);
        s->stats.tablet_splits++;
        log_info("shard %u: tablet %u split into %u and %u", s->o.shard, p->id, kids[0]->id,
                 n > 1 ? kids[1]->id : kids[0]->id);
}
