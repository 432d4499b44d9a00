/* SPDX-License-Identifier: Apache-2.0 */
/* Aligned allocation for O_DIRECT buffers; see mem.h. */
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
