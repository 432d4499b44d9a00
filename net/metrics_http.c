/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metrics endpoint (metrics_http.h) on shard 0. A connection's life:
 * recv until the head is complete (or refused), then either an error
 * response or a gather (one rx_msg per shard, each filling its snapshot
 * on its own shard), the text, one send after another until it is all
 * out, and close. The deadline timer shuts the socket down, which ends
 * the recv or send in flight; a connection is freed only once no op is in
 * flight and no message is away, so every callback finds it alive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/time.h"
#include "net/metrics.h"
#include "net/metrics_http.h"
#include "net/server.h"
#include "reactor/io.h"
#include "reactor/loop.h"
#include "reactor/smp.h"

struct hconn;

/* One shard's part of a gather. */
struct slot {
        struct rx_msg msg;
        struct hconn *c;
        struct net_metrics_snap snap;
};

struct hconn {
        struct hconn *prev, *next;
        struct net_metrics_http *h;
        int fd;
        struct rx_op op;
        struct rx_timer deadline;
        bool io_busy, closing;
        unsigned away;                  /* gather messages not back yet */
        struct slot *slots;             /* [n_shards] while gathering */
        char *resp;                     /* heap */
        size_t resp_len, sent;
        size_t len;
        char buf[NET_METRICS_MAX_REQUEST];
};

struct net_metrics_http {
        struct net_shard *sh;
        int listen_fd;
        struct rx_op accept_op;
        struct rx_timer accept_retry;
        bool accepting, stopping;
        struct hconn *conns;
};

static void accept_arm(struct net_metrics_http *h);

/* ---- connections ---- */

static void slots_free(struct hconn *c)
{
        for (unsigned i = 0; c->slots && i < c->h->sh->srv->n_shards; i++)
                net_metrics_snap_fini(&c->slots[i].snap);
        free(c->slots);
        c->slots = NULL;
}

static void conn_free(struct hconn *c)
{
        if (c->prev)
                c->prev->next = c->next;
        else
                c->h->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        close(c->fd);
        slots_free(c);
        free(c->resp);
        free(c);
}

/* Frees c once nothing of it is in flight or away. */
static void conn_end(struct hconn *c)
{
        c->closing = true;
        if (c->io_busy || c->away)
                return;
        rx_timer_cancel(c->h->sh->loop, &c->deadline);
        conn_free(c);
}

/* The deadline, or the server stopping: ends whatever is in flight. */
static void conn_abort(struct hconn *c)
{
        c->closing = true;
        shutdown(c->fd, SHUT_RDWR);
        conn_end(c);
}

static void on_deadline(struct rx_loop *loop, struct rx_timer *t)
{
        (void)loop;
        conn_abort(container_of(t, struct hconn, deadline));
}

static void send_more(struct hconn *c);

static void on_send(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct hconn *c = op->ctx;

        (void)loop;
        c->io_busy = false;
        if (res <= 0 || c->closing) {
                conn_end(c);
                return;
        }
        c->sent += (size_t)res;
        send_more(c);
}

static void send_more(struct hconn *c)
{
        size_t left = c->resp_len - c->sent;

        if (!left) {
                conn_end(c);
                return;
        }
        if (left > UINT32_MAX)
                left = UINT32_MAX;
        c->op.ctx = c;
        if (rx_sock_send(c->h->sh->loop, &c->op, c->fd, c->resp + c->sent, (uint32_t)left,
                         on_send) < 0) {
                conn_end(c);
                return;
        }
        c->io_busy = true;
}

/* Sends a response with body (len bytes, borrowed); extra: more header
 * lines, each ending in "\r\n". */
static void respond(struct hconn *c, int status, const char *reason, const char *type,
                    const char *extra, const char *body, size_t len)
{
        FILE *f = open_memstream(&c->resp, &c->resp_len);

        if (!f) {
                conn_end(c);
                return;
        }
        fprintf(f, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                   "Connection: close\r\n\r\n", status, reason, type, len, extra);
        fwrite(body, 1, len, f);
        if (fclose(f) != 0) {
                conn_end(c);
                return;
        }
        c->sent = 0;
        send_more(c);
}

static void respond_error(struct hconn *c, int status)
{
        const char *reason = status == 404   ? "Not Found"
                             : status == 405 ? "Method Not Allowed"
                             : status == 431 ? "Request Header Fields Too Large"
                             : status == 500 ? "Internal Server Error"
                                             : "Bad Request";
        char body[80];
        int n = snprintf(body, sizeof(body), "%d %s\n", status, reason);

        respond(c, status, reason, "text/plain; charset=utf-8",
                status == 405 ? "Allow: GET\r\n" : "", body, (size_t)n);
}

static void gathered(struct hconn *c)
{
        unsigned n = c->h->sh->srv->n_shards;
        struct net_metrics_snap *snaps = malloc(n * sizeof(*snaps));
        char *text = NULL;
        size_t len = 0;
        FILE *f;

        if (c->closing || !snaps) {
                free(snaps);
                conn_end(c);
                return;
        }
        for (unsigned i = 0; i < n; i++)
                snaps[i] = c->slots[i].snap;    /* borrowed: freed with the slots */
        f = open_memstream(&text, &len);
        if (f && (net_metrics_format(f, snaps, n) < 0) + (fclose(f) != 0) == 0)
                respond(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", "", text, len);
        else
                respond_error(c, 500);
        free(text);
        free(snaps);
        slots_free(c);
}

static int snap_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct slot *s = container_of(m, struct slot, msg);

        net_metrics_snap_fill(&s->snap, net_shard_of(dst));
        return 0;
}

static void snap_done(struct rx_loop *src, struct rx_msg *m)
{
        struct hconn *c = container_of(m, struct slot, msg)->c;

        (void)src;
        if (--c->away == 0)
                gathered(c);
}

/* Asks every shard for its snapshot; gathered() runs when all are back. */
static void gather(struct hconn *c)
{
        unsigned n = c->h->sh->srv->n_shards;
        uint32_t cap = net_metrics_tablets_cap(n);

        c->slots = calloc(n, sizeof(*c->slots));
        if (!c->slots) {
                respond_error(c, 500);
                return;
        }
        for (unsigned i = 0; i < n; i++)
                if (net_metrics_snap_init(&c->slots[i].snap, cap) < 0) {
                        slots_free(c);
                        respond_error(c, 500);
                        return;
                }
        for (unsigned i = 0; i < n; i++) {
                c->slots[i].c = c;
                c->slots[i].msg.run = snap_run;
                c->slots[i].msg.done = snap_done;
                c->slots[i].msg.name = "net:metrics_snapshot";
                if (rx_smp_submit(c->h->sh->loop, i, &c->slots[i].msg) == 0)
                        c->away++;
        }
        if (!c->away) {
                slots_free(c);
                respond_error(c, 500);
        }
}

static void recv_more(struct hconn *c);

static void on_recv(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct hconn *c = op->ctx;
        int status;

        (void)loop;
        c->io_busy = false;
        if (res <= 0 || c->closing) {
                conn_end(c);
                return;
        }
        c->len += (size_t)res;
        status = net_metrics_check_request(c->buf, c->len);
        if (status == 0)
                recv_more(c);
        else if (status == 200)
                gather(c);
        else
                respond_error(c, status);
}

static void recv_more(struct hconn *c)
{
        c->op.ctx = c;
        if (rx_sock_recv(c->h->sh->loop, &c->op, c->fd, c->buf + c->len,
                         (uint32_t)(sizeof(c->buf) - c->len), on_recv) < 0) {
                conn_end(c);
                return;
        }
        c->io_busy = true;
}

static void conn_open(struct net_metrics_http *h, int fd)
{
        struct hconn *c = malloc(sizeof(*c));

        if (!c) {
                close(fd);
                return;
        }
        memset(c, 0, offsetof(struct hconn, buf));
        c->h = h;
        c->fd = fd;
        c->next = h->conns;
        if (h->conns)
                h->conns->prev = c;
        h->conns = c;
        rx_timer_init(&c->deadline, on_deadline, "net:metrics_deadline");
        if (rx_timer_arm_after(h->sh->loop, &c->deadline, NET_METRICS_HTTP_TIMEOUT_NS) < 0) {
                conn_end(c);
                return;
        }
        recv_more(c);
}

/* ---- accepting ---- */

static void on_accept(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct net_metrics_http *h = op->ctx;

        h->accepting = false;
        if (res >= 0) {
                if (h->stopping)
                        close(res);
                else
                        conn_open(h, res);
                accept_arm(h);
                return;
        }
        if (!h->stopping && res != -ECANCELED)
                rx_timer_arm_after(loop, &h->accept_retry, 10 * NS_PER_MS);
}

static void accept_retry(struct rx_loop *loop, struct rx_timer *t)
{
        (void)loop;
        accept_arm(container_of(t, struct net_metrics_http, accept_retry));
}

static void accept_arm(struct net_metrics_http *h)
{
        if (h->accepting || h->stopping)
                return;
        h->accept_op.ctx = h;
        if (rx_sock_accept(h->sh->loop, &h->accept_op, h->listen_fd, on_accept) == 0)
                h->accepting = true;
        else
                rx_timer_arm_after(h->sh->loop, &h->accept_retry, 10 * NS_PER_MS);
}

int net_metrics_http_start(struct net_shard *sh, int listen_fd, struct net_metrics_http **ret)
{
        struct net_metrics_http *h = calloc(1, sizeof(*h));

        if (!h)
                return -ENOMEM;
        h->sh = sh;
        h->listen_fd = listen_fd;
        rx_timer_init(&h->accept_retry, accept_retry, "net:metrics_accept_retry");
        accept_arm(h);
        *ret = h;
        return 0;
}

void net_metrics_http_stop(struct net_metrics_http *h)
{
        struct hconn *c, *next;

        if (!h)
                return;
        h->stopping = true;
        rx_timer_cancel(h->sh->loop, &h->accept_retry);
        shutdown(h->listen_fd, SHUT_RDWR);      /* ends the accept in flight */
        for (c = h->conns; c; c = next) {
                next = c->next;
                conn_abort(c);
        }
}

void net_metrics_http_free(struct net_metrics_http *h)
{
        if (!h)
                return;
        while (h->conns)
                conn_free(h->conns);
        free(h);
}
