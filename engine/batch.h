/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A write batch: the entries one write applies atomically to one shard, and
 * the payload of one commit-log record (ENG_WAL_RECORD_BATCH). Entry i of a
 * batch gets sequence number first_seq + i, where first_seq is the record's.
 *
 * Encoding (little-endian; docs/format/wal.md, "Batch payload"):
 *   count   u32           number of entries (>= 1)
 *   entries, each:
 *     flags   u8          bits 0-1: kind (1 value, 2 tombstone); bit 2: has expiry
 *     key_len varint, key bytes (an internal key, tablet.h)
 *     value_len varint, value bytes    (values only)
 *     expiry_ms varint                 (if bit 2)
 * Nothing may follow the last entry.
 *
 * Pure; shard-local buffers.
 */
#ifndef SCREE_ENGINE_BATCH_H
#define SCREE_ENGINE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "engine/memtable.h"

#define ENG_BATCH_HEADER_BYTES 4u

struct eng_batch {
        uint8_t *buf;                   /* owned */
        size_t len, cap;
        uint32_t count;
};

/* An empty batch; fini frees it. */
void eng_batch_init(struct eng_batch *b);
void eng_batch_fini(struct eng_batch *b);
/* Empties the batch, keeping its memory. */
void eng_batch_clear(struct eng_batch *b);

/* Appends e (its key and value copied; seq ignored). Returns 0, -EINVAL for
 * a bad kind, -ENOMEM. */
int eng_batch_add(struct eng_batch *b, const struct eng_entry *e);

/* Appends every entry of the encoded batch payload (len bytes, borrowed;
 * as made by eng_batch_add, so not checked) to b: one batch applying
 * both atomically, in order. Returns 0 or -ENOMEM. */
int eng_batch_append(struct eng_batch *b, const void *payload, size_t len);

/* Reads the entries of an encoded batch (borrowed for the iterator's life). */
struct eng_batch_iter {
        const uint8_t *p, *end;
        uint32_t left;
        uint64_t seq;
};

/* Returns 0, or -SCREE_ECORRUPT if the payload is too short or counts no entry. */
int eng_batch_iter_init(struct eng_batch_iter *it, const void *payload, size_t len,
                        uint64_t first_seq);

/* Returns 1 and *ret (borrowed from the payload, seq filled in), 0 after the
 * last entry, or -SCREE_ECORRUPT (bad kind or flags, a length past the end,
 * trailing bytes). */
int eng_batch_iter_next(struct eng_batch_iter *it, struct eng_entry *ret);

#endif
