/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SPSC ring and the MPSC inbox on their own (reactor/msgq.h): capacity
 * and full, batched publication, FIFO across wrap-around, and two-thread
 * and many-producer transfers with no loss, duplicate or reordering.
 */
#include <stdint.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "reactor/msgq.h"
#include "tests/reactor/helpers.h"
#include "tests/reactor/scenarios.h"

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

Test(msgq, two_threads_transfer_in_order_without_loss)
{
        cr_expect(eq(u64, scenario_spsc_transfer(test_scaled(4000000), 256), 0),
                  "items lost, duplicated or out of order");
}

Test(msgq, mpsc_keeps_each_producers_order_and_loses_nothing)
{
        struct rx_mpsc q;

        rx_mpsc_init(&q);
        cr_expect(rx_mpsc_is_empty(&q));
        cr_expect(eq(ptr, rx_mpsc_take_all(&q), NULL));
        cr_expect(eq(u64, scenario_mpsc_transfer(4, (uint32_t)test_scaled(200000)), 0),
                  "nodes missing or out of per-producer order");
}
