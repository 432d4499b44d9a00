/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's half of a two-phase commit: a write of several rows that is
 * atomic across a crash even when the rows lie on different shards
 * (issue 25). Design, records and recovery rules: docs/transactions.md,
 * "Writes across shards: two-phase commit"; record bytes:
 * docs/format/wal.md, "Transaction records".
 *
 * Roles. A txn has one coordinator shard (the one that made its id with
 * eng_shard_txn_new) and one or more participant shards, usually the
 * coordinator among them; each participant holds one part: the rows of
 * the txn that are its own. The caller (the server) drives the protocol
 * over the shards' message queues:
 *   1. every participant: eng_shard_prepare -- the part is logged durably
 *      (PREPARE) but not applied, and its keys are held: every later get,
 *      write, read-modify-write of them, and every later scan of the
 *      shard, waits until the txn commits or aborts (keyq.h);
 *   2. all prepared: the coordinator eng_shard_decide -- a durable
 *      DECISION record naming the participants: from now on the txn
 *      commits, whatever crashes;
 *      one prepare failed: eng_shard_abort on every participant that
 *      prepared, no decision;
 *   3. every participant: eng_shard_commit -- the part is applied as a
 *      write whose record (COMMIT) names the txn, the keys are released;
 *   4. every commit durable: the coordinator eng_shard_forget.
 * After a crash each shard replays its own log; once every shard is open
 * the caller resolves: for each (txn, coordinator) of eng_shard_in_doubt
 * on any shard, eng_shard_decided on the coordinator says commit or
 * abort; then for each of eng_shard_decisions it sends eng_shard_commit to
 * the participants (-SCREE_ENOTFOUND: done already) and forgets it.
 *
 * Deadlock: a prepare waits for its keys, so two txns that prepare on two
 * shards in opposite orders wait for each other forever. The caller must
 * bound a prepare's wait (abort the txn on a timeout: eng_shard_abort
 * also ends a prepare still waiting).
 *
 * Callback contract as shard.h: 0 pending, the op's done runs once,
 * later, from the loop; <0 at once, done never runs (but for the one case
 * eng_shard_abort names). Shard-local: every call on the shard's loop.
 */
#ifndef SCREE_ENGINE_SHARD_XTXN_H
#define SCREE_ENGINE_SHARD_XTXN_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/wal.h"

struct eng_shard;
struct eng_mutation;

/* A txn id: the coordinator shard in the top 16 bits, a number the
 * coordinator never gave out before in the low 48 (eng_shard_txn_new). */
#define ENG_XTXN_SHARD_SHIFT 48
#define ENG_XTXN_NONE UINT64_C(0)

static inline uint32_t eng_xtxn_coordinator(uint64_t txn)
{
        return (uint32_t)(txn >> ENG_XTXN_SHARD_SHIFT);
}

/* Caller-provided for a prepare, a decision or a commit; valid until done
 * runs. */
struct eng_xtxn_op {
        void (*done)(struct eng_xtxn_op *op, int res);
        void *ctx;
        /* internal */
        struct eng_shard *s;
        uint64_t txn;
        void *part;                     /* prepare: its part; decide: its decision */
        struct eng_wal_write ww;
};

/* A txn in doubt here: prepared, neither committed nor aborted. */
struct eng_xtxn_id {
        uint64_t txn;
        uint32_t coordinator;
};

/* A decision of this coordinator not yet forgotten. participants is
 * borrowed: valid until eng_shard_forget of txn or the shard's close. */
struct eng_xtxn_decision {
        uint64_t txn;
        uint32_t n_participants;
        const uint32_t *participants;
};

/*
 * A new txn id with s as coordinator: unique across the shards (the top
 * bits name s) and across restarts: above every id of s's own replayed log
 * (its prepares, decisions, commits, aborts, forgets) and above every id
 * eng_shard_decided was asked about -- which the start-up resolution asks
 * for each txn in doubt anywhere -- and above s's last seq at open.
 * REQUIRES (for that guarantee): the start-up resolution ran before the
 * first call. Shard-local.
 */
uint64_t eng_shard_txn_new(struct eng_shard *s);

/*
 * Participant, phase 1: validates and encodes n mutations (m borrowed for
 * the call; keys and values are copied) like eng_shard_write, logs them as
 * a PREPARE record for txn with its coordinator -- synced in either sync
 * mode: the decision relies on it -- without applying them, and holds
 * their keys (see the top) until eng_shard_commit or eng_shard_abort. Its
 * log segment stays (no truncation) while the txn is in doubt here.
 * Returns 0: op->done(op, res) runs once the record is durable and the
 * keys are held (earlier operations on them done): res 0, prepared (a
 * "yes" vote); or <0: the log failed (-ENOSPC: the disk is full -- the
 * record may still land, then it is in doubt after a restart), the txn
 * aborted meanwhile (-ECANCELED), or -SCREE_ESHUTDOWN; with <0 the part is
 * gone (a "no" vote). Returns <0 at once: -EINVAL (as eng_shard_write;
 * also a coordinator that is not eng_xtxn_coordinator(txn) or not below
 * n_shards, txn ENG_XTXN_NONE), -SCREE_ENOTFOUND (a table the catalog
 * lacks), -SCREE_ERATELIMIT (a partition it writes is at its table's
 * write limit, shard.h), -E2BIG (the part cannot fit a log segment), -EEXIST (txn has a
 * part here already), -ENOSPC (the log is full), -ENOMEM,
 * -SCREE_ESHUTDOWN, or the error that stopped writes. Shard-local.
 */
int eng_shard_prepare(struct eng_shard *s, uint64_t txn, uint32_t coordinator,
                      const struct eng_mutation *m, uint32_t n, struct eng_xtxn_op *op);

/*
 * Coordinator, phase 2: logs the decision to commit txn, naming its
 * participants (n shard ids, borrowed for the call), synced in either
 * mode. From the moment the record is durable the txn commits, crash or
 * not. It stays in the log (no truncation) until eng_shard_forget.
 * Returns 0: op->done(op, res) runs when the record is durable (res 0:
 * decided; commit the participants) or failed (res <0: not decided --
 * abort them; the decision is gone from memory); or <0 at once: -EINVAL
 * (s is not eng_xtxn_coordinator(txn), n 0 or a participant not below
 * n_shards), -EEXIST (decided already), -ENOSPC, -ENOMEM,
 * -SCREE_ESHUTDOWN, or the error that stopped writes. Shard-local.
 */
int eng_shard_decide(struct eng_shard *s, uint64_t txn, const uint32_t *participants, uint32_t n,
                     struct eng_xtxn_op *op);

/*
 * Coordinator, phase 4: every participant's commit of txn is durable; the
 * decision is no longer needed. Logs a FORGET record (not synced: if it is
 * lost the decision comes back at the next start and its commits are sent
 * again, each answered -SCREE_ENOTFOUND) and lets the log be truncated
 * past the decision. Returns 0, -SCREE_ENOTFOUND (no decision for txn
 * here), -EBUSY (its eng_shard_decide is still pending), or the error
 * that stopped writes (the decision stays). Shard-local.
 */
int eng_shard_forget(struct eng_shard *s, uint64_t txn);

/*
 * Participant, phase 3: applies txn's prepared part to the memtables as
 * one write (new seqs; its record, COMMIT, names txn, so that replay knows
 * the txn committed here), then releases its keys: operations that waited
 * see it. Returns 0: op->done(op, res) runs once the record is durable --
 * in either sync mode, because eng_shard_forget relies on it -- res 0, or
 * <0 (the log failed: not known durable; keep the decision); or <0 at
 * once, the part still held: -SCREE_ENOTFOUND (txn is not in doubt here:
 * committed or aborted already, or never prepared -- a commit resent after
 * a restart gets this and changes nothing), -EBUSY (its prepare, or a
 * commit of it, is still pending), -ENOSPC (the log is full: retry),
 * -SCREE_ESHUTDOWN, or the error that stopped writes. A part replayed in
 * doubt behind another part in doubt on a key they share (its prepare
 * had waited for that one when the crash came) waits for that one's
 * commit or abort: 0, and done runs after it (-ECANCELED if the part is
 * aborted meanwhile, -SCREE_ESHUTDOWN at a close). A commit never stalls
 * for memory: the budget may be exceeded by the parts being committed.
 * Shard-local.
 */
int eng_shard_commit(struct eng_shard *s, uint64_t txn, struct eng_xtxn_op *op);

/*
 * Participant: drops txn's part and releases its keys, and logs an ABORT
 * record (not synced: if it is lost the part is in doubt again at the next
 * start, and its coordinator, having no decision, says abort again).
 * Also ends a prepare still pending: its done runs with -ECANCELED, from
 * inside this call if its record is durable already, else once it is.
 * Returns 0, -SCREE_ENOTFOUND (not in doubt here), or the log's error
 * (the part is dropped anyway). Shard-local.
 */
int eng_shard_abort(struct eng_shard *s, uint64_t txn);

/* Writes up to cap of the txns in doubt here (PREPARE record durable, or
 * replayed; no commit nor abort yet) into ret, oldest first, and returns
 * how many there are (more than cap: only cap written). At start-up it
 * may hold a part whose prepare had not finished waiting for its keys at
 * the crash, queued behind another part on a key they share (see
 * eng_shard_commit). Shard-local. */
uint32_t eng_shard_in_doubt(const struct eng_shard *s, struct eng_xtxn_id *ret, uint32_t cap);

/* Coordinator: whether s holds a decision to commit txn (logged, not
 * forgotten). Also raises eng_shard_txn_new's ids above txn's number if
 * s coordinates txn. REQUIRES: no eng_shard_decide of txn pending (the
 * start-up resolution asks before any new txn). Shard-local. */
bool eng_shard_decided(struct eng_shard *s, uint64_t txn);

/* Writes up to cap of the decisions of s not yet forgotten into ret,
 * oldest first, and returns how many there are. Shard-local. */
uint32_t eng_shard_decisions(const struct eng_shard *s, struct eng_xtxn_decision *ret,
                             uint32_t cap);

#endif
