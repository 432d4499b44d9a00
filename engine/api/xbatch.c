/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writing a batch (scree.h): on one shard, one eng_shard_write; across
 * shards, the engine's two-phase commit (engine/shard_xtxn.h,
 * docs/transactions.md) driven as the server's ROW.WRITE drives it: the
 * parts (one per shard, in ascending shard order) are prepared one after
 * the other -- the first shard coordinates and makes the txn id with its
 * prepare; one global order means two batches never wait for each
 * other's keys in a cycle --, then the coordinator decides, every part
 * commits, and the coordinator forgets. A prepare or a decision that
 * fails aborts the prepared parts: nothing is written. A crash in between
 * is resolved at the next open (engine/xtxn_resolve.h).
 *
 * Each step is one request (req.h) whose result runs xb_step on the shard
 * that answered, which sends the next step or ends the batch.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "engine/api/xbatch.h"
#include "engine/shard_xtxn.h"
#include "reactor/timer.h"

/* A commit that finds its shard out of space, or its part still busy, is
 * tried again this often, this many times (10 s), as the server's
 * ROW.WRITE does, before the batch is reported as decided but not yet
 * applied. */
#define XB_RETRY_NS (100 * NS_PER_MS)
#define XB_RETRIES 100u

enum xb_phase {
        XB_WRITE,                       /* one part: a plain write */
        XB_PREPARE,
        XB_DECIDE,
        XB_COMMIT,
        XB_ABORT,
        XB_FORGET,
};

struct xb_part {
        uint32_t shard, first, n;       /* muts[first .. first + n) */
};

struct api_xbatch {
        struct eng_mutation *muts;      /* sorted by shard; keys and values in bytes */
        uint8_t *bytes;
        uint32_t n_muts, n_parts;
        struct xb_part *parts;
        uint32_t *participants;         /* each part's shard */
        enum xb_phase phase;
        uint32_t at;                    /* the part the step is for */
        uint32_t prepared;              /* parts prepared (abort them on failure) */
        uint64_t txn;
        int res;                        /* the batch's outcome once decided against */
        uint32_t retries;               /* of the commit in flight */
        struct rx_timer retry;
        struct api_req *rq;             /* the timer's */
        struct eng_xtxn_op xop;
        struct rx_alien_req *waiter;    /* the synchronous caller's */
};

void api_xbatch_free(struct api_xbatch *x)
{
        if (!x)
                return;
        free(x->muts);
        free(x->bytes);
        free(x->parts);
        free(x->participants);
        free(x);
}

struct sort_item {
        unsigned shard;
        uint32_t i;
};

static int item_cmp(const void *a, const void *b)
{
        const struct sort_item *x = a, *y = b;

        if (x->shard != y->shard)
                return x->shard < y->shard ? -1 : 1;
        return x->i < y->i ? -1 : x->i > y->i;  /* stable: a key's ops keep their order */
}

int api_xbatch_new(const struct eng_mutation *m, const unsigned *owner, uint32_t n,
                   struct api_xbatch **ret)
{
        struct api_xbatch *x = calloc(1, sizeof(*x));
        struct sort_item *items = calloc(n, sizeof(*items));
        size_t bytes = 0, at = 0;

        if (!x || !items)
                goto nomem;
        for (uint32_t i = 0; i < n; i++) {
                items[i] = (struct sort_item){ .shard = owner[i], .i = i };
                bytes += m[i].key_len + (m[i].kind == ENG_MUT_PUT ? m[i].value_len : 0);
        }
        qsort(items, n, sizeof(*items), item_cmp);
        x->muts = calloc(n, sizeof(*x->muts));
        x->bytes = malloc(bytes ? bytes : 1);
        x->parts = calloc(n, sizeof(*x->parts));
        x->participants = calloc(n, sizeof(*x->participants));
        if (!x->muts || !x->bytes || !x->parts || !x->participants)
                goto nomem;
        for (uint32_t k = 0; k < n; k++) {
                const struct eng_mutation *s = &m[items[k].i];
                struct eng_mutation *d = &x->muts[k];

                *d = *s;
                d->key = memcpy(x->bytes + at, s->key, s->key_len);
                at += s->key_len;
                if (s->kind == ENG_MUT_PUT) {
                        d->value = s->value_len ? memcpy(x->bytes + at, s->value, s->value_len)
                                                : x->bytes;
                        at += s->value_len;
                }
                if (k == 0 || items[k].shard != items[k - 1].shard)
                        x->parts[x->n_parts++] = (struct xb_part){ .shard = items[k].shard,
                                                                   .first = k };
                x->parts[x->n_parts - 1].n++;
        }
        for (uint32_t p = 0; p < x->n_parts; p++)
                x->participants[p] = x->parts[p].shard;
        x->n_muts = n;
        x->phase = x->n_parts == 1 ? XB_WRITE : XB_PREPARE;
        free(items);
        *ret = x;
        return 0;
nomem:
        free(items);
        api_xbatch_free(x);
        return -ENOMEM;
}

/* ---- a step, on its shard ---- */

static void xop_done(struct eng_xtxn_op *op, int res)
{
        api_req_end(op->ctx, res);
}

static void write_done(struct eng_write *w, int res)
{
        api_req_end(w->ctx, res);
}

static int step_run(struct api_req *rq, struct api_xbatch *x, struct eng_shard *eng)
{
        const struct xb_part *p = &x->parts[x->at];
        int r;

        x->xop = (struct eng_xtxn_op){ .done = xop_done, .ctx = rq };
        switch (x->phase) {
        case XB_WRITE:
                rq->u.w = (struct eng_write){ .done = write_done, .ctx = rq };
                r = eng_shard_write(eng, x->muts, x->n_muts, &rq->u.w);
                return r == 1 ? 0 : r == 0 ? 1 : r;
        case XB_PREPARE:
                if (x->at == 0)
                        x->txn = eng_shard_txn_new(eng);
                r = eng_shard_prepare(eng, x->txn, x->parts[0].shard, x->muts + p->first, p->n,
                                      &x->xop);
                return r == 0 ? 1 : r;
        case XB_DECIDE:
                r = eng_shard_decide(eng, x->txn, x->participants, x->n_parts, &x->xop);
                return r == 0 ? 1 : r;
        case XB_COMMIT:
                r = eng_shard_commit(eng, x->txn, &x->xop);
                return r == 0 ? 1 : r;
        case XB_ABORT:
                r = eng_shard_abort(eng, x->txn);
                return r == -SCREE_ENOTFOUND ? 0 : r;
        case XB_FORGET:
                r = eng_shard_forget(eng, x->txn);
                return r == -SCREE_ENOTFOUND ? 0 : r;
        }
        return -EINVAL;
}

static void xb_run(struct rx_loop *loop, struct rx_alien_req *ar)
{
        struct api_req *rq = container_of(ar, struct api_req, ar);
        struct eng_shard *eng = api_engine_of(loop);
        int r;

        rq->loop = loop;
        r = eng ? step_run(rq, rq->state, eng) : -SCREE_ESHUTDOWN;
        if (r != 1)
                api_req_end(rq, r);
}

/* ---- stepping ---- */

static void xb_end(struct api_req *rq, int res)
{
        struct api_xbatch *x = rq->state;

        /* (other failures get their message at the poll: api_req_message) */
        if (res == -EIO && x->phase != XB_WRITE && !x->waiter)
                rq->message = strdup(API_DECIDED_MSG);
        if (x->waiter)
                rx_alien_complete(x->waiter, res);
        else
                api_cq_deliver(rq, res);
}

static void xb_send(struct api_req *rq, enum xb_phase phase, uint32_t at)
{
        struct api_xbatch *x = rq->state;

        x->phase = phase;
        x->at = at;
        rq->run = xb_run;
        rq->moved_to = -1;
        if (api_req_send(rq, x->parts[at].shard) < 0)
                xb_end(rq, -SCREE_ESHUTDOWN);
}

/* Aborts the prepared parts from the last down, then ends with x->res. */
static void abort_next(struct api_req *rq)
{
        struct api_xbatch *x = rq->state;

        if (x->prepared == 0) {
                xb_end(rq, x->res);
                return;
        }
        xb_send(rq, XB_ABORT, --x->prepared);
}

static void retry_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct api_xbatch *x = container_of(t, struct api_xbatch, retry);

        xb_send(x->rq, XB_COMMIT, x->at);
}

/* Tries the commit of part x->at again after XB_RETRY_NS, from the shard
 * it failed on. */
static int commit_retry_arm(struct api_req *rq)
{
        struct api_xbatch *x = rq->state;

        x->retries++;
        x->rq = rq;
        rx_timer_init(&x->retry, retry_fire, "api:batch commit retry");
        return rx_timer_arm_after(rq->loop, &x->retry, XB_RETRY_NS);
}

static void xb_step(struct api_req *rq, int res)
{
        struct api_xbatch *x = rq->state;

        switch (x->phase) {
        case XB_WRITE:
                xb_end(rq, res);
                return;
        case XB_PREPARE:
                if (res < 0) {
                        x->res = res;
                        abort_next(rq);
                } else if (++x->prepared < x->n_parts) {
                        xb_send(rq, XB_PREPARE, x->prepared);
                } else {
                        xb_send(rq, XB_DECIDE, 0);
                }
                return;
        case XB_DECIDE:
                if (res < 0) {
                        x->res = res;
                        abort_next(rq);
                } else {
                        xb_send(rq, XB_COMMIT, 0);
                }
                return;
        case XB_COMMIT:
                /* Decided: every part commits, now or at the next open. */
                if ((res == -ENOSPC || res == -EBUSY) && x->retries < XB_RETRIES && rq->loop &&
                    commit_retry_arm(rq) == 0)
                        return;
                x->retries = 0;
                if (res < 0 && x->res == 0)
                        x->res = res;
                if (x->at + 1 < x->n_parts)
                        xb_send(rq, XB_COMMIT, x->at + 1);
                else if (x->res == 0)
                        xb_send(rq, XB_FORGET, 0);
                else
                        xb_end(rq, x->res == -SCREE_ESHUTDOWN ? x->res : -EIO);
                return;
        case XB_ABORT:
                abort_next(rq);
                return;
        case XB_FORGET:
                xb_end(rq, 0);
                return;
        }
}

int api_xbatch_start(struct api_req *rq, struct api_xbatch *x, struct rx_alien_req *waiter)
{
        x->waiter = waiter;
        rq->state = x;
        rq->step = xb_step;
        rq->run = xb_run;
        rq->moved_to = -1;
        x->at = 0;
        return api_req_send(rq, x->parts[0].shard);
}
