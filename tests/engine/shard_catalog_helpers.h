/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the tests of a shard routing by the catalog
 * (test_shard_catalog.c, test_shard_split.c): the test's catalog, tables
 * made in it, its install in the shard, a reopen with it, and u64 tuple
 * keys. Include after shard_helpers.h. Header-only; tests only.
 */
#ifndef SCREE_TESTS_ENGINE_SHARD_CATALOG_HELPERS_H
#define SCREE_TESTS_ENGINE_SHARD_CATALOG_HELPERS_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "engine/catalog.h"
#include "engine/tuple.h"
#include "tests/engine/shard_helpers.h"

static struct eng_catalog *cat;

/* cat with a table at path (one u64 part) of n tablets; its id. */
static inline uint32_t create_table(const char *path, enum eng_catalog_key_mode mode, uint32_t n)
{
        static const enum eng_tuple_type parts[] = { ENG_TUPLE_U64 };
        struct eng_catalog_table_spec spec = {
                .path = path, .key_format = ENG_CATALOG_KEYS_TUPLE, .mode = mode,
                .n_parts = 1, .parts = parts, .hash_parts = mode == ENG_CATALOG_HASHED ? 1 : 0,
                .options = eng_catalog_options_default(), .n_tablets = n,
        };
        struct eng_catalog *next;
        char err[256];
        uint32_t id;

        cr_assert(eq(int, eng_catalog_create_table(cat, &spec, &next, &id, err, sizeof(err)), 0),
                  "%s", err);
        eng_catalog_unref(cat);
        cat = next;
        return id;
}

/* Closes and opens again with the catalog as it is now. */
static inline int reopen_cat(void)
{
        shard_close_sync();
        opts.catalog = cat;
        return shard_open_sync();
}

/* Installs cat in the shard, which must take it. */
static inline void install(void)
{
        cr_assert(eq(int, eng_shard_set_catalog(sh, cat), 0));
        cr_assert(eq(u64, eng_catalog_version(eng_shard_catalog(sh)), eng_catalog_version(cat)));
}

/* The encoding of the one-part u64 key v into buf (16 bytes); its length. */
static inline size_t key_of(uint64_t v, uint8_t *buf)
{
        struct eng_tuple_part p = { .type = ENG_TUPLE_U64, .v.u64 = v };
        size_t len;

        cr_assert(eq(int, eng_tuple_encode(&p, 1, buf, 16, &len), 0));
        return len;
}

static inline void cat_fini(void)
{
        eng_catalog_unref(cat);
        cat = NULL;
}

#endif
