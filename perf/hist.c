/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The benchmarks' log-linear latency histogram; see hist.h.
 */
#include "perf/hist.h"

/* The smallest value that lands in bucket i. */
static uint64_t bucket_low(unsigned i)
{
        unsigned exp;

        if (i < HIST_SUB)
                return i;
        exp = i / HIST_SUB + HIST_SUB_BITS - 1u;
        return (UINT64_C(1) << exp) | ((uint64_t)(i % HIST_SUB) << (exp - HIST_SUB_BITS));
}

void hist_merge(struct hist *dst, const struct hist *src)
{
        for (unsigned i = 0; i < HIST_BUCKETS; i++)
                dst->n[i] += src->n[i];
        dst->count += src->count;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
        uint64_t want = (uint64_t)(q * (double)h->count), seen = 0;

        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                seen += h->n[i];
                if (seen > want)
                        return bucket_low(i);
        }
        return 0;
}

uint64_t hist_max(const struct hist *h)
{
        for (unsigned i = HIST_BUCKETS; i-- > 0;)
                if (h->n[i])
                        return bucket_low(i);
        return 0;
}
