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

/* <0, 0, >0 as key a sorts before, with, or after key b. */
static inline int eng_key_cmp(const void *a, size_t a_len, const void *b, size_t b_len)
{
        size_t n = a_len < b_len ? a_len : b_len;
        int c = n ? memcmp(a, b, n) : 0;

        if (c)
                return c;
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
