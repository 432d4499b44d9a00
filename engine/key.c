/* SPDX-License-Identifier: Apache-2.0 */
/* The engine's key order for long keys; see key.h. Pure; any thread. */
#include "engine/key.h"

int eng_key_cmp_long(const void *a, size_t a_len, const void *b, size_t b_len)
{
        size_t n = a_len < b_len ? a_len : b_len;
        int c = memcmp(a, b, n);

        if (c)
                return c;
        return a_len < b_len ? -1 : a_len > b_len;
}
