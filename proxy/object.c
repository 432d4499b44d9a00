/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cache keys, the stored response format and shared response buffers
 * (object.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/object.h"

static void le16_put(uint8_t *p, uint16_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
}

static void le32_put(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static void le64_put(uint8_t *p, uint64_t v)
{
        for (int i = 0; i < 8; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le_get(const uint8_t *p, int n)
{
        uint64_t v = 0;

        for (int i = n - 1; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

void px_obj_hdr_encode(void *dst, unsigned status, uint32_t head_len, uint32_t age_s,
                       uint64_t stored_ms, uint64_t body_len)
{
        uint8_t *p = dst;

        le32_put(p, PX_OBJ_MAGIC);
        le16_put(p + 4, (uint16_t)status);
        le16_put(p + 6, 0);
        le32_put(p + 8, head_len);
        le32_put(p + 12, age_s);
        le64_put(p + 16, stored_ms);
        le64_put(p + 24, body_len);
}

int px_obj_decode(const void *data, size_t len, struct px_obj_view *ret)
{
        const uint8_t *p = data;
        uint64_t head_len, body_len;

        if (len < PX_OBJ_HDR_BYTES || le_get(p, 4) != PX_OBJ_MAGIC)
                return -EINVAL;
        head_len = le_get(p + 8, 4);
        body_len = le_get(p + 24, 8);
        if (head_len > len - PX_OBJ_HDR_BYTES || body_len != len - PX_OBJ_HDR_BYTES - head_len)
                return -EINVAL;
        *ret = (struct px_obj_view){
                .status = (unsigned)le_get(p + 4, 2),
                .age_s = (uint32_t)le_get(p + 12, 4),
                .stored_ms = le_get(p + 16, 8),
                .head = (const char *)p + PX_OBJ_HDR_BYTES,
                .head_len = head_len,
                .body = (const char *)p + PX_OBJ_HDR_BYTES + head_len,
                .body_len = body_len,
        };
        return 0;
}

const char *px_head_find(const char *head, size_t len, const char *name, size_t *ret_len)
{
        size_t nlen = strlen(name);
        const char *end = head + len, *line = memchr(head, '\n', len);

        /* Skip the status line; then one header per line. */
        while (line && ++line < end) {
                const char *eol = memchr(line, '\n', (size_t)(end - line));
                const char *v, *ve;

                if (!eol)
                        break;
                if ((size_t)(eol - line) > nlen && line[nlen] == ':' &&
                    strncasecmp(line, name, nlen) == 0) {
                        v = line + nlen + 1;
                        ve = eol;
                        while (v < ve && (*v == ' ' || *v == '\t'))
                                v++;
                        while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                                ve--;
                        *ret_len = (size_t)(ve - v);
                        return v;
                }
                line = eol;
        }
        return NULL;
}

bool px_host_is_valid(const char *host, size_t len)
{
        if (len == 0 || len > 255)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = host[i];

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']'))
                        return false;
        }
        return true;
}

size_t px_key_build(char *dst, const char *host, size_t host_len, const char *target,
                    size_t target_len)
{
        memcpy(dst, host, host_len);
        dst[host_len] = 0;
        memcpy(dst + host_len + 1, target, target_len);
        return host_len + 1 + target_len;
}

size_t px_key_successor(const char *p, size_t len, char *dst)
{
        while (len > 0 && (uint8_t)p[len - 1] == 0xFF)
                len--;
        if (len == 0)
                return 0;
        memcpy(dst, p, len);
        dst[len - 1] = (char)((uint8_t)dst[len - 1] + 1);
        return len;
}

/* ---- shared objects ---- */

struct px_obj *px_obj_new(size_t cap)
{
        struct px_obj *o = malloc(sizeof(*o) + cap);

        if (!o)
                return NULL;
        atomic_init(&o->refs, 1);
        o->len = 0;
        o->cap = cap;
        return o;
}

int px_obj_add(struct px_obj **o, const void *p, size_t n)
{
        struct px_obj *b = *o;

        if (b->len + n > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;

                while (cap < b->len + n)
                        cap *= 2;
                b = realloc(b, sizeof(*b) + cap);
                if (!b)
                        return -ENOMEM;
                b->cap = cap;
                *o = b;
        }
        memcpy(b->data + b->len, p, n);
        b->len += n;
        return 0;
}

struct px_obj *px_obj_ref(struct px_obj *o)
{
        atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
        return o;
}

void px_obj_unref(struct px_obj *o)
{
        if (o && atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
                free(o);
}
