/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the catalog tests (test_catalog.c, test_catalog_model.c,
 * test_catalog_tablets.c).
 */
#ifndef SCREE_TESTS_ENGINE_CATALOG_HELPERS_H
#define SCREE_TESTS_ENGINE_CATALOG_HELPERS_H

#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "engine/catalog.h"

/* The encoding of c, in a buffer the caller frees: to decode, or to
 * compare a snapshot before and after later steps. */
static inline uint8_t *catalog_bytes(const struct eng_catalog *c, size_t *len)
{
        uint8_t *b;

        *len = eng_catalog_encoded_size(c);
        b = malloc(*len);
        cr_assert(b != NULL);
        eng_catalog_encode(c, b);
        return b;
}

/* Recomputes both checksums of an encoding (len bytes at b) after a
 * change, so that decoding sees the change and not a bad checksum. */
static inline void catalog_reseal(uint8_t *b, size_t len)
{
        le64_put(b + 24, checksum64(b + ENG_CATALOG_HEADER_BYTES, len - ENG_CATALOG_HEADER_BYTES,
                                    ENG_CATALOG_SEED));
        le64_put(b + 32, checksum64(b, 32, ENG_CATALOG_SEED));
}

#endif
