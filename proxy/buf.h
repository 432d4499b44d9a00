/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A growable byte buffer (scree-proxy): bytes [0, len) of p, room for
 * cap. A zeroed px_buf is empty and valid; px_buf_free returns it to
 * that state. Pointers into p are valid until the next call that may
 * grow it. One thread at a time.
 */
#ifndef SCREE_PROXY_BUF_H
#define SCREE_PROXY_BUF_H

#include <stddef.h>

struct px_buf {
        char *p;
        size_t len, cap;
};

/* Makes room for more bytes after len. 0, or -ENOMEM (b unchanged). */
int px_buf_reserve(struct px_buf *b, size_t more);

/* Appends n bytes of p (borrowed). 0, or -ENOMEM (b unchanged). */
int px_buf_add(struct px_buf *b, const void *p, size_t n);

/* Appends the NUL-terminated s. 0, or -ENOMEM. */
int px_buf_adds(struct px_buf *b, const char *s);

/* Appends printf-formatted text (no NUL kept in len). 0, or -ENOMEM. */
int px_buf_printf(struct px_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Frees b's memory and empties it. */
void px_buf_free(struct px_buf *b);

#endif
