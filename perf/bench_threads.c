/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread-per-worker runner of scree-bench's peer engines; see
 * bench_threads.h. A worker thread paces its ops as the scree engine's
 * shards do (closed loop, or open loop from each op's due time) and
 * records each one from its due time to its return; readwhilewriting's
 * writer thread puts flat out (or at --write-rate, in bursts) until its
 * worker is done, unmeasured.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/compiler.h"
#include "base/time.h"
#include "perf/bench_threads.h"

/* Open loop: an op due sooner than this is waited for by spinning. */
#define PACE_SPIN_NS (150 * NS_PER_US)

struct bench_thread {
        struct bench_threads *t;
        unsigned id;
        struct bench_gen *bg_gen;       /* readwhilewriting's writer's; made on first use */
        pthread_t th, bg_th;
        bool bg, started, bg_started;   /* bg: a writer this run */
        struct bench_pace pace;
        uint64_t bg_ops, bg_user_bytes; /* the writer's, merged at the end */
        int bg_err;
        _Atomic bool done;              /* the worker's ops are over */
        _Atomic bool bg_going;          /* the writer made its first write (or failed) */
};

struct bench_threads *bench_threads_of(struct bench_engine *e)
{
        return container_of(e, struct bench_threads, e);
}

/* Waits until due (open loop): sleeps, then spins the last stretch. */
static uint64_t wait_until(uint64_t due, uint64_t now)
{
        if (due > now + PACE_SPIN_NS) {
                struct timespec ts = time_ns_to_timespec(due - PACE_SPIN_NS);

                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        }
        while ((now = time_now_ns()) < due)
                ;
        return now;
}

/* Sleeps until due (the writer's pace is coarse: no spinning). */
static uint64_t sleep_until(uint64_t due)
{
        struct timespec ts = time_ns_to_timespec(due);

        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        return time_now_ns();
}

/* A worker with o->inflight ops in flight (submit/reap), closed loop. */
static void worker_async(struct bench_thread *k)
{
        struct bench_threads *t = k->t;
        struct bench_engine *e = &t->e;
        struct bench_result *res = e->res[k->id];
        uint32_t window = e->o->inflight, in_flight = 0, n_free = window;
        uint64_t *due = calloc(window, sizeof(*due));
        enum bench_opc *cls = calloc(window, sizeof(*cls));
        uint32_t *free_slots = calloc(window, sizeof(*free_slots));
        uint32_t *done = calloc(window, sizeof(*done));
        struct bench_op_desc d = { .cls = BENCH_OPC_READ };
        uint64_t seq = 0, now = time_now_ns();

        if (!due || !cls || !free_slots || !done)
                bench_result_fail(res, k->id, t->w, -ENOMEM);
        for (uint32_t i = 0; i < window; i++)
                if (free_slots)
                        free_slots[i] = i;
        while (!res->err) {
                while (n_free && seq < k->pace.target && now < k->pace.deadline_ns && !res->err) {
                        uint32_t slot = free_slots[--n_free];
                        int ret = bench_gen_next(e->gen[k->id], seq++, &d);

                        due[slot] = now;
                        cls[slot] = d.cls;
                        if (ret == 0)
                                ret = t->tops->submit(e, k->id, &d, slot);
                        bench_result_fail(res, k->id, t->w, ret);
                        if (ret == 0)
                                in_flight++;
                        else
                                free_slots[n_free++] = slot;
                }
                if (in_flight == 0)
                        break;
                int n = t->tops->reap(e, k->id, done, window, res);

                if (n < 0) {
                        bench_result_fail(res, k->id, t->w, n);
                        break;
                }
                now = time_now_ns();
                for (int i = 0; i < n; i++) {
                        bench_result_fail(res, k->id, t->w,
                                          bench_result_add(res, cls[done[i]], due[done[i]], now,
                                                           e->o->timeseries));
                        free_slots[n_free++] = done[i];
                }
                in_flight -= (uint32_t)n;
        }
        /* An error leaves ops in flight: wait for them. */
        while (in_flight) {
                int n = t->tops->reap(e, k->id, done, window, res);

                if (n <= 0)
                        break;
                in_flight -= (uint32_t)n;
        }
        free(due);
        free(cls);
        free(free_slots);
        free(done);
}

static void *worker_main(void *arg)
{
        struct bench_thread *k = arg;
        struct bench_threads *t = k->t;
        struct bench_engine *e = &t->e;
        struct bench_result *res = e->res[k->id];
        struct bench_op_desc d = { .cls = BENCH_OPC_READ };
        uint64_t now = time_now_ns();

        /* readwhilewriting reads while the writer writes: a reader done
         * before the writer's thread ran its first write measured plain
         * reads (and, on a fast machine, a run with no write at all). */
        while (k->bg && !atomic_load_explicit(&k->bg_going, memory_order_acquire) &&
               time_now_ns() < k->pace.deadline_ns)
                sched_yield();
        now = time_now_ns();
        if (t->tops->submit && e->o->inflight > 1 && !k->pace.interval_ns) {
                worker_async(k);
                res->end_ns = time_now_ns();
                atomic_store_explicit(&k->done, true, memory_order_release);
                return NULL;
        }
        if (k->pace.interval_ns)
                bench_thread_precise_timers();
        for (uint64_t seq = 0; seq < k->pace.target && !res->err && now < k->pace.deadline_ns; seq++) {
                uint64_t due = bench_pace_due(&k->pace, seq, now);
                int ret;

                if (due > now)
                        now = wait_until(due, now);
                ret = bench_gen_next(e->gen[k->id], seq, &d);
                if (ret == 0)
                        ret = t->tops->op(e, k->id, &d, res);
                bench_result_fail(res, k->id, t->w, ret);
                now = time_now_ns();
                bench_result_fail(res, k->id, t->w,
                                  bench_result_add(res, d.cls, due, now, e->o->timeseries));
        }
        res->end_ns = time_now_ns();
        atomic_store_explicit(&k->done, true, memory_order_release);
        return NULL;
}

/* readwhilewriting's writer: puts until its worker is done. */
static void *writer_main(void *arg)
{
        struct bench_thread *k = arg;
        struct bench_op_desc d;
        uint64_t now = time_now_ns();

        if (k->pace.bg_interval_ns)
                bench_thread_precise_timers();
        while (!atomic_load_explicit(&k->done, memory_order_acquire) && !k->bg_err) {
                uint64_t due = k->pace.bg_interval_ns ? k->pace.t0_ns + k->bg_ops * k->pace.bg_interval_ns
                                                      : now;

                if (due > now)  /* ahead: catch up in a burst, as scree's shard does */
                        now = sleep_until(bench_bg_wake(due, now));
                bench_gen_write(k->bg_gen, &d);
                k->bg_err = k->t->tops->write(&k->t->e, k->id, &d, &k->bg_user_bytes);
                k->bg_ops++;
                atomic_store_explicit(&k->bg_going, true, memory_order_release);
                now = time_now_ns();
        }
        return NULL;
}

/* Sets worker i up for workload w; 0 or -ENOMEM (its writer's generator). */
static int worker_begin(struct bench_threads *t, unsigned i, const struct bench_dists *d, uint64_t t0_ns)
{
        struct bench_engine *e = &t->e;
        struct bench_thread *k = &t->wk[i];

        k->bg = t->w == BENCH_READWHILEWRITING && bench_gen_keys(e->gen[i]) > 0;
        if (k->bg && !k->bg_gen && !(k->bg_gen = bench_gen_new(&e->o->k, i)))
                return -ENOMEM;
        bench_result_begin(e->res[i], t0_ns);
        bench_gen_start(e->gen[i], t->w, d);
        bench_pace_init(&k->pace, e->o, t->w, bench_gen_keys(e->gen[i]), t0_ns);
        k->bg_ops = k->bg_user_bytes = 0;
        k->bg_err = 0;
        atomic_store(&k->done, false);
        atomic_store(&k->bg_going, false);
        return 0;
}

int bench_threads_run_start(struct bench_engine *e, enum bench_workload w, const struct bench_dists *d,
                            uint64_t t0_ns)
{
        struct bench_threads *t = bench_threads_of(e);
        int ret = 0;

        t->w = w;
        for (unsigned i = 0; i < e->n && ret == 0; i++)
                ret = worker_begin(t, i, d, t0_ns);
        if (ret < 0)
                return ret;
        for (unsigned i = 0; i < e->n && ret == 0; i++) {
                struct bench_thread *k = &t->wk[i];

                ret = -pthread_create(&k->th, NULL, worker_main, k);
                k->started = ret == 0;
                if (ret == 0 && k->bg) {
                        ret = -pthread_create(&k->bg_th, NULL, writer_main, k);
                        k->bg_started = ret == 0;
                }
        }
        if (ret < 0) {
                for (unsigned i = 0; i < e->n; i++)   /* end what started */
                        e->res[i]->err = ret;
                bench_threads_run_wait(e);
        }
        return ret;
}

bool bench_threads_run_is_done(struct bench_engine *e)
{
        struct bench_threads *t = bench_threads_of(e);

        for (unsigned i = 0; i < e->n; i++)
                if (t->wk[i].started && !atomic_load_explicit(&t->wk[i].done, memory_order_acquire))
                        return false;
        return true;
}

int bench_threads_run_wait(struct bench_engine *e)
{
        struct bench_threads *t = bench_threads_of(e);
        int first = 0;

        for (unsigned i = 0; i < e->n; i++) {
                struct bench_thread *k = &t->wk[i];
                struct bench_result *res = e->res[i];

                if (k->started)
                        pthread_join(k->th, NULL);
                if (k->bg_started)
                        pthread_join(k->bg_th, NULL);
                k->started = k->bg_started = false;
                res->bg_ops = k->bg_ops;
                res->user_bytes += k->bg_user_bytes;
                bench_result_fail(res, i, t->w, k->bg_err);
                if (res->err && !first)
                        first = res->err;
        }
        return first;
}

int bench_threads_init(struct bench_threads *t, const char *name, const struct bench_engine_ops *ops,
                       const struct bench_threads_ops *tops, const struct bench_opts *o)
{
        int err;

        t->e = (struct bench_engine){ .ops = ops, .name = name, .o = o, .n = o->k.workers };
        t->tops = tops;
        err = bench_engine_workers_new(&t->e);
        t->wk = calloc(t->e.n, sizeof(*t->wk));
        if (err == 0 && !t->wk)
                err = -ENOMEM;
        for (unsigned i = 0; err == 0 && i < t->e.n; i++) {
                t->wk[i].t = t;
                t->wk[i].id = i;
        }
        return err;
}

void bench_threads_fini(struct bench_threads *t)
{
        for (unsigned i = 0; t->wk && i < t->e.n; i++)
                bench_gen_free(t->wk[i].bg_gen);
        free(t->wk);
        t->wk = NULL;
        bench_engine_workers_free(&t->e);
}
