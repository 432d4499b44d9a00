/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SLOWLOG GET [n] / LEN / RESET / HELP over the per-shard logs
 * (slowlog.h): one child per shard. For GET each child writes its newest
 * n entries as records -- the id and the byte length (8 bytes each, host
 * order: they never leave the process) then the entry's RESP bytes --
 * into its own buffer; the origin merges the records by id, newest first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "net/cmd.h"
#include "net/server.h"
#include "net/slowlog.h"

#define SLOWLOG_DEFAULT_GET 10

static void entry_write(struct net_resp_out *o, const struct net_slowlog_entry *e)
{
        net_resp_add_array(o, 6);
        net_resp_add_int(o, (int64_t)e->id);
        net_resp_add_int(o, (int64_t)e->time_s);
        net_resp_add_int(o, (int64_t)e->duration_us);
        net_resp_add_array(o, e->argc);
        for (uint32_t i = 0; i < e->argc; i++)
                net_resp_add_bulk(o, e->argv[i].ptr, e->argv[i].len);
        net_resp_add_bulk(o, e->addr, strlen(e->addr));
        net_resp_add_bulk(o, e->name, strlen(e->name));
}

/* GET's count: -1 (all) or more. 0 or -EINVAL. */
static int get_count(const struct net_req *req, int64_t *ret)
{
        *ret = SLOWLOG_DEFAULT_GET;
        if (req->argc == 3 && (net_arg_i64(&req->argv[2], ret) < 0 || *ret < -1))
                return -EINVAL;
        if (*ret == -1)
                *ret = INT64_MAX;
        return 0;
}

static void shard_get(struct net_req *req, struct net_slowlog *l)
{
        const struct net_slowlog_entry *e;
        struct net_resp_out tmp;
        int64_t n;

        get_count(req, &n);
        net_resp_out_init(&tmp, 0);
        for (uint32_t i = 0; (int64_t)i < n && (e = net_slowlog_at(l, i)); i++) {
                uint64_t head[2] = { e->id, 0 };

                entry_write(&tmp, e);
                head[1] = net_resp_out_pending_bytes(&tmp);
                net_resp_add_raw(req->out, head, sizeof(head));
                net_out_move(req->out, &tmp);
        }
        net_resp_out_fini(&tmp);
}

static int net_cmd_shard_slowlog(struct net_req *req)
{
        struct net_slowlog *l = req->exec->slowlog;
        const struct net_arg *sub = &req->argv[1];

        req->ival = l ? l->n : 0;
        if (!l)
                return NET_CMD_DONE;
        if (net_arg_is(sub, "reset"))
                net_slowlog_reset(l);
        else if (net_arg_is(sub, "get"))
                shard_get(req, l);
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_shard_slowlog = { "slowlog", -2, NET_CMD_LOADING |
                                                      NET_CMD_NOENGINE, 0, 0, 0,
                                                      net_cmd_shard_slowlog, NULL };

/* Copies every byte of o into a heap buffer (*ret_len). NULL on ENOMEM. */
static char *out_bytes(struct net_resp_out *o, size_t *ret_len)
{
        size_t cap = net_resp_out_pending_bytes(o), len = 0, bytes;
        char *buf = malloc(cap ? cap : 1);
        struct iovec iov[16];
        int n;

        if (!buf)
                return NULL;
        while ((n = net_resp_out_iov(o, iov, 16, &bytes)) > 0) {
                for (int k = 0; k < n; k++) {
                        memcpy(buf + len, iov[k].iov_base, iov[k].iov_len);
                        len += iov[k].iov_len;
                }
                net_resp_out_consume(o, bytes);
        }
        *ret_len = len;
        return buf;
}

struct rec {
        uint64_t id, len;
        const char *p;
};

static int rec_newest_first(const void *a, const void *b)
{
        const struct rec *x = a, *y = b;

        return x->id < y->id ? 1 : x->id > y->id ? -1 : 0;
}

/* Splits the children's records into recs; returns how many (-1: ENOMEM). */
static long recs_collect(struct net_req *req, char **bufs, struct rec **ret)
{
        size_t n = 0, cap = 0;
        struct rec *recs = NULL;

        for (uint32_t i = 0; i < req->n_children; i++) {
                size_t len = 0, at = 0;

                bufs[i] = out_bytes(&req->children[i]->own, &len);
                if (!bufs[i])
                        goto fail;
                while (at + 16 <= len) {
                        struct rec r;

                        memcpy(&r.id, bufs[i] + at, 8);
                        memcpy(&r.len, bufs[i] + at + 8, 8);
                        r.p = bufs[i] + at + 16;
                        at += 16 + r.len;
                        if (n == cap) {
                                struct rec *m = realloc(recs, (cap = cap * 2 + 16) * sizeof(*m));

                                if (!m)
                                        goto fail;
                                recs = m;
                        }
                        recs[n++] = r;
                }
        }
        *ret = recs;
        return (long)n;
fail:
        free(recs);
        return -1;
}

static void get_gather(struct net_req *req)
{
        char **bufs = calloc(req->n_children, sizeof(*bufs));
        struct rec *recs = NULL;
        long n = bufs ? recs_collect(req, bufs, &recs) : -1;
        int64_t want;

        if (n < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
        } else {
                get_count(req, &want);
                if (n > 0)              /* qsort(NULL, 0) is undefined */
                        qsort(recs, (size_t)n, sizeof(*recs), rec_newest_first);
                if (want > n)
                        want = n;
                net_resp_add_array(req->out, (uint64_t)want);
                for (int64_t i = 0; i < want; i++)
                        net_resp_add_raw(req->out, recs[i].p, recs[i].len);
        }
        for (uint32_t i = 0; bufs && i < req->n_children; i++)
                free(bufs[i]);
        free(bufs);
        free(recs);
}

static void len_gather(struct net_req *req)
{
        int64_t n = 0;

        for (uint32_t i = 0; i < req->n_children; i++)
                n += req->children[i]->ival;
        net_resp_add_int(req->out, n);
}

static void ok_gather(struct net_req *req)
{
        net_resp_add_simple(req->out, "OK", 2);
}

static int slowlog_help(struct net_req *req)
{
        static const char *const lines[] = {
                "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET [<count>]",
                "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
                "LEN",
                "    Return the length of the slowlog.",
                "RESET",
                "    Reset the slowlog.",
                "HELP",
                "    Print this help.",
        };
        net_reply_lines(req, lines, sizeof(lines) / sizeof(lines[0]));
        return NET_CMD_DONE;
}

int net_cmd_slowlog(struct net_req *req)
{
        const struct net_arg *sub = &req->argv[1];
        size_t argc = req->argc;
        int64_t n;

        if (net_arg_is(sub, "get") && argc <= 3) {
                if (get_count(req, &n) < 0) {
                        net_resp_add_errorf(req->out, "ERR count should be greater than or "
                                                      "equal to -1");
                        return NET_CMD_DONE;
                }
                return net_req_each_shard(req, &def_shard_slowlog, 0, get_gather);
        }
        if (net_arg_is(sub, "len") && argc == 2)
                return net_req_each_shard(req, &def_shard_slowlog, 0, len_gather);
        if (net_arg_is(sub, "reset") && argc == 2)
                return net_req_each_shard(req, &def_shard_slowlog, 0, ok_gather);
        if (net_arg_is(sub, "help") && argc == 2)
                return slowlog_help(req);
        if (net_arg_is(sub, "get") || net_arg_is(sub, "len") || net_arg_is(sub, "reset"))
                net_resp_add_errorf(req->out, "ERR wrong number of arguments for 'slowlog|%.*s' "
                                              "command", (int)sub->len, sub->ptr);
        else
                net_resp_add_errorf(req->out, "ERR unknown subcommand '%.*s'. Try SLOWLOG HELP.",
                                    (int)(sub->len > 64 ? 64 : sub->len), sub->ptr);
        return NET_CMD_DONE;
}
