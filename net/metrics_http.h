/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metrics endpoint: HTTP/1.0 and 1.1 on --metrics-port, served by
 * shard 0's loop with the reactor's socket ops (design: docs/server.md
 * "Metrics"). GET /metrics gathers a snapshot from every shard through
 * cross-shard messages and answers the Prometheus text (metrics.h);
 * another path gets 404, another method 405, a malformed request 400, a
 * head over NET_METRICS_MAX_REQUEST bytes 431. Every response closes the
 * connection. Each connection has one deadline (NET_METRICS_HTTP_TIMEOUT_NS)
 * for the whole exchange: a silent or slow client is shut down then, and
 * never holds up anything else.
 *
 * Objects: one struct net_metrics_http per server, touched only by shard
 * 0 while the shards run; connections are its own, each with at most one
 * recv or send in flight, freed once nothing is in flight or away.
 */
#ifndef SCREE_NET_METRICS_HTTP_H
#define SCREE_NET_METRICS_HTTP_H

#include <stdint.h>

struct net_metrics_http;
struct net_shard;

#define NET_METRICS_HTTP_TIMEOUT_NS UINT64_C(5000000000)   /* 5 s */

/*
 * Starts accepting on listen_fd (borrowed: the caller closes it after
 * net_metrics_http_free) for shard sh (borrowed; shard 0). Returns 0 and
 * *ret, or -ENOMEM. Shard-local (sh's shard).
 */
int net_metrics_http_start(struct net_shard *sh, int listen_fd, struct net_metrics_http **ret);

/* Stops accepting and ends every connection (an in-progress gather ends
 * when its messages return). Accepts NULL. Shard-local. */
void net_metrics_http_stop(struct net_metrics_http *h);

/* Frees h and any connection left (their sockets closed). Accepts NULL.
 * REQUIRES: the shard group has stopped. Main thread. */
void net_metrics_http_free(struct net_metrics_http *h);

#endif
