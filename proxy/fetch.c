/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fetches (fetch.h): connections and retries, sending, reading and
 * parsing the response, the body, the end and the store. The response's
 * head is fetch_head.c's.
 *
 * A fetch that ends is unlinked at once and freed at the end of the
 * loop's pass, so a caller up the stack may still look at it: every step
 * that can end it or move it to another connection is followed by a
 * check of f->ended or f->uc.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/conn.h"
#include "proxy/fetch.h"
#include "proxy/fetch_int.h"
#include "proxy/flight.h"
#include "proxy/object.h"
#include "proxy/origin.h"
#include "proxy/proxy_int.h"
#include "proxy/request.h"
#include "proxy/respond.h"
#include "proxy/worker.h"

static const http_parser_settings resp_settings;

static void attempt(struct px_fetch *f, bool pooled_ok);

/* ---- the end ---- */

static void end(struct px_fetch *f)
{
        f->ended = true;
        px_list_del(&f->link);
        px_list_add_tail(&f->w->dead_fetches, &f->link);
}

void px_fetch_reap(struct px_worker *w)
{
        while (!px_list_is_empty(&w->dead_fetches)) {
                struct px_fetch *f = px_container_of(w->dead_fetches.next, struct px_fetch, link);

                px_list_del(&f->link);
                px_buf_free(&f->req);
                px_buf_free(&f->key);
                px_fields_fini(&f->rf);
                free(f);
        }
}

static void drop_conn(struct px_fetch *f)
{
        px_upconn_close(f->uc);
        f->uc = NULL;
}

static void unhook_sink(struct px_fetch *f)
{
        if (f->sink)
                f->sink->fetch = NULL;
        f->sink = NULL;
}

/* No usable answer: status to the sink and the waiters. */
static void fail(struct px_fetch *f, unsigned status)
{
        struct px_worker *w = f->w;
        struct px_txn *t = f->sink;

        drop_conn(f);
        unhook_sink(f);
        if (t)
                px_respond_error(t, status);
        if (f->flight)
                px_flight_release(w->sh->flights, f->flight, PX_FLIGHT_ERROR, status, w);
        f->flight = NULL;
        px_obj_unref(f->obj);
        f->obj = NULL;
        end(f);
}

/* The answer broke off after its head went out, or nobody wants it. */
static void cut(struct px_fetch *f, bool broken)
{
        struct px_worker *w = f->w;

        drop_conn(f);
        if (f->sink)
                px_stream_end(f->sink, !broken);
        unhook_sink(f);
        px_fetch_drop_copy(f);
        if (broken)
                PX_STAT_INC(w->stats.origin_errors);
        end(f);
}

void px_fetch_drop_copy(struct px_fetch *f)
{
        struct px_worker *w = f->w;

        if (f->obj)
                PX_STAT_INC(w->stats.not_stored);
        px_obj_unref(f->obj);
        f->obj = NULL;
        if (f->flight)
                px_flight_release(w->sh->flights, f->flight, PX_FLIGHT_RETRY, 0, w);
        f->flight = NULL;
}

/* Hands the copy to the waiters and to scree. */
static void store(struct px_fetch *f)
{
        struct px_worker *w = f->w;
        int r;

        px_obj_hdr_encode(f->obj->data, f->status, f->head_len, f->age_s, px_wall_ms(),
                          f->body_len);
        if (f->flight)
                px_flight_publish(w->sh->flights, f->flight, f->obj, w);
        r = scree_put_async(w->cq, w->sh->table, f->key.p, f->key.len, f->obj->data, f->obj->len,
                            f->ttl_ms, f->flight);
        if (r < 0) {
                PX_STAT_INC(w->stats.store_errors);
                if (f->flight)
                        px_flight_end(w->sh->flights, f->flight);
        }
        f->flight = NULL;       /* the store's completion ends it */
        px_obj_unref(f->obj);
        f->obj = NULL;
}

void px_fetch_on_stored(struct px_worker *w, const scree_completion *c)
{
        if (c->res == 0)
                PX_STAT_INC(w->stats.stores);
        else
                PX_STAT_INC(w->stats.store_errors);
        if (c->tag)
                px_flight_end(w->sh->flights, c->tag);
}

/* The whole response is in. */
static void finish(struct px_fetch *f)
{
        struct px_worker *w = f->w;
        struct px_upconn *uc = f->uc;

        px_stats_latency(&w->stats, w->now_ns - f->t0_ns);
        f->uc = NULL;
        if (!f->extra && http_should_keep_alive(&f->parser))
                px_upconn_put(uc);
        else
                px_upconn_close(uc);
        if (f->sink) {
                if (f->framing == PX_FRAME_CHUNKED)
                        px_stream_add(f->sink, "0\r\n\r\n", 5);
                px_stream_end(f->sink, true);
        }
        unhook_sink(f);
        if (f->obj)
                store(f);
        else
                px_fetch_drop_copy(f);
        end(f);
}

/* ---- connections and retries ---- */

static void origin_error(struct px_fetch *f, unsigned origin, int err)
{
        struct px_worker *w = f->w;
        static _Thread_local uint64_t last_ns;

        PX_STAT_INC(w->stats.origin_errors);
        if (w->now_ns - last_ns >= 1000000000u || last_ns == 0) {
                last_ns = w->now_ns;
                fprintf(stderr, "scree-proxy: origin %s: %s\n", w->sh->origins[origin].name,
                        strerror(-err));
        }
}

/* f's connection failed before any answer (err: why). */
static void conn_lost(struct px_fetch *f, int err)
{
        bool reused = f->uc->reused, may_resend = f->idempotent || !f->sent_any;
        unsigned origin = f->uc->origin;

        drop_conn(f);
        if (reused && may_resend) {
                attempt(f, false);      /* the origin closed an idle one: a new one */
                return;
        }
        origin_error(f, origin, err);
        f->tries++;
        if (may_resend)
                attempt(f, true);
        else
                fail(f, 502);
}

static void send_request(struct px_fetch *f)
{
        while (f->req_off < f->req.len) {
                ssize_t n = send(f->uc->fd, f->req.p + f->req_off, f->req.len - f->req_off,
                                 MSG_NOSIGNAL);

                if (n > 0) {
                        f->req_off += (size_t)n;
                        f->sent_any = true;
                } else if (n < 0 && errno == EINTR) {
                        continue;
                } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        return;
                } else {
                        conn_lost(f, n < 0 ? -errno : -EPIPE);
                        return;
                }
        }
}

/* Sends f on a connection to the next origin to try. */
static void attempt(struct px_fetch *f, bool pooled_ok)
{
        struct px_worker *w = f->w;
        unsigned n = w->sh->n_origins;

        while (f->tries < n) {
                unsigned origin = (f->first_origin + f->tries) % n;
                struct px_upconn *uc;
                int r = px_upconn_get(w, origin, pooled_ok, &uc);

                if (r < 0) {
                        origin_error(f, origin, r);
                        f->tries++;
                        continue;
                }
                f->uc = uc;
                uc->fetch = f;
                f->req_off = 0;
                f->sent_any = f->got_any = false;
                http_parser_init(&f->parser, HTTP_RESPONSE);
                f->parser.data = f;
                px_timer_arm(w, &w->t_origin, &uc->timer);
                if (!uc->connecting)
                        send_request(f);
                return;
        }
        fail(f, 502);
}

static bool is_idempotent(unsigned method)
{
        return method == HTTP_GET || method == HTTP_HEAD || method == HTTP_PUT ||
               method == HTTP_DELETE || method == HTTP_OPTIONS || method == HTTP_TRACE;
}

int px_fetch_start(struct px_txn *t, struct px_flight *lead)
{
        struct px_worker *w = t->w;
        struct px_fetch *f = calloc(1, sizeof(*f));
        unsigned method = t->req.method;

        if (!f)
                return -ENOMEM;
        f->w = w;
        f->client_head = method == HTTP_HEAD;
        if (t->store && f->client_head)
                method = HTTP_GET;      /* stored as the GET it answers */
        f->upstream_head = method == HTTP_HEAD;
        f->idempotent = is_idempotent(method);
        f->store = t->store;
        if (px_req_upstream(&t->req, method, t->store, t->conn->peer, &f->req) < 0 ||
            px_buf_add(&f->key, t->req.key.p, t->req.key.len) < 0) {
                px_buf_free(&f->req);
                px_buf_free(&f->key);
                free(f);
                return -ENOMEM;
        }
        f->sink = t;
        f->flight = lead;
        f->first_origin = w->rr++ % w->sh->n_origins;
        f->t0_ns = w->now_ns;
        px_list_add_tail(&w->fetches, &f->link);
        t->fetch = f;
        t->state = PX_TXN_ORIGIN;
        PX_STAT_INC(w->stats.origin_requests);
        attempt(f, true);
        return 0;
}

/* ---- reading ---- */

/* The origin closed (err 0) or failed (err < 0). */
static void origin_ended(struct px_fetch *f, int err)
{
        if (!f->got_any) {
                conn_lost(f, err ? err : -ECONNRESET);
                return;
        }
        if (err == 0) {
                /* A body delimited by the close ends here. */
                http_parser_execute(&f->parser, &resp_settings, NULL, 0);
                if (f->done) {
                        finish(f);
                        return;
                }
        }
        if (!f->headers_done) {
                origin_error(f, f->uc->origin, err ? err : -EPROTO);
                fail(f, 502);
        } else {
                cut(f, true);
        }
}

static void feed(struct px_fetch *f, const char *data, size_t len)
{
        size_t done = http_parser_execute(&f->parser, &resp_settings, data, len);

        if (f->ended)
                return;
        if (f->done) {
                f->extra = done < len;
                finish(f);
        } else if (f->discard) {
                cut(f, false);
        } else if (HTTP_PARSER_ERRNO(&f->parser) != HPE_OK) {
                if (f->headers_done) {
                        cut(f, true);
                } else {
                        origin_error(f, f->uc->origin, -EPROTO);
                        fail(f, 502);
                }
        }
}

static void read_response(struct px_fetch *f)
{
        struct px_worker *w = f->w;

        while (!f->paused && !f->ended) {
                ssize_t n = recv(f->uc->fd, w->scratch, PX_SCRATCH_BYTES, 0);

                if (n > 0) {
                        f->got_any = true;
                        px_timer_arm(w, &w->t_origin, &f->uc->timer);
                        feed(f, w->scratch, (size_t)n);
                        /* A short read emptied the socket: more data raises a
                         * new edge. A close seen with the data raises none. */
                        if ((size_t)n < PX_SCRATCH_BYTES && !f->ended && !f->uc->rdhup)
                                return;
                } else if (n < 0 && errno == EINTR) {
                        continue;
                } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        return;
                } else {
                        origin_ended(f, n < 0 ? -errno : 0);
                        return;
                }
        }
}

void px_fetch_on_io(struct px_fetch *f, uint32_t events)
{
        struct px_upconn *uc = f->uc;

        if (uc->connecting) {
                int err = 0;
                socklen_t len = sizeof(err);

                if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
                        return;
                if (getsockopt(uc->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                        err = errno;
                if (err) {
                        conn_lost(f, -err);
                        return;
                }
                uc->connecting = false;
        }
        if (f->req_off < f->req.len) {
                send_request(f);
                if (f->ended || f->uc != uc)
                        return;
        }
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                uc->rdhup = true;
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                read_response(f);
}

void px_fetch_on_timeout(struct px_fetch *f)
{
        if (f->uc->connecting) {
                conn_lost(f, -ETIMEDOUT);
                return;
        }
        origin_error(f, f->uc->origin, -ETIMEDOUT);
        if (f->headers_done)
                cut(f, true);
        else
                fail(f, 504);
}

void px_fetch_resume(struct px_fetch *f)
{
        if (!f->paused || f->ended)
                return;
        f->paused = false;
        read_response(f);
}

void px_fetch_detach(struct px_fetch *f)
{
        f->sink = NULL;
        if (f->ended)
                return;
        /* Go on while the copy, or the waiters, need the response. */
        if (f->obj || (!f->headers_done && f->flight))
                return;
        cut(f, false);
}

void px_fetch_abort_all(struct px_worker *w)
{
        while (!px_list_is_empty(&w->fetches)) {
                struct px_fetch *f = px_container_of(w->fetches.next, struct px_fetch, link);

                unhook_sink(f);
                cut(f, false);
        }
}

/* ---- parser callbacks ---- */

static int on_message_begin(http_parser *p)
{
        struct px_fetch *f = p->data;

        px_fields_reset(&f->rf);
        f->reason_len = 0;
        f->head_bytes = 0;
        f->interim = false;
        return 0;
}

static int head_bytes(struct px_fetch *f, size_t n)
{
        f->head_bytes += n;
        return f->head_bytes > PX_MAX_RESPONSE_HEAD ? -1 : 0;
}

static int on_status(http_parser *p, const char *at, size_t len)
{
        struct px_fetch *f = p->data;

        if (head_bytes(f, len) < 0 || px_buf_add(&f->rf.b, at, len) < 0)
                return -1;
        f->reason_len += (uint32_t)len;
        return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
        struct px_fetch *f = p->data;

        if (head_bytes(f, len + 4) < 0 || px_fields_name(&f->rf, at, len) < 0 || f->rf.too_many)
                return -1;
        return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
        struct px_fetch *f = p->data;

        return head_bytes(f, len) < 0 || px_fields_value(&f->rf, at, len) < 0 ? -1 : 0;
}

static int on_headers_complete(http_parser *p)
{
        struct px_fetch *f = p->data;

        if (p->status_code >= 100 && p->status_code < 200 && p->status_code != 101) {
                f->interim = true;      /* 100 Continue, 103: skipped */
                return 0;
        }
        if (p->status_code == 101)
                return -1;              /* never asked for */
        f->headers_done = true;
        f->status = p->status_code;
        if (px_fetch_head(f) < 0)
                return -1;
        return f->upstream_head ? 1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
        struct px_fetch *f = p->data;
        const struct px_config *cfg = f->w->sh->cfg;

        f->body_len += len;
        if (f->obj && (f->body_len > cfg->max_object_bytes || px_obj_add(&f->obj, at, len) < 0))
                px_fetch_drop_copy(f);
        if (f->sink && !f->client_head) {
                char hdr[24];
                int n = f->framing == PX_FRAME_CHUNKED
                                ? snprintf(hdr, sizeof(hdr), "%zx\r\n", len) : 0;

                if (px_stream_add(f->sink, hdr, (size_t)n) < 0 ||
                    px_stream_add(f->sink, at, len) < 0 ||
                    (n && px_stream_add(f->sink, "\r\n", 2) < 0))
                        return -1;
                if (!f->obj && px_stream_unsent(f->sink) > PX_STREAM_HIGH)
                        f->paused = true;
        }
        if (!f->sink && !f->obj) {
                f->discard = true;
                http_parser_pause(p, 1);
        }
        return 0;
}

static int on_message_complete(http_parser *p)
{
        struct px_fetch *f = p->data;

        if (f->interim) {
                f->interim = false;
                return 0;
        }
        f->done = true;
        http_parser_pause(p, 1);        /* anything after it is not ours */
        return 0;
}

static const http_parser_settings resp_settings = {
        .on_message_begin = on_message_begin,
        .on_status = on_status,
        .on_header_field = on_header_field,
        .on_header_value = on_header_value,
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_message_complete = on_message_complete,
};
