/* SPDX-License-Identifier: Apache-2.0 */
/*
 * px_buf: a byte buffer that doubles its room when it grows (buf.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/buf.h"

int px_buf_reserve(struct px_buf *b, size_t more)
{
        size_t cap = b->cap ? b->cap : 256;
        char *p;

        if (b->len + more <= b->cap)
                return 0;
        if (b->len + more < b->len)
                return -ENOMEM;
        while (cap < b->len + more)
                cap *= 2;
        p = realloc(b->p, cap);
        if (!p)
                return -ENOMEM;
        b->p = p;
        b->cap = cap;
        return 0;
}

int px_buf_add(struct px_buf *b, const void *p, size_t n)
{
        if (n == 0)
                return 0;
        if (px_buf_reserve(b, n) < 0)
                return -ENOMEM;
        memcpy(b->p + b->len, p, n);
        b->len += n;
        return 0;
}

int px_buf_adds(struct px_buf *b, const char *s)
{
        return px_buf_add(b, s, strlen(s));
}

int px_buf_printf(struct px_buf *b, const char *fmt, ...)
{
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(b->p ? b->p + b->len : NULL, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        if ((size_t)n >= b->cap - b->len) {
                if (px_buf_reserve(b, (size_t)n + 1) < 0)
                        return -ENOMEM;
                va_start(ap, fmt);
                n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
                va_end(ap);
        }
        b->len += (size_t)n;
        return 0;
}

void px_buf_free(struct px_buf *b)
{
        free(b->p);
        b->p = NULL;
        b->len = b->cap = 0;
}
