/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A worker's thread and loop (worker.h).
 *
 * Timers: every timer of a list has the same duration, so appending on
 * arm keeps each list in deadline order; a pass fires the due heads and
 * the loop sleeps until the nearest head (at most a second).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "proxy/conn.h"
#include "proxy/fetch.h"
#include "proxy/flight.h"
#include "proxy/origin.h"
#include "proxy/proxy_int.h"
#include "proxy/txn.h"
#include "proxy/worker.h"

#define EVENTS_PER_WAIT 128
#define COMPLETIONS_PER_POLL 64

static uint64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t px_wall_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void px_timer_arm(struct px_worker *w, struct px_tlist *l, struct px_timer *t)
{
        px_list_del(&t->node);
        t->deadline_ns = w->now_ns + l->timeout_ns;
        px_list_add_tail(&l->head, &t->node);
}

void px_timer_stop(struct px_timer *t)
{
        px_list_del(&t->node);
}

static struct px_tlist *tlists(struct px_worker *w, unsigned i)
{
        struct px_tlist *all[] = { &w->t_header, &w->t_idle, &w->t_linger, &w->t_origin,
                                   &w->t_pool, &w->t_accept };

        return i < sizeof(all) / sizeof(all[0]) ? all[i] : NULL;
}

static void timers_run(struct px_worker *w)
{
        struct px_tlist *l;

        for (unsigned i = 0; (l = tlists(w, i)); i++)
                while (!px_list_is_empty(&l->head)) {
                        struct px_timer *t = px_container_of(l->head.next, struct px_timer, node);

                        if (t->deadline_ns > w->now_ns)
                                break;
                        px_list_del(&t->node);
                        t->fire(t);
                }
}

/* Milliseconds to the nearest deadline, at most 1000. */
static int next_timeout_ms(struct px_worker *w)
{
        uint64_t next = w->now_ns + 1000000000u;
        struct px_tlist *l;

        if (!px_list_is_empty(&w->flushq) || atomic_load_explicit(&w->inbox, memory_order_relaxed))
                return 0;       /* work queued after this pass's turn for it */
        for (unsigned i = 0; (l = tlists(w, i)); i++)
                if (!px_list_is_empty(&l->head)) {
                        struct px_timer *t = px_container_of(l->head.next, struct px_timer, node);

                        if (t->deadline_ns < next)
                                next = t->deadline_ns;
                }
        if (next <= w->now_ns)
                return 0;
        return (int)((next - w->now_ns + 999999) / 1000000);
}

int px_worker_watch(struct px_worker *w, int fd, struct px_ev *ev)
{
        struct epoll_event e = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                                 .data.ptr = ev };

        return epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &e) < 0 ? -errno : 0;
}

static int watch_level(struct px_worker *w, int fd, struct px_ev *ev)
{
        struct epoll_event e = { .events = EPOLLIN, .data.ptr = ev };

        return epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &e) < 0 ? -errno : 0;
}

void px_worker_wake(struct px_worker *w)
{
        uint64_t one = 1;

        (void)!write(w->wake_fd, &one, sizeof(one));
}

void px_worker_notify(struct px_worker *self, struct px_worker *to, struct px_wait *wt)
{
        struct px_wait *old = atomic_load_explicit(&to->inbox, memory_order_relaxed);

        do
                wt->next = old;
        while (!atomic_compare_exchange_weak_explicit(&to->inbox, &old, wt, memory_order_release,
                                                      memory_order_relaxed));
        if (!old && self != to)
                px_worker_wake(to);
}

/* Out of descriptors: stop accepting for a second (the listening socket
 * would otherwise wake every pass). */
static void accept_pause(struct px_worker *w, int lfd)
{
        if (!w->accept_paused) {
                epoll_ctl(w->epfd, EPOLL_CTL_DEL, lfd, NULL);
                w->accept_paused = true;
                px_timer_arm(w, &w->t_accept, &w->accept_timer);
        }
}

static void accept_resume(struct px_timer *t)
{
        struct px_worker *w = px_container_of(t, struct px_worker, accept_timer);

        w->accept_paused = false;
        (void)watch_level(w, w->lfd, &w->listen_ev);
        if (w->mfd >= 0)
                (void)watch_level(w, w->mfd, &w->metrics_ev);
}

static void accept_all(struct px_worker *w, int lfd, bool metrics)
{
        for (int i = 0; i < 64; i++) {
                struct sockaddr_storage ss;
                socklen_t sl = sizeof(ss);
                int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
                int one = 1;

                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
                            errno == ENOBUFS) {
                                fprintf(stderr, "scree-proxy: accept: %s (pausing accepts "
                                        "for a second)\n", strerror(errno));
                                accept_pause(w, w->lfd);
                                if (w->mfd >= 0)
                                        epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->mfd, NULL);
                        }
                        return;
                }
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                px_conn_new(w, fd, &ss, metrics);
        }
}

static void drain_cq(struct px_worker *w)
{
        scree_completion c[COMPLETIONS_PER_POLL];
        int n;

        do {
                n = scree_cq_poll(w->cq, c, COMPLETIONS_PER_POLL);
                for (int i = 0; i < n; i++)
                        px_txn_on_cq(w, &c[i]);
        } while (n == COMPLETIONS_PER_POLL);
}

/* Takes the inbox and handles it oldest first. */
static void drain_inbox(struct px_worker *w)
{
        struct px_wait *l, *rev = NULL;

        if (!atomic_load_explicit(&w->inbox, memory_order_relaxed))
                return;
        l = atomic_exchange_explicit(&w->inbox, NULL, memory_order_acquire);
        while (l) {
                struct px_wait *next = l->next;

                l->next = rev;
                rev = l;
                l = next;
        }
        while (rev) {
                struct px_wait *next = rev->next;

                px_txn_on_flight(w, rev);
                rev = next;
        }
}

static void dispatch(struct px_worker *w, struct epoll_event *e)
{
        struct px_ev *ev = e->data.ptr;
        uint64_t v;

        switch (ev->kind) {
        case PX_EV_LISTEN:
                accept_all(w, w->lfd, false);
                break;
        case PX_EV_METRICS:
                accept_all(w, w->mfd, true);
                break;
        case PX_EV_CONN:
                px_conn_on_event(px_container_of(ev, struct px_conn, ev), e->events);
                break;
        case PX_EV_UP:
                px_upconn_on_event(px_container_of(ev, struct px_upconn, ev), e->events);
                break;
        case PX_EV_WAKE:
                (void)!read(w->wake_fd, &v, sizeof(v));
                break;
        case PX_EV_CQ:
                break;          /* drained after every pass */
        }
}

/* One pass of the loop. */
static void pass(struct px_worker *w)
{
        struct epoll_event ev[EVENTS_PER_WAIT];
        int n = epoll_wait(w->epfd, ev, EVENTS_PER_WAIT, next_timeout_ms(w));

        w->now_ns = mono_ns();
        for (int i = 0; i < n; i++)
                dispatch(w, &ev[i]);
        drain_cq(w);
        drain_inbox(w);
        px_conn_flush_all(w);
        timers_run(w);
        px_conn_reap(w);
}

/* Ends what the worker holds: connections, fetches, then the scree
 * operations in flight (their completions free what they carry). */
static void wind_down(struct px_worker *w)
{
        scree_completion c[COMPLETIONS_PER_POLL];

        px_conn_close_all(w);
        px_fetch_abort_all(w);
        px_conn_reap(w);
        while (scree_cq_pending(w->cq) > 0) {
                int n = scree_cq_wait(w->cq, c, COMPLETIONS_PER_POLL, 1000);

                for (int i = 0; i < n; i++)
                        px_txn_on_cq(w, &c[i]);
        }
        px_origin_pools_close(w);
}

static void *run(void *arg)
{
        struct px_worker *w = arg;

        w->now_ns = mono_ns();
        while (!atomic_load_explicit(&w->sh->stop, memory_order_relaxed))
                pass(w);
        wind_down(w);
        return NULL;
}

static void tlist_init(struct px_tlist *l, uint64_t timeout_ns)
{
        px_list_init(&l->head);
        l->timeout_ns = timeout_ns;
}

static int loop_setup(struct px_worker *w)
{
        int r;

        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (w->epfd < 0 || w->wake_fd < 0)
                return -errno;
        r = scree_cq_new(w->sh->db, &w->cq);
        if (r < 0)
                return r;
        w->listen_ev.kind = PX_EV_LISTEN;
        w->metrics_ev.kind = PX_EV_METRICS;
        w->wake_ev.kind = PX_EV_WAKE;
        w->cq_ev.kind = PX_EV_CQ;
        if ((r = watch_level(w, w->lfd, &w->listen_ev)) < 0 ||
            (w->mfd >= 0 && (r = watch_level(w, w->mfd, &w->metrics_ev)) < 0) ||
            (r = watch_level(w, w->wake_fd, &w->wake_ev)) < 0 ||
            (r = watch_level(w, scree_cq_fd(w->cq), &w->cq_ev)) < 0)
                return r;
        return 0;
}

int px_worker_new(struct px_shared *sh, unsigned id, int lfd, int mfd, struct px_worker **ret)
{
        const struct px_config *cfg = sh->cfg;
        struct px_worker *w = calloc(1, sizeof(*w));
        int r;

        if (!w) {
                close(lfd);
                if (mfd >= 0)
                        close(mfd);
                return -ENOMEM;
        }
        w->id = id;
        w->sh = sh;
        w->lfd = lfd;
        w->mfd = mfd;
        w->epfd = w->wake_fd = -1;
        tlist_init(&w->t_header, cfg->header_timeout_ns);
        tlist_init(&w->t_idle, cfg->idle_timeout_ns);
        tlist_init(&w->t_linger, PX_LINGER_NS);
        tlist_init(&w->t_origin, cfg->origin_timeout_ns);
        tlist_init(&w->t_pool, PX_POOL_IDLE_NS);
        tlist_init(&w->t_accept, 1000000000u);
        px_list_init(&w->accept_timer.node);
        w->accept_timer.fire = accept_resume;
        px_list_init(&w->conns);
        px_list_init(&w->flushq);
        px_list_init(&w->dead);
        px_list_init(&w->fetches);
        px_list_init(&w->dead_fetches);
        px_list_init(&w->dead_up);
        r = px_origin_pools_new(w);
        if (r == 0)
                r = loop_setup(w);
        if (r < 0) {
                px_worker_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

int px_worker_start(struct px_worker *w)
{
        return -pthread_create(&w->thread, NULL, run, w);
}

void px_worker_join(struct px_worker *w)
{
        pthread_join(w->thread, NULL);
}

void px_worker_free(struct px_worker *w)
{
        if (!w)
                return;
        drain_inbox(w);         /* results pushed after it stopped: px_txn_on_flight frees them */
        scree_cq_free(w->cq);
        px_origin_pools_free(w);
        px_txn_cache_free(w);
        if (w->epfd >= 0)
                close(w->epfd);
        if (w->wake_fd >= 0)
                close(w->wake_fd);
        if (w->lfd >= 0)
                close(w->lfd);
        if (w->mfd >= 0)
                close(w->mfd);
        free(w);
}
