/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree's main program. Until the Redis-protocol server lands (issue 4) it
 * is the reactor demo: it boots one shard per CPU (or --smp N), logs the
 * io_uring features in use, keeps every shard pinging its neighbour through
 * the cross-shard rings, and prints a status line per shard every
 * --stats-interval seconds: loop utilization, messages, ping round trip,
 * stalls. SIGINT/SIGTERM stop it cleanly. If io_uring cannot be set up it
 * exits at once with status 1 and one line naming the cause and the fix.
 *
 * Threads: the main thread parses flags, starts the shard group, then waits
 * for signals and reads shard statistics through foreign requests.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/log.h"
#include "base/time.h"
#include "reactor/loop.h"
#include "reactor/smp.h"

struct opts {
        unsigned smp;
        double stats_interval_s;
        double duration_s;      /* 0 = until a signal */
        uint64_t idle_poll_us;
};

struct ping {
        struct rx_msg m;
        struct rx_timer tick;
        uint64_t sent_ns;
        uint64_t last_rtt_ns, pings;
};

/* Per-shard demo state: allocated by main before the shards start, touched
 * only by its shard while they run, freed by main after they are joined. */
struct shard_state {
        struct ping ping;
        unsigned neighbour;
};

struct stats_req {
        struct rx_alien_req req;
        struct rx_loop_stats loop;
        struct rx_smp_stats smp;
        uint64_t last_rtt_ns, pings;
};

static void usage(FILE *f)
{
        fprintf(f, "usage: scree [options]\n"
                   "  --smp N                shards (default: one per CPU in the affinity mask)\n"
                   "  --stats-interval SECS  status line period (default 5; 0 = never)\n"
                   "  --duration SECS        exit after SECS (default: run until SIGINT/SIGTERM)\n"
                   "  --idle-poll-us US      spin this long before a shard sleeps (default 50)\n"
                   "  --log-level LEVEL      error|warn|info|debug (default info)\n"
                   "  --help                 this text\n"
                   "Until the Redis-protocol server lands, scree runs the reactor demo:\n"
                   "shards ping each other through the cross-shard rings.\n");
}

static int parse_number(const char *flag, const char *v, double max, double *ret)
{
        char *end;
        double d;

        errno = 0;
        d = strtod(v, &end);
        if (errno || end == v || *end || d < 0 || d > max) {
                log_error("invalid value '%s' for %s (a number from 0 to %.0f)", v, flag, max);
                return -EINVAL;
        }
        *ret = d;
        return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
        double d;

        *o = (struct opts){ .stats_interval_s = 5, .idle_poll_us = 50 };
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                        usage(stdout);
                        exit(0);
                }
                if (strncmp(a, "--", 2) || !v) {
                        log_error(v ? "unknown argument '%s' (see --help)"
                                    : "unknown flag or missing value: '%s' (see --help)", a);
                        return -EINVAL;
                }
                i++;
                if (!strcmp(a, "--smp")) {
                        if (parse_number(a, v, 1024, &d) < 0)
                                return -EINVAL;
                        if (d < 1) {
                                log_error("invalid value '%s' for --smp (at least 1)", v);
                                return -EINVAL;
                        }
                        o->smp = (unsigned)d;
                } else if (!strcmp(a, "--stats-interval")) {
                        if (parse_number(a, v, 86400, &o->stats_interval_s) < 0)
                                return -EINVAL;
                } else if (!strcmp(a, "--duration")) {
                        if (parse_number(a, v, 1e9, &o->duration_s) < 0)
                                return -EINVAL;
                } else if (!strcmp(a, "--idle-poll-us")) {
                        if (parse_number(a, v, 1e6, &d) < 0)
                                return -EINVAL;
                        o->idle_poll_us = (uint64_t)d;
                } else if (!strcmp(a, "--log-level")) {
                        enum log_level l = log_level_parse(v);

                        if (l == LOG_LEVEL_INVALID) {
                                log_error("invalid value '%s' for --log-level (error|warn|info|debug)", v);
                                return -EINVAL;
                        }
                        log_level = l;
                } else {
                        log_error("unknown flag '%s' (see --help)", a);
                        return -EINVAL;
                }
        }
        return 0;
}

/* ---- on the shards ---- */

static int ping_run(struct rx_loop *dst, struct rx_msg *m)
{
        (void)dst;
        (void)m;
        return 0;
}

static void ping_done(struct rx_loop *src, struct rx_msg *m)
{
        struct ping *p = container_of(m, struct ping, m);

        p->last_rtt_ns = time_now_ns() - p->sent_ns;
        p->pings++;
        rx_timer_arm_after(src, &p->tick, 100 * NS_PER_MS);
}

static void ping_tick(struct rx_loop *loop, struct rx_timer *t)
{
        struct ping *p = container_of(t, struct ping, tick);
        struct shard_state *st = rx_loop_user(loop);

        p->sent_ns = time_now_ns();
        rx_smp_submit(loop, st->neighbour, &p->m);
}

static void on_stall(struct rx_loop *loop, const char *name, uint64_t ns)
{
        (void)loop;
        log_warn("stall: '%s' ran for %.1f ms without yielding", name, (double)ns / 1e6);
}

static void shard_start(struct rx_loop *loop, void *arg)
{
        unsigned id = rx_loop_shard_id(loop), n = rx_smp_count(rx_loop_smp(loop));
        struct shard_state *st = &((struct shard_state *)arg)[id];

        st->neighbour = (id + 1) % n;
        st->ping.m = (struct rx_msg){ .run = ping_run, .done = ping_done, .name = "demo:ping" };
        rx_timer_init(&st->ping.tick, ping_tick, "demo:ping_tick");
        rx_loop_set_user(loop, st);
        rx_timer_arm_after(loop, &st->ping.tick, 100 * NS_PER_MS);
}

static void stats_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct stats_req *s = container_of(req, struct stats_req, req);
        struct shard_state *st = rx_loop_user(loop);

        s->loop = *rx_loop_stats(loop);
        s->smp = *rx_smp_stats(loop);
        s->last_rtt_ns = st ? st->ping.last_rtt_ns : 0;
        s->pings = st ? st->ping.pings : 0;
        rx_alien_complete(req, 0);
}

static void features_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        char *buf = req->ctx;

        rx_uring_features_format(rx_loop_features(loop), buf, 256);
        rx_alien_complete(req, 0);
}

/* ---- on the main thread ---- */

static void print_stats(struct rx_smp *smp, struct stats_req *prev)
{
        for (unsigned i = 0; i < rx_smp_count(smp); i++) {
                struct stats_req s = { .req = { .run = stats_run } };
                double busy, idle;

                if (rx_smp_alien_submit(smp, i, &s.req) < 0)
                        return;
                rx_alien_wait(&s.req);
                busy = (double)(s.loop.busy_ns - prev[i].loop.busy_ns);
                idle = (double)(s.loop.idle_ns - prev[i].loop.idle_ns);
                log_info("shard %u: utilization %.1f%%, iterations %llu, sleeps %llu, msgs sent %llu "
                         "received %llu, ping rtt %.1f us, stalls %llu",
                         i, busy + idle > 0 ? 100.0 * busy / (busy + idle) : 0.0,
                         (unsigned long long)s.loop.iterations, (unsigned long long)s.loop.sleeps,
                         (unsigned long long)s.smp.sent, (unsigned long long)s.smp.received,
                         (double)s.last_rtt_ns / 1e3, (unsigned long long)s.loop.stalls);
                prev[i] = s;
        }
}

static int wait_for_signal(const sigset_t *set, const struct opts *o, struct rx_smp *smp)
{
        uint64_t start = time_now_ns(), next_stats = start;
        struct stats_req *prev = calloc(rx_smp_count(smp), sizeof(*prev));
        int sig = 0;

        if (!prev)
                return -ENOMEM;
        for (;;) {
                uint64_t now = time_now_ns(), wait_ns = 200 * NS_PER_MS;
                struct timespec ts;

                if (o->duration_s > 0 && now - start >= (uint64_t)(o->duration_s * 1e9))
                        break;
                if (o->stats_interval_s > 0 && now >= next_stats) {
                        print_stats(smp, prev);
                        next_stats = now + (uint64_t)(o->stats_interval_s * 1e9);
                }
                ts = time_ns_to_timespec(wait_ns);
                sig = sigtimedwait(set, NULL, &ts);
                if (sig > 0) {
                        log_info("received %s, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
                        break;
                }
        }
        free(prev);
        return 0;
}

int main(int argc, char **argv)
{
        struct rx_smp_opts so = { .on_start = shard_start };
        char features[256] = "";
        struct rx_alien_req fr = { .run = features_run, .ctx = features };
        struct shard_state *states;
        struct rx_smp *smp;
        sigset_t set;
        struct opts o;
        int r;

        if (parse_args(argc, argv, &o) < 0)
                return 2;
        /* Block the stop signals before any shard thread exists, so that they
         * inherit the mask and only the main thread takes them. */
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        states = calloc(o.smp ? o.smp : CPU_SETSIZE, sizeof(*states));
        if (!states)
                return 1;
        so.arg = states;
        so.n_shards = o.smp;
        so.loop.idle_poll_ns = o.idle_poll_us ? o.idle_poll_us * NS_PER_US : 1;
        so.loop.on_stall = on_stall;
        r = rx_smp_new(&so, &smp);
        if (r < 0) {
                log_error("cannot start: %s: %s", scree_strerror(r), rx_loop_setup_hint(r));
                free(states);
                return 1;
        }
        if (rx_smp_alien_submit(smp, 0, &fr) == 0)
                rx_alien_wait(&fr);
        log_info("scree %s: %u shard(s), reactor demo (the server comes with issue 4)", SCREE_VERSION,
                 rx_smp_count(smp));
        log_info("%s", features);
        wait_for_signal(&set, &o, smp);
        rx_smp_stop(smp);
        rx_smp_free(smp);
        free(states);
        log_info("stopped cleanly");
        return 0;
}
