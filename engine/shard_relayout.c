/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A catalog that splits a tablet of this shard (engine/catalog.h,
 * eng_catalog_split_tablet): the children take the parent's place at
 * once, without copying or writing any row (see shard.h,
 * eng_shard_set_catalog).
 *
 * Each child starts with:
 *   - the parent's SSTables: the same table set (immutable, refcounted),
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
 * edit; a crash before it is durable is repaired at the next open, where
 * the catalog names the children and the manifest the parent
 * (eng_manifest_relayout does the same inheritance).
 *
 * A parent with a flush or a compaction running cannot hand over its
 * table set: the install waits (-EBUSY, tried again by the caller) with
 * the parent frozen so that no new job starts on it meanwhile.
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
                if (t->compacting || shard_flushing(s, t)) {
                        t->frozen = true;
                        r = -EBUSY;
                }
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

/* Child k of n takes its share of the parent p (see the top). */
static void child_inherit(struct eng_tablet *c, const struct eng_tablet *p, uint32_t k, uint32_t n)
{
        c->n_imm = p->n_imm;
        for (uint32_t i = 0; i < p->n_imm; i++) {
                size_t b = p->imm[i].bytes;

                c->imm[i] = p->imm[i];
                c->imm[i].bytes = b / n + (k < b % n ? 1 : 0);
                eng_memtable_ref(c->imm[i].mt);
        }
        if (p->tset) {
                shard_tset_ref(p->tset);
                shard_tset_unref(c->tset);
                c->tset = p->tset;
        }
        c->flushed_seq = p->flushed_seq;
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

int shard_relayout_check(const struct eng_shard *s, const struct eng_catalog *cat,
                         struct eng_tablet *const *made, uint32_t n_made)
{
        struct eng_tablet *kids[2];

        for (uint32_t i = 0; i < s->n_tablets; i++) {
                const struct eng_tablet *t = s->tablets[i];

                if (shard_tablet_replaced(cat, t) && children_of(t, made, n_made, kids) < 0)
                        return -EINVAL;
        }
        return 0;
}

void shard_relayout(struct eng_shard *s, struct eng_tablet *p, struct eng_tablet *const *made,
                    uint32_t n_made)
{
        struct eng_tablet *kids[2];
        int n = children_of(p, made, n_made, kids);

        SCREE_ASSERT(n > 0);            /* shard_relayout_check said so */
        parent_seal_all(s, p);
        for (int k = 0; k < n; k++)
                child_inherit(kids[k], p, (uint32_t)k, (uint32_t)n);
        log_info("shard %u: tablet %u split into %u and %u", s->o.shard, p->id, kids[0]->id,
                 n > 1 ? kids[1]->id : kids[0]->id);
}
