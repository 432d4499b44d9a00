/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Splitting, merging and moving tablets (engine/catalog_tablets.c):
 * routing before and after a split agrees (a key of the split tablet goes
 * to exactly one child, every other key where it went), a merge of the
 * children routes as before the split, a move changes only a shard; every
 * error; the version and next tablet id; the encoding round trip; and a
 * random sequence of splits, merges and moves over every table of a
 * catalog, predicted by a model of the tablet boundaries. Every new
 * snapshot passes eng_catalog_check, and the one a change started from is
 * byte for byte what it was.
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
#include "engine/key.h"
#include "engine/tuple.h"
#include "tests/engine/catalog_helpers.h"
#include "tests/rng.h"

TestSuite(catalog_tablets, .timeout = 60);

static char err[256];
static uint64_t rng = 0x5deece66d1234567u;
/* What an operation that fails must leave in *ret. */
static struct eng_catalog *const UNTOUCHED = (struct eng_catalog *)&rng;

static uint64_t next(void)
{
        return test_rng_next(&rng);
}

/* ---- helpers ---- */

/* Replaces *c by *n, the result of a successful change r: version + 1,
 * next tablet id + ids, a valid snapshot. *n is UNTOUCHED again after. */
static void take(struct eng_catalog **c, int r, struct eng_catalog **n, uint32_t ids)
{
        cr_assert(eq(int, r, 0), "change failed: %d %s", r, err);
        cr_assert(n[0] != NULL && n[0] != c[0] && n[0] != UNTOUCHED);
        cr_assert(eq(u64, eng_catalog_version(*n), eng_catalog_version(*c) + 1));
        cr_assert(eq(u32, eng_catalog_next_tablet_id(*n), eng_catalog_next_tablet_id(*c) + ids));
        cr_assert(eq(int, eng_catalog_check(*n), 0));
        eng_catalog_unref(*c);
        *c = *n;
        *n = UNTOUCHED;
}

/* A change that must fail with want, err naming needle, *ret untouched. */
static void expect_fail(int r, struct eng_catalog **n, int want, const char *needle)
{
        cr_expect(eq(int, r, want), "got %d (%s), want %d", r, err, want);
        cr_expect(n[0] == UNTOUCHED, "*ret written on failure");
        if (needle)
                cr_expect(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
}

static const enum eng_tuple_type U64_U64[] = { ENG_TUPLE_U64, ENG_TUPLE_U64 };
static const enum eng_tuple_type I64_BYTES[] = { ENG_TUPLE_I64, ENG_TUPLE_BYTES };

/* Creates table path (hashed on a u64 or ordered on (i64, bytes)) with
 * n_tablets tablets in *c; returns it. */
static const struct eng_catalog_table *create(struct eng_catalog **c, const char *path,
                                              enum eng_catalog_key_mode mode, uint32_t n_tablets)
{
        struct eng_catalog_table_spec s = {
                .path = path, .key_format = ENG_CATALOG_KEYS_TUPLE, .mode = mode, .n_parts = 2,
                .parts = mode == ENG_CATALOG_HASHED ? U64_U64 : I64_BYTES,
                .hash_parts = mode == ENG_CATALOG_HASHED ? 1 : 0,
                .options = eng_catalog_options_default(), .n_tablets = n_tablets,
        };
        struct eng_catalog *n = UNTOUCHED;
        const struct eng_catalog_table *t;

        take(c, eng_catalog_create_table(*c, &s, &n, NULL, err, sizeof(err)), &n, n_tablets);
        cr_assert(eq(int, eng_catalog_lookup(*c, path, &t), 0));
        return t;
}

/* A random internal key of t (from a random tuple user key); returns its
 * length. Values are small and bytes short, so that keys share prefixes. */
static size_t random_ikey(const struct eng_catalog_table *t, uint8_t *k)
{
        char b[8];
        struct eng_tuple_part p[2];
        uint8_t u[64];
        size_t len;
        uint32_t blen = (uint32_t)(next() % sizeof(b));

        for (uint32_t i = 0; i < blen; i++)
                b[i] = "abz\0\xff"[next() % 5];
        if (t->mode == ENG_CATALOG_HASHED)
                p[0] = (struct eng_tuple_part){ .type = ENG_TUPLE_U64, .v.u64 = next() % 5000 };
        else
                p[0] = (struct eng_tuple_part){ .type = ENG_TUPLE_I64,
                                                .v.i64 = (int64_t)(next() % 200) - 100 };
        if (t->mode == ENG_CATALOG_HASHED)
                p[1] = (struct eng_tuple_part){ .type = ENG_TUPLE_U64, .v.u64 = next() % 3 };
        else
                p[1] = (struct eng_tuple_part){ .type = ENG_TUPLE_BYTES, .v.bytes = { b, blen } };
        cr_assert(eq(int, eng_tuple_encode(p, 2, u, sizeof(u), &len), 0));
        return (size_t)eng_catalog_ikey_encode(t, u, len, k);
}

/* The id of the tablet key k (len bytes) of table id goes to in c. */
static uint32_t route_id(const struct eng_catalog *c, uint32_t id, const uint8_t *k, size_t len)
{
        const struct eng_catalog_table *t;

        cr_assert(eq(int, eng_catalog_table_by_id(c, id, &t), 0));
        return t->tablets[eng_catalog_route_ikey(t, k, len)].id;
}

/* Splits the tablet of table id that a random key goes to, at that key
 * (another key if it is the tablet's start). Checks routing before and
 * after on random keys; returns the split key's length, in at. */
static size_t split_random(struct eng_catalog **c, uint32_t id, uint8_t *at)
{
        const struct eng_catalog_table *t;
        struct eng_catalog *old = eng_catalog_ref(*c), *n = UNTOUCHED;
        uint32_t ids[2] = { 0 }, tab, shard;
        size_t len;

        cr_assert(eq(int, eng_catalog_table_by_id(*c, id, &t), 0));
        do {
                len = random_ikey(t, at);
                tab = eng_catalog_route_ikey(t, at, len);
        } while (eng_key_cmp(at, len, eng_catalog_tablet_start(t, tab), t->tablets[tab].start_len) == 0);
        shard = t->tablets[tab].shard;
        take(c, eng_catalog_split_tablet(*c, t->tablets[tab].id, at, len, &n, ids, err, sizeof(err)), &n, 2);
        cr_assert(eq(u32, ids[0], eng_catalog_next_tablet_id(old)));
        cr_assert(eq(u32, ids[1], ids[0] + 1));
        cr_assert(eq(int, eng_catalog_table_by_id(*c, id, &t), 0));
        cr_assert(eq(u32, t->tablets[tab].id, ids[0]));
        cr_assert(eq(u32, t->tablets[tab + 1].id, ids[1]));
        cr_assert(eq(u32, t->tablets[tab].shard, shard));
        cr_assert(eq(u32, t->tablets[tab + 1].shard, shard));
        for (int i = 0; i < 200; i++) {
                uint8_t k[96];
                size_t kl = random_ikey(t, k);
                uint32_t was = route_id(old, id, k, kl), is = route_id(*c, id, k, kl);
                const struct eng_catalog_table *ot;

                cr_assert(eq(int, eng_catalog_table_by_id(old, id, &ot), 0));
                if (was != ot->tablets[tab].id)
                        cr_assert(eq(u32, is, was), "a key of another tablet moved");
                else
                        cr_assert(eq(u32, is, eng_key_cmp(k, kl, at, len) < 0 ? ids[0] : ids[1]));
        }
        eng_catalog_unref(old);
        return len;
}

/* Whether tables id of a and b have the same boundaries (ids aside). */
static bool same_bounds(const struct eng_catalog *a, const struct eng_catalog *b, uint32_t id)
{
        const struct eng_catalog_table *x, *y;

        cr_assert(eq(int, eng_catalog_table_by_id(a, id, &x), 0));
        cr_assert(eq(int, eng_catalog_table_by_id(b, id, &y), 0));
        if (x->n_tablets != y->n_tablets)
                return false;
        for (uint32_t i = 0; i < x->n_tablets; i++)
                if (eng_key_cmp(eng_catalog_tablet_start(x, i), x->tablets[i].start_len,
                                eng_catalog_tablet_start(y, i), y->tablets[i].start_len) != 0)
                        return false;
        return true;
}

/* Whether k (len bytes) is a tablet start of table id in c. */
static bool is_start_of(const struct eng_catalog *c, uint32_t id, const uint8_t *k, size_t len)
{
        const struct eng_catalog_table *t;

        cr_assert(eq(int, eng_catalog_table_by_id(c, id, &t), 0));
        for (uint32_t i = 0; i < t->n_tablets; i++)
                if (eng_key_cmp(eng_catalog_tablet_start(t, i), t->tablets[i].start_len, k, len) == 0)
                        return true;
        return false;
}

/* ---- split and merge ---- */

static void split_many_then_merge_back(enum eng_catalog_key_mode mode)
{
        struct eng_catalog *c = eng_catalog_new(1), *first, *n = UNTOUCHED;
        uint32_t id = create(&c, "/t", mode, mode == ENG_CATALOG_HASHED ? 4 : 1)->id;
        const struct eng_catalog_table *t;
        uint8_t at[96];

        first = eng_catalog_ref(c);
        for (int i = 0; i < 300; i++)
                split_random(&c, id, at);
        cr_assert(eq(int, eng_catalog_table_by_id(c, id, &t), 0));
        cr_expect(eq(u32, t->n_tablets, (mode == ENG_CATALOG_HASHED ? 4 : 1) + 300));
        /* Merge back the split tablets in random order (one shard: any pair). */
        while (t->n_tablets > (mode == ENG_CATALOG_HASHED ? 4 : 1)) {
                struct eng_catalog *before;
                uint32_t i = (uint32_t)(next() % (t->n_tablets - 1)), got = 0;
                uint32_t want = eng_catalog_next_tablet_id(c);
                uint8_t end[2][4];
                const uint8_t *e[2];
                uint32_t elen[2];

                if (is_start_of(first, id, eng_catalog_tablet_start(t, i + 1),
                                t->tablets[i + 1].start_len))
                        continue;       /* a boundary the table was created with */
                before = eng_catalog_ref(c);
                elen[0] = eng_catalog_tablet_end(t, i + 1, end[0], &e[0]);
                take(&c, eng_catalog_merge_tablets(c, t->tablets[i].id, &n, &got, err, sizeof(err)), &n, 1);
                cr_assert(eq(u32, got, want));
                cr_assert(eq(int, eng_catalog_table_by_id(c, id, &t), 0));
                cr_assert(eq(u32, t->tablets[i].id, got));
                elen[1] = eng_catalog_tablet_end(t, i, end[1], &e[1]);
                cr_assert(eq(int, eng_key_cmp(e[0], elen[0], e[1], elen[1]), 0),
                          "the merged tablet ends where the second one did");
                eng_catalog_unref(before);
        }
        cr_expect(same_bounds(first, c, id), "merged back to the table's first boundaries");
        for (int i = 0; i < 2000; i++) {
                uint8_t k[96];
                size_t kl = random_ikey(t, k);
                const struct eng_catalog_table *ft;

                cr_assert(eq(int, eng_catalog_table_by_id(first, id, &ft), 0));
                cr_assert(eq(u32, eng_catalog_route_ikey(t, k, kl), eng_catalog_route_ikey(ft, k, kl)));
        }
        eng_catalog_unref(first);
        eng_catalog_unref(c);
}

Test(catalog_tablets, hashed_splits_route_each_key_to_one_child_and_merge_back)
{
        split_many_then_merge_back(ENG_CATALOG_HASHED);
}

Test(catalog_tablets, ordered_splits_route_each_key_to_one_child_and_merge_back)
{
        split_many_then_merge_back(ENG_CATALOG_ORDERED);
}

Test(catalog_tablets, split_then_merge_routes_as_before)
{
        struct eng_catalog *c = NULL, *before, *n = UNTOUCHED;
        uint32_t ids[2] = { 0 }, merged = 0;
        const struct eng_catalog_table *t;
        uint8_t at[96];

        cr_assert(eq(int, eng_catalog_initial(2, 2, &c), 0));
        create(&c, "/scree/h", ENG_CATALOG_HASHED, 3);
        t = create(&c, "/scree/o", ENG_CATALOG_ORDERED, 3);
        before = eng_catalog_ref(c);
        for (uint32_t i = 0; i < 50; i++) {
                size_t len = random_ikey(t, at);
                uint32_t tab = eng_catalog_route_ikey(t, at, len);

                if (eng_key_cmp(at, len, eng_catalog_tablet_start(t, tab), t->tablets[tab].start_len) == 0)
                        continue;
                take(&c, eng_catalog_split_tablet(c, t->tablets[tab].id, at, len, &n, ids, err,
                                                  sizeof(err)), &n, 2);
                take(&c, eng_catalog_merge_tablets(c, ids[0], &n, &merged, err, sizeof(err)), &n, 1);
                cr_assert(eq(int, eng_catalog_lookup(c, "/scree/o", &t), 0));
                cr_assert(eq(u32, t->tablets[tab].id, merged));
                cr_assert(same_bounds(before, c, t->id));
        }
        for (uint32_t i = 0; i < eng_catalog_n_tables(c); i++)
                cr_expect(same_bounds(before, c, eng_catalog_table_at(c, i)->id));
        eng_catalog_unref(before);
        eng_catalog_unref(c);
}

Test(catalog_tablets, split_ignores_the_tablet_count_options)
{
        struct eng_catalog *c = eng_catalog_new(2), *n = UNTOUCHED;
        struct eng_catalog_options o = eng_catalog_options_default();
        const struct eng_catalog_table *t;
        uint32_t id = create(&c, "/t", ENG_CATALOG_HASHED, 1)->id;
        uint8_t at[96];

        o.min_tablets = 1;
        o.max_tablets = 1;
        take(&c, eng_catalog_alter_table(c, "/t", &o, &n, err, sizeof(err)), &n, 0);
        for (int i = 0; i < 3; i++)
                split_random(&c, id, at);
        cr_assert(eq(int, eng_catalog_lookup(c, "/t", &t), 0));
        cr_expect(eq(u32, t->n_tablets, 4), "max_tablets bounds automatic splits only");
        eng_catalog_unref(c);
}

/* ---- move ---- */

Test(catalog_tablets, move_keeps_id_and_range_and_allows_a_merge)
{
        struct eng_catalog *c = eng_catalog_new(3), *before, *n = UNTOUCHED;
        const struct eng_catalog_table *t = create(&c, "/t", ENG_CATALOG_HASHED, 3);
        uint32_t id = t->id, a = t->tablets[0].id, b = t->tablets[1].id, merged = 0;

        cr_assert(eq(u32, t->tablets[0].shard, id % 3));
        cr_assert(ne(u32, t->tablets[1].shard, t->tablets[0].shard));
        expect_fail(eng_catalog_merge_tablets(c, a, &n, &merged, err, sizeof(err)), &n, -EINVAL,
                    "move one first");
        before = eng_catalog_ref(c);
        take(&c, eng_catalog_move_tablet(c, b, t->tablets[0].shard, &n, err, sizeof(err)), &n, 0);
        cr_assert(same_bounds(before, c, id));
        cr_assert(eq(int, eng_catalog_table_by_id(c, id, &t), 0));
        cr_expect(eq(u32, t->tablets[1].id, b));
        cr_expect(eq(u32, t->tablets[1].shard, t->tablets[0].shard));
        cr_expect(eq(u32, t->tablets[2].shard, (id + 2) % 3), "the others stay");
        take(&c, eng_catalog_merge_tablets(c, a, &n, &merged, err, sizeof(err)), &n, 1);
        cr_assert(eq(int, eng_catalog_table_by_id(c, id, &t), 0));
        cr_expect(eq(u32, t->n_tablets, 2));
        cr_expect(eq(u32, t->tablets[0].id, merged));
        cr_expect(eq(u32, t->tablets[0].shard, id % 3));
        eng_catalog_unref(before);
        eng_catalog_unref(c);
}

/* ---- errors ---- */

Test(catalog_tablets, every_error)
{
        struct eng_catalog *c = eng_catalog_new(2), *n = UNTOUCHED;
        const struct eng_catalog_table *t = create(&c, "/t", ENG_CATALOG_ORDERED, 3);
        uint32_t ids[2] = { 7, 7 }, one = 7, a = t->tablets[0].id, last = t->tablets[2].id;
        uint8_t k[ENG_CATALOG_MAX_START_BYTES + 1];
        const uint8_t *s1 = eng_catalog_tablet_start(t, 1);
        uint32_t l1 = t->tablets[1].start_len, l2 = t->tablets[2].start_len;

        /* No such live tablet (a dropped table's: at the end). */
        memcpy(k, s1, l1);
        k[l1] = 1;
        expect_fail(eng_catalog_split_tablet(c, 999, k, l1 + 1, &n, ids, err, sizeof(err)), &n,
                    -SCREE_ENOTFOUND, "no tablet 999");
        expect_fail(eng_catalog_merge_tablets(c, 999, &n, &one, err, sizeof(err)), &n,
                    -SCREE_ENOTFOUND, "999");
        expect_fail(eng_catalog_move_tablet(c, 999, 0, &n, err, sizeof(err)), &n, -SCREE_ENOTFOUND,
                    "999");
        /* The split key: in the tablet, with the table's id, not too long. */
        expect_fail(eng_catalog_split_tablet(c, a, NULL, 0, &n, ids, err, sizeof(err)), &n, -EINVAL,
                    "start with table");
        expect_fail(eng_catalog_split_tablet(c, a, s1, 3, &n, ids, err, sizeof(err)), &n, -EINVAL,
                    "start with table");
        be32_put(k, t->id + 1);
        expect_fail(eng_catalog_split_tablet(c, last, k, 5, &n, ids, err, sizeof(err)), &n, -EINVAL,
                    "start with table");
        expect_fail(eng_catalog_split_tablet(c, a, s1, 4, &n, ids, err, sizeof(err)), &n, -EINVAL,
                    "not after");
        expect_fail(eng_catalog_split_tablet(c, a, s1, l1, &n, ids, err, sizeof(err)), &n, -EINVAL,
                    "not before");
        expect_fail(eng_catalog_split_tablet(c, t->tablets[1].id, s1, l1, &n, ids, err, sizeof(err)),
                    &n, -EINVAL, "not after");
        expect_fail(eng_catalog_split_tablet(c, t->tablets[1].id, s1, l1 - 1, &n, ids, err,
                                             sizeof(err)), &n, -EINVAL, "not after");
        expect_fail(eng_catalog_split_tablet(c, t->tablets[1].id, eng_catalog_tablet_start(t, 2),
                                             l2, &n, ids, err, sizeof(err)),
                    &n, -EINVAL, "not before");
        memcpy(k, eng_catalog_tablet_start(t, 2), l2);
        memset(k + l2, 0x42, sizeof(k) - l2);
        expect_fail(eng_catalog_split_tablet(c, t->tablets[1].id, k, l2 + 1, &n, ids, err,
                                             sizeof(err)), &n, -EINVAL, "not before");
        expect_fail(eng_catalog_split_tablet(c, last, k, sizeof(k), &n, ids, err, sizeof(err)), &n,
                    -EINVAL, "at most");
        cr_expect(eq(u32, ids[0], 7), "ret_ids untouched on failure");
        /* The longest split key there may be is fine. */
        take(&c, eng_catalog_split_tablet(c, last, k, sizeof(k) - 1, &n, NULL, err, sizeof(err)), &n,
             2);
        /* Merge: the last tablet has nothing after it. */
        cr_assert(eq(int, eng_catalog_lookup(c, "/t", &t), 0));
        last = t->tablets[t->n_tablets - 1].id;
        expect_fail(eng_catalog_merge_tablets(c, last, &n, &one, err, sizeof(err)), &n, -EINVAL,
                    "nothing to merge with");
        cr_expect(eq(u32, one, 7));
        /* Move: a shard that is not, or the one it is on. */
        expect_fail(eng_catalog_move_tablet(c, a, 2, &n, err, sizeof(err)), &n, -EINVAL, "shard 2");
        expect_fail(eng_catalog_move_tablet(c, a, t->tablets[0].shard, &n, err, sizeof(err)), &n,
                    -EINVAL, "already");
        /* A dropped table's tablets are not live. */
        take(&c, eng_catalog_drop_table(c, "/t", &n, err, sizeof(err)), &n, 0);
        expect_fail(eng_catalog_move_tablet(c, a, 1, &n, err, sizeof(err)), &n,
                    -SCREE_ENOTFOUND, "no tablet");
        eng_catalog_unref(c);
}

Test(catalog_tablets, a_full_table_refuses_a_split)
{
        struct eng_catalog *c = eng_catalog_new(1), *n = UNTOUCHED;
        const struct eng_catalog_table *t = create(&c, "/t", ENG_CATALOG_HASHED, ENG_CATALOG_MAX_TABLETS);
        uint8_t k[16];

        memcpy(k, eng_catalog_tablet_start(t, 1), 12);
        k[12] = 0;
        expect_fail(eng_catalog_split_tablet(c, t->tablets[1].id, k, 13, &n, NULL, err, sizeof(err)),
                    &n, -ENOSPC, "at most 65536");
        take(&c, eng_catalog_merge_tablets(c, t->tablets[1].id, &n, NULL, err, sizeof(err)), &n, 1);
        cr_assert(eq(int, eng_catalog_lookup(c, "/t", &t), 0));
        take(&c, eng_catalog_split_tablet(c, t->tablets[1].id, k, 13, &n, NULL, err, sizeof(err)), &n,
             2);
        eng_catalog_unref(c);
}

/* c with its next tablet id set to next (through its encoding). */
static struct eng_catalog *with_next_tablet_id(struct eng_catalog *c, uint32_t next_id)
{
        size_t len;
        uint8_t *b = catalog_bytes(c, &len);
        struct eng_catalog *d = NULL;

        le32_put(b + ENG_CATALOG_HEADER_BYTES + 16, next_id);
        catalog_reseal(b, len);
        cr_assert(eq(int, eng_catalog_decode(b, len, &d), 0));
        cr_assert(eq(u32, eng_catalog_next_tablet_id(d), next_id));
        free(b);
        eng_catalog_unref(c);
        return d;
}

Test(catalog_tablets, tablet_ids_run_out_at_uint32_max)
{
        struct eng_catalog *c = eng_catalog_new(1), *n = UNTOUCHED;
        const struct eng_catalog_table *t = create(&c, "/t", ENG_CATALOG_ORDERED, 4);
        uint32_t ids[2], id, len[2] = { t->tablets[1].start_len + 1, t->tablets[2].start_len + 1 };
        uint8_t k[2][16];

        /* Split keys inside tablets 1 and 2: their starts and a zero byte. */
        memcpy(k[0], eng_catalog_tablet_start(t, 1), len[0] - 1);
        memcpy(k[1], eng_catalog_tablet_start(t, 2), len[1] - 1);
        k[0][len[0] - 1] = 0;
        k[1][len[1] - 1] = 0;
        c = with_next_tablet_id(c, UINT32_MAX - 3);
        cr_assert(eq(int, eng_catalog_lookup(c, "/t", &t), 0));
        id = t->tablets[1].id;
        take(&c, eng_catalog_split_tablet(c, id, k[0], len[0], &n, ids, err, sizeof(err)), &n, 2);
        cr_expect(eq(u32, ids[1], UINT32_MAX - 2));
        cr_assert(eq(int, eng_catalog_lookup(c, "/t", &t), 0));
        expect_fail(eng_catalog_split_tablet(c, t->tablets[3].id, k[1], len[1], &n, ids, err,
                                             sizeof(err)), &n, -ENOSPC, "tablet ids exhausted");
        take(&c, eng_catalog_merge_tablets(c, t->tablets[0].id, &n, &id, err, sizeof(err)), &n, 1);
        cr_expect(eq(u32, id, UINT32_MAX - 1), "the last id there is");
        cr_expect(eq(u32, eng_catalog_next_tablet_id(c), UINT32_MAX));
        cr_assert(eq(int, eng_catalog_lookup(c, "/t", &t), 0));
        expect_fail(eng_catalog_merge_tablets(c, t->tablets[0].id, &n, &id, err, sizeof(err)), &n,
                    -ENOSPC, "tablet ids exhausted");
        eng_catalog_unref(c);
}

/* ---- encoding and the end key ---- */

Test(catalog_tablets, changed_catalogs_round_trip)
{
        struct eng_catalog *c = NULL, *d = NULL, *n = UNTOUCHED;
        const struct eng_catalog_table *t;
        uint32_t id;
        uint8_t at[96];
        size_t len, len2;
        uint8_t *b, *b2;

        cr_assert(eq(int, eng_catalog_initial(3, 2, &c), 0));
        id = create(&c, "/scree/o", ENG_CATALOG_ORDERED, 2)->id;
        for (int i = 0; i < 20; i++)
                split_random(&c, id, at);
        cr_assert(eq(int, eng_catalog_lookup(c, "/scree/o", &t), 0));
        take(&c, eng_catalog_move_tablet(c, t->tablets[3].id, (t->tablets[3].shard + 1) % 3, &n,
                                         err, sizeof(err)), &n, 0);
        cr_assert(eq(int, eng_catalog_lookup(c, "/scree/o", &t), 0));
        take(&c, eng_catalog_merge_tablets(c, t->tablets[7].id, &n, NULL, err, sizeof(err)), &n, 1);
        b = catalog_bytes(c, &len);
        cr_assert(eq(int, eng_catalog_decode(b, len, &d), 0));
        b2 = catalog_bytes(d, &len2);
        cr_assert(eq(sz, len2, len));
        cr_expect(eq(int, memcmp(b, b2, len), 0), "decode then encode gives the same bytes");
        for (uint32_t i = 0; i < eng_catalog_n_tables(c); i++)
                cr_expect(same_bounds(c, d, eng_catalog_table_at(c, i)->id));
        free(b2);
        free(b);
        eng_catalog_unref(d);
        eng_catalog_unref(c);
}

Test(catalog_tablets, tablet_end_is_the_next_start_or_the_next_table_id)
{
        struct eng_catalog *c = eng_catalog_new(1);
        const struct eng_catalog_table *t = create(&c, "/t", ENG_CATALOG_HASHED, 3);
        uint8_t buf[4];
        const uint8_t *e;

        cr_expect(eq(u32, eng_catalog_tablet_end(t, 0, buf, &e), t->tablets[1].start_len));
        cr_expect(e == eng_catalog_tablet_start(t, 1));
        cr_expect(eq(u32, eng_catalog_tablet_end(t, 2, buf, &e), 4));
        cr_expect(e == buf);
        cr_expect(eq(u32, be32_get(buf), t->id + 1));
        eng_catalog_unref(c);
}

/* ---- against a model ---- */

#define M_MAXK 64u      /* the longest key the model makes */
#define M_CAP 512u      /* tablets a model table holds */
#define M_SHARDS 3u

struct m_tablet {
        uint32_t id, shard, len;
        uint8_t key[M_MAXK];
};

struct m_table {
        uint32_t id, n;
        struct m_tablet v[M_CAP];
};

/* The tablet boundaries of every table, and the next tablet id. */
struct model {
        uint32_t n_tables, next_id;
        struct m_table *t;
};

static int m_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
        int r = memcmp(a, b, alen < blen ? alen : blen);

        return r ? r : alen < blen ? -1 : alen > blen;
}

static void m_load(struct model *m, const struct eng_catalog *c)
{
        m->n_tables = eng_catalog_n_tables(c);
        m->next_id = eng_catalog_next_tablet_id(c);
        m->t = calloc(m->n_tables, sizeof(*m->t));
        cr_assert(m->t != NULL);
        for (uint32_t i = 0; i < m->n_tables; i++) {
                const struct eng_catalog_table *t = eng_catalog_table_at(c, i);

                m->t[i].id = t->id;
                m->t[i].n = t->n_tablets;
                for (uint32_t k = 0; k < t->n_tablets; k++) {
                        struct m_tablet *b = &m->t[i].v[k];

                        *b = (struct m_tablet){ .id = t->tablets[k].id, .shard = t->tablets[k].shard,
                                                .len = t->tablets[k].start_len };
                        memcpy(b->key, eng_catalog_tablet_start(t, k), b->len);
                }
        }
}

/* The tablet (index) of key k in t: the last whose start is at or before it. */
static uint32_t m_route(const struct m_table *t, const uint8_t *k, size_t len)
{
        uint32_t i = t->n - 1;

        while (i > 0 && m_cmp(t->v[i].key, t->v[i].len, k, len) > 0)
                i--;
        return i;
}

/* The table and index of live tablet id, or false. */
static bool m_find(struct model *m, uint32_t id, struct m_table **ret, uint32_t *ret_i)
{
        for (uint32_t i = 0; i < m->n_tables; i++)
                for (uint32_t k = 0; k < m->t[i].n; k++)
                        if (m->t[i].v[k].id == id) {
                                *ret = &m->t[i];
                                *ret_i = k;
                                return true;
                        }
        return false;
}

/* The outcome of splitting tablet id at k, made in the model on success. */
static int m_split(struct model *m, uint32_t id, const uint8_t *k, size_t len)
{
        struct m_table *t;
        uint32_t i;
        uint8_t tid[4];

        if (!m_find(m, id, &t, &i))
                return -SCREE_ENOTFOUND;
        be32_put(tid, t->id);
        if (len < 4 || memcmp(k, tid, 4) != 0 || m_cmp(k, len, t->v[i].key, t->v[i].len) <= 0 ||
            (i + 1 < t->n && m_cmp(k, len, t->v[i + 1].key, t->v[i + 1].len) >= 0))
                return -EINVAL;
        memmove(&t->v[i + 2], &t->v[i + 1], (t->n - i - 1) * sizeof(t->v[0]));
        t->v[i + 1] = (struct m_tablet){ .id = m->next_id + 1, .shard = t->v[i].shard,
                                         .len = (uint32_t)len };
        memcpy(t->v[i + 1].key, k, len);
        t->v[i].id = m->next_id;
        t->n++;
        m->next_id += 2;
        return 0;
}

static int m_merge(struct model *m, uint32_t id)
{
        struct m_table *t;
        uint32_t i;

        if (!m_find(m, id, &t, &i))
                return -SCREE_ENOTFOUND;
        if (i + 1 == t->n || t->v[i].shard != t->v[i + 1].shard)
                return -EINVAL;
        memmove(&t->v[i + 1], &t->v[i + 2], (t->n - i - 2) * sizeof(t->v[0]));
        t->v[i].id = m->next_id++;
        t->n--;
        return 0;
}

static int m_move(struct model *m, uint32_t id, uint32_t shard)
{
        struct m_table *t;
        uint32_t i;

        if (!m_find(m, id, &t, &i))
                return -SCREE_ENOTFOUND;
        if (shard >= M_SHARDS || t->v[i].shard == shard)
                return -EINVAL;
        t->v[i].shard = shard;
        return 0;
}

/* A key of table t near its boundaries: one of them as is, cut short,
 * nudged by one in a byte, or with bytes added; now and then any bytes. */
static size_t m_key(const struct m_table *t, uint8_t *k)
{
        const struct m_tablet *b = &t->v[next() % t->n];
        uint32_t kind = (uint32_t)(next() % 8);
        size_t len = b->len;

        memcpy(k, b->key, len);
        if (kind == 0)
                len = 4;
        if ((kind & 1) && len > 4)
                len = 4 + next() % (len - 4 + 1);
        if ((kind & 2) && len > 4)
                k[4 + next() % (len - 4)] += next() % 2 ? 1 : 0xff;
        for (size_t add = kind & 4 ? 1 + next() % 8 : 0; add && len < M_MAXK; add--)
                k[len++] = "\0\x01\x7f\x80\xfe\xff"[next() % 6];
        return len;
}

/* Table i of c against the model: ids, shards, start keys, key8, and the
 * keys buffer holding exactly the starts; and the routing of random keys. */
static void m_check_table(const struct model *m, const struct eng_catalog *c, uint32_t i)
{
        const struct eng_catalog_table *t = eng_catalog_table_at(c, i);
        const struct m_table *mt = &m->t[i];
        uint32_t bytes = 0;

        cr_assert(eq(u32, t->id, mt->id));
        cr_assert(eq(u32, t->n_tablets, mt->n));
        for (uint32_t k = 0; k < mt->n; k++) {
                const struct eng_catalog_tablet *b = &t->tablets[k];

                cr_assert(eq(u32, b->id, mt->v[k].id));
                cr_assert(eq(u32, b->shard, mt->v[k].shard));
                cr_assert(eq(int, m_cmp(eng_catalog_tablet_start(t, k), b->start_len, mt->v[k].key,
                                        mt->v[k].len), 0));
                cr_assert(eq(u64, b->key8, eng_catalog_key8(mt->v[k].key, mt->v[k].len)));
                bytes += b->start_len;
        }
        cr_assert(eq(u32, t->keys_len, bytes), "the keys buffer holds the starts and nothing else");
        for (int r = 0; r < 20; r++) {
                uint8_t k[M_MAXK];
                size_t len = m_key(mt, k);

                cr_assert(eq(u32, eng_catalog_route_ikey(t, k, len), m_route(mt, k, len)));
        }
}

/* One random operation on table ti of c, checked against the model.
 * Returns its kind (0 split, 1 merge, 2 move) and whether it was made. */
static uint32_t m_step(struct model *m, struct eng_catalog **c, uint32_t ti, bool *ret_made)
{
        struct m_table *t = &m->t[ti];
        struct eng_catalog *n = UNTOUCHED;
        uint32_t op = (uint32_t)(next() % 100), i = (uint32_t)(next() % t->n), id = t->v[i].id;
        uint32_t ids[2] = { 0 }, shard = (uint32_t)(next() % (M_SHARDS + 1)), before = m->next_id;
        uint8_t k[M_MAXK];
        size_t len = m_key(t, k), blen, alen;
        uint8_t *b = catalog_bytes(*c, &blen), *a;
        int want, r;

        if (op % 10 == 9)
                id = m->next_id + (uint32_t)(next() % 3);       /* no such tablet */
        if (op % 7 == 6 && len > 4)
                be32_put(k, t->id ^ (1u << (next() % 8)));      /* another table's key */
        if (op < 50 && t->n < M_CAP) {
                if (op % 2 && be32_get(k) == t->id)
                        id = t->v[m_route(t, k, len)].id;       /* the tablet that holds k */
                r = eng_catalog_split_tablet(*c, id, k, len, &n, ids, err, sizeof(err));
                want = m_split(m, id, k, len);
                if (r == 0)
                        cr_assert(eq(u32, ids[1], ids[0] + 1));
        } else if (op < 80) {
                r = eng_catalog_merge_tablets(*c, id, &n, ids, err, sizeof(err));
                want = m_merge(m, id);
        } else {
                r = eng_catalog_move_tablet(*c, id, shard, &n, err, sizeof(err));
                want = m_move(m, id, shard);
        }
        cr_assert(eq(int, r, want), "op %u on tablet %u: %s", op, id, err);
        a = catalog_bytes(*c, &alen);
        cr_assert(alen == blen && memcmp(a, b, blen) == 0, "the old snapshot changed");
        free(a);
        free(b);
        if (r == 0) {
                if (op < 80)
                        cr_assert(eq(u32, ids[0], before));
                take(c, r, &n, m->next_id - before);
        } else {
                cr_assert(n == UNTOUCHED);
        }
        m_check_table(m, *c, ti);
        *ret_made = r == 0;
        return op < 50 && t->n < M_CAP ? 0 : op < 80 ? 1 : 2;
}

/* c, decoded from its encoding, against the model. */
static void m_check_all(const struct model *m, const struct eng_catalog *c)
{
        size_t len;
        uint8_t *b = catalog_bytes(c, &len);
        struct eng_catalog *d = NULL;

        cr_assert(eq(int, eng_catalog_decode(b, len, &d), 0));
        cr_assert(eq(u32, eng_catalog_next_tablet_id(d), m->next_id));
        for (uint32_t i = 0; i < m->n_tables; i++)
                m_check_table(m, d, i);
        eng_catalog_unref(d);
        free(b);
}

Test(catalog_tablets, random_changes_match_a_model)
{
        struct eng_catalog *c = NULL;
        struct model m;
        uint32_t made[3][2] = { { 0 } };        /* [kind][made] */

        cr_assert(eq(int, eng_catalog_initial(M_SHARDS, 2, &c), 0));
        create(&c, "/scree/h", ENG_CATALOG_HASHED, 4);
        create(&c, "/scree/o", ENG_CATALOG_ORDERED, 1);
        m_load(&m, c);
        for (int step = 0; step < 20000; step++) {
                bool ok;
                uint32_t kind = m_step(&m, &c, (uint32_t)(next() % m.n_tables), &ok);

                made[kind][ok]++;
                if (step % 1000 == 0)
                        m_check_all(&m, c);
        }
        m_check_all(&m, c);
        cr_log_info("made/refused: splits %u/%u, merges %u/%u, moves %u/%u", made[0][1],
                    made[0][0], made[1][1], made[1][0], made[2][1], made[2][0]);
        for (int kind = 0; kind < 3; kind++)
                cr_expect(made[kind][1] >= 1000 && made[kind][0] >= 500,
                          "each kind of change both made and refused often enough");
        free(m.t);
        eng_catalog_unref(c);
}
