/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal keys and the static tablet map (engine/tablet.h): encode/decode
 * round trips and bad input; every key falls inside the range of the tablet
 * the map gives it; tablets of a table tile its key space in order without
 * gaps; hashed keys spread evenly over shards and tablets; the static
 * tablet ids and their inverse.
 */
#include <stdbool.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/key.h"
#include "engine/tablet.h"

TestSuite(tablet, .timeout = 20);

Test(tablet, ikey_round_trip)
{
        uint8_t buf[64];
        enum eng_table t;
        const uint8_t *k;
        size_t len;

        for (int tab = 0; tab < ENG_TABLE_MAX; tab++) {
                size_t n = eng_ikey_encode((enum eng_table)tab, "hello", 5, buf);

                cr_assert(eq(sz, n, eng_ikey_size((enum eng_table)tab, 5)));
                cr_assert(eq(int, eng_ikey_decode(buf, n, &t, &k, &len), 0));
                cr_assert(eq(int, (int)t, tab));
                cr_assert(eq(sz, len, 5));
                cr_assert(eq(int, memcmp(k, "hello", 5), 0));
        }
        /* The empty user key is a key too. */
        size_t n = eng_ikey_encode(ENG_TABLE_DEFAULT, "", 0, buf);

        cr_assert(eq(int, eng_ikey_decode(buf, n, &t, &k, &len), 0));
        cr_assert(eq(sz, len, 0));
}

Test(tablet, ikey_bad_input)
{
        uint8_t buf[64];
        enum eng_table t;
        const uint8_t *k;
        size_t len;
        size_t n = eng_ikey_encode(ENG_TABLE_DEFAULT, "k", 1, buf);

        cr_assert(eq(int, eng_ikey_decode(buf, 3, &t, &k, &len), -SCREE_ECORRUPT));
        cr_assert(eq(int, eng_ikey_decode(buf, ENG_TABLE_ID_BYTES + 7, &t, &k, &len),
                     -SCREE_ECORRUPT));
        buf[3] = ENG_TABLE_MAX;
        cr_assert(eq(int, eng_ikey_decode(buf, n, &t, &k, &len), -SCREE_ECORRUPT));
}

Test(tablet, map_rejects_bad_numbers)
{
        struct eng_tablet_map m;

        cr_assert(eq(int, eng_tablet_map_init(&m, 0, 4), -EINVAL));
        cr_assert(eq(int, eng_tablet_map_init(&m, 2, 0), -EINVAL));
        cr_assert(eq(int, eng_tablet_map_init(&m, ENG_MAX_SHARDS + 1, 4), -EINVAL));
        cr_assert(eq(int, eng_tablet_map_init(&m, 2, ENG_MAX_TABLETS_PER_SHARD + 1), -EINVAL));
        cr_assert(eq(int, eng_tablet_map_init(&m, 3, 4), 0));
}

static void check_key_in_its_tablet(const struct eng_tablet_map *m, enum eng_table t,
                                    const char *key, size_t len)
{
        uint8_t ik[64], s[ENG_IKEY_OVERHEAD], e[ENG_IKEY_OVERHEAD];
        size_t n = eng_ikey_encode(t, key, len, ik), sl, el;
        struct eng_tablet_loc a = eng_tablet_of_key(m, t, key, len);
        struct eng_tablet_loc b = eng_tablet_of_ikey(m, ik, n);

        cr_assert(eq(u32, a.shard, b.shard));
        cr_assert(eq(u32, a.local, b.local));
        cr_assert(lt(u32, a.shard, m->n_shards));
        cr_assert(lt(u32, a.local, eng_tablet_map_per_shard(m)));
        cr_assert(eq(int, (int)eng_tablet_table(m, a.local), (int)t));
        eng_tablet_range(m, a.shard, a.local, s, &sl, e, &el);
        cr_assert(le(int, eng_key_cmp(s, sl, ik, n), 0), "key %.*s before its tablet", (int)len, key);
        cr_assert(lt(int, eng_key_cmp(ik, n, e, el), 0), "key %.*s past its tablet", (int)len, key);
}

Test(tablet, every_key_inside_its_tablet)
{
        static const uint32_t shards[] = { 1, 2, 3, 7, 128 };
        char key[32];

        for (size_t si = 0; si < sizeof(shards) / sizeof(shards[0]); si++) {
                struct eng_tablet_map m;

                cr_assert(eq(int, eng_tablet_map_init(&m, shards[si], 4), 0));
                for (int i = 0; i < 3000; i++) {
                        int len = snprintf(key, sizeof(key), "key:%d", i);

                        check_key_in_its_tablet(&m, ENG_TABLE_DEFAULT, key, (size_t)len);
                        check_key_in_its_tablet(&m, ENG_TABLE_ORDERED, key, (size_t)len);
                }
                for (int b = 0; b < 256; b++) {
                        key[0] = (char)b;
                        check_key_in_its_tablet(&m, ENG_TABLE_ORDERED, key, 1);
                }
                check_key_in_its_tablet(&m, ENG_TABLE_ORDERED, "", 0);
                check_key_in_its_tablet(&m, ENG_TABLE_DEFAULT, "", 0);
        }
}

/* Walking global tablets in order, each starts where the previous ended.
 * With more than 256 tablets a table's ordered tablets past its last
 * first byte are empty, at the next table's start (found by a review: the
 * start byte wrapped to 0x00, giving the last one a range from the
 * table's beginning). */
Test(tablet, tablets_tile_each_table)
{
        static const uint32_t layouts[][2] = { { 3, 4 }, { 64, 4 }, { 100, 3 }, { 128, 4 },
                                               { 256, 64 } };

        for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
                struct eng_tablet_map m;
                uint8_t s[ENG_IKEY_OVERHEAD], e[ENG_IKEY_OVERHEAD], prev_end[ENG_IKEY_OVERHEAD];
                size_t sl, el, pl = 0;

                cr_assert(eq(int, eng_tablet_map_init(&m, layouts[li][0], layouts[li][1]), 0));
                for (uint32_t g = 0; g < 2 * eng_tablet_map_per_table(&m); g++) {
                        uint32_t n = eng_tablet_map_per_table(&m), tg = g % n;
                        uint32_t shard = tg % m.n_shards;
                        uint32_t local = tg / m.n_shards + (g >= n ? m.tablets_per_shard : 0);
                        int c;

                        eng_tablet_range(&m, shard, local, s, &sl, e, &el);
                        c = eng_key_cmp(s, sl, e, el);
                        if (g < n || n <= 256)
                                cr_assert(lt(int, c, 0), "layout %zu tablet %u", li, g);
                        else
                                cr_assert(le(int, c, 0), "layout %zu tablet %u", li, g);
                        if (g % n)
                                cr_assert(eq(int, eng_key_cmp(prev_end, pl, s, sl), 0),
                                          "layout %zu tablet %u", li, g);
                        memcpy(prev_end, e, el);
                        pl = el;
                }
        }
}

/* The static ids are the catalog's numbering (engine/catalog.h): shard 1
 * of 2 with 4 tablets per shard owns ids 1, 3, 5, 7 of the default table
 * and 9, 11, 13, 15 of the ordered one. */
Test(tablet, static_ids_of_a_small_layout)
{
        static const uint32_t want[] = { 1, 3, 5, 7, 9, 11, 13, 15 };
        struct eng_tablet_map m;
        uint32_t shard = 99, local = 99;

        cr_assert(eq(int, eng_tablet_map_init(&m, 2, 4), 0));
        for (uint32_t l = 0; l < 8; l++) {
                cr_expect(eq(u32, eng_tablet_static_id(&m, 1, l), want[l]), "local %u", l);
                cr_expect(eq(u32, eng_tablet_static_id(&m, 0, l), want[l] - 1), "local %u", l);
        }
        cr_expect(eq(int, eng_tablet_static_local(&m, 16, &shard, &local), -EINVAL));
        cr_expect(eq(int, eng_tablet_static_local(&m, UINT32_MAX, &shard, &local), -EINVAL));
        cr_expect(eq(u32, shard, 99), "written only on success");
        cr_expect(eq(u32, local, 99));
        cr_assert(eq(int, eng_tablet_static_local(&m, 13, &shard, &local), 0));
        cr_expect(eq(u32, shard, 1));
        cr_expect(eq(u32, local, 6));
}

/* Every (shard, local) has its own id below 2 * per_table, ids increase
 * with local, and eng_tablet_static_local inverts eng_tablet_static_id. */
Test(tablet, static_ids_are_a_bijection)
{
        static const uint32_t layouts[][2] = { { 1, 1 }, { 1, 64 }, { 2, 4 }, { 3, 5 },
                                               { 7, 37 }, { 256, 1 }, { 256, 64 } };
        static bool seen[2 * ENG_MAX_SHARDS * ENG_MAX_TABLETS_PER_SHARD];

        for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
                struct eng_tablet_map m;
                uint32_t n_ids;

                cr_assert(eq(int, eng_tablet_map_init(&m, layouts[li][0], layouts[li][1]), 0));
                n_ids = ENG_TABLE_MAX * eng_tablet_map_per_table(&m);
                memset(seen, 0, sizeof(seen));
                for (uint32_t s = 0; s < m.n_shards; s++) {
                        for (uint32_t l = 0; l < eng_tablet_map_per_shard(&m); l++) {
                                uint32_t id = eng_tablet_static_id(&m, s, l), gs, gl;

                                cr_assert(lt(u32, id, n_ids));
                                cr_assert(not(seen[id]), "layout %zu: id %u twice", li, id);
                                seen[id] = true;
                                if (l)
                                        cr_assert(gt(u32, id, eng_tablet_static_id(&m, s, l - 1)));
                                cr_assert(eq(int, eng_tablet_static_local(&m, id, &gs, &gl), 0));
                                cr_assert(eq(u32, gs, s));
                                cr_assert(eq(u32, gl, l));
                        }
                }
                cr_expect(eq(int, eng_tablet_static_local(&m, n_ids, &(uint32_t){ 0 },
                                                          &(uint32_t){ 0 }), -EINVAL));
        }
}

Test(tablet, hashed_keys_spread_evenly)
{
        struct eng_tablet_map m;
        unsigned count[2][8] = { { 0 } };
        char key[32];
        const int n = 80000;

        cr_assert(eq(int, eng_tablet_map_init(&m, 2, 4), 0));
        for (int i = 0; i < n; i++) {
                int len = snprintf(key, sizeof(key), "user:%08d", i);
                struct eng_tablet_loc l = eng_tablet_of_key(&m, ENG_TABLE_DEFAULT, key, (size_t)len);

                count[l.shard][l.local]++;
        }
        for (int s = 0; s < 2; s++)
                for (int t = 0; t < 4; t++) {
                        /* 10000 expected per tablet; 5 sigma is about 500. */
                        cr_assert(gt(u32, count[s][t], 9300));
                        cr_assert(lt(u32, count[s][t], 10700));
                }
}
