/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A catalog that merges neighbouring tablets of this shard into one
 * (engine/catalog.h, eng_catalog_merge_tablets): the merged tablet takes
 * their place without copying or writing any row (see shard.h,
 * eng_shard_set_catalog).
 *
 * The merged tablet starts with:
 *   - every SSTable of its members, each file once, newest first by
 *     highest seq. Tables of different members share no key, so their seq
 *     ranges may interleave: for each key the tables holding it are still
 *     in the order of its versions (compaction.h);
 *   - their active memtables, sealed: no member may hold a sealed
 *     memtable any more (they flush first), so what they hold is newer
 *     than every SSTable of theirs;
 *   - a flushed seq F that holds for all of it: the install waits until
 *     the members that hold entries flushed up to the same seq, at least
 *     that of those that hold none (sealing them when they lag), so that
 *     a replay from F repeats nothing that is in an SSTable.
 * Its first flushes (one per member's memtable) may then finish in either
 * seq order, so a flushed table goes to its place by highest seq
 * (shard_flush.c), and the tablet does not compact until they are done
 * (merge_seq): a compaction meanwhile could make a table newer by seq
 * than a memtable still to be flushed whose keys it holds.
 *
 * Files a member shares with another tablet since a split must be shared
 * with every member whose range they reach into: a member that separated
 * from such a file (its compaction rewrote its part and may have dropped
 * deleted rows) would otherwise see the file's stale rows again once
 * merged. The install waits for the separation compactions instead.
 *
 * The manifest records the merged tablet and forgets the members in one
 * edit; a crash before it is durable is repaired at the next open
 * (eng_manifest_relayout: the members' files and their lowest flushed
 * seq).
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
#include "engine/sst_reader.h"

/* A key range [start, end) of one table; end may point into buf. */
struct merge_range {
        uint32_t table;
        const uint8_t *start, *end;
        uint32_t start_len, end_len;
        uint8_t buf[ENG_TABLE_ID_BYTES];
};

/* The merged tablet's range in cat when t is a member of a merge: the new
 * tablet holding t's start reaches beyond t. False for a split. */
static bool merged_range(const struct eng_catalog *cat, const struct eng_tablet *t,
                         struct merge_range *r)
{
        const struct eng_catalog_table *ct;
        uint32_t i;

        if (eng_catalog_table_by_id(cat, t->table, &ct) < 0)
                return false;
        i = eng_catalog_route_ikey(ct, t->start, t->start_len);
        r->table = t->table;
        r->start = eng_catalog_tablet_start(ct, i);
        r->start_len = ct->tablets[i].start_len;
        r->end_len = eng_catalog_tablet_end(ct, i, r->buf, &r->end);
        return eng_key_cmp(r->start, r->start_len, t->start, t->start_len) < 0 ||
               eng_key_cmp(r->end, r->end_len, t->end, t->end_len) > 0;
}

static struct merge_range range_of(const struct eng_tablet *c)
{
        return (struct merge_range){ .table = c->table, .start = c->start, .end = c->end,
                                     .start_len = c->start_len, .end_len = c->end_len };
}

bool shard_tablet_merging(const struct eng_catalog *cat, const struct eng_tablet *t)
{
        struct merge_range r;

        return merged_range(cat, t, &r);
}

/* Whether t lies inside r. */
static bool within(const struct eng_tablet *t, const struct merge_range *r)
{
        return t->table == r->table &&
               eng_key_cmp(t->start, t->start_len, r->start, r->start_len) >= 0 &&
               eng_key_cmp(t->end, t->end_len, r->end, r->end_len) <= 0;
}

/* The members of the merge into range r (the replaced tablets of this
 * shard inside it), in key order, into m (cap entries). Returns how
 * many. */
static uint32_t members_of(const struct eng_shard *s, const struct eng_catalog *cat,
                           const struct merge_range *r, struct eng_tablet **m, uint32_t cap)
{
        uint32_t n = 0;

        for (uint32_t i = 0; i < s->n_tablets; i++) {
                struct eng_tablet *t = s->tablets[i];

                if (!within(t, r) || !shard_tablet_replaced(cat, t) || n == cap)
                        continue;
                m[n++] = t;
        }
        for (uint32_t i = 1; i < n; i++)                /* insertion sort by start key */
                for (uint32_t k = i; k > 0 && eng_key_cmp(m[k]->start, m[k]->start_len,
                                                          m[k - 1]->start, m[k - 1]->start_len) < 0; k--) {
                        struct eng_tablet *x = m[k];

                        m[k] = m[k - 1];
                        m[k - 1] = x;
                }
        return n;
}

#define MERGE_MAX_MEMBERS 8u

/* The flushed seq the members agree on (see the file), or 0 and false
 * when they do not yet. */
static bool members_flushed(const struct eng_shard *s, struct eng_tablet *const *m, uint32_t n,
                            uint64_t *ret)
{
        uint64_t hi_empty = 0, f = 0;
        bool any = false;

        for (uint32_t i = 0; i < n; i++) {
                if (!m[i]->active_first_segment) {
                        if (m[i]->flushed_seq > hi_empty)
                                hi_empty = m[i]->flushed_seq;
                        continue;
                }
                if (any && m[i]->flushed_seq != f)
                        return false;
                f = m[i]->flushed_seq;
                any = true;
        }
        if (!any) {
                *ret = s->applied_seq;
                return true;
        }
        *ret = f;
        return f >= hi_empty;
}

/* Whether table tb (of member x) is shared by every other member whose
 * range its keys reach into. */
static bool shared_enough(const struct eng_tset_entry *tb, const struct eng_tablet *x,
                          struct eng_tablet *const *m, uint32_t n)
{
        const struct eng_sst_props *p = eng_sst_reader_props(eng_sst_table_reader(tb->t));

        for (uint32_t i = 0; i < n && p->n_entries; i++) {
                const struct eng_tset *ts = m[i]->tset;
                bool has = false;

                if (m[i] == x || eng_key_cmp(p->smallest, p->smallest_len, m[i]->end, m[i]->end_len) >= 0 ||
                    eng_key_cmp(p->largest, p->largest_len, m[i]->start, m[i]->start_len) < 0)
                        continue;
                for (uint32_t k = 0; ts && k < ts->n && !has; k++)
                        has = ts->e[k].meta.file_id == tb->meta.file_id;
                if (!has)
                        return false;
        }
        return true;
}

static bool files_ready(struct eng_tablet *const *m, uint32_t n)
{
        for (uint32_t i = 0; i < n; i++)
                for (uint32_t k = 0; m[i]->tset && k < m[i]->tset->n; k++)
                        if (!shared_enough(&m[i]->tset->e[k], m[i], m, n))
                                return false;
        return true;
}

int shard_merge_ready(struct eng_shard *s, const struct eng_catalog *cat, struct eng_tablet *t)
{
        struct eng_tablet *m[MERGE_MAX_MEMBERS];
        struct merge_range range;
        uint64_t f;
        uint32_t n;

        if (!merged_range(cat, t, &range))
                return -EINVAL;
        n = members_of(s, cat, &range, m, MERGE_MAX_MEMBERS);
        for (uint32_t i = 0; i < n; i++)
                if (m[i]->n_imm)
                        return -EBUSY;          /* its flushes first */
        if (!members_flushed(s, m, n, &f)) {
                for (uint32_t i = 0; i < n; i++)
                        shard_seal(s, m[i]);
                return -EBUSY;
        }
        if (!files_ready(m, n))
                return -EBUSY;                  /* separation compactions first */
        return 0;
}

int shard_merge_prepare(struct eng_shard *s, const struct eng_catalog *cat, struct eng_tablet *c)
{
        struct eng_tablet *m[MERGE_MAX_MEMBERS];
        struct merge_range r = range_of(c);
        uint32_t n = members_of(s, cat, &r, m, MERGE_MAX_MEMBERS), total = 0;
        struct eng_tset *ts;

        for (uint32_t i = 0; i < n; i++)
                total += m[i]->tset ? m[i]->tset->n : 0;
        if (!n || !total)
                return n ? 0 : -EINVAL;
        if (!(ts = shard_tset_new(total)))
                return -ENOMEM;
        ts->n = 0;
        for (uint32_t i = 0; i < n; i++) {
                for (uint32_t k = 0; m[i]->tset && k < m[i]->tset->n; k++) {
                        const struct eng_tset_entry *e = &m[i]->tset->e[k];
                        bool dup = false;

                        for (uint32_t j = 0; j < ts->n && !dup; j++)
                                dup = ts->e[j].meta.file_id == e->meta.file_id;
                        if (dup)
                                continue;
                        ts->e[ts->n] = *e;
                        ts->e[ts->n++].meta.tablet = c->id;
                        eng_sst_table_ref(e->t);
                }
        }
        shard_tset_sort(ts->e, ts->n, sizeof(ts->e[0]));
        shard_tset_unref(c->tset);
        c->tset = ts;
        return 0;
}

/* ---- the manifest's edit ---- */

struct merge_edit {
        struct eng_manifest_write mw;
        struct eng_shard *s;
        uint32_t id;
};

static void merge_recorded(struct eng_manifest_write *mw, int res)
{
        struct merge_edit *me = mw->ctx;
        struct eng_shard *s = me->s;

        if (res < 0)
                log_warn("shard %u: recording the merge into tablet %u: %s", s->o.shard, me->id,
                         scree_strerror(res));
        free(me);
        shard_job_done(s);
}

/* Whether id is among the members. */
static bool is_member(struct eng_tablet *const *m, uint32_t n, uint32_t id)
{
        for (uint32_t i = 0; i < n; i++)
                if (m[i]->id == id)
                        return true;
        return false;
}

/* Builds the edit of the merge of m[0..n) into c (flushed f; arrays in
 * *mem, the caller's to free). 0, 1 when the manifest knows no member
 * (nothing to record: c gets its entry with its first flush) or
 * -ENOMEM. */
static int merge_edit_build(const struct eng_manifest_state *st, struct eng_tablet *const *m,
                            uint32_t n, const struct eng_tablet *c, uint64_t f,
                            struct eng_manifest_edit *e, void **mem)
{
        struct eng_manifest_tablet *nt;
        struct eng_manifest_table *added, *removed;
        uint32_t *dropped, nr = 0, na = 0, nd = 0;
        char *p;

        for (uint32_t i = 0; i < n; i++)
                nd += eng_manifest_has_tablet(st, m[i]->id);
        if (!nd)
                return 1;
        for (size_t i = 0; i < st->n_tables; i++)
                nr += is_member(m, n, st->tables[i].tablet);
        p = calloc(1, sizeof(*nt) + 2 * (size_t)(nr + 1) * sizeof(*added) + n * sizeof(*dropped));
        if (!p)
                return -ENOMEM;
        nt = (struct eng_manifest_tablet *)p;
        removed = (struct eng_manifest_table *)(nt + 1);
        added = removed + nr + 1;
        dropped = (uint32_t *)(added + nr + 1);
        *nt = (struct eng_manifest_tablet){ .id = c->id, .table = c->table, .flushed_seq = f,
                                            .start = c->start, .start_len = c->start_len,
                                            .end = c->end, .end_len = c->end_len };
        nr = 0;
        for (size_t i = 0; i < st->n_tables; i++) {
                bool dup = false;

                if (!is_member(m, n, st->tables[i].tablet))
                        continue;
                removed[nr++] = st->tables[i];
                for (uint32_t k = 0; k < na && !dup; k++)
                        dup = added[k].file_id == st->tables[i].file_id;
                if (dup)
                        continue;
                added[na] = st->tables[i];
                added[na++].tablet = c->id;
        }
        nd = 0;
        for (uint32_t i = 0; i < n; i++)
                if (eng_manifest_has_tablet(st, m[i]->id))
                        dropped[nd++] = m[i]->id;
        *e = (struct eng_manifest_edit){ .new_tablets = nt, .n_new_tablets = 1,
                                         .added = added, .n_added = na,
                                         .removed = removed, .n_removed = nr,
                                         .dropped_tablets = dropped, .n_dropped = nd };
        *mem = p;
        return 0;
}

static void merge_record(struct eng_shard *s, struct eng_tablet *const *m, uint32_t n,
                         const struct eng_tablet *c, uint64_t f)
{
        struct eng_manifest_edit e;
        struct merge_edit *me;
        void *mem = NULL;
        int r;

        if (!(me = calloc(1, sizeof(*me)))) {
                shard_set_error(s, -ENOMEM, "recording a tablet merge");
                return;
        }
        r = merge_edit_build(eng_manifest_state(s->man), m, n, c, f, &e, &mem);
        if (r == 0) {
                *me = (struct merge_edit){ .mw = { .done = merge_recorded, .ctx = me }, .s = s,
                                           .id = c->id };
                r = eng_manifest_apply(s->man, &e, &me->mw);
        }
        free(mem);                      /* the manifest copied the edit */
        if (r != 0)
                free(me);
        if (r < 0) {
                shard_set_error(s, r, "recording a tablet merge");
                return;
        }
        if (r == 0)
                s->busy++;
}

/* Member x's active memtable becomes c's sealed one (if it holds
 * entries), flushing up to seq sealed. */
static void take_active(struct eng_shard *s, struct eng_tablet *c, struct eng_tablet *x,
                        uint64_t sealed)
{
        if (!x->active_first_segment)
                return;
        SCREE_ASSERT(c->n_imm < SHARD_MAX_IMM);
        c->imm[c->n_imm++] = (struct eng_imm){ .mt = x->active, .sealed_seq = sealed,
                                               .first_segment = x->active_first_segment,
                                               .bytes = x->active_bytes };
        s->active_bytes -= x->active_bytes;
        s->imm_bytes += x->active_bytes;
        x->active = NULL;
        x->active_bytes = 0;
        x->active_first_segment = 0;
}

void shard_merge(struct eng_shard *s, const struct eng_catalog *cat, struct eng_tablet *t,
                 struct eng_tablet *c)
{
        struct eng_tablet *m[MERGE_MAX_MEMBERS];
        struct merge_range r = range_of(c);
        uint32_t n = members_of(s, cat, &r, m, MERGE_MAX_MEMBERS), last = 0;
        uint64_t f = 0;

        (void)t;
        if (c->merged || !n)
                return;                 /* done with the group's first member */
        c->merged = true;
        SCREE_ASSERT(members_flushed(s, m, n, &f));
        for (uint32_t i = 0; i < n; i++)
                if (m[i]->active_first_segment)
                        last = i;
        /* Every memtable but the last leaves the others' entries above f
         * unflushed: flushing it keeps the tablet's flushed seq at f. */
        for (uint32_t i = 0; i < n; i++)
                take_active(s, c, m[i], i == last ? s->applied_seq : f);
        c->flushed_seq = f;
        c->merge_seq = s->applied_seq;
        if (s->man)
                merge_record(s, m, n, c, f);
        s->stats.tablet_merges++;
        log_info("shard %u: tablets %u and %u merged into %u", s->o.shard, m[0]->id,
                 m[n - 1]->id, c->id);
}
