/* SPDX-License-Identifier: Apache-2.0 */
/* XXH3-64 wrapper; see checksum.h. */
#include <xxhash.h>

#include "base/checksum.h"

uint64_t checksum64(const void *p, size_t n, uint64_t seed)
{
        return XXH3_64bits_withSeed(p, n, seed);
}
