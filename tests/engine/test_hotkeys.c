/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Space-Saving top-k of hot keys (engine/hotkeys.h): its guarantees
 * over random streams (every key above N/slots held, true counts within
 * [count - err, count], the hottest first), long keys, decay, sampling.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "engine/hotkeys.h"

#define KEYS 1000u

static uint64_t truth[KEYS];

/* Key i's bytes into buf; their length. */
static size_t key_of(uint32_t i, char *buf)
{
        return (size_t)snprintf(buf, 16, "key:%u", i);
}

/* xorshift64*: a deterministic stream. */
static uint64_t rnd(uint64_t *s)
{
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        return *s * UINT64_C(2685821657736338717);
}

/* A skewed key: i with weight about 1 / (i + 1). */
static uint32_t skewed(uint64_t *s)
{
        double u = (double)(rnd(s) >> 11) / (double)(UINT64_C(1) << 53);
        uint32_t i = (uint32_t)((double)KEYS * u * u * u * u);

        return i < KEYS ? i : KEYS - 1;
}

static int slot_of(const struct eng_hotkeys *h, uint32_t i)
{
        char k[16];
        size_t len = key_of(i, k);

        for (uint32_t j = 0; j < h->n; j++)
                if (h->s[j].len == len && memcmp(h->s[j].key, k, len) == 0)
                        return (int)j;
        return -1;
}

Test(hotkeys, every_key_above_n_over_slots_is_held_with_a_bounded_count)
{
        for (uint64_t seed = 1; seed <= 5; seed++) {
                struct eng_hotkeys h = { 0 };
                struct eng_hot_slot top[ENG_HOT_SLOTS];
                uint64_t s = seed * 7919, n = 50000;
                uint32_t got;
                char k[16];

                memset(truth, 0, sizeof(truth));
                for (uint64_t a = 0; a < n; a++) {
                        uint32_t i = skewed(&s);

                        truth[i]++;
                        eng_hotkeys_add(&h, k, key_of(i, k));
                }
                for (uint32_t i = 0; i < KEYS; i++) {
                        int j = slot_of(&h, i);

                        if (truth[i] > n / ENG_HOT_SLOTS)
                                cr_assert(ge(int, j, 0), "seed %llu: key %u (%llu of %llu) lost",
                                          (unsigned long long)seed, i,
                                          (unsigned long long)truth[i], (unsigned long long)n);
                        if (j < 0)
                                continue;
                        cr_assert(le(u64, truth[i], h.s[j].count), "key %u", i);
                        cr_assert(ge(u64, truth[i], h.s[j].count - h.s[j].err), "key %u", i);
                }
                got = eng_hotkeys_top(&h, top, 3);
                cr_assert(eq(u32, got, 3));
                cr_assert(ge(u64, top[0].count, top[1].count));
                cr_assert(ge(u64, top[1].count, top[2].count));
                cr_assert(eq(str, (char *)(top[0].key), "key:0"), "the hottest first");
        }
}

Test(hotkeys, long_keys_are_cut_and_told_apart_by_their_hash)
{
        struct eng_hotkeys h = { 0 };
        char a[300], b[300];

        memset(a, 'x', sizeof(a));
        memcpy(b, a, sizeof(b));
        b[299] = 'y';                   /* differs after the kept bytes */
        for (int i = 0; i < 3; i++)
                eng_hotkeys_add(&h, a, sizeof(a));
        eng_hotkeys_add(&h, b, sizeof(b));
        cr_assert(eq(u32, h.n, 2));
        cr_assert(eq(u32, h.s[0].len, ENG_HOT_KEY_BYTES));
        cr_assert(h.s[0].cut);
        cr_assert(eq(u64, h.s[0].count, 3));
        cr_assert(eq(u64, h.s[1].count, 1));
        eng_hotkeys_add(&h, "short", 5);
        cr_assert(not(h.s[2].cut));
        cr_assert(eq(u32, h.s[2].len, 5));
}

Test(hotkeys, decay_follows_what_is_hot_now)
{
        struct eng_hotkeys h = { 0 };
        struct eng_hot_slot top[1];
        char k[16];

        for (int i = 0; i < 1000; i++)
                eng_hotkeys_add(&h, k, key_of(1, k));
        eng_hotkeys_add(&h, k, key_of(2, k));
        eng_hotkeys_decay(&h);
        cr_assert(eq(u32, h.n, 1), "a count halved to 0 goes");
        cr_assert(eq(u64, h.s[0].count, 500));
        for (int round = 0; round < 4; round++) {
                for (int i = 0; i < 300; i++)
                        eng_hotkeys_add(&h, k, key_of(7, k));
                eng_hotkeys_decay(&h);
        }
        cr_assert(eq(u32, eng_hotkeys_top(&h, top, 1), 1));
        cr_assert(eq(str, (char *)top[0].key, "key:7"), "the new hot key rose to the top");
        for (int i = 0; i < 20; i++)
                eng_hotkeys_decay(&h);
        cr_assert(eq(u32, h.n, 0), "all gone once nothing comes");
}

/* About one access in ENG_HOT_SAMPLE is counted, and not by position: a
 * load alternating two kinds of access gets both sampled. */
Test(hotkeys, one_access_in_the_sample_rate_is_counted_at_random)
{
        uint32_t state = 0;
        unsigned n = 0, odd = 0;

        for (unsigned i = 0; i < 10000 * ENG_HOT_SAMPLE; i++) {
                bool s = eng_hot_sampled(&state);

                n += s;
                odd += s && i % 2;
        }
        cr_assert(gt(u32, n, 9000));
        cr_assert(lt(u32, n, 11000));
        cr_assert(gt(u32, odd, n / 3), "%u of %u sampled accesses were odd", odd, n);
}
