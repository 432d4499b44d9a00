/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CLIENT LIST, CLIENT INFO, CLIENT KILL: every shard lists (or kills) its
 * own connections -- one child per shard, over the parent's arguments --
 * and the origin joins the lines (Redis's format, net_conn_describe) or
 * sums the kills. A child writes its lines as plain text into its own
 * buffer; the origin copies them into one bulk string. Also the flags of
 * the caller's own connection: CLIENT NO-EVICT (a request on the
 * connection's shard) and CLIENT REPLY (at dispatch: conn.c drops the
 * replies it mutes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "net/cmd.h"
#include "net/conn.h"
#include "net/metrics.h"
#include "net/server.h"

/* Which connections a LIST or KILL names. */
struct client_filter {
        char err[96];                   /* an error naming the argument */
        const struct net_arg *ids;      /* LIST ID id...: ids[0..n_ids) */
        size_t n_ids;
        uint64_t id;                    /* KILL ID; 0 = any */
        const struct net_arg *addr, *laddr;
        bool none;                      /* a TYPE or USER no connection has */
        bool skipme;
        bool old_form;                  /* CLIENT KILL addr */
};

static bool arg_eq(const struct net_arg *a, const char *s)
{
        return a->len == strlen(s) && !memcmp(a->ptr, s, a->len);
}

/* Redis's client types; every scree connection is a normal one. Returns
 * NULL, or the error (in f->err) for a type Redis does not know. */
static const char *filter_type(struct client_filter *f, const struct net_arg *t)
{
        if (!net_arg_is(t, "normal") && !net_arg_is(t, "master") && !net_arg_is(t, "replica") &&
            !net_arg_is(t, "pubsub") && !net_arg_is(t, "slave")) {
                snprintf(f->err, sizeof(f->err), "Unknown client type '%.*s'",
                         (int)(t->len > 64 ? 64 : t->len), t->ptr);
                return f->err;
        }
        f->none = f->none || !net_arg_is(t, "normal");
        return NULL;
}

/* The one user is "default" (requirepass); any other is an error. */
static const char *filter_user(struct client_filter *f, const struct net_arg *u)
{
        if (!arg_eq(u, "default")) {
                snprintf(f->err, sizeof(f->err), "No such user '%.*s'",
                         (int)(u->len > 64 ? 64 : u->len), u->ptr);
                return f->err;
        }
        return NULL;
}

static const char *list_parse(const struct net_req *req, struct client_filter *f)
{
        const char *err;

        memset(f, 0, sizeof(*f));
        for (size_t i = 2; i < req->argc; i++) {
                const struct net_arg *a = &req->argv[i];

                if (net_arg_is(a, "type") && i + 1 < req->argc) {
                        if ((err = filter_type(f, &req->argv[++i])))
                                return err;
                } else if (net_arg_is(a, "id") && i + 1 < req->argc) {
                        f->ids = &req->argv[i + 1];
                        f->n_ids = req->argc - i - 1;
                        for (size_t k = 0; k < f->n_ids; k++) {
                                int64_t v;

                                if (net_arg_i64(&f->ids[k], &v) < 0 || v <= 0)
                                        return "Invalid client ID";
                        }
                        break;
                } else {
                        return NET_ERR_SYNTAX;
                }
        }
        return NULL;
}

static const char *kill_pair(struct client_filter *f, const struct net_arg *a,
                             const struct net_arg *v)
{
        int64_t n;

        if (net_arg_is(a, "id")) {
                if (net_arg_i64(v, &n) < 0 || n <= 0)
                        return "client-id should be greater than 0";
                f->id = (uint64_t)n;
        } else if (net_arg_is(a, "addr")) {
                f->addr = v;
        } else if (net_arg_is(a, "laddr")) {
                f->laddr = v;
        } else if (net_arg_is(a, "skipme")) {
                if (!net_arg_is(v, "yes") && !net_arg_is(v, "no"))
                        return NET_ERR_SYNTAX;
                f->skipme = net_arg_is(v, "yes");
        } else if (net_arg_is(a, "type")) {
                return filter_type(f, v);
        } else if (net_arg_is(a, "user")) {
                return filter_user(f, v);
        } else {
                return NET_ERR_SYNTAX;
        }
        return NULL;
}

static const char *kill_parse(const struct net_req *req, struct client_filter *f)
{
        const char *err;

        memset(f, 0, sizeof(*f));
        if (req->argc == 3) {
                f->old_form = true;
                f->addr = &req->argv[2];
                return NULL;
        }
        if (req->argc % 2 != 0)
                return NET_ERR_SYNTAX;
        f->skipme = true;
        for (size_t i = 2; i + 1 < req->argc; i += 2)
                if ((err = kill_pair(f, &req->argv[i], &req->argv[i + 1])))
                        return err;
        return NULL;
}

static bool id_listed(const struct client_filter *f, uint64_t id)
{
        for (size_t k = 0; k < f->n_ids; k++) {
                int64_t v;

                if (net_arg_i64(&f->ids[k], &v) == 0 && (uint64_t)v == id)
                        return true;
        }
        return false;
}

static bool conn_matches(const struct client_filter *f, const struct net_conn *c)
{
        if (f->none || c->closing)
                return false;
        if (f->n_ids && !id_listed(f, c->id))
                return false;
        if (f->id && c->id != f->id)
                return false;
        if (f->addr && !arg_eq(f->addr, c->addr))
                return false;
        return !f->laddr || arg_eq(f->laddr, c->laddr);
}

/* ---- per shard ---- */

static int net_cmd_shard_clients(struct net_req *req)
{
        bool kill = net_arg_is(&req->argv[1], "kill");
        struct client_filter f;
        uint64_t now = net_now_ms();
        struct net_conn *c, *next;
        char line[NET_CONN_LINE_MAX];

        if (kill)
                kill_parse(req, &f);            /* checked on the origin */
        else
                list_parse(req, &f);
        req->ival = 0;
        for (c = req->exec->conns; c; c = next) {
                next = c->next;
                if (!conn_matches(&f, c))
                        continue;
                if (!kill) {
                        net_resp_add_raw(req->out, line,
                                         net_conn_describe(c, req->parent, now, line));
                } else if (c == req->parent->conn) {
                        if (f.skipme)
                                continue;
                        net_conn_close_after_reply(c);  /* the reply still goes out */
                } else {
                        net_conn_close(c);
                }
                req->ival++;
        }
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_shard_clients = { "client", -2, NET_CMD_LOADING |
                                                      NET_CMD_NOENGINE, 0, 0, 0,
                                                      net_cmd_shard_clients, NULL };

/* ---- on the origin ---- */

static void list_gather(struct net_req *req)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        struct iovec iov[16];

        if (!f) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        for (uint32_t i = 0; i < req->n_children; i++) {
                struct net_resp_out *o = &req->children[i]->own;
                size_t bytes;
                int n;

                while ((n = net_resp_out_iov(o, iov, 16, &bytes)) > 0) {
                        for (int k = 0; k < n; k++)
                                fwrite(iov[k].iov_base, 1, iov[k].iov_len, f);
                        net_resp_out_consume(o, bytes);
                }
        }
        fclose(f);
        net_resp_add_verbatim(req->out, "txt", text, len);
        free(text);
}

static void kill_gather(struct net_req *req)
{
        int64_t n = 0;
        struct client_filter f;

        for (uint32_t i = 0; i < req->n_children; i++)
                n += req->children[i]->ival;
        kill_parse(req, &f);
        if (!f.old_form)
                net_resp_add_int(req->out, n);
        else if (n)
                net_resp_add_simple(req->out, "OK", 2);
        else
                net_resp_add_errorf(req->out, "ERR No such client");
}

static int client_info(struct net_req *req)
{
        char line[NET_CONN_LINE_MAX];

        net_resp_add_verbatim(req->out, "txt", line,
                              net_conn_describe(req->conn, req, net_now_ms(), line));
        return NET_CMD_DONE;
}

/* Replies the wrong-arity error of CLIENT <sub>. */
static int client_arity(struct net_req *req, const char *sub)
{
        net_resp_add_errorf(req->out, "ERR wrong number of arguments for 'client|%s' command", sub);
        return NET_CMD_DONE;
}

/* CLIENT NO-EVICT on|off: the connection is never the one maxmemory-clients
 * closes (it still counts in its shard's total). */
static int client_no_evict(struct net_req *req)
{
        const struct net_arg *v = &req->argv[2];

        if (req->argc != 3)
                return client_arity(req, "no-evict");
        if (net_arg_is(v, "on") || net_arg_is(v, "off")) {
                req->conn->no_evict = net_arg_is(v, "on");
                net_resp_add_simple(req->out, "OK", 2);
        } else {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_SYNTAX);
        }
        return NET_CMD_DONE;
}

/*
 * Redis's semantics: ON replies OK and clears OFF and a pending SKIP; OFF
 * mutes every later reply (its own too); SKIP mutes the next command's
 * (its own too), and does nothing under OFF. conn.c decides each
 * command's muting before it runs (c->mute), and drops the muted replies.
 */
bool net_client_reply_dispatch(struct net_conn *c, const struct net_cmd_def *def,
                               const struct net_arg *argv, size_t argc)
{
        const struct net_arg *v = &argv[2];

        struct net_cmd_metrics *m = c->sh->metrics;
        size_t slot;
        bool failed = false;

        if (def->fn != net_cmd_client || argc < 2 || !net_arg_is(&argv[1], "reply"))
                return false;
        slot = net_cmd_stat_slot(def, argv, argc);
        if (argc != 3) {
                net_multi_flag(c);      /* as a subcommand's arity: EXEC aborts */
                net_conn_reply_text(c, "-ERR wrong number of arguments for 'client|reply' command");
                if (m)
                        net_cmd_metrics_reject(m, slot);
                return true;
        }
        if (net_arg_is(v, "on")) {
                c->reply_off = c->reply_skip = c->mute = false;
                net_conn_reply_text(c, "OK");
        } else if (net_arg_is(v, "off")) {
                c->reply_off = true;
        } else if (net_arg_is(v, "skip")) {
                c->reply_skip = !c->reply_off;
        } else {
                net_conn_reply_text(c, "-ERR syntax error");
                failed = true;
        }
        if (m)                  /* INFO commandstats: cmdstat_client|reply */
                net_cmd_metrics_observe(m, slot, 0, failed);
        return true;
}

int net_cmd_client_intro(struct net_req *req)
{
        const struct net_arg *sub = &req->argv[1];
        struct client_filter f;
        const char *err;

        if (net_arg_is(sub, "no-evict"))
                return client_no_evict(req);
        if (net_arg_is(sub, "info")) {
                if (req->argc != 2)
                        return client_arity(req, "info");
                return client_info(req);
        }
        if (net_arg_is(sub, "kill") && req->argc < 3)
                return client_arity(req, "kill");
        err = net_arg_is(sub, "kill") ? kill_parse(req, &f) : list_parse(req, &f);
        if (err) {
                net_resp_add_errorf(req->out, "ERR %s", err);
                return NET_CMD_DONE;
        }
        return net_req_each_shard(req, &def_shard_clients, 0,
                                  net_arg_is(sub, "kill") ? kill_gather : list_gather);
}
