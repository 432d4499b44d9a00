/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the table-argument tests (test_tbl_args.c, test_tbl_schema.c):
 * a test catalog's tables, argument lines split into words, and keys
 * encoded for them. Header-only; tests only.
 */
#ifndef SCREE_TESTS_NET_TBL_HELPERS_H
#define SCREE_TESTS_NET_TBL_HELPERS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include "engine/catalog.h"
#include "engine/key.h"
#include "net/resp_write.h"
#include "net/tbl_args.h"

/* Case tables leave the fields a case does not use zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* Every snapshot a test made: tables point into them until the test ends. */
static struct eng_catalog *cats[16];
static size_t n_cats;

static inline void cats_free(void)
{
        while (n_cats)
                eng_catalog_unref(cats[--n_cats]);
}

static const struct net_tbl_limits LIM = { NET_TBL_DEFAULT_MAX_KEY_BYTES,
                                           NET_TBL_DEFAULT_MAX_VALUE_BYTES };
static char err[NET_TBL_ERR_MAX];

static inline struct net_arg A(const char *s)
{
        return (struct net_arg){ s, strlen(s) };
}

/* Splits a space-separated line into args (static storage; "\x01" in a
 * word stands for a space, "\x02" for a 0x00 byte). */
static inline size_t words(const char *line, struct net_arg *argv)
{
        static char buf[8][4096];
        static int which;
        char *b = buf[which++ % 8], *p;
        size_t n = 0;

        snprintf(b, 4096, "%s", line);
        for (p = strtok(b, " "); p; p = strtok(NULL, " ")) {
                size_t len = strlen(p);

                for (size_t i = 0; i < len; i++)
                        p[i] = p[i] == 1 ? ' ' : p[i] == 2 ? 0 : p[i];
                argv[n++] = (struct net_arg){ p, len };
        }
        return n;
}

/* ---- tables of a test catalog ---- */

static inline const struct eng_catalog_table *table(const char *path, enum eng_catalog_key_mode mode,
                                             uint32_t hash_parts, const char *types,
                                             uint32_t n_tablets)
{
        enum eng_tuple_type parts[ENG_CATALOG_MAX_PARTS];
        struct eng_catalog_table_spec s = { .path = path, .key_format = ENG_CATALOG_KEYS_TUPLE,
                                            .mode = mode, .parts = parts,
                                            .hash_parts = hash_parts, .n_tablets = n_tablets,
                                            .options = eng_catalog_options_default() };
        const struct eng_catalog_table *t;
        struct eng_catalog *n;

        for (const char *c = types; *c; c++)
                parts[s.n_parts++] = *c == 'i' ? ENG_TUPLE_I64 : *c == 'u' ? ENG_TUPLE_U64
                                                                          : ENG_TUPLE_BYTES;
        if (!n_cats)
                cats[n_cats++] = eng_catalog_new(4);
        cr_assert(lt(sz, n_cats, 16));
        cr_assert(eq(int, eng_catalog_create_table(cats[n_cats - 1], &s, &n, NULL, err, sizeof(err)),
                     0), "%s", err);
        cats[n_cats++] = n;     /* the old snapshot stays: earlier tables point into it */
        cr_assert(eq(int, eng_catalog_lookup(n, path, &t), 0));
        return t;
}

/* /ib: (i64, bytes) ordered; /uub: (u64, u64, bytes) hashed on 1 part. */
static inline const struct eng_catalog_table *ib(void)
{
        return table("/ib", ENG_CATALOG_ORDERED, 0, "ib", 1);
}

static inline const struct eng_catalog_table *uub(void)
{
        return table("/uub", ENG_CATALOG_HASHED, 1, "uub", 4);
}

/* The tuple encoding of a key written as words. */
static inline size_t enc(const struct eng_catalog_table *t, const char *line, uint8_t *dst)
{
        struct net_arg argv[16];
        size_t n = words(line, argv), len = 0;

        cr_assert(eq(int, net_tbl_key_parse(t, argv, n, &LIM, dst, 4096, &len, err, sizeof(err)),
                     0), "%s: %s", line, err);
        return len;
}

/* The position of a key of t (its internal key without the table id). */
static inline size_t pos_of(const struct eng_catalog_table *t, const char *line, uint8_t *dst)
{
        uint8_t k[4096], ik[4200];
        size_t len = enc(t, line, k);
        long il = eng_catalog_ikey_encode(t, k, len, ik);

        cr_assert(il > 4);
        memcpy(dst, ik + 4, (size_t)il - 4);
        return (size_t)il - 4;
}

#endif
