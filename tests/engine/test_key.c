/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's key order (engine/key.h): the inline word-at-a-time compare
 * and the long-key path agree with memcmp's byte order, a shorter key
 * sorting before its extensions, for keys that differ in every position
 * and at every length around the word and inline boundaries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "engine/key.h"

TestSuite(key, .timeout = 10);

static int sign(int v)
{
        return (v > 0) - (v < 0);
}

static int reference(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
        size_t n = a_len < b_len ? a_len : b_len;
        int c = n ? memcmp(a, b, n) : 0;

        if (c)
                return sign(c);
        return a_len < b_len ? -1 : a_len > b_len;
}

Test(key, every_length_and_differing_byte_orders_as_memcmp)
{
        enum { MAX = 2 * ENG_KEY_CMP_INLINE + 9 };
        uint8_t a[MAX], b[MAX];

        for (size_t i = 0; i < MAX; i++)
                a[i] = (uint8_t)(0x7f + i * 37);
        for (size_t a_len = 0; a_len < MAX; a_len++) {
                for (size_t b_len = 0; b_len < MAX; b_len++) {
                        size_t n = a_len < b_len ? a_len : b_len;

                        memcpy(b, a, MAX);
                        cr_assert(eq(int, sign(eng_key_cmp(a, a_len, b, b_len)),
                                     reference(a, a_len, b, b_len)), "%zu vs %zu", a_len, b_len);
                        /* one byte differs, above and below (0x00 and 0xff
                         * catch a signed compare) */
                        for (size_t at = 0; at < n; at++) {
                                static const uint8_t vals[] = { 0x00, 0x01, 0x80, 0xfe, 0xff };

                                for (size_t v = 0; v < sizeof(vals); v++) {
                                        b[at] = vals[v];
                                        cr_assert(eq(int, sign(eng_key_cmp(a, a_len, b, b_len)),
                                                     reference(a, a_len, b, b_len)),
                                                  "%zu vs %zu, byte %zu = %u", a_len, b_len, at, vals[v]);
                                        cr_assert(eq(int, sign(eng_key_cmp(b, b_len, a, a_len)),
                                                     reference(b, b_len, a, a_len)));
                                }
                                b[at] = a[at];
                        }
                }
        }
}

Test(key, versions_order_newest_first_within_a_key)
{
        cr_expect(lt(int, eng_version_cmp("k", 1, 9, "k", 1, 3), 0));
        cr_expect(gt(int, eng_version_cmp("k", 1, 3, "k", 1, 9), 0));
        cr_expect(eq(int, eng_version_cmp("k", 1, 3, "k", 1, 3), 0));
        cr_expect(lt(int, eng_version_cmp("k", 1, 1, "k1", 2, 9), 0));
        cr_expect(lt(int, eng_version_cmp("", 0, 1, "\0", 1, 9), 0));
}
