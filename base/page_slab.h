/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 4 KiB pages (O_DIRECT buffers that outlive their read: cached SSTable
 * blocks) carved from the 2 MiB huge blocks of an arena_pool (arena.h).
 *
 * Why: a block cache filling 4 KiB pages from malloc takes a page fault,
 * which a VM's host backs then, on every block read, and later a TLB miss
 * on every block opened. The pool's blocks are faulted in ahead, off the
 * shard's thread (engine/shard_pool.c), and hold 512 pages a TLB entry.
 *
 * Freed pages go on a free stack (reused newest first; under ASan they
 * are poisoned until reused) and stay with the slab; its huge blocks go
 * back to the pool only at page_slab_fini. The slab takes at most
 * max_bytes of blocks; past that, and for any other length, pages come
 * from mem_alloc_aligned. A page is freed with the length it was
 * allocated with: that, and its address, tell where it came from.
 *
 * Not thread-safe: one shard's, like its pool.
 */
#ifndef SCREE_BASE_PAGE_SLAB_H
#define SCREE_BASE_PAGE_SLAB_H

#include <stddef.h>
#include <stdint.h>

struct arena_pool;

#define PAGE_SLAB_PAGE ((size_t)4096)

struct page_slab {
        struct arena_pool *pool;        /* NULL: every page from mem_alloc_aligned */
        void **free;                    /* freed pages, a stack (room for all) */
        size_t n_free;
        uint8_t *carve;                 /* never-used pages of the newest block */
        size_t carve_left;
        uintptr_t *blocks;              /* taken from the pool, by address */
        unsigned n_blocks, max_blocks;
        uint64_t pages_out;             /* slab pages allocated and not freed */
        uint64_t fallbacks;             /* 4 KiB pages that came from malloc */
};

/* An empty slab taking up to max_bytes of pool's blocks (a reference on
 * pool is taken; pool may be NULL). */
void page_slab_init(struct page_slab *s, struct arena_pool *pool, size_t max_bytes);
/* Gives the blocks back to the pool and drops the reference.
 * REQUIRES: every slab page freed. */
void page_slab_fini(struct page_slab *s);

/* len bytes aligned to 4096: a slab page when len is PAGE_SLAB_PAGE and
 * the slab has one or may take a block, else mem_alloc_aligned. NULL only
 * on ENOMEM. */
void *page_slab_alloc(struct page_slab *s, size_t len);
/* Frees p, allocated by page_slab_alloc(s, len). Accepts NULL. */
void page_slab_free(struct page_slab *s, void *p, size_t len);

#endif
