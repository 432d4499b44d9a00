/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-key FIFOs of operations in flight (see keyq.h): a fingerprint map
 * of FIFOs, and the list of operations that came to head all of theirs.
 */
#include <errno.h>
#include <stddef.h>

#include "base/check.h"
#include "base/checksum.h"
#include "engine/keyq.h"

struct fifo {
        struct fpmap_entry hdr;
        struct eng_keyq_node *head, *tail;
};

void eng_keyq_init(struct eng_keyq *q)
{
        *q = (struct eng_keyq){ .ready_head = NULL };
        fpmap_init(&q->keys, sizeof(struct fifo));
}

void eng_keyq_fini(struct eng_keyq *q)
{
        SCREE_ASSERT(q->keys.n_entries == 0 && !q->ready_head && !q->live_head && !q->bar_head);
        fpmap_fini(&q->keys);
}

uint64_t eng_keyq_fp(const void *key, uint32_t len)
{
        return checksum64(key, len, 0x6b657971ull);     /* "keyq" */
}

bool eng_keyq_is_busy(const struct eng_keyq *q, uint64_t fp)
{
        return q->keys.n_entries && fpmap_find(&q->keys, fp);
}

/* op has a node in a FIFO now: in flight, after every op before it. */
static void live_add(struct eng_keyq *q, struct eng_keyq_op *op)
{
        if (op->n_in++)
                return;
        op->ticket = ++q->last_ticket;
        op->live_next = NULL;
        op->live_prev = q->live_tail;
        if (q->live_tail)
                q->live_tail->live_next = op;
        else
                q->live_head = op;
        q->live_tail = op;
}

static void ready(struct eng_keyq *q, struct eng_keyq_op *op);

/* op left one FIFO; out of its last, it is no longer in flight, and the
 * barriers that waited only for it and older ones may go. */
static void live_drop(struct eng_keyq *q, struct eng_keyq_op *op)
{
        if (--op->n_in)
                return;
        if (op->live_prev)
                op->live_prev->live_next = op->live_next;
        else
                q->live_head = op->live_next;
        if (op->live_next)
                op->live_next->live_prev = op->live_prev;
        else
                q->live_tail = op->live_prev;
        while (q->bar_head && (!q->live_head || q->live_head->ticket > q->bar_head->ticket)) {
                struct eng_keyq_op *b = q->bar_head;

                q->bar_head = b->next_ready;
                if (!q->bar_head)
                        q->bar_tail = NULL;
                ready(q, b);
        }
}

int eng_keyq_enter(struct eng_keyq *q, struct eng_keyq_node *node)
{
        struct fifo *f = fpmap_find(&q->keys, node->fp);

        node->next = NULL;
        if (!f) {
                f = fpmap_insert(&q->keys, node->fp);
                if (!f)
                        return -ENOMEM;
                f->head = f->tail = node;
                live_add(q, node->op);
                return 1;
        }
        f->tail->next = node;
        f->tail = node;
        node->op->waiting++;
        live_add(q, node->op);
        return 0;
}

int eng_keyq_barrier(struct eng_keyq *q, struct eng_keyq_op *op)
{
        if (!q->live_head)
                return 1;
        op->ticket = q->last_ticket;
        op->next_ready = NULL;
        if (q->bar_tail)
                q->bar_tail->next_ready = op;
        else
                q->bar_head = op;
        q->bar_tail = op;
        return 0;
}

static void ready(struct eng_keyq *q, struct eng_keyq_op *op)
{
        op->next_ready = NULL;
        if (q->ready_tail)
                q->ready_tail->next_ready = op;
        else
                q->ready_head = op;
        q->ready_tail = op;
}

void eng_keyq_leave(struct eng_keyq *q, struct eng_keyq_node *node)
{
        struct fifo *f = fpmap_find(&q->keys, node->fp);

        SCREE_VERIFY(f);
        if (f->head != node) {          /* a waiting node gives up its place */
                struct eng_keyq_node *prev = f->head;

                while (prev->next != node) {
                        prev = prev->next;
                        SCREE_VERIFY(prev);
                }
                prev->next = node->next;
                if (f->tail == node)
                        f->tail = prev;
                node->op->waiting--;
                live_drop(q, node->op);
                return;
        }
        f->head = node->next;
        if (!f->head)
                fpmap_remove(&q->keys, f);
        else if (--f->head->op->waiting == 0)
                ready(q, f->head->op);
        live_drop(q, node->op);
}

struct eng_keyq_op *eng_keyq_pop_ready(struct eng_keyq *q)
{
        struct eng_keyq_op *op = q->ready_head;

        if (op) {
                q->ready_head = op->next_ready;
                if (!q->ready_head)
                        q->ready_tail = NULL;
        }
        return op;
}
