/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SPSC ring and the MPSC inbox on their own (reactor/msgq.h): capacity
 * and full, batched publication, FIFO across wrap-around, and two-thread
 * and many-producer transfers with no loss, duplicate or reordering.
 */
#include <pthread.h>
#include <stdint.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "reactor/msgq.h"
#include "tests/reactor/helpers.h"

TestSuite(msgq, .timeout = 60);

Test(msgq, init_rejects_capacity_that_is_not_a_power_of_two)
{
        struct rx_spsc q;

        cr_expect(eq(int, rx_spsc_init(&q, 0), -EINVAL));
        cr_expect(eq(int, rx_spsc_init(&q, 1), -EINVAL));
        cr_expect(eq(int, rx_spsc_init(&q, 12), -EINVAL));
        cr_assert(eq(int, rx_spsc_init(&q, 16), 0));
        cr_expect(eq(u32, rx_spsc_capacity(&q), 16));
        rx_spsc_fini(&q);
}

Test(msgq, full_ring_returns_efull_and_keeps_every_item)
{
        struct rx_spsc q;
        void *out[8];

        cr_assert(eq(int, rx_spsc_init(&q, 4), 0));
        for (uintptr_t i = 1; i <= 4; i++)
                cr_assert(eq(int, rx_spsc_push(&q, (void *)i), 0));
        cr_expect(eq(int, rx_spsc_push(&q, (void *)5), -SCREE_EFULL));
        rx_spsc_publish(&q);
        cr_expect(eq(int, rx_spsc_push(&q, (void *)5), -SCREE_EFULL));
        cr_assert(eq(u32, rx_spsc_pop_n(&q, out, 2), 2));
        cr_expect(eq(ptr, out[0], (void *)1));
        cr_expect(eq(ptr, out[1], (void *)2));
        /* Room again after the consumer drained: the retry succeeds. */
        cr_expect(eq(int, rx_spsc_push(&q, (void *)5), 0));
        rx_spsc_publish(&q);
        /* The consumer may return what its cached tail shows first. */
        unsigned got = rx_spsc_pop_n(&q, out, 8);
        got += rx_spsc_pop_n(&q, out + got, 8 - got);
        cr_assert(eq(u32, got, 3));
        cr_expect(eq(ptr, out[0], (void *)3));
        cr_expect(eq(ptr, out[2], (void *)5));
        rx_spsc_fini(&q);
}

Test(msgq, staged_items_are_invisible_until_published)
{
        struct rx_spsc q;
        void *out[4];

        cr_assert(eq(int, rx_spsc_init(&q, 8), 0));
        cr_assert(eq(int, rx_spsc_push(&q, (void *)1), 0));
        cr_expect(rx_spsc_is_empty(&q));
        cr_expect(eq(u32, rx_spsc_pop_n(&q, out, 4), 0));
        cr_expect(rx_spsc_publish(&q));
        cr_expect(not(rx_spsc_publish(&q)), "nothing new to publish");
        cr_expect(not(rx_spsc_is_empty(&q)));
        cr_expect(eq(u32, rx_spsc_pop_n(&q, out, 4), 1));
        rx_spsc_fini(&q);
}

Test(msgq, fifo_holds_across_many_wraparounds)
{
        struct rx_spsc q;
        uintptr_t next_in = 0, next_out = 0;
        void *out[3];

        cr_assert(eq(int, rx_spsc_init(&q, 8), 0));
        for (int round = 0; round < 10000; round++) {
                for (int i = 0; i < 5; i++)
                        if (rx_spsc_push(&q, (void *)next_in) == 0)
                                next_in++;
                rx_spsc_publish(&q);
                unsigned n = rx_spsc_pop_n(&q, out, 3);
                for (unsigned i = 0; i < n; i++)
                        cr_assert(eq(ptr, out[i], (void *)next_out++));
        }
        cr_expect(gt(u64, next_out, 20000));
        rx_spsc_fini(&q);
}

struct xfer {
        struct rx_spsc q;
        uint64_t n;
};

static void *spsc_producer(void *arg)
{
        struct xfer *x = arg;

        for (uint64_t i = 1; i <= x->n;) {
                if (rx_spsc_push(&x->q, (void *)(uintptr_t)i) == 0) {
                        i++;
                        if ((i & 15) == 0)
                                rx_spsc_publish(&x->q);
                } else {
                        rx_spsc_publish(&x->q);
                        cpu_relax();
                }
        }
        rx_spsc_publish(&x->q);
        return NULL;
}

Test(msgq, two_threads_transfer_in_order_without_loss)
{
        struct xfer x = { .n = test_scaled(4000000) };
        pthread_t prod;
        uint64_t expect = 1;
        void *out[64];

        cr_assert(eq(int, rx_spsc_init(&x.q, 256), 0));
        pthread_create(&prod, NULL, spsc_producer, &x);
        while (expect <= x.n) {
                unsigned n = rx_spsc_pop_n(&x.q, out, 64);
                for (unsigned i = 0; i < n; i++)
                        cr_assert(eq(u64, (uint64_t)(uintptr_t)out[i], expect++));
                if (n == 0)
                        cpu_relax();
        }
        pthread_join(prod, NULL);
        cr_expect(rx_spsc_is_empty(&x.q));
        rx_spsc_fini(&x.q);
}

struct mnode {
        struct rx_mpsc_node node;
        uint32_t producer, seq;
};

struct mpsc_producer {
        struct rx_mpsc *q;
        struct mnode *nodes;
        uint32_t n;
};

static void *mpsc_produce(void *arg)
{
        struct mpsc_producer *p = arg;

        for (uint32_t i = 0; i < p->n; i++)
                rx_mpsc_push(p->q, &p->nodes[i].node);
        return NULL;
}

Test(msgq, mpsc_keeps_each_producers_order_and_loses_nothing)
{
        enum { P = 4 };
        uint32_t per = (uint32_t)test_scaled(200000);
        struct rx_mpsc q;
        struct mpsc_producer prod[P];
        pthread_t th[P];
        uint32_t next[P] = { 0 };
        uint64_t total = 0;

        rx_mpsc_init(&q);
        cr_expect(rx_mpsc_is_empty(&q));
        cr_expect(eq(ptr, rx_mpsc_take_all(&q), NULL));
        for (uint32_t p = 0; p < P; p++) {
                prod[p] = (struct mpsc_producer){ .q = &q, .n = per,
                                                  .nodes = calloc(per, sizeof(struct mnode)) };
                cr_assert(not(eq(ptr, prod[p].nodes, NULL)));
                for (uint32_t i = 0; i < per; i++)
                        prod[p].nodes[i] = (struct mnode){ .producer = p, .seq = i };
        }
        for (uint32_t p = 0; p < P; p++)
                pthread_create(&th[p], NULL, mpsc_produce, &prod[p]);
        while (total < (uint64_t)P * per) {
                struct rx_mpsc_node *n = rx_mpsc_take_all(&q);

                if (!n)
                        cpu_relax();
                for (; n; n = n->next) {
                        struct mnode *m = (struct mnode *)n;

                        cr_assert(eq(u32, m->seq, next[m->producer]), "producer %u out of order",
                                  m->producer);
                        next[m->producer]++;
                        total++;
                }
        }
        for (uint32_t p = 0; p < P; p++) {
                pthread_join(th[p], NULL);
                cr_expect(eq(u32, next[p], per));
                free(prod[p].nodes);
        }
        cr_expect(rx_mpsc_is_empty(&q));
}
