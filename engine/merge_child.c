/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The merge's children (merge_iter.h): over a memtable (its iterator
 * never waits), over an SSTable through the block cache (sst_iter.h) and
 * streaming one past it for compactions (sst_seq.h). Each only forwards
 * the moves to its iterator; an SSTable's iterator calls back from the
 * loop and the child hands that on with eng_merge_child_done. The
 * streaming child walks forward only: its reverse moves are -ENOTSUP
 * (a compaction never walks down).
 */
#include <errno.h>
#include <stdlib.h>

#include "base/compiler.h"
#include "engine/merge_int.h"
#include "engine/merge_iter.h"
#include "engine/sst_iter.h"
#include "engine/sst_seq.h"

struct mt_child {
        struct eng_merge_child c;
        struct eng_memtable *mt;        /* referenced */
        struct eng_memtable_iter it;
};

static struct mt_child *mt_of(struct eng_merge_child *c)
{
        return container_of(c, struct mt_child, c);
}

static int mt_at(const struct mt_child *x)
{
        return eng_memtable_iter_valid(&x->it) ? 1 : 0;
}

static int mt_seek(struct eng_merge_child *c, const void *key, size_t key_len, uint64_t seq)
{
        struct mt_child *x = mt_of(c);

        eng_memtable_iter_seek_version(&x->it, key, (uint32_t)key_len, seq);
        return mt_at(x);
}

static int mt_seek_first(struct eng_merge_child *c)
{
        struct mt_child *x = mt_of(c);

        eng_memtable_iter_seek_first(&x->it);
        return mt_at(x);
}

static int mt_next(struct eng_merge_child *c)
{
        struct mt_child *x = mt_of(c);

        eng_memtable_iter_next(&x->it);
        return mt_at(x);
}

static int mt_seek_lt(struct eng_merge_child *c, const void *key, size_t key_len)
{
        struct mt_child *x = mt_of(c);

        eng_memtable_iter_seek_lt(&x->it, key, (uint32_t)key_len);
        return mt_at(x);
}

static int mt_seek_last(struct eng_merge_child *c)
{
        struct mt_child *x = mt_of(c);

        eng_memtable_iter_seek_last(&x->it);
        return mt_at(x);
}

static int mt_prev(struct eng_merge_child *c)
{
        struct mt_child *x = mt_of(c);

        eng_memtable_iter_prev(&x->it);
        return mt_at(x);
}

static void mt_entry(struct eng_merge_child *c, struct eng_entry *ret)
{
        eng_memtable_iter_entry(&mt_of(c)->it, ret);
}

static void mt_free(struct eng_merge_child *c)
{
        struct mt_child *x = mt_of(c);

        eng_memtable_unref(x->mt);
        free(x);
}

static const struct eng_merge_child_ops mt_ops = {
        .seek = mt_seek, .seek_first = mt_seek_first, .next = mt_next,
        .seek_lt = mt_seek_lt, .seek_last = mt_seek_last, .prev = mt_prev,
        .entry = mt_entry, .free = mt_free,
};

int eng_merge_child_memtable_new(struct eng_memtable *mt, struct eng_merge_child **ret)
{
        struct mt_child *x = calloc(1, sizeof(*x));

        if (!x)
                return -ENOMEM;
        x->c.ops = &mt_ops;
        eng_memtable_ref(mt);
        x->mt = mt;
        eng_memtable_iter_init(&x->it, mt);
        *ret = &x->c;
        return 0;
}

struct sst_child {
        struct eng_merge_child c;
        struct eng_sst_iter *it;
};

static struct sst_child *sst_of(struct eng_merge_child *c)
{
        return container_of(c, struct sst_child, c);
}

static void sst_moved(struct eng_sst_iter *it, int res, void *arg)
{
        (void)it;
        eng_merge_child_done(arg, res);
}

static int sst_seek(struct eng_merge_child *c, const void *key, size_t key_len, uint64_t seq)
{
        return eng_sst_iter_seek(sst_of(c)->it, key, key_len, seq, sst_moved, c);
}

static int sst_seek_first(struct eng_merge_child *c)
{
        return eng_sst_iter_seek_first(sst_of(c)->it, sst_moved, c);
}

static int sst_next(struct eng_merge_child *c)
{
        return eng_sst_iter_next(sst_of(c)->it, sst_moved, c);
}

static int sst_seek_lt(struct eng_merge_child *c, const void *key, size_t key_len)
{
        return eng_sst_iter_seek_lt(sst_of(c)->it, key, key_len, sst_moved, c);
}

static int sst_seek_last(struct eng_merge_child *c)
{
        return eng_sst_iter_seek_last(sst_of(c)->it, sst_moved, c);
}

static int sst_prev(struct eng_merge_child *c)
{
        return eng_sst_iter_prev(sst_of(c)->it, sst_moved, c);
}

static void sst_entry(struct eng_merge_child *c, struct eng_entry *ret)
{
        eng_sst_iter_entry(sst_of(c)->it, ret);
}

/* eng_sst_iter_free may run while a read is pending and from the
 * iterator's own callback, as the child contract requires. */
static void sst_free(struct eng_merge_child *c)
{
        struct sst_child *x = sst_of(c);

        eng_sst_iter_free(x->it);
        free(x);
}

static const struct eng_merge_child_ops sst_ops = {
        .seek = sst_seek, .seek_first = sst_seek_first, .next = sst_next,
        .seek_lt = sst_seek_lt, .seek_last = sst_seek_last, .prev = sst_prev,
        .entry = sst_entry, .free = sst_free,
};

int eng_merge_child_sst_new(struct eng_sst_table *t, struct eng_merge_child **ret)
{
        const struct eng_sst_props *props = eng_sst_reader_props(eng_sst_table_reader(t));
        struct sst_child *x = calloc(1, sizeof(*x));
        int r;

        if (!x)
                return -ENOMEM;
        if ((r = eng_sst_iter_new(t, &x->it)) < 0) {
                free(x);
                return r;
        }
        x->c.ops = &sst_ops;
        x->c.lo = props->smallest;
        x->c.lo_len = props->smallest_len;
        x->c.hi = props->largest;
        x->c.hi_len = props->largest_len;
        *ret = &x->c;
        return 0;
}

struct seq_child {
        struct eng_merge_child c;
        struct eng_sst_seq *it;
};

static struct seq_child *seq_of(struct eng_merge_child *c)
{
        return container_of(c, struct seq_child, c);
}

static void seq_moved(struct eng_sst_seq *it, int res, void *arg)
{
        (void)it;
        eng_merge_child_done(arg, res);
}

static int seq_seek(struct eng_merge_child *c, const void *key, size_t key_len, uint64_t seq)
{
        return eng_sst_seq_seek(seq_of(c)->it, key, key_len, seq, seq_moved, c);
}

static int seq_seek_first(struct eng_merge_child *c)
{
        return eng_sst_seq_seek_first(seq_of(c)->it, seq_moved, c);
}

static int seq_next(struct eng_merge_child *c)
{
        return eng_sst_seq_next(seq_of(c)->it, seq_moved, c);
}

/* Streaming reads go forward only. */
static int seq_seek_lt(struct eng_merge_child *c, const void *key, size_t key_len)
{
        (void)c;
        (void)key;
        (void)key_len;
        return -ENOTSUP;
}

static int seq_walk_down(struct eng_merge_child *c)
{
        (void)c;
        return -ENOTSUP;
}

static void seq_entry(struct eng_merge_child *c, struct eng_entry *ret)
{
        eng_sst_seq_entry(seq_of(c)->it, ret);
}

/* eng_sst_seq_free, like eng_sst_iter_free, may run at any time. */
static void seq_free(struct eng_merge_child *c)
{
        struct seq_child *x = seq_of(c);

        eng_sst_seq_free(x->it);
        free(x);
}

static const struct eng_merge_child_ops seq_ops = {
        .seek = seq_seek, .seek_first = seq_seek_first, .next = seq_next,
        .seek_lt = seq_seek_lt, .seek_last = seq_walk_down, .prev = seq_walk_down,
        .entry = seq_entry, .free = seq_free,
};

int eng_merge_child_sst_seq_new(struct eng_sst_table *t, uint32_t chunk_bytes,
                                struct eng_merge_child **ret)
{
        const struct eng_sst_props *props = eng_sst_reader_props(eng_sst_table_reader(t));
        struct seq_child *x = calloc(1, sizeof(*x));
        int r;

        if (!x)
                return -ENOMEM;
        if ((r = eng_sst_seq_new(t, chunk_bytes, &x->it)) < 0) {
                free(x);
                return r;
        }
        x->c.ops = &seq_ops;
        x->c.lo = props->smallest;
        x->c.lo_len = props->smallest_len;
        *ret = &x->c;
        return 0;
}


int eng_merge_child_sst_for(struct eng_sst_table *t, const struct eng_merge_opts *o,
                            eng_sst_damaged_fn fn, void *arg, struct eng_merge_child **ret)
{
        struct eng_merge_child *c;
        int r;

        if (o->stream_bytes) {
                if ((r = eng_merge_child_sst_seq_new(t, o->stream_bytes, &c)) == 0)
                        eng_sst_seq_on_damage(seq_of(c)->it, o->skip_damaged, fn, arg);
        } else if ((r = eng_merge_child_sst_new(t, &c)) == 0) {
                eng_sst_iter_set_span(sst_of(c)->it, o->span);
                eng_sst_iter_on_damage(sst_of(c)->it, o->skip_damaged, fn, arg);
        }
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}
