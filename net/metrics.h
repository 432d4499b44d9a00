/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics for the Prometheus endpoint (--metrics-port; design:
 * docs/server.md "Metrics"): the per-shard command counters and latency
 * histogram, the snapshot a shard takes of all its numbers, the text
 * format (Prometheus exposition format 0.0.4), and the check of an HTTP
 * request for it. The HTTP side lives in metrics_http.h.
 *
 * Shard model: each shard owns its net_cmd_metrics (updated where a
 * request's reply is done, on the connection's shard) and fills a snapshot
 * of its own counters on its own thread, into memory the asking shard
 * allocated and keeps until the message returns; nothing is shared.
 * Formatting and request checks are pure.
 */
#ifndef SCREE_NET_METRICS_H
#define SCREE_NET_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/shard.h"
#include "reactor/loop.h"
#include "reactor/smp.h"

struct net_cmd_def;
struct net_shard;

/* Latency buckets: 1, 2.5, 5 per decade from 10 us to 10 s (upper bounds). */
#define NET_METRICS_BUCKETS 19

/* The upper bound of bucket i in ns. REQUIRES: i < NET_METRICS_BUCKETS. Pure. */
uint64_t net_metrics_bucket_ns(unsigned i);

/* One shard's command counters. */
struct net_cmd_metrics {
        size_t n_cmds;                  /* the command table's size */
        uint64_t *calls;                /* [n_cmds], by table index; owned */
        uint64_t buckets[NET_METRICS_BUCKETS + 1];      /* not cumulative; last: above 10 s */
        uint64_t count, sum_ns;
};

/* Sets m up for the command table, all zero. Returns 0 or -ENOMEM. Free
 * with net_cmd_metrics_fini (which accepts NULL and a zeroed m). */
int net_cmd_metrics_init(struct net_cmd_metrics *m);
void net_cmd_metrics_fini(struct net_cmd_metrics *m);

/* Counts one finished command of def (borrowed; from the table) that took
 * ns from dispatch to reply. Shard-local (m's shard). */
void net_cmd_metrics_observe(struct net_cmd_metrics *m, const struct net_cmd_def *def, uint64_t ns);

/* Everything one shard reports. */
struct net_metrics_snap {
        unsigned shard;
        bool engine_ready;              /* false: eng below is zero, not reported */
        struct rx_loop_stats loop;
        struct rx_smp_stats smp;
        struct eng_shard_stats eng;
        uint64_t conns, accepted;
        struct net_cmd_metrics cmd;     /* calls: owned by the snapshot */
};

/* Prepares s (calls sized for the table). Returns 0 or -ENOMEM. Free with
 * net_metrics_snap_fini (accepts a zeroed s). Any thread. */
int net_metrics_snap_init(struct net_metrics_snap *s);
void net_metrics_snap_fini(struct net_metrics_snap *s);

/* Copies sh's counters into s (prepared with net_metrics_snap_init).
 * Shard-local (sh's shard). */
void net_metrics_snap_fill(struct net_metrics_snap *s, struct net_shard *sh);

/* Writes the exposition text of n snapshots (borrowed) to f: every family
 * once with # HELP and # TYPE, one sample per shard (shard="k"). Returns 0,
 * or -EIO if f reports an error. Pure. */
int net_metrics_format(FILE *f, const struct net_metrics_snap *snaps, unsigned n);

/* Largest request head accepted (request line and headers). */
#define NET_METRICS_MAX_REQUEST 8192u

/*
 * Checks the request head received so far (buf, len bytes; borrowed).
 * Returns 0 (incomplete: receive more), 200 (GET /metrics, any query
 * string, HTTP/1.0 or 1.1), 404 (another path), 405 (another method), 400
 * (malformed), or 431 (no end of head within NET_METRICS_MAX_REQUEST
 * bytes). Pure.
 */
int net_metrics_check_request(const char *buf, size_t len);

#endif
