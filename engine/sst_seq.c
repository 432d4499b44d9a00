/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streaming SSTable iterator; see sst_seq.h. The iterator holds at most
 * two chunks: cur, which holds the block it is in (or the one a move waits
 * for), and ahead, the chunk after cur, whose read starts as soon as the
 * scan enters a block of a chunk that is in. Moving into ahead drops cur;
 * moving anywhere else drops both and reads a chunk from the target block.
 * A dropped chunk whose read is in flight is let go: it frees itself, and
 * its table reference, when the read completes. One spare buffer of
 * chunk_bytes is kept for the next chunk, so a scan allocates twice.
 *
 * The cursor (sst_cursor.h) walks a move's entries and blocks, as in
 * sst_iter.c; enter() brings the blocks it asks for in.
 */
#include <errno.h>
#include <stdlib.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/compiler.h"
#include "base/mem.h"
#include "engine/sst_cursor.h"
#include "engine/sst_seq.h"

struct chunk {
        struct eng_fs_op op;
        struct eng_sst_seq *it;         /* NULL: let go while its read was in flight */
        struct eng_sst_table *t;        /* referenced while the read is in flight */
        uint8_t *buf;
        uint32_t buf_len;               /* allocated: chunk_bytes, or len when larger */
        uint64_t off;                   /* of block first */
        uint32_t len;
        uint32_t first, end;            /* the blocks [first, end) */
        bool ready;
        int res;                        /* ready: 0 (len bytes read), or the error */
};

struct eng_sst_seq {
        struct eng_sst_table *t;        /* referenced */
        const struct eng_sst_reader *r;
        uint32_t chunk_bytes;
        struct chunk *cur, *ahead;
        uint8_t *spare;                 /* a free buffer of chunk_bytes, or NULL */
        struct eng_sst_cursor c;        /* in c.block's content, in cur's buffer */
        bool valid;
        bool waiting;                   /* a move waits for cur's read ... */
        uint32_t wait_block;            /* ... to enter this block */
        eng_sst_seq_cb cb;
        void *arg;
        uint64_t reads;
        struct eng_sst_damage_policy damage;    /* eng_sst_seq_on_damage */
};

/* The cursor met a damaged block (sst_cursor.h): report it; 0 skips it. */
static int damaged(void *owner, uint32_t index, bool in_entries, int err)
{
        struct eng_sst_seq *it = owner;

        return eng_sst_damage_met(it->t, &it->damage, index, in_entries, err);
}

void eng_sst_seq_on_damage(struct eng_sst_seq *it, bool skip, eng_sst_damaged_fn fn, void *arg)
{
        it->damage = (struct eng_sst_damage_policy){ .skip = skip, .fn = fn, .arg = arg };
}

int eng_sst_seq_new(struct eng_sst_table *t, uint32_t chunk_bytes, struct eng_sst_seq **ret)
{
        struct eng_sst_seq *it;

        if (chunk_bytes % MEM_DIRECT_ALIGN)
                return -EINVAL;
        if (!(it = calloc(1, sizeof(*it))))
                return -ENOMEM;
        eng_sst_table_ref(t);
        it->t = t;
        it->r = eng_sst_table_reader(t);
        it->c.n_blocks = eng_sst_reader_n_blocks(it->r);
        it->c.damaged = damaged;
        it->chunk_bytes = chunk_bytes ? chunk_bytes : ENG_SST_SEQ_DEFAULT_CHUNK;
        *ret = it;
        return 0;
}

/* Frees c, keeping its buffer as its spare when it has none (it may be
 * NULL). REQUIRES: no read in flight. */
static void chunk_free(struct eng_sst_seq *it, struct chunk *c)
{
        if (it && !it->spare && c->buf_len == it->chunk_bytes)
                it->spare = c->buf;
        else
                mem_free_aligned(c->buf);
        free(c);
}

/* Lets c go (accepts NULL): now if it is in, else when its read completes. */
static void chunk_drop(struct eng_sst_seq *it, struct chunk *c)
{
        if (!c)
                return;
        if (c->ready)
                chunk_free(it, c);
        else
                c->it = NULL;
}

static void on_read(struct eng_fs_op *op, int res);

/* Starts reading the chunk that begins at block `first`: the blocks after
 * it that fit in chunk_bytes with it. 0 and *ret, or <0. */
static int chunk_start(struct eng_sst_seq *it, uint32_t first, struct chunk **ret)
{
        struct eng_sst_handle h = eng_sst_reader_block(it->r, first);
        struct chunk *c = calloc(1, sizeof(*c));
        uint32_t end = first + 1, len = h.size;
        int r;

        if (!c)
                return -ENOMEM;
        for (; end < it->c.n_blocks; end++) {
                uint32_t size = eng_sst_reader_block(it->r, end).size;

                if (len >= it->chunk_bytes || size > it->chunk_bytes - len)
                        break;
                len += size;
        }
        *c = (struct chunk){ .it = it, .t = it->t, .off = h.offset, .len = len,
                             .first = first, .end = end };
        c->buf_len = len > it->chunk_bytes ? len : it->chunk_bytes;
        if (c->buf_len == it->chunk_bytes && it->spare) {
                c->buf = it->spare;
                it->spare = NULL;
        } else if (!(c->buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, c->buf_len))) {
                free(c);
                return -ENOMEM;
        }
        r = eng_sst_table_read_raw(it->t, &c->op, c->buf, len, h.offset, on_read);
        if (r < 0) {
                chunk_free(it, c);
                return r;
        }
        eng_sst_table_ref(it->t);
        it->reads++;
        *ret = c;
        return 0;
}

static bool chunk_has(const struct chunk *c, uint32_t index)
{
        return c && index >= c->first && index < c->end;
}

void eng_sst_seq_free(struct eng_sst_seq *it)
{
        if (!it)
                return;
        chunk_drop(NULL, it->cur);
        chunk_drop(NULL, it->ahead);
        mem_free_aligned(it->spare);
        eng_sst_cursor_fini(&it->c);
        eng_sst_table_unref(it->t);
        free(it);
}

/* Ends a move that did not land on an entry: 0 (exhausted) or an error. */
static int stop(struct eng_sst_seq *it, int res)
{
        it->c.in_block = false;
        it->valid = false;
        it->c.seeking = false;
        return res;
}

/* Enters block `index` of cur, which is in, and reads the next chunk ahead
 * if none is. 0 or <0; a failed read is dropped, so a retry reads again. */
static int open_block(struct eng_sst_seq *it, uint32_t index)
{
        struct chunk *c = it->cur;
        struct eng_sst_handle h = eng_sst_reader_block(it->r, index);
        const uint8_t *content;
        size_t len;
        int r = c->res;

        if (r < 0) {
                chunk_free(it, c);
                it->cur = NULL;
                return r;
        }
        r = eng_sst_data_open(it->r, index, c->buf + (h.offset - c->off), h.size, &content, &len);
        if (r < 0 || (r = eng_block_iter_reset(&it->c.bi, content, len)) < 0)
                return r;
        it->c.block = index;
        it->c.in_block = true;
        if (!it->ahead && c->end < it->c.n_blocks)
                (void)chunk_start(it, c->end, &it->ahead);      /* else read when needed */
        return 0;
}

/* Moves into block `index`: 0, ENG_SST_PENDING (the move waits for cur)
 * or <0. */
static int enter(void *owner, uint32_t index)
{
        struct eng_sst_seq *it = owner;
        int r;

        it->c.in_block = false;
        if (!chunk_has(it->cur, index)) {
                chunk_drop(it, it->cur);
                it->cur = NULL;
                if (chunk_has(it->ahead, index))
                        it->cur = it->ahead;
                else
                        chunk_drop(it, it->ahead);
                it->ahead = NULL;
                if (!it->cur && (r = chunk_start(it, index, &it->cur)) < 0)
                        return r;
        }
        if (!it->cur->ready) {
                it->waiting = true;
                it->wait_block = index;
                return ENG_SST_PENDING;
        }
        return open_block(it, index);
}

/* Ends a move with the cursor's result: 1, ENG_SST_PENDING, else stop. */
static int finish(struct eng_sst_seq *it, int r)
{
        if (r == 1)
                it->valid = true;
        else if (r != ENG_SST_PENDING)
                return stop(it, r);
        return r;
}

static void on_read(struct eng_fs_op *op, int res)
{
        struct chunk *c = container_of(op, struct chunk, op);
        struct eng_sst_seq *it = c->it;
        int r;

        eng_sst_table_unref(c->t);      /* it, if any, holds its own */
        if (!it) {
                chunk_free(NULL, c);
                return;
        }
        c->ready = true;
        c->res = res < 0 ? res : (uint32_t)res == c->len ? 0 : -SCREE_ECORRUPT;
        if (!it->waiting || it->cur != c)
                return;         /* read ahead: kept for the move that gets there */
        it->waiting = false;
        r = finish(it, eng_sst_cursor_resume(&it->c, open_block(it, it->wait_block), enter, it));
        if (r != ENG_SST_PENDING)
                it->cb(it, r, it->arg);         /* may free it */
}

static void begin(struct eng_sst_seq *it, eng_sst_seq_cb cb, void *arg)
{
        SCREE_ASSERT(!it->waiting);
        it->cb = cb;
        it->arg = arg;
        it->valid = false;
}

int eng_sst_seq_seek_first(struct eng_sst_seq *it, eng_sst_seq_cb cb, void *arg)
{
        begin(it, cb, arg);
        it->c.seeking = false;
        return finish(it, eng_sst_cursor_move(&it->c, 0, enter, it));
}

int eng_sst_seq_seek(struct eng_sst_seq *it, const void *key, size_t key_len, uint64_t seq,
                     eng_sst_seq_cb cb, void *arg)
{
        uint32_t index;

        begin(it, cb, arg);
        if (eng_sst_cursor_target(&it->c, key, key_len, seq) < 0)
                return stop(it, -ENOMEM);
        if (eng_sst_reader_find_block(it->r, key, key_len, &index) < 0)
                return stop(it, 0);     /* above the table's largest key */
        return finish(it, eng_sst_cursor_move(&it->c, index, enter, it));
}

int eng_sst_seq_next(struct eng_sst_seq *it, eng_sst_seq_cb cb, void *arg)
{
        SCREE_ASSERT(it->valid);
        begin(it, cb, arg);
        return finish(it, eng_sst_cursor_next(&it->c, enter, it));
}

bool eng_sst_seq_is_valid(const struct eng_sst_seq *it)
{
        return it->valid;
}

void eng_sst_seq_entry(const struct eng_sst_seq *it, struct eng_entry *ret)
{
        SCREE_ASSERT(it->valid);
        *ret = it->c.entry;
}

uint64_t eng_sst_seq_reads(const struct eng_sst_seq *it)
{
        return it->reads;
}
