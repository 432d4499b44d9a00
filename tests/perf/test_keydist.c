/* SPDX-License-Identifier: Apache-2.0 */
/* The benchmarks' key distributions and YCSB mixes (perf/keydist.h): every
 * draw in range, and each distribution's shape, over fixed seeds. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "perf/keydist.h"

#define DRAWS 200000u

/* counts[i] = how often item i came up in DRAWS draws. Caller frees. */
static uint64_t *histogram(struct keydist *d, uint64_t live, uint64_t seed)
{
        uint64_t *c = calloc(d->n, sizeof(*c));
        uint64_t rng = seed;

        cr_assert_not_null(c);
        for (unsigned i = 0; i < DRAWS; i++) {
                uint64_t k = keydist_next(d, &rng, live);

                cr_assert_lt(k, d->n);
                c[k]++;
        }
        return c;
}

static int cmp_desc(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? 1 : x > y ? -1 : 0;
}

Test(keydist, names_round_trip)
{
        for (int k = 0; k < KEYDIST_MAX; k++)
                cr_assert_eq(keydist_parse(keydist_name((enum keydist_kind)k)), k);
        cr_assert_eq(keydist_parse("zipf"), KEYDIST_INVALID);
        cr_assert_eq(keydist_parse(""), KEYDIST_INVALID);
}

Test(keydist, init_rejects_bad_arguments)
{
        struct keydist d;

        cr_assert_eq(keydist_init(&d, KEYDIST_UNIFORM, 0, 0.5), -EINVAL);
        cr_assert_eq(keydist_init(&d, KEYDIST_ZIPFIAN, 10, 1.0), -EINVAL);
        cr_assert_eq(keydist_init(&d, KEYDIST_LATEST, 10, 0.0), -EINVAL);
        cr_assert_eq(keydist_init(&d, KEYDIST_ZIPFIAN, 10, NAN), -EINVAL);
        cr_assert_eq(keydist_init(&d, KEYDIST_MAX, 10, 0.5), -EINVAL);
        cr_assert_eq(keydist_init(&d, KEYDIST_UNIFORM, 10, 1.0), 0, "theta only matters to zipf");
}

Test(keydist, one_item_is_always_item_zero)
{
        struct keydist d;
        uint64_t rng = 7;

        for (int k = 0; k < KEYDIST_MAX; k++) {
                cr_assert_eq(keydist_init(&d, (enum keydist_kind)k, 1, 0.99), 0);
                for (int i = 0; i < 100; i++)
                        cr_assert_eq(keydist_next(&d, &rng, 1), 0);
        }
}

Test(keydist, uniform_is_flat)
{
        struct keydist d;
        uint64_t *c;

        cr_assert_eq(keydist_init(&d, KEYDIST_UNIFORM, 100, 0), 0);
        c = histogram(&d, 0, 42);
        for (int i = 0; i < 100; i++)   /* mean 2000, sd ~45 */
                cr_assert(c[i] > 1700 && c[i] < 2300, "item %d: %lu", i, (unsigned long)c[i]);
        free(c);
}

Test(keydist, zipfian_is_skewed_and_scrambled)
{
        struct keydist d;
        uint64_t *c, top10 = 0, max_i = 0;

        cr_assert_eq(keydist_init(&d, KEYDIST_ZIPFIAN, 1000, 0.99), 0);
        c = histogram(&d, 0, 42);
        for (uint64_t i = 1; i < 1000; i++)
                if (c[i] > c[max_i])
                        max_i = i;
        /* rank 0 takes 1/zeta(n) of the draws; hashed away from item 0 */
        cr_assert(fabs((double)c[max_i] / DRAWS - 1.0 / d.zetan) < 0.01,
                  "top share %f, expected %f", (double)c[max_i] / DRAWS, 1.0 / d.zetan);
        cr_assert_neq(max_i, 0);
        qsort(c, 1000, sizeof(*c), cmp_desc);
        for (int i = 0; i < 100; i++)
                top10 += c[i];
        cr_assert_gt(top10, DRAWS / 2, "the top 10%% of items take most draws");
        free(c);
}

Test(keydist, latest_prefers_the_newest_live_items)
{
        struct keydist d;
        uint64_t *c;

        cr_assert_eq(keydist_init(&d, KEYDIST_LATEST, 1000, 0.99), 0);
        c = histogram(&d, 500, 42);
        for (int i = 500; i < 1000; i++)
                cr_assert_eq(c[i], 0, "item %d is not live yet", i);
        for (int i = 0; i < 499; i++)
                cr_assert_geq(c[499], c[i]);
        cr_assert_gt(c[499], c[498]);
        cr_assert_gt(c[498], c[400]);
        free(c);
}

Test(keydist, sequential_wraps)
{
        struct keydist d;
        uint64_t rng = 1;

        cr_assert_eq(keydist_init(&d, KEYDIST_SEQUENTIAL, 3, 0), 0);
        for (uint64_t i = 0; i < 10; i++)
                cr_assert_eq(keydist_next(&d, &rng, 0), i % 3);
}

Test(keydist, gaussian_centres_on_the_middle)
{
        struct keydist d;
        uint64_t rng = 42, within = 0;
        double sum = 0;

        cr_assert_eq(keydist_init(&d, KEYDIST_GAUSSIAN, 80000, 0), 0);
        for (unsigned i = 0; i < DRAWS; i++) {
                uint64_t k = keydist_next(&d, &rng, 0);

                cr_assert_lt(k, d.n);
                sum += (double)k;
                within += k >= 30000 && k < 50000;      /* mean +- sigma */
        }
        cr_assert(fabs(sum / DRAWS - 40000.0) < 400.0, "mean %f", sum / DRAWS);
        cr_assert(fabs((double)within / DRAWS - 0.6827) < 0.01, "within sigma %f",
                  (double)within / DRAWS);
}

Test(keydist, ycsb_mixes_draw_their_shares)
{
        const char *letters = "ABCDEF";

        cr_assert_null(ycsb_mix_get('G'));
        cr_assert_eq(ycsb_mix_get('a'), ycsb_mix_get('A'));
        for (const char *l = letters; *l; l++) {
                const struct ycsb_mix *m = ycsb_mix_get(*l);
                uint64_t n[YCSB_OP_MAX] = { 0 }, rng = 99;
                unsigned sum = 0;

                cr_assert_not_null(m);
                for (int op = 0; op < YCSB_OP_MAX; op++)
                        sum += m->pct[op];
                cr_assert_eq(sum, 100, "mix %c", *l);
                for (unsigned i = 0; i < DRAWS; i++)
                        n[ycsb_next_op(m, &rng)]++;
                for (int op = 0; op < YCSB_OP_MAX; op++)
                        cr_assert(fabs(100.0 * (double)n[op] / DRAWS - m->pct[op]) < 1.0,
                                  "mix %c op %s", *l, ycsb_op_name((enum ycsb_op)op));
        }
        cr_assert_eq(ycsb_mix_get('D')->dist, KEYDIST_LATEST);
}
