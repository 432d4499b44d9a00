/* SPDX-License-Identifier: Apache-2.0 */
/* LEB128 varints; see varint.h. */
#include <scree/scree_errors.h>

#include "base/varint.h"

unsigned varint_size_u64(uint64_t v)
{
        unsigned n = 1;

        while (v >= 0x80) {
                v >>= 7;
                n++;
        }
        return n;
}

unsigned varint_put_u64(uint8_t *dst, uint64_t v)
{
        unsigned n = 0;

        while (v >= 0x80) {
                dst[n++] = (uint8_t)(v | 0x80);
                v >>= 7;
        }
        dst[n++] = (uint8_t)v;
        return n;
}

ssize_t varint_get_u64(const uint8_t *src, size_t len, uint64_t *ret_v)
{
        uint64_t v = 0;

        for (size_t i = 0; i < VARINT_MAX_BYTES; i++) {
                uint64_t group;

                if (i == len)
                        return 0;
                group = src[i] & 0x7f;
                /* The 10th byte may only carry the top bit of a u64. */
                if (i == VARINT_MAX_BYTES - 1 && (src[i] & 0x80 || group > 1))
                        return -SCREE_ECORRUPT;
                v |= group << (7 * i);
                if (!(src[i] & 0x80)) {
                        *ret_v = v;
                        return (ssize_t)(i + 1);
                }
        }
        return -SCREE_ECORRUPT;
}
