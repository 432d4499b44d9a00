/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Moving a table's tablet to another shard over the server: a catalog
 * change (catalog_svc.h) whose prepare step has the source shard hand the
 * tablet over and the target take it (engine/shard_move.h) before the
 * catalog that names the target is saved and installed on every shard.
 * Requests that raced it are routed again (net_req_moved, the range
 * walk's replan, the cross-shard write's replan); none is answered with
 * an error for it.
 *
 * The Redis keyspace's tablets do not move: its keys route by hash
 * (net_server_owner), not by the catalog.
 *
 * Threads: net_tablet_move on any shard (the origin); the change's steps
 * on shard 0 and the two shards; done on the origin.
 */
#ifndef SCREE_NET_TABLET_MOVE_H
#define SCREE_NET_TABLET_MOVE_H

#include <stdint.h>

#include "engine/shard_move.h"
#include "engine/catalog_svc.h"

struct net_shard;

struct net_tablet_move {
        /* On the origin, once: res 0 (moved: the catalog names the target
         * on every shard) or <0 with err. */
        void (*done)(struct net_tablet_move *m, int res, const char *err);
        void *ctx;
        uint32_t table, tablet, to;
        /* Once done(0): where it came from, its files, what the
         * hand-over flushed, how long the whole move took and how long of
         * it the tablet's keys waited (from the source's cut to the
         * switch). */
        uint32_t from, n_files;
        uint64_t flushed_bytes, took_ns, held_ns;
        /* internal */
        struct eng_cat_change ch;
        struct net_shard *origin;
        void (*ready)(struct eng_cat_change *ch, int res);
        struct rx_msg msg;
        struct rx_timer retry;
        struct eng_move_out mo;
        struct eng_move_in mi;
        int step_res;
        uint64_t started_ns;
};

/* Starts moving m->tablet of table m->table to shard m->to; m is the
 * caller's until done. */
void net_tablet_move(struct net_shard *origin, struct net_tablet_move *m);

#endif
