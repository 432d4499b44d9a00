/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog's format versions (engine/catalog_format.c,
 * docs/format/catalog.md): version 2 carries a table's per-partition rate
 * limits, round trips them, and refuses a damaged one; a version 1
 * encoding -- what builds before the limits wrote -- still decodes, its
 * tables without limits, and is written back as version 2. The rest of
 * the encoding's tests are test_catalog.c's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "engine/catalog.h"
#include "tests/engine/catalog_helpers.h"

TestSuite(catalog_format, .timeout = 30);

static char err[256];

static const enum eng_tuple_type U64_BYTES[] = { ENG_TUPLE_U64, ENG_TUPLE_BYTES };

/* Creates table path (hashed on its first part, 3 tablets) in *c with
 * the given limits. */
static void create(struct eng_catalog **c, const char *path, uint32_t reads, uint32_t writes)
{
        struct eng_catalog_table_spec s = {
                .path = path, .key_format = ENG_CATALOG_KEYS_TUPLE, .mode = ENG_CATALOG_HASHED,
                .n_parts = 2, .parts = U64_BYTES, .hash_parts = 1,
                .options = eng_catalog_options_default(), .n_tablets = 3,
        };
        struct eng_catalog *n = NULL;

        s.options.partition_reads_per_sec = reads;
        s.options.partition_writes_per_sec = writes;
        cr_assert(eq(int, eng_catalog_create_table(*c, &s, &n, NULL, err, sizeof(err)), 0), "%s",
                  err);
        eng_catalog_unref(*c);
        *c = n;
}

/* Two shards, /app with a limited table and an unlimited one, and the
 * initial catalog's Redis databases. */
static struct eng_catalog *sample(void)
{
        struct eng_catalog *c = NULL, *n = NULL;

        cr_assert(eq(int, eng_catalog_initial(2, 2, &c), 0));
        cr_assert(eq(int, eng_catalog_mkdir(c, "/app", &n, err, sizeof(err)), 0), "%s", err);
        eng_catalog_unref(c);
        c = n;
        create(&c, "/app/hot", 5, 100);
        create(&c, "/app/cold", 0, 0);
        create(&c, "/app/max", UINT32_MAX, 1);
        return c;
}

static const struct eng_catalog_table *table(const struct eng_catalog *c, const char *path)
{
        const struct eng_catalog_table *t = NULL;

        cr_assert(eq(int, eng_catalog_lookup(c, path, &t), 0), "%s", path);
        return t;
}

/*
 * Rewrites a version 2 encoding (len bytes at b) as version 1 would have
 * written the same catalog: each table's options without their last 8
 * bytes (the limits), format version 1, checksums recomputed. Returns the
 * new length (the bytes are moved down in place).
 */
static size_t to_v1(uint8_t *b, size_t len)
{
        uint8_t *p = b + ENG_CATALOG_HEADER_BYTES + 32, *end = b + len;
        uint32_t n_dirs = le32_get(b + ENG_CATALOG_HEADER_BYTES + 20);
        uint32_t n_tables = le32_get(b + ENG_CATALOG_HEADER_BYTES + 24);
        uint32_t n_dropped = le32_get(b + ENG_CATALOG_HEADER_BYTES + 28);

        cr_assert(eq(u32, le32_get(b + 8), 2));
        for (uint32_t i = 0; i < n_dirs; i++)
                p += 2 + le16_get(p);
        p += 4 * (size_t)n_dropped;
        for (uint32_t i = 0; i < n_tables; i++) {
                uint32_t n_tablets;

                p += 4;                                 /* id */
                p += 2 + le16_get(p);                   /* path */
                p += 4 + p[2];                          /* format, mode, parts, hash parts; types */
                p += 32;                                /* version 1's options */
                memmove(p, p + 8, (size_t)(end - p - 8));
                end -= 8;
                n_tablets = le32_get(p);
                p += 4;
                for (uint32_t j = 0; j < n_tablets; j++)
                        p += 10 + le16_get(p + 8);
        }
        cr_assert(p == end, "walked the whole encoding");
        len = (size_t)(end - b);
        le32_put(b + 8, 1);
        le64_put(b + 16, len - ENG_CATALOG_HEADER_BYTES);
        catalog_reseal(b, len);
        return len;
}

Test(catalog_format, limits_round_trip_in_version_2)
{
        struct eng_catalog *c = sample(), *d = NULL;
        size_t len, len2;
        uint8_t *b = catalog_bytes(c, &len), *b2;

        cr_expect(eq(u32, le32_get(b + 8), ENG_CATALOG_FORMAT_VERSION));
        cr_expect(eq(u32, ENG_CATALOG_FORMAT_VERSION, 2));
        cr_assert(eq(int, eng_catalog_decode(b, len, &d), 0));
        cr_expect(eq(u32, table(d, "/app/hot")->options.partition_reads_per_sec, 5));
        cr_expect(eq(u32, table(d, "/app/hot")->options.partition_writes_per_sec, 100));
        cr_expect(eq(u32, table(d, "/app/cold")->options.partition_reads_per_sec, 0));
        cr_expect(eq(u32, table(d, "/app/cold")->options.partition_writes_per_sec, 0));
        cr_expect(eq(u32, table(d, "/app/max")->options.partition_reads_per_sec, UINT32_MAX));
        cr_expect(eq(u32, table(d, "/app/max")->options.partition_writes_per_sec, 1));
        b2 = catalog_bytes(d, &len2);
        cr_assert(eq(sz, len2, len));
        cr_expect(eq(int, memcmp(b, b2, len), 0), "decode then encode gives the same bytes");
        free(b2);
        free(b);
        eng_catalog_unref(d);
        eng_catalog_unref(c);
}

Test(catalog_format, alter_changes_the_limits_only)
{
        struct eng_catalog *c = sample(), *n = NULL;
        struct eng_catalog_options o = table(c, "/app/hot")->options;

        o.partition_writes_per_sec = 7;
        o.partition_reads_per_sec = 0;
        cr_assert(eq(int, eng_catalog_alter_table(c, "/app/hot", &o, &n, err, sizeof(err)), 0), "%s",
                  err);
        cr_expect(eq(u32, table(n, "/app/hot")->options.partition_writes_per_sec, 7));
        cr_expect(eq(u32, table(n, "/app/hot")->options.partition_reads_per_sec, 0));
        cr_expect(eq(u32, table(c, "/app/hot")->options.partition_writes_per_sec, 100),
                  "the old snapshot keeps its limits");
        cr_expect(eq(u64, table(n, "/app/hot")->options.split_size_bytes,
                     table(c, "/app/hot")->options.split_size_bytes));
        eng_catalog_unref(n);
        eng_catalog_unref(c);
}

Test(catalog_format, version_1_decodes_without_limits)
{
        struct eng_catalog *c = sample(), *d = NULL, *e = NULL;
        size_t len, len1, len2;
        uint8_t *b = catalog_bytes(c, &len), *b2;

        len1 = to_v1(b, len);
        cr_assert(eq(sz, len1, len - 8 * (size_t)eng_catalog_n_tables(c)));
        cr_assert(eq(int, eng_catalog_decode(b, len1, &d), 0));
        cr_expect(eq(u32, eng_catalog_n_tables(d), eng_catalog_n_tables(c)));
        for (uint32_t i = 0; i < eng_catalog_n_tables(d); i++) {
                const struct eng_catalog_table *t = eng_catalog_table_at(d, i);

                cr_expect(eq(u32, t->options.partition_reads_per_sec, 0), "%s", t->path);
                cr_expect(eq(u32, t->options.partition_writes_per_sec, 0), "%s", t->path);
                cr_expect(eq(u64, t->options.split_size_bytes,
                             eng_catalog_table_at(c, i)->options.split_size_bytes));
        }
        /* Written back as version 2, which reads as the same catalog. */
        b2 = catalog_bytes(d, &len2);
        cr_expect(eq(sz, len2, len));
        cr_expect(eq(u32, le32_get(b2 + 8), 2));
        cr_assert(eq(int, eng_catalog_decode(b2, len2, &e), 0));
        cr_expect(eq(u64, eng_catalog_version(e), eng_catalog_version(c)));
        cr_expect(eq(sz, to_v1(b2, len2), len1));
        cr_expect(eq(int, memcmp(b2, b, len1), 0), "version 1 -> 2 -> 1 gives the same bytes");
        free(b2);
        free(b);
        eng_catalog_unref(e);
        eng_catalog_unref(d);
        eng_catalog_unref(c);
}

/* A version 1 encoding read as version 2 (or the other way round) runs
 * out of bytes or has bytes left: corrupt, never misread. */
Test(catalog_format, the_version_field_decides_the_layout)
{
        struct eng_catalog *c = sample(), *d = NULL;
        size_t len, len1;
        uint8_t *b = catalog_bytes(c, &len);

        le32_put(b + 8, 1);
        catalog_reseal(b, len);
        cr_expect(eq(int, eng_catalog_decode(b, len, &d), -SCREE_ECORRUPT), "v2 bytes as v1");
        le32_put(b + 8, 2);
        catalog_reseal(b, len);
        len1 = to_v1(b, len);
        le32_put(b + 8, 2);
        catalog_reseal(b, len1);
        cr_expect(eq(int, eng_catalog_decode(b, len1, &d), -SCREE_ECORRUPT), "v1 bytes as v2");
        cr_expect(d == NULL);
        free(b);
        eng_catalog_unref(c);
}

/* Every u32 is a valid limit: a changed one, resealed, reads as the new
 * value (the body checksum is what catches damage). */
Test(catalog_format, any_limit_value_decodes)
{
        struct eng_catalog *c = sample(), *d = NULL;
        size_t len;
        uint8_t *b = catalog_bytes(c, &len);
        uint8_t want[8] = { 5, 0, 0, 0, 100, 0, 0, 0 };
        uint8_t *at = memmem(b + ENG_CATALOG_HEADER_BYTES, len - ENG_CATALOG_HEADER_BYTES, want, 8);

        cr_assert(at != NULL, "/app/hot's limits are in the encoding");
        le32_put(at, 123456789);
        le32_put(at + 4, 0);
        catalog_reseal(b, len);
        cr_assert(eq(int, eng_catalog_decode(b, len, &d), 0));
        cr_expect(eq(u32, table(d, "/app/hot")->options.partition_reads_per_sec, 123456789));
        cr_expect(eq(u32, table(d, "/app/hot")->options.partition_writes_per_sec, 0));
        eng_catalog_unref(d);
        at[0] ^= 1;
        cr_expect(eq(int, eng_catalog_decode(b, len, &d), -SCREE_ECORRUPT), "not resealed");
        free(b);
        eng_catalog_unref(c);
}
