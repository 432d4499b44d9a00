/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The intent-lock table (net/intent.h) as a pure module: the mode
 * compatibility matrix, FIFO wake-ups in order, a queued WRITE blocking
 * later READs (no writer starves behind a stream of readers), releases
 * that wake several compatible waiters at once, and entries that vanish
 * once nothing holds or waits (the idle fast path).
 */
#include <stdint.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "net/intent.h"

#define R NET_INTENT_READ
#define W NET_INTENT_WRITE
#define S NET_INTENT_SOLO
#define P NET_INTENT_PEEK
#define A NET_INTENT_ALL

static int woken_order[16];
static int n_woken;

struct tw {
        struct net_intent_waiter w;
        int id;
};

static void on_wake(struct net_intent_waiter *w)
{
        woken_order[n_woken++] = ((struct tw *)w)->id;
}

static struct tw mk(int id, uint64_t fp, enum net_intent_mode m)
{
        return (struct tw){ .w = { .fp = fp, .mode = m, .wake = on_wake }, .id = id };
}

static struct net_intent_table t;

static void setup(void)
{
        net_intent_init(&t);
        n_woken = 0;
}

static void teardown(void)
{
        net_intent_fini(&t);
}

TestSuite(intent, .init = setup, .fini = teardown);

Test(intent, empty_table_is_idle_and_grants_everything)
{
        cr_assert(net_intent_is_idle(&t));
        for (int m = 0; m < NET_INTENT_MODE_MAX; m++)
                cr_expect(net_intent_can_grant(&t, 1, (enum net_intent_mode)m));
}

Test(intent, compatibility_matrix)
{
        static const bool want[4][4] = {
                /* held:  R      W      S      P */
                [R] = { true, false, false, true },
                [W] = { false, false, false, false },
                [S] = { false, false, true, true },
                [P] = { true, false, true, true },
        };

        for (int h = 0; h < 4; h++) {
                struct tw a = mk(1, 42, (enum net_intent_mode)h);

                cr_assert(eq(int, net_intent_acquire(&t, &a.w), 1));
                for (int q = 0; q < 4; q++)
                        cr_expect(eq(int, net_intent_can_grant(&t, 42, (enum net_intent_mode)q),
                                     want[q][h]), "requested %d held %d", q, h);
                net_intent_release(&t, 42, (enum net_intent_mode)h);
                cr_assert(net_intent_is_idle(&t));
        }
}

Test(intent, other_keys_are_independent)
{
        struct tw a = mk(1, 1, W), b = mk(2, 2, W);

        cr_assert(eq(int, net_intent_acquire(&t, &a.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &b.w), 1));
        net_intent_release(&t, 1, W);
        net_intent_release(&t, 2, W);
        cr_assert(net_intent_is_idle(&t));
}

Test(intent, shared_holders_then_writer_waits_and_wakes_last_release)
{
        struct tw r1 = mk(1, 7, R), r2 = mk(2, 7, R), w = mk(3, 7, W);

        cr_assert(eq(int, net_intent_acquire(&t, &r1.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &r2.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &w.w), 0));
        net_intent_release(&t, 7, R);
        cr_expect(eq(int, n_woken, 0));
        net_intent_release(&t, 7, R);
        cr_assert(eq(int, n_woken, 1));
        cr_expect(eq(u32, net_intent_holders(&t, 7, W), 1));
        net_intent_release(&t, 7, W);
        cr_assert(net_intent_is_idle(&t));
}

Test(intent, queued_writer_blocks_later_readers)
{
        struct tw r1 = mk(1, 7, R), w = mk(2, 7, W), r2 = mk(3, 7, R), p = mk(4, 7, P);

        cr_assert(eq(int, net_intent_acquire(&t, &r1.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &w.w), 0));
        /* compatible with the holder, but a writer waits: queue behind it */
        cr_expect(not(net_intent_can_grant(&t, 7, R)));
        cr_assert(eq(int, net_intent_acquire(&t, &r2.w), 0));
        cr_assert(eq(int, net_intent_acquire(&t, &p.w), 0));
        cr_expect(eq(u32, net_intent_waiters(&t, 7), 3));
        net_intent_release(&t, 7, R);
        cr_assert(eq(int, n_woken, 1));
        cr_expect(eq(int, woken_order[0], 2));
        net_intent_release(&t, 7, W);
        /* both readers wake together, in FIFO order */
        cr_assert(eq(int, n_woken, 3));
        cr_expect(eq(int, woken_order[1], 3));
        cr_expect(eq(int, woken_order[2], 4));
        net_intent_release(&t, 7, R);
        net_intent_release(&t, 7, P);
        cr_assert(net_intent_is_idle(&t));
}

Test(intent, release_wakes_in_fifo_order_one_writer_at_a_time)
{
        struct tw h = mk(0, 9, W), w[5];

        cr_assert(eq(int, net_intent_acquire(&t, &h.w), 1));
        for (int i = 0; i < 5; i++) {
                w[i] = mk(i + 1, 9, W);
                cr_assert(eq(int, net_intent_acquire(&t, &w[i].w), 0));
        }
        for (int i = 0; i < 5; i++) {
                net_intent_release(&t, 9, W);
                cr_assert(eq(int, n_woken, i + 1));
                cr_expect(eq(int, woken_order[i], i + 1));
        }
        net_intent_release(&t, 9, W);
        cr_assert(net_intent_is_idle(&t));
}

Test(intent, solo_writes_share_but_wait_for_a_transaction)
{
        struct tw s1 = mk(1, 5, S), s2 = mk(2, 5, S), tx = mk(3, 5, W), s3 = mk(4, 5, S);

        cr_assert(eq(int, net_intent_acquire(&t, &s1.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &s2.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &tx.w), 0));
        cr_assert(eq(int, net_intent_acquire(&t, &s3.w), 0));
        net_intent_release(&t, 5, S);
        net_intent_release(&t, 5, S);
        cr_assert(eq(int, n_woken, 1));
        net_intent_release(&t, 5, W);
        cr_assert(eq(int, n_woken, 2));
        cr_expect(eq(int, woken_order[1], 4));
        net_intent_release(&t, 5, S);
        cr_assert(net_intent_is_idle(&t));
}

static struct net_intent_table *reent_t;
static struct tw reent_next;

/* A wake that takes another lock on the same key (as a woken op may). */
static void wake_and_acquire(struct net_intent_waiter *w)
{
        n_woken++;
        reent_next = mk(9, w->fp, R);
        cr_assert(eq(int, net_intent_acquire(reent_t, &reent_next.w), 1));
}

Test(intent, wake_may_use_the_table)
{
        struct tw h = mk(1, 3, W), r = mk(2, 3, R);

        reent_t = &t;
        r.w.wake = wake_and_acquire;
        cr_assert(eq(int, net_intent_acquire(&t, &h.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &r.w), 0));
        net_intent_release(&t, 3, W);
        cr_assert(eq(int, n_woken, 1));
        cr_expect(eq(u32, net_intent_holders(&t, 3, R), 2));
        net_intent_release(&t, 3, R);
        net_intent_release(&t, 3, R);
        cr_assert(net_intent_is_idle(&t));
}

Test(intent, many_keys_grow_the_table)
{
        struct tw w[300];

        for (int i = 0; i < 300; i++) {
                w[i] = mk(i, net_intent_fp(&i, sizeof(i)), W);
                cr_assert(eq(int, net_intent_acquire(&t, &w[i].w), 1));
        }
        for (int i = 0; i < 300; i++)
                cr_expect(not(net_intent_can_grant(&t, w[i].w.fp, P)));
        for (int i = 0; i < 300; i++)
                net_intent_release(&t, w[i].w.fp, W);
        cr_assert(net_intent_is_idle(&t));
}

/* ---- the whole table (ALL) ---- */

Test(intent, all_is_granted_at_once_on_an_idle_table_and_excludes_every_key)
{
        struct tw a = mk(1, 0, A), k = mk(2, 5, P), b = mk(3, 0, A);

        cr_assert(eq(int, net_intent_acquire(&t, &a.w), 1));
        cr_expect(not(net_intent_is_idle(&t)));
        cr_expect(eq(u32, net_intent_holders(&t, 0, A), 1));
        for (int m = 0; m < NET_INTENT_MODE_MAX; m++)
                cr_expect(not(net_intent_can_grant(&t, 5, (enum net_intent_mode)m)), "mode %d", m);
        cr_assert(eq(int, net_intent_acquire(&t, &k.w), 0));
        cr_assert(eq(int, net_intent_acquire(&t, &b.w), 0));
        cr_expect(eq(u32, net_intent_waiters(&t, 5), 1));
        net_intent_release(&t, 0, A);
        /* in order: the key request, then the second ALL waits for it */
        cr_assert(eq(int, n_woken, 1));
        cr_expect(eq(int, woken_order[0], 2));
        net_intent_release(&t, 5, P);
        cr_assert(eq(int, n_woken, 2));
        cr_expect(eq(int, woken_order[1], 3));
        net_intent_release(&t, 0, A);
        cr_assert(net_intent_is_idle(&t));
}

Test(intent, all_waits_for_every_key_holder_and_parks_later_requests)
{
        struct tw s1 = mk(1, 1, S), r2 = mk(2, 2, R), a = mk(3, 0, A), p = mk(4, 3, P),
                  s3 = mk(5, 1, S);

        cr_assert(eq(int, net_intent_acquire(&t, &s1.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &r2.w), 1));
        cr_expect(not(net_intent_can_grant(&t, 0, A)));
        cr_assert(eq(int, net_intent_acquire(&t, &a.w), 0));
        /* compatible with every holder, but an ALL waits: park behind it */
        cr_expect(not(net_intent_can_grant(&t, 3, P)));
        cr_assert(eq(int, net_intent_acquire(&t, &p.w), 0));
        cr_assert(eq(int, net_intent_acquire(&t, &s3.w), 0));
        net_intent_release(&t, 1, S);
        cr_expect(eq(int, n_woken, 0));
        net_intent_release(&t, 2, R);
        cr_assert(eq(int, n_woken, 1));
        cr_expect(eq(int, woken_order[0], 3));
        net_intent_release(&t, 0, A);
        cr_assert(eq(int, n_woken, 3));
        cr_expect(eq(int, woken_order[1], 4));
        cr_expect(eq(int, woken_order[2], 5));
        net_intent_release(&t, 3, P);
        net_intent_release(&t, 1, S);
        cr_assert(net_intent_is_idle(&t));
}

Test(intent, a_nested_request_passes_a_waiting_all)
{
        /* A lock set part holding key 1 here takes key 2 next, while an
         * ALL waits for key 1: parking key 2 behind the ALL would make
         * each wait for the other. */
        struct tw k1 = mk(1, 1, W), a = mk(2, 0, A), k2 = mk(3, 2, W), other = mk(4, 4, P);

        cr_assert(eq(int, net_intent_acquire(&t, &k1.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &a.w), 0));
        k2.w.nested = true;
        cr_assert(eq(int, net_intent_acquire(&t, &k2.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &other.w), 0));
        net_intent_release(&t, 1, W);
        cr_expect(eq(int, n_woken, 0), "the ALL ran while key 2 was held");
        net_intent_release(&t, 2, W);
        cr_assert(eq(int, n_woken, 1));
        cr_expect(eq(int, woken_order[0], 2));
        net_intent_release(&t, 0, A);
        cr_assert(eq(int, n_woken, 2));
        net_intent_release(&t, 4, P);
        cr_assert(net_intent_is_idle(&t));
}

Test(intent, parked_requests_leave_in_order_between_two_alls)
{
        struct tw a1 = mk(1, 0, A), p1 = mk(2, 1, P), a2 = mk(3, 0, A), p2 = mk(4, 2, P),
                  w1 = mk(5, 1, W);

        cr_assert(eq(int, net_intent_acquire(&t, &a1.w), 1));
        cr_assert(eq(int, net_intent_acquire(&t, &p1.w), 0));
        cr_assert(eq(int, net_intent_acquire(&t, &w1.w), 0));
        cr_assert(eq(int, net_intent_acquire(&t, &a2.w), 0));
        cr_assert(eq(int, net_intent_acquire(&t, &p2.w), 0));
        net_intent_release(&t, 0, A);
        /* p1 runs; w1 goes to its key's FIFO behind p1; a2 waits for both */
        cr_assert(eq(int, n_woken, 1));
        cr_expect(eq(int, woken_order[0], 2));
        cr_expect(eq(u32, net_intent_waiters(&t, 1), 1));
        net_intent_release(&t, 1, P);
        cr_assert(eq(int, n_woken, 2));
        cr_expect(eq(int, woken_order[1], 5));
        net_intent_release(&t, 1, W);
        cr_assert(eq(int, n_woken, 3));
        cr_expect(eq(int, woken_order[2], 3));
        net_intent_release(&t, 0, A);
        cr_assert(eq(int, n_woken, 4));
        cr_expect(eq(int, woken_order[3], 4));
        net_intent_release(&t, 2, P);
        cr_assert(net_intent_is_idle(&t));
}
