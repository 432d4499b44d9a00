/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Foreign threads submitting to shards (rx_smp_alien_submit): 4 threads x 1
 * million requests, each run and completed exactly once; blocking waits
 * (futex path); completions deferred by the shard; and refusal after stop.
 */
#include <stdlib.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/time.h"
#include "reactor/smp.h"
#include "tests/reactor/helpers.h"
#include "tests/reactor/scenarios.h"

TestSuite(alien, .timeout = 120);

Test(alien, four_threads_times_a_million_each_complete_exactly_once)
{
        struct alien_result r;

        scenario_alien_flood(2, 4, test_scaled(1000000), &r);
        SKIP_IF_NO_URING(r.rc);
        cr_assert(eq(int, r.rc, 0));
        cr_expect(eq(u64, r.wrong_results, 0), "a waiter got another request's result");
        cr_expect(eq(u64, r.bad_runs, 0), "%llu of %llu requests did not run exactly once",
                  (unsigned long long)r.bad_runs, (unsigned long long)r.total);
        cr_expect(eq(u64, r.bad_completions, 0), "%llu requests did not complete exactly once",
                  (unsigned long long)r.bad_completions);
}

/* The shard completes from a timer 20 ms later, so the waiter takes the futex path. */
struct later {
        struct rx_timer t;
        struct rx_alien_req *req;
};

static void complete_later(struct rx_loop *loop, struct rx_timer *t)
{
        struct later *l = (struct later *)t;

        (void)loop;
        rx_alien_complete(l->req, 4242);
        free(l);
}

static void defer_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct later *l = malloc(sizeof(*l));

        rx_timer_init(&l->t, complete_later, "complete_later");
        l->req = req;
        rx_timer_arm_after(loop, &l->t, 20 * NS_PER_MS);
}

Test(alien, a_waiter_sleeps_until_a_deferred_completion)
{
        struct rx_smp_opts o = { .n_shards = 2, .loop = { .idle_poll_ns = 5 * NS_PER_US } };
        struct rx_alien_req req = { .run = defer_run };
        struct rx_smp *smp;
        uint64_t t0;
        int r = rx_smp_new(&o, &smp);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        for (int i = 0; i < 5; i++) {
                t0 = time_now_ns();
                cr_assert(eq(int, rx_smp_alien_submit(smp, (unsigned)i % 2, &req), 0));
                cr_expect(eq(i64, rx_alien_wait(&req), 4242));
                cr_expect(rx_alien_is_done(&req));
                cr_expect(ge(u64, time_now_ns() - t0, 20 * NS_PER_MS), "completed before the timer");
        }
        cr_expect(eq(int, rx_smp_alien_submit(smp, 2, &req), -EINVAL));
        rx_smp_stop(smp);
        cr_expect(eq(int, rx_smp_alien_submit(smp, 0, &req), -SCREE_ESHUTDOWN));
        rx_smp_free(smp);
}
