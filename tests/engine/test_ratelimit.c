/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-partition rate limiter (engine/ratelimit.h): a partition at or
 * under its limit is never refused, one over it has the excess refused,
 * counts start again each second, kinds and partitions are apart, hot
 * partitions keep their slots against many cold ones, batches count a
 * partition once and give it back once -- and against a model with
 * random traffic, whatever the evictions, nothing under its limit is
 * refused.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "engine/ratelimit.h"
#include "tests/rng.h"

TestSuite(ratelimit, .timeout = 30);

#define R ENG_RATELIMIT_READ
#define W ENG_RATELIMIT_WRITE

/* Distinct tokens that land in every set (the limiter takes them as
 * hashes): i in the high half, so small tables see all their sets. */
static uint64_t tok(uint64_t i)
{
        return (i + 1) << 32 | (i * 2654435761u + 1);
}

/* Operations of kind on token in second now_s let through, of n tried. */
static uint32_t takes(struct eng_ratelimit *rl, uint64_t token, enum eng_ratelimit_kind kind,
                      uint32_t limit, uint32_t now_s, uint32_t n)
{
        uint32_t ok = 0;

        for (uint32_t i = 0; i < n; i++)
                ok += eng_ratelimit_take(rl, token, kind, limit, now_s);
        return ok;
}

Test(ratelimit, init_wants_a_power_of_two)
{
        struct eng_ratelimit rl;

        cr_expect(eq(int, eng_ratelimit_init(&rl, 0), -EINVAL));
        cr_expect(eq(int, eng_ratelimit_init(&rl, 3), -EINVAL));
        eng_ratelimit_fini(&rl);
        cr_assert(eq(int, eng_ratelimit_init(&rl, 1), 0));
        eng_ratelimit_fini(&rl);
        eng_ratelimit_fini(&rl);
}

Test(ratelimit, the_limit_is_let_through_and_the_rest_refused)
{
        struct eng_ratelimit rl;

        cr_assert(eq(int, eng_ratelimit_init(&rl, ENG_RATELIMIT_SETS), 0));
        for (uint32_t i = 0; i < 5; i++)
                cr_assert(eng_ratelimit_take(&rl, tok(1), W, 5, 100), "op %u is under the limit", i);
        cr_expect(not(eng_ratelimit_take(&rl, tok(1), W, 5, 100)));
        cr_expect(eq(u32, takes(&rl, tok(1), W, 5, 100, 200), 0), "the excess is refused");
        cr_expect(eq(u32, takes(&rl, tok(1), R, 5, 100, 200), 5), "reads are counted apart");
        cr_expect(eq(u32, takes(&rl, tok(2), W, 5, 100, 200), 5), "so is every other partition");
        cr_expect(eq(u32, takes(&rl, tok(1), W, 6, 100, 1), 1), "a raised limit has room at once");
        cr_expect(eq(u32, takes(&rl, tok(1), W, 2, 100, 1), 0), "a lowered one none");
        eng_ratelimit_fini(&rl);
}

Test(ratelimit, counts_start_again_each_second)
{
        struct eng_ratelimit rl;

        cr_assert(eq(int, eng_ratelimit_init(&rl, ENG_RATELIMIT_SETS), 0));
        cr_expect(eq(u32, takes(&rl, tok(7), R, 3, 10, 100), 3));
        cr_expect(eq(u32, takes(&rl, tok(7), R, 3, 11, 100), 3), "refused ones took no room");
        cr_expect(eq(u32, takes(&rl, tok(7), R, 3, 11, 100), 0));
        cr_expect(eq(u32, takes(&rl, tok(7), R, 3, 13, 2), 2));
        cr_expect(eng_ratelimit_has_room(&rl, tok(7), R, 3, 13));
        cr_expect(eq(u32, takes(&rl, tok(7), R, 3, 13, 1), 1));
        cr_expect(not(eng_ratelimit_has_room(&rl, tok(7), R, 3, 13)));
        cr_expect(eng_ratelimit_has_room(&rl, tok(7), R, 3, 14), "a new second");
        eng_ratelimit_fini(&rl);
}

Test(ratelimit, limit_0_is_no_limit)
{
        struct eng_ratelimit rl;

        cr_assert(eq(int, eng_ratelimit_init(&rl, 1), 0));
        cr_expect(eq(u32, takes(&rl, tok(1), W, 0, 5, 100000), 100000));
        cr_expect(eng_ratelimit_has_room(&rl, tok(1), W, 0, 5));
        for (uint32_t i = 0; i < ENG_RATELIMIT_WAYS; i++)
                cr_expect(eq(u64, rl.slots[i].token, 0), "and takes no slot");
        eng_ratelimit_fini(&rl);
}

/* One set: the busy partitions keep their slots and counts while a
 * stream of partitions seen once each passes through the fewest-ops slot. */
Test(ratelimit, hot_partitions_keep_their_slots_against_cold_ones)
{
        struct eng_ratelimit rl;

        cr_assert(eq(int, eng_ratelimit_init(&rl, 1), 0));
        for (uint64_t h = 0; h < ENG_RATELIMIT_WAYS - 1; h++)
                cr_assert(eq(u32, takes(&rl, tok(h), W, 10, 1, 10), 10));
        for (uint64_t c = 100; c < 10100; c++)
                cr_assert(eng_ratelimit_take(&rl, tok(c), W, 10, 1), "a cold partition %llu",
                          (unsigned long long)c);
        for (uint64_t h = 0; h < ENG_RATELIMIT_WAYS - 1; h++)
                cr_expect(not(eng_ratelimit_take(&rl, tok(h), W, 10, 1)), "hot %llu still at its "
                          "limit", (unsigned long long)h);
        eng_ratelimit_fini(&rl);
}

/* A partition evicted by busier ones starts again from 0: more let
 * through, never less. */
Test(ratelimit, an_evicted_partition_starts_again)
{
        struct eng_ratelimit rl;

        cr_assert(eq(int, eng_ratelimit_init(&rl, 1), 0));
        cr_assert(eq(u32, takes(&rl, tok(0), W, 3, 1, 3), 3));
        for (uint64_t h = 1; h <= ENG_RATELIMIT_WAYS; h++)
                cr_assert(eq(u32, takes(&rl, tok(h), W, 100, 1, 50), 50));
        cr_expect(eq(u32, takes(&rl, tok(0), W, 3, 1, 10), 3), "forgotten, so counted afresh");
        eng_ratelimit_fini(&rl);
}

Test(ratelimit, a_batch_counts_each_partition_once)
{
        struct eng_ratelimit rl;
        uint32_t st;

        cr_assert(eq(int, eng_ratelimit_init(&rl, ENG_RATELIMIT_SETS), 0));
        cr_assert(eq(u32, takes(&rl, tok(1), W, 3, 9, 2), 2));
        /* A batch of rows: two of partition 1, three of 2. */
        cr_expect(eng_ratelimit_has_room(&rl, tok(1), W, 3, 9));
        cr_expect(eng_ratelimit_has_room(&rl, tok(2), W, 3, 9));
        st = eng_ratelimit_stamp(&rl);
        eng_ratelimit_take_once(&rl, tok(1), W, 9, st);
        eng_ratelimit_take_once(&rl, tok(2), W, 9, st);
        eng_ratelimit_take_once(&rl, tok(1), W, 9, st);
        eng_ratelimit_take_once(&rl, tok(2), W, 9, st);
        eng_ratelimit_take_once(&rl, tok(2), W, 9, st);
        cr_expect(not(eng_ratelimit_has_room(&rl, tok(1), W, 3, 9)), "1: 2 + 1");
        cr_expect(eq(u32, takes(&rl, tok(2), W, 3, 9, 5), 2), "2: 1, so 2 more");
        /* The next batch counts them again. */
        st = eng_ratelimit_stamp(&rl);
        eng_ratelimit_take_once(&rl, tok(3), W, 9, st);
        eng_ratelimit_take_once(&rl, tok(3), W, 9, st);
        st = eng_ratelimit_stamp(&rl);
        eng_ratelimit_take_once(&rl, tok(3), W, 9, st);
        cr_expect(eq(u32, takes(&rl, tok(3), W, 3, 9, 5), 1));
        eng_ratelimit_fini(&rl);
}

Test(ratelimit, give_back_undoes_a_batch_once_and_only_in_its_second)
{
        struct eng_ratelimit rl;
        uint32_t st, g;

        cr_assert(eq(int, eng_ratelimit_init(&rl, ENG_RATELIMIT_SETS), 0));
        st = eng_ratelimit_stamp(&rl);
        eng_ratelimit_take_once(&rl, tok(1), W, 20, st);
        eng_ratelimit_take_once(&rl, tok(1), W, 20, st);
        eng_ratelimit_take_once(&rl, tok(2), W, 20, st);
        cr_assert(eq(u32, takes(&rl, tok(1), W, 2, 20, 5), 1), "the batch took 1 of 2");
        /* An aborted batch: give back once per partition. */
        g = eng_ratelimit_stamp(&rl);
        eng_ratelimit_give_back_once(&rl, tok(1), W, 20, g);
        eng_ratelimit_give_back_once(&rl, tok(1), W, 20, g);
        eng_ratelimit_give_back_once(&rl, tok(9), W, 20, g);      /* never counted: nothing */
        cr_expect(eq(u32, takes(&rl, tok(1), W, 2, 20, 5), 1), "1 given back, not 2");
        cr_expect(eq(u32, takes(&rl, tok(1), R, 2, 20, 5), 2), "reads untouched");
        /* A second later there is nothing of it to give back. */
        cr_assert(eq(u32, takes(&rl, tok(2), W, 2, 21, 2), 2));
        g = eng_ratelimit_stamp(&rl);
        eng_ratelimit_give_back_once(&rl, tok(2), W, 20, g);
        cr_expect(eq(u32, takes(&rl, tok(2), W, 2, 21, 5), 0));
        eng_ratelimit_fini(&rl);
}

Test(ratelimit, a_slot_counts_one_partition_whole)
{
        struct eng_ratelimit rl;

        cr_assert(eq(int, eng_ratelimit_init(&rl, 2), 0));
        /* Same set (high half), different tokens: never one count. */
        cr_expect(eq(u32, takes(&rl, UINT64_C(5) << 32 | 1, W, 4, 1, 10), 4));
        cr_expect(eq(u32, takes(&rl, UINT64_C(5) << 32 | 2, W, 4, 1, 10), 4));
        cr_expect(eq(u32, takes(&rl, UINT64_C(7) << 32 | 1, W, 4, 1, 10), 4));
        eng_ratelimit_fini(&rl);
}

/*
 * The model: random traffic over many partitions (far more than the
 * slots of a small table, so slots are evicted all the time), a few of
 * them hot, over several seconds. A partition that has had fewer than
 * limit operations let through this second is never refused; with a
 * table big enough to hold them all, exactly limit are let through.
 */
static void model_run(uint32_t n_sets, bool exact)
{
        enum { PARTS = 512, LIMIT = 8 };
        static uint32_t passed[PARTS][2];
        struct eng_ratelimit rl;
        uint64_t refused = 0, rng = 0x9e3779b97f4a7c15u + n_sets;

        cr_assert(eq(int, eng_ratelimit_init(&rl, n_sets), 0));
        for (uint32_t sec = 1; sec <= 6; sec++) {
                memset(passed, 0, sizeof(passed));
                for (uint32_t i = 0; i < 40000; i++) {
                        uint64_t x = test_rng_next(&rng);
                        uint32_t p = (uint32_t)(x % 8 ? (x >> 8) % 8 : (x >> 8) % PARTS);
                        enum eng_ratelimit_kind k = (x >> 40) % 2 ? R : W;
                        bool ok = eng_ratelimit_take(&rl, tok(p), k, LIMIT, sec);

                        if (passed[p][k] < LIMIT)
                                cr_assert(ok, "partition %u under its limit refused", p);
                        passed[p][k] += ok;
                        refused += !ok;
                }
                for (uint32_t p = 0; exact && p < 8; p++)
                        cr_expect(eq(u32, passed[p][R], LIMIT), "hot %u: exactly the limit", p);
        }
        cr_expect(gt(u64, refused, 0), "the hot partitions were refused");
        eng_ratelimit_fini(&rl);
}

Test(ratelimit, model_nothing_under_its_limit_is_refused_with_evictions)
{
        model_run(4, false);
}

Test(ratelimit, model_exact_when_every_partition_has_a_slot)
{
        model_run(1024, true);
}
