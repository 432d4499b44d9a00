/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Isolation of commands across shards (design: docs/transactions.md).
 *
 * A lock set is the keys of one multi-key operation (MGET, MSET, DEL or
 * EXISTS of several keys, WATCH, EXEC) with the mode each needs, grouped by
 * owning shard. It is acquired shard by shard in ascending shard id, and
 * within a shard in ascending fingerprint, each step waiting in the key's
 * FIFO (intent.h) while holding the earlier ones: one global order over
 * (shard, fingerprint), so no cycle of waits and no deadlock, without any
 * shared counter -- each remote step is one cross-shard message. Once held,
 * the operation runs (its children skip the lock checks); then every part
 * is released in parallel.
 *
 * A global command -- one that reads or writes every key: FLUSHALL,
 * FLUSHDB, DBSIZE, KEYS, SCAN, RANDOMKEY -- adds to a lock set the whole
 * table of every shard (NET_INTENT_ALL), ordered before any key of that
 * shard and covering them. Only a transaction locks for one (EXEC); run
 * alone they take no locks.
 *
 * Single-key commands check their shard's table: an idle table costs one
 * branch. A read (PEEK) or write (SOLO) that conflicts waits in the key's
 * FIFO. A single-key write whose handler goes pending (engine I/O, a
 * durable ack, a stalled write) holds SOLO until it completes, so that a
 * transaction never starts between its read and its write.
 *
 * The lock set and its messages belong to the origin shard (the one
 * running the operation); a remote part only runs there. Shard-local.
 */
#ifndef SCREE_NET_TXN_H
#define SCREE_NET_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/cmd.h"
#include "net/intent.h"

struct net_lockset;

/* One key of a lock set. */
struct net_lock_key {
        uint64_t fp;                    /* net_intent_fp of the key (0 for ALL) */
        uint32_t shard;                 /* its owner */
        enum net_intent_mode mode;      /* NET_INTENT_READ, _WRITE, or _ALL: the shard's table */
};

/* Whether def reads or writes every key (see above): a command run on the
 * origin (NET_CMD_LOCAL) with no key position that touches the engine.
 * Pure. */
static inline bool net_cmd_is_global(const struct net_cmd_def *def)
{
        return (def->flags & NET_CMD_LOCAL) && def->first_key <= 0 &&
               !(def->flags & (NET_CMD_NOENGINE | NET_CMD_TXN));
}

/*
 * Appends the keys of command def over argv (its key positions; WRITE if
 * def writes, else READ; force_read: READ whatever def does) to *keys
 * (heap, *n of *cap used; grown here); for a global def, every shard's
 * table (ALL). Returns 0 or -ENOMEM. Origin.
 */
int net_lock_keys_add(struct net_lock_key **keys, size_t *n, size_t *cap,
                      const struct net_server *srv, const struct net_cmd_def *def,
                      const struct net_arg *argv, size_t argc, bool force_read);

/*
 * Runs run(req) once every key of keys[0..n) is held (keys borrowed for
 * the call), with req->locked set so that its children skip the checks;
 * the locks are released when req completes (net_req_complete), before
 * its end reaches the connection. Returns what a handler returns. An
 * allocation failure replies "-ERR out of memory". Origin.
 */
int net_req_lock_run(struct net_req *req, const struct net_lock_key *keys, size_t n,
                     net_cmd_fn run);

/* Runs req's handler with the isolation its command needs (above):
 * what req_run calls. Returns what the handler returns. The running
 * shard. */
int net_req_run_isolated(struct net_req *req);

/* Releases what req holds before it completes. Returns true when the
 * release is under way: net_req_complete(req) runs again once it is
 * done. The running shard. */
bool net_req_unlock(struct net_req *req);

#endif
