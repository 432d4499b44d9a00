/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blocked bloom filter; see bloom.h and docs/format/sst.md. The line is
 * picked from the hash's high 32 bits (multiply-shift, no modulo); the k bit
 * positions inside the 512-bit line are 9-bit slices of a remix of the hash,
 * so they are independent of the line choice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "base/mem.h"
#include "engine/bloom.h"

#define BLOOM_SEED UINT64_C(0x5eed0b100f11e7e5)
#define LINE_BITS (ENG_BLOOM_LINE_BYTES * 8u)

uint64_t eng_bloom_hash(const void *key, size_t len)
{
        return checksum64(key, len, BLOOM_SEED);
}

static unsigned probes_for(unsigned bits_per_key)
{
        /* k = bits * ln 2, rounded; a blocked filter caps it by one remix. */
        unsigned k = (bits_per_key * 69u + 50u) / 100u;

        if (k < 1)
                k = 1;
        return k > ENG_BLOOM_MAX_PROBES ? ENG_BLOOM_MAX_PROBES : k;
}

static uint32_t line_of(uint64_t hash, uint32_t n_lines)
{
        return (uint32_t)(((hash >> 32) * (uint64_t)n_lines) >> 32);
}

static uint64_t remix(uint64_t hash)
{
        hash ^= hash >> 29;
        return hash * UINT64_C(0x9e3779b97f4a7c15);
}

static uint32_t lines_for(const struct eng_bloom_builder *b)
{
        uint64_t bits = (uint64_t)b->n * b->bits_per_key;
        uint64_t lines = (bits + LINE_BITS - 1) / LINE_BITS;

        return lines ? (uint32_t)lines : 1u;
}

void eng_bloom_builder_init(struct eng_bloom_builder *b, unsigned bits_per_key)
{
        memset(b, 0, sizeof(*b));
        if (bits_per_key == 0 || bits_per_key > 64)
                bits_per_key = ENG_BLOOM_DEFAULT_BITS_PER_KEY;
        b->bits_per_key = bits_per_key;
}

void eng_bloom_builder_fini(struct eng_bloom_builder *b)
{
        free(b->hashes);
        memset(b, 0, sizeof(*b));
}

int eng_bloom_builder_add(struct eng_bloom_builder *b, uint64_t hash)
{
        uint64_t *h = mem_grow(b->hashes, &b->cap, b->n + 1, sizeof(*h));

        if (!h)
                return -ENOMEM;
        b->hashes = h;
        b->hashes[b->n++] = hash;
        return 0;
}

size_t eng_bloom_builder_size(const struct eng_bloom_builder *b)
{
        return ENG_BLOOM_META_BYTES + (size_t)lines_for(b) * ENG_BLOOM_LINE_BYTES;
}

static void set_bits(uint8_t *line, uint64_t hash, unsigned k)
{
        uint64_t h = remix(hash);

        for (unsigned i = 0; i < k; i++, h >>= 9) {
                unsigned bit = (unsigned)(h & (LINE_BITS - 1));

                line[bit >> 3] |= (uint8_t)(1u << (bit & 7));
        }
}

void eng_bloom_builder_encode(const struct eng_bloom_builder *b, uint8_t *dst)
{
        uint32_t n_lines = lines_for(b);
        unsigned k = probes_for(b->bits_per_key);
        uint8_t *lines = dst + ENG_BLOOM_META_BYTES;

        memset(dst, 0, eng_bloom_builder_size(b));
        le32_put(dst, n_lines);
        dst[4] = (uint8_t)k;
        for (size_t i = 0; i < b->n; i++)
                set_bits(lines + (size_t)line_of(b->hashes[i], n_lines) * ENG_BLOOM_LINE_BYTES,
                         b->hashes[i], k);
}

int eng_bloom_parse(struct eng_bloom *ret, const uint8_t *p, size_t len)
{
        uint32_t n_lines;
        unsigned k;

        if (len < ENG_BLOOM_META_BYTES)
                return -SCREE_ECORRUPT;
        n_lines = le32_get(p);
        k = p[4];
        if (n_lines == 0 || k == 0 || k > ENG_BLOOM_MAX_PROBES ||
            len != ENG_BLOOM_META_BYTES + (size_t)n_lines * ENG_BLOOM_LINE_BYTES)
                return -SCREE_ECORRUPT;
        ret->lines = p + ENG_BLOOM_META_BYTES;
        ret->n_lines = n_lines;
        ret->k = k;
        return 0;
}

bool eng_bloom_may_contain(const struct eng_bloom *f, uint64_t hash)
{
        const uint8_t *line = f->lines + (size_t)line_of(hash, f->n_lines) * ENG_BLOOM_LINE_BYTES;
        uint64_t h = remix(hash);

        for (unsigned i = 0; i < f->k; i++, h >>= 9) {
                unsigned bit = (unsigned)(h & (LINE_BITS - 1));

                if (!(line[bit >> 3] & (1u << (bit & 7))))
                        return false;
        }
        return true;
}
