/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Request collapsing (docs/proxy.md, "Collapsing"): at most one origin
 * request per cache key at a time, over all workers.
 *
 * A miss joins the registry under its key. The first becomes the leader
 * (a flight) and fetches; later ones leave a wait record and are answered
 * from the leader's response. When the response turns out storable the
 * leader publishes it: every waiter gets a reference to the object, and
 * until the store into scree is acknowledged, new misses for the key get
 * it too (so nobody fetches again in between); then the flight ends.
 * When it is not storable, or the fetch fails, the leader releases the
 * flight: waiters fetch for themselves (RETRY) or answer the error.
 *
 * Threads: the registry is a fixed hash table whose buckets are guarded
 * by striped mutexes, held only to link and unlink. A wait record
 * belongs to its waiter's worker: it is made there, travels through the
 * flight (linked under the mutex) to the leader's worker, which hands it
 * back through the waiter's inbox (px_worker_notify); only the waiter's
 * worker reads or clears its txn, and frees it.
 */
#ifndef SCREE_PROXY_FLIGHT_H
#define SCREE_PROXY_FLIGHT_H

#include <stddef.h>

struct px_flight;
struct px_flights;
struct px_obj;
struct px_txn;
struct px_worker;

enum px_flight_outcome {
        PX_FLIGHT_OBJECT = 1,   /* obj holds the response (a reference for the waiter) */
        PX_FLIGHT_RETRY,        /* not shareable: fetch it yourself */
        PX_FLIGHT_ERROR,        /* the fetch failed: answer status */
};

struct px_wait {
        struct px_wait *next;           /* in a flight, then in an inbox */
        struct px_worker *w;            /* the waiter's worker */
        struct px_txn *txn;             /* NULL once the waiter left; w's thread only */
        enum px_flight_outcome outcome;
        unsigned status;
        struct px_obj *obj;
};

enum px_join {
        PX_JOIN_LEAD = 1,       /* *ret_lead: fetch, then publish or release it */
        PX_JOIN_WAIT,           /* wait is linked: its answer comes through the inbox */
        PX_JOIN_OBJECT,         /* *ret_obj: a response being stored (a new reference) */
};

/* A new registry, or NULL. Free with px_flights_free when no worker runs. */
struct px_flights *px_flights_new(void);
void px_flights_free(struct px_flights *fl);

/*
 * Joins the flight of key (len bytes, copied): returns PX_JOIN_* as
 * above, or -ENOMEM. wait is the caller's record (w and txn set),
 * linked only for PX_JOIN_WAIT (else still the caller's). Any worker.
 */
int px_flight_join(struct px_flights *fl, const char *key, size_t len, struct px_wait *wait,
                   struct px_flight **ret_lead, struct px_obj **ret_obj);

/* The leader's response is being stored: hands obj (a reference each)
 * to every waiter and to later joiners until px_flight_end. self is the
 * leader's worker. */
void px_flight_publish(struct px_flights *fl, struct px_flight *f, struct px_obj *obj,
                       struct px_worker *self);

/* Ends a published flight (its store is acknowledged or failed). */
void px_flight_end(struct px_flights *fl, struct px_flight *f);

/* Ends an unpublished flight, answering its waiters with outcome (and
 * status for PX_FLIGHT_ERROR). self is the leader's worker. */
void px_flight_release(struct px_flights *fl, struct px_flight *f,
                       enum px_flight_outcome outcome, unsigned status, struct px_worker *self);

#endif
