/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Builds one SSTable (format: docs/format/sst.md) from entries given in
 * order, into page-aligned output chunks that an I/O driver (sst_io.c)
 * writes out. Pure: no I/O.
 *
 * Use: eng_sst_builder_add() each entry (key ascending, and for one key
 * newest seq first); whenever eng_sst_builder_ready() is large enough, take
 * the finished bytes with eng_sst_builder_take() and write them at the
 * offset it reports; after the last entry eng_sst_builder_finish() appends
 * the index, bloom, properties and footer, and a last take() returns them.
 * Chunks are whole pages in a 4096-aligned buffer, ready for O_DIRECT.
 * Shard-local.
 */
#ifndef SCREE_ENGINE_SST_BUILDER_H
#define SCREE_ENGINE_SST_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/memtable.h"
#include "engine/sst_format.h"

struct eng_sst_builder;

/* Zero means "default" for every field but file_id and tablet. */
struct eng_sst_builder_opts {
        uint64_t file_id;               /* seeds every block checksum */
        uint32_t tablet;
        unsigned bits_per_key;          /* bloom; default 10 */
        unsigned block_bytes;           /* data block target, sealed; default 4096 */
        unsigned restart_interval;      /* default 16 */
};

/* Returns 0 and *ret (free with eng_sst_builder_free), or -ENOMEM. */
int eng_sst_builder_new(const struct eng_sst_builder_opts *o, struct eng_sst_builder **ret);
/* Accepts NULL. Frees any output not taken. */
void eng_sst_builder_free(struct eng_sst_builder *b);

/*
 * Adds one entry (copied). Returns 0; -EINVAL if it is out of order (key
 * not above the last, or same key with a seq not below the last), has a bad
 * kind, or a key/value over ENG_SST_MAX_KEY_BYTES/ENG_SST_MAX_VALUE_BYTES;
 * -ENOMEM. REQUIRES: not finished.
 */
int eng_sst_builder_add(struct eng_sst_builder *b, const struct eng_entry *e);

/* Bytes of finished pages waiting to be taken. */
size_t eng_sst_builder_ready(const struct eng_sst_builder *b);

/*
 * Hands the waiting pages to the caller: *ret_buf (4096-aligned; the caller
 * frees it with mem_free_aligned), *ret_len bytes (a multiple of 4096; 0
 * with *ret_buf NULL when nothing waits), to be written at file offset
 * *ret_offset.
 */
void eng_sst_builder_take(struct eng_sst_builder *b, uint8_t **ret_buf, size_t *ret_len,
                          uint64_t *ret_offset);

/* Ends the table: flushes the last data block and appends the index,
 * bloom, properties and footer. Returns 0 or -ENOMEM. */
int eng_sst_builder_finish(struct eng_sst_builder *b);

/* Bytes of file produced so far (taken or not); after finish, the file size. */
uint64_t eng_sst_builder_file_size(const struct eng_sst_builder *b);
/* The table's properties so far; borrowed, valid until the next add or free. */
const struct eng_sst_props *eng_sst_builder_props(const struct eng_sst_builder *b);

#endif
