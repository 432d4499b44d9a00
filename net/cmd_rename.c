/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RENAME, RENAMENX and COPY (docs/server.md, "RENAME, RENAMENX and COPY").
 *
 * Each runs on the origin under the lock set of its two keys (txn.h:
 * WRITE on both; the fingerprints ignore the database, so COPY ... DB n
 * is covered too), in two rounds of children:
 *
 * 1. reads, in parallel: the source's value and expiry on its shard and,
 *    for RENAMENX and for COPY without REPLACE, whether the target exists
 *    (in COPY's target database);
 * 2. the write: {PUT target (the value, the source's expiry), DEL source}
 *    for a rename, {PUT target} for a copy -- one engine write when both
 *    keys are on one shard, else one atomic write across the two shards
 *    (xwrite.h, a two-phase commit): a crash keeps both or neither.
 *
 * The source's read puts its value in a struct ren of its own (its
 * info), which becomes the parent's info: the write's mutations point
 * into it until the request completes. Origin, but for the children,
 * which run on their keys' shards.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <scree/scree_errors.h>

#include "net/args.h"
#include "net/cmd.h"
#include "net/server.h"
#include "net/xwrite.h"

enum ren_kind {
        REN_RENAME,
        REN_RENAMENX,
        REN_COPY,
};

/* The parent's info (heap, one block with the value). */
struct ren {
        enum ren_kind kind;
        bool replace;                   /* RENAME, COPY ... REPLACE: the target may exist */
        uint32_t dst_table;             /* the target's database's table */
        uint64_t expiry_ms;             /* the source's */
        uint32_t value_len;
        uint8_t value[];                /* the source's, once read */
};

/* ---- round 1: the reads, each on its key's shard ---- */

/* A read child's req->ival: before it runs, 1 when the value is wanted
 * (the source: a struct ren holding it becomes its info); after, 1 when
 * the key is live, 0 when not. */
static void read_then(struct net_req *req, int res)
{
        bool want = req->ival != 0;
        struct ren *v;

        if (res == -SCREE_ENOTFOUND) {
                req->ival = 0;
                return;
        }
        if (res < 0) {
                net_reply_engine_err(req, res);
                return;
        }
        req->ival = 1;
        if (!want)
                return;
        v = malloc(sizeof(*v) + req->u.g.value_len);
        if (!v) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        *v = (struct ren){ .expiry_ms = req->u.g.expiry_ms, .value_len = req->u.g.value_len };
        memcpy(v->value, req->u.g.value, req->u.g.value_len);
        req->info = v;
}

static int read_run(struct net_req *req)
{
        return net_req_get(req, req->argv[1].ptr, req->argv[1].len, read_then);
}

static const struct net_cmd_def def_read = { "rename", 2, NET_CMD_READONLY, 1, 1, 1, read_run,
                                             NULL };

/* ---- round 2: the write on one shard ---- */

/* The mutations of the write (into m[2]): the target's PUT first. Their
 * bytes are the parent's (argv, info). Returns how many. */
static uint32_t ren_mutations(const struct net_req *parent, struct eng_mutation *m)
{
        const struct ren *rn = parent->info;
        const struct net_arg *src = &parent->argv[1], *dst = &parent->argv[2];

        m[0] = (struct eng_mutation){ .kind = ENG_MUT_PUT, .table = rn->dst_table,
                                      .key = dst->ptr, .key_len = (uint32_t)dst->len,
                                      .value = rn->value, .value_len = rn->value_len,
                                      .expiry_ms = rn->expiry_ms };
        if (rn->kind == REN_COPY)
                return 1;
        m[1] = (struct eng_mutation){ .kind = ENG_MUT_DEL, .table = parent->table,
                                      .key = src->ptr, .key_len = (uint32_t)src->len };
        return 2;
}

static void write_then(struct net_req *req, int res)
{
        if (res < 0)
                net_reply_engine_err(req, res);
}

static int write_run(struct net_req *req)
{
        struct eng_mutation m[2];
        uint32_t n = ren_mutations(req->parent, m);

        return net_req_write(req, m, n, write_then);
}

static const struct net_cmd_def def_write = { "rename", 3, NET_CMD_WRITE, 0, 0, 0, write_run,
                                              NULL };

/* ---- on the origin ---- */

static void reply_ok(struct net_req *req)
{
        net_resp_add_simple(req->out, "OK", 2);
}

static void reply_one(struct net_req *req)
{
        net_resp_add_int(req->out, 1);
}

/* The reply of a write that happened: RENAME's +OK, else 1. */
static void (*done_reply(const struct ren *rn))(struct net_req *)
{
        return rn->kind == REN_RENAME ? reply_ok : reply_one;
}

static void write_gather(struct net_req *req)
{
        if (!net_child_error(req, req->children[0]))
                done_reply(req->info)(req);
}

/* The xwrite's release: the plan took over the info. */
static void ren_release(void *arg)
{
        free(arg);
}

/* Round 2: the write, on one shard or across two. Runs in round 1's
 * gather: the caller completes req once no round is under way. */
static void ren_write(struct net_req *req)
{
        struct ren *rn = req->info;
        const struct net_server *srv = req->origin->srv;
        const struct net_arg *src = &req->argv[1], *dst = &req->argv[2];
        unsigned own[2] = { net_server_owner(srv, dst->ptr, dst->len),
                            net_server_owner(srv, src->ptr, src->len) };
        struct eng_mutation m[2];
        struct net_req *c;
        uint32_t n;

        net_req_children_drop(req);
        n = ren_mutations(req, m);
        if (n == 2 && own[0] != own[1]) {
                req->info = NULL;       /* the write's plan takes it over */
                (void)net_xwrite(req, m, own, n, done_reply(rn), ren_release, rn);
                return;
        }
        req->children = calloc(1, sizeof(*req->children));
        c = req->children ? net_req_child(req, &def_write, req->argv, req->argc, (int)own[0])
                          : NULL;
        if (!c) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        req->children[0] = c;
        req->n_children = 1;
        (void)net_req_fan_out(req, write_gather);
}

/* Round 1 is back: children[0] read the source, children[1] (if any)
 * probed the target. */
static void read_gather(struct net_req *req)
{
        struct ren *rn = req->info, *v;
        struct net_req *s = req->children[0];

        for (uint32_t i = 0; i < req->n_children; i++)
                if (net_child_error(req, req->children[i]))
                        return;
        if (!s->ival) {
                if (rn->kind == REN_COPY)
                        net_resp_add_int(req->out, 0);
                else
                        net_resp_add_errorf(req->out, "ERR no such key");
                return;
        }
        if (rn->kind != REN_COPY && req->argv[1].len == req->argv[2].len &&
            memcmp(req->argv[1].ptr, req->argv[2].ptr, req->argv[1].len) == 0) {
                if (rn->kind == REN_RENAME)     /* a rename onto itself */
                        reply_ok(req);
                else
                        net_resp_add_int(req->out, 0);
                return;
        }
        if (req->n_children > 1 && req->children[1]->ival) {
                net_resp_add_int(req->out, 0);  /* the target exists */
                return;
        }
        /* The source's value, with the command's plan, becomes the info. */
        v = s->info;
        s->info = NULL;
        v->kind = rn->kind;
        v->replace = rn->replace;
        v->dst_table = rn->dst_table;
        free(rn);
        req->info = v;
        ren_write(req);
}

/* Starts round 1. Returns what a handler returns. */
static int ren_start(struct net_req *req, struct ren *rn)
{
        bool probe = !rn->replace;
        struct net_req *c;

        req->info = rn;
        req->children = calloc(2, sizeof(*req->children));
        if (!req->children)
                goto nomem;
        c = net_req_child(req, &def_read, req->argv, 2, -1);
        if (!c)
                goto nomem;
        c->ival = 1;
        req->children[req->n_children++] = c;
        if (probe) {
                c = net_req_child(req, &def_read, req->argv + 1, 2, -1);
                if (!c)
                        goto nomem;
                c->table = rn->dst_table;
                req->children[req->n_children++] = c;
        }
        return net_req_fan_out(req, read_gather);
nomem:
        net_resp_add_error(req->out, "ERR out of memory", 17);
        return NET_CMD_DONE;
}

static int rename_cmd(struct net_req *req, enum ren_kind kind)
{
        struct ren *rn = calloc(1, sizeof(*rn));

        if (!rn) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        *rn = (struct ren){ .kind = kind, .replace = kind == REN_RENAME, .dst_table = req->table };
        return ren_start(req, rn);
}

/* RENAME key newkey */
int net_cmd_rename(struct net_req *req)
{
        return rename_cmd(req, REN_RENAME);
}

/* RENAMENX key newkey */
int net_cmd_renamenx(struct net_req *req)
{
        return rename_cmd(req, REN_RENAMENX);
}

/* COPY source destination [DB destination-db] [REPLACE]: Redis's checks in
 * Redis's order. */
int net_cmd_copy(struct net_req *req)
{
        struct ren *rn;
        unsigned db = req->db;
        bool replace = false;

        for (size_t j = 3; j < req->argc; j++) {
                const struct net_arg *a = &req->argv[j];

                if (net_arg_is(a, "replace")) {
                        replace = true;
                } else if (net_arg_is(a, "db") && j + 1 < req->argc) {
                        if (net_db_arg(req, &req->argv[++j], &db) < 0)
                                return NET_CMD_DONE;
                } else {
                        net_resp_add_errorf(req->out, "ERR %s", NET_ERR_SYNTAX);
                        return NET_CMD_DONE;
                }
        }
        if (db == req->db && req->argv[1].len == req->argv[2].len &&
            memcmp(req->argv[1].ptr, req->argv[2].ptr, req->argv[1].len) == 0) {
                net_resp_add_errorf(req->out, "ERR source and destination objects are the same");
                return NET_CMD_DONE;
        }
        rn = calloc(1, sizeof(*rn));
        if (!rn) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        *rn = (struct ren){ .kind = REN_COPY, .replace = replace,
                            .dst_table = req->origin->db_table[db] };
        return ren_start(req, rn);
}
