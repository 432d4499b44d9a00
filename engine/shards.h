/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the engine's services that span shards (the catalog service,
 * catalog_svc.h; the resolution of cross-shard writes in doubt,
 * xtxn_resolve.h) find each shard's engine: the program that runs the
 * shards (the server, the library) says, for a shard's loop, which
 * eng_shard is open on it.
 */
#ifndef SCREE_ENGINE_SHARDS_H
#define SCREE_ENGINE_SHARDS_H

struct rx_loop;
struct eng_shard;

struct eng_shards {
        unsigned n;                     /* shards in the group */
        /* The engine open on loop's shard, or NULL (not open yet, or
         * failed). Called on that shard. */
        struct eng_shard *(*of)(struct rx_loop *loop);
};

#endif
