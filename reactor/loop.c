/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-shard reactor loop; see loop.h for the iteration and the contracts.
 *
 * Sleep/wake protocol (Dekker style, no lost wakeups): the loop stores
 * sleeping=1, issues a seq_cst fence, then re-checks every poller and its own
 * queues; a producer publishes, issues a seq_cst fence, then reads sleeping.
 * At least one of the two sees the other's store, so either the loop finds
 * the work or the producer writes the eventfd. The exchange in rx_loop_wake
 * makes one waker per sleep pay for the syscall. The fences sit on the
 * producer's batch flush and on the idle transition, never per message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/time.h"
#include "reactor/loop_int.h"

static void wake_done(struct rx_loop *loop, struct rx_op *op, int res)
{
        (void)op;
        (void)res;
        loop->wake_armed = false;
        if (!atomic_load_explicit(&loop->stop, memory_order_relaxed))
                loop->wake_armed = rx_loop_arm_wake(loop, wake_done) == 0;
}

static void opts_defaults(struct rx_loop_opts *o)
{
        if (!o->ring_entries)
                o->ring_entries = RX_LOOP_DEFAULT_RING_ENTRIES;
        if (!o->task_quota_ns)
                o->task_quota_ns = RX_LOOP_DEFAULT_TASK_QUOTA_NS;
        if (!o->stall_threshold_ns)
                o->stall_threshold_ns = RX_LOOP_DEFAULT_STALL_NS;
        if (!o->idle_poll_ns)
                o->idle_poll_ns = RX_LOOP_DEFAULT_IDLE_POLL_NS;
}

int rx_loop_new(const struct rx_loop_opts *opts, struct rx_loop **ret_loop)
{
        struct rx_loop *loop = aligned_alloc(CACHELINE_BYTES, sizeof(*loop));
        struct rx_uring_features feat;
        int r;

        if (!loop)
                return -ENOMEM;
        memset(loop, 0, sizeof(*loop));
        atomic_init(&loop->sleeping, 0);
        atomic_init(&loop->stop, false);
        if (opts)
                loop->opts = *opts;
        opts_defaults(&loop->opts);
        loop->owner_shard = check_current_shard;
        rx_timer_heap_init(&loop->timers);
        loop->wake_fd = -1;
        loop->wake_fd = eventfd(0, EFD_CLOEXEC);
        if (loop->wake_fd < 0) {
                r = -errno;
                goto fail;
        }
        r = rx_uring_new(loop->opts.ring_entries, &loop->uring, &feat);
        if (r < 0)
                goto fail;
        loop->features = feat;
        r = rx_loop_arm_wake(loop, wake_done);
        if (r < 0)
                goto fail;
        loop->wake_armed = true;
        *ret_loop = loop;
        return 0;
fail:
        rx_loop_free(loop);
        return r;
}

void rx_loop_free(struct rx_loop *loop)
{
        if (!loop)
                return;
        rx_uring_free(loop->uring);
        if (loop->wake_fd >= 0)
                close(loop->wake_fd);
        rx_timer_heap_fini(&loop->timers);
        free(loop);
}

void rx_loop_stop(struct rx_loop *loop)
{
        atomic_store_explicit(&loop->stop, true, memory_order_seq_cst);
        full_barrier();
        rx_loop_wake(loop);
}

bool rx_loop_is_stopping(const struct rx_loop *loop)
{
        return atomic_load_explicit(&loop->stop, memory_order_acquire);
}

bool rx_loop_wake(struct rx_loop *loop)
{
        uint64_t one = 1;

        if (!atomic_load_explicit(&loop->sleeping, memory_order_relaxed))
                return false;
        if (!atomic_exchange_explicit(&loop->sleeping, 0, memory_order_acq_rel))
                return false;
        /* An eventfd write of 1 fails only on counter overflow, which the
         * loop's pending read rules out. */
        return write(loop->wake_fd, &one, sizeof(one)) == sizeof(one);
}

void rx_loop_post(struct rx_loop *loop, struct rx_task *t)
{
        SCREE_ASSERT_SHARD(loop);
        t->next = NULL;
        if (loop->task_tail)
                loop->task_tail->next = t;
        else
                loop->task_head = t;
        loop->task_tail = t;
}

int rx_timer_arm_at(struct rx_loop *loop, struct rx_timer *t, uint64_t deadline_ns)
{
        SCREE_ASSERT_SHARD(loop);
        return rx_timer_heap_add(&loop->timers, t, deadline_ns);
}

int rx_timer_arm_after(struct rx_loop *loop, struct rx_timer *t, uint64_t delay_ns)
{
        return rx_timer_arm_at(loop, t, time_now_ns() + delay_ns);
}

bool rx_timer_cancel(struct rx_loop *loop, struct rx_timer *t)
{
        SCREE_ASSERT_SHARD(loop);
        return rx_timer_heap_remove(&loop->timers, t);
}

const struct rx_loop_stats *rx_loop_stats(const struct rx_loop *loop)
{
        return &loop->stats;
}

const struct rx_uring_features *rx_loop_features(const struct rx_loop *loop)
{
        return &loop->features;
}

unsigned rx_loop_shard_id(const struct rx_loop *loop)
{
        return loop->shard_id;
}

void *rx_loop_user(const struct rx_loop *loop)
{
        return loop->user;
}

void rx_loop_set_user(struct rx_loop *loop, void *user)
{
        loop->user = user;
}

void rx_loop_add_poller(struct rx_loop *loop, struct rx_poller *p)
{
        p->next = loop->pollers;
        loop->pollers = p;
}

void rx_loop_stall(struct rx_loop *loop, const char *name, uint64_t duration_ns)
{
        loop->stats.stalls++;
        loop->stats.stall_last_name = name ? name : "(unnamed)";
        if (duration_ns > loop->stats.stall_max_ns)
                loop->stats.stall_max_ns = duration_ns;
        if (loop->opts.on_stall)
                loop->opts.on_stall(loop, loop->stats.stall_last_name, duration_ns);
}

/* Puts the tasks from head to tail, not yet run, back in front of the queue. */
static void requeue_front(struct rx_loop *loop, struct rx_task *head, struct rx_task *tail)
{
        tail->next = loop->task_head;
        if (!loop->task_head)
                loop->task_tail = tail;
        loop->task_head = head;
}

/* Iteration state carried between iterations of one run. */
struct run_state {
        uint64_t now;                   /* read at the bottom of the last iteration */
        uint64_t last_work;
        uint64_t last_collect;          /* last time a busy iteration collected CQEs */
};

/* Operations in the ring other than the always-armed wakeup read. */
static unsigned io_in_flight(const struct rx_loop *loop)
{
        return rx_uring_in_flight(loop->uring) - (loop->wake_armed ? 1u : 0u);
}

/*
 * Completions are collected (a GETEVENTS enter) in four places: the blocking
 * wait when the loop sleeps; every RX_LOOP_COLLECT_NS while other work keeps
 * the loop from sleeping, at the end of an iteration and between two tasks
 * of one batch; and every iteration with never_sleep. An idle loop with I/O
 * in flight sleeps at once instead of spinning: on a VM a spinning vCPU
 * slows the device it waits for (docs/design.md, "TASKRUN_FLAG"), and a
 * sleeping loop still wakes for messages through the eventfd.
 *
 * Whether a collect is due at now (every: whenever I/O is in flight); if
 * so, it counts as done.
 */
static bool collect_due(struct rx_loop *loop, struct run_state *rs, uint64_t now, bool every)
{
        if (io_in_flight(loop) == 0 || (!every && now - rs->last_collect < RX_LOOP_COLLECT_NS))
                return false;
        rs->last_collect = now;
        return true;
}

/* Asks the kernel to post finished I/O and runs it; returns how many. */
static unsigned collect_now(struct rx_loop *loop)
{
        rx_uring_collect(loop->uring);
        return rx_uring_reap(loop, 256);
}

/*
 * Between two tasks, when a collect is due: submits what the tasks queued
 * and runs the completions that arrived, so a read issued or finished while
 * a batch of background slices runs waits for one slice, not for the whole
 * quota. Returns whether it collected (the completions account for their
 * own time; the rest is the loop's).
 */
static bool collect_between_tasks(struct rx_loop *loop, struct run_state *rs, uint64_t now)
{
        if (!collect_due(loop, rs, now, false))
                return false;
        loop->stats.task_collects++;
        rx_uring_flush(loop->uring);
        collect_now(loop);
        return true;
}

/*
 * Runs the tasks that were queued when it was called, until they are done or
 * the quota is spent; advances rs->now to the time the last task ended. A
 * task they post waits for the next iteration, after the pollers and the
 * completions: a task that re-posts itself (a yield, a spin) cannot hold the
 * loop for a whole quota while finished I/O waits to be reaped.
 */
static unsigned run_tasks(struct rx_loop *loop, struct run_state *rs)
{
        struct rx_task *batch = loop->task_head, *batch_tail = loop->task_tail;
        uint64_t start_ns = rs->now, prev = start_ns;
        unsigned n = 0;

        loop->task_head = loop->task_tail = NULL;
        while (batch) {
                struct rx_task *t = batch;
                const char *name = t->name;     /* t may be freed by its fn */
                uint64_t now;

                batch = t->next;
                t->fn(loop, t);
                n++;
                now = time_now_ns();
                rx_loop_account(loop, name, &prev, now);
                rs->now = now;
                if (!batch)
                        break;
                if (now - start_ns >= loop->opts.task_quota_ns) {
                        loop->stats.quota_yields++;
                        requeue_front(loop, batch, batch_tail);
                        break;
                }
                if (collect_between_tasks(loop, rs, now))
                        prev = rs->now = time_now_ns(); /* not the next task's time */
        }
        loop->stats.tasks_run += n;
        return n;
}

static unsigned fire_timers(struct rx_loop *loop, uint64_t now_ns)
{
        struct rx_timer *t;
        uint64_t prev = time_coarse_ns();
        unsigned n = 0;

        while ((t = rx_timer_heap_pop_due(&loop->timers, now_ns)) != NULL) {
                const char *name = t->name;     /* t may be freed by its fn */

                t->fn(loop, t);
                n++;
                rx_loop_account(loop, name, &prev, time_coarse_ns());
        }
        loop->stats.timers_fired += n;
        return n;
}

static unsigned run_pollers(struct rx_loop *loop)
{
        unsigned n = 0;

        for (struct rx_poller *p = loop->pollers; p; p = p->next)
                n += p->poll(loop, p);
        return n;
}

static bool has_work(struct rx_loop *loop)
{
        if (loop->task_head || atomic_load_explicit(&loop->stop, memory_order_relaxed))
                return true;
        for (struct rx_poller *p = loop->pollers; p; p = p->next)
                if (p->has_work(loop, p))
                        return true;
        return false;
}

/* Blocks in the ring until a completion, the next timer, or a wakeup. */
static void sleep_in_ring(struct rx_loop *loop, uint64_t now_ns)
{
        struct rx_timer *next = rx_timer_heap_top(&loop->timers);
        uint64_t timeout = UINT64_MAX;

        /* Without the eventfd read armed nobody could wake us: re-arm it
         * (it fails only while the SQ stays full) or keep polling. */
        if (!loop->wake_armed) {
                loop->wake_armed = rx_loop_arm_wake(loop, wake_done) == 0;
                if (!loop->wake_armed)
                        return;
        }
        atomic_store_explicit(&loop->sleeping, 1, memory_order_seq_cst);
        full_barrier();
        if (has_work(loop)) {
                atomic_store_explicit(&loop->sleeping, 0, memory_order_relaxed);
                return;
        }
        if (next)
                timeout = next->deadline_ns > now_ns ? next->deadline_ns - now_ns : 0;
        loop->stats.sleeps++;
        rx_uring_wait(loop->uring, timeout);
        atomic_store_explicit(&loop->sleeping, 0, memory_order_relaxed);
}

/* At the end of an iteration that did work (see collect_due). */
static unsigned collect_io(struct rx_loop *loop, struct run_state *rs, uint64_t now)
{
        return collect_due(loop, rs, now, loop->opts.never_sleep) ? collect_now(loop) : 0;
}

static bool may_sleep(struct rx_loop *loop, const struct run_state *rs, uint64_t now)
{
        if (loop->opts.never_sleep)
                return false;
        return io_in_flight(loop) > 0 || now - rs->last_work >= loop->opts.idle_poll_ns;
}

/*
 * One iteration. One clock read on the hot path: `now` is read at the bottom
 * and serves the next iteration's quota start, timer check and accounting.
 */
static void iterate(struct rx_loop *loop, struct run_state *rs)
{
        struct rx_timer *next;
        uint64_t start = rs->now, end;
        unsigned work, io;

        loop->stats.iterations++;
        work = run_pollers(loop);
        if (loop->task_head) {
                rs->now = time_now_ns();        /* the quota starts after the pollers */
                work += run_tasks(loop, rs);
        }
        /* Read after tasks ran: they may have cancelled the old top. */
        next = rx_timer_heap_top(&loop->timers);
        if (next && next->deadline_ns <= rs->now)
                work += fire_timers(loop, rs->now);
        rx_uring_flush(loop->uring);
        io = rx_uring_reap(loop, 256);
        if (work || loop->opts.never_sleep)
                io += collect_io(loop, rs, rs->now);
        end = time_now_ns();
        if (work + io) {
                loop->stats.busy_ns += end - start;
                rs->now = rs->last_work = end;
                return;
        }
        if (may_sleep(loop, rs, end)) {
                sleep_in_ring(loop, end);
                end = time_now_ns();
        } else {
                cpu_relax();
        }
        loop->stats.idle_ns += end - start;
        rs->now = end;
}

static bool stopping(const struct rx_loop *loop)
{
        return atomic_load_explicit(&loop->stop, memory_order_acquire);
}

int rx_loop_submit_now(struct rx_loop *loop)
{
        return rx_uring_flush(loop->uring);
}

int rx_loop_run(struct rx_loop *loop)
{
        struct run_state rs = { .now = time_now_ns() };

        SCREE_ASSERT_SHARD(loop);
        rs.last_work = rs.now;
        while (!stopping(loop))
                iterate(loop, &rs);
        /* Leave nothing in flight: the kernel must not write into buffers
         * that callers free once the loop has returned. */
        rx_uring_drain(loop);
        return 0;
}

int rx_loop_run_until(struct rx_loop *loop, const bool *done)
{
        struct run_state rs = { .now = time_now_ns() };

        SCREE_ASSERT_SHARD(loop);
        rs.last_work = rs.now;
        while (!*done && !stopping(loop))
                iterate(loop, &rs);
        return *done ? 0 : -SCREE_ESHUTDOWN;
}
