/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Catalog changes over the server (tables and directories: engine/catalog.h).
 *
 * Every change is made on shard 0, one at a time, in arrival order: its
 * function turns the newest snapshot into the next one; the snapshot is
 * written to <dir>/CATALOG (engine/catalog_store.h: crash-safe, so a
 * kill -9 leaves the old catalog or the new one, never a mix); then every
 * shard installs it (eng_shard_set_catalog) before the change is answered. So a client
 * told OK finds the change on every shard, and every shard routes by the
 * same snapshot from then on. A change that fails leaves the catalog as
 * it was.
 *
 * Threads: net_cat_submit on any shard (the origin); fn on shard 0;
 * done on the origin. The change struct is the caller's, valid until done.
 */
#ifndef SCREE_NET_CATALOG_SVC_H
#define SCREE_NET_CATALOG_SVC_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/catalog.h"
#include "engine/catalog_store.h"
#include "reactor/smp.h"

struct net_server;
struct net_shard;
struct net_cat_change;

/* Makes the next snapshot from cur (borrowed): 0 and *ret, or an error
 * (a catalog change's) with ch->err written. Runs on shard 0. */
typedef int (*net_cat_change_fn)(struct net_cat_change *ch, const struct eng_catalog *cur,
                                 struct eng_catalog **ret);

struct net_cat_change {
        /* Optional, on shard 0 before fn, with the newest snapshot
         * (borrowed for the call): what the shards must do before the
         * catalog may say it (a move's hand-over, net/tablet_move.c).
         * Calls ready(ch, res) once, at once or later; res < 0 ends the
         * change with that error (ch->err written). */
        void (*prepare)(struct net_cat_change *ch, const struct eng_catalog *cur,
                        void (*ready)(struct net_cat_change *ch, int res));
        /* Optional, on shard 0: prepare said 0 but fn or the save failed:
         * undoes what prepare did (at once, or by messages of its own
         * that need nothing of ch). */
        void (*undo)(struct net_cat_change *ch);
        net_cat_change_fn fn;
        /* On the origin, once the change is on every shard (res 0) or
         * failed (res < 0: the catalog's error, ch->err says what; or the
         * store's: the write of CATALOG failed, nothing changed). */
        void (*done)(struct net_cat_change *ch);
        void *ctx;
        int res;
        uint64_t version;               /* res 0: the snapshot that holds the change */
        char err[256];
        /* internal */
        struct rx_msg msg;
        struct net_cat_change *next;
        struct net_server *srv;
        struct eng_catalog *snap;
        struct eng_catalog_save save;
        struct net_cat_install *inst;   /* one per shard */
        unsigned left;
        bool prepared;                  /* prepare said 0 */
};

/* Shard 0's side of the service; in the server, touched only by shard 0. */
struct net_cat_svc {
        struct eng_catalog *head;       /* the newest durable snapshot (a reference) */
        struct eng_catalog_store *store;
        struct net_cat_change *q_head, *q_tail;
        bool busy;                      /* the head of the queue is being made */
        bool forgetting;                /* a sweep of dropped tables runs */
};

/* Sends ch to shard 0. Origin shard. */
void net_cat_submit(struct net_shard *origin, struct net_cat_change *ch);

/* Shard 0, at start: opens the store. 0 or <0. */
int net_cat_svc_start(struct net_shard *sh0);

/* Shard 0, once a second: forgets dropped tables no shard holds data of
 * any more (eng_catalog_forget_dropped), so the dropped list stays short. */
void net_cat_svc_tick(struct net_shard *sh0);

/* Shard 0, at stop (no change in flight: connections are closed): closes
 * the store; done(arg, res) runs once it is. Returns 0, or <0 (no store
 * open: done will not run). */
int net_cat_svc_stop(struct net_shard *sh0, void (*done)(void *arg, int res), void *arg);

/*
 * Main thread, at start, before the shards: reads <dir>/CATALOG into
 * srv->cat.head, or, when there is none (a new directory, or one written
 * before catalogs), makes the first catalog -- the static tablet map the
 * manifests were made with (eng_catalog_initial) -- and writes it
 * (srv->cat_made). Refuses, with a message in err, a catalog that cannot
 * be read or was made for another number of shards. 0 or <0.
 */
int net_cat_load(struct net_server *srv, char *err, size_t err_len);

/* Main thread, undoing a failed start: removes the CATALOG net_cat_load
 * wrote, unless an engine took a write. */
void net_cat_undo(struct net_server *srv);

#endif
