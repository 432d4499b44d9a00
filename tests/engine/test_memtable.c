/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memtable (engine/memtable.h): newest version wins, snapshots see older
 * versions, tombstones are versions too, byte order with prefixes and the
 * empty key, seek, duplicates and bad kinds refused, structure valid after
 * many random inserts, memory accounted, references counted; interleaved
 * batches of puts (eng_memtable_put_many) equal one-by-one puts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/memtable.h"

TestSuite(memtable, .timeout = 20);

static void put(struct eng_memtable *mt, const char *k, uint32_t klen, uint64_t seq,
                enum eng_entry_kind kind, const char *v)
{
        struct eng_entry e = { .key = (const uint8_t *)k, .key_len = klen, .seq = seq, .kind = kind,
                               .value = (const uint8_t *)v, .value_len = v ? (uint32_t)strlen(v) : 0 };

        cr_assert(eq(int, eng_memtable_put(mt, &e), 0));
}

static void expect_value(const struct eng_memtable *mt, const char *k, uint64_t snap, const char *want,
                         uint64_t want_seq)
{
        struct eng_entry e;

        cr_assert(eq(int, eng_memtable_get(mt, k, (uint32_t)strlen(k), snap, &e), 0), "%s@%llu missing",
                  k, (unsigned long long)snap);
        cr_expect(eq(u64, e.seq, want_seq));
        cr_expect(eq(u32, e.value_len, (uint32_t)strlen(want)));
        cr_expect(eq(int, memcmp(e.value, want, e.value_len), 0));
}

Test(memtable, overwrite_returns_newest_seq_and_snapshots_see_older)
{
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_entry e;

        put(mt, "k", 1, 5, ENG_ENTRY_VALUE, "v5");
        put(mt, "k", 1, 9, ENG_ENTRY_VALUE, "v9");
        put(mt, "k", 1, 7, ENG_ENTRY_VALUE, "v7");
        expect_value(mt, "k", UINT64_MAX - 1, "v9", 9);
        expect_value(mt, "k", 8, "v7", 7);
        expect_value(mt, "k", 7, "v7", 7);
        expect_value(mt, "k", 6, "v5", 5);
        cr_expect(eq(int, eng_memtable_get(mt, "k", 1, 4, &e), -SCREE_ENOTFOUND));
        cr_expect(eq(int, eng_memtable_get(mt, "j", 1, 100, &e), -SCREE_ENOTFOUND));
        cr_expect(eq(int, eng_memtable_get(mt, "kk", 2, 100, &e), -SCREE_ENOTFOUND));
        cr_expect(eq(u64, eng_memtable_count(mt), 3));
        eng_memtable_unref(mt);
}

Test(memtable, a_tombstone_is_the_newest_version)
{
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_entry e;

        put(mt, "gone", 4, 1, ENG_ENTRY_VALUE, "x");
        put(mt, "gone", 4, 2, ENG_ENTRY_TOMBSTONE, NULL);
        cr_assert(eq(int, eng_memtable_get(mt, "gone", 4, 10, &e), 0));
        cr_expect(eq(int, e.kind, ENG_ENTRY_TOMBSTONE));
        cr_expect(eq(u32, e.value_len, 0));
        expect_value(mt, "gone", 1, "x", 1);
        eng_memtable_unref(mt);
}

Test(memtable, duplicates_and_bad_kinds_are_refused)
{
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_entry e = { .key = (const uint8_t *)"a", .key_len = 1, .seq = 3, .kind = ENG_ENTRY_VALUE };

        cr_assert(eq(int, eng_memtable_put(mt, &e), 0));
        cr_expect(eq(int, eng_memtable_put(mt, &e), -EEXIST));
        e.seq = 4;
        e.kind = ENG_ENTRY_KIND_INVALID;
        cr_expect(eq(int, eng_memtable_put(mt, &e), -EINVAL));
        e.kind = ENG_ENTRY_KIND_MAX;
        cr_expect(eq(int, eng_memtable_put(mt, &e), -EINVAL));
        cr_expect(eq(u64, eng_memtable_count(mt), 1));
        eng_memtable_unref(mt);
}

Test(memtable, keys_sort_as_bytes_with_prefixes_first_and_binary_keys_work)
{
        static const struct { const char *k; uint32_t len; } order[] = {
                { "", 0 }, { "\0", 1 }, { "a", 1 }, { "a\0", 2 }, { "ab", 2 }, { "b", 1 }, { "\xff", 1 },
        };
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_memtable_iter it;
        unsigned i = 0;

        for (int j = (int)(sizeof(order) / sizeof(order[0])) - 1; j >= 0; j--)
                put(mt, order[j].k, order[j].len, 10 + (uint64_t)j, ENG_ENTRY_VALUE, "v");
        eng_memtable_iter_init(&it, mt);
        for (eng_memtable_iter_seek_first(&it); eng_memtable_iter_valid(&it); eng_memtable_iter_next(&it), i++) {
                struct eng_entry e;

                eng_memtable_iter_entry(&it, &e);
                cr_assert(eq(u32, e.key_len, order[i].len), "position %u", i);
                cr_assert(eq(int, memcmp(e.key, order[i].k, e.key_len), 0), "position %u", i);
        }
        cr_expect(eq(u32, i, sizeof(order) / sizeof(order[0])));
        eng_memtable_unref(mt);
}

Test(memtable, seek_lands_on_the_first_key_at_or_after)
{
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_memtable_iter it;
        struct eng_entry e;

        put(mt, "apple", 5, 1, ENG_ENTRY_VALUE, "1");
        put(mt, "cherry", 6, 2, ENG_ENTRY_VALUE, "2");
        put(mt, "cherry", 6, 3, ENG_ENTRY_VALUE, "3");
        eng_memtable_iter_init(&it, mt);
        eng_memtable_iter_seek(&it, "banana", 6);
        cr_assert(eng_memtable_iter_valid(&it));
        eng_memtable_iter_entry(&it, &e);
        cr_expect(eq(u32, e.key_len, 6));
        cr_expect(eq(u64, e.seq, 3), "newest version first");
        eng_memtable_iter_next(&it);
        eng_memtable_iter_entry(&it, &e);
        cr_expect(eq(u64, e.seq, 2));
        eng_memtable_iter_seek(&it, "apple", 5);
        eng_memtable_iter_entry(&it, &e);
        cr_expect(eq(u64, e.seq, 1));
        eng_memtable_iter_seek(&it, "zebra", 5);
        cr_expect(not(eng_memtable_iter_valid(&it)));
        eng_memtable_unref(mt);
}

static int cmp_keys(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(memtable, many_random_inserts_stay_sorted_and_findable)
{
        enum { N = 20000 };
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_memtable_iter it;
        char **keys = calloc(N, sizeof(char *));
        unsigned i = 0;
        size_t bytes0 = eng_memtable_bytes(mt);

        srand(11);
        for (unsigned k = 0; k < N; k++) {
                keys[k] = malloc(24);
                snprintf(keys[k], 24, "key-%08x-%u", (unsigned)rand(), k);
                put(mt, keys[k], (uint32_t)strlen(keys[k]), k + 1, ENG_ENTRY_VALUE, keys[k]);
        }
        cr_assert(eng_memtable_check(mt), "skiplist invariants broken");
        cr_expect(eq(u64, eng_memtable_count(mt), N));
        cr_expect(gt(sz, eng_memtable_bytes(mt), bytes0 + (size_t)N * 40));
        qsort(keys, N, sizeof(char *), cmp_keys);
        eng_memtable_iter_init(&it, mt);
        for (eng_memtable_iter_seek_first(&it); eng_memtable_iter_valid(&it); eng_memtable_iter_next(&it), i++) {
                struct eng_entry e;

                eng_memtable_iter_entry(&it, &e);
                cr_assert(eq(u32, e.key_len, (uint32_t)strlen(keys[i])));
                cr_assert(eq(int, memcmp(e.key, keys[i], e.key_len), 0), "out of order at %u", i);
                cr_assert(eq(int, memcmp(e.value, keys[i], e.value_len), 0));
        }
        cr_expect(eq(u32, i, N));
        for (unsigned k = 0; k < N; k += 97) {
                struct eng_entry e;

                cr_expect(eq(int, eng_memtable_get(mt, keys[k], (uint32_t)strlen(keys[k]), UINT64_MAX - 1, &e), 0));
        }
        for (unsigned k = 0; k < N; k++)
                free(keys[k]);
        free(keys);
        eng_memtable_unref(mt);
}

Test(memtable, references_keep_it_alive)
{
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_entry e;

        put(mt, "x", 1, 1, ENG_ENTRY_VALUE, "y");
        eng_memtable_ref(mt);
        eng_memtable_unref(mt);
        cr_expect(eq(int, eng_memtable_get(mt, "x", 1, 5, &e), 0), "freed while still referenced");
        eng_memtable_unref(mt);
        eng_memtable_unref(NULL);
}

/* Keys in order (outside the directory's buckets: searched from the head,
 * then the directory rebuilt), then shuffled ones over the whole range,
 * then short keys (zero-padded prefix words) and overwrites: every version
 * stays findable and in order, and the directory's invariant holds. */
Test(memtable, the_directory_finds_every_key_whatever_the_insert_order)
{
        enum { N = 12000 };
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_memtable_iter it;
        char k[32], prev[32] = "";
        uint64_t seq = 1, n = 0;

        for (unsigned i = 0; i < N; i++) {
                snprintf(k, sizeof(k), "table-%010u", i * 3);
                put(mt, k, (uint32_t)strlen(k), seq++, ENG_ENTRY_VALUE, "seq");
        }
        cr_assert(eng_memtable_check(mt));
        srand(5);
        for (unsigned i = 0; i < N; i++) {
                snprintf(k, sizeof(k), "table-%010u", (unsigned)rand() % (N * 3));
                put(mt, k, (uint32_t)strlen(k), seq++, ENG_ENTRY_VALUE, "rnd");
        }
        for (unsigned i = 0; i < 300; i++) {
                snprintf(k, sizeof(k), "%u", i);
                put(mt, k, (uint32_t)strlen(k), seq++, ENG_ENTRY_VALUE, "short");
        }
        cr_assert(eng_memtable_check(mt), "order or directory broken");
        for (unsigned i = 0; i < N; i++) {
                struct eng_entry e;

                snprintf(k, sizeof(k), "table-%010u", i * 3);
                cr_assert(eq(int, eng_memtable_get(mt, k, (uint32_t)strlen(k), UINT64_MAX, &e), 0),
                          "%s missing", k);
                cr_assert(eq(int, eng_memtable_get(mt, k, (uint32_t)strlen(k), i + 1, &e), 0));
                cr_expect(eq(u64, e.seq, i + 1), "the in-order version at its own snapshot");
        }
        expect_value(mt, "42", UINT64_MAX, "short", 2 * (uint64_t)N + 43);
        eng_memtable_iter_init(&it, mt);
        for (eng_memtable_iter_seek_first(&it); eng_memtable_iter_valid(&it); eng_memtable_iter_next(&it)) {
                struct eng_entry e;
                size_t len;

                eng_memtable_iter_entry(&it, &e);
                len = e.key_len < sizeof(k) - 1 ? e.key_len : sizeof(k) - 1;
                memcpy(k, e.key, len);
                k[len] = 0;
                cr_assert(le(int, strcmp(prev, k), 0), "%s after %s", k, prev);
                memcpy(prev, k, len + 1);
                n++;
        }
        cr_expect(eq(u64, n, 2 * (uint64_t)N + 300));
        eng_memtable_unref(mt);
}

/* Keys written in order land in buckets a rebuild rounded the range up
 * to: each tall node takes over a few buckets after its own, not all of
 * them. Regression: it took every later bucket, so a sequential load
 * cost O(buckets) a tall node (fillseq of 10M keys ran at 250k puts/s
 * against 1.3M with the fix). */
Test(memtable, keys_written_in_order_take_over_few_directory_buckets)
{
        enum { N = 200000 };
        struct eng_memtable *mt = eng_memtable_new(NULL);
        char k[32];

        for (unsigned i = 0; i < N; i++) {
                snprintf(k, sizeof(k), "%016llx", (unsigned long long)i << 40);
                put(mt, k, (uint32_t)strlen(k), i + 1, ENG_ENTRY_VALUE, "v");
        }
        /* ~N/4 tall nodes, each taking over at most 8 entries. */
        cr_expect(le(u64, eng_memtable_dir_pushes(mt), 8 * (uint64_t)N / 2),
                  "%llu entries rewritten", (unsigned long long)eng_memtable_dir_pushes(mt));
        for (unsigned i = 0; i < N; i += 997) {
                struct eng_entry e;

                snprintf(k, sizeof(k), "%016llx", (unsigned long long)i << 40);
                cr_assert(eq(int, eng_memtable_get(mt, k, (uint32_t)strlen(k), UINT64_MAX, &e), 0), "%s", k);
        }
        cr_assert(eng_memtable_check(mt));
        eng_memtable_unref(mt);
}

/* eng_memtable_put_many does what eng_memtable_put does one by one: batches
 * of 1..8 puts over two memtables, with duplicates inside a batch and bad
 * kinds, leave valid lists whose every version reads back. */
Test(memtable, put_many_matches_one_by_one_puts)
{
        enum { N = 30000 };
        struct eng_memtable *mt[2] = { eng_memtable_new(NULL), eng_memtable_new(NULL) };
        static char keys[N][24];
        static struct eng_entry e[N];
        static int which[N];
        uint64_t want[2] = { 0, 0 };
        unsigned i = 0;

        srand(7);
        while (i < N) {
                struct eng_memtable_put puts[ENG_MEMTABLE_PUT_MANY];
                unsigned n = 1 + (unsigned)rand() % ENG_MEMTABLE_PUT_MANY;

                if (n > N - i)
                        n = N - i;
                for (unsigned j = 0; j < n; j++, i++) {
                        int len = snprintf(keys[i], sizeof(keys[i]), "k%07u", (unsigned)rand() % 5000);

                        e[i] = (struct eng_entry){ .key = (const uint8_t *)keys[i], .key_len = (uint32_t)len,
                                                   .value = (const uint8_t *)"v", .value_len = 1,
                                                   .seq = i + 1, .kind = ENG_ENTRY_VALUE };
                        if (j > 0 && rand() % 10 == 0)  /* the previous put again: -EEXIST */
                                e[i] = e[i - 1];
                        if (rand() % 100 == 0)
                                e[i].kind = ENG_ENTRY_KIND_INVALID;
                        puts[j] = (struct eng_memtable_put){ .mt = mt[i % 2], .e = &e[i] };
                        if (j > 0 && e[i].seq == e[i - 1].seq)
                                puts[j].mt = puts[j - 1].mt;
                        which[i] = puts[j].mt == mt[1];
                }
                eng_memtable_put_many(puts, n);
                for (unsigned j = 0; j < n; j++) {
                        const struct eng_entry *x = puts[j].e;
                        int expect = x->kind == ENG_ENTRY_KIND_INVALID ? -EINVAL
                                     : (j > 0 && x->seq == puts[j - 1].e->seq &&
                                        puts[j - 1].e->kind != ENG_ENTRY_KIND_INVALID) ? -EEXIST : 0;

                        cr_assert(eq(int, puts[j].res, expect), "put %u of %u", j, n);
                        if (expect == 0)
                                want[puts[j].mt == mt[1]]++;
                }
        }
        for (int m = 0; m < 2; m++) {
                cr_expect(eng_memtable_check(mt[m]));
                cr_expect(eq(u64, eng_memtable_count(mt[m]), want[m]));
        }
        for (unsigned k = 0; k < N; k++) {
                struct eng_entry got;

                if (e[k].kind == ENG_ENTRY_KIND_INVALID)
                        continue;
                cr_assert(eq(int, eng_memtable_get(mt[which[k]], e[k].key, e[k].key_len, e[k].seq, &got), 0),
                          "version %u lost", k);
                cr_assert(eq(u64, got.seq, e[k].seq), "version %u lost", k);
        }
        eng_memtable_unref(mt[0]);
        eng_memtable_unref(mt[1]);
}

/* A hot key's run of versions fills one directory bucket: a seek to the
 * key after it, or a put there, climbs to higher levels instead of
 * walking the run on the directory's (which made short scans after a
 * zipfian update load 14x slower than RocksDB's), and both still land
 * where they should. */
Test(memtable, a_long_run_of_one_key_s_versions_is_searched_from_the_head)
{
        enum { KEYS = 4000, VERSIONS = 20000 };
        struct eng_memtable *mt = eng_memtable_new(NULL);
        struct eng_memtable_iter it;
        struct eng_entry e;
        char k[32];
        uint64_t seq = 1, climbs;

        for (unsigned i = 0; i < KEYS; i++) {
                snprintf(k, sizeof(k), "key%08u", i * 10);
                put(mt, k, (uint32_t)strlen(k), seq++, ENG_ENTRY_VALUE, "v");
        }
        for (unsigned i = 0; i < VERSIONS; i++)
                put(mt, "key00020000", 11, seq++, ENG_ENTRY_VALUE, "hot");
        climbs = eng_memtable_climbs(mt);
        /* the key right after the run, as a put and as a seek */
        put(mt, "key00020001", 11, seq++, ENG_ENTRY_VALUE, "after");
        cr_expect(gt(u64, eng_memtable_climbs(mt), climbs));
        eng_memtable_iter_init(&it, mt);
        eng_memtable_iter_seek(&it, "key00020000x", 12);
        cr_assert(eng_memtable_iter_valid(&it));
        eng_memtable_iter_entry(&it, &e);
        cr_expect(eq(int, memcmp(e.key, "key00020001", 11), 0));
        cr_expect(gt(u64, it.climbs, 0));
        /* past the run's versions down to seq 0 */
        eng_memtable_iter_seek_version(&it, "key00020000", 11, 0);
        cr_assert(eng_memtable_iter_valid(&it));
        eng_memtable_iter_entry(&it, &e);
        cr_expect(eq(int, memcmp(e.key, "key00020001", 11), 0));
        /* into the run: the newest version at or below a seq */
        eng_memtable_iter_seek_version(&it, "key00020000", 11, KEYS + 100);
        cr_assert(eng_memtable_iter_valid(&it));
        eng_memtable_iter_entry(&it, &e);
        cr_expect(eq(u64, e.seq, KEYS + 100));
        /* a key far from the run still starts from the directory */
        climbs = it.climbs;
        eng_memtable_iter_seek(&it, "key00001000", 11);
        cr_expect(eq(u64, it.climbs, climbs));
        cr_assert(eng_memtable_iter_valid(&it));
        eng_memtable_iter_entry(&it, &e);
        cr_expect(eq(int, memcmp(e.key, "key00001000", 11), 0));
        cr_assert(eng_memtable_check(mt));
        eng_memtable_unref(mt);
}
