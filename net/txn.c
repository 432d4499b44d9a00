/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lock sets and the isolation of single-key commands (see txn.h and
 * docs/transactions.md).
 *
 * A lock set is sorted by (shard, fingerprint) and cut into parts, one per
 * shard. Acquiring walks the parts in order: the origin's own part is
 * locked in place, another shard's through the part's rx_msg (the part
 * runs there, waits there if it must, and replies once all its keys are
 * held). A waiter woken by a release continues from a posted task, never
 * inside the release, so the code that released is never re-entered.
 * Releasing sends every remote part at once and ends when all are back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/compiler.h"
#include "net/server.h"
#include "net/txn.h"
#include "reactor/loop.h"

struct lock_part {
        struct rx_msg msg;
        struct net_lockset *ls;
        unsigned shard;
        uint32_t first, n;              /* ls->keys[first .. first + n) */
        uint32_t got;                   /* held so far (a prefix) */
        int err;
        bool releasing, deferred;
        struct net_intent_waiter w;
        struct rx_task task;
};

struct net_lockset {
        struct net_shard *origin;
        struct net_lock_key *keys;
        uint32_t n_keys, n_parts, cur, left;
        struct lock_part *parts;
        struct net_req *req;
};

/* By shard, then a shard's table (ALL) first, then by fingerprint. */
static int key_cmp(const void *a, const void *b)
{
        const struct net_lock_key *x = a, *y = b;

        if (x->shard != y->shard)
                return x->shard < y->shard ? -1 : 1;
        if ((x->mode == NET_INTENT_ALL) != (y->mode == NET_INTENT_ALL))
                return x->mode == NET_INTENT_ALL ? -1 : 1;
        if (x->fp != y->fp)
                return x->fp < y->fp ? -1 : 1;
        return 0;
}

static int keys_grow(struct net_lock_key **keys, size_t *n, size_t *cap)
{
        size_t c = *cap ? *cap * 2 : 16;
        struct net_lock_key *k;

        if (*n < *cap)
                return 0;
        k = realloc(*keys, c * sizeof(*k));
        if (!k)
                return -ENOMEM;
        *keys = k;
        *cap = c;
        return 0;
}

int net_lock_keys_add(struct net_lock_key **keys, size_t *n, size_t *cap,
                      const struct net_server *srv, const struct net_cmd_def *def,
                      const struct net_arg *argv, size_t argc, bool force_read)
{
        size_t last;

        if (net_cmd_is_global(def)) {
                for (uint32_t s = 0; s < srv->n_shards; s++) {
                        if (keys_grow(keys, n, cap) < 0)
                                return -ENOMEM;
                        (*keys)[(*n)++] = (struct net_lock_key){ .shard = s,
                                                                 .mode = NET_INTENT_ALL };
                }
                return 0;
        }
        if (def->first_key <= 0)
                return 0;
        last = def->last_key < 0 ? argc - 1 : (size_t)def->last_key;
        for (size_t i = (size_t)def->first_key; i <= last && i < argc; i += (size_t)def->step) {
                if (keys_grow(keys, n, cap) < 0)
                        return -ENOMEM;
                (*keys)[(*n)++] = (struct net_lock_key){
                        .fp = net_intent_fp(argv[i].ptr, argv[i].len),
                        .shard = net_server_owner(srv, argv[i].ptr, argv[i].len),
                        .mode = (def->flags & NET_CMD_WRITE) && !force_read ? NET_INTENT_WRITE
                                                                            : NET_INTENT_READ,
                };
        }
        return 0;
}

/* ---- building ---- */

static void part_init(struct net_lockset *ls, struct lock_part *p);

/* Sorted, one entry per (shard, fp) with the strongest mode; a shard
 * whose table is locked (ALL, sorted first) needs none of its keys. */
static uint32_t keys_normalize(struct net_lock_key *k, size_t n)
{
        uint32_t out = 0;

        qsort(k, n, sizeof(*k), key_cmp);
        for (size_t i = 0; i < n; i++) {
                if (out && k[out - 1].shard == k[i].shard && k[out - 1].mode == NET_INTENT_ALL)
                        continue;
                if (out && key_cmp(&k[out - 1], &k[i]) == 0) {
                        if (k[i].mode == NET_INTENT_WRITE)
                                k[out - 1].mode = NET_INTENT_WRITE;
                        continue;
                }
                k[out++] = k[i];
        }
        return out;
}

static struct net_lockset *lockset_new(struct net_req *req, const struct net_lock_key *keys,
                                       size_t n)
{
        struct net_lockset *ls = calloc(1, sizeof(*ls));

        if (!ls || !(ls->keys = malloc((n ? n : 1) * sizeof(*keys))) ||
            !(ls->parts = calloc(n ? n : 1, sizeof(*ls->parts)))) {
                if (ls)
                        free(ls->keys);
                free(ls);
                return NULL;
        }
        if (n)
                memcpy(ls->keys, keys, n * sizeof(*keys));
        ls->n_keys = keys_normalize(ls->keys, n);
        ls->origin = req->origin;
        ls->req = req;
        for (uint32_t i = 0; i < ls->n_keys; i++) {
                struct lock_part *p;

                if (i == 0 || ls->keys[i].shard != ls->keys[i - 1].shard) {
                        p = &ls->parts[ls->n_parts++];
                        part_init(ls, p);
                        p->shard = ls->keys[i].shard;
                        p->first = i;
                }
                ls->parts[ls->n_parts - 1].n++;
        }
        return ls;
}

static void lockset_free(struct net_lockset *ls)
{
        free(ls->keys);
        free(ls->parts);
        free(ls);
}

/* ---- one part, on its shard ---- */

static void part_wake(struct net_intent_waiter *w);

static struct net_shard *part_shard(const struct lock_part *p)
{
        return p->ls->origin->srv->shards[p->shard];
}

/* Takes the part's keys from p->got on. Returns true when all are held
 * (or an error ended it: p->err), false when waiting (part_wake goes on). */
static bool part_lock_here(struct lock_part *p)
{
        struct net_intent_table *t = &part_shard(p)->intents;

        while (p->got < p->n) {
                const struct net_lock_key *k = &p->ls->keys[p->first + p->got];
                int r;

                /* nested: a waiting ALL must not park the part's next key
                 * behind itself while the part holds its first ones. */
                p->w = (struct net_intent_waiter){ .fp = k->fp, .mode = k->mode,
                                                   .nested = p->got > 0, .wake = part_wake };
                r = net_intent_acquire(t, &p->w);
                if (r == 0)
                        return false;
                if (r < 0) {
                        p->err = r;
                        return true;
                }
                p->got++;
        }
        return true;
}

static void part_unlock_here(struct lock_part *p)
{
        struct net_intent_table *t = &part_shard(p)->intents;

        for (uint32_t i = 0; i < p->got; i++) {
                const struct net_lock_key *k = &p->ls->keys[p->first + i];

                net_intent_release(t, k->fp, k->mode);
        }
        p->got = 0;
}

static void lockset_part_held(struct net_lockset *ls);

static void part_task(struct rx_loop *loop, struct rx_task *t)
{
        struct lock_part *p = container_of(t, struct lock_part, task);

        if (!part_lock_here(p))
                return;
        if (p->deferred)
                rx_smp_reply(loop, &p->msg);
        else
                lockset_part_held(p->ls);
}

static void part_wake(struct net_intent_waiter *w)
{
        struct lock_part *p = container_of(w, struct lock_part, w);

        p->got++;
        p->task = (struct rx_task){ .fn = part_task, .name = "net:lock_part" };
        rx_loop_post(part_shard(p)->loop, &p->task);
}

static int part_msg_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct lock_part *p = container_of(m, struct lock_part, msg);

        if (p->releasing) {
                part_unlock_here(p);
                return 0;
        }
        if (part_lock_here(p))
                return 0;
        p->deferred = true;
        return RX_MSG_DEFERRED;
}

static void lockset_released_one(struct net_lockset *ls);

static void part_msg_done(struct rx_loop *src, struct rx_msg *m)
{
        struct lock_part *p = container_of(m, struct lock_part, msg);

        if (p->releasing)
                lockset_released_one(p->ls);
        else
                lockset_part_held(p->ls);
}

static void part_init(struct net_lockset *ls, struct lock_part *p)
{
        p->ls = ls;
        p->msg = (struct rx_msg){ .run = part_msg_run, .done = part_msg_done,
                                  .name = "net:lock" };
}

/* ---- the whole set, on the origin ---- */

/* Locks the parts from ls->cur on. Returns 1 when all are held (or a part
 * failed: its err), 0 when a part is under way (it calls
 * lockset_part_held). */
static int lockset_step(struct net_lockset *ls)
{
        while (ls->cur < ls->n_parts) {
                struct lock_part *p = &ls->parts[ls->cur];

                if (p->shard != ls->origin->id) {
                        p->deferred = false;
                        rx_smp_submit(ls->origin->loop, p->shard, &p->msg);
                        return 0;
                }
                if (!part_lock_here(p))
                        return 0;
                if (p->err)
                        return 1;
                ls->cur++;
        }
        return 1;
}

static int lockset_err(const struct net_lockset *ls)
{
        return ls->cur < ls->n_parts ? ls->parts[ls->cur].err : 0;
}

static void locked_go(struct net_req *req, int err);

static void lockset_part_held(struct net_lockset *ls)
{
        if (ls->parts[ls->cur].err == 0) {
                ls->cur++;
                if (lockset_step(ls) == 0)
                        return;
        }
        locked_go(ls->req, lockset_err(ls));
}

/* Releases every part. Returns 1 when done now, 0 when remote parts are
 * under way (lockset_released_one ends it). */
static int lockset_release(struct net_lockset *ls)
{
        ls->left = 1;
        for (uint32_t i = 0; i < ls->n_parts; i++) {
                struct lock_part *p = &ls->parts[i];

                if (!p->got)
                        continue;
                if (p->shard == ls->origin->id) {
                        part_unlock_here(p);
                        continue;
                }
                p->releasing = true;
                ls->left++;
                rx_smp_submit(ls->origin->loop, p->shard, &p->msg);
        }
        return --ls->left == 0;
}

static void lockset_released_one(struct net_lockset *ls)
{
        struct net_req *req = ls->req;

        if (--ls->left > 0)
                return;
        lockset_free(ls);
        req->ls = NULL;
        net_req_complete(req);
}

/* ---- requests under a lock set ---- */

/* The operation ran to its reply: release, then the request ends.
 * Returns what the handler returns. */
static int locked_end(struct net_req *req)
{
        struct net_lockset *ls = req->ls;

        if (lockset_release(ls) == 0)
                return NET_CMD_PENDING;         /* lockset_released_one completes req */
        lockset_free(ls);
        req->ls = NULL;
        return NET_CMD_DONE;
}

static int locked_run(struct net_req *req, int err)
{
        if (err < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return locked_end(req);
        }
        if (req->locked_fn(req) == NET_CMD_PENDING)
                return NET_CMD_PENDING;         /* net_req_complete releases */
        return locked_end(req);
}

static void locked_go(struct net_req *req, int err)
{
        if (locked_run(req, err) == NET_CMD_DONE)
                net_req_complete(req);
}

int net_req_lock_run(struct net_req *req, const struct net_lock_key *keys, size_t n,
                     net_cmd_fn run)
{
        struct net_lockset *ls = lockset_new(req, keys, n);

        req->locked = true;
        req->locked_fn = run;
        if (!ls) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        req->ls = ls;
        if (lockset_step(ls) == 0)
                return NET_CMD_PENDING;         /* lockset_part_held goes on */
        return locked_run(req, lockset_err(ls));
}

bool net_req_unlock(struct net_req *req)
{
        if (req->ls)
                return locked_end(req) == NET_CMD_PENDING;
        if (req->intent_held) {
                net_intent_release(&req->exec->intents, req->iw.fp, req->iw.mode);
                req->intent_held = false;
        }
        return false;
}

/* ---- single-key commands ---- */

static bool is_multi_key(const struct net_cmd_def *d)
{
        return (d->flags & NET_CMD_LOCAL) && d->first_key > 0;
}

static bool wants_intent(const struct net_req *req)
{
        const struct net_cmd_def *d = req->def;

        return !req->locked && !(d->flags & (NET_CMD_LOCAL | NET_CMD_NOENGINE)) &&
               d->first_key > 0 && (size_t)d->first_key < req->argc;
}

static void key_fp(struct net_req *req)
{
        const struct net_arg *k = &req->argv[req->def->first_key];

        req->iw.fp = net_intent_fp(k->ptr, k->len);
}

/* The handler, the lock being grantable or held. */
static int run_granted(struct net_req *req)
{
        struct net_intent_table *t = &req->exec->intents;
        int res = req->def->fn(req);

        if (req->intent_held && (req->iw.mode == NET_INTENT_PEEK || res == NET_CMD_DONE)) {
                net_intent_release(t, req->iw.fp, req->iw.mode);
                req->intent_held = false;
        } else if (!req->intent_held && res == NET_CMD_PENDING &&
                   req->iw.mode == NET_INTENT_SOLO) {
                /* Nothing ran since the check: granted at once. */
                key_fp(req);
                req->intent_held = net_intent_acquire(t, &req->iw) == 1;
        }
        return res;
}

static void single_task(struct rx_loop *loop, struct rx_task *t)
{
        struct net_req *req = container_of(t, struct net_req, task);

        if (run_granted(req) == NET_CMD_DONE)
                net_req_complete(req);
}

static void single_wake(struct net_intent_waiter *w)
{
        struct net_req *req = container_of(w, struct net_req, iw);

        req->intent_held = true;
        req->task = (struct rx_task){ .fn = single_task, .name = "net:key_granted" };
        rx_loop_post(req->exec->loop, &req->task);
}

int net_req_run_isolated(struct net_req *req)
{
        const struct net_cmd_def *d = req->def;
        struct net_lock_key *keys = NULL;
        size_t n = 0, cap = 0;
        int r;

        if (is_multi_key(d) && !req->locked) {
                if (net_lock_keys_add(&keys, &n, &cap, req->origin->srv, d, req->argv, req->argc,
                                      false) < 0) {
                        free(keys);
                        net_resp_add_error(req->out, "ERR out of memory", 17);
                        return NET_CMD_DONE;
                }
                r = net_req_lock_run(req, keys, n, d->fn);
                free(keys);
                return r;
        }
        if (!wants_intent(req))
                return d->fn(req);
        req->iw.mode = (d->flags & NET_CMD_WRITE) ? NET_INTENT_SOLO : NET_INTENT_PEEK;
        req->iw.wake = single_wake;
        if (!net_intent_is_idle(&req->exec->intents)) {
                key_fp(req);
                r = net_intent_acquire(&req->exec->intents, &req->iw);
                if (r == 0)
                        return NET_CMD_PENDING;         /* single_wake goes on */
                if (r < 0) {
                        net_resp_add_error(req->out, "ERR out of memory", 17);
                        return NET_CMD_DONE;
                }
                req->intent_held = true;
        }
        return run_granted(req);
}
