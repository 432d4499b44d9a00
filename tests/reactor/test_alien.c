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

static void run_now(struct rx_loop *loop, struct rx_alien_req *req)
{
        (void)loop;
        rx_alien_complete(req, 7);
}

/* A thread whose answers come long after its spin spins less, down to the
 * least; once they come soon again it spins as long as before. */
Test(alien, a_waiter_spins_less_while_answers_come_late_and_more_again_once_they_come_soon)
{
        struct rx_smp_opts o = { .n_shards = 1, .loop = { .idle_poll_ns = 50 * NS_PER_US } };
        struct rx_alien_req late = { .run = defer_run }, now;
        struct rx_smp *smp;
        int r = rx_smp_new(&o, &smp);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        /* 9 late answers in a row take it from the most to the least; a
         * loaded machine that stalls a spin past 20 ms resets the streak,
         * so up to 40. */
        for (int i = 0; i < 40 && rx_alien_spin_budget() > RX_ALIEN_SPIN_MIN; i++) {
                cr_assert(eq(int, rx_smp_alien_submit(smp, 0, &late), 0));
                cr_expect(eq(i64, rx_alien_wait(&late), 4242));
        }
        cr_expect(eq(u32, rx_alien_spin_budget(), RX_ALIEN_SPIN_MIN),
                  "answers 20 ms late left a spin of %u", rx_alien_spin_budget());
        for (int i = 0; i < 1000 && rx_alien_spin_budget() < RX_ALIEN_SPIN_MAX; i++) {
                now = (struct rx_alien_req){ .run = run_now };
                cr_assert(eq(int, rx_smp_alien_submit(smp, 0, &now), 0));
                cr_expect(eq(i64, rx_alien_wait(&now), 7));
        }
        cr_expect(eq(u32, rx_alien_spin_budget(), RX_ALIEN_SPIN_MAX));
        rx_smp_stop(smp);
        rx_smp_free(smp);
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

/* Regression: a request still queued when its shard stopped stayed pending
 * until rx_smp_free, so a thread waiting on it before freeing hung. Now the
 * exiting shard fails it with -SCREE_ESHUTDOWN. */
static _Atomic bool first_running, second_pushed;

static void stop_after_second_push(struct rx_loop *loop, struct rx_alien_req *req)
{
        atomic_store(&first_running, true);
        while (!atomic_load(&second_pushed))
                cpu_relax();
        rx_smp_stop(rx_loop_smp(loop));
        rx_alien_complete(req, 1);
}

static void never_expected(struct rx_loop *loop, struct rx_alien_req *req)
{
        (void)loop;
        rx_alien_complete(req, 2);
}

Test(alien, a_request_queued_when_its_shard_stops_completes_with_eshutdown)
{
        struct rx_smp_opts o = { .n_shards = 1 };
        struct rx_alien_req first = { .run = stop_after_second_push };
        struct rx_alien_req second = { .run = never_expected };
        struct rx_smp *smp;
        int r = rx_smp_new(&o, &smp);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        cr_assert(eq(int, rx_smp_alien_submit(smp, 0, &first), 0));
        /* Submit the second only once the shard is inside the first, so it
         * sits in the inbox when the shard stops. */
        while (!atomic_load(&first_running))
                cpu_relax();
        cr_assert(eq(int, rx_smp_alien_submit(smp, 0, &second), 0));
        atomic_store(&second_pushed, true);
        cr_expect(eq(i64, rx_alien_wait(&first), 1));
        /* Must return before rx_smp_free: the shard fails it as it exits. */
        cr_expect(eq(i64, rx_alien_wait(&second), -SCREE_ESHUTDOWN));
        rx_smp_free(smp);
}
