/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Point reads and read-modify-write; see shard.h. A get looks in the
 * tablet's memtables (active, then sealed ones newest first: all in
 * memory, synchronous), then in its SSTables newest first, stopping at the
 * first version found: a tablet's tables cover disjoint, ordered sequence
 * ranges, so the first version found is the newest. A table whose block is
 * cached answers at once; otherwise the get waits for the read, keeping the
 * table set it started with alive.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/compiler.h"
#include "base/endian.h"
#include "base/time.h"
#include "engine/shard_internal.h"

int shard_memtables_get(const struct eng_tablet *t, const uint8_t *ikey, uint32_t len,
                        struct eng_entry *ret, struct eng_memtable **ret_mt)
{
        if (eng_memtable_get(t->active, ikey, len, UINT64_MAX, ret) == 0) {
                *ret_mt = t->active;
                return 0;
        }
        for (uint32_t i = t->n_imm; i-- > 0;) {
                if (eng_memtable_get(t->imm[i].mt, ikey, len, UINT64_MAX, ret) == 0) {
                        *ret_mt = t->imm[i].mt;
                        return 0;
                }
        }
        return -SCREE_ENOTFOUND;
}

int eng_shard_sst_path(const struct eng_shard *s, uint64_t file_id, char *buf, size_t size)
{
        return snprintf(buf, size, "%s/%016" PRIx64 ".sst", s->dir, file_id);
}

/* Drops what the lookup itself holds (not the found value). */
static void get_cleanup(struct eng_get *g)
{
        shard_tset_unref(g->tset);
        g->tset = NULL;
        if (g->ikey != g->ikey_small)
                free(g->ikey);
        g->ikey = NULL;
}

void eng_get_release(struct eng_get *g)
{
        if (g->mt)
                eng_memtable_unref(g->mt);
        g->mt = NULL;
        if (g->block)
                eng_block_cache_release(g->s->cache, g->block);
        g->block = NULL;
        g->value = NULL;
}

/* Finishes with the version e found: absent when deleted or expired. */
/* Counts n bytes read by g: into its tablet, or -- a catalog installed
 * since may have split it (freed) -- the one holding its key now. */
static void load_read_bytes(struct eng_get *g, uint64_t n)
{
        struct eng_tablet *t = g->cat_version == eng_catalog_version(g->s->cat)
                                       ? g->tablet
                                       : shard_tablet_of_ikey(g->s, g->ikey, g->ikey_len);

        if (t)
                t->load.read_bytes += n;
}

/* Charges g's tablet with the tables g consulted beyond the first. */
static void charge_tables(struct eng_get *g)
{
        if (g->next_table > 1 && g->cat_version == eng_catalog_version(g->s->cat))
                shard_read_debt(g->s, g->tablet, g->next_table - 1);
}

static int found(struct eng_get *g, const struct eng_entry *e)
{
        charge_tables(g);
        load_read_bytes(g, e->key_len + e->value_len);
        get_cleanup(g);                 /* frees the ikey */
        if (e->kind != ENG_ENTRY_VALUE || (e->expiry_ms && e->expiry_ms <= g->now_ms)) {
                eng_get_release(g);
                return -SCREE_ENOTFOUND;
        }
        g->value = e->value;
        g->value_len = e->value_len;
        g->expiry_ms = e->expiry_ms;
        g->seq = e->seq;
        return 0;
}

static void sst_done(struct eng_sst_get *sg, int res);

/* Looks in the tables from g->next_table on. Returns 0, -SCREE_ENOTFOUND,
 * 1 (pending: sst_done goes on), or <0. */
static int tables_step(struct eng_get *g)
{
        struct eng_tset *ts = g->tset;

        while (ts && g->next_table < ts->n) {
                struct eng_sst_table *t = ts->e[g->next_table].t;
                int r;

                g->sg.done = sst_done;
                g->sg.ctx = g;
                r = eng_sst_table_get(t, g->ikey, g->ikey_len, &g->sg);
                if (r == ENG_SST_PENDING) {
                        g->s->stats.get_sst_reads++;
                        return 1;
                }
                g->next_table++;
                if (r == 0) {
                        g->block = g->sg.block;
                        return found(g, &g->sg.entry);
                }
                if (r != -SCREE_ENOTFOUND) {
                        if (r == -SCREE_ECORRUPT)
                                g->damage = g->sg.damage;
                        get_cleanup(g);
                        return r;
                }
        }
        charge_tables(g);
        get_cleanup(g);
        return -SCREE_ENOTFOUND;
}

static void sst_done(struct eng_sst_get *sg, int res)
{
        struct eng_get *g = sg->ctx;

        g->next_table++;
        if (res == 0) {
                g->block = sg->block;
                res = found(g, &sg->entry);
        } else if (res == -SCREE_ENOTFOUND) {
                res = tables_step(g);
                if (res == 1)
                        return;
        } else {
                if (res == -SCREE_ECORRUPT)
                        g->damage = sg->damage;
                get_cleanup(g);
        }
        g->done(g, res);
}

/* Encodes (table, key) into g. Returns 0, -EINVAL, -SCREE_ENOTFOUND (no
 * such table) or -ENOMEM. */
static int get_prepare(struct eng_shard *s, uint32_t table, const void *key, uint32_t key_len,
                       struct eng_get *g)
{
        int r;

        if (!shard_key_ok(key_len))
                return -EINVAL;
        g->s = s;
        g->mt = NULL;
        g->block = NULL;
        g->tset = NULL;
        g->value = NULL;
        r = shard_ikey(s, table, key, key_len, g->ikey_small, sizeof(g->ikey_small), &g->ikey,
                       &g->ikey_len);
        if (r < 0)
                g->ikey = NULL;
        return r;       /* routed by get_issue */
}

/* Looks g's key up: the memtables now, the tables they point at later.
 * Returns as eng_shard_get. */
static int get_issue(struct eng_get *g)
{
        struct eng_shard *s = g->s;
        struct eng_entry e;
        struct eng_memtable *mt;

        shard_apply_pending(s);         /* see every write submitted before */
        g->now_ms = time_wall_ns() / 1000000;
        s->stats.gets++;
        /* Routed now, not when called: the table may have been dropped
         * while the get waited behind an earlier operation. */
        g->tablet = shard_tablet_of_ikey(s, g->ikey, g->ikey_len);
        g->cat_version = eng_catalog_version(s->cat);
        if (!g->tablet || g->tablet->moved_out) {
                /* Another shard's key (its tablet moved, or is moving:
                 * shard_move.h), or a table dropped meanwhile. */
                bool live = shard_route_of(s, be32_get(g->ikey)) != NULL;

                get_cleanup(g);
                return live ? -SCREE_EMOVED : -SCREE_ENOTFOUND;
        }
        g->tablet->load.reads++;
        g->next_table = 0;
        shard_hot_access(g->tablet, g->ikey, g->ikey_len);
        if (shard_memtables_get(g->tablet, g->ikey, g->ikey_len, &e, &mt) == 0) {
                s->stats.get_memtable_hits++;
                eng_memtable_ref(mt);
                g->mt = mt;
                return found(g, &e);
        }
        g->tset = g->tablet->tset;
        if (g->tset)
                shard_tset_ref(g->tset);
        return tables_step(g);
}

/* A get that waited behind an operation in flight on its key heads the
 * key's FIFO now (from the order task): it looks up what every earlier
 * operation left, and lets the next one go. */
static void get_woken(struct eng_keyq_op *op)
{
        struct eng_get *g = container_of(op, struct eng_get, qop);
        struct eng_shard *s = g->s;
        int r;

        if (s->closing) {
                get_cleanup(g);
                r = -SCREE_ESHUTDOWN;
        } else {
                r = get_issue(g);
        }
        shard_order_leave(s, &g->qnode);
        if (r != 1)
                g->done(g, r);
}

int eng_shard_get(struct eng_shard *s, uint32_t table, const void *key, uint32_t key_len,
                  struct eng_get *g)
{
        int r = get_prepare(s, table, key, key_len, g);

        if (r == 0 && (r = shard_rl_take(s, g->ikey, g->ikey_len, ENG_RATELIMIT_READ)) < 0)
                get_cleanup(g);
        if (r < 0)
                return r;
        if (!eng_keyq_is_idle(&s->keyq) &&
            eng_keyq_is_busy(&s->keyq, eng_keyq_fp(g->ikey, g->ikey_len))) {
                /* An earlier write or read-modify-write of the key is in
                 * flight: read what it leaves. */
                g->qop = (struct eng_keyq_op){ .run = get_woken };
                g->qnode = (struct eng_keyq_node){ .op = &g->qop,
                                                   .fp = eng_keyq_fp(g->ikey, g->ikey_len) };
                r = eng_keyq_enter(&s->keyq, &g->qnode);
                if (r == 0)
                        return 1;
                get_cleanup(g);
                return r < 0 ? r : -EINVAL;
        }
        return get_issue(g);
}

/* ---- read-modify-write ---- */

static void rmw_finish_task(struct rx_loop *loop, struct rx_task *task)
{
        struct eng_rmw *r = (struct eng_rmw *)((char *)task - offsetof(struct eng_rmw, task));

        (void)loop;
        r->done(r, r->res);
}

/* Ends r with res; its key is left (or handed to its write) already. */
static void rmw_finish(struct eng_rmw *r, int res)
{
        if (!r->in_call) {
                r->done(r, res);
                return;
        }
        r->res = res;
        r->task.fn = rmw_finish_task;
        r->task.name = "shard rmw done";
        rx_loop_post(r->g.s->loop, &r->task);
}

static void rmw_write_done(struct eng_write *w, int res)
{
        struct eng_rmw *r = w->ctx;

        rmw_finish(r, res < 0 ? res : 1);
}

/* Leaves r's key's FIFO if it is in it. */
static void rmw_leave(struct eng_rmw *r)
{
        if (r->held)
                shard_order_leave(r->g.s, &r->qnode);
        r->held = false;
}

/* The read is done: res from the get. Nothing else touched the key since
 * the call: r heads its key's FIFO, or everything ran in one go. */
static void rmw_decide(struct eng_rmw *r, int res)
{
        struct eng_shard *s = r->g.s;
        struct eng_mutation out = {
                .kind = ENG_MUT_PUT, .table = r->table, .key = r->key, .key_len = r->key_len,
        };
        int fr, wr;

        if (res < 0 && res != -SCREE_ENOTFOUND) {
                rmw_leave(r);
                rmw_finish(r, res);
                return;
        }
        fr = r->fn(r->fn_arg, res == 0 ? &r->g : NULL, &out);
        if (fr <= 0) {
                eng_get_release(&r->g);
                rmw_leave(r);
                rmw_finish(r, fr);
                return;
        }
        r->w.done = rmw_write_done;
        r->w.ctx = r;
        /* The write keeps the key until its entry is in the memtables (it
         * may stall), then leaves it for the next operation; without a
         * place yet, it takes one if it stalls. */
        wr = shard_write_held(s, &out, &r->w, r->held ? &r->qnode : NULL);
        r->held = false;
        eng_get_release(&r->g);
        if (wr != 0)
                rmw_finish(r, wr == 1 ? 1 : wr);
}

static void rmw_read_done(struct eng_get *g, int res)
{
        struct eng_rmw *r = g->ctx;

        if (r->oom) {           /* it could not hold the key while it read */
                if (res == 0)
                        eng_get_release(g);
                rmw_finish(r, -ENOMEM);
                return;
        }
        rmw_decide(r, res);
}

/* Places r at the head of its key's FIFO. REQUIRES: nothing in flight on
 * the key. Returns 0 or -ENOMEM. */
static int rmw_hold(struct eng_rmw *r)
{
        int res;

        r->qnode.fp = eng_keyq_fp(r->g.ikey, r->g.ikey_len);
        res = eng_keyq_enter(&r->g.s->keyq, &r->qnode);

        SCREE_ASSERT(res != 0);
        r->held = res == 1;
        return res < 0 ? res : 0;
}

/* r may read the key (it heads its FIFO, or none is in flight on it). */
static void rmw_read(struct eng_rmw *r)
{
        int res;

        r->g.done = rmw_read_done;
        r->g.ctx = r;
        res = get_issue(&r->g);
        if (res != 1) {
                rmw_decide(r, res);
                return;
        }
        /* The read waits for the disk: from now on later operations on the
         * key wait for r. */
        if (!r->held)
                r->oom = rmw_hold(r) < 0;
}

/* A read-modify-write that waited behind an earlier operation on its key
 * heads the key's FIFO now (from the order task). */
static void rmw_woken(struct eng_keyq_op *op)
{
        struct eng_rmw *r = container_of(op, struct eng_rmw, qop);

        if (!r->g.s->closing) {
                rmw_read(r);
                return;
        }
        get_cleanup(&r->g);
        rmw_leave(r);
        rmw_finish(r, -SCREE_ESHUTDOWN);
}

int eng_shard_rmw(struct eng_shard *s, uint32_t t, const void *key, uint32_t key_len,
                  eng_rmw_fn fn, void *fn_arg, struct eng_rmw *r)
{
        int res;

        if (!fn)
                return -EINVAL;
        res = get_prepare(s, t, key, key_len, &r->g);
        if (res == 0 && (res = shard_rl_take(s, r->g.ikey, r->g.ikey_len, ENG_RATELIMIT_WRITE)) < 0)
                get_cleanup(&r->g);
        if (res < 0)
                return res;
        r->fn = fn;
        r->fn_arg = fn_arg;
        r->table = t;
        r->key = key;
        r->key_len = key_len;
        r->held = r->oom = r->in_call = false;
        r->qop = (struct eng_keyq_op){ .run = rmw_woken };
        /* The key's place is taken only when it is needed: behind an
         * operation in flight on the key, or once the read has to wait. */
        r->qnode = (struct eng_keyq_node){ .op = &r->qop };
        if (!eng_keyq_is_idle(&s->keyq)) {
                r->qnode.fp = eng_keyq_fp(r->g.ikey, r->g.ikey_len);
                if (eng_keyq_is_busy(&s->keyq, r->qnode.fp)) {
                        res = eng_keyq_enter(&s->keyq, &r->qnode);
                        if (res < 0) {
                                get_cleanup(&r->g);
                                return res;
                        }
                        r->held = true;
                        return 0;       /* rmw_woken goes on */
                }
        }
        r->in_call = true;
        rmw_read(r);
        r->in_call = false;
        return 0;
}

/* ---- expiry ---- */

static int expire_fn(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct eng_expire *x = arg;

        if (!cur)
                return 0;
        if (x->expiry_ms && x->expiry_ms <= time_wall_ns() / 1000000) {
                out->kind = ENG_MUT_DEL;
                return 1;
        }
        x->copy = malloc(cur->value_len ? cur->value_len : 1);
        if (!x->copy)
                return -ENOMEM;
        memcpy(x->copy, cur->value, cur->value_len);
        out->value = x->copy;
        out->value_len = cur->value_len;
        out->expiry_ms = x->expiry_ms;
        return 1;
}

static void expire_done(struct eng_rmw *r, int res)
{
        struct eng_expire *x = r->ctx;

        free(x->copy);
        x->copy = NULL;
        x->done(x, res);
}

int eng_shard_expire(struct eng_shard *s, uint32_t t, const void *key, uint32_t key_len,
                     uint64_t expiry_ms, struct eng_expire *x)
{
        x->expiry_ms = expiry_ms;
        x->copy = NULL;
        x->r.done = expire_done;
        x->r.ctx = x;
        return eng_shard_rmw(s, t, key, key_len, expire_fn, x, &x->r);
}
