/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xorshift64*: the benchmarks' fast, seedable pseudo-random numbers (not
 * for anything that needs quality or secrecy). The state must not be 0.
 */
#ifndef SCREE_PERF_RNG_H
#define SCREE_PERF_RNG_H

#include <stdint.h>

static inline uint64_t xorshift64s(uint64_t *s)
{
        uint64_t x = *s;

        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *s = x;
        return x * UINT64_C(0x2545F4914F6CDD1D);
}

#endif
