/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client request parsing and the origin request (request.h).
 *
 * http_parser (libhttp-parser, the parser Node.js used for a decade)
 * checks the syntax: methods, the target, header tokens, Content-Length
 * and chunked framing (it refuses both at once, and a second
 * Content-Length, the usual smuggling vectors). The callbacks copy each
 * piece into the request's own buffer (fields.h), so the connection
 * reads into a per-worker buffer and never keeps input around, and stop
 * the parser -- a callback returning nonzero -- with the status to answer
 * in c->err_status.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "proxy/cachectl.h"
#include "proxy/conn.h"
#include "proxy/object.h"
#include "proxy/proxy_int.h"
#include "proxy/request.h"

/* Counts n more bytes of request head; fails with 431 past the limit. */
static int head_bytes(struct px_conn *c, size_t n)
{
        c->head_bytes += n;
        if (c->head_bytes > c->w->sh->cfg->max_header_bytes) {
                c->err_status = 431;
                return -1;
        }
        return 0;
}

static int on_message_begin(http_parser *p)
{
        struct px_conn *c = p->data;

        return px_conn_request_begin(c);
}

static int on_url(http_parser *p, const char *at, size_t len)
{
        struct px_conn *c = p->data;
        struct px_req *r = &c->cur->req;

        if (head_bytes(c, len) < 0)
                return -1;
        if (px_buf_add(&r->f.b, at, len) < 0) {
                c->err_status = 503;
                return -1;
        }
        r->url_len += (uint32_t)len;
        return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
        struct px_conn *c = p->data;
        struct px_fields *f = &c->cur->req.f;

        if (head_bytes(c, len + 4) < 0)
                return -1;
        if (px_fields_name(f, at, len) < 0) {
                c->err_status = 503;
                return -1;
        }
        if (f->too_many) {
                c->err_status = 431;
                return -1;
        }
        return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
        struct px_conn *c = p->data;

        if (head_bytes(c, len) < 0)
                return -1;
        if (px_fields_value(&c->cur->req.f, at, len) < 0) {
                c->err_status = 503;
                return -1;
        }
        return 0;
}

/* The target of an absolute-form request ("http://host/path"): host and
 * path into *ret_host / *ret_target; 0 or -EINVAL. */
static int absolute_form(const char *url, size_t len, const char **host, size_t *host_len,
                         const char **target, size_t *target_len)
{
        struct http_parser_url u;

        http_parser_url_init(&u);
        if (http_parser_parse_url(url, len, 0, &u) != 0 || !(u.field_set & (1 << UF_HOST)))
                return -EINVAL;
        *host = url + u.field_data[UF_HOST].off;
        *host_len = u.field_data[UF_HOST].len;
        if (u.field_set & (1 << UF_PORT))
                *host_len = (size_t)(u.field_data[UF_PORT].off + u.field_data[UF_PORT].len -
                                     u.field_data[UF_HOST].off);
        if (u.field_set & (1 << UF_PATH)) {
                *target = url + u.field_data[UF_PATH].off;
                *target_len = len - u.field_data[UF_PATH].off;
                if (u.field_set & (1 << UF_FRAGMENT))
                        *target_len = u.field_data[UF_FRAGMENT].off - 1 -
                                      u.field_data[UF_PATH].off;
        } else {
                *target = "/";
                *target_len = 1;
        }
        return 0;
}

/* The flags of one header field i of r. */
static void flag_field(struct px_req *r, unsigned i)
{
        size_t len;
        const char *v = px_fields_val(&r->f, i, &len);

        if (px_fields_is(&r->f, i, "cache-control")) {
                struct px_cc cc = { 0 };

                px_cc_parse(&cc, v, len);
                if (cc.flags & PX_CC_NO_CACHE)
                        r->flags |= PX_REQ_NO_CACHE;
                if (cc.flags & PX_CC_NO_STORE)
                        r->flags |= PX_REQ_NO_STORE;
        } else if (px_fields_is(&r->f, i, "pragma")) {
                if (px_list_has(v, len, "no-cache", 8))
                        r->flags |= PX_REQ_NO_CACHE;
        } else if (px_fields_is(&r->f, i, "authorization")) {
                r->flags |= PX_REQ_AUTH;
        } else if (px_fields_is(&r->f, i, "range")) {
                r->flags |= PX_REQ_RANGE;
        } else if (px_fields_is(&r->f, i, "if-none-match") ||
                   px_fields_is(&r->f, i, "if-modified-since")) {
                r->flags |= PX_REQ_COND;
        } else if (px_fields_is(&r->f, i, "expect")) {
                if (len == 12 && strncasecmp(v, "100-continue", 12) == 0)
                        r->flags |= PX_REQ_EXPECT;
        }
}

/* Checks r's headers and makes its key. 0, or the status to answer. */
static unsigned analyze(struct px_req *r)
{
        const char *host = NULL, *target = r->f.b.p;
        size_t host_len = 0, target_len = r->url_len;
        unsigned n_host = 0;

        for (unsigned i = 0; i < r->f.n; i++) {
                if (px_fields_is(&r->f, i, "host")) {
                        host = px_fields_val(&r->f, i, &host_len);
                        n_host++;
                } else {
                        flag_field(r, i);
                }
        }
        if (n_host > 1)
                return 400;
        if (target_len && target[0] != '/' && target[0] != '*' &&
            absolute_form(r->f.b.p, r->url_len, &host, &host_len, &target, &target_len) < 0)
                return 400;
        if (!host && r->major == 1 && r->minor >= 1)
                return 400;
        if (!host)
                host_len = 0;           /* HTTP/1.0 without Host: the empty host */
        else if (!px_host_is_valid(host, host_len))
                return 400;
        r->key.len = 0;
        if (px_buf_reserve(&r->key, host_len + 1 + target_len) < 0)
                return 503;
        r->key.len = px_key_build(r->key.p, host ? host : "", host_len, target, target_len);
        for (size_t i = 0; i < host_len; i++)
                if (r->key.p[i] >= 'A' && r->key.p[i] <= 'Z')
                        r->key.p[i] = (char)(r->key.p[i] | 0x20);
        r->host_len = (uint32_t)host_len;
        return 0;
}

static int on_headers_complete(http_parser *p)
{
        struct px_conn *c = p->data;
        struct px_req *r = &c->cur->req;
        static const char go_on[] = "HTTP/1.1 100 Continue\r\n\r\n";
        unsigned status;

        r->method = p->method;
        r->major = p->http_major;
        r->minor = p->http_minor;
        if (p->upgrade) {
                c->err_status = 501;    /* CONNECT, or Upgrade: not a proxy for those */
                return -1;
        }
        status = r->major == 1 ? analyze(r) : 505;
        if (status == 0 && (p->flags & F_CONTENTLENGTH) &&
            p->content_length > c->w->sh->cfg->max_body_bytes)
                status = 413;
        if (status) {
                c->err_status = status;
                return -1;
        }
        if ((r->flags & PX_REQ_EXPECT) && !c->head &&
            ((p->flags & F_CHUNKED) || p->content_length > 0))
                (void)!send(c->fd, go_on, sizeof(go_on) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
        struct px_conn *c = p->data;
        struct px_req *r = &c->cur->req;

        if (r->body.len + len > c->w->sh->cfg->max_body_bytes) {
                c->err_status = 413;
                return -1;
        }
        if (px_buf_add(&r->body, at, len) < 0) {
                c->err_status = 503;
                return -1;
        }
        px_conn_body_progress(c);
        return 0;
}

static int on_message_complete(http_parser *p)
{
        struct px_conn *c = p->data;

        c->cur->req.keep_alive = http_should_keep_alive(p);
        return px_conn_request_end(c);
}

const http_parser_settings px_req_settings = {
        .on_message_begin = on_message_begin,
        .on_url = on_url,
        .on_header_field = on_header_field,
        .on_header_value = on_header_value,
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_message_complete = on_message_complete,
};

const char *px_req_target(const struct px_req *r, size_t *ret_len)
{
        *ret_len = r->key.len - r->host_len - 1;
        return r->key.p + r->host_len + 1;
}

/* Headers never forwarded: hop-by-hop (RFC 9110 7.6.1) and those the
 * proxy writes itself. */
static bool is_dropped(const struct px_fields *f, unsigned i, bool for_store)
{
        static const char *const always[] = {
                "connection", "keep-alive", "proxy-connection", "te", "trailer",
                "transfer-encoding", "upgrade", "proxy-authorization", "host",
                "content-length", "expect", "x-forwarded-for",
        };
        static const char *const conditional[] = {
                "if-none-match", "if-modified-since", "if-match", "if-unmodified-since",
                "if-range", "range",
        };

        for (size_t k = 0; k < sizeof(always) / sizeof(always[0]); k++)
                if (px_fields_is(f, i, always[k]))
                        return true;
        for (size_t k = 0; for_store && k < sizeof(conditional) / sizeof(conditional[0]); k++)
                if (px_fields_is(f, i, conditional[k]))
                        return true;
        return false;
}

/* The X-Forwarded-For value: the client's, then peer. */
static int forwarded_for(const struct px_fields *f, const char *peer, struct px_buf *out)
{
        int r = px_buf_adds(out, "X-Forwarded-For: ");

        for (unsigned i = 0; r == 0 && i < f->n; i++) {
                size_t len;
                const char *v;

                if (!px_fields_is(f, i, "x-forwarded-for"))
                        continue;
                v = px_fields_val(f, i, &len);
                r = px_buf_printf(out, "%.*s, ", (int)len, v);
        }
        return r ? r : px_buf_printf(out, "%s\r\n", peer);
}

int px_req_upstream(const struct px_req *r, unsigned method, bool for_store, const char *peer,
                    struct px_buf *out)
{
        const struct px_fields *f = &r->f;
        size_t tlen;
        const char *target = px_req_target(r, &tlen);
        int e;

        e = px_buf_printf(out, "%s %.*s HTTP/1.1\r\n", http_method_str((enum http_method)method),
                          (int)tlen, target);
        if (e == 0 && r->host_len)
                e = px_buf_printf(out, "Host: %.*s\r\n", (int)r->host_len, r->key.p);
        for (unsigned i = 0; e == 0 && i < f->n; i++) {
                if (is_dropped(f, i, for_store) || px_fields_named_by_connection(f, i))
                        continue;
                e = px_buf_printf(out, "%.*s: %.*s\r\n", (int)f->h[i].name_len,
                                  f->b.p + f->h[i].name_off, (int)f->h[i].val_len,
                                  f->b.p + f->h[i].val_off);
        }
        if (e == 0)
                e = forwarded_for(f, peer, out);
        if (e == 0 && (r->body.len || method == HTTP_POST || method == HTTP_PUT ||
                       method == HTTP_PATCH))
                e = px_buf_printf(out, "Content-Length: %zu\r\n", r->body.len);
        if (e == 0)
                e = px_buf_add(out, "\r\n", 2);
        if (e == 0)
                e = px_buf_add(out, r->body.p, r->body.len);
        return e;
}

void px_req_reset(struct px_req *r)
{
        px_fields_reset(&r->f);
        if (r->body.cap > 64 * 1024)
                px_buf_free(&r->body);
        r->body.len = 0;
        r->key.len = 0;
        r->url_len = 0;
        r->host_len = 0;
        r->flags = 0;
        r->keep_alive = false;
}

void px_req_fini(struct px_req *r)
{
        px_fields_fini(&r->f);
        px_buf_free(&r->body);
        px_buf_free(&r->key);
}
