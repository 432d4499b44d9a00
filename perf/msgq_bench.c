/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cross-shard messaging benchmark: two shards pinned to two CPUs.
 *
 *   oneway: shard 0 keeps a window of messages in flight to shard 1 (each
 *           handled there and returned); prints messages/s handled by shard 1.
 *   rtt:    one message at a time; prints round-trip latency percentiles.
 *   spsc:   the bare ring between two pinned threads, without the loop.
 *
 * By default both shards busy-poll (--poll); --sleep lets them sleep when idle,
 * which shows the cost of the eventfd wakeup. Bounded by --seconds.
 * Usage: msgq_bench [--mode oneway|rtt|spsc|all] [--seconds S] [--window W] [--sleep]
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/time.h"
#include "reactor/loop.h"
#include "reactor/msgq.h"
#include "reactor/smp.h"

#define MAX_SAMPLES (4u << 20)

struct bench_msg {
        struct rx_msg m;
        uint64_t sent_ns;
};

static struct {
        double seconds;
        unsigned window;
        bool sleep;
        /* run state, touched by shard 0 only, read after join */
        struct bench_msg *msgs;
        uint64_t deadline_ns, start_ns, end_ns;
        uint64_t completed, in_flight;
        uint64_t *samples;
        uint64_t n_samples;
        bool rtt;
} B;

static int bench_run(struct rx_loop *dst, struct rx_msg *m)
{
        (void)dst;
        (void)m;
        return 0;
}

static void bench_done(struct rx_loop *src, struct rx_msg *m)
{
        struct bench_msg *bm = (struct bench_msg *)m;
        uint64_t now = B.rtt ? time_now_ns() : 0;

        B.completed++;
        if (B.rtt && B.n_samples < MAX_SAMPLES)
                B.samples[B.n_samples++] = now - bm->sent_ns;
        /* Check the clock every 4096 completions in oneway mode. */
        if (B.rtt || (B.completed & 4095) == 0)
                B.end_ns = time_now_ns();
        if (B.end_ns < B.deadline_ns) {
                bm->sent_ns = B.rtt ? B.end_ns : 0;
                rx_smp_submit(src, 1, &bm->m);
                return;
        }
        if (--B.in_flight == 0)
                rx_smp_stop(rx_loop_smp(src));
}

static void bench_start(struct rx_loop *loop, void *arg)
{
        (void)arg;
        if (rx_loop_shard_id(loop) != 0)
                return;
        B.start_ns = B.end_ns = time_now_ns();
        B.deadline_ns = B.start_ns + (uint64_t)(B.seconds * 1e9);
        for (unsigned i = 0; i < B.window; i++) {
                B.msgs[i] = (struct bench_msg){
                        .m = { .run = bench_run, .done = bench_done, .name = "bench" },
                        .sent_ns = time_now_ns() };
                rx_smp_submit(loop, 1, &B.msgs[i].m);
        }
        B.in_flight = B.window;
}

static int run_smp(bool rtt)
{
        struct rx_smp_opts o = { .n_shards = 2, .on_start = bench_start,
                                 .loop = { .never_sleep = !B.sleep } };
        struct rx_smp *smp;
        int r;

        B.rtt = rtt;
        B.completed = B.n_samples = 0;
        r = rx_smp_new(&o, &smp);
        if (r < 0) {
                fprintf(stderr, "msgq_bench: cannot start shards: %s (%s)\n", scree_strerror(r),
                        rx_loop_setup_hint(r));
                return r;
        }
        rx_smp_free(smp);
        return 0;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, uint64_t n, double p)
{
        uint64_t i = (uint64_t)(p * (double)(n - 1));

        return n ? (double)v[i] / 1000.0 : 0;
}

static int bench_oneway(void)
{
        unsigned w = B.window;
        int r = run_smp(false);
        double secs;

        if (r < 0)
                return r;
        secs = (double)(B.end_ns - B.start_ns) / 1e9;
        printf("msgq oneway  shards=2 window=%u %s  msgs=%llu  %.2f M msgs/s\n", w,
               B.sleep ? "sleep" : "poll", (unsigned long long)B.completed,
               (double)B.completed / secs / 1e6);
        return 0;
}

static int bench_rtt(void)
{
        unsigned saved = B.window;
        int r;

        B.window = 1;
        r = run_smp(true);
        B.window = saved;
        if (r < 0)
                return r;
        qsort(B.samples, B.n_samples, sizeof(uint64_t), cmp_u64);
        printf("msgq rtt     shards=2 %s  samples=%llu  p50=%.2f us  p99=%.2f us  p999=%.2f us\n",
               B.sleep ? "sleep" : "poll", (unsigned long long)B.n_samples,
               pct(B.samples, B.n_samples, 0.50), pct(B.samples, B.n_samples, 0.99),
               pct(B.samples, B.n_samples, 0.999));
        return 0;
}

/* ---- bare ring between two pinned threads ---- */

static struct rx_spsc ring;
static _Atomic bool ring_stop;

static cpu_set_t all_cpus;      /* the process mask, read before any pinning */

static void pin_self(int nth)
{
        cpu_set_t all = all_cpus, one;
        int seen = 0;

        CPU_ZERO(&one);
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &all) && seen++ == nth)
                        CPU_SET(c, &one);
        if (CPU_COUNT(&one))
                pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

static void *ring_producer(void *arg)
{
        uintptr_t i = 1;

        (void)arg;
        pin_self(0);
        while (!atomic_load_explicit(&ring_stop, memory_order_relaxed)) {
                for (int k = 0; k < 16 && rx_spsc_push(&ring, (void *)i) == 0; k++)
                        i++;
                rx_spsc_publish(&ring);
        }
        return NULL;
}

static int bench_spsc(void)
{
        pthread_t th;
        void *out[64];
        uint64_t got = 0, start, now;

        rx_spsc_init(&ring, 1024);
        pin_self(1);
        pthread_create(&th, NULL, ring_producer, NULL);
        start = now = time_now_ns();
        while (now - start < (uint64_t)(B.seconds * 1e9)) {
                for (int k = 0; k < 1024; k++)
                        got += rx_spsc_pop_n(&ring, out, 64);
                now = time_now_ns();
        }
        atomic_store(&ring_stop, true);
        pthread_join(th, NULL);
        rx_spsc_fini(&ring);
        printf("spsc ring    2 threads  items=%llu  %.2f M items/s\n", (unsigned long long)got,
               (double)got / ((double)(now - start) / 1e9) / 1e6);
        return 0;
}

int main(int argc, char **argv)
{
        const char *mode = "all";
        int r = 0;

        sched_getaffinity(0, sizeof(all_cpus), &all_cpus);
        B.seconds = 2;
        B.window = 4096;
        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--mode") && i + 1 < argc)
                        mode = argv[++i];
                else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
                        B.seconds = atof(argv[++i]);
                else if (!strcmp(argv[i], "--window") && i + 1 < argc)
                        B.window = (unsigned)atoi(argv[++i]);
                else if (!strcmp(argv[i], "--sleep"))
                        B.sleep = true;
                else if (!strcmp(argv[i], "--poll"))
                        B.sleep = false;
                else {
                        fprintf(stderr, "usage: msgq_bench [--mode oneway|rtt|spsc|all] "
                                        "[--seconds S] [--window W] [--sleep|--poll]\n");
                        return 2;
                }
        }
        if (B.seconds <= 0 || B.seconds > 600 || B.window == 0) {
                fprintf(stderr, "msgq_bench: --seconds must be in (0, 600] and --window > 0\n");
                return 2;
        }
        B.msgs = calloc(B.window, sizeof(*B.msgs));
        B.samples = malloc(MAX_SAMPLES * sizeof(uint64_t));
        if (!B.msgs || !B.samples)
                return 1;
        if (!strcmp(mode, "oneway") || !strcmp(mode, "all"))
                r = r ? r : bench_oneway();
        if (!strcmp(mode, "rtt") || !strcmp(mode, "all"))
                r = r ? r : bench_rtt();
        if (!strcmp(mode, "spsc") || !strcmp(mode, "all"))
                r = r ? r : bench_spsc();
        free(B.msgs);
        free(B.samples);
        return r < 0 ? 1 : 0;
}
