/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable file format, version 1 (docs/format/sst.md): the pieces that are
 * neither a block's framing (block.h) nor a builder or reader: how an entry
 * is stored in a data block, the properties block, the footer page, and
 * block handles in the index.
 *
 * File layout, every part a whole number of 4 KiB pages:
 *   data blocks | index block | bloom block | properties block | footer page
 *
 * Pure encode/decode over caller buffers; every decoder bounds-checks and
 * returns -SCREE_ECORRUPT on anything inconsistent.
 */
#ifndef SCREE_ENGINE_SST_FORMAT_H
#define SCREE_ENGINE_SST_FORMAT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/memtable.h"

#define ENG_SST_MAGIC "screeSST"
#define ENG_SST_VERSION 1u
#define ENG_SST_FOOTER_BYTES 4096u
#define ENG_SST_FOOTER_USED 72u
#define ENG_SST_MAX_KEY_BYTES (64u << 10)
#define ENG_SST_MAX_VALUE_BYTES (32u << 20)

/* Entry flags byte in a data block value. */
#define ENG_SST_KIND_MASK 0x03u
#define ENG_SST_HAS_EXPIRY 0x04u
/* flags + seq varint + expiry varint */
#define ENG_SST_ENTRY_META_MAX 21u

/* Where a block lives: both multiples of 4096. */
struct eng_sst_handle {
        uint64_t offset;
        uint32_t size;
};

struct eng_sst_footer {
        uint64_t file_id;
        struct eng_sst_handle index, bloom, props;
};

/* What a table holds; smallest/largest are borrowed from wherever the
 * properties were decoded (or built). */
struct eng_sst_props {
        uint64_t file_id;
        uint32_t tablet;
        uint64_t n_entries, n_tombstones, n_expiring, n_data_blocks;
        uint64_t raw_key_bytes, raw_value_bytes;
        uint64_t min_seq, max_seq;
        uint64_t min_expiry_ms, max_expiry_ms;  /* 0, 0 when no entry expires */
        const uint8_t *smallest, *largest;
        uint32_t smallest_len, largest_len;
};

#define ENG_SST_PROPS_FIXED 104u

/* Encodes e's kind, seq and expiry into meta (ENG_SST_ENTRY_META_MAX
 * bytes); returns the length. The value follows it in the block. */
unsigned eng_sst_entry_meta_encode(const struct eng_entry *e, uint8_t *meta);

/* Decodes a data block entry: key is the block key, v/v_len the block
 * value. Fills *ret (pointers borrowed from key and v). Returns 0 or
 * -SCREE_ECORRUPT. */
int eng_sst_entry_decode(const uint8_t *key, size_t key_len, const uint8_t *v, size_t v_len,
                         struct eng_entry *ret);

/* Index entry value: offset and size varints. Returns bytes written (at
 * most 2 * VARINT_MAX_BYTES). */
unsigned eng_sst_handle_encode(const struct eng_sst_handle *h, uint8_t *dst);
int eng_sst_handle_decode(const uint8_t *p, size_t len, struct eng_sst_handle *ret);

/* Footer page: fills ENG_SST_FOOTER_BYTES at page. */
void eng_sst_footer_encode(const struct eng_sst_footer *f, uint8_t *page);
/*
 * Decodes a footer page (ENG_SST_FOOTER_BYTES, borrowed) on its own: magic,
 * checksum, version. Fills *ret with the fields as stored, file id
 * included, without checking them against any file: that is
 * eng_sst_footer_decode()'s job. For tools that explain what is wrong.
 * Returns 0, -SCREE_ECORRUPT (bad magic or checksum), or
 * -SCREE_EUNSUPPORTED for a newer version. Pure; any thread.
 */
int eng_sst_footer_parse(const uint8_t *page, struct eng_sst_footer *ret);
/* Decodes and checks the footer of a file of file_size bytes whose id is
 * file_id: magic, version, checksum, and that the blocks are page-aligned,
 * in order, inside the file and end where the footer starts. Returns 0,
 * -SCREE_ECORRUPT, or -SCREE_EUNSUPPORTED for a newer version. */
int eng_sst_footer_decode(const uint8_t *page, uint64_t file_size, uint64_t file_id,
                          struct eng_sst_footer *ret);

/* Counts one entry into p: entries, tombstones, entries with an expiry, raw
 * key and value bytes, seq and expiry bounds. The smallest and largest key
 * and the block count are the caller's to set. The builder uses it, and so
 * does a checker that recounts a table. */
void eng_sst_props_add_entry(struct eng_sst_props *p, const struct eng_entry *e);

/* Properties block content. */
size_t eng_sst_props_size(const struct eng_sst_props *p);
size_t eng_sst_props_encode(const struct eng_sst_props *p, uint8_t *dst);
int eng_sst_props_decode(const uint8_t *src, size_t len, struct eng_sst_props *ret);

#endif
