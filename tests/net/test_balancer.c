/* SPDX-License-Identifier: Apache-2.0 */
/* The balancer's damping (net/balancer.h): a move only after rounds in a
 * row found one; a move back the way the last one went, soon after it,
 * doubles the pause (up to a bound), and a quiet minute resets it. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>

#include "base/time.h"
#include "net/balancer.h"

TestSuite(balancer, .timeout = 30);

Test(balancer, a_move_waits_for_three_rounds_in_a_row)
{
        struct net_balancer *b = calloc(1, sizeof(*b));

        cr_expect(not(net_balancer_confirm(b, true)));
        cr_expect(not(net_balancer_confirm(b, true)));
        cr_expect(not(net_balancer_confirm(b, false)), "an even round starts over");
        cr_expect(not(net_balancer_confirm(b, true)));
        cr_expect(not(net_balancer_confirm(b, true)));
        cr_expect(net_balancer_confirm(b, true));
        free(b);
}

Test(balancer, moves_back_and_forth_double_the_pause_up_to_a_bound)
{
        struct net_balancer *b = calloc(1, sizeof(*b));
        uint64_t t = 1000 * NS_PER_SEC, p;

        cr_expect(eq(u64, net_balancer_moved(b, 1, 0, t), 2 * NS_PER_SEC));
        t += 5 * NS_PER_SEC;
        cr_expect(eq(u64, net_balancer_moved(b, 1, 0, t), 2 * NS_PER_SEC), "the same way");
        p = 2 * NS_PER_SEC;
        for (int i = 0; i < 8; i++) {
                t += 5 * NS_PER_SEC;
                p = p * 2 > 64 * NS_PER_SEC ? 64 * NS_PER_SEC : p * 2;
                cr_expect(eq(u64, net_balancer_moved(b, i % 2 ? 1 : 0, i % 2 ? 0 : 1, t), p),
                          "move back %d", i);
        }
        cr_expect(eq(u64, p, 64 * NS_PER_SEC));
        /* Flapping at the longest pause stays there. */
        t += 65 * NS_PER_SEC;
        cr_expect(eq(u64, net_balancer_moved(b, 0, 1, t), 64 * NS_PER_SEC));
        t += 64 * NS_PER_SEC + 61 * NS_PER_SEC;
        cr_expect(eq(u64, net_balancer_moved(b, 1, 0, t), 2 * NS_PER_SEC),
                  "a quiet minute after the pause");
        cr_expect(eq(u64, b->moves, 12));
        free(b);
}
