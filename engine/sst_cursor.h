/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the two SSTable iterators (sst_iter.h through the cache, sst_seq.h
 * streaming) share: walking one data block's entries towards a move's
 * target. A move is a seek to (key, seq) -- the first version whose key
 * is above key, or equal with a seq <= seq -- or a plain step; the
 * iterator owns the blocks and calls these for the one it is in. Pure.
 */
#ifndef SCREE_ENGINE_SST_CURSOR_H
#define SCREE_ENGINE_SST_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/block.h"
#include "engine/memtable.h"

struct eng_sst_cursor {
        struct eng_block_iter bi;       /* over the current block's content */
        struct eng_entry entry;         /* where the last find stopped */
        bool seeking;                   /* the move is a seek to the target */
        uint8_t *target;
        size_t target_len, target_cap;
        uint64_t target_seq;
};

/* Frees what the cursor allocated; it may be zeroed again after. */
void eng_sst_cursor_fini(struct eng_sst_cursor *c);

/* Makes the move a seek to (key, seq); key is copied. 0 or -ENOMEM. */
int eng_sst_cursor_target(struct eng_sst_cursor *c, const void *key, size_t key_len,
                          uint64_t seq);

/* Places the block iterator at the move's start in the current block:
 * the target's place, or the first entry. */
void eng_sst_cursor_position(struct eng_sst_cursor *c);

/* From the block iterator's position, the first entry of the block at or
 * after the target: 1 with c->entry set (the move is over: seeking ends),
 * 0 when the block has none left, or -SCREE_ECORRUPT. */
int eng_sst_cursor_find(struct eng_sst_cursor *c);

#endif
