/* SPDX-License-Identifier: Apache-2.0 */
/* The benchmarks' latency histogram (perf/hist.h): quantiles and the
 * maximum land in the right bucket. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "perf/hist.h"

Test(hist, max_is_the_largest_samples_bucket)
{
        struct hist *h = calloc(1, sizeof(*h));

        cr_assert_not_null(h);
        cr_expect_eq(hist_max(h), 0);
        for (uint64_t v = 1; v <= 1000; v++)
                hist_add(h, v);
        hist_add(h, 1000000);
        /* within the bucket's ~1.5% below the value */
        cr_expect(hist_max(h) <= 1000000 && hist_max(h) > 980000, "max %lu", (unsigned long)hist_max(h));
        cr_expect_leq(hist_quantile(h, 0.5), hist_quantile(h, 0.9));
        cr_expect_leq(hist_quantile(h, 0.999), hist_max(h));
        cr_expect_lt(hist_quantile(h, 0.99), 1000);
        free(h);
}

Test(hist, merge_adds_every_sample)
{
        struct hist *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

        cr_assert(a && b);
        hist_add(a, 10);
        hist_add(b, 5000);
        hist_merge(a, b);
        cr_expect_eq(a->count, 2);
        cr_expect_eq(hist_quantile(a, 0.0), 10);
        cr_expect_eq(hist_max(a), hist_max(b));
        free(a);
        free(b);
}
