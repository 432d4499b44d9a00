/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Header fields collected from http_parser's callbacks (fields.h).
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "proxy/fields.h"

void px_fields_reset(struct px_fields *f)
{
        if (f->b.cap > 64 * 1024)
                px_buf_free(&f->b);
        f->b.len = 0;
        f->n = 0;
        f->in_value = false;
        f->too_many = false;
}

void px_fields_fini(struct px_fields *f)
{
        px_buf_free(&f->b);
        f->n = 0;
}

int px_fields_name(struct px_fields *f, const char *at, size_t len)
{
        if (f->in_value || f->n == 0) {
                if (f->n == PX_MAX_HEADERS) {
                        f->too_many = true;
                        return 0;
                }
                f->h[f->n++] = (struct px_hdr){ .name_off = (uint32_t)f->b.len,
                                                .val_off = (uint32_t)f->b.len };
                f->in_value = false;
        }
        if (f->too_many)
                return 0;
        if (px_buf_add(&f->b, at, len) < 0)
                return -ENOMEM;
        f->h[f->n - 1].name_len += (uint32_t)len;
        f->h[f->n - 1].val_off = (uint32_t)f->b.len;
        return 0;
}

int px_fields_value(struct px_fields *f, const char *at, size_t len)
{
        if (f->too_many || f->n == 0)
                return 0;
        f->in_value = true;
        if (px_buf_add(&f->b, at, len) < 0)
                return -ENOMEM;
        f->h[f->n - 1].val_len += (uint32_t)len;
        return 0;
}

bool px_fields_is(const struct px_fields *f, unsigned i, const char *name)
{
        size_t n = strlen(name);

        return f->h[i].name_len == n && strncasecmp(f->b.p + f->h[i].name_off, name, n) == 0;
}

const char *px_fields_val(const struct px_fields *f, unsigned i, size_t *ret_len)
{
        const char *v = f->b.p + f->h[i].val_off;
        size_t len = f->h[i].val_len;

        while (len && (*v == ' ' || *v == '\t')) {
                v++;
                len--;
        }
        while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
                len--;
        *ret_len = len;
        return v;
}

bool px_list_has(const char *v, size_t len, const char *token, size_t tlen)
{
        size_t i = 0;

        while (i < len) {
                size_t s, e;

                while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
                        i++;
                s = i;
                while (i < len && v[i] != ',')
                        i++;
                e = i;
                while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
                        e--;
                if (e - s == tlen && strncasecmp(v + s, token, tlen) == 0)
                        return true;
        }
        return false;
}

bool px_fields_named_by_connection(const struct px_fields *f, unsigned i)
{
        for (unsigned k = 0; k < f->n; k++) {
                size_t len;
                const char *v;

                if (!px_fields_is(f, k, "connection"))
                        continue;
                v = px_fields_val(f, k, &len);
                if (px_list_has(v, len, f->b.p + f->h[i].name_off, f->h[i].name_len))
                        return true;
        }
        return false;
}
