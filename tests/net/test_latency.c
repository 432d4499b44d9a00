/* SPDX-License-Identifier: Apache-2.0 */
/* Latency events (net/latency.h): one sample a second, its highest; the
 * ring keeps the newest; reset; names; the merge of shards' copies. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>

#include "net/latency.h"

TestSuite(latency, .timeout = 30);

Test(latency, one_sample_a_second_keeps_its_highest_and_max_is_all_time)
{
        struct net_latency *l = calloc(1, sizeof(*l));
        struct net_latency_sample s[NET_LATENCY_SAMPLES];
        const struct net_latency_sample *last;

        net_latency_add(l, NET_LATENCY_COMMAND, 100, 30);
        net_latency_add(l, NET_LATENCY_COMMAND, 100, 50);
        net_latency_add(l, NET_LATENCY_COMMAND, 100, 20);
        net_latency_add(l, NET_LATENCY_COMMAND, 102, 10);
        cr_assert(eq(u32, net_latency_history(&l->ev[NET_LATENCY_COMMAND], s), 2));
        cr_expect(eq(u64, s[0].time_s, 100));
        cr_expect(eq(u64, s[0].ms, 50));
        cr_expect(eq(u64, s[1].time_s, 102));
        last = net_latency_latest(&l->ev[NET_LATENCY_COMMAND]);
        cr_assert(not(eq(ptr, (void *)last, NULL)));
        cr_expect(eq(u64, last->ms, 10));
        cr_expect(eq(u64, l->ev[NET_LATENCY_COMMAND].max_ms, 50));
        cr_expect(eq(ptr, (void *)net_latency_latest(&l->ev[NET_LATENCY_LOOP_STALL]), NULL));
        free(l);
}

Test(latency, the_ring_keeps_the_newest_samples_oldest_first)
{
        struct net_latency *l = calloc(1, sizeof(*l));
        struct net_latency_sample s[NET_LATENCY_SAMPLES];
        uint32_t n;

        for (uint64_t t = 1; t <= NET_LATENCY_SAMPLES + 40; t++)
                net_latency_add(l, NET_LATENCY_LOOP_STALL, t, t);
        n = net_latency_history(&l->ev[NET_LATENCY_LOOP_STALL], s);
        cr_assert(eq(u32, n, NET_LATENCY_SAMPLES));
        cr_expect(eq(u64, s[0].time_s, 41));
        cr_expect(eq(u64, s[n - 1].time_s, NET_LATENCY_SAMPLES + 40));
        for (uint32_t i = 1; i < n; i++)
                cr_expect(lt(u64, s[i - 1].time_s, s[i].time_s));
        free(l);
}

Test(latency, reset_drops_a_series_and_says_whether_it_had_one)
{
        struct net_latency *l = calloc(1, sizeof(*l));

        net_latency_add(l, NET_LATENCY_COMMAND, 5, 12);
        cr_expect(net_latency_reset(l, NET_LATENCY_COMMAND));
        cr_expect(not(net_latency_reset(l, NET_LATENCY_COMMAND)));
        cr_expect(not(net_latency_reset(l, NET_LATENCY_LOOP_STALL)));
        cr_expect(eq(u64, l->ev[NET_LATENCY_COMMAND].max_ms, 0));
        free(l);
}

Test(latency, events_are_found_by_name_in_any_case)
{
        cr_expect(eq(int, net_latency_event_find("COMMAND", 7), NET_LATENCY_COMMAND));
        cr_expect(eq(int, net_latency_event_find("loop-stall", 10), NET_LATENCY_LOOP_STALL));
        cr_expect(eq(int, net_latency_event_find("command-x", 9), NET_LATENCY_EVENT_INVALID));
        cr_expect(eq(str, (char *)net_latency_event_name(NET_LATENCY_LOOP_STALL), "loop-stall"));
}

Test(latency, merge_keeps_the_highest_of_a_second_and_the_newest_seconds)
{
        struct net_latency *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
        struct net_latency_sample s[NET_LATENCY_SAMPLES];
        uint32_t n;

        net_latency_add(a, NET_LATENCY_COMMAND, 10, 5);
        net_latency_add(a, NET_LATENCY_COMMAND, 12, 7);
        net_latency_add(b, NET_LATENCY_COMMAND, 11, 3);
        net_latency_add(b, NET_LATENCY_COMMAND, 12, 9);
        net_latency_merge(a, b);
        n = net_latency_history(&a->ev[NET_LATENCY_COMMAND], s);
        cr_assert(eq(u32, n, 3));
        cr_expect(eq(u64, s[0].time_s, 10));
        cr_expect(eq(u64, s[1].time_s, 11));
        cr_expect(eq(u64, s[2].ms, 9));
        cr_expect(eq(u64, a->ev[NET_LATENCY_COMMAND].max_ms, 9));
        cr_expect(eq(u64, net_latency_latest(&a->ev[NET_LATENCY_COMMAND])->time_s, 12));
        /* Two full rings: the newest NET_LATENCY_SAMPLES seconds stay. */
        for (uint64_t t = 1000; t < 1000 + NET_LATENCY_SAMPLES; t++) {
                net_latency_add(a, NET_LATENCY_LOOP_STALL, 2 * t, 1);
                net_latency_add(b, NET_LATENCY_LOOP_STALL, 2 * t + 1, 1);
        }
        net_latency_merge(a, b);
        n = net_latency_history(&a->ev[NET_LATENCY_LOOP_STALL], s);
        cr_assert(eq(u32, n, NET_LATENCY_SAMPLES));
        cr_expect(eq(u64, s[n - 1].time_s, 2 * (1000 + NET_LATENCY_SAMPLES - 1) + 1));
        net_latency_add(a, NET_LATENCY_LOOP_STALL, 1 << 20, 2);    /* the ring goes on */
        cr_expect(eq(u64, net_latency_latest(&a->ev[NET_LATENCY_LOOP_STALL])->ms, 2));
        free(a);
        free(b);
}
