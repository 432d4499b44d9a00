/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The connection state machine (see conn.h). The flow is driven from
 * three callbacks -- recv done, send done, a request done -- which all end
 * in conn_after(): send what is ready, parse what is buffered unless the
 * backlog is over its limit, receive more, or free the connection once it
 * is closing and idle. The parse loop sets in_input so that requests
 * finishing inside it (the fast path) never re-enter it nor free the
 * connection under it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/log.h"
#include "base/time.h"
#include "net/cmd.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/metrics.h"
#include "net/latency.h"
#include "net/slowlog.h"

static void conn_after(struct net_conn *c);
static void conn_input(struct net_conn *c);

/* Hard close: drop unsent output, wake any recv or send in flight. A
 * socket kept open shuts only its reading side: that wakes the recv, and
 * sends the peer nothing -- unless a send is in flight (a peer that does
 * not read): only shutting the writing side wakes that one, and the
 * connection (and the stop waiting for it) must not wait on the peer. */
static void conn_kill(struct net_conn *c)
{
        if (!c->closing) {
                c->closing = true;
                shutdown(c->fd, c->keep_open && !c->send_busy ? SHUT_RD : SHUT_RDWR);
        }
}

/* Over the output limit counting the replies still to come: a client that
 * never reads stops being read once its replies fill the limit, wherever
 * they are -- sent, waiting behind the head, or being made on another
 * shard (estimated: the replies come back at their full size). */
static bool conn_paused(const struct net_conn *c)
{
        size_t out = net_resp_out_pending_bytes(&c->out) + c->held_bytes;

        return out + (size_t)c->n_queued * c->reply_est > NET_CONN_MAX_OUT_BYTES ||
               c->n_queued >= NET_CONN_MAX_QUEUED || c->barrier;
}

size_t net_conn_mem_bytes(const struct net_conn *c)
{
        if (c->closing)
                return 0;       /* on its way out: what it holds is being freed */
        return net_resp_out_pending_bytes(&c->out) + c->held_bytes +
               net_resp_parser_mem_bytes(&c->parser) + c->mq_bytes;
}

/* The connection of sh holding the most, or NULL; CLIENT NO-EVICT ones
 * are never picked. */
static struct net_conn *conn_biggest(struct net_shard *sh)
{
        struct net_conn *best = NULL;

        for (struct net_conn *c = sh->conns; c; c = c->next)
                if (!c->closing && !c->no_evict && c->mem_counted &&
                    (!best || c->mem_counted > best->mem_counted))
                        best = c;
        return best;
}

/* maxmemory-clients: over this shard's share, close the biggest until
 * under (c itself may be one: the caller then frees it). */
static void conn_evict(struct net_conn *c)
{
        struct net_shard *sh = c->sh;
        uint64_t limit = cfg_clients_limit_bytes(&sh->cfg, sh->srv->n_shards);

        while (limit && sh->client_mem_bytes > limit) {
                struct net_conn *v = conn_biggest(sh);

                if (!v)
                        break;
                log_warn("client id=%llu addr=%s closed: its buffers hold %zu bytes and the "
                         "shard's clients %llu, over maxmemory-clients (%llu per shard)",
                         (unsigned long long)v->id, v->addr, v->mem_counted,
                         (unsigned long long)sh->client_mem_bytes, (unsigned long long)limit);
                sh->evicted_clients++;
                sh->client_mem_bytes -= v->mem_counted;
                v->mem_counted = 0;
                if (v == c)
                        conn_kill(c);
                else
                        net_conn_close(v);
        }
}

/* Brings c's part of the shard's client memory up to date and enforces
 * the limit. */
static void conn_account(struct net_conn *c)
{
        size_t now = net_conn_mem_bytes(c);

        if (now == c->mem_counted)
                return;
        c->sh->client_mem_bytes += now;
        c->sh->client_mem_bytes -= c->mem_counted;
        c->mem_counted = now;
        if (now)
                conn_evict(c);
}

static void conn_free(struct net_conn *c)
{
        struct net_shard *sh = c->sh;

        sh->client_mem_bytes -= c->mem_counted;
        net_shard_conn_unlink(sh, c);
        close(c->fd);
        net_resp_parser_fini(&c->parser);
        net_resp_out_fini(&c->out);
        free(c->ibuf);
        free(c->name);
        free(c->lib_name);
        free(c->lib_ver);
        net_watch_free(c->watch, c->n_watch);
        while (c->mq_head) {
                struct net_req *q = c->mq_head;

                c->mq_head = q->next;
                net_req_free(q);
        }
        free(c);
        atomic_fetch_sub_explicit(&sh->srv->clients, 1, memory_order_relaxed);
        if (sh->stopping && !sh->conns)
                net_shard_conns_gone(sh);
}

/* Frees c if it is done; returns true if it did. */
static bool conn_maybe_free(struct net_conn *c)
{
        bool flushed = net_resp_out_pending_bytes(&c->out) == 0;

        if (c->in_input || c->q_head || !(c->closing || (c->eof && flushed)))
                return false;
        if (c->recv_busy || c->send_busy) {
                conn_kill(c);           /* ends the recv still waiting for input */
                return false;
        }
        conn_free(c);
        return true;
}

static void on_recv(struct rx_loop *loop, struct rx_op *op, int res);
static void on_send(struct rx_loop *loop, struct rx_op *op, int res);

static void conn_recv(struct net_conn *c)
{
        if (c->recv_busy || c->closing || c->eof || conn_paused(c) || c->ipos < c->ilen)
                return;
        if (rx_sock_recv(c->sh->loop, &c->recv_op, c->fd, c->ibuf, NET_CONN_RECV_BYTES,
                         on_recv) < 0) {
                conn_kill(c);
                return;
        }
        c->recv_busy = true;
}

static void conn_send(struct net_conn *c)
{
        size_t bytes;
        int n;

        if (c->send_busy || c->closing)
                return;
        if (net_resp_out_failed(&c->out)) {
                conn_kill(c);
                return;
        }
        n = net_resp_out_iov(&c->out, c->iov, NET_CONN_IOV, &bytes);
        if (n == 0)
                return;
        c->msg = (struct msghdr){ .msg_iov = c->iov, .msg_iovlen = (size_t)n };
        if (rx_sock_sendmsg(c->sh->loop, &c->send_op, c->fd, &c->msg, on_send) < 0) {
                conn_kill(c);
                return;
        }
        c->send_busy = true;
}

static void on_recv(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct net_conn *c = container_of(op, struct net_conn, recv_op);

        c->recv_busy = false;
        if (res <= 0) {
                if (res == 0)
                        c->eof = true;
                else
                        conn_kill(c);
        } else if (!c->eof && !c->closing) {
                c->sh->net_in_bytes += (uint64_t)res;
                c->last_ms = time_wall_coarse_ns() / NS_PER_MS;
                c->ipos = 0;
                c->ilen = (size_t)res;
                conn_input(c);
                return;
        }
        conn_after(c);
}

static void on_send(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct net_conn *c = container_of(op, struct net_conn, send_op);

        c->send_busy = false;
        if (res < 0)
                conn_kill(c);
        else if (!c->closing)
                net_resp_out_consume(&c->out, (size_t)res);
        if (res > 0)
                c->sh->net_out_bytes += (uint64_t)res;
        conn_after(c);
}

static void conn_after(struct net_conn *c)
{
        if (c->in_input)
                return;
        conn_account(c);
        conn_send(c);
        if (!c->closing && !c->eof && !conn_paused(c) && c->ipos < c->ilen) {
                conn_input(c);
                return;
        }
        if (conn_maybe_free(c))
                return;
        conn_recv(c);
}

/* ---- requests and replies in order ---- */

static void conn_enqueue(struct net_conn *c, struct net_req *req)
{
        req->conn = c;
        if (c->q_tail)
                c->q_tail->next = req;
        else
                c->q_head = req;
        c->q_tail = req;
        c->n_queued++;
}

/* SLOWLOG: records req if it took at least slowlog-log-slower-than (and
 * LATENCY's "command" event, in ms). AUTH and HELLO are never recorded
 * (they carry passwords). */
static void conn_slowlog(struct net_conn *c, const struct net_req *req, uint64_t now_ns)
{
        struct net_server *srv = c->sh->srv;
        int64_t min_us = c->sh->cfg.slowlog_slower_than_us;
        uint64_t us;

        if (min_us < 0 || !req->def || !c->sh->slowlog || req->def->fn == net_cmd_auth ||
            req->def->fn == net_cmd_hello)
                return;
        us = (now_ns - req->start_ns) / NS_PER_US;
        if (us < (uint64_t)min_us)
                return;
        if (us >= 1000)         /* LATENCY counts whole ms: a 0 ms event is noise */
                net_latency_add(&c->sh->latency, NET_LATENCY_COMMAND, net_now_ms() / 1000,
                                us / 1000);
        net_slowlog_push(c->sh->slowlog, c->sh->cfg.slowlog_max_len,
                         atomic_fetch_add(&srv->slowlog_next_id, 1), net_now_ms() / 1000, us,
                         req->argv, req->argc, c->addr, c->name);
}

/* INFO commandstats and the metrics: req ran (failed if it wrote an error
 * reply since it started: net_conn_start marked its output), or was
 * refused at its start (-LOADING). */
static void conn_count(struct net_conn *c, const struct net_req *req, uint64_t now_ns)
{
        struct net_cmd_metrics *m = c->sh->metrics;
        size_t slot;

        if (!m)
                return;
        slot = net_cmd_stat_slot(req->def, req->argv, req->argc);
        if (req->rejected)
                net_cmd_metrics_reject(m, slot);
        else
                net_cmd_metrics_observe(m, slot, now_ns - req->start_ns,
                                        net_resp_out_errors(req->out) != req->err_mark);
}

/* A call of d refused at dispatch (arity, NOAUTH, key size). */
static void conn_reject(struct net_conn *c, const struct net_cmd_def *d, const struct net_cmd *cmd)
{
        if (c->sh->metrics)
                net_cmd_metrics_reject(c->sh->metrics, net_cmd_stat_slot(d, cmd->argv, cmd->argc));
}

/* A reply made in req's own buffer now waits for its turn: count it, and
 * learn from its size how much the requests in flight may bring back
 * (the estimate rises at once, and decays by an eighth per smaller reply). */
static void conn_reply_held(struct net_conn *c, const struct net_req *req)
{
        size_t bytes = net_resp_out_pending_bytes(&req->own);

        c->held_bytes += bytes;
        if (!req->def)
                return;
        c->reply_est = bytes > c->reply_est ? bytes : c->reply_est - c->reply_est / 8;
}

void net_conn_req_done(struct net_conn *c, struct net_req *req)
{
        struct net_req *h;

        req->done = true;
        if (req->out != &c->out)
                conn_reply_held(c, req);
        if (req->def) {
                /* One clock read for both: on a VM's kvm-clock each costs
                 * more than parsing a command. */
                uint64_t now_ns = time_now_ns();

                conn_slowlog(c, req, now_ns);
                conn_count(c, req, now_ns);
        }
        if (req == c->barrier)
                c->barrier = NULL;
        while ((h = c->q_head) && h->done) {
                if (h->out != &c->out)
                        c->held_bytes -= net_resp_out_pending_bytes(&h->own);
                if (h->out != &c->out && !c->closing && !h->mute)
                        net_out_move(&c->out, &h->own);
                c->q_head = h->next;
                if (!c->q_head)
                        c->q_tail = NULL;
                c->n_queued--;
                net_req_free(h);
        }
        conn_after(c);
}

/* Straight out if nothing is queued, else into a finished request of its
 * own (always, when muted: dropped once it reaches the head). */
struct net_resp_out *net_conn_reply_slot(struct net_conn *c, struct net_req **ret_req)
{
        struct net_req *req;

        *ret_req = NULL;
        if (!c->q_head && !c->mute)
                return &c->out;
        req = net_req_new(c->sh, NULL, NULL, 0, c->proto);
        if (!req) {
                conn_kill(c);
                return NULL;
        }
        req->mute = c->mute;
        conn_enqueue(c, req);
        req->out = &req->own;
        *ret_req = req;
        return &req->own;
}

void net_conn_reply_end(struct net_conn *c, struct net_req *req)
{
        if (req)
                net_conn_req_done(c, req);
}

void net_conn_reply_text(struct net_conn *c, const char *text)
{
        struct net_req *r;
        struct net_resp_out *o = net_conn_reply_slot(c, &r);

        if (!o)
                return;
        if (text[0] == '-')
                net_resp_add_error(o, text + 1, strlen(text + 1));
        else
                net_resp_add_simple(o, text, strlen(text));
        net_conn_reply_end(c, r);
}

#define CONN_ERRORF(c, ...)                                                 \
        do {                                                                \
                struct net_req *r_;                                         \
                struct net_resp_out *o_ = net_conn_reply_slot(c, &r_);      \
                if (!o_)                                                    \
                        break;                                              \
                net_resp_add_errorf(o_, __VA_ARGS__);                       \
                net_conn_reply_end(c, r_);                                  \
        } while (0)

/* Copies up to 128 bytes of a into buf (129 bytes) as text: NULs become
 * spaces (the reply writer makes CR and LF spaces too). */
static void arg_text(const struct net_arg *a, char *buf)
{
        size_t n = a->len > 128 ? 128 : a->len;

        memcpy(buf, a->ptr, n);
        buf[n] = 0;
        for (size_t i = 0; i < n; i++)
                if (!buf[i])
                        buf[i] = ' ';
}

static void reply_unknown(struct net_conn *c, const struct net_cmd *cmd)
{
        char name[129], arg[129], args[512];
        size_t n = 0;

        arg_text(&cmd->argv[0], name);
        args[0] = 0;
        for (size_t i = 1; i < cmd->argc && n < sizeof(args) - 140; i++) {
                int w;

                arg_text(&cmd->argv[i], arg);
                w = snprintf(args + n, sizeof(args) - n, "'%s' ", arg);
                if (w > 0)
                        n += (size_t)w;
        }
        CONN_ERRORF(c, "ERR unknown command '%s', with args beginning with: %s", name, args);
}

static bool arity_ok(const struct net_cmd_def *d, size_t argc)
{
        return d->arity >= 0 ? argc == (size_t)d->arity : argc >= (size_t)-d->arity;
}

/* The first key over the limit, or -1. */
static long long_key(const struct net_cmd_def *d, const struct net_cmd *cmd, uint64_t max)
{
        size_t last;

        if (d->first_key <= 0)
                return -1;
        last = d->last_key < 0 ? cmd->argc - 1 : (size_t)d->last_key;
        for (size_t i = (size_t)d->first_key; i <= last && i < cmd->argc; i += (size_t)d->step)
                if (cmd->argv[i].len > max)
                        return (long)i;
        return -1;
}

/* Remembers the command's name for CLIENT LIST: "name" or "name|sub". */
static void conn_note_cmd(struct net_conn *c, const struct net_cmd_def *d,
                          const struct net_cmd *cmd)
{
        size_t n;

        if (!d) {
                memcpy(c->last_cmd, "NULL", 5);
                return;
        }
        /* Per command: no snprintf. Every name fits (the longest is 16). */
        n = strlen(d->name);
        if (n >= sizeof(c->last_cmd))
                n = sizeof(c->last_cmd) - 1;
        memcpy(c->last_cmd, d->name, n);
        c->last_cmd[n] = 0;
        if (!d->subcmds || cmd->argc < 2 || n + cmd->argv[1].len + 2 > sizeof(c->last_cmd))
                return;
        c->last_cmd[n++] = '|';
        for (size_t i = 0; i < cmd->argv[1].len; i++) {
                char ch = cmd->argv[1].ptr[i];

                c->last_cmd[n++] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) :
                                   ch > ' ' && ch <= '~' ? ch : '?';
        }
        c->last_cmd[n] = 0;
}

static bool is_barrier(const struct net_cmd_def *d)
{
        return (d->flags & (NET_CMD_TXN | NET_CMD_BARRIER)) ||
               ((d->flags & NET_CMD_LOCAL) && d->first_key > 0);
}

void net_conn_start(struct net_conn *c, struct net_req *req)
{
        req->start_ns = c->input_ns;
        req->wire_bytes = c->cmd_wire_bytes;
        req->mute = c->mute;
        conn_enqueue(c, req);
        req->out = c->q_head == req && !req->mute && net_req_shard(req) == c->sh->id ? &c->out :
                                                                                       &req->own;
        req->err_mark = net_resp_out_errors(req->out);
        if (is_barrier(req->def))
                c->barrier = req;       /* cleared when done: maybe inside the start */
        net_req_start(req);
}

/* Checks cmd; returns its definition, or NULL after replying an error. */
static const struct net_cmd_def *conn_check(struct net_conn *c, const struct net_cmd *cmd)
{
        const struct net_cmd_def *d = net_cmd_find(&cmd->argv[0]);
        uint64_t max_key = c->sh->srv->max_key_bytes;

        conn_note_cmd(c, d, cmd);
        if (!d) {
                reply_unknown(c, cmd);
                return NULL;
        }
        if (!arity_ok(d, cmd->argc)) {
                CONN_ERRORF(c, "ERR wrong number of arguments for '%s' command", d->name);
                goto rejected;
        }
        if (!c->authed && !(d->flags & NET_CMD_NOAUTH)) {
                CONN_ERRORF(c, "NOAUTH Authentication required.");
                goto rejected;
        }
        if (long_key(d, cmd, max_key) >= 0) {
                CONN_ERRORF(c, "ERR key too long (max %llu bytes)", (unsigned long long)max_key);
                goto rejected;
        }
        return d;
rejected:
        conn_reject(c, d, cmd);
        return NULL;
}

static void conn_dispatch(struct net_conn *c, const struct net_cmd *cmd)
{
        const struct net_cmd_def *d;
        struct net_req *req;

        c->sh->n_commands++;
        c->mute = c->reply_off || c->reply_skip;        /* CLIENT REPLY OFF, SKIP */
        c->reply_skip = false;
        d = conn_check(c, cmd);
        if (!d) {
                net_multi_flag(c);
                return;
        }
        if (net_client_reply_dispatch(c, d, cmd->argv, cmd->argc) ||
            net_multi_dispatch(c, d, cmd->argv, cmd->argc))
                return;
        req = net_req_new(c->sh, d, cmd->argv, cmd->argc, c->proto);
        if (!req) {
                conn_kill(c);
                return;
        }
        net_req_use_db(req, c->db);
        net_conn_start(c, req);
}

static void conn_input(struct net_conn *c)
{
        c->in_input = true;
        c->input_ns = time_now_ns();
        while (!c->closing && !c->eof && c->ipos < c->ilen && !conn_paused(c)) {
                struct net_cmd cmd;
                size_t held = net_resp_parser_buffered_bytes(&c->parser);
                ssize_t n = net_resp_parse(&c->parser, c->ibuf + c->ipos, c->ilen - c->ipos, &cmd);

                if (n < 0) {
                        c->mute = c->reply_off || c->reply_skip;
                        if (n == -SCREE_EPROTO)
                                CONN_ERRORF(c, "ERR %s", net_resp_parser_error(&c->parser));
                        c->ipos = c->ilen;
                        net_conn_close_after_reply(c);
                        break;
                }
                if (n == 0) {
                        c->ipos = c->ilen;
                        break;
                }
                c->ipos += (size_t)n;
                c->cmd_wire_bytes = held + (size_t)n;
                conn_dispatch(c, &cmd);
        }
        c->in_input = false;
        conn_after(c);
}

/* ---- life ---- */

/*
 * No argument can be longer than the longest key or value, so a bulk
 * announced longer than both is refused from its header (Redis's
 * "invalid bulk length", and the connection closed) instead of being
 * read whole only to be refused by the command. A whole command (an
 * MSET of several values) may hold more, up to max(64 MiB, 4 values).
 */
static struct net_resp_limits conn_limits(const struct net_server *srv)
{
        struct net_resp_limits lim;

        net_resp_limits_default(&lim);
        lim.max_bulk_bytes = srv->max_value_bytes > srv->max_key_bytes ? srv->max_value_bytes :
                                                                          srv->max_key_bytes;
        lim.max_cmd_bytes = cfg_max_cmd_bytes(srv->cfg);
        return lim;
}

/* "ip:port" of a socket address ("[ip]:port" for IPv6), or "?". */
static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
        char ip[INET6_ADDRSTRLEN];

        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *a = (const void *)ss;

                inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
                snprintf(buf, len, "%s:%u", ip, ntohs(a->sin_port));
        } else if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *a = (const void *)ss;

                inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
                snprintf(buf, len, "[%s]:%u", ip, ntohs(a->sin6_port));
        } else {
                snprintf(buf, len, "?");
        }
}

static void conn_addrs(struct net_conn *c)
{
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);

        memset(&ss, 0, sizeof(ss));
        getpeername(c->fd, (struct sockaddr *)&ss, &len);
        addr_text(&ss, c->addr, sizeof(c->addr));
        len = sizeof(ss);
        memset(&ss, 0, sizeof(ss));
        getsockname(c->fd, (struct sockaddr *)&ss, &len);
        addr_text(&ss, c->laddr, sizeof(c->laddr));
}

int net_conn_open(struct net_shard *sh, int fd)
{
        struct net_server *srv = sh->srv;
        struct net_resp_limits lim = conn_limits(srv);
        struct net_conn *c = calloc(1, sizeof(*c));
        int one = 1;

        if (!c || !(c->ibuf = malloc(NET_CONN_RECV_BYTES))) {
                free(c);
                close(fd);
                return -ENOMEM;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->sh = sh;
        c->fd = fd;
        c->proto = 2;
        c->reply_est = NET_CONN_REPLY_EST_BYTES;
        c->id = atomic_fetch_add_explicit(&srv->next_client_id, 1, memory_order_relaxed) + 1;
        c->created_ms = c->last_ms = net_now_ms();
        c->input_ns = time_now_ns();
        conn_addrs(c);
        c->authed = sh->cfg.requirepass[0] == 0;
        net_resp_parser_init(&c->parser, &lim);
        net_resp_parser_set_authenticated(&c->parser, c->authed);
        net_resp_out_init(&c->out, 0);
        net_resp_out_set_errstats(&c->out, &sh->errstats);
        net_shard_conn_link(sh, c);
        conn_recv(c);
        if (!c->recv_busy) {
                conn_maybe_free(c);
                return -ENOMEM;
        }
        return 0;
}

void net_conn_close(struct net_conn *c)
{
        conn_kill(c);
        conn_maybe_free(c);
}

void net_conn_close_after_reply(struct net_conn *c)
{
        /* Like a peer that stopped sending: flush, then close. */
        c->eof = true;
        c->ipos = c->ilen;
}

int net_conn_keep_open(struct net_conn *c)
{
        /* Never closed: the process is about to exit, and its exit ends
         * the client's wait. */
        if (fcntl(c->fd, F_DUPFD_CLOEXEC, 0) < 0)
                return -errno;
        c->keep_open = true;
        return 0;
}

void net_conn_set_proto(struct net_conn *c, uint8_t proto)
{
        c->proto = proto;
        net_resp_out_set_proto(&c->out, proto);
}

/* ---- introspection ---- */

/* Redis's flag letters for what scree has, in Redis's order: x in MULTI,
 * e CLIENT NO-EVICT; N for none. */
static void conn_flags(const struct net_conn *c, char *buf)
{
        char *p = buf;

        if (c->in_multi)
                *p++ = 'x';
        if (c->no_evict)
                *p++ = 'e';
        if (p == buf)
                *p++ = 'N';
        *p = 0;
}

/* CLIENT LIST's memory figures of c (Redis's names). */
struct conn_figures {
        size_t qbuf, qbuf_free, argv_mem, obl, oll, omem, tot_mem;
};

/*
 * The query buffer is what was received and not yet run: unparsed input,
 * the parser's partial command, and the asker's own command. The output is
 * c's buffer (obl: its oldest block; oll, omem: the blocks after it) and
 * the replies of finished requests waiting behind the head (one list entry
 * each). A request's reply is read only once it is done: until then
 * another shard may be writing it. Arguments are written once, before a
 * request starts, so they may be read wherever it runs.
 */
static void conn_figures(const struct net_conn *c, const struct net_req *asker,
                         struct conn_figures *f)
{
        size_t more_mem = 0, n_queued = 0;

        f->qbuf = c->ilen - c->ipos + net_resp_parser_buffered_bytes(&c->parser);
        if (asker && asker->conn == c)
                f->qbuf += asker->wire_bytes;
        f->qbuf_free = f->qbuf < NET_CONN_RECV_BYTES ? NET_CONN_RECV_BYTES - f->qbuf : 0;
        net_resp_out_shape(&c->out, &f->obl, &f->oll, &f->omem);
        f->argv_mem = 0;
        for (const struct net_req *h = c->q_head; h; h = h->next) {
                n_queued++;
                for (size_t i = 0; i < h->argc; i++)
                        f->argv_mem += h->argv[i].len;
                if (h->done && h->out != &c->out && net_resp_out_pending_bytes(&h->own)) {
                        f->oll++;
                        f->omem += net_resp_out_mem_bytes(&h->own);
                }
                if (h->done)
                        more_mem += net_resp_out_mem_bytes(&h->own);
        }
        f->tot_mem = sizeof(*c) + NET_CONN_RECV_BYTES + net_resp_parser_mem_bytes(&c->parser) +
                     net_resp_out_mem_bytes(&c->out) + c->mq_bytes + f->argv_mem + more_mem +
                     n_queued * sizeof(struct net_req);
}

size_t net_conn_describe(const struct net_conn *c, const struct net_req *asker, uint64_t now_ms,
                         char *buf)
{
        bool writing = net_resp_out_pending_bytes(&c->out) > 0;
        struct conn_figures f;
        char flags[8];
        int n;

        conn_flags(c, flags);
        conn_figures(c, asker, &f);
        n = snprintf(buf, NET_CONN_LINE_MAX,
                     "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu flags=%s db=%u "
                     "sub=0 psub=0 ssub=0 multi=%lld qbuf=%zu qbuf-free=%zu argv-mem=%zu "
                     "multi-mem=%zu rbs=%zu rbp=0 obl=%zu oll=%zu omem=%zu tot-mem=%zu "
                     "events=%s cmd=%s user=default redir=-1 resp=%u lib-name=%s lib-ver=%s\n",
                     (unsigned long long)c->id, c->addr, c->laddr, c->fd, c->name ? c->name : "",
                     (unsigned long long)((now_ms - c->created_ms) / 1000),
                     (unsigned long long)((now_ms - c->last_ms) / 1000), flags, c->db,
                     c->in_multi ? (long long)c->n_mq : -1LL, f.qbuf, f.qbuf_free, f.argv_mem,
                     c->mq_bytes, (size_t)NET_RESP_DEFAULT_CHUNK_BYTES, f.obl, f.oll, f.omem,
                     f.tot_mem, writing ? "rw" : "r", c->last_cmd[0] ? c->last_cmd : "NULL",
                     c->proto, c->lib_name ? c->lib_name : "", c->lib_ver ? c->lib_ver : "");
        if (n < 0)
                return 0;
        if ((size_t)n >= NET_CONN_LINE_MAX) {
                buf[NET_CONN_LINE_MAX - 2] = '\n';
                return NET_CONN_LINE_MAX - 1;
        }
        return (size_t)n;
}

unsigned net_conn_sweep_idle(struct net_shard *sh, uint64_t now_ms, uint64_t timeout_ms)
{
        struct net_conn *c, *next;
        unsigned n = 0;

        for (c = sh->conns; c; c = next) {
                next = c->next;
                if (c->q_head || c->closing || now_ms < c->last_ms + timeout_ms)
                        continue;
                net_conn_close(c);
                n++;
        }
        return n;
}
