/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fetches: one request to the origins and its response (docs/proxy.md,
 * "Origins" and "Caching rules").
 *
 * A fetch sends the request on a pooled or new origin connection and
 * parses the answer with http_parser: it streams it to the txn that
 * started it (its sink) -- Content-Length kept, or re-chunked, or to the
 * close for an HTTP/1.0 client -- and, when the response may be stored,
 * keeps a copy in the stored form (object.h) that it hands to the flight's
 * waiters and to scree_put_async (TTL: its freshness). A fetch whose
 * sink leaves goes on while its copy or its waiters need it.
 *
 * Failures: a pooled connection that fails before any answer is retried
 * once on a new connection (idempotent requests); a failed connect, or
 * an idempotent request that got no answer, goes to the next origin;
 * when every origin failed the answer is 502; no answer in
 * --origin-timeout: 504; a response broken off after its head closes
 * the client connection. Worker thread only.
 */
#ifndef SCREE_PROXY_FETCH_H
#define SCREE_PROXY_FETCH_H

#include <stdint.h>

#include <scree/scree.h>

struct px_fetch;
struct px_flight;
struct px_txn;
struct px_worker;

/*
 * Starts fetching for t (at its queue's head), as the leader of flight
 * lead (or NULL). 0 (t is ORIGIN, or already answered: a fetch that
 * fails at once answers t itself), or -ENOMEM (nothing started; the
 * caller still owns lead).
 */
int px_fetch_start(struct px_txn *t, struct px_flight *lead);

/* f's sink is going away (its connection closed). */
void px_fetch_detach(struct px_fetch *f);

/* f's sink wrote out most of what was streamed: read on. */
void px_fetch_resume(struct px_fetch *f);

/* An epoll event / the timer of f's origin connection. */
void px_fetch_on_io(struct px_fetch *f, uint32_t events);
void px_fetch_on_timeout(struct px_fetch *f);

/* A store (scree_put_async) came back. */
void px_fetch_on_stored(struct px_worker *w, const scree_completion *c);

/* Ends every fetch of w (shutting down). */
void px_fetch_abort_all(struct px_worker *w);

/* Frees the fetches that ended during this pass. */
void px_fetch_reap(struct px_worker *w);

#endif
