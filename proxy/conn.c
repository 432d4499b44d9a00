/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client connections (conn.h).
 *
 * Reading is edge-triggered: an event sets readable, and the connection
 * reads until a read comes back short (the socket is then empty: data
 * arriving later raises a new edge) or its queue is full; the parser is
 * then paused and what it did not take waits in c->pending. Writing
 * gathers the ready responses at the head of the queue into one writev;
 * a short write waits for the next EPOLLOUT edge. A closed connection
 * stays allocated until the end of the pass (events of the same pass may
 * still point at it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proxy/conn.h"
#include "proxy/fetch.h"
#include "proxy/origin.h"
#include "proxy/proxy_int.h"
#include "proxy/request.h"
#include "proxy/respond.h"
#include "proxy/txn.h"
#include "proxy/worker.h"

#define IOV_PER_WRITE 64
#define LINGER_READS 16

static void conn_read(struct px_conn *c);

static bool is_paused(const struct px_conn *c)
{
        return HTTP_PARSER_ERRNO(&c->parser) == HPE_PAUSED;
}

static bool has_output(const struct px_conn *c)
{
        const struct px_txn *t = c->head;

        return t && (t->state == PX_TXN_READY ||
                     (t->state == PX_TXN_STREAM && (t->out.len > t->out_off || t->stream_done)));
}

/* ---- timers ---- */

static void timer_set(struct px_conn *c, enum px_conn_wait why, bool rearm)
{
        struct px_worker *w = c->w;
        struct px_tlist *l = why == PX_WAIT_HEADER ? &w->t_header
                           : why == PX_WAIT_LINGER ? &w->t_linger
                           : why == PX_WAIT_NONE   ? NULL
                                                   : &w->t_idle;

        if (c->timer_why == why && !rearm)
                return;
        c->timer_why = why;
        if (l)
                px_timer_arm(w, l, &c->timer);
        else
                px_timer_stop(&c->timer);
}

/* Sets c's timer for what it waits for now. */
static void timer_update(struct px_conn *c)
{
        if (c->closed || c->lingering)
                return;
        if (c->cur)
                timer_set(c, PX_WAIT_HEADER, false);
        else if (c->head)
                timer_set(c, !c->writable && has_output(c) ? PX_WAIT_STALL : PX_WAIT_NONE, false);
        else
                timer_set(c, PX_WAIT_IDLE, false);
}

static void on_timer(struct px_timer *t)
{
        struct px_conn *c = px_container_of(t, struct px_conn, timer);

        c->timer_why = PX_WAIT_NONE;
        if (!c->lingering)
                PX_STAT_INC(c->w->stats.timeouts);
        px_conn_abort(c);
}

/* ---- the queue ---- */

static void queue_push(struct px_conn *c, struct px_txn *t)
{
        t->next = NULL;
        if (c->tail)
                c->tail->next = t;
        else
                c->head = t;
        c->tail = t;
        c->n_txn++;
}

/* Drops every request of c (closing or lingering). */
static void drop_all(struct px_conn *c)
{
        struct px_txn *t = c->head;

        while (t) {
                struct px_txn *next = t->next;

                px_txn_orphan(t);
                t = next;
        }
        c->head = c->tail = NULL;
        c->n_txn = 0;
        if (c->cur) {
                px_txn_orphan(c->cur);
                c->cur = NULL;
        }
        free(c->pending);
        c->pending = NULL;
        c->pending_off = c->pending_len = 0;
}

/* ---- closing ---- */

void px_conn_abort(struct px_conn *c)
{
        if (c->closed)
                return;
        c->closed = true;
        close(c->fd);
        px_timer_stop(&c->timer);
        px_list_del(&c->flush_link);
        drop_all(c);
        PX_STAT_DEC(c->w->stats.conns);
        px_list_del(&c->link);
        px_list_add_tail(&c->w->dead, &c->link);
}

/* After the last response: stop sending, read until the client closes. */
static void start_linger(struct px_conn *c)
{
        drop_all(c);
        shutdown(c->fd, SHUT_WR);
        c->lingering = true;
        c->stop_read = true;
        timer_set(c, PX_WAIT_LINGER, true);
        c->readable = true;
        conn_read(c);
}

static void drain_linger(struct px_conn *c)
{
        for (int i = 0; i < LINGER_READS; i++) {
                ssize_t n = recv(c->fd, c->w->scratch, PX_SCRATCH_BYTES, 0);

                if (n > 0 || (n < 0 && errno == EINTR))
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        c->readable = false;
                        return;
                }
                px_conn_abort(c);
                return;
        }
}

void px_conn_close_all(struct px_worker *w)
{
        while (!px_list_is_empty(&w->conns))
                px_conn_abort(px_container_of(w->conns.next, struct px_conn, link));
}

void px_conn_reap(struct px_worker *w)
{
        while (!px_list_is_empty(&w->dead)) {
                struct px_conn *c = px_container_of(w->dead.next, struct px_conn, link);

                px_list_del(&c->link);
                free(c->pending);
                free(c);
        }
        px_fetch_reap(w);
        px_upconn_reap(w);
}

/* ---- reading ---- */

/* Answers status to the request being read and stops reading. */
static void bad_request(struct px_conn *c, unsigned status)
{
        struct px_txn *t = c->cur;

        c->cur = NULL;
        if (!t)
                t = px_txn_new(c->w, c);
        if (!t) {
                px_conn_abort(c);
                return;
        }
        c->stop_read = true;
        PX_STAT_INC(c->w->stats.bad_requests);
        t->close_after = true;
        queue_push(c, t);
        px_respond_error(t, status);
        timer_update(c);
}

/* Parses data; returns how much of it is used up (less than len when
 * the parser paused with requests still to come). */
static size_t feed(struct px_conn *c, const char *data, size_t len)
{
        size_t done;
        enum http_errno e;

        c->parsing = true;
        done = http_parser_execute(&c->parser, &px_req_settings, data, len);
        c->parsing = false;
        e = HTTP_PARSER_ERRNO(&c->parser);
        if (c->closed)
                return len;
        if (e == HPE_PAUSED)
                return c->stop_read ? len : done;
        if (e != HPE_OK) {
                unsigned status = c->err_status ? c->err_status : 400;

                if (e == HPE_HEADER_OVERFLOW)
                        status = 431;
                bad_request(c, status);
        }
        return len;
}

static void feed_pending(struct px_conn *c)
{
        if (c->pending_off < c->pending_len)
                c->pending_off += feed(c, c->pending + c->pending_off,
                                       c->pending_len - c->pending_off);
        if (c->pending && (c->pending_off >= c->pending_len || c->stop_read)) {
                free(c->pending);
                c->pending = NULL;
                c->pending_off = c->pending_len = 0;
        }
}

/* Keeps bytes the paused parser did not take. */
static void keep_pending(struct px_conn *c, const char *p, size_t n)
{
        c->pending = malloc(n);
        if (!c->pending) {
                px_conn_abort(c);
                return;
        }
        memcpy(c->pending, p, n);
        c->pending_off = 0;
        c->pending_len = n;
}

static void on_eof(struct px_conn *c)
{
        c->eof = true;
        if (c->lingering || c->cur || !c->head) {
                px_conn_abort(c);
                return;
        }
        /* Half-closed after whole requests: answer them, then close. */
        c->stop_read = true;
        c->tail->close_after = true;
}

static void conn_read(struct px_conn *c)
{
        struct px_worker *w = c->w;

        while (c->readable && !c->closed) {
                ssize_t n;

                if (c->lingering) {
                        drain_linger(c);
                        return;
                }
                if (c->stop_read || c->pending || is_paused(c))
                        return;
                n = recv(c->fd, w->scratch, PX_SCRATCH_BYTES, 0);
                if (n > 0) {
                        size_t used;

                        /* Short: the socket is empty, unless the close came
                         * with the data (no new edge will say so). */
                        if ((size_t)n < PX_SCRATCH_BYTES && !c->rdhup)
                                c->readable = false;
                        used = feed(c, w->scratch, (size_t)n);
                        if (used < (size_t)n && !c->closed)
                                keep_pending(c, w->scratch + used, (size_t)n - used);
                        continue;
                }
                if (n == 0) {
                        c->readable = false;
                        on_eof(c);
                        return;
                }
                if (errno == EINTR)
                        continue;
                c->readable = false;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        px_conn_abort(c);
                return;
        }
        timer_update(c);
}

int px_conn_request_begin(struct px_conn *c)
{
        c->cur = px_txn_new(c->w, c);
        if (!c->cur) {
                c->err_status = 503;
                return -1;
        }
        c->head_bytes = 0;
        timer_set(c, PX_WAIT_HEADER, true);
        return 0;
}

void px_conn_body_progress(struct px_conn *c)
{
        timer_set(c, PX_WAIT_HEADER, true);
}

/* Whether a queued request holds a body: parsing waits for it to be
 * answered (bodies are buffered whole: at most one per connection). */
static bool body_queued(const struct px_conn *c)
{
        for (const struct px_txn *t = c->head; t; t = t->next)
                if (t->req.body.len)
                        return true;
        return false;
}

int px_conn_request_end(struct px_conn *c)
{
        struct px_txn *t = c->cur;

        c->cur = NULL;
        if (!c->metrics)
                PX_STAT_INC(c->w->stats.requests);
        if (!t->req.keep_alive) {
                t->close_after = true;
                c->stop_read = true;
        }
        queue_push(c, t);
        px_txn_start(t);
        if (c->stop_read || c->n_txn >= PX_PIPELINE_MAX || t->req.body.len)
                http_parser_pause(&c->parser, 1);
        return 0;
}

/* ---- writing ---- */

/* The iovecs of the ready output from the queue's head on. */
static int gather(const struct px_conn *c, struct iovec *iov, int max)
{
        int n = 0;

        for (const struct px_txn *t = c->head; t && n < max; t = t->next) {
                if (t->state == PX_TXN_STREAM) {
                        if (t->out.len > t->out_off)
                                iov[n++] = (struct iovec){ t->out.p + t->out_off,
                                                           t->out.len - t->out_off };
                        break;
                }
                if (t->state != PX_TXN_READY)
                        break;
                for (unsigned i = t->seg_i; i < t->n_seg && n < max; i++)
                        if (t->seg[i].iov_len)
                                iov[n++] = t->seg[i];
                if (t->close_after)
                        break;
        }
        return n;
}

/* Retires the head txn (written in full). */
static void retire(struct px_conn *c, struct px_txn *t)
{
        bool close_after = t->close_after, abort = t->stream_abort;

        c->head = t->next;
        if (!c->head)
                c->tail = NULL;
        c->n_txn--;
        px_txn_free(t);
        if (abort)
                px_conn_abort(c);
        else if (close_after)
                start_linger(c);
}

/* Takes n written bytes off the queue's head, retiring what is done. */
static void advance(struct px_conn *c, size_t n)
{
        struct px_txn *t;

        while (!c->closed && !c->lingering && (t = c->head)) {
                if (t->state == PX_TXN_READY) {
                        for (; t->seg_i < t->n_seg; t->seg_i++) {
                                struct iovec *s = &t->seg[t->seg_i];
                                size_t k = n < s->iov_len ? n : s->iov_len;

                                s->iov_base = (char *)s->iov_base + k;
                                s->iov_len -= k;
                                n -= k;
                                if (s->iov_len)
                                        return;
                        }
                } else if (t->state == PX_TXN_STREAM) {
                        size_t left = t->out.len - t->out_off, k = n < left ? n : left;

                        t->out_off += k;
                        n -= k;
                        if (t->out_off < t->out.len)
                                return;
                        t->out_off = t->out.len = 0;
                        if (!t->stream_done)
                                return;
                } else {
                        return;
                }
                retire(c, t);
        }
}

static void flush(struct px_conn *c)
{
        struct iovec iov[IOV_PER_WRITE];
        struct px_txn *head = c->head;

        advance(c, 0);
        while (!c->closed && !c->lingering && c->writable) {
                int n = gather(c, iov, IOV_PER_WRITE);
                size_t total = 0;
                ssize_t wr;

                if (n <= 0)
                        break;
                for (int i = 0; i < n; i++)
                        total += iov[i].iov_len;
                wr = writev(c->fd, iov, n);
                if (wr < 0 && errno == EINTR)
                        continue;
                if (wr < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        c->writable = false;
                        break;
                }
                if (wr < 0) {
                        px_conn_abort(c);
                        return;
                }
                advance(c, (size_t)wr);
                if ((size_t)wr < total) {
                        c->writable = false;
                        if (!c->closed)
                                timer_set(c, PX_WAIT_STALL, true);
                        break;
                }
        }
        if (c->closed || c->lingering)
                return;
        if (c->head && c->head->state == PX_TXN_STREAM && c->head->fetch &&
            c->head->out.len - c->head->out_off < PX_STREAM_HIGH / 2)
                px_fetch_resume(c->head->fetch);
        if (c->head != head || (c->head && c->head->state == PX_TXN_FETCH))
                px_conn_advance(c);
        else
                timer_update(c);
}

void px_conn_want_flush(struct px_conn *c)
{
        if (c && !c->closed && px_list_is_empty(&c->flush_link))
                px_list_add_tail(&c->w->flushq, &c->flush_link);
}

void px_conn_flush_all(struct px_worker *w)
{
        while (!px_list_is_empty(&w->flushq)) {
                struct px_conn *c = px_container_of(w->flushq.next, struct px_conn, flush_link);

                px_list_del(&c->flush_link);
                flush(c);
        }
}

void px_conn_advance(struct px_conn *c)
{
        if (c->closed || c->lingering)
                return;
        if (c->head && c->head->state == PX_TXN_FETCH)
                px_txn_fetch(c->head);
        if (c->closed)
                return;
        if (!c->parsing && !c->stop_read && is_paused(c) && c->n_txn < PX_PIPELINE_MAX &&
            !body_queued(c)) {
                http_parser_pause(&c->parser, 0);
                feed_pending(c);
                conn_read(c);
        }
        if (c->closed)
                return;
        if (!c->head && c->eof) {
                px_conn_abort(c);
                return;
        }
        if (has_output(c))
                px_conn_want_flush(c);
        timer_update(c);
}

/* ---- events ---- */

void px_conn_on_event(struct px_conn *c, uint32_t events)
{
        if (c->closed)
                return;
        if (events & (EPOLLERR | EPOLLHUP)) {
                px_conn_abort(c);
                return;
        }
        if (events & EPOLLOUT) {
                c->writable = true;
                if (has_output(c))
                        px_conn_want_flush(c);
        }
        if (events & (EPOLLIN | EPOLLRDHUP)) {
                c->readable = true;
                c->rdhup |= (events & EPOLLRDHUP) != 0;
                conn_read(c);
        }
}

/* The peer's address as text; whether it may PURGE. */
static bool peer_describe(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

                inet_ntop(AF_INET, &a->sin_addr, buf, (socklen_t)cap);
                return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
        }
        if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

                inet_ntop(AF_INET6, &a->sin6_addr, buf, (socklen_t)cap);
                return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
                       (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127);
        }
        snprintf(buf, cap, "unknown");
        return false;
}

void px_conn_new(struct px_worker *w, int fd, const struct sockaddr_storage *peer, bool metrics)
{
        struct px_conn *c = calloc(1, sizeof(*c));
        bool local;

        if (!c) {
                close(fd);
                return;
        }
        c->ev.kind = PX_EV_CONN;
        c->fd = fd;
        c->w = w;
        c->metrics = metrics;
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c;
        px_list_init(&c->timer.node);
        c->timer.fire = on_timer;
        px_list_init(&c->flush_link);
        local = peer_describe(peer, c->peer, sizeof(c->peer));
        c->purge_ok = w->sh->cfg->purge_from == PX_PURGE_ANY ||
                      (w->sh->cfg->purge_from == PX_PURGE_LOCAL && local);
        if (px_worker_watch(w, fd, &c->ev) < 0) {
                close(fd);
                free(c);
                return;
        }
        px_list_add_tail(&w->conns, &c->link);
        PX_STAT_INC(w->stats.accepted);
        PX_STAT_INC(w->stats.conns);
        c->readable = c->writable = true;
        timer_update(c);
        conn_read(c);
}
