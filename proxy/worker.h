/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A worker: one thread running one epoll loop over its listening
 * socket, its client and origin connections, its scree completion
 * queue's descriptor and its wake-up eventfd (proxy_int.h). Each pass:
 * wait for events (bounded by the nearest timer), handle them, take every
 * finished scree operation (scree_cq_poll until it returns fewer than
 * asked, so the queue rearms its descriptor: one read per wake-up, not
 * one per completion), take the collapsed results other workers pushed,
 * write every connection with output (one writev each), fire due timers,
 * free closed connections.
 */
#ifndef SCREE_PROXY_WORKER_H
#define SCREE_PROXY_WORKER_H

#include <stdint.h>

struct px_shared;
struct px_timer;
struct px_tlist;
struct px_wait;
struct px_worker;
struct px_ev;

/*
 * A new worker with id for sh, owning listening socket lfd and, if mfd
 * >= 0, the metrics one (both taken: closed by px_worker_free). 0 and
 * *ret, or -errno. Main thread.
 */
int px_worker_new(struct px_shared *sh, unsigned id, int lfd, int mfd, struct px_worker **ret);

/* Starts w's thread. 0 or -errno. Main thread. */
int px_worker_start(struct px_worker *w);

/* Wakes w's loop (to see stop, or its inbox). Any thread. */
void px_worker_wake(struct px_worker *w);

/* Waits for w's thread to end (after sh->stop and a wake). Main thread. */
void px_worker_join(struct px_worker *w);

/* Frees w (stopped or never started). Accepts NULL. Main thread. */
void px_worker_free(struct px_worker *w);

/*
 * Hands wait record wt (its txn belongs to worker to) to to's loop,
 * which calls px_txn_on_flight for it. self is the calling worker (no
 * wake-up is needed when it is to). Any worker thread.
 */
void px_worker_notify(struct px_worker *self, struct px_worker *to, struct px_wait *wt);

/* Adds fd to w's epoll set, edge-triggered for reading, writing and
 * peer close, with ev as its data. 0 or -errno. w's thread. */
int px_worker_watch(struct px_worker *w, int fd, struct px_ev *ev);

/* (Re)arms t to fire timeout of list l from now. w's thread. */
void px_timer_arm(struct px_worker *w, struct px_tlist *l, struct px_timer *t);

/* Disarms t (a no-op if it is not armed). */
void px_timer_stop(struct px_timer *t);

/* The wall clock in milliseconds since the epoch. Any thread. */
uint64_t px_wall_ms(void);

#endif
