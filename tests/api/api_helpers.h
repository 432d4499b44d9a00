/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the api test files share: a temporary database directory per test
 * (setup, teardown), a database opened in it, (bytes, u64) keys and a table
 * of them. Included by one test file each; everything static.
 */
#ifndef SCREE_TESTS_API_HELPERS_H
#define SCREE_TESTS_API_HELPERS_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <scree/scree.h>

#include "tests/tmpdir.h"

static char dir[256];

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "api");
}

static void teardown(void)
{
        tmpdir_remove(dir);
}

static scree_db *open_db(unsigned smp)
{
        scree_options *o = scree_options_new();
        char n[16];
        scree_db *db = NULL;
        int r;

        snprintf(n, sizeof(n), "%u", smp);
        cr_assert(o != NULL);
        cr_assert(eq(int, scree_options_set(o, "smp", n), 0));
        cr_assert(eq(int, scree_options_set(o, "memory", "64mb"), 0));
        cr_assert(eq(int, scree_options_set(o, "pin", "no"), 0));
        r = scree_open(dir, o, &db);
        scree_options_free(o);
        cr_assert(eq(int, r, 0), "open: %s: %s", scree_strerror(r), scree_last_error());
        return db;
}

/* A (bytes, u64) key. */
static size_t key2(char *buf, size_t cap, const char *who, uint64_t n)
{
        scree_part p[2] = { { .type = SCREE_BYTES, .v.bytes = { who, strlen(who) } },
                            { .type = SCREE_U64, .v.u64 = n } };
        size_t len = 0;

        cr_assert(eq(int, scree_key_encode(p, 2, buf, cap, &len), 0));
        return len;
}

static scree_table *make_table(scree_db *db, const char *path, size_t hash_parts)
{
        static const scree_type parts[] = { SCREE_BYTES, SCREE_U64 };
        scree_table_spec spec = { .path = path, .n_parts = 2, .parts = parts,
                                  .hash_parts = hash_parts, .tablets = hash_parts ? 4 : 0 };
        scree_table *t = NULL;
        int r = scree_table_create(db, &spec);

        cr_assert(eq(int, r, 0), "create %s: %s", path, scree_last_error());
        cr_assert(eq(int, scree_table_open(db, path, &t), 0));
        return t;
}

/* An update function that fails with -EPERM. */
static inline int fail_it(void *arg, const void *cur, size_t len, scree_update_out *out)
{
        return -EPERM;
}

/* A scree_stats callback: counts the counters in *(int *)arg. */
static inline void count_stat(void *arg, const char *name, uint64_t value)
{
        (*(int *)arg)++;
}

#endif
