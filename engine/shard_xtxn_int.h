/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two-phase commit's insides, shared by shard_xtxn.c (the API: prepare,
 * decide, commit, abort, forget) and shard_xtxn_replay.c (replay, open,
 * log truncation, close). Not an interface: only those two include it.
 * Shard-local. See shard_xtxn.h; record bytes: docs/format/wal.md,
 * "Transaction records".
 */
#ifndef SCREE_ENGINE_SHARD_XTXN_INT_H
#define SCREE_ENGINE_SHARD_XTXN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/keyq.h"
#include "engine/shard_xtxn.h"

struct eng_shard;

/* PREPARE: txn u64, coordinator u32, reserved u32 (0), batch. */
#define XTXN_PREPARE_HEAD_BYTES 16u
/* COMMIT: txn u64, batch. ABORT, FORGET: txn u64. DECISION: txn u64, n
 * u32, n x participant u32. */
#define XTXN_TXN_BYTES 8u
#define XTXN_COUNTER_MASK ((UINT64_C(1) << ENG_XTXN_SHARD_SHIFT) - 1)

struct shard_txn {
        struct shard_txn *next;
        struct eng_shard *s;
        uint64_t txn;
        uint32_t coordinator;
        uint64_t segment;               /* of its PREPARE record */
        uint8_t *batch;                 /* the encoded part */
        uint32_t batch_len, count;
        /* The second its writes were counted in against the rate limits
         * (shard_rl_write), given back if it aborts; 0 if replayed. */
        uint32_t rl_sec;
        bool logged;                    /* the PREPARE record is durable (or replayed) */
        bool held;                      /* heads every FIFO of its keys */
        /* Dropped (aborted, or its prepare failed) while its record's
         * ack or its run from the key-order task is still to come: the
         * last of those frees it (txn_maybe_free). */
        bool dropped, ack_pending, run_pending;
        struct eng_xtxn_op *op;         /* the prepare waiting to be answered */
        /* A commit that waits for the part's keys: a part replayed in
         * doubt behind another one on a key it shares (eng_shard_commit). */
        struct eng_xtxn_op *commit_op;
        struct eng_keyq_op qop;
        struct eng_keyq_node *nodes;
        uint32_t n_nodes;
};

struct shard_decision {
        struct shard_decision *next;
        uint64_t txn;
        uint64_t segment;               /* of its DECISION record */
        bool durable;
        uint32_t n;
        uint32_t participants[];
};

/* The part of txn in s->txns, or NULL. */
struct shard_txn *shard_txn_find(const struct eng_shard *s, uint64_t txn);
/* Appends t to s->txns (oldest first) / takes it out. */
void shard_txn_link(struct eng_shard *s, struct shard_txn *t);
void shard_txn_unlink(struct eng_shard *s, struct shard_txn *t);
/* A part of txn from a copy of the encoded batch (len bytes). NULL: ENOMEM. */
struct shard_txn *shard_txn_new(struct eng_shard *s, uint64_t txn, uint32_t coordinator,
                                const uint8_t *batch, uint32_t len);
/* Frees t (its places left already, or never taken). Accepts NULL. */
void shard_txn_free(struct shard_txn *t);
/* Enters each distinct key of t's part into its FIFO. Returns 0 (t->held
 * says whether it heads all of them) or -ENOMEM / -SCREE_ECORRUPT (t holds
 * none). */
int shard_txn_hold_keys(struct eng_shard *s, struct shard_txn *t);
/* Leaves every FIFO t is in. */
void shard_txn_leave_keys(struct eng_shard *s, struct shard_txn *t);
/* The decision for txn in s->decisions, or NULL; append; unlink and free. */
struct shard_decision *shard_decision_find(const struct eng_shard *s, uint64_t txn);
void shard_decision_link(struct eng_shard *s, struct shard_decision *d);
void shard_decision_drop(struct eng_shard *s, struct shard_decision *d);
/* eng_shard_txn_new's numbers stay above txn's if s coordinates txn. */
void shard_txn_counter_raise(struct eng_shard *s, uint64_t txn);

#endif
