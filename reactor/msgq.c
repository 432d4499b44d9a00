/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Out-of-line parts of the SPSC ring and the MPSC inbox; the hot paths are
 * inline in msgq.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reactor/msgq.h"

int rx_spsc_init(struct rx_spsc *q, uint32_t capacity)
{
        memset(q, 0, sizeof(*q));
        if (capacity < 2 || (capacity & (capacity - 1)) != 0)
                return -EINVAL;
        /* Pad the slot array to whole cache lines so no neighbouring heap
         * object shares its first or last line. */
        q->ro.slots = aligned_alloc(CACHELINE_BYTES,
                                    ((size_t)capacity * sizeof(void *) + CACHELINE_BYTES - 1) &
                                            ~(size_t)(CACHELINE_BYTES - 1));
        if (!q->ro.slots)
                return -ENOMEM;
        q->ro.mask = capacity - 1;
        atomic_init(&q->pub.tail, 0);
        atomic_init(&q->cons.head, 0);
        return 0;
}

void rx_spsc_fini(struct rx_spsc *q)
{
        free(q->ro.slots);
        q->ro.slots = NULL;
}

struct rx_mpsc_node *rx_mpsc_take_all(struct rx_mpsc *q)
{
        struct rx_mpsc_node *n = atomic_exchange_explicit(&q->head, NULL, memory_order_acquire);
        struct rx_mpsc_node *fifo = NULL;

        /* Pushes build a LIFO stack; reverse it into arrival order. */
        while (n) {
                struct rx_mpsc_node *next = n->next;

                n->next = fifo;
                fifo = n;
                n = next;
        }
        return fifo;
}
