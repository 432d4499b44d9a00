/* SPDX-License-Identifier: Apache-2.0 */
/*
 * At start, the resolution of the cross-shard writes a stop left in doubt
 * (shard_xtxn.h; see xtxn_resolve.h), on shard 0 once every engine is open:
 *   1. every shard lists its parts in doubt and its decisions;
 *   2. each part's coordinator says whether it decided;
 *   3. every part commits (decided) or aborts, all at once: a commit may
 *      wait for the keys of another part in doubt;
 *   4. every decision's participants commit (a part committed already
 *      answers -SCREE_ENOTFOUND);
 *   5. every decision is forgotten.
 * Then data operations run (the caller's done). Each step is one message
 * per shard or per part; a phase starts when the one before has all its
 * answers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/log.h"
#include "engine/shard_xtxn.h"
#include "engine/xtxn_resolve.h"
#include "reactor/smp.h"

enum xr_kind {
        XR_LIST,
        XR_ASK,
        XR_COMMIT,
        XR_ABORT,
        XR_FORGET,
};

struct xr;

/* One message of a phase. */
struct xr_op {
        struct rx_msg msg;
        struct xr *x;
        enum xr_kind kind;
        uint32_t shard;
        uint64_t txn;
        uint32_t part_shard;            /* XR_ASK: the shard of the part asked about */
        bool decided;
        int res;
        struct rx_loop *loop;           /* where it runs */
        struct eng_xtxn_op op;
        /* XR_LIST's answer (allocated on its shard, freed on shard 0) */
        struct eng_xtxn_id *doubt;
        uint32_t n_doubt;
        struct eng_xtxn_decision *dec;
        uint32_t n_dec;
        uint32_t *participants;         /* every decision's, back to back (dec points here) */
};

enum xr_phase {
        PH_LIST,                        /* every shard: its parts in doubt, its decisions */
        PH_ASK,                         /* every part's coordinator: decided? */
        PH_PARTS,                       /* every part: commit or abort */
        PH_DECISIONS,                   /* every decision's participants: commit */
        PH_FORGET,                      /* every decision's coordinator: forget */
};

struct xr {
        struct rx_loop *loop0;
        const struct eng_shards *shards;
        void (*done)(void *arg);
        void *arg;
        enum xr_phase phase;
        struct xr_op *ops;
        uint32_t n_ops, left;
        struct xr_op *lists;            /* phase 1's, one per shard, kept to the end */
        uint32_t resolved;
};

static void phase_next(struct xr *x);

static void op_done(struct rx_loop *src, struct rx_msg *m)
{
        struct xr_op *o = container_of(m, struct xr_op, msg);

        (void)src;
        if (--o->x->left == 0)
                phase_next(o->x);
}

static void commit_done(struct eng_xtxn_op *op, int res)
{
        struct xr_op *o = op->ctx;

        o->res = res;
        rx_smp_reply(o->loop, &o->msg);
}

/* Copies the shard's parts in doubt and decisions (participant arrays too). */
static int list_run(struct xr_op *o, struct eng_shard *eng)
{
        uint32_t n = eng_shard_in_doubt(eng, NULL, 0), d = eng_shard_decisions(eng, NULL, 0);

        o->doubt = calloc(n ? n : 1, sizeof(*o->doubt));
        o->dec = calloc(d ? d : 1, sizeof(*o->dec));
        if (!o->doubt || !o->dec)
                return -ENOMEM;
        size_t total = 0, at = 0;

        o->n_doubt = eng_shard_in_doubt(eng, o->doubt, n);
        o->n_dec = eng_shard_decisions(eng, o->dec, d);
        for (uint32_t i = 0; i < o->n_dec; i++)
                total += o->dec[i].n_participants;
        /* The engine's arrays live until a forget: keep copies. */
        o->participants = malloc((total ? total : 1) * sizeof(uint32_t));
        if (!o->participants)
                return -ENOMEM;
        for (uint32_t i = 0; i < o->n_dec; i++) {
                memcpy(o->participants + at, o->dec[i].participants,
                       o->dec[i].n_participants * sizeof(uint32_t));
                o->dec[i].participants = o->participants + at;
                at += o->dec[i].n_participants;
        }
        return 0;
}

static int op_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct xr_op *o = container_of(m, struct xr_op, msg);
        struct eng_shard *eng = o->x->shards->of(dst);
        int r;

        o->loop = dst;
        switch (o->kind) {
        case XR_LIST:
                o->res = list_run(o, eng);
                return 0;
        case XR_ASK:
                o->decided = eng_shard_decided(eng, o->txn);
                return 0;
        case XR_COMMIT:
                o->op = (struct eng_xtxn_op){ .done = commit_done, .ctx = o };
                r = eng_shard_commit(eng, o->txn, &o->op);
                if (r == 0)
                        return RX_MSG_DEFERRED;
                o->res = r == -SCREE_ENOTFOUND ? 0 : r;
                return 0;
        case XR_ABORT:
                r = eng_shard_abort(eng, o->txn);
                o->res = r == -SCREE_ENOTFOUND ? 0 : r;
                return 0;
        case XR_FORGET:
                r = eng_shard_forget(eng, o->txn);
                o->res = r == -SCREE_ENOTFOUND ? 0 : r;
                return 0;
        }
        return 0;
}

/* Sends the n ops of phase ph (ops heap, owned by x from now on; each
 * with its kind set). */
static void phase_send(struct xr *x, enum xr_phase ph, struct xr_op *ops, uint32_t n)
{
        if (x->ops != x->lists && x->ops != ops)
                free(x->ops);
        x->phase = ph;
        x->ops = ops;
        x->n_ops = n;
        x->left = n;
        if (!n) {
                phase_next(x);
                return;
        }
        for (uint32_t i = 0; i < n; i++) {
                ops[i].x = x;
                ops[i].res = 0;
                ops[i].msg = (struct rx_msg){ .run = op_run, .done = op_done,
                                              .name = "xtxn resolve" };
                rx_smp_submit(x->loop0, ops[i].shard, &ops[i].msg);
        }
}

static void finish(struct xr *x, const char *failed)
{
        unsigned n_shards = x->shards->n;

        if (failed)
                log_error("resolving the cross-shard writes left in doubt: %s; their keys stay "
                          "held until the next start resolves them", failed);
        else if (x->resolved)
                log_info("resolved %u cross-shard write part(s) a stop left in doubt", x->resolved);
        for (uint32_t s = 0; x->lists && s < n_shards; s++) {
                free(x->lists[s].participants);
                free(x->lists[s].dec);
                free(x->lists[s].doubt);
        }
        if (x->ops != x->lists)
                free(x->ops);
        free(x->lists);
        x->done(x->arg);
        free(x);
}

/* One question per part in doubt, to its coordinator. */
static struct xr_op *ask_ops(struct xr *x, uint32_t *ret_n)
{
        unsigned n_shards = x->shards->n;
        uint32_t n = 0, k = 0;
        struct xr_op *ops;

        for (unsigned s = 0; s < n_shards; s++)
                n += x->lists[s].n_doubt;
        ops = calloc(n ? n : 1, sizeof(*ops));
        if (!ops)
                return NULL;
        for (unsigned s = 0; s < n_shards; s++)
                for (uint32_t i = 0; i < x->lists[s].n_doubt; i++)
                        ops[k++] = (struct xr_op){ .kind = XR_ASK, .part_shard = s,
                                                   .shard = x->lists[s].doubt[i].coordinator,
                                                   .txn = x->lists[s].doubt[i].txn };
        *ret_n = n;
        return ops;
}

/* A commit per participant of every decision (commit), or a forget per
 * decision on its coordinator. */
static struct xr_op *decision_ops(struct xr *x, bool commit, uint32_t *ret_n)
{
        unsigned n_shards = x->shards->n;
        uint32_t n = 0, k = 0;
        struct xr_op *ops;

        for (unsigned s = 0; s < n_shards; s++)
                for (uint32_t i = 0; i < x->lists[s].n_dec; i++)
                        n += commit ? x->lists[s].dec[i].n_participants : 1;
        ops = calloc(n ? n : 1, sizeof(*ops));
        if (!ops)
                return NULL;
        for (unsigned s = 0; s < n_shards; s++) {
                for (uint32_t i = 0; i < x->lists[s].n_dec; i++) {
                        const struct eng_xtxn_decision *d = &x->lists[s].dec[i];

                        if (!commit)
                                ops[k++] = (struct xr_op){ .kind = XR_FORGET, .shard = s,
                                                           .txn = d->txn };
                        for (uint32_t p = 0; commit && p < d->n_participants; p++)
                                ops[k++] = (struct xr_op){ .kind = XR_COMMIT,
                                                           .shard = d->participants[p],
                                                           .txn = d->txn };
                }
        }
        *ret_n = n;
        return ops;
}

static void phase_next(struct xr *x)
{
        struct xr_op *ops = NULL;
        uint32_t n = 0;

        for (uint32_t i = 0; i < x->n_ops; i++)
                if (x->ops[i].res < 0) {
                        finish(x, scree_strerror(x->ops[i].res));
                        return;
                }
        switch (x->phase) {
        case PH_LIST:
                ops = ask_ops(x, &n);
                if (ops)
                        phase_send(x, PH_ASK, ops, n);
                break;
        case PH_ASK:
                /* The same ops go on to the parts' own shards. */
                x->resolved = x->n_ops;
                for (uint32_t i = 0; i < x->n_ops; i++) {
                        x->ops[i].shard = x->ops[i].part_shard;
                        x->ops[i].kind = x->ops[i].decided ? XR_COMMIT : XR_ABORT;
                }
                ops = x->ops;
                phase_send(x, PH_PARTS, ops, x->n_ops);
                break;
        case PH_PARTS:
                ops = decision_ops(x, true, &n);
                if (ops)
                        phase_send(x, PH_DECISIONS, ops, n);
                break;
        case PH_DECISIONS:
                ops = decision_ops(x, false, &n);
                if (ops)
                        phase_send(x, PH_FORGET, ops, n);
                break;
        case PH_FORGET:
                finish(x, NULL);
                return;
        }
        if (!ops)
                finish(x, "out of memory");
}

void eng_xtxn_resolve(struct rx_loop *loop0, const struct eng_shards *shards,
                      void (*done)(void *arg), void *arg)
{
        unsigned n = shards->n;
        struct xr *x = calloc(1, sizeof(*x));

        if (!x || !(x->lists = calloc(n, sizeof(*x->lists)))) {
                free(x);
                log_error("resolving the cross-shard writes left in doubt: out of memory");
                done(arg);
                return;
        }
        x->loop0 = loop0;
        x->shards = shards;
        x->done = done;
        x->arg = arg;
        for (unsigned s = 0; s < n; s++)
                x->lists[s] = (struct xr_op){ .kind = XR_LIST, .shard = s };
        phase_send(x, PH_LIST, x->lists, n);
}
