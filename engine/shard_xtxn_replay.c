/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two-phase commit's records at start-up, and its parts' and
 * decisions' share in the shard's life (shard_xtxn.h): replay keeps
 * PREPAREs aside as parts in doubt, applies COMMITs like batches and ends
 * their doubt, ends it on ABORT, tracks DECISION and FORGET; the open has
 * the parts in doubt hold their keys again; what is unresolved keeps its
 * log segment; a close gives the keys up. Shard-local.
 * Record bytes: docs/format/wal.md, "Transaction records".
 */
#include <errno.h>
#include <stdlib.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "engine/shard_internal.h"
#include "engine/shard_xtxn.h"
#include "engine/shard_xtxn_int.h"

/* ---- the shard's life: replay, open, log truncation, close ---- */

static int replay_prepare(struct eng_shard *s, uint64_t segment, const struct eng_wal_record *rec)
{
        struct eng_batch_iter it;
        struct shard_txn *t;
        uint64_t txn = le64_get(rec->payload);
        uint32_t coord = le32_get(rec->payload + 8);

        if (rec->len < XTXN_PREPARE_HEAD_BYTES + ENG_BATCH_HEADER_BYTES || txn == ENG_XTXN_NONE ||
            eng_xtxn_coordinator(txn) != coord ||
            eng_batch_iter_init(&it, rec->payload + XTXN_PREPARE_HEAD_BYTES,
                                rec->len - XTXN_PREPARE_HEAD_BYTES, 0) < 0)
                return -SCREE_ECORRUPT;
        shard_txn_counter_raise(s, txn);
        /* A txn prepared twice: the log went back and the id was given
         * out again (the txn before it was resolved): the later part counts. */
        if ((t = shard_txn_find(s, txn))) {
                shard_txn_unlink(s, t);
                shard_txn_free(t);
        }
        t = shard_txn_new(s, txn, coord, rec->payload + XTXN_PREPARE_HEAD_BYTES, rec->len - XTXN_PREPARE_HEAD_BYTES);
        if (!t)
                return -ENOMEM;
        t->segment = segment;
        t->logged = true;
        shard_txn_link(s, t);
        return 0;
}

static int replay_decision(struct eng_shard *s, uint64_t segment, const struct eng_wal_record *rec)
{
        struct shard_decision *d;
        uint64_t txn = le64_get(rec->payload);
        uint32_t n;

        if (rec->len < XTXN_TXN_BYTES + 4)
                return -SCREE_ECORRUPT;
        n = le32_get(rec->payload + XTXN_TXN_BYTES);
        if (n == 0 || n > s->o.n_shards || rec->len != XTXN_TXN_BYTES + 4 + 4 * n ||
            eng_xtxn_coordinator(txn) != s->o.shard)
                return -SCREE_ECORRUPT;
        shard_txn_counter_raise(s, txn);
        if ((d = shard_decision_find(s, txn)))
                shard_decision_drop(s, d);
        d = malloc(sizeof(*d) + (size_t)n * sizeof(d->participants[0]));
        if (!d)
                return -ENOMEM;
        *d = (struct shard_decision){ .txn = txn, .segment = segment, .durable = true, .n = n };
        for (uint32_t i = 0; i < n; i++) {
                d->participants[i] = le32_get(rec->payload + XTXN_TXN_BYTES + 4 + 4 * i);
                if (d->participants[i] >= s->o.n_shards) {
                        free(d);
                        return -SCREE_ECORRUPT;
                }
        }
        shard_decision_link(s, d);
        return 0;
}

/* A COMMIT or an ABORT of txn: no longer in doubt. Its PREPARE may lie in
 * a segment cut since: then there is nothing to end. */
static void replay_resolved(struct eng_shard *s, uint64_t txn)
{
        struct shard_txn *t = shard_txn_find(s, txn);

        if (t) {
                shard_txn_unlink(s, t);
                shard_txn_free(t);
        }
        shard_txn_counter_raise(s, txn);
}

int shard_xtxn_replay(struct eng_shard *s, uint64_t segment, const struct eng_wal_record *rec)
{
        uint64_t txn, last = rec->seq;
        int r = 0;

        if (rec->len < XTXN_TXN_BYTES)
                return -SCREE_ECORRUPT;
        txn = le64_get(rec->payload);
        switch (rec->type) {
        case ENG_WAL_RECORD_PREPARE:
                r = replay_prepare(s, segment, rec);
                break;
        case ENG_WAL_RECORD_COMMIT:
                /* A write like any: its entries go in (those not flushed). */
                if (rec->len < XTXN_TXN_BYTES + ENG_BATCH_HEADER_BYTES)
                        return -SCREE_ECORRUPT;
                r = shard_apply_batch(s, rec->payload + XTXN_TXN_BYTES, rec->len - XTXN_TXN_BYTES, rec->seq,
                                      segment);
                if (r < 0)
                        return r;
                last = rec->seq + le32_get(rec->payload + XTXN_TXN_BYTES) - 1;
                replay_resolved(s, txn);        /* committed here */
                break;
        case ENG_WAL_RECORD_ABORT:
                if (rec->len != XTXN_TXN_BYTES)
                        return -SCREE_ECORRUPT;
                replay_resolved(s, txn);
                break;
        case ENG_WAL_RECORD_DECISION:
                r = replay_decision(s, segment, rec);
                break;
        case ENG_WAL_RECORD_FORGET:
                if (rec->len != XTXN_TXN_BYTES)
                        return -SCREE_ECORRUPT;
                if (shard_decision_find(s, txn))
                        shard_decision_drop(s, shard_decision_find(s, txn));
                shard_txn_counter_raise(s, txn);
                break;
        default:
                return -SCREE_ECORRUPT;
        }
        if (r >= 0 && last > s->last_seq)
                s->last_seq = last;
        return r;
}

int shard_xtxn_open(struct eng_shard *s)
{
        /* Nothing else is in flight: every part heads its FIFOs at once,
         * unless two parts share a key (then the later waits, as it did). */
        for (struct shard_txn *t = s->txns; t; t = t->next) {
                int r = shard_txn_hold_keys(s, t);

                if (r < 0)
                        return r;
        }
        s->txn_floor = s->last_seq;
        return 0;
}

uint64_t shard_xtxn_log_needed(const struct eng_shard *s)
{
        uint64_t need = 0;

        for (const struct shard_txn *t = s->txns; t; t = t->next)
                if (t->segment && (!need || t->segment < need))
                        need = t->segment;
        for (const struct shard_decision *d = s->decisions; d; d = d->next)
                if (d->segment && (!need || d->segment < need))
                        need = d->segment;
        return need;
}

void shard_xtxn_close(struct eng_shard *s)
{
        /* The parts stay in doubt on disk; their keys go now, so that the
         * operations waiting behind them fail with the close. */
        for (struct shard_txn *t = s->txns; t; t = t->next) {
                struct eng_xtxn_op *c = t->commit_op;

                shard_txn_leave_keys(s, t);
                t->held = false;
                t->commit_op = NULL;
                if (c)
                        c->done(c, -SCREE_ESHUTDOWN);
        }
}

void shard_xtxn_fini(struct eng_shard *s)
{
        while (s->txns) {
                struct shard_txn *t = s->txns;

                s->txns = t->next;
                /* A failed open: no task runs any more, leave quietly. */
                for (uint32_t i = 0; i < t->n_nodes; i++)
                        eng_keyq_leave(&s->keyq, &t->nodes[i]);
                shard_txn_free(t);
        }
        while (eng_keyq_pop_ready(&s->keyq))
                ;
        while (s->decisions) {
                struct shard_decision *d = s->decisions;

                s->decisions = d->next;
                free(d);
        }
}
