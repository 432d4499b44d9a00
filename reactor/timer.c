/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binary min-heap of timers keyed by (deadline_ns, seq). Every move updates the
 * moved timer's heap_idx so cancel needs no search. Shard-local.
 */
#include <errno.h>
#include <stdlib.h>

#include "reactor/timer.h"

static bool before(const struct rx_timer *a, const struct rx_timer *b)
{
        return a->deadline_ns < b->deadline_ns || (a->deadline_ns == b->deadline_ns && a->seq < b->seq);
}

static void place(struct rx_timer_heap *h, uint32_t i, struct rx_timer *t)
{
        h->v[i] = t;
        t->heap_idx = i;
}

static void sift_up(struct rx_timer_heap *h, uint32_t i)
{
        struct rx_timer *t = h->v[i];

        while (i > 0) {
                uint32_t parent = (i - 1) / 2;

                if (!before(t, h->v[parent]))
                        break;
                place(h, i, h->v[parent]);
                i = parent;
        }
        place(h, i, t);
}

static void sift_down(struct rx_timer_heap *h, uint32_t i)
{
        struct rx_timer *t = h->v[i];

        for (;;) {
                uint32_t c = 2 * i + 1;

                if (c >= h->n)
                        break;
                if (c + 1 < h->n && before(h->v[c + 1], h->v[c]))
                        c++;
                if (!before(h->v[c], t))
                        break;
                place(h, i, h->v[c]);
                i = c;
        }
        place(h, i, t);
}

void rx_timer_heap_init(struct rx_timer_heap *h)
{
        h->v = NULL;
        h->n = h->cap = 0;
        h->next_seq = 0;
}

void rx_timer_heap_fini(struct rx_timer_heap *h)
{
        for (uint32_t i = 0; i < h->n; i++)
                h->v[i]->heap_idx = RX_TIMER_IDLE;
        free(h->v);
        rx_timer_heap_init(h);
}

int rx_timer_heap_add(struct rx_timer_heap *h, struct rx_timer *t, uint64_t deadline_ns)
{
        rx_timer_heap_remove(h, t);
        if (h->n == h->cap) {
                uint32_t cap = h->cap ? h->cap * 2 : 16;
                struct rx_timer **v = realloc(h->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                h->v = v;
                h->cap = cap;
        }
        t->deadline_ns = deadline_ns;
        t->seq = h->next_seq++;
        place(h, h->n++, t);
        sift_up(h, t->heap_idx);
        return 0;
}

bool rx_timer_heap_remove(struct rx_timer_heap *h, struct rx_timer *t)
{
        uint32_t i = t->heap_idx;
        struct rx_timer *last;

        if (i == RX_TIMER_IDLE || i >= h->n || h->v[i] != t)
                return false;
        t->heap_idx = RX_TIMER_IDLE;
        last = h->v[--h->n];
        if (i == h->n)
                return true;
        place(h, i, last);
        /* The moved timer may belong above or below its new slot. */
        if (i > 0 && before(last, h->v[(i - 1) / 2]))
                sift_up(h, i);
        else
                sift_down(h, i);
        return true;
}

struct rx_timer *rx_timer_heap_pop_due(struct rx_timer_heap *h, uint64_t now_ns)
{
        struct rx_timer *t = rx_timer_heap_top(h);

        if (!t || t->deadline_ns > now_ns)
                return NULL;
        rx_timer_heap_remove(h, t);
        return t;
}
