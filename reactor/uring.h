/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The loop's io_uring: set-up with feature probing, submission, reaping,
 * waiting, and the drain that runs when a loop stops. Implemented in uring.c,
 * which with io.c is the only code that includes liburing. Internal to
 * reactor/: the rest of the project uses reactor/io.h. Shard-local: every
 * call comes from the thread that created the ring.
 */
#ifndef SCREE_REACTOR_URING_H
#define SCREE_REACTOR_URING_H

#include <stdint.h>

struct rx_loop;
struct rx_uring;
struct rx_uring_features;

/* Creates a ring of `entries` SQEs with the best flags the kernel accepts.
 * Returns 0 with *ret (free with rx_uring_free) and *ret_feat, or -errno from
 * io_uring_setup, -SCREE_EUNSUPPORTED, -ENOMEM. */
int rx_uring_new(uint32_t entries, struct rx_uring **ret, struct rx_uring_features *ret_feat);

/* Accepts NULL. REQUIRES: nothing in flight (rx_uring_drain ran). */
void rx_uring_free(struct rx_uring *u);

/* Submits queued SQEs without blocking and without collecting completions.
 * Returns SQEs submitted or -errno. */
int rx_uring_flush(struct rx_uring *u);

/* Enters the kernel (no wait) so that finished operations post their CQEs;
 * a no-op with nothing in flight. Returns 0 or -errno. */
int rx_uring_collect(struct rx_uring *u);

/* Operations submitted or queued whose callback has not run yet. */
unsigned rx_uring_in_flight(const struct rx_uring *u);

/* Runs callbacks for up to max ready CQEs. Returns the number reaped. */
unsigned rx_uring_reap(struct rx_loop *loop, unsigned max);

/* Submits and blocks until a CQE arrives or timeout_ns passes (UINT64_MAX =
 * no timeout). Returns 0, or -errno other than ETIME/EINTR. */
int rx_uring_wait(struct rx_uring *u, uint64_t timeout_ns);

/* Number of SQEs queued but not yet submitted. */
unsigned rx_uring_pending(const struct rx_uring *u);

/*
 * Cancels every operation in flight and waits until each has completed,
 * running its callback (usually with -ECANCELED; disk I/O that cannot be
 * cancelled completes normally). Afterwards no buffer is referenced by the
 * kernel. REQUIRES: the loop is stopping, so callbacks cannot submit more.
 */
void rx_uring_drain(struct rx_loop *loop);

#endif
