/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the running kernel can do, for tests that skip where it cannot.
 * Header-only; for tests only.
 */
#ifndef SCREE_TESTS_KERNEL_H
#define SCREE_TESTS_KERNEL_H

#include <stdbool.h>
#include <sys/mman.h>

/* Whether madvise knows MADV_POPULATE_WRITE (Linux 5.14+): without it the
 * shards prefault nothing (engine/shard_pool.c). */
static inline bool kernel_populates(void)
{
        static char page[4096] __attribute__((aligned(4096)));

        return madvise(page, sizeof(page), 23 /* MADV_POPULATE_WRITE */) == 0;
}

#endif
