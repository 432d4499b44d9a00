/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blocked bloom filter for SSTables (format: docs/format/sst.md, "Bloom
 * block"). Every key sets and probes k bits inside one 64-byte line chosen
 * by its hash, so a lookup touches one cache line. At 10 bits per key the
 * false-positive rate is about 1%.
 *
 * Callers hash keys once with eng_bloom_hash() (XXH3-64) and pass hashes.
 * Pure: no I/O, no shared state; builders and filters are shard-local
 * values.
 */
#ifndef SCREE_ENGINE_BLOOM_H
#define SCREE_ENGINE_BLOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENG_BLOOM_LINE_BYTES 64u
#define ENG_BLOOM_META_BYTES 48u        /* lines start 64-byte aligned in a block */
#define ENG_BLOOM_MAX_PROBES 7u
#define ENG_BLOOM_DEFAULT_BITS_PER_KEY 10u

/* Collects key hashes; caller-provided storage (init/fini). */
struct eng_bloom_builder {
        uint64_t *hashes;
        size_t n, cap;
        unsigned bits_per_key;
};

/* A parsed filter; borrows the encoded bytes, valid while they are. */
struct eng_bloom {
        const uint8_t *lines;
        uint32_t n_lines;
        unsigned k;
};

uint64_t eng_bloom_hash(const void *key, size_t len);

/* bits_per_key: 1..64 (0 = default 10). */
void eng_bloom_builder_init(struct eng_bloom_builder *b, unsigned bits_per_key);
void eng_bloom_builder_fini(struct eng_bloom_builder *b);
/* Returns 0 or -ENOMEM. */
int eng_bloom_builder_add(struct eng_bloom_builder *b, uint64_t hash);
/* Bytes eng_bloom_builder_encode will write (meta + lines). */
size_t eng_bloom_builder_size(const struct eng_bloom_builder *b);
/* Writes the filter for every hash added. REQUIRES: dst holds
 * eng_bloom_builder_size() bytes. */
void eng_bloom_builder_encode(const struct eng_bloom_builder *b, uint8_t *dst);

/* Parses an encoded filter of len bytes. Returns 0, or -SCREE_ECORRUPT if
 * the meta or the size is inconsistent. */
int eng_bloom_parse(struct eng_bloom *ret, const uint8_t *p, size_t len);

/* False: the key is certainly absent. True: it may be present. */
bool eng_bloom_may_contain(const struct eng_bloom *f, uint64_t hash);

#endif
