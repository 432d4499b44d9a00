/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shard-to-shard messaging (reactor/smp.h) on real pinned shard threads:
 * 10 million messages between two shards with none lost, duplicated or
 * reordered; every pair of a 4-shard group at once; a sleeping shard woken
 * by a message; a tiny ring forcing full-ring retries; run-on-shard,
 * map-reduce and deferred replies.
 *
 * State lives in file statics written by shard threads and read by the test
 * thread after rx_smp_free() has joined them.
 */
#include <stdlib.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/time.h"
#include "reactor/smp.h"
#include "tests/reactor/helpers.h"

TestSuite(smp, .timeout = 120);

#define MAX_SHARDS 4

struct seq_msg {
        struct rx_msg m;
        uint64_t seq;
};

/* Per-test state: sender side indexed [from][to], receiver side [to][from]. */
static struct {
        struct rx_smp *smp;
        uint64_t per_pair;              /* messages each ordered pair carries */
        unsigned window;                /* in flight per pair */
        unsigned n;
        struct seq_msg *pool[MAX_SHARDS][MAX_SHARDS];
        uint64_t next_send[MAX_SHARDS][MAX_SHARDS];
        uint64_t done[MAX_SHARDS][MAX_SHARDS];
        uint64_t expect[MAX_SHARDS][MAX_SHARDS];       /* [to][from] */
        uint64_t bad_order[MAX_SHARDS];
        unsigned pairs_finished[MAX_SHARDS];
        bool all_pairs;                 /* every shard sends to every shard */
        _Atomic unsigned shards_finished;
        uint64_t ring_full[MAX_SHARDS];
} st;

static int seq_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct seq_msg *sm = (struct seq_msg *)m;
        unsigned to = rx_loop_shard_id(dst);

        if (sm->seq != st.expect[to][m->from])
                st.bad_order[to]++;
        st.expect[to][m->from] = sm->seq + 1;
        return 0;
}

static void finish_shard(struct rx_loop *loop)
{
        unsigned id = rx_loop_shard_id(loop);

        st.ring_full[id] = rx_smp_stats(loop)->ring_full;
        if (atomic_fetch_add(&st.shards_finished, 1) + 1 == st.n)
                rx_smp_stop(rx_loop_smp(loop));
}

static void seq_done(struct rx_loop *src, struct rx_msg *m)
{
        struct seq_msg *sm = (struct seq_msg *)m;
        unsigned from = rx_loop_shard_id(src), to = m->to;

        st.done[from][to]++;
        if (st.next_send[from][to] < st.per_pair) {
                sm->seq = st.next_send[from][to]++;
                rx_smp_submit(src, to, &sm->m);
                return;
        }
        if (st.done[from][to] == st.per_pair) {
                unsigned targets = st.all_pairs ? st.n : 1;

                if (++st.pairs_finished[from] == targets)
                        finish_shard(src);
        }
}

static void start_pair(struct rx_loop *loop, unsigned to)
{
        unsigned from = rx_loop_shard_id(loop);
        struct seq_msg *pool = calloc(st.window, sizeof(*pool));

        cr_assert(not(eq(ptr, pool, NULL)));
        st.pool[from][to] = pool;
        for (unsigned i = 0; i < st.window && st.next_send[from][to] < st.per_pair; i++) {
                pool[i].m = (struct rx_msg){ .run = seq_run, .done = seq_done, .name = "seq" };
                pool[i].seq = st.next_send[from][to]++;
                cr_assert(eq(int, rx_smp_submit(loop, to, &pool[i].m), 0));
        }
}

static void start_one_way(struct rx_loop *loop, void *arg)
{
        (void)arg;
        if (rx_loop_shard_id(loop) == 0)
                start_pair(loop, 1);
        else
                finish_shard(loop);     /* shard 1 only receives */
}

static void start_all_pairs(struct rx_loop *loop, void *arg)
{
        (void)arg;
        for (unsigned to = 0; to < st.n; to++)
                start_pair(loop, to);
}

static void free_pools(void)
{
        for (unsigned a = 0; a < MAX_SHARDS; a++)
                for (unsigned b = 0; b < MAX_SHARDS; b++)
                        free(st.pool[a][b]);
}

Test(smp, ten_million_messages_between_two_shards_arrive_once_in_order)
{
        struct rx_smp_opts o = { .n_shards = 2, .on_start = start_one_way };
        int r;

        st.n = 2;
        st.per_pair = test_scaled(10000000);
        st.window = 4096;
        r = rx_smp_new(&o, &st.smp);
        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0), "rx_smp_new: %s", scree_strerror(r));
        rx_smp_free(st.smp);
        cr_expect(eq(u64, st.bad_order[1], 0), "duplicated, lost or reordered messages");
        cr_expect(eq(u64, st.expect[1][0], st.per_pair), "receiver saw %llu of %llu",
                  (unsigned long long)st.expect[1][0], (unsigned long long)st.per_pair);
        cr_expect(eq(u64, st.done[0][1], st.per_pair), "sender got %llu replies",
                  (unsigned long long)st.done[0][1]);
        free_pools();
}

Test(smp, all_pairs_of_four_shards_at_once_keep_per_pair_fifo)
{
        /* 4 shards on this 2-CPU machine: shards share CPUs, as tests may. */
        struct rx_smp_opts o = { .n_shards = 4, .on_start = start_all_pairs,
                                 .loop = { .idle_poll_ns = 20 * NS_PER_US } };
        int r;

        st.n = 4;
        st.all_pairs = true;
        st.per_pair = test_scaled(200000);
        st.window = 256;
        r = rx_smp_new(&o, &st.smp);
        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0), "rx_smp_new: %s", scree_strerror(r));
        rx_smp_free(st.smp);
        for (unsigned a = 0; a < 4; a++) {
                cr_expect(eq(u64, st.bad_order[a], 0), "shard %u saw messages out of order", a);
                for (unsigned b = 0; b < 4; b++) {
                        cr_expect(eq(u64, st.expect[b][a], st.per_pair), "pair %u->%u lost messages", a, b);
                        cr_expect(eq(u64, st.done[a][b], st.per_pair), "pair %u->%u lost replies", a, b);
                }
        }
        free_pools();
}

Test(smp, a_full_ring_means_retry_and_loses_nothing)
{
        /* An 8-slot ring with 100k messages submitted at once: most pushes hit a
         * full ring; the backlog must carry every one through, in order. */
        struct rx_smp_opts o = { .n_shards = 2, .queue_capacity = 8, .batch = 4,
                                 .on_start = start_one_way };
        int r;

        st.n = 2;
        st.per_pair = test_scaled(100000);
        st.window = (unsigned)st.per_pair;
        r = rx_smp_new(&o, &st.smp);
        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        rx_smp_free(st.smp);
        cr_expect(gt(u64, st.ring_full[0], 0), "the ring never filled up");
        cr_expect(eq(u64, st.bad_order[1], 0));
        cr_expect(eq(u64, st.expect[1][0], st.per_pair));
        cr_expect(eq(u64, st.done[0][1], st.per_pair));
        free_pools();
}

/* Wakeup: shard 1 idles into sleep (no timers, nothing to poll); shard 0 sends
 * it one message every 20 ms. Without a working wakeup shard 1 never runs
 * the message and the test times out. */
static struct {
        struct rx_timer tick;
        struct rx_msg m;
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
        if (wk.rounds == 20 || wk.wakeups_sent >= 3) {
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
        rx_timer_init(&wk.tick, wake_tick, "wake_tick");
        rx_timer_arm_after(loop, &wk.tick, 20 * NS_PER_MS);
}

Test(smp, a_sleeping_shard_is_woken_by_a_message)
{
        struct rx_smp_opts o = { .n_shards = 2, .on_start = start_wake,
                                 .loop = { .idle_poll_ns = 5 * NS_PER_US } };
        int r = rx_smp_new(&o, &st.smp);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        rx_smp_free(st.smp);
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
        int r = rx_smp_new(&o, &st.smp);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        rx_smp_free(st.smp);
        cr_expect(eq(int, fx.bad_shard_rc, -EINVAL));
        cr_expect(eq(i64, fx.call_result, 307));
        cr_expect(eq(i64, fx.mr_result, 1000 + 1 + 2 + 3 + 4));
        cr_expect(fx.deferred_done);
}

Test(smp, bad_options_are_rejected_and_leave_no_thread)
{
        struct rx_smp_opts o = { .n_shards = 2, .queue_capacity = 12 };
        struct rx_smp *smp = NULL;

        cr_expect(eq(int, rx_smp_new(&o, &smp), -EINVAL));
        o = (struct rx_smp_opts){ .n_shards = 100000 };
        cr_expect(eq(int, rx_smp_new(&o, &smp), -EINVAL));
        cr_expect(eq(ptr, smp, NULL));
}
