/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Write batches (engine/batch.h): round trip with every kind of entry, and
 * the decoder's answer to every damaged payload: short, zero count, bad
 * flags, lengths past the end, missing and trailing entries.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/batch.h"

TestSuite(batch, .timeout = 20);

static void add(struct eng_batch *b, enum eng_entry_kind kind, const char *key, const char *value,
                uint64_t expiry)
{
        struct eng_entry e = {
                .key = (const uint8_t *)key, .key_len = (uint32_t)strlen(key),
                .value = (const uint8_t *)value, .value_len = value ? (uint32_t)strlen(value) : 0,
                .kind = kind, .expiry_ms = expiry,
        };

        cr_assert(eq(int, eng_batch_add(b, &e), 0));
}

static void make(struct eng_batch *b)
{
        eng_batch_init(b);
        add(b, ENG_ENTRY_VALUE, "alpha", "one", 0);
        add(b, ENG_ENTRY_TOMBSTONE, "beta", NULL, 0);
        add(b, ENG_ENTRY_VALUE, "gamma", "", 1700000000000ull);
        add(b, ENG_ENTRY_VALUE, "", "empty key", 0);
}

/* Decodes everything; returns the first error or the count decoded. */
static int drain(const uint8_t *p, size_t len)
{
        struct eng_batch_iter it;
        struct eng_entry e;
        int r = eng_batch_iter_init(&it, p, len, 1), n = 0;

        if (r)
                return r;
        while ((r = eng_batch_iter_next(&it, &e)) == 1)
                n++;
        return r ? r : n;
}

Test(batch, round_trip)
{
        struct eng_batch b;
        struct eng_batch_iter it;
        struct eng_entry e;

        make(&b);
        cr_assert(eq(u32, b.count, 4));
        cr_assert(eq(int, eng_batch_iter_init(&it, b.buf, b.len, 100), 0));
        cr_assert(eq(int, eng_batch_iter_next(&it, &e), 1));
        cr_assert(eq(u64, e.seq, 100));
        cr_assert(eq(int, (int)e.kind, ENG_ENTRY_VALUE));
        cr_assert(eq(int, memcmp(e.key, "alpha", 5), 0));
        cr_assert(eq(u32, e.value_len, 3));
        cr_assert(eq(int, eng_batch_iter_next(&it, &e), 1));
        cr_assert(eq(int, (int)e.kind, ENG_ENTRY_TOMBSTONE));
        cr_assert(eq(u32, e.value_len, 0));
        cr_assert(eq(u64, e.seq, 101));
        cr_assert(eq(int, eng_batch_iter_next(&it, &e), 1));
        cr_assert(eq(u64, e.expiry_ms, 1700000000000ull));
        cr_assert(eq(u32, e.value_len, 0));
        cr_assert(eq(int, eng_batch_iter_next(&it, &e), 1));
        cr_assert(eq(u32, e.key_len, 0));
        cr_assert(eq(u64, e.seq, 103));
        cr_assert(eq(int, eng_batch_iter_next(&it, &e), 0));

        eng_batch_clear(&b);
        cr_assert(eq(u32, b.count, 0));
        add(&b, ENG_ENTRY_VALUE, "x", "y", 0);
        cr_assert(eq(int, drain(b.buf, b.len), 1));
        eng_batch_fini(&b);
}

Test(batch, rejects_bad_kind)
{
        struct eng_batch b;
        struct eng_entry e = { .key = (const uint8_t *)"k", .key_len = 1, .kind = ENG_ENTRY_KIND_INVALID };

        eng_batch_init(&b);
        cr_assert(eq(int, eng_batch_add(&b, &e), -EINVAL));
        eng_batch_fini(&b);
}

Test(batch, every_truncation_is_corrupt)
{
        struct eng_batch b;

        make(&b);
        for (size_t len = 0; len < b.len; len++)
                cr_assert(eq(int, drain(b.buf, len), -SCREE_ECORRUPT), "len %zu", len);
        cr_assert(eq(int, drain(b.buf, b.len), 4));
        eng_batch_fini(&b);
}

Test(batch, damaged_headers_and_trailing_bytes)
{
        struct eng_batch b;
        uint8_t copy[256];

        make(&b);
        cr_assert(lt(sz, b.len + 1, sizeof(copy)));
        memcpy(copy, b.buf, b.len);
        copy[0] = 0;            /* zero count */
        cr_assert(eq(int, drain(copy, b.len), -SCREE_ECORRUPT));
        memcpy(copy, b.buf, b.len);
        copy[0] = 5;            /* one entry more than there is */
        cr_assert(eq(int, drain(copy, b.len), -SCREE_ECORRUPT));
        memcpy(copy, b.buf, b.len);
        copy[0] = 3;            /* one entry less: the last is trailing garbage */
        cr_assert(eq(int, drain(copy, b.len), -SCREE_ECORRUPT));
        memcpy(copy, b.buf, b.len);
        copy[ENG_BATCH_HEADER_BYTES] = 0x83;    /* unknown flag bit */
        cr_assert(eq(int, drain(copy, b.len), -SCREE_ECORRUPT));
        memcpy(copy, b.buf, b.len);
        copy[ENG_BATCH_HEADER_BYTES] = 0x03;    /* kind 3 */
        cr_assert(eq(int, drain(copy, b.len), -SCREE_ECORRUPT));
        memcpy(copy, b.buf, b.len);
        copy[ENG_BATCH_HEADER_BYTES + 1] = 0x7f; /* key length past the end */
        cr_assert(eq(int, drain(copy, b.len), -SCREE_ECORRUPT));
        memcpy(copy, b.buf, b.len);
        copy[b.len] = 0;        /* one trailing byte */
        cr_assert(eq(int, drain(copy, b.len + 1), -SCREE_ECORRUPT));
        eng_batch_fini(&b);
}

/* Two batches appended into one decode as both, in order, with consecutive
 * seqs: what the shard logs when it groups writes into one record. */
Test(batch, append_joins_batches_in_order)
{
        struct eng_batch a, b, j;
        struct eng_batch_iter it;
        struct eng_entry e;

        make(&a);
        eng_batch_init(&b);
        add(&b, ENG_ENTRY_VALUE, "delta", "four", 0);
        eng_batch_init(&j);
        cr_assert(eq(int, eng_batch_append(&j, a.buf, a.len), 0));
        cr_assert(eq(int, eng_batch_append(&j, b.buf, b.len), 0));
        cr_assert(eq(u32, j.count, 5));
        cr_assert(eq(sz, j.len, a.len + b.len - ENG_BATCH_HEADER_BYTES));
        cr_assert(eq(int, drain(j.buf, j.len), 5));
        cr_assert(eq(int, eng_batch_iter_init(&it, j.buf, j.len, 10), 0));
        for (int i = 0; i < 5; i++)
                cr_assert(eq(int, eng_batch_iter_next(&it, &e), 1));
        cr_assert(eq(u64, e.seq, 14));
        cr_assert(eq(int, memcmp(e.key, "delta", 5), 0));
        cr_assert(eq(int, memcmp(e.value, "four", 4), 0));
        eng_batch_clear(&j);
        cr_assert(eq(int, eng_batch_append(&j, b.buf, b.len), 0));
        cr_assert(eq(int, drain(j.buf, j.len), 1));
        eng_batch_fini(&a);
        eng_batch_fini(&b);
        eng_batch_fini(&j);
}
