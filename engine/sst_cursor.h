/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the two SSTable iterators (sst_iter.h through the cache, sst_seq.h
 * streaming) share: walking one data block's entries towards a move's
 * target. A move is a seek to (key, seq) -- the first version whose key
 * is above key, or equal with a seq <= seq -- or a plain step. The
 * cursor walks the entries and decides which block comes next; the
 * iterator that owns it brings blocks in (an enter callback). Pure.
 */
#ifndef SCREE_ENGINE_SST_CURSOR_H
#define SCREE_ENGINE_SST_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/block.h"
#include "engine/memtable.h"

struct eng_sst_cursor {
        struct eng_block_iter bi;       /* over block's content, while in_block */
        struct eng_entry entry;         /* where the last move stopped */
        uint32_t block;
        bool in_block;                  /* set and cleared by the owner */
        uint32_t n_blocks;              /* the table's; set by the owner */
        bool seeking;                   /* the move is a seek to the target */
        bool backward;                  /* the move walks down (the _back moves) */
        uint8_t *target;
        size_t target_len, target_cap;
        uint64_t target_seq;
        /* Set by the owner, or NULL: asked when block `index` (in_entries
         * false: entering it failed) or one of its entries (true) turns
         * out -SCREE_ECORRUPT. 0 skips the rest of that block: the move
         * goes on at the next one, as if the block ended there; anything
         * else ends the move with it. Without it the move ends with the
         * error. */
        int (*damaged)(void *owner, uint32_t index, bool in_entries, int err);
        uint32_t entering;              /* the block the last enter was for */
};

/*
 * How the owner brings block `index` in: 0 once bi is over its content
 * with block = index and in_block set, else anything but 0 or 1 to end
 * the move with -- an error, or the owner's "pending" while the block's
 * read is in flight (the owner calls eng_sst_cursor_resume when it
 * lands). owner is what the walk was given.
 */
typedef int (*eng_sst_cursor_enter_fn)(void *owner, uint32_t index);

/* Frees what the cursor allocated; it may be zeroed again after. */
void eng_sst_cursor_fini(struct eng_sst_cursor *c);

/* Makes the move a seek to (key, seq); key is copied. 0 or -ENOMEM. */
int eng_sst_cursor_target(struct eng_sst_cursor *c, const void *key, size_t key_len,
                          uint64_t seq);

/*
 * A move from block `index` (entered unless it is the current one): the
 * first entry at or after the target (or the block's first), in it or in
 * the blocks after it, entered as the walk needs them -- a key's
 * versions may run over several. 1 with entry set (seeking ends), 0 past
 * the table's last block (or when index is), a block's -SCREE_ECORRUPT
 * (unless c->damaged skips it), or what enter ended the move with.
 */
int eng_sst_cursor_move(struct eng_sst_cursor *c, uint32_t index, eng_sst_cursor_enter_fn enter,
                        void *owner);

/* Continues the move once the block enter was pending on has landed: res
 * is 0 when it is in (as enter's 0), else its error (a damaged block is
 * put to c->damaged). The same results as eng_sst_cursor_move. */
int eng_sst_cursor_resume(struct eng_sst_cursor *c, int res, eng_sst_cursor_enter_fn enter,
                          void *owner);

/* Continues from the entry the last move stopped on to the next: the same
 * results. */
int eng_sst_cursor_next(struct eng_sst_cursor *c, eng_sst_cursor_enter_fn enter, void *owner);

/*
 * The reverse moves; eng_sst_cursor_resume continues them too. A reverse
 * seek's target is a key alone (eng_sst_cursor_target's seq is ignored):
 * the last entry whose key is below it.
 */

/* A reverse move from block `index` (entered unless it is the current
 * one): the last entry below the target (or the block's last, when not
 * seeking), in it or in the blocks before it, entered as the walk needs
 * them. 1 with entry set, 0 before the table's first block, or as
 * eng_sst_cursor_move. A damaged block (c->damaged returned 0) is left
 * whole: the walk goes on at the last entry of the block before it. */
int eng_sst_cursor_move_back(struct eng_sst_cursor *c, uint32_t index,
                             eng_sst_cursor_enter_fn enter, void *owner);

/* Continues from the entry the last move stopped on to the one before it:
 * the same results. */
int eng_sst_cursor_prev(struct eng_sst_cursor *c, eng_sst_cursor_enter_fn enter, void *owner);

#endif
