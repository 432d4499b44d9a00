/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-key FIFOs of operations in flight (engine/keyq.h): order within
 * a key, operations over several keys, giving up a place, barriers.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "engine/keyq.h"

TestSuite(keyq, .timeout = 30);

static int ran[16], n_ran;

struct top {
        struct eng_keyq_op op;
        struct eng_keyq_node node[3];
        int id;
};

static void top_run(struct eng_keyq_op *op)
{
        struct top *t = (struct top *)op;       /* op is the first member */

        ran[n_ran++] = t->id;
}

static void mk(struct top *t, int id)
{
        *t = (struct top){ .op = { .run = top_run }, .id = id };
}

static int enter(struct eng_keyq *q, struct top *t, int i, uint64_t fp)
{
        t->node[i] = (struct eng_keyq_node){ .op = &t->op, .fp = fp };
        return eng_keyq_enter(q, &t->node[i]);
}

static void drain(struct eng_keyq *q)
{
        struct eng_keyq_op *op;

        while ((op = eng_keyq_pop_ready(q)))
                op->run(op);
}

Test(keyq, one_key_runs_its_operations_in_call_order)
{
        struct eng_keyq q;
        struct top a, b, c;

        eng_keyq_init(&q);
        n_ran = 0;
        mk(&a, 1), mk(&b, 2), mk(&c, 3);
        cr_assert(eq(int, enter(&q, &a, 0, 7), 1));
        cr_assert(eng_keyq_is_busy(&q, 7));
        cr_assert(not(eng_keyq_is_busy(&q, 8)));
        cr_assert(eq(int, enter(&q, &b, 0, 7), 0));
        cr_assert(eq(int, enter(&q, &c, 0, 7), 0));
        eng_keyq_leave(&q, &a.node[0]);
        drain(&q);
        cr_assert(eq(int, n_ran, 1));
        cr_assert(eq(int, ran[0], 2), "b heads the FIFO, c still waits");
        eng_keyq_leave(&q, &b.node[0]);
        drain(&q);
        cr_assert(eq(int, n_ran, 2));
        cr_assert(eq(int, ran[1], 3));
        eng_keyq_leave(&q, &c.node[0]);
        cr_assert(eng_keyq_is_idle(&q));
        eng_keyq_fini(&q);
}

Test(keyq, an_operation_over_two_keys_runs_when_it_heads_both)
{
        struct eng_keyq q;
        struct top x, y, both;

        eng_keyq_init(&q);
        n_ran = 0;
        mk(&x, 1), mk(&y, 2), mk(&both, 3);
        cr_assert(eq(int, enter(&q, &x, 0, 10), 1));
        cr_assert(eq(int, enter(&q, &y, 0, 20), 1));
        cr_assert(eq(int, enter(&q, &both, 0, 10), 0));
        cr_assert(eq(int, enter(&q, &both, 1, 20), 0));
        cr_assert(eq(u32, both.op.waiting, 2));
        eng_keyq_leave(&q, &x.node[0]);
        drain(&q);
        cr_assert(eq(int, n_ran, 0), "still behind y");
        eng_keyq_leave(&q, &y.node[0]);
        drain(&q);
        cr_assert(eq(int, n_ran, 1));
        cr_assert(eq(int, ran[0], 3));
        eng_keyq_leave(&q, &both.node[0]);
        eng_keyq_leave(&q, &both.node[1]);
        cr_assert(eng_keyq_is_idle(&q));
        eng_keyq_fini(&q);
}

Test(keyq, a_waiting_node_can_give_up_its_place)
{
        struct eng_keyq q;
        struct top a, b, c;

        eng_keyq_init(&q);
        n_ran = 0;
        mk(&a, 1), mk(&b, 2), mk(&c, 3);
        enter(&q, &a, 0, 5);
        enter(&q, &b, 0, 5);
        enter(&q, &c, 0, 5);
        eng_keyq_leave(&q, &c.node[0]);         /* the tail gives up */
        cr_assert(eq(u32, c.op.waiting, 0));
        eng_keyq_leave(&q, &a.node[0]);
        drain(&q);
        cr_assert(eq(int, n_ran, 1));
        cr_assert(eq(int, ran[0], 2));
        enter(&q, &c, 0, 5);                    /* the tail is right again */
        eng_keyq_leave(&q, &b.node[0]);
        drain(&q);
        cr_assert(eq(int, ran[1], 3));
        eng_keyq_leave(&q, &c.node[0]);
        cr_assert(eng_keyq_is_idle(&q));
        eng_keyq_fini(&q);
}

Test(keyq, a_barrier_waits_for_what_was_in_flight_at_its_call_only)
{
        struct eng_keyq q;
        struct top a, b, later, bar;

        eng_keyq_init(&q);
        n_ran = 0;
        mk(&a, 1), mk(&b, 2), mk(&later, 3), mk(&bar, 9);
        cr_assert(eq(int, eng_keyq_barrier(&q, &bar.op), 1), "nothing in flight: go on");
        enter(&q, &a, 0, 1);
        enter(&q, &b, 0, 2);
        cr_assert(eq(int, eng_keyq_barrier(&q, &bar.op), 0));
        enter(&q, &later, 0, 3);                /* after the barrier: not waited for */
        eng_keyq_leave(&q, &b.node[0]);
        drain(&q);
        cr_assert(eq(int, n_ran, 0), "a is still in flight");
        eng_keyq_leave(&q, &a.node[0]);
        drain(&q);
        cr_assert(eq(int, n_ran, 1));
        cr_assert(eq(int, ran[0], 9));
        eng_keyq_leave(&q, &later.node[0]);
        eng_keyq_fini(&q);
}
