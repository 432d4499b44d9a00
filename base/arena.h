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
struct arena_pool;

struct arena {
        struct arena_block *blocks;     /* newest first */
        uint8_t *cur, *end;             /* free space in the newest block */
        size_t block_bytes;             /* default size of a new block */
        size_t reserved_bytes;          /* total of all blocks */
        size_t used_bytes;              /* total handed out */
        bool huge;                      /* blocks are transparent huge pages (arena_init_huge) */
        struct arena_pool *pool;        /* huge blocks come from and go back to it; may be NULL */
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

/* As arena_init_huge, but whole blocks come from pool first (and go back
 * to it on arena_fini); takes a reference on pool. pool may be NULL. */
void arena_init_pooled(struct arena *a, struct arena_pool *pool);

/* Frees every block -- a pooled arena gives whole blocks back to its pool
 * while the pool has room -- and drops the pool reference. The arena may be
 * initialized again; it stays huge if it was. */
void arena_fini(struct arena *a);

/* Returns n bytes, 8-byte aligned, valid until arena_fini; NULL only on ENOMEM. */
void *arena_alloc(struct arena *a, size_t n);

/*
 * Huge blocks for pooled arenas, kept so that an arena growing into a new
 * block does not stop its thread to fault a fresh huge page in (2.5-11 ms
 * a page on a VM, where the host backs it on first touch).
 *
 * The pool reserves one region of address space up front (no memory:
 * MAP_NORESERVE, advised as huge pages once), and carves its blocks from
 * it: carving a block takes no system call, so nothing on the arena's
 * thread waits for the mmap lock while another thread faults pages in.
 * Past the region, blocks come from arena_block_new.
 *
 * Blocks are "ready" (pages faulted in, up to cap of them) or "cold"
 * (never touched, or released). Arenas take ready blocks first, then cold
 * ones, and give blocks back on arena_fini: to the ready set while it has
 * room, else released (their pages dropped with MADV_DONTNEED). Whenever
 * an arena takes a block, refill(pool, ctx) runs inside that arena_alloc:
 * the owner takes cold blocks with arena_pool_cold, faults their pages in
 * away from the arena's thread (the engine: IORING_OP_MADVISE with
 * MADV_POPULATE_WRITE, on an io-wq worker) and hands them back with
 * arena_pool_put.
 *
 * Reference-counted: the owner and every pooled arena hold one; the last
 * unref unmaps the region. Not thread-safe: one shard's, like its arenas.
 */
struct arena_pool {
        void **ready;                   /* faulted-in blocks, a stack */
        unsigned n, cap;
        uint8_t *region;                /* reserved, ARENA_HUGE_BYTES-aligned */
        uint32_t region_blocks;
        uint32_t *cold;                 /* region blocks not in use, by index; a stack */
        uint32_t n_cold;
        uint32_t out;                   /* blocks arenas hold */
        unsigned refs;
        void (*refill)(struct arena_pool *pool, void *ctx);     /* may be NULL */
        void *ctx;
        uint64_t hits;                  /* blocks arenas took ready */
        uint64_t misses;                /* blocks arenas took cold: none was ready */
};

/* A pool of up to cap ready blocks, with reserve_bytes of address space
 * (rounded up to whole blocks; 0: none) to carve blocks from. One reference
 * held. NULL only on ENOMEM. */
struct arena_pool *arena_pool_new(unsigned cap, size_t reserve_bytes);
void arena_pool_ref(struct arena_pool *pool);
/* Accepts NULL. */
void arena_pool_unref(struct arena_pool *pool);
/* Takes a block as a pooled arena does -- ready first, else cold; counted
 * in hits/misses and out; refill runs -- for other users of whole blocks
 * (the memtable index). NULL only on ENOMEM. Give it back with
 * arena_pool_give. Its bytes are garbage (ready) or zero (cold). */
void *arena_pool_take(struct arena_pool *pool);
void arena_pool_give(struct arena_pool *pool, void *block);
/* A cold block for the owner to fault in; NULL only on ENOMEM. Hand it
 * back with arena_pool_put or arena_pool_release. */
void *arena_pool_cold(struct arena_pool *pool);
/* Adds a faulted-in block to the ready set and returns true, or returns
 * false when that is full: block is still the caller's. */
bool arena_pool_put(struct arena_pool *pool, void *block);
/* Gives a block not wanted any more back: its pages are dropped. */
void arena_pool_release(struct arena_pool *pool, void *block);

/* A fresh block of ARENA_HUGE_BYTES, aligned to that and advised as a
 * transparent huge page; NULL only on ENOMEM. Free it with
 * arena_block_free. For arenas without a pool. */
void *arena_block_new(void);
void arena_block_free(void *block);

#endif
