/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the loop shared by loop.c, io.c, uring.c and smp.c. Not for use
 * outside reactor/.
 */
#ifndef SCREE_REACTOR_LOOP_INT_H
#define SCREE_REACTOR_LOOP_INT_H

#include <stdatomic.h>

#include "base/check.h"
#include "base/compiler.h"
#include "reactor/io.h"
#include "reactor/loop.h"
#include "reactor/timer.h"
#include "reactor/uring.h"

struct rx_uring;
struct rx_smp;

/* A source of work polled every iteration (the smp queues are one). */
struct rx_poller {
        struct rx_poller *next;
        /* Does a bounded amount of work; returns how much (0 = nothing). */
        unsigned (*poll)(struct rx_loop *loop, struct rx_poller *p);
        /* After the loop announced sleep: true if work is pending, so it must
         * not block. Must read shared indices with acquire loads. */
        bool (*has_work)(struct rx_loop *loop, struct rx_poller *p);
};

struct rx_loop {
        /* Written by other threads (wakers exchange it): own line. */
        _Atomic uint32_t sleeping cacheline_aligned;
        _Atomic bool stop;

        int owner_shard cacheline_aligned;
        unsigned shard_id;
        struct rx_loop_opts opts;
        struct rx_uring *uring;
        struct rx_uring_features features;
        struct rx_task *task_head, *task_tail;
        struct rx_timer_heap timers;
        struct rx_poller *pollers;
        rx_fault_fn fault;
        void *fault_ctx;
        void *user;
        struct rx_smp *smp;

        int wake_fd;            /* eventfd; a read on it is always armed */
        struct rx_op wake_op;
        uint64_t wake_buf;
        bool wake_armed;

        struct rx_loop_stats stats;
};

/* Records a stall (callback ran over the threshold). */
void rx_loop_stall(struct rx_loop *loop, const char *name, uint64_t duration_ns);

/* Times a callback that started at *prev_ns and ended at now_ns; advances
 * *prev_ns. Hot paths pass time_coarse_ns() values: a stall is 25 ms, the
 * coarse clock's few ms of resolution are plenty, and it is 8x cheaper. */
static inline void rx_loop_account(struct rx_loop *loop, const char *name, uint64_t *prev_ns,
                                   uint64_t now_ns)
{
        uint64_t d = now_ns - *prev_ns;

        if (unlikely(d > loop->opts.stall_threshold_ns))
                rx_loop_stall(loop, name, d);
        *prev_ns = now_ns;
}

void rx_loop_add_poller(struct rx_loop *loop, struct rx_poller *p);

/* io.c: arms the loop's wakeup, an 8-byte read on its eventfd. */
int rx_loop_arm_wake(struct rx_loop *loop, rx_op_cb cb);

#endif
