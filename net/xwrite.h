/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writes on several shards, atomic across a crash (ROW.WRITE, RENAME): the
 * server's half of the engine's two-phase commit (engine/shard_xtxn.h;
 * what a stop left in doubt is resolved at start by
 * engine/xtxn_resolve.h). See xwrite.c.
 */
#ifndef SCREE_NET_XWRITE_H
#define SCREE_NET_XWRITE_H

#include <stdint.h>

#include "engine/shard.h"

struct net_req;
struct net_shard;

/*
 * Writes muts[0..n) (owner[i]: the shard of muts[i]) as one atomic write
 * across their shards, then writes the reply: ok(req)'s once every shard
 * committed, else the error (nothing written). muts and owner are
 * copied; the keys and values they point to must stay valid until
 * release(arg) runs (NULL: nothing to release), once the write is over,
 * whatever its outcome -- also when this returns NET_CMD_DONE. req->info
 * is freed and replaced by the write's plan (a caller passing its info as
 * arg sets req->info to NULL first). Returns what a handler returns.
 * Origin.
 */
int net_xwrite(struct net_req *req, const struct eng_mutation *muts, const unsigned *owner,
               uint32_t n, void (*ok)(struct net_req *req), void (*release)(void *arg),
               void *arg);

#endif
