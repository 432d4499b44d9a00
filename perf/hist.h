/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A log-linear latency histogram for the benchmarks: 64 sub-buckets per
 * power of two (values below 64 exact, above within ~1.5%), 3.7k buckets
 * covering all of uint64_t, so adding a sample is a few instructions and
 * never allocates. Quantiles report the low edge of the bucket that holds
 * them. Not thread-safe: one histogram per thread, merged afterwards.
 */
#ifndef SCREE_PERF_HIST_H
#define SCREE_PERF_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 6u
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64u - HIST_SUB_BITS + 1u) * HIST_SUB)

/* ~30 KiB: keep it off the stack. Zero it to empty it. */
struct hist {
        uint64_t count;
        uint64_t n[HIST_BUCKETS];
};

/* The bucket of value v. */
static inline unsigned hist_index(uint64_t v)
{
        unsigned exp;

        if (v < HIST_SUB)
                return (unsigned)v;
        exp = 63u - (unsigned)__builtin_clzll(v);
        return (exp - HIST_SUB_BITS + 1u) * HIST_SUB +
               (unsigned)((v >> (exp - HIST_SUB_BITS)) & (HIST_SUB - 1u));
}

static inline void hist_add(struct hist *h, uint64_t v)
{
        h->n[hist_index(v)]++;
        h->count++;
}

/* Adds every sample of src to dst. */
void hist_merge(struct hist *dst, const struct hist *src);

/* Value at quantile q (0..1): the low edge of the bucket holding it; 0 for
 * an empty histogram. */
uint64_t hist_quantile(const struct hist *h, double q);

/* The largest sample's bucket (its low edge); 0 for an empty histogram. */
uint64_t hist_max(const struct hist *h);

#endif
