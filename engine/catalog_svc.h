/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Catalog changes (tables and directories: catalog.h), for the program that
 * runs the shards (the server, the library).
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
 * Threads: eng_cat_submit on any shard (the origin); fn on shard 0;
 * done on the origin. The change struct is the caller's, valid until done.
 */
#ifndef SCREE_ENGINE_CATALOG_SVC_H
#define SCREE_ENGINE_CATALOG_SVC_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/catalog.h"
#include "engine/catalog_store.h"
#include "engine/shards.h"
#include "reactor/smp.h"

struct eng_fs;
struct eng_catsvc;
struct eng_cat_change;

/* Makes the next snapshot from cur (borrowed): 0 and *ret, or an error
 * (a catalog change's) with ch->err written. Runs on shard 0. */
typedef int (*eng_cat_change_fn)(struct eng_cat_change *ch, const struct eng_catalog *cur,
                                 struct eng_catalog **ret);

struct eng_cat_change {
        /* Optional, on shard 0 before fn, with the newest snapshot
         * (borrowed for the call): what the shards must do before the
         * catalog may say it (a move's hand-over, net/tablet_move.c).
         * Calls ready(ch, res) once, at once or later; res < 0 ends the
         * change with that error (ch->err written). */
        void (*prepare)(struct eng_cat_change *ch, const struct eng_catalog *cur,
                        void (*ready)(struct eng_cat_change *ch, int res));
        /* Optional, on shard 0: prepare said 0 but fn or the save failed:
         * undoes what prepare did (at once, or by messages of its own
         * that need nothing of ch). */
        void (*undo)(struct eng_cat_change *ch);
        eng_cat_change_fn fn;
        /* On the origin, once the change is on every shard (res 0) or
         * failed (res < 0: the catalog's error, ch->err says what; or the
         * store's: the write of CATALOG failed, nothing changed). */
        void (*done)(struct eng_cat_change *ch);
        void *ctx;
        int res;
        uint64_t version;               /* res 0: the snapshot that holds the change */
        char err[256];
        /* internal */
        struct rx_msg msg;
        struct eng_cat_change *next;
        struct eng_catsvc *svc;
        struct eng_catalog *snap;
        struct eng_catalog_save save;
        struct eng_cat_install *inst;   /* one per shard */
        unsigned left;
        bool prepared;                  /* prepare said 0 */
};

/* The service: set up by the program before the shards start, then
 * touched only by shard 0. */
struct eng_catsvc {
        const struct eng_shards *shards;        /* borrowed for the service's life */
        /* Optional: runs on each shard once it installed a new snapshot
         * (the server refreshes its databases' tables: SWAPDB). */
        void (*installed)(struct rx_loop *loop, void *arg);
        void *arg;
        struct rx_loop *loop0;          /* shard 0's, from eng_catsvc_start */
        struct eng_catalog *head;       /* the newest durable snapshot (a reference) */
        struct eng_catalog_store *store;
        struct eng_cat_change *q_head, *q_tail;
        bool busy;                      /* the head of the queue is being made */
        bool forgetting;                /* a sweep of dropped tables runs */
};

/* Sends ch to svc on shard 0 (origin may be shard 0 itself). Origin shard. */
void eng_cat_submit(struct rx_loop *origin, struct eng_catsvc *svc, struct eng_cat_change *ch);

/* Shard 0, at start, once its engine is open or opening (the store
 * writes through fs, a borrowed engine fs of shard 0 that outlives the
 * store): opens the store of directory dir (borrowed). 0 or <0. */
int eng_catsvc_start(struct eng_catsvc *svc, struct rx_loop *loop0, struct eng_fs *fs,
                     const char *dir);

/* Shard 0, once a second: forgets dropped tables no shard holds data of
 * any more (eng_catalog_forget_dropped), so the dropped list stays short.
 * all_ready: every shard's engine is open (else it waits). */
void eng_catsvc_tick(struct eng_catsvc *svc, bool all_ready);

/* Shard 0, at stop (no change in flight): closes the store; done(arg,
 * res) runs once it is. Returns 0, or <0 (no store open: done will not
 * run). */
int eng_catsvc_stop(struct eng_catsvc *svc, void (*done)(void *arg, int res), void *arg);

/*
 * Main thread, at start, before the shards: reads <dir>/CATALOG into
 * svc->head (svc->shards set), or, when there is none (a new directory,
 * or one written before catalogs), makes the first catalog -- the static
 * tablet map the manifests were made with (eng_catalog_initial with
 * tablets_per_shard) -- writes it and sets *ret_made. Refuses, with a
 * message in err, a catalog that cannot be read or was made for another
 * number of shards (shards_hint names the setting, e.g. "--smp"). 0 or <0.
 */
int eng_catsvc_load(struct eng_catsvc *svc, const char *dir, uint32_t tablets_per_shard,
                    const char *shards_hint, bool *ret_made, char *err, size_t err_len);

/* Main thread, undoing a failed start that made the first catalog (and
 * whose engines took no write): removes <dir>/CATALOG. */
void eng_catsvc_undo(const char *dir);

#endif
