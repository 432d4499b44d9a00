/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's half of a two-phase commit (shard_xtxn.h): prepared parts
 * (struct shard_txn) and a coordinator's decisions (struct shard_decision)
 * and their commit-log records; their replay, and their part in opening,
 * log truncation and closing, is shard_xtxn_replay.c.
 *
 * Invariants:
 *   - every record here but COMMIT takes a seq of its own, above every
 *     seq before it; before taking one, the writes grouped so far are
 *     logged (their record comes first) and the writes waiting for their
 *     insert are applied (s->unapplied holds consecutive seqs);
 *   - a part in s->txns holds each of its keys' FIFOs (keyq.h) from its
 *     prepare until its commit or abort; one replayed in doubt holds them
 *     from the end of the open;
 *   - while a part or a decision is in s->txns or s->decisions, its
 *     record's segment is below or at shard_log_needed (no truncation).
 * Lists are short (the txns in flight), walked linearly. Shard-local.
 * Record bytes: docs/format/wal.md, "Transaction records".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/endian.h"
#include "engine/shard_internal.h"
#include "engine/shard_xtxn.h"
#include "engine/shard_xtxn_int.h"

/* ---- lists ---- */

struct shard_txn *shard_txn_find(const struct eng_shard *s, uint64_t txn)
{
        for (struct shard_txn *t = s->txns; t; t = t->next)
                if (t->txn == txn)
                        return t;
        return NULL;
}

void shard_txn_link(struct eng_shard *s, struct shard_txn *t)
{
        struct shard_txn **p = &s->txns;

        while (*p)
                p = &(*p)->next;
        t->next = NULL;
        *p = t;
}

void shard_txn_unlink(struct eng_shard *s, struct shard_txn *t)
{
        for (struct shard_txn **p = &s->txns; *p; p = &(*p)->next) {
                if (*p == t) {
                        *p = t->next;
                        return;
                }
        }
}

void shard_txn_leave_keys(struct eng_shard *s, struct shard_txn *t)
{
        for (uint32_t i = 0; i < t->n_nodes; i++)
                shard_order_leave(s, &t->nodes[i]);
        free(t->nodes);
        t->nodes = NULL;
        t->n_nodes = 0;
}

void shard_txn_free(struct shard_txn *t)
{
        if (!t)
                return;
        free(t->nodes);
        free(t->batch);
        free(t);
}

static void txn_maybe_free(struct shard_txn *t)
{
        if (t->dropped && !t->ack_pending && !t->run_pending)
                shard_txn_free(t);
}

/* Takes t out of the shard: its keys go now; it is freed once nothing
 * refers to it any more (txn_maybe_free). */
static void txn_drop(struct eng_shard *s, struct shard_txn *t)
{
        /* All of its FIFOs came free, and the order task has not run it
         * yet: it sits on the ready list, which keeps a pointer to it. */
        t->run_pending = t->n_nodes && !t->held && t->qop.waiting == 0;
        shard_txn_unlink(s, t);
        shard_txn_leave_keys(s, t);
        t->dropped = true;
}

struct shard_decision *shard_decision_find(const struct eng_shard *s, uint64_t txn)
{
        for (struct shard_decision *d = s->decisions; d; d = d->next)
                if (d->txn == txn)
                        return d;
        return NULL;
}

void shard_decision_link(struct eng_shard *s, struct shard_decision *d)
{
        struct shard_decision **p = &s->decisions;

        while (*p)
                p = &(*p)->next;
        d->next = NULL;
        *p = d;
}

void shard_decision_drop(struct eng_shard *s, struct shard_decision *d)
{
        for (struct shard_decision **p = &s->decisions; *p; p = &(*p)->next) {
                if (*p == d) {
                        *p = d->next;
                        free(d);
                        return;
                }
        }
}

/* Ids of txns s coordinates stay above n. */
void shard_txn_counter_raise(struct eng_shard *s, uint64_t txn)
{
        if (eng_xtxn_coordinator(txn) == s->o.shard && (txn & XTXN_COUNTER_MASK) >= s->txn_next)
                s->txn_next = (txn & XTXN_COUNTER_MASK) + 1;
}

uint64_t eng_shard_txn_new(struct eng_shard *s)
{
        if (s->txn_next <= s->txn_floor)
                s->txn_next = s->txn_floor + 1;
        return ((uint64_t)s->o.shard << ENG_XTXN_SHARD_SHIFT) | (s->txn_next++ & XTXN_COUNTER_MASK);
}

/* ---- logging ---- */

/* An unsynced record's acknowledgement (batch mode needs a write to
 * acknowledge): only a failure matters. */
struct lazy_write {
        struct eng_wal_write ww;
        struct eng_shard *s;
};

static void lazy_acked(struct eng_wal_write *ww, int res)
{
        struct lazy_write *l = container_of(ww, struct lazy_write, ww);

        if (res < 0 && res != -ENOSPC)
                shard_set_error(l->s, res, "commit-log write");
        free(l);
}

/* The log is ready for a record with a seq of its own: what was grouped is
 * logged, what waits for its insert is in. Returns the seq to use. */
static uint64_t next_own_seq(struct eng_shard *s)
{
        shard_log_group(s);
        shard_apply_pending(s);
        return s->last_seq + 1;
}

/* Appends a record at seq (durable: acknowledged through ww once synced;
 * else ww may be NULL). Returns 0 (ww's done runs: durable, or batch
 * mode), 1 (acknowledged), or <0 (nothing logged). */
static int log_record(struct eng_shard *s, enum eng_wal_record_type type, uint64_t seq,
                      const void *payload, uint32_t len, struct eng_wal_write *ww, bool durable)
{
        struct lazy_write *l = NULL;
        int r;

        if (!ww) {
                l = malloc(sizeof(*l));
                if (!l)
                        return -ENOMEM;
                *l = (struct lazy_write){ .s = s };
                l->ww.done = lazy_acked;
                ww = &l->ww;
        }
        ww->writers = l ? 0 : 1;        /* a lazy record: nobody waits */
        r = eng_wal_append_record(s->wal, ww, type, seq, payload, len, durable);
        if (r != 0)
                free(l);
        if (r < 0 && r != -E2BIG && r != -EINVAL && r != -ENOMEM)
                shard_set_error(s, r, "commit-log append");
        if (r >= 0)
                s->stats.log_records++;
        return r;
}

/* Logs a record of only the txn id, unsynced, with a seq of its own. */
static int log_txn_only(struct eng_shard *s, enum eng_wal_record_type type, uint64_t txn)
{
        uint8_t p[XTXN_TXN_BYTES];
        uint64_t seq = next_own_seq(s);
        int r;

        le64_put(p, txn);
        r = log_record(s, type, seq, p, sizeof(p), NULL, false);
        if (r >= 0)
                s->last_seq = seq;
        return r;
}

static int writable(const struct eng_shard *s)
{
        if (s->error)
                return s->error;
        if (s->closing)
                return -SCREE_ESHUTDOWN;
        if (eng_wal_is_full(s->wal))
                return -ENOSPC;
        return 0;
}

/* ---- prepare ---- */

/* The prepare is done once its record is durable and its keys are held. */
static void prepare_maybe_done(struct shard_txn *t)
{
        struct eng_xtxn_op *op = t->op;

        if (!op || !t->logged || !t->held)
                return;
        t->op = NULL;
        op->done(op, 0);
}

/* Drops a part that will not be prepared, answering its prepare. */
static void prepare_fail(struct eng_shard *s, struct shard_txn *t, int res)
{
        struct eng_xtxn_op *op = t->op;

        t->op = NULL;
        txn_drop(s, t);
        txn_maybe_free(t);
        if (op)
                op->done(op, res);
}

static void prepare_logged(struct eng_wal_write *ww, int res)
{
        struct eng_xtxn_op *op = container_of(ww, struct eng_xtxn_op, ww);
        struct shard_txn *t = op->part;
        struct eng_shard *s = op->s;

        if (res < 0 && res != -ENOSPC)
                shard_set_error(s, res, "commit-log write");
        t->ack_pending = false;
        if (t->dropped) {               /* aborted meanwhile (eng_shard_abort) */
                t->op = NULL;
                txn_maybe_free(t);
                op->done(op, -ECANCELED);
                return;
        }
        if (res < 0) {
                prepare_fail(s, t, res);
                return;
        }
        t->logged = true;
        if (s->closing && !t->held) {   /* its keys were given up: it is in doubt on disk */
                t->op = NULL;
                op->done(op, -SCREE_ESHUTDOWN);
                return;
        }
        prepare_maybe_done(t);
}

static int commit_now(struct eng_shard *s, struct shard_txn *t, struct eng_xtxn_op *op);

/* Every earlier operation on the part's keys is done (from the order task). */
static void prepare_keys_held(struct eng_keyq_op *qop)
{
        struct shard_txn *t = container_of(qop, struct shard_txn, qop);

        if (t->dropped) {
                t->run_pending = false;
                txn_maybe_free(t);
                return;
        }
        if (t->s->closing || !t->n_nodes)
                return;         /* its places were given up (close) */
        t->held = true;
        if (t->commit_op) {     /* a commit waited for this */
                struct eng_xtxn_op *op = t->commit_op;
                int r;

                t->commit_op = NULL;
                r = commit_now(t->s, t, op);
                if (r < 0)
                        op->done(op, r);
                return;
        }
        prepare_maybe_done(t);
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* Enters each distinct key of t's part into its FIFO. Returns 0 (t->held
 * says whether it heads all of them) or -ENOMEM / -SCREE_ECORRUPT (t holds
 * none). */
int shard_txn_hold_keys(struct eng_shard *s, struct shard_txn *t)
{
        struct eng_batch_iter it;
        struct eng_entry e;
        uint64_t *fp;
        uint32_t n = 0, u = 0;
        int r = eng_batch_iter_init(&it, t->batch, t->batch_len, 0);

        if (r < 0)
                return r;
        fp = malloc(it.left * sizeof(*fp));
        if (!fp)
                return -ENOMEM;
        while ((r = eng_batch_iter_next(&it, &e)) == 1)
                fp[n++] = eng_keyq_fp(e.key, e.key_len);
        if (r == 0 && n > 1)
                qsort(fp, n, sizeof(*fp), cmp_u64);
        for (uint32_t i = 0; r == 0 && i < n; i++)
                if (!u || fp[u - 1] != fp[i])
                        fp[u++] = fp[i];
        t->nodes = r == 0 ? calloc(u, sizeof(*t->nodes)) : NULL;
        if (r == 0 && !t->nodes)
                r = -ENOMEM;
        t->qop = (struct eng_keyq_op){ .run = prepare_keys_held };
        for (uint32_t i = 0; r == 0 && i < u; i++) {
                t->nodes[i] = (struct eng_keyq_node){ .op = &t->qop, .fp = fp[i] };
                r = eng_keyq_enter(&s->keyq, &t->nodes[i]);
                if (r >= 0) {
                        t->n_nodes++;
                        r = 0;
                }
        }
        free(fp);
        if (r < 0) {
                shard_txn_leave_keys(s, t);
                return r;
        }
        t->held = t->qop.waiting == 0;
        return 0;
}

/* A part from the encoded batch in the scratch (or payload). NULL: ENOMEM. */
struct shard_txn *shard_txn_new(struct eng_shard *s, uint64_t txn, uint32_t coordinator,
                                 const uint8_t *batch, uint32_t len)
{
        struct shard_txn *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        t->batch = malloc(len);
        if (!t->batch) {
                free(t);
                return NULL;
        }
        memcpy(t->batch, batch, len);
        t->batch_len = len;
        t->count = le32_get(batch);
        t->s = s;
        t->txn = txn;
        t->coordinator = coordinator;
        return t;
}

/* The PREPARE record of t into a fresh buffer (caller frees). */
static uint8_t *prepare_payload(const struct shard_txn *t, uint32_t *ret_len)
{
        uint8_t *p = malloc(XTXN_PREPARE_HEAD_BYTES + (size_t)t->batch_len);

        if (!p)
                return NULL;
        le64_put(p, t->txn);
        le32_put(p + 8, t->coordinator);
        le32_put(p + 12, 0);
        memcpy(p + XTXN_PREPARE_HEAD_BYTES, t->batch, t->batch_len);
        *ret_len = XTXN_PREPARE_HEAD_BYTES + t->batch_len;
        return p;
}

static int prepare_check(const struct eng_shard *s, uint64_t txn, uint32_t coordinator)
{
        int r = writable(s);

        if (r < 0)
                return r;
        if (txn == ENG_XTXN_NONE || coordinator != eng_xtxn_coordinator(txn) ||
            coordinator >= s->o.n_shards)
                return -EINVAL;
        if (shard_txn_find(s, txn))
                return -EEXIST;
        return 0;
}

int eng_shard_prepare(struct eng_shard *s, uint64_t txn, uint32_t coordinator,
                      const struct eng_mutation *m, uint32_t n, struct eng_xtxn_op *op)
{
        struct shard_txn *t;
        uint8_t *payload;
        uint32_t len, sec;
        uint64_t seq;
        int r = prepare_check(s, txn, coordinator);

        if (r == 0)
                r = shard_encode(s, m, n);
        if (r == 0)
                r = shard_rl_write(s, s->scratch.buf, (uint32_t)s->scratch.len, &sec);
        if (r < 0)
                return r;
        t = shard_txn_new(s, txn, coordinator, s->scratch.buf, (uint32_t)s->scratch.len);
        if (!t) {
                shard_rl_give_back(s, s->scratch.buf, (uint32_t)s->scratch.len, sec);
                return -ENOMEM;
        }
        t->rl_sec = sec;
        payload = prepare_payload(t, &len);
        r = payload ? shard_txn_hold_keys(s, t) : -ENOMEM;
        if (r < 0)
                goto fail;
        *op = (struct eng_xtxn_op){ .done = op->done, .ctx = op->ctx, .s = s, .txn = txn, .part = t };
        op->ww.done = prepare_logged;
        seq = next_own_seq(s);
        r = log_record(s, ENG_WAL_RECORD_PREPARE, seq, payload, len, &op->ww, true);
        if (r < 0) {
                shard_txn_leave_keys(s, t);
                goto fail;
        }
        free(payload);
        s->last_seq = seq;
        t->segment = eng_wal_segment(s->wal);
        t->op = op;
        t->ack_pending = true;
        shard_txn_link(s, t);
        shard_txn_counter_raise(s, txn);
        return 0;
fail:
        shard_rl_give_back(s, t->batch, t->batch_len, t->rl_sec);
        free(payload);
        shard_txn_free(t);
        return r;
}

/* ---- commit and abort ---- */

static void commit_logged(struct eng_wal_write *ww, int res)
{
        struct eng_xtxn_op *op = container_of(ww, struct eng_xtxn_op, ww);

        if (res < 0 && res != -ENOSPC)
                shard_set_error(op->s, res, "commit-log write");
        op->done(op, res);
}

/* Applies t's part and logs its COMMIT; t is gone once it returns 0. */
static int commit_now(struct eng_shard *s, struct shard_txn *t, struct eng_xtxn_op *op)
{
        uint8_t *payload;
        uint64_t first_seq;
        int r = writable(s), a;

        if (r < 0)
                return r;
        payload = malloc(XTXN_TXN_BYTES + (size_t)t->batch_len);
        if (!payload)
                return -ENOMEM;
        le64_put(payload, t->txn);
        memcpy(payload + XTXN_TXN_BYTES, t->batch, t->batch_len);
        first_seq = next_own_seq(s);
        r = log_record(s, ENG_WAL_RECORD_COMMIT, first_seq, payload, XTXN_TXN_BYTES + t->batch_len,
                       &op->ww, true);
        free(payload);
        if (r < 0)
                return r;
        s->last_seq += t->count;
        a = shard_apply_batch(s, t->batch, t->batch_len, first_seq, eng_wal_segment(s->wal));
        if (a < 0)      /* logged but not in memory: the shard no longer matches its log */
                shard_set_error(s, a, "memtable insert");
        s->stats.writes++;
        s->stats.entries_written += t->count;
        shard_txn_unlink(s, t);
        shard_txn_leave_keys(s, t);     /* in the memtables first: who waited sees it */
        shard_txn_free(t);
        shard_maybe_flush(s);
        return 0;
}

int eng_shard_commit(struct eng_shard *s, uint64_t txn, struct eng_xtxn_op *op)
{
        struct shard_txn *t = shard_txn_find(s, txn);
        int r;

        if (!t)
                return -SCREE_ENOTFOUND;
        if (!t->logged || t->op || t->commit_op)
                return -EBUSY;          /* its prepare (or a commit) is pending */
        r = writable(s);
        if (r < 0)
                return r;
        *op = (struct eng_xtxn_op){ .done = op->done, .ctx = op->ctx, .s = s, .txn = txn };
        op->ww.done = commit_logged;
        if (!t->held) {                 /* replayed behind another part: wait for it */
                t->commit_op = op;
                return 0;
        }
        return commit_now(s, t, op);
}

int eng_shard_abort(struct eng_shard *s, uint64_t txn)
{
        struct shard_txn *t = shard_txn_find(s, txn);
        struct eng_xtxn_op *op;
        int r = 0;

        if (!t)
                return -SCREE_ENOTFOUND;
        if (t->commit_op) {             /* a commit waiting for the keys: not any more */
                struct eng_xtxn_op *c = t->commit_op;

                t->commit_op = NULL;
                c->done(c, -ECANCELED);
        }
        op = t->op;
        shard_rl_give_back(s, t->batch, t->batch_len, t->rl_sec);
        txn_drop(s, t);
        /* Logged after its PREPARE (whether durable yet or not): replay
         * meets them in that order. */
        if (!s->error && !s->closing)
                r = log_txn_only(s, ENG_WAL_RECORD_ABORT, txn);
        if (t->ack_pending)     /* the prepare's ack answers it */
                return r < 0 ? r : 0;
        t->op = NULL;
        txn_maybe_free(t);
        if (op)
                op->done(op, -ECANCELED);
        return r < 0 ? r : 0;
}

uint32_t eng_shard_in_doubt(const struct eng_shard *s, struct eng_xtxn_id *ret, uint32_t cap)
{
        uint32_t n = 0;

        for (const struct shard_txn *t = s->txns; t; t = t->next) {
                if (!t->logged)
                        continue;
                if (n < cap)
                        ret[n] = (struct eng_xtxn_id){ .txn = t->txn, .coordinator = t->coordinator };
                n++;
        }
        return n;
}

/* ---- decisions ---- */

static void decision_logged(struct eng_wal_write *ww, int res)
{
        struct eng_xtxn_op *op = container_of(ww, struct eng_xtxn_op, ww);
        struct shard_decision *d = op->part;

        if (res < 0) {
                if (res != -ENOSPC)
                        shard_set_error(op->s, res, "commit-log write");
                shard_decision_drop(op->s, d);
        } else {
                d->durable = true;
        }
        op->done(op, res);
}

static int decide_check(const struct eng_shard *s, uint64_t txn, const uint32_t *participants,
                        uint32_t n)
{
        int r = writable(s);

        if (r < 0)
                return r;
        if (txn == ENG_XTXN_NONE || eng_xtxn_coordinator(txn) != s->o.shard || n == 0 ||
            n > s->o.n_shards)
                return -EINVAL;
        for (uint32_t i = 0; i < n; i++)
                if (participants[i] >= s->o.n_shards)
                        return -EINVAL;
        return shard_decision_find(s, txn) ? -EEXIST : 0;
}

int eng_shard_decide(struct eng_shard *s, uint64_t txn, const uint32_t *participants, uint32_t n,
                     struct eng_xtxn_op *op)
{
        struct shard_decision *d;
        uint8_t *p;
        uint32_t len = XTXN_TXN_BYTES + 4 + 4 * n;
        uint64_t seq;
        int r = decide_check(s, txn, participants, n);

        if (r < 0)
                return r;
        d = malloc(sizeof(*d) + (size_t)n * sizeof(d->participants[0]));
        p = malloc(len);
        if (!d || !p) {
                free(d);
                free(p);
                return -ENOMEM;
        }
        *d = (struct shard_decision){ .txn = txn, .n = n };
        le64_put(p, txn);
        le32_put(p + XTXN_TXN_BYTES, n);
        for (uint32_t i = 0; i < n; i++) {
                d->participants[i] = participants[i];
                le32_put(p + XTXN_TXN_BYTES + 4 + 4 * i, participants[i]);
        }
        *op = (struct eng_xtxn_op){ .done = op->done, .ctx = op->ctx, .s = s, .txn = txn, .part = d };
        op->ww.done = decision_logged;
        seq = next_own_seq(s);
        r = log_record(s, ENG_WAL_RECORD_DECISION, seq, p, len, &op->ww, true);
        free(p);
        if (r < 0) {
                free(d);
                return r;
        }
        s->last_seq = seq;
        d->segment = eng_wal_segment(s->wal);
        shard_decision_link(s, d);
        shard_txn_counter_raise(s, txn);
        return 0;
}

int eng_shard_forget(struct eng_shard *s, uint64_t txn)
{
        struct shard_decision *d = shard_decision_find(s, txn);
        int r;

        if (!d)
                return -SCREE_ENOTFOUND;
        if (!d->durable)
                return -EBUSY;
        if (s->error)
                return s->error;
        if (s->closing)
                return -SCREE_ESHUTDOWN;
        r = log_txn_only(s, ENG_WAL_RECORD_FORGET, txn);
        if (r < 0)
                return r;
        shard_decision_drop(s, d);
        return 0;
}

bool eng_shard_decided(struct eng_shard *s, uint64_t txn)
{
        shard_txn_counter_raise(s, txn);
        return shard_decision_find(s, txn) != NULL;
}

uint32_t eng_shard_decisions(const struct eng_shard *s, struct eng_xtxn_decision *ret, uint32_t cap)
{
        uint32_t n = 0;

        for (const struct shard_decision *d = s->decisions; d; d = d->next) {
                if (!d->durable)
                        continue;
                if (n < cap)
                        ret[n] = (struct eng_xtxn_decision){ .txn = d->txn, .n_participants = d->n,
                                                            .participants = d->participants };
                n++;
        }
        return n;
}
