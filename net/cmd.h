/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commands: the table (name, arity, flags, key positions, handler) and the
 * request that carries one command to the shard owning its key and its
 * reply back (design: docs/server.md).
 *
 * A request is allocated on the connection's shard (the origin) with a
 * copy of its arguments, queued FIFO on the connection, and freed there
 * once its reply is appended to the connection's output. A keyed command
 * runs on the shard owning its first key: on the origin directly, or on
 * another shard through the request's embedded rx_msg (the request
 * travels, its arguments with it; the handler there writes the reply into
 * the request's own buffer; the message returns it). While the request is
 * away, only the running shard touches it. Multi-key and global commands
 * (DEL with several keys, MGET, MSET, DBSIZE, INFO) run on the origin and
 * fan out as child requests, one per key or per shard, gathered there.
 *
 * Memory: the request, its arguments and its children are allocated and
 * freed on the origin. The reply bytes of a remote run (and the scratch
 * of a handler there) are allocated on the running shard; scratch is
 * freed there, reply blocks are freed on the origin after the copy into
 * the connection's output (jemalloc returns them to their arena).
 *
 * Handler contract: runs on the shard owning the key (req->exec is that
 * shard), writes exactly one reply into req->out, and returns
 * NET_CMD_DONE (reply written), or NET_CMD_PENDING (engine I/O under
 * way; it calls net_req_complete(req) once the reply is written, from a
 * callback on the same shard). Connection state (AUTH, HELLO, CLIENT) is
 * only reachable from NET_CMD_LOCAL handlers, through req->conn.
 */
#ifndef SCREE_NET_CMD_H
#define SCREE_NET_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/shard.h"
#include "net/args.h"
#include "net/intent.h"
#include "net/resp_parse.h"
#include "net/resp_write.h"
#include "reactor/smp.h"

struct net_conn;
struct net_server;
struct net_shard;
struct net_req;
struct net_lockset;
struct net_watch;

enum net_cmd_flag {
        NET_CMD_WRITE = 1u << 0,
        NET_CMD_READONLY = 1u << 1,
        NET_CMD_NOAUTH = 1u << 2,       /* allowed before AUTH */
        NET_CMD_LOADING = 1u << 3,      /* allowed while the engine loads */
        NET_CMD_LOCAL = 1u << 4,        /* runs on the origin: keyless, fan-out, connection state */
        NET_CMD_NOENGINE = 1u << 5,     /* never touches the engine */
        NET_CMD_TXN = 1u << 6,          /* MULTI/EXEC/DISCARD/WATCH/UNWATCH: see cmd_multi.c */
        NET_CMD_NOMULTI = 1u << 7,      /* refused inside MULTI (Redis's no-multi: SHUTDOWN) */
        NET_CMD_BARRIER = 1u << 8,      /* the connection's later commands wait for it (CONFIG) */
};

enum net_cmd_res {
        NET_CMD_DONE = 0,
        NET_CMD_PENDING = 1,
};

typedef int (*net_cmd_fn)(struct net_req *req);

struct net_cmd_def {
        const char *name;               /* lower case */
        int arity;                      /* argc including the name; -n: at least n */
        uint32_t flags;                 /* enum net_cmd_flag */
        int first_key, last_key, step;  /* last_key -1: the last argument; 0: no keys */
        net_cmd_fn fn;
        const char *const *subcmds;     /* NULL-terminated, for COMMAND INFO; may be NULL */
};

/* Continuation of a handler after an engine call. res as the call's. */
typedef void (*net_req_then_fn)(struct net_req *req, int res);

struct net_req {
        struct rx_msg msg;              /* a remote run travels in this */
        struct net_req *next;           /* the connection's queue */
        struct net_conn *conn;          /* origin connection; NULL for a child */
        struct net_req *parent;         /* a child's parent */
        struct net_shard *origin;
        struct net_shard *exec;         /* the shard running the handler */
        const struct net_cmd_def *def;  /* NULL: a reply written at dispatch */
        size_t argc;
        struct net_arg *argv;           /* owned (a child's: borrowed from its parent) */
        struct net_resp_out *out;       /* where the reply goes */
        struct net_resp_out own;
        int target;                     /* shard to run on; -1: by key */
        /* The catalog table the engine calls below (net_req_get, write,
         * rmw, walks) address: for a Redis command, the table of its
         * connection's database at dispatch (net_req_use_db; children
         * inherit it); 0 (database 0) unless set. */
        uint32_t table;
        uint8_t db;                     /* the database whose table that is */
        /* net_req_walk_dbs: walking every database in turn, and what runs
         * after each one's walk */
        bool walk_dbs;
        void (*walk_db_done)(struct net_req *req);
        bool done, remote;
        bool rejected;                  /* refused as it started (-LOADING): INFO rejected_calls */
        uint32_t err_mark;              /* out's error count at the start (INFO failed_calls) */
        uint8_t proto;
        /* handler state */
        net_req_then_fn then;
        /* A parent's, once its children are back; it may start another
         * round (children_left > 0 again): the parent then goes on. */
        void (*gather)(struct net_req *req);
        int64_t ival;                   /* a child's result; scratch */
        uint32_t flags;                 /* parsed options */
        uint64_t expiry_ms;
        const char *err;                /* error text set by an RMW function */
        /* the damaged SSTable block an engine call failed on (in u or sc),
         * named by net_reply_engine_err; NULL: none */
        const struct eng_sst_damage *damage;
        uint8_t *scratch;               /* heap, freed when the handler completes */
        size_t scratch_len;
        bool have_old;                  /* scratch holds the old value (SET GET...) */
        struct net_req **children;
        uint32_t n_children, children_left;
        void *info;                     /* a per-shard child's result (heap, origin's) */
        struct eng_mutation mut;
        char num[24];
        struct eng_scan sc;             /* outside u: a flush writes between scans */
        size_t scratch_cap;
        struct rx_task task;
        uint64_t start_ns;              /* dispatch time (SLOWLOG) */
        size_t wire_bytes;              /* the command as received (CLIENT LIST qbuf) */
        bool mute;                      /* CLIENT REPLY OFF|SKIP: the reply is dropped */
        /* isolation (txn.h) */
        bool locked;                    /* runs under its (or its parent's) lock set */
        bool intent_held;               /* iw is held on req->exec */
        struct net_intent_waiter iw;    /* a single-key command's lock */
        struct net_lockset *ls;         /* held while the operation runs */
        net_cmd_fn locked_fn;           /* what runs under ls */
        /* EXEC: the WATCHed keys (owned), and the next command to run */
        struct net_watch *watch;
        uint32_t n_watch, next_cmd;
        /* A child whose engine call found its key's tablet gone to (or
         * going to) another shard: it runs again at moved_to, after a
         * pause while that is still its shard (net_req_moved). */
        bool moved;
        int moved_to;
        bool no_reroute;                /* its continuation takes -SCREE_EMOVED itself */
        const void *mkey;               /* the key of its engine call (borrowed) */
        size_t mkey_len;
        uint32_t mtable;
        uint32_t reroutes;
        struct rx_timer reroute;
        /* Last, and not zeroed by net_req_new (most of the request's
         * bytes): each engine call clears the member it uses. */
        union {
                struct eng_get g;
                struct eng_write w;
                struct eng_rmw rmw;
        } u;
};

/*
 * Whether res, an engine call's result for req, is -SCREE_EMOVED for a
 * child request: then req is marked to run again on the shard that owns
 * its key by the exec shard's catalog (engine/shard_move.h: a tablet moved
 * or moving), and its continuation must not run. On the exec shard.
 */
bool net_req_moved(struct net_req *req, int res);

/* The command named a (any case), or NULL. Pure. */
const struct net_cmd_def *net_cmd_find(const struct net_arg *a);

/* The table: *ret_n entries. Pure. */
const struct net_cmd_def *net_cmd_table(size_t *ret_n);

/*
 * Command statistics slots (INFO commandstats, LATENCY HISTOGRAM, the
 * metrics' cmd label): one per table entry, then one per subcommand of the
 * entries that list some ("client|list"), as Redis counts them.
 * net_cmd_stat_slot: the slot of def called with argv -- its subcommand's
 * when def has subcommands and argv[1] names one, else def's own -- or
 * SIZE_MAX for a def not in the table. net_cmd_stat_name: slot i's name
 * written into buf (len bytes), returned. All pure.
 */
size_t net_cmd_stat_slots(void);
size_t net_cmd_stat_slot(const struct net_cmd_def *def, const struct net_arg *argv, size_t argc);
const char *net_cmd_stat_name(size_t i, char *buf, size_t len);

/*
 * Makes a request for command def on shard sh with a copy of argv (def
 * NULL and argc 0: a dispatch-time reply). proto: the reply protocol.
 * Returns NULL on ENOMEM. Free with net_req_free. Shard-local (origin).
 */
struct net_req *net_req_new(struct net_shard *sh, const struct net_cmd_def *def,
                            const struct net_arg *argv, size_t argc, uint8_t proto);

/* A child of parent running def over argv (borrowed from the parent),
 * replying into its own buffer; target -1 = the owner of argv[1]. */
struct net_req *net_req_child(struct net_req *parent, const struct net_cmd_def *def,
                              struct net_arg *argv, size_t argc, int target);

/* Makes req address database db (0..NET_DBS-1): req->db, and req->table
 * from the origin's cache of the catalog (server.h). Origin. */
void net_req_use_db(struct net_req *req, unsigned db);

/* Frees req's children and their array (a parent between two rounds).
 * Origin. */
void net_req_children_drop(struct net_req *req);

/* Frees req (and its children). Origin. Accepts NULL. */
void net_req_free(struct net_req *req);

/* Runs req where it belongs (here or on the owning shard). req->out must
 * be set. Its end reaches the connection (net_conn_req_done) or the
 * parent. Origin. */
void net_req_start(struct net_req *req);

/* A pending handler's reply is written: send the request home. Runs on
 * req->exec. */
void net_req_complete(struct net_req *req);

/* A continuation that replies res as an integer, or the error. */
void net_then_int(struct net_req *req, int res);

/* Writes an engine error as a reply ("-ERR ..."); -SCREE_ECORRUPT names
 * the damaged file and block when the failed call said which
 * ("-ERR engine: corrupt data in <dir>/<id>.sst data block at offset N
 * (S bytes: what)"); -SCREE_ERATELIMIT names req->table's limit
 * ("-RATELIMIT per-partition write limit of 100/s exceeded for /app/t":
 * the write limit for a command flagged NET_CMD_WRITE, else the read
 * limit). */
void net_reply_engine_err(struct net_req *req, int err);

/* The owning shard of req's first key (or req->target). */
unsigned net_req_shard(const struct net_req *req);

/* Handlers, by file. */
int net_cmd_get(struct net_req *req);
int net_cmd_set(struct net_req *req);
int net_cmd_setnx(struct net_req *req);
int net_cmd_setex(struct net_req *req);
int net_cmd_getset(struct net_req *req);
int net_cmd_getdel(struct net_req *req);
int net_cmd_incr(struct net_req *req);
int net_cmd_append(struct net_req *req);
int net_cmd_strlen(struct net_req *req);
int net_cmd_mget(struct net_req *req);
int net_cmd_mset(struct net_req *req);
int net_cmd_msetnx(struct net_req *req);

int net_cmd_del(struct net_req *req);
int net_cmd_exists(struct net_req *req);
int net_cmd_del1(struct net_req *req);
int net_cmd_exists1(struct net_req *req);
int net_cmd_expire(struct net_req *req);
int net_cmd_ttl(struct net_req *req);
int net_cmd_persist(struct net_req *req);
int net_cmd_type(struct net_req *req);
int net_cmd_dbsize(struct net_req *req);
int net_cmd_flushall(struct net_req *req);
int net_cmd_shard_count(struct net_req *req);
int net_cmd_shard_flush(struct net_req *req);
int net_cmd_shard_flushall(struct net_req *req);
int net_cmd_flushdb(struct net_req *req);
int net_cmd_move(struct net_req *req);
int net_cmd_swapdb(struct net_req *req);
int net_cmd_rename(struct net_req *req);            /* cmd_rename.c */
int net_cmd_renamenx(struct net_req *req);
int net_cmd_copy(struct net_req *req);
int net_cmd_debug(struct net_req *req);             /* cmd_debug.c */
/* Whether connection c may run DEBUG (enable-debug-command). Shard-local. */
bool net_debug_allowed(const struct net_conn *c);
/* Replies DEBUG's refusal on c (a DEBUG queued in MULTI). Shard-local. */
void net_cmd_debug_refuse(struct net_conn *c);
/* A database index argument: 0 and *ret, or <0 with Redis's error written
 * (not an integer; "DB index is out of range"). cmd_db.c. */
int net_db_arg(struct net_req *req, const struct net_arg *a, unsigned *ret);

int net_cmd_getrange(struct net_req *req);
int net_cmd_setrange(struct net_req *req);
int net_cmd_getex(struct net_req *req);
int net_cmd_incrbyfloat(struct net_req *req);

int net_cmd_scan(struct net_req *req);
int net_cmd_keys(struct net_req *req);
int net_cmd_randomkey(struct net_req *req);

int net_cmd_ping(struct net_req *req);
int net_cmd_echo(struct net_req *req);
int net_cmd_quit(struct net_req *req);
int net_cmd_hello(struct net_req *req);
int net_cmd_auth(struct net_req *req);
int net_cmd_select(struct net_req *req);
int net_cmd_command(struct net_req *req);
int net_cmd_client(struct net_req *req);
int net_cmd_client_intro(struct net_req *req);         /* LIST, INFO, KILL, NO-EVICT (cmd_client.c) */
int net_cmd_slowlog(struct net_req *req);
int net_cmd_config(struct net_req *req);
int net_cmd_time(struct net_req *req);
int net_cmd_info(struct net_req *req);
int net_cmd_shard_info(struct net_req *req);
int net_cmd_latency(struct net_req *req);              /* cmd_latency.c */
int net_cmd_memory(struct net_req *req);               /* cmd_memory.c */
int net_cmd_object(struct net_req *req);

int net_cmd_shutdown(struct net_req *req);             /* cmd_shutdown.c */
int net_cmd_save(struct net_req *req);
int net_cmd_bgsave(struct net_req *req);
int net_cmd_lastsave(struct net_req *req);

int net_cmd_dir_create(struct net_req *req);           /* cmd_table.c */
int net_cmd_dir_drop(struct net_req *req);
int net_cmd_dir_list(struct net_req *req);
int net_cmd_table_create(struct net_req *req);
int net_cmd_table_drop(struct net_req *req);
int net_cmd_table_alter(struct net_req *req);
int net_cmd_table_list(struct net_req *req);
int net_cmd_table_describe(struct net_req *req);
int net_cmd_tablet_split(struct net_req *req);         /* cmd_tablet.c */
int net_cmd_tablet_merge(struct net_req *req);         /* cmd_tablet.c */
int net_cmd_tablet_move(struct net_req *req);          /* tablet_move.c */
int net_cmd_balancer(struct net_req *req);             /* balancer.c */
/* Once a second on each shard: rolls its tablets' traffic counters over
 * (eng_shard_tick) and starts the split by size of one of its tablets past
 * its table's split size, if none of its is in flight. */
void net_tablet_tick(struct net_shard *sh);
int net_cmd_row_get(struct net_req *req);              /* cmd_row.c */
int net_cmd_row_put(struct net_req *req);
int net_cmd_row_del(struct net_req *req);
int net_cmd_row_write(struct net_req *req);
int net_cmd_row_range(struct net_req *req);
int net_cmd_row_count(struct net_req *req);
int net_cmd_row_delrange(struct net_req *req);

/* COMMAND DOCS [name ...]: writes the reply (cmd_docs.c). */
void net_cmd_docs(struct net_req *req);

int net_cmd_multi(struct net_req *req);
int net_cmd_exec(struct net_req *req);
int net_cmd_watch(struct net_req *req);
int net_cmd_watch1(struct net_req *req);

/* Fan-out helpers (cmd_keys.c). Starts n children (made by the caller
 * into parent->children) and returns NET_CMD_PENDING; gather runs on the
 * origin once all are back, writes the parent's reply and completes it. */
int net_req_fan_out(struct net_req *parent, void (*gather)(struct net_req *parent));

/* Starts one child of req running def on shard with info (heap, the
 * child's from now on; may be NULL), gathered by gather. Returns what the
 * handler returns (a reply written on ENOMEM). Origin. */
int net_req_one_child(struct net_req *req, const struct net_cmd_def *def, unsigned shard,
                      void *info, void (*gather)(struct net_req *req));

/* Starts a child per shard running def (over the parent's arguments), each
 * with info_bytes of zeroed req->info (0: none) for its result; gather as
 * above. */
int net_req_each_shard(struct net_req *parent, const struct net_cmd_def *def, size_t info_bytes,
                       void (*gather)(struct net_req *parent));

/* Walks every key of the running shard's default table in chunks,
 * yielding to the loop between chunks (cmd_keys.c): item(sc, it) runs
 * for each live key (req is sc->ctx; req->ival is zeroed first), then
 * then(req, res) once with 0 or the error, and writes the reply. With
 * skip_damaged the walk goes past a damaged SSTable block, whose keys it
 * then misses (eng_scan.skip_damaged); without, it fails on it. Returns
 * what the handler returns. */
int net_req_walk(struct net_req *req, int (*item)(struct eng_scan *, const struct eng_scan_item *),
                 bool skip_damaged, net_req_then_fn then);

/* As net_req_walk, over the table of every database (0..NET_DBS-1, the
 * running shard's ids) in turn: req->db and req->table name the one being
 * walked; db_done(req) (may be NULL) runs after each with req->ival and
 * req->expiry_ms as item left them, both zeroed before the next. then
 * runs once, after the last database or at the first error. */
int net_req_walk_dbs(struct net_req *req,
                     int (*item)(struct eng_scan *, const struct eng_scan_item *),
                     bool skip_damaged, void (*db_done)(struct net_req *req),
                     net_req_then_fn then);

/* The per-shard count of keys (req->ival) and keys with a TTL
 * (req->expiry_ms) of the walk's table. An item callback of a walk. */
int net_req_count_item(struct eng_scan *sc, const struct eng_scan_item *it);

/* A continuation that replies req->ival as an integer, or the error. */
void net_then_int_ival(struct net_req *req, int res);

/* The internal per-shard commands. */
extern const struct net_cmd_def net_cmd_def_shard_count;
extern const struct net_cmd_def net_cmd_def_shard_flush;
extern const struct net_cmd_def net_cmd_def_shard_flushall;
extern const struct net_cmd_def net_cmd_def_shard_info;
extern const struct net_cmd_def net_cmd_def_get;
extern const struct net_cmd_def net_cmd_def_set;
extern const struct net_cmd_def net_cmd_def_del1;
extern const struct net_cmd_def net_cmd_def_exists1;
extern const struct net_cmd_def net_cmd_def_watch1;

/* Wall-clock ms now. */
uint64_t net_now_ms(void);

/* Engine calls with a continuation (cmd.c): each returns what the handler
 * returns. then(req, res) runs once with the call's outcome -- inside the
 * call when it finished at once -- and writes the reply; for a get, res 0
 * means req->u.g holds the value (released after then). */
int net_req_get(struct net_req *req, const void *key, size_t len, net_req_then_fn then);
int net_req_write(struct net_req *req, const struct eng_mutation *m, uint32_t n,
                  net_req_then_fn then);
int net_req_rmw(struct net_req *req, const void *key, size_t len, eng_rmw_fn fn,
                net_req_then_fn then);

/* Replies n lines as an array of simple strings (a HELP subcommand). */
void net_reply_lines(struct net_req *req, const char *const *lines, size_t n);

/* Appends every byte of src to dst and empties src. */
void net_out_move(struct net_resp_out *dst, struct net_resp_out *src);

/* If child's reply is an error, copies it as req's reply and returns
 * true. Origin. */
bool net_child_error(struct net_req *req, struct net_req *child);

/* Makes one child per key of req running def (keys step arguments apart
 * from argv[1]); a child's argv is the parent's, shifted so that its
 * argv[1] is its key (its argv[0] is not its name). 0 or -ENOMEM. */
int net_req_per_key(struct net_req *req, const struct net_cmd_def *def, size_t step, size_t argc);

/* ---- INFO and the statistics (cmd_stats.c) ---- */

/* Fills srv's INFO server fields from the process (run_id, the
 * executable) and argv (the config file cfg_parse_args read). Main
 * thread, before the shards start. */
void net_info_init(struct net_server *srv, int argc, char **argv);

/* The shard's once-a-second part of INFO: publishes its engine's memory
 * and, on shard 0, samples used_memory for used_memory_peak. Shard-local. */
void net_info_tick(struct net_shard *sh);

/* CONFIG RESETSTAT: zeroes INFO's counters (commandstats, errorstats,
 * stats) on every shard; replies +OK once all are done. */
int net_cmd_resetstat(struct net_req *req);

/* ---- transactions (cmd_multi.c) ---- */

/* A WATCHed key and the version it had: its seq, or absent. */
struct net_watch {
        char *key;                      /* heap */
        uint32_t len;
        uint8_t db;                     /* the database it was watched in */
        bool exists;
        uint64_t seq;
};

/* Frees n watches and the array. Accepts NULL. */
void net_watch_free(struct net_watch *w, uint32_t n);

/*
 * The dispatch-time part of MULTI/EXEC on connection c for command def
 * (arity, auth and key sizes already checked): MULTI, DISCARD, UNWATCH,
 * the EXEC request, WATCH inside MULTI, and queuing (+QUEUED) inside
 * MULTI. Returns true when it handled cmd (replied or started a
 * request), false when cmd goes on as a plain request. Connection's shard.
 */
bool net_multi_dispatch(struct net_conn *c, const struct net_cmd_def *def,
                        const struct net_arg *argv, size_t argc);

/* A command rejected at dispatch inside MULTI makes EXEC abort. */
void net_multi_flag(struct net_conn *c);

/*
 * CLIENT REPLY ON|OFF|SKIP at dispatch on connection c (cmd_client.c):
 * it sets which later replies c drops, so it acts where it is read, also
 * inside MULTI (not queued). Returns true when argv was CLIENT REPLY
 * (handled: replied, or muted). Connection's shard.
 */
bool net_client_reply_dispatch(struct net_conn *c, const struct net_cmd_def *def,
                               const struct net_arg *argv, size_t argc);

/* Copies n bytes into req->scratch (replacing what it held). 0 or -ENOMEM. */
int net_req_keep(struct net_req *req, const void *p, size_t n);

/* In a read-modify-write: keeps the current value (the reply of GETSET,
 * GETDEL, GETEX, SET ... GET) and sets req->have_old. Returns 1 when
 * kept, 0 when cur is NULL (absent), -ENOMEM. */
int net_req_keep_old(struct net_req *req, const struct eng_get *cur);

#endif
