/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers for the reactor tests (and, through tests/engine/helpers.h,
 * the engine's). SCREE_TEST_SCALE (env, default 1) divides the big message
 * counts, for slow builds such as ThreadSanitizer.
 *
 * Waiting: a test that waits for something asynchronous waits for that
 * event itself, never for a number of loop turns or a short sleep, with the
 * generous deadline TEST_WAIT_NS (a cold VM under load is slow, and memory
 * or files it never touched take long to fault in): TEST_RUN_UNTIL runs a
 * loop until a condition holds, and fails the test, naming the condition,
 * at the deadline. A thread without a loop polls against TEST_WAIT_NS.
 */
#ifndef SCREE_TESTS_REACTOR_HELPERS_H
#define SCREE_TESTS_REACTOR_HELPERS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/compiler.h"
#include "base/time.h"
#include "reactor/loop.h"
#include "reactor/timer.h"

static inline uint64_t test_scaled(uint64_t n)
{
        const char *s = getenv("SCREE_TEST_SCALE");
        uint64_t div = s ? strtoull(s, NULL, 10) : 1;

        if (div == 0)
                div = 1;
        return n / div ? n / div : 1;
}

/* Skips the test when the kernel or sandbox refuses io_uring. */
#define SKIP_IF_NO_URING(r)                                                   \
        do {                                                                  \
                if ((r) == -ENOSYS || (r) == -EPERM || (r) == -SCREE_EUNSUPPORTED) \
                        cr_skip_test("io_uring unavailable");                 \
        } while (0)

/* How long a test waits for an event before failing: far beyond what it
 * takes on a loaded, cold machine, and under every suite's timeout but
 * the 30 s ones (those fail by their timeout first, which is as clear). */
#define TEST_WAIT_NS (60 * NS_PER_SEC)

/* How often TEST_RUN_UNTIL looks at its condition. */
#define TEST_POLL_NS NS_PER_MS

struct test_run_for {
        struct rx_timer t;
        bool done;
};

static inline void test_run_for_done(struct rx_loop *l, struct rx_timer *t)
{
        (void)l;
        container_of(t, struct test_run_for, t)->done = true;
}

/* Runs l (its I/O, tasks and timers) for at least ns nanoseconds. For a
 * condition to become true use TEST_RUN_UNTIL; a bare run_for is only for
 * giving something the chance to happen that must not. Shard-local. */
static inline void test_run_for_ns(struct rx_loop *l, uint64_t ns)
{
        struct test_run_for w = { .done = false };

        rx_timer_init(&w.t, test_run_for_done, "test:run_for");
        cr_assert(eq(int, rx_timer_arm_after(l, &w.t, ns), 0));
        cr_assert(eq(int, rx_loop_run_until(l, &w.done), 0));
}

/*
 * Runs loop l until cond (any expression, re-evaluated every TEST_POLL_NS
 * and whenever the loop returns) is true; fails the test naming cond if it
 * is still false after TEST_WAIT_NS. The loop sleeps between polls, so
 * completions, tasks and timers run as they would in rx_loop_run.
 * Example: TEST_RUN_UNTIL(loop, eng_shard_stats(sh)->prefault_pending == 0);
 */
#define TEST_RUN_UNTIL(l, cond)                                                    \
        do {                                                                       \
                const uint64_t test_until_ = time_now_ns() + TEST_WAIT_NS;         \
                while (!(cond)) {                                                  \
                        cr_assert(lt(u64, time_now_ns(), test_until_),             \
                                  "waited %llu s for: %s",                        \
                                  (unsigned long long)(TEST_WAIT_NS / NS_PER_SEC), \
                                  #cond);                                          \
                        test_run_for_ns((l), TEST_POLL_NS);                        \
                }                                                                  \
        } while (0)

#endif
