/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RESP reply writer; contract in resp_write.h, encodings in
 * docs/protocol.md.
 *
 * The output is a FIFO of nodes. A data node covers unsent bytes of a
 * block; a block may be covered by several nodes (a deferred header splits
 * the tail's block in two nodes around the slot) and counts them in refs,
 * and is freed (or kept as the spare) when the last one is consumed. A slot
 * node carries its header bytes inline. Only the tail node grows, through
 * wpos..wend, the free space of its block; bytes before wpos never change,
 * which is what lets a send be in flight while replies are appended.
 *
 * When everything is consumed the tail's block is rewound, so a connection
 * that keeps up with its replies reuses one block without allocating.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/check.h"
#include "base/compiler.h"
#include "net/resp_write.h"

/* A type byte, 20 digits (or '-' and 19), CR LF. */
#define HDR_MAX 24

struct net_out_block {
        uint32_t refs;          /* nodes covering this block */
        size_t cap;
        char data[];
};

struct net_out_node {
        struct net_out_node *next;
        struct net_out_block *blk;      /* NULL: a deferred header slot */
        char *data;                     /* first unsent byte */
        size_t len;                     /* unsent bytes */
        bool open;                      /* a slot not yet set */
        char hdr[HDR_MAX];              /* a slot's bytes */
};

static const char CRLF[2] = { '\r', '\n' };

void net_resp_out_init(struct net_resp_out *o, size_t chunk_bytes)
{
        memset(o, 0, sizeof(*o));
        if (chunk_bytes == 0)
                chunk_bytes = NET_RESP_DEFAULT_CHUNK_BYTES;
        o->chunk_bytes = chunk_bytes < 64 ? 64 : chunk_bytes;
        o->proto = NET_RESP2;
}

static void block_unref(struct net_resp_out *o, struct net_out_block *b)
{
        if (!b || --b->refs > 0)
                return;
        if (!o->spare && b->cap == o->chunk_bytes) {
                o->spare = b;
                return;
        }
        o->mem_bytes -= sizeof(*b) + b->cap;
        free(b);
}

void net_resp_out_fini(struct net_resp_out *o)
{
        struct net_out_node *n, *next;

        if (!o)
                return;
        for (n = o->head; n; n = next) {
                next = n->next;
                block_unref(o, n->blk);
                free(n);
        }
        for (n = o->free_nodes; n; n = next) {
                next = n->next;
                free(n);
        }
        free(o->spare);
        memset(o, 0, sizeof(*o));
}

void net_resp_out_set_proto(struct net_resp_out *o, enum net_resp_proto proto)
{
        SCREE_ASSERT(proto == NET_RESP2 || proto == NET_RESP3);
        o->proto = (uint8_t)proto;
}

size_t net_resp_out_pending_bytes(const struct net_resp_out *o)
{
        return o->pending_bytes;
}

size_t net_resp_out_mem_bytes(const struct net_resp_out *o)
{
        return o->mem_bytes;
}

void net_resp_out_shape(const struct net_resp_out *o, size_t *ret_head_bytes,
                        size_t *ret_more_blocks, size_t *ret_more_mem_bytes)
{
        const struct net_out_node *n = o->head;
        const struct net_out_block *last;
        size_t more = 0, mem = 0;

        while (n && n->len == 0 && !n->open)
                n = n->next;
        *ret_head_bytes = n ? n->len : 0;
        last = n ? n->blk : NULL;
        for (n = n ? n->next : NULL; n; n = n->next) {
                if (n->len == 0 && !n->open)
                        continue;
                /* a block split by a deferred header counts once */
                if (n->blk && n->blk != last) {
                        more++;
                        mem += sizeof(*n->blk) + n->blk->cap;
                }
                mem += sizeof(*n);
                last = n->blk ? n->blk : last;
        }
        *ret_more_blocks = more;
        *ret_more_mem_bytes = mem;
}

bool net_resp_out_failed(const struct net_resp_out *o)
{
        return o->failed;
}

static int oom(struct net_resp_out *o)
{
        o->failed = true;
        return -ENOMEM;
}

static struct net_out_node *node_new(struct net_resp_out *o)
{
        struct net_out_node *n = o->free_nodes;

        if (n) {
                o->free_nodes = n->next;
        } else {
                n = malloc(sizeof(*n));
                if (!n)
                        return NULL;
                o->mem_bytes += sizeof(*n);
        }
        memset(n, 0, offsetof(struct net_out_node, hdr));
        return n;
}

static void node_put(struct net_resp_out *o, struct net_out_node *n)
{
        if (!n)
                return;
        n->next = o->free_nodes;
        o->free_nodes = n;
}

static void node_link(struct net_resp_out *o, struct net_out_node *n)
{
        if (o->tail)
                o->tail->next = n;
        else
                o->head = n;
        o->tail = n;
}

/* Starts a new tail node on a new block with room for at least need bytes. */
static int new_tail_block(struct net_resp_out *o, size_t need)
{
        size_t cap = need > o->chunk_bytes ? need : o->chunk_bytes;
        struct net_out_node *n = node_new(o);
        struct net_out_block *b;

        if (!n)
                return oom(o);
        if (cap == o->chunk_bytes && o->spare) {
                b = o->spare;
                o->spare = NULL;
        } else {
                b = malloc(sizeof(*b) + cap);
                if (!b) {
                        node_put(o, n);
                        return oom(o);
                }
                b->cap = cap;
                o->mem_bytes += sizeof(*b) + cap;
        }
        b->refs = 1;
        n->blk = b;
        n->data = b->data;
        node_link(o, n);
        o->wpos = b->data;
        o->wend = b->data + cap;
        return 0;
}

/* Room for n contiguous bytes at the tail: the write position, or NULL. */
static inline char *reserve(struct net_resp_out *o, size_t n)
{
        if (unlikely(o->failed))
                return NULL;
        if (unlikely((size_t)(o->wend - o->wpos) < n) && new_tail_block(o, n) < 0)
                return NULL;
        return o->wpos;
}

/* Publishes n bytes written at the position reserve() returned. */
static inline void commit(struct net_resp_out *o, size_t n)
{
        o->wpos += n;
        o->tail->len += n;
        o->pending_bytes += n;
}

/* CR and LF would end a simple string early; they become spaces. */
static void copy_sanitized(char *dst, const char *src, size_t n)
{
        for (size_t i = 0; i < n; i++)
                dst[i] = (src[i] == '\r' || src[i] == '\n') ? ' ' : src[i];
}

/* Appends n bytes (sanitized if asked), filling the tail block before
 * starting another; a big remainder gets a block of its own size. */
static int append(struct net_resp_out *o, const void *src, size_t n, bool sanitize)
{
        const char *s = src;

        if (unlikely(o->failed))
                return -ENOMEM;
        while (n > 0) {
                size_t room = (size_t)(o->wend - o->wpos);
                size_t k;

                if (room == 0 && new_tail_block(o, n) < 0)
                        return -ENOMEM;
                room = (size_t)(o->wend - o->wpos);
                k = n < room ? n : room;
                if (sanitize)
                        copy_sanitized(o->wpos, s, k);
                else
                        memcpy(o->wpos, s, k);
                commit(o, k);
                s += k;
                n -= k;
        }
        return 0;
}

/* Writes v in decimal at dst; returns the length (at most 20). */
static size_t fmt_u64(char *dst, uint64_t v)
{
        char tmp[20];
        size_t n = 0;

        do {
                tmp[sizeof(tmp) - ++n] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        memcpy(dst, tmp + sizeof(tmp) - n, n);
        return n;
}

static size_t fmt_i64(char *dst, int64_t v)
{
        if (v < 0) {
                dst[0] = '-';
                return 1 + fmt_u64(dst + 1, (uint64_t)-(v + 1) + 1);
        }
        return fmt_u64(dst, (uint64_t)v);
}

/* type, v, CR LF (negative: a leading '-'). */
static int add_line_num(struct net_resp_out *o, char type, int64_t v)
{
        char *p = reserve(o, HDR_MAX);
        size_t n;

        if (!p)
                return -ENOMEM;
        p[0] = type;
        n = 1 + fmt_i64(p + 1, v);
        p[n++] = '\r';
        p[n++] = '\n';
        commit(o, n);
        return 0;
}

static size_t fmt_header(char *dst, char type, uint64_t n)
{
        size_t len;

        dst[0] = type;
        len = 1 + fmt_u64(dst + 1, n);
        dst[len++] = '\r';
        dst[len++] = '\n';
        return len;
}

/* A string reply: type, the text sanitized, CR LF. Leading and trailing
 * CR and LF are dropped first (as Redis trims an error's newlines). */
static int add_line_text(struct net_resp_out *o, char type, const char *s, size_t n)
{
        while (n > 0 && (s[0] == '\r' || s[0] == '\n')) {
                s++;
                n--;
        }
        while (n > 0 && (s[n - 1] == '\r' || s[n - 1] == '\n'))
                n--;
        if (n <= 256) {
                char *p = reserve(o, n + 3);

                if (!p)
                        return -ENOMEM;
                p[0] = type;
                copy_sanitized(p + 1, s, n);
                memcpy(p + 1 + n, CRLF, 2);
                commit(o, n + 3);
                return 0;
        }
        if (append(o, &type, 1, false) < 0 || append(o, s, n, true) < 0)
                return -ENOMEM;
        return append(o, CRLF, 2, false);
}

int net_resp_add_simple(struct net_resp_out *o, const char *text, size_t len)
{
        return add_line_text(o, '+', text, len);
}

void net_resp_errstats_count(struct net_resp_errstats *st, const char *text, size_t len)
{
        const char *sp = memchr(text, ' ', len < NET_RESP_ERR_CODE_MAX ? len : NET_RESP_ERR_CODE_MAX);
        size_t n = sp ? (size_t)(sp - text) : 0;
        uint32_t i;

        if (n == 0) {           /* no code word: Redis counts it as ERR */
                text = "ERR";
                n = 3;
        }
        st->total++;
        for (i = 0; i < st->n_codes; i++)
                if (strncmp(st->code[i], text, n) == 0 && st->code[i][n] == 0)
                        break;
        if (i == st->n_codes) {
                if (i == NET_RESP_ERR_CODES)
                        return;         /* too many codes: only the total */
                memcpy(st->code[i], text, n);
                st->code[i][n] = 0;
                st->n_codes++;
        }
        st->count[i]++;
}

void net_resp_out_set_errstats(struct net_resp_out *o, struct net_resp_errstats *st)
{
        o->errstats = st;
}

uint32_t net_resp_out_errors(const struct net_resp_out *o)
{
        return o->n_errors;
}

void net_resp_out_note_error(struct net_resp_out *o)
{
        o->n_errors++;
}

int net_resp_add_error(struct net_resp_out *o, const char *text, size_t len)
{
        o->n_errors++;
        if (o->errstats)
                net_resp_errstats_count(o->errstats, text, len);
        return add_line_text(o, '-', text, len);
}

int net_resp_add_errorf(struct net_resp_out *o, const char *fmt, ...)
{
        char small[256], *text = small;
        va_list ap;
        int n, r;

        va_start(ap, fmt);
        n = vsnprintf(small, sizeof(small), fmt, ap);
        va_end(ap);
        if (n < 0)
                return net_resp_add_error(o, "ERR", 3);
        if ((size_t)n >= sizeof(small)) {
                text = malloc((size_t)n + 1);
                if (!text)
                        return oom(o);
                va_start(ap, fmt);
                vsnprintf(text, (size_t)n + 1, fmt, ap);
                va_end(ap);
        }
        r = net_resp_add_error(o, text, (size_t)n);
        if (text != small)
                free(text);
        return r;
}

int net_resp_add_int(struct net_resp_out *o, int64_t v)
{
        return add_line_num(o, ':', v);
}

/* A bulk-like reply: type, len, CR LF, data, CR LF; small ones in one go. */
static int add_blob(struct net_resp_out *o, char type, const void *data, size_t len)
{
        char *p;
        size_t n;

        if (len <= 256) {
                p = reserve(o, HDR_MAX + len + 2);
                if (!p)
                        return -ENOMEM;
                n = fmt_header(p, type, len);
                memcpy(p + n, data, len);
                memcpy(p + n + len, CRLF, 2);
                commit(o, n + len + 2);
                return 0;
        }
        p = reserve(o, HDR_MAX);
        if (!p)
                return -ENOMEM;
        commit(o, fmt_header(p, type, len));
        if (append(o, data, len, false) < 0)
                return -ENOMEM;
        return append(o, CRLF, 2, false);
}

int net_resp_add_bulk(struct net_resp_out *o, const void *data, size_t len)
{
        return add_blob(o, '$', data, len);
}

int net_resp_add_raw(struct net_resp_out *o, const void *data, size_t len)
{
        return append(o, data, len, false);
}

int net_resp_add_null(struct net_resp_out *o)
{
        if (o->proto == NET_RESP3)
                return append(o, "_\r\n", 3, false);
        return append(o, "$-1\r\n", 5, false);
}

int net_resp_add_null_array(struct net_resp_out *o)
{
        if (o->proto == NET_RESP3)
                return append(o, "_\r\n", 3, false);
        return append(o, "*-1\r\n", 5, false);
}

/* An aggregate's header bytes for the connection's protocol. */
static size_t fmt_agg(const struct net_resp_out *o, char *dst, enum net_resp_agg kind, uint64_t n)
{
        static const char type3[NET_RESP_AGG_MAX] = { '*', '%', '~', '>' };

        SCREE_ASSERT(kind >= 0 && kind < NET_RESP_AGG_MAX);
        if (o->proto == NET_RESP3)
                return fmt_header(dst, type3[kind], n);
        return fmt_header(dst, '*', kind == NET_RESP_MAP ? 2 * n : n);
}

int net_resp_add_agg(struct net_resp_out *o, enum net_resp_agg kind, uint64_t n)
{
        char *p = reserve(o, HDR_MAX);

        if (!p)
                return -ENOMEM;
        commit(o, fmt_agg(o, p, kind, n));
        return 0;
}

int net_resp_add_array(struct net_resp_out *o, uint64_t n)
{
        return net_resp_add_agg(o, NET_RESP_ARRAY, n);
}

int net_resp_add_map(struct net_resp_out *o, uint64_t n_pairs)
{
        return net_resp_add_agg(o, NET_RESP_MAP, n_pairs);
}

int net_resp_add_set(struct net_resp_out *o, uint64_t n)
{
        return net_resp_add_agg(o, NET_RESP_SET, n);
}

int net_resp_add_push(struct net_resp_out *o, uint64_t n)
{
        return net_resp_add_agg(o, NET_RESP_PUSH, n);
}

size_t net_resp_fmt_double(char *buf, double d)
{
        int n = 0;

        if (isnan(d))
                return (size_t)snprintf(buf, NET_RESP_DOUBLE_MAX, "nan");
        if (isinf(d))
                return (size_t)snprintf(buf, NET_RESP_DOUBLE_MAX, d < 0 ? "-inf" : "inf");
        if (d == 0)
                return (size_t)snprintf(buf, NET_RESP_DOUBLE_MAX, signbit(d) ? "-0" : "0");
        if (fabs(d) <= 0x1p62 && d == (double)(int64_t)d) {
                size_t len = fmt_i64(buf, (int64_t)d);

                buf[len] = '\0';
                return len;
        }
        /* fewest digits that read back exactly: 17 always do */
        for (int prec = 15; prec <= 17; prec++) {
                n = snprintf(buf, NET_RESP_DOUBLE_MAX, "%.*g", prec, d);
                if (strtod(buf, NULL) == d)
                        break;
        }
        return (size_t)n;
}

int net_resp_add_double(struct net_resp_out *o, double d)
{
        char text[NET_RESP_DOUBLE_MAX];
        size_t n = net_resp_fmt_double(text, d);
        char *p;

        if (o->proto != NET_RESP3)
                return add_blob(o, '$', text, n);
        p = reserve(o, 1 + NET_RESP_DOUBLE_MAX + 2);
        if (!p)
                return -ENOMEM;
        p[0] = ',';
        memcpy(p + 1, text, n);
        memcpy(p + 1 + n, CRLF, 2);
        commit(o, n + 3);
        return 0;
}

int net_resp_add_bool(struct net_resp_out *o, bool b)
{
        if (o->proto == NET_RESP3)
                return append(o, b ? "#t\r\n" : "#f\r\n", 4, false);
        return append(o, b ? ":1\r\n" : ":0\r\n", 4, false);
}

int net_resp_add_verbatim(struct net_resp_out *o, const char fmt[3], const void *data, size_t len)
{
        char *p;

        if (o->proto != NET_RESP3)
                return add_blob(o, '$', data, len);
        p = reserve(o, HDR_MAX + 4);
        if (!p)
                return -ENOMEM;
        commit(o, fmt_header(p, '=', len + 4));
        if (append(o, fmt, 3, false) < 0 || append(o, ":", 1, false) < 0 ||
            append(o, data, len, false) < 0)
                return -ENOMEM;
        return append(o, CRLF, 2, false);
}

int net_resp_add_bignum(struct net_resp_out *o, const char *digits, size_t len)
{
        if (o->proto != NET_RESP3)
                return add_blob(o, '$', digits, len);
        if (append(o, "(", 1, false) < 0 || append(o, digits, len, true) < 0)
                return -ENOMEM;
        return append(o, CRLF, 2, false);
}

struct net_out_node *net_resp_add_deferred(struct net_resp_out *o)
{
        struct net_out_node *slot, *rest = NULL;
        struct net_out_block *b = o->tail ? o->tail->blk : NULL;

        if (o->failed)
                return NULL;
        slot = node_new(o);
        if (b && o->wpos < o->wend)
                rest = node_new(o);     /* the tail block's free space, after the slot */
        if (!slot || (b && o->wpos < o->wend && !rest)) {
                node_put(o, slot);
                node_put(o, rest);
                oom(o);
                return NULL;
        }
        slot->open = true;
        slot->data = slot->hdr;
        node_link(o, slot);
        o->n_open++;
        if (rest) {
                b->refs++;
                rest->blk = b;
                rest->data = o->wpos;
                node_link(o, rest);
        } else {
                o->wpos = o->wend = NULL;       /* the next write starts a block */
        }
        return slot;
}

void net_resp_set_deferred(struct net_resp_out *o, struct net_out_node *slot,
                           enum net_resp_agg kind, uint64_t n)
{
        if (!slot)
                return;
        SCREE_ASSERT(slot->open && !slot->blk);
        slot->len = fmt_agg(o, slot->hdr, kind, n);
        slot->open = false;
        o->pending_bytes += slot->len;
        o->n_open--;
}

int net_resp_out_iov(const struct net_resp_out *o, struct iovec *iov, int max_iov,
                     size_t *ret_bytes)
{
        size_t bytes = 0;
        int i = 0;

        for (struct net_out_node *n = o->head; n && i < max_iov && !n->open; n = n->next) {
                if (n->len == 0)
                        continue;
                iov[i].iov_base = n->data;
                iov[i].iov_len = n->len;
                bytes += n->len;
                i++;
        }
        if (ret_bytes)
                *ret_bytes = bytes;
        return i;
}

/* Unlinks the head node, giving back its block reference. */
static void pop_head(struct net_resp_out *o)
{
        struct net_out_node *h = o->head;

        o->head = h->next;
        if (!o->head)
                o->tail = NULL;
        block_unref(o, h->blk);
        node_put(o, h);
}

void net_resp_out_consume(struct net_resp_out *o, size_t n)
{
        struct net_out_node *h;

        while ((h = o->head) != NULL) {
                size_t k = n < h->len ? n : h->len;

                SCREE_ASSERT(!h->open || n == 0);
                h->data += k;
                h->len -= k;
                o->pending_bytes -= k;
                n -= k;
                if (h->len > 0 || h->open || (h == o->tail && h->blk && n == 0))
                        break;
                if (h == o->tail)
                        o->wpos = o->wend = NULL;
                pop_head(o);
        }
        SCREE_ASSERT(n == 0);
        h = o->head;
        /* drained: rewind the tail's block, or drop it if it was a big one */
        if (h && h == o->tail && h->len == 0 && h->blk && h->blk->refs == 1) {
                if (h->blk->cap > o->chunk_bytes) {
                        o->wpos = o->wend = NULL;
                        pop_head(o);
                        return;
                }
                h->data = o->wpos = h->blk->data;
                o->wend = h->blk->data + h->blk->cap;
        }
}
