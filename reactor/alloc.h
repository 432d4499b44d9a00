/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocator's figures (INFO memory, MEMORY STATS / MALLOC-STATS /
 * PURGE). scree is built with jemalloc unless a sanitizer brings its own
 * allocator (smp.c gives each shard thread its own jemalloc arena); then
 * these figures come from glibc's mallinfo2 where it has them, else zero.
 *
 * Any thread: jemalloc's statistics are process-wide and refreshed under
 * its own locks (an epoch bump merges the arenas' counters, a few
 * microseconds per arena): call it on cold paths only.
 */
#ifndef SCREE_REACTOR_ALLOC_H
#define SCREE_REACTOR_ALLOC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct rx_alloc_stats {
        uint64_t allocated;             /* bytes handed out to the program */
        uint64_t active;                /* bytes of the pages holding them */
        uint64_t resident;              /* bytes of the allocator's resident pages */
        uint64_t mapped;                /* bytes the allocator has mapped */
        char name[32];                  /* "jemalloc-5.3.0", "libc" */
};

/* Fills *ret with fresh figures. Returns true, or false (zeros) when the
 * allocator keeps none. Any thread. */
bool rx_alloc_stats(struct rx_alloc_stats *ret);

/* Writes the allocator's own statistics report to f (jemalloc's
 * malloc_stats_print; without jemalloc a line saying so). Any thread. */
void rx_alloc_print(FILE *f);

/* Returns the allocator's unused dirty pages to the kernel (jemalloc's
 * arena purge over every arena). Returns 0 or -ENOTSUP. Any thread. */
int rx_alloc_purge(void);

#endif
