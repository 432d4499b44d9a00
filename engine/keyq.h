/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-key order of a shard's operations (design: docs/design.md, "One
 * key's operations in order"). An operation on a key is "in flight" from
 * its call until its effect is in the memtables: a read-modify-write
 * between its read and its write, a write that waits for memory (a
 * stall) or for a key ahead of it. While one is in flight, every later
 * operation on that key -- read, write, read-modify-write -- waits behind
 * it in the key's FIFO, so operations on one key take effect in the order
 * they were called and a read sees every write called before it, stalled
 * or not.
 *
 * A node is one operation's place in one key's FIFO; an operation over
 * several keys (a batch) has a node per distinct key, all entered in one
 * call, so FIFOs are ordered by call time and no cycle of waits can form.
 * An operation runs once it heads every FIFO it is in: leaving a FIFO
 * hands the head to the next node, and an operation that now heads all
 * of its FIFOs is put on the ready list for its owner to run (never from
 * inside the leave). Keys are fingerprints (base/fpmap.h): a collision
 * only costs waiting. A barrier waits, keyless, for every operation in
 * flight at its call.
 *
 * Pure: no I/O, no loop. Shard-local.
 */
#ifndef SCREE_ENGINE_KEYQ_H
#define SCREE_ENGINE_KEYQ_H

#include <stdbool.h>
#include <stdint.h>

#include "base/fpmap.h"

/* An operation that may wait. Caller-provided; valid while any of its
 * nodes is in a FIFO or it is on the ready list. */
struct eng_keyq_op {
        uint32_t waiting;               /* FIFOs it does not head yet */
        struct eng_keyq_op *next_ready;
        void (*run)(struct eng_keyq_op *op);    /* for the owner of the ready list */
        /* internal: in flight in call order (for barriers) */
        uint32_t n_in;                  /* FIFOs it is in */
        uint64_t ticket;
        struct eng_keyq_op *live_prev, *live_next;
};

/* One operation's place in one key's FIFO. Caller-provided. */
struct eng_keyq_node {
        struct eng_keyq_node *next;
        struct eng_keyq_op *op;
        uint64_t fp;
};

struct eng_keyq {
        struct fpmap keys;              /* fp -> FIFO; an entry exists while it is not empty */
        struct eng_keyq_op *ready_head, *ready_tail;
        uint64_t last_ticket;
        struct eng_keyq_op *live_head, *live_tail;      /* in flight, oldest first */
        struct eng_keyq_op *bar_head, *bar_tail;        /* barriers waiting */
};

void eng_keyq_init(struct eng_keyq *q);

/* REQUIRES: every FIFO and the ready list empty. */
void eng_keyq_fini(struct eng_keyq *q);

/* No key in flight: the fast path, one branch. */
static inline bool eng_keyq_is_idle(const struct eng_keyq *q)
{
        return q->keys.n_entries == 0;
}

/* The fingerprint of a key (the bytes that name it). Pure. */
uint64_t eng_keyq_fp(const void *key, uint32_t len);

/* Whether an operation is in flight on fp. */
bool eng_keyq_is_busy(const struct eng_keyq *q, uint64_t fp);

/*
 * Appends node (node->fp, node->op set by the caller) to its key's FIFO.
 * Returns 1: node heads the FIFO; 0: it waits (node->op->waiting counts
 * it); -ENOMEM (nothing changed). An operation must not enter one fp
 * twice.
 */
int eng_keyq_enter(struct eng_keyq *q, struct eng_keyq_node *node);

/* Takes node out of its FIFO. When it headed it, the next node heads it
 * now, and that one's operation goes on the ready list if it heads all of
 * its FIFOs; a node that was waiting just gives up its place (its
 * operation waits for one FIFO less). REQUIRES: node entered. */
void eng_keyq_leave(struct eng_keyq *q, struct eng_keyq_node *node);

/* A barrier: op runs once every operation in flight now has left all of
 * its FIFOs (a scan that must see every write called before it). Returns
 * 1: none in flight, go on now; 0: op goes on the ready list later. */
int eng_keyq_barrier(struct eng_keyq *q, struct eng_keyq_op *op);

/* The next operation ready to run, in the order they became ready, or
 * NULL. */
struct eng_keyq_op *eng_keyq_pop_ready(struct eng_keyq *q);

#endif
