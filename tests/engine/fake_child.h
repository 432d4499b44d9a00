/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake merge child (engine/merge_iter.h) for tests: a sorted list of
 * model versions (tests/engine/model.h) whose moves finish at once or,
 * async, from a loop timer after a delay, and which can be told to fail
 * its next move. Freeing it cancels its timer, so a pending move never
 * calls back. Counts completions and frees. Header-only; for tests only.
 */
#ifndef SCREE_TESTS_ENGINE_FAKE_CHILD_H
#define SCREE_TESTS_ENGINE_FAKE_CHILD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/compiler.h"
#include "engine/merge_iter.h"
#include "reactor/loop.h"
#include "tests/engine/model.h"

static unsigned fake_frees, fake_completions;

struct fake {
        struct eng_merge_child c;
        const struct mver *v;
        size_t n, pos;
        struct rx_loop *loop;
        bool async;                     /* every move pends and ends from the timer */
        uint64_t delay_ns;
        int fail;                       /* <0: the next move fails with it */
        unsigned seeks, nexts;          /* moves asked of it */
        struct rx_timer timer;
        int res;                        /* of the move under way */
        struct eng_entry e;
        uint8_t buf[MODEL_MAX_VALUE];
};

static inline void fake_fire(struct rx_loop *l, struct rx_timer *t)
{
        struct fake *f = container_of(t, struct fake, timer);

        (void)l;
        fake_completions++;
        eng_merge_child_done(&f->c, f->res);    /* last: it may free f */
}

static inline int fake_end_move(struct fake *f)
{
        int r = f->pos < f->n ? 1 : 0;

        if (f->fail) {
                r = f->fail;
                f->fail = 0;
        } else if (r == 1) {
                mver_entry(&f->v[f->pos], f->buf, &f->e);
        }
        if (!f->async)
                return r;
        f->res = r;
        cr_assert(eq(int, rx_timer_arm_after(f->loop, &f->timer, f->delay_ns), 0));
        return ENG_SST_PENDING;
}

/* Before (key, seq) in the engine's order: a lower key, or the same key
 * with a newer seq. */
static inline bool fake_before(const struct mver *v, const void *key, size_t key_len, uint64_t seq)
{
        int c = model_key_cmp(v->key, key, key_len);

        return c < 0 || (c == 0 && v->seq > seq);
}

static inline int fake_seek(struct eng_merge_child *c, const void *key, size_t key_len, uint64_t seq)
{
        struct fake *f = container_of(c, struct fake, c);

        f->seeks++;
        for (f->pos = 0; f->pos < f->n && fake_before(&f->v[f->pos], key, key_len, seq);)
                f->pos++;
        return fake_end_move(f);
}

static inline int fake_seek_first(struct eng_merge_child *c)
{
        struct fake *f = container_of(c, struct fake, c);

        f->pos = 0;
        return fake_end_move(f);
}

static inline int fake_next(struct eng_merge_child *c)
{
        struct fake *f = container_of(c, struct fake, c);

        cr_assert(lt(sz, f->pos, f->n));
        f->nexts++;
        f->pos++;
        return fake_end_move(f);
}

/* The reverse moves: pos = n stands for "none before". */
static inline int fake_seek_lt(struct eng_merge_child *c, const void *key, size_t key_len)
{
        struct fake *f = container_of(c, struct fake, c);
        size_t i = 0;

        f->seeks++;
        while (i < f->n && model_key_cmp(f->v[i].key, key, key_len) < 0)
                i++;
        f->pos = i ? i - 1 : f->n;
        return fake_end_move(f);
}

static inline int fake_seek_last(struct eng_merge_child *c)
{
        struct fake *f = container_of(c, struct fake, c);

        f->pos = f->n ? f->n - 1 : 0;
        return fake_end_move(f);
}

static inline int fake_prev(struct eng_merge_child *c)
{
        struct fake *f = container_of(c, struct fake, c);

        cr_assert(lt(sz, f->pos, f->n));
        f->nexts++;
        f->pos = f->pos ? f->pos - 1 : f->n;
        return fake_end_move(f);
}

static inline void fake_entry(struct eng_merge_child *c, struct eng_entry *ret)
{
        *ret = container_of(c, struct fake, c)->e;
}

static inline void fake_free(struct eng_merge_child *c)
{
        struct fake *f = container_of(c, struct fake, c);

        rx_timer_cancel(f->loop, &f->timer);
        fake_frees++;
        free(f);
}

static const struct eng_merge_child_ops fake_ops = {
        .seek = fake_seek, .seek_first = fake_seek_first, .next = fake_next,
        .seek_lt = fake_seek_lt, .seek_last = fake_seek_last, .prev = fake_prev,
        .entry = fake_entry, .free = fake_free,
};

static inline struct fake *fake_add(struct rx_loop *loop, struct eng_merge_iter *m, const struct mver *v, size_t n, bool async,
                             uint64_t delay_ns)
{
        struct fake *f = calloc(1, sizeof(*f));

        cr_assert(not(eq(ptr, f, NULL)));
        *f = (struct fake){ .c = { .ops = &fake_ops }, .loop = loop, .v = v, .n = n, .async = async,
                            .delay_ns = delay_ns };
        rx_timer_init(&f->timer, fake_fire, "test:fake");
        cr_assert(eq(int, eng_merge_iter_add_take(m, &f->c), 0));
        return f;
}

#endif
