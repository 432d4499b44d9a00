/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Atomic write batches (scree.h): the operations are copied into the
 * batch; scree_write routes them and sends them to their shard as one
 * eng_shard_write, atomic across a crash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/api/xbatch.h"

struct batch_op {
        scree_table *t;
        enum eng_mut_kind kind;
        size_t key_off, key_len, val_off, val_len;
        uint64_t ttl_ms;
};

struct scree_batch {
        struct batch_op *ops;
        size_t n, cap;
        uint8_t *bytes;
        size_t len, bytes_cap;
};

SCREE_API scree_batch *scree_batch_new(void)
{
        return calloc(1, sizeof(struct scree_batch));
}

SCREE_API void scree_batch_free(scree_batch *b)
{
        if (!b)
                return;
        free(b->ops);
        free(b->bytes);
        free(b);
}

SCREE_API void scree_batch_clear(scree_batch *b)
{
        if (!b)
                return;
        b->n = 0;
        b->len = 0;
}

SCREE_API size_t scree_batch_count(const scree_batch *b)
{
        return b ? b->n : 0;
}

/* Room for one more op and len more bytes. */
static int reserve(scree_batch *b, size_t len)
{
        if (b->n == b->cap) {
                size_t cap = b->cap ? b->cap * 2 : 16;
                struct batch_op *ops = realloc(b->ops, cap * sizeof(*ops));

                if (!ops)
                        return api_fail(-ENOMEM, "out of memory for a batch of %zu", cap);
                b->ops = ops;
                b->cap = cap;
        }
        if (b->len + len > b->bytes_cap) {
                size_t cap = b->bytes_cap ? b->bytes_cap : 4096;
                uint8_t *p;

                while (cap < b->len + len)
                        cap *= 2;
                if (!(p = realloc(b->bytes, cap)))
                        return api_fail(-ENOMEM, "out of memory for a batch of %zu bytes", cap);
                b->bytes = p;
                b->bytes_cap = cap;
        }
        return 0;
}

static int add(scree_batch *b, scree_table *t, enum eng_mut_kind kind, const void *key,
               size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms)
{
        struct batch_op *op;
        unsigned shard;
        int r;

        if (!b || !t)
                return api_fail(-EINVAL, "no batch or table");
        /* The key is checked as scree_put checks it (its owner is looked
         * up again by scree_write: tablets may move in between). */
        if ((r = api_route(t, key, key_len, &shard)) < 0)
                return r;
        if ((r = api_value_check(t->db, value, value_len)) < 0 || (r = api_ttl_check(ttl_ms)) < 0)
                return r;
        if ((r = reserve(b, key_len + value_len)) < 0)
                return r;
        op = &b->ops[b->n++];
        *op = (struct batch_op){ .t = t, .kind = kind, .key_off = b->len, .key_len = key_len,
                                 .val_off = b->len + key_len, .val_len = value_len,
                                 .ttl_ms = ttl_ms };
        memcpy(b->bytes + b->len, key, key_len);
        if (value_len)
                memcpy(b->bytes + b->len + key_len, value, value_len);
        b->len += key_len + value_len;
        return 0;
}

SCREE_API int scree_batch_put(scree_batch *b, scree_table *t, const void *key, size_t key_len,
                              const void *value, size_t value_len, uint64_t ttl_ms)
{
        return add(b, t, ENG_MUT_PUT, key, key_len, value, value_len, ttl_ms);
}

SCREE_API int scree_batch_del(scree_batch *b, scree_table *t, const void *key, size_t key_len)
{
        return add(b, t, ENG_MUT_DEL, key, key_len, NULL, 0, 0);
}

/* Says which operation of a batch failed (r, with its message). */
static int op_fail(size_t i, int r)
{
        char why[API_ERR_BYTES];

        snprintf(why, sizeof(why), "%s", scree_last_error());
        return api_fail(r, "operation %zu: %s", i, why);
}

/* b's mutations and their shards (m and owner: b->n each, the caller
 * frees them); keys and values point into b. */
static int batch_route(scree_db *db, const scree_batch *b, struct eng_mutation **ret_m,
                       unsigned **ret_owner)
{
        struct eng_mutation *m;
        unsigned *owner;
        int r = 0;

        if (!b || b->n == 0)
                return api_fail(-EINVAL, "an empty batch");
        if (b->n > UINT32_MAX)
                return api_fail(-E2BIG, "too many operations in one batch");
        m = malloc(b->n * sizeof(*m));
        owner = malloc(b->n * sizeof(*owner));
        if (!m || !owner) {
                free(m);
                free(owner);
                return api_fail(-ENOMEM, "out of memory for a batch of %zu", b->n);
        }
        for (size_t i = 0; r == 0 && i < b->n; i++) {
                const struct batch_op *op = &b->ops[i];

                if (op->t->db != db)
                        r = api_fail(-EINVAL, "operation %zu is on a table of another database", i);
                else if ((r = api_route(op->t, b->bytes + op->key_off, op->key_len, &owner[i])) < 0)
                        op_fail(i, r);
                m[i] = (struct eng_mutation){ .kind = op->kind, .table = op->t->id,
                                              .key = b->bytes + op->key_off,
                                              .key_len = (uint32_t)op->key_len,
                                              .value = b->bytes + op->val_off,
                                              .value_len = (uint32_t)op->val_len,
                                              .expiry_ms = api_expiry(op->ttl_ms) };
        }
        if (r < 0) {
                free(m);
                free(owner);
                return r;
        }
        *ret_m = m;
        *ret_owner = owner;
        return 0;
}

static bool one_shard(const unsigned *owner, size_t n)
{
        for (size_t i = 1; i < n; i++)
                if (owner[i] != owner[0])
                        return false;
        return true;
}

/* Writes b's rows, across shards (x): 0 or <0 with its message. */
static int write_across(struct api_req *rq, const struct eng_mutation *m, const unsigned *owner,
                        uint32_t n)
{
        struct rx_alien_req waiter = { 0 };     /* a one-shot event */
        struct api_xbatch *x = NULL;
        int r = api_xbatch_new(m, owner, n, &x);

        if (r < 0)
                return api_fail(r, "%s", api_res_message(API_OP_WRITE, r));
        r = api_xbatch_start(rq, x, &waiter);
        if (r == 0)
                r = (int)rx_alien_wait(&waiter);
        if (r == -EIO)
                api_fail(r, "%s", API_DECIDED_MSG);
        else if (r < 0)
                api_fail(r, "%s", api_res_message(API_OP_WRITE, r));
        api_xbatch_free(x);
        return r;
}

SCREE_API int scree_write(scree_db *db, const scree_batch *b)
{
        struct api_req rq = { 0 };
        struct eng_mutation *m;
        unsigned *owner;
        int r;

        if (!db)
                return api_fail(-EINVAL, "scree_write needs a database");
        if ((r = api_off_shard()) < 0 || (r = batch_route(db, b, &m, &owner)) < 0)
                return r;
        rq.db = db;
        rq.op = API_OP_WRITE;
        if (one_shard(owner, b->n)) {
                /* the fast path: one request, the batch borrowed */
                rq.m = m[0];
                rq.muts = m;
                rq.n_muts = (uint32_t)b->n;
                r = api_req_call(&rq, owner[0]);
        } else {
                r = write_across(&rq, m, owner, (uint32_t)b->n);
        }
        free(m);
        free(owner);
        return r;
}

static void write_finish(struct api_req *rq, scree_completion *c)
{
        api_xbatch_free(rq->state);
}

SCREE_API int scree_write_async(scree_cq *q, const scree_batch *b, void *tag)
{
        struct api_xbatch *x = NULL;
        struct eng_mutation *m;
        struct api_req *rq;
        unsigned *owner;
        int r;

        if (!q)
                return api_fail(-EINVAL, "no completion queue");
        if ((r = batch_route(q->db, b, &m, &owner)) < 0)
                return r;
        r = api_xbatch_new(m, owner, (uint32_t)b->n, &x);
        free(m);
        free(owner);
        if (r < 0)
                return api_fail(r, "%s", api_res_message(API_OP_WRITE, r));
        rq = calloc(1, sizeof(*rq));
        if (!rq) {
                api_xbatch_free(x);
                return api_fail(-ENOMEM, "out of memory");
        }
        *rq = (struct api_req){ .db = q->db, .op = API_OP_WRITE, .cq = q, .tag = tag,
                                .finish = write_finish };
        r = api_xbatch_start(rq, x, NULL);
        if (r < 0) {
                api_xbatch_free(x);
                free(rq);
                return r;
        }
        api_cq_submitted(q);
        return 0;
}
