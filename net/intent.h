/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shard's intent-lock table (design: docs/transactions.md): per key
 * fingerprint (64-bit hash of the key; a collision only costs waiting),
 * the count of holders in each mode and a FIFO of waiters. Pure: no I/O,
 * no loop; the caller decides what a wake-up does.
 *
 * Modes and compatibility (rows: requested, columns: held):
 *             READ  WRITE  SOLO  PEEK
 *   READ       yes   no     no    yes     a multi-key op or EXEC reading
 *   WRITE      no    no     no    no      a multi-key op or EXEC writing
 *   SOLO       no    no     yes   yes     a single-key write in flight
 *   PEEK       yes   no     yes   yes     a single-key read (held briefly)
 * Single-key writes are mutually compatible because the engine already
 * orders writes to one key (read-modify-write); they only have to stay
 * out of a transaction's way.
 *
 * ALL locks the whole table (its fp is ignored): a transaction running a
 * command that reads or writes every key (FLUSHALL, DBSIZE, KEYS, SCAN,
 * RANDOMKEY) holds it on every shard. It excludes every hold of every key
 * and another ALL; it is granted once no key is held (an entry with
 * waiters always has holders, so no key waits either).
 *
 * Fairness: a request is granted at once only if it is compatible with
 * every holder and nobody waits on that key (so a queued WRITE blocks
 * later READs: no writer starves). A release grants waiters from the
 * head of the FIFO for as long as each is compatible with the holders,
 * and calls their wake functions, in order, from inside the release.
 * Likewise for the table: while an ALL is held or waits, a key request
 * parks in the table's FIFO behind it (so a stream of single-key
 * commands cannot starve it) and goes to its key once the ALLs before it
 * are released -- unless the requester already holds keys of this table
 * (w->nested: a lock set part taking its next key here), which the
 * waiting ALL would otherwise wait for while the part waits for the ALL.
 * Lock sets take an ALL before any key of the same shard (txn.h), so no
 * cycle of waits forms.
 *
 * Shard-local: one table per shard, touched only by its thread.
 */
#ifndef SCREE_NET_INTENT_H
#define SCREE_NET_INTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/fpmap.h"

enum net_intent_mode {
        NET_INTENT_READ = 0,
        NET_INTENT_WRITE = 1,
        NET_INTENT_SOLO = 2,
        NET_INTENT_PEEK = 3,
        NET_INTENT_ALL = 4,             /* the whole table (see above) */
        NET_INTENT_MODE_MAX,
};

/* A request that may wait. Caller-provided; valid until granted (wake
 * ran) or, if granted at once, until net_intent_acquire returned. */
struct net_intent_waiter {
        struct net_intent_waiter *next;         /* internal: FIFO link */
        uint64_t fp;
        enum net_intent_mode mode;
        /* The requester holds other keys of this table already: never
         * parked behind a waiting ALL (see above). */
        bool nested;
        /* Runs once the lock is granted (from inside a release). */
        void (*wake)(struct net_intent_waiter *w);
};

struct net_intent_table {
        struct fpmap keys;              /* fp -> struct net_intent_entry (intent.c) */
        uint32_t n_held;                /* holds of keys, all modes */
        bool all_held;                  /* an ALL holds the table */
        /* ALL waiters, and the key requests parked behind one, in order;
         * when not empty, an ALL is held or its head is an ALL. */
        struct net_intent_waiter *q_head, *q_tail;
};

/* Empty table (no allocation). */
void net_intent_init(struct net_intent_table *t);

/* Frees the table. REQUIRES: nothing held or waiting. */
void net_intent_fini(struct net_intent_table *t);

/* True when no key is held or waited on: the fast path. */
static inline bool net_intent_is_idle(const struct net_intent_table *t)
{
        return t->keys.n_entries == 0 && !t->all_held && !t->q_head;
}

/* The fingerprint of a key. Pure. */
uint64_t net_intent_fp(const void *key, size_t len);

/* Would (fp, mode) be granted now (not nested)? No side effect. */
bool net_intent_can_grant(const struct net_intent_table *t, uint64_t fp,
                          enum net_intent_mode mode);

/*
 * Asks for w->fp in w->mode (w borrowed; see struct). Returns 1: granted
 * now (w->wake will not run); 0: queued, w->wake(w) runs once granted;
 * -ENOMEM (nothing held or queued).
 */
int net_intent_acquire(struct net_intent_table *t, struct net_intent_waiter *w);

/* Releases one hold of (fp, mode) (an ALL: of the table, fp ignored) and
 * grants the waiters that now can run (their wake functions run before
 * this returns). REQUIRES: held. */
void net_intent_release(struct net_intent_table *t, uint64_t fp, enum net_intent_mode mode);

/* Holders of (fp, mode) now, and waiters queued on fp (tests). */
uint32_t net_intent_holders(const struct net_intent_table *t, uint64_t fp,
                            enum net_intent_mode mode);
uint32_t net_intent_waiters(const struct net_intent_table *t, uint64_t fp);

#endif
