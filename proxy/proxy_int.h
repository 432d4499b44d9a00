/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-proxy's shared structures (docs/proxy.md, "Design").
 *
 * Threads. The main thread parses the command line, opens the scree
 * database and starts N workers; each worker is one thread with its own
 * epoll loop, its own SO_REUSEPORT listening socket (the kernel spreads
 * connections over them), its own scree completion queue (whose eventfd
 * is in the epoll set), its own pools of origin connections and its own
 * counters. A connection, its requests (transactions), their fetches and
 * origin connections belong to the worker that accepted it and are
 * touched only by its thread. Shared between workers: the read-only
 * configuration, the scree table handle (thread-safe), the collapsing
 * registry (flight.h, striped mutexes) and each worker's inbox (a
 * lock-free stack other workers push collapsed results onto).
 *
 * A request's life: parsed (request.c) into a txn queued on its
 * connection; a GET or HEAD reads the cache (scree_get_async); a hit is
 * written from the returned value with writev; a miss, when it reaches
 * the head of its connection's queue, joins or leads a flight (one origin
 * request per URL at a time) and streams the origin's answer (fetch.c)
 * while keeping a copy to store (scree_put_async with the freshness as
 * TTL). Responses go out in request order, several per writev.
 */
#ifndef SCREE_PROXY_INT_H
#define SCREE_PROXY_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <http_parser.h>
#include <scree/scree.h>

#include "proxy/buf.h"
#include "proxy/config.h"
#include "proxy/fields.h"
#include "proxy/list.h"
#include "proxy/metrics.h"

#define PX_PIPELINE_MAX 32              /* requests parsed ahead on one connection */
#define PX_STREAM_HIGH (256 * 1024)     /* unsent streamed bytes that pause the origin */
#define PX_SCRATCH_BYTES (64 * 1024)    /* a worker's read buffer */
#define PX_LINGER_NS (2ull * 1000000000) /* reading after a last response, before close */

/* What an epoll event's data.ptr points at: the first member of each. */
enum px_ev_kind {
        PX_EV_LISTEN,
        PX_EV_METRICS,
        PX_EV_CONN,
        PX_EV_UP,
        PX_EV_CQ,
        PX_EV_WAKE,
};

struct px_ev {
        enum px_ev_kind kind;
};

/* A deadline in one of a worker's timer lists (worker.h). */
struct px_timer {
        struct px_list node;
        uint64_t deadline_ns;
        void (*fire)(struct px_timer *t);
};

/* Timers of one duration: kept in deadline order by appending. */
struct px_tlist {
        struct px_list head;
        uint64_t timeout_ns;
};

struct px_origin {
        struct sockaddr_storage addr;
        socklen_t addr_len;
        char name[PX_HOST_BYTES + 8];   /* host:port, for messages */
};

struct px_flights;
struct px_fetch;
struct px_pool;
struct px_wait;
struct px_worker;

/* What the whole process shares. Read-only once the workers run, but
 * for stop. */
struct px_shared {
        const struct px_config *cfg;
        scree_db *db;
        scree_table *table;
        struct px_flights *flights;
        struct px_worker **workers;
        unsigned n_workers;
        const struct px_origin *origins;
        unsigned n_origins;
        atomic_bool stop;
};

/* Request flags from its headers (request.c). */
#define PX_REQ_NO_CACHE (1u << 0)       /* Cache-Control / Pragma no-cache */
#define PX_REQ_NO_STORE (1u << 1)
#define PX_REQ_AUTH (1u << 2)           /* Authorization */
#define PX_REQ_RANGE (1u << 3)
#define PX_REQ_COND (1u << 4)           /* If-None-Match / If-Modified-Since */
#define PX_REQ_EXPECT (1u << 5)         /* Expect: 100-continue */

struct px_req {
        unsigned method;                /* enum http_method */
        unsigned short major, minor;
        bool keep_alive;
        uint32_t url_len;               /* the target: f.b.p[0, url_len) */
        struct px_fields f;
        struct px_buf body;
        unsigned flags;
        struct px_buf key;              /* host 0x00 target (object.h) */
        uint32_t host_len;              /* key.p[0, host_len) */
};

enum px_txn_state {
        PX_TXN_PARSING,                 /* its request is still being read */
        PX_TXN_LOOKUP,                  /* a cache read in flight */
        PX_TXN_PURGE,                   /* a range delete in flight */
        PX_TXN_FETCH,                   /* to be fetched when it reaches the head */
        PX_TXN_WAIT,                    /* waiting for another request's fetch */
        PX_TXN_ORIGIN,                  /* its fetch runs, nothing to write yet */
        PX_TXN_STREAM,                  /* writing what its fetch streams into out */
        PX_TXN_READY,                   /* a whole response in seg[] */
};

enum px_xcache {
        PX_X_NONE = 0,
        PX_X_HIT,
        PX_X_MISS,
        PX_X_BYPASS,
};

/* One request and its response. */
struct px_txn {
        struct px_txn *next;            /* the connection's queue */
        struct px_conn *conn;           /* NULL: orphaned, freed when its operation is back */
        struct px_worker *w;
        enum px_txn_state state;
        struct px_req req;
        bool cacheable;                 /* a GET/HEAD that reads the cache */
        bool store;                     /* its fetch may fill the cache */
        bool collapse;                  /* its miss may wait for another's fetch */
        bool close_after;               /* close the connection after its response */
        bool stream_done, stream_abort;
        bool op_inflight;               /* a scree operation holds it as tag */
        bool relookup;                  /* it missed behind other requests: read again */
        enum px_xcache xcache;
        /* READY: the response, seg[seg_i..n_seg) left to write. */
        struct iovec seg[4];
        unsigned n_seg, seg_i;
        char dyn[320];                  /* the lines the proxy adds */
        scree_value *value;             /* a hit's value, written from */
        struct px_obj *obj;             /* a collapsed or in-flight object */
        struct px_buf out;              /* STREAM bytes, or a response of its own */
        size_t out_off;
        struct px_fetch *fetch;
        struct px_wait *wait;
};

/* What a client connection's timer bounds. */
enum px_conn_wait {
        PX_WAIT_NONE = 0,               /* nothing: its requests are being answered */
        PX_WAIT_HEADER,                 /* a request's headers, or a pause in its body */
        PX_WAIT_IDLE,                   /* the next request on a kept-alive connection */
        PX_WAIT_STALL,                  /* the client to read its responses */
        PX_WAIT_LINGER,                 /* the client to close, after the last response */
};

/* A client connection. */
struct px_conn {
        struct px_ev ev;                /* PX_EV_CONN */
        int fd;
        struct px_worker *w;
        http_parser parser;
        struct px_timer timer;
        struct px_list link;            /* w->conns; w->dead once closed */
        struct px_list flush_link;      /* w->flushq while it may write */
        struct px_txn *head, *tail;     /* requests in order */
        unsigned n_txn;
        struct px_txn *cur;             /* the request being parsed */
        size_t head_bytes;              /* its request line and headers so far */
        char *pending;                  /* input not parsed yet (parser paused) */
        size_t pending_off, pending_len;
        bool readable, writable;        /* edge-triggered readiness not yet used up */
        bool rdhup;                     /* the client shut its side: read to the end */
        bool eof, stop_read, lingering, closed, metrics, purge_ok, parsing;
        unsigned err_status;            /* set by a parser callback that stops it */
        enum px_conn_wait timer_why;    /* what its timer bounds */
        char peer[48];                  /* the client's address, for X-Forwarded-For */
};

struct px_worker {
        unsigned id;
        struct px_shared *sh;
        pthread_t thread;
        int epfd;
        struct px_ev listen_ev, metrics_ev, wake_ev, cq_ev;
        int lfd, mfd, wake_fd;
        scree_cq *cq;
        _Atomic(struct px_wait *) inbox;
        uint64_t now_ns;
        struct px_tlist t_header, t_idle, t_linger, t_origin, t_pool, t_accept;
        struct px_timer accept_timer;   /* accepts paused: out of descriptors */
        bool accept_paused;
        struct px_list conns, flushq, dead;
        struct px_list fetches, dead_fetches, dead_up;
        struct px_pool *pools;          /* [n_origins] idle origin connections */
        unsigned rr;                    /* next origin, round robin */
        struct px_txn *txn_free;        /* recycled transactions */
        unsigned n_txn_free;
        struct px_stats stats;
        char scratch[PX_SCRATCH_BYTES];
};

#endif
