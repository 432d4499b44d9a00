/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writes of rows on several shards, atomic across a crash (ROW.WRITE), and
 * the resolution at start of what a stop left in doubt: the server's half
 * of the engine's two-phase commit (engine/shard_xtxn.h). See xwrite.c.
 */
#ifndef SCREE_NET_XWRITE_H
#define SCREE_NET_XWRITE_H

#include <stdint.h>

#include "engine/catalog.h"
#include "net/tbl_args.h"

struct net_req;
struct net_shard;

/*
 * Writes ops (rows of table t; owner[i] the shard of ops->ops[i]) as one
 * atomic write across their shards, and replies +OK or the error (nothing
 * written). Takes over snap (a reference: t lives in it) and ops' memory
 * (ops is zeroed); req->info is replaced by the write's plan. now_ms turns
 * the ops' TTLs into expiries. Returns what a handler returns. Origin.
 */
int net_row_write_shards(struct net_req *req, struct eng_catalog *snap,
                         const struct eng_catalog_table *t, struct net_tbl_ops *ops,
                         const unsigned *owner, uint64_t now_ms);

/*
 * Resolves on every shard what the last stop left in doubt, then sets
 * srv->xtxn_resolved (data commands wait for it: net_shard_is_loading).
 * Runs on shard 0 once every engine is open. Shard 0.
 */
void net_xwrite_resolve(struct net_shard *sh0);

#endif
