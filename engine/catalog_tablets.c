/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Splitting, merging and moving tablets; see catalog.h. Each change is
 * checked against the snapshot it was given, then made on a deep copy
 * (eng_catalog_clone), as every catalog change is. A split or a merge
 * replaces a run of one table's tablets by new ones (splice): the tablet
 * array and the keys buffer are rebuilt whole, so every start key lives in
 * the new snapshot's own memory, back to back (keys_len is the sum of the
 * start lengths, as the encoding assumes), with its key8 recomputed. A
 * move changes one shard. New tablets take fresh ids from next_tablet_id;
 * an id is never reused, so a shard can tell a tablet's data apart from
 * that of its parents or children by id alone. The encoding does not
 * change (docs/format/catalog.md): a tablet is an id, a shard and a start
 * key, however it came to be.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/endian.h"
#include "engine/catalog_int.h"
#include "engine/key.h"
#include "engine/tablet.h"

/* A tablet a splice puts in: its id, shard and start key (borrowed). */
struct piece {
        uint32_t id, shard;
        const uint8_t *start;
        uint32_t len;
};

static struct piece piece_of(const struct eng_catalog_table *t, uint32_t i)
{
        const struct eng_catalog_tablet *b = &t->tablets[i];

        return (struct piece){ .id = b->id, .shard = b->shard,
                               .start = eng_catalog_tablet_start(t, i), .len = b->start_len };
}

/*
 * Replaces tablets [at, at + n_old) of t by the n_new pieces (whose keys
 * must not point into t), in new tablet and key arrays; t's old ones are
 * freed. 0, or -ENOMEM with t unchanged.
 */
static int splice(struct eng_catalog_table *t, uint32_t at, uint32_t n_old, const struct piece *p,
                  uint32_t n_new)
{
        uint32_t n = t->n_tablets - n_old + n_new, off = 0;
        size_t bytes = t->keys_len;
        struct eng_catalog_tablet *tab;
        uint8_t *keys;

        for (uint32_t k = 0; k < n_old; k++)
                bytes -= t->tablets[at + k].start_len;
        for (uint32_t k = 0; k < n_new; k++)
                bytes += p[k].len;
        tab = malloc(n * sizeof(*tab));
        keys = malloc(bytes);           /* >= 4: tablet 0 starts at the table id */
        if (!tab || !keys) {
                free(tab);
                free(keys);
                return -ENOMEM;
        }
        for (uint32_t i = 0; i < n; i++) {
                struct piece q = i < at ? piece_of(t, i)
                                 : i < at + n_new ? p[i - at] : piece_of(t, i - n_new + n_old);

                memcpy(keys + off, q.start, q.len);
                tab[i] = (struct eng_catalog_tablet){ .id = q.id, .shard = q.shard,
                                                      .start_off = off, .start_len = q.len,
                                                      .key8 = eng_catalog_key8(q.start, q.len) };
                off += q.len;
        }
        SCREE_ASSERT(off == bytes);
        free(t->tablets);
        free(t->keys);
        t->tablets = tab;
        t->keys = keys;
        t->n_tablets = n;
        t->keys_len = off;
        return 0;
}

/*
 * The new snapshot: c with tablets [at, at + n_old) of table ti replaced
 * by the n_new pieces (keys borrowed from c or the caller), whose ids are
 * the next n_new tablet ids.
 */
static int replace(const struct eng_catalog *c, uint32_t ti, uint32_t at, uint32_t n_old,
                   const struct piece *p, uint32_t n_new, struct eng_catalog **ret, char *err,
                   size_t err_len)
{
        struct eng_catalog *n = eng_catalog_clone(c);

        for (uint32_t k = 0; k < n_new; k++)
                SCREE_ASSERT(p[k].id == c->next_tablet_id + k);
        if (!n || splice(&n->tables[ti], at, n_old, p, n_new) < 0) {
                eng_catalog_unref(n);
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        }
        n->next_tablet_id += n_new;
        *ret = n;
        return 0;
}

/* The live tablet id of c: the index of its table in c->tables and its
 * index there, or -SCREE_ENOTFOUND with err set. (Callers zero their
 * outputs: GCC cannot see that they are set on success.) */
static int find(const struct eng_catalog *c, uint32_t id, uint32_t *ret_table,
                uint32_t *ret_index, char *err, size_t err_len)
{
        const struct eng_catalog_table *t;

        if (eng_catalog_tablet_by_id(c, id, &t, ret_index) < 0)
                return eng_catalog_fail(-SCREE_ENOTFOUND, err, err_len, "no tablet %u", id);
        *ret_table = (uint32_t)(t - c->tables);
        return 0;
}

/* ---- split ---- */

/* Checks that at (at_len bytes) splits tablet i of t into two. */
static int split_key_check(const struct eng_catalog_table *t, uint32_t i, const uint8_t *at,
                           size_t at_len, char *err, size_t err_len)
{
        const struct eng_catalog_tablet *b = &t->tablets[i];
        uint8_t buf[ENG_TABLE_ID_BYTES];
        const uint8_t *end;
        uint32_t end_len = eng_catalog_tablet_end(t, i, buf, &end);

        if (!at || at_len < ENG_TABLE_ID_BYTES || be32_get(at) != t->id)
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "split key does not start with table %u's id", t->id);
        if (at_len > ENG_CATALOG_MAX_START_BYTES)
                return eng_catalog_fail(-EINVAL, err, err_len, "split key of %zu bytes: at most %u",
                                        at_len, ENG_CATALOG_MAX_START_BYTES);
        if (eng_key_cmp(at, at_len, eng_catalog_tablet_start(t, i), b->start_len) <= 0)
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "split key is not after tablet %u's start", b->id);
        if (eng_key_cmp(at, at_len, end, end_len) >= 0)
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "split key is not before tablet %u's end", b->id);
        return 0;
}

int eng_catalog_split_tablet(const struct eng_catalog *c, uint32_t tablet_id, const uint8_t *at,
                             size_t at_len, struct eng_catalog **ret, uint32_t ret_ids[2],
                             char *err, size_t err_len)
{
        const struct eng_catalog_table *t;
        struct piece p[2];
        uint32_t ti = 0, i = 0;
        int r = find(c, tablet_id, &ti, &i, err, err_len);

        if (r < 0)
                return r;
        t = &c->tables[ti];
        r = split_key_check(t, i, at, at_len, err, err_len);
        if (r < 0)
                return r;
        if (t->n_tablets >= ENG_CATALOG_MAX_TABLETS)
                return eng_catalog_fail(-ENOSPC, err, err_len, "table '%s' has %u tablets: at most %u",
                                        t->path, t->n_tablets, ENG_CATALOG_MAX_TABLETS);
        if (UINT32_MAX - c->next_tablet_id < 2)
                return eng_catalog_fail(-ENOSPC, err, err_len, "tablet ids exhausted");
        p[0] = piece_of(t, i);
        p[0].id = c->next_tablet_id;
        p[1] = (struct piece){ .id = p[0].id + 1, .shard = p[0].shard, .start = at,
                               .len = (uint32_t)at_len };
        r = replace(c, ti, i, 1, p, 2, ret, err, err_len);
        if (r == 0 && ret_ids) {
                ret_ids[0] = p[0].id;
                ret_ids[1] = p[1].id;
        }
        return r;
}

/* ---- merge ---- */

int eng_catalog_merge_tablets(const struct eng_catalog *c, uint32_t first_id,
                              struct eng_catalog **ret, uint32_t *ret_id, char *err,
                              size_t err_len)
{
        const struct eng_catalog_table *t;
        const struct eng_catalog_tablet *a;
        struct piece p;
        uint32_t ti = 0, i = 0;
        int r = find(c, first_id, &ti, &i, err, err_len);

        if (r < 0)
                return r;
        t = &c->tables[ti];
        a = &t->tablets[i];
        if (i + 1 == t->n_tablets)
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "tablet %u is the last of table '%s': nothing to merge with",
                                        first_id, t->path);
        if (a[0].shard != a[1].shard)
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "tablets %u and %u are on shards %u and %u: move one first",
                                        a[0].id, a[1].id, a[0].shard, a[1].shard);
        if (c->next_tablet_id == UINT32_MAX)
                return eng_catalog_fail(-ENOSPC, err, err_len, "tablet ids exhausted");
        p = piece_of(t, i);
        p.id = c->next_tablet_id;
        r = replace(c, ti, i, 2, &p, 1, ret, err, err_len);
        if (r == 0 && ret_id)
                *ret_id = p.id;
        return r;
}

/* ---- move ---- */

int eng_catalog_move_tablet(const struct eng_catalog *c, uint32_t tablet_id, uint32_t shard,
                            struct eng_catalog **ret, char *err, size_t err_len)
{
        struct eng_catalog *n;
        uint32_t ti = 0, i = 0;
        int r = find(c, tablet_id, &ti, &i, err, err_len);

        if (r < 0)
                return r;
        if (shard >= c->n_shards)
                return eng_catalog_fail(-EINVAL, err, err_len, "shard %u: there are %u", shard,
                                        c->n_shards);
        if (c->tables[ti].tablets[i].shard == shard)
                return eng_catalog_fail(-EINVAL, err, err_len, "tablet %u is on shard %u already",
                                        tablet_id, shard);
        n = eng_catalog_clone(c);
        if (!n)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        n->tables[ti].tablets[i].shard = shard;
        *ret = n;
        return 0;
}
