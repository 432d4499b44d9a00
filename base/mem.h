/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory helpers: aligned buffers for O_DIRECT I/O, growable arrays. Any thread; memory is
 * freed with mem_free_aligned() by the shard that allocated it.
 */
#ifndef SCREE_BASE_MEM_H
#define SCREE_BASE_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* O_DIRECT needs buffer, offset and length aligned to the logical block size;
 * 4096 covers every device we target. */
#define MEM_DIRECT_ALIGN 4096

/* Allocates size bytes (rounded up to a multiple of align) aligned to align, a
 * power of two. Returns NULL only on ENOMEM. Caller frees with mem_free_aligned. */
void *mem_alloc_aligned(size_t align, size_t size);
void mem_free_aligned(void *p);

/*
 * Grows a malloc'd array p of *cap elements of elem bytes to hold at least
 * need (at least 1), doubling (at least 16). Returns the array -- p itself
 * when it is big enough -- and updates *cap; NULL only on ENOMEM, with p and
 * *cap untouched.
 */
void *mem_grow(void *p, size_t *cap, size_t need, size_t elem);

/*
 * Allocates size bytes of zeros for a big table touched at random: from
 * 2 MiB up, fresh anonymous memory advised as transparent huge pages (a
 * random probe into 4 KiB pages is a TLB miss each time) and zeroed by
 * the kernel page by page as it is first touched -- no up-front memset
 * stall; below that, calloc. Returns NULL only on ENOMEM. Free with
 * mem_free_table(p, size), the same size.
 */
void *mem_alloc_table(size_t size);
void mem_free_table(void *p, size_t size);

/* Copies n bytes, w <= n <= 2w (w at most 16), as two w-byte halves that
 * may overlap, each loaded before either is stored. */
static inline void mem_copy_halves(uint8_t *d, const uint8_t *s, size_t n, size_t w)
{
        uint8_t a[16], b[16];

        memcpy(a, s, w);
        memcpy(b, s + n - w, w);
        memcpy(d, a, w);
        memcpy(d + n - w, b, w);
}

/*
 * memcpy for the few bytes of a key, inline: 4 to 32 bytes as two halves
 * (mem_copy_halves, of a constant width once inlined), fewer a byte at a
 * time, longer through memcpy. A library call for a key's dozen bytes was
 * a twentieth of a range read's time. The buffers must not overlap, as
 * memcpy's.
 */
static inline void mem_copy_short(void *dst, const void *src, size_t n)
{
        uint8_t *d = dst;
        const uint8_t *s = src;

        if (n > 32)
                memcpy(d, s, n);
        else if (n >= 16)
                mem_copy_halves(d, s, n, 16);
        else if (n >= 8)
                mem_copy_halves(d, s, n, 8);
        else if (n >= 4)
                mem_copy_halves(d, s, n, 4);
        else
                for (size_t i = 0; i < n; i++)
                        d[i] = s[i];
}

#endif
