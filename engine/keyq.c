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
        fpmap_init(&q->keys, sizeof(struct fifo));
        q->ready_head = q->ready_tail = NULL;
}

void eng_keyq_fini(struct eng_keyq *q)
{
        SCREE_ASSERT(q->keys.n_entries == 0 && !q->ready_head);
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

int eng_keyq_enter(struct eng_keyq *q, struct eng_keyq_node *node)
{
        struct fifo *f = fpmap_find(&q->keys, node->fp);

        node->next = NULL;
        if (!f) {
                f = fpmap_insert(&q->keys, node->fp);
                if (!f)
                        return -ENOMEM;
                f->head = f->tail = node;
                return 1;
        }
        f->tail->next = node;
        f->tail = node;
        node->op->waiting++;
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
                return;
        }
        f->head = node->next;
        if (!f->head) {
                fpmap_remove(&q->keys, f);
                return;
        }
        if (--f->head->op->waiting == 0)
                ready(q, f->head->op);
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
