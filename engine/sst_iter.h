/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An iterator over every version in an open SSTable, in table order
 * (key ascending, newest seq first within a key; docs/format/sst.md),
 * reading data blocks through the shard's block cache (sst_io.h).
 *
 * Moves (seek_first, seek, next; seek_last, seek_lt, prev walking down)
 * finish synchronously while the blocks they need are cached, and
 * otherwise return ENG_SST_PENDING and call back from the loop once the
 * read is done. Entering a block starts the read of the next one in the
 * move's direction (readahead of one block), so a scan that yields to the
 * loop between blocks rarely waits.
 *
 * A move that has to read its block reads the following ones with it: as
 * many as the span (eng_sst_iter_set_span) covers, at most 3, else one.
 *
 * The iterator holds a reference to its table (the owner may drop its own
 * meanwhile) and pins at most four blocks: the one it stands in and those
 * read ahead. Freeing it mid-scan, or while a read is pending, is allowed:
 * the pins go at once, and the memory and the table reference when the
 * last of its reads completes.
 *
 * Shard-local, like the table.
 */
#ifndef SCREE_ENGINE_SST_ITER_H
#define SCREE_ENGINE_SST_ITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/memtable.h"
#include "engine/sst_io.h"

struct eng_sst_iter;

/* res: what the pending move returns when it is done (1, 0 or <0). */
typedef void (*eng_sst_iter_cb)(struct eng_sst_iter *it, int res, void *arg);

/*
 * Makes an iterator over t (borrowed; the iterator takes its own
 * reference), not positioned. Returns 0 and *ret (free with
 * eng_sst_iter_free), or -ENOMEM. Shard-local.
 */
int eng_sst_iter_new(struct eng_sst_table *t, struct eng_sst_iter **ret);

/*
 * Frees it; accepts NULL. Releases its blocks at once; when a read is
 * pending, the rest goes when the read completes, and the pending move's
 * callback never runs. May be called from that callback. Shard-local.
 */
void eng_sst_iter_free(struct eng_sst_iter *it);

/*
 * The moves. Each returns
 *   1                positioned on an entry (eng_sst_iter_entry);
 *   0                exhausted: no entry at or after the target;
 *   ENG_SST_PENDING  a block read is under way: cb(it, res, arg) runs
 *                    later, from the loop, with 1, 0 or <0;
 *   <0               -SCREE_ECORRUPT (a bad block or entry), -ENOMEM,
 *                    or -errno from the read.
 * After 0 or an error the iterator is not positioned; any seek may follow
 * (a seek after an error retries the reads it needs). A read ahead that
 * failed is reported when the scan reaches its block.
 * REQUIRES: no move pending. Shard-local.
 */
int eng_sst_iter_seek_first(struct eng_sst_iter *it, eng_sst_iter_cb cb, void *arg);

/*
 * Positions at the first version at or after (key, seq) in table order:
 * the first entry whose key is above key, or equal with a seq <= seq.
 * seq = UINT64_MAX gives the newest version of key. key is copied.
 */
int eng_sst_iter_seek(struct eng_sst_iter *it, const void *key, size_t key_len, uint64_t seq,
                      eng_sst_iter_cb cb, void *arg);

/* The next version. REQUIRES: positioned. */
int eng_sst_iter_next(struct eng_sst_iter *it, eng_sst_iter_cb cb, void *arg);

/*
 * The reverse moves, with the same results and callbacks (0: no entry
 * before the target). A reverse move reads ahead towards the table's
 * start: entering a block starts the read of the one before it, and a
 * move that must read its block reads the span's worth before it (see
 * eng_sst_iter_set_span). Inside a block an entry's predecessor is
 * decoded again from the last restart point before it (block.h); the
 * block before is found through the index. A damaged block met on the
 * way is reported as for the forward moves; with skip, the move goes on
 * at the last entry of the block before it, leaving the damaged one
 * whole (its entries do not decode backwards without their start).
 * Forward and reverse moves may follow each other in any order: each
 * starts from the entry the iterator stands on.
 */
/* Positions at the table's last entry (the oldest version of its largest
 * key). */
int eng_sst_iter_seek_last(struct eng_sst_iter *it, eng_sst_iter_cb cb, void *arg);

/* Positions at the last entry whose key is < key (the oldest version of
 * the largest such key); key is copied. A key at or below the table's
 * smallest is 0 at once, with no read. */
int eng_sst_iter_seek_lt(struct eng_sst_iter *it, const void *key, size_t key_len,
                         eng_sst_iter_cb cb, void *arg);

/* The version before the current one. REQUIRES: positioned. */
int eng_sst_iter_prev(struct eng_sst_iter *it, eng_sst_iter_cb cb, void *arg);

/* Tells the iterator that a move will likely lead on to about `entries`
 * entries (a scan's limit); 0 = unknown (the default). A move that must
 * read its block then reads as many blocks after it as those entries
 * fill at the table's entries per block, in the same breath; and a block
 * a step enters once the span is about used up (no more than a block's
 * worth of it left, counting the steps since the seek) reads none ahead:
 * the one after it is likely never wanted, and its read would be wasted.
 * Past the span, blocks read ahead again. A block cached already is never
 * read ahead (nor pinned early: that would save nothing). */
void eng_sst_iter_set_span(struct eng_sst_iter *it, uint32_t entries);

/*
 * Damaged blocks (sst_io.h: a checksum, length, type or entry that does
 * not verify). Each one a move meets is reported to the table's damage
 * hook and to fn(arg, d) when set (d borrowed for the call). With skip,
 * the move then goes on at the next block, as if the damaged one held no
 * entry past those already given: a scan that must get on despite the
 * damage (and may then miss versions, or show older ones the block
 * hid). Without skip (the default) the move fails with -SCREE_ECORRUPT.
 * Shard-local.
 */
void eng_sst_iter_on_damage(struct eng_sst_iter *it, bool skip, eng_sst_damaged_fn fn, void *arg);
/* True when the last move left the iterator on an entry. */
bool eng_sst_iter_is_valid(const struct eng_sst_iter *it);

/*
 * The entry the iterator stands on; key and value are borrowed until the
 * next move or free. REQUIRES: positioned. Shard-local.
 */
void eng_sst_iter_entry(const struct eng_sst_iter *it, struct eng_entry *ret);

#endif
