/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command table and the request's life (see cmd.h): where it runs,
 * the trip to another shard and back, the end that reaches the
 * connection or the parent, and the engine calls with continuations that
 * every handler builds on.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/compiler.h"
#include "base/time.h"
#include "net/cmd.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/txn.h"

#define W NET_CMD_WRITE
#define R NET_CMD_READONLY
#define NA NET_CMD_NOAUTH
#define LD NET_CMD_LOADING
#define LC NET_CMD_LOCAL
#define NE NET_CMD_NOENGINE
#define TX NET_CMD_TXN
#define NM NET_CMD_NOMULTI
#define BR NET_CMD_BARRIER
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const config_sub[] = { "get", "set", "resetstat", NULL };
static const char *const client_sub[] = { "setname", "getname", "id", "setinfo", "list", "info",
                                          "kill", "reply", "no-evict", NULL };
static const char *const slowlog_sub[] = { "get", "len", "reset", NULL };
static const char *const command_sub[] = { "count", "docs", "info", NULL };
static const char *const latency_sub[] = { "latest", "history", "reset", "doctor", "histogram",
                                           "help", NULL };
static const char *const memory_sub[] = { "usage", "stats", "doctor", "malloc-stats", "purge",
                                          "help", NULL };
static const char *const object_sub[] = { "encoding", "freq", "idletime", "refcount", "help",
                                          NULL };

/* Sorted by nothing: looked up linearly (small, and hot entries first). */
static const struct net_cmd_def table[] = {
        { "get", 2, R, 1, 1, 1, net_cmd_get, NULL },
        { "set", -3, W, 1, 1, 1, net_cmd_set, NULL },
        { "ping", -1, LC | NE, 0, 0, 0, net_cmd_ping, NULL },
        { "mget", -2, R | LC, 1, -1, 1, net_cmd_mget, NULL },
        { "mset", -3, W | LC, 1, -1, 2, net_cmd_mset, NULL },
        { "msetnx", -3, W | LC, 1, -1, 2, net_cmd_msetnx, NULL },
        { "del", -2, W | LC, 1, -1, 1, net_cmd_del, NULL },
        { "unlink", -2, W | LC, 1, -1, 1, net_cmd_del, NULL },
        { "exists", -2, R | LC, 1, -1, 1, net_cmd_exists, NULL },
        { "incr", 2, W, 1, 1, 1, net_cmd_incr, NULL },
        { "decr", 2, W, 1, 1, 1, net_cmd_incr, NULL },
        { "incrby", 3, W, 1, 1, 1, net_cmd_incr, NULL },
        { "decrby", 3, W, 1, 1, 1, net_cmd_incr, NULL },
        { "setnx", 3, W, 1, 1, 1, net_cmd_setnx, NULL },
        { "setex", 4, W, 1, 1, 1, net_cmd_setex, NULL },
        { "psetex", 4, W, 1, 1, 1, net_cmd_setex, NULL },
        { "getset", 3, W, 1, 1, 1, net_cmd_getset, NULL },
        { "getdel", 2, W, 1, 1, 1, net_cmd_getdel, NULL },
        { "append", 3, W, 1, 1, 1, net_cmd_append, NULL },
        { "strlen", 2, R, 1, 1, 1, net_cmd_strlen, NULL },
        { "expire", -3, W, 1, 1, 1, net_cmd_expire, NULL },
        { "pexpire", -3, W, 1, 1, 1, net_cmd_expire, NULL },
        { "expireat", -3, W, 1, 1, 1, net_cmd_expire, NULL },
        { "pexpireat", -3, W, 1, 1, 1, net_cmd_expire, NULL },
        { "ttl", 2, R, 1, 1, 1, net_cmd_ttl, NULL },
        { "pttl", 2, R, 1, 1, 1, net_cmd_ttl, NULL },
        { "persist", 2, W, 1, 1, 1, net_cmd_persist, NULL },
        { "type", 2, R, 1, 1, 1, net_cmd_type, NULL },
        { "dbsize", 1, R | LC, 0, 0, 0, net_cmd_dbsize, NULL },
        { "flushall", -1, W | LC, 0, 0, 0, net_cmd_flushall, NULL },
        { "flushdb", -1, W | LC, 0, 0, 0, net_cmd_flushdb, NULL },
        { "move", 3, W | LC, 1, 1, 1, net_cmd_move, NULL },
        { "swapdb", 3, W | LC, 0, 0, 0, net_cmd_swapdb, NULL },
        { "rename", 3, W | LC, 1, 2, 1, net_cmd_rename, NULL },
        { "renamenx", 3, W | LC, 1, 2, 1, net_cmd_renamenx, NULL },
        { "copy", -3, W | LC, 1, 2, 1, net_cmd_copy, NULL },
        { "getrange", 4, R, 1, 1, 1, net_cmd_getrange, NULL },
        { "substr", 4, R, 1, 1, 1, net_cmd_getrange, NULL },
        { "setrange", 4, W, 1, 1, 1, net_cmd_setrange, NULL },
        { "getex", -2, W, 1, 1, 1, net_cmd_getex, NULL },
        { "incrbyfloat", 3, W, 1, 1, 1, net_cmd_incrbyfloat, NULL },
        { "scan", -2, R | LC, 0, 0, 0, net_cmd_scan, NULL },
        { "keys", 2, R | LC, 0, 0, 0, net_cmd_keys, NULL },
        { "randomkey", 1, R | LC, 0, 0, 0, net_cmd_randomkey, NULL },
        { "echo", 2, LC | NE, 0, 0, 0, net_cmd_echo, NULL },
        { "quit", -1, NA | LD | LC | NE, 0, 0, 0, net_cmd_quit, NULL },
        { "hello", -1, NA | LD | LC | NE, 0, 0, 0, net_cmd_hello, NULL },
        { "auth", -2, NA | LD | LC | NE, 0, 0, 0, net_cmd_auth, NULL },
        { "select", 2, LD | LC | NE, 0, 0, 0, net_cmd_select, NULL },
        { "command", -1, LD | LC | NE, 0, 0, 0, net_cmd_command, command_sub },
        { "client", -2, LD | LC | NE, 0, 0, 0, net_cmd_client, client_sub },
        { "config", -2, LD | LC | NE | BR, 0, 0, 0, net_cmd_config, config_sub },
        { "time", 1, LD | LC | NE, 0, 0, 0, net_cmd_time, NULL },
        { "info", -1, LD | LC | NE, 0, 0, 0, net_cmd_info, NULL },
        { "slowlog", -2, LD | LC | NE, 0, 0, 0, net_cmd_slowlog, slowlog_sub },
        { "shutdown", -1, LD | LC | NE | NM, 0, 0, 0, net_cmd_shutdown, NULL },
        { "save", 1, LC | NM, 0, 0, 0, net_cmd_save, NULL },
        { "bgsave", -1, LC, 0, 0, 0, net_cmd_bgsave, NULL },
        { "lastsave", 1, LD | LC | NE, 0, 0, 0, net_cmd_lastsave, NULL },
        { "multi", 1, LD | LC | NE | TX, 0, 0, 0, net_cmd_multi, NULL },
        { "exec", 1, LC | TX, 0, 0, 0, net_cmd_exec, NULL },
        { "discard", 1, LD | LC | NE | TX, 0, 0, 0, net_cmd_multi, NULL },
        { "watch", -2, R | LC | TX, 1, -1, 1, net_cmd_watch, NULL },
        { "unwatch", 1, LD | LC | NE | TX, 0, 0, 0, net_cmd_multi, NULL },
        { "latency", -2, LD | LC | NE, 0, 0, 0, net_cmd_latency, latency_sub },
        { "debug", -2, LD | LC | NE | BR, 0, 0, 0, net_cmd_debug, NULL },
        /* The key is argv[2] (MEMORY USAGE key, OBJECT ENCODING key): they
         * run on its shard; without one (MEMORY STATS), on the origin. */
        { "memory", -2, R, 2, 2, 1, net_cmd_memory, memory_sub },
        { "object", -2, R, 2, 2, 1, net_cmd_object, object_sub },
        /* Tables (docs/tables.md): on the origin, which sends the work to
         * the shards owning the rows; not inside MULTI (ROW.WRITE is the
         * atomic write of several rows). */
        { "row.get", -3, R | LC | NM, 0, 0, 0, net_cmd_row_get, NULL },
        { "row.put", -4, W | LC | NM, 0, 0, 0, net_cmd_row_put, NULL },
        { "row.del", -3, W | LC | NM, 0, 0, 0, net_cmd_row_del, NULL },
        { "row.write", -4, W | LC | NM, 0, 0, 0, net_cmd_row_write, NULL },
        { "row.range", -2, R | LC | NM, 0, 0, 0, net_cmd_row_range, NULL },
        { "row.count", -2, R | LC | NM, 0, 0, 0, net_cmd_row_count, NULL },
        { "row.delrange", -2, W | LC | NM, 0, 0, 0, net_cmd_row_delrange, NULL },
        { "dir.create", 2, W | LC | NM, 0, 0, 0, net_cmd_dir_create, NULL },
        { "dir.drop", 2, W | LC | NM, 0, 0, 0, net_cmd_dir_drop, NULL },
        { "dir.list", -1, R | LC | NM, 0, 0, 0, net_cmd_dir_list, NULL },
        { "table.create", -4, W | LC | NM, 0, 0, 0, net_cmd_table_create, NULL },
        { "table.drop", 2, W | LC | NM, 0, 0, 0, net_cmd_table_drop, NULL },
        { "table.alter", -4, W | LC | NM, 0, 0, 0, net_cmd_table_alter, NULL },
        { "table.list", -1, R | LC | NM, 0, 0, 0, net_cmd_table_list, NULL },
        { "table.describe", 2, R | LC | NM, 0, 0, 0, net_cmd_table_describe, NULL },
        { "tablet.split", -3, W | LC | NM, 0, 0, 0, net_cmd_tablet_split, NULL },
        { "tablet.merge", 3, W | LC | NM, 0, 0, 0, net_cmd_tablet_merge, NULL },
        { "tablet.move", 4, W | LC | NM, 0, 0, 0, net_cmd_tablet_move, NULL },
        { "balancer", 2, LC | NM, 0, 0, 0, net_cmd_balancer, NULL },
};

/* Internal per-key and per-shard steps of the fan-out commands. */
const struct net_cmd_def net_cmd_def_get = { "get", 2, R, 1, 1, 1, net_cmd_get, NULL };
const struct net_cmd_def net_cmd_def_set = { "set", -3, W, 1, 1, 1, net_cmd_set, NULL };
const struct net_cmd_def net_cmd_def_del1 = { "del", 2, W, 1, 1, 1, net_cmd_del1, NULL };
const struct net_cmd_def net_cmd_def_exists1 = { "exists", 2, R, 1, 1, 1, net_cmd_exists1, NULL };
const struct net_cmd_def net_cmd_def_watch1 = { "watch", 2, R, 1, 1, 1, net_cmd_watch1, NULL };
const struct net_cmd_def net_cmd_def_shard_count = { "dbsize", 1, R, 0, 0, 0, net_cmd_shard_count,
                                                     NULL };
const struct net_cmd_def net_cmd_def_shard_flush = { "flushdb", 1, W, 0, 0, 0, net_cmd_shard_flush,
                                                     NULL };
const struct net_cmd_def net_cmd_def_shard_flushall = { "flushall", 1, W, 0, 0, 0,
                                                        net_cmd_shard_flushall, NULL };
const struct net_cmd_def net_cmd_def_shard_info = { "info", 1, LD, 0, 0, 0, net_cmd_shard_info,
                                                    NULL };

const struct net_cmd_def *net_cmd_find(const struct net_arg *a)
{
        for (size_t i = 0; i < ARRAY_SIZE(table); i++)
                if (net_arg_is(a, table[i].name))
                        return &table[i];
        return NULL;
}

const struct net_cmd_def *net_cmd_table(size_t *ret_n)
{
        *ret_n = ARRAY_SIZE(table);
        return table;
}

/* The slots of the subcommands of table[0..k). */
static size_t sub_slots_before(size_t k)
{
        size_t n = 0;

        for (size_t i = 0; i < k; i++)
                for (const char *const *sc = table[i].subcmds; sc && *sc; sc++)
                        n++;
        return n;
}

size_t net_cmd_stat_slots(void)
{
        return ARRAY_SIZE(table) + sub_slots_before(ARRAY_SIZE(table));
}

size_t net_cmd_stat_slot(const struct net_cmd_def *def, const struct net_arg *argv, size_t argc)
{
        size_t k = (size_t)(def - table);

        if (def < table || k >= ARRAY_SIZE(table))
                return SIZE_MAX;
        if (likely(!def->subcmds) || argc < 2)
                return k;
        /* Admin commands only: a walk over the table is fine here. */
        for (size_t j = 0; def->subcmds[j]; j++)
                if (net_arg_is(&argv[1], def->subcmds[j]))
                        return ARRAY_SIZE(table) + sub_slots_before(k) + j;
        return k;
}

const char *net_cmd_stat_name(size_t i, char *buf, size_t len)
{
        size_t at = ARRAY_SIZE(table);

        if (i < ARRAY_SIZE(table)) {
                snprintf(buf, len, "%s", table[i].name);
                return buf;
        }
        for (size_t k = 0; k < ARRAY_SIZE(table); k++)
                for (const char *const *sc = table[k].subcmds; sc && *sc; sc++)
                        if (at++ == i) {
                                snprintf(buf, len, "%s|%s", table[k].name, *sc);
                                return buf;
                        }
        snprintf(buf, len, "?");
        return buf;
}

void net_reply_lines(struct net_req *req, const char *const *lines, size_t n)
{
        net_resp_add_array(req->out, n);
        for (size_t i = 0; i < n; i++)
                net_resp_add_simple(req->out, lines[i], strlen(lines[i]));
}

uint64_t net_now_ms(void)
{
        return time_wall_ns() / NS_PER_MS;
}

/* ---- the request's life ---- */

static int req_msg_run(struct rx_loop *dst, struct rx_msg *m);
static void req_msg_done(struct rx_loop *src, struct rx_msg *m);

static struct net_req *req_alloc(struct net_shard *sh, const struct net_cmd_def *def, size_t extra,
                                 uint8_t proto)
{
        struct net_req *req = malloc(sizeof(*req) + extra);

        if (!req)
                return NULL;
        /* The engine-call union is left as is: each call clears its member
         * (half of the request's 1.2 KiB, zeroed per command before). */
        memset(req, 0, offsetof(struct net_req, u));
        req->origin = sh;
        req->def = def;
        req->target = -1;
        req->proto = proto;
        req->msg = (struct rx_msg){ .run = req_msg_run, .done = req_msg_done, .name = "net:cmd" };
        net_resp_out_init(&req->own, 256);
        net_resp_out_set_proto(&req->own, proto);
        net_resp_out_set_errstats(&req->own, &sh->errstats);
        return req;
}

struct net_req *net_req_new(struct net_shard *sh, const struct net_cmd_def *def,
                            const struct net_arg *argv, size_t argc, uint8_t proto)
{
        size_t bytes = argc * sizeof(struct net_arg);
        struct net_req *req;
        char *p;

        for (size_t i = 0; i < argc; i++)
                bytes += argv[i].len;
        req = req_alloc(sh, def, bytes, proto);
        if (!req)
                return NULL;
        req->argc = argc;
        req->argv = (struct net_arg *)(req + 1);
        p = (char *)(req->argv + argc);
        for (size_t i = 0; i < argc; i++) {
                if (argv[i].len)
                        memcpy(p, argv[i].ptr, argv[i].len);
                req->argv[i] = (struct net_arg){ .ptr = p, .len = argv[i].len };
                p += argv[i].len;
        }
        return req;
}

struct net_req *net_req_child(struct net_req *parent, const struct net_cmd_def *def,
                              struct net_arg *argv, size_t argc, int target)
{
        struct net_req *c = req_alloc(parent->origin, def, 0, parent->proto);

        if (!c)
                return NULL;
        c->parent = parent;
        c->argv = argv;
        c->argc = argc;
        c->target = target;
        c->out = &c->own;
        c->locked = parent->locked;     /* the parent's lock set covers its keys */
        c->db = parent->db;
        c->table = parent->table;
        return c;
}

void net_req_use_db(struct net_req *req, unsigned db)
{
        SCREE_ASSERT(db < NET_DBS);
        req->db = (uint8_t)db;
        req->table = req->origin->db_table[db];
}

void net_req_children_drop(struct net_req *req)
{
        for (uint32_t i = 0; i < req->n_children; i++)
                net_req_free(req->children[i]);
        free(req->children);
        req->children = NULL;
        req->n_children = 0;
}

void net_req_free(struct net_req *req)
{
        if (!req)
                return;
        net_req_children_drop(req);
        free(req->info);
        free(req->scratch);
        net_watch_free(req->watch, req->n_watch);
        net_resp_out_fini(&req->own);
        free(req);
}

unsigned net_req_shard(const struct net_req *req)
{
        const struct net_cmd_def *d = req->def;

        if (req->target >= 0)
                return (unsigned)req->target;
        if (!d || (d->flags & NET_CMD_LOCAL) || d->first_key <= 0 ||
            (size_t)d->first_key >= req->argc)
                return req->origin->id;
        return net_server_owner(req->origin->srv, req->argv[d->first_key].ptr,
                                req->argv[d->first_key].len);
}

static int req_run(struct net_req *req)
{
        const struct net_cmd_def *d = req->def;

        /* As Redis: while loading only the commands flagged for it run
         * (INFO, HELLO, AUTH, CONFIG...); PING and ECHO answer -LOADING, so
         * a readiness probe (`redis-cli ping`) means ready. */
        if (!(d->flags & NET_CMD_LOADING) && net_shard_is_loading(req->exec)) {
                net_resp_add_error(req->out, "LOADING Redis is loading the dataset in memory", 46);
                req->rejected = true;
                return NET_CMD_DONE;
        }
        return net_req_run_isolated(req);
}

/* A tablet moving between shards refuses its keys for the few
 * milliseconds of its last flush (engine/shard_move.h): a child refused
 * tries again this often, this many times (10 s), then reports it. */
#define REROUTE_PAUSE_NS (1000 * 1000)
#define REROUTE_TRIES 10000u

static void reroute_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct net_req *req = container_of(t, struct net_req, reroute);

        (void)loop;
        net_req_start(req);
}

/* Runs child req again where its key's tablet is now (see net_req.moved). */
static void req_reroute(struct net_req *req)
{
        unsigned to = (unsigned)req->moved_to;

        req->moved = false;
        net_resp_out_fini(&req->own);
        net_resp_out_init(&req->own, 256);
        net_resp_out_set_proto(&req->own, req->proto);
        net_resp_out_set_errstats(&req->own, &req->origin->errstats);
        req->out = &req->own;
        if (++req->reroutes > REROUTE_TRIES) {
                net_resp_add_errorf(req->out, "TRYAGAIN the key's tablet has been moving between "
                                    "shards for %u s", REROUTE_TRIES / 1000);
                req->moved_to = -1;
                return;
        }
        req->target = (int)to;
        if (req->exec && to == req->exec->id) {
                /* Still that shard's (moving away, or routing by an older
                 * catalog than the origin's): once its install lands. */
                rx_timer_init(&req->reroute, reroute_fire, "net:reroute");
                rx_timer_arm_after(req->origin->loop, &req->reroute, REROUTE_PAUSE_NS);
        } else {
                net_req_start(req);
        }
}

/* The end of req, on the origin: to its parent or its connection. */
static void req_finished(struct net_req *req)
{
        struct net_req *p = req->parent;

        if (req->moved) {
                req_reroute(req);
                if (req->moved_to >= 0)
                        return;         /* runs again */
        }
        req->done = true;
        if (!p) {
                net_conn_req_done(req->conn, req);
                return;
        }
        if (--p->children_left == 0) {
                p->gather(p);
                if (p->children_left == 0)
                        net_req_complete(p);
        }
}

void net_req_start(struct net_req *req)
{
        unsigned to = net_req_shard(req);

        if (to == req->origin->id) {
                req->exec = req->origin;
                if (req_run(req) == NET_CMD_DONE)
                        req_finished(req);
                return;
        }
        SCREE_ASSERT(req->out == &req->own);
        req->remote = true;
        rx_smp_submit(req->origin->loop, to, &req->msg);
}

static int req_msg_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct net_req *req = container_of(m, struct net_req, msg);

        req->exec = net_shard_of(dst);
        /* Errors written here are counted here (INFO errorstats). */
        net_resp_out_set_errstats(&req->own, &req->exec->errstats);
        if (req_run(req) == NET_CMD_PENDING)
                return RX_MSG_DEFERRED;
        free(req->scratch);
        req->scratch = NULL;
        return 0;
}

static void req_msg_done(struct rx_loop *src, struct rx_msg *m)
{
        struct net_req *req = container_of(m, struct net_req, msg);

        net_resp_out_set_errstats(&req->own, &req->origin->errstats);
        req_finished(req);
}

void net_req_complete(struct net_req *req)
{
        if (net_req_unlock(req))
                return;                 /* called again once released */
        free(req->scratch);             /* on the shard that allocated it */
        req->scratch = NULL;
        if (req->remote)
                rx_smp_reply(req->exec->loop, &req->msg);
        else
                req_finished(req);
}

int net_req_fan_out(struct net_req *parent, void (*gather)(struct net_req *parent))
{
        uint32_t n = parent->n_children;

        /* One extra count so that children finishing at once cannot end
         * the parent before every child has started. */
        parent->children_left = n + 1;
        parent->gather = gather;
        for (uint32_t i = 0; i < n; i++)
                net_req_start(parent->children[i]);
        if (--parent->children_left > 0)
                return NET_CMD_PENDING;
        gather(parent);
        /* A gather may start another round of children (MSETNX). */
        return parent->children_left ? NET_CMD_PENDING : NET_CMD_DONE;
}

int net_req_one_child(struct net_req *req, const struct net_cmd_def *def, unsigned shard,
                      void *info, void (*gather)(struct net_req *req))
{
        struct net_req *c;

        net_req_children_drop(req);
        req->children = calloc(1, sizeof(*req->children));
        c = req->children ? net_req_child(req, def, req->argv, req->argc, (int)shard) : NULL;
        if (!c) {
                free(info);
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        c->table = req->table;
        c->info = info;
        req->children[0] = c;
        req->n_children = 1;
        return net_req_fan_out(req, gather);
}


int net_req_each_shard(struct net_req *parent, const struct net_cmd_def *def, size_t info_bytes,
                       void (*gather)(struct net_req *parent))
{
        unsigned n = parent->origin->srv->n_shards;

        parent->children = calloc(n, sizeof(*parent->children));
        if (!parent->children) {
                net_resp_add_error(parent->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        for (unsigned i = 0; i < n; i++) {
                struct net_req *c = net_req_child(parent, def, parent->argv, parent->argc, (int)i);

                if (c && info_bytes && !(c->info = calloc(1, info_bytes))) {
                        net_req_free(c);
                        c = NULL;
                }
                parent->children[i] = c;
                if (!c) {
                        net_resp_add_error(parent->out, "ERR out of memory", 17);
                        return NET_CMD_DONE;
                }
                parent->n_children++;
        }
        return net_req_fan_out(parent, gather);
}

/* ---- engine calls with continuations ---- */

/* -RATELIMIT naming the limit req's table went over: its write limit for
 * a write command, else its read limit, as the shard running req has it. */
static void reply_rate_limited(struct net_req *req)
{
        bool write = req->def && (req->def->flags & NET_CMD_WRITE);
        const char *kind = write ? "write" : "read";
        const struct eng_catalog_table *t = NULL;
        uint32_t limit = 0;

        if (eng_catalog_table_by_id(eng_shard_catalog(req->exec->eng), req->table, &t) == 0)
                limit = write ? t->options.partition_writes_per_sec
                              : t->options.partition_reads_per_sec;
        if (limit)
                net_resp_add_errorf(req->out, "RATELIMIT per-partition %s limit of %u/s exceeded "
                                    "for %s", kind, limit, t->path);
        else            /* changed meanwhile */
                net_resp_add_errorf(req->out, "RATELIMIT per-partition %s limit exceeded", kind);
}

void net_reply_engine_err(struct net_req *req, int err)
{
        const struct eng_sst_damage *d = req->damage;
        char path[512];

        if (!d && req->sc.damaged)
                d = &req->sc.damage;
        if (req->err) {
                net_resp_add_errorf(req->out, "ERR %s", req->err);
        } else if (err == -SCREE_ECORRUPT && d) {
                eng_shard_sst_path(req->exec->eng, d->file_id, path, sizeof(path));
                net_resp_add_errorf(req->out,
                                    "ERR engine: corrupt data in %s data block at offset %llu "
                                    "(%u bytes: %s)", path, (unsigned long long)d->offset,
                                    d->size, d->what);
        } else if (err == -ENOSPC) {    /* Redis's prefix for "fix the server's disk" */
                net_resp_add_errorf(req->out, "MISCONF disk full: no space left on the device of the "
                                    "data directory; writes are refused until space is freed, then "
                                    "resume by themselves");
        } else if (err == -SCREE_ERATELIMIT) {
                reply_rate_limited(req);
        } else {
                net_resp_add_errorf(req->out, "ERR engine: %s", scree_strerror(err));
        }
}

void net_then_int(struct net_req *req, int res)
{
        if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_int(req->out, res);
}

/* INFO's keyspace_hits / keyspace_misses, on the shard that read. */
static void count_read(struct net_req *req, int res)
{
        if (res == 0)
                req->exec->keyspace_hits++;
        else if (res == -SCREE_ENOTFOUND)
                req->exec->keyspace_misses++;
}

/* Notes the key of req's engine call, for net_req_moved. */
static void req_key(struct net_req *req, uint32_t tbl, const void *key, size_t len)
{
        req->mtable = tbl;
        req->mkey = key;
        req->mkey_len = len;
}

bool net_req_moved(struct net_req *req, int res)
{
        const struct eng_catalog_table *t;
        uint32_t i = 0;

        if (res != -SCREE_EMOVED || !req->parent || !req->mkey || req->no_reroute ||
            eng_catalog_table_by_id(eng_shard_catalog(req->exec->eng), req->mtable, &t) < 0)
                return false;
        (void)eng_catalog_route_key(t, req->mkey, req->mkey_len, &i);
        req->moved = true;
        req->moved_to = (int)t->tablets[i].shard;
        return true;
}

static void get_cb(struct eng_get *g, int res)
{
        struct net_req *req = g->ctx;

        count_read(req, res);
        if (res == -SCREE_ECORRUPT)
                req->damage = &g->damage;
        if (!net_req_moved(req, res))
                req->then(req, res);
        if (res == 0)
                eng_get_release(g);
        net_req_complete(req);
}

int net_req_get(struct net_req *req, const void *key, size_t len, net_req_then_fn then)
{
        int r;

        req->then = then;
        memset(&req->u.g, 0, sizeof(req->u.g));
        req->u.g.done = get_cb;
        req->u.g.ctx = req;
        req_key(req, req->table, key, len);
        r = eng_shard_get(req->exec->eng, req->table, key, (uint32_t)len, &req->u.g);
        if (r == 1)
                return NET_CMD_PENDING;
        count_read(req, r);
        if (r == -SCREE_ECORRUPT)
                req->damage = &req->u.g.damage;
        if (net_req_moved(req, r))
                return NET_CMD_DONE;
        then(req, r);
        if (r == 0)
                eng_get_release(&req->u.g);
        return NET_CMD_DONE;
}

static void write_cb(struct eng_write *w, int res)
{
        struct net_req *req = w->ctx;

        if (!net_req_moved(req, res))
                req->then(req, res);
        net_req_complete(req);
}

int net_req_write(struct net_req *req, const struct eng_mutation *m, uint32_t n,
                  net_req_then_fn then)
{
        int r;

        req->then = then;
        memset(&req->u.w, 0, sizeof(req->u.w));
        req->u.w.done = write_cb;
        req->u.w.ctx = req;
        req_key(req, m[0].table, m[0].key, m[0].key_len);
        r = eng_shard_write(req->exec->eng, m, n, &req->u.w);
        if (r == 0)
                return NET_CMD_PENDING;
        if (net_req_moved(req, r))
                return NET_CMD_DONE;
        then(req, r == 1 ? 0 : r);
        return NET_CMD_DONE;
}

static void rmw_cb(struct eng_rmw *rw, int res)
{
        struct net_req *req = rw->ctx;

        if (res == -SCREE_ECORRUPT)
                req->damage = &rw->g.damage;    /* its read's (shard.h) */
        if (!net_req_moved(req, res))
                req->then(req, res);
        net_req_complete(req);
}

int net_req_rmw(struct net_req *req, const void *key, size_t len, eng_rmw_fn fn,
                net_req_then_fn then)
{
        int r;

        req->then = then;
        memset(&req->u.rmw, 0, sizeof(req->u.rmw));
        req->u.rmw.done = rmw_cb;
        req->u.rmw.ctx = req;
        req_key(req, req->table, key, len);
        r = eng_shard_rmw(req->exec->eng, req->table, key, (uint32_t)len, fn, req,
                          &req->u.rmw);
        if (r == 0)
                return NET_CMD_PENDING;
        if (net_req_moved(req, r))
                return NET_CMD_DONE;
        then(req, r);
        return NET_CMD_DONE;
}

int net_req_keep_old(struct net_req *req, const struct eng_get *cur)
{
        if (!cur)
                return 0;
        if (net_req_keep(req, cur->value, cur->value_len) < 0)
                return -ENOMEM;
        req->have_old = true;
        return 1;
}

int net_req_keep(struct net_req *req, const void *p, size_t n)
{
        uint8_t *s = malloc(n ? n : 1);

        if (!s)
                return -ENOMEM;
        if (n)
                memcpy(s, p, n);
        free(req->scratch);
        req->scratch = s;
        req->scratch_len = n;
        return 0;
}

void net_out_move(struct net_resp_out *dst, struct net_resp_out *src)
{
        struct iovec iov[16];
        size_t bytes;
        int n;

        while ((n = net_resp_out_iov(src, iov, 16, &bytes)) > 0) {
                for (int i = 0; i < n; i++)
                        net_resp_add_raw(dst, iov[i].iov_base, iov[i].iov_len);
                net_resp_out_consume(src, bytes);
        }
}

bool net_child_error(struct net_req *req, struct net_req *child)
{
        struct iovec iov[1];

        if (net_resp_out_iov(&child->own, iov, 1, NULL) < 1 ||
            ((const char *)iov[0].iov_base)[0] != '-')
                return false;
        net_out_move(req->out, &child->own);
        net_resp_out_note_error(req->out);      /* counted in errorstats where written */
        return true;
}

int net_req_per_key(struct net_req *req, const struct net_cmd_def *def, size_t step, size_t argc)
{
        size_t n = (req->argc - 1) / step;

        req->children = calloc(n, sizeof(*req->children));
        if (!req->children)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct net_req *c = net_req_child(req, def, &req->argv[i * step], argc, -1);

                if (!c)
                        return -ENOMEM;
                req->children[req->n_children++] = c;
        }
        return 0;
}
