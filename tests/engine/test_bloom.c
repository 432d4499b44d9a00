/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bloom filter (engine/bloom.h): no false negatives, about 1% false
 * positives at 10 bits per key, encode/parse round trip, corrupt meta
 * refused, an empty filter answers "absent".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/bloom.h"

TestSuite(bloom, .timeout = 20);

static uint64_t key_hash(unsigned i)
{
        char k[32];
        int n = snprintf(k, sizeof(k), "key-%08u", i);

        return eng_bloom_hash(k, (size_t)n);
}

static uint8_t *build(unsigned n, unsigned bits, size_t *ret_len)
{
        struct eng_bloom_builder b;
        uint8_t *buf;

        eng_bloom_builder_init(&b, bits);
        for (unsigned i = 0; i < n; i++)
                cr_assert(eq(int, eng_bloom_builder_add(&b, key_hash(i)), 0));
        *ret_len = eng_bloom_builder_size(&b);
        buf = malloc(*ret_len);
        cr_assert(not(eq(ptr, buf, NULL)));
        eng_bloom_builder_encode(&b, buf);
        eng_bloom_builder_fini(&b);
        return buf;
}

Test(bloom, every_added_key_may_be_present_and_misses_are_about_one_percent)
{
        enum { N = 100000 };
        struct eng_bloom f;
        size_t len, fp = 0;
        uint8_t *buf = build(N, 10, &len);

        cr_assert(eq(int, eng_bloom_parse(&f, buf, len), 0));
        cr_expect(eq(sz, len, ENG_BLOOM_META_BYTES + (size_t)((N * 10 + 511) / 512) * 64));
        for (unsigned i = 0; i < N; i++)
                cr_assert(eng_bloom_may_contain(&f, key_hash(i)), "false negative for key %u", i);
        for (unsigned i = N; i < 2 * N; i++)
                fp += eng_bloom_may_contain(&f, key_hash(i));
        /* Blocked bloom at 10 bits/key: ~1.0-1.3%; 2% would mean a broken hash. */
        cr_expect(lt(sz, fp, (size_t)N * 2 / 100), "false positives: %zu of %d", fp, N);
        cr_expect(gt(sz, fp, 0));
        free(buf);
}

Test(bloom, more_bits_per_key_means_fewer_false_positives)
{
        enum { N = 50000 };
        size_t fp[2] = { 0, 0 };
        unsigned bits[2] = { 5, 16 };

        for (int j = 0; j < 2; j++) {
                struct eng_bloom f;
                size_t len;
                uint8_t *buf = build(N, bits[j], &len);

                cr_assert(eq(int, eng_bloom_parse(&f, buf, len), 0));
                for (unsigned i = N; i < 2 * N; i++)
                        fp[j] += eng_bloom_may_contain(&f, key_hash(i));
                free(buf);
        }
        cr_expect(lt(sz, fp[1] * 4, fp[0]), "5 bits: %zu, 16 bits: %zu", fp[0], fp[1]);
}

Test(bloom, an_empty_filter_has_one_line_and_says_absent)
{
        struct eng_bloom f;
        size_t len;
        uint8_t *buf = build(0, 10, &len);

        cr_assert(eq(sz, len, ENG_BLOOM_META_BYTES + 64));
        cr_assert(eq(int, eng_bloom_parse(&f, buf, len), 0));
        for (unsigned i = 0; i < 1000; i++)
                cr_expect(not(eng_bloom_may_contain(&f, key_hash(i))));
        free(buf);
}

Test(bloom, inconsistent_meta_is_corruption)
{
        struct eng_bloom f;
        size_t len;
        uint8_t *buf = build(1000, 10, &len);

        cr_expect(eq(int, eng_bloom_parse(&f, buf, len - 1), -SCREE_ECORRUPT));
        cr_expect(eq(int, eng_bloom_parse(&f, buf, ENG_BLOOM_META_BYTES - 1), -SCREE_ECORRUPT));
        buf[4] = 0;     /* k = 0 */
        cr_expect(eq(int, eng_bloom_parse(&f, buf, len), -SCREE_ECORRUPT));
        buf[4] = ENG_BLOOM_MAX_PROBES + 1;
        cr_expect(eq(int, eng_bloom_parse(&f, buf, len), -SCREE_ECORRUPT));
        buf[4] = 7;
        buf[0]++;       /* n_lines disagrees with the length */
        cr_expect(eq(int, eng_bloom_parse(&f, buf, len), -SCREE_ECORRUPT));
        free(buf);
}
