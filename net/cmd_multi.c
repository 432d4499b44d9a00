/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH (protocol:
 * docs/transactions.md).
 *
 * Dispatch time (on the connection, in pipeline order): MULTI starts
 * queuing; each later command is checked (unknown, arity, auth, key size,
 * not allowed in a transaction -- NET_CMD_NOMULTI, as SHUTDOWN: an error
 * reply that makes EXEC abort) and kept as an unstarted request, answered
 * +QUEUED. Every other command is allowed, as in Redis: keyed ones,
 * global ones (FLUSHALL, DBSIZE, KEYS, SCAN...: they lock every shard's
 * table, txn.h) and those of the server or the connection (CONFIG, INFO,
 * CLIENT...: they run on the connection's shard with req->conn set). A
 * queue is bounded by multi-max-commands and multi-max-bytes (the
 * requests' memory): the command past either gets an error, the queue is
 * dropped at once and EXEC aborts, as for any error while queuing. EXEC takes the queued
 * requests and the WATCHed keys into one request and starts it.
 *
 * EXEC (on the origin): locks the keys of every queued command (WRITE for
 * a writing command, READ otherwise; every shard's whole table for a
 * global command) and every watched key (READ) through one lock set
 * (txn.h); under the locks checks each watched key's version
 * (a changed one: a null array, nothing runs); then runs the commands as
 * its children, each on its key's shard, in windows of commands on
 * distinct keys (below: a command starts once every earlier one on its
 * keys ended, so it sees their writes), and replies with the array of
 * their replies. A command's runtime error is its own element; the
 * others still run. Each command takes its connection's database as it
 * starts, so a queued SELECT (it runs alone in its window) moves the
 * commands after it; a watched key is checked in the database WATCH ran in. In batch mode each write completes once durable, and
 * EXEC replies once all completed, so its reply follows the durability of
 * all its writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "net/cmd.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/txn.h"

#define WATCH_EXISTS 1u
#define WATCH_FAILED 2u

void net_watch_free(struct net_watch *w, uint32_t n)
{
        for (uint32_t i = 0; w && i < n; i++)
                free(w[i].key);
        free(w);
}

void net_multi_flag(struct net_conn *c)
{
        if (c->in_multi)
                c->multi_dirty = true;
}


static void multi_drop_queue(struct net_conn *c)
{
        while (c->mq_head) {
                struct net_req *q = c->mq_head;

                c->mq_head = q->next;
                net_req_free(q);
        }
        c->mq_tail = NULL;
        c->n_mq = 0;
        c->mq_bytes = 0;
}

static void multi_reset(struct net_conn *c)
{
        multi_drop_queue(c);
        c->in_multi = c->multi_dirty = false;
        net_watch_free(c->watch, c->n_watch);
        c->watch = NULL;
        c->n_watch = c->cap_watch = 0;
}

/* What queuing argv costs: the request (net_req_new) and its arguments. */
static size_t queued_bytes(const struct net_arg *argv, size_t argc)
{
        size_t n = sizeof(struct net_req) + argc * sizeof(*argv);

        for (size_t i = 0; i < argc; i++)
                n += argv[i].len;
        return n;
}

/* Refuses the command (and drops the queue) past the transaction's
 * bounds. Returns true when refused. */
static bool multi_over(struct net_conn *c, size_t bytes)
{
        const struct scree_config *cfg = &c->sh->cfg;
        struct net_resp_out *o;
        struct net_req *r;
        bool many = c->n_mq >= cfg->multi_max_commands;

        if (!many && c->mq_bytes + bytes <= cfg->multi_max_bytes)
                return false;
        c->multi_dirty = true;
        multi_drop_queue(c);            /* EXEC will abort: free it now */
        o = net_conn_reply_slot(c, &r);
        if (!o)
                return true;
        if (many)
                net_resp_add_errorf(o, "ERR MULTI queue too long (max %llu commands)",
                                    (unsigned long long)cfg->multi_max_commands);
        else
                net_resp_add_errorf(o, "ERR MULTI queue too big (max %llu bytes)",
                                    (unsigned long long)cfg->multi_max_bytes);
        net_conn_reply_end(c, r);
        return true;
}

static void multi_queue(struct net_conn *c, const struct net_cmd_def *d, const struct net_arg *argv,
                        size_t argc)
{
        size_t bytes = queued_bytes(argv, argc);
        struct net_req *q;

        if (d->flags & NET_CMD_NOMULTI) {       /* Redis's words: the suite matches them */
                c->multi_dirty = true;
                net_conn_reply_text(c, "-ERR Command not allowed inside a transaction");
                return;
        }
        if (d->fn == net_cmd_debug && !net_debug_allowed(c)) {
                c->multi_dirty = true;          /* refused as it is queued, as Redis does */
                net_cmd_debug_refuse(c);
                return;
        }
        if (c->multi_dirty) {
                net_conn_reply_text(c, "QUEUED");      /* EXEC will abort: nothing to keep */
                return;
        }
        if (multi_over(c, bytes))
                return;
        q = net_req_new(c->sh, d, argv, argc, c->proto);
        if (!q) {
                c->multi_dirty = true;
                net_conn_reply_text(c, "-ERR out of memory");
                return;
        }
        if (c->mq_tail)
                c->mq_tail->next = q;
        else
                c->mq_head = q;
        c->mq_tail = q;
        c->n_mq++;
        c->mq_bytes += bytes;
        net_conn_reply_text(c, "QUEUED");
}

/* EXEC at dispatch: the request takes the queue and the watches. */
static void multi_exec(struct net_conn *c, const struct net_cmd_def *d, const struct net_arg *argv)
{
        struct net_req *req = net_req_new(c->sh, d, argv, 1, c->proto);
        uint32_t i = 0;

        if (req && c->n_mq && !(req->children = calloc(c->n_mq, sizeof(*req->children)))) {
                net_req_free(req);
                req = NULL;
        }
        if (!req) {
                multi_reset(c);
                net_conn_reply_text(c, "-ERR out of memory");
                return;
        }
        for (struct net_req *q = c->mq_head, *next; q; q = next) {
                next = q->next;
                q->next = NULL;
                q->conn = c;            /* CLIENT, HELLO...: runs here, c outlives EXEC */
                q->parent = req;
                q->out = &q->own;
                req->children[i++] = q;
        }
        req->n_children = i;
        c->mq_head = c->mq_tail = NULL;
        req->watch = c->watch;
        req->n_watch = c->n_watch;
        c->watch = NULL;
        multi_reset(c);
        net_conn_start(c, req);
}

/* MULTI, DISCARD, UNWATCH, EXEC, WATCH: true when handled here. */
static bool txn_dispatch(struct net_conn *c, const struct net_cmd_def *d, const struct net_arg *argv)
{
        const char *n = d->name;

        if (strcmp(n, "multi") == 0) {
                if (c->in_multi) {
                        net_conn_reply_text(c, "-ERR MULTI calls can not be nested");
                        return true;
                }
                c->in_multi = true;
                net_conn_reply_text(c, "OK");
        } else if (strcmp(n, "discard") == 0) {
                if (!c->in_multi) {
                        net_conn_reply_text(c, "-ERR DISCARD without MULTI");
                        return true;
                }
                multi_reset(c);
                net_conn_reply_text(c, "OK");
        } else if (strcmp(n, "exec") == 0) {
                if (!c->in_multi) {
                        net_conn_reply_text(c, "-ERR EXEC without MULTI");
                } else if (c->multi_dirty) {
                        multi_reset(c);
                        net_conn_reply_text(c, "-EXECABORT Transaction discarded because of previous errors.");
                } else {
                        multi_exec(c, d, argv);
                }
        } else if (strcmp(n, "watch") == 0) {
                if (!c->in_multi)
                        return false;   /* a request: reads the versions */
                net_conn_reply_text(c, "-ERR WATCH inside MULTI is not allowed");
        } else {                        /* unwatch: queued inside MULTI (a no-op then) */
                if (c->in_multi)
                        return false;
                net_watch_free(c->watch, c->n_watch);
                c->watch = NULL;
                c->n_watch = c->cap_watch = 0;
                net_conn_reply_text(c, "OK");
        }
        return true;
}

bool net_multi_dispatch(struct net_conn *c, const struct net_cmd_def *d, const struct net_arg *argv,
                        size_t argc)
{
        if (d->flags & NET_CMD_TXN) {
                if (txn_dispatch(c, d, argv))
                        return true;
                if (!c->in_multi)
                        return false;
        }
        if (!c->in_multi || strcmp(d->name, "quit") == 0)
                return false;
        multi_queue(c, d, argv, argc);
        return true;
}

/* UNWATCH queued in a transaction (MULTI and DISCARD never run). */
int net_cmd_multi(struct net_req *req)
{
        net_resp_add_simple(req->out, "OK", 2);
        return NET_CMD_DONE;
}

/* ---- WATCH ---- */

static void watch1_then(struct net_req *req, int res)
{
        req->ival = res == 0 ? (int64_t)req->u.g.seq : 0;
        req->flags = res == 0 ? WATCH_EXISTS : res == -SCREE_ENOTFOUND ? 0 : WATCH_FAILED;
        if (res < 0 && res != -SCREE_ENOTFOUND)
                net_reply_engine_err(req, res);
        else
                net_resp_add_simple(req->out, "OK", 2);
}

int net_cmd_watch1(struct net_req *req)
{
        return net_req_get(req, req->argv[1].ptr, req->argv[1].len, watch1_then);
}

static int watch_add(struct net_conn *c, uint8_t db, const struct net_arg *k,
                     const struct net_req *child)
{
        struct net_watch *w;

        if (c->n_watch == c->cap_watch) {
                uint32_t cap = c->cap_watch ? c->cap_watch * 2 : 8;

                w = realloc(c->watch, cap * sizeof(*w));
                if (!w)
                        return -ENOMEM;
                c->watch = w;
                c->cap_watch = cap;
        }
        w = &c->watch[c->n_watch];
        w->key = malloc(k->len ? k->len : 1);
        if (!w->key)
                return -ENOMEM;
        if (k->len)
                memcpy(w->key, k->ptr, k->len);
        w->len = (uint32_t)k->len;
        w->db = db;
        w->exists = child->flags & WATCH_EXISTS;
        w->seq = (uint64_t)child->ival;
        c->n_watch++;
        return 0;
}

static void watch_gather(struct net_req *req)
{
        for (uint32_t i = 0; i < req->n_children; i++)
                if (net_child_error(req, req->children[i]))
                        return;
        for (uint32_t i = 0; i < req->n_children; i++) {
                if (watch_add(req->conn, req->db, &req->argv[i + 1], req->children[i]) < 0) {
                        net_resp_add_error(req->out, "ERR out of memory", 17);
                        return;
                }
        }
        net_resp_add_simple(req->out, "OK", 2);
}

/* Runs under READ locks on its keys: the versions read are consistent. */
int net_cmd_watch(struct net_req *req)
{
        if (net_req_per_key(req, &net_cmd_def_watch1, 1, 2) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        return net_req_fan_out(req, watch_gather);
}

/* ---- EXEC ---- */

static uint32_t exec_n_cmds(const struct net_req *req)
{
        return req->n_children - (req->scratch ? req->n_watch : 0);     /* watch children last */
}

static void exec_reply(struct net_req *req)
{
        uint32_t n = exec_n_cmds(req);

        net_resp_add_array(req->out, n);
        for (uint32_t i = 0; i < n; i++)
                net_out_move(req->out, &req->children[i]->own);
}

/*
 * EXEC runs its commands in windows: a window is a run of consecutive
 * commands with no key in common (at most EXEC_WINDOW_CMDS of them); all
 * of a window's commands start at once -- on their shards, in parallel,
 * as a pipeline's do -- and the next window starts once all are back. So
 * a command still starts only after every earlier command on any of its
 * keys completed (it sees their effects, whatever the engine does with a
 * pending write), while N SETs of distinct keys share group commits and
 * cross-shard hops instead of paying one sync and one hop each (100 000
 * of them took 130 s, one at a time). Commands on different keys are
 * independent: nobody else sees the keys until EXEC releases its locks.
 * A key seen twice cuts the window, so N commands on one key still run
 * one at a time. A command without keys runs alone: a global one
 * (FLUSHALL, DBSIZE...) touches every key, and one of the server (CONFIG
 * SET...) may change how the next ones run.
 */
#define EXEC_WINDOW_CMDS 1024u
#define EXEC_WINDOW_MAX_SLOTS 8192u     /* a window holds at most half of them */

struct exec_slot {
        uint64_t fp;
        uint32_t gen;                   /* valid if equal to the window's gen */
};

/* The keys of the window being started: an open-addressing set of key
 * fingerprints (net_intent_fp; a collision only cuts a window early),
 * emptied by bumping gen. In req->info. */
struct exec_window {
        uint32_t gen, n_keys, n_cmds, mask;
        struct exec_slot slot[];
};

static size_t cmd_n_keys(const struct net_req *c)
{
        const struct net_cmd_def *d = c->def;
        size_t last;

        if (d->first_key <= 0 || (size_t)d->first_key >= c->argc)
                return 0;
        last = d->last_key < 0 ? c->argc - 1 : (size_t)d->last_key;
        if (last >= c->argc)
                last = c->argc - 1;
        return (last - (size_t)d->first_key) / (size_t)d->step + 1;
}

/* A table for the transaction's keys (power of two, twice the keys, up to
 * the maximum), or NULL on ENOMEM (the commands then run one at a time). */
static struct exec_window *window_new(const struct net_req *req, uint32_t n)
{
        size_t keys = 0, slots = 16;
        struct exec_window *w;

        for (uint32_t i = 0; i < n && keys < EXEC_WINDOW_MAX_SLOTS; i++)
                keys += cmd_n_keys(req->children[i]);
        while (slots < 2 * keys && slots < EXEC_WINDOW_MAX_SLOTS)
                slots *= 2;
        w = calloc(1, sizeof(*w) + slots * sizeof(w->slot[0]));
        if (w)
                w->mask = (uint32_t)slots - 1;
        return w;
}

static void window_reset(struct exec_window *w)
{
        if (!w)
                return;
        w->gen++;
        w->n_keys = w->n_cmds = 0;
}

/* Finds fp in the window: true if there; else *ret_slot is where it goes. */
static bool window_find(const struct exec_window *w, uint64_t fp, uint32_t *ret_slot)
{
        uint32_t i = (uint32_t)fp & w->mask;

        while (w->slot[i].gen == w->gen) {
                if (w->slot[i].fp == fp)
                        return true;
                i = (i + 1) & w->mask;
        }
        *ret_slot = i;
        return false;
}

/* Whether command c may join the window (and adds its keys if so): no
 * key of an earlier command of the window, and room. The first command of
 * a window always joins. */
static bool window_take(struct exec_window *w, const struct net_req *c)
{
        const struct net_cmd_def *d = c->def;
        size_t nk = cmd_n_keys(c), step;
        uint32_t slot;

        if (!w)
                return true;            /* sequential: one command per window */
        if (w->n_cmds && (w->n_cmds >= EXEC_WINDOW_CMDS || w->n_keys + nk > (w->mask + 1) / 2 ||
                          nk == 0))
                return false;
        if (nk == 0) {
                w->n_cmds = EXEC_WINDOW_CMDS;   /* keyless: alone in its window */
                return true;
        }
        step = (size_t)d->step;
        for (size_t i = 0, a = (size_t)d->first_key; w->n_cmds && i < nk; i++, a += step)
                if (window_find(w, net_intent_fp(c->argv[a].ptr, c->argv[a].len), &slot))
                        return false;
        w->n_cmds++;
        if (w->n_keys + nk > (w->mask + 1) / 2) {
                w->n_cmds = EXEC_WINDOW_CMDS;   /* too many keys to note: alone */
                return true;
        }
        for (size_t i = 0, a = (size_t)d->first_key; i < nk; i++, a += step) {
                uint64_t fp = net_intent_fp(c->argv[a].ptr, c->argv[a].len);

                if (window_find(w, fp, &slot))
                        continue;       /* its own key twice (MSET k a k b) */
                w->slot[slot] = (struct exec_slot){ .fp = fp, .gen = w->gen };
                w->n_keys++;
        }
        return true;
}

/* Starts the next window of commands; the gather of each window. Leaves
 * children_left > 0 while a window is under way (exec_next goes on), 0
 * once the reply is written. */
static void exec_next(struct net_req *req)
{
        uint32_t n = exec_n_cmds(req);
        struct exec_window *w = req->info;

        req->gather = exec_next;
        while (req->next_cmd < n) {
                window_reset(w);
                req->children_left = 1; /* one extra: commands done at once */
                while (req->next_cmd < n && window_take(w, req->children[req->next_cmd])) {
                        struct net_req *c = req->children[req->next_cmd++];

                        /* The connection's database now: a SELECT queued
                         * before c ran already (keyless: alone in its window). */
                        net_req_use_db(c, c->conn->db);
                        c->locked = true;
                        req->children_left++;
                        net_req_start(c);
                        if (!w)
                                break;  /* no table: one at a time */
                }
                if (--req->children_left > 0)
                        return;
        }
        req->children_left = 0;
        exec_reply(req);
}

static void exec_watched(struct net_req *req)
{
        uint32_t n = exec_n_cmds(req);

        for (uint32_t i = 0; i < req->n_watch; i++) {
                const struct net_req *c = req->children[n + i];
                const struct net_watch *w = &req->watch[i];

                if (c->flags & WATCH_FAILED) {
                        net_out_move(req->out, &req->children[n + i]->own);
                        return;
                }
                if (w->exists != (bool)(c->flags & WATCH_EXISTS) ||
                    (w->exists && w->seq != (uint64_t)c->ival)) {
                        net_resp_add_null_array(req->out);
                        return;
                }
        }
        exec_next(req);
}

/* Adds one child per watched key after the commands; their argv lives
 * in req->scratch. 0 or -ENOMEM. */
static int exec_watch_children(struct net_req *req)
{
        uint32_t n = req->n_children, nw = req->n_watch;
        struct net_req **ch = realloc(req->children, (n + nw) * sizeof(*ch));
        struct net_arg *av = calloc(2 * (size_t)nw, sizeof(*av));

        if (ch)
                req->children = ch;
        if (!ch || !av) {
                free(av);
                return -ENOMEM;
        }
        req->scratch = (uint8_t *)av;
        for (uint32_t i = 0; i < nw; i++) {
                av[2 * i + 1] = (struct net_arg){ req->watch[i].key, req->watch[i].len };
                ch[n + i] = net_req_child(req, &net_cmd_def_watch1, &av[2 * i], 2, -1);
                if (!ch[n + i])
                        return -ENOMEM;
                /* By index: after a SWAPDB the key's database is the
                 * other table, whose version then differs (Redis: touched). */
                net_req_use_db(ch[n + i], req->watch[i].db);
                req->n_children++;
        }
        return 0;
}

/* Under the locks: the watched versions, then the commands. */
static int exec_locked(struct net_req *req)
{
        uint32_t n = req->n_children;

        req->info = window_new(req, n);

        if (req->n_watch == 0) {
                exec_next(req);
                return req->children_left ? NET_CMD_PENDING : NET_CMD_DONE;
        }
        if (exec_watch_children(req) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        req->gather = exec_watched;
        req->children_left = req->n_watch + 1;
        for (uint32_t i = 0; i < req->n_watch; i++)
                net_req_start(req->children[n + i]);
        if (--req->children_left > 0)
                return NET_CMD_PENDING;
        exec_watched(req);
        return req->children_left ? NET_CMD_PENDING : NET_CMD_DONE;
}

int net_cmd_exec(struct net_req *req)
{
        const struct net_server *srv = req->origin->srv;
        struct net_lock_key *keys = NULL;
        size_t n = 0, cap = 0;
        int r = 0;

        for (uint32_t i = 0; i < req->n_children && r == 0; i++) {
                const struct net_req *c = req->children[i];

                r = net_lock_keys_add(&keys, &n, &cap, srv, c->def, c->argv, c->argc, false);
        }
        for (uint32_t i = 0; i < req->n_watch && r == 0; i++) {
                struct net_arg av[2] = { { "watch", 5 }, { req->watch[i].key, req->watch[i].len } };

                r = net_lock_keys_add(&keys, &n, &cap, srv, &net_cmd_def_watch1, av, 2, true);
        }
        if (r < 0) {
                free(keys);
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        r = net_req_lock_run(req, keys, n, exec_locked);
        free(keys);
        return r;
}
