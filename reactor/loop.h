/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reactor loop: one per shard thread, built on that thread's io_uring.
 *
 * Each iteration: (1) run pollers (cross-shard queues, the foreign inbox),
 * (2) run the tasks that were ready when this step began until they are
 * done or the task quota (default 0.5 ms) is spent -- a task posted by a
 * task runs in the next iteration, so a task that re-posts itself yields to
 * pollers and completions; between two tasks, every RX_LOOP_COLLECT_NS, it
 * submits what they queued and runs the completions that arrived --,
 * (3) fire due timers, (4) submit queued SQEs and reap
 * posted completions without blocking; while steps 1-3 keep finding work,
 * every RX_LOOP_COLLECT_NS it also asks the kernel to post finished I/O.
 * When an iteration finds nothing to do, and either I/O is in flight or
 * idle_poll_ns passed since the last work, the loop announces that it
 * sleeps, re-checks every poller, and blocks in the ring until a completion,
 * the next timer, or a wakeup (an eventfd write by rx_loop_wake) arrives.
 *
 * Every callback the loop runs (task, timer, I/O completion, message handler)
 * is timed; one that runs longer than stall_threshold_ns (default 25 ms) is a
 * stall: counted, remembered by name, and passed to opts.on_stall.
 *
 * Threading: a loop is created on, run on, and touched only by one thread
 * (its shard), except rx_loop_wake() and rx_loop_stop(), which any thread
 * may call. See docs/design.md.
 */
#ifndef SCREE_REACTOR_LOOP_H
#define SCREE_REACTOR_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "reactor/timer.h"

struct rx_loop;
struct rx_task;

typedef void (*rx_task_fn)(struct rx_loop *loop, struct rx_task *t);
typedef void (*rx_stall_fn)(struct rx_loop *loop, const char *name, uint64_t duration_ns);

/* Caller-provided, embedded in the caller's object; stays valid until fn runs. */
struct rx_task {
        struct rx_task *next;
        rx_task_fn fn;
        const char *name;       /* for stall reports; static string */
};

/* Zero means "default" for every field. */
struct rx_loop_opts {
        uint32_t ring_entries;          /* SQ size; default 256 */
        uint64_t task_quota_ns;         /* default 500 us */
        uint64_t stall_threshold_ns;    /* default 25 ms */
        uint64_t idle_poll_ns;          /* spin this long before sleeping; default 50 us */
        bool never_sleep;               /* busy-poll forever (benchmarks) */
        rx_stall_fn on_stall;           /* called on the loop's thread; may be NULL */
};

#define RX_LOOP_DEFAULT_RING_ENTRIES 256u
#define RX_LOOP_DEFAULT_TASK_QUOTA_NS (500 * UINT64_C(1000))
#define RX_LOOP_DEFAULT_STALL_NS (25 * UINT64_C(1000000))
#define RX_LOOP_DEFAULT_IDLE_POLL_NS (50 * UINT64_C(1000))
/* How often a loop kept busy by other work collects I/O completions. */
#define RX_LOOP_COLLECT_NS (20 * UINT64_C(1000))

/* Counters the loop owns; read them on the loop's thread. */
struct rx_loop_stats {
        uint64_t iterations;
        uint64_t tasks_run;
        uint64_t timers_fired;
        uint64_t io_submitted;
        uint64_t io_completed;
        uint64_t quota_yields;          /* task runs cut short by the quota */
        uint64_t task_collects;         /* completions collected between two tasks */
        uint64_t stalls;
        uint64_t stall_max_ns;
        const char *stall_last_name;
        uint64_t sleeps;                /* times the loop blocked in the ring */
        uint64_t wakeups_sent;          /* eventfd writes this thread did for other loops */
        uint64_t busy_ns;               /* time in iterations that did work */
        uint64_t idle_ns;               /* time spinning idle or asleep */
};

/* Which io_uring features the loop's ring uses (probed at creation). */
struct rx_uring_features {
        uint32_t setup_flags;           /* IORING_SETUP_* actually used */
        uint32_t kernel_features;       /* IORING_FEAT_* reported by the kernel */
        bool single_issuer, defer_taskrun, coop_taskrun, submit_all;
        bool registered_ring_fd;
        bool msg_ring;                  /* IORING_OP_MSG_RING available */
};

/*
 * Creates a loop and its io_uring on the calling thread (which must be the
 * thread that runs it). opts may be NULL. Returns 0 and *ret_loop (caller
 * frees with rx_loop_free), or a negative error: -ENOSYS/-EPERM/-ENOMEM from
 * io_uring_setup (see rx_loop_setup_hint), -SCREE_EUNSUPPORTED if the kernel
 * lacks a required opcode, -ENOMEM.
 */
int rx_loop_new(const struct rx_loop_opts *opts, struct rx_loop **ret_loop);

/*
 * Frees the loop. Accepts NULL. REQUIRES: the loop is not running, and it
 * either never ran or rx_loop_run returned (so nothing is in flight). May be
 * called from another thread once the loop's thread is done with it.
 */
void rx_loop_free(struct rx_loop *loop);

/* One line naming the likely cause of an rx_loop_new error and what to do. */
const char *rx_loop_setup_hint(int err);

/* Runs until rx_loop_stop(). Before returning it cancels every operation
 * still in flight and waits for each: its callback runs (usually with
 * -ECANCELED), so every successful submit still calls back exactly once and
 * no buffer is in use by the kernel afterwards. Returns 0. Shard-local. */
int rx_loop_run(struct rx_loop *loop);

/*
 * Runs iterations until *done becomes true (set by a callback on this
 * thread) and returns 0, or returns -SCREE_ESHUTDOWN if the loop is stopped
 * first. Unlike rx_loop_run it leaves operations in flight and may be called
 * again. For tests and for embedders that drive the loop step by step.
 * Shard-local.
 */
int rx_loop_run_until(struct rx_loop *loop, const bool *done);

/* Asks the loop to return from rx_loop_run after its current iteration; new
 * submissions then fail with -SCREE_ESHUTDOWN. Any thread. */
void rx_loop_stop(struct rx_loop *loop);

/* True once rx_loop_stop has been called. Any thread. */
bool rx_loop_is_stopping(const struct rx_loop *loop);

/* Wakes the loop if it sleeps (cheap no-op otherwise). Returns true if this
 * call had to write the loop's eventfd. Any thread.
 * REQUIRES: the caller has published whatever the loop should find, followed
 * by a seq_cst fence (rx_smp does this). */
bool rx_loop_wake(struct rx_loop *loop);

/* Queues t to run on this loop (FIFO). Never runs t inside the call; posted
 * from a task, t runs in the next iteration. Shard-local. */
void rx_loop_post(struct rx_loop *loop, struct rx_task *t);

/* Submits the I/O queued so far to the kernel now, instead of at the end of
 * the iteration: for a task that queued a latency-critical op and has more
 * CPU work to do. Returns SQEs submitted or -errno. Loop thread only. */
int rx_loop_submit_now(struct rx_loop *loop);

/* Arms t to fire at deadline_ns (CLOCK_MONOTONIC), or after delay_ns. Re-arming
 * an armed timer moves it. Returns 0 or -ENOMEM. Shard-local. */
int rx_timer_arm_at(struct rx_loop *loop, struct rx_timer *t, uint64_t deadline_ns);
int rx_timer_arm_after(struct rx_loop *loop, struct rx_timer *t, uint64_t delay_ns);

/* Cancels t. Returns true if it was armed (it will not fire). Shard-local. */
bool rx_timer_cancel(struct rx_loop *loop, struct rx_timer *t);

/* Borrowed; valid until rx_loop_free. Shard-local. */
const struct rx_loop_stats *rx_loop_stats(const struct rx_loop *loop);
const struct rx_uring_features *rx_loop_features(const struct rx_loop *loop);

/* Writes a human-readable list of the features into buf (NUL-terminated).
 * Any thread. */
void rx_uring_features_format(const struct rx_uring_features *f, char *buf, unsigned len);

/* The shard this loop belongs to (0 for a loop outside an rx_smp group). */
unsigned rx_loop_shard_id(const struct rx_loop *loop);

/* The loop's arbitrary user pointer (set by its owner; NULL by default). */
void *rx_loop_user(const struct rx_loop *loop);
void rx_loop_set_user(struct rx_loop *loop, void *user);

#endif
