/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connections to the origins (docs/proxy.md, "Origins"): each worker
 * keeps, per origin, a pool of idle keep-alive connections (most recently
 * used first, at most PX_POOL_MAX, closed after PX_POOL_IDLE_NS idle or
 * when the origin closes one) and opens new ones without blocking. A
 * connection in use belongs to one fetch (fetch.h), which gets its
 * events. A closed connection is freed at the end of the loop's pass, as
 * events of the same pass may still name it. Worker thread only.
 */
#ifndef SCREE_PROXY_ORIGIN_H
#define SCREE_PROXY_ORIGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy/proxy_int.h"

#define PX_POOL_MAX 256
#define PX_POOL_IDLE_NS (30ull * 1000000000)

struct px_upconn {
        struct px_ev ev;                /* PX_EV_UP */
        int fd;
        struct px_worker *w;
        unsigned origin;
        struct px_timer timer;          /* idle in the pool, or its fetch's deadline */
        struct px_list link;            /* its pool's idle list; w->dead_up once closed */
        struct px_fetch *fetch;         /* its user; NULL when idle */
        bool connecting;                /* connect() not finished */
        bool reused;                    /* it served a request before */
        bool closed;
        bool rdhup;                     /* the origin shut its side: read to the end */
};

/* Makes w's pools (one per origin). 0 or -ENOMEM. */
int px_origin_pools_new(struct px_worker *w);

/* Closes every idle connection of w's pools. */
void px_origin_pools_close(struct px_worker *w);

/* Frees the pools (closed first). Accepts a worker without pools. */
void px_origin_pools_free(struct px_worker *w);

/*
 * A connection to origin: an idle one from the pool if pooled_ok (reused
 * set), else a new one whose connect is under way (connecting set, or
 * already done). 0 and *ret (for the caller's fetch to set ->fetch), or
 * -errno (the connect failed at once).
 */
int px_upconn_get(struct px_worker *w, unsigned origin, bool pooled_ok, struct px_upconn **ret);

/* Puts uc, done with a response and reusable, back into its pool (or
 * closes it if the pool is full). */
void px_upconn_put(struct px_upconn *uc);

/* Closes uc (freed at the end of the pass). Accepts NULL. */
void px_upconn_close(struct px_upconn *uc);

/* Frees connections closed during this pass. */
void px_upconn_reap(struct px_worker *w);

/* An epoll event for uc: its fetch's, or on an idle one, the origin
 * closing it. */
void px_upconn_on_event(struct px_upconn *uc, uint32_t events);

/* Resolves every --origin into sh-ready addresses: 0 and *ret (n
 * entries, caller frees), or -EINVAL with a message on stderr. */
int px_origins_resolve(const struct px_config *cfg, struct px_origin **ret);

#endif
