/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Key commands: DEL, UNLINK, EXISTS (one key: on its shard; several: one
 * child per key, counts summed on the origin), EXPIRE and family with
 * NX/XX/GT/LT, TTL, PTTL, PERSIST, TYPE, and the whole-keyspace DBSIZE
 * and FLUSHALL/FLUSHDB (one child per shard, each walking its shard's
 * keys in chunks with eng_shard_scan, yielding to the loop between
 * chunks).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "net/cmd.h"
#include "net/server.h"
#include "reactor/loop.h"

#define SCAN_CHUNK 1024u
#define SCAN_STARTED (1u << 31)

/* ---- DEL, EXISTS ---- */

static void count_then(struct net_req *req, int res)
{
        if (res < 0 && res != -SCREE_ENOTFOUND) {
                net_reply_engine_err(req, res);
                return;
        }
        req->ival = res == 0 || res == 1 ? res : 0;
        net_resp_add_int(req->out, req->ival);
}

static int del_rmw(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        if (!cur)
                return 0;
        out->kind = ENG_MUT_DEL;
        return 1;
}

int net_cmd_del1(struct net_req *req)
{
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, del_rmw, count_then);
}

static void exists_then(struct net_req *req, int res)
{
        count_then(req, res == 0 ? 1 : res);
}

int net_cmd_exists1(struct net_req *req)
{
        return net_req_get(req, req->argv[1].ptr, req->argv[1].len, exists_then);
}

static void sum_gather(struct net_req *req)
{
        int64_t n = 0;

        for (uint32_t i = 0; i < req->n_children; i++) {
                if (net_child_error(req, req->children[i]))
                        return;
                n += req->children[i]->ival;
        }
        net_resp_add_int(req->out, n);
}

static int multi_key(struct net_req *req, const struct net_cmd_def *one)
{
        const struct net_arg *k = &req->argv[1];

        if (req->argc == 2 && net_server_owner(req->exec->srv, k->ptr, k->len) == req->exec->id)
                return one->fn(req);
        if (net_req_per_key(req, one, 1, 2) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        return net_req_fan_out(req, sum_gather);
}

int net_cmd_del(struct net_req *req)
{
        return multi_key(req, &net_cmd_def_del1);
}

int net_cmd_exists(struct net_req *req)
{
        return multi_key(req, &net_cmd_def_exists1);
}

/* ---- EXPIRE family, PERSIST ---- */

static int expire_rmw(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct net_req *req = arg;

        if (!cur || !net_expire_allowed(req->flags, cur->expiry_ms, req->expiry_ms))
                return 0;
        if (req->expiry_ms != 0 && req->expiry_ms <= net_now_ms()) {
                out->kind = ENG_MUT_DEL;
                return 1;
        }
        if (req->expiry_ms == 0 && cur->expiry_ms == 0)
                return 0;                       /* PERSIST on a key without expiry */
        if (net_req_keep(req, cur->value, cur->value_len) < 0)
                return -ENOMEM;
        out->kind = ENG_MUT_PUT;
        out->value = req->scratch;
        out->value_len = cur->value_len;
        out->expiry_ms = req->expiry_ms;
        return 1;
}

int net_cmd_expire(struct net_req *req)
{
        const char *name = req->def->name, *err;
        bool ms = name[0] == 'p', at = strstr(name, "at") != NULL;
        char buf[96];
        int64_t v;

        if (net_arg_i64(&req->argv[2], &v) < 0) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_NOT_INT);
                return NET_CMD_DONE;
        }
        err = net_expire_opts_parse(req->argv + 3, req->argc - 3, &req->flags, buf, sizeof(buf));
        if (!err && net_expiry_ms(v, ms ? 1 : 1000, at, net_now_ms(), &req->expiry_ms) < 0) {
                snprintf(buf, sizeof(buf), "invalid expire time in '%s' command", name);
                err = buf;
        }
        if (err) {
                net_resp_add_errorf(req->out, "ERR %s", err);
                return NET_CMD_DONE;
        }
        if (req->expiry_ms == 0)
                req->expiry_ms = 1;             /* at or before the epoch: already expired */
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, expire_rmw, net_then_int);
}

int net_cmd_persist(struct net_req *req)
{
        req->expiry_ms = 0;
        req->flags = 0;
        return net_req_rmw(req, req->argv[1].ptr, req->argv[1].len, expire_rmw, net_then_int);
}

/* ---- TTL, PTTL, TYPE ---- */

static void ttl_then(struct net_req *req, int res)
{
        bool ms = req->def->name[0] == 'p';
        uint64_t now = net_now_ms(), at = req->u.g.expiry_ms;
        int64_t left;

        if (res < 0 && res != -SCREE_ENOTFOUND) {
                net_reply_engine_err(req, res);
                return;
        }
        if (res != 0)
                left = -2;
        else if (at == 0)
                left = -1;
        else {
                left = at > now ? (int64_t)(at - now) : 0;
                if (!ms)
                        left = (left + 500) / 1000;
        }
        net_resp_add_int(req->out, left);
}

int net_cmd_ttl(struct net_req *req)
{
        return net_req_get(req, req->argv[1].ptr, req->argv[1].len, ttl_then);
}

static void type_then(struct net_req *req, int res)
{
        if (res < 0 && res != -SCREE_ENOTFOUND)
                net_reply_engine_err(req, res);
        else if (res == 0)
                net_resp_add_simple(req->out, "string", 6);
        else
                net_resp_add_simple(req->out, "none", 4);
}

int net_cmd_type(struct net_req *req)
{
        return net_req_get(req, req->argv[1].ptr, req->argv[1].len, type_then);
}

/* ---- whole-shard walks: DBSIZE, FLUSHALL ---- */

static int scan_chunk(struct net_req *req);

/* Ends the walk with r (0 or an error): the walk's continuation writes
 * the reply. */
static void scan_end(struct net_req *req, int r)
{
        eng_scan_release(&req->sc);
        req->then(req, r);
}

static void scan_task(struct rx_loop *loop, struct rx_task *t)
{
        struct net_req *req = container_of(t, struct net_req, task);

        if (scan_chunk(req) == NET_CMD_DONE)
                net_req_complete(req);
}

/* A walk over every database: the one after req->db, if any. */
static bool walk_next_db(struct net_req *req)
{
        if (!req->walk_dbs)
                return false;
        if (req->walk_db_done)
                req->walk_db_done(req);
        if (req->db + 1u >= NET_DBS)
                return false;
        req->db++;
        req->table = req->exec->db_table[req->db];
        eng_scan_release(&req->sc);
        req->flags &= ~SCAN_STARTED;
        req->ival = 0;
        req->expiry_ms = 0;
        return true;
}

/* After a write or a chunk: the next chunk from the loop, or the end. */
static int scan_go_on(struct net_req *req)
{
        if (!req->sc.more && !walk_next_db(req)) {
                scan_end(req, 0);
                return NET_CMD_DONE;
        }
        req->task = (struct rx_task){ .fn = scan_task, .name = "net:scan_chunk" };
        rx_loop_post(req->exec->loop, &req->task);
        return NET_CMD_PENDING;
}

static void flush_written(struct eng_write *w, int res)
{
        struct net_req *req = w->ctx;

        if (res < 0)
                scan_end(req, res);
        else if (scan_go_on(req) == NET_CMD_PENDING)
                return;
        net_req_complete(req);
}

/* Deletes the keys the chunk collected (len-prefixed in scratch). */
static int flush_chunk(struct net_req *req)
{
        size_t n = (size_t)req->ival, at = 0;
        struct eng_mutation *m = calloc(n ? n : 1, sizeof(*m));
        int r;

        if (!m)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                uint32_t len;

                memcpy(&len, req->scratch + at, 4);
                m[i] = (struct eng_mutation){ .kind = ENG_MUT_DEL, .table = req->table,
                                              .key = req->scratch + at + 4, .key_len = len };
                at += 4 + len;
        }
        memset(&req->u.w, 0, sizeof(req->u.w));
        req->u.w.done = flush_written;
        req->u.w.ctx = req;
        r = eng_shard_write(req->exec->eng, m, (uint32_t)n, &req->u.w);
        free(m);                        /* the write copied the keys */
        req->scratch_len = 0;
        req->ival = 0;
        return r;
}

static int scan_chunk_done(struct net_req *req, int r)
{
        if (r == 0 && (req->def == &net_cmd_def_shard_flush ||
                       req->def == &net_cmd_def_shard_flushall) && req->ival > 0) {
                r = flush_chunk(req);
                if (r == 0)
                        return NET_CMD_PENDING;         /* flush_written goes on */
                if (r == 1)
                        r = 0;
        }
        if (r < 0) {
                scan_end(req, r);
                return NET_CMD_DONE;
        }
        return scan_go_on(req);
}

static void scan_cb(struct eng_scan *sc, int res)
{
        struct net_req *req = sc->ctx;

        if (scan_chunk_done(req, res) == NET_CMD_DONE)
                net_req_complete(req);
}

static int scan_chunk(struct net_req *req)
{
        struct eng_scan *sc = &req->sc;
        bool resume = req->flags & SCAN_STARTED;
        int r;

        req->flags |= SCAN_STARTED;
        r = eng_shard_scan(req->exec->eng, req->table, resume ? sc->resume : NULL,
                           resume ? sc->resume_len : 0, NULL, 0, SCAN_CHUNK, sc);
        if (r == 1)
                return NET_CMD_PENDING;
        return scan_chunk_done(req, r);
}

int net_req_count_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct net_req *req = sc->ctx;

        req->ival++;
        if (it->expiry_ms)
                req->expiry_ms++;       /* INFO's expires= */
        return 0;
}

static int collect_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct net_req *req = sc->ctx;
        size_t need = req->scratch_len + 4 + it->key_len;

        if (need > req->scratch_cap) {
                size_t cap = need * 2;
                uint8_t *p = realloc(req->scratch, cap);

                if (!p)
                        return -ENOMEM;
                req->scratch = p;
                req->scratch_cap = cap;
        }
        memcpy(req->scratch + req->scratch_len, &it->key_len, 4);
        memcpy(req->scratch + req->scratch_len + 4, it->key, it->key_len);
        req->scratch_len = need;
        req->ival++;
        return 0;
}

int net_req_walk(struct net_req *req, int (*item)(struct eng_scan *, const struct eng_scan_item *),
                 bool skip_damaged, net_req_then_fn then)
{
        memset(&req->sc, 0, sizeof(req->sc));
        req->sc.skip_damaged = skip_damaged;
        req->sc.item = item;
        req->sc.done = scan_cb;
        req->sc.ctx = req;
        req->ival = 0;
        req->then = then;
        return scan_chunk(req);
}

int net_req_walk_dbs(struct net_req *req,
                     int (*item)(struct eng_scan *, const struct eng_scan_item *),
                     bool skip_damaged, void (*db_done)(struct net_req *req), net_req_then_fn then)
{
        req->walk_dbs = true;
        req->walk_db_done = db_done;
        req->db = 0;
        req->table = req->exec->db_table[0];
        req->flags &= ~SCAN_STARTED;
        req->expiry_ms = 0;
        return net_req_walk(req, item, skip_damaged, then);
}

static void flush_then(struct net_req *req, int res)
{
        if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_simple(req->out, "OK", 2);
}

int net_cmd_shard_count(struct net_req *req)
{
        req->expiry_ms = 0;
        return net_req_walk(req, net_req_count_item, true, net_then_int_ival);
}

/* FLUSHDB's part on one shard: the request's database. */
int net_cmd_shard_flush(struct net_req *req)
{
        /* Not past a damaged block: an OK must mean every key is gone. */
        return net_req_walk(req, collect_item, false, flush_then);
}

/* FLUSHALL's: every database, one after the other. */
int net_cmd_shard_flushall(struct net_req *req)
{
        return net_req_walk_dbs(req, collect_item, false, NULL, flush_then);
}

int net_cmd_dbsize(struct net_req *req)
{
        return net_req_each_shard(req, &net_cmd_def_shard_count, 0, sum_gather);
}

void net_then_int_ival(struct net_req *req, int res)
{
        if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_int(req->out, req->ival);
}

static void ok_gather(struct net_req *req)
{
        for (uint32_t i = 0; i < req->n_children; i++)
                if (net_child_error(req, req->children[i]))
                        return;
        net_resp_add_simple(req->out, "OK", 2);
}

/* FLUSHALL and FLUSHDB take an optional ASYNC or SYNC; both run as SYNC
 * (the reply follows the deletes). */
static bool flush_args_ok(struct net_req *req)
{
        if (req->argc > 2 || (req->argc == 2 && !net_arg_is(&req->argv[1], "sync") &&
                              !net_arg_is(&req->argv[1], "async"))) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_SYNTAX);
                return false;
        }
        return true;
}

int net_cmd_flushall(struct net_req *req)
{
        if (!flush_args_ok(req))
                return NET_CMD_DONE;
        return net_req_each_shard(req, &net_cmd_def_shard_flushall, 0, ok_gather);
}

int net_cmd_flushdb(struct net_req *req)
{
        if (!flush_args_ok(req))
                return NET_CMD_DONE;
        return net_req_each_shard(req, &net_cmd_def_shard_flush, 0, ok_gather);
}
