/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An open SSTable's in-memory part (format: docs/format/sst.md): the footer,
 * the index decoded into an array of (last key, block handle), the bloom
 * filter and the properties. Everything but the data blocks; those the I/O
 * layer (sst_io.c) reads through the block cache and hands to
 * eng_sst_data_open() and eng_sst_data_get(). Pure: no I/O.
 *
 * Refcounted: the shard's table set holds one reference, and each read or
 * scan in progress holds one, so a compaction can drop a table while reads
 * still use it. Shard-local.
 */
#ifndef SCREE_ENGINE_SST_READER_H
#define SCREE_ENGINE_SST_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/block.h"
#include "engine/memtable.h"
#include "engine/sst_format.h"

struct eng_sst_reader;

/*
 * Opens a table of file_size bytes whose id is file_id from its footer page
 * (ENG_SST_FOOTER_BYTES, borrowed) and its meta region: the bytes from the
 * index block's offset up to the footer, which eng_sst_meta_range() names
 * (taken: 4096-aligned, freed with mem_free_aligned by the reader, also on
 * failure). Verifies every checksum and that the index covers the data
 * region exactly. Returns 0 and *ret (one reference), -SCREE_ECORRUPT,
 * -SCREE_EUNSUPPORTED (newer format version), -ENOMEM.
 */
int eng_sst_reader_new(uint64_t file_id, uint64_t file_size, const uint8_t *footer_page,
                       uint8_t *meta_take, struct eng_sst_reader **ret);

/* From a verified footer: where the meta region starts and how long it is. */
int eng_sst_meta_range(const uint8_t *footer_page, uint64_t file_size, uint64_t file_id,
                       uint64_t *ret_offset, uint32_t *ret_len);

void eng_sst_reader_ref(struct eng_sst_reader *r);
/* Accepts NULL; frees on the last reference. */
void eng_sst_reader_unref(struct eng_sst_reader *r);

uint64_t eng_sst_reader_file_id(const struct eng_sst_reader *r);
uint64_t eng_sst_reader_file_size(const struct eng_sst_reader *r);
/* Borrowed; valid while r is referenced. */
const struct eng_sst_props *eng_sst_reader_props(const struct eng_sst_reader *r);
uint32_t eng_sst_reader_n_blocks(const struct eng_sst_reader *r);
/* Handle of data block i. REQUIRES: i < n_blocks. */
struct eng_sst_handle eng_sst_reader_block(const struct eng_sst_reader *r, uint32_t i);

/* Data block i's last key, as the index holds it: its length, *ret
 * borrowed while r is referenced. REQUIRES: i < n_blocks. */
uint32_t eng_sst_reader_block_last(const struct eng_sst_reader *r, uint32_t i, const uint8_t **ret);

/* False: no version of the key is in this table. hash: eng_bloom_hash(key). */
bool eng_sst_reader_may_contain(const struct eng_sst_reader *r, uint64_t hash);

/* The first data block whose last key is >= key: the only block that can
 * hold key's newest version (older ones may run on into the following
 * blocks), and where a scan from key starts. Returns 0 and *ret_block, or
 * -SCREE_ENOTFOUND when key is above the table's largest key. */
int eng_sst_reader_find_block(const struct eng_sst_reader *r, const void *key, size_t key_len,
                              uint32_t *ret_block);

/* Verifies data block i as read from disk (page, len = its handle's size)
 * and returns its content, borrowed from page. 0 or -SCREE_ECORRUPT. */
int eng_sst_data_open(const struct eng_sst_reader *r, uint32_t i, const uint8_t *page, size_t len,
                      const uint8_t **ret_content, size_t *ret_len);

/*
 * Finds the newest version of key in a data block's content, using it (an
 * initialized iterator over that content; its key buffer is reused). Returns
 * 0 and *ret (borrowed from the content and it; a tombstone is found too),
 * -SCREE_ENOTFOUND, or -SCREE_ECORRUPT.
 */
int eng_sst_data_get(struct eng_block_iter *it, const void *key, size_t key_len,
                     struct eng_entry *ret);

/* The entry an iterator over a data block's content stands on (key
 * borrowed from it, value from the content). REQUIRES: it->valid. 0 or
 * -SCREE_ECORRUPT. */
int eng_sst_data_entry(const struct eng_block_iter *it, struct eng_entry *ret);

#endif
