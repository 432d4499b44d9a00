/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Little-endian loads and stores for on-disk formats (every scree format is
 * little-endian). memcpy keeps them alignment-safe; compilers turn them into
 * single moves on x86-64 and arm64. Pure. Any thread.
 */
#ifndef SCREE_BASE_ENDIAN_H
#define SCREE_BASE_ENDIAN_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void le16_put(void *p, uint16_t v)
{
        v = htole16(v);
        memcpy(p, &v, sizeof(v));
}

static inline void le32_put(void *p, uint32_t v)
{
        v = htole32(v);
        memcpy(p, &v, sizeof(v));
}

static inline void le64_put(void *p, uint64_t v)
{
        v = htole64(v);
        memcpy(p, &v, sizeof(v));
}

static inline uint16_t le16_get(const void *p)
{
        uint16_t v;

        memcpy(&v, p, sizeof(v));
        return le16toh(v);
}

static inline uint32_t le32_get(const void *p)
{
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return le32toh(v);
}

static inline uint64_t le64_get(const void *p)
{
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return le64toh(v);
}

/* Big-endian, for keys whose bytes must sort like the numbers they hold. */
static inline void be32_put(void *p, uint32_t v)
{
        v = htobe32(v);
        memcpy(p, &v, sizeof(v));
}

static inline void be64_put(void *p, uint64_t v)
{
        v = htobe64(v);
        memcpy(p, &v, sizeof(v));
}

static inline uint32_t be32_get(const void *p)
{
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return be32toh(v);
}

static inline uint64_t be64_get(const void *p)
{
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return be64toh(v);
}

#endif
