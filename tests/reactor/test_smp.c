/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shard-to-shard messaging (reactor/smp.h) on real pinned shard threads:
 * 10 million messages between two shards with none lost, duplicated or
 * reordered; every pair of a 4-shard group at once; a sleeping shard woken
 * by a message; a tiny ring forcing full-ring retries; run-on-shard,
 * map-reduce and deferred replies.
 *
 * The message-flood bodies live in scenarios.c (shared with queue_stress);
 * state here lives in file statics written by shard threads and read by the
 * test thread after rx_smp_free() has joined them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/time.h"
#include "reactor/smp.h"
#include "tests/reactor/helpers.h"
#include "tests/reactor/scenarios.h"

TestSuite(smp, .timeout = 120);

static void expect_seq(const struct seq_params *p, const struct seq_result *r)
{
        for (unsigned a = 0; a < p->n_shards; a++)
                for (unsigned b = 0; b < p->n_shards; b++) {
                        uint64_t want = p->all_pairs || (a == 0 && b == 1) ? p->per_pair : 0;

                        cr_expect(eq(u64, r->received[a][b], want), "pair %u->%u: %llu received",
                                  a, b, (unsigned long long)r->received[a][b]);
                        cr_expect(eq(u64, r->replies[a][b], want), "pair %u->%u: %llu replies",
                                  a, b, (unsigned long long)r->replies[a][b]);
                }
        cr_expect(eq(u64, r->bad_order, 0), "duplicated, lost or reordered messages");
}

Test(smp, ten_million_messages_between_two_shards_arrive_once_in_order)
{
        struct seq_params p = { .n_shards = 2, .per_pair = test_scaled(10000000), .window = 4096 };
        struct seq_result r;

        scenario_smp_seq(&p, &r);
        SKIP_IF_NO_URING(r.rc);
        cr_assert(eq(int, r.rc, 0), "rx_smp_new: %s", scree_strerror(r.rc));
        expect_seq(&p, &r);
}

Test(smp, all_pairs_of_four_shards_at_once_keep_per_pair_fifo)
{
        /* 4 shards on this 2-CPU machine: shards share CPUs, as tests may. */
        struct seq_params p = { .n_shards = 4, .all_pairs = true, .per_pair = test_scaled(200000),
                                .window = 256, .idle_poll_ns = 20 * NS_PER_US };
        struct seq_result r;

        scenario_smp_seq(&p, &r);
        SKIP_IF_NO_URING(r.rc);
        cr_assert(eq(int, r.rc, 0), "rx_smp_new: %s", scree_strerror(r.rc));
        expect_seq(&p, &r);
}

Test(smp, a_full_ring_means_retry_and_loses_nothing)
{
        /* An 8-slot ring with 100k messages submitted at once: most pushes hit a
         * full ring; the backlog must carry every one through, in order. */
        struct seq_params p = { .n_shards = 2, .queue_capacity = 8, .batch = 4,
                                .per_pair = test_scaled(100000),
                                .window = (unsigned)test_scaled(100000) };
        struct seq_result r;

        scenario_smp_seq(&p, &r);
        SKIP_IF_NO_URING(r.rc);
        cr_assert(eq(int, r.rc, 0));
        cr_expect(gt(u64, r.ring_full, 0), "the ring never filled up");
        expect_seq(&p, &r);
}

static struct rx_smp *smp;     /* the group under test */

/* Wakeup: shard 1 idles into sleep (no timers, nothing to poll); shard 0 sends
 * it one message every 20 ms until three needed a wakeup (or TEST_WAIT_NS
 * passed: a loaded machine may keep shard 1 from sleeping for a while; a
 * fixed 20 rounds used to stand for that). Without a working wakeup shard
 * 1 never runs the message and the test times out. */
static struct {
        struct rx_timer tick;
        struct rx_msg m;
        uint64_t until_ns;
        unsigned rounds, handled, replies;
        uint64_t wakeups_sent;
        uint64_t target_sleeps;
} wk;

static int wake_run(struct rx_loop *dst, struct rx_msg *m)
{
        (void)m;
        wk.handled++;
        wk.target_sleeps = rx_loop_stats(dst)->sleeps;
        return 0;
}

static void wake_tick(struct rx_loop *loop, struct rx_timer *t);

static void wake_done(struct rx_loop *src, struct rx_msg *m)
{
        (void)m;
        wk.replies++;
        wk.wakeups_sent = rx_loop_stats(src)->wakeups_sent;
        if (time_now_ns() >= wk.until_ns || wk.wakeups_sent >= 3) {
                rx_smp_stop(rx_loop_smp(src));
                return;
        }
        rx_timer_arm_after(src, &wk.tick, 20 * NS_PER_MS);
}

static void wake_tick(struct rx_loop *loop, struct rx_timer *t)
{
        (void)t;
        wk.rounds++;
        wk.m = (struct rx_msg){ .run = wake_run, .done = wake_done, .name = "wake" };
        rx_smp_submit(loop, 1, &wk.m);
}

static void start_wake(struct rx_loop *loop, void *arg)
{
        (void)arg;
        if (rx_loop_shard_id(loop) != 0)
                return;
        wk.until_ns = time_now_ns() + TEST_WAIT_NS;
        rx_timer_init(&wk.tick, wake_tick, "wake_tick");
        rx_timer_arm_after(loop, &wk.tick, 20 * NS_PER_MS);
}

Test(smp, a_sleeping_shard_is_woken_by_a_message)
{
        struct rx_smp_opts o = { .n_shards = 2, .on_start = start_wake,
                                 .loop = { .idle_poll_ns = 5 * NS_PER_US } };
        int r = rx_smp_new(&o, &smp);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        rx_smp_free(smp);
        cr_expect(eq(u32, wk.handled, wk.rounds));
        cr_expect(eq(u32, wk.replies, wk.rounds));
        cr_expect(ge(u64, wk.target_sleeps, 1), "shard 1 never slept");
        cr_expect(ge(u64, wk.wakeups_sent, 1), "no message needed a wakeup in %u rounds", wk.rounds);
}

/* rx_smp_call, map-reduce, and a reply deferred to a timer. */
static struct {
        int64_t call_result;
        int64_t mr_result;
        int calls_done;
        struct rx_msg deferred;
        struct rx_timer later;
        struct rx_loop *deferred_loop;
        bool deferred_done;
        int bad_shard_rc;
} fx;

static int64_t times_hundred(struct rx_loop *dst, void *arg)
{
        return (int64_t)rx_loop_shard_id(dst) * 100 + (int64_t)(intptr_t)arg;
}

static int64_t plus_one(struct rx_loop *dst, void *arg)
{
        (void)arg;
        return (int64_t)rx_loop_shard_id(dst) + 1;
}

static int64_t sum(int64_t acc, int64_t v, void *arg)
{
        (void)arg;
        return acc + v;
}

static void maybe_stop(struct rx_loop *loop)
{
        if (++fx.calls_done == 3)
                rx_smp_stop(rx_loop_smp(loop));
}

static void call_result(struct rx_loop *src, int64_t v, void *arg)
{
        (void)arg;
        fx.call_result = v;
        maybe_stop(src);
}

static void mr_result(struct rx_loop *src, int64_t v, void *arg)
{
        (void)arg;
        fx.mr_result = v;
        maybe_stop(src);
}

static void reply_later(struct rx_loop *loop, struct rx_timer *t)
{
        (void)t;
        rx_smp_reply(loop, &fx.deferred);
}

static int deferred_run(struct rx_loop *dst, struct rx_msg *m)
{
        (void)m;
        rx_timer_init(&fx.later, reply_later, "reply_later");
        rx_timer_arm_after(dst, &fx.later, 5 * NS_PER_MS);
        return RX_MSG_DEFERRED;
}

static void deferred_done(struct rx_loop *src, struct rx_msg *m)
{
        (void)m;
        fx.deferred_done = true;
        maybe_stop(src);
}

static void start_calls(struct rx_loop *loop, void *arg)
{
        (void)arg;
        if (rx_loop_shard_id(loop) != 0)
                return;
        fx.bad_shard_rc = rx_smp_call(loop, 99, times_hundred, call_result, NULL);
        cr_assert(eq(int, rx_smp_call(loop, 3, times_hundred, call_result, (void *)7), 0));
        cr_assert(eq(int, rx_smp_map_reduce(loop, plus_one, sum, 1000, mr_result, NULL), 0));
        fx.deferred = (struct rx_msg){ .run = deferred_run, .done = deferred_done, .name = "deferred" };
        cr_assert(eq(int, rx_smp_submit(loop, 2, &fx.deferred), 0));
}

Test(smp, call_map_reduce_and_deferred_reply_return_to_the_caller)
{
        struct rx_smp_opts o = { .n_shards = 4, .on_start = start_calls };
        int r = rx_smp_new(&o, &smp);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        rx_smp_free(smp);
        cr_expect(eq(int, fx.bad_shard_rc, -EINVAL));
        cr_expect(eq(i64, fx.call_result, 307));
        cr_expect(eq(i64, fx.mr_result, 1000 + 1 + 2 + 3 + 4));
        cr_expect(fx.deferred_done);
}

Test(smp, bad_options_are_rejected_and_leave_no_thread)
{
        struct rx_smp_opts o = { .n_shards = 2, .queue_capacity = 12 };

        smp = NULL;
        cr_expect(eq(int, rx_smp_new(&o, &smp), -EINVAL));
        o = (struct rx_smp_opts){ .n_shards = 100000 };
        cr_expect(eq(int, rx_smp_new(&o, &smp), -EINVAL));
        cr_expect(eq(ptr, smp, NULL));
}

/* Regression: a handler returning anything but RX_MSG_DEFERRED (here an
 * errno) must still reply; it used to count as "deferred" and be lost. */
static struct {
        struct rx_msg m;
        int status;
        bool done;
} neg;

static int neg_run(struct rx_loop *dst, struct rx_msg *m)
{
        (void)dst;
        (void)m;
        neg.status = -ENOENT;
        return -ENOENT;
}

static void neg_done(struct rx_loop *src, struct rx_msg *m)
{
        (void)m;
        neg.done = true;
        rx_smp_stop(rx_loop_smp(src));
}

static void start_neg(struct rx_loop *loop, void *arg)
{
        (void)arg;
        if (rx_loop_shard_id(loop) != 0)
                return;
        neg.m = (struct rx_msg){ .run = neg_run, .done = neg_done, .name = "neg" };
        rx_smp_submit(loop, 1, &neg.m);
}

Test(smp, a_handler_returning_an_error_still_replies)
{
        struct rx_smp_opts o = { .n_shards = 2, .on_start = start_neg };
        int r = rx_smp_new(&o, &smp);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        rx_smp_free(smp);       /* returns only once neg_done stopped the group */
        cr_expect(neg.done);
        cr_expect(eq(int, neg.status, -ENOENT));
}

/* Regression: rx_smp_new walked uninitialized memory when one of its
 * allocations failed. An address-space limit makes them fail here. */
Test(smp, allocation_failure_in_rx_smp_new_cleans_up)
{
#if defined(__SANITIZE_ADDRESS__)
        cr_skip_test("an address-space limit breaks ASan's shadow memory");
#else
        struct rx_smp_opts o = { .n_shards = 256, .no_pin = true };
        unsigned long pages = 0;
        struct rlimit lim;
        FILE *f = fopen("/proc/self/statm", "r");

        cr_assert(not(eq(ptr, f, NULL)));
        cr_assert(eq(int, fscanf(f, "%lu", &pages), 1));
        fclose(f);
        /* Room for the small allocations, not for 2 x 12 MiB of rings. */
        lim.rlim_cur = lim.rlim_max = pages * (unsigned long)sysconf(_SC_PAGESIZE) + (16ul << 20);
        cr_assert(eq(int, setrlimit(RLIMIT_AS, &lim), 0));
        smp = NULL;
        cr_expect(lt(int, rx_smp_new(&o, &smp), 0));
        cr_expect(eq(ptr, smp, NULL));
#endif
}
