/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable blocks (format: docs/format/sst.md, "Blocks").
 *
 * Pages: every block on disk is a whole number of 4 KiB pages, so O_DIRECT
 * reads it with one aligned read. A 16-byte header (checksum, used length,
 * type) precedes the content; the rest of the last page is zeros. The
 * checksum is seeded with the file id and the block's offset, so a block
 * read from the wrong place never verifies.
 *
 * Key-value blocks (data and index): entries sorted by key, each key stored
 * as the length it shares with the previous key plus the rest; every
 * `interval` entries a restart point stores a whole key, and the restart
 * offsets at the end of the block let a seek binary-search them. Keys may
 * repeat (versions of one key); values are opaque here.
 *
 * Pure: no I/O. Builders and iterators are caller-provided values.
 */
#ifndef SCREE_ENGINE_BLOCK_H
#define SCREE_ENGINE_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/key.h"

#define ENG_BLOCK_PAGE_BYTES 4096u
#define ENG_BLOCK_HEADER_BYTES 16u
#define ENG_BLOCK_DEFAULT_INTERVAL 16u
#define ENG_BLOCK_MAX_BYTES (64u << 20)         /* one block, sealed */

enum eng_block_type {
        ENG_BLOCK_DATA = 1,
        ENG_BLOCK_INDEX = 2,
        ENG_BLOCK_BLOOM = 3,
        ENG_BLOCK_PROPS = 4,
        ENG_BLOCK_TYPE_MAX,
        ENG_BLOCK_TYPE_INVALID = 0,
};

/* The checksum seed of the block at `offset` in file `file_id`. */
uint64_t eng_block_seed(uint64_t file_id, uint64_t offset);

/* Size on disk of a block with content_len bytes of content: header plus
 * content, rounded up to whole pages. */
size_t eng_block_sealed_size(size_t content_len);

/*
 * Seals a block in place: page[16 .. 16+content_len) holds the content;
 * writes the header and zero-fills up to eng_block_sealed_size(). Returns
 * that size. REQUIRES: page holds that many bytes.
 */
size_t eng_block_seal(uint8_t *page, size_t content_len, enum eng_block_type type, uint64_t seed);

/*
 * Verifies a sealed block of len bytes (as read from disk) and returns its
 * content (borrowed from page). Returns 0, or -SCREE_ECORRUPT for a bad
 * length, checksum or type (type must equal `type`).
 */
int eng_block_open(const uint8_t *page, size_t len, enum eng_block_type type, uint64_t seed,
                   const uint8_t **ret_content, size_t *ret_len);

/* Builds the content of one key-value block. init/fini; shard-local value. */
struct eng_block_builder {
        uint8_t *buf;
        size_t len, cap;
        uint32_t *restarts;
        uint32_t n_restarts;
        size_t restarts_cap;
        unsigned interval, since_restart;
        uint8_t *last_key;
        size_t last_len, last_cap;
        uint32_t n_entries;
};

/* interval: entries per restart point (0 = default 16). */
void eng_block_builder_init(struct eng_block_builder *b, unsigned interval);
void eng_block_builder_fini(struct eng_block_builder *b);
/* Empties the builder, keeping its memory. */
void eng_block_builder_reset(struct eng_block_builder *b);
/* Appends an entry (copied). REQUIRES: key >= the previous key. Returns 0
 * or -ENOMEM. */
int eng_block_builder_add(struct eng_block_builder *b, const void *key, uint32_t key_len,
                          const void *value, uint32_t value_len);
/* The same with the value given in two parts (stored back to back). */
int eng_block_builder_add2(struct eng_block_builder *b, const void *key, uint32_t key_len,
                           const void *v1, uint32_t v1_len, const void *v2, uint32_t v2_len);
/* Content bytes if finished now, and if an entry of these sizes were added
 * first (an upper bound). */
size_t eng_block_builder_size(const struct eng_block_builder *b);
size_t eng_block_builder_size_with(const struct eng_block_builder *b, uint32_t key_len,
                                   uint32_t value_len);
static inline bool eng_block_builder_is_empty(const struct eng_block_builder *b)
{
        return b->n_entries == 0;
}
/* Writes the finished content (entries, restart array, count) to dst.
 * REQUIRES: dst holds eng_block_builder_size() bytes. Returns that size. */
size_t eng_block_builder_finish(const struct eng_block_builder *b, uint8_t *dst);

/*
 * Iterates the content of a key-value block. Borrows the content; owns a
 * key buffer (fini frees it). When an entry is malformed the iterator
 * becomes invalid and err is -SCREE_ECORRUPT (or -ENOMEM for a key that
 * could not be buffered).
 */
struct eng_block_iter {
        const uint8_t *data;
        size_t entries_end;
        const uint8_t *restarts;
        uint32_t n_restarts;
        size_t off, next_off;
        uint8_t *key;
        size_t key_len, key_cap;
        const uint8_t *value;
        uint32_t value_len;
        bool valid;
        int err;
};

/* Returns 0, or -SCREE_ECORRUPT if the restart array does not fit. */
int eng_block_iter_init(struct eng_block_iter *it, const uint8_t *content, size_t len);
void eng_block_iter_fini(struct eng_block_iter *it);
/* Points an initialized iterator at other content, keeping its key buffer
 * (so moving between blocks allocates nothing once the buffer is big
 * enough). Returns 0, or -SCREE_ECORRUPT as init. */
int eng_block_iter_reset(struct eng_block_iter *it, const uint8_t *content, size_t len);
void eng_block_iter_seek_first(struct eng_block_iter *it);
/* Positions at the first entry whose key is >= key (the first of equal keys). */
void eng_block_iter_seek(struct eng_block_iter *it, const void *key, size_t key_len);
void eng_block_iter_next(struct eng_block_iter *it);

/*
 * The reverse moves. Entries are prefix-compressed, so an entry is found
 * by decoding forward from the last restart point before it: a move costs
 * up to one restart interval of decoding. Each leaves the iterator
 * invalid with err 0 when there is no such entry, or with err set when an
 * entry on the way does not decode.
 */
/* Positions at the last entry. */
void eng_block_iter_seek_last(struct eng_block_iter *it);
/* Positions at the last entry whose key is < key (the oldest of that
 * key's versions, as they are stored newest first). */
void eng_block_iter_seek_lt(struct eng_block_iter *it, const void *key, size_t key_len);
/* Positions at the entry before the current one. REQUIRES: valid. */
void eng_block_iter_prev(struct eng_block_iter *it);

#endif
