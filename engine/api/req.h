/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One row operation on its way from a host thread to the owning shard
 * (api_int.h) and back: rows.c runs it, batch.c and the async forms
 * reuse it.
 */
#ifndef SCREE_ENGINE_API_REQ_H
#define SCREE_ENGINE_API_REQ_H

#include "engine/api/api_int.h"

struct scree_value {
        size_t len;
        uint64_t expiry_ms;
        uint8_t data[];
};

struct api_req {
        struct rx_alien_req ar;
        struct scree_db *db;
        struct rx_loop *loop;           /* where it runs */
        enum api_op op;
        int moved_to;                   /* -SCREE_EMOVED: the owner, or -1 */
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
        union {
                struct eng_get g;
                struct eng_write w;
                struct eng_rmw r;
        } u;
};

/* Sends rq to shard and waits for its result, following a moved key to
 * its owner. Host thread. */
int api_req_call(struct api_req *rq, unsigned shard);

/* Ends rq with res on its shard. */
void api_req_end(struct api_req *rq, int res);

/* The owner of (t, key): 0 and *ret_shard, -SCREE_ENOTFOUND, -EINVAL. Host. */
int api_route(struct scree_table *t, const void *key, size_t len, unsigned *ret_shard);

/* Checks a key's length and encoding for t. 0 or -EINVAL. */
int api_key_check(const struct scree_table *t, const void *key, size_t len);

/* The wall-clock expiry of a ttl (0: none). */
uint64_t api_expiry(uint64_t ttl_ms);

#endif
