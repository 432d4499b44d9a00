/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flag values for the benchmarks' command lines. Header-only; any thread.
 */
#ifndef SCREE_PERF_ARGS_H
#define SCREE_PERF_ARGS_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* A decimal number in [min, max]. Returns 0 and *ret, or -EINVAL. */
static inline int perf_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

#endif
