/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A seeded xorshift64 for tests that draw random cases: the same seed,
 * the same sequence, on any machine. Not for anything but tests.
 */
#ifndef SCREE_TESTS_RNG_H
#define SCREE_TESTS_RNG_H

#include <stdint.h>

/* The next value of the sequence in *state (never 0). */
static inline uint64_t test_rng_next(uint64_t *state)
{
        uint64_t x = *state;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return *state = x;
}

#endif
