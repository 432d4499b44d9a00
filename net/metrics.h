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
#include "net/metrics_tablets.h"
#include "reactor/loop.h"
#include "reactor/smp.h"

struct net_shard;

/* Latency buckets: 1, 2.5, 5 per decade from 10 us to 10 s (upper bounds). */
#define NET_METRICS_BUCKETS 19

/* The upper bound of bucket i in ns. REQUIRES: i < NET_METRICS_BUCKETS. Pure. */
uint64_t net_metrics_bucket_ns(unsigned i);

/* The bucket a duration of ns falls in: the first whose bound is >= ns,
 * or NET_METRICS_BUCKETS (above 10 s). Pure. */
unsigned net_metrics_bucket_of(uint64_t ns);

/* One command's counters, for one stat slot (cmd.h: "get", "client|list"). */
struct net_cmd_stat {
        uint64_t calls;                 /* ran and replied, failed ones included */
        uint64_t failed;                /* ran and replied an error */
        uint64_t rejected;              /* refused before running (arity, NOAUTH, -LOADING) */
        uint64_t ns;                    /* dispatch to reply, summed over calls */
        uint64_t buckets[NET_METRICS_BUCKETS + 1];      /* not cumulative; last: above 10 s */
};

/* One shard's command counters: INFO commandstats and latencystats,
 * LATENCY HISTOGRAM, and the metrics' per-command families. Counting
 * one call is an array index (its stat slot) and a few adds. */
struct net_cmd_metrics {
        size_t n_slots;                 /* net_cmd_stat_slots() */
        struct net_cmd_stat *cmd;       /* [n_slots], by stat slot; owned */
};

/* Sets m up for every stat slot, all zero. Returns 0 or -ENOMEM. Free
 * with net_cmd_metrics_fini (which accepts NULL and a zeroed m). */
int net_cmd_metrics_init(struct net_cmd_metrics *m);
void net_cmd_metrics_fini(struct net_cmd_metrics *m);

/* Counts one call of stat slot slot (out of range: ignored) that took ns
 * from dispatch to reply and, if failed, replied an error. Shard-local
 * (m's shard). */
void net_cmd_metrics_observe(struct net_cmd_metrics *m, size_t slot, uint64_t ns, bool failed);

/* Counts one call of slot refused before it ran. Shard-local. */
void net_cmd_metrics_reject(struct net_cmd_metrics *m, size_t slot);

/* Zeroes every counter (CONFIG RESETSTAT). Shard-local. */
void net_cmd_metrics_reset(struct net_cmd_metrics *m);

/* Copies src's counters (up to the smaller n_slots) into dst, whose
 * array stays its own. Shard-local (src's shard). */
void net_cmd_metrics_copy(struct net_cmd_metrics *dst, const struct net_cmd_metrics *src);

/* Adds src's counters to dst (merging shards). Pure. */
void net_cmd_stat_add(struct net_cmd_stat *dst, const struct net_cmd_stat *src);

/* Everything one shard reports. */
struct net_metrics_snap {
        unsigned shard;
        bool engine_ready;              /* false: eng below is zero, not reported */
        struct rx_loop_stats loop;
        struct rx_smp_stats smp;
        struct eng_shard_stats eng;
        uint64_t conns, accepted;
        uint64_t balancer_moves, balancer_paused;       /* shard 0's; 0 on the others */
        struct net_cmd_metrics cmd;     /* its array: owned by the snapshot */
        struct net_metrics_tablets tablets;     /* owned by the snapshot (metrics_tablets.h) */
};

/* Prepares s (calls sized for the table, room for tablets_cap tablets:
 * net_metrics_tablets_cap). Returns 0 or -ENOMEM. Free with
 * net_metrics_snap_fini (accepts a zeroed s). Any thread. */
int net_metrics_snap_init(struct net_metrics_snap *s, uint32_t tablets_cap);
void net_metrics_snap_fini(struct net_metrics_snap *s);

/* Copies sh's counters into s (prepared with net_metrics_snap_init), and
 * its tablets' figures (net_metrics_tablets_fill) once its engine is open.
 * Shard-local (sh's shard). */
void net_metrics_snap_fill(struct net_metrics_snap *s, struct net_shard *sh);

/* Writes the exposition text of n snapshots (borrowed) to f: every family
 * once with # HELP and # TYPE, one sample per shard (shard="k"), the
 * command families per shard and command (cmd="get", commands called on
 * that shard only), then the tablet families (net_metrics_tablets_format).
 * Returns 0, or -EIO if f reports an error. Pure. */
int net_metrics_format(FILE *f, const struct net_metrics_snap *snaps, unsigned n);

/*
 * Writes src (len bytes, borrowed; any bytes) into buf (size bytes) as the
 * text inside a Prometheus label value's quotes: backslash, double quote
 * and newline as \\, \" and \n; any other byte outside printable ASCII
 * as \\xHH (lowercase hex; the value then reads \xHH, a safe stand-in);
 * printable ASCII as is. Writes whole escapes only, as many as fit before
 * a terminating NUL (written if size > 0). Returns how many bytes of src
 * it wrote: all of them when size > 5 * len. Pure.
 */
size_t net_metrics_label_escape(char *buf, size_t size, const void *src, size_t len);

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
