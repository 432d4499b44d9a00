/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable iterator; see sst_iter.h. The cursor (sst_cursor.h) walks a
 * move's entries -- from a seek's key or a block's first entry, over
 * versions newer than a seek's seq and on into the following blocks, as a
 * key's versions may run over several -- and enter() brings the blocks it
 * asks for in.
 *
 * Block reads go through ITER_SLOTS slots. A readahead leaves one slot free
 * (it starts only while two are), so a move always finds its block's slot
 * or a free one; entering a block keeps the reads of the blocks just after
 * it and lets the others go. Entering a block reads the next one ahead,
 * unless it is cached (the table's slot says so) or the span is about
 * used up (eng_sst_iter_set_span). A move that must read its block reads
 * the next ones with it, so that a scan that needs several waits for the
 * disk once, not once a block: as
 * many as the span (eng_sst_iter_set_span) covers at the table's entries
 * per block, at most ITER_MAX_AHEAD, else one -- unless it is a seek below
 * the table's smallest key: such a table is likely merged in for one
 * entry, or none. A slot whose block is no
 * longer wanted is released when its read completes; a freed iterator
 * lives on until its last pending read has called back.
 */
#include <errno.h>
#include <stdlib.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/compiler.h"
#include "engine/key.h"
#include "engine/sst_cursor.h"
#include "engine/sst_iter.h"

/* Blocks read ahead of a move's own block at most, and the slots for them. */
#define ITER_MAX_AHEAD 3u
#define ITER_SLOTS (ITER_MAX_AHEAD + 1)

enum slot_state {
        SLOT_FREE,
        SLOT_PENDING,
        SLOT_READY,
};

/* One block read: a readahead, or the read a move waits for. */
struct slot {
        struct eng_sst_block_read rq;   /* rq.ctx: the iterator */
        enum slot_state state;
        uint32_t index;
        int res;                        /* READY: 0 with rq.block pinned, or the read's error */
        bool stale;                     /* PENDING and no longer wanted */
};

struct eng_sst_iter {
        struct eng_sst_table *t;        /* referenced */
        struct eng_block_cache *cache;
        const struct eng_sst_reader *r;
        const uint8_t *smallest;        /* the table's smallest key (its props) */
        uint32_t smallest_len;
        struct eng_cached_block *block; /* pinned: c.block's, while c.in_block */
        struct eng_sst_cursor c;        /* in block's content */
        bool valid;
        struct slot slots[ITER_SLOTS];
        uint32_t span;                  /* entries a move is expected to lead to; 0 = unknown */
        uint32_t stepped;               /* nexts and prevs since the last seek */
        uint32_t per_block;             /* the table's entries per data block, at least 1 */
        struct slot *wait;              /* the read the pending move waits for */
        eng_sst_iter_cb cb;
        void *arg;
        bool ahead_at_miss;             /* a read for the move reads ahead with it */
        bool backward;                  /* the move walks down: reads ahead go down too */
        bool in_cb, freeing;
        struct eng_sst_damage_policy damage;    /* eng_sst_iter_on_damage */
};

static void on_read(struct eng_sst_block_read *rq, int res);
static int damaged(void *owner, uint32_t index, bool in_entries, int err);

int eng_sst_iter_new(struct eng_sst_table *t, struct eng_sst_iter **ret)
{
        struct eng_sst_iter *it = calloc(1, sizeof(*it));
        const struct eng_sst_props *props;

        if (!it)
                return -ENOMEM;
        eng_sst_table_ref(t);
        it->t = t;
        it->cache = eng_sst_table_cache(t);
        it->r = eng_sst_table_reader(t);
        it->c.n_blocks = eng_sst_reader_n_blocks(it->r);
        it->c.damaged = damaged;
        props = eng_sst_reader_props(it->r);
        it->smallest = props->smallest;
        it->smallest_len = props->smallest_len;
        it->per_block = it->c.n_blocks ? (uint32_t)(props->n_entries / it->c.n_blocks) : 0;
        if (!it->per_block)
                it->per_block = 1;
        *ret = it;
        return 0;
}

static void slot_drop(struct eng_sst_iter *it, struct slot *s)
{
        if (s->state == SLOT_READY && s->res == 0)
                eng_block_cache_release(it->cache, s->rq.block);
        s->state = SLOT_FREE;
}

/* Destroys a freed iterator once no read can call back into it. */
static void maybe_destroy(struct eng_sst_iter *it)
{
        if (!it->freeing || it->in_cb)
                return;
        for (unsigned i = 0; i < ITER_SLOTS; i++)
                if (it->slots[i].state == SLOT_PENDING)
                        return;
        eng_sst_cursor_fini(&it->c);
        eng_sst_table_unref(it->t);
        free(it);
}

static void leave_block(struct eng_sst_iter *it)
{
        eng_block_cache_release(it->cache, it->block);
        it->block = NULL;
        it->c.in_block = false;
        it->valid = false;
}

void eng_sst_iter_free(struct eng_sst_iter *it)
{
        if (!it)
                return;
        it->freeing = true;
        it->wait = NULL;
        leave_block(it);
        for (unsigned i = 0; i < ITER_SLOTS; i++)
                if (it->slots[i].state == SLOT_READY)
                        slot_drop(it, &it->slots[i]);
        maybe_destroy(it);
}

/* Ends a move that did not land on an entry: 0 (exhausted) or an error. */
static int stop(struct eng_sst_iter *it, int res)
{
        leave_block(it);
        it->c.seeking = false;
        return res;
}

static int start_read(struct eng_sst_iter *it, struct slot *s, uint32_t index)
{
        int r;

        s->rq = (struct eng_sst_block_read){ .done = on_read, .ctx = it };
        s->index = index;
        s->stale = false;
        s->res = 0;
        r = eng_sst_table_read_block(it->t, index, &s->rq);
        if (r < 0)
                return r;
        s->state = r == 1 ? SLOT_READY : SLOT_PENDING;
        return 0;
}

void eng_sst_iter_set_span(struct eng_sst_iter *it, uint32_t entries)
{
        it->span = entries;
}

void eng_sst_iter_on_damage(struct eng_sst_iter *it, bool skip, eng_sst_damaged_fn fn, void *arg)
{
        it->damage = (struct eng_sst_damage_policy){ .skip = skip, .fn = fn, .arg = arg };
}

/* The cursor met a damaged block (sst_cursor.h): report it; 0 skips it. */
static int damaged(void *owner, uint32_t index, bool in_entries, int err)
{
        struct eng_sst_iter *it = owner;

        return eng_sst_damage_met(it->t, &it->damage, index, in_entries, err);
}

/* The slot busy with block `index`, or NULL. */
static struct slot *slot_of(struct eng_sst_iter *it, uint32_t index)
{
        for (unsigned i = 0; i < ITER_SLOTS; i++)
                if (it->slots[i].state != SLOT_FREE && it->slots[i].index == index)
                        return &it->slots[i];
        return NULL;
}

static struct slot *free_slot(struct eng_sst_iter *it, unsigned *ret_n)
{
        struct slot *f = NULL;

        *ret_n = 0;
        for (unsigned i = 0; i < ITER_SLOTS; i++) {
                if (it->slots[i].state == SLOT_FREE) {
                        f = &it->slots[i];
                        ++*ret_n;
                }
        }
        return f;
}

/* Starts reading the n blocks after `from` in the move's direction
 * (from+1 .. from+n, or from-1 .. from-n walking down) that no slot holds
 * yet and that are not cached, while more than `spare` slots are free;
 * the cached ones it prefetches (eng_sst_table_block_prefetch). A read
 * that cannot start is no loss: the move that needs the block starts it
 * again and reports the error. */
static void read_ahead(struct eng_sst_iter *it, uint32_t from, uint32_t n, unsigned spare)
{
        for (uint32_t k = 1; k <= n; k++) {
                uint32_t i = it->backward ? from - k : from + k;
                unsigned n_free;
                struct slot *f;

                if (it->backward ? k > from : i >= it->c.n_blocks)
                        return;

                /* Pinning a cached block early saves nothing: only reads
                 * are worth starting ahead. */
                if (slot_of(it, i))
                        continue;
                if (eng_sst_table_block_cached(it->t, i)) {
                        eng_sst_table_block_prefetch(it->t, i);
                        continue;
                }
                if (!(f = free_slot(it, &n_free)) || n_free <= spare)
                        return;
                (void)start_read(it, f, i);
        }
}

/* How far a move that must read its block reads ahead with it. */
static uint32_t miss_depth(const struct eng_sst_iter *it)
{
        uint32_t n = (it->span + it->per_block - 1) / it->per_block;

        return !it->ahead_at_miss ? 0 : n < 1 ? 1 : n > ITER_MAX_AHEAD ? ITER_MAX_AHEAD : n;
}

/* Whether the block entered by a step has no more than a block's worth
 * of the span left after it: the move likely ends there. Not a seek's
 * block, which a keyed seek enters mid-way; nor once the steps are past
 * the span (the scan outran the estimate: read ahead as before). */
static bool span_used_up(const struct eng_sst_iter *it)
{
        return it->span && it->stepped > 0 && it->stepped < it->span &&
               it->stepped + it->per_block >= it->span;
}

/* Makes the block slot s holds the current one. 0 or the read's error. */
static int take(struct eng_sst_iter *it, struct slot *s)
{
        int r = s->res;

        s->state = SLOT_FREE;
        if (r < 0)
                return r;
        it->c.block = s->index;
        it->c.in_block = true;
        it->block = s->rq.block;
        r = eng_block_iter_reset(&it->c.bi, it->block->content, it->block->content_len);
        if (r < 0)
                return r;
        if (!span_used_up(it))
                read_ahead(it, it->c.block, 1, 1);
        return 0;
}

/* Whether a read of block x is worth keeping for a move into index: one
 * of the blocks just after it in the move's direction. */
static bool just_after(const struct eng_sst_iter *it, uint32_t x, uint32_t index)
{
        if (it->backward)
                return x < index && index - x <= ITER_MAX_AHEAD;
        return x > index && x - index <= ITER_MAX_AHEAD;
}

/* Moves into block `index`: 0 when it is the current block, ENG_SST_PENDING
 * (it->wait set), or <0. Reads of the blocks just after it are kept; the
 * others are let go. */
static int enter(void *owner, uint32_t index)
{
        struct eng_sst_iter *it = owner;
        struct slot *s = NULL;
        unsigned n_free;
        int r;

        leave_block(it);
        for (unsigned i = 0; i < ITER_SLOTS; i++) {
                struct slot *x = &it->slots[i];

                if (x->state == SLOT_FREE)
                        continue;
                if (x->index == index || just_after(it, x->index, index)) {
                        x->stale = false;
                        if (x->index == index)
                                s = x;
                } else if (x->state == SLOT_READY) {
                        slot_drop(it, x);
                } else {
                        x->stale = true;
                }
        }
        if (!s) {
                s = free_slot(it, &n_free);
                SCREE_ASSERT(s);
                if ((r = start_read(it, s, index)) < 0)
                        return r;
                if (s->state == SLOT_PENDING)
                        read_ahead(it, index, miss_depth(it), 0);
        }
        if (s->state == SLOT_PENDING) {
                s->stale = false;
                it->wait = s;
                return ENG_SST_PENDING;
        }
        return take(it, s);
}

/* Ends a move with the cursor's result: 1, ENG_SST_PENDING, else stop. */
static int finish(struct eng_sst_iter *it, int r)
{
        if (r == 1)
                it->valid = true;
        else if (r != ENG_SST_PENDING)
                return stop(it, r);
        return r;
}

static void on_read(struct eng_sst_block_read *rq, int res)
{
        struct slot *s = container_of(rq, struct slot, rq);
        struct eng_sst_iter *it = rq->ctx;
        int r;

        s->state = SLOT_READY;
        s->res = res;
        if (it->freeing || s->stale) {
                slot_drop(it, s);
                maybe_destroy(it);
                return;
        }
        if (it->wait != s)
                return;         /* read ahead: kept for the move that gets there */
        it->wait = NULL;
        r = finish(it, eng_sst_cursor_resume(&it->c, take(it, s), enter, it));
        if (r == ENG_SST_PENDING)
                return;
        it->in_cb = true;
        it->cb(it, r, it->arg);
        it->in_cb = false;
        maybe_destroy(it);
}

/* A move starts; a step (next, prev) counts against the span, a seek
 * starts it over. */
static void begin(struct eng_sst_iter *it, eng_sst_iter_cb cb, void *arg, bool backward,
                  bool step)
{
        SCREE_ASSERT(!it->wait && !it->freeing);
        it->stepped = step ? it->stepped + 1 : 0;
        it->cb = cb;
        it->arg = arg;
        it->valid = false;
        it->backward = backward;
}

int eng_sst_iter_seek_first(struct eng_sst_iter *it, eng_sst_iter_cb cb, void *arg)
{
        begin(it, cb, arg, false, false);
        it->c.seeking = false;
        it->ahead_at_miss = false;
        return finish(it, eng_sst_cursor_move(&it->c, 0, enter, it));
}

int eng_sst_iter_seek(struct eng_sst_iter *it, const void *key, size_t key_len, uint64_t seq,
                      eng_sst_iter_cb cb, void *arg)
{
        uint32_t index;

        begin(it, cb, arg, false, false);
        if (eng_sst_cursor_target(&it->c, key, key_len, seq) < 0)
                return stop(it, -ENOMEM);
        it->ahead_at_miss = eng_key_cmp(key, key_len, it->smallest, it->smallest_len) >= 0;
        if (eng_sst_reader_find_block(it->r, key, key_len, &index) < 0)
                return stop(it, 0);     /* above the table's largest key */
        return finish(it, eng_sst_cursor_move(&it->c, index, enter, it));
}

int eng_sst_iter_next(struct eng_sst_iter *it, eng_sst_iter_cb cb, void *arg)
{
        SCREE_ASSERT(it->valid);
        begin(it, cb, arg, false, true);
        it->ahead_at_miss = true;
        return finish(it, eng_sst_cursor_next(&it->c, enter, it));
}

int eng_sst_iter_seek_last(struct eng_sst_iter *it, eng_sst_iter_cb cb, void *arg)
{
        begin(it, cb, arg, true, false);
        it->c.seeking = false;
        it->ahead_at_miss = true;
        return finish(it, eng_sst_cursor_move_back(&it->c, it->c.n_blocks - 1, enter, it));
}

int eng_sst_iter_seek_lt(struct eng_sst_iter *it, const void *key, size_t key_len,
                         eng_sst_iter_cb cb, void *arg)
{
        uint32_t index;

        begin(it, cb, arg, true, false);
        /* At or below the smallest key there is nothing: no read. */
        if (eng_key_cmp(key, key_len, it->smallest, it->smallest_len) <= 0)
                return stop(it, 0);
        if (eng_sst_cursor_target(&it->c, key, key_len, UINT64_MAX) < 0)
                return stop(it, -ENOMEM);
        it->ahead_at_miss = true;
        if (eng_sst_reader_find_block(it->r, key, key_len, &index) < 0) {
                index = it->c.n_blocks - 1;     /* above the largest key: the last entry */
                it->c.seeking = false;
        }
        return finish(it, eng_sst_cursor_move_back(&it->c, index, enter, it));
}

int eng_sst_iter_prev(struct eng_sst_iter *it, eng_sst_iter_cb cb, void *arg)
{
        SCREE_ASSERT(it->valid);
        begin(it, cb, arg, true, true);
        it->ahead_at_miss = true;
        return finish(it, eng_sst_cursor_prev(&it->c, enter, it));
}

bool eng_sst_iter_is_valid(const struct eng_sst_iter *it)
{
        return it->valid;
}

void eng_sst_iter_entry(const struct eng_sst_iter *it, struct eng_entry *ret)
{
        SCREE_ASSERT(it->valid);
        *ret = it->c.entry;
}
