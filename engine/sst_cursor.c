/* SPDX-License-Identifier: Apache-2.0 */
/* Walking a data block towards a move's target; see sst_cursor.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/mem.h"
#include "engine/key.h"
#include "engine/sst_cursor.h"
#include "engine/sst_reader.h"

void eng_sst_cursor_fini(struct eng_sst_cursor *c)
{
        eng_block_iter_fini(&c->bi);
        free(c->target);
        c->target = NULL;
        c->target_cap = 0;
}

int eng_sst_cursor_target(struct eng_sst_cursor *c, const void *key, size_t key_len,
                          uint64_t seq)
{
        uint8_t *k = mem_grow(c->target, &c->target_cap, key_len, 1);

        if (!k)
                return -ENOMEM;
        c->target = k;
        if (key_len)
                memcpy(k, key, key_len);
        c->target_len = key_len;
        c->target_seq = seq;
        c->seeking = true;
        return 0;
}

/* Places the block iterator at the move's start in the current block:
 * the target's place, or the first entry. */
static void position(struct eng_sst_cursor *c)
{
        if (c->backward) {
                if (c->seeking)
                        eng_block_iter_seek_lt(&c->bi, c->target, c->target_len);
                else
                        eng_block_iter_seek_last(&c->bi);
        } else if (c->seeking)
                eng_block_iter_seek(&c->bi, c->target, c->target_len);
        else
                eng_block_iter_seek_first(&c->bi);
}

/* True when a seek must step over the entry: a version of its key newer
 * than its seq. */
static bool before_target(const struct eng_sst_cursor *c)
{
        return c->seeking && eng_version_cmp(c->entry.key, c->entry.key_len, c->entry.seq,
                                             c->target, c->target_len, c->target_seq) < 0;
}

/* From the block iterator's position, the first entry of the block at or
 * after the target: 1 (seeking ends), 0 when the block has none left, or
 * -SCREE_ECORRUPT. */
static int find(struct eng_sst_cursor *c)
{
        int r;

        for (; c->bi.valid; eng_block_iter_next(&c->bi)) {
                if ((r = eng_sst_data_entry(&c->bi, &c->entry)) < 0)
                        return r;
                if (!before_target(c)) {
                        c->seeking = false;
                        return 1;
                }
        }
        return c->bi.err;
}

/* Whether the owner skips block index after err (in_entries: an entry of
 * it was bad, else the block itself): 0 to skip, else the move's error. */
static int damaged(struct eng_sst_cursor *c, void *owner, uint32_t index, bool in_entries,
                   int err)
{
        if (err != -SCREE_ECORRUPT || !c->damaged)
                return err;
        return c->damaged(owner, index, in_entries, err);
}

/* Enters block index, or the first after it that is not skipped as
 * damaged: 0 entered, 1 no block left, else what ends the move. */
static int enter_from(struct eng_sst_cursor *c, uint32_t index, eng_sst_cursor_enter_fn enter,
                      void *owner)
{
        int r;

        for (; index < c->n_blocks; index++) {
                c->entering = index;
                r = enter(owner, index);
                if (r == 0 || (r = damaged(c, owner, index, false, r)) != 0)
                        return r;
        }
        return 1;
}

/* Enters the last block below `index` that is not skipped as damaged: 0
 * entered, 1 no block left, else what ends the move. */
static int enter_back_from(struct eng_sst_cursor *c, uint32_t index,
                           eng_sst_cursor_enter_fn enter, void *owner)
{
        int r;

        while (index-- > 0) {
                c->entering = index;
                r = enter(owner, index);
                if (r == 0 || (r = damaged(c, owner, index, false, r)) != 0)
                        return r;
        }
        return 1;
}

/* Finishes a reverse move from the block iterator's position: its entry,
 * or, when the block has none left there, the last entry of the blocks
 * before it. Every entry of an earlier block is below the target. */
static int settle_back(struct eng_sst_cursor *c, eng_sst_cursor_enter_fn enter, void *owner)
{
        int r;

        for (;;) {
                r = c->bi.valid ? eng_sst_data_entry(&c->bi, &c->entry) : c->bi.err;
                if (r == 0 && c->bi.valid) {
                        c->seeking = false;
                        return 1;
                }
                if (r < 0)      /* 0: the rest of the block is skipped */
                        r = damaged(c, owner, c->block, true, r);
                if (r != 0)
                        return r;
                if ((r = enter_back_from(c, c->block, enter, owner)) != 0)
                        return r == 1 ? 0 : r;
                c->seeking = false;
                position(c);
        }
}

/* Finishes a move from the block iterator's position. */
static int settle(struct eng_sst_cursor *c, eng_sst_cursor_enter_fn enter, void *owner)
{
        int r;

        for (;;) {
                r = find(c);
                if (r < 0)      /* 0: the rest of the block is skipped */
                        r = damaged(c, owner, c->block, true, r);
                if (r != 0)
                        return r;
                if ((r = enter_from(c, c->block + 1, enter, owner)) != 0)
                        return r == 1 ? 0 : r;
                position(c);
        }
}

int eng_sst_cursor_move(struct eng_sst_cursor *c, uint32_t index, eng_sst_cursor_enter_fn enter,
                        void *owner)
{
        int r;

        c->backward = false;
        if (index >= c->n_blocks)
                return 0;
        if (!c->in_block || c->block != index) {
                if ((r = enter_from(c, index, enter, owner)) != 0)
                        return r == 1 ? 0 : r;
        }
        position(c);
        return settle(c, enter, owner);
}

int eng_sst_cursor_resume(struct eng_sst_cursor *c, int res, eng_sst_cursor_enter_fn enter,
                          void *owner)
{
        if (res != 0) {
                if ((res = damaged(c, owner, c->entering, false, res)) != 0)
                        return res;
                res = c->backward ? enter_back_from(c, c->entering, enter, owner) :
                                    enter_from(c, c->entering + 1, enter, owner);
                if (res != 0)
                        return res == 1 ? 0 : res;
        }
        position(c);
        return c->backward ? settle_back(c, enter, owner) : settle(c, enter, owner);
}

int eng_sst_cursor_next(struct eng_sst_cursor *c, eng_sst_cursor_enter_fn enter, void *owner)
{
        c->backward = false;
        c->seeking = false;
        eng_block_iter_next(&c->bi);
        return settle(c, enter, owner);
}

int eng_sst_cursor_move_back(struct eng_sst_cursor *c, uint32_t index,
                             eng_sst_cursor_enter_fn enter, void *owner)
{
        int r;

        c->backward = true;
        if (index >= c->n_blocks)
                return 0;
        if (!c->in_block || c->block != index) {
                if ((r = enter_back_from(c, index + 1, enter, owner)) != 0)
                        return r == 1 ? 0 : r;
                if (c->block != index)
                        c->seeking = false;     /* an earlier block: all below */
        }
        position(c);
        return settle_back(c, enter, owner);
}

int eng_sst_cursor_prev(struct eng_sst_cursor *c, eng_sst_cursor_enter_fn enter, void *owner)
{
        c->backward = true;
        c->seeking = false;
        eng_block_iter_prev(&c->bi);
        return settle_back(c, enter, owner);
}
