/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The numbered databases' own commands: MOVE and SWAPDB (docs/server.md,
 * "Numbered databases"). Databases 0..15 are the catalog tables
 * /redis/db0../redis/db15; a request addresses its connection's through
 * req->table (net_req_use_db), and SELECT lives in cmd_server.c.
 *
 * MOVE runs on the origin under its key's lock set (txn.h: WRITE on the
 * key's fingerprint, which ignores the database, so no other command
 * reads or writes the key in any database meanwhile), and sends one child
 * to the key's shard -- the same shard in every database, their tables
 * sharing one tablet layout. There it reads the key in the source and in
 * the target, and writes {PUT target with the source's value and expiry,
 * DEL source} as one engine write: both or neither survive a crash.
 *
 * SWAPDB is a catalog change (catalog_svc.h): the two tables swap paths,
 * durably, on every shard, before the reply; each shard's database cache
 * is refreshed as it installs the snapshot, so a connection that selected
 * a database finds the other's data from then on. Shard model: handlers
 * on the origin, MOVE's child on the key's shard.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "engine/catalog.h"
#include "engine/catalog_svc.h"
#include "net/cmd.h"
#include "net/server.h"

int net_db_arg(struct net_req *req, const struct net_arg *a, unsigned *ret)
{
        int64_t v;

        if (net_arg_i64(a, &v) < 0) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_NOT_INT);
                return -EINVAL;
        }
        if (v < 0 || v >= (int64_t)NET_DBS) {
                net_resp_add_errorf(req->out, "ERR DB index is out of range");
                return -ERANGE;
        }
        *ret = (unsigned)v;
        return 0;
}

/* ---- MOVE: the child on the key's shard ---- */

/* The child's req->table is the source's; this, before it runs, the
 * target's table (then its reply: 1 moved, 0 not). */
#define MOVE_DST(req) ((uint32_t)(req)->ival)

static void move_reply(struct net_req *req, int res)
{
        if (res < 0) {
                net_reply_engine_err(req, res);
                return;
        }
        req->ival = res;
        net_resp_add_int(req->out, res);
}

static void move_written(struct eng_write *w, int res)
{
        struct net_req *req = w->ctx;

        move_reply(req, res < 0 ? res : 1);
        net_req_complete(req);
}

/* The target read: absent, so the move writes. */
static int move_dst_got(struct net_req *req, int res)
{
        const struct net_arg *k = &req->argv[1];
        struct eng_mutation m[2];
        uint32_t dst = MOVE_DST(req);
        int r;

        if (res == 0)
                eng_get_release(&req->u.g);
        if (res != -SCREE_ENOTFOUND) {
                move_reply(req, res == 0 ? 0 : res);    /* present in the target: 0 */
                return NET_CMD_DONE;
        }
        m[0] = (struct eng_mutation){ .kind = ENG_MUT_PUT, .table = dst, .key = k->ptr,
                                      .key_len = (uint32_t)k->len, .value = req->scratch,
                                      .value_len = (uint32_t)req->scratch_len,
                                      .expiry_ms = req->expiry_ms };
        m[1] = (struct eng_mutation){ .kind = ENG_MUT_DEL, .table = req->table, .key = k->ptr,
                                      .key_len = (uint32_t)k->len };
        memset(&req->u.w, 0, sizeof(req->u.w));
        req->u.w.done = move_written;
        req->u.w.ctx = req;
        r = eng_shard_write(req->exec->eng, m, 2, &req->u.w);   /* copies m's bytes */
        if (r == 0)
                return NET_CMD_PENDING;
        move_reply(req, r == 1 ? 1 : r);
        return NET_CMD_DONE;
}

static void move_dst_cb(struct eng_get *g, int res)
{
        struct net_req *req = g->ctx;

        if (move_dst_got(req, res) == NET_CMD_DONE)
                net_req_complete(req);
}

/* The source read: keep its value and expiry, then read the target. */
static int move_src_got(struct net_req *req, int res)
{
        const struct net_arg *k = &req->argv[1];
        int r;

        if (res < 0) {
                move_reply(req, res == -SCREE_ENOTFOUND ? 0 : res);
                return NET_CMD_DONE;
        }
        r = net_req_keep(req, req->u.g.value, req->u.g.value_len);
        req->expiry_ms = req->u.g.expiry_ms;
        eng_get_release(&req->u.g);
        if (r < 0) {
                move_reply(req, r);
                return NET_CMD_DONE;
        }
        memset(&req->u.g, 0, sizeof(req->u.g));
        req->u.g.done = move_dst_cb;
        req->u.g.ctx = req;
        r = eng_shard_get(req->exec->eng, MOVE_DST(req), k->ptr, (uint32_t)k->len, &req->u.g);
        if (r == 1)
                return NET_CMD_PENDING;
        return move_dst_got(req, r);
}

static void move_src_cb(struct eng_get *g, int res)
{
        struct net_req *req = g->ctx;

        if (move_src_got(req, res) == NET_CMD_DONE)
                net_req_complete(req);
}

static int move_run(struct net_req *req)
{
        const struct net_arg *k = &req->argv[1];
        int r;

        memset(&req->u.g, 0, sizeof(req->u.g));
        req->u.g.done = move_src_cb;
        req->u.g.ctx = req;
        r = eng_shard_get(req->exec->eng, req->table, k->ptr, (uint32_t)k->len, &req->u.g);
        if (r == 1)
                return NET_CMD_PENDING;
        return move_src_got(req, r);
}

/* Runs under MOVE's lock set (locked children skip the intent checks). */
static const struct net_cmd_def def_move1 = { "move", 3, NET_CMD_WRITE, 1, 1, 1, move_run, NULL };

/* ---- MOVE: on the origin ---- */

static void move_gather(struct net_req *req)
{
        struct net_req *c = req->children[0];

        if (net_child_error(req, c))
                return;
        net_resp_add_int(req->out, c->ival);
}

/* MOVE key db: Redis's checks in Redis's order, then the child. */
int net_cmd_move(struct net_req *req)
{
        struct net_req *c;
        unsigned dst;

        if (net_db_arg(req, &req->argv[2], &dst) < 0)
                return NET_CMD_DONE;
        if (dst == req->db) {
                net_resp_add_errorf(req->out, "ERR source and destination objects are the same");
                return NET_CMD_DONE;
        }
        req->children = calloc(1, sizeof(*req->children));
        c = req->children ? net_req_child(req, &def_move1, req->argv, req->argc, -1) : NULL;
        if (!c) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        c->ival = (int64_t)req->origin->db_table[dst];
        req->children[0] = c;
        req->n_children = 1;
        return net_req_fan_out(req, move_gather);
}

/* ---- SWAPDB ---- */

struct swap_change {
        struct eng_cat_change ch;
        struct net_req *req;
        char a[16], b[16];              /* "/redis/dbN" */
};

static int swap_fn(struct eng_cat_change *ch, const struct eng_catalog *cur,
                   struct eng_catalog **ret)
{
        struct swap_change *sc = container_of(ch, struct swap_change, ch);

        return eng_catalog_swap_tables(cur, sc->a, sc->b, ret, ch->err, sizeof(ch->err));
}

static void swap_done(struct eng_cat_change *ch)
{
        struct swap_change *sc = container_of(ch, struct swap_change, ch);
        struct net_req *req = sc->req;

        if (ch->res < 0)
                net_resp_add_errorf(req->out, "ERR %s", ch->err);
        else
                net_resp_add_simple(req->out, "OK", 2);
        free(sc);
        net_req_complete(req);
}

/* SWAPDB a b: Redis's errors; a == b is an OK that changes nothing. */
int net_cmd_swapdb(struct net_req *req)
{
        struct swap_change *sc;
        int64_t a, b;

        /* Both numbers first, then the range, as Redis checks them. */
        if (net_arg_i64(&req->argv[1], &a) < 0) {
                net_resp_add_errorf(req->out, "ERR invalid first DB index");
                return NET_CMD_DONE;
        }
        if (net_arg_i64(&req->argv[2], &b) < 0) {
                net_resp_add_errorf(req->out, "ERR invalid second DB index");
                return NET_CMD_DONE;
        }
        if (a < 0 || a >= (int64_t)NET_DBS || b < 0 || b >= (int64_t)NET_DBS) {
                net_resp_add_errorf(req->out, "ERR DB index is out of range");
                return NET_CMD_DONE;
        }
        if (a == b) {
                net_resp_add_simple(req->out, "OK", 2);
                return NET_CMD_DONE;
        }
        sc = calloc(1, sizeof(*sc));
        if (!sc) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        sc->req = req;
        snprintf(sc->a, sizeof(sc->a), "/redis/db%u", (unsigned)a);
        snprintf(sc->b, sizeof(sc->b), "/redis/db%u", (unsigned)b);
        sc->ch = (struct eng_cat_change){ .fn = swap_fn, .done = swap_done };
        net_cat_submit(req->origin, &sc->ch);
        return NET_CMD_PENDING;
}
