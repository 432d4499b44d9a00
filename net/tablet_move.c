/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Moving a tablet between shards (see tablet_move.h) and TABLET.MOVE
 * (docs/tables.md "Moving").
 *
 * On shard 0, the catalog change's prepare: a message to the source runs
 * eng_shard_move_out; back on shard 0, a message to the target runs
 * eng_shard_move_in with the source's hand-over (the target retries while
 * an earlier stay of the tablet is still being dropped there); then the
 * change's fn makes the catalog with the tablet on the target, which the
 * service saves and installs everywhere. A failed step sends the undo to
 * the shards that did theirs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/log.h"
#include "base/time.h"
#include "engine/catalog.h"
#include "engine/shard.h"
#include "net/cmd.h"
#include "net/server.h"
#include "net/tablet_move.h"
#include "net/tbl_args.h"
#include "net/tbl_int.h"

#define MOVE_IN_RETRY_NS (10 * NS_PER_MS)
#define MOVE_IN_TRIES 1000u             /* 10 s */

static struct net_tablet_move *move_of(struct eng_cat_change *ch)
{
        return container_of(ch, struct net_tablet_move, ch);
}

/* ---- undo, by messages that need nothing of the move ---- */

struct move_undo {
        struct rx_msg msg;
        uint32_t tablet;
        bool in;                        /* the target's copy, else the source's serving */
};

static int undo_run(struct rx_loop *dst, struct rx_msg *msg)
{
        struct move_undo *u = container_of(msg, struct move_undo, msg);
        struct net_shard *sh = net_shard_of(dst);

        if (sh->eng && u->in)
                eng_shard_move_in_undo(sh->eng, u->tablet);
        else if (sh->eng)
                eng_shard_move_out_undo(sh->eng, u->tablet);
        return 0;
}

static void undo_back(struct rx_loop *src, struct rx_msg *msg)
{
        (void)src;
        free(container_of(msg, struct move_undo, msg));
}

static void undo_send(struct rx_loop *from_loop, unsigned shard, uint32_t tablet, bool in)
{
        struct move_undo *u = calloc(1, sizeof(*u));

        if (!u) {
                log_error("undoing the move of tablet %u on shard %u: out of memory; the next "
                          "start undoes it", tablet, shard);
                return;
        }
        *u = (struct move_undo){ .tablet = tablet, .in = in };
        u->msg = (struct rx_msg){ .run = undo_run, .done = undo_back, .name = "tablet move undo" };
        rx_smp_submit(from_loop, shard, &u->msg);
}

static void move_undo(struct eng_cat_change *ch)
{
        struct net_tablet_move *m = move_of(ch);
        struct rx_loop *l0 = ch->svc->loop0;

        undo_send(l0, m->to, m->tablet, true);
        undo_send(l0, m->from, m->tablet, false);
}

/* ---- the target ---- */

static void mi_done(struct eng_move_in *mi, int res)
{
        struct net_tablet_move *m = mi->ctx;

        m->step_res = res;
        rx_smp_reply(rx_smp_loop(rx_loop_smp(m->ch.svc->loop0), m->to), &m->msg);
}

static int in_try(struct net_tablet_move *m, struct net_shard *sh)
{
        m->mi = (struct eng_move_in){ .done = mi_done, .ctx = m };
        return sh->eng ? eng_shard_move_in(sh->eng, &m->mo.h, &m->mi) : -SCREE_ESHUTDOWN;
}

static void in_retry(struct rx_loop *loop, struct rx_timer *t)
{
        struct net_tablet_move *m = container_of(t, struct net_tablet_move, retry);
        int r = in_try(m, net_shard_of(loop));

        if (r == -EBUSY && m->step_res++ < (int)MOVE_IN_TRIES) {
                rx_timer_arm_after(loop, &m->retry, MOVE_IN_RETRY_NS);
                return;
        }
        if (r < 0) {
                m->step_res = r;
                rx_smp_reply(loop, &m->msg);
        }
}

static int in_run(struct rx_loop *dst, struct rx_msg *msg)
{
        struct net_tablet_move *m = container_of(msg, struct net_tablet_move, msg);
        int r = in_try(m, net_shard_of(dst));

        if (r == -EBUSY) {              /* its last stay here is still being dropped */
                m->step_res = 0;
                rx_timer_init(&m->retry, in_retry, "net:tablet move-in retry");
                rx_timer_arm_after(dst, &m->retry, MOVE_IN_RETRY_NS);
                return RX_MSG_DEFERRED;
        }
        if (r < 0) {
                m->step_res = r;
                return 0;
        }
        return RX_MSG_DEFERRED;
}

static void in_back(struct rx_loop *src, struct rx_msg *msg)
{
        struct net_tablet_move *m = container_of(msg, struct net_tablet_move, msg);

        if (m->step_res < 0) {
                snprintf(m->ch.err, sizeof(m->ch.err), "shard %u could not take tablet %u over: "
                         "%s", m->to, m->tablet, m->step_res == -EEXIST
                         ? "one of its files has the id of another file there (both from before "
                           "per-shard file ids: it moves once compacted)"
                         : scree_strerror(m->step_res));
                undo_send(src, m->from, m->tablet, false);
                m->ready(&m->ch, m->step_res);
                return;
        }
        m->n_files = m->mo.h.n_files;
        m->flushed_bytes = m->mo.h.flushed_bytes;
        m->ready(&m->ch, 0);
}

/* ---- the source ---- */

static void mo_done(struct eng_move_out *mo, int res)
{
        struct net_tablet_move *m = mo->ctx;

        m->step_res = res;
        rx_smp_reply(rx_smp_loop(rx_loop_smp(m->ch.svc->loop0), m->from), &m->msg);
}

static int out_run(struct rx_loop *dst, struct rx_msg *msg)
{
        struct net_tablet_move *m = container_of(msg, struct net_tablet_move, msg);
        struct net_shard *sh = net_shard_of(dst);
        int r;

        m->mo = (struct eng_move_out){ .done = mo_done, .ctx = m };
        r = sh->eng ? eng_shard_move_out(sh->eng, m->tablet, &m->mo) : -SCREE_ESHUTDOWN;
        if (r < 0) {
                m->step_res = r;
                return 0;
        }
        return RX_MSG_DEFERRED;
}

static void out_back(struct rx_loop *src, struct rx_msg *msg)
{
        struct net_tablet_move *m = container_of(msg, struct net_tablet_move, msg);

        if (m->step_res < 0) {
                snprintf(m->ch.err, sizeof(m->ch.err), "shard %u could not hand tablet %u over: "
                         "%s", m->from, m->tablet, m->step_res == -EBUSY
                         ? "it is moving already" : scree_strerror(m->step_res));
                m->ready(&m->ch, m->step_res);
                return;
        }
        m->msg = (struct rx_msg){ .run = in_run, .done = in_back, .name = "tablet move in" };
        rx_smp_submit(src, m->to, &m->msg);
}

/* ---- the change ---- */

static void move_prepare(struct eng_cat_change *ch, const struct eng_catalog *cur,
                         void (*ready)(struct eng_cat_change *ch, int res))
{
        struct net_tablet_move *m = move_of(ch);
        const struct eng_catalog_table *t;
        uint32_t i;

        m->ready = ready;
        if (eng_catalog_tablet_by_id(cur, m->tablet, &t, &i) < 0 || t->id != m->table) {
                if (eng_catalog_table_by_id(cur, m->table, &t) == 0)
                        snprintf(ch->err, sizeof(ch->err), "table %.150s has no tablet %u",
                                 t->path, m->tablet);
                else
                        snprintf(ch->err, sizeof(ch->err), "the table has no tablet %u",
                                 m->tablet);
                ready(ch, -SCREE_ENOTFOUND);
                return;
        }
        if (t->key_format == ENG_CATALOG_KEYS_RAW) {
                snprintf(ch->err, sizeof(ch->err), "%s's tablets do not move: it holds Redis "
                         "keys, whose shard Redis commands find without the catalog", t->path);
                ready(ch, -EINVAL);
                return;
        }
        m->from = t->tablets[i].shard;
        if (m->from == m->to) {
                snprintf(ch->err, sizeof(ch->err), "tablet %u is on shard %u already", m->tablet,
                         m->to);
                ready(ch, -EINVAL);
                return;
        }
        m->msg = (struct rx_msg){ .run = out_run, .done = out_back, .name = "tablet move out" };
        rx_smp_submit(ch->svc->loop0, m->from, &m->msg);
}

static int move_fn(struct eng_cat_change *ch, const struct eng_catalog *cur,
                   struct eng_catalog **ret)
{
        struct net_tablet_move *m = move_of(ch);

        return eng_catalog_move_tablet(cur, m->tablet, m->to, ret, ch->err, sizeof(ch->err));
}

static void move_done(struct eng_cat_change *ch)
{
        struct net_tablet_move *m = move_of(ch);

        m->took_ns = time_now_ns() - m->started_ns;
        m->held_ns = m->mo.h.cut_ns ? time_now_ns() - m->mo.h.cut_ns : 0;
        eng_handoff_fini(&m->mo.h);
        m->done(m, ch->res, ch->err);
}

void net_tablet_move(struct net_shard *origin, struct net_tablet_move *m)
{
        m->origin = origin;
        m->started_ns = time_now_ns();
        m->mo.h = (struct eng_handoff){ 0 };
        m->ch = (struct eng_cat_change){ .prepare = move_prepare, .undo = move_undo,
                                         .fn = move_fn, .done = move_done };
        net_cat_submit(origin, &m->ch);
}

/* ---- TABLET.MOVE table tablet shard ---- */

struct move_cmd {
        struct net_tablet_move m;
        struct net_req *req;
        char path[ENG_CATALOG_MAX_PATH + 1];
};

static void cmd_moved(struct net_tablet_move *m, int res, const char *err)
{
        struct move_cmd *mc = container_of(m, struct move_cmd, m);
        struct net_req *req = mc->req;

        if (res < 0) {
                net_resp_add_errorf(req->out, "ERR %s", err);
        } else {
                log_info("tablet %u of %s moved from shard %u to %u: %u files, %llu bytes "
                         "flushed, %.1f ms (its keys held %.1f ms)", m->tablet, mc->path, m->from,
                         m->to, m->n_files, (unsigned long long)m->flushed_bytes,
                         (double)m->took_ns / 1e6, (double)m->held_ns / 1e6);
                net_resp_add_simple(req->out, "OK", 2);
        }
        free(mc);
        net_req_complete(req);
}

int net_cmd_tablet_move(struct net_req *req)
{
        const struct eng_catalog_table *t;
        char err[NET_TBL_ERR_MAX];
        struct move_cmd *mc = calloc(1, sizeof(*mc));
        uint32_t id;
        uint64_t to;

        if (!mc) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        if (net_tablet_args(req, mc->path, sizeof(mc->path), &t, &id, err, sizeof(err)) < 0)
                goto bad;
        if (net_tbl_u64(&req->argv[3], &to) < 0 || to >= req->origin->srv->n_shards) {
                snprintf(err, sizeof(err), "the shard must be 0 to %u",
                         req->origin->srv->n_shards - 1);
                goto bad;
        }
        mc->req = req;
        mc->m = (struct net_tablet_move){ .done = cmd_moved, .table = t->id,
                                          .tablet = id, .to = (uint32_t)to };
        net_tablet_move(req->origin, &mc->m);
        return NET_CMD_PENDING;
bad:
        free(mc);
        net_resp_add_errorf(req->out, "ERR %s", err);
        return NET_CMD_DONE;
}
