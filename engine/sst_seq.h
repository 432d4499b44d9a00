/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A forward iterator that streams an open SSTable's data blocks in large
 * reads, past the block cache: for compactions, which read each input
 * once, front to back (RocksDB's compaction_readahead_size with
 * fill_cache off). Same moves and results as sst_iter.h.
 *
 * It reads runs of whole adjacent blocks ("chunks") of up to chunk_bytes
 * (a block larger than that is a chunk of its own) with one O_DIRECT read
 * each, and verifies each block's checksum as the scan enters it. Once
 * the scan is in a chunk, the next chunk is read ahead, so at most two are
 * held and one read is in flight: a table costs size / chunk_bytes reads,
 * not one per 4 KiB block, and evicts nothing from the cache that point
 * reads depend on.
 *
 * A seek jumps to the block the index names for its key, reading from
 * there; moving forward within the chunks held costs no read. Freeing it
 * is allowed at any time, with a read pending too: a read in flight keeps
 * its buffer and a reference to the table until it completes.
 *
 * Shard-local, like the table.
 */
#ifndef SCREE_ENGINE_SST_SEQ_H
#define SCREE_ENGINE_SST_SEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/memtable.h"
#include "engine/sst_io.h"

struct eng_sst_seq;

/* Bytes a chunk holds by default: at 4 KiB blocks, 64 blocks a read. */
#define ENG_SST_SEQ_DEFAULT_CHUNK (256u << 10)

/* res: what the pending move returns when it is done (1, 0 or <0). */
typedef void (*eng_sst_seq_cb)(struct eng_sst_seq *it, int res, void *arg);

/*
 * Makes an iterator over t (borrowed; the iterator takes its own
 * reference), not positioned, reading chunks of chunk_bytes (a multiple of
 * 4096; 0 = ENG_SST_SEQ_DEFAULT_CHUNK). Returns 0 and *ret (free with
 * eng_sst_seq_free), -EINVAL (chunk_bytes not a multiple of 4096) or
 * -ENOMEM. Shard-local.
 */
int eng_sst_seq_new(struct eng_sst_table *t, uint32_t chunk_bytes, struct eng_sst_seq **ret);

/* Frees it; accepts NULL. A pending move's callback never runs. May be
 * called from that callback. Shard-local. */
void eng_sst_seq_free(struct eng_sst_seq *it);

/*
 * The moves, as sst_iter.h's. Each returns
 *   1                positioned on an entry (eng_sst_seq_entry);
 *   0                exhausted: no entry at or after the target;
 *   ENG_SST_PENDING  a chunk read is under way: cb(it, res, arg) runs
 *                    later, from the loop, with 1, 0 or <0;
 *   <0               -SCREE_ECORRUPT (a bad block or entry, a short
 *                    read), -ENOMEM, or -errno from the read.
 * After 0 or an error the iterator is not positioned; any seek may follow
 * and reads again what it needs (a failed read is never kept).
 * REQUIRES: no move pending. Shard-local.
 */
int eng_sst_seq_seek_first(struct eng_sst_seq *it, eng_sst_seq_cb cb, void *arg);
/* The first version at or after (key, seq) in table order; key is copied. */
int eng_sst_seq_seek(struct eng_sst_seq *it, const void *key, size_t key_len, uint64_t seq,
                     eng_sst_seq_cb cb, void *arg);
/* The next version. REQUIRES: positioned. */
int eng_sst_seq_next(struct eng_sst_seq *it, eng_sst_seq_cb cb, void *arg);

/* True when the last move left the iterator on an entry. */
/* Damaged blocks: as eng_sst_iter_on_damage (sst_iter.h). A chunk read
 * that comes back short counts as damage to its first block. */
void eng_sst_seq_on_damage(struct eng_sst_seq *it, bool skip, eng_sst_damaged_fn fn, void *arg);
bool eng_sst_seq_is_valid(const struct eng_sst_seq *it);

/* The entry it stands on; key and value are borrowed until the next move
 * or free. REQUIRES: positioned. Shard-local. */
void eng_sst_seq_entry(const struct eng_sst_seq *it, struct eng_entry *ret);

/* Chunk reads this iterator started (for tests and stats). */
uint64_t eng_sst_seq_reads(const struct eng_sst_seq *it);

#endif
