/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Timers: the heap on its own (order, ties, cancel from the middle, re-arm)
 * and timers fired by a real loop (order, cancel, zero delay).
 */
#include <stdlib.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/time.h"
#include "reactor/loop.h"
#include "reactor/timer.h"
#include "tests/reactor/helpers.h"

TestSuite(timer, .timeout = 20);

static void nop_fire(struct rx_loop *loop, struct rx_timer *t)
{
        (void)loop;
        (void)t;
}

Test(timer, heap_pops_in_deadline_order_with_ties_in_arm_order)
{
        enum { N = 2000 };
        struct rx_timer_heap h;
        struct rx_timer *t = calloc(N, sizeof(*t));
        struct rx_timer *prev = NULL, *cur;
        unsigned popped = 0;

        rx_timer_heap_init(&h);
        srand(7);
        for (unsigned i = 0; i < N; i++) {
                rx_timer_init(&t[i], nop_fire, "t");
                cr_assert(eq(int, rx_timer_heap_add(&h, &t[i], (uint64_t)(rand() % 100)), 0));
        }
        while ((cur = rx_timer_heap_pop_due(&h, UINT64_MAX)) != NULL) {
                cr_expect(not(rx_timer_is_armed(cur)));
                if (prev) {
                        cr_assert(le(u64, prev->deadline_ns, cur->deadline_ns));
                        if (prev->deadline_ns == cur->deadline_ns)
                                cr_assert(lt(ptr, (void *)prev, (void *)cur), "tie broken out of arm order");
                }
                prev = cur;
                popped++;
        }
        cr_expect(eq(u32, popped, N));
        rx_timer_heap_fini(&h);
        free(t);
}

Test(timer, remove_from_the_middle_keeps_the_rest_in_order)
{
        enum { N = 500 };
        struct rx_timer_heap h;
        struct rx_timer t[N], *cur;
        uint64_t last = 0;
        unsigned popped = 0;

        rx_timer_heap_init(&h);
        for (unsigned i = 0; i < N; i++) {
                rx_timer_init(&t[i], nop_fire, "t");
                rx_timer_heap_add(&h, &t[i], (uint64_t)((i * 7919) % N));
        }
        for (unsigned i = 0; i < N; i += 3)
                cr_assert(rx_timer_heap_remove(&h, &t[i]));
        cr_expect(not(rx_timer_heap_remove(&h, &t[0])), "second remove is a no-op");
        /* Re-arm moves a timer: it must come out once, at its new deadline. */
        rx_timer_heap_add(&h, &t[1], 100000);
        while ((cur = rx_timer_heap_pop_due(&h, UINT64_MAX)) != NULL) {
                cr_assert(ge(u64, cur->deadline_ns, last));
                cr_assert(ne(u64, (uint64_t)(cur - t) % 3, 0), "a removed timer came back");
                last = cur->deadline_ns;
                popped++;
        }
        cr_expect(eq(u32, popped, N - (N + 2) / 3));
        cr_expect(eq(u64, last, 100000));
        rx_timer_heap_fini(&h);
}

Test(timer, pop_due_leaves_future_timers)
{
        struct rx_timer_heap h;
        struct rx_timer a, b;

        rx_timer_heap_init(&h);
        rx_timer_init(&a, nop_fire, "a");
        rx_timer_init(&b, nop_fire, "b");
        rx_timer_heap_add(&h, &a, 10);
        rx_timer_heap_add(&h, &b, 20);
        cr_expect(eq(ptr, rx_timer_heap_pop_due(&h, 5), NULL));
        cr_expect(eq(ptr, rx_timer_heap_pop_due(&h, 15), &a));
        cr_expect(eq(ptr, rx_timer_heap_pop_due(&h, 15), NULL));
        cr_expect(rx_timer_is_armed(&b));
        rx_timer_heap_fini(&h);
        cr_expect(not(rx_timer_is_armed(&b)), "fini disarms");
}

struct fire_log {
        struct rx_timer t[5];
        int order[5];
        int n;
};

static struct fire_log fl;

static void log_fire(struct rx_loop *loop, struct rx_timer *t)
{
        fl.order[fl.n++] = (int)(t - fl.t);
        if (t == &fl.t[4])
                rx_loop_stop(loop);
}

Test(timer, loop_fires_timers_in_deadline_order_and_cancel_works)
{
        struct rx_loop *loop;
        int r = rx_loop_new(NULL, &loop);
        uint64_t now;

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        for (int i = 0; i < 5; i++)
                rx_timer_init(&fl.t[i], log_fire, "log");
        now = time_now_ns();
        rx_timer_arm_at(loop, &fl.t[0], now + 30 * NS_PER_MS);
        rx_timer_arm_at(loop, &fl.t[1], now + 10 * NS_PER_MS);
        rx_timer_arm_after(loop, &fl.t[2], 0);
        rx_timer_arm_at(loop, &fl.t[3], now + 20 * NS_PER_MS);
        rx_timer_arm_at(loop, &fl.t[4], now + 60 * NS_PER_MS);
        cr_assert(rx_timer_cancel(loop, &fl.t[3]));
        cr_expect(not(rx_timer_cancel(loop, &fl.t[3])));
        rx_loop_run(loop);
        cr_assert(eq(int, fl.n, 4));
        cr_expect(eq(int, fl.order[0], 2));
        cr_expect(eq(int, fl.order[1], 1));
        cr_expect(eq(int, fl.order[2], 0));
        cr_expect(eq(int, fl.order[3], 4));
        cr_expect(ge(u64, time_now_ns(), now + 60 * NS_PER_MS), "a timer fired early");
        cr_expect(eq(u64, rx_loop_stats(loop)->timers_fired, 4));
        rx_loop_free(loop);
}
