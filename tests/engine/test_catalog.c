/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog (engine/catalog.h): every operation's success and errors,
 * old snapshots unchanged by later operations, routing of uniform and
 * explicit pre-splits, the initial catalog routing exactly as the static
 * map (engine/tablet.h), a model-based test of random operation sequences
 * (test_catalog_model.c), and the encoding: round trips, every single-byte
 * corruption and every truncation refused, a newer version unsupported.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include <pthread.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "engine/catalog.h"
#include "engine/key.h"
#include "engine/tablet.h"
#include "engine/tuple.h"
#include "tests/engine/catalog_helpers.h"
#include "tests/rng.h"

TestSuite(catalog, .timeout = 30);

static char err[256];

/* Replaces *c by the result of a successful operation (r == 0). */
static void take(struct eng_catalog **c, int r, struct eng_catalog **n)
{
        cr_assert(eq(int, r, 0), "operation failed: %s", err);
        cr_assert(n[0] != NULL && n[0] != c[0]);
        cr_assert(eq(u64, eng_catalog_version(n[0]), eng_catalog_version(c[0]) + 1));
        cr_assert(eq(int, eng_catalog_check(n[0]), 0));
        eng_catalog_unref(*c);
        *c = *n;
        *n = NULL;
}

static void mkdir_ok(struct eng_catalog **c, const char *path)
{
        struct eng_catalog *n = NULL;

        take(c, eng_catalog_mkdir(*c, path, &n, err, sizeof(err)), &n);
}

static const enum eng_tuple_type I64_BYTES[] = { ENG_TUPLE_I64, ENG_TUPLE_BYTES };
static const enum eng_tuple_type U64_U64[] = { ENG_TUPLE_U64, ENG_TUPLE_U64 };

static struct eng_catalog_table_spec spec_of(const char *path, enum eng_catalog_key_mode mode,
                                             uint32_t n_tablets)
{
        return (struct eng_catalog_table_spec){
                .path = path, .key_format = ENG_CATALOG_KEYS_TUPLE, .mode = mode, .n_parts = 2,
                .parts = mode == ENG_CATALOG_HASHED ? U64_U64 : I64_BYTES,
                .hash_parts = mode == ENG_CATALOG_HASHED ? 1 : 0,
                .options = eng_catalog_options_default(), .n_tablets = n_tablets,
        };
}

static uint32_t create_ok(struct eng_catalog **c, const struct eng_catalog_table_spec *s)
{
        struct eng_catalog *n = NULL;
        uint32_t id = UINT32_MAX;

        take(c, eng_catalog_create_table(*c, s, &n, &id, err, sizeof(err)), &n);
        return id;
}

/* An operation that must fail with want, mentioning needle in its message. */
static void expect_fail(int r, struct eng_catalog **n, int want, const char *needle)
{
        cr_expect(eq(int, r, want), "got %d (%s), want %d", r, err, want);
        cr_expect(n[0] == NULL);
        if (needle)
                cr_expect(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
        eng_catalog_unref(n[0]);
        n[0] = NULL;
}

static long list(const struct eng_catalog *c, const char *dir, struct eng_catalog_entry *v,
                 size_t cap)
{
        return eng_catalog_list(c, dir, v, cap, err, sizeof(err));
}

Test(catalog, new_catalog_is_empty)
{
        struct eng_catalog *c = eng_catalog_new(4);
        struct eng_catalog_entry v[2];
        uint32_t n_dropped;

        cr_assert(c != NULL);
        cr_expect(eq(u64, eng_catalog_version(c), 1));
        cr_expect(eq(u32, eng_catalog_n_shards(c), 4));
        cr_expect(eq(u32, eng_catalog_next_table_id(c), ENG_CATALOG_FIRST_USER_ID));
        cr_expect(eq(long, list(c, "/", v, 2), 0));
        cr_expect(eng_catalog_is_dir(c, "/"));
        eng_catalog_dropped(c, &n_dropped);
        cr_expect(eq(u32, n_dropped, 0));
        cr_expect(eq(int, eng_catalog_check(c), 0));
        eng_catalog_unref(c);
}

Test(catalog, mkdir_and_rmdir_and_listing)
{
        struct eng_catalog *c = eng_catalog_new(2), *old, *n = NULL;
        struct eng_catalog_entry v[4];

        mkdir_ok(&c, "/b");
        mkdir_ok(&c, "/a");
        mkdir_ok(&c, "/a/x");
        cr_expect(eq(u64, eng_catalog_version(c), 4));
        cr_assert(eq(long, list(c, "/", v, 4), 2));
        cr_expect(eq(str, (char *)v[0].name, "a"));
        cr_expect(eq(str, (char *)v[1].name, "b"));
        cr_expect(v[0].is_table == false);
        cr_assert(eq(long, list(c, "/a", v, 4), 1));
        cr_expect(eq(str, (char *)v[0].name, "x"));
        cr_expect(eq(long, list(c, "/", v, 1), 2), "more than cap: the count");
        expect_fail(eng_catalog_rmdir(c, "/a", &n, err, sizeof(err)), &n, -ENOTEMPTY, "/a");
        old = eng_catalog_ref(c);
        take(&c, eng_catalog_rmdir(c, "/a/x", &n, err, sizeof(err)), &n);
        take(&c, eng_catalog_rmdir(c, "/a", &n, err, sizeof(err)), &n);
        cr_expect(eq(long, list(c, "/", v, 4), 1));
        cr_expect(eq(long, list(old, "/a", v, 4), 1), "the old snapshot still has /a/x");
        cr_expect(eng_catalog_is_dir(old, "/a/x"));
        cr_expect(eng_catalog_is_dir(c, "/a") == false);
        eng_catalog_unref(old);
        eng_catalog_unref(c);
}

Test(catalog, mkdir_errors_name_what_is_wrong)
{
        struct eng_catalog *c = eng_catalog_new(1), *n = NULL;
        struct eng_catalog_table_spec s = spec_of("/t", ENG_CATALOG_ORDERED, 1);
        char longname[ENG_CATALOG_MAX_NAME + 3], longpath[ENG_CATALOG_MAX_PATH + 2];
        static const char *bad[] = { "", "a", "/", "/a/", "//a", "/a//b", "/.", "/..", "/a b",
                                     "/a\xff", "/a/../b", "/a*" };

        mkdir_ok(&c, "/a");
        create_ok(&c, &s);
        expect_fail(eng_catalog_mkdir(c, "/a", &n, err, sizeof(err)), &n, -EEXIST, "/a");
        expect_fail(eng_catalog_mkdir(c, "/t", &n, err, sizeof(err)), &n, -EEXIST, "table");
        expect_fail(eng_catalog_mkdir(c, "/x/y", &n, err, sizeof(err)), &n, -SCREE_ENOTFOUND, "/x");
        expect_fail(eng_catalog_mkdir(c, "/t/y", &n, err, sizeof(err)), &n, -ENOTDIR, "/t");
        expect_fail(eng_catalog_mkdir(c, NULL, &n, err, sizeof(err)), &n, -EINVAL, NULL);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                expect_fail(eng_catalog_mkdir(c, bad[i], &n, err, sizeof(err)), &n, -EINVAL, NULL);
        longname[0] = '/';
        memset(longname + 1, 'n', ENG_CATALOG_MAX_NAME + 1);
        longname[ENG_CATALOG_MAX_NAME + 2] = 0;
        expect_fail(eng_catalog_mkdir(c, longname, &n, err, sizeof(err)), &n, -EINVAL, "longer");
        longname[ENG_CATALOG_MAX_NAME + 1] = 0;         /* exactly the limit */
        mkdir_ok(&c, longname);
        for (size_t i = 0; i < sizeof(longpath) - 1; i += 2)
                memcpy(longpath + i, "/p", 2);
        longpath[sizeof(longpath) - 1] = 0;
        expect_fail(eng_catalog_mkdir(c, longpath, &n, err, sizeof(err)), &n, -EINVAL, "longer");
        expect_fail(eng_catalog_rmdir(c, "/nope", &n, err, sizeof(err)), &n, -SCREE_ENOTFOUND, "/nope");
        expect_fail(eng_catalog_rmdir(c, "/t", &n, err, sizeof(err)), &n, -ENOTDIR, "/t");
        expect_fail(eng_catalog_rmdir(c, "/", &n, err, sizeof(err)), &n, -EINVAL, "root");
        eng_catalog_unref(c);
}

Test(catalog, create_and_describe_a_table)
{
        struct eng_catalog *c = eng_catalog_new(3), *old;
        struct eng_catalog_table_spec s = spec_of("/app/events", ENG_CATALOG_ORDERED, 4);
        const struct eng_catalog_table *t;
        struct eng_catalog_entry v[2];
        uint32_t id;

        mkdir_ok(&c, "/app");
        old = eng_catalog_ref(c);
        s.options.default_ttl_ms = 5000;
        id = create_ok(&c, &s);
        cr_expect(eq(u32, id, ENG_CATALOG_FIRST_USER_ID));
        cr_expect(eq(u32, eng_catalog_next_table_id(c), id + 1));
        cr_assert(eq(int, eng_catalog_lookup(c, "/app/events", &t), 0));
        cr_expect(eq(str, t->path, "/app/events"));
        cr_expect(eq(str, (char *)t->name, "events"));
        cr_expect(eq(u32, t->id, id));
        cr_expect(eq(int, t->mode, ENG_CATALOG_ORDERED));
        cr_expect(eq(u32, t->n_parts, 2));
        cr_expect(eq(int, t->parts[1], ENG_TUPLE_BYTES));
        cr_expect(eq(u64, t->options.default_ttl_ms, 5000));
        cr_assert(eq(u32, t->n_tablets, 4));
        for (uint32_t i = 0; i < 4; i++) {
                const uint8_t *k = eng_catalog_tablet_start(t, i);

                cr_expect(eq(u32, t->tablets[i].shard, (id + i) % 3));
                cr_expect(eq(u32, be32_get(k), id));
                cr_expect(eq(u32, t->tablets[i].start_len, i ? 13 : 4));
                if (i) {        /* i64 tag, then the flipped value at i/4 of the range */
                        cr_expect(eq(u8, k[4], ENG_TUPLE_TAG_I64));
                        cr_expect(eq(u64, be64_get(k + 5), (uint64_t)i << 62));
                }
        }
        cr_assert(eq(long, list(c, "/app", v, 2), 1));
        cr_expect(v[0].is_table);
        cr_expect(eq(u32, v[0].table_id, id));
        cr_expect(eq(int, eng_catalog_lookup(old, "/app/events", &t), -SCREE_ENOTFOUND));
        cr_expect(eq(int, eng_catalog_table_by_id(c, id, &t), 0));
        cr_expect(eq(int, eng_catalog_table_by_id(c, id + 1, &t), -SCREE_ENOTFOUND));
        cr_expect(eq(long, list(c, "/app/events", v, 2), -ENOTDIR));
        cr_expect(eq(long, list(c, "/nope", v, 2), -SCREE_ENOTFOUND));
        cr_expect(eq(int, eng_catalog_check(c), 0));
        eng_catalog_unref(old);
        eng_catalog_unref(c);
}

Test(catalog, create_table_refuses_bad_schemas_and_options)
{
        struct eng_catalog *c = eng_catalog_new(2), *n = NULL;
        struct eng_catalog_table_spec s;
        enum eng_tuple_type many[ENG_CATALOG_MAX_PARTS + 1];
        static const enum eng_tuple_type null_part[] = { ENG_TUPLE_NULL };
        static const enum eng_tuple_type bytes_first[] = { ENG_TUPLE_BYTES, ENG_TUPLE_U64 };

        for (size_t i = 0; i < ENG_CATALOG_MAX_PARTS + 1; i++)
                many[i] = ENG_TUPLE_U64;
#define BAD(field_change, needle)                                                                \
        do {                                                                                     \
                s = spec_of("/t", ENG_CATALOG_HASHED, 4);                                        \
                field_change;                                                                    \
                expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n,     \
                            -EINVAL, needle);                                                    \
        } while (0)
        BAD(s.n_parts = 0, "parts");
        BAD((s.n_parts = ENG_CATALOG_MAX_PARTS + 1, s.parts = many), "parts");
        BAD((s.n_parts = 1, s.parts = null_part), "type");
        BAD(s.parts = NULL, "parts");
        BAD(s.hash_parts = 0, "hash_parts");
        BAD(s.hash_parts = 3, "hash_parts");
        BAD(s.mode = ENG_CATALOG_KEY_MODE_INVALID, "mode");
        BAD(s.key_format = ENG_CATALOG_KEY_FORMAT_INVALID, "format");
        BAD(s.key_format = ENG_CATALOG_KEYS_RAW, "raw");
        BAD((s.mode = ENG_CATALOG_ORDERED, s.hash_parts = 1), "hash_parts");
        BAD((s.mode = ENG_CATALOG_ORDERED, s.parts = bytes_first, s.hash_parts = 0), "integer");
        BAD(s.n_tablets = ENG_CATALOG_MAX_TABLETS + 1, "tablets");
        BAD(s.options.compaction = ENG_CATALOG_COMPACTION_INVALID, "compaction");
        BAD(s.options.split_load_percent = 0, "load");
        BAD(s.options.split_load_percent = 101, "load");
        BAD(s.options.min_tablets = 0, "min");
        BAD(s.options.min_tablets = s.options.max_tablets + 1, "min");
        BAD(s.options.max_tablets = ENG_CATALOG_MAX_TABLETS + 1, "max");
        BAD(s.options.split_size_bytes = 1000, "split size");
        BAD(s.options.default_ttl_ms = UINT64_MAX, "TTL");
        BAD(s.path = "/a b", "0x20");
#undef BAD
        s = spec_of("/t", ENG_CATALOG_HASHED, 4);
        create_ok(&c, &s);
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EEXIST, "/t");
        s.path = "/d/t";
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n,
                    -SCREE_ENOTFOUND, "/d");
        s.path = "/t/u";
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -ENOTDIR, "/t");
        eng_catalog_unref(c);
}

/* Encodes a one- or two-part split point (i64 a, then bytes b if given). */
static size_t split_of(uint8_t *dst, int64_t a, const char *b)
{
        struct eng_tuple_part p[2] = { { .type = ENG_TUPLE_I64, .v.i64 = a } };
        size_t len;

        if (b)
                p[1] = (struct eng_tuple_part){ .type = ENG_TUPLE_BYTES,
                                                .v.bytes = { b, (uint32_t)strlen(b) } };
        cr_assert(eq(int, eng_tuple_encode(p, b ? 2 : 1, dst, 64, &len), 0));
        return len;
}

Test(catalog, create_table_refuses_bad_split_points)
{
        struct eng_catalog *c = eng_catalog_new(2), *n = NULL;
        struct eng_catalog_table_spec s = spec_of("/t", ENG_CATALOG_ORDERED, 0);
        uint8_t k[4][64];
        struct eng_catalog_split sp[4];
        struct eng_tuple_part u = { .type = ENG_TUPLE_U64, .v.u64 = 7 };
        struct eng_tuple_part three[3] = { { .type = ENG_TUPLE_I64 }, { .type = ENG_TUPLE_NULL },
                                           { .type = ENG_TUPLE_NULL } };
        size_t len;

        s.splits = sp;
        s.n_splits = 2;
        sp[0] = (struct eng_catalog_split){ k[0], split_of(k[0], 20, NULL) };
        sp[1] = (struct eng_catalog_split){ k[1], split_of(k[1], 10, NULL) };
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EINVAL,
                    "split point 1 is not after split point 0");
        sp[1] = sp[0];
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EINVAL,
                    "not after");
        eng_tuple_encode(&u, 1, k[1], 64, &len);
        sp[1] = (struct eng_catalog_split){ k[1], len };
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EINVAL,
                    "part 0: u64, the key's is i64");
        eng_tuple_encode(three, 3, k[1], 64, &len);
        sp[1] = (struct eng_catalog_split){ k[1], len };
        sp[0] = (struct eng_catalog_split){ k[0], split_of(k[0], -5, NULL) };
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EINVAL,
                    "not a tuple of 1..2 parts");
        sp[1] = (struct eng_catalog_split){ (const uint8_t *)"\x10\xff", 2 };      /* cut short */
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EINVAL,
                    "not a tuple");
        sp[1] = (struct eng_catalog_split){ k[1], 0 };
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EINVAL,
                    "bytes");
        sp[1] = (struct eng_catalog_split){ k[1], split_of(k[1], 10, "x") };
        s.n_tablets = 5;
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EINVAL,
                    "make 3 tablets");
        s.n_tablets = 3;
        s.mode = ENG_CATALOG_HASHED;
        s.hash_parts = 1;
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EINVAL,
                    "ordered");
        s.mode = ENG_CATALOG_ORDERED;
        s.hash_parts = 0;
        create_ok(&c, &s);
        eng_catalog_unref(c);
}

/* Routes the tuple key (i64 a[, bytes b]) of table t. */
static uint32_t route_of(const struct eng_catalog_table *t, int64_t a, const char *b)
{
        uint8_t k[64], ik[96];
        size_t len = split_of(k, a, b);
        uint32_t tablet = UINT32_MAX;
        long ilen;

        cr_assert(eq(int, eng_catalog_route_key(t, k, len, &tablet), 0));
        ilen = eng_catalog_ikey_encode(t, k, len, ik);
        cr_assert(eq(long, ilen, (long)eng_catalog_ikey_size(t, len)));
        cr_expect(eq(u32, eng_catalog_route_ikey(t, ik, (size_t)ilen), tablet));
        return tablet;
}

Test(catalog, explicit_split_points_route_by_key)
{
        struct eng_catalog *c = eng_catalog_new(2);
        struct eng_catalog_table_spec s = spec_of("/t", ENG_CATALOG_ORDERED, 0);
        const struct eng_catalog_table *t;
        uint8_t k[3][64];
        struct eng_catalog_split sp[3] = {
                { k[0], split_of(k[0], -10, NULL) },
                { k[1], split_of(k[1], 20, "m") },
                { k[2], split_of(k[2], 30, NULL) },
        };

        s.splits = sp;
        s.n_splits = 3;
        create_ok(&c, &s);
        cr_assert(eq(int, eng_catalog_lookup(c, "/t", &t), 0));
        cr_assert(eq(u32, t->n_tablets, 4));
        cr_expect(eq(u32, route_of(t, INT64_MIN, NULL), 0));
        cr_expect(eq(u32, route_of(t, -11, "zz"), 0));
        cr_expect(eq(u32, route_of(t, -10, NULL), 1), "a split point starts its tablet");
        cr_expect(eq(u32, route_of(t, 20, "l"), 1));
        cr_expect(eq(u32, route_of(t, 20, "m"), 2));
        cr_expect(eq(u32, route_of(t, 29, "zzz"), 2));
        cr_expect(eq(u32, route_of(t, 30, ""), 3));
        cr_expect(eq(u32, route_of(t, INT64_MAX, "x"), 3));
        eng_catalog_unref(c);
}

Test(catalog, hashed_table_routes_by_hash_of_its_prefix)
{
        struct eng_catalog *c = eng_catalog_new(4);
        struct eng_catalog_table_spec s = spec_of("/h", ENG_CATALOG_HASHED, 8);
        const struct eng_catalog_table *t;
        uint32_t got, again;

        create_ok(&c, &s);
        cr_assert(eq(int, eng_catalog_lookup(c, "/h", &t), 0));
        for (uint64_t a = 0; a < 2000; a++) {
                struct eng_tuple_part p[2] = { { .type = ENG_TUPLE_U64, .v.u64 = a * 7919 },
                                               { .type = ENG_TUPLE_U64, .v.u64 = a } };
                uint8_t k[32];
                size_t len;
                __extension__ unsigned __int128 h;

                eng_tuple_encode(p, 2, k, sizeof(k), &len);
                cr_assert(eq(int, eng_catalog_route_key(t, k, len, &got), 0));
                h = __extension__(unsigned __int128)eng_key_hash(k, 9) * 8;  /* the first part: 9 bytes */
                cr_assert(eq(u32, got, (uint32_t)(h >> 64)));
                p[1].v.u64 = a + 1;                             /* same first part, same tablet */
                eng_tuple_encode(p, 2, k, sizeof(k), &len);
                cr_assert(eq(int, eng_catalog_route_key(t, k, len, &again), 0));
                cr_assert(eq(u32, again, got));
        }
        cr_expect(eq(int, eng_catalog_route_key(t, (const uint8_t *)"\x11", 1, &got), -EINVAL),
                  "a key without its hashed part");
        eng_catalog_unref(c);
}

Test(catalog, drop_frees_the_name_and_keeps_the_id)
{
        struct eng_catalog *c = eng_catalog_new(2), *old, *n = NULL;
        struct eng_catalog_table_spec s = spec_of("/t", ENG_CATALOG_ORDERED, 2);
        const struct eng_catalog_table *t;
        const uint32_t *dropped;
        uint32_t id, id2, n_dropped;

        id = create_ok(&c, &s);
        old = eng_catalog_ref(c);
        take(&c, eng_catalog_drop_table(c, "/t", &n, err, sizeof(err)), &n);
        dropped = eng_catalog_dropped(c, &n_dropped);
        cr_assert(eq(u32, n_dropped, 1));
        cr_expect(eq(u32, dropped[0], id));
        cr_expect(eq(int, eng_catalog_lookup(c, "/t", &t), -SCREE_ENOTFOUND));
        cr_expect(eq(int, eng_catalog_lookup(old, "/t", &t), 0), "the old snapshot keeps it");
        id2 = create_ok(&c, &s);
        cr_expect(eq(u32, id2, id + 1), "a new id for the reused name");
        expect_fail(eng_catalog_drop_table(c, "/u", &n, err, sizeof(err)), &n, -SCREE_ENOTFOUND, "/u");
        mkdir_ok(&c, "/d");
        expect_fail(eng_catalog_drop_table(c, "/d", &n, err, sizeof(err)), &n, -EINVAL, "directory");
        expect_fail(eng_catalog_drop_table(c, "/t/x", &n, err, sizeof(err)), &n, -ENOTDIR, "/t");
        expect_fail(eng_catalog_forget_dropped(c, id2, &n, err, sizeof(err)), &n, -SCREE_ENOTFOUND,
                    "not a dropped");
        take(&c, eng_catalog_forget_dropped(c, id, &n, err, sizeof(err)), &n);
        eng_catalog_dropped(c, &n_dropped);
        cr_expect(eq(u32, n_dropped, 0));
        cr_expect(eq(int, eng_catalog_check(c), 0));
        eng_catalog_unref(old);
        eng_catalog_unref(c);
}

Test(catalog, alter_replaces_options)
{
        struct eng_catalog *c = eng_catalog_new(2), *old, *n = NULL;
        struct eng_catalog_table_spec s = spec_of("/t", ENG_CATALOG_HASHED, 2);
        struct eng_catalog_options o = eng_catalog_options_default();
        const struct eng_catalog_table *t;

        create_ok(&c, &s);
        old = eng_catalog_ref(c);
        o.split_by_load = true;
        o.split_load_percent = 70;
        o.max_tablets = 8;
        take(&c, eng_catalog_alter_table(c, "/t", &o, &n, err, sizeof(err)), &n);
        cr_assert(eq(int, eng_catalog_lookup(c, "/t", &t), 0));
        cr_expect(t->options.split_by_load);
        cr_expect(eq(u32, t->options.split_load_percent, 70));
        cr_assert(eq(int, eng_catalog_lookup(old, "/t", &t), 0));
        cr_expect(t->options.split_by_load == false, "the old snapshot keeps the old options");
        o.min_tablets = 9;
        expect_fail(eng_catalog_alter_table(c, "/t", &o, &n, err, sizeof(err)), &n, -EINVAL, "min 9");
        expect_fail(eng_catalog_alter_table(c, "/u", &o, &n, err, sizeof(err)), &n,
                    -SCREE_ENOTFOUND, "/u");
        eng_catalog_unref(old);
        eng_catalog_unref(c);
}

static uint64_t rng = 0x2545f4914f6cdd1du;

static uint64_t next(void)
{
        return test_rng_next(&rng);
}

/* Checks one random raw key of static table tt against eng_tablet_of_key. */
static void initial_key_check(const struct eng_catalog *c, const struct eng_tablet_map *m,
                              enum eng_table tt, const uint8_t *key, size_t len)
{
        const struct eng_catalog_table *t, *t2;
        struct eng_tablet_loc want = eng_tablet_of_key(m, tt, key, len);
        uint32_t tablet, tablet2, shard, local;
        uint8_t ik[64], ik2[64];
        size_t ilen = eng_ikey_encode(tt, key, len, ik);

        cr_assert(eq(int, eng_catalog_table_by_id(c, tt, &t), 0));
        cr_assert(eq(int, eng_catalog_route_key(t, key, len, &tablet), 0));
        /* tablet id -> (shard, local), as eng_catalog_initial documents */
        cr_assert(eq(int, eng_tablet_static_local(m, t->tablets[tablet].id, &shard, &local), 0));
        cr_assert(eq(u32, t->tablets[tablet].shard, want.shard), "table %d key len %zu", tt, len);
        cr_assert(eq(u32, shard, want.shard));
        cr_assert(eq(u32, local, want.local), "table %d, n_shards %u tps %u, key[0] %d", tt,
                  m->n_shards, m->tablets_per_shard, len ? key[0] : -1);
        cr_assert(eq(int, eng_catalog_route(c, ik, ilen, &t2, &tablet2), 0));
        cr_assert(t2 == t);
        cr_assert(eq(u32, tablet2, tablet));
        cr_assert(eq(long, eng_catalog_ikey_encode(t, key, len, ik2), (long)ilen));
        cr_assert(eq(int, memcmp(ik, ik2, ilen), 0), "the same internal key as tablet.h's");
}

Test(catalog, initial_catalog_routes_like_the_static_map)
{
        static const uint32_t layouts[][2] = { { 1, 1 }, { 1, 64 }, { 2, 8 }, { 3, 5 },
                                               { 4, 64 }, { 7, 37 }, { 256, 1 }, { 256, 64 } };

        for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
                struct eng_tablet_map m;
                struct eng_catalog *c = NULL;
                const struct eng_catalog_table *t;

                cr_assert(eq(int, eng_tablet_map_init(&m, layouts[l][0], layouts[l][1]), 0));
                cr_assert(eq(int, eng_catalog_initial(layouts[l][0], layouts[l][1], &c), 0));
                cr_assert(eq(int, eng_catalog_check(c), 0));
                cr_assert(eq(int, eng_catalog_lookup(c, "/redis/db0", &t), 0));
                cr_expect(eq(u32, t->id, ENG_TABLE_DEFAULT));
                cr_assert(eq(int, eng_catalog_lookup(c, "/scree/ordered", &t), 0));
                cr_expect(eq(u32, t->id, ENG_TABLE_ORDERED));
                for (int i = 0; i < 20000; i++) {
                        uint8_t key[24];
                        size_t len = next() % 4 == 0 ? 0 : next() % sizeof(key);

                        for (size_t j = 0; j < len; j++)
                                key[j] = (uint8_t)next();
                        initial_key_check(c, &m, ENG_TABLE_DEFAULT, key, len);
                        initial_key_check(c, &m, ENG_TABLE_ORDERED, key, len);
                }
                for (int b = 0; b < 256; b++) {         /* every first byte, with and without more */
                        uint8_t key[2] = { (uint8_t)b, 0xff };

                        initial_key_check(c, &m, ENG_TABLE_ORDERED, key, 1);
                        initial_key_check(c, &m, ENG_TABLE_ORDERED, key, 2);
                }
                eng_catalog_unref(c);
        }
        cr_expect(eq(int, eng_catalog_initial(0, 1, &(struct eng_catalog *){ NULL }), -EINVAL));
        cr_expect(eq(int, eng_catalog_initial(1, ENG_MAX_TABLETS_PER_SHARD + 1,
                                              &(struct eng_catalog *){ NULL }), -EINVAL));
}

/* Every catalog tablet of the initial catalog is the static tablet
 * (shard, local) that eng_tablet_static_local names: that shard, that
 * range; and every local tablet of every shard is a catalog tablet, but
 * for the ordered tablets that hold no key (empty ranges, left out). */
static void initial_table_check(const struct eng_catalog *c, const struct eng_tablet_map *m,
                                enum eng_table tt, bool *seen)
{
        const struct eng_catalog_table *t;
        uint8_t s[ENG_IKEY_OVERHEAD], e[ENG_IKEY_OVERHEAD], next[ENG_TABLE_ID_BYTES];
        size_t sl, el, nl = eng_ikey_table_start((enum eng_table)(tt + 1), next);

        cr_assert(eq(int, eng_catalog_table_by_id(c, tt, &t), 0));
        for (uint32_t i = 0; i < t->n_tablets; i++) {
                const struct eng_catalog_tablet *b = &t->tablets[i];
                const uint8_t *end = i + 1 < t->n_tablets ? eng_catalog_tablet_start(t, i + 1) : next;
                size_t end_len = i + 1 < t->n_tablets ? t->tablets[i + 1].start_len : nl;
                uint32_t shard, local;

                cr_assert(eq(int, eng_tablet_static_local(m, b->id, &shard, &local), 0), "id %u", b->id);
                cr_assert(eq(u32, eng_tablet_static_id(m, shard, local), b->id));
                cr_assert(eq(u32, b->shard, shard), "id %u", b->id);
                cr_assert(eq(int, (int)eng_tablet_table(m, local), (int)tt));
                eng_tablet_range(m, shard, local, s, &sl, e, &el);
                /* The first tablet starts at the table id alone; tablet.h
                 * adds a hashed table's zero hash: no key lies between. */
                if (i == 0)
                        sl = eng_ikey_table_start(tt, s);
                cr_assert(eq(int, eng_key_cmp(s, sl, eng_catalog_tablet_start(t, i), b->start_len), 0),
                          "id %u: start", b->id);
                cr_assert(eq(int, eng_key_cmp(e, el, end, end_len), 0), "id %u: end", b->id);
                seen[b->id] = true;
        }
}

Test(catalog, initial_catalog_tablet_ids_are_the_static_ids)
{
        static const uint32_t layouts[][2] = { { 1, 1 }, { 2, 4 }, { 3, 5 }, { 7, 37 },
                                               { 256, 1 }, { 256, 64 } };
        static bool seen[2 * ENG_MAX_SHARDS * ENG_MAX_TABLETS_PER_SHARD];

        for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
                struct eng_tablet_map m;
                struct eng_catalog *c = NULL;
                uint8_t s[ENG_IKEY_OVERHEAD], e[ENG_IKEY_OVERHEAD];
                size_t sl, el;

                cr_assert(eq(int, eng_tablet_map_init(&m, layouts[l][0], layouts[l][1]), 0));
                cr_assert(eq(int, eng_catalog_initial(layouts[l][0], layouts[l][1], &c), 0));
                memset(seen, 0, sizeof(seen));
                initial_table_check(c, &m, ENG_TABLE_DEFAULT, seen);
                initial_table_check(c, &m, ENG_TABLE_ORDERED, seen);
                for (uint32_t shard = 0; shard < m.n_shards; shard++)
                        for (uint32_t local = 0; local < eng_tablet_map_per_shard(&m); local++) {
                                uint32_t id = eng_tablet_static_id(&m, shard, local);

                                eng_tablet_range(&m, shard, local, s, &sl, e, &el);
                                cr_assert(eq(int, seen[id], eng_key_cmp(s, sl, e, el) < 0),
                                          "layout %zu shard %u local %u id %u", l, shard, local, id);
                        }
                eng_catalog_unref(c);
        }
}

/* ---- encoding ---- */

/* A catalog with a bit of everything. */
static struct eng_catalog *sample(void)
{
        struct eng_catalog *c = NULL, *n = NULL;
        struct eng_catalog_table_spec s = spec_of("/app/events", ENG_CATALOG_ORDERED, 3);
        uint8_t k[2][64];
        struct eng_catalog_split sp[2] = { { k[0], split_of(k[0], 5, "\0a") },
                                           { k[1], split_of(k[1], 9, NULL) } };

        cr_assert(eq(int, eng_catalog_initial(3, 2, &c), 0));
        mkdir_ok(&c, "/app");
        mkdir_ok(&c, "/app/sub");
        create_ok(&c, &s);
        s = spec_of("/app/users", ENG_CATALOG_HASHED, 5);
        create_ok(&c, &s);
        s = spec_of("/app/gone", ENG_CATALOG_ORDERED, 0);
        s.splits = sp;
        s.n_splits = 2;
        s.options.default_ttl_ms = 1234;
        create_ok(&c, &s);
        s.path = "/app/split";
        create_ok(&c, &s);
        take(&c, eng_catalog_drop_table(c, "/app/gone", &n, err, sizeof(err)), &n);
        return c;
}

Test(catalog, encoding_round_trips)
{
        struct eng_catalog *c = sample(), *d = NULL;
        size_t len, len2;
        uint8_t *b = catalog_bytes(c, &len), *b2;

        cr_assert(eq(int, eng_catalog_decode(b, len, &d), 0));
        cr_expect(eq(u64, eng_catalog_version(d), eng_catalog_version(c)));
        cr_expect(eq(u32, eng_catalog_n_tables(d), eng_catalog_n_tables(c)));
        b2 = catalog_bytes(d, &len2);
        cr_assert(eq(sz, len2, len));
        cr_expect(eq(int, memcmp(b, b2, len), 0), "decode then encode gives the same bytes");
        cr_expect(eq(int, memcmp(b, ENG_CATALOG_MAGIC, 8), 0));
        free(b2);
        free(b);
        eng_catalog_unref(d);
        eng_catalog_unref(c);
}

Test(catalog, every_corrupt_byte_and_truncation_is_refused)
{
        struct eng_catalog *c = sample(), *d;
        size_t len;
        uint8_t *b = catalog_bytes(c, &len);
        uint8_t *grown = malloc(len + 1);

        for (size_t i = 0; i < len; i++) {
                for (int bit = 0; bit < 8; bit++) {
                        d = NULL;
                        b[i] ^= (uint8_t)(1u << bit);
                        cr_assert(eq(int, eng_catalog_decode(b, len, &d), -SCREE_ECORRUPT),
                                  "byte %zu bit %d", i, bit);
                        cr_assert(d == NULL);
                        b[i] ^= (uint8_t)(1u << bit);
                }
        }
        for (size_t l = 0; l < len; l++)
                cr_assert(eq(int, eng_catalog_decode(b, l, &d), -SCREE_ECORRUPT), "cut at %zu", l);
        memcpy(grown, b, len);
        grown[len] = 0;
        cr_expect(eq(int, eng_catalog_decode(grown, len + 1, &d), -SCREE_ECORRUPT));
        cr_assert(eq(int, eng_catalog_decode(b, len, &d), 0));
        eng_catalog_unref(d);
        free(grown);
        free(b);
        eng_catalog_unref(c);
}

Test(catalog, newer_format_version_is_unsupported)
{
        struct eng_catalog *c = eng_catalog_new(1), *d = NULL;
        size_t len;
        uint8_t *b = catalog_bytes(c, &len);

        le32_put(b + 8, ENG_CATALOG_FORMAT_VERSION + 1);
        catalog_reseal(b, len);
        cr_expect(eq(int, eng_catalog_decode(b, len, &d), -SCREE_EUNSUPPORTED));
        le32_put(b + 8, 0);
        catalog_reseal(b, len);
        cr_expect(eq(int, eng_catalog_decode(b, len, &d), -SCREE_ECORRUPT));
        free(b);
        eng_catalog_unref(c);
}

/* Bytes that verify but break the rules: refused, never a crash. Every
 * byte of the body set to a few values, checksums recomputed: each decode
 * is refused or, when the change keeps every rule, re-encodes to itself. */
Test(catalog, sealed_garbage_is_refused_or_valid)
{
        static const uint8_t vals[] = { 0x00, 0x01, 0x02, 0x2f, 0x7f, 0x80, 0xff };
        struct eng_catalog *c = sample(), *d;
        size_t len, len2;
        uint8_t *b = catalog_bytes(c, &len), *b2;
        unsigned refused = 0, valid = 0;

        for (size_t i = ENG_CATALOG_HEADER_BYTES; i < len; i++) {
                uint8_t keep = b[i];

                for (size_t v = 0; v < sizeof(vals); v++) {
                        int r;

                        d = NULL;
                        b[i] = vals[v];
                        catalog_reseal(b, len);
                        r = eng_catalog_decode(b, len, &d);
                        if (r == 0) {
                                valid++;
                                b2 = catalog_bytes(d, &len2);
                                cr_assert(eq(sz, len2, len));
                                cr_assert(eq(int, memcmp(b2, b, len), 0), "byte %zu", i);
                                free(b2);
                                eng_catalog_unref(d);
                        } else {
                                cr_assert(eq(int, r, -SCREE_ECORRUPT), "byte %zu", i);
                                refused++;
                        }
                }
                b[i] = keep;
        }
        catalog_reseal(b, len);
        cr_expect(refused > valid);
        free(b);
        eng_catalog_unref(c);
}

/* The example of docs/format/catalog.md, byte by byte. */
Test(catalog, the_documented_example)
{
        static const uint8_t body[32] = { 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2 };
        struct eng_catalog *c = eng_catalog_new(1);
        size_t len;
        uint8_t *b = catalog_bytes(c, &len);

        cr_assert(eq(sz, len, 72));
        cr_expect(eq(int, memcmp(b, "screeCAT\2\0\0\0\0\0\0\0\x20\0\0\0\0\0\0\0", 24), 0));
        cr_expect(eq(u64, le64_get(b + 24), checksum64(b + 40, 32, ENG_CATALOG_SEED)));
        cr_expect(eq(u64, le64_get(b + 32), checksum64(b, 32, ENG_CATALOG_SEED)));
        cr_expect(eq(int, memcmp(b + 40, body, 32), 0));
        free(b);
        eng_catalog_unref(c);
}

/* Random damage behind valid checksums: a few bytes changed, the body cut
 * or grown, body_len and both checksums made to match. Decoding is refused
 * or re-encodes to the same bytes; never a crash (run it under ASan). */
Test(catalog, resealed_random_damage_never_crashes)
{
        struct eng_catalog *c = sample(), *d;
        size_t len, len2;
        uint8_t *b = catalog_bytes(c, &len), *w = malloc(len + 64), *b2;

        for (int i = 0; i < 20000; i++) {
                size_t n = len - 32 + next() % 64;      /* cut or grown */
                int r;

                memcpy(w, b, len < n ? len : n);
                if (n > len)
                        memset(w + len, (int)(next() & 0xff), n - len);
                for (int k = 1 + (int)(next() % 4); k > 0; k--)
                        w[ENG_CATALOG_HEADER_BYTES + next() % (n - ENG_CATALOG_HEADER_BYTES)] =
                                (uint8_t)next();
                le64_put(w + 16, n - ENG_CATALOG_HEADER_BYTES);
                catalog_reseal(w, n);
                d = NULL;
                r = eng_catalog_decode(w, n, &d);
                if (r < 0) {
                        cr_assert(eq(int, r, -SCREE_ECORRUPT));
                        continue;
                }
                b2 = catalog_bytes(d, &len2);
                cr_assert(eq(sz, len2, n));
                cr_assert(eq(int, memcmp(b2, w, n), 0));
                free(b2);
                eng_catalog_unref(d);
        }
        free(w);
        free(b);
        eng_catalog_unref(c);
}

static void *ref_unref_loop(void *arg)
{
        for (int i = 0; i < 100000; i++)
                eng_catalog_unref(eng_catalog_ref(arg));
        return NULL;
}

/* Many threads share one snapshot: the count stays exact (ASan/TSan see
 * a free while referenced; the last unref frees it once). */
Test(catalog, snapshots_are_shared_across_threads)
{
        struct eng_catalog *c = sample();
        pthread_t th[4];

        for (int i = 0; i < 4; i++)
                cr_assert(eq(int, pthread_create(&th[i], NULL, ref_unref_loop, c), 0));
        for (int i = 0; i < 4; i++)
                pthread_join(th[i], NULL);
        cr_expect(eq(int, eng_catalog_check(c), 0));
        eng_catalog_unref(c);
}

/* Raw-key tables made through the API (Redis databases 1..15 will be):
 * hashed ones route as the static map's hash slices, ordered ones by
 * their first byte or by raw split points. */
Test(catalog, raw_key_tables_route_like_the_static_map)
{
        static const enum eng_tuple_type bytes[] = { ENG_TUPLE_BYTES };
        struct eng_catalog *c = NULL, *n = NULL;
        struct eng_catalog_table_spec s = {
                .path = "/redis/raw", .key_format = ENG_CATALOG_KEYS_RAW, .mode = ENG_CATALOG_HASHED,
                .n_parts = 1, .parts = bytes, .hash_parts = 1,
                .options = eng_catalog_options_default(), .n_tablets = 8,
        };
        struct eng_catalog_split sp[2] = { { (const uint8_t *)"g", 1 }, { (const uint8_t *)"p\0", 2 } };
        const struct eng_catalog_table *h, *o, *e;
        struct eng_tablet_map m;

        cr_assert(eq(int, eng_catalog_initial(2, 4, &c), 0));
        cr_assert(eq(int, eng_tablet_map_init(&m, 2, 4), 0));
        create_ok(&c, &s);
        s = (struct eng_catalog_table_spec){ .path = "/scree/o", .key_format = ENG_CATALOG_KEYS_RAW,
                                             .mode = ENG_CATALOG_ORDERED, .n_parts = 1, .parts = bytes,
                                             .options = eng_catalog_options_default(), .n_tablets = 257 };
        expect_fail(eng_catalog_create_table(c, &s, &n, NULL, err, sizeof(err)), &n, -EINVAL, "256");
        s.n_tablets = 8;
        create_ok(&c, &s);
        s.path = "/scree/e";
        s.n_tablets = 0;
        s.splits = sp;
        s.n_splits = 2;
        create_ok(&c, &s);
        cr_assert(eq(int, eng_catalog_lookup(c, "/redis/raw", &h), 0));
        cr_assert(eq(int, eng_catalog_lookup(c, "/scree/o", &o), 0));
        cr_assert(eq(int, eng_catalog_lookup(c, "/scree/e", &e), 0));
        for (int i = 0; i < 5000; i++) {
                uint8_t key[8];
                size_t len = next() % sizeof(key);
                uint32_t th, to, te;

                for (size_t j = 0; j < len; j++)
                        key[j] = (uint8_t)next();
                cr_assert(eq(int, eng_catalog_route_key(h, key, len, &th), 0));
                cr_assert(eq(int, eng_catalog_route_key(o, key, len, &to), 0));
                cr_assert(eq(int, eng_catalog_route_key(e, key, len, &te), 0));
                /* 8 slices of each: the static map's global tablet of the same key */
                cr_assert(eq(u32, th, eng_tablet_of_key(&m, ENG_TABLE_DEFAULT, key, len).local * 2 +
                                      eng_tablet_of_key(&m, ENG_TABLE_DEFAULT, key, len).shard));
                cr_assert(eq(u32, to, len ? (uint32_t)key[0] * 8 / 256 : 0));
                cr_assert(eq(u32, te, eng_key_cmp(key, len, "g", 1) < 0 ? 0 :
                                      eng_key_cmp(key, len, "p\0", 2) < 0 ? 1 : 2));
        }
        eng_catalog_unref(c);
}

Test(catalog, the_redis_databases_route_alike_and_swap_by_name)
{
        struct eng_catalog *c = NULL, *n = NULL;
        const struct eng_catalog_table *db[ENG_CATALOG_REDIS_DBS], *t;
        char path[32];

        cr_assert(eq(int, eng_catalog_initial(2, 4, &c), 0));
        cr_expect(eq(u32, eng_catalog_next_table_id(c), ENG_CATALOG_INITIAL_TABLES));
        for (uint32_t i = 0; i < ENG_CATALOG_REDIS_DBS; i++) {
                snprintf(path, sizeof(path), "/redis/db%u", i);
                cr_assert(eq(int, eng_catalog_lookup(c, path, &db[i]), 0), "%s", path);
                cr_expect(eq(u32, db[i]->id, i ? i + 1 : 0));
                cr_expect(eq(int, db[i]->mode, ENG_CATALOG_HASHED));
                cr_expect(eq(int, db[i]->key_format, ENG_CATALOG_KEYS_RAW));
        }
        /* Every database sends a key to the same shard. */
        for (int i = 0; i < 2000; i++) {
                uint8_t key[12];
                size_t len = next() % sizeof(key);
                uint32_t t0, ti;

                for (size_t j = 0; j < len; j++)
                        key[j] = (uint8_t)next();
                cr_assert(eq(int, eng_catalog_route_key(db[0], key, len, &t0), 0));
                for (uint32_t d = 1; d < ENG_CATALOG_REDIS_DBS; d++) {
                        cr_assert(eq(int, eng_catalog_route_key(db[d], key, len, &ti), 0));
                        cr_assert(eq(u32, db[d]->tablets[ti].shard, db[0]->tablets[t0].shard));
                }
        }
        cr_assert(eq(int, eng_catalog_check(c), 0));
        /* SWAPDB: the names trade places; ids and tablets stay. */
        take(&c, eng_catalog_swap_tables(c, "/redis/db0", "/redis/db3", &n, err, sizeof(err)), &n);
        cr_assert(eq(int, eng_catalog_lookup(c, "/redis/db0", &t), 0));
        cr_expect(eq(u32, t->id, 4));
        cr_expect(eq(str, (char *)t->name, "db0"));
        cr_assert(eq(int, eng_catalog_lookup(c, "/redis/db3", &t), 0));
        cr_expect(eq(u32, t->id, 0));
        cr_assert(eq(int, eng_catalog_check(c), 0));
        expect_fail(eng_catalog_swap_tables(c, "/redis/db0", "/redis/nope", &n, err, sizeof(err)),
                    &n, -SCREE_ENOTFOUND, "nope");
        expect_fail(eng_catalog_swap_tables(c, "/redis", "/redis/db1", &n, err, sizeof(err)), &n,
                    -EINVAL, "directory");
        eng_catalog_unref(c);
}
