/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checksums for everything scree writes: XXH3-64 from the system's libxxhash.
 * The seed lets a format bind a checksum to its context (the commit log seeds
 * with the segment id, so bytes left over from a recycled file never verify).
 * Pure functions. Any thread.
 */
#ifndef SCREE_BASE_CHECKSUM_H
#define SCREE_BASE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* XXH3-64 of n bytes at p with seed. */
uint64_t checksum64(const void *p, size_t n, uint64_t seed);

#endif
