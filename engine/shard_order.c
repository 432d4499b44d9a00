/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One key's operations in call order (shard.h, keyq.h): the places a
 * write's keys take in the shard's key FIFOs, and the task that runs the
 * operations a leave made ready. An operation on a key nobody has in
 * flight takes no place at all unless it goes in flight itself (a write
 * that stalls, a read-modify-write), so with nothing in flight a write or
 * a read pays one branch (eng_keyq_is_idle).
 */
#include <errno.h>
#include <stdlib.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "engine/batch.h"
#include "engine/shard_internal.h"

static void order_task(struct rx_loop *loop, struct rx_task *task)
{
        struct eng_shard *s = container_of(task, struct eng_shard, order_task);
        struct eng_keyq_op *op;

        (void)loop;
        s->order_posted = false;
        /* An operation run here may ready more (a get leaves at once). */
        while ((op = eng_keyq_pop_ready(&s->keyq)))
                op->run(op);
}

void shard_order_leave(struct eng_shard *s, struct eng_keyq_node *node)
{
        eng_keyq_leave(&s->keyq, node);
        if (s->closing) {
                /* No task may outlive the shard: fail what is ready now
                 * (a leave inside adds to the list the outer loop walks). */
                if (!s->order_draining) {
                        s->order_draining = true;
                        shard_order_fail_all(s);
                        s->order_draining = false;
                }
                return;
        }
        if (s->keyq.ready_head && !s->order_posted) {
                s->order_posted = true;
                s->order_task.fn = order_task;
                s->order_task.name = "shard key order";
                rx_loop_post(s->loop, &s->order_task);
        }
}

void shard_order_fail_all(struct eng_shard *s)
{
        struct eng_keyq_op *op;

        /* Each run sees s->closing and fails; its leave readies the next. */
        while ((op = eng_keyq_pop_ready(&s->keyq)))
                op->run(op);
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* The fingerprints of a batch's keys, sorted, each once, in *ret (heap,
 * caller frees). Returns how many, or -ENOMEM / -SCREE_ECORRUPT. */
static int batch_fps(const uint8_t *payload, uint32_t len, uint64_t **ret)
{
        struct eng_batch_iter it;
        struct eng_entry e;
        uint64_t *fp;
        uint32_t n = 0, u = 0;
        int r = eng_batch_iter_init(&it, payload, len, 0);

        if (r < 0)
                return r;
        fp = malloc(it.left * sizeof(*fp));
        if (!fp)
                return -ENOMEM;
        while ((r = eng_batch_iter_next(&it, &e)) == 1)
                fp[n++] = eng_keyq_fp(e.key, e.key_len);
        if (r < 0) {
                free(fp);
                return r;
        }
        if (n > 1)
                qsort(fp, n, sizeof(*fp), cmp_u64);
        for (uint32_t i = 0; i < n; i++)
                if (!u || fp[u - 1] != fp[i])
                        fp[u++] = fp[i];
        *ret = fp;
        return (int)u;
}

bool shard_batch_busy(struct eng_shard *s, const uint8_t *payload, uint32_t len)
{
        struct eng_batch_iter it;
        struct eng_entry e;

        if (eng_keyq_is_idle(&s->keyq) || eng_batch_iter_init(&it, payload, len, 0) < 0)
                return false;
        while (eng_batch_iter_next(&it, &e) == 1)
                if (eng_keyq_is_busy(&s->keyq, eng_keyq_fp(e.key, e.key_len)))
                        return true;
        return false;
}

int shard_hold_batch(struct eng_shard *s, struct eng_write *w, const uint8_t *payload, uint32_t len)
{
        uint64_t *fp;
        int n = batch_fps(payload, len, &fp), r = 0;

        if (n < 0)
                return n;
        w->nodes = n == 1 ? &w->qnode : calloc((size_t)n, sizeof(*w->nodes));
        w->nodes_owned = n > 1;
        w->n_nodes = 0;
        w->qop.waiting = 0;
        if (!w->nodes) {
                free(fp);
                return -ENOMEM;
        }
        for (int i = 0; i < n && r >= 0; i++) {
                w->nodes[i] = (struct eng_keyq_node){ .op = &w->qop, .fp = fp[i] };
                r = eng_keyq_enter(&s->keyq, &w->nodes[i]);
                if (r >= 0)
                        w->n_nodes++;
        }
        free(fp);
        if (r < 0) {
                shard_release_write(s, w);
                return r;
        }
        return (int)w->qop.waiting;
}

void shard_release_write(struct eng_shard *s, struct eng_write *w)
{
        for (uint32_t i = 0; i < w->n_nodes; i++)
                shard_order_leave(s, &w->nodes[i]);
        if (w->nodes_owned)
                free(w->nodes);
        w->nodes = NULL;
        w->n_nodes = 0;
        w->nodes_owned = false;
}
