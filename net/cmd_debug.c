/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DEBUG (docs/server.md, "DEBUG"): the harmless part of Redis's debugging
 * command, for tools and test suites that use it -- HELP, SLEEP,
 * SET-ACTIVE-EXPIRE and PROTOCOL. Nothing here crashes, reloads or fills
 * the server; who may run it is enable-debug-command's (no, yes, local:
 * clients on a loopback address). Runs on the connection's shard.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/time.h"
#include "net/args.h"
#include "net/cmd.h"
#include "net/conn.h"
#include "net/server.h"

/* A DEBUG SLEEP waits in slices of at most this, so that a server
 * stopping meanwhile waits no longer than one slice for it. */
#define SLEEP_SLICE_NS (100 * NS_PER_MS)

/* Redis's refusal, word for word (an error line). */
static const char not_allowed[] =
        "-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
        "you can run it from a local connection, otherwise you need to set this option in the "
        "configuration file, and then restart the server.";

/* The connection req came from: its own, or (a command run by EXEC) its
 * root's. */
static struct net_conn *req_conn(const struct net_req *req)
{
        while (req->parent)
                req = req->parent;
        return req->conn;
}

bool net_debug_allowed(const struct net_conn *c)
{
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);

        switch (c->sh->cfg.debug_command) {
        case CFG_DEBUG_YES:
                return true;
        case CFG_DEBUG_LOCAL:
                memset(&ss, 0, sizeof(ss));
                return getpeername(c->fd, (struct sockaddr *)&ss, &len) == 0 &&
                       net_addr_is_loopback(&ss);
        default:
                return false;
        }
}

void net_cmd_debug_refuse(struct net_conn *c)
{
        net_conn_reply_text(c, not_allowed);
}

/* ---- SLEEP ---- */

struct dbg_sleep {
        struct rx_timer t;
        struct net_req *req;
        uint64_t until_ns;
};

/* Whether c's client is gone or going: closed by us, or its peer hung up
 * (seen without reading: a sleeping connection reads nothing, DEBUG
 * being a barrier). */
static bool client_gone(const struct net_conn *c)
{
        struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };

        if (c->eof || c->closing)
                return true;
        return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Arms the next slice: 0, or -1 when the sleep is over (its time is
 * up, the server stops, its client is gone, or the timer cannot be
 * armed). */
static int sleep_arm(struct rx_loop *loop, struct dbg_sleep *s)
{
        const struct net_conn *c = req_conn(s->req);
        uint64_t now = time_now_ns(), left;

        if (now >= s->until_ns || s->req->exec->stopping || !c || client_gone(c))
                return -1;
        left = s->until_ns - now;
        return rx_timer_arm_after(loop, &s->t, left < SLEEP_SLICE_NS ? left : SLEEP_SLICE_NS) == 0
                       ? 0 : -1;
}

static void sleep_slice(struct rx_loop *loop, struct rx_timer *t)
{
        struct dbg_sleep *s = container_of(t, struct dbg_sleep, t);
        struct net_req *req = s->req;

        if (sleep_arm(loop, s) == 0)
                return;
        net_resp_add_simple(req->out, "OK", 2);
        net_req_complete(req);          /* req->info (s) goes with req */
}

/* DEBUG SLEEP seconds: replies +OK after that long. The number is read
 * as Redis reads it (its leading decimal part, fractions allowed; none,
 * or a negative one, is 0). Unlike Redis, whose whole server sleeps, only
 * this connection waits (DEBUG is a barrier: the commands after it are
 * read once it is done). */
static int debug_sleep(struct net_req *req)
{
        const struct net_arg *a = &req->argv[2];
        size_t n = a->len < 63 ? a->len : 63;
        struct dbg_sleep *s;
        char buf[64];
        double secs;

        memcpy(buf, a->ptr, n);
        buf[n] = '\0';
        secs = strtod(buf, NULL);
        if (!(secs > 0))
                secs = 0;               /* NaN too */
        if (secs > 1e9)
                secs = 1e9;             /* 31 years: ended by its client or a stop */
        s = calloc(1, sizeof(*s));
        if (!s) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        s->req = req;
        s->until_ns = time_now_ns() + (uint64_t)(secs * 1e9);
        req->info = s;
        rx_timer_init(&s->t, sleep_slice, "net:debug sleep");
        if (sleep_arm(req->exec->loop, s) == 0)
                return NET_CMD_PENDING;
        net_resp_add_simple(req->out, "OK", 2);
        return NET_CMD_DONE;
}

/* ---- PROTOCOL ---- */

/* DEBUG PROTOCOL type: one reply of each RESP3 type, as Redis's (client
 * libraries' tests parse these). */
static int debug_protocol(struct net_req *req)
{
        static const char attrib[] = "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n";
        static const char bignum[] = "1234567999999999999999999999999999999";
        const struct net_arg *a = &req->argv[2];
        struct net_resp_out *o = req->out;

        if (net_arg_is(a, "string")) {
                net_resp_add_bulk(o, "Hello World", 11);
        } else if (net_arg_is(a, "integer")) {
                net_resp_add_int(o, 12345);
        } else if (net_arg_is(a, "double")) {
                net_resp_add_double(o, 3.141);
        } else if (net_arg_is(a, "bignum")) {
                net_resp_add_bignum(o, bignum, sizeof(bignum) - 1);
        } else if (net_arg_is(a, "null")) {
                net_resp_add_null(o);
        } else if (net_arg_is(a, "array") || net_arg_is(a, "set")) {
                net_resp_add_agg(o, net_arg_is(a, "set") ? NET_RESP_SET : NET_RESP_ARRAY, 3);
                for (int j = 0; j < 3; j++)
                        net_resp_add_int(o, j);
        } else if (net_arg_is(a, "map")) {
                net_resp_add_map(o, 3);
                for (int j = 0; j < 3; j++) {
                        net_resp_add_int(o, j);
                        net_resp_add_bool(o, j == 1);
                }
        } else if (net_arg_is(a, "attrib")) {
                /* An attribute is not a reply: a real one follows it. */
                if (req->proto >= 3)
                        net_resp_add_raw(o, attrib, sizeof(attrib) - 1);
                net_resp_add_bulk(o, "Some real reply following the attribute", 39);
        } else if (net_arg_is(a, "push")) {
                if (req->proto < 3) {
                        net_resp_add_errorf(o, "ERR RESP2 is not supported by this command");
                        return NET_CMD_DONE;
                }
                net_resp_add_push(o, 2);
                net_resp_add_bulk(o, "server-cpu-usage", 16);
                net_resp_add_int(o, 42);
                net_resp_add_bulk(o, "Some real reply following the push reply", 40);
        } else if (net_arg_is(a, "true") || net_arg_is(a, "false")) {
                net_resp_add_bool(o, net_arg_is(a, "true"));
        } else if (net_arg_is(a, "verbatim")) {
                net_resp_add_verbatim(o, "txt", "This is a verbatim\nstring", 25);
        } else {
                net_resp_add_errorf(o, "ERR Wrong protocol type name. Please use one of the "
                                    "following: string|integer|double|bignum|null|array|set|map|"
                                    "attrib|push|verbatim|true|false");
        }
        return NET_CMD_DONE;
}

/* ---- the command ---- */

static const char *const help[] = {
        "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "PROTOCOL <type>",
        "    Reply with a test value of the specified type. <type> can be: string,",
        "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
        "    true, false.",
        "SET-ACTIVE-EXPIRE <0|1>",
        "    Accepted for Redis's tools: scree has no active expiry cycle to switch",
        "    (an expired key is gone for every command at once; compaction frees it).",
        "SLEEP <seconds>",
        "    Reply after <seconds> (decimals allowed); only this connection waits.",
        "HELP",
        "    Print this help.",
};

int net_cmd_debug(struct net_req *req)
{
        const struct net_arg *sub = &req->argv[1];
        const struct net_conn *c = req_conn(req);

        if (!c || !net_debug_allowed(c)) {
                net_resp_add_error(req->out, not_allowed + 1, sizeof(not_allowed) - 2);
                return NET_CMD_DONE;
        }
        if (net_arg_is(sub, "help") && req->argc == 2) {
                net_reply_lines(req, help, sizeof(help) / sizeof(help[0]));
                return NET_CMD_DONE;
        }
        if (net_arg_is(sub, "sleep") && req->argc == 3)
                return debug_sleep(req);
        if (net_arg_is(sub, "protocol") && req->argc == 3)
                return debug_protocol(req);
        if (net_arg_is(sub, "set-active-expire") && req->argc == 3) {
                int64_t v;

                if (net_arg_i64(&req->argv[2], &v) < 0) {
                        net_resp_add_errorf(req->out, "ERR %s", NET_ERR_NOT_INT);
                        return NET_CMD_DONE;
                }
                net_resp_add_simple(req->out, "OK", 2);
                return NET_CMD_DONE;
        }
        net_resp_add_errorf(req->out, "ERR unknown subcommand or wrong number of arguments for "
                            "'%.*s'. Try DEBUG HELP.", (int)(sub->len > 128 ? 128 : sub->len),
                            sub->ptr);
        return NET_CMD_DONE;
}
