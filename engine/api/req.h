/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One row operation on its way from a host thread to the owning shard
 * (api_int.h) and back: rows.c runs it, batch.c and the async forms
 * reuse it.
 */
#ifndef SCREE_ENGINE_API_REQ_H
#define SCREE_ENGINE_API_REQ_H

#include "base/compiler.h"
#include "engine/api/api_int.h"

/* A value handed to the caller (value.c): a copy in data, or -- one of
 * API_PIN_BYTES or more -- the engine's own memory (a memtable entry or a
 * cached block) pinned until scree_value_free sends the pin back to its
 * shard. */
struct scree_value {
        size_t len;
        uint64_t expiry_ms;
        const uint8_t *ptr;             /* data, or into the engine's memory */
        struct api_pin *pin;            /* NULL: a copy */
        uint8_t data[];
};

#define API_PIN_BYTES (32u << 10)

/* Makes the value of found get g (shard-local): pinned (g gives up its
 * references) or a copy. NULL on out of memory. */
scree_value *api_value_new(struct scree_db *db, struct rx_loop *loop, struct eng_get *g);

/* A completion queue (cq.c). */
struct scree_cq {
        struct rx_mpsc done;            /* answered requests (shards push) */
        _Atomic bool armed;             /* the thread waits: the next push writes efd */
        /* Threads between their push and their wake-up: one counter per
         * shard on its own cache line (no shard contends for another's),
         * the last for other threads (a close failing requests). */
        struct api_cq_delivering {
                _Atomic uint32_t n;
        } cacheline_aligned *delivering;
        _Atomic uint64_t woken;         /* events written to efd (or about to be), ever */
        int efd;
        scree_db *db;
        /* the queue's thread's */
        uint64_t drained;               /* events read from efd, ever */
        uint64_t pending;               /* submitted, not polled */
        struct rx_mpsc_node *backlog;   /* taken, not yet handed out (oldest first) */
        char **messages;                /* handed out by the last poll; freed by the next */
        struct api_req *free_reqs;      /* recycled requests (next in cq_node) */
        uint32_t n_free_reqs;
        size_t n_messages, messages_cap;
};

struct api_req {
        struct rx_alien_req ar;
        struct scree_db *db;
        struct rx_loop *loop;           /* where it runs */
        enum api_op op;
        int moved_to;                   /* -SCREE_EMOVED: the owner, or -1 */
        uint32_t hops;                  /* moved-key hops so far (asynchronous) */
        /* what runs on the shard: api_req_run when NULL */
        void (*run)(struct rx_loop *loop, struct rx_alien_req *ar);
        struct eng_mutation m;          /* its key (and a put's value) */
        const struct eng_mutation *muts;        /* a batch's part, else NULL */
        uint32_t n_muts;
        /* get */
        void *buf;
        size_t cap, vlen;
        bool want_value;
        scree_value *value;
        /* update */
        scree_update_fn fn;
        void *fn_arg;
        int fn_res;
        /* asynchronous (cq.c): heap-allocated, answered into cq */
        scree_cq *cq;
        void *tag;
        struct rx_mpsc_node cq_node;
        int res;
        bool pooled;                    /* from its queue's free list (cq.c) */
        /* A multi-step operation's next step (scan.c, xbatch.c): runs
         * with each hop's result, on the shard that answered it (or the
         * thread that failed it at a close), instead of the delivery. */
        void (*step)(struct api_req *rq, int res);
        void *state;                    /* the multi-step operation's */
        /* Optional: fills a completion's results from state and frees
         * state (the queue's thread, at poll). */
        void (*finish)(struct api_req *rq, scree_completion *c);
        char *message;                  /* set by finish: the completion's (heap) */
        /* The engine's own, written by the shard only (the fields above
         * are what a new request zeroes: API_REQ_HEAD). */
        union {
                struct eng_get g;
                struct eng_write w;
                struct eng_rmw r;
                struct eng_scan sc;
        } u;
};

/* The part of a request that starts zeroed; the engine's union is set by
 * each call itself. */
#define API_REQ_HEAD offsetof(struct api_req, u)

/* Sends rq to shard and waits for its result, following a moved key to
 * its owner; a result < 0 leaves its message (api_req_message). Host
 * thread. */
int api_req_call(struct api_req *rq, unsigned shard);

/* What result res (< 0) of rq means, for a message or a completion's: a
 * static string (api_res_message, told apart for an update's function).
 * Any thread, once rq's result is in. */
const char *api_req_message(const struct api_req *rq, int res);

/* Sends a heap rq (rq->cq or rq->step set) to shard without waiting: its
 * result goes to rq->step, or into rq->cq. 0, or -SCREE_ESHUTDOWN (rq
 * not sent; with a message). Any thread. */
int api_req_send(struct api_req *rq, unsigned shard);

/* Hands rq's result to its queue (rq is the queue's from then on). Any
 * thread. */
void api_cq_deliver(struct api_req *rq, int res);

/* A queue's bookkeeping for an operation submitted (host: the queue's
 * thread) -- pending counts it until polled. */
void api_cq_submitted(scree_cq *q);

/* The shards' request runner (rows.c): get, put/delete/batch part,
 * update, by rq->op. */
void api_req_run(struct rx_loop *loop, struct rx_alien_req *ar);

/* Ends rq with res on its shard. */
void api_req_end(struct api_req *rq, int res);

/* Checks key for t -- its length (api_key_check), and that it is of the
 * table's key schema (a whole tuple of its parts' types) -- and finds its
 * owner: 0 and *ret_shard, or -SCREE_ENOTFOUND (the table was dropped),
 * -EINVAL, with a message. Every operation on a key checks it here. Host. */
int api_route(struct scree_table *t, const void *key, size_t len, unsigned *ret_shard);

/* Checks a key's length (1..max-key-bytes, not NULL). 0 or -EINVAL with a
 * message. */
int api_key_check(const struct scree_table *t, const void *key, size_t len);

/* Checks and routes (t, key) for op into rq (db, op, table, key):
 * 0 and *shard, or an error with its message. Blocking calls (no
 * rq->cq) are refused on a shard thread. */
int api_req_prep(struct api_req *rq, scree_table *t, enum api_op op, const void *key,
                 size_t key_len, unsigned *shard);

/* Checks a value's length. 0 or -EINVAL. */
int api_value_check(const struct scree_db *db, const void *value, size_t len);

/* The longest TTL (2^61 ms, some 73 million years): the engine keeps
 * expiries below 2^62 ms, and now + ttl must not wrap. */
#define API_TTL_MAX_MS (UINT64_C(1) << 61)

/* 0, or -EINVAL (with a message) for a TTL over API_TTL_MAX_MS. */
int api_ttl_check(uint64_t ttl_ms);

/* The wall-clock expiry of a ttl (0: none). */
uint64_t api_expiry(uint64_t ttl_ms);

#endif
