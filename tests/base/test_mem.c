/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growable arrays (base/mem.h mem_grow): growth by doubling, the array kept
 * when it is big enough, and a non-NULL result for a zero-sized first
 * request (an empty key once read as ENOMEM); tables (mem_alloc_table)
 * come zeroed and writable, small (calloc) or big (huge pages);
 * mem_copy_short copies exactly n bytes at every length.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/mem.h"

TestSuite(mem, .timeout = 10);

Test(mem, grow_doubles_and_keeps_the_contents)
{
        size_t cap = 0;
        int *a = mem_grow(NULL, &cap, 5, sizeof(int));

        cr_assert(not(eq(ptr, a, NULL)));
        cr_expect(eq(sz, cap, 16));
        for (int i = 0; i < 5; i++)
                a[i] = i;
        cr_expect(eq(ptr, mem_grow(a, &cap, 16, sizeof(int)), a), "big enough: same array");
        a = mem_grow(a, &cap, 40, sizeof(int));
        cr_assert(not(eq(ptr, a, NULL)));
        cr_expect(eq(sz, cap, 64));
        for (int i = 0; i < 5; i++)
                cr_expect(eq(int, a[i], i));
        free(a);
}

Test(mem, a_zero_sized_first_request_still_returns_an_array)
{
        size_t cap = 0;
        void *p = mem_grow(NULL, &cap, 0, 1);

        cr_assert(not(eq(ptr, p, NULL)));
        cr_expect(gt(sz, cap, 0));
        free(p);
}

Test(mem, tables_are_zeroed_writable_and_freed_small_or_big)
{
        static const size_t sizes[] = { 0, 16, 4096, (2u << 20) - 16, 2u << 20, 6u << 20 };

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                size_t n = sizes[i];
                unsigned char *p = mem_alloc_table(n);
                bool zero = true;

                cr_assert(not(eq(ptr, p, NULL)), "size %zu", n);
                for (size_t j = 0; j < n; j += 509)
                        zero = zero && p[j] == 0;
                cr_expect(zero, "size %zu not zeroed", n);
                if (n) {
                        p[0] = 1;
                        p[n - 1] = 2;
                        cr_expect(eq(u8, p[n - 1], 2));
                }
                mem_free_table(p, n);
        }
        mem_free_table(NULL, 0);
}

/* Every length from 0 to 70, at every offset in a line: exactly the n
 * bytes are copied, none before or after. */
Test(mem, copy_short_copies_exactly_n_bytes)
{
        uint8_t src[128], dst[160];

        for (size_t i = 0; i < sizeof(src); i++)
                src[i] = (uint8_t)(i * 7 + 1);
        for (size_t n = 0; n <= 70; n++) {
                for (size_t at = 0; at < 16; at++) {
                        memset(dst, 0xee, sizeof(dst));
                        mem_copy_short(dst + 8 + at, src + at, n);
                        for (size_t i = 0; i < sizeof(dst); i++) {
                                bool inside = i >= 8 + at && i < 8 + at + n;
                                uint8_t want = inside ? src[i - 8] : 0xee;

                                cr_assert(eq(u8, dst[i], want), "n %zu at %zu byte %zu", n, at, i);
                        }
                }
        }
}
