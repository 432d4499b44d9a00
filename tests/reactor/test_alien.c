/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Foreign threads submitting to shards (rx_smp_alien_submit): 4 threads x 1
 * million requests, each run and completed exactly once; blocking waits
 * (futex path); completions deferred by the shard; and refusal after stop.
 */
#include <pthread.h>
#include <stdlib.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/time.h"
#include "reactor/smp.h"
#include "tests/reactor/helpers.h"

TestSuite(alien, .timeout = 120);

enum { THREADS = 4, WINDOW = 256 };

static uint8_t *runs;           /* runs[id]: times a shard ran request id */

static void count_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        uint64_t id = (uint64_t)(uintptr_t)req->ctx;

        (void)loop;
        runs[id]++;
        rx_alien_complete(req, (int64_t)id);
}

struct foreign {
        struct rx_smp *smp;
        unsigned thread;
        uint64_t per_thread;
        uint8_t *seen;
        uint64_t wrong_result;
};

/* Keeps WINDOW requests in flight, recycling the oldest once it completes. */
static void *foreign_main(void *arg)
{
        struct foreign *f = arg;
        struct rx_alien_req *w = calloc(WINDOW, sizeof(*w));
        uint64_t base = f->thread * f->per_thread, submitted = 0, completed = 0;
        unsigned n = rx_smp_count(f->smp);

        while (completed < f->per_thread) {
                unsigned slot = (unsigned)(submitted % WINDOW);

                if (submitted < f->per_thread && submitted - completed < WINDOW) {
                        uint64_t id = base + submitted;

                        w[slot] = (struct rx_alien_req){ .run = count_run, .ctx = (void *)(uintptr_t)id };
                        if (rx_smp_alien_submit(f->smp, (unsigned)(id % n), &w[slot]) != 0)
                                break;
                        submitted++;
                        continue;
                }
                slot = (unsigned)(completed % WINDOW);
                uint64_t id = (uint64_t)rx_alien_wait(&w[slot]);
                if (id != base + completed)
                        f->wrong_result++;
                else
                        f->seen[id]++;
                completed++;
        }
        free(w);
        return NULL;
}

Test(alien, four_threads_times_a_million_each_complete_exactly_once)
{
        struct rx_smp_opts o = { .n_shards = 2 };
        struct foreign f[THREADS];
        pthread_t th[THREADS];
        uint64_t per = test_scaled(1000000), total = per * THREADS, bad_runs = 0, bad_seen = 0;
        uint8_t *seen = calloc(total, 1);
        struct rx_smp *smp;
        int r;

        runs = calloc(total, 1);
        cr_assert(not(eq(ptr, runs, NULL)));
        cr_assert(not(eq(ptr, seen, NULL)));
        r = rx_smp_new(&o, &smp);
        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        for (unsigned t = 0; t < THREADS; t++) {
                f[t] = (struct foreign){ .smp = smp, .thread = t, .per_thread = per, .seen = seen };
                pthread_create(&th[t], NULL, foreign_main, &f[t]);
        }
        for (unsigned t = 0; t < THREADS; t++) {
                pthread_join(th[t], NULL);
                cr_expect(eq(u64, f[t].wrong_result, 0), "thread %u got a wrong result", t);
        }
        rx_smp_stop(smp);
        rx_smp_free(smp);
        for (uint64_t i = 0; i < total; i++) {
                bad_runs += runs[i] != 1;
                bad_seen += seen[i] != 1;
        }
        cr_expect(eq(u64, bad_runs, 0), "%llu requests did not run exactly once",
                  (unsigned long long)bad_runs);
        cr_expect(eq(u64, bad_seen, 0), "%llu requests did not complete exactly once",
                  (unsigned long long)bad_seen);
        free(runs);
        free(seen);
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
