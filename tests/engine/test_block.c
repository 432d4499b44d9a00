/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable blocks (engine/block.h): sealing and verification (checksum,
 * length, type, seed), prefix-compressed entries with restart points read
 * back in order, seek to the first of equal keys, empty keys and values,
 * restart intervals from 1 to many, and malformed content refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <scree/scree_errors.h>

#include "engine/block.h"

TestSuite(block, .timeout = 20);

/* Key i: "k" + 6 digits of i/2, so every key appears twice (two versions). */
static int key_of(unsigned i, char *buf)
{
        return snprintf(buf, 16, "k%06u", i / 2);
}

static uint8_t *build(unsigned n, unsigned interval, size_t *ret_len)
{
        struct eng_block_builder b;
        uint8_t *buf;

        eng_block_builder_init(&b, interval);
        for (unsigned i = 0; i < n; i++) {
                char k[16], v[16];
                int kl = key_of(i, k), vl = snprintf(v, sizeof(v), "v%u", i);

                cr_assert(eq(int, eng_block_builder_add(&b, k, (uint32_t)kl, v, (uint32_t)vl), 0));
        }
        *ret_len = eng_block_builder_size(&b);
        buf = malloc(*ret_len);
        cr_assert(eq(sz, eng_block_builder_finish(&b, buf), *ret_len));
        eng_block_builder_fini(&b);
        return buf;
}

static void expect_at(struct eng_block_iter *it, unsigned i)
{
        char k[16], v[16];
        int kl = key_of(i, k), vl = snprintf(v, sizeof(v), "v%u", i);

        cr_assert(it->valid, "entry %u missing (err %d)", i, it->err);
        cr_assert(eq(sz, it->key_len, (size_t)kl));
        cr_assert(eq(int, memcmp(it->key, k, (size_t)kl), 0));
        cr_assert(eq(u32, it->value_len, (uint32_t)vl));
        cr_assert(eq(int, memcmp(it->value, v, (size_t)vl), 0));
}

ParameterizedTestParameters(block, entries_read_back_in_order_and_seek_finds_first_version)
{
        static unsigned intervals[] = { 1, 2, 3, 16, 1000 };

        return cr_make_param_array(unsigned, intervals, sizeof(intervals) / sizeof(intervals[0]));
}

ParameterizedTest(unsigned *interval, block, entries_read_back_in_order_and_seek_finds_first_version)
{
        enum { N = 301 };
        struct eng_block_iter it;
        size_t len;
        uint8_t *buf = build(N, *interval, &len);
        unsigned i = 0;

        cr_assert(eq(int, eng_block_iter_init(&it, buf, len), 0));
        for (eng_block_iter_seek_first(&it); it.valid; eng_block_iter_next(&it))
                expect_at(&it, i++);
        cr_assert(eq(u32, i, N));
        cr_assert(eq(int, it.err, 0));
        for (unsigned j = 0; j < N; j += 2) {
                char k[16];
                int kl = key_of(j, k);

                eng_block_iter_seek(&it, k, (size_t)kl);
                expect_at(&it, j);      /* the first of the two versions */
        }
        eng_block_iter_seek(&it, "k000010x", 8);        /* between keys: next key */
        expect_at(&it, 22);
        eng_block_iter_seek(&it, "a", 1);
        expect_at(&it, 0);
        eng_block_iter_seek(&it, "z", 1);
        cr_expect(not(it.valid));
        cr_expect(eq(int, it.err, 0));
        eng_block_iter_fini(&it);
        free(buf);
}

Test(block, empty_keys_values_and_an_empty_block)
{
        struct eng_block_builder b;
        struct eng_block_iter it;
        uint8_t buf[64];
        size_t len;

        eng_block_builder_init(&b, 0);
        cr_assert(eng_block_builder_is_empty(&b));
        len = eng_block_builder_finish(&b, buf);
        cr_assert(eq(int, eng_block_iter_init(&it, buf, len), 0));
        eng_block_iter_seek_first(&it);
        cr_expect(not(it.valid));
        eng_block_iter_seek(&it, "a", 1);
        cr_expect(not(it.valid));

        cr_assert(eq(int, eng_block_builder_add(&b, "", 0, "", 0), 0));
        cr_assert(eq(int, eng_block_builder_add(&b, "a", 1, "", 0), 0));
        len = eng_block_builder_finish(&b, buf);
        cr_assert(eq(int, eng_block_iter_init(&it, buf, len), 0));
        eng_block_iter_seek(&it, "", 0);
        cr_assert(it.valid);
        cr_expect(eq(sz, it.key_len, 0));
        eng_block_iter_next(&it);
        cr_assert(it.valid);
        cr_expect(eq(sz, it.key_len, 1));
        eng_block_iter_next(&it);
        cr_expect(not(it.valid));
        eng_block_iter_fini(&it);
        eng_block_builder_fini(&b);
}

Test(block, reset_moves_an_iterator_to_other_content_keeping_its_key_buffer)
{
        size_t len1, len2;
        uint8_t *c1 = build(40, 16, &len1), *c2 = build(300, 4, &len2);
        uint8_t bad[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
        struct eng_block_iter it;
        const uint8_t *key_buf;

        cr_assert(eq(int, eng_block_iter_init(&it, c1, len1), 0));
        eng_block_iter_seek_first(&it);
        expect_at(&it, 0);
        key_buf = it.key;
        cr_assert(eq(int, eng_block_iter_reset(&it, c2, len2), 0));
        cr_expect(eq(ptr, (void *)it.key, (void *)key_buf), "no new allocation");
        cr_expect(not(it.valid));
        eng_block_iter_seek(&it, "k000100", 7);
        expect_at(&it, 200);
        for (unsigned i = 201; i < 300; i++) {
                eng_block_iter_next(&it);
                expect_at(&it, i);
        }
        cr_expect(eq(int, eng_block_iter_reset(&it, bad, sizeof(bad)), -SCREE_ECORRUPT));
        cr_expect(not(it.valid));
        eng_block_iter_fini(&it);       /* frees the kept buffer: ASan checks */
        free(c1);
        free(c2);
}

static uint8_t *sealed_page(size_t *ret_len, uint64_t seed)
{
        size_t clen;
        uint8_t *content = build(100, 16, &clen);
        size_t sealed = eng_block_sealed_size(clen);
        uint8_t *page = malloc(sealed);

        memcpy(page + ENG_BLOCK_HEADER_BYTES, content, clen);
        cr_assert(eq(sz, eng_block_seal(page, clen, ENG_BLOCK_DATA, seed), sealed));
        cr_assert(eq(sz, sealed % ENG_BLOCK_PAGE_BYTES, 0));
        free(content);
        *ret_len = sealed;
        return page;
}

Test(block, a_sealed_block_verifies_only_with_its_seed_type_and_length)
{
        size_t len, clen;
        uint64_t seed = eng_block_seed(7, 8192);
        uint8_t *page = sealed_page(&len, seed);
        const uint8_t *c;

        cr_assert(eq(int, eng_block_open(page, len, ENG_BLOCK_DATA, seed, &c, &clen), 0));
        cr_expect(eq(ptr, (void *)c, page + ENG_BLOCK_HEADER_BYTES));
        cr_expect(eq(int, eng_block_open(page, len, ENG_BLOCK_DATA, eng_block_seed(7, 4096), &c, &clen),
                     -SCREE_ECORRUPT), "wrong offset");
        cr_expect(eq(int, eng_block_open(page, len, ENG_BLOCK_DATA, eng_block_seed(8, 8192), &c, &clen),
                     -SCREE_ECORRUPT), "wrong file");
        cr_expect(eq(int, eng_block_open(page, len, ENG_BLOCK_INDEX, seed, &c, &clen), -SCREE_ECORRUPT),
                  "wrong type");
        cr_expect(eq(int, eng_block_open(page, len - 4096, ENG_BLOCK_DATA, seed, &c, &clen),
                     -SCREE_ECORRUPT), "truncated");
        cr_expect(eq(int, eng_block_open(page, 8, ENG_BLOCK_DATA, seed, &c, &clen), -SCREE_ECORRUPT));
        free(page);
}

Test(block, every_flipped_bit_in_the_used_bytes_is_caught)
{
        size_t len, clen;
        uint64_t seed = eng_block_seed(1, 0);
        uint8_t *page = sealed_page(&len, seed);
        const uint8_t *c;
        size_t used = 0;

        cr_assert(eq(int, eng_block_open(page, len, ENG_BLOCK_DATA, seed, &c, &clen), 0));
        used = clen + ENG_BLOCK_HEADER_BYTES;
        for (size_t i = 0; i < used; i += 7) {
                page[i] ^= 0x10;
                cr_assert(eq(int, eng_block_open(page, len, ENG_BLOCK_DATA, seed, &c, &clen),
                             -SCREE_ECORRUPT), "flip at byte %zu not caught", i);
                page[i] ^= 0x10;
        }
        free(page);
}

Test(block, malformed_content_is_corruption_not_a_crash)
{
        struct eng_block_iter it;
        size_t len;
        uint8_t *buf = build(40, 4, &len);
        uint8_t bad[8] = { 0 };

        /* restart count larger than the block */
        bad[4] = 0xff;
        cr_expect(eq(int, eng_block_iter_init(&it, bad, sizeof(bad)), -SCREE_ECORRUPT));
        cr_expect(eq(int, eng_block_iter_init(&it, bad, 3), -SCREE_ECORRUPT));
        /* a restart offset past the entries */
        buf[len - 8] = 0xff;
        buf[len - 7] = 0xff;
        cr_expect(eq(int, eng_block_iter_init(&it, buf, len), -SCREE_ECORRUPT));
        free(buf);

        /* an entry whose value length runs past the entries */
        buf = build(40, 4, &len);
        buf[2] = 0xff;  /* first entry: value_len becomes a 2-byte varint, ~13.8 KB */
        cr_assert(eq(int, eng_block_iter_init(&it, buf, len), 0));
        eng_block_iter_seek_first(&it);
        cr_expect(not(it.valid));
        cr_expect(eq(int, it.err, -SCREE_ECORRUPT));
        eng_block_iter_fini(&it);
        free(buf);
}
