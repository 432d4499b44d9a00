/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library's insides (include/scree/scree.h over the shards): the
 * database, table handles, and the request that carries one operation
 * from a host thread to the shard that owns its key and back.
 *
 * A request is an rx_alien_req: the host pushes it into the owning
 * shard's inbox (reactor/smp.h); its run calls the shard's engine; the
 * engine's answer completes it -- a synchronous caller waits for that
 * (rx_alien_wait), an asynchronous one gets it in its completion queue
 * (cq.c, through rx_alien_req.complete). A shard that no longer owns the
 * key (a moved tablet) answers -SCREE_EMOVED with the owner its catalog
 * names, and the host sends the request there.
 *
 * Routing on the host: each host thread keeps a reference to the newest
 * catalog snapshot it saw (db.c, api_catalog); the database publishes a
 * new one after every catalog change and keeps every one it published
 * until it closes, so a thread takes a reference to the newest without a
 * lock.
 */
#ifndef SCREE_ENGINE_API_INT_H
#define SCREE_ENGINE_API_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <scree/scree.h>

#include "engine/catalog.h"
#include "engine/catalog_svc.h"
#include "engine/datadir.h"
#include "engine/shard.h"
#include "engine/shards.h"
#include "reactor/smp.h"
#include "reactor/timer.h"

#define API_ERR_BYTES 512

/* What a request does: the public operation it serves. */
enum api_op {
        API_OP_NONE = 0,                /* no row operation (api_res_message) */
        API_OP_PUT = SCREE_OP_PUT,
        API_OP_DEL = SCREE_OP_DEL,
        API_OP_GET = SCREE_OP_GET,
        API_OP_UPDATE = SCREE_OP_UPDATE,
        API_OP_WRITE = SCREE_OP_WRITE,
        API_OP_SCAN = SCREE_OP_SCAN,
        API_OP_DELETE_RANGE = SCREE_OP_DELETE_RANGE,
        API_OP_MKDIR = SCREE_OP_MKDIR,
        API_OP_RMDIR = SCREE_OP_RMDIR,
        API_OP_TABLE_CREATE = SCREE_OP_TABLE_CREATE,
        API_OP_TABLE_DROP = SCREE_OP_TABLE_DROP,
        API_OP_FLUSH = SCREE_OP_FLUSH,
        API_OP_COMPACT = SCREE_OP_COMPACT,
};

/* The settings scree_options holds, parsed. */
struct api_opts {
        unsigned smp;                   /* 0: one per CPU */
        uint64_t memory;
        uint64_t cache;                 /* 0: memory / 4 */
        bool periodic;
        uint32_t period_ms;
        uint64_t max_key_bytes, max_value_bytes;
        bool pin, prefault, salvage;
        uint32_t idle_poll_us;
};

struct scree_options {
        struct api_opts o;
};

enum api_shard_state {
        API_SHARD_LOADING,
        API_SHARD_READY,
        API_SHARD_FAILED,
        API_SHARD_CLOSED,
};

/* One shard's side: touched by its thread only, but for state. */
struct api_shard {
        struct scree_db *db;
        unsigned id;
        struct rx_loop *loop;
        struct eng_fs *fs;
        struct eng_shard *eng;
        _Atomic int state;              /* enum api_shard_state */
        int open_err;
        int start_err;                  /* shard 0: the catalog store's start failed */
        bool made_dir;
        bool wrote;                     /* its engine took a write (set at close) */
        struct rx_timer tick;
        struct rx_alien_req *waiter;    /* the open's or the close's */
        char dir[4096];
};

struct scree_db {
        struct rx_smp *smp;
        unsigned n;
        struct api_shard *shards;       /* [n] */
        struct eng_shards eng_shards;
        struct eng_catsvc cat;          /* shard 0's */
        struct eng_datadir_lock lock;
        struct api_opts opts;
        bool cat_made;
        uint64_t serial;                /* tells this db from an earlier one at its address */
        /* the newest catalog, for host-side routing (api_catalog) */
        /* pinned values (value.c): held by the caller, and on their way
         * back to their shard; scree_close refuses while any is held */
        _Atomic uint64_t pins_held, pins_releasing;
        /* table handles and completion queues open: scree_close refuses
         * while any is (they point at the database) */
        _Atomic uint64_t handles;
        _Atomic(struct eng_catalog *) cur;
        /* every snapshot published, referenced until close: a host thread
         * may take a reference to cur without a lock (catalog changes are
         * explicit calls here, so this list stays short) */
        struct eng_catalog **kept;
        size_t n_kept;
        _Atomic uint64_t cur_version;
        char dir[4096];
};

struct scree_table {
        struct scree_db *db;
        uint32_t id;
        bool raw;                       /* byte-string keys */
        bool hashed;
        uint32_t hash_parts;
};

/* Stores a message for scree_last_error (printf-style); returns err.
 * Every path on which a scree_* function returns < 0 goes through it (a
 * call that succeeds leaves the message alone). Any thread. */
int api_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What result res (< 0) of operation op means, for a message: a static
 * string. Any thread. */
const char *api_res_message(enum api_op op, int res);

/* Databases open in the process (scree_open to scree_close). Any thread. */
unsigned api_dbs_open(void);

/* -SCREE_EONSHARD (with a message) when called on a shard thread, else 0. */
int api_off_shard(void);

/* This thread's snapshot of db's newest catalog (a reference it keeps).
 * Host thread. */
struct eng_catalog *api_catalog(struct scree_db *db);
/* Publishes snap (borrowed; referenced) as db's newest. Any thread. */
void api_catalog_publish(struct scree_db *db, struct eng_catalog *snap);

/* scree_close's check of the pinned values (value.c): -EBUSY (with a
 * message) while the caller holds one; else waits for those on their way
 * back to their shards, and 0. */
int api_pins_wait(struct scree_db *db);

/* The engine open on loop (shard thread). */
struct eng_shard *api_engine_of(struct rx_loop *loop);

/* Runs fn(loop, req) on shard i and waits for its result (alien request,
 * rx_alien_complete by fn or later); a result < 0 leaves its message
 * (api_res_message), which the caller may replace. Host thread. */
int64_t api_on_shard(struct scree_db *db, unsigned i,
                     void (*fn)(struct rx_loop *loop, struct rx_alien_req *req), void *ctx);

/* A catalog change made on shard 0 through the catalog service, waited
 * for: fn makes the next snapshot from cur. 0 or the change's error
 * (message in scree_last_error). Host thread. */
int api_catalog_change(struct scree_db *db, eng_cat_change_fn fn, void *ctx);

/* The same, answered into q (op and tag for the completion); ctx is
 * freed with ctx_free (may be NULL) once the change is over, also on
 * failure to start. 0 or <0. Any thread. */
int api_catalog_change_async(scree_cq *q, enum api_op op, eng_cat_change_fn fn, void *ctx,
                             void (*ctx_free)(void *ctx), void *tag);

#endif
