/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server: one listening socket per shard and address of --bind, on
 * the same port (SO_REUSEPORT, so the kernel spreads new connections over
 * the shards),
 * one engine shard per shard in <dir>/shard-<k>, and the connections each
 * shard accepted (conn.h). Design: docs/server.md.
 *
 * Objects and threads:
 *   - struct net_server: made by the main thread before the shards start
 *     (start-up settings, tablet map, listening sockets) and shared
 *     read-only by the shards, except a few atomic counters.
 *   - struct net_shard: one per shard, touched only by its shard (the
 *     main thread reads its `state` atomically and talks to it through
 *     foreign requests). Each keeps its own copy of the settings; CONFIG
 *     SET reaches every shard's copy through messages.
 *
 * Life cycle: net_server_new (main) -> rx_smp_new with net_shard_start as
 * on_start (each shard starts accepting and opens its engine; commands
 * for a shard still opening get -LOADING) -> net_server_stop_conns on
 * every shard (phase 1: no more accepts, every connection closed once its
 * in-flight commands are back) -> net_server_close_engines (phase 2: each
 * engine closed, so every acknowledged write is on disk) -> rx_smp_stop ->
 * net_server_free. Phase 2 starts only once every shard finished phase 1,
 * since a connection's command may be running on any shard.
 */
#ifndef SCREE_NET_SERVER_H
#define SCREE_NET_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <limits.h>

#include "engine/datadir.h"
#include "engine/tablet.h"
#include "reactor/io.h"
#include "reactor/timer.h"
#include "net/balancer.h"
#include "engine/catalog_svc.h"
#include "net/config.h"
#include "net/intent.h"
#include "net/latency.h"
#include "net/resp_write.h"

struct eng_fs;
struct eng_shard;
struct net_cmd_metrics;
struct net_conn;
struct net_metrics_http;
struct net_slowlog;
struct rx_loop;
struct rx_smp;
struct sockaddr_storage;

enum net_shard_state {
        NET_SHARD_LOADING = 0,          /* engine opening (replaying its log) */
        NET_SHARD_READY = 1,
        NET_SHARD_FAILED = 2,           /* engine open failed: see open_err */
        NET_SHARD_CLOSED = 3,
};

/* One address of the bind list (config.h, cfg_bind_next). */
struct net_bind {
        char addr[64];                  /* as listen(2) takes it: '*' given as 0.0.0.0 */
        bool optional;                  /* '-' prefix: skipped if the host lacks it */
        bool skipped;                   /* optional, and the host lacks it: not listened on */
        int skip_err;                   /* why (-errno), if skipped */
};

/* A shard's socket on one bound address, and its accept. */
struct net_listener {
        struct net_shard *sh;
        int fd;                         /* made by main; closed by net_server_free; -1 if skipped */
        bool accepting;                 /* op in flight */
        struct rx_op op;
};

struct net_server {
        const struct scree_config *cfg; /* borrowed from main: the start-up settings */
        struct net_bind binds[CFG_BIND_MAX];    /* cfg->bind's addresses, in order */
        unsigned n_binds;
        struct eng_tablet_map map;
        /* Tables and directories: the newest snapshot and the changes in
         * flight. Set by main at start (eng_catsvc_load), then shard 0's
         * alone (engine/catalog_svc.h). */
        struct eng_catsvc cat;
        struct eng_shards eng_shards;   /* each shard's engine, for the engine's services */
        struct net_balancer balancer;   /* shard 0's (balancer.h) */
        bool cat_made;                  /* this start wrote the first CATALOG */
        unsigned n_shards;
        struct net_shard **shards;      /* [n_shards] */
        struct rx_smp *smp;             /* set by main once the group runs */
        uint64_t start_ns;              /* CLOCK_MONOTONIC */
        uint64_t start_wall_ms;
        uint64_t max_key_bytes, max_value_bytes;   /* fixed at start */
        _Atomic uint64_t clients;       /* connections open, all shards */
        _Atomic uint64_t next_client_id;
        _Atomic uint64_t total_connections, rejected_connections;
        _Atomic uint64_t total_commands;
        _Atomic uint64_t slowlog_next_id;               /* ids unique over the shards */
        _Atomic uint64_t cfg_version;   /* orders CONFIG SETs (cold path only) */
        _Atomic bool cfg_txn_busy;      /* a CONFIG SET runs (one at a time: cmd_server.c) */
        _Atomic unsigned shards_ready;  /* engines open; all of them: data commands run */
        /* Set by shard 0 once the cross-shard writes a stop left in doubt
         * are resolved (xwrite.h): data commands run only then. */
        _Atomic bool xtxn_resolved;
        _Atomic uint64_t mem_peak;      /* INFO used_memory_peak (cmd_info.c) */
        /* INFO server: set by main before the shards start */
        char run_id[41];                /* 40 random hex digits */
        char executable[PATH_MAX];      /* "" if unknown */
        char config_file[PATH_MAX];     /* absolute; "" = none */
        _Atomic bool shutdown_asked;    /* SHUTDOWN ran: main stops as on SIGTERM */
        /* SAVE/BGSAVE (cmd_save.c; cold path) */
        _Atomic uint64_t lastsave_s;    /* unix time of the last save that ended well */
        _Atomic unsigned bgsave_left;   /* shards a BGSAVE still waits for; 0 = none */
        _Atomic bool bgsave_failed;     /* a shard of the running BGSAVE failed */
        _Atomic bool last_save_failed;  /* the last SAVE or BGSAVE failed */
        int metrics_fd;                 /* --metrics-port listener, or -1 */
        struct net_metrics_http *metrics_http;  /* shard 0's (metrics_http.h) */
        struct eng_datadir_lock lock;   /* cfg->dir/LOCK, held until net_server_free */
};

/* The numbered databases of the Redis keyspace (SELECT 0..15). */
#define NET_DBS 16u

struct net_shard {
        struct net_server *srv;
        struct rx_loop *loop;           /* set at start */
        unsigned id;
        struct net_listener *ls;        /* [srv->n_binds]: one per bound address */
        bool stopping;
        bool split_busy;                /* an automatic split of one of its tablets is in flight */
        struct eng_fs *fs;
        struct eng_shard *eng;          /* NULL until open; commands get -LOADING */
        bool all_ready;                 /* every shard's engine is open (net_shard_is_loading) */
        _Atomic int state;              /* enum net_shard_state */
        _Atomic int open_err;           /* the engine's open error, if FAILED */
        struct net_conn *conns;         /* every open connection (doubly linked) */
        uint64_t n_commands;            /* commands parsed here */
        struct rx_timer accept_retry;   /* after EMFILE and the like */
        struct rx_timer tick;           /* once a second: idle --timeout, ops/sec */
        uint64_t tick_commands;         /* n_commands at the last tick */
        uint64_t ops_per_sec;           /* commands parsed here in the last second */
        uint64_t keyspace_hits, keyspace_misses;        /* reads run here */
        struct net_slowlog *slowlog;    /* commands of this shard's connections */
        uint64_t n_conns;
        uint64_t n_accepted;            /* connections accepted here */
        uint64_t client_mem_bytes;      /* what this shard's connections hold (conn.c) */
        uint64_t evicted_clients;       /* closed for maxmemory-clients */
        /* INFO stats (cmd_info.c); CONFIG RESETSTAT zeroes them */
        uint64_t net_in_bytes, net_out_bytes;   /* from and to this shard's clients */
        uint64_t tick_in_bytes, tick_out_bytes; /* at the last tick */
        uint64_t in_bps, out_bps;               /* in the last one-second tick */
        struct net_resp_errstats errstats;      /* error replies written here */
        struct net_latency latency;             /* LATENCY events seen here (latency.h) */
        uint64_t expired_base;                  /* engine's expired_dropped at RESETSTAT */
        _Atomic uint64_t engine_mem_bytes;      /* eng_shard_mem_bytes at the last tick,
                                                 * for used_memory_peak on shard 0 */
        struct net_cmd_metrics *metrics;        /* commands of this shard's connections */
        void *stop_req;                 /* the foreign request waiting for phase 1 or 2 */
        bool close_wanted;              /* phase 2 asked while the engine was opening */
        struct net_intent_table intents;        /* keys locked here (txn.h) */
        /* The catalog table of each numbered database (/redis/dbN) in the
         * snapshot this shard routes by: a request takes its connection's
         * db's at dispatch (net_req_use_db). Refreshed when the engine
         * opens and whenever a new snapshot is installed (SWAPDB). */
        uint32_t db_table[NET_DBS];
        bool made_dir;                  /* main: this start created dir (undone if it fails) */
        bool engine_wrote;              /* set here as the engine closes: it took a write;
                                         * main reads it after the group stopped */
        /* This shard's copy of the settings: read here only, changed by
         * CONFIG SET through a message to every shard (cmd_server.c). */
        struct scree_config cfg;
        uint64_t cfg_ver[CFG_MAX_SETTINGS];     /* version of each setting's value */
        char dir[4096];
};

/*
 * Makes the server for cfg (borrowed; must outlive the server). In this
 * order, so that a refused start changes nothing in cfg->dir: probes
 * cfg->port on every address of cfg->bind (an optional one the host lacks
 * is marked skipped in srv->binds; main says so) and the metrics port (on
 * the first address bound; a busy port again for up to 2 s, for the
 * listeners of a server just killed), takes the data directory's
 * lock (cfg->dir/LOCK, creating cfg->dir if it is missing; refused while
 * another process holds it, naming its PID), checks the layout of every
 * shard directory that has a manifest against n_shards, then creates the
 * shard directories and binds n_shards listening sockets per address with
 * SO_REUSEPORT (and one on the metrics port if that is not 0). Returns 0
 * and *ret (free with net_server_free), or -errno with a message in err,
 * having undone what it made (see net_server_undo). Main thread.
 */
int net_server_new(struct scree_config *cfg, unsigned n_shards, struct net_server **ret,
                   char *err, size_t err_len);

/*
 * After a start that failed (the group never started, or an engine
 * failed to open): puts the data directory back as net_server_new found
 * it -- the shard directories it created removed with the files their
 * engines made, unless that engine took a write (it may have acknowledged
 * it);
 * LOCK and cfg->dir removed if it created them, else LOCK's bytes put
 * back -- and releases the lock. REQUIRES: the shard group has stopped
 * or never started. Accepts NULL. Main thread.
 */
void net_server_undo(struct net_server *srv);

/* Closes the listening sockets, releases the data directory's lock (LOCK
 * stays) and frees everything. REQUIRES: the shard group has stopped.
 * Accepts NULL. Main thread. */
void net_server_free(struct net_server *srv);

/* rx_smp on_start: arg is the net_server. Starts accepting and opening
 * the engine on the calling shard. */
void net_shard_start(struct rx_loop *loop, void *arg);

/*
 * Phase 1 / phase 2 of the shutdown on shard i (see above), from the main
 * thread: each blocks until that shard is done. Returns 0 or the shard's
 * engine close error. Main thread.
 */
int net_server_stop_conns(struct net_server *srv, unsigned i);
int net_server_close_engine(struct net_server *srv, unsigned i);

/* The calling shard's net_shard. Shard-local. */
struct net_shard *net_shard_of(struct rx_loop *loop);

/* Whether data commands must still answer -LOADING: until every shard's
 * engine is open and what a stop left in doubt is resolved (xwrite.h),
 * as Redis has one loading state (a command on a shard
 * that opened first would otherwise run while another still replays its
 * log, and a client probing one key would take the server for ready).
 * One branch once loaded. Shard-local. */
static inline bool net_shard_is_loading(struct net_shard *sh)
{
        if (!sh->eng)
                return true;    /* opening, or closed at shutdown */
        if (!sh->all_ready)
                sh->all_ready = atomic_load(&sh->srv->shards_ready) == sh->srv->n_shards &&
                                atomic_load(&sh->srv->xtxn_resolved);
        return !sh->all_ready;
}

/* Whether a peer's address is a loopback one (127.0.0.0/8, ::1, their
 * IPv4-mapped form, a Unix socket): protected mode serves only those. Pure. */
bool net_addr_is_loopback(const struct sockaddr_storage *ss);

/* Reloads sh->db_table from the catalog snapshot sh's engine routes by
 * (a database whose table is missing keeps its old id). Shard-local. */
void net_shard_dbs_refresh(struct net_shard *sh);

/* Sends catalog change ch to the server's catalog service on shard 0
 * (engine/catalog_svc.h); ch->done runs on origin. Origin shard. */
static inline void net_cat_submit(struct net_shard *origin, struct eng_cat_change *ch)
{
        eng_cat_submit(origin->loop, &origin->srv->cat, ch);
}

/* Which shard owns key (the same in every database: their tables share
 * one tablet layout). Any thread. */
unsigned net_server_owner(const struct net_server *srv, const void *key, size_t len);

/* Connection bookkeeping for conn.c. Shard-local. */
void net_shard_conn_link(struct net_shard *sh, struct net_conn *c);
void net_shard_conn_unlink(struct net_shard *sh, struct net_conn *c);

/* Called by conn.c when the last connection of a stopping shard is gone. */
void net_shard_conns_gone(struct net_shard *sh);

#endif
