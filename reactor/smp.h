/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A group of shards: one pinned thread per shard, each running an rx_loop,
 * connected by lock-free queues.
 *
 * Shard to shard: for every ordered pair (a, b) there is a request ring a->b
 * and a completion ring b->a (rx_spsc). rx_smp_submit() appends the message
 * to a shard-local backlog for its destination; the backlog is pushed into
 * the ring and published in batches (when it reaches opts.batch, and at every
 * loop iteration), and the destination is woken if it sleeps. A full ring
 * leaves messages in the backlog to be pushed next iteration: submit never
 * fails and never drops. The destination runs msg->run; the message then
 * travels back through the completion ring and msg->done runs on the sender,
 * which owns the message throughout and frees it. Per pair, messages are
 * handled in submission order.
 *
 * Foreign threads (not shards) use rx_smp_alien_submit(): an MPSC inbox per
 * shard plus a wakeup; the request is run on the shard, which completes it
 * with rx_alien_complete(); the foreign thread waits or polls for that.
 *
 * Memory: each shard thread gets its own jemalloc arena (when scree is built
 * with jemalloc), so allocations made on a shard come from that shard's arena.
 */
#ifndef SCREE_REACTOR_SMP_H
#define SCREE_REACTOR_SMP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "reactor/loop.h"
#include "reactor/msgq.h"

struct rx_smp;
struct rx_msg;

/* Returned by rx_msg.run when the handler will call rx_smp_reply() later;
 * any other return value means "reply now". */
#define RX_MSG_DEFERRED 1

/*
 * A cross-shard message, embedded by the caller in its own request struct.
 * Owned by the sending shard for its whole life: the receiver only runs it.
 */
struct rx_msg {
        struct rx_msg *next;            /* internal: backlog link */
        /* Runs on the destination shard. Return RX_MSG_DEFERRED and call
         * rx_smp_reply() exactly once later, or anything else (0, -errno)
         * to reply at once. Results travel in the caller's own struct. */
        int (*run)(struct rx_loop *dst, struct rx_msg *m);
        /* Runs on the sending shard after the reply arrived. */
        void (*done)(struct rx_loop *src, struct rx_msg *m);
        const char *name;               /* for stall reports; static string */
        uint16_t from, to;              /* set by rx_smp_submit */
};

struct rx_smp_opts {
        unsigned n_shards;              /* 0: one per CPU in the affinity mask */
        bool no_pin;                    /* don't pin threads to CPUs */
        uint32_t queue_capacity;        /* slots per SPSC ring; power of 2; default 1024 */
        uint32_t batch;                 /* publish when a backlog reaches this; default 16 */
        struct rx_loop_opts loop;
        /* Runs on every shard once all shards are up; may be NULL. */
        void (*on_start)(struct rx_loop *loop, void *arg);
        void *arg;
};

#define RX_SMP_DEFAULT_QUEUE_CAPACITY 1024u
#define RX_SMP_DEFAULT_BATCH 16u

/* Per-shard messaging counters (read on the shard). */
struct rx_smp_stats {
        uint64_t sent;                  /* requests submitted */
        uint64_t received;              /* requests run here */
        uint64_t completed;             /* replies handled here (done ran) */
        uint64_t ring_full;             /* pushes that found a full ring */
        uint64_t alien_received;
};

/*
 * Starts the shard threads, pins them, creates each shard's loop on its own
 * thread, and waits until all are up. Returns 0 and *ret_smp (caller frees
 * with rx_smp_free after rx_smp_stop), or a negative error: the first
 * shard's rx_loop_new error (see rx_loop_setup_hint), -EINVAL for a bad
 * option, -ENOMEM, or -errno from thread creation. On error no thread is
 * left running. Any non-shard thread.
 */
int rx_smp_new(const struct rx_smp_opts *opts, struct rx_smp **ret_smp);

/* Asks every shard to stop. Returns at once. Any thread. */
void rx_smp_stop(struct rx_smp *smp);

/*
 * Waits for every shard thread to exit, then frees everything. Foreign
 * requests still queued complete with -SCREE_ESHUTDOWN; shard messages still
 * in flight are dropped without callbacks. Accepts NULL.
 * REQUIRES: rx_smp_stop called; no thread submits concurrently. Not from a shard.
 */
void rx_smp_free(struct rx_smp *smp);

/* Number of shards. Any thread. */
unsigned rx_smp_count(const struct rx_smp *smp);

/* The loop of shard i. Borrowed; valid until rx_smp_free. Any thread, but
 * only rx_loop_wake/rx_loop_stop may be called on another shard's loop. */
struct rx_loop *rx_smp_loop(const struct rx_smp *smp, unsigned i);

/* The group a shard loop belongs to (NULL for a standalone loop). Any thread. */
struct rx_smp *rx_loop_smp(const struct rx_loop *loop);

/*
 * Sends m (owned by the caller, who must keep it alive until m->done runs)
 * to shard `to` (which may be the caller's own shard; m->run then runs from
 * the loop, never inside this call). Returns 0, or -EINVAL for a bad shard.
 * Never fails for lack of room. Shard-local (the sending shard).
 */
int rx_smp_submit(struct rx_loop *src, unsigned to, struct rx_msg *m);

/* Replies to m after its run returned RX_MSG_DEFERRED. Shard-local (the
 * destination shard). */
void rx_smp_reply(struct rx_loop *dst, struct rx_msg *m);

/* Publishes every backlog now instead of at the end of the iteration.
 * Shard-local. */
void rx_smp_flush(struct rx_loop *src);

/* Borrowed; the calling shard's counters. Shard-local. */
const struct rx_smp_stats *rx_smp_stats(const struct rx_loop *loop);

/*
 * Runs fn(arg) on shard `to` and delivers its result to done(result, arg) on
 * the calling shard. Allocates one small message on the caller's shard.
 * Returns 0 (done will run exactly once), -EINVAL, or -ENOMEM (done won't run).
 * Shard-local.
 */
typedef int64_t (*rx_call_fn)(struct rx_loop *dst, void *arg);
typedef void (*rx_result_fn)(struct rx_loop *src, int64_t result, void *arg);
int rx_smp_call(struct rx_loop *src, unsigned to, rx_call_fn fn, rx_result_fn done, void *arg);

/*
 * Runs map(arg) on every shard (including the caller's), folds the results
 * on the calling shard with acc = reduce(acc, result, arg) starting from init,
 * and calls done(acc, arg) there once all shards answered. Returns 0 (done
 * runs exactly once), or -ENOMEM (it won't). Shard-local.
 */
typedef int64_t (*rx_reduce_fn)(int64_t acc, int64_t value, void *arg);
int rx_smp_map_reduce(struct rx_loop *src, rx_call_fn map, rx_reduce_fn reduce, int64_t init,
                      rx_result_fn done, void *arg);

/* A request from a foreign thread. Caller-owned until it completes. */
struct rx_alien_req {
        struct rx_mpsc_node node;       /* internal */
        /* Runs on the shard; must call rx_alien_complete exactly once, now or later. */
        void (*run)(struct rx_loop *loop, struct rx_alien_req *req);
        void *ctx;                      /* the caller's */
        /* Optional: runs (on the shard that completed req, or on the
         * thread that failed it at shutdown) instead of the wake-up of
         * rx_alien_wait, with req->result set: for a submitter that does
         * not wait but collects completions (the library's completion
         * queues). req is the callback's from then on. */
        void (*complete)(struct rx_alien_req *req);
        int64_t result;                 /* valid once rx_alien_is_done */
        _Atomic uint32_t state;         /* internal */
};

/*
 * Queues req for shard `shard` and wakes it. Returns 0, -EINVAL for a bad
 * shard, -SCREE_ESHUTDOWN once rx_smp_stop was called (req never runs).
 * After a 0 return req always completes: with its handler's result, or with
 * result -SCREE_ESHUTDOWN if the shard stopped before running it. A handler
 * that defers completion must complete req before its shard stops (e.g.
 * from its I/O callback, which runs with -ECANCELED at the latest when the
 * loop drains on exit). Lock-free. Any non-shard thread (multi-producer).
 */
int rx_smp_alien_submit(struct rx_smp *smp, unsigned shard, struct rx_alien_req *req);

/* Publishes result and wakes a waiting rx_alien_wait (or runs
 * req->complete). Shard-local (or any thread for the shutdown path). */
void rx_alien_complete(struct rx_alien_req *req, int64_t result);

/* True once the request completed (acquire: result is then readable). Any thread. */
bool rx_alien_is_done(struct rx_alien_req *req);

/* Blocks (spin, then futex) until req completed; returns its result. The
 * spin is the calling thread's own and adapts: shorter while answers come
 * long after it (a durable write's fdatasync), back to RX_ALIEN_SPIN_MAX
 * pauses (~55 us on the x86 VM measured; a pause's length varies by CPU)
 * while they come within it or soon after. The submitting thread. */
int64_t rx_alien_wait(struct rx_alien_req *req);

/* The bounds of that spin, in pauses (RX_ALIEN_SPIN_MIN = MAX / 2^6), and
 * the calling thread's spin now: for tests and diagnostics. Any thread. */
#define RX_ALIEN_SPIN_MAX 2048u
#define RX_ALIEN_SPIN_MIN 32u
uint32_t rx_alien_spin_budget(void);

#endif
