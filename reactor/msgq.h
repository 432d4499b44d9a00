/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lock-free queues between threads.
 *
 * rx_spsc: a bounded single-producer/single-consumer ring of pointers, one for
 * every ordered pair of shards. The published tail, the producer's private
 * state and the consumer's head each have their own cache line. Each side
 * keeps a cached copy of the other's index and reads the shared one only when
 * the ring looks full (producer) or empty (consumer); pushes write only the
 * producer's private line, so a consumer polling an empty ring sees its line
 * change once per publication, not once per push. Publication is batched: rx_spsc_push() stages items and
 * rx_spsc_publish() makes all staged items visible with one release store.
 * Indices are free-running u32 (wrap is harmless with a power-of-two size).
 *
 * rx_mpsc: an unbounded multi-producer/single-consumer inbox of intrusive
 * nodes for threads that are not shards. Producers push with a CAS on one
 * head word (lock-free, never full); the consumer takes the whole list with
 * one exchange and reverses it, so every producer's items come out in the
 * order it pushed them.
 *
 * Memory order: push/publish use release on the published index, pop uses
 * acquire on it, so the pointed-to message is fully written before the
 * consumer can see the pointer. Ownership of a message moves with it.
 */
#ifndef SCREE_REACTOR_MSGQ_H
#define SCREE_REACTOR_MSGQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"

struct rx_spsc {
        /* Written by the producer once per batch, polled by the consumer. */
        struct {
                _Atomic uint32_t tail;  /* published: consumer may read [head, tail) */
        } pub cacheline_aligned;
        /* Producer-private: written on every push, never read by the consumer,
         * so pushes don't invalidate the line the consumer polls. */
        struct {
                uint32_t staged;        /* tail + number of staged, unpublished items */
                uint32_t head_cache;    /* last seen consumer head */
        } prod cacheline_aligned;
        /* Consumer-owned: head is read by the producer only when the ring
         * looks full. */
        struct {
                _Atomic uint32_t head;
                uint32_t tail_cache;    /* last seen producer tail */
        } cons cacheline_aligned;
        /* Read-only after init; on its own line so neither side's writes
         * invalidate it. */
        struct {
                uint32_t mask;
                void **slots;
        } ro cacheline_aligned;
};

/*
 * Initializes q with room for capacity items (a power of two, >= 2).
 * Returns 0, -EINVAL for a bad capacity, -ENOMEM. Any thread, before use.
 */
int rx_spsc_init(struct rx_spsc *q, uint32_t capacity);

/* Frees the slot array. Accepts a zeroed or half-initialized q. */
void rx_spsc_fini(struct rx_spsc *q);

/* Slots in the ring. Any thread. */
static inline uint32_t rx_spsc_capacity(const struct rx_spsc *q)
{
        return q->ro.mask + 1;
}

/*
 * Stages item for publication. Returns 0, or -SCREE_EFULL when the ring has no
 * free slot (item stays the caller's; retry after the consumer drains).
 * The item is invisible to the consumer until rx_spsc_publish().
 * Single-producer.
 */
static inline int rx_spsc_push(struct rx_spsc *q, void *item)
{
        uint32_t pos = q->prod.staged;

        if (unlikely(pos - q->prod.head_cache > q->ro.mask)) {
                q->prod.head_cache = atomic_load_explicit(&q->cons.head, memory_order_acquire);
                if (pos - q->prod.head_cache > q->ro.mask)
                        return -SCREE_EFULL;
        }
        q->ro.slots[pos & q->ro.mask] = item;
        q->prod.staged = pos + 1;
        return 0;
}

/*
 * Makes every staged item visible to the consumer (one release store).
 * Returns true if anything was published. Single-producer.
 */
static inline bool rx_spsc_publish(struct rx_spsc *q)
{
        if (q->prod.staged == atomic_load_explicit(&q->pub.tail, memory_order_relaxed))
                return false;
        atomic_store_explicit(&q->pub.tail, q->prod.staged, memory_order_release);
        return true;
}

/*
 * Pops up to max published items into out, oldest first, and frees their
 * slots with one release store. Returns the number popped (0 if empty).
 * Single-consumer.
 */
static inline unsigned rx_spsc_pop_n(struct rx_spsc *q, void **out, unsigned max)
{
        uint32_t head = atomic_load_explicit(&q->cons.head, memory_order_relaxed);
        uint32_t avail = q->cons.tail_cache - head;
        unsigned n;

        if (avail == 0) {
                q->cons.tail_cache = atomic_load_explicit(&q->pub.tail, memory_order_acquire);
                avail = q->cons.tail_cache - head;
                if (avail == 0)
                        return 0;
        }
        n = avail < max ? avail : max;
        for (unsigned i = 0; i < n; i++)
                out[i] = q->ro.slots[(head + i) & q->ro.mask];
        atomic_store_explicit(&q->cons.head, head + n, memory_order_release);
        return n;
}

/* True if the consumer would find nothing published. Single-consumer. */
static inline bool rx_spsc_is_empty(struct rx_spsc *q)
{
        uint32_t head = atomic_load_explicit(&q->cons.head, memory_order_relaxed);

        if (q->cons.tail_cache != head)
                return false;
        q->cons.tail_cache = atomic_load_explicit(&q->pub.tail, memory_order_acquire);
        return q->cons.tail_cache == head;
}

struct rx_mpsc_node {
        struct rx_mpsc_node *next;
};

struct rx_mpsc {
        _Atomic(struct rx_mpsc_node *) head cacheline_aligned;
};

/* Initializes an empty inbox. Any thread, before use. */
static inline void rx_mpsc_init(struct rx_mpsc *q)
{
        atomic_init(&q->head, NULL);
}

/*
 * Pushes node (owned by the caller until the consumer takes it). Lock-free,
 * never fails. Multi-producer, any thread.
 */
static inline void rx_mpsc_push(struct rx_mpsc *q, struct rx_mpsc_node *node)
{
        struct rx_mpsc_node *old = atomic_load_explicit(&q->head, memory_order_relaxed);

        do
                node->next = old;
        while (!atomic_compare_exchange_weak_explicit(&q->head, &old, node, memory_order_release,
                                                      memory_order_relaxed));
}

/*
 * Takes every node pushed so far, oldest first (per producer), as a NULL
 * terminated list. Returns NULL if empty. Single-consumer.
 */
struct rx_mpsc_node *rx_mpsc_take_all(struct rx_mpsc *q);

/* True if nothing is queued. Single-consumer (a racing push may follow). */
static inline bool rx_mpsc_is_empty(struct rx_mpsc *q)
{
        return atomic_load_explicit(&q->head, memory_order_acquire) == NULL;
}

#endif
