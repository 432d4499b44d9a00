/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard's tablets and how it routes keys to them, both taken from the
 * catalog (engine/catalog.h); see shard.h, eng_shard_set_catalog.
 *
 * s->tablets holds every tablet the shard has, sorted by id. A route per
 * live table of the catalog maps the table's tablet index (what
 * eng_catalog_route_ikey returns) to the shard's tablet, or NULL for
 * another shard's. Installing a catalog makes the tablets it gives this
 * shard and marks those of dropped tables; a dropped tablet is emptied in
 * the background (shard_drop_step): once nothing uses it, its memtables
 * go, one manifest edit removes its SSTables and its entry, its files are
 * deleted (but for those another tablet's entry still names: a split's
 * children share files), and it is freed. A crash in between leaves
 * SSTables the next open finds without a live tablet: it leaves them out
 * of its manifest (eng_manifest_relayout), and start-up deletes the files
 * the manifest does not name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "base/log.h"
#include "engine/catalog.h"
#include "engine/shard_internal.h"
#include "engine/sst_reader.h"

/* The dropped tablet being emptied: its manifest edit and file removals. */
struct shard_drop {
        struct eng_shard *s;
        struct eng_tablet *t;
        struct eng_manifest_write mw;
        struct eng_fs_op op;
        struct eng_manifest_table *removed;
        uint32_t n_removed, unlinked;
        char path[4096];
};

void shard_tablet_release(struct eng_tablet *t)
{
        eng_memtable_unref(t->active);
        t->active = NULL;
        for (uint32_t k = 0; k < t->n_imm; k++)
                eng_memtable_unref(t->imm[k].mt);
        t->n_imm = 0;
        shard_tset_unref(t->tset);
        t->tset = NULL;
        free(t->hot);
        t->hot = NULL;
        free(t->ks);
        t->ks = NULL;
}

void shard_tablet_free(struct eng_tablet *t)
{
        if (!t)
                return;
        shard_tablet_release(t);
        free(t->start);
        free(t);
}

struct eng_tablet *shard_tablet_new(struct eng_shard *s, const struct eng_catalog_table *ct,
                                     uint32_t i)
{
        struct eng_tablet *t = calloc(1, sizeof(*t));
        uint8_t buf[ENG_TABLE_ID_BYTES];
        const uint8_t *end;
        uint32_t end_len;

        if (!t)
                return NULL;
        end_len = eng_catalog_tablet_end(ct, i, buf, &end);
        t->id = ct->tablets[i].id;
        t->table = ct->id;
        t->start_len = ct->tablets[i].start_len;
        t->end_len = end_len;
        t->start = malloc((size_t)t->start_len + end_len);
        t->active = eng_memtable_new(s->pool);
        if (!t->start || !t->active) {
                shard_tablet_free(t);
                return NULL;
        }
        memcpy(t->start, eng_catalog_tablet_start(ct, i), t->start_len);
        t->end = t->start + t->start_len;
        memcpy(t->end, end, end_len);
        return t;
}

/* Index of the first tablet with id >= id in s->tablets. */
static uint32_t tablet_index(const struct eng_shard *s, uint32_t id)
{
        uint32_t lo = 0, hi = s->n_tablets;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (s->tablets[mid]->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

struct eng_tablet *shard_tablet_by_id(const struct eng_shard *s, uint32_t id)
{
        uint32_t i = tablet_index(s, id);

        return i < s->n_tablets && s->tablets[i]->id == id ? s->tablets[i] : NULL;
}

int shard_tablet_insert(struct eng_shard *s, struct eng_tablet *t)
{
        uint32_t at;

        if (s->n_tablets == s->cap_tablets) {
                uint32_t cap = s->cap_tablets ? s->cap_tablets * 2 : 16;
                struct eng_tablet **n = realloc(s->tablets, cap * sizeof(*n));

                if (!n)
                        return -ENOMEM;
                s->tablets = n;
                s->cap_tablets = cap;
        }
        at = tablet_index(s, t->id);
        memmove(&s->tablets[at + 1], &s->tablets[at], (s->n_tablets - at) * sizeof(*s->tablets));
        s->tablets[at] = t;
        s->n_tablets++;
        return 0;
}

static void tablet_remove(struct eng_shard *s, struct eng_tablet *t)
{
        uint32_t at = tablet_index(s, t->id);

        memmove(&s->tablets[at], &s->tablets[at + 1], (s->n_tablets - at - 1) * sizeof(*s->tablets));
        s->n_tablets--;
}

static void routes_free(struct shard_route *r, uint32_t n)
{
        for (uint32_t i = 0; r && i < n; i++)
                free(r[i].tab);
        free(r);
}

/*
 * Makes the tablets cat gives this shard that it lacks (appended to
 * *made, for an undo), and the routes of cat. 0, or -ENOMEM with the
 * tablets made so far in *made.
 */
static int routes_build(struct eng_shard *s, const struct eng_catalog *cat,
                        struct shard_route **ret, uint32_t *ret_n, struct eng_tablet ***made,
                        uint32_t *n_made)
{
        uint32_t n = eng_catalog_n_tables(cat);
        struct shard_route *r = calloc(n ? n : 1, sizeof(*r));

        if (!r)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                const struct eng_catalog_table *ct = eng_catalog_table_at(cat, i);

                r[i].table = ct->id;
                r[i].ct = ct;
                r[i].tab = calloc(ct->n_tablets, sizeof(*r[i].tab));
                if (!r[i].tab)
                        goto nomem;
                for (uint32_t k = 0; k < ct->n_tablets; k++) {
                        struct eng_tablet *t, **m;

                        if (ct->tablets[k].shard != s->o.shard)
                                continue;
                        t = shard_tablet_by_id(s, ct->tablets[k].id);
                        if (!t) {
                                m = realloc(*made, (*n_made + 1) * sizeof(*m));
                                if (!m)
                                        goto nomem;
                                *made = m;
                                t = shard_tablet_new(s, ct, k);
                                if (!t)
                                        goto nomem;
                                if (shard_tablet_insert(s, t) < 0) {
                                        shard_tablet_free(t);
                                        goto nomem;
                                }
                                m[(*n_made)++] = t;
                        }
                        r[i].tab[k] = t;
                }
        }
        *ret = r;
        *ret_n = n;
        return 0;
nomem:
        routes_free(r, n);
        return -ENOMEM;
}

int shard_tablets_init(struct eng_shard *s, struct eng_catalog *cat)
{
        struct eng_tablet **made = NULL;
        uint32_t n_made = 0;
        int r = routes_build(s, cat, &s->routes, &s->n_routes, &made, &n_made);

        free(made);     /* on failure shard_tablets_fini frees them with the rest */
        if (r < 0)
                return r;
        s->cat = eng_catalog_ref(cat);
        return 0;
}

void shard_tablets_fini(struct eng_shard *s)
{
        for (uint32_t i = 0; i < s->n_tablets; i++)
                shard_tablet_free(s->tablets[i]);
        free(s->tablets);
        s->tablets = NULL;
        s->n_tablets = s->cap_tablets = 0;
        routes_free(s->routes, s->n_routes);
        s->routes = NULL;
        s->n_routes = 0;
        eng_catalog_unref(s->cat);
        s->cat = NULL;
}

const struct shard_route *shard_route_of(const struct eng_shard *s, uint32_t table)
{
        uint32_t lo = 0, hi = s->n_routes;

        /* Tables are few and the Redis keyspace's come first: look there first. */
        if (table < s->n_routes && s->routes[table].table == table)
                return &s->routes[table];
        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (s->routes[mid].table < table)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < s->n_routes && s->routes[lo].table == table ? &s->routes[lo] : NULL;
}

struct eng_tablet *shard_tablet_of_ikey(const struct eng_shard *s, const uint8_t *ikey, uint32_t len)
{
        const struct shard_route *r = shard_route_of(s, be32_get(ikey));

        if (!r)
                return NULL;
        return r->tab[eng_catalog_route_ikey(r->ct, ikey, len)];
}

bool shard_table_gone(const struct eng_shard *s, uint32_t table)
{
        return !shard_route_of(s, table) && table < eng_catalog_next_table_id(s->cat);
}

int shard_ikey(const struct eng_shard *s, uint32_t table, const void *key, uint32_t len,
               uint8_t *buf, size_t cap, uint8_t **ret, uint32_t *ret_len)
{
        const struct shard_route *r = shard_route_of(s, table);
        size_t need;
        uint8_t *ik;
        long n;

        if (!r)
                return -SCREE_ENOTFOUND;
        need = eng_catalog_ikey_size(r->ct, len);
        ik = need <= cap ? buf : malloc(need);
        if (!ik)
                return -ENOMEM;
        n = eng_catalog_ikey_encode(r->ct, key, len, ik);
        if (n < 0) {
                if (ik != buf)
                        free(ik);
                return (int)n;
        }
        *ret = ik;
        *ret_len = (uint32_t)n;
        return 0;
}

static void tablet_release_memory(struct eng_shard *s, struct eng_tablet *t);

/* ---- installing a catalog ---- */

/* Whether route rt (of t's table, or NULL) leads to t. */
static bool routed(const struct shard_route *rt, const struct eng_tablet *t)
{
        return rt && rt->tab[eng_catalog_route_ikey(rt->ct, t->start, t->start_len)] == t;
}

/* Frees the tablets made for a catalog that is not installed after all. */
static void made_undo(struct eng_shard *s, struct eng_tablet **made, uint32_t n_made)
{
        for (uint32_t i = 0; i < n_made; i++) {
                tablet_remove(s, made[i]);
                shard_tablet_free(made[i]);
        }
        free(made);
}

/* The tablets cat replaces hand over to their children, then go. */
static void relayout_all(struct eng_shard *s, const struct eng_catalog *cat,
                         struct eng_tablet **made, uint32_t n_made)
{
        for (uint32_t i = 0; i < s->n_tablets;) {
                struct eng_tablet *t = s->tablets[i];

                if (!shard_tablet_replaced(cat, t)) {
                        i++;
                        continue;
                }
                shard_relayout(s, cat, t, made, n_made);
                tablet_remove(s, t);
                if (t->compacting && shard_compaction_orphan(s, t))
                        shard_tablet_release(t);        /* its compaction frees it */
                else
                        shard_tablet_free(t);
        }
}

int eng_shard_set_catalog(struct eng_shard *s, struct eng_catalog *cat)
{
        struct shard_route *routes = NULL;
        struct eng_tablet **made = NULL;
        uint32_t n_routes = 0, n_made = 0;
        int r;

        if (eng_catalog_n_shards(cat) != s->o.n_shards)
                return -EINVAL;
        if (eng_catalog_version(cat) <= eng_catalog_version(s->cat))
                return 0;       /* this one or a newer one is in already */
        r = shard_relayout_ready(s, cat);
        if (r < 0)
                return r;
        r = routes_build(s, cat, &routes, &n_routes, &made, &n_made);
        if (r == 0)
                r = shard_relayout_prepare(s, cat, made, n_made);
        if (r < 0) {
                routes_free(routes, n_routes);
                made_undo(s, made, n_made);
                return r;
        }
        relayout_all(s, cat, made, n_made);
        free(made);
        /* The children flush what the parent could not while frozen, and
         * separate once nothing else is due. */
        shard_maybe_flush(s);
        shard_maybe_compact(s);
        /* A live tablet no route names any more belongs to a dropped table,
         * or moved to another shard (shard_move.h: its files are the other
         * shard's now too); one that moved here is routed now. */
        for (uint32_t i = 0; i < s->n_tablets; i++) {
                struct eng_tablet *t = s->tablets[i];
                const struct shard_route *rt = NULL;

                for (uint32_t k = 0; k < n_routes && !rt; k++)
                        if (routes[k].table == t->table)
                                rt = &routes[k];
                if (t->dropped)
                        continue;
                if (!routed(rt, t) && !t->arriving) {
                        t->dropped = true;
                        if (rt) {
                                log_info("shard %u: tablet %u moved to another shard", s->o.shard,
                                         t->id);
                                s->stats.tablet_moves_out++;
                        }
                        else
                                log_info("shard %u: table %u dropped: removing its tablet %u",
                                         s->o.shard, t->table, t->id);
                        tablet_release_memory(s, t);
                } else if (t->arriving && routed(rt, t)) {
                        t->arriving = t->moving = false;
                        s->stats.tablet_moves_in++;
                }
        }
        routes_free(s->routes, s->n_routes);
        s->routes = routes;
        s->n_routes = n_routes;
        eng_catalog_unref(s->cat);
        s->cat = eng_catalog_ref(cat);
        shard_drop_step(s);
        shard_maybe_compact(s);         /* a tablet moved here may compact now */
        return 0;
}

struct eng_catalog *eng_shard_catalog(const struct eng_shard *s)
{
        return s->cat;
}

bool eng_shard_holds_table(const struct eng_shard *s, uint32_t table)
{
        for (uint32_t i = 0; i < s->n_tablets; i++)
                if (s->tablets[i]->table == table)
                        return true;
        return false;
}

static void tablet_stats(const struct eng_tablet *t, struct eng_tablet_stats *st)
{
        const struct eng_tset *ts = t->tset;

        *st = (struct eng_tablet_stats){ .id = t->id, .bytes = t->active_bytes,
                                         .rows = eng_memtable_count(t->active),
                                         .reads_ps = t->load_rate.reads,
                                         .writes_ps = t->load_rate.writes,
                                         .read_bytes_ps = t->load_rate.read_bytes,
                                         .write_bytes_ps = t->load_rate.write_bytes,
                                         .ops_avg = t->ops_avg };
        if (t->hot) {
                struct eng_hot_slot top[ENG_TABLET_HOT_KEYS];

                st->n_hot = eng_hotkeys_top(t->hot, top, ENG_TABLET_HOT_KEYS);
                for (uint32_t k = 0; k < st->n_hot; k++) {
                        /* A count halves every second and counts one access
                         * in ENG_HOT_SAMPLE: about 2 / ENG_HOT_SAMPLE of a
                         * steady second's accesses. */
                        st->hot[k].per_sec = top[k].count * ENG_HOT_SAMPLE / 2;
                        st->hot[k].len = top[k].len;
                        st->hot[k].cut = top[k].cut;
                        memcpy(st->hot[k].key, top[k].key, top[k].len);
                }
        }
        for (uint32_t k = 0; k < t->n_imm; k++) {
                st->bytes += t->imm[k].bytes;
                st->rows += eng_memtable_count(t->imm[k].mt);
        }
        for (uint32_t k = 0; ts && k < ts->n; k++) {
                uint64_t bytes, rows;

                shard_table_share(t, ts->e[k].t, &bytes, &rows);
                st->bytes += bytes;
                st->rows += rows;
        }
}

uint32_t eng_shard_table_stats(const struct eng_shard *s, uint32_t table,
                               struct eng_tablet_stats *ret, uint32_t cap)
{
        const struct shard_route *r = shard_route_of(s, table);
        uint32_t n = 0;

        for (uint32_t i = 0; r && i < r->ct->n_tablets; i++) {
                if (!r->tab[i])
                        continue;
                if (n < cap)
                        tablet_stats(r->tab[i], &ret[n]);
                n++;
        }
        return n;
}

/* ---- emptying dropped tablets ---- */

/*
 * The memory of dropped tablet t's memtables counts no more, at once: its
 * active memtable and its sealed ones go, but for the one a flush in
 * progress is writing (drop_start frees that one). Nothing reads them any
 * more: no route leads to t, and reads and scans in flight hold their own
 * references.
 */
static void tablet_release_memory(struct eng_shard *s, struct eng_tablet *t)
{
        uint32_t keep = shard_flushing(s, t) ? 1 : 0;

        s->active_bytes -= t->active_bytes;
        t->active_bytes = 0;
        t->active_first_segment = 0;
        eng_memtable_unref(t->active);
        t->active = NULL;
        for (uint32_t k = keep; k < t->n_imm; k++) {
                s->imm_bytes -= t->imm[k].bytes;
                eng_memtable_unref(t->imm[k].mt);
        }
        t->n_imm = keep;
        shard_wake_waiters(s);          /* none waits for what was freed */
        shard_unstall(s);
}

static void drop_finish(struct shard_drop *d)
{
        struct eng_shard *s = d->s;

        tablet_remove(s, d->t);
        shard_tablet_free(d->t);
        free(d->removed);
        free(d);
        s->dropping = false;
        shard_drop_step(s);
        shard_job_done(s);
}

static void drop_unlink_next(struct shard_drop *d);

static void drop_unlinked(struct eng_fs_op *op, int res)
{
        struct shard_drop *d = op->ctx;

        if (res < 0 && res != -ENOENT)
                log_warn("shard %u: removing %s of a dropped table: %s", d->s->o.shard, d->path,
                         strerror(-res));
        d->unlinked++;
        drop_unlink_next(d);
}

static void drop_unlink_next(struct shard_drop *d)
{
        while (d->unlinked < d->n_removed) {
                if (shard_file_named(d->s, d->removed[d->unlinked].file_id)) {
                        d->unlinked++;  /* shared: another tablet still reads it */
                        continue;
                }
                eng_block_cache_erase_file(d->s->cache, d->removed[d->unlinked].file_id);
                eng_shard_sst_path(d->s, d->removed[d->unlinked].file_id, d->path, sizeof(d->path));
                d->op.ctx = d;
                if (eng_fs_unlink(d->s->fs, &d->op, d->path, drop_unlinked) == 0)
                        return;
                d->unlinked++;  /* start-up deletes what the manifest does not name */
        }
        drop_finish(d);
}

static void drop_recorded(struct eng_manifest_write *w, int res)
{
        struct shard_drop *d = w->ctx;

        if (res < 0) {
                /* The tables stay named by the manifest: keep the files.
                 * The next open leaves them out (no live tablet). */
                log_warn("shard %u: recording the removal of dropped tablet %u failed (%s); its "
                         "files go at the next start", d->s->o.shard, d->t->id, strerror(-res));
                d->n_removed = 0;
        }
        drop_unlink_next(d);
}

/* Empties dropped tablet t (nothing uses it). Returns 0 (started or done)
 * or -ENOMEM (retried at the next step). */
static int drop_start(struct eng_shard *s, struct eng_tablet *t)
{
        struct shard_drop *d = calloc(1, sizeof(*d));
        const struct eng_tset *ts = t->tset;
        struct eng_manifest_edit e = { 0 };
        int r;

        if (!d || !(d->removed = calloc(ts ? ts->n + 1 : 1, sizeof(*d->removed)))) {
                free(d);
                return -ENOMEM;
        }
        d->s = s;
        d->t = t;
        for (uint32_t i = 0; ts && i < ts->n; i++)
                d->removed[d->n_removed++] = ts->e[i].meta;
        /* The memtable a flush was writing when the drop came. */
        tablet_release_memory(s, t);
        s->dropping = true;
        s->busy++;
        if (!eng_manifest_has_tablet(eng_manifest_state(s->man), t->id)) {
                drop_finish(d);         /* the manifest never heard of it */
                return 0;
        }
        e.removed = d->removed;
        e.n_removed = d->n_removed;
        e.dropped_tablets = &t->id;
        e.n_dropped = 1;
        d->mw.done = drop_recorded;
        d->mw.ctx = d;
        r = eng_manifest_apply(s->man, &e, &d->mw);
        if (r < 0)
                drop_recorded(&d->mw, r);
        return 0;
}

void shard_drop_step(struct eng_shard *s)
{
        if (s->dropping || s->closing || !s->man)
                return;
        for (uint32_t i = 0; i < s->n_tablets; i++) {
                struct eng_tablet *t = s->tablets[i];

                if (!t->dropped || t->compacting || shard_flushing(s, t))
                        continue;
                if (drop_start(s, t) == 0)
                        return;
        }
        shard_unstall(s);       /* memory may have come free */
}
