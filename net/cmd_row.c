/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ROW.*: rows of catalog tables over the protocol (docs/tables.md).
 *
 * Each command runs on the origin: it finds the table in the origin's
 * snapshot (held, with the plan, in the request's info until the reply),
 * parses its arguments against the table's key schema (tbl_args.h), and
 * sends the engine work to the shards owning the rows as child requests.
 * A point operation is one child; ranges are row_range.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "engine/catalog.h"
#include "engine/key.h"
#include "net/cmd.h"
#include "net/server.h"
#include "net/tbl_args.h"
#include "net/row_int.h"
#include "net/xwrite.h"

/* Frees what rc holds (rc itself goes with the request's info); twice is
 * harmless. */
void net_row_cmd_free(struct row_cmd *rc)
{
        if (!rc)
                return;
        eng_catalog_unref(rc->snap);
        net_tbl_ops_fini(&rc->ops);
        net_tbl_bounds_fini(&rc->range.b);
        free(rc->pos);
        free(rc->next);
        if (rc->rows_init)
                net_resp_out_fini(&rc->rows);
        memset(rc, 0, sizeof(*rc));
}

int net_row_reply_err(struct net_req *req, const char *msg)
{
        net_resp_add_errorf(req->out, "ERR %s", msg);
        return NET_CMD_DONE;
}

struct net_tbl_limits net_row_limits(const struct net_req *req)
{
        const struct net_server *srv = req->origin->srv;

        return (struct net_tbl_limits){ .max_key_bytes = srv->max_key_bytes,
                                        .max_value_bytes = srv->max_value_bytes };
}

/* Sets up req->info for the table named by argv[1]. 0, or a reply written. */
int net_row_cmd_new(struct net_req *req)
{
        struct eng_catalog *c = eng_shard_catalog(req->origin->eng);
        char path[ENG_CATALOG_MAX_PATH + 1], err[NET_TBL_ERR_MAX];
        const struct eng_catalog_table *t;
        struct row_cmd *rc;

        if (net_tbl_path(&req->argv[1], path, sizeof(path), err, sizeof(err)) < 0)
                return net_row_reply_err(req, err), -1;
        if (eng_catalog_lookup(c, path, &t) < 0) {
                net_resp_add_errorf(req->out, "ERR no table %s", path);
                return -1;
        }
        if (t->key_format != ENG_CATALOG_KEYS_TUPLE) {
                net_resp_add_errorf(req->out, "ERR table %s holds the Redis keyspace: use the "
                                    "Redis commands on it", path);
                return -1;
        }
        rc = calloc(1, sizeof(*rc));
        if (!rc)
                return net_row_reply_err(req, "out of memory"), -1;
        rc->snap = eng_catalog_ref(c);
        rc->t = t;
        rc->now_ms = net_now_ms();
        req->info = rc;
        req->table = t->id;
        return 0;
}

/* The shard owning the row with tuple key (key, len). */
static unsigned owner(const struct eng_catalog_table *t, const uint8_t *key, size_t len)
{
        uint32_t i = 0;

        (void)eng_catalog_route_key(t, key, len, &i);   /* parsed keys hold their hash parts */
        return t->tablets[i].shard;
}

/* The reply of the one child is the reply. */
static void child_reply_gather(struct net_req *req)
{
        net_out_move(req->out, &req->children[0]->own);
        net_row_cmd_free(req->info);
}

/* ---- point operations, on the owning shard ---- */

static const struct row_cmd *plan(const struct net_req *child)
{
        return child->parent->info;
}

static void then_ok(struct net_req *req, int res)
{
        if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_simple(req->out, "OK", 2);
}

/* The engine mutation of op. */
static struct eng_mutation mutation(const struct row_cmd *rc, const struct net_tbl_op *op)
{
        return (struct eng_mutation){
                .kind = op->kind == NET_TBL_OP_PUT ? ENG_MUT_PUT : ENG_MUT_DEL,
                .table = rc->t->id, .key = op->key, .key_len = op->key_len,
                .value = op->value, .value_len = op->value_len,
                .expiry_ms = op->ttl_ms ? rc->now_ms + op->ttl_ms : 0,
        };
}

/* A write of several rows refused because one's tablet moved away: the
 * parent plans it again (write_gather). */
static void then_write(struct net_req *req, int res)
{
        req->ival = res == -SCREE_EMOVED;
        if (!req->ival)
                then_ok(req, res);
}

static int exec_write(struct net_req *req)
{
        const struct row_cmd *rc = plan(req);
        struct eng_mutation *m = calloc(rc->ops.n, sizeof(*m));
        int r;

        if (!m)
                return net_row_reply_err(req, "out of memory");
        for (uint32_t i = 0; i < rc->ops.n; i++)
                m[i] = mutation(rc, &rc->ops.ops[i]);
        /* One row goes on to its new owner by itself (net_req_moved);
         * rows now on two shards need the parent's plan. */
        req->ival = 0;
        req->no_reroute = rc->ops.n > 1;
        r = net_req_write(req, m, rc->ops.n, then_write);
        free(m);                        /* the engine copied the keys and values */
        return r;
}

static void then_get(struct net_req *req, int res)
{
        if (res == -SCREE_ENOTFOUND)
                net_resp_add_null(req->out);
        else if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_bulk(req->out, req->u.g.value, req->u.g.value_len);
}

static int exec_get(struct net_req *req)
{
        const struct net_tbl_op *op = &plan(req)->ops.ops[0];

        return net_req_get(req, op->key, op->key_len, then_get);
}

/* ROW.DEL: deletes the row if it is live, and says whether it was. */
static int del_fn(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct net_req *req = arg;

        req->ival = cur != NULL;
        if (!cur)
                return 0;
        out->kind = ENG_MUT_DEL;
        return 1;
}

static int exec_del(struct net_req *req)
{
        const struct net_tbl_op *op = &plan(req)->ops.ops[0];

        req->ival = 0;
        return net_req_rmw(req, op->key, op->key_len, del_fn, net_then_int_ival);
}

static const struct net_cmd_def def_exec_write = { "row.write", -2, NET_CMD_WRITE, 0, 0, 0,
                                                   exec_write, NULL };
static const struct net_cmd_def def_exec_get = { "row.get", -2, NET_CMD_READONLY, 0, 0, 0,
                                                 exec_get, NULL };
static const struct net_cmd_def def_exec_del = { "row.del", -2, NET_CMD_WRITE, 0, 0, 0,
                                                 exec_del, NULL };

/* Sends the parsed ops' work to the owner of the first op's row. */
static int point_start_with(struct net_req *req, const struct net_cmd_def *def,
                            void (*gather)(struct net_req *req))
{
        const struct row_cmd *rc = req->info;
        const struct net_tbl_op *op = &rc->ops.ops[0];
        int r = net_req_one_child(req, def, owner(rc->t, op->key, op->key_len), NULL, gather);

        if (r == NET_CMD_DONE)
                net_row_cmd_free(req->info);
        return r;
}

static int point_start(struct net_req *req, const struct net_cmd_def *def)
{
        return point_start_with(req, def, child_reply_gather);
}

/* Parses a key (argv[2..]) into a one-op plan of kind. 0 or a reply written. */
static int key_op(struct net_req *req, enum net_tbl_op_kind kind)
{
        struct row_cmd *rc = req->info;
        struct net_tbl_limits lim = net_row_limits(req);
        char err[NET_TBL_ERR_MAX];
        size_t len;
        int r;

        rc->ops.ops = calloc(1, sizeof(*rc->ops.ops));
        rc->ops.keys = malloc(lim.max_key_bytes);
        if (!rc->ops.ops || !rc->ops.keys)
                return net_row_reply_err(req, "out of memory"), -1;
        r = net_tbl_key_parse(rc->t, req->argv + 2, req->argc - 2, &lim, rc->ops.keys,
                              lim.max_key_bytes, &len, err, sizeof(err));
        if (r < 0)
                return net_row_reply_err(req, err), -1;
        rc->ops.n = 1;
        rc->ops.ops[0] = (struct net_tbl_op){ .kind = kind, .key = rc->ops.keys,
                                              .key_len = (uint32_t)len };
        return 0;
}

int net_cmd_row_get(struct net_req *req)
{
        if (net_row_cmd_new(req) < 0)
                return NET_CMD_DONE;
        if (key_op(req, NET_TBL_OP_KIND_INVALID) < 0) {       /* a read: no write kind */
                net_row_cmd_free(req->info);
                return NET_CMD_DONE;
        }
        return point_start(req, &def_exec_get);
}

int net_cmd_row_del(struct net_req *req)
{
        if (net_row_cmd_new(req) < 0)
                return NET_CMD_DONE;
        if (key_op(req, NET_TBL_OP_DEL) < 0) {
                net_row_cmd_free(req->info);
                return NET_CMD_DONE;
        }
        return point_start(req, &def_exec_del);
}

static void row_write_ok(struct net_req *req)
{
        net_resp_add_simple(req->out, "OK", 2);
}

static void row_cmd_release(void *arg)
{
        net_row_cmd_free(arg);
        free(arg);
}

/* Rows on several shards: one atomic write across them (xwrite.h), which
 * takes over the plan. */
static int write_shards(struct net_req *req, struct row_cmd *rc)
{
        struct eng_mutation *m = calloc(rc->ops.n, sizeof(*m));
        unsigned *own = calloc(rc->ops.n, sizeof(*own));
        int r;

        if (!m || !own) {
                free(m);
                free(own);
                net_row_cmd_free(rc);
                return net_row_reply_err(req, "out of memory");
        }
        for (uint32_t i = 0; i < rc->ops.n; i++) {
                m[i] = mutation(rc, &rc->ops.ops[i]);
                own[i] = owner(rc->t, rc->ops.ops[i].key, rc->ops.ops[i].key_len);
        }
        req->info = NULL;       /* the write's now */
        r = net_xwrite(req, m, own, rc->ops.n, row_write_ok, row_cmd_release, rc);
        free(m);
        free(own);
        return r;
}

static int write_plan(struct net_req *req, struct row_cmd *rc);

static void replan_write_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct row_cmd *rc = container_of(t, struct row_cmd, replan);
        struct net_req *req = rc->req;

        (void)loop;
        if (write_plan(req, rc) == NET_CMD_DONE)
                net_req_complete(req);
}

/* The write's one child is back: its reply, or -- refused because a
 * row's tablet moved away -- the write planned again by the origin's
 * newest catalog (one shard, or a write across shards), after a pause. */
static void write_gather(struct net_req *req)
{
        struct row_cmd *rc = req->info;
        struct net_req *c = req->children[0];
        const struct eng_catalog_table *t;

        if (!c->ival || net_child_error(req, c)) {
                child_reply_gather(req);
                return;
        }
        if (++rc->replans > 10000) {
                net_resp_add_errorf(req->out, "TRYAGAIN the write's tablets have been moving "
                                    "between shards for 10 s");
                net_row_cmd_free(rc);
                return;
        }
        if (eng_catalog_table_by_id(eng_shard_catalog(req->origin->eng), rc->t->id, &t) < 0) {
                net_resp_add_errorf(req->out, "ERR no table %s (dropped meanwhile)", rc->t->path);
                net_row_cmd_free(rc);
                return;
        }
        eng_catalog_unref(rc->snap);
        rc->snap = eng_catalog_ref(eng_shard_catalog(req->origin->eng));
        rc->t = t;
        rc->req = req;
        rx_timer_init(&rc->replan, replan_write_fire, "net:row write replan");
        rx_timer_arm_after(req->origin->loop, &rc->replan, 1000 * 1000);
        req->children_left++;           /* the parent waits for the timer */
}

/* Sends the parsed write to its shard, or across shards. */
static int write_plan(struct net_req *req, struct row_cmd *rc)
{
        unsigned shard = owner(rc->t, rc->ops.ops[0].key, rc->ops.ops[0].key_len);

        for (uint32_t i = 1; i < rc->ops.n; i++)
                if (owner(rc->t, rc->ops.ops[i].key, rc->ops.ops[i].key_len) != shard)
                        return write_shards(req, rc);
        return point_start_with(req, &def_exec_write, write_gather);
}

/* ROW.PUT and ROW.WRITE: parsed with parse, then written on their shard(s). */
static int write_cmd(struct net_req *req,
                     int (*parse)(const struct eng_catalog_table *, const struct net_arg *, size_t,
                                  const struct net_tbl_limits *, struct net_tbl_ops *, char *,
                                  size_t))
{
        struct net_tbl_limits lim = net_row_limits(req);
        char err[NET_TBL_ERR_MAX];
        struct row_cmd *rc;

        if (net_row_cmd_new(req) < 0)
                return NET_CMD_DONE;
        rc = req->info;
        if (parse(rc->t, req->argv + 2, req->argc - 2, &lim, &rc->ops, err, sizeof(err)) < 0) {
                net_row_cmd_free(rc);
                return net_row_reply_err(req, err);
        }
        return write_plan(req, rc);
}

int net_cmd_row_put(struct net_req *req)
{
        return write_cmd(req, net_tbl_put_parse);
}

int net_cmd_row_write(struct net_req *req)
{
        return write_cmd(req, net_tbl_write_parse);
}
