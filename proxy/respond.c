/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Building responses (respond.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/cachectl.h"
#include "proxy/conn.h"
#include "proxy/object.h"
#include "proxy/proxy_int.h"
#include "proxy/respond.h"
#include "proxy/worker.h"

static const char *const xcache_names[] = {
        [PX_X_NONE] = "", [PX_X_HIT] = "HIT", [PX_X_MISS] = "MISS", [PX_X_BYPASS] = "BYPASS",
};

static const char *connection_line(const struct px_txn *t)
{
        if (t->close_after)
                return "Connection: close\r\n";
        if (t->req.major == 1 && t->req.minor == 0)
                return "Connection: keep-alive\r\n";
        return "";
}

size_t px_respond_lines(const struct px_txn *t, char *dst, size_t cap, uint64_t age_s)
{
        size_t n = 0;
        int k;

        if (age_s != PX_NO_AGE) {
                k = snprintf(dst, cap, "Age: %llu\r\n", (unsigned long long)age_s);
                n = k > 0 && (size_t)k < cap ? (size_t)k : 0;
        }
        k = snprintf(dst + n, cap - n, "%s%s%s%s", t->xcache ? "X-Cache: " : "",
                     xcache_names[t->xcache], t->xcache ? "\r\n" : "", connection_line(t));
        return k > 0 && (size_t)k < cap - n ? n + (size_t)k : n;
}

static void ready(struct px_txn *t, unsigned n_seg)
{
        t->n_seg = n_seg;
        t->seg_i = 0;
        t->state = PX_TXN_READY;
        px_conn_want_flush(t->conn);
}

/* A field of t's request (trimmed), or NULL. */
static const char *req_field(const struct px_txn *t, const char *name, size_t *ret_len)
{
        for (unsigned i = 0; i < t->req.f.n; i++)
                if (px_fields_is(&t->req.f, i, name))
                        return px_fields_val(&t->req.f, i, ret_len);
        return NULL;
}

/* Whether t's conditional request matches the stored response v. */
static bool not_modified(const struct px_txn *t, const struct px_obj_view *v)
{
        size_t n, m;
        const char *inm = req_field(t, "if-none-match", &n), *have;
        int64_t since, modified;

        if (inm) {
                have = px_head_find(v->head, v->head_len, "etag", &m);
                return have && px_etag_match(inm, n, have, m);
        }
        inm = req_field(t, "if-modified-since", &n);
        have = px_head_find(v->head, v->head_len, "last-modified", &m);
        return inm && have && px_http_date_parse(inm, n, &since) == 0 &&
               px_http_date_parse(have, m, &modified) == 0 && modified <= since;
}

/* 304: the stored header lines under a new status line, no body. */
static void respond_304(struct px_txn *t, const struct px_obj_view *v, uint64_t age)
{
        static const char line[] = "HTTP/1.1 304 Not Modified\r\n";
        const char *eol = memchr(v->head, '\n', v->head_len);
        size_t skip = eol ? (size_t)(eol + 1 - v->head) : v->head_len;
        size_t n = sizeof(line) - 1;

        memcpy(t->dyn, line, n);
        t->seg[0] = (struct iovec){ t->dyn, n };
        t->seg[1] = (struct iovec){ (char *)(uintptr_t)(v->head + skip), v->head_len - skip };
        n += px_respond_lines(t, t->dyn + n, sizeof(t->dyn) - n - 2, age);
        memcpy(t->dyn + n, "\r\n", 2);
        t->seg[2] = (struct iovec){ t->dyn + sizeof(line) - 1, n + 2 - (sizeof(line) - 1) };
        px_stats_status(&t->w->stats, 304);
        ready(t, 3);
}

int px_respond_object(struct px_txn *t, const void *data, size_t len)
{
        struct px_obj_view v;
        uint64_t now_ms = px_wall_ms(), age;
        size_t n;
        int k;

        if (px_obj_decode(data, len, &v) < 0)
                return -EINVAL;
        age = v.age_s + (now_ms > v.stored_ms ? (now_ms - v.stored_ms) / 1000 : 0);
        if ((t->req.flags & PX_REQ_COND) && v.status == 200 && not_modified(t, &v)) {
                respond_304(t, &v, age);
                return 0;
        }
        n = px_respond_lines(t, t->dyn, sizeof(t->dyn) - 48, age);
        k = snprintf(t->dyn + n, sizeof(t->dyn) - n, "Content-Length: %zu\r\n\r\n", v.body_len);
        n += (size_t)k;
        t->seg[0] = (struct iovec){ (char *)(uintptr_t)v.head, v.head_len };
        t->seg[1] = (struct iovec){ t->dyn, n };
        t->seg[2] = (struct iovec){ (char *)(uintptr_t)v.body, v.body_len };
        if (t->req.method == HTTP_HEAD)
                t->seg[2].iov_len = 0;
        PX_STAT_ADD(t->w->stats.bytes_cache, v.head_len + n + t->seg[2].iov_len);
        px_stats_status(&t->w->stats, v.status);
        ready(t, 3);
        return 0;
}

void px_respond_text(struct px_txn *t, unsigned status, const char *ctype, const char *body,
                     size_t len)
{
        char lines[128];
        size_t n = px_respond_lines(t, lines, sizeof(lines), PX_NO_AGE);
        bool head = t->req.method == HTTP_HEAD;

        t->out.len = t->out_off = 0;
        if (px_buf_printf(&t->out,
                          "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%.*s\r\n",
                          status, http_status_str((enum http_status)status),
                          ctype ? ctype : "text/plain", len, (int)n, lines) < 0 ||
            (!head && px_buf_add(&t->out, body, len) < 0)) {
                /* Out of memory: the connection cannot be answered. */
                t->close_after = t->stream_abort = true;
                t->out.len = 0;
        }
        t->seg[0] = (struct iovec){ t->out.p, t->out.len };
        px_stats_status(&t->w->stats, status);
        ready(t, 1);
}

void px_respond_error(struct px_txn *t, unsigned status)
{
        char body[96];
        int n = snprintf(body, sizeof(body), "%u %s\n", status,
                         http_status_str((enum http_status)status));

        px_respond_text(t, status, NULL, body, (size_t)n);
}

int px_stream_add(struct px_txn *t, const void *p, size_t n)
{
        t->state = PX_TXN_STREAM;
        if (px_buf_add(&t->out, p, n) < 0)
                return -ENOMEM;
        PX_STAT_ADD(t->w->stats.bytes_origin, n);
        px_conn_want_flush(t->conn);
        return 0;
}

void px_stream_end(struct px_txn *t, bool ok)
{
        t->state = PX_TXN_STREAM;
        t->stream_done = true;
        t->stream_abort = !ok;
        px_conn_want_flush(t->conn);
}

size_t px_stream_unsent(const struct px_txn *t)
{
        return t->out.len - t->out_off;
}
