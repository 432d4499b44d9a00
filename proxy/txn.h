/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transactions: what happens to a parsed request (docs/proxy.md,
 * "Caching rules", "Purge"). A GET or HEAD without no-store, no-cache,
 * Authorization or Range reads the cache; a hit is answered from the
 * value; a miss waits for the head of its connection's queue and then
 * leads or joins the key's flight (flight.h). Any other request is
 * passed to the origin (X-Cache: BYPASS); a no-cache GET is fetched anew
 * and may refresh the stored copy. PURGE deletes one key, or with a
 * trailing * every key of the host whose target starts with the rest,
 * as one range delete. Worker thread only.
 */
#ifndef SCREE_PROXY_TXN_H
#define SCREE_PROXY_TXN_H

#include <scree/scree.h>

struct px_conn;
struct px_txn;
struct px_wait;
struct px_worker;

/* A new transaction for connection c (recycled when w has one), or NULL. */
struct px_txn *px_txn_new(struct px_worker *w, struct px_conn *c);

/* Frees t (its response written, or dropped): detaches its fetch, leaves
 * its flight. t must have no scree operation in flight. */
void px_txn_free(struct px_txn *t);

/* t's connection closed: freed now, or when its scree operation is back. */
void px_txn_orphan(struct px_txn *t);

/* t's request is parsed and queued: starts what it needs. */
void px_txn_start(struct px_txn *t);

/* t (PX_TXN_FETCH) reached the head of its queue: joins or leads its
 * flight, or fetches. */
void px_txn_fetch(struct px_txn *t);

/* A completion from w's queue. */
void px_txn_on_cq(struct px_worker *w, const scree_completion *c);

/* A flight's answer for a waiting txn (or a record whose txn left). */
void px_txn_on_flight(struct px_worker *w, struct px_wait *wt);

/* Frees w's recycled transactions. */
void px_txn_cache_free(struct px_worker *w);

#endif
