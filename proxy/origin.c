/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Origin connections and their per-worker pools (origin.h).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/fetch.h"
#include "proxy/origin.h"
#include "proxy/worker.h"

struct px_pool {
        struct px_list idle;            /* most recently used first */
        unsigned n;
};

int px_origin_pools_new(struct px_worker *w)
{
        w->pools = calloc(w->sh->n_origins, sizeof(*w->pools));
        if (!w->pools)
                return -ENOMEM;
        for (unsigned i = 0; i < w->sh->n_origins; i++)
                px_list_init(&w->pools[i].idle);
        px_list_init(&w->dead_up);
        return 0;
}

void px_origin_pools_close(struct px_worker *w)
{
        for (unsigned i = 0; w->pools && i < w->sh->n_origins; i++)
                while (!px_list_is_empty(&w->pools[i].idle))
                        px_upconn_close(px_container_of(w->pools[i].idle.next, struct px_upconn,
                                                        link));
        px_upconn_reap(w);
}

void px_origin_pools_free(struct px_worker *w)
{
        if (!w->pools)
                return;
        px_origin_pools_close(w);
        free(w->pools);
        w->pools = NULL;
}

static void on_timer(struct px_timer *t)
{
        struct px_upconn *uc = px_container_of(t, struct px_upconn, timer);

        if (uc->fetch)
                px_fetch_on_timeout(uc->fetch);
        else
                px_upconn_close(uc);
}

/* A new non-blocking socket connecting to origin. */
static int connect_new(struct px_worker *w, unsigned origin, struct px_upconn **ret)
{
        const struct px_origin *o = &w->sh->origins[origin];
        struct px_upconn *uc;
        int fd, one = 1, r;

        fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        r = connect(fd, (const struct sockaddr *)&o->addr, o->addr_len);
        if (r < 0 && errno != EINPROGRESS) {
                r = -errno;
                close(fd);
                return r;
        }
        uc = calloc(1, sizeof(*uc));
        if (!uc) {
                close(fd);
                return -ENOMEM;
        }
        *uc = (struct px_upconn){ .ev.kind = PX_EV_UP, .fd = fd, .w = w, .origin = origin,
                                  .connecting = r < 0 };
        px_list_init(&uc->timer.node);
        uc->timer.fire = on_timer;
        px_list_init(&uc->link);
        r = px_worker_watch(w, fd, &uc->ev);
        if (r < 0) {
                close(fd);
                free(uc);
                return r;
        }
        *ret = uc;
        return 0;
}

int px_upconn_get(struct px_worker *w, unsigned origin, bool pooled_ok, struct px_upconn **ret)
{
        struct px_pool *p = &w->pools[origin];

        if (pooled_ok && !px_list_is_empty(&p->idle)) {
                struct px_upconn *uc = px_container_of(p->idle.next, struct px_upconn, link);

                px_list_del(&uc->link);
                px_timer_stop(&uc->timer);
                p->n--;
                uc->reused = true;
                *ret = uc;
                return 0;
        }
        return connect_new(w, origin, ret);
}

void px_upconn_put(struct px_upconn *uc)
{
        struct px_pool *p = &uc->w->pools[uc->origin];

        uc->fetch = NULL;
        if (p->n >= PX_POOL_MAX || atomic_load_explicit(&uc->w->sh->stop, memory_order_relaxed)) {
                px_upconn_close(uc);
                return;
        }
        px_list_add_head(&p->idle, &uc->link);   /* most recently used first */
        p->n++;
        px_timer_arm(uc->w, &uc->w->t_pool, &uc->timer);
}

void px_upconn_close(struct px_upconn *uc)
{
        if (!uc || uc->closed)
                return;
        if (!uc->fetch && !px_list_is_empty(&uc->link))
                uc->w->pools[uc->origin].n--;   /* it was idle in its pool */
        px_list_del(&uc->link);
        px_timer_stop(&uc->timer);
        close(uc->fd);
        uc->closed = true;
        uc->fetch = NULL;
        px_list_add_tail(&uc->w->dead_up, &uc->link);
}

void px_upconn_reap(struct px_worker *w)
{
        while (!px_list_is_empty(&w->dead_up)) {
                struct px_upconn *uc = px_container_of(w->dead_up.next, struct px_upconn, link);

                px_list_del(&uc->link);
                free(uc);
        }
}

void px_upconn_on_event(struct px_upconn *uc, uint32_t events)
{
        if (uc->closed)
                return;
        if (uc->fetch) {
                px_fetch_on_io(uc->fetch, events);
                return;
        }
        /* Idle: data or a close from the origin; either way it is done. */
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                px_upconn_close(uc);
}

int px_origins_resolve(const struct px_config *cfg, struct px_origin **ret)
{
        struct px_origin *o = calloc(cfg->n_origins, sizeof(*o));

        if (!o)
                return -ENOMEM;
        for (unsigned i = 0; i < cfg->n_origins; i++) {
                const struct px_hostport *hp = &cfg->origins[i];
                struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
                char port[8];
                int r;

                snprintf(port, sizeof(port), "%u", hp->port);
                r = getaddrinfo(hp->host, port, &hints, &ai);
                if (r != 0 || !ai) {
                        fprintf(stderr, "scree-proxy: --origin %s:%u: %s\n", hp->host, hp->port,
                                r ? gai_strerror(r) : "no address");
                        free(o);
                        return -EINVAL;
                }
                memcpy(&o[i].addr, ai->ai_addr, ai->ai_addrlen);
                o[i].addr_len = ai->ai_addrlen;
                snprintf(o[i].name, sizeof(o[i].name), "%s:%u", hp->host, hp->port);
                freeaddrinfo(ai);
        }
        *ret = o;
        return 0;
}
