/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fetched response's head (fetch_int.h): the facts the cache rules
 * need (cachectl.h), the head block to replay (status line and the
 * end-to-end header lines: hop-by-hop ones, those Connection names,
 * Content-Length and Age dropped -- the proxy writes those), the start
 * of the stored copy, and the head the client gets with its framing.
 */
#include <errno.h>
#include <string.h>

#include "proxy/cachectl.h"
#include "proxy/fetch_int.h"
#include "proxy/flight.h"
#include "proxy/object.h"
#include "proxy/proxy_int.h"
#include "proxy/respond.h"
#include "proxy/worker.h"

/* Age and similar delta-seconds: 0 when not a number. */
static int64_t seconds(const char *v, size_t len)
{
        int64_t n = 0;

        for (size_t i = 0; i < len; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return 0;
                if (n < PX_CC_MAX_SECONDS)
                        n = n * 10 + (v[i] - '0');
        }
        return n;
}

static void facts_collect(const struct px_fetch *f, struct px_resp_facts *facts)
{
        const struct px_fields *rf = &f->rf;

        for (unsigned i = 0; i < rf->n; i++) {
                size_t len;
                const char *v = px_fields_val(rf, i, &len);

                if (px_fields_is(rf, i, "cache-control")) {
                        px_cc_parse(&facts->cc, v, len);
                } else if (px_fields_is(rf, i, "set-cookie")) {
                        facts->set_cookie = true;
                } else if (px_fields_is(rf, i, "vary")) {
                        facts->vary |= len > 0;
                } else if (px_fields_is(rf, i, "expires")) {
                        facts->has_expires = true;
                        facts->expires_ok = px_http_date_parse(v, len, &facts->expires_s) == 0;
                } else if (px_fields_is(rf, i, "date")) {
                        facts->has_date = px_http_date_parse(v, len, &facts->date_s) == 0;
                } else if (px_fields_is(rf, i, "age")) {
                        facts->age_s = seconds(v, len);
                }
        }
}

static bool is_dropped(const struct px_fields *rf, unsigned i)
{
        static const char *const names[] = {
                "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
                "trailer", "upgrade", "proxy-authenticate", "content-length", "age", "x-cache",
        };

        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
                if (px_fields_is(rf, i, names[k]))
                        return true;
        return px_fields_named_by_connection(rf, i);
}

/* The status line and the header lines to replay, into hb. */
static int head_block(const struct px_fetch *f, struct px_buf *hb)
{
        const struct px_fields *rf = &f->rf;
        int e;

        if (f->reason_len)
                e = px_buf_printf(hb, "HTTP/1.1 %u %.*s\r\n", f->status, (int)f->reason_len,
                                  rf->b.p);
        else
                e = px_buf_printf(hb, "HTTP/1.1 %u %s\r\n", f->status,
                                  http_status_str((enum http_status)f->status));
        for (unsigned i = 0; e == 0 && i < rf->n; i++) {
                if (is_dropped(rf, i))
                        continue;
                e = px_buf_printf(hb, "%.*s: %.*s\r\n", (int)rf->h[i].name_len,
                                  rf->b.p + rf->h[i].name_off, (int)rf->h[i].val_len,
                                  rf->b.p + rf->h[i].val_off);
        }
        return e;
}

/* Whether a body follows the head. */
static bool has_body(const struct px_fetch *f)
{
        const http_parser *p = &f->parser;

        if (f->upstream_head || f->status == 204 || f->status == 304)
                return false;
        return !(p->flags & F_CONTENTLENGTH) || p->content_length > 0;
}

/* Starts the stored copy: header (filled at the end) and head block. */
static void copy_start(struct px_fetch *f, const struct px_buf *hb)
{
        static const char zeros[PX_OBJ_HDR_BYTES];
        const http_parser *p = &f->parser;
        size_t body = (p->flags & F_CONTENTLENGTH) ? p->content_length : 16384;

        f->obj = px_obj_new(PX_OBJ_HDR_BYTES + hb->len + body);
        if (f->obj && (px_obj_add(&f->obj, zeros, sizeof(zeros)) < 0 ||
                       px_obj_add(&f->obj, hb->p, hb->len) < 0)) {
                px_obj_unref(f->obj);
                f->obj = NULL;
        }
        f->head_len = (uint32_t)hb->len;
}

/* The head the client gets: hb, framing, the proxy's lines. */
static int client_head(struct px_fetch *f, struct px_buf *hb)
{
        struct px_txn *t = f->sink;
        const http_parser *p = &f->parser;
        bool known = p->flags & F_CONTENTLENGTH, body = !f->client_head && has_body(f);
        char lines[256];
        size_t n;
        int e = 0;

        f->framing = PX_FRAME_NONE;
        if (known && (body || (f->status != 204 && f->status != 304)))
                e = px_buf_printf(hb, "Content-Length: %llu\r\n",
                                  (unsigned long long)p->content_length);
        if (body && known) {
                f->framing = PX_FRAME_LENGTH;
        } else if (body && (t->req.major > 1 || (t->req.major == 1 && t->req.minor >= 1))) {
                f->framing = PX_FRAME_CHUNKED;
                e = px_buf_adds(hb, "Transfer-Encoding: chunked\r\n");
        } else if (body) {
                f->framing = PX_FRAME_CLOSE;
                t->close_after = true;
        }
        n = px_respond_lines(t, lines, sizeof(lines), f->age_s);
        if (e == 0)
                e = px_buf_add(hb, lines, n);
        if (e == 0)
                e = px_buf_add(hb, "\r\n", 2);
        if (e == 0)
                e = px_stream_add(t, hb->p, hb->len);
        px_stats_status(&f->w->stats, f->status);
        if (e == 0 && f->framing == PX_FRAME_NONE) {
                px_stream_end(t, true);         /* HEAD, 204, 304: nothing more for it */
                t->fetch = NULL;
                f->sink = NULL;
        }
        return e;
}

int px_fetch_head(struct px_fetch *f)
{
        const struct px_config *cfg = f->w->sh->cfg;
        const http_parser *p = &f->parser;
        struct px_resp_facts facts = { .status = f->status };
        struct px_buf hb = { 0 };
        const char *why = "";
        int e;

        facts_collect(f, &facts);
        f->age_s = facts.age_s > UINT32_MAX ? UINT32_MAX : (uint32_t)facts.age_s;
        f->ttl_ms = 0;
        if (f->store)
                f->ttl_ms = px_fresh_ttl_ms(&facts, (int64_t)(px_wall_ms() / 1000),
                                            cfg->default_ttl_s, &why);
        if (f->ttl_ms && (p->flags & F_CONTENTLENGTH) && p->content_length > cfg->max_object_bytes)
                f->ttl_ms = 0;
        e = head_block(f, &hb);
        if (e == 0 && f->ttl_ms)
                copy_start(f, &hb);
        if (f->store && !f->obj)
                PX_STAT_INC(f->w->stats.not_stored);
        if (!f->obj)
                px_fetch_drop_copy(f);
        if (e == 0 && f->sink)
                e = client_head(f, &hb);
        px_buf_free(&hb);
        if (e < 0)
                return -1;
        if (!f->sink && !f->obj && has_body(f)) {
                f->discard = true;      /* nobody wants the body */
                http_parser_pause(&f->parser, 1);
        }
        return 0;
}
