/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connection and server commands: PING, ECHO, QUIT, HELLO, AUTH, SELECT,
 * COMMAND, CLIENT, CONFIG, TIME. All run on the connection's shard
 * (NET_CMD_LOCAL) and never touch the engine; AUTH, HELLO and CONFIG read
 * the shard's own copy of the settings, and CONFIG SET changes every
 * shard's copy through messages. INFO is in cmd_info.c.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/compiler.h"
#include "base/log.h"
#include "base/time.h"
#include "net/cmd.h"
#include "net/config.h"
#include "net/conn.h"
#include "net/glob.h"
#include "net/server.h"
#include "reactor/smp.h"

#define REDIS_COMPAT_VERSION "7.0.0"

static const char E_WRONGPASS[] = "WRONGPASS invalid username-password pair or user is disabled.";

int net_cmd_ping(struct net_req *req)
{
        if (req->argc > 2)
                net_resp_add_errorf(req->out, "ERR wrong number of arguments for 'ping' command");
        else if (req->argc == 2)
                net_resp_add_bulk(req->out, req->argv[1].ptr, req->argv[1].len);
        else
                net_resp_add_simple(req->out, "PONG", 4);
        return NET_CMD_DONE;
}

int net_cmd_echo(struct net_req *req)
{
        net_resp_add_bulk(req->out, req->argv[1].ptr, req->argv[1].len);
        return NET_CMD_DONE;
}

int net_cmd_quit(struct net_req *req)
{
        net_resp_add_simple(req->out, "OK", 2);
        net_conn_close_after_reply(req->conn);
        return NET_CMD_DONE;
}

/* SELECT runs on the connection's shard as it is dispatched (LOCAL), so
 * the commands parsed after it take the new database; inside MULTI it
 * runs in its turn within EXEC (a barrier), and each later queued command
 * takes the connection's database as it starts (cmd_multi.c). */
int net_cmd_select(struct net_req *req)
{
        int64_t db;

        if (net_arg_i64(&req->argv[1], &db) < 0) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_NOT_INT);
        } else if (db < 0 || db >= (int64_t)NET_DBS) {
                net_resp_add_errorf(req->out, "ERR DB index is out of range");
        } else {
                if (req->conn)
                        req->conn->db = (uint8_t)db;
                net_resp_add_simple(req->out, "OK", 2);
        }
        return NET_CMD_DONE;
}

int net_cmd_time(struct net_req *req)
{
        uint64_t ns = time_wall_ns();
        char s[24], us[24];
        size_t ls = net_fmt_i64(s, (int64_t)(ns / NS_PER_SEC));
        size_t lu = net_fmt_i64(us, (int64_t)(ns % NS_PER_SEC / NS_PER_US));

        net_resp_add_array(req->out, 2);
        net_resp_add_bulk(req->out, s, ls);
        net_resp_add_bulk(req->out, us, lu);
        return NET_CMD_DONE;
}

/* ---- AUTH, HELLO ---- */

/* Checks (user, pass) against requirepass: 0, or -EPERM. user may be NULL. */
static int check_pass(const struct scree_config *cfg, const struct net_arg *user,
                      const struct net_arg *pass)
{
        const char *want = cfg->requirepass;

        if (user && !net_arg_is(user, "default"))
                return -EPERM;
        /* No password set: the default user takes any password. */
        return !want[0] || (strlen(want) == pass->len && !memcmp(want, pass->ptr, pass->len)) ? 0
                                                                                           : -EPERM;
}

static void conn_authed(struct net_conn *c)
{
        c->authed = true;
        net_resp_parser_set_authenticated(&c->parser, true);
}

int net_cmd_auth(struct net_req *req)
{
        const struct scree_config *cfg = &req->exec->cfg;
        bool with_user = req->argc == 3;

        if (req->argc > 3) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_SYNTAX);
        } else if (!with_user && !cfg->requirepass[0]) {
                net_resp_add_errorf(req->out, "ERR AUTH <password> called without any password "
                                              "configured for the default user. Are you sure "
                                              "your configuration is correct?");
        } else if (check_pass(cfg, with_user ? &req->argv[1] : NULL,
                              &req->argv[req->argc - 1]) < 0) {
                net_resp_add_errorf(req->out, "%s", E_WRONGPASS);
        } else {
                conn_authed(req->conn);
                net_resp_add_simple(req->out, "OK", 2);
        }
        return NET_CMD_DONE;
}

static bool name_ok(const struct net_arg *a)
{
        for (size_t i = 0; i < a->len; i++)
                if (a->ptr[i] < '!' || a->ptr[i] > '~')
                        return false;
        return true;
}

static int set_name(struct net_conn *c, const struct net_arg *a)
{
        char *n = NULL;

        if (a->len) {
                n = strndup(a->ptr, a->len);
                if (!n)
                        return -ENOMEM;
        }
        free(c->name);
        c->name = n;
        return 0;
}

static void hello_reply(struct net_req *req)
{
        struct net_resp_out *o = req->out;

        net_resp_add_map(o, 7);
        net_resp_add_bulk(o, "server", 6);
        net_resp_add_bulk(o, "redis", 5);
        net_resp_add_bulk(o, "version", 7);
        net_resp_add_bulk(o, REDIS_COMPAT_VERSION, strlen(REDIS_COMPAT_VERSION));
        net_resp_add_bulk(o, "proto", 5);
        net_resp_add_int(o, req->conn->proto);
        net_resp_add_bulk(o, "id", 2);
        net_resp_add_int(o, (int64_t)req->conn->id);
        net_resp_add_bulk(o, "mode", 4);
        net_resp_add_bulk(o, "standalone", 10);
        net_resp_add_bulk(o, "role", 4);
        net_resp_add_bulk(o, "master", 6);
        net_resp_add_bulk(o, "modules", 7);
        net_resp_add_array(o, 0);
}

/* HELLO's options after the version: AUTH user pass, SETNAME name. Returns
 * the error text or NULL; *ret_auth / *ret_name point at their arguments. */
static const char *hello_opts(struct net_req *req, const struct net_arg **ret_auth,
                              const struct net_arg **ret_name, char *buf, size_t len)
{
        for (size_t i = 2; i < req->argc; i++) {
                const struct net_arg *a = &req->argv[i];
                size_t left = req->argc - i - 1;

                if (net_arg_is(a, "auth") && left >= 2) {
                        *ret_auth = &req->argv[i + 1];
                        i += 2;
                } else if (net_arg_is(a, "setname") && left >= 1) {
                        *ret_name = &req->argv[++i];
                } else {
                        snprintf(buf, len, "Syntax error in HELLO option '%.*s'",
                                 (int)(a->len > 64 ? 64 : a->len), a->ptr);
                        return buf;
                }
        }
        return NULL;
}

int net_cmd_hello(struct net_req *req)
{
        const struct net_arg *auth = NULL, *name = NULL;
        struct net_conn *c = req->conn;
        int64_t ver = c->proto;
        const char *err;
        char buf[128];

        if (req->argc >= 2 && net_arg_i64(&req->argv[1], &ver) < 0) {
                net_resp_add_errorf(req->out, "ERR Protocol version is not an integer or out of range");
                return NET_CMD_DONE;
        }
        if (ver < 2 || ver > 3) {
                net_resp_add_errorf(req->out, "NOPROTO unsupported protocol version");
                return NET_CMD_DONE;
        }
        err = hello_opts(req, &auth, &name, buf, sizeof(buf));
        if (err) {
                net_resp_add_errorf(req->out, "ERR %s", err);
                return NET_CMD_DONE;
        }
        if (auth && check_pass(&req->exec->cfg, &auth[0], &auth[1]) < 0) {
                net_resp_add_errorf(req->out, "%s", E_WRONGPASS);
                return NET_CMD_DONE;
        }
        if (auth)
                conn_authed(c);
        if (!c->authed) {
                net_resp_add_errorf(req->out, "NOAUTH HELLO must be called with the client already "
                                              "authenticated, otherwise the HELLO <proto> AUTH "
                                              "<user> <pass> option can be used to authenticate "
                                              "the client and select the RESP protocol version "
                                              "at the same time");
                return NET_CMD_DONE;
        }
        if (name && !name_ok(name)) {
                net_resp_add_errorf(req->out, "ERR Client names cannot contain spaces, newlines "
                                              "or special characters.");
                return NET_CMD_DONE;
        }
        if (name && set_name(c, name) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        net_conn_set_proto(c, (uint8_t)ver);
        net_resp_out_set_proto(req->out, (enum net_resp_proto)ver);
        hello_reply(req);
        return NET_CMD_DONE;
}

/* ---- CLIENT ---- */

static int client_setinfo(struct net_req *req)
{
        const struct net_arg *attr = &req->argv[2], *v = &req->argv[3];
        char **slot;
        char *copy;

        if (net_arg_is(attr, "lib-name"))
                slot = &req->conn->lib_name;
        else if (net_arg_is(attr, "lib-ver"))
                slot = &req->conn->lib_ver;
        else {
                net_resp_add_errorf(req->out, "ERR Unrecognized option '%.*s'",
                                    (int)(attr->len > 64 ? 64 : attr->len), attr->ptr);
                return NET_CMD_DONE;
        }
        if (!name_ok(v)) {
                net_resp_add_errorf(req->out, "ERR %.*s cannot contain spaces, newlines or special "
                                              "characters.", (int)attr->len, attr->ptr);
                return NET_CMD_DONE;
        }
        copy = strndup(v->ptr, v->len);
        if (!copy) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        free(*slot);
        *slot = copy;
        net_resp_add_simple(req->out, "OK", 2);
        return NET_CMD_DONE;
}

int net_cmd_client(struct net_req *req)
{
        const struct net_arg *sub = &req->argv[1];
        struct net_conn *c = req->conn;
        size_t n = req->argc;

        if (net_arg_is(sub, "list") || net_arg_is(sub, "info") || net_arg_is(sub, "kill") ||
            net_arg_is(sub, "no-evict"))
                return net_cmd_client_intro(req);
        if (net_arg_is(sub, "id") && n == 2) {
                net_resp_add_int(req->out, (int64_t)c->id);
        } else if (net_arg_is(sub, "getname") && n == 2) {
                if (c->name)
                        net_resp_add_bulk(req->out, c->name, strlen(c->name));
                else
                        net_resp_add_null(req->out);
        } else if (net_arg_is(sub, "setname") && n == 3) {
                if (!name_ok(&req->argv[2]))
                        net_resp_add_errorf(req->out, "ERR Client names cannot contain spaces, "
                                                      "newlines or special characters.");
                else if (set_name(c, &req->argv[2]) < 0)
                        net_resp_add_error(req->out, "ERR out of memory", 17);
                else
                        net_resp_add_simple(req->out, "OK", 2);
        } else if (net_arg_is(sub, "setinfo") && n == 4) {
                return client_setinfo(req);
        } else if (net_arg_is(sub, "id") || net_arg_is(sub, "getname") ||
                   net_arg_is(sub, "setname") || net_arg_is(sub, "setinfo")) {
                net_resp_add_errorf(req->out, "ERR wrong number of arguments for 'client|%.*s' "
                                              "command", (int)sub->len, sub->ptr);
        } else {
                net_resp_add_errorf(req->out, "ERR unknown subcommand '%.*s'. Try CLIENT HELP.",
                                    (int)(sub->len > 64 ? 64 : sub->len), sub->ptr);
        }
        return NET_CMD_DONE;
}

/* ---- CONFIG ---- */

static bool is_pattern(const struct net_arg *a)
{
        for (size_t i = 0; i < a->len; i++)
                if (strchr("*?[\\", a->ptr[i]))
                        return true;
        return false;
}

/* CONFIG GET pattern...: every setting some pattern matches, once each.
 * A pattern without wildcards is a name, which also finds the hidden
 * settings (as in Redis). */
static void config_get(struct net_req *req)
{
        const struct scree_config *cfg = &req->exec->cfg;
        bool hit[CFG_MAX_SETTINGS] = { false };
        const char *name;
        uint64_t n = 0;
        char val[CFG_VALUE_MAX];

        for (size_t i = 0; (name = cfg_name(i)) && i < CFG_MAX_SETTINGS; i++) {
                size_t len = strlen(name);

                for (size_t a = 2; a < req->argc && !hit[i]; a++) {
                        const struct net_arg *p = &req->argv[a];

                        if (is_pattern(p))
                                hit[i] = !cfg_is_hidden(i) &&
                                         net_glob_match(p->ptr, p->len, name, len, true);
                        else
                                hit[i] = p->len == len && !strncasecmp(p->ptr, name, len);
                }
                n += hit[i];
        }
        net_resp_add_map(req->out, n);
        for (size_t i = 0; (name = cfg_name(i)) && i < CFG_MAX_SETTINGS; i++) {
                if (!hit[i])
                        continue;
                if (cfg_get(cfg, name, val, sizeof(val)) < 0)
                        val[0] = 0;
                net_resp_add_bulk(req->out, name, strlen(name));
                net_resp_add_bulk(req->out, val, strlen(val));
        }
}

/*
 * CONFIG SET is atomic, as in Redis 7: either every pair takes effect on
 * every shard, or none does anywhere.
 *   1. Here, on the calling shard: every name is looked up and none may
 *      name a setting twice (aliases and case included); then every pair
 *      is applied, in order, to a scratch copy of this shard's settings.
 *      The first failure is the reply, and nothing changed.
 *   2. Prepare, on every shard (one rx_msg each, embedded here, so no
 *      send can fail): the shard makes its own copy with the pairs
 *      applied. Only memory can fail now.
 *   3. Commit (or abort, if a shard failed to prepare), on every shard:
 *      the prepared values are swapped in (cfg_swap, which cannot fail)
 *      and the copy freed. The reply waits for all, so a later command
 *      on any connection sees the change.
 * CONFIG SETs run one at a time over the server (srv->cfg_txn_busy; one
 * that finds another running waits in a task re-posted each loop turn --
 * a cold path, and the other ends within a few message round trips), and
 * step 1 replaces each pair's value with the setting's whole resulting
 * text (a value that merges into the current one, as
 * client-output-buffer-limit's classes, merged once, here): so every
 * shard applies the same text, each CONFIG SET starts from what the one
 * before it left everywhere, and a pipelined command after it sees it
 * (CONFIG is a barrier, cmd.h). The version each takes (an atomic
 * counter) keeps a shard from taking an older value should two overlap.
 */
struct cfg_txn;

struct cfg_txn_msg {
        struct rx_msg m;
        struct cfg_txn *t;
        struct scree_config stage;      /* made and freed on the target shard */
        int res;                        /* prepare's: 0, or -errno */
};

struct cfg_txn {
        struct net_req *req;
        uint64_t ver;
        size_t n;                       /* pairs */
        char **names, **vals;           /* [n] */
        int *idx;                       /* [n]: cfg_index of each name */
        unsigned n_shards, pending;
        int failed;                     /* a shard could not prepare (its error): abort */
        bool sets_log_level;
        struct cfg_txn_msg msgs[];      /* [n_shards] */
};

static void txn_free(struct cfg_txn *t)
{
        for (size_t i = 0; t && i < t->n; i++) {
                free(t->names[i]);
                free(t->vals[i]);
        }
        if (t) {
                free(t->names);
                free(t->vals);
                free(t->idx);
        }
        free(t);
}

static struct cfg_txn *txn_new(struct net_req *req, unsigned n_shards)
{
        size_t n = (req->argc - 2) / 2;
        struct cfg_txn *t = calloc(1, sizeof(*t) + n_shards * sizeof(t->msgs[0]));

        if (!t)
                return NULL;
        t->req = req;
        t->n_shards = n_shards;
        t->names = calloc(n, sizeof(*t->names));
        t->vals = calloc(n, sizeof(*t->vals));
        t->idx = calloc(n, sizeof(*t->idx));
        if (!t->names || !t->vals || !t->idx)
                goto fail;
        for (; t->n < n; t->n++) {
                const struct net_arg *k = &req->argv[2 + 2 * t->n], *v = k + 1;

                t->names[t->n] = strndup(k->ptr, k->len);
                t->vals[t->n] = strndup(v->ptr, v->len);
                if (!t->names[t->n] || !t->vals[t->n]) {
                        t->n++;
                        goto fail;
                }
                t->idx[t->n] = cfg_index(t->names[t->n]);
        }
        return t;
fail:
        txn_free(t);
        return NULL;
}

/* Replaces pair i's value by its setting's whole text in tmp (the pairs
 * applied), which cfg_set takes back as the same value; a text as long as
 * CONFIG GET's buffer (a long string) stays as given: a string is set as
 * it is. 0 or -ENOMEM. */
static int txn_final_value(struct cfg_txn *t, size_t i, const struct scree_config *tmp)
{
        char buf[CFG_VALUE_MAX];
        char *v;

        if (cfg_get(tmp, t->names[i], buf, sizeof(buf)) < 0 || strlen(buf) + 1 >= sizeof(buf))
                return 0;
        v = strdup(buf);
        if (!v)
                return -ENOMEM;
        free(t->vals[i]);
        t->vals[i] = v;
        return 0;
}

/* Step 1. Returns the error reply to send (heap), or NULL: all valid. */
static char *txn_check(struct cfg_txn *t, const struct scree_config *cur)
{
        struct scree_config tmp;
        char err[512], *reply = NULL;
        int r = 0;

        for (size_t i = 0; i < t->n; i++) {
                if (t->idx[i] < 0) {
                        r = asprintf(&reply, "ERR Unknown option or number of arguments for "
                                     "CONFIG SET - '%s'", t->names[i]);
                        return r < 0 ? strdup("ERR out of memory") : reply;
                }
                for (size_t j = 0; j < i; j++) {
                        if (t->idx[j] == t->idx[i]) {
                                r = asprintf(&reply, "ERR CONFIG SET failed (possibly related to "
                                             "argument '%s') - duplicate parameter", t->names[i]);
                                return r < 0 ? strdup("ERR out of memory") : reply;
                        }
                }
        }
        if (cfg_copy(&tmp, cur) < 0)
                return strdup("ERR out of memory");
        for (size_t i = 0; i < t->n && r == 0; i++) {
                r = cfg_set(&tmp, t->names[i], t->vals[i], true, err, sizeof(err));
                if (r < 0 && asprintf(&reply, "ERR CONFIG SET failed (possibly related to argument "
                                      "'%s') - %s", t->names[i],
                                      r == -ENOMEM ? "out of memory" : err) < 0)
                        reply = strdup("ERR out of memory");
        }
        for (size_t i = 0; i < t->n && r == 0; i++)
                r = txn_final_value(t, i, &tmp);
        if (r < 0 && !reply)
                reply = strdup("ERR out of memory");
        cfg_fini(&tmp);
        return reply;
}

static void txn_send(struct cfg_txn *t, struct rx_loop *loop,
                     int (*run)(struct rx_loop *, struct rx_msg *),
                     void (*done)(struct rx_loop *, struct rx_msg *))
{
        t->pending = t->n_shards;
        for (unsigned i = 0; i < t->n_shards; i++) {
                struct cfg_txn_msg *mm = &t->msgs[i];

                mm->t = t;
                mm->m = (struct rx_msg){ .run = run, .done = done, .name = "net:config_set" };
                rx_smp_submit(loop, i, &mm->m);
        }
}

/* Step 2, on every shard. */
static int txn_prepare(struct rx_loop *dst, struct rx_msg *m)
{
        struct cfg_txn_msg *mm = container_of(m, struct cfg_txn_msg, m);
        const struct cfg_txn *t = mm->t;
        struct net_shard *sh = net_shard_of(dst);

        mm->res = cfg_copy(&mm->stage, &sh->cfg);
        for (size_t i = 0; i < t->n && mm->res == 0; i++)
                mm->res = cfg_set(&mm->stage, t->names[i], t->vals[i], true, NULL, 0);
        if (mm->res < 0)
                cfg_fini(&mm->stage);
        return 0;
}

/* Step 3, on every shard. */
static int txn_finish(struct rx_loop *dst, struct rx_msg *m)
{
        struct cfg_txn_msg *mm = container_of(m, struct cfg_txn_msg, m);
        const struct cfg_txn *t = mm->t;
        struct net_shard *sh = net_shard_of(dst);

        if (mm->res < 0)
                return 0;       /* nothing prepared here */
        for (size_t i = 0; i < t->n && !t->failed; i++) {
                int k = t->idx[i];

                if (sh->cfg_ver[k] >= t->ver)
                        continue;       /* a newer CONFIG SET got here first */
                cfg_swap(&sh->cfg, &mm->stage, k);
                sh->cfg_ver[k] = t->ver;
        }
        cfg_fini(&mm->stage);
        return 0;
}

static void txn_finished(struct rx_loop *src, struct rx_msg *m)
{
        struct cfg_txn *t = container_of(m, struct cfg_txn_msg, m)->t;
        struct net_req *req = t->req;

        if (--t->pending)
                return;
        atomic_store(&req->origin->srv->cfg_txn_busy, false);
        if (t->failed == -ENOMEM) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
        } else if (t->failed) {
                net_resp_add_errorf(req->out, "ERR CONFIG SET failed: a shard refused it (%s); "
                                    "nothing changed", strerror(-t->failed));
        } else {
                if (t->sets_log_level)
                        log_level = (enum log_level)net_shard_of(src)->cfg.log_level;
                net_resp_add_simple(req->out, "OK", 2);
        }
        txn_free(t);
        net_req_complete(req);
}

static void txn_prepared(struct rx_loop *src, struct rx_msg *m)
{
        struct cfg_txn_msg *mm = container_of(m, struct cfg_txn_msg, m);
        struct cfg_txn *t = mm->t;

        if (mm->res < 0 && !t->failed)
                t->failed = mm->res;
        if (--t->pending == 0)
                txn_send(t, src, txn_finish, txn_finished);
}

static int config_set(struct net_req *req);

static void config_set_retry(struct rx_loop *loop, struct rx_task *task)
{
        struct net_req *req = container_of(task, struct net_req, task);

        (void)loop;
        if (config_set(req) == NET_CMD_DONE)
                net_req_complete(req);
}

static int config_set_locked(struct net_req *req)
{
        struct net_shard *sh = req->exec;
        struct cfg_txn *t = txn_new(req, sh->srv->n_shards);
        char *reply;

        if (!t) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        reply = txn_check(t, &sh->cfg);
        if (reply) {
                net_resp_add_error(req->out, reply, strlen(reply));
                free(reply);
                txn_free(t);
                return NET_CMD_DONE;
        }
        for (size_t i = 0; i < t->n; i++)
                t->sets_log_level |= t->idx[i] == cfg_index("log-level");
        t->ver = atomic_fetch_add_explicit(&sh->srv->cfg_version, 1, memory_order_relaxed) + 1;
        txn_send(t, sh->loop, txn_prepare, txn_prepared);
        return NET_CMD_PENDING;
}

static int config_set(struct net_req *req)
{
        struct net_server *srv = req->exec->srv;
        bool idle = false;
        int r;

        if (!atomic_compare_exchange_strong(&srv->cfg_txn_busy, &idle, true)) {
                req->task = (struct rx_task){ .fn = config_set_retry, .name = "net:config_set_wait" };
                rx_loop_post(req->exec->loop, &req->task);
                return NET_CMD_PENDING;
        }
        r = config_set_locked(req);
        if (r == NET_CMD_DONE)
                atomic_store(&srv->cfg_txn_busy, false);
        return r;
}

int net_cmd_config(struct net_req *req)
{
        const struct net_arg *sub = &req->argv[1];
        size_t n = req->argc;

        if (net_arg_is(sub, "get") && n >= 3)
                config_get(req);
        else if (net_arg_is(sub, "set") && n >= 4 && n % 2 == 0)
                return config_set(req);
        else if (net_arg_is(sub, "resetstat") && n == 2)
                return net_cmd_resetstat(req);
        else if (net_arg_is(sub, "get") || net_arg_is(sub, "set") || net_arg_is(sub, "resetstat"))
                net_resp_add_errorf(req->out, "ERR wrong number of arguments for 'config|%.*s' "
                                              "command", (int)sub->len, sub->ptr);
        else
                net_resp_add_errorf(req->out, "ERR unknown subcommand '%.*s'. Try CONFIG HELP.",
                                    (int)(sub->len > 64 ? 64 : sub->len), sub->ptr);
        return NET_CMD_DONE;
}

/* ---- COMMAND ---- */

static void flag_words(struct net_resp_out *o, uint32_t f)
{
        const char *w[4];
        size_t n = 0;

        if (f & NET_CMD_WRITE)
                w[n++] = "write";
        if (f & NET_CMD_READONLY)
                w[n++] = "readonly";
        if (f & NET_CMD_NOAUTH)
                w[n++] = "no_auth";
        if (f & NET_CMD_LOADING)
                w[n++] = "loading";
        net_resp_add_set(o, n);
        for (size_t i = 0; i < n; i++)
                net_resp_add_simple(o, w[i], strlen(w[i]));
}

/* One entry of COMMAND / COMMAND INFO, Redis 7's ten fields. */
static void command_entry(struct net_resp_out *o, const struct net_cmd_def *d)
{
        net_resp_add_array(o, 10);
        net_resp_add_bulk(o, d->name, strlen(d->name));
        net_resp_add_int(o, d->arity);
        flag_words(o, d->flags);
        net_resp_add_int(o, d->first_key);
        net_resp_add_int(o, d->last_key);
        net_resp_add_int(o, d->step);
        net_resp_add_set(o, 0);         /* ACL categories */
        net_resp_add_set(o, 0);         /* tips */
        net_resp_add_array(o, 0);       /* key specs */
        net_resp_add_array(o, 0);       /* subcommands */
}

int net_cmd_command(struct net_req *req)
{
        size_t n, argc = req->argc;
        const struct net_cmd_def *t = net_cmd_table(&n);
        const struct net_arg *sub = argc > 1 ? &req->argv[1] : NULL;

        if (!sub) {
                net_resp_add_array(req->out, n);
                for (size_t i = 0; i < n; i++)
                        command_entry(req->out, &t[i]);
        } else if (net_arg_is(sub, "count") && argc == 2) {
                net_resp_add_int(req->out, (int64_t)n);
        } else if (net_arg_is(sub, "docs")) {
                net_cmd_docs(req);
        } else if (net_arg_is(sub, "info")) {
                net_resp_add_array(req->out, argc - 2);
                for (size_t a = 2; a < argc; a++) {
                        const struct net_cmd_def *d = net_cmd_find(&req->argv[a]);

                        if (d)
                                command_entry(req->out, d);
                        else
                                net_resp_add_null_array(req->out);
                }
        } else {
                net_resp_add_errorf(req->out, "ERR unknown subcommand '%.*s'. Try COMMAND HELP.",
                                    (int)(sub->len > 64 ? 64 : sub->len), sub->ptr);
        }
        return NET_CMD_DONE;
}
