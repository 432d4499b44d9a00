/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-stress's worker threads: each owns a share of the connections on
 * one epoll loop (non-blocking sockets), writes requests as RESP arrays
 * into each connection's output buffer, keeps up to `pipeline` operations
 * in flight per connection and matches replies to requests in order
 * (perf/scree_stress_reply.h).
 *
 * Closed loop: a connection issues its next operation as soon as it has
 * room, stamped with the time it is written. Open loop (rate > 0): each
 * connection has a schedule of intended send times (rate / connections
 * each, evenly spaced or Poisson) and each operation is stamped with its
 * intended time, not the time it could be sent: a connection that falls
 * behind sends as fast as its pipeline allows, and the wait is in the
 * latency (no coordinated omission).
 *
 * Phases, in step with the main thread through sh->barrier (threads + 1
 * parties): connect (and AUTH) | barrier | pre-load (if cfg->load) |
 * barrier | barrier (sh->start_ns set by main) | measured run. A worker
 * that fails records the first fatal error in sh, raises sh->abort (every
 * worker then quits its loop) and still passes the barriers.
 *
 * Thread model: a struct stress_worker is written by its thread until
 * stress_worker_join() returns, except progress_* which main reads any
 * time. struct stress_shared is read-only for workers apart from its
 * atomics and the error, which is written once.
 */
#ifndef SCREE_PERF_SCREE_STRESS_WORKER_H
#define SCREE_PERF_SCREE_STRESS_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "perf/hist.h"
#include "perf/keydist.h"

/* Operation kinds: YCSB's in YCSB mode, these two in SET:GET mode. */
#define STRESS_OPS_MAX YCSB_OP_MAX
#define STRESS_OP_SET 0
#define STRESS_OP_GET 1
#define STRESS_OP_CMD 0         /* command mode's one kind */
/* Inserts answered out of order that are tracked; past it acked jumps. */
#define STRESS_ACK_WINDOW 65536u
/* --key-scatter: key number i is written as (i * MUL) mod 10^12, a
 * bijection of the 12-digit numbers (MUL is prime to 10^12: odd, not a
 * multiple of 5) that spreads any run of consecutive numbers evenly over
 * the whole key space (MUL / 10^12 is the golden ratio's fraction: a Weyl
 * sequence). Sequential keys then insert all over an ordered table, and
 * a uniform draw over 0..n-1 still reads only keys 0..n-1 wrote. */
#define STRESS_SCATTER_MOD UINT64_C(1000000000000)
#define STRESS_SCATTER_MUL UINT64_C(618033988749)

struct stress_cfg {
        struct sockaddr_storage addr;
        socklen_t addr_len;
        char target[300];               /* "host:port", for messages */
        const char *password;           /* AUTH on every connection; NULL: none */
        unsigned threads, conns, pipeline;
        unsigned set_weight, get_weight;        /* SET:GET mode, when mix is NULL */
        const struct ycsb_mix *mix;     /* YCSB mode */
        /* Command mode (when cmd_argc > 0): every operation sends these
         * words, "__key__" replaced by a drawn key and "__data__" by the
         * value; borrowed for the run. */
        char *const *cmd_argv;
        unsigned cmd_argc;
        struct keydist dist;            /* set up once; each worker copies it */
        uint64_t keyspace;              /* keys 0..keyspace-1 (inserts go past it) */
        const char *key_prefix;
        uint64_t key_offset;            /* added to every drawn key number */
        bool key_scatter;               /* key number: (i * STRESS_SCATTER_MUL) mod 10^12 */
        uint32_t value_size;
        const char *value;              /* value_size bytes of 'x' */
        uint32_t scan_max;              /* YCSB scan: MGET of 1..scan_max keys */
        uint64_t requests;              /* operations in all; UINT64_MAX: no bound */
        uint64_t duration_ns;           /* 0: no bound */
        double rate;                    /* ops/s in all; 0: closed loop */
        bool poisson;                   /* open loop: exponential gaps */
        bool load;                      /* SET every key first */
        unsigned load_pipeline;
        bool stop_on_error;
        bool timeseries;                /* keep per-second histograms */
        uint64_t seed;
};

/* What one kind of operation did. */
struct stress_op_stats {
        uint64_t ops, errors, misses, max_ns;
        struct hist lat;                /* ns, from intended send to reply */
};

/* One second of the run (counted by reply time). */
struct stress_second {
        uint64_t ops, errors;
        struct hist lat;
};

struct stress_shared {
        const struct stress_cfg *cfg;
        pthread_barrier_t barrier;
        uint64_t start_ns;              /* the run's start: written by main before the last barrier */
        atomic_bool abort;              /* a fatal error: every worker quits */
        atomic_bool stop;               /* stop issuing, collect what is in flight (SIGINT) */
        /* YCSB inserts: insert i writes key keyspace + i. Reads and scans
         * stay below keyspace + acked, the inserts 0..acked-1 all answered
         * (YCSB's acknowledged counter), so they do not race their insert. */
        atomic_uint_fast64_t inserted;  /* inserts issued */
        atomic_uint_fast64_t acked;     /* written under ack_lock */
        pthread_mutex_t ack_lock;
        unsigned char ack_ring[STRESS_ACK_WINDOW];      /* answered, above acked */
        atomic_flag err_set;
        char err[512];                  /* the first fatal error */
        char first_error_reply[160];    /* the first error reply's text (not fatal) */
        atomic_flag error_reply_set;
};

struct stress_worker {
        struct stress_shared *sh;
        unsigned id;
        unsigned conn_first, n_conns;   /* global numbers of its connections */
        uint64_t quota;                 /* its share of cfg->requests */
        uint64_t load_first, load_count;        /* its share of the keyspace to pre-load */
        pthread_t tid;
        /* results, valid after join */
        struct stress_op_stats op[STRESS_OPS_MAX];
        uint64_t requests;              /* requests written in the run (an rmw is two) */
        uint64_t late;                  /* open loop: ops due before the end but never sent */
        uint64_t loaded, load_errors;   /* pre-load SETs answered, and of them errors */
        uint64_t end_ns;                /* its last reply of the run */
        struct stress_second *secs;     /* cfg->timeseries: per second, n_secs of them */
        size_t n_secs, secs_cap;
        /* for the progress line: any thread reads, relaxed */
        atomic_uint_fast64_t progress_ops, progress_errors;
        atomic_bool finished;
};

/*
 * Starts w's thread. REQUIRES: w zeroed apart from sh, id, conn_first,
 * n_conns (>= 1), quota, load_first and load_count. Returns 0 or -errno
 * (no thread then). Main thread.
 */
int stress_worker_start(struct stress_worker *w);

/* Waits for w's thread to end. Main thread. */
void stress_worker_join(struct stress_worker *w);

/* Frees what w's results hold. NULL is a no-op. Main thread, after join. */
void stress_worker_fini(struct stress_worker *w);

/*
 * Records a fatal error (the first one wins) and raises sh->abort.
 * printf-style. Any thread.
 */
void stress_fail(struct stress_shared *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
