/* SPDX-License-Identifier: Apache-2.0 */
/* Aligned allocation for O_DIRECT buffers, growable arrays, big tables; see mem.h. */
#include <stdlib.h>
#include <sys/mman.h>

#include "base/mem.h"

void *mem_alloc_aligned(size_t align, size_t size)
{
        size_t rounded = (size + align - 1) & ~(align - 1);

        if (rounded == 0)
                rounded = align;
        return aligned_alloc(align, rounded);
}

void mem_free_aligned(void *p)
{
        free(p);
}

void *mem_grow(void *p, size_t *cap, size_t need, size_t elem)
{
        size_t c = *cap ? *cap : 16;

        if (need == 0)
                need = 1;       /* so that success is never NULL */
        if (need <= *cap)
                return p;
        while (c < need)
                c *= 2;
        p = realloc(p, c * elem);
        if (p)
                *cap = c;
        return p;
}

#define TABLE_HUGE_BYTES ((size_t)2 << 20)

void *mem_alloc_table(size_t size)
{
        void *p;

        if (size < TABLE_HUGE_BYTES)
                return calloc(1, size ? size : 1);
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return NULL;
        /* A hint: without THP the table works, only slower. */
        madvise(p, size, MADV_HUGEPAGE);
        return p;
}

void mem_free_table(void *p, size_t size)
{
        if (!p)
                return;
        if (size < TABLE_HUGE_BYTES)
                free(p);
        else
                munmap(p, size);
}
