/* SPDX-License-Identifier: Apache-2.0 */
/* Aligned allocation for O_DIRECT buffers and growable arrays; see mem.h. */
#include <stdlib.h>

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
