/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Timers: a binary min-heap of caller-owned rx_timer objects ordered by
 * (deadline, arm order), so timers with the same deadline fire in the order
 * they were armed. Each timer remembers its heap slot, which makes cancel
 * O(log n) without a search. Pure data structure: the loop (loop.c) owns one
 * heap per shard and fires what is due each iteration. Shard-local.
 */
#ifndef SCREE_REACTOR_TIMER_H
#define SCREE_REACTOR_TIMER_H

#include <stdbool.h>
#include <stdint.h>

struct rx_loop;
struct rx_timer;

typedef void (*rx_timer_fn)(struct rx_loop *loop, struct rx_timer *t);

#define RX_TIMER_IDLE UINT32_MAX

/* Caller-provided; stays valid while armed. Initialize with rx_timer_init. */
struct rx_timer {
        uint64_t deadline_ns;   /* CLOCK_MONOTONIC ns (time_now_ns) */
        uint64_t seq;           /* arm order, breaks deadline ties */
        uint32_t heap_idx;      /* RX_TIMER_IDLE when not armed */
        rx_timer_fn fn;
        const char *name;       /* for stall reports; static string */
};

struct rx_timer_heap {
        struct rx_timer **v;
        uint32_t n, cap;
        uint64_t next_seq;
};

/* Prepares t to be armed; fn runs on the loop's shard when it fires. */
static inline void rx_timer_init(struct rx_timer *t, rx_timer_fn fn, const char *name)
{
        t->deadline_ns = 0;
        t->seq = 0;
        t->heap_idx = RX_TIMER_IDLE;
        t->fn = fn;
        t->name = name;
}

static inline bool rx_timer_is_armed(const struct rx_timer *t)
{
        return t->heap_idx != RX_TIMER_IDLE;
}

/* The heap functions below are pure data-structure code, used by the
 * loop on its own shard (Shard-local). fini disarms what is left. */
void rx_timer_heap_init(struct rx_timer_heap *h);
void rx_timer_heap_fini(struct rx_timer_heap *h);

/*
 * Inserts t (borrowed until it fires or is removed) with deadline_ns; if t is
 * already armed it is moved. Returns 0 or -ENOMEM.
 */
int rx_timer_heap_add(struct rx_timer_heap *h, struct rx_timer *t, uint64_t deadline_ns);

/* Removes t if armed. Returns true if it was armed. */
bool rx_timer_heap_remove(struct rx_timer_heap *h, struct rx_timer *t);

/* The earliest timer, or NULL if none. Borrowed. */
static inline struct rx_timer *rx_timer_heap_top(const struct rx_timer_heap *h)
{
        return h->n ? h->v[0] : NULL;
}

/* Removes and returns the earliest timer if its deadline <= now_ns, else NULL. */
struct rx_timer *rx_timer_heap_pop_due(struct rx_timer_heap *h, uint64_t now_ns);

#endif
