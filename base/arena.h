/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A bump allocator: memory is carved from blocks and freed all at once with
 * arena_fini (memtables, per-connection scratch). Not thread-safe: an arena
 * belongs to one shard. Allocations are 8-byte aligned.
 */
#ifndef SCREE_BASE_ARENA_H
#define SCREE_BASE_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arena_block;

struct arena {
        struct arena_block *blocks;     /* newest first */
        uint8_t *cur, *end;             /* free space in the newest block */
        size_t block_bytes;             /* default size of a new block */
        size_t reserved_bytes;          /* total of all blocks */
        size_t used_bytes;              /* total handed out */
        bool huge;                      /* blocks are transparent huge pages (arena_init_huge) */
};

/* Initializes an empty arena that grows in block_bytes steps (0 = 256 KiB). */
void arena_init(struct arena *a, size_t block_bytes);

/*
 * Initializes an empty arena whose blocks are ARENA_HUGE_BYTES, aligned to
 * that and advised as transparent huge pages (MADV_HUGEPAGE): for big,
 * randomly walked structures (memtable skiplists), where 4 KiB pages cost a
 * TLB miss -- a two-level page walk on a VM -- on nearly every node visited.
 * Where the kernel gives no huge page the block works as plain memory.
 */
#define ARENA_HUGE_BYTES ((size_t)2 << 20)
void arena_init_huge(struct arena *a);

/* Frees every block. The arena may be initialized again. */
void arena_fini(struct arena *a);

/* Returns n bytes, 8-byte aligned, valid until arena_fini; NULL only on ENOMEM. */
void *arena_alloc(struct arena *a, size_t n);

#endif
