/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-proxy's counters and their Prometheus text (docs/proxy.md,
 * "Metrics"). Each worker owns a struct px_stats and is its only writer:
 * a counter moves with a relaxed load and store (no locked instruction on
 * the request path), and the thread that renders /metrics reads every
 * worker's with relaxed loads and sums them.
 */
#ifndef SCREE_PROXY_METRICS_H
#define SCREE_PROXY_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

struct px_buf;
struct px_shared;

/* Origin latency buckets (upper bounds, seconds) of the histogram. */
#define PX_LAT_BUCKETS 12

struct px_stats {
        _Atomic uint64_t requests;      /* requests parsed */
        _Atomic uint64_t hits;          /* answered from the cache */
        _Atomic uint64_t misses;        /* cacheable, fetched from the origin */
        _Atomic uint64_t bypasses;      /* not cacheable requests (method, headers) */
        _Atomic uint64_t collapsed;     /* answered from another request's fetch */
        _Atomic uint64_t waiting;       /* gauge: requests waiting for such a fetch */
        _Atomic uint64_t purges, purged; /* PURGE requests; objects they deleted */
        _Atomic uint64_t bytes_cache;   /* response bytes from the cache */
        _Atomic uint64_t bytes_origin;  /* response bytes fetched from the origin */
        _Atomic uint64_t origin_requests, origin_errors;
        _Atomic uint64_t stores, store_errors, not_stored;
        _Atomic uint64_t cache_errors;  /* a cache read failed (answered from the origin) */
        _Atomic uint64_t bad_requests;  /* 400, 413, 431 */
        _Atomic uint64_t conns;         /* gauge: client connections open */
        _Atomic uint64_t accepted;
        _Atomic uint64_t timeouts;      /* connections closed by a timeout */
        _Atomic uint64_t status[6];     /* responses by class: [1] 1xx .. [5] 5xx */
        _Atomic uint64_t lat[PX_LAT_BUCKETS + 1];       /* + Inf */
        _Atomic uint64_t lat_sum_us;
};

/* Adds n to counter c of the calling worker's stats (single writer). */
#define PX_STAT_ADD(c, n)                                                                          \
        atomic_store_explicit(&(c), atomic_load_explicit(&(c), memory_order_relaxed) + (n),        \
                              memory_order_relaxed)
#define PX_STAT_INC(c) PX_STAT_ADD(c, 1)
#define PX_STAT_DEC(c) PX_STAT_ADD(c, (uint64_t)-1)

/* Records one origin exchange of ns nanoseconds. Single writer. */
void px_stats_latency(struct px_stats *s, uint64_t ns);

/* Records a response status. Single writer. */
void px_stats_status(struct px_stats *s, unsigned status);

/* Appends the Prometheus text of every worker's stats, summed, to out.
 * 0 or -ENOMEM. Any thread. */
int px_metrics_render(const struct px_shared *sh, struct px_buf *out);

#endif
