/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writes on several shards, atomic across a crash: the server's
 * half of the engine's two-phase commit (engine/shard_xtxn.h,
 * docs/transactions.md), for ROW.WRITE and RENAME, and its resolution at
 * start.
 *
 * A write: the parts (one per shard, in ascending shard order) are
 * prepared one after the other, each on its shard -- the first shard is
 * the coordinator and makes the txn id with its prepare --, then the
 * coordinator decides, then every part commits (in parallel), then the
 * coordinator forgets, and the client is answered. Preparing in one
 * global order (ascending shards) means two such writes never wait for
 * each other's keys in a cycle: the engine's prepares hold their keys.
 * A prepare or a decision that fails aborts the prepared parts: nothing
 * is written.
 *
 * At start, once every engine is open and before data commands run
 * (net_shard_is_loading), shard 0 resolves what a crash or stop left in
 * doubt: it asks every shard for its parts in doubt and decisions, asks
 * each part's coordinator whether it decided, commits or aborts every
 * part (all at once: a commit may wait for another part's keys), commits
 * every decision's parts and forgets it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/log.h"
#include "base/time.h"
#include "engine/shard_xtxn.h"
#include "net/cmd.h"
#include "net/server.h"
#include "net/xwrite.h"

/* A commit that finds its shard out of space, or its part still busy, is
 * tried again this often, this many times (10 s), before it is reported. */
#define XW_RETRY_NS (100 * NS_PER_MS)
#define XW_RETRIES 100u

enum xw_kind {
        XW_PREPARE,
        XW_DECIDE,
        XW_COMMIT,
        XW_ABORT,
        XW_FORGET,
};

struct xw_part {
        uint32_t shard;
        uint32_t n;
        struct eng_mutation *m;         /* into plan->muts */
};

/* The parent request's info. */
struct xw_plan {
        void (*ok)(struct net_req *req);
        void (*release)(void *arg);     /* frees what muts' bytes live in */
        void *arg;
        struct eng_mutation *muts;      /* grouped by part */
        struct xw_part *parts;          /* ascending shard */
        uint32_t *shards;               /* the parts' shards: the decision's participants */
        uint32_t n_parts, next;         /* parts prepared so far */
        uint64_t txn;                   /* made by the first prepare */
        int err;
        bool decided;
        /* A prepare found a key's tablet gone to another shard (or going:
         * engine/shard_move.h): once the prepared parts are aborted, the
         * write starts over with the owners the origin's newest catalog
         * names, after a pause (the move's catalog install). */
        bool moved;
        uint32_t replans;
        struct rx_timer replan;
        struct net_req *req;
};

/* A child's info: one step on one shard. */
struct xw_step {
        enum xw_kind kind;
        uint32_t part;
        int res;
        uint32_t tries;
        struct eng_xtxn_op op;
        struct rx_timer retry;
};

static void plan_free(struct xw_plan *p)
{
        if (p->release)
                p->release(p->arg);
        free(p->muts);
        free(p->parts);
        free(p->shards);
        memset(p, 0, sizeof(*p));
}

/* ---- the steps, on their shards ---- */

static const struct xw_plan *plan_of(const struct net_req *child)
{
        return child->parent->info;
}

static void step_end(struct net_req *req, int res)
{
        struct xw_step *st = req->info;

        st->res = res;
        net_resp_add_int(req->out, res);
}

static void step_done(struct eng_xtxn_op *op, int res)
{
        struct net_req *req = op->ctx;

        step_end(req, res);
        net_req_complete(req);
}

static int step_commit(struct net_req *req);

static void commit_retry(struct rx_loop *loop, struct rx_timer *t)
{
        struct xw_step *st = container_of(t, struct xw_step, retry);
        struct net_req *req = st->op.ctx;

        (void)loop;
        if (step_commit(req) == NET_CMD_DONE)
                net_req_complete(req);
}

/* Commits the txn's part here, trying again while the shard is full. */
static int step_commit(struct net_req *req)
{
        struct xw_step *st = req->info;
        int r;

        st->op = (struct eng_xtxn_op){ .done = step_done, .ctx = req };
        r = eng_shard_commit(req->exec->eng, plan_of(req)->txn, &st->op);
        if (r == 0)
                return NET_CMD_PENDING;
        if ((r == -ENOSPC || r == -EBUSY) && st->tries++ < XW_RETRIES) {
                rx_timer_init(&st->retry, commit_retry, "net:xwrite commit retry");
                if (rx_timer_arm_after(req->exec->loop, &st->retry, XW_RETRY_NS) == 0)
                        return NET_CMD_PENDING;
        }
        step_end(req, r);
        return NET_CMD_DONE;
}

static int exec_step(struct net_req *req)
{
        struct xw_plan *p = req->parent->info;
        struct xw_step *st = req->info;
        struct eng_shard *eng = req->exec->eng;
        const struct xw_part *part = &p->parts[st->part];
        int r;

        st->op = (struct eng_xtxn_op){ .done = step_done, .ctx = req };
        switch (st->kind) {
        case XW_PREPARE:
                /* The coordinator's prepare comes first and makes the id:
                 * the parent waits for it before the next step. */
                if (!p->txn)
                        p->txn = eng_shard_txn_new(eng);
                r = eng_shard_prepare(eng, p->txn, p->parts[0].shard, part->m, part->n, &st->op);
                break;
        case XW_DECIDE:
                r = eng_shard_decide(eng, p->txn, p->shards, p->n_parts, &st->op);
                break;
        case XW_COMMIT:
                return step_commit(req);
        case XW_ABORT:
                r = eng_shard_abort(eng, p->txn);
                step_end(req, r == -SCREE_ENOTFOUND ? 0 : r);
                return NET_CMD_DONE;
        case XW_FORGET:
                r = eng_shard_forget(eng, p->txn);
                step_end(req, r);
                return NET_CMD_DONE;
        default:
                r = -EINVAL;
        }
        if (r == 0)
                return NET_CMD_PENDING;
        step_end(req, r);
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_step = { "xwrite", -2, NET_CMD_WRITE, 0, 0, 0, exec_step,
                                             NULL };

/* ---- the write, on the origin ---- */

static void xw_gather(struct net_req *req);

/* Starts one step of kind on each part in [from, to). Returns what the
 * handler returns (a reply written on ENOMEM). */
static int steps_start(struct net_req *req, enum xw_kind kind, uint32_t from, uint32_t to)
{
        struct xw_plan *p = req->info;

        net_req_children_drop(req);
        req->children = calloc(to - from, sizeof(*req->children));
        if (!req->children)
                goto nomem;
        for (uint32_t i = from; i < to; i++) {
                struct net_req *c = net_req_child(req, &def_step, req->argv, req->argc,
                                                  (int)p->parts[i].shard);
                struct xw_step *st = c ? calloc(1, sizeof(*st)) : NULL;

                if (!st) {
                        net_req_free(c);
                        goto nomem;
                }
                /* Until the step runs: a child refused on its shard never does. */
                *st = (struct xw_step){ .kind = kind, .part = i, .res = -SCREE_ESHUTDOWN };
                c->info = st;
                c->table = req->table;
                req->children[req->n_children++] = c;
        }
        return net_req_fan_out(req, xw_gather);
nomem:
        net_resp_add_error(req->out, "ERR out of memory", 17);
        return NET_CMD_DONE;
}

static int steps_res(const struct net_req *req)
{
        for (uint32_t i = 0; i < req->n_children; i++) {
                const struct xw_step *st = req->children[i]->info;

                if (st->res < 0)
                        return st->res;
        }
        return 0;
}

/* Ends the write with its reply. */
static void xw_reply(struct net_req *req, int res)
{
        struct xw_plan *p = req->info;

        if (res == 0)
                p->ok(req);
        else
                net_reply_engine_err(req, res);
        plan_free(p);
}

static int plan_build(struct xw_plan *p, const struct eng_mutation *muts, const unsigned *owner,
                      uint32_t n);

/* The shard c gives m's key to, or fallback when c lacks its table. */
static unsigned mut_owner(const struct eng_catalog *c, const struct eng_mutation *m,
                          unsigned fallback)
{
        const struct eng_catalog_table *t;
        uint32_t i = 0;

        if (eng_catalog_table_by_id(c, m->table, &t) < 0)
                return fallback;
        (void)eng_catalog_route_key(t, m->key, m->key_len, &i);
        return t->tablets[i].shard;
}

/* Regroups the write's mutations by the owners the origin's newest
 * catalog names, as a new write. 0 or -ENOMEM. */
static int plan_rebuild(struct net_req *req, struct xw_plan *p)
{
        const struct eng_catalog *c = eng_shard_catalog(req->origin->eng);
        uint32_t n = 0, at = 0;
        struct eng_mutation *m;
        unsigned *own;
        int r;

        for (uint32_t k = 0; k < p->n_parts; k++)
                n += p->parts[k].n;
        m = malloc(n * sizeof(*m));
        own = malloc(n * sizeof(*own));
        if (!m || !own) {
                free(m);
                free(own);
                return -ENOMEM;
        }
        for (uint32_t k = 0; k < p->n_parts; k++)
                for (uint32_t i = 0; i < p->parts[k].n; i++, at++) {
                        m[at] = p->parts[k].m[i];
                        own[at] = mut_owner(c, &m[at], p->parts[k].shard);
                }
        free(p->muts);
        free(p->parts);
        free(p->shards);
        p->muts = NULL;
        p->parts = NULL;
        p->shards = NULL;
        p->n_parts = p->next = 0;
        p->txn = 0;
        p->err = 0;
        p->moved = p->decided = false;
        r = plan_build(p, m, own, n);
        free(m);
        free(own);
        return r;
}

static void replan_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct xw_plan *p = container_of(t, struct xw_plan, replan);
        struct net_req *req = p->req;

        (void)loop;
        if (plan_rebuild(req, p) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                plan_free(p);
                net_req_complete(req);
                return;
        }
        if (steps_start(req, XW_PREPARE, 0, 1) == NET_CMD_DONE) {
                plan_free(p);
                net_req_complete(req);
        }
}

/* After a prepare met a moved tablet and the prepared parts are aborted:
 * starts over after a pause, or replies once it has waited 10 s. */
static void xw_replan(struct net_req *req, struct xw_plan *p)
{
        if (++p->replans > 10000) {
                net_resp_add_errorf(req->out, "TRYAGAIN the write's tablets have been moving "
                                    "between shards for 10 s");
                plan_free(p);
                return;
        }
        p->req = req;
        rx_timer_init(&p->replan, replan_fire, "net:xwrite replan");
        rx_timer_arm_after(req->origin->loop, &p->replan, 1000 * 1000);
        req->children_left++;           /* the parent waits for the timer */
}

/* Starts the next step: what the last round's outcome calls for. */
static void xw_gather(struct net_req *req)
{
        struct xw_plan *p = req->info;
        const struct xw_step *last = req->children[0]->info;
        enum xw_kind kind = last->kind;
        int res, r = NET_CMD_PENDING;

        /* A step refused on its shard (stopping) kept its -SCREE_ESHUTDOWN. */
        res = steps_res(req);
        switch (kind) {
        case XW_PREPARE:
                if (res < 0) {
                        p->err = res;
                        p->moved = res == -SCREE_EMOVED;
                        if (p->next == 0 && p->moved) {
                                xw_replan(req, p);
                                return;
                        }
                        if (p->next == 0) {     /* nothing prepared */
                                xw_reply(req, res);
                                return;
                        }
                        r = steps_start(req, XW_ABORT, 0, p->next);
                } else if (++p->next < p->n_parts) {
                        r = steps_start(req, XW_PREPARE, p->next, p->next + 1);
                } else {
                        r = steps_start(req, XW_DECIDE, 0, 1);
                }
                break;
        case XW_DECIDE:
                if (res < 0) {
                        p->err = res;
                        r = steps_start(req, XW_ABORT, 0, p->n_parts);
                } else {
                        p->decided = true;
                        r = steps_start(req, XW_COMMIT, 0, p->n_parts);
                }
                break;
        case XW_COMMIT:
                if (res < 0) {
                        /* Decided: a restart applies it (in doubt, decided).
                         * Until then its keys stay held. */
                        log_error("a decided cross-shard write failed to commit: %s; the next "
                                  "start applies it", scree_strerror(res));
                        net_resp_add_errorf(req->out, "ERR the write is decided but a shard "
                                            "failed to apply it (%s): the next start applies "
                                            "it; until then its rows wait", scree_strerror(res));
                        plan_free(p);
                        return;
                }
                r = steps_start(req, XW_FORGET, 0, 1);
                break;
        case XW_ABORT:
                if (p->moved) {
                        xw_replan(req, p);
                        return;
                }
                xw_reply(req, p->err);
                return;
        case XW_FORGET:
                /* A forget that failed leaves the decision for the next
                 * start to resolve: the write is done either way. */
                xw_reply(req, 0);
                return;
        }
        if (r == NET_CMD_DONE)
                plan_free(p);   /* it replied: out of memory */
}

static int by_shard(const void *a, const void *b)
{
        const struct xw_part *x = a, *y = b;

        return x->shard < y->shard ? -1 : x->shard > y->shard;
}

/* Groups muts into parts by owning shard. 0 or -ENOMEM. */
static int plan_build(struct xw_plan *p, const struct eng_mutation *muts, const unsigned *owner,
                      uint32_t n)
{
        uint32_t at = 0;

        p->muts = calloc(n, sizeof(*p->muts));
        p->parts = calloc(n, sizeof(*p->parts));
        p->shards = calloc(n, sizeof(*p->shards));
        if (!p->muts || !p->parts || !p->shards)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                uint32_t k = 0;

                while (k < p->n_parts && p->parts[k].shard != owner[i])
                        k++;
                if (k == p->n_parts)
                        p->parts[p->n_parts++].shard = owner[i];
                p->parts[k].n++;
        }
        qsort(p->parts, p->n_parts, sizeof(*p->parts), by_shard);
        for (uint32_t k = 0; k < p->n_parts; k++) {
                p->parts[k].m = p->muts + at;
                p->shards[k] = p->parts[k].shard;
                for (uint32_t i = 0; i < n; i++)
                        if (owner[i] == p->parts[k].shard)
                                p->muts[at++] = muts[i];
        }
        return 0;
}

int net_xwrite(struct net_req *req, const struct eng_mutation *muts, const unsigned *owner,
               uint32_t n, void (*ok)(struct net_req *req), void (*release)(void *arg),
               void *arg)
{
        struct xw_plan *p = calloc(1, sizeof(*p));
        int r;

        if (!p) {
                if (release)
                        release(arg);
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        *p = (struct xw_plan){ .ok = ok, .release = release, .arg = arg };
        free(req->info);
        req->info = p;
        if (!atomic_load(&req->origin->srv->xtxn_resolved)) {
                plan_free(p);
                net_resp_add_error(req->out, "LOADING resolving the writes a stop left in doubt",
                                   49);
                return NET_CMD_DONE;
        }
        if (plan_build(p, muts, owner, n) < 0) {
                plan_free(p);
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        r = steps_start(req, XW_PREPARE, 0, 1);
        if (r == NET_CMD_DONE)
                plan_free(p);
        return r;
}
