/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's one sort order, shared by memtables, SSTables and every
 * merge over them: keys ascending as unsigned bytes (a shorter key before
 * its extensions), and for one key the newest sequence number first.
 * Pure; any thread.
 */
#ifndef SCREE_ENGINE_KEY_H
#define SCREE_ENGINE_KEY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/endian.h"

/* Keys up to this long are compared inline, a big-endian word at a time:
 * a merge or a seek compares tens of millions of short keys a second, and
 * a call into libc's memcmp costs more than the compare. */
#define ENG_KEY_CMP_INLINE 64u

/* eng_key_cmp for keys longer than ENG_KEY_CMP_INLINE (key.c). */
int eng_key_cmp_long(const void *a, size_t a_len, const void *b, size_t b_len);

/* <0, 0, >0 as key a sorts before, with, or after key b. */
static inline int eng_key_cmp(const void *a, size_t a_len, const void *b, size_t b_len)
{
        const uint8_t *x = a, *y = b;
        size_t n = a_len < b_len ? a_len : b_len;

        if (n > ENG_KEY_CMP_INLINE)
                return eng_key_cmp_long(a, a_len, b, b_len);
        for (; n >= 8; n -= 8, x += 8, y += 8) {
                uint64_t p = be64_get(x), q = be64_get(y);

                if (p != q)
                        return p < q ? -1 : 1;
        }
        for (; n; n--, x++, y++)
                if (*x != *y)
                        return *x < *y ? -1 : 1;
        return a_len < b_len ? -1 : a_len > b_len;
}

/* The same for versions: (key, seq) pairs, newest seq first within a key. */
static inline int eng_version_cmp(const void *a, size_t a_len, uint64_t a_seq, const void *b,
                                  size_t b_len, uint64_t b_seq)
{
        int c = eng_key_cmp(a, a_len, b, b_len);

        if (c)
                return c;
        return a_seq > b_seq ? -1 : a_seq < b_seq;
}

#endif
